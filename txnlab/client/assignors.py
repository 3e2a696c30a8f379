"""Partition assignors run by the group leader on the client (Kafka's ``RangeAssignor`` and
``RoundRobinAssignor``; librdkafka's ``range`` and ``roundrobin`` do the same).

Each takes the members' subscriptions ``{member_id: topics}`` and the partition
counts ``{topic: n}`` and returns ``{member_id: [(topic, partition), ...]}``.
"""
from __future__ import annotations


def range_assign(subscriptions: dict, partitions_per_topic: dict) -> dict:
    """Per topic: members sorted by id; each gets n // m consecutive partitions, the first n % m one more."""
    out: dict = {mid: [] for mid in subscriptions}
    topics = sorted({t for ts in subscriptions.values() for t in ts})
    for topic in topics:
        n = partitions_per_topic.get(topic)
        if not n:
            continue
        members = sorted(mid for mid, ts in subscriptions.items() if topic in ts)
        per, extra = divmod(n, len(members))
        start = 0
        for i, mid in enumerate(members):
            count = per + (1 if i < extra else 0)
            out[mid].extend((topic, p) for p in range(start, start + count))
            start += count
    return out


def roundrobin_assign(subscriptions: dict, partitions_per_topic: dict) -> dict:
    """All partitions in (topic, partition) order dealt to the members in turn (skipping members
    not subscribed to the partition's topic)."""
    out: dict = {mid: [] for mid in subscriptions}
    members = sorted(subscriptions)
    if not members:
        return out
    i = 0
    all_tps = sorted((t, p) for t, n in partitions_per_topic.items()
                     if any(t in ts for ts in subscriptions.values()) for p in range(n))
    for tp in all_tps:
        while tp[0] not in subscriptions[members[i % len(members)]]:
            i += 1
        out[members[i % len(members)]].append(tp)
        i += 1
    return out


ASSIGNORS = {"range": range_assign, "roundrobin": roundrobin_assign}
