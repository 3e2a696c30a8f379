"""Explorations side by side: in this process, in worker processes (``--jobs N``) or as Spark tasks
(``--spark MASTER``, or a SparkSession passed in from a notebook).

Two kinds of work go out, each a plain dict (a *spec*: ``Explorer``'s arguments and ``max_runs``):

- whole explorations, one per task: ``--mutation all``'s (each mutation in its scenario, then the real engine in
  each scenario), or any list of specs (seeds, transaction versions, brokers);
- the parts of one exploration (``--split K``): the depth-first search runs here until at least K prefixes of
  choice lists wait on its stack; they are dealt out to K parts, and each part explores its prefixes' subtrees,
  starting from the states seen so far and pruning the states it meets again.  The parts run in rounds of
  ``round_runs`` runs each (``--round-runs``): after a round every part's new states join the ones seen, and the
  next round starts each part where it stopped, from all of them -- a part prunes what another part saw in an
  earlier round, but not what it sees in the same round.  The parts' runs, outcomes and states add up; the
  exploration stops after the round in which a part found a counterexample, and it is the one in the subtree the
  search order meets first.  The budget ``max_runs`` left after the first phase is shared out among the parts.

Every part and every exploration is a pure function of its spec, so what is found, and every figure, depends on
the specs (``--split`` and the rounds' size), never on whether they ran here, in processes or on Spark executors
(``tests/test_sweep_spark.py``, ``tests/test_explore_parallel.py``).
"""
from __future__ import annotations

import os
from typing import Callable, Iterable, Iterator, Optional

from .explore_search import Explorer

SPEC_KEYS = ("mutation", "seed", "max_faults", "transaction_version", "max_reorderings", "brokers", "scenario")
DEFAULT_MAX_RUNS = 20_000
ROUND_RUNS = 25        # the runs of each part in a round of a split exploration, before the parts share their states


def explorer_for(spec: dict) -> Explorer:
    return Explorer(**{k: spec[k] for k in SPEC_KEYS if k in spec})


def explore_row(spec: dict) -> dict:
    """One exploration (or one part of one: ``prefixes``, ``indexes`` and ``visited`` in the spec) as a plain
    value: the runs, the outcomes, the states seen and the counterexample, if any."""
    ex = explorer_for(spec)
    max_runs = spec.get("max_runs", DEFAULT_MAX_RUNS)
    if "prefixes" not in spec:
        return _row(ex, spec, ex.explore(max_runs), max_runs)
    before = frozenset(spec["visited"])
    ex.visited = set(before)
    prefixes = [list(p) for p in spec["prefixes"]]                 # in search order: the first is explored first
    row = _row(ex, spec, ex.explore(max_runs, stack=prefixes[::-1]), max_runs)
    row["new_states"] = sorted(ex.visited - before)
    roots = list(zip(spec["indexes"], prefixes))

    def root(choices: list) -> int:     # which dealt prefix's subtree: its place in the whole search's order
        return next(i for i, p in roots if choices[:len(p)] == p)
    if row["found"]:
        row["first"] = root(row["choices"])
    else:                               # what is left, in search order, for the next round
        row["left"] = [(root(p), p) for p in ex.stack[::-1]]
    return row


def _row(ex, spec: dict, ok: bool, max_runs: int) -> dict:
    ce = ex.counterexample
    row = {"mutation": ex.mutation or "", "scenario": ex.scenario.name, "brokers": ex.brokers, "seed": ex.seed,
           "transaction_version": ex.transaction_version, "runs": ex.runs, "max_runs": max_runs, "found": not ok,
           "complete": ok and not ex.stack, "histogram": dict(ex.histogram), "states": len(ex.visited)}
    if ce is not None:
        row.update(outcome=ce.outcome, detail=ce.detail, broken=list(ce.broken), choices=list(ce.choices),
                   faults=[f.describe() for f in ce.faults], counterexample=ex.found().to_json())
    return row


def run_explorations(specs: Iterable[dict], jobs: int = 1, master: Optional[str] = None, spark=None,
                     progress: Optional[Callable[[int, int], None]] = None) -> Iterator[dict]:
    """The rows of ``specs``, in the order given: here (``jobs`` 1), in ``jobs`` worker processes, or as Spark tasks
    (``spark``: a SparkSession, or ``master``: one is started).  ``progress(done, found)`` after each row."""
    specs = list(specs)
    if spark is not None or master:
        rows: Iterable[dict] = explore_on_spark(specs, spark=spark, master=master or "local[*]")
    elif jobs > 1 and len(specs) > 1:
        rows = _in_processes(specs, jobs)
    else:
        rows = map(explore_row, specs)
    found = 0
    for done, row in enumerate(rows, 1):
        found += row["found"]
        if progress is not None:
            progress(done, found)
        yield row


def explore_on_spark(specs: Iterable[dict], spark=None, master: str = "local[*]") -> Iterator[dict]:
    """Explorations, or the parts of one (``explore_parallel``'s specs), as Spark tasks: each its own job, as many
    at once as Spark has task slots, so a long one does not hold back the others; their rows in the order given
    (``explore_parallel.explore_row``, the same function ``--jobs`` runs)."""
    from concurrent.futures import ThreadPoolExecutor

    from .spark import session

    specs = list(specs)
    if not specs:
        return
    if spark is None:
        spark = session(master)
    sc = spark.sparkContext

    def job(spec: dict) -> dict:
        return sc.parallelize([spec], 1).map(explore_row).collect()[0]

    with ThreadPoolExecutor(max(1, min(len(specs), sc.defaultParallelism))) as pool:
        yield from pool.map(job, specs)


