"""The producer's transactional requests (the request side of Kafka's ``TransactionManager``).

Owns the queue of transactional requests (one in flight, by priority: FindCoordinator <
InitProducerId < AddPartitionsToTxn/AddOffsetsToTxn < EndTxn < epoch bump), finding the
coordinator again when it moves, ApiVersions (which transaction.version the cluster runs),
InitProducerId (also the KIP-360 bump after an abortable error), AddPartitionsToTxn,
AddOffsetsToTxn + TxnOffsetCommit, EndTxn, and how each error is classified: retriable,
abortable or fatal.  A mixin of ``Sender``.
"""
from __future__ import annotations

import heapq
from typing import Callable, Optional

from ..errors import KafkaError
from ..protocol import messages as m
from ..protocol.errors import Errors
from .config import dialect_of
from .dialect import Action, classify, kafka_error, transaction_version
from .transaction_manager import PRIORITY, S

# A response's error codes are converted to ``Errors`` (for their names) only when one is not NONE: converting
# costs CPython 3.11 a call of the enum class, and NONE is the answer almost every time
_NONE = Errors.NONE
_ONLY_NONE = frozenset({_NONE})
_NOT_FAILED = frozenset({_NONE, Errors.OPERATION_NOT_ATTEMPTED})
_CONCURRENT_TRANSACTIONS = Errors.CONCURRENT_TRANSACTIONS
_ONLY_CONCURRENT = frozenset({_CONCURRENT_TRANSACTIONS})     # every transaction's first AddPartitionsToTxn

# Coordinator errors that mean "ask FindCoordinator again": the coordinator moved, is down or did not answer.
REFIND = {Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, Errors.NETWORK_EXCEPTION,
          Errors.REQUEST_TIMED_OUT}


def _retry_action(dialect: str, api: str, error) -> Optional[str]:
    """What a transactional request does with a coordinator error its client dialect retries (the tables in
    ``dialect.py``): find the coordinator again (it moved or is down) or send again after the backoff (it is
    busy); None when the error is not retried (abortable or fatal)."""
    if classify(dialect, api, error) is not Action.RETRY:
        return None
    return "refind" if error in REFIND else "retry"


class PendingOp:
    __slots__ = ("done", "error", "retrying")

    def __init__(self) -> None:
        self.done = False
        self.error: Optional[KafkaError] = None
        self.retrying = False           # send_offsets: TxnOffsetCommit was answered an error it retries

    def finish(self, error: Optional[KafkaError] = None) -> None:
        self.done = True
        self.error = error



class _CoordinatorCall:
    """One transactional request on its way to its coordinator (``TransactionalRequests._to_coordinator``): find the
    coordinator if needed, send, hand the answer to ``handle``, and act on what it returns (find the coordinator
    again, retry after the backoff or after 20 ms, or done).  An object, not nested closures: a closure that names
    itself (to send again) is a reference cycle that only the garbage collector frees, once per request."""
    __slots__ = ("sender", "name", "build", "handle", "key_type", "key", "refused", "coord")

    def __init__(self, sender, name: str, build: Callable, handle: Callable, key_type: int, key: Optional[str],
                 refused: Optional[Callable[[KafkaError], None]]) -> None:
        self.sender = sender
        self.name = name
        self.build = build
        self.handle = handle
        self.key_type = key_type
        self.key = key if key is not None else sender.txn.transactional_id
        self.refused = refused
        self.coord: Optional[str] = None        # a group coordinator (the transaction's lives on txn.coordinator)

    def send(self) -> None:
        s = self.sender
        coord = s.txn.coordinator if self.key_type == m.COORDINATOR_TRANSACTION else self.coord
        if coord is None:
            s.node.find_coordinator(self.key, self.key_type, self._found)
            return
        req = self.build()
        if req is None:
            s._txn_done()
            return
        s.node.send_request(coord, req, self._on_resp)        # its dialect's timeout (dialect.REQUEST_TIMEOUT)

    def _found(self, node, err) -> None:
        s = self.sender
        if err is not None:
            if classify(s.dialect, "FindCoordinator", err) is not Action.RETRY:
                # refused: no DESCRIBE on the transactional id or the group (an ACL)
                kerr = s._fail_txn(err, "FindCoordinator")
                if self.refused is not None:
                    self.refused(kerr)
                s._txn_done()
            else:
                s._retry_later(self.name, self.send)
            return
        if self.key_type == m.COORDINATOR_TRANSACTION:
            s.txn.coordinator = node
        else:
            self.coord = node
        self.send()

    def _on_resp(self, resp, err) -> None:
        s = self.sender
        action = self.handle(resp, err)
        if action == "refind":
            if self.key_type == m.COORDINATOR_TRANSACTION:
                s.txn.coordinator = None
            else:
                self.coord = None
            s._retry_later(self.name, self.send)
        elif action == "retry":
            s._retry_later(self.name, self.send)
        elif action == "retry-fast":
            s._retry_later(self.name, self.send, 20)
        else:
            s._txn_done()


