"""Exhaustive exploration of a small scenario: every interleaving, every placement of up to two faults.

The search itself (``Explorer``, ``ExploreRun``, ``replay``); the command line is ``explore.py``
(``python -m txnlab.sweep.explore``), the work side by side ``explore_parallel.py``.

The scenarios (``explore_scenarios.py``; DSLabs-style, small enough to enumerate) run on one broker, or
three (``--brokers 3``: every topic replicated three times with min.insync.replicas=2, replica fetches are
choice points too, and a read_committed reader of the output polls while the copier works).  In the plain
one ("copier") the input topic holds two committed records; a copier -- one read_committed consumer and
one transactional producer -- copies them to two output partitions in one transaction, with its consumed
offsets; an abortable error aborts and rewinds to the committed offsets; if the copier crashes, a new
instance with the same transactional.id starts over from the committed offsets.  The others add what a
mutation needs to show itself: the copier's own choice to abort ("rewind"), an aborted transaction in the
input ("aborted-input"), a group member that stalls past its session ("group"), a Produce that arrives
after its timeout ("late-produce"), every broker going down in turn ("blackout").  ``SCENARIO_OF`` names
the scenario of each mutation; ``--mutation all`` explores every mutation in its scenario and reports
which mutation each counterexample catches (``explore_report.py``).

Choice points are the moments where more than one thing may happen next: two
messages on different connections may arrive in either order
(``Kernel.choices()``), a fault of the scenario may strike (a message is lost or late, the copier
process crashes or stalls just before one arrives, a broker crashes just after), or the application may
choose (commit or abort).  The explorer runs the scenario again and
again, depth first over the choice lists, hashing the state it can see (logs,
watermarks, coordinator and group state, messages in flight, timers, client
states, how far the copier's script got) and pruning states it has seen.  Each
complete run ends with a final read and the history checker (the sweep's step invariants watch every
step: watermarks, reads above the HW or the LSO, KIP-447 fencing, require_stable); outcomes go into a
histogram (exactly-once, exactly-once after an aborted attempt, duplicate, loss, stuck, violation).
Reorderings are bounded (``--reorderings``, default 1: at most one delivery out of its default order
per run; -1 for no bound); faults by ``--faults``; the runs by ``--max-runs``.
A counterexample is the seed and the choice list: ``--replay`` runs it again into
the identical trace (the stepper can open it).
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from ..check.history import History
from ..client.message import TopicPartition
from ..cluster import MUTATIONS, Cluster
from ..kernel.faults import Fault, KernelHooks
from . import explore_scenarios as scenarios
from .counterexample import Counterexample
from .explore_scenarios import BAD, INPUT, SCENARIO_OF, Scenario  # noqa: F401 (INPUT: re-exported)
from .invariants import StepInvariants

# Messages a fault may hit: the ones exactly-once depends on (a lost Fetch or Metadata only adds a retry).
# A lost message: these requests or their responses.  A crash of the copier: just before one of these
# responses would tell it the outcome.
DROP_REQUESTS = frozenset({"Produce", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit"})
DROP_RESPONSES = frozenset({"Produce", "EndTxn", "TxnOffsetCommit", "InitProducerId"})
CRASH_BEFORE = frozenset({"InitProducerId", "Produce", "TxnOffsetCommit", "EndTxn"})
# With three brokers: crash the broker just after one of these requests reaches it (back after BROKER_DOWN_MS).
CRASH_BROKER_AFTER = frozenset({"Produce", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit", "AddPartitionsToTxn"})
BROKER_DOWN_MS = 6_000
# A late Produce ("delay"): it arrives this long after it was sent, after the copier gave up on it (5 s).
DELAY_MS = 8_000
# A stall ("stall"): the copier stops this long, past its session timeout, just before one of these responses.
STALL_MS = scenarios.SESSION_MS + 2_000
STALL_BEFORE = frozenset({"Produce", "AddOffsetsToTxn"})
# A blackout: the other brokers follow the first one down this long after it.
BLACKOUT_GAP_MS = 8_000
_DIGITS = re.compile(r"#\d+")


class Prune(Exception):
    """The run reached a state already explored: its continuations are known."""


@dataclass
class Option:
    kind: str            # deliver | drop | crash | crash-broker | delay | stall | blackout
    index: int = 0       # into Kernel.choices()

    def describe(self, events) -> str:
        if self.kind == "crash":
            return "the copier process crashes"
        if self.kind == "stall":
            return f"the copier stalls for {STALL_MS} ms"
        m = events[self.index].msg
        if self.kind == "crash-broker":
            return f"deliver {m.api} request {m.src}->{m.dst}, then {m.dst} crashes"
        if self.kind == "blackout":
            return f"deliver {m.api} request {m.src}->{m.dst}, then {m.dst} goes down, the others {BLACKOUT_GAP_MS} ms later"
        what = f"{m.api} {'response' if m.is_response else 'request'} {m.src}->{m.dst}"
        if self.kind == "delay":
            return f"DELAY {what} by {DELAY_MS} ms"
        return f"{'deliver' if self.kind == 'deliver' else 'LOSE'} {what}"


@dataclass
class RunResult:
    choices: list
    points: list                       # (number of options, state hash) at each choice point
    outcome: str = ""
    detail: str = ""
    broken: list = field(default_factory=list)   # the invariants or anomalies that broke (names)
    pruned: bool = False
    cluster: Optional[Cluster] = field(default=None, repr=False)
    faults: list = field(default_factory=list)    # the Faults the choices applied, each with its kernel step


class _CopierHooks(KernelHooks):
    """The explorer's one client process: killing "copier" crashes its producer and consumer."""

    def __init__(self, cluster, state: dict) -> None:
        super().__init__(cluster)
        self.state = state

    def processes(self) -> set:
        return {"copier"}

    def kill(self, process: str) -> bool:
        for client in self.state["copier"]:
            if client._node.alive:
                self.lab.crash(client)
        return True

    def after(self, delay_ms: int, what: str, fn) -> None:
        # the run's end waits until every fault has played out (a crashed broker is back, a blackout over)
        self.state["quiet_at"] = max(self.state["quiet_at"], self.kernel.now + max(0, delay_ms))
        super().after(delay_ms, what, fn)

    def stall(self, process: str, ms: int, replace: bool) -> bool:
        for client in self.state["copier"]:
            if client._node.alive:
                self.lab.pause(client, ms)
        return True


