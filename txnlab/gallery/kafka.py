"""Kafka's stories: small, named scenarios of the exactly-once machinery, each with its expected ending.

Each is a ``Scenario`` (``scenario.py``) written only with the public API (Cluster, Producer,
Consumer, AdminClient); ``GALLERY`` lists them in teaching order.  Run plainly, a story's blocking
calls drive the simulation; under a stepper they wait for Step clicks.  Pure engine: no widgets here.
"""
from __future__ import annotations

from dataclasses import replace

from ..admin import AdminClient
from ..client.message import TopicPartition
from ..client.producer import Producer
from ..cluster import Cluster
from ..errors import KafkaException
from .moments import KeyMoment, all_of, fault, log_values_are, lso, marker_lands, narrated, reads
from .moments import txn_state as state_is
from .kafka_markers import MARKER_LOST
from .scenario import (TOPIC, Pipeline, Scenario, assigned, consumer, drain, error_name, expect, log_values, markers,
                       producer, txn_state, wait_for)

# -------------------------------------------------------------------------- 1. dedup
def _dropped_ack_dedup(c: Cluster) -> dict:
    leader0, leader1 = c.leader(TOPIC, 0), c.leader(TOPIC, 1)
    idem = producer(c, "idempotent-producer", **{"enable.idempotence": True, "request.timeout.ms": 3000})
    plain = producer(c, "plain-producer", **{"enable.idempotence": False, "request.timeout.ms": 3000})
    # The broker appends the first batch and answers; the answer (the ack) is lost: the connection breaks.
    c.drop_next("Produce", response=True, src=leader0, dst="idempotent-producer")
    for v in ("a", "b", "c"):
        idem.produce(TOPIC, value=v, partition=0)
    left_idem = idem.flush(30)
    c.drop_next("Produce", response=True, src=leader1, dst="plain-producer")
    for v in ("a", "b", "c"):
        plain.produce(TOPIC, value=v, partition=1)
    left_plain = plain.flush(30)
    return {"unacked_idempotent": left_idem, "unacked_plain": left_plain}


def _check_dropped_ack_dedup(c: Cluster, r: dict, variant: str) -> None:
    expect(r["unacked_idempotent"] == 0 and r["unacked_plain"] == 0, "both producers got every delivery report")
    expect(log_values(c, TOPIC, 0) == ["a", "b", "c"],
           f"the idempotent producer's retry was recognised as a duplicate: {log_values(c, TOPIC, 0)}")
    expect(log_values(c, TOPIC, 1) == ["a", "b", "c", "a", "b", "c"],
           f"the plain producer's retry was appended a second time: {log_values(c, TOPIC, 1)}")


# -------------------------------------------------------------- 2. commit is atomic
def _commit_visible_atomically(c: Cluster) -> dict:
    rc = assigned(c, "reader-committed", "read_committed")
    ru = assigned(c, "reader-uncommitted", "read_uncommitted")
    p = producer(c, "producer", **{"transactional.id": "tx-orders"})
    p.init_transactions()
    p.begin_transaction()
    for i in range(4):
        p.produce(TOPIC, value=f"order-{i}", partition=i % 2)
    p.flush()                                  # in the logs, acknowledged, not yet committed
    before_rc, before_ru = drain(rc), drain(ru)
    p.commit_transaction()
    after_rc = wait_for(rc, 4)
    return {"read_committed_before_commit": before_rc, "read_uncommitted_before_commit": before_ru,
            "read_committed_after_commit": sorted(after_rc)}


def _check_commit_visible_atomically(c: Cluster, r: dict, variant: str) -> None:
    everything = [f"order-{i}" for i in range(4)]
    expect(r["read_committed_before_commit"] == [], "a read_committed consumer sees nothing before the commit")
    expect(sorted(r["read_uncommitted_before_commit"]) == everything,
           "a read_uncommitted consumer sees the records as soon as they are replicated")
    expect(r["read_committed_after_commit"] == everything, "after the commit it sees all four records")
    for p in (0, 1):
        expect(markers(c, TOPIC, p) == ["COMMIT"], f"{TOPIC}-{p} ends with one COMMIT marker")
        log = c.log(TOPIC, p)
        expect(log.last_stable_offset == log.high_watermark == log.log_end_offset,
               f"{TOPIC}-{p}: LSO caught up with the HW")
    expect(txn_state(c, "tx-orders") == "CompleteCommit", "the coordinator ends in CompleteCommit")


