"""Plotly pictures for the comparison chapter: RocketMQ's half and op topics, and a space-time view.

``half_topic_figure(lab)`` draws RMQ_SYS_TRANS_HALF_TOPIC queue 0 (one cell per offset, coloured by
its fate: pending, copied by a check, committed, rolled back, discarded; with its check count), the
op messages of RMQ_SYS_TRANS_OP_HALF_TOPIC under the half offset each one marks, the committed
copies in the real topic, and where the check service will read next.  ``transactions_table(lab)``
lists one row per transaction id.  ``space_time_figure(x)`` and ``message_table_figure(x)`` work
for any lab on the kernel (RocketMQ, two-phase commit, a Kafka ``Cluster``): they read only the
network journal and the trace, never the nodes.  ``participants_table(lab, tx_id)`` shows 2PC (``waiting``: who
is in doubt, and who is blocked because the coordinator is down).  Every word is set in ``TYPE_PX`` (14 px) type.
"""
from __future__ import annotations

from typing import Iterable, Optional

import plotly.graph_objects as go

from .legible import LINE_EM, MARGIN, pixels_per_unit, spread

STATUS_COLOURS = {"pending": "#f0ad4e", "copied": "#d0d0d0", "committed": "#5cb85c", "rolled back": "#d9534f",
                  "discarded": "#404040"}
HIDDEN_APIS = ("HEART_BEAT", "REGISTER_BROKER", "GET_ROUTEINFO_BY_TOPIC", "BrokerHeartbeat", "Fetch")


def _kernel(source):
    return getattr(source, "kernel", source)


# --------------------------------------------------------------------------- half / op topics
TYPE_PX = 14          # the type of every word on these pictures: read on a projector, from the back of the room
FULL_CELLS = 6        # up to this many offsets a cell spells out its offset, key and check count; beyond, the count


def _cells(fig: go.Figure, xs: list, row: int, fills: list, texts: list, hovers: list, name: str,
           font_colours=None, inset: float = 0.0) -> None:
    """One row of cells: a rectangle per offset (in data units, so neighbours never meet however wide the picture
    is), its words in the middle, and what hovering adds."""
    for x, fill in zip(xs, fills):
        fig.add_shape(type="rect", x0=x - 0.42 + inset, x1=x + 0.42 - inset, y0=row - 0.36 + inset,
                      y1=row + 0.36 - inset, fillcolor=fill, line=dict(color="#555", width=1), layer="below")
    fig.add_trace(go.Scatter(x=xs, y=[row] * len(xs), mode="text", name=name, text=texts,
                             textfont=dict(size=TYPE_PX, color=font_colours or "black"),
                             hovertext=hovers, hoverinfo="text", showlegend=False))


