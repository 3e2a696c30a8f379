"""produce()'s short path (a keyless record, stamped now, with no callback of its own, joining the open batch of
its topic) must behave exactly as the long way: the same batches, the same refusals, the same delivery reports."""
from __future__ import annotations

import pytest

from txnlab import Cluster, KafkaException, Producer
from txnlab.client.config import EPOCH_MS


def _cluster():
    c = Cluster(brokers=3, seed=1)
    c.create_topic("t", partitions=1, replication_factor=3)
    return c


def _produce_requests(c):
    return [m for m in c.in_flight() if m.api == "Produce" and not m.is_response]


def test_a_batch_that_reaches_batch_num_messages_is_sent_without_waiting_for_linger():
    """librdkafka sends a partition's messages once batch.num.messages are queued, whatever linger.ms says; the
    record that fills the batch wakes the sender, however it was produced."""
    c = _cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 1000, "batch.num.messages": 4})
    p.produce("t", b"warm-up")
    assert p.flush(30) == 0
    for i in range(4):
        p.produce("t", b"v%d" % i)
    assert c.run_until(lambda: bool(_produce_requests(c)), 100)
    (req,) = _produce_requests(c)
    (batch,) = req.payload.topic_data.values()
    assert [r.value for r in batch.records] == [b"v0", b"v1", b"v2", b"v3"]
    assert p.flush(30) == 0
    assert [r.value for b in c.log("t", 0).batches for r in b.records] == [b"warm-up", b"v0", b"v1", b"v2", b"v3"]


def test_a_record_larger_than_message_max_bytes_is_refused_while_a_batch_is_open():
    c = _cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 1000, "message.max.bytes": 1000,
                  "batch.size": 100_000})
    p.produce("t", b"first")
    c.advance(20)                       # the metadata is in: the batch is open
    p.produce("t", b"x" * 990)          # 1,000 bytes counted: the largest allowed
    with pytest.raises(KafkaException, match="Message size too large"):
        p.produce("t", b"x" * 991)
    assert p.flush(30) == 0
    assert [len(r.value) for b in c.log("t", 0).batches for r in b.records] == [5, 990]


def test_a_crashed_producer_refuses_although_its_batch_is_still_open():
    c = _cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 1000})
    p.produce("t", b"first")
    c.advance(20)
    p.produce("t", b"second")
    c.crash(p)
    with pytest.raises(KafkaException, match="crashed"):
        p.produce("t", b"third")


def test_a_transaction_that_must_abort_refuses_records_for_its_open_batch():
    """A batch of the transaction failed (its leader refused it, MESSAGE_TOO_LARGE): the transaction can only
    abort, and produce() refuses even the records that would have joined a batch already open (librdkafka:
    _STATE)."""
    c = _cluster()
    c.create_topic("small", config={"max.message.bytes": 100})
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 1000, "transactional.id": "tx"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("small", b"x" * 500)          # goes out first (its linger ends first), and is refused
    c.advance(20)
    p.produce("t", b"a")
    p.produce("t", b"b")                    # joins the open batch of t
    assert c.run_until(lambda: p.transaction_manager.state.name == "ABORTABLE_ERROR", 2000)
    with pytest.raises(KafkaException, match="must be aborted"):
        p.produce("t", b"c")
    p.abort_transaction()
    p.begin_transaction()
    p.produce("t", b"d")
    p.commit_transaction()
    # the aborted records were never sent: the open batch was purged with the transaction
    assert [r.value for b in c.log("t", 0).batches if not b.is_control for r in b.records] == [b"d"]


def test_one_batch_mixing_callbacks_reports_each_record_to_its_own():
    """Records with their own callback, records with none (the configured on_delivery) and a record with the
    application's timestamp share a batch; each report goes to the right callback, with its timestamp, and every
    latency counts from the produce() call."""
    c = _cluster()
    reports = []
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 1000,
                  "on_delivery": lambda err, msg: reports.append(("default", msg.value(), msg.timestamp()[1],
                                                                  msg.latency()))})
    p.produce("t", b"first")
    c.advance(20)
    p.produce("t", b"plain")
    p.produce("t", b"own", on_delivery=lambda err, msg: reports.append(("own", msg.value(), msg.offset())))
    p.produce("t", b"stamped", timestamp=1_600_000_000_000)
    p.produce("t", b"plain again")
    assert p.flush(30) == 0
    assert [r[:2] for r in reports] == [("default", b"first"), ("default", b"plain"), ("own", b"own"),
                                        ("default", b"stamped"), ("default", b"plain again")]
    assert reports[2][2] == 2                                   # its offset
    assert reports[3][2] == 1_600_000_000_000
    assert reports[1][2] == reports[4][2] != 1_600_000_000_000
    assert reports[1][3] == reports[3][3] == reports[4][3] > 0  # produced together, delivered together


def test_a_batch_mixing_keys_headers_timestamps_and_times_reads_back_record_by_record():
    """A batch keeps its records by column (ProducerBatch); the log reads every record back as it was produced:
    a keyed first record, headers, the application's timestamp (before the lab clock's epoch), and records
    produced at three simulated times."""
    c = _cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 50})
    p.produce("t", b"k0", key=b"key")
    c.advance(10)
    p.produce("t", b"h1", headers={"a": b"b"})
    p.produce("t", b"p2")
    c.advance(3)
    p.produce("t", b"p3")
    p.produce("t", b"k4", key=b"x")
    p.produce("t", b"ts5", timestamp=1_600_000_000_000)
    p.produce("t", b"p6")
    c.advance(2)
    p.produce("t", b"p7")
    assert p.flush(30) == 0
    (batch,) = c.log("t", 0).batches
    t0 = batch.records[0].timestamp
    assert [(r.key, r.value, r.headers, r.timestamp - t0) for r in batch.records] == [
        (b"key", b"k0", (), 0), (None, b"h1", (("a", b"b"),), 10), (None, b"p2", (), 10),
        (None, b"p3", (), 13), (b"x", b"k4", (), 13), (None, b"ts5", (), 1_600_000_000_000 - EPOCH_MS - t0),
        (None, b"p6", (), 13), (None, b"p7", (), 15)]
    assert batch.max_timestamp == t0 + 15
