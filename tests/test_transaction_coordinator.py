"""The transaction coordinator's rules, request by request (Kafka's TransactionCoordinatorTest and
TransactionMetadataTest themes), driven with hand-made requests."""
import pytest

from txnlab import Cluster
from txnlab.coordinator.transaction_metadata import (VALID_PREVIOUS_STATES, IllegalTransition, TransactionMetadata,
                                                     TransactionState, is_valid_transition)
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors

from helpers import RawClient

S = TransactionState
CFG = {"transaction.state.log.num.partitions": 1, "offsets.topic.num.partitions": 1}


class Txn:
    """Talks to the coordinator like a client would, but one request at a time."""

    def __init__(self, tv=0, tid="t1", cfg=None):
        conf = dict(CFG)
        conf["transaction.version"] = tv
        conf.update(cfg or {})
        self.c = Cluster(brokers=3, seed=1, config=conf)
        self.c.create_topic("out", partitions=2, replication_factor=3)
        self.raw = RawClient(self.c)
        self.tid = tid
        r = self.call(m.FindCoordinatorRequest(tid, m.COORDINATOR_TRANSACTION))
        while r.error:
            self.c.advance(100)
            r = self.call(m.FindCoordinatorRequest(tid, m.COORDINATOR_TRANSACTION))
        self.coord = r.node_id

    def call(self, req, from_broker=None):
        dst = getattr(self, "coord", 0)
        return self.raw.call(dst, req, from_broker=from_broker)

    def init(self, pid=-1, epoch=-1, timeout=60_000):
        r = self.call(m.InitProducerIdRequest(self.tid, timeout, pid, epoch))
        while r.error == Errors.COORDINATOR_LOAD_IN_PROGRESS:
            self.c.advance(50)
            r = self.call(m.InitProducerIdRequest(self.tid, timeout, pid, epoch))
        return r

    def add(self, pid, epoch, tps=(("out", 0),)):
        return self.call(m.AddPartitionsToTxnRequest(self.tid, pid, epoch, tuple(tps)))

    def end(self, pid, epoch, commit=True):
        return self.call(m.EndTxnRequest(self.tid, pid, epoch, commit))

    @property
    def state(self):
        return self.c.transaction_state(self.tid)


def test_transition_table_is_kafkas():
    assert VALID_PREVIOUS_STATES[S.PrepareCommit] == {S.Ongoing}
    assert VALID_PREVIOUS_STATES[S.CompleteAbort] == {S.PrepareAbort}
    assert not is_valid_transition(S.Empty, S.PrepareAbort, 0)
    assert is_valid_transition(S.Empty, S.PrepareAbort, 2)          # TV2: abort from Empty
    md = TransactionMetadata("x", 1)
    md.prepare_transition(S.Ongoing, 0)
    with pytest.raises(IllegalTransition):                            # one pending transition at a time
        md.prepare_transition(S.Ongoing, 0)


def test_init_producer_id_bumps_the_epoch_and_recognises_a_retry():
    t = Txn()
    r1 = t.init()
    assert (r1.error, r1.producer_epoch) == (Errors.NONE, 0)
    r2 = t.init(r1.producer_id, 0)                                   # KIP-360 bump from the same producer
    assert (r2.producer_id, r2.producer_epoch) == (r1.producer_id, 1)
    r3 = t.init(r1.producer_id, 0)                                   # the same request retried
    assert (r3.error, r3.producer_epoch) == (Errors.NONE, 1)
    assert t.state["producer_epoch"] == 1
    r4 = t.init(r1.producer_id, 7)
    assert r4.error == Errors.PRODUCER_FENCED


def test_init_during_an_open_transaction_fences_and_aborts_it():
    t = Txn()
    r = t.init()
    assert t.add(r.producer_id, r.producer_epoch).errors[("out", 0)] == Errors.NONE
    r2 = t.init()
    assert r2.error == Errors.CONCURRENT_TRANSACTIONS
    t.c.run_until_idle()
    assert t.state["state"] == "CompleteAbort" and t.state["producer_epoch"] == 1
    r3 = t.init()
    assert (r3.error, r3.producer_epoch) == (Errors.NONE, 2)         # the new instance ends at old + 2


