"""The lab's SparkSession helpers without starting Spark: a start on a thread that says what it is doing and hands
over its result or its error, the status line of a Spark job, the Java options, and the worker daemon's path."""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from txnlab import spark_daemon  # noqa: E402
from txnlab.spark import session  # noqa: E402
from txnlab.spark.session import QUICK_JVM, Starting, quick_jvm, start_in_background  # noqa: E402
from txnlab.spark.status import watching  # noqa: E402


def test_a_background_start_says_each_step_and_hands_over_its_result():
    step, go = threading.Event(), threading.Event()
    seen = []

    def build(say):
        say("looking for the connector")
        step.set()
        go.wait(5)
        return "the session"

    s = start_in_background(build, status=False)
    assert step.wait(5)
    seen.append(s.doing())
    assert not s.ready()
    go.set()
    assert s.result(status=False) == "the session"
    assert s.ready() and s.doing() == "ready" and s.seconds is not None
    assert seen == ["looking for the connector"]


def test_during_the_jvm_step_the_line_follows_pyspark_s_own_start(monkeypatch):
    from pyspark import SparkContext
    said, go = threading.Event(), threading.Event()
    s = start_in_background(lambda say: (say(Starting.JVM), said.set(), go.wait(5)), status=False)
    assert said.wait(5)
    monkeypatch.setattr(SparkContext, "_gateway", None)
    assert s.doing().startswith("Spark's JVM is starting")
    monkeypatch.setattr(SparkContext, "_gateway", object())
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    assert s.doing().startswith("the JVM is up; Spark is creating its SparkContext")
    go.set()
    s.result(status=False)


def test_a_failed_start_raises_in_whoever_waits():
    def build(say):
        raise RuntimeError("no java")
    s = start_in_background(build, status=False)
    with pytest.raises(RuntimeError, match="no java"):
        s.result(status=False)
    assert s.doing() == "failed: no java"


def test_the_quick_jvm_uses_the_class_archive_only_when_it_was_recorded(tmp_path):
    missing = tmp_path / "none.jsa"
    assert quick_jvm(missing) == QUICK_JVM
    archive = tmp_path / "spark.jsa"
    archive.write_bytes(b"x")
    opts = quick_jvm(archive).split()
    assert opts[:2] == QUICK_JVM.split() and f"-XX:SharedArchiveFile={archive}" in opts
    assert session.class_archive().parent == session.ARCHIVE_DIR


class FakeTracker:
    def __init__(self):
        self.jobs = []

    def getActiveJobsIds(self):
        return self.jobs

    def getJobInfo(self, job):
        return type("Job", (), {"stageIds": [7]})()

    def getStageInfo(self, stage):
        from pyspark.status import SparkStageInfo
        return SparkStageInfo(stage, 0, "collect", 3, 2, 1, 0)


class FakeSpark:
    def __init__(self):
        self.tracker = FakeTracker()
        self.sparkContext = self

    def statusTracker(self):
        return self.tracker


def test_a_job_s_status_line_says_planning_then_its_tasks_then_finishing(capsys):
    spark = FakeSpark()
    w = watching(spark, "a read", planning="planning the read", finishing="the rows are coming", every_s=60)
    with w:
        assert w.doing() == "planning the read"
        spark.tracker.jobs = [4]
        assert w.doing() == "Spark is running job 4: 1 of 3 tasks done, 2 running"
        spark.tracker.jobs = []
        assert w.doing() == "the rows are coming"
    lines = capsys.readouterr().err.splitlines()
    assert [ln.split(": ", 1)[1].rsplit(" (", 1)[0] for ln in lines] == ["planning the read", "done"]


def _workers_sitecustomize():
    """``txnlab/spark/workers/sitecustomize.py`` loaded under another name (so its start-up work does not run)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("lab_sitecustomize", session.WORKERS_PATH / "sitecustomize.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_spark_s_python_processes_import_the_installed_pyspark_instead_of_its_zip(monkeypatch, tmp_path):
    drop_pyspark_zips = _workers_sitecustomize().drop_pyspark_zips
    site = tmp_path / "site-packages"
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    elsewhere = tmp_path / "spark-home" / "python" / "lib" / "pyspark.zip"
    path = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"), str(elsewhere), str(site)]
    monkeypatch.setattr(sys, "path", list(path))
    assert drop_pyspark_zips() is True
    assert sys.path == [str(elsewhere), str(site)]          # a zip of another Spark home stays
    monkeypatch.setattr(sys, "path", [str(lib / "pyspark.zip")])   # the package is not importable otherwise
    assert drop_pyspark_zips() is False and sys.path == [str(lib / "pyspark.zip")]
    assert not Path(spark_daemon.__file__).parent.name == "spark"   # importing it imports no PySpark first


def test_quick_python_puts_the_workers_directory_on_pythonpath_once(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    session.quick_python()
    session.quick_python()
    assert os.environ["PYTHONPATH"].split(os.pathsep) == ["/somewhere", str(session.WORKERS_PATH)]


def test_a_process_spark_starts_imports_the_installed_pyspark_not_the_zip_spark_puts_first():
    import subprocess

    import pyspark
    lib = Path(pyspark.__file__).parent / "python" / "lib"
    zips = sorted(str(p) for p in lib.glob("*.zip"))
    assert any(z.endswith("pyspark.zip") for z in zips)
    code = "import pyspark, sys; print(pyspark.__file__); print(any('pyspark.zip' in p for p in sys.path))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(zips + [str(session.WORKERS_PATH)])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [pyspark.__file__, "False"]
    env["PYTHONPATH"] = os.pathsep.join(zips)                      # without it: Spark's zip copy
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert ".zip" in out.stdout.split()[0]
