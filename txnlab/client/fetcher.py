"""The consumer's ``Fetcher`` and ``CompletedFetch`` (Kafka's consumer internals, KAFKA-EOS §4).

Owns the per-partition fetch state (position, stored offset, last seen HW /
LSO / log start, a pending offset reset), one Fetch request per leader broker
with the consumer's ``isolation.level`` and long-poll ``fetch.wait.max.ms``,
the fetch buffer, read_committed filtering of aborted transactions exactly as
``CompletedFetch.nextFetchedRecord`` does it, offset resets with ListOffsets
(``auto.offset.reset``), and the reaction to fetch errors (metadata refresh
and retry, OFFSET_OUT_OF_RANGE -> reset).
"""
from __future__ import annotations

import heapq
from collections import deque
from operator import attrgetter
from typing import Callable, Optional

from ..errors import KafkaError
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.record_batch import ControlRecordType
from .epoch_check import NEVER_FETCHED, EpochCheck
from .message import OFFSET_INVALID, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Message
from .network_client import _NODE_NAMES, broker_node

_TP = attrgetter("tp")
_NONE = Errors.NONE
_new = object.__new__


def _epoch_of(batch) -> Optional[int]:
    return batch.partition_leader_epoch if batch.partition_leader_epoch >= 0 else None


LIST_EARLIEST = -2
LIST_LATEST = -1
REFRESH_METADATA = {Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH,
                    Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.LEADER_NOT_AVAILABLE,
                    Errors.NETWORK_EXCEPTION, Errors.REQUEST_TIMED_OUT, Errors.KAFKA_STORAGE_ERROR}


class CompletedFetch:
    """The batches one Fetch returned for one partition, drained record by record.

    ``next_record()`` is Kafka's ``nextFetchedRecord``: for read_committed it keeps a
    min-heap of the aborted transactions (by first offset) and a set of aborted
    producer ids; a batch with a producer id first moves every aborted transaction
    that starts at or before its last offset from the heap to the set; an ABORT
    marker takes its producer id out of the set (that aborted span ends); a
    transactional batch of a producer in the set is skipped whole.  Control
    records are never returned.  ``next_fetch_offset`` is where the consumer's
    position goes: past returned records, skipped batches and markers.
    """

    def __init__(self, tp: tuple, fetch_offset: int, batches, aborted_transactions, read_committed: bool) -> None:
        self.tp = tp
        self.fetch_offset = fetch_offset
        self.next_fetch_offset = fetch_offset
        self.read_committed = read_committed
        self._batches = deque(batches)
        self._batch = None
        self._rows: tuple = ()             # the current batch's records, returned from index _i on
        self._i = 0
        self._aborted: list = []
        if read_committed and aborted_transactions:
            self._aborted = [(first, pid) for pid, first in aborted_transactions]
            heapq.heapify(self._aborted)
        self.aborted_pids: set = set()
        # (base offset, last offset, the producer id of an aborted transaction or None, the control record type of
        # a marker or None) for narration
        self.skipped: list = []
        self.drained = False

    def _consume_aborted_up_to(self, offset: int) -> None:
        heap = self._aborted
        while heap and heap[0][0] <= offset:
            _, pid = heapq.heappop(heap)
            self.aborted_pids.add(pid)

    def _next_batch(self) -> bool:
        """Move to the next batch that has records to return; False at the end of the data."""
        while True:
            if not self._batches:
                if self._batch is not None:
                    # v2 batches keep their last offset even if compaction removed records
                    self.next_fetch_offset = max(self.next_fetch_offset, self._batch.next_offset)
                self.drained = True
                self._rows = ()
                return False
            batch = self._batches.popleft()
            self._batch = batch
            if self.read_committed and batch.producer_id >= 0:
                self._consume_aborted_up_to(batch.last_offset)
                if batch.is_control and batch.control_type == ControlRecordType.ABORT:
                    self.aborted_pids.discard(batch.producer_id)
                elif batch.is_transactional and batch.producer_id in self.aborted_pids:
                    self.skipped.append((batch.base_offset, batch.last_offset, batch.producer_id, None))
                    self.next_fetch_offset = max(self.next_fetch_offset, batch.next_offset)
                    continue
            if batch.is_control:
                self.skipped.append((batch.base_offset, batch.last_offset, None, batch.control_type))
                self.next_fetch_offset = max(self.next_fetch_offset, batch.next_offset)
                continue
            self._rows = batch.records
            self._i = 0
            return True

    def next_record(self):
        """(offset, Record, batch) of the next record to return, or None when drained."""
        record = self._next()
        return None if record is None else (self.next_fetch_offset - 1, record, self._batch)

    def _next(self):
        """next_record()'s Record alone (None when drained): its offset is then next_fetch_offset - 1, its batch
        ``_batch``."""
        if self.drained:
            return None
        while True:
            i = self._i
            rows = self._rows
            if i >= len(rows):
                if not self._next_batch():
                    return None
                continue
            self._i = i + 1
            offset = self._batch.base_offset + i
            if offset >= self.next_fetch_offset:       # a fetch returns whole batches: skip what we had
                self.next_fetch_offset = offset + 1
                return rows[i]