# --------------------------------------------------------- 3. abort is hidden from rc
def _abort_hidden(c: Cluster) -> dict:
    p = producer(c, "producer", **{"transactional.id": "tx-orders"})
    p.init_transactions()
    p.begin_transaction()
    p.produce(TOPIC, value="aborted-1", partition=0)
    p.produce(TOPIC, value="aborted-2", partition=0)
    p.flush()
    p.abort_transaction()
    p.begin_transaction()
    p.produce(TOPIC, value="committed-1", partition=0)
    p.produce(TOPIC, value="committed-2", partition=0)
    p.commit_transaction()
    rc = assigned(c, "reader-committed", "read_committed", partitions=1)
    ru = assigned(c, "reader-uncommitted", "read_uncommitted", partitions=1)
    return {"read_committed": wait_for(rc, 2), "read_uncommitted": wait_for(ru, 4)}


def _check_abort_hidden(c: Cluster, r: dict, variant: str) -> None:
    expect(r["read_committed"] == ["committed-1", "committed-2"], f"read_committed sees only the committed "
           f"transaction: {r['read_committed']}")
    expect(r["read_uncommitted"] == ["aborted-1", "aborted-2", "committed-1", "committed-2"],
           f"read_uncommitted sees the aborted records too: {r['read_uncommitted']}")
    expect(markers(c, TOPIC, 0) == ["ABORT", "COMMIT"], "the log holds an ABORT and then a COMMIT marker")
    aborted = c.log(TOPIC, 0).txn_index.all()
    expect(len(aborted) == 1 and aborted[0].first_offset == 0, "the aborted-transaction index lists offsets 0..2")


# --------------------------------------------------- 4. an open transaction pins the LSO
def _lso_stuck(c: Cluster) -> dict:
    slow = producer(c, "slow-transaction", **{"transactional.id": "tx-slow"})
    slow.init_transactions()
    slow.begin_transaction()
    slow.produce(TOPIC, value="open-1", partition=0)
    slow.flush()
    fast = producer(c, "plain-producer")
    for v in ("plain-1", "plain-2"):
        fast.produce(TOPIC, value=v, partition=0)
    fast.flush()
    rc = assigned(c, "reader-committed", "read_committed", partitions=1)
    ru = assigned(c, "reader-uncommitted", "read_uncommitted", partitions=1)
    rc_open, ru_open = drain(rc, 1.0), drain(ru, 1.0)
    log = c.log(TOPIC, 0)
    lso_open, hw_open = log.last_stable_offset, log.high_watermark
    slow.commit_transaction()
    rc_after = wait_for(rc, 3)
    return {"read_committed_while_open": rc_open, "read_uncommitted_while_open": ru_open,
            "lso_while_open": lso_open, "hw_while_open": hw_open, "read_committed_after_commit": rc_after}


def _check_lso_stuck(c: Cluster, r: dict, variant: str) -> None:
    expect(r["lso_while_open"] == 0 and r["hw_while_open"] == 3,
           f"while the transaction is open the LSO stays at its first offset 0 (HW 3): {r}")
    expect(r["read_committed_while_open"] == [], "read_committed cannot read past the LSO, not even plain records")
    expect(r["read_uncommitted_while_open"] == ["open-1", "plain-1", "plain-2"], "read_uncommitted reads to the HW")
    expect(r["read_committed_after_commit"] == ["open-1", "plain-1", "plain-2"], "after the commit all are readable")
    log = c.log(TOPIC, 0)
    expect(log.last_stable_offset == log.high_watermark, "the LSO caught up with the HW")


# --------------------------------------------------------------- 5. zombie fencing
def _zombie_fenced(c: Cluster) -> dict:
    zombie = producer(c, "zombie", **{"transactional.id": "copier"})
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.produce(TOPIC, value="zombie-1", partition=0)
    zombie.flush()
    # The application is restarted elsewhere while the old instance still runs.
    fresh = producer(c, "new-instance", **{"transactional.id": "copier"})
    fresh.init_transactions()                  # bumps the epoch; the zombie's open transaction is aborted
    fresh.begin_transaction()
    fresh.produce(TOPIC, value="fresh-1", partition=0)
    zombie_error = None
    try:
        zombie.produce(TOPIC, value="zombie-2", partition=0)
        zombie.commit_transaction()
    except KafkaException as e:
        zombie_error = {"name": error_name(e), "code": e.args[0].code(), "fatal": e.args[0].fatal()}
    fresh.commit_transaction()
    rc = assigned(c, "reader-committed", "read_committed", partitions=1)
    return {"zombie_error": zombie_error, "read_committed": wait_for(rc, 1)}


