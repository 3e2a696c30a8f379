"""A prepared moment in a file: a teacher saves a branch (scenario, seed, faults at their steps, the step
shown) and a student opens it in one call, on the same step with the same faults.

Owns ``save(stepper, path)`` and ``load(path, cls)`` (reached as ``Stepper.save`` / ``Stepper.load``).  The
file is plain JSON: every branch of the stepper as its recipe (seed + variant + faults with their steps),
which one to show and at which step.  Nothing of the run itself is stored: opening re-executes the recipe,
which the lab's determinism makes exact.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Union

FORMAT = "txnlab-branch"
VERSION = 1


def to_dict(stepper, branch: Optional[str] = None, position: Optional[int] = None) -> dict:
    sc = stepper.story.scenario
    if sc is None:
        raise ValueError("only a gallery scenario can be saved to a file (a function of a cluster is code, "
                         "not data): give it a name in txnlab.gallery, or share the notebook")
    branch = branch or stepper.branch
    if branch not in stepper.history.branches:
        raise KeyError(f"no branch {branch!r}; branches: {', '.join(stepper.history.branches)}")
    if position is None:
        position = stepper.position if branch == stepper.branch else stepper.history.length(branch)
    return {"format": FORMAT, "version": VERSION, "scenario": sc.name, "seed": stepper.seed,
            "skip_background": stepper.filter.skip_background, "branch": branch, "position": int(position),
            "history": stepper.history.to_dict()}


def save(stepper, path: Union[str, Path], branch: Optional[str] = None, position: Optional[int] = None) -> Path:
    """Write ``stepper``'s branches to ``path`` (JSON), to be shown on ``branch`` (default: the current one)
    at ``position`` (default: the current step)."""
    path = Path(path)
    path.write_text(json.dumps(to_dict(stepper, branch, position), indent=1) + "\n")
    return path


def read(path: Union[str, Path]) -> dict:
    d = json.loads(Path(path).read_text())
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise ValueError(f"{path}: not a saved txnlab branch (no \"format\": \"{FORMAT}\")")
    if d.get("version") != VERSION:
        raise ValueError(f"{path}: saved branch version {d.get('version')!r}; this lab reads version {VERSION}")
    for key in ("scenario", "branch", "position", "history"):
        if key not in d:
            raise ValueError(f"{path}: saved branch has no {key!r}")
    return d


def load(path: Union[str, Path], cls, **kw):
    """A new ``cls`` (a ``Stepper``) on the saved scenario, with every saved branch, showing the saved one at
    its saved step."""
    d = read(path)
    kw.setdefault("skip_background", bool(d.get("skip_background", False)))
    s = cls(d["scenario"], seed=int(d.get("seed", 0)), **kw)
    s.history.load(d["history"])
    s.switch(d["branch"], int(d["position"]))
    return s