class TransactionalRequests:
    # ---------------------------------------------------- the request queue
    def _enqueue(self, name: str, send: Callable[[], None]) -> None:
        self._txn_seq += 1
        heapq.heappush(self._txn_queue, (PRIORITY[name], self._txn_seq, name, send))
        self._pump()

    def _pump(self) -> None:
        if self._txn_in_flight or not self._txn_queue or self.node.crashed:
            return
        _, _, name, send = heapq.heappop(self._txn_queue)
        self._txn_in_flight = True
        send()

    def _txn_done(self) -> None:
        self._txn_in_flight = False
        self._pump()
        self.wakeup(0)

    def _retry_later(self, name: str, send: Callable[[], None], ms: Optional[int] = None) -> None:
        self._txn_in_flight = False
        delay = self.cfg["retry.backoff.ms"] if ms is None else ms
        self.node.set_timer(delay, ("retry %s", name), lambda: self._enqueue(name, send))

    def _to_coordinator(self, name: str, build: Callable, handle: Callable, key_type: int = m.COORDINATOR_TRANSACTION,
                        key: Optional[str] = None,
                        refused: Optional[Callable[[KafkaError], None]] = None) -> Callable[[], None]:
        """A send function: find the coordinator if needed, then send, then handle.  A look-up the broker refuses
        (no DESCRIBE on the key) fails the transaction as the dialect says, and ``refused`` gets that error."""
        return _CoordinatorCall(self, name, build, handle, key_type, key, refused).send

    @property
    def dialect(self) -> str:
        return dialect_of(self.cfg)

    def _reaction(self, error, kerr: KafkaError) -> str:
        """How the narration says which client's rule decided (KAFKA-EOS §12)."""
        if kerr.fatal():
            return f"{self.dialect}: {Errors(error).name} is fatal ({kerr.name()})"
        return f"{self.dialect}: {Errors(error).name} is abortable"

    def _fatal(self, error, where: str, kerr: Optional[KafkaError] = None) -> KafkaError:
        """The producer cannot go on: FATAL_ERROR, every call fails with this error from now on.  librdkafka
        folds both fencing errors into ``_FENCED`` (-144); the Java client keeps the broker's code."""
        if kerr is None:
            kerr = kafka_error(self.dialect, where, error, f"{where}: {Errors(error).description}")
            if not kerr.fatal():
                kerr = KafkaError(kerr.code(), kerr.str(), fatal=True, retriable=False)
        self.narrate(f"{self.p.name}: {where} failed with {Errors(error).name}; {self._reaction(error, kerr)}: "
                     f"the producer is now in FATAL_ERROR")
        self.txn.transition(S.FATAL_ERROR, kerr)
        self._abort_undrained(kerr)
        return kerr

    def _abort_undrained(self, kerr) -> None:
        """Records not yet sent can never be part of this transaction now: fail them.  The Java client fails
        them with the transaction's error (abortUndrainedBatches); librdkafka purges its queues on a fatal error
        (rd_kafka_set_fatal_error0) and on an abortable one (rd_kafka_txn_set_abortable_error0:
        RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_ABORT_TXN), so their delivery reports say _PURGE_QUEUE.  (The lab
        purges librdkafka's batches waiting for a retry too only when no sequence number of theirs can be given out
        again: after a fatal error, or when the abort will bump the epoch; see purge_queued.)"""
        self.txn.pending_partitions.clear()
        if self.dialect == "java":
            self.purge_queued(kerr)
            return
        self.purge_queued(KafkaError(KafkaError._PURGE_QUEUE, f"purged: the producer raised a fatal error "
                                     f"({kerr.name()})" if kerr.fatal() else
                                     f"purged: the transaction must be aborted ({kerr.name()})"),
                          retries=kerr.fatal() or self._bump_after_end)

    def _fail_txn(self, error, where: str) -> KafkaError:
        """An error the transaction cannot retry: fatal or abortable as the client dialect classifies it for
        ``where`` (``dialect.classify``); returns the error the caller reports."""
        kerr = kafka_error(self.dialect, where, error, f"{where}: {Errors(error).description}")
        if kerr.fatal():
            return self._fatal(error, where, kerr)
        return self._abortable(error, where)

    def _abortable(self, error, where: str) -> KafkaError:
        kerr = KafkaError(error, f"{where}: {Errors(error).description}", retriable=False, txn_requires_abort=True)
        self.narrate(f"{self.p.name}: {where} failed with {Errors(error).name}; {self._reaction(error, kerr)}: "
                     f"the transaction must be aborted")
        if self.txn.state in (S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR,
                              S.INITIALIZING):
            self.txn.transition(S.ABORTABLE_ERROR, kerr)
            self._abort_undrained(kerr)
        return kerr

    # ---------------------------------------------------------- ApiVersions
    @property
    def transaction_version(self) -> int:
        """The transaction protocol this client speaks with this cluster: what the cluster finalized, capped by
        the client (librdkafka stays classic, Kafka's Java client speaks KIP-890 part 2; see ``dialect.py``).
        Worked out once per ApiVersions answer: every drain of the sender reads it."""
        tv = self._transaction_version
        if tv is None:
            tv = self._transaction_version = transaction_version(
                self.dialect, (self.features or {}).get("transaction.version", 0))
        return tv

    def _learn_features(self, then: Callable[[], None]) -> None:
        """ApiVersions first, as every Kafka client does on a new connection: it tells which
        transaction.version the cluster has finalized (KIP-890's protocol depends on it)."""
        if self._features_requested:
            return
        self._features_requested = True

        def done(resp, err):
            self._features_requested = False
            if err is not None or resp.error:
                self.node.set_timer(self.cfg["retry.backoff.ms"], "retry ApiVersions", lambda: self._learn_features(then))
                return
            self.features = dict(resp.finalized_features)
            self._transaction_version = None
            if self.features.get("transaction.version", 0) >= 2:
                self.narrate(f"{self.p.name}: the cluster finalized transaction.version 2; " + (
                    "Kafka's Java client speaks it (KIP-890: the partition leader adds partitions, every EndTxn "
                    "bumps the epoch)" if self.transaction_version >= 2 else
                    "a librdkafka client does not: it adds partitions with AddPartitionsToTxn and ends "
                    "transactions the classic way (no epoch bump)"))
            then()
        self.node.send_request(self.node.any_broker(), m.ApiVersionsRequest(), done)

    # ------------------------------------------------------ InitProducerId
    def send_init_producer_id(self, bump: bool = False) -> None:
        txn = self.txn
        if self.features is None:
            self._learn_features(lambda: self.send_init_producer_id(bump))
            return
        if self._pid_requested:
            return
        self._pid_requested = True
        if not txn.is_transactional:
            def done(resp, err):
                self._pid_requested = False
                if err is None and resp.error == _NONE:
                    txn.set_producer_id_and_epoch(resp.producer_id, resp.producer_epoch)
                    txn.reset_sequences()
                    self.scan_message_timeouts()     # librdkafka: "PID updated" wakes the broker threads
                    self.wakeup(0)
                else:
                    self.node.set_timer(self.cfg["retry.backoff.ms"], "retry InitProducerId", self.send_init_producer_id)
            req = m.InitProducerIdRequest(None, self.cfg["transaction.timeout.ms"])
            self.node.send_request(self.node.any_broker(), req, done)
            return

        def build():
            if bump:
                return m.InitProducerIdRequest(txn.transactional_id, txn.transaction_timeout_ms,
                                               txn.producer_id, txn.producer_epoch)
            return m.InitProducerIdRequest(txn.transactional_id, txn.transaction_timeout_ms)

        def handle(resp, err):
            if err is not None:
                return "refind"
            e = Errors(resp.error)
            if e == _NONE:
                self._pid_requested = False
                txn.set_producer_id_and_epoch(resp.producer_id, resp.producer_epoch)
                txn.reset_sequences()
                txn.partitions.clear()
                txn.transition(S.READY)
                self.scan_message_timeouts()         # (librdkafka: "PID updated")
                return None
            if action := _retry_action(self.dialect, "InitProducerId", e):
                return action
            self._pid_requested = False
            self._fail_txn(e, "InitProducerId")
            return None
        self._enqueue("EpochBump" if bump else "InitProducerId", self._to_coordinator("InitProducerId", build, handle))

    # ---------------------------------------------------- AddPartitionsToTxn
    def _add_partitions(self) -> None:
        txn = self.txn
        if txn.new_partitions_in_flight or not txn.pending_partitions:
            return
        tps = tuple(sorted(txn.pending_partitions))
        txn.new_partitions_in_flight = set(tps)
        txn.pending_partitions.clear()
        first = not txn.partitions_in_txn

        def build():
            return m.AddPartitionsToTxnRequest(txn.transactional_id, txn.producer_id, txn.producer_epoch, tps)

        def handle(resp, err):
            if err is not None:
                return "refind"
            errors = set(resp.errors.values())
            if errors <= _ONLY_NONE:
                txn.partitions_in_txn.update(tps)
                txn.new_partitions_in_flight = set()
                txn.transaction_started = True
                # librdkafka: "partitions added to transaction" wakes the broker threads, which scan for
                # message timeouts before they send (dialect.MSG_TIMEOUT_SCAN_MS)
                self.scan_message_timeouts()
                return None
            if first and errors == _ONLY_CONCURRENT:
                return "retry-fast"     # (the common case, below, without turning each code into a member)
            errors = {Errors(e) for e in errors}
            bad = next(e for e in errors if e not in _NOT_FAILED) if errors - _NOT_FAILED \
                else Errors.OPERATION_NOT_ATTEMPTED
            if bad == _CONCURRENT_TRANSACTIONS and first:
                return "retry-fast"     # the previous transaction is completing: Kafka retries it after 20ms
            if action := _retry_action(self.dialect, "AddPartitionsToTxn", bad):
                return action
            txn.new_partitions_in_flight = set()
            if not self._fail_txn(bad, "AddPartitionsToTxn").fatal():
                if bad == Errors.INVALID_PRODUCER_ID_MAPPING:
                    self._bump_after_end = True
                self._fail_queued_of(tps, bad)
            return None
        self._enqueue("AddPartitionsToTxn", self._to_coordinator("AddPartitionsToTxn", build, handle))

    def _fail_queued_of(self, tps, error) -> None:
        for tp in tps:
            dq = self.p._acc.batches.get(tp)
            while dq:
                self._complete(dq.popleft(), KafkaError(error, txn_requires_abort=True), -1)

    # ------------------------------------------------------ offsets in txn
    def send_offsets(self, offsets: dict, group_metadata, timeout_ms: Optional[int] = None) -> PendingOp:
        """AddOffsetsToTxn (transaction.version < 2) then TxnOffsetCommit.  ``timeout_ms``: the call's timeout,
        which bounds librdkafka's retries of TxnOffsetCommit (below)."""
        txn = self.txn
        op = PendingOp()
        tv2 = self.transaction_version >= 2
        deadline = None if timeout_ms is None or self.dialect == "java" else self.kernel.now + timeout_ms

        def commit_offsets():
            def build():
                # the version sent: librdkafka's highest is 3 (rd_kafka_txn_send_TxnOffsetCommitRequest); Java's
                # TxnOffsetCommitRequest.Builder sends 5 with transaction.version 2, else 4
                return m.TxnOffsetCommitRequest(txn.transactional_id, group_metadata.group_id, txn.producer_id,
                                                txn.producer_epoch, group_metadata.generation_id,
                                                group_metadata.member_id, group_metadata.group_instance_id,
                                                dict(offsets), 5 if tv2 else 4 if self.dialect == "java" else 3)

            def handle(resp, err):
                if err is not None:
                    return "refind"
                errors = {Errors(e) for e in resp.errors.values()} - {_NONE}
                if not errors:
                    op.finish()
                    return None
                bad = sorted(errors)[0]
                if action := _retry_action(self.dialect, "TxnOffsetCommit", bad):
                    op.retrying = True
                    if deadline is not None and self.kernel.now >= deadline:
                        # librdkafka's rd_kafka_txn_handle_TxnOffsetCommit retries only while the call's timeout
                        # (rko_u.txn.abs_timeout) remains; an answer after it makes the broker's error abortable and
                        # the call's outcome (e.g. UNKNOWN_TOPIC_OR_PARTITION for a partition the broker lacks)
                        self.narrate(f"{self.p.name}: TxnOffsetCommit answered {bad.name} after "
                                     f"send_offsets_to_transaction's timeout: no more retries")
                        op.finish(self._abortable(bad, "TxnOffsetCommit"))
                        return None
                    # the group coordinator loading its partition is asked again via FindCoordinator
                    return "refind" if bad == Errors.COORDINATOR_LOAD_IN_PROGRESS else action
                op.finish(self._fail_txn(bad, "TxnOffsetCommit"))
                return None
            self._enqueue("TxnOffsetCommit", self._to_coordinator(
                "TxnOffsetCommit", build, handle, m.COORDINATOR_GROUP, group_metadata.group_id, refused=op.finish))

        if tv2:
            txn.transaction_started = True
            commit_offsets()
            return op

        def build_add():
            return m.AddOffsetsToTxnRequest(txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                            group_metadata.group_id)

        def handle_add(resp, err):
            if err is not None:
                return "refind"
            e = Errors(resp.error)
            if e == _NONE:
                txn.transaction_started = True
                commit_offsets()
                return None
            if action := _retry_action(self.dialect, "AddOffsetsToTxn", e):
                return action
            op.finish(self._fail_txn(e, "AddOffsetsToTxn"))
            return None
        self._enqueue("AddOffsetsToTxn", self._to_coordinator("AddOffsetsToTxn", build_add, handle_add))
        return op

    # ---------------------------------------------------------------- EndTxn
    def begin_end_txn(self, commit: bool) -> None:
        txn = self.txn
        txn.transition(S.COMMITTING_TRANSACTION if commit else S.ABORTING_TRANSACTION)
        self._end_txn_sent = False
        self._end_commit = commit
        if not commit:
            txn.pending_partitions.clear()
            self.purge_queued(KafkaError(KafkaError._PURGE_QUEUE, "purged: the transaction was aborted"),
                              retries=self._bump_after_end and self.dialect != "java")
        self.wakeup(0)

    def _maybe_end_txn(self) -> None:
        txn = self.txn
        if txn.state not in (S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION) or self._end_txn_sent:
            return
        if self.p._acc.has_queued() or self.p._unassigned or txn.has_in_flight() or txn.new_partitions_in_flight \
                or (self._end_commit and txn.pending_partitions) or self._txn_in_flight:
            return
        commit = self._end_commit
        if commit and txn.dr_fails:
            # (counted for librdkafka only: record_failed_in_txn) rd_kafka_txn_op_commit_transaction: "If any
            # messages failed delivery the transaction must be aborted"
            self.narrate(f"{self.p.name}: {txn.dr_fails} record(s) of the transaction failed delivery: the commit is "
                         f"refused and the transaction must be aborted")
            txn.transition(S.ABORTABLE_ERROR, KafkaError(
                KafkaError._INCONSISTENT, f"{txn.dr_fails} message(s) failed delivery (see individual delivery "
                                          f"reports)", retriable=False, txn_requires_abort=True))
            return
        self._end_txn_sent = True
        if not txn.transaction_started:
            self.narrate(f"{self.p.name}: nothing was added to the transaction; no EndTxn needed")
            self._finish_txn()
            return
        tv2 = self.transaction_version >= 2

        def build():
            return m.EndTxnRequest(txn.transactional_id, txn.producer_id, txn.producer_epoch, commit,
                                   2 if tv2 else 0)

        def handle(resp, err):
            if err is not None:
                return "refind"
            e = resp.error
            if e == _NONE:
                if resp.producer_id >= 0 and tv2:
                    txn.set_producer_id_and_epoch(resp.producer_id, resp.producer_epoch)
                    txn.reset_sequences()
                self._finish_txn()
                return None
            e = Errors(e)
            if action := _retry_action(self.dialect, "EndTxn", e):
                return action
            self._fail_txn(e, "EndTxn")
            if e == Errors.INVALID_PRODUCER_ID_MAPPING:     # not fatal: bump the epoch after the abort
                self._bump_after_end = True
            return None
        self._enqueue("EndTxn", self._to_coordinator("EndTxn", build, handle))

    def _finish_txn(self) -> None:
        txn = self.txn
        txn.partitions_in_txn.clear()
        txn.pending_partitions.clear()
        txn.transaction_started = False
        if self._bump_after_end and self.transaction_version < 2:
            self._bump_after_end = False
            txn.transition(S.INITIALIZING)
            self.narrate(f"{self.p.name}: asking the coordinator for an epoch bump (InitProducerId with the current "
                         f"producer id and epoch, KIP-360)")
            self.send_init_producer_id(bump=True)
            return
        self._bump_after_end = False
        txn.transition(S.READY)     # TV0/TV1: sequences continue across transactions



