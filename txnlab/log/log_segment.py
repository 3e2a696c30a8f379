"""Kafka's ``LogSegment``: one file-sized piece of a partition log (plus a read-only batch view).

Owns a segment's base offset, where its batches start in the log's batch list, and
its size, which decides when ``UnifiedLog`` rolls a new segment (``segment.bytes``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Iterator

from ..protocol.record_batch import RecordBatch


class LogSegment:
    """A segment: its base offset, where its batches start in the log, and its size."""

    __slots__ = ("base_offset", "first_index", "size_in_bytes")

    def __init__(self, base_offset: int, first_index: int, size_in_bytes: int = 0):
        self.base_offset = base_offset
        self.first_index = first_index
        self.size_in_bytes = size_in_bytes


class BatchesView(Sequence):
    """Read-only, copy-free view of the log's batches (for pictures and checkers)."""

    __slots__ = ("_batches",)

    def __init__(self, batches: list[RecordBatch]):
        self._batches = batches

    def __getitem__(self, index):  # type: ignore[override]
        return self._batches[index]

    def __len__(self) -> int:
        return len(self._batches)

    def __iter__(self) -> Iterator[RecordBatch]:
        return iter(self._batches)

    def __repr__(self) -> str:
        return f"BatchesView({self._batches!r})"
