"""What every message module shares: the partition key, isolation levels, and the short texts of ``describe()``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import dataclass_transform

from .errors import Errors

TP = tuple  # (topic, partition)

READ_UNCOMMITTED = 0
READ_COMMITTED = 1
CONSUMER_REPLICA_ID = -1


def tp_str(tp) -> str:
    return f"{tp[0]}-{tp[1]}"


def committed_str(offsets: dict) -> str:
    """{tp: (offset, leader_epoch, metadata)} as the requests that commit them show it: ``t-0=5 (leader epoch 2)``,
    the epoch left out when the committer sent none (-1)."""
    return ", ".join(f"{tp_str(tp)}={o}" + (f" (leader epoch {e})" if e >= 0 else "")
                     for tp, (o, e, _) in sorted(offsets.items()))


def tps_str(tps, limit: int = 4) -> str:
    tps = sorted(tps)
    s = ", ".join(tp_str(t) for t in tps[:limit])
    return s + (f" +{len(tps) - limit} more" if len(tps) > limit else "")


def _err(e) -> str:
    return "ok" if e == Errors.NONE else str(Errors(e))


# Every request and response class: a dataclass with slots, hashable like a frozen one.  Not ``frozen``: a frozen
# dataclass sets each field through ``object.__setattr__`` (four times slower to build, and the engine builds
# tens of thousands per simulated second).  Handlers never change a message once it is sent.
_message = dataclass(slots=True, unsafe_hash=True)


@dataclass_transform()      # a type checker (mypy, for the compiled build) reads each class's fields as a dataclass's
def message(cls):
    return _message(cls)
