"""The group coordinator's write path as Kafka 4.1.1's CoordinatorRuntime runs it:

* CoordinatorPartitionWriter.append writes to ``__consumer_offsets`` with acks=1: Partition.appendRecordsToLeader
  checks min.insync.replicas only for acks=-1, so a partition under min ISR takes the write; the operation is
  answered once the high watermark passes it (its deferred event), and the HW does not move under min ISR
  (Partition.maybeIncrementLeaderHW), so the write is answered COORDINATOR_NOT_AVAILABLE (OperationTimeout's
  REQUEST_TIMED_OUT through handleOperationException) after offsets.commit.timeout.ms, not at once.
* A write that timed out is not undone (revertLastWrittenOffset runs only when the local append fails): once the
  HW passes it, the offsets it wrote are visible although its caller was answered with an error.
* The same for SyncGroup's GroupMetadata write (appendGroupMetadataErrorToResponseError) and TxnOffsetCommit, whose
  records, appended, are committed by the transaction's COMMIT marker although the call failed.
* The transaction coordinator still writes with acks=-1 (TransactionStateManager.appendTransactionToLog)."""
import pytest

from txnlab import Cluster, Consumer, KafkaError, KafkaException, TopicPartition
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors as E
from txnlab.protocol.names import OFFSETS_TOPIC

from helpers import RawClient

T0 = ("t", 0)
TIMEOUT = 5_000       # offsets.commit.timeout.ms (the lab's default)


def lab():
    """Three brokers, one __consumer_offsets partition on all three, min.insync.replicas=2."""
    c = Cluster(brokers=3, seed=5, config={"offsets.topic.num.partitions": 1,
                                           "offsets.topic.replication.factor": 3,
                                           "min.insync.replicas": 2,
                                           "offsets.commit.timeout.ms": TIMEOUT,
                                           "transaction.state.log.num.partitions": 1,
                                           "transaction.state.log.replication.factor": 3,
                                           "transaction.partition.verification.enable": False})
    c.create_topic("t", partitions=1, replication_factor=1)
    Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"}).committed([TopicPartition("t", 0)], 10)
    raw = RawClient(c)
    coord = c.group_coordinator("g")
    assert raw.call(coord, m.OffsetCommitRequest("g", -1, "", None, {T0: (1, -1, "")})).errors == {T0: E.NONE}
    return c, raw, coord


def under_min_isr(c, coord) -> list:
    """Crash both followers of the offsets partition and wait until its ISR is the coordinator alone."""
    followers = [b for b in c.broker_ids if b != coord]
    for b in followers:
        c.crash(b)
    c.run_until(lambda: c.partition_state(OFFSETS_TOPIC, 0)["isr"] == [coord], timeout_ms=60_000)
    assert c.group_coordinator("g") == coord
    return followers


def commit(c, coord, offset: int, box: dict, key: str = "commit") -> None:
    raw = RawClient(c, f"raw-{key}")
    raw.send_request(f"broker-{coord}", m.OffsetCommitRequest("g", -1, "", None, {T0: (offset, -1, "")}),
                     lambda resp, err: box.setdefault(key, (c.now, resp if err is None else err)),
                     timeout_ms=60_000)


def test_a_commit_under_min_isr_is_appended_and_times_out_coordinator_not_available():
    c, raw, coord = lab()
    under_min_isr(c, coord)
    leo = c.log(OFFSETS_TOPIC, 0, coord).log_end_offset
    box: dict = {}
    start = c.now
    commit(c, coord, 7, box)
    c.advance(100)
    assert box == {}                          # acks=1: no NOT_ENOUGH_REPLICAS at once; the write waits for the HW
    assert c.log(OFFSETS_TOPIC, 0, coord).log_end_offset == leo + 1       # appended locally
    c.run_until(lambda: "commit" in box)
    t, resp = box["commit"]
    assert resp.errors == {T0: E.COORDINATOR_NOT_AVAILABLE}
    assert TIMEOUT <= t - start < TIMEOUT + 100
    assert any("appended locally (acks=1)" in (e.narration or "") for e in c.trace)


