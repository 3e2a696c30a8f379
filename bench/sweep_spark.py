"""Sweep seeds on Spark: seeds per second in local mode with one core and with every core of this machine.

Each measurement starts its own SparkSession (``local[1]``, then ``local[N]``), runs one warm-up wave (the JVM,
the Python workers and their imports), then times ``SEEDS`` seeds of the copier workload (200 records, every
fault) through ``txnlab.sweep.spark.run_on_spark``.  ``sweep_spark_scaling`` is the ratio of the two (target:
>= 1.8 with 2 cores).  The wall clock is read here, never in the engine.
"""
from __future__ import annotations

import os
import time

SEEDS = 48
RECORDS = 200


def _seeds_per_s(master: str, n: int) -> float:
    from txnlab.sweep.runner import RunConfig
    from txnlab.sweep.spark import run_on_spark, session

    spark = session(master, status=lambda text: None)
    try:
        cfg = RunConfig(workload="copier", faults="all", records=RECORDS)
        slots = spark.sparkContext.defaultParallelism
        list(run_on_spark(range(10_000, 10_000 + 2 * slots), cfg, spark=spark))       # warm-up
        start = time.perf_counter()
        list(run_on_spark(range(n), cfg, spark=spark))
        return n / (time.perf_counter() - start)
    finally:
        spark.stop()


def one_core_seeds_per_s(n: int = SEEDS) -> float:
    return _seeds_per_s("local[1]", n)


def all_cores_seeds_per_s(n: int = SEEDS) -> float:
    return _seeds_per_s(f"local[{os.cpu_count() or 1}]", n)
