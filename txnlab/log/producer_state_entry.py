"""Kafka's ``ProducerStateEntry`` and ``BatchMetadata`` (plus ``TxnMetadata``, ``CompletedTxn``).

Owns what one partition replica remembers about one producer id: its epoch, the
coordinator epoch of its last marker, its open transaction's first offset, and the
last 5 batches it wrote (the window in which a retried batch is recognised as a
duplicate). ``ProducerStateManager`` (producer_state.py) keeps one entry per producer.
"""
from __future__ import annotations

from collections import deque
from typing import Iterable, NamedTuple

from .._mypyc import new as _new    # object.__new__ (compiled by mypyc: the class call)
from ..protocol.record_batch import NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_TIMESTAMP, RecordBatch, decrement_sequence

NUM_BATCHES_TO_RETAIN = 5


class BatchMetadata:
    """What a replica remembers of one appended batch (for duplicate detection)."""

    __slots__ = ("last_seq", "last_offset", "offset_delta", "timestamp")

    def __init__(self, last_seq: int = NO_SEQUENCE, last_offset: int = -1, offset_delta: int = 0,
                 timestamp: int = NO_TIMESTAMP):
        self.last_seq = last_seq
        self.last_offset = last_offset
        self.offset_delta = offset_delta
        self.timestamp = timestamp

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BatchMetadata):
            return NotImplemented
        return (self.last_seq, self.last_offset, self.offset_delta, self.timestamp) == \
            (other.last_seq, other.last_offset, other.offset_delta, other.timestamp)

    def __repr__(self) -> str:
        return (f"BatchMetadata(seq {self.first_seq}..{self.last_seq}, "
                f"offsets {self.first_offset}..{self.last_offset})")


class ProducerStateEntry:
    """The state of one producer id on one partition."""

    __slots__ = ("producer_id", "producer_epoch", "coordinator_epoch", "last_timestamp",
                 "current_txn_first_offset", "batch_metadata")

    def __init__(self, producer_id: int, producer_epoch: int = NO_PRODUCER_EPOCH,
                 coordinator_epoch: int = -1, last_timestamp: int = NO_TIMESTAMP,
                 current_txn_first_offset: int | None = None,
                 batch_metadata: Iterable[BatchMetadata] = ()):
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset
        self.batch_metadata: deque[BatchMetadata] = deque(batch_metadata, NUM_BATCHES_TO_RETAIN)

    @property
    def first_seq(self) -> int:
        return self.batch_metadata[0].first_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        return self.batch_metadata[0].first_offset if self.batch_metadata else -1

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batch_metadata[-1].offset_delta if self.batch_metadata else 0

    def is_empty(self) -> bool:
        return not self.batch_metadata

    def maybe_update_producer_epoch(self, producer_epoch: int) -> bool:
        """A new epoch forgets the cached batches: sequences restart with the epoch."""
        if self.producer_epoch != producer_epoch:
            self.batch_metadata.clear()
            self.producer_epoch = producer_epoch
            return True
        return False

    def add_batch(self, producer_epoch: int, last_seq: int, last_offset: int,
                  offset_delta: int, timestamp: int) -> None:
        if self.producer_epoch != producer_epoch:     # maybe_update_producer_epoch, inlined (once per batch)
            self.batch_metadata.clear()
            self.producer_epoch = producer_epoch
        b: BatchMetadata = _new(BatchMetadata)    # BatchMetadata(last_seq, ...), without the class call
        b.last_seq = last_seq
        b.last_offset = last_offset
        b.offset_delta = offset_delta
        b.timestamp = timestamp
        self.batch_metadata.append(b)
        self.last_timestamp = timestamp

    def update(self, next_entry: "ProducerStateEntry") -> None:
        """Fold the result of a validated append into this (stored) entry."""
        self.maybe_update_producer_epoch(next_entry.producer_epoch)
        self.batch_metadata.extend(next_entry.batch_metadata)
        self.coordinator_epoch = next_entry.coordinator_epoch
        self.current_txn_first_offset = next_entry.current_txn_first_offset
        self.last_timestamp = next_entry.last_timestamp

    def update_after_marker(self, producer_epoch: int, coordinator_epoch: int, timestamp: int) -> None:
        """``update(epoch, coordinatorEpoch, timestamp)``: a marker ends the open transaction."""
        if self.producer_epoch != producer_epoch:     # maybe_update_producer_epoch, inlined (once per marker)
            self.batch_metadata.clear()
            self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = None
        self.last_timestamp = timestamp

    def find_duplicate_batch(self, batch: RecordBatch) -> BatchMetadata | None:
        """The cached batch with exactly this epoch and sequence range, if any."""
        if batch.producer_epoch != self.producer_epoch:
            return None
        return self.batch_with_sequence_range(batch.base_sequence, batch.last_sequence)

    def batch_with_sequence_range(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        for metadata in self.batch_metadata:
            if metadata.last_seq == last_seq and metadata.first_seq == first_seq:
                return metadata
        return None

    def copy_without_batches(self) -> "ProducerStateEntry":
        # ProducerStateEntry(pid, epoch, coordinator epoch, timestamp, txn first offset) without the class call,
        # which costs CPython 3.11 ~1,200 instructions more (once per producer per append)
        e: ProducerStateEntry = object.__new__(ProducerStateEntry)
        e.producer_id = self.producer_id
        e.producer_epoch = self.producer_epoch
        e.coordinator_epoch = self.coordinator_epoch
        e.last_timestamp = self.last_timestamp
        e.current_txn_first_offset = self.current_txn_first_offset
        e.batch_metadata = deque((), NUM_BATCHES_TO_RETAIN)
        return e

    def describe(self) -> str:
        txn = "none" if self.current_txn_first_offset is None else f"open since {self.current_txn_first_offset}"
        return (f"producer {self.producer_id} epoch={self.producer_epoch} seq={self.first_seq}..{self.last_seq} "
                f"batches={len(self.batch_metadata)} coordinatorEpoch={self.coordinator_epoch} txn {txn}")

    __repr__ = describe


class TxnMetadata:
    """An open (or completed but not yet replicated) transaction on this partition."""

    __slots__ = ("producer_id", "first_offset", "last_offset")

    def __init__(self, producer_id: int = -1, first_offset: int = -1, last_offset: int | None = None):
        self.producer_id = producer_id
        self.first_offset = first_offset
        self.last_offset = last_offset

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TxnMetadata):
            return NotImplemented
        return (self.producer_id, self.first_offset, self.last_offset) == \
            (other.producer_id, other.first_offset, other.last_offset)

    def __repr__(self) -> str:
        return f"TxnMetadata(pid={self.producer_id}, first={self.first_offset}, last={self.last_offset})"


class CompletedTxn(NamedTuple):
    """A transaction ended by a marker: ``last_offset`` is the marker's offset."""
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool
