"""Scenarios on a single broker (transaction.version 2) where consumer groups meet transactions (KIP-447 and the
group coordinator): a stale generation's or a departed member's metadata in TxnOffsetCommit, a replaced static
member, a new member that starts while a transaction holds offsets of its group, plain commits mixed with
transactional ones, read_committed reads whose aborted ranges span many fetch responses, and an offsets write
too large for __consumer_offsets.

Everything observed is settled before it is read (a group is polled until its assignment is the one wanted, a
read waits for the partition's end), so nothing here depends on timing.  Which member gets which partition
depends on member ids (random on Kafka), so only the sizes of assignments are observed."""
from __future__ import annotations

from .harness import (call, committed, err_sig, fill, group_consumer, in_transaction, new_topic, produce, scenario,
                      txn_producer)

# librdkafka notices a rebalance at its next heartbeat: short intervals keep the scenarios quick on every side
MEMBER = {"session.timeout.ms": 10000, "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest"}


def _member(b, group: str, topic: str, **extra):
    c = group_consumer(b, group, **MEMBER, **extra)
    c.subscribe([topic])
    return c


def _poll_until(b, consumers: list, done, seconds: float = 60) -> bool:
    """Polls every consumer in turn (a member only takes part in a rebalance from its poll) until ``done()``;
    returns whether it came within ``seconds`` (at most) of polls."""
    for _ in range(int(seconds / 0.1) + 1):
        for c in consumers:
            c.poll(0.1)
        if done():
            return True
    return False


def _sizes(*consumers) -> list:
    return sorted(len(c.assignment()) for c in consumers)


def _committed_or_error(b, c, topic: str, partition: int = 0, timeout: float = 10):
    """``committed()`` of one partition: its offset, or the error's signature."""
    try:
        return [tp.offset for tp in c.committed([b.TopicPartition(topic, partition)], timeout)]
    except b.KafkaException as e:
        return err_sig(e)


def _send_offsets(b, o, key: str, tid: str, out: str, offsets: list, metadata, end: str = "commit"):
    """A transaction of ``tid`` that writes one record to ``out`` and sends ``offsets`` with ``metadata``: the
    outcome of send_offsets_to_transaction and of ``end`` (commit, or abort) are observed; a commit refused with
    an abortable error is followed by an abort (observed too)."""
    p = in_transaction(b, tid)
    produce(p, out, [key])
    o.call(f"{key}.send_offsets", p.send_offsets_to_transaction, offsets, metadata, 30)
    if end == "commit":
        r = o.call(f"{key}.commit", p.commit_transaction, 30)
        if r != "ok":
            o.call(f"{key}.abort", p.abort_transaction, 30)
    else:
        o.call(f"{key}.abort", p.abort_transaction, 30)
    b.settle()                  # the markers (also the one in __consumer_offsets) land after EndTxn is answered
    return p


@scenario()
def stale_generation_offsets_refused(b, o):
    """KIP-447: a transaction sending offsets with the group metadata of an older generation (taken before a
    second member joined) is refused ILLEGAL_GENERATION, abortable; with the member's current metadata it commits;
    once the member has left, its metadata is UNKNOWN_MEMBER_ID.  The group's offsets show only the commits."""
    src, out, group, tid = new_topic(b, "gsrc", 2), new_topic(b, "gout"), b.unique("g"), b.unique("tx")
    fill(b, src, ["s0", "s1", "s2"], 0)
    ca = _member(b, group, src)
    o["a.joined"] = _poll_until(b, [ca], lambda: len(ca.assignment()) == 2)
    old = ca.consumer_group_metadata()
    cb = _member(b, group, src)
    o["ab.rebalanced"] = _poll_until(b, [ca, cb], lambda: _sizes(ca, cb) == [1, 1])
    o["ab.sizes"] = _sizes(ca, cb)
    _send_offsets(b, o, "old_generation", tid, out, [b.TopicPartition(src, 0, 1)], old)
    _send_offsets(b, o, "current", tid, out, [b.TopicPartition(src, 0, 2)], ca.consumer_group_metadata())
    current_a = ca.consumer_group_metadata()
    ca.close()
    o["b.alone"] = _poll_until(b, [cb], lambda: len(cb.assignment()) == 2)
    _send_offsets(b, o, "departed", tid, out, [b.TopicPartition(src, 0, 3)], current_a)
    _send_offsets(b, o, "survivor", tid, out, [b.TopicPartition(src, 1, 4)], cb.consumer_group_metadata())
    cb.close()
    reader = group_consumer(b, group, **{"isolation.level": "read_committed"})
    o["committed"] = [_committed_or_error(b, reader, src, part) for part in (0, 1)]
    reader.close()
    o.read_both("out", out)


