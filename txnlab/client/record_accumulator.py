"""The producer's ``RecordAccumulator``: records wait here, per partition, in ``ProducerBatch``es.

Owns batching (``batch.size``, ``linger.ms``), the per-partition queues the
sender drains, and the re-insertion of retried batches in sequence order.
"""
from __future__ import annotations

from collections import deque

# the size produce() counts for a record: its key and value plus 10 bytes (headers are not counted)
RECORD_OVERHEAD = 10


class ProducerBatch:
    __slots__ = ("tp", "records", "callbacks", "created_ms", "size", "attempts", "base_sequence",
                 "producer_id", "producer_epoch", "is_transactional", "retry", "next_attempt_ms",
                 "in_flight", "done", "sent_once", "closed", "enqueued", "ordinal", "limit")

    def __init__(self, tp, created_ms: int) -> None:
        self.tp = tp
        # one row per record, a plain (key, value, headers, timestamp) tuple (RecordBatch(raw=True) turns it into
        # a Record only if somebody reads it).  What most records do not have is kept apart, by row index, so
        # that produce()'s short path appends one row and nothing else:
        self.records: list = []
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

    @property
    def record_count(self) -> int:
        return len(self.records)

    @property
    def last_sequence(self) -> int:
        return self.base_sequence + len(self.records) - 1 if self.base_sequence >= 0 else -1

    @property
    def has_sequence(self) -> bool:
        return self.base_sequence >= 0

    def describe(self) -> str:
        s = f"{self.tp[0]}-{self.tp[1]} {len(self.records)} record(s)"
        if self.has_sequence:
            s += f" seq {self.base_sequence}..{self.last_sequence}"
        return s


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
        if b is None or b.closed or b.size + size > self.batch_size or len(b.records) >= self.max_records:
            if b is not None:
                b.close()
            b = ProducerBatch(tp, now)
            self._created += 1
            b.ordinal = self._created
            dq.append(b)
            created = True
        rows = b.records
        if callback is not None:
            b.callbacks[len(rows)] = callback
        if now != record[3]:           # an application timestamp, or a record that waited for metadata
            b.enqueued[len(rows)] = now
        rows.append(record)
        size = b.size = b.size + size
        left = self.max_records - len(rows)
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
        return sum(len(b.records) for dq in self.batches.values() for b in dq)

    def has_queued(self) -> bool:
        return any(self.batches.values())
