"""Small builders shared by the log-layer tests (batches, markers, error assertions)."""
from __future__ import annotations

import pytest

from txnlab.log import AppendOrigin, ControlRecordType, Record, RecordBatch, UnifiedLog
from txnlab.protocol.errors import Errors, ProtocolError

PID = 4000
OTHER_PID = 5000
ONE_RECORD_SIZE = 61 + 10 + 2  # batch overhead + per-record framing + b"k" + b"v"


def data(n: int = 1, pid: int = PID, epoch: int = 0, seq: int = 0, txn: bool = False,
         ts: int = 0) -> RecordBatch:
    """A producer batch of ``n`` one-byte records, as a client would send it (no offsets)."""
    return RecordBatch(tuple(Record(b"k", b"v", (), ts) for _ in range(n)), pid, epoch, seq, txn)


def plain(n: int = 1, ts: int = 0) -> RecordBatch:
    """A batch from a non-idempotent producer."""
    return RecordBatch(tuple(Record(b"k", b"v", (), ts) for _ in range(n)))


def new_log(**config) -> UnifiedLog:
    return UnifiedLog("orders", 0, {k.replace("_", "."): v for k, v in config.items()})


def append(log: UnifiedLog, *batches: RecordBatch, now: int = 0, leader_epoch: int = 0,
           origin: AppendOrigin = AppendOrigin.CLIENT, guard=None):
    return log.append_as_leader(list(batches), leader_epoch, now, origin, guard)


def marker(log: UnifiedLog, kind: str, pid: int = PID, epoch: int = 0, coordinator_epoch: int = 0,
           now: int = 0, tv: int = 0, leader_epoch: int = 0) -> int:
    ctype = ControlRecordType.COMMIT if kind == "commit" else ControlRecordType.ABORT
    return log.append_control_as_leader(ctype, pid, epoch, coordinator_epoch, leader_epoch, now, tv)


def expect_error(error: Errors, fn, *args, **kwargs) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        fn(*args, **kwargs)
    assert info.value.error == error, f"expected {error}, got {info.value.error}: {info.value.message}"
    return info.value


def offsets(log: UnifiedLog) -> list[tuple[int, int]]:
    return [(b.base_offset, b.last_offset) for b in log.batches]
