"""A generation's assignment reaches the application before the member joins the next generation.

Arranged: member ``a`` gets its SyncGroup answer (the assignment of generation 2) while its application is
busy elsewhere, and before it polls again a third member starts a new rebalance, which ``a``'s background
heartbeat learns (REBALANCE_IN_PROGRESS).  Both clients then give the application the assignment first and
rejoin afterwards: Java's AbstractCoordinator.joinGroupIfNeeded runs onJoinComplete, then, its loop finding a
rejoin needed, onJoinPrepare (the eager revoke) before the next JoinGroup; librdkafka ignores
REBALANCE_IN_PROGRESS while the assign call is pending (rd_kafka_cgrp_handle_Heartbeat: "No further action if
already rebalancing") and revokes and rejoins only after it.  A member that joined first and handed the old
assignment out afterwards would hold partitions through a JoinGroup (eager members own nothing then), get no
revoke for them, and its application's committed() would wait behind its own JoinGroup, which the coordinator
answers only when the whole group has rejoined (a broker answers one request of a connection at a time).
"""
import pytest

from txnlab import Cluster, Consumer, KafkaException, TopicPartition
from helpers import poll_until

FAST = {"offsets.topic.num.partitions": 5, "group.initial.rebalance.delay.ms": 0,
        "transaction.state.log.num.partitions": 5}
MEMBER = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest"}


def owned(cons):
    return sorted((tp.topic, tp.partition) for tp in cons.assignment())


def assignment_waiting_while_the_group_rebalances(dialect, on_assign=None):
    """Member a, with generation 2's assignment received but not yet polled, and the group rebalancing to
    generation 3 (a's heartbeat said so).  Returns the cluster, the three members and a's callback log."""
    c = Cluster(brokers=3, seed=11, config=FAST)
    c.create_topic("t", partitions=4, replication_factor=3)

    def member():
        return Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect,
                         **MEMBER})
    events = []
    a = member()

    def assigned(cons, parts):
        events.append(("assign", sorted(tp.partition for tp in parts)))
        if on_assign is not None:
            on_assign(cons, parts, events)
    a.subscribe(["t"], on_assign=assigned,
                on_revoke=lambda cons, parts: events.append(("revoke", sorted(tp.partition for tp in parts))))
    poll_until(c, [a], lambda: len(owned(a)) == 4)
    b = member()
    b.subscribe(["t"])
    # a rejoins for generation 2 (it polls until its JoinGroup is out), then only b's application runs
    poll_until(c, [a, b], lambda: ("revoke", [0, 1, 2, 3]) in events)
    poll_until(c, [b], lambda: len(owned(b)) == 2)
    assert a._coordinator.pending_assignment is not None and owned(a) == []
    x = member()
    x.subscribe(["t"])
    poll_until(c, [x], lambda: a._coordinator.rejoin_needed)       # a's heartbeat: REBALANCE_IN_PROGRESS
    assert a._coordinator.pending_assignment is not None
    return c, a, b, x, events


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_the_older_assignment_is_given_and_revoked_before_the_member_rejoins(dialect):
    c, a, b, x, events = assignment_waiting_while_the_group_rebalances(dialect)
    a.poll(0.1)
    assert events[-2:] == [("assign", [0, 1]), ("revoke", [0, 1])]    # eager: nothing owned through JoinGroup
    poll_until(c, [a, b, x], lambda: len(owned(a)) + len(owned(b)) + len(owned(x)) == 4
               and all(owned(m) for m in (a, b, x)))
    # every assignment but the first follows a revoke of the one before it
    kinds = [k for k, _ in events]
    assert kinds == ["assign", "revoke", "assign", "revoke", "assign"]
    assert a.consumer_group_metadata().generation_id == 3


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_committed_asked_in_on_assign_is_answered_though_a_new_rebalance_began(dialect):
    answers = []

    def ask(cons, parts, events):
        if len(events) == 3:            # generation 2's assignment, given while the group rebalances again
            try:
                got = cons.committed([TopicPartition("t", p.partition) for p in parts], timeout=2.0)
                answers.append([tp.offset for tp in got])
            except KafkaException as e:
                answers.append(e.args[0].name())
    c, a, b, x, events = assignment_waiting_while_the_group_rebalances(dialect, on_assign=ask)
    before = c.now
    a.poll(0.1)
    assert answers == [[-1001, -1001]]          # nothing committed yet: answered, not timed out
    assert c.now - before < 1000
