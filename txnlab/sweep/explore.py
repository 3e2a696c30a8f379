"""``python -m txnlab.sweep.explore``: the explorer's command line.

    python -m txnlab.sweep.explore [--scenario NAME] [--mutation NAME|all] [--faults 2] [--max-runs N]
        [--replay 0,2,1] [--split K [--round-runs N]] [--jobs N | --spark MASTER]

Exhaustive exploration of a small scenario: every interleaving, every placement of up to two faults
(``explore_search``: the search, the scenarios' choice points and the state hash that prunes it).  One
exploration runs as one depth-first search, or in K parts with ``--split K`` (in rounds of ``--round-runs`` runs
a part, after which the parts share the states they saw); ``--mutation all`` explores every
mutation in its scenario and the real engine in every scenario (``explore_report``).  Parts and explorations run
here, in ``--jobs`` processes or as Spark tasks (``explore_parallel``), with the same results.  A counterexample
is the seed and the choice list: ``--replay`` runs it again into the identical trace (the stepper can open it).
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional

from ..cluster import MUTATIONS
from .explore_parallel import ROUND_RUNS, explore_row, explore_split, explorer_for, write_table
from .explore_scenarios import SCENARIOS
from .progress import Progress
from .explore_search import (BAD, INPUT, SCENARIO_OF, ExploreRun, Explorer, Option, Prune, RunResult,  # noqa: F401
                             replay)


def catches(row: dict) -> str:
    """In words: which mutation an exploration's counterexample catches (``explore_parallel``'s row), in which
    scenario, and what broke."""
    what = ", ".join(row["broken"]) or row["outcome"]
    who = f"mutation {row['mutation']}" if row["mutation"] else "no mutation (the real engine)"
    return f"the counterexample catches {who} in scenario {row['scenario']!r} after {row['runs']} runs: {what}"


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m txnlab.sweep.explore", description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutation", choices=MUTATIONS + ("all",),
                    help="turn one safety mechanism off; 'all': explore every mutation in its scenario, one after "
                         "another, and report which each counterexample catches")
    ap.add_argument("--scenario", choices=tuple(SCENARIOS),
                    help="the scenario (default: the mutation's own, see SCENARIO_OF; 'copier' without one)")
    ap.add_argument("--faults", type=int, default=2, help="at most this many faults per run (default 2)")
    ap.add_argument("--reorderings", type=int, default=1,
                    help="at most this many deliveries out of their default order per run (-1: no bound)")
    ap.add_argument("--max-runs", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--transaction-version", type=int, choices=(0, 1, 2), default=0)
    ap.add_argument("--brokers", type=int, choices=(1, 3), default=1,
                    help="1 (the small scenario) or 3 (replicated topics; a fault may also crash a broker)")
    ap.add_argument("--replay", help="a choice list (comma-separated) to run again and narrate")
    ap.add_argument("--real-runs", type=int, default=200,
                    help="with --mutation all: explore the real engine in each scenario for at most this many runs")
    ap.add_argument("--json", help="with --mutation all: write the figures here")
    ap.add_argument("--readme", help="with --mutation all: replace the explorer's table in this file")
    ap.add_argument("--from-json", help="with --mutation all: the table from figures saved by --json (no runs)")
    ap.add_argument("--split", type=int, default=1, metavar="K",
                    help="explore in K parts: the search runs here until K prefixes wait, then each one's subtree "
                         "is a part (with --jobs or --spark, side by side; the figures depend on K and the rounds)")
    ap.add_argument("--round-runs", type=int, default=ROUND_RUNS, metavar="N",
                    help=f"with --split: the runs of each part in a round, after which the parts share the states "
                         f"they saw (default {ROUND_RUNS})")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes for the parts or explorations")
    ap.add_argument("--spark", metavar="MASTER",
                    help="run the parts or explorations as Spark tasks: local[*], local[N] or spark://host:port")
    ap.add_argument("--table", metavar="FILE", help="write one row per exploration (with --split: per part) "
                    "as parquet (.parquet) or CSV")
    args = ap.parse_args(argv)
    if args.split < 1:
        ap.error(f"--split: at least 1 part, got {args.split}")
    if args.round_runs < 1:
        ap.error(f"--round-runs: at least 1 run a round, got {args.round_runs}")
    if args.mutation == "all":
        if args.split > 1:
            ap.error("--split: --mutation all runs each exploration whole, as one task of its own")
        from .explore_report import report
        return report(args)
    spec = {"mutation": args.mutation, "seed": args.seed, "max_faults": args.faults, "max_runs": args.max_runs,
            "transaction_version": args.transaction_version, "max_reorderings": args.reorderings,
            "brokers": args.brokers, "scenario": args.scenario}
    try:
        ex = explorer_for(spec)
    except ValueError as e:
        ap.error(str(e))
    if args.replay is not None:
        choices = [int(x) for x in args.replay.split(",") if x.strip()]
        res = ex.run(choices, prune=False)
        print(res.cluster.trace.text(include_background=False))
        print(f"outcome: {res.outcome} {res.detail}")
        return 1 if res.outcome in BAD else 0
    print(f"scenario {ex.scenario.name}: {ex.scenario.describe()}")
    if args.split > 1:
        bar = Progress(args.max_runs, unit="runs", bad_unit="counterexample(s)")     # (at most: the budget)
        row = explore_split(spec, args.split, args.jobs, args.spark, progress=bar.update, round_runs=args.round_runs)
        bar.close()
        print(f"parts: {row['parts']} (--split {args.split}), side by side: "
              f"{'Spark ' + args.spark if args.spark else f'{args.jobs} process(es)'}")
    else:
        if args.jobs > 1 or args.spark:
            print("one exploration runs as one search; --split K spreads it over --jobs or --spark")
        row = explore_row(spec)
    if args.table:
        write_table(row.get("part_rows") or [row], args.table)
        print(f"table: written to {args.table}", file=sys.stderr)
    return _print_exploration(row, args)


def _print_exploration(row: dict, args) -> int:
    """The exploration's report: its runs, its outcomes and the counterexample with the command that replays it."""
    print(f"runs: {row['runs']}, states visited: {row['states']}" +
          ("" if row["complete"] or row["found"] else " (run limit reached)"))
    print("outcomes:")
    for name, n in sorted(row["histogram"].items(), key=lambda x: (-x[1], x[0])):
        print(f"  {name:32s} {n}")
    if not row["found"]:
        print("no violation")
        return 0
    print(f"VIOLATION: {row['outcome']}\n{row['detail']}")
    print(catches(row))
    flags = (f" --mutation {args.mutation}" if args.mutation else "") + \
        (f" --scenario {args.scenario}" if args.scenario else "") + \
        (f" --transaction-version {args.transaction_version}" if args.transaction_version else "") + \
        (f" --brokers {args.brokers}" if args.brokers != 1 else "")
    choices = ",".join(map(str, row["choices"]))
    print(f"counterexample: seed {args.seed}, choices {choices}")
    print(f"counterexample (JSON, for Stepper.open): {row['counterexample']}")
    print(f"replay: python -m txnlab.sweep.explore --seed {args.seed}{flags} --faults {args.faults} "
          f"--reorderings {args.reorderings} --replay {choices}")
    return 1




if __name__ == "__main__":
    sys.exit(main())
