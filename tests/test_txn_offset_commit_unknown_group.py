"""TxnOffsetCommit to a group the coordinator does not know, and offset commits of generation -1 naming a member of
an Empty group, as Kafka 4's group coordinator answers them (found by the differential suite's
deleted_group_metadata_refused scenario against Apache Kafka 4.1.1):

- OffsetMetadataManager.validateTransactionalOffsetCommit: a group that does not exist is created only for
  generation -1; a TxnOffsetCommit of generation >= 0 (a member's metadata of a deleted group) is ILLEGAL_GENERATION
  and creates nothing.
- ClassicGroup.validateOffsetCommit: generation -1 on an Empty group is accepted before any membership check, even
  with a member id or an instance id."""
import pytest

from txnlab import Cluster, Consumer, KafkaException, Producer, TopicPartition
from txnlab.admin import AdminClient
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors

from helpers import RawClient

FAST = {"offsets.topic.num.partitions": 3, "transaction.state.log.num.partitions": 3,
        "group.initial.rebalance.delay.ms": 0}
MEMBER = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest",
          "enable.auto.commit": False}


def lab(**cfg):
    c = Cluster(brokers=1, seed=5, config={**FAST, **cfg})
    c.create_topic("t", partitions=1, replication_factor=1)
    c.create_topic("out", partitions=1, replication_factor=1)
    return c


def joined_then_left(c, group="g"):
    """The group metadata of a member that joined ``group`` and then left it (the group is Empty)."""
    a = Consumer({"bootstrap.servers": c.bootstrap, "group.id": group, **MEMBER})
    a.subscribe(["t"])
    for _ in range(200):
        a.poll(0.1)
        if a.assignment():
            break
    meta = a.consumer_group_metadata()
    assert meta.generation_id >= 0 and meta.member_id
    a.close()
    return meta


def txn_offset_commit(raw, group, generation, member_id, pid=500):
    req = m.TxnOffsetCommitRequest("tx", group, pid, 0, generation, member_id, None, {("t", 0): (3, -1, "")})
    return raw.call(raw.cluster.group_coordinator(group), req).errors[("t", 0)]


def test_a_member_of_a_deleted_group_is_refused_illegal_generation_and_must_abort():
    c = lab()
    meta = joined_then_left(c)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    assert admin.delete_consumer_groups(["g"])["g"].result(10) is None
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "copier"})
    p.init_transactions(10)
    p.begin_transaction()
    p.produce("out", value=b"x", partition=0)
    with pytest.raises(KafkaException) as e:
        p.send_offsets_to_transaction([TopicPartition("t", 0, 2)], meta, 10)
    err = e.value.args[0]
    assert (err.name(), err.code(), err.txn_requires_abort(), err.fatal()) == ("ILLEGAL_GENERATION", 22, True, False)
    p.abort_transaction(10)
    assert c.broker(c.group_coordinator("g")).group_coordinator.describe_group("g") is None   # nothing created
    assert any("does not exist but the TxnOffsetCommit carries generation" in e.narration for e in c.trace)


def test_unknown_group_generation_minus_one_creates_it_and_any_other_generation_does_not():
    c = lab(**{"transaction.partition.verification.enable": False, "transaction.version": 1})
    raw = RawClient(c)
    Consumer({"bootstrap.servers": c.bootstrap, "group.id": "warm", **MEMBER}).committed(
        [TopicPartition("t", 0)], 10)                     # the offsets topic exists and is loaded
    assert txn_offset_commit(raw, "never", 4, "consumer-1-x") == Errors.ILLEGAL_GENERATION
    assert c.broker(c.group_coordinator("never")).group_coordinator.describe_group("never") is None
    assert txn_offset_commit(raw, "never", -1, "", pid=501) == Errors.NONE
    assert c.broker(c.group_coordinator("never")).group_coordinator.describe_group("never") is not None


def test_generation_minus_one_with_a_member_id_is_accepted_by_an_empty_group_only():
    c = lab(**{"transaction.partition.verification.enable": False, "transaction.version": 1})
    raw = RawClient(c)
    joined_then_left(c)                                   # g exists, Empty
    assert txn_offset_commit(raw, "g", -1, "consumer-7-gone") == Errors.NONE
    plain = m.OffsetCommitRequest("g", -1, "consumer-7-gone", None, {("t", 0): (1, -1, "")})
    assert raw.call(c.group_coordinator("g"), plain).errors[("t", 0)] == Errors.NONE
    busy = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", **MEMBER})
    busy.subscribe(["t"])
    while not busy.assignment():
        busy.poll(0.1)
    assert txn_offset_commit(raw, "g", -1, "consumer-7-gone", pid=502) == Errors.UNKNOWN_MEMBER_ID
    assert raw.call(c.group_coordinator("g"), plain).errors[("t", 0)] == Errors.UNKNOWN_MEMBER_ID
