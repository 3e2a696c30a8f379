"""Scenarios on a single broker (transaction.version 2): errors a transactional application meets inside a
transaction, observed as the application sees them: the delivery reports, the error and its classes at each
call (commit, produce, send_offsets_to_transaction after the failure), what the coordinator says of the
transaction meanwhile (DescribeTransactions), what read_committed and read_uncommitted consumers read, and that
the producer goes on (abort, then a next transaction commits)."""
from __future__ import annotations

from .harness import group_consumer, in_transaction, new_topic, produce, scenario

TOO_LARGE = "x" * 4000          # larger than the 1024 bytes of max.message.bytes given to the topic


def _go_on(b, o, p, topic: str) -> None:
    """After an abort: a next transaction on the same producer writes a record to ``topic`` and commits; if
    that commit fails, the transaction is aborted and a third one tries again (each step observed)."""
    for attempt in ("next", "third"):
        o.call(f"{attempt}.begin", p.begin_transaction)
        reports: list = []
        if o.call(f"{attempt}.produce", produce, p, topic, [attempt], 0, reports) != "ok":
            return
        o[f"{attempt}.delivery"] = reports
        if o.call(f"{attempt}.commit", p.commit_transaction, 30) == "ok":
            return
        o.call(f"{attempt}.abort", p.abort_transaction, 30)


@scenario()
def txn_record_too_large(b, o):
    """A record larger than the topic's max.message.bytes: the broker refuses its batch (MESSAGE_TOO_LARGE),
    the delivery report says so and the transaction can only abort: the commit raises the abortable error, a
    produce in that state is refused (_STATE), the coordinator still has the transaction Ongoing; the abort
    succeeds.  librdkafka keeps numbering past the failed batch, so the next transaction's record skips a
    sequence: OUT_OF_ORDER_SEQUENCE_NUMBER, abortable, and the abort bumps the epoch (KIP-360); the third
    transaction commits."""
    t, tid = new_topic(b, "big", config={"max.message.bytes": "1024"}), b.unique("tx")
    p = in_transaction(b, tid)
    reports: list = []
    produce(p, t, ["small"], reports=reports)
    produce(p, t, [TOO_LARGE], reports=reports)
    o["delivery"] = reports
    o.transactions("failed", tid)
    o.call("produce.after", p.produce, t, value=b"late", partition=0)
    o.call("commit", p.commit_transaction, 30)
    o.call("commit.again", p.commit_transaction, 30)
    o.read_both("before_abort", t)
    o.call("abort", p.abort_transaction, 30)
    o.transactions("aborted", tid)
    _go_on(b, o, p, t)
    o.read_both("log", t)
    o.producers("producers", t)


@scenario()
def txn_send_offsets_after_failure(b, o):
    """send_offsets_to_transaction while the transaction is in an abortable error state (a record refused as
    too large) raises that error; the group's offsets stay uncommitted after the abort.  The failed batch was the
    partition's first: the next transaction's record (sequence 1) is refused OUT_OF_ORDER_SEQUENCE_NUMBER as in
    txn_record_too_large, and the third commits."""
    t, tid, group = new_topic(b, "sofail", config={"max.message.bytes": "1024"}), b.unique("tx"), b.unique("g")
    c = group_consumer(b, group)
    p = in_transaction(b, tid)
    reports: list = []
    produce(p, t, [TOO_LARGE], reports=reports)
    o["delivery"] = reports
    o.call("send_offsets", p.send_offsets_to_transaction, [b.TopicPartition(t, 0, 1)], c.consumer_group_metadata(),
           30)
    o.call("abort", p.abort_transaction, 30)
    o["committed"] = [tp.offset for tp in c.committed([b.TopicPartition(t, 0)], 10)]
    c.close()
    o.transactions("aborted", tid)
    _go_on(b, o, p, t)
    o.read_both("log", t)


@scenario()
def txn_produce_to_missing_topic(b, o):
    """A record to a topic that does not exist (auto.create.topics.enable=false): once the client's metadata
    says so (topic.metadata.propagation.max.ms, here 1 s), the record fails delivery (UNKNOWN_TOPIC_OR_PART), a
    next record to that topic is refused at produce() (_UNKNOWN_TOPIC), the transaction stays Ongoing and the
    commit refuses with _INCONSISTENT, abortable (a record failed delivery); the abort and a next transaction
    succeed."""
    t, tid = new_topic(b, "exists"), b.unique("tx")
    missing = b.unique("missing")
    p = in_transaction(b, tid, **{"topic.metadata.propagation.max.ms": 1000})
    reports: list = []
    produce(p, t, ["good"], reports=reports)
    produce(p, missing, ["lost"], reports=reports)
    o["delivery"] = reports
    o.call("produce.again", p.produce, missing, value=b"again", partition=0)
    o.transactions("failed", tid)
    o.call("commit", p.commit_transaction, 30)
    o.call("abort", p.abort_transaction, 30)
    _go_on(b, o, p, t)
    o.read_both("log", t)


