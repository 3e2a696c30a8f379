"""error_cb, stats_cb and logger: served from poll() as confluent-kafka serves them, with librdkafka's codes."""
import json
import logging

import pytest

from txnlab import Cluster, Consumer, KafkaError, KafkaException, Producer
from helpers import captured_logger


def test_a_down_broker_reaches_error_cb_as_transport_then_all_brokers_down():
    cluster = Cluster(brokers=1, seed=3)
    cluster.create_topic("t", partitions=1, replication_factor=1)
    seen = []
    p = Producer({"bootstrap.servers": cluster.bootstrap, "error_cb": seen.append, "message.timeout.ms": 2_000})
    p.produce("t", b"a")
    p.flush(5)
    assert seen == []                                 # nothing went wrong: error_cb is never called
    cluster.crash("broker-0")
    p.produce("t", b"b")
    p.flush(3)                                        # the record times out; flush serves the queued events
    codes = [e.code() for e in seen]
    assert KafkaError._TRANSPORT in codes and KafkaError._ALL_BROKERS_DOWN in codes
    assert codes.count(KafkaError._ALL_BROKERS_DOWN) == 1     # once, until a broker answers again
    down = next(e for e in seen if e.code() == KafkaError._ALL_BROKERS_DOWN)
    assert down.str() == "1/1 brokers are down" and down.name() == "_ALL_BROKERS_DOWN"
    assert all(not e.fatal() for e in seen)


def test_error_cb_runs_in_poll_not_inside_the_library():
    cluster = Cluster(brokers=1, seed=4)
    cluster.create_topic("t", partitions=1, replication_factor=1)
    seen = []
    p = Producer({"bootstrap.servers": cluster.bootstrap, "error_cb": seen.append})
    p.produce("t", b"a")
    p.flush(5)
    cluster.crash("broker-0")
    cluster.advance(2_000)                            # the producer's node learns of it; nobody polled yet
    assert seen == []
    p.poll(0)
    assert seen and seen[0].code() == KafkaError._TRANSPORT


def _fenced_with_a_late_record(**extra):
    """A transactional producer whose successor fenced it, with one record produced after the fence."""
    cluster = Cluster(brokers=1, seed=5)
    cluster.create_topic("t", partitions=1, replication_factor=1)
    seen, reports = [], []
    old = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "tx", "error_cb": seen.append,
                    **extra})
    old.init_transactions()
    old.begin_transaction()
    old.produce("t", b"zombie")
    old.flush(5)
    new = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "tx"})
    new.init_transactions()
    old.produce("t", b"late", on_delivery=lambda err, msg: reports.append(err))
    cluster.run_until(lambda: old.transaction_manager.state.name == "FATAL_ERROR", 10_000)
    return old, seen, reports


def test_a_fenced_producer_s_fatal_error_is_raised_by_poll_once_not_given_to_error_cb():
    """confluent-kafka's error_cb trampoline raises a fatal error instead of calling error_cb
    (src/confluent_kafka/src/confluent_kafka.c), from the poll() that serves it, once; the delivery report waits for
    the next poll() and carries the broker's own error, not fatal (seen with confluent-kafka 2.16 through the lab's
    listener: INVALID_PRODUCER_EPOCH, 47)."""
    old, seen, reports = _fenced_with_a_late_record()
    with pytest.raises(KafkaException) as e:
        old.poll(0)
    assert e.value.args[0].code() == KafkaError._FENCED and e.value.args[0].fatal()
    assert not reports
    assert old.poll(0) == 1                       # the delivery report, served by the next call
    assert [(r.code(), r.fatal()) for r in reports] == [(47, False)]
    assert old.poll(0) == 0                       # raised once
    assert seen == []                             # error_cb never hears of it


def test_flush_raises_the_fatal_error_after_serving_the_delivery_reports():
    old, seen, reports = _fenced_with_a_late_record()
    with pytest.raises(KafkaException) as e:
        old.flush(5)
    assert e.value.args[0].code() == KafkaError._FENCED
    assert [r.code() for r in reports] == [47]
    assert old.flush(5) == 0 and seen == []


def test_the_java_dialect_keeps_error_cb_for_a_fatal_error():
    """(The Java client has no error_cb: the lab's Java dialect tells a fatal error to it as _FATAL.)"""
    cluster = Cluster(brokers=1, seed=5)
    cluster.create_topic("t", partitions=1, replication_factor=1)
    seen = []
    java = {"transactional.id": "tx", "sim.client.dialect": "java"}
    old = Producer({"bootstrap.servers": cluster.bootstrap, "error_cb": seen.append, **java})
    old.init_transactions()
    old.begin_transaction()
    old.produce("t", b"zombie")
    old.flush(5)
    Producer({"bootstrap.servers": cluster.bootstrap, **java}).init_transactions()
    with pytest.raises(KafkaException):
        old.commit_transaction(10)       # EndTxn: PRODUCER_FENCED, fatal in the Java client
    old.poll(0)
    assert [e.code() for e in seen if e.fatal()] == [KafkaError._FATAL]


def test_stats_cb_gets_librdkafka_statistics_every_interval_of_simulated_time():
    cluster = Cluster(brokers=1, seed=6)
    cluster.create_topic("t", partitions=1, replication_factor=1)
    stats = []
    p = Producer({"bootstrap.servers": cluster.bootstrap, "stats_cb": stats.append, "statistics.interval.ms": 1_000})
    for i in range(5):
        p.produce("t", str(i).encode())
    p.flush(5)
    cluster.advance(3_500)
    p.poll(0)
    objs = [json.loads(s) for s in stats]
    assert len(objs) == cluster.clock // 1_000        # one report per interval that passed
    last = objs[-1]
    assert last["type"] == "producer" and last["name"] == p.name and last["txmsgs"] == 5 and last["msg_cnt"] == 0
    assert last["brokers"]["broker-0"]["tx"] >= 1 and last["brokers"]["broker-0"]["rx"] >= 1
    assert [o["ts"] for o in objs] == sorted(o["ts"] for o in objs)
    assert last["time"] * 1000 >= 1_767_225_600_000


def test_consumer_statistics_and_no_stats_without_an_interval():
    cluster = Cluster(brokers=1, seed=7)
    cluster.create_topic("t", partitions=1, replication_factor=1)
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    p.produce("t", b"x")
    p.flush(5)
    quiet, stats = [], []
    c0 = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g0", "stats_cb": quiet.append})
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g", "stats_cb": stats.append,
                  "statistics.interval.ms": 500, "auto.offset.reset": "earliest"})
    c.subscribe(["t"])
    c0.subscribe(["t"])
    got = None
    while got is None:
        got = c.poll(1)
    c0.poll(2)
    c.poll(1)
    assert quiet == []                                  # statistics.interval.ms defaults to 0: never
    last = json.loads(stats[-1])
    assert last["type"] == "consumer" and last["rxmsgs"] == 1 and last["cgrp"]["assignment_size"] == 1


def test_logger_gets_what_librdkafka_would_log_when_no_error_cb_is_set():
    cluster = Cluster(brokers=1, seed=8)
    cluster.create_topic("t", partitions=1, replication_factor=1)
    logger, cap = captured_logger("txnlab.test.client_events")
    p = Producer({"bootstrap.servers": cluster.bootstrap, "logger": logger})
    p.produce("t", b"a")
    p.flush(5)
    cluster.crash("broker-0")
    cluster.advance(2_000)
    p.poll(0)
    assert cap.lines and cap.lines[0][0] == logging.ERROR
    assert cap.lines[0][1].startswith(f"ERROR [{p.name}] broker-0/0: ")
