"""Every configuration rule fails at construction with a message naming the key and the rule."""
import pytest

from txnlab import Cluster, ConfigException, Consumer, Producer


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(brokers=1, seed=0)
    c.create_topic("t")
    return c


@pytest.mark.parametrize("conf,key,words", [
    ({"enable.idempotence": True, "retries": 0}, "retries", "`retries` must be set >= 1"),
    ({"enable.idempotence": True, "acks": "1"}, "acks", "`acks` must be set to `all`"),
    ({"enable.idempotence": True, "max.in.flight.requests.per.connection": 6},
     "max.in.flight.requests.per.connection", "`max.in.flight` must be set <= 5"),
    ({"transactional.id": "x", "enable.idempotence": False}, "enable.idempotence",
     "`transactional.id` requires `enable.idempotence=true`"),
    ({"transactional.id": ""}, "transactional.id", "must not be empty"),
    ({"acks": "two"}, "acks", 'Invalid value for configuration property "request.required.acks"'),
    ({"linger.ms": -1}, "linger.ms", "outside allowed range 0..900000"),
    ({"retries": "many"}, "retries", "Invalid value"),
    ({"enable.idempotence": "perhaps"}, "enable.idempotence", "Expected bool value"),
    ({"lingr.ms": 5}, "lingr.ms", 'No such configuration property: "lingr.ms"'),
])
def test_producer_config_rules(cluster, conf, key, words):
    full = {"bootstrap.servers": cluster.bootstrap}
    full.update(conf)
    with pytest.raises(ConfigException) as e:
        Producer(full)
    assert e.value.key == key
    assert key in str(e.value) and words in str(e.value)


# the Java client's ProducerConfig rules, under sim.client.dialect=java
@pytest.mark.parametrize("conf,key,words", [
    ({"enable.idempotence": True, "retries": 0}, "retries", "Must set retries to non-zero"),
    ({"enable.idempotence": True, "acks": "1"}, "acks", "Must set acks to all"),
    ({"enable.idempotence": True, "max.in.flight.requests.per.connection": 6},
     "max.in.flight.requests.per.connection", "at most 5"),
    ({"transactional.id": "x", "enable.idempotence": False}, "transactional.id",
     "Cannot set a transactional.id without also enabling idempotence"),
    # Kafka 3.x: a defaulted idempotence is switched off by acks=0, and then transactions cannot be had
    ({"transactional.id": "x", "acks": "0"}, "transactional.id", "turned off by acks"),
])
def test_java_dialect_producer_config_rules(cluster, conf, key, words):
    full = {"bootstrap.servers": cluster.bootstrap, "sim.client.dialect": "java"}
    full.update(conf)
    with pytest.raises(ConfigException) as e:
        Producer(full)
    assert e.value.key == key and key in str(e.value) and words in str(e.value)


def test_defaulted_idempotence_is_silently_disabled_by_a_conflicting_setting_in_the_java_client(cluster):
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "1", "sim.client.dialect": "java"})
    assert p._idempotent is False
    p = Producer({"bootstrap.servers": cluster.bootstrap, "sim.client.dialect": "java"})
    assert p._idempotent is True
    p = Producer({"bootstrap.servers": cluster.bootstrap})          # librdkafka: off unless asked for
    assert p._idempotent is False


@pytest.mark.parametrize("conf,key,words", [
    ({"isolation.level": "serializable"}, "isolation.level", 'Invalid value "serializable"'),
    ({"auto.offset.reset": "middle"}, "auto.offset.reset", 'Invalid value "middle"'),
    ({"session.timeout.ms": 400_000}, "session.timeout.ms", "`max.poll.interval.ms`must be >= `session.timeout.ms`"),
    ({"group.idd": "g"}, "group.idd", 'No such configuration property: "group.idd"'),
])
def test_consumer_config_rules(cluster, conf, key, words):
    full = {"bootstrap.servers": cluster.bootstrap, "group.id": "g"}
    full.update(conf)
    with pytest.raises(ConfigException) as e:
        Consumer(full)
    assert e.value.key == key and words in str(e.value)


@pytest.mark.parametrize("conf,key,words", [
    ({"transaction.version": 3}, "transaction.version", "must be one of"),
    ({"min.insync.replicas": 0}, "min.insync.replicas", "at least 1"),
    ({"transaction.max.timeout.ms": "soon"}, "transaction.max.timeout.ms", "expected an integer"),
    ({"sim.network.latency.ms": -5}, "sim.network.latency.ms", "between 0 and 60000"),
    ({"log.retention.forever": True}, "log.retention.forever", "not a known broker configuration"),
])
def test_cluster_config_rules(conf, key, words):
    with pytest.raises(ConfigException) as e:
        Cluster(brokers=1, config=conf)
    assert e.value.key == key and words in str(e.value)


def test_topic_rules(cluster):
    with pytest.raises(ConfigException, match="replication_factor"):
        cluster.create_topic("x", replication_factor=2)
    with pytest.raises(ConfigException, match="min.insync.replicas"):
        cluster.create_topic("y", replication_factor=1, config={"min.insync.replicas": 2})
    with pytest.raises(ConfigException, match="is illegal, it contains a character"):
        cluster.create_topic("bad name!")
    with pytest.raises(ConfigException, match="mutation"):
        Cluster(brokers=1, mutations=("no-such-switch",))


def test_bootstrap_servers_must_name_a_cluster():
    with pytest.raises(ConfigException, match="bootstrap.servers"):
        Producer({"bootstrap.servers": "localhost:9092"})
    with pytest.raises(ConfigException, match="bootstrap.servers"):
        Producer({})
