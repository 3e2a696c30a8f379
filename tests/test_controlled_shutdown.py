"""A broker stopped as an operator stops it: KRaft's controlled shutdown.

BrokerServer.shutdown enters PENDING_CONTROLLED_SHUTDOWN (BrokerLifecycleManager.beginControlledShutdown) and
heartbeats at once with WantShutDown.  The controller (BrokerHeartbeatManager.calculateNextBrokerState,
ReplicationControlManager.handleBrokerInControlledShutdown) takes the broker out of every ISR and elects new
leaders for what it led, and answers ShouldShutDown once the broker leads nothing and every active broker has
caught up with those records (its controlled shutdown offset).  Then the broker exits cleanly.  A broker never
waits more than five minutes (KafkaBroker.shutdown()); with controlled.shutdown.enable=false it exits at once."""
from __future__ import annotations

import pytest

from txnlab import Cluster, Consumer, Producer
from txnlab.kernel.faults import Fault
from widgets import Stepper


def _cluster(**config) -> Cluster:
    c = Cluster(brokers=3, seed=0, config=config)
    c.create_topic("t", partitions=3, replication_factor=3)
    c.run_until_idle()
    return c


def _heartbeats(c, broker: int, mark: int) -> list:
    """(request, response) of each BrokerHeartbeat of ``broker`` sent after step ``mark``."""
    msgs = [x for x in c.network_messages() if x.api == "BrokerHeartbeat" and x.sent_step > mark]
    reqs = [x for x in msgs if not x.is_response and x.src == f"broker-{broker}"]
    return [(q, next((r for r in msgs if r.is_response and r.conn is q.conn and r.id > q.id), None)) for q in reqs]


def _exit_step(c, broker: int) -> int:
    return next(e.step for e in c.trace.events
                if e.node == f"broker-{broker}" and "shut down (controlled shutdown complete)" in e.text)


def test_leaderships_move_and_every_active_broker_knows_it_before_the_broker_exits():
    c = _cluster()
    b = c.leader("t", 0)
    mark = c.kernel.step_count
    c.shutdown(b)
    assert c.broker(b).alive and c.broker(b).lifecycle_state == "PENDING_CONTROLLED_SHUTDOWN"
    c.run_until_idle()

    assert not c.broker(b).alive
    for p in range(3):
        s = c.partition_state("t", p)
        assert s["leader"] not in (b, -1) and b not in s["isr"]
    beats = _heartbeats(c, b, mark)
    assert all(q.payload.want_shut_down for q, _ in beats)
    first, last = beats[0][1].payload, beats[-1][1].payload
    assert (first.in_controlled_shutdown, first.should_shut_down) == (True, False)
    assert last.should_shut_down and last.is_fenced
    assert sum(r.payload.should_shut_down for _, r in beats) == 1
    # the records that moved its leaderships: every other broker applied them and told the controller so in a
    # heartbeat before the controller let the broker go
    moved = [x for x in c.network_messages() if x.api == "LeaderAndIsr" and not x.is_response
             and x.sent_step == beats[0][0].sent_step + 1]
    assert moved and {x.dst for x in moved} == {f"broker-{o}" for o in c.brokers}
    offset = moved[0].payload.metadata_offset
    assert offset == c.controller.shutting_down.get(b, offset)
    granted = beats[-1][1].sent_step
    for o in c.brokers:
        if o != b:
            assert any(x.src == f"broker-{o}" and not x.is_response and x.payload.current_metadata_offset >= offset
                       and x.state == "delivered" and x.sent_step < granted
                       for x in c.network_messages() if x.api == "BrokerHeartbeat")
    assert _exit_step(c, b) > granted


def test_the_first_answer_brings_the_next_heartbeat_after_50_ms_then_the_interval():
    c = _cluster()
    b = c.leader("t", 0)
    mark = c.kernel.step_count
    c.shutdown(b)
    c.run_until_idle()
    sent = [q.sent_at for q, _ in _heartbeats(c, b, mark)]
    assert len(sent) >= 3
    assert sent[1] - sent[0] == 50 + 2                       # its answer after a round trip, then 50 ms
    assert sent[2] - sent[1] == 2_000 + 2                    # broker.heartbeat.interval.ms


