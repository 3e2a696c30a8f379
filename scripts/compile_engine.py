"""An optional compiled build of the engine's hottest modules (mypyc), for measuring; never needed by the lab.

    python scripts/compile_engine.py            # build into build/compiled, then run the gate
    python scripts/compile_engine.py --no-gate  # build only
    python scripts/compile_engine.py --gate     # the gate only (on the build already there)

The build copies the ``txnlab`` package into ``build/compiled/`` and compiles the modules of ``MODULES`` there
with mypyc, from the same sources: the tree the lab and its tests import is never shadowed by compiled files.
Run anything on it from ``build/compiled`` with ``PYTHONPATH=build/compiled:<the tree>`` (the current directory
comes first on ``sys.path``; ``bench/instructions.py`` does so for its ``*_compiled`` figures).
mypyc comes from its own virtual environment (``build/mypyc-venv``, made on first use with ``mypy==MYPY``), so
nothing is installed into the lab's environment.

mypyc checks at run time the types the sources declare, so a wrong annotation that pure Python never notices
crashes a compiled run -- or a compiled run could differ.  The gate therefore runs the golden scenarios and
sweep seeds of ``tests/golden/trace_digests.py`` under the compiled build and compares every trace digest with
``tests/golden/traces.json`` (which ``tests/test_trace_golden.py`` checks the pure-Python engine against), and
compares longer sweep seeds (``GATE_SEEDS`` copier/…, 1,000 records, every fault) with the pure-Python engine
run alongside.  Only a build that passed gets its marker file (``GATED.json``, with a digest of the sources it was
made from); without a marker, or with a stale one, nothing uses the build.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "compiled")
VENV = os.path.join(ROOT, "build", "mypyc-venv")
MARKER = os.path.join(BUILD, "GATED.json")     # written only once the gate passed: what was compiled, from what
MYPY = "2.4.1"

# The modules compiled: where a 1-record transaction and a copier seed spend their instructions (cProfile by
# file: the kernel and network ~25 %, the log, fetch and partition code ~25 %, the coordinator ~8 %).  Everything
# else stays Python.  Tried and left out: log/producer_state_entry.py (its compiled __init__ fails with a
# SystemError, "deque returned a result with an exception set", not diagnosed); the clients' sender, producer,
# txn_requests, fetcher and consumer and the broker's produce/broker modules need annotation fixes first (mypy
# finds 3-46 errors each, among them wrong annotations a compiled run would trip on, e.g. Sender._complete's
# ``error: Errors`` that receives KafkaErrors).
MODULES = [
    "txnlab/_mypyc.py",
    "txnlab/kernel/kernel.py",
    "txnlab/kernel/network.py",
    "txnlab/kernel/node.py",
    "txnlab/log/unified_log.py",
    "txnlab/broker/fetch.py",
    "txnlab/broker/partition.py",
    "txnlab/broker/replica_fetcher.py",
    "txnlab/protocol/record_batch.py",
    "txnlab/log/producer_state.py",
    "txnlab/log/leader_epoch_cache.py",
    "txnlab/coordinator/transaction_state_manager.py",
    "txnlab/coordinator/transaction_marker_channel_manager.py",
    "txnlab/coordinator/transaction_coordinator.py",
]

SETUP = """\
from setuptools import setup
from mypyc.build import mypycify

