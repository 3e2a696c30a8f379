"""The simulation sweep: many seeds of each workload under faults, and no violation without a mutation.

Every workload runs its seeds (``SEEDS``: half with transaction.version 0, half with 2, KIP-890's protocol)
with every kind of fault (brokers, clients, network), on two worker processes. The run time is printed (``pytest -s``); nothing here depends on the wall clock.
"""
import multiprocessing as mp
import time

import pytest

from txnlab.sweep.classic import is_classic_anomaly
from txnlab.sweep.runner import RunConfig, run_seed

# seeds per workload, split between transaction.version 0 (the first half) and 2 (KIP-890, the second half)
SEEDS = {"copier": 1_000, "bank-transfer": 1_000, "multi-partition-atomic": 1_000, "group-rebalance": 700,
         "mixed": 400}
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


# transaction.version 0 with librdkafka's clients; 2 with Kafka's Java client (the one that speaks KIP-890 part
# 2) and with librdkafka's (classic EndTxn on a TV2 cluster, protected by partition verification only)
PROTOCOLS = [(0, "librdkafka"), (2, "java"), (2, "librdkafka")]


@pytest.mark.parametrize("transaction_version,dialect", PROTOCOLS)
@pytest.mark.parametrize("workload", sorted(SEEDS))
def test_each_workload_survives_every_fault_without_a_violation(workload, transaction_version, dialect):
    n = SEEDS[workload] // len(PROTOCOLS)
    k = PROTOCOLS.index((transaction_version, dialect))
    seeds = range(k * n, (k + 1) * n)
    cfg = RunConfig(workload=workload, faults="all", records=RECORDS, transaction_version=transaction_version,
                    dialect=dialect)
    start = time.perf_counter()
    failing = sweep(cfg, seeds)
    elapsed = time.perf_counter() - start
    print(f"\n{workload}, all faults, transaction.version {transaction_version}, {dialect}: {n} seeds in {elapsed:.0f}s "
          f"({n / elapsed:.1f} seeds/s)")
    # Kafka's own anomalies of the classic protocol (transaction.version < 2: a late request of one transaction acts on
    # the producer's next, which has the same epoch), as the sweep's report finds them: a late request in the run, and
    # none under transaction.version 2 (txnlab.sweep.classic; seed 189 is one, in test_sweep_found.py).  Nothing else.
    failing = [f for f in failing if not is_classic_anomaly(run_seed(f[0], cfg))]
    assert failing == [], "\n".join(f"seed {s}: {summ} {err or ''}" for s, _v, summ, err in failing[:5])


def test_without_faults_every_workload_is_exactly_once():
    for workload in sorted(SEEDS):
        r = run_seed(0, RunConfig(workload=workload, faults="none", records=RECORDS))
        assert r.ok and r.finished, (workload, r.result.explain())
