"""Fault schedules for simulation sweeps: what goes wrong, when, drawn from a seed; and the nemesis that applies them.

Owns ``plan()`` (the schedule of a seed for a fault set: none | brokers | clients |
network | all: a list of the kernel's ``Fault`` values, each with its time ``at``),
``Nemesis`` (applies a schedule to a running cluster as kernel timers, so a fault
lands at the same simulated moment on every replay; a crash "on the next ``api``"
waits for such a message, e.g. crash the transaction coordinator just after it
sends its markers; kill/stall of a workload's client process goes to the runtime)
and ``minimize()`` (delta debugging over a failing schedule).
"""
from __future__ import annotations

from random import Random
from typing import Callable

from ..kernel.faults import Fault, FaultHooks, fire_armed, schedule_from_json, schedule_to_json

FAULT_SETS = ("none", "brokers", "clients", "network", "all")

# APIs a network fault may hit (requests between clients and brokers, and the coordinator's markers),
# weighted towards the messages exactly-once depends on.
NETWORK_APIS = ("Produce", "Produce", "Produce", "EndTxn", "EndTxn", "WriteTxnMarkers", "WriteTxnMarkers",
                "TxnOffsetCommit", "AddPartitionsToTxn", "AddOffsetsToTxn", "Fetch", "InitProducerId",
                "FindCoordinator", "OffsetFetch", "Heartbeat", "JoinGroup", "SyncGroup")
# (API, side): crash the broker at that end just after the message is delivered.
CRASH_ON = (("WriteTxnMarkers", "src"), ("WriteTxnMarkers", "src"), ("WriteTxnMarkers", "dst"), ("EndTxn", "dst"),
            ("Produce", "dst"), ("TxnOffsetCommit", "dst"), ("AddPartitionsToTxn", "dst"))


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
    return sorted(out, key=_order)


def _order(f: Fault) -> tuple:
    # the order plans have always had (a crash on the next message sorted as "crash-on")
    return f.at, "crash-on" if f.on_next_message else f.kind, f.node, f.api


def _broker_fault(rng: Random, at: int, brokers: list, clients: list) -> Fault:
    down = rng.choice((300, 1_000, 3_000, 12_000, 30_000))
    r = rng.random()
    if r < 0.25:
        return Fault("blackout", brokers[rng.randrange(len(brokers))], ms=rng.choice((4_000, 8_000)), at=at)
    if r < 0.6:
        api, side = CRASH_ON[rng.randrange(len(CRASH_ON))]
        return Fault("crash", ms=down, api=api, side=side, at=at)
    target = brokers[rng.randrange(len(brokers))]
    u = rng.random()
    if r >= 0.85:
        return Fault("move-leaders", target, at=at)
    if u < 0.125:
        return Fault("shutdown", target, ms=down, at=at)        # as an operator stops it: controlled shutdown
    return Fault("crash", target, ms=down, clean=u < 0.25, at=at)


def _client_fault(rng: Random, at: int, brokers: list, clients: list) -> Fault:
    target = clients[rng.randrange(len(clients))]
    r = rng.random()
    if r < 0.5:
        return Fault("kill", target, at=at)
    return Fault("zombie" if r < 0.8 else "pause", target, ms=rng.choice((500, 3_000, 15_000)), at=at)


def _network_fault(rng: Random, at: int, brokers: list, clients: list) -> Fault:
    r = rng.random()
    if r < 0.15:
        a = brokers[rng.randrange(len(brokers))]
        others = [b for b in brokers if b != a] + ["controller"] + list(clients)
        ms = rng.choice((1_000, 5_000, 20_000))
        return Fault("partition", a, others=(others[rng.randrange(len(others))],), ms=ms, at=at)
    api = NETWORK_APIS[rng.randrange(len(NETWORK_APIS))]
    response = rng.random() < 0.5
    if r < 0.45:
        return Fault("drop", api=api, response=response, at=at)
    if r < 0.75:
        return Fault("duplicate", api=api, response=response, at=at)
    return Fault("delay", api=api, response=response, ms=rng.choice((50, 2_000, 6_000, 10_000)), at=at)


class Nemesis(FaultHooks):
    """Applies a fault schedule to a cluster (and to the workload's client processes, through the runtime).

    Each fault is a background timer of a process named "nemesis" at its time ``at``; ``Fault.apply`` does
    the rest, with this object as its hooks (later steps are "nemesis" timers too)."""

    def __init__(self, cluster, runtime, schedule: list) -> None:
        self.cluster = cluster
        self.runtime = runtime
        self.schedule = list(schedule)
        self.kernel = cluster.kernel
        self._armed: list = []
        self._timers: list = []
        # the kernel calls _observe at every step only while a fault is armed (it has nothing to do otherwise)
        self._watching = False

    def start(self) -> None:
        t0 = self.kernel.now
        for f in self.schedule:
            self._at(t0 + f.at - self.kernel.now, f"nemesis: {f.describe()}", lambda f=f: f.apply(self.cluster, self))

    def _at(self, delay: int, name: str, fn: Callable[[], None]) -> None:
        self._timers.append(self.kernel.schedule(max(0, delay), "timer", "nemesis", name, fn=lambda: self._fire(fn),
                                                 background=True))

    def _fire(self, fn: Callable[[], None]) -> None:
        if self._watching and not self._armed:
            # the last armed fault fired (fire_armed, from inside the kernel's loop over its observers, where
            # _observe cannot leave the list): stop watching now, in a timer of ours, before anything else
            self.kernel.observers.remove(self._observe)
            self._watching = False
        fn()

    # ----------------------------------------------------------- FaultHooks
    def after(self, delay_ms: int, what: str, fn: Callable[[], None]) -> None:
        self._at(delay_ms, f"nemesis: {what}", fn)

    def arm(self, fault: Fault) -> None:
        self._armed.append(fault)
        if not self._watching:
            self.kernel.observers.append(self._observe)
            self._watching = True

    def processes(self) -> set:
        return {p.name for p in self.runtime.procs} if self.runtime is not None else set()

    def kill(self, process: str) -> bool:
        return self.runtime.crash(process)

    def stall(self, process: str, ms: int, replace: bool) -> bool:
        return self.runtime.stall(process, ms, replace=replace)

    def _observe(self, tev) -> None:
        if not self._armed or tev.kind != "deliver" or tev.is_response:
            return
        fire_armed(self.cluster, self, self._armed, tev)

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
        self._watching = False


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


__all__ = ["FAULT_SETS", "Fault", "Nemesis", "plan", "minimize", "schedule_to_json", "schedule_from_json"]
