"""A batch whose delivery.timeout.ms passes while its Produce request is in flight (dialect.EXPIRES_IN_FLIGHT).

Kafka's Java client fails it then: Sender.sendProducerData expires the batches in flight past their delivery
timeout (getExpiredInflightBatches) with a TimeoutException ("Expiring N record(s) for tp: X ms has passed since
batch creation"), and the request's answer, when it comes, finds the batch already FAILED (ProducerBatch.done
ignores it).  librdkafka times out only its queued messages (rd_kafka_broker_toppar_msgq_scan); a message in a
request fails with that request, whose timeout is capped by what is left of the message's timeout.

Every scenario: the producer's first Produce of the record is held 12 s in the network (its request times out
after request.timeout.ms, 10 s), the retry, sent at 10.1 s, is held 6 s, and the record's delivery.timeout.ms
is 15 s: it expires while the retry is in flight, whose answer comes back at 16.1 s."""
import pytest

from helpers import read_all

from txnlab import Cluster, Producer
from txnlab.errors import KafkaError, KafkaException

TIMEOUTS = {"request.timeout.ms": 10_000, "socket.timeout.ms": 10_000, "delivery.timeout.ms": 15_000}


def _hold_the_next_produce_past_its_delivery_timeout(c):
    c.delay_next("Produce", 12_000)           # the first attempt: times out in the client after 10 s
    c.delay_next("Produce", 6_000)            # the retry (10.1 s): answered at 16.1 s, after the 15 s


def _narrations(c, since, text):
    return [(e.time - since, e.narration) for e in c.trace.events if e.time >= since and text in e.narration]


def _idempotent_producer_with_a_held_record(dialect, late_ms=6_000):
    """(cluster, producer, t0, reports): a record produced at t0 whose Produce is held past its delivery
    timeout; reports: (ms since t0, error) of its delivery report(s), after 35 s."""
    c = Cluster(brokers=3, seed=1)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "sim.client.dialect": dialect, "enable.idempotence": True,
                  **TIMEOUTS})
    p.produce("t", value=b"before", partition=0)
    assert p.flush(10) == 0
    c.delay_next("Produce", 12_000)
    c.delay_next("Produce", late_ms)
    reports = []
    t0 = c.kernel.now
    p.produce("t", value=b"x", partition=0, on_delivery=lambda err, msg: reports.append((c.kernel.now - t0, err)))
    p.flush(35)
    c.advance(20_000)
    return c, p, t0, reports


def test_java_fails_a_record_at_its_delivery_timeout_while_its_produce_is_in_flight():
    c, p, t0, reports = _idempotent_producer_with_a_held_record("java")
    [(at, err)] = reports
    assert (at, err.code(), err.str()) == (
        15_000, KafkaError._MSG_TIMED_OUT, "Expiring 1 record(s) for t-0:15000 ms has passed since batch creation")
    # the retry was still waiting for its answer then: the client neither gave up on it nor closed its connection
    gave_up = [t for t, _ in _narrations(c, t0, "gave up waiting for the Produce response")]
    assert gave_up == [10_000]                 # only the first attempt's request timeout
    [(answered, _)] = _narrations(c, t0, "ProduceResponse returned SUCCEEDED for t-0 after batch")
    assert answered > 15_000


def test_java_a_late_success_for_an_expired_batch_delivers_nothing_twice_and_the_producer_goes_on():
    c, p, t0, reports = _idempotent_producer_with_a_held_record("java")
    # one delivery report, the timeout's: the late answer brought no second one
    assert [(at, err.code()) for at, err in reports] == [(15_000, KafkaError._MSG_TIMED_OUT)]
    assert read_all(c, "t", "read_uncommitted") == [b"before", b"x"]   # written once (the retry: a duplicate)
    # the batch was a retry: its sequence was unresolved until the sender ran again, when the answer came; that
    # answer acknowledged it (TransactionManager.maybeResolveSequences: the last acked sequence is the one before
    # the next): resolved, no epoch bump, and the next record follows with the next sequence of the same epoch
    [(resolved, _)] = _narrations(c, t0, "the unresolved sequence of t-0 is resolved")
    assert resolved > 15_000
    assert not _narrations(c, t0, "bumped its epoch")
    done = []
    p.produce("t", value=b"after", partition=0, on_delivery=lambda err, msg: done.append(err))
    assert p.flush(10) == 0 and done == [None]
    assert read_all(c, "t", "read_uncommitted") == [b"before", b"x", b"after"]
    assert [(b.producer_epoch, b.base_sequence) for b in c.log("t").batches] == [(0, 0), (0, 1), (0, 2)]


def test_java_a_first_attempt_that_expires_in_flight_leaves_its_sequence_to_the_answer():
    """max.in.flight.requests.per.connection 1: the record's batch waits 6 s for the request before it, then its
    first attempt is held 9.5 s.  It expires in flight at 15 s, not being a retry its sequence is not marked
    unresolved (Sender.sendProducerData), and its late success acks it: no epoch bump, the next record follows
    with the next sequence of the same epoch."""
    c = Cluster(brokers=3, seed=1)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "sim.client.dialect": "java", "linger.ms": 0,
                  "max.in.flight.requests.per.connection": 1, **TIMEOUTS})
    p.produce("t", value=b"before", partition=0)
    assert p.flush(10) == 0
    c.delay_next("Produce", 6_000)
    c.delay_next("Produce", 9_500)
    reports = []
    t0 = c.kernel.now
    p.produce("t", value=b"a", partition=0)
    c.advance(1)
    p.produce("t", value=b"x", partition=0, on_delivery=lambda err, msg: reports.append((c.kernel.now - t0, err)))
    p.flush(30)
    c.advance(5_000)
    assert [(at, err.code()) for at, err in reports] == [(15_001, KafkaError._MSG_TIMED_OUT)]
    assert _narrations(c, t0, "ProduceResponse returned SUCCEEDED for t-0 after batch with base offset 2")
    p.produce("t", value=b"after", partition=0)
    assert p.flush(10) == 0
    assert not _narrations(c, t0, "bumped its epoch")
    [last] = c.log("t").batches[-1:]
    assert (last.producer_epoch, last.base_sequence) == (0, 3)


