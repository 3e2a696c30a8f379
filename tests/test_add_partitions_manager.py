"""A partition leader's KIP-890 questions to transaction coordinators (Kafka 4.1.1 AddPartitionsToTxnManager and
ReplicaManager.handleProduceAppend): one question per Produce request, one AddPartitionsToTxn (v4+) in flight per
coordinator with what was asked meanwhile batched into the next, one question per transactional id in a batch."""
from txnlab import Cluster, Consumer, Producer
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors

from txnlab.protocol.record_batch import Record, RecordBatch

from helpers import RawClient, values_in_log

ONE_TXN_PARTITION = {"transaction.state.log.num.partitions": 1}     # every transactional id has one coordinator


def _questions(c, src=None):
    """The AddPartitionsToTxn requests brokers sent, in order: (sender, ((tid, epoch, partitions, verify-only), ...))."""
    out = []
    for msg in c.kernel.network.messages.values():
        if msg.api == "AddPartitionsToTxn" and not msg.is_response and msg.payload.transactions and \
                (src is None or msg.src == src):
            out.append((msg.src, tuple((t.transactional_id, t.producer_epoch, tuple(sorted(t.partitions)),
                                        t.verify_only) for t in msg.payload.transactions)))
    return out


def _read_committed(c, topic: str, partitions: int) -> list:
    """Every value a read_committed consumer reads from ``topic`` up to the end of each partition, sorted."""
    con = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "reader", "isolation.level": "read_committed",
                    "auto.offset.reset": "earliest", "enable.partition.eof": True})
    con.subscribe([topic])
    values, ended = [], set()
    while len(ended) < partitions:
        msg = con.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            ended.add(msg.partition())
        else:
            values.append(msg.value())
    con.close()
    return sorted(values)


def test_one_produce_request_is_verified_in_one_question_with_all_its_partitions():
    c = Cluster(brokers=3, seed=0)
    c.create_topic("out", partitions=6, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "linger.ms": 50})
    p.init_transactions()
    p.begin_transaction()
    for part in range(6):
        p.produce("out", value=f"v{part}".encode(), partition=part)
    p.commit_transaction()
    asked = sorted(_questions(c))
    # each leader got one Produce with its two partitions and asked once about both (it used to ask once per partition)
    assert asked == sorted((f"broker-{c.leader('out', part)}", (("tx", 0, (("out", part), ("out", part + 3)), True),))
                           for part in range(3))
    assert _read_committed(c, "out", 6) == [f"v{i}".encode() for i in range(6)]


def test_questions_asked_while_one_is_out_go_together_in_the_next():
    c = Cluster(brokers=3, seed=0, config=ONE_TXN_PARTITION)
    c.create_topic("out", partitions=1, replication_factor=3)
    producers = [Producer({"bootstrap.servers": c.bootstrap, "transactional.id": f"tx{i}", "linger.ms": 5})
                 for i in range(4)]
    for p in producers:
        p.init_transactions()
        p.begin_transaction()
    for i, p in enumerate(producers):
        p.produce("out", value=f"v{i}".encode())
    for p in producers:
        p.commit_transaction()
    leader = f"broker-{c.leader('out', 0)}"
    asked = [tuple(t[0] for t in batch) for _, batch in _questions(c, src=leader)]
    # tx2's and tx3's Produce requests came while tx1's question was out: they waited and went out together
    assert asked == [("tx0",), ("tx1",), ("tx2", "tx3")]
    waited = [d for e in c.trace for d in e.details if "is asked in the next one" in d]
    assert [w.split("'")[1] for w in waited] == ["tx2", "tx3"]
    assert _read_committed(c, "out", 1) == [b"v0", b"v1", b"v2", b"v3"]


def _cluster():
    """A cluster with topic out-0 and a one-partition __transaction_state (made by a producer's first
    InitProducerId)."""
    c = Cluster(brokers=3, seed=0, config=ONE_TXN_PARTITION)
    c.create_topic("out", partitions=1, replication_factor=3)
    Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "setup"}).init_transactions()
    c.run_until_idle()
    return c


