"""Transactions end to end, as a user sees them (Kafka's TransactionsTest themes and KAFKA-EOS §7-§8)."""
import pytest

from txnlab import Cluster, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from txnlab.errors import KafkaStateError
from txnlab.protocol.errors import Errors

from helpers import read_all

SMALL = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3,
         "group.initial.rebalance.delay.ms": 0}


def make_cluster(seed=0, brokers=3, **cfg):
    conf = dict(SMALL)
    conf.update(cfg)
    c = Cluster(brokers=brokers, seed=seed, config=conf)
    c.create_topic("out", partitions=3, replication_factor=min(3, brokers))
    return c


def txn_producer(c, tid="tx-1", **cfg):
    conf = {"bootstrap.servers": c.bootstrap, "transactional.id": tid}
    conf.update(cfg)
    p = Producer(conf)
    p.init_transactions()
    return p


def test_committed_transaction_is_visible_to_read_committed():
    c = make_cluster()
    p = txn_producer(c)
    p.begin_transaction()
    for i in range(6):
        p.produce("out", key=b"k%d" % i, value=b"v%d" % i)
    p.commit_transaction()
    c.run_until_idle()
    assert sorted(read_all(c, "out")) == [b"v%d" % i for i in range(6)]
    assert sorted(read_all(c, "out", "read_uncommitted")) == [b"v%d" % i for i in range(6)]


def test_aborted_transaction_is_hidden_from_read_committed_only():
    c = make_cluster()
    p = txn_producer(c)
    p.begin_transaction()
    for i in range(4):
        p.produce("out", key=b"k%d" % i, value=b"a%d" % i)
    p.flush()
    p.abort_transaction()
    p.begin_transaction()
    p.produce("out", key=b"k0", value=b"ok")
    p.commit_transaction()
    c.run_until_idle()
    assert read_all(c, "out") == [b"ok"]
    assert sorted(read_all(c, "out", "read_uncommitted")) == sorted([b"a0", b"a1", b"a2", b"a3", b"ok"])
    # the ABORT markers and the aborted index are in the log
    markers = [b for p_ in range(3) for b in c.log("out", p_).batches if b.is_control]
    assert {b.control_type.name for b in markers} == {"ABORT", "COMMIT"}


def test_undecided_data_is_invisible_and_the_lso_stops_at_the_open_transaction():
    c = make_cluster()
    c.create_topic("one", partitions=1, replication_factor=3)
    plain = Producer({"bootstrap.servers": c.bootstrap})
    plain.produce("one", value=b"before")
    plain.flush()
    p = txn_producer(c)
    p.begin_transaction()
    p.produce("one", value=b"open-1")
    p.flush()
    plain.produce("one", value=b"after")        # non-transactional, but behind the open transaction
    plain.flush()
    c.run_until_idle()
    st = c.partition_state("one", 0)
    assert (st["lso"], st["hw"], st["leo"]) == (1, 3, 3)
    assert read_all(c, "one") == [b"before"]
    assert read_all(c, "one", "read_uncommitted") == [b"before", b"open-1", b"after"]
    rc = Consumer({"group.id": "lab-reader", "enable.auto.commit": False, "bootstrap.servers": c.bootstrap, "isolation.level": "read_committed"})
    ru = Consumer({"group.id": "lab-reader", "enable.auto.commit": False, "bootstrap.servers": c.bootstrap, "isolation.level": "read_uncommitted"})
    assert rc.get_watermark_offsets(TopicPartition("one", 0)) == (0, 1)
    assert ru.get_watermark_offsets(TopicPartition("one", 0)) == (0, 3)
    p.commit_transaction()
    c.run_until_idle()
    assert read_all(c, "one") == [b"before", b"open-1", b"after"]
    assert rc.get_watermark_offsets(TopicPartition("one", 0)) == (0, 4)


