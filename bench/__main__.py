"""``python -m bench [FILTER ...]``: run the benchmarks, merge their numbers into
``bench/results.json`` and print engine vs. reference.

A FILTER runs only the benchmarks whose key contains it (``python -m bench mock_`` runs the
reference side only). Each benchmark is repeated up to 5 times and reports the median; once a
benchmark has used ``BUDGET_S`` it stops repeating, which keeps the whole run near two minutes
even when the engine is slow. A benchmark that raises (for instance ImportError while the engine
does not exist yet) is recorded as ``null`` with its error text, and the run goes on.

results.json keeps every key it already had; a run overwrites only the keys it measured. Top-level
keys hold the headline numbers; ``details`` holds, per key, the runs, n, unit, error and date.

An engine benchmark and its librdkafka reference run in turns (reference, engine, reference, ...),
so both see the same moments of a shared, noisy machine; the engine's details add ``paired_ratio``,
the median of the per-turn ratios, shown in the table's last column.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bench import engine, reference, sweep_spark, views, wire
from bench import spark as spark_bench

RESULTS = Path(__file__).with_name("results.json")
REPEATS = 5
BUDGET_S = 20.0


@dataclass(frozen=True)
class Benchmark:
    key: str
    fn: Callable[[int], float]
    n: int          # records (idempotent) or transactions (txn*) per run
    unit: str


BENCHMARKS = [
    Benchmark("mock_idempotent_records_per_s", reference.mock_idempotent_records_per_s,
              100_000, "records/s"),
    Benchmark("mock_txn1_per_s", reference.mock_txn1_per_s, 300, "txn/s"),
    Benchmark("mock_txn1000_records_per_s", reference.mock_txn1000_records_per_s,
              50, "records/s"),
    # the engine runs the same workload sizes as the reference
    Benchmark("idempotent_records_per_s", engine.idempotent_records_per_s, 100_000, "records/s"),
    Benchmark("txn1_per_s", engine.txn1_per_s, 300, "txn/s"),
    Benchmark("txn1000_records_per_s", engine.txn1000_records_per_s, 50, "records/s"),
    # confluent-kafka's own producer through the lab's wire door (cluster.listen()), same sizes as the mock's
    Benchmark("wire_idempotent_records_per_s", wire.wire_idempotent_records_per_s, 100_000, "records/s"),
    Benchmark("wire_txn1_per_s", wire.wire_txn1_per_s, 300, "txn/s"),
    Benchmark("wire_txn1000_records_per_s", wire.wire_txn1000_records_per_s, 50, "records/s"),
    # simulation testing: copier, 1,000 records, all faults, one core (target: 50 seeds/s); no reference
    Benchmark("sim_seeds_per_s", engine.sim_seeds_per_s, 3, "seeds/s"),
    # the sweep as Spark tasks, local mode, one core and every core (target: all/one >= 1.8 with 2 cores)
    Benchmark("sweep_spark_seeds_per_s_1core", sweep_spark.one_core_seeds_per_s, sweep_spark.SEEDS, "seeds/s"),
    Benchmark("sweep_spark_seeds_per_s_all_cores", sweep_spark.all_cores_seeds_per_s, sweep_spark.SEEDS,
              "seeds/s"),
    # the explorer's parts as Spark tasks, local mode, one core and every core (no target: information)
    Benchmark("explore_spark_runs_per_s_1core", sweep_spark.explorer_one_core_runs_per_s, sweep_spark.EXPLORE_RUNS,
              "runs/s"),
    Benchmark("explore_spark_runs_per_s_all_cores", sweep_spark.explorer_all_cores_runs_per_s,
              sweep_spark.EXPLORE_RUNS, "runs/s"),
    # kernel-side ms from one Step to every view redrawn (target: 50 ms or less); no reference
    Benchmark("step_update_ms_median", views.step_update_ms_median, 200, "ms"),
    Benchmark("moment_step_ms_median", views.moment_step_ms_median, 40, "ms"),
    # the same Steps on the Partition logs tab after every tab was opened once: only the pictures on screen redrawn
    Benchmark("step_shown_ms_median", views.step_shown_ms_median, 200, "ms"),
    Benchmark("moment_step_shown_ms_median", views.moment_step_shown_ms_median, 40, "ms"),
    # notebook 07's income query through Spark (warm session; targets: >= 20k rows/s, ratio <= 1.15)
    Benchmark("spark_rows_per_s", spark_bench.spark_rows_per_s, 100_000, "rows/s"),
    Benchmark("spark_run_rows_per_s", spark_bench.spark_run_rows_per_s, 100_000, "rows/s"),
    Benchmark("spark_eos_alos_ratio", spark_bench.spark_eos_alos_ratio, 100_000, "ratio"),
]

# Figures of the other bench scripts shown under the table (python -m bench.instructions / .memory /
# .notebooks / .sweep_spark write them; ``python -m bench --all`` runs those scripts too).
EXTRA = ["instr_per_txn1", "instr_per_copier_seed", "rss_idle_10h_mb_trace_off", "rss_idle_10h_mb_trace_bounded",
         "rss_copier_100k_mb_trace_off", "rss_copier_100k_mb_trace_bounded", "rss_copier_100k_mb_trace_on",
         "first_picture_s"]

# Derived numbers: key -> (numerator key, denominator key).
RATIOS = {
    "sweep_spark_scaling": ("sweep_spark_seeds_per_s_all_cores", "sweep_spark_seeds_per_s_1core"),
    "explore_spark_scaling": ("explore_spark_runs_per_s_all_cores", "explore_spark_runs_per_s_1core"),
    "txn_vs_idempotent_ratio": ("txn1000_records_per_s", "idempotent_records_per_s"),
    "mock_txn_vs_idempotent_ratio": ("mock_txn1000_records_per_s",
                                     "mock_idempotent_records_per_s"),
}

# The printed table: (label, engine key, reference key).
ROWS = [
    ("idempotent, records/s", "idempotent_records_per_s", "mock_idempotent_records_per_s"),
    ("1 record per txn, txn/s", "txn1_per_s", "mock_txn1_per_s"),
    ("1000 x 100 B per txn, records/s", "txn1000_records_per_s", "mock_txn1000_records_per_s"),
    ("txn1000/idempotent (info, no target)", "txn_vs_idempotent_ratio", "mock_txn_vs_idempotent_ratio"),
    ("wire door: idempotent, records/s", "wire_idempotent_records_per_s", "mock_idempotent_records_per_s"),
    ("wire door: 1 record per txn, txn/s", "wire_txn1_per_s", "mock_txn1_per_s"),
    ("wire door: 1000 x 100 B per txn, rec/s", "wire_txn1000_records_per_s", "mock_txn1000_records_per_s"),
    ("stepper: Step -> views updated, ms", "step_update_ms_median", None),
    ("stepper: one moment -> views updated, ms", "moment_step_ms_median", None),
    ("stepper: Step, Partition logs tab, ms", "step_shown_ms_median", None),
    ("stepper: one moment, Partition logs tab, ms", "moment_step_shown_ms_median", None),
    ("sim: copier 1000 rec, faults, seeds/s", "sim_seeds_per_s", None),
    ("sweep on Spark local[*], seeds/s", "sweep_spark_seeds_per_s_all_cores", None),
    ("sweep on Spark: all cores / one core", "sweep_spark_scaling", None),
    ("explorer on Spark local[*], runs/s", "explore_spark_runs_per_s_all_cores", None),
    ("explorer on Spark: all cores / one core", "explore_spark_scaling", None),
    ("Spark EOS, rows/s (running query)", "spark_rows_per_s", None),
    ("Spark EOS, rows/s (incl. query start)", "spark_run_rows_per_s", None),
    ("Spark EOS / ALOS wall time, 100k rows", "spark_eos_alos_ratio", None),
]


def _timed(b: Benchmark) -> float:
    """One run of a benchmark, after a full collection: the clusters of earlier runs are garbage, and without
    this the collector frees them inside a later run's timed loop (it made the engine look 18-27 % slower)."""
    gc.collect()
    return b.fn(b.n)


