"""Scenarios on a single broker (transaction.version 2), written once against confluent-kafka's API.  Each
takes a backend ``b`` and an ``Observer`` ``o`` and records what a user would check."""
from __future__ import annotations

from .harness import (committed, committed_epochs, copier_consumer, fill, group_consumer, in_transaction, new_topic,
                      produce, scenario, txn_producer)


@scenario()
def idempotent_producer_in_order(b, o):
    t = new_topic(b, "idem")
    p = b.Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True})
    reports: list = []
    produce(p, t, [f"v{i}" for i in range(8)], reports=reports)
    o["delivery.offsets"] = reports
    o.read("log", t, isolation="read_uncommitted")
    o.read("log", t)
    o.producers("describe_producers", t)


@scenario()
def plain_producer_read_committed_sees_all(b, o):
    t = new_topic(b, "plain")
    fill(b, t, ["a", "b", "c"])
    o.read_both("log", t)


@scenario()
def commit_shows_records_and_marker(b, o):
    t, tid = new_topic(b, "commit"), b.unique("tx")
    p = txn_producer(b, tid)
    o.call("init", p.init_transactions, 30)
    o.call("begin", p.begin_transaction)
    produce(p, t, ["a", "b", "c"])
    o.call("commit", p.commit_transaction, 30)
    o.read_both("log", t)


@scenario()
def abort_hides_data_from_read_committed(b, o):
    t, tid = new_topic(b, "abort"), b.unique("tx")
    p = in_transaction(b, tid)
    produce(p, t, ["x", "y", "z"])
    o.call("abort", p.abort_transaction, 30)
    o.read_both("log", t)


@scenario()
def commit_abort_commit_offsets(b, o):
    t, tid = new_topic(b, "cac"), b.unique("tx")
    p = txn_producer(b, tid)
    p.init_transactions(30)
    for i, end in enumerate((p.commit_transaction, p.abort_transaction, p.commit_transaction)):
        p.begin_transaction()
        produce(p, t, [f"t{i}a", f"t{i}b"])
        o.call(f"end{i}", end, 30)
    o.read_both("log", t)


@scenario()
def open_transaction_pins_the_lso(b, o):
    t, tid = new_topic(b, "pin"), b.unique("tx")
    p = in_transaction(b, tid)
    produce(p, t, ["open1", "open2"])
    fill(b, t, ["after"])
    o.read_both("open", t)
    o.producers("open.describe_producers", t)
    o.call("commit", p.commit_transaction, 30)
    o.read("committed", t)


@scenario()
def two_producers_interleaved(b, o):
    t = new_topic(b, "inter")
    pa, pb = txn_producer(b, b.unique("txa")), txn_producer(b, b.unique("txb"))
    pa.init_transactions(30)
    pb.init_transactions(30)
    pa.begin_transaction()
    pb.begin_transaction()
    produce(pa, t, ["a1"])
    produce(pb, t, ["b1"])
    produce(pa, t, ["a2"])
    o.call("b.commit", pb.commit_transaction, 30)
    o.read("mid", t)
    o.call("a.abort", pa.abort_transaction, 30)
    o.read_both("end", t)


@scenario()
def zombie_fenced_by_second_init(b, o):
    t, tid = new_topic(b, "zombie"), b.unique("tx")
    zombie = in_transaction(b, tid)
    produce(zombie, t, ["zombie1"])
    fresh = txn_producer(b, tid)
    o.call("fresh.init", fresh.init_transactions, 30)
    o.call("zombie.commit", zombie.commit_transaction, 30)
    o.call("zombie.abort", zombie.abort_transaction, 30)
    o.call("zombie.begin", zombie.begin_transaction)
    o.call("fresh.begin", fresh.begin_transaction)
    produce(fresh, t, ["fresh1"])
    o.call("fresh.commit", fresh.commit_transaction, 30)
    o.read_both("log", t)
    o.transactions("describe", tid)


@scenario()
def zombie_produce_after_fence(b, o):
    t, tid = new_topic(b, "zprod"), b.unique("tx")
    zombie = in_transaction(b, tid)
    fresh = txn_producer(b, tid)
    fresh.init_transactions(30)
    reports: list = []
    o.call("zombie.produce", produce, zombie, t, ["late"], 0, reports)
    o["zombie.delivery"] = reports
    o.call("zombie.commit", zombie.commit_transaction, 30)
    o.read("log", t, isolation="read_uncommitted")


@scenario()
def init_after_abandoned_transaction_aborts_it(b, o):
    t, tid = new_topic(b, "abandon"), b.unique("tx")
    first = in_transaction(b, tid)
    produce(first, t, ["lost1", "lost2"])
    second = txn_producer(b, tid)
    o.call("second.init", second.init_transactions, 30)
    o.read_both("log", t)
    o.transactions("describe", tid)


