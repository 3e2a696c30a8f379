"""Offset commits and fetches of topics the principal may not read, as Kafka 4.1.1 answers them:

- KafkaApis.handleOffsetCommitRequest / handleTxnOffsetCommitRequest: after the group (GROUP_AUTHORIZATION_FAILED for
  the whole request) each topic is checked for READ (authHelper.filterByAuthorized); the partitions of a topic the
  principal may not read are answered TOPIC_AUTHORIZATION_FAILED (29), before, and whether or not, the topic exists,
  and the other partitions are committed.
- KafkaApis.handleOffsetFetchRequest: DESCRIBE on the group (not READ), then DESCRIBE on each topic: the partitions
  asked of a topic the principal may not describe are answered TOPIC_AUTHORIZATION_FAILED, and a fetch of all the
  group's offsets (fetchAllOffsetsForGroup) leaves such topics out."""
import pytest

from txnlab import Cluster, Consumer, KafkaException, Producer, TopicPartition
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors as E
from txnlab.protocol.names import OFFSETS_TOPIC

from helpers import RawClient

CFG = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3,
       "group.initial.rebalance.delay.ms": 0,
       "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
ANON = "User:ANONYMOUS"     # (the principal of a client without sasl.username: the raw client)


def acl_cluster(**cfg):
    c = Cluster(brokers=1, seed=4, config={**CFG, **cfg})
    for t in ("t", "secret", "out"):
        c.create_topic(t, partitions=1, replication_factor=1)
    c.ensure_internal_topic(c.broker(0), OFFSETS_TOPIC)
    mgr = c.broker(0).group_coordinator.manager
    c.run_until(lambda: mgr.partition_for("g") in mgr.owned and not mgr.loading)
    return c


def offsets():
    return {("t", 0): (5, -1, ""), ("secret", 0): (6, -1, ""), ("nosuch", 0): (7, -1, ""), ("t", 9): (8, -1, "")}


