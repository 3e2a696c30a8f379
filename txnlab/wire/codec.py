"""Kafka's binary framing, decoded and encoded with ``kio`` (Kafka's own JSON schemas as Python types).

A request on the wire is ``int32 size`` + a request header (api key, api version, correlation id, client id;
header v2 with tagged fields for a flexible version, KIP-482) + the body; a response is ``int32 size`` +
``correlation id`` (+ tagged fields when flexible; ApiVersions' response header is always v0) + the body.
Owns: ``VERSIONS`` (what the door implements: exactly what ApiVersions advertises), ``Frame`` (one parsed
request), ``parse_frame`` (``FrameError`` for what cannot be read), ``encode_response``, ``build`` (a kio
response from keyword arguments, dropping the fields a version lacks) and the small converters (ms, errors).
Nothing is deserialised with pickle or eval: kio reads the bytes against the schema of the version sent.
"""
from __future__ import annotations

import dataclasses
import datetime
import io
import struct
from functools import lru_cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

MAX_FRAME = 100 * 1024 * 1024      # socket.request.max.bytes (Kafka's default is 100 MiB)
API_VERSIONS = 18

# api key -> (name, min version, max version): exactly what this door translates
VERSIONS: dict[int, tuple[str, int, int]] = {
    0: ("Produce", 3, 11),
    1: ("Fetch", 4, 18),
    2: ("ListOffsets", 1, 7),
    3: ("Metadata", 1, 12),
    8: ("OffsetCommit", 2, 8),
    9: ("OffsetFetch", 1, 7),
    10: ("FindCoordinator", 0, 4),
    11: ("JoinGroup", 0, 7),
    12: ("Heartbeat", 0, 4),
    13: ("LeaveGroup", 0, 4),
    14: ("SyncGroup", 0, 5),
    18: ("ApiVersions", 0, 3),
    19: ("CreateTopics", 2, 7),
    20: ("DeleteTopics", 1, 6),
    22: ("InitProducerId", 0, 4),
    23: ("OffsetForLeaderEpoch", 2, 4),      # (Kafka 4's oldest is 2, KIP-896)
    24: ("AddPartitionsToTxn", 0, 3),
    25: ("AddOffsetsToTxn", 0, 3),
    26: ("EndTxn", 0, 4),
    28: ("TxnOffsetCommit", 0, 4),      # (v4: TRANSACTION_ABORTABLE understood, KIP-890; its last version before TV2)
    61: ("DescribeProducers", 0, 0),
    65: ("DescribeTransactions", 0, 0),
    66: ("ListTransactions", 0, 2),
}
# transaction.version 2 (KIP-890 part 2): the versions a TV2 client needs, advertised on a TV2 cluster only
# (TxnOffsetCommit v5: the group coordinator adds the offsets partition, the client sends no AddOffsetsToTxn)
TV2_VERSIONS: dict[int, int] = {0: 12, 22: 5, 25: 4, 26: 5, 28: 5}


def versions(transaction_version: int) -> dict[int, tuple[str, int, int]]:
    out = dict(VERSIONS)
    if transaction_version >= 2:
        for key, hi in TV2_VERSIONS.items():
            name, lo, _ = out[key]
            out[key] = (name, lo, hi)
    return out


class FrameError(Exception):
    """A frame the door cannot answer in Kafka's protocol: the connection is closed (as Kafka's SocketServer
    does for a request it cannot parse).  ``correlation_id`` is known when the header could be read."""


@dataclasses.dataclass
class Frame:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any              # the kio request, or None when the version is not one the door speaks
    flexible: bool
    size: int


@lru_cache(maxsize=None)
def request_type(api_key: int, version: int):
    return load_request_schema(api_key, version)


@lru_cache(maxsize=None)
def response_type(api_key: int, version: int):
    return load_response_schema(api_key, version)


@lru_cache(maxsize=None)
def _reader(cls):
    return entity_reader(cls)


@lru_cache(maxsize=None)
def _writer(cls):
    return entity_writer(cls)


_HEAD = struct.Struct(">hhih")


