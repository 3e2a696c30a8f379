"""Snapshots: static plotly figures of one moment, drawn once by a chapter cell (not live widgets).

Owns two pictures, drawn in the lab's one visual language (``widgets/pictures.py``: the live log strip and
message diagram use the same colours, words and line styles).  ``log_snapshot``: chosen partition logs as strips of offset cells, each cell
labelled with its value and coloured by what the record is (not transactional; transactional and
committed, still open or aborted; COMMIT / ABORT markers, KAFKA-EOS §3), with the LEO, HW and LSO
as vertical marks and, optionally, consumer positions (§4).  ``message_flow``: a space-time diagram
of the messages of chosen APIs between chosen processes after a trace mark.  The live views
(``LogStrip``, ``SpaceTime``) follow a stepper through time; a snapshot keeps a moment for the text
to talk about.  Reads ``cluster.log``, ``cluster.partition_state``, the trace and the network's
messages only.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import plotly.graph_objects as go

from .legible import LINE_EM, MARGIN, keep_inside, labels, pixels_per_unit, spread, text_extent
from .log_strip import _LogDigest
from .pictures import (ARROWS, CELL_BORDER, CONSUMERS, FONT, LINES, SMALL, STATUS, WIDTH, arrow_label,
                       legend_entries, title as titled)

# the same colours, words and line styles as the live views (widgets/pictures.py)
MARKS = {name: (colour, dash, width) for name, (colour, dash, width, _) in LINES.items()}
MARK_WORDS = {name: words for name, (_, _, _, words) in LINES.items()}
ALONG = (0.5, 0.35, 0.65, 0.22, 0.78)        # where along its arrow a message's words may stand, most wanted first
LINE = LINE_EM * SMALL + MARGIN              # a line of the labels' words, with the room two labels keep
ROW_PX = 110     # a partition log's row: its cells, and two lines of mark labels between it and the next row's


def offset_cells(cluster, topic: str, partition: int = 0, broker: Optional[int] = None) -> list[dict]:
    """One dict per offset of a replica's log: value, producer fields and the fate of its transaction
    (the fate as the live ``LogStrip`` decides it: the producer's next marker in the log)."""
    digest = _LogDigest(cluster.log(topic, partition, broker))
    cells = []
    for b, status in zip(digest.batches, digest.status):
        if b.is_control:
            name = b.control_type.name
            cells.append({"offset": b.base_offset, "label": name, "status": name,
                          "hover": f"{name} marker, pid {b.producer_id} epoch {b.producer_epoch}"})
            continue
        for i, r in enumerate(b.records):
            value = r.value.decode() if r.value is not None else "null"
            seq = b.base_sequence + i if b.base_sequence >= 0 else "-"
            cells.append({"offset": b.base_offset + i, "label": value, "status": status,
                          "header": f"pid {b.producer_id} · seq {seq}",
                          "hover": f"{value}<br>pid {b.producer_id} epoch {b.producer_epoch} seq {seq}"})
    return cells


def _strip(cluster, topic: str, partition: int, rest: list) -> tuple:
    """(row name, offset cells, {mark: offset}) of one row: the leader's replica, or the one asked for."""
    state = cluster.partition_state(topic, partition)
    leader = state["leader"]
    who = rest[0] if rest else (leader if leader >= 0 else next(iter(state["replicas"])))
    if rest:
        name = f"{topic}-{partition} · broker {who}" + (" (leader)" if who == leader else "")
    else:
        name = f"{topic}-{partition} · leader {leader}" if leader >= 0 else f"{topic}-{partition} · no leader"
    rep = state["replicas"][who]
    if not rep["alive"]:
        name += " (down)"
    values = {"LEO": rep["leo"], "HW": rep["hw"], "LSO": state["lso"] if who == leader else None}
    return name, offset_cells(cluster, topic, partition, who), values


def _mark_offsets(values: dict, marks: Sequence[str]) -> dict:
    """{offset: [marks at it]} of one row, in the order the marks are named."""
    at: dict = {}
    for mark in marks:
        if values.get(mark) is not None:
            at.setdefault(values[mark], []).append(mark)
    return dict(sorted(at.items()))


def _draw_marks(fig: go.Figure, y: int, values: dict, marks: Sequence[str]) -> list:
    """The vertical LEO / HW / LSO marks of one row, with one label per offset ("HW=LSO 4") above the row; returns
    the labels' annotation indexes (``_spread_marks`` then moves those that meet another label)."""
    labels = []
    for x, names in _mark_offsets(values, marks).items():
        for j, mark in enumerate(names):      # marks at the same offset: side by side, 6 px apart
            colour, dash, width = MARKS[mark]
            dx = 6 * (j - (len(names) - 1) / 2)
            fig.add_shape(type="line", xsizemode="pixel", xanchor=x - 0.5, x0=dx, x1=dx, y0=y - 0.42, y1=y + 0.42,
                          line=dict(color=colour, dash=dash, width=min(width, 4)))
        fig.add_annotation(x=x - 0.5, y=y - 0.42, text="=".join(names) + f" {x}", showarrow=False, yanchor="bottom",
                           yshift=2, font=dict(size=SMALL, color=MARKS[names[0]][0]), bgcolor="rgba(255,255,255,0.8)")
        labels.append(len(fig.layout.annotations) - 1)
    return labels


def _spread_marks(fig: go.Figure, rows: list, cells: list) -> None:
    """Mark labels that meet another label move: under their row, else beside their mark (right, then left; above
    the row, then under it), else stacked above or under it (``legible.spread``; every label stays beside its own row and off the rows' cells, ``cells``: data boxes).  The first label of each row chooses first, row by
    row, then the second of each, and so on: neighbouring offsets' labels alternate above and below their row."""
    _, px_y = pixels_per_unit(fig)
    under = -(0.84 * px_y + 4 + LINE_EM * SMALL)       # from above the row's cells to below them
    order = [k for _, _, k in sorted((i, y, k) for y, labels in enumerate(rows) for i, k in enumerate(labels))]
    anns = fig.layout.annotations

    def tries(k: int) -> list:
        aside = text_extent(anns[k].text, SMALL)[0] / 2 + 5          # beside its mark, one end by it
        return [(0.0, under), (aside, 0.0), (-aside, 0.0), (aside, under), (-aside, under), (0.0, LINE),
                (0.0, under - LINE)]
    spread(fig, order, tries, cells)


_AXIS_PX = 52           # the offset axis's numbers and title, under the plot
_LEGEND_B = _AXIS_PX + 3 * 21     # the bottom margin: the axis, then three rows of legend entries


def _fitting(label: str, room_px: float) -> str:
    """``label`` as it fits ``room_px`` in FONT px type: cut in the middle, its last two characters kept
    ('aborted-1' -> 'abort…-1': the records stay told apart); as it is when even that does not fit."""
    if "<" in label or text_extent(label, FONT)[0] <= room_px:
        return label
    head, tail = label[:-2], label[-2:]
    while head and text_extent(head + "…" + tail, FONT)[0] > room_px:
        head = head[:-1]
    return head + "…" + tail if head else label


def _fit_cells(fig: go.Figure) -> None:
    """Words plotly would shrink under FONT px to fit their cell, or hide (``labels`` says at what size it would draw
    them), are cut to fit at FONT px instead: a projector shows nothing smaller (the hover keeps the whole value)."""
    bars = {t.name: t for t in fig.data if t.type == "bar"}
    hiding = fig.layout.uniformtext
    fig.layout.uniformtext = None           # (``labels`` leaves out the words plotly would hide: they count too)
    found = labels(fig)
    fig.layout.uniformtext = hiding
    for what, text, _box, size in found:
        name, _, index = what.rpartition(" cell ")
        if size >= FONT - 0.01 or name not in bars:
            continue
        texts = list(bars[name].text)
        texts[int(index)] = _fitting(text, text_extent(text, FONT)[0] * size / FONT)
        bars[name].text = texts


def log_snapshot(cluster, rows: Sequence[tuple], title: str = "", marks: Sequence[str] = ("LEO", "HW", "LSO"),
                 positions: Optional[dict] = None, short: Optional[Callable[[str], str]] = None,
                 width: int = WIDTH, headers: bool = False) -> go.Figure:
    """The partition logs as strips of offset cells, now.

    ``rows``: (topic, partition) for the leader's replica or (topic, partition, broker) for one
    replica.  Cells are coloured by what the record is (see ``STATUS``); vertical marks show the
    LEO, HW and LSO (the LSO only on a leader).  ``positions``: {row index: [(offset, text), ...]}
    draws consumer positions under a row.  ``short``: a function shortening a record's label.  ``headers``: each
    record's cell also says its batch header's producer id and sequence (on the picture, not only on hover).
    """
    strips = [_strip(cluster, topic, partition, rest) for topic, partition, *rest in rows]
    widest = max([1] + [v["LEO"] for _, _, v in strips])
    wide = widest <= 10                                  # room for whole words in the cells

    fig = go.Figure()
    mark_labels: list = []
    by_status = {s: {"x": [], "y": [], "base": [], "text": [], "hover": []} for s in STATUS}
    for y, (name, cells, values) in enumerate(strips):
        for cell in cells:
            d = by_status[cell["status"]]
            label = cell["label"]
            if cell["status"] in ("COMMIT", "ABORT"):
                label = label if wide else label[0]
            elif short:
                label = short(label)
            if headers and "header" in cell:
                label = f"{label}<br>{cell['header']}"
            d["x"].append(0.9)
            d["base"].append(cell["offset"] - 0.45)
            d["y"].append(y)
            d["text"].append(label)
            d["hover"].append(f"offset {cell['offset']}: {cell['hover']}")
        mark_labels.append(_draw_marks(fig, y, values, marks))
    consumers = []
    for y, marks_here in (positions or {}).items():
        for k, (offset, text) in enumerate(marks_here):
            colour = CONSUMERS["read_committed"][0]
            fig.add_annotation(x=offset - 0.5, y=y + 0.3, ax=0, ay=24 + 20 * k, text=text, showarrow=True,
                               arrowhead=2, arrowcolor=colour, font=dict(size=SMALL, color=colour),
                               yanchor="top")
            consumers.append(len(fig.layout.annotations) - 1)
    for status, d in by_status.items():
        if not d["x"]:
            continue
        colour, words, ink = STATUS[status]
        fig.add_trace(go.Bar(orientation="h", x=d["x"], y=d["y"], base=d["base"], width=0.56, name=words,
                             showlegend=False, marker=dict(color=colour, line=dict(color=CELL_BORDER, width=1.2)),
                             text=d["text"], textposition="inside", insidetextanchor="middle", hovertext=d["hover"],
                             hoverinfo="text", textangle=0, textfont=dict(color=ink, size=FONT)))
    fig.add_traces(legend_entries(lines=[m for m in ("LEO", "HW", "LSO") if m in marks]))   # every colour named
    n = len(strips)
    # the legend goes under the offset axis, in rows across the figure's width (as the live log strip's): one
    # standing beside the plot pushed the figure past a notebook's column, which cut its words off, and in a
    # one-row picture its nine entries ran past the figure's foot
    plot_px = 90 + ROW_PX * n + (40 if positions else 0)     # (consumer positions hang under their row, inside)
    fig.update_layout(title=titled(title), barmode="overlay", width=width, height=plot_px + 60 + _LEGEND_B,
                      plot_bgcolor="white", margin=dict(l=10, r=10, t=60, b=_LEGEND_B),
                      legend=dict(orientation="h", yanchor="top", y=-_AXIS_PX / plot_px, xanchor="left", x=0.0,
                                  font=dict(size=SMALL)),
                      font=dict(size=FONT), uniformtext=dict(minsize=FONT - 2, mode="hide"))
    fig.update_yaxes(tickvals=list(range(n)), ticktext=[s[0] for s in strips], showgrid=False,
                     range=[n - 0.3 + (0.8 if positions else 0), -0.95], zeroline=False)
    fig.update_xaxes(title="offset", range=[-0.7, widest + 0.7 + widest / 12], dtick=1 if widest <= 20 else 5,
                     showgrid=False, zeroline=False)
    _fit_cells(fig)
    keep_inside(fig, consumers)             # a position at the log's end: its words end at its arrow
    _spread_marks(fig, mark_labels, [(cells[0]["offset"] - 0.45, cells[-1]["offset"] + 0.45, y - 0.28, y + 0.28)
                                     for y, (_, cells, _) in enumerate(strips) if cells])
    return fig


def _arrow(anns: list, m, x: dict, y0: float, y1: float, delivered: bool) -> tuple:
    """One message: an arrow from its sender's lane to its receiver's, labelled with its API (and, on a response,
    ✓ or its error name), as the live diagram labels it; both annotations go on ``anns`` (the figure takes them all
    at once: adding them one by one re-checks every one before, quadratic time).  Returns the label's index and
    the segment (x0, y0, x1, y1) its words may slide along."""
    colour = ARROWS["response"] if m.is_response else ARROWS["request"]
    if m.state == "dropped":
        colour = ARROWS["lost"]
    label = arrow_label(m)
    if m.src == m.dst:          # a broker talking to itself (e.g. the coordinator leads the partition)
        xs = x[m.src]
        anns.append(dict(x=xs + 0.03, y=y1, ax=xs + 0.22, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                         showarrow=True, arrowhead=2, arrowsize=1.2, arrowwidth=1.6, arrowcolor=colour, text=""))
        anns.append(dict(x=xs + 0.24, y=(y0 + y1) / 2, text=label + " (to itself)", showarrow=False,
                         xanchor="left", font=dict(size=SMALL, color=colour), bgcolor="rgba(255,255,255,0.85)"))
        return len(anns) - 1, (xs + 0.24, y0, xs + 0.24, y1)
    anns.append(dict(x=x[m.dst] if delivered else (x[m.src] + x[m.dst]) / 2, y=y1,
                     ax=x[m.src], ay=y0, xref="x", yref="y", axref="x", ayref="y",
                     showarrow=True, arrowhead=2, arrowsize=1.2, arrowwidth=1.6, arrowcolor=colour, text=""))
    anns.append(dict(x=(x[m.src] + x[m.dst]) / 2, y=(y0 + y1) / 2, text=label, showarrow=False,
                     font=dict(size=SMALL, color=colour), bgcolor="rgba(255,255,255,0.85)"))
    return len(anns) - 1, (x[m.src], y0, x[m.dst] if delivered else (x[m.src] + x[m.dst]) / 2, y1)


def message_flow(cluster, mark: int, apis: Sequence[str], lanes: Sequence[str], title: str = "",
                 height: Optional[int] = None) -> go.Figure:
    """A space-time diagram of the messages sent after trace position ``mark``.

    One vertical lane per process in ``lanes`` (time runs downwards, one row per step that
    sent or received one of the chosen messages); each request is a dark arrow and each
    response a grey one, labelled with its API.  Only messages of ``apis`` between two lanes
    are drawn.
    """
    first_step = cluster.trace.events[mark].step if mark < len(cluster.trace) else cluster.trace.events[-1].step
    delivered = {e.msg_id: e.step for e in cluster.trace.events if e.kind == "deliver" and e.msg_id >= 0}
    msgs = [m for m in cluster.network_messages()
            if m.api in apis and m.src in lanes and m.dst in lanes and m.sent_step >= first_step]
    steps = sorted({m.sent_step for m in msgs} | {delivered[m.id] for m in msgs if m.id in delivered})
    row = {s: i for i, s in enumerate(steps)}
    x = {name: i for i, name in enumerate(lanes)}
    fig = go.Figure()
    for name in lanes:
        fig.add_shape(type="line", x0=x[name], x1=x[name], y0=-0.5, y1=len(steps) - 0.5,
                      line=dict(color="#9E9E9E", width=1))
    labels, anns = {}, []
    for m in msgs:
        y0 = row[m.sent_step]
        y1 = row[delivered[m.id]] if m.id in delivered else y0 + 0.6
        k, segment = _arrow(anns, m, x, y0, y1, m.id in delivered)
        labels[k] = segment
    fig.update_layout(annotations=anns)
    fig.update_layout(title=titled(title), width=WIDTH, height=height or 120 + 26 * max(1, len(steps)),
                      plot_bgcolor="white", margin=dict(l=10, r=10, t=60, b=10), showlegend=False)
    fig.update_xaxes(tickvals=list(range(len(lanes))), ticktext=list(lanes), side="top", range=[-0.5, len(lanes) - 0.5],
                     showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False,
                     range=[len(steps) - 0.3, -0.7])
    px_x, px_y = pixels_per_unit(fig)

    def along(k: int) -> list:                 # further along its arrow or back, then a line or two off it
        x0, y0, x1, y1 = labels[k]
        moves = [((t - 0.5) * (x1 - x0) * px_x, -(t - 0.5) * (y1 - y0) * px_y) for t in ALONG[1:]]
        return moves + [(dx, dy + d) for d in (-LINE, LINE, -2 * LINE, 2 * LINE) for dx, dy in [(0.0, 0.0)] + moves]
    spread(fig, list(labels), along)
    return fig


def coordinator_snapshot(cluster, title: str = "") -> go.Figure:
    """The transaction coordinator's state machine with every transactional id at its state now: the live
    ``CoordinatorView``'s picture, kept as a static figure (one drawing for both)."""
    from .coordinator_view import CoordinatorView
    view = CoordinatorView(cluster)
    fig = go.Figure(view.figure)
    if title:
        fig.update_layout(title=titled(title))
    return fig


def state_machine_snapshot(taken: Sequence[str], title: str = "") -> go.Figure:
    """The coordinator's state machine (the live view's layout) with the moves of one transactional id drawn thick
    and blue: ``taken`` is its states in order (e.g. the ``state`` column of its ``__transaction_state``
    records)."""
    from .coordinator_view import CoordinatorView
    from .pictures import ARROWS
    view = CoordinatorView()
    fig = go.Figure(view.figure)
    moves = [(a, b) for a, b in zip(taken, taken[1:]) if a != b]
    for a, b in dict.fromkeys(moves):
        if (a, b) in view._edge_geometry:
            xs, ys = view._edge_geometry[(a, b)]
            fig.add_scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False, name=f"{a}->{b} taken",
                            line=dict(color=ARROWS["request"], width=4))
    fig.update_layout(title=titled(title or "Transaction states: the moves this transactional id made, in blue"))
    return fig
