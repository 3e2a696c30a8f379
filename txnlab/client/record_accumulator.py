"""The producer's ``RecordAccumulator``: records wait here, per partition, in ``ProducerBatch``es.

Owns batching (``batch.size``, ``linger.ms``), the per-partition queues the
sender drains, and the re-insertion of retried batches in sequence order.
"""
from __future__ import annotations

from collections import deque
from itertools import chain, islice, repeat
from operator import itemgetter
from typing import Optional

# the size produce() counts for a record: its key and value plus 10 bytes (headers are not counted)
RECORD_OVERHEAD = 10
_TIMESTAMP = itemgetter(3)


class ProducerBatch:
    __slots__ = ("tp", "values", "rows_in", "stamp", "callbacks", "enqueued", "created_ms", "size",
                 "attempts", "base_sequence", "producer_id", "producer_epoch", "is_transactional", "retry",
                 "next_attempt_ms", "in_flight", "done", "sent_once", "closed", "ordinal", "limit", "sent_to")

    def __init__(self, tp, created_ms: int) -> None:
        self.tp = tp
        # The records.  A record that comes the long way (RecordAccumulator.append) is kept whole, as the
        # (key, value, headers, timestamp) row it is; one that produce()'s short path adds is only its value, so
        # that it costs one list append and no object of its own: it has no key or headers and the timestamp of
        # the long-way row before it.  (The short path adds a record only at ``stamp``: the time of the batch's
        # last long-way row, set when that row opened the short path, RecordAccumulator.open_short_path, and
        # cleared by the next long-way row.)  rows() puts them together.
        self.values: list = []           # every record's value, in produce order (one per record)
        self.rows_in: dict = {}          # row number -> (key, value, headers, timestamp) of a long-way record
        self.stamp: Optional[int] = None
        self.callbacks: dict = {}        # row -> its delivery callback (a row without one: the producer's default)
        self.enqueued: dict = {}         # row -> when it was produce()d (lab ms), if not its timestamp: latency()
        self.created_ms = created_ms
        self.ordinal = 0                  # creation order in its accumulator (the order of its messages)
        self.size = 61
        self.attempts = 0
        self.base_sequence = -1
        self.producer_id = -1
        self.producer_epoch = -1
        self.is_transactional = False
        self.retry = False
        self.next_attempt_ms = 0
        self.in_flight = False
        self.done = False
        self.sent_once = False
        self.sent_to = ""                 # the broker its last attempt went to
        self.closed = False
        # produce()'s short path adds a record only while the batch's size with it stays below ``limit`` (see
        # RecordAccumulator.open_short_path); 0 while no record may join that way (a new batch, a closed one)
        self.limit = 0

    def close(self) -> None:
        """No record joins this batch any more (it is full, or being sent)."""
        self.closed = True
        self.limit = 0

    def rows(self):
        """The records as RecordBatch(raw=True) takes them: (key, value, headers, timestamp) tuples."""
        n, rows_in = len(self.values), self.rows_in
        if len(rows_in) == n:            # every record came the long way: its rows are all there, in order
            return tuple(rows_in.values())
        return Rows(self.values, rows_in, n)

    def max_timestamp(self) -> int:
        """The largest of the records' timestamps (a short-path record has the timestamp of a long-way row)."""
        return max(map(_TIMESTAMP, self.rows_in.values()))

    @property
    def record_count(self) -> int:
        return len(self.values)

    @property
    def last_sequence(self) -> int:
        return self.base_sequence + len(self.values) - 1 if self.base_sequence >= 0 else -1

    @property
    def has_sequence(self) -> bool:
        return self.base_sequence >= 0

    def describe(self) -> str:
        s = f"{self.tp[0]}-{self.tp[1]} {len(self.values)} record(s)"
        if self.has_sequence:
            s += f" seq {self.base_sequence}..{self.last_sequence}"
        return s


class Rows:
    """The records of a sent batch that holds short-path records: a sequence of (key, value, headers, timestamp)
    tuples, as RecordBatch(raw=True) reads them, built the first time somebody iterates it.  A log appends and
    replicates a batch without reading it record by record (Kafka's broker does not decompress a batch it only
    appends either), so most of these tuples are never made."""
    __slots__ = ("_values", "_rows_in", "_n", "_tuple")

    def __init__(self, values: list, rows_in: dict, n: int) -> None:
        self._values = values
        self._rows_in = rows_in
        self._n = n
        self._tuple: Optional[tuple] = None

    def __len__(self) -> int:
        return self._n

    def __iter__(self):
        if self._tuple is None:
            values, rows_in, n = self._values, self._rows_in, self._n
            if len(rows_in) == 1:
                # the usual batch: its first record came the long way, all the others by the short path at
                # the same time (zipped in C)
                first = rows_in[0]
                rows = chain((first,), zip(repeat(None), islice(values, 1, n), repeat(()), repeat(first[3])))
            else:
                rows = _rows(values, rows_in, n)
            self._tuple = tuple(rows)
        return iter(self._tuple)

    def __getitem__(self, i):
        return tuple(self)[i] if self._tuple is None else self._tuple[i]

    def __repr__(self) -> str:
        return f"Rows({list(self)!r})"


