"""Where a transaction's marker shows through the consumer's offsets, as on Apache Kafka 4.1.1 with librdkafka
(tests/reference/scenarios_consumer.py): commit() after a read past a marker commits past it, and
offsets_for_times() for a time after a transaction's last record and before its marker was written finds the
marker's offset."""
from txnlab import Cluster, Consumer, Producer, TopicPartition

TP = TopicPartition("t", 0)


def cluster():
    c = Cluster(brokers=1, seed=5, config={"offsets.topic.num.partitions": 3, "transaction.state.log.num.partitions": 3,
                                           "transaction.state.log.replication.factor": 1,
                                           "offsets.topic.replication.factor": 1,
                                           "transaction.state.log.min.isr": 1})
    c.create_topic("t", partitions=1, replication_factor=1)
    return c


def consumer(c, isolation="read_committed", **cfg):
    return Consumer({"bootstrap.servers": c.bootstrap, "group.id": f"g-{isolation}", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "isolation.level": isolation, **cfg})


def committed_transaction(c, values):
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    p.begin_transaction()
    for v in values:
        p.produce("t", value=v, partition=0)
    p.commit_transaction()
    c.run_until_idle()


def test_commit_after_reading_past_a_commit_marker_commits_the_position():
    """librdkafka hands the control record to rd_kafka_fetch_op_app_prepare, which stores its offset + 1
    (enable.auto.offset.store): commit() commits past the marker, where the position is."""
    c = cluster()
    committed_transaction(c, [b"a", b"b"])           # 0, 1, marker at 2
    cons = consumer(c)
    cons.assign([TopicPartition("t", 0, -2)])
    assert [m.offset() for m in cons.consume(10, 3.0)] == [0, 1]
    assert cons.position([TP])[0].offset == 3
    assert [tp.offset for tp in cons.commit(asynchronous=False)] == [3]
    assert cons.committed([TP])[0].offset == 3
    cons.close()


def test_without_auto_offset_store_the_marker_stores_nothing():
    c = cluster()
    committed_transaction(c, [b"a"])
    cons = consumer(c, **{"enable.auto.offset.store": False})
    cons.assign([TopicPartition("t", 0, -2)])
    msgs = cons.consume(10, 3.0)
    assert cons.position([TP])[0].offset == 2
    cons.store_offsets(message=msgs[0])
    assert [tp.offset for tp in cons.commit(asynchronous=False)] == [1]
    cons.close()


def test_offsets_for_times_finds_the_marker_written_after_the_time():
    """Kafka's ListOffsets by time (FileRecords.searchForTimestamp) looks at control batches too: a time after an
    aborted transaction's last record, before its marker was written, finds the marker, for either isolation."""
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    p.begin_transaction()
    stamps = []
    p.produce("t", value=b"a", partition=0, on_delivery=lambda err, msg: stamps.append(msg.timestamp()[1]))
    p.flush()
    c.advance(50)
    p.abort_transaction()                            # record 0, ABORT marker at 1
    c.run_until_idle()
    c.advance(50)
    plain = Producer({"bootstrap.servers": c.bootstrap})
    plain.produce("t", value=b"n", partition=0)      # 2
    plain.flush()
    for isolation in ("read_committed", "read_uncommitted"):
        cons = consumer(c, isolation)
        found = cons.offsets_for_times([TopicPartition("t", 0, stamps[0] + 1)], 10)
        assert found[0].offset == 1, isolation
        assert cons.offsets_for_times([TopicPartition("t", 0, stamps[0])], 10)[0].offset == 0
        cons.close()


def test_offsets_for_times_with_a_partition_twice_answers_the_last_timestamp_to_both():
    """librdkafka asks once per partition, with the timestamp of its last entry, and gives each entry that answer
    (rd_kafka_topic_partition_list_get_leaders, rd_kafka_topic_partition_list_update)."""
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap})
    stamps = []
    for v in (b"a", b"b"):
        p.produce("t", value=v, partition=0, on_delivery=lambda err, msg: stamps.append(msg.timestamp()[1]))
        p.flush()
        c.advance(50)
    cons = consumer(c)
    found = cons.offsets_for_times([TopicPartition("t", 0, stamps[0]), TopicPartition("t", 0, stamps[1])], 10)
    assert [tp.offset for tp in found] == [1, 1]
    found = cons.offsets_for_times([TopicPartition("t", 0, stamps[1]), TopicPartition("t", 0, stamps[0])], 10)
    assert [tp.offset for tp in found] == [0, 0]
    cons.close()


def test_max_timestamp_is_the_latest_marker_and_only_below_the_lso():
    """ListOffsets MAX_TIMESTAMP (KIP-734, offsets_for_times with -3): the record or marker with the largest
    timestamp in the whole log (UnifiedLog.fetchOffsetByTimestamp counts markers), answered only below the LSO /
    HW (ReplicaManager.fetchOffset): -1 to read_committed while it lies in an open transaction."""
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)          # 0
    p.flush()
    c.advance(50)
    rc, ru = consumer(c), consumer(c, "read_uncommitted")
    assert [x.offsets_for_times([TopicPartition("t", 0, -3)], 10)[0].offset for x in (rc, ru)] == [-1, 0]
    p.commit_transaction()                           # COMMIT marker at 1, the latest timestamp
    c.run_until_idle()
    assert [x.offsets_for_times([TopicPartition("t", 0, -3)], 10)[0].offset for x in (rc, ru)] == [1, 1]