@pytest.mark.parametrize("state,commit,expected", [
    ("Empty", True, Errors.INVALID_TXN_STATE),
    ("Empty", False, Errors.INVALID_TXN_STATE),
    ("CompleteCommit", True, Errors.NONE),
    ("CompleteCommit", False, Errors.INVALID_TXN_STATE),
    ("CompleteAbort", False, Errors.NONE),
    ("CompleteAbort", True, Errors.INVALID_TXN_STATE),
])
def test_end_txn_in_each_finished_state(state, commit, expected):
    t = Txn()
    r = t.init()
    if state != "Empty":
        t.add(r.producer_id, r.producer_epoch)
        assert t.end(r.producer_id, r.producer_epoch, commit=(state == "CompleteCommit")).error == Errors.NONE
        t.c.run_until_idle()
    assert t.state["state"] == state
    assert t.end(r.producer_id, r.producer_epoch, commit).error == expected


def test_end_txn_while_markers_are_pending_is_concurrent_or_invalid():
    t = Txn()
    r = t.init()
    t.add(r.producer_id, r.producer_epoch)
    t.c.delay_next("WriteTxnMarkers", 60_000)                       # the markers are slow to arrive
    assert t.end(r.producer_id, r.producer_epoch, True).error == Errors.NONE
    assert t.state["state"] == "PrepareCommit" and t.state["pending_state"] == "CompleteCommit"
    # a pending transition answers CONCURRENT_TRANSACTIONS before the state table is looked at
    assert t.end(r.producer_id, r.producer_epoch, True).error == Errors.CONCURRENT_TRANSACTIONS
    assert t.end(r.producer_id, r.producer_epoch, False).error == Errors.CONCURRENT_TRANSACTIONS
    assert t.add(r.producer_id, r.producer_epoch).errors[("out", 0)] == Errors.CONCURRENT_TRANSACTIONS
    assert t.init().error == Errors.CONCURRENT_TRANSACTIONS
    t.c.advance(61_000)
    assert t.state["state"] == "CompleteCommit"