def half_topic_figure(lab, broker=None, title: Optional[str] = None) -> go.Figure:
    """RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC and the real topic, aligned by half offset: one
    rectangle per message (fill: the half message's fate), its words on it in 14 px type, no legend to hover."""
    halves = lab.half_messages(broker)
    ops = lab.op_messages(broker)
    b = broker or lab.broker
    by_clo = {}
    for m in b.store.queue_messages("RMQ_SYS_TRANS_HALF_TOPIC", 0):
        by_clo[m.commit_log_offset] = m.queue_offset
    rows = ["real topic<br>(committed copies)", "RMQ_SYS_TRANS_<br>OP_HALF_TOPIC q0", "RMQ_SYS_TRANS_<br>HALF_TOPIC q0"]
    fig = go.Figure()
    xs = [h["offset"] for h in halves]
    read_from = lab.check_offsets(broker)["half"]
    n = max(max([read_from] + xs) + 1, FULL_CELLS)
    crowded = n > FULL_CELLS                       # (three lines of "checks 15" need ~75 px of a 700 px picture)
    _cells(fig, xs, 2, [STATUS_COLOURS[h["status"]] for h in halves],
           [f"{h['check_times']}" if crowded else f"{h['offset']}<br>{h['keys'] or ''}<br>checks {h['check_times']}"
            for h in halves],
           [f"half offset {h['offset']}: {h['status']}<br>transactionId {h['transaction_id']}<br>"
            f"REAL_TOPIC={h['real_topic']} REAL_QID={h['real_queue_id']}<br>"
            f"TRANSACTION_CHECK_TIMES={h['check_times']}<br>stored at t={h['stored_at']}ms"
            + (f"<br>copied to offset {h['copied_to']} by a check" if h["copied_to"] is not None else "")
            for h in halves], "half messages",
           font_colours=["white" if h["status"] == "discarded" else "black" for h in halves])
    _cells(fig, [o["half_offset"] for o in ops], 1, ["#9fc5e8"] * len(ops),
           [o["tag"] if crowded else f"op {o['offset']}<br>tag {o['tag']}<br>-> {o['half_offset']}" for o in ops],
           [f"op offset {o['offset']}: half offset {o['half_offset']} is processed (t={o['stored_at']}ms)"
            for o in ops], "op messages", inset=0.03)
    copies = [m for m in b.store.commit_log if m.prepared_transaction_offset in by_clo
              and m.topic not in ("RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC")
              and m.queue_offset >= 0 and (m.sys_flag & 12) == 8]
    if copies:      # the cells say queue and offset; the row says which topic
        rows[0] = f"{', '.join(sorted({m.topic for m in copies}))}<br>(committed copies)"
    _cells(fig, [by_clo[m.prepared_transaction_offset] for m in copies], 0, ["#b6d7a8"] * len(copies),
           ["" if crowded else f"q{m.queue_id}<br>@{m.queue_offset}" for m in copies],
           [f"{m.topic} queue {m.queue_id} offset {m.queue_offset}: visible to consumers" for m in copies],
           "committed copies", inset=0.03)
    for status, colour in STATUS_COLOURS.items():       # a key to the fates, in a line above the rows
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=status,
                                 marker=dict(symbol="square", size=14, color=colour, line=dict(color="#555", width=1))))
    # where the check service reads next: a dashed line between two offsets, its words under the bottom row
    fig.add_shape(type="line", x0=read_from - 0.5, x1=read_from - 0.5, y0=-0.45, y1=2.45,
                  line=dict(dash="dash", color="#888", width=2))
    left = read_from > n / 2
    fig.add_annotation(x=read_from - 0.5, y=-0.62, text=f"check service reads from {read_from}", showarrow=False,
                       xanchor="right" if left else "left", xshift=-4 if left else 4, font=dict(size=TYPE_PX, color="#555"))
    fig.update_layout(title=title or f"{b.name}: half messages and op messages at t={lab.clock}ms",
                      height=440, font=dict(size=TYPE_PX), margin=dict(l=10, r=10, t=90, b=50), plot_bgcolor="white",
                      legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom", font=dict(size=TYPE_PX)),
                      xaxis=dict(title="half offset" + (" (cells show the check count)" if crowded else ""),
                                 range=[-0.6, n - 0.4], dtick=1, showgrid=False, zeroline=False,
                                 tickfont=dict(size=TYPE_PX)),
                      yaxis=dict(tickvals=[0, 1, 2], ticktext=rows, range=[-0.8, 2.5], showgrid=False,
                                 zeroline=False, tickfont=dict(size=TYPE_PX)))
    return fig


def transactions_table(lab, broker=None) -> go.Figure:
    rows = lab.transactions(broker)
    cols = ["transaction_id", "keys", "status", "check_times", "half_offsets", "delivered"]
    fill = [[STATUS_COLOURS.get(r["status"], "white") for r in rows]]
    return go.Figure(go.Table(
        header=dict(values=["transactionId", "keys", "status", "checks", "half offsets", "delivered"],
                    font=dict(size=TYPE_PX), height=30),
        cells=dict(values=[[str(r[c]) for r in rows] for c in cols], fill_color=[["white"] * len(rows)] * 2 + fill
                   + [["white"] * len(rows)] * 3, font=dict(size=TYPE_PX), height=28)),
        layout=dict(height=80 + 30 * len(rows), margin=dict(l=10, r=10, t=10, b=10)))


# ------------------------------------------------------------------------------ space-time
def message_rows(source, include_background: bool = False, hide: Iterable[str] = HIDDEN_APIS,
                 since_step: int = 0) -> list[dict]:
    """Every message of the network journal as a row: when it was sent and received (steps and times)."""
    k = _kernel(source)
    received = {}
    for e in k.trace:
        if e.msg_id >= 0 and e.kind in ("deliver", "drop"):
            received[e.msg_id] = (e.step, e.time)
    rows = []
    hide = set(hide or ())
    for mid in sorted(k.network.messages):
        m = k.network.messages[mid]
        if m.api in hide or (m.background and not include_background) or m.sent_step < since_step:
            continue
        step, time = received.get(mid, (None, None))
        rows.append({"id": mid, "api": m.api, "kind": m.kind, "src": m.src, "dst": m.dst,
                     "sent_step": m.sent_step, "sent_at": m.sent_at, "received_step": step, "received_at": time,
                     "state": m.state, "note": m.note, "what": m.describe()})
    return rows


