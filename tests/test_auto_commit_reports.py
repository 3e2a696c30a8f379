"""Who hears about the consumer's own commits of enable.auto.commit (dialect.AUTO_COMMIT_REPORTED).

librdkafka's auto-commit timer commits like any commit (rd_kafka_cgrp_assigned_offsets_commit) and
rd_kafka_cgrp_propagate_commit_result hands the result, failed or not, to the application's offset_commit_cb
(``on_commit``).  Kafka's Java client's auto-commit (ConsumerCoordinator.autoCommitOffsetsAsync) is one
commitOffsetsAsync with the coordinator's own callback: it only logs a failure, a retriable one at DEBUG ("Asynchronous
auto-commit of offsets {} failed due to retriable error.", and the next auto-commit comes after retry.backoff.ms),
any other at WARN; the application's commit callback hears nothing.

Every scenario: a consumer of group "g" assigned t-0 consumes three records; the first OffsetCommit of its
auto-commit timer (auto.commit.interval.ms 1 s) is held past its 5 s request timeout."""
import logging

import pytest

from txnlab import Cluster, Consumer, Producer, TopicPartition
from helpers import captured_logger, produce_values, read_offsets


def _auto_committing_consumer_whose_first_commit_times_out(dialect):
    """(cluster, consumer, on_commit's reports, logged lines, [ms since t0 of every OffsetCommit sent])."""
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t", partitions=1, replication_factor=1)
    p = Producer({"bootstrap.servers": c.bootstrap})
    for v in (b"r0", b"r1", b"r2"):
        p.produce("t", value=v, partition=0)
    assert p.flush(10) == 0
    logger, cap = captured_logger(f"txnlab.test.auto_commit.{dialect}")
    reports = []
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect,
                  "enable.auto.commit": True, "auto.commit.interval.ms": 1_000, "auto.offset.reset": "earliest",
                  "socket.timeout.ms": 5_000, "request.timeout.ms": 5_000, "logger": logger, "log_level": 7,
                  "on_commit": lambda err, parts: reports.append((err, [(tp.topic, tp.partition, tp.offset)
                                                                        for tp in parts]))})
    k.assign([TopicPartition("t", 0)])
    t0 = c.kernel.now
    c.delay_next("OffsetCommit", 100_000)
    got = []
    while len(got) < 3:
        msg = k.poll(1)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    assert got == [b"r0", b"r1", b"r2"]
    for _ in range(15):                                 # 15 s of polls: the auto-commits run in between
        k.poll(1)
    sent = [m.sent_at - t0 for m in c.network_messages()
            if m.api == "OffsetCommit" and not m.is_response and m.sent_at >= t0]
    lines = [line for line in cap.lines if "auto-commit" in line[1] or "Commit" in line[1]]
    logger.removeHandler(cap)
    return c, k, reports, lines, sent


def test_java_auto_commit_failure_is_logged_and_the_commit_callback_hears_nothing():
    """The held commit fails at its request timeout (a disconnect: retriable): one DEBUG line, no on_commit; the
    next auto-commit follows retry.backoff.ms (100 ms) later, not auto.commit.interval.ms, and commits offset 3."""
    c, k, reports, lines, sent = _auto_committing_consumer_whose_first_commit_times_out("java")
    assert reports == []
    assert lines == [(logging.DEBUG, "ConsumerCoordinator [consumer-1] Asynchronous auto-commit of offsets {t-0=OffsetAndMetadata{offset=3, "
                                     "leaderEpoch=0, metadata=''}} failed due to retriable error.")]
    # (the coordinator is looked up again first, some ms; the next timer tick would have come at 6 s)
    assert 5_000 + 100 <= sent[1] - sent[0] < 5_000 + 200
    assert k.committed([TopicPartition("t", 0)])[0].offset == 3


