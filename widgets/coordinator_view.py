"""The coordinator view: each transactional.id on the coordinator's state machine, and the two internal logs.

Owns the picture of KAFKA-EOS §2: the states of ``TransactionMetadata`` as nodes and the legal
transitions (``VALID_PREVIOUS_STATES``; the transaction.version 2 additions dotted) as arrows;
every transactional.id drawn at its current state with its last transition highlighted and a
pending (being written) transition dashed; a table with producer id, epoch, partitions and
timeout; the records of ``__transaction_state`` (decoded, not yet replicated ones marked); and
``__consumer_offsets`` with committed and pending transactional offsets.  Reads only.
"""
from __future__ import annotations

import html
import math
from typing import Optional

import ipywidgets as W
import plotly.graph_objects as go

from txnlab.coordinator.transaction_log import describe_record
from txnlab.coordinator.transaction_metadata import TV2_EXTRA_PREVIOUS_STATES, VALID_PREVIOUS_STATES

from .cluster_view import partitions_of, replica_log, transactional_ids
from .figure_send import send
from .figure_widget import FigureWidget
from .pictures import FONT, PENDING_DASH, SMALL, WIDTH, STATE_XY, TV2_DASH

BOX_W, BOX_H = 1.0, 0.34
# How much each transition's arrow bends (0: straight), so that no arrow crosses a state box.
BEND = {
    ("CompleteCommit", "Ongoing"): 0.45, ("CompleteAbort", "Ongoing"): -0.45,
    ("CompleteCommit", "Empty"): -1.6, ("CompleteAbort", "Empty"): 1.6,
    ("Empty", "Dead"): 3.0,
    ("Empty", "PrepareAbort"): 0.35, ("CompleteCommit", "PrepareAbort"): 0.25,
    ("CompleteAbort", "PrepareAbort"): 0.3,
}
TID_COLORS = ["#e8590c", "#1971c2", "#2f9e44", "#9c36b5", "#c2255c", "#0c8599"]
TABLE_CSS = ("<style>.txl-t{border-collapse:collapse;font-size:14px;margin:4px 0}"
             ".txl-t td,.txl-t th{border:1px solid #ddd;padding:2px 6px;text-align:left}"
             ".txl-t th{background:#f1f3f5}.txl-dim{color:#999}.txl-new{background:#fff3bf}</style>")


def _edges() -> list:
    out = []
    for target, prevs in VALID_PREVIOUS_STATES.items():
        for prev in sorted(prevs, key=int):
            if prev != target:
                out.append((prev.name, target.name, False))
    for target, prevs in TV2_EXTRA_PREVIOUS_STATES.items():
        for prev in sorted(prevs, key=int):
            if prev != target and (prev.name, target.name, False) not in out:
                out.append((prev.name, target.name, True))
    return out


EDGES = _edges()


def _clip(x0, y0, x1, y1) -> float:
    """The fraction of the way from the centre (x0, y0) towards (x1, y1) where a state box ends."""
    dx, dy = abs(x1 - x0), abs(y1 - y0)
    fx = (BOX_W / 2) / dx if dx else float("inf")
    fy = (BOX_H / 2) / dy if dy else float("inf")
    return min(fx, fy, 1.0)


