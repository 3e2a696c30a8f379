"""A Jepsen-style history of client operations: what each client asked for and what it was told.

Owns ``Op`` (one completed client operation: a send, a poll, a transaction
mixing polls and sends, an assignment or seek, a producer instance's
``init_transactions``, a commit of offsets) and ``History`` (the ordered list,
with JSON-lines export).  Workloads record a history as they run; the checker
reads only the history, never the engine.

Micro-operations inside ``Op.mops`` (plain lists, so a history is JSON):

* ``["send", key, value, offset]``  -- offset is None when the client never learnt it;
* ``["poll", key, [[offset, value], ...]]`` -- what one poll returned for one key, in order;
* ``["seek", key, offset]`` -- the consumer's position on ``key`` was set to ``offset``
  (``assign``, ``seek`` after an abort, a rebalance; offset None = unknown position).

A key is a topic-partition written ``"topic-partition"``.  Outcomes follow Jepsen:
``ok`` (happened), ``fail`` (certainly did not happen: aborted, or a transaction whose
commit was never requested), ``info`` (indeterminate: a crash or timeout in the middle).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterator, Optional

OK, FAIL, INFO = "ok", "fail", "info"


@dataclass
class Op:
    """One completed operation of one client process."""

    index: int
    process: str               # the client instance, e.g. "copier-0#2"
    f: str                     # send | poll | txn | assign | init | commit-offsets | final-read
    mops: list
    outcome: str = OK
    start: int = 0             # simulated ms when invoked
    end: int = 0               # simulated ms when it completed
    attrs: dict = field(default_factory=dict)

    def sends(self) -> Iterator[tuple]:
        for m in self.mops:
            if m[0] == "send":
                yield m[1], m[2], m[3]

    def polls(self) -> Iterator[tuple]:
        for m in self.mops:
            if m[0] == "poll":
                yield m[1], m[2]

    def to_dict(self) -> dict:
        return {"index": self.index, "process": self.process, "f": self.f, "mops": self.mops,
                "outcome": self.outcome, "start": self.start, "end": self.end, "attrs": self.attrs}

    @classmethod
    def from_dict(cls, d: dict) -> "Op":
        return cls(**d)

    def describe(self) -> str:
        parts = []
        for m in self.mops:
            if m[0] == "send":
                parts.append(f"send {m[1]} {m[2]!r}" + (f"@{m[3]}" if m[3] is not None else ""))
            elif m[0] == "poll":
                vals = ", ".join(f"{v!r}@{o}" for o, v in m[2][:4]) + (" ..." if len(m[2]) > 4 else "")
                parts.append(f"poll {m[1]} [{vals}]")
            else:
                parts.append(" ".join(str(x) for x in m))
        return f"op {self.index} {self.process} {self.f} {self.outcome} t={self.start}..{self.end}ms: " + \
            "; ".join(parts)


class History:
    """The operations of one run, in completion order."""

    def __init__(self, ops: Optional[list] = None, attrs: Optional[dict] = None) -> None:
        self.ops: list[Op] = list(ops or [])
        self.attrs: dict = dict(attrs or {})

    def add(self, process: str, f: str, mops: list, outcome: str = OK, start: int = 0, end: int = 0,
            **attrs) -> Op:
        op = Op(len(self.ops), process, f, [list(m) for m in mops], outcome, start, end, attrs)
        self.ops.append(op)
        return op

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def __len__(self) -> int:
        return len(self.ops)

    def __getitem__(self, i):
        return self.ops[i]

    def to_jsonl(self) -> str:
        head = json.dumps({"history": self.attrs}, sort_keys=True)
        return "\n".join([head] + [json.dumps(o.to_dict(), sort_keys=True) for o in self.ops])

    @classmethod
    def from_jsonl(cls, text: str) -> "History":
        h = cls()
        for line in text.splitlines():
            if not line.strip():
                continue
            d = json.loads(line)
            if "history" in d:
                h.attrs = d["history"]
            else:
                h.ops.append(Op.from_dict(d))
        return h


def key_of(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def topic_of(key: str) -> str:
    return key.rsplit("-", 1)[0]
