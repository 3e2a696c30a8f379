"""``TransactionMarkerChannelManager``: the coordinator's fan-out of COMMIT/ABORT markers.

Owns, once a PrepareCommit/PrepareAbort is durable (or found on load): the
pending completion of each transaction, grouping its partitions by their
current leader, one WriteTxnMarkers per broker per round, retrying partitions
whose leader is unavailable (this is what pins a partition's LSO while its
leader is down), giving up on TRANSACTION_COORDINATOR_FENCED /
INVALID_PRODUCER_EPOCH, and writing CompleteCommit/CompleteAbort when every
partition has its marker.
"""
from __future__ import annotations

from typing import Any

from ..protocol import messages as m
from ..protocol.errors import Errors
from .transaction_metadata import PartitionList, S
from ..protocol.names import broker_name

# NONE is read on every request: a member read through its enum class costs CPython 3.11 a call of the class's
# attribute hook
_NONE = Errors.NONE

RETRY_MS = 100
RETRY_ERRORS = {Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_ENOUGH_REPLICAS,
                Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.REQUEST_TIMED_OUT, Errors.KAFKA_STORAGE_ERROR,
                Errors.NETWORK_EXCEPTION}
ABANDON_ERRORS = {Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED}


class PendingCompleteTxn:
    marker_epoch: int       # set by add_txn_markers

    def __init__(self, md, transit, coordinator_epoch: int, txn_partition: int) -> None:
        self.md = md
        self.transit = transit            # the Complete* transit to write at the end
        self.coordinator_epoch = coordinator_epoch
        self.txn_partition = txn_partition
        self.remaining = set(md.topic_partitions)
        self.in_flight: set = set()
        self.abandoned = False

    @property
    def committed(self) -> bool:
        return self.transit.txn_state == S.CompleteCommit


class TransactionMarkerChannelManager:
    def __init__(self, coordinator) -> None:
        self.coord = coordinator
        self.broker = coordinator.broker
        self.pending: dict[str, PendingCompleteTxn] = {}
        self._retry_timer: Any = None

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
        self.send_round()

    def drop_partition(self, txn_partition: int) -> None:
        for tid, p in list(self.pending.items()):
            if p.txn_partition == txn_partition:
                del self.pending[tid]

    def send_round(self) -> None:
        b = self.broker
        by_leader: dict = {}
        unknown = False
        for tid, p in sorted(self.pending.items()):
            if p.abandoned:
                continue
            for tp in sorted(p.remaining - p.in_flight):
                if tp not in b.metadata.partitions:
                    # Kafka's TransactionMarkerChannelManager.addTxnMarkersToBrokerQueue: a partition the metadata
                    # does not know at all (no leader endpoint: None, not Node.noNode) "is likely deleted already":
                    # it is taken out of the transaction and gets no marker (an offline one is retried, below)
                    p.remaining.discard(tp)
                    b.narrate(f"{tid!r}: {tp[0]}-{tp[1]} is not in the metadata (deleted, or never created): "
                              f"no marker for it, it leaves the transaction")
                    continue
                leader = b.metadata.leader(tp)
                if leader < 0 or leader not in b.metadata.live_brokers:
                    unknown = True
                    continue
                by_leader.setdefault(leader, {}).setdefault(tid, []).append(tp)
        for leader, txns in sorted(by_leader.items()):
            entries = []
            sent = []
            for tid, tps in txns.items():
                p = self.pending[tid]
                tv = p.md.client_transaction_version or self.coord.transaction_version
                entries.append(m.TxnMarkerEntry(p.md.producer_id, p.marker_epoch, p.committed, tuple(tps),
                                                p.coordinator_epoch, tv))
                p.in_flight.update(tps)
                sent.append((tid, tuple(tps)))
            req = m.WriteTxnMarkersRequest(tuple(entries))
            b.send_request(broker_name(leader), req, self._on_response(sent), timeout_ms=30_000)
        for tid, p in sorted(self.pending.items()):
            if not p.abandoned and not p.remaining and not p.in_flight:
                self._complete(p)
        if unknown:
            b.narrate("some marker partitions have no available leader; the coordinator will retry")
            self._schedule_retry()

    def _schedule_retry(self) -> None:
        if self._retry_timer is not None and not self._retry_timer.cancelled:
            return

        def again():
            self._retry_timer = None
            self.send_round()
        self._retry_timer = self.broker.set_timer(RETRY_MS, "retry WriteTxnMarkers", again)

    def _on_response(self, sent):
        def cb(resp, err):
            b = self.broker
            retry = False
            for tid, tps in sent:
                p = self.pending.get(tid)
                if p is None:
                    continue
                p.in_flight.difference_update(tps)
                errs = {} if resp is None else resp.markers.get(p.md.producer_id, {})
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
                        if "no-marker-retry" in b.mutations:
                            b.narrate(f"[mutation no-marker-retry] marker for {tp[0]}-{tp[1]} failed with "
                                      f"{e.name} and is NOT retried")
                            p.remaining.discard(tp)
                        else:
                            retry = True
                    else:
                        b.narrate(f"{tid!r}: marker for {tp[0]}-{tp[1]} failed with {e.name}; partition dropped")
                        p.remaining.discard(tp)
                if p.abandoned:
                    self.pending.pop(tid, None)
                elif not p.remaining and not p.in_flight:
                    self._complete(p)
            if retry:
                self._schedule_retry()
        return cb

    def _complete(self, p: PendingCompleteTxn) -> None:
        b = self.broker
        tid = p.md.transactional_id
        self.pending.pop(tid, None)
        b.kernel.narrate_f(("%r: every partition has its marker; writing %s", tid, p.transit.txn_state))

        def done(error):
            if error == Errors.COORDINATOR_NOT_AVAILABLE:
                b.set_timer(RETRY_MS, f"retry writing {p.transit.txn_state.name} for {tid!r}",
                            lambda: self._rewrite(p))
        self.coord.state_manager.append_transition(p.md, p.transit, p.coordinator_epoch, done, retry_on_error=True)

    def _rewrite(self, p: PendingCompleteTxn) -> None:
        cache = self.coord.state_manager.caches.get(p.txn_partition)
        if cache is None or cache.coordinator_epoch != p.coordinator_epoch:
            return
        self._complete(p)
