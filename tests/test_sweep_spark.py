"""Sweep seeds as Spark tasks give what ``--jobs`` gives: the same results per seed, the same report, the same
first failing seed and the same minimized counterexample; the results as a table (parquet or CSV)."""
import pandas as pd
import pytest

from txnlab.sweep.__main__ import main as sweep_main
from txnlab.sweep.runner import RunConfig, run_seed

pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def spark():
    from txnlab.sweep.spark import session
    s = session("local[2]", status=lambda text: None)
    yield s
    s.stop()


def _key(r):
    return (r.seed, r.ok, r.violations, r.steps, r.sim_ms, [f.describe() for f in r.schedule], r.finished)


def test_each_seed_gives_the_same_result_on_spark_executors_as_in_this_process(spark):
    from txnlab.sweep.spark import run_on_spark
    cfg = RunConfig(workload="copier", faults="all", records=10)
    seen = []
    on_spark = list(run_on_spark(range(5), cfg, spark=spark, progress=lambda done, total: seen.append((done, total))))
    assert [_key(r) for r in on_spark] == [_key(run_seed(s, cfg)) for s in range(5)]
    assert seen and seen[-1] == (5, 5)


def test_the_report_first_failing_seed_and_minimized_counterexample_do_not_depend_on_spark(spark, capsys):
    args = ["--workload", "copier", "--faults", "network", "--mutation", "ignore-lso", "--records", "10",
            "--seeds", "3"]
    assert sweep_main(args) == 1
    local = capsys.readouterr().out.splitlines()
    assert sweep_main(args + ["--jobs", "2"]) == 1
    jobs = capsys.readouterr().out.splitlines()
    assert sweep_main(args + ["--spark", "local[2]"]) == 1
    remote = capsys.readouterr().out.splitlines()
    assert any(line.startswith("first failing seed: ") for line in local)
    assert any(line.startswith("counterexample: ") for line in local)
    # everything but the line with the wall-clock time: one process, two (--jobs) and Spark's executors agree
    assert local[:-1] == jobs[:-1] == remote[:-1]


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_the_results_are_a_table_one_row_per_seed(spark, tmp_path, suffix):
    path = str(tmp_path / f"seeds.{suffix}")
    assert sweep_main(["--workload", "copier", "--faults", "none", "--records", "5", "--seeds", "3",
                       "--spark", "local[2]", "--table", path]) == 0
    df = pd.read_parquet(path) if suffix == "parquet" else pd.read_csv(path)
    assert list(df["seed"]) == [0, 1, 2]
    assert set(df["outcome"]) == {"ok"} and set(df["workload"]) == {"copier"} and set(df["faults"]) == {"none"}
    expected = run_seed(1, RunConfig(workload="copier", faults="none", records=5))
    assert (int(df["steps"][1]), int(df["sim_ms"][1])) == (expected.steps, expected.sim_ms)
    from txnlab.sweep.spark import to_dataframe
    from txnlab.sweep.spark import run_on_spark
    sdf = to_dataframe(spark, run_on_spark([4], RunConfig(faults="none", records=5), spark=spark))
    assert sdf.count() == 1 and sdf.first()["seed"] == 4


def test_explorations_as_spark_tasks_find_what_they_find_in_this_process(spark):
    from txnlab.sweep.explore_parallel import explore_row
    from txnlab.sweep.explore_parallel import explore_on_spark
    todo = [{"mutation": "no-fencing", "max_runs": 40}, {"mutation": None, "max_runs": 10}]
    on_spark = list(explore_on_spark(todo, spark=spark))
    assert on_spark == [explore_row(e) for e in todo]
    assert [(r["mutation"], r["found"]) for r in on_spark] == [("no-fencing", True), ("", False)]


def test_the_explorers_mutation_table_and_split_exploration_are_the_same_from_spark_tasks(spark, capsys):
    from helpers import explorer_outputs
    table = ["--mutation", "all", "--brokers", "3", "--max-runs", "5", "--real-runs", "2"]
    (_, local), (_, remote) = explorer_outputs(capsys, table, ["--spark", "local[2]"])
    assert remote == local and "| `ignore-lso` | copier | 1 | read-above-lso |" in local
    split = ["--mutation", "no-fencing", "--brokers", "3", "--split", "4"]
    (s1, local), (s2, remote) = explorer_outputs(capsys, split, ["--spark", "local[2]"])
    assert s1 == s2 == 1 and remote[2:] == local[2:]
    assert remote[1].startswith("parts: 4 (--split 4), side by side: Spark local[2]")


def test_a_local_sweep_starts_its_jvm_with_the_labs_quick_options():
    """The sweep's local Spark session starts its JVM as the lab's chapters do (txnlab.spark.session.quick_jvm: the
    quick compiler only, one garbage-collector thread): on 2 cores the JVM's own CPU during a 96-seed sweep went
    0.8 -> 0.24 s, time the seeds' processes get back.  Checked in a process of its own, whose JVM this starts (a
    JVM already running in this one keeps the options it started with)."""
    import subprocess
    import sys
    probe = ("from txnlab.sweep.spark import session\n"
             "s = session('local[1]', status=lambda text: None)\n"
             "print(list(s.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()"
             ".getInputArguments()))\n"
             "s.stop()\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "-XX:TieredStopAtLevel=1" in out.stdout and "-XX:+UseSerialGC" in out.stdout
