"""``python -m bench.instructions``: instruction counts of the engine's measured loops (callgrind).

Wall-clock figures on a shared machine move by tens of percent from run to run; the number of
instructions the CPU executes for the same work barely moves.  Each figure here is two runs of one
Python process under ``valgrind --tool=callgrind``: the setup alone (imports, cluster, warm-up) and the
setup plus the measured work; the difference, divided by the units of work, is the figure.  The heap is
frozen (``gc.freeze()``) after the setup, so objects built by the setup are never walked again, and the
process ends without the interpreter's shutdown (whose collections would grow with the work).

* ``instr_per_txn1``: one transaction of one 100-byte record (``bench/engine.py``'s loop: begin,
  produce, commit), on the 3-broker cluster of the benchmarks.
* ``instr_per_copier_seed``: one seed of the simulation sweep (copier, 1,000 records, every fault),
  ``run_seed`` end to end -- cluster built, workload, nemesis, settle, checks.  The setup builds (and drops)
  one cluster first, so the modules imported when a broker is made are not counted in the seed.

The ``*_compiled`` figures are the same work on the optional compiled build (``make compiled``:
``scripts/compile_engine.py`` compiles the engine's hottest modules with mypyc into ``build/compiled`` and gates
it by comparing traces).  They are measured only on a build that passed its gate and was made from the sources
in the working tree now; otherwise they are recorded as ``null`` with the reason.

Without valgrind on the machine the figures are recorded as ``null`` with the reason.  ``--child`` is the
process that runs under valgrind (not for people).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPILED = os.path.join(ROOT, "build", "compiled")     # scripts/compile_engine.py's build (its BUILD)

# Transactions in the measured run of instr_per_txn1: enough for several young-generation collections (one every
# ~240 transactions: a transaction leaves ~200 objects in the trace, and a run collects every 50,000), so the figure
# carries its share of them -- over 200, whether one collection fell in the window moved it by up to 5 %.
TXNS = 1000
SEEDS = (0,)        # copier seeds in the measured run of instr_per_copier_seed


def _child(what: str, measured: bool) -> None:
    import gc

    import txnlab._mypyc
    if txnlab._mypyc.COMPILED != (os.environ.get("TXNLAB_BENCH_COMPILED") == "1"):
        raise SystemExit(f"the child runs the wrong engine: {txnlab._mypyc.__file__}")

    if what == "txn1":
        from bench.engine import PAYLOAD, TOPIC, _cluster, _producer

        p = _producer(_cluster(), **{"transactional.id": "bench-tx"})
        p.init_transactions()
        p.begin_transaction()
        p.produce(TOPIC, value=PAYLOAD)
        p.commit_transaction()
        gc.collect()
        gc.freeze()
        if measured:
            for _ in range(TXNS):
                p.begin_transaction()
                p.produce(TOPIC, value=PAYLOAD)
                p.commit_transaction()
    elif what == "copier":
        from txnlab.sweep.runner import RunConfig, build_cluster, run_seed

        cfg = RunConfig(workload="copier", faults="all", records=1_000)
        # a cluster built and dropped: the modules a broker imports when it is made (its coordinators) are
        # imported here, not inside the measured seed (they were ~1 % of its figure)
        build_cluster(SEEDS[0], cfg)
        gc.collect()
        gc.freeze()
        if measured:
            for seed in SEEDS:
                run_seed(seed, cfg)
    else:
        raise SystemExit(f"unknown figure {what!r}")


def _instructions(what: str, measured: bool, compiled: bool = False) -> int:
    """Instructions executed by one child process under callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m",
               "bench.instructions", "--child", what] + (["--measured"] if measured else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(compiled), cwd=_cwd(compiled))
        if proc.returncode != 0:
            raise RuntimeError(f"callgrind run failed: {proc.stderr[-2000:]}")
        m = re.search(r"Collected\s*:\s*(\d+)", proc.stderr)
        if m is None:
            raise RuntimeError("callgrind printed no instruction count")
        return int(m.group(1))