def test_java_a_late_error_for_an_expired_batch_is_ignored():
    """The retry is held 30 s: its own request timeout (at 20.1 s) answers it, after the batch expired; the
    batch is not retried again (Sender.canRetry: it is done) and its records get no second report."""
    c, p, t0, reports = _idempotent_producer_with_a_held_record("java", late_ms=30_000)
    assert [(at, err.code()) for at, err in reports] == [(15_000, KafkaError._MSG_TIMED_OUT)]
    [(at, text)] = _narrations(c, t0, "Ignored state transition FAILED -> FAILED for t-0 batch")
    assert at == 20_100 and "REQUEST_TIMED_OUT" in text
    sent = [m for m in c.network_messages() if m.api == "Produce" and not m.is_response and m.sent_at >= t0]
    assert len(sent) == 2                      # the first attempt and its retry: nothing sent after the expiry
    done = []
    p.produce("t", value=b"after", partition=0, on_delivery=lambda err, msg: done.append(err))
    assert p.flush(10) == 0 and done == [None]


@pytest.mark.parametrize("dialect", ["java", "librdkafka"])
def test_at_the_delivery_timeout_java_keeps_waiting_for_the_request_and_librdkafka_gives_up_on_it(dialect):
    """Both report the record timed out at 15 s; librdkafka by its request's timeout (what was left of the
    message's timeout: it closes the connection), Java without touching the request (unchanged librdkafka: the
    librdkafka case passes on the code before the change too)."""
    c, p, t0, reports = _idempotent_producer_with_a_held_record(dialect)
    assert [(at, err.code()) for at, err in reports] == [(15_000, KafkaError._MSG_TIMED_OUT)]
    gave_up = [t for t, _ in _narrations(c, t0, "gave up waiting for the Produce response")]
    expired_in_flight = _narrations(c, t0, "while its Produce is in flight")
    if dialect == "java":
        assert gave_up == [10_000] and [t for t, _ in expired_in_flight] == [15_000]
    else:
        assert gave_up == [10_000, 15_000] and expired_in_flight == []
        assert reports[0][1].str() == "Local: Message timed out"


# ---------------------------------------------------------------------------------- transactions
def _transactional_producer_with_a_held_record(tv, commit_at_once=False):
    """A Java transactional producer writes one record to t-0 in a transaction, whose Produce is held past
    the record's delivery timeout.  ``commit_at_once``: the application calls commit_transaction() right after
    producing (the record expires while the transaction is completing), else flush() first.  Returns (cluster,
    producer, reports, the error commit_transaction() raised)."""
    c = Cluster(brokers=3, seed=1, config={"transaction.version": tv})
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "sim.client.dialect": "java",
                  **TIMEOUTS})
    p.init_transactions()
    p.begin_transaction()
    _hold_the_next_produce_past_its_delivery_timeout(c)
    reports = []
    p.produce("t", value=b"expired", partition=0, on_delivery=lambda err, msg: reports.append(err))
    if not commit_at_once:
        p.flush(30)
    with pytest.raises(KafkaException) as commit:
        p.commit_transaction(30)
    return c, p, reports, commit.value.args[0]


@pytest.mark.parametrize("tv", [0, 2])
def test_java_a_transaction_whose_record_expired_in_flight_must_abort_and_the_abort_bumps_the_epoch(tv):
    c, p, reports, err = _transactional_producer_with_a_held_record(tv)
    assert [e.code() for e in reports] == [KafkaError._MSG_TIMED_OUT]
    assert err.txn_requires_abort() and not err.fatal()
    p.abort_transaction(30)
    # TransactionManager.maybeTransitionToErrorState: epochBumpRequired (KIP-360 bump after the abort under
    # transaction.version 0; EndTxn v5 bumps at every end under 2)
    assert c.transaction_state("tx")["producer_epoch"] == 1


@pytest.mark.parametrize("tv", [0, 2])
def test_java_a_retried_record_that_expires_in_flight_during_commit_still_makes_the_abort_bump(tv):
    """While committing, an abortable error does not ask for a bump (isCompleting()); but the batch was a
    retry, so Sender.sendProducerData marked its sequence unresolved and TransactionManager
    .maybeResolveSequences requires the bump."""
    c, p, reports, err = _transactional_producer_with_a_held_record(tv, commit_at_once=True)
    assert [e.code() for e in reports] == [KafkaError._MSG_TIMED_OUT]
    assert err.txn_requires_abort()
    assert _narrations(c, 0, "Marking partition t-0 unresolved with next sequence number 1")
    p.abort_transaction(30)
    assert c.transaction_state("tx")["producer_epoch"] == 1


@pytest.mark.parametrize("tv", [0, 2])
def test_a_read_committed_consumer_never_sees_a_record_that_expired_in_flight(tv):
    """The held Produce reaches the leader after the abort: fenced (an older epoch), or, written before the
    abort's marker, aborted.  The next transaction commits only its own record."""
    c, p, reports, err = _transactional_producer_with_a_held_record(tv)
    p.abort_transaction(30)
    c.advance(10_000)                           # the held Produce and its retry have reached the leader
    p.begin_transaction()
    p.produce("t", value=b"committed", partition=0)
    p.commit_transaction(30)
    assert read_all(c, "t") == [b"committed"]            # (read_committed)
