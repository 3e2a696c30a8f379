"""Kafka's ``UnifiedLog``: one replica of one partition (segments, offsets, HW, LSO).

Owns the batches (split into segments), the log start/end offsets, the high watermark and last stable offset, the
aborted-transaction index, the leader epoch cache, producer snapshots, and the producer state that decides which
appends are accepted. What survives ``crash()`` is the "disk": segments, snapshots, the txn index, the leader-epoch
checkpoint and the HW checkpoint. ``recover()`` rebuilds the memory the way Kafka's log loading does.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import islice

from txnlab.protocol.errors import Errors, ProtocolError

from .leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochFileCache
from .log_append_info import LogAppendInfo, ProducerDescription
from .log_config import DEFAULT_CONFIG
from .log_segment import BatchesView, LogSegment
from .log_validator import validate_leader_batches
from .producer_state import (TV_UNKNOWN, AppendOrigin, BatchMetadata, CompletedTxn,
                             ProducerAppendInfo, ProducerStateEntry, ProducerStateManager, ProducerStateSnapshot)
from ..protocol.record_batch import NO_TIMESTAMP, ControlRecordType, RecordBatch
from .txn_index import AbortedTxn, TransactionIndex
from .verification import VerificationGuard

_CLIENT, _REPLICATION, _COORDINATOR = AppendOrigin.CLIENT, AppendOrigin.REPLICATION, AppendOrigin.COORDINATOR


class UnifiedLog:
    """One replica of one partition.

    ``log_start_offset``, ``log_end_offset``, ``high_watermark`` and ``first_unstable_offset`` are plain
    attributes (read on every step of replication, where a property costs a Python call): only this class
    writes them."""

    __slots__ = ("topic", "partition", "topic_partition", "config", "mutations",
                 "_segment_bytes", "_max_message_bytes", "_expiration_ms", "_log_append_time",
                 "_verification_enabled",
                 # durable ("disk")
                 "_batches", "_base_offsets", "_segments", "_snapshots", "_txn_index",
                 "_epoch_cache", "epoch_entries", "_hw_checkpoint", "log_start_offset", "log_end_offset",
                 # memory
                 "_last_append", "_psm", "high_watermark", "first_unstable_offset", "last_stable_offset", "_online")

    def __init__(self, topic: str, partition: int, config: dict | None = None):
        self.topic = topic
        self.partition = partition
        self.topic_partition = f"{topic}-{partition}"
        cfg = dict(DEFAULT_CONFIG)
        cfg.update(config or {})
        self.config = cfg
        self.mutations: set[str] = set()
        self._segment_bytes = int(cfg["segment.bytes"])  # type: ignore[arg-type,call-overload]
        self._max_message_bytes = int(cfg["max.message.bytes"])  # type: ignore[arg-type,call-overload]
        self._expiration_ms = int(cfg["producer.id.expiration.ms"])  # type: ignore[arg-type,call-overload]
        self._log_append_time = cfg["message.timestamp.type"] == "LogAppendTime"
        self._verification_enabled = bool(cfg["transaction.partition.verification.enable"])
        self._batches: list[RecordBatch] = []
        self._base_offsets: list[int] = []
        self._segments: list[LogSegment] = [LogSegment(0, 0)]
        self._snapshots: dict[int, ProducerStateSnapshot] = {}
        self._txn_index = TransactionIndex()
        self._epoch_cache = LeaderEpochFileCache()
        self.epoch_entries = self._epoch_cache._entries     # the same list, read by replication with no call
        self._hw_checkpoint = 0
        self.log_start_offset = 0
        self.log_end_offset = 0
        # the last append's batches: what a follower one append behind is sent (read_to_end); () after a truncation
        self._last_append: tuple[RecordBatch, ...] = ()
        self._psm = ProducerStateManager(self.topic_partition, self._expiration_ms, self._snapshots)
        self.high_watermark = 0
        self.first_unstable_offset: int | None = None
        # §3.2: the first unstable offset if below the HW, else the HW.  A field (read by every fetch and step
        # check), set after each change of the HW or of the first unstable offset (_update_first_unstable_offset)
        self.last_stable_offset = 0
        self._online = True

    # -- offsets --------------------------------------------------------------
    @property
    def high_watermark_checkpoint(self) -> int:
        return self._hw_checkpoint

    @property
    def is_online(self) -> bool:
        return self._online

    # -- views ------------------------------------------------------------------
    @property
    def batches(self) -> BatchesView:
        return BatchesView(self._batches)

    @property
    def producer_state(self) -> ProducerStateManager:
        return self._psm

    @property
    def txn_index(self) -> TransactionIndex:
        return self._txn_index

    @property
    def leader_epoch_cache(self) -> LeaderEpochFileCache:
        return self._epoch_cache

    @property
    def segments(self) -> list[tuple[int, int, int]]:
        """(base offset, batch count, size in bytes) of every segment, oldest first."""
        segs, ends = self._segments, [s.first_index for s in self._segments[1:]] + [len(self._batches)]
        return [(seg.base_offset, end - seg.first_index, seg.size_in_bytes) for seg, end in zip(segs, ends)]

    @property
    def snapshot_offsets(self) -> list[int]:
        return sorted(self._snapshots)

    def describe(self) -> str:
        return (f"{self.topic_partition}: logStart={self.log_start_offset} LEO={self.log_end_offset} "
                f"HW={self.high_watermark} LSO={self.last_stable_offset} "
                f"firstUnstable={self.first_unstable_offset} batches={len(self._batches)} "
                f"segments={len(self._segments)}" + ("" if self._online else " OFFLINE"))

    def __repr__(self) -> str:      # (a method, not ``= describe``: mypyc compiles a def)
        return self.describe()

    def _ensure_online(self) -> bool:
        """True, or raises.  (Hot paths write ``self._online or self._ensure_online()``: no call when online.)"""
        if not self._online:
            raise RuntimeError(f"log {self.topic_partition} has crashed or was closed: call recover() first")
        return True

    def update_topic_config(self, topic_config: dict) -> None:
        """The topic's configs changed (IncrementalAlterConfigs, learned with LeaderAndIsr): the next append is checked
        against the new ``max.message.bytes`` (``segment.bytes``, when overridden) and ``message.timestamp.type``."""
        mmb, seg = topic_config.get("max.message.bytes"), topic_config.get("segment.bytes")
        self._max_message_bytes = int(mmb if mmb is not None else DEFAULT_CONFIG["max.message.bytes"])  # type: ignore[arg-type]
        if seg is not None:
            self._segment_bytes = int(seg)
        self._log_append_time = topic_config.get("message.timestamp.type") == "LogAppendTime"

    # -- appends --------------------------------------------------------------
    def append_as_leader(self, batches: Sequence[RecordBatch] | RecordBatch, leader_epoch: int, now: int,
                         origin: AppendOrigin = _CLIENT,
                         verification_guard: VerificationGuard | None = None) -> LogAppendInfo:
        """Validate every batch, then assign offsets and append them all (or nothing)."""
        self._online or self._ensure_online()
        if isinstance(batches, RecordBatch):
            batches = (batches,)
        if not batches:
            return LogAppendInfo(-1, -1, log_start_offset=self.log_start_offset)
        size = validate_leader_batches(batches, origin, self.topic_partition, self._max_message_bytes,
                                       self._segment_bytes)
        append_time = now if self._log_append_time else None
        offset = self.log_end_offset
        assigned: Sequence[RecordBatch]
        if len(batches) == 1:       # (one batch, the common case: a tuple, which _write keeps without a copy)
            assigned = (batches[0].with_base_offset(offset, leader_epoch, append_time),)
        else:
            built: list[RecordBatch] = []
            for batch in batches:
                built.append(batch.with_base_offset(offset, leader_epoch, append_time))
                offset += batch.record_count
            assigned = built
        return self._append(assigned, origin, TV_UNKNOWN, verification_guard, size,
                            NO_TIMESTAMP if append_time is None else append_time)

    def append_control_as_leader(self, control_type: ControlRecordType, producer_id: int,
                                 producer_epoch: int, coordinator_epoch: int, leader_epoch: int,
                                 now: int, transaction_version: int = 0) -> int:
        """Write a COMMIT/ABORT marker (WriteTxnMarkers); returns the marker's offset."""
        self._online or self._ensure_online()
        marker = RecordBatch.control(control_type, producer_id, producer_epoch, coordinator_epoch, now)
        marker = marker.with_base_offset(self.log_end_offset, leader_epoch,
                                         now if self._log_append_time else None)
        info = self._append((marker,), _COORDINATOR, transaction_version, None,
                            marker._size or marker.size_in_bytes, NO_TIMESTAMP)
        return info.first_offset

    def append_as_follower(self, batches: Sequence[RecordBatch], now: int) -> None:
        """Copy batches fetched from the leader; they already carry offsets and leader epochs.  (Kafka's returns a
        LogAppendInfo, for its fetcher's metrics; nothing reads one here: none is built for each replicated write.)"""
        self._online or self._ensure_online()
        if isinstance(batches, RecordBatch):
            batches = (batches,)
        if not batches:
            return
        expected = self.log_end_offset
        size = 0
        producer = False        # whether any batch carries a producer id
        for batch in batches:
            if batch.base_offset < expected:
                raise ValueError(f"{self.topic_partition}: follower append of {batch!r} would go below "
                                 f"offset {expected} (log end offset or previous batch)")
            expected = batch.next_offset
            size += batch._size or batch.size_in_bytes      # (the property, without its call when known)
            producer = producer or batch.producer_id >= 0
        # Followers do not enforce max.message.bytes / segment.bytes (Kafka's ignoreRecordSize), nor find duplicates.
        if not producer:
            self._write(batches, size)      # (the producer state is as it was: see _append)
            return
        psm, batch = self._psm, batches[0]
        entry = psm.producers.get(batch.producer_id) if len(batches) == 1 else None
        if entry is not None and (batch.record_count if batch.is_control
                                  else batch.is_transactional or entry.current_txn_first_offset is None):
            # One batch of a producer known here that no rule rejects (a REPLICATION append is not validated, bar a
            # plain batch in an open txn): replication's common case updates the entry in place once it is written
            self._write(batches, size)
            txn = psm.append_in_place(entry, batch)
            if txn is None:
                self._update_first_unstable_offset()
            else:
                self._apply_producer_state((), (txn,))
            return
        infos, completed, _ = self._analyze_and_validate_producer_state(batches, _REPLICATION, None, TV_UNKNOWN)
        self._write(batches, size)
        self._apply_producer_state(infos.values(), completed)

    def _append(self, batches: Sequence[RecordBatch], origin: AppendOrigin, transaction_version: int,
                verification_guard: VerificationGuard | None, size: int,
                log_append_time: int) -> LogAppendInfo:
        num_records = 0
        producer = False        # whether any batch carries a producer id
        for batch in batches:
            num_records += batch.record_count
            producer = producer or batch.producer_id >= 0
        if producer:
            # one batch of a producer known here (the common case) is checked against its entry, and updated in place
            first = batches[0]
            entry = self._psm.producers.get(first.producer_id) if len(batches) == 1 else None
            infos, completed, duplicate = self._analyze_and_validate_producer_state(
                batches, origin, verification_guard, transaction_version, entry)
            if duplicate is not None:
                return LogAppendInfo(duplicate.first_offset, duplicate.last_offset, duplicate.timestamp,
                                     True, num_records, len(batches), self.log_start_offset)
        self._write(batches, size)
        # (batches without a producer id -- the coordinators' own logs -- leave the producer state as it was, and with
        # it the first unstable offset and the LSO: the HW did not move either)
        if producer:
            if entry is None:
                self._apply_producer_state(infos.values(), completed)
            elif (txn := self._psm.append_in_place(entry, first)) is None:
                self._update_first_unstable_offset()
            else:
                self._apply_producer_state((), (txn,))
        # LogAppendInfo(...), all seven fields in order, as its own __new__ builds it (not called: ~2,100 instr.)
        return tuple.__new__(LogAppendInfo, (batches[0].base_offset, batches[-1].last_offset, log_append_time, False,
                                             num_records, len(batches), self.log_start_offset))

    def _write(self, batches: Sequence[RecordBatch], size: int) -> None:
        """Put accepted batches at the log's end (a new segment when the active one is full), note new leader epochs."""
        active = self._segments[-1]
        if active.size_in_bytes + size > self._segment_bytes and active.size_in_bytes > 0:     # (rarely full: first)
            self._roll(max(batches[0].base_offset, self.log_end_offset))
            active = self._segments[-1]
        self._batches.extend(batches)
        active.size_in_bytes += size
        self._last_append = tuple(batches)      # (the same object when it is a tuple: a follower's append)
        # (the producer state's map end offset moves with the LEO; what the batches change of it is the caller's)
        self.log_end_offset = self._psm.last_map_offset = batches[-1].next_offset
        entries = self.epoch_entries
        latest = entries[-1] if entries else None
        base_offsets = self._base_offsets
        for batch in batches:
            base_offset = batch.base_offset
            base_offsets.append(base_offset)
            epoch = batch.partition_leader_epoch
            if epoch >= 0 and (latest is None or latest.epoch != epoch or latest.start_offset > base_offset):
                self._epoch_cache.assign(epoch, base_offset)     # (not for an append in the latest epoch)
                latest = entries[-1] if entries else None

    def _analyze_and_validate_producer_state(
            self, batches: Sequence[RecordBatch], origin: AppendOrigin,
            verification_guard: VerificationGuard | None, transaction_version: int,
            in_place: ProducerStateEntry | None = None
    ) -> tuple[dict[int, ProducerAppendInfo], list[CompletedTxn], BatchMetadata | None]:
        """The infos to apply once the batches are written, the txns they complete, or a duplicate's metadata.  With
        ``in_place`` (the stored entry of the one batch's producer) the batch is only checked against that entry."""
        psm = self._psm
        infos: dict[int, ProducerAppendInfo] = {}
        completed: list[CompletedTxn] = []
        mutations = self.mutations
        check_duplicates = origin is _CLIENT and "no-dedup" not in mutations
        check_sequence = "no-sequence-check" not in mutations
        verify = self._verification_enabled and origin is not _REPLICATION
        for batch in batches:
            pid = batch.producer_id
            if pid < 0:
                continue
            if check_duplicates:
                entry = psm.producers.get(pid)
                if entry is not None:
                    duplicate = entry.find_duplicate_batch(batch)
                    if duplicate is not None:  # §1.3 step 1: answer with the original offsets
                        return infos, completed, duplicate
            if verify and batch.is_transactional and not batch.is_control \
                    and not self.has_ongoing_transaction(pid, batch.producer_epoch):
                # Kafka 4.1: a stale epoch first (INVALID_PRODUCER_EPOCH), then the verification of the current one
                self._check_not_stale(pid, batch.producer_epoch)
                if not self.verification_guard(pid).verify(verification_guard):
                    raise ProtocolError(
                        Errors.INVALID_TXN_STATE,
                        f"producer {pid} has no open transaction on {self.topic_partition} and this "
                        f"transactional batch was not verified with the transaction coordinator (KIP-890)")
            if in_place is not None:    # (append_in_place applies it, and forgets the verification state, once written)
                psm.prepare_in_place_update(in_place, origin).validate(batch, transaction_version, check_sequence)
                break
            info = infos.get(pid)
            if info is None:
                info = infos[pid] = psm.prepare_update(pid, origin)
            txn = info.append(batch, origin, transaction_version, check_sequence)
            if batch.is_transactional:
                psm.clear_verification_state_entry(pid)
            if txn is not None:
                completed.append(txn)
        return infos, completed, None

    def _apply_producer_state(self, infos: Iterable[ProducerAppendInfo], completed: Iterable[CompletedTxn]) -> None:
        psm = self._psm
        for info in infos:
            psm.update(info)
        for txn in completed:
            # LSO is computed before completing the txn, with the txns this append opened.
            lso = psm.last_stable_offset(txn)
            if txn.is_aborted:
                self._txn_index.append(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso))
            psm.complete_txn(txn)
        psm.last_map_offset = self.log_end_offset
        self._update_first_unstable_offset()

    def _roll(self, new_base_offset: int) -> None:
        """Start a new segment; snapshot the producer state at its base offset."""
        self._segments.append(LogSegment(new_base_offset, len(self._batches)))
        self._psm.update_map_end_offset(new_base_offset)
        self._psm.take_snapshot()

    def roll(self) -> None:
        """Force a segment roll at the log end offset (handy for pictures and tests)."""
        self._ensure_online()
        if self._segments[-1].first_index < len(self._batches):
            self._roll(self.log_end_offset)

    # -- reads ----------------------------------------------------------------
    def _index_of_offset(self, offset: int) -> int:
        """Index of the first batch whose last offset is >= ``offset``."""
        i = bisect_right(self._base_offsets, offset) - 1
        if i < 0:
            return 0
        return i + 1 if self._batches[i].last_offset < offset else i

    def read(self, fetch_offset: int, max_offset: int, max_bytes: int = 1_048_576) -> list[RecordBatch]:
        """Whole batches from the one holding ``fetch_offset`` with base offset < ``max_offset``.

        At least one batch is returned when one qualifies, even if it exceeds ``max_bytes``.
        """
        self._online or self._ensure_online()
        if fetch_offset > self.log_end_offset or fetch_offset < self.log_start_offset:
            raise ProtocolError(Errors.OFFSET_OUT_OF_RANGE,
                                f"fetch offset {fetch_offset} is outside {self.topic_partition}'s log "
                                f"[{self.log_start_offset}, {self.log_end_offset}]")
        batches = self._batches
        result: list[RecordBatch] = []
        total = 0
        i, n = self._index_of_offset(fetch_offset), len(batches)
        while i < n:        # (not a range(): calling a class costs CPython 3.11 hundreds of instructions)
            batch = batches[i]
            if batch.base_offset >= max_offset:
                break
            size = batch._size or batch.size_in_bytes       # (known for every batch in the log: no call)
            if result and total + size > max_bytes:
                break
            result.append(batch)
            total += size
            i += 1
        return result

    def read_to_end(self, fetch_offset: int, max_bytes: int) -> tuple[RecordBatch, ...]:
        """``read(fetch_offset, LEO, max_bytes)`` as a tuple, what a follower is sent: to one a batch behind
        (replication's common case), the tuple its append kept (no search, and one tuple for every follower's answer,
        which the trace keeps)."""
        self._online or self._ensure_online()
        last = self._last_append
        if len(last) == 1 and last[0].base_offset == fetch_offset:     # (one batch: sent whatever max_bytes says)
            return last
        return tuple(self.read(fetch_offset, self.log_end_offset, max_bytes))

    def collect_aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[tuple[int, int]]:
        """(producer_id, first_offset) of aborted txns overlapping [fetch_offset, upper_bound)."""
        found = self._txn_index.collect_aborted_txns(fetch_offset, upper_bound)
        if "aborted-index-from-fetch-offset" in self.mutations:     # the bug: spans that began earlier are missed
            found = [t for t in found if t.first_offset >= fetch_offset]
        return [(t.producer_id, t.first_offset) for t in found]

    # -- high watermark and LSO ---------------------------------------------
    def update_high_watermark(self, hw: int) -> bool:
        """Set the HW, clamped to [log start, LEO]; returns whether it changed."""
        self._online or self._ensure_online()
        if hw < self.log_start_offset:
            hw = self.log_start_offset
        elif hw > self.log_end_offset:
            hw = self.log_end_offset
        changed = hw != self.high_watermark
        self.high_watermark = hw
        psm = self._psm
        if psm.unreplicated_txns:               # nothing to forget otherwise (the common case: no call)
            psm.on_high_watermark_updated(hw)
        if psm.unreplicated_txns or psm.ongoing_txns:
            self._update_first_unstable_offset()
        else:       # (what _update_first_unstable_offset does with no transaction open or unreplicated, no call)
            self.first_unstable_offset = None
            self.last_stable_offset = hw
        return changed

    def maybe_increment_high_watermark(self, hw: int) -> bool:
        """Advance the HW only forward (the leader's rule); a HW above the LEO is a bug."""
        self._ensure_online()
        if hw > self.log_end_offset:
            raise ValueError(f"high watermark {hw} would be above the log end offset "
                             f"{self.log_end_offset} of {self.topic_partition}")
        if hw > self.high_watermark:
            return self.update_high_watermark(hw)
        return False

    def checkpoint_high_watermark(self) -> None:
        """Write the replication-offset-checkpoint entry for this partition."""
        self._hw_checkpoint = self.high_watermark

    def _update_first_unstable_offset(self) -> None:
        psm = self._psm         # ProducerStateManager.first_unstable_offset, inlined (twice per append)
        if not psm.unreplicated_txns and not psm.ongoing_txns:     # no txn open or unreplicated: LSO = HW
            self.first_unstable_offset = None
            self.last_stable_offset = self.high_watermark
            return
        fuo = None      # the first key of each (a loop that breaks: next(iter(...), None) makes two calls)
        for fuo in psm.ongoing_txns:
            break
        for unreplicated in psm.unreplicated_txns:
            if fuo is None or unreplicated < fuo:
                fuo = unreplicated
            break
        if fuo is not None and fuo < self.log_start_offset:
            fuo = self.log_start_offset
        self.first_unstable_offset = fuo
        hw = self.high_watermark
        self.last_stable_offset = fuo if fuo is not None and fuo < hw else hw

    # -- leader epoch cache (KIP-101) -----------------------------------------
    def assign_epoch_start_offset(self, epoch: int, start_offset: int) -> None:
        self._epoch_cache.assign(epoch, start_offset)

    @property
    def latest_epoch(self) -> int | None:
        entries = self.epoch_entries      # LeaderEpochCache.latest_epoch, inlined
        return entries[-1].epoch if entries else None

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch for this replica: (epoch found, its end offset) or (-1, -1)."""
        found_epoch, end_offset = self._epoch_cache.end_offset_for(epoch, self.log_end_offset)
        return (UNDEFINED_EPOCH, end_offset) if end_offset == UNDEFINED_EPOCH_OFFSET else (found_epoch, end_offset)

    # -- producers --------------------------------------------------------------
    def remove_expired_producers(self, now: int) -> list[int]:
        """Forget producers idle for producer.id.expiration.ms; returns their ids."""
        self._ensure_online()
        return self._psm.remove_expired_producers(now)

    def describe_producers(self) -> list[ProducerDescription]:
        return [ProducerDescription(pid, e.producer_epoch, e.last_seq, e.last_timestamp, e.coordinator_epoch,
                                    -1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
                for pid, e in sorted(self._psm.producers.items())]

    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        entry = self._psm.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset is not None and entry.producer_epoch == producer_epoch

    def maybe_start_transaction_verification(self, producer_id: int, sequence: int, epoch: int, now: int,
                                             supports_epoch_bump: bool = False) -> VerificationGuard:
        """KIP-890: the guard a produce must carry; SENTINEL if the txn is already open here."""
        self._ensure_online()
        self._check_not_stale(producer_id, epoch)      # Kafka 4.1: a stale epoch is rejected before verifying
        if self.has_ongoing_transaction(producer_id, epoch):
            return VerificationGuard.SENTINEL
        return self._psm.maybe_create_verification_state_entry(
            producer_id, sequence, epoch, now, supports_epoch_bump).verification_guard

    def _check_not_stale(self, producer_id: int, epoch: int) -> None:
        """INVALID_PRODUCER_EPOCH if ``epoch`` is older than the producer's epoch here (Kafka 4.1 UnifiedLog)."""
        entry = self._psm.producers.get(producer_id)
        if entry is not None and epoch < entry.producer_epoch:
            raise ProtocolError(Errors.INVALID_PRODUCER_EPOCH, f"producer {producer_id} wrote with epoch {epoch} to "
                                f"{self.topic_partition}, but epoch {entry.producer_epoch} is already current there: "
                                f"a batch from an older epoch comes from a fenced (zombie) producer instance")

    def verification_guard(self, producer_id: int) -> VerificationGuard:
        entry = self._psm.verification_state_entry(producer_id)
        return entry.verification_guard if entry is not None else VerificationGuard.SENTINEL

    # -- truncation -------------------------------------------------------------
    def truncate_to(self, target_offset: int, now: int | None = None) -> bool:
        """Drop everything at or above ``target_offset`` (a target inside a batch drops that whole batch: the log
        then ends at its base); returns whether anything was dropped."""
        self._ensure_online()
        if target_offset < 0:
            raise ValueError(f"cannot truncate {self.topic_partition} to negative offset {target_offset}")
        if target_offset >= self.log_end_offset:
            # A leader may have assigned an epoch start at the LEO without appending.
            self._epoch_cache.truncate_from_end(self.log_end_offset)
            return False
        if self._segments[0].base_offset > target_offset:
            self.truncate_fully_and_start_at(target_offset)
            return True
        self._last_append = ()
        k = self._index_of_offset(target_offset)
        if k < len(self._batches):
            target_offset = min(target_offset, self._batches[k].base_offset)
        del self._batches[k:]
        del self._base_offsets[k:]
        self.log_end_offset = target_offset
        segs = self._segments
        while len(segs) > 1 and segs[-1].base_offset > target_offset:
            segs.pop()
        active = segs[-1]
        active.size_in_bytes = sum(b.size_in_bytes for b in islice(self._batches, active.first_index, None))
        self._epoch_cache.truncate_from_end(target_offset)
        self._txn_index.truncate_to(target_offset)
        self.log_start_offset = min(target_offset, self.log_start_offset)
        self._rebuild_producer_state(target_offset, now, rebuild_txn_index=False)
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self._psm.on_high_watermark_updated(self.high_watermark)
        self._update_first_unstable_offset()
        return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete the whole log and restart it empty at ``new_offset`` (log start = LEO = HW)."""
        self._ensure_online()
        self._last_append = ()
        self._batches.clear()
        self._base_offsets.clear()
        self._segments = [LogSegment(new_offset, 0)]
        self._epoch_cache.clear()
        self._txn_index.truncate_to(-1)
        self._psm.truncate_fully_and_start_at(new_offset)
        self.log_start_offset = self.log_end_offset = new_offset
        self.high_watermark = new_offset
        self._update_first_unstable_offset()

    # -- crash, shutdown, recovery ----------------------------------------------
    def crash(self) -> None:
        """Hard crash: lose every in-memory structure; keep what is on disk."""
        self._psm = ProducerStateManager(self.topic_partition, self._expiration_ms, self._snapshots)
        self.high_watermark = 0
        self.first_unstable_offset = None
        self.last_stable_offset = 0
        self._online = False

    def close(self) -> None:
        """Clean shutdown: snapshot the producer state at the LEO, checkpoint the HW, stop."""
        if self._online:
            self._psm.update_map_end_offset(self.log_end_offset)
            self._psm.take_snapshot()
            self.checkpoint_high_watermark()
        self.crash()

    def recover(self, now: int | None = None) -> None:
        """Log loading: newest snapshot <= LEO, replay the batches after it, HW from checkpoint.  ``now`` (if
        given) drops expired producers while loading the snapshot, as Kafka does."""
        self._psm = ProducerStateManager(self.topic_partition, self._expiration_ms, self._snapshots)
        self._rebuild_producer_state(self.log_end_offset, now, rebuild_txn_index=True)
        hw = min(max(self._hw_checkpoint, self.log_start_offset), self.log_end_offset)
        self._online = True
        self.high_watermark = hw
        self._psm.on_high_watermark_updated(hw)
        self._update_first_unstable_offset()

    def _rebuild_producer_state(self, last_offset: int, now: int | None, rebuild_txn_index: bool) -> None:
        psm = self._psm
        was_empty = psm.is_empty() and psm.map_end_offset >= last_offset
        psm.truncate_and_reload(self.log_start_offset, last_offset, now)
        if last_offset > psm.map_end_offset and not was_empty:
            start = max(psm.map_end_offset, self.log_start_offset)
            if rebuild_txn_index:
                self._txn_index.truncate_to(start)
            self._replay(start, last_offset, rebuild_txn_index)
        psm.update_map_end_offset(last_offset)
        psm.take_snapshot()

    def _replay(self, start: int, end: int, rebuild_txn_index: bool) -> None:
        """Re-apply batches to the producer state, one at a time (origin REPLICATION)."""
        psm = self._psm
        index = self._txn_index
        for batch in islice(self._batches, self._index_of_offset(start), None):
            if batch.base_offset >= end:
                break
            if batch.producer_id < 0:
                continue
            info = psm.prepare_update(batch.producer_id, _REPLICATION)
            txn = info.append(batch)
            psm.update(info)
            if txn is not None:
                if rebuild_txn_index and txn.is_aborted:
                    index.append(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset,
                                            psm.last_stable_offset(txn)))
                psm.complete_txn(txn)
