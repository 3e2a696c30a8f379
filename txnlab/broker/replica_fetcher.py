"""Follower-side replication (Kafka's ``ReplicaFetcherThread``): one per source leader.

Owns the fetch loop a follower runs against one leader broker: a Fetch with
``replica_id`` = this broker, its LEO and last fetched leader epoch per
partition; truncation when the leader says the follower's log has diverged
(KIP-101/KIP-595), appending what the leader sent, and following the leader's
High Watermark (follower HW = min(leader HW, own LEO)).
"""
from __future__ import annotations

from typing import Optional

from ..kernel.kernel import Event
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.names import broker_name

_NONE = Errors.NONE       # read once per fetched partition (see broker/fetch.py)
_new_message = object.__new__     # see broker/fetch.py


class ReplicaFetcher:
    def __init__(self, broker, leader_id: int) -> None:

        self.broker = broker
        self.leader_id = leader_id
        self.leader_name = broker_name(leader_id)
        self.partitions: dict = {}
        self.in_flight = False
        self._last_offsets: dict = {}
        self._backoff_timer: Optional[Event] = None
        self._requests: dict = {}
        # KIP-227 fetch session: what the leader's session holds for us
        self.session_id = 0
        self.session_epoch = 0
        self._session_view: dict = {}      # tp -> FetchPartition, as the leader's session holds it
        # what the session will hold once the leader answers: the partitions sent, and those forgotten (None for a
        # full request)
        self._sent: dict = {}
        self._forgotten: Optional[tuple] = None
        # partitions whose fetch position may have changed: an ordered set (tp -> None), so that the order
        # of a request's partitions never depends on string hashing (same seed, same trace, any process)
        self._dirty: dict = {}
        self._on_response_cb = self._on_response     # (one bound method, not one per request)

    def add_partition(self, p, fetch: bool = True) -> None:
        """Start fetching ``p`` (Kafka's addFetcherForPartitions: a LeaderAndIsr adds all its partitions,
        then the next request names them all)."""
        self.partitions[p.tp] = p
        self._dirty[p.tp] = None
        if fetch:
            self.maybe_fetch()

    def remove_partition(self, tp) -> None:
        self.partitions.pop(tp, None)
        self._last_offsets.pop(tp, None)
        self._dirty[tp] = None

    def maybe_fetch(self) -> None:
        if self.in_flight or not self.partitions or self._backoff_timer is not None:
            return
        b = self.broker
        news = False        # whether some fetch position moved since the last request (else a background fetch)
        max_bytes = b.config["replica.fetch.max.bytes"]
        # An incremental request (KIP-227) names only the partitions whose fetch position changed since the
        # session last saw them: only those this fetcher touched can have.  A full one names them all.
        incremental = self.session_id > 0
        view = self._session_view
        partitions = self.partitions
        requests = self._requests
        last_offsets = self._last_offsets
        parts = {}
        forgotten = None
        for tp in (self._dirty if incremental else partitions):
            p = partitions.get(tp)
            if p is None:
                if tp in view:
                    if forgotten is None:
                        forgotten = [tp]
                    else:
                        forgotten.append(tp)
                continue
            # The FetchPartition for tp now: the last one built while nothing moved (the same object, so the
            # session's view of it tells whether it changed), else a new one at the LEO, in the log's latest epoch
            log = p.log
            leo = log.log_end_offset
            entries = log.epoch_entries     # (log.latest_epoch without the property's call: once per round trip)
            last_epoch = entries[-1].epoch if entries else -1
            fp = requests.get(tp)
            if fp is None or fp.fetch_offset != leo or fp.current_leader_epoch != p.leader_epoch \
                    or fp.last_fetched_epoch != last_epoch:
                # FetchPartition(leo, max_bytes, leader epoch, last fetched epoch), without the class call (the LEO
                # moves with every replicated write: once per round trip; see _new_message in broker/fetch.py)
                fp = _new_message(m.FetchPartition)
                fp.fetch_offset = leo
                fp.partition_max_bytes = max_bytes
                fp.current_leader_epoch = p.leader_epoch
                fp.last_fetched_epoch = last_epoch
                requests[tp] = fp
            if last_offsets.get(tp) != leo:
                news = True
                last_offsets[tp] = leo
            if not incremental or view.get(tp) is not fp:
                parts[tp] = fp
        if incremental:
            gone = tuple(forgotten) if forgotten is not None else ()
            self._forgotten = gone
        else:
            gone = ()
            self._forgotten = None
        self._sent = parts
        # FetchRequest(broker id, wait, 1, READ_UNCOMMITTED, parts, session or 0, epoch or 0, gone, broker epoch),
        # without the class call (once per round trip; see _new_message in broker/fetch.py)
        req: m.FetchRequest = _new_message(m.FetchRequest)
        req.replica_id = b.broker_id
        req.max_wait_ms = b.config["replica.fetch.wait.max.ms"]
        req.min_bytes = 1
        req.isolation_level = m.READ_UNCOMMITTED
        req.partitions = parts
        req.session_id = self.session_id
        req.session_epoch = self.session_epoch if incremental else 0
        req.forgotten = gone
        req.replica_epoch = b.broker_epoch      # v15's ReplicaState.ReplicaEpoch (KIP-903)
        self._dirty = {}
        self.in_flight = True
        b.send_request(self.leader_name, req, self._on_response_cb, 30_000, not news)

    def _backoff(self) -> None:
        def again():
            self._backoff_timer = None
            self.maybe_fetch()
        self._backoff_timer = self.broker.set_timer(1_000, f"replica fetch backoff (leader {self.leader_id})",
                                                    again, background=True)

    def _on_response(self, resp, err) -> None:
        self.in_flight = False
        if err is not None or resp.error:
            self.session_id = 0              # start a new session with a full request
            self._session_view = {}
            self._backoff()
            return
        if resp.session_id > 0:
            if resp.session_id != self.session_id:
                self.session_id = resp.session_id
                self.session_epoch = 1
            else:
                self.session_epoch += 1
            sent = self._sent
            forgotten = self._forgotten
            if forgotten is None:
                self._session_view = dict(sent)    # a copy: the request that was sent stays as it was
            else:
                self._session_view.update(sent)
                for tp in forgotten:
                    self._session_view.pop(tp, None)
        b = self.broker
        now = b.kernel.now
        trouble = False
        dirty = self._dirty
        requested = self._session_view if resp.session_id > 0 else self._sent    # what the request fetched
        for tp, d in resp.partitions.items():
            p = self.partitions.get(tp)
            if p is None or p.is_leader:
                continue
            dirty[tp] = None
            log = p.log
            fp = requested.get(tp)
            if fp is None or fp.fetch_offset != log.log_end_offset or fp.current_leader_epoch != p.leader_epoch:
                # AbstractFetcherThread.processFetchRequest: "It's possible that a partition is removed and re-added
                # or truncated when there is a pending fetch request": only an answer fetched at the offset and in
                # the leader epoch the partition is fetched at now is processed (a late one, held by the network
                # while the partition moved away and back, is not)
                b.narrate(f"{p.name}: follower {b.broker_id} ignores this answer: it fetched "
                          f"{'nothing' if fp is None else f'offset {fp.fetch_offset} in leader epoch {fp.current_leader_epoch}'}"
                          f", and the partition is now at offset {log.log_end_offset} in leader epoch {p.leader_epoch}")
                continue
            if d.error != _NONE:
                trouble = True
                # Kafka's fetcher leaves a partition in error out of its requests until its retry, so the fetch
                # session forgets it and the retry names it again (FetchSessionHandler): the leader then reads it
                # afresh -- and learns where this follower is (a leader looks only at what a request names or
                # what changed on its side: a partition its session held from before it led would never be read)
                self._session_view.pop(tp, None)
                continue
            if d.diverging_epoch is not None:
                epoch, end = d.diverging_epoch
                target = end if end >= 0 else log.high_watermark
                if epoch >= 0:
                    own_epoch, own_end = log.end_offset_for_epoch(epoch)
                    if own_epoch == epoch and own_end >= 0:
                        target = min(target, own_end)
                target = min(target, log.log_end_offset)
                lost = log.log_end_offset - target
                log.truncate_to(target)
                b.narrate(f"{p.name}: follower {b.broker_id} truncated its log to offset {target} "
                          f"({lost} offset(s) the new leader does not have were removed)")
                self._last_offsets.pop(tp, None)
                continue
            if d.records:
                # (the log's append records where each new leader epoch of its batches starts, as Kafka's does)
                log.append_as_follower(d.records, now)
                b.kernel.narrate_f(("%s: follower %d appended up to offset %d", p.name, b.broker_id,
                                    log.log_end_offset - 1))
            hw = d.high_watermark if d.high_watermark < log.log_end_offset else log.log_end_offset  # (min(), no call)
            if hw > log.high_watermark:
                psm = log._psm
                if log._online and hw >= log.log_start_offset and not psm.unreplicated_txns and not psm.ongoing_txns:
                    # log.update_high_watermark(hw), inlined for a log with no transaction open or unreplicated (a
                    # coordinator's log): its LSO is its HW
                    log.high_watermark = log.last_stable_offset = hw
                    log.first_unstable_offset = None
                else:
                    log.update_high_watermark(hw)
        if trouble:
            self._backoff()
        else:
            self.maybe_fetch()
