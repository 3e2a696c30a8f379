"""More of Kafka's TransactionsTest / TransactionsExpirationTest, as user-visible scenarios."""
import pytest

from txnlab import Cluster, Consumer, KafkaException, Producer, TopicPartition

from helpers import read_all

CFG = {"transaction.state.log.num.partitions": 2, "offsets.topic.num.partitions": 2}


def test_markers_for_twenty_partitions_on_one_leader_go_in_one_request():
    c = Cluster(brokers=1, seed=0, config=CFG)
    c.create_topic("wide", partitions=20)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "wide"})
    p.init_transactions()
    p.begin_transaction()
    for i in range(20):
        p.produce("wide", value=b"%d" % i, partition=i)
    p.commit_transaction()
    c.run_until_idle()
    marker_requests = [e for e in c.trace.filter(api="WriteTxnMarkers") if not e.is_response]
    assert len(marker_requests) == 1
    assert sorted(read_all(c, "wide")) == sorted(b"%d" % i for i in range(20))


def test_a_waiting_read_committed_fetch_gets_only_committed_records():
    c = Cluster(brokers=1, seed=0, config=CFG)
    c.create_topic("t")
    consumer = Consumer({"group.id": "lab-reader", "enable.auto.commit": False, "bootstrap.servers": c.bootstrap, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition("t", 0, 0)])
    assert consumer.poll(0.1) is None                     # its fetch now waits at the broker
    a = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "A"})
    b = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "B"})
    a.init_transactions()
    b.init_transactions()
    a.begin_transaction()
    b.begin_transaction()
    a.produce("t", value=b"a0")                           # offset 0
    a.flush()
    b.produce("t", value=b"b1")                           # offset 1
    b.flush()
    a.produce("t", value=b"a2")                           # offset 2
    a.flush()
    a.abort_transaction()                                 # marker at 3
    b.commit_transaction()                                # marker at 4
    c.run_until_idle()
    got = []
    for _ in range(10):
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append((msg.offset(), msg.value()))
    assert got == [(1, b"b1")]
    assert consumer.position([TopicPartition("t", 0)])[0].offset == 5


def test_after_transactional_id_expiry_a_send_fails_and_abort_recovers():
    c = Cluster(brokers=1, seed=0, config=dict(CFG, **{
        "transactional.id.expiration.ms": 30_000,
        "transaction.remove.expired.transaction.cleanup.interval.ms": 5_000}))
    c.create_topic("t")
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "sleepy"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"first")
    p.commit_transaction()
    c.advance(60_000)
    assert c.transaction_state("sleepy") is None
    p.begin_transaction()
    p.produce("t", value=b"lost")
    with pytest.raises(KafkaException) as e:
        p.commit_transaction()
    assert e.value.error.name() == "INVALID_PRODUCER_ID_MAPPING" and e.value.error.txn_requires_abort()
    p.abort_transaction()                                 # recovers: a fresh producer id/epoch
    p.begin_transaction()
    p.produce("t", value=b"again")
    p.commit_transaction()
    c.run_until_idle()
    assert read_all(c, "t") == [b"first", b"again"]


def test_a_batch_that_expires_while_its_leader_is_down_bumps_the_epoch():
    c = Cluster(brokers=2, seed=4, config=dict(CFG, **{"transaction.state.log.replication.factor": 1,
                                                       "transaction.state.log.min.isr": 1}))
    c.create_topic("solo", partitions=1, replication_factor=1)
    Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "probe"}).init_transactions()
    leader = c.leader("solo", 0)
    tid = next(t for t in (f"exp-{i}" for i in range(50)) if c.transaction_coordinator(t) != leader)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": tid, "delivery.timeout.ms": 5_000,
                  "request.timeout.ms": 2_000})
    p.init_transactions()
    epoch0 = p.transaction_manager.producer_epoch
    p.begin_transaction()
    c.crash(leader)
    p.produce("solo", value=b"x")                         # sent to a leader that is gone; retried until it expires
    with pytest.raises(KafkaException) as e:
        p.commit_transaction()
    assert e.value.error.txn_requires_abort()
    c.restart(leader)
    c.advance(15_000)
    p.abort_transaction()
    assert p.transaction_manager.producer_epoch == epoch0 + 1


def _txn_cluster():
    c = Cluster(brokers=1, seed=2, config=CFG)
    c.create_topic("t")
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "slow"})
    return c, p


def test_a_commit_that_timed_out_is_resumed_by_calling_commit_again():
    c, p = _txn_cluster()
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"late but committed")
    c.delay_next("EndTxn", 3_000, response=True)          # the coordinator's answer is slow
    with pytest.raises(KafkaException) as e:
        p.commit_transaction(1.0)
    assert e.value.error.name() == "_TIMED_OUT" and e.value.error.retriable()
    # librdkafka: only the same call may come next; any other transactional call conflicts
    with pytest.raises(KafkaException) as e:
        p.begin_transaction()
    assert e.value.error.name() == "_CONFLICT"
    c.advance(5_000)                                      # the commit finishes in the background meanwhile
    p.commit_transaction()                                # ... and the retry reports its success
    p.begin_transaction()
    p.produce("t", value=b"next")
    p.commit_transaction()
    c.run_until_idle()
    assert read_all(c, "t") == [b"late but committed", b"next"]


def test_an_init_that_timed_out_is_resumed_by_calling_init_again():
    c, p = _txn_cluster()
    c.delay_next("InitProducerId", 4_000, response=True)
    with pytest.raises(KafkaException) as e:
        p.init_transactions(0.5)
    assert e.value.error.name() == "_TIMED_OUT"
    p.init_transactions()                                 # waits for the same InitProducerId
    assert p.transaction_manager.producer_id >= 0
    p.begin_transaction()
    p.produce("t", value=b"ok")
    p.commit_transaction()
    c.run_until_idle()
    assert read_all(c, "t") == [b"ok"]


def test_a_record_that_expires_before_it_is_sent_fails_the_commit():
    c = Cluster(brokers=1, seed=0, config=CFG)
    c.create_topic("t")
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "t1", "delivery.timeout.ms": 2_000,
                  "linger.ms": 10_000, "sim.client.dialect": "java"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"kept")
    p.flush()
    p.produce("t", value=b"never sent")                   # lingers past delivery.timeout.ms
    c.advance(3_000)
    with pytest.raises(KafkaException) as e:
        p.commit_transaction()
    assert e.value.error.txn_requires_abort() and e.value.error.name() == "_MSG_TIMED_OUT"
    p.abort_transaction()
    c.run_until_idle()
    assert read_all(c, "t") == []                         # all or nothing: "kept" was aborted too
