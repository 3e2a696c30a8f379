"""The one visual language of the lab's pictures: colours, words, line styles and labels, shared by the live views
(``LogStrip``, ``SpaceTime``, ``CoordinatorView``) and the chapters' static pictures (``snapshots``).

Owns what a picture means: the colour of each kind of record (by the fate of its transaction, with a legend that
names every colour), the LEO / HW / LSO lines (one style each, everywhere), the words on a message arrow (its
API, ✓ or the error name on a response, ✗ lost), the arrow colours of requests / responses / lost messages,
the type sizes a projector needs (≥ 14 px) and where the coordinator's states stand.  Pure data and small
functions: no figure is kept here.
"""
from __future__ import annotations

import re

import plotly.graph_objects as go

# -------------------------------------------------------------------------- records in a partition log
# status -> (fill colour, words in the legend, text colour inside the cell)
STATUS = {
    "plain": ("#4C78A8", "not transactional", "white"),
    "committed": ("#54A24B", "transactional, committed", "white"),
    "open": ("#F2B701", "transactional, still open", "black"),
    "aborted": ("#BDBDBD", "transactional, aborted", "black"),
    "COMMIT": ("#1B5E20", "COMMIT marker", "white"),
    "ABORT": ("#B71C1C", "ABORT marker", "white"),
}
STATUS_ORDER = list(STATUS)
CELL_BORDER = "#343a40"

# the three offsets of a replica: one style each, live and static (name -> (colour, dash, width, words))
LINES = {
    "LSO": ("#E8590C", "solid", 6, "LSO (last stable offset)"),
    "HW": ("#1F5FBF", "dash", 3, "HW (high watermark)"),
    "LEO": ("#212529", "solid", 1.5, "LEO (log end offset)"),
}
CONSUMERS = {  # isolation level -> (colour, marker symbol)
    "read_committed": ("#2b8a3e", "triangle-up"),
    "read_uncommitted": ("#862e9c", "triangle-up-open"),
}
FONT = 14          # the smallest type a picture uses: readable on a projector at 1280×720
SMALL = 14
# every picture's width: JupyterLab's notebook column is ~848 px on a 1280 px screen with the file browser open
WIDTH = 840
TITLE = 16         # a picture's title (px), from its left edge: plotly never wraps one

# ----------------------------------------------------------------------------------- messages
ARROWS = {  # kind -> colour
    "request": "#1c7ed6",
    "response": "#37b24d",
    "lost": "#e03131",
    "in flight": "#f08c00",
    "this step": "#ae3ec9",
}
_ERROR = re.compile(r"\b([A-Z][A-Z_]{3,}[A-Z])\(-?\d+\)")


def error_name(m) -> str:
    """The error a response carries ('' for NONE or a request): the first Kafka error name in its description."""
    if not m.is_response:
        return ""
    got = _ERROR.search(m.describe())
    return got.group(1) if got else ""


def arrow_label(m, how: str = "") -> str:
    """The words on a message's arrow: its API; on a response ✓ or ✗ and the error name; ✗ lost when lost; ⏸ held
    while a network partition holds it (TCP delivers it after the heal)."""
    if how == "lost" or getattr(m, "state", "") == "dropped":
        return m.api + (" response" if m.is_response else "") + " ✗ lost"
    if how == "held" or getattr(m, "state", "") == "held":
        return m.api + (" response" if m.is_response else "") + " ⏸ held"
    label = m.api
    if m.is_response:
        err = error_name(m)
        label += f" ✗ {err}" if err else " ✓"
    return label


def idle_words(ms: int) -> str:
    """The label of a compressed idle gap of the time axis."""
    return f"… {ms / 1000:g} s …" if ms >= 1000 else f"… {ms} ms …"


def plot_width(layout: dict) -> float:
    """The pixels across a figure's plot: its width less its left and right margins (``layout``: the figure's
    plain layout dict, ``figure._layout``, cheaper to read than plotly's objects)."""
    margin = layout.get("margin", {})
    return (layout.get("width") or WIDTH) - margin.get("l", 0) - margin.get("r", 0)


def cell_text(value, width: int = 8) -> str:
    """A record's value (or key) as it fits in a cell."""
    if value is None:
        return "null"
    text = value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)
    return text if len(text) <= width else text[:width - 1] + "…"


def legend_entries(statuses=STATUS_ORDER, lines=("LEO", "HW", "LSO")) -> list:
    """Legend-only traces that name every colour and every line a log picture may use."""
    out = []
    for s in statuses:
        colour, words, _ = STATUS[s]
        out.append(go.Scatter(x=[None], y=[None], mode="markers", name=words, showlegend=True, hoverinfo="skip",
                              marker=dict(symbol="square", size=15, color=colour, line=dict(width=1, color=CELL_BORDER))))
    for name in lines:
        colour, dash, width, words = LINES[name]
        out.append(go.Scatter(x=[None], y=[None], mode="lines", name=words, showlegend=True, hoverinfo="skip",
                              line=dict(color=colour, dash=dash, width=max(2.5, min(width, 5)))))
    return out


def consumer_legend_entries() -> list:
    """Legend-only traces for the consumers' triangles of the live log strip (one per isolation level)."""
    return [go.Scatter(x=[None], y=[None], mode="markers", name=iso, showlegend=True, hoverinfo="skip",
                       marker=dict(symbol=symbol, size=12, color=colour, line=dict(width=2, color=colour)))
            for iso, (colour, symbol) in CONSUMERS.items()]


# ------------------------------------------------------------------------ the coordinator's states
STATE_XY = {
    "Empty": (0.0, 1.0), "Ongoing": (1.35, 1.0),
    "PrepareCommit": (2.75, 1.85), "CompleteCommit": (4.2, 1.85),
    "PrepareAbort": (2.75, 0.15), "CompleteAbort": (4.2, 0.15),
    "PrepareEpochFence": (1.35, -0.6), "Dead": (5.45, 1.0),
}
TV2_DASH = "dot"          # a transition only transaction.version 2 allows
PENDING_DASH = "dash"     # a transition being written to __transaction_state


def title(text: str) -> dict:
    """A picture's title as every picture sets it: TITLE px type from the left edge (a title wider than the picture
    is cut off; ``widgets.legible.off_picture`` finds one)."""
    return dict(text=text, x=0.01, font=dict(size=TITLE))