@scenario()
def static_member_replaced_is_fenced(b, o):
    """Static membership (group.instance.id): a second consumer with the same instance id takes the member's
    place; the first one's group metadata is then FENCED_INSTANCE_ID in TxnOffsetCommit, the new one's commits."""
    src, out, group, tid = new_topic(b, "ssrc"), new_topic(b, "sout"), b.unique("g"), b.unique("tx")
    instance = b.unique("inst")
    first = _member(b, group, src, **{"group.instance.id": instance})
    o["first.joined"] = _poll_until(b, [first], lambda: len(first.assignment()) == 1)
    _send_offsets(b, o, "first", tid, out, [b.TopicPartition(src, 0, 1)], first.consumer_group_metadata())
    old = first.consumer_group_metadata()
    second = _member(b, group, src, **{"group.instance.id": instance})
    o["second.joined"] = _poll_until(b, [second], lambda: len(second.assignment()) == 1)
    _send_offsets(b, o, "replaced", tid, out, [b.TopicPartition(src, 0, 2)], old)
    _send_offsets(b, o, "replacement", tid, out, [b.TopicPartition(src, 0, 3)], second.consumer_group_metadata())
    reader = group_consumer(b, group, **{"isolation.level": "read_committed"})
    o["committed"] = _committed_or_error(b, reader, src)
    reader.close()
    second.close()
    call(b, first.close)          # fenced: what its close says depends on whether it noticed: not observed
    o.read("out", out)


@scenario()
def new_member_waits_for_pending_offsets(b, o):
    """KIP-447 on the consuming side: while a transaction holds offsets of the group for partition 0, a
    read_committed consumer's committed() of that partition cannot answer (UNSTABLE_OFFSET_COMMIT is retried until
    the call's timeout) but that of partition 1 answers; a member that joins then fetches nothing until the
    transaction commits, and starts from the committed offsets."""
    src, out, group, tid = new_topic(b, "psrc", 2), new_topic(b, "pout"), b.unique("g"), b.unique("tx")
    fill(b, src, ["a0", "a1", "a2", "a3"], 0)
    fill(b, src, ["b0", "b1", "b2"], 1)
    seed = group_consumer(b, group)
    o.call("seed.commit", seed.commit, offsets=[b.TopicPartition(src, 0, 1), b.TopicPartition(src, 1, 1)],
           asynchronous=False)
    p = in_transaction(b, tid)
    produce(p, out, ["copied"])
    o.call("send_offsets", p.send_offsets_to_transaction, [b.TopicPartition(src, 0, 3)],
           seed.consumer_group_metadata(), 30)
    seed.close()
    rc = group_consumer(b, group, **{"isolation.level": "read_committed"})
    o["rc.committed.p0.pending"] = _committed_or_error(b, rc, src, 0, timeout=3)
    o["rc.committed.p1.pending"] = _committed_or_error(b, rc, src, 1)
    rc.close()
    ru = group_consumer(b, group, **{"isolation.level": "read_uncommitted"})
    o["ru.committed.p0.pending"] = _committed_or_error(b, ru, src, 0)
    ru.close()
    member = _member(b, group, src, **{"isolation.level": "read_committed"})
    got: list = []

    def take() -> bool:
        m = member.poll(0.1)
        if m is not None and not m.error():
            got.append([m.partition(), m.offset(), m.value().decode()])
        return len(member.assignment()) == 2
    o["member.joined"] = _poll_until(b, [], take)
    for _ in range(30):             # three seconds of polls while the offsets are pending
        take()
    o["member.while_pending"] = sorted(got)
    o.call("commit", p.commit_transaction, 30)
    for _ in range(600):
        take()
        if len(got) >= 3:
            break
    o["member.after_commit"] = sorted(got)
    member.close()


