"""The ``txnlab`` Spark source: a topic of the lab's cluster as a streaming or batch DataFrame.

Columns follow Spark's own Kafka source (``key``, ``value``, ``topic``,
``partition``, ``offset``, ``timestamp``, ``timestampType``, ``headers``) and so do
the options: ``bootstrap.servers`` (the front door's address), ``subscribe``
(comma-separated topics), ``startingOffsets`` / ``endingOffsets`` (``earliest``,
``latest`` or JSON ``{"topic": {"0": 23}}``), ``maxOffsetsPerTrigger``, and
``isolation.level`` (``read_committed`` by default: the reader's end offset is
the Last Stable Offset, and records of aborted transactions and the markers
are skipped exactly as Kafka's consumer skips them).

Offsets are per partition, ``{"topic": {"0": next offset}}``.  Each Spark task
reads one partition's range [start, end) in whole fetched batches and hands
Spark Arrow record batches.  ``SupportsTriggerAvailableNow``: with
``trigger(availableNow=True)`` the end offsets of the first call are the target,
and ``maxOffsetsPerTrigger`` still splits the work into several micro-batches.
"""
from __future__ import annotations

from typing import Iterator, Optional

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from .io import EARLIEST, LATEST, Link, isolation_of, parse_offsets

SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
          "timestampType int, headers array<struct<key:string,value:binary>>")


class TopicRange(InputPartition):
    """One Spark task's work: offsets [start, end) of one topic-partition."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        self.topic, self.partition, self.start, self.end = topic, partition, start, end

    def __repr__(self) -> str:
        return f"TopicRange({self.topic}-{self.partition} [{self.start}, {self.end}))"


def _arrow_schema():
    import pyarrow as pa
    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    return pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                      ("partition", pa.int32()), ("offset", pa.int64()),
                      ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32()),
                      ("headers", pa.list_(header))])


def read_range_as_arrow(bootstrap: str, isolation: int, r: TopicRange) -> Iterator:
    """Arrow record batches with the source's columns for one TopicRange."""
    if not isinstance(r, TopicRange):
        # nothing to read (an empty topic, or starting = ending): to a reader whose partitions() is empty,
        # PySpark still gives one plain InputPartition to read
        return
    schema = _arrow_schema()
    link = Link(bootstrap, "spark-reader")
    try:
        yield from _arrow_batches(link, isolation, r, schema)
    finally:
        link.close()


def _arrow_batches(link: Link, isolation: int, r: TopicRange, schema) -> Iterator:
    import pyarrow as pa
    for offs, keys, values, stamps, headers, types in link.read_range((r.topic, r.partition), r.start, r.end,
                                                                       isolation):
        n = len(offs)
        hdrs = [[{"key": k, "value": v} for k, v in h] for h in headers]
        yield pa.RecordBatch.from_arrays([
            pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
            pa.array([r.topic] * n, pa.string()), pa.array([r.partition] * n, pa.int32()),
            pa.array(offs, pa.int64()), pa.array([t * 1000 for t in stamps], pa.int64()).cast(schema.field(5).type),
            pa.array(types, pa.int32()), pa.array(hdrs, schema.field(7).type)], schema=schema)


class _Options:
    """The reader options, checked once."""

    def __init__(self, options: dict) -> None:
        def get(name, default=None):
            return options.get(name, default)
        self.bootstrap = get("bootstrap.servers")
        if not self.bootstrap:
            raise ValueError("option bootstrap.servers is required (use cluster.serve() in the notebook)")
        subscribe = get("subscribe") or ""
        self.topics = [t.strip() for t in subscribe.split(",") if t.strip()]
        if not self.topics:
            raise ValueError("option subscribe is required: one or more topics, comma-separated")
        self.isolation_level = get("isolation.level", "read_committed")
        self.isolation = isolation_of(self.isolation_level)
        self.starting = get("startingOffsets", "earliest")
        self.ending = get("endingOffsets", "latest")
        mopt = get("maxOffsetsPerTrigger")
        self.max_per_trigger = int(mopt) if mopt else None
        if self.max_per_trigger is not None and self.max_per_trigger < 1:
            raise ValueError("maxOffsetsPerTrigger must be at least 1")


