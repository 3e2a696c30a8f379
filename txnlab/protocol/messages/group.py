"""The consumer group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch."""
from __future__ import annotations

from dataclasses import field
from typing import Optional

from ..message_base import committed_str, tp_str, _err, tps_str, message


# The consumer protocol's subscription, as JoinGroup carries it per protocol: the subscribed topics (a tuple of
# names); for a cooperative assignor (KIP-429) the pair (topics, owned partitions), since its leader must know
# what each member owns now (ConsumerProtocolSubscription v1's owned_partitions).
COOPERATIVE_PROTOCOLS = frozenset({"cooperative-sticky"})


# ---------------------------------------------------------------- groups
@message
class JoinGroupRequest:
    API = "JoinGroup"
    API_KEY = 11
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    group_instance_id: Optional[str]
    protocol_type: str
    protocols: tuple                    # ((name, subscribed topics tuple), ...)

    def describe(self) -> str:
        return f"group {self.group_id!r} member {self.member_id or '(new)'}"


@message
class JoinGroupResponse:
    error: int
    generation_id: int = -1
    protocol_name: str = ""
    leader: str = ""
    member_id: str = ""
    members: tuple = ()                 # ((member_id, group_instance_id, metadata), ...) for the leader

    def describe(self) -> str:
        if self.error:
            return _err(self.error)
        role = "leader" if self.leader == self.member_id else "follower"
        return f"generation {self.generation_id}, {self.member_id} is {role}"


@message
class SyncGroupRequest:
    API = "SyncGroup"
    API_KEY = 14
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: Optional[str]
    assignments: tuple                  # ((member_id, assignment), ...) from the leader only

    def describe(self) -> str:
        return f"group {self.group_id!r} generation {self.generation_id} member {self.member_id}"


@message
class SyncGroupResponse:
    error: int
    assignment: tuple = ()              # ((topic, partition), ...)

    def describe(self) -> str:
        return _err(self.error) if self.error else f"assigned {tps_str(self.assignment) or 'nothing'}"


@message
class HeartbeatRequest:
    API = "Heartbeat"
    API_KEY = 12
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: Optional[str] = None

    def describe(self) -> str:
        return f"group {self.group_id!r} generation {self.generation_id} member {self.member_id}"


@message
class HeartbeatResponse:
    error: int

    def describe(self) -> str:
        return _err(self.error)

    def is_quiet(self) -> bool:
        return self.error == 0


@message
class LeaveGroupRequest:
    API = "LeaveGroup"
    API_KEY = 13
    group_id: str
    member_id: str

    def describe(self) -> str:
        return f"group {self.group_id!r} member {self.member_id}"


@message
class LeaveGroupResponse:
    error: int

    def describe(self) -> str:
        return _err(self.error)


@message
class OffsetCommitRequest:
    API = "OffsetCommit"
    API_KEY = 8
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: Optional[str]
    # tp -> (committed_offset, committed_leader_epoch, committed_metadata), as OffsetCommitRequestPartition orders
    # them; the leader epoch (v6+) is the one of the record before the offset, -1 when the committer knows none
    offsets: dict

    def describe(self) -> str:
        return f"group {self.group_id!r} " + committed_str(self.offsets)


@message
class OffsetCommitResponse:
    errors: dict                        # tp -> error

    def describe(self) -> str:
        return ", ".join(f"{tp_str(tp)} {_err(e)}" for tp, e in sorted(self.errors.items()))


@message
class OffsetFetchRequest:
    API = "OffsetFetch"
    API_KEY = 9
    group_id: str
    partitions: Optional[tuple]         # None = all
    require_stable: bool = True

    def describe(self) -> str:
        return f"group {self.group_id!r}" + (" require_stable" if self.require_stable else "")


@message
class OffsetFetchResponse:
    error: int
    # tp -> (committed_offset, committed_leader_epoch, metadata, error_code) (OffsetFetchResponsePartition's order;
    # the leader epoch v5+, -1 when none was committed with the offset)
    offsets: dict = field(default_factory=dict)

    def describe(self) -> str:
        if self.error:
            return _err(self.error)
        # the committed offset as sent (-1: none committed, said in words beside it, as chapter 01 reads -1)
        return ", ".join(f"{tp_str(tp)}=" + (_err(e) if e else f"{o}" + (
            " (no committed offset)" if o < 0 else f" (leader epoch {le})" if le >= 0 else ""))
            for tp, (o, le, _, e) in sorted(self.offsets.items())) or "no offsets"
