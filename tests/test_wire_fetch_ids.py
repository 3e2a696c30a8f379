"""Fetch v13+ at the wire door: topics named by the ids Metadata hands out (KIP-516), and Metadata asked by
id.  librdkafka picks the highest Fetch version both sides speak, so a read_committed consumer reads by topic id
and must still skip the aborted transaction and the markers; an id no broker knows is answered UNKNOWN_TOPIC_ID
(100), partition by partition, while the known topics of the same request are served."""
from __future__ import annotations

import datetime
import re
import uuid

import txnlab.admin
from txnlab.cluster import Cluster
from txnlab.protocol.errors import Errors
from txnlab.wire.apis_data import topic_id
from txnlab.wire.codec import nested, request_type
from wire_helpers import commit_abort_commit, consumer, lab, producer, read_all, values
from wire_raw import ask


def fetch_versions(c) -> set:
    return {int(v) for v in re.findall(r"sends Fetch v(\d+)", " ".join(e.text for e in c.trace.events
                                                                        if e.kind == "remote"))}


def test_read_committed_consumer_fetching_by_topic_id_skips_the_aborted_data_and_markers():
    with lab() as (c, door):
        _p = commit_abort_commit(door, 3)
        # the log: a0..a2, COMMIT, b0..b2, ABORT, c0..c2, COMMIT
        rc = consumer(door, "rc", **{"client.id": "reader"})
        try:
            got = read_all(rc, ["t"], expect=6)
        finally:
            rc.close()
        assert values(got) == [f"a{i}".encode() for i in range(3)] + [f"c{i}".encode() for i in range(3)]
        assert [o for _, o, _ in got] == [0, 1, 2, 8, 9, 10]
        assert min(fetch_versions(c)) >= 13            # every Fetch named its topic by id


def fetch(door, version: int, topics, broker: int = 0):
    Req = request_type(1, version)
    Topic = nested(Req, "topics")
    Part = nested(Topic, "partitions")
    return ask(door, 1, version, broker, max_wait=datetime.timedelta(0), min_bytes=0, isolation_level=1,
               forgotten_topics_data=(), rack_id="",
               topics=tuple(Topic(topic_id=tid, partitions=tuple(Part(partition=p, fetch_offset=0,
                                                                      partition_max_bytes=1 << 20) for p in ps))
                            for tid, ps in topics))


def test_fetch_by_an_unknown_topic_id_is_unknown_topic_id():
    with lab(brokers=1) as (c, door):
        p = producer(door)
        p.produce("t", value=b"x")
        assert p.flush(30) == 0
        stranger = uuid.UUID(int=12345)
        for version in (13, 16, 18):
            r = fetch(door, version, [(stranger, (0, 1)), (topic_id(door, "t"), (0,))])
            assert r.error_code == 0
            unknown, known = r.responses
            assert unknown.topic_id == stranger and known.topic_id == topic_id(door, "t")
            assert [(q.partition_index, q.error_code, q.high_watermark) for q in unknown.partitions] == \
                [(0, Errors.UNKNOWN_TOPIC_ID, -1), (1, Errors.UNKNOWN_TOPIC_ID, -1)]
            (q,) = known.partitions
            assert q.error_code == 0 and q.high_watermark == 1 and q.records
        # a request with only unknown ids is answered by the door at once, in the same shape
        (only,) = fetch(door, 13, [(stranger, (0,))]).responses
        assert only.partitions[0].error_code == Errors.UNKNOWN_TOPIC_ID