def edge_path(a: str, b: str, n: int = 24) -> tuple:
    """Points of the arrow a -> b (a quadratic curve), clipped at both boxes, and its head."""
    (x0, y0), (x1, y1) = STATE_XY[a], STATE_XY[b]
    bend = BEND.get((a, b), 0.0)
    mx, my = (x0 + x1) / 2, (y0 + y1) / 2
    length = math.hypot(x1 - x0, y1 - y0) or 1.0
    cx, cy = mx - (y1 - y0) / length * bend, my + (x1 - x0) / length * bend
    pts = []
    for i in range(n + 1):
        t = i / n
        pts.append(((1 - t) ** 2 * x0 + 2 * t * (1 - t) * cx + t * t * x1,
                    (1 - t) ** 2 * y0 + 2 * t * (1 - t) * cy + t * t * y1))
    inside_a = lambda p: abs(p[0] - x0) <= BOX_W / 2 + 0.02 and abs(p[1] - y0) <= BOX_H / 2 + 0.02  # noqa: E731
    inside_b = lambda p: abs(p[0] - x1) <= BOX_W / 2 + 0.06 and abs(p[1] - y1) <= BOX_H / 2 + 0.06  # noqa: E731
    pts = [p for p in pts if not inside_a(p) and not inside_b(p)] or pts[n // 2:n // 2 + 2]
    return [p[0] for p in pts], [p[1] for p in pts]


def _head(xs: list, ys: list, color: str, width: float) -> dict:
    """A short annotation arrow on the last segment: the arrowhead."""
    return dict(x=xs[-1], y=ys[-1], ax=xs[-2], ay=ys[-2], xref="x", yref="y", axref="x", ayref="y",
                showarrow=True, arrowhead=2, arrowsize=1.0, arrowwidth=width, arrowcolor=color, text="")


def table(headers: list, rows: list, row_classes: Optional[list] = None) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = []
    for i, r in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>")
    return f'<table class="txl-t"><tr>{head}</tr>{"".join(body)}</table>'


class CoordinatorView:
    """State machine + transactional.id table + ``__transaction_state`` + ``__consumer_offsets``."""

    def __init__(self, cluster=None, max_records: int = 14) -> None:
        self.max_records = max_records
        self.figure = self._static()
        self.ids_html = W.HTML()
        self.txn_log_html = W.HTML()
        self.offsets_html = W.HTML()
        self.widget = W.VBox([
            self.figure,
            W.HTML("<b>Transactional ids</b> (what each coordinator holds in memory)"), self.ids_html,
            W.HTML("<b>__transaction_state</b> (the coordinators' log: each state change is written and "
                   "replicated before it counts)"), self.txn_log_html,
            W.HTML("<b>__consumer_offsets</b> (committed offsets, and offsets waiting for a transaction's marker)"),
            self.offsets_html])
        self._sig = None
        self._html_sig: dict = {}
        self.colors: dict = {}
        self.updates = 0
        if cluster is not None:
            self.update(cluster)

    def _layout(self) -> go.Layout:
        return go.Layout(
            title=dict(text="Transaction coordinator state machine (dotted: transaction.version 2 only; "
                            "dashed: being written to __transaction_state)", x=0.01, font=dict(size=FONT)),
            height=360, width=WIDTH, margin=dict(l=10, r=10, t=40, b=10), showlegend=False, plot_bgcolor="white",
            xaxis=dict(visible=False, range=[-0.6, 6.6], fixedrange=True),
            yaxis=dict(visible=False, range=[-1.0, 2.75], fixedrange=True), hovermode="closest")

    def _static(self):
        """The figure as it starts: the state machine's edges, the traces the updates fill, boxes and labels (all in
        the figure from the start: one message to the browser, not one per trace)."""
        self._edge_geometry = {}
        traces = []
        for a, b, tv2 in EDGES:
            xs, ys = edge_path(a, b)
            self._edge_geometry[(a, b)] = (xs, ys)
            traces.append(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", name=f"{a}->{b}",
                                     line=dict(color="#adb5bd", width=1.3, dash=TV2_DASH if tv2 else "solid")))
        self._n_edges = len(EDGES)
        traces += [
            go.Scatter(x=[], y=[], mode="lines", hoverinfo="skip", name="last transition", line=dict(width=4)),
            go.Scatter(x=[], y=[], mode="lines", hoverinfo="skip", name="being written",
                       line=dict(width=3, dash=PENDING_DASH)),
            go.Scatter(x=[], y=[], mode="markers+text", text=[], textposition="middle right",
                       marker=dict(size=13, line=dict(width=1, color="white")),
                       textfont=dict(size=FONT), hovertemplate="%{hovertext}<extra></extra>",
                       name="transactional ids")]
        layout = self._layout()
        layout.shapes = self._boxes(set())
        layout.annotations = self._labels_and_heads([], [])
        return FigureWidget(data=traces, layout=layout)

    def _boxes(self, active: set) -> list:
        out = []
        for name, (x, y) in STATE_XY.items():
            on = name in active
            out.append(dict(type="rect", x0=x - BOX_W / 2, x1=x + BOX_W / 2, y0=y - BOX_H / 2, y1=y + BOX_H / 2,
                            xref="x", yref="y", fillcolor="#fff3bf" if on else "#f8f9fa",
                            line=dict(color="#e67700" if on else "#868e96", width=3 if on else 1), layer="below"))
        return out

    def _labels_and_heads(self, highlight: list, pending: list) -> list:
        out = [dict(x=x, y=y, text=f"<b>{n}</b>", showarrow=False, font=dict(size=SMALL), xref="x", yref="y")
               for n, (x, y) in STATE_XY.items()]
        for a, b, tv2 in EDGES:
            xs, ys = self._edge_geometry[(a, b)]
            out.append(_head(xs, ys, "#adb5bd", 1.3))
        for a, b, color in highlight + pending:
            if (a, b) in self._edge_geometry:
                xs, ys = self._edge_geometry[(a, b)]
                out.append(_head(xs, ys, color, 2.5))
        return out

    # ------------------------------------------------------------------ update
    def _color(self, tid: str) -> str:
        c = self.colors.get(tid)
        if c is None:
            c = self.colors[tid] = TID_COLORS[len(self.colors) % len(TID_COLORS)]
        return c

    def describe_all(self, cluster) -> list:
        out = []
        for tid in transactional_ids(cluster):
            d = cluster.transaction_state(tid)
            out.append((tid, d))
        return out

    def update(self, cluster) -> bool:
        rows = self.describe_all(cluster)
        sig = tuple((tid, tuple(sorted((k, str(v)) for k, v in d.items())) if d else None) for tid, d in rows)
        changed = False
        if sig != self._sig:
            self._sig = sig
            self._draw(rows)
            self.ids_html.value = self._ids_table(cluster, rows)
            changed = True
        changed |= self._set_html("txn", self.txn_log_html, *self._txn_log(cluster))
        changed |= self._set_html("offsets", self.offsets_html, *self._offsets(cluster))
        if changed:
            self.updates += 1
        return changed

    def _set_html(self, key: str, widget, sig, make) -> bool:
        if self._html_sig.get(key) == sig:
            return False
        self._html_sig[key] = sig
        widget.value = make()
        return True

    def _draw(self, rows) -> None:
        xs, ys, texts, hovers, colors = [], [], [], [], []
        highlight, pending = [], []
        per_state: dict = {}
        active = set()
        for tid, d in rows:
            color = self._color(tid)
            if d is None:
                continue
            state = d["state"]
            active.add(state)
            k = per_state[state] = per_state.get(state, 0) + 1
            x, y = STATE_XY[state]
            xs.append(x + BOX_W / 2 - 0.12)
            ys.append(y + BOX_H / 2 + 0.13 + 0.2 * (k - 1))
            epoch = d["producer_epoch"]         # -1 until its first InitProducerId is written: no epoch yet
            texts.append(f"{tid} e{epoch}" if epoch >= 0 else f"{tid} (no epoch)")
            colors.append(color)
            parts = ", ".join(f"{t}-{p}" for t, p in d["partitions"]) or "none"
            lt = d.get("last_transition")
            hovers.append(f"<b>{tid}</b> at coordinator broker {d.get('coordinator')}<br>state {state}"
                          f"{' → writing ' + d['pending_state'] if d.get('pending_state') else ''}<br>producer id "
                          f"{d['producer_id']} {f'epoch {epoch}' if epoch >= 0 else 'no epoch yet'}<br>partitions "
                          f"{parts}<br>"
                          f"transaction.timeout.ms {d['transaction_timeout_ms']}"
                          + (f"<br>last transition {lt[0]} → {lt[1]} at {lt[2]}ms" if lt else ""))
            if lt and lt[0] != lt[1]:
                highlight.append((lt[0], lt[1], color))
            if d.get("pending_state") and d["pending_state"] != state:
                pending.append((state, d["pending_state"], color))
        fig = self.figure
        n = self._n_edges
        traces = {}
        for i, edges in ((n, highlight), (n + 1, pending)):
            lx, ly = [], []
            for a, b, color in edges:
                if (a, b) in self._edge_geometry:
                    gx, gy = self._edge_geometry[(a, b)]
                    lx += list(gx) + [None]
                    ly += list(gy) + [None]
            traces[i] = {"x": lx, "y": ly, "line.color": edges[0][2] if edges else "#e8590c"}
        traces[n + 2] = {"x": xs, "y": ys, "text": texts, "hovertext": hovers, "marker.color": colors,
                         "textfont.color": colors}
        send(fig, traces)        # never a batch of traces with different properties (widgets/figure_send.py)
        with fig.batch_update():
            fig.layout.shapes = self._boxes(active)
            fig.layout.annotations = self._labels_and_heads(highlight, pending)

    def _ids_table(self, cluster, rows) -> str:
        out = []
        for tid, d in rows:
            if d is None:
                b = cluster.transaction_coordinator(tid)
                out.append([tid, f"broker {b} (down or loading)" if b >= 0 else "none", "?", "", "", "", "", "", ""])
                continue
            lt = d.get("last_transition")
            out.append([tid, f"broker {d.get('coordinator')}", d["state"], d.get("pending_state") or "",
                        d["producer_id"], d["producer_epoch"] if d["producer_epoch"] >= 0 else "none yet",
                        ", ".join(f"{t}-{p}" for t, p in d["partitions"]) or "-", d["transaction_timeout_ms"],
                        f"{lt[0]} → {lt[1]} @ {lt[2]}ms" if lt else ""])
        if not out:
            return TABLE_CSS + '<span class="txl-dim">no transactional.id yet</span>'
        return TABLE_CSS + table(["transactional.id", "coordinator", "state", "writing", "producer id", "epoch",
                                  "partitions", "timeout ms", "last transition"], out)

    # ------------------------------------------------------------ internal logs
    def _txn_log(self, cluster):
        topic = "__transaction_state"
        logs = []
        for p in partitions_of(cluster, topic):
            log = replica_log(cluster, topic, p)
            if log is not None:
                logs.append((p, log))
        sig = tuple((p, id(log), log.log_end_offset, log.high_watermark) for p, log in logs)

        def make() -> str:
            rows, classes = [], []
            for p, log in logs:
                hw = log.high_watermark
                for b in log.batches:
                    if b.is_control:
                        continue
                    for i, r in enumerate(b.records):
                        off = b.base_offset + i
                        try:
                            d = describe_record(r.key, r.value)
                        except Exception:
                            continue
                        parts = ", ".join(f"{t}-{q}" for t, q in d.get("partitions", [])) or "-"
                        rows.append((b.max_timestamp, p, off, [f"{topic}-{p}", off, d["transactional_id"], d["state"],
                                                               d.get("producer_id", ""), d.get("producer_epoch", ""),
                                                               parts, "yes" if off < hw else "not yet"]))
            rows.sort(key=lambda r: (r[0], r[1], r[2]))
            rows = rows[-self.max_records:]
            if not rows:
                return TABLE_CSS + '<span class="txl-dim">empty (the topic is created at the first FindCoordinator)</span>'
            classes = ["" if r[3][-1] == "yes" else "txl-new" for r in rows]
            return TABLE_CSS + table(["partition", "offset", "transactional.id", "state", "producer id", "epoch",
                                      "partitions", "replicated (below HW)"], [r[3] for r in rows], classes)
        return sig, make

    def _offsets(self, cluster):
        views = []
        for b in cluster.brokers:
            broker = cluster.broker(b)
            if not broker.alive:
                continue
            try:
                views.extend((b, row) for row in broker.group_coordinator.offsets_view())
            except Exception:
                continue
        sig = tuple((b, tuple(sorted(r.items(), key=lambda kv: kv[0]))) for b, r in views)

        def make() -> str:
            if not views:
                return TABLE_CSS + '<span class="txl-dim">no group offsets yet</span>'
            rows = [[f"broker {b}", r["group"], f"{r['topic']}-{r['partition']}", r["offset"], r["status"],
                     r.get("producer_id") if r.get("producer_id") is not None else ""] for b, r in views]
            classes = ["txl-new" if r[4] != "committed" else "" for r in rows]
            return TABLE_CSS + table(["coordinator", "group", "partition", "offset", "status", "producer id"],
                                     rows, classes)
        return sig, make
