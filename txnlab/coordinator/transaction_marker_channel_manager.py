"""``TransactionMarkerChannelManager``: the coordinator's fan-out of COMMIT/ABORT markers.

Owns, once a PrepareCommit/PrepareAbort is durable (or found on load): the
pending completion of each transaction, its markers queued per destination
broker (``markersQueuePerBroker``) or, while a partition has no available
leader, in ``markersQueueForUnknownBroker`` (this is what pins a partition's
LSO while its leader is down), one WriteTxnMarkers per broker per loop of the
sender thread, giving up on TRANSACTION_COORDINATOR_FENCED /
INVALID_PRODUCER_EPOCH, and writing CompleteCommit/CompleteAbort when every
partition has its marker.

Kafka runs all of this on one InterBrokerSendThread (``TxnMarkerSenderThread-<id>``).
Each loop (``pollOnce``) retries the queued log appends, moves the markers of
the unknown-broker queue to their leader's queue if the metadata cache now
names one (``generateRequests``), sends one request per broker, then waits in
``NetworkClient.poll`` until something wakes it: new markers
(``addTxnMarkersToBrokerQueue`` ends with ``wakeup()``), any response or
disconnect on its connections, the end of a reconnect backoff, or at the latest
``request.timeout.ms`` (30 s).  Draining the unknown-broker queue calls
``addTxnMarkersToBrokerQueue`` again, hence ``wakeup()`` again: while a marker
has no leader the thread does not wait at all, it loops, re-reading its
metadata cache.  The lab runs such a loop whenever this broker's metadata cache
changes, the only thing that can change its outcome.
"""
from __future__ import annotations

from typing import Any

from ..protocol import messages as m
from ..protocol.errors import Errors
from .transaction_metadata import STATE_NAMES, PartitionList, S
from ..protocol.names import broker_name

# NONE is read on every request: a member read through its enum class costs CPython 3.11 a call of the class's
# attribute hook
_NONE = Errors.NONE
_COORDINATOR_NOT_AVAILABLE = Errors.COORDINATOR_NOT_AVAILABLE

# The sender's NetworkClient (TransactionMarkerChannelManager.apply): reconnect.backoff.ms 50 and its max 50, so
# after a disconnect the next connection to that broker is tried 50 ms later, every time (no exponential growth)
RECONNECT_BACKOFF_MS = 50
RETRY_ERRORS = {Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_ENOUGH_REPLICAS,
                Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.REQUEST_TIMED_OUT, Errors.KAFKA_STORAGE_ERROR}
# what the lab's network reports for a request that never got its answer (Kafka: a ClientResponse with
# wasDisconnected: every marker of the request is queued again)
DISCONNECT_ERRORS = {Errors.NETWORK_EXCEPTION, Errors.REQUEST_TIMED_OUT}
ABANDON_ERRORS = {Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED}


class PendingCompleteTxn:
    marker_epoch: int       # set by add_txn_markers

    def __init__(self, md, transit, coordinator_epoch: int, txn_partition: int) -> None:
        self.md = md
        self.transit = transit            # the Complete* transit to write at the end
        self.coordinator_epoch = coordinator_epoch
        self.txn_partition = txn_partition
        self.remaining = set(md.topic_partitions)   # Kafka: txnMetadata.topicPartitions, emptied by the acks
        self.abandoned = False

    @property
    def committed(self) -> bool:
        return self.transit.txn_state == S.CompleteCommit


# a queued marker request's share: the transaction's pending markers and the partitions it is for
_Queued = tuple[PendingCompleteTxn, tuple]