def _broker_and_coordinator(c):
    """(a broker that is not the coordinator, the coordinator's id) of a one-partition __transaction_state."""
    coordinator = c.leader("__transaction_state", 0)
    asker = next(b for b in c.brokers if b != coordinator)
    return c.broker(asker), coordinator


def test_a_newer_question_for_the_same_transaction_replaces_the_waiting_one():
    c = _cluster()
    b, coordinator = _broker_and_coordinator(c)
    got: dict = {}

    def answer(name):
        return lambda errors: got.setdefault(name, errors)
    tp = (("out", 0),)
    v = b.txn_verifier
    v.add_or_verify(coordinator, "a", 7, 0, tp, False, True, answer("a"))          # goes out at once
    v.add_or_verify(coordinator, "b", 8, 3, tp, False, True, answer("b epoch 3"))  # waits
    v.add_or_verify(coordinator, "b", 8, 3, tp, False, True, answer("b epoch 3, again"))
    assert got == {"b epoch 3": {("out", 0): Errors.NETWORK_EXCEPTION}}      # a retry: the client asks again
    v.add_or_verify(coordinator, "b", 8, 4, tp, False, True, answer("b epoch 4"))
    assert got["b epoch 3, again"] == {("out", 0): Errors.INVALID_PRODUCER_EPOCH}   # fenced by the newer epoch
    v.add_or_verify(coordinator, "b", 8, 2, tp, False, True, answer("b epoch 2"))
    assert got["b epoch 2"] == {("out", 0): Errors.INVALID_PRODUCER_EPOCH}   # older than the one waiting
    c.run_until_idle()
    assert [batch for _, batch in _questions(c, src=b.name)] == [
        (("a", 0, (("out", 0),), True),), (("b", 4, (("out", 0),), True),)]
    # neither transaction exists: the coordinator's answer is passed on (a Produce maps it)
    assert got["a"] == {("out", 0): Errors.INVALID_PRODUCER_ID_MAPPING}
    assert got["b epoch 4"] == {("out", 0): Errors.INVALID_PRODUCER_ID_MAPPING}


def test_a_failed_request_answers_every_question_in_it_and_the_next_goes_out():
    c = _cluster()
    b, coordinator = _broker_and_coordinator(c)
    got: dict = {}
    v = b.txn_verifier
    v.add_or_verify(coordinator, "a", 7, 0, (("out", 0),), False, True, lambda e: got.setdefault("a", e))
    c.crash(coordinator)          # before the question arrives: the connection is refused
    c.run_until(lambda: "a" in got, timeout_ms=40_000)
    assert got["a"] == {("out", 0): Errors.NETWORK_EXCEPTION}
    assert not v.in_flight
    c.run_until(lambda: v.coordinator("a") not in (-1, coordinator), timeout_ms=60_000)     # a new coordinator
    c.advance(1_000)        # (which loads the transaction log first)
    v.add_or_verify(v.coordinator("a"), "a", 7, 0, (("out", 0),), False, True, lambda e: got.setdefault("again", e))
    c.run_until(lambda: "again" in got, timeout_ms=40_000)
    assert got["again"] == {("out", 0): Errors.INVALID_PRODUCER_ID_MAPPING}  # asked and answered


def test_no_live_coordinator_is_answered_at_once():
    c = _cluster()
    b, _ = _broker_and_coordinator(c)
    got = []
    b.txn_verifier.add_or_verify(-1, "a", 7, 0, (("out", 0),), False, True, got.append)
    assert got == [{("out", 0): Errors.COORDINATOR_NOT_AVAILABLE}]


def test_a_client_may_not_send_a_partition_leaders_batch():
    c = _cluster()
    coordinator = c.leader("__transaction_state", 0)
    req = m.AddPartitionsToTxnRequest(transactions=(m.AddPartitionsToTxnTransaction("a", 7, 0, (("out", 0),)),))
    resp = RawClient(c).call(coordinator, req)
    assert (resp.error, resp.results) == (Errors.CLUSTER_AUTHORIZATION_FAILED, None)
    assert "only brokers send AddPartitionsToTxn" in "\n".join(d for e in c.trace for d in e.details)


