"""The engine side of the benchmarks: txnlab's confluent-kafka-compatible Producer on a
3-broker simulated cluster, one partition, 100-byte values.

Each function builds a fresh cluster (seed 0), warms it up with one delivered record (metadata,
producer id), and then times only the measured loop with ``time.perf_counter`` -- the same
region ``reference.py`` times on librdkafka's mock cluster. The wall clock is read here, in the
benchmark, never inside the engine.
"""

from __future__ import annotations

import time

PAYLOAD = b"x" * 100
TOPIC = "bench"


def _cluster():
    from txnlab import Cluster

    cluster = Cluster(brokers=3, seed=0)
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    return cluster


def _producer(cluster, **extra):
    from txnlab import Producer

    return Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True,
                     "linger.ms": 5, **extra})


def idempotent_records_per_s(n: int) -> float:
    """n records produced by an idempotent producer, then flush(): records per second."""
    p = _producer(_cluster())
    p.produce(TOPIC, value=PAYLOAD)
    p.flush()
    start = time.perf_counter()
    for _ in range(n):
        p.produce(TOPIC, value=PAYLOAD)
    p.flush()
    return n / (time.perf_counter() - start)


def _transactional(records_per_txn: int, n_txns: int) -> float:
    """Seconds for n_txns transactions of records_per_txn records each."""
    p = _producer(_cluster(), **{"transactional.id": "bench-tx"})
    p.init_transactions()
    p.begin_transaction()
    p.produce(TOPIC, value=PAYLOAD)
    p.commit_transaction()
    start = time.perf_counter()
    for _ in range(n_txns):
        p.begin_transaction()
        for _ in range(records_per_txn):
            p.produce(TOPIC, value=PAYLOAD)
        p.commit_transaction()
    return time.perf_counter() - start


def txn1_per_s(n: int) -> float:
    """n transactions of 1 record each: committed transactions per second."""
    return n / _transactional(1, n)


def txn1000_records_per_s(n: int) -> float:
    """n transactions of 1000 records each: records per second."""
    return n * 1000 / _transactional(1000, n)


def sim_seeds_per_s(n: int) -> float:
    """n seeds of the simulation sweep (copier, 1,000 records, every kind of fault), one core: seeds per
    second.  Each seed builds its cluster, runs the workload under its fault schedule, settles, reads
    everything back and checks the history (``python -m txnlab.sweep``)."""
    from txnlab.sweep.runner import RunConfig, run_seed

    cfg = RunConfig(workload="copier", faults="all", records=1_000)
    start = time.perf_counter()
    for seed in range(n):
        run_seed(seed, cfg)
    return n / (time.perf_counter() - start)
