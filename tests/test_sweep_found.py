"""Counterexamples the sweep found beyond the seeds CI runs, each replayed with its minimized fault schedule: what
was wrong, and that it stays fixed.  (Each failed before its fix with the invariant named in its test.)"""
from __future__ import annotations

import json

import pytest

from txnlab.errors import KafkaError, KafkaException

from txnlab.sweep.nemesis import schedule_from_json
from txnlab.sweep.runner import RunConfig, run_seed


def _run(seed: int, cfg: RunConfig, schedule: list):
    return run_seed(seed, cfg, schedule=schedule_from_json(json.dumps(schedule)), keep=True)


def test_a_follower_named_in_error_is_read_again_once_its_leader_knows_it_leads():
    """Seed 90297 (group-rebalance): the leadership of out-1 moves to broker 0 while broker 0 has not yet learned
    it; the followers' first fetch of out-1 gets an error, and their fetch sessions kept out-1 without naming it
    again.  The new leader never read where they were, so they never rejoined the ISR, out-1 stayed below
    min.insync.replicas and three transactions hung in PrepareAbort (hanging-transaction, stuck)."""
    res = _run(90297, RunConfig(workload="group-rebalance", faults="all", records=20), [
        {"kind": "partition", "node": "broker-0", "others": ["controller"], "ms": 1000, "at": 14},
        {"kind": "delay", "api": "SyncGroup", "ms": 6000, "at": 650},
        {"kind": "move-leaders", "node": "broker-2", "at": 871}])
    assert res.ok, res.violations
    c = res.cluster
    state = c.controller.states[("out", 1)]
    assert len(state.isr) == 3                      # both followers back in the ISR
    assert all(c.broker(b).logs[("out", 1)].last_stable_offset == c.broker(b).logs[("out", 1)].high_watermark
               for b in state.isr)


def test_the_final_read_waits_until_every_broker_knows_the_current_leaders():
    """Seed 90771 (multi-partition-atomic): broker 1 was cut off from the controller for 20 s and still believed it
    led atomic-1 when the final read began; the final reader took its end offsets from it and stopped early, so
    committed records looked lost (torn-transaction, unseen).  The settle now waits until every broker has the
    controller's leaders."""
    res = _run(90771, RunConfig(workload="multi-partition-atomic", faults="network", records=20), [
        {"kind": "delay", "api": "EndTxn", "response": True, "ms": 2000, "at": 161},
        {"kind": "partition", "node": "broker-1", "others": ["controller"], "ms": 20000, "at": 369}])
    assert res.ok, res.violations
    final = next(op for op in res.history if op.f == "final-read")
    read = {v for mop in final.mops if mop[0] == "poll" and mop[1] == "atomic-1" for _, v in mop[2]}
    # (the values themselves move with any change to the run: what the final read must see is every record of a
    # committed transaction on atomic-1 -- a24, a30, a32 when this was found)
    committed = {mop[2] for op in res.history if op.f == "txn" and op.outcome == "ok" for mop in op.mops
                 if mop[0] == "send" and mop[1] == "atomic-1"}
    assert len(committed) >= 2 and committed <= read


def test_a_classic_protocol_anomaly_is_replayed_under_transaction_version_2(capsys):
    """Seed 91362 (multi-partition-atomic, transaction.version 0): a delayed EndTxn(commit) of one transaction
    reaches the coordinator during the next one, which it commits while one of its records is still unwritten --
    Kafka's own KAFKA-17754 (G1a, torn-transaction).  The sweep's report replays the same seed and faults under
    transaction.version 2 (with the Java dialect's client, which speaks it), where nothing is violated."""
    from txnlab.sweep.__main__ import main

    schedule = json.dumps([{"kind": "delay", "api": "EndTxn", "ms": 6000, "at": 619},
                           {"kind": "partition", "node": "broker-0", "others": ["controller"], "ms": 20000,
                            "at": 1079}])
    assert main(["--workload", "multi-partition-atomic", "--faults", "network", "--seed", "91362",
                 "--schedule", schedule]) == 1
    out = capsys.readouterr().out
    assert "violations: G1a (1 seed(s)), torn-transaction (1 seed(s))" in out
    assert "under transaction.version 2, with a client that speaks it (the Java dialect): no violation." in out
    assert "--transaction-version 2 --client-dialect java" in out