def message_table_figure(source, **kw) -> go.Figure:
    """The network journal as a table, one message a row (a response's API says "(resp)")."""
    rows = message_rows(source, **kw)
    api = [r["api"] + (" (resp)" if r["kind"] == "response" else "") for r in rows]
    values = [[r["id"] for r in rows], [r["sent_at"] for r in rows], [r["src"] for r in rows],
              [r["dst"] for r in rows], api, [r["state"] for r in rows], [r["what"] for r in rows]]
    return go.Figure(go.Table(header=dict(values=["#", "sent (ms)", "from", "to", "API", "state", "what"],
                                          font=dict(size=TYPE_PX), height=30),
                              columnwidth=[30, 65, 100, 100, 270, 85, 330],   # (CHECK_TRANSACTION_STATE fits at 14 px)
                              cells=dict(values=values, align="left", height=28, font=dict(size=TYPE_PX))),
                     layout=dict(height=min(1000, 60 + sum(10 + 20 * -(-len(r["what"]) // 34) for r in rows)),
                                 margin=dict(l=10, r=10, t=10, b=10)))      # (a long "what" wraps: ~34 characters a line)


def space_time_figure(source, lanes: Optional[list] = None, include_background: bool = False,
                      hide: Iterable[str] = HIDDEN_APIS, since_step: int = 0, title: str = "") -> go.Figure:
    """Lanes are processes; time (the step number) runs downwards; each message is an arrow from its
    send to its delivery.  A lost message ends in a red x short of its destination; faults are red stars."""
    k = _kernel(source)
    rows = message_rows(source, include_background, hide, since_step)
    faults = [e for e in k.trace if e.kind == "fault" and e.step >= since_step and e.node in k.nodes]
    names = list(lanes or [])
    for r in rows:
        for n in (r["src"], r["dst"]):
            if n not in names:
                names.append(n)
    for e in faults:
        if e.node not in names:
            names.append(e.node)
    x = {n: i for i, n in enumerate(names)}
    # Time runs downwards as a compressed step axis: only steps where something shown happened get a row.
    steps = sorted({r["sent_step"] for r in rows} | {r["received_step"] for r in rows if r["received_step"]}
                   | {e.step for e in faults})
    y = {st: i for i, st in enumerate(steps)}
    when = {}
    for e in k.trace:
        when.setdefault(e.step, e.time)
    fig = go.Figure()
    labels = {}                                    # annotation index -> (t, x0, y0, x1, y1): a message's words
    last = max(len(steps), 1)
    for n in names:
        fig.add_trace(go.Scatter(x=[x[n], x[n]], y=[-0.5, last], mode="lines",
                                 line=dict(color="#ccc", width=1), hoverinfo="skip", showlegend=False))
    for r in rows:
        if r["src"] not in x or r["dst"] not in x:
            continue
        y0 = y[r["sent_step"]]
        lost = r["received_step"] is None or r["state"] == "dropped"
        y1 = y[r["received_step"]] if r["received_step"] is not None else y0 + 1
        x0, x1 = x[r["src"]], x[r["dst"]]
        if lost:     # it ends short of its destination (a dead process, a partition, a dropped packet)
            x1, y1 = x0 + 0.8 * (x1 - x0), y0 + 0.8 * (y1 - y0)
        colour = "#d9534f" if lost else ("#777" if r["kind"] == "response" else "#1f77b4")
        fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                           showarrow=not lost, arrowhead=2, arrowsize=1, arrowwidth=1.3, arrowcolor=colour, text="")
        label = r["api"] + (" (resp)" if r["kind"] == "response" else "")
        fig.add_trace(go.Scatter(x=[x0, x1], y=[y0, y1], mode="lines", line=dict(color=colour, width=1.3,
                                 dash="dot" if r["kind"] == "response" else "solid"),
                                 hovertext=f"#{r['id']} {label} {r['src']} -> {r['dst']} sent t={r['sent_at']}ms "
                                           f"({r['state']}) {r['what']}", hoverinfo="text", showlegend=False))
        # the words stand in the middle of the arrow's last gap between two lanes: at the middle of an arrow across
        # two lanes they would hide the head of the arrow to the lane between
        t = (abs(x1 - x0) - 0.5) / abs(x1 - x0) if abs(x1 - x0) > 1 else 0.5
        labels[len(fig.layout.annotations)] = (t, x0, y0, x1, y1)
        fig.add_annotation(x=x0 + t * (x1 - x0), y=y0 + t * (y1 - y0), text=label, showarrow=False,
                           font=dict(size=TYPE_PX, color=colour), bgcolor="rgba(255,255,255,0.85)")
        if lost:
            fig.add_trace(go.Scatter(x=[x1], y=[y1], mode="markers", marker=dict(symbol="x", size=12, color=colour),
                                     hovertext=f"#{r['id']} {label} lost: {r['note']}", hoverinfo="text",
                                     showlegend=False))
    if faults:
        fig.add_trace(go.Scatter(x=[x[e.node] for e in faults], y=[y[e.step] for e in faults], mode="markers+text",
                                 marker=dict(symbol="star", size=14, color="#d9534f"),
                                 text=[e.text for e in faults], textposition="middle right",
                                 textfont=dict(size=TYPE_PX, color="#d9534f"), hoverinfo="text",
                                 hovertext=[e.text for e in faults], showlegend=False))
    # (the lane names stand above the lanes, clear of the toolbar plotly shows at the top right on hover)
    fig.update_layout(title=title or None, height=max(300, min(1600, 110 + 30 * last)),
                      font=dict(size=TYPE_PX), margin=dict(l=10, r=10, t=80 if title else 50, b=10), plot_bgcolor="white",
                      xaxis=dict(tickvals=list(range(len(names))), ticktext=names, side="top", showgrid=False,
                                 range=[-0.5, len(names) - 0.5], tickfont=dict(size=TYPE_PX)),
                      yaxis=dict(autorange="reversed", showgrid=False, tickvals=list(range(len(steps))),
                                 ticktext=[f"#{st} {when.get(st, 0)}ms" for st in steps], tickfont=dict(size=TYPE_PX)))
    _spread_labels(fig, labels)
    return fig


def _spread_labels(fig: go.Figure, labels: dict) -> None:
    """Words of two messages sent at the same moment would stand on each other: each that meets one placed before
    it moves along its own arrow (within the arrow's last gap between two lanes), then a line up or down."""
    px_x, px_y = pixels_per_unit(fig)
    line = LINE_EM * TYPE_PX + MARGIN

    def along(k: int) -> list:
        t, x0, y0, x1, y1 = labels[k]
        span = min(t, 1 - t) if abs(x1 - x0) <= 1 else 0.5 / abs(x1 - x0)      # the words stay in their gap
        moves = [(f * span * (x1 - x0) * px_x, -f * span * (y1 - y0) * px_y) for f in (-0.5, 0.5, -0.8, 0.8)]
        return moves + [(dx, dy + d) for d in (line, -line) for dx, dy in [(0.0, 0.0)] + moves]
    spread(fig, list(labels), along)


# --------------------------------------------------------------------------------------- 2PC
IN_DOUBT = "in doubt: waits for the decision"
BLOCKED = "BLOCKED: coordinator down"


def waiting(lab, tx_id: str) -> dict:
    """participant -> what it waits for in ``tx_id``: a prepared participant that does not know the outcome is in
    doubt (it may not decide alone); it is blocked when the coordinator that would tell it is down."""
    word = IN_DOUBT if lab.coordinator.alive else BLOCKED
    return {n: word for n in lab.blocked(tx_id)}


def participants_table(lab, tx_id: str) -> go.Figure:
    """Two-phase commit: each participant's state for ``tx_id``, its locks and balances, and who is blocked."""
    states = lab.participant_states(tx_id)
    waits = waiting(lab, tx_id)
    locks, balances = lab.locks(), lab.balances()
    names = sorted(states)
    colour = {"READY": "#f0ad4e", "COMMIT": "#5cb85c", "ABORT": "#d9534f"}
    rows = [[lab.coordinator.name] + names,
            [f"{'up' if lab.coordinator.alive else 'DOWN'}: {lab.coordinator.state_of(tx_id) or '-'} "
             f"(log: {lab.outcome(tx_id) or 'no decision'})"]
            + [f"{states[n] or '-'}{' (down)' if not lab.participants[n].alive else ''}" for n in names],
            [""] + [waits.get(n, "") for n in names],
            [""] + [str(locks[n]) for n in names],
            [""] + [str(balances[n]) for n in names]]
    fill = [["white"] * (len(names) + 1),
            ["#eee"] + [colour.get(states[n] or "", "white") for n in names]] + [["white"] * (len(names) + 1)] * 3
    return go.Figure(go.Table(header=dict(values=["process", "state", "waiting", "locks", "data"],
                                          font=dict(size=TYPE_PX), height=30),
                              columnwidth=[80, 170, 270, 110, 110],     # (the waiting words on one line)
                              cells=dict(values=rows, fill_color=fill, align="left", font=dict(size=TYPE_PX),
                                         height=28)),
                     layout=dict(height=90 + 30 * len(names), margin=dict(l=10, r=10, t=10, b=10)))
