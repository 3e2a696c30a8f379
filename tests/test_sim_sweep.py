"""The simulation sweep: many seeds of each workload under faults, and no violation without a mutation.

Every workload runs 1,000 seeds with every kind of fault (brokers, clients, network), on two worker
processes. The run time is printed (``pytest -s``); nothing here depends on the wall clock.
"""
import multiprocessing as mp
import time

import pytest

from txnlab.sweep.runner import RunConfig, run_seed

SEEDS = 1_000
RECORDS = 20


def _run(args):
    seed, cfg = args
    r = run_seed(seed, cfg)
    return seed, r.violations, r.result.summary(), r.error


def sweep(cfg: RunConfig, seeds) -> list:
    """Failing seeds as (seed, violations, summary); runs on two processes (results do not depend on it)."""
    with mp.get_context("fork").Pool(2) as pool:
        return [(s, v, summ, err) for s, v, summ, err in pool.imap_unordered(_run, [(s, cfg) for s in seeds],
                                                                               chunksize=8) if v]


@pytest.mark.parametrize("workload", ["copier", "bank-transfer", "multi-partition-atomic", "group-rebalance"])
def test_each_workload_survives_1000_seeds_of_every_fault_without_a_violation(workload):
    cfg = RunConfig(workload=workload, faults="all", records=RECORDS)
    start = time.perf_counter()
    failing = sweep(cfg, range(SEEDS))
    elapsed = time.perf_counter() - start
    print(f"\n{workload}, all faults: {SEEDS} seeds in {elapsed:.0f}s ({SEEDS / elapsed:.1f} seeds/s)")
    assert failing == [], "\n".join(f"seed {s}: {summ} {err or ''}" for s, _v, summ, err in failing[:5])


def test_without_faults_every_workload_is_exactly_once():
    for workload in ("copier", "bank-transfer", "multi-partition-atomic", "group-rebalance"):
        r = run_seed(0, RunConfig(workload=workload, faults="none", records=RECORDS))
        assert r.ok and r.finished, (workload, r.result.explain())
