"""What a client tells its application, outside the failed requests themselves, when it gives up on a request whose
request timeout passed and takes the connection down (client_events.ClientEvents.request_timed_out).

librdkafka (the lab follows 2.16) logs it and reports nothing to error_cb: rd_kafka_broker_bufq_timeout_scan logs each
timed-out request ("REQTMOUT", NOTICE) and rd_kafka_broker_timeout_scan the count (WARNING), then takes the connection
down with rd_kafka_broker_planned_fail(_TIMED_OUT, "... request(s) timed out: disconnect"), rd_kafka_broker_fail at
LOG_DEBUG: rd_kafka_broker_set_error neither logs it nor sends the ERR op (error_cb) above LOG_INFO / LOG_ERR, and
the broker going down is not counted towards _ALL_BROKERS_DOWN (src/rdkafka_broker.c, since 2.11.1, #5126; before
it was an error_cb event _TIMED_OUT).  Kafka's Java client logs "Disconnecting from node N due to request timeout."
at INFO (NetworkClient.handleTimedOutRequests), no callback."""
import logging

import pytest

from txnlab import Cluster, Consumer, KafkaError, Producer, TopicPartition
from helpers import captured_logger


def _listened(name):
    logger, cap = captured_logger(f"txnlab.test.timeout_events.{name}")
    return logger, cap


def _two_produces_time_out(dialect, name, **cfg):
    """A producer (retries=0) whose two Produce requests to t-0's leader are in flight together when a network
    partition cuts it off: (leader, delivery reports, error_cb's errors, logged lines, producer name)."""
    c = Cluster(brokers=3, seed=11)
    c.create_topic("t", partitions=1, replication_factor=3)
    logger, cap = _listened(name)
    errors, reports = [], []
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 0, "retries": 0, "enable.idempotence": False,
                  "batch.num.messages": 1, "sim.client.dialect": dialect, "socket.timeout.ms": 4_000,
                  "request.timeout.ms": 4_000, "message.timeout.ms": 60_000, "error_cb": errors.append,
                  "logger": logger, **cfg})
    p.produce("t", value=b"before", partition=0)
    assert p.flush(10) == 0
    leader = c.leader("t", 0)
    c.partition([p._node.name], [f"broker-{leader}"])
    for v in (b"v0", b"v1"):
        p.produce("t", value=v, partition=0, on_delivery=lambda err, msg: reports.append(err.code()))
    p.flush(30)
    return leader, reports, errors, cap.lines, p.name


def test_librdkafka_logs_the_timed_out_requests_and_tells_error_cb_nothing():
    """Both requests reach their 4 s together: two NOTICE lines (timeout #0, #1), one WARNING with the count; the
    records report _MSG_TIMED_OUT; error_cb hears nothing: neither _TIMED_OUT nor a transport failure nor
    _ALL_BROKERS_DOWN (the disconnect is a planned one)."""
    leader, reports, errors, lines, name = _two_produces_time_out("librdkafka", "rdk")
    assert reports == [KafkaError._MSG_TIMED_OUT] * 2
    assert errors == []
    b = f"broker-{leader}/{leader}"
    assert lines == [
        (logging.INFO, f"REQTMOUT [{name}] [thrd:{b}]: {b}: Timed out ProduceRequest in flight (after 4000ms, "
                       f"timeout #0)"),
        (logging.INFO, f"REQTMOUT [{name}] [thrd:{b}]: {b}: Timed out ProduceRequest in flight (after 4000ms, "
                       f"timeout #1)"),
        (logging.WARNING, f"REQTMOUT [{name}] [thrd:{b}]: {b}: Timed out 2 in-flight, 0 retry-queued, 0 out-queue, "
                          f"0 partially-sent requests")]


def test_librdkafka_log_level_and_log_thread_name_shape_those_lines():
    """log_level 4 (WARNING) keeps the count and drops the NOTICE lines (rd_kafka_log0: level > log_level is not
    logged); log.thread.name false drops the "[thrd:...]" prefix."""
    leader, _, errors, lines, name = _two_produces_time_out("librdkafka", "quiet",
                                                            **{"log_level": 4, "log.thread.name": False})
    assert errors == []
    assert lines == [(logging.WARNING, f"REQTMOUT [{name}] broker-{leader}/{leader}: Timed out 2 in-flight, "
                                       f"0 retry-queued, 0 out-queue, 0 partially-sent requests")]


def test_java_logs_the_disconnect_at_info_and_calls_no_callback():
    leader, reports, errors, lines, name = _two_produces_time_out("java", "java")
    assert reports == [7, 7]
    assert errors == []
    assert lines == [(logging.INFO, f"NetworkClient [{name}] Disconnecting from node {leader} due to request "
                                    f"timeout.")]


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_a_commit_timing_out_on_the_group_coordinators_connection(dialect):
    """librdkafka's OffsetCommit travels on the group coordinator's logical broker: its lines name
    "GroupCoordinator/<id>" from the "GroupCoordinator" thread; only the one request whose timeout passed is
    counted (the second commit, sent 1 s later, fails with the connection, uncounted)."""
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t", partitions=1)
    logger, cap = _listened(f"commit.{dialect}")
    errors = []
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect,
                  "enable.auto.commit": False, "socket.timeout.ms": 5_000, "request.timeout.ms": 5_000,
                  "error_cb": errors.append, "logger": logger})
    k.assign([TopicPartition("t", 0, 0)])
    k.commit(offsets=[TopicPartition("t", 0, 0)], asynchronous=False)      # the coordinator is known
    c.delay_next("OffsetCommit", 100_000, count=1)
    k.commit(offsets=[TopicPartition("t", 0, 1)])
    c.advance(1_000)
    k.commit(offsets=[TopicPartition("t", 0, 2)])
    c.advance(4_500)
    k.poll(0)
    assert errors == []
    if dialect == "java":
        assert cap.lines == [(logging.INFO, f"NetworkClient [{k.name}] Disconnecting from node 0 due to request "
                                            f"timeout.")]
        return
    pre = "[thrd:GroupCoordinator]: GroupCoordinator/0"
    assert cap.lines == [
        (logging.INFO, f"REQTMOUT [{k.name}] {pre}: Timed out OffsetCommitRequest in flight (after 5000ms, "
                       f"timeout #0)"),
        (logging.WARNING, f"REQTMOUT [{k.name}] {pre}: Timed out 1 in-flight, 0 retry-queued, 0 out-queue, "
                          f"0 partially-sent requests")]