setup(name="txnlab-compiled", ext_modules=mypycify({args!r}, opt_level="3", separate=[({modules!r}, None)]))
"""

GATE_SEEDS = range(6)       # longer seeds compared with the pure-Python engine (each workload at least once)


def sources_digest(tree: str) -> str:
    """A digest of every ``.py`` file of the ``txnlab`` package under ``tree``: a build made from other sources than
    the ones in the working tree now is stale (``bench/instructions.py`` then measures nothing compiled)."""
    h = hashlib.sha256()
    base = os.path.join(tree, "txnlab")
    for d, dirs, files in sorted(os.walk(base)):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(d, name)
                h.update(os.path.relpath(path, base).encode() + b"\0")
                with open(path, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()[:20]


def _venv_python() -> str:
    py = os.path.join(VENV, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", f"mypy=={MYPY}", "setuptools"], check=True)
    return py


def build() -> None:
    py = _venv_python()
    if os.path.exists(BUILD):
        shutil.rmtree(BUILD)
    os.makedirs(BUILD)
    shutil.copytree(os.path.join(ROOT, "txnlab"), os.path.join(BUILD, "txnlab"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    # mypyc type-checks the modules it compiles (the modules they import are read for their types only:
    # follow-imports=silent) and builds one extension for them all.  ``separate`` names that one group
    # explicitly, which turns off mypyc's whole-program assumption that it sees every subclass of a class: brokers
    # and clients (Python classes) subclass Node and the fetch mixin, and their methods must accept them.
    with open(os.path.join(BUILD, "setup.py"), "w") as f:
        f.write(SETUP.format(args=["--follow-imports=silent", "--disable-error-code=annotation-unchecked",
                                   f"--python-version={sys.version_info[0]}.{sys.version_info[1]}", *MODULES],
                             modules=MODULES))
    t0 = time.monotonic()
    subprocess.run([py, "setup.py", "build_ext", "--inplace"], cwd=BUILD, check=True)
    # the build's leftovers (C sources, objects) stay out of the importable tree
    shutil.rmtree(os.path.join(BUILD, "build"), ignore_errors=True)
    os.remove(os.path.join(BUILD, "setup.py"))
    print(f"compiled {len(MODULES)} modules in {time.monotonic() - t0:.0f} s into {BUILD}", flush=True)


def _run(code: str, compiled: bool) -> str:
    """Run ``code`` in a fresh interpreter (this one's: the lab's) on the compiled build or on the sources (the
    current directory comes first on ``sys.path``: it is the build's, so the sources cannot shadow it)."""
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=os.pathsep.join([BUILD, ROOT] if compiled else [ROOT]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=BUILD if compiled else ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"gate: the {'compiled' if compiled else 'pure-Python'} run failed:\n{proc.stderr[-3000:]}")
    return proc.stdout


_GOLDEN = """
import json, sys
sys.path.insert(0, TESTS)
import txnlab._mypyc as m
assert m.COMPILED, 'not the compiled build: ' + m.__file__
from golden.trace_digests import all_digests
print(json.dumps(all_digests(), sort_keys=True))
"""

_LONG = """
import hashlib, json
import txnlab._mypyc as m
assert m.COMPILED == EXPECT_COMPILED, m.__file__
from txnlab.sweep.runner import WORKLOADS, RunConfig, replay
out = {}
for seed in SEEDS:
    w = sorted(WORKLOADS)[seed % len(WORKLOADS)]
    r = replay(seed, RunConfig(workload=w, faults="all", records=1000))
    out[f"{w}/{seed}"] = hashlib.sha256(r.trace_jsonl().encode()).hexdigest()[:20]
print(json.dumps(out, sort_keys=True))
"""


def build_problem() -> str | None:
    """Why there is no usable compiled build (None: there is one, gated, made from the sources here now)."""
    if not os.path.exists(MARKER):
        return f"no compiled build that passed its gate in {BUILD} (make compiled)"
    with open(MARKER) as f:
        built = json.load(f)
    if built.get("sources") != sources_digest(ROOT):
        return "the compiled build is stale: txnlab changed since it was built (make compiled)"
    return None


def golden_mismatches() -> tuple[int, list[str]]:
    """The golden traces (gallery scenarios, 200 short sweep seeds) that differ under the compiled build."""
    with open(os.path.join(ROOT, "tests", "golden", "traces.json")) as f:
        golden = json.load(f)
    got = json.loads(_run(_GOLDEN.replace("TESTS", repr(os.path.join(ROOT, "tests"))), compiled=True))
    bad = [f"{part}/{k}" for part in golden for k in golden[part] if got.get(part, {}).get(k) != golden[part][k]]
    return sum(len(v) for v in golden.values()), bad


def gate() -> bool:
    """Every golden digest and the longer seeds identical under the compiled build; writes MARKER on success."""
    if os.path.exists(MARKER):
        os.remove(MARKER)
    t0 = time.monotonic()
    n_golden, bad = golden_mismatches()
    print(f"gate: {n_golden - len(bad)} of {n_golden} golden traces identical under the compiled build", flush=True)
    long_code = _LONG.replace("SEEDS", repr(list(GATE_SEEDS)))
    compiled = json.loads(_run(long_code.replace("EXPECT_COMPILED", "True"), compiled=True))
    pure = json.loads(_run(long_code.replace("EXPECT_COMPILED", "False"), compiled=False))
    bad += [f"long/{k}" for k in pure if compiled.get(k) != pure[k]]
    print(f"gate: {sum(compiled.get(k) == v for k, v in pure.items())} of {len(pure)} sweep seeds of 1,000 records "
          f"identical to the pure-Python engine ({time.monotonic() - t0:.0f} s)", flush=True)
    if bad:
        print("gate FAILED: " + ", ".join(bad[:20]) + (" ..." if len(bad) > 20 else ""), flush=True)
        return False
    with open(MARKER, "w") as f:
        json.dump({"modules": MODULES, "mypy": MYPY, "sources": sources_digest(BUILD),
                   "golden_traces": n_golden,
                   "long_seeds": sorted(pure)}, f, indent=1)
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/compile_engine.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-gate", action="store_true", help="build only")
    ap.add_argument("--gate", action="store_true", help="run the gate on the build already there")
    args = ap.parse_args(argv)
    if not args.gate:
        build()
    if args.no_gate:
        return 0
    return 0 if gate() else 1


if __name__ == "__main__":
    sys.exit(main())
