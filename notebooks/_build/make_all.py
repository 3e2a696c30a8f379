"""Regenerate every notebook that has a generator here: ``python notebooks/_build/make_all.py``.

Runs each ``make_NN.py`` of this folder in order; each writes ``notebooks/NN_*.ipynb`` without outputs.
"""
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

for script in sorted(HERE.glob("make_[0-9][0-9].py")):
    print(f"== {script.name}", flush=True)
    runpy.run_path(str(script), run_name="__main__")
