"""The group coordinator's offsets as Kafka 4.1.1's (KIP-848 era) GroupCoordinatorService answers them:

* OffsetFetch with RequireStable is a write operation ("fetch-offsets"): it is answered once the writes before it
  are replicated, so a plain OffsetCommit still being replicated is waited for and read, not answered
  UNSTABLE_OFFSET_COMMIT (kept for a transaction's pending offsets: hasPendingTransactionalOffsets); a wait past
  offsets.commit.timeout.ms is answered NOT_COORDINATOR (handleOffsetFetchException).
* OffsetFetch and OffsetCommit accept the empty group id (only a null one is INVALID_GROUP_ID).
* A failed __consumer_offsets write is answered through CoordinatorOperationExceptionHelper.handleOperationException:
  a timed-out one COORDINATOR_NOT_AVAILABLE, a too large one UNKNOWN_SERVER_ERROR (the Scala coordinator's
  REQUEST_TIMED_OUT and INVALID_COMMIT_OFFSET_SIZE)."""
from txnlab import Cluster, Consumer, TopicPartition
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors as E
from txnlab.protocol.names import OFFSETS_TOPIC

from helpers import RawClient

T0 = ("t", 0)


def lab(brokers: int = 2):
    """One __consumer_offsets partition, on every broker (so a paused follower holds its HW back)."""
    c = Cluster(brokers=brokers, seed=3, config={"offsets.topic.num.partitions": 1,
                                                 "offsets.topic.replication.factor": brokers,
                                                 "transaction.state.log.num.partitions": 1,
                                                 "transaction.partition.verification.enable": False})
    c.create_topic("t", partitions=1, replication_factor=1)
    Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"}).committed([TopicPartition("t", 0)], 10)
    return c


def send(c, key: str, request, box: dict) -> None:
    """Send ``request`` to the group's coordinator from a client of its own (a broker handles one request of a
    connection at a time, so one client's fetch would be ordered after its commit anyway); the answer lands in
    ``box[key]`` as (time, response)."""
    raw = RawClient(c, f"raw-{key}")
    raw.send_request(f"broker-{c.group_coordinator('g')}", request,
                     lambda resp, err: box.setdefault(key, (c.now, resp if err is None else err)), timeout_ms=60_000)


def follower_of_offsets(c) -> int:
    return next(b for b in c.broker_ids if b != c.group_coordinator("g"))


def test_require_stable_fetch_waits_for_a_plain_commit_being_replicated():
    c = lab()
    box: dict = {}
    c.pause(follower_of_offsets(c), 2_000)          # the commit's write is not replicated for 2 s
    send(c, "commit", m.OffsetCommitRequest("g", -1, "", None, {T0: (7, -1, "")}), box)
    c.advance(10)
    send(c, "fetch", m.OffsetFetchRequest("g", (T0,), require_stable=True), box)
    c.advance(50)
    assert box == {}                                  # no UNSTABLE_OFFSET_COMMIT: the fetch waits
    c.run_until(lambda: "fetch" in box)
    (t_commit, commit), (t_fetch, fetch) = box["commit"], box["fetch"]
    assert commit.errors == {T0: E.NONE}
    assert fetch.error == E.NONE and fetch.offsets == {T0: (7, -1, "", E.NONE)}
    assert t_fetch >= t_commit >= 2_000
    assert any("RequireStable is a write operation" in e.narration for e in c.trace)


def test_a_read_committed_consumer_reads_a_commit_being_replicated():
    c = lab()
    box: dict = {}
    c.pause(follower_of_offsets(c), 1_000)
    send(c, "commit", m.OffsetCommitRequest("g", -1, "", None, {T0: (4, -1, "")}), box)
    c.advance(10)
    reader = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "isolation.level": "read_committed"})
    [tp] = reader.committed([TopicPartition("t", 0)], 10)
    assert tp.offset == 4 and tp.error is None
    # one OffsetFetch, answered once the commit was replicated: never UNSTABLE_OFFSET_COMMIT and asked again
    assert not any("UNSTABLE_OFFSET_COMMIT" in (e.narration or "") for e in c.trace)


