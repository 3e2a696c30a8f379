"""Build the curriculum notebooks from Python: cells as text, written with nbformat, no outputs.

    python notebooks/_build/make_all.py          # every notebook
    python notebooks/_build/make_01.py           # one notebook

Each ``make_NN.py`` lists its cells with ``md``, ``predict``, ``code``, ``check`` and
``helpers`` and calls ``write``.  The notebooks are committed without outputs; CI runs them
top to bottom (``make test``).
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
NOTEBOOKS = HERE.parent
HELPERS = (HERE / "lab_helpers.py").read_text()


def _clean(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def helper_source(*sections: str) -> str:
    """The source of the named sections of lab_helpers.py (between its begin/end lines)."""
    parts = []
    for name in sections:
        m = re.search(rf"# --- begin: {name} -+\n(.*?)# --- end: {name} -+\n", HELPERS, re.S)
        if m is None:
            raise KeyError(f"no helper section {name!r}")
        parts.append(m.group(1).strip("\n"))
    return "\n\n\n".join(parts)


class Notebook:
    def __init__(self, name: str) -> None:
        self.name = name
        self.cells: list = []

    def md(self, text: str) -> None:
        self.cells.append(new_markdown_cell(_clean(text)))

    def predict(self, text: str) -> None:
        """A question the learner answers before running the next cells."""
        self.cells.append(new_markdown_cell("**Predict:** " + _clean(text)))

    def code(self, text: str, hidden: bool = False) -> None:
        cell = new_code_cell(_clean(text))
        if hidden:
            cell.metadata["jupyter"] = {"source_hidden": True}
        self.cells.append(cell)

    def check(self, text: str, intro: str = "") -> None:
        """Asserts on what the learner should have seen (CI runs them)."""
        self.cells.append(new_markdown_cell("**Check** " + (_clean(intro) if intro else
                                            "what you should have seen (this cell fails if the lab disagrees):")))
        self.cells.append(new_code_cell(_clean(text)))

    def helpers(self, *sections: str) -> None:
        self.md("""
            The next cell defines small helpers for tables and pictures (plain pandas and plotly).
            They only *read* the cluster: its trace, its logs and its partition state.
            Its source is folded; click the bar on its left to read it.
        """)
        self.code(helper_source(*sections), hidden=True)

    def write(self) -> Path:
        nb = new_notebook(cells=self.cells)
        nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
        nb.metadata["language_info"] = {"name": "python"}
        for i, cell in enumerate(nb.cells):
            cell["id"] = f"{self.name[:2]}-{i:03d}"
        nbformat.validate(nb)
        path = NOTEBOOKS / f"{self.name}.ipynb"
        path.write_text(nbformat.writes(nb) + "\n")
        return path
