"""The Spark side of the benchmarks: notebook 07's income query, txnlab source -> Spark -> txnlab sink.

One SparkSession (``local[2]``), one 3-broker cluster with N orders (``datasets/make_orders.py``'s
generator, same seed) and its front door are built once per process and warmed up with one run;
every measured run then starts the streaming query on a fresh checkpoint and output topic and
runs it to the end of the input (``trigger(availableNow=True)``, micro-batches of
``BATCH_ROWS``), timed with ``time.perf_counter`` around ``pipeline.run_income``.

* ``spark_rows_per_s``: input rows per second of the exactly-once pipeline.
* ``spark_eos_alos_ratio``: wall time of the exactly-once run over the at-least-once run, same
  input, same query (the two runs alternate which goes first).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

BATCH_ROWS = 50_000
_STATE: dict = {}


def _lab(n: int) -> dict:
    if _STATE.get("n") == n:
        return _STATE
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "datasets"))
    import make_orders
    from pyspark.sql import SparkSession

    from txnlab import Cluster
    from txnlab.spark import pipeline, register

    spark = _STATE.get("spark")
    if spark is None:
        spark = (SparkSession.builder.master("local[2]").appName("txnlab-bench")
                 .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false").getOrCreate())
        spark.sparkContext.setLogLevel("OFF")
        register(spark)
    cluster = Cluster(brokers=3, seed=0, config={"sim.trace": False})
    lines = [",".join(row) for row in make_orders.generate(n)]
    pipeline.load_orders(cluster, lines)
    cluster.serve()
    _STATE.clear()
    _STATE.update(spark=spark, cluster=cluster, n=n, runs=0, tmp=tempfile.mkdtemp(prefix="txnlab-bench-"))
    _run("exactly-once")                      # warm-up: JVM, Python workers, the query's plan
    return _STATE


def _run(delivery: str) -> float:
    from txnlab.spark import pipeline
    s = _STATE
    s["runs"] += 1
    name = f"bench-{delivery}-{s['runs']}"
    started = time.perf_counter()
    report = pipeline.run_income(s["spark"], s["cluster"], name, delivery, f"{s['tmp']}/{name}",
                                 max_per_trigger=BATCH_ROWS, sink_id=name)
    seconds = time.perf_counter() - started
    if report.starts[-1][1] != "finished" or report.rows_in != s["n"]:
        raise RuntimeError(f"the {delivery} run did not process the input: {pipeline.dumps(report)}")
    return seconds


def spark_rows_per_s(n: int) -> float:
    """n orders through the exactly-once pipeline: input rows per second (warm)."""
    _lab(n)
    return n / _run("exactly-once")


def spark_eos_alos_ratio(n: int) -> float:
    """Wall time of the exactly-once run / the at-least-once run, n orders each (warm)."""
    _lab(n)
    first_eos = _STATE["runs"] % 2 == 0
    if first_eos:
        eos = _run("exactly-once")
        alos = _run("at-least-once")
    else:
        alos = _run("at-least-once")
        eos = _run("exactly-once")
    return eos / alos
