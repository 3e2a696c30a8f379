"""``python -m bench.notebooks``: how long a learner waits -- each chapter run top to bottom, and the first picture.

* ``notebook_s.<chapter>``: seconds to run the chapter's ``.ipynb`` with nbclient in a fresh kernel (the
  kernel's start is not counted: nbclient starts it before the first cell; targets: <= 5 s per chapter, <= 30 s
  for the Spark chapter).
* ``first_picture_s``: seconds from a fresh Python process to the first stepper built (``import widgets`` and
  ``Stepper("dropped-ack-dedup")`` with its widget built, chapter 1's first stepper; target: <= 1 s).
* ``stepper_open_s``: seconds to make and display one more stepper (``Stepper("commit-visible-atomically")``) in a
  kernel that has shown one already -- what each stepper of a chapter costs its kernel; also ``widgets``, the
  ipywidgets it opens (each one a message to the browser).  The median of three.

Each figure also records ``cpu_s``, the CPU seconds the measured process spent on it (the chapter's kernel,
from the start of its first cell; the first picture's process, from its start): on a shared machine the wall
clock waits for other people's work, the CPU time much less.

Python's bytecode caches (and, for the Spark chapter, the archive of Spark's classes that ``make lab``
records) are written and warm before anything is measured (a learner's every start but the
very first finds them; ``PYTHONDONTWRITEBYTECODE`` in the environment would make each kernel compile the lab
again, ~0.7 s of CPU, so it is dropped for the measured processes).

The chapters run one after the other, never in parallel (the machine is shared).  Numbers go into
``bench/results.json`` under these keys (``python -m bench.notebooks 03 07`` runs only those chapters).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

FIRST_PICTURE = """
import time
t0 = time.perf_counter()
import widgets
s = widgets.Stepper("dropped-ack-dedup", skip_background=True)
w = s.widget
print(time.perf_counter() - t0, time.process_time())
"""

STEPPER_OPEN = """
import time, ipywidgets
from IPython.display import display
import widgets
def _open():
    n0 = len(ipywidgets.widgets.widget._instances)
    t0, c0 = time.perf_counter(), time.process_time()
    s = widgets.Stepper("commit-visible-atomically")
    display(s.widget)
    return time.perf_counter() - t0, time.process_time() - c0, len(ipywidgets.widgets.widget._instances) - n0
_open()                                  # the kernel's first stepper also pays for first-use imports
print("bench-stepper", *sorted(_open() for _ in range(3))[1])
"""

_CPU = "import time as _t; print('bench-cpu-s', _t.process_time())"


def _kernel_cpu(client, nb, index: int) -> float:
    """CPU seconds the chapter's kernel process has used so far (a cell of our own, not the chapter's)."""
    import nbformat

    cell = nbformat.v4.new_code_cell(_CPU)
    nb.cells.append(cell)
    client.execute_cell(cell, index)
    nb.cells.pop()
    # other output may be there too (a C library's log lines on stderr): find ours
    for out in cell.outputs:
        for line in out.get("text", "").splitlines():
            if line.startswith("bench-cpu-s "):
                return float(line.split()[1])
    raise RuntimeError(f"the kernel did not report its CPU time: {cell.outputs!r:.300}")


def chapter_seconds(path: Path) -> tuple:
    """(wall seconds, kernel CPU seconds) to run the chapter's cells."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    with client.setup_kernel():
        cpu0 = _kernel_cpu(client, nb, len(nb.cells))
        start = time.perf_counter()
        for i, cell in enumerate(nb.cells):
            client.execute_cell(cell, i)
        wall = time.perf_counter() - start
        return wall, _kernel_cpu(client, nb, len(nb.cells)) - cpu0


def first_picture_s() -> tuple:
    """(wall seconds, CPU seconds of the process, its start included)."""
    out = subprocess.run([sys.executable, "-c", FIRST_PICTURE], capture_output=True, text=True, check=True)
    wall, cpu = out.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def stepper_open_s() -> tuple:
    """(wall seconds, CPU seconds, widgets opened) to make and display one stepper in a kernel (median of three)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(STEPPER_OPEN)])
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    for out in nb.cells[0].outputs:
        for line in out.get("text", "").splitlines():
            if line.startswith("bench-stepper "):
                wall, cpu, n = line.split()[1:]
                return float(wall), float(cpu), int(n)
    raise RuntimeError(f"the kernel did not report the stepper: {nb.cells[0].outputs!r:.300}")


def _warm_spark_classes(chapters) -> None:
    """The archive of Spark's classes (``make lab`` records it once, like the bytecode caches above): recorded
    here when missing and the Spark chapter is measured, so the figure is a learner's every start but the first."""
    if chapters and not any(c in p.name for p in NOTEBOOKS.glob("*spark*.ipynb") for c in chapters):
        return
    try:
        from txnlab.spark.session import class_archive, record_class_archive
        if not class_archive().exists():
            print("recording Spark's classes (once) ...", flush=True)
            record_class_archive()
    except Exception as e:  # noqa: BLE001 - the chapter runs without the archive, only slower
        print(f"Spark's classes not recorded: {e}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.notebooks", description=__doc__.split("\n\n")[0])
    ap.add_argument("chapters", nargs="*", help="only chapters whose file name contains one of these")
    ap.add_argument("--no-write", action="store_true", help="print only, do not touch bench/results.json")
    args = ap.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-c", "import widgets, txnlab.sweep.runner"], check=True)   # warm the caches
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    _warm_spark_classes(args.chapters)
    fresh = {}
    print("first picture ...", end=" ", flush=True)
    try:
        wall, cpu = first_picture_s()
        fresh["first_picture_s"] = {"value": wall, "cpu_s": cpu, "error": None, "unit": "s",
                                    "load": os.getloadavg()[0]}
        print(f"{wall:.2f} s (CPU {cpu:.2f} s)")
    except Exception as e:  # noqa: BLE001 - a failure is a result to record
        fresh["first_picture_s"] = {"value": None, "error": f"{type(e).__name__}: {e}", "unit": "s"}
        print("failed")
    print("one more stepper ...", end=" ", flush=True)
    try:
        wall, cpu, n = stepper_open_s()
        fresh["stepper_open_s"] = {"value": wall, "cpu_s": cpu, "widgets": n, "error": None, "unit": "s",
                                   "load": os.getloadavg()[0]}
        print(f"{wall:.3f} s (kernel CPU {cpu:.3f} s, {n} widgets)")
    except Exception as e:  # noqa: BLE001 - a failure is a result to record
        fresh["stepper_open_s"] = {"value": None, "error": f"{type(e).__name__}: {str(e)[:300]}", "unit": "s"}
        print("failed")
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        if args.chapters and not any(c in path.name for c in args.chapters):
            continue
        key = f"notebook_s.{path.stem}"
        print(f"{path.name} ...", end=" ", flush=True)
        try:
            wall, cpu = chapter_seconds(path)
            fresh[key] = {"value": wall, "cpu_s": cpu, "error": None, "unit": "s", "load": os.getloadavg()[0]}
            print(f"{wall:.1f} s (kernel CPU {cpu:.1f} s)", flush=True)
        except Exception as e:  # noqa: BLE001 - a failing chapter is a result to record
            fresh[key] = {"value": None, "error": f"{type(e).__name__}: {str(e)[:300]}", "unit": "s"}
            print("failed", flush=True)
    if not args.no_write:
        from bench.__main__ import merge
        merge(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