def test_wrong_producer_id_and_epoch_errors():
    t = Txn()
    r = t.init()
    assert t.add(r.producer_id + 1, r.producer_epoch).errors[("out", 0)] == Errors.INVALID_PRODUCER_ID_MAPPING
    assert t.add(r.producer_id, r.producer_epoch + 1).errors[("out", 0)] == Errors.PRODUCER_FENCED
    assert t.end(r.producer_id, r.producer_epoch + 1).error == Errors.PRODUCER_FENCED
    unknown = t.call(m.AddPartitionsToTxnRequest(t.tid, r.producer_id, r.producer_epoch, (("nope", 0), ("out", 1))))
    assert unknown.errors == {("nope", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION, ("out", 1): Errors.OPERATION_NOT_ATTEMPTED}


def _verify(t, pid, epoch, tps) -> dict:
    """A partition leader's verify-only question (AddPartitionsToTxn v4+, one transaction): its errors."""
    resp = t.call(m.AddPartitionsToTxnRequest(transactions=(m.AddPartitionsToTxnTransaction(t.tid, pid, epoch, tps),)),
                  from_broker=True)
    assert resp.error == 0 and list(resp.results) == [t.tid]
    return resp.results[t.tid]


def test_verify_only_says_which_partitions_are_in_the_transaction():
    t = Txn()
    r = t.init()
    t.add(r.producer_id, r.producer_epoch, (("out", 0),))
    v = _verify(t, r.producer_id, r.producer_epoch, (("out", 0), ("out", 1)))      # a leader asks
    assert v == {("out", 0): Errors.NONE, ("out", 1): Errors.TRANSACTION_ABORTABLE}
    assert t.state["partitions"] == [("out", 0)]                     # nothing written


def test_tv2_bumps_the_epoch_on_every_end_txn_and_answers_retries():
    t = Txn(tv=2)
    r = t.init()
    t.add(r.producer_id, r.producer_epoch)
    e = t.end(r.producer_id, r.producer_epoch, True)
    assert (e.error, e.producer_epoch) == (Errors.NONE, r.producer_epoch + 1)
    t.c.run_until_idle()
    retry = t.end(r.producer_id, r.producer_epoch, True)            # old epoch = a retry of the finished commit
    assert (retry.error, retry.producer_epoch) == (Errors.NONE, r.producer_epoch + 1)
    assert t.end(r.producer_id, r.producer_epoch, False).error == Errors.INVALID_TXN_STATE
    eb = t.end(r.producer_id, r.producer_epoch + 1, False)           # abort with nothing open: a fresh epoch
    assert (eb.error, eb.producer_epoch) == (Errors.NONE, r.producer_epoch + 2)


def test_coordinator_epoch_fences_a_stale_coordinators_markers():
    t = Txn()
    r = t.init()
    t.add(r.producer_id, r.producer_epoch)
    t.end(r.producer_id, r.producer_epoch, True)
    t.c.run_until_idle()
    leader = t.c.leader("out", 0)
    stale = m.WriteTxnMarkersRequest((m.TxnMarkerEntry(r.producer_id, r.producer_epoch, False, (("out", 0),), -5),))
    resp = t.raw.call(leader, stale, from_broker=True)     # a stale coordinator is a broker
    assert resp.markers[r.producer_id][("out", 0)] == Errors.TRANSACTION_COORDINATOR_FENCED


def test_failed_fence_is_not_bumped_twice():
    """Kafka's TransactionsTest: a fence whose write fails (the txn log under min ISR) bumps the
    epoch only once; the old producer is still fenced."""
    t = Txn(cfg={"replica.lag.time.max.ms": 2_000})
    r = t.init()
    t.add(r.producer_id, r.producer_epoch)
    others = [b for b in t.c.brokers if b != t.coord]
    for b in others:
        t.c.crash(b)
    t.c.advance(15_000)                                              # __transaction_state ISR shrinks below 2
    assert t.init().error in (Errors.COORDINATOR_NOT_AVAILABLE, Errors.CONCURRENT_TRANSACTIONS,
                              Errors.NOT_COORDINATOR)
    st = t.state
    assert st["producer_epoch"] == r.producer_epoch + 1
    for b in others:
        t.c.restart(b)
    t.c.advance(20_000)
    t.c.run_until_idle()
    assert t.add(r.producer_id, r.producer_epoch).errors[("out", 0)] == Errors.PRODUCER_FENCED
    again = t.init()
    while again.error == Errors.CONCURRENT_TRANSACTIONS:
        t.c.advance(500)
        again = t.init()
    assert again.error == Errors.NONE and again.producer_epoch <= r.producer_epoch + 3


def test_add_partitions_checks_a_pending_transition_first_and_verify_does_not_check_it():
    """Kafka 4.1.1 TransactionCoordinator.handleAddPartitionsToTransaction answers CONCURRENT_TRANSACTIONS for a
    pending transition before it looks at the producer id and epoch (October 2024: after them);
    handleVerifyPartitionsInTransaction never looks at the pending transition (only PrepareCommit/PrepareAbort are
    CONCURRENT_TRANSACTIONS); KafkaApis checks the topics before the coordinator does."""
    t = Txn()
    r = t.init()
    t.add(r.producer_id, r.producer_epoch, (("out", 0),))
    t.c.delay_next("WriteTxnMarkers", 60_000)
    assert t.end(r.producer_id, r.producer_epoch, True).error == Errors.NONE
    assert t.state["pending_state"] == "CompleteCommit"
    assert t.add(r.producer_id, r.producer_epoch + 1).errors[("out", 0)] == Errors.CONCURRENT_TRANSACTIONS
    assert t.add(r.producer_id + 1, r.producer_epoch).errors[("out", 0)] == Errors.CONCURRENT_TRANSACTIONS
    stale = _verify(t, r.producer_id, r.producer_epoch + 1, (("out", 0),))
    assert stale == {("out", 0): Errors.PRODUCER_FENCED}      # verification: no pending check
    unknown = t.call(m.AddPartitionsToTxnRequest(t.tid, r.producer_id + 1, r.producer_epoch, (("nope", 0),)))
    assert unknown.errors == {("nope", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION}
    t.c.advance(61_000)
    t.add(r.producer_id, r.producer_epoch, (("out", 0),))
    md = t.c._brokers[t.coord].txn_coordinator.state_manager.lookup(t.tid)[1].metadata[t.tid]
    md.pending_state = S.Ongoing                                       # an add of another partition in flight
    v = _verify(t, r.producer_id, r.producer_epoch, (("out", 0), ("out", 1)))
    assert v == {("out", 0): Errors.NONE, ("out", 1): Errors.TRANSACTION_ABORTABLE}


@pytest.mark.parametrize("tv", [0, 2])
def test_a_timed_out_transaction_is_aborted_with_the_servers_transaction_version(tv):
    """Kafka 4.1.1 abortTimedOutTransactions (and handleInitProducerId's fence) call endTransaction with the server's
    transaction version.  With TV2 (isEpochFence) prepareAbortOrCommit bumps the epoch and keeps the old one as
    lastProducerEpoch, so the fenced instance's InitProducerId(pid, old epoch) is taken for a retry of a successful
    bump (prepareIncrementProducerEpoch: expectedEpoch == lastProducerEpoch) and answered with the current epoch;
    the TV1 path clears lastProducerEpoch and that request is PRODUCER_FENCED."""
    t = Txn(tv=tv)
    r = t.init(timeout=1_000)
    t.add(r.producer_id, r.producer_epoch)
    t.c.advance(15_000)
    t.c.run_until_idle()
    st = t.state
    assert (st["state"], st["producer_epoch"]) == ("CompleteAbort", r.producer_epoch + 1)
    assert st["last_producer_epoch"] == (r.producer_epoch if tv == 2 else -1)
    again = t.init(r.producer_id, r.producer_epoch, timeout=1_000)
    if tv == 2:
        assert (again.error, again.producer_epoch) == (Errors.NONE, r.producer_epoch + 1)
    else:
        assert again.error == Errors.PRODUCER_FENCED


def test_a_retried_epoch_bump_is_written_as_an_empty_transition():
    """Kafka's prepareIncrementProducerEpoch answers a retry (expected epoch == lastProducerEpoch) with the current
    epoch through a transition to Empty, written like any other (the lab answered without writing, leaving the state
    as it was: CompleteCommit here, where the classic EndTxn(COMMIT) that follows would then succeed)."""
    t = Txn()
    r = t.init()
    bumped = t.init(r.producer_id, r.producer_epoch)                 # KIP-360 bump: epoch 1, last epoch 0
    t.add(bumped.producer_id, bumped.producer_epoch)
    assert t.end(bumped.producer_id, bumped.producer_epoch, True).error == Errors.NONE
    t.c.run_until_idle()
    assert (t.state["state"], t.state["last_producer_epoch"]) == ("CompleteCommit", r.producer_epoch)
    retried = t.init(r.producer_id, r.producer_epoch)               # the bump's request, retried late
    assert (retried.error, retried.producer_epoch) == (Errors.NONE, bumped.producer_epoch)
    assert t.state["state"] == "Empty"
    assert t.end(bumped.producer_id, bumped.producer_epoch, True).error == Errors.INVALID_TXN_STATE


def test_tv2_end_txn_checks_a_pending_transition_before_the_producer_id():
    """Kafka 4.1.1 TransactionCoordinator.endTransaction (TV2): "This check is performed first so that the pending
    transition can complete before the next checks" -- CONCURRENT_TRANSACTIONS, not INVALID_PRODUCER_ID_MAPPING."""
    t = Txn(tv=2)
    r = t.init()
    t.add(r.producer_id, r.producer_epoch)
    t.c.delay_next("WriteTxnMarkers", 60_000)
    assert t.end(r.producer_id, r.producer_epoch, True).error == Errors.NONE
    assert t.state["pending_state"] == "CompleteCommit"
    assert t.end(r.producer_id + 7, r.producer_epoch + 1, True).error == Errors.CONCURRENT_TRANSACTIONS


def test_tv2_abort_with_nothing_added_starts_the_transaction_at_the_abort():
    """Kafka 4.1.1 TransactionMetadata.prepareAbortOrCommit(noPartitionAdded = true): "the transaction start time is
    uncertain but it is still required. So we can use the update time as the transaction start time"."""
    t = Txn(tv=2)
    r = t.init()
    assert t.state["transaction_start_ms"] == -1
    t.c.advance(5_000)
    at = t.c.kernel.now
    end = t.end(r.producer_id, r.producer_epoch, False)
    assert (end.error, end.producer_epoch) == (Errors.NONE, r.producer_epoch + 1)
    assert at <= t.state["transaction_start_ms"] <= t.c.kernel.now         # when the EndTxn arrived


def test_a_fencing_init_producer_id_is_answered_once_the_abort_is_decided():
    """Kafka's handleInitProducerId: a new instance's InitProducerId that fences an open transaction waits for the
    PrepareAbort write, then is answered CONCURRENT_TRANSACTIONS (sendRetriableErrorCallback); its retry, once the
    abort is complete, bumps the epoch again.  The narration of the decision says so, not the EndTxn's words."""
    from txnlab import gallery
    c, _ = gallery.load("zombie-fenced").play()
    events = c.trace.events
    decided = next(i for i, e in enumerate(events) if "decided (PrepareAbort is durable)" in e.narration)
    answered = next(i for i, e in enumerate(events)
                    if "new-instance got the InitProducerId response" in e.narration and "CONCURRENT_TRANSACTIONS" in
                    e.narration)
    assert decided < answered, "the new instance is answered after the abort is decided, not before"
    words = events[decided].narration
    assert "the new instance is answered CONCURRENT_TRANSACTIONS now (it retries InitProducerId, which bumps the " \
           "epoch again once the abort is complete)" in words
    assert "the client is answered" not in words
    retry = next(e for e in events[answered:] if "got InitProducerId from new-instance" in e.narration)
    assert "epoch 1 -> 2" in retry.narration


def test_a_fence_whose_write_fails_answers_the_new_instance_the_writes_error():
    t = Txn(cfg={"replica.lag.time.max.ms": 2_000})
    r = t.init()
    t.add(r.producer_id, r.producer_epoch)
    for b in [b for b in t.c.brokers if b != t.coord]:
        t.c.crash(b)
    t.c.advance(15_000)                                              # __transaction_state ISR shrinks below 2
    mark = len(t.c.trace.events)
    assert t.init().error == Errors.COORDINATOR_NOT_AVAILABLE       # not CONCURRENT_TRANSACTIONS: nothing decided
    said = " ".join(e.narration for e in t.c.trace.events[mark:])
    assert "PrepareAbort failed with NOT_ENOUGH_REPLICAS -> COORDINATOR_NOT_AVAILABLE" in said
    assert "decided (PrepareAbort is durable)" not in said


def test_a_timed_out_transactions_abort_answers_nobody():
    from txnlab import gallery
    c, _ = gallery.load("transaction-timeout-abort").play()
    decided = [e.narration for e in c.trace.events if "decided (PrepareAbort is durable)" in e.narration]
    assert decided and all("no client waits for an answer (the coordinator aborts on its own)" in d
                           for d in decided)
    assert not any("the client is answered" in d for d in decided)
