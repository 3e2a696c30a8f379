"""The stepper's history: the branches of one scenario, where each ends, and the step filter.

Owns ``History`` (the branches -- each a seed + variant + faults recipe -- with their lengths and
outcomes, found by re-executing them to the end) and ``StepFilter`` (which steps a filtered Step or
Back stops at: by API, process or transactional.id, and whether background events count).
No widgets here: the stepper's buttons call into these.
"""
from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Optional

from txnlab.gallery.moments import KeyMoment, Moments

from .cluster_view import client_of_transactional_id
from .execution import Branch, Execution, Fault, Story
from .outcome import diff, diff_html, outcome

EVENT_KINDS = ("deliver", "wait", "timer", "drop", "fault", "admin")


def fault_moments(story: Story) -> tuple:
    """A counterexample's key moments: each of its faults applied at a kernel step, as the explorer's are (a
    counterexample has no story of its own, and a learner looks for its faults first; ``Stepper.open`` shows it
    where it breaks, often its last step).  A sweep's faults, armed at a time and applied later, get none: the
    position that applies one cannot be told from its schedule alone."""
    found = getattr(story, "counterexample", None)
    return tuple(KeyMoment(f"fault-{i}", _said(f), _fault_at(f))
                 for i, f in enumerate(getattr(found, "faults", ()), 1) if f.step is not None)


def _said(fault: Fault) -> str:
    """'drop message #48 at step 61' -> 'Drop message #48' (the kernel's step number is not the stepper's)."""
    words = re.sub(r" at step \d+$", "", fault.describe())
    return words[:1].upper() + words[1:]


def _fault_at(fault: Fault):
    def when(lab, entries) -> bool:      # the first position, from the fault's kernel step on, with a fault
        k = lab.kernel
        return k.step_count >= fault.step and any(e.kind == "fault" for e in entries)
    return when


@dataclass
class StepFilter:
    """Which steps count when stepping (None: any)."""

    api: Optional[str] = None
    node: Optional[str] = None
    transactional_id: Optional[str] = None
    skip_background: bool = False

    @property
    def active(self) -> bool:
        return bool(self.api or self.node or self.transactional_id or self.skip_background)

    @property
    def narrows(self) -> bool:
        """An API, process or transactional.id is chosen: Step then goes event by event to matching ones (a
        moment or an exchange is never a background event, so skipping those changes nothing there)."""
        return bool(self.api or self.node or self.transactional_id)

    def _entry_matches(self, e, cluster) -> bool:
        if self.skip_background and (e.background or e.kind == "note"):
            return False
        if self.api and e.api != self.api:
            return False
        if self.node and self.node not in (e.node, e.src, e.dst):
            return False
        tid = self.transactional_id
        if tid:
            names = client_of_transactional_id(cluster, tid)
            msg = cluster.kernel.network.messages.get(e.msg_id) if e.msg_id >= 0 else None
            if not (getattr(getattr(msg, "payload", None), "transactional_id", None) == tid
                    or e.node in names or e.src in names or e.dst in names or f"'{tid}'" in e.narration):
                return False
        return True

    def matches(self, entries: list, cluster) -> bool:
        return any(self._entry_matches(e, cluster) for e in entries)

    def message_matches(self, m, cluster) -> bool:
        if self.api and m.api != self.api:
            return False
        if self.node and self.node not in (m.src, m.dst):
            return False
        tid = self.transactional_id
        if tid:
            names = client_of_transactional_id(cluster, tid)
            if not (getattr(m.payload, "transactional_id", None) == tid or m.src in names or m.dst in names):
                return False
        return True

    def describe(self) -> str:
        parts = [f"API {self.api}" if self.api else "", f"process {self.node}" if self.node else "",
                 f"transactional.id {self.transactional_id!r}" if self.transactional_id else "",
                 "no background events" if self.skip_background else ""]
        return ", ".join(p for p in parts if p) or "every event"


class History:
    """Every branch of one scenario: how to re-execute it, where it ends, how it ends."""

    def __init__(self, story: Story, main: Branch, max_steps: int = 50_000) -> None:
        self.story = story
        self.max_steps = max_steps
        self.branches: dict[str, Branch] = {main.name: main}
        self.labels: dict[str, str] = {main.name: "as written"}
        self._ends: dict[str, tuple] = {}    # name -> (length, outcome, Moments)

    def execution(self, name: str, position: int = 0) -> Execution:
        ex = Execution(self.story, self.branches[name], self.max_steps)
        ex.run_to(position)
        return ex

    def _finish(self, name: str) -> tuple:
        got = self._ends.get(name)
        if got is None:
            ex = self.execution(name)
            sc = self.story.scenario
            moments = Moments(sc.moments if sc is not None else fault_moments(self.story))
            moments.observe(0, ex.entries(0), ex.cluster)
            while ex.step():                 # one pass to the end: the length, the stops and the key moments
                moments.observe(ex.position, ex.entries(), ex.cluster)
            got = self._ends[name] = (ex.position, outcome(ex), moments)
            ex.close()
        return got

    def moments(self, name: str) -> Moments:
        """The branch's stops at each granularity and where its key moments are (``txnlab.gallery.moments``)."""
        return self._finish(name)[2]

    def length(self, name: str) -> int:
        """The position at which the branch ends (client code done, only background work left)."""
        return self._finish(name)[0]

    def outcome(self, name: str) -> dict:
        return self._finish(name)[1]

    def fork(self, name: str, position: int, fault: Fault) -> Branch:
        """A new branch: ``name``'s faults up to ``position`` plus ``fault`` at ``position``."""
        new_name = f"b{len(self.branches)}"
        branch = self.branches[name].fork(new_name, position, fault)
        self.branches[new_name] = branch
        self.labels[new_name] = f"{fault.describe()} at step {position} (from {name})"
        return branch

    def add_variant(self, variant: str, seed: int) -> Branch:
        name = f"{variant}" if variant not in self.branches else f"{variant}-{len(self.branches)}"
        self.branches[name] = Branch(name, seed, variant)
        self.labels[name] = f"variant {variant}"
        return self.branches[name]

    def to_dict(self) -> dict:
        """The saved branches (each fault with its step) and their labels, JSON-ready."""
        return {"branches": [b.to_dict() for b in self.branches.values()], "labels": dict(self.labels)}

    def load(self, saved: dict) -> None:
        """Add saved branches (``to_dict``) to this history; they re-execute from their seeds like any other."""
        for d in saved.get("branches", ()):
            b = Branch.from_dict(d)
            self.branches[b.name] = b
            self.labels[b.name] = saved.get("labels", {}).get(b.name, b.describe())
            self._ends.pop(b.name, None)

    def compare(self, a: str, b: str) -> dict:
        return diff(self.outcome(a), self.outcome(b))

    def compare_html(self, a: str, b: str) -> str:
        oa, ob = self.outcome(a), self.outcome(b)
        return diff_html(oa, ob, diff(oa, ob))
