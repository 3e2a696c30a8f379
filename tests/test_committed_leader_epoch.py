"""A consumer commits the leader epoch of the record its offset follows (KIP-320), the group coordinator keeps it
with the offset in ``__consumer_offsets`` and OffsetFetch answers it; a consumer that resumes from that committed
offset knows where it came from.

Both real clients commit it (librdkafka: rd_kafka_OffsetCommitRequest writes CommittedLeaderEpoch from the stored
position, and confluent-kafka's commit(message) the message's; Java: SubscriptionState.allConsumed, the position's
offsetEpoch) and read it back (rd_kafka_handle_OffsetFetch; ConsumerUtils.refreshCommittedOffsets).  What they do
with it on resuming differs: Java checks the position with the leader before fetching (seekUnvalidated ->
AWAIT_VALIDATION), librdkafka fetches from it at once (rd_kafka_toppar_fetch_start) and checks it only when the
partition's leader epoch goes up later.  So after an unclean election truncated what was committed, a Java consumer
goes back to where the new leader's log diverged; a librdkafka one reads on from the committed offset."""
from __future__ import annotations

import pytest

from txnlab import Cluster, Consumer, Producer, TopicPartition
from txnlab.coordinator.offset_records import OffsetCommitKey, read_key, read_offset_value
from txnlab.protocol.hashing import partition_for
from txnlab.protocol.names import OFFSETS_TOPIC

from helpers import produce_values, read_offsets

DIALECTS = ["librdkafka", "java"]


def consumer(c, dialect: str, offset=None, **conf):
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", **conf})
    k.assign([TopicPartition("t", 0) if offset is None else TopicPartition("t", 0, offset)])
    return k


def delivered(c, api: str, mark: int, responses: bool) -> list:
    """The payloads of the ``api`` requests (or responses) delivered since trace entry ``mark``."""
    msgs = c.kernel.network.messages
    return [msgs[e.msg_id].payload for e in c.trace.events[mark:]
            if e.kind == "deliver" and e.api == api and e.is_response == responses]


def sent(c, api: str, mark: int = 0) -> list:
    return delivered(c, api, mark, False)


def answers(c, api: str, mark: int = 0) -> list:
    return delivered(c, api, mark, True)


