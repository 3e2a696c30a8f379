"""The durable logs of two-phase commit: the coordinator's log and each participant's log.

A record is durable once ``force`` finished (a disk write that takes ``log.force.ms`` of simulated
time, so a crash can land before it).  The log survives a crash; recovery reads it.
Coordinator records: START_2PC, GLOBAL_COMMIT, GLOBAL_ABORT, END.  Participant records: READY
(the prepared writes; locks are re-taken from it after a crash), COMMIT, ABORT.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class LogRecord:
    tx_id: str
    kind: str
    data: tuple = ()
    at: int = 0

    def __str__(self) -> str:
        return f"{self.kind} {self.tx_id}" + (f" {_describe(self.data)}" if self.data else "")


def _describe(data: tuple) -> str:
    """``(("alice", -30),)`` -> ``alice -30``; ``(("bank-a", (("alice", -30),)), ...)`` -> ``bank-a: alice -30; ...``."""
    def change(key, value) -> str:
        return f"{key} {value:+d}" if isinstance(value, int) else f"{key} {value}"
    if all(isinstance(v, tuple) for _k, v in data):
        return "; ".join(f"{who}: " + ", ".join(change(k, v) for k, v in writes) for who, writes in data)
    return ", ".join(change(k, v) for k, v in data)


class DurableLog:
    def __init__(self) -> None:
        self.records: list[LogRecord] = []

    def append(self, rec: LogRecord) -> None:
        self.records.append(rec)

    def of(self, tx_id: str) -> list[LogRecord]:
        return [r for r in self.records if r.tx_id == tx_id]

    def last_kind(self, tx_id: str, kinds: tuple) -> Optional[str]:
        for r in reversed(self.records):
            if r.tx_id == tx_id and r.kind in kinds:
                return r.kind
        return None

    def tx_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for r in self.records:
            seen.setdefault(r.tx_id, None)
        return list(seen)

    def lines(self) -> list[str]:
        return [f"t={r.at}ms {r}" for r in self.records]
