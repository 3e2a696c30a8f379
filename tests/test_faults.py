"""One fault type: the stepper, the sweep's nemesis and the explorer all apply the kernel's ``Fault``; a fault
round-trips through JSON; the same fault does the same thing from the stepper and from a schedule; and what
a sweep or the explorer finds is a ``Counterexample`` that the stepper opens where its invariant breaks."""
from dataclasses import replace

import pytest

from txnlab import Cluster, Producer
from txnlab.kernel.faults import Fault, schedule_from_json, schedule_to_json
from txnlab.sweep import nemesis
from txnlab.sweep.counterexample import Counterexample
from txnlab.sweep.explore import Explorer
from txnlab.sweep.explore import replay as replay_choices
from txnlab.sweep.nemesis import Nemesis
from txnlab.sweep.runner import RunConfig, replay, run_seed
from widgets import Stepper
from widgets.execution import Branch

IGNORE_LSO = RunConfig(workload="copier", faults="none", mutation="ignore-lso", records=20)

EVERY_KIND = [
    Fault("crash", "broker-1", ms=3_000, clean=True, at=120),
    Fault("crash", api="WriteTxnMarkers", side="src", ms=1_000, at=50),
    Fault("crash", "producer", step=12),
    Fault("restart", "broker-1"),
    Fault("blackout", "broker-2", ms=4_000, at=0),
    Fault("kill", "copier-0", at=900),
    Fault("pause", "producer", ms=5_000),
    Fault("zombie", "copier-1", ms=500, at=7),
    Fault("partition", "broker-0", others=("controller",), ms=5_000, at=30),
    Fault("isolate", "broker-2"),
    Fault("heal"),
    Fault("move-leader", "broker-2", topic="orders", partition=1, step=3),
    Fault("move-leaders", "broker-0", at=10),
    Fault("drop", msg_id=41),
    Fault("delay", msg_id=41, ms=250),
    Fault("duplicate", api="Produce", response=True, at=5),
    Fault("delay", api="EndTxn", ms=2_000, at=5),
]


def test_a_fault_round_trips_through_json():
    for f in EVERY_KIND:
        assert Fault.from_json(f.to_json()) == f
        assert Fault.from_dict(f.to_dict()) == f
        assert f.describe()
    assert schedule_from_json(schedule_to_json(EVERY_KIND)) == EVERY_KIND
    assert EVERY_KIND[0].describe() == "t=120ms broker-1 shuts down cleanly, back after 3000ms"
    assert EVERY_KIND[2].describe() == "crash producer at step 12"


def test_a_schedule_printed_before_the_one_fault_type_still_reads():
    old = '[{"at":5,"kind":"crash-on","ms":300,"api":"EndTxn","side":"dst"},' \
          '{"at":9,"kind":"partition","target":"broker-1","ms":1000,"other":"controller"}]'
    assert schedule_from_json(old) == [Fault("crash", api="EndTxn", side="dst", ms=300, at=5),
                                       Fault("partition", "broker-1", others=("controller",), ms=1_000, at=9)]


def test_the_sweep_the_stepper_and_the_nemesis_share_one_class():
    assert nemesis.Fault is Fault
    import widgets
    assert widgets.Fault is Fault
    plan = nemesis.plan(3, "all", ["broker-0", "broker-1", "broker-2"], ["feeder", "copier-0"], 2_000)
    assert plan and all(isinstance(f, Fault) and f.at is not None for f in plan)


def test_a_saved_branch_round_trips_with_its_faults_at_their_steps():
    b = Branch("b1", 7, None, ((3, Fault("crash", "broker-1")), (9, Fault("drop", msg_id=12))), "main")
    d = b.to_dict()
    assert [f["step"] for f in d["faults"]] == [3, 9]
    assert Branch.from_dict(d) == b


def _fault_steps(cluster) -> list:
    return [e.text for e in cluster.trace.events if e.kind == "fault"]


def _orders(cluster):
    cluster.create_topic("orders", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True})
    for v in ("a", "b", "c"):
        p.produce("orders", value=v)
    p.flush(30)
    return [m for m in cluster.network_messages() if m.api == "Produce" and m.is_response and m.state == "dropped"]


@pytest.mark.parametrize("fault", [Fault("crash", "broker-1", ms=2_000), Fault("drop", api="Produce", response=True),
                                   Fault("partition", "broker-2", others=("broker-0",), ms=1_500)])
