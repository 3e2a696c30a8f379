"""Kafka's ``TransactionIndex`` (the ``.txnindex`` file): the aborted transactions of a log.

Owns one entry per ABORTED transaction (commits are never indexed): the producer,
the transaction's first offset, the offset of its ABORT marker, and the last
stable offset at the time the marker was written. A read_committed fetch asks it
which aborted transactions overlap the fetched range; the consumer uses the
answer to drop aborted batches. Kafka keeps one index per segment; this lab keeps
one per log, ordered by marker offset, which answers the same queries.
"""
from __future__ import annotations

from bisect import bisect_left, insort
from operator import attrgetter
from typing import NamedTuple


class AbortedTxn(NamedTuple):
    """One ``.txnindex`` entry (version 0): ``last_offset`` is the ABORT marker's offset."""
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def describe(self) -> str:
        return (f"aborted txn pid={self.producer_id} offsets {self.first_offset}..{self.last_offset} "
                f"(LSO then {self.last_stable_offset})")


_LAST_OFFSET = attrgetter("last_offset")


class TransactionIndex:
    """Aborted transactions ordered by the offset of their ABORT marker."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: list[AbortedTxn] = []

    def append(self, aborted_txn: AbortedTxn) -> None:
        entries = self._entries
        if not entries or entries[-1].last_offset < aborted_txn.last_offset:
            entries.append(aborted_txn)
        else:  # only reached when an index is rebuilt out of order; keep it sorted
            insort(entries, aborted_txn, key=_LAST_OFFSET)

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Entries with ``last_offset >= fetch_offset`` and ``first_offset < upper_bound_offset``.

        Like Kafka, the scan stops at the first entry whose last stable offset is at
        or beyond the upper bound: every later abort started after that point.
        """
        entries = self._entries
        result: list[AbortedTxn] = []
        for i in range(bisect_left(entries, fetch_offset, key=_LAST_OFFSET), len(entries)):
            txn = entries[i]
            if txn.first_offset < upper_bound_offset:
                result.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                break
        return result

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose ABORT marker is at or above ``offset``."""
        del self._entries[bisect_left(self._entries, offset, key=_LAST_OFFSET):]

    def all(self) -> list[AbortedTxn]:
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"TransactionIndex({self._entries!r})"
