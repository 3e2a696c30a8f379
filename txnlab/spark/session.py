"""The lab's SparkSession: quiet, quick to start in local mode, and started in the background while it waits.

Owns ``quiet(builder)``: the driver JVM logs with ``log4j2-quiet.properties`` (warnings and errors, Hadoop's
start-up notice left out).  The JVM's own "Using incubator modules" line comes from Java, before any logging
exists, and stays.

``QUICK_JVM``: Java options for a notebook's short Spark jobs -- the JVM's quick (C1) compiler only and one
garbage-collector thread.  The optimizing compiler and the parallel collector pay off in long jobs; here they
spent about half of the JVM's CPU time (measured: 25.6 -> 12.3 CPU seconds for chapter 07's session).

``quick_jvm()``: ``QUICK_JVM`` plus the archive of Spark's classes, when ``python -m txnlab.spark.session`` has
recorded it (``build/spark-classes``; ``make install`` does).

``quick_python()``: Spark's Python processes import the installed pyspark, with its bytecode cache, instead of
compiling Spark's zip copy of it again in each process.

``start_in_background(build)``: run ``build(say)`` (which returns the SparkSession) on a thread, so the kernel
goes on with other cells while Spark starts; ``.result()`` waits for it, with a line that says what Spark is
doing while it waits, and makes the session the active one of the thread that waits (Spark keeps it per thread).
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from .status import Status

LOG_CONFIG = Path(__file__).with_name("log4j2-quiet.properties")
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
ARCHIVE_DIR = Path(__file__).resolve().parents[2] / "build" / "spark-classes"
WORKERS_PATH = Path(__file__).resolve().with_name("workers")


def quick_python() -> None:
    """Let the Python processes Spark starts import the installed pyspark rather than Spark's zip copy of it
    (``workers/sitecustomize.py``; Python compiles modules from a zip again in every process): puts that directory
    on ``PYTHONPATH``, which Spark's JVM -- started after this -- hands to them (measured: their CPU time 10.4 ->
    5.1 s in a chapter-07 run).  Call before the session starts; this kernel's own imports are not changed."""
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(WORKERS_PATH) not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join(parts + [str(WORKERS_PATH)])


def class_archive() -> Path:
    """Where the archive of Spark's loaded classes for this pyspark lives (``record_class_archive`` writes it)."""
    import pyspark
    return ARCHIVE_DIR / f"pyspark-{pyspark.__version__}.jsa"


def quick_jvm(archive: Optional[Path] = None) -> str:
    """``QUICK_JVM``, plus Java's class-data sharing from the archive of Spark's classes when it has been
    recorded (``python -m txnlab.spark.session``): the JVM maps the classes it loaded last time instead of
    loading and verifying them again (measured: Spark's start 6.0 -> 3.0 CPU seconds, a first read 3.0 -> 1.5).
    The JVM checks that the archive fits (same Java, same jars) and otherwise starts without it, silently."""
    archive = archive or class_archive()
    if not archive.exists():
        return QUICK_JVM
    return f"{QUICK_JVM} -XX:SharedArchiveFile={archive} -Xlog:cds*=off -Xlog:class+path=off"


_RECORD = """
import os, sys, tempfile
from pyspark import SparkContext
from pyspark.sql import SparkSession
from txnlab import Cluster
from txnlab.spark import register
from txnlab.spark import pipeline as pl
from txnlab.spark.session import QUICK_JVM, quiet
spark = (quiet(SparkSession.builder, QUICK_JVM + " -XX:ArchiveClassesAtExit=" + sys.argv[1] + " -Xlog:cds*=off")
         .master("local[2,3]").config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.python.daemon.module", "txnlab.spark_daemon").getOrCreate())
spark.sparkContext.setLogLevel("OFF")
register(spark)
cluster = Cluster(brokers=1, seed=1)
pl.load_orders(cluster, pl.read_orders()[:300], partitions=1)
address = cluster.serve()
spark.read.format("txnlab").option("bootstrap.servers", address).option("subscribe", "orders").load().toPandas()
for delivery in ("at-least-once", "exactly-once"):
    pl.run_income(spark, cluster, output="out-" + delivery, delivery=delivery, max_per_trigger=100, status=False,
                  checkpoint=tempfile.mkdtemp() + "/ck", sink_id="record-" + delivery)
jvm = SparkContext._gateway.proc
spark.stop()
jvm.stdin.close()                      # the JVM exits when its stdin closes, and writes the archive as it exits
sys.exit(jvm.wait(timeout=600))
"""