def _check_zombie_fenced(c: Cluster, r: dict, variant: str) -> None:
    err = r["zombie_error"]
    # librdkafka (confluent-kafka) folds PRODUCER_FENCED / INVALID_PRODUCER_EPOCH into the fatal _FENCED (-144)
    expect(err is not None and err["name"] == "_FENCED" and err["fatal"],
           f"the zombie's commit is fenced (librdkafka: fatal _FENCED): {err}")
    expect(r["read_committed"] == ["fresh-1"], f"only the new instance's record is visible: {r['read_committed']}")
    expect("zombie-2" not in log_values(c, TOPIC, 0), "the zombie's late record never reached the log")
    expect(markers(c, TOPIC, 0)[:1] == ["ABORT"], "the zombie's open transaction was aborted first")
    d = c.transaction_state("copier")
    expect(d["state"] == "CompleteCommit" and d["producer_epoch"] >= 1, f"the new epoch committed: {d}")


# ------------------------------------------------- 6. coordinator dies after PrepareCommit
def _coordinator_dies(c: Cluster) -> dict:
    p = producer(c, "producer", **{"transactional.id": "tx-orders"})
    p.init_transactions()
    p.begin_transaction()
    for i in range(4):
        p.produce(TOPIC, value=f"order-{i}", partition=i % 2)
    p.flush()
    old = c.transaction_coordinator("tx-orders")
    # Lose the coordinator's first round of markers, so that the decision is durable in
    # __transaction_state (PrepareCommit) but no marker is in any log when it dies.
    leaders = {c.leader(TOPIC, 0), c.leader(TOPIC, 1)}
    c.drop_next("WriteTxnMarkers", src=old, count=len(leaders))
    p.commit_transaction()                     # answered once PrepareCommit is durable
    state_at_crash = txn_state(c, "tx-orders")
    markers_at_crash = markers(c, TOPIC, 0) + markers(c, TOPIC, 1)
    if c.broker(old).alive:                    # a person stepping the story may have crashed it already
        c.crash(old)
    rc = assigned(c, "reader-committed", "read_committed")
    seen = wait_for(rc, 4, timeout_s=60)
    return {"old_coordinator": old, "new_coordinator": c.transaction_coordinator("tx-orders"),
            "state_at_crash": state_at_crash, "markers_at_crash": markers_at_crash, "read_committed": sorted(seen)}


def _check_coordinator_dies(c: Cluster, r: dict, variant: str) -> None:
    expect(r["state_at_crash"] == "PrepareCommit" and r["markers_at_crash"] == [],
           f"the coordinator died with the decision durable and no marker written: {r}")
    expect(r["new_coordinator"] not in (r["old_coordinator"], -1), "another broker became the coordinator")
    expect(txn_state(c, "tx-orders") == "CompleteCommit", "the new coordinator finished the commit")
    expect(r["read_committed"] == [f"order-{i}" for i in range(4)], "all four records became visible")
    for p in (0, 1):
        expect(markers(c, TOPIC, p) == ["COMMIT"], f"{TOPIC}-{p} got exactly one COMMIT marker")


# ---------------------------------------------------- 7. a partition leader is down for the markers
def _marker_leader_down(c: Cluster) -> dict:
    p = producer(c, "producer", **{"transactional.id": "tx-orders"})
    p.init_transactions()
    coordinator = c.transaction_coordinator("tx-orders")
    # the partition whose leader is not the coordinator loses its leader
    victim_partition = 0 if c.leader(TOPIC, 0) != coordinator else 1
    victim = c.leader(TOPIC, victim_partition)
    p.begin_transaction()
    for i in range(4):
        p.produce(TOPIC, value=f"order-{i}", partition=i % 2)
    p.flush()
    c.delay_next("WriteTxnMarkers", ms=50, dst=victim)   # this marker is still on its way ...
    p.commit_transaction()                     # the decision is durable; the client is answered
    c.crash(victim)                            # ... when the partition's leader crashes
    rc = assigned(c, "reader-committed", "read_committed")
    right_after = drain(rc, 0.2)
    seen = right_after + wait_for(rc, 4 - len(right_after), timeout_s=60)
    c.restart(victim)
    return {"victim_broker": victim, "victim_partition": victim_partition,
            "new_leader": c.leader(TOPIC, victim_partition),
            "read_committed_right_after_commit": sorted(right_after), "read_committed": sorted(seen)}


