"""A transaction made abortable while commit_transaction() runs fails the call only once every record of the
producer is reported: librdkafka's commit flushes first and looks at the state after (rd_kafka_commit_transaction:
rd_kafka_flush, then rd_kafka_txn_op_commit_transaction), the abortable error having purged only the queued records
(rd_kafka_txn_set_abortable_error0); Kafka's Java client keeps its EndTxn, which fails with the error, while a batch
is incomplete (TransactionManager.nextRequest).  Before, the lab's commit raised as soon as the state changed, with
a batch still in flight and its delivery report not yet served."""
import pytest

from txnlab import Cluster, Producer
from txnlab.errors import KafkaError, KafkaException
from txnlab.protocol.errors import Errors

DELAY_MS = 5_000


def setup(dialect, **cfg):
    """Two topics led by different brokers: "small" refuses records over 1000 bytes; the next Produce answer from
    the leader of "slow" is held DELAY_MS by the network."""
    c = Cluster(brokers=2, seed=1)
    c.create_topic("small", config={"max.message.bytes": "1000"})
    c.create_topic("slow")
    assert c.leader("small") != c.leader("slow")
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "linger.ms": 0,
                  "sim.client.dialect": dialect, **cfg})
    p.init_transactions()
    p.begin_transaction()                   # (both partitions known and registered once)
    p.produce("slow", value=b"w")
    p.produce("small", value=b"w")
    p.commit_transaction()
    p.begin_transaction()
    reports = []
    c.delay_next("Produce", DELAY_MS, response=True, src=f"broker-{c.leader('slow')}")
    on_delivery = lambda err, msg: reports.append((msg.topic(), None if err is None else err.code()))  # noqa: E731
    p.produce("slow", value=b"s", on_delivery=on_delivery)
    p.produce("small", value=b"x" * 2000, on_delivery=on_delivery)
    return c, p, reports


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_commit_raises_the_abortable_error_after_the_batch_in_flight_is_answered(dialect):
    c, p, reports = setup(dialect)
    start = c.kernel.now
    with pytest.raises(KafkaException) as raised:
        p.commit_transaction()
    err = raised.value.args[0]
    assert (err.code(), err.txn_requires_abort(), err.retriable()) == (Errors.MESSAGE_TOO_LARGE, True, False)
    # the call returned only once the held answer came: every record reported, the one in flight written
    assert c.kernel.now - start >= DELAY_MS
    assert sorted(reports) == [("slow", None), ("small", Errors.MESSAGE_TOO_LARGE)]
    assert len(p) == 0
    p.abort_transaction()
    p.begin_transaction()
    p.produce("slow", value=b"next")
    p.commit_transaction()


def test_librdkafka_commit_timing_out_while_the_batch_is_in_flight_is_retriable_then_abortable():
    """The flush is limited by the call's timeout: librdkafka answers a retriable _TIMED_OUT naming what is left;
    called again (resumed), the commit finds the transaction abortable."""
    c, p, reports = setup("librdkafka")
    with pytest.raises(KafkaException) as raised:
        p.commit_transaction(1.0)
    err = raised.value.args[0]
    assert (err.code(), err.retriable(), err.txn_requires_abort()) == (KafkaError._TIMED_OUT, True, False)
    assert "Failed to flush all outstanding messages within the API timeout: 1 message(s) remaining" in err.str()
    assert reports == [("small", Errors.MESSAGE_TOO_LARGE)]
    with pytest.raises(KafkaException) as again:
        p.commit_transaction()
    assert (again.value.args[0].code(), again.value.args[0].txn_requires_abort()) == (Errors.MESSAGE_TOO_LARGE, True)
    p.abort_transaction()
    assert sorted(reports) == [("slow", None), ("small", Errors.MESSAGE_TOO_LARGE)]
