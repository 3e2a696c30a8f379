"""A registered broker starts fenced, and one lifecycle request at a time, as KRaft's brokers do.

ClusterControlManager.registerBroker writes a fenced registration; BrokerHeartbeatManager.calculateNextBrokerState
unfences the broker (FENCED -> UNFENCED) only on a heartbeat that does not want to be fenced (WantFence false) and
whose CurrentMetadataOffset has reached the offset of its registration record.  The broker's side,
BrokerLifecycleManager: it heartbeats with WantFence until the controller answers IsCaughtUp, then asks to be
unfenced, and becomes RUNNING (serves clients) on the answer IsFenced false.  While it is fenced the controller
elects it leader of nothing and lets it into no ISR (KIP-841).  BrokerLifecycleManager keeps one registration or
heartbeat in flight (communicationInFlight) and schedules the next one once the previous one is answered."""
from txnlab import Cluster, Producer


def _cluster(topic_rf: int = 3):
    c = Cluster(brokers=3, seed=5)
    c.create_topic("t", partitions=1, replication_factor=topic_rf)
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all" if topic_rf > 1 else "1"})
    for i in range(4):
        p.produce("t", value=b"%d" % i)
    p.flush()
    c.advance(1_000)
    return c, p


def _requests(c, api: str, src: str, after_step: int = 0) -> list:
    return [x for x in c.network_messages() if x.api == api and not x.is_response and x.src == src
            and x.sent_step > after_step]


def _answer_to(c, req):
    return next((x for x in c.network_messages() if x.is_response and x.conn is req.conn
                 and x.correlation_id == req.correlation_id), None)


def _crash_until_fenced_and_restart(c, b: int) -> int:
    c.crash(b)
    c.advance(12_000)                                  # its session expires (broker.session.timeout.ms 9 s)
    assert b not in c.controller.live_brokers
    mark = c.kernel.step_count
    c.restart(b)
    return mark


def test_a_restarted_broker_is_fenced_until_a_heartbeat_shows_it_caught_up_then_rejoins_the_isr():
    c, p = _cluster()
    f = next(b for b in c.brokers if b != c.leader("t", 0))
    fname = f"broker-{f}"
    old_epoch = c.broker(f).broker_epoch
    mark = _crash_until_fenced_and_restart(c, f)
    c.run_until(lambda: c.broker(f).registered, timeout_ms=10_000)
    # registered, with a new broker epoch, and fenced: not live, and the broker itself is STARTING
    epoch = c.broker(f).broker_epoch
    assert epoch > old_epoch and c.controller.broker_epochs[f] == epoch
    assert f not in c.controller.registered and f not in c.controller.live_brokers
    assert c.broker(f).lifecycle_state == "STARTING" and not c.broker(f).running
    c.run_until(lambda: f in c.controller.live_brokers, timeout_ms=10_000)
    beats = _requests(c, "BrokerHeartbeat", fname, mark)
    reg_offset = c.controller.register_offsets[f]
    # its first heartbeat wants to stay fenced; the one that unfenced it asks for it, caught up past its registration
    assert beats[0].payload.want_fence
    last = beats[-1].payload
    assert not last.want_fence and last.current_metadata_offset >= reg_offset and last.broker_epoch == epoch
    assert all(b.payload.want_fence for b in beats[:-1])
    c.run_until(lambda: c.broker(f).running, timeout_ms=5_000)
    answer = _answer_to(c, beats[-1])
    assert answer is not None and answer.payload.is_caught_up and not answer.payload.is_fenced
    assert c.broker(f).lifecycle_state == "RUNNING"
    # the trace shows the heartbeat that unfenced it: the controller's step handling that very request
    unfenced = [e for e in c.trace.events if e.step > mark
                and f"controller unfenced broker {f}: its heartbeat" in e.narration]
    assert len(unfenced) == 1 and unfenced[0].msg_id == beats[-1].id and unfenced[0].api == "BrokerHeartbeat"
    # then (and only then) its replica rejoins the ISR, named with the new epoch
    p.produce("t", value=b"more")
    p.flush()
    c.run_until(lambda: f in c.partition_state("t", 0)["isr"], timeout_ms=20_000)
    adds = [x for x in c.network_messages() if x.api == "AlterPartition" and not x.is_response
            and x.sent_step > mark and f in x.payload.new_isr]
    assert adds and all(x.sent_step > unfenced[0].step for x in adds)
    assert [b.broker_epoch for b in adds[-1].payload.new_isr_with_epochs if b.broker_id == f] == [epoch]