def _check_marker_leader_down(c: Cluster, r: dict, variant: str) -> None:
    vp = r["victim_partition"]
    expect(not any(v in r["read_committed_right_after_commit"] for v in (f"order-{vp}", f"order-{vp + 2}")),
           f"right after the commit, {TOPIC}-{vp} (leader down) shows nothing to read_committed: {r}")
    expect(r["new_leader"] not in (r["victim_broker"], -1), "a new leader was elected for the partition")
    expect(r["read_committed"] == [f"order-{i}" for i in range(4)], "in the end all four records are visible")
    expect(txn_state(c, "tx-orders") == "CompleteCommit", "the coordinator completed the commit")
    for p in (0, 1):
        expect(markers(c, TOPIC, p) == ["COMMIT"], f"{TOPIC}-{p} has its COMMIT marker")


# ---------------------------------------------------------- 8. transaction timeout
def _transaction_timeout(c: Cluster) -> dict:
    p = producer(c, "slow-producer", **{"transactional.id": "tx-slow", "transaction.timeout.ms": 3000})
    p.init_transactions()
    p.begin_transaction()
    p.produce(TOPIC, value="late-1", partition=0)
    p.flush()
    rc = assigned(c, "reader-committed", "read_committed", partitions=1)
    seen_open = drain(rc, 1.0)
    c.advance(8000)                            # the application stalls longer than its transaction timeout
    state_after_stall = txn_state(c, "tx-slow")
    error = None
    try:
        p.commit_transaction()
    except KafkaException as e:
        error = {"name": error_name(e), "code": e.args[0].code(), "fatal": e.args[0].fatal()}
    return {"read_committed_while_open": seen_open, "state_after_stall": state_after_stall,
            "commit_error": error, "read_committed_after": drain(rc, 1.0)}


def _check_transaction_timeout(c: Cluster, r: dict, variant: str) -> None:
    expect(r["state_after_stall"] in ("PrepareAbort", "CompleteAbort"),
           f"the coordinator aborted the transaction on its own: {r['state_after_stall']}")
    err = r["commit_error"]
    expect(err is not None and err["name"] == "_FENCED" and err["fatal"],
           f"the late commit is rejected: the producer is fenced (librdkafka: fatal _FENCED): {err}")
    expect(r["read_committed_while_open"] == [] and r["read_committed_after"] == [],
           "read_committed never sees the timed-out record")
    expect(markers(c, TOPIC, 0) == ["ABORT"], "an ABORT marker closed the transaction")
    d = c.transaction_state("tx-slow")
    expect(d["state"] == "CompleteAbort" and d["producer_epoch"] >= 1, f"the epoch was bumped: {d}")


# ------------------------------------------------- 9. hanging transaction: classic vs TV2
def _hanging(c: Cluster) -> dict:
    # transaction.version 2 protects only a client that speaks it: Kafka's Java client 4.x does, librdkafka
    # 2.x ends every transaction the classic way, so the v2 variant's producer is a Java client
    tv2 = {"sim.client.dialect": "java"} if c.broker_config["transaction.version"] >= 2 else {}
    # it gives up on a Produce after 2 s: librdkafka waits socket.timeout.ms (or what is left of the record's
    # message.timeout.ms, if less), Kafka's Java client request.timeout.ms
    p = producer(c, "naive-producer", **{"transactional.id": "tx-hanging", "sim.naive.client": True,
                                          "socket.timeout.ms": 2000, "request.timeout.ms": 2000, **tv2})
    p.init_transactions()
    p.begin_transaction()
    c.delay_next("Produce", ms=10_000, dst=c.leader(TOPIC, 0))   # this Produce will arrive very late
    p.produce(TOPIC, value="late", partition=0)
    p.flush(5)                                 # the naive client gives up on the timed-out request
    try:
        p.commit_transaction()
        outcome = "committed"
    except KafkaException as e:
        outcome = f"commit failed: {error_name(e)}"
        p.abort_transaction()
    c.advance(12_000)                          # ... and now the delayed Produce reaches the leader
    c.advance(6_000)                           # time passes: an open transaction should not be this old
    after = producer(c, "plain-producer")
    after.produce(TOPIC, value="after-1", partition=0)
    after.flush()
    rc = assigned(c, "reader-committed", "read_committed", partitions=1)
    seen = drain(rc, 2.0)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    hanging = admin.find_hanging_transactions([TopicPartition(TOPIC, 0)], max_transaction_timeout_ms=5000)
    log = c.log(TOPIC, 0)
    return {"first_outcome": outcome, "read_committed": seen, "lso": log.last_stable_offset,
            "hw": log.high_watermark, "hanging": len(hanging)}