def test_an_offset_commit_is_refused_per_topic_the_principal_may_not_read():
    c = acl_cluster()
    c.add_acl(ANON, "GROUP", "g", "READ")
    c.add_acl(ANON, "TOPIC", "t", "READ")
    c.add_acl(ANON, "TOPIC", "secret", "DESCRIBE")     # describing is not reading
    raw = RawClient(c)
    resp = raw.call(c.group_coordinator("g"), m.OffsetCommitRequest("g", -1, "", None, offsets()))
    assert resp.errors == {("t", 0): E.NONE, ("secret", 0): E.TOPIC_AUTHORIZATION_FAILED,
                           ("nosuch", 0): E.TOPIC_AUTHORIZATION_FAILED,    # (not UNKNOWN_TOPIC_OR_PARTITION)
                           ("t", 9): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert {tp: e.offset for tp, e in c.broker(c.group_coordinator("g")).group_coordinator.manager.get_group("g")
            .offsets.items()} == {("t", 0): 5}
    c.add_acl(ANON, "TOPIC", "*", "READ")
    resp = raw.call(c.group_coordinator("g"), m.OffsetCommitRequest("g", -1, "", None, offsets()))
    assert resp.errors == {("t", 0): E.NONE, ("secret", 0): E.NONE, ("nosuch", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
                           ("t", 9): E.UNKNOWN_TOPIC_OR_PARTITION}


def test_the_group_is_checked_before_the_topics():
    c = acl_cluster()
    c.add_acl(ANON, "TOPIC", "t", "READ")
    raw = RawClient(c)
    resp = raw.call(c.group_coordinator("g"), m.OffsetCommitRequest("g", -1, "", None, offsets()))
    assert set(resp.errors.values()) == {E.GROUP_AUTHORIZATION_FAILED}


def test_a_txn_offset_commit_is_refused_per_topic_the_principal_may_not_read():
    c = acl_cluster(**{"transaction.partition.verification.enable": False})
    c.add_acl(ANON, "TRANSACTIONAL_ID", "tx", "WRITE")
    c.add_acl(ANON, "GROUP", "g", "READ")
    c.add_acl(ANON, "TOPIC", "t", "READ")
    raw = RawClient(c)
    req = m.TxnOffsetCommitRequest("tx", "g", 500, 0, -1, "", None, offsets())
    assert raw.call(c.group_coordinator("g"), req).errors == {
        ("t", 0): E.NONE, ("secret", 0): E.TOPIC_AUTHORIZATION_FAILED, ("nosuch", 0): E.TOPIC_AUTHORIZATION_FAILED,
        ("t", 9): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert c.broker(c.group_coordinator("g")).group_coordinator.pending_transactional_offsets == \
        {500: {"g": {("t", 0): 5}}}
    only_secret = m.TxnOffsetCommitRequest("tx", "g", 501, 0, -1, "", None, {("secret", 0): (1, -1, "")})
    assert raw.call(c.group_coordinator("g"), only_secret).errors == {("secret", 0): E.TOPIC_AUTHORIZATION_FAILED}
    assert any("may not READ topic(s) ['nosuch', 'secret']" in e.narration for e in c.trace)


def test_a_consumer_committing_a_topic_it_may_not_read_gets_topic_authorization_failed():
    c = acl_cluster()
    c.add_acl("User:bob", "GROUP", "g", "READ")
    c.add_acl("User:bob", "TOPIC", "t", "READ")
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sasl.username": "bob",
                     "enable.auto.commit": False})
    with pytest.raises(KafkaException) as e:
        cons.commit(offsets=[TopicPartition("t", 0, 3), TopicPartition("secret", 0, 3)], asynchronous=False)
    assert e.value.args[0].code() == E.TOPIC_AUTHORIZATION_FAILED
    assert [tp.offset for tp in cons.committed([TopicPartition("t", 0)], 10)] == [3]


@pytest.mark.parametrize("dialect, fatal", [("librdkafka", False), ("java", True)])
def test_send_offsets_of_a_topic_the_producer_may_not_read(dialect, fatal):
    """librdkafka: TOPIC_AUTHORIZATION_FAILED is abortable (rd_kafka_txn_handle_TxnOffsetCommit); Kafka's Java
    client names no branch for it in TxnOffsetCommitHandler.handleResponse: "Unexpected error", fatal."""
    c = acl_cluster()
    c.add_acl("User:app", "TRANSACTIONAL_ID", "tx", "WRITE")
    c.add_acl("User:app", "TOPIC", "out", "WRITE")
    c.add_acl("User:app", "GROUP", "g", "READ")
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sasl.username": "app"})
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "sasl.username": "app",
                  "sim.client.dialect": dialect})
    p.init_transactions(10)
    p.begin_transaction()
    p.produce("out", value=b"x", partition=0)
    with pytest.raises(KafkaException) as e:
        p.send_offsets_to_transaction([TopicPartition("t", 0, 2)], cons.consumer_group_metadata(), 10)
    err = e.value.args[0]
    assert err.code() == E.TOPIC_AUTHORIZATION_FAILED
    assert (err.fatal(), err.txn_requires_abort()) == (fatal, not fatal)


def test_an_offset_fetch_needs_describe_on_the_group_and_on_each_topic():
    c = acl_cluster()
    c.add_acl("User:admin", "GROUP", "g", "READ")
    c.add_acl("User:admin", "TOPIC", "*", "READ")
    writer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sasl.username": "admin",
                       "enable.auto.commit": False})
    writer.commit(offsets=[TopicPartition("t", 0, 3), TopicPartition("secret", 0, 4)], asynchronous=False)
    c.add_acl(ANON, "GROUP", "g", "DESCRIBE")       # describing the group is enough to fetch its offsets
    c.add_acl(ANON, "TOPIC", "t", "DESCRIBE")
    raw = RawClient(c)
    coord = c.group_coordinator("g")
    resp = raw.call(coord, m.OffsetFetchRequest("g", (("t", 0), ("secret", 0))))
    assert resp.error == E.NONE
    assert resp.offsets == {("t", 0): (3, -1, "", E.NONE), ("secret", 0): (-1, -1, "", E.TOPIC_AUTHORIZATION_FAILED)}
    assert raw.call(coord, m.OffsetFetchRequest("g", None)).offsets == {("t", 0): (3, -1, "", E.NONE)}
    assert raw.call(coord, m.OffsetFetchRequest("h", (("t", 0),))).error == E.GROUP_AUTHORIZATION_FAILED
