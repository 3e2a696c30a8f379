"""Spark pipelines over the lab's cluster: income per minute with the at-least-once and the
exactly-once sink, clean and under each Spark-side fault (one SparkSession for the module)."""
from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

from txnlab import Cluster  # noqa: E402
from txnlab.protocol import messages as m  # noqa: E402
from txnlab.spark import SparkFaults, register  # noqa: E402
from txnlab.spark import pipeline as pl  # noqa: E402
from txnlab.spark.io import EARLIEST, LATEST, Link  # noqa: E402

BATCH_ROWS = 10_000          # 20,000 orders -> micro-batches 0 and 1; faults hit batch 1
ALOS, EOS = "at-least-once", "exactly-once"


@pytest.fixture(scope="module")
def spark():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from txnlab.spark.session import quick_jvm, quick_python, quiet
    before = os.environ.get("PYTHONPATH")
    quick_python()                      # chapter 07's settings, so these tests run its Python workers' set-up too
    session = (quiet(SparkSession.builder, quick_jvm()).master("local[2,3]").appName("txnlab-tests")  # 3 attempts
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
               .config("spark.python.daemon.module", "txnlab.spark_daemon")
               .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    if before is None:                  # Spark's JVM has it now; the rest of the test session does not need it
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = before
    session.sparkContext.setLogLevel("OFF")
    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def lab(spark):
    cluster = Cluster(brokers=3, seed=11)
    lines = pl.read_orders()
    pl.load_orders(cluster, lines, partitions=2)     # one task per core: each micro-batch is one wave
    cluster.serve()
    yield cluster
    cluster.front_door.stop()


def records(cluster, topic: str, isolation: str = "read_committed") -> list:
    """(key, value) of every record a reader of ``topic`` sees, in offset order per partition."""
    link = Link(cluster.bootstrap, "test-reader")
    iso = m.READ_COMMITTED if isolation == "read_committed" else m.READ_UNCOMMITTED
    tps = [(topic, p) for p in range(link.partitions(topic))]
    lows, highs = link.offsets(tps, EARLIEST, iso), link.offsets(tps, LATEST, iso)
    out = []
    for tp in tps:
        for _, keys, values, *_ in link.read_range(tp, lows[tp], highs[tp], iso):
            out.extend(zip(keys, values))
    return out


def income(recs: list) -> dict:
    out: dict = {}
    for k, v in recs:
        out[k.decode()] = out.get(k.decode(), 0) + int(v)
    return out


def batch_ends(checkpoint: Path, batch: int) -> dict:
    """{(topic, partition): end offset} of a micro-batch, from Spark's offset log."""
    last = (checkpoint / "offsets" / str(batch)).read_text().strip().splitlines()[-1]
    return {("orders", int(p)): off for p, off in json.loads(last)["orders"].items()}


def orders_income(cluster, start: dict, end: dict, partitions=None) -> dict:
    """Income per minute (cents) of the orders in [start, end) (only ``partitions`` if given)."""
    link = Link(cluster.bootstrap, "test-orders")
    lines = []
    for tp, e in end.items():
        if partitions is not None and tp[1] not in partitions:
            continue
        for _, _, values, *_ in link.read_range(tp, start.get(tp, 0), e, m.READ_COMMITTED):
            lines.extend(v.decode() for v in values)
    return pl.truth_of(lines)


def run(spark, cluster, tmp_path: Path, name: str, delivery: str, faults=None, fresh=True):
    ckpt = tmp_path / f"ckpt-{name}-{delivery}"
    report = pl.run_income(spark, cluster, f"{name}-{delivery}", delivery, str(ckpt), faults=faults,
                           max_per_trigger=BATCH_ROWS, fresh=fresh)
    return report, ckpt, records(cluster, f"{name}-{delivery}")


def minus(a: dict, b: dict) -> dict:
    keys = set(a) | set(b)
    return {k: a.get(k, 0) - b.get(k, 0) for k in keys if a.get(k, 0) != b.get(k, 0)}


@pytest.fixture(scope="module")
def clean(spark, lab, tmp_path_factory):
    """One clean run per sink; the fault tests compare with it."""
    tmp = tmp_path_factory.mktemp("clean")
    return {d: run(spark, lab, tmp, "clean", d) for d in (ALOS, EOS)}


def test_a_clean_run_gives_the_truth_with_both_sinks(lab, clean):
    truth = pl.truth()
    for delivery in (ALOS, EOS):
        report, _, recs = clean[delivery]
        assert report.starts == [(1, "finished")] and report.batches == 2 and report.rows_in == 20_000
        assert income(recs) == truth
    assert Counter(clean[ALOS][2]) == Counter(clean[EOS][2])       # the same increments, once each
    assert income(records(lab, f"clean-{EOS}", "read_uncommitted")) == truth


def test_a_task_failing_after_part_of_its_rows_duplicates_them_only_at_least_once(spark, lab, clean, tmp_path):
    faults = SparkFaults(fail_task_after_rows=3, failing_task=0, batch=1)
    report, _, alos = run(spark, lab, tmp_path, "task-fails", ALOS, faults)
    assert report.starts == [(1, "finished")]                      # Spark retried the task by itself
    extra = Counter(alos) - Counter(clean[ALOS][2])
    assert sum(extra.values()) == 3 and not Counter(clean[ALOS][2]) - Counter(alos)
    assert income(alos) != pl.truth()
    report, _, eos = run(spark, lab, tmp_path, "task-fails", EOS, faults)
    assert income(eos) == pl.truth()
    # the failed attempt's staging transaction was left open and aborted when its retry fenced it
    stage = [e for e in lab.trace if "stage-0" in e.narration and "InitProducerId" in e.text]
    assert stage, "the retry's InitProducerId is in the trace"
    staged = records(lab, "__spark_sink_staging", "read_uncommitted")
    assert len(staged) > len(records(lab, "__spark_sink_staging"))   # aborted staged rows stay in the log


@pytest.mark.parametrize("faults, name", [
    (SparkFaults(commit_error="after-publish", batch=1), "commit-fails"),
    (SparkFaults(stop_after_publish=True, batch=1), "driver-stops"),
])
def test_a_replayed_batch_is_counted_twice_at_least_once_and_once_exactly_once(spark, lab, tmp_path, faults, name):
    report, ckpt, alos = run(spark, lab, tmp_path, name, ALOS, faults)
    assert len(report.starts) == 2 and report.starts[-1][1] == "finished"
    replayed = orders_income(lab, batch_ends(ckpt, 0), batch_ends(ckpt, 1))
    assert minus(income(alos), pl.truth()) == replayed              # batch 1's orders, counted twice
    report, _, eos = run(spark, lab, tmp_path, name, EOS, faults)
    assert len(report.starts) == 2 and report.starts[-1][1] == "finished"
    assert income(eos) == pl.truth()


def test_a_publish_that_dies_before_its_commit_is_aborted_and_invisible_to_read_committed(spark, lab, tmp_path):
    faults = SparkFaults(commit_error="mid-publish", batch=1)
    report, ckpt, eos = run(spark, lab, tmp_path, "publish-dies", EOS, faults)
    assert [s for _, s in report.starts][0].startswith("failed") and report.starts[-1][1] == "finished"
    assert income(eos) == pl.truth()
    uncommitted = income(records(lab, f"publish-dies-{EOS}", "read_uncommitted"))
    replayed = orders_income(lab, batch_ends(ckpt, 0), batch_ends(ckpt, 1))
    assert minus(uncommitted, pl.truth()) == replayed                # the aborted copy is in the log


def test_a_duplicate_task_attempt_writes_twice_only_at_least_once(spark, lab, tmp_path):
    faults = SparkFaults(duplicate_task=1, batch=1)
    report, ckpt, alos = run(spark, lab, tmp_path, "speculative", ALOS, faults)
    task1 = orders_income(lab, batch_ends(ckpt, 0), batch_ends(ckpt, 1), partitions={1})
    assert minus(income(alos), pl.truth()) == task1                 # task 1 reads partition 1
    _, _, eos = run(spark, lab, tmp_path, "speculative", EOS, faults)
    assert income(eos) == pl.truth()


def test_restarting_from_a_checkpoint_without_its_last_commit_replays_into_a_no_op(spark, lab, tmp_path):
    _, ckpt, before = run(spark, lab, tmp_path, "killed", EOS)
    assert pl.forget_last_commit(str(ckpt)) == 1       # as if the driver died after publishing batch 1
    report, _, after = run(spark, lab, tmp_path, "killed", EOS, fresh=False)
    assert report.rows_in == BATCH_ROWS                 # Spark replayed batch 1 ...
    assert after == before                              # ... and the sink published nothing new
    _, ckpt, before = run(spark, lab, tmp_path, "killed", ALOS)
    pl.forget_last_commit(str(ckpt))
    _, _, after = run(spark, lab, tmp_path, "killed", ALOS, fresh=False)
    assert len(after) > len(before) and minus(income(after), income(before))


def test_exactly_once_survives_a_broker_crash_in_the_middle_of_the_pipeline(spark, lab, tmp_path):
    crashed = []

    def crash_a_broker(batch: int) -> None:
        if batch == 1 and not crashed:
            victim = lab.transaction_coordinator("spark-sink-crash-publish")
            lab.crash(victim)
            crashed.append(victim)
    report = pl.run_income(spark, lab, f"crash-{EOS}", EOS, str(tmp_path / "ckpt"), sink_id="spark-sink-crash",
                           max_per_trigger=BATCH_ROWS, on_commit=crash_a_broker)
    lab.restart(crashed[0])
    assert crashed and report.starts[-1][1] == "finished"
    assert income(records(lab, f"crash-{EOS}")) == pl.truth()


def test_a_batch_read_of_an_empty_topic_gives_no_rows(spark, lab):
    lab.create_topic("nothing-yet", partitions=2, replication_factor=3)
    df = (spark.read.format("txnlab").option("bootstrap.servers", lab.front_door.address)
          .option("subscribe", "nothing-yet").load())
    assert df.count() == 0
    assert df.columns[:3] == ["key", "value", "topic"]
