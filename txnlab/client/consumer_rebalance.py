"""The consumer's part of a rebalance that runs in the application's thread, inside ``poll()``.

Eager protocols (``range``, ``roundrobin``) give up the whole assignment before rejoining and take a new one
afterwards; the cooperative one (``cooperative-sticky``, KIP-429) keeps its partitions through the rebalance and
gives up or gains only the difference, with ``on_revoke``/``on_assign`` called with just those partitions, as
librdkafka's rebalance callback is.
"""
from __future__ import annotations

from ..errors import KafkaException
from .config import dialect_of
from .dialect import JAVA
from .message import TopicPartition


def _tp_list(tps) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t, p in sorted(tps)]


class ConsumerRebalance:
    """Mixed into ``Consumer``: revoke, and take a new assignment."""

    def _revoke(self, closing: bool = False) -> None:
        """Give up the current group assignment (callbacks run here, in the application's thread)."""
        coord = self._coordinator
        parts = _tp_list(self._assignment)
        lost = coord.lost
        if self._manual or not parts:
            return
        self._say(f"{self.name} gives up {[f'{tp.topic}-{tp.partition}' for tp in parts]}"
                  + (" (lost: it is no longer a member, so nothing is committed)" if lost else ""))
        auto_commit = self._config["enable.auto.commit"] and not lost and coord.generation_id >= 0
        if auto_commit and dialect_of(self._config) == JAVA:
            # Java commits before on_revoke (ConsumerCoordinator.onJoinPrepare; on close, ConsumerCoordinator.close
            # before onLeavePrepare), and logs what fails
            if closing:
                self._close_commit_java()
            else:
                self._join_prepare_commit()
            auto_commit, lost = False, coord.lost      # a heartbeat may have reset the generation meanwhile
        self._assign_called = False
        before = self._stored_offsets()
        cb = self._on_lost if lost and self._on_lost is not None else self._on_revoke
        if cb is not None:
            cb(self, parts)
        if auto_commit:
            # librdkafka commits the stored offsets of the partitions it gives up
            self._commit_stored(sync=True, offsets={**before, **self._stored_offsets()})
        if not self._assign_called:
            self._assignment = {}
            self._fetcher.clear_buffer()

    def _handle_group(self) -> None:
        coord = self._coordinator
        if coord.fatal is not None:
            err, coord.fatal = coord.fatal, None
            raise KafkaException(err)
        if not self._subscription or self._manual:
            return
        # The assignment of a generation that completed goes to the application before the member joins the
        # next one, even when a rebalance began meanwhile: Java's joinGroupIfNeeded runs onJoinComplete, then
        # onJoinPrepare (the revoke) before its next JoinGroup; librdkafka lets REBALANCE_IN_PROGRESS wait while
        # the assign call is pending (rd_kafka_cgrp_handle_Heartbeat).  Joining first would leave an eager
        # member holding partitions through its JoinGroup, never revoked, and queue its application's
        # OffsetFetch behind a JoinGroup the coordinator answers only when the whole group is back.
        assignment = coord.take_assignment()
        if assignment is not None and coord.generation_id < 0 and dialect_of(self._config) == JAVA:
            # Java's joinGroupIfNeeded: the heartbeat thread reset the generation after the SyncGroup answer, so
            # onJoinComplete is skipped and resetStateAndRejoin(..., true) rejoins as a new member
            coord.drop_stale_assignment(assignment)
            assignment = None
        if assignment is not None and coord.cooperative:
            self._cooperative_assignment(assignment)
        elif assignment is not None:
            parts = _tp_list(assignment)
            self._say(f"{self.name} is assigned {[f'{tp.topic}-{tp.partition}' for tp in parts] or 'nothing'} "
                      f"(group {coord.group_id!r} generation {coord.generation_id})")
            self._assign_called = False
            if self._on_assign is not None:
                self._on_assign(self, parts)
            if not self._assign_called:
                self._set_assignment(parts)
        if coord.need_rejoin():
            if coord.coordinator is None:
                coord.ensure_coordinator()
                return
            if not coord.cooperative or coord.lost:   # KIP-429: a cooperative member keeps its partitions
                self._revoke()
            elif self._java and self._config["enable.auto.commit"] and coord.generation_id >= 0 and self._assignment:
                # Java's onJoinPrepare commits everything consumed before every rejoin, cooperative too
                # (maybeAutoCommitOffsetsAsync, waited for and retried until the rebalance timeout); a cooperative
                # member then keeps its partitions through the JoinGroup
                self._join_prepare_commit()
            coord.start_join()

    def _cooperative_assignment(self, assignment) -> None:
        """KIP-429's second half, as librdkafka's rebalance callbacks see it: revoke what the leader took away
        (on_revoke with just those partitions, then rejoin so they can be handed on), then assign what is new
        (on_assign with just those; without an incremental_assign() there, the consumer does it)."""
        coord = self._coordinator
        new = {tuple(tp) for tp in assignment}
        revoked, added = _tp_list(set(self._assignment) - new), _tp_list(new - set(self._assignment))
        self._say(f"{self.name} keeps {sorted(f'{t}-{p}' for t, p in set(self._assignment) & new) or 'nothing'}, "
                  f"gives up {[f'{tp.topic}-{tp.partition}' for tp in revoked] or 'nothing'} and gains "
                  f"{[f'{tp.topic}-{tp.partition}' for tp in added] or 'nothing'} (cooperative rebalance, "
                  f"group {coord.group_id!r} generation {coord.generation_id})")
        if revoked:
            before = self._stored_offsets()
            self._assign_called = False
            if self._on_revoke is not None:
                self._on_revoke(self, revoked)
            if self._config["enable.auto.commit"] and not self._java:
                # librdkafka commits the partitions it gives up; Java commits nothing here (onJoinComplete revokes
                # them; what it consumed was committed by onJoinPrepare, before the JoinGroup)
                self._commit_stored(sync=True, offsets={tp: o for tp, o in {**before, **self._stored_offsets()}.items()
                                                        if tp in {(x.topic, x.partition) for x in revoked}})
            if not self._assign_called:
                self.incremental_unassign([tp for tp in revoked if (tp.topic, tp.partition) in self._assignment])
            coord.request_rejoin(f"it gave up {len(revoked)} partition(s) for the next member (cooperative)")
        self._assign_called = False
        if self._on_assign is not None:
            self._on_assign(self, added)
        if not self._assign_called and added:
            self.incremental_assign(added)
