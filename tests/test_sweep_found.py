"""Counterexamples the sweep found beyond the seeds CI runs, each replayed with its minimized fault schedule: what
was wrong, and that it stays fixed.  (Each failed before its fix with the invariant named in its test.)"""
from __future__ import annotations

import json

from txnlab.sweep.nemesis import schedule_from_json
from txnlab.sweep.runner import RunConfig, run_seed


def _run(seed: int, cfg: RunConfig, schedule: list):
    return run_seed(seed, cfg, schedule=schedule_from_json(json.dumps(schedule)), keep=True)


def test_a_follower_named_in_error_is_read_again_once_its_leader_knows_it_leads():
    """Seed 90297 (group-rebalance): the leadership of out-1 moves to broker 0 while broker 0 has not yet learned
    it; the followers' first fetch of out-1 gets an error, and their fetch sessions kept out-1 without naming it
    again.  The new leader never read where they were, so they never rejoined the ISR, out-1 stayed below
    min.insync.replicas and three transactions hung in PrepareAbort (hanging-transaction, stuck)."""
    res = _run(90297, RunConfig(workload="group-rebalance", faults="all", records=20), [
        {"kind": "partition", "node": "broker-0", "others": ["controller"], "ms": 1000, "at": 14},
        {"kind": "delay", "api": "SyncGroup", "ms": 6000, "at": 650},
        {"kind": "move-leaders", "node": "broker-2", "at": 871}])
    assert res.ok, res.violations
    c = res.cluster
    state = c.controller.states[("out", 1)]
    assert len(state.isr) == 3                      # both followers back in the ISR
    assert all(c.broker(b).logs[("out", 1)].last_stable_offset == c.broker(b).logs[("out", 1)].high_watermark
               for b in state.isr)


def test_the_final_read_waits_until_every_broker_knows_the_current_leaders():
    """Seed 90771 (multi-partition-atomic): broker 1 was cut off from the controller for 20 s and still believed it
    led atomic-1 when the final read began; the final reader took its end offsets from it and stopped early, so
    committed records looked lost (torn-transaction, unseen).  The settle now waits until every broker has the
    controller's leaders."""
    res = _run(90771, RunConfig(workload="multi-partition-atomic", faults="network", records=20), [
        {"kind": "delay", "api": "EndTxn", "response": True, "ms": 2000, "at": 161},
        {"kind": "partition", "node": "broker-1", "others": ["controller"], "ms": 20000, "at": 369}])
    assert res.ok, res.violations
    final = next(op for op in res.history if op.f == "final-read")
    read = {v for mop in final.mops if mop[0] == "poll" and mop[1] == "atomic-1" for _, v in mop[2]}
    assert {"a24", "a30", "a32"} <= read


def test_a_classic_protocol_anomaly_is_replayed_under_transaction_version_2(capsys):
    """Seed 91362 (multi-partition-atomic, transaction.version 0): a delayed EndTxn(commit) of one transaction
    reaches the coordinator during the next one, which it commits while one of its records is still unwritten --
    Kafka's own KAFKA-17754 (G1a, torn-transaction).  The sweep's report replays the same seed and faults under
    transaction.version 2 (with the Java dialect's client, which speaks it), where nothing is violated."""
    from txnlab.sweep.__main__ import main

    schedule = json.dumps([{"kind": "delay", "api": "EndTxn", "ms": 6000, "at": 619},
                           {"kind": "partition", "node": "broker-0", "others": ["controller"], "ms": 20000,
                            "at": 1079}])
    assert main(["--workload", "multi-partition-atomic", "--faults", "network", "--seed", "91362",
                 "--schedule", schedule]) == 1
    out = capsys.readouterr().out
    assert "violations: G1a (1 seed(s)), torn-transaction (1 seed(s))" in out
    assert "under transaction.version 2, with a client that speaks it (the Java dialect): no violation." in out
    assert "--transaction-version 2 --client-dialect java" in out


def test_a_group_leader_that_lost_its_coordinator_does_not_send_sync_group_to_nobody():
    """Seed 95717 (group-rebalance): the group's leader got its JoinGroup answer, asked for metadata to compute the
    assignment, and meanwhile forgot its coordinator (a lost OffsetFetch answer broke the connection); it then sent
    SyncGroup to no broker at all and the simulation crashed (AttributeError).  It now finds the coordinator and
    joins again, as Java's sendSyncGroupRequest (COORDINATOR_NOT_AVAILABLE) and librdkafka do."""
    res = _run(95717, RunConfig(workload="group-rebalance", faults="all", records=20), [
        {"kind": "blackout", "node": "broker-0", "ms": 4000, "at": 388},
        {"kind": "partition", "node": "broker-1", "others": ["feeder"], "ms": 1000, "at": 388},
        {"kind": "drop", "api": "OffsetFetch", "response": True, "at": 812}])
    assert res.ok and res.error is None, (res.violations, res.error)
