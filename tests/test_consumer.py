"""The consumer: reading with both isolation levels, positions, seek, commits, watermarks, and the
read_committed filtering of KAFKA-EOS §4 (aborted batches skipped, markers never returned)."""
import pytest

from txnlab import OFFSET_INVALID, Cluster, Consumer, KafkaException, Producer, TopicPartition
from txnlab.client.fetcher import CompletedFetch
from txnlab.protocol import messages as m
from txnlab.protocol.record_batch import ControlRecordType, Record, RecordBatch

from helpers import RawClient

FAST = {"offsets.topic.num.partitions": 5, "group.initial.rebalance.delay.ms": 0}
# tests that write transactional batches by hand (made-up producer ids) turn KIP-890 verification off
UNVERIFIED = {"transaction.partition.verification.enable": False}


def cluster(partitions=1, **cfg):
    c = Cluster(brokers=3, seed=3, config={**FAST, **cfg})
    c.create_topic("t", partitions=partitions, replication_factor=3)
    return c


def produce(c, values, partition=None):
    p = Producer({"bootstrap.servers": c.bootstrap})
    for v in values:
        if partition is None:
            p.produce("t", key=v, value=v)
        else:
            p.produce("t", value=v, partition=partition)
    assert p.flush() == 0
    return p


def consumer(c, **cfg):
    conf = {"bootstrap.servers": c.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"}
    conf.update(cfg)
    return Consumer(conf)


def drain(cons, idle=1.0):
    out = []
    while (msg := cons.poll(idle)) is not None:
        assert msg.error() is None, msg.error()
        out.append(msg)
    return out


# ------------------------------------------------------------------------ reading
def test_read_committed_and_read_uncommitted_see_the_same_data_without_transactions():
    c = cluster(partitions=3)
    values = [b"v%d" % i for i in range(30)]
    produce(c, values)
    seen = {}
    for iso in ("read_uncommitted", "read_committed"):
        cons = consumer(c, **{"group.id": f"g-{iso}", "isolation.level": iso})
        cons.subscribe(["t"])
        seen[iso] = sorted((msg.partition(), msg.offset(), msg.value()) for msg in drain(cons))
        cons.close()
    assert sorted(v for _, _, v in seen["read_committed"]) == sorted(values)
    assert seen["read_committed"] == seen["read_uncommitted"]


def test_messages_of_one_partition_arrive_in_offset_order_with_keys_and_timestamps():
    c = cluster()
    produce(c, [b"a", b"b", b"c"], partition=0)
    cons = consumer(c)
    cons.assign([TopicPartition("t", 0)])
    msgs = drain(cons)
    assert [(msg.offset(), msg.value()) for msg in msgs] == [(0, b"a"), (1, b"b"), (2, b"c")]
    assert all(msg.topic() == "t" and msg.partition() == 0 for msg in msgs)
    assert msgs[0].timestamp()[0] == 1 and msgs[0].timestamp()[1] >= 0


def test_default_isolation_level_is_read_committed_like_librdkafka():
    c = cluster()
    cons = consumer(c)
    assert cons._config["isolation.level"] == "read_committed"


def test_poll_that_finds_nothing_moves_the_simulated_clock_by_its_timeout():
    c = cluster()
    cons = consumer(c)
    cons.assign([TopicPartition("t", 0)])
    cons.poll(0.5)                                    # settle: positions, first fetch
    before = c.now
    assert cons.poll(2.0) is None
    assert c.now - before == 2000


def test_auto_offset_reset_latest_starts_after_existing_messages():
    c = cluster()
    produce(c, [b"old-1", b"old-2"], partition=0)
    cons = consumer(c, **{"auto.offset.reset": "latest"})
    cons.assign([TopicPartition("t", 0)])
    assert cons.poll(0.5) is None
    # librdkafka's position() is the application's: nothing was returned yet
    assert cons.position([TopicPartition("t", 0)])[0].offset == OFFSET_INVALID
    produce(c, [b"new"], partition=0)
    msg = cons.poll(2.0)
    assert (msg.offset(), msg.value()) == (2, b"new")
    assert cons.position([TopicPartition("t", 0)])[0].offset == 3


def test_position_is_the_fetch_position_in_the_java_dialect():
    c = cluster()
    produce(c, [b"old-1", b"old-2"], partition=0)
    cons = consumer(c, **{"auto.offset.reset": "latest", "sim.client.dialect": "java", "group.id": "j"})
    cons.assign([TopicPartition("t", 0)])
    assert cons.poll(0.5) is None
    assert cons.position([TopicPartition("t", 0)])[0].offset == 2     # KafkaConsumer.position(): the reset


def test_position_moves_past_aborted_data_and_markers_without_a_message():
    """What librdkafka does on real Kafka (the differential suite): a read_committed consumer that skipped an
    aborted transaction and its ABORT marker returned nothing, yet its position is after the marker."""
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "ab"})
    p.init_transactions()
    p.begin_transaction()
    for v in (b"x", b"y", b"z"):
        p.produce("t", value=v, partition=0)
    p.flush()
    p.abort_transaction()
    cons = consumer(c, **{"isolation.level": "read_committed"})
    cons.assign([TopicPartition("t", 0)])
    assert cons.consume(10, timeout=10.0) == []
    assert cons.position([TopicPartition("t", 0)])[0].offset == 4


