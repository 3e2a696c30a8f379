"""One line that says what a Spark run is waiting for, updated in place while it waits.

In a notebook the line is a display updated in place; elsewhere each new state is printed once.  The texts
come from Spark's own query status (``StreamingQuery.status``: "Initializing sources", "Getting offsets from
...", "Processing new data", "Waiting for next trigger") and from the helper that drives the run.
"""
from __future__ import annotations

import sys
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
                    self._handle = display(self._text("starting ..."), display_id=True)
            except ImportError:
                self._handle = None

    def _text(self, what: str) -> str:
        return f"{self.title}: {what} ({time.perf_counter() - self.started:.0f} s)"

    def show(self, what: str) -> None:
        if not self.enabled or what == self._last:
            return
        self._last = what
        if self._handle is not None:
            self._handle.update(self._text(what))
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
