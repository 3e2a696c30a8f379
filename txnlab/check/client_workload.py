"""A transactional workload written against the confluent-kafka API, recorded as a ``History`` for ``check``.

It runs unchanged on any system a confluent-kafka-shaped module can reach: ``confluent_kafka`` against a real
broker (Apache Kafka, or any Kafka-compatible one), or ``txnlab`` in the kernel.  So the checker can be pointed at
a real system's behaviour and not only at the lab's own:

    history = transactional_workload(confluent_kafka, {"bootstrap.servers": "127.0.0.1:9092"}, "t")
    check(history).ok          # False when a read_committed consumer was handed aborted records (G1a)

The producer commits some transactions and aborts the others (every ``abort_every``-th); every value is
unique, so the checker knows which transaction wrote what it reads.  Then a read_committed consumer reads the
partition from the start until it reaches the end, and what it was handed is recorded as one poll.
"""
from __future__ import annotations

from typing import Optional

from .history import FAIL, OK, History, key_of


def transactional_workload(kafka, conf: dict, topic: str, txns: int = 6, per_txn: int = 2, abort_every: int = 2,
                           poll_timeout: float = 0.5, max_polls: int = 60,
                           transactional_id: Optional[str] = None) -> History:
    """Run the workload through the module ``kafka`` (``confluent_kafka`` or ``txnlab``) and return its history.

    ``conf`` is what both clients get (``bootstrap.servers`` and any other keys); ``topic`` must exist with one
    partition.  Timeouts are the module's: wall-clock seconds on a real broker, simulated seconds in the lab."""
    h = History(attrs={"workload": "transactional", "topic": topic, "txns": txns, "abort_every": abort_every})
    key = key_of(topic, 0)
    p = kafka.Producer({**conf, "transactional.id": transactional_id or f"workload-{topic}"})
    p.init_transactions(30)
    h.add("producer-0", "init", [])
    for t in range(txns):
        offsets: dict = {}
        values = [f"t{t}-r{i}" for i in range(per_txn)]
        p.begin_transaction()
        for v in values:
            p.produce(topic, v.encode(), partition=0,
                      on_delivery=lambda err, msg, v=v: offsets.__setitem__(v, None if err else msg.offset()))
        p.flush(30)
        aborted = abort_every > 0 and t % abort_every == abort_every - 1
        if aborted:
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
        h.add("producer-0", "txn", [["send", key, v, offsets.get(v)] for v in values], FAIL if aborted else OK)

    c = kafka.Consumer({**conf, "group.id": f"workload-reader-{topic}", "isolation.level": "read_committed",
                        "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    tp = kafka.TopicPartition(topic, 0, 0)
    c.assign([tp])
    _, high = c.get_watermark_offsets(kafka.TopicPartition(topic, 0), 30)
    got: list = []
    for _ in range(max_polls):
        m = c.poll(poll_timeout)
        if m is not None and m.error() is None:
            got.append([m.offset(), m.value().decode()])
        position = c.position([kafka.TopicPartition(topic, 0)])[0].offset
        if m is None and position >= 0 and position >= high - 1:
            break                      # at the end (the last offset may be the final transaction's marker)
    c.close()
    h.add("consumer-0", "poll", [["poll", key, got]])
    return h
