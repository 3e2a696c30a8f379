"""The wire door's clock at its edge: a real client's timestamps are Unix ms, the engine's logs keep lab time (the
door's ``epoch_ms`` is the Unix time of the lab clock's 0, as ``sim.clock.epoch.ms`` is to the lab's own clients).
What librdkafka produces reads back as it was produced, compressed or not; the markers the engine writes fall
between the records on one clock, so offsets_for_times() past an aborted transaction finds its ABORT marker and
MAX_TIMESTAMP the COMMIT marker, where Apache Kafka finds them (tests/test_differential.py runs the same against
Kafka 4.1.1); a LogAppendTime topic stamps the broker's time; a replay repeats it all without the wall clock."""
from __future__ import annotations

import time

import pytest

from txnlab import Producer
from txnlab.cluster import Cluster
from txnlab.protocol.record_batch import Record, RecordBatch
from txnlab.wire import clock
from txnlab.wire.codec import nested, request_type
from txnlab.wire.records import encode_batch, parse_batches
from txnlab.wire.replay import inputs_from_jsonl, inputs_to_jsonl, replay
from wire_helpers import ck, consumer, lab, producer
from wire_raw import ask

HOUR_MS = 3_600_000
LOG_APPEND_TIME = 2               # confluent_kafka.TIMESTAMP_LOG_APPEND_TIME


def put(p, topic: str, values, pause_s: float = 0.02, **kw) -> list:
    """Produce ``values`` one by one (flushed, a little wall time apart); their delivery reports' timestamps."""
    stamps = []
    for v in values:
        p.produce(topic, value=v.encode(), partition=0, on_delivery=lambda err, msg: stamps.append(msg.timestamp()),
                  **kw)
        p.flush(30)
        time.sleep(pause_s)
    return stamps