SEED_90460 = [{"kind": "partition", "node": "broker-0", "others": ["broker-1"], "ms": 5000, "at": 877},
              {"kind": "blackout", "node": "broker-1", "ms": 8000, "at": 1187}]


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_a_leader_that_lost_its_coordinator_while_assigning_joins_again(dialect):
    """Seed 90460 (group-rebalance; 95717 is the same): the consumer became the group's leader and asked for metadata to run the
    assignor; before the answer came (brokers were down for seconds), a failed OffsetFetch made it forget the
    coordinator.  It then sent SyncGroup to no broker at all and the simulation crashed (crash).  As in Kafka's
    AbstractCoordinator.sendSyncGroupRequest, an unknown coordinator now fails SyncGroup with
    COORDINATOR_NOT_AVAILABLE and the member looks the coordinator up and joins again."""
    cfg = RunConfig(workload="group-rebalance", faults="all", records=20, trace=True, dialect=dialect)
    res = run_seed(90460, cfg, schedule=schedule_from_json(json.dumps(SEED_90460)), keep=True)
    assert res.error is None
    assert res.ok, res.violations
    events = [json.loads(line) for line in res.trace_jsonl().splitlines()]
    assert not [e for e in events if e["api"] == "SyncGroup" and not e["is_response"] and not e["dst"]]
    assert res.history.attrs["finished"]
    # (since the leader's KIP-890 verification follows Kafka 4.1.1 this schedule no longer makes the member forget
    # its coordinator at that moment: the test below makes it forget, directly)


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_a_leader_that_forgets_its_coordinator_before_it_syncs_looks_it_up_and_joins_again(dialect):
    """The path of seed 90460, forced: the coordinator is forgotten while the group's leader waits for the metadata
    its assignor needs.  SyncGroup is not sent to no broker (the simulation crashed); the member finds the
    coordinator and joins again, and is assigned."""
    from txnlab import Cluster, Consumer

    c = Cluster(brokers=3, seed=5)
    c.create_topic("in", partitions=2, replication_factor=3)
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect})
    coordinator = consumer._coordinator
    request_metadata, forgotten = coordinator.node.request_metadata, []

    def forgetting(topics=None, then=None, retry_ms=100):
        def forget_then_assign():
            if not forgotten and coordinator.state.name == "JOINING":
                forgotten.append(coordinator.coordinator)
                coordinator.coordinator = None
            then()
        return request_metadata(topics, then=None if then is None else forget_then_assign, retry_ms=retry_ms)
    coordinator.node.request_metadata = forgetting
    consumer.subscribe(["in"])
    for _ in range(40):
        consumer.poll(0.5)
        if consumer.assignment():
            break
    assert forgotten and len(consumer.assignment()) == 2
    assert c.trace.filter(contains="the coordinator is unknown, so SyncGroup cannot be sent (COORDINATOR_NOT_AVAILABLE)")


SEED_120772 = [{"kind": "delay", "api": "AddPartitionsToTxn", "ms": 6000, "at": 282},
               {"kind": "delay", "api": "Produce", "ms": 10000, "at": 782}]


def test_an_abort_over_a_timed_out_produce_bumps_the_epoch_and_fences_the_late_write():
    """Seed 120772 (bank-transfer; copier's seed 120772 is the same, transaction.version 0, librdkafka): teller-1's
    Produce to accounts-1 was held in the network for 10 s; its delivery timeout passed, the record failed and the
    transaction was aborted -- with the same epoch.  The late Produce then reached the leader while a later
    transaction of teller-1 held accounts-1 under that epoch, passed the KIP-890 verification and was committed
    with it: a read_committed reader saw a transfer leg of an aborted transaction (G1a, torn-transaction,
    wrong-total).  librdkafka bumps the epoch after aborting over a timed-out message
    (rd_kafka_txn_set_abortable_error_with_bump), so the late write is fenced."""
    cfg = RunConfig(workload="bank-transfer", faults="all", records=20, trace=True)
    res = _run(120772, cfg, SEED_120772)
    assert res.ok, res.violations
    final = next(op for op in res.history if op.f == "final-read")
    read = {v for mop in final.mops if mop[0] == "poll" for _, v in mop[2]}
    assert not any(v.startswith("t1:") for v in read)      # the aborted transfer t1: neither leg visible
    c = res.cluster
    events = c.trace.events
    assert any(e.api == "InitProducerId" and not e.is_response and e.node == "broker-0"
               and "current pid 0 epoch 0" in e.narration and "epoch 0 -> 1" in e.narration for e in events)
    # the held Produce arrives after the run (its delay outlasts the workload) and is refused
    seen = len(events)
    c.advance(6000)
    # (Kafka 4.1.1 UnifiedLog.maybeStartTransactionVerification: accounts-1 has seen epoch 1, so the leader refuses
    # the epoch-0 write at once, before asking the coordinator, which would answer PRODUCER_FENCED)
    late = [e for e in c.trace.events[seen:] if e.api == "Produce" and "accounts-1: rejected" in e.narration]
    assert late and "rejected before verification -> INVALID_PRODUCER_EPOCH" in late[0].narration


