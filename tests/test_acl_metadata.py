"""Metadata under the ACL authorizer, as Kafka's KafkaApis.handleTopicMetadataRequest checks it: DESCRIBE on each
named topic (else TOPIC_AUTHORIZATION_FAILED, 29, with no partitions, whether or not the topic exists), a listing of
all topics simply leaves the undescribable ones out, and auto-creation needs CREATE.  What the clients do with the
refusal (dialect.METADATA_TOPIC): a producer's records for the topic fail at once with 29 in their delivery reports
(a transaction must then be aborted) instead of waiting for metadata until they time out; librdkafka's produce()
refuses later records to the topic at once; a consumer reports the topic from poll() (librdkafka: an error message,
Java: an exception) and goes on with its other topics.  Checked with the lab's clients and with confluent-kafka
through the wire door."""
from __future__ import annotations

import pytest

from txnlab import Cluster, Consumer, KafkaException, Producer
from txnlab.admin import AdminClient, TopicCollection

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CFG = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3,
       "group.initial.rebalance.delay.ms": 0, "authorizer.class.name": AUTHORIZER}


def cluster(**extra) -> Cluster:
    c = Cluster(brokers=3, seed=4, config={**CFG, **extra})
    c.create_topic("out", partitions=1, replication_factor=3)
    c.create_topic("secret", partitions=2, replication_factor=3)
    return c


def metadata_answers(c, dst: str) -> list:
    """{topic: error code} of each Metadata answer ``dst`` received."""
    return [{t: int(e) for t, (e, _) in m.payload.topics.items()}
            for m in c.network_messages() if m.api == "Metadata" and m.is_response and m.dst == dst]


def sent(c, api: str, src: str) -> list:
    return [m for m in c.network_messages() if m.api == api and not m.is_response and m.src == src]


def test_metadata_answers_an_undescribable_topic_29_with_no_partitions_and_lists_only_describable_ones():
    c = cluster()
    c.add_acl("User:eve", "TOPIC", "out", "DESCRIBE")
    admin = AdminClient({"bootstrap.servers": c.bootstrap, "sasl.username": "eve"})
    one = admin.list_topics("secret")
    assert one.topics["secret"].error.code() == 29 and one.topics["secret"].partitions == {}
    assert one.topics["secret"].error.name() == "TOPIC_AUTHORIZATION_FAILED"
    # an undescribable topic that does not exist answers the same: its existence is not disclosed
    assert admin.list_topics("nowhere").topics["nowhere"].error.code() == 29
    assert set(admin.list_topics().topics) == {"out"}        # all topics: the others are simply left out
    futures = admin.describe_topics(TopicCollection(["out", "secret"]))
    assert [p.id for p in futures["out"].result().partitions] == [0]
    with pytest.raises(KafkaException) as e:
        futures["secret"].result()
    assert e.value.args[0].code() == 29
    assert any("may not DESCRIBE topic(s) ['secret']" in line for ev in c.trace.events for line in ev.details)


def test_the_cluster_wide_listing_without_acls_shows_everything_to_a_client_when_no_authorizer_is_set():
    c = Cluster(brokers=3, seed=4, config={k: v for k, v in CFG.items() if k != "authorizer.class.name"})
    c.create_topic("secret", partitions=2, replication_factor=3)
    admin = AdminClient({"bootstrap.servers": c.bootstrap, "sasl.username": "eve"})
    assert admin.list_topics("secret").topics["secret"].error is None


def test_auto_creation_needs_create_on_the_topic_or_the_cluster():
    c = cluster(**{"auto.create.topics.enable": True})
    c.add_acl("User:eve", "TOPIC", "fresh", "DESCRIBE")
    c.add_acl("User:eve", "TOPIC", "made", "WRITE")
    c.add_acl("User:eve", "TOPIC", "made", "CREATE")
    p = Producer({"bootstrap.servers": c.bootstrap, "sasl.username": "eve", "client.id": "eve-app"})
    reports = []
    p.produce("fresh", value=b"x", on_delivery=lambda err, msg: reports.append(err))
    p.flush(10)
    assert [e.code() for e in reports] == [29]
    assert "fresh" not in c.topics()                          # not created: DESCRIBE without CREATE
    p.produce("made", value=b"y", on_delivery=lambda err, msg: reports.append(err))
    p.flush(10)
    assert reports[-1] is None and "made" in c.topics()       # CREATE on the topic: created, then written