def test_the_same_fault_from_the_stepper_and_from_a_schedule_has_the_same_effect(fault):
    s = Stepper(_orders, seed=4, granularity="event")
    s.apply(fault)                                        # a person applies it at step 0
    s.run_to_end()
    scheduled = Cluster(brokers=3, seed=4)
    Nemesis(scheduled, None, [fault.at_time(0)]).start()  # a sweep's schedule: the nemesis applies it at t=0
    dropped = _orders(scheduled)
    scheduled.advance(3_000)
    s.cluster.advance(3_000)
    assert _fault_steps(s.cluster) == _fault_steps(scheduled)
    assert len(dropped) == (1 if fault.kind == "drop" else 0)
    assert s.cluster.log("orders").log_end_offset == scheduled.log("orders").log_end_offset == 3
    assert [b.alive for b in map(s.cluster.broker, s.cluster.brokers)] == \
        [b.alive for b in map(scheduled.broker, scheduled.brokers)]
    assert s.cluster.kernel.network.cuts == scheduled.kernel.network.cuts == set()
    s.close()


# ------------------------------------------------------------------------------ counterexamples
@pytest.fixture(scope="module")
def lso_counterexample():
    res = next(r for r in (run_seed(seed, IGNORE_LSO) for seed in range(20)) if not r.ok)
    return res.counterexample()


def test_a_failing_sweep_seed_is_a_counterexample_value(lso_counterexample):
    ce = lso_counterexample
    assert ce.source == "sweep" and ce.config["mutation"] == "ignore-lso"
    assert ce.invariant == "G1a" and ce.step is None       # the history checker sees it at the end
    assert Counterexample.from_json(ce.to_json()) == ce
    assert "G1a broken at the end of the run" in ce.describe()


def test_the_stepper_opens_a_sweep_counterexample_where_its_invariant_breaks(lso_counterexample):
    ce = Counterexample.from_json(lso_counterexample.to_json())
    s = Stepper.open(ce)
    assert s.position == s.length and s.at_end               # broken at the end: opened at the last step
    assert ("G1a", False) in [(name, ok) for name, ok, _ in s.invariants]
    assert "G1a ✗" in s._status.value and "at the end of the run" in s.notice
    assert "<div class='txl-bad'>G1a ✗" in s._status.value                # the broken invariant, in red
    plain = replay(ce.seed, IGNORE_LSO)                      # the stepper re-ran the sweep's run, byte for byte
    stepped = [line for line in s.cluster.trace.text().splitlines() if "scenario's client code" not in line]
    assert stepped == plain.cluster.trace.text().splitlines()
    end = s.position
    s.back(4)
    assert s.position == end - 4 and dict((n, ok) for n, ok, _ in s.invariants)["history"] is None
    s.step(4)
    assert s.position == end and s.result.violations == plain.violations
    s.close()


def test_a_counterexample_broken_mid_run_opens_at_that_kernel_step(lso_counterexample):
    ce = replace(lso_counterexample, invariant="watermarks", step=400)
    s = Stepper.open(ce)
    ex = s.execution
    assert ex.kernel_steps[s.position] >= 400 > ex.kernel_steps[s.position - 1]
    assert "watermarks ✗ at step" in s.notice
    s.step()
    assert s.position == ex.position and not s.at_end         # Step and Back work from there
    s.back(2)
    assert s.execution.kernel_steps[s.position] < 400
    s.close()


def test_the_stepper_opens_an_explorer_counterexample():
    ex = Explorer(mutation="no-fencing")
    assert not ex.explore()
    ce = ex.found()
    assert ce.source == "explore" and list(ce.choices) == ex.counterexample.choices
    assert ce.faults and all(f.step is not None for f in ce.faults)
    ce = Counterexample.from_json(ce.to_json())
    s = Stepper.open(ce)
    assert s.position == s.length
    assert [ok for _, ok, _ in s.invariants] == [False] and "✗" in s._status.value
    plain = replay_choices(list(ce.choices), "no-fencing")
    stepped = [line for line in s.cluster.trace.text().splitlines() if "scenario's client code" not in line]
    assert stepped == plain.cluster.trace.text().splitlines()
    s.back(5)
    s.step(5)
    assert s.result.outcome == plain.outcome
    s.close()


def test_the_command_lines_print_the_counterexample_the_stepper_opens(capsys):
    from txnlab.sweep.__main__ import main as sweep_main
    from txnlab.sweep.explore import main as explore_main
    assert sweep_main(["--workload", "copier", "--faults", "none", "--mutation", "ignore-lso", "--seeds", "1"]) == 1
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("counterexample: "))
    ce = Counterexample.from_json(line.split(": ", 1)[1])
    assert (ce.source, ce.seed, ce.invariant) == ("sweep", 0, "G1a")
    assert explore_main(["--mutation", "no-fencing"]) == 1
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("counterexample (JSON"))
    assert Counterexample.from_json(line.split(": ", 1)[1]).source == "explore"
