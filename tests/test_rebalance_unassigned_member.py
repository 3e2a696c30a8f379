"""The group-rebalance workload's members ask the group's offsets without holding the others up, and sweep seeds
210225 and 210262 (group-rebalance, transaction.version 0) finish.

Seed 210225: a zombie member (stalled 15 s while its replacement started) kept heartbeating from its
client's background, as librdkafka's does, without rejoining, so the coordinator held the rebalance open for
it until its session ran out (Kafka's rule: a member that heartbeats stays, and the rebalance waits for it up
to its rebalance timeout).  Meanwhile the members that had rejoined owned nothing, found themselves "caught
up" on no partitions and asked the group's committed offsets: an OffsetFetch that waits behind the member's
own JoinGroup on the coordinator connection (a broker answers one request of a connection at a time), so
every ask lasted its whole 2 s timeout and, the runtime running one application at a time, held every
other member's poll, hence its rejoin, up as well.  Generation after generation was lost to session timeouts
(12 and more) until the 120 s deadline.

Seed 210262 is why the members still ask: a partition ate member-1's JoinGroup answer, leaving its
coordinator connection dead; only a request that times out on it (socket.timeout.ms) takes it down, and
a member that did not ask would wait for the JoinGroup's own timeout, max.poll.interval.ms + 3 s.  (The lab
has since made partitions hold messages, as TCP does: the JoinGroup answer now arrives after the heal.)"""
from __future__ import annotations

import json
import re

import pytest

from txnlab import Cluster, Consumer
from txnlab.sweep.nemesis import schedule_from_json
from txnlab.sweep.runner import RunConfig, run_seed
from txnlab.sweep.workloads import GroupRebalance
from helpers import poll_until

MEMBER = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest"}


def test_a_member_between_generations_asks_the_groups_offsets_without_holding_the_others_up():
    c = Cluster(brokers=3, seed=5, config={"offsets.topic.num.partitions": 3, "group.initial.rebalance.delay.ms": 0,
                                           "transaction.state.log.num.partitions": 3})
    c.create_topic("in", partitions=4, replication_factor=3)

    def member():
        return Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", **MEMBER})
    a, b = member(), member()
    a.subscribe(["in"])
    b.subscribe(["in"])
    poll_until(c, [a, b], lambda: a.assignment() and b.assignment())
    x = member()
    x.subscribe(["in"])
    # a rejoins (its JoinGroup waits for b, whose application is busy elsewhere); a owns nothing meanwhile
    poll_until(c, [a, x], lambda: a._coordinator.state.name == "JOINING")
    assert a.assignment() == []
    wl = GroupRebalance(records=10)
    wl.state.update(in_ok={})
    before, fetches = c.now, sum(e.api == "OffsetFetch" for e in c.trace)
    assert wl._all_caught_up(None, a, []) is False          # the answer waits behind a's JoinGroup
    assert c.now - before <= 200                            # before: the whole 2 s, every other member held up
    assert sum(e.api == "OffsetFetch" for e in c.trace) > fetches       # it did ask


SEED_210225 = [{"kind": "zombie", "node": "member-1", "ms": 15000, "at": 784},
               {"kind": "zombie", "node": "member-2", "ms": 3000, "at": 1211},
               {"kind": "drop", "api": "WriteTxnMarkers", "at": 1289},
               {"kind": "move-leaders", "node": "broker-0", "at": 1738}]


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_seed_210225_finishes_after_a_few_generations(dialect):
    cfg = RunConfig(workload="group-rebalance", faults="all", transaction_version=0, records=50, dialect=dialect,
                    trace=True)
    res = run_seed(210225, cfg, schedule=schedule_from_json(json.dumps(SEED_210225)), keep=True)
    assert res.ok and res.finished, res.violations
    generations = [int(g) for e in res.cluster.trace for g in re.findall(r"generation (\d+) with members", e.narration)]
    assert max(generations) <= 4            # before: 12 and more, members answered UNKNOWN_MEMBER_ID


SEED_210262 = [{"kind": "partition", "node": "broker-0", "others": ["member-1"], "ms": 5000, "at": 808},
               {"kind": "delay", "api": "Produce", "response": True, "ms": 6000, "at": 1099}]


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_seed_210262_a_member_whose_join_answer_a_partition_ate_gets_back_in(dialect):
    cfg = RunConfig(workload="group-rebalance", faults="all", transaction_version=0, records=50, dialect=dialect,
                    trace=True)
    res = run_seed(210262, cfg, schedule=schedule_from_json(json.dumps(SEED_210262)), keep=True)
    assert res.ok and res.finished, res.violations
    assert any(op.process == "member-1#1" and op.f == "txn" and op.outcome == "ok" for op in res.history)
