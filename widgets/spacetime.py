"""The space-time (Lamport) diagram: processes as lanes, every request and response as an arrow.

Owns the message-flow picture (as Maelstrom draws it, from the network journal after the fact):
one vertical lane per process (clients, brokers and the controller, or another lab's processes);
simulated time runs downwards (events at the same millisecond a little apart, in their order; an idle gap
longer than ``IDLE_MS`` is compressed to a fixed height and labelled "… 30 s …"); an arrow from the moment a
message was sent on its source lane to the moment it was delivered on its destination lane, labelled with
its API (and, on a response, its error name when it is not NONE).  In-flight messages end in a clickable dot
(drop / delay / duplicate them), a message a network partition holds ends part way ("⏸ held": TCP delivers it
after the heal, and its arrow then reaches its receiver), dropped messages end in a red cross, a broken connection is a ⚡ on
its client's lane at the step the client noticed it, the current step is a highlighted band, and the lane
heads are clickable (crash / restart that process).  Reads the
trace and ``network.messages`` only.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from typing import Callable, Optional

import plotly.graph_objects as go

from .cluster_view import is_kafka, roles
from .figure_send import send
from .figure_widget import FigureWidget
from .legible import CHAR_EM, LINE_EM, MARGIN, first_free, text_box, text_extent, y_labels_width
from .pictures import ARROWS, FONT, SMALL, WIDTH, arrow_label, idle_words, plot_width, title as titled

STYLE = {  # trace name -> (colour, dash, width): the lab's one arrow vocabulary (widgets/pictures.py)
    "requests": (ARROWS["request"], "solid", 1.8),
    "responses": (ARROWS["response"], "solid", 1.8),
    "background": ("#ced4da", "solid", 1.0),
    # replication: a follower's Fetch and the leader's answer, fainter and thinner than the messages of the
    # protocol the step is about; their words yield to those when the picture is crowded (``place_labels``)
    "follower Fetch": ("#a5b8cc", "solid", 1.2),
    "dropped": (ARROWS["lost"], "dot", 1.8),
    "in flight": (ARROWS["in flight"], "dash", 2.2),
    "this step": (ARROWS["this step"], "solid", 3.5),
}


# How far along its way an in-flight (or lost-on-sending) message is drawn: not half way, so that an arrow
# across two lanes does not seem to end on the lane between them (1, 2, 3 or 4 lanes away: 0.42 .. 1.68).
PART_WAY = 0.42
INFRASTRUCTURE = ("controller", "namesrv")     # drawn last: Kafka's controller, RocketMQ's name server
IDLE_MS = 200          # a quieter gap than this is compressed and labelled
SAME_MS, SHORT, GAP = 0.8, 1.6, 2.6          # y per event at the same ms, at most for a short gap, per idle gap
class TimeAxis:
    """Kernel steps -> y: simulated time, with a little room between events of the same millisecond and
    long idle gaps compressed (each remembered, to be labelled)."""

    def __init__(self, times: dict, lo: int, cur: int) -> None:
        self.y: dict = {}
        self.gaps: list = []            # (y in the middle of the gap, gap ms)
        y, last_t = 0.0, None
        for step in range(lo, cur + 1):
            t = times.get(step, last_t)
            if t is None:
                continue
            if last_t is not None:
                gap = t - last_t
                if gap > IDLE_MS:
                    self.gaps.append((y + GAP / 2, gap))
                    y += GAP
                else:
                    y += SAME_MS + SHORT * min(1.0, gap / 50)
            self.y[step] = y
            last_t = t
        self.lo, self.cur = lo, cur
        self.top = self.y.get(cur, y)

    def __call__(self, step: Optional[int]) -> float:
        if step is None:
            return self.top
        got = self.y.get(step)
        if got is not None:
            return got
        if step > self.cur:
            return self.top + SAME_MS * (step - self.cur)
        return -SAME_MS * (self.lo - step) if step < self.lo else self.top


def events_since(cluster, lo: int) -> list:
    """The kept trace events of kernel steps >= ``lo``, in order.  A bounded trace (``sim.trace.keep.steps``)
    keeps only its last steps, read by their positions in the whole run: the search starts at the oldest kept
    one (``trace.first_position``), never at position 0."""
    trace = cluster.kernel.trace
    events = trace.events
    start = bisect_left(events, lo, lo=trace.first_position, key=lambda e: e.step)
    return events[start:]


def lanes_of(cluster) -> list[str]:
    """Lanes, left to right: clients (and any other process, in creation order), brokers, then the
    controller / name server.  Works for any lab on the kernel (a 2PC lab has only 'other' processes)."""
    nodes = list(cluster.kernel.nodes)
    brokers = [n for n in nodes if n.startswith("broker-")]
    clients = [n for n in nodes if n not in brokers and n not in INFRASTRUCTURE]
    return clients + sorted(brokers) + [n for n in INFRASTRUCTURE if n in nodes]


class SpaceTime:
    """A plotly FigureWidget of the last ``window`` kernel steps of message flow (by default as many as the
    picture's height has room for: see ``steps_shown``)."""

    def __init__(self, cluster=None, window: Optional[int] = None, show_background: bool = False) -> None:
        self.window = window
        self.show_background = show_background
        self.match: Optional[Callable] = None          # the stepper's filter, applied to messages
        layout = go.Layout(
            title=titled("Messages (space-time diagram): simulated time runs down"),
            height=560, width=WIDTH, margin=dict(l=60, r=20, t=90, b=50), plot_bgcolor="white", hovermode="closest",
            legend=dict(orientation="h", yanchor="top", y=-0.02, xanchor="left", x=0.0, font=dict(size=SMALL)),
            font=dict(size=FONT),
            xaxis=dict(side="top", showgrid=False, zeroline=False, fixedrange=True, tickfont=dict(size=FONT)),
            yaxis=dict(title=dict(text="simulated time (idle gaps compressed)", font=dict(size=AXIS_TITLE_SIZE)),
                       autorange=False, showgrid=True, gridcolor="#f1f3f5", zeroline=False,
                       tickfont=dict(size=TICK_SIZE)))
        # drawing order: lanes and the current-step band below, arrows, then the clickable dots; the traces are
        # the figure's from the start (one message to the browser, not one per trace)
        traces = [go.Scatter(x=[], y=[], mode="lines", name="lanes", showlegend=False, hoverinfo="skip",
                             line=dict(color="#dee2e6", width=2)),
                  go.Scatter(x=[], y=[], mode="lines", name="current step", showlegend=False,
                             hovertemplate="%{hovertext}<extra></extra>",
                             line=dict(color="rgba(174,62,201,0.16)", width=14))]
        self._arrows0 = 2
        for name, (color, dash, width) in STYLE.items():
            traces.append(go.Scatter(
                x=[], y=[], mode="lines+markers", name=name, hovertemplate="%{hovertext}<extra></extra>",
                line=dict(color=color, dash=dash, width=width),
                marker=dict(symbol="arrow", angleref="previous", size=[], color=color),
                showlegend=name not in ("background", "follower Fetch")))   # (replication: a Kafka lab's, below)
        self._n = self._arrows0 + len(STYLE)
        traces += [
            go.Scatter(x=[], y=[], mode="markers", name="in flight: click to drop / delay",
                       marker=dict(symbol="circle", size=13, color="#f08c00", line=dict(width=2, color="white")),
                       hovertemplate="%{hovertext}<extra>click to pick this message</extra>"),
            go.Scatter(x=[], y=[], mode="markers", name="lost", showlegend=False,
                       marker=dict(symbol="x", size=11, color="#e03131"),
                       hovertemplate="%{hovertext}<extra></extra>"),
            go.Scatter(x=[], y=[], mode="markers", name="processes (click: crash / restart)",
                       text=[], showlegend=False, cliponaxis=False,
                       marker=dict(symbol="square", size=LANE_SQUARE, color=[]),
                       hovertemplate="%{hovertext}<extra>click to pick this process</extra>"),
            go.Scatter(x=[], y=[], mode="markers+text", name="connection broke", text=[],
                       textposition="bottom right", textfont=dict(size=SMALL, color="#c92a2a"),
                       marker=dict(symbol="star-diamond", size=BREAK_MARKER, color="#c92a2a"),
                       hovertemplate="%{hovertext}<extra></extra>"),
            go.Scatter(x=[], y=[], mode="text", name="arrow labels", text=[], showlegend=False,
                       textposition="top center", textfont=dict(size=LABEL_SIZE, color=LABEL_INK),
                       hoverinfo="skip", cliponaxis=False),
            go.Scatter(x=[], y=[], mode="text", name="idle gaps", text=[], showlegend=False,
                       textfont=dict(size=GAP_SIZE, color="#868e96"), hoverinfo="skip", cliponaxis=False)]
        self.figure = FigureWidget(data=traces, layout=layout)
        self.position_of: Callable[[int], int] = lambda step: step   # kernel step -> the stepper's step number
        self._sent: dict = {}
        self._flight_ids: list[int] = []
        self._lane_names: list[str] = []
        self._message_cb: Optional[Callable[[int], None]] = None
        self._node_cb: Optional[Callable[[str], None]] = None
        self.figure.data[self._n].on_click(self._clicked_message)
        self.figure.data[self._n + 2].on_click(self._clicked_lane)
        self.updates = 0
        self.last_arrows: dict = {}
        self.last_labels: dict = {}
        self.axis: Optional[TimeAxis] = None
        self._flight_row = 0.9
        if cluster is not None:
            self.update(cluster)

    # ------------------------------------------------------------------ clicks
    def on_message_click(self, fn: Callable[[int], None]) -> None:
        self._message_cb = fn

    def on_node_click(self, fn: Callable[[str], None]) -> None:
        self._node_cb = fn

    def _clicked_message(self, trace, points, state=None) -> None:
        for i in points.point_inds:
            if self._message_cb and i < len(self._flight_ids):
                self._message_cb(self._flight_ids[i])

    def _clicked_lane(self, trace, points, state=None) -> None:
        for i in points.point_inds:
            if self._node_cb and i < len(self._lane_names):
                self._node_cb(self._lane_names[i])

    # ------------------------------------------------------------------ update
    def _window_messages(self, cluster, lo: int, recent: list):
        """(message, delivered_step or None, how) for messages touching steps >= lo (``recent``: their events)."""
        seen = {}
        for e in recent:
            if e.msg_id >= 0 and e.kind in ("deliver", "drop"):
                seen[e.msg_id] = (e.step, e.kind)
        msgs = cluster.kernel.network.messages
        out = []
        for mid, (step, kind) in seen.items():
            m = msgs.get(mid)
            if m is not None:
                out.append((m, step, "delivered" if kind == "deliver" else "lost"))
        for m in reversed(msgs.values()):              # sent in the window, not delivered (yet)
            if m.sent_step < lo:
                break
            if m.id not in seen:
                out.append((m, None, "in flight" if m.state == "in-flight" else
                            "held" if m.state == "held" else "lost"))
        for ev in cluster.kernel.pending_events():       # in flight since before the window
            m = ev.msg
            if m is not None and m.sent_step < lo and m.id not in seen:
                out.append((m, None, "in flight"))
        for m in cluster.kernel.network.in_flight():     # held by a partition since before the window
            if m.state == "held" and m.sent_step < lo and m.id not in seen:
                out.append((m, None, "held"))
        return out

    def update(self, cluster, current_step: Optional[int] = None) -> bool:
        """Redraw for the cluster's current kernel step; returns True when the figure changed."""
        k = cluster.kernel
        cur = k.step_count if current_step is None else current_step
        # the visible window moves in jumps of half a window, so that most steps redraw only arrows
        window = self.steps_shown()
        half = max(1, window // 2)
        end = max(window, ((cur + half - 1) // half) * half + half // 2)
        lo = max(0, end - window - half)
        recent = events_since(cluster, lo)
        axis = self._axis(recent, lo, cur)
        msgs = self._window_messages(cluster, lo, recent)
        self._flight_row = self._row_of_flights(axis, lo, cur, end, sum(how in ("in flight", "held") for _, _, how in msgs))
        lanes = lanes_of(cluster)
        x_of = {n: i for i, n in enumerate(lanes)}
        groups, flights, lost, labels = self._arrows(msgs, lo, cur, x_of, axis, recent)
        lane_text, lane_hover, lane_colors = self._lanes(cluster, lanes)
        breaks = self._breaks(recent, x_of, axis)
        self._flight_ids = flights[3]
        self._lane_names = lanes
        n = len(lanes)
        y_cur, y_end = axis(cur), axis(end)
        top = axis(lo) - 1.6
        bottom = max([y_end, y_cur + 1.2] + flights[1]) + 1.0
        ticks = self._ticks(recent, axis, cur)
        faint = [LABEL_FAINT if y else LABEL_INK for y in labels[2]]       # a follower Fetch's words: grey
        labels = self._place(labels, n, bottom - (top - LANE_Y), breaks, axis.gaps, top - LANE_Y, ticks[1])
        self.last_labels = {mid: w for mid, w in zip(self.last_labels, labels[2]) if w}    # the words drawn
        when = f"step {self.position_of(cur)} (t = {k.now} ms)"
        gaps = ([GAP_X] * len(axis.gaps), [y for y, _ in axis.gaps], [idle_words(ms) for _, ms in axis.gaps])
        updates = {0: {"x": [v for i in range(n) for v in (i, i, None)], "y": [-10 ** 9, 10 ** 9, None] * n},
                   1: {"x": [-0.6, n - 0.4], "y": [y_cur, y_cur], "hovertext": [when, when]},
                   self._n: {"x": flights[0], "y": flights[1], "hovertext": flights[2]},
                   self._n + 1: {"x": lost[0], "y": lost[1], "hovertext": lost[2]},
                   self._n + 2: {"x": list(range(n)), "y": [top] * n, "text": lane_text, "hovertext": lane_hover,
                                 "marker.color": lane_colors},
                   self._n + 3: {"x": breaks[0], "y": breaks[1], "text": breaks[2], "hovertext": breaks[3]},
                   self._n + 4: {"x": labels[0], "y": labels[1], "text": labels[2], "textfont.color": faint},
                   self._n + 5: {"x": gaps[0], "y": gaps[1], "text": gaps[2]}}
        for i, name in enumerate(STYLE):
            xs, ys, hs, sizes = groups[name]
            updates[self._arrows0 + i] = {"x": xs, "y": ys, "hovertext": hs, "marker.size": sizes}
        updates[self._arrows0 + list(STYLE).index("follower Fetch")]["showlegend"] = is_kafka(cluster)
        lane_px = plot_width(self.figure._layout) / n       # a name breaks after its "-" only if the lane is narrow
        names = [t if text_extent(t, FONT)[0] + 2 * MARGIN <= lane_px else t.replace("-", "-<br>", 1) for t in lane_text]
        layout = {"xaxis.tickvals": list(range(n)), "xaxis.ticktext": names,
                  "xaxis.range": [-0.6, n - 0.4], "yaxis.range": [bottom, top - LANE_Y],
                  "yaxis.tickvals": ticks[0], "yaxis.ticktext": ticks[1]}
        self.axis = axis
        if push(self.figure, self._sent, updates, layout):
            self.updates += 1
            return True
        return False

    def steps_shown(self) -> int:
        """How many kernel steps the window holds (it shows between that many and half as many again): ``window``
        when given, else what the picture's height has room for with a line for each arrow's words
        (``PX_PER_STEP``), so that the labels of a busy stretch do not cover each other."""
        if self.window is not None:
            return self.window
        layout = self.figure.layout
        plot = (layout.height or 560) - layout.margin.t - layout.margin.b
        return max(MIN_STEPS, round(plot / PX_PER_STEP))

    def _px_per_y(self, y_span: float) -> float:
        layout = self.figure.layout
        return ((layout.height or 560) - layout.margin.t - layout.margin.b) / max(1e-9, y_span)

    def _place(self, labels: tuple, lanes: int, y_span: float, breaks: tuple, gaps: list, top: float,
               ticks: list) -> tuple:
        """Where each arrow's words go: half way along it (a message in flight: by its dot) unless that covers
        words already placed, then the first free place further along or back (the words stay on their own
        arrow)."""
        layout = self.figure.layout
        left = max(layout.margin.l, y_labels_width(ticks, TICK_SIZE, AXIS_TITLE_SIZE))   # as plotly widens it
        plot_w = (layout.width or WIDTH) - left - layout.margin.r
        px_x, px_y = plot_w / (max(1, lanes) + 0.2), self._px_per_y(y_span)     # the x range: -0.6 .. lanes - 0.4
        taken = [text_box(x * px_x, y * px_y, t, SMALL, "bottom right", BREAK_MARKER)
                 for x, y, t in zip(*breaks[:3])]             # the ⚡ words, written below right of their mark
        taken += [text_box(GAP_X * px_x, y * px_y, idle_words(ms), GAP_SIZE, "middle center")
                  for y, ms in gaps]                          # the idle gaps' words, left of the first lane
        # above the plot the lanes' names, and under them the lanes' squares (LANE_Y under the plot's top edge)
        taken.append((-1e9, 1e9, -1e9, (top + LANE_Y) * px_y + LANE_SQUARE / 2))
        return place_labels(labels[0], labels[1], px_x, px_y, taken, yielding=labels[2])

    @staticmethod
    def _axis(recent: list, lo: int, cur: int) -> TimeAxis:
        times: dict = {}
        for e in recent:
            times.setdefault(e.step, e.time)
        return TimeAxis(times, lo, cur)

    @staticmethod
    def _ticks(recent: list, axis: TimeAxis, cur: int) -> tuple:
        """Time labels on the y axis: a tick where time moved on, at most one every 1.2 units."""
        vals, texts, last_y, last_t = [], [], None, None
        for e in recent:
            if e.step > cur or e.time == last_t:
                continue
            y = axis(e.step)
            if last_y is None or y - last_y >= 1.2:
                vals.append(y)
                texts.append(f"{e.time} ms")
                last_y = y
            last_t = e.time
        return vals, texts

    def _row_of_flights(self, axis: TimeAxis, lo: int, cur: int, end: int, flying: int) -> float:
        """The y between two messages in flight (they end one below the other, a line of their words apart), in a
        picture whose range runs from above ``lo`` to below ``end`` or below the last of ``flying`` such rows,
        whichever is lower (see ``update``): solved for the row, as the rows themselves may lower the bottom."""
        plot = self._px_per_y(1.0)                              # the plot's height in pixels
        top = axis(lo) - 2.8
        fixed = max(axis(end), axis(cur) + 1.2) + 1.0 - top     # the span without the rows
        row = LABEL_LINE_PX * fixed / plot
        if flying > 1:
            left = plot - LABEL_LINE_PX * (flying - 1)          # the rows' own pixels come off the plot's height
            row = max(row, LABEL_LINE_PX * (axis(cur) + 1.8 - top) / max(left, LABEL_LINE_PX))
        return row

    def _arrows(self, msgs: list, lo: int, cur: int, x_of: dict, axis: TimeAxis, recent: list) -> tuple:
        """Line segments per style, the in-flight dots (x, y, hover, ids), the lost crosses and the labels (each
        arrow's segment with where along it its words may go, and the words: ``place_labels`` places them)."""
        groups = {name: ([], [], [], []) for name in STYLE}
        flights: tuple = ([], [], [], [])
        lost: tuple = ([], [], [])
        labels: tuple = ([], [], [])
        words: dict = {}
        at = self.position_of
        arrows = {}
        held = 0
        for m, step, how in sorted(msgs, key=lambda t: t[0].id):
            if m.src not in x_of or m.dst not in x_of:
                continue
            if (m.background and not self.show_background and how == "delivered") or \
                    (self.match is not None and not self.match(m)):
                continue
            x0, x1, y0 = x_of[m.src], x_of[m.dst], axis(m.sent_step)
            desc = m.describe()
            text = (f"<b>{arrow_label(m, how)}</b> ({m.kind}): {m.src} → {m.dst}<br>sent at step "
                    f"{at(m.sent_step)} (t = {m.sent_at} ms)" + (f"<br>{desc}" if desc else "")
                    + (f"<br><i>{m.note}</i>" if m.note else "") + f"<br><span style='color:#868e96'>message #{m.id}</span>")
            if how == "delivered":
                y1 = axis(step)
                group = "this step" if step == cur else ("background" if m.background else
                                                         "follower Fetch" if _replication(m) else
                                                         "responses" if m.is_response else "requests")
                text += f"<br>delivered at step {at(step)} (t = {m.deliver_at} ms)"
            elif how == "in flight":           # one row each, so that messages sent together are told apart
                y1 = axis(cur) + 0.8 + self._flight_row * (len(flights[0]) + held)
                x1, group = x0 + (x1 - x0) * PART_WAY, "in flight"
                text += f"<br>in flight, due at t = {m.deliver_at} ms: click to drop or delay it"
                for col, v in zip(flights, (x1, y1, text, m.id)):
                    col.append(v)
            elif how == "held":                # on its way, not clickable: TCP delivers it after the heal
                y1 = axis(cur) + 0.8 + self._flight_row * (len(flights[0]) + held)
                held += 1
                x1, group = x0 + (x1 - x0) * PART_WAY, "in flight"
                text += "<br><b>held</b> by a network partition: TCP retransmits it and delivers it after the heal"
            else:
                y1 = axis(step) if step is not None else y0 + 0.5
                x1, group = x0 + (x1 - x0) * (PART_WAY if step is None else 0.92), "dropped"
                text += f"<br><b>lost</b>: {m.note or 'dropped'}"
                for col, v in zip(lost, (x1, y1, text)):
                    col.append(v)
            xs, ys, hs, sizes = groups[group]
            xs += [x0, x1, None]
            ys += [y0, y1, None]
            hs += [text, text, ""]
            sizes += [0, 10 if group != "dropped" else 0, 0]
            arrows[m.id] = (group, m.src, m.dst, m.api)
            if group != "background":
                words[m.id] = arrow_label(m, how)
                labels[0].append((x0, y0, x1, y1, AT_DOT if how in ("in flight", "held") else ALONG))
                labels[1].append(words[m.id])
                labels[2].append(group == "follower Fetch")
        self.last_arrows = arrows
        self.last_labels = words            # message id -> the words on its arrow (update: those drawn)
        return groups, flights, lost, labels

    @staticmethod
    def _breaks(recent: list, x_of: dict, axis: TimeAxis) -> tuple:
        """The steps at which a client noticed that a connection broke (a lost message breaks it, as TCP
        does): x, y, label and hover text of a ⚡ on the client's lane."""
        out: tuple = ([], [], [], [])
        for e in recent:
            if e.kind == "timer" and e.node in x_of and e.text.startswith(f"{e.node}: connection to "):
                peer = e.text.rsplit(" ", 2)[-2]
                for col, v in zip(out, (x_of[e.node], axis(e.step), f"⚡ connection to {peer} broke",
                                        "<br>".join([e.text] + list(e.details)))):
                    col.append(v)
        return out

    @staticmethod
    def _lanes(cluster, lanes: list) -> tuple:
        lane_roles = roles(cluster)
        texts, hovers, colors = [], [], []
        for n in lanes:
            node = cluster.kernel.nodes[n]
            alive = node.alive and not getattr(node, "crashed", False)
            texts.append(n if alive else f"{n} ✕")
            extra = ""
            bid = n[len("broker-"):]
            if n.startswith("broker-") and bid.isdigit() and lane_roles.get(int(bid)):
                extra = "<br>" + "<br>".join(lane_roles[int(bid)])
            hovers.append(f"<b>{n}</b> ({'up' if alive else 'down'}){extra}")
            colors.append("#495057" if alive else "#e03131")
        return texts, hovers, colors


# The window's size by default: a window and a half of steps (what it shows at most) with about one line of
# arrow words each needs ~26 px of picture per step of the window (measured over the gallery's scenarios: 16
# steps in the stepper's 420 px leave 15 of ~880 label pairs covering each other where 40 left 877)
PX_PER_STEP, MIN_STEPS = 26, 8
LABEL_SIZE = 14                                  # the arrow labels' type (px)
LABEL_INK, LABEL_FAINT = "#212529", "#868e96"    # their colour; a follower Fetch's (replication), fainter
BREAK_MARKER = 13                                # the ⚡ mark of a broken connection (px)
GAP_X, GAP_SIZE = -0.45, 14                      # where an idle gap's words stand (left of the first lane), their type
TICK_SIZE, AXIS_TITLE_SIZE = 14, 14              # the time axis's labels and title
LANE_SQUARE, LANE_Y = 16, 1.2                    # a lane's clickable square (px), and how far under the plot's top
LABEL_CHAR_PX = CHAR_EM * LABEL_SIZE              # an average character of it (widgets/legible.py's estimate)
LABEL_LINE_PX = math.ceil(LINE_EM * LABEL_SIZE + MARGIN)   # a line of it, with the room two labels keep between them
ALONG = (0.5, 0.35, 0.65, 0.22, 0.78, 0.12, 0.88)  # where along its arrow a label may go, most wanted first
AT_DOT = (1.0,) + ALONG                            # a message in flight: by its dot, where it is now


def _replication(m) -> bool:
    """A follower's Fetch from its leader, or the leader's answer: both ends are brokers."""
    return m.api == "Fetch" and m.src.startswith("broker-") and m.dst.startswith("broker-")


def place_labels(segments: list, texts: list, px_x: float, px_y: float, taken: Optional[list] = None,
                 yielding: Optional[list] = None) -> tuple:
    """(x, y, text) of arrow labels that do not meet each other (``legible.first_free``): each label (drawn above its
    point, centred) goes half way along its arrow, or at the first place further along or back where it meets no
    label placed before it or any box of ``taken``; failing that, a line below or above such a place, beside it
    with one end on it, or two or three lines below or above it.  A label with no free place near its arrow is left
    out (its words are ''): in a burst the oldest arrows give way to the newest.  The newest arrows (last in ``segments``) choose first: they are
    the ones the step is about; the labels flagged in ``yielding`` (replication) choose after all the others.
    ``px_x``/``px_y``: pixels per unit of each axis; boxes are (left, right, top, bottom) in pixels."""
    placed: list = list(taken or ())
    xs, ys, words = [0.0] * len(texts), [0.0] * len(texts), list(texts)
    line = LABEL_LINE_PX / px_y
    yielding = yielding or [False] * len(texts)
    order = [i for i in reversed(range(len(texts))) if not yielding[i]] + \
        [i for i in reversed(range(len(texts))) if yielding[i]]
    for i in order:
        (x0, y0, x1, y1, along), text = segments[i], texts[i]
        w, h = text_extent(text, LABEL_SIZE)          # drawn "top center": centred above its point
        half = w / 2 / px_x
        tries = [(t, 0.0, 0.0) for t in along] + [(t, 0.0, d) for d in (line, -line) for t in along] + \
                [(t, side, 0.0) for side in (half, -half) for t in along] + \
                [(t, 0.0, d) for d in (2 * line, -2 * line, 3 * line, -3 * line) for t in along]
        points = [(x0 + (x1 - x0) * t + dx, y0 + (y1 - y0) * t + dy) for t, dx, dy in tries]
        k, met = first_free(((x * px_x - w / 2, x * px_x + w / 2, y * px_y - h, y * px_y) for x, y in points), placed)
        xs[i], ys[i] = points[k]
        if met:
            words[i] = ""               # no room left near its arrow: left out (the arrow keeps its hover text)
        else:
            x, y = points[k]
            placed.append((x * px_x - w / 2, x * px_x + w / 2, y * px_y - h, y * px_y))
    return xs, ys, words


def push(fig, sent: dict, updates: dict, layout: dict) -> bool:
    """Send only what changed since the last push: ``updates`` maps a trace index to
    {property path: value}, ``layout`` maps layout property paths to values (``figure_send.send``)."""
    traces: dict = {}
    for i, props in updates.items():
        for path, value in props.items():
            if sent.get((i, path)) != value:
                sent[(i, path)] = value
                traces.setdefault(i, {})[path] = value
    relayout = {}
    for path, value in layout.items():
        if sent.get(path) != value:
            sent[path] = value
            relayout[path] = value
    if not traces and not relayout:
        return False
    send(fig, traces, relayout)
    return True
