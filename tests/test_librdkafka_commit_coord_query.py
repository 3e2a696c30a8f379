"""librdkafka's rd_kafka_handle_OffsetCommit: an OffsetCommit answered REQUEST_TIMED_OUT ("replicas possibly
unavailable", rd_kafka_handle_OffsetCommit_error: REFRESH | RETRY, not SPECIAL) does not mark the coordinator dead;
it re-queries it (rd_kafka_cgrp_coord_query: a FindCoordinator to any broker, the current coordinator kept
meanwhile) and retries the request.  When the answer names another broker, the retry goes there.

Kafka 4.1.1's group coordinator answers a timed-out offsets write COORDINATOR_NOT_AVAILABLE
(tests/test_group_offsets_4_1.py); the Scala coordinator of older brokers answered REQUEST_TIMED_OUT, which the
coordinator's broker here is made to do once."""
from __future__ import annotations

from txnlab import Cluster, Consumer, TopicPartition
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors
from txnlab.protocol.hashing import partition_for
from txnlab.protocol.names import OFFSETS_TOPIC


def answers_request_timed_out_once(c: Cluster, broker: int) -> None:
    b = c.broker(broker)
    real = b._handler("OffsetCommit")

    def once(msg):
        b._handlers["OffsetCommit"] = real
        return m.OffsetCommitResponse({tp: Errors.REQUEST_TIMED_OUT for tp in msg.payload.offsets})
    b._handlers["OffsetCommit"] = once


def setup():
    c = Cluster(brokers=3, seed=4)
    c.create_topic("t", partitions=1, replication_factor=3)
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "enable.auto.commit": False})
    k.assign([TopicPartition("t", 0)])
    k.commit(offsets=[TopicPartition("t", 0, 2)], asynchronous=False)          # it knows the coordinator
    return c, k, c.group_coordinator("g")


def requests(c: Cluster, k: Consumer, mark: int, api: str) -> list:
    return [(e.dst, e.time) for e in c.trace.events[mark:]
            if e.kind == "deliver" and not e.is_response and e.api == api and e.src == k.name]


def test_request_timed_out_requeries_the_coordinator_and_retries():
    c, k, coord = setup()
    answers_request_timed_out_once(c, coord)
    mark = len(c.trace.events)
    assert [tp.offset for tp in k.commit(offsets=[TopicPartition("t", 0, 5)], asynchronous=False)] == [5]
    commits, finds = requests(c, k, mark, "OffsetCommit"), requests(c, k, mark, "FindCoordinator")
    assert [dst for dst, _ in commits] == [f"broker-{coord}"] * 2
    assert len(finds) == 1 and commits[0][1] < finds[0][1] < commits[1][1]
    said = [e.narration for e in c.trace.events[mark:] if e.narration]
    assert any("OffsetCommit -> REQUEST_TIMED_OUT: it asks again which broker coordinates group 'g' (keeping "
               f"broker-{coord} meanwhile)" in s for s in said)
    assert not any("forgets coordinator" in s for s in said)
    assert [tp.offset for tp in k.committed([TopicPartition("t", 0)], 10)] == [5]


def test_the_retry_goes_to_the_coordinator_the_query_found():
    c, k, coord = setup()
    offsets_tp = partition_for("g", c.broker_config["offsets.topic.num.partitions"])
    new = next(b for b in c.partition_state(OFFSETS_TOPIC, offsets_tp)["isr"] if b != coord)
    c.move_leader(OFFSETS_TOPIC, offsets_tp, new)
    answers_request_timed_out_once(c, coord)           # (the old coordinator, instead of NOT_COORDINATOR)
    mark = len(c.trace.events)
    assert [tp.offset for tp in k.commit(offsets=[TopicPartition("t", 0, 5)], asynchronous=False)] == [5]
    assert [dst for dst, _ in requests(c, k, mark, "OffsetCommit")] == [f"broker-{coord}", f"broker-{new}"]
    assert any(f"the coordinator of group 'g' is broker-{new} (was broker-{coord})" in e.narration
               for e in c.trace.events[mark:])
