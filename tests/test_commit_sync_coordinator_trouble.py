"""A synchronous commit (``commit(asynchronous=False)``) while the group coordinator cannot complete the write: the
``__consumer_offsets`` partition is under min ISR, so each OffsetCommit is appended, waits offsets.commit.timeout.ms
(5 s here) for the high watermark and is answered COORDINATOR_NOT_AVAILABLE (tests/test_group_write_path.py).
What the call does is each client's own:

* Java (Kafka 4.1.1, ConsumerCoordinator.commitOffsetsSync under ClassicKafkaConsumer.commitSync, group.protocol=
  classic): one OffsetCommit per round; COORDINATOR_NOT_AVAILABLE marks the coordinator unknown
  (OffsetCommitResponseHandler: markCoordinatorUnknown) and is retriable, so it sleeps retryBackoff.backoff(attempts)
  (100, 200, 400, 800, 1000 ... ms), finds the coordinator again and sends again, until default.api.timeout.ms
  (60 s) runs out: TimeoutException "Timeout of 60000ms expired before successfully committing offsets ...".
* librdkafka (rd_kafka_commit waits for its op with RD_POLL_INFINITE): the request buffer is sent three times
  (rd_kafka_handle_OffsetCommit: REFRESH|RETRY|SPECIAL, rkbuf_max_retries 2, 100 then 200 ms apart), then
  rd_kafka_cgrp_op_handle_OffsetCommit defers the op once until the coordinator is back, which sends a new buffer
  three more times; then the commit fails with COORDINATOR_NOT_AVAILABLE.  A commit that starts with no known
  coordinator has spent its deferral already: three sends.

Both used to send five and fail with COORDINATOR_NOT_AVAILABLE after about 26 s."""
import pytest

from txnlab import Cluster, ConfigException, Consumer, KafkaError, KafkaException, TopicPartition
from txnlab.kernel.faults import KernelHooks
from txnlab.protocol.names import OFFSETS_TOPIC

WRITE_TIMEOUT = 5_000        # offsets.commit.timeout.ms
OFFSETS_7 = "{t-0=OffsetAndMetadata{offset=7, leaderEpoch=null, metadata=''}}"


def cluster() -> Cluster:
    """Three brokers, one __consumer_offsets partition on all three, min.insync.replicas=2."""
    c = Cluster(brokers=3, seed=5, config={"offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": 3,
                                           "min.insync.replicas": 2, "offsets.commit.timeout.ms": WRITE_TIMEOUT,
                                           "transaction.state.log.num.partitions": 1})
    c.create_topic("t", partitions=1, replication_factor=1)
    return c


def consumer(c: Cluster, dialect: str, known: bool = True, **cfg) -> Consumer:
    """A consumer of t-0; ``known``: it has committed once, so it knows the group's coordinator."""
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "enable.auto.commit": False,
                  "sim.client.dialect": dialect, **cfg})
    k.assign([TopicPartition("t", 0)])
    if not known:       # another consumer of the group has the offsets topic created and loaded
        Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"}).committed([TopicPartition("t", 0)], 10)
    else:
        k.commit(offsets=[TopicPartition("t", 0, 2)], asynchronous=False)
    return k


def under_min_isr(c: Cluster) -> list:
    """Crash both followers of the offsets partition and wait until its ISR is the coordinator alone."""
    coord = c.group_coordinator("g")
    followers = [b for b in c.broker_ids if b != coord]
    for b in followers:
        c.crash(b)
    c.run_until(lambda: c.partition_state(OFFSETS_TOPIC, 0)["isr"] == [coord], timeout_ms=60_000)
    return followers


def commit_7(c: Cluster, k: Consumer):
    """commit(t-0=7, asynchronous=False): (the error raised or None, ms it took, the OffsetCommit requests the
    coordinator got and the answers the consumer got, from the trace, as (ms since the call, error names))."""
    t0 = c.now
    err = None
    try:
        assert [tp.offset for tp in k.commit(offsets=[TopicPartition("t", 0, 7)], asynchronous=False)] == [7]
    except KafkaException as e:
        err = e.args[0]
    requests = [e.time - t0 for e in c.trace if e.time >= t0 and e.kind == "deliver" and e.api == "OffsetCommit"
                and not e.is_response]
    answers = [(e.time - t0, e.narration) for e in c.trace if e.time >= t0 and e.kind == "deliver"
               and e.api == "OffsetCommit" and e.is_response]
    return err, c.now - t0, requests, answers