def parse_frame(payload: bytes, supported: dict) -> Frame:
    """One request (the bytes after the size prefix).  An API version the door does not speak gives a
    Frame with ``body=None`` (ApiVersions answers it with UNSUPPORTED_VERSION; anything else closes)."""
    if len(payload) < _HEAD.size:
        raise FrameError(f"a request header needs at least {_HEAD.size} bytes, got {len(payload)}")
    api_key, version, cid, n = _HEAD.unpack_from(payload, 0)
    pos = _HEAD.size
    client_id = None
    if n >= 0:
        if pos + n > len(payload):
            raise FrameError("the client id runs past the end of the frame")
        client_id = bytes(payload[pos:pos + n]).decode("utf-8", "replace")
        pos += n
    entry = supported.get(api_key)
    if entry is None:
        raise FrameError(f"unknown API key {api_key} (correlation id {cid})")
    name, lo, hi = entry
    if not lo <= version <= hi:
        return Frame(api_key, version, cid, client_id, None, False, len(payload))
    cls = request_type(api_key, version)
    flexible = bool(cls.__flexible__)
    try:
        if flexible:
            pos = _skip_tagged(payload, pos)
        body, used = _reader(cls)(payload, pos)
    except Exception as e:  # noqa: BLE001 - kio raises several kinds for malformed bytes
        raise FrameError(f"{name} v{version} (correlation id {cid}) could not be read: {type(e).__name__}: {e}") \
            from None
    # Bytes after the body are ignored, as Kafka does (RequestContext.parseRequest reads the fields it knows and
    # no further): librdkafka's all-topics Metadata v9+ leaves three of the four bytes it reserved for the topic
    # count in the request (rd_kafka_MetadataRequest0: "keep 0, varint encoded null"), and Kafka reads them as
    # the fields that follow.
    return Frame(api_key, version, cid, client_id, body, flexible, len(payload))


def _uvarint(buf, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(buf):
            raise FrameError("a varint runs past the end of the frame")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 35:
            raise FrameError("a varint is too long")


def _skip_tagged(buf, pos: int) -> int:
    n, pos = _uvarint(buf, pos)
    for _ in range(n):
        _, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
    if pos > len(buf):
        raise FrameError("a tagged field runs past the end of the frame")
    return pos


def encode_response(api_key: int, flexible: bool, correlation_id: int, body) -> bytes:
    """The whole response frame, size prefix included."""
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    buf.write(struct.pack(">i", correlation_id))
    if flexible and api_key != API_VERSIONS:
        buf.write(b"\0")                  # response header v1: no tagged fields
    _writer(type(body))(buf, body)
    data = bytearray(buf.getbuffer())
    struct.pack_into(">i", data, 0, len(data) - 4)
    return bytes(data)


# ------------------------------------------------------------- building
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)

@lru_cache(maxsize=None)
def _fields(cls) -> dict:
    return {f.name: f for f in dataclasses.fields(cls)}


def build(cls, **kw):
    """A kio entity of ``cls`` from keyword arguments: fields the version lacks are dropped, a missing
    ``throttle_time`` is zero, error codes become ``ErrorCode``, ms become timedeltas where kio wants them."""
    fields = _fields(cls)
    args = {}
    for name, value in kw.items():
        f = fields.get(name)
        if f is None:
            continue
        kt = f.metadata.get("kafka_type")
        if kt in ("timedelta_i32", "timedelta_i64") and isinstance(value, int):
            value = datetime.timedelta(milliseconds=value)
        elif kt == "datetime_i64" and isinstance(value, int):
            # -1 ("none") is null where the field is nullable, else the int64 -1 itself (DescribeTransactions)
            value = None if value < 0 and f.default is None else _EPOCH + datetime.timedelta(milliseconds=value)
        elif kt == "error_code" and not isinstance(value, ErrorCode):
            value = ErrorCode(int(value))
        args[name] = value
    if "throttle_time" in fields and "throttle_time" not in args:
        args["throttle_time"] = datetime.timedelta(0)
    return cls(**args)


@lru_cache(maxsize=None)
def nested(cls, field: str):
    """The entity type of a nested field of ``cls``: an array (``tuple[X, ...]``) or a single entity."""
    import typing
    hint = typing.get_type_hints(cls)[field]
    if dataclasses.is_dataclass(hint):
        return hint
    for a in typing.get_args(hint):
        if dataclasses.is_dataclass(a):
            return a
        for b in typing.get_args(a):
            if dataclasses.is_dataclass(b):
                return b
    raise TypeError(f"{cls.__name__}.{field} is not an entity nor an array of entities")


def ms(value, default: int = 0) -> int:
    """Milliseconds from kio's timedelta (or an int)."""
    if value is None:
        return default
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


def get(obj, name: str, default=None):
    """A field a version may lack."""
    return getattr(obj, name, default)