@scenario()
def plain_commit_after_pending_txn_offsets(b, o):
    """The group coordinator keeps the most recent commit when plain and transactional commits of one partition
    mix: a plain commit written after a transaction's pending offsets survives that transaction's commit (Kafka's
    OffsetMetadataManager compares the commits' record offsets in __consumer_offsets); one written before is
    replaced by it; an abort leaves the plain commit in place."""
    src, out, group, tid = new_topic(b, "msrc"), new_topic(b, "mout"), b.unique("g"), b.unique("tx")
    plain = group_consumer(b, group)
    ru = group_consumer(b, group, **{"isolation.level": "read_uncommitted"})

    def commit_plain(key: str, offset: int) -> None:
        o.call(key, plain.commit, offsets=[b.TopicPartition(src, 0, offset)], asynchronous=False)
    commit_plain("plain1", 1)
    for i, (txn_offset, plain_offset, end) in enumerate(((5, 2, "commit"), (7, 3, "abort"))):
        p = in_transaction(b, tid)
        produce(p, out, [f"t{i}"])
        o.call(f"t{i}.send_offsets", p.send_offsets_to_transaction, [b.TopicPartition(src, 0, txn_offset)],
               plain.consumer_group_metadata(), 30)
        commit_plain(f"t{i}.plain", plain_offset)
        o[f"t{i}.ru.committed.pending"] = committed(b, ru, src)
        o.call(f"t{i}.{end}", p.commit_transaction if end == "commit" else p.abort_transaction, 30)
        b.settle()
        o[f"t{i}.ru.committed.after"] = committed(b, ru, src)
    commit_plain("plain4", 4)
    p = in_transaction(b, tid)
    produce(p, out, ["t2"])
    o.call("t2.send_offsets", p.send_offsets_to_transaction, [b.TopicPartition(src, 0, 6)],
           plain.consumer_group_metadata(), 30)
    o.call("t2.commit", p.commit_transaction, 30)
    b.settle()
    rc = group_consumer(b, group, **{"isolation.level": "read_committed"})
    o["rc.committed.end"] = committed(b, rc, src)
    for c in (rc, ru, plain):
        c.close()
    o.read("out", out)


TINY_FETCH = {"max.partition.fetch.bytes": 1, "fetch.max.bytes": 1000, "message.max.bytes": 1000}


@scenario()
def interleaved_aborts_tiny_fetches(b, o):
    """Two transactional producers and a plain one interleave on one partition, one batch per record; committed
    and aborted transactions overlap.  read_committed consumers whose fetches return one batch at a time (the
    aborted ranges then span many fetch responses, with each response's AbortedTransactions) must read exactly
    what a consumer with the default fetch size reads."""
    t = new_topic(b, "tiny")
    a, c = txn_producer(b, b.unique("txa")), txn_producer(b, b.unique("txb"))
    plain = b.Producer({"bootstrap.servers": b.bootstrap})
    a.init_transactions(30)
    c.init_transactions(30)
    steps = [(a.begin_transaction,), (a, "a1"), (c.begin_transaction,), (c, "b1"), (a, "a2"), (plain, "n1"),
             (c, "b2"), (c.abort_transaction, 30), (a, "a3"), (c.begin_transaction,), (c, "b3"),
             (a.commit_transaction, 30), (a.begin_transaction,), (a, "a4"), (plain, "n2"), (c, "b4"),
             (c.commit_transaction, 30), (a, "a5"), (a.abort_transaction, 30), (plain, "n3")]
    ends = []
    for step in steps:
        if callable(step[0]):
            ends.append(call(b, *step))
            b.settle()          # Kafka answers EndTxn before its markers land: where they land would be a race
        else:
            produce(step[0], t, [step[1]])
    o["ends"] = ends
    o.read("default", t)
    o.read("tiny", t, config=TINY_FETCH)
    o.read("tiny", t, isolation="read_uncommitted", config=TINY_FETCH)


