"""The orders pipeline of notebook 07: income per minute, streamed through Spark with either sink.

Owns loading ``datasets/orders.csv`` into the lab's cluster, the streaming
query (Spark reads ``orders`` with the ``txnlab`` source, adds up each
micro-batch's amounts per minute -- one *increment* per minute per task -- and
writes the increments with the ``txnlab`` sink), running it to the end with
``trigger(availableNow=True)`` and restarting it from its checkpoint after a
failure (which is when Spark replays a batch), reading the output back
(income per minute = the sum of a minute's increments), and the ground truth.

The wall clock appears here (progress polling, the grace before a stop); the
engine never sees it.
"""
from __future__ import annotations

import csv
import json
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .faults import SparkFaults
from .sink import SIGNAL_COMMIT, SIGNAL_PUBLISHED
from .status import Status

DATASETS = Path(__file__).resolve().parents[2] / "datasets"
ORDERS_CSV = DATASETS / "orders.csv"
TRUTH_CSV = DATASETS / "income_per_minute.csv"
ORDERS_TOPIC = "orders"


# ---------------------------------------------------------------- the data
def read_orders(path: Path = ORDERS_CSV) -> list[str]:
    """The order lines (without the header), as the producer sends them."""
    with Path(path).open() as f:
        lines = f.read().splitlines()
    return lines[1:]


def load_orders(cluster, lines: list[str], topic: str = ORDERS_TOPIC, partitions: int = 3) -> int:
    """Create ``topic`` and produce one record per order (key: order id, value: the CSV line)."""
    from ..client.producer import Producer
    if topic not in cluster.topics():
        cluster.create_topic(topic, partitions=partitions, replication_factor=min(3, len(cluster.brokers)))
    p = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 20, "client.id": f"{topic}-loader"})
    for line in lines:
        p.produce(topic, key=line.split(",", 1)[0].encode(), value=line.encode())
    left = p.flush(60)
    if left:
        raise RuntimeError(f"{left} orders were not delivered")
    return len(lines)


def truth(path: Path = TRUTH_CSV) -> dict[str, int]:
    """Ground truth: {minute: income in cents}."""
    out = {}
    with Path(path).open() as f:
        for row in csv.DictReader(f):
            whole, frac = row["income"].split(".")
            out[row["minute"]] = int(whole) * 100 + int(frac)
    return out


def truth_of(lines: list[str]) -> dict[str, int]:
    """Income per minute (cents) computed directly from order lines."""
    out: dict[str, int] = {}
    for line in lines:
        _, _, amount, when = line.split(",")
        whole, frac = amount.split(".")
        out[when[:16]] = out.get(when[:16], 0) + int(whole) * 100 + int(frac)
    return out


# ---------------------------------------------------------------- the query
def partial_income(frames):
    """mapInPandas: a task's orders of one micro-batch -> one increment (cents) per minute."""
    import pandas as pd
    total: dict = {}
    for pdf in frames:
        for minute, cents in pdf.groupby("minute")["cents"].sum().items():
            total[minute] = total.get(minute, 0) + int(cents)
    if total:
        yield pd.DataFrame({"key": list(total), "value": [str(v) for v in total.values()]})


