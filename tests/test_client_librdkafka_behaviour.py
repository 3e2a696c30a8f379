"""Where the lab's client behaves as librdkafka (confluent-kafka) does rather than as Kafka's Java client:
produce() after an abortable error, the anchored clock, latency, watermarks, committed(), offsets_for_times,
incremental assignment and close()."""
import pytest

from txnlab import Cluster, Consumer, KafkaError, KafkaException, Producer, TopicPartition

EPOCH_2026 = 1_767_225_600_000          # 2026-01-01T00:00:00Z, the lab clock's 0 unless sim.clock.epoch.ms says


def cluster(**cfg) -> Cluster:
    c = Cluster(brokers=3, seed=3, config=cfg or None)
    c.create_topic("t", partitions=1, replication_factor=3)
    return c


def acl_cluster() -> Cluster:
    c = cluster(**{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    c.add_acl("User:alice", "TRANSACTIONAL_ID", "app-", "WRITE", pattern_type="PREFIXED")
    return c


def test_produce_after_an_abortable_error_fails_with_state_until_the_abort():
    c = acl_cluster()                           # alice may not write topic t: the transaction must be aborted
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "app-1", "sasl.username": "alice"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"x")
    with pytest.raises(KafkaException) as e:
        p.commit_transaction()
    assert e.value.error.txn_requires_abort() and not e.value.error.fatal()
    with pytest.raises(KafkaException) as e:
        p.produce("t", value=b"y")
    assert e.value.error.code() == KafkaError._STATE            # librdkafka: "Local: Erroneous state"
    p.abort_transaction()


def test_java_dialect_raises_the_abortable_error_from_produce():
    c = acl_cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "app-1", "sasl.username": "alice",
                  "sim.client.dialect": "java"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"x")
    with pytest.raises(KafkaException):
        p.commit_transaction()
    with pytest.raises(KafkaException) as e:
        p.produce("t", value=b"y")
    assert e.value.error.name() == "TOPIC_AUTHORIZATION_FAILED" and e.value.error.txn_requires_abort()


def test_timestamps_are_unix_time_anchored_at_the_lab_epoch_and_latency_is_simulated_seconds():
    c = cluster()
    c.advance(1_500)
    reports = []
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 20})
    p.produce("t", value=b"a", on_delivery=lambda err, msg: reports.append(msg))
    p.produce("t", value=b"b", timestamp=EPOCH_2026 - 60_000, on_delivery=lambda err, msg: reports.append(msg))
    p.flush()
    a, b = reports
    assert a.timestamp()[0] == 1 and EPOCH_2026 + 1_500 <= a.timestamp()[1] < EPOCH_2026 + 2_000
    assert b.timestamp() == (1, EPOCH_2026 - 60_000)           # the application's own timestamp comes back
    assert 0 < a.latency() < 1.0                                 # simulated seconds (flush() skips linger.ms)
    reader = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "r", "auto.offset.reset": "earliest"})
    reader.assign([TopicPartition("t", 0)])
    got = reader.consume(2, 5.0)
    assert [m.timestamp() for m in got] == [a.timestamp(), b.timestamp()]
    found = reader.offsets_for_times([TopicPartition("t", 0, EPOCH_2026 + 1_000)])
    assert found[0].offset == 0                                  # the first record at or after that time
    later = reader.offsets_for_times([TopicPartition("t", 0, EPOCH_2026 + 3_600_000)])
    assert later[0].offset == -1                                 # none: OFFSET_END


def test_the_epoch_is_a_lab_key():
    c = cluster()
    reports = []
    p = Producer({"bootstrap.servers": c.bootstrap, "sim.clock.epoch.ms": 0})
    p.produce("t", value=b"a", on_delivery=lambda err, msg: reports.append(msg))
    p.flush()
    assert reports[0].timestamp()[1] < 10_000