def test_the_copier_twin_of_seed_120772_commits_nothing_of_the_aborted_transaction():
    res = _run(120772, RunConfig(workload="copier", faults="all", records=20), SEED_120772)
    assert res.ok, res.violations


@pytest.mark.parametrize("dialect,flush,epoch_after_abort", [("java", True, 1), ("java", False, 0),
                                                             ("librdkafka", True, 0)])
def test_which_failed_records_make_the_abort_bump_the_epoch(dialect, flush, epoch_after_abort):
    """The rule behind seed 120772's fix, per client (transaction.version 0): Java's
    TransactionManager.maybeTransitionToErrorState bumps the epoch after every abortable error of a record while
    the transaction is not completing (a record refused during flush(), not one refused while commit waits for
    it); librdkafka bumps only where a message may have been written (its message.timeout.ms passed after it was
    sent) and aborts a broker's refusal (here MESSAGE_TOO_LARGE) under the same epoch
    (rd_kafka_txn_set_abortable_error)."""
    from txnlab import Cluster, Producer
    from txnlab.errors import KafkaException

    c = Cluster(brokers=3, seed=1, config={"transaction.version": 0})
    c.create_topic("small", partitions=1, replication_factor=3, config={"max.message.bytes": 300})
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "t", "sim.client.dialect": dialect})
    p.init_transactions()
    p.begin_transaction()
    p.produce("small", value=b"x" * 1000)
    if flush:
        p.flush(10)
    with pytest.raises(KafkaException) as failed:
        p.commit_transaction()
    assert failed.value.args[0].txn_requires_abort()
    p.abort_transaction()
    assert c.transaction_state("t")["producer_epoch"] == epoch_after_abort


@pytest.mark.parametrize("dialect,epoch_after_abort", [("java", 1), ("librdkafka", 0)])
def test_a_record_that_expired_unsent_makes_the_abort_bump_the_epoch_in_java_only(dialect, epoch_after_abort):
    """The coordinator is paused, so the partition is never added and its batch is never sent; it expires after
    delivery.timeout.ms.  Java's Sender.failBatch -> TransactionManager.maybeTransitionToErrorState sets
    epochBumpRequired for it like for any abortable error (transaction.version 0); librdkafka aborts a message
    that was never sent under the same epoch (rd_kafka_txn_set_abortable_error: nothing of it can be in a log)."""
    from txnlab import Cluster, Producer
    from txnlab.errors import KafkaException

    c = Cluster(brokers=3, seed=1, config={"transaction.version": 0})
    c.create_topic("t-out", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "t", "sim.client.dialect": dialect,
                  "request.timeout.ms": 5_000, "socket.timeout.ms": 5_000, "delivery.timeout.ms": 10_000})
    p.init_transactions()
    p.begin_transaction()
    c.pause(f"broker-{c.transaction_coordinator('t')}", 15_000)
    failed = []
    p.produce("t-out", value=b"v", on_delivery=lambda err, msg: failed.append(err))
    p.flush(12)
    assert [e.code() for e in failed] == [KafkaError._MSG_TIMED_OUT]
    assert c.log("t-out").log_end_offset == 0                  # never sent: nothing of it is in the log
    with pytest.raises(KafkaException) as commit:
        p.commit_transaction()
    assert commit.value.args[0].txn_requires_abort()
    p.abort_transaction()
    assert c.transaction_state("t")["producer_epoch"] == epoch_after_abort


