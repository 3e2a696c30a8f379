"""One fault type for the whole lab: what goes wrong, where, and when.

Owns ``Fault`` (a frozen value: **what** -- ``kind``; **where** -- a process, a chosen in-flight
message, the next message of an API, a partition of the network, a topic partition's leadership;
**when** -- at simulated time ``at`` (a sweep's schedule), at stepper position ``step`` (a saved
branch), or on the next delivery of ``api`` (crash the broker at ``side`` of it)), its JSON form
(``to_dict`` / ``from_dict``, ``schedule_to_json`` / ``schedule_from_json``), ``describe()`` in plain
words, and ``apply(lab, hooks)``, which performs it through the lab's public fault methods (``crash``,
``restart``, ``pause``, ``partition``, ``heal``, ``drop_message`` / ``drop_next`` ..., ``move_leader``).
The stepper, the sweep's nemesis and the explorer all apply this one type.

What happens later (a broker back after ``ms``, a partition healed after ``ms``, a crash armed for the
next ``api`` delivery) and what only a workload's runtime understands (kill or stall a client
*process*, which may stand for several client nodes) go through ``FaultHooks``; ``KernelHooks`` is
the plain one (kernel timers of a process named "faults"), the sweep's ``Nemesis`` is another.
The lab is duck-typed: this module imports nothing of txnlab above the kernel and the protocol.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Optional

from ..protocol.errors import Errors

KINDS = ("crash", "shutdown", "restart", "blackout", "kill", "pause", "zombie", "partition", "isolate", "heal",
         "move-leader", "move-leaders", "drop", "duplicate", "delay")
MESSAGE_KINDS = ("drop", "duplicate", "delay")
PROCESS_KINDS = ("kill", "zombie")          # a workload's client process: only its runtime knows them


@dataclass(frozen=True)
class Fault:
    """One fault.  Fields are what (``kind``), where (``node``, ``others``, ``msg_id``, ``api`` +
    ``response``, ``side``, ``topic`` + ``partition``), how (``ms``, ``clean``) and when (``at``, ``step``).

    kinds: ``crash`` (``node`` crashes -- cleanly with ``clean`` -- and, with ``ms``, restarts ``ms`` later;
    with ``api`` + ``side`` instead of ``node``: the broker at that end of the next ``api`` delivery),
    ``shutdown`` (broker ``node`` is stopped as an operator stops it: a controlled shutdown first, see
    ``Cluster.shutdown``; with ``ms``, it restarts ``ms`` after it has gone down), ``restart``, ``blackout`` (every broker goes down in turn, ``node`` first, ``ms`` apart), ``kill``
    (client process ``node`` crashes; its supervisor starts a new instance), ``pause`` (``node`` freezes for
    ``ms``), ``zombie`` (client process ``node`` stalls for ``ms`` while a replacement starts), ``partition``
    (``node`` and ``others`` cannot reach each other; healed after ``ms`` if given), ``isolate`` (``node`` from
    everyone, or from ``others``), ``heal``, ``move-leader`` (broker ``node`` takes over ``topic``-``partition``),
    ``move-leaders`` (every partition broker ``node`` leads moves away), ``drop`` / ``duplicate`` / ``delay``
    (message ``msg_id``, or the next ``api`` request -- response with ``response`` -- ``delay`` by ``ms``).
    """

    kind: str
    node: str = ""
    others: tuple = ()
    msg_id: Optional[int] = None
    api: str = ""
    response: bool = False
    side: str = ""
    topic: str = ""
    partition: int = 0
    ms: int = 0
    clean: bool = False
    at: Optional[int] = None
    step: Optional[int] = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault {self.kind!r}; kinds: {', '.join(KINDS)}")
        if not isinstance(self.others, tuple):
            object.__setattr__(self, "others", tuple(self.others))

    # -------------------------------------------------------------- when
    def at_step(self, step: Optional[int]) -> "Fault":
        return replace(self, step=step)

    def at_time(self, at: Optional[int]) -> "Fault":
        return replace(self, at=at)

    @property
    def on_next_message(self) -> bool:
        """Armed for the next delivery of ``api`` rather than applied at once."""
        return self.kind == "crash" and bool(self.api) and not self.node

    # -------------------------------------------------------------- words
    def describe(self) -> str:
        """Plain words; a scheduled fault starts with its time (``t=300ms ...``), a saved one ends with its step."""
        when = "" if self.at is None else f"t={self.at}ms "
        text = when + self._what()
        return text if self.step is None else f"{text} at step {self.step}"

    def _what(self) -> str:
        k, ms, timed = self.kind, self.ms, self.at is not None
        if k == "crash":
            if self.on_next_message:
                who = "sender" if self.side == "src" else "receiver"
                return f"the {who} of the next {self.api} crashes, back after {ms}ms"
            verb = "shuts down cleanly" if self.clean else "crashes"
            return f"{self.node} {verb}, back after {ms}ms" if ms or timed else \
                f"{'shut down' if self.clean else 'crash'} {self.node}"
        if k == "shutdown":
            return f"{self.node} is shut down (controlled shutdown)" + (f", back {ms}ms after it exits" if ms else "")
        if k == "blackout":
            return (f"every broker goes down in turn, {self.node} first, {ms}ms apart; they "
                    f"come back in the same order")
        if k == "kill":
            return f"client process {self.node} is killed (a new instance starts)"
        if k == "pause":
            return f"client process {self.node} freezes for {ms}ms" if timed else f"pause {self.node} for {ms}ms"
        if k == "zombie":
            return f"client process {self.node} stalls for {ms}ms while a replacement starts"
        if k == "partition":
            if timed:
                return f"network partition {self.node} <-/-> {', '.join(self.others)} for {ms}ms"
            return f"partition {self.node} from {', '.join(self.others)}" + (f" for {ms}ms" if ms else "")
        if k == "isolate":
            return f"isolate {self.node}" + (f" for {ms}ms" if ms else "")
        if k == "heal":
            return "heal the network"
        if k == "restart":
            return f"restart {self.node}"
        if k == "move-leaders":
            return (f"an operator moves every partition led by {self.node} to another in-sync "
                    f"replica (preferred leader elections)")
        if k == "move-leader":
            return f"move the leadership of {self.topic}-{self.partition} to {self.node}"
        if self.msg_id is not None:
            return f"delay message #{self.msg_id} by {ms}ms" if k == "delay" else f"{k} message #{self.msg_id}"
        what = f"{self.api} {'response' if self.response else 'request'}"
        return f"{k} the next {what}" + (f" by {ms}ms" if k == "delay" else "")

    # --------------------------------------------------------------- JSON
    def to_dict(self) -> dict:
        """The fields that differ from their defaults (``kind`` always)."""
        out: dict = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "kind" or v != f.default:
                out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Fault":
        d = dict(d)
        if d.get("kind") == "crash-on":                  # schedules printed before the one fault type
            d["kind"] = "crash"
        if d.get("kind") == "crash-clean":
            d["kind"], d["clean"] = "crash", True
        if "target" in d:
            d["node"] = d.pop("target")
        if "other" in d:
            d["others"] = [d.pop("other")]
        if d.get("kind") == "move-leader" and "topic" not in d and len(d.get("others", ())) == 2:
            d["topic"], d["partition"] = d.pop("others")
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown fault field(s) {sorted(unknown)}; fields: {sorted(known)}")
        if "others" in d:
            d["others"] = tuple(d["others"])
        return cls(**d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "Fault":
        return cls.from_dict(json.loads(text))

    # -------------------------------------------------------------- apply
    def apply(self, lab: Any, hooks: Optional["FaultHooks"] = None) -> bool:
        """Perform the fault now on ``lab`` (a ``Cluster`` or any ``Lab``).  Returns False when there was
        nothing to do (a crash of a process that is already down, a partition from nobody)."""
        hooks = hooks if hooks is not None else KernelHooks(lab)
        return _APPLY[self.kind](self, lab, hooks)


# ----------------------------------------------------------------------------- hooks
class FaultHooks:
    """What a fault needs beyond the lab's own methods: later steps, armed triggers, client processes."""

    def after(self, delay_ms: int, what: str, fn: Callable[[], None]) -> None:
        raise NotImplementedError

    def arm(self, fault: Fault) -> None:
        """Keep ``fault`` until a delivery matches it; then call ``fire_armed(lab, self, fault, tev)``."""
        raise NotImplementedError

    def processes(self) -> set:
        """The client processes these hooks can kill or stall (a workload's, by name)."""
        return set()

    def kill(self, process: str) -> bool:
        raise ValueError(f"{process!r} is a workload's client process: only a simulation runtime can kill it")

    def stall(self, process: str, ms: int, replace: bool) -> bool:
        raise ValueError(f"{process!r} is a workload's client process: only a simulation runtime can stall it")


