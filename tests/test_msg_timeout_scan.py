"""When a queued record past its message.timeout.ms (delivery.timeout.ms) fails (dialect.MSG_TIMEOUT_SCAN_MS).

librdkafka times out queued messages only in rd_kafka_broker_toppar_msgq_scan, which a broker thread runs at the
start of each of its serve rounds of a second (rd_kafka_broker_producer_serve), and when a WAKEUP op starts a round
over (flush(): "flushing"; "partitions added to transaction"; "PID updated").  A queued message therefore fails at
the first scan at or after its timeout, up to a second late; the lab scans every second from the producer's
creation.  Kafka's Java client wakes at the batch's delivery timeout (RecordAccumulator.nextExpiryTimeMs) and fails
it then.

Every scenario: the record's first Produce is lost (its connection breaks: a retriable error), and its retry waits
a 10 s backoff in the partition's queue; its timeout is 5 s."""
import pytest

from txnlab import Cluster, KafkaError, Producer


def _queued_record(dialect, after_ms):
    """(cluster, producer, creation time, t0, reports): the record is produced ``after_ms`` after the producer
    was created (its topic's metadata already known), at t0."""
    c = Cluster(brokers=3, seed=1)
    c.create_topic("t", partitions=1, replication_factor=3)
    created = c.kernel.now
    p = Producer({"bootstrap.servers": c.bootstrap, "sim.client.dialect": dialect, "linger.ms": 0,
                  "enable.idempotence": False, "retry.backoff.ms": 10_000, "retry.backoff.max.ms": 10_000,
                  "request.timeout.ms": 3_000, "socket.timeout.ms": 3_000, "delivery.timeout.ms": 5_000})
    p.produce("t", value=b"before", partition=0)       # (its topic's metadata is known from now on)
    assert p.flush(10) == 0
    c.advance(created + after_ms - c.kernel.now)
    c.drop_next("Produce")
    reports = []
    t0 = c.kernel.now
    p.produce("t", value=b"x", partition=0, on_delivery=lambda err, msg: reports.append(err))
    return c, p, created, t0, reports


def _expired_at(c, since):
    return [e.time for e in c.trace.events if e.time >= since and "expired (delivery.timeout.ms=5000)" in e.narration]


@pytest.mark.parametrize("after_ms", [300, 1_000])
def test_librdkafka_fails_a_queued_record_at_the_next_message_timeout_scan(after_ms):
    """Produced 300 ms into a second of the producer's scans, the record times out at 5.3 s and fails at the scan
    at 6 s (0.7 s late); produced on a second, it fails at its timeout.  Not when the retry's backoff ends (10 s),
    and the retry is never sent."""
    c, p, created, t0, reports = _queued_record("librdkafka", after_ms)
    p.poll(12)
    [err] = reports
    assert (err.code(), err.str()) == (KafkaError._MSG_TIMED_OUT, "Local: Message timed out")
    [at] = _expired_at(c, t0)
    assert at - created == -(-(after_ms + 5_000) // 1_000) * 1_000
    assert at - t0 == (5_700 if after_ms == 300 else 5_000)
    sent = [m for m in c.network_messages() if m.api == "Produce" and not m.is_response and m.sent_at >= t0]
    assert len(sent) == 1


def test_librdkafka_flush_scans_for_message_timeouts_at_once():
    """flush() at 5.5 s wakes the broker threads, whose scan fails the record (timed out at 5.3 s) then, before the
    scan at 6 s."""
    c, p, created, t0, reports = _queued_record("librdkafka", 300)
    c.advance(5_500)
    assert p.flush(5) == 0
    assert [e.code() for e in reports] == [KafkaError._MSG_TIMED_OUT]
    assert [at - t0 for at in _expired_at(c, t0)] == [5_500]


def test_java_fails_a_queued_record_at_its_delivery_timeout():
    c, p, created, t0, reports = _queued_record("java", 300)
    p.poll(12)
    [err] = reports
    assert (err.code(), err.str()) == (KafkaError._MSG_TIMED_OUT,
                                       "Expiring 1 record(s) for t-0:5000 ms has passed since batch creation")
    assert [at - t0 for at in _expired_at(c, t0)] == [5_000]


def test_one_scan_stays_queued_however_many_records_come_and_go():
    """The scan is armed while a record is queued and cancelled when none is; the records of a second all wait for
    the same scan, so it is revived, not queued anew: one transaction after another leaves no cancelled scan
    behind in the kernel's queue (each would stay there for message.timeout.ms)."""
    c = Cluster(brokers=3, seed=0)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "linger.ms": 5})
    p.init_transactions()
    t0 = c.kernel.now
    for _ in range(300):
        p.begin_transaction()
        p.produce("t", value=b"x")
        p.commit_transaction()
    scans = [ev for ev in c.kernel._queued.values() if getattr(ev, "_name", None) == "message timeout scan"]
    # a few dozen simulated ms a transaction: the 300 span a few seconds, one scan instant each, queued at most once
    assert 1 <= len(scans) <= (c.kernel.now - t0) // 1000 + 2 < 300


def test_a_revived_timer_runs_at_its_time_and_a_past_one_is_not_revived():
    c = Cluster(brokers=1, seed=0)
    k, ran = c.kernel, []
    node = c.broker(0)
    ev = node.set_timer(100, "t", lambda: ran.append(("first", k.now)), background=True)
    k.cancel(ev)
    assert k.revive(ev, lambda: ran.append(("revived", k.now)))
    c.advance(200)
    assert ran == [("revived", ev.time)]
    assert not k.revive(ev, lambda: ran.append(("again", k.now)))     # it ran: nothing to revive
    late = node.set_timer(50, "u", lambda: ran.append(("late", k.now)), background=True)
    k.cancel(late)
    c.advance(100)                                                       # its time passed while cancelled
    assert not k.revive(late, lambda: ran.append(("late", k.now)))
    c.advance(100)
    assert ran == [("revived", ev.time)]