def test_a_shutting_down_broker_stops_fetching_what_it_no_longer_replicates_in_sync():
    c = _cluster()
    b = next(x for x in c.brokers if x != c.leader("t", 0))
    c.shutdown(b)
    c.run_until(lambda: b not in c.partition_state("t", 0)["isr"], timeout_ms=1_000)
    c.advance(5)
    mark = c.kernel.step_count
    c.run_until_idle()
    assert not [x for x in c.network_messages() if x.api == "Fetch" and not x.is_response
                and x.src == f"broker-{b}" and x.sent_step > mark]


def test_no_leader_adds_a_shutting_down_broker_to_an_isr():
    c = _cluster()
    b = next(x for x in c.brokers if x != c.leader("t", 0))
    c.shutdown(b)
    c.run_until(lambda: b not in c.partition_state("t", 0)["isr"], timeout_ms=1_000)
    c.advance(5)                                                # (the leader has the controller's news)
    leader = c.broker(c.leader("t", 0))
    p = leader.partitions[("t", 0)]
    assert b in p.followers and not p.is_replica_isr_eligible(b)


def _commit_across(c, stop) -> tuple:
    """A transaction whose coordinator is stopped by ``stop(coordinator)`` after its record is written; returns
    the coordinator, the simulated ms commit_transaction() took, and what a read_committed consumer reads."""
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "client.id": "app"})
    p.init_transactions()
    coordinator = c.transaction_coordinator("tx")
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    p.flush()
    stop(coordinator)
    start = c.now
    p.commit_transaction(60)
    took = c.now - start
    con = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "isolation.level": "read_committed",
                    "auto.offset.reset": "earliest"})
    con.subscribe(["t"])
    seen = [m.value() for m in con.consume(10, timeout=5) if not m.error()]
    return coordinator, took, seen


def test_a_commit_across_a_controlled_shutdown_of_its_coordinator_does_not_wait_for_the_session_timeout():
    crashed = _cluster()
    old, took_crash, seen = _commit_across(crashed, lambda b: crashed.crash(b))
    # a crash: the coordinator moves once the controller has missed its heartbeats for broker.session.timeout.ms
    session = crashed.broker_config["broker.session.timeout.ms"]
    assert seen == [b"a"] and took_crash > session - crashed.broker_config["broker.heartbeat.interval.ms"]

    c = _cluster()
    old, took, seen = _commit_across(c, lambda b: c.shutdown(b))
    assert seen == [b"a"]
    assert c.transaction_coordinator("tx") not in (old, -1)
    assert took < 1_000, took           # NOT_COORDINATOR from the old one at once: it looks again after retry.backoff.ms


def test_with_controlled_shutdown_off_the_broker_exits_at_once_and_the_controller_finds_out_later():
    c = _cluster(**{"controlled.shutdown.enable": False})
    b = c.leader("t", 0)
    c.shutdown(b)
    assert not c.broker(b).alive
    assert c.leader("t", 0) == b                               # nobody moved it: the session must expire first
    c.advance(c.broker_config["broker.session.timeout.ms"] + 100)
    assert c.leader("t", 0) not in (b, -1)


def test_the_last_in_sync_replica_leaves_its_partition_offline_and_leads_it_again_after_a_restart():
    c = _cluster()
    c.create_topic("single", partitions=1, replication_factor=1)
    c.run_until_idle()
    b = c.leader("single", 0)
    c.shutdown(b)
    c.run_until_idle()
    assert not c.broker(b).alive
    s = c.partition_state("single", 0)
    assert s["leader"] == -1 and s["isr"] == [b]
    c.restart(b)
    c.run_until(lambda: c.leader("single", 0) == b, timeout_ms=30_000)
    assert c.leader("single", 0) == b