def test_a_producers_records_to_an_undescribable_topic_fail_at_once_with_29_and_produce_then_refuses():
    c = cluster()
    c.add_acl("User:eve", "TOPIC", "out", "WRITE")
    p = Producer({"bootstrap.servers": c.bootstrap, "sasl.username": "eve", "client.id": "eve-app",
                  "message.timeout.ms": 60_000})
    reports = []
    p.produce("secret", value=b"x", on_delivery=lambda err, msg: reports.append((err, msg.topic())))
    p.produce("out", value=b"y", on_delivery=lambda err, msg: reports.append((err, msg.topic())))
    assert p.flush(30) == 0
    (err, topic), (ok, _) = sorted(reports, key=lambda r: r[1] != "secret")
    assert topic == "secret" and err.code() == 29 and err.name() == "TOPIC_AUTHORIZATION_FAILED"
    assert err.str() == "Broker: Topic authorization failed"
    assert ok is None                                          # the other topic is written
    assert c.kernel.now < 60_000                               # failed at the Metadata answer, not timed out
    assert {29} == {a["secret"] for a in metadata_answers(c, "eve-app") if "secret" in a}
    assert all(tp[0] != "secret" for m in sent(c, "Produce", "eve-app") for tp in m.payload.topic_data)
    with pytest.raises(KafkaException) as e:                   # librdkafka: the topic is in the error state
        p.produce("secret", value=b"z")
    assert e.value.args[0].code() == 29 and "Unable to produce message" in e.value.args[0].str()
    c.add_acl("User:eve", "TOPIC", "secret", "WRITE")
    p.poll(1)                          # librdkafka's topic scan asks again after a second: now it may
    p.produce("secret", value=b"z", on_delivery=lambda err, msg: reports.append((err, msg.topic())))
    assert p.flush(30) == 0 and reports[-1] == (None, "secret")


def test_a_java_producers_send_fails_through_its_callback_with_topic_authorization_failed():
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "sasl.username": "eve", "client.id": "eve-app",
                  "sim.client.dialect": "java"})
    reports = []
    for v in (b"x", b"z"):              # Java: every send waits on metadata and fails through its callback
        p.produce("secret", value=v, on_delivery=lambda err, msg: reports.append(err))
        p.flush(30)
    assert [e.code() for e in reports] == [29, 29]
    assert reports[0].str() == "Not authorized to access topics: [secret]"


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_a_transactions_record_to_an_undescribable_topic_makes_it_abortable(dialect):
    c = cluster()
    c.add_acl("User:alice", "TRANSACTIONAL_ID", "app-1", "WRITE")
    c.add_acl("User:alice", "TOPIC", "out", "WRITE")
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "app-1", "sasl.username": "alice",
                  "client.id": "alice-app", "sim.client.dialect": dialect})
    p.init_transactions()
    p.begin_transaction()
    reports = []
    p.produce("secret", value=b"x", on_delivery=lambda err, msg: reports.append(err))
    p.flush(30)
    assert [e.code() for e in reports] == [29]
    # failed at the Metadata answer: never added to the transaction, never sent
    assert all(tp[0] != "secret" for m in sent(c, "AddPartitionsToTxn", "alice-app") for tp in m.payload.partitions)
    assert all(tp[0] != "secret" for m in sent(c, "Produce", "alice-app") for tp in m.payload.topic_data)
    with pytest.raises(KafkaException) as e:
        p.commit_transaction()
    assert e.value.args[0].txn_requires_abort() and not e.value.args[0].fatal()
    p.abort_transaction()
    p.begin_transaction()
    p.produce("out", value=b"y", on_delivery=lambda err, msg: reports.append(err))
    p.commit_transaction()
    assert reports[-1] is None


def _fill_out(c, n: int = 3) -> None:
    c.add_acl("User:writer", "TOPIC", "out", "WRITE")
    p = Producer({"bootstrap.servers": c.bootstrap, "sasl.username": "writer"})
    for i in range(n):
        p.produce("out", value=b"v%d" % i)
    assert p.flush(30) == 0


def _consumer(c, dialect: str) -> Consumer:
    c.add_acl("User:bob", "TOPIC", "out", "READ")
    c.add_acl("User:bob", "GROUP", "g", "READ")
    return Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sasl.username": "bob",
                     "client.id": "bob-app", "auto.offset.reset": "earliest", "sim.client.dialect": dialect})


