"""A broker's registration and its broker epoch, as KRaft keeps them.

The controller keeps a broker's registration while it is fenced (ClusterControlManager.brokerRegistrations): a
broker whose session expired while it was cut off heartbeats again with the epoch of that registration and is
unfenced with it (BrokerHeartbeatManager.calculateNextBrokerState); it never registers again for being fenced
(BrokerLifecycleManager.BrokerHeartbeatResponseEvent).  A request that carries another broker epoch than the
registration's, as one of an earlier incarnation held up in the network does, is answered STALE_BROKER_EPOCH (77)
and changes nothing: a heartbeat (ReplicationControlManager.processBrokerHeartbeat) or an AlterPartition
(ReplicationControlManager.alterPartition), both through ClusterControlManager.checkBrokerEpoch."""
from txnlab.protocol.errors import Errors
from helpers import replicated_with_records


def _since(c, mark: int, api: str, *, response: bool, src=None, dst=None) -> list:
    return [x for x in c.network_messages() if x.api == api and x.is_response == response and x.sent_step > mark
            and (src is None or x.src == src) and (dst is None or x.dst == dst)]


def _put_back_on_the_wire(c, held, why: str):
    """Deliver ``held`` (a request of a crashed broker's previous incarnation) as a network that kept it would, on a
    connection of its own: the lab loses a crashed process's messages with its connections."""
    c.kernel.begin_step("fault", "network", why)
    return c.kernel.network.send(held.src, held.dst, held.api, held.payload, False, held.correlation_id,
                                 channel="previous incarnation")


def _answer(c, late):
    c.run_until(lambda: late.state == "delivered", timeout_ms=5_000)
    c.advance(10)
    return [x for x in c.network_messages() if x.is_response and x.conn is late.conn][0].payload


def test_a_fenced_broker_that_comes_back_heartbeats_with_its_epoch_and_does_not_register_again():
    """The follower is fenced while cut off from the controller, and an answer to a registration of it would be
    slow.  When it can reach the controller again, its heartbeat (with the epoch of its only registration) unfences
    it: it makes no registration, keeps its broker epoch, and rejoins the ISR named with that epoch."""
    c, p = replicated_with_records()
    leader = c.leader("t", 0)
    f = next(b for b in c.brokers if b != leader)
    epoch = c.broker(f).broker_epoch
    c.partition([f"broker-{f}"], ["controller"])
    c.advance(12_000)                                  # fenced (broker.session.timeout.ms 9 s)
    assert f not in c.partition_state("t", 0)["isr"] and f not in c.controller.live_brokers
    c.delay_next("BrokerRegistration", 2_000, response=True, src="controller", dst=f)
    mark = c.kernel.step_count
    c.heal()
    p.produce("t", value=b"more")
    p.flush()
    c.run_until(lambda: f in c.partition_state("t", 0)["isr"], timeout_ms=20_000)
    c.advance(5_000)                                   # (and nothing more happens to its registration after)
    assert _since(c, mark, "BrokerRegistration", response=False, src=f"broker-{f}") == []
    assert c.broker(f).broker_epoch == c.controller.registered[f] == epoch
    answers = _since(c, mark, "BrokerHeartbeat", response=True, dst=f"broker-{f}")
    assert answers and all(a.payload.error == Errors.NONE and not a.payload.is_fenced for a in answers)
    assert any(f"controller unfenced broker {f}" in e.narration for e in c.trace.events)
    adds = [x for x in _since(c, mark, "AlterPartition", response=False) if f in x.payload.new_isr]
    assert adds and [b.broker_epoch for b in adds[-1].payload.new_isr_with_epochs if b.broker_id == f] == [epoch]
    assert f in c.partition_state("t", 0)["isr"] and c.controller.broker_epochs[f] == epoch


def test_a_heartbeat_of_an_earlier_registration_is_answered_stale_broker_epoch():
    """A follower crashes with a heartbeat on its way, and restarts (a new registration, a new broker epoch) before
    the network delivers that heartbeat: the controller answers STALE_BROKER_EPOCH (77) and keeps the session and
    the epoch of the new registration."""
    c, _ = replicated_with_records()
    f = next(b for b in c.brokers if b != c.leader("t", 0))
    fname = f"broker-{f}"
    old_epoch = c.broker(f).broker_epoch
    held = [x for x in c.network_messages() if x.api == "BrokerHeartbeat" and not x.is_response and x.src == fname][-1]
    c.crash(f)
    c.advance(12_000)                                  # fenced
    c.restart(f)
    c.run_until(lambda: c.broker(f).running, timeout_ms=10_000)
    new_epoch = c.broker(f).broker_epoch
    assert new_epoch > old_epoch and c.controller.registered[f] == new_epoch
    late = _put_back_on_the_wire(c, held, f"the network delivers {fname}'s heartbeat of broker epoch {old_epoch}")
    answer = _answer(c, late)
    assert answer.error == Errors.STALE_BROKER_EPOCH == 77
    assert any(f"Expected broker epoch {new_epoch}, but got broker epoch {old_epoch} -> STALE_BROKER_EPOCH"
               in e.narration for e in c.trace.events)
    assert c.controller.registered[f] == c.controller.broker_epochs[f] == new_epoch == c.broker(f).broker_epoch
    c.advance(12_000)                                  # its new incarnation's heartbeats keep its session
    assert f in c.controller.live_brokers


def test_an_alter_partition_of_an_earlier_registration_is_answered_stale_broker_epoch():
    """The leader asks to shrink the ISR (a follower stopped fetching), crashes, and comes back with a new registration; its old AlterPartition,
    held up in the network, then reaches the controller.  The controller checks the leader's broker epoch before
    any partition (so the answer is STALE_BROKER_EPOCH, not FENCED_LEADER_EPOCH) and changes nothing."""
    c, _ = replicated_with_records()
    leader = c.leader("t", 0)
    lname = f"broker-{leader}"
    f = next(b for b in c.brokers if b != leader)
    c.partition([f"broker-{f}"], [lname])             # the follower stops fetching: the leader shrinks the ISR
    c.run_until(lambda: f not in c.partition_state("t", 0)["isr"], timeout_ms=60_000)
    held = [x for x in c.network_messages() if x.api == "AlterPartition" and not x.is_response and x.src == lname][-1]
    old_epoch = held.payload.broker_epoch
    assert old_epoch == c.broker(leader).broker_epoch
    c.crash(leader)
    c.advance(12_000)
    c.restart(leader)
    c.run_until(lambda: c.broker(leader).registered, timeout_ms=10_000)
    c.advance(1_000)
    new_epoch = c.controller.broker_epochs[leader]
    before = c.controller.states[("t", 0)]
    assert new_epoch > old_epoch
    late = _put_back_on_the_wire(c, held, f"the network delivers {lname}'s AlterPartition of broker epoch {old_epoch}")
    answer = _answer(c, late)
    assert answer.error == Errors.STALE_BROKER_EPOCH == 77 and answer.state is None
    assert c.controller.states[("t", 0)] == before
    assert any(f"refused an AlterPartition of broker {leader}: Expected broker epoch {new_epoch}, but got broker "
               f"epoch {old_epoch} -> STALE_BROKER_EPOCH" in e.narration for e in c.trace.events)


def test_stale_broker_epoch_says_what_kafka_says():
    assert int(Errors.STALE_BROKER_EPOCH) == 77 and not Errors.STALE_BROKER_EPOCH.retriable
    assert str(Errors.STALE_BROKER_EPOCH) == "STALE_BROKER_EPOCH(77)"
    assert Errors.STALE_BROKER_EPOCH.description.startswith("broker epoch has changed")
