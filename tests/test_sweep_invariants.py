"""The sweep's step invariants on the brokers' decisions: each holds on the real engine and breaks, with a
sentence a learner can read, when the matching mutation is switched on (issue 18)."""
from __future__ import annotations

import pytest

from txnlab import Cluster, Consumer, Producer
from txnlab.client.message import TopicPartition
from txnlab.sweep.invariants import StepInvariants


def _above_hw(mutations: tuple):
    """A record the leader holds but its followers cannot fetch (cut off), then a read_committed reader."""
    c = Cluster(brokers=3, seed=3, mutations=mutations)
    c.create_topic("t", partitions=1, replication_factor=3)
    inv = StepInvariants(c, ["t"])
    leader = c.leader("t")
    followers = [b for b in c.brokers if b != leader]
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": 1})
    p.produce("t", b"committed", partition=0)
    assert p.flush(30) == 0
    c.advance(2_000)
    c.partition([f"broker-{leader}"], [f"broker-{b}" for b in followers])
    p.produce("t", b"only on the leader", partition=0)           # acks=1: answered, above the HW
    assert p.flush(30) == 0
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "isolation.level": "read_committed",
                     "auto.offset.reset": "earliest"})
    cons.assign([TopicPartition("t", 0, 0)])
    seen = []
    for _ in range(10):
        m = cons.poll(0.3)
        if m is not None and m.error() is None:
            seen.append(m.value())
    inv.detach()
    return seen, inv.result


def test_no_consumer_reads_at_or_above_the_hw():
    seen, result = _above_hw(())
    assert seen == [b"committed"] and result.ok, result.explain()


def test_lso_ignoring_the_hw_is_caught_as_a_read_above_the_hw():
    seen, result = _above_hw(("lso-ignores-hw",))
    assert b"only on the leader" in seen
    assert "read-above-hw" in result.violations
    assert "at or above the HW" in result.explain()


def test_invariants_detach_from_the_cluster():
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t")
    inv = StepInvariants(c, ["t"])
    assert inv._audit in c.auditors
    inv.detach()
    assert not c.auditors and inv._observe not in c.kernel.observers


@pytest.mark.parametrize("mutation", ["offset-fetch-unstable"])
def test_require_stable_is_watched(mutation):
    """A copier's offsets pending in an open transaction; a fresh consumer asks with require_stable."""
    for muts, broken in (((), False), ((mutation,), True)):
        c = Cluster(brokers=1, seed=2, mutations=muts)
        c.create_topic("in")
        c.create_topic("out")
        inv = StepInvariants(c, ["in", "out"])
        tx = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "copier"})
        tx.init_transactions()
        tx.begin_transaction()
        tx.produce("out", b"x")
        cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "isolation.level": "read_committed"})
        tx.send_offsets_to_transaction([TopicPartition("in", 0, 1)], cons.consumer_group_metadata())
        other = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "isolation.level": "read_committed"})
        try:
            other.committed([TopicPartition("in", 0)], timeout=2.0)
        except Exception:  # noqa: BLE001 - the correct engine keeps answering UNSTABLE_OFFSET_COMMIT
            pass
        inv.detach()
        assert ("require-stable" in inv.result.violations) == broken, inv.result.explain()
