"""The ``txnlab`` Spark sink: at-least-once like Spark's Kafka sink, or exactly-once with Kafka's transactions.

Input columns as in Spark's Kafka sink: ``value`` (binary or string), optional
``key``, ``topic`` (else the ``topic`` option), ``partition`` and ``headers``.
Options: ``bootstrap.servers``, ``topic``, ``delivery`` = ``at-least-once`` (the
default, what Spark's Kafka sink gives) | ``exactly-once``, ``txnlab.sink.id``
(names the sink's transactional ids; the streaming query's id by default),
``transaction.timeout.ms``, ``kafka.<producer key>`` (producer settings), and
``txnlab.faults`` (``SparkFaults.to_option()``).

Where things run (STACK-NOTES): ``write()`` runs once per task *attempt* in a
worker; ``commit(messages, batchId)`` and ``abort`` run in a Python process on
the driver side; only the commit messages carry state between them.  A batch
can be replayed with the same batchId (a failure after publishing and before
Spark's commit log records the batch), a retried task's first attempt never
gets ``abort``, and ``abort`` may even follow a successful ``commit``.

**At-least-once**: each task attempt produces its rows straight into the
output topic (idempotent producer) and flushes.  A failed attempt's rows stay,
its retry writes them again; a replayed batch is written again.

**Exactly-once** -- stage in the tasks, publish in one transaction per batch:

1. *Stage* (``write``, each task attempt).  A transactional producer with
   ``transactional.id = <sink>-stage-<partition>``: ``init_transactions()``
   bumps the epoch, which fences any earlier attempt of this task still alive
   (a zombie: its next request fails with PRODUCER_FENCED) and makes the
   coordinator abort whatever an earlier attempt left open.  The attempt
   writes its rows to ``__spark_sink_staging``, each tagged with a unique
   attempt tag, and commits; its commit message names the tag and the staged
   offset range.  A staging transaction nobody comes back for is aborted by
   the coordinator when ``transaction.timeout.ms`` passes.
2. *Publish* (``commit(messages, batchId)``, driver side).  One transactional
   producer per sink, ``transactional.id = <sink>-publish``: ``init_transactions()``
   fences a publisher of an earlier driver (a zombie commit) and aborts its
   open transaction.  It reads ``__spark_sink_progress`` (read_committed): if a
   progress record says this sink already published ``batchId``, the batch is
   a replay and nothing is written.  Otherwise one transaction carries the
   staged rows named by the messages (read_committed, only the chosen
   attempts' tags: rows of losing or failed attempts are never copied) into
   the output topics *and* the progress record ``{sink, batchId}``, and commits.
   Rows and progress become visible together or not at all.
3. ``abort(messages, batchId)`` never touches published data: it only fences
   the publisher (``init_transactions()``), which aborts an unfinished publish
   transaction and leaves a committed one as it is.

So a replayed batchId finds its progress record, a retried task's orphaned
staging is aborted by the fencing or the timeout, a speculative duplicate's
staging is never published, abort after commit is harmless, and a driver
killed between publish and checkpoint replays into a no-op.  The price: the
output rows go through the cluster twice (staged, then published).
"""
from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Iterator, Optional

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage

from ..client.producer import Producer
from ..errors import KafkaException
from ..protocol import messages as m
from .faults import InjectedFault, SparkFaults
from .io import EARLIEST, LATEST, Link, release

STAGING_TOPIC = "__spark_sink_staging"
PROGRESS_TOPIC = "__spark_sink_progress"
STAGING_PARTITIONS = 3
STAGE_TAG = "txnlab.stage"
STAGE_TOPIC = "txnlab.topic"
STAGE_PARTITION = "txnlab.partition"
DELIVERIES = ("at-least-once", "exactly-once")
SIGNAL_COMMIT = "txnlab.spark.commit"
SIGNAL_PUBLISHED = "txnlab.spark.published"


@dataclass
class SinkMessage(WriterCommitMessage):
    """What one task attempt tells the driver: how many rows, and where it staged them."""
    sink_id: str
    query_id: str
    batch: int
    partition: int
    attempt: int
    rows: int
    tag: str = ""
    staged: Optional[tuple] = None          # (staging topic, partition, first offset, last offset)
    topics: list = field(default_factory=list)


def _bytes(v) -> Optional[bytes]:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v)