def test_cached_watermarks_are_log_start_and_hw_for_read_committed_too():
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "open"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"open", partition=0)
    p.flush()
    reader = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "r", "auto.offset.reset": "earliest"})
    reader.assign([TopicPartition("t", 0)])
    assert reader.poll(1.0) is None                              # read_committed (librdkafka's default)
    assert reader.get_watermark_offsets(TopicPartition("t", 0), cached=True) == (0, 1)    # the HW
    assert reader.get_watermark_offsets(TopicPartition("t", 0)) == (0, 0)                 # asked: the LSO


def test_committed_on_a_read_uncommitted_consumer_does_not_wait_for_an_open_transaction():
    c = cluster()
    owner = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "enable.auto.commit": False})
    owner.assign([TopicPartition("t", 0)])
    owner.commit(offsets=[TopicPartition("t", 0, 0)], asynchronous=False)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "copier"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"x", partition=0)
    p.send_offsets_to_transaction([TopicPartition("t", 0, 5)], owner.consumer_group_metadata())
    uncommitted = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g",
                            "isolation.level": "read_uncommitted"})
    assert uncommitted.committed([TopicPartition("t", 0)], 2.0)[0].offset == 0   # no RequireStable
    committed = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"})
    with pytest.raises(KafkaException) as e:
        committed.committed([TopicPartition("t", 0)], 2.0)      # RequireStable: waits for the transaction
    assert e.value.error.code() == KafkaError._TIMED_OUT
    p.commit_transaction()
    assert committed.committed([TopicPartition("t", 0)], 5.0)[0].offset == 5


def test_incremental_assign_and_unassign_change_only_the_named_partitions():
    c = cluster()
    c.create_topic("u", partitions=2, replication_factor=3)
    reader = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "r"})
    reader.incremental_assign([TopicPartition("u", 0)])
    reader.incremental_assign([TopicPartition("u", 1), TopicPartition("t", 0)])
    assert reader.assignment() == [TopicPartition("t", 0), TopicPartition("u", 0), TopicPartition("u", 1)]
    with pytest.raises(KafkaException) as e:
        reader.incremental_assign([TopicPartition("u", 0)])
    assert e.value.error.code() == KafkaError._CONFLICT
    reader.incremental_unassign([TopicPartition("u", 0)])
    assert reader.assignment() == [TopicPartition("t", 0), TopicPartition("u", 1)]
    with pytest.raises(KafkaException) as e:
        reader.incremental_unassign([TopicPartition("u", 0)])
    assert e.value.error.code() == KafkaError._INVALID_ARG
    assert reader.memberid() is None                             # never joined a group
    reader.close()
    with pytest.raises(RuntimeError):
        reader.poll(0)


def test_producer_list_topics_answers_metadata():
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap})
    assert list(p.list_topics("t").topics["t"].partitions) == [0]


def test_producer_close_aborts_the_open_transaction_and_refuses_calls_after():
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "closing"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"never", partition=0)
    p.flush()
    assert c.transaction_state("closing")["state"] == "Ongoing"
    assert p.close() is True
    c.run_until_idle()
    assert c.transaction_state("closing")["state"] == "CompleteAbort"
    with pytest.raises(RuntimeError, match="closed"):
        p.produce("t", value=b"x")
    assert p.close() is True


@pytest.mark.parametrize("dialect,epochs,add_partitions", [("librdkafka", [0, 0, 0], 3), ("java", [1, 2, 3], 0)])
def test_transaction_protocol_on_a_transaction_version_2_cluster(dialect, epochs, add_partitions):
    """librdkafka 2.x ends every transaction the classic way on any cluster (AddPartitionsToTxn, EndTxn below v5:
    one epoch for every transaction); Kafka's Java client 4.x speaks KIP-890 part 2 when the cluster finalizes
    transaction.version 2 (the leader adds the partition, every EndTxn bumps the epoch).  Both on real Kafka:
    tests/test_differential.py and tests/test_java_client.py."""
    c = cluster(**{"transaction.version": 2})
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tv2", "sim.client.dialect": dialect})
    p.init_transactions()
    seen = []
    for i in range(3):
        p.begin_transaction()
        p.produce("t", value=b"%d" % i, partition=0)
        p.commit_transaction()
        seen.append(c.transaction_state("tv2")["producer_epoch"])
    assert seen == epochs
    # the client's own AddPartitionsToTxn requests (one per transaction, and retries of CONCURRENT_TRANSACTIONS
    # while the previous one completes); the leaders' own are verify-only for a classic client
    own = c.trace.filter(api="AddPartitionsToTxn", contains=f"got AddPartitionsToTxn from {p.name}")
    assert len(own) >= add_partitions and (add_partitions or not own)
    verify_only = c.trace.filter(api="AddPartitionsToTxn", contains="verify-only")
    assert bool(verify_only) == (dialect == "librdkafka")
    assert any(("speaks it" if dialect == "java" else "does not") in e.narration for e in c.trace)


