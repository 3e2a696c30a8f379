"""KIP-903: a replica joins an ISR on its own word, not on that of an earlier incarnation of its broker.

A follower's Fetch carries its broker epoch (Fetch v15 ``ReplicaState.ReplicaEpoch``); the leader records it with
the follower's fetch state.  A Fetch sent with an older epoch than the follower's registration the leader knows
comes from an earlier incarnation of that broker, held up in the network: the leader answers it
NOT_LEADER_OR_FOLLOWER and records nothing (Replica.updateFetchStateOrThrow).  The leader asks to add a follower
only if its last fetch carried the epoch of its current registration (Partition.isReplicaIsrEligible), and names
each ISR member with that epoch (AlterPartition v3 ``NewIsrWithEpochs``); the controller refuses a member whose
epoch is not its registration's with INELIGIBLE_REPLICA (ReplicationControlManager.ineligibleReplicasForIsr)."""
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors
from helpers import replicated_with_records


def _fetches(c, src: str, dst: str, states=("in-flight",)) -> list:
    return [x for x in c.network_messages() if x.api == "Fetch" and not x.is_response and x.src == src
            and x.dst == dst and x.state in states]


def _adds(c, broker: int, since: int) -> list:
    """The AlterPartition requests sent since event ``since`` whose new ISR names ``broker``."""
    return [x for x in c.network_messages() if x.api == "AlterPartition" and not x.is_response
            and x.sent_step > since and broker in x.payload.new_isr]


def _restart_with_a_stale_fetch_on_the_way(seed: int = 3):
    """The scenario, built by hand: follower F sends a Fetch (at the leader's LEO) and crashes before it arrives.
    F's disk lost its last records (its log restarts 3 records short); it is fenced, restarts and registers with
    a new broker epoch, and its new incarnation's first Fetch is slow to reach the leader.  Meanwhile the old
    incarnation's Fetch reaches the leader.  (The lab loses a crashed process's messages with its connections:
    the test puts that Fetch back on the wire, on a connection of its own, as a network that held it would
    deliver it.  Its answer reaches nobody: the new incarnation waits for no such request.)"""
    c, p = replicated_with_records(seed)
    leader = c.leader("t", 0)
    f = next(b for b in c.brokers if b != leader)
    fname, lname = f"broker-{f}", f"broker-{leader}"
    p.produce("t", value=b"last")
    p.poll(0)

    def caught_up_fetch():
        leo = c.log("t", 0, leader).log_end_offset
        return [x for x in _fetches(c, fname, lname) if ("t", 0) in x.payload.partitions
                and x.payload.partitions[("t", 0)].fetch_offset == leo and leo == 7]    # (7 records)
    c.run_until(lambda: bool(caught_up_fetch()), timeout_ms=5_000)
    stale = caught_up_fetch()[-1]          # caught up, by the old incarnation's word
    leo = c.log("t", 0, leader).log_end_offset
    old_epoch = c.broker(f).broker_epoch
    c.crash(f)
    c.advance(12_000)                       # its session expires (broker.session.timeout.ms 9 s): fenced
    assert f not in c.partition_state("t", 0)["isr"]
    c.delay_next("Fetch", 3_000, src=f, dst=leader)      # the new incarnation's first Fetch is slow
    c.restart(f)
    c.log("t", 0, f).truncate_to(leo - 3)     # the disk lost the tail it had not flushed
    # until the leader knows the new registration and the new incarnation's first Fetch is on its (slow) way
    c.run_until(lambda: c.controller.registered.get(f, old_epoch) != old_epoch
                and f in c.broker(leader).metadata.live_brokers
                and bool(_fetches(c, fname, lname)), timeout_ms=10_000)
    new_epoch = c.controller.registered[f]
    assert new_epoch > old_epoch and f not in c.partition_state("t", 0)["isr"]
    mark = c.kernel.step_count
    c.kernel.begin_step("fault", "network", f"the network delivers the Fetch #{stale.id} of {fname}'s previous "
                        f"incarnation, held up since before it crashed")
    late = c.kernel.network.send(fname, lname, "Fetch", stale.payload, False, stale.correlation_id,
                                 channel="replica-fetcher (previous incarnation)")
    return c, leader, f, late, mark, old_epoch, new_epoch


def test_a_fetch_of_a_previous_incarnation_does_not_put_the_restarted_follower_in_the_isr():
    c, leader, f, late, mark, old_epoch, new_epoch = _restart_with_a_stale_fetch_on_the_way()
    c.run_until(lambda: late.state == "delivered", timeout_ms=1_000)
    c.advance(100)                                     # (the new incarnation's own Fetch is still on its way)
    assert _adds(c, f, mark) == []                       # the leader does not ask on the old incarnation's word
    assert f not in c.partition_state("t", 0)["isr"]
    answer = [x for x in c.network_messages() if x.is_response and x.conn is late.conn]
    assert answer and answer[0].payload.partitions[("t", 0)].error == Errors.NOT_LEADER_OR_FOLLOWER
    # the new incarnation fetches for itself, catches up, and then joins
    c.run_until(lambda: f in c.partition_state("t", 0)["isr"], timeout_ms=20_000)
    adds = _adds(c, f, mark)
    assert adds and all(b.broker_epoch == new_epoch for b in adds[0].payload.new_isr_with_epochs if b.broker_id == f)
    hw = c.log("t", 0, leader).high_watermark
    assert c.log("t", 0, f).log_end_offset >= hw          # it had everything committed when it joined
    assert c.log("t", 0, f).read(0, hw)[-1].last_offset == c.log("t", 0, leader).read(0, hw)[-1].last_offset
    assert late.payload.replica_epoch == old_epoch and c.broker(leader).metadata.alive_broker_epoch(f) == new_epoch