class PartitionState:
    """What the consumer knows about one assigned partition (Kafka's ``TopicPartitionState``)."""

    __slots__ = ("position", "app_position", "reset_strategy", "awaiting_committed", "stored_offset", "stored_epoch",
                 "committed", "high_watermark", "last_stable_offset", "log_start_offset", "paused", "eof_at",
                 "retry_at", "position_epoch", "fetched_epoch", "checking")

    def __init__(self) -> None:
        self.position: Optional[int] = None             # the fetch position (what the next Fetch asks for)
        # the application's position: after the last message (or control record) poll() went past since the
        # assignment or the last seek (librdkafka's rktp_app_pos; position() returns it in that dialect)
        self.app_position: Optional[int] = None
        self.reset_strategy: Optional[str] = None       # "earliest" / "latest" while a reset is due
        self.awaiting_committed = False
        self.stored_offset: Optional[int] = None        # librdkafka's stored offset (what commit() sends)
        self.stored_epoch: Optional[int] = None         # ... and its leader epoch (None: unknown)
        self.committed: Optional[int] = None
        self.high_watermark = OFFSET_INVALID
        self.last_stable_offset = OFFSET_INVALID
        self.log_start_offset = OFFSET_INVALID
        self.paused = False
        self.eof_at: Optional[int] = None
        self.retry_at = 0
        # KIP-320 (epoch_check.py): the leader epoch of the batch the position was read from (or of a reset), the
        # leader epoch the partition was last fetched (or checked) under, and a check in flight
        self.position_epoch: Optional[int] = None
        self.fetched_epoch = NEVER_FETCHED         # (CHECK_NOW: a seek with a leader epoch, checked at once)
        self.checking = False

    @property
    def has_position(self) -> bool:
        return self.position is not None


