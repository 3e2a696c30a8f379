"""The chapters are kept as jupytext pairs: each ``notebooks/NN_name.ipynb`` has its percent-format text
``notebooks/NN_name.py`` (paired by ``notebooks/jupytext.toml``), the two hold the same cells, and the
notebooks are committed without outputs.  A teacher may edit either file; these tests say when the other
one was not brought along (``jupytext --sync notebooks/*.ipynb`` mends it)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import jupytext
import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
IPYNB = sorted(NOTEBOOKS.glob("*.ipynb"))
TEXT = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def _cells(nb) -> list[tuple[str, str]]:
    """(cell type, source) of every cell, as a reader sees them (trailing blank lines left out)."""
    return [(c.cell_type, c.source.rstrip("\n")) for c in nb.cells]


def test_there_are_chapters():
    assert len(IPYNB) >= 11 and len(TEXT) >= 11


def test_every_notebook_has_its_text_and_every_text_its_notebook():
    assert {p.stem for p in IPYNB} == {p.stem for p in TEXT}


def test_the_folder_pairs_notebooks_with_percent_scripts():
    config = tomllib.loads((NOTEBOOKS / "jupytext.toml").read_text())
    assert set(config["formats"].split(",")) == {"ipynb", "py:percent"}


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.stem)
def test_notebook_and_text_hold_the_same_cells(path):
    notebook = nbformat.read(path, as_version=4)
    text = jupytext.read(path.with_suffix(".py"), fmt="py:percent")
    assert _cells(text) == _cells(notebook), (
        f"{path.name} and {path.stem}.py differ: run `jupytext --sync notebooks/{path.name}`")


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.stem)
def test_notebook_is_committed_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    ran = [i for i, c in enumerate(notebook.cells)
           if c.cell_type == "code" and (c.outputs or c.execution_count is not None)]
    assert ran == [], f"{path.name}: cells {ran} carry outputs or execution counts"


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.stem)
def test_text_is_what_jupytext_writes_for_the_notebook(path):
    """The .py is byte for byte what `jupytext --sync` would write (so syncing changes nothing)."""
    notebook = jupytext.read(path)
    config = jupytext.config.load_jupytext_configuration_file(str(NOTEBOOKS / "jupytext.toml"))
    expected = jupytext.writes(notebook, fmt="py:percent", config=config)
    assert path.with_suffix(".py").read_text() == expected, (
        f"{path.stem}.py is not what jupytext writes for {path.name}: run `jupytext --sync notebooks/{path.name}`")


QUESTION = re.compile(r"\b(Predict|predict_at|Exercise)\(")


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.stem)
def test_only_the_questions_code_is_hidden_and_all_of_it(path):
    """A cell that asks a question (Predict, predict_at, Exercise) opens with its code folded: that code holds the
    check and the explanation, which a learner would read before answering (JupyterLab shows its first line and
    '...'; a click unfolds it).  No other cell is folded: pictures and tables come from `widgets/`, and no cell
    hides pasted helper code."""
    notebook = nbformat.read(path, as_version=4)
    hidden = {i for i, c in enumerate(notebook.cells) if c.metadata.get("jupyter", {}).get("source_hidden")}
    asking = {i for i, c in enumerate(notebook.cells) if c.cell_type == "code" and QUESTION.search(c.source)}
    assert hidden == asking, f"{path.name}: folded {sorted(hidden - asking)}, asking but shown {sorted(asking - hidden)}"
