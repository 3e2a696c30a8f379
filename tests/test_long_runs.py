"""Long runs hold bounded memory: a bounded trace keeps the last N steps (read by their positions in the whole
run, step numbers absolute), the network's history keeps the last N messages, and an idle cluster with the
trace off keeps nothing per simulated minute."""
import pytest

from txnlab import Cluster, Consumer, Producer
from txnlab.kernel.trace import Trace, TraceEvent


def _idle_cluster(**config):
    cluster = Cluster(brokers=3, seed=0, config=config)
    cluster.create_topic("t", partitions=1, replication_factor=3)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
    consumer.subscribe(["t"])
    consumer.poll(1.0)
    return cluster


def test_a_bounded_trace_keeps_the_last_steps_with_their_absolute_numbers():
    cluster = _idle_cluster(**{"sim.trace.keep.steps": 500})
    cluster.advance(60_000)
    trace = cluster.kernel.trace
    kept = list(trace.events)
    assert 500 <= len(kept) <= 625                       # the last 500 steps, discarded in chunks of a quarter
    assert len(trace) == trace.first_position + len(kept) > 2_000   # positions count the whole run
    assert kept[-1].step == cluster.kernel.step_count                # step numbers stay absolute
    assert trace[len(trace) - 1] is kept[-1] and trace[-1] is kept[-1]
    assert trace[trace.first_position] is kept[0]
    assert trace.events[trace.first_position - 10:] == kept          # a slice gives what is kept of it
    with pytest.raises(IndexError, match="keeps the last 500 steps"):
        trace[0]
    assert str(kept[-1]) in trace.tail(5, include_background=True)


def test_a_bounded_network_history_keeps_the_last_messages_and_those_on_the_wire():
    cluster = _idle_cluster(**{"sim.trace.keep.steps": 300})
    cluster.advance(60_000)
    net = cluster.kernel.network
    assert 300 <= len(net.messages) <= 375
    newest = max(net.messages)
    assert net.message(newest) is net.messages[newest]
    for m in net.in_flight():
        assert net.message(m.id) is m
    with pytest.raises(KeyError):
        net.message(1)


def test_the_same_run_bounded_or_not_gives_the_same_steps():
    full = _idle_cluster()
    ring = _idle_cluster(**{"sim.trace.keep.steps": 200})
    for c in (full, ring):
        c.advance(20_000)
    kept = [str(e) for e in ring.kernel.trace.events]
    assert kept == [str(e) for e in full.kernel.trace.events[-len(kept):]]


def test_an_idle_cluster_with_the_trace_off_keeps_nothing_per_simulated_minute():
    cluster = _idle_cluster(**{"sim.trace": False})
    k = cluster.kernel
    cluster.advance(300_000)          # every periodic request has been sent and timed out (or answered) by now
    sizes = (len(k._queue), sum(len(lane) for lane in k._lanes.values()), len(k.network.connections()))
    steps = k.step_count
    cluster.advance(600_000)
    assert k.step_count - steps > 10_000                 # heartbeats and long polls really happen ...
    assert len(k.trace) == 0 and len(k.network.messages) == 0
    # ... and leave nothing behind: as many events queued as before, and a request timeout waits only while it
    # could still fire (cancelled ones are gone once their time has passed)
    assert len(k._queue) <= sizes[0] and len(k.network.connections()) == sizes[2]
    for delay, lane in k._lanes.items():
        assert all(k.now <= ev.time <= k.now + delay for ev in lane)


def test_a_bounded_trace_can_be_set_on_a_running_cluster_and_reads_like_a_trace():
    cluster = Cluster(brokers=1, seed=0)
    cluster.create_topic("t", partitions=1, replication_factor=1)
    cluster.kernel.trace.set_limit(10)
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(40):
        p.produce("t", value=b"%d" % i)
        p.flush()
    p.flush()
    trace = cluster.kernel.trace
    assert trace.limit == 10 and len(list(trace.events)) <= 12 and trace.first_position > 0
    assert trace.filter(api="Produce") and all(e.api == "Produce" for e in trace.filter(api="Produce"))
    assert Trace.from_jsonl(trace.to_jsonl()).text() == trace.text()
    with pytest.raises(ValueError, match="cannot be unbounded again"):
        trace.set_limit(None)
    with pytest.raises(ValueError, match="at least 1 step"):
        Trace(limit=0)
    assert TraceEvent.from_dict(trace[-1].to_dict()) == trace[-1]


def test_the_bound_is_a_checked_config_key():
    with pytest.raises(Exception, match="sim.trace.keep.steps"):
        Cluster(brokers=1, config={"sim.trace.keep.steps": -1})
