"""``python -m bench.notebooks``: how long a learner waits -- each chapter run top to bottom, and the first picture.

* ``notebook_s.<chapter>``: seconds to run the chapter's ``.ipynb`` with nbclient in a fresh kernel (the
  kernel's start is not counted: nbclient starts it before the first cell; targets: <= 5 s per chapter, <= 30 s
  for the Spark chapter).
* ``first_picture_s``: seconds from a fresh Python process to the first stepper built (``import widgets`` and
  ``Stepper("dropped-ack-dedup")`` with its widget built, chapter 1's first stepper; target: <= 1 s).

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
print(time.perf_counter() - t0)
"""


def chapter_seconds(path: Path) -> float:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    with client.setup_kernel():
        start = time.perf_counter()
        for i, cell in enumerate(nb.cells):
            client.execute_cell(cell, i)
        return time.perf_counter() - start


def first_picture_s() -> float:
    out = subprocess.run([sys.executable, "-c", FIRST_PICTURE], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.notebooks", description=__doc__.split("\n\n")[0])
    ap.add_argument("chapters", nargs="*", help="only chapters whose file name contains one of these")
    ap.add_argument("--no-write", action="store_true", help="print only, do not touch bench/results.json")
    args = ap.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    fresh = {}
    print("first picture ...", end=" ", flush=True)
    try:
        fresh["first_picture_s"] = {"value": first_picture_s(), "error": None, "unit": "s",
                                    "load": os.getloadavg()[0]}
        print(f"{fresh['first_picture_s']['value']:.2f} s")
    except Exception as e:  # noqa: BLE001 - a failure is a result to record
        fresh["first_picture_s"] = {"value": None, "error": f"{type(e).__name__}: {e}", "unit": "s"}
        print("failed")
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        if args.chapters and not any(c in path.name for c in args.chapters):
            continue
        key = f"notebook_s.{path.stem}"
        print(f"{path.name} ...", end=" ", flush=True)
        try:
            fresh[key] = {"value": chapter_seconds(path), "error": None, "unit": "s", "load": os.getloadavg()[0]}
            print(f"{fresh[key]['value']:.1f} s", flush=True)
        except Exception as e:  # noqa: BLE001 - a failing chapter is a result to record
            fresh[key] = {"value": None, "error": f"{type(e).__name__}: {str(e)[:300]}", "unit": "s"}
            print("failed", flush=True)
    if not args.no_write:
        from bench.__main__ import merge
        merge(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
