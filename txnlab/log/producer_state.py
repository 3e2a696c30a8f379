"""Kafka's ``ProducerStateManager`` and ``ProducerAppendInfo``.

Owns what a partition replica knows about each idempotent/transactional producer
(epoch, the last 5 batches for duplicate detection, the coordinator epoch of the
last marker, the open transaction's first offset), the open and not yet
replicated transactions that pin the last stable offset, the rules that accept or
reject an append (KAFKA-EOS §1.3, markers §2.7) and the producer snapshots.
"""
from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from txnlab.protocol.errors import Errors, ProtocolError

from .._mypyc import new as _new    # object.__new__ (compiled by mypyc: the class call)

from .producer_state_entry import (NUM_BATCHES_TO_RETAIN, BatchMetadata, CompletedTxn,  # noqa: F401
                                   ProducerStateEntry, TxnMetadata)
from ..protocol.record_batch import (INT32_MAX, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP,
                           ControlRecordType, RecordBatch, increment_sequence)
from .verification import VerificationGuard, VerificationStateEntry

TV_UNKNOWN = -1  # TransactionVersion.TV_UNKNOWN: "not said" (replicated markers)
LATE_TRANSACTION_BUFFER_MS = 5 * 60 * 1000


class AppendOrigin(Enum):
    """Who is appending: decides how much ``ProducerAppendInfo`` validates."""
    CLIENT = "CLIENT"            # a Produce request: epoch + sequence checks
    REPLICATION = "REPLICATION"  # a follower copying the leader, or recovery: no checks
    COORDINATOR = "COORDINATOR"  # markers and coordinator writes: epoch checks, no sequences


class SnapshotEntry(NamedTuple):
    """One producer in a snapshot: only its LAST batch survives (as in Kafka's file)."""
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int | None


class ProducerStateSnapshot(NamedTuple):
    """The content of ``<offset>.snapshot``: the producer table as of ``offset``."""
    offset: int
    entries: tuple[SnapshotEntry, ...]


# the members as module constants: an Enum's member read off its class (AppendOrigin.CLIENT) costs CPython 3.11 a few
# times a plain attribute, and the rules read them for every batch on every replica
_CLIENT, _REPLICATION = AppendOrigin.CLIENT, AppendOrigin.REPLICATION
_ABORT = ControlRecordType.ABORT


def _marker_name(batch: RecordBatch) -> str:
    ctype = batch.control_type
    return ctype.name if ctype is not None else "control"


