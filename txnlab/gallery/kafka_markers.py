"""A Kafka story that takes the tour's transaction further: three partitions of two topics, and a lost marker.

Owns ``MARKER_LOST`` (the scenario ``commit-marker-lost-retried`` with its key moments).  The order ``o-1``
is written to ``orders-0``, ``orders-1`` and ``payments-0`` in one transaction.  The decision (PrepareCommit)
covers all three; the WriteTxnMarkers request for ``orders-0`` is lost on the network, the coordinator's
connection breaks, and it sends that marker again.  Meanwhile the partitions whose markers landed are
readable: a read_committed reader gets two lines of the order before the third, while the coordinator is still
in PrepareCommit; CompleteCommit comes only after the retried marker.  Pure engine, like ``kafka.py``.
"""
from __future__ import annotations

from ..client.message import TopicPartition
from ..cluster import Cluster
from .moments import KeyMoment, marker_lands, narrated
from .moments import txn_state as state_is
from .scenario import TOPIC, Scenario, consumer, expect, markers, producer, txn_state, wait_for

PAYMENTS = "payments"
ORDER = {(TOPIC, 0): "o-1 line 1", (TOPIC, 1): "o-1 line 2", (PAYMENTS, 0): "o-1 paid"}


def _setup(c: Cluster) -> None:
    c.create_topic(TOPIC, partitions=2, replication_factor=3)
    c.create_topic(PAYMENTS, partitions=1, replication_factor=3)


def _first_value(cons, tries: int = 60):
    """Poll until one record arrives (at most ``tries`` polls of one simulated second); its value, or None."""
    for _ in range(tries):
        msg = cons.poll(1.0)
        if msg is not None and msg.error() is None:
            return msg.value().decode()
    return None


def _run(c: Cluster) -> dict:
    p = producer(c, "shop", **{"transactional.id": "shop-1"})
    p.init_transactions()
    p.begin_transaction()
    for (topic, partition), value in ORDER.items():
        p.produce(topic, key="o-1", value=value, partition=partition)
    p.flush()                                  # in the three logs, replicated; the transaction is open
    # The coordinator's WriteTxnMarkers request to orders-0's leader will be lost on the network.
    c.drop_next("WriteTxnMarkers", src=c.transaction_coordinator("shop-1"), dst=c.leader(TOPIC, 0))
    p.commit_transaction()                     # returns once PrepareCommit is durable: the decision
    state_at_return = txn_state(c, "shop-1")
    reader = consumer(c, "reader-committed", "read_committed")
    reader.assign([TopicPartition(t, part, 0) for t, part in ORDER])
    first = _first_value(reader)
    state_at_first_read = txn_state(c, "shop-1")
    rest = wait_for(reader, 2, timeout_s=60)
    return {"state_when_commit_returned": state_at_return, "first_read": first,
            "state_at_first_read": state_at_first_read, "read_committed": ([first] if first else []) + rest}


def _check(c: Cluster, r: dict, variant: str) -> None:
    expect(r["state_when_commit_returned"] == "PrepareCommit",
           f"commit_transaction() returned once the decision was durable, before the markers: {r}")
    expect(r["read_committed"][-1:] == ["o-1 line 1"] and sorted(r["read_committed"]) == sorted(ORDER.values()),
           f"read_committed got the whole order, orders-0's line last (its marker was sent again): {r}")
    expect(r["state_at_first_read"] == "PrepareCommit",
           f"the reader read committed records while the coordinator was still in PrepareCommit: {r}")
    for topic, partition in ORDER:
        expect(markers(c, topic, partition) == ["COMMIT"], f"{topic}-{partition} has exactly one COMMIT marker")
    expect(txn_state(c, "shop-1") == "CompleteCommit", "the coordinator completed the commit")


MARKER_LOST = Scenario(
    "commit-marker-lost-retried", "One decision, three partitions: a lost marker makes one of them late",
    "A transactional producer (transactional.id 'shop-1') writes one order to three partitions of two topics: "
    "orders-0, orders-1 and payments-0, and commits. PrepareCommit is durable, so the commit is decided and "
    "commit_transaction() returns. The coordinator sends a WriteTxnMarkers request to each partition leader; the "
    "one for orders-0 is lost on the network, the coordinator's connection breaks and it sends that marker again. "
    "A read_committed reader of all three partitions reads the two partitions whose markers landed first.",
    "read_committed got o-1 line 2 and o-1 paid while the coordinator was still in PrepareCommit, and o-1 line 1 "
    "(orders-0) last, after the retried marker; each partition holds one COMMIT marker; the coordinator is in "
    "CompleteCommit.",
    _run, _check, setup=_setup,
    moments=(
        KeyMoment("prepare-commit", "PrepareCommit is durable: the commit is decided for all three partitions",
                  state_is("shop-1", "PrepareCommit")),
        KeyMoment("marker-lost", "The coordinator notices its WriteTxnMarkers request for orders-0 was lost: the connection broke",
                  narrated("lost its connection to", "WriteTxnMarkers fail")),
        KeyMoment("partial-read", "read_committed reads a committed partition while orders-0 still has no marker",
                  narrated("reader-committed skips offset", "COMMIT marker")),
        KeyMoment("marker-retried", "The coordinator sends the marker again: orders-0's COMMIT marker lands",
                  marker_lands(TOPIC, 0)),
        KeyMoment("complete", "Every partition has its marker: CompleteCommit", state_is("shop-1", "CompleteCommit"))),
)
