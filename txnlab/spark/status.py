"""One line that says what a Spark run is waiting for, updated in place while it waits.

In a notebook the line is a display updated in place; elsewhere each new state is printed once.  The texts
come from Spark's own query status (``StreamingQuery.status``: "Initializing sources", "Getting offsets from
...", "Processing new data", "Waiting for next trigger") and from the helper that drives the run.
"""
from __future__ import annotations

import sys
import threading
import time

SPARK_SAYS = {
    "Initializing sources": "Spark is starting the query: planning it and connecting to the source",
    "Initializing StreamExecution": "Spark is starting the query",
    "Processing new data": "Spark is running a micro-batch: its tasks read, add up and write",
    "Waiting for next trigger": "Spark is between micro-batches",
    "Waiting for data to arrive": "Spark is asking the source for new offsets",
    "Stopped": "the query has stopped",
}


class Status:
    """``show(text)`` replaces the line (only when the text changed); ``done(text)`` writes the last one."""

    def __init__(self, title: str, enabled: bool = True) -> None:
        self.title = title
        self.enabled = enabled
        self.started = time.perf_counter()
        self._last = None
        self._handle = None
        if enabled:
            try:
                from IPython import get_ipython
                from IPython.display import display
                if get_ipython() is not None and getattr(get_ipython(), "kernel", None) is not None:
                    # a plain-text output (a str displayed as itself would show its repr, in quotes)
                    self._handle = display(_plain(self._text("starting ...")), raw=True, display_id=True)
            except ImportError:
                self._handle = None

    def _text(self, what: str) -> str:
        return f"{self.title}: {what} ({time.perf_counter() - self.started:.0f} s)"

    def show(self, what: str, again: bool = False) -> None:
        """Replace the line with ``what`` (``again``: also when unchanged, to move the clock on)."""
        if not self.enabled or (what == self._last and not (again and self._handle is not None)):
            return
        self._last = what
        if self._handle is not None:
            self._handle.update(_plain(self._text(what)), raw=True)
        else:
            print(self._text(what), file=sys.stderr, flush=True)

    def spark(self, query) -> None:
        """Show what Spark's query says it is doing now."""
        try:
            message = query.status.get("message", "")
        except Exception:  # noqa: BLE001 - a query that has just ended has no status to read
            return
        for prefix, text in SPARK_SAYS.items():
            if message.startswith(prefix):
                self.show(text)
                return
        if message.startswith("Getting offsets"):
            self.show("Spark is asking the source for the offsets of the next micro-batch")
        elif message:
            self.show(f"Spark: {message}")

    def done(self, what: str) -> None:
        self._last = None
        self.show(what)


class watching:
    """``with watching(spark, title, planning=...):`` -- while the block runs Spark jobs, one line says what Spark
    is doing, from its status tracker: ``planning`` until a job starts, then the job's tasks (done / running of
    all), then ``finishing`` between and after jobs.  The line is left at "done" when the block ends."""

    def __init__(self, spark, title: str, planning: str = "Spark is planning the job",
                 finishing: str = "Spark's tasks are done; the result is on its way", enabled: bool = True,
                 every_s: float = 0.5) -> None:
        self.spark, self.planning, self.finishing, self.every_s = spark, planning, finishing, every_s
        self.status = Status(title, enabled=enabled)
        self._stop = threading.Event()
        self._thread = None
        self.jobs_seen: set = set()

    def doing(self) -> str:
        tracker = self.spark.sparkContext.statusTracker()
        for job in sorted(tracker.getActiveJobsIds()):
            self.jobs_seen.add(job)
            info = tracker.getJobInfo(job)
            stages = [tracker.getStageInfo(s) for s in (info.stageIds if info else [])]
            stages = [s for s in stages if s is not None and s.numCompletedTasks < s.numTasks]
            if stages:
                s = stages[0]
                return (f"Spark is running job {job}: {s.numCompletedTasks} of {s.numTasks} tasks done, "
                        f"{s.numActiveTasks} running")
            return f"Spark is running job {job}"
        return self.finishing if self.jobs_seen else self.planning

    def _poll(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.status.show(self.doing(), again=True)
            except Exception:  # noqa: BLE001 - a status line never breaks the work it describes
                return

    def __enter__(self) -> "watching":
        if self.status.enabled:
            self.status.show(self.planning)
            self._thread = threading.Thread(target=self._poll, name="txnlab-spark-status", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind, value, tb) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.status.done("done" if kind is None else f"failed: {kind.__name__}")


def _plain(text: str) -> dict:
    return {"text/plain": text}
