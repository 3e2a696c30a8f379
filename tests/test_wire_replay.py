"""Determinism at the edge: the engine never reads the wall clock; real clients enter only at the wire door, and
a run with them is reproducible as far as their arrival order is.  Everything the door did to the simulation
(the requests' bytes, the settling after them, each time the wall clock moved simulated time on) is recorded in
``door.inputs``; replaying them on a fresh cluster built the same way gives the identical trace."""
from __future__ import annotations

import hashlib
import time
import uuid

from txnlab.cluster import Cluster
from txnlab.wire.apis_data import topic_id
from txnlab.wire import clock
from txnlab.wire.replay import ReplayDoor, inputs_from_jsonl, inputs_to_jsonl, replay
from wire_helpers import commit_abort_commit, consumer, lab, producer, read_all, values


def _fresh():
    c = Cluster(brokers=3, seed=1)
    c.create_topic("t", partitions=1, replication_factor=3)
    return c


def _digest(cluster) -> str:
    return hashlib.sha256(cluster.trace.to_jsonl().encode()).hexdigest()


def _a_run_with_real_clients():
    """A transactional producer (commit, abort, commit) with pauses, then a read_committed consumer whose
    long-polling fetches are answered only as the wall clock moves simulated time on."""
    start = time.monotonic()
    with lab() as (c, door):
        _p = commit_abort_commit(door, 3, pause_s=0.05)
        got = read_all(consumer(door, "rc"), ["t"], expect=6, idle_polls=4)
        assert values(got) == [b"a0", b"a1", b"a2", b"c0", b"c1", b"c2"]
    c.wall_ms = (time.monotonic() - start) * 1000
    return c, door


def test_replaying_the_doors_inputs_gives_the_identical_trace():
    c, door = _a_run_with_real_clients()
    clock = [e for e in c.trace.events if e.kind == "clock"]
    assert clock, "the wall clock moved simulated time on during the run"
    assert all(e.attrs["ms"] > 0 and e.text == f"the wall clock moved simulated time on by {e.attrs['ms']} ms"
               for e in clock)
    assert sum(1 for e in door.inputs if e["kind"] == "advance") == len(clock)
    # idle ticks grow one clock step: two clock steps are next to each other in the trace only where the door
    # did something else to the simulation in between (a connection closed)
    events = list(c.trace.events)
    advances = [i for i, e in enumerate(door.inputs) if e["kind"] == "advance"]
    for k, (a, b) in enumerate(zip(clock, clock[1:])):
        if events.index(b) == events.index(a) + 1:
            between = door.inputs[advances[k] + 1:advances[k + 1]]
            assert any(e["kind"] not in ("accept", "advance") for e in between)
    assert any(e.kind == "remote" for e in events)

    # another process would read the inputs from JSON lines
    inputs = inputs_from_jsonl(inputs_to_jsonl(door.inputs))
    again = _fresh()
    rdoor = replay(again, inputs)
    assert again.trace.to_jsonl() == c.trace.to_jsonl()
    assert _digest(again) == _digest(c)
    assert inputs_to_jsonl(rdoor.inputs) == inputs_to_jsonl(door.inputs)
    assert again.log("t").high_watermark == c.log("t").high_watermark


def test_without_the_recorded_advances_the_replay_diverges():
    """The advances are real inputs: the consumer's parked fetches are answered only because time moved."""
    c, door = _a_run_with_real_clients()
    inputs = [e for e in door.inputs if e["kind"] != "advance"]
    again = _fresh()
    replay(again, inputs)
    assert _digest(again) != _digest(c)


def test_simulated_time_runs_at_most_lead_ms_ahead_of_the_wall_clock():
    """The requests' own work may move simulated time ahead of the wall clock only by ``lead_ms``: the consumer
    group's initial rebalance delay (3 s) and session timeouts pass at the pace the real client's own timers
    (heartbeats, poll timeouts) expect.  (Jumping to such timers made franz-go's members expire while alive.)"""
    c, door = _a_run_with_real_clients()
    opened = next(e for e in c.trace.events if e.kind == "note" and "wire protocol is open" in e.text)
    joined = [e for e in c.trace.events if e.kind == "deliver" and e.api == "JoinGroup" and e.is_response]
    assert joined, "the consumer joined its group"
    assert c.kernel.now - opened.time <= c.wall_ms + door.lead_ms