def new_leader_epoch(c) -> int:
    """Move the leadership of t-0 once: what is written next carries leader epoch 1."""
    first = c.leader("t")
    c.move_leader("t", 0, next(b for b in c.partition_state("t")["isr"] if b != first))
    return c.partition_state("t")["leader_epoch"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_commit_of_the_consumed_position_carries_the_leader_epoch_of_its_record(dialect):
    c = Cluster(brokers=3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=3)
    produce_values(c, ["v0"])
    epoch = new_leader_epoch(c)
    produce_values(c, ["v1", "v2"])
    assert epoch == 1
    k = consumer(c, dialect, offset=0)
    msgs = [k.poll(5.0) for _ in range(3)]
    assert [(m.offset(), m.leader_epoch()) for m in msgs] == [(0, 0), (1, 1), (2, 1)]
    mark = len(c.trace.events)
    committed = k.commit(asynchronous=False)              # the stored offsets: after v2, read in epoch 1
    assert [(tp.offset, tp.leader_epoch) for tp in committed] == [(3, 1)]
    assert [r.offsets for r in sent(c, "OffsetCommit", mark)] == [{("t", 0): (3, 1, "")}]
    group = c.broker(c.group_coordinator("g")).group_coordinator.manager.get_group("g")
    assert (group.offsets[("t", 0)].offset, group.offsets[("t", 0)].leader_epoch) == (3, 1)
    (tp,) = k.committed([TopicPartition("t", 0)])
    assert (tp.offset, tp.leader_epoch) == (3, 1)
    assert [r.offsets for r in answers(c, "OffsetFetch", mark)][-1] == {("t", 0): (3, 1, "", 0)}
    (pos,) = k.position([TopicPartition("t", 0)])
    assert (pos.offset, pos.leader_epoch) == (3, 1)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_commit_of_a_message_or_of_offsets_carries_their_leader_epoch(dialect):
    c = Cluster(brokers=3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=3)
    produce_values(c, ["v0"])
    k = consumer(c, dialect, offset=0)
    m0 = k.poll(5.0)
    k.commit(message=m0, asynchronous=False)              # confluent-kafka's Consumer_commit: the message's epoch
    assert [(tp.offset, tp.leader_epoch) for tp in k.committed([TopicPartition("t", 0)])] == [(1, 0)]
    k.commit(offsets=[TopicPartition("t", 0, 1, leader_epoch=7)], asynchronous=False)
    assert [(tp.offset, tp.leader_epoch) for tp in k.committed([TopicPartition("t", 0)])] == [(1, 7)]
    k.commit(offsets=[TopicPartition("t", 0, 1)], asynchronous=False)      # none: -1, shown as None
    assert [(tp.offset, tp.leader_epoch) for tp in k.committed([TopicPartition("t", 0)])] == [(1, None)]


def test_the_offsets_record_keeps_the_leader_epoch_and_a_new_coordinator_loads_it():
    c = Cluster(brokers=3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=3)
    produce_values(c, ["v0", "v1"])
    k = consumer(c, "librdkafka", offset=0)
    read_offsets(k, 2)
    k.commit(asynchronous=False)
    coord = c.group_coordinator("g")
    log = c.broker(coord).logs[(OFFSETS_TOPIC, partition_for("g", c.broker_config["offsets.topic.num.partitions"]))]
    values = [read_offset_value(r.value) for b in log.batches if not b.is_control for r in b.records
              if isinstance(read_key(r.key), OffsetCommitKey)]
    assert [(v.offset, v.leader_epoch) for v in values] == [(2, 0)]
    c.crash(f"broker-{coord}")                            # another broker loads __consumer_offsets
    c.advance(15_000)
    assert c.group_coordinator("g") != coord
    k2 = consumer(c, "librdkafka")
    assert [(tp.offset, tp.leader_epoch) for tp in k2.committed([TopicPartition("t", 0)], 30)] == [(2, 0)]


def test_send_offsets_to_transaction_carries_the_leader_epoch():
    c = Cluster(brokers=3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=3)
    c.create_topic("out", partitions=1, replication_factor=3)
    produce_values(c, ["v0"])
    k = consumer(c, "librdkafka", offset=0)
    m0 = k.poll(5.0)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("out", value=b"x")
    p.send_offsets_to_transaction(k.position([TopicPartition("t", 0)]), k.consumer_group_metadata())
    p.commit_transaction()
    assert m0.leader_epoch() == 0
    assert [r.offsets for r in sent(c, "TxnOffsetCommit")] == [{("t", 0): (1, 0, "")}]
    assert [(tp.offset, tp.leader_epoch) for tp in k.committed([TopicPartition("t", 0)])] == [(1, 0)]


def committed_then_truncated(dialect: str):
    """A consumer of group g reads 5 records the leader of t-0 alone had (its follower down, the ISR shrunk to the
    leader) and commits offset 5 in leader epoch 0; the leader dies and the follower, back, is elected uncleanly:
    its log ends at 2, and the producer then writes c2..c6 there (offsets 2..6, in the new leader epoch).  The
    group's coordinator lives on (three brokers; t has two replicas)."""
    c = Cluster(brokers=3, seed=2, config={"replica.lag.time.max.ms": 500})
    c.create_topic("t", partitions=1, replication_factor=2,
                   config={"unclean.leader.election.enable": True, "min.insync.replicas": 1})
    produce_values(c, ["a0", "a1"], acks=-1)
    leader = c.leader("t")
    follower = next(b for b in c.partition_state("t")["replicas"] if b != leader)
    c.crash(f"broker-{follower}")
    c.advance(15_000)                     # the ISR shrinks to the leader; its other partitions get new leaders
    produce_values(c, ["b2", "b3", "b4"], acks=1)
    k = consumer(c, dialect, offset=0, **{"isolation.level": "read_uncommitted"})
    assert read_offsets(k, 5) == [(0, "a0"), (1, "a1"), (2, "b2"), (3, "b3"), (4, "b4")]
    k.commit(asynchronous=False)
    k.close()
    c.crash(f"broker-{leader}")
    c.restart(f"broker-{follower}")
    c.advance(15_000)                                         # elected without being in the ISR
    assert c.leader("t") == follower and c.partition_state("t")["leo"] == 2
    produce_values(c, ["c2", "c3", "c4", "c5", "c6"], acks=1)
    return c


@pytest.mark.parametrize("dialect,first", [
    ("java", (2, "c2")),            # checked: epoch 0 ends at 2 on the new leader, below 5 -> from 2
    ("librdkafka", (5, "c5")),      # not checked: c2..c4 are passed over
])
def test_resuming_from_a_committed_offset_that_was_truncated(dialect, first):
    c = committed_then_truncated(dialect)
    mark = len(c.trace.events)
    k = consumer(c, dialect, **{"isolation.level": "read_uncommitted"})      # no offset: the committed one
    got = read_offsets(k, 7 - first[0])
    assert got[0] == first and got[-1] == (6, "c6")
    assert answers(c, "OffsetFetch", mark)[-1].offsets == {("t", 0): (5, 0, "", 0)}
    narrated = [e.narration for e in c.trace.events[mark:] if e.narration]
    assert any("resumes t-0 at its committed offset 5 (leader epoch 0)" in n for n in narrated)
    checks = sent(c, "OffsetForLeaderEpoch", mark)
    if dialect == "java":
        assert [r.partitions for r in checks] == [{("t", 0): (c.partition_state("t")["leader_epoch"], 0)}]
        assert any("ends at 2, below its position 5: the log was truncated; it goes on from 2" in n for n in narrated)
    else:
        assert checks == []


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_committed_offset_without_a_leader_epoch_is_not_checked(dialect):
    c = Cluster(brokers=3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=3)
    produce_values(c, ["v0", "v1", "v2"])
    k = consumer(c, dialect, offset=0)
    read_offsets(k, 3)
    k.commit(offsets=[TopicPartition("t", 0, 2)], asynchronous=False)     # no leader epoch
    k.close()
    new_leader_epoch(c)
    mark = len(c.trace.events)
    k2 = consumer(c, dialect)
    assert read_offsets(k2, 1) == [(2, "v2")]
    assert sent(c, "OffsetForLeaderEpoch", mark) == []


def test_librdkafka_checks_a_restored_position_when_the_leader_epoch_goes_up():
    """rd_kafka_toppar_leader_update: the restored position (offset, epoch) is checked once the partition's leader
    epoch increases after the fetcher started."""
    c = Cluster(brokers=3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=3)
    produce_values(c, ["v0", "v1", "v2"])
    k = consumer(c, "librdkafka", offset=0)
    read_offsets(k, 3)
    k.commit(asynchronous=False)
    k.close()
    k2 = consumer(c, "librdkafka")
    assert read_offsets(k2, 0, polls=4) == []                        # resumed at 3, nothing to read
    mark = len(c.trace.events)
    epoch = new_leader_epoch(c)
    produce_values(c, ["v3"])
    assert read_offsets(k2, 1) == [(3, "v3")]
    assert [r.partitions for r in sent(c, "OffsetForLeaderEpoch", mark)] == [{("t", 0): (epoch, 0)}]


def test_through_the_wire_door_a_real_consumer_commits_and_reads_back_its_leader_epoch():
    """confluent-kafka (librdkafka) over the door: OffsetCommit v6+ and TxnOffsetCommit v2+ carry
    CommittedLeaderEpoch (decoded by the door), OffsetFetch v5+ answers it (encoded), committed() shows it."""
    import time
    pytest.importorskip("confluent_kafka")
    from wire_helpers import ck, consumer as real_consumer, lab, producer

    def stored():
        with door.lock:
            e = c.broker(c.group_coordinator("reader")).group_coordinator.manager.get_group("reader").offsets[("t", 0)]
            return e.offset, e.leader_epoch

    with lab() as (c, door):
        with door.lock:
            new_leader_epoch(c)                                 # records written next: leader epoch 1
            c.run_until_idle()
        p = producer(door)
        for v in ("v0", "v1", "v2"):
            p.produce("t", value=v.encode(), partition=0)
        assert p.flush(30) == 0
        k = real_consumer(door, isolation="read_uncommitted")
        k.assign([ck.TopicPartition("t", 0, 0)])
        got, deadline = [], time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            m = k.poll(0.2)
            if m is not None and not m.error():
                got.append(m)
        assert [(m.offset(), m.leader_epoch()) for m in got] == [(0, 1), (1, 1), (2, 1)]
        k.commit(message=got[1], asynchronous=False)
        (tp,) = k.committed([ck.TopicPartition("t", 0)], 30)
        assert (tp.offset, tp.leader_epoch) == (2, 1)
        assert stored() == (2, 1)
        t = producer(door, **{"transactional.id": "copier"})
        t.init_transactions(30)
        t.begin_transaction()
        t.produce("t", value=b"x", partition=0)
        t.send_offsets_to_transaction([ck.TopicPartition("t", 0, 3, leader_epoch=1)],
                                      k.consumer_group_metadata(), 30)
        t.commit_transaction(30)
        # EndTxn is answered once PrepareCommit is durable; the COMMIT marker reaches __consumer_offsets after it
        deadline = time.monotonic() + 30
        while stored() != (3, 1) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stored() == (3, 1)
        k.close()


def test_librdkafka_checks_a_restored_position_when_metadata_brings_the_first_leader_epoch():
    """librdkafka resumes at the committed offset (FETCH_ACTIVE) before it knows t-0's leader epoch (its Metadata
    answer is late): the metadata that names one is an epoch going up from -1 (rd_kafka_toppar_leader_update), so
    it checks the position before it fetches, and finds the truncation as Java does."""
    c = committed_then_truncated("librdkafka")
    c.delay_next("Metadata", 3_000, response=True)       # the new consumer's first metadata comes late
    mark = len(c.trace.events)
    k = consumer(c, "librdkafka", **{"isolation.level": "read_uncommitted"})
    got = read_offsets(k, 5)
    assert got[0] == (2, "c2") and got[-1] == (6, "c6")
    narrated = [e.narration for e in c.trace.events[mark:] if e.narration]
    assert any("knows no leader epoch of t-0 yet" in n for n in narrated)
    assert [r.partitions for r in sent(c, "OffsetForLeaderEpoch", mark)] == \
        [{("t", 0): (c.partition_state("t")["leader_epoch"], 0)}]