class KernelHooks(FaultHooks):
    """Plain hooks: later steps are background timers of a process named ``faults``; armed faults watch the trace."""

    def __init__(self, lab: Any, name: str = "faults") -> None:
        self.lab = lab
        self.kernel = lab.kernel
        self.name = name
        self.armed: list = []
        self.timers: list = []

    def after(self, delay_ms: int, what: str, fn: Callable[[], None]) -> None:
        self.timers.append(self.kernel.schedule(max(0, delay_ms), "timer", self.name, f"{self.name}: {what}",
                                                fn=fn, background=True))

    def arm(self, fault: Fault) -> None:
        if not self.armed:
            self.kernel.observers.append(self.observe)
        self.armed.append(fault)

    def observe(self, tev) -> None:
        if self.armed and tev.kind == "deliver" and not tev.is_response:
            fire_armed(self.lab, self, self.armed, tev)


def fire_armed(lab: Any, hooks: FaultHooks, armed: list, tev) -> None:
    """A request was delivered: the first armed fault for its API crashes the broker at its ``side``
    (then it is disarmed); a matching delivery whose process there is not a broker leaves it armed."""
    for f in armed:
        if f.api == tev.api:
            victim = tev.src if f.side == "src" else tev.dst
            if victim.startswith("broker-"):
                armed.remove(f)
                hooks.after(0, f"crash {victim} (after {f.api})", lambda: _crash(lab, hooks, victim, f.ms))
            return


