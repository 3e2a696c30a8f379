"""The stepper on the other designs' labs (issue 7): RocketMQ's half messages and classic two-phase commit.

A person opens the stepper on a RocketMQ story and on a 2PC story, steps, goes back, applies a fault
from the fault menu (crash the producer right after its half message is stored; crash the 2PC
coordinator once both banks have voted) and reads what the consumer of the real topic and the banks
hold at the end.  Same seed + same branch replays to the same trace.
"""
import pytest

from txnlab import gallery
from txnlab.twopc import TwoPhaseCommitLab
from widgets import Stepper
from widgets.execution import Branch, Execution, Story
from widgets.rocketmq_views import BLOCKED, IN_DOUBT

RMQ = "rocketmq-end-transaction-lost"
TRANSFER = "2pc-transfer"
BLOCKS = "2pc-coordinator-crash-blocks"
EVENTS = ("deliver", "timer", "drop")


def trace_text(ex) -> str:
    return ex.kernel.trace.text()


def replay(name: str, branch: Branch) -> Execution:
    ex = Execution(Story.of(name), branch)
    ex.run_to_end()
    ex.close()
    return ex


def half_cells(stepper) -> list:
    """(half offset, status colour) of the cells of RMQ_SYS_TRANS_HALF_TOPIC as the stepper draws them."""
    shapes = stepper.lab_views[0][1].half.figure.layout.shapes
    return [(round((sh.x0 + sh.x1) / 2), sh.fillcolor) for sh in shapes if sh.type == "rect" and sh.y0 > 1.5]


def pick_and_click(stepper, process: str, button) -> None:
    """What a person does: click the process's lane head in the message diagram, then the fault button."""
    lanes = stepper.messages._lane_names
    stepper.messages._clicked_lane(None, type("P", (), {"point_inds": [lanes.index(process)]})())
    assert stepper._fault_node.value == process
    button.click()


# ------------------------------------------------------------------------- the stories themselves
@pytest.mark.parametrize("name", gallery.comparison_names())
def test_each_comparison_story_runs_plainly_ends_as_described_and_replays_by_seed(name):
    sc = gallery.load(name)
    assert sc.lab is not None and len(sc.description) > 80 and len(sc.expected) > 40
    lab, result = sc.play(seed=0)
    assert lab.kernel.idle
    sc.verify(lab, result)
    again, _ = sc.play(seed=0)
    assert again.trace.text() == lab.trace.text()


@pytest.mark.parametrize("name", [RMQ, BLOCKS])
def test_a_stepped_run_of_another_lab_is_the_plain_run(name):
    sc = gallery.load(name)
    lab, _ = sc.play(seed=3)
    ex = replay(name, Branch("main", seed=3))
    stepped = [line for line in trace_text(ex).splitlines() if "scenario's client code" not in line]
    assert stepped == lab.trace.text().splitlines()
    sc.verify(ex.cluster, ex.result)


def test_the_kafka_gallery_stays_kafka_and_load_finds_the_other_labs_stories():
    assert not set(gallery.comparison_names()) & set(gallery.names())
    assert {RMQ, TRANSFER, BLOCKS} <= set(gallery.comparison_names())
    with pytest.raises(KeyError, match="comparison labs have"):
        gallery.load("no-such-story")


