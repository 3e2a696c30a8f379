"""FindCoordinator under the ACL authorizer, as Kafka's KafkaApis.getCoordinator checks it: DESCRIBE on the key's
transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 53) or group (else GROUP_AUTHORIZATION_FAILED, 30),
before the broker looks anything up.  What each client does with the refusal: a transactional producer's look-up of
its own coordinator fails it for good (librdkafka's rd_kafka_txn_handle_FindCoordinator, Java's
FindCoordinatorHandler: fatal); the look-up of send_offsets_to_transaction's group coordinator fails the transaction
(abortable); a consumer reports the group's refusal from poll().  Checked with the lab's clients and with
confluent-kafka through the wire door."""
from __future__ import annotations

import pytest

from txnlab import Cluster, Consumer, KafkaException, Producer, TopicPartition

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CFG = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3,
       "group.initial.rebalance.delay.ms": 0, "authorizer.class.name": AUTHORIZER}


def cluster() -> Cluster:
    c = Cluster(brokers=3, seed=4, config=CFG)
    c.create_topic("out", partitions=1, replication_factor=3)
    return c


def sent(c, api: str, src: str) -> list:
    return [m for m in c.network_messages() if m.api == api and not m.is_response and m.src == src]


def answers(c, api: str, dst: str) -> list:
    return [m.payload.error for m in c.network_messages() if m.api == api and m.is_response and m.dst == dst]


def test_a_producer_refused_its_coordinator_fails_for_good_before_asking_for_a_producer_id():
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "secret", "sasl.username": "mallory",
                  "client.id": "mallory-app"})
    with pytest.raises(KafkaException) as e:
        p.init_transactions()
    assert e.value.error.name() == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" and e.value.error.fatal()
    assert answers(c, "FindCoordinator", "mallory-app") == [53]           # asked once, refused, not asked again
    assert sent(c, "InitProducerId", "mallory-app") == []
    assert any("may not DESCRIBE transactional.id 'secret'" in line for e in c.trace.events for line in e.details)
    with pytest.raises(KafkaException) as again:                           # fatal: every call fails from now on
        p.begin_transaction()
    assert again.value.error.fatal()


def test_write_on_the_transactional_id_lets_the_producer_find_its_coordinator():
    c = cluster()
    c.add_acl("User:alice", "TRANSACTIONAL_ID", "app-1", "WRITE")           # WRITE implies DESCRIBE
    c.add_acl("User:alice", "TOPIC", "out", "WRITE")
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "app-1", "sasl.username": "alice",
                  "client.id": "alice-app"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("out", value=b"x")
    p.commit_transaction()
    found = answers(c, "FindCoordinator", "alice-app")
    assert found[-1] == 0 and 53 not in found       # (the first look-up creates __transaction_state: not available)


def test_a_consumer_refused_its_group_coordinator_reports_it_from_poll_and_never_joins():
    c = cluster()
    c.add_acl("User:bob", "TOPIC", "out", "READ")
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sasl.username": "bob",
                         "client.id": "bob-app"})
    consumer.subscribe(["out"])
    with pytest.raises(KafkaException) as e:
        consumer.poll(5)
    assert e.value.error.name() == "GROUP_AUTHORIZATION_FAILED"
    assert answers(c, "FindCoordinator", "bob-app") == [30]
    assert sent(c, "JoinGroup", "bob-app") == []


def test_send_offsets_refused_the_groups_coordinator_aborts_only_the_transaction():
    """READ on the group lets AddOffsetsToTxn through; DESCRIBE denied on it refuses the look-up of the group's
    coordinator that TxnOffsetCommit needs: the transaction must be aborted, the producer goes on."""
    c = cluster()
    c.add_acl("User:alice", "TRANSACTIONAL_ID", "app-1", "WRITE")
    c.add_acl("User:alice", "TOPIC", "out", "WRITE")
    c.add_acl("User:alice", "GROUP", "copiers", "READ")
    c.add_acl("User:alice", "GROUP", "copiers", "DESCRIBE", permission="DENY")
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "app-1", "sasl.username": "alice",
                  "client.id": "alice-app"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("out", value=b"x")
    meta = type("Meta", (), {"group_id": "copiers", "generation_id": -1, "member_id": "",
                             "group_instance_id": None})()
    with pytest.raises(KafkaException) as e:
        p.send_offsets_to_transaction([TopicPartition("out", 0, 1)], meta)
    assert e.value.error.txn_requires_abort() and not e.value.error.fatal()
    assert "GROUP_AUTHORIZATION_FAILED" in str(e.value)
    assert answers(c, "FindCoordinator", "alice-app")[-1] == 30
    assert sent(c, "TxnOffsetCommit", "alice-app") == []
    p.abort_transaction()
    p.begin_transaction()
    p.produce("out", value=b"y")
    p.commit_transaction()


def test_a_real_client_refused_its_coordinator_at_the_wire_door():
    confluent_kafka = pytest.importorskip("confluent_kafka")
    c = cluster()
    with c.listen() as door:
        p = confluent_kafka.Producer({"bootstrap.servers": door.bootstrap_servers, "transactional.id": "secret",
                                      "client.id": "real-app"})
        with pytest.raises(confluent_kafka.KafkaException) as e:
            p.init_transactions(30)
        err = e.value.args[0]
        assert err.fatal() and err.code() == confluent_kafka.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert "Failed to find transaction coordinator" in err.str()
        with door.lock:
            assert sent(c, "InitProducerId", "real-app") == []
            assert 53 in answers(c, "FindCoordinator", "real-app")
