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
        self.printed = -1       # the twentieth of the work last printed (not on a terminal)
        self.shown = ""         # the line last printed (not on a terminal)

    def update(self, done: int, bad: int) -> None:
        line = self.line = progress_line(done, self.total, bad, time.perf_counter() - self.start, unit=self.unit,
                                         bad_unit=self.bad_unit)
        if self.tty:
            print("\r" + line, end="", file=self.stream, flush=True)
        else:                   # a line each time the work passes a twentieth (it may move by more than one)
            twentieth = 20 * done // self.total if self.total else 20
            if twentieth > self.printed or done == self.total:
                self.printed, self.shown = twentieth, line
                print(line, file=self.stream, flush=True)

    def say(self, text: str) -> None:
        """Print ``text`` on stdout; on a terminal the bar is cleared first and drawn again below it."""
        if self.tty and self.line:
            print("\r\033[K", end="", file=self.stream, flush=True)
        print(text, flush=True)
        if self.tty and self.line:
            print(self.line, end="", file=self.stream, flush=True)

    def close(self) -> None:
        """End the bar: on a terminal its line; otherwise the last state, if it was not printed (work that ended
        before its total, as an exploration that explored everything within its budget)."""
        if self.tty:
            print(file=self.stream)
        elif self.line and self.line != self.shown:
            print(self.line, file=self.stream, flush=True)