def load() -> float:
    """The machine's 1-minute load average (how many processes wanted a core), or -1 where unknown."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return -1.0


def measure(b: Benchmark) -> dict:
    """Median of up to REPEATS runs of one benchmark, or its error."""
    runs: list[float] = []
    started = time.perf_counter()
    try:
        while len(runs) < REPEATS and (not runs or time.perf_counter() - started < BUDGET_S):
            runs.append(_timed(b))
    except Exception as e:  # noqa: BLE001 - any failure is a result to record, not a crash
        return {"value": None, "error": f"{type(e).__name__}: {e}", "runs": runs,
                "n": b.n, "unit": b.unit}
    return {"value": statistics.median(runs), "error": None, "runs": runs,
            "n": b.n, "unit": b.unit}


def measure_pair(eng: Benchmark, ref: Benchmark) -> tuple[dict, dict]:
    """An engine benchmark and its reference, run in turns (reference, engine, reference, ...), so that
    both see the same moments of a shared machine; each reports the median of its runs, and the engine's
    entry also ``paired_ratio``: the median of the per-turn ratios engine/reference."""
    runs: dict[str, list[float]] = {ref.key: [], eng.key: []}
    spent = {ref.key: 0.0, eng.key: 0.0}
    errors: dict[str, str] = {}
    for _ in range(REPEATS):
        for b in (ref, eng):
            if b.key in errors or (runs[b.key] and spent[b.key] >= BUDGET_S):
                continue
            started = time.perf_counter()
            try:
                runs[b.key].append(_timed(b))
            except Exception as e:  # noqa: BLE001 - any failure is a result to record, not a crash
                errors[b.key] = f"{type(e).__name__}: {e}"
            spent[b.key] += time.perf_counter() - started
    out = []
    for b in (eng, ref):
        r = runs[b.key]
        err = errors.get(b.key)
        out.append({"value": None if err or not r else statistics.median(r), "error": err, "runs": r,
                    "n": b.n, "unit": b.unit})
    pairs = list(zip(runs[eng.key], runs[ref.key]))
    if pairs and all(r for _e, r in pairs):
        out[0]["paired_ratio"] = statistics.median(e / r for e, r in pairs)
    return out[0], out[1]


def derive(fresh: dict[str, dict]) -> dict[str, dict]:
    """The ratios whose both operands were measured in this run."""
    out = {}
    for key, (num, den) in RATIOS.items():
        if num in fresh and den in fresh:
            a, b = fresh[num]["value"], fresh[den]["value"]
            ok = a is not None and b
            out[key] = {"value": a / b if ok else None, "unit": "ratio",
                        "error": None if ok else f"needs both {num} and {den}"}
    return out


def merge(fresh: dict[str, dict]) -> dict:
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    details = results.setdefault("details", {})
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    for key, d in fresh.items():
        results[key] = d["value"]
        details[key] = {**d, "measured_at": stamp, "python": platform.python_version()}
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    return results


def fmt(value) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if value < 10 else f"{value:,.0f}"


def table(results: dict) -> str:
    """Engine, the reference measured in the same run, the ratio of their medians, the median of the paired
    (per-turn) ratios, and the machine's load while they ran."""
    details = results.get("details", {})
    lines = [f"{'benchmark':<38}{'engine':>12}{'mock (ref)':>12}{'ratio':>8}{'paired':>8}{'load':>6}  measured"]
    for label, eng, ref in ROWS:
        e, r = results.get(eng), results.get(ref)
        ratio = f"{e / r:.2f}" if e is not None and r else "-"
        d = details.get(eng, {})
        turns = d.get("paired_ratio")
        ld = d.get("load")
        when = (d.get("measured_at") or "")[:16]
        lines.append(f"{label:<38}{fmt(e):>12}{fmt(r):>12}{ratio:>8}{'-' if turns is None else f'{turns:.2f}':>8}"
                     f"{'-' if ld is None or ld < 0 else f'{ld:.1f}':>6}  {when}")
    for key in EXTRA:
        if key in results:
            d = details.get(key, {})
            ld = d.get("load")
            lines.append(f"{key:<38}{fmt(results[key]):>12}{'':>12}{'':>8}{'':>8}"
                         f"{'-' if ld is None or ld < 0 else f'{ld:.1f}':>6}  {(d.get('measured_at') or '')[:16]}"
                         f"  {d.get('unit', '')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("filters", nargs="*", help="run only benchmarks whose key contains one")
    parser.add_argument("--all", action="store_true", help="also instruction counts (callgrind), memory of long "
                        "runs and the chapters' run times (python -m bench.instructions / .memory / .notebooks)")
    args = parser.parse_args(argv)
    if args.all:
        from bench import instructions, memory, notebooks
        for script in (instructions, memory, notebooks):
            script.main([])

    chosen = [b for b in BENCHMARKS if not args.filters or any(f in b.key for f in args.filters)]
    by_key = {b.key: b for b in chosen}
    partner = {eng: by_key[ref] for _label, eng, ref in ROWS if eng in by_key and ref in by_key}
    paired = {b.key for b in partner.values()}
    fresh = {}
    for b in chosen:
        if b.key in paired:
            continue        # measured in turns with its engine benchmark
        if b.key in partner:
            ref = partner[b.key]
            print(f"{b.key} and {ref.key} in turns (n={b.n}) ...", end=" ", flush=True)
            before = load()
            fresh[b.key], fresh[ref.key] = measure_pair(b, ref)
            fresh[b.key]["load"] = fresh[ref.key]["load"] = (before + load()) / 2
            shown = [fmt(fresh[k]["value"]) if fresh[k]["error"] is None else "failed" for k in (b.key, ref.key)]
            print(" vs ".join(shown))
            continue
        print(f"{b.key} (n={b.n}) ...", end=" ", flush=True)
        before = load()
        fresh[b.key] = measure(b)
        fresh[b.key]["load"] = (before + load()) / 2
        print(fmt(fresh[b.key]["value"]) if fresh[b.key]["error"] is None else "failed")
    fresh.update(derive(fresh))

    results = merge(fresh)
    print()
    print(table(results))
    errors = {k: d["error"] for k, d in fresh.items() if d["error"]}
    if errors:
        print("\nnot measured:")
        for key, err in errors.items():
            print(f"  {key}: {err}")
    print(f"\nwritten to {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
