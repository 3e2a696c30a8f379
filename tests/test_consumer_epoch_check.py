"""KIP-320 in the lab's consumer, both dialects: after its partition's leader changes, a consumer whose position
carries a leader epoch asks the new leader where that epoch ends (OffsetForLeaderEpoch) before it fetches again.
Nothing truncated: it reads on, every record once.  An unclean election truncated what it read: it goes on from
where the new leader's log ends (or, with auto.offset.reset=error, reports _LOG_TRUNCATION), as librdkafka's
rd_kafka_toppar_handle_OffsetForLeaderEpoch and Java's SubscriptionState.maybeCompleteValidation do.  A position
without an epoch (an assignment at an offset, before anything was fetched) is not checked."""
from __future__ import annotations

import pytest

from txnlab import Cluster, Consumer, KafkaError, TopicPartition

from helpers import produce_values, read_offsets

DIALECTS = ["librdkafka", "java"]


def consumer(c, dialect: str, **conf):
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect,
                  "enable.auto.commit": False, **conf})
    k.assign([TopicPartition("t", 0, 0)])
    return k


def checks(c, mark: int) -> list:
    return [e for e in c.trace.events[mark:] if e.kind == "deliver" and e.api == "OffsetForLeaderEpoch"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_after_a_leader_change_the_consumer_checks_its_position_and_reads_on(dialect):
    c = Cluster(brokers=3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=3)
    produce_values(c, ["v0", "v1", "v2"])
    k = consumer(c, dialect)
    assert read_offsets(k, 3) == [(0, "v0"), (1, "v1"), (2, "v2")]
    mark = len(c.trace.events)
    first = c.leader("t")
    c.move_leader("t", 0, next(b for b in c.partition_state("t")["isr"] if b != first))
    epoch = c.partition_state("t")["leader_epoch"]
    produce_values(c, ["v3", "v4"])
    assert read_offsets(k, 2) == [(3, "v3"), (4, "v4")]
    asked = checks(c, mark)
    assert [(e.node, e.is_response) for e in asked] == [(f"broker-{c.leader('t')}", False),
                                                         (asked[0].src, True)]
    assert asked[0].src.startswith("consumer") and "t-0 epoch 0 ends at 3" in asked[1].text        # the position, 3, is where epoch 0 ended: read on
    assert any(f"epoch 0 -> {epoch}" in e.narration for e in c.trace.events[mark:])


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_position_with_no_epoch_is_not_checked(dialect):
    c = Cluster(brokers=3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=3)
    produce_values(c, ["v0", "v1"])
    mark = len(c.trace.events)
    k = consumer(c, dialect)                 # assigned at offset 0: nothing fetched yet
    first = c.leader("t")
    c.move_leader("t", 0, next(b for b in c.partition_state("t")["isr"] if b != first))
    assert read_offsets(k, 2) == [(0, "v0"), (1, "v1")]
    assert checks(c, mark) == []


def truncated_under(dialect: str, **conf):
    """A consumer reads 5 records the leader alone had (its follower down, the ISR shrunk to the leader); the
    leader dies and the follower, back, is elected uncleanly: its log ends at 2.  (cluster, consumer, records read,
    the trace's length when they were read)"""
    c = Cluster(brokers=2, seed=2, config={"replica.lag.time.max.ms": 500})
    c.create_topic("t", partitions=1, replication_factor=2,
                   config={"unclean.leader.election.enable": True, "min.insync.replicas": 1})
    produce_values(c, ["a0", "a1"], acks=-1)
    leader = c.leader("t")
    follower = 1 - leader
    c.crash(f"broker-{follower}")
    c.advance(2_000)                                          # the ISR shrinks to the leader
    produce_values(c, ["b2", "b3", "b4"], acks=1)
    k = consumer(c, dialect, **{"isolation.level": "read_uncommitted", **conf})
    got = read_offsets(k, 5)
    mark = len(c.trace.events)
    c.crash(f"broker-{leader}")
    c.restart(f"broker-{follower}")
    c.advance(15_000)                                         # elected without being in the ISR
    assert c.leader("t") == follower
    return c, k, got, mark


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_truncated_position_goes_on_from_where_the_new_leaders_log_ends(dialect):
    c, k, got, mark = truncated_under(dialect)
    assert got == [(0, "a0"), (1, "a1"), (2, "b2"), (3, "b3"), (4, "b4")]
    produce_values(c, ["c2", "c3"], acks=1)                              # the new leader writes offsets 2 and 3 again
    assert read_offsets(k, 2) == [(2, "c2"), (3, "c3")]
    assert any("ends at 2, below its position 5: the log was truncated; it goes on from 2" in e.narration
               for e in c.trace.events[mark:])


@pytest.mark.parametrize("dialect", DIALECTS)
def test_with_auto_offset_reset_error_a_truncation_is_reported(dialect):
    c, k, _, _ = truncated_under(dialect, **{"auto.offset.reset": "error"})
    got = read_offsets(k, 1)
    assert got and got[0] == ("error", KafkaError(KafkaError._LOG_TRUNCATION).name())


@pytest.mark.parametrize("dialect,offset,checked", [
    ("librdkafka", 2, True), ("librdkafka", 0, False),       # rd_kafka_toppar_op_seek: offsets above 0 only
    ("java", 2, True), ("java", 0, True),                    # SubscriptionState.seekUnvalidated: any offset
])
def test_a_seek_with_a_leader_epoch_is_checked_before_the_fetch(dialect, offset, checked):
    """seek(TopicPartition(..., leader_epoch=e)): the position carries an epoch, so the consumer asks the leader where
    it ends before fetching from there (librdkafka for an offset above 0, Java for any); a seek without one is not
    checked."""
    c = Cluster(brokers=3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=3)
    produce_values(c, ["v0", "v1", "v2", "v3"])
    k = consumer(c, dialect)
    assert read_offsets(k, 4)[-1] == (3, "v3")
    mark = len(c.trace.events)
    k.seek(TopicPartition("t", 0, offset, leader_epoch=0))
    assert read_offsets(k, 4 - offset)[0] == (offset, f"v{offset}")
    assert bool(checks(c, mark)) is checked
    if checked:
        assert any(f"was seeked to offset {offset}" in e.narration for e in c.trace.events[mark:])
    mark = len(c.trace.events)
    k.seek(TopicPartition("t", 0, 1))                             # no epoch: not checked
    assert read_offsets(k, 3)[0] == (1, "v1") and checks(c, mark) == []
