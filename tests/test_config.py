"""Every configuration rule fails at construction with a message naming the key and the rule."""
import pytest

from txnlab import Cluster, ConfigException, Consumer, Producer


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(brokers=1, seed=0)
    c.create_topic("t")
    return c


@pytest.mark.parametrize("conf,key,words", [
    ({"enable.idempotence": True, "retries": 0}, "retries", "Must set retries to non-zero"),
    ({"enable.idempotence": True, "acks": "1"}, "acks", "Must set acks to all"),
    ({"enable.idempotence": True, "max.in.flight.requests.per.connection": 6},
     "max.in.flight.requests.per.connection", "at most 5"),
    ({"transactional.id": "x", "enable.idempotence": False}, "transactional.id",
     "Cannot set a transactional.id without also enabling idempotence"),
    # Kafka 3.x: a defaulted idempotence is switched off by acks=0, and then transactions cannot be had
    ({"transactional.id": "x", "acks": "0"}, "transactional.id", "turned off by acks"),
    ({"transactional.id": ""}, "transactional.id", "must not be empty"),
    ({"acks": "2"}, "acks", "must be one of"),
    ({"linger.ms": -1}, "linger.ms", "at least 0"),
    ({"retries": "many"}, "retries", "expected an integer"),
    ({"enable.idempotence": "perhaps"}, "enable.idempotence", "boolean"),
    ({"lingr.ms": 5}, "lingr.ms", "did you mean 'linger.ms'"),
])
def test_producer_config_rules(cluster, conf, key, words):
    full = {"bootstrap.servers": cluster.bootstrap}
    full.update(conf)
    with pytest.raises(ConfigException) as e:
        Producer(full)
    assert e.value.key == key
    assert key in str(e.value) and words in str(e.value)


def test_defaulted_idempotence_is_silently_disabled_by_a_conflicting_setting(cluster):
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "1"})
    assert p._idempotent is False
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    assert p._idempotent is True


@pytest.mark.parametrize("conf,key,words", [
    ({"isolation.level": "serializable"}, "isolation.level", "must be one of"),
    ({"auto.offset.reset": "middle"}, "auto.offset.reset", "must be one of"),
    ({"session.timeout.ms": 3000, "heartbeat.interval.ms": 3000}, "heartbeat.interval.ms",
     "lower than session.timeout.ms"),
    ({"group.idd": "g"}, "group.idd", "did you mean 'group.id'"),
])
def test_consumer_config_rules(cluster, conf, key, words):
    full = {"bootstrap.servers": cluster.bootstrap}
    full.update(conf)
    with pytest.raises(ConfigException) as e:
        Consumer(full)
    assert e.value.key == key and words in str(e.value)


@pytest.mark.parametrize("conf,key,words", [
    ({"transaction.version": 3}, "transaction.version", "must be one of"),
    ({"min.insync.replicas": 0}, "min.insync.replicas", "at least 1"),
    ({"transaction.max.timeout.ms": "soon"}, "transaction.max.timeout.ms", "expected an integer"),
    ({"sim.network.latency.ms": -5}, "sim.network.latency.ms", "at least 0"),
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
    with pytest.raises(ConfigException, match="legal topic name"):
        cluster.create_topic("bad name!")
    with pytest.raises(ConfigException, match="mutation"):
        Cluster(brokers=1, mutations=("no-such-switch",))


def test_bootstrap_servers_must_name_a_cluster():
    with pytest.raises(ConfigException, match="bootstrap.servers"):
        Producer({"bootstrap.servers": "localhost:9092"})
    with pytest.raises(ConfigException, match="bootstrap.servers"):
        Producer({})