def find_coordinator_sent(c: Cluster, k: Consumer, after: int) -> int:
    return min(m.sent_at for m in c.network_messages()
               if m.api == "FindCoordinator" and not m.is_response and m.src == k.name and m.sent_at >= after)


def test_java_commit_sync_retries_until_default_api_timeout_then_throws_timeout_exception():
    c = cluster()
    k = consumer(c, "java")
    under_min_isr(c)
    t0 = c.now
    err, took, requests, answers = commit_7(c, k)
    assert (err.code(), err.name(), err.retriable()) == (KafkaError.REQUEST_TIMED_OUT, "REQUEST_TIMED_OUT", True)
    assert err.str() == f"Timeout of 60000ms expired before successfully committing offsets {OFFSETS_7}"
    assert took == 60_000
    assert len(requests) == 11                  # one per round, every ~5 s, until the 60 s are over
    assert all("COORDINATOR_NOT_AVAILABLE(15)" in text for _, text in answers)
    assert len(answers) == 10                   # the 11th was still waiting for its HW when the timer ran out
    # each answer marks the coordinator unknown; the next round finds it after ExponentialBackoff's sleep
    backoffs = [find_coordinator_sent(c, k, t0 + at) - (t0 + at) for at, _ in answers[:6]]
    assert backoffs == [100, 200, 400, 800, 1000, 1000]
    assert all("forgets coordinator" in text for _, text in answers)
    said = [e.narration for e in c.trace if e.time >= t0]
    assert any("commitSync: OffsetCommit failed with COORDINATOR_NOT_AVAILABLE, retriable: it tries again after "
               "100 ms" in s for s in said)
    assert any("commitSync throws TimeoutException" in s for s in said)


def test_java_commit_sync_gives_up_at_default_api_timeout_ms():
    c = cluster()
    k = consumer(c, "java", **{"default.api.timeout.ms": 12_000})
    under_min_isr(c)
    err, took, requests, _ = commit_7(c, k)
    assert (err.code(), err.str()) == (KafkaError.REQUEST_TIMED_OUT,
                                       f"Timeout of 12000ms expired before successfully committing offsets {OFFSETS_7}")
    assert (took, len(requests)) == (12_000, 3)


def test_librdkafka_commit_sync_sends_three_defers_once_sends_three_then_raises_coordinator_not_available():
    c = cluster()
    k = consumer(c, "librdkafka")
    under_min_isr(c)
    t0 = c.now
    err, took, requests, answers = commit_7(c, k)
    assert (err.code(), err.name(), err.str(), err.retriable()) == (
        KafkaError.COORDINATOR_NOT_AVAILABLE, "COORDINATOR_NOT_AVAILABLE", "Commit failed: the coordinator is not "
        "available", False)
    assert len(requests) == len(answers) == 6
    assert took == answers[-1][0] > 6 * WRITE_TIMEOUT          # the call ends with the sixth answer, ~31.5 s
    # the buffer's retries wait retry.backoff.ms doubled per retry; the deferred op goes as soon as the coordinator
    # is found again
    gaps = [find_coordinator_sent(c, k, t0 + at) - (t0 + at) for at, _ in answers[:5]]
    assert gaps == [100, 200, 0, 100, 200]
    said = [e.narration for e in c.trace if e.time >= t0]
    assert sum("librdkafka defers the commit" in s for s in said) == 1


def test_librdkafka_commit_with_no_known_coordinator_has_spent_its_deferral():
    """rd_kafka_cgrp_offsets_commit defers a commit made while no coordinator is up; once it is found the request
    goes out, and its failure cannot be deferred again: three sends."""
    c = cluster()
    k = consumer(c, "librdkafka", known=False)
    under_min_isr(c)
    err, took, requests, _ = commit_7(c, k)
    assert err.code() == KafkaError.COORDINATOR_NOT_AVAILABLE
    assert len(requests) == 3 and 3 * WRITE_TIMEOUT < took < 4 * WRITE_TIMEOUT