class _OffsetsMixin:
    """Offsets from the cluster (in the Python process Spark runs on the driver side)."""

    opts: _Options
    _link: Optional[Link] = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_link"] = None        # a live connection does not travel to the workers
        return state

    def link(self) -> Link:
        if self._link is None:
            self._link = Link(self.opts.bootstrap, "spark-offsets")
        return self._link

    def all_partitions(self) -> list:
        link = self.link()
        return [(t, p) for t in self.opts.topics for p in range(link.partitions(t))]

    def resolve(self, spec: str, tps: list) -> dict:
        link = self.link()
        if spec == "earliest":
            return link.offsets(tps, EARLIEST, self.opts.isolation)
        if spec == "latest":
            return link.offsets(tps, LATEST, self.opts.isolation)
        given = parse_offsets(spec)
        out = {}
        lows = link.offsets(tps, EARLIEST, self.opts.isolation)
        highs = link.offsets(tps, LATEST, self.opts.isolation)
        for tp in tps:
            off = given.get(tp, EARLIEST)
            out[tp] = lows[tp] if off == EARLIEST else highs[tp] if off == LATEST else off
        return out

    @staticmethod
    def to_json(offsets: dict) -> dict:
        out: dict = {}
        for (t, p), off in sorted(offsets.items()):
            out.setdefault(t, {})[str(p)] = int(off)
        return out

    @staticmethod
    def from_json(offsets: dict) -> dict:
        return {(t, int(p)): int(off) for t, parts in offsets.items() for p, off in parts.items()}

    def ranges(self, start: dict, end: dict) -> list:
        out = []
        for (t, p), e in sorted(end.items()):
            s = start.get((t, p), 0)
            if e > s:
                out.append(TopicRange(t, p, s, e))
        return out


class TxnlabStreamReader(_OffsetsMixin, DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict) -> None:
        self.opts = _Options(options)
        self._link = None
        self._target: Optional[dict] = None

    def initialOffset(self) -> dict:
        return self.to_json(self.resolve(self.opts.starting, self.all_partitions()))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_per_trigger:
            return ReadMaxRows(self.opts.max_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.link().offsets(self.all_partitions(), LATEST, self.opts.isolation)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = self.from_json(start)
        tps = sorted(set(self.all_partitions()) | set(begin))
        latest = self.link().offsets(tps, LATEST, self.opts.isolation) if self._target is None else dict(self._target)
        for tp in tps:
            latest[tp] = max(latest.get(tp, 0), begin.get(tp, 0))
        if isinstance(limit, ReadMaxRows):
            latest = self.limit(begin, latest, limit.max_rows)
        return self.to_json(latest)

    @staticmethod
    def limit(begin: dict, latest: dict, budget: int) -> dict:
        """At most ``budget`` offsets in all, shared in proportion to what each partition has (as
        Spark's Kafka source does with maxOffsetsPerTrigger)."""
        avail = {tp: latest[tp] - begin.get(tp, 0) for tp in latest}
        total = sum(avail.values())
        if total <= budget:
            return latest
        out = {}
        given = 0
        for tp in sorted(avail):
            share = avail[tp] * budget // total
            out[tp] = begin.get(tp, 0) + share
            given += share
        for tp in sorted(avail):               # the remainder, one by one, in partition order
            if given >= budget:
                break
            if out[tp] < latest[tp]:
                out[tp] += 1
                given += 1
        return out

    def partitions(self, start: dict, end: dict) -> list:
        return self.ranges(self.from_json(start), self.from_json(end))

    def read(self, partition: TopicRange) -> Iterator:
        return read_range_as_arrow(self.opts.bootstrap, self.opts.isolation, partition)

    def commit(self, end: dict) -> None:
        return None


class TxnlabBatchReader(_OffsetsMixin, DataSourceReader):
    def __init__(self, options: dict) -> None:
        self.opts = _Options(options)
        self._link = None

    def partitions(self) -> list:
        tps = self.all_partitions()
        return self.ranges(self.resolve(self.opts.starting, tps), self.resolve(self.opts.ending, tps))

    def read(self, partition: TopicRange) -> Iterator:
        return read_range_as_arrow(self.opts.bootstrap, self.opts.isolation, partition)