def test_consume_returns_up_to_num_messages():
    c = cluster()
    produce(c, [b"m%d" % i for i in range(5)], partition=0)
    cons = consumer(c)
    cons.assign([TopicPartition("t", 0)])
    first = cons.consume(num_messages=3, timeout=5.0)
    rest = cons.consume(num_messages=10, timeout=1.0)
    assert [msg.value() for msg in first] == [b"m0", b"m1", b"m2"]
    assert [msg.value() for msg in rest] == [b"m3", b"m4"]


def test_partition_eof_is_reported_once_when_enabled():
    c = cluster()
    produce(c, [b"only"], partition=0)
    cons = consumer(c, **{"enable.partition.eof": True})
    cons.assign([TopicPartition("t", 0)])
    assert cons.poll(2.0).value() == b"only"
    eof = cons.poll(2.0)
    assert eof.error() is not None and eof.error().name() == "_PARTITION_EOF" and eof.offset() == 1
    assert cons.poll(1.0) is None


# ------------------------------------------------------- position, seek, commit
def test_position_seek_commit_and_committed_round_trip():
    c = cluster()
    produce(c, [b"m%d" % i for i in range(6)], partition=0)
    tp = TopicPartition("t", 0)
    cons = consumer(c, **{"enable.auto.commit": False})
    cons.assign([tp])
    msgs = [cons.poll(2.0) for _ in range(3)]
    assert [msg.offset() for msg in msgs] == [0, 1, 2]
    assert cons.position([tp])[0].offset == 3
    assert cons.committed([tp])[0].offset == -1001            # nothing committed yet

    committed = cons.commit(message=msgs[-1], asynchronous=False)
    assert [(x.topic, x.partition, x.offset) for x in committed] == [("t", 0, 3)]
    assert cons.committed([tp])[0].offset == 3

    cons.seek(TopicPartition("t", 0, 1))
    assert cons.position([tp])[0].offset == OFFSET_INVALID    # librdkafka: until poll() returns from there
    assert cons.poll(2.0).offset() == 1
    assert cons.position([tp])[0].offset == 2
    cons.seek(TopicPartition("t", 0, -2))                     # OFFSET_BEGINNING
    assert cons.poll(2.0).offset() == 0
    cons.close()

    again = consumer(c, **{"enable.auto.commit": False})
    again.assign([TopicPartition("t", 0)])                    # no offset: resume from the committed one
    assert again.poll(2.0).offset() == 3


