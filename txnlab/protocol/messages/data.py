"""Metadata, Produce, Fetch, ListOffsets, FindCoordinator, InitProducerId and ApiVersions: what every client sends."""
from __future__ import annotations

from typing import Optional

from ..errors import Errors
from ..message_base import READ_COMMITTED, tp_str, _err, message


# ------------------------------------------------------------------ metadata
@message
class PartitionMetadata:
    error: int
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple
    isr: tuple


@message
class MetadataRequest:
    API = "Metadata"
    API_KEY = 3
    topics: Optional[tuple] = None   # None = all topics
    allow_auto_topic_creation: bool = True   # v4+: may the broker create the asked-for topics it lacks

    def describe(self) -> str:
        return "all topics" if self.topics is None else ", ".join(self.topics)


@message
class MetadataResponse:
    brokers: tuple                      # broker ids that are alive
    controller_id: int
    topics: dict                        # topic -> (error, [PartitionMetadata])
    cluster_id: str = ""                # Metadata v2+
    topic_ids: Optional[dict] = None    # Metadata v10+: topic -> its id (KIP-516), for the topics answered without error

    def describe(self) -> str:
        return f"{len(self.topics)} topic(s), brokers {list(self.brokers)}"


# ------------------------------------------------------------------- produce
@message
class ProduceRequest:
    API = "Produce"
    API_KEY = 0
    transactional_id: Optional[str]
    acks: int
    timeout_ms: int
    topic_data: dict                    # tp -> RecordBatch
    # the Produce version: v12+ lets the leader add the partition to the transaction (KIP-890 part 2), v11 is told
    # TRANSACTION_ABORTABLE, v10 and older (librdkafka's highest) INVALID_TXN_STATE in its place (Kafka 4.1.1
    # AddPartitionsToTxnManager.produceRequestVersionToTransactionSupportedOperation); -1: the newest the cluster
    # supports
    version: int = -1

    def describe(self) -> str:
        parts = []
        for tp, b in self.topic_data.items():
            s = f"{tp_str(tp)}: {b.record_count} record(s)"
            if b.producer_id >= 0:
                s += f" pid {b.producer_id} epoch {b.producer_epoch} seq {b.base_sequence}..{b.last_sequence}"
            if b.is_transactional:
                s += " txn"
            parts.append(s)
        return "; ".join(parts) + f", acks={self.acks}"


@message
class PartitionProduceResponse:
    error: int
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str = ""


@message
class ProduceResponse:
    responses: dict                     # tp -> PartitionProduceResponse

    def describe(self) -> str:
        out = []
        for tp, r in self.responses.items():
            if r.error == Errors.NONE:
                out.append(f"{tp_str(tp)} ok at offset {r.base_offset}")
            else:
                out.append(f"{tp_str(tp)} {_err(r.error)}")
        return "; ".join(out)


# --------------------------------------------------------------------- fetch
@message
class FetchPartition:
    fetch_offset: int
    partition_max_bytes: int = 1_048_576
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1


@message
class FetchRequest:
    API = "Fetch"
    API_KEY = 1
    replica_id: int                     # -1 for consumers
    max_wait_ms: int
    min_bytes: int
    isolation_level: int
    partitions: dict                    # tp -> FetchPartition (with a session: only what changed)
    session_id: int = -1                # KIP-227: -1 no session, 0 open one, >0 an incremental fetch
    session_epoch: int = -1
    forgotten: tuple = ()               # partitions to drop from the session
    replica_epoch: int = -1             # v15+ ReplicaState.ReplicaEpoch (KIP-903): the follower's broker epoch

    def describe(self) -> str:
        who = "consumer" if self.replica_id < 0 else f"follower {self.replica_id}"
        iso = " read_committed" if self.isolation_level == READ_COMMITTED else ""
        offs = ", ".join(f"{tp_str(tp)}@{p.fetch_offset}" for tp, p in sorted(self.partitions.items())[:4])
        if self.session_id > 0:
            n = len(self.partitions)
            return f"{who}{iso} in fetch session {self.session_id}: {n} partition{'' if n == 1 else 's'} changed" \
                + (f": {offs}" if offs else "")
        return f"{who}{iso} {offs}"


@message
class FetchPartitionData:
    error: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted_transactions: Optional[tuple] = None   # ((producer_id, first_offset), ...)
    records: tuple = ()                            # RecordBatch, ...
    diverging_epoch: Optional[tuple] = None        # (epoch, end_offset)


@message
class FetchResponse:
    partitions: dict                    # tp -> FetchPartitionData (with a session: only what changed)
    error: int = 0                      # top-level: FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH
    session_id: int = 0

    def describe(self) -> str:
        if self.error:
            return _err(self.error)
        out = []
        for tp, d in sorted(self.partitions.items()):
            if d.error != Errors.NONE:
                out.append(f"{tp_str(tp)} {_err(d.error)}")
                continue
            n = sum(b.record_count for b in d.records)
            s = f"{tp_str(tp)} {n} record(s) HW {d.high_watermark}"
            if d.aborted_transactions:
                s += f" aborted {list(d.aborted_transactions)}"
            if d.diverging_epoch:
                s += f" diverging epoch {d.diverging_epoch}"
            out.append(s)
        return "; ".join(out[:4]) + (" ..." if len(out) > 4 else "")

    def is_quiet(self) -> bool:
        return not self.error and not any(d.records or d.diverging_epoch or d.error for d in self.partitions.values())


