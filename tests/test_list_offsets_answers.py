"""What ListOffsets answers beside the offset, as Kafka 4.1.1's ListOffsetsPartitionResponse: the found record's
timestamp and its batch's leader epoch (UnifiedLog.fetchOffsetByTimestamp, FileRecords.searchForTimestamp), the
partition's current leader epoch for LATEST (Partition.fetchOffsetForTimestamp) and the epoch the log start began
in for EARLIEST; no timestamp for either.  The Admin client's list_offsets hands them to the application in Unix
time, and a time before the lab's clock began finds the records the application stamped then
(tests/reference/scenarios_consumer.py ``admin_list_offsets_answers`` runs the same against Apache Kafka)."""
from __future__ import annotations

from txnlab import Consumer, Producer, TopicPartition
from txnlab.admin import AdminClient, OffsetSpec
from txnlab.cluster import Cluster
from txnlab.protocol import messages as m

EPOCH = 1_767_225_600_000          # the lab clock's 0 as a Unix time (sim.clock.epoch.ms's default)
BEFORE = EPOCH - 86_400_000        # a day before the lab began


def stamped(cluster, topic: str, stamps) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    for i, ts in enumerate(stamps):
        p.produce(topic, value=f"r{i}".encode(), partition=0, timestamp=ts)
    p.flush(10)


def listed(cluster, topic: str, spec) -> tuple:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    tp = TopicPartition(topic, 0)
    info = admin.list_offsets({tp: spec})[tp].result()
    return info.offset, info.timestamp, info.leader_epoch


def test_the_admin_gets_the_found_records_timestamp_and_the_epoch_it_was_written_in():
    cluster = Cluster(brokers=3, seed=3)
    cluster.create_topic("t", partitions=1, replication_factor=3)
    stamped(cluster, "t", [EPOCH + 1_000, EPOCH + 2_000])                      # 0, 1 in leader epoch 0
    first = cluster.leader("t")
    cluster.move_leader("t", 0, next(b for b in cluster.partition_state("t")["isr"] if b != first))
    cluster.advance(1_000)
    epoch = cluster.partition_state("t")["leader_epoch"]
    assert epoch > 0 and cluster.leader("t") != first
    stamped(cluster, "t", [EPOCH + 3_000])                                     # 2 in the new epoch
    assert listed(cluster, "t", OffsetSpec.latest()) == (3, -1, epoch)         # the current epoch, no time
    assert listed(cluster, "t", OffsetSpec.earliest()) == (0, -1, 0)           # the epoch the log began in
    assert listed(cluster, "t", OffsetSpec.for_timestamp(EPOCH + 1_500)) == (1, EPOCH + 2_000, 0)
    assert listed(cluster, "t", OffsetSpec.for_timestamp(EPOCH + 2_500)) == (2, EPOCH + 3_000, epoch)
    assert listed(cluster, "t", OffsetSpec.max_timestamp()) == (2, EPOCH + 3_000, epoch)
    assert listed(cluster, "t", OffsetSpec.for_timestamp(EPOCH + 9_000_000)) == (-1, -1, None)   # nothing


def test_a_time_before_the_lab_began_finds_the_records_stamped_then():
    """Records the application stamped before the lab clock's 0 are kept below 0; asking for such a time used to
    ask for 0 instead and skip them."""
    cluster = Cluster(brokers=1, seed=3)
    cluster.create_topic("t", partitions=1, replication_factor=1)
    stamped(cluster, "t", [BEFORE, BEFORE + 1_000, EPOCH + 5_000])
    assert listed(cluster, "t", OffsetSpec.for_timestamp(BEFORE + 500)) == (1, BEFORE + 1_000, 0)
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g"})
    (tp,) = c.offsets_for_times([TopicPartition("t", 0, BEFORE + 500)], 10)
    assert tp.error is None and tp.offset == 1
    (tp,) = c.offsets_for_times([TopicPartition("t", 0, BEFORE - 1)], 10)
    assert tp.offset == 0


def test_a_lab_time_that_would_read_as_a_special_timestamp_asks_a_little_earlier():
    """ListOffsets' -1..-5 mean LATEST, EARLIEST, MAX_TIMESTAMP...; a Unix time that lands there in the lab's clock
    asks 1 ms before -5 instead, never for the latest offset."""
    assert [m.asked_time(EPOCH + d, EPOCH) for d in (0, -1, -5, -6, -7)] == [0, -6, -6, -6, -7]
    assert [m.asked_time(t, EPOCH) for t in (-1, -2, -3)] == [-1, -2, -3]