def _check_hanging(c: Cluster, r: dict, variant: str) -> None:
    if variant == "classic":
        expect("late" in log_values(c, TOPIC, 0), "the late Produce was appended after the ABORT marker")
        expect(r["lso"] < r["hw"], f"the LSO is stuck below the HW: {r}")
        expect(r["read_committed"] == [], f"read_committed cannot read the later plain record: {r}")
        expect(r["hanging"] == 1, "kafka-transactions find-hanging reports the hanging transaction")
    else:
        expect("late" not in log_values(c, TOPIC, 0)[1:], "the late Produce was rejected")
        expect(r["lso"] == r["hw"], f"the LSO is not stuck: {r}")
        expect(r["read_committed"] == ["after-1"], f"read_committed reads the later record: {r}")
        expect(r["hanging"] == 0, "nothing is hanging")


# ------------------------------------------------------ 10. consume-transform-produce
def _ctp_setup(c: Cluster) -> None:
    c.create_topic(TOPIC, partitions=1, replication_factor=3)
    c.create_topic("totals", partitions=1, replication_factor=3)
    seed = Producer({"bootstrap.servers": c.bootstrap, "client.id": "input-loader"})
    for i in range(6):
        seed.produce(TOPIC, value=f"{i}", partition=0)
    seed.flush()


def _ctp(c: Cluster) -> dict:
    cons = consumer(c, "copier-consumer", "read_committed", group="copier")
    cons.subscribe([TOPIC])
    prod = producer(c, "copier-producer", **{"transactional.id": "copier-0"})
    prod.init_transactions()
    batches, aborted = 0, 0
    idle = 0
    while idle < 3:
        msgs = [m for m in cons.consume(num_messages=2, timeout=1.0) if m.error() is None]
        if not msgs:
            idle += 1
            continue
        idle = 0
        prod.begin_transaction()
        for m in msgs:
            prod.produce("totals", value=f"{int(m.value()) * 10}", partition=0)
        batches += 1
        if batches == 2:                       # the application fails once: abort and rewind
            prod.flush()
            prod.abort_transaction()
            aborted += 1
            for tp in cons.committed(cons.assignment()):
                cons.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))
            continue
        prod.send_offsets_to_transaction(cons.position(cons.assignment()), cons.consumer_group_metadata())
        prod.commit_transaction()
    rc = assigned(c, "reader-committed", "read_committed", topic="totals", partitions=1)
    ru = assigned(c, "reader-uncommitted", "read_uncommitted", topic="totals", partitions=1)
    committed = cons.committed([TopicPartition(TOPIC, 0)])[0].offset
    return {"aborted_transactions": aborted, "read_committed": drain(rc), "read_uncommitted": drain(ru),
            "committed_offset": committed}


def _check_ctp(c: Cluster, r: dict, variant: str) -> None:
    want = [f"{i * 10}" for i in range(6)]
    expect(r["aborted_transactions"] == 1, "one transaction was aborted on purpose")
    expect(r["read_committed"] == want, f"read_committed sees every output exactly once: {r['read_committed']}")
    expect(len(r["read_uncommitted"]) == 8, f"read_uncommitted also sees the aborted attempt: {r['read_uncommitted']}")
    expect(r["committed_offset"] == 6, f"the group's committed offset is the end of the input: {r}")


