"""Exhaustive exploration of a small scenario: every interleaving, every placement of up to two faults.

``python -m txnlab.sweep.explore [--mutation NAME] [--faults 2] [--max-runs N] [--replay 0,2,1]``

The scenario (DSLabs-style, small enough to enumerate): one broker, or three
(``--brokers 3``: every topic replicated three times with min.insync.replicas=2,
replica fetches are choice points too, and a fault may also crash the broker a
request is delivered to, back after a few seconds); the input topic holds two
committed records; a copier -- one read_committed consumer and
one transactional producer -- copies them to two output partitions in one
transaction, with its consumed offsets; if the copier crashes, a new instance
with the same transactional.id starts over from the committed offsets.

Choice points are the moments where more than one thing may happen next: two
messages on different connections may arrive in either order
(``Kernel.choices()``), and a fault may strike (the message is lost, or the copier
process crashes just before it arrives).  The explorer runs the scenario again and
again, depth first over the choice lists, hashing the state it can see (logs,
watermarks, coordinator and group state, messages in flight, timers, client
states, how far the copier's script got) and pruning states it has seen.  Each
complete run ends with a final read and the history checker (the sweep's step invariants watch every
step: watermarks, reads above the HW or the LSO, KIP-447 fencing, require_stable); outcomes go into a
histogram (exactly-once, exactly-once after an aborted attempt, duplicate, loss, stuck, violation).
Reorderings are bounded (``--reorderings``, default 1: at most one delivery out of its default order
per run; -1 for no bound); faults are not.
A counterexample is the seed and the choice list: ``--replay`` runs it again into
the identical trace (the stepper can open it).
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from ..check import check, check_copy, check_fencing, check_offsets
from ..check.history import FAIL, INFO, OK, History
from ..client.consumer import Consumer
from ..client.message import TopicPartition
from ..client.producer import Producer
from ..cluster import MUTATIONS, Cluster
from ..errors import KafkaException
from ..kernel.faults import Fault, KernelHooks
from .clientops import final_read, poll_mops, record_committed_offsets
from .counterexample import Counterexample
from .invariants import StepInvariants

INPUT = ("a", "b")
# Messages a fault may hit: the ones exactly-once depends on (a lost Fetch or Metadata only adds a retry).
# A lost message: these requests or their responses.  A crash of the copier: just before one of these
# responses would tell it the outcome.
DROP_REQUESTS = frozenset({"Produce", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit"})
DROP_RESPONSES = frozenset({"Produce", "EndTxn", "TxnOffsetCommit", "InitProducerId"})
CRASH_BEFORE = frozenset({"InitProducerId", "Produce", "TxnOffsetCommit", "EndTxn"})
# With three brokers: crash the broker just after one of these requests reaches it (back after BROKER_DOWN_MS).
CRASH_BROKER_AFTER = frozenset({"Produce", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit", "AddPartitionsToTxn"})
BROKER_DOWN_MS = 6_000
APP_DEADLINE_MS = 90_000
BAD = ("violation", "duplicate", "loss", "stuck")
_DIGITS = re.compile(r"#\d+")


class Prune(Exception):
    """The run reached a state already explored: its continuations are known."""


@dataclass
class Option:
    kind: str            # deliver | drop | crash | crash-broker
    index: int = 0       # into Kernel.choices()

    def describe(self, events) -> str:
        if self.kind == "crash":
            return "the copier process crashes"
        if self.kind == "crash-broker":
            m = events[self.index].msg
            return f"deliver {m.api} request {m.src}->{m.dst}, then {m.dst} crashes"
        m = events[self.index].msg
        what = f"{m.api} {'response' if m.is_response else 'request'} {m.src}->{m.dst}"
        return f"{'deliver' if self.kind == 'deliver' else 'LOSE'} {what}"


@dataclass
class RunResult:
    choices: list
    points: list                       # (number of options, state hash) at each choice point
    outcome: str = ""
    detail: str = ""
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


class ExploreRun:
    """One run of the scenario along a choice list.  ``move(deadline)`` makes one move -- at a choice point
    the chosen option (a delivery out of order, a lost message, the copier's crash), else the next event --
    so a stepper can make the moves one Step at a time; ``driver`` makes them all (the explorer's own)."""

    def __init__(self, explorer: "Explorer", prefix: list, prune: bool = True) -> None:
        self.ex = explorer
        self.prune = prune
        self.cluster = explorer._setup()
        self.res = RunResult(list(prefix), [])
        self.invariants = StepInvariants(self.cluster, ["in", "out"])
        self.state = {"faults": 0, "reorders": 0, "copier": None, "k": 0, "calls": (0, "")}
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
            opts += [Option("drop", i) for i, e in enumerate(evs)
                     if e.msg.api in (DROP_RESPONSES if e.msg.is_response else DROP_REQUESTS)]
            if state["copier"] is not None and any(e.msg.is_response and e.msg.api in CRASH_BEFORE and
                                                   e.msg.dst.startswith("copier") for e in evs):
                opts.append(Option("crash"))
            if ex.brokers > 1:
                opts += [Option("crash-broker", i) for i, e in enumerate(evs)
                         if not e.msg.is_response and e.msg.api in CRASH_BROKER_AFTER and e.msg.dst.startswith("broker")]
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
            self.kernel.step()

    def driver(self, pred, timeout_ms) -> bool:
        k = self.kernel
        deadline = None if timeout_ms is None else k.now + int(timeout_ms)
        while not pred():
            if self._choice_point(deadline):
                continue
            t = k.next_event_time()
            if t is None or (deadline is not None and t > deadline):
                if deadline is not None and deadline > k.now:
                    k.now = deadline
                return pred()
            k.step()
        return True

    def play(self, own_driver: bool = True) -> RunResult:
        """The copier's run and its outcome.  ``own_driver=False``: someone else (a stepper) drives."""
        k, res = self.kernel, self.res
        if own_driver:
            k.driver = self.driver
        history = History()
        self.choosing = True
        try:
            finished = self.ex._app(self.cluster, history, self.state)
        except Prune:
            res.pruned = True
            return res
        finally:
            self.choosing = False
            if own_driver:
                k.driver = None
        res.outcome, res.detail = self.ex._outcome(self.cluster, history, finished)
        self.invariants.check(self.kernel.step_count)
        self.invariants.detach()
        inv = self.invariants.result
        if inv.violations and res.outcome not in BAD:
            res.outcome, res.detail = "violation", inv.summary() + "\n" + inv.explain(examples=2)
        res.cluster = self.cluster
        return res


class Explorer:
    def __init__(self, mutation: Optional[str] = None, max_faults: int = 2, seed: int = 0,
                 transaction_version: int = 0, max_reorderings: int = 1, brokers: int = 1) -> None:
        if brokers not in (1, 3):
            raise ValueError(f"brokers: the explorer's scenario has 1 or 3 brokers, got {brokers!r}")
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

    # ------------------------------------------------------------- one run
    def run(self, prefix: list, prune: bool = True) -> RunResult:
        return ExploreRun(self, prefix, prune).play()

    def _choose(self, cluster, res: RunResult, state: dict, evs, opts, prune: bool) -> None:
        i = state["k"]
        state["k"] += 1
        h = self._state_hash(cluster, state, opts)
        if i < len(res.choices):
            pick = res.choices[i]
        else:
            if prune and h in self.visited:
                raise Prune()
            self.visited.add(h)
            pick = 0
            res.choices.append(0)
        res.points.append((len(opts), h))
        opt = opts[pick]
        k = cluster.kernel
        if opt.kind == "deliver":
            state["reorders"] += opt.index > 0
            k.step(choice=opt.index)
            return
        state["faults"] += 1
        if opt.kind == "crash-broker":
            dst = evs[opt.index].msg.dst
            k.step(choice=opt.index)
            fault = Fault("crash", dst, ms=BROKER_DOWN_MS)
            res.faults.append(fault.at_step(k.step_count + 1))
            fault.apply(cluster, _CopierHooks(cluster, state))
            return
        fault = Fault("drop", msg_id=evs[opt.index].msg.id) if opt.kind == "drop" else Fault("kill", "copier")
        res.faults.append(fault.at_step(k.step_count + 1))
        fault.apply(cluster, _CopierHooks(cluster, state))

    # -------------------------------------------------------------- scenario
    def _setup(self) -> Cluster:
        config = {"transaction.state.log.num.partitions": 1, "offsets.topic.num.partitions": 1,
                  "transaction.version": self.transaction_version,
                  "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1_000,
                  "group.initial.rebalance.delay.ms": 0}
        if self.brokers > 1:       # quick failure detection, as in the sweep
            config.update({"broker.session.timeout.ms": 3_000, "broker.heartbeat.interval.ms": 1_000,
                           "replica.lag.time.max.ms": 4_000})
        cluster = Cluster(brokers=self.brokers, seed=self.seed, config=config,
                          mutations=(self.mutation,) if self.mutation else ())
        topic_config = {"min.insync.replicas": 2} if self.brokers > 1 else None
        cluster.create_topic("in", partitions=1, replication_factor=self.brokers, config=topic_config)
        cluster.create_topic("out", partitions=2, replication_factor=self.brokers, config=topic_config)
        p = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": "seeder"})
        for v in INPUT:
            p.produce("in", value=v, partition=0)
        p.flush()
        # create the internal topics now, so that the explored part starts from a settled cluster
        w = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": "warmup", "transactional.id": "warmup"})
        w.init_transactions()
        wc = Consumer({"bootstrap.servers": cluster.bootstrap, "client.id": "warmup-c", "group.id": "warmup"})
        wc.committed([TopicPartition("in", 0)])
        wc.close()
        if self.brokers > 1:
            # a read_committed reader of the output, fetching on its own while the copier works (its fetches
            # are what the step invariants check against the HW and the LSO)
            r = Consumer({"bootstrap.servers": cluster.bootstrap, "client.id": "reader", "group.id": "reader",
                          "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
            r.assign([TopicPartition("out", 0, 0), TopicPartition("out", 1, 0)])
            cluster.explore_reader = r
        cluster.run_until_idle()
        return cluster

    def _app(self, cluster, history: History, state: dict) -> bool:
        """The copier, restarted as a new instance after a crash; True when it copied everything."""
        for instance in range(1, 4 + self.max_faults):     # a crash, or a fenced instance, is restarted
            try:
                if self._copy(cluster, history, state, instance):
                    return True
            except KafkaException:
                pass
            if cluster.kernel.now > APP_DEADLINE_MS:
                return False
        return False

    def _copy(self, cluster, history: History, state: dict, instance: int) -> bool:
        name = f"copier.{instance}"
        p = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": name, "transactional.id": "copier",
                      "transaction.timeout.ms": 10_000, "request.timeout.ms": 5_000, "linger.ms": 0})
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "client.id": name + "-c", "group.id": "g",
                      "isolation.level": "read_committed", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "request.timeout.ms": 5_000})
        state["copier"] = (p, c)
        proc = f"copier#{instance}"
        start = cluster.kernel.now
        p.init_transactions(30.0)
        history.add(proc, "init", [], OK, start, cluster.kernel.now, transactional_id="copier", instance=instance)
        tp = TopicPartition("in", 0)
        committed = c.committed([tp], timeout=30.0)[0].offset
        committed = max(committed, 0)
        c.assign([TopicPartition("in", 0, committed)])
        history.add(proc, "assign", [["seek", "in-0", committed]], OK, cluster.kernel.now, cluster.kernel.now)
        if committed >= len(INPUT):
            return True
        msgs = []
        while len(msgs) < len(INPUT) - committed and cluster.kernel.now < APP_DEADLINE_MS:
            msgs += [m for m in c.consume(len(INPUT), 1.0) if m.error() is None]
        start = cluster.kernel.now
        sends: list = []
        attrs = {"transactional_id": "copier", "instance": instance}
        outcome = FAIL
        try:
            p.begin_transaction()
            for m in msgs:
                v = m.value().decode()
                box = [None]
                p.produce("out", value=f"{v}|{instance}", partition=INPUT.index(v),
                          on_delivery=lambda err, msg, box=box: box.__setitem__(0, msg.offset() if err is None else None))
                sends.append((f"out-{INPUT.index(v)}", f"{v}|{instance}", box))
            self._peek(cluster)
            off = msgs[-1].offset() + 1
            attrs["offsets"] = {"in-0": off}
            attrs["group"] = "g"
            if self.mutation == "offsets-outside-txn":     # the application's bug: offsets outside the transaction
                c.commit(offsets=[TopicPartition("in", 0, off)], asynchronous=False)
            else:
                p.send_offsets_to_transaction([TopicPartition("in", 0, off)], c.consumer_group_metadata(), 30.0)
            attrs["commit_at"] = cluster.kernel.now
            outcome = INFO
            self._peek(cluster)
            p.commit_transaction(60.0)
            outcome = OK
            self._peek(cluster)
        finally:
            mops = poll_mops(msgs) + [["send", k, v, b[0]] for k, v, b in sends]
            history.add(proc, "txn", mops, outcome, start, cluster.kernel.now, **attrs)
        return True

    @staticmethod
    def _peek(cluster) -> None:
        """The output's reader (three brokers) polls a little: its fetches go out while the copier works."""
        r = getattr(cluster, "explore_reader", None)
        if r is not None:
            for _ in range(3):
                r.poll(0.005)

    def _outcome(self, cluster, history: History, finished: bool) -> tuple:
        history.attrs["finished"] = finished
        for _ in range(40):              # let every timeout pass while a transaction is open
            if not self._open(cluster):
                break
            cluster.advance(1_000)
        final_read(cluster, history, ["in", "out"])
        record_committed_offsets(cluster, history, "g", [("in", 0)])
        r = check(history).merge(check_copy(history, "in", "out")).merge(check_fencing(history))
        r.merge(check_offsets(history, "in", "out"))
        lso_stuck = [f"out-{p}" for p in (0, 1) if cluster.log("out", p).first_unstable_offset is not None]
        if r.violations:
            return "violation", r.summary() + "\n" + r.explain(examples=2)
        if not finished or lso_stuck:
            return "stuck", f"copier finished: {finished}; open transaction on {lso_stuck or 'no partition'}"
        outs = Counter(v.split("|")[0] for op in history if op.f == "final-read"
                       for k, es in op.polls() if k.startswith("out") for _o, v in es)
        if any(n > 1 for n in outs.values()):
            return "duplicate", str(dict(outs))
        if set(outs) != set(INPUT):
            return "loss", str(dict(outs))
        redone = sum(1 for op in history if op.f == "txn" and op.outcome != OK)
        return ("exactly-once" if not redone else "exactly-once (after an abort)"), ""

    @staticmethod
    def _open(cluster) -> bool:
        st = cluster.transaction_state("copier")
        open_txn = st is not None and st["state"] not in ("Empty", "CompleteCommit", "CompleteAbort")
        return open_txn or any(cluster.log("out", p).first_unstable_offset is not None for p in (0, 1)) or \
            bool(cluster.kernel.network.in_flight())

    # ----------------------------------------------------------- state hash
    def _state_hash(self, cluster, state: dict, opts: list) -> str:
        k = cluster.kernel
        parts = [f"faults={state['faults']}", f"reorders={state['reorders']}", f"options={len(opts)}"]
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
            parts.append(f"node {name} {node.alive} {node.incarnation}")
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

    def explore(self, max_runs: int = 4000) -> bool:
        """Depth-first over choice lists.  Returns False when a violation was found (kept as the
        counterexample)."""
        stack: list = [[]]
        while stack and self.runs < max_runs:
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
           transaction_version: int = 0, max_reorderings: int = 1, brokers: int = 1) -> RunResult:
    """Run one choice list again: the same trace, step for step (open ``result.cluster.trace``)."""
    ex = Explorer(mutation, max_faults, seed, transaction_version, max_reorderings, brokers)
    return ex.run(list(choices), prune=False)


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m txnlab.sweep.explore", description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutation", choices=MUTATIONS)
    ap.add_argument("--faults", type=int, default=2, help="at most this many faults per run (default 2)")
    ap.add_argument("--reorderings", type=int, default=1,
                    help="at most this many deliveries out of their default order per run (-1: no bound)")
    ap.add_argument("--max-runs", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--transaction-version", type=int, choices=(0, 1, 2), default=0)
    ap.add_argument("--brokers", type=int, choices=(1, 3), default=1,
                    help="1 (the small scenario) or 3 (replicated topics; a fault may also crash a broker)")
    ap.add_argument("--replay", help="a choice list (comma-separated) to run again and narrate")
    args = ap.parse_args(argv)
    if args.replay is not None:
        choices = [int(x) for x in args.replay.split(",") if x.strip()]
        res = replay(choices, args.mutation, args.seed, args.faults, args.transaction_version, args.reorderings,
                     args.brokers)
        print(res.cluster.trace.text(include_background=False))
        print(f"outcome: {res.outcome} {res.detail}")
        return 1 if res.outcome in BAD else 0
    ex = Explorer(args.mutation, args.faults, args.seed, args.transaction_version, args.reorderings, args.brokers)
    ok = ex.explore(args.max_runs)
    complete = ex.runs < args.max_runs or not ok
    print(f"runs: {ex.runs}, states visited: {len(ex.visited)}" + ("" if complete else " (run limit reached)"))
    print("outcomes:")
    for name, n in sorted(ex.histogram.items(), key=lambda x: -x[1]):
        print(f"  {name:32s} {n}")
    if not ok:
        ce = ex.counterexample
        print(f"VIOLATION: {ce.outcome}\n{ce.detail}")
        flags = (f" --mutation {args.mutation}" if args.mutation else "") + \
            (f" --transaction-version {args.transaction_version}" if args.transaction_version else "") + \
            (f" --brokers {args.brokers}" if args.brokers != 1 else "")
        print(f"counterexample: seed {args.seed}, choices {','.join(map(str, ce.choices))}")
        print(f"counterexample (JSON, for Stepper.open): {ex.found().to_json()}")
        print(f"replay: python -m txnlab.sweep.explore --seed {args.seed}{flags} --faults {args.faults} "
              f"--reorderings {args.reorderings} --replay {','.join(map(str, ce.choices))}")
        return 1
    print("no violation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
