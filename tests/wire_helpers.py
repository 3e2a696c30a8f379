"""Shared pieces of the wire-door tests: a cluster with its listener, real clients with test settings,
and reading what a read_committed consumer returns (values and offsets)."""
from __future__ import annotations

import contextlib
import time

import pytest

from txnlab.cluster import Cluster

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka (librdkafka) is not installed")

QUIET = {"log_level": 2}   # librdkafka logs only critical errors (not the reconnects after a lab closes)


@contextlib.contextmanager
def lab(brokers: int = 3, topics=(("t", 1),), seed: int = 1, config=None, **listen):
    c = Cluster(brokers=brokers, seed=seed, config=config)
    for name, n in topics:
        c.create_topic(name, partitions=n, replication_factor=min(3, brokers))
    door = c.listen(**listen)
    try:
        yield c, door
    finally:
        door.close()


def producer(door, **conf):
    return ck.Producer({"bootstrap.servers": door.bootstrap_servers, **QUIET, **conf})


def consumer(door, group: str = "reader", isolation: str = "read_committed", **conf):
    return ck.Consumer({"bootstrap.servers": door.bootstrap_servers, "group.id": group,
                        "auto.offset.reset": "earliest", "isolation.level": isolation,
                        "enable.auto.commit": False, **QUIET, **conf})


def read_all(c, topics, expect: int, patience_s: float = 30.0, idle_polls: int = 8):
    """(partition, offset, value) of everything the consumer returns: until ``expect`` records arrived and
    then ``idle_polls`` polls came back empty (so nothing extra hides behind), or patience runs out."""
    c.subscribe(list(topics))
    got, empty = [], 0
    deadline = time.monotonic() + patience_s
    while time.monotonic() < deadline:
        msg = c.poll(0.2)
        if msg is None:
            if len(got) >= expect:
                empty += 1
                if empty >= idle_polls:
                    break
            continue
        if msg.error():
            if msg.error().code() == ck.KafkaError._PARTITION_EOF:
                continue
            raise ck.KafkaException(msg.error())
        empty = 0
        got.append((msg.partition(), msg.offset(), msg.value()))
    return got


def values(rows):
    return [v for _, _, v in rows]


def commit_abort_commit(door, per_transaction: int, pause_s: float = 0.0, **conf):
    """A real transactional producer ("copier", client.id copier-1 unless ``conf`` says otherwise) writes
    transactions a, b, c of ``per_transaction`` records each to topic t (records a0, a1, ...): a and c committed,
    b aborted; ``pause_s`` of wall clock before each commit or abort.  Returns the producer."""
    import time
    p = producer(door, **{"transactional.id": "copier", "client.id": "copier-1", **conf})
    p.init_transactions(30)
    for batch, commit in (("a", True), ("b", False), ("c", True)):
        p.begin_transaction()
        for i in range(per_transaction):
            p.produce("t", value=f"{batch}{i}".encode())
        p.flush(30)
        if pause_s:
            time.sleep(pause_s)
        (p.commit_transaction if commit else p.abort_transaction)(30)
    return p
