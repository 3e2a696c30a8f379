"""Java's AbstractCoordinator.markCoordinatorUnknown (Kafka 4.1.1) does not only forget the group coordinator: unless
the cause was a disconnect, it disconnects from it (client.disconnectAsync), so nothing stays in flight to the old
coordinator; whatever was fails as disconnected and is retried against the new one.  librdkafka keeps the
connection and reads what comes back on it.

Here the group's coordinator moves while a consumer has an asynchronous OffsetCommit and then an OffsetFetch
(committed()) in flight to the old one, on its coordinator connection: the OffsetCommit is answered NOT_COORDINATOR.
"""
from __future__ import annotations

import pytest

from txnlab import Cluster, Consumer, TopicPartition
from txnlab.protocol.hashing import partition_for
from txnlab.protocol.names import OFFSETS_TOPIC


@pytest.mark.parametrize("dialect,disconnects,committed", [
    ("java", True, 2),              # commitAsync: one attempt
    ("librdkafka", False, 5),       # rd_kafka_handle_OffsetCommit: NOT_COORDINATOR is refreshed and retried
])
def test_a_coordinator_error_disconnects_a_java_consumer_from_its_old_coordinator(dialect, disconnects, committed):
    c = Cluster(brokers=3, seed=4)
    c.create_topic("t", partitions=1, replication_factor=3)
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect,
                  "enable.auto.commit": False})
    k.assign([TopicPartition("t", 0)])
    k.commit(offsets=[TopicPartition("t", 0, 2)], asynchronous=False)          # it knows the coordinator
    old = c.group_coordinator("g")
    offsets_tp = partition_for("g", c.broker_config["offsets.topic.num.partitions"])
    c.move_leader(OFFSETS_TOPIC, offsets_tp, next(b for b in c.partition_state(OFFSETS_TOPIC, offsets_tp)["isr"]
                                                  if b != old))
    mark = len(c.trace.events)
    k.commit(offsets=[TopicPartition("t", 0, 5)], asynchronous=True)
    assert [tp.offset for tp in k.committed([TopicPartition("t", 0)], 30)] == [committed]
    events = c.trace.events[mark:]
    answers = [(e.api, e.src) for e in events if e.kind == "deliver" and e.is_response and e.dst == k.name
               and e.api in ("OffsetCommit", "OffsetFetch")]
    assert answers[0] == ("OffsetCommit", f"broker-{old}")
    assert (("OffsetFetch", f"broker-{old}") in answers) is not disconnects      # its answer never comes back
    assert answers[-1] == ("OffsetFetch", f"broker-{c.group_coordinator('g')}")
    said = [e.narration for e in events if e.narration]
    assert any(f"disconnects from its old coordinator: it closes its connection to broker-{old}; OffsetFetch in "
               f"flight on it fail(s) as disconnected" in s for s in said) is disconnects
