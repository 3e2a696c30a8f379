"""OffsetForLeaderEpoch (api key 23), KIP-320: after a partition's leader changes, a real consumer asks the new
leader where the leader epoch of its position ends, to find out whether the log it read from was truncated.  The
door speaks v2-v4 as Kafka 4.1.1 does (ReplicaManager.lastOffsetForLeaderEpoch: only the leader answers; a stale
current epoch is FENCED_LEADER_EPOCH, a future one UNKNOWN_LEADER_EPOCH; the end of an epoch is where the next
one began, the LEO for the latest); librdkafka, which skips the check against a broker that does not offer the API,
now makes it, and goes on reading across the leader change."""
from __future__ import annotations

import time

from txnlab.protocol.errors import Errors
from txnlab.wire import codec
from wire_helpers import ck, consumer, lab, producer
from wire_raw import ask


def epoch_end(door, broker: int, epoch: int, current: int = -1, version: int = 4, topic: str = "t"):
    """(error, leader epoch, end offset) of t-0 at ``broker``, asked as a consumer."""
    cls = codec.request_type(23, version)
    T = codec.nested(cls, "topics")
    P = codec.nested(T, "partitions")
    extra = {"replica_id": -1} if version >= 3 else {}
    r = ask(door, 23, version, broker, topics=(T(topic=topic, partitions=(
        P(partition=0, current_leader_epoch=current, leader_epoch=epoch),)),), **extra)
    (p,) = r.topics[0].partitions
    return p.error_code, p.leader_epoch, p.end_offset


def put(door, values) -> None:
    p = producer(door)
    for v in values:
        p.produce("t", value=v.encode(), partition=0)
    assert p.flush(30) == 0


def test_the_leader_answers_where_each_epoch_ends():
    with lab() as (c, door):
        put(door, ["a", "b", "c"])                              # 0..2 in leader epoch 0
        first = c.leader("t", 0)
        follower = next(b for b in c.broker_ids if b != first)
        with door.lock:
            c.move_leader("t", 0, follower)
            c.run_until_idle()
            epoch = c.partition_state("t", 0)["leader_epoch"]
        put(door, ["d", "e"])                                   # 3, 4 in the new epoch
        for version in (2, 3, 4):
            assert epoch_end(door, follower, 0, version=version) == (Errors.NONE, 0, 3)   # epoch 1 began at 3
        assert epoch_end(door, follower, epoch, current=epoch) == (Errors.NONE, epoch, 5)  # the latest: the LEO
        assert epoch_end(door, follower, epoch + 3) == (Errors.NONE, -1, -1)      # past every epoch: undefined
        assert epoch_end(door, follower, 0, current=0)[0] == Errors.FENCED_LEADER_EPOCH
        assert epoch_end(door, follower, 0, current=epoch + 1)[0] == Errors.UNKNOWN_LEADER_EPOCH
        assert epoch_end(door, first, 0)[0] == Errors.NOT_LEADER_OR_FOLLOWER     # only the leader answers
        assert epoch_end(door, follower, 0, topic="nope")[0] == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_librdkafka_checks_its_position_after_a_leader_change_and_reads_on():
    """A real consumer reads t-0, its leader moves, it asks the new leader (OffsetForLeaderEpoch, seen in the
    trace) and, nothing truncated, reads what follows: every record once, in order."""
    with lab() as (c, door):
        put(door, [f"v{i}" for i in range(3)])
        k = consumer(door, isolation="read_uncommitted")
        k.assign([ck.TopicPartition("t", 0, 0)])
        got = []

        def read_until(n: int) -> None:
            deadline = time.monotonic() + 30
            while len(got) < n and time.monotonic() < deadline:
                m = k.poll(0.2)
                if m is not None and not m.error():
                    got.append((m.offset(), m.value().decode()))
        read_until(3)
        with door.lock:
            mark = len(c.trace.events)
            first = c.leader("t", 0)
            c.move_leader("t", 0, next(b for b in c.broker_ids if b != first))
            c.run_until_idle()
        put(door, [f"v{i}" for i in range(3, 6)])
        read_until(6)
        k.close()
        assert got == [(i, f"v{i}") for i in range(6)]
        with door.lock:
            asked = [e for e in c.trace.events[mark:] if e.kind == "deliver" and e.api == "OffsetForLeaderEpoch"
                     and not e.is_response]
        assert asked and all(e.node == f"broker-{c.leader('t', 0)}" for e in asked)


def test_with_the_authorizer_on_a_consumer_needs_describe_on_the_topic():
    """KafkaApis.handleOffsetForLeaderEpochRequest: CLUSTER_ACTION answers everything; otherwise each topic the
    principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED and the others as usual."""
    from txnlab import Cluster
    from txnlab.protocol import messages as m
    from helpers import RawClient

    c = Cluster(brokers=1, seed=4, config={
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    for t in ("t", "secret"):
        c.create_topic(t, partitions=1, replication_factor=1)
    c.add_acl("User:ANONYMOUS", "TOPIC", "t", "DESCRIBE")
    ask_both = m.OffsetForLeaderEpochRequest(-1, {("t", 0): (-1, 0), ("secret", 0): (-1, 0)})
    raw = RawClient(c)
    resp = raw.call(0, ask_both)
    assert resp.partitions == {("t", 0): (Errors.NONE, 0, 0), ("secret", 0): (Errors.TOPIC_AUTHORIZATION_FAILED, -1, -1)}
    c.add_acl("User:ANONYMOUS", "CLUSTER", "kafka-cluster", "CLUSTER_ACTION")
    assert raw.call(0, ask_both).partitions[("secret", 0)] == (Errors.NONE, 0, 0)