class ExploreRun:
    """One run of the scenario along a choice list.  ``move(deadline)`` makes one move -- at a choice point
    the chosen option (a delivery out of order, a lost message, the copier's crash), else the next event --
    so a stepper can make the moves one Step at a time; ``driver`` makes them all (the explorer's own)."""

    def __init__(self, explorer: "Explorer", prefix: list, prune: bool = True) -> None:
        self.ex = explorer
        self.prune = prune
        self.cluster = scenarios.setup(explorer)
        self.res = RunResult(list(prefix), [])
        self.invariants = StepInvariants(self.cluster, ["in", "out"])
        self.state = {"faults": 0, "reorders": 0, "aborts": 0, "copier": None, "k": 0, "calls": (0, ""),
                      "quiet_at": 0}
        self.choosing = False
        k = self.kernel = self.cluster.kernel
        state = self.state
        k.observers.append(lambda tev: state.__setitem__("calls", (state["calls"][0] + 1, tev.text))
                           if tev.kind == "call" else None)

    def options(self, deadline):
        ex, state, k = self.ex, self.state, self.kernel
        evs = [e for e in k.choices() if (deadline is None or e.time <= deadline)
               and "controller" not in (e.msg.src, e.msg.dst)]
        can_reorder = ex.max_reorderings < 0 or state["reorders"] < ex.max_reorderings
        opts = [Option("deliver", i) for i in range(len(evs) if can_reorder else min(1, len(evs)))]
        if state["faults"] < ex.max_faults:
            faults = ex.scenario.faults
            if "drop" in faults:
                opts += [Option("drop", i) for i, e in enumerate(evs)
                         if e.msg.api in (DROP_RESPONSES if e.msg.is_response else DROP_REQUESTS)]
            if "crash" in faults and state["copier"] is not None and \
                    any(e.msg.is_response and e.msg.api in CRASH_BEFORE and e.msg.dst.startswith("copier") for e in evs):
                opts.append(Option("crash"))
            if "stall" in faults and state["copier"] is not None and \
                    any(e.msg.is_response and e.msg.api in STALL_BEFORE and e.msg.dst.startswith("copier") for e in evs):
                opts.append(Option("stall"))
            if "delay" in faults:
                opts += [Option("delay", i) for i, e in enumerate(evs)
                         if not e.msg.is_response and e.msg.api == "Produce" and e.msg.src.startswith("copier")]
            if ex.brokers > 1:
                to_broker = [(i, e) for i, e in enumerate(evs) if not e.msg.is_response and e.msg.dst.startswith("broker")]
                if "crash-broker" in faults:
                    opts += [Option("crash-broker", i) for i, e in to_broker if e.msg.api in CRASH_BROKER_AFTER]
                if "blackout" in faults:
                    opts += [Option("blackout", i) for i, e in to_broker
                             if e.msg.api == "Produce" and e.msg.src.startswith("copier")]
        return evs, opts

    def _choice_point(self, deadline) -> bool:
        nxt = self.kernel.peek_event()
        if self.choosing and nxt is not None and nxt.kind == "deliver" and not nxt.background:
            evs, opts = self.options(deadline)
            if len(opts) > 1:
                self.ex._choose(self.cluster, self.res, self.state, evs, opts, self.prune)
                return True
        return False

    def move(self, deadline: Optional[int]) -> None:
        if not self._choice_point(deadline):
            self.kernel.step(None, deadline)    # (nothing, if nothing is due by the deadline: see Execution.step)

    def driver(self, pred, timeout_ms) -> bool:
        k = self.kernel
        deadline = None if timeout_ms is None else k.now + int(timeout_ms)
        while not pred():
            if self._choice_point(deadline):
                continue
            if k.step(None, deadline) is None:      # nothing due by the deadline (as Kernel.run_until)
                if deadline is not None and deadline > k.now:
                    k.now = deadline
                return pred()
        return True

    def play(self, own_driver: bool = True) -> RunResult:
        """The copier's run and its outcome.  ``own_driver=False``: someone else (a stepper) drives."""
        k, res = self.kernel, self.res
        if own_driver:
            k.driver = self.driver
        history = History()
        self.choosing = True
        try:
            finished = scenarios.copier(self.ex, self.cluster, history, self.state, self.decide)
        except Prune:
            res.pruned = True
            return res
        finally:
            self.choosing = False
            if own_driver:
                k.driver = None
        res.outcome, res.detail, res.broken = scenarios.outcome(self.cluster, history, finished,
                                                                       lambda: self.state["quiet_at"])
        self.invariants.check(self.kernel.step_count)
        self.invariants.detach()
        inv = self.invariants.result
        if inv.violations:
            res.broken = sorted(set(inv.violations) | set(res.broken))
            if res.outcome not in BAD:
                res.outcome, res.detail = "violation", inv.summary() + "\n" + inv.explain(examples=2)
        res.cluster = self.cluster
        return res

    def decide(self, what: str, n: int) -> int:
        """A choice of the application's own (``what``, one of ``n`` ways; 0 is the usual one): a choice point."""
        return self.ex._pick(self.cluster, self.res, self.state, [what] * n, self.prune)


