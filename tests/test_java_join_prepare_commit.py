"""Java's commit before a rebalance gives the assignment up, and what it logs.

Kafka's ConsumerCoordinator.onJoinPrepare, with enable.auto.commit: an asynchronous auto-commit of everything
consumed (maybeAutoCommitOffsetsAsync -> autoCommitOffsetsAsync, whose callback logs as the timer's auto-commit
does), waited for before onPartitionsRevoked; a retriable failure is logged at DEBUG ("Asynchronous auto-commit of
offsets failed with retryable error: {}. Will retry it.") and the commit is sent again after retry.backoff.ms; any
other failure at ERROR ("... Will continue to join group.").  Not the WARN "Synchronous auto-commit of offsets {}
failed" of close (maybeAutoCommitOffsetsSync).
"""
import logging

from txnlab import Cluster, Consumer, Producer
from helpers import captured_logger


def _three_records():
    """A one-broker cluster whose topic t holds r0, r1, r2."""
    c = Cluster(brokers=1, seed=2, config={"group.initial.rebalance.delay.ms": 0})
    c.create_topic("t", partitions=1, replication_factor=1)
    p = Producer({"bootstrap.servers": c.bootstrap})
    for v in (b"r0", b"r1", b"r2"):
        p.produce("t", value=v, partition=0)
    assert p.flush(10) == 0
    return c


def _java_member(c, name, **extra):
    """A Java-dialect member of group g that auto-commits (only when a rebalance asks: the interval is 10 min)."""
    return Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "client.id": name, "sim.client.dialect": "java",
                     "enable.auto.commit": True, "auto.commit.interval.ms": 600_000, "auto.offset.reset": "earliest",
                     "heartbeat.interval.ms": 500, **extra})


def _consume_three(a):
    got = []
    while len(got) < 3:
        msg = a.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())


def test_java_rebalance_commit_is_asynchronous_retried_and_comes_before_on_revoke():
    c = _three_records()
    logger, cap = captured_logger("txnlab.test.join_prepare_commit")
    events = []

    def on_revoke(consumer, parts):
        events.append(("on_revoke", c.now, [(tp.topic, tp.partition) for tp in parts]))

    timeouts = {"socket.timeout.ms": 5_000, "request.timeout.ms": 5_000}
    a = _java_member(c, "a", logger=logger, log_level=7, **timeouts)
    a.subscribe(["t"], on_revoke=on_revoke)
    _consume_three(a)
    c.delay_next("OffsetCommit", 100_000)          # the first commit is held past its request timeout
    b = _java_member(c, "b", **timeouts)
    b.subscribe(["t"])
    while not events:
        a.poll(0.1)
        b.poll(0)
    a.poll(0)                                       # the consumer's log lines reach the logger in poll()
    logger.removeHandler(cap)
    lines = [line for line in cap.lines if "auto-commit" in line[1]]
    shown = "{t-0=OffsetAndMetadata{offset=3, leaderEpoch=0, metadata=''}}"
    assert lines == [
        (logging.DEBUG, f"ConsumerCoordinator [a] Asynchronous auto-commit of offsets {shown} failed due to "
                        f"retriable error."),
        (logging.DEBUG, "ConsumerCoordinator [a] Asynchronous auto-commit of offsets failed with retryable error: "
                        "null. Will retry it.")]
    commits = [m for m in c.network_messages() if m.api == "OffsetCommit" and m.src == "a"]
    assert len(commits) == 2
    # the second commit went retry.backoff.ms after the first failed, and on_revoke only after its answer
    answered = max(m.sent_at for m in c.network_messages() if m.api == "OffsetCommit" and m.is_response)
    assert events[0][1] >= answered and events[0][2] == [("t", 0)]
    while not (a.assignment() or b.assignment()):
        a.poll(0.1)
        b.poll(0.1)
    assert a.committed(a.assignment() or b.assignment())[0].offset == 3


def test_java_rebalance_commit_refused_for_good_is_logged_at_error_and_the_partitions_are_lost():
    """The commit is held until the coordinator has dropped the member (its heartbeats wait behind the commit):
    UNKNOWN_MEMBER_ID, a CommitFailedException: WARN from the auto-commit's callback, ERROR from onJoinPrepare,
    no second attempt, and the partitions go to on_lost (the generation is reset), not on_revoke."""
    c = _three_records()
    logger, cap = captured_logger("txnlab.test.join_prepare_commit.refused")
    events = []
    timeouts = {"session.timeout.ms": 6_000, "socket.timeout.ms": 10_000, "request.timeout.ms": 10_000}
    a = _java_member(c, "a", logger=logger, **timeouts)
    a.subscribe(["t"], on_revoke=lambda _, parts: events.append("on_revoke"),
                on_lost=lambda _, parts: events.append("on_lost"))
    _consume_three(a)
    c.delay_next("OffsetCommit", 8_000)
    b = _java_member(c, "b", **timeouts)
    b.subscribe(["t"])
    while not events:
        a.poll(0.1)
        b.poll(0)
    a.poll(0)
    logger.removeHandler(cap)
    lines = [line for line in cap.lines if "auto-commit" in line[1]]
    assert [level for level, _ in lines] == [logging.WARNING, logging.ERROR]
    assert lines[0][1].startswith("ConsumerCoordinator [a] Asynchronous auto-commit of offsets {t-0=OffsetAndMetadata"
                                  "{offset=3, leaderEpoch=0, metadata=''}} failed: ")
    assert lines[1][1] == ("ConsumerCoordinator [a] Asynchronous auto-commit of offsets failed: Commit cannot be "
                           "completed since the group has already rebalanced and assigned the partitions to another "
                           "member. This means that the time between subsequent calls to poll() was longer than the "
                           "configured max.poll.interval.ms, which typically implies that the poll loop is spending "
                           "too much time message processing. You can address this either by increasing "
                           "max.poll.interval.ms or by reducing the maximum size of batches returned in poll() with "
                           "max.poll.records.. Will continue to join group.")
    assert len([m for m in c.network_messages() if m.api == "OffsetCommit" and m.src == "a"]) == 1
    assert events == ["on_lost"]
