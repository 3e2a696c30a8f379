"""The front door's wire format: Kafka's request/response dataclasses as tagged JSON.

Owns turning the frozen dataclasses of ``txnlab.protocol.messages`` and v2
``RecordBatch``es into JSON and back, generically (any message class, found by
its name) and strictly (nothing but those classes can be built; unknown tags,
classes or fields, floats and wrong types are refused), and the checks a
request from outside the kernel must pass before it may become a message of
the simulated network (field types, element types of containers, and what a
client may not claim: to be a follower, to write control batches, to verify
for a broker).  No pickle anywhere: only JSON values go over the wire.

Tags: ``{"$b": base64}`` bytes, ``{"$t": [...]}`` tuple, ``{"$d": [[k, v], ...]}``
dict (keys may be tuples such as ``(topic, partition)``), ``{"$m": name, "f": {...}}``
a message dataclass, ``{"$rb": {...}}`` a record batch (records column by column: all
keys as one base64 blob plus their lengths, the same for the values, so a batch of ten
thousand records is a handful of JSON strings and lists).
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
import typing
from itertools import accumulate
from typing import Any

from ..protocol import messages as msgs
from ..protocol.record_batch import Record, RecordBatch

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
MAX_STRING = 1 << 20

#: every message dataclass, by class name (requests, responses and their parts)
MESSAGE_CLASSES: dict[str, type] = {
    name: cls for name, cls in vars(msgs).items()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__.startswith(msgs.__name__ + ".")}

_BATCH_FIELDS = ("base_offset", "partition_leader_epoch", "producer_id", "producer_epoch",
                 "base_sequence", "log_append_time")


class BadRequest(ValueError):
    """A request the front door refuses (the text says which field and why)."""


# ----------------------------------------------------------------- encoding
def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def encode(v: Any) -> Any:
    """A JSON-able value for ``v`` (message dataclasses, batches, tuples, dicts, bytes, scalars)."""
    t = type(v)
    if v is None or t is str or t is bool or t is int:
        return v
    if isinstance(v, int):                      # Errors and other IntEnums go as their number
        return int(v)
    if t is bytes or t is bytearray or t is memoryview:
        return {"$b": _b64(bytes(v))}
    if t is tuple or t is Record:
        return {"$t": [encode(x) for x in v]}
    if t is list:
        return [encode(x) for x in v]
    if t is dict:
        return {"$d": [[encode(k), encode(x)] for k, x in v.items()]}
    if t is RecordBatch:
        return {"$rb": _encode_batch(v)}
    if dataclasses.is_dataclass(v) and MESSAGE_CLASSES.get(t.__name__) is t:
        return {"$m": t.__name__, "f": {f.name: encode(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if isinstance(v, str):
        return str(v)
    if isinstance(v, tuple):
        return {"$t": [encode(x) for x in v]}
    raise TypeError(f"the front door cannot carry a {t.__name__}")


def _column(values: list) -> tuple[str, list]:
    """One base64 blob of the non-null values, and each value's length (-1 for null)."""
    lengths = [-1 if v is None else len(v) for v in values]
    return _b64(b"".join(v for v in values if v is not None)), lengths


def _encode_batch(b: RecordBatch) -> dict:
    recs = b.records
    out = {name: getattr(b, name) for name in _BATCH_FIELDS}
    out["is_transactional"] = bool(b.is_transactional)
    out["is_control"] = bool(b.is_control)
    out["k"], out["kl"] = _column([r[0] for r in recs])
    out["v"], out["vl"] = _column([r[1] for r in recs])
    out["ts"] = [r[3] for r in recs]
    if any(r[2] for r in recs):
        out["h"] = [[[hk, None if hv is None else _b64(hv)] for hk, hv in r[2]] for r in recs]
    return out


def dumps(v: Any) -> bytes:
    return json.dumps(encode(v), separators=(",", ":")).encode("utf-8")


