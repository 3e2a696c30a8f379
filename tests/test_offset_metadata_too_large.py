"""Offset metadata longer than offset.metadata.max.bytes (default 4096), as Kafka 4.1.1 answers it:
OffsetMetadataManager.commitOffset / commitTransactionalOffset (isMetadataInvalid) answer such a partition
OFFSET_METADATA_TOO_LARGE (12) and write no record for it; the request's other partitions are committed."""
from txnlab import Cluster, Consumer, TopicPartition
from txnlab.config import BROKER
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors as E
from txnlab.protocol.names import OFFSETS_TOPIC

from helpers import RawClient


def lab(**cfg):
    c = Cluster(brokers=1, seed=3, config={"offsets.topic.num.partitions": 1, "transaction.state.log.num.partitions": 1,
                                           "transaction.partition.verification.enable": False, **cfg})
    c.create_topic("t", partitions=2, replication_factor=1)
    Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"}).committed([TopicPartition("t", 0)], 10)
    return c


def test_kafkas_default_is_4096():
    assert BROKER["offset.metadata.max.bytes"].default == 4096
    c = lab()
    raw = RawClient(c)
    resp = raw.call(0, m.OffsetCommitRequest("g", -1, "", None, {("t", 0): (1, -1, "x" * 4096), ("t", 1): (1, -1, "x" * 4097)}))
    assert resp.errors == {("t", 0): E.NONE, ("t", 1): E.OFFSET_METADATA_TOO_LARGE}


def test_a_partition_with_too_long_metadata_is_refused_and_the_others_committed():
    c = lab(**{"offset.metadata.max.bytes": 10})
    raw = RawClient(c)
    resp = raw.call(0, m.OffsetCommitRequest("g", -1, "", None, {("t", 0): (3, -1, "short"), ("t", 1): (4, -1, "far too long")}))
    assert resp.errors == {("t", 0): E.NONE, ("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    group = c.broker(0).group_coordinator.manager.get_group("g")
    assert {tp: e.offset for tp, e in group.offsets.items()} == {("t", 0): 3}
    end = c.log(OFFSETS_TOPIC, 0).log_end_offset
    only_long = m.OffsetCommitRequest("g", -1, "", None, {("t", 1): (5, -1, "far too long")})
    assert raw.call(0, only_long).errors == {("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    assert c.log(OFFSETS_TOPIC, 0).log_end_offset == end            # nothing written
    txn = m.TxnOffsetCommitRequest("tx", "g", 500, 0, -1, "", None, {("t", 0): (6, -1, ""), ("t", 1): (7, -1, "far too long")})
    assert raw.call(0, txn).errors == {("t", 0): E.NONE, ("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    assert c.broker(0).group_coordinator.pending_transactional_offsets == {500: {"g": {("t", 0): 6}}}
