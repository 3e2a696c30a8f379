"""Idempotent producer: retries never duplicate, order is kept, the broker's 5-batch window, epochs."""

from txnlab import Cluster, Producer
from txnlab.protocol.errors import Errors

from helpers import RawClient, values_in_log


def cluster(**cfg):
    c = Cluster(brokers=3, seed=7, config=cfg or None)
    c.create_topic("t", partitions=1, replication_factor=3)
    return c


def deliveries(p, out):
    return lambda err, msg: out.append((err, msg.offset(), msg.value()))


def test_dropped_produce_response_is_retried_and_deduplicated():
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True})
    got = []
    p.produce("t", value=b"order-1", on_delivery=deliveries(p, got))
    c.drop_next("Produce", response=True)
    assert p.flush() == 0
    assert values_in_log(c, "t") == [b"order-1"]
    assert got == [(None, 0, b"order-1")]
    dup = [e for e in c.trace if "duplicate of a batch already in the log" in e.narration]
    assert dup, "the retry must be recognised as a duplicate by the broker"
    assert "original offset 0" in dup[0].narration


def test_same_fault_without_idempotence_writes_two_copies():
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": False})
    got = []
    p.produce("t", value=b"order-1", on_delivery=deliveries(p, got))
    c.drop_next("Produce", response=True)
    p.flush()
    assert values_in_log(c, "t") == [b"order-1", b"order-1"]
    assert got == [(None, 1, b"order-1")]


def test_five_in_flight_first_request_lost_keeps_log_order():
    """A lost request breaks its connection: the four behind it never arrive alone, all five fail with a
    disconnect and are sent again, in order, on a new connection."""
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "linger.ms": 0,
                  "batch.num.messages": 1, "request.timeout.ms": 3000})
    p.produce("t", value=b"warm-up")
    p.flush()
    c.drop_next("Produce")                      # the first of the next five requests is lost
    for i in range(5):
        p.produce("t", value=b"m%d" % i)
    assert p.flush() == 0
    assert values_in_log(c, "t") == [b"warm-up"] + [b"m%d" % i for i in range(5)]
    assert not any("OUT_OF_ORDER_SEQUENCE_NUMBER" in e.narration for e in c.trace), \
        "on one connection nothing overtakes: the broker never sees a gap"
    assert any("NETWORK_EXCEPTION" in e.narration for e in c.trace)


def test_retry_older_than_the_five_batch_window_is_out_of_order():
    c = cluster()
    raw = RawClient(c)
    for i in range(6):
        r = raw.produce("t", 0, [b"b%d" % i], pid=4000, epoch=0, seq=i)
        assert r.error == Errors.NONE and r.base_offset == i
    # batch 5 is still cached: a duplicate answered with its original offset
    r = raw.produce("t", 0, [b"b5"], pid=4000, epoch=0, seq=5)
    assert (r.error, r.base_offset) == (Errors.NONE, 5)
    # batch 0 fell out of the 5-entry window
    r = raw.produce("t", 0, [b"b0"], pid=4000, epoch=0, seq=0)
    assert r.error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert values_in_log(c, "t") == [b"b%d" % i for i in range(6)]


def test_gap_in_sequence_is_out_of_order():
    c = cluster()
    raw = RawClient(c)
    assert raw.produce("t", 0, [b"a"], pid=4000, epoch=0, seq=0).error == Errors.NONE
    assert raw.produce("t", 0, [b"c"], pid=4000, epoch=0, seq=2).error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_lower_epoch_is_invalid_producer_epoch():
    c = cluster()
    raw = RawClient(c)
    assert raw.produce("t", 0, [b"a"], pid=4000, epoch=3, seq=0).error == Errors.NONE
    r = raw.produce("t", 0, [b"z"], pid=4000, epoch=2, seq=1)
    assert r.error == Errors.INVALID_PRODUCER_EPOCH
    # a newer epoch must start again at sequence 0
    assert raw.produce("t", 0, [b"b"], pid=4000, epoch=4, seq=5).error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert raw.produce("t", 0, [b"b"], pid=4000, epoch=4, seq=0).error == Errors.NONE


def _fill_window(c, raw):
    for i in range(5):
        assert raw.produce("t", 0, [b"b%d" % i], pid=4000, epoch=0, seq=i).error == Errors.NONE
    c.run_until_idle()


def test_restarted_broker_rebuilds_window_from_snapshot_and_replay():
    c = Cluster(brokers=1, seed=3)
    c.create_topic("t")
    raw = RawClient(c)
    _fill_window(c, raw)
    c.crash(0, clean=True)
    c.restart(0)
    c.run_until_idle()
    log = c.log("t", 0)
    entry = log.producer_state.last_entry(4000)
    assert len(entry.batch_metadata) == 1                       # snapshot keeps one batch
    assert raw.produce("t", 0, [b"b3"], pid=4000, epoch=0, seq=3).error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    # a hard crash before any segment roll: no snapshot, everything is replayed -> full window
    c2 = Cluster(brokers=1, seed=3)
    c2.create_topic("t")
    raw2 = RawClient(c2)
    _fill_window(c2, raw2)
    c2.crash(0)
    c2.restart(0)
    c2.run_until_idle()
    r = raw2.produce("t", 0, [b"b1"], pid=4000, epoch=0, seq=1)
    assert (r.error, r.base_offset) == (Errors.NONE, 1)


def test_unknown_producer_is_accepted_with_any_sequence():
    c = cluster()
    raw = RawClient(c)
    assert raw.produce("t", 0, [b"a"], pid=4000, epoch=0, seq=17).error == Errors.NONE


def test_java_client_bumps_epoch_when_the_broker_lost_its_state():
    """KIP-360: OUT_OF_ORDER for the batch right after the last acked one means the broker
    forgot us (here: the partition leader lost its producer state); Kafka's Java client bumps its epoch
    locally and resends from sequence 0.  (librdkafka makes it a fatal error: tests/test_librdkafka_produce_errors.py.)"""
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t")
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "sim.client.dialect": "java"})
    for i in range(3):
        p.produce("t", value=b"a%d" % i)
    p.flush()
    # simulate lost state: the broker now believes the producer is at a newer sequence
    log = c.log("t", 0)
    entry = log.producer_state.last_entry(p.transaction_manager.producer_id)
    entry.batch_metadata[-1].last_seq = 10 if hasattr(entry.batch_metadata[-1], "last_seq") else None
    p.produce("t", value=b"after")
    p.flush()
    assert p.transaction_manager.producer_epoch == 1
    assert values_in_log(c, "t")[-1] == b"after"