# ------------------------------------------------------------------------ the gallery
GALLERY: dict[str, Scenario] = {s.name: s for s in [
    Scenario(
        "dropped-ack-dedup", "A lost acknowledgement, retried",
        "Two producers each send a, b, c. The broker appends the first batch, but its answer is lost and "
        "the connection breaks; each producer sees the disconnect, reconnects and sends the batch again. "
        "The idempotent producer's retry carries the same producer id and sequence numbers, so the leader "
        "recognises it.",
        "orders-0 (idempotent producer) holds a, b, c once; orders-1 (enable.idempotence=false) holds "
        "a, b, c, a, b, c.",
        _dropped_ack_dedup, _check_dropped_ack_dedup),
    Scenario(
        "commit-visible-atomically", "A commit is decided once, for every partition",
        "A transactional producer writes four records to two partitions and flushes: they are in the logs "
        "and replicated, but the transaction is open. A read_committed consumer sees nothing until the "
        "coordinator has written PrepareCommit (the decision, atomic and durable) and the COMMIT markers; "
        "each partition becomes readable when its own marker lands there, so for a moment one partition "
        "can show the transaction while the other does not yet. A read_uncommitted consumer sees the "
        "records at once.",
        "read_committed saw nothing before the commit and all four records after it; each partition ends "
        "with one COMMIT marker and its LSO equal to its HW; the coordinator is in CompleteCommit.",
        _commit_visible_atomically, _check_commit_visible_atomically),
    MARKER_LOST,
    Scenario(
        "abort-hidden-from-read-committed", "Aborted records stay in the log but are never delivered",
        "A transaction writes aborted-1, aborted-2 and is aborted; the next one writes committed-1, "
        "committed-2 and commits. Both are in orders-0.",
        "read_committed sees committed-1, committed-2; read_uncommitted sees all four; the log has an "
        "ABORT then a COMMIT marker and one entry in the aborted-transaction index.",
        _abort_hidden, _check_abort_hidden),
    Scenario(
        "lso-stuck-by-open-transaction", "One open transaction holds back every read_committed reader",
        "A transaction writes one record to orders-0 and stays open. A plain producer then writes two "
        "records after it. The Last Stable Offset cannot pass the first offset of an open transaction.",
        "While the transaction is open: LSO 0, HW 3, read_committed reads nothing (not even the plain "
        "records), read_uncommitted reads all three. After the commit read_committed reads all three.",
        _lso_stuck, _check_lso_stuck),
    Scenario(
        "zombie-fenced", "A zombie instance is fenced by its successor",
        "Instance 1 of transactional.id 'copier' opens a transaction and writes zombie-1. Instance 2 with "
        "the same transactional.id calls init_transactions(): the coordinator bumps the epoch and aborts "
        "the open transaction. The zombie then tries to write and commit with its old epoch.",
        "The zombie's commit fails with a fatal fencing error; zombie-1 is aborted; only fresh-1 (instance "
        "2, new epoch) is visible to read_committed.",
        _zombie_fenced, _check_zombie_fenced),
    Scenario(
        "coordinator-dies-after-prepare", "The coordinator dies after the decision, before the markers",
        "The producer commits. PrepareCommit is replicated in __transaction_state (the decision is "
        "durable) and the client is answered, but the coordinator's markers are lost and the coordinator "
        "crashes. A new leader of the __transaction_state partition loads it and finishes the commit.",
        "Another broker is the coordinator, the transaction is CompleteCommit, each partition has exactly "
        "one COMMIT marker and read_committed sees all four records.",
        _coordinator_dies, _check_coordinator_dies),
    Scenario(
        "marker-leader-down", "A partition leader is down when the markers go out",
        "The producer writes to two partitions and commits. The commit is decided and the client is "
        "answered, but while one COMMIT marker is still on its way, that partition's leader crashes. The "
        "marker cannot be written until the controller has elected a new leader; the coordinator retries.",
        "Right after commit_transaction() returns, the partition whose leader is down shows nothing to "
        "read_committed; once a new leader is elected its marker is written and all four are visible.",
        _marker_leader_down, _check_marker_leader_down),
    Scenario(
        "transaction-timeout-abort", "The coordinator aborts a transaction that ran too long",
        "A producer with transaction.timeout.ms=3000 writes a record and then stalls for 8 s. The "
        "coordinator's periodic check finds the transaction expired, bumps the epoch (fencing the "
        "producer) and aborts it.",
        "The coordinator is in CompleteAbort at a higher epoch, the late commit_transaction() is fenced, "
        "and read_committed never sees the record.",
        _transaction_timeout, _check_transaction_timeout,
        config={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000}),
    Scenario(
        "hanging-transaction-classic-vs-v2", "A late Produce after the abort: hanging transaction",
        "A naive client's Produce is delayed 10 s in the network; the client gives up on it and aborts. "
        "The Produce then reaches the leader after the ABORT marker. Classic protocol (transaction.version "
        "0, no partition verification): it opens a transaction that no coordinator knows about and the "
        "LSO is stuck for ever. transaction.version 2, with a client that speaks it (Kafka's Java client "
        "4.x; librdkafka 2.x ends transactions the classic way): the epoch was bumped at the abort, the late "
        "batch is rejected.",
        "classic: 'late' is in the log after the ABORT marker, LSO < HW, read_committed cannot read the "
        "later record, find-hanging reports one hanging transaction. v2: the late batch is rejected and "
        "read_committed reads 'after-1'.",
        _hanging, _check_hanging,
        variants={"classic": {"transaction.version": 0, "transaction.partition.verification.enable": False},
                  "v2": {"transaction.version": 2}}),
    Scenario(
        "consume-transform-produce", "Read, transform, write and commit offsets in one transaction",
        "A copier reads orders (0..5) with read_committed, writes value*10 to totals and commits its input "
        "offsets with send_offsets_to_transaction() in the same transaction. Its second transaction fails "
        "and is aborted; the copier rewinds to its committed offsets and does the work again.",
        "read_committed sees 0, 10, ..., 50 exactly once in totals; read_uncommitted also sees the aborted "
        "attempt; the group's committed offset is 6.",
        _ctp, _check_ctp, setup=_ctp_setup),
]}


