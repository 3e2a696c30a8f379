"""The records of ``__consumer_offsets`` (Kafka's ``GroupMetadataManager`` key/value schemas).

Owns how a committed offset and a group's membership become a record of the
offsets topic and back.  Every key and value is an int16 schema version
followed by compact JSON of the Kafka schema's fields, so a picture can show
them as they are:

* ``OffsetCommitKey`` (version 0/1): ``{group, topic, partition}``
* ``OffsetCommitValue`` (version 3): ``{offset, leaderEpoch, metadata, commitTimestamp}``
* ``GroupMetadataKey`` (version 2): ``{group}``
* ``GroupMetadataValue`` (version 3): ``{protocolType, generation, protocol, leader,
  currentStateTimestamp, members: [{memberId, groupInstanceId, clientId, clientHost,
  rebalanceTimeout, sessionTimeout, subscription, assignment}]}``

A value of ``None`` is a tombstone (the offset or the group was deleted).
"""
from __future__ import annotations

import json
import struct
from typing import NamedTuple, Optional, Union

from ..protocol.record_batch import Record

_VERSION = struct.Struct(">h")

OFFSET_COMMIT_KEY_VERSION = 1
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3


class OffsetCommitKey(NamedTuple):
    group: str
    topic: str
    partition: int

    @property
    def tp(self) -> tuple:
        return (self.topic, self.partition)


class OffsetCommitValue(NamedTuple):
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0


class GroupMetadataKey(NamedTuple):
    group: str


class MemberRecord(NamedTuple):
    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: tuple          # subscribed topics
    assignment: tuple            # ((topic, partition), ...)


class GroupMetadataValue(NamedTuple):
    protocol_type: str
    generation: int
    protocol: Optional[str]
    leader: Optional[str]
    current_state_timestamp: int
    members: tuple               # (MemberRecord, ...)


Key = Union[OffsetCommitKey, GroupMetadataKey]


_JSON = json.JSONEncoder(separators=(",", ":"))


def _encode(version: int, fields: dict) -> bytes:
    return _VERSION.pack(version) + _JSON.encode(fields).encode("utf-8")


def _decode(data: bytes) -> tuple[int, dict]:
    version = _VERSION.unpack_from(data)[0]
    return version, json.loads(data[2:].decode("utf-8"))


# ------------------------------------------------------------------ encode
def offset_commit_key(group: str, tp: tuple) -> bytes:
    return _encode(OFFSET_COMMIT_KEY_VERSION, {"group": group, "topic": tp[0], "partition": tp[1]})


def offset_commit_value(offset: int, metadata: str, commit_timestamp: int, leader_epoch: int = -1) -> bytes:
    return _encode(OFFSET_COMMIT_VALUE_VERSION, {"offset": offset, "leaderEpoch": leader_epoch,
                                                 "metadata": metadata or "", "commitTimestamp": commit_timestamp})


def group_metadata_key(group: str) -> bytes:
    return _encode(GROUP_METADATA_KEY_VERSION, {"group": group})


def group_metadata_value(value: GroupMetadataValue) -> bytes:
    members = [{"memberId": mr.member_id, "groupInstanceId": mr.group_instance_id, "clientId": mr.client_id,
                "clientHost": mr.client_host, "rebalanceTimeout": mr.rebalance_timeout,
                "sessionTimeout": mr.session_timeout, "subscription": list(mr.subscription),
                "assignment": [[t, p] for t, p in mr.assignment]}
               for mr in value.members]
    return _encode(GROUP_METADATA_VALUE_VERSION, {
        "protocolType": value.protocol_type, "generation": value.generation, "protocol": value.protocol,
        "leader": value.leader, "currentStateTimestamp": value.current_state_timestamp, "members": members})


# ------------------------------------------------------------------ decode
def read_key(data: bytes) -> Key:
    version, f = _decode(data)
    if version in (0, 1):
        return OffsetCommitKey(f["group"], f["topic"], f["partition"])
    if version == 2:
        return GroupMetadataKey(f["group"])
    raise ValueError(f"unknown __consumer_offsets key version {version}")


def read_offset_value(data: Optional[bytes]) -> Optional[OffsetCommitValue]:
    if data is None:
        return None
    _, f = _decode(data)
    return OffsetCommitValue(f["offset"], f.get("leaderEpoch", -1), f.get("metadata", ""),
                             f.get("commitTimestamp", 0))


def read_group_value(data: Optional[bytes]) -> Optional[GroupMetadataValue]:
    if data is None:
        return None
    _, f = _decode(data)
    members = tuple(MemberRecord(m["memberId"], m.get("groupInstanceId"), m.get("clientId", ""),
                                 m.get("clientHost", ""), m.get("rebalanceTimeout", 0),
                                 m.get("sessionTimeout", 0), tuple(m.get("subscription", ())),
                                 tuple((t, p) for t, p in m.get("assignment", ())))
                    for m in f.get("members", ()))
    return GroupMetadataValue(f.get("protocolType", ""), f["generation"], f.get("protocol"), f.get("leader"),
                              f.get("currentStateTimestamp", 0), members)


def describe_record(key: bytes, value: Optional[bytes]) -> str:
    """One line for pictures: the key and value as their schemas name them."""
    k = read_key(key)
    if isinstance(k, OffsetCommitKey):
        v = read_offset_value(value)
        return (f"OffsetCommit {k.group}/{k.topic}-{k.partition} = "
                + ("tombstone" if v is None else str(v.offset)))
    g = read_group_value(value)
    if g is None:
        return f"GroupMetadata {k.group} = tombstone"
    return (f"GroupMetadata {k.group} generation {g.generation} protocol {g.protocol} leader {g.leader} "
            f"members {[mr.member_id for mr in g.members]}")


def decode_json(data: Optional[bytes]) -> Optional[dict]:
    """The raw fields of a key or value, with its version (for tables in notebooks)."""
    if data is None:
        return None
    version, f = _decode(data)
    return {"version": version, **f}


# ------------------------------------------------------------------ batches
def offset_commit_records(group: str, offsets: dict, now: int) -> tuple:
    """A record per partition, in partition order.  The group coordinator's batch (``group_batch``) holds them: a
    transactional one is a batch of the producer's id and epoch, so the partition's producer state opens a
    transaction for it and the marker closes it; written as a coordinator (no sequence number), as Kafka does."""
    return tuple(Record(offset_commit_key(group, tp), offset_commit_value(off, meta, now, epoch), (), now)
                 for tp, (off, epoch, meta) in sorted(offsets.items()))


def group_metadata_record(group: str, value: Optional[GroupMetadataValue], now: int) -> Record:
    v = None if value is None else group_metadata_value(value)
    return Record(group_metadata_key(group), v, (), now)