def test_a_librdkafka_consumer_reports_a_refused_subscribed_topic_from_poll_and_reads_its_other_topics():
    c = cluster()
    _fill_out(c)
    consumer = _consumer(c, "librdkafka")
    consumer.subscribe(["out", "secret"])
    msgs = [consumer.poll(5) for _ in range(6)]
    errors = [m for m in msgs if m is not None and m.error() is not None]
    assert len(errors) == 1                                    # reported once, not at every metadata answer
    err = errors[0]
    assert (err.topic(), err.partition(), err.error().code()) == ("secret", 0, 29)
    assert err.error().str() == "Subscribed topic not available: secret: Broker: Topic authorization failed"
    assert [m.value() for m in msgs if m is not None and m.error() is None] == [b"v0", b"v1", b"v2"]
    assert {tp.topic for tp in consumer.assignment()} == {"out"}
    assert all(tp[0] != "secret" for m in sent(c, "Fetch", "bob-app") for tp in m.payload.partitions)


def test_an_invalid_subscribed_topic_is_reported_by_the_same_mechanism():
    """dialect.METADATA_TOPIC's other permanent error: INVALID_TOPIC_EXCEPTION.  librdkafka does not cache it, so
    its consumer reports the topic as unknown (what confluent-kafka shows at the wire door)."""
    c = Cluster(brokers=3, seed=4, config={k: v for k, v in CFG.items() if k != "authorizer.class.name"})
    c.create_topic("out", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap})
    p.produce("out", value=b"v0")
    p.flush(30)
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
    consumer.subscribe(["out", "bad!name"])
    msgs = [m for m in (consumer.poll(5) for _ in range(4)) if m is not None]
    assert [(m.topic(), m.error().code(), m.error().str()) for m in msgs if m.error()] == [
        ("bad!name", 3, "Subscribed topic not available: bad!name: Broker: Unknown topic or partition")]
    assert [m.value() for m in msgs if not m.error()] == [b"v0"]


def test_a_java_consumers_poll_throws_topic_authorization_failed_then_reads_its_other_topics():
    c = cluster()
    _fill_out(c)
    consumer = _consumer(c, "java")
    consumer.subscribe(["out", "secret"])
    with pytest.raises(KafkaException) as e:
        for _ in range(3):
            consumer.poll(5)
    assert e.value.args[0].code() == 29 and e.value.args[0].str() == "Not authorized to access topics: [secret]"
    values = [m.value() for m in (consumer.poll(5) for _ in range(6)) if m is not None and m.error() is None]
    assert values == [b"v0", b"v1", b"v2"]


def test_a_real_producer_at_the_wire_door_fails_its_record_with_29_as_the_lab_client_does():
    confluent_kafka = pytest.importorskip("confluent_kafka")
    c = cluster()
    with c.listen() as door:
        p = confluent_kafka.Producer({"bootstrap.servers": door.bootstrap_servers, "client.id": "real-app",
                                      "message.timeout.ms": 30_000})
        reports = []
        p.produce("secret", value=b"x", on_delivery=lambda err, msg: reports.append(err))
        assert p.flush(20) == 0
        assert [e.code() for e in reports] == [confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED]
        assert reports[0].str() == "Broker: Topic authorization failed"
        with pytest.raises(confluent_kafka.KafkaException) as e:    # the topic is now in the error state
            p.produce("secret", value=b"y")
        assert e.value.args[0].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
        with door.lock:
            answers = [{t: int(e) for t, (e, _) in m.payload.topics.items()} for m in c.network_messages()
                       if m.api == "Metadata" and m.is_response and m.payload.topics.get("secret")]
            assert answers and all(a["secret"] == 29 for a in answers)
            assert all(tp[0] != "secret" for m in sent(c, "Produce", "real-app") for tp in m.payload.topic_data)


def test_a_real_consumer_at_the_wire_door_reports_the_refused_topic_as_the_lab_client_does():
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient as RealAdmin
    c = cluster()
    _fill_out(c)
    c.add_acl("User:ANONYMOUS", "TOPIC", "out", "READ")
    c.add_acl("User:ANONYMOUS", "GROUP", "g", "READ")
    with c.listen() as door:
        one = RealAdmin({"bootstrap.servers": door.bootstrap_servers}).list_topics("secret", timeout=20)
        assert one.topics["secret"].error.code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
        consumer = confluent_kafka.Consumer({"bootstrap.servers": door.bootstrap_servers, "group.id": "g",
                                             "auto.offset.reset": "earliest"})
        consumer.subscribe(["out", "secret"])
        errors, values = [], []
        for _ in range(40):
            m = consumer.poll(0.5)
            if m is not None and m.error() is not None:
                errors.append((m.topic(), m.partition(), m.error().code(), m.error().str()))
            elif m is not None:
                values.append(m.value())
            if errors and len(values) == 3:
                break
        consumer.close()
        assert errors == [("secret", 0, 29,
                           "Subscribed topic not available: secret: Broker: Topic authorization failed")]
        assert values == [b"v0", b"v1", b"v2"]
