"""Digests of the traces the engine writes for every gallery scenario (each variant) and 200 sweep seeds.

``python tests/golden/trace_digests.py > tests/golden/traces.json`` records them;
``tests/test_trace_golden.py`` replays everything and compares.  A change that moves code around must leave
every digest as it was; a change that alters behaviour on purpose re-records the file in the same commit and
says why in its message.
"""
import hashlib
import json
import sys

SWEEP_SEEDS = range(200)


def _imports():
    try:
        from txnlab.gallery import comparison_names, load, names
        from txnlab.sweep.runner import WORKLOADS, RunConfig, replay
    except ImportError:
        from txnlab.scenarios import comparison_names, load, names
        from txnlab.sim.sweep import RunConfig, replay
        from txnlab.sim.workloads import WORKLOADS
    return names, comparison_names, load, WORKLOADS, RunConfig, replay


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def scenario_digests() -> dict:
    names, comparison_names, load, *_ = _imports()
    out = {}
    for name in names() + comparison_names():
        sc = load(name)
        for variant in (list(sc.variants) or [""]):
            lab, _ = sc.play(seed=0, variant=variant or None)
            out[f"{name}/{variant}" if variant else name] = _digest(lab.trace.to_jsonl())
    return out


def sweep_case(seed: int) -> tuple:
    *_, WORKLOADS, RunConfig, _replay = _imports()
    workloads = sorted(WORKLOADS)
    return workloads[seed % len(workloads)], seed


def sweep_digest(seed: int) -> str:
    *_, RunConfig, replay = _imports()
    workload, seed = sweep_case(seed)
    r = replay(seed, RunConfig(workload=workload, faults="all", records=20))
    return _digest(r.trace_jsonl())


def all_digests() -> dict:
    return {"scenarios": scenario_digests(),
            "sweep": {f"{sweep_case(s)[0]}/{s}": sweep_digest(s) for s in SWEEP_SEEDS}}


if __name__ == "__main__":
    json.dump(all_digests(), sys.stdout, indent=1, sort_keys=True)
    print()
