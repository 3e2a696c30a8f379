"""Java's close() with enable.auto.commit (Kafka 4.1.1 ClassicKafkaConsumer.close -> ConsumerCoordinator.close ->
maybeAutoCommitOffsetsSync): commitOffsetsSync of everything consumed with close's timer, min(30 s,
request.timeout.ms) (createTimerForRequest), retrying every retriable failure after ExponentialBackoff's sleep while
the timer has time left; then the revoke callback (onLeavePrepare) and the LeaveGroup.  A commit that does not get
through is only logged (DEBUG "Auto-commit of offsets ... timed out before completion" when the timer ran out; the
lab says it in the trace).
(The lab's Java dialect used to send at most five OffsetCommits there, after the revoke callback.)

The group coordinator here cannot complete a write (its __consumer_offsets partition is under min ISR): each
OffsetCommit waits offsets.commit.timeout.ms (5 s) and is answered COORDINATOR_NOT_AVAILABLE, as in
tests/test_commit_sync_coordinator_trouble.py."""
from __future__ import annotations

import pytest

from txnlab import Cluster, Consumer, Producer, TopicPartition
from txnlab.protocol.names import OFFSETS_TOPIC

SHOWN = "{t-0=OffsetAndMetadata{offset=3, leaderEpoch=0, metadata=''}}"


def cluster() -> Cluster:
    c = Cluster(brokers=3, seed=5, config={"offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": 3,
                                           "min.insync.replicas": 2, "offsets.commit.timeout.ms": 5_000,
                                           "transaction.state.log.num.partitions": 1})
    c.create_topic("t", partitions=1, replication_factor=1)
    p = Producer({"bootstrap.servers": c.bootstrap})
    for i in range(3):
        p.produce("t", value=b"r%d" % i, partition=0)
    p.flush(10)
    return c


def reading(c: Cluster, dialect: str = "java", subscribe: bool = False, **cfg):
    """A consumer of group g (enable.auto.commit, a long interval: only close() commits) that has read t-0's three
    records; (consumer, what on_revoke saw: the OffsetCommits sent by then)."""
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect,
                  "enable.auto.commit": True, "auto.commit.interval.ms": 600_000, "auto.offset.reset": "earliest",
                  **cfg})
    seen: list = []

    def on_revoke(_, parts):
        seen.append(len(commits(c, 0)))
    if subscribe:
        k.subscribe(["t"], on_revoke=on_revoke)
    else:
        k.assign([TopicPartition("t", 0)])
    got = []
    while len(got) < 3:
        m = k.poll(1)
        if m is not None and m.error() is None:
            got.append(m.offset())
    return k, seen


def commits(c: Cluster, t0: int) -> list:
    return [m.sent_at - t0 for m in c.network_messages()
            if m.api == "OffsetCommit" and not m.is_response and m.sent_at >= t0]


def under_min_isr(c: Cluster) -> None:
    coord = c.group_coordinator("g")
    for b in [b for b in c.broker_ids if b != coord]:
        c.crash(b)
    c.run_until(lambda: c.partition_state(OFFSETS_TOPIC, 0)["isr"] == [coord], timeout_ms=60_000)


@pytest.mark.parametrize("request_timeout,sends", [(30_000, 6), (12_000, 3)])
def test_java_close_retries_its_auto_commit_until_closes_timer_runs_out(request_timeout, sends):
    c = cluster()
    # (a lab consumer's request.timeout.ms is its socket.timeout.ms, in either dialect)
    k, _ = reading(c, **{"socket.timeout.ms": request_timeout})
    under_min_isr(c)
    t0 = c.now
    k.close()
    sent = commits(c, t0)
    assert len(sent) == sends                   # one per round, ~5 s each, until close's timer is spent
    # the answer after 5 s, ExponentialBackoff's first sleep (100 ms), the coordinator found again
    assert 5_100 <= sent[1] - sent[0] < 5_200
    assert c.now - t0 >= request_timeout        # (then the LeaveGroup)
    said = [e.narration for e in c.trace if e.time >= t0 and e.narration]
    assert any(f"Auto-commit of offsets {SHOWN} timed out before completion (close's timeout, {request_timeout} ms"
               in s for s in said)
    assert any("close(): OffsetCommit failed with COORDINATOR_NOT_AVAILABLE, retriable: it tries again after 100 ms"
               in s for s in said)


def test_java_close_commits_before_the_revoke_callback():
    """ConsumerCoordinator.close commits first; onLeavePrepare then calls on_revoke (librdkafka the other way)."""
    for dialect, before in (("java", 1), ("librdkafka", 0)):
        c = Cluster(brokers=1, seed=3)
        c.create_topic("t", partitions=1)
        p = Producer({"bootstrap.servers": c.bootstrap})
        for i in range(3):
            p.produce("t", value=b"r%d" % i, partition=0)
        p.flush(10)
        k, seen = reading(c, dialect, subscribe=True)
        k.close()
        assert seen == [before], dialect
        k2 = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"})
        assert [tp.offset for tp in k2.committed([TopicPartition("t", 0)], 10)] == [3]
