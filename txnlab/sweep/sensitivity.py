"""How sensitive the sweep is: for each mutation and each workload it applies to, the first seed (of
``--seeds``) whose run shows a violation, and the share of the first ``--share-seeds`` seeds that do.

    python -m txnlab.sweep.sensitivity --jobs 2 --json bench/mutation_sensitivity.json --readme README.md

writes the figures as JSON and (with ``--readme``) replaces the table between the README's
``<!-- mutation-sensitivity -->`` markers, so the table is generated, never typed.  Deterministic: the
figures depend only on the engine, the workloads and the seeds (not on ``--jobs``).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import re
import time
from typing import Optional

from ..cluster import MUTATIONS
from .runner import RunConfig, run_seed
from .workloads import WORKLOADS

ALL = tuple(sorted(WORKLOADS))
# the workloads each mutation can show itself in: a workload without consumer-group copiers cannot show a
# group-offset bug, and only "mixed" has transactions spanning several batches read a few bytes at a time
APPLIES: dict[str, tuple] = {
    "no-dedup": ALL, "no-fencing": ALL, "ignore-lso": ALL, "no-marker-retry": ALL,
    "offsets-outside-txn": ("copier", "group-rebalance"), "no-coordinator-reload": ALL,
    "unclean-election": ALL, "naive-client-classic": ALL, "lso-ignores-hw": ALL,
    "no-txn-generation-check": ("group-rebalance",), "aborted-index-from-fetch-offset": ("mixed",),
    "offset-fetch-unstable": ("copier", "group-rebalance"),
}
BEGIN, END = "<!-- mutation-sensitivity -->", "<!-- /mutation-sensitivity -->"


def _run(args) -> tuple:
    seed, cfg = args
    return seed, bool(run_seed(seed, cfg).violations)


def measure(mutation: str, workload: str, seeds: int, share_seeds: int, faults: str = "all",
            transaction_version: int = 0, jobs: int = 1) -> dict:
    """First catching seed in 0..seeds-1 (None if none) and catches among seeds 0..share_seeds-1."""
    cfg = RunConfig(workload=workload, faults=faults, mutation=mutation, transaction_version=transaction_version)
    first: Optional[int] = None
    caught = 0
    ran = 0
    args = [(s, cfg) for s in range(max(seeds, share_seeds))]
    ctx = mp.get_context("fork")
    with ctx.Pool(jobs) as pool:
        for seed, bad in pool.imap(_run, args, chunksize=1):
            ran += 1
            if bad and first is None:
                first = seed
            if bad and seed < share_seeds:
                caught += 1
            if seed + 1 >= share_seeds and (first is not None or seed + 1 >= seeds):
                pool.terminate()
                break
    return {"mutation": mutation, "workload": workload, "faults": faults, "transaction_version": transaction_version,
            "first": first, "within": seeds, "caught": caught, "of": share_seeds, "runs": ran}


def table(rows: list) -> str:
    workloads = sorted({r["workload"] for r in rows})
    by = {(r["mutation"], r["workload"]): r for r in rows}
    head = "| mutation | " + " | ".join(workloads) + " |"
    lines = [head, "|" + "---|" * (len(workloads) + 1)]
    for m in MUTATIONS:
        cells = []
        for w in workloads:
            r = by.get((m, w))
            if r is None:
                cells.append("")
            else:
                first = "not caught" if r["first"] is None else f"seed {r['first']}"
                cells.append(f"{first}; {100 * r['caught'] // r['of']}%")
        lines.append(f"| `{m}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_readme(path: str, rows: list, note: str) -> None:
    text = open(path, encoding="utf-8").read()
    block = f"{BEGIN}\n{note}\n\n{table(rows)}\n{END}"
    if BEGIN in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _m: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    open(path, "w", encoding="utf-8").write(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m txnlab.sweep.sensitivity", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=200, help="look for the first catch among seeds 0..N-1")
    ap.add_argument("--share-seeds", type=int, default=50, help="count catches among seeds 0..N-1")
    ap.add_argument("--faults", default="all")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--mutation", action="append", help="only this mutation (repeatable)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--readme", help="replace the table between the markers in this file")
    ap.add_argument("--from-json", help="write the table from figures saved by --json (no runs)")
    a = ap.parse_args(argv)
    if a.from_json:
        saved = json.load(open(a.from_json, encoding="utf-8"))
        a.seeds, a.share_seeds, a.faults = saved["seeds"], saved["share_seeds"], saved["faults"]
        rows = saved["rows"]
        print(table(rows))
        if a.readme:
            write_readme(a.readme, rows, _note(a))
        return 0
    rows = []
    t0 = time.perf_counter()
    for m in a.mutation or MUTATIONS:
        for w in APPLIES[m]:
            r = measure(m, w, a.seeds, a.share_seeds, a.faults, jobs=a.jobs)
            rows.append(r)
            print(f"{m:32} {w:24} first {r['first']!s:>5}  caught {r['caught']}/{r['of']}", flush=True)
    print(f"{len(rows)} pairs in {time.perf_counter() - t0:.0f}s")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"faults": a.faults, "seeds": a.seeds, "share_seeds": a.share_seeds, "rows": rows}, f, indent=1)
    if a.readme:
        write_readme(a.readme, rows, _note(a))
    return 0


def _note(a) -> str:
    return (f"Each cell: the first seed (of {a.seeds}; `--faults {a.faults}`, transaction.version 0, 20 records) "
            f"whose run shows a violation, and the share of seeds 0..{a.share_seeds - 1} that do. Generated by "
            f"`python -m txnlab.sweep.sensitivity --json bench/mutation_sensitivity.json --readme README.md`; an "
            f"empty cell is a workload the mutation cannot show itself in.")


if __name__ == "__main__":
    raise SystemExit(main())
