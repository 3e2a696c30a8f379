"""Kafka's Java client's unresolved sequences (TransactionManager.markSequenceUnresolved / maybeResolveSequences), as
a user sees them: the delivery reports, what the log holds, the producer's epoch and sequences, what
commit_transaction() raises.

A retried batch that expires (here: in flight, Sender.getExpiredInflightBatches) may or may not be in the log.  Java
marks its partition unresolved; while it is, no new batch is sent to the partition (RecordAccumulator
.shouldStopDrainBatchesForPartition: hasUnresolvedSequence).  Once no batch of the partition is in flight,
maybeResolveSequences (at the start of the sender's next run) looks at the last acknowledged sequence: if a later
batch was acknowledged, the expired one made it to the log and the sequence is resolved, with no epoch bump;
otherwise an idempotent producer bumps its epoch, and a transactional one must abort and bumps after the abort.

Every scenario: "a" is produced at t0; its first Produce is held 12 s in the network (written at 12 s; the client
gave up on it at 10 s, request.timeout.ms), its retry (10.1 s) is held 6 s, answered at 16.1 s; delivery.timeout.ms
is 15 s, so "a" expires in flight, as a retry, at 15 s.  "b" is produced at 11 s: sent behind a's retry on the
same connection, it is in flight at 15 s and answered after it."""
import pytest

from helpers import read_all

from txnlab import Cluster, KafkaError, KafkaException, Producer

TIMEOUTS = {"request.timeout.ms": 10_000, "socket.timeout.ms": 10_000, "delivery.timeout.ms": 15_000}
EXPIRED = "Expiring 1 record(s) for t-0:15000 ms has passed since batch creation"


def _narrations(c, since, text):
    return [(e.time - since, e.narration) for e in c.trace.events if e.time >= since and text in e.narration]


def _data_batches(c):
    return [(b.producer_epoch, b.base_sequence) for b in c.log("t").batches if not b.is_control]


def _produce_sent(c, since):
    """(ms since ``since``, base sequence, epoch) of every Produce request for t-0 sent since then."""
    return [(msg.sent_at - since, b.base_sequence, b.producer_epoch) for msg in c.network_messages()
            if msg.api == "Produce" and not msg.is_response and msg.sent_at >= since
            for b in [msg.payload.topic_data[("t", 0)]]]


def _a_and_b(c, p, reports):
    """Produces "a" (held as the module says) and, at 11 s, "b"; returns t0."""
    c.delay_next("Produce", 12_000)
    c.delay_next("Produce", 6_000)
    t0 = c.kernel.now

    def report(name):
        return lambda err, msg: reports.setdefault(name, (c.kernel.now - t0, err))
    p.produce("t", value=b"a", partition=0, on_delivery=report("a"))
    p.poll(0)
    c.advance(11_000)
    p.produce("t", value=b"b", partition=0, on_delivery=report("b"))
    p.poll(0)
    return t0, report


def test_java_idempotent_a_later_acknowledgment_resolves_the_expired_retry_without_a_bump():
    """"b" (sequence 2) is acknowledged after "a" expired: "a" is in the log, so its sequence is resolved; the
    producer keeps epoch 0 and "c" follows with sequence 3.  "c", produced at 15.5 s while the sequence is
    unresolved, is not sent until it is resolved (when b's answer came, after 16.1 s)."""
    c = Cluster(brokers=3, seed=1)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "sim.client.dialect": "java", "enable.idempotence": True,
                  "linger.ms": 0, **TIMEOUTS})
    p.produce("t", value=b"before", partition=0)
    assert p.flush(10) == 0
    reports = {}
    t0, report = _a_and_b(c, p, reports)
    c.advance(4_500)                                   # 15.5 s: "a" expired at 15 s, "b" is in flight
    p.poll(0)
    assert (reports["a"][1].code(), reports["a"][1].str()) == (KafkaError._MSG_TIMED_OUT, EXPIRED)
    assert [at for at, _ in _narrations(c, t0, "while its Produce is in flight")] == [15_000]
    assert _narrations(c, t0, "Marking partition t-0 unresolved with next sequence number 2")
    p.produce("t", value=b"c", partition=0, on_delivery=report("c"))
    assert p.flush(30) == 0
    assert reports["b"][1] is None and reports["c"][1] is None
    [(resolved, _)] = _narrations(c, t0, "the unresolved sequence of t-0 is resolved")
    assert resolved > 16_100
    assert not _narrations(c, t0, "bumped its epoch")
    # c waited for the resolution; then went with the same epoch and the next sequence
    [c_sent] = [(at, seq, epoch) for at, seq, epoch in _produce_sent(c, t0) if seq == 3]
    assert c_sent[0] >= resolved and c_sent[1:] == (3, 0)
    # "a" is in the log once (its retry was a duplicate), though its report said it timed out
    assert read_all(c, "t", "read_uncommitted") == [b"before", b"a", b"b", b"c"]
    assert _data_batches(c) == [(0, 0), (0, 1), (0, 2), (0, 3)]