class TransactionMarkerChannelManager:
    def __init__(self, coordinator) -> None:
        self.coord = coordinator
        self.broker = coordinator.broker
        self.thread = f"TxnMarkerSenderThread-{self.broker.broker_id}"
        self.pending: dict[str, PendingCompleteTxn] = {}        # transactionsWithPendingMarkers
        self.queue_per_broker: dict[int, list[_Queued]] = {}    # markersQueuePerBroker: [(pending, tps)]
        self.queue_for_unknown_broker: list[_Queued] = []       # markersQueueForUnknownBroker
        self.log_append_retry_queue: list[PendingCompleteTxn] = []  # txnLogAppendRetryQueue
        self.backoff_until: dict[int, int] = {}                 # reconnect backoff per destination broker
        self._poll_started = 0                                  # when the thread's current poll began
        self._poll_timer: Any = None
        self._spin_timer: Any = None
        self._spinning = False
        self._looped_at_step = -1                               # the kernel step of the last loop

    # ------------------------------------------------------------------ queueing
    def add_txn_markers(self, md, complete_transit, coordinator_epoch: int, txn_partition: int,
                        producer_epoch: int) -> None:
        p = PendingCompleteTxn(md, complete_transit, coordinator_epoch, txn_partition)
        p.marker_epoch = producer_epoch
        self.pending[md.transactional_id] = p
        if not p.remaining:
            self.broker.narrate(f"{md.transactional_id!r}: no partitions to mark; completing at once")
            self._complete(p)
            return
        self.broker.kernel.narrate_f(("%r: sending %s markers to %s", md.transactional_id,
                                      "COMMIT" if p.committed else "ABORT", PartitionList(p.remaining)))
        self._add_to_broker_queue(p, p.remaining)
        self._loop()        # addTxnMarkersToBrokerQueue's wakeup(): the thread loops at once

    def _add_to_broker_queue(self, p: PendingCompleteTxn, tps) -> None:
        """Kafka's addTxnMarkersToBrokerQueue: group by the partitions' current leader in the metadata cache."""
        b = self.broker
        md = b.metadata
        tid = p.md.transactional_id
        by_leader: dict = {}
        unknown = []
        for tp in sorted(tps):
            if tp not in md.partitions:
                # a partition the metadata does not know at all (no leader endpoint: None, not Node.noNode) "is
                # likely deleted already": it is taken out of the transaction and gets no marker
                p.remaining.discard(tp)
                b.narrate(f"{tid!r}: {tp[0]}-{tp[1]} is not in the metadata (deleted, or never created): "
                          f"no marker for it, it leaves the transaction")
                continue
            leader = md.leader(tp)
            if leader < 0 or leader not in md.live_brokers:
                unknown.append(tp)          # Node.noNode: the leader is unknown or not alive
            else:
                by_leader.setdefault(leader, []).append(tp)
        for leader, group in by_leader.items():
            self.queue_per_broker.setdefault(leader, []).append((p, tuple(group)))
        if unknown:
            self.queue_for_unknown_broker.append((p, tuple(unknown)))
        elif not p.remaining and self.pending.get(tid) is p:
            self._complete(p)               # every partition left was deleted (maybeWriteTxnCompletion)

    def drop_partition(self, txn_partition: int) -> None:
        """removeMarkersForTxnTopicPartition: this broker no longer owns the partition of these transactions."""
        for tid, p in list(self.pending.items()):
            if p.txn_partition == txn_partition:
                del self.pending[tid]
        keep = lambda entries: [e for e in entries if e[0].txn_partition != txn_partition]  # noqa: E731
        self.queue_for_unknown_broker = keep(self.queue_for_unknown_broker)
        for leader in list(self.queue_per_broker):
            self.queue_per_broker[leader] = keep(self.queue_per_broker[leader])
        self.log_append_retry_queue = [p for p in self.log_append_retry_queue if p.txn_partition != txn_partition]
        self._spinning = bool(self.queue_for_unknown_broker)

    # ---------------------------------------------------------------- the thread
    def _loop(self) -> None:
        """One loop of the sender thread (InterBrokerSendThread.pollOnce): generateRequests, send, then poll."""
        b = self.broker
        now = b.kernel.now
        self._poll_started = now
        self._looped_at_step = b.kernel.step_count
        if self.log_append_retry_queue:
            retries, self.log_append_retry_queue = self.log_append_retry_queue, []
            for p in retries:
                self._rewrite(p)
        if self.queue_for_unknown_broker:
            waiting, self.queue_for_unknown_broker = self.queue_for_unknown_broker, []
            for p, tps in waiting:
                if self.pending.get(p.md.transactional_id) is p and not p.abandoned:
                    self._add_to_broker_queue(p, set(tps) & p.remaining)
        for leader in sorted(self.queue_per_broker):
            entries = self.queue_per_broker[leader]
            if not entries or self.backoff_until.get(leader, 0) > now:
                continue
            del self.queue_per_broker[leader]
            self._send(leader, entries)
        self._poll()

    def _send(self, leader: int, entries: list[_Queued]) -> None:
        markers = []
        sent = []
        for p, tps in entries:
            if self.pending.get(p.md.transactional_id) is not p or p.abandoned:
                continue
            tps = tuple(tp for tp in tps if tp in p.remaining)
            if not tps:
                continue
            tv = p.md.client_transaction_version or self.coord.transaction_version
            markers.append(m.TxnMarkerEntry(p.md.producer_id, p.marker_epoch, p.committed, tps,
                                            p.coordinator_epoch, tv))
            sent.append((p, tps))
        if markers:
            self.broker.send_request(broker_name(leader), m.WriteTxnMarkersRequest(tuple(markers)),
                                     self._on_response(leader, sent), timeout_ms=30_000)

    def _poll(self) -> None:
        """NetworkClient.poll: what ends the wait, besides a wake-up or a response."""
        b = self.broker
        now = b.kernel.now
        if self._poll_timer is not None:
            b.cancel_timer(self._poll_timer)
            self._poll_timer = None
        spinning = bool(self.queue_for_unknown_broker)
        if spinning and not self._spinning:
            # draining markersQueueForUnknownBroker called wakeup(): the next poll returns at once, so the thread
            # spins, re-reading the metadata cache; the lab loops again when that cache changes
            b.narrate(f"{self.thread}: {self._unknown_str()} no available leader; its markers wait in "
                      f"markersQueueForUnknownBroker, and the thread loops without pausing (draining that queue "
                      f"wakes it up again), re-reading its metadata cache each time")
        self._spinning = spinning
        if not self.backoff_until and not self.log_append_retry_queue:
            return          # (the usual case: nothing ends the poll but a wake-up or a response)
        self.backoff_until = {leader: t for leader, t in self.backoff_until.items() if t > now}
        waits = [(t - now, f"reconnect backoff to broker-{leader} ends (reconnect.backoff.ms {RECONNECT_BACKOFF_MS})")
                 for leader, t in sorted(self.backoff_until.items()) if self.queue_per_broker.get(leader)]
        if self.log_append_retry_queue and not spinning:
            # an idle thread's poll ends every request.timeout.ms, counted from its last loop (a spinning thread
            # retries the appends on each of its loops)
            waits.append((30_000 - (now - self._poll_started) % 30_000,
                          "poll timeout (request.timeout.ms 30000): it retries the transaction-log appends"))
        if waits:
            delay, why = min(waits)
            self._poll_timer = b.set_timer(delay, ("%s wakes up: %s", self.thread, why), self._on_poll_timeout)

    def _on_poll_timeout(self) -> None:
        self._poll_timer = None
        self._loop()

    def _unknown_str(self) -> str:
        tps = sorted({tp for _, tps in self.queue_for_unknown_broker for tp in tps})
        return ", ".join(f"{t}-{i}" for t, i in tps) + (" has" if len(tps) == 1 else " have")

    def metadata_changed(self) -> None:
        """This broker's metadata cache changed: a spinning thread sees it on its next loop."""
        if not self.queue_for_unknown_broker or self._looped_at_step == self.broker.kernel.step_count:
            return          # nothing waits for a leader, or a loop of this step has read the new metadata
        if self._spin_timer is None or self._spin_timer.cancelled:
            def spin():
                self._spin_timer = None
                self._loop()
            self._spin_timer = self.broker.set_timer(
                0, ("%s loops (spinning while markersQueueForUnknownBroker holds markers): the metadata cache "
                    "changed", self.thread), spin)

    # ---------------------------------------------------------------- responses
    def _on_response(self, leader: int, sent: list):
        def cb(resp, err):
            b = self.broker
            if err is not None and err in DISCONNECT_ERRORS:
                # ClientResponse.wasDisconnected: every marker of the request is queued again by the current
                # metadata; the connection is retried after the reconnect backoff
                self.backoff_until[leader] = b.kernel.now + RECONNECT_BACKOFF_MS
                b.narrate(f"{self.thread}: WriteTxnMarkers to broker-{leader} got no answer ({err.name}); its markers "
                          f"are queued again, and broker-{leader} is tried again after the reconnect backoff "
                          f"({RECONNECT_BACKOFF_MS} ms)")
            for p, tps in sent:
                tid = p.md.transactional_id
                if self.pending.get(tid) is not p:
                    continue
                if err is not None and err in DISCONNECT_ERRORS:
                    self._retry(p, tps, err)
                    continue
                errs = {} if resp is None else resp.markers.get(p.md.producer_id, {})
                retry = []
                for tp in tps:
                    e = errs.get(tp, _NONE) if err is None else err
                    if e == _NONE:
                        p.remaining.discard(tp)
                        continue
                    e = Errors(e)       # (only a failure is converted: for its name)
                    if e in ABANDON_ERRORS:
                        b.narrate(f"{tid!r}: marker for {tp[0]}-{tp[1]} rejected with {e.name}; "
                                  f"the coordinator stops sending this transaction's markers")
                        p.abandoned = True
                    elif e in RETRY_ERRORS:
                        retry.append(tp)
                    else:
                        b.narrate(f"{tid!r}: marker for {tp[0]}-{tp[1]} failed with {e.name}; partition dropped")
                        p.remaining.discard(tp)
                if p.abandoned:
                    self.pending.pop(tid, None)
                elif retry:
                    self._retry(p, retry, None)
                elif not p.remaining:
                    self._complete(p)
            # the response ended the thread's poll: it loops again (and sends what was queued again at once)
            self._loop()
        return cb

    def _retry(self, p: PendingCompleteTxn, tps, err) -> None:
        b = self.broker
        if "no-marker-retry" in b.mutations:
            for tp in tps:
                b.narrate(f"[mutation no-marker-retry] marker for {tp[0]}-{tp[1]} failed and is NOT retried")
                p.remaining.discard(tp)
            if not p.remaining:
                self._complete(p)
            return
        if err is None:
            b.narrate(f"{self.thread}: {p.md.transactional_id!r}: markers for {PartitionList(tps)} failed with a "
                      f"retriable error; queued again by their current leader, sent on the thread's next loop "
                      f"(no backoff)")
        self._add_to_broker_queue(p, set(tps) & p.remaining)

    # ---------------------------------------------------------------- completion
    def _complete(self, p: PendingCompleteTxn) -> None:
        b = self.broker
        tid = p.md.transactional_id
        self.pending.pop(tid, None)
        b.kernel.narrate_f(("%r: every partition has its marker; writing %s", tid, STATE_NAMES[p.transit.txn_state]))

        def done(error):
            if error == _COORDINATOR_NOT_AVAILABLE:
                # tryAppendToLog: into txnLogAppendRetryQueue, retried at the start of the thread's next loop
                # (no wake-up of its own)
                b.narrate(f"{self.thread}: writing {p.transit.txn_state.name} for {tid!r} failed "
                          f"(COORDINATOR_NOT_AVAILABLE); it is retried on the thread's next loop")
                self.log_append_retry_queue.append(p)
                if self._poll_timer is None:
                    self._poll()
        self.coord.state_manager.append_transition(p.md, p.transit, p.coordinator_epoch, done, retry_on_error=True)

    def _rewrite(self, p: PendingCompleteTxn) -> None:
        cache = self.coord.state_manager.caches.get(p.txn_partition)
        if cache is None or cache.coordinator_epoch != p.coordinator_epoch:
            return
        self._complete(p)