SEED_132236 = [{"kind": "crash", "api": "WriteTxnMarkers", "side": "dst", "ms": 1000, "at": 103},
               {"kind": "move-leaders", "node": "broker-2", "at": 848}]


@pytest.mark.parametrize("tv,dialect", [(0, "librdkafka"), (2, "java")])
def test_a_restarted_broker_acts_on_metadata_only_once_it_has_the_whole_image(tv, dialect):
    """Seed 132236 (multi-partition-atomic; mixed's seed 132236 is the same): broker 0 crashed right after writing
    the COMMIT marker of writer-0's first transaction to atomic-0 (not yet replicated) and restarted while the
    controller still held its old session.  The controller, which had moved __transaction_state-1's leadership to
    broker 0 meanwhile, sent the new incarnation that one change; broker 0 applied it to an empty metadata cache,
    became the transaction coordinator, found atomic-0 and atomic-2 'not in the metadata', skipped their markers as
    if the topic were deleted and wrote CompleteCommit: the committed record a1 was never readable (lost-write,
    torn-transaction).  A KRaft broker publishes metadata only once it has caught up with the metadata log, its
    first image the whole state (MetadataLoader), and sets the metadata cache before the coordinators' elections
    (BrokerMetadataPublisher.onMetadataUpdate)."""
    cfg = RunConfig(workload="multi-partition-atomic", faults="all", records=20, transaction_version=tv,
                    dialect=dialect, trace=True)
    res = _run(132236, cfg, SEED_132236)
    assert res.ok, res.violations
    final = next(op for op in res.history if op.f == "final-read")
    read = {v for mop in final.mops if mop[0] == "poll" for _, v in mop[2]}
    assert {"a1", "a2"} <= read                  # both records of writer-0's first (committed) transaction
    events = res.cluster.trace.events
    assert not any("is not in the metadata (deleted, or never created)" in e.narration for e in events)
    assert any("broker 0 has not had the whole metadata image since it started" in e.narration for e in events)


SEED_132068 = [{"kind": "partition", "node": "broker-0", "others": ["controller"], "ms": 5000, "at": 418},
               {"kind": "duplicate", "api": "Produce", "response": True, "at": 1038}]


def test_a_fenced_broker_is_unfenced_by_its_heartbeat_and_learns_the_leaderships_at_once():
    """Seed 132068 (group-rebalance, transaction.version 2, Java): broker 0 was cut off from the controller for 5 s
    and fenced; its leaderships (in-3 among them) moved to broker 1.  The lab once had it register again after the
    heal, on a connection that had died in the partition, so that it stayed a stale leader of in-3 (empty log) for
    6.5 s: member-2, newly assigned in-3 at committed offset 6, fetched from it, got OFFSET_OUT_OF_RANGE, reset to
    the earliest offset and copied v3, v4, v7... a second time (duplicate, nonmonotonic-poll).  In KRaft a fenced
    broker keeps its registration: its first heartbeat after the heal, with that registration's broker epoch,
    unfences it (BrokerHeartbeatManager.calculateNextBrokerState), and it catches up with what changed meanwhile."""
    cfg = RunConfig(workload="group-rebalance", faults="all", records=20, transaction_version=2, dialect="java",
                    trace=True)
    res = _run(132068, cfg, SEED_132068)
    assert res.ok, res.violations
    final = next(op for op in res.history if op.f == "final-read")
    copied = [v.split("|")[0] for mop in final.mops if mop[0] == "poll" and mop[1].startswith("out-")
              for _, v in mop[2]]
    assert copied and len(copied) == len(set(copied))        # every input copied once
    events = res.cluster.trace.events
    fenced = next(e.time for e in events if "controller fenced broker 0" in e.narration)
    unfenced = next(e.time for e in events if e.time >= fenced and "controller unfenced broker 0" in e.narration)
    msgs = res.cluster.kernel.network.messages
    image = next(e.time for e in events if e.time >= unfenced and e.kind == "deliver" and e.api == "LeaderAndIsr"
                 and e.node == "broker-0" and not e.is_response
                 and any((p.topic, p.partition, p.leader) == ("in", 3, 1) for p in msgs[e.msg_id].payload.partition_states))
    assert image - unfenced < 100                            # it learns at once that broker 1 leads in-3 (the image)
    assert sum("controller registered broker 0" in e.narration for e in events) == 1     # (only when it started)



