"""librdkafka's idempotent and transactional producer after OUT_OF_ORDER_SEQUENCE_NUMBER (rd_kafka_handle_Produce_error
and rd_kafka_handle_idempotent_Produce_error, src/rdkafka_request.c).  At the head of the line (the batch carries the
next sequence to be acknowledged) it is a sequence desynchronization, fatal for both (rd_kafka_idemp_set_fatal_error);
past it, behind a failed request, the idempotent producer bumps its own epoch (tests/test_idempotent_drain.py) and the
transactional one fails the transaction with an abortable error that bumps the epoch on abort
(rd_kafka_txn_set_abortable_error_with_bump).  Kafka's Java client bumps and retries, or aborts, or just retries."""
import pytest

from txnlab import Cluster, Producer
from txnlab.errors import KafkaError, KafkaException
from txnlab.protocol.errors import Errors

from helpers import read_all, values_in_log

OOS = Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def forget_sequences(c, p):
    """The leader's producer state now says the producer is further on than it is (state lost or desynchronized):
    its next batch, the head of its line, is refused with OUT_OF_ORDER_SEQUENCE_NUMBER."""
    entry = c.log("t", 0).producer_state.last_entry(p.transaction_manager.producer_id)
    entry.batch_metadata[-1].last_seq = 10


def desynchronized_idempotent_producer():
    """An idempotent producer that wrote a0..a2, whose leader now takes it for further on (forget_sequences)."""
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t")
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True})
    for i in range(3):
        p.produce("t", value=b"a%d" % i)
    p.flush()
    forget_sequences(c, p)
    return c, p


def report(out):
    return lambda err, msg: out.append((msg.value(), err))


def test_librdkafka_idempotent_producer_desynchronized_is_fatal():
    c, p = desynchronized_idempotent_producer()
    out = []
    p.produce("t", value=b"after", on_delivery=report(out))
    with pytest.raises(KafkaException) as raised:
        p.flush()
    err = raised.value.args[0]
    assert (err.code(), err.fatal(), err.retriable(), err.txn_requires_abort()) == (OOS, True, False, False)
    assert "failed due to sequence desynchronization with broker 0" in err.str() and "base seq 3" in err.str()
    # the record's delivery report carries the broker's error; nothing was written, nothing is retried
    assert [(v, e.code(), e.fatal()) for v, e in out] == [(b"after", OOS, False)]
    assert values_in_log(c, "t") == [b"a0", b"a1", b"a2"]
    with pytest.raises(KafkaException) as again:
        p.produce("t", value=b"more")
    assert again.value.args[0].code() == KafkaError._FATAL
    c.run_until(lambda: False, 5_000)
    assert values_in_log(c, "t") == [b"a0", b"a1", b"a2"]


def transactional(c, dialect, **cfg):
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "linger.ms": 0,
                  "batch.num.messages": 1, "sim.client.dialect": dialect, **cfg})
    p.init_transactions()
    return p


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_transactional_producer_desynchronized(dialect):
    """librdkafka: fatal, with the broker's code (rd_kafka_txn_set_fatal_error); Java: the transaction aborts."""
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t")
    p = transactional(c, dialect)
    p.begin_transaction()
    for i in range(3):
        p.produce("t", value=b"a%d" % i)
    p.commit_transaction()
    forget_sequences(c, p)
    epoch = p.transaction_manager.producer_epoch
    p.begin_transaction()
    out = []
    p.produce("t", value=b"after", on_delivery=report(out))
    with pytest.raises(KafkaException) as raised:
        p.commit_transaction()
    err = raised.value.args[0]
    p.poll(0)
    assert [(v, e.code()) for v, e in out] == [(b"after", OOS)]
    if dialect == "librdkafka":
        assert (err.code(), err.fatal(), err.txn_requires_abort()) == (OOS, True, False)
        assert "sequence desynchronization" in err.str()
        with pytest.raises(KafkaException) as again:
            p.abort_transaction()
        assert again.value.args[0].fatal()
        assert p.transaction_manager.producer_epoch == epoch
    else:
        assert (err.code(), err.fatal(), err.txn_requires_abort()) == (OOS, False, True)
        p.abort_transaction()
        assert p.transaction_manager.producer_epoch == epoch + 1
    assert read_all(c, "t") == [b"a0", b"a1", b"a2"]


def refused_first(dialect):
    """As tests/test_idempotent_drain.py, in a transaction (m0, then m1 ... m5): m1 is refused with NOT_ENOUGH_REPLICAS while m2 ... m5
    wait on the wire; they reach the leader after the ISR is whole again and are refused as a gap."""
    c = Cluster(brokers=2, seed=7)
    c.create_topic("t", partitions=1, replication_factor=2, config={"min.insync.replicas": 2})
    p = transactional(c, dialect, **{"transaction.timeout.ms": 300_000})
    p.begin_transaction()
    p.produce("t", value=b"m0")
    p.flush()
    follower = 1 - c.leader("t")
    c.crash(follower)
    c.run_until(lambda: len(c.partition_state("t")["isr"]) == 1, 60_000)
    c.restart(follower)
    out = []
    for i in range(1, 6):
        p.produce("t", value=b"m%d" % i, on_delivery=report(out))
    c.run_until(lambda: len([m for m in c.in_flight() if m.api == "Produce" and not m.is_response]) == 5, 5_000)
    second = [m for m in c.in_flight() if m.api == "Produce" and not m.is_response][1]
    c.delay_message(second.id, 700)
    return c, p, out