def record_class_archive(archive: Optional[Path] = None, quiet_output: bool = True) -> Path:
    """Run a short Spark session (a read and both sinks' streaming queries on a small cluster) in another
    process whose JVM records the classes it loaded into ``archive`` when it exits (Java's
    ``-XX:ArchiveClassesAtExit``).  Takes about half a minute once; later sessions start from it."""
    archive = Path(archive or class_archive())
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
    env = {**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
           "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    try:
        done = subprocess.run([sys.executable, "-c", _RECORD, str(partial)], env=env, timeout=900,
                              capture_output=quiet_output, text=True)
        if done.returncode != 0 or not partial.exists():
            raise RuntimeError(f"recording Spark's classes failed (exit {done.returncode}): "
                               f"{(done.stderr or '').strip().splitlines()[-1:]}")
        partial.replace(archive)               # whole, or not at all
    finally:
        partial.unlink(missing_ok=True)
    return archive


def quiet(builder, extra_java_options: str = ""):
    """``builder`` (a ``SparkSession.Builder``) with the lab's quiet logging; call before ``getOrCreate()``."""
    opts = f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()} {extra_java_options}".strip()
    return builder.config("spark.driver.extraJavaOptions", opts)


def jvm_stage() -> str:
    """What PySpark's start-up is doing now, from its own state: the JVM, then the SparkContext in it."""
    from pyspark import SparkContext
    if SparkContext._gateway is None:
        return "Spark's JVM is starting (spark-submit launches java and loads Spark's classes)"
    sc = SparkContext._active_spark_context
    if sc is None or getattr(sc, "_jsc", None) is None:
        return "the JVM is up; Spark is creating its SparkContext (scheduler, local executor, block manager)"
    return "the SparkContext is up; Spark is creating the SparkSession"


class Starting:
    """A SparkSession being built on a background thread (see ``start_in_background``)."""

    JVM = object()          # say(Starting.JVM): from now on the line follows PySpark's own start-up stages

    def __init__(self, build: Callable, title: str = "Spark", status: bool = True) -> None:
        self._build = build
        self._said: object = "getting ready"
        self._spark = None
        self._error = None
        self.seconds = None
        self._done = threading.Event()
        self._status = Status(title, enabled=status)
        self._started = time.perf_counter()
        threading.Thread(target=self._run, name="txnlab-spark-start", daemon=True).start()
        threading.Thread(target=self._tick, name="txnlab-spark-start-status", daemon=True).start()

    def say(self, what) -> None:
        self._said = what

    def doing(self) -> str:
        """What the start is doing now (in words)."""
        if self._done.is_set():
            return "ready" if self._error is None else f"failed: {self._error}"
        if self._said is Starting.JVM:
            try:
                return jvm_stage()
            except Exception:  # noqa: BLE001 - PySpark's internals moved: say less, never stop the line
                return "Spark's JVM and SparkContext are starting"
        return str(self._said)

    def _run(self) -> None:
        try:
            self._spark = self._build(self.say)
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits in result()
            self._error = e
        finally:
            self.seconds = time.perf_counter() - self._started
            self._done.set()

    def _tick(self) -> None:
        while not self._done.wait(1.0):
            self._status.show(self.doing(), again=True)
        self._status.done("ready" if self._error is None else f"failed: {self._error}")

    def ready(self) -> bool:
        return self._done.is_set()

    def result(self, status: bool = True):
        """The SparkSession, once started (a line says what Spark is doing while this waits)."""
        if not self._done.is_set():
            waiting = Status("waiting for Spark", enabled=status)
            while not self._done.wait(0.5):
                waiting.show(self.doing(), again=True)
            waiting.done("ready" if self._error is None else "failed")
        if self._error is not None:
            raise self._error
        _activate(self._spark)
        return self._spark


def _activate(value) -> None:
    """Make the SparkSession in ``value`` (or the first item of a tuple) the calling thread's active session.
    Spark keeps the active session per thread; a session built on another thread is not active in this one, and
    a streaming query started here would not find the data sources registered with it."""
    from pyspark.sql import SparkSession
    spark = value[0] if isinstance(value, tuple) and value else value
    if isinstance(spark, SparkSession):
        spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
        SparkSession._activeSession = spark


def start_in_background(build: Callable, title: str = "Spark", status: bool = True) -> Starting:
    """Start ``build(say)`` -- a function that builds and returns a SparkSession -- on a thread now.  ``say(text)``
    sets the status line; ``say(Starting.JVM)`` hands it to PySpark's own stages (around ``getOrCreate()``)."""
    return Starting(build, title, status)


if __name__ == "__main__":
    print("recording Spark's classes (about half a minute) ...", flush=True)
    print("wrote", record_class_archive())