class _Rows:
    """Turns Spark rows into (topic, partition, key, value, headers) with the Kafka sink's rules."""

    def __init__(self, schema, default_topic: Optional[str]) -> None:
        names = set(schema.fieldNames()) if schema is not None else {"key", "value", "topic"}
        if "value" not in names:
            raise ValueError("the txnlab sink needs a 'value' column (binary or string), like Spark's Kafka sink")
        if "topic" not in names and not default_topic:
            raise ValueError("give the output topic: option 'topic' or a 'topic' column")
        self.has = {c: c in names for c in ("key", "topic", "partition", "headers")}
        self.default_topic = default_topic

    def __call__(self, row) -> tuple:
        topic = (row["topic"] if self.has["topic"] else None) or self.default_topic
        if not topic:
            raise ValueError("a row has no topic and the option 'topic' is not set")
        part = row["partition"] if self.has["partition"] else None
        key = _bytes(row["key"]) if self.has["key"] else None
        headers = ()
        if self.has["headers"] and row["headers"]:
            headers = tuple((h["key"], _bytes(h["value"])) for h in row["headers"])
        return topic, (-1 if part is None else int(part)), key, _bytes(row["value"]), headers


def _task() -> tuple:
    """(batch id, partition id, attempt number, query id) of the running Spark task."""
    from pyspark import TaskContext
    tc = TaskContext.get()
    if tc is None:
        return 0, 0, 0, "batch"
    batch = tc.getLocalProperty("streaming.sql.batchId")
    query = tc.getLocalProperty("sql.streaming.queryId") or "batch"
    return int(batch) if batch is not None else 0, tc.partitionId(), tc.attemptNumber(), query


class _SinkBase:
    def __init__(self, options: dict, schema) -> None:
        self.bootstrap = options.get("bootstrap.servers")
        if not self.bootstrap:
            raise ValueError("option bootstrap.servers is required (use cluster.serve() in the notebook)")
        self.delivery = options.get("delivery", "at-least-once")
        if self.delivery not in DELIVERIES:
            raise ValueError(f"option delivery must be one of {DELIVERIES}, got {self.delivery!r}")
        self.topic = options.get("topic")
        self.sink_id_option = options.get("txnlab.sink.id")
        self.txn_timeout_ms = int(options.get("transaction.timeout.ms", 60_000))
        self.producer_conf = {k[len("kafka."):]: v for k, v in options.items() if k.startswith("kafka.")}
        self.faults = SparkFaults.from_option(options.get("txnlab.faults"))
        self.rows = _Rows(schema, self.topic)

    def sink_id(self, query_id: str) -> str:
        return self.sink_id_option or f"spark-{query_id}"

    def producer(self, label: str, **conf) -> Producer:
        p = Producer({"bootstrap.servers": self.bootstrap, "client.id": label, "linger.ms": 5,
                      **self.producer_conf, **conf})
        self.__dict__.setdefault("_made", []).append(p)
        return p

    def _release(self, link: Link) -> None:
        """The call is over: its link and producers leave this process's private kernel."""
        for p in self.__dict__.pop("_made", []):
            release(p)
        link.close()

    # ---------------------------------------------------------------- write
    def write(self, iterator: Iterator) -> SinkMessage:
        batch, partition, attempt, query = _task()
        sink_id = self.sink_id(query)
        link = Link(self.bootstrap, "spark-writer")
        try:
            return self._write(link, iterator, sink_id, query, batch, partition, attempt)
        finally:
            self._release(link)

    def _write(self, link, iterator, sink_id, query, batch, partition, attempt) -> SinkMessage:
        f = self.faults
        rows = map(self.rows, iterator)
        if f.duplicates_task(batch, partition) and f.fires(link, sink_id, "duplicate", batch, partition):
            rows = list(rows)
            self._write_attempt(link, rows, sink_id, query, batch, partition, attempt, speculative=True)
        fail_after = None
        if f.fails_task(batch, partition) and f.fires(link, sink_id, "fail-task", batch, partition):
            fail_after = f.fail_task_after_rows
        return self._write_attempt(link, rows, sink_id, query, batch, partition, attempt, fail_after=fail_after)

    # --------------------------------------------------------------- commit
    def commit_batch(self, messages: list, batch: int) -> None:
        msgs = [x for x in messages if x is not None]
        if not msgs:
            return
        link = Link(self.bootstrap, "spark-commit")
        try:
            self._commit(link, msgs, batch)
        finally:
            self._release(link)

    def _commit(self, link: Link, msgs: list, batch: int) -> None:
        sink_id = msgs[0].sink_id
        link.signal(SIGNAL_COMMIT, {"sink": sink_id, "batch": batch, "delivery": self.delivery,
                                    "rows": sum(x.rows for x in msgs)})
        f = self.faults
        armed = f.batch == batch

        def fault(kind: str) -> None:
            if armed and f.commit_error == kind and f.fires(link, sink_id, "commit-" + kind, batch):
                raise InjectedFault(f"injected fault: the sink's commit of batch {batch} fails ({kind})")
        fault("before-publish")
        published = self._publish(link, msgs, sink_id, batch, fault)
        fault("after-publish")
        if published and armed and f.stop_after_publish and f.fires(link, sink_id, "stop", batch):
            link.signal(SIGNAL_PUBLISHED, {"sink": sink_id, "batch": batch})


