"""A cooperative (KIP-429) member whose SyncGroup is answered ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID has lost the
partitions it kept through the rebalance: they are given up as lost (on_lost, nothing committed) before it joins
again.  librdkafka: rd_kafka_cgrp_handle_SyncGroup_memberstate -> rd_kafka_cgrp_revoke_all_rejoin (assignment is
lost); Java: resetGenerationOnResponseError, then onJoinPrepare's invokePartitionsLost for the reset generation."""
import pytest

from txnlab import Cluster, Consumer
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors
from helpers import poll_until


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
@pytest.mark.parametrize("error", [Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID])
def test_a_refused_sync_group_loses_the_kept_partitions_before_the_rejoin(dialect, error):
    c = Cluster(brokers=1, seed=11, config={"group.initial.rebalance.delay.ms": 0})
    c.create_topic("t", partitions=6, replication_factor=1)
    log = []

    def member(name):
        cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "client.id": name,
                         "sim.client.dialect": dialect, "partition.assignment.strategy": "cooperative-sticky",
                         "enable.auto.commit": True})
        cons.subscribe(["t"], on_assign=lambda _, ps: log.append((name, "assign", sorted(p.partition for p in ps))),
                       on_revoke=lambda _, ps: log.append((name, "revoke", sorted(p.partition for p in ps))),
                       on_lost=lambda _, ps: log.append((name, "lost", sorted(p.partition for p in ps))))
        return cons

    gc = c.broker(0).group_coordinator
    handle, refused = gc.handle_SyncGroup, []

    def refuse_a_once(msg):
        # a's SyncGroup of the rebalance b's arrival starts (generation 2) is refused, once
        if not refused and msg.src == "a" and msg.payload.generation_id == 2:
            refused.append(c.now)
            return m.SyncGroupResponse(error)
        return handle(msg)

    gc.handle_SyncGroup = refuse_a_once
    a = member("a")
    poll_until(c, [a], lambda: len(a.assignment()) == 6, poll_s=0.05)
    b = member("b")
    poll_until(c, [a, b], lambda: refused and len(a.assignment()) + len(b.assignment()) == 6
               and a.assignment() and b.assignment(), poll_s=0.05)
    assert ("a", "lost", [0, 1, 2, 3, 4, 5]) in log
    lost_at = log.index(("a", "lost", [0, 1, 2, 3, 4, 5]))
    assert not any(who == "a" and what == "revoke" for who, what, _ in log[:lost_at])
    # it joined again only after giving them up: its next JoinGroup carries no owned partitions
    rejoin = next(e for e in c.trace if e.api == "JoinGroup" and e.kind == "deliver" and not e.is_response
                  and e.src == "a" and e.time >= refused[0])
    assert c.kernel.network.messages[rejoin.msg_id].payload.protocols[0][1][1] == ()
    assert not set(tp.partition for tp in a.assignment()) & set(tp.partition for tp in b.assignment())
