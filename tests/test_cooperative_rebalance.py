"""cooperative-sticky (KIP-429): members keep their partitions through a rebalance and hand over only what moves."""
import pytest

from txnlab import Cluster, Consumer, KafkaError, KafkaException, Producer
from txnlab.client.assignors import cooperative_sticky_assign, sticky_assign


def parts(c):
    return sorted(tp.partition for tp in c.assignment())


def member(cluster, name, log, **extra):
    def on_assign(c, ps):
        log.append((name, "assign", [p.partition for p in ps]))

    def on_revoke(c, ps):
        log.append((name, "revoke", [p.partition for p in ps]))
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g", "auto.offset.reset": "earliest",
                  "partition.assignment.strategy": "cooperative-sticky", **extra})
    c.subscribe(["t"], on_assign=on_assign, on_revoke=on_revoke)
    return c


@pytest.fixture
def cluster():
    cl = Cluster(brokers=1, seed=11)
    cl.create_topic("t", partitions=6, replication_factor=1)
    return cl


def test_a_joining_member_takes_only_what_moves_and_nobody_owns_a_partition_twice(cluster):
    log = []
    a = member(cluster, "a", log)
    while len(parts(a)) < 6:
        a.poll(0.5)
    assert a.coordinator.protocol == "cooperative-sticky"
    b = member(cluster, "b", log)
    for _ in range(40):
        a.poll(0.1)
        b.poll(0.1)
        assert not set(parts(a)) & set(parts(b))          # never two owners at once
    assert parts(a) == [0, 1, 2] and parts(b) == [3, 4, 5]
    # a gave up exactly what moved, kept the rest all along; b got it in the second rebalance
    assert ("a", "revoke", [3, 4, 5]) in log
    assert not any(who == "a" and what == "revoke" and set(ps) & {0, 1, 2} for who, what, ps in log)
    assert ("b", "assign", [3, 4, 5]) in log
    assert log.index(("a", "revoke", [3, 4, 5])) < log.index(("b", "assign", [3, 4, 5]))


def test_records_keep_flowing_from_kept_partitions_during_the_rebalance(cluster):
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(60):
        p.produce("t", str(i).encode(), partition=i % 6)
    p.flush(5)
    log = []
    a = member(cluster, "a", log, **{"enable.auto.commit": True})
    seen = []
    while len(parts(a)) < 6:
        m = a.poll(0.5)
        if m is not None:
            seen.append(m.value())
    b = member(cluster, "b", log, **{"enable.auto.commit": True})
    for _ in range(200):
        for c in (a, b):
            m = c.poll(0.05)
            if m is not None and m.error() is None:
                seen.append(m.value())
    assert sorted(seen, key=int) == [str(i).encode() for i in range(60)]      # all of it, once each


def test_a_leaving_member_hands_its_partitions_to_the_others_who_keep_theirs(cluster):
    log = []
    a = member(cluster, "a", log)
    b = member(cluster, "b", log)
    for _ in range(80):
        a.poll(0.1)
        b.poll(0.1)
    kept = parts(a)
    assert len(kept) == 3
    b.close()
    for _ in range(60):
        a.poll(0.1)
    assert parts(a) == [0, 1, 2, 3, 4, 5]
    assert not any(who == "a" and what == "revoke" for who, what, _ in log)


def test_assign_on_a_cooperative_subscription_is_a_state_error(cluster):
    from txnlab import TopicPartition
    c = member(cluster, "a", [])
    while not parts(c):
        c.poll(0.5)
    with pytest.raises(KafkaException) as e:
        c.assign([TopicPartition("t", 0)])
    assert e.value.args[0].code() == KafkaError._STATE
    assert "incremental_assign" in e.value.args[0].str()


def test_sticky_assignor_keeps_owned_partitions_and_balances():
    subs = {"m1": ("t",), "m2": ("t",), "m3": ("t",)}
    owned = {"m1": (("t", 0), ("t", 1), ("t", 2), ("t", 3)), "m2": (("t", 4), ("t", 5), ("t", 6))}
    plan = sticky_assign(subs, {"t": 7}, owned)
    assert sorted(len(v) for v in plan.values()) == [2, 2, 3]
    assert set(plan["m1"]) <= set(owned["m1"]) and set(plan["m2"]) <= set(owned["m2"])
    assert sorted(tp for v in plan.values() for tp in v) == [("t", p) for p in range(7)]
    coop = cooperative_sticky_assign(subs, {"t": 7}, owned)
    assert coop["m3"] == []                                  # what moves waits one rebalance
    assert coop["m1"] == plan["m1"] and coop["m2"] == plan["m2"]
    # the next round, with the moved partitions released, hands them over
    again = cooperative_sticky_assign(subs, {"t": 7}, {"m1": tuple(plan["m1"]), "m2": tuple(plan["m2"])})
    assert again == plan


def test_every_client_reports_the_cluster_id_metadata_carries(cluster):
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "x"})
    assert p.cluster_id() == c.cluster_id() == p.list_topics().cluster_id == cluster.cluster_id
    assert len(cluster.cluster_id) == 22
