"""The wire door's side of the benchmarks: confluent-kafka's own Producer (librdkafka) against the lab's
listener (``cluster.listen()``), with the same operations, sizes and settings as ``reference.py`` runs on
librdkafka's mock cluster.  Here every request crosses a real loopback socket, is decoded with kio, becomes a
message of the simulated network and is answered after replication (acks=all), markers and the LSO, which the
mock skips.  Each run gets a fresh 3-broker cluster (seed 0), one partition, replication factor 3.
"""

from __future__ import annotations

import contextlib
import time

PAYLOAD = b"x" * 100
TOPIC = "bench"


@contextlib.contextmanager
def _producer(**extra):
    from confluent_kafka import Producer

    from txnlab import Cluster

    cluster = Cluster(brokers=3, seed=0)
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    door = cluster.listen()
    errors: list[str] = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))

    p = Producer({"bootstrap.servers": door.bootstrap_servers, "enable.idempotence": True, "linger.ms": 5,
                  "log_level": 2, "delivery.report.only.error": True, "on_delivery": on_delivery, **extra})

    def produce():
        while True:
            try:
                return p.produce(TOPIC, value=PAYLOAD, partition=0)
            except BufferError:
                p.poll(0.001)

    def flush():
        left = p.flush(60)
        if left or errors:
            raise RuntimeError(f"{left} records undelivered, delivery errors: {errors[:3]}")

    try:
        yield p, produce, flush
    finally:
        p.flush(10)
        door.close()


def wire_idempotent_records_per_s(n: int) -> float:
    """n records produced by an idempotent producer through the listener, then flush(): records per second."""
    with _producer() as (p, produce, flush):
        produce()
        flush()
        start = time.perf_counter()
        for _ in range(n):
            produce()
        flush()
        return n / (time.perf_counter() - start)


def _transactional(records_per_txn: int, n_txns: int) -> float:
    with _producer(**{"transactional.id": "bench-tx"}) as (p, produce, flush):
        p.init_transactions(30)
        p.begin_transaction()
        produce()
        p.commit_transaction(30)
        start = time.perf_counter()
        for _ in range(n_txns):
            p.begin_transaction()
            for _ in range(records_per_txn):
                produce()
            p.commit_transaction(30)
        elapsed = time.perf_counter() - start
        flush()
        return elapsed


def wire_txn1_per_s(n: int) -> float:
    """n transactions of 1 record each through the listener: committed transactions per second."""
    return n / _transactional(1, n)


def wire_txn1000_records_per_s(n: int) -> float:
    """n transactions of 1000 records each through the listener: records per second."""
    return n * 1000 / _transactional(1000, n)