LATEST_TIERED = -5          # ListOffsetsRequest's special timestamps run from -1 (LATEST) to -5 (LATEST_TIERED)
NO_TIMESTAMP = -1           # RecordBatch.NO_TIMESTAMP: a record without a time keeps none


def lab_time(unix_ms: int, epoch_ms: int) -> int:
    """A client's timestamp (Unix ms) in the engine's clock, whose 0 is the Unix time ``epoch_ms``.  (A Unix time
    exactly ``epoch_ms - 1`` reads as NO_TIMESTAMP afterwards: the price of keeping Kafka's sentinel.)"""
    return unix_ms if unix_ms == NO_TIMESTAMP else unix_ms - epoch_ms


def unix_time(lab_ms: int, epoch_ms: int) -> int:
    """An engine timestamp as a client reads it: Unix ms (NO_TIMESTAMP stays)."""
    return lab_ms if lab_ms == NO_TIMESTAMP else lab_ms + epoch_ms


def asked_time(timestamp: int, epoch_ms: int) -> int:
    """A client's ListOffsets timestamp (Unix ms) in the lab's clock, whose 0 is the Unix time ``epoch_ms``: the
    special ones (LATEST, EARLIEST, MAX_TIMESTAMP...) as they are, a Unix time less the epoch -- below 0 for a time
    before the lab began, where records the application stamped in the past are.  A time that would land on a
    special one asks a little earlier instead: only records stamped in those few ms could answer differently."""
    if timestamp < 0:
        return timestamp
    lab = timestamp - epoch_ms
    return lab if lab >= 0 or lab < LATEST_TIERED else LATEST_TIERED - 1


@message
class ListOffsetsRequest:
    API = "ListOffsets"
    API_KEY = 2
    isolation_level: int
    partitions: dict                    # tp -> timestamp (-1 latest, -2 earliest)

    def describe(self) -> str:
        return ", ".join(f"{tp_str(tp)} {'latest' if t == -1 else 'earliest' if t == -2 else t}"
                         for tp, t in sorted(self.partitions.items()))


@message
class ListOffsetsResponse:
    partitions: dict                    # tp -> (error, offset, timestamp or None, leader epoch or -1)

    def describe(self) -> str:
        return ", ".join(f"{tp_str(tp)} {o if e == 0 else _err(e)}" for tp, (e, o, _t, _le) in sorted(self.partitions.items()))


@message
class OffsetForLeaderEpochRequest:
    """KIP-320's question a consumer asks after its partition's leader changed (Kafka's OffsetsForLeaderEpoch, api
    key 23; followers of the lab's brokers use the Fetch's diverging epoch instead): where does ``leader_epoch``
    end in the leader's log?  ``partitions``: tp -> (current leader epoch the asker knows or -1, leader epoch of
    its position)."""
    API = "OffsetForLeaderEpoch"
    API_KEY = 23
    replica_id: int                     # -1 a consumer (-2 a debugging tool); the answer is the same
    partitions: dict

    def describe(self) -> str:
        return ", ".join(f"{tp_str(tp)} epoch {e}" for tp, (_cur, e) in sorted(self.partitions.items()))


@message
class OffsetForLeaderEpochResponse:
    partitions: dict                    # tp -> (error, leader epoch, end offset); -1, -1 when not found

    def describe(self) -> str:
        return ", ".join(f"{tp_str(tp)} " + (f"epoch {le} ends at {o}" if e == 0 else _err(e))
                         for tp, (e, le, o) in sorted(self.partitions.items()))


# --------------------------------------------------------- find coordinator
COORDINATOR_GROUP = 0
COORDINATOR_TRANSACTION = 1


@message
class FindCoordinatorRequest:
    API = "FindCoordinator"
    API_KEY = 10
    key: str
    key_type: int

    def describe(self) -> str:
        return f"{'transactional.id' if self.key_type == COORDINATOR_TRANSACTION else 'group'} {self.key!r}"


@message
class FindCoordinatorResponse:
    error: int
    node_id: int = -1
    error_message: str = ""

    def describe(self) -> str:
        return f"coordinator is broker {self.node_id}" if self.error == 0 else _err(self.error)


# --------------------------------------------------------- init producer id
@message
class InitProducerIdRequest:
    API = "InitProducerId"
    API_KEY = 22
    transactional_id: Optional[str]
    transaction_timeout_ms: int
    producer_id: int = -1
    producer_epoch: int = -1

    def describe(self) -> str:
        s = f"transactional.id {self.transactional_id!r}" if self.transactional_id is not None else "idempotent"
        if self.producer_id >= 0:
            s += f", current pid {self.producer_id} epoch {self.producer_epoch}"
        return s


@message
class InitProducerIdResponse:
    error: int
    producer_id: int = -1
    producer_epoch: int = -1

    def describe(self) -> str:
        if self.error:
            return _err(self.error)
        return f"pid {self.producer_id} epoch {self.producer_epoch}"


@message
class ApiVersionsRequest:
    API = "ApiVersions"
    API_KEY = 18
    client_software_name: str = "txnlab"

    def describe(self) -> str:
        return self.client_software_name


@message
class ApiVersionsResponse:
    error: int
    api_keys: tuple = ()                # (name, api_key), ...
    finalized_features: tuple = ()      # (name, level), ... e.g. ("transaction.version", 2)

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.finalized_features) or _err(self.error)
