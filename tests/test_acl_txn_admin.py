"""ACLs on the transaction admin APIs of KIP-664, as Kafka's KafkaApis checks them: DescribeProducers needs READ on
each topic (else TOPIC_AUTHORIZATION_FAILED (29) for its partitions), DescribeTransactions DESCRIBE on each
transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53) for that id; partitions of topics the principal may
not DESCRIBE are left out), ListTransactions answers only the ids the principal may DESCRIBE (no error, and DESCRIBE
on the cluster does not widen it).  DESCRIBE is implied by WRITE.  Asked through txnlab's in-process admin client,
by hand-made frames at the wire door and by Kafka's own ``kafka-transactions`` tool (a wire client has no SASL at
the door: its principal is User:ANONYMOUS)."""
from __future__ import annotations

import pytest

from txnlab import Cluster, Producer, TopicPartition
from txnlab.admin import AdminClient
from txnlab.protocol.errors import Errors
from txnlab.wire.codec import nested, request_type
from helpers import kafka_transactions_tool
from wire_raw import ask

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CFG = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3}


def two_open_transactions(authorizer: bool = True):
    """Three brokers, topics ``out`` (2 partitions) and ``audit`` (1); ``app-1`` (User:alice) has a transaction open
    on out-0 and out-1, ``ops-1`` (User:ops) one on audit-0."""
    cfg = dict(CFG, **({"authorizer.class.name": AUTHORIZER} if authorizer else {}))
    c = Cluster(brokers=3, seed=3, config=cfg)
    c.create_topic("out", partitions=2, replication_factor=3)
    c.create_topic("audit", partitions=1, replication_factor=3)
    if authorizer:
        c.add_acl("User:alice", "TRANSACTIONAL_ID", "app-", "WRITE", pattern_type="PREFIXED")
        c.add_acl("User:alice", "TOPIC", "out", "WRITE")
        c.add_acl("User:ops", "TRANSACTIONAL_ID", "ops-1", "WRITE")
        c.add_acl("User:ops", "TOPIC", "audit", "WRITE")
    producers = []
    for user, tid, tps in (("alice", "app-1", (("out", 0), ("out", 1))), ("ops", "ops-1", (("audit", 0),))):
        p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": tid, "sasl.username": user,
                      "transaction.timeout.ms": 900_000})
        p.init_transactions()
        p.begin_transaction()
        for t, part in tps:
            p.produce(t, value=b"v", partition=part)
        p.flush()
        producers.append(p)
    return c, producers


def admin_as(c, user):
    return AdminClient({"bootstrap.servers": c.bootstrap, "sasl.username": user})


def error_name(future) -> str:
    return future.exception().error.name()


def listed(admin) -> list:
    return [(t.transactional_id, t.state) for t in admin.list_transactions().result()]


OUT0, OUT1, AUDIT0 = TopicPartition("out", 0), TopicPartition("out", 1), TopicPartition("audit", 0)


# ------------------------------------------------------- in-process admin client
def test_a_principal_without_acls_is_refused_per_item_and_sees_no_transactions():
    c, _ = two_open_transactions()
    mallory = admin_as(c, "mallory")
    got = mallory.describe_producers([OUT0, AUDIT0])
    assert error_name(got[OUT0]) == error_name(got[AUDIT0]) == "TOPIC_AUTHORIZATION_FAILED"
    got = mallory.describe_transactions(["app-1", "ops-1", "nobody"])
    assert {tid: error_name(f) for tid, f in got.items()} == dict.fromkeys(
        ("app-1", "ops-1", "nobody"), "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")   # asked before the id is looked up
    assert listed(mallory) == []
    # refused at the leader look-up: Metadata does not describe 'out' to mallory (KafkaApis.handleTopicMetadataRequest;
    # the admin's PartitionLeaderStrategy fails the partition with the topic's error), no DescribeProducers is sent
    assert any("User:mallory may not DESCRIBE topic(s)" in e.narration and "'out'" in e.narration for e in c.trace)
    assert any("User:mallory may not DESCRIBE transactional.id 'app-1'" in e.narration for e in c.trace)


def test_read_on_a_topic_describes_its_producers_and_only_its():
    c, _ = two_open_transactions()
    c.add_acl("User:reader", "TOPIC", "out", "READ")
    got = admin_as(c, "reader").describe_producers([OUT0, OUT1, AUDIT0])
    for tp in (OUT0, OUT1):
        (state,) = got[tp].result()
        assert state.current_transaction_start_offset == 0
    assert error_name(got[AUDIT0]) == "TOPIC_AUTHORIZATION_FAILED"
    # DESCRIBE on the topic is not enough: Kafka asks for READ
    c.add_acl("User:describer", "TOPIC", "out", "DESCRIBE")
    assert error_name(admin_as(c, "describer").describe_producers([OUT0])[OUT0]) == "TOPIC_AUTHORIZATION_FAILED"


