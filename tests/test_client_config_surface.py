"""Producer and Consumer take their configuration as librdkafka (confluent-kafka) does: every property,
its aliases, ranges and defaults; unknown keys and bad values fail with librdkafka's words; what the lab
cannot honour is accepted and said; sim.client.dialect=java gives the Java client's defaults."""
import pytest

from txnlab import Cluster, ConfigException, Consumer, KafkaError, Producer
from txnlab.client import librdkafka_config as L
from txnlab.client.config import HONOURED, consumer_config, notices, producer_config

ck = pytest.importorskip("confluent_kafka")


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(brokers=1, seed=0, config={"sim.trace": True})
    c.create_topic("t")
    return c


def oracle(cls, conf):
    """What the installed confluent-kafka says about a configuration: None (accepted) or the error text."""
    try:
        cls({"bootstrap.servers": "", "log_level": 0, **conf})
        return None
    except Exception as e:                                      # noqa: BLE001 - the oracle's own exception
        err = e.args[0]
        return (err.str() if isinstance(err, ck.KafkaError) else str(err)).strip()


def ours(fn, conf):
    try:
        fn({"bootstrap.servers": "x", **conf})
        return None
    except ConfigException as e:
        return str(e.args[0].str())
    except ValueError as e:
        return str(e)


def test_every_property_name_in_the_table_is_one_librdkafka_accepts():
    for name in L.names():
        said = oracle(ck.Producer, {name: "\x01zz"}) or ""
        assert "No such configuration property" not in said, name


@pytest.mark.parametrize("conf", [
    {"foo": 1}, {"sim.x": 1}, {"Linger.ms": 1}, {"linger.ms": -5}, {"linger.ms": "abc"}, {"linger.ms": None},
    {"acks": "one"}, {"acks": 1001}, {"acks": True}, {"enable.idempotence": "yes"}, {"enable.idempotence": 0.0},
    {"compression.type": "brotli"}, {"partitioner": "bogus"}, {"debug": "bogus"}, {"security.protocol": "bogus"},
    {"enable.idempotence": True, "acks": 1}, {"enable.idempotence": True, "max.in.flight": 6},
    {"enable.idempotence": True, "retries": 0}, {"transactional.id": "t", "enable.idempotence": False},
    {"transactional.id": "t", "message.timeout.ms": 70000}, {"transaction.timeout.ms": 999},
    {"batch.size": 0}, {"message.max.bytes": 999}, {"max.in.flight": 0}, {"dr_msg_cb": 1}, {"log_cb": 1},
    {"on_delivery": 5}, {"enable.gapless.guarantee": True}, {"on_commit": print},
])
def test_producer_refusals_read_as_librdkafkas(conf):
    theirs = oracle(ck.Producer, conf)
    mine = ours(producer_config, conf)
    if theirs is None:
        assert mine is None, mine
    else:
        assert mine is not None and mine.split(" (set as")[0] == theirs.strip(), (mine, theirs)


@pytest.mark.parametrize("conf", [
    {"partition.assignment.strategy": "bogus"}, {"partition.assignment.strategy": "range,cooperative-sticky"},
    {"partition.assignment.strategy": "cooperative-sticky"}, {"session.timeout.ms": 400000},
    {"max.poll.interval.ms": 1000}, {"auto.offset.reset": "bogus"}, {"fetch.min.bytes": 0},
    {"isolation.level": "READ_COMMITTED"}, {"auto.offset.reset": "EARLIEST"}, {"on_delivery": print},
    {"linger.ms": 5}, {"enable.idempotence": True},
])
def test_consumer_refusals_read_as_librdkafkas(conf):
    theirs = oracle(ck.Consumer, {"group.id": "g", **conf})
    mine = ours(consumer_config, {"group.id": "g", **conf})
    assert (mine is None) == (theirs is None), (mine, theirs)
    if theirs is not None:
        assert mine.split(" (set as")[0] == theirs.strip()


