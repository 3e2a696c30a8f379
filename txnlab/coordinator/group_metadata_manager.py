"""Groups and offsets in ``__consumer_offsets`` (Kafka's ``GroupMetadataManager``).

Owns the cache of groups this broker coordinates, which ``__consumer_offsets``
partitions it owns and which are still loading, writing group metadata and
offset commits to the log (through ``group_batch``, Kafka 4.1.1's CoordinatorRuntime: applied
in memory at once, accumulated into a batch for group.coordinator.append.linger.ms,
appended with acks=1, answered and visible once the partition's high watermark passes
them, undone if the batch's append fails), loading a
partition by replaying its log when this broker becomes its leader, and the
pending transactional offsets of KAFKA-EOS §5: kept per producer id until the
transaction's COMMIT marker makes them visible or its ABORT marker drops them.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..protocol.record_batch import ControlRecordType
from ..protocol.errors import Errors
from ..protocol.message_base import committed_str
from ..protocol.hashing import partition_for
from . import offset_records as rec
from .group_metadata import GroupMetadata, GroupState, MemberMetadata, OffsetAndMetadata
from ..protocol.names import OFFSETS_TOPIC
from .group_batch import CoordinatorRuntime, GroupWrite


class GroupMetadataManager:
    def __init__(self, broker) -> None:
        self.broker = broker
        self.kernel = broker.kernel
        self.num_partitions = broker.config["offsets.topic.num.partitions"]
        self.groups: dict[str, GroupMetadata] = {}
        self.owned: dict[int, int] = {}           # partition index -> leader epoch when elected
        self.loading: set[int] = set()
        # producer id -> groups with pending transactional offsets (Kafka's openGroupsForProducer)
        self.open_groups_for_producer: dict[int, set[str]] = {}
        # the batches being filled and the writes waiting for the HW, per offsets partition (CoordinatorRuntime)
        self.runtime = CoordinatorRuntime(broker)

    def narrate(self, text: str) -> None:
        self.broker.narrate(text)

    # ------------------------------------------------------------ ownership
    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def tp_for(self, group_id: str) -> tuple:
        return (OFFSETS_TOPIC, self.partition_for(group_id))

    def is_loading(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.loading

    def is_local(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.owned

    def get_group(self, group_id: str) -> Optional[GroupMetadata]:
        return self.groups.get(group_id)

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        return self.groups.setdefault(group.group_id, group)

    def groups_in(self, partition_index: int) -> list[GroupMetadata]:
        return [g for gid, g in sorted(self.groups.items()) if self.partition_for(gid) == partition_index]

    # --------------------------------------------------------------- writes
    def store_group(self, group: GroupMetadata, assignment: dict, callback: Callable[[Errors], None]) -> None:
        """Write the group's membership (generation, leader, assignments); callback after replication."""
        now = self.kernel.now
        members = tuple(rec.MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                         m.rebalance_timeout_ms, m.session_timeout_ms, m.subscription(),
                                         tuple(assignment.get(m.member_id, ())))
                        for m in group.members.values())
        value = rec.GroupMetadataValue(group.protocol_type or "", group.generation_id, group.protocol_name,
                                       group.leader_id, now, members)
        tp = self.tp_for(group.group_id)
        self.narrate(f"group {group.group_id!r}: writing GroupMetadata (generation {group.generation_id}, "
                     f"{len(members)} member(s)) to {tp[0]}-{tp[1]}")
        # (the group's new state is already in memory and stays there whatever the write's answer: the classic
        # group's membership is not kept in 4.1.1's snapshotted timeline; the caller handles a failed answer)
        self.runtime.write(tp[1], GroupWrite(f"GroupMetadata write of group {group.group_id!r}",
                                             (rec.group_metadata_record(group.group_id, value, now),), callback))

    def store_offsets(self, group: GroupMetadata, offsets: dict, callback: Callable[[dict], None],
                      producer_id: int = -1, producer_epoch: int = -1, verification_guard=None) -> None:
        """Write offset commits; plain ones become visible after replication, transactional ones
        stay pending for their producer id until the marker.  callback({tp: error})."""
        now = self.kernel.now
        txn = producer_id >= 0
        gid = group.group_id
        tp_log = self.tp_for(gid)
        entries = {tp: OffsetAndMetadata(off, epoch, meta, now) for tp, (off, epoch, meta) in offsets.items()}
        what = f"transactional offsets of producer {producer_id} epoch {producer_epoch}" if txn else "offsets"
        self.narrate(f"group {gid!r}: writing {what} " + committed_str(offsets) + f" to {tp_log[0]}-{tp_log[1]}")
        before: dict = {}

        def pending() -> dict:
            return group.pending_transactional_offset_commits.setdefault(producer_id, {}) if txn \
                else group.pending_offset_commits

        def apply() -> None:
            # OffsetMetadataManager.replay: uncommitted until the HW passes the record (read by RequireStable
            # fetches only); a transaction's stay pending for its producer until the marker
            target = pending()
            for tp, entry in entries.items():
                before[tp] = target.get(tp)
                target[tp] = entry
            if txn:
                self.open_groups_for_producer.setdefault(producer_id, set()).add(gid)

        def revert() -> None:
            # CoordinatorRuntime.failCurrentBatch -> revertLastWrittenOffset: back to what was there before
            target = pending()
            for tp, entry in entries.items():
                if target.get(tp) is entry:
                    if before.get(tp) is None:
                        del target[tp]
                    else:
                        target[tp] = before[tp]
            if txn and not target:
                group.pending_transactional_offset_commits.pop(producer_id, None)
                self._forget_producer_group(producer_id, gid)

        def appended(first: int) -> None:
            # 4.1.1 replays the records into the coordinator's state as it appends them: a transaction's COMMIT
            # marker written after them commits them, replicated or not (OffsetMetadataManager.
            # replayEndTransactionMarker)
            for i, (tp, entry) in enumerate(sorted(entries.items())):
                entry.record_offset = first + i

        def replicated(first: int) -> Errors:
            if self.groups.get(gid) is not group or group.is_state(GroupState.DEAD):
                revert()
                return Errors.NOT_COORDINATOR   # the group was unloaded meanwhile
            if txn:
                now_pending = group.pending_transactional_offset_commits.get(producer_id, {})
                if any(now_pending.get(tp) is entry for tp, entry in entries.items()):
                    self.narrate(f"group {gid!r}: transactional offsets of producer {producer_id} are "
                                 f"in the log (offset {first}) but stay PENDING until the "
                                 f"transaction's COMMIT marker reaches {tp_log[0]}-{tp_log[1]}")
            else:
                for tp, entry in entries.items():
                    if group.pending_offset_commits.get(tp) is entry:
                        del group.pending_offset_commits[tp]
                    group.offsets[tp] = entry
                self.narrate(f"group {gid!r}: offsets replicated and now visible: "
                             + ", ".join(f"{t}-{p}={e.offset}" for (t, p), e in sorted(entries.items())))
            return Errors.NONE

        op = GroupWrite(f"{'TxnOffsetCommit' if txn else 'OffsetCommit'} write of group {gid!r}",
                        rec.offset_commit_records(gid, offsets, now),
                        lambda error: callback({tp: error for tp in offsets}),
                        replicated, apply, revert, appended)
        self.runtime.write(tp_log[1], op, producer_id, producer_epoch, verification_guard)

    def _forget_producer_group(self, producer_id: int, group_id: str) -> None:
        groups = self.open_groups_for_producer.get(producer_id)
        if groups is not None:
            groups.discard(group_id)
            if not groups:
                del self.open_groups_for_producer[producer_id]

    # ---------------------------------------------------- transaction markers
    def complete_txn(self, partition_index: int, producer_id: int, committed: bool, marker_offset: int) -> None:
        """A COMMIT/ABORT marker of ``producer_id`` was written to this offsets partition."""
        if partition_index in self.loading or partition_index not in self.owned:
            return    # a partition still loading replays the marker from the log itself
        result = "COMMIT" if committed else "ABORT"
        for group_id in sorted(self.open_groups_for_producer.get(producer_id, set())):
            group = self.groups.get(group_id)
            if group is None or self.partition_for(group_id) != partition_index:
                continue
            pending = group.pending_transactional_offset_commits.pop(producer_id, {})
            self._forget_producer_group(producer_id, group_id)
            self._apply_marker(group, producer_id, pending, committed, marker_offset, result)

    def _apply_marker(self, group: GroupMetadata, producer_id: int, pending: dict, committed: bool,
                      marker_offset: int, result: str, loading: bool = False) -> None:
        if not pending:
            return
        shown, kept, unwritten = [], [], []
        for tp, entry in sorted(pending.items()):
            if not committed:
                continue
            if entry.record_offset is None and not loading:
                # Kafka refuses this: the marker overtook the offsets write it should complete
                unwritten.append(tp)
                continue
            current = group.offsets.get(tp)
            if current is None or current.older_than(entry):
                group.offsets[tp] = entry
                shown.append(f"{tp[0]}-{tp[1]}={entry.offset}")
            else:
                kept.append(tp)
        where = f"the {result} marker at offset {marker_offset}" if marker_offset >= 0 else f"a {result} marker"
        if committed:
            text = (f"group {group.group_id!r}: {where} of producer {producer_id} makes its transactional "
                    f"offsets visible: {', '.join(shown) or 'none'}")
            if kept:
                text += (f" (kept the existing offset of {', '.join(f'{t}-{p}' for t, p in kept)}: "
                         f"written by a newer record)")
            if unwritten:
                text += (f" (dropped {', '.join(f'{t}-{p}' for t, p in unwritten)}: the marker arrived before "
                         f"their offsets write was appended)")
        else:
            text = (f"group {group.group_id!r}: {where} of producer {producer_id} discards its pending "
                    f"transactional offsets " + ", ".join(f"{t}-{p}={e.offset}" for (t, p), e in sorted(pending.items())))
        self.narrate(text)

    @property
    def pending_transactional_offsets(self) -> dict:
        """producer id -> group -> tp -> offset, for every pending transactional commit."""
        out: dict = {}
        for gid, group in sorted(self.groups.items()):
            for pid, offs in group.pending_transactional_offset_commits.items():
                if offs:
                    out.setdefault(pid, {})[gid] = {tp: e.offset for tp, e in sorted(offs.items())}
        return out

    # --------------------------------------------------------------- loading
    def load(self, partition_index: int) -> list[GroupMetadata]:
        """Replay ``__consumer_offsets-<index>`` from log start to log end (Kafka's doLoadGroupsAndOffsets)."""
        p = self.broker.partitions.get((OFFSETS_TOPIC, partition_index))
        loaded_offsets: dict[str, dict[tuple, OffsetAndMetadata]] = {}
        pending: dict[int, dict[str, dict[tuple, OffsetAndMetadata]]] = {}
        group_values: dict[str, Optional[rec.GroupMetadataValue]] = {}
        n_records = 0
        batches = p.log.batches if p is not None else ()
        for batch in batches:
            if batch.is_control:
                ctype = batch.control_type
                offs = pending.pop(batch.producer_id, None)
                if offs and ctype in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
                    for gid, tps in offs.items():
                        if ctype == ControlRecordType.COMMIT:
                            target = loaded_offsets.setdefault(gid, {})
                            for tp, entry in tps.items():
                                if tp not in target or target[tp].older_than(entry):
                                    target[tp] = entry
                continue
            for i, r in enumerate(batch.records):
                n_records += 1
                offset = batch.base_offset + i
                key = rec.read_key(r.key)
                if isinstance(key, rec.OffsetCommitKey):
                    value = rec.read_offset_value(r.value)
                    if batch.is_transactional:
                        target = pending.setdefault(batch.producer_id, {}).setdefault(key.group, {})
                    else:
                        target = loaded_offsets.setdefault(key.group, {})
                    if value is None:
                        target.pop(key.tp, None)
                        for offs in pending.values():          # a tombstone also removes pending entries
                            offs.get(key.group, {}).pop(key.tp, None)
                    else:
                        target[key.tp] = OffsetAndMetadata(value.offset, value.leader_epoch, value.metadata,
                                                           value.commit_timestamp, offset)
                else:
                    group_values[key.group] = rec.read_group_value(r.value)
        now = self.kernel.now
        groups = []
        ids = sorted(set(loaded_offsets) | set(group_values) | {g for offs in pending.values() for g in offs})
        for gid in ids:
            value = group_values.get(gid)
            if gid in group_values and value is None and not loaded_offsets.get(gid) and \
                    not any(gid in offs for offs in pending.values()):
                continue          # tombstoned group with nothing left
            group = self._build_group(gid, value, now)
            group.offsets.update(loaded_offsets.get(gid, {}))
            for pid, offs in pending.items():
                if offs.get(gid):
                    group.pending_transactional_offset_commits[pid] = dict(offs[gid])
                    self.open_groups_for_producer.setdefault(pid, set()).add(gid)
            self.groups[gid] = group
            groups.append(group)
        self.narrate(f"loaded {OFFSETS_TOPIC}-{partition_index}: replayed {n_records} record(s) up to offset "
                     f"{p.log.log_end_offset if p is not None else 0}; "
                     + (", ".join(self._describe_loaded(g) for g in groups) if groups else "no groups"))
        return groups

    def _build_group(self, group_id: str, value: Optional[rec.GroupMetadataValue], now: int) -> GroupMetadata:
        if value is None:
            return GroupMetadata(group_id, GroupState.EMPTY, now)
        state = GroupState.STABLE if value.members else GroupState.EMPTY
        group = GroupMetadata(group_id, state, now)
        group.generation_id = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        for mr in value.members:
            member = MemberMetadata(mr.member_id, mr.group_instance_id, mr.client_id, mr.session_timeout,
                                    mr.rebalance_timeout, value.protocol_type,
                                    ((value.protocol or "", tuple(mr.subscription)),))
            member.client_host = mr.client_host
            member.assignment = tuple(mr.assignment)
            group.add(member)
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        return group

    @staticmethod
    def _describe_loaded(g: GroupMetadata) -> str:
        s = f"group {g.group_id!r} {g.state} generation {g.generation_id} with {len(g.offsets)} committed offset(s)"
        n = sum(len(v) for v in g.pending_transactional_offset_commits.values())
        if n:
            s += (f" and {n} pending transactional offset(s) of producer(s) "
                  f"{sorted(g.pending_transactional_offset_commits)}")
        return s

    def unload(self, partition_index: int) -> list[GroupMetadata]:
        """Forget the groups of a partition this broker no longer leads."""
        gone = self.groups_in(partition_index)
        for g in gone:
            del self.groups[g.group_id]
            for pid in list(g.pending_transactional_offset_commits):
                self._forget_producer_group(pid, g.group_id)
        return gone

    # ----------------------------------------------------------------- views
    def offsets_view(self) -> list[dict]:
        """Every committed and pending transactional offset this coordinator holds."""
        rows = []
        for gid, g in sorted(self.groups.items()):
            for tp, e in sorted(g.offsets.items()):
                rows.append({"group": gid, "topic": tp[0], "partition": tp[1], "offset": e.offset,
                             "status": "committed", "producer_id": None, "record_offset": e.record_offset})
            for tp, e in sorted(g.pending_offset_commits.items()):
                rows.append({"group": gid, "topic": tp[0], "partition": tp[1], "offset": e.offset,
                             "status": "pending write", "producer_id": None, "record_offset": e.record_offset})
            for pid, offs in sorted(g.pending_transactional_offset_commits.items()):
                for tp, e in sorted(offs.items()):
                    rows.append({"group": gid, "topic": tp[0], "partition": tp[1], "offset": e.offset,
                                 "status": "pending transaction", "producer_id": pid,
                                 "record_offset": e.record_offset})
        return rows
