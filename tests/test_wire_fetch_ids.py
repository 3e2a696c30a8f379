"""Fetch v13+ at the wire door: topics named by the ids Metadata hands out (KIP-516), and Metadata asked by
id.  librdkafka picks the highest Fetch version both sides speak, so a read_committed consumer reads by topic id
and must still skip the aborted transaction and the markers; an id no broker knows is answered UNKNOWN_TOPIC_ID
(100), partition by partition, while the known topics of the same request are served."""
from __future__ import annotations

import datetime
import re
import uuid

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