def test_a_fence_bumps_the_epoch_again_once_an_earlier_fence_that_failed_to_write_is_over():
    """Seed 131750's rule, built by hand (its fault schedule no longer reaches it since the ISR admits only live
    brokers): the coordinator's timeout abort of 'tx' cannot write its fence while __transaction_state is below
    min.insync.replicas (it keeps the epoch it bumped once, as Kafka's hasFailedEpochFence says), and writes it
    once the brokers are back.  That fence is over, so the next fence must bump the epoch again
    (TransactionMetadata.prepareComplete clears hasFailedEpochFence): without the bump the old instance is not
    fenced and the abort's markers carry the epoch its records already have."""
    from txnlab import Cluster, Producer
    c = Cluster(brokers=3, seed=3, config={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000})
    c.create_topic("t", partitions=1, replication_factor=3)

    def open_transaction():
        p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "transaction.timeout.ms": 5000})
        p.init_transactions()
        p.begin_transaction()
        p.produce("t", value=b"never committed")
        p.flush()
        return p

    open_transaction()
    coordinator = c.transaction_coordinator("tx")
    others = [b for b in c.brokers if b != coordinator]
    for b in others:
        c.crash(f"broker-{b}")
    c.advance(15_000)                         # the timeout abort's fence cannot be written: it is tried again
    retried = [e for e in c.trace.events if "abort timed-out transactions; 'tx'" in e.narration]
    assert len(retried) >= 2 and "fences the producer (epoch 1 -> 1, not bumped again" in retried[-1].narration
    for b in others:
        c.restart(f"broker-{b}")
    c.run_until(lambda: c.transaction_state("tx")["state"] == "CompleteAbort", timeout_ms=60_000)

    zombie = open_transaction()
    epoch = c.transaction_state("tx")["producer_epoch"]
    mark = len(c.trace.events)
    open_transaction()                        # a new instance while the zombie's transaction is open: a fence
    fence = [e for e in c.trace.events[mark:] if "fence the old producer" in e.narration]
    assert fence and f"(epoch {epoch} -> {epoch + 1})" in fence[0].narration
    with pytest.raises(KafkaException) as e:
        zombie.commit_transaction()
    assert e.value.args[0].code() == KafkaError._FENCED