def test_transaction_over_three_partitions_of_two_topics_plus_offsets_is_all_or_nothing():
    c = make_cluster()
    c.create_topic("audit", partitions=2, replication_factor=3)
    c.create_topic("in", partitions=1, replication_factor=3)
    src = Producer({"bootstrap.servers": c.bootstrap})
    src.produce("in", value=b"x")
    src.flush()
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["in"])
    msg = consumer.poll(10)
    assert msg is not None and msg.value() == b"x"
    for commit in (False, True):
        p = txn_producer(c, tid=f"atomic-{commit}")
        p.begin_transaction()
        p.produce("out", value=b"o-%s" % str(commit).encode(), partition=0)
        p.produce("out", value=b"o-%s" % str(commit).encode(), partition=1)
        p.produce("audit", value=b"a-%s" % str(commit).encode(), partition=1)
        p.send_offsets_to_transaction([TopicPartition("in", 0, 1)], consumer.consumer_group_metadata())
        (p.commit_transaction if commit else p.abort_transaction)()
        c.run_until_idle()
        outs = read_all(c, "out") + read_all(c, "audit")
        committed = consumer.committed([TopicPartition("in", 0)])[0].offset
        if commit:
            assert sorted(outs) == [b"a-True", b"o-True", b"o-True"] and committed == 1
        else:
            assert outs == [] and committed < 0


def test_consume_transform_produce_with_aborts_yields_each_record_once():
    c = make_cluster()
    c.create_topic("in", partitions=1, replication_factor=3)
    src = Producer({"bootstrap.servers": c.bootstrap})
    n = 60
    for i in range(n):
        src.produce("in", value=b"%d" % i)
    src.flush()
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "copier", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe(["in"])
    p = txn_producer(c, tid="copier-0")
    rounds = 0
    while rounds < 200:
        rounds += 1
        batch = consumer.consume(7, 1.0)
        if not batch:
            if consumer.position([TopicPartition("in", 0)])[0].offset >= n:
                break
            continue
        p.begin_transaction()
        for msg in batch:
            p.produce("out", value=msg.value(), partition=0)
        offsets = consumer.position(consumer.assignment())
        p.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata())
        if rounds % 3 == 0:
            p.abort_transaction()
            for tp in consumer.committed(consumer.assignment()):    # rewind: KAFKA-17582
                consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))
        else:
            p.commit_transaction()
    c.run_until_idle()
    out = read_all(c, "out")
    assert out == [b"%d" % i for i in range(n)]


def test_second_producer_with_the_same_transactional_id_fences_the_first():
    c = make_cluster()
    old = txn_producer(c, tid="zombie")
    old.begin_transaction()
    old.produce("out", value=b"zombie-write", partition=0)
    old.flush()
    new = txn_producer(c, tid="zombie")        # bumps the epoch, aborts the old transaction
    assert new.transaction_manager.producer_epoch >= old.transaction_manager.producer_epoch + 1
    with pytest.raises(KafkaException) as e:
        old.commit_transaction()
    # librdkafka (confluent-kafka) folds PRODUCER_FENCED / INVALID_PRODUCER_EPOCH into the fatal _FENCED
    assert e.value.error.fatal()
    assert (e.value.error.name(), e.value.error.code()) == ("_FENCED", KafkaError._FENCED) == ("_FENCED", -144)
    assert any("librdkafka: PRODUCER_FENCED is fatal (_FENCED)" in ev.narration for ev in c.trace)
    with pytest.raises(KafkaException) as e:
        old.produce("out", value=b"after-fencing", partition=0)
    assert e.value.error.code() == KafkaError._FATAL      # librdkafka: produce() on a fatally failed producer
    new.begin_transaction()
    new.produce("out", value=b"new-write", partition=0)
    new.commit_transaction()
    c.run_until_idle()
    assert read_all(c, "out") == [b"new-write"]


def test_fenced_producer_send_and_send_offsets_fail():
    c = make_cluster()
    c.create_topic("in", partitions=1, replication_factor=3)
    old = txn_producer(c, tid="z2")
    new = txn_producer(c, tid="z2")
    old.begin_transaction()
    old.produce("out", value=b"late", partition=1)
    with pytest.raises(KafkaException):
        old.flush()
        old.commit_transaction()
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g2"})
    old2 = txn_producer(c, tid="z3")
    txn_producer(c, tid="z3")
    old2.begin_transaction()
    with pytest.raises(KafkaException) as e:
        old2.send_offsets_to_transaction([TopicPartition("in", 0, 0)], consumer.consumer_group_metadata())
    assert e.value.error.fatal()
    del new


