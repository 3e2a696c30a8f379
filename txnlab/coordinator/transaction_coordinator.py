"""``TransactionCoordinator``: the request handlers for transactions (KAFKA-EOS §2).

Owns InitProducerId (new ids, epoch bumps, fencing, epoch exhaustion, retries
recognised), AddPartitionsToTxn (incl. KIP-890 VerifyOnly), AddOffsetsToTxn,
EndTxn (classic rules and transaction.version 2), the periodic abort of
timed-out transactions and the expiration of idle transactional ids, and
DescribeTransactions / ListTransactions.  Every state change is written to
``__transaction_state`` (TransactionStateManager) before it is acted on;
markers go out through the TransactionMarkerChannelManager.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.hashing import partition_for
from .producer_id_manager import ProducerIdManager
from .transaction_marker_channel_manager import TransactionMarkerChannelManager
from .transaction_metadata import (EXPIRATION_ALLOWED, MAX_EPOCH, IllegalTransition, PartitionList, S,
                                   STATE_NAMES, TransactionMetadata, TransactionState)
from .transaction_state_manager import TransactionStateManager
from ..protocol.names import OFFSETS_TOPIC

# NONE is read on every request: a member read through its enum class costs CPython 3.11 a call of the class's
# attribute hook
_NONE = Errors.NONE
_CONCURRENT_TRANSACTIONS = Errors.CONCURRENT_TRANSACTIONS    # (a module constant: reading a member through its
                                                             # class costs CPython 3.11 ~600 instructions)
# who waits for the answer when a transaction's end is decided: the EndTxn's client, the new instance whose
# InitProducerId fenced the open transaction, or nobody (the coordinator aborts a timed-out transaction itself)
CLIENT, FENCED_BY_NEW_INSTANCE, NOBODY = "the client", "the new instance", "nobody"


def _answered(md, waiting: str) -> str:
    """What the narration of the decision says about its answer."""
    if waiting == FENCED_BY_NEW_INSTANCE:       # Kafka's handleInitProducerId: sendRetriableErrorCallback
        then = ("gives it a new producer id (this one's epochs are used up)" if md.is_epoch_exhausted
                else "bumps the epoch again")
        return (f"the new instance is answered CONCURRENT_TRANSACTIONS now (it retries InitProducerId, which {then} "
                f"once the abort is complete)")
    if waiting == NOBODY:
        return "no client waits for an answer (the coordinator aborts on its own)"
    return "the client is answered now"


class TransactionCoordinator:
    def __init__(self, broker) -> None:
        self.broker = broker
        self.producer_id_manager = ProducerIdManager(broker)
        self.state_manager = TransactionStateManager(broker)
        self.state_manager.on_loaded = self._on_loaded
        self.markers = TransactionMarkerChannelManager(self)

    @property
    def transaction_version(self) -> int:
        return self.broker.config["transaction.version"]

    @property
    def now(self) -> int:
        return self.broker.kernel.now

    def narrate(self, text: str) -> None:
        self.broker.narrate(text)

    def start(self) -> None:
        c = self.broker.config
        self.broker.set_timer(c["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
                              "abort timed-out transactions", self._abort_timed_out, background=True)
        self.broker.set_timer(c["transaction.remove.expired.transaction.cleanup.interval.ms"],
                              "remove expired transactional ids", self._remove_expired, background=True)

    # ------------------------------------------------------------ elections
    def on_elected(self, partition: int, epoch: int) -> None:
        self.state_manager.on_elected(partition, epoch)

    def on_resigned(self, partition: int, epoch: int) -> None:
        self.state_manager.on_resigned(partition, epoch)
        self.markers.drop_partition(partition)

    def on_high_watermark(self, p) -> None:
        pass

    def _on_loaded(self, partition: int, cache) -> None:
        for tid, md in sorted(cache.metadata.items()):
            if md.state in (S.PrepareCommit, S.PrepareAbort):
                if "no-coordinator-reload" in self.broker.mutations:
                    self.narrate(f"[mutation no-coordinator-reload] {tid!r} is {md.state.name} but its markers are "
                                 f"NOT resent")
                    continue
                target = S.CompleteCommit if md.state == S.PrepareCommit else S.CompleteAbort
                self.narrate(f"{tid!r} was {md.state.name} when the old coordinator stopped: the decision is durable, "
                             f"so the new coordinator finishes it (resends the markers)")
                transit = md.prepare_transition(target, self.now, topic_partitions=frozenset())
                self.markers.add_txn_markers(md, transit, cache.coordinator_epoch, partition, md.producer_epoch)

    def describe(self, transactional_id: str) -> Optional[dict]:
        err, cache = self.state_manager.lookup(transactional_id)
        if err != _NONE:
            return None
        md = cache.metadata.get(transactional_id)
        if md is None:
            return None
        d = md.describe()
        d["coordinator"] = self.broker.broker_id
        d["coordinator_epoch"] = cache.coordinator_epoch
        d["transaction_state_partition"] = self.state_manager.partition_for(transactional_id)
        return d

    # -------------------------------------------------------- InitProducerId
    def handle_init_producer_id(self, msg):
        req = msg.payload
        tid = req.transactional_id
        R = m.InitProducerIdResponse
        if tid is None:
            try:
                pid = self.producer_id_manager.generate()
            except LookupError:
                self.narrate("no producer id block yet; asked the controller for one -> COORDINATOR_LOAD_IN_PROGRESS")
                return R(Errors.COORDINATOR_LOAD_IN_PROGRESS)
            self.narrate(f"new idempotent producer id {pid}, epoch 0 (nothing is persisted)")
            return R(_NONE, pid, 0)
        if tid == "":
            return R(Errors.INVALID_REQUEST)
        max_timeout = self.broker.config["transaction.max.timeout.ms"]
        if req.transaction_timeout_ms <= 0 or req.transaction_timeout_ms > max_timeout:
            self.narrate(f"transaction.timeout.ms={req.transaction_timeout_ms} is not in (0, "
                         f"transaction.max.timeout.ms={max_timeout}] -> INVALID_TRANSACTION_TIMEOUT")
            return R(Errors.INVALID_TRANSACTION_TIMEOUT)
        if (req.producer_id < 0) != (req.producer_epoch < 0):
            return R(Errors.INVALID_REQUEST)
        err, cache = self.state_manager.lookup(tid)
        if err != _NONE:
            self.narrate(f"{tid!r}: {err.name}")
            return R(err)
        md = cache.metadata.get(tid)
        if md is None:
            try:
                pid = self.producer_id_manager.generate()
            except LookupError:
                return R(Errors.COORDINATOR_LOAD_IN_PROGRESS)
            md = TransactionMetadata(tid, pid, txn_timeout_ms=req.transaction_timeout_ms,
                                     txn_last_update_timestamp=self.now)
            cache.metadata[tid] = md
            self.narrate(f"{tid!r} is new: producer id {pid}")
        if md.pending_state is not None:
            self.narrate(f"{tid!r} has a pending transition to {md.pending_state.name} -> CONCURRENT_TRANSACTIONS")
            return R(Errors.CONCURRENT_TRANSACTIONS)
        supplied = req.producer_id >= 0
        if supplied and not (md.producer_epoch < 0 or req.producer_id == md.producer_id or (
                req.producer_id == md.previous_producer_id and md.is_producer_epoch_exhausted(req.producer_epoch))):
            return R(Errors.PRODUCER_FENCED)
        state = md.state
        if state in (S.PrepareCommit, S.PrepareAbort):
            self.narrate(f"{tid!r} is {state.name}: its markers are still going out -> CONCURRENT_TRANSACTIONS")
            return R(Errors.CONCURRENT_TRANSACTIONS)
        if state == S.Ongoing:
            if "no-fencing" in self.broker.mutations:
                self.narrate(f"[mutation no-fencing] {tid!r} has an open transaction; the new instance gets the SAME "
                             f"epoch {md.producer_epoch} and nothing is aborted")
                return R(_NONE, md.producer_id, md.producer_epoch)
            self.narrate(f"{tid!r} has an open transaction: fence the old producer (epoch {md.producer_epoch} -> "
                         f"{md.producer_epoch + (0 if md.has_failed_epoch_fence else 1)}) and abort it; the new "
                         f"instance is answered after the PrepareAbort write (CONCURRENT_TRANSACTIONS if it succeeds: "
                         f"it must retry)")
            md.prepare_fence_producer_epoch(self.transaction_version)

            def answer(error, *_):      # Kafka's sendRetriableErrorCallback: the abort's write decides the answer
                self.broker.respond(msg, R(_CONCURRENT_TRANSACTIONS if error == _NONE else error))
            self._end_transaction(tid, md.producer_id, md.producer_epoch, False, from_client=False, respond=answer)
            return None
        # Empty / CompleteCommit / CompleteAbort
        kw = dict(topic_partitions=frozenset(), txn_start_timestamp=-1, txn_timeout_ms=req.transaction_timeout_ms)
        if md.is_epoch_exhausted and (not supplied or req.producer_epoch == md.producer_epoch):
            try:
                new_pid = self.producer_id_manager.generate()
            except LookupError:
                return R(Errors.COORDINATOR_LOAD_IN_PROGRESS)
            self.narrate(f"{tid!r}: epoch {md.producer_epoch} is exhausted -> new producer id {new_pid}, epoch 0")
            kw.update(producer_id=new_pid, producer_epoch=0, previous_producer_id=md.producer_id,
                      last_producer_epoch=md.producer_epoch if supplied else -1)
        elif not supplied:
            if "no-fencing" in self.broker.mutations and md.producer_epoch >= 0:
                self.narrate(f"[mutation no-fencing] {tid!r} keeps epoch {md.producer_epoch}: the old instance is "
                             f"NOT fenced")
                kw.update(producer_epoch=md.producer_epoch, last_producer_epoch=-1)
            else:
                kw.update(producer_epoch=md.producer_epoch + 1, last_producer_epoch=-1)
        elif req.producer_epoch == md.producer_epoch or md.producer_epoch < 0:
            kw.update(producer_epoch=md.producer_epoch + 1, last_producer_epoch=md.producer_epoch)
        elif req.producer_epoch == md.last_producer_epoch:
            # Kafka's prepareIncrementProducerEpoch: Right(producerEpoch, lastProducerEpoch), written as an Empty
            # transition like any other (the state becomes Empty, the timeout is the request's)
            self.narrate(f"{tid!r}: a retry of an epoch bump that already succeeded; answering with the current epoch")
            kw.update(producer_epoch=md.producer_epoch, last_producer_epoch=md.last_producer_epoch)
        else:
            return R(Errors.PRODUCER_FENCED)
        transit = md.prepare_transition(S.Empty, self.now, self.transaction_version, **kw)
        epochs = (f"epoch {md.producer_epoch} -> {transit.producer_epoch}" if md.producer_epoch >= 0 else
                  f"epoch {transit.producer_epoch} (its first: it had no epoch yet)")
        self.narrate(f"{tid!r}: producer id {transit.producer_id}, {epochs}"
                     + (" (an older instance with this transactional.id is now fenced)"
                        if 0 <= md.producer_epoch != transit.producer_epoch else ""))

        def done(error):
            if error == _NONE:
                self.broker.respond(msg, R(_NONE, md.producer_id, md.producer_epoch))
            else:
                self.broker.respond(msg, R(error))
        self.state_manager.append_transition(md, transit, cache.coordinator_epoch, done)
        return None

    # ---------------------------------------------------- AddPartitionsToTxn
    def _validate_txn_request(self, tid, pid, epoch, verify_only: bool = False):
        """Common checks: returns (error, cache, md).  Kafka 4.1 handleAddPartitionsToTransaction checks a pending
        transition first (with TV2 the producer may already use the new producer id of a pending epoch overflow);
        handleVerifyPartitionsInTransaction does not check it at all (the append is validated again)."""
        err, cache = self.state_manager.lookup(tid)
        if err != _NONE:
            return err, None, None
        md = cache.metadata.get(tid)
        if md is not None and md.pending_state is not None and not verify_only:
            return self._concurrent(tid, md.pending_state), cache, md
        if md is None or md.producer_id != pid:
            self.narrate(f"{tid!r}: producer id {pid} does not belong to it -> INVALID_PRODUCER_ID_MAPPING")
            return Errors.INVALID_PRODUCER_ID_MAPPING, cache, md
        if md.producer_epoch != epoch:
            self.narrate(f"{tid!r}: request epoch {epoch} but the current epoch is {md.producer_epoch} -> "
                         f"PRODUCER_FENCED")
            return Errors.PRODUCER_FENCED, cache, md
        if md.state in (S.PrepareCommit, S.PrepareAbort):
            return self._concurrent(tid, md.state), cache, md
        return _NONE, cache, md

    def _concurrent(self, tid, state) -> Errors:
        # narrate_f: written only if the step is read (a state's str() is its name); the lines of every transaction
        self.broker.kernel.narrate_f(("%r is finishing its previous transaction (%s) -> CONCURRENT_TRANSACTIONS",
                                      tid, STATE_NAMES[state]))
        return _CONCURRENT_TRANSACTIONS

    def handle_AddPartitionsToTxn(self, msg):
        req = msg.payload
        R = m.AddPartitionsToTxnResponse
        if req.transactions:
            return self._add_partitions_for_brokers(msg, req.transactions)
        # a producer's (v0-3): one transaction, never verify-only
        errors = self._add_or_verify(req.transactional_id, req.producer_id, req.producer_epoch, tuple(req.partitions),
                                     False, lambda errors: self.broker.respond(msg, R(errors)))
        return None if errors is None else R(errors)

    def _add_partitions_for_brokers(self, msg, transactions: tuple):
        """A partition leader's batch (v4+, from its AddPartitionsToTxnManager): each transaction verified or added
        on its own, the response sent once every one has its result (KafkaApis.handleAddPartitionsToTxnRequest's
        addResultAndMaybeSendResponse)."""
        results: dict = {}

        def result(tid, errors):
            results[tid] = errors
            if len(results) == len(transactions):      # (at once, in the handler, when nothing had to be written)
                self.broker.respond(msg, m.AddPartitionsToTxnResponse({}, results))
        for t in transactions:
            # (a verification is answered at once: no callback to make for it)
            errors = self._add_or_verify(t.transactional_id, t.producer_id, t.producer_epoch, tuple(t.partitions),
                                         t.verify_only, None if t.verify_only else
                                         lambda errors, tid=t.transactional_id: result(tid, errors))
            if errors is not None:
                result(t.transactional_id, errors)
        return None

    def _add_or_verify(self, tid: str, pid: int, epoch: int, tps: tuple, verify_only: bool,
                       done: Optional[Callable[[dict], None]]):
        """One transaction of an AddPartitionsToTxn: its errors per partition now, or None when ``done(errors)``
        follows once the transaction's new partitions are durable in __transaction_state."""
        unknown = [tp for tp in tps if tp not in self.broker.metadata.partitions]
        if unknown:     # (KafkaApis.handleAddPartitionsToTxnRequest checks the topics before the coordinator does)
            return {tp: (Errors.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else Errors.OPERATION_NOT_ATTEMPTED)
                    for tp in tps}
        err, cache, md = self._validate_txn_request(tid, pid, epoch, verify_only)
        if err != _NONE:
            return {tp: err for tp in tps}
        if verify_only:
            # (Kafka 4.1: a partition is in the transaction from its durable add until the end marker's Complete*)
            res = {tp: (_NONE if tp in md.topic_partitions else Errors.TRANSACTION_ABORTABLE) for tp in tps}
            bad = [f"{t}-{p}" for (t, p), e in res.items() if e]
            if bad:
                self.narrate(f"verification for {tid!r}: {', '.join(bad)} not in the current transaction -> "
                             f"TRANSACTION_ABORTABLE")
            else:
                self.broker.kernel.narrate_f(("verification for %r: all partitions are in the current transaction",
                                              tid))
            return res
        err = self._add_partitions(md, cache, tps, lambda e: done({tp: e for tp in tps}))
        return None if err is None else {tp: err for tp in tps}

    def _add_partitions(self, md, cache, tps, done: Callable[[Errors], None]):
        """Add ``tps`` to the transaction: NONE now when they are in it already, else None and ``done(error)`` once
        the transition is written."""
        if md.state == S.Ongoing and set(tps) <= md.topic_partitions:
            return _NONE
        new = md.topic_partitions | set(tps)
        start = self.now if md.state in (S.Empty, S.CompleteCommit, S.CompleteAbort) else md.txn_start_timestamp
        transit = md.prepare_transition(S.Ongoing, self.now, self.transaction_version,
                                        topic_partitions=frozenset(new), txn_start_timestamp=start)
        self.broker.kernel.narrate_f(("%r adds %s to its transaction", md.transactional_id,
                                      PartitionList(set(tps) - md.topic_partitions)))
        self.state_manager.append_transition(md, transit, cache.coordinator_epoch, done)
        return None

    def handle_AddOffsetsToTxn(self, msg):
        req = msg.payload
        R = m.AddOffsetsToTxnResponse
        err, cache, md = self._validate_txn_request(req.transactional_id, req.producer_id, req.producer_epoch)
        if err != _NONE:
            return R(err)
        tp = (OFFSETS_TOPIC, partition_for(req.group_id, self.broker.config["offsets.topic.num.partitions"]))
        self.narrate(f"group {req.group_id!r} lives on {tp[0]}-{tp[1]}; that partition joins the transaction")
        err = self._add_partitions(md, cache, (tp,), lambda e: self.broker.respond(msg, R(e)))
        return None if err is None else R(err)

    # ----------------------------------------------------------------- EndTxn
    def handle_EndTxn(self, msg):
        req = msg.payload

        def respond(error, pid=-1, epoch=-1):
            self.broker.respond(msg, m.EndTxnResponse(error, pid, epoch))
        # Kafka decides by the request's version, not the cluster's: a classic EndTxn (below v5) on a cluster that
        # finalized transaction.version 2 is ended the classic way (no epoch bump)
        tv = self.transaction_version if req.transaction_version < 0 else min(req.transaction_version,
                                                                              self.transaction_version)
        if tv < 2 <= self.transaction_version:
            self.narrate(f"{req.transactional_id!r}: EndTxn of the classic protocol (the client speaks transaction "
                         f"version {req.transaction_version}): ended without an epoch bump")
        self._end_transaction(req.transactional_id, req.producer_id, req.producer_epoch, req.committed,
                              from_client=True, respond=respond, client_tv=tv)
        return None

    def _end_transaction(self, tid: str, pid: int, epoch: int, commit: bool, from_client: bool,
                         respond: Optional[Callable], client_tv: Optional[int] = None) -> Any:
        """End ``tid``'s transaction: for an EndTxn's client, for the new instance whose InitProducerId fenced it
        (not from a client, with ``respond``), or for nobody (a timed-out transaction: no ``respond``)."""
        # who waits for the answer (the decision's narration says)
        waiting = CLIENT if from_client else FENCED_BY_NEW_INSTANCE if respond is not None else NOBODY
        reply = respond or (lambda *a: None)
        client_tv = self.transaction_version if client_tv is None else client_tv
        if client_tv >= 2 and from_client:
            return self._end_transaction_tv2(tid, pid, epoch, commit, reply)
        err, cache = self.state_manager.lookup(tid)
        if err != _NONE:
            return reply(err)
        md = cache.metadata.get(tid)
        if md is None or md.producer_id != pid:
            return reply(Errors.INVALID_PRODUCER_ID_MAPPING)
        if (from_client and md.producer_epoch != epoch) or (not from_client and epoch < md.producer_epoch):
            self.narrate(f"{tid!r}: EndTxn with epoch {epoch} but the current epoch is {md.producer_epoch} -> "
                         f"PRODUCER_FENCED")
            return reply(Errors.PRODUCER_FENCED)
        fencing = md.pending_state == S.PrepareEpochFence
        if md.pending_state is not None and not fencing:
            return reply(Errors.CONCURRENT_TRANSACTIONS)
        st = md.state
        if st == S.Ongoing:
            target = S.PrepareCommit if commit else S.PrepareAbort
        elif st == S.PrepareCommit:
            return reply(Errors.CONCURRENT_TRANSACTIONS if commit else Errors.INVALID_TXN_STATE)
        elif st == S.PrepareAbort:
            return reply(Errors.INVALID_TXN_STATE if commit else Errors.CONCURRENT_TRANSACTIONS)
        elif st == S.CompleteCommit:
            if commit:
                self.narrate(f"{tid!r}: the commit already finished (a retried EndTxn) -> NONE")
            return reply(_NONE if commit else Errors.INVALID_TXN_STATE)
        elif st == S.CompleteAbort:
            return reply(Errors.INVALID_TXN_STATE if commit else _NONE)
        else:
            self.narrate(f"{tid!r} is {st.name}: there is no transaction to end -> INVALID_TXN_STATE")
            return reply(Errors.INVALID_TXN_STATE)
        if fencing:
            md.pending_state = None
            if self.transaction_version >= 2:
                # Kafka 4.1 abortTimedOutTransactions / handleInitProducerId end a fenced transaction with the
                # server's transaction version: endTransaction (TV2, isEpochFence) -> prepareAbortOrCommit bumps the
                # epoch and keeps the old one as lastProducerEpoch; a failed write is not remembered
                # (hasFailedEpochFence stays false: "we allow re-bumping the epoch on retry")
                transit = md.prepare_transition(target, self.now, 2, producer_epoch=md.producer_epoch + 1,
                                                last_producer_epoch=md.producer_epoch, client_transaction_version=0)
                return self._write_prepare(md, cache, transit, reply, False, waiting=waiting)
        # a classic client on a transaction.version 2 cluster: its markers are written the classic way
        # (client_transaction_version 1 marks "explicitly classic"; 0 means "as the cluster finalized")
        kw = {"client_transaction_version": 1} if from_client and client_tv < 2 <= self.transaction_version else {}
        transit = md.prepare_transition(target, self.now, self.transaction_version, **kw)
        self._write_prepare(md, cache, transit, reply, fencing, waiting=waiting)

    def _write_prepare(self, md, cache, transit, reply, fencing: bool, tv2_response: bool = False,
                       complete_kw: Optional[dict] = None, waiting: str = CLIENT) -> None:
        tid = md.transactional_id
        self.broker.kernel.narrate_f(("%r: %s is written first; once it is durable the outcome is decided", tid,
                                      STATE_NAMES[transit.txn_state]))

        def done(error):
            if error != _NONE:
                if fencing:
                    md.has_failed_epoch_fence = True
                return reply(error)
            target = S.CompleteCommit if transit.txn_state == S.PrepareCommit else S.CompleteAbort
            # Kafka's prepareComplete: a finished transaction has no partitions any more, and the outcome is
            # durable, so a fence that failed earlier is over: the next fence bumps the epoch again
            # (TransactionMetadata.prepareComplete sets hasFailedEpochFence = false)
            md.has_failed_epoch_fence = False
            complete = md.prepare_transition(target, self.now, self.transaction_version,
                                             topic_partitions=frozenset())
            self.broker.kernel.narrate_f(("%r: decided (%s is durable); %s, markers follow", tid,
                                          STATE_NAMES[transit.txn_state], _answered(md, waiting)))
            if tv2_response:
                reply(_NONE, md.producer_id, md.producer_epoch)
            else:
                reply(_NONE)
            self.markers.add_txn_markers(md, complete, cache.coordinator_epoch,
                                         self.state_manager.partition_for(tid), md.producer_epoch)
        self.state_manager.append_transition(md, transit, cache.coordinator_epoch, done)

    def _end_transaction_tv2(self, tid, pid, epoch, commit, reply) -> None:
        """KIP-890 part 2: every EndTxn bumps the epoch, so a delayed EndTxn of an earlier
        transaction can never end a later one; a retry is recognised by epoch + 1."""
        what = "COMMIT" if commit else "ABORT"

        def fail(error: Errors, why: str):
            self.narrate(f"{tid!r}: EndTxn({what}) with pid {pid} epoch {epoch}: {why} -> {error.name}")
            return reply(error)

        err, cache = self.state_manager.lookup(tid)
        if err != _NONE:
            return fail(err, "this broker cannot answer for it now")
        md = cache.metadata.get(tid)
        if md is None:
            return fail(Errors.INVALID_PRODUCER_ID_MAPPING, "the coordinator does not know this transactional.id")
        retry = (md.producer_id == pid and md.producer_epoch == epoch + 1) or \
            (md.previous_producer_id == pid and epoch == MAX_EPOCH - 1 and md.producer_epoch == 0)
        # (Kafka 4.1 endTransaction checks a pending transition first: the producer may already use the new producer
        # id of an epoch overflow that is still pending)
        if md.pending_state is not None and md.pending_state != S.PrepareEpochFence:
            return fail(Errors.CONCURRENT_TRANSACTIONS, f"a transition to {md.pending_state.name} is still pending")
        if md.producer_id != pid and not retry:
            return fail(Errors.INVALID_PRODUCER_ID_MAPPING, f"its producer id is {md.producer_id}")
        st = md.state
        current = md.producer_id == pid and md.producer_epoch == epoch
        stale = f"the current epoch is {md.producer_epoch}, so this request is from an older transaction"
        if st == S.Ongoing:
            if not current:
                return fail(Errors.PRODUCER_FENCED, stale)
            target = S.PrepareCommit if commit else S.PrepareAbort
        elif st in (S.PrepareCommit, S.PrepareAbort):
            if not retry:
                return fail(Errors.PRODUCER_FENCED, stale)
            same = (st == S.PrepareCommit) == commit
            return fail(Errors.CONCURRENT_TRANSACTIONS if same else Errors.INVALID_TXN_STATE,
                        f"a retry while the transaction is {st.name}")
        elif st in (S.CompleteCommit, S.CompleteAbort, S.Empty):
            if retry:
                if st == S.Empty:
                    return fail(Errors.PRODUCER_FENCED, "a retry, but nothing was ended")
                if (st == S.CompleteCommit) == commit:
                    self.narrate(f"{tid!r}: a retry of the EndTxn that already finished ({st.name}) -> NONE")
                    return reply(_NONE, md.producer_id, md.producer_epoch)
                return fail(Errors.INVALID_TXN_STATE, f"a retry asking the opposite of {st.name}")
            if not current:
                return fail(Errors.PRODUCER_FENCED, stale)
            if commit:
                return fail(Errors.INVALID_TXN_STATE, f"there is no open transaction to commit ({st.name})")
            target = S.PrepareAbort     # abort with nothing open: a safe way to obtain a fresh epoch
        else:
            return fail(Errors.INVALID_TXN_STATE, f"state {st.name}")
        md.pending_state = None
        kw = dict(producer_epoch=md.producer_epoch + 1, last_producer_epoch=md.producer_epoch)
        if md.client_transaction_version == 1:          # a classic client used this id before: no longer
            kw["client_transaction_version"] = 0
        if st != S.Ongoing:     # (Kafka 4.1 prepareAbortOrCommit, noPartitionAdded: the start time is the update time)
            kw["topic_partitions"] = frozenset()
            kw["txn_start_timestamp"] = self.now
        complete_kw = None
        if md.is_producer_epoch_exhausted(md.producer_epoch + 1):
            try:
                next_pid = self.producer_id_manager.generate()
            except LookupError:
                return fail(Errors.COORDINATOR_LOAD_IN_PROGRESS, "waiting for a block of producer ids")
            kw["next_producer_id"] = next_pid
            complete_kw = dict(producer_id=next_pid, producer_epoch=0, previous_producer_id=md.producer_id,
                               next_producer_id=-1)
            self.narrate(f"{tid!r}: epoch {md.producer_epoch + 1} is exhausted; after this transaction the "
                         f"producer continues as producer id {next_pid}, epoch 0")
        transit = md.prepare_transition(target, self.now, 2, **kw)
        self.narrate(f"{tid!r} (transaction.version 2): the epoch is bumped on every EndTxn: "
                     f"{md.producer_epoch} -> {transit.producer_epoch}")
        self._write_prepare(md, cache, transit, reply, False, tv2_response=True, complete_kw=complete_kw)

    # ------------------------------------------------------------- periodic
    def _abort_timed_out(self) -> None:
        now = self.now
        for part, cache, md in list(self.state_manager.all_metadata()):
            if md.state == S.Ongoing and md.pending_state is None and \
                    md.txn_start_timestamp + md.txn_timeout_ms < now:
                self.broker.kernel.current.background = False
                self.narrate(f"{md.transactional_id!r} has been open since {md.txn_start_timestamp}ms, longer than "
                             f"its transaction.timeout.ms={md.txn_timeout_ms}: the coordinator fences the producer "
                             f"(epoch {md.producer_epoch} -> " + (
                                 f"{md.producer_epoch}, not bumped again: the last fence was not written"
                                 if md.has_failed_epoch_fence else f"{md.producer_epoch + 1}") + ") and aborts it")
                try:
                    md.prepare_fence_producer_epoch(self.transaction_version)
                except IllegalTransition:
                    continue
                self._end_transaction(md.transactional_id, md.producer_id, md.producer_epoch, False,
                                      from_client=False, respond=None)
        self.broker.set_timer(self.broker.config["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
                              "abort timed-out transactions", self._abort_timed_out, background=True)

    def _remove_expired(self) -> None:
        now = self.now
        ttl = self.broker.config["transactional.id.expiration.ms"]
        for part, cache, md in list(self.state_manager.all_metadata()):
            if md.state in EXPIRATION_ALLOWED and md.pending_state is None and \
                    md.txn_last_update_timestamp + ttl <= now:
                self.broker.kernel.current.background = False
                self.narrate(f"{md.transactional_id!r} was idle for transactional.id.expiration.ms={ttl}: "
                             f"it expires (a tombstone is written)")
                transit = md.prepare_transition(S.Dead, now)
                self.state_manager.append_transition(md, transit, cache.coordinator_epoch, lambda e: None)
        self.broker.set_timer(self.broker.config["transaction.remove.expired.transaction.cleanup.interval.ms"],
                              "remove expired transactional ids", self._remove_expired, background=True)

    # ---------------------------------------------------------------- admin
    def handle_DescribeTransactions(self, msg):
        """Kafka's KafkaApis.handleDescribeTransactionsRequest: DESCRIBE on each transactional id, asked before
        anything else (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for that id), then
        TransactionCoordinator.handleDescribeTransactions; the partitions of topics the principal may not
        DESCRIBE are left out of the answer."""
        allowed = self.broker._allowed
        who = self.broker.cluster.principal_of(msg.src)
        out = []
        for tid in msg.payload.transactional_ids:
            if not allowed(msg, "TRANSACTIONAL_ID", tid, "DESCRIBE"):
                self.narrate(f"{who} may not DESCRIBE transactional.id {tid!r} "
                             f"-> TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
                out.append({"transactional_id": tid, "error": int(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)})
                continue
            err, cache = self.state_manager.lookup(tid) if tid else (Errors.INVALID_REQUEST, None)
            md = cache.metadata.get(tid) if cache else None
            if err != _NONE:
                out.append({"transactional_id": tid, "error": int(err)})
            elif md is None or md.state == S.Dead:
                # Dead: the id is being expired (its tombstone is on the way), so Kafka reports it as gone
                out.append({"transactional_id": tid, "error": int(Errors.TRANSACTIONAL_ID_NOT_FOUND)})
            else:
                d = md.describe()
                d["error"] = 0
                d["coordinator"] = self.broker.broker_id
                hidden = sorted({t for t, _ in d["partitions"] if not allowed(msg, "TOPIC", t, "DESCRIBE")})
                if hidden:
                    self.narrate(f"{who} may not DESCRIBE topic(s) {hidden}: their partitions are left out of "
                                 f"{tid!r}'s description")
                    d["partitions"] = [tp for tp in d["partitions"] if tp[0] not in hidden]
                out.append(d)
        return m.DescribeTransactionsResponse(tuple(out))

    def handle_ListTransactions(self, msg):
        """Kafka's TransactionStateManager.listTransactionStates: every id this coordinator holds but the Dead
        (being expired), filtered by state name, producer id and how long the transaction has run; then, as
        KafkaApis.handleListTransactionsRequest, only the ids the principal may DESCRIBE (no error for the
        others, and DESCRIBE on the cluster does not show them)."""
        req = msg.payload
        if self.state_manager.loading:
            return m.ListTransactionsResponse(Errors.COORDINATOR_LOAD_IN_PROGRESS)
        known = set(TransactionState.__members__)
        unknown = tuple(f for f in req.state_filters if f not in known)
        now = self.broker.kernel.now
        rows = []
        for part, cache, md in self.state_manager.all_metadata():
            if md.state == S.Dead:
                continue
            if req.state_filters and md.state.name not in req.state_filters:
                continue
            if req.producer_id_filters and md.producer_id not in req.producer_id_filters:
                continue
            if req.duration_filter >= 0 and now - md.txn_start_timestamp <= req.duration_filter:
                continue
            rows.append((md.transactional_id, md.producer_id, md.state.name))
        if self.broker.cluster.authorizer is not None:
            shown = [r for r in rows if self.broker._allowed(msg, "TRANSACTIONAL_ID", r[0], "DESCRIBE")]
            if len(shown) < len(rows):
                self.narrate(f"{self.broker.cluster.principal_of(msg.src)} may not DESCRIBE "
                             f"{len(rows) - len(shown)} of the {len(rows)} transactional id(s) listed here: "
                             f"they are left out of the list")
                rows = shown
        return m.ListTransactionsResponse(_NONE, tuple(rows), unknown)
