"""The producer's batch expiry (delivery.timeout.ms, librdkafka's message.timeout.ms), a part of the ``Sender``.

Owns the expiry of queued batches, the expiry of batches whose Produce is still in flight (Java:
dialect.EXPIRES_IN_FLIGHT) and the late answers they get, and Java's unresolved sequences: a retried batch that
expired may or may not be in the log, so its partition sends nothing new until every batch of it in flight has its
answer, and then either a later batch's acknowledgment resolved it or the producer bumps its epoch
(TransactionManager.markSequenceUnresolved / maybeResolveSequences).
"""
from __future__ import annotations

from typing import Callable

from ..errors import KafkaError
from ..protocol.errors import Errors
from .dialect import EXPIRED_TEXT
from .transaction_manager import S

# TransactionManager.maybeResolveSequences' words, for a transactional producer that can bump its epoch
UNACKED_TEXT = ("The client hasn't received acknowledgment for some previously sent messages and can no longer retry "
                "them. It is safe to abort the transaction and continue.")
_NONE = Errors.NONE


class BatchExpiry:
    """Mixed into ``Sender`` (it uses the sender's ``p``, ``txn``, ``cfg``, ``kernel``, ``narrate``, ``_complete``,
    ``wakeup`` and ``_on_produce_response``)."""

    def _expire_batches(self, now: int, scan: bool = False) -> None:
        """Fails the queued batches past their delivery.timeout.ms: whenever the sender runs (Java), or only in
        the message timeout scan (``scan``: librdkafka, dialect.MSG_TIMEOUT_SCAN_MS)."""
        timeout = self.cfg["delivery.timeout.ms"]
        if not timeout:
            return            # message.timeout.ms 0: records never expire (librdkafka's "0 = infinite")
        if self._scan_ms and not scan:
            return
        p = self.p
        for tp, dq in p._acc.batches.items():
            while dq and now - dq[0].created_ms >= timeout and not dq[0].in_flight:
                b = dq.popleft()
                self.narrate(f"{p.name}: {b.describe()} expired (delivery.timeout.ms={timeout})")
                self._expire(b, now)

    # ------------------------------------------------ librdkafka's message timeout scan (dialect.MSG_TIMEOUT_SCAN_MS)
    def _arm_scan(self, now: int) -> None:
        """After a run: the scan that will find the soonest queued batch past its message.timeout.ms, the first
        on the scan grid at or after that batch's timeout (none while nothing is queued: a scan that can find
        nothing is not worth an event)."""
        mt = self.cfg["delivery.timeout.ms"]
        soonest = None
        if mt:
            for dq in self.p._acc.batches.values():
                if dq and (soonest is None or dq[0].created_ms + mt < soonest):
                    soonest = dq[0].created_ms + mt
        ev = self._scan_ev
        if soonest is None:
            # (cancelled, but kept: the next record queued is most often due at the same scan, which revives it)
            self.kernel.cancel(ev)
            return
        step, origin = self._scan_ms, self._scan_origin
        at = origin + -(-(max(soonest, now) - origin) // step) * step
        if ev is not None and ev.time == at and ev.incarnation == self.node.incarnation and \
                (not ev.cancelled or self.kernel.revive(ev, self._on_scan)):
            return
        self.kernel.cancel(ev)
        self._scan_ev = self.node.set_timer(at - now, "message timeout scan", self._on_scan, background=True)

    def _on_scan(self) -> None:
        self._scan_ev = None
        self.scan_message_timeouts()

    def scan_message_timeouts(self) -> None:
        """librdkafka's rd_kafka_broker_toppar_msgq_scan, at a scan on the grid or when a WAKEUP op (flush(), a
        producer id, partitions added to the transaction) starts the broker threads' round over: the sender's
        next run fails the queued batches past their message.timeout.ms before it sends anything."""
        if self._scan_ms and not self.node.crashed:
            self._scan_requested = True
            self.wakeup(0)

    def _expire(self, b, now: int) -> None:
        """Fails ``b``, past its delivery.timeout.ms: queued, or (EXPIRES_IN_FLIGHT) in a Produce still in flight
        (Java's Sender.failBatch with a TimeoutException, the sequence not adjusted)."""
        p, txn = self.p, self.txn
        sent, state, in_flight = b.sent_once, txn.state, b.in_flight
        # Java's ProducerBatch.inRetry(): it was put back in the queue after a failed attempt at least once
        in_retry = b.attempts > 1 or (sent and not in_flight)
        text = EXPIRED_TEXT[self.dialect](len(b.values), b.tp, now - b.created_ms)
        self._complete(b, KafkaError(KafkaError._MSG_TIMED_OUT, text), -1)
        if not p._idempotent or self.cfg["sim.naive.client"]:
            return
        java = self._expires_in_flight
        if not txn.is_transactional:
            # a sent batch's sequence may or may not be in the log.  librdkafka bumps once nothing is in flight;
            # Java only for a retried one, and only if no later batch's acknowledgment resolves its sequence
            # (markSequenceUnresolved -> maybeResolveSequences); a first attempt that expired in flight leaves
            # its sequence to the answer, or to the next batch's OUT_OF_ORDER_SEQUENCE_NUMBER
            if java:
                if in_retry:
                    self._mark_sequence_unresolved(b)
            elif sent:
                txn.epoch_bump_required = True
            return
        # (_complete has made the transaction abortable); Java bumps after a batch that expired unsent too,
        # librdkafka only after one that may have been written (_bumps_after_abort)
        if self._bumps_after_abort(b, state):
            self._bump_after_end = True
        if in_retry and java:
            self._mark_sequence_unresolved(b)

    def _mark_sequence_unresolved(self, b) -> None:
        """Java: Sender.sendProducerData marks an expired retried batch's sequence unresolved
        (TransactionManager.markSequenceUnresolved): until it is resolved the partition gets no new batch
        (RecordAccumulator.shouldStopDrainBatchesForPartition), and _maybe_resolve_sequences decides."""
        nxt = self.txn.mark_sequence_unresolved(b)
        self.narrate(f"{self.p.name}: Marking partition {b.tp[0]}-{b.tp[1]} unresolved with next sequence number "
                     f"{nxt}")

    def _maybe_resolve_sequences(self) -> None:
        """Java's TransactionManager.maybeResolveSequences, at the start of every run of the sender (Sender.runOnce):
        a partition with an unresolved sequence waits until none of its batches is in flight.  Then, if its last
        acked sequence is the one before its next sequence (a later batch was acknowledged: the expired one made
        it to the log), the sequence is resolved and nothing else happens.  Otherwise an idempotent producer bumps
        its epoch (requestEpochBumpForPartition), and a transactional one requires the bump (epochBumpRequired,
        even while completing) and makes the transaction abortable with its own KafkaException, the error
        commit_transaction() then raises (the lab keeps the expiry's code, _MSG_TIMED_OUT, with Java's words;
        transitionToAbortableError does nothing while aborting)."""
        txn = self.txn
        for tp in list(txn.unresolved):
            s = txn.seq(tp)
            if s.in_flight:
                continue
            del txn.unresolved[tp]
            name = f"{tp[0]}-{tp[1]}"
            if s.next_sequence - s.last_acked_sequence == 1:
                self.narrate(f"{self.p.name}: the unresolved sequence of {name} is resolved: a later batch was "
                             f"acknowledged ({s.acked_words()}); no epoch bump")
                continue
            if not txn.is_transactional:
                self.narrate(f"{self.p.name}: No inflight batches remaining for {name}, last ack'd sequence for "
                             f"partition is {s.last_acked_sequence}, next sequence is {s.next_sequence}. Going to "
                             f"bump epoch and reset sequence numbers.")
                txn.epoch_bump_required = True
                continue
            self._bump_after_end = True
            self.narrate(f"{self.p.name}: no batches in flight remain for {name}, {s.acked_words()}, next "
                         f"{s.next_sequence}: {UNACKED_TEXT} The abort will bump the epoch")
            if txn.state in (S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR):
                txn.transition(S.ABORTABLE_ERROR, KafkaError(KafkaError._MSG_TIMED_OUT, UNACKED_TEXT,
                                                             retriable=False, txn_requires_abort=True))

    # ------------------------------------------------ batches expiring in flight (dialect.EXPIRES_IN_FLIGHT)
    def _expire_in_flight_at(self, batches: dict, at: int) -> int:
        """Arms the timer that expires the batches of one Produce request at ``at`` (the soonest of their
        delivery timeouts: Java's Sender wakes for the accumulator's next batch expiry); returns the request's
        token, which its answer hands back (_stop_expiring)."""
        self._expiring_seq += 1
        token = self._expiring_seq
        self._expiring[token] = (batches, self._expiry_timer(token, at, len(batches)))
        return token

    def _expiry_timer(self, token: int, at: int, n: int):
        # a background timer that is most likely cancelled: the request's answer or its own timeout comes first
        return self.kernel.schedule_timeout(max(0, at - self.kernel.now), self.node.name,
                                            ("delivery.timeout.ms of %d batch(es) in flight", n),
                                            self._on_delivery_timeout, token, self.node.incarnation)

    def _stop_expiring(self, token: int) -> None:
        entry = self._expiring.pop(token, None)
        if entry is not None:
            self.kernel.cancel(entry[1])

    def _on_delivery_timeout(self, token: int) -> None:
        """Java's Sender.getExpiredInflightBatches: every batch in flight that reached its delivery timeout fails
        now, while its request is still in flight (the scan covers all requests: batches created together expire
        together, before a request timeout at the same moment closes their connection)."""
        if token not in self._expiring:
            return
        for t in sorted(self._expiring):
            if t != token:
                self.kernel.cancel(self._expiring[t][1])
            self._expire_request(t)
        self.wakeup(0)
        # Java expires them at the end of a run of the sender (sendProducerData); its next run, and with it
        # maybeResolveSequences, comes when something wakes the sender (an answer, a record, a call): the run
        # this wakeup makes does not resolve sequences unless another wakeup joins it
        self._resolve_deferred = True

    def _expire_request(self, token: int) -> None:
        """The batches of one request (``token``) that reached their delivery timeout fail; the timer is armed
        again for the soonest of the others."""
        batches = self._expiring.pop(token)[0]
        now, mt, p = self.kernel.now, self.cfg["delivery.timeout.ms"], self.p
        soonest = None
        for b in batches.values():
            if b.done:
                continue
            if now - b.created_ms >= mt:
                self.narrate(f"{p.name}: Expiring {len(b.values)} record(s) for {b.tp[0]}-{b.tp[1]}:"
                             f"{now - b.created_ms} ms has passed since batch creation (delivery.timeout.ms={mt}), "
                             f"while its Produce is in flight: its answer, when it comes, changes nothing")
                self._expire(b, now)
            elif soonest is None or b.created_ms + mt < soonest:
                soonest = b.created_ms + mt
        if soonest is not None:
            self._expiring[token] = (batches, self._expiry_timer(token, soonest, len(batches)))

    def _on_expiring_produce_response(self, node: str, batches: dict, token: int) -> Callable:
        """_on_produce_response for a request whose batches may expire while it is in flight (token: its
        expiry timer, _expire_in_flight_at): the answer stops the timer, and the batches that expired take it
        as _answer_after_expiry says; the others as any answer."""
        def cb(resp, err):
            self._stop_expiring(token)
            live = {}
            for tp, b in batches.items():
                if b.done:
                    self._answer_after_expiry(b, resp, err)
                else:
                    live[tp] = b
            self._on_produce_response(node, live)(resp, err)
        return cb

    def _answer_after_expiry(self, b, resp, err) -> None:
        """The answer to a Produce arrives for a batch that expired while it was in flight: the records have
        had their delivery reports (failed), and none is sent again.  Java's Sender.completeBatch: a success (or
        DUPLICATE_SEQUENCE_NUMBER) still goes to TransactionManager.handleCompletedBatch, which moves the last
        acked sequence, before ProducerBatch.complete finds the batch FAILED and only logs it; an error is not
        retried (canRetry: the batch is done) and ProducerBatch.completeExceptionally ignores FAILED -> FAILED."""
        p, txn, tp = self.p, self.txn, b.tp
        name = f"{tp[0]}-{tp[1]}"
        r = resp.responses.get(tp) if err is None else None
        if r is not None and (r.error == _NONE or r.error == Errors.DUPLICATE_SEQUENCE_NUMBER):
            if p._idempotent and b.producer_epoch == txn.producer_epoch and b.producer_id == txn.producer_id:
                s = txn.seq(tp)
                s.last_acked_sequence = max(s.last_acked_sequence, b.last_sequence)
                if r.base_offset >= 0:
                    s.last_acked_offset = r.base_offset + len(b.values) - 1
            self.narrate(f"{p.name}: ProduceResponse returned SUCCEEDED for {name} after batch with base offset "
                         f"{r.base_offset} had already been FAILED (it expired in flight): its records are in the "
                         f"log although their delivery reports said they timed out")
            return
        code = err if err is not None else (Errors.UNKNOWN_SERVER_ERROR if r is None else Errors(r.error))
        if code in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NETWORK_EXCEPTION,
                    Errors.LEADER_NOT_AVAILABLE, Errors.FENCED_LEADER_EPOCH, Errors.REQUEST_TIMED_OUT):
            self.node.request_metadata()
        self.narrate(f"{p.name}: Ignored state transition FAILED -> FAILED for {name} batch "
                     f"({getattr(code, 'name', code)}): it had already expired in flight")