def test_second_init_transactions_is_a_state_error():
    c = make_cluster()
    p = txn_producer(c)
    with pytest.raises(KafkaStateError):
        p.init_transactions()


def test_api_misuse_raises_clear_state_errors():
    c = make_cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "m"})
    with pytest.raises(KafkaStateError, match="init_transactions"):
        p.begin_transaction()
    p.init_transactions()
    with pytest.raises(KafkaStateError, match="begin_transaction"):
        p.commit_transaction()
    with pytest.raises(KafkaStateError, match="Erroneous state .*begin_transaction"):   # librdkafka: _STATE
        p.produce("out", value=b"x")
    plain = Producer({"bootstrap.servers": c.bootstrap})
    with pytest.raises(KafkaException, match="transactional.id") as e:     # librdkafka: _NOT_CONFIGURED
        plain.begin_transaction()
    assert e.value.args[0].code() == KafkaError._NOT_CONFIGURED


def test_transaction_timeout_larger_than_broker_max_is_rejected():
    c = make_cluster(**{"transaction.max.timeout.ms": 10_000})
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "t", "transaction.timeout.ms": 20_000})
    with pytest.raises(KafkaException) as e:
        p.init_transactions()
    assert e.value.error.name() == "INVALID_TRANSACTION_TIMEOUT" and e.value.error.fatal()


def test_stuck_transaction_is_aborted_at_its_timeout_and_the_producer_is_fenced():
    c = make_cluster(**{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 1_000})
    p = txn_producer(c, tid="slow", **{"transaction.timeout.ms": 3_000})
    p.begin_transaction()
    p.produce("out", value=b"never", partition=0)
    p.flush()
    c.run_until_idle()
    assert c.partition_state("out", 0)["lso"] == 0
    c.advance(5_000)                               # timeout + at most one reaper interval
    st = c.transaction_state("slow")
    assert st["state"] == "CompleteAbort" and st["producer_epoch"] == 1
    assert c.partition_state("out", 0)["lso"] == c.partition_state("out", 0)["hw"]
    with pytest.raises(KafkaException) as e:
        p.commit_transaction()
    assert e.value.error.code() == KafkaError._FENCED and e.value.error.fatal()
    assert read_all(c, "out") == []


def test_java_dialect_keeps_the_brokers_fencing_code():
    c = make_cluster()
    old = txn_producer(c, tid="zombie", **{"sim.client.dialect": "java"})
    old.begin_transaction()
    old.produce("out", value=b"zombie-write", partition=0)
    old.flush()
    txn_producer(c, tid="zombie")
    with pytest.raises(KafkaException) as e:
        old.commit_transaction()
    assert e.value.error.fatal() and e.value.error.name() in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")
    assert any("java: " in ev.narration and "is fatal" in ev.narration for ev in c.trace)


def test_marker_partition_leader_down_pins_the_lso_until_it_returns():
    c = make_cluster(**{"unclean.leader.election.enable": False})
    c.create_topic("solo", partitions=1, replication_factor=1)
    p = txn_producer(c)
    p.begin_transaction()
    p.produce("solo", value=b"s")
    p.produce("out", value=b"o", partition=0)
    p.flush()
    solo_leader = c.leader("solo", 0)
    coord = c.transaction_coordinator("tx-1")
    if solo_leader == coord or solo_leader == c.leader("out", 0):
        pytest.skip("placement put the coordinator on the solo partition's broker for this seed")
    c.crash(solo_leader)
    p.commit_transaction()                          # EndTxn succeeds: the decision is durable
    c.advance(2_000)
    assert c.transaction_state("tx-1")["state"] == "PrepareCommit"
    assert read_all(c, "out") == [b"o"]             # the other partition committed
    c.restart(solo_leader)
    c.run_until(lambda: c.transaction_state("tx-1")["state"] == "CompleteCommit", timeout_ms=60_000)
    c.run_until_idle()
    assert read_all(c, "solo") == [b"s"]


