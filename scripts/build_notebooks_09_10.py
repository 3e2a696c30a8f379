"""Write notebooks/09_rocketmq_vs_kafka.ipynb and notebooks/10_two_phase_commit.ipynb (without outputs).

    python3 scripts/build_notebooks_09_10.py

The cells live in scripts/nb09_rocketmq_vs_kafka.py and scripts/nb10_two_phase_commit.py.  Each section
teaches in four moves: explain (markdown), let the learner predict (a "Predict:" cell), step the
simulation, then check (an assert cell on what the learner should have seen).
"""
from __future__ import annotations

import pathlib
import sys

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import nb09_rocketmq_vs_kafka  # noqa: E402
import nb10_two_phase_commit  # noqa: E402


def build(cells: list, name: str) -> None:
    made = [new_markdown_cell(t.strip("\n")) if kind == "md" else new_code_cell(t.strip("\n")) for kind, t in cells]
    for i, cell in enumerate(made):
        cell["id"] = f"{name[:2]}-{i:02d}"       # stable ids: rebuilding gives the same file
    nb = new_notebook(cells=made, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}})
    nbformat.validate(nb)
    path = ROOT / "notebooks" / name
    nbformat.write(nb, str(path))
    print("wrote", path.relative_to(ROOT))


if __name__ == "__main__":
    build(nb09_rocketmq_vs_kafka.CELLS, "09_rocketmq_vs_kafka.ipynb")
    build(nb10_two_phase_commit.CELLS, "10_two_phase_commit.ipynb")