@pytest.mark.parametrize("dialect, code, text", [
    ("librdkafka", KafkaError._TRANSPORT, "Local: Broker transport failure"),   # rd_kafka_broker_fail
    ("java", KafkaError.NETWORK_EXCEPTION, "network exception")])                # NetworkException
def test_a_record_lost_with_its_connection_is_reported_in_the_dialects_words(dialect, code, text):
    """No retries, the Produce response lost: the record is in the log, and the delivery report says the
    connection broke -- librdkafka with its local _TRANSPORT (-195), the Java client with NETWORK_EXCEPTION."""
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": False, "retries": 0,
                  "sim.client.dialect": dialect})
    reports = []
    p.produce("t", value=b"x", on_delivery=lambda err, msg: reports.append(err))
    c.drop_next("Produce", response=True)
    p.flush()
    assert [(e.code(), e.str()) for e in reports] == [(code, text)]
    assert [r.value for b in c.log("t", 0).batches for r in b.records] == [b"x"]


def test_a_topic_that_never_appears_fails_its_records_and_the_commit_after_the_propagation_time():
    """rd_kafka_topic_set_notexists: once topic.metadata.propagation.max.ms has passed since the topic was first
    produced to, a Metadata answer without it marks it non-existent: its waiting record fails with
    UNKNOWN_TOPIC_OR_PART, produce() to it raises _UNKNOWN_TOPIC, and the failure is only counted (txn_dr_fails),
    so the transaction stays open and commit_transaction() refuses with _INCONSISTENT, abortable."""
    c = cluster(**{"auto.create.topics.enable": False})
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "app-1",
                  "topic.metadata.propagation.max.ms": 1000})
    p.init_transactions()
    p.begin_transaction()
    reports = []
    p.produce("ghost", value=b"x", on_delivery=lambda err, msg: reports.append((c.now, err)))
    p.produce("t", value=b"y", on_delivery=lambda err, msg: reports.append((c.now, err)))
    start = c.now
    p.flush(10)
    by_error = {None if e is None else e.name(): at for at, e in reports}
    assert set(by_error) == {None, "UNKNOWN_TOPIC_OR_PART"}
    assert by_error["UNKNOWN_TOPIC_OR_PART"] - start >= 1000
    assert c.transaction_state("app-1")["state"] == "Ongoing"
    with pytest.raises(KafkaException) as e:
        p.produce("ghost", value=b"again")
    assert e.value.args[0].code() == KafkaError._UNKNOWN_TOPIC
    with pytest.raises(KafkaException) as e:
        p.produce("t", value=b"z", partition=3)          # rd_kafka_msg_partitioner: no such partition
    assert e.value.args[0].code() == KafkaError._UNKNOWN_PARTITION and not e.value.args[0].retriable()
    with pytest.raises(KafkaException) as e:
        p.commit_transaction()
    err = e.value.args[0]
    assert (err.code(), err.txn_requires_abort()) == (KafkaError._INCONSISTENT, True)
    assert str(err.str()).startswith("1 message(s) failed delivery")
    p.abort_transaction()
    p.begin_transaction()
    p.produce("t", value=b"next")
    p.commit_transaction()
    c.run_until_idle()
    assert c.transaction_state("app-1")["state"] == "CompleteCommit"
