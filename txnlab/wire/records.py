"""Record batches on the wire: Kafka's v2 batch format (``DefaultRecordBatch``), read header-only.

A real client's Produce carries its records as bytes.  The door reads only the 61-byte batch header
(base offset, length, partition leader epoch, magic, CRC, attributes, last offset delta, timestamps,
producer id/epoch, base sequence, record count), checks the CRC32C over everything after the CRC field
(the ``crc32c`` package), and keeps the records section as it came: the engine's ``RecordBatch`` gets a
``WireRecords`` sequence whose length is the header's count and which decodes a record only when somebody
reads it (a view, ``ListOffsets`` by time).  A Fetch answer puts the same bytes back behind a new header
(the offset and leader epoch the log assigned, a fresh CRC), so a batch's records are never re-encoded.
Batches made inside the engine (transaction markers, the lab's own clients) are encoded record by record.

Timestamps: a real client's are Unix ms, the engine's logs keep lab time (ms of simulated time; the door's
``epoch_ms`` is the Unix time of the lab's 0, wire/clock.py).  In the v2 format a record's timestamp is a delta
from the batch's firstTimestamp, so moving firstTimestamp and maxTimestamp moves every record: ``parse_batches``
keeps both in lab time and ``encode_batch`` writes them back in Unix time, in the header it makes anyway (its
CRC32C is computed there).  The records section, compressed or not, is never touched.

Owns: ``parse_batches`` (bytes -> engine batches, or ``BatchError`` with Kafka's error), ``encode_batches``
(engine batches -> bytes for a Fetch answer).
"""
from __future__ import annotations

import struct
from typing import Iterator, Sequence

import crc32c

from ..protocol.errors import Errors
# the engine's clock and Unix ms, both ways (shared with the lab's own clients)
from ..protocol.messages import lab_time, unix_time
from . import compression
from ..protocol.record_batch import RECORD_BATCH_OVERHEAD, Record, RecordBatch

_HEADER = struct.Struct(">qiibIhiqqqhii")   # baseOffset .. recordsCount (61 bytes)
_CRC_FROM = 21                               # the CRC covers attributes .. the end of the batch
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_LOG_APPEND = 0x08
TRANSACTIONAL = 0x10
CONTROL = 0x20