def test_write_on_a_transactional_id_implies_describe():
    c, _ = two_open_transactions()
    alice = admin_as(c, "alice")              # WRITE on app-* and on topic out: DESCRIBE on both is implied
    got = alice.describe_transactions(["app-1", "ops-1"])
    d = got["app-1"].result()
    assert d["state"] == "Ongoing" and d["partitions"] == [("out", 0), ("out", 1)]
    assert error_name(got["ops-1"]) == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    assert listed(alice) == [("app-1", "Ongoing")]
    assert listed(admin_as(c, "ops")) == [("ops-1", "Ongoing")]


def test_partitions_of_topics_the_principal_may_not_describe_are_left_out():
    c, _ = two_open_transactions()
    c.add_acl("User:auditor", "TRANSACTIONAL_ID", "*", "DESCRIBE")
    auditor = admin_as(c, "auditor")
    d = auditor.describe_transactions(["app-1"])["app-1"].result()
    assert d["state"] == "Ongoing" and d["partitions"] == []
    assert listed(auditor) == [("app-1", "Ongoing"), ("ops-1", "Ongoing")]
    c.add_acl("User:auditor", "TOPIC", "out", "DESCRIBE")
    assert auditor.describe_transactions(["app-1"])["app-1"].result()["partitions"] == [("out", 0), ("out", 1)]


def test_describe_on_the_cluster_does_not_list_transactions_and_deny_wins():
    c, _ = two_open_transactions()
    c.add_acl("User:clusterops", "CLUSTER", "kafka-cluster", "DESCRIBE")
    assert listed(admin_as(c, "clusterops")) == []
    c.add_acl("User:alice", "TRANSACTIONAL_ID", "app-1", "DESCRIBE", permission="DENY")
    assert listed(admin_as(c, "alice")) == []
    assert error_name(admin_as(c, "alice").describe_transactions(["app-1"])["app-1"]) == \
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


def test_without_an_authorizer_every_principal_sees_everything():
    c, _ = two_open_transactions(authorizer=False)
    mallory = admin_as(c, "mallory")
    assert [len(f.result()) for f in mallory.describe_producers([OUT0, AUDIT0]).values()] == [1, 1]
    got = mallory.describe_transactions(["app-1", "ops-1"])
    assert [got[t].result()["state"] for t in ("app-1", "ops-1")] == ["Ongoing", "Ongoing"]
    assert got["app-1"].result()["partitions"] == [("out", 0), ("out", 1)]
    assert listed(mallory) == [("app-1", "Ongoing"), ("ops-1", "Ongoing")]
    assert not any("may not" in e.narration for e in c.trace)


# ------------------------------------------------------------- the wire door
@pytest.fixture
def door_on_acls():
    c, producers = two_open_transactions()
    with c.listen() as door:
        yield c, door


def allow(c, door, *acl, **kw):
    with door.lock:
        c.add_acl(*acl, **kw)


def coordinator_of(c, door, tid):
    with door.lock:
        return admin_as(c, "alice").describe_transactions([tid])[tid].result(30)["coordinator"]