def test_librdkafka_transaction_with_a_gap_must_be_aborted_and_bumps_the_epoch():
    c, p, out = refused_first("librdkafka")
    epoch = p.transaction_manager.producer_epoch
    with pytest.raises(KafkaException) as raised:
        p.commit_transaction()
    err = raised.value.args[0]
    assert (err.code(), err.fatal(), err.retriable(), err.txn_requires_abort()) == (OOS, False, False, True)
    assert err.str() == "skipped sequence numbers"
    p.abort_transaction()
    p.poll(0)
    # every record of the transaction was purged (rd_kafka_txn_set_abortable_error0, then abort_transaction)
    assert sorted((v, e.code()) for v, e in out) == [(b"m%d" % i, KafkaError._PURGE_QUEUE) for i in range(1, 6)]
    # the abort asked the coordinator for the bump: InitProducerId with the current producer id and epoch (KIP-360)
    assert p.transaction_manager.producer_epoch == epoch + 1
    assert c.trace.filter(api="InitProducerId", contains=f"epoch {epoch}")
    assert read_all(c, "t") == []                   # m0 was in the aborted transaction too
    # the producer goes on: the next transaction starts at sequence 0 under the new epoch
    p.begin_transaction()
    p.produce("t", value=b"n")
    p.commit_transaction()
    assert read_all(c, "t") == [b"n"]
    assert [(b.producer_epoch, b.base_sequence) for b in c.log("t", 0).batches if not b.is_control][-1] == \
        (epoch + 1, 0)


def test_java_transaction_with_a_gap_retries_and_commits():
    c, p, out = refused_first("java")
    epoch = p.transaction_manager.producer_epoch
    p.commit_transaction()
    p.poll(0)
    assert sorted((v, e) for v, e in out) == [(b"m%d" % i, None) for i in range(1, 6)]
    assert read_all(c, "t") == [b"m%d" % i for i in range(6)]
    assert p.transaction_manager.producer_epoch == epoch


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_records_queued_behind_a_failed_batch_are_purged(dialect):
    """A batch refused for good (MESSAGE_TOO_LARGE) makes the transaction abortable.  librdkafka purges the queued
    records then (rd_kafka_txn_set_abortable_error0: rd_kafka_purge, _PURGE_QUEUE); Kafka's Java client fails them
    with the transaction's error (abortUndrainedBatches)."""
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t", config={"max.message.bytes": 200})
    p = transactional(c, dialect, **{"max.in.flight.requests.per.connection": 1})
    p.begin_transaction()
    out = []
    p.produce("t", value=b"x" * 500, on_delivery=report(out))        # refused by the leader
    p.produce("t", value=b"small", on_delivery=report(out))          # waits behind it (one request in flight)
    with pytest.raises(KafkaException) as raised:
        p.commit_transaction()
    err = raised.value.args[0]
    assert (err.code(), err.txn_requires_abort(), err.fatal()) == (Errors.MESSAGE_TOO_LARGE, True, False)
    p.abort_transaction()
    p.poll(0)
    got = dict((v[:5], (e.code(), e.txn_requires_abort())) for v, e in out)
    # librdkafka's delivery report carries the bare code (rd_kafka_dr_msgq0); Java's callback gets the exception
    assert got[b"xxxxx"] == (Errors.MESSAGE_TOO_LARGE, dialect != "librdkafka")
    assert got[b"small"] == ((KafkaError._PURGE_QUEUE, False) if dialect == "librdkafka" else
                             (Errors.MESSAGE_TOO_LARGE, True))
    assert read_all(c, "t") == []


def test_librdkafka_rewound_sequence_is_fatal():
    """A refusal of a batch below the next sequence to be acknowledged ("rewound sequence number") is fatal too.
    (Here the producer's own bookkeeping is moved on while the batch is in flight.)"""
    c, p = desynchronized_idempotent_producer()
    p.produce("t", value=b"after")
    c.run_until(lambda: any(m.api == "Produce" and not m.is_response for m in c.in_flight()), 1_000)
    p.transaction_manager.seq(("t", 0)).last_acked_sequence = 5
    with pytest.raises(KafkaException) as raised:
        p.flush()
    err = raised.value.args[0]
    assert (err.code(), err.fatal()) == (OOS, True)
    assert "with rewound sequence number on broker 0" in err.str() and "base seq 3 < next seq 6" in err.str()