class BatchError(Exception):
    """A batch the broker refuses: ``error`` is Kafka's code (CORRUPT_MESSAGE, INVALID_RECORD,
    UNSUPPORTED_COMPRESSION_TYPE), ``message`` says which rule."""

    def __init__(self, error: Errors, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


# ------------------------------------------------------------------ varints
def _varint(buf, pos: int) -> tuple[int, int]:
    """A zig-zag varint (Kafka's ``ByteUtils.readVarint``/``readVarlong``) at ``pos``: (value, next pos)."""
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise BatchError(Errors.CORRUPT_MESSAGE, "a varint is longer than 10 bytes")


def _put_varint(out: bytearray, value: int) -> None:
    v = (value << 1) ^ (value >> 63)
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _bytes_field(buf, pos: int):
    n, pos = _varint(buf, pos)
    if n < 0:
        return None, pos
    end = pos + n
    if end > len(buf):
        raise BatchError(Errors.CORRUPT_MESSAGE, "a record field runs past the end of its batch")
    return bytes(buf[pos:end]), end


# ------------------------------------------------------------ wire records
class WireRecords(Sequence):
    """The records of one batch as the client sent them: ``len`` from the header, records decoded on demand."""

    __slots__ = ("raw", "plain", "count", "base_timestamp", "attributes", "_decoded", "_encoded")

    def __init__(self, raw: bytes, count: int, base_timestamp: int, attributes: int, plain=None) -> None:
        self.raw = raw                  # the records section (everything after the 61-byte header), as sent
        self.plain = raw if plain is None else plain    # the same, decompressed when the batch is compressed
        self.count = count
        self.base_timestamp = base_timestamp
        self.attributes = attributes
        self._decoded = None
        self._encoded: dict = {}        # (base_offset, leader epoch, append time) -> the batch's bytes

    def __len__(self) -> int:
        return self.count

    def _records(self) -> tuple:
        if self._decoded is None:
            self._decoded = tuple(_decode_records(self.plain, self.count, self.base_timestamp))
        return self._decoded

    def __getitem__(self, i):
        return self._records()[i]

    def __iter__(self) -> Iterator[Record]:
        return iter(self._records())


def _decode_records(raw: bytes, count: int, base_ts: int) -> Iterator[Record]:
    pos = 0
    try:
        for _ in range(count):
            length, pos = _varint(raw, pos)
            end = pos + length
            pos += 1                                    # attributes (unused)
            ts_delta, pos = _varint(raw, pos)
            _, pos = _varint(raw, pos)                  # offset delta: records are contiguous
            key, pos = _bytes_field(raw, pos)
            value, pos = _bytes_field(raw, pos)
            n_headers, pos = _varint(raw, pos)
            headers = []
            for _ in range(max(n_headers, 0)):
                hk, pos = _bytes_field(raw, pos)
                hv, pos = _bytes_field(raw, pos)
                headers.append(((hk or b"").decode("utf-8", "replace"), hv))
            yield Record(key, value, tuple(headers), base_ts + ts_delta)
            pos = end
    except IndexError:
        raise BatchError(Errors.CORRUPT_MESSAGE, "a record runs past the end of its batch") from None


# ------------------------------------------------------------------- parse
def parse_batches(data: bytes, produce_version: int = 11, epoch_ms: int = 0) -> list[RecordBatch]:
    """The v2 batches in a Produce's records field, header-only (a compressed batch is decompressed once and
    its records counted, as Kafka's ``LogValidator`` does), their timestamps in lab time (less ``epoch_ms``);
    BatchError for what Kafka refuses."""
    if not data:
        raise BatchError(Errors.INVALID_RECORD, "the partition's records are empty")
    view = memoryview(data)
    out = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < RECORD_BATCH_OVERHEAD:
            raise BatchError(Errors.CORRUPT_MESSAGE, f"a batch header needs {RECORD_BATCH_OVERHEAD} bytes, "
                                                     f"{len(data) - pos} are left")
        (base_offset, length, leader_epoch, magic, crc, attributes, last_delta, base_ts, max_ts, pid, epoch,
         base_seq, count) = _HEADER.unpack_from(view, pos)
        end = pos + 12 + length
        if magic != 2:
            raise BatchError(Errors.UNSUPPORTED_VERSION if magic > 2 else Errors.INVALID_RECORD,
                             f"record batch magic {magic}: the lab speaks only magic v2 (Kafka 0.11+)")
        if length < RECORD_BATCH_OVERHEAD - 12 or end > len(data):
            raise BatchError(Errors.CORRUPT_MESSAGE, f"batchLength {length} does not fit the {len(data) - pos} "
                                                     f"bytes sent")
        if crc32c.crc32c(view[pos + _CRC_FROM:end]) != crc:
            raise BatchError(Errors.CORRUPT_MESSAGE, "the batch's CRC32C does not match its bytes")
        codec = attributes & COMPRESSION_MASK
        if attributes & CONTROL:
            raise BatchError(Errors.INVALID_RECORD, "a client may not write control batches")
        if count <= 0 or last_delta != count - 1:
            raise BatchError(Errors.INVALID_RECORD, f"recordsCount {count} and lastOffsetDelta {last_delta} "
                                                    f"disagree (or the batch is empty)")
        raw = bytes(view[pos + RECORD_BATCH_OVERHEAD:end])
        plain = None
        if codec:
            try:
                compression.check_codec(codec, produce_version)
                plain = compression.decompress(codec, raw)
            except compression.CompressionError as e:
                raise BatchError(e.error, e.message) from None
            found = _count_records(plain)
            if found != count:
                raise BatchError(Errors.CORRUPT_MESSAGE, f"the header says {count} records, the "
                                                         f"{compression.CODECS[codec]} records section holds {found}")
        rows = WireRecords(raw, count, lab_time(base_ts, epoch_ms), attributes, plain)
        out.append(RecordBatch(rows, pid, epoch, base_seq, is_transactional=bool(attributes & TRANSACTIONAL),
                               size_in_bytes=12 + length, max_timestamp=lab_time(max_ts, epoch_ms)))
        pos = end
    return out


def _count_records(plain: bytes) -> int:
    """How many length-prefixed records a (decompressed) records section holds."""
    pos = n = 0
    try:
        while pos < len(plain):
            length, pos = _varint(plain, pos)
            if length < 0:
                raise BatchError(Errors.CORRUPT_MESSAGE, "a record has a negative length")
            pos += length
            n += 1
    except IndexError:
        raise BatchError(Errors.CORRUPT_MESSAGE, "a record length runs past the end of its batch") from None
    if pos != len(plain):
        raise BatchError(Errors.CORRUPT_MESSAGE, "the last record runs past the end of its batch")
    return n


# ------------------------------------------------------------------ encode
def _header(b: RecordBatch, body_len: int, attributes: int, base_ts: int, max_ts: int) -> bytes:
    length = RECORD_BATCH_OVERHEAD - 12 + body_len
    head = _HEADER.pack(b.base_offset, length, b.partition_leader_epoch, 2, 0, attributes, b.record_count - 1,
                        base_ts, max_ts, b.producer_id, b.producer_epoch, b.base_sequence, b.record_count)
    return head


def _attributes(b: RecordBatch, codec: int = 0) -> int:
    a = codec
    if b.log_append_time >= 0:
        a |= TIMESTAMP_TYPE_LOG_APPEND
    if b.is_transactional:
        a |= TRANSACTIONAL
    if b.is_control:
        a |= CONTROL
    return a


def _finish(head: bytes, body: bytes) -> bytes:
    out = bytearray(head)
    out += body
    crc = crc32c.crc32c(memoryview(out)[_CRC_FROM:])
    struct.pack_into(">I", out, 17, crc)
    return bytes(out)


def encode_batch(b: RecordBatch, epoch_ms: int = 0) -> bytes:
    """One engine batch as v2 bytes (at the offset and leader epoch the log gave it), its timestamps in Unix
    time (plus ``epoch_ms``)."""
    rows = b._rows
    if isinstance(rows, WireRecords):
        key = (b.base_offset, b.partition_leader_epoch, b.log_append_time, epoch_ms)
        done = rows._encoded.get(key)
        if done is None:
            # LogAppendTime: Kafka's LogValidator only sets maxTimestamp (DefaultRecordBatch.setMaxTimestamp) and
            # the timestamp type; firstTimestamp stays the client's, and a reader takes maxTimestamp for every record
            max_ts = unix_time(b.max_timestamp, epoch_ms)
            base_ts = unix_time(rows.base_timestamp, epoch_ms)
            attrs = _attributes(b, rows.attributes & COMPRESSION_MASK)
            done = _finish(_header(b, len(rows.raw), attrs, base_ts, max_ts), rows.raw)
            if len(rows._encoded) > 8:
                rows._encoded.clear()
            rows._encoded[key] = done
        return done
    records = b.records
    base_ts = records[0].timestamp if records else 0
    body = bytearray()
    for i, r in enumerate(records):
        rec = bytearray(b"\x00")
        _put_varint(rec, r.timestamp - base_ts)
        _put_varint(rec, i)
        for field in (r.key, r.value):
            if field is None:
                _put_varint(rec, -1)
            else:
                _put_varint(rec, len(field))
                rec += field
        _put_varint(rec, len(r.headers))
        for hk, hv in r.headers:
            hkb = hk.encode() if isinstance(hk, str) else bytes(hk)
            _put_varint(rec, len(hkb))
            rec += hkb
            if hv is None:
                _put_varint(rec, -1)
            else:
                _put_varint(rec, len(hv))
                rec += hv
        _put_varint(body, len(rec))
        body += rec
    if b.log_append_time >= 0:
        base_ts = max_ts = b.log_append_time
    else:
        max_ts = b.max_timestamp
    # the deltas above are the same on either clock: only the header's two timestamps move
    return _finish(_header(b, len(body), _attributes(b), unix_time(base_ts, epoch_ms), unix_time(max_ts, epoch_ms)),
                   bytes(body))


def encode_batches(batches, epoch_ms: int = 0) -> bytes:
    return b"".join(encode_batch(b, epoch_ms) for b in batches)
