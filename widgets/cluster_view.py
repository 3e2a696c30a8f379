"""Read-only questions the pictures ask of a cluster (topics, clients, roles, what a reader would see).

Owns small helpers shared by the views and the branch comparison: the user topics, the consumers
with their isolation level and positions, which broker coordinates what, and ``visible_records``:
what a read_committed / read_uncommitted consumer would read from a partition's leader log now
(the LSO / HW bound and the aborted-transaction index, KAFKA-EOS §4), computed without fetching.
"""
from __future__ import annotations

from typing import Optional

INTERNAL = ("__consumer_offsets", "__transaction_state")


def is_kafka(lab) -> bool:
    """Is this lab a Kafka ``Cluster`` (partition logs, coordinators) rather than another design's lab?"""
    from txnlab import Cluster
    return isinstance(lab, Cluster)


def user_topics(cluster) -> list[str]:
    return [t for t in cluster.topics() if t not in INTERNAL]


def partitions_of(cluster, topic: str) -> list[int]:
    out, p = [], 0
    while (topic, p) in cluster.controller.states:
        out.append(p)
        p += 1
    return out


def replica_log(cluster, topic: str, partition: int, broker: Optional[int] = None):
    """A replica's log, or None while the replica does not exist yet (topic being created)."""
    try:
        return cluster.log(topic, partition, broker)
    except KeyError:
        return None


def in_flight_now(cluster) -> list:
    """Messages on the wire now, soonest first (from the event queue: no scan of the history)."""
    msgs = [ev.msg for ev in cluster.kernel.pending_events() if ev.msg is not None and ev.msg.state == "in-flight"]
    return sorted(msgs, key=lambda m: (m.deliver_at, m.id))


def clients(cluster, kind: Optional[type] = None) -> list:
    """(name, client object) of the cluster's clients, in creation order."""
    return [(n, c) for n, c in cluster.clients.items() if kind is None or isinstance(c, kind)]


def consumers_of(cluster) -> list:
    """(name, isolation.level, {(topic, partition): fetch position}) for every live consumer."""
    from txnlab import Consumer
    out = []
    for name, c in clients(cluster, Consumer):
        iso = getattr(c, "_config", {}).get("isolation.level", "read_committed")
        try:
            # where it fetches (the fetch position), which librdkafka's position() does not say until a message
            # was returned
            c.assignment()
            positions = dict(c.fetcher.fetch_positions())
        except Exception:   # a crashed or closed consumer has no position any more
            continue
        out.append((name, iso, positions))
    return out


def transactional_ids(cluster) -> list[str]:
    """Every transactional.id known to a producer of this cluster or to a coordinator (none outside Kafka)."""
    from txnlab import Producer
    if not is_kafka(cluster):
        return []
    tids = []
    for _, p in clients(cluster, Producer):
        tid = getattr(getattr(p, "transaction_manager", None), "transactional_id", None)
        if tid and tid not in tids:
            tids.append(tid)
    for b in cluster.brokers:
        broker = cluster.broker(b)
        if not broker.alive:
            continue
        for cache in broker.txn_coordinator.state_manager.caches.values():
            for tid in sorted(cache.metadata):
                if tid not in tids:
                    tids.append(tid)
    return tids


def client_of_transactional_id(cluster, tid: str) -> list[str]:
    from txnlab import Producer
    return [n for n, p in clients(cluster, Producer)
            if getattr(getattr(p, "transaction_manager", None), "transactional_id", None) == tid]


def roles(cluster) -> dict:
    """broker id -> list of short role words (leaderships, coordinators); empty outside Kafka."""
    if not is_kafka(cluster):
        return {}
    out: dict = {b: [] for b in cluster.brokers}
    for topic in user_topics(cluster):
        for p in partitions_of(cluster, topic):
            lead = cluster.leader(topic, p)
            if lead in out:
                out[lead].append(f"leader {topic}-{p}")
    for tid in transactional_ids(cluster):
        b = cluster.transaction_coordinator(tid)
        if b in out:
            out[b].append(f"txn coordinator of {tid!r}")
    return out


def visible_records(cluster, topic: str, partition: int) -> dict:
    """What readers would get from the leader's log now: values by isolation level, with offsets."""
    log = replica_log(cluster, topic, partition)
    if log is None:
        return {"read_committed": [], "read_uncommitted": [], "lso": 0, "hw": 0, "leo": 0}
    lso, hw = log.last_stable_offset, log.high_watermark
    ranges: dict = {}
    for a in log.txn_index.all():            # the aborted-transaction index, as a fetch would use it
        ranges.setdefault(a.producer_id, []).append((a.first_offset, a.last_offset))
    rc, ru = [], []
    for b in log.batches:
        if b.is_control:
            continue
        hidden = any(first <= b.base_offset <= last for first, last in ranges.get(b.producer_id, ()))
        for i, r in enumerate(b.records):
            off = b.base_offset + i
            value = r.value.decode("utf-8", "replace") if r.value is not None else None
            if off < hw:
                ru.append((off, value))
            if off < lso and not hidden:
                rc.append((off, value))
    return {"read_committed": rc, "read_uncommitted": ru, "lso": lso, "hw": hw, "leo": log.log_end_offset}