def _consume_then_send_offsets(b, o, values: list, upper: bool, observe_consumed: bool):
    """Consumes the first three of ``values`` at most from a new input topic, read_committed; writes them in a
    transaction to a new output topic; sends the consumer's position as the group's offsets in the transaction
    (observed).  Returns the input topic, the output topic, the consumer and the producer."""
    src, dst, tid, group = new_topic(b, "in"), new_topic(b, "out"), b.unique("tx"), b.unique("g")
    fill(b, src, values)
    c = copier_consumer(b, group, src)
    msgs = c.consume(min(len(values), 3), 10)
    if observe_consumed:
        o["consumed"] = [m.offset() for m in msgs if not m.error()]
    p = in_transaction(b, tid)
    produce(p, dst, [m.value().upper() if upper else m.value() for m in msgs])
    o.call("send_offsets", p.send_offsets_to_transaction, c.position(c.assignment()), c.consumer_group_metadata(),
           30)
    return src, dst, c, p


@scenario()
def send_offsets_then_commit(b, o):
    src, dst, c, p = _consume_then_send_offsets(b, o, ["m0", "m1", "m2", "m3"], upper=True, observe_consumed=True)
    o.call("commit", p.commit_transaction, 30)
    o["committed"] = committed(b, c, src)
    o["committed.leader_epoch"] = committed_epochs(b, c, src)
    c.close()
    o.read("out", dst)


@scenario()
def send_offsets_then_abort(b, o):
    src, dst, c, p = _consume_then_send_offsets(b, o, ["m0", "m1"], upper=False, observe_consumed=False)
    o.call("abort", p.abort_transaction, 30)
    o["committed"] = committed(b, c, src)
    c.close()
    o.read_both("out", dst)


@scenario()
def plain_consumer_commit_and_committed(b, o):
    t, group = new_topic(b, "grp"), b.unique("g")
    fill(b, t, ["a", "b", "c"])
    c = group_consumer(b, group, t, **{"auto.offset.reset": "earliest"})
    msgs = c.consume(2, 10)
    o["consumed"] = [m.offset() for m in msgs]
    o.call("commit", c.commit, message=msgs[-1], asynchronous=False)
    o["committed"] = committed(b, c, t)
    o["committed.leader_epoch"] = committed_epochs(b, c, t)
    o["position"] = [tp.offset for tp in c.position([b.TopicPartition(t, 0)])]
    o["position.leader_epoch"] = [tp.leader_epoch for tp in c.position([b.TopicPartition(t, 0)])]
    c.close()


@scenario()
def transaction_timeout_aborts(b, o):
    t, tid = new_topic(b, "timeout"), b.unique("tx")
    p = txn_producer(b, tid, **{"transaction.timeout.ms": 2000})
    o.call("init", p.init_transactions, 30)
    p.begin_transaction()
    produce(p, t, ["slow1"])
    b.sleep(5)
    o.read_both("expired", t)
    o.transactions("describe", tid)
    o.call("commit", p.commit_transaction, 30)
    o.call("abort", p.abort_transaction, 30)


@scenario()
def transaction_max_timeout_violation(b, o):
    tid = b.unique("tx")
    p = txn_producer(b, tid, **{"transaction.timeout.ms": 1_000_000})
    o.call("init", p.init_transactions, 30)
    o.call("begin", p.begin_transaction)


@scenario()
def commit_without_begin(b, o):
    p = txn_producer(b, b.unique("tx"))
    p.init_transactions(30)
    o.call("commit", p.commit_transaction, 10)
    o.call("abort", p.abort_transaction, 10)


@scenario()
def begin_twice(b, o):
    p = txn_producer(b, b.unique("tx"))
    p.init_transactions(30)
    o.call("begin1", p.begin_transaction)
    o.call("begin2", p.begin_transaction)


@scenario()
def begin_before_init(b, o):
    p = txn_producer(b, b.unique("tx"))
    o.call("begin", p.begin_transaction)
    o.call("init", p.init_transactions, 30)


@scenario()
def produce_outside_transaction(b, o):
    t = new_topic(b, "outside")
    p = txn_producer(b, b.unique("tx"))
    p.init_transactions(30)
    o.call("produce", p.produce, t, value=b"x", partition=0)
    o.call("flush", p.flush, 10)
    o.read("log", t, isolation="read_uncommitted")


@scenario()
def init_twice(b, o):
    p = txn_producer(b, b.unique("tx"))
    o.call("init1", p.init_transactions, 30)
    o.call("init2", p.init_transactions, 30)


@scenario()
def empty_transactions_write_no_marker(b, o):
    t, tid = new_topic(b, "empty"), b.unique("tx")
    p = in_transaction(b, tid)
    o.call("commit", p.commit_transaction, 30)
    p.begin_transaction()
    o.call("abort", p.abort_transaction, 30)
    o.read("log", t, isolation="read_uncommitted")
    o.transactions("describe", tid)


@scenario()
def multi_partition_commit_is_atomic(b, o):
    t, tid = new_topic(b, "multi", 3), b.unique("tx")
    p = in_transaction(b, tid)
    for part in range(3):
        produce(p, t, [f"p{part}a", f"p{part}b"], partition=part)
    o.transactions("ongoing", tid)
    o.call("commit", p.commit_transaction, 30)
    for part in range(3):
        o.read(f"p{part}", t, part)