def test_a_fenced_registration_is_not_elected_leader_until_the_broker_is_unfenced():
    """The only replica of the partition restarts: its registration does not make it leader (the partition stays
    offline while it catches up); the heartbeat that unfences it does."""
    c, p = _cluster(topic_rf=1)
    only = c.leader("t", 0)
    mark = _crash_until_fenced_and_restart(c, only)
    assert c.partition_state("t", 0)["leader"] == -1
    c.run_until(lambda: c.broker(only).registered, timeout_ms=10_000)
    assert only not in c.controller.registered
    assert c.controller.states[("t", 0)].leader == -1
    c.run_until(lambda: c.controller.states[("t", 0)].leader == only, timeout_ms=10_000)
    elected = next(e for e in c.trace.events if e.step > mark and f"controller elected broker {only} leader of t-0"
                   in e.narration)
    assert f"controller unfenced broker {only}" in elected.narration and elected.api == "BrokerHeartbeat"
    # and clients are served once it is running
    p.produce("t", value=b"back")
    p.flush()
    assert c.broker(only).running


def test_a_fenced_broker_refuses_clients_until_it_is_unfenced():
    """BrokerServer enables its listeners only once the broker is unfenced: a client that knows only a registered
    but still fenced broker is refused, and served once the broker is running."""
    c, _ = _cluster()
    f = next(b for b in c.brokers if b != c.leader("t", 0))
    restart = _crash_until_fenced_and_restart(c, f)
    c.run_until(lambda: c.broker(f).registered, timeout_ms=10_000)
    assert f not in c.controller.registered and not c.broker(f).running
    mark = c.kernel.step_count
    p = Producer({"bootstrap.servers": f"broker-{f}:9092@{c.id}", "acks": "all"})
    p.produce("t", value=b"late")
    p.flush()
    refused = [e for e in c.trace.events if e.step > mark and f"broker {f} is still starting" in e.narration]
    assert refused and all(e.node == f"broker-{f}" for e in refused)
    unfenced = next(e for e in c.trace.events if e.step > restart and f"controller unfenced broker {f}" in e.narration)
    assert all(e.step < unfenced.step for e in refused) and c.broker(f).running


def test_one_lifecycle_request_in_flight_and_the_next_heartbeat_follows_the_answer():
    """Heartbeat answers held up 1.5 s: the broker sends its next heartbeat broker.heartbeat.interval.ms after the
    answer (never while one is unanswered), so the heartbeats of a broker never overlap."""
    c, _ = _cluster()
    f = next(b for b in c.brokers if b != c.leader("t", 0))
    fname = f"broker-{f}"
    mark = c.kernel.step_count
    c.delay_next("BrokerHeartbeat", 1_500, response=True, src="controller", dst=fname, count=3)
    c.advance(15_000)
    interval = c.broker_config["broker.heartbeat.interval.ms"]
    beats = _requests(c, "BrokerHeartbeat", fname, mark)
    assert len(beats) >= 4
    for prev, nxt in zip(beats, beats[1:]):
        ans = _answer_to(c, prev)
        assert ans is not None and ans.state == "delivered"
        assert nxt.sent_at >= ans.deliver_at + interval
    # the delayed answers pushed the heartbeats later: 3 answers 1.5 s late
    assert beats[3].sent_at - beats[0].sent_at >= 3 * (interval + 1_500)
    assert f in c.controller.live_brokers