class Fetcher(EpochCheck):
    def __init__(self, consumer) -> None:
        self.c = consumer
        self.node = consumer._node
        self.kernel = consumer._kernel
        self.cfg = consumer._config
        self.read_committed = self.cfg["isolation.level"] == "read_committed"
        self.isolation = m.READ_COMMITTED if self.read_committed else m.READ_UNCOMMITTED
        self.buffer: deque[CompletedFetch] = deque()
        self.events: deque = deque()                   # error/EOF messages for poll()
        self.in_flight: set = set()                    # broker nodes with a Fetch outstanding
        self.resetting: set = set()                    # tps with a ListOffsets outstanding
        self._retry_timer = None
        self._metadata_pending = False

    @property
    def states(self) -> dict:
        return self.c._assignment

    def fetch_positions(self) -> dict:
        """{(topic, partition): the offset the next Fetch asks for} of every assigned partition that has one
        (Kafka's fetch position; the lab's pictures draw it: where a consumer reads, not what it returned)."""
        return {tp: st.position for tp, st in self.states.items() if st.position is not None}

    def narrate(self, text: str) -> None:
        self.kernel.narrate(text)

    # ------------------------------------------------------------- buffer
    def clear_buffer(self, tp: Optional[tuple] = None) -> None:
        if tp is None:
            self.buffer.clear()
        else:
            self.buffer = deque(cf for cf in self.buffer if cf.tp != tp)

    def has_buffered(self, tp: tuple) -> bool:
        for cf in self.buffer:      # a loop, not any(<generator>): asked for every partition at every poll
            if cf.tp == tp:
                return True
        return False

    def next_message(self) -> Optional[Message]:
        """The next record for the application, moving positions past whatever was skipped."""
        if self.events:
            return self.events.popleft()
        buf = self.buffer
        if not buf:
            return None
        states = self.c._assignment
        i = 0               # (walked by index, deleting in place: no copy of the buffer per poll)
        while i < len(buf):
            cf = buf[i]
            st = states.get(cf.tp)
            if st is None or st.position != cf.next_fetch_offset:
                del buf[i]                      # unassigned or seeked since: stale data
                continue
            if st.paused:
                i += 1
                continue
            record = cf._next()
            if cf.skipped:
                self._note_skipped(cf)
            if record is None:
                del buf[i]
                if cf._batch is not None:
                    st.position_epoch = _epoch_of(cf._batch)
                if cf.next_fetch_offset != st.position:     # went past aborted data or a control record
                    st.app_position = cf.next_fetch_offset
                    # librdkafka hands a control record to rd_kafka_fetch_op_app_prepare (rdkafka_op.c,
                    # rd_kafka_op_handle_std): rd_kafka_update_app_pos stores its offset + 1 (and leader epoch) with
                    # enable.auto.offset.store, so commit() then commits past the marker (Java commits its position)
                    if self.cfg["enable.auto.offset.store"]:
                        st.stored_offset, st.stored_epoch = cf.next_fetch_offset, st.position_epoch
                st.position = cf.next_fetch_offset
                continue
            offset = cf.next_fetch_offset - 1
            batch = cf._batch
            st.position = st.app_position = cf.next_fetch_offset
            st.position_epoch = _epoch_of(batch)
            # the log keeps lab time; the application sees Unix time (anchored at sim.clock.epoch.ms)
            if batch.log_append_time >= 0:
                ts = (TIMESTAMP_LOG_APPEND_TIME, batch.log_append_time + self.cfg["sim.clock.epoch.ms"])
            else:
                ts = (TIMESTAMP_CREATE_TIME, record.timestamp + self.cfg["sim.clock.epoch.ms"])
            # Message(topic, partition, offset, key, value, headers, timestamp=ts, leader_epoch=...), its fields
            # set directly: they are already what __init__ would keep (one per consumed record)
            tp = cf.tp
            msg = _new(Message)
            msg._topic = tp[0]
            msg._partition = tp[1]
            msg._offset = offset
            msg._key = record.key
            msg._value = record.value
            msg._headers = list(record.headers) if record.headers else None
            msg._error = None
            msg._timestamp = ts
            msg._latency = None
            msg._leader_epoch = st.position_epoch           # (its batch's epoch, None below 0)
            return msg
        return None

    def take_fetched(self, out: list, limit: int) -> int:
        """next_message() repeated while it would return the next records of the batch it is in (appended to ``out``
        until it holds ``limit``), for a caller that asks again at once with nothing happening in between (the
        consumer's _poll_fetched); how many were appended (0: the caller asks next_message()).

        Within one batch of the first buffered fetch, next_message() returns its records one after the other: the
        same partition, state and batch each time, nothing skipped or narrated (that happens between batches), and
        positions that no one reads before the last of these calls: they are set once, as the last call sets them."""
        if self.events:
            return 0
        buf = self.buffer
        if not buf:
            return 0
        cf = buf[0]
        rows = cf._rows
        i = cf._i
        n = len(rows)
        if i >= n or cf.drained:
            return 0
        st = self.c._assignment.get(cf.tp)
        if st is None or st.position != cf.next_fetch_offset or st.paused:
            return 0
        batch = cf._batch
        base = batch.base_offset
        nfo = cf.next_fetch_offset
        epoch_ms = self.cfg["sim.clock.epoch.ms"]
        append_time = batch.log_append_time
        ts = (TIMESTAMP_LOG_APPEND_TIME, append_time + epoch_ms) if append_time >= 0 else None
        leader_epoch = batch.partition_leader_epoch if batch.partition_leader_epoch >= 0 else None
        topic, partition = cf.tp
        if base + i < nfo:                     # a fetch returns whole batches: skip what we had (_next() would)
            i = min(n, nfo - base)
        stop = min(n, i + limit - len(out))
        offset = base + i
        for record in rows[i:stop]:
            msg = _new(Message)                # (as next_message() makes it)
            msg._topic = topic
            msg._partition = partition
            msg._offset = offset
            msg._key = record.key
            msg._value = record.value
            msg._headers = list(record.headers) if record.headers else None
            msg._error = None
            msg._timestamp = ts if ts is not None else (TIMESTAMP_CREATE_TIME, record.timestamp + epoch_ms)
            msg._latency = None
            msg._leader_epoch = leader_epoch
            out.append(msg)
            offset += 1
        taken = stop - i
        cf._i = stop
        if taken:
            cf.next_fetch_offset = offset
            st.position = st.app_position = offset
            st.position_epoch = leader_epoch
        return taken

    def _note_skipped(self, cf: CompletedFetch) -> None:
        if not cf.skipped:
            return
        if not self.kernel.trace.enabled:
            # the trace keeps no notes: their text is never read (as the kernel's timers, none is written)
            for _ in cf.skipped:
                self.c._say("")
            cf.skipped = []
            return
        for base, last, pid, ctype in cf.skipped:
            why = f"aborted transaction of producer {pid}" if pid is not None else \
                f"{ctype.name if ctype is not None else 'control'} marker"
            span = f"offset {base}" if base == last else f"offsets {base}..{last}"
            self.c._say(f"{self.c.name} skips {span} of {cf.tp[0]}-{cf.tp[1]} ({why}); its position moves past it")
        cf.skipped = []

    # -------------------------------------------------------------- fetches
    def fetchable(self, tp: tuple, st: PartitionState) -> bool:
        return st.position is not None and not st.paused and not self.has_buffered(tp) \
            and st.retry_at <= self.kernel.now          # (st.has_position, without the property call)

    def send_fetches(self) -> None:
        node = self.node
        if self.c._closed or node.crashed:
            return
        buf = self.buffer
        n = len(buf)
        assignment = self.c._assignment
        if n == 1 and len(assignment) == 1 and buf[0].tp in assignment:
            return          # the one assigned partition has fetched data waiting (the usual case): nothing to fetch
        by_node = checks = None
        need_metadata = False
        now = self.kernel.now
        # fetchable(), inlined (asked for every partition at every poll); the buffered partitions collected once
        buffered = () if n == 0 else (buf[0].tp,) if n == 1 else set(map(_TP, buf))
        topics = node.topics
        for tp, st in assignment.items():
            if st.position is None or st.paused or tp in buffered or st.retry_at > now:
                continue
            # node.leader_for(tp), inlined
            parts = topics.get(tp[0])
            if not parts or tp[1] >= len(parts):
                leader = None
            else:
                leader = parts[tp[1]].leader
                leader = None if leader < 0 else _NODE_NAMES.get(leader) or broker_node(leader)
            if leader is None:
                need_metadata = True
                continue
            if leader in self.in_flight:
                continue
            epoch = parts[tp[1]].leader_epoch
            if st.position_epoch is not None and st.fetched_epoch != NEVER_FETCHED and st.fetched_epoch < epoch:
                # the position is checked first (EpochCheck)
                if checks is None:
                    checks = {}
                checks.setdefault(leader, {})[tp] = epoch
                continue
            if by_node is None:
                by_node = {}
            by_node.setdefault(leader, {})[tp] = m.FetchPartition(
                st.position, self.cfg["max.partition.fetch.bytes"], epoch)
        if checks is not None:
            self.check_positions(checks)
        if need_metadata:
            self.refresh_metadata()
        if by_node is None:
            return
        for leader, parts in sorted(by_node.items()):
            req = m.FetchRequest(m.CONSUMER_REPLICA_ID, self.cfg["fetch.wait.max.ms"], 1, self.isolation, parts)
            self.in_flight.add(leader)
            self.node.send_request(leader, req, self._on_fetch_response(leader, req),
                                   background=True)                 # its timeout: dialect.REQUEST_TIMEOUT

    def refresh_metadata(self) -> None:
        """Ask for metadata because some partition has no known leader; retry after retry.backoff.ms
        while one is still missing (a leader election takes a while)."""
        if self._metadata_pending:
            return
        self._metadata_pending = True

        def ready():
            self._metadata_pending = False
            if any(self.node.leader_for(tp) is None for tp in self.states):
                self.node.set_timer(self.cfg["retry.backoff.ms"], "metadata retry backoff", self._wake,
                                    background=True)
            else:
                self._wake()
        self.node.request_metadata(tuple(sorted({t for t, _ in self.states})), then=ready)

    def _wake(self) -> None:
        if self.c._closed or self.node.crashed:
            return
        self.c._changed = True
        self.reset_offsets()
        self.send_fetches()

    def _on_fetch_response(self, leader: str, req) -> Callable:
        def cb(resp, err):
            self.in_flight.discard(leader)
            if self.c._closed or self.node.crashed:
                return
            if err is not None:
                self.narrate(f"{self.c.name}: Fetch to {leader} failed ({err.name}); refreshing metadata and "
                             f"retrying after retry.backoff.ms")
                self._backoff(req.partitions)
                self.node.request_metadata(tuple(sorted({t for t, _ in req.partitions})))
                return
            retry = []
            for tp, data in sorted(resp.partitions.items()):
                fp = req.partitions[tp]
                if self._handle_partition(tp, fp.fetch_offset, data, fp.current_leader_epoch):
                    retry.append(tp)
            if retry:
                self._backoff(retry)
                self.node.request_metadata(tuple(sorted({t for t, _ in retry})))
            self.send_fetches()
        return cb

    def _backoff(self, tps, delay_ms: Optional[int] = None) -> None:
        """Fetch ``tps`` again after retry.backoff.ms (or ``delay_ms``, on a timer of its own)."""
        at = self.kernel.now + (self.cfg["retry.backoff.ms"] if delay_ms is None else delay_ms)
        for tp in tps:
            st = self.states.get(tp)
            if st is not None:
                st.retry_at = at
        self.c._changed = True
        if delay_ms is not None:
            self.node.set_timer(delay_ms, "retry backoff", self.send_fetches, background=True)
            return
        if self._retry_timer is None or self._retry_timer.cancelled:
            def fire():
                self._retry_timer = None
                self.send_fetches()
            self._retry_timer = self.node.set_timer(self.cfg["retry.backoff.ms"], "fetch retry backoff", fire,
                                                    background=True)

    def _handle_partition(self, tp: tuple, fetch_offset: int, data, current_epoch: int = -1) -> bool:
        """Apply one partition's fetch result; True if it must be retried after a metadata refresh."""
        st = self.states.get(tp)
        if st is None or st.position != fetch_offset:
            return False          # unassigned or seeked while the fetch was out: discard
        if data.error == _NONE:            # (the code compared as it is: converted to Errors only when it is not NONE)
            st.fetched_epoch = current_epoch
            st.high_watermark = data.high_watermark
            st.last_stable_offset = data.last_stable_offset
            st.log_start_offset = data.log_start_offset
            if data.records:
                self.buffer.append(CompletedFetch(tp, fetch_offset, data.records, data.aborted_transactions,
                                                  self.read_committed))
                self.c._changed = True
                if data.aborted_transactions and self.kernel.trace.enabled:     # (narrate() keeps nothing else)
                    self.narrate(f"{self.c.name}: {tp[0]}-{tp[1]} fetch carries aborted transactions "
                                 f"{[(pid, first) for pid, first in data.aborted_transactions]} "
                                 f"(producer id, first offset): their batches will be skipped")
            else:
                self._maybe_eof(tp, st)
            return False
        err = Errors(data.error)
        if err in REFRESH_METADATA:
            self.narrate(f"{self.c.name}: fetching {tp[0]}-{tp[1]} failed with {err.name}: refresh metadata "
                         f"to find the current leader, then retry")
            return True
        if err == Errors.OFFSET_OUT_OF_RANGE:
            self._out_of_range(tp, st, data)
            return False
        self.narrate(f"{self.c.name}: fetching {tp[0]}-{tp[1]} failed with {err.name}")
        self.events.append(self._error_message(tp, KafkaError(err, f"Fetch {tp[0]}-{tp[1]}: {err.name}")))
        self.c._changed = True
        return True

    def _maybe_eof(self, tp: tuple, st: PartitionState) -> None:
        if not self.cfg["enable.partition.eof"]:
            return
        end = st.last_stable_offset if self.read_committed else st.high_watermark
        if st.position >= end and st.eof_at != st.position:
            st.eof_at = st.position
            self.events.append(self._error_message(
                tp, KafkaError(KafkaError._PARTITION_EOF, f"Fetch from broker reached end of partition at "
                                                          f"offset {st.position}"), st.position))
            self.c._changed = True

    @staticmethod
    def _error_message(tp: tuple, error: KafkaError, offset: int = OFFSET_INVALID) -> Message:
        return Message(tp[0], tp[1], offset, None, None, error=error)

    def _out_of_range(self, tp: tuple, st: PartitionState, data) -> None:
        policy = self.cfg["auto.offset.reset"]
        if policy == "error":
            self.narrate(f"{self.c.name}: offset {st.position} is out of range for {tp[0]}-{tp[1]} (log "
                         f"starts at {data.log_start_offset}, HW {data.high_watermark}) and auto.offset.reset="
                         f"error")
            self.events.append(self._error_message(tp, KafkaError(
                Errors.OFFSET_OUT_OF_RANGE, f"fetch offset {st.position} is out of range"), st.position))
            st.position = None
        else:
            self.narrate(f"{self.c.name}: offset {st.position} is out of range for {tp[0]}-{tp[1]} (log starts "
                         f"at {data.log_start_offset}, HW {data.high_watermark}) -> auto.offset.reset={policy}")
            st.position = None
            st.reset_strategy = policy
        self.c._changed = True

    # -------------------------------------------------------------- resets
    def reset_offsets(self) -> None:
        """Send ListOffsets for every partition whose position must come from auto.offset.reset."""
        for st in self.c._assignment.values():      # (asked at every poll: mostly no reset is due)
            if st.reset_strategy is not None:
                break
        else:
            return
        by_node: dict = {}
        need_metadata = False
        for tp, st in self.c._assignment.items():
            if st.reset_strategy is None or tp in self.resetting or st.retry_at > self.kernel.now:
                continue
            leader = self.node.leader_for(tp)
            if leader is None:
                need_metadata = True
                continue
            by_node.setdefault(leader, {})[tp] = LIST_EARLIEST if st.reset_strategy == "earliest" else LIST_LATEST
        if need_metadata:
            self.refresh_metadata()
        if not by_node:
            return
        for leader, parts in sorted(by_node.items()):
            self.resetting.update(parts)
            self.node.send_request(leader, m.ListOffsetsRequest(self.isolation, parts),
                                   self._on_list_offsets(parts), timeout_ms=self.cfg["request.timeout.ms"])

    def _on_list_offsets(self, parts: dict) -> Callable:
        def cb(resp, err):
            self.resetting.difference_update(parts)
            self.c._changed = True
            if err is not None:
                self._backoff(parts)
                self.node.request_metadata(tuple(sorted({t for t, _ in parts})))
                return
            retry = []
            for tp, (e, offset, _ts, epoch) in sorted(resp.partitions.items()):
                st = self.states.get(tp)
                if st is None or st.reset_strategy is None:
                    continue
                if e != Errors.NONE:
                    retry.append(tp)
                    continue
                where = "log start" if parts[tp] == LIST_EARLIEST else \
                    ("last stable offset" if self.read_committed else "high watermark")
                self.narrate(f"{self.c.name}: {tp[0]}-{tp[1]} starts at offset {offset} (auto.offset.reset="
                             f"{st.reset_strategy}: the {where})")
                st.position = offset
                st.position_epoch = epoch if epoch >= 0 else None      # (librdkafka keeps it; Java too)
                st.reset_strategy = None
            if retry:
                self._backoff(retry)
                self.node.request_metadata(tuple(sorted({t for t, _ in retry})))
            self.send_fetches()
        return cb

    # ------------------------------------------------------------ watermarks
    def list_offsets(self, tp: tuple, timestamp: int, done: Callable) -> None:
        """One ListOffsets for one partition; done(error, offset)."""
        leader = self.node.leader_for(tp)
        if leader is None:
            self.node.request_metadata((tp[0],), then=lambda: done(Errors.LEADER_NOT_AVAILABLE, -1))
            return

        def cb(resp, err):
            self.c._changed = True
            if err is not None:
                done(err, -1)
                return
            e, off = resp.partitions.get(tp, (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1))[:2]
            done(Errors(e), off)
        self.node.send_request(leader, m.ListOffsetsRequest(self.isolation, {tp: timestamp}), cb,
                               timeout_ms=self.cfg["request.timeout.ms"])
