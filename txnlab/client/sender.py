"""The producer's ``Sender``: drains batches into Produce requests and runs transactional requests.

Owns when a batch is sent (linger, flush, retries with backoff), sequence
assignment at drain time, at most ``max.in.flight.requests.per.connection``
requests per broker, the handling of every Produce error as Kafka's client
does (retry, OUT_OF_ORDER_SEQUENCE_NUMBER, the KIP-360 epoch bump, abortable
and fatal errors; librdkafka's own rules for an idempotent or transactional
producer are librdkafka_produce.py's), delivery timeouts, and the transactional request queue
(FindCoordinator, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
TxnOffsetCommit, EndTxn), one request in flight at a time, by priority.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..errors import KafkaError
from ..protocol import messages as m
from ..protocol.errors import Errors, LocalTimeout
from ..protocol.record_batch import RecordBatch
from .batch_expiry import BatchExpiry
from .dialect import (EXPIRES_IN_FLIGHT, MSG_TIMEOUT_SCAN_MS, PRODUCE_GAVE_UP, PRODUCE_TIMEOUT, WAKES_AT_BATCH_EXPIRY, Action, check,
                      classify, normalize, produce_version, seen_as)
from .librdkafka_produce import LibrdkafkaProduceErrors
from .message import Message
from .transaction_manager import S
from .txn_requests import TransactionalRequests

# NONE is read on every request: a member read through its enum class costs CPython 3.11 a call of the class's
# attribute hook
_NONE = Errors.NONE


class Sender(TransactionalRequests, BatchExpiry, LibrdkafkaProduceErrors):
    def __init__(self, producer) -> None:
        self.p = producer
        self.node = producer._node
        self.kernel = producer._kernel
        self.cfg = producer._config
        self.txn = producer._txn
        self.flushing = 0
        self._wakeup_ev = None
        self._inflight_requests: dict = {}
        self._txn_queue: list = []
        self._txn_seq = 0
        self._txn_in_flight = False
        self._pid_requested = False
        self._end_txn_sent = False
        self._end_commit = False
        self._bump_after_end = False
        self.features: Optional[dict] = None     # learned from ApiVersions
        self._transaction_version: Optional[int] = None     # (TransactionalRequests.transaction_version)
        self._features_requested = False
        # how long a Produce waits, from what is left of its oldest record's delivery time (dialect.PRODUCE_TIMEOUT)
        self._produce_timeout = PRODUCE_TIMEOUT[check(self.dialect)]
        # Produce requests whose batches expire while in flight (dialect.EXPIRES_IN_FLIGHT): token -> (batches,
        # the kernel timer at the soonest delivery timeout of those not yet done)
        self._expires_in_flight = EXPIRES_IN_FLIGHT[self.dialect]
        self._wakes_at_expiry = WAKES_AT_BATCH_EXPIRY[self.dialect]
        self._expiring: dict = {}
        self._expiring_seq = 0
        self._resolve_deferred = False      # (BatchExpiry._on_delivery_timeout)
        # librdkafka's message timeout scan (dialect.MSG_TIMEOUT_SCAN_MS): every _scan_ms from the producer's start
        self._scan_ms = MSG_TIMEOUT_SCAN_MS[self.dialect]
        self._scan_origin = self.kernel.now
        self._scan_ev = None
        self._scan_requested = False
        # librdkafka's idempotent and transactional producer: partitions that wait until none of their batches is in
        # flight before they send again (rd_kafka_idemp_drain_toppar, "drain before retrying"; see _librdkafka_drain)
        # (None: the producer does not follow those rules, which its config decides once; see librdkafka_produce.py)
        self._draining: Optional[set] = set() if producer._idempotent and self.dialect == "librdkafka" \
            and not self.cfg["sim.naive.client"] else None

    def on_crash(self) -> None:
        self._wakeup_ev = None
        if self._draining:
            self._draining.clear()
        self.kernel.cancel(self._scan_ev)
        self._scan_ev = None
        for _, ev in self._expiring.values():
            self.kernel.cancel(ev)
        self._expiring.clear()

    # ------------------------------------------------------------- wakeups
    def wakeup(self, delay_ms: int) -> None:
        k = self.kernel
        self._resolve_deferred = False      # a new reason to run: it resolves sequences (BatchExpiry)
        if self.node.crashed:
            return
        ev = self._wakeup_ev
        if ev is not None and not ev.cancelled and ev.time <= k.now + delay_ms:
            return
        if ev is not None:
            k.cancel(ev)
        self._wakeup_ev = self.node.set_timer(delay_ms, "sender wakeup", self.run)

    def narrate(self, text: str) -> None:
        self.kernel.narrate(text)

    # ---------------------------------------------------------------- drain
    def run(self) -> None:
        self._wakeup_ev = None
        p, txn, k = self.p, self.txn, self.kernel
        now = k.now
        if self._scan_requested:
            self._scan_requested = False
            self._expire_batches(now, scan=True)
        else:
            self._expire_batches(now)
        deferred, self._resolve_deferred = self._resolve_deferred, False
        # (a run that may send the EndTxn resolves first, as Java's runOnce does before its transactional request)
        if txn.unresolved and (not deferred or txn.state == S.COMMITTING_TRANSACTION
                               or txn.state == S.ABORTING_TRANSACTION):
            self._maybe_resolve_sequences()
        if p._idempotent and not txn.is_transactional:
            if txn.epoch_bump_required and not self._any_in_flight():
                old = txn.producer_epoch
                if txn.bump_idempotent_epoch():
                    self.narrate(f"{p.name} bumped its epoch {old} -> {txn.producer_epoch} locally (KIP-360) and "
                                 f"restarts sequences at 0")
                    self._renumber_queued()
                    if self._scan_ms:     # librdkafka: "message drain done" wakes the broker threads: a scan
                        self._expire_batches(now, scan=True)
            if not txn.has_producer_id:
                self.send_init_producer_id()
                return
        if txn.is_transactional:
            if not txn.has_producer_id or txn.state in (S.UNINITIALIZED, S.INITIALIZING):
                return
            if txn.pending_partitions and txn.state in (S.IN_TRANSACTION, S.COMMITTING_TRANSACTION):
                if self.transaction_version >= 2:
                    # KIP-890 part 2: the partition leader adds the partition on our behalf
                    txn.partitions_in_txn.update(txn.pending_partitions)
                    txn.pending_partitions.clear()
                    txn.transaction_started = True
                else:
                    self._add_partitions()
        next_wake = None
        by_node: dict = {}
        linger = self.cfg["linger.ms"]
        need_metadata = False
        # librdkafka: no ProduceRequest while the producer drains for an epoch bump (its broker threads produce only
        # with a PID in idempotence state ASSIGNED: rd_kafka_idemp_drain_epoch_bump), after a fatal error
        # (rd_kafka_toppar_producer_serve: "Fatal error has been raised, don't produce"), or while its transaction must
        # be aborted (rd_kafka_txn_may_send_msg: only IN_TRANSACTION or BEGIN_COMMIT).  (Nor, in librdkafka, while it
        # is being aborted: abort_transaction purges the queues first and a retry answered later waits for its
        # message.timeout.ms.  The lab sends such a retry before the EndTxn, under the aborted transaction's epoch,
        # as Kafka's Java client does: a known difference.)
        drains = self._draining is not None
        state = txn.state
        held = drains and (txn.epoch_bump_required or state == S.FATAL_ERROR or state == S.ABORTABLE_ERROR)
        for tp, dq in (() if held else p._acc.batches.items()):
            if not dq:
                continue
            b = dq[0]
            if b.retry and b.next_attempt_ms > now:
                next_wake = min(next_wake or b.next_attempt_ms, b.next_attempt_ms)
                continue
            ready = self.flushing or len(dq) > 1 or b.closed or now - b.created_ms >= linger or b.retry \
                or txn.state == S.COMMITTING_TRANSACTION
            if not ready:
                t = b.created_ms + linger
                next_wake = t if next_wake is None else min(next_wake, t)
                continue
            if txn.is_transactional and tp not in txn.partitions_in_txn:
                continue
            if drains:
                # librdkafka: a partition that drains sends nothing until none of its requests is in flight; then
                # its retries go out like any queued batch, up to the in-flight limit (rd_kafka_toppar_producer_serve).
                # A partition whose leader moved drains too: "wait for outstanding requests to finish before
                # producing to new leader" (rd_kafka_toppar_broker_delegate -> rd_kafka_idemp_drain_toppar), so that a
                # batch still in flight to the old leader is answered, and retried first, before the next one goes out
                s = txn.partitions.get(tp)
                if s is not None and s.in_flight and tp not in self._draining:
                    leader = self.node.leader_for(tp)
                    if leader is not None and any(x.in_flight and x.sent_to != leader for x in s.in_flight):
                        self._draining.add(tp)
                        self.narrate(f"{p.name}: {tp[0]}-{tp[1]} has a new leader ({leader}) while a request to the "
                                     f"old one is in flight; it sends nothing there until that request is answered")
                if tp in self._draining:
                    if any(x.in_flight for x in txn.seq(tp).in_flight):
                        continue
                    self._draining.discard(tp)
            elif p._idempotent:
                first = txn.first_in_flight_sequence(tp)
                if b.has_sequence and first >= 0 and b.base_sequence != first:
                    continue          # a retry waits until it is the oldest batch in flight
                if not b.has_sequence and first >= 0 and self._has_retry_in_flight_gap(tp):
                    continue
                if not b.has_sequence and tp in txn.unresolved:
                    continue          # Java: no new batch while a sequence before it is unresolved
            leader = self.node.leader_for(tp)
            if leader is None:
                need_metadata = True
                continue
            by_node.setdefault(leader, []).append(tp)
        if need_metadata:
            self.node.request_metadata(then=lambda: self.wakeup(0))
        for node, tps in by_node.items():
            self._send_produce(node, tps, now)
        mt = self.cfg["delivery.timeout.ms"]
        if mt and self._wakes_at_expiry:          # (dialect.WAKES_AT_BATCH_EXPIRY) the queued heads' expiry
            for dq in p._acc.batches.values():
                if dq and (next_wake is None or dq[0].created_ms + mt < next_wake):
                    next_wake = dq[0].created_ms + mt
        if next_wake is not None:
            self.wakeup(max(0, next_wake - now))
        if self._scan_ms:
            self._arm_scan(now)
        self._maybe_end_txn()

    def _has_retry_in_flight_gap(self, tp) -> bool:
        s = self.txn.partitions.get(tp)
        return bool(s and any(b.retry for b in s.in_flight))

    def _any_in_flight(self) -> bool:
        return any(v > 0 for v in self._inflight_requests.values())

    def _send_produce(self, node: str, tps: list, now: int) -> None:
        p, txn = self.p, self.txn
        cfg = self.cfg
        max_in_flight = cfg["max.in.flight.requests.per.connection"]
        while tps and self._inflight_requests.get(node, 0) < max_in_flight:
            data = {}
            batches = {}
            rest = []
            oldest = now                 # when the oldest batch of the request was created
            for tp in tps:
                dq = p._acc.batches[tp]
                b = dq.popleft()
                b.close()
                if b.created_ms < oldest:
                    oldest = b.created_ms
                if p._idempotent and not b.has_sequence:
                    s = txn.seq(tp)
                    b.base_sequence = s.next_sequence
                    b.producer_id = txn.producer_id
                    b.producer_epoch = txn.producer_epoch
                    b.is_transactional = txn.is_transactional
                    s.next_sequence += len(b.values)
                if p._idempotent:
                    txn.add_in_flight(tp, b)
                b.in_flight = True
                b.retry = False
                b.attempts += 1
                b.sent_once = True
                b.sent_to = node
                data[tp] = RecordBatch(b.rows(), b.producer_id, b.producer_epoch, b.base_sequence,
                                       b.is_transactional, size_in_bytes=b.size, max_timestamp=b.max_timestamp(),
                                       raw=True)
                batches[tp] = b
                if dq and self._drainable_again(tp, dq[0], now):
                    rest.append(tp)
            # request.timeout.ms is the ack timeout the broker is told; how long the client waits is the dialect's
            req = m.ProduceRequest(txn.transactional_id, p._acks, self.cfg["request.timeout.ms"], data,
                                   produce_version(self.dialect, self.transaction_version))
            if p._acks == 0:
                self.kernel.network.send(self.node.name, node, req.API, req, False, 0)
                for tp, b in batches.items():
                    self._complete(b, _NONE, -1)
            else:
                self._inflight_requests[node] = self._inflight_requests.get(node, 0) + 1
                mt = cfg["delivery.timeout.ms"]           # (0: the records never expire)
                wait = self._produce_timeout(cfg, oldest + mt - now if mt else None)
                if self._expires_in_flight and mt and oldest + mt <= now + wait:
                    # its oldest batch may expire in flight (a request that ends first, answered or timed out,
                    # needs no timer)
                    cb = self._on_expiring_produce_response(node, batches, self._expire_in_flight_at(batches,
                                                                                                    oldest + mt))
                else:
                    cb = self._on_produce_response(node, batches)
                self.node.send_request(node, req, cb, timeout_ms=wait)
            tps = rest

    def _drainable_again(self, tp, b, now) -> bool:
        if b.retry:         # (librdkafka: its retries go out like any queued batch once their backoff is over)
            return b.next_attempt_ms <= now and self._draining is not None
        return self.flushing or b.closed or now - b.created_ms >= self.cfg["linger.ms"] \
            or self.txn.state == S.COMMITTING_TRANSACTION

    # ------------------------------------------------------- produce results
    def _on_produce_response(self, node: str, batches: dict) -> Callable:
        def cb(resp, err):
            self._inflight_requests[node] -= 1
            for tp, b in batches.items():
                if err is not None:          # the request timed out here, or its connection broke
                    self._handle_error(b, err, "", local=True)
                    continue
                r = resp.responses.get(tp)
                if r is None:
                    self._handle_error(b, Errors.UNKNOWN_SERVER_ERROR, "no answer for partition")
                elif r.error == _NONE:
                    self._complete(b, _NONE, r.base_offset)
                else:
                    self._handle_error(b, Errors(r.error), r.error_message, broker=node)
            self.wakeup(0)
        return cb

    def _complete(self, b, error: Errors, base_offset: int, reason: str = "") -> None:
        p, txn = self.p, self.txn
        b.in_flight = False
        b.done = True
        if not b.closed:          # it fails before it was sent (expired, purged, its transaction aborted)
            b.close()
        if p._idempotent:
            txn.remove_in_flight(b.tp, b)
        kerr = None
        if error == _NONE or error == Errors.DUPLICATE_SEQUENCE_NUMBER:
            if p._idempotent and b.producer_epoch == txn.producer_epoch and b.producer_id == txn.producer_id:
                s = txn.seq(b.tp)
                s.last_acked_sequence = max(s.last_acked_sequence, b.last_sequence)
                s.last_acked_offset = base_offset + len(b.values) - 1
        else:
            kerr = error if isinstance(error, KafkaError) else KafkaError(error, reason or Errors(error).description)
            self.record_failed_in_txn(kerr)
        topic, part = b.tp
        callbacks, default = b.callbacks, p._default_cb
        if not callbacks and default is None:     # nobody asked for delivery reports: just count them off
            p._unacked -= len(b.values)
            if kerr is None:
                p._delivered += len(b.values)
            return
        now, epoch, enqueued = self.kernel.now, self.cfg["sim.clock.epoch.ms"], b.enqueued
        for i, (key, value, headers, ts) in enumerate(b.rows()):
            off = base_offset + i if base_offset >= 0 and kerr is None else -1
            # the application sees Unix time (the lab clock anchored at sim.clock.epoch.ms) and the simulated
            # produce latency, in seconds, as librdkafka's Message.latency(); a record stamped when it was
            # produced (most are) has no entry in ``enqueued``
            msg = Message(topic, part, off, key, value, headers or None, timestamp=(1, ts + epoch), error=kerr,
                          latency=(now - enqueued.get(i, ts)) / 1000)
            p.deliver(callbacks.get(i) or default or _noop, kerr, msg)

    def _can_retry(self, b, error: Errors) -> bool:
        if b.attempts > self.cfg["retries"]:
            return False
        if self.cfg["sim.naive.client"] and error in (Errors.REQUEST_TIMED_OUT, Errors.NETWORK_EXCEPTION):
            return False     # a naive client gives up on a request that timed out and moves on
        if self._expired(b):
            return False
        if error.retriable:
            return True
        if error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER and self.p._idempotent:
            return True
        return False

    def _expired(self, b) -> bool:
        """Whether ``b``'s records are past their delivery.timeout.ms (message.timeout.ms; 0: never)."""
        mt = self.cfg["delivery.timeout.ms"]
        return bool(mt) and self.kernel.now - b.created_ms >= mt

    def _timed_out(self, b, error: Errors, local: bool) -> bool:
        """Whether ``b`` fails because time ran out rather than because of ``error`` itself: its request timed out
        here or was in flight on the connection the client closed then (the kernel's LocalTimeout markers: for
        librdkafka both are _TIMED_OUT, which rd_kafka_handle_Produce_error reports as _MSG_TIMED_OUT), or a
        retriable error came back after its records' delivery.timeout.ms.  (PRODUCE_GAVE_UP says what the
        application sees then.)"""
        if isinstance(error, LocalTimeout):
            return True
        return (error.retriable or local) and self._expired(b)

    def record_failed_in_txn(self, kerr: KafkaError, unassigned: bool = False) -> None:
        """A record of the open transaction failed (expired, rejected, no metadata): the transaction can no
        longer commit what the application produced, so it must abort (Java's TransactionManager
        .handleFailedBatch / maybeTransitionToErrorState).  librdkafka fails a record that never reached a
        partition (``unassigned``: no metadata, a topic error) without an abortable error: it counts it
        (rd_kafka_dr_msgq0's txn_dr_fails), and commit_transaction() refuses once the records are flushed."""
        txn = self.txn
        if unassigned and self.dialect == "librdkafka":
            if txn.is_transactional and kerr.code() != KafkaError._PURGE_QUEUE:
                txn.dr_fails += 1
                if txn.state == S.COMMITTING_TRANSACTION:
                    self.wakeup(0)          # a commit waiting for this record goes on (and is refused)
            return
        if txn.is_transactional and kerr.code() != KafkaError._PURGE_QUEUE and not kerr.fatal() and \
                txn.state in (S.IN_TRANSACTION, S.COMMITTING_TRANSACTION):
            self.narrate(f"{self.p.name}: a record of the transaction failed ({kerr.name()}): "
                         f"the transaction must be aborted")
            txn.transition(S.ABORTABLE_ERROR, KafkaError(
                kerr.code(), f"a record of the transaction failed: {kerr.str()}", retriable=False,
                txn_requires_abort=True))

    def _handle_error(self, b, error: Errors, reason: str, local: bool = False, broker=None) -> None:
        p, txn, tp = self.p, self.txn, b.tp
        name = f"{tp[0]}-{tp[1]}"
        if error in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NETWORK_EXCEPTION,
                     Errors.LEADER_NOT_AVAILABLE, Errors.FENCED_LEADER_EPOCH, Errors.REQUEST_TIMED_OUT):
            self.node.request_metadata()
        stale_epoch = p._idempotent and (b.producer_epoch != txn.producer_epoch or b.producer_id != txn.producer_id)
        if self._draining is not None and not stale_epoch and self._librdkafka_drain(b, error, reason, name, broker):
            return
        if error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER and p._idempotent and not stale_epoch:
            s = txn.seq(tp)
            unresolved = txn.unresolved.get(tp)
            if unresolved is not None:
                # Java's TransactionManager.canRetry while a sequence before the batch is unresolved: a
                # transactional producer does not retry it; an idempotent one does, asking for an epoch bump only
                # when the batch is the one right after the unresolved sequence (otherwise it waits to see)
                if txn.is_transactional:
                    self._fail_batch(b, error, reason, abortable=True)
                    return
                if b.base_sequence == unresolved:
                    self.narrate(f"{p.name}: {name} batch seq {b.base_sequence} got OUT_OF_ORDER_SEQUENCE_NUMBER "
                                 f"right after the unresolved sequence; requesting an epoch bump")
                    txn.epoch_bump_required = True
            elif b.base_sequence == s.last_acked_sequence + 1 and not self._earlier_in_flight(b):
                # the broker has lost our state (or we overran its 5-batch window): KIP-360
                if txn.is_transactional:
                    self._fail_batch(b, error, reason, abortable=True)
                    return
                if self.cfg["sim.naive.client"]:
                    self._fail_batch(b, error, reason)
                    return
                self.narrate(f"{p.name}: {name} batch seq {b.base_sequence} got OUT_OF_ORDER_SEQUENCE_NUMBER although "
                             f"it follows on ({s.acked_words()}); requesting an epoch bump")
                txn.epoch_bump_required = True
        if self._can_retry(b, error):
            self._requeue(b)        # (a stale epoch's, or one waiting for a bump, is renumbered when the bump happens)
            self.narrate(f"{p.name}: will retry {b.describe()} after {error.name} "
                         f"(attempt {b.attempts + 1}, same sequence)")
            return
        self._fail_batch(b, error, reason, timed_out=self._timed_out(b, error, local))

    def _requeue(self, b) -> None:
        """Put ``b`` back in its partition's queue for a retry after its exponential backoff (KIP-580)."""
        b.in_flight = False
        b.retry = True
        b.next_attempt_ms = self.kernel.now + min(self.cfg["retry.backoff.max.ms"],
                                                  self.cfg["retry.backoff.ms"] * 2 ** min(max(b.attempts - 1, 0), 16))
        self.p._acc.reenqueue(b)

    def _earlier_in_flight(self, b) -> bool:
        s = self.txn.partitions.get(b.tp)
        return bool(s and s.in_flight and s.in_flight[0] is not b and s.in_flight[0].base_sequence < b.base_sequence)

    def _seen_as(self, error: Errors, reason: str, timed_out: bool = False) -> tuple:
        """(code, text) of a failed batch's error as the application sees it: the dialect's code, and for
        librdkafka's local codes their own words ("Local: Broker transport failure", "Local: Message timed
        out").  ``timed_out``: the batch failed because time ran out (PRODUCE_GAVE_UP).  A request that timed out
        here (or was in flight on the connection closed then) is the dialect's LOCAL_TIMEOUT (Java: Sender
        .handleProduceResponse's REQUEST_TIMED_OUT for a response that wasTimedOut())."""
        code = PRODUCE_GAVE_UP[self.dialect] if timed_out else None
        if code is not None:
            return code, None
        shown = seen_as(self.dialect, error)
        code = normalize(self.dialect, shown)
        return code, reason or (None if code in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT) else shown.description)

    def _fail_batch(self, b, error: Errors, reason: str, abortable: bool = False, timed_out: bool = False) -> None:
        p, txn = self.p, self.txn
        gave_up = PRODUCE_GAVE_UP[self.dialect] if timed_out else None
        self.narrate(f"{p.name}: {b.describe()} failed with {error.name}" + (
            "" if gave_up is None else f"; {self.dialect} reports its records {KafkaError(gave_up).name()}"))
        if txn.is_transactional:
            # which Produce errors end the producer is the client dialect's rule: librdkafka makes a fenced
            # producer (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH) fatal _FENCED, Java aborts on INVALID_PRODUCER_EPOCH
            fatal = classify(self.dialect, "Produce", error) is Action.FATAL
            code, text = self._seen_as(error, reason, timed_out)
            kerr = KafkaError(code, text, fatal=fatal, retriable=False,
                              txn_requires_abort=not fatal)
            # As Java's Sender.failBatch: the transaction manager takes the error first (one transition, with
            # this batch's error), then the batch's records are reported failed, then the unsent ones purged.
            moved = fatal or txn.state in (S.IN_TRANSACTION, S.COMMITTING_TRANSACTION,
                                           S.ABORTABLE_ERROR)
            if not fatal and self._bumps_after_abort(b, txn.state):
                self._bump_after_end = True
            if moved:
                self.narrate(f"{p.name}: a record of the transaction failed ({error.name}); {self._reaction(error, kerr)}: "
                             + ("the producer is now in FATAL_ERROR" if fatal else "the transaction must be aborted"))
                txn.transition(S.FATAL_ERROR if fatal else S.ABORTABLE_ERROR, kerr)
            report = kerr
            if self.dialect == "librdkafka":
                # A delivery report carries the bare error code (rd_kafka_dr_msgq0 sets rko_err; confluent-kafka
                # wraps it with every class false): the abortable or fatal state is the producer's, seen at its next
                # call.  A fenced producer's records keep the broker's own error (INVALID_PRODUCER_EPOCH,
                # PRODUCER_FENCED): rd_kafka_handle_Produce_error raises the fatal _FENCED for the producer
                # (rd_kafka_idemp_set_fatal_error / rd_kafka_txn_set_fatal_error) and leaves the messages' error as
                # it was (rd_kafka_msgbatch_handle_Produce_result hands it to the delivery report)
                report = KafkaError(int(error)) if code == KafkaError._FENCED else KafkaError(code, text)
            self._complete(b, report, -1)
            if moved:
                self._abort_undrained(kerr)
            if error in (Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, Errors.INVALID_PRODUCER_ID_MAPPING) \
                    and not self.cfg["sim.naive.client"]:
                self._bump_after_end = True
            return
        self._complete(b, KafkaError(*self._seen_as(error, reason, timed_out)), -1)
        if p._idempotent and b.sent_once and not self.cfg["sim.naive.client"]:
            # later batches of this partition would carry a gap: bump and renumber (KIP-360)
            txn.epoch_bump_required = True

    def _bumps_after_abort(self, b, state) -> bool:
        """Whether a failed batch of the transaction makes its abort bump the epoch (KIP-360; under
        transaction.version 2 every EndTxn bumps anyway).  Without the bump a Produce of the aborted transaction
        still in the network (it timed out here, not at the broker) is appended later under the same epoch and
        joins whichever transaction then holds its partition: committed records nobody asked to commit.
        Java: TransactionManager.maybeTransitionToErrorState sets epochBumpRequired for every abortable error
        while the transaction is not completing (canBumpEpoch() && !isCompleting()).  librdkafka: a message whose
        message.timeout.ms passed after it was sent is a possible gap: rd_kafka_broker_toppar_msgq_scan (or
        rd_kafka_handle_Produce_error's timeout path) calls rd_kafka_idemp_drain_epoch_bump, which for a
        transactional producer is rd_kafka_txn_set_abortable_error_with_bump; its other permanent errors abort
        without a bump (rd_kafka_txn_set_abortable_error)."""
        if self.cfg["sim.naive.client"]:
            return False
        if self.dialect == "java":
            return state not in (S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION)
        return b.sent_once and self._expired(b)

    def _renumber_queued(self) -> None:
        txn = self.txn
        for tp, dq in self.p._acc.batches.items():
            s = txn.seq(tp)
            for b in dq:
                if b.has_sequence:
                    b.base_sequence = s.next_sequence
                    b.producer_id = txn.producer_id
                    b.producer_epoch = txn.producer_epoch
                    s.next_sequence += len(b.values)
            s.in_flight = [b for b in s.in_flight if b.in_flight]

    def purge_queued(self, error: KafkaError, retries: bool = False) -> None:
        """Fails the records not sent.  ``retries``: the batches waiting for a retry too (librdkafka's purge empties
        the partition's queue, rd_kafka_toppar_purge_queues: the lab asks for it where no sequence number can be
        given out again after it, on a fatal error or before an epoch bump); otherwise they stay, as Java's
        abortUndrainedBatches leaves every batch with a sequence."""
        p = self.p
        waiting, p._unassigned = p._unassigned, []
        for topic, value, key, _part, cb, ts, headers in waiting:
            p.deliver(cb or _noop, error, Message(topic, -1, -1, key, value, headers or None,
                                                  timestamp=(1, ts + self.cfg["sim.clock.epoch.ms"]), error=error))
        for tp, dq in p._acc.batches.items():
            keep = [b for b in dq if b.in_flight or (b.retry and not retries)]
            for b in dq:
                if not (b.in_flight or (b.retry and not retries)):
                    self._complete(b, error, -1)
            dq.clear()
            dq.extend(keep)


def _noop(err, msg) -> None:
    return None
