"""The producer's ``RecordAccumulator``: records wait here, per partition, in ``ProducerBatch``es.

Owns batching (``batch.size``, ``linger.ms``), the per-partition queues the
sender drains, and the re-insertion of retried batches in sequence order.
"""
from __future__ import annotations

from collections import deque


class ProducerBatch:
    __slots__ = ("tp", "records", "callbacks", "created_ms", "size", "attempts", "base_sequence",
                 "producer_id", "producer_epoch", "is_transactional", "retry", "next_attempt_ms",
                 "in_flight", "done", "sent_once", "closed", "enqueued", "ordinal")

    def __init__(self, tp, created_ms: int) -> None:
        self.tp = tp
        self.records: list = []
        self.callbacks: list = []
        self.enqueued: list = []         # when each record was produce()d (lab ms): Message.latency()
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
    def __init__(self, batch_size: int, max_records: int, retry_in_order: bool = True) -> None:
        self.batch_size = batch_size
        self.max_records = max_records
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
                b.closed = True
            b = ProducerBatch(tp, now)
            self._created += 1
            b.ordinal = self._created
            dq.append(b)
            created = True
        b.records.append(record)
        b.callbacks.append(callback)
        b.enqueued.append(now)
        b.size += size
        full = b.size >= self.batch_size or len(b.records) >= self.max_records
        if full:
            b.closed = True
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