def read(door, topic: str, n: int, isolation: str = "read_uncommitted") -> list:
    """(offset, value, timestamp) of the first ``n`` records of ``topic``-0, as a real consumer reads them."""
    c = consumer(door, isolation=isolation)
    c.assign([ck.TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append((m.offset(), m.value().decode(), m.timestamp()))
    c.close()
    return got


def offset_for_time(door, topic: str, ts: int, isolation: str) -> int:
    c = consumer(door, isolation=isolation)
    (tp,) = c.offsets_for_times([ck.TopicPartition(topic, 0, ts)], 30)
    c.close()
    assert tp.error is None, tp.error
    return tp.offset


def list_offsets(door, c, topic: str, ts: int):
    """ListOffsets v7 by hand, to the partition's leader: (offset, timestamp, leader epoch) of its answer."""
    T = nested(request_type(2, 7), "topics")
    P = nested(T, "partitions")
    r = ask(door, 2, 7, c.leader(topic, 0), replica_id=-1, isolation_level=0,
            topics=(T(name=topic, partitions=(P(partition_index=0, current_leader_epoch=-1, timestamp=ts),)),))
    (p,) = r.topics[0].partitions
    assert p.error_code == 0
    return p.offset, p.timestamp, p.leader_epoch


def transactional(door, tid: str):
    p = producer(door, **{"transactional.id": tid})
    p.init_transactions(30)
    p.begin_transaction()
    return p


def test_a_records_timestamp_reads_back_as_it_was_produced():
    """Unix ms in, Unix ms out, lab time in the log: a timestamp librdkafka took from the wall clock, one given
    by the application an hour ago, and the same through a gzip-compressed batch (the door moves the batch
    header's timestamps, never the compressed records)."""
    with lab() as (c, door):
        before = clock.unix_ms()
        stamps = put(producer(door), "t", ["now"])
        stamps += put(producer(door), "t", ["an hour ago"], timestamp=before - HOUR_MS)
        stamps += put(producer(door, **{"compression.codec": "gzip", "linger.ms": 50}), "t", ["gzip"])
        assert before <= stamps[0][1] <= clock.unix_ms() and stamps[1][1] == before - HOUR_MS
        got = read(door, "t", 3)
        assert [(o, v) for o, v, _ in got] == [(0, "now"), (1, "an hour ago"), (2, "gzip")]
        assert [ts for _, _, ts in got] == stamps                 # (CreateTime, what the delivery report said)
        with door.lock:
            kept = [r.timestamp for b in c.log("t").read(0, 3) for r in b.records]
        assert kept == [ts - door.epoch_ms for _, ts in stamps]  # the engine's clock: ms since the lab's 0
        assert kept[0] >= 0 and kept[1] < 0                        # (stamped after the door opened; before)


def test_offsets_for_times_past_an_aborted_transaction_finds_its_marker():
    """Kafka's FileRecords.searchForTimestamp counts control batches: the ABORT marker was written after the
    aborted transaction's last record, so a time just after that record finds the marker (offset 3), to
    read_committed as to read_uncommitted; the answer carries the marker's time, in Unix ms."""
    with lab() as (c, door):
        stamps = put(producer(door), "t", ["p0"])                          # 0
        pa = transactional(door, "ta")
        stamps += put(pa, "t", ["a1", "a2"])                               # 1, 2; the ABORT marker at 3
        pa.abort_transaction(30)
        stamps += put(producer(door), "t", ["n1"])                         # 4
        after_a2 = stamps[2][1] + 1
        for isolation in ("read_committed", "read_uncommitted"):
            assert offset_for_time(door, "t", after_a2, isolation) == 3
            assert offset_for_time(door, "t", stamps[1][1], isolation) == 1
            assert offset_for_time(door, "t", stamps[3][1] + HOUR_MS, isolation) == -1
        offset, ts, epoch = list_offsets(door, c, "t", after_a2)
        with door.lock:
            (marker,) = c.log("t").read(3, 4)
        assert marker.is_control and offset == 3 and ts == marker.max_timestamp + door.epoch_ms and epoch == 0
        assert after_a2 <= ts <= clock.unix_ms() + door.lead_ms
        assert list_offsets(door, c, "t", -2) == (0, -1, 0) and list_offsets(door, c, "t", -1) == (5, -1, 0)


def test_max_timestamp_finds_the_commit_marker_or_a_later_stamped_record():
    """ListOffsets MAX_TIMESTAMP (KIP-734): the COMMIT marker, the latest thing written, holds the largest time;
    a record the application stamped an hour ahead holds a larger one still."""
    with lab(topics=(("t", 1), ("u", 1))) as (c, door):
        ahead = put(producer(door), "u", ["ahead"], timestamp=clock.unix_ms() + HOUR_MS)    # u: 0
        for topic in ("t", "u"):
            pb = transactional(door, f"tb-{topic}")
            put(pb, topic, ["b1"])
            pb.commit_transaction(30)
        for isolation in ("read_committed", "read_uncommitted"):
            assert offset_for_time(door, "t", -3, isolation) == 1           # t: b1 at 0, its COMMIT marker at 1
            assert offset_for_time(door, "u", -3, isolation) == 0
        assert list_offsets(door, c, "u", -3) == (0, ahead[0][1], 0)


def test_a_log_append_time_topic_stamps_the_brokers_time_in_unix_ms():
    """message.timestamp.type=LogAppendTime: the broker's time replaces the client's (Kafka's LogValidator sets the
    batch's maxTimestamp and timestamp type), and the client sees it as Unix ms in its delivery report (the
    Produce answer's log_append_time) and when it reads: simulated time follows the wall clock, at most the door's
    lead ahead of it."""
    c = Cluster(brokers=3, seed=1)
    c.create_topic("lat", partitions=1, replication_factor=3, config={"message.timestamp.type": "LogAppendTime"})
    with c.listen() as door:
        before = clock.unix_ms()
        stamps = put(producer(door), "lat", ["old", "new"], timestamp=before - HOUR_MS)
        after = clock.unix_ms()
        assert [kind for kind, _ in stamps] == [LOG_APPEND_TIME] * 2
        assert all(before <= ts <= after + door.lead_ms for _, ts in stamps)
        assert [ts for _, _, ts in read(door, "lat", 2)] == stamps
        with door.lock:
            kept = [b.log_append_time for b in c.log("lat").read(0, 2)]
        assert kept == [ts - door.epoch_ms for _, ts in stamps]


def test_the_labs_own_producer_given_the_doors_epoch_shares_its_clock():
    """A batch the engine encodes itself (a txnlab Producer's, in-process) goes out through the door in Unix time
    too: with ``sim.clock.epoch.ms=door.epoch_ms`` the application stamps and reads the times librdkafka does."""
    with lab() as (c, door):
        given = clock.unix_ms() - HOUR_MS
        stamps: list = []
        with door.lock:
            p = Producer({"bootstrap.servers": c.bootstrap, "sim.clock.epoch.ms": door.epoch_ms})
            for v, ts in ((b"given", given), (b"now", 0)):
                p.produce("t", value=v, partition=0, timestamp=ts,
                          on_delivery=lambda err, msg: stamps.append(msg.timestamp()))
                p.flush(10)
        assert stamps[0] == (1, given) and clock.unix_ms() - 1_000 <= stamps[1][1] <= clock.unix_ms() + door.lead_ms
        assert [(o, v, ts) for o, v, ts in read(door, "t", 2)] == [(0, "given", stamps[0]), (1, "now", stamps[1])]


def test_a_replay_reproduces_the_run_without_reading_the_wall_clock(monkeypatch):
    """The epoch is an input like the others: recorded with the door's opening, it converts the replayed requests'
    timestamps as it converted the real ones, so the replay's trace and log are the run's."""
    with lab() as (c, door):
        put(producer(door), "t", ["p0"], timestamp=clock.unix_ms() - HOUR_MS)
        pa = transactional(door, "ta")
        put(pa, "t", ["a1"])
        pa.abort_transaction(30)
        assert offset_for_time(door, "t", clock.unix_ms() - 2 * HOUR_MS, "read_committed") == 0
    opened = door.inputs[0]
    assert opened["kind"] == "open" and opened["epoch_ms"] == door.epoch_ms

    def no_wall_clock():
        raise AssertionError("a replay read the wall clock")
    monkeypatch.setattr(clock, "unix_ms", no_wall_clock)
    again = Cluster(brokers=3, seed=1)
    again.create_topic("t", partitions=1, replication_factor=3)
    rdoor = replay(again, inputs_from_jsonl(inputs_to_jsonl(door.inputs)))
    assert rdoor.epoch_ms == door.epoch_ms
    assert again.trace.to_jsonl() == c.trace.to_jsonl()
    stamped = [[(r.timestamp, r.value) for r in b.records] for b in c.log("t").read(0, 3)]
    assert [[(r.timestamp, r.value) for r in b.records] for b in again.log("t").read(0, 3)] == stamped


@pytest.mark.parametrize("epoch", [0, 1_795_800_000_000])
def test_a_batch_keeps_its_bytes_and_moves_only_its_header_timestamps(epoch):
    """Parsed with the door's epoch and encoded back with it, a batch is the bytes it was (the CRC32C recomputed
    over the moved header matches the original); NO_TIMESTAMP (-1) stays -1 on both clocks."""
    unix = 1_795_800_123_456
    sent = encode_batch(RecordBatch((Record(None, b"x", (), unix), Record(b"k", b"y", (), unix + 7)),
                                    base_offset=0, partition_leader_epoch=0))
    (b,) = parse_batches(sent, 11, epoch)
    assert [r.timestamp for r in b.records] == [unix - epoch, unix + 7 - epoch] and b.max_timestamp == unix + 7 - epoch
    assert encode_batch(b.with_base_offset(0, 0), epoch) == sent
    untimed = encode_batch(RecordBatch((Record(None, b"x", (), -1),), base_offset=0, partition_leader_epoch=0))
    (u,) = parse_batches(untimed, 11, epoch)
    assert u.records[0].timestamp == -1 and u.max_timestamp == -1
    assert encode_batch(u.with_base_offset(0, 0), epoch) == untimed


def test_the_labs_own_clients_attached_after_the_door_opened_read_the_same_times():
    """One clock on the cluster: a lab consumer attached after the door opened reads a real client's record with
    the timestamp librdkafka's delivery report gave, and its own producer's records on the same Unix clock."""
    from txnlab import Consumer, TopicPartition
    with lab() as (c, door):
        stamps = put(producer(door), "t", ["real"])
        with door.lock:
            lab_consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"})
            lab_consumer.assign([TopicPartition("t", 0, 0)])
            msg = None
            for _ in range(20):
                msg = lab_consumer.poll(0.5)
                if msg is not None:
                    break
            assert msg is not None and msg.value() == b"real"
            assert msg.timestamp() == stamps[0]
            lab_producer = Producer({"bootstrap.servers": c.bootstrap})
            lab_producer.produce("t", value=b"lab", partition=0)
            lab_producer.flush(10)
        got = read(door, "t", 2)
        assert got[1][1] == "lab" and stamps[0][1] <= got[1][2][1] <= clock.unix_ms() + door.lead_ms