@scenario()
def deleted_group_metadata_refused(b, o):
    """A member's group metadata outlives its group: once the member has left (the group is Empty) a
    TxnOffsetCommit carrying it is UNKNOWN_MEMBER_ID; once the group is deleted, Kafka's group coordinator answers
    a TxnOffsetCommit of a generation >= 0 for a group it does not know ILLEGAL_GENERATION, and one of generation
    -1 (a consumer without a subscription) creates the group and commits."""
    src, out, group, tid = new_topic(b, "dsrc"), new_topic(b, "dout"), b.unique("g"), b.unique("tx")
    member = _member(b, group, src)
    o["member.joined"] = _poll_until(b, [member], lambda: len(member.assignment()) == 1)
    left = member.consumer_group_metadata()
    member.close()
    _send_offsets(b, o, "empty_group", tid, out, [b.TopicPartition(src, 0, 1)], left)
    o["delete"] = call(b, b.delete_group, group)
    _send_offsets(b, o, "deleted_group", tid, out, [b.TopicPartition(src, 0, 2)], left)
    simple = group_consumer(b, group)
    _send_offsets(b, o, "simple", tid, out, [b.TopicPartition(src, 0, 3)], simple.consumer_group_metadata())
    o["committed"] = _committed_or_error(b, simple, src)
    simple.close()
    o["delete_again.with_offsets"] = call(b, b.delete_group, group)
    o.read("out", out)


@scenario()
def offsets_for_unknown_partitions(b, o):
    """Offsets for a partition or a topic that does not exist: Kafka's broker answers those partitions
    UNKNOWN_TOPIC_OR_PARTITION before the group coordinator sees them (KafkaApis.handleTxnOffsetCommitRequest /
    handleOffsetCommitRequest) and commits the others; librdkafka retries a TxnOffsetCommit so answered until the
    call's timeout, then the transaction must abort."""
    src, out, group, tid = new_topic(b, "usrc"), new_topic(b, "uout"), b.unique("g"), b.unique("tx")
    c = group_consumer(b, group)
    o.call("plain.unknown_partition", c.commit, offsets=[b.TopicPartition(src, 0, 1), b.TopicPartition(src, 5, 1)],
           asynchronous=False)
    o["plain.committed"] = _committed_or_error(b, c, src)
    o.call("plain.unknown_topic", c.commit, offsets=[b.TopicPartition(b.unique("nosuch"), 0, 1)], asynchronous=False)
    p = in_transaction(b, tid)
    produce(p, out, ["x"])
    o.call("txn.send_offsets", p.send_offsets_to_transaction,
           [b.TopicPartition(src, 0, 2), b.TopicPartition(src, 5, 2)], c.consumer_group_metadata(), 3)
    o.call("txn.commit", p.commit_transaction, 30)
    o.call("txn.abort", p.abort_transaction, 30)
    b.settle()
    o["txn.committed"] = _committed_or_error(b, c, src)
    p.begin_transaction()
    produce(p, out, ["y"])
    o.call("txn2.send_offsets", p.send_offsets_to_transaction, [b.TopicPartition(src, 0, 3)],
           c.consumer_group_metadata(), 30)
    o.call("txn2.commit", p.commit_transaction, 30)
    b.settle()
    o["txn2.committed"] = _committed_or_error(b, c, src)
    c.close()
    o.read("out", out)


@scenario()
def offsets_write_too_large_for_the_log(b, o):
    """A commit whose record is larger than __consumer_offsets' max.message.bytes (its metadata within
    offset.metadata.max.bytes, 4096): Kafka 4.1.1's group coordinator fails the write and answers it through
    CoordinatorOperationExceptionHelper.handleOperationException, UNKNOWN_SERVER_ERROR (Kafka's Scala coordinator
    said INVALID_COMMIT_OFFSET_SIZE).  The topic's setting is put back before the scenario ends."""
    src, group = new_topic(b, "bigmeta"), b.unique("g")
    c = group_consumer(b, group)
    o.call("commit.small", c.commit, offsets=[b.TopicPartition(src, 0, 1)], asynchronous=False)  # (__consumer_offsets exists)
    b.alter_topic_config("__consumer_offsets", "max.message.bytes", "600")
    b.sleep(1)                  # (a broker applies a topic's new configs from the metadata log)
    try:
        o.call("commit.too_large", c.commit, offsets=[b.TopicPartition(src, 0, 2, metadata="x" * 2000)],
               asynchronous=False)
        o["committed.after_refusal"] = _committed_or_error(b, c, src)
    finally:
        b.alter_topic_config("__consumer_offsets", "max.message.bytes", None)
    b.sleep(1)
    o.call("commit.after_reset", c.commit, offsets=[b.TopicPartition(src, 0, 3, metadata="x" * 2000)],
           asynchronous=False)
    o["committed"] = _committed_or_error(b, c, src)
    c.close()
