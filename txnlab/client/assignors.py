"""Partition assignors run by the group leader on the client (Kafka's ``RangeAssignor``,
``RoundRobinAssignor`` and ``CooperativeStickyAssignor``; librdkafka's ``range``, ``roundrobin`` and
``cooperative-sticky`` do the same).

Each takes the members' subscriptions ``{member_id: topics}`` and the partition
counts ``{topic: n}`` and returns ``{member_id: [(topic, partition), ...]}``; the sticky one also takes what
each member owns now (the ``owned_partitions`` of its subscription, KIP-429).
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


def sticky_assign(subscriptions: dict, partitions_per_topic: dict, owned: dict) -> dict:
    """A balanced assignment that moves as few partitions as it can: each member keeps what it owns (when
    its topic is still subscribed and the partition exists) up to its fair share (``n // m``, one more for the
    ``n % m`` members owning most); the rest go, in (topic, partition) order, to the subscribed member
    holding fewest (ties: lowest member id)."""
    members = sorted(subscriptions)
    out: dict = {mid: [] for mid in members}
    if not members:
        return out
    valid = {(t, p) for t, n in partitions_per_topic.items() for p in range(n)
             if any(t in subscriptions[mid] for mid in members)}
    per, extra = divmod(len(valid), len(members))
    by_owned = sorted(members, key=lambda mid: (-len(owned.get(mid, ())), mid))
    share = {mid: per + (1 if i < extra else 0) for i, mid in enumerate(by_owned)}
    taken: set = set()
    for mid in by_owned:
        for tp in sorted(owned.get(mid, ())):
            if len(out[mid]) < share[mid] and tp in valid and tp not in taken and tp[0] in subscriptions[mid]:
                out[mid].append(tp)
                taken.add(tp)
    for tp in sorted(valid - taken):
        eligible = [mid for mid in members if tp[0] in subscriptions[mid]]
        out[min(eligible, key=lambda mid: (len(out[mid]) >= share[mid], len(out[mid]), mid))].append(tp)
    return {mid: sorted(tps) for mid, tps in out.items()}


def cooperative_sticky_assign(subscriptions: dict, partitions_per_topic: dict, owned: dict) -> dict:
    """KIP-429's cooperative step on top of the sticky assignment: a partition that moves from a member that
    still owns it to another is left out of this round (its owner revokes it and rejoins; the next rebalance
    hands it over), so no partition is ever owned by two members at once."""
    plan = sticky_assign(subscriptions, partitions_per_topic, owned)
    owner = {tp: mid for mid, tps in owned.items() if mid in subscriptions for tp in tps}
    return {mid: [tp for tp in tps if owner.get(tp, mid) == mid] for mid, tps in plan.items()}


ASSIGNORS = {"range": range_assign, "roundrobin": roundrobin_assign}
COOPERATIVE = {"cooperative-sticky": cooperative_sticky_assign}     # protocol.messages.COOPERATIVE_PROTOCOLS