def income_increments(spark, bootstrap: str, topic: str = ORDERS_TOPIC, max_per_trigger: Optional[int] = None):
    """The streaming DataFrame (key = minute, value = income increment in cents) the sinks write."""
    from pyspark.sql import functions as F
    reader = (spark.readStream.format("txnlab").option("bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    if max_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_per_trigger))
    fields = F.split(F.col("value").cast("string"), ",")
    orders = reader.load().select(
        F.substring(fields[3], 1, 16).alias("minute"),
        (fields[2].cast("decimal(12,2)") * 100).cast("long").alias("cents"))
    return orders.mapInPandas(partial_income, "key string, value string")


@dataclass
class RunReport:
    """What happened to one pipeline run: each start of the query and how it ended."""
    delivery: str
    output: str
    starts: list = field(default_factory=list)      # (start number, "finished" | "failed: ..." | "stopped")
    errors: list = field(default_factory=list)      # the full text of each failure
    batches: int = 0
    rows_in: int = 0
    seconds: float = 0.0
    batch_ms: list = field(default_factory=list)     # Spark's triggerExecution time of each batch
    durations: list = field(default_factory=list)    # each batch's durationMs (addBatch, latestOffset, ...)

    @property
    def restarts(self) -> int:
        return max(0, len(self.starts) - 1)


def run_income(spark, cluster, output: str, delivery: str, checkpoint: str, faults: Optional[SparkFaults] = None,
               topic: str = ORDERS_TOPIC, max_per_trigger: Optional[int] = 5_000, sink_id: Optional[str] = None,
               on_progress: Optional[Callable[[dict], None]] = None, on_commit: Optional[Callable[[int], None]] = None,
               max_starts: int = 4, fresh: bool = True, stop_grace_s: float = 0.2,
               status: bool = True) -> RunReport:
    """Run the income query to the end of ``topic``, restarting from the checkpoint after a failure
    or a stop (as an operator would), at most ``max_starts`` times.  ``status``: a line says what the run is
    waiting for while it waits (Spark starting the query, a micro-batch running, the sink's commit)."""
    from ..frontdoor.server import serve
    door = serve(cluster)
    faults = faults or SparkFaults()
    if fresh:
        shutil.rmtree(checkpoint, ignore_errors=True)
    if output not in cluster.topics():
        cluster.create_topic(output, partitions=3, replication_factor=min(3, len(cluster.brokers)))
    report = RunReport(delivery, output)
    current: dict = {}
    said = Status(f"{delivery} run", enabled=status)

    def published(data):
        q = current.get("query")
        if q is not None:
            current["stopped"] = True
            threading.Thread(target=q.stop, name="txnlab-stop-query", daemon=True).start()
            waited = 0.0
            while q.isActive and waited < 60:   # stop() has begun (the query is TERMINATED) ...
                time.sleep(0.05)
                waited += 0.05
            time.sleep(stop_grace_s)            # ... before the commit returns
        return "stopping"

    def committing(data):
        said.show(f"the sink is committing micro-batch {data.get('batch')} (a transaction in the cluster)")
        if on_commit is not None:
            on_commit(int(data["batch"]))
    door.on_signal(SIGNAL_PUBLISHED, published)
    door.on_signal(SIGNAL_COMMIT, committing)
    started = time.perf_counter()
    try:
        for n in range(1, max_starts + 1):
            current.clear()
            df = income_increments(spark, door.address, topic, max_per_trigger)
            w = (df.writeStream.format("txnlab").option("bootstrap.servers", door.address)
                 .option("topic", output).option("delivery", delivery).option("checkpointLocation", checkpoint)
                 .option("txnlab.faults", faults.to_option()).trigger(availableNow=True))
            if sink_id:
                w = w.option("txnlab.sink.id", sink_id)
            said.show("starting the streaming query" + (" (the first start of a session takes a few seconds: "
                                                         "Spark plans the query and starts its Python workers)"
                                                         if n == 1 else f" again from its checkpoint (start {n})"))
            q = current["query"] = w.start()
            outcome = _wait(q, report, on_progress, said)
            said.show(f"start {n}: {outcome}")
            if outcome == "finished" and current.get("stopped"):
                outcome = "stopped"
            report.starts.append((n, outcome))
            if outcome == "finished":
                break
    finally:
        door.on_signal(SIGNAL_PUBLISHED, None)
        door.on_signal(SIGNAL_COMMIT, None)
        report.seconds = time.perf_counter() - started
        said.done(f"done: {report.batches} micro-batch(es), {report.rows_in:,} input rows")
    return report


def _wait(q, report: RunReport, on_progress, said: Optional[Status] = None) -> str:
    seen = set()
    while True:
        if said is not None:
            said.spark(q)
        try:
            done = q.awaitTermination(0.25)
        except Exception as e:  # noqa: BLE001 - a failed query is an outcome, reported
            _note_progress(q, report, seen, on_progress)
            report.errors.append(str(e))
            return "failed: " + _first_line(e)
        _note_progress(q, report, seen, on_progress)
        if done:
            return "finished"


def _note_progress(q, report: RunReport, seen: set, on_progress) -> None:
    for p in q.recentProgress:
        key = (p["runId"], p["batchId"])
        rows = int(p.get("numInputRows", 0))
        if key in seen or not rows:
            continue
        seen.add(key)
        report.batches += 1
        report.rows_in += rows
        report.batch_ms.append(int(p.get("durationMs", {}).get("triggerExecution", 0)))
        report.durations.append({k: v for k, v in p.get("durationMs", {}).items() if v})
        if on_progress is not None:
            on_progress({"batch": p["batchId"], "rows": rows, "rows_total": report.rows_in,
                         "batches": report.batches})


def _first_line(e: Exception) -> str:
    lines = str(e).strip().splitlines()
    for line in lines:
        if "InjectedFault: " in line:
            return line.split("InjectedFault: ", 1)[1].strip()[:200]
    return (lines[0] if lines else type(e).__name__)[:200]


# ----------------------------------------------------------------- results
def income_from_topic(cluster, topic: str, isolation: str = "read_committed") -> dict[str, int]:
    """Income per minute (cents) a reader of ``topic`` computes: the sum of each minute's increments."""
    from .io import EARLIEST, LATEST, Link, isolation_of
    link = Link(cluster.bootstrap, f"{topic}-reader")
    iso = isolation_of(isolation)
    n = link.partitions(topic)
    tps = [(topic, p) for p in range(n)]
    lows = link.offsets(tps, EARLIEST, iso)
    highs = link.offsets(tps, LATEST, iso)
    out: dict[str, int] = {}
    for tp in tps:
        for _, keys, values, *_ in link.read_range(tp, lows[tp], highs[tp], iso):
            for k, v in zip(keys, values):
                minute = k.decode()
                out[minute] = out.get(minute, 0) + int(v)
    return out


def forget_last_commit(checkpoint: str) -> Optional[int]:
    """Remove the newest entry of the checkpoint's commit log, as if the driver had been killed
    after the sink published that batch and before Spark recorded it.  Returns its batch id."""
    commits = Path(checkpoint) / "commits"
    ids = sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit()) if commits.exists() else []
    if not ids:
        return None
    last = ids[-1]
    for p in (commits / str(last), commits / f".{last}.crc"):
        if p.exists():
            p.unlink()
    return last


def comparison(truth_cents: dict, results: dict) -> "object":
    """A pandas DataFrame: minute, truth and each result in currency units, plus the differences."""
    import pandas as pd
    minutes = sorted(set(truth_cents).union(*[set(r) for r in results.values()]))
    df = pd.DataFrame({"minute": minutes, "truth": [truth_cents.get(mi, 0) / 100 for mi in minutes]})
    for name, r in results.items():
        df[name] = [r.get(mi, 0) / 100 for mi in minutes]
        df[f"{name} - truth"] = (df[name] - df["truth"]).round(2)
    return df


def summary(truth_cents: dict, result: dict) -> dict:
    """Total income, minutes that differ from the truth, and the extra (or missing) income."""
    minutes = set(truth_cents) | set(result)
    wrong = sorted(mi for mi in minutes if truth_cents.get(mi, 0) != result.get(mi, 0))
    extra = sum(result.get(mi, 0) - truth_cents.get(mi, 0) for mi in minutes)
    return {"total": sum(result.values()) / 100, "minutes_wrong": len(wrong), "extra": extra / 100,
            "wrong": wrong}


def dumps(report: RunReport) -> str:
    return json.dumps({"delivery": report.delivery, "starts": report.starts, "batches": report.batches,
                       "rows_in": report.rows_in, "seconds": round(report.seconds, 2)})
