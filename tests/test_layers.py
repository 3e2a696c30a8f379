"""The structure stays as drawn: layer contracts (import-linter, `.importlinter`), no import circles between
modules, a small ruff rule set (`ruff.toml`), files short enough to read, nothing stray at the top."""
import os
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MAX_LINES = 600


def _run(*cmd: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)


def test_the_layer_contracts_hold():
    out = _run(str(BIN / "lint-imports"), "--no-cache", "--no-logo")
    assert out.returncode == 0, out.stdout + out.stderr


def _cycles(graph) -> list:
    """Strongly connected components of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict = {}
    low: dict = {}
    on_stack: list = []
    found: list = []

    def visit(v):
        index[v] = low[v] = len(index)
        on_stack.append(v)
        return (v, iter(sorted(graph.find_modules_directly_imported_by(v))))

    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [visit(root)]
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    work.append(visit(w))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                i = on_stack.index(v)
                comp, on_stack[i:] = on_stack[i:], []
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_module_imports_itself_in_a_circle():
    sys.path.insert(0, str(ROOT))
    graph = grimp.build_graph("txnlab", "widgets", cache_dir=None)
    assert _cycles(graph) == []


def test_ruff_finds_nothing():
    out = _run(str(BIN / "ruff"), "check", "--no-cache", ".")
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_source_file_is_short_enough_to_read():
    long = {str(p.relative_to(ROOT)): n for base in ("txnlab", "widgets")
            for p in (ROOT / base).rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_nothing_stray_at_the_top_level():
    assert not list(ROOT.glob("*.whl"))
    assert "/work/" not in (ROOT / "pyproject.toml").read_text()
