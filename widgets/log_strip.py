"""The partition log strip: every replica of every partition as a row of offset cells.

Owns the picture of the logs (KAFKA-EOS §1, §3, §4): one row per replica, one bordered cell per offset
with the record's value inside when it fits, coloured by what the record is (not transactional; transactional
and committed, still open or aborted; COMMIT / ABORT marker) with a legend naming every colour; each replica's LEO, HW and LSO as vertical lines; the positions
of read_committed and read_uncommitted consumers.  Hovering a cell shows the batch header fields.
Zoomed out past ``max_cells`` offsets per row the cells are batches, then buckets of batches.
Reads state only through ``cluster.log(...)``, ``cluster.partition_state(...)`` and consumers'
``position()``; it never changes anything.
"""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from typing import Optional

import numpy as np
import plotly.graph_objects as go

from .cluster_view import replica_log, user_topics
from .log_labels import CONSUMER_ROW, HW_ROW, SECOND_CONSUMER_DROP, consumer_marks, hw_labels, part_facing_names
from .figure_send import send
from .figure_widget import FigureWidget
from .legible import text_extent
from .strip_rows import BAR, ROW_PX, beside_words, fit_rows
from .pictures import (CELL_BORDER, CONSUMERS, FONT, LINES, SMALL, STATUS, STATUS_ORDER, WIDTH, cell_text, plot_width,
                       consumer_legend_entries, legend_entries, title as titled)

# one colour per kind of record, as every log picture of the lab draws it (widgets/pictures.py)
CODE = {status: i for i, status in enumerate(STATUS_ORDER)}
CONTROL = len(STATUS_ORDER) - 1
COLORSCALE = [[i / CONTROL, STATUS[s][0]] for i, s in enumerate(STATUS_ORDER)]
TEXT_COLOR = [STATUS[s][2] for s in STATUS_ORDER]
WIDE_CELLS = 60        # up to this many offsets in view, each cell shows its value and the axis every offset
STATUS_WORDS = {"committed": "transactional, committed", "aborted": "transactional, ABORTED (hidden from "
                "read_committed)", "open": "transactional, still open (hidden from read_committed)",
                "plain": "not transactional"}
ROW_STEP, PARTITION_GAP = 1.0, 2.0
BOTTOM_PX = 145       # under the plot: the offset axis (numbers, title) and four rows of legend entries


def nice_width(span: float, cells: int) -> int:
    """A bucket width of 1, 2, 5, 10, 20, 50, ... offsets giving at most ``cells`` buckets."""
    raw = max(1.0, span / max(1, cells))
    exp = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * exp >= raw:
            return int(m * exp)
    return int(10 * exp)


class _LogDigest:
    """Per-batch facts of one replica's log, computed once per log change."""

    __slots__ = ("bases", "nexts", "batches", "status", "key")

    def __init__(self, log) -> None:
        batches = list(log.batches)
        self.batches = batches
        self.bases = [b.base_offset for b in batches]
        self.nexts = [b.next_offset for b in batches]
        status = [""] * len(batches)
        decided: dict = {}
        for i in range(len(batches) - 1, -1, -1):     # a transaction's fate is its pid's next marker
            b = batches[i]
            if b.is_control:
                ct = b.control_type
                decided[b.producer_id] = "committed" if ct is not None and ct.name == "COMMIT" else "aborted"
                status[i] = "control"
            elif b.is_transactional:
                status[i] = decided.get(b.producer_id, "open")
            else:
                status[i] = "plain"
        self.status = status
        self.key = _log_key(log)


def _log_key(log) -> tuple:
    batches = log.batches
    return (log.log_end_offset, len(batches), id(batches[-1]) if len(batches) else 0, log.log_start_offset)


