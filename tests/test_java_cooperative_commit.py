"""Where a cooperative member's auto-commit goes in a rebalance.

Java (Kafka 4.1.1 ConsumerCoordinator): onJoinPrepare commits everything consumed before every rejoin, eager or
cooperative (maybeAutoCommitOffsetsAsync, waited for), so the OffsetCommit goes out before the member's JoinGroup
while it still owns every partition; onJoinComplete then revokes what moved and commits nothing.
librdkafka: the member commits the partitions it gives up when it gives them up, after the SyncGroup
(rd_kafka_cgrp_incr_unassign_done -> rd_kafka_cgrp_assigned_offsets_commit)."""
import pytest

from txnlab import Cluster, Consumer, Producer


def _rebalance(dialect: str):
    c = Cluster(brokers=1, seed=11)
    c.create_topic("t", partitions=4, replication_factor=1)
    p = Producer({"bootstrap.servers": c.bootstrap})
    for i in range(40):
        p.produce("t", str(i).encode(), partition=i % 4)
    p.flush(5)
    revoked = []

    def member(name):
        m = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "auto.offset.reset": "earliest",
                      "partition.assignment.strategy": "cooperative-sticky", "enable.auto.commit": True,
                      "auto.commit.interval.ms": 600_000, "sim.client.dialect": dialect})
        m.subscribe(["t"], on_revoke=lambda cons, ps: revoked.append((name, c.kernel.step_count)))
        return m
    a = member("a")
    got = 0
    while got < 40:
        msg = a.poll(0.5)
        got += msg is not None and msg.error() is None
    start = c.kernel.step_count
    b = member("b")
    for _ in range(60):
        a.poll(0.1)
        b.poll(0.1)
    assert len(a.assignment()) == 2 and len(b.assignment()) == 2
    sent = [e for e in c.trace if e.step > start and e.kind == "deliver" and not e.is_response and e.src == "consumer-1"
            and e.api in ("OffsetCommit", "JoinGroup")]
    revoke_step = next(step for name, step in revoked if name == "a")
    return [e.api for e in sent], [e for e in sent if e.api == "OffsetCommit"], revoke_step, c


@pytest.mark.parametrize("dialect", ["java", "librdkafka"])
def test_a_cooperative_members_commit_in_a_rebalance(dialect):
    apis, commits, revoke_step, c = _rebalance(dialect)
    assert commits, apis
    first = commits[0]
    if dialect == "java":
        # before its first JoinGroup of the rebalance, with every partition it owned and read (10 records each)
        assert apis[0] == "OffsetCommit", apis
        assert "t-0=10" in first.text and "t-3=10" in first.text, first.text
        assert all(e.step < revoke_step for e in commits)          # nothing committed at the revocation
    else:
        # after the SyncGroup, when it gives up its two partitions: those two only
        assert apis[0] == "JoinGroup", apis
        assert first.step > revoke_step
        assert first.text.count("=10") == 2, first.text
