"""The record format of ``__transaction_state`` (Kafka's ``TransactionLog``).

Key: int16 version 0 + {TransactionalId}.  Value: int16 version + the fields of
``TransactionLogValue`` (ProducerId, ProducerEpoch, TransactionTimeoutMs,
TransactionStatus, TransactionPartitions, timestamps, PreviousProducerId,
NextProducerId, ClientTransactionVersion).  A null value is a tombstone (an
expired transactional.id).  The field payload is compact JSON so that a
learner can read the records in the pictures.
"""
from __future__ import annotations

import json
import struct
from functools import lru_cache
from typing import Optional

from .transaction_metadata import S, TransactionState, TxnTransitMetadata

_VERSION = struct.Struct(">h")
_V0 = _VERSION.pack(0)
_V1 = _VERSION.pack(1)
_JSON = json.JSONEncoder(separators=(",", ":"))       # compact, as json.dumps(..., separators=) would write


@lru_cache(maxsize=4096)
def key_bytes(transactional_id: str) -> bytes:
    return _V0 + _JSON.encode({"TransactionalId": transactional_id}).encode()


# The value's JSON with its numbers filled in by %-formatting: the same bytes as encoding the dict of fields
# (``tests/test_transaction_log.py`` compares them) at a third of the cost, written three times per transaction.
# Every field but the partitions is an integer, as in Kafka's schema (int64/int32/int16).
_VALUE = ('{"ProducerId":%d,"ProducerEpoch":%d,"TransactionTimeoutMs":%d,"TransactionStatus":%d,'
          '"TransactionPartitions":%s,"TransactionLastUpdateTimestampMs":%d,"TransactionStartTimestampMs":%d,'
          '"PreviousProducerId":%d,"NextProducerId":%d,"ClientTransactionVersion":%d}')


@lru_cache(maxsize=4096)
def _partitions_json(topic_partitions: frozenset) -> str:
    """TransactionPartitions: one entry per topic with its partition ids, sorted."""
    parts: dict = {}
    for topic, p in sorted(topic_partitions):
        parts.setdefault(topic, []).append(p)
    return _JSON.encode([{"Topic": k, "PartitionIds": v} for k, v in parts.items()])


def value_bytes(t: TxnTransitMetadata) -> bytes:
    parts = "null" if t.txn_state == S.Empty else _partitions_json(t.topic_partitions)
    return _V1 + (_VALUE % (t.producer_id, t.producer_epoch, t.txn_timeout_ms, t.txn_state, parts,
                            t.txn_last_update_timestamp, t.txn_start_timestamp, t.previous_producer_id,
                            t.next_producer_id, t.client_transaction_version)).encode()


def decode_key(b: bytes) -> str:
    return json.loads(b[2:])["TransactionalId"]


def decode_value(b: Optional[bytes]) -> Optional[TxnTransitMetadata]:
    if b is None:
        return None
    d = json.loads(b[2:])
    parts = frozenset((p["Topic"], i) for p in (d["TransactionPartitions"] or []) for i in p["PartitionIds"])
    return TxnTransitMetadata(
        producer_id=d["ProducerId"], previous_producer_id=d.get("PreviousProducerId", -1),
        next_producer_id=d.get("NextProducerId", -1), producer_epoch=d["ProducerEpoch"],
        last_producer_epoch=-1, txn_timeout_ms=d["TransactionTimeoutMs"],
        txn_state=TransactionState(d["TransactionStatus"]), topic_partitions=parts,
        txn_start_timestamp=d["TransactionStartTimestampMs"],
        txn_last_update_timestamp=d["TransactionLastUpdateTimestampMs"],
        client_transaction_version=d.get("ClientTransactionVersion", 0))


def describe_record(key: bytes, value: Optional[bytes]) -> dict:
    """A readable row for pictures: transactional.id, state, pid, epoch, partitions."""
    tid = decode_key(key)
    t = decode_value(value)
    if t is None:
        return {"transactional_id": tid, "state": "(tombstone)"}
    return {"transactional_id": tid, "state": t.txn_state.name, "producer_id": t.producer_id,
            "producer_epoch": t.producer_epoch, "partitions": sorted(t.topic_partitions),
            "timeout_ms": t.txn_timeout_ms, "start_ms": t.txn_start_timestamp,
            "last_update_ms": t.txn_last_update_timestamp}
