"""Live runs of a scenario that a person steps through: branches, faults and the client-code thread.

Owns ``Branch`` (seed + scenario variant + the list of (step index, fault) applied: everything
needed to re-execute it deterministically; faults are the kernel's one ``Fault`` type, the one the
sweep and the explorer apply too), ``Story`` (how to build the lab and the client code to run on it;
a sweep's or the explorer's ``Counterexample`` is a story too) and ``Execution`` (one live run of a
branch).  All of it needs only the ``txnlab.kernel.lab.Lab`` face -- a kernel, its trace, named
processes and the faults -- so a Kafka ``Cluster``, a ``RocketMQCluster`` and a two-phase-commit
lab are stepped alike.  The scenario's client code runs in a worker thread whose
blocking calls (``commit_transaction``, ``poll``, ``flush`` ...) reach the kernel's ``driver``: they
park until the stepper executes the next kernel event for them.  Only one thread ever touches the
engine at a time -- the two hand a baton back and forth -- so the engine stays single-threaded in
effect, and a stepped run produces the same trace as a plain run of the same scenario.
"""
from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Optional

from txnlab import Cluster
from txnlab.gallery import Scenario
from txnlab.kernel.faults import Fault
from txnlab.kernel.lab import Lab
from txnlab.sweep.counterexample import Counterexample
from txnlab.sweep.recipes import recipe

MAIN, WORKER = "main", "worker"


class _Abandoned(BaseException):
    """Raised inside an abandoned run's client code so that its thread unwinds (not an Exception:
    client code that catches KafkaException or Exception must not swallow it)."""


# ----------------------------------------------------------------------------- branches
@dataclass(frozen=True)
class Branch:
    """Seed + scenario (variant) + faults applied at step indexes: a deterministic recipe."""

    name: str
    seed: int = 0
    variant: Optional[str] = None
    faults: tuple = ()                 # ((position, Fault), ...) in the order applied
    parent: Optional[str] = None

    def faults_at(self, position: int) -> list[Fault]:
        return [f for i, f in self.faults if i == position]

    def fork(self, name: str, position: int, fault: Fault) -> "Branch":
        kept = tuple((i, f) for i, f in self.faults if i <= position)
        return Branch(name, self.seed, self.variant, kept + ((position, fault),), self.name)

    def describe(self) -> str:
        parts = [f"seed {self.seed}"] + ([f"variant {self.variant}"] if self.variant else [])
        parts += [f"step {i}: {f.describe()}" for i, f in self.faults]
        return ", ".join(parts)

    def to_dict(self) -> dict:
        """JSON-ready: each fault carries its step (``Fault.step``)."""
        return {"name": self.name, "seed": self.seed, "variant": self.variant, "parent": self.parent,
                "faults": [f.at_step(i).to_dict() for i, f in self.faults]}

    @classmethod
    def from_dict(cls, d: dict) -> "Branch":
        faults = tuple((f.step, f.at_step(None)) for f in map(Fault.from_dict, d.get("faults", ())))
        return cls(d["name"], int(d.get("seed", 0)), d.get("variant"), faults, d.get("parent"))