def _rows(values: list, rows_in: dict, n: int):
    ts = None
    for i in range(n):
        row = rows_in.get(i)
        if row is None:
            yield (None, values[i], (), ts)     # a short-path record: the time of the long-way row before it
        else:
            ts = row[3]
            yield row


class RecordAccumulator:
    def __init__(self, batch_size: int, max_records: int, retry_in_order: bool = True,
                 max_record_size: int = 1_000_000) -> None:
        self.batch_size = batch_size
        self.max_records = max_records
        self.max_record_size = max_record_size     # message.max.bytes: produce() refuses a larger record
        self.batches: dict = {}          # tp -> deque[ProducerBatch]
        # librdkafka puts retried messages back in message order (rd_kafka_toppar_retry_msgq); the Java
        # client puts a non-idempotent retry at the head of the queue (RecordAccumulator.reenqueue), so
        # several failed batches come back reversed
        self.retry_in_order = retry_in_order
        self._created = 0

    def append(self, tp, record, size: int, callback, now: int) -> tuple:
        """Returns (batch, new_batch_created, batch_is_full)."""
        dq = self.batches.get(tp)
        if dq is None:
            dq = self.batches[tp] = deque()
        b = dq[-1] if dq else None
        created = False
        if b is None or b.closed or b.size + size > self.batch_size or len(b.values) >= self.max_records:
            if b is not None:
                b.close()
            b = ProducerBatch(tp, now)
            self._created += 1
            b.ordinal = self._created
            dq.append(b)
            created = True
        row = len(b.values)
        if callback is not None:
            b.callbacks[row] = callback
        if now != record[3]:           # an application timestamp, or a record that waited for metadata
            b.enqueued[row] = now
        b.values.append(record[1])
        b.rows_in[row] = record
        b.size += size
        full = b.size >= self.batch_size or row + 1 >= self.max_records
        if full:
            b.close()
        b.stamp = None                 # no short-path record joins unless open_short_path() says so
        return b, created, full

    def open_short_path(self, b: ProducerBatch) -> None:
        """Lets produce()'s short path add records to ``b`` after its last row (which has no key or headers):
        at that row's time, while the batch's size with the record stays below ``b.limit``."""
        if b.closed:
            return
        size, left = b.size, self.max_records - len(b.values)
        b.stamp = b.rows_in[len(b.values) - 1][3]
        # One comparison, b.size + n < b.limit for a record of n bytes, for three checks, each a little stricter
        # than the rule, so that the record it refuses goes the long way (append):
        # - the batch's room: b.size + n < batch.size, so the record that fills the batch goes the long way,
        #   which closes the batch and wakes the sender (librdkafka sends a full batch without waiting linger.ms);
        # - batch.num.messages: every record counts at least RECORD_OVERHEAD bytes, so the batch cannot grow
        #   by RECORD_OVERHEAD * left bytes with fewer than ``left`` more records: the short path takes at most
        #   left - 1 of them, and the one that fills the batch by count goes the long way too;
        # - message.max.bytes: n < limit - b.size <= message.max.bytes + 1.
        # Records added later, by either path, keep it true (each adds a record and at least RECORD_OVERHEAD
        # bytes), so only close() has to lower it.
        b.limit = min(self.batch_size, size + RECORD_OVERHEAD * left, size + self.max_record_size + 1)

    def reenqueue(self, batch: ProducerBatch) -> None:
        """Put a retried batch back in the queue: in message order (librdkafka, and any idempotent
        producer: sequence order), or at the head (the Java client's non-idempotent producer)."""
        dq = self.batches.setdefault(batch.tp, deque())
        if not self.retry_in_order and not batch.has_sequence:
            dq.appendleft(batch)
            return
        i = 0
        while i < len(dq) and dq[i].ordinal < batch.ordinal:
            i += 1
        dq.insert(i, batch)

    def queued_records(self) -> int:
        return sum(len(b.values) for dq in self.batches.values() for b in dq)

    def has_queued(self) -> bool:
        return any(self.batches.values())
