"""Spark-side faults a notebook switches on for a streaming write (the failures of STACK-NOTES).

``SparkFaults`` travels to the sink as the writer option ``txnlab.faults`` (JSON).
Each fault fires once per sink: the first process that reaches it claims it at
the front door (so a retried task, a replayed batch after a restart, or a
second worker does not fire it again), then it does what the failure does:

* ``fail_task_after_rows=k``: the task writing ``partition`` of ``batch`` raises
  after writing k rows (with master ``local[N,F]``, F >= 2, Spark retries it);
* ``commit_error``: the sink's ``commit(messages, batchId)`` raises --
  ``"before-publish"``, ``"mid-publish"`` (exactly-once: after the rows went into the
  publish transaction, before it commits) or ``"after-publish"``; Spark then fails
  the batch and a restart on the same checkpoint replays it;
* ``stop_after_publish``: after the batch is published, the driver is stopped
  before Spark records the batch in its commit log (``query.stop()`` while the
  Python commit runs); a restart replays the batch;
* ``duplicate_attempt``: a speculative copy of the task also runs and writes.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Optional

COMMIT_ERRORS = ("before-publish", "mid-publish", "after-publish")


class InjectedFault(RuntimeError):
    """The failure a SparkFaults switch asked for (so a reader of the log knows it was on purpose)."""


@dataclass(frozen=True)
class SparkFaults:
    fail_task_after_rows: Optional[int] = None
    commit_error: Optional[str] = None
    stop_after_publish: bool = False
    duplicate_attempt: bool = False
    batch: int = 1
    partition: int = 0

    def __post_init__(self) -> None:
        if self.commit_error is not None and self.commit_error not in COMMIT_ERRORS:
            raise ValueError(f"commit_error must be one of {COMMIT_ERRORS}, got {self.commit_error!r}")
        if self.fail_task_after_rows is not None and self.fail_task_after_rows < 0:
            raise ValueError("fail_task_after_rows must be >= 0")

    @property
    def any(self) -> bool:
        return bool(self.fail_task_after_rows is not None or self.commit_error or self.stop_after_publish
                    or self.duplicate_attempt)

    def describe(self) -> str:
        parts = []
        if self.fail_task_after_rows is not None:
            parts.append(f"task {self.partition} of batch {self.batch} fails after {self.fail_task_after_rows} rows")
        if self.duplicate_attempt:
            parts.append(f"a duplicate attempt of task {self.partition} in batch {self.batch}")
        if self.commit_error:
            parts.append(f"the sink's commit of batch {self.batch} raises ({self.commit_error})")
        if self.stop_after_publish:
            parts.append(f"the driver stops between publishing batch {self.batch} and its checkpoint")
        return "; ".join(parts) or "no faults"

    def to_option(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_option(cls, text: Optional[str]) -> "SparkFaults":
        if not text:
            return cls()
        raw = json.loads(text)
        known = {f.name for f in fields(cls)}
        unknown = set(raw) - known
        if unknown:
            raise ValueError(f"unknown Spark fault(s) {sorted(unknown)}; known: {sorted(known)}")
        return cls(**raw)

    def task_hits(self, batch: int, partition: int) -> bool:
        return batch == self.batch and partition == self.partition

    def fires(self, link, sink_id: str, what: str, batch: int, partition: int = -1) -> bool:
        """Claim the fault ``what`` for this sink and batch: True exactly once."""
        return link.claim(f"spark-fault/{sink_id}/{what}/{batch}/{partition}")