# ---------------------------------------------------------------------------- stories
@dataclass
class Story:
    """What a stepper runs: how to build the lab (a Kafka ``Cluster`` or another design's ``Lab``) and
    the client code to step through on it."""

    name: str
    make_cluster: Callable[[int, Optional[str]], Lab]
    run: Callable[[Lab], Any]
    scenario: Optional[Scenario] = None
    variants: tuple = ()
    move: Optional[Callable[[Lab, Optional[int]], None]] = None     # one Step (default: kernel.step())
    checks: Optional[Callable[[Lab, Any, bool], list]] = None       # invariants: (name, ok or None, words)
    counterexample: Any = None

    @classmethod
    def of(cls, scenario, brokers: int = 3, config: Optional[dict] = None,
           lab: Optional[Callable[[int], Lab]] = None) -> "Story":
        """A scenario name (``txnlab.gallery.load``), a ``Scenario``, or a plain function of a lab:
        of a Kafka ``Cluster(brokers, seed, config)``, or of ``lab(seed)`` when that recipe is given
        (e.g. ``lambda seed: RocketMQCluster(seed=seed)``)."""
        if isinstance(scenario, str):
            from txnlab import gallery
            scenario = gallery.load(scenario)
        if isinstance(scenario, Counterexample):       # what a sweep or the explorer found
            if config:
                raise TypeError("config= does not apply to a counterexample: it replays the lab it was found on")
            r = recipe(scenario)
            return cls(r.name, lambda seed, variant: r.make_lab(seed), r.run, move=r.move, checks=r.checks,
                       counterexample=scenario)
        if isinstance(scenario, Scenario):
            make = scenario.make_cluster
            if config:                       # the learner's settings over the scenario's own
                def make(seed: int, variant: Optional[str], sc: Scenario = scenario) -> Lab:
                    return sc.make_cluster(seed, variant, config)
            return cls(scenario.name, make, scenario.run, scenario, tuple(scenario.variants))
        if callable(scenario):
            if lab is not None:
                def make(seed: int, variant: Optional[str]) -> Lab:
                    return lab(seed)
            else:
                def make(seed: int, variant: Optional[str]) -> Lab:
                    return Cluster(brokers=brokers, seed=seed, config=dict(config or {}))
            return cls(getattr(scenario, "__name__", "scenario"), make, scenario)
        raise TypeError(f"a scenario is a scenario name, a Scenario or a function of a lab, not {scenario!r}")


