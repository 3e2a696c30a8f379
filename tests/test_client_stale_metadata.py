"""A client keeps the newer leader it knows when a broker that has not learned of a leader change answers its
Metadata request with the old one.  librdkafka: rd_kafka_toppar_leader_update, "ignoring outdated metadata update
with leader epoch N which is older than our cached epoch M"; Kafka's Java client: Metadata.updateLatestMetadata,
"Got metadata for an older epoch", unless the topic's id changed.

The stale broker here is the partition's old leader, cut off from the controller: the controller moves the
leadership away (a new leader epoch), and the old leader, which learns nothing, still answers with itself as leader
at the old epoch."""
import pytest

from txnlab import Cluster, Producer
from txnlab.admin import AdminClient

TP = ("t", 0)


def _cluster_and_producer(dialect: str) -> tuple:
    """Three brokers, topic t (one partition, three replicas) and a producer of ``dialect`` that wrote to it."""
    c = Cluster(brokers=3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "linger.ms": 0,
                  "sim.client.dialect": dialect})
    p.produce("t", value=b"a")
    assert p.flush(10) == 0
    return c, p


def _stale_broker_and_a_client(dialect: str):
    c, p = _cluster_and_producer(dialect)
    old = c.leader("t")
    c.partition(["controller"], [f"broker-{old}"])
    c.advance(12_000)
    new = c.leader("t")
    assert new != old
    node = p._node
    node.request_metadata(("t",))       # from any broker: a fresh one, or the stale one (then the test asks again)
    c.advance(1_000)
    return c, p, node, old, new


def _ask(c, node, broker: int) -> None:
    """The client's next Metadata request goes to ``broker`` (the path of every refresh: request_metadata)."""
    node.any_broker = lambda: f"broker-{broker}"
    node.request_metadata(("t",))
    c.advance(500)
    assert [e for e in c.trace.filter(api="Metadata") if e.is_response and e.src == f"broker-{broker}"]


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_a_stale_brokers_answer_does_not_take_the_client_back_to_the_old_leader(dialect):
    c, p, node, old, new = _stale_broker_and_a_client(dialect)
    if node.leader_for(TP) != f"broker-{new}":       # the first refresh reached the stale broker: ask a fresh one
        _ask(c, node, next(b for b in (0, 1, 2) if b not in (old, new)))
    assert node.leader_for(TP) == f"broker-{new}"
    known = node.leader_epoch_for(TP)
    assert known >= 1
    # the old leader, still cut off from the controller, answers with itself at the old epoch
    stale = c.broker(old).metadata.partitions[TP]
    assert stale.leader == old and stale.leader_epoch < known
    _ask(c, node, old)
    assert node.leader_for(TP) == f"broker-{new}" and node.leader_epoch_for(TP) == known
    said = ("ignoring outdated metadata" if dialect == "librdkafka" else "got metadata for an older epoch")
    assert c.trace.filter(contains=said, include_background=True)
    # and the next record goes to the new leader, which takes it
    p.produce("t", value=b"b")
    c.heal()
    assert p.flush(30) == 0
    to_old = [e for e in c.trace.filter(api="Produce") if not e.is_response and e.dst == f"broker-{old}"
              and e.time > c.trace.filter(contains=said, include_background=True)[-1].time]
    assert to_old == []


def test_without_the_guard_the_stale_answer_would_win():
    """What the guard changes: the same answer, given to a client that knows nothing of the partition yet, is
    taken as it is (no cached epoch to compare with)."""
    c, p, node, old, new = _stale_broker_and_a_client("librdkafka")
    node.topics.pop("t")
    _ask(c, node, old)
    assert node.leader_for(TP) == f"broker-{old}"


def test_the_java_client_takes_a_recreated_topics_epochs_librdkafka_does_not():
    """A topic deleted and created again gets a new id and starts its leader epochs at 0.  Java's client resets its
    last seen epochs on the new id; librdkafka compares the epochs whatever the id (rd_kafka_topic_metadata_update
    only records the new id) and keeps what it had."""
    seen = {}
    for dialect in ("java", "librdkafka"):
        c, p = _cluster_and_producer(dialect)
        # two leader changes (epoch 2), as a preferred-leader election back and forth would make
        for _ in range(2):
            leader = c.leader("t")
            c.partition(["controller"], [f"broker-{leader}"])
            c.advance(12_000)
            c.heal()
            c.advance(5_000)
        node = p._node
        node.request_metadata(("t",))
        c.advance(1_000)
        before_id, before_epoch = node.topic_ids["t"], node.leader_epoch_for(TP)
        assert before_epoch >= 2
        assert AdminClient({"bootstrap.servers": c.bootstrap}).delete_topics(["t"])["t"].result() is None
        c.advance(1_000)
        c.create_topic("t", partitions=1, replication_factor=3)
        c.advance(1_000)
        node.request_metadata(("t",))
        c.advance(1_000)
        assert node.topic_ids["t"] != before_id
        seen[dialect] = node.leader_epoch_for(TP)
    assert seen["java"] == 0 and seen["librdkafka"] == before_epoch