def _in_processes(specs: list, jobs: int) -> Iterator[dict]:
    import multiprocessing as mp
    with mp.get_context("fork" if hasattr(os, "fork") else "spawn").Pool(min(jobs, len(specs))) as pool:
        yield from pool.imap(explore_row, specs, chunksize=1)


def split(spec: dict, parts: int) -> tuple:
    """The first phase of a split exploration, here: (its row, the parts' specs).  The search runs until at least
    ``parts`` prefixes wait on its stack; they are dealt out in search order, one to each part in turn, so every
    part gets subtrees from near the root and from deep down.  No parts when the search ended (or found a
    counterexample) first."""
    ex = explorer_for(spec)
    max_runs = spec.get("max_runs", DEFAULT_MAX_RUNS)
    ok = ex.explore(max_runs, frontier=parts)
    head = _row(ex, spec, ok, max_runs)
    head["visited"] = sorted(ex.visited)
    if not ok or not ex.stack or ex.runs >= max_runs:
        return head, []
    order = ex.stack[::-1]                   # the search pops the stack's last prefix first
    n = min(parts, len(order))
    budget = -(-(max_runs - ex.runs) // n)
    return head, [dict(spec, prefixes=order[i::n], indexes=list(range(i, len(order), n)),
                       visited=head["visited"], max_runs=budget) for i in range(n)]


def _add(total: Optional[dict], row: dict) -> dict:
    """A part's figures over its rounds: runs, outcomes and new states add up; the last round says the rest."""
    if total is None:
        return dict(row, histogram=dict(row["histogram"]))
    histogram = dict(total["histogram"])
    for name, n in row["histogram"].items():
        histogram[name] = histogram.get(name, 0) + n
    return dict(row, runs=total["runs"] + row["runs"], max_runs=total["max_runs"] + row["max_runs"],
                histogram=histogram, new_states=total["new_states"] + row["new_states"])


def merge(head: dict, rows: list) -> dict:
    """One exploration's figures from its first phase and its parts' rows: runs, outcomes and states add up; the
    counterexample is the one in the subtree the search order meets first."""
    out = {k: v for k, v in head.items() if k != "visited"}
    states = set(head["visited"])
    histogram = dict(head["histogram"])
    for r in rows:
        out["runs"] += r["runs"]
        states.update(r["new_states"])
        for name, n in r["histogram"].items():
            histogram[name] = histogram.get(name, 0) + n
    found = [r for r in rows if r["found"]]
    if found and not out["found"]:
        first = min(found, key=lambda r: r["first"])
        out.update({k: first[k] for k in ("outcome", "detail", "broken", "choices", "faults", "counterexample")},
                   found=True)
    out["histogram"] = histogram
    out["states"] = len(states)
    out["parts"] = len(rows)
    out["part_rows"] = [dict({k: v for k, v in r.items() if k not in ("new_states", "left")}, part=i)
                        for i, r in enumerate(rows)]
    out["complete"] = not out["found"] and (head["complete"] or bool(rows) and all(r["complete"] for r in rows))
    return out


def explore_split(spec: dict, parts: int, jobs: int = 1, master: Optional[str] = None, spark=None,
                  progress: Optional[Callable[[int, int], None]] = None, round_runs: int = ROUND_RUNS) -> dict:
    """One exploration in ``parts`` parts (``split``), the parts run by ``run_explorations`` in rounds of
    ``round_runs`` runs each, sharing the states they saw between rounds; its merged row.  ``progress(runs,
    found)`` after the first phase and after each round: the runs made so far, the counterexamples found."""
    if round_runs < 1:
        raise ValueError(f"round_runs: at least 1 run a round, got {round_runs}")
    head, specs = split(spec, parts)
    if progress is not None:
        progress(head["runs"], int(head["found"]))
    seen = set(head["visited"])
    left = spec.get("max_runs", DEFAULT_MAX_RUNS) - head["runs"]
    totals: list = [None] * len(specs)
    active = list(range(len(specs)))
    found = 0
    while active and left > 0:
        share, extra = divmod(left, len(active))
        shares = [(i, min(round_runs, share + (k < extra))) for k, i in enumerate(active)]
        todo = [(i, n) for i, n in shares if n > 0]
        rows = list(run_explorations([dict(specs[i], visited=sorted(seen), max_runs=n) for i, n in todo],
                                     jobs, master, spark))
        active = [i for i, n in shares if n == 0]       # no run for them this round: still to go on
        for (i, _), row in zip(todo, rows):
            totals[i] = _add(totals[i], row)
            seen.update(row["new_states"])
            left -= row["runs"]
            found += row["found"]
            if row.get("left"):
                active.append(i)
                specs[i] = dict(specs[i], prefixes=[p for _, p in row["left"]],
                                indexes=[r for r, _ in row["left"]])
        active.sort()                                   # in the parts' order: the shares go out the same way
        if progress is not None:
            progress(spec.get("max_runs", DEFAULT_MAX_RUNS) - left, found)
        if found:
            break
    out = merge(head, [t for t in totals if t is not None])
    if active and not out["found"]:
        out["complete"] = False             # the budget ran out with parts still to go on (some never ran)
    return out


TABLE_COLUMNS = ("mutation", "scenario", "brokers", "seed", "transaction_version", "part", "runs", "max_runs",
                 "states", "found", "complete", "outcome", "broken", "choices")


def write_table(rows: Iterable[dict], path: str) -> None:
    """Explorations (or one exploration's parts: its ``part_rows``) as a table, one row each, for Spark or pandas:
    parquet (``*.parquet``) or CSV."""
    from .spark import write_rows
    write_rows(({**{c: r.get(c, "") for c in TABLE_COLUMNS}, "broken": ",".join(r.get("broken", ())),
                 "choices": ",".join(map(str, r.get("choices", ()))), "part": r.get("part", -1)} for r in rows),
               TABLE_COLUMNS, path)