def test_a_timed_out_commit_becomes_visible_once_the_hw_passes_it():
    c, raw, coord = lab()
    followers = under_min_isr(c, coord)
    box: dict = {}
    commit(c, coord, 7, box)
    c.run_until(lambda: "commit" in box)
    assert box["commit"][1].errors == {T0: E.COORDINATOR_NOT_AVAILABLE}
    # not replicated: a read at the last committed offset still sees the old offset
    assert raw.call(coord, m.OffsetFetchRequest("g", (T0,), require_stable=False)).offsets == {T0: (1, -1, "", E.NONE)}
    for b in followers:
        c.restart(b)
    hw_target = c.log(OFFSETS_TOPIC, 0, coord).log_end_offset
    c.run_until(lambda: c.log(OFFSETS_TOPIC, 0, coord).high_watermark >= hw_target, timeout_ms=60_000)
    assert c.group_coordinator("g") == coord
    # the failed commit's offset is visible, read with or without RequireStable
    assert raw.call(coord, m.OffsetFetchRequest("g", (T0,), require_stable=False)).offsets == {T0: (7, -1, "", E.NONE)}
    assert raw.call(coord, m.OffsetFetchRequest("g", (T0,), require_stable=True)).offsets == {T0: (7, -1, "", E.NONE)}
    assert any("applied all the same" in (e.narration or "") for e in c.trace)


def test_a_stable_fetch_reads_a_timed_out_commit_still_waiting_for_the_hw():
    c, raw, coord = lab()
    under_min_isr(c, coord)
    box: dict = {}
    commit(c, coord, 7, box)
    c.run_until(lambda: "commit" in box)
    # the write stays in memory: a RequireStable fetch (a write operation reading the latest state) reads it, and
    # waits for the HW to pass it, then is answered NOT_COORDINATOR at its own timeout
    fetch: dict = {}
    start = c.now
    RawClient(c, "raw-fetch").send_request(f"broker-{coord}", m.OffsetFetchRequest("g", (T0,), require_stable=True),
                                          lambda resp, err: fetch.setdefault("r", (c.now, resp)), timeout_ms=60_000)
    c.run_until(lambda: "r" in fetch)
    t, resp = fetch["r"]
    assert resp.error == E.NOT_COORDINATOR and t - start >= TIMEOUT


def test_the_commit_is_answered_once_the_followers_return_in_time():
    c, raw, coord = lab()
    followers = under_min_isr(c, coord)
    box: dict = {}
    start = c.now
    commit(c, coord, 9, box)
    c.advance(100)
    for b in followers:
        c.restart(b)
    c.run_until(lambda: "commit" in box)
    t, resp = box["commit"]
    # the followers rejoined the ISR within offsets.commit.timeout.ms: the HW passed the write, which succeeded
    # (the Scala coordinator's acks=all write was refused NOT_ENOUGH_REPLICAS at once)
    assert resp.errors == {T0: E.NONE} and t < TIMEOUT + start
    hw_target = c.log(OFFSETS_TOPIC, 0, coord).log_end_offset
    c.run_until(lambda: c.log(OFFSETS_TOPIC, 0, coord).high_watermark >= hw_target, timeout_ms=60_000)
    assert raw.call(coord, m.OffsetFetchRequest("g", (T0,), require_stable=False)).offsets == {T0: (9, -1, "", E.NONE)}


def test_the_transaction_coordinator_still_refuses_under_min_isr():
    c = Cluster(brokers=3, seed=5, config={"min.insync.replicas": 2, "transaction.state.log.num.partitions": 1,
                                           "transaction.state.log.replication.factor": 3})
    raw = RawClient(c)
    c.run_until(lambda: raw.call(0, m.FindCoordinatorRequest("tx", m.COORDINATOR_TRANSACTION)).error == E.NONE,
                timeout_ms=10_000)
    coord = c.transaction_coordinator("tx")
    for b in c.broker_ids:
        if b != coord:
            c.crash(b)
    c.run_until(lambda: c.partition_state("__transaction_state", 0)["isr"] == [coord], timeout_ms=60_000)
    resp = raw.call(coord, m.InitProducerIdRequest("tx", 60_000))
    # acks=-1: the local append refuses it at once (NOT_ENOUGH_REPLICAS), no wait for a HW
    assert resp.error != E.NONE
    assert any("NOT_ENOUGH_REPLICAS" in (e.narration or "") for e in c.trace)


