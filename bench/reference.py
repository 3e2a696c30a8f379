"""The reference side of the benchmarks: librdkafka's in-process mock cluster, driven through
confluent-kafka (``test.mock.num.brokers: 3``), with the same operations as ``engine.py``.

The mock cluster auto-creates topics with 4 partitions and cannot be configured otherwise
from Python, so every record goes explicitly to partition 0: one partition, like the engine's
topic. Each run gets its own mock cluster (it lives inside the Producer). The mock cluster is a
speed reference only: it is not a correct model of transactions (see STACK-NOTES).
"""

from __future__ import annotations

import time

PAYLOAD = b"x" * 100
TOPIC = "bench"


class _Producer:
    """A confluent-kafka Producer on a fresh 3-broker mock cluster that fails loudly: any
    delivery error or undelivered record raises instead of inflating the numbers."""

    def __init__(self, **extra):
        from confluent_kafka import Producer

        self.errors: list[str] = []
        self.p = Producer({
            "test.mock.num.brokers": 3,
            "enable.idempotence": True,
            "linger.ms": 5,
            "log_level": 4,                     # hide the "Mock cluster enabled" notice
            "delivery.report.only.error": True,  # no per-record Python callback on success
            "on_delivery": self._on_delivery,
            **extra,
        })

    def _on_delivery(self, err, msg):
        if err is not None:
            self.errors.append(str(err))

    def produce(self):
        while True:
            try:
                return self.p.produce(TOPIC, value=PAYLOAD, partition=0)
            except BufferError:   # local queue full: let librdkafka deliver some first
                self.p.poll(0.001)

    def flush(self):
        left = self.p.flush(60)
        if left or self.errors:
            raise RuntimeError(f"{left} records undelivered, delivery errors: {self.errors[:3]}")


def mock_idempotent_records_per_s(n: int) -> float:
    """n records produced by an idempotent producer, then flush(): records per second."""
    p = _Producer()
    p.produce()
    p.flush()
    start = time.perf_counter()
    for _ in range(n):
        p.produce()
    p.flush()
    return n / (time.perf_counter() - start)


def _transactional(records_per_txn: int, n_txns: int) -> float:
    """Seconds for n_txns transactions of records_per_txn records each."""
    p = _Producer(**{"transactional.id": "bench-tx"})
    p.p.init_transactions(30)
    p.p.begin_transaction()
    p.produce()
    p.p.commit_transaction(30)
    start = time.perf_counter()
    for _ in range(n_txns):
        p.p.begin_transaction()
        for _ in range(records_per_txn):
            p.produce()
        p.p.commit_transaction(30)
    elapsed = time.perf_counter() - start
    p.flush()
    return elapsed


def mock_txn1_per_s(n: int) -> float:
    """n transactions of 1 record each: committed transactions per second."""
    return n / _transactional(1, n)


def mock_txn1000_records_per_s(n: int) -> float:
    """n transactions of 1000 records each: records per second."""
    return n * 1000 / _transactional(1000, n)