def test_a_transactions_pending_offsets_stay_unstable():
    c = lab(brokers=1)
    raw = RawClient(c)
    txn = m.TxnOffsetCommitRequest("tx", "g", 500, 0, -1, "", None, {T0: (6, -1, "")}, api_version=4)
    assert raw.call(c.group_coordinator("g"), txn).errors == {T0: E.NONE}
    fetch = raw.call(c.group_coordinator("g"), m.OffsetFetchRequest("g", (T0,), require_stable=True))
    assert fetch.offsets == {T0: (-1, -1, "", E.UNSTABLE_OFFSET_COMMIT)}
    every = raw.call(c.group_coordinator("g"), m.OffsetFetchRequest("g", None, require_stable=True))
    assert every.offsets == {}                     # (fetchAllOffsets lists committed offsets only)


def test_a_commit_whose_write_times_out_is_coordinator_not_available():
    c = lab()
    box: dict = {}
    c.pause(follower_of_offsets(c), 8_000)          # past offsets.commit.timeout.ms=5000, within the ISR's lag
    send(c, "commit", m.OffsetCommitRequest("g", -1, "", None, {T0: (7, -1, "")}), box)
    c.advance(10)
    send(c, "fetch", m.OffsetFetchRequest("g", (T0,), require_stable=True), box)
    txn = m.TxnOffsetCommitRequest("tx", "g", 500, 0, -1, "", None, {("t", 0): (8, -1, "")}, api_version=4)
    send(c, "txn", txn, box)
    c.run_until(lambda: len(box) == 3)
    (t_commit, commit), (t_fetch, fetch), (_, txn_commit) = box["commit"], box["fetch"], box["txn"]
    assert commit.errors == {T0: E.COORDINATOR_NOT_AVAILABLE}          # Scala's coordinator: REQUEST_TIMED_OUT
    assert txn_commit.errors == {T0: E.COORDINATOR_NOT_AVAILABLE}
    assert fetch.error == E.NOT_COORDINATOR                             # handleOffsetFetchException
    assert 5_000 <= t_commit <= t_fetch < 8_000


def test_an_offsets_write_too_large_for_the_log_is_unknown_server_error():
    c = lab(brokers=1)
    raw = RawClient(c)
    c.log(OFFSETS_TOPIC, 0).update_topic_config({"max.message.bytes": 200})    # (AlterConfigs of the topic)
    resp = raw.call(c.group_coordinator("g"), m.OffsetCommitRequest("g", -1, "", None, {T0: (1, -1, "x" * 500)}))
    assert resp.errors == {T0: E.UNKNOWN_SERVER_ERROR}                 # Scala's: INVALID_COMMIT_OFFSET_SIZE
    txn = m.TxnOffsetCommitRequest("tx", "g", 500, 0, -1, "", None, {T0: (1, -1, "x" * 500)}, api_version=4)
    assert raw.call(c.group_coordinator("g"), txn).errors == {T0: E.UNKNOWN_SERVER_ERROR}


def test_the_empty_group_id_may_fetch_and_commit_offsets():
    c = lab(brokers=1)
    raw = RawClient(c)
    coord = c.group_coordinator("")
    for stable in (False, True):
        fetch = raw.call(coord, m.OffsetFetchRequest("", (T0,), require_stable=stable))
        assert fetch.error == E.NONE and fetch.offsets == {T0: (-1, -1, "", E.NONE)}
        assert raw.call(coord, m.OffsetFetchRequest("", None, require_stable=stable)).offsets == {}
    assert raw.call(coord, m.OffsetCommitRequest("", -1, "", None, {T0: (3, -1, "")})).errors == {T0: E.NONE}
    assert raw.call(coord, m.OffsetFetchRequest("", (T0,))).offsets == {T0: (3, -1, "", E.NONE)}
    # the other group APIs still refuse it (GroupCoordinatorService's isGroupIdNotEmpty)
    txn = m.TxnOffsetCommitRequest("tx", "", 500, 0, -1, "", None, {T0: (6, -1, "")}, api_version=4)
    assert raw.call(coord, txn).errors == {T0: E.INVALID_GROUP_ID}
    assert raw.call(coord, m.HeartbeatRequest("", 0, "m")).error == E.INVALID_GROUP_ID