def test_a_bounded_trace_keeps_the_doors_memory_bounded_too():
    """With sim.trace.keep.steps (a long session) the door keeps no growing record of every request's bytes:
    only its last input (the clock's coalescing looks at it); a whole-trace cluster records them all."""
    with lab(config={"sim.trace.keep.steps": 200}) as (c, door):
        assert not door.recording
        p = producer(door, **{"enable.idempotence": True})
        for round_ in range(5):
            for i in range(20):
                p.produce("t", value=f"{round_}-{i}".encode())
            assert p.flush(30) == 0
        assert door.requests >= 5 and len(door.inputs) <= 1
        assert c.log("t").high_watermark == 100
    with lab() as (c, door):
        assert door.recording


def _recreated():
    """Topic t created, deleted and created again before the door opens: its id is the second creation's."""
    from test_wire_fetch_ids import recreate
    c = _fresh()
    recreate(c)
    return c


def test_a_recreated_topics_id_is_the_same_in_the_replay():
    """librdkafka fetches by topic id (Fetch v13+): the run's Fetch requests name t by its second creation's id
    (not the first's), and replaying their bytes on a cluster built the same way (t created, deleted, created)
    finds the topic again: the identical trace."""
    c = _recreated()
    with c.listen() as door:
        p = producer(door, **{"enable.idempotence": True})
        for i in range(3):
            p.produce("t", value=f"v{i}".encode())
        assert p.flush(30) == 0
        rc = consumer(door, "rc")
        try:
            assert values(read_all(rc, ["t"], expect=3, idle_polls=4)) == [b"v0", b"v1", b"v2"]
        finally:
            rc.close()
        second = topic_id(door, "t")
    first = uuid.uuid5(uuid.NAMESPACE_URL, "txnlab:seed-1:t")
    fetches = [e["payload"] for e in door.inputs if e["kind"] == "request" and e["payload"][:2] == b"\x00\x01"]
    assert any(second.bytes in f for f in fetches) and not any(first.bytes in f for f in fetches)
    assert second != first
    again = _recreated()
    replay(again, door.inputs)
    assert _digest(again) == _digest(c)


def test_work_stopped_at_the_lead_goes_on_as_soon_as_the_wall_clock_repays_some(monkeypatch):
    """When the requests' work has used the whole lead, what it still has to do (here: a timer 8 ms away) runs as
    soon as the wall clock has repaid enough of the lead, not once it has repaid all of it (a real client saw a
    one-second stall every ~50 one-record transactions), and the replay repeats it from the recorded settle."""
    wall = [0.0]
    monkeypatch.setattr(clock, "monotonic", lambda: wall[0])
    opened = {"kind": "open", "ports": {}, "mode": "run", "clock": "wall", "settle_ms": 2_000, "lead_ms": 50,
              "request_timeout_ms": 30_000, "max_connections": 10}

    def with_work(cluster):
        fired = []
        cluster.kernel.schedule(8, "timer", "broker-0", "the requests' remaining work",
                                fn=lambda: fired.append(cluster.kernel.now))
        return fired

    c = _fresh()
    door = ReplayDoor(c, opened)
    fired = with_work(c)
    start = c.kernel.now
    door._lead = door.lead_ms            # the requests' work used the whole lead
    wall[0] += 0.005
    door._pump()                         # 5 ms repaid: the timer is further away than that
    assert fired == [] and door._lead == 45
    wall[0] += 0.005
    door._pump()                         # 10 ms repaid: the timer runs, 40 ms of the lead are left to repay
    assert fired == [start + 8] and door._lead == 48
    assert [e for e in door.inputs if e["kind"] == "settle"] == [{"kind": "settle", "requests": [], "until": start + 10}]

    again = _fresh()
    fired_again = with_work(again)
    replay(again, door.inputs)
    assert fired_again == fired and again.trace.to_jsonl() == c.trace.to_jsonl()
