"""A fresh consumer's reading: what a new consumer with a given ``isolation.level`` reads (KAFKA-EOS §4).

Owns ``read``, the chapters' way to ask "what would a reader get now?" by actually reading: a new
``Consumer`` is assigned the partitions from offset 0 and polls until it has been idle three polls in a
row.  Unlike the views, this acts: the consumer is a client of the simulated cluster, its Fetch requests
are steps of the trace and simulated time passes while it polls.  (``cluster_view.visible_records``
answers the same question without fetching.)
"""
from __future__ import annotations

from typing import Iterable

from txnlab import Consumer, TopicPartition


def read(cluster, topic: str, partitions: Iterable[int] = (0,), isolation: str = "read_committed",
         sort: bool = True) -> list[str]:
    """The values a new consumer with this isolation level reads from the start of ``partitions`` of
    ``topic`` (it stops after three empty polls in a row): sorted, or in the order read with sort=False."""
    # confluent-kafka refuses a Consumer without a group.id; assign() never joins the group
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "reader", "isolation.level": isolation,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    out, empty = [], 0
    while empty < 3:
        msg = c.poll(0.5)
        if msg is None:
            empty += 1
        elif msg.error() is None:
            out.append(msg.value().decode())
    c.close()
    return sorted(out) if sort else out