@scenario()
def multi_partition_abort(b, o):
    t, tid = new_topic(b, "multiab", 3), b.unique("tx")
    p = in_transaction(b, tid)
    for part in (0, 2):
        produce(p, t, [f"p{part}"], partition=part)
    o.call("abort", p.abort_transaction, 30)
    for part in range(3):
        o.read(f"p{part}", t, part)
        o.read(f"p{part}", t, part, isolation="read_uncommitted")


@scenario()
def describe_transactions_lifecycle(b, o):
    t, tid = new_topic(b, "life"), b.unique("tx")
    o.transactions("unknown", tid)
    p = txn_producer(b, tid, **{"transaction.timeout.ms": 30000})
    p.init_transactions(30)
    o.transactions("after_init", tid)
    p.begin_transaction()
    produce(p, t, ["a"])
    o.transactions("ongoing", tid)
    p.commit_transaction(30)
    o.transactions("after_commit", tid)
    p.begin_transaction()
    produce(p, t, ["b"])
    p.abort_transaction(30)
    o.transactions("after_abort", tid)


@scenario()
def list_transactions_shows_ids(b, o):
    t = new_topic(b, "list")
    tids = [b.unique(f"lt{i}") for i in range(2)]
    ps = [txn_producer(b, tid) for tid in tids]
    for p in ps:
        p.init_transactions(30)
    ps[0].begin_transaction()
    produce(ps[0], t, ["open"])
    rows = [r for r in b.list_transactions() if r["transactional_id"] in tids]
    o["listed"] = sorted([r["transactional_id"].rsplit("-", 1)[0], o.pid(r["producer_id"]), r["state"]]
                         for r in rows)
    ps[0].abort_transaction(30)


@scenario()
def epochs_across_transactions(b, o):
    """transaction.version 2: with a client that speaks EndTxn v5 the epoch goes up on every transaction; what
    a librdkafka client gets is recorded here (DescribeTransactions and DescribeProducers after each)."""
    t, tid = new_topic(b, "epochs"), b.unique("tx")
    p = txn_producer(b, tid)
    p.init_transactions(30)
    for i in range(3):
        p.begin_transaction()
        produce(p, t, [f"t{i}"])
        p.commit_transaction(30) if i != 1 else p.abort_transaction(30)
        o.transactions(f"after{i}", tid)
        o.producers(f"after{i}.producers", t)
    o.read("log", t)


@scenario()
def hanging_transaction_admin_abort(b, o):
    t, tid = new_topic(b, "hang"), b.unique("tx")
    p = in_transaction(b, tid)
    produce(p, t, ["h1", "h2"])
    o.read("before", t)
    aborted = b.abort_hanging(t, 0)
    o["aborted"] = None if aborted is None else [o.pid(aborted["producer_id"]), aborted["producer_epoch"],
                                                 aborted["current_transaction_start_offset"]]
    o.read_both("after", t)
    o.producers("after.producers", t)
    o.transactions("coordinator_view", tid)


@scenario()
def send_offsets_outside_transaction(b, o):
    t, group = new_topic(b, "sotx"), b.unique("g")
    c = group_consumer(b, group)
    p = txn_producer(b, b.unique("tx"))
    p.init_transactions(30)
    o.call("send_offsets", p.send_offsets_to_transaction, [b.TopicPartition(t, 0, 1)],
           c.consumer_group_metadata(), 10)
    c.close()


@scenario()
def pending_offsets_are_not_stable(b, o):
    src, tid, group = new_topic(b, "stable"), b.unique("tx"), b.unique("g")
    c = group_consumer(b, group)
    p = in_transaction(b, tid)
    produce(p, src, ["x"])
    o.call("send_offsets", p.send_offsets_to_transaction, [b.TopicPartition(src, 0, 1)],
           c.consumer_group_metadata(), 30)
    c.close()
    rc = group_consumer(b, group, **{"isolation.level": "read_uncommitted"})
    o["ru.committed.pending"] = committed(b, rc, src)
    rc.close()
    o.call("commit", p.commit_transaction, 30)
    rc = group_consumer(b, group, **{"isolation.level": "read_committed"})
    o["rc.committed.after"] = committed(b, rc, src)
    rc.close()


@scenario()
def transactional_copier(b, o):
    src, dst, tid, group = new_topic(b, "cin"), new_topic(b, "cout"), b.unique("tx"), b.unique("g")
    fill(b, src, [f"e{i}" for i in range(6)])
    c = copier_consumer(b, group, src)
    p = txn_producer(b, tid)
    p.init_transactions(30)
    copied = 0
    while copied < 6:
        batch = [m for m in c.consume(2, 10) if not m.error()]
        if not batch:
            break
        p.begin_transaction()
        produce(p, dst, [m.value().upper() for m in batch])
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        copied += len(batch)
    o["copied"] = copied
    o["committed"] = committed(b, c, src)
    c.close()
    o.read("out", dst)
