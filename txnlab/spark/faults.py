"""Spark-side faults a notebook switches on for a streaming write (the failures of STACK-NOTES).

``SparkFaults`` travels to the sink as the writer option ``txnlab.faults`` (JSON).
Each fault fires once per sink: the first process that reaches it claims it at
the front door (so a retried task, a replayed batch after a restart, or a
second worker does not fire it again), then it does what the failure does:

* ``fail_task_after_rows=k``: task ``failing_task`` of micro-batch ``batch`` raises
  after writing k rows (with master ``local[N,F]``, F >= 2, Spark retries it);
* ``duplicate_task=i``: a speculative copy of task i of ``batch`` also runs and writes;
* ``commit_error``: the sink's ``commit(messages, batchId)`` of ``batch`` raises --
  ``"before-publish"``, ``"mid-publish"`` (exactly-once: after the rows went into the
  publish transaction, before it commits) or ``"after-publish"``; Spark then fails
  the batch and a restart on the same checkpoint replays it;
* ``stop_after_publish``: after ``batch`` is published, the driver is stopped
  before Spark records the batch in its commit log (``query.stop()`` while the
  Python commit runs); a restart replays the batch.

Task i of a micro-batch reads partition i of the source topic (one task per partition).
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
    batch: int = 1
    fail_task_after_rows: Optional[int] = None
    failing_task: int = 0
    duplicate_task: Optional[int] = None
    commit_error: Optional[str] = None
    stop_after_publish: bool = False

    def __post_init__(self) -> None:
        if self.commit_error is not None and self.commit_error not in COMMIT_ERRORS:
            raise ValueError(f"commit_error must be one of {COMMIT_ERRORS}, got {self.commit_error!r}")
        if self.fail_task_after_rows is not None and self.fail_task_after_rows < 0:
            raise ValueError("fail_task_after_rows must be >= 0")

    @property
    def any(self) -> bool:
        return bool(self.fail_task_after_rows is not None or self.commit_error or self.stop_after_publish
                    or self.duplicate_task is not None)

    def describe(self) -> str:
        parts = []
        if self.fail_task_after_rows is not None:
            parts.append(f"task {self.failing_task} of batch {self.batch} fails after writing "
                         f"{self.fail_task_after_rows} rows, then Spark retries it")
        if self.duplicate_task is not None:
            parts.append(f"a duplicate (speculative) attempt of task {self.duplicate_task} in batch {self.batch}")
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

    def fails_task(self, batch: int, partition: int) -> bool:
        return self.fail_task_after_rows is not None and batch == self.batch and partition == self.failing_task

    def duplicates_task(self, batch: int, partition: int) -> bool:
        return self.duplicate_task is not None and batch == self.batch and partition == self.duplicate_task

    def fires(self, link, sink_id: str, what: str, batch: int, partition: int = -1) -> bool:
        """Claim the fault ``what`` for this sink and batch: True exactly once."""
        return link.claim(f"spark-fault/{sink_id}/{what}/{batch}/{partition}")