# ---------------------------------------------------------------------------------- RocketMQ
def test_rocketmq_stepper_shows_the_half_and_op_topics_steps_and_goes_back():
    s = Stepper(RMQ, granularity="event")
    assert s._tabs.titles == ("Half and op topics", "Messages", "Trace")
    assert s.log_strip is None and s.coordinators is None           # no Kafka partition logs here
    assert {v for _, v in s._f_api.options} >= {"SEND_MESSAGE_V2", "END_TRANSACTION", "CHECK_TRANSACTION_STATE"}
    assert "Produce" not in {v for _, v in s._f_api.options}
    s._btn_step.click()
    assert s.position == 1 and s._slider.value == 1
    assert s.step_until("got SEND_MESSAGE_V2 from producer-1")
    stored = s.position
    assert "stored in RMQ_SYS_TRANS_HALF_TOPIC queue 0 at offset 0" in s.narration
    assert half_cells(s) == [(0, "#f0ad4e")]                        # one pending half message
    assert s.lab.topic_messages("order-topic") == []                 # invisible to consumers
    s._btn_back.click()
    assert s.position == stored - 1 and half_cells(s) == []          # before the broker stored it
    s.jump(stored)
    assert half_cells(s) == [(0, "#f0ad4e")]
    assert s.step_until("the network dropped END_TRANSACTION")
    assert s.step_until("CHECK_TRANSACTION_STATE for")               # the check service, about a minute later
    assert 60_000 <= s.lab.clock < 61_000
    assert half_cells(s) == [(0, "#d0d0d0"), (1, "#f0ad4e")]         # copied, and the checked copy pending
    s.run_to_end()
    assert half_cells(s) == [(0, "#d0d0d0"), (1, "#5cb85c")]         # the copy committed by the check-back
    view = s.lab_views[0][1]
    assert [r[2] for r in view.rows(s.lab)] == ["committed"]
    assert "<td style='background:#5cb85c'>committed</td>" in view.transactions.value
    assert s.result["consumer_saw"] == ["o-1"] and s.result["orders_in_db"] == ["o-1"]
    s.close()


def test_rocketmq_crash_the_producer_right_after_its_half_message_from_the_fault_menu():
    s = Stepper(RMQ, skip_background=True)
    assert s.step_until("the half message is stored")
    at = s.position
    procs = [v for _, v in s._fault_node.options]
    assert sorted(procs) == ["broker-a", "consumer-1", "namesrv", "producer-1"]   # the lab's own processes
    pick_and_click(s, "producer-1", s._btn_crash)
    crashed = s.branch
    assert crashed == "b1" and s.history.branches[crashed].faults == ((at, s.history.branches[crashed].faults[0][1]),)
    assert "producer-1 ✕" in s.messages.figure.data[s.messages._n + 2].text
    s._btn_restart.click()                                           # a client process is not restarted
    assert "not applied" in s.notice and "is a client" in s.notice and s.branch == crashed
    s.run_to_end()
    r = s.result
    assert r["create_order"] is False and "crashed" in r["error"]
    assert r["orders_in_db"] == [] and r["consumer_saw"] == []       # no order, no message: consistent
    assert r["checks_sent_to"] == ["producer-2", "producer-2"]       # the new instance answers UNKNOW twice
    assert [t["status"] for t in s.lab.transactions()] == ["pending"]
    ending = s.compare("main", crashed)
    assert ending["state"]["order-topic: what consumers can read"] == (["q0@0 o-1"], [])
    assert "o-1" in s.compare_html("main", crashed)
    s.switch("main")
    s.run_to_end()
    assert s.result["consumer_saw"] == ["o-1"]                        # the first branch is kept as it was
    # same seed + same branch: the same trace, byte for byte
    branch = s.history.branches[crashed]
    first, second = replay(RMQ, branch), replay(RMQ, branch)
    assert trace_text(first) == trace_text(second)
    assert first.result == r
    s.close()


def test_rocketmq_crash_after_the_local_transaction_is_repaired_by_a_new_instance():
    s = Stepper(RMQ, skip_background=True)
    assert s.step_until("executeLocalTransaction returned COMMIT_MESSAGE")
    s.crash(s.lab.node("producer-1"))                                # before END_TRANSACTION leaves
    s.run_to_end()
    assert s.result["orders_in_db"] == ["o-1"] and s.result["consumer_saw"] == ["o-1"]
    assert s.result["checks_sent_to"] == ["producer-2"]
    s.close()