def test_the_isr_is_checked_at_the_append_after_the_answer():
    """Kafka checks min.insync.replicas when it appends (Partition.appendRecordsToLeader), after the verification:
    an ISR that shrank while the question was out refuses the write (it used to be appended, under min ISR)."""
    c = Cluster(brokers=3, seed=0, config={**ONE_TXN_PARTITION, "replica.lag.time.max.ms": 2_000,
                                           "min.insync.replicas": 2})
    c.create_topic("out", partitions=2, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    leader = c.leader("out", 1)
    assert c.leader("__transaction_state", 0) == leader         # it asks itself: the coordinator stays up
    p.begin_transaction()
    c.delay_next("AddPartitionsToTxn", 20_000, src=f"broker-{leader}")
    p.produce("out", value=b"v", partition=1)
    c.advance(30)
    for b in c.brokers:
        if b != leader:
            c.crash(b)
    c.advance(20_600)
    answer = next(e for e in c.trace if e.api == "AddPartitionsToTxn" and e.is_response and e.dst == f"broker-{leader}")
    assert answer.time > 20_000 and "'tx' ok" in answer.text                    # verified...
    assert any("ISR [" in d and "NOT_ENOUGH_REPLICAS, nothing appended" in d for d in answer.details)  # ...refused
    assert c.broker(leader).partitions[("out", 1)].log.log_end_offset == 0


def _late_produces(c, order):
    """Three transactional ids whose transactions are complete each send a late transactional Produce to t-0, at the
    same instant on three connections (a broker reads one request of a connection at a time), with the Produce
    versions ``order``: the first question goes out at once, the second opens the next batch and the third rides in
    it.  Returns each Produce's error, by version and transactional id."""
    producers = {}
    for tid in ("tx-0", "tx-1", "tx-2"):
        p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": tid})
        p.init_transactions()
        p.begin_transaction()
        p.produce("t", value=tid.encode())
        p.commit_transaction()
        producers[tid] = p.transaction_manager
    c.advance(1_000)                                    # (every marker written: the transactions are complete)
    got: dict = {}
    for i, ((tid, tm), version) in enumerate(zip(producers.items(), order)):
        late = RecordBatch((Record(None, b"late", (), c.now),), tm.producer_id, tm.producer_epoch, 1, True)
        RawClient(c, f"raw-{i}").send_request(
            f"broker-{c.leader('t')}", m.ProduceRequest(tid, -1, 30_000, {("t", 0): late}, version),
            lambda resp, err, key=(version, tid): got.setdefault(key, resp.responses[("t", 0)].error))
    c.run_until(lambda: len(got) == 3, timeout_ms=10_000)
    assert len(_questions(c, src=f"broker-{c.leader('t')}")[-2:][-1][1]) == 2     # the last two rode together
    return got


def test_whether_an_old_client_is_told_transaction_abortable_is_decided_by_who_opened_the_batch():
    """Kafka 4.1.1 AddPartitionsToTxnHandler.onComplete maps the coordinator's TRANSACTION_ABORTABLE to
    INVALID_TXN_STATE by the TransactionSupportedOperation of the node's batch, which is the one of the request whose
    question created it (addTxnData's computeIfAbsent), not by each asker's: a Produce v10 in a batch a v11 opened is
    told TRANSACTION_ABORTABLE, and a v11 in one a v10 opened INVALID_TXN_STATE."""
    c = Cluster(brokers=3, seed=0, config=ONE_TXN_PARTITION)
    c.create_topic("t", partitions=1, replication_factor=3)
    assert _late_produces(c, (11, 11, 10)) == {(11, "tx-0"): Errors.TRANSACTION_ABORTABLE,
                                               (11, "tx-1"): Errors.TRANSACTION_ABORTABLE,
                                               (10, "tx-2"): Errors.TRANSACTION_ABORTABLE}
    c = Cluster(brokers=3, seed=0, config=ONE_TXN_PARTITION)
    c.create_topic("t", partitions=1, replication_factor=3)
    assert _late_produces(c, (11, 10, 11)) == {(11, "tx-0"): Errors.TRANSACTION_ABORTABLE,
                                               (10, "tx-1"): Errors.INVALID_TXN_STATE,
                                               (11, "tx-2"): Errors.INVALID_TXN_STATE}
    assert "late".encode() not in values_in_log(c, "t")
