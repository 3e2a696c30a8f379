"""Seeded simulation runs: one seed (with its fault schedule) end to end, a sweep over many, replay.

Owns ``RunConfig`` (workload, fault set, transaction.version, mutation, size),
``run_seed`` (build the cluster, start the workload's processes and the nemesis,
run to the end or the deadline, heal, let every timeout pass, check the step and
end invariants, do the final read, check the history), ``sweep`` (many seeds,
yielding each result), ``minimize_failure`` (delta-debug a failing seed's fault
schedule) and ``replay_command``.  A seed plus its schedule is a complete bug report:
the same inputs give the same trace, byte for byte.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field, replace
from typing import Iterator, Optional

from ..check import CheckResult
from ..check.history import History
from ..cluster import Cluster
from ..kernel.kernel import collecting_seldom
from .counterexample import Counterexample
from .nemesis import FAULT_SETS, Fault, Nemesis, minimize, plan, schedule_to_json
from .invariants import StepInvariants, end_invariants
from .runtime import Runtime
from .workloads import WORKLOADS

# Simulation-friendly settings, all real Kafka keys: small internal topics, quick timeouts.
CLUSTER_CONFIG = {
    "transaction.state.log.num.partitions": 3,
    "offsets.topic.num.partitions": 3,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1_000,
    "replica.lag.time.max.ms": 4_000,
    "broker.session.timeout.ms": 3_000,
    "broker.heartbeat.interval.ms": 1_000,
    "group.initial.rebalance.delay.ms": 0,
}
PRODUCER_CONFIG = {"transaction.timeout.ms": 8_000, "request.timeout.ms": 4_000, "delivery.timeout.ms": 8_000,
                   "linger.ms": 2, "socket.timeout.ms": 4_000}
# (librdkafka waits socket.timeout.ms for a request, for a Produce at most what is left of its oldest record's
# delivery.timeout.ms; request.timeout.ms is the ack timeout the broker is told, and the Java client's wait)
CONSUMER_CONFIG = {"socket.timeout.ms": 4_000}     # librdkafka times consumer requests with socket.timeout.ms
SETTLE_MS = 45_000        # after the run: every timeout (30 s inter-broker requests included) has passed
SETTLE_STEP_MS = 250


@dataclass(frozen=True)
class RunConfig:
    workload: str = "copier"
    faults: str = "all"
    transaction_version: int = 0
    mutation: Optional[str] = None
    records: int = 20
    trace: bool = False
    dialect: str = "librdkafka"     # the clients' sim.client.dialect: only "java" speaks transaction.version 2

    def validate(self) -> None:
        if self.workload not in WORKLOADS:
            raise ValueError(f"unknown workload {self.workload!r}; choose one of {', '.join(sorted(WORKLOADS))}")
        if self.faults not in FAULT_SETS:
            raise ValueError(f"unknown fault set {self.faults!r}; choose one of {', '.join(FAULT_SETS)}")
        if self.transaction_version not in (0, 1, 2):
            raise ValueError("transaction.version must be 0, 1 or 2")
        if self.dialect not in ("librdkafka", "java"):
            raise ValueError(f"unknown client dialect {self.dialect!r}; choose librdkafka or java")


@dataclass
class SeedResult:
    seed: int
    config: RunConfig
    schedule: list
    result: CheckResult
    finished: bool
    steps: int
    sim_ms: int
    history: Optional[History] = None
    cluster: Optional[Cluster] = field(default=None, repr=False)
    error: Optional[str] = None
    runtime: Optional[Runtime] = field(default=None, repr=False)
    broken_at: Optional[int] = None     # the kernel step after which a step invariant first failed

    def counterexample(self):
        """This failing run as a value the stepper opens (``Stepper.open``)."""
        return Counterexample.from_result(self)

    @property
    def ok(self) -> bool:
        return self.result.ok

    @property
    def violations(self) -> list:
        return self.result.names()

    def trace_jsonl(self) -> str:
        return self.cluster.trace.to_jsonl() if self.cluster is not None else ""


def build_cluster(seed: int, cfg: RunConfig) -> Cluster:
    wl = WORKLOADS[cfg.workload]
    config = dict(CLUSTER_CONFIG, **{"transaction.version": cfg.transaction_version, "sim.trace": cfg.trace})
    cluster = Cluster(brokers=3, seed=seed, config=config, mutations=(cfg.mutation,) if cfg.mutation else ())
    for topic, parts in wl.topics.items():
        cluster.create_topic(topic, partitions=parts, replication_factor=3, config={"min.insync.replicas": 2})
    return cluster


def schedule_for(seed: int, cfg: RunConfig) -> list:
    wl = WORKLOADS[cfg.workload](cfg.records, (cfg.mutation,) if cfg.mutation else ())
    return plan(seed, cfg.faults, [f"broker-{i}" for i in range(3)], wl.client_processes(), wl.horizon_ms)


def run_seed(seed: int, cfg: RunConfig, schedule: Optional[list] = None, keep: bool = False) -> SeedResult:
    """One run.  ``schedule`` overrides the seed's own fault plan (replaying a minimized schedule)."""
    cfg.validate()
    if schedule is None:
        schedule = schedule_for(seed, cfg)
    # A seed makes millions of short-lived objects and few reference cycles: the collector's default (a young
    # collection every 700 allocations, each older one walking the whole growing cluster) cost a fifth of a
    # seed.  Collect seldom during the whole seed (building the cluster and the checks too, not only the kernel's
    # runs); the thresholds are restored after it.
    return collecting_seldom(lambda: drive(build_cluster(seed, cfg), seed, cfg, schedule, keep))


