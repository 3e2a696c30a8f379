"""Kafka's ``LeaderEpochFileCache`` (the ``leader-epoch-checkpoint`` file, KIP-101).

Owns the list of (leader epoch, start offset) pairs of one replica: the first
offset each leader wrote. Followers use it through OffsetsForLeaderEpoch to find
where their log diverges from the new leader's and truncate there instead of at
their high watermark.
"""
from __future__ import annotations

from typing import NamedTuple

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    """Epoch entries with strictly increasing epochs and start offsets."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: list[EpochEntry] = []

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    def _is_update_needed(self, epoch: int, start_offset: int) -> bool:
        if not self._entries:
            return True
        latest = self._entries[-1]
        return epoch != latest.epoch or start_offset < latest.start_offset

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; returns whether the cache changed.

        Entries that would break monotonicity (an epoch at or above the new one, or a
        start offset at or above the new one) are removed first, as in Kafka.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        if not self._is_update_needed(epoch, start_offset):
            return False
        entries = self._entries
        while entries and (entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset):
            entries.pop()
        entries.append(EpochEntry(epoch, start_offset))
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: (largest epoch <= requested, the offset where it ended).

        The end offset is the start offset of the next higher epoch, or the log end
        offset if ``requested_epoch`` is the latest epoch. (-1, -1) when the epoch is
        undefined, the cache is empty or the request is above every known epoch.
        A request below every known epoch answers (requested, first start offset).
        """
        entries = self._entries
        if requested_epoch == UNDEFINED_EPOCH or not entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if entries[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        floor: EpochEntry | None = None
        for entry in entries:
            if entry.epoch > requested_epoch:
                if floor is None:
                    return requested_epoch, entry.start_offset
                return floor.epoch, entry.start_offset
            floor = entry
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

    def epoch_for_offset(self, offset: int) -> int | None:
        """The leader epoch in which ``offset`` was written (None if before every entry)."""
        found = None
        for entry in self._entries:
            if entry.start_offset > offset:
                break
            found = entry.epoch
        return found

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop the entries whose start offset is at or above ``end_offset``."""
        entries = self._entries
        while entries and entries[-1].start_offset >= end_offset:
            entries.pop()

    def truncate_from_start(self, start_offset: int) -> None:
        """Log start moved to ``start_offset``: older entries collapse into one that starts there."""
        entries = self._entries
        keep = [e for e in entries if e.start_offset >= start_offset]
        older = [e for e in entries if e.start_offset < start_offset]
        if older and (not keep or keep[0].start_offset > start_offset):
            keep.insert(0, EpochEntry(older[-1].epoch, start_offset))
        entries[:] = keep       # in place: UnifiedLog.epoch_entries is this very list

    def clear(self) -> None:
        self._entries.clear()   # in place (see truncate_from_start)

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({[tuple(e) for e in self._entries]})"