def test_the_report_names_a_deposed_group_coordinator_that_answered_an_offset_fetch(capsys):
    """Seed 201869 (copier, transaction.version 2, Java): broker 0 is cut off from the controller, which fences it
    and moves __consumer_offsets-0 to broker 1; broker 0 does not know, and answers a consumer's OffsetFetch with the
    offsets it had (45 when found, where the group had committed 54 through broker 1): the copier copies again
    (duplicate, nonmonotonic-offsets).  The sweep's report says which broker answered, when, and since when it was
    fenced."""
    from txnlab.sweep.__main__ import main

    schedule = json.dumps([{"kind": "zombie", "node": "copier-1", "ms": 3000, "at": 776},
                           {"kind": "duplicate", "api": "EndTxn", "response": True, "at": 828},
                           {"kind": "partition", "node": "broker-0", "others": ["controller"], "ms": 20000,
                            "at": 710},
                           {"kind": "zombie", "node": "feeder", "ms": 15000, "at": 3161}])
    # (the partition at 1631 ms and the zombie at 1850 ms until the leaders' KIP-890 verification followed Kafka
    # 4.1.1, which moved the run: the offsets are 42 where they were 45, the fence at 5009 ms where it was 4007.
    # The faults at 218, 1140, 2000 and 2400 ms until the group coordinator passed a TxnOffsetCommit's
    # CONCURRENT_TRANSACTIONS on as Kafka 4.1.1 does (it said COORDINATOR_NOT_AVAILABLE): the Java copier retries
    # after its backoff instead of looking the coordinator up, which moved the run again.  At 261, 1287, 2102 and
    # 2563 ms until OffsetFetch with RequireStable became a write operation, as in Kafka 4.1.1: there the deposed
    # broker 0 had appended a write its followers, gone to the new leader, never replicate, so its RequireStable
    # fetches waited for it and timed out NOT_COORDINATOR instead of answering.  Here it answers before any such
    # write.  Each time found again by a search of the four faults' times)
    assert main(["--workload", "copier", "--faults", "all", "--seed", "201869", "--records", "50",
                 "--transaction-version", "2", "--client-dialect", "java", "--no-minimize",
                 "--schedule", schedule]) == 1
    out = capsys.readouterr().out
    assert "duplicate" in out
    note = next(line for line in out.splitlines() if line.startswith("note: "))
    assert "broker-0 answered copier-1.2-c's OffsetFetch (in-1=46) although the controller had fenced it at " \
           "3005 ms" in note


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_a_leader_and_isr_held_by_a_partition_is_not_applied_after_newer_metadata(dialect):
    """Seed 390168 (copier, transaction.version 0): broker 1 was cut off from the controller for 20 s; a LeaderAndIsr
    sent at the start of the cut (offset 5: __consumer_offsets-0 led by broker 0, epoch 0) was held by TCP and
    delivered after the heal, after broker 1 had applied newer metadata making it leader at epoch 1.  It applied the
    old one too: nobody led __consumer_offsets-0 any more, every marker to it was refused NOT_LEADER_OR_FOLLOWER,
    and two transactions stayed in PrepareAbort (hanging-transaction, stuck).  A KRaft broker applies the metadata
    log in order, each record once (MetadataLoader): an older change is not applied again."""
    res = _run(390168, RunConfig(workload="copier", faults="all", records=50, dialect=dialect, trace=True), [
        {"kind": "partition", "node": "broker-1", "others": ["controller"], "ms": 20000, "at": 614},
        {"kind": "crash", "api": "AddPartitionsToTxn", "side": "dst", "ms": 3000, "at": 772},
        {"kind": "crash", "api": "EndTxn", "side": "dst", "ms": 1000, "at": 1347},
        {"kind": "move-leaders", "node": "broker-2", "at": 1519}])
    assert res.ok, res.violations
    c = res.cluster
    tp = ("__consumer_offsets", 0)
    leader = c.controller.states[tp].leader
    assert c.broker(leader).partitions[tp].is_leader
    assert c.trace.filter(contains="is older and is not applied")


def test_the_held_leader_and_isr_under_transaction_version_2():
    """Seed 202216 (copier, transaction.version 2, Java dialect; found by a 3,000-seed search): broker 2 was cut off
    from the controller for 5 s and a LeaderAndIsr from metadata offset 30 reached it after it had applied offset 54;
    applying it too left the workload stuck (stuck).  The same rule as the test above."""
    res = _run(202216, RunConfig(workload="copier", faults="all", records=50, transaction_version=2, dialect="java",
                                 trace=True), [
        {"kind": "move-leaders", "node": "broker-1", "at": 108},
        {"kind": "duplicate", "api": "TxnOffsetCommit", "at": 798},
        {"kind": "crash", "node": "broker-0", "ms": 3000, "at": 1067},
        {"kind": "partition", "node": "broker-2", "others": ["controller"], "ms": 5000, "at": 1418}])
    assert res.ok, res.violations
    assert res.cluster.trace.filter(contains="is older and is not applied")


@pytest.mark.parametrize("workload", ["copier", "bank-transfer"])
def test_a_fetch_answer_held_by_the_network_is_ignored_once_the_partition_moved_on(workload):
    """Seed 412174 (transaction.version 2, Java dialect; copier and bank-transfer): broker 1's fetch of
    __transaction_state-0 from broker 2 (offset 12, leader epoch 0) was held by a 5 s network partition.  Meanwhile
    the partition's leadership moved to broker 0, which crashed, and came back to broker 2 in leader epoch 2, and
    broker 1's log reached offset 16.  The held answer then arrived and broker 1 appended it below its log end: a
    ValueError escaped the engine (crash).  A fetcher processes only an answer fetched at the offset and in the
    leader epoch it fetches at now (AbstractFetcherThread.processFetchRequest)."""
    res = _run(412174, RunConfig(workload=workload, faults="all", records=50, transaction_version=2, dialect="java",
                                 trace=True), [
        {"kind": "partition", "node": "broker-1", "others": ["broker-2"], "ms": 5000, "at": 799},
        {"kind": "move-leaders", "node": "broker-2", "at": 957},
        {"kind": "crash", "api": "AddPartitionsToTxn", "side": "dst", "ms": 3000, "at": 1256}])
    assert res.ok, res.violations
    assert res.cluster.trace.filter(contains="ignores this answer: it fetched offset")