class Explorer:
    """Depth-first search over the choice lists of one scenario (``scenario``: a name of ``SCENARIOS``; None:
    the scenario of ``mutation`` in ``SCENARIO_OF``, "copier" without a mutation)."""

    def __init__(self, mutation: Optional[str] = None, max_faults: int = 2, seed: int = 0,
                 transaction_version: int = 0, max_reorderings: int = 1, brokers: int = 1,
                 scenario: Optional[str] = None) -> None:
        if brokers not in (1, 3):
            raise ValueError(f"brokers: the explorer's scenario has 1 or 3 brokers, got {brokers!r}")
        if mutation is not None and mutation not in MUTATIONS:
            raise ValueError(f"mutation: unknown mutation {mutation!r}; known: {', '.join(MUTATIONS)}")
        self.scenario: Scenario = scenarios.scenario(scenario or SCENARIO_OF.get(mutation, "copier"))
        if brokers not in self.scenario.brokers:
            raise ValueError(f"brokers: scenario {self.scenario.name!r} runs with "
                             f"{' or '.join(map(str, self.scenario.brokers))} brokers, got {brokers}")
        self.brokers = brokers
        self.mutation = mutation
        self.max_faults = max_faults
        self.max_reorderings = max_reorderings
        self.seed = seed
        self.transaction_version = transaction_version
        self.visited: set = set()
        self.histogram: Counter = Counter()
        self.counterexample: Optional[RunResult] = None
        self.runs = 0
        self.stack: list = []           # the prefixes left to explore (``explore``)

    # ------------------------------------------------------------- one run
    def run(self, prefix: list, prune: bool = True) -> RunResult:
        return ExploreRun(self, prefix, prune).play()

    def _pick(self, cluster, res: RunResult, state: dict, opts: list, prune: bool) -> int:
        """The choice at the next choice point: the prefix's, else 0 (a state seen before prunes the run)."""
        i = state["k"]
        state["k"] += 1
        h = self._state_hash(cluster, state, opts)
        if i < len(res.choices):
            pick = res.choices[i]
            if not 0 <= pick < len(opts):
                raise ValueError(f"choice {i} is {pick}, but that choice point has {len(opts)} options")
        else:
            if prune and h in self.visited:
                raise Prune()
            self.visited.add(h)
            pick = 0
            res.choices.append(0)
        res.points.append((len(opts), h))
        return pick

    def _choose(self, cluster, res: RunResult, state: dict, evs, opts, prune: bool) -> None:
        opt = opts[self._pick(cluster, res, state, opts, prune)]
        k = cluster.kernel
        if opt.kind == "deliver":
            state["reorders"] += opt.index > 0
            k.step(choice=opt.index)
            return
        state["faults"] += 1
        if opt.kind in ("crash-broker", "blackout"):
            dst = evs[opt.index].msg.dst
            k.step(choice=opt.index)
            fault = Fault("crash", dst, ms=BROKER_DOWN_MS) if opt.kind == "crash-broker" else \
                Fault("blackout", dst, ms=BLACKOUT_GAP_MS)
            res.faults.append(fault.at_step(k.step_count + 1))
            fault.apply(cluster, _CopierHooks(cluster, state))
            return
        msg_id = evs[opt.index].msg.id
        fault = {"drop": lambda: Fault("drop", msg_id=msg_id), "delay": lambda: Fault("delay", msg_id=msg_id, ms=DELAY_MS),
                 "crash": lambda: Fault("kill", "copier"),
                 "stall": lambda: Fault("pause", "copier", ms=STALL_MS)}[opt.kind]()
        res.faults.append(fault.at_step(k.step_count + 1))
        fault.apply(cluster, _CopierHooks(cluster, state))

    # ----------------------------------------------------------- state hash
    def _state_hash(self, cluster, state: dict, opts: list) -> str:
        k = cluster.kernel
        parts = [f"faults={state['faults']}", f"reorders={state['reorders']}", f"aborts={state['aborts']}",
                 f"options={len(opts)}" + (f" {opts[0]}" if opts and isinstance(opts[0], str) else "")]
        for b in cluster.brokers:
            br = cluster.broker(b)
            parts.append(f"broker {b} alive={br.alive}")
            for tp, log in sorted(br.logs.items()):
                if tp[0].startswith("__"):
                    continue           # the coordinators' logs: their state is hashed below
                batches = tuple((x.base_offset, x.producer_id, x.producer_epoch, x.base_sequence, x.is_control,
                                 tuple(r.value for r in x.records)) for x in log.batches)
                parts.append(f"{tp} {batches} hw={log.high_watermark} lso={log.last_stable_offset}")
        for tp, s in sorted(cluster.controller.states.items()):
            if self.brokers > 1:
                parts.append(f"{tp} leader={s.leader} isr={sorted(s.isr)} epoch={s.leader_epoch}")
        parts.append(_timeless(cluster.transaction_state("copier")))
        gs = getattr(cluster, "group_state", None)
        if gs is not None:
            parts.append(_timeless(gs("g")))
        for m in k.network.in_flight():
            parts.append(f"msg {m.src}->{m.dst} {m.api} {m.is_response} {m.describe()}")
        for e in k.pending_events():
            if e.kind == "timer" and not e.background:
                parts.append(f"timer {e.node} {_DIGITS.sub('#', e.name)}")
        for name, node in sorted(k.nodes.items()):
            parts.append(f"node {name} {node.alive} {node.incarnation} paused={max(0, node.paused_until - k.now)}")
        parts.append(f"calls={state['calls']}")
        if state["copier"] is not None:
            p, c = state["copier"]
            t = p.transaction_manager
            parts.append(f"producer {t.state.name} {t.producer_id} {t.producer_epoch} {len(p)}")
            parts.append(f"consumer {[(tp.topic, tp.partition, tp.offset) for tp in c.position([TopicPartition('in', 0)])]}"
                         if not c._node.crashed and not c._closed else "consumer gone")
        return hashlib.sha1("\n".join(parts).encode()).hexdigest()

    # ------------------------------------------------------------- explore
    def found(self):
        """The counterexample as a value the stepper opens (``Stepper.open``), or None."""
        if self.counterexample is None:
            return None
        return Counterexample.from_explorer(self, self.counterexample)

    def explore(self, max_runs: int = 4000, stack: Optional[list] = None, frontier: int = 0) -> bool:
        """Depth-first over choice lists (from ``stack``'s prefixes, the last first; by default the empty one).
        Returns False when a violation was found (kept as the counterexample).  ``frontier``: stop as soon as
        that many prefixes wait on the stack (``explore_parallel.split`` explores each as a part of its own);
        what is left to explore stays in ``self.stack``."""
        stack = self.stack = [[]] if stack is None else stack
        while stack and self.runs < max_runs and not (frontier and len(stack) >= frontier):
            prefix = stack.pop()
            res = self.run(prefix)
            self.runs += 1
            if res.pruned:
                self.histogram["pruned (state seen before)"] += 1
            else:
                self.histogram[res.outcome] += 1
                if res.outcome in BAD:
                    self.counterexample = res
                    return False
            for j in range(len(res.points) - 1, len(prefix) - 1, -1):
                n = res.points[j][0]
                for alt in range(n - 1, 0, -1):
                    stack.append(res.choices[:j] + [alt])
        return True


def _timeless(d: Optional[dict]) -> str:
    """A coordinator's description without clock readings (states reached at other times are the same)."""
    if d is None:
        return "None"
    return str(sorted((k, v) for k, v in d.items() if not k.endswith("_ms") and k != "last_transition"))


def replay(choices: list, mutation: Optional[str] = None, seed: int = 0, max_faults: int = 2,
           transaction_version: int = 0, max_reorderings: int = 1, brokers: int = 1,
           scenario: Optional[str] = None) -> RunResult:
    """Run one choice list again: the same trace, step for step (open ``result.cluster.trace``)."""
    ex = Explorer(mutation, max_faults, seed, transaction_version, max_reorderings, brokers, scenario)
    return ex.run(list(choices), prune=False)
