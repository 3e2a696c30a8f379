"""Offsets for partitions that do not exist (found by the differential suite's offsets_for_unknown_partitions
scenario against Apache Kafka 4.1.1):

- the broker answers them UNKNOWN_TOPIC_OR_PARTITION before the group coordinator sees the request, and commits the
  others (KafkaApis.handleOffsetCommitRequest / handleTxnOffsetCommitRequest: ``metadataCache.contains(topic)``,
  then ``getPartitionInfo`` per partition);
- librdkafka retries a TxnOffsetCommit answered UNKNOWN_TOPIC_OR_PARTITION only while send_offsets_to_transaction's
  timeout remains, then that error is the call's, abortable (rd_kafka_txn_handle_TxnOffsetCommit, abs_timeout);
- confluent-kafka's commit() error carries no class flags (KafkaError_init from the bare code)."""
import pytest

from txnlab import Cluster, Consumer, KafkaException, Producer, TopicPartition
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors

from helpers import RawClient

FAST = {"offsets.topic.num.partitions": 3, "transaction.state.log.num.partitions": 3}


def lab(**cfg):
    c = Cluster(brokers=1, seed=3, config={**FAST, **cfg})
    c.create_topic("t", partitions=1, replication_factor=1)
    c.create_topic("out", partitions=1, replication_factor=1)
    return c


def consumer(c, **cfg):
    return Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "enable.auto.commit": False, **cfg})


def test_the_broker_answers_unknown_partitions_and_commits_the_others():
    c = lab(**{"transaction.partition.verification.enable": False, "transaction.version": 1})
    consumer(c).committed([TopicPartition("t", 0)], 10)          # the offsets topic exists and is loaded
    raw = RawClient(c)
    coord = c.group_coordinator("g")
    plain = m.OffsetCommitRequest("g", -1, "", None, {("t", 0): (1, -1, ""), ("t", 5): (1, -1, ""), ("nosuch", 0): (1, -1, "")})
    assert raw.call(coord, plain).errors == {("t", 0): Errors.NONE, ("t", 5): Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                             ("nosuch", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION}
    txn = m.TxnOffsetCommitRequest("tx", "g", 500, 0, -1, "", None, {("t", 0): (2, -1, ""), ("t", 7): (2, -1, "")})
    assert raw.call(coord, txn).errors == {("t", 0): Errors.NONE, ("t", 7): Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert c.broker(coord).group_coordinator.pending_transactional_offsets == {500: {"g": {("t", 0): 2}}}
    only_unknown = m.TxnOffsetCommitRequest("tx", "g", 501, 0, -1, "", None, {("t", 9): (2, -1, "")})
    assert raw.call(coord, only_unknown).errors == {("t", 9): Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert any("knows no partition" in e.narration for e in c.trace)


def test_a_librdkafka_commit_of_an_unknown_partition_raises_a_flagless_error_and_commits_the_rest():
    c = lab()
    cons = consumer(c)
    with pytest.raises(KafkaException) as e:
        cons.commit(offsets=[TopicPartition("t", 0, 1), TopicPartition("t", 5, 1)], asynchronous=False)
    err = e.value.args[0]
    assert (err.name(), err.retriable(), err.fatal()) == ("UNKNOWN_TOPIC_OR_PART", False, False)
    assert [tp.offset for tp in cons.committed([TopicPartition("t", 0)], 10)] == [1]


def test_send_offsets_of_an_unknown_partition_retries_until_its_timeout_then_must_abort():
    c = lab()
    cons = consumer(c)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "copier"})
    p.init_transactions(10)
    p.begin_transaction()
    p.produce("out", value=b"x", partition=0)
    start = c.now
    with pytest.raises(KafkaException) as e:
        p.send_offsets_to_transaction([TopicPartition("t", 0, 2), TopicPartition("t", 5, 2)],
                                      cons.consumer_group_metadata(), 3)
    err = e.value.args[0]
    assert (err.name(), err.txn_requires_abort(), err.retriable(), err.fatal()) == \
        ("UNKNOWN_TOPIC_OR_PART", True, False, False)
    assert 3000 <= c.now - start <= 4000                 # retried for its 3 s, ended by the first answer after them
    with pytest.raises(KafkaException) as e:
        p.commit_transaction(10)
    assert e.value.args[0].name() == "UNKNOWN_TOPIC_OR_PART" and e.value.args[0].txn_requires_abort()
    p.abort_transaction(10)
    c.run_until_idle()
    assert [tp.offset for tp in cons.committed([TopicPartition("t", 0)], 10)] == [-1001]   # aborted with it
