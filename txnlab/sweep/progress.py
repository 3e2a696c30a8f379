"""The progress bar of the sweep and the explorer, on stderr: redrawn in place on a terminal, a line at every
twentieth of the work otherwise (CI logs).  It reads the wall clock for its rate; it is the command line's,
never the engine's."""
from __future__ import annotations

import sys
import time


def progress_line(done: int, total: int, bad: int, elapsed: float, width: int = 30, unit: str = "seeds",
                  bad_unit: str = "violation(s)") -> str:
    filled = int(width * done / total) if total else width
    rate = done / elapsed if elapsed > 0 else 0.0
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {unit}, {bad} {bad_unit}, {rate:.1f} {unit}/s"


class Progress:
    """``update(done, bad)`` after each piece of work, ``say(text)`` for a line of the report while the bar
    runs, ``close()`` ends the bar's line on a terminal."""

    def __init__(self, total: int, unit: str = "seeds", bad_unit: str = "violation(s)", stream=None) -> None:
        self.total, self.unit, self.bad_unit = total, unit, bad_unit
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.start = time.perf_counter()
        self.line = ""

    def update(self, done: int, bad: int) -> None:
        line = self.line = progress_line(done, self.total, bad, time.perf_counter() - self.start, unit=self.unit,
                                         bad_unit=self.bad_unit)
        if self.tty:
            print("\r" + line, end="", file=self.stream, flush=True)
        elif done == self.total or done % max(1, self.total // 20) == 0:
            print(line, file=self.stream, flush=True)

    def say(self, text: str) -> None:
        """Print ``text`` on stdout; on a terminal the bar is cleared first and drawn again below it."""
        if self.tty and self.line:
            print("\r\033[K", end="", file=self.stream, flush=True)
        print(text, flush=True)
        if self.tty and self.line:
            print(self.line, end="", file=self.stream, flush=True)

    def close(self) -> None:
        if self.tty:
            print(file=self.stream)
