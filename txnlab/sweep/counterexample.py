"""A counterexample as a value: what a sweep or the explorer found, in a form the stepper opens.

Owns ``Counterexample`` (where it came from -- a sweep seed with its run configuration and fault
schedule, or the explorer's seed and choice list --, the first invariant that broke, and the kernel
step after which it broke, or None when only the end-of-run checks see it) and its JSON form.  A plain
value: ``recipes.recipe(counterexample)`` says how to run it again (``recipes.py`` imports the runner and
the explorer, which import this module).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Optional

from ..kernel.faults import Fault

SWEEP, EXPLORE = "sweep", "explore"


@dataclass(frozen=True)
class Counterexample:
    """``source`` is "sweep" (``config``: the ``RunConfig`` fields; ``faults``: the fault schedule) or
    "explore" (``config``: the explorer's parameters; ``choices``: the choice list; ``faults``: the faults
    those choices applied, each with its step).  ``invariant`` is the first broken invariant, ``step``
    the kernel step after which it first failed (None: it is seen only by the checks at the end)."""

    source: str
    seed: int
    config: dict = field(default_factory=dict)
    faults: tuple = ()
    choices: tuple = ()
    invariant: str = ""
    detail: str = ""
    step: Optional[int] = None

    # ------------------------------------------------------------ finding
    @classmethod
    def from_result(cls, res) -> "Counterexample":
        """A failing sweep seed (``SeedResult``)."""
        if res.ok:
            raise ValueError(f"seed {res.seed} did not violate anything")
        cfg = asdict(res.config)
        cfg.pop("trace", None)
        broken = res.result.violations
        if res.broken_at is not None and "watermarks" in broken:
            name, step = "watermarks", res.broken_at
        else:
            name, step = sorted(broken)[0], None
        return cls(SWEEP, res.seed, cfg, tuple(res.schedule), (), name, broken[name][0].detail, step)

    @classmethod
    def from_explorer(cls, explorer, run) -> "Counterexample":
        """The explorer's counterexample (a ``RunResult`` of ``explorer``)."""
        cfg = {"mutation": explorer.mutation, "max_faults": explorer.max_faults,
               "transaction_version": explorer.transaction_version, "max_reorderings": explorer.max_reorderings,
               "brokers": explorer.brokers, "scenario": explorer.scenario.name}
        return cls(EXPLORE, explorer.seed, cfg, tuple(run.faults), tuple(run.choices), run.outcome,
                   run.detail, None)

    # --------------------------------------------------------------- words
    def describe(self) -> str:
        where = "at the end of the run" if self.step is None else f"after kernel step {self.step}"
        how = (", ".join(f"{k} {v}" for k, v in self.config.items() if v not in (None, ""))
               + (f"; choices {','.join(map(str, self.choices))}" if self.source == EXPLORE else ""))
        faults = "; ".join(f.describe() for f in self.faults) or "no faults"
        return f"{self.source} seed {self.seed} ({how}): {self.invariant} broken {where}; faults: {faults}"

    # ---------------------------------------------------------------- JSON
    def to_dict(self) -> dict:
        return {"source": self.source, "seed": self.seed, "config": dict(self.config),
                "faults": [f.to_dict() for f in self.faults], "choices": list(self.choices),
                "invariant": self.invariant, "detail": self.detail, "step": self.step}

    @classmethod
    def from_dict(cls, d: dict) -> "Counterexample":
        return cls(d["source"], int(d["seed"]), dict(d.get("config", {})),
                   tuple(Fault.from_dict(f) for f in d.get("faults", ())), tuple(d.get("choices", ())),
                   d.get("invariant", ""), d.get("detail", ""), d.get("step"))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "Counterexample":
        return cls.from_dict(json.loads(text))


__all__ = ["Counterexample", "SWEEP", "EXPLORE"]