def test_the_next_batch_waits_for_a_request_in_flight_to_the_old_leader():
    """Seed 418045 (mixed, transaction.version 0, librdkafka): the idempotent writer's first batch of mixed-1 (seq 0)
    was in flight to broker 1, which was restarting and never answered it; the partition moved to broker 0, and the
    writer sent its next batch (seq 1) there at once.  Broker 0 had no state of the producer and took seq 1 as its
    first; seq 0, retried after its request timed out, was refused as a rewound sequence, fatal for librdkafka, and
    the workload's final flush let the fatal error escape (crash).  librdkafka drains a partition whose leader moved
    before it produces to the new one (rd_kafka_idemp_drain_toppar: tests/test_librdkafka_new_leader_drain.py).
    Since a broker that refuses a request closes the connection (tests/test_refused_connection.py), the restarting
    broker refuses seq 0 at once instead of leaving it unanswered, and this schedule no longer leaves a batch in
    flight to the old leader; the run stays free of violations, crashes and rewound sequences."""
    res = _run(418045, RunConfig(workload="mixed", faults="all", records=50, trace=True), [
        {"kind": "crash", "api": "WriteTxnMarkers", "side": "src", "ms": 1000, "at": 104},
        {"kind": "pause", "node": "writer-1", "ms": 3000, "at": 966},
        {"kind": "crash", "api": "WriteTxnMarkers", "side": "src", "ms": 12000, "at": 1136},
        {"kind": "pause", "node": "writer-1", "ms": 500, "at": 1836}])
    assert res.ok and res.error is None, (res.violations, res.error)
    assert not res.cluster.trace.filter(contains="rewound sequence", include_background=True)


@pytest.mark.parametrize("tv, dialect", [(2, "java"), (0, "librdkafka")])
def test_a_deposed_coordinator_with_an_unreplicated_write_does_not_answer_a_stable_offset_fetch(tv, dialect):
    """Seed 418149 (copier): broker 0, cut off from the controller for 20 s, was fenced and lost
    __consumer_offsets-0 without knowing it, after it had appended a transactional offset commit its followers
    never replicated.  Its group coordinator dropped that pending offset when the write timed out and then answered
    a read_committed consumer's OffsetFetch with the offsets it had (in-1=7): the copier copied again (duplicate).
    Kafka 4.1.1 serves an OffsetFetch with RequireStable as a write operation, answered once the partition is
    replicated up to where it stood, or NOT_COORDINATOR after offsets.commit.timeout.ms: the consumer looks the
    coordinator up again and reads the committed offsets from broker 1."""
    res = _run(418149, RunConfig(workload="copier", faults="all", records=50, transaction_version=tv,
                                 dialect=dialect, trace=True), [
        {"kind": "delay", "api": "OffsetFetch", "ms": 2000, "at": 1096},
        {"kind": "partition", "node": "broker-0", "others": ["controller"], "ms": 20000, "at": 1215}])
    assert res.ok, res.violations
    # (broker 0 was fenced at 4007 ms) no offsets from it after that: UNSTABLE_OFFSET_COMMIT, or no answer in time
    stale = [e for e in res.cluster.trace.filter(api="OffsetFetch") if e.is_response and e.src == "broker-0"
             and e.time > 4_007 and "in-1=" in e.text and "in-1=UNSTABLE" not in e.text]
    assert stale == []