@pytest.mark.parametrize("tv", [0, 2])
def test_java_transactional_a_later_acknowledgment_resolves_the_expired_retry_during_commit(tv):
    """commit_transaction() is called at 11 s, after "b": "a" expires while the transaction is completing, which
    makes it abortable without asking for a bump (TransactionManager.maybeTransitionToErrorState: isCompleting()).
    b's acknowledgment resolves a's sequence, so maybeResolveSequences neither requires the bump nor replaces the
    error: commit_transaction() raises the expiry's.  The abort keeps epoch 0 under transaction.version 0 (every
    EndTxn bumps under 2), and the next transaction goes on with the next sequence."""
    c = Cluster(brokers=3, seed=1, config={"transaction.version": tv})
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "sim.client.dialect": "java",
                  "linger.ms": 0, **TIMEOUTS})
    p.init_transactions()
    p.begin_transaction()
    reports = {}
    t0, _ = _a_and_b(c, p, reports)
    with pytest.raises(KafkaException) as commit:
        p.commit_transaction(30)
    e = commit.value.args[0]
    assert (e.code(), e.txn_requires_abort(), e.fatal()) == (KafkaError._MSG_TIMED_OUT, True, False)
    assert EXPIRED in e.str()
    assert _narrations(c, t0, "Marking partition t-0 unresolved with next sequence number 1")
    p.abort_transaction(30)
    assert _narrations(c, t0, "the unresolved sequence of t-0 is resolved")
    assert reports["a"][1].code() == KafkaError._MSG_TIMED_OUT
    assert c.transaction_state("tx")["producer_epoch"] == (0 if tv == 0 else 1)
    assert read_all(c, "t", "read_uncommitted") == [b"a", b"b"] and read_all(c, "t") == []
    p.begin_transaction()
    p.produce("t", value=b"committed", partition=0)
    p.commit_transaction(30)
    assert read_all(c, "t") == [b"committed"]
    assert _data_batches(c) == ([(0, 0), (0, 1), (0, 2)] if tv == 0 else [(0, 0), (0, 1), (1, 0)])


def test_java_an_abort_waiting_for_the_expired_retry_requires_the_bump_before_its_end_txn():
    """abort_transaction() at 11 s waits for "a" (no "b" here); "a" expires in flight at 15 s, while aborting: no
    bump for the expiry itself (isCompleting()), but its sequence is unresolved and nothing of t-0 is in flight, so
    maybeResolveSequences, which runs before the EndTxn is sent, requires the bump (no acknowledgment came): the
    abort bumps the epoch (transaction.version 0)."""
    c = Cluster(brokers=3, seed=1, config={"transaction.version": 0})
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "sim.client.dialect": "java",
                  "linger.ms": 0, **TIMEOUTS})
    p.init_transactions()
    p.begin_transaction()
    c.delay_next("Produce", 12_000)
    c.delay_next("Produce", 6_000)
    t0 = c.kernel.now
    p.produce("t", value=b"a", partition=0)
    p.poll(0)
    c.advance(11_000)
    p.abort_transaction(30)
    [(expired, _)] = _narrations(c, t0, "while its Produce is in flight")
    assert 15_000 <= expired <= 15_010          # (its topic's metadata came first)
    assert _narrations(c, t0, "Marking partition t-0 unresolved with next sequence number 1")
    assert c.transaction_state("tx")["producer_epoch"] == 1
    assert read_all(c, "t", "read_uncommitted") == [b"a"] and read_all(c, "t") == []