def test_a_consumer_without_group_id_is_refused_as_confluent_kafka_refuses_it(cluster):
    with pytest.raises(ValueError) as theirs:
        ck.Consumer({"bootstrap.servers": ""})
    with pytest.raises(ValueError) as mine:
        Consumer({"bootstrap.servers": cluster.bootstrap})
    assert str(mine.value) == str(theirs.value) == "Failed to create consumer: group.id must be set"
    assert not isinstance(mine.value, ConfigException)


def test_an_unknown_key_fails_with_invalid_arg(cluster):
    with pytest.raises(ConfigException) as e:
        Producer({"bootstrap.servers": cluster.bootstrap, "no.such": 1})
    assert e.value.args[0].code() == KafkaError._INVALID_ARG
    assert e.value.args[0].str() == 'No such configuration property: "no.such"'


def test_librdkafka_defaults_differ_from_the_java_clients():
    cfg = producer_config({"bootstrap.servers": "x"})
    assert cfg["enable.idempotence"] is False and cfg["acks"] == -1 and cfg["linger.ms"] == 5
    assert cfg["batch.num.messages"] == 10_000 and cfg["batch.size"] == 1_000_000
    assert cfg["max.in.flight.requests.per.connection"] == 1_000_000 and cfg["delivery.timeout.ms"] == 300_000
    idem = producer_config({"bootstrap.servers": "x", "enable.idempotence": True})
    assert idem["max.in.flight.requests.per.connection"] == 5 and idem["retries"] == 2_147_483_647
    txn = producer_config({"bootstrap.servers": "x", "transactional.id": "t"})
    assert txn["enable.idempotence"] is True and txn["delivery.timeout.ms"] == txn["transaction.timeout.ms"]
    cons = consumer_config({"bootstrap.servers": "x", "group.id": "g"})
    assert cons["isolation.level"] == "read_committed" and cons["enable.auto.commit"] is True
    assert cons["auto.offset.reset"] == "latest" and cons["session.timeout.ms"] == 45_000
    assert cons["partition.assignment.strategies"] == ("range", "roundrobin")
    java = producer_config({"bootstrap.servers": "x", "sim.client.dialect": "java"})
    assert java["enable.idempotence"] is True and java["max.in.flight.requests.per.connection"] == 5
    jc = consumer_config({"bootstrap.servers": "x", "sim.client.dialect": "java"})
    assert jc["isolation.level"] == "read_uncommitted"


def test_aliases_read_as_their_property():
    cfg = producer_config({"bootstrap.servers": "x", "linger.ms": 7, "compression.type": "gzip", "acks": "all",
                           "delivery.timeout.ms": 9_000})
    assert cfg["queue.buffering.max.ms"] == cfg["linger.ms"] == 7
    assert cfg["compression.codec"] == "gzip" and cfg["request.required.acks"] == -1
    assert cfg["message.timeout.ms"] == 9_000


def test_what_the_lab_cannot_honour_is_accepted_and_narrated(cluster):
    p = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": "tls-producer",
                  "security.protocol": "ssl", "compression.type": "zstd", "throttle_cb": print,
                  "enable.auto.commit": False})
    said = notices(p._config)
    assert "security.protocol has no effect in the lab" in said
    assert "compression.type has no effect in the lab" in said
    assert any(s.startswith("throttle_cb has no effect in the lab") for s in said)
    assert ("Configuration property enable.auto.commit is a consumer property and will be ignored by this "
            "producer instance") in said
    narrated = [e for e in cluster.trace if "has no effect in the lab" in str(e)]
    assert narrated
    for name in HONOURED:
        assert L.lookup(name) is not None and L.lookup(name).name == name


def test_a_consumer_offers_the_first_assignor_it_is_given_and_says_so(cluster):
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "coop",
                  "partition.assignment.strategy": "cooperative-sticky"})
    assert c._config["partition.assignment.strategy"] == "cooperative-sticky" and not notices(c._config)
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "eager",
                  "partition.assignment.strategy": "roundrobin,range"})
    assert c._config["partition.assignment.strategy"] == "roundrobin"
    assert any("offers only the first, roundrobin" in s for s in notices(c._config))