@pytest.mark.parametrize("workload,seed,dialect,schedule,late", [
    # seed 422771 (copier, tv0, Java): the coordinator's COMMIT markers for one transaction, held 31 s by the
    # retransmissions of a connection a 20 s partition between brokers 0 and 1 had cut, reach out-0's leader while
    # the producer's next transaction (the same epoch) is open there and commit it: that one then aborts
    ("copier", 422771, "java",
     [{"kind": "delay", "api": "JoinGroup", "ms": 6000, "at": 997},
      {"kind": "partition", "node": "broker-1", "others": ["broker-0"], "ms": 20000, "at": 1158}],
     "broker-1 got WriteTxnMarkers from broker-0 (COMMIT pid 0 epoch 0 coordinatorEpoch 0 -> out-0), delivered after "
     "the heal"),
    # seed 418325 (bank-transfer, tv0, librdkafka): an EndTxn delayed 6 s commits the next transaction (KAFKA-17754)
    ("bank-transfer", 418325, "librdkafka", [{"kind": "delay", "api": "EndTxn", "ms": 6000, "at": 163}],
     "broker-1 got EndTxn from teller-0.1 (COMMIT 'teller-0' pid 1000 epoch 0) -- sent at 528 ms"),
])
def test_the_report_names_the_late_request_that_ended_the_wrong_transaction(capsys, workload, seed, dialect, schedule,
                                                                             late):
    """Under transaction.version < 2 a producer's transactions share an epoch, so a request of one transaction that
    arrives late can end the next one: the report lists the requests of a transaction's life that arrived a second
    or more after they were sent, and says why they matter there; transaction.version 2 runs the same faults
    without a violation."""
    from txnlab.sweep.__main__ import main

    assert main(["--workload", workload, "--faults", "all", "--seed", str(seed), "--records", "50",
                 "--client-dialect", dialect, "--no-minimize", "--schedule", json.dumps(schedule)]) == 1
    out = capsys.readouterr().out
    assert "G1a" in out and "under transaction.version 2, with a client that speaks it (the Java dialect): no " \
                            "violation" in out
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("late requests: 1 request(s)"))
    assert late in lines[at + 1]
    assert "(KAFKA-17754)" in lines[at + 2]


def test_a_late_txn_offset_commit_puts_old_offsets_in_the_next_transaction(capsys):
    """Seed 189 (copier, transaction.version 0, librdkafka; in test_sim_sweep's range since the fencing
    InitProducerId is answered once the abort is decided, as Kafka's handleInitProducerId does): copier-1's first
    TxnOffsetCommit (in-1=4) is held 6 s; the client times it out, retries it and commits, and goes on.  The held
    request reaches the group coordinator while a later transaction of the same producer and epoch is committing,
    which then commits offset 4 after outputs of inputs up to 7 (offsets-outputs-mismatch).  Kafka's classic
    protocol lets it in (the epoch is the same); transaction.version 2 bumps the epoch per transaction and refuses
    it: the same faults there violate nothing."""
    from txnlab.sweep.__main__ import main

    schedule = [{"kind": "delay", "api": "TxnOffsetCommit", "ms": 6000, "at": 783},
                {"kind": "zombie", "node": "feeder", "ms": 500, "at": 1044},
                {"kind": "kill", "node": "copier-0", "at": 1359}]
    assert main(["--workload", "copier", "--faults", "all", "--seed", "189", "--no-minimize",
                 "--schedule", json.dumps(schedule)]) == 1
    out = capsys.readouterr().out
    assert "violations: offsets-outputs-mismatch (1 seed(s))" in out
    assert "under transaction.version 2, with a client that speaks it (the Java dialect): no violation" in out
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("late requests: 1 request(s)"))
    assert "got TxnOffsetCommit from copier-1.1 ('copier-1' group 'copier-group' pid 2001 epoch 0 in-1=4) -- sent " \
           "at 866 ms" in lines[at + 1]
    assert "a TxnOffsetCommit puts its offsets in it" in lines[at + 2]


def test_a_classic_anomaly_is_told_from_a_defect():
    """txnlab.sweep.classic: seed 189's violation (above) is one of the classic protocol's own anomalies -- a late
    request, and none under transaction.version 2 --, which test_sim_sweep lets through; a violation a mutation
    causes (the broker appends a retried batch again) is not, nor is anything under transaction.version 2."""
    from txnlab.sweep.classic import is_classic_anomaly
    from txnlab.sweep.runner import RunConfig, run_seed

    found = run_seed(189, RunConfig(workload="copier", faults="all", records=20))
    assert found.violations == ["offsets-outputs-mismatch"] and is_classic_anomaly(found)
    broken = next(r for r in (run_seed(s, RunConfig(workload="copier", faults="network", records=20,
                                                      mutation="no-dedup")) for s in range(40)) if not r.ok)
    assert not is_classic_anomaly(broken)
    assert not is_classic_anomaly(run_seed(189, RunConfig(workload="copier", faults="all", records=20,
                                                          transaction_version=2, dialect="java")))
