"""The producer's ``RecordAccumulator``: records wait here, per partition, in ``ProducerBatch``es.

Owns batching (``batch.size``, ``linger.ms``), the per-partition queues the
sender drains, and the re-insertion of retried batches in sequence order.
"""
from __future__ import annotations

from collections import deque
from itertools import chain, repeat
from typing import Optional

# the size produce() counts for a record: its key and value plus 10 bytes (headers are not counted)
RECORD_OVERHEAD = 10


class ProducerBatch:
    __slots__ = ("tp", "values", "stamps", "stamp", "others", "callbacks", "enqueued", "created_ms", "size",
                 "attempts", "base_sequence", "producer_id", "producer_epoch", "is_transactional", "retry",
                 "next_attempt_ms", "in_flight", "done", "sent_once", "closed", "ordinal", "limit")

    def __init__(self, tp, created_ms: int) -> None:
        self.tp = tp
        # The records, kept by column so that the common one (no key, no headers, stamped when produced: what
        # produce()'s short path takes) costs one list append and no object of its own; rows() puts each
        # record's (key, value, headers, timestamp) back together when somebody reads them.
        self.values: list = []           # every record's value, in produce order (one per record)
        # the timestamps, run by run: [(first row, timestamp)] (the records produced between two steps of the
        # simulation share one); ``stamp`` is the last run's: the short path adds a record only at that time
        self.stamps: list = []
        self.stamp: Optional[int] = None
        self.others: dict = {}           # row -> (key, value, headers, timestamp) of a record with a key or headers
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
        self.closed = False
        # produce()'s short path adds a record only while the batch's size with it stays below ``limit`` (see
        # RecordAccumulator.append); 0 while no record may join that way (a new batch, a closed one)
        self.limit = 0

    def close(self) -> None:
        """No record joins this batch any more (it is full, or being sent)."""
        self.closed = True
        self.limit = 0

    def add(self, record: tuple) -> None:
        """Appends a (key, value, headers, timestamp) row.  (produce()'s short path adds a record with no key or
        headers at the last run's time itself: it appends the value.)"""
        key, value, headers, ts = record
        row = len(self.values)
        self.values.append(value)
        if key is not None or headers:
            self.others[row] = record
        elif ts != self.stamp:
            self.stamps.append((row, ts))
            self.stamp = ts

    def rows(self) -> "Rows":
        """The records as RecordBatch(raw=True) takes them, built only if somebody reads them."""
        return Rows(self.values, self.stamps, self.others, len(self.values))

    def max_timestamp(self) -> int:
        """The largest of the records' timestamps (every run starts with a record of its own timestamp: add())."""
        stamps = self.stamps
        if len(stamps) == 1 and not self.others:       # most batches: records produced between two steps
            return stamps[0][1]
        times = [ts for _row, ts in stamps]
        times.extend(record[3] for record in self.others.values())
        return max(times)

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
    """A sent batch's records, a sequence of plain (key, value, headers, timestamp) tuples as RecordBatch(raw=True)
    reads them, put together from the batch's columns only when iterated: a log keeps most batches whole and
    never reads them record by record (Kafka's broker does not decompress a batch it only appends either)."""
    __slots__ = ("_values", "_stamps", "_others", "_n", "_tuple")

    def __init__(self, values: list, stamps: list, others: dict, n: int) -> None:
        self._values = values
        self._stamps = stamps
        self._others = others
        self._n = n
        self._tuple: Optional[tuple] = None

    def __len__(self) -> int:
        return self._n

    def __iter__(self):
        stamps, n = self._stamps, self._n
        starts = [row for row, _ts in stamps]
        ends = starts[1:] + [n]
        # each run's timestamp repeated over its rows (rows before the first run all have a key or headers: they
        # are taken from ``others``), and the rows zipped together, in C; zip stops with the timestamps, at row n
        times = chain(repeat(None, starts[0] if starts else n),
                      *[repeat(ts, end - row) for (row, ts), end in zip(stamps, ends)])
        rows = zip(repeat(None), self._values, repeat(()), times)
        others = self._others
        if others:
            return (others.get(i, row) for i, row in enumerate(rows))
        return rows

    def __getitem__(self, i):
        if self._tuple is None:
            self._tuple = tuple(self)
        return self._tuple[i]

    def __repr__(self) -> str:
        return f"Rows({list(self)!r})"


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
        b.add(record)
        size = b.size = b.size + size
        left = self.max_records - len(b.values)
        full = size >= self.batch_size or left <= 0
        if full:
            b.close()
        else:
            # produce()'s short path adds a record of n bytes when b.size + n < b.limit: one comparison for
            # three checks, each a little stricter than the rule, so that the record it refuses comes here:
            # - the batch's room: b.size + n < batch.size, so the record that fills the batch comes here, which
            #   closes the batch and wakes the sender (librdkafka sends a full batch without waiting linger.ms);
            # - batch.num.messages: every record counts at least RECORD_OVERHEAD bytes, so the batch cannot grow
            #   by RECORD_OVERHEAD * left bytes with fewer than ``left`` more records: the short path takes at
            #   most left - 1 of them, and the one that fills the batch by count comes here too;
            # - message.max.bytes: n < limit - b.size <= message.max.bytes + 1.
            # The short path's own records keep it true (each adds a record and at least RECORD_OVERHEAD bytes),
            # a record added here computes it again, and only close() has to lower it.
            b.limit = min(self.batch_size, size + RECORD_OVERHEAD * left, size + self.max_record_size + 1)
        return b, created, full

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