# ----------------------------------------------------------------- decoding
def _int(v: Any, path: str, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
    if type(v) is not int:
        raise BadRequest(f"{path}: expected an integer, got {_kind(v)}")
    if not lo <= v <= hi:
        raise BadRequest(f"{path}: {v} is outside {lo}..{hi}")
    return v


def _str(v: Any, path: str) -> str:
    if type(v) is not str:
        raise BadRequest(f"{path}: expected a string, got {_kind(v)}")
    if len(v) > MAX_STRING:
        raise BadRequest(f"{path}: string longer than {MAX_STRING}")
    return v


def _kind(v: Any) -> str:
    if isinstance(v, dict) and len(v) >= 1:
        tag = next(iter(v))
        return {"$b": "bytes", "$t": "a tuple", "$d": "a dict", "$rb": "a record batch"}.get(
            tag, f"{v.get('$m', 'an object')!s}" if "$m" in v else "an object")
    return {type(None): "null", bool: "a boolean", int: "an integer", float: "a number with a fraction",
            str: "a string", list: "a list", dict: "an object"}.get(type(v), type(v).__name__)


def _bytes(v: Any, path: str) -> bytes | None:
    if v is None:
        return None
    if type(v) is not str:
        raise BadRequest(f"{path}: expected base64 text or null, got {_kind(v)}")
    try:
        return base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest(f"{path}: not valid base64") from None


def decode(v: Any, path: str = "$") -> Any:
    """The Python value of a JSON value made by ``encode`` (form only: no field typing)."""
    t = type(v)
    if v is None or t is str or t is bool or t is int:
        return v
    if t is list:
        return [decode(x, f"{path}[{i}]") for i, x in enumerate(v)]
    if t is not dict:
        raise BadRequest(f"{path}: {_kind(v)} is not allowed here")
    if len(v) == 1 and "$b" in v:
        b = _bytes(v["$b"], path)
        if b is None:
            raise BadRequest(f"{path}: bytes must not be null")
        return b
    if len(v) == 1 and "$t" in v:
        items = v["$t"]
        if type(items) is not list:
            raise BadRequest(f"{path}: a tuple needs a list")
        return tuple(decode(x, f"{path}[{i}]") for i, x in enumerate(items))
    if len(v) == 1 and "$d" in v:
        return _decode_dict(v["$d"], path)
    if len(v) == 1 and "$rb" in v:
        return decode_batch(v["$rb"], path)
    if set(v) == {"$m", "f"}:
        return _decode_message(v, path)
    raise BadRequest(f"{path}: an object must be one of the tags $b, $t, $d, $rb or $m, got keys {sorted(v)[:5]}")


def _decode_dict(pairs: Any, path: str) -> dict:
    if type(pairs) is not list:
        raise BadRequest(f"{path}: a dict needs a list of [key, value] pairs")
    out = {}
    for i, pair in enumerate(pairs):
        if type(pair) is not list or len(pair) != 2:
            raise BadRequest(f"{path}[{i}]: expected a [key, value] pair")
        k = decode(pair[0], f"{path}[{i}].key")
        try:
            hash(k)
        except TypeError:
            raise BadRequest(f"{path}[{i}].key: a list cannot be a key") from None
        if k in out:
            raise BadRequest(f"{path}[{i}].key: duplicate key {k!r}")
        out[k] = decode(pair[1], f"{path}[{k!r}]")
    return out


def _decode_message(v: dict, path: str) -> Any:
    name, fields = v["$m"], v["f"]
    cls = MESSAGE_CLASSES.get(name) if type(name) is str else None
    if cls is None:
        raise BadRequest(f"{path}: unknown message class {name!r}")
    if type(fields) is not dict:
        raise BadRequest(f"{path}.f: the fields of {name} must be an object")
    known = {f.name: f for f in dataclasses.fields(cls)}
    extra = sorted(set(fields) - set(known))
    if extra:
        raise BadRequest(f"{path}: {name} has no field {extra[0]!r}")
    kwargs = {}
    for fname, f in known.items():
        if fname in fields:
            kwargs[fname] = decode(fields[fname], f"{path}.{fname}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise BadRequest(f"{path}: {name} needs the field {fname!r}")
    return cls(**kwargs)


def _split(blob: Any, lengths: Any, n: int, path: str) -> list:
    """The values of a column: slices of the decoded blob (None where the length is -1)."""
    if type(lengths) is not list or len(lengths) != n:
        raise BadRequest(f"{path}l: expected a list of {n} lengths")
    data = _bytes(blob, path)
    if data is None:
        raise BadRequest(f"{path}: the column's bytes must not be null")
    if not all(type(length) is int for length in lengths) or (lengths and min(lengths) < -1):
        raise BadRequest(f"{path}l: a length must be an integer >= -1 (-1 = null)")
    total = sum(length for length in lengths if length > 0)
    if total != len(data):
        raise BadRequest(f"{path}: the lengths add up to {total} bytes, the column has {len(data)}")
    ends = accumulate(length if length > 0 else 0 for length in lengths)
    return [None if length < 0 else data[end - length:end] for length, end in zip(lengths, ends)]


def decode_batch(d: Any, path: str = "$") -> RecordBatch:
    """A RecordBatch from its columns, checking every header field and record."""
    if type(d) is not dict:
        raise BadRequest(f"{path}: a record batch must be an object")
    need = set(_BATCH_FIELDS) | {"is_transactional", "is_control", "k", "kl", "v", "vl", "ts"}
    missing = sorted(need - set(d))
    extra = sorted(set(d) - need - {"h"})
    if missing or extra:
        raise BadRequest(f"{path}: record batch " + (f"misses {missing[0]!r}" if missing else f"has no field {extra[0]!r}"))
    hdr = {name: _int(d[name], f"{path}.{name}") for name in _BATCH_FIELDS}
    for flag in ("is_transactional", "is_control"):
        if type(d[flag]) is not bool:
            raise BadRequest(f"{path}.{flag}: expected a boolean, got {_kind(d[flag])}")
    stamps, headers = d["ts"], d.get("h")
    if type(stamps) is not list:
        raise BadRequest(f"{path}.ts: expected a list")
    n = len(stamps)
    if headers is not None and (type(headers) is not list or len(headers) != n):
        raise BadRequest(f"{path}.h: expected one list of headers per record")
    if not all(type(t) is int for t in stamps) or (stamps and (min(stamps) < INT64_MIN or max(stamps) > INT64_MAX)):
        raise BadRequest(f"{path}.ts: expected integer timestamps")
    keys = _split(d["k"], d["kl"], n, f"{path}.k")
    values = _split(d["v"], d["vl"], n, f"{path}.v")
    if headers is None:
        # plain (key, value, headers, timestamp) rows: the batch makes Records of them only when read
        records = tuple(zip(keys, values, [()] * n, stamps))
    else:
        records = tuple((keys[i], values[i], _headers(headers[i], f"{path}.h[{i}]"), stamps[i])
                        for i in range(n))
    return RecordBatch(records, hdr["producer_id"], hdr["producer_epoch"], hdr["base_sequence"],
                       d["is_transactional"], d["is_control"], hdr["base_offset"], hdr["partition_leader_epoch"],
                       log_append_time=hdr["log_append_time"], raw=True)


def _headers(h: Any, path: str) -> tuple:
    if type(h) is not list:
        raise BadRequest(f"{path}: headers must be a list of [name, base64 value] pairs")
    out = []
    for j, pair in enumerate(h):
        if type(pair) is not list or len(pair) != 2:
            raise BadRequest(f"{path}[{j}]: expected a [name, value] pair")
        out.append((_str(pair[0], f"{path}[{j}].name"), _bytes(pair[1], f"{path}[{j}].value")))
    return tuple(out)


def loads(data: bytes) -> Any:
    """Parse JSON (no NaN/Infinity) and decode it."""
    return decode(parse_json(data))


MAX_DIGITS = 20          # an int64 has 19 digits (and a sign); a longer number is not a field of any request
MAX_DEPTH = 64           # no request nests deeper than a dozen levels


def parse_json(data: bytes) -> Any:
    """The body as JSON: no NaN/Infinity, no number longer than an int64, no nesting deeper than MAX_DEPTH."""
    def no_constants(name):
        raise BadRequest(f"{name} is not allowed in the front door's JSON")

    def integer(text):
        if len(text.lstrip("-")) > MAX_DIGITS:
            raise BadRequest(f"an integer of {len(text)} digits: at most {MAX_DIGITS} (an int64)")
        return int(text)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the body is not UTF-8 text") from None
    _check_depth(text)
    try:
        return json.loads(text, parse_constant=no_constants, parse_int=integer)
    except json.JSONDecodeError as e:
        raise BadRequest(f"the body is not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise BadRequest(f"the body is nested too deeply (at most {MAX_DEPTH} levels)") from None
    except BadRequest:
        raise
    except ValueError as e:          # e.g. a float too long to convert
        raise BadRequest(f"the body has a value JSON cannot hold here: {e}") from None


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def _check_depth(text: str) -> None:
    """Refuse deep nesting before parsing (the parser would recurse once per level)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    depth = 0
    for ch in _BRACKET.findall(_STRING.sub("", text)):
        if ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise BadRequest(f"the body is nested too deeply (at most {MAX_DEPTH} levels)")
        else:
            depth -= 1


# ------------------------------------------------------- request validation
# Element types of the container fields of the requests a client may send (scalar
# fields are checked against their annotations).  A spec is "int", "str", "bool",
# "tp" (a (topic, partition) tuple), "scalar", a message class name, "RecordBatch",
# ("opt", spec), ("tuple", spec) any length, ("pair", a, b), ("row", a, b, ...) a tuple of that length (a pair is
# a row of two), ("dict", key, value).
TP = "tp"
CONTAINERS: dict[tuple[str, str], Any] = {
    ("MetadataRequest", "topics"): ("opt", ("tuple", "str")),
    ("ProduceRequest", "topic_data"): ("dict", TP, "RecordBatch"),
    ("FetchRequest", "partitions"): ("dict", TP, "FetchPartition"),
    ("FetchRequest", "forgotten"): ("tuple", TP),
    ("ListOffsetsRequest", "partitions"): ("dict", TP, "int"),
    ("JoinGroupRequest", "protocols"): ("tuple", ("pair", "str", ("tuple", "str"))),
    ("SyncGroupRequest", "assignments"): ("tuple", ("pair", "str", ("tuple", TP))),
    ("OffsetCommitRequest", "offsets"): ("dict", TP, ("row", "int", "int", "str")),
    ("OffsetFetchRequest", "partitions"): ("opt", ("tuple", TP)),
    ("AddPartitionsToTxnRequest", "partitions"): ("tuple", TP),
    ("AddPartitionsToTxnRequest", "transactions"): ("tuple", "AddPartitionsToTxnTransaction"),
    ("AddPartitionsToTxnTransaction", "partitions"): ("tuple", TP),
    ("TxnOffsetCommitRequest", "offsets"): ("dict", TP, ("row", "int", "int", "str")),
    ("DescribeProducersRequest", "partitions"): ("tuple", TP),
    ("DescribeTransactionsRequest", "transactional_ids"): ("tuple", "str"),
    ("ListTransactionsRequest", "state_filters"): ("tuple", "str"),
    ("ListTransactionsRequest", "producer_id_filters"): ("tuple", "int"),
    ("WriteTxnMarkersRequest", "markers"): ("tuple", "TxnMarkerEntry"),
    ("TxnMarkerEntry", "partitions"): ("tuple", TP),
    ("CreateTopicsRequest", "topics"): ("tuple", "CreatableTopic"),
    ("CreatableTopic", "configs"): ("tuple", ("pair", "str", "scalar")),
    ("DeleteTopicsRequest", "topic_names"): ("tuple", "str"),
    ("DescribeConfigsRequest", "resources"): ("tuple", "DescribeConfigsResource"),
    ("DescribeConfigsResource", "configuration_keys"): ("opt", ("tuple", "str")),
    ("CreatePartitionsRequest", "topics"): ("tuple", "CreatePartitionsTopic"),
    ("AlterConfigsRequest", "resources"): ("tuple", "AlterConfigsResource"),
    ("IncrementalAlterConfigsRequest", "resources"): ("tuple", "AlterConfigsResource"),
    ("AlterConfigsResource", "configs"): ("tuple", "AlterableConfig"),
    ("ListGroupsRequest", "states_filter"): ("tuple", "str"),
    ("DescribeGroupsRequest", "groups"): ("tuple", "str"),
    ("DeleteGroupsRequest", "groups_names"): ("tuple", "str"),
}

#: the APIs a process outside the kernel may call (never the brokers' and controller's own: WriteTxnMarkers,
#: LeaderAndIsr, AlterPartition... are inter-broker APIs, refused by the brokers too)
CLIENT_APIS = ("Metadata", "Produce", "Fetch", "ListOffsets", "FindCoordinator", "InitProducerId",
               "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch",
               "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit", "DescribeProducers",
               "DescribeTransactions", "ListTransactions", "ApiVersions", "CreateTopics",
               "DeleteTopics", "DescribeConfigs", "CreatePartitions", "AlterConfigs", "IncrementalAlterConfigs",
               "ListGroups", "DescribeGroups", "DeleteGroups", "DescribeCluster")
REQUEST_CLASSES = {getattr(c, "API"): c for n, c in MESSAGE_CLASSES.items()
                   if n.endswith("Request") and getattr(c, "API", None) in CLIENT_APIS}
_SCALARS = {int: "int", str: "str", bool: "bool"}


def _field_spec(cls: type, f: dataclasses.Field, hints: dict) -> Any:
    spec = CONTAINERS.get((cls.__name__, f.name))
    if spec is not None:
        return spec
    hint = hints[f.name]
    if hint in _SCALARS:
        return _SCALARS[hint]
    args = typing.get_args(hint)
    if typing.get_origin(hint) is typing.Union and len(args) == 2 and type(None) in args:
        inner = args[0] if args[1] is type(None) else args[1]
        if inner in _SCALARS:
            return ("opt", _SCALARS[inner])
    raise BadRequest(f"{cls.__name__}.{f.name} cannot come through the front door (no element type known)")


_HINTS: dict[type, dict] = {}


def _check_message(v: Any, cls: type, path: str) -> None:
    if type(v) is not cls:
        raise BadRequest(f"{path}: expected {cls.__name__}, got {_kind_py(v)}")
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        value = getattr(v, f.name)
        try:
            spec = _field_spec(cls, f, hints)
        except BadRequest:
            # a field added to the protocol after this table was written: only its default may come in
            if f.default is not dataclasses.MISSING and type(value) is type(f.default) and value == f.default:
                continue
            raise
        check(value, spec, f"{path}.{f.name}")


def _kind_py(v: Any) -> str:
    return "null" if v is None else type(v).__name__


def check(v: Any, spec: Any, path: str) -> None:
    """Raise BadRequest unless ``v`` (a decoded value) has the shape ``spec`` says."""
    if spec == "int":
        _int(v, path)
    elif spec == "str":
        _str(v, path)
    elif spec == "bool":
        if type(v) is not bool:
            raise BadRequest(f"{path}: expected a boolean, got {_kind_py(v)}")
    elif spec == "scalar":
        if v is not None and type(v) not in (int, str, bool):
            raise BadRequest(f"{path}: expected a string, number, boolean or null, got {_kind_py(v)}")
    elif spec == TP:
        if type(v) is not tuple or len(v) != 2:
            raise BadRequest(f"{path}: expected a (topic, partition) tuple, got {_kind_py(v)}")
        _str(v[0], f"{path}.topic")
        _int(v[1], f"{path}.partition", 0, 2 ** 31 - 1)
    elif spec == "RecordBatch":
        if type(v) is not RecordBatch:
            raise BadRequest(f"{path}: expected a record batch, got {_kind_py(v)}")
    elif isinstance(spec, str):
        _check_message(v, MESSAGE_CLASSES[spec], path)
    elif spec[0] == "opt":
        if v is not None:
            check(v, spec[1], path)
    elif spec[0] == "tuple":
        if type(v) is not tuple:
            raise BadRequest(f"{path}: expected a tuple, got {_kind_py(v)}")
        for i, x in enumerate(v):
            check(x, spec[1], f"{path}[{i}]")
    elif spec[0] in ("pair", "row"):
        if type(v) is not tuple or len(v) != len(spec) - 1:
            raise BadRequest(f"{path}: expected a {spec[0]} of {len(spec) - 1}, got {_kind_py(v)}")
        for i, part in enumerate(spec[1:]):
            check(v[i], part, f"{path}[{i}]")
    elif spec[0] == "dict":
        if type(v) is not dict:
            raise BadRequest(f"{path}: expected a dict, got {_kind_py(v)}")
        for k, x in v.items():
            check(k, spec[1], f"{path}.key")
            check(x, spec[2], f"{path}[{k!r}]")
    else:  # pragma: no cover - a mistake in CONTAINERS
        raise AssertionError(f"bad spec {spec!r}")


def decode_request(api: Any, body: Any) -> Any:
    """A request of ``api`` that a client outside the kernel may send, checked field by field."""
    if type(api) is not str:
        raise BadRequest("api: expected the API name as a string")
    cls = REQUEST_CLASSES.get(api)
    if cls is None:
        if any(getattr(c, "API", None) == api for c in MESSAGE_CLASSES.values()):
            raise BadRequest(f"{api} is not a client API: only brokers and the controller send it")
        raise BadRequest(f"unknown API {api!r}")
    req = decode(body, "request")
    _check_message(req, cls, "request")
    _check_semantics(req)
    return req


def _check_semantics(req: Any) -> None:
    """What a client may not claim, so that a broker never meets a request it cannot handle."""
    api = req.API
    if api == "Fetch":
        if req.replica_id != msgs.CONSUMER_REPLICA_ID:
            raise BadRequest("request.replica_id: a client fetches as -1 (only followers give a broker id)")
        if req.isolation_level not in (msgs.READ_UNCOMMITTED, msgs.READ_COMMITTED):
            raise BadRequest("request.isolation_level: must be 0 (read_uncommitted) or 1 (read_committed)")
        _int(req.max_wait_ms, "request.max_wait_ms", 0, 300_000)
        _int(req.min_bytes, "request.min_bytes", 0, 2 ** 31 - 1)
        for tp, p in req.partitions.items():
            _int(p.fetch_offset, f"request.partitions[{tp!r}].fetch_offset", -1)
            _int(p.partition_max_bytes, f"request.partitions[{tp!r}].partition_max_bytes", 0, 2 ** 31 - 1)
    elif api == "ListOffsets":
        if req.isolation_level not in (msgs.READ_UNCOMMITTED, msgs.READ_COMMITTED):
            raise BadRequest("request.isolation_level: must be 0 (read_uncommitted) or 1 (read_committed)")
    elif api == "Produce":
        if req.acks not in (-1, 0, 1):
            raise BadRequest("request.acks: must be -1 (all), 0 or 1")
        _int(req.timeout_ms, "request.timeout_ms", 0, 2 ** 31 - 1)
        for tp, b in req.topic_data.items():
            where = f"request.topic_data[{tp!r}]"
            if b.is_control:
                raise BadRequest(f"{where}: clients may not produce control batches (only the coordinator's markers are)")
            if not b.records:
                raise BadRequest(f"{where}: a record batch needs at least one record")
            if b.log_append_time != -1:
                raise BadRequest(f"{where}.log_append_time: the broker sets it, the client sends -1")
            _int(b.producer_epoch, f"{where}.producer_epoch", -1, 32767)
            _int(b.base_sequence, f"{where}.base_sequence", -1, 2 ** 31 - 1)
    elif api == "AddPartitionsToTxn" and req.transactions:
        raise BadRequest("request.transactions: only a partition leader asks about other transactions (KIP-890)")
    elif api in ("CreateTopics", "DeleteTopics"):
        _int(req.timeout_ms, "request.timeout_ms", 0, 2 ** 31 - 1)
    elif api == "FindCoordinator" and req.key_type not in (msgs.COORDINATOR_GROUP, msgs.COORDINATOR_TRANSACTION):
        raise BadRequest("request.key_type: must be 0 (group) or 1 (transaction)")
    for name in ("transaction_timeout_ms", "session_timeout_ms", "rebalance_timeout_ms"):
        if hasattr(req, name):
            _int(getattr(req, name), f"request.{name}", 0, 2 ** 31 - 1)
    if hasattr(req, "producer_epoch"):
        _int(req.producer_epoch, "request.producer_epoch", -1, 32767)
