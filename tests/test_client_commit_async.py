"""What an asynchronous commit's on_commit is told when the commit fails, per client dialect (dialect.commit_error).

Kafka's Java client (ConsumerCoordinator.doCommitOffsetsAsync) sends one OffsetCommit, never retries it, and gives the
OffsetCommitCallback a RetriableCommitFailedException wrapping a retriable cause: the exception has no error code, so
the lab's error keeps the cause's code (a disconnect, ConsumerNetworkClient's DisconnectException, is
NETWORK_EXCEPTION) with the exception's message, retriable.  librdkafka retries the commit's coordinator errors and
reports the commit's own error (a local timeout as _TIMED_OUT)."""
import pytest

from txnlab import Cluster, Consumer, TopicPartition
from txnlab.cluster import OFFSETS_TOPIC, partition_for

RCFE = ("Offset commit failed with a retriable exception. You should retry committing the latest consumed "
        "offsets.")


def _consumer(c, dialect, reports):
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect,
                  "enable.auto.commit": False, "socket.timeout.ms": 5_000, "request.timeout.ms": 5_000,
                  "on_commit": lambda err, parts: reports.append(err)})
    k.assign([TopicPartition("t", 0, 0)])
    k.commit(offsets=[TopicPartition("t", 0, 0)], asynchronous=False)      # the coordinator is known
    return k


def _commit_async(c, k, reports):
    """commit(asynchronous=True) of offset 1, polled until on_commit ran: (its error, OffsetCommit requests sent)."""
    t0 = c.kernel.now
    k.commit(offsets=[TopicPartition("t", 0, 1)])
    for _ in range(20):
        if reports:
            break
        k.poll(5)
    [err] = reports
    sent = [m for m in c.network_messages() if m.api == "OffsetCommit" and not m.is_response and m.sent_at >= t0]
    return err, len(sent)


def _cluster(brokers=1):
    c = Cluster(brokers=brokers, seed=1)
    c.create_topic("t", partitions=1, replication_factor=brokers)
    return c


def test_java_commit_async_whose_offset_commit_timed_out_reports_retriable_commit_failed():
    """The OffsetCommit is delayed past its 5 s request timeout: Java sends it once, and the callback gets
    RetriableCommitFailedException caused by the disconnect (it used to be REQUEST_TIMED_OUT after five attempts)."""
    c, reports = _cluster(), []
    k = _consumer(c, "java", reports)
    c.delay_next("OffsetCommit", 100_000, count=100)
    err, sent = _commit_async(c, k, reports)
    assert sent == 1
    assert (err.code(), err.name(), err.str(), err.retriable()) == (13, "NETWORK_EXCEPTION", RCFE, True)
    assert k.committed([TopicPartition("t", 0)])[0].offset == 0


def test_librdkafka_commit_async_whose_offset_commits_timed_out_keeps_its_code():
    """Each OffsetCommit times out here (_TIMED_OUT): rd_kafka_err_action retries it (RETRY only, the coordinator
    kept), three sends of the request buffer (RD_KAFKA_REQUEST_DEFAULT_RETRIES = 2; it used to be five), and a
    timeout is not one of the errors rd_kafka_cgrp_op_handle_OffsetCommit defers: on_commit gets _TIMED_OUT."""
    c, reports = _cluster(), []
    k = _consumer(c, "librdkafka", reports)
    c.delay_next("OffsetCommit", 100_000, count=100)
    err, sent = _commit_async(c, k, reports)
    assert sent == 3
    assert (err.code(), err.name(), err.str()) == (-185, "_TIMED_OUT", "Commit failed: Local: Timed out")


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_commit_async_to_a_coordinator_that_moved(dialect):
    """The leadership of the group's __consumer_offsets partition moves: the old coordinator answers NOT_COORDINATOR.
    Java reports RetriableCommitFailedException caused by NOT_COORDINATOR and the offset stays 0; it has forgotten
    the coordinator (OffsetCommitResponseHandler: markCoordinatorUnknown), so the application's next commitAsync
    finds the new one and succeeds.  librdkafka finds the new coordinator, commits there and reports success."""
    c, reports = _cluster(brokers=3), []
    k = _consumer(c, dialect, reports)
    old = c.group_coordinator("g")
    tp = (OFFSETS_TOPIC, partition_for("g", c.broker_config["offsets.topic.num.partitions"]))
    c.move_leader(*tp, next(b for b in c.controller.states[tp].isr if b != old))
    c.advance(2_000)
    err, sent = _commit_async(c, k, reports)
    committed = k.committed([TopicPartition("t", 0)])[0].offset
    if dialect == "java":
        assert (sent, committed) == (1, 0)
        assert (err.code(), err.name(), err.str(), err.retriable()) == (16, "NOT_COORDINATOR", RCFE, True)
        reports.clear()
        k.commit(offsets=[TopicPartition("t", 0, 2)])
        for _ in range(20):
            if reports:
                break
            k.poll(1)
        assert reports == [None] and k.committed([TopicPartition("t", 0)])[0].offset == 2
    else:
        assert (sent, err, committed) == (2, None, 1)


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_commit_async_whose_connection_broke(dialect):
    """The OffsetCommit is lost and its connection breaks: Java's callback gets RetriableCommitFailedException
    caused by the disconnect; librdkafka sends it again and it succeeds."""
    c, reports = _cluster(), []
    k = _consumer(c, dialect, reports)
    c.drop_next("OffsetCommit")
    err, sent = _commit_async(c, k, reports)
    if dialect == "java":
        assert sent == 1 and (err.code(), err.str(), err.retriable()) == (13, RCFE, True)
    else:
        assert (sent, err) == (2, None)


def test_java_commit_sync_is_not_wrapped():
    """commitSync is not commitAsync: a commit(asynchronous=False) whose requests time out retries them until
    default.api.timeout.ms (60 s) and throws TimeoutException (REQUEST_TIMED_OUT, retriable), not
    RetriableCommitFailedException; on_commit is not called.  (It used to raise the request's REQUEST_TIMED_OUT
    after five attempts.)"""
    from txnlab import KafkaException
    c, reports = _cluster(), []
    k = _consumer(c, "java", reports)
    c.delay_next("OffsetCommit", 100_000, count=100)
    t0 = c.now
    with pytest.raises(KafkaException) as e:
        k.commit(offsets=[TopicPartition("t", 0, 1)], asynchronous=False)
    assert (e.value.args[0].code(), e.value.args[0].str(), e.value.args[0].retriable()) == (
        7, "Timeout of 60000ms expired before successfully committing offsets "
           "{t-0=OffsetAndMetadata{offset=1, leaderEpoch=null, metadata=''}}", True)
    assert c.now - t0 == 60_000
    assert reports == []
