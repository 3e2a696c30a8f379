"""The group coordinator's admin side: ListGroups, DescribeGroups and DeleteGroups, as Kafka's
``GroupCoordinator.handleListGroups / handleDescribeGroup / handleDeleteGroups`` answer them.

Owns what an operator may learn about, and do to, the groups this broker coordinates: list them (by
state), describe one (members, assignment only once the group is Stable, as ``GroupMetadata.summary``),
and delete Empty ones (tombstones for their offsets and their GroupMetadata, one write operation per
``__consumer_offsets`` partition through the coordinator's batch, answered once replicated).
"""
from __future__ import annotations

from typing import Callable

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.names import OFFSETS_TOPIC
from ..protocol.record_batch import Record
from . import offset_records as rec
from .group_batch import GroupWrite
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


def delete_groups(gc, group_ids: list, answer: Callable[[list], None]) -> None:
    """DeleteGroups, as Kafka 4.1.1's ``GroupCoordinatorService.deleteGroups``: the groups are sorted by their
    ``__consumer_offsets`` partition, and each partition's are deleted by one write operation ("delete-groups")
    whose tombstones join the coordinator's batch like any write (``group_batch``).  ``answer(errors)``, the
    errors in the order of ``group_ids``, once every partition's write is replicated (or failed: then its groups
    are back in memory and get the write's error)."""
    errors: list = [None] * len(group_ids)
    by_partition: dict = {}
    for pos, gid in enumerate(group_ids):
        err = gc._check_coordinator(gid)
        if err is not None:
            errors[pos] = err
        else:
            by_partition.setdefault(gc.manager.partition_for(gid), []).append(pos)
    waiting = set(by_partition)

    def finished(partition=None) -> None:      # (each partition's write finishes once; the last one answers)
        waiting.discard(partition)
        if not waiting:
            answer(errors)

    for partition, positions in sorted(by_partition.items()):
        _delete_in_partition(gc, partition, [(pos, group_ids[pos]) for pos in positions], errors,
                             lambda partition=partition: finished(partition))
    if not by_partition:
        finished()


def _delete_in_partition(gc, partition: int, groups: list, errors: list, finished: Callable[[], None]) -> None:
    """GroupCoordinatorShard.deleteGroups: each group validated (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP), then
    tombstones for its committed offsets, for the partitions only a pending transactional offset commit holds
    (OffsetMetadataManager.deleteAllOffsets), and for its GroupMetadata; one write for them all."""
    mgr = gc.manager
    now = gc.kernel.now
    records: list = []
    deleted: dict = {}          # group id -> (group, its state before)
    ok: list = []
    for pos, gid in groups:
        g = mgr.get_group(gid)
        if g is None or g.is_state(S.DEAD):
            gc.narrate(f"group {gid!r} does not exist -> GROUP_ID_NOT_FOUND")
            errors[pos] = Errors.GROUP_ID_NOT_FOUND
            continue
        if not g.is_state(S.EMPTY):
            gc.narrate(f"group {gid!r} still has {len(g.members)} member(s) ({g.state}) -> NON_EMPTY_GROUP")
            errors[pos] = Errors.NON_EMPTY_GROUP
            continue
        pending = {tp for commits in g.pending_transactional_offset_commits.values() for tp in commits}
        records += [Record(rec.offset_commit_key(gid, otp), None, (), now)
                    for otp in sorted(g.offsets) + sorted(pending - set(g.offsets))]
        records.append(Record(rec.group_metadata_key(gid), None, (), now))
        deleted.setdefault(gid, (g, g.state, g.state_timestamp))
        errors[pos] = Errors.NONE
        ok.append(pos)
    if not deleted:
        finished()
        return

    def apply() -> None:                # replayed into memory as the tombstones join the batch
        for gid, (g, _state, _ts) in deleted.items():
            g.transition_to(S.DEAD, now)
            del mgr.groups[gid]
            for pid in g.pending_transactional_offset_commits:
                mgr._forget_producer_group(pid, gid)

    def revert() -> None:               # the batch failed: the groups are as they were
        for gid, (g, state, ts) in deleted.items():
            g.state, g.state_timestamp = state, ts
            mgr.groups[gid] = g
            for pid in g.pending_transactional_offset_commits:
                mgr.open_groups_for_producer.setdefault(pid, set()).add(gid)

    def answered(error: Errors) -> None:
        if error != Errors.NONE:
            for pos in ok:
                errors[pos] = error
        finished()

    names = ", ".join(repr(gid) for gid in deleted)
    gc.narrate(f"deleting group(s) {names}: {len(records)} tombstone(s) (committed offsets, pending transactional "
               f"ones, GroupMetadata) for {OFFSETS_TOPIC}-{partition}")
    mgr.runtime.write(partition, GroupWrite(f"DeleteGroups tombstones of group(s) {names}", tuple(records),
                                            answered, apply=apply, revert=revert))
