"""A teacher saves a branch to a file; a student opens it in one call on the same step with the same faults."""
from __future__ import annotations

import json

import pytest

from widgets import Stepper


def test_a_saved_branch_reopens_on_the_same_step_with_the_same_faults(tmp_path):
    s = Stepper("commit-visible-atomically", skip_background=True)
    s.step_until("is now PrepareCommit")
    old = s.cluster.transaction_coordinator("tx-orders")
    branch = s.crash(old)
    s.step(3)
    where, story, trace = s.position, s.branches[branch], s.trace_text(30)
    path = s.save(tmp_path / "moment.json")
    s.close()

    t = Stepper.load(path)
    try:
        assert (t.branch, t.position) == (branch, where)
        assert t.branches[branch] == story and t.trace_text(30) == trace
        faults = t.history.branches[branch].faults
        assert [(i, f.kind, f.node) for i, f in faults] == [(where - 3, "crash", f"broker-{old}")]
        assert not t.cluster.kernel.nodes[f"broker-{old}"].alive                  # the fault is applied: the coordinator is down
        t.switch("main")                                         # the unchanged run is there too
        assert t.cluster.kernel.nodes[f"broker-{old}"].alive
    finally:
        t.close()


def test_a_file_that_is_not_a_saved_branch_is_refused(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"seed": 1}))
    with pytest.raises(ValueError, match="not a saved txnlab branch"):
        Stepper.load(p)


def test_a_function_scenario_cannot_be_saved(tmp_path):
    def tiny(cluster):
        cluster.create_topic("t", 1)
    s = Stepper(tiny)
    try:
        with pytest.raises(ValueError, match="only a gallery scenario"):
            s.save(tmp_path / "x.json")
    finally:
        s.close()
