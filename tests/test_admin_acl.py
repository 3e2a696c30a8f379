"""AdminClient transaction tools (KIP-664) and the ACL authorizer's errors."""
import pytest

from txnlab import Cluster, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from txnlab.admin import AdminClient, NewTopic

CFG = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3,
       "group.initial.rebalance.delay.ms": 0}


def test_list_and_describe_transactions_and_producers():
    c = Cluster(brokers=3, seed=5, config=CFG)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic("out", 2, 3)])["out"].result()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "lister"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("out", value=b"x", partition=1)
    p.flush()
    listing = admin.list_transactions().result()
    assert [(t.transactional_id, t.state) for t in listing] == [("lister", "Ongoing")]
    d = admin.describe_transactions(["lister"])["lister"].result()
    assert d["state"] == "Ongoing" and d["partitions"] == [("out", 1)]
    prods = admin.describe_producers([TopicPartition("out", 1)])[TopicPartition("out", 1)].result()
    assert len(prods) == 1 and prods[0].current_transaction_start_offset == 0
    p.commit_transaction()
    c.run_until_idle()
    assert admin.list_transactions(states=["CompleteCommit"]).result()[0].transactional_id == "lister"
    with pytest.raises(KafkaException):
        admin.describe_transactions(["nobody"])["nobody"].result()


def test_create_topics_reports_errors_per_topic():
    c = Cluster(brokers=1, seed=1)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    assert admin.create_topics([NewTopic("a", 1, 1)])["a"].result() is None
    again = admin.create_topics([NewTopic("a", 1, 1)])["a"]
    assert again.exception().error.name() == "TOPIC_ALREADY_EXISTS"
    md = admin.list_topics()
    assert "a" in md.topics and md.topics["a"].partitions[0].leader == 0


def acl_cluster():
    cfg = dict(CFG)
    cfg["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    c = Cluster(brokers=3, seed=2, config=cfg)
    c.create_topic("out", partitions=1, replication_factor=3)
    return c


def test_transactional_id_without_acl_is_fatal():
    c = acl_cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "secret", "sasl.username": "mallory"})
    with pytest.raises(KafkaException) as e:
        p.init_transactions()
    assert e.value.error.name() == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    assert e.value.error.fatal()


def test_topic_write_without_acl_aborts_the_transaction():
    c = acl_cluster()
    c.add_acl("User:alice", "TRANSACTIONAL_ID", "app-", "WRITE", pattern_type="PREFIXED")
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "app-1", "sasl.username": "alice"})
    p.init_transactions()
    p.begin_transaction()
    reports = []
    p.produce("out", value=b"x", on_delivery=lambda err, msg: reports.append(err))
    with pytest.raises(KafkaException) as e:
        p.commit_transaction()
    # librdkafka: the topic's Metadata error fails the record (rd_kafka_topic_assign_uas) and only counts it
    # (txn_dr_fails); the commit is refused for it (rd_kafka_txn_op_commit_transaction)
    assert e.value.error.txn_requires_abort() and e.value.error.code() == KafkaError._INCONSISTENT
    assert "1 message(s) failed delivery" in str(e.value)
    p.poll(0)
    assert [r.name() for r in reports] == ["TOPIC_AUTHORIZATION_FAILED"]
    p.abort_transaction()
    c.add_acl("User:alice", "TOPIC", "out", "WRITE")
    # Metadata refused 'out' (no DESCRIBE): librdkafka keeps the topic in its error state, refusing produce(),
    # until its once-a-second topic scan asks again
    p.poll(1)
    p.begin_transaction()
    p.produce("out", value=b"y")
    p.commit_transaction()


def test_group_without_acl_is_refused():
    c = acl_cluster()
    c.add_acl("User:bob", "TOPIC", "out", "READ")
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sasl.username": "bob"})
    consumer.subscribe(["out"])
    with pytest.raises(KafkaException) as e:
        consumer.poll(5)
    assert e.value.error.name() == "GROUP_AUTHORIZATION_FAILED"