def test_the_broker_waits_until_an_active_broker_cut_off_from_the_controller_is_fenced():
    c = _cluster()
    b = c.leader("t", 0)
    cut = next(x for x in c.brokers if x != b)
    c.partition([f"broker-{cut}"], ["controller"])
    c.shutdown(b)
    c.run_until(lambda: not c.broker(b).alive, timeout_ms=60_000)
    fenced = next(e.step for e in c.trace.events if f"controller fenced broker {cut}:" in e.narration)
    assert _exit_step(c, b) > fenced
    assert any("may not shut down yet: an active broker has not caught up" in e.narration for e in c.trace.events)


def test_a_broker_that_cannot_reach_the_controller_exits_after_five_minutes():
    c = _cluster()
    b = c.leader("t", 0)
    c.partition([f"broker-{b}"], ["controller"])
    start = c.now
    c.shutdown(b)
    c.run_until(lambda: not c.broker(b).alive, timeout_ms=400_000)
    assert not c.broker(b).alive and c.now - start == 300_000
    assert any("timed out waiting for the controller to approve controlled shutdown" in e.narration
               for e in c.trace.events)


def test_the_shutdown_fault_restarts_the_broker_ms_after_it_went_down():
    c = _cluster()
    b = c.leader("t", 0)
    f = Fault("shutdown", f"broker-{b}", ms=2_000)
    assert f.describe() == f"broker-{b} is shut down (controlled shutdown), back 2000ms after it exits"
    assert Fault.from_json(f.to_json()) == f
    assert f.apply(c)
    assert not f.apply(c)                                       # already shutting down: nothing to do
    c.run_until(lambda: not c.broker(b).alive, timeout_ms=30_000)
    down = c.now
    c.run_until(lambda: c.broker(b).alive, timeout_ms=30_000)
    assert c.now - down == 2_000


def test_only_a_running_broker_can_be_shut_down():
    c = _cluster()
    with pytest.raises(RuntimeError, match="not a broker"):
        c.shutdown("controller")
    c.crash(1)
    with pytest.raises(RuntimeError, match="already down"):
        c.shutdown(1)
    c.shutdown(0)
    with pytest.raises(RuntimeError, match="already shutting down"):
        c.shutdown(0)


def test_the_stepper_shuts_a_broker_down_as_a_branch():
    s = Stepper("commit-visible-atomically", skip_background=True)
    try:
        s.step_until("is now PrepareCommit")
        old = s.cluster.transaction_coordinator("tx-orders")
        branch = s.shutdown(old)
        assert s.history.branches[branch].faults[-1][1].kind == "shutdown"
        with pytest.raises(ValueError, match="already shutting down"):
            s.shutdown(old)
        s.run_to_end()
        assert not s.cluster.kernel.nodes[f"broker-{old}"].alive
        assert s.cluster.transaction_state("tx-orders")["state"] == "CompleteCommit"
    finally:
        s.close()


def test_the_faults_panel_s_shut_down_button_shuts_the_chosen_broker_down():
    """A teacher opens Faults, picks the coordinator's broker and clicks Shut down: a branch with the shutdown;
    a client process picked instead is refused with a notice, not an exception."""
    from widgets.stepper_ui import TOOLS
    s = Stepper("commit-visible-atomically", skip_background=True)
    try:
        s.step_until("is now PrepareCommit")
        s._tools.selected_index = TOOLS.index("Faults")          # what a click on the panel's title does
        old = f"broker-{s.cluster.transaction_coordinator('tx-orders')}"
        s._fault_node.value = "producer"
        s._btn_shutdown.click()
        assert s.notice.startswith("not applied: producer is not a broker")
        s._fault_node.value = old
        s._btn_shutdown.click()
        assert s.history.branches[s.branch].faults[-1][1].kind == "shutdown"
        assert s.notice.startswith(f"applied: {old} is shut down (controlled shutdown)")
    finally:
        s.close()
