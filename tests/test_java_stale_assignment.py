"""An assignment whose generation a heartbeat answer ended before the application polled.

Java (AbstractCoordinator.joinGroupIfNeeded): when the SyncGroup future completed but the heartbeat thread
reset the generation meanwhile (hasGenerationReset: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID), onJoinComplete is
skipped -- the application never sees that assignment -- and resetStateAndRejoin("rebalance failed since the
generation/state was modified by heartbeat thread ...", true) resets the member id and joins again.
librdkafka hands the assignment to the application, then revokes it as lost (its rebalance ops keep their order).
"""
import pytest

from txnlab import Cluster, Consumer

FAST = {"offsets.topic.num.partitions": 3, "group.initial.rebalance.delay.ms": 0,
        "transaction.state.log.num.partitions": 3}


def drive(c, consumers, pred, max_ms=60_000):
    deadline = c.now + max_ms
    while not pred():
        for cons in consumers:
            cons.poll(0.05)
        assert c.now < deadline, "the group did not settle in time"


def seen(c, text):
    return any(text in e.narration for e in c.trace)


@pytest.mark.parametrize("dialect", ["java", "librdkafka"])
def test_an_assignment_from_an_ended_generation(dialect):
    c = Cluster(brokers=1, seed=4, config=FAST)
    c.create_topic("t", partitions=2, replication_factor=1)
    calls = []

    def member(name):
        k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "client.id": name,
                      "sim.client.dialect": dialect, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        k.subscribe(["t"], on_assign=lambda _, parts: calls.append(("assign", c.now, len(parts))),
                    on_revoke=lambda _, parts: calls.append(("revoke", c.now, len(parts))),
                    on_lost=lambda _, parts: calls.append(("lost", c.now, len(parts))))
        return k
    a = member("a")
    drive(c, [a], lambda: a.assignment())
    b = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "client.id": "b",
                  "sim.client.dialect": dialect, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    b.subscribe(["t"])
    # a's application gives its partitions up and joins generation 2, then stops polling; b's polls drive time
    drive(c, [a, b], lambda: a.coordinator.state.name in ("JOINING", "SYNCING"))
    drive(c, [b], lambda: seen(c, "a got the SyncGroup response"))
    synced = len(calls)
    generation = a.coordinator.generation_id
    member_id = a.coordinator.member_id
    # its heartbeats stop arriving: the coordinator drops it and gives b everything; then one gets an answer
    rule = c.drop_next("Heartbeat", src="a", count=1000)
    drive(c, [b], lambda: seen(c, f"member {member_id} left"))
    c.kernel.network.rules.remove(rule)
    drive(c, [b], lambda: any(e.api == "Heartbeat" and e.is_response and e.dst == "a" and "UNKNOWN_MEMBER_ID"
                              in e.narration for e in c.trace))
    assert a.coordinator.generation_id == -1
    polled = c.now
    drive(c, [a, b], lambda: a.assignment() and b.assignment())
    later = [call for call in calls[synced:] if call[1] >= polled]
    if dialect == "java":
        # generation 2's assignment never reaches a's application; a joins again as a new member
        assert later[0][0] == "assign" and a.coordinator.generation_id > generation + 1
        assert not [call for call in later if call[0] in ("revoke", "lost")]
        joins = [e for e in c.trace if e.api == "JoinGroup" and e.kind == "deliver" and e.src == "a"
                 and not e.is_response and e.time >= polled]
        assert "member (new)" in joins[0].narration
    else:
        assert [call[0] for call in later[:2]] == ["assign", "lost"]      # generation 2's, then taken back
