"""The consumer group APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch) between
kio and the engine, and the consumer protocol's embedded bytes (``ConsumerProtocolSubscription`` /
``ConsumerProtocolAssignment``): the engine's group coordinator reads a member's subscribed topics and the
leader's assignment as tuples, a real client sends them as these small versioned structs."""
from __future__ import annotations

import struct

from ..protocol import messages as m
from ..protocol.errors import Errors
from .codec import build, get, ms, nested


class ProtocolBytesError(ValueError):
    pass


def _string(buf: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", buf, pos)
    pos += 2
    if n < 0 or pos + n > len(buf):
        raise ProtocolBytesError("a string runs past the end")
    return buf[pos:pos + n].decode("utf-8"), pos + n


def _partitions(data: bytes, pos: int) -> tuple[list, int]:
    """A ``[topic, [partition...]]...`` array (an assignment's, or a subscription's owned partitions)."""
    (n,) = struct.unpack_from(">i", data, pos)
    pos += 4
    tps = []
    for _ in range(max(n, 0)):
        t, pos = _string(data, pos)
        (k,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for _ in range(max(k, 0)):
            (p,) = struct.unpack_from(">i", data, pos)
            pos += 4
            tps.append((t, p))
    return tps, pos


def decode_subscription(data: bytes, protocol: str = "") -> tuple:
    """A ``ConsumerProtocolSubscription`` (any version) as the engine keeps it: the subscribed topics, or for a
    cooperative protocol ``(topics, owned partitions)`` (v1+ carries them after the user data)."""
    try:
        (version,) = struct.unpack_from(">h", data, 0)
        pos = 2
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        topics = []
        for _ in range(max(n, 0)):
            t, pos = _string(data, pos)
            topics.append(t)
        if protocol not in m.COOPERATIVE_PROTOCOLS:
            return tuple(topics)
        owned: list = []
        if version >= 1 and pos + 4 <= len(data):
            (k,) = struct.unpack_from(">i", data, pos)          # user data (nullable bytes), skipped
            pos += 4 + max(k, 0)
            if pos + 4 <= len(data):
                owned, pos = _partitions(data, pos)
        return tuple(topics), tuple(sorted(owned))
    except (struct.error, UnicodeDecodeError) as e:
        raise ProtocolBytesError(f"subscription metadata: {e}") from None


def _put_string(out: bytearray, s: str) -> None:
    b = s.encode("utf-8")
    out += struct.pack(">h", len(b)) + b


def _put_partitions(out: bytearray, tps) -> None:
    by_topic: dict = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    out += struct.pack(">i", len(by_topic))
    for t, ps in by_topic.items():
        _put_string(out, t)
        out += struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in sorted(ps))


def encode_subscription(meta, protocol: str = "") -> bytes:
    """The engine's subscription as ``ConsumerProtocolSubscription``: v0 with the topics, or v1 with the owned
    partitions for a cooperative protocol."""
    cooperative = protocol in m.COOPERATIVE_PROTOCOLS and len(meta) == 2 and isinstance(meta[0], tuple)
    topics, owned = (meta[0], meta[1]) if cooperative else (meta, ())
    out = bytearray(struct.pack(">hi", 1 if cooperative else 0, len(topics)))
    for t in topics:
        _put_string(out, t)
    out += struct.pack(">i", -1)
    if cooperative:
        _put_partitions(out, owned)
    return bytes(out)


def decode_assignment(data: bytes) -> tuple:
    if not data:
        return ()
    try:
        return tuple(_partitions(data, 2)[0])
    except (struct.error, UnicodeDecodeError) as e:
        raise ProtocolBytesError(f"assignment: {e}") from None


def encode_assignment(tps) -> bytes:
    out = bytearray(struct.pack(">h", 0))
    _put_partitions(out, tps)
    out += struct.pack(">i", -1)
    return bytes(out)


# -------------------------------------------------------------- JoinGroup
def decode_join_group(body, version, door):
    protocols = tuple((p.name, decode_subscription(p.metadata, p.name) if body.protocol_type == "consumer" else ())
                      for p in body.protocols)
    session = ms(body.session_timeout)
    return m.JoinGroupRequest(body.group_id, session, ms(get(body, "rebalance_timeout"), session), body.member_id,
                              get(body, "group_instance_id"), body.protocol_type, protocols), None


def encode_join_group(resp, body, version, state, door, cls):
    Member = nested(cls, "members")
    members = tuple(build(Member, member_id=mid, group_instance_id=gid, metadata=encode_subscription(meta, resp.protocol_name))
                    for mid, gid, meta in resp.members)
    return build(cls, error_code=resp.error, generation_id=resp.generation_id, protocol_type=body.protocol_type,
                 protocol_name=resp.protocol_name or (None if version >= 7 else ""), leader=resp.leader,
                 skip_assignment=False, member_id=resp.member_id, members=members)


# -------------------------------------------------------------- SyncGroup
def decode_sync_group(body, version, door):
    assignments = tuple((a.member_id, decode_assignment(a.assignment)) for a in body.assignments)
    return m.SyncGroupRequest(body.group_id, body.generation_id, body.member_id, get(body, "group_instance_id"),
                              assignments), None


def encode_sync_group(resp, body, version, state, door, cls):
    return build(cls, error_code=resp.error, protocol_type=get(body, "protocol_type"),
                 protocol_name=get(body, "protocol_name"), assignment=encode_assignment(resp.assignment))


# --------------------------------------------------------------- Heartbeat
def decode_heartbeat(body, version, door):
    return m.HeartbeatRequest(body.group_id, body.generation_id, body.member_id, get(body, "group_instance_id")), None


def encode_heartbeat(resp, body, version, state, door, cls):
    return build(cls, error_code=resp.error)


# -------------------------------------------------------------- LeaveGroup
def decode_leave_group(body, version, door):
    members = get(body, "members")
    member_id = members[0].member_id if members else get(body, "member_id", "")
    return m.LeaveGroupRequest(body.group_id, member_id), members


def encode_leave_group(resp, body, version, members, door, cls):
    if members is None:
        return build(cls, error_code=resp.error)
    Member = nested(cls, "members")
    return build(cls, error_code=resp.error if len(members) <= 1 else 0,
                 members=tuple(build(Member, member_id=x.member_id, group_instance_id=x.group_instance_id,
                                     error_code=resp.error) for x in members))


# ------------------------------------------------------------ OffsetCommit
def committed_offsets(body) -> dict:
    """{tp: (offset, leader epoch, metadata)} of an OffsetCommit or TxnOffsetCommit body: CommittedLeaderEpoch is in
    OffsetCommit v6+ and TxnOffsetCommit v2+ (-1 before, and when the client knows none)."""
    return {(t.name, p.partition_index): (p.committed_offset, get(p, "committed_leader_epoch", -1),
                                          p.committed_metadata or "")
            for t in body.topics for p in t.partitions}


def decode_offset_commit(body, version, door):
    offsets = committed_offsets(body)
    gen = get(body, "generation_id_or_member_epoch", get(body, "generation_id", -1))
    return m.OffsetCommitRequest(body.group_id, gen, body.member_id, get(body, "group_instance_id"), offsets), None


def encode_offset_commit(resp, body, version, state, door, cls):
    Topic = nested(cls, "topics")
    Part = nested(Topic, "partitions")
    return build(cls, topics=tuple(
        build(Topic, name=t.name, partitions=tuple(
            build(Part, partition_index=p.partition_index,
                  error_code=resp.errors.get((t.name, p.partition_index), Errors.UNKNOWN_TOPIC_OR_PARTITION))
            for p in t.partitions)) for t in body.topics))


# ------------------------------------------------------------- OffsetFetch
def decode_offset_fetch(body, version, door):
    tps = None
    if body.topics is not None:
        tps = tuple((t.name, p) for t in body.topics for p in t.partition_indexes)
    return m.OffsetFetchRequest(body.group_id, tps, bool(get(body, "require_stable", False))), tps


def encode_offset_fetch(resp, body, version, tps, door, cls):
    Topic = nested(cls, "topics")
    Part = nested(Topic, "partitions")
    wanted = list(tps) if tps is not None else sorted(resp.offsets)
    by_topic: dict = {}
    for tp in wanted:
        off, epoch, meta, err = resp.offsets.get(tp, (-1, -1, "", 0))
        if resp.error and version < 2:
            err = resp.error
        by_topic.setdefault(tp[0], []).append(      # (build leaves out a field the version lacks: the epoch is v5+)
            build(Part, partition_index=tp[1], committed_offset=off, committed_leader_epoch=epoch,
                  metadata=meta or "", error_code=err))
    return build(cls, error_code=resp.error,
                 topics=tuple(build(Topic, name=t, partitions=tuple(ps)) for t, ps in by_topic.items()))