# --------------------------------------------------------------------------- execution
class Execution:
    """One live run of a branch, at ``position`` (the number of Steps taken since the start).

    Position 0 is the state once the client code has run up to its first blocking call.  Each
    ``step()`` executes exactly one kernel event, then lets the client code continue until it
    needs another event; faults of the branch are re-applied at their positions.
    """

    def __init__(self, story: Story, branch: Branch, max_steps: int = 50_000) -> None:
        self.story = story
        self.branch = branch
        self.max_steps = max_steps
        self.cluster = story.make_cluster(branch.seed, branch.variant)   # any Lab (Kafka's Cluster is one)
        self.kernel = self.cluster.kernel
        self.start_mark = len(self.kernel.trace)
        self.position = 0
        self.marks: list[int] = []          # trace length once position i was reached
        self.kernel_steps: list[int] = []   # kernel.step_count at position i
        self.done = False
        self.result: Any = None
        self.error: Optional[BaseException] = None
        self.error_text = ""
        self._cv = threading.Condition()
        self._turn = MAIN
        self._wait: Optional[tuple] = None
        self._abandoned = False
        self.kernel.driver = self._driver
        self._thread = threading.Thread(target=self._client_main, name=f"txnlab-{story.name}", daemon=True)
        self._thread.start()
        self._to_worker()                   # run the client code up to its first blocking call
        self._settle()
        self._mark()
        for fault in branch.faults_at(0):
            self.apply(fault, record=False)

    # -------------------------------------------------------------- the worker thread
    def _client_main(self) -> None:
        with self._cv:
            while self._turn != WORKER:
                self._cv.wait()
        try:
            self.result = self.story.run(self.cluster)
            self.kernel.record("note", "scenario", "the scenario's client code has finished")
        except _Abandoned:
            pass
        except BaseException as e:  # noqa: BLE001 - the client code's failure is part of the story
            self.error = e
            self.error_text = "".join(traceback.format_exception_only(type(e), e)).strip()
            if not self._abandoned:
                self.kernel.record("note", "scenario", f"the scenario's client code raised {self.error_text}")
        finally:
            with self._cv:
                self.done = True
                self._turn = MAIN
                self._cv.notify_all()

    def _driver(self, predicate: Callable[[], bool], timeout_ms: Optional[int]) -> bool:
        """Kernel.run_until under the stepper: the same rules, but each event waits for a Step."""
        if threading.current_thread() is not self._thread:
            return self._run_plainly(predicate, timeout_ms)
        k = self.kernel
        deadline = None if timeout_ms is None else k.now + int(timeout_ms)
        while True:
            if self._abandoned:
                raise _Abandoned()
            if predicate():
                return True
            t = k.next_event_time()
            if t is None or (deadline is not None and t > deadline):
                if deadline is not None and deadline > k.now:
                    k.now = deadline          # nothing happens before the deadline: time jumps to it
                return predicate()
            self._wait = (predicate, deadline)
            self._to_main()                   # park until the stepper has executed one event

    def _run_plainly(self, predicate, timeout_ms) -> bool:
        """A blocking call made outside the client-code thread (from a notebook cell) runs plainly."""
        k = self.kernel
        k.driver = None
        try:
            return k.run_until(predicate, timeout_ms)
        finally:
            k.driver = self._driver

    def _to_main(self) -> None:
        with self._cv:
            self._turn = MAIN
            self._cv.notify_all()
            while self._turn != WORKER:
                self._cv.wait()

    def _to_worker(self) -> None:
        with self._cv:
            if self.done:
                return
            self._turn = WORKER
            self._cv.notify_all()
            while self._turn != MAIN:
                self._cv.wait()

    def _settle(self) -> None:
        """Let the client code run until it needs the next kernel event (or has finished)."""
        k = self.kernel
        while not self.done:
            predicate, deadline = self._wait
            if not predicate():
                t = k.next_event_time()
                if t is not None and (deadline is None or t <= deadline):
                    return
            self._to_worker()

    @property
    def lab(self) -> Lab:
        """The lab of this run (``cluster`` is the same object, named for the Kafka case)."""
        return self.cluster

    # ------------------------------------------------------------------- stepping
    def _mark(self) -> None:
        self.marks.append(len(self.kernel.trace))
        self.kernel_steps.append(self.kernel.step_count)

    @property
    def at_end(self) -> bool:
        """The client code has finished and only background work is left (or the step limit)."""
        return (self.done and self.kernel.idle) or self.position >= self.max_steps \
            or self.kernel.next_event_time() is None

    def step(self) -> bool:
        """Execute exactly one kernel event (plus what the client code then does at once)."""
        if self.at_end:
            return False
        k = self.kernel
        before = k.step_count
        waiting = self._wait is not None and not self.done
        if self.story.move is not None and waiting:
            self.story.move(self.cluster, self._wait[1])     # the story's own move (an explorer's choice)
        else:
            k.step(None, self._wait[1] if waiting else None)
        if waiting and k.step_count == before:
            # Nothing was due by the client code's deadline (the event at the head of the queue belonged to a
            # paused process, and the kernel held it until it wakes): the client's wait ends there, as in
            # Kernel.run_until, and this Step runs the next event.
            self._settle()
            return self.step()
        self.position += 1
        self._settle()
        self._mark()
        for fault in self.branch.faults_at(self.position):
            self.apply(fault, record=False)
        return True

    def run_to(self, position: int) -> None:
        while self.position < position and self.step():
            pass

    def run_to_end(self) -> int:
        while self.step():
            pass
        return self.position

    def apply(self, fault: Fault, record: bool = True) -> None:
        """Apply a fault now (at the current position)."""
        fault.apply(self.cluster)
        if record:
            self.branch = Branch(self.branch.name, self.branch.seed, self.branch.variant,
                                 self.branch.faults + ((self.position, fault),), self.branch.parent)
        self._settle()
        self.marks[self.position] = len(self.kernel.trace)
        self.kernel_steps[self.position] = self.kernel.step_count

    # -------------------------------------------------------------------- reading
    def entries(self, position: Optional[int] = None) -> list:
        """Trace entries produced by one position (0: what the client code did before blocking)."""
        i = self.position if position is None else position
        lo = self.start_mark if i == 0 else self.marks[i - 1]
        return self.kernel.trace.events[lo:self.marks[i]]

    def waiting_on(self) -> str:
        """What the client code is doing now, in words."""
        if self.done:
            return "the client code has finished" + (f" ({self.error_text})" if self.error else "")
        return "the client code waits inside a blocking call"

    def close(self) -> None:
        """Stop the client-code thread (its run is no longer wanted)."""
        if self.done:
            return
        self._abandoned = True
        self._to_worker()
        self._thread.join(timeout=5)
