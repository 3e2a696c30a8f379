"""The transaction APIs a producer sends (AddPartitionsToTxn v0-3, AddOffsetsToTxn, EndTxn, TxnOffsetCommit)
between kio and the engine.  TxnOffsetCommit v3+ carries the consumer's group metadata (KIP-447)."""
from __future__ import annotations

from ..protocol import messages as m
from ..protocol.errors import Errors
from .apis_group import committed_offsets
from .codec import build, get, nested


def decode_add_partitions_to_txn(body, version, door):
    tps = tuple((t.name, p) for t in body.v3_and_below_topics for p in t.partitions)
    return m.AddPartitionsToTxnRequest(body.v3_and_below_transactional_id, body.v3_and_below_producer_id,
                                       body.v3_and_below_producer_epoch, tps), None


def encode_add_partitions_to_txn(resp, body, version, state, door, cls):
    Topic = nested(cls, "results_by_topic_v3_and_below")
    Part = nested(Topic, "results_by_partition")
    return build(cls, results_by_topic_v3_and_below=tuple(
        build(Topic, name=t.name, results_by_partition=tuple(
            build(Part, partition_index=p,
                  partition_error_code=resp.errors.get((t.name, p), Errors.UNKNOWN_SERVER_ERROR))
            for p in t.partitions)) for t in body.v3_and_below_topics))


def decode_add_offsets_to_txn(body, version, door):
    return m.AddOffsetsToTxnRequest(body.transactional_id, body.producer_id, body.producer_epoch, body.group_id), None


def encode_add_offsets_to_txn(resp, body, version, state, door, cls):
    return build(cls, error_code=resp.error)


def decode_end_txn(body, version, door):
    return m.EndTxnRequest(body.transactional_id, body.producer_id, body.producer_epoch, bool(body.committed),
                           2 if version >= 5 else 0), None


def encode_end_txn(resp, body, version, state, door, cls):
    return build(cls, error_code=resp.error, producer_id=resp.producer_id, producer_epoch=resp.producer_epoch)


def decode_txn_offset_commit(body, version, door):
    offsets = committed_offsets(body)
    return m.TxnOffsetCommitRequest(body.transactional_id, body.group_id, body.producer_id, body.producer_epoch,
                                    get(body, "generation_id", -1), get(body, "member_id", ""),
                                    get(body, "group_instance_id"), offsets, version), None


def encode_txn_offset_commit(resp, body, version, state, door, cls):
    Topic = nested(cls, "topics")
    Part = nested(Topic, "partitions")

    def error(tp):
        e = resp.errors.get(tp, Errors.UNKNOWN_SERVER_ERROR)
        # KafkaApis.handleTxnOffsetCommitRequest's sendResponse: a client older than 2.0 (v0, v1) may crash on
        # COORDINATOR_LOAD_IN_PROGRESS (KAFKA-7296); it is told COORDINATOR_NOT_AVAILABLE
        return Errors.COORDINATOR_NOT_AVAILABLE if version < 2 and e == Errors.COORDINATOR_LOAD_IN_PROGRESS else e
    return build(cls, topics=tuple(
        build(Topic, name=t.name, partitions=tuple(
            build(Part, partition_index=p.partition_index, error_code=error((t.name, p.partition_index)))
            for p in t.partitions)) for t in body.topics))
