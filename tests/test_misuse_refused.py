"""Config contradictions and API misuse: a clear error naming the key and the rule, never an error from
inside the library; blocking calls with no timeout say so when nothing can ever arrive (issue 18)."""
from __future__ import annotations

import pytest

from txnlab import Cluster, ConfigException, Consumer, KafkaException, Producer


@pytest.mark.parametrize("config, key, words", [
    ({"broker.heartbeat.interval.ms": 9_000, "broker.session.timeout.ms": 9_000}, "broker.heartbeat.interval.ms",
     "half of broker.session.timeout.ms"),
    ({"broker.heartbeat.interval.ms": 5_000}, "broker.heartbeat.interval.ms", "half"),
    ({"min.insync.replicas": 4}, "min.insync.replicas", "number of brokers (3)"),
    ({"replica.fetch.wait.max.ms": 40_000}, "replica.fetch.wait.max.ms", "replica.lag.time.max.ms"),
])
def test_contradicting_broker_settings_are_refused_by_name(config, key, words):
    with pytest.raises(ConfigException) as e:
        Cluster(brokers=3, config=config)
    assert e.value.key == key if hasattr(e.value, "key") else key in str(e.value)
    assert words in str(e.value)
    Cluster(brokers=3, config={"broker.heartbeat.interval.ms": 1_000, "broker.session.timeout.ms": 2_000})


def test_min_insync_above_the_replication_factor_follows_kafka():
    """Kafka's CreateTopics accepts min.insync.replicas > RF (LogConfig checks only the compaction lags), and its
    partitions then ask for min(min.insync.replicas, RF) in-sync replicas (Partition.effectiveMinIsr), so an
    acks=all write to an RF 1 topic with min.insync.replicas 2 succeeds (seen on Kafka 4.1.1 by the differential
    scenario txn_not_enough_replicas; it failed NOT_ENOUGH_REPLICAS here before).  The lab's own create_topic
    refuses the setting by name."""
    from txnlab.admin import AdminClient, NewTopic
    c = Cluster(brokers=3, seed=1)
    with pytest.raises(ConfigException, match="min.insync.replicas"):
        c.create_topic("x", replication_factor=1, config={"min.insync.replicas": 2})
    AdminClient({"bootstrap.servers": c.bootstrap}).create_topics(
        [NewTopic("strict", 1, 1, config={"min.insync.replicas": 2}),
         NewTopic("two", 1, 2, config={"min.insync.replicas": 3})])["strict"].result()
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "message.send.max.retries": 0})
    reports = []
    for topic in ("strict", "two"):
        p.produce(topic, b"v", on_delivery=lambda err, msg: reports.append((msg.topic(), err, msg.offset())))
    p.flush(30)
    assert sorted(reports) == [("strict", None, 0), ("two", None, 0)]
    assert c.partition_state("strict")["hw"] == 1 and c.partition_state("two")["hw"] == 1


def test_retry_backoff_max_below_retry_backoff_is_librdkafkas_confwarn():
    """librdkafka accepts it and warns (rd_kafka_new's CONFWARN); the backoff is then static at the max."""
    c = Cluster(brokers=1, seed=1)
    Producer({"bootstrap.servers": c.bootstrap, "retry.backoff.ms": 500, "retry.backoff.max.ms": 100})
    assert any("`retry.backoff.ms` with value 500 is greater than configuration `retry.backoff.max.ms`" in e.text
               for e in c.trace)


def test_produce_misuse_names_the_rule():
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t")
    p = Producer({"bootstrap.servers": c.bootstrap})
    with pytest.raises(TypeError, match="on_delivery expects a callable"):
        p.produce("t", b"v", on_delivery=5)
    with pytest.raises(TypeError, match="callback expects a callable"):
        p.produce("t", b"v", callback="nope")
    with pytest.raises(KafkaException, match="must not be negative"):
        p.produce("t", b"v", timestamp=-5)
    with pytest.raises(TypeError, match="timestamp expects an int"):
        p.produce("t", b"v", timestamp="now")
    with pytest.raises(ConfigException, match="on_delivery"):
        Producer({"bootstrap.servers": c.bootstrap, "on_delivery": 5})
    p.produce("t", b"fine")
    assert p.flush(30) == 0
    assert len(p) == 0



