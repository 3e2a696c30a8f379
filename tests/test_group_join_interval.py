"""librdkafka sends JoinGroup at most once a second; the Java client retries after retry.backoff.ms.

librdkafka (src/rdkafka_cgrp.c): rd_kafka_cgrp_join_state_serve joins from join state INIT only when
rd_interval_immediate(&rkcg_join_intvl, 1 s) fires; an error code in a JoinGroup answer adds a second
(rd_kafka_cgrp_handle_JoinGroup: rd_interval_backoff); MEMBER_ID_REQUIRED, a finished unassign and a new
subscription skip the interval (rd_interval_reset).  Java (AbstractCoordinator.joinGroupIfNeeded): after a
lost connection it waits retry.backoff.ms; after UNKNOWN_MEMBER_ID it resets its member id and joins again at
once.
"""
import pytest

from txnlab import Cluster, Consumer
from helpers import poll_until

FAST = {"offsets.topic.num.partitions": 3, "group.initial.rebalance.delay.ms": 0,
        "transaction.state.log.num.partitions": 3}


def member(c, name, dialect):
    return Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "client.id": name,
                     "sim.client.dialect": dialect, "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})


def join_requests(c, name, since=-1):
    """When the coordinator got each JoinGroup of ``name`` (sent a millisecond earlier)."""
    return [e for e in c.trace if e.api == "JoinGroup" and e.kind == "deliver" and e.src == name
            and not e.is_response and e.time > since]


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_after_a_lost_join_answer_librdkafka_waits_for_its_join_interval(dialect):
    c = Cluster(brokers=1, seed=3, config=FAST)
    c.create_topic("in", partitions=2, replication_factor=1)
    a = member(c, "a", dialect)
    c.drop_next("JoinGroup", response=True)      # the answer to the first JoinGroup (MEMBER_ID_REQUIRED) is lost
    a.subscribe(["in"])
    poll_until(c, [a], lambda: a.assignment(), poll_s=0.05)
    joins = join_requests(c, "a")
    first, second, third = (e.time for e in joins[:3])
    if dialect == "librdkafka":
        assert second >= first + 1000           # one JoinGroup a second (a lost connection adds no backoff)
        assert second < first + 2000
    else:
        assert second < first + 1000            # retry.backoff.ms
    assert third - second < 100                 # MEMBER_ID_REQUIRED: at once, in both


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_after_join_group_unknown_member_id_librdkafka_waits_two_seconds_java_rejoins_at_once(dialect):
    c = Cluster(brokers=1, seed=3, config=FAST)
    c.create_topic("in", partitions=2, replication_factor=1)
    c.create_topic("more", partitions=2, replication_factor=1)
    a = member(c, "a", dialect)
    a.subscribe(["in"])
    poll_until(c, [a], lambda: a.assignment(), poll_s=0.05)
    old_member = a.memberid()
    # its heartbeats stop arriving: the coordinator drops it after session.timeout.ms
    rule = c.drop_next("Heartbeat", src="a", count=1000)
    poll_until(c, [a], lambda: any(f"member {old_member} left" in e.narration for e in c.trace), poll_s=0.05)
    c.kernel.network.rules.remove(rule)
    asked = c.now
    a.subscribe(["in", "more"])      # it still takes itself for a member: JoinGroup with its old member id
    poll_until(c, [a], lambda: len(a.assignment()) == 4, poll_s=0.05)
    joins = join_requests(c, "a", asked)
    answer = next(e for e in c.trace if e.api == "JoinGroup" and e.kind == "deliver" and e.is_response
                  and e.dst == "a" and e.time > asked)
    assert "UNKNOWN_MEMBER_ID" in answer.narration
    assert f"member {old_member})" in joins[0].narration and "member (new)" in joins[1].narration
    if dialect == "librdkafka":
        # rd_interval_backoff: the interval's second plus a second, from the refused JoinGroup
        assert joins[1].time >= joins[0].time + 2000
    else:
        assert joins[1].time < joins[0].time + 100


def test_a_rebalance_rejoins_at_once_within_the_interval():
    """After the revoke a rebalance asks for, librdkafka rejoins without waiting (rd_kafka_cgrp_unassign_done:
    rd_interval_reset), even less than a second after its last JoinGroup."""
    c = Cluster(brokers=1, seed=3, config=FAST)
    c.create_topic("in", partitions=2, replication_factor=1)
    a = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "client.id": "a",
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 100})
    a.subscribe(["in"])
    poll_until(c, [a], lambda: a.assignment(), poll_s=0.05)
    last_join = join_requests(c, "a")[-1].time
    b = member(c, "b", "librdkafka")
    b.subscribe(["in"])
    poll_until(c, [a, b], lambda: a.assignment() and b.assignment(), poll_s=0.05)
    rejoin = join_requests(c, "a", last_join)[0].time
    told = next(e.time for e in c.trace if e.api == "Heartbeat" and e.is_response and e.dst == "a"
                and "REBALANCE_IN_PROGRESS" in e.narration)
    assert rejoin < last_join + 1000
    assert rejoin - told < 100


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_after_join_group_rebalance_in_progress_java_rejoins_at_once(dialect):
    """Java's joinGroupIfNeeded continues after a RebalanceInProgressException without retry.backoff.ms
    (AbstractCoordinator: UnknownMemberId, IllegalGeneration, RebalanceInProgress and MemberIdRequired skip the
    sleep); librdkafka's answer with an error code waits out its join interval plus a second."""
    from txnlab.protocol import messages as m
    from txnlab.protocol.errors import Errors
    c = Cluster(brokers=1, seed=3, config=FAST)
    c.create_topic("in", partitions=2, replication_factor=1)
    a = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "client.id": "a", "sim.client.dialect": dialect,
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000, "retry.backoff.ms": 500})
    gc = c.broker(0).group_coordinator
    handle, refused = gc.handle_JoinGroup, []

    def first_join_refused(msg):
        # the answer Kafka gives a JoinGroup that another JoinGroup of the same member replaced (or whose group
        # write failed): REBALANCE_IN_PROGRESS, to the first JoinGroup that carries a member id
        if not refused and msg.payload.member_id:
            refused.append(c.now)
            return m.JoinGroupResponse(Errors.REBALANCE_IN_PROGRESS, member_id=msg.payload.member_id)
        return handle(msg)

    gc.handle_JoinGroup = first_join_refused
    a.subscribe(["in"])
    poll_until(c, [a], lambda: a.assignment(), poll_s=0.01)
    answered = next(e.time for e in c.trace if e.api == "JoinGroup" and e.kind == "deliver" and e.is_response
                    and e.dst == "a" and "REBALANCE_IN_PROGRESS" in e.narration)
    rejoin = join_requests(c, "a", answered)[0].time
    if dialect == "java":
        assert rejoin - answered < 100          # not retry.backoff.ms (500) later
    else:
        assert rejoin - answered >= 1000        # rd_interval_backoff
