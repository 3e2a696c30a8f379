"""The wire door's clock and its record: simulated time following the wall clock, each move a step of the trace,
and everything the door does to the simulation kept in ``door.inputs`` (``txnlab.wire.replay`` repeats a run from
it).  A mixin of ``WireDoor`` (listener.py).  This is the edge: the wall clock is read only through this module's
``monotonic`` (by the clock here, and by the door's socket loop for idle connections) and ``unix_ms`` (once, when a
door opens), never in the engine, and each reading enters the simulation only as a recorded input.

The door's epoch (``door.epoch_ms``) is the Unix time in ms that the lab clock's 0 stands for, what
``sim.clock.epoch.ms`` is to the lab's own clients: the wall clock's Unix time when the door opened, less the
simulated time already run then (simulated time follows the wall clock from there).  Real clients stamp their
records with the wall clock and the engine keeps lab time, so the door converts at its edge (records.py and the
apis_*.py that carry a timestamp); the epoch is recorded in the door's ``open`` input, and a replay reuses it.
(The lab's own clients attached to the cluster after the door opened take its epoch as their
``sim.clock.epoch.ms``, so they read the same times; clients attached before keep the epoch they had.)"""
from __future__ import annotations

import time

monotonic = time.monotonic      # the wall clock this module reads (a test may put a clock of its own here)


def unix_ms() -> int:
    """The wall clock as a Unix time in ms: read once, for a door's epoch (a test may put its own here)."""
    return time.time_ns() // 1_000_000


class WallClock:
    """The door's clock and its record of inputs (state set by ``_start_clock``)."""

    def _start_clock(self, lead_ms: int, epoch_ms=None) -> None:
        self.lead_ms = lead_ms
        # a replay passes the recorded epoch: only a door with sockets reads the wall clock
        self.epoch_ms = unix_ms() - self.kernel.now if epoch_ms is None else epoch_ms
        self._wall = monotonic()
        self._lead = 0                   # ms the requests' own work moved simulated time ahead of the wall clock
        self._clock_step = None          # the door's last clock step and the kernel's step count after it
        self._clock_after = -1
        self._coalesce = True
        # Everything the door did to the simulation, in order: what real clients sent and when the wall clock
        # moved simulated time.  txnlab.wire.replay.replay() repeats it on a fresh cluster, step for step.  Kept
        # whole while the cluster keeps its whole trace; with the trace off or bounded (sim.trace,
        # sim.trace.keep.steps) memory stays bounded too: only the last input is kept (no replay then).
        self.inputs: list[dict] = []
        trace = self.kernel.trace
        self.recording = bool(trace.enabled) and trace.limit is None

    def _input(self, entry: dict) -> None:
        if self.recording:
            self.inputs.append(entry)
        elif entry["kind"] != "accept":          # what the clock's coalescing looks back at
            self.inputs[:] = [entry]

    def _pump(self) -> None:
        """Run mode: simulated time follows the wall clock while nothing else moves it (timers fire:
        parked fetches answer, sessions expire, the controller fences a crashed broker)."""
        now = monotonic()
        elapsed = int((now - self._wall) * 1000)
        if elapsed < 5:
            return
        # the part of a ms not moved yet stays on the wall clock's side: dropped at each ~10 ms pump, it made
        # simulated time fall behind the wall clock by ~5% (a marker stamped before the record a client had
        # just sent); what a stall longer than the 1 s step leaves behind is dropped, as before
        self._wall = now if elapsed > 1_000 else self._wall + elapsed / 1000
        with self.lock:
            if self.kernel.driver is None:
                ms = min(elapsed, 1_000)
                repaid = min(ms, self._lead)     # the wall clock catches up with what the requests' work moved
                self._lead -= repaid
                self._advance(ms - repaid)
                if repaid:
                    self._resume()

    def _resume(self) -> None:
        """Work the requests started that stopped at the lead (the cluster is not idle, and its next event is
        within the budget the wall clock just repaid) goes on at once, as far as the budget goes: a recorded
        settle, as after a request.  (Without it that work waited until the whole lead was repaid -- a second
        of wall time in which a real client saw nothing answered, every ~50 one-record transactions.)"""
        k = self.kernel
        if k.idle:
            return
        until = k.now + max(0, min(self.settle_ms, self.lead_ms - self._lead))
        t = k.next_event_time()
        if t is None or t > until:
            return
        self._input({"kind": "settle", "requests": [], "until": until})
        self._settle([], until)

    def _advance(self, ms: int) -> None:
        """Move simulated time on by ``ms`` as a step of its own (kind ``clock``), so that a replay repeats it.
        While nothing else happened since the door's last clock step (no step, no note, no other input than
        a socket accepted), that step grows instead: idle seconds are one entry, not one per tick."""
        if ms <= 0:
            return
        k = self.kernel
        ev = self._clock_step
        last = None
        for entry in reversed(self.inputs):      # a socket accepted in between changes nothing in the simulation
            if entry["kind"] != "accept":
                last = entry
                break
        if (self._coalesce and ev is not None and k.step_count == self._clock_after and last is not None
                and last["kind"] == "advance" and (not k.trace.enabled or (len(k.trace) and k.trace[-1] is ev))):
            total = ev.attrs["ms"] + ms
            last["ms"] = total
        else:
            total = ms
            self._input({"kind": "advance", "ms": ms})
            ev = self._clock_step = k.begin_step("clock", "wire-door", "", background=True)
            k.current = None
        ev.attrs["ms"] = total
        ev._text = f"the wall clock moved simulated time on by {total} ms"
        k.advance(ms)
        self._clock_after = k.step_count