class AtLeastOnce(_SinkBase):
    """Each task attempt writes its rows directly; commit publishes nothing."""

    def _write_attempt(self, link, rows, sink_id, query, batch, partition, attempt, speculative=False,
                       fail_after=None) -> SinkMessage:
        who = f"{'speculative ' if speculative else ''}b{batch}-p{partition}-a{attempt}"
        p = self.producer(f"spark-alos-{who}")
        n = 0
        topics = set()
        for topic, part, key, value, headers in rows:
            if fail_after is not None and n >= fail_after:
                p.flush()
                raise InjectedFault(f"injected fault: task {partition} of batch {batch} fails after {n} rows")
            p.produce(topic, value=value, key=key, partition=part, headers=headers or None)
            topics.add(topic)
            n += 1
        if fail_after is not None and n <= fail_after:
            p.flush()
            raise InjectedFault(f"injected fault: task {partition} of batch {batch} fails after {n} rows")
        remaining = p.flush(60)
        if remaining:
            raise KafkaException(f"{remaining} record(s) were not delivered")
        return SinkMessage(sink_id, query, batch, partition, attempt, n, topics=sorted(topics))

    def _publish(self, link, msgs, sink_id, batch, fault) -> bool:
        fault("mid-publish")
        return True

    def abort_batch(self, messages: list, batch: int) -> None:
        return None


class ExactlyOnce(_SinkBase):
    """Stage in the tasks, publish in one transaction per batch (see the module docstring)."""

    def _write_attempt(self, link, rows, sink_id, query, batch, partition, attempt, speculative=False,
                       fail_after=None) -> SinkMessage:
        who = f"{'speculative ' if speculative else ''}b{batch}-p{partition}-a{attempt}"
        link.ensure_topic(STAGING_TOPIC, STAGING_PARTITIONS)
        staging_partition = partition % link.partitions(STAGING_TOPIC)
        p = self.producer(f"spark-stage-{who}", **{"transactional.id": f"{sink_id}-stage-{partition}",
                                                    "transaction.timeout.ms": self.txn_timeout_ms})
        p.init_transactions()        # fences earlier attempts of this task, aborts what they left open
        tag = f"{batch}.{partition}.{attempt}.{secrets.token_hex(4)}".encode()
        offsets: list = []

        def delivered(err, msg) -> None:
            if err is None:
                offsets.append(msg.offset())
        p.begin_transaction()
        n = 0
        topics = set()
        for topic, part, key, value, headers in rows:
            if fail_after is not None and n >= fail_after:
                p.flush()
                raise InjectedFault(f"injected fault: task {partition} of batch {batch} fails after staging {n} rows "
                                    f"(its transaction stays open)")
            extra = ((STAGE_TAG, tag), (STAGE_TOPIC, topic.encode()))
            if part >= 0:
                extra += ((STAGE_PARTITION, str(part).encode()),)
            p.produce(STAGING_TOPIC, value=value, key=key, partition=staging_partition,
                      headers=extra + tuple(headers), on_delivery=delivered)
            topics.add(topic)
            n += 1
        if fail_after is not None and n <= fail_after:
            p.flush()
            raise InjectedFault(f"injected fault: task {partition} of batch {batch} fails after staging {n} rows")
        p.commit_transaction()
        staged = (STAGING_TOPIC, staging_partition, min(offsets), max(offsets)) if offsets else None
        if len(offsets) != n:
            raise KafkaException(f"{n - len(offsets)} staged record(s) were not delivered")
        return SinkMessage(sink_id, query, batch, partition, attempt, n, tag.decode(), staged, sorted(topics))

    def _publisher(self, sink_id: str) -> Producer:
        return self.producer(f"spark-publish-{sink_id}", **{"transactional.id": f"{sink_id}-publish",
                                                           "transaction.timeout.ms": self.txn_timeout_ms})

    def _publish(self, link, msgs, sink_id, batch, fault) -> bool:
        link.ensure_topic(PROGRESS_TOPIC, 1)
        p = self._publisher(sink_id)
        p.init_transactions()        # fences an earlier driver's publisher and aborts its open transaction
        done = last_published(link, sink_id)
        if done is not None and done >= batch:
            link.signal("txnlab.spark.note", {"sink": sink_id, "batch": batch,
                                              "text": f"batch {batch} was already published: replay skipped"})
            return False
        p.begin_transaction()
        rows = 0
        for msg in sorted(msgs, key=lambda x: x.partition):
            for topic, part, key, value, headers in staged_rows(link, msg):
                p.produce(topic, value=value, key=key, partition=part, headers=headers or None)
                rows += 1
        p.produce(PROGRESS_TOPIC, key=sink_id.encode(), partition=0, value=json.dumps(
            {"sink": sink_id, "batchId": batch, "rows": rows, "query": msgs[0].query_id,
             "topics": sorted({t for x in msgs for t in x.topics})}).encode())
        if self.faults.commit_error == "mid-publish" and self.faults.batch == batch:
            p.flush()
        fault("mid-publish")
        p.commit_transaction()
        return True

    def abort_batch(self, messages: list, batch: int) -> None:
        msgs = [x for x in messages if x is not None]
        if not msgs:
            return
        # Fencing aborts an unfinished publish transaction; a committed one stays committed.
        link = Link(self.bootstrap, "spark-abort")
        try:
            self._publisher(msgs[0].sink_id).init_transactions()
        finally:
            self._release(link)


