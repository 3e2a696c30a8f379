"""Sweep seeds and explorer runs on Spark, in local mode with one core and with every core of this machine.

Each measurement starts its own SparkSession (``local[1]``, then ``local[N]``), runs one warm-up wave (the JVM,
the Python workers and their imports), then times ``SEEDS`` seeds of the copier workload (200 records, every
fault) through ``txnlab.sweep.spark.run_on_spark``.  ``sweep_spark_scaling`` is the ratio of the two (target:
>= 1.8 with 2 cores).  The explorer's figures time one exploration of the real engine (the copier scenario on
three brokers, ``EXPLORE_RUNS`` runs) split into ``EXPLORE_PARTS`` parts that run as Spark tasks
(``explore_parallel.explore_split``): the same parts and runs with one core or all, so runs per second compare.
The wall clock is read here, never in the engine.
"""
from __future__ import annotations

import os
import time

SEEDS = 48
RECORDS = 200
EXPLORE_RUNS = 480
EXPLORE_PARTS = 16


def _per_s(master: str, warm_up, timed) -> float:
    """Start a session on ``master``, run ``warm_up(spark, slots)``, then time ``timed(spark)``, which returns how
    many things it did: things per second."""
    from txnlab.sweep.spark import session

    spark = session(master, status=lambda text: None)
    try:
        warm_up(spark, spark.sparkContext.defaultParallelism)
        start = time.perf_counter()
        done = timed(spark)
        return done / (time.perf_counter() - start)
    finally:
        spark.stop()


def _seeds_per_s(master: str, n: int) -> float:
    from txnlab.sweep.runner import RunConfig
    from txnlab.sweep.spark import run_on_spark

    cfg = RunConfig(workload="copier", faults="all", records=RECORDS)
    return _per_s(master, lambda spark, slots: list(run_on_spark(range(10_000, 10_000 + 2 * slots), cfg, spark=spark)),
                  lambda spark: len(list(run_on_spark(range(n), cfg, spark=spark))))


def _explorer_runs_per_s(master: str, n: int) -> float:
    from txnlab.sweep.explore_parallel import explore_split

    return _per_s(master, lambda spark, slots: explore_split({"brokers": 3, "max_runs": 4 * slots}, 2 * slots,
                                                             spark=spark),
                  lambda spark: explore_split({"brokers": 3, "max_runs": n}, EXPLORE_PARTS, spark=spark)["runs"])


def one_core_seeds_per_s(n: int = SEEDS) -> float:
    return _seeds_per_s("local[1]", n)


def all_cores_seeds_per_s(n: int = SEEDS) -> float:
    return _seeds_per_s(f"local[{os.cpu_count() or 1}]", n)


def explorer_one_core_runs_per_s(n: int = EXPLORE_RUNS) -> float:
    return _explorer_runs_per_s("local[1]", n)


def explorer_all_cores_runs_per_s(n: int = EXPLORE_RUNS) -> float:
    return _explorer_runs_per_s(f"local[{os.cpu_count() or 1}]", n)
