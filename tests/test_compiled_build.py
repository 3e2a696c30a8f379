"""The optional compiled build (``make compiled``: mypyc, ``scripts/compile_engine.py``) writes the same traces as
the pure-Python engine.  The lab never needs the build: without one made from the sources here now, the test is
skipped and says why.  (``make compiled`` runs the full gate itself, with longer sweep seeds as well.)"""
import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "compile_engine", Path(__file__).resolve().parent.parent / "scripts" / "compile_engine.py")
compile_engine = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compile_engine)


def test_the_compiled_build_writes_the_golden_traces():
    problem = compile_engine.build_problem()
    if problem is not None:
        pytest.skip(problem)
    total, bad = compile_engine.golden_mismatches()
    assert total > 200
    assert bad == [], f"{len(bad)} of {total} traces differ under the compiled build"