def test_commit_without_arguments_commits_the_offsets_stored_by_poll():
    c = cluster()
    produce(c, [b"a", b"b"], partition=0)
    tp = TopicPartition("t", 0)
    cons = consumer(c, **{"enable.auto.commit": False})
    cons.assign([tp])
    drain(cons)
    result = cons.commit(asynchronous=False)
    assert [(x.partition, x.offset) for x in result] == [(0, 2)]
    with pytest.raises(KafkaException) as e:
        cons.commit(asynchronous=False)                       # nothing new stored
    assert e.value.args[0].name() == "_NO_OFFSET"


def test_asynchronous_commit_reports_through_on_commit_inside_poll():
    c = cluster()
    produce(c, [b"a"], partition=0)
    reports = []
    cons = consumer(c, **{"enable.auto.commit": False, "on_commit": lambda err, parts: reports.append((err, parts))})
    cons.assign([TopicPartition("t", 0)])
    msg = cons.poll(2.0)
    assert cons.commit(message=msg) is None                   # asynchronous=True is the default
    assert reports == []
    cons.poll(0.5)
    assert len(reports) == 1 and reports[0][0] is None and reports[0][1][0].offset == 1


def test_store_offsets_needs_enable_auto_offset_store_false():
    c = cluster()
    produce(c, [b"a", b"b"], partition=0)
    cons = consumer(c)
    cons.assign([TopicPartition("t", 0)])
    msg = cons.poll(2.0)
    with pytest.raises(KafkaException):
        cons.store_offsets(message=msg)
    manual = consumer(c, **{"group.id": "g2", "enable.auto.offset.store": False, "enable.auto.commit": False})
    manual.assign([TopicPartition("t", 0)])
    first = manual.poll(2.0)
    manual.poll(2.0)
    manual.store_offsets(message=first)                       # only the first one is processed
    assert [x.offset for x in manual.commit(asynchronous=False)] == [1]


def test_close_with_auto_commit_commits_what_was_consumed():
    c = cluster()
    produce(c, [b"a", b"b", b"c"], partition=0)
    cons = consumer(c)                                        # enable.auto.commit defaults to true
    cons.subscribe(["t"])
    assert len(drain(cons)) == 3
    cons.close()
    with pytest.raises(RuntimeError):
        cons.poll(0.1)
    check = consumer(c, **{"enable.auto.commit": False})
    assert check.committed([TopicPartition("t", 0)])[0].offset == 3


def test_get_watermark_offsets_high_is_the_lso_for_read_committed_and_the_hw_otherwise():
    c = cluster(**UNVERIFIED)
    produce(c, [b"a", b"b"], partition=0)
    raw = RawClient(c)
    resp = raw.produce("t", 0, [b"open-1", b"open-2"], pid=900, epoch=0, seq=0, txn=True)
    assert resp.error == 0
    tp = TopicPartition("t", 0)
    committed_reader = consumer(c)
    uncommitted_reader = consumer(c, **{"isolation.level": "read_uncommitted"})
    assert committed_reader.get_watermark_offsets(tp) == (0, 2)       # LSO: the open transaction starts at 2
    assert uncommitted_reader.get_watermark_offsets(tp) == (0, 4)     # HW
    committed_reader.assign([tp])
    assert [msg.value() for msg in drain(committed_reader)] == [b"a", b"b"]
    assert committed_reader.position([tp])[0].offset == 2
    # librdkafka's cached answer is (log start, HW) for every isolation level: the LSO is kept apart
    assert committed_reader.get_watermark_offsets(tp, cached=True) == (0, 4)


