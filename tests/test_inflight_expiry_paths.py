"""Two paths of Kafka's Java client's batch expiry (dialect.EXPIRES_IN_FLIGHT, WAKES_AT_BATCH_EXPIRY), as a user sees
them: the delivery reports, what the log holds, the producer's epoch and sequences afterwards.

(a) A retried batch waiting in the accumulator (its retry backoff) expires while commit_transaction() waits for it.
Sender.sendProducerData wakes at the batch's delivery timeout (RecordAccumulator.nextExpiryTimeMs) and fails it
(failBatch, TransactionManager.handleFailedBatch -> maybeTransitionToErrorState: abortable, no bump while completing);
the batch was a retry, so markSequenceUnresolved, and TransactionManager.maybeResolveSequences finds the partition
drained with its last acked sequence behind the next one: epochBumpRequired and an abortable KafkaException ("The
client hasn't received acknowledgment ..."), which fails the commit's EndTxn.

(b) An idempotent producer's first attempt expires in flight (getExpiredInflightBatches) and its request is then lost:
the record was never written.  Not a retry: its sequence is not marked unresolved and not given back (failBatch with
adjustSequenceNumbers false), so the next batch carries a gap.  TransactionManager.canRetry retries its
OUT_OF_ORDER_SEQUENCE_NUMBER without a bump (it is not the next sequence after the last acked one) until it expires
too, as a retry: markSequenceUnresolved, maybeResolveSequences -> requestEpochBumpForPartition, and the records
after it go with the bumped epoch from sequence 0."""
import pytest

from helpers import read_all

from txnlab import Cluster, KafkaError, KafkaException, Producer

TIMEOUTS = {"request.timeout.ms": 10_000, "socket.timeout.ms": 10_000, "delivery.timeout.ms": 15_000}
UNACKED = ("The client hasn't received acknowledgment for some previously sent messages and can no longer retry "
           "them. It is safe to abort the transaction and continue.")


def _narrations(c, since, text):
    return [(e.time - since, e.narration) for e in c.trace.events if e.time >= since and text in e.narration]


def _produce_requests(c, since):
    return [m.payload for m in c.network_messages() if m.api == "Produce" and not m.is_response and m.sent_at >= since]


def _data_batches(c):
    return [(b.producer_epoch, b.base_sequence) for b in c.log("t").batches if not b.is_control]


@pytest.mark.parametrize("tv", [0, 2])
def test_java_a_queued_retry_that_expires_while_commit_completes(tv):
    """The record's first attempt is held 12 s (written at 12 s; the client gave up on it at 10 s); its retry waits a
    6 s backoff (until 16 s) and is never sent: the batch expires queued at its 15 s, while commit_transaction()
    waits for it.  The record reports Java's expiry; the commit fails with maybeResolveSequences' abortable error;
    the abort bumps the epoch; the written record stays aborted and the next transaction commits with epoch 1 from
    sequence 0."""
    c = Cluster(brokers=3, seed=1, config={"transaction.version": tv})
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "sim.client.dialect": "java",
                  "retry.backoff.ms": 6_000, "retry.backoff.max.ms": 6_000, **TIMEOUTS})
    p.init_transactions()
    p.begin_transaction()
    c.delay_next("Produce", 12_000)
    reports = []
    t0 = c.kernel.now
    p.produce("t", value=b"expired", partition=0, on_delivery=lambda err, msg: reports.append((c.kernel.now, err)))
    with pytest.raises(KafkaException) as commit:
        p.commit_transaction(30)
    [(at, err)] = reports
    assert (err.code(), err.str()) == (
        KafkaError._MSG_TIMED_OUT, "Expiring 1 record(s) for t-0:15000 ms has passed since batch creation")
    [(expired_at, _)] = _narrations(c, t0, "expired (delivery.timeout.ms=15000)")
    assert 15_000 <= expired_at <= 15_010            # at its delivery timeout, not when the backoff ends (16 s)
    assert len(_produce_requests(c, t0)) == 1       # the retry was never sent
    assert _narrations(c, t0, "Marking partition t-0 unresolved with next sequence number 1")
    e = commit.value.args[0]
    assert (e.code(), e.str(), e.txn_requires_abort(), e.fatal()) == (KafkaError._MSG_TIMED_OUT, UNACKED, True, False)
    p.abort_transaction(30)
    assert c.transaction_state("tx")["producer_epoch"] == 1
    assert read_all(c, "t", "read_uncommitted") == [b"expired"] and read_all(c, "t") == []
    c.advance(10_000)
    p.begin_transaction()
    p.produce("t", value=b"committed", partition=0)
    p.commit_transaction(30)
    assert read_all(c, "t") == [b"committed"]
    assert _data_batches(c) == [(0, 0), (1, 0)]


