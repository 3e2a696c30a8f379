"""How the stepper runs a counterexample again: build the lab from the seed, run the same code the sweep or the
explorer ran, and say which invariants hold so far.  Same inputs, same trace: the stepper shows the run the
sweep saw (``runner.drive`` for a sweep seed, ``ExploreRun`` for the explorer's choice list).
"""
from __future__ import annotations

import weakref
from typing import Any, Optional

from .counterexample import SWEEP, Counterexample
from .explore_search import Explorer, ExploreRun
from .invariants import watermark_violations
from .runner import RunConfig, build_cluster, drive
from .workloads import WORKLOADS


class Recipe:
    """How a stepper re-executes a counterexample: ``make_lab(seed)``, then ``run(lab)`` on its client-code
    thread; ``move(lab, deadline)`` (when not None) makes one move instead of ``kernel.step()``;
    ``checks(lab, result, done)`` lists the invariants as (name, True/False/None for not yet known, words)."""

    move = None

    def __init__(self, ce: Counterexample) -> None:
        self.ce = ce
        self.name = f"{ce.source}-seed-{ce.seed}"

    def make_lab(self, seed: int) -> Any:
        raise NotImplementedError

    def run(self, lab) -> Any:
        raise NotImplementedError

    def checks(self, lab, result, done: bool) -> list:
        raise NotImplementedError


class SweepRecipe(Recipe):
    def _cfg(self):
        return RunConfig(**{**self.ce.config, "trace": True})

    def make_lab(self, seed: int):
        return build_cluster(seed, self._cfg())

    def run(self, lab):
        return drive(lab, self.ce.seed, self._cfg(), list(self.ce.faults), keep=True)

    def checks(self, lab, result, done: bool) -> list:
        topics = list(WORKLOADS[self.ce.config["workload"]].topics)
        broken = watermark_violations(lab, topics)
        out = [("watermarks", not broken, broken[0] if broken else "LSO <= HW <= LEO on every leader")]
        if not done or result is None:
            return out + [("history", None, "checked at the end of the run")]
        for name, cases in sorted(result.result.violations.items()):
            if name != "watermarks":
                out.append((name, False, cases[0].detail))
        if result.ok:
            out.append(("history", True, "no violation"))
        return out


class ExploreRecipe(Recipe):
    def __init__(self, ce: Counterexample) -> None:
        super().__init__(ce)
        self._runs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

    def _explorer(self):
        c = self.ce.config
        return Explorer(c.get("mutation"), c.get("max_faults", 2), self.ce.seed, c.get("transaction_version", 0),
                        c.get("max_reorderings", 1), c.get("brokers", 1), c.get("scenario"))

    def make_lab(self, seed: int):
        run = ExploreRun(self._explorer(), list(self.ce.choices), prune=False)
        self._runs[run.cluster] = run
        return run.cluster

    def run(self, lab):
        return self._runs[lab].play(own_driver=False)

    def move(self, lab, deadline: Optional[int]) -> None:
        self._runs[lab].move(deadline)

    def checks(self, lab, result, done: bool) -> list:
        if not done or result is None:
            return [("exactly-once", None, "checked at the end of the run")]
        ok = result.outcome not in ("violation", "duplicate", "loss", "stuck")
        return [("exactly-once", ok, result.outcome + (f": {result.detail.splitlines()[0]}" if result.detail else ""))]


def recipe(ce: Counterexample) -> Recipe:
    """How to run ``ce`` again, one kernel event per Step."""
    return SweepRecipe(ce) if ce.source == SWEEP else ExploreRecipe(ce)


__all__ = ["Recipe", "SweepRecipe", "ExploreRecipe", "recipe"]