def test_read_committed_skips_an_aborted_transaction_and_the_markers():
    c = cluster(**UNVERIFIED)
    raw = RawClient(c)
    leader = c.leader("t", 0)
    raw.produce("t", 0, [b"plain"])                                                  # offset 0
    raw.produce("t", 0, [b"aborted-1", b"aborted-2"], pid=900, epoch=0, seq=0, txn=True)   # 1..2
    raw.produce("t", 0, [b"committed"], pid=901, epoch=0, seq=0, txn=True)          # 3
    marker = m.WriteTxnMarkersRequest((m.TxnMarkerEntry(900, 0, False, (("t", 0),), 0),
                                       m.TxnMarkerEntry(901, 0, True, (("t", 0),), 0)))
    raw.call(leader, marker, from_broker=True)                                                       # ABORT 4, COMMIT 5
    raw.produce("t", 0, [b"after"])                                                   # 6
    tp = TopicPartition("t", 0)
    rc = consumer(c)
    rc.assign([tp])
    got = [(msg.offset(), msg.value()) for msg in drain(rc)]
    assert got == [(0, b"plain"), (3, b"committed"), (6, b"after")]
    assert rc.position([tp])[0].offset == 7
    ru = consumer(c, **{"group.id": "g2", "isolation.level": "read_uncommitted"})
    ru.assign([tp])
    got = [(msg.offset(), msg.value()) for msg in drain(ru)]
    assert got == [(0, b"plain"), (1, b"aborted-1"), (2, b"aborted-2"), (3, b"committed"), (6, b"after")]
    skipped = [e.text for e in c.trace if e.kind == "note" and "skips" in e.text]
    assert any("aborted transaction of producer 900" in t for t in skipped)


def test_fetch_from_a_crashed_leader_refreshes_metadata_and_continues_on_the_new_leader():
    c = cluster()
    produce(c, [b"before"], partition=0)
    cons = consumer(c)
    cons.assign([TopicPartition("t", 0)])
    assert cons.poll(2.0).value() == b"before"
    c.crash(c.leader("t", 0))
    produce(c, [b"after"], partition=0)
    msg = cons.poll(30.0)
    assert msg is not None and msg.value() == b"after"


# ------------------------------------------------ §4 filtering on synthetic batches
def batch(base, values, pid=-1, epoch=0, txn=False):
    return RecordBatch(tuple(Record(None, v, (), 0) for v in values), pid, epoch, 0 if pid >= 0 else -1,
                       txn, base_offset=base)


def marker(base, pid, kind, epoch=0):
    return RecordBatch.control(kind, pid, epoch, 0, 0).with_base_offset(base)


def drain_fetch(cf):
    out = []
    while (r := cf.next_record()) is not None:
        out.append((r[0], r[1].value))
    return out


def test_completed_fetch_skips_aborted_batches_but_keeps_the_same_pids_plain_batch():
    batches = [batch(0, [b"t1", b"t2"], pid=7, txn=True),
               batch(2, [b"plain"], pid=7, txn=False),          # idempotent, not transactional: kept
               batch(3, [b"t3"], pid=7, txn=True),
               marker(4, 7, ControlRecordType.ABORT),
               batch(5, [b"other"], pid=8, txn=True),
               marker(6, 8, ControlRecordType.COMMIT)]
    cf = CompletedFetch(("t", 0), 0, batches, ((7, 0),), read_committed=True)
    assert drain_fetch(cf) == [(2, b"plain"), (5, b"other")]
    assert cf.next_fetch_offset == 7                            # past the last marker
    assert cf.aborted_pids == set()                             # the ABORT marker ended pid 7's span


def test_abort_marker_ends_the_span_so_a_later_transaction_of_that_pid_is_returned():
    batches = [batch(0, [b"aborted"], pid=7, txn=True),
               marker(1, 7, ControlRecordType.ABORT),
               batch(2, [b"next txn"], pid=7, epoch=1, txn=True),
               marker(3, 7, ControlRecordType.COMMIT)]
    cf = CompletedFetch(("t", 0), 0, batches, ((7, 0),), read_committed=True)
    assert drain_fetch(cf) == [(2, b"next txn")]
    assert cf.next_fetch_offset == 4


