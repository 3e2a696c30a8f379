"""Kafka's record batch, magic v2 (``DefaultRecordBatch``) and control records.

Owns the batch header fields that exactly-once depends on (producerId,
producerEpoch, baseSequence, the isTransactional / isControl attributes,
baseOffset, partitionLeaderEpoch) and the COMMIT/ABORT control batch that a
transaction marker is (``EndTransactionMarker``). Records are plain tuples; no
bytes are encoded except the 4-byte key and 6-byte value of a control record.

A batch is treated as immutable once built: the log hands the same object to
followers and consumers, so "changing" one means ``with_base_offset`` /
``with_sequence``, which make a cheap copy that shares the records.
"""
from __future__ import annotations

import struct
from enum import IntEnum
from operator import itemgetter
from typing import NamedTuple, Sequence

from .._mypyc import new as _new    # object.__new__ (compiled by mypyc: the class call)

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

# The fixed size of a v2 batch header (DefaultRecordBatch.RECORD_BATCH_OVERHEAD).
RECORD_BATCH_OVERHEAD = 61
# Rough per-record framing (length, attributes, deltas, key/value lengths, header count).
RECORD_OVERHEAD_ESTIMATE = 10
INT32_MAX = 2**31 - 1

_CONTROL_KEY = struct.Struct(">hh")    # version, type
_CONTROL_VALUE = struct.Struct(">hi")  # version, coordinatorEpoch
_TIMESTAMP = itemgetter(3)


class Record(NamedTuple):
    """One record of a batch (key, value, headers, CreateTime timestamp in ms)."""
    key: bytes | None
    value: bytes | None
    headers: tuple = ()
    timestamp: int = 0


_make_record = Record._make


class ControlRecordType(IntEnum):
    """Type id carried in the key of a control record (``ControlRecordType``)."""
    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1


_CONTROL_TYPES = {int(t): t for t in ControlRecordType}     # type id -> member (RecordBatch.control_type)
_UNKNOWN = ControlRecordType.UNKNOWN      # (a member read through its enum class costs ~60 ns)


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: sequences wrap from 2**31-1 to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``DefaultRecordBatch.decrementSequence``, the inverse of ``increment_sequence``."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def _estimate_size(records: Sequence[Record]) -> int:
    size = RECORD_BATCH_OVERHEAD + RECORD_OVERHEAD_ESTIMATE * len(records)
    for key, value, headers, _ in records:
        if key:
            size += len(key)
        if value:
            size += len(value)
        for header in headers:
            size += len(header[0]) + len(header[1] or b"")
    return size


def _decode_control(rows: Sequence) -> tuple:
    """(control type, coordinator epoch) of a control batch's first record (a ``Record`` or a raw row: key, value
    first): (None, None) for an emptied control batch; UNKNOWN for a key too short to hold a type, None for a value
    too short to hold an epoch."""
    if not rows:
        return None, None
    key, value = rows[0][0], rows[0][1]
    # the members by value (not ControlRecordType(type_id): calling the enum class costs more)
    ctype = _UNKNOWN if key is None or len(key) < 4 else _CONTROL_TYPES.get(_CONTROL_KEY.unpack_from(key)[1], _UNKNOWN)
    epoch = None if value is None or len(value) < 6 else _CONTROL_VALUE.unpack_from(value)[1]
    return ctype, epoch


