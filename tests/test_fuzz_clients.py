"""Fuzzing the public face: random configurations and random orders of API calls.

Every invalid configuration fails at construction with a ConfigException that names the key.  Any order of
Producer / Consumer calls either works or raises Kafka's exceptions (KafkaException, KafkaStateError) --
never an AttributeError or TypeError from inside the client.
"""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from txnlab import Cluster, ConfigException, Consumer, KafkaException, Producer, TopicPartition
from txnlab.client.config import CONSUMER, PRODUCER
from txnlab.config import BROKER, CLUSTER, TOPIC

FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])

_CLUSTER = {}


def cluster() -> Cluster:
    if "c" not in _CLUSTER:
        c = Cluster(brokers=1, seed=3, config={"transaction.state.log.num.partitions": 1,
                                               "offsets.topic.num.partitions": 1, "sim.trace": False})
        c.create_topic("t", partitions=2)
        _CLUSTER["c"] = c
    return _CLUSTER["c"]


values = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 12, 10 ** 12), st.sampled_from([0, -1, 1, 5, 6]),
                   st.text(max_size=6), st.sampled_from(["all", "true", "false", "read_committed", "earliest",
                                                         "range", "-1", "1e3", "compact"]),
                   st.floats(allow_nan=True), st.lists(st.integers(), max_size=2))


def config_of(defs, extra_keys=()):
    keys = st.sampled_from(sorted(k for k in defs if not k.endswith("_cb") and k not in ("on_delivery", "on_commit",
                                                                                         "bootstrap.servers"))
                           + list(extra_keys))
    return st.dictionaries(keys, values, max_size=4)


def assert_clear(e: ConfigException, given: dict) -> None:
    assert e.key in given or e.key in ("bootstrap.servers", "mutations"), (e.key, given)
    assert e.key in str(e) and len(e.message) > 5


@FUZZ
@given(config_of(PRODUCER, ["no.such.key", "transactional.idd"]))
def test_every_invalid_producer_config_names_its_key(conf):
    try:
        Producer({"bootstrap.servers": cluster().bootstrap, **conf})
    except ConfigException as e:
        assert_clear(e, conf)


@FUZZ
@given(config_of(CONSUMER, ["group.idd", "isolation"]))
def test_every_invalid_consumer_config_names_its_key(conf):
    try:
        Consumer({"group.id": "lab-reader", "enable.auto.commit": False, "bootstrap.servers": cluster().bootstrap, **conf})
    except ConfigException as e:
        assert_clear(e, conf)
    except ValueError as e:                 # confluent-kafka's own refusal of a consumer without group.id
        assert str(e) == "Failed to create consumer: group.id must be set" and not conf.get("group.id")


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(config_of(BROKER, ["log.retention.hourz"]), config_of(CLUSTER), config_of(TOPIC, ["retention.byte"]))
def test_every_invalid_cluster_or_topic_config_names_its_key(broker, sim, topic):
    try:
        c = Cluster(brokers=1, seed=1, config={**broker, **sim})
    except ConfigException as e:
        assert_clear(e, {**broker, **sim})
        return
    try:
        c.create_topic("fz", partitions=1, config=topic)
    except ConfigException as e:
        assert_clear(e, {**topic, "topic": 1, "partitions": 1, "replication_factor": 1})
    except KafkaException:
        pass                       # a config the controller rejects (e.g. INVALID_CONFIG) is an answer too


PRODUCER_CALLS = ["init", "begin", "produce", "produce_other", "send_offsets", "commit", "abort", "flush", "poll",
                  "len", "purge"]
CONSUMER_CALLS = ["subscribe", "assign", "unassign", "poll", "consume", "commit", "commit_msg", "seek", "position",
                  "committed", "pause", "resume", "assignment", "watermarks", "group_metadata", "close"]


def run_producer_call(p, consumer, name):
    if name == "init":
        p.init_transactions(2.0)
    elif name == "begin":
        p.begin_transaction()
    elif name == "produce":
        p.produce("t", value=b"v", partition=0)
    elif name == "produce_other":
        p.produce("t", key=b"k", value=None)
    elif name == "send_offsets":
        p.send_offsets_to_transaction([TopicPartition("t", 0, 1)], consumer.consumer_group_metadata(), 2.0)
    elif name == "commit":
        p.commit_transaction(2.0)
    elif name == "abort":
        p.abort_transaction(2.0)
    elif name == "flush":
        p.flush(1.0)
    elif name == "poll":
        p.poll(0.1)
    elif name == "len":
        len(p)
    elif name == "purge":
        p.purge()


def run_consumer_call(c, name):
    tp = TopicPartition("t", 0, 0)
    if name == "subscribe":
        c.subscribe(["t"])
    elif name == "assign":
        c.assign([tp])
    elif name == "unassign":
        c.unassign()
    elif name == "poll":
        c.poll(0.1)
    elif name == "consume":
        c.consume(3, 0.1)
    elif name == "commit":
        c.commit(offsets=[TopicPartition("t", 0, 1)], asynchronous=False)
    elif name == "commit_msg":
        c.commit(asynchronous=False)
    elif name == "seek":
        c.seek(TopicPartition("t", 0, 0))
    elif name == "position":
        c.position([tp])
    elif name == "committed":
        c.committed([tp], timeout=1.0)
    elif name == "pause":
        c.pause([tp])
    elif name == "resume":
        c.resume([tp])
    elif name == "assignment":
        c.assignment()
    elif name == "watermarks":
        c.get_watermark_offsets(tp, timeout=1.0)
    elif name == "group_metadata":
        c.consumer_group_metadata()
    elif name == "close":
        c.close()


def allowed(e: Exception) -> bool:
    """Kafka's exceptions, or confluent-kafka's RuntimeError for a closed consumer."""
    return isinstance(e, KafkaException) or (isinstance(e, RuntimeError) and "closed" in str(e))


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PRODUCER_CALLS), max_size=12), st.booleans())
def test_any_order_of_producer_calls_raises_only_kafka_errors(calls, transactional):
    c = cluster()
    conf = {"bootstrap.servers": c.bootstrap, "transaction.timeout.ms": 5_000}
    if transactional:
        conf["transactional.id"] = f"fz-{len(calls)}-{'-'.join(x[:2] for x in calls)}"
    p = Producer(conf)
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "fz-group"})
    for name in calls:
        try:
            run_producer_call(p, consumer, name)
        except Exception as e:  # noqa: BLE001
            assert allowed(e), f"{name} after {calls}: {type(e).__name__}: {e}"
    consumer.close()


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(CONSUMER_CALLS), max_size=12), st.booleans())
def test_any_order_of_consumer_calls_raises_only_kafka_errors(calls, with_group):
    c = cluster()
    conf = {"bootstrap.servers": c.bootstrap, "auto.offset.reset": "earliest", "session.timeout.ms": 6_000,
            "heartbeat.interval.ms": 1_000}
    if with_group:
        conf["group.id"] = f"fz-{len(calls)}"
    else:
        conf["sim.client.dialect"] = "java"   # only the Java client has a consumer without a group
    consumer = Consumer(conf)
    for name in calls:
        try:
            run_consumer_call(consumer, name)
        except Exception as e:  # noqa: BLE001
            assert allowed(e), f"{name} after {calls}: {type(e).__name__}: {e}"
