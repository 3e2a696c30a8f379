"""``python -m txnlab.sweep``: a seeded fault sweep from the command line.

    python -m txnlab.sweep --workload copier --faults all --seeds 1000
    python -m txnlab.sweep --workload copier --faults network --mutation no-dedup --seeds 200
    python -m txnlab.sweep --workload copier --faults all --seed 17 --trace failing.jsonl
    python -m txnlab.sweep --seeds 10000 --spark local[*] --table seeds.parquet   (Spark: txnlab/sweep/spark.py)

Prints a progress bar on stderr and, last, ``N seeds, V violations``.  Exit status 1
when anything was violated; then it also prints the first failing seed, what the
checker found (in plain words), the command that replays it, and its fault schedule
minimized by delta debugging, and the counterexample as JSON (``Counterexample.from_json``; the
stepper opens it with ``Stepper.open``).  This module is the command-line layer: the progress
bar and the seeds/s figure read the wall clock here, never inside the engine.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from typing import Iterator, Optional

from ..cluster import MUTATIONS
from .nemesis import FAULT_SETS, schedule_from_json
from .progress import Progress
from .classic import LATE_MS, late_transaction_requests, under_transaction_version_2
from .runner import RunConfig, SeedResult, minimize_failure, replay, replay_command, run_seed
from .workloads import WORKLOADS


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m txnlab.sweep", description="Deterministic simulation sweep of "
                                 "Kafka's exactly-once machinery: many seeds, faults, a Jepsen-style checker.")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--seeds", type=int, default=100, help="run seeds 0..N-1 (default 100)")
    which.add_argument("--seed", type=int, help="run this one seed (a replay)")
    ap.add_argument("--first-seed", type=int, default=0, help="start the sweep at this seed")
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="copier")
    ap.add_argument("--faults", choices=FAULT_SETS, default="all")
    ap.add_argument("--transaction-version", type=int, choices=(0, 1, 2), default=0)
    ap.add_argument("--client-dialect", choices=("librdkafka", "java"), default="librdkafka",
                    help="the clients' sim.client.dialect (only java speaks transaction.version 2's protocol)")
    ap.add_argument("--mutation", choices=MUTATIONS, default=None, help="turn off one safety mechanism")
    ap.add_argument("--records", type=int, default=RunConfig.records, help="input size of the workload")
    ap.add_argument("--schedule", help="a fault schedule (JSON, as printed) instead of the seed's own")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (results do not depend on it)")
    ap.add_argument("--spark", metavar="MASTER", help="run the seeds as Spark tasks: local[*], local[N] or "
                    "spark://host:port (results do not depend on it)")
    ap.add_argument("--table", metavar="FILE", help="write one row per seed (.parquet, else CSV)")
    ap.add_argument("--trace", metavar="FILE", help="with --seed: write the run's trace as JSON lines")
    ap.add_argument("--history", metavar="FILE", help="with --seed: write the run's history as JSON lines")
    ap.add_argument("--no-minimize", action="store_true", help="do not delta-debug the failing schedule")
    ap.add_argument("--keep-going", action="store_true", help="run every seed even after a violation")
    return ap


def _run_one(args: tuple) -> SeedResult:
    seed, cfg, schedule = args
    return run_seed(seed, cfg, schedule=schedule)


def _results(seeds: list, cfg: RunConfig, schedule: Optional[list], jobs: int) -> Iterator[SeedResult]:
    work = [(s, cfg, schedule) for s in seeds]
    if jobs <= 1:
        for w in work:
            yield _run_one(w)
        return
    import multiprocessing as mp
    with mp.get_context("fork" if hasattr(os, "fork") else "spawn").Pool(jobs) as pool:
        yield from pool.imap(_run_one, work, chunksize=4)


def main(argv: Optional[list] = None) -> int:
    args = _parser().parse_args(argv)
    cfg = RunConfig(args.workload, args.faults, args.transaction_version, args.mutation, args.records,
                    dialect=args.client_dialect)
    schedule = schedule_from_json(args.schedule) if args.schedule else None
    seeds = [args.seed] if args.seed is not None else list(range(args.first_seed, args.first_seed + args.seeds))
    what = f"workload {cfg.workload}, faults {cfg.faults}, transaction.version {cfg.transaction_version}, " \
        f"{cfg.dialect} clients" + (f", mutation {cfg.mutation}" if cfg.mutation else "")
    print(f"txnlab.kernel: {what}, {len(seeds)} seed(s)", file=sys.stderr)
    start = time.perf_counter()
    failing: list[SeedResult] = []
    counts: dict = {}
    done = 0
    bar = Progress(len(seeds))
    if args.spark:
        from .spark import run_on_spark
        results = run_on_spark(seeds, cfg, schedule, master=args.spark,
                               stop_at_failure=not args.keep_going and args.seed is None)
    else:
        results = _results(seeds, cfg, schedule, args.jobs)
    table = []
    for res in results:
        if args.table:
            table.append(res)
        done += 1
        if not res.ok:
            failing.append(res)
            for name in res.violations:
                counts[name] = counts.get(name, 0) + 1
        bar.update(done, len(failing))
        if failing and not args.keep_going and args.seed is None:
            break
    bar.close()
    elapsed = time.perf_counter() - start
    if args.table:
        from .spark import write_table
        write_table(table, args.table)
        print(f"table: {len(table)} seed(s) written to {args.table}", file=sys.stderr)
    if args.seed is not None and (args.trace or args.history):
        _export(args, cfg, schedule)
    if failing:
        _report(failing[0], counts, schedule, args)
    print(f"{done} seeds, {len(failing)} violations ({elapsed:.1f}s, {done / elapsed if elapsed else 0:.1f} seeds/s)")
    return 1 if failing else 0


def _export(args, cfg: RunConfig, schedule: Optional[list]) -> None:
    res = replay(args.seed, cfg, schedule)
    if args.trace:
        with open(args.trace, "w") as f:
            f.write(res.trace_jsonl() + "\n")
        print(f"trace: {len(res.cluster.trace)} steps written to {args.trace}", file=sys.stderr)
    if args.history:
        with open(args.history, "w") as f:
            f.write(res.history.to_jsonl() + "\n")
        print(f"history: {len(res.history)} ops written to {args.history}", file=sys.stderr)


def _report(res: SeedResult, counts: dict, schedule: Optional[list], args) -> None:
    print(f"first failing seed: {res.seed}")
    print("violations: " + ", ".join(f"{n} ({c} seed(s))" for n, c in sorted(counts.items())))
    print(res.result.explain(examples=3))
    if res.error:
        print(f"error: {res.error}")
    print("replay: " + replay_command(res.seed, res.config, schedule))
    print("fault schedule:" + ("" if res.schedule else " (none)"))
    for f in res.schedule:
        print(f"  {f.describe()}")
    if res.schedule and not args.no_minimize:
        small = minimize_failure(res)
        print(f"minimized fault schedule ({len(small)} of {len(res.schedule)} faults):")
        for f in small:
            print(f"  {f.describe()}")
        print("replay minimized: " + replay_command(res.seed, res.config, small))
        small_run = run_seed(res.seed, res.config, schedule=small)
        if not small_run.ok:
            res = small_run
    _compare_with_transaction_version_2(res)
    run = replay(res.seed, res.config, res.schedule)
    if run.cluster is not None:
        _late_transaction_requests(run)
        _deposed_group_coordinator(run)
    # the value a stepper opens: from widgets import Stepper; Stepper.open(Counterexample.from_json(...))
    print("counterexample: " + res.counterexample().to_json())


def _late_transaction_requests(run: SeedResult, shown: int = 3) -> None:
    """Say which requests of a transaction's life reached their broker late in the failing run (held by a delay
    fault, or retransmitted on a connection a partition had cut and delivered after the heal): under
    transaction.version < 2 a producer's next transaction has the same epoch, so a late EndTxn or WriteTxnMarkers can
    end the wrong one (KAFKA-17754; seeds 418325, 422587, 422771) and a late Produce join it (430447), which
    transaction.version 2's epoch bump per transaction refuses (``classic``).  The latest ``shown`` of them."""
    late = late_transaction_requests(run)
    if not late:
        return
    print(f"late requests: {len(late)} request(s) of a transaction's life reached their broker {LATE_MS} ms or more "
          f"after they were sent" + ("" if len(late) <= shown else f" (the last {shown})") + ":")
    for e, sent in late[-shown:]:
        print(f"  step {e.step}, {e.time} ms: {e.text} -- sent at {sent} ms")
    if run.config.transaction_version < 2:
        print("  under transaction.version < 2 the producer's next transaction keeps its epoch, so a late request of an "
              "earlier one acts on it: an EndTxn ends it (KAFKA-17754), WriteTxnMarkers close it, a Produce joins it, a "
              "TxnOffsetCommit puts its offsets in it; transaction.version 2 bumps the epoch per transaction and "
              "refuses them")