def test_metadata_by_topic_id_names_the_known_and_answers_the_unknown():
    with lab(brokers=1) as (c, door):
        Topic = nested(request_type(3, 12), "topics")
        stranger = uuid.UUID(int=12345)
        r = ask(door, 3, 12, topics=(Topic(topic_id=topic_id(door, "t"), name=None),
                                     Topic(topic_id=stranger, name=None)), allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        by_id = {t.topic_id: (t.name, t.error_code, len(t.partitions)) for t in r.topics}
        assert by_id == {topic_id(door, "t"): ("t", 0, 1), stranger: (None, Errors.UNKNOWN_TOPIC_ID, 0)}


def recreate(c, name: str = "t") -> None:
    """Delete ``name`` and create it again (1 partition, RF 3) with txnlab's own admin client, in-process."""
    admin = txnlab.admin.AdminClient({"bootstrap.servers": c.bootstrap})
    admin.delete_topics([name])[name].result(30)
    c.run_until_idle()
    admin.create_topics([txnlab.admin.NewTopic(name, 1, min(3, len(c.broker_ids)))])[name].result(30)
    c.run_until_idle()


def metadata_ids(door, *ids):
    Topic = nested(request_type(3, 12), "topics")
    r = ask(door, 3, 12, topics=tuple(Topic(topic_id=tid, name=None) for tid in ids),
            allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    return [(t.topic_id, t.name, t.error_code) for t in r.topics]


def test_a_topic_deleted_and_created_again_gets_a_new_id():
    """Kafka's controller gives each creation a new id, so a client holding the old id cannot read the new
    topic's log as if it were the old one: Fetch and Metadata by the old id answer UNKNOWN_TOPIC_ID.  The lab's
    ids follow from the seed, the name and how many times the controller created it: the same on another cluster
    built the same way."""
    with lab() as (c, door):
        p = producer(door)
        p.produce("t", value=b"old")
        assert p.flush(30) == 0
        old = topic_id(door, "t")
        with door.lock:
            recreate(c)
        new = topic_id(door, "t")
        assert new != old
        Topic = nested(request_type(3, 12), "topics")
        (t,) = ask(door, 3, 12, topics=(Topic(name="t", topic_id=None),), allow_auto_topic_creation=False,
                   include_topic_authorized_operations=False).topics
        assert (t.name, t.error_code, t.topic_id) == ("t", 0, new)
        assert metadata_ids(door, old, new) == [(new, "t", 0), (old, None, Errors.UNKNOWN_TOPIC_ID)]
        r = fetch(door, 13, [(old, (0,)), (new, (0,))], broker=c.leader("t", 0))
        gone, fresh = r.responses
        assert (gone.topic_id, gone.partitions[0].error_code) == (old, Errors.UNKNOWN_TOPIC_ID)
        assert (fresh.topic_id, fresh.partitions[0].error_code, fresh.partitions[0].high_watermark) == (new, 0, 0)

        again = Cluster(brokers=3, seed=1)          # built the same way: the same ids, creation by creation
        again.create_topic("t", partitions=1, replication_factor=3)
        door_of = type("Door", (), {"cluster": again})()
        assert topic_id(door_of, "t") == old
        recreate(again)
        assert topic_id(door_of, "t") == new



def delete_v6(door, *entries, broker: int = 0):
    """DeleteTopics v6, each entry (name or None, id or None)."""
    Req = request_type(20, 6)
    Topic = nested(Req, "topics")
    r = ask(door, 20, 6, broker, timeout=datetime.timedelta(seconds=30),
            topics=tuple(Topic(name=n, topic_id=tid) for n, tid in entries))
    return [(t.name, t.topic_id, t.error_code) for t in r.responses]


def test_delete_topics_by_name_and_by_id_and_a_real_admin_deletes_and_creates_again():
    """DeleteTopics at the door: librdkafka's AdminClient deletes t and creates it again (a new id, the old data
    gone); v6 by id and by name, with the entries Kafka's ControllerApis refuses one by one.  The whole run,
    recreation included, replays to the identical trace."""
    import confluent_kafka.admin as cka
    from txnlab.wire.replay import replay
    with lab(topics=(("t", 1), ("u", 1), ("w", 1))) as (c, door):
        p = producer(door)
        p.produce("t", value=b"old")
        assert p.flush(30) == 0
        old = topic_id(door, "t")
        admin = cka.AdminClient({"bootstrap.servers": door.bootstrap_servers, "log_level": 2})
        admin.delete_topics(["t"], operation_timeout=30)["t"].result(30)
        with door.lock:
            assert "t" not in c.topics()
        admin.create_topics([cka.NewTopic("t", 1, 3)], operation_timeout=30)["t"].result(30)
        new = topic_id(door, "t")
        assert new != old and metadata_ids(door, old, new) == [(new, "t", 0), (old, None, Errors.UNKNOWN_TOPIC_ID)]
        r = fetch(door, 13, [(new, (0,))], broker=c.leader("t", 0))
        assert (r.responses[0].partitions[0].error_code, r.responses[0].partitions[0].high_watermark) == (0, 0)

        u, w, stranger = topic_id(door, "u"), topic_id(door, "w"), uuid.UUID(int=99)
        assert delete_v6(door, (None, u), ("w", None), (None, stranger), (None, None), ("t", new), (None, old),
                         ("nope", None)) == [
            ("u", u, 0), ("w", w, 0), (None, stranger, Errors.UNKNOWN_TOPIC_ID), (None, None, Errors.INVALID_REQUEST),
            ("t", new, Errors.INVALID_REQUEST), (None, old, Errors.UNKNOWN_TOPIC_ID),
            ("nope", None, Errors.UNKNOWN_TOPIC_OR_PARTITION)]
        with door.lock:                                    # (kio reads the zero uuid as None)
            assert sorted(c.topics()) == ["t"]
        assert delete_v6(door, (None, new), (None, new)) == [(None, new, Errors.INVALID_REQUEST)]  # once
    again = Cluster(brokers=3, seed=1)
    for name in ("t", "u", "w"):
        again.create_topic(name, partitions=1, replication_factor=3)
    replay(again, door.inputs)
    assert again.trace.to_jsonl() == c.trace.to_jsonl()