# ------------------------------------------------------------------------- two-phase commit
def test_2pc_stepper_crash_the_coordinator_after_both_votes_from_the_fault_menu_blocks_the_banks():
    s = Stepper(TRANSFER, granularity="event")
    assert s._tabs.titles == ("Participants", "Messages", "Trace")
    assert [v for _, v in s._fault_node.options] == ["coordinator", "bank-a", "bank-b"]
    view = s.lab_views[0][1]
    assert s.step_until("every participant voted VOTE_COMMIT")
    voted = s.position
    assert [r[1] for r in view.rows(s.lab)[1:]] == ["READY", "READY"]   # both banks prepared
    assert view.participants.value.count("<td style='background:#f0ad4e'>READY</td>") == 2
    # prepared, with the coordinator up: in doubt (the decision is on its way), not blocked
    assert [r[2] for r in view.rows(s.lab)[1:]] == [IN_DOUBT, IN_DOUBT] and "BLOCKED" not in view.participants.value
    pick_and_click(s, "coordinator", s._btn_crash)
    crashed = s.branch
    assert [r[2] for r in view.rows(s.lab)[1:]] == [BLOCKED, BLOCKED]   # the coordinator that would tell them is down
    assert "DOWN: - (log: no decision)" in view.participants.value
    assert "coordinator</b> (<b style='color:#c92a2a'>down" in view.logs.value
    assert "START_2PC T1" in view.logs.value and "GLOBAL_COMMIT" not in view.logs.value
    assert s.step_until("cannot help")                               # cooperative termination: no help
    assert [r[2] for r in view.rows(s.lab)[1:]] == [BLOCKED, BLOCKED]
    assert view.participants.value.count("BLOCKED") == 2
    # back, before the crash: the coordinator is up again; forward: the branch's crash is re-applied
    s.jump(voted - 1)
    assert s.lab.coordinator.alive and s.branch == crashed
    s.step()
    assert not s.lab.coordinator.alive
    s.run_to_end()
    r = s.result
    assert r["after_30s"]["blocked"] == ["bank-a", "bank-b"] and not r["after_30s"]["finished_in_time"]
    assert r["after_30s"]["teller_reads_alice"].startswith("locked")
    assert r["operator_restarted"] == ["coordinator"] and r["outcome"] == "ABORT"
    assert s.lab.participant_states("T1") == {"bank-a": "ABORT", "bank-b": "ABORT"}
    assert s.lab.balances() == {"bank-a": {"alice": 100}, "bank-b": {"bob": 20}}
    assert s.outcome("main")["state"]["T1: coordinator's log"] == "COMMIT"
    assert s.compare("main", crashed)["state"]["bank-a: data"] == ({"alice": 70}, {"alice": 100})
    # the crash from the menu ends exactly as the story that scripts it
    scripted, _ = gallery.load(BLOCKS).play()
    assert s.lab.summary() == scripted.summary()
    branch = s.history.branches[crashed]
    assert trace_text(replay(TRANSFER, branch)) == trace_text(replay(TRANSFER, branch))
    s.close()


def test_2pc_restart_the_coordinator_from_the_fault_menu_before_the_operator_would():
    s = Stepper(BLOCKS, skip_background=True)
    assert s.step_until("coordinator crashes")
    assert s.step_until("cannot help")
    s._fault_node.value = "coordinator"
    s._btn_crash.click()                                             # already down: refused
    assert "not applied" in s.notice and "is down" in s.notice
    s._btn_restart.click()
    assert s.lab.coordinator.alive and s.branch == "b1"
    s.run_to_end()
    r = s.result
    assert r["after_30s"]["finished_in_time"] and r["operator_restarted"] == []
    assert r["outcome"] == "ABORT" and s.lab.clock < 30_000           # presumed abort, without the 30 s wait
    assert s.lab.locks() == {"bank-a": {}, "bank-b": {}}
    s.close()


def test_a_plain_function_of_a_lab_steps_too():
    def story(lab):
        lab.begin_transaction("T9", {"bank-a": {"alice": -5}})
        lab.run_until_idle()
        return lab.outcome("T9")

    s = Stepper(story, lab=lambda seed: TwoPhaseCommitLab({"bank-a": {"alice": 10}}, seed=seed), granularity="event")
    assert s._tabs.titles[0] == "Participants"
    s.run_to_end()
    assert s.result == "COMMIT" and s.lab.balances() == {"bank-a": {"alice": 5}}
    assert s.position == s.length and s.position > 0
    s.close()


def test_a_learners_config_goes_over_a_gallery_scenarios_own():
    """Stepper(scenario, config=...) builds the scenario's cluster with the learner's settings on top (here a
    bounded trace for a long session); the story still runs to its end and can step back."""
    from widgets import Stepper
    s = Stepper("commit-visible-atomically", config={"sim.trace.keep.steps": 60}, granularity="event")
    s.run_to_end()
    trace = s.cluster.kernel.trace
    assert trace.first_position > 0 and s.position == s.length
    s.back(5)
    assert s.position == s.length - 5
    s.close()
