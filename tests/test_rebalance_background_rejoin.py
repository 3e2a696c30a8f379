"""After a failed JoinGroup, librdkafka joins again from its own thread; the Java client waits for poll().

librdkafka: a JoinGroup error (a lost connection, UNKNOWN_MEMBER_ID, NOT_COORDINATOR, ...) puts the group
handle back in join state INIT (rd_kafka_cgrp_handle_JoinGroup -> rd_kafka_cgrp_rejoin), and the
background thread sends the next JoinGroup by itself (rd_kafka_cgrp_join_state_serve): the application is
needed only for rebalance callbacks, and an eager member gave its partitions up before its first JoinGroup.
Java: AbstractCoordinator.joinGroupIfNeeded runs inside poll(); the heartbeat thread never joins.

Arranged as in sweep seed 210225: the member's application asks the group's offsets while its JoinGroup
waits for another member; the OffsetFetch waits behind the JoinGroup (a broker answers one request of a
connection at a time), times out after socket.timeout.ms and takes the connection, and the JoinGroup, down.
"""
import pytest

from txnlab import Cluster, Consumer, KafkaException, TopicPartition
from helpers import poll_until

FAST = {"offsets.topic.num.partitions": 3, "group.initial.rebalance.delay.ms": 0,
        "transaction.state.log.num.partitions": 3}


def joins_from(c, name, since):
    return [e for e in c.trace if e.api == "JoinGroup" and e.kind == "deliver" and e.src == name
            and not e.is_response and e.time > since]


@pytest.mark.parametrize("dialect,rejoins_by_itself", [("librdkafka", True), ("java", False)])
def test_a_member_whose_join_failed_joins_again_by_itself_only_in_librdkafka(dialect, rejoins_by_itself):
    c = Cluster(brokers=3, seed=5, config=FAST)
    c.create_topic("in", partitions=4, replication_factor=3)

    def member(name):
        return Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "client.id": name,
                         "sim.client.dialect": dialect, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                         "socket.timeout.ms": 4000, "request.timeout.ms": 4000})
    a, b = member("a"), member("b")
    a.subscribe(["in"])
    b.subscribe(["in"])
    poll_until(c, [a, b], lambda: a.assignment() and b.assignment())
    x = member("x")
    x.subscribe(["in"])
    poll_until(c, [a, x], lambda: a._coordinator.state.name == "JOINING")    # b's application is busy
    asked_at = c.now
    try:
        a.committed([TopicPartition("in", 0)], timeout=6.0)
    except KafkaException:
        # librdkafka: its join interval is long over, so the JoinGroup goes out again at once
        # (rd_kafka_cgrp_join_state_serve), ahead of the OffsetFetch's retry, which waits behind it again
        assert rejoins_by_itself
    # its JoinGroup went down with the connection
    failed_at = next(e.time for e in c.trace if e.time >= asked_at and "a: JoinGroup got no answer" in e.narration)
    poll_until(c, [b, x], lambda: c.now > failed_at + 2_000)    # a's application does not poll
    assert bool(joins_from(c, "a", failed_at)) == rejoins_by_itself
    poll_until(c, [a, b, x], lambda: a.assignment() and b.assignment() and x.assignment())
