"""The ``__transaction_state`` value format: ``value_bytes`` writes exactly the compact JSON of Kafka's
``TransactionLogValue`` fields (the pictures and a coordinator loading the partition decode it)."""
import json

import pytest

from txnlab.coordinator.transaction_log import decode_value, value_bytes
from txnlab.coordinator.transaction_metadata import TransactionState, TxnTransitMetadata


def _json_value(t: TxnTransitMetadata) -> bytes:
    """The value written as the format describes it: version 1, then the fields as compact JSON."""
    parts: dict = {}
    for topic, p in sorted(t.topic_partitions):
        parts.setdefault(topic, []).append(p)
    body = {
        "ProducerId": t.producer_id,
        "ProducerEpoch": t.producer_epoch,
        "TransactionTimeoutMs": t.txn_timeout_ms,
        "TransactionStatus": int(t.txn_state),
        "TransactionPartitions": None if t.txn_state == TransactionState.Empty else
        [{"Topic": k, "PartitionIds": v} for k, v in parts.items()],
        "TransactionLastUpdateTimestampMs": t.txn_last_update_timestamp,
        "TransactionStartTimestampMs": t.txn_start_timestamp,
        "PreviousProducerId": t.previous_producer_id,
        "NextProducerId": t.next_producer_id,
        "ClientTransactionVersion": t.client_transaction_version,
    }
    return b"\x00\x01" + json.dumps(body, separators=(",", ":")).encode()


@pytest.mark.parametrize("state,tps", [
    (TransactionState.Empty, frozenset()),
    (TransactionState.Ongoing, frozenset({("out", 0)})),
    (TransactionState.PrepareCommit, frozenset({("b", 2), ("a", 1), ("b", 0), ('q"uo\\te é', 3)})),
    (TransactionState.CompleteAbort, frozenset()),
    (TransactionState.PrepareEpochFence, frozenset({("__consumer_offsets", 17), ("out", 0)})),
])
def test_value_bytes_is_the_compact_json_of_the_fields(state, tps):
    t = TxnTransitMetadata(producer_id=4001, previous_producer_id=-1, next_producer_id=4002, producer_epoch=32766,
                           last_producer_epoch=-1, txn_timeout_ms=60_000, txn_state=state, topic_partitions=tps,
                           txn_start_timestamp=-1 if state == TransactionState.Empty else 1_234,
                           txn_last_update_timestamp=98_765, client_transaction_version=2)
    assert value_bytes(t) == _json_value(t)
    back = decode_value(value_bytes(t))
    assert (back.txn_state, back.topic_partitions, back.producer_epoch) == (
        state, frozenset() if state == TransactionState.Empty else tps, 32766)