class LogStrip:
    """A plotly FigureWidget of the partition logs; ``update(cluster)`` redraws what changed."""

    def __init__(self, cluster=None, topics: Optional[list] = None, max_cells: int = 200,
                 title: str = "Partition logs", width: Optional[int] = WIDTH, height: Optional[int] = None,
                 max_height: Optional[int] = None) -> None:
        self.topics = topics
        self.width = width
        self.height = height                        # None: grows with the rows (widgets/strip_rows.py) ...
        self.max_height = max_height                # ... up to this (presenter mode's stage), rows fewer pixels
        self._px, self._bar = ROW_PX, BAR           # a row's pixels, a cell's height in rows (the rows' rule)
        self.max_cells = max_cells
        self.title = title
        self.view: Optional[tuple] = None           # (lo, hi) offsets when zoomed in
        self.figure = FigureWidget(layout=self._layout())
        self.figure.layout.xaxis.on_change(self._on_zoom, "range")
        self._cluster = None
        self._rows: list = []
        self._shape: tuple = ()
        self._digests: dict = {}
        self._row_cache: dict = {}
        self._sent: dict = {}
        self._zooming = False
        self._row_cb = None
        self.updates = 0
        if cluster is not None:
            self.update(cluster)

    # ------------------------------------------------------------------ clicks
    def on_row_click(self, fn) -> None:
        """``fn(process name)`` when a person clicks a replica's row (a cell of it): the stepper picks that broker."""
        self._row_cb = fn

    def _clicked_bar(self, trace, points, state=None) -> None:
        for i in points.point_inds:
            y = trace.y[i] if trace.y is not None and i < len(trace.y) else None
            row = next((r for r in self._rows if r[3] == y), None)
            if row is not None and self._row_cb is not None:
                self._row_cb(f"broker-{row[2]}")

    # ------------------------------------------------------------------ layout
    def _layout(self) -> go.Layout:
        return go.Layout(
            title=titled(self.title), height=260, width=self.width,
            margin=dict(l=200, r=30, t=50, b=BOTTOM_PX), font=dict(size=FONT),
            barmode="overlay", bargap=0, plot_bgcolor="#fafafa", hovermode="closest", uirevision="logs",
            # the legend stands at the figure's foot, under the offset axis, inside the bottom margin: placed against
            # the plot (y < 0) it pushed that margin up in the browser and took its room from the rows
            legend=dict(orientation="h", yref="container", yanchor="bottom", y=0.0, xref="container",
                        xanchor="left", x=0.01, font=dict(size=SMALL)),
            uniformtext=dict(minsize=FONT, mode="hide"),
            xaxis=dict(title=dict(text="offset", standoff=4), rangemode="tozero", zeroline=False, showgrid=False,
                       tickfont=dict(size=FONT)),
            yaxis=dict(autorange="reversed", showgrid=False, zeroline=False, tickfont=dict(size=FONT)))

    def _on_zoom(self, layout, rng) -> None:
        if self._zooming:
            return
        if rng is None or layout.autorange:
            view = None
        else:
            lo, hi = max(0, int(math.floor(rng[0]))), int(math.ceil(rng[1]))
            view = (lo, max(lo + 1, hi))
        if view == self.view:
            return                                   # the browser's own autorange: nothing to redraw
        self.view = view
        if self._cluster is not None:
            self._row_cache.clear()
            self.update(self._cluster, force=True)

    def zoom(self, lo: Optional[int] = None, hi: Optional[int] = None) -> None:
        """Show offsets lo..hi (None: everything)."""
        self.view = None if lo is None else (int(lo), int(hi))
        self._zooming = True
        try:
            with self.figure.batch_update():
                if self.view is None:
                    self.figure.layout.xaxis.autorange = True
                else:
                    self.figure.layout.xaxis.range = [self.view[0], self.view[1]]
        finally:
            self._zooming = False
        self._row_cache.clear()
        if self._cluster is not None:
            self.update(self._cluster, force=True)

    # --------------------------------------------------------------- the rows
    def _collect_rows(self, cluster) -> list:
        rows, y = [], 0.0
        for topic in (self.topics or user_topics(cluster)):
            p = 0
            while True:
                try:
                    st = cluster.partition_state(topic, p)
                except KeyError:
                    break
                for broker in sorted(st["replicas"]):
                    rep = st["replicas"][broker]
                    rows.append((topic, p, broker, y, st["leader"] == broker, rep["alive"]))
                    y += ROW_STEP
                y += PARTITION_GAP
                p += 1
        return rows

    def _digest(self, log) -> _LogDigest:
        d = self._digests.get(id(log))
        if d is None or d.key != _log_key(log):
            d = _LogDigest(log)
            self._digests[id(log)] = d
        return d

    @staticmethod
    def _code(b, status: str) -> int:
        if status == "control":
            ct = b.control_type
            return CODE["COMMIT"] if ct is not None and ct.name == "COMMIT" else CODE["ABORT"]
        return CODE[status]

    @staticmethod
    def _batch_hover(b, status: str, topic: str, p: int, offset: Optional[int] = None) -> str:
        head = (f"{topic}-{p} offset {offset} (batch {b.base_offset}–{b.last_offset})" if offset is not None
                else f"{topic}-{p} offsets {b.base_offset}–{b.last_offset} ({len(b.records)} record(s))")
        if status == "control":
            ct = b.control_type
            return (f"{head}<br><b>{ct.name if ct is not None else 'EMPTY'} marker</b> (control batch)<br>"
                    f"producer id {b.producer_id} epoch {b.producer_epoch}")
        seq = "none" if b.base_sequence < 0 else f"{b.base_sequence}–{b.last_sequence}"
        value = ""
        if offset is not None:
            r = b.records[offset - b.base_offset]
            v = r.value[:24].decode("utf-8", "replace") if r.value else "null"
            value = f"<br>value {v!r}"
        return (f"{head}<br>producer id {b.producer_id} epoch {b.producer_epoch}, sequence {seq}<br>"
                f"{STATUS_WORDS[status]}{value}")

    def _row_data(self, log, topic: str, p: int, lo: int, hi: int) -> tuple:
        """(starts, widths, codes, hovers, marks, texts) for one replica row."""
        d = self._digest(log)
        i0 = max(0, bisect_right(d.nexts, lo))
        i1 = bisect_left(d.bases, hi)
        starts, widths, codes, hovers, texts = [], [], [], [], []
        marks: dict = {"COMMIT": ([], []), "ABORT": ([], [])}
        span = hi - lo
        if span <= self.max_cells:                       # one cell per offset
            wide = span <= WIDE_CELLS
            # a value's words: as many characters as its cell holds, 8 at least (a longer one ends in "…")
            chars = max(8, int(self._offset_px(lo, hi) / text_extent("x", FONT)[0]) - 1)
            for i in range(i0, i1):
                b, st = d.batches[i], d.status[i]
                code = self._code(b, st)
                for off in range(max(lo, b.base_offset), min(hi, b.next_offset)):
                    starts.append(off)
                    widths.append(1)
                    codes.append(code)
                    hovers.append(self._batch_hover(b, st, topic, p, off))
                    if not wide:
                        texts.append("")
                    elif st == "control":
                        texts.append(STATUS_ORDER[code])
                    else:
                        r = b.records[off - b.base_offset]
                        texts.append(cell_text(r.value if r.value is not None else r.key, chars))
                if not wide:        # (a wide cell says COMMIT / ABORT in words; a glyph there sat on the word)
                    self._marker(b, st, marks, topic, p)
        elif i1 - i0 <= self.max_cells:                  # one cell per batch
            for i in range(i0, i1):
                b, st = d.batches[i], d.status[i]
                starts.append(b.base_offset)
                widths.append(len(b.records))
                codes.append(self._code(b, st))
                hovers.append(self._batch_hover(b, st, topic, p))
                texts.append("")
                self._marker(b, st, marks, topic, p)
        else:                                             # buckets of batches
            w = nice_width(span, self.max_cells)
            i = i0
            while i < i1:
                start = (d.bases[i] // w) * w
                end = start + w
                counts: dict = {}
                n_batches, pids, n_marks = 0, set(), {"COMMIT": 0, "ABORT": 0}
                while i < i1 and d.bases[i] < end:
                    b, st = d.batches[i], d.status[i]
                    n_batches += 1
                    if st == "control":
                        ct = b.control_type
                        name = ct.name if ct is not None else ""
                        if name in n_marks:
                            n_marks[name] += 1
                    else:
                        counts[st] = counts.get(st, 0) + len(b.records)
                        pids.add(b.producer_id)
                        major_code = self._code(b, st)
                        counts[("code", major_code)] = counts.get(("code", major_code), 0) + len(b.records)
                    i += 1
                code_counts = {k[1]: v for k, v in counts.items() if isinstance(k, tuple)}
                code = max(code_counts, key=code_counts.get) if code_counts else CONTROL
                texts.append("")
                starts.append(start)
                widths.append(w)
                codes.append(code)
                words = ", ".join(f"{counts[s]} {s}" for s in ("committed", "open", "aborted", "plain") if s in counts)
                hovers.append(f"{topic}-{p} offsets {start}–{end - 1}: {n_batches} batch(es)<br>records: {words or 'none'}"
                              f"<br>producer ids {', '.join(map(str, sorted(pids))) or '-'}<br>"
                              f"markers: {n_marks['COMMIT']} COMMIT, {n_marks['ABORT']} ABORT<br><i>zoom in for cells</i>")
                for name, n in n_marks.items():
                    if n:
                        marks[name][0].append(start + w / 2)
                        marks[name][1].append(f"{n} {name} marker(s) in offsets {start}–{end - 1}")
        return starts, widths, codes, hovers, marks, texts

    def _marker(self, b, st: str, marks: dict, topic: str, p: int) -> None:
        if st != "control":
            return
        ct = b.control_type
        name = ct.name if ct is not None else ""
        if name in marks:
            marks[name][0].append(b.base_offset + 0.5)
            marks[name][1].append(self._batch_hover(b, st, topic, p))

    # ------------------------------------------------------------------ update
    def _view_range(self, cluster, rows) -> tuple:
        if self.view is not None:
            return self.view
        top = 1
        for topic, p, broker, *_ in rows:
            log = replica_log(cluster, topic, p, broker)
            if log is not None:
                top = max(top, log.log_end_offset)
        return 0, top

    def _build(self, rows) -> None:
        """(Re)create the traces: one bar trace per partition, then markers, lines and consumers."""
        fig = self.figure
        parts = sorted({(t, p) for t, p, *_ in rows}, key=lambda tp: [r[:2] for r in rows].index(tp))
        traces = []
        for i, (t, p) in enumerate(parts):
            traces.append(go.Bar(name=f"{t}-{p}", orientation="h", x=[], y=[], base=[], width=self._bar,
                                 hovertemplate="%{hovertext}<extra></extra>", showlegend=False, text=[],
                                 textposition="inside", insidetextanchor="middle", textangle=0,
                                 textfont=dict(size=FONT), cliponaxis=False,
                                 marker=dict(color=[], colorscale=COLORSCALE, cmin=0, cmax=CONTROL,
                                             line=dict(width=0))))
        # markers are cells of their own colour, with their word when a cell is wide enough; in narrow cells and a
        # zoomed-out row (batches, buckets) these glyphs show them
        traces.append(go.Scatter(name="COMMIT marker", mode="markers", x=[], y=[], showlegend=False,
                                 marker=dict(symbol="diamond", size=9, color="white", line=dict(width=1, color=STATUS["COMMIT"][0])),
                                 hovertemplate="%{hovertext}<extra></extra>"))
        traces.append(go.Scatter(name="ABORT marker", mode="markers", x=[], y=[], showlegend=False,
                                 marker=dict(symbol="x", size=9, color="white", line=dict(width=1, color=STATUS["ABORT"][0])),
                                 hovertemplate="%{hovertext}<extra></extra>"))
        for name, (color, dash, width, _words) in LINES.items():
            traces.append(go.Scatter(name=name, mode="lines", x=[], y=[], line=dict(color=color, dash=dash, width=width),
                                     showlegend=False, hovertemplate="%{hovertext}<extra></extra>"))
        traces.append(go.Scatter(name="leader's HW / LSO", mode="text", x=[], y=[], text=[], showlegend=False,
                                 textposition="top center", textfont=dict(size=FONT, color=[]), hoverinfo="skip",
                                 cliponaxis=False))
        for iso, side in (("read_committed", "middle right"), ("read_uncommitted", "middle left")):
            color, symbol = CONSUMERS[iso]
            traces.append(go.Scatter(name=f"{iso} consumer", mode="markers+text", x=[], y=[], text=[],
                                     cliponaxis=False, textposition=side, textfont=dict(size=SMALL, color=color),
                                     marker=dict(symbol=symbol, size=14, color=color, line=dict(width=2, color=color)),
                                     hovertemplate="%{hovertext}<extra></extra>", showlegend=False))
        # the legend names the triangles from the start: had the consumers' own traces named them, the legend would
        # grow by two rows when the first consumer appears, and the browser would take those rows from the plot
        # (its bars then too thin for their 14 px words, which plotly hides)
        traces += legend_entries() + consumer_legend_entries()
        # not inside batch_update: the widget's front end then loses the new traces' styles (colours)
        fig.data = []
        fig.add_traces(traces)
        for tr in fig.data[:len(parts)]:
            tr.on_click(self._clicked_bar)
        self._parts = parts
        self._sent = {}

    def update(self, cluster, force: bool = False) -> bool:
        """Redraw from the cluster's state; returns True when something was sent to the figure."""
        if cluster is not self._cluster:
            self._cluster = cluster
            self._digests.clear()
            self._row_cache.clear()
        rows = self._collect_rows(cluster)
        self._rows = rows
        shape = tuple((t, p, b) for t, p, b, *_ in rows)
        if shape != self._shape:
            self._shape = shape
            self._layout_rows(rows)
            self._build(rows)
        lo, hi = self._view_range(cluster, rows)
        if self.view is None:                       # follow the growing logs with stable buckets
            hi = max(hi, 1)
            if hi > self.max_cells:
                w = nice_width(hi, self.max_cells)
                hi = int(math.ceil(hi / w) * w)
        per_part: dict = {}
        marks = {"COMMIT": ([], [], []), "ABORT": ([], [], [])}
        lines = {name: ([], [], []) for name in LINES}
        labels: list = []
        for topic, p, broker, y, leader, alive in rows:
            log = replica_log(cluster, topic, p, broker)
            if log is None:
                continue
            key = (id(log), _log_key(log), lo, hi)
            data = self._row_cache.get((topic, p, broker))
            if data is None or data[0] != key:
                data = (key, self._row_data(log, topic, p, lo, hi))
                self._row_cache[(topic, p, broker)] = data
            starts, widths, codes, hovers, mk, texts = data[1]
            acc = per_part.setdefault((topic, p), ([], [], [], [], [], []))
            acc[0].extend(starts)
            acc[1].extend(widths)
            acc[2].extend(codes)
            acc[3].extend(hovers)
            acc[4].extend([y] * len(starts))
            acc[5].extend(texts)
            for name, (xs, hs) in mk.items():
                marks[name][0].extend(xs)
                marks[name][1].extend([y] * len(xs))
                marks[name][2].extend(hs)
            values = {"LEO": log.log_end_offset, "HW": log.high_watermark, "LSO": log.last_stable_offset}
            who = f"{topic}-{p} broker {broker}{' (leader)' if leader else ''}{'' if alive else ' (down)'}"
            text = f"{who}<br>LEO {values['LEO']} · HW {values['HW']} · LSO {values['LSO']}"
            for name, v in values.items():
                xs, ys, hs = lines[name]
                xs += [v, v, None]
                ys += [y - 0.5, y + 0.5, None]
                hs += [text, text, ""]
            if leader:
                labels.append((topic, p, values["HW"], values["LSO"]))
        cons = consumer_marks(cluster, rows, beside_words(CONSUMER_ROW, self._px))
        cons["labels"] = hw_labels(rows, labels, beside_words(HW_ROW, self._px))
        self._sides(cons, lo, hi)
        self._x_ticks(lo, hi)
        return self._send(per_part, marks, lines, cons, lo, hi, force)

    def _x_ticks(self, lo: int, hi: int) -> None:
        """Few offsets in view: each cell's offset under its middle; many: round numbers on the cell boundaries."""
        if hi - lo <= WIDE_CELLS:
            step = 1 if hi - lo <= 30 else 2
            ticks = ("cells", lo, hi, step)
            if self._sent.get("ticks") != ticks:
                self._sent["ticks"] = ticks
                with self.figure.batch_update():
                    self.figure.layout.xaxis.tickmode = "array"
                    self.figure.layout.xaxis.tickvals = [o + 0.5 for o in range(lo, hi, step)]
                    self.figure.layout.xaxis.ticktext = [str(o) for o in range(lo, hi, step)]
            return
        dtick = nice_width(hi - lo, 12)
        if self._sent.get("ticks") != ("dtick", dtick):
            self._sent["ticks"] = ("dtick", dtick)
            with self.figure.batch_update():
                self.figure.layout.xaxis.tickmode = "linear"
                self.figure.layout.xaxis.dtick = dtick
                self.figure.layout.xaxis.tick0 = 0

    def _offset_px(self, lo: int, hi: int) -> float:
        """The pixels one offset takes across the plot, ``lo``..``hi`` in view."""
        return plot_width(self.figure._layout) / max(1, hi - lo)

    def _sides(self, cons: dict, lo: int, hi: int) -> None:
        """Which side of its point each label stands on (plotly's textposition, one per label): words that would run
        past the plot's end (into the legend or off the picture) or its start (into the rows' names) turn to the
        other side -- 'HW = LSO = 3' at the last offset ends at its line instead of being centred on it; a consumer's
        name goes to the triangle's other side, or under it when another consumer's name stands there."""
        lay = self.figure._layout        # the layout's plain dict: reading it through plotly's objects costs more
        margin = lay.get("margin", {})
        room_right = margin.get("r", 0) if lay.get("legend", {}).get("orientation") == "h" else 0
        px = self._offset_px(lo, hi)
        xs, _, texts, _ = cons["labels"]
        sides = []
        for x, text in zip(xs, texts):
            half = text_extent(text, FONT)[0] / 2
            sides.append("top left" if (hi - x) * px + room_right < half else
                         "top right" if (x - lo) * px < half else "top center")
        cons["labels"] = cons["labels"] + (sides,)
        at = {iso: set(zip(cons[iso][0], cons[iso][1])) for iso in ("read_committed", "read_uncommitted")}
        for iso, side, other, under, their in (("read_committed", "right", "left", "bottom left", "read_uncommitted"),
                                               ("read_uncommitted", "left", "right", "bottom right", "read_committed")):
            xs, ys, texts, _ = cons[iso]
            sides = []
            for x, y, t in zip(xs, ys, texts):
                room = (hi - x) * px + room_right if side == "right" else (x - lo) * px
                if room >= text_extent(t, SMALL)[0] + 14:
                    sides.append("middle " + side)
                else:        # the other side, unless the other isolation's consumer stands there: then under it
                    sides.append(under if (x, y) in at[their] else "middle " + other)
            cons[iso] = cons[iso] + (sides,)
        part_facing_names(cons, lo, hi, px, room_right)

    def _layout_rows(self, rows) -> None:
        fig = self.figure
        ticks = [y for *_, y, _l, _a in rows]
        labels = [f"{t}-{p} · broker {b}{' ★' if leader else ''}{'' if alive else ' ✕ down'}"
                  for t, p, b, y, leader, alive in rows]
        span = [(ticks[-1] if ticks else 0) + 1.0 + SECOND_CONSUMER_DROP, -1.15]
        # the plot's height follows the rows (widgets/strip_rows.py), its margins (the title above; the axis and,
        # when it stands there, the legend below) added as they are set: the normal view's and presenter mode's
        # strips by one rule, presenter mode's within its stage; the cells' height (set on the traces built next)
        margin = fig.layout.margin
        height, self._px, self._bar = fit_rows(span[0] - span[1], (margin.t or 0) + (margin.b or 0), self.max_height)
        with fig.batch_update():
            fig.layout.yaxis.tickvals = ticks
            fig.layout.yaxis.ticktext = labels
            fig.layout.yaxis.range = span
            fig.layout.yaxis.autorange = False
            fig.layout.height = self.height or max(220, height)
        self._labels = labels

    def _send(self, per_part, marks, lines, cons, lo, hi, force) -> bool:
        fig = self.figure
        sent = self._sent
        changes = []
        for i, tp in enumerate(self._parts):
            starts, widths, codes, hovers, ys, texts = per_part.get(tp, ([], [], [], [], [], []))
            sig = (tuple(starts), tuple(widths), tuple(codes), tuple(ys), len(hovers) and hovers[-1], tuple(texts))
            if force or sent.get(("bar", i)) != sig:
                sent[("bar", i)] = sig
                changes.append(("bar", i, starts, widths, codes, hovers, ys, texts))
        n = len(self._parts)
        for j, name in enumerate(("COMMIT", "ABORT")):
            xs, ys, hs = marks[name]
            sig = (tuple(xs), tuple(ys))
            if force or sent.get(name) != sig:
                sent[name] = sig
                changes.append(("xy", n + j, xs, ys, hs, None))
        for j, name in enumerate(LINES):
            xs, ys, hs = lines[name]
            sig = (tuple(xs), tuple(ys), tuple(hs))
            if force or sent.get(name) != sig:
                sent[name] = sig
                changes.append(("xy", n + 2 + j, xs, ys, hs, None))
        xs, ys, texts, colors, sides = cons["labels"]
        sig = (tuple(xs), tuple(ys), tuple(texts), tuple(sides))
        if force or sent.get("labels") != sig:
            sent["labels"] = sig
            changes.append(("text", n + 5, xs, ys, texts, colors, sides))
        for j, iso in enumerate(("read_committed", "read_uncommitted")):
            xs, ys, texts, hs, sides = cons[iso]
            sig = (tuple(xs), tuple(ys), tuple(texts), tuple(sides))
            if force or sent.get(iso) != sig:
                sent[iso] = sig
                changes.append(("xy", n + 6 + j, xs, ys, hs, texts, sides))
        layout_labels = self._labels_now()
        if not changes and not layout_labels:
            return False
        traces: dict = {}
        for ch in changes:
            props = traces.setdefault(ch[1], {})
            if ch[0] == "bar":
                _, i, starts, widths, codes, hovers, ys, texts = ch
                props.update({"base": np.asarray(starts, dtype=float), "x": np.asarray(widths, dtype=float),
                              "y": np.asarray(ys, dtype=float), "marker.color": np.asarray(codes, dtype=float),
                              "hovertext": hovers})
                if any(texts):                     # values in the cells: only with few offsets in view
                    props["text"] = list(texts)
                    props["textfont.color"] = [TEXT_COLOR[int(c)] for c in codes]
                    sent[("texts", i)] = True
                elif sent.pop(("texts", i), False):
                    props["text"] = None
                outline = 1.2 if (hi - lo) <= self.max_cells else 0   # cell borders only when one per offset
                if sent.get(("outline", i)) != outline:
                    sent[("outline", i)] = outline
                    props["marker.line.width"] = outline
                    props["marker.line.color"] = CELL_BORDER
            elif ch[0] == "text":
                _, _, xs, ys, texts, colors, sides = ch
                props.update({"x": xs, "y": ys, "text": texts, "textfont.color": colors, "textposition": sides})
            else:
                _, _, xs, ys, hs, texts, *sides = ch
                props.update({"x": xs, "y": ys, "hovertext": hs})
                if texts is not None:
                    props["text"] = texts
                if sides:
                    props["textposition"] = sides[0]
        send(fig, traces, {"yaxis.ticktext": layout_labels} if layout_labels else None)
        self.updates += 1
        return True

    def _labels_now(self):
        """New tick labels when leadership or liveness changed (same rows)."""
        cluster = self._cluster
        labels = []
        for t, p, b in self._shape:
            st = cluster.partition_state(t, p)
            alive = st["replicas"][b]["alive"]
            labels.append(f"{t}-{p} · broker {b}{' ★' if st['leader'] == b else ''}{'' if alive else ' ✕ down'}")
        if labels != self._labels:
            self._labels = labels
            return labels
        return None

    # ------------------------------------------------------------ for tests
    def trace_named(self, name: str):
        for tr in self.figure.data:
            if tr.name == name:
                return tr
        raise KeyError(name)

    def line_positions(self, name: str) -> list:
        """The offsets of the LEO/HW/LSO ticks, one per row, as drawn."""
        xs = self.trace_named(name).x or ()
        return [x for x in xs[::3]]
