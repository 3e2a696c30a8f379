"""A consumer group as its coordinator sees it (Kafka's ``GroupMetadata`` and ``MemberMetadata``).

Owns the group state machine (Empty, PreparingRebalance, CompletingRebalance,
Stable, Dead) with its legal transitions as data, the members and their
subscriptions/assignments, the generation, the leader, the committed offsets,
and the offset commits still waiting for their write (plain ones) or for their
transaction's marker (transactional ones, KAFKA-EOS §5).
"""
from __future__ import annotations

from enum import Enum
from typing import Optional


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


S = GroupState
# Kafka's GroupState.validPreviousStates, as data: target -> legal previous states.
VALID_PREVIOUS_STATES = {
    S.DEAD: {S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.EMPTY: {S.PREPARING_REBALANCE},
}


class OffsetAndMetadata:
    """A committed offset with the leader epoch it was committed with (-1: none; Kafka's OffsetAndMetadata keeps
    ``leaderEpoch`` as OffsetAndMetadata.fromRequest reads committedLeaderEpoch), and the offset of the record that
    carries it in ``__consumer_offsets`` (Kafka's ``CommitRecordMetadataAndOffset``: a newer record wins when a
    transaction commits)."""

    __slots__ = ("offset", "leader_epoch", "metadata", "commit_timestamp", "record_offset")

    def __init__(self, offset: int, leader_epoch: int = -1, metadata: str = "", commit_timestamp: int = 0,
                 record_offset: Optional[int] = None) -> None:
        self.offset = offset
        self.leader_epoch = leader_epoch
        self.metadata = metadata
        self.commit_timestamp = commit_timestamp
        self.record_offset = record_offset       # None until the write is in the log

    def older_than(self, other: "OffsetAndMetadata") -> bool:
        return (self.record_offset if self.record_offset is not None else -1) < \
            (other.record_offset if other.record_offset is not None else -1)

    def __repr__(self) -> str:
        return f"OffsetAndMetadata({self.offset}, record at {self.record_offset})"


class MemberMetadata:
    """One member: its subscription, assignment, timeouts, and the answer it waits for."""

    __slots__ = ("member_id", "group_instance_id", "client_id", "client_host", "session_timeout_ms",
                 "rebalance_timeout_ms", "protocol_type", "protocols", "assignment", "awaiting_join",
                 "awaiting_sync", "heartbeat_timer", "last_heartbeat", "is_new")

    def __init__(self, member_id: str, group_instance_id: Optional[str], client_id: str,
                 session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                 protocols: tuple) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = tuple(protocols)        # ((name, subscribed topics), ...) by preference
        self.assignment: tuple = ()
        self.awaiting_join = None                # the JoinGroup request message waiting for its answer
        self.awaiting_sync = None                # the SyncGroup request message waiting for its answer
        self.heartbeat_timer = None
        self.last_heartbeat = 0
        self.is_new = False

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> tuple:
        for name, topics in self.protocols:
            if name == protocol:
                return tuple(topics)
        return ()

    def subscription(self) -> tuple:
        return tuple(self.protocols[0][1]) if self.protocols else ()

    def has_satisfied_heartbeat(self) -> bool:
        """A member waiting for its JoinGroup or SyncGroup answer is alive by definition."""
        return self.awaiting_join is not None or self.awaiting_sync is not None

    def __repr__(self) -> str:
        return f"Member({self.member_id}, assignment={list(self.assignment)})"


class GroupMetadata:
    """One group: its state, generation, members and offsets."""

    def __init__(self, group_id: str, state: GroupState = GroupState.EMPTY, now: int = 0) -> None:
        self.group_id = group_id
        self.state = state
        self.state_timestamp = now
        self.generation_id = 0
        self.protocol_type: Optional[str] = None
        self.protocol_name: Optional[str] = None
        self.leader_id: Optional[str] = None
        self.members: dict[str, MemberMetadata] = {}
        self.pending_members: dict[str, object] = {}     # member id -> expiry timer (KIP-394)
        self.static_members: dict[str, str] = {}         # group.instance.id -> member id
        self.new_member_added = False
        self.join_timer = None                           # DelayedJoin / InitialDelayedJoin
        self.initial_delay_remaining = 0
        self.offsets: dict[tuple, OffsetAndMetadata] = {}
        self.pending_offset_commits: dict[tuple, OffsetAndMetadata] = {}
        # producer id -> {tp: OffsetAndMetadata}: written in a transaction that has no marker yet
        self.pending_transactional_offset_commits: dict[int, dict[tuple, OffsetAndMetadata]] = {}

    # ------------------------------------------------------------- states
    def is_state(self, state: GroupState) -> bool:
        return self.state is state

    def can_transition_to(self, target: GroupState) -> bool:
        return self.state in VALID_PREVIOUS_STATES[target]

    def transition_to(self, target: GroupState, now: int) -> GroupState:
        if not self.can_transition_to(target):
            raise RuntimeError(f"group {self.group_id!r} should be in one of "
                               f"{sorted(str(s) for s in VALID_PREVIOUS_STATES[target])} before moving to "
                               f"{target}, but it is {self.state}")
        old, self.state = self.state, target
        self.state_timestamp = now
        return old

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    # ------------------------------------------------------------ members
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Optional[MemberMetadata]:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            # the next member that already rejoined becomes leader, else any member
            joined = [m for m in self.members.values() if m.awaiting_join is not None]
            nxt = joined[0] if joined else next(iter(self.members.values()), None)
            self.leader_id = nxt.member_id if nxt is not None else None
        return member

    def static_member_id(self, group_instance_id: Optional[str]) -> Optional[str]:
        if group_instance_id is None:
            return None
        return self.static_members.get(group_instance_id)

    def all_members_joined(self) -> bool:
        return all(m.awaiting_join is not None for m in self.members.values()) and not self.pending_members

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # ---------------------------------------------------------- protocols
    def candidate_protocols(self) -> set:
        """Protocols every member supports."""
        sets = [set(m.protocol_names()) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(self.candidate_protocols() & set(names))

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol among the candidates."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = next(n for n in m.protocol_names() if n in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(sorted(votes), key=lambda n: votes[n])

    def init_next_generation(self, now: int) -> None:
        if self.members:
            self.generation_id += 1
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now)
        else:
            self.generation_id += 1
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now)

    # ------------------------------------------------------------- offsets
    def has_pending_transactional_offsets(self, tp: tuple) -> bool:
        """Kafka 4.1.1 OffsetMetadataManager.hasPendingTransactionalOffsets: a transaction's offsets of ``tp`` await
        its marker (what RequireStable answers UNSTABLE_OFFSET_COMMIT)."""
        return any(tp in offs for offs in self.pending_transactional_offset_commits.values())

    def has_offsets(self) -> bool:
        return bool(self.offsets or self.pending_offset_commits or self.pending_transactional_offset_commits)

    def describe(self) -> dict:
        return {
            "group_id": self.group_id,
            "state": str(self.state),
            "generation_id": self.generation_id,
            "protocol_type": self.protocol_type,
            "protocol": self.protocol_name,
            "leader": self.leader_id,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "client_id": m.client_id, "subscription": list(m.subscription()),
                         "assignment": sorted(m.assignment),
                         "awaiting": "JoinGroup" if m.awaiting_join is not None
                         else "SyncGroup" if m.awaiting_sync is not None else None}
                        for m in self.members.values()],
            "pending_members": sorted(self.pending_members),
        }