def test_librdkafka_commit_that_finds_no_coordinator_fails_wait_coord_after_session_timeout():
    """No broker can be reached (a network partition): the deferred op waits session.timeout.ms (45 s) for a
    coordinator and fails with _WAIT_COORD (rd_kafka_cgrp_timeout_scan); no OffsetCommit was ever sent."""
    c = cluster()
    k = consumer(c, "librdkafka", known=False)
    c.partition([k.name], [f"broker-{b}" for b in c.broker_ids])
    err, took, requests, _ = commit_7(c, k)
    assert (err.code(), err.name(), err.str()) == (KafkaError._WAIT_COORD, "_WAIT_COORD",
                                                   "Commit failed: Local: Waiting for coordinator")
    assert (took, requests) == (45_000, [])


@pytest.mark.parametrize("dialect,back_at", [("java", 45_000), ("librdkafka", 27_000)])
def test_commit_sync_succeeds_when_the_coordinator_recovers_before_the_client_gives_up(dialect, back_at):
    """The followers come back after the old five attempts would have failed (~26 s): Java is still retrying
    within its 60 s, librdkafka is on its sixth send; the write in flight then completes and commit() returns."""
    c = cluster()
    k = consumer(c, dialect)
    followers = under_min_isr(c)
    hooks = KernelHooks(c)
    for b in followers:
        hooks.after(back_at, f"restart broker-{b}", lambda b=b: c.restart(b))
    err, took, requests, answers = commit_7(c, k)
    assert err is None
    assert back_at < took < back_at + WRITE_TIMEOUT
    assert "(t-0 ok); consumer-1: commit acknowledged: t-0=7" in answers[-1][1] and len(requests) == {"java": 8, "librdkafka": 6}[dialect]
    assert [tp.offset for tp in k.committed([TopicPartition("t", 0)], 10)] == [7]


@pytest.mark.parametrize("dialect", ["java", "librdkafka"])
def test_a_commit_sync_refused_for_good_fails_at_once(dialect):
    """Not retriable in either client (OFFSET_METADATA_TOO_LARGE: Java raises it as it is, librdkafka's action is
    PERMANENT): one OffsetCommit, the error raised with its answer.  (This one held before as well.)"""
    c = cluster()
    k = consumer(c, dialect)
    t0 = c.now
    with pytest.raises(KafkaException) as e:
        k.commit(offsets=[TopicPartition("t", 0, 7, metadata="x" * 5000)], asynchronous=False)
    assert e.value.args[0].code() == KafkaError.OFFSET_METADATA_TOO_LARGE
    assert c.now - t0 < 100
    assert sum(1 for m in c.network_messages() if m.api == "OffsetCommit" and not m.is_response
               and m.sent_at >= t0) == 1


def test_default_api_timeout_ms_is_a_java_consumer_key_checked_as_java_checks_it():
    c = Cluster(brokers=1, seed=1)
    base = {"bootstrap.servers": c.bootstrap, "group.id": "g"}
    assert Consumer({**base, "sim.client.dialect": "java"})._config["default.api.timeout.ms"] == 60_000
    assert Consumer({**base, "sim.client.dialect": "java", "default.api.timeout.ms": "0"}) \
        ._config["default.api.timeout.ms"] == 0
    with pytest.raises(ConfigException) as e:
        Consumer({**base, "sim.client.dialect": "java", "default.api.timeout.ms": -1})
    assert e.value.key == "default.api.timeout.ms"
    assert str(e.value) == ('KafkaError{code=_INVALID_ARG,val=-186,str="Invalid value -1 for configuration '
                            'default.api.timeout.ms: Value must be at least 0"}')
    with pytest.raises(ConfigException) as e:
        Consumer({**base, "sim.client.dialect": "java", "default.api.timeout.ms": "soon"})
    assert "Invalid value soon for configuration default.api.timeout.ms: Not a number of type INT" in str(e.value)
    with pytest.raises(ConfigException) as e:       # librdkafka has no such property
        Consumer({**base, "default.api.timeout.ms": 60_000})
    assert 'No such configuration property: "default.api.timeout.ms"' in str(e.value)
