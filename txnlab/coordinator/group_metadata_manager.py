"""Groups and offsets in ``__consumer_offsets`` (Kafka's ``GroupMetadataManager``).

Owns the cache of groups this broker coordinates, which ``__consumer_offsets``
partitions it owns and which are still loading, writing group metadata and
offset commits to the log (acks=1, then answered and visible once the partition's
high watermark passes them, as Kafka 4.1.1's CoordinatorRuntime), loading a
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



# Kafka 4.1.1 CoordinatorOperationExceptionHelper.handleOperationException: how an error failing a write of the group
# coordinator is answered (anything else is answered as it is).  OffsetCommit ("commit-offset") and TxnOffsetCommit
# ("txn-commit-offset") take it in GroupCoordinatorService.commitOffsets / commitTransactionalOffsets; JoinGroup's and
# SyncGroup's group metadata writes answer through GroupMetadataManager.appendGroupMetadataErrorToResponseError,
# the same table.  NETWORK_EXCEPTION is a TxnOffsetCommit's lost or timed-out verification, "which older clients may
# not expect": COORDINATOR_LOAD_IN_PROGRESS retries without a coordinator look-up.  (Kafka's Scala
# GroupMetadataManager answered a too-large offsets write INVALID_COMMIT_OFFSET_SIZE and a timed-out one
# REQUEST_TIMED_OUT; 4.1.1 answers UNKNOWN_SERVER_ERROR and COORDINATOR_NOT_AVAILABLE.)
OPERATION_ERRORS = {Errors.NETWORK_EXCEPTION: Errors.COORDINATOR_LOAD_IN_PROGRESS,
                    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
                    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
                    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
                    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
                    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
                    Errors.MESSAGE_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
                    Errors.RECORD_LIST_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
                    Errors.INVALID_FETCH_SIZE: Errors.UNKNOWN_SERVER_ERROR}


def map_write_error(error: Errors) -> Errors:
    """How a failed ``__consumer_offsets`` write (offsets or group metadata) is answered: ``OPERATION_ERRORS``.
    (The write is appended with acks=1, so the local append never refuses it under min.insync.replicas; the
    high watermark does not move then (Partition.maybeIncrementLeaderHW), and the write is answered
    REQUEST_TIMED_OUT at offsets.commit.timeout.ms: COORDINATOR_NOT_AVAILABLE.)"""
    return OPERATION_ERRORS.get(error, error)


class DeferredWrite:
    """A group coordinator write appended locally, waiting for its offsets partition's high watermark to pass
    ``offset`` (Kafka 4.1.1: the write event's deferred event in CoordinatorRuntime's deferredEventQueue, timed by
    its OperationTimeout).  ``replicated()`` applies the write and returns the error to answer; it runs when the
    HW passes, even after ``answer(error)`` was called at the timeout: the records stay in the log."""

    __slots__ = ("tp", "offset", "replicated", "answer", "timer", "answered", "what")

    def __init__(self, tp: tuple, offset: int, replicated, answer, what: str) -> None:
        self.tp = tp
        self.offset = offset
        self.replicated = replicated
        self.answer = answer
        self.what = what
        self.timer = None
        self.answered = False


class GroupMetadataManager:
    def __init__(self, broker) -> None:
        self.broker = broker
        self.kernel = broker.kernel
        self.num_partitions = broker.config["offsets.topic.num.partitions"]
        self.commit_timeout_ms = broker.config["offsets.commit.timeout.ms"]
        self.groups: dict[str, GroupMetadata] = {}
        self.owned: dict[int, int] = {}           # partition index -> leader epoch when elected
        self.loading: set[int] = set()
        # producer id -> groups with pending transactional offsets (Kafka's openGroupsForProducer)
        self.open_groups_for_producer: dict[int, set[str]] = {}
        # offsets partition -> its writes appended but not yet passed by the HW, in log order (DeferredWrite)
        self.deferred: dict[int, list[DeferredWrite]] = {}

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
        batch = rec.group_metadata_batch(group.group_id, value, now)
        tp = self.tp_for(group.group_id)
        self.narrate(f"group {group.group_id!r}: writing GroupMetadata (generation {group.generation_id}, "
                     f"{len(members)} member(s)) to {tp[0]}-{tp[1]}")

        # (the group's new state is already in memory and stays there whatever the write's answer: 4.1.1 replays
        # the record into the timeline at append, and a timed-out write is not reverted)
        self._write(tp, batch, group.group_id, "GroupMetadata", lambda info: Errors.NONE, callback, lambda: None)

    def store_offsets(self, group: GroupMetadata, offsets: dict, callback: Callable[[dict], None],
                      producer_id: int = -1, producer_epoch: int = -1, verification_guard=None) -> None:
        """Write offset commits; plain ones become visible after replication, transactional ones
        stay pending for their producer id until the marker.  callback({tp: error})."""
        now = self.kernel.now
        txn = producer_id >= 0
        tp_log = self.tp_for(group.group_id)
        entries = {tp: OffsetAndMetadata(off, epoch, meta, now) for tp, (off, epoch, meta) in offsets.items()}
        if txn:
            pending = group.pending_transactional_offset_commits.setdefault(producer_id, {})
            pending.update(entries)
            self.open_groups_for_producer.setdefault(producer_id, set()).add(group.group_id)
        else:
            group.pending_offset_commits.update(entries)
        batch = rec.offset_commit_batch(group.group_id, offsets, now, producer_id, producer_epoch)
        what = f"transactional offsets of producer {producer_id} epoch {producer_epoch}" if txn else "offsets"
        self.narrate(f"group {group.group_id!r}: writing {what} "
                     + committed_str(offsets)
                     + f" to {tp_log[0]}-{tp_log[1]}")

        def in_the_log(info) -> None:
            # 4.1.1 replays the records into the coordinator's state as it appends them: a transaction's COMMIT
            # marker written after them commits them, replicated or not (OffsetMetadataManager.
            # replayEndTransactionMarker)
            for i, (tp, entry) in enumerate(sorted(entries.items())):
                entry.record_offset = info.first_offset + i

        def replicated(info) -> Errors:
            if self.groups.get(group.group_id) is not group or group.is_state(GroupState.DEAD):
                self._fail_pending(group, entries, producer_id)
                return Errors.NOT_COORDINATOR   # the group was unloaded meanwhile
            if txn:
                pending = group.pending_transactional_offset_commits.get(producer_id, {})
                if any(pending.get(tp) is entry for tp, entry in entries.items()):
                    self.narrate(f"group {group.group_id!r}: transactional offsets of producer {producer_id} are "
                                 f"in the log (offset {info.first_offset}) but stay PENDING until the "
                                 f"transaction's COMMIT marker reaches {tp_log[0]}-{tp_log[1]}")
            else:
                for tp, entry in entries.items():
                    if group.pending_offset_commits.get(tp) is entry:
                        del group.pending_offset_commits[tp]
                    group.offsets[tp] = entry
                self.narrate(f"group {group.group_id!r}: offsets replicated and now visible: "
                             + ", ".join(f"{t}-{p}={e.offset}" for (t, p), e in sorted(entries.items())))
            return Errors.NONE

        # CoordinatorRuntime.failCurrentBatch reverts the state (revertLastWrittenOffset) only when the append
        # itself failed; a write that times out waiting for the HW keeps its pending offsets
        self._write(tp_log, batch, group.group_id, "transactional offsets" if txn else "offsets", replicated,
                    lambda error: callback({tp: error for tp in offsets}),
                    lambda: self._fail_pending(group, entries, producer_id), verification_guard, in_the_log)

    def _write(self, tp, batch, group_id: str, kind: str, replicated: Callable, answer: Callable[[Errors], None],
               revert: Callable[[], None], verification_guard=None, on_append: Optional[Callable] = None) -> None:
        """Kafka 4.1.1's CoordinatorPartitionWriter.append (acks=1: the local append refuses only what the log
        refuses, not a partition under min.insync.replicas), then CoordinatorRuntime's wait for the HW: ``answer``
        with ``replicated(info)``'s error once the HW passes the write, or COORDINATOR_NOT_AVAILABLE at
        offsets.commit.timeout.ms (OperationTimeout's REQUEST_TIMED_OUT), the write staying in the log and in
        memory; ``revert()`` and the mapped error when the local append fails.  ``on_append(info)``: once it is
        in the local log."""
        what = f"group {group_id!r}: the {kind} write"

        def appended(error, info):
            error = Errors(error)
            if error != Errors.NONE:
                revert()
                mapped = map_write_error(error)
                self.narrate(f"{what} failed with {error.name} -> {mapped.name}")
                answer(mapped)
                return
            if on_append is not None:
                on_append(info)
            d = DeferredWrite(tp, info.last_offset + 1, lambda: replicated(info), answer, what)
            b = self.broker
            p = b.partitions.get(tp)
            short = p is not None and len(p.isr) < p.min_insync_replicas
            self.narrate(f"group {group_id!r}: appended locally (acks=1); answered once replicated (HW passes "
                         f"{info.last_offset})"
                         + (f"; the ISR {list(p.isr)} is below min.insync.replicas={p.min_insync_replicas}: the HW "
                            f"cannot move until it grows back" if short else ""))
            self.deferred.setdefault(tp[1], []).append(d)
            d.timer = self.kernel.schedule_timeout(max(self.commit_timeout_ms, 1), b.name,
                                                   ("coordinator write timeout %s-%d", tp[0], tp[1]),
                                                   self._write_timed_out, d, b.incarnation)
            if p is not None and p.log.high_watermark >= d.offset:     # (a single replica: the HW moved at append)
                self.on_high_watermark(p)
        self.broker.append_internal(tp, [batch], appended, verification_guard=verification_guard, acks=1)

    def _write_timed_out(self, d: DeferredWrite) -> None:
        if d.answered:
            return
        d.answered = True
        mapped = map_write_error(Errors.REQUEST_TIMED_OUT)
        p = self.broker.partitions.get(d.tp)
        hw = f"HW {p.log.high_watermark}, " if p is not None else ""
        self.narrate(f"{d.what} is not replicated within offsets.commit.timeout.ms={self.commit_timeout_ms} "
                     f"({hw}not past offset {d.offset - 1}): answered REQUEST_TIMED_OUT -> {mapped.name}; its "
                     f"records stay in the log and in the coordinator's memory, applied once the HW passes them")
        d.answer(mapped)

    def on_high_watermark(self, p) -> None:
        """The HW of an offsets partition moved: apply (and answer, unless timed out) the writes it passed
        (CoordinatorRuntime: updateLastCommittedOffset, then deferredEventQueue.completeUpTo)."""
        waiting = self.deferred.get(p.tp[1])
        if not waiting:
            return
        hw = p.log.high_watermark
        while waiting and waiting[0].offset <= hw:
            d = waiting.pop(0)
            error = d.replicated()
            if not d.answered:
                d.answered = True
                self.kernel.cancel(d.timer)
                if error != Errors.NONE:
                    self.narrate(f"{d.what} failed with {error.name}")
                d.answer(error)
            elif error == Errors.NONE:
                self.narrate(f"{d.what}, answered COORDINATOR_NOT_AVAILABLE at its timeout, is replicated now "
                             f"(HW {hw}): applied all the same")

    def fail_deferred(self, partition_index: int) -> None:
        """The offsets partition moved away: CoordinatorRuntime fails its deferred events (NOT_COORDINATOR);
        the groups are unloaded next."""
        for d in self.deferred.pop(partition_index, []):
            self.kernel.cancel(d.timer)
            if not d.answered:
                d.answered = True
                mapped = map_write_error(Errors.NOT_LEADER_OR_FOLLOWER)
                self.narrate(f"{d.what} fails with NOT_LEADER_OR_FOLLOWER (leadership moved) -> {mapped.name}")
                d.answer(mapped)

    def _fail_pending(self, group: GroupMetadata, entries: dict, producer_id: int) -> None:
        if producer_id >= 0:
            pending = group.pending_transactional_offset_commits.get(producer_id, {})
            for tp, entry in entries.items():
                if pending.get(tp) is entry and entry.record_offset is None:
                    del pending[tp]
            if not pending:
                group.pending_transactional_offset_commits.pop(producer_id, None)
                self._forget_producer_group(producer_id, group.group_id)
        else:
            for tp, entry in entries.items():
                if group.pending_offset_commits.get(tp) is entry:
                    del group.pending_offset_commits[tp]

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