# ------------------------------------------------------------------- the key moments of each story
# Predicates over the lab and the trace (never step numbers); ids are stable: Stepper(name, at=id).
MOMENTS = {
    "dropped-ack-dedup": (
        KeyMoment("ack-lost", "The ack for a, b, c is lost: idempotent-producer's connection breaks, it will retry",
                  narrated("idempotent-producer lost its connection to")),
        KeyMoment("dedup", "The retry carries the same sequence numbers: broker-0 recognises the duplicate",
                  narrated("duplicate of a batch already in the log")),
        KeyMoment("plain-duplicate", "The plain producer's retry is appended again: orders-1 holds a, b, c, a, b, c",
                  log_values_are(TOPIC, 1, ["a", "b", "c", "a", "b", "c"]))),
    "commit-visible-atomically": (
        KeyMoment("in-logs", "The four records are in the logs, but the transaction is open (LSO 0)",
                  all_of(log_values_are(TOPIC, 0, ["order-0", "order-2"]), log_values_are(TOPIC, 1, ["order-1", "order-3"]))),
        KeyMoment("prepare-commit", "PrepareCommit is durable in __transaction_state: the commit is decided",
                  state_is("tx-orders", "PrepareCommit")),
        KeyMoment("marker-0", "orders-0's COMMIT marker lands", marker_lands(TOPIC, 0)),
        KeyMoment("lso-0", "orders-0's LSO moves 0 → 3: read_committed may read orders-0", lso(TOPIC, 0, 3)),
        KeyMoment("complete", "The coordinator writes CompleteCommit", state_is("tx-orders", "CompleteCommit"))),
    "abort-hidden-from-read-committed": (
        KeyMoment("abort-marker", "The ABORT marker lands in orders-0", marker_lands(TOPIC, 0, "ABORT")),
        KeyMoment("commit-marker", "The second transaction's COMMIT marker lands", marker_lands(TOPIC, 0)),
        KeyMoment("rc-reads", "read_committed reads orders-0 to offset 6, skipping the aborted records",
                  reads("reader-committed", TOPIC, 0, 6))),
    "lso-stuck-by-open-transaction": (
        KeyMoment("plain-written", "Two plain records are written after the open transaction's record",
                  log_values_are(TOPIC, 0, ["open-1", "plain-1", "plain-2"])),
        KeyMoment("ru-reads", "read_uncommitted reads all three; the LSO stays at 0",
                  reads("reader-uncommitted", TOPIC, 0, 3)),
        KeyMoment("commit-marker", "The COMMIT marker lands in orders-0", marker_lands(TOPIC, 0)),
        KeyMoment("lso-moves", "orders-0's LSO moves 0 → 4: read_committed may read", lso(TOPIC, 0, 4))),
    "zombie-fenced": (
        KeyMoment("fence", "The new instance's InitProducerId bumps the epoch: the zombie's transaction is aborted",
                  state_is("copier", "PrepareAbort")),
        KeyMoment("zombie-abort-marker", "The zombie's open transaction gets its ABORT marker",
                  marker_lands(TOPIC, 0, "ABORT")),
        KeyMoment("zombie-rejected", "The zombie's next request is rejected with INVALID_PRODUCER_EPOCH",
                  narrated("zombie got the", "INVALID_PRODUCER_EPOCH")),
        KeyMoment("fresh-commit", "The new instance's COMMIT marker lands", marker_lands(TOPIC, 0))),
    "coordinator-dies-after-prepare": (
        KeyMoment("prepare-commit", "PrepareCommit is durable in __transaction_state: the commit is decided",
                  state_is("tx-orders", "PrepareCommit")),
        KeyMoment("coordinator-crash", "The coordinator crashes with no marker written", fault("crash")),
        KeyMoment("new-coordinator-markers", "The new coordinator finishes the commit: orders-0's COMMIT marker lands",
                  marker_lands(TOPIC, 0)),
        KeyMoment("complete", "CompleteCommit: every partition has its marker", state_is("tx-orders", "CompleteCommit"))),
    "marker-leader-down": (
        KeyMoment("prepare-commit", "PrepareCommit is durable: the commit is decided", state_is("tx-orders", "PrepareCommit")),
        KeyMoment("leader-crash", "A partition's leader crashes before its COMMIT marker arrives", fault("crash")),
        KeyMoment("new-leader", "The controller elects a new leader for the partition",
                  narrated("session of broker", "expires")),
        KeyMoment("complete", "The retried marker lands on the new leader: CompleteCommit",
                  state_is("tx-orders", "CompleteCommit"))),
    "transaction-timeout-abort": (
        KeyMoment("timed-out", "The coordinator finds the transaction older than its timeout and aborts it",
                  narrated("longer than its transaction.timeout.ms")),
        KeyMoment("abort-marker", "The ABORT marker lands in orders-0", marker_lands(TOPIC, 0, "ABORT")),
        KeyMoment("late-commit-fenced", "The late commit is answered PRODUCER_FENCED",
                  narrated("slow-producer got the EndTxn response", "PRODUCER_FENCED"))),
    "hanging-transaction-classic-vs-v2": (
        KeyMoment("abort-marker", "The client gives up and aborts: the ABORT marker lands", marker_lands(TOPIC, 0, "ABORT")),
        KeyMoment("late-produce", "The delayed Produce reaches the leader after the ABORT marker",
                  narrated("broker-0 got Produce from naive-producer")),
        KeyMoment("plain-after", "A plain record is written after it: can read_committed reach it?",
                  narrated("broker-0 got Produce from plain-producer"))),
    "consume-transform-produce": (
        KeyMoment("first-prepare", "The first transaction (outputs and input offsets) is decided: PrepareCommit",
                  state_is("copier-0", "PrepareCommit")),
        KeyMoment("first-commit", "Its COMMIT markers land in totals-0 and __consumer_offsets", marker_lands("totals", 0)),
        KeyMoment("abort", "The second transaction fails: its ABORT marker lands in totals-0",
                  marker_lands("totals", 0, "ABORT")),
        KeyMoment("rewind", "The copier rewinds to its committed offset 2 and does the work again",
                  narrated("copier-consumer got the OffsetFetch response", "orders-0=2"))),
}
# the stories with a consume-transform-produce application: its group, input, output and output -> input mapping
PIPELINES = {"consume-transform-produce": Pipeline("copier", TOPIC, "totals", lambda v: str(int(v) // 10))}
GALLERY = {name: replace(sc, moments=MOMENTS.get(name, sc.moments), pipeline=PIPELINES.get(name))
           for name, sc in GALLERY.items()}