# ----------------------------------------------------------------------------- kinds
def _alive(lab, name: str) -> bool:
    node = lab.kernel.nodes.get(name)
    return node is not None and node.alive


def _crash(lab, hooks: FaultHooks, name: str, down_ms: int, clean: bool = False) -> bool:
    if not _alive(lab, name):
        return False
    lab.crash(name, clean=clean)
    if down_ms:
        hooks.after(down_ms, f"restart {name}", lambda: _restart_if_down(lab, name))
    return True


def _restart_if_down(lab, name: str) -> None:
    node = lab.kernel.nodes.get(name)
    if node is not None and not node.alive:
        lab.restart(name)


def _apply_crash(f: Fault, lab, hooks: FaultHooks) -> bool:
    if f.on_next_message:
        hooks.arm(f)
        return True
    return _crash(lab, hooks, f.node, f.ms, f.clean)


def _apply_shutdown(f: Fault, lab, hooks: FaultHooks) -> bool:
    node = lab.kernel.nodes.get(f.node)
    if node is None or not node.alive or getattr(node, "lifecycle_state", None) in ("PENDING_CONTROLLED_SHUTDOWN",
                                                                                      "SHUTTING_DOWN"):
        return False
    name = f.node
    back = (lambda: hooks.after(f.ms, f"restart {name}", lambda: _restart_if_down(lab, name))) if f.ms else None
    lab.shutdown(name, then=back)
    return True


def _apply_restart(f: Fault, lab, hooks: FaultHooks) -> bool:
    lab.restart(f.node)
    return True


def _broker_names(lab) -> list:
    return sorted(lab.broker(b).name for b in lab.brokers)


def _apply_blackout(f: Fault, lab, hooks: FaultHooks) -> bool:
    """The first broker goes down; the others follow ``ms`` later (a rolling power failure); they come back
    in the order they failed, so the first one back has missed everything written meanwhile."""
    names = _broker_names(lab)
    i = names.index(f.node) if f.node in names else 0
    order = names[i:] + names[:i]
    gap = f.ms
    # the first is fenced (out of every ISR) before the others fail, and is back alone for a while:
    # the others stay down until the controller has noticed (broker.session.timeout.ms) they are gone
    _crash(lab, hooks, order[0], gap + 1_500)
    for j, name in enumerate(order[1:], start=1):
        hooks.after(gap + 100 * j, f"{name} goes down (blackout)",
                    lambda n=name, j=j: _crash(lab, hooks, n, 5_000 + 900 * j))
    return True


