"""How `make lab` serves the chapters: offline (no news, no update check), on a working copy (a learner's
outputs never reach the tracked notebooks), a reopened notebook says "run this cell" instead of a widget
error, and Spark starts without alarming notices."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from traitlets.config import Config

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "jupyter" / "jupyter_lab_config.py"
WIDGET = "application/vnd.jupyter.widget-view+json"


def _load(env: dict, monkeypatch) -> tuple[Config, dict]:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    c = Config()
    ns = {"get_config": lambda: c, "__file__": str(CONFIG)}
    exec(compile(CONFIG.read_text(), str(CONFIG), "exec"), ns)
    return c, ns


def _saved_notebook() -> dict:
    widget_out = {"output_type": "execute_result", "execution_count": 3, "metadata": {},
                  "data": {"text/plain": "VBox(children=...)", WIDGET: {"model_id": "abc", "version_major": 2}}}
    printed = {"output_type": "stream", "name": "stdout", "text": "orders-0: LSO 0\n"}
    return {"type": "notebook", "content": {"cells": [
        {"cell_type": "code", "execution_count": 3, "source": "s.widget", "outputs": [widget_out, printed]},
        {"cell_type": "markdown", "source": "text"}]}}


def test_jupyterlab_never_fetches_news_or_checks_for_updates(monkeypatch):
    c, _ = _load({}, monkeypatch)
    assert c.LabApp.news_url is None
    assert c.LabApp.check_for_updates_class == "jupyterlab.NeverCheckForUpdate"
    overrides = json.loads((Path(c.LabApp.app_settings_dir) / "overrides.json").read_text())
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    assert notification == {"fetchNews": "false", "checkForUpdates": False}
    from jupyterlab import NeverCheckForUpdate  # noqa: F401  (the name the config gives exists)


def test_a_saved_widget_output_becomes_a_run_this_cell_line(monkeypatch):
    monkeypatch.delenv("TXNLAB_AUTHOR", raising=False)
    c, _ = _load({}, monkeypatch)
    model = _saved_notebook()
    c.FileContentsManager.pre_save_hook(model=model, path="00_tour.ipynb", contents_manager=None)
    outs = model["content"]["cells"][0]["outputs"]
    assert WIDGET not in outs[0]["data"] and outs[0]["data"]["text/plain"].startswith("▶ Run this cell")
    assert outs[1]["text"] == "orders-0: LSO 0\n"                      # ordinary outputs stay


def test_an_author_saves_chapters_without_outputs(monkeypatch):
    c, _ = _load({"TXNLAB_AUTHOR": "1"}, monkeypatch)
    model = _saved_notebook()
    c.FileContentsManager.pre_save_hook(model=model, path="00_tour.ipynb", contents_manager=None)
    cell = model["content"]["cells"][0]
    assert cell["outputs"] == [] and cell["execution_count"] is None


def _make_n(target: str) -> str:
    return subprocess.run(["make", "-n", target, "VENV=" + str(ROOT / ".no-venv")], cwd=ROOT, text=True,
                          capture_output=True, check=True).stdout


@pytest.mark.skipif(subprocess.run(["which", "make"], capture_output=True).returncode != 0, reason="no make")
def test_make_lab_serves_a_working_copy_not_the_tracked_notebooks():
    out = _make_n("lab")
    serve = [ln for ln in out.splitlines() if " lab " in ln and "jupyter" in ln]
    assert serve and all(ln.startswith('cd "build/lab"') for ln in serve), out
    assert "jupyter_lab_config.py" in serve[0] and "notebooks/" not in serve[0]
    assert re.search(r'test -e "build/lab/\$\{f##\*/\}" \|\| cp', out)   # copied only when absent
    assert "TXNLAB_AUTHOR=1" in _make_n("author")


def test_spark_sessions_of_the_lab_log_quietly():
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from txnlab.spark.session import LOG_CONFIG, quiet
    b = quiet(SparkSession.builder)
    opts = b._options["spark.driver.extraJavaOptions"]
    assert f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}" in opts and LOG_CONFIG.exists()
    props = dict(ln.split(" = ", 1) for ln in LOG_CONFIG.read_text().splitlines() if " = " in ln)
    assert props["rootLogger.level"] == "warn" and props["logger.hadoop.level"] == "error"