def staged_rows(link: Link, msg: SinkMessage) -> Iterator[tuple]:
    """The rows one chosen attempt staged: its offset range, read_committed, with its tag only."""
    if not msg.rows or msg.staged is None:
        return
    topic, part, first, last = msg.staged
    tag = msg.tag.encode()
    seen = 0
    for offs, keys, values, stamps, headers, types in link.read_range((topic, part), first, last + 1,
                                                                       m.READ_COMMITTED):
        for key, value, hs in zip(keys, values, headers):
            meta = {k: v for k, v in hs if k.startswith("txnlab.")}
            if meta.get(STAGE_TAG) != tag:
                continue
            seen += 1
            out_part = int(meta[STAGE_PARTITION]) if STAGE_PARTITION in meta else -1
            yield meta[STAGE_TOPIC].decode(), out_part, key, value, tuple(h for h in hs if not h[0].startswith("txnlab."))
    if seen != msg.rows:
        raise KafkaException(f"attempt {msg.tag} staged {msg.rows} rows but {seen} are readable")


def last_published(link: Link, sink_id: str) -> Optional[int]:
    """The highest batchId this sink's committed progress records name (None: nothing yet)."""
    tp = (PROGRESS_TOPIC, 0)
    low = link.offsets([tp], EARLIEST, m.READ_COMMITTED)[tp]
    high = link.offsets([tp], LATEST, m.READ_COMMITTED)[tp]
    key = sink_id.encode()
    best = None
    for offs, keys, values, *_ in link.read_range(tp, low, high, m.READ_COMMITTED):
        for k, v in zip(keys, values):
            if k == key:
                b = json.loads(v)["batchId"]
                best = b if best is None else max(best, b)
    return best


def make_sink(options: dict, schema):
    return (ExactlyOnce if options.get("delivery", "at-least-once") == "exactly-once" else AtLeastOnce)(options, schema)


class TxnlabStreamWriter(DataSourceStreamWriter):
    def __init__(self, options: dict, schema) -> None:
        self.sink = make_sink(options, schema)

    def write(self, iterator):
        return self.sink.write(iterator)

    def commit(self, messages, batchId: int) -> None:
        self.sink.commit_batch(messages, batchId)

    def abort(self, messages, batchId: int) -> None:
        self.sink.abort_batch(messages, batchId)


class TxnlabBatchWriter(DataSourceWriter):
    """``df.write.format("txnlab")``: one batch, id 0 (exactly-once needs ``txnlab.sink.id``)."""

    def __init__(self, options: dict, schema) -> None:
        if options.get("delivery") == "exactly-once" and not options.get("txnlab.sink.id"):
            raise ValueError("an exactly-once batch write needs the option txnlab.sink.id (its progress key)")
        self.sink = make_sink(options, schema)

    def write(self, iterator):
        return self.sink.write(iterator)

    def commit(self, messages) -> None:
        self.sink.commit_batch(messages, 0)

    def abort(self, messages) -> None:
        self.sink.abort_batch(messages, 0)

