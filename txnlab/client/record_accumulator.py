"""The producer's ``RecordAccumulator``: records wait here, per partition, in ``ProducerBatch``es.

Owns batching (``batch.size``, ``linger.ms``), the per-partition queues the
sender drains, and the re-insertion of retried batches in sequence order.
"""
from __future__ import annotations

from collections import deque


class ProducerBatch:
    __slots__ = ("tp", "records", "callbacks", "created_ms", "size", "attempts", "base_sequence",
                 "producer_id", "producer_epoch", "is_transactional", "retry", "next_attempt_ms",
                 "in_flight", "done", "sent_once", "closed")

    def __init__(self, tp, created_ms: int) -> None:
        self.tp = tp
        self.records: list = []
        self.callbacks: list = []
        self.created_ms = created_ms
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
    def __init__(self, batch_size: int, max_records: int) -> None:
        self.batch_size = batch_size
        self.max_records = max_records
        self.batches: dict = {}          # tp -> deque[ProducerBatch]

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
            dq.append(b)
            created = True
        b.records.append(record)
        b.callbacks.append(callback)
        b.size += size
        full = b.size >= self.batch_size or len(b.records) >= self.max_records
        if full:
            b.closed = True
        return b, created, full

    def reenqueue(self, batch: ProducerBatch) -> None:
        """Put a retried batch back at the front, keeping sequence order among retries."""
        dq = self.batches.setdefault(batch.tp, deque())
        i = 0
        while i < len(dq) and dq[i].has_sequence and dq[i].base_sequence < batch.base_sequence:
            i += 1
        dq.insert(i, batch)

    def queued_records(self) -> int:
        return sum(len(b.records) for dq in self.batches.values() for b in dq)

    def has_queued(self) -> bool:
        return any(self.batches.values())