def test_aborted_transaction_starting_later_is_only_applied_from_its_first_offset():
    batches = [batch(0, [b"committed earlier"], pid=7, txn=True),
               marker(1, 7, ControlRecordType.COMMIT),
               batch(2, [b"aborted later"], pid=7, txn=True),
               marker(3, 7, ControlRecordType.ABORT)]
    cf = CompletedFetch(("t", 0), 0, batches, ((7, 2),), read_committed=True)
    assert drain_fetch(cf) == [(0, b"committed earlier")]


def test_read_uncommitted_returns_aborted_data_but_never_control_records():
    batches = [batch(0, [b"t1"], pid=7, txn=True), marker(1, 7, ControlRecordType.ABORT), batch(2, [b"x"])]
    cf = CompletedFetch(("t", 0), 0, batches, None, read_committed=False)
    assert drain_fetch(cf) == [(0, b"t1"), (2, b"x")]
    assert cf.next_fetch_offset == 3


def test_position_jumps_past_markers_and_skipped_batches_at_the_end_of_a_fetch():
    batches = [batch(0, [b"kept"]), batch(1, [b"a1", b"a2"], pid=9, txn=True), marker(3, 9, ControlRecordType.ABORT)]
    cf = CompletedFetch(("t", 0), 0, batches, ((9, 1),), read_committed=True)
    assert cf.next_record()[0] == 0
    assert cf.next_fetch_offset == 1
    assert cf.next_record() is None
    assert cf.next_fetch_offset == 4                            # > last returned offset + 1


def test_a_fetch_from_the_middle_of_a_batch_skips_the_records_before_the_position():
    cf = CompletedFetch(("t", 0), 2, [batch(0, [b"0", b"1", b"2", b"3"])], None, read_committed=True)
    assert drain_fetch(cf) == [(2, b"2"), (3, b"3")]


# ------------------------------------------------------- with the transactional producer
def test_read_committed_never_returns_an_aborted_transaction_and_waits_for_open_ones():
    c = cluster(**{"transaction.state.log.num.partitions": 5})
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx-1"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"kept-1", partition=0)
    p.commit_transaction()
    p.begin_transaction()
    p.produce("t", value=b"aborted", partition=0)
    p.flush()                                                  # in the log before the abort
    p.abort_transaction()
    p.begin_transaction()
    p.produce("t", value=b"open", partition=0)
    p.flush()                                                  # written, transaction still open

    tp = TopicPartition("t", 0)
    rc = consumer(c, **{"group.id": "rc"})
    ru = consumer(c, **{"group.id": "ru", "isolation.level": "read_uncommitted"})
    for cons in (rc, ru):
        cons.assign([tp])
    assert [msg.value() for msg in drain(rc)] == [b"kept-1"]
    assert [msg.value() for msg in drain(ru)] == [b"kept-1", b"aborted", b"open"]
    lso = c.partition_state("t", 0)["lso"]
    assert rc.position([tp])[0].offset == lso                  # stopped at the open transaction
    p.commit_transaction()
    assert [msg.value() for msg in drain(rc)] == [b"open"]
    assert rc.position([tp])[0].offset == c.partition_state("t", 0)["hw"]   # past the COMMIT marker


def test_a_position_beyond_the_log_end_is_out_of_range_and_follows_auto_offset_reset():
    c = cluster()
    produce(c, [b"a", b"b"], partition=0)
    cons = consumer(c)
    cons.assign([TopicPartition("t", 0, 100)])
    msg = cons.poll(5.0)
    assert (msg.offset(), msg.value()) == (0, b"a")            # auto.offset.reset=earliest
    assert any("out of range" in e.narration and "auto.offset.reset=earliest" in e.narration for e in c.trace)
    strict = consumer(c, **{"group.id": "g2", "auto.offset.reset": "error"})
    strict.assign([TopicPartition("t", 0, 100)])
    err = strict.poll(5.0)
    assert err.error() is not None and err.error().name() == "OFFSET_OUT_OF_RANGE"
