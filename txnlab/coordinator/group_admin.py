"""The group coordinator's admin side: ListGroups, DescribeGroups and DeleteGroups, as Kafka's
``GroupCoordinator.handleListGroups / handleDescribeGroup / handleDeleteGroups`` answer them.

Owns what an operator may learn about, and do to, the groups this broker coordinates: list them (by
state), describe one (members, assignment only once the group is Stable, as ``GroupMetadata.summary``),
and delete an Empty one (tombstones for its offsets and its GroupMetadata, appended to the leader with
``requiredAcks=0`` as ``GroupMetadataManager.cleanupGroupMetadata`` does).
"""
from __future__ import annotations

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.names import OFFSETS_TOPIC
from ..protocol.record_batch import Record, RecordBatch
from . import offset_records as rec
from .group_metadata import GroupState as S


def list_groups(gc, states_filter: tuple) -> m.ListGroupsResponse:
    mgr = gc.manager
    if mgr.loading:
        gc.narrate(f"broker {gc.broker.broker_id} is still loading {OFFSETS_TOPIC} partition(s) "
                   f"{sorted(mgr.loading)} -> COORDINATOR_LOAD_IN_PROGRESS")
        return m.ListGroupsResponse(Errors.COORDINATOR_LOAD_IN_PROGRESS)
    wanted = {s.lower() for s in states_filter}
    out = []
    for gid, g in sorted(mgr.groups.items()):
        if g.is_state(S.DEAD) or mgr.partition_for(gid) not in mgr.owned:
            continue
        if wanted and str(g.state).lower() not in wanted:
            continue
        out.append(m.ListedGroup(gid, g.protocol_type or "", str(g.state)))
    return m.ListGroupsResponse(Errors.NONE, tuple(out))


def describe_group(gc, group_id: str) -> m.DescribedGroup:
    err = gc._check_coordinator(group_id)
    if err is not None:
        return m.DescribedGroup(err, group_id)
    g = gc.manager.get_group(group_id)
    if g is None or g.is_state(S.DEAD):
        return m.DescribedGroup(Errors.NONE, group_id, "Dead")
    stable = g.is_state(S.STABLE)      # members' assignments and the protocol are shown only when Stable
    members = tuple(m.DescribedGroupMember(mm.member_id, mm.group_instance_id, mm.client_id, mm.client_host,
                                           tuple(sorted(mm.assignment)) if stable else ())
                    for mm in g.members.values())
    return m.DescribedGroup(Errors.NONE, group_id, str(g.state), g.protocol_type or "",
                            (g.protocol_name or "") if stable else "", members)


def delete_group(gc, group_id: str) -> Errors:
    """Delete an Empty group: NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND if there is none."""
    err = gc._check_coordinator(group_id)
    if err is not None:
        return err
    mgr = gc.manager
    g = mgr.get_group(group_id)
    if g is None or g.is_state(S.DEAD):
        gc.narrate(f"group {group_id!r} does not exist -> GROUP_ID_NOT_FOUND")
        return Errors.GROUP_ID_NOT_FOUND
    if not g.is_state(S.EMPTY):
        gc.narrate(f"group {group_id!r} still has {len(g.members)} member(s) ({g.state}) -> NON_EMPTY_GROUP")
        return Errors.NON_EMPTY_GROUP
    tp = mgr.tp_for(group_id)
    p = gc.broker.partitions.get(tp)
    if p is None or not p.is_leader:
        return Errors.NOT_COORDINATOR
    # (4.1.1 runs DeleteGroups as a write operation whose tombstones join the batch; the lab appends them directly,
    # after the batch not yet appended, so the log keeps the order in which the coordinator's memory changed)
    mgr.runtime.flush(tp[1], "first: DeleteGroups appends its tombstones after it")
    now = gc.kernel.now
    records = [Record(rec.offset_commit_key(group_id, otp), None, (), now) for otp in sorted(g.offsets)]
    records.append(Record(rec.group_metadata_key(group_id), None, (), now))
    gc.broker.append_to_leader(p, [RecordBatch(tuple(records))], now, origin_client=False)
    g.transition_to(S.DEAD, now)
    del mgr.groups[group_id]
    for pid in list(g.pending_transactional_offset_commits):
        mgr._forget_producer_group(pid, group_id)
    gc.narrate(f"group {group_id!r} deleted: tombstones for its {len(records) - 1} committed offset(s) and its "
               f"GroupMetadata appended to {tp[0]}-{tp[1]}")
    return Errors.NONE