def test_wire_describe_producers_checks_read_per_topic(door_on_acls):
    c, door = door_on_acls
    leader = c.leader("out", 0)
    T = nested(request_type(61, 0), "topics")
    topics = (T(name="out", partition_indexes=(0,)), T(name="nope", partition_indexes=(0,)),
              T(name="bad/name", partition_indexes=(0,)))
    out0, nope, bad = (t.partitions[0] for t in ask(door, 61, 0, leader, topics=topics).topics)
    assert (out0.error_code, out0.error_message, out0.active_producers) == (
        Errors.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.", ())
    assert nope.error_code == Errors.TOPIC_AUTHORIZATION_FAILED          # asked before whether the topic exists
    assert bad.error_code == Errors.INVALID_TOPIC_EXCEPTION              # the name is checked first
    allow(c, door, "User:ANONYMOUS", "TOPIC", "out", "READ")
    out0, nope, bad = (t.partitions[0] for t in ask(door, 61, 0, leader, topics=topics).topics)
    assert out0.error_code == 0 and out0.error_message is None
    assert [p.current_txn_start_offset for p in out0.active_producers] == [0]
    assert nope.error_code == Errors.TOPIC_AUTHORIZATION_FAILED and bad.error_code == Errors.INVALID_TOPIC_EXCEPTION


def test_wire_describe_transactions_checks_describe_per_id(door_on_acls):
    c, door = door_on_acls
    coordinator = coordinator_of(c, door, "app-1")
    ids = ("app-1", "nobody", "")
    states = ask(door, 65, 0, coordinator, transactional_ids=ids).transaction_states
    assert [(s.transactional_id, s.error_code) for s in states] == [
        (t, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED) for t in ids]        # even the empty id: asked first
    refused = states[0]
    assert (refused.transaction_state, refused.producer_id, refused.topics) == ("", 0, ())
    allow(c, door, "User:ANONYMOUS", "TRANSACTIONAL_ID", "*", "WRITE")       # implies DESCRIBE
    found, missing, empty = ask(door, 65, 0, coordinator, transactional_ids=ids).transaction_states
    assert found.error_code == 0 and found.transaction_state == "Ongoing" and found.topics == ()  # no TOPIC ACL
    assert missing.error_code == Errors.TRANSACTIONAL_ID_NOT_FOUND and empty.error_code == Errors.INVALID_REQUEST
    allow(c, door, "User:ANONYMOUS", "TOPIC", "out", "READ")                 # implies DESCRIBE
    (found,) = ask(door, 65, 0, coordinator, transactional_ids=("app-1",)).transaction_states
    assert [(t.topic, tuple(t.partitions)) for t in found.topics] == [("out", (0, 1))]


def wire_list(c, door, version=2, **filters) -> tuple:
    filters = {"state_filters": (), "producer_id_filters": (), **filters}
    answers = [ask(door, 66, version, b, **filters) for b in c.broker_ids]
    return {a.error_code for a in answers}, sorted(s.transactional_id for a in answers for s in a.transaction_states)


def test_wire_list_transactions_answers_only_what_the_principal_may_describe(door_on_acls):
    c, door = door_on_acls
    assert wire_list(c, door) == ({0}, [])
    allow(c, door, "User:ANONYMOUS", "CLUSTER", "kafka-cluster", "DESCRIBE")
    assert wire_list(c, door) == ({0}, [])
    allow(c, door, "User:ANONYMOUS", "TRANSACTIONAL_ID", "ops-", "DESCRIBE", pattern_type="PREFIXED")
    assert wire_list(c, door) == ({0}, ["ops-1"])
    assert wire_list(c, door, version=0) == ({0}, ["ops-1"])
    assert wire_list(c, door, transactional_id_pattern="app-.*") == ({0}, [])   # both filters apply
    allow(c, door, "User:*", "TRANSACTIONAL_ID", "app-1", "READ")
    assert wire_list(c, door) == ({0}, ["app-1", "ops-1"])


def transactions(door, *args: str):
    """``kafka-transactions --bootstrap-server <door> <args>``: (exit code, stdout and stderr)."""
    done = kafka_transactions_tool(door, *args)
    return done.returncode, done.stdout + done.stderr


def test_kafka_transactions_tool_is_refused_then_answered(door_on_acls):
    c, door = door_on_acls
    # the Java Admin looks the coordinator up first, and that FindCoordinator is refused (DESCRIBE on the
    # transactional id, KafkaApis.getCoordinator): the DescribeTransactions is never sent
    rc, out = transactions(door, "describe", "--transactional-id", "app-1")
    assert rc != 0 and "FindCoordinator request for transactionalId `CoordinatorKey(idValue='app-1', " \
                       "type=TRANSACTION)` failed due to authorization failure" in out, out
    # DESCRIBE on the topic lets Kafka's Metadata answer its leader; DescribeProducers needs READ
    allow(c, door, "User:ANONYMOUS", "TOPIC", "out", "DESCRIBE")
    rc, out = transactions(door, "describe-producers", "--topic", "out", "--partition", "0")
    assert rc != 0 and "TopicAuthorizationException: Topic authorization failed." in out, out
    assert "authorization failure on topic `out`" in out, out
    rc, out = transactions(door, "list")
    assert rc == 0 and out.split() == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], out
    allow(c, door, "User:ANONYMOUS", "TRANSACTIONAL_ID", "app-", "WRITE", pattern_type="PREFIXED")
    allow(c, door, "User:ANONYMOUS", "TOPIC", "out", "READ")
    rc, out = transactions(door, "describe", "--transactional-id", "app-1")
    assert rc == 0 and "Ongoing" in out and "out-0,out-1" in out, out
    rc, out = transactions(door, "describe-producers", "--topic", "out", "--partition", "0")
    header, row = (line.split() for line in out.splitlines() if line.strip())
    assert rc == 0 and dict(zip(header, row))["CurrentTransactionStartOffset"] == "0", out   # app-1's open one
    rc, out = transactions(door, "list")
    assert rc == 0 and "app-1" in out and "ops-1" not in out, out
