"""``python -m bench.memory``: how much memory a long run holds (RSS of a fresh process).

* ``rss_idle_10h_mb_*``: a 3-broker cluster with one subscribed consumer and nothing to read, left idle for
  10 simulated hours (heartbeats, long-poll fetches, replica fetches: ~150,000 steps per simulated hour).
* ``rss_copier_100k_mb_*``: the sweep's copier workload with 100,000 records, no faults, to the end.

Each figure is the resident set of its own process after the run (``/proc/self/statm``), in MB, for the
trace off, on and bounded (``sim.trace.keep.steps``: the last 100,000 steps and messages).  Each case runs
in a child process, one after the other (``--case`` is that child, not for people).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

KEEP = 100_000
HOURS = 10
RECORDS = 100_000

CASES = {
    # key -> (what, trace config)
    "rss_idle_10h_mb_trace_off": ("idle", {"sim.trace": False}),
    "rss_idle_10h_mb_trace_bounded": ("idle", {"sim.trace": True, "sim.trace.keep.steps": KEEP}),
    "rss_copier_100k_mb_trace_off": ("copier", {"sim.trace": False}),
    "rss_copier_100k_mb_trace_bounded": ("copier", {"sim.trace": True, "sim.trace.keep.steps": KEEP}),
    "rss_copier_100k_mb_trace_on": ("copier", {"sim.trace": True}),
}


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 1e6


def _idle(config: dict) -> dict:
    from txnlab import Cluster, Consumer

    cluster = Cluster(brokers=3, seed=0, config=config)
    cluster.create_topic("idle", partitions=1, replication_factor=3)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
    consumer.subscribe(["idle"])
    consumer.poll(1.0)
    before = _rss_mb()
    for _ in range(HOURS * 6):
        cluster.advance(600_000)          # ten simulated minutes at a time
    k = cluster.kernel
    return {"rss_before_mb": before, "steps": k.step_count, "trace_kept": len(list(k.trace.events)),
            "messages_kept": len(k.network.messages)}


def _copier(config: dict) -> dict:
    from dataclasses import replace

    from txnlab.sweep import runner

    cfg = runner.RunConfig(workload="copier", faults="none", records=RECORDS, trace=bool(config.get("sim.trace")))
    original = runner.build_cluster

    def build(seed, c):                    # the run's cluster, with this case's trace settings
        cluster = original(seed, replace(c, trace=False))
        k = cluster.kernel
        k.trace.enabled = k.network.keep_history = bool(config.get("sim.trace"))
        if config.get("sim.trace.keep.steps"):
            k.trace.set_limit(config["sim.trace.keep.steps"])
            k.network.history_limit = config["sim.trace.keep.steps"]
        return cluster

    runner.build_cluster = build
    res = runner.run_seed(0, cfg, keep=True)
    k = res.cluster.kernel
    return {"ok": res.ok, "steps": res.steps, "trace_kept": len(list(k.trace.events)),
            "messages_kept": len(k.network.messages)}


def _case(key: str) -> None:
    what, config = CASES[key]
    info = _idle(config) if what == "idle" else _copier(config)
    info["rss_mb"] = _rss_mb()
    print(json.dumps(info))


def measure(key: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "bench.memory", "--case", key], capture_output=True, text=True)
    if proc.returncode != 0:
        return {"value": None, "error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed",
                "unit": "MB"}
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"value": info.pop("rss_mb"), "error": None, "unit": "MB", "info": info}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help="only the keys containing one of these")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--no-write", action="store_true", help="print only, do not touch bench/results.json")
    args = ap.parse_args(argv)
    if args.case:
        _case(args.case)
        return 0
    fresh = {}
    for key in CASES:
        if args.cases and not any(c in key for c in args.cases):
            continue
        print(f"{key} ...", end=" ", flush=True)
        fresh[key] = measure(key)
        d = fresh[key]
        print(f"{d['value']:.0f} MB {d.get('info')}" if d["error"] is None else d["error"], flush=True)
    if not args.no_write:
        from bench.__main__ import merge
        merge(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
