"""The chapters' tables: trace events and record batches as pandas DataFrames, shown left-aligned.

Owns what a chapter prints as a table: ``narration`` (trace events: step, time, node, API, and what
happened, KAFKA-EOS's rules in plain words), ``since`` (the foreground events after a mark), and
``batches_table`` (a replica's record batches with their v2 header fields: producer id and epoch,
sequences, isTransactional / isControl, KAFKA-EOS §1.1).  Reads the trace and ``cluster.log(...)``
only.  Importing it sets pandas to show whole cells and up to 300 rows: the narration column is long,
and a cut sentence is a lost explanation.
"""
from __future__ import annotations

from typing import Iterable, Optional

import pandas as pd

pd.set_option("display.max_colwidth", None)
pd.set_option("display.max_rows", 300)

NARRATION_COLUMNS = ["step", "t (ms)", "node", "api", "what happened"]


def show(df: pd.DataFrame, left: bool = True):
    """Display a table with its text left-aligned and without the index column (a pandas Styler)."""
    styler = df.style.hide(axis="index")
    if left:
        styler = styler.set_properties(**{"text-align": "left"})
        styler = styler.set_table_styles([{"selector": "th", "props": [("text-align", "left")]}])
    return styler


def narration(events: Iterable) -> pd.DataFrame:
    """A table of trace events: step, simulated time, where it happened, the API, and what happened."""
    rows = []
    for e in events:
        api = e.api + (" response" if e.is_response else "") if e.api else e.kind
        rows.append({"step": e.step, "t (ms)": e.time, "node": e.node, "api": api,
                     "what happened": e.narration})
    return pd.DataFrame(rows, columns=NARRATION_COLUMNS)


def since(cluster, mark: int) -> list:
    """The foreground trace events recorded after ``mark`` (a ``len(cluster.trace)`` taken earlier)."""
    return [e for e in cluster.trace.events[mark:] if not e.background]


def _span(first: int, last: int) -> str:
    return f"{first}" if first == last else f"{first}..{last}"


def batches_table(cluster, topic: str, partition: int = 0, broker: Optional[int] = None) -> pd.DataFrame:
    """One row per record batch of a replica's log (the leader's by default), with its v2 header fields."""
    rows = []
    for b in cluster.log(topic, partition, broker).batches:
        seq = "-" if b.base_sequence < 0 else _span(b.base_sequence, b.last_sequence)
        if b.is_control:
            content = f"{b.control_type.name} marker (coordinatorEpoch {b.coordinator_epoch})"
        else:
            content = ", ".join(r.value.decode() if r.value is not None else "null" for r in b.records)
        rows.append({"offsets": _span(b.base_offset, b.last_offset), "producer_id": b.producer_id,
                     "producer_epoch": b.producer_epoch, "base..last sequence": seq,
                     "isTransactional": b.is_transactional, "isControl": b.is_control, "records": content})
    return pd.DataFrame(rows)
