"""JupyterLab as `make lab` runs it (`jupyter lab --config=jupyter/jupyter_lab_config.py`).

- Offline: no news feed, no update check (JupyterLab's `check_for_updates_class`; the announcements
  plugin's `fetchNews`/`checkForUpdates` default to off in `lab-settings/overrides.json`), so the server never
  reaches the internet and a learner is never asked about announcements.
- A reopened notebook: a live widget (the stepper, a prediction, a picture) lives in the running kernel and
  cannot be saved; on save its output keeps a plain line, "run this cell", instead of a reference to a widget
  that will not exist, which JupyterLab would show as "Error displaying widget: model not found".
- `make lab` serves a working copy (build/lab), so nothing a learner runs is written into the tracked
  notebooks; `make author` serves notebooks/ and saves them without any outputs.
"""
import os
import warnings

# Jupyter reads this file twice (the server and the lab extension): the second reading sets the same hook again
warnings.filterwarnings("ignore", message="Overriding existing pre_save_hook")

HERE = os.path.dirname(os.path.abspath(__file__))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
RUN_THIS_CELL = ("▶ Run this cell to start it: this was a live widget (the stepper, a prediction or a "
                 "picture), which runs in the notebook's kernel and is not saved with the notebook.")


def widget_outputs_to_a_note(model, **_kw):
    """pre_save_hook: every widget output becomes the plain 'run this cell' line (other outputs stay)."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    for cell in model["content"].get("cells", ()):
        for out in cell.get("outputs", ()) or ():
            data = out.get("data") if isinstance(out, dict) else None
            if isinstance(data, dict) and WIDGET_VIEW in data:
                out["data"] = {"text/plain": RUN_THIS_CELL}


def no_outputs(model, **_kw):
    """pre_save_hook for authors: notebooks are committed without outputs or execution counts."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    for cell in model["content"].get("cells", ()):
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None


c = get_config()  # noqa: F821  (provided by Jupyter when it loads this file)
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
c.LabApp.app_settings_dir = os.path.join(HERE, "lab-settings")
c.ServerApp.ip = "127.0.0.1"
c.FileContentsManager.pre_save_hook = (no_outputs if os.environ.get("TXNLAB_AUTHOR") == "1"
                                       else widget_outputs_to_a_note)