def test_the_controller_refuses_a_member_named_with_an_earlier_broker_epoch():
    """A leader whose metadata is late (it has not learned of the follower's new registration) may still ask on
    a stale fetch's word: the controller compares each member's epoch with its registration."""
    c, _ = replicated_with_records()
    leader = c.leader("t", 0)
    f = next(b for b in c.brokers if b != leader)
    s = c.controller.states[("t", 0)]
    epochs = dict(c.controller.registered)

    def ask(isr):
        req = m.AlterPartitionRequest(leader, epochs[leader], "t", 0, s.leader_epoch, isr, s.partition_epoch)
        c.kernel.begin_step("call", "controller", f"AlterPartition from broker {leader} (by hand)")
        return c.controller.handle_AlterPartition(type("Msg", (), {"payload": req})())
    shrunk = tuple(r for r in s.isr if r != f)
    stale = tuple(m.BrokerState(r, epochs[r] - (1 if r == f else 0)) for r in s.isr)
    resp = ask(stale)
    assert resp.error == Errors.INELIGIBLE_REPLICA == 107
    assert c.controller.states[("t", 0)] == s                 # nothing changed
    assert any(f"broker {f} broker epoch mismatch: requested={epochs[f] - 1} VS expected={epochs[f]}"
               in e.narration for e in c.trace.events[-1:])
    # -1 skips the check (an AlterPartition before v3, a fetch without ReplicaState); the current epoch passes
    assert ask(tuple(m.BrokerState(r, -1) for r in s.isr)).error == Errors.NONE
    s = c.controller.states[("t", 0)]
    assert ask(tuple(m.BrokerState(r, epochs[r]) for r in s.isr if r in shrunk)).error == Errors.NONE


def test_the_leader_names_each_isr_member_with_the_epoch_it_fetched_with():
    c, _ = replicated_with_records()
    leader = c.leader("t", 0)
    p = c.broker(leader).partitions[("t", 0)]
    epochs = dict(c.controller.registered)
    assert p.isr_with_broker_epochs(p.isr) == tuple(m.BrokerState(r, epochs[r]) for r in p.isr)
    fetches = [x.payload for x in c.network_messages() if x.api == "Fetch" and not x.is_response
               and x.src.startswith("broker-")]
    assert fetches and all(x.replica_epoch == epochs[x.replica_id] for x in fetches)


def test_a_fetch_without_a_broker_epoch_is_not_checked():
    """ReplicaEpoch -1 (a Fetch before v15, or a client's): Kafka records it and skips the epoch check."""
    c, _ = replicated_with_records()
    leader = c.leader("t", 0)
    f = next(b for b in c.brokers if b != leader)
    p = c.broker(leader).partitions[("t", 0)]
    b = c.broker(leader)
    p.update_follower(f, p.log.log_end_offset, c.kernel.now, -1)
    assert p.followers[f].broker_epoch == -1 and p.is_replica_isr_eligible(f)
    assert not b._stale_replica_epoch(f, -1)
    epoch = c.controller.registered[f]
    assert b._stale_replica_epoch(f, epoch - 1) and not b._stale_replica_epoch(f, epoch)
    p.update_follower(f, p.log.log_end_offset, c.kernel.now, epoch - 1)     # (what a leader late to learn records)
    assert not p.is_replica_isr_eligible(f)                  # not the epoch of its registration


def test_the_wire_door_serves_a_clients_fetch_without_replica_state():
    """A real client's Fetch v15+ carries no ReplicaState (the tagged field's default: replica -1, epoch -1): a
    consumer's fetch, read up to the HW and never checked against a broker epoch."""
    import datetime

    from txnlab.wire.apis_data import topic_id
    from txnlab.wire.codec import nested, request_type
    from wire_helpers import lab, producer
    from wire_raw import ask

    with lab(brokers=1) as (c, door):
        p = producer(door)
        p.produce("t", value=b"x")
        assert p.flush(30) == 0
        for version in (15, 17):
            Req = request_type(1, version)
            Topic = nested(Req, "topics")
            Part = nested(Topic, "partitions")
            r = ask(door, 1, version, 0, max_wait=datetime.timedelta(0), min_bytes=0, isolation_level=0,
                    forgotten_topics_data=(), rack_id="",
                    topics=(Topic(topic_id=topic_id(door, "t"),
                                  partitions=(Part(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),))
            assert r.error_code == 0
            (t,) = r.responses
            assert t.partitions[0].error_code == 0 and t.partitions[0].records
        asked = [x.payload for x in c.network_messages() if x.api == "Fetch" and not x.is_response
                 and not x.src.startswith("broker-")]
        assert asked and all(x.replica_id == -1 and x.replica_epoch == -1 for x in asked)
