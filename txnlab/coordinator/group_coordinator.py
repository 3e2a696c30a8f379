"""Kafka's classic group coordinator (``GroupCoordinator``): membership and offsets of consumer groups.

Owns the request handlers JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch and TxnOffsetCommit for the groups whose
``__consumer_offsets`` partition this broker leads; the rebalance protocol
(joins parked until every member rejoined or the rebalance timeout passed,
the initial rebalance delay of an empty group, generations, the leader's
assignment), session timeouts, and the member/generation checks of KIP-447.
The offset requests are in ``group_offsets``; storage and loading in
``group_metadata_manager``; the write path to ``__consumer_offsets`` (Kafka 4.1.1's
CoordinatorRuntime: batches, group.coordinator.append.linger.ms, deferred answers) in ``group_batch``.
"""
from __future__ import annotations

from typing import Optional

from ..protocol import messages as m
from ..protocol.errors import Errors
from .group_metadata import GroupMetadata, GroupState, MemberMetadata
from ..protocol.names import OFFSETS_TOPIC
from .group_metadata_manager import GroupMetadataManager
from .group_offsets import GroupOffsetHandlers

S = GroupState


class GroupCoordinator(GroupOffsetHandlers):
    def __init__(self, broker) -> None:
        self.broker = broker
        self.kernel = broker.kernel
        self.config = broker.config
        self.manager = GroupMetadataManager(broker)

    def narrate(self, text: str) -> None:
        self.broker.narrate(text)

    @property
    def groups(self) -> dict:
        return self.manager.groups

    # ------------------------------------------------------------ broker hooks
    def on_elected(self, partition_index: int, leader_epoch: int) -> None:
        mgr = self.manager
        mgr.owned[partition_index] = leader_epoch
        mgr.loading.add(partition_index)
        self.narrate(f"broker {self.broker.broker_id} leads {OFFSETS_TOPIC}-{partition_index} (leader epoch "
                     f"{leader_epoch}): it becomes group coordinator for the groups that hash there and loads "
                     f"the partition first (until then: COORDINATOR_LOAD_IN_PROGRESS)")
        self.broker.set_timer(0, f"load {OFFSETS_TOPIC}-{partition_index}",
                              lambda: self._load(partition_index, leader_epoch))

    def _load(self, partition_index: int, leader_epoch: int) -> None:
        mgr = self.manager
        if mgr.owned.get(partition_index) != leader_epoch:
            return
        groups = mgr.load(partition_index)
        mgr.loading.discard(partition_index)
        for group in groups:
            for member in group.members.values():
                self._schedule_heartbeat(group, member)

    def on_resigned(self, partition_index: int, leader_epoch: int) -> None:
        mgr = self.manager
        if mgr.owned.pop(partition_index, None) is None:
            return
        mgr.loading.discard(partition_index)
        mgr.runtime.unload(partition_index)
        gone = mgr.unload(partition_index)
        self.narrate(f"broker {self.broker.broker_id} no longer leads {OFFSETS_TOPIC}-{partition_index}: it stops "
                     f"coordinating {len(gone)} group(s) (their waiting members get NOT_COORDINATOR)")
        now = self.kernel.now
        for group in gone:
            self._cancel_join_timer(group)
            for member in group.members.values():
                self.broker.cancel_timer(member.heartbeat_timer)
                self._answer_join(member, m.JoinGroupResponse(Errors.NOT_COORDINATOR, member_id=member.member_id))
                self._answer_sync(member, m.SyncGroupResponse(Errors.NOT_COORDINATOR))
            group.transition_to(S.DEAD, now)

    def on_high_watermark(self, partition) -> None:
        """The operations the HW passed are applied and answered, in log order (offsets become visible; the
        RequireStable fetches waiting for the writes before them are answered)."""
        self.manager.runtime.on_high_watermark(partition)

    def before_marker(self, partition_index: int) -> None:
        """A transaction marker is about to be written to this offsets partition: Kafka 4.1.1's
        CoordinatorRuntime.completeTransaction appends the current batch first ("in order to respect the
        order")."""
        if partition_index in self.manager.owned:
            self.manager.runtime.flush(partition_index, "first: a transaction marker is written after it")

    def complete_txn(self, partition_index: int, producer_id: int, committed: bool, marker_offset: int) -> None:
        """Called after a COMMIT/ABORT marker of ``producer_id`` was written to this offsets partition."""
        self.manager.complete_txn(partition_index, producer_id, committed, marker_offset)

    # ------------------------------------------------------------------ views
    def describe_group(self, group_id: str) -> Optional[dict]:
        group = self.manager.get_group(group_id)
        if group is None:
            return None
        d = group.describe()
        d["coordinator"] = self.broker.broker_id
        d["offsets_partition"] = self.manager.partition_for(group_id)
        d["offsets"] = {tp: e.offset for tp, e in sorted(group.offsets.items())}
        d["pending_transactional_offsets"] = {
            pid: {tp: e.offset for tp, e in sorted(offs.items())}
            for pid, offs in sorted(group.pending_transactional_offset_commits.items()) if offs}
        return d

    def offsets_view(self) -> list[dict]:
        return self.manager.offsets_view()

    @property
    def pending_transactional_offsets(self) -> dict:
        return self.manager.pending_transactional_offsets

    # ------------------------------------------------------------- helpers
    def _check_coordinator(self, group_id: str, empty_ok: bool = False) -> Optional[Errors]:
        """Is this broker the group's coordinator, ready?  GroupCoordinatorService's isGroupIdNotEmpty refuses the
        empty group id (INVALID_GROUP_ID) except for OffsetCommit and OffsetFetch (``empty_ok``), which refuse only
        a null one: "for backwards compatibility, we support offset commits for the empty groupId"."""
        if not group_id and not empty_ok:
            return Errors.INVALID_GROUP_ID
        mgr = self.manager
        idx = mgr.partition_for(group_id)
        if idx not in mgr.owned:
            self.narrate(f"group {group_id!r} lives on {OFFSETS_TOPIC}-{idx}, which broker {self.broker.broker_id} "
                         f"does not lead -> NOT_COORDINATOR")
            return Errors.NOT_COORDINATOR
        if idx in mgr.loading:
            self.narrate(f"{OFFSETS_TOPIC}-{idx} is still loading -> COORDINATOR_LOAD_IN_PROGRESS")
            return Errors.COORDINATOR_LOAD_IN_PROGRESS
        return None

    def _new_member_id(self, client_id: str) -> str:
        return f"{client_id}-{self.kernel.rng.getrandbits(32):08x}"

    def _answer_join(self, member: MemberMetadata, response) -> None:
        msg, member.awaiting_join = member.awaiting_join, None
        if msg is not None:
            self.broker.respond(msg, response)

    def _answer_sync(self, member: MemberMetadata, response) -> None:
        msg, member.awaiting_sync = member.awaiting_sync, None
        if msg is not None:
            self.broker.respond(msg, response)

    def _join_response(self, group: GroupMetadata, member: MemberMetadata):
        members = ()
        if group.is_leader(member.member_id):
            members = tuple((x.member_id, x.group_instance_id, x.metadata(group.protocol_name))
                            for x in group.members.values())
        return m.JoinGroupResponse(Errors.NONE, group.generation_id, group.protocol_name or "", group.leader_id or "",
                                   member.member_id, members)

    def _validate_member(self, group: GroupMetadata, member_id: str, instance_id: Optional[str],
                         what: str) -> Optional[Errors]:
        """Kafka's validateCurrentMember: static members are fenced by instance id, others by member id."""
        if instance_id is not None:
            current = group.static_member_id(instance_id)
            if current is not None and current != member_id:
                self.narrate(f"group {group.group_id!r}: group.instance.id {instance_id!r} now belongs to member "
                             f"{current}, not {member_id} -> FENCED_INSTANCE_ID ({what})")
                return Errors.FENCED_INSTANCE_ID
        if not group.has(member_id):
            self.narrate(f"group {group.group_id!r} has no member {member_id or '(none)'!s} -> UNKNOWN_MEMBER_ID ({what})")
            return Errors.UNKNOWN_MEMBER_ID
        return None

    # ----------------------------------------------------------- heartbeats
    def _schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self.broker.cancel_timer(member.heartbeat_timer)
        member.last_heartbeat = self.kernel.now
        timeout = member.session_timeout_ms
        member.heartbeat_timer = self.broker.set_timer(
            timeout, f"session timeout of {member.member_id} (group {group.group_id!r})",
            lambda: self._on_expire_heartbeat(group, member), background=True)

    def _on_expire_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        if self.manager.get_group(group.group_id) is not group or group.members.get(member.member_id) is not member:
            return
        if member.has_satisfied_heartbeat():
            return
        self.kernel.current.background = False
        self._remove_member_and_update_group(
            group, member, f"member {member.member_id} left (session timeout {member.session_timeout_ms} ms "
                           f"passed without a Heartbeat)")

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata, reason: str) -> None:
        self.broker.cancel_timer(member.heartbeat_timer)
        self._answer_join(member, m.JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID, member_id=member.member_id))
        self._answer_sync(member, m.SyncGroupResponse(Errors.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)      # its narration gives the reason
            return
        self.narrate(f"group {group.group_id!r}: {reason}")
        if group.is_state(S.PREPARING_REBALANCE):
            self._try_complete_join(group)

    # ------------------------------------------------------------ rebalance
    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        now = self.kernel.now
        if group.is_state(S.COMPLETING_REBALANCE):
            # the assignment being synced is void: every member must rejoin
            for member in group.members.values():
                member.assignment = ()
                self._answer_sync(member, m.SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS))
        was_empty = group.is_state(S.EMPTY)
        group.transition_to(S.PREPARING_REBALANCE, now)
        self._cancel_join_timer(group)
        timeout = group.rebalance_timeout_ms()
        if was_empty:
            delay = self.config["group.initial.rebalance.delay.ms"]
            group.initial_delay_remaining = max(timeout - delay, 0)
            group.new_member_added = False
            self.narrate(f"group {group.group_id!r} rebalances: {reason}; the group was Empty, so it waits "
                         f"group.initial.rebalance.delay.ms={delay} ms for more members -> PreparingRebalance")
            group.join_timer = self.broker.set_timer(
                delay, f"initial rebalance delay of group {group.group_id!r}",
                lambda: self._on_initial_delay_expired(group, delay))
        else:
            if group.members:
                self.narrate(f"group {group.group_id!r} rebalances: {reason} -> PreparingRebalance; every member "
                             f"must send JoinGroup within the rebalance timeout {timeout} ms (generation "
                             f"{group.generation_id} ends)")
            else:
                self.narrate(f"group {group.group_id!r} rebalances: {reason} -> PreparingRebalance")
            group.join_timer = self.broker.set_timer(
                timeout, f"rebalance timeout of group {group.group_id!r}",
                lambda: self._on_join_timeout(group), background=True)
            self._try_complete_join(group)

    def _cancel_join_timer(self, group: GroupMetadata) -> None:
        self.broker.cancel_timer(group.join_timer)
        group.join_timer = None

    def _on_initial_delay_expired(self, group: GroupMetadata, delay: int) -> None:
        group.join_timer = None
        if not self._is_current(group) or not group.is_state(S.PREPARING_REBALANCE):
            return
        remaining = group.initial_delay_remaining
        if group.new_member_added and remaining > 0:
            step = min(delay, remaining)
            group.initial_delay_remaining = max(remaining - delay, 0)
            group.new_member_added = False
            self.narrate(f"group {group.group_id!r}: a new member joined during the initial delay, so it waits "
                         f"{step} ms more (at most the rebalance timeout in total)")
            group.join_timer = self.broker.set_timer(
                step, f"initial rebalance delay of group {group.group_id!r}",
                lambda: self._on_initial_delay_expired(group, delay))
            return
        self._complete_join(group)

    def _on_join_timeout(self, group: GroupMetadata) -> None:
        group.join_timer = None
        if not self._is_current(group) or not group.is_state(S.PREPARING_REBALANCE):
            return
        self.kernel.current.background = False
        self._complete_join(group)

    def _try_complete_join(self, group: GroupMetadata) -> None:
        """A DelayedJoin completes as soon as every known member has rejoined."""
        if group.is_state(S.PREPARING_REBALANCE) and not self._in_initial_delay(group) \
                and group.all_members_joined():
            self._complete_join(group)

    def _in_initial_delay(self, group: GroupMetadata) -> bool:
        t = group.join_timer
        return t is not None and not t.cancelled and t.name.startswith("initial rebalance delay")

    def _is_current(self, group: GroupMetadata) -> bool:
        return self.manager.get_group(group.group_id) is group

    def _complete_join(self, group: GroupMetadata) -> None:
        self._cancel_join_timer(group)
        group.initial_delay_remaining = 0
        now = self.kernel.now
        for member in group.not_yet_rejoined():
            self.broker.cancel_timer(member.heartbeat_timer)
            group.remove(member.member_id)
            self.narrate(f"group {group.group_id!r}: member {member.member_id} did not rejoin within the rebalance "
                         f"timeout and is removed")
        for pending_id, timer in list(group.pending_members.items()):
            self.broker.cancel_timer(timer)
            del group.pending_members[pending_id]
        group.init_next_generation(now)
        if group.is_state(S.EMPTY):
            self.narrate(f"group {group.group_id!r}: no member left -> Empty (generation {group.generation_id})")
            self.manager.store_group(group, {}, lambda err: None)
            return
        leader = group.leader_id
        self.narrate(f"group {group.group_id!r}: generation {group.generation_id} with members "
                     f"{list(group.members)}, leader {leader}, protocol {group.protocol_name!r} -> CompletingRebalance "
                     f"(JoinGroup answered; the leader computes the assignment and sends it with SyncGroup)")
        for member in group.members.values():
            member.is_new = False
            self._answer_join(member, self._join_response(group, member))
            self._schedule_heartbeat(group, member)

    # --------------------------------------------------------------- JoinGroup
    def handle_JoinGroup(self, msg):
        req = msg.payload
        err = self._check_coordinator(req.group_id)
        if err is not None:
            return m.JoinGroupResponse(err, member_id=req.member_id)
        lo, hi = self.config["group.min.session.timeout.ms"], self.config["group.max.session.timeout.ms"]
        if not lo <= req.session_timeout_ms <= hi:
            self.narrate(f"session.timeout.ms={req.session_timeout_ms} is outside the broker's "
                         f"[group.min.session.timeout.ms={lo}, group.max.session.timeout.ms={hi}] -> INVALID_SESSION_TIMEOUT")
            return m.JoinGroupResponse(Errors.INVALID_SESSION_TIMEOUT, member_id=req.member_id)
        group = self.manager.get_group(req.group_id)
        if group is None:
            if req.member_id:
                self.narrate(f"group {req.group_id!r} does not exist, so member {req.member_id} is unknown "
                             f"-> UNKNOWN_MEMBER_ID")
                return m.JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID, member_id=req.member_id)
            group = self.manager.add_group(GroupMetadata(req.group_id, S.EMPTY, self.kernel.now))
        if group.is_state(S.DEAD):
            return m.JoinGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE, member_id=req.member_id)
        names = [name for name, _ in req.protocols]
        if not group.supports_protocols(req.protocol_type, names):
            self.narrate(f"group {req.group_id!r} uses protocol type {group.protocol_type!r} with "
                         f"{sorted(group.candidate_protocols())}; {msg.src} offers {req.protocol_type!r} {names} "
                         f"-> INCONSISTENT_GROUP_PROTOCOL")
            return m.JoinGroupResponse(Errors.INCONSISTENT_GROUP_PROTOCOL, member_id=req.member_id)
        if not req.member_id:
            return self._join_unknown_member(group, msg)
        return self._join_known_member(group, msg)

    def _join_unknown_member(self, group: GroupMetadata, msg):
        req = msg.payload
        new_id = self._new_member_id(msg.src)
        if req.group_instance_id is not None:
            old_id = group.static_member_id(req.group_instance_id)
            if old_id is not None:
                return self._replace_static_member(group, msg, old_id, new_id)
            self.narrate(f"group {group.group_id!r}: static member {req.group_instance_id!r} joins as {new_id}")
            return self._add_member_and_rebalance(group, msg, new_id)
        # KIP-394: a new dynamic member first gets its id, then joins with it
        timer = self.broker.set_timer(
            req.session_timeout_ms, f"pending member {new_id} of group {group.group_id!r} expires",
            lambda: self._expire_pending_member(group, new_id), background=True)
        group.pending_members[new_id] = timer
        self.narrate(f"group {group.group_id!r}: new member from {msg.src} gets member id {new_id} and must "
                     f"rejoin with it -> MEMBER_ID_REQUIRED")
        return m.JoinGroupResponse(Errors.MEMBER_ID_REQUIRED, member_id=new_id)

    def _expire_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        if group.pending_members.pop(member_id, None) is not None:
            self.narrate(f"group {group.group_id!r}: pending member {member_id} never rejoined; forgotten")
            if group.is_state(S.PREPARING_REBALANCE):
                self._try_complete_join(group)

    def _join_known_member(self, group: GroupMetadata, msg):
        req = msg.payload
        mid = req.member_id
        if mid in group.pending_members:
            self.broker.cancel_timer(group.pending_members.pop(mid))
            return self._add_member_and_rebalance(group, msg, mid)
        err = self._validate_member(group, mid, req.group_instance_id, "JoinGroup")
        if err is not None:
            return m.JoinGroupResponse(err, member_id=mid)
        member = group.get(mid)
        same = tuple(req.protocols) == member.protocols
        if group.is_state(S.PREPARING_REBALANCE):
            return self._update_member_and_rebalance(group, member, msg, "member rejoined")
        if group.is_state(S.COMPLETING_REBALANCE):
            if same:
                self.narrate(f"group {group.group_id!r}: {mid} rejoined with the same subscription while the "
                             f"assignment is being synced; it gets generation {group.generation_id} again")
                return self._join_response(group, member)
            return self._update_member_and_rebalance(group, member, msg, f"member {mid} changed its subscription")
        if group.is_state(S.STABLE):
            if group.is_leader(mid) or not same:
                why = "the leader rejoined" if same else f"member {mid} changed its subscription"
                return self._update_member_and_rebalance(group, member, msg, why)
            self._schedule_heartbeat(group, member)
            return self._join_response(group, member)
        return m.JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID, member_id=mid)

    def _add_member_and_rebalance(self, group: GroupMetadata, msg, member_id: str):
        req = msg.payload
        rebalance_timeout = req.rebalance_timeout_ms if req.rebalance_timeout_ms > 0 else req.session_timeout_ms
        member = MemberMetadata(member_id, req.group_instance_id, msg.src, req.session_timeout_ms,
                                rebalance_timeout, req.protocol_type, req.protocols)
        member.is_new = True
        member.awaiting_join = msg
        group.add(member)
        if group.is_state(S.PREPARING_REBALANCE) and self._in_initial_delay(group):
            group.new_member_added = True
        self._schedule_heartbeat(group, member)
        reason = f"member {member_id} joined"
        if group.is_state(S.PREPARING_REBALANCE):
            self.narrate(f"group {group.group_id!r}: {reason}; the rebalance in progress waits for it")
            self._try_complete_join(group)
        else:
            self._maybe_prepare_rebalance(group, reason)
        return None

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata, msg, reason: str):
        req = msg.payload
        if member.awaiting_join is not None and member.awaiting_join is not msg:
            self._answer_join(member, m.JoinGroupResponse(Errors.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        member.protocols = tuple(req.protocols)
        member.awaiting_join = msg
        if group.is_state(S.PREPARING_REBALANCE):
            self.narrate(f"group {group.group_id!r}: {member.member_id} rejoined "
                         f"({len(group.members) - len(group.not_yet_rejoined())}/{len(group.members)} members in)")
            self._try_complete_join(group)
        else:
            self._maybe_prepare_rebalance(group, reason)
        return None

    def _replace_static_member(self, group: GroupMetadata, msg, old_id: str, new_id: str):
        req = msg.payload
        old = group.get(old_id)
        self._answer_join(old, m.JoinGroupResponse(Errors.FENCED_INSTANCE_ID, member_id=old_id))
        self._answer_sync(old, m.SyncGroupResponse(Errors.FENCED_INSTANCE_ID))
        self.broker.cancel_timer(old.heartbeat_timer)
        was_leader = group.is_leader(old_id)
        del group.members[old_id]
        old.member_id = new_id
        group.members[new_id] = old
        group.static_members[req.group_instance_id] = new_id
        if was_leader:
            group.leader_id = new_id
        self.narrate(f"group {group.group_id!r}: static member {req.group_instance_id!r} came back as {new_id}; "
                     f"its old member id {old_id} is fenced (FENCED_INSTANCE_ID from now on)")
        if group.is_state(S.STABLE) and tuple(req.protocols) == old.protocols:
            # no rebalance: persist the new member id, then hand back the current generation
            self._schedule_heartbeat(group, old)
            assignment = {mid: x.assignment for mid, x in group.members.items()}

            def stored(error):
                self.broker.respond(msg, self._join_response(group, old) if error == Errors.NONE
                                    else m.JoinGroupResponse(error, member_id=new_id))
            self.manager.store_group(group, assignment, stored)
            return None
        return self._update_member_and_rebalance(group, old, msg, f"static member {req.group_instance_id!r} rejoined")

    # --------------------------------------------------------------- SyncGroup
    def handle_SyncGroup(self, msg):
        req = msg.payload
        err = self._check_coordinator(req.group_id)
        if err is not None:
            return m.SyncGroupResponse(err)
        group = self.manager.get_group(req.group_id)
        if group is None:
            return m.SyncGroupResponse(Errors.UNKNOWN_MEMBER_ID)
        if group.is_state(S.DEAD):
            return m.SyncGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE)
        err = self._validate_member(group, req.member_id, req.group_instance_id, "SyncGroup")
        if err is not None:
            return m.SyncGroupResponse(err)
        if req.generation_id != group.generation_id:
            self.narrate(f"group {group.group_id!r} is at generation {group.generation_id}, SyncGroup carries "
                         f"{req.generation_id} -> ILLEGAL_GENERATION")
            return m.SyncGroupResponse(Errors.ILLEGAL_GENERATION)
        member = group.get(req.member_id)
        if group.is_state(S.PREPARING_REBALANCE):
            self.narrate(f"group {group.group_id!r} is rebalancing again -> REBALANCE_IN_PROGRESS (rejoin)")
            return m.SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS)
        if group.is_state(S.STABLE):
            self._schedule_heartbeat(group, member)
            return m.SyncGroupResponse(Errors.NONE, tuple(member.assignment))
        if not group.is_state(S.COMPLETING_REBALANCE):
            return m.SyncGroupResponse(Errors.UNKNOWN_MEMBER_ID)
        member.awaiting_sync = msg
        self._schedule_heartbeat(group, member)
        if not group.is_leader(member.member_id):
            self.narrate(f"group {group.group_id!r}: {member.member_id} waits for the leader's assignment")
            return None
        assignment = {mid: tuple(a) for mid, a in req.assignments}
        for mid in group.members:
            assignment.setdefault(mid, ())
        self.narrate(f"group {group.group_id!r}: leader {member.member_id} sent the assignment "
                     + "; ".join(f"{mid}: {m.tps_str(a) or 'nothing'}" for mid, a in assignment.items()))
        generation = group.generation_id
        self.manager.store_group(group, assignment, lambda e: self._on_group_stored(group, generation, assignment, e))
        return None

    def _on_group_stored(self, group: GroupMetadata, generation: int, assignment: dict, error: Errors) -> None:
        if not self._is_current(group) or not group.is_state(S.COMPLETING_REBALANCE) or \
                group.generation_id != generation:
            return
        if error != Errors.NONE:
            for member in group.members.values():
                member.assignment = ()
                self._answer_sync(member, m.SyncGroupResponse(error))
            self._maybe_prepare_rebalance(group, f"storing the assignment failed with {error.name}")
            return
        for mid, member in group.members.items():
            member.assignment = tuple(assignment.get(mid, ()))
            self._answer_sync(member, m.SyncGroupResponse(Errors.NONE, member.assignment))
        group.transition_to(S.STABLE, self.kernel.now)
        self.narrate(f"group {group.group_id!r}: assignment of generation {generation} is replicated -> Stable "
                     f"(SyncGroup answered)")

    # --------------------------------------------------------------- Heartbeat
    def handle_Heartbeat(self, msg):
        req = msg.payload
        err = self._check_coordinator(req.group_id)
        if err is not None:
            return m.HeartbeatResponse(err)
        group = self.manager.get_group(req.group_id)
        if group is None or group.is_state(S.EMPTY):
            self.narrate(f"group {req.group_id!r} has no members -> UNKNOWN_MEMBER_ID")
            return m.HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)
        if group.is_state(S.DEAD):
            return m.HeartbeatResponse(Errors.COORDINATOR_NOT_AVAILABLE)
        err = self._validate_member(group, req.member_id, req.group_instance_id, "Heartbeat")
        if err is not None:
            return m.HeartbeatResponse(err)
        if req.generation_id != group.generation_id:
            self.narrate(f"group {group.group_id!r} is at generation {group.generation_id}, the Heartbeat carries "
                         f"{req.generation_id} -> ILLEGAL_GENERATION")
            return m.HeartbeatResponse(Errors.ILLEGAL_GENERATION)
        self._schedule_heartbeat(group, group.get(req.member_id))
        if group.is_state(S.PREPARING_REBALANCE):
            self.narrate(f"group {group.group_id!r} is rebalancing: Heartbeat -> REBALANCE_IN_PROGRESS, "
                         f"so {req.member_id} will rejoin")
            return m.HeartbeatResponse(Errors.REBALANCE_IN_PROGRESS)
        return m.HeartbeatResponse(Errors.NONE)

    # -------------------------------------------------------------- LeaveGroup
    def handle_LeaveGroup(self, msg):
        req = msg.payload
        err = self._check_coordinator(req.group_id)
        if err is not None:
            return m.LeaveGroupResponse(err)
        group = self.manager.get_group(req.group_id)
        if group is None:
            return m.LeaveGroupResponse(Errors.UNKNOWN_MEMBER_ID)
        if group.is_state(S.DEAD):
            return m.LeaveGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE)
        if req.member_id in group.pending_members:
            self.broker.cancel_timer(group.pending_members.pop(req.member_id))
            self._try_complete_join(group)
            return m.LeaveGroupResponse(Errors.NONE)
        if not group.has(req.member_id):
            self.narrate(f"group {group.group_id!r} has no member {req.member_id} -> UNKNOWN_MEMBER_ID")
            return m.LeaveGroupResponse(Errors.UNKNOWN_MEMBER_ID)
        self._remove_member_and_update_group(group, group.get(req.member_id),
                                             f"member {req.member_id} left (LeaveGroup)")
        return m.LeaveGroupResponse(Errors.NONE)