def _apply_kill(f: Fault, lab, hooks: FaultHooks) -> bool:
    return hooks.kill(f.node)


def _apply_pause(f: Fault, lab, hooks: FaultHooks) -> bool:
    if f.node in hooks.processes() or f.node not in lab.kernel.nodes:
        return hooks.stall(f.node, f.ms, replace=False)
    lab.pause(f.node, f.ms)
    return True


def _apply_zombie(f: Fault, lab, hooks: FaultHooks) -> bool:
    return hooks.stall(f.node, f.ms, replace=True)


def _resolve(lab, names) -> list:
    """Process names: a name the kernel knows, or every node of a client process (``copier-0`` ->
    ``copier-0.1``, ``copier-0.1-c`` ...)."""
    nodes = lab.kernel.nodes
    out: list = []
    for n in names:
        if n in nodes or n == "controller":
            out.append(n)
        else:
            out += [m for m in nodes if m.startswith(n + ".")]
    return out


def _cut(f: Fault, lab, hooks: FaultHooks, others: list) -> bool:
    if not others:
        return False
    lab.partition([f.node], others)
    if f.ms:
        far = ", ".join(f.others) if f.others else "every other process"
        hooks.after(f.ms, f"heal {f.node} <-> {far}", lambda: [lab.heal_between(f.node, o) for o in others])
    return True


def _apply_partition(f: Fault, lab, hooks: FaultHooks) -> bool:
    return _cut(f, lab, hooks, _resolve(lab, f.others))


def _apply_isolate(f: Fault, lab, hooks: FaultHooks) -> bool:
    others = _resolve(lab, f.others) if f.others else [n for n in lab.kernel.nodes if n != f.node]
    return _cut(f, lab, hooks, others)


def _apply_heal(f: Fault, lab, hooks: FaultHooks) -> bool:
    lab.heal()
    return True


def _apply_move_leader(f: Fault, lab, hooks: FaultHooks) -> bool:
    lab.move_leader(f.topic, int(f.partition), int(f.node.rsplit("-", 1)[1]))
    return True


def _apply_move_leaders(f: Fault, lab, hooks: FaultHooks) -> bool:
    """Every partition ``node`` leads (coordinators' internal partitions too) moves to its first other
    alive in-sync replica; one that has none stays."""
    ctl = lab.controller
    bid = int(f.node.rsplit("-", 1)[1])
    for (topic, part), s in sorted(ctl.states.items()):
        if s.leader == bid:
            to = next((r for r in s.isr if ctl.leader_move_error((topic, part), r) == Errors.NONE), None)
            if to is not None:
                lab.move_leader(topic, part, to)
    return True


def _apply_message(f: Fault, lab, hooks: FaultHooks) -> bool:
    k = f.kind
    if f.msg_id is not None:
        if k == "drop":
            lab.drop_message(f.msg_id)
        elif k == "delay":
            lab.delay_message(f.msg_id, f.ms)
        else:
            lab.duplicate_message(f.msg_id)
    elif k == "drop":
        lab.drop_next(f.api, response=f.response)
    elif k == "duplicate":
        lab.duplicate_next(f.api, response=f.response)
    else:
        lab.delay_next(f.api, f.ms, response=f.response)
    return True


_APPLY = {"crash": _apply_crash, "shutdown": _apply_shutdown, "restart": _apply_restart, "blackout": _apply_blackout,
          "kill": _apply_kill, "pause": _apply_pause, "zombie": _apply_zombie, "partition": _apply_partition,
          "isolate": _apply_isolate, "heal": _apply_heal, "move-leader": _apply_move_leader,
          "move-leaders": _apply_move_leaders, "drop": _apply_message, "duplicate": _apply_message,
          "delay": _apply_message}


# ----------------------------------------------------------------------------- schedules
def schedule_to_json(schedule) -> str:
    return json.dumps([f.to_dict() for f in schedule], separators=(",", ":"))


def schedule_from_json(text: str) -> list:
    return [Fault.from_dict(d) for d in json.loads(text)]


__all__ = ["Fault", "FaultHooks", "KernelHooks", "KINDS", "fire_armed", "schedule_to_json", "schedule_from_json"]