@scenario()
def txn_produce_refused_by_client(b, o):
    """Records the client refuses at produce(), in a transaction: to a partition the topic does not have (once
    the client knows the topic: _UNKNOWN_PARTITION), and larger than the client's message.max.bytes
    (MSG_SIZE_TOO_LARGE).  Nothing fails delivery, so the transaction commits the other records."""
    t, tid = new_topic(b, "refused"), b.unique("tx")
    p = in_transaction(b, tid)
    reports: list = []
    produce(p, t, ["good"], reports=reports)
    o.call("produce.missing", p.produce, t, value=b"lost", partition=3)
    o.call("produce.huge", p.produce, t, value=b"h" * 1_100_000, partition=0)
    o["delivery"] = reports
    o.call("commit", p.commit_transaction, 30)
    o.read_both("log", t)
    o.transactions("committed", tid)


@scenario()
def txn_abort_with_queued_records(b, o):
    """abort_transaction while records are still queued in the client (a long linger.ms): they are purged
    (their delivery reports say _PURGE_QUEUE), the one record already written is aborted, the producer goes
    on."""
    t, tid = new_topic(b, "queued"), b.unique("tx")
    p = in_transaction(b, tid, **{"linger.ms": 5000})
    reports: list = []
    produce(p, t, ["sent"], reports=reports)
    for i in range(3):
        p.produce(t, value=f"queued{i}".encode(), partition=0,
                  on_delivery=lambda err, msg: reports.append(msg.offset() if err is None else err.name()))
    o.call("abort", p.abort_transaction, 30)
    p.poll(0)
    o["delivery"] = reports
    o.transactions("aborted", tid)
    _go_on(b, o, p, t)
    o.read_both("log", t)


@scenario()
def txn_begin_while_abortable(b, o):
    """After an abortable error, begin_transaction (without an abort) raises that error; the abort that follows
    succeeds and a second abort, with no transaction, is refused (_STATE)."""
    t, tid = new_topic(b, "nobegin", config={"max.message.bytes": "1024"}), b.unique("tx")
    p = in_transaction(b, tid)
    reports: list = []
    produce(p, t, [TOO_LARGE], reports=reports)
    o["delivery"] = reports
    o.call("begin", p.begin_transaction)
    o.call("abort", p.abort_transaction, 30)
    o.call("abort.again", p.abort_transaction, 30)
    o.read_both("log", t)


@scenario()
def txn_min_insync_above_replication_factor(b, o):
    """Not an error after all: a topic whose min.insync.replicas (2) exceeds its replication factor (1) is
    accepted by Kafka's CreateTopics, and its partition asks for min(min.insync.replicas, replication factor)
    in-sync replicas (Partition.effectiveMinIsr), so an acks=all write in a transaction succeeds and commits
    (the lab answered NOT_ENOUGH_REPLICAS until this scenario showed otherwise)."""
    t, tid = new_topic(b, "nisr", config={"min.insync.replicas": "2"}), b.unique("tx")
    p = in_transaction(b, tid, **{"message.timeout.ms": 2000})     # (a refused record would fail in 2 s)
    reports: list = []
    produce(p, t, ["unreplicated"], reports=reports)
    o["delivery"] = reports
    o.call("commit", p.commit_transaction, 30)
    o.read_both("log", t)
    o.producers("producers", t)


@scenario()
def txn_batch_larger_than_segment(b, o):
    """A batch larger than the topic's segment.bytes (1 MiB, Kafka's least) but within its max.message.bytes:
    the broker refuses it RECORD_LIST_TOO_LARGE, and the transaction must abort.  Also: CreateTopics refuses a
    segment.bytes below 1 MiB (INVALID_CONFIG)."""
    o.call("create.tiny_segments", b.create_topic, b.unique("tiny"), 1, 0, {"segment.bytes": "4096"})
    t, tid = new_topic(b, "seg", config={"segment.bytes": "1048576", "max.message.bytes": "2000000"}), b.unique("tx")
    p = in_transaction(b, tid, **{"message.max.bytes": 2_000_000})
    reports: list = []
    produce(p, t, ["small"], reports=reports)
    produce(p, t, ["s" * 1_100_000], reports=reports)
    o["delivery"] = reports
    o.call("commit", p.commit_transaction, 30)
    o.call("abort", p.abort_transaction, 30)
    o.read_both("log", t)