def test_produce_misuse_refused_while_a_batch_is_open():
    """The same rules once a batch is open for the topic (produce()'s short path joins it): a timestamp or a
    partition that only looks like the default (0.0, False, -1.0, True) and a non-callable callback are refused,
    and nothing of the refused calls reaches the log."""
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t")
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 1000})
    p.produce("t", b"first")
    for bad in (0.0, False):
        with pytest.raises(TypeError, match="timestamp expects an int"):
            p.produce("t", b"bad", timestamp=bad)
    for bad in (-1.0, True):
        with pytest.raises(TypeError, match="partition expects an int"):
            p.produce("t", b"bad", partition=bad)
    with pytest.raises(TypeError, match="on_delivery expects a callable"):
        p.produce("t", b"bad", on_delivery=5)
    with pytest.raises(TypeError, match="callback expects a callable"):
        p.produce("t", b"bad", callback="nope")
    p.produce("t", b"second")
    assert p.flush(30) == 0
    assert [r.value for b in c.log("t", 0).batches for r in b.records] == [b"first", b"second"]


def test_advance_refuses_negative_time():
    c = Cluster(brokers=1, seed=1)
    clock = c.clock
    for bad in (-5, float("nan"), "10", True):
        with pytest.raises(ValueError, match="time never runs backwards"):
            c.advance(bad)
    assert c.clock == clock


def test_a_long_advance_just_works():
    c = Cluster(brokers=1, seed=1)
    c.advance(4 * 3600 * 1000)            # past the old 500000-step limit (~3.3 simulated hours)
    assert c.clock >= 4 * 3600 * 1000


def test_poll_forever_with_nothing_to_read_says_nothing_can_arrive():
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t")
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
    cons.subscribe(["t"])
    with pytest.raises(KafkaException) as e:
        cons.poll(-1)
    assert e.value.args[0].name() == "_TIMED_OUT"
    assert "nothing can arrive" in str(e.value)
    # a record written later is still read
    p = Producer({"bootstrap.servers": c.bootstrap})
    p.produce("t", b"late")
    p.flush(30)
    m = cons.poll(30)
    assert m is not None and m.value() == b"late"
    with pytest.raises(KafkaException) as e:
        cons.consume(5, -1)                 # the error names the call that waited
    assert e.value.args[0].name() == "_TIMED_OUT" and "consume()" in str(e.value)


def test_wrong_argument_types_are_refused_at_the_call_with_the_rule():
    """What used to surface as AttributeError/TypeError from inside the library."""
    from txnlab import TopicPartition
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t")
    p = Producer({"bootstrap.servers": c.bootstrap})
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"})
    for call, words in ((lambda: cons.assign("t"), "expected a list of TopicPartition"),
                        (lambda: cons.assign(["t"]), "expected TopicPartition"),
                        (lambda: cons.commit(offsets="t"), r"commit\(\): expected a list"),
                        (lambda: cons.seek("t"), r"seek\(\): expected TopicPartition"),
                        (lambda: cons.committed("t"), r"committed\(\): expected a list"),
                        (lambda: cons.poll("1"), "number of seconds"),
                        (lambda: p.flush("1"), "number of seconds"),
                        (lambda: p.produce("t", b"v", partition="0"), "partition expects an int"),
                        (lambda: p.produce("t", b"v", headers=5), "headers expects a dict")):
        with pytest.raises(TypeError, match=words):
            call()
    tx = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "x"})
    tx.init_transactions()
    tx.begin_transaction()
    with pytest.raises(KafkaException, match="offsets must be a list of TopicPartition"):
        tx.send_offsets_to_transaction(None, cons.consumer_group_metadata())
    cons.assign([TopicPartition("t", 0, 0)])          # the right calls still work
    p.produce("t", b"v", partition=0, headers={"h": b"1"})
    assert p.flush(30) == 0