def test_librdkafka_auto_commit_results_reach_on_commit():
    """librdkafka's commit retries the request that timed out (its coordinator is looked up again), and on_commit
    hears the result of the auto-commit."""
    c, k, reports, lines, sent = _auto_committing_consumer_whose_first_commit_times_out("librdkafka")
    assert reports == [(None, [("t", 0, 3)])]
    assert not [line for line in lines if "auto-commit" in line[1]]
    assert k.committed([TopicPartition("t", 0)])[0].offset == 3


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_an_auto_commit_that_succeeds(dialect):
    """No failure: on_commit hears of librdkafka's auto-commits, never of Java's."""
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t", partitions=1, replication_factor=1)
    p = Producer({"bootstrap.servers": c.bootstrap})
    p.produce("t", value=b"r0", partition=0)
    assert p.flush(10) == 0
    reports = []
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect,
                  "enable.auto.commit": True, "auto.commit.interval.ms": 1_000, "auto.offset.reset": "earliest",
                  "on_commit": lambda err, parts: reports.append((err, [(tp.topic, tp.partition, tp.offset)
                                                                        for tp in parts]))})
    k.assign([TopicPartition("t", 0)])
    for _ in range(5):
        k.poll(1)
    assert k.committed([TopicPartition("t", 0)])[0].offset == 1
    assert reports == ([(None, [("t", 0, 1)])] if dialect == "librdkafka" else [])


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_an_auto_commit_refused_for_good(dialect):
    """A consumer with a manual assignment auto-commits to group "g", which has a member (a subscribed consumer):
    the coordinator refuses every commit (UNKNOWN_MEMBER_ID: only a member may commit).  librdkafka's on_commit
    hears each failure; Java logs each at WARN, tells on_commit nothing, and tries again at the next interval."""
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t", partitions=2, replication_factor=1)
    p = Producer({"bootstrap.servers": c.bootstrap})
    for v in (b"r0", b"r1", b"r2"):
        p.produce("t", value=v, partition=0)
    assert p.flush(10) == 0
    member = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect,
                       "enable.auto.commit": False})
    member.subscribe(["t"])
    for _ in range(10):
        member.poll(0.5)
    assert c.group_state("g")["state"] == "Stable"
    logger, cap = captured_logger(f"txnlab.test.auto_commit.refused.{dialect}")
    reports = []
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect,
                  "enable.auto.commit": True, "auto.commit.interval.ms": 1_000, "auto.offset.reset": "earliest",
                  "logger": logger, "on_commit": lambda err, parts: reports.append(err)})
    k.assign([TopicPartition("t", 0)])
    t0 = c.kernel.now
    for _ in range(10):
        k.poll(1)
        member.poll(0)
    logger.removeHandler(cap)
    sent = [m.sent_at - t0 for m in c.network_messages()
            if m.api == "OffsetCommit" and not m.is_response and m.src == k.name and m.sent_at >= t0]
    assert len(sent) >= 3 and {b - a for a, b in zip(sent, sent[1:])} == {1_000}
    warned = [text for level, text in cap.lines if "auto-commit" in text]
    if dialect == "java":
        assert reports == []
        assert len(warned) == len(sent) and all(
            level == logging.WARNING for level, text in cap.lines if "auto-commit" in text)
        assert warned[0].startswith(f"ConsumerCoordinator [{k.name}] Asynchronous auto-commit of offsets "
                                    "{t-0=OffsetAndMetadata{offset=3, leaderEpoch=0, metadata=''}} failed: ")
    else:
        assert warned == [] and reports
        assert {e.name() for e in reports} == {"UNKNOWN_MEMBER_ID"}


def test_java_close_logs_its_synchronous_auto_commit_by_the_time_it_returns():
    """The Java client logs as it goes (slf4j, in the thread that logs): what close() logged -- its synchronous
    auto-commit (ConsumerCoordinator.close -> maybeAutoCommitOffsetsSync) -- has reached the logger when close()
    returns, though nothing polls after it."""
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t", partitions=1, replication_factor=1)
    produce_values(c, ["r0", "r1"])
    logger, cap = captured_logger("txnlab.test.auto_commit.close.java")
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": "java",
                  "enable.auto.commit": True, "auto.offset.reset": "earliest", "logger": logger, "log_level": 7})
    k.assign([TopicPartition("t", 0)])
    assert read_offsets(k, 2) == [(0, "r0"), (1, "r1")]
    before = len(cap.lines)
    k.close()
    logger.removeHandler(cap)
    assert (logging.DEBUG, "ConsumerCoordinator [consumer-1] Sending synchronous auto-commit of offsets "
                           "{t-0=OffsetAndMetadata{offset=2, leaderEpoch=0, metadata=''}}") in cap.lines[before:]
