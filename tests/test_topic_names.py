"""Illegal topic names are never created, on any path (Kafka's ``Topic.validate``, one rule in
``txnlab.protocol.names``); a consumer never auto-creates topics unless ``allow.auto.create.topics=true``."""
import pytest

from txnlab import Cluster, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from txnlab.protocol.names import topic_name_error

FAST = {"offsets.topic.num.partitions": 5, "group.initial.rebalance.delay.ms": 0}
ILLEGAL = ["bad name/../x", "a" * 300, "", ".", ".."]


def lab():
    c = Cluster(brokers=3, seed=3, config=FAST)
    c.create_topic("t", partitions=1, replication_factor=3)
    return c


def test_kafka_rule_and_messages():
    assert topic_name_error("orders-v1.2_x") is None
    assert topic_name_error("a" * 249) is None
    assert topic_name_error("") == "Topic name is illegal, it can't be empty"
    assert topic_name_error("..") == 'Topic name cannot be "." or ".."'
    assert topic_name_error("a" * 250).startswith("Topic name is illegal, it can't be longer than 249 characters")
    assert topic_name_error("bad name") == ('Topic name "bad name" is illegal, it contains a character other than '
                                            "ASCII alphanumerics, '.', '_' and '-'")


@pytest.mark.parametrize("name", ILLEGAL)
def test_producing_to_an_illegal_topic_fails_and_creates_nothing(name):
    c = lab()
    p = Producer({"bootstrap.servers": c.bootstrap})
    reports = []
    p.produce(name, b"x", on_delivery=lambda err, msg: reports.append(err))   # librdkafka queues it
    assert p.flush(10) == 0
    assert len(reports) == 1 and reports[0].code() == KafkaError.TOPIC_EXCEPTION == 17
    assert name not in c.topics()
    assert name not in p.list_topics().topics
    p.produce("t", b"fine")                 # the producer is not harmed
    assert p.flush(10) == 0


@pytest.mark.parametrize("name", ["bad name/../x", "a" * 300])
def test_subscribing_to_an_illegal_topic_creates_nothing(name):
    c = lab()
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "allow.auto.create.topics": True})
    cons.subscribe([name])
    cons.poll(1.0)
    assert name not in c.topics()


def test_subscribing_to_the_empty_name_is_refused_locally():
    c = lab()
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"})
    with pytest.raises(KafkaException) as e:
        cons.subscribe([""])
    assert e.value.args[0].code() == KafkaError._INVALID_ARG


@pytest.mark.parametrize("name", ILLEGAL)
def test_create_topic_refuses_illegal_names(name):
    c = lab()
    with pytest.raises(Exception):
        c.create_topic(name)
    assert name not in c.topics()


def test_consumer_assign_or_subscribe_does_not_auto_create():
    c = lab()
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"})
    cons.assign([TopicPartition("missing", 0)])
    cons.poll(1.0)
    cons.subscribe(["missing-too"])
    cons.poll(1.0)
    assert "missing" not in c.topics() and "missing-too" not in c.topics()


def test_consumer_auto_creates_when_allowed_and_producer_by_default():
    c = lab()
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "allow.auto.create.topics": True})
    cons.subscribe(["wanted"])
    cons.poll(1.0)
    assert "wanted" in c.topics()
    p = Producer({"bootstrap.servers": c.bootstrap})
    p.produce("made-by-producer", b"x")
    assert p.flush(10) == 0
    assert "made-by-producer" in c.topics()