class RecordBatch:
    """A v2 record batch: header fields plus its records.

    ``base_offset`` is -1 until the partition leader assigns offsets; records get
    the consecutive offsets ``base_offset .. last_offset``. A batch whose
    ``log_append_time`` is set uses the LogAppendTime timestamp type: every record
    then reads as having that timestamp, as in Kafka.
    """

    __slots__ = ("base_offset", "partition_leader_epoch", "producer_id", "producer_epoch",
                 "base_sequence", "is_transactional", "is_control", "_rows", "_raw",
                 "log_append_time", "_size", "_max_ts", "record_count", "last_offset", "next_offset",
                 "control_type", "coordinator_epoch")

    def __init__(self, records: Sequence[Record] = (), producer_id: int = NO_PRODUCER_ID,
                 producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
                 is_transactional: bool = False, is_control: bool = False,
                 base_offset: int = -1, partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
                 *, log_append_time: int = NO_TIMESTAMP, size_in_bytes: int | None = None,
                 max_timestamp: int | None = None, raw: bool = False):
        # ``raw``: the rows are plain (key, value, headers, timestamp) tuples, turned into ``Record``s
        # only when somebody reads ``records`` -- as Kafka decodes a batch's records only when read.
        self._rows = records
        self._raw = raw
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.log_append_time = log_append_time
        self._size = size_in_bytes
        self._max_ts = max_timestamp
        # the offsets a batch spans are fields (set where base_offset is): the log reads them on every
        # append and every fetch, and a property is a Python call each time
        self.record_count = len(records)
        self.next_offset = base_offset + self.record_count
        self.last_offset = self.next_offset - 1
        # a control record's key and value decoded once, here: every replica's producer state and every reader
        # asks a marker for them (fields, not properties: a property is a Python call each time)
        if is_control:
            self.control_type, self.coordinator_epoch = _decode_control(records)
        else:
            self.control_type = self.coordinator_epoch = None

    @property
    def records(self) -> Sequence[Record]:
        if self._raw:
            self._rows = tuple(map(_make_record, self._rows))
            self._raw = False
        return self._rows

    # -- derived header fields ------------------------------------------------
    # (record_count, last_offset = base_offset + record_count - 1 and next_offset = last_offset + 1 are
    # fields, set with base_offset)
    @property
    def last_offset_delta(self) -> int:
        return len(self._rows) - 1

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, len(self._rows) - 1)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def base_timestamp(self) -> int:
        if self.log_append_time != NO_TIMESTAMP:
            return self.log_append_time
        return self.records[0].timestamp if self.records else NO_TIMESTAMP

    @property
    def max_timestamp(self) -> int:
        if self.log_append_time != NO_TIMESTAMP:
            return self.log_append_time
        ts = self._max_ts
        if ts is None:
            ts = max(map(_TIMESTAMP, self._rows)) if self._rows else NO_TIMESTAMP
            self._max_ts = ts
        return ts

    @property
    def size_in_bytes(self) -> int:
        size = self._size
        if size is None:
            size = self._size = _estimate_size(self._rows)
        return size

    # -- control records ------------------------------------------------------
    @classmethod
    def control(cls, control_type: ControlRecordType, producer_id: int, producer_epoch: int,
                coordinator_epoch: int, timestamp: int) -> "RecordBatch":
        """An end-transaction marker: one control record in a transactional control batch."""
        key = _CONTROL_KEY.pack(0, int(control_type))
        value = _CONTROL_VALUE.pack(0, coordinator_epoch)
        return cls((Record(key, value, (), timestamp),), producer_id, producer_epoch, NO_SEQUENCE,
                   is_transactional=True, is_control=True,
                   size_in_bytes=RECORD_BATCH_OVERHEAD + RECORD_OVERHEAD_ESTIMATE + 10,
                   max_timestamp=timestamp)

    # (control_type -- COMMIT / ABORT for a marker, None for a data batch or an emptied control batch -- and
    # coordinator_epoch are fields, decoded from the control record when the batch is built: _decode_control)

    # -- copies ---------------------------------------------------------------
    def _copy(self) -> "RecordBatch":
        new: RecordBatch = _new(RecordBatch)
        new._rows = self._rows
        new._raw = self._raw
        new.producer_id = self.producer_id
        new.producer_epoch = self.producer_epoch
        new.base_sequence = self.base_sequence
        new.is_transactional = self.is_transactional
        new.is_control = self.is_control
        new.base_offset = self.base_offset
        new.partition_leader_epoch = self.partition_leader_epoch
        new.log_append_time = self.log_append_time
        new._size = self._size
        new._max_ts = self._max_ts
        new.record_count = self.record_count
        new.last_offset = self.last_offset
        new.next_offset = self.next_offset
        new.control_type = self.control_type
        new.coordinator_epoch = self.coordinator_epoch
        return new

    def with_base_offset(self, offset: int, partition_leader_epoch: int | None = None,
                         log_append_time: int | None = None) -> "RecordBatch":
        """A copy placed at ``offset`` (records shared), as the leader's LogValidator does."""
        new = self._copy()
        new.base_offset = offset
        new.next_offset = offset + new.record_count
        new.last_offset = new.next_offset - 1
        if partition_leader_epoch is not None:
            new.partition_leader_epoch = partition_leader_epoch
        if log_append_time is not None:
            new.log_append_time = log_append_time
        return new

    def with_sequence(self, producer_id: int, producer_epoch: int, base_sequence: int,
                      is_transactional: bool) -> "RecordBatch":
        """A copy with new producer fields (the producer stamps them at drain time)."""
        new = self._copy()
        new.producer_id = producer_id
        new.producer_epoch = producer_epoch
        new.base_sequence = base_sequence
        new.is_transactional = is_transactional
        return new

    # -- text and equality ----------------------------------------------------
    def describe(self) -> str:
        if self.is_control:
            ctype = self.control_type
            name = ctype.name if ctype is not None else "EMPTY CONTROL"
            where = f"offset {self.base_offset}" if self.base_offset >= 0 else "unassigned"
            return (f"{name} marker[{where} pid={self.producer_id} epoch={self.producer_epoch} "
                    f"coordinatorEpoch={self.coordinator_epoch}]")
        if self.base_offset >= 0:
            parts = [f"offsets {self.base_offset}..{self.last_offset}"]
        else:
            parts = [f"unassigned, {len(self._rows)} records"]
        if self.producer_id != NO_PRODUCER_ID:
            parts.append(f"pid={self.producer_id} epoch={self.producer_epoch}")
            if self.base_sequence != NO_SEQUENCE:
                parts.append(f"seq={self.base_sequence}..{self.last_sequence}")
        if self.is_transactional:
            parts.append("txn")
        return f"batch[{' '.join(parts)}]"

    def __repr__(self) -> str:      # (a method, not ``= describe``: mypyc compiles a def)
        return self.describe()

    def _key(self) -> tuple:
        return (self.base_offset, self.partition_leader_epoch, self.producer_id,
                self.producer_epoch, self.base_sequence, self.is_transactional, self.is_control,
                self.log_append_time, tuple(self.records))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecordBatch):
            return NotImplemented
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.base_offset, self.producer_id, self.producer_epoch,
                     self.base_sequence, len(self._rows)))