def _deposed_group_coordinator(run: SeedResult) -> None:
    """Say when, in the failing run, a consumer read its group's committed offsets from a broker that the controller
    had fenced: cut off from the controller, that broker does not know it, still takes itself for the group's
    coordinator and answers from the offsets it had, which may be older than those committed since to the new
    coordinator (sweep seed 201869: a copier copied again what it had already committed).  Read from the replayed
    run's trace."""
    fenced: dict = {}       # broker id -> when the controller fenced it (until it is unfenced or registers again)
    for e in run.cluster.trace.events:
        text = e.narration
        for m in re.finditer(r"controller fenced broker (\d+)", text):
            fenced[int(m.group(1))] = e.time
        for m in re.finditer(r"controller (?:registered|unfenced) broker (\d+)", text):
            fenced.pop(int(m.group(1)), None)
        if e.kind == "deliver" and e.api == "OffsetFetch" and e.is_response and e.src.startswith("broker-"):
            broker = int(e.src.split("-", 1)[1])
            answer = e.text.split(f"response from {e.src} ", 1)[-1]
            if broker in fenced and not re.search(r"[A-Z_]{5,}\(\d+\)", answer):    # offsets, not an error
                print(f"note: at {e.time} ms {e.src} answered {e.node}'s OffsetFetch {answer} although the controller "
                      f"had fenced it at {fenced[broker]} ms: cut off from the controller, it did not know, still took "
                      f"itself for the group's coordinator and answered from the offsets it had (step {e.step})")
                return


def _compare_with_transaction_version_2(res: SeedResult) -> None:
    """A violation under Kafka's classic transaction protocol (transaction.version < 2) may be one of Kafka's own
    anomalies that KIP-890 removed (a delayed EndTxn committing the next transaction, KAFKA-17754; a late Produce
    joining it): replay the same seed and faults under transaction.version 2 with a client that speaks it and say
    what happens there."""
    cfg = res.config
    if cfg.transaction_version >= 2 or cfg.mutation:
        return
    tv2, run = under_transaction_version_2(res.seed, cfg, res.schedule)
    outcome = "no violation" if run.ok else "violations: " + ", ".join(sorted(run.violations))
    print(f"the same seed and faults under transaction.version 2, with a client that speaks it (the Java "
          f"dialect): {outcome}" + (". KIP-890 changes every transaction's requests (an epoch bump per "
                                    "transaction, partitions added by the Produce itself): compare the two traces "
                                    "to see whether it refused the request that did the harm here" if run.ok
                                    else ""))
    print("replay under transaction.version 2: " + replay_command(res.seed, tv2, res.schedule))


if __name__ == "__main__":
    sys.exit(main())