def drive(cluster: Cluster, seed: int, cfg: RunConfig, schedule: list, keep: bool = False) -> SeedResult:
    """Everything of a run after ``build_cluster``: the workload, the nemesis, the settle and the checks.
    A stepper runs exactly this on its client-code thread to show a counterexample step by step."""
    wl = WORKLOADS[cfg.workload](cfg.records, (cfg.mutation,) if cfg.mutation else ())
    steps = StepInvariants(cluster, list(wl.topics))
    dialect = {"sim.client.dialect": cfg.dialect}
    rt = Runtime(cluster, seed, cluster.kernel.now + wl.deadline_ms, {**PRODUCER_CONFIG, **dialect},
                 {**CONSUMER_CONFIG, **dialect})
    nemesis = Nemesis(cluster, rt, schedule)
    result = CheckResult()
    finished = False
    error = None
    try:
        cluster.kernel.begin_step("admin", "workload", f"workload {cfg.workload} starts ({cfg.records} records, "
                                  f"faults: {cfg.faults}, {len(schedule)} scheduled)")
        wl.start(rt)
        nemesis.start()
        finished = rt.run()
        rt.stop()
        nemesis.heal_all()
        result.merge(_settle(cluster, wl, steps))
        rt.history.attrs["finished"] = finished
        wl.finish(cluster, rt.history)
        result.merge(wl.check(rt.history))
        for b in cluster.brokers:
            for err in cluster.broker(b).handler_errors[:3]:
                result.add("crash", f"broker {b} failed on a request: {err}")
        if not finished:
            result.add("stuck", f"the workload did not finish within {wl.deadline_ms}ms of simulated time")
    except Exception as e:  # noqa: BLE001 - an escaped exception is itself the finding
        error = "".join(traceback.format_exception_only(type(e), e)).strip()
        result.add("crash", f"{error} (at step {cluster.kernel.step_count}, t={cluster.kernel.now}ms)")
        if keep:
            error = traceback.format_exc()
    steps.detach()
    return SeedResult(seed, cfg, list(schedule), result, finished, cluster.kernel.step_count, cluster.kernel.now,
                      rt.history if keep else None, cluster if keep else None, error, rt if keep else None,
                      steps.first_step)


def _settle(cluster, wl, steps: StepInvariants) -> CheckResult:
    """Let the cluster finish what is in flight; wait out the timeouts only while a transaction is open."""
    cluster.advance(SETTLE_STEP_MS)
    waited = SETTLE_STEP_MS
    while True:
        end = end_invariants(cluster, list(wl.topics), wl.transactional_ids())
        running = all(cluster.broker(b).running for b in cluster.brokers)   # restarted brokers are back, unfenced
        if (end.ok and running and _metadata_current(cluster)) or waited >= SETTLE_MS:
            break
        cluster.advance(SETTLE_STEP_MS)
        waited += SETTLE_STEP_MS
    steps.check(cluster.kernel.step_count)
    steps.detach()
    return end.merge(steps.result)


def _metadata_current(cluster) -> bool:
    """Every live broker knows the controller's leaders and leader epochs.  A broker that was cut off from the
    controller answers from what it learned last (Kafka's brokers do not fence themselves) until the controller's
    news reaches it: the final read, which stands for the truth, must not ask it before that."""
    states = cluster.controller.states
    for b in cluster.brokers:
        broker = cluster.broker(b)
        if not broker.alive:
            continue
        known = broker.metadata.partitions
        for tp, s in states.items():
            k = known.get(tp)
            if k is None or k.leader != s.leader or k.leader_epoch != s.leader_epoch:
                return False
    return True


def sweep(seeds, cfg: RunConfig) -> Iterator[SeedResult]:
    for seed in seeds:
        yield run_seed(seed, cfg)


def minimize_failure(res: SeedResult, budget: int = 30) -> list:
    """A 1-minimal sub-schedule of a failing seed's faults that still shows a violation."""
    cfg = res.config
    wanted = set(res.violations)

    def fails(sub: list) -> bool:
        r = run_seed(res.seed, cfg, schedule=sub)
        return bool(set(r.violations) & wanted)
    if not res.schedule:
        return []
    return minimize(res.schedule, fails, budget)


def replay_command(seed: int, cfg: RunConfig, schedule: Optional[list] = None) -> str:
    parts = ["python -m txnlab.sweep", f"--workload {cfg.workload}", f"--faults {cfg.faults}", f"--seed {seed}"]
    if cfg.transaction_version:
        parts.append(f"--transaction-version {cfg.transaction_version}")
    if cfg.dialect != RunConfig.dialect:
        parts.append(f"--client-dialect {cfg.dialect}")
    if cfg.mutation:
        parts.append(f"--mutation {cfg.mutation}")
    if cfg.records != RunConfig.records:
        parts.append(f"--records {cfg.records}")
    if schedule is not None:
        parts.append(f"--schedule '{schedule_to_json(schedule)}'")
    return " ".join(parts)


def replay(seed: int, cfg: RunConfig, schedule: Optional[list] = None) -> SeedResult:
    """Run a seed again with the trace on (the counterexample to read step by step)."""
    return run_seed(seed, replace(cfg, trace=True), schedule=schedule, keep=True)


__all__ = ["RunConfig", "SeedResult", "run_seed", "sweep", "minimize_failure", "replay", "replay_command",
           "schedule_for", "build_cluster", "drive", "Fault"]