def _env(compiled: bool = False) -> dict:
    """The children's environment: a fixed hash seed, and bytecode caches written (with
    PYTHONDONTWRITEBYTECODE a module first imported inside the measured work would be compiled there, and
    counted).  On the compiled build, its tree comes first (and is the current directory: ``_cwd``)."""
    env = dict(os.environ, PYTHONHASHSEED="0", TXNLAB_BENCH_COMPILED="1" if compiled else "0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if compiled:
        env["PYTHONPATH"] = os.pathsep.join([COMPILED, ROOT])
    return env


def _cwd(compiled: bool) -> str | None:
    """``python -m`` puts the current directory first on ``sys.path``: the build's, so the sources cannot shadow
    it."""
    return COMPILED if compiled else None


def compiled_build_problem() -> str | None:
    """Why the compiled figures cannot be measured now (None: they can)."""
    spec = importlib.util.spec_from_file_location("compile_engine", os.path.join(ROOT, "scripts", "compile_engine.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build_problem()


FIGURES = {
    # key -> (child figure, units of work in the measured run, unit, on the compiled build)
    "instr_per_txn1": ("txn1", TXNS, "instructions/txn", False),
    "instr_per_copier_seed": ("copier", len(SEEDS), "instructions/seed", False),
    "instr_per_txn1_compiled": ("txn1", TXNS, "instructions/txn", True),
    "instr_per_copier_seed_compiled": ("copier", len(SEEDS), "instructions/seed", True),
}


def measure(key: str) -> dict:
    what, units, unit, compiled = FIGURES[key]
    if shutil.which("valgrind") is None:
        return {"value": None, "error": "valgrind is not installed: no instruction counts", "unit": unit, "n": units}
    if compiled and (problem := compiled_build_problem()) is not None:
        return {"value": None, "error": problem, "unit": unit, "n": units}
    base = _instructions(what, False, compiled)
    full = _instructions(what, True, compiled)
    return {"value": (full - base) / units, "error": None, "unit": unit, "n": units, "runs": [base, full]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__.split("\n\n")[0])
    ap.add_argument("figures", nargs="*", help="only these keys (default: all)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--measured", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-write", action="store_true", help="print only, do not touch bench/results.json")
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child, args.measured)
        sys.stdout.flush()
        os._exit(0)         # no interpreter shutdown (its collections would count, and grow with the work)
    # compile every module once first, so neither measured process pays for writing .pyc files: each child
    # runs once outside valgrind (importing only the top packages missed modules imported during the setup,
    # and the setup-only run then paid their compilation, which came off the figure: 3.99M instead of 4.69M)
    keys = [k for k in args.figures or list(FIGURES) if not FIGURES[k][3] or compiled_build_problem() is None]
    for compiled in sorted({FIGURES[k][3] for k in keys}):
        subprocess.run([sys.executable, "-c", "import bench.engine, txnlab.sweep.runner, txnlab.check.checker"],
                       check=True, env=_env(compiled), cwd=_cwd(compiled))
    for key in keys:
        subprocess.run([sys.executable, "-m", "bench.instructions", "--child", FIGURES[key][0]], check=True,
                       env=_env(FIGURES[key][3]), cwd=_cwd(FIGURES[key][3]))
    fresh = {}
    for key in args.figures or list(FIGURES):
        if FIGURES[key][3] and not args.figures and (problem := compiled_build_problem()) is not None:
            # not asked for by name: a machine without the optional build keeps the last figure measured on one
            print(f"{key}: not measured ({problem}); bench/results.json keeps its last figure", flush=True)
            continue
        print(f"{key} (callgrind) ...", end=" ", flush=True)
        fresh[key] = measure(key)
        d = fresh[key]
        print(f"{d['value']:,.0f} {d['unit']}" if d["error"] is None else d["error"], flush=True)
    if not args.no_write:
        from bench.__main__ import merge
        merge(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
