"""Sweep seeds as Spark tasks: the same seeds, the same results, on one machine's cores or a whole cluster.

    python -m txnlab.sweep --seeds 1000 --spark local[*]            # this machine, every core
    python -m txnlab.sweep --seeds 100000 --spark spark://host:7077  # a Spark cluster
    python -m txnlab.sweep --seeds 1000 --spark local[2] --table results.parquet

From a notebook: ``results = run_on_spark(range(1000), RunConfig(), spark=spark)`` with the notebook's
SparkSession, then ``to_dataframe(spark, results)`` for analysis.  The explorer's work goes to Spark too
(``python -m txnlab.sweep.explore --spark``: ``explore_parallel.explore_on_spark``).

A seed is a pure function of (seed, config, schedule): each Spark task runs some seeds with ``run_seed`` exactly
as ``--jobs`` does, and the driver gets the ``SeedResult`` values back and hands them on in seed order.  So
the report, the first failing seed and its minimized counterexample do not depend on where the seeds ran.  The
seeds go out in waves (a few tasks per core), so the progress line moves and a sweep that stops at its first
violation does not run all of its seeds.  The executors need the same txnlab (and Python) as the driver: in
local mode they are this machine's processes; on a cluster, install txnlab on every node or ship it with
``spark-submit --py-files``.
"""
from __future__ import annotations

import os
import sys
from typing import Callable, Iterable, Iterator, Optional

from .runner import RunConfig, SeedResult, run_seed

COLUMNS = ("seed", "workload", "faults", "transaction_version", "mutation", "outcome", "violations", "steps",
           "sim_ms", "faults_scheduled")
WAVE_TASKS_PER_CORE = 4      # tasks per core in one wave (one Spark job)
SEEDS_PER_TASK = 8           # at most, per task


def session(master: str = "local[*]", app: str = "txnlab sweep", status: Optional[Callable[[str], None]] = None):
    """A SparkSession on ``master`` (the running one when there is one)."""
    say = status or (lambda text: print(text, file=sys.stderr, flush=True))
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")        # loopback only on one machine
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)       # the workers run this very Python
    say(f"starting Spark ({master}): the Java virtual machine takes a few seconds to start ...")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app)
    if master.startswith("local"):
        from ..spark.session import quick_jvm, quiet
        builder = quiet(builder, quick_jvm())
        builder = builder.config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
    builder = builder.config("spark.ui.showConsoleProgress", "false")     # the sweep prints its own progress
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    say(f"Spark is ready: {spark.sparkContext.defaultParallelism} task slot(s)")
    return spark


def _run_chunk(cfg: RunConfig, schedule: Optional[list]):
    def run(seeds: Iterable[int]) -> Iterator[SeedResult]:
        import gc
        gc.freeze()          # the worker's imported modules: never walked by the collector again
        for seed in seeds:
            yield run_seed(seed, cfg, schedule=schedule)
    return run


def run_on_spark(seeds: Iterable[int], cfg: RunConfig, schedule: Optional[list] = None, spark=None,
                 master: str = "local[*]", stop_at_failure: bool = False,
                 progress: Optional[Callable[[int, int], None]] = None) -> Iterator[SeedResult]:
    """The results of ``seeds``, in seed order, computed by Spark tasks (``spark``: a SparkSession, or one is
    started on ``master``).  ``stop_at_failure``: no new wave once a seed failed (the wave that found it is
    still yielded whole, in order).  ``progress(done, total)`` after each wave."""
    cfg.validate()
    seeds = list(seeds)
    if spark is None:
        spark = session(master)
    sc = spark.sparkContext
    slots = max(1, sc.defaultParallelism)
    tasks = slots * WAVE_TASKS_PER_CORE
    per_task = max(1, min(SEEDS_PER_TASK, -(-len(seeds) // tasks)))
    wave = tasks * per_task
    run = _run_chunk(cfg, schedule)
    done = 0
    for start in range(0, len(seeds), wave):
        part = seeds[start:start + wave]
        rdd = sc.parallelize(part, max(1, -(-len(part) // per_task)))
        order = {s: i for i, s in enumerate(part)}
        results = sorted(rdd.mapPartitions(run).collect(), key=lambda r: order[r.seed])
        done += len(results)
        if progress is not None:
            progress(done, len(seeds))
        yield from results
        if stop_at_failure and any(not r.ok for r in results):
            return


def row(res: SeedResult) -> dict:
    """One seed as a table row."""
    c = res.config
    return {"seed": res.seed, "workload": c.workload, "faults": c.faults, "transaction_version": c.transaction_version,
            "mutation": c.mutation or "", "outcome": "ok" if res.ok else "violation",
            "violations": ",".join(res.violations), "steps": res.steps, "sim_ms": res.sim_ms,
            "faults_scheduled": len(res.schedule)}


def to_pandas(results: Iterable[SeedResult]):
    import pandas as pd
    return pd.DataFrame([row(r) for r in results], columns=list(COLUMNS))


def to_dataframe(spark, results: Iterable[SeedResult]):
    """The results as a Spark DataFrame (columns ``COLUMNS``)."""
    return spark.createDataFrame(to_pandas(results))


def write_table(results: Iterable[SeedResult], path: str) -> None:
    """Write the results as parquet (``*.parquet``) or CSV (anything else), one row per seed."""
    write_frame(to_pandas(results), path)


def write_rows(rows: Iterable[dict], columns: Iterable[str], path: str) -> None:
    """Plain rows (dicts) as a table with ``columns``: parquet (``*.parquet``) or CSV (anything else)."""
    import pandas as pd
    write_frame(pd.DataFrame(list(rows), columns=list(columns)), path)


def write_frame(df, path: str) -> None:
    """A pandas DataFrame as parquet (``*.parquet``) or CSV (anything else)."""
    if path.endswith(".parquet"):
        df.to_parquet(path, index=False)
    else:
        df.to_csv(path, index=False)


__all__ = ["run_on_spark", "session", "row", "to_pandas", "to_dataframe", "write_table", "write_rows", "write_frame", "COLUMNS"]