def test_java_an_idempotent_first_attempt_that_expired_in_flight_and_was_never_written():
    """max.in.flight.requests.per.connection 1: "a" is held 6 s, "x" waits for it, then x's first attempt is held
    9.5 s; x expires in flight at its 15 s; its request is then lost (the connection breaks), so x is not in the log.
    "after" gets sequence 3 where the log expects 2: OUT_OF_ORDER_SEQUENCE_NUMBER, retried with the same epoch and
    sequence, never written, until it expires 15 s after it was produced; then the producer bumps its epoch and
    "after2" is written with epoch 1, sequence 0."""
    c = Cluster(brokers=3, seed=1)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "sim.client.dialect": "java", "linger.ms": 0,
                  "max.in.flight.requests.per.connection": 1, **TIMEOUTS})
    p.produce("t", value=b"before", partition=0)
    assert p.flush(10) == 0
    c.delay_next("Produce", 6_000)
    c.delay_next("Produce", 9_500)
    reports = {}

    def report(name):
        return lambda err, msg: reports.setdefault(name, err)
    t0 = c.kernel.now
    p.produce("t", value=b"a", partition=0, on_delivery=report("a"))
    c.advance(1)
    p.produce("t", value=b"x", partition=0, on_delivery=report("x"))
    c.advance(15_050)
    assert _narrations(c, t0, "Expiring 1 record(s) for t-0:15000 ms has passed since batch creation")
    [held] = [m for m in c.network_messages() if m.api == "Produce" and not m.is_response and m.sent_at >= t0
              and m.state == "in-flight"]
    c.drop_message(held.id)                          # x's only attempt never reaches the leader
    c.advance(1_000)
    t_after = c.kernel.now
    p.produce("t", value=b"after", partition=0, on_delivery=report("after"))
    p.flush(40)
    p.produce("t", value=b"after2", partition=0, on_delivery=report("after2"))
    assert p.flush(10) == 0
    assert reports["a"] is None and reports["after2"] is None
    assert (reports["x"].code(), reports["x"].str()) == (
        KafkaError._MSG_TIMED_OUT, "Expiring 1 record(s) for t-0:15000 ms has passed since batch creation")
    assert (reports["after"].code(), reports["after"].str()) == (
        KafkaError._MSG_TIMED_OUT, "Expiring 1 record(s) for t-0:15000 ms has passed since batch creation")
    assert read_all(c, "t", "read_uncommitted") == [b"before", b"a", b"after2"]
    # every attempt of "after" went with epoch 0 and sequence 3 (no bump at x's expiry), and was refused
    attempts = [r.topic_data[("t", 0)] for r in _produce_requests(c, t_after)][:-1]
    assert len(attempts) > 1 and {(b.producer_epoch, b.base_sequence) for b in attempts} == {(0, 3)}
    rejected = _narrations(c, t_after, "rejected -> OUT_OF_ORDER_SEQUENCE_NUMBER")
    assert len(rejected) == len(attempts)
    [(bumped, _)] = _narrations(c, t_after, "bumped its epoch 0 -> 1 locally (KIP-360)")
    assert 15_000 <= bumped <= 15_010                # when "after" expired, 15 s after it was produced
    assert _data_batches(c) == [(0, 0), (0, 1), (1, 0)]