@pytest.mark.parametrize("when", ["before-prepare", "after-prepare", "after-complete"])
def test_coordinator_crash_during_commit(when):
    c = make_cluster(seed=3)
    p = txn_producer(c, tid="crashy")
    p.begin_transaction()
    for i in range(3):
        p.produce("out", value=b"c%d" % i, partition=i)
    p.flush()
    coord = c.transaction_coordinator("crashy")
    if when == "before-prepare":
        c.drop_next("EndTxn")                         # the request never arrives
        c.crash(coord)
    elif when == "after-prepare":
        # stop right after PrepareCommit is durable, before any marker is acknowledged
        p.sender.begin_end_txn(True)
        c.run_until(lambda: (c.transaction_state("crashy") or {}).get("state") == "PrepareCommit")
        c.crash(coord)
    else:
        p.commit_transaction()
        c.run_until_idle()
        c.crash(coord)
    if when != "after-complete":
        p.commit_transaction()          # the client's commit succeeds once a coordinator answers
    c.run_until(lambda: (c.transaction_state("crashy") or {}).get("state") == "CompleteCommit", timeout_ms=120_000)
    c.restart(coord)
    c.run_until_idle()
    assert sorted(read_all(c, "out")) == [b"c0", b"c1", b"c2"]
    if when == "after-prepare":
        assert any("the new coordinator finishes it" in e.narration for e in c.trace)


def test_unstable_offset_commit_until_the_marker_lands():
    c = make_cluster()
    c.create_topic("in", partitions=1, replication_factor=3)
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g-u", "enable.auto.commit": False})
    p = txn_producer(c)
    p.begin_transaction()
    p.send_offsets_to_transaction([TopicPartition("in", 0, 5)], consumer.consumer_group_metadata())
    from txnlab.protocol import messages as m
    from helpers import RawClient
    raw = RawClient(c)
    coord = c.group_coordinator("g-u")
    r = raw.call(coord, m.OffsetFetchRequest("g-u", (("in", 0),), require_stable=True))
    assert r.offsets[("in", 0)][3] == Errors.UNSTABLE_OFFSET_COMMIT or r.error == Errors.UNSTABLE_OFFSET_COMMIT
    p.commit_transaction()
    c.run_until_idle()
    r = raw.call(coord, m.OffsetFetchRequest("g-u", (("in", 0),), require_stable=True))
    assert r.offsets[("in", 0)][:1] == (5,)


def test_epoch_exhaustion_rotates_the_producer_id():
    c = make_cluster()
    p = txn_producer(c, tid="old-one")
    first_pid = p.transaction_manager.producer_id
    coord = c.broker(c.transaction_coordinator("old-one")).txn_coordinator
    err, cache = coord.state_manager.lookup("old-one")
    cache.metadata["old-one"].producer_epoch = 32766          # as if it had been restarted 32k times
    p2 = txn_producer(c, tid="old-one")
    assert p2.transaction_manager.producer_id != first_pid
    assert p2.transaction_manager.producer_epoch == 0


def test_transactional_id_expires_with_a_tombstone():
    c = make_cluster(**{"transactional.id.expiration.ms": 60_000,
                        "transaction.remove.expired.transaction.cleanup.interval.ms": 10_000})
    p = txn_producer(c, tid="forgotten")
    p.begin_transaction()
    p.produce("out", value=b"x", partition=0)
    p.commit_transaction()
    c.run_until_idle()
    c.advance(80_000)
    assert c.transaction_state("forgotten") is None
    from txnlab.coordinator.transaction_log import decode_key
    part = c.broker(c.transaction_coordinator("forgotten")).txn_coordinator.state_manager.partition_for("forgotten")
    recs = [(decode_key(r.key), r.value) for b in c.log("__transaction_state", part).batches for r in b.records]
    assert recs[-1] == ("forgotten", None)


def test_operations_time_out_with_all_brokers_down():
    c = make_cluster()
    p = txn_producer(c)
    for b in c.brokers:
        c.crash(b)
    p.begin_transaction()
    p.produce("out", value=b"x", partition=0)
    with pytest.raises(KafkaException) as e:
        p.commit_transaction(5)
    assert e.value.error.name() == "_TIMED_OUT" and e.value.error.retriable()
    p2 = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "down"})
    with pytest.raises(KafkaException) as e:
        p2.init_transactions(5)
    assert e.value.error.retriable()
