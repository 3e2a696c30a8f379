"""A seed (with its fault schedule) is a complete bug report: it replays into the identical trace.

Also: the trace exports and imports as JSON lines; the trace switch does not change what happens; delta
debugging shrinks a failing schedule that still fails; the command line prints a replay command and ends
with ``N seeds, V violations``.
"""
import json
import os
import subprocess
import sys

import pytest

from txnlab.check import History
from txnlab.sweep.__main__ import main
from txnlab.sweep.nemesis import Fault, minimize, plan, schedule_from_json, schedule_to_json
from txnlab.sweep.runner import RunConfig, minimize_failure, replay, run_seed
from txnlab.kernel.trace import Trace

CFG = RunConfig(workload="copier", faults="all")


def test_the_same_seed_replays_into_the_identical_trace():
    a = replay(7, CFG)
    b = replay(7, CFG)
    assert len(a.cluster.trace) > 500
    assert a.trace_jsonl() == b.trace_jsonl()
    assert a.history.to_jsonl() == b.history.to_jsonl()


_TRACE_DIGEST = """
import hashlib, sys
from txnlab.sweep.runner import RunConfig, replay
r = replay(int(sys.argv[2]), RunConfig(workload=sys.argv[1], faults="all", records=20))
print(hashlib.sha256(r.trace_jsonl().encode()).hexdigest(), r.steps)
"""


@pytest.mark.parametrize("workload,seed", [("copier", 3), ("bank-transfer", 1), ("multi-partition-atomic", 1),
                                           ("group-rebalance", 12)])
def test_a_seed_replays_identically_in_another_process(workload, seed):
    """A bug report works on another machine: nothing may depend on Python's per-process string hashing
    (the iteration order of a set of names or partitions, say)."""
    digests = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        out = subprocess.run([sys.executable, "-c", _TRACE_DIGEST, workload, str(seed)], env=env,
                             capture_output=True, text=True, check=True)
        digests.add(out.stdout.split()[0])
    assert len(digests) == 1


def test_a_failing_seed_replays_into_the_identical_trace_and_the_same_violations():
    cfg = RunConfig(workload="copier", faults="none", mutation="ignore-lso", records=20)
    first = replay(0, cfg)
    again = replay(0, cfg)
    assert first.violations and first.violations == again.violations
    assert first.trace_jsonl() == again.trace_jsonl()


def test_the_trace_switch_changes_nothing_but_the_record():
    quiet = run_seed(5, CFG, keep=True)
    loud = run_seed(5, RunConfig(**{**CFG.__dict__, "trace": True}), keep=True)
    assert len(quiet.cluster.trace) == 0 and len(loud.cluster.trace) > 0
    assert quiet.history.to_jsonl() == loud.history.to_jsonl()
    assert quiet.steps == loud.steps and quiet.sim_ms == loud.sim_ms


def test_trace_and_history_export_and_import_as_json_lines():
    res = replay(3, CFG)
    text = res.trace_jsonl()
    back = Trace.from_jsonl(text)
    assert back.to_jsonl() == text and str(back) == str(res.cluster.trace)
    h = History.from_jsonl(res.history.to_jsonl())
    assert h.to_jsonl() == res.history.to_jsonl()


def test_a_fault_schedule_round_trips_and_depends_only_on_the_seed():
    s1 = plan(42, "all", ["broker-0", "broker-1", "broker-2"], ["feeder", "copier-0"], 2_000)
    s2 = plan(42, "all", ["broker-0", "broker-1", "broker-2"], ["feeder", "copier-0"], 2_000)
    assert s1 == s2 and s1
    assert schedule_from_json(schedule_to_json(s1)) == s1
    assert all(f.describe().startswith("t=") for f in s1)


def test_delta_debugging_finds_the_fault_that_matters():
    culprit = Fault("drop", api="Produce", response=True, at=300)
    noise = [Fault("delay", api="Fetch", ms=50, at=100 * i) for i in range(1, 6)]
    schedule = sorted(noise + [culprit], key=lambda f: f.at)
    assert minimize(schedule, lambda sub: culprit in sub) == [culprit]


def test_a_minimized_schedule_of_a_real_failure_still_fails():
    cfg = RunConfig(workload="copier", faults="network", mutation="no-dedup", records=20)
    res = next(r for r in (run_seed(s, cfg) for s in range(50)) if not r.ok)
    small = minimize_failure(res)
    assert 1 <= len(small) <= len(res.schedule)
    assert not run_seed(res.seed, cfg, schedule=small).ok


def test_the_command_line_reports_the_first_failing_seed_and_how_to_replay_it(capsys, tmp_path):
    code = main(["--workload", "copier", "--faults", "none", "--mutation", "ignore-lso", "--seeds", "3",
                 "--records", "20"])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 1
    assert "first failing seed: 0" in out
    assert any(line.startswith("replay: python -m txnlab.sweep --workload copier --faults none --seed 0") and
               "--mutation ignore-lso" in line for line in out)
    assert any(line.startswith("G1a:") for line in out)
    assert out[-1].startswith("1 seeds, 1 violations")
    trace_file = tmp_path / "t.jsonl"
    code = main(["--workload", "copier", "--faults", "none", "--seed", "2", "--records", "20",
                 "--trace", str(trace_file)])
    assert code == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("1 seeds, 0 violations")
    lines = trace_file.read_text().splitlines()
    assert lines and json.loads(lines[0])["step"] >= 0
    assert Trace.from_jsonl(trace_file.read_text()).to_jsonl() == \
        replay(2, RunConfig(workload="copier", faults="none", records=20)).trace_jsonl()
