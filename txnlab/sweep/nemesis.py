"""Fault schedules for simulation sweeps: what goes wrong, when, drawn from a seed; and the nemesis that applies them.

Owns ``Fault`` (one fault: a time in simulated ms and what happens), ``plan()``
(the schedule of a seed for a fault set: none | brokers | clients | network |
all), ``Nemesis`` (applies a schedule to a running cluster as kernel timers, so a
fault lands at the same simulated moment on every replay; "crash-on" faults wait
for a message of a given API, e.g. crash the transaction coordinator just after it
sends its markers), and ``minimize()`` (delta debugging over a failing schedule).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from random import Random
from typing import Callable

from ..protocol.errors import Errors

FAULT_SETS = ("none", "brokers", "clients", "network", "all")

# APIs a network fault may hit (requests between clients and brokers, and the coordinator's markers),
# weighted towards the messages exactly-once depends on.
NETWORK_APIS = ("Produce", "Produce", "Produce", "EndTxn", "EndTxn", "WriteTxnMarkers", "WriteTxnMarkers",
                "TxnOffsetCommit", "AddPartitionsToTxn", "AddOffsetsToTxn", "Fetch", "InitProducerId",
                "FindCoordinator", "OffsetFetch", "Heartbeat", "JoinGroup", "SyncGroup")
# (API, side): crash the broker at that end just after the message is delivered.
CRASH_ON = (("WriteTxnMarkers", "src"), ("WriteTxnMarkers", "src"), ("WriteTxnMarkers", "dst"), ("EndTxn", "dst"),
            ("Produce", "dst"), ("TxnOffsetCommit", "dst"), ("AddPartitionsToTxn", "dst"))


@dataclass(frozen=True)
class Fault:
    """One fault.  ``at`` is simulated ms from the start of the workload.

    kinds: ``crash`` (broker ``target`` crashes, clean or not, and restarts ``ms`` later),
    ``crash-on`` (arm at ``at``; the broker at ``side`` of the next ``api`` message crashes, back ``ms`` later),
    ``kill`` (client process ``target`` crashes; its supervisor starts a new instance),
    ``pause`` (client process ``target`` freezes for ``ms``), ``zombie`` (``target`` stalls for ``ms`` and
    a replacement instance starts at once), ``drop`` / ``duplicate`` (the next ``api`` request or response),
    ``delay`` (the next ``api`` message arrives ``ms`` late), ``partition`` (``target`` and ``other`` cannot
    reach each other for ``ms``).
    """

    at: int
    kind: str
    target: str = ""
    ms: int = 0
    api: str = ""
    side: str = ""
    response: bool = False
    clean: bool = False
    other: str = ""

    def describe(self) -> str:
        k = self.kind
        if k == "crash":
            return f"t={self.at}ms {self.target} {'shuts down cleanly' if self.clean else 'crashes'}, back after {self.ms}ms"
        if k == "blackout":
            return (f"t={self.at}ms every broker goes down in turn, {self.target} first, {self.ms}ms apart; they "
                    f"come back in the same order")
        if k == "crash-on":
            who = "sender" if self.side == "src" else "receiver"
            return f"t={self.at}ms the {who} of the next {self.api} crashes, back after {self.ms}ms"
        if k == "kill":
            return f"t={self.at}ms client process {self.target} is killed (a new instance starts)"
        if k == "pause":
            return f"t={self.at}ms client process {self.target} freezes for {self.ms}ms"
        if k == "zombie":
            return f"t={self.at}ms client process {self.target} stalls for {self.ms}ms while a replacement starts"
        if k == "partition":
            return f"t={self.at}ms network partition {self.target} <-/-> {self.other} for {self.ms}ms"
        if k == "move-leaders":
            return (f"t={self.at}ms an operator moves every partition led by {self.target} to another in-sync "
                    f"replica (preferred leader elections)")
        what = f"{self.api} {'response' if self.response else 'request'}"
        extra = f" by {self.ms}ms" if k == "delay" else ""
        return f"t={self.at}ms {k} the next {what}{extra}"

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in ("", 0, False) or k in ("at", "kind")}

    @classmethod
    def from_dict(cls, d: dict) -> "Fault":
        return cls(**d)


def schedule_to_json(schedule: list) -> str:
    return json.dumps([f.to_dict() for f in schedule], separators=(",", ":"))


def schedule_from_json(text: str) -> list:
    return [Fault.from_dict(d) for d in json.loads(text)]


def plan(seed: int, faults: str, brokers: list, clients: list, horizon_ms: int) -> list:
    """The fault schedule of ``seed``: a few faults of the chosen set at times within ``horizon_ms``."""
    if faults not in FAULT_SETS:
        raise ValueError(f"unknown fault set {faults!r}; choose one of {', '.join(FAULT_SETS)}")
    if faults == "none":
        return []
    rng = Random(f"txnlab-faults-{seed}-{faults}")
    makers = {"brokers": _broker_fault, "clients": _client_fault, "network": _network_fault}
    kinds = list(makers) if faults == "all" else [faults]
    if not clients:
        kinds = [k for k in kinds if k != "clients"] or ["brokers"]
    n = rng.randint(1, 4)
    out = []
    for _ in range(n):
        kind = kinds[rng.randrange(len(kinds))]
        at = rng.randrange(horizon_ms)
        out.append(makers[kind](rng, at, brokers, clients))
    return sorted(out, key=lambda f: (f.at, f.kind, f.target, f.api))


def _broker_fault(rng: Random, at: int, brokers: list, clients: list) -> Fault:
    down = rng.choice((300, 1_000, 3_000, 12_000, 30_000))
    r = rng.random()
    if r < 0.25:
        return Fault(at, "blackout", brokers[rng.randrange(len(brokers))], ms=rng.choice((4_000, 8_000)))
    if r < 0.6:
        api, side = CRASH_ON[rng.randrange(len(CRASH_ON))]
        return Fault(at, "crash-on", ms=down, api=api, side=side)
    target = brokers[rng.randrange(len(brokers))]
    u = rng.random()
    if r >= 0.85:
        return Fault(at, "move-leaders", target)
    return Fault(at, "crash", target, ms=down, clean=u < 0.25)


def _client_fault(rng: Random, at: int, brokers: list, clients: list) -> Fault:
    target = clients[rng.randrange(len(clients))]
    r = rng.random()
    if r < 0.5:
        return Fault(at, "kill", target)
    return Fault(at, "zombie" if r < 0.8 else "pause", target, ms=rng.choice((500, 3_000, 15_000)))


def _network_fault(rng: Random, at: int, brokers: list, clients: list) -> Fault:
    r = rng.random()
    if r < 0.15:
        a = brokers[rng.randrange(len(brokers))]
        others = [b for b in brokers if b != a] + ["controller"] + list(clients)
        return Fault(at, "partition", a, ms=rng.choice((1_000, 5_000, 20_000)), other=others[rng.randrange(len(others))])
    api = NETWORK_APIS[rng.randrange(len(NETWORK_APIS))]
    response = rng.random() < 0.5
    if r < 0.45:
        return Fault(at, "drop", api=api, response=response)
    if r < 0.75:
        return Fault(at, "duplicate", api=api, response=response)
    return Fault(at, "delay", api=api, response=response, ms=rng.choice((50, 2_000, 6_000, 10_000)))


class Nemesis:
    """Applies a fault schedule to a cluster (and to the workload's client processes)."""

    def __init__(self, cluster, runtime, schedule: list) -> None:
        self.cluster = cluster
        self.runtime = runtime
        self.schedule = list(schedule)
        self.kernel = cluster.kernel
        self._armed: list = []
        self._timers: list = []
        self._down: set = set()
        self._cuts: list = []
        self.kernel.observers.append(self._observe)

    def start(self) -> None:
        t0 = self.kernel.now
        for f in self.schedule:
            self._at(t0 + f.at - self.kernel.now, f"nemesis: {f.describe()}", lambda f=f: self._apply(f))

    def _at(self, delay: int, name: str, fn: Callable[[], None]) -> None:
        self._timers.append(self.kernel.schedule(max(0, delay), "timer", "nemesis", name, fn=fn, background=True))

    # --------------------------------------------------------------- apply
    def _apply(self, f: Fault) -> None:
        c, rt = self.cluster, self.runtime
        k = f.kind
        if k == "crash":
            self._crash_broker(f.target, f.ms, f.clean)
        elif k == "crash-on":
            self._armed.append(f)
        elif k == "blackout":
            self._blackout(f.target, f.ms)
        elif k == "kill":
            rt.crash(f.target)
        elif k in ("pause", "zombie"):
            rt.stall(f.target, f.ms, replace=k == "zombie")
        elif k == "partition":
            if f.other in self.kernel.nodes or f.other == "controller":
                c.partition([f.target], [f.other])
                pair = (f.target, f.other)
                self._cuts.append(pair)
                self._at(f.ms, f"nemesis: heal {f.target} <-> {f.other}", lambda: self._heal(pair))
            else:
                names = [n for n in self.kernel.nodes if n.startswith(f.other + ".")]
                if names:
                    c.partition([f.target], names)
                    for n in names:
                        self._cuts.append((f.target, n))
                    self._at(f.ms, f"nemesis: heal {f.target} <-> {f.other}",
                             lambda: [self._heal((f.target, n)) for n in names])
        elif k == "move-leaders":
            self._move_leaders(f.target)
        elif k == "drop":
            c.drop_next(f.api, response=f.response)
        elif k == "duplicate":
            c.duplicate_next(f.api, response=f.response)
        elif k == "delay":
            c.delay_next(f.api, f.ms, response=f.response)

    def _crash_broker(self, name: str, down_ms: int, clean: bool = False) -> None:
        node = self.kernel.nodes.get(name)
        if node is None or not node.alive:
            return
        self.cluster.crash(name, clean=clean)
        self._down.add(name)
        self._at(down_ms, f"nemesis: restart {name}", lambda: self._restart(name))

    def _move_leaders(self, name: str) -> None:
        """Every partition ``name`` leads (coordinators' internal partitions too) moves to its first other
        alive in-sync replica; one that has none stays."""
        c = self.cluster
        bid = int(name.rsplit("-", 1)[1])
        for (topic, part), s in sorted(c.controller.states.items()):
            if s.leader == bid:
                to = next((r for r in s.isr if c.controller.leader_move_error((topic, part), r) == Errors.NONE), None)
                if to is not None:
                    c.move_leader(topic, part, to)

    def _blackout(self, first: str, gap: int) -> None:
        """The first broker goes down; the others follow ``gap`` ms later (a rolling power failure); they come
        back in the order they failed, so the first one back has missed everything written meanwhile."""
        names = sorted(self.cluster.broker(b).name for b in self.cluster.brokers)
        i = names.index(first) if first in names else 0
        order = names[i:] + names[:i]
        # the first is fenced (out of every ISR) before the others fail, and is back alone for a while:
        # the others stay down until the controller has noticed (broker.session.timeout.ms) they are gone
        self._crash_broker(order[0], gap + 1_500)
        for j, name in enumerate(order[1:], start=1):
            self._at(gap + 100 * j, f"nemesis: {name} goes down (blackout)",
                     lambda n=name, j=j: self._crash_broker(n, 5_000 + 900 * j))

    def _restart(self, name: str) -> None:
        node = self.kernel.nodes.get(name)
        if node is not None and not node.alive:
            self.cluster.restart(name)
        self._down.discard(name)

    def _heal(self, pair: tuple) -> None:
        if pair in self._cuts:
            self._cuts.remove(pair)
        net = self.kernel.network
        a, b = pair
        self.kernel.begin_step("fault", "network", f"network heals between {a} and {b}")
        net.cuts.discard((a, b))
        net.cuts.discard((b, a))

    def _observe(self, tev) -> None:
        if not self._armed or tev.kind != "deliver" or tev.is_response:
            return
        for f in self._armed:
            if f.api == tev.api:
                victim = tev.src if f.side == "src" else tev.dst
                if victim.startswith("broker-"):
                    self._armed.remove(f)
                    self._at(0, f"nemesis: crash {victim} (after {f.api})",
                             lambda v=victim, f=f: self._crash_broker(v, f.ms))
                return

    # ---------------------------------------------------------------- heal
    def heal_all(self) -> None:
        """End of the run: no more faults; restart every broker, heal the network, forget armed rules."""
        for ev in self._timers:
            self.kernel.cancel(ev)
        self._armed.clear()
        net = self.kernel.network
        net.rules.clear()
        if net.cuts:
            self.cluster.heal()
        for b in self.cluster.brokers:
            if not self.cluster.broker(b).alive:
                self.cluster.restart(b)
        if self._observe in self.kernel.observers:
            self.kernel.observers.remove(self._observe)


def minimize(schedule: list, fails: Callable[[list], bool], budget: int = 40) -> list:
    """Delta debugging (ddmin): a smallest sub-schedule that still fails, within ``budget`` runs."""
    current = list(schedule)
    n = 2
    runs = 0
    while len(current) >= 2 and runs < budget:
        chunk = max(1, len(current) // n)
        subsets = [current[i:i + chunk] for i in range(0, len(current), chunk)]
        reduced = False
        for i, sub in enumerate(subsets):
            complement = [f for j, s in enumerate(subsets) if j != i for f in s]
            for candidate in (sub, complement):
                if not candidate or len(candidate) == len(current):
                    continue
                runs += 1
                if fails(candidate):
                    current = candidate
                    n = max(2, n - 1) if candidate is complement else 2
                    reduced = True
                    break
                if runs >= budget:
                    break
            if reduced or runs >= budget:
                break
        if not reduced:
            if n >= len(current):
                break
            n = min(len(current), n * 2)
    if len(current) == 1 and runs < budget and fails([]):
        return []
    return current