def test_a_sync_group_whose_assignment_write_times_out_is_coordinator_not_available():
    c, raw, coord = lab()
    join = m.JoinGroupRequest("g", 30_000, 60_000, "", None, "consumer", (("range", ("t",)),))
    first = raw.call(coord, join)
    if first.error == E.MEMBER_ID_REQUIRED:
        first = raw.call(coord, m.JoinGroupRequest("g", 30_000, 60_000, first.member_id, None, "consumer",
                                                   (("range", ("t",)),)))
    assert first.error == E.NONE and first.leader == first.member_id
    under_min_isr(c, coord)
    start = c.now
    sync = raw.call(coord, m.SyncGroupRequest("g", first.generation_id, first.member_id, None,
                                              ((first.member_id, (T0,)),)))
    # GroupMetadataManager.appendGroupMetadataErrorToResponseError: REQUEST_TIMED_OUT -> COORDINATOR_NOT_AVAILABLE,
    # after offsets.commit.timeout.ms (the Scala coordinator's acks=all write: NOT_ENOUGH_REPLICAS at once)
    assert sync.error == E.COORDINATOR_NOT_AVAILABLE
    assert c.now - start >= TIMEOUT


def test_a_timed_out_txn_offset_commit_is_committed_by_the_transactions_marker():
    c, raw, coord = lab()
    followers = under_min_isr(c, coord)
    txn = m.TxnOffsetCommitRequest("tx", "g", 500, 0, -1, "", None, {T0: (8, -1, "")}, api_version=4)
    start = c.now
    assert raw.call(coord, txn).errors == {T0: E.COORDINATOR_NOT_AVAILABLE}
    assert c.now - start >= TIMEOUT
    # the records stay in the log and the offsets pending for producer 500: its COMMIT marker commits them
    for b in followers:
        c.restart(b)
    c.run_until(lambda: len(c.partition_state(OFFSETS_TOPIC, 0)["isr"]) >= 2, timeout_ms=60_000)
    marker = m.WriteTxnMarkersRequest((m.TxnMarkerEntry(500, 0, True, ((OFFSETS_TOPIC, 0),), 0),))
    assert raw.call(coord, marker, from_broker=True).markers[500][(OFFSETS_TOPIC, 0)] == E.NONE
    assert raw.call(coord, m.OffsetFetchRequest("g", (T0,), require_stable=True)).offsets == {T0: (8, -1, "", E.NONE)}


def test_a_consumers_failed_commit_is_seen_later_by_committed():
    c, raw, coord = lab()
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "enable.auto.commit": False})
    consumer.assign([TopicPartition("t", 0)])
    followers = under_min_isr(c, coord)
    start = c.now
    with pytest.raises(KafkaException) as failed:
        consumer.commit(offsets=[TopicPartition("t", 0, 7)], asynchronous=False)
    # each attempt is appended and answered COORDINATOR_NOT_AVAILABLE at offsets.commit.timeout.ms (the Scala
    # coordinator refused each at once: NOT_ENOUGH_REPLICAS)
    assert failed.value.args[0].code() == KafkaError.COORDINATOR_NOT_AVAILABLE
    assert c.now - start >= TIMEOUT
    for b in followers:
        c.restart(b)
    hw_target = c.log(OFFSETS_TOPIC, 0, coord).log_end_offset
    c.run_until(lambda: c.log(OFFSETS_TOPIC, 0, coord).high_watermark >= hw_target, timeout_ms=60_000)
    [tp] = consumer.committed([TopicPartition("t", 0)], 10)
    assert tp.offset == 7 and tp.error is None