class ProducerAppendInfo:
    """Validates the batches of one producer in one append, against its stored entry."""

    __slots__ = ("topic_partition", "producer_id", "current_entry", "origin",
                 "verification_state_entry", "transactions", "updated_entry")

    def __init__(self, topic_partition: str = "", producer_id: int = NO_PRODUCER_ID,
                 current_entry: ProducerStateEntry | None = None, origin: AppendOrigin = AppendOrigin.CLIENT,
                 verification_state_entry: VerificationStateEntry | None = None):
        if current_entry is None:
            current_entry = ProducerStateEntry(producer_id)     # (a producer new here)
        self.topic_partition = topic_partition
        self.producer_id = producer_id
        self.current_entry = current_entry
        self.origin = origin
        self.verification_state_entry = verification_state_entry
        self.transactions: list[TxnMetadata] = []
        self.updated_entry = current_entry.copy_without_batches()

    def append(self, batch: RecordBatch, origin: AppendOrigin | None = None,
               transaction_version: int = TV_UNKNOWN, check_sequence: bool = True) -> CompletedTxn | None:
        """Validate and record one batch; a marker returns the transaction it completes."""
        if origin is not None:
            self.origin = origin
        if batch.is_control:
            if not batch.record_count:  # emptied by the cleaner: the whole txn is gone
                return None
            return self.append_end_txn_marker(batch, None, transaction_version)
        self.append_data_batch(batch.producer_epoch, batch.base_sequence, batch.last_sequence,
                               batch.max_timestamp, batch.base_offset, batch.last_offset,
                               batch.is_transactional, check_sequence)
        return None

    def append_data_batch(self, epoch: int, first_seq: int, last_seq: int, last_timestamp: int,
                          first_offset: int, last_offset: int, is_transactional: bool,
                          check_sequence: bool = True) -> None:
        self._check_producer_epoch(epoch, first_offset, TV_UNKNOWN, None)
        if check_sequence and self.origin is _CLIENT:
            self._check_sequence(epoch, first_seq, first_offset)
        updated = self.updated_entry
        updated.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, last_timestamp)
        txn_first = updated.current_txn_first_offset
        if txn_first is not None and not is_transactional:
            raise self._plain_batch_in_open_txn(txn_first, first_offset)
        if txn_first is None and is_transactional:
            updated.current_txn_first_offset = first_offset
            txn: TxnMetadata = _new(TxnMetadata)    # TxnMetadata(pid, first_offset), without the class call
            txn.producer_id = self.producer_id
            txn.first_offset = first_offset
            txn.last_offset = None
            self.transactions.append(txn)

    def append_end_txn_marker(self, marker_batch: RecordBatch, coordinator_epoch: int | None = None,
                              transaction_version: int = 0,
                              origin: AppendOrigin | None = None) -> CompletedTxn | None:
        """Apply a COMMIT/ABORT marker; returns the completed txn, or None if none was open."""
        if origin is not None:
            self.origin = origin
        if coordinator_epoch is None:
            coordinator_epoch = marker_batch.coordinator_epoch
            if coordinator_epoch is None:
                coordinator_epoch = -1
        # Replicated markers carry no transaction version; the leader already checked them.
        tv = 0 if transaction_version == TV_UNKNOWN else transaction_version
        self._check_producer_epoch(marker_batch.producer_epoch, marker_batch.base_offset, tv, marker_batch)
        self._check_coordinator_epoch(coordinator_epoch, marker_batch)
        updated = self.updated_entry
        completed = None
        if updated.current_txn_first_offset is not None:
            # CompletedTxn(...), all four fields in order, as its own __new__ builds it (without the class call)
            completed = tuple.__new__(CompletedTxn, (self.producer_id, updated.current_txn_first_offset,
                                                     marker_batch.base_offset,
                                                     marker_batch.control_type == _ABORT))
        updated.update_after_marker(marker_batch.producer_epoch, coordinator_epoch,
                                    marker_batch.max_timestamp)
        return completed

    def validate(self, batch: RecordBatch, transaction_version: int = TV_UNKNOWN, check_sequence: bool = True) -> None:
        """Raise what ``append`` would of this one batch, changing nothing: for an info whose updated entry is the
        stored one (``ProducerStateManager.prepare_in_place_update``), applied once the batch is written."""
        if batch.is_control:
            if batch.record_count:      # (an emptied control batch is not checked: see append)
                tv = 0 if transaction_version == TV_UNKNOWN else transaction_version
                self._check_producer_epoch(batch.producer_epoch, batch.base_offset, tv, batch)
                coordinator_epoch = batch.coordinator_epoch
                self._check_coordinator_epoch(-1 if coordinator_epoch is None else coordinator_epoch, batch)
            return
        epoch, first_offset = batch.producer_epoch, batch.base_offset
        self._check_producer_epoch(epoch, first_offset, TV_UNKNOWN, None)
        if check_sequence and self.origin is _CLIENT:
            self._check_sequence(epoch, batch.base_sequence, first_offset)
        txn_first = self.updated_entry.current_txn_first_offset
        if txn_first is not None and not batch.is_transactional:
            raise self._plain_batch_in_open_txn(txn_first, first_offset)

    # -- the rules ------------------------------------------------------------
    def _plain_batch_in_open_txn(self, txn_first: int, first_offset: int) -> ProtocolError:
        return ProtocolError(
            Errors.INVALID_TXN_STATE,
            f"producer {self.producer_id} has a transaction open on {self.topic_partition} since "
            f"offset {txn_first}, so it may not write a non-transactional batch (offset "
            f"{first_offset}) before that transaction is committed or aborted")

    def _check_producer_epoch(self, epoch: int, offset: int, transaction_version: int,
                              marker: RecordBatch | None) -> None:
        current = self.updated_entry.producer_epoch
        strict = transaction_version >= 2
        if (epoch <= current) if strict else (epoch < current):
            if strict and epoch == current and self.updated_entry.current_txn_first_offset is None:
                return  # KAFKA-19999: a retried TV2 marker for a transaction that already ended
            if self.origin is _REPLICATION:
                return  # Kafka only logs: the leader accepted it, the follower must copy it
            tp = self.topic_partition
            if marker is None:
                message = (f"producer {self.producer_id} wrote with epoch {epoch} to {tp}, but epoch "
                           f"{current} is already current there: a batch from an older epoch comes "
                           f"from a fenced (zombie) producer instance")
            elif strict:
                message = (f"{_marker_name(marker)} marker for producer {self.producer_id} carries epoch "
                           f"{epoch}, but with transaction version 2 the coordinator bumps the epoch "
                           f"before writing markers, so it must be greater than the current epoch "
                           f"{current} on {tp}: this is a late or duplicate marker")
            else:
                message = (f"{_marker_name(marker)} marker for producer {self.producer_id} carries epoch "
                           f"{epoch}, which is older than the epoch {current} already seen on {tp}")
            raise ProtocolError(Errors.INVALID_PRODUCER_EPOCH, message)

    def _check_coordinator_epoch(self, coordinator_epoch: int, marker: RecordBatch) -> None:
        current = self.updated_entry.coordinator_epoch
        if current > coordinator_epoch and self.origin is not _REPLICATION:
            raise ProtocolError(
                Errors.TRANSACTION_COORDINATOR_FENCED,
                f"{_marker_name(marker)} marker for producer {self.producer_id} on "
                f"{self.topic_partition} comes from coordinator epoch {coordinator_epoch}, but "
                f"coordinator epoch {current} has already written a marker for this producer: "
                f"the sender is a zombie coordinator")

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        pid, tp = self.producer_id, self.topic_partition
        vse = self.verification_state_entry
        if vse is not None:
            if vse.supports_epoch_bump and first_seq != 0 and self.current_entry.is_empty():
                raise ProtocolError(
                    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {pid} has no state on {tp} and uses transactions v2, so its first "
                    f"batch must start at sequence 0, but it starts at {first_seq}")
            if first_seq > vse.lowest_sequence:
                raise ProtocolError(
                    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"sequence {first_seq} from producer {pid} on {tp} is higher than "
                    f"{vse.lowest_sequence}, the lowest sequence seen while its transaction was "
                    f"being verified: an earlier batch has not been written yet")
        updated = self.updated_entry
        if epoch != updated.producer_epoch:
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise ProtocolError(
                    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {pid} moved to epoch {epoch} on {tp} (epoch {updated.producer_epoch} "
                    f"was current); the first batch of a new epoch must start at sequence 0, but "
                    f"it starts at {first_seq}")
            return
        if updated.batch_metadata:
            current_last = updated.batch_metadata[-1].last_seq      # (updated.last_seq, without the property)
        elif epoch == self.current_entry.producer_epoch:
            current_last = self.current_entry.last_seq
        else:
            current_last = NO_SEQUENCE
        if self.current_entry.producer_epoch == NO_PRODUCER_EPOCH:
            return  # state lost (expired, deleted) or new producer: any sequence is accepted
        if first_seq == current_last + 1 or (first_seq == 0 and current_last == INT32_MAX):
            return
        expected = increment_sequence(current_last, 1) if current_last != NO_SEQUENCE else 0
        if current_last == NO_SEQUENCE:
            why = "the broker has no batch of this epoch cached, so the epoch must start at 0"
        elif 0 <= first_seq <= current_last:
            why = ("it is not one of the last 5 batches the broker remembers, so a retry of it "
                   "cannot be recognised as a duplicate")
        else:
            why = "a gap: an earlier batch is missing"
        raise ProtocolError(
            Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
            f"expected sequence {expected} from producer {pid} epoch {epoch} on {tp} but got "
            f"{first_seq} ({why})")

    # -- results --------------------------------------------------------------
    def to_entry(self) -> ProducerStateEntry:
        return self.updated_entry

    @property
    def started_transactions(self) -> list[TxnMetadata]:
        return self.transactions

    def __repr__(self) -> str:
        return f"ProducerAppendInfo({self.updated_entry.describe()}, started={self.transactions})"


def _insert_sorted(txns: dict[int, TxnMetadata], first_offset: int, txn: TxnMetadata) -> None:
    """Keep a dict ordered by first offset (Kafka uses a TreeMap); appends are nearly sorted."""
    if txns and first_offset < next(reversed(txns)):
        txns[first_offset] = txn
        ordered = sorted(txns.items())
        txns.clear()
        txns.update(ordered)
    else:
        txns[first_offset] = txn


class ProducerStateManager:
    """The producer table of one partition replica, its open transactions and snapshots.

    ``snapshots`` stands for the snapshot files in the log directory: it survives a
    broker crash (the log hands the same dict to the manager it rebuilds).
    """

    __slots__ = ("topic_partition", "producer_id_expiration_ms", "producers", "ongoing_txns",
                 "unreplicated_txns", "verification_states", "snapshots", "last_map_offset",
                 "last_snap_offset", "_next_guard_id")

    def __init__(self, topic_partition: str, producer_id_expiration_ms: int = 86_400_000,
                 snapshots: dict[int, ProducerStateSnapshot] | None = None):
        self.topic_partition = topic_partition
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing_txns: dict[int, TxnMetadata] = {}       # first offset -> txn, sorted
        self.unreplicated_txns: dict[int, TxnMetadata] = {}  # completed, marker not below HW yet
        self.verification_states: dict[int, VerificationStateEntry] = {}
        self.snapshots: dict[int, ProducerStateSnapshot] = {} if snapshots is None else snapshots
        self.last_map_offset = 0
        self.last_snap_offset = 0
        self._next_guard_id = 1

    # -- appends --------------------------------------------------------------
    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> ProducerAppendInfo:
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = ProducerStateEntry(producer_id)
        # ProducerAppendInfo(tp, pid, entry, origin, verification state), without the class call (which costs CPython
        # 3.11 hundreds of instructions more; every append of a producer's batches, on every replica, makes one)
        info: ProducerAppendInfo = _new(ProducerAppendInfo)
        info.topic_partition = self.topic_partition
        info.producer_id = producer_id
        info.current_entry = entry
        info.origin = origin
        info.verification_state_entry = self.verification_states.get(producer_id)
        info.transactions = []
        info.updated_entry = entry.copy_without_batches()
        return info

    def prepare_in_place_update(self, entry: ProducerStateEntry, origin: AppendOrigin) -> ProducerAppendInfo:
        """``prepare_update`` for one batch of a stored ``entry``: the info's updated entry is the entry itself, so
        the info only ``validate``s the batch (nothing to copy, then fold back); ``append_in_place`` applies it."""
        info: ProducerAppendInfo = _new(ProducerAppendInfo)
        info.topic_partition = self.topic_partition
        info.producer_id = entry.producer_id
        info.current_entry = info.updated_entry = entry
        info.origin = origin
        info.verification_state_entry = self.verification_states.get(entry.producer_id)
        info.transactions = []
        return info

    def update(self, append_info: ProducerAppendInfo) -> None:
        producer_id = append_info.producer_id
        if producer_id == NO_PRODUCER_ID:
            raise ValueError(f"invalid producer id {producer_id} passed to update")
        updated = append_info.updated_entry
        current = self.producers.get(producer_id)
        if current is not None:
            current.update(updated)
        else:
            self.producers[producer_id] = updated
        for txn in append_info.transactions:
            _insert_sorted(self.ongoing_txns, txn.first_offset, txn)

    def append_in_place(self, entry: ProducerStateEntry, batch: RecordBatch) -> CompletedTxn | None:
        """What ``prepare_update`` + ``append`` + ``update`` do with one batch of a stored ``entry``, done to the entry
        itself: the caller has checked the batch (``validate``, or no rule rejects it) and written it, so there is
        nothing to roll back.  A marker returns the transaction it completes (for the caller to complete)."""
        producer_id = batch.producer_id
        if batch.is_transactional:
            self.verification_states.pop(producer_id, None)
        # batch.max_timestamp from its field when known: a property costs CPython 3.11 a C call that runs the getter in
        # a new interpreter loop (~2,000 instructions), and this runs for every batch on every replica
        timestamp = batch._max_ts
        if timestamp is None or batch.log_append_time != NO_TIMESTAMP:
            timestamp = batch.max_timestamp
        if batch.is_control:
            first = entry.current_txn_first_offset
            coordinator_epoch = batch.coordinator_epoch
            entry.update_after_marker(batch.producer_epoch, -1 if coordinator_epoch is None else coordinator_epoch,
                                      timestamp)
            if first is None:
                return None
            # CompletedTxn(...), all four fields in order, as its own __new__ builds it (without the class call)
            return tuple.__new__(CompletedTxn, (producer_id, first, batch.base_offset,
                                                batch.control_type == _ABORT))
        first_offset = batch.base_offset
        offset_delta = batch.last_offset - first_offset
        base_sequence = batch.base_sequence     # batch.last_sequence, without the property when it does not wrap
        last_sequence = base_sequence + offset_delta if 0 <= base_sequence <= INT32_MAX - offset_delta \
            else batch.last_sequence
        entry.add_batch(batch.producer_epoch, last_sequence, batch.last_offset, offset_delta, timestamp)
        if batch.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = first_offset
            txn: TxnMetadata = _new(TxnMetadata)    # TxnMetadata(pid, first_offset), without the class call
            txn.producer_id = producer_id
            txn.first_offset = first_offset
            txn.last_offset = None
            # (no _insert_sorted: the batch is the log's newest, so its txn starts after every txn open here)
            self.ongoing_txns[first_offset] = txn
        return None

    def update_map_end_offset(self, offset: int) -> None:
        self.last_map_offset = offset

    @property
    def map_end_offset(self) -> int:
        return self.last_map_offset

    def is_empty(self) -> bool:
        return not self.producers and not self.unreplicated_txns

    # -- transactions and the LSO -------------------------------------------
    def first_unstable_offset(self) -> int | None:
        """Earliest first offset of a txn that is open, or decided but not yet below the HW."""
        unreplicated = next(iter(self.unreplicated_txns), None)
        undecided = next(iter(self.ongoing_txns), None)
        if unreplicated is None:
            return undecided
        if undecided is None:
            return unreplicated
        return min(undecided, unreplicated)

    def first_undecided_offset(self) -> int | None:
        return next(iter(self.ongoing_txns), None)

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        self._remove_unreplicated_transactions(high_watermark)

    def _remove_unreplicated_transactions(self, offset: int) -> None:
        txns = self.unreplicated_txns
        if not txns:
            return
        done = []       # (a loop, not a list comprehension: CPython 3.11 calls one as a function; 5 times a txn)
        for first, txn in txns.items():
            if txn.last_offset is not None and txn.last_offset < offset:
                done.append(first)
        for first in done:
            del txns[first]

    def last_stable_offset(self, completed_txn: CompletedTxn) -> int:
        """LSO to store with an aborted txn: the earliest OTHER open txn, else marker + 1."""
        for txn in self.ongoing_txns.values():
            if txn.producer_id != completed_txn.producer_id:
                return txn.first_offset
        return completed_txn.last_offset + 1

    def complete_txn(self, completed_txn: CompletedTxn) -> None:
        txn = self.ongoing_txns.pop(completed_txn.first_offset, None)
        if txn is None:
            raise ValueError(f"attempted to complete transaction {completed_txn} on "
                             f"{self.topic_partition} which was not started")
        txn.last_offset = completed_txn.last_offset
        _insert_sorted(self.unreplicated_txns, completed_txn.first_offset, txn)

    def has_late_transaction(self, now: int, max_transaction_timeout_ms: int = 900_000) -> bool:
        """The oldest open txn's producer has been silent past the timeout + 5 minutes."""
        first = next(iter(self.ongoing_txns.values()), None)
        if first is None:
            return False
        entry = self.producers.get(first.producer_id)
        last = entry.last_timestamp if entry is not None else -1
        return last > 0 and now - last > max_transaction_timeout_ms + LATE_TRANSACTION_BUFFER_MS

    # -- expiration -----------------------------------------------------------
    def is_producer_expired(self, now: int, entry: ProducerStateEntry | SnapshotEntry) -> bool:
        return entry.current_txn_first_offset is None and \
            now - (entry.last_timestamp if isinstance(entry, ProducerStateEntry) else entry.timestamp) \
            >= self.producer_id_expiration_ms

    def remove_expired_producers(self, now: int) -> list[int]:
        """Forget producers idle for producer.id.expiration.ms (never one with an open txn)."""
        expired = [pid for pid, entry in self.producers.items() if self.is_producer_expired(now, entry)]
        for pid in expired:
            del self.producers[pid]
        stale = [pid for pid, v in self.verification_states.items()
                 if now - v.timestamp >= self.producer_id_expiration_ms]
        for pid in stale:
            del self.verification_states[pid]
        return expired

    # -- KIP-890 verification -------------------------------------------------
    def maybe_create_verification_state_entry(self, producer_id: int, sequence: int, epoch: int,
                                              now: int, supports_epoch_bump: bool = False
                                              ) -> VerificationStateEntry:
        entry = self.verification_states.get(producer_id)
        if entry is None:
            guard = VerificationGuard(self._next_guard_id)
            self._next_guard_id += 1
            entry = VerificationStateEntry(now, guard, sequence, epoch, supports_epoch_bump)
            self.verification_states[producer_id] = entry
        entry.maybe_update_lowest_sequence_and_epoch(sequence, epoch)
        return entry

    def verification_state_entry(self, producer_id: int) -> VerificationStateEntry | None:
        return self.verification_states.get(producer_id)

    def clear_verification_state_entry(self, producer_id: int) -> None:
        self.verification_states.pop(producer_id, None)

    # -- snapshots, truncation, recovery --------------------------------------
    def _snapshot_entries(self) -> tuple[SnapshotEntry, ...]:
        return tuple(
            SnapshotEntry(pid, e.producer_epoch, e.last_seq, e.last_data_offset, e.last_offset_delta,
                          e.last_timestamp, e.coordinator_epoch, e.current_txn_first_offset)
            for pid, e in sorted(self.producers.items()))

    def take_snapshot(self, offset: int | None = None) -> ProducerStateSnapshot | None:
        """Write ``<offset>.snapshot`` (default: the map end offset) if it is a new offset.

        Returns the snapshot at that offset, or None when nothing was written and no
        snapshot exists there (e.g. an empty log).
        """
        if offset is not None:
            self.last_map_offset = offset
        if self.last_map_offset > self.last_snap_offset:
            snapshot = ProducerStateSnapshot(self.last_map_offset, self._snapshot_entries())
            self.snapshots[snapshot.offset] = snapshot
            self.last_snap_offset = self.last_map_offset
            return snapshot
        return self.snapshots.get(self.last_map_offset)

    def load_snapshot(self, snapshot: ProducerStateSnapshot, now: int | None = None) -> None:
        """Replace the producer table with a snapshot's (dropping expired producers if ``now``)."""
        self._clear()
        for e in snapshot.entries:
            if now is not None and self.is_producer_expired(now, e):
                continue
            batches = (BatchMetadata(e.last_sequence, e.last_offset, e.offset_delta, e.timestamp),) \
                if e.last_offset >= 0 else ()
            self.load_producer_entry(ProducerStateEntry(
                e.producer_id, e.producer_epoch, e.coordinator_epoch, e.timestamp,
                e.current_txn_first_offset, batches))
        self.last_snap_offset = self.last_map_offset = snapshot.offset

    def load_producer_entry(self, entry: ProducerStateEntry) -> None:
        self.producers[entry.producer_id] = entry
        if entry.current_txn_first_offset is not None:
            _insert_sorted(self.ongoing_txns, entry.current_txn_first_offset,
                           TxnMetadata(entry.producer_id, entry.current_txn_first_offset))

    def _clear(self) -> None:
        self.producers.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()

    def latest_snapshot_offset(self) -> int | None:
        return max(self.snapshots) if self.snapshots else None

    @property
    def snapshot_offsets(self) -> list[int]:
        return sorted(self.snapshots)

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int,
                            now: int | None = None) -> None:
        """Drop out-of-range snapshots; unless already at ``log_end_offset``, reload the newest."""
        for offset in [o for o in self.snapshots if o > log_end_offset or o <= log_start_offset]:
            del self.snapshots[offset]
        if log_end_offset != self.last_map_offset:
            # Truncation targets are at or below the HW, so unreplicated txns can be forgotten.
            self._clear()
            latest = self.latest_snapshot_offset()
            if latest is not None:
                self.load_snapshot(self.snapshots[latest], now)
            else:
                self.last_snap_offset = self.last_map_offset = log_start_offset
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        self._remove_unreplicated_transactions(log_start_offset)
        if self.last_map_offset < log_start_offset:
            self.last_map_offset = log_start_offset
        latest = self.latest_snapshot_offset()
        self.last_snap_offset = latest if latest is not None else log_start_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._clear()
        self.snapshots.clear()
        self.last_snap_offset = 0
        self.last_map_offset = offset

    def delete_snapshots_before(self, offset: int) -> None:
        for o in [o for o in self.snapshots if o < offset]:
            del self.snapshots[o]

    def __repr__(self) -> str:
        return (f"ProducerStateManager({self.topic_partition}, producers={len(self.producers)}, "
                f"ongoing={list(self.ongoing_txns)}, unreplicated={list(self.unreplicated_txns)})")
