"""Small table and picture helpers that the generators copy into the notebooks.

Each notebook gets the functions it uses, as source text in one (collapsed) cell, so that a
notebook runs on its own and a learner can read exactly how each picture is made.  They only
read the cluster (its trace, logs and partition state) and never change it.  Plain plotly and
pandas; the interactive views come from ``widgets/``.
"""
# --- begin: common ------------------------------------------------------------------------
import pandas as pd
import plotly.graph_objects as go

pd.set_option("display.max_colwidth", None)
pd.set_option("display.max_rows", 300)


def show(df, left=True):
    """Display a table with its text left-aligned and without the index column."""
    styler = df.style.hide(axis="index")
    if left:
        styler = styler.set_properties(**{"text-align": "left"})
        styler = styler.set_table_styles([{"selector": "th", "props": [("text-align", "left")]}])
    return styler


def narration(events):
    """A table of trace events: step, simulated time, where it happened, the API, and what happened."""
    rows = []
    for e in events:
        api = e.api + (" response" if e.is_response else "") if e.api else e.kind
        rows.append({"step": e.step, "t (ms)": e.time, "node": e.node, "api": api,
                     "what happened": e.narration})
    return pd.DataFrame(rows, columns=["step", "t (ms)", "node", "api", "what happened"])


def since(cluster, mark):
    """The foreground trace events recorded after ``mark`` (a ``len(cluster.trace)`` taken earlier)."""
    return [e for e in cluster.trace.events[mark:] if not e.background]


def batches_table(cluster, topic, partition=0, broker=None):
    """One row per record batch of a replica's log (the leader's by default), with its v2 header fields."""
    rows = []
    for b in cluster.log(topic, partition, broker).batches:
        span = f"{b.base_offset}" if b.base_offset == b.last_offset else f"{b.base_offset}..{b.last_offset}"
        seq = "-" if b.base_sequence < 0 else (
            f"{b.base_sequence}" if b.base_sequence == b.last_sequence else f"{b.base_sequence}..{b.last_sequence}")
        if b.is_control:
            content = f"{b.control_type.name} marker (coordinatorEpoch {b.coordinator_epoch})"
        else:
            content = ", ".join(r.value.decode() if r.value is not None else "null" for r in b.records)
        rows.append({"offsets": span, "producer_id": b.producer_id, "producer_epoch": b.producer_epoch,
                     "base..last sequence": seq, "isTransactional": b.is_transactional,
                     "isControl": b.is_control, "records": content})
    return pd.DataFrame(rows)
# --- end: common --------------------------------------------------------------------------


# --- begin: read --------------------------------------------------------------------------
from txnlab import Consumer, TopicPartition


def read(cluster, topic, partitions=(0,), isolation="read_committed", sort=True):
    """The values a new consumer with this isolation level reads from the start of ``partitions`` of
    ``topic`` (it stops after three empty polls in a row): sorted, or in the order read with sort=False."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "isolation.level": isolation, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    out, empty = [], 0
    while empty < 3:
        msg = c.poll(0.5)
        if msg is None:
            empty += 1
        elif msg.error() is None:
            out.append(msg.value().decode())
    c.close()
    return sorted(out) if sort else out
# --- end: read ----------------------------------------------------------------------------


# --- begin: strip -------------------------------------------------------------------------
STATUS = {  # status -> (colour, words for the legend)
    "plain": ("#4C78A8", "not transactional"),
    "committed": ("#54A24B", "transactional, committed"),
    "open": ("#F2B701", "transactional, still open"),
    "aborted": ("#BDBDBD", "transactional, aborted"),
    "COMMIT": ("#1B5E20", "COMMIT marker"),
    "ABORT": ("#B71C1C", "ABORT marker"),
}
MARKS = {"LEO": ("#222222", "solid"), "HW": ("#1F5FBF", "dash"), "LSO": ("#D9480F", "dot")}
MARK_WORDS = {"LEO": "LEO (log end offset)", "HW": "HW (high watermark)", "LSO": "LSO (last stable offset)"}


def offset_cells(cluster, topic, partition=0, broker=None):
    """One dict per offset of a replica's log: value, producer fields and the fate of its transaction."""
    cells, open_txn = [], {}
    for b in cluster.log(topic, partition, broker).batches:
        if b.is_control:
            fate = "committed" if b.control_type.name == "COMMIT" else "aborted"
            for cell in open_txn.pop(b.producer_id, []):
                cell["status"] = fate
            cells.append({"offset": b.base_offset, "label": b.control_type.name, "status": b.control_type.name,
                          "hover": f"{b.control_type.name} marker, pid {b.producer_id} epoch {b.producer_epoch}"})
            continue
        for i, r in enumerate(b.records):
            value = r.value.decode() if r.value is not None else "null"
            cell = {"offset": b.base_offset + i, "label": value, "status": "open" if b.is_transactional else "plain",
                    "hover": f"{value}<br>pid {b.producer_id} epoch {b.producer_epoch} "
                             f"seq {b.base_sequence + i if b.base_sequence >= 0 else '-'}"}
            if b.is_transactional:
                open_txn.setdefault(b.producer_id, []).append(cell)
            cells.append(cell)
    return cells


def log_strip(cluster, rows, title="", marks=("LEO", "HW", "LSO"), positions=None, short=None, width=1000):
    """The partition logs as strips of offset cells.

    ``rows``: (topic, partition) for the leader's replica or (topic, partition, broker) for one
    replica.  Cells are coloured by what the record is (see ``STATUS``); vertical marks show the
    LEO, HW and LSO (the LSO only on a leader).  ``positions``: {row index: [(offset, text), ...]}
    draws consumer positions under a row.  ``short``: a function shortening a record's label.
    """
    strips = []
    for topic, partition, *rest in rows:
        state = cluster.partition_state(topic, partition)
        leader = state["leader"]
        who = rest[0] if rest else (leader if leader >= 0 else next(iter(state["replicas"])))
        if rest:
            name = f"{topic}-{partition} · broker {who}" + (" (leader)" if who == leader else "")
        else:
            name = f"{topic}-{partition} · leader {leader}" if leader >= 0 else f"{topic}-{partition} · no leader"
        if not state["replicas"][who]["alive"]:
            name += " (down)"
        rep = state["replicas"][who]
        values = {"LEO": rep["leo"], "HW": rep["hw"], "LSO": state["lso"] if who == leader else None}
        strips.append((name, offset_cells(cluster, topic, partition, who), values))
    widest = max([1] + [v["LEO"] for _, _, v in strips])
    wide = widest <= 10                                  # room for whole words in the cells

    fig = go.Figure()
    by_status = {s: {"x": [], "y": [], "base": [], "text": [], "hover": []} for s in STATUS}
    for y, (name, cells, values) in enumerate(strips):
        for cell in cells:
            d = by_status[cell["status"]]
            label = cell["label"]
            if cell["status"] in ("COMMIT", "ABORT"):
                label = label if wide else label[0]
            elif short:
                label = short(label)
            d["x"].append(0.9); d["base"].append(cell["offset"] - 0.45); d["y"].append(y)
            d["text"].append(label); d["hover"].append(f"offset {cell['offset']}: {cell['hover']}")
        at = {}
        for mark in marks:
            if values.get(mark) is not None:
                at.setdefault(values[mark], []).append(mark)
        for k, (x, names) in enumerate(sorted(at.items())):
            for j, mark in enumerate(names):      # marks at the same offset: side by side, 5 px apart
                colour, dash = MARKS[mark]
                dx = 5 * (j - (len(names) - 1) / 2)
                fig.add_shape(type="line", xsizemode="pixel", xanchor=x - 0.5, x0=dx, x1=dx, y0=y - 0.42, y1=y + 0.42,
                              line=dict(color=colour, dash=dash, width=3))
            fig.add_annotation(x=x - 0.5, y=y - 0.42, text="=".join(names) + f" {x}", showarrow=False,
                               yanchor="bottom", yshift=2 + 15 * (k % 2), font=dict(size=11, color=MARKS[names[0]][0]),
                               bgcolor="rgba(255,255,255,0.8)")
    for y, marks_here in (positions or {}).items():
        for k, (offset, text) in enumerate(marks_here):
            fig.add_annotation(x=offset - 0.5, y=y + 0.3, ax=0, ay=24 + 20 * k, text=text, showarrow=True,
                               arrowhead=2, arrowcolor="#6A1B9A", font=dict(size=11, color="#6A1B9A"),
                               yanchor="top")
    for status, d in by_status.items():
        if not d["x"]:
            continue
        colour, words = STATUS[status]
        fig.add_trace(go.Bar(orientation="h", x=d["x"], y=d["y"], base=d["base"], width=0.56, name=words,
                             showlegend=True, marker=dict(color=colour, line=dict(color="white", width=1)),
                             text=d["text"], textposition="inside", insidetextanchor="middle", hovertext=d["hover"],
                             hoverinfo="text", textfont=dict(color="black" if status in ("open", "aborted") else "white")))
    for mark in marks:                              # legend entries for the vertical marks
        colour, dash = MARKS[mark]
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=MARK_WORDS[mark],
                                 line=dict(color=colour, dash=dash, width=3)))
    n = len(strips)
    fig.update_layout(title=title, barmode="overlay", width=width, height=190 + 95 * n + (40 if positions else 0),
                      plot_bgcolor="white", margin=dict(l=10, r=10, t=60, b=40 + (40 if positions else 0)),
                      legend=dict(orientation="v", yanchor="top", y=1.0, x=1.01, font=dict(size=11)),
                      uniformtext=dict(minsize=8, mode="hide"))
    fig.update_yaxes(tickvals=list(range(n)), ticktext=[s[0] for s in strips], showgrid=False,
                     range=[n - 0.45 + (0.8 if positions else 0), -0.95], zeroline=False)
    fig.update_xaxes(title="offset", range=[-0.7, widest + 0.7 + widest / 12], dtick=1 if widest <= 20 else 5,
                     showgrid=False, zeroline=False)
    return fig
# --- end: strip ---------------------------------------------------------------------------


# --- begin: flow --------------------------------------------------------------------------
def message_flow(cluster, mark, apis, lanes, title="", height=None):
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
    for m in msgs:
        y0 = row[m.sent_step]
        y1 = row[delivered[m.id]] if m.id in delivered else y0 + 0.6
        colour = "#757575" if m.is_response else "#0D47A1"
        if m.state == "dropped":
            colour = "#C62828"
        label = m.api + (" ✓" if m.is_response else "") + (" ✗ dropped" if m.state == "dropped" else "")
        if m.src == m.dst:          # a broker talking to itself (e.g. the coordinator leads the partition)
            xs = x[m.src]
            fig.add_annotation(x=xs + 0.03, y=y1, ax=xs + 0.22, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                               showarrow=True, arrowhead=2, arrowsize=1.2, arrowwidth=1.6, arrowcolor=colour, text="")
            fig.add_annotation(x=xs + 0.24, y=(y0 + y1) / 2, text=label + " (to itself)", showarrow=False,
                               xanchor="left", font=dict(size=10, color=colour), bgcolor="rgba(255,255,255,0.85)")
            continue
        fig.add_annotation(x=x[m.dst] if m.id in delivered else (x[m.src] + x[m.dst]) / 2, y=y1,
                           ax=x[m.src], ay=y0, xref="x", yref="y", axref="x", ayref="y",
                           showarrow=True, arrowhead=2, arrowsize=1.2, arrowwidth=1.6, arrowcolor=colour, text="")
        fig.add_annotation(x=(x[m.src] + x[m.dst]) / 2, y=(y0 + y1) / 2, text=label, showarrow=False,
                           font=dict(size=10, color=colour), bgcolor="rgba(255,255,255,0.85)")
    fig.update_layout(title=title, width=900, height=height or 120 + 26 * max(1, len(steps)),
                      plot_bgcolor="white", margin=dict(l=10, r=10, t=60, b=10), showlegend=False)
    fig.update_xaxes(tickvals=list(range(len(lanes))), ticktext=list(lanes), side="top", range=[-0.5, len(lanes) - 0.5],
                     showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False,
                     range=[len(steps) - 0.3, -0.7])
    return fig
# --- end: flow ----------------------------------------------------------------------------


# --- begin: views -------------------------------------------------------------------------
import re

import plotly.basewidget  # noqa: F401  the views' FigureWidget: loaded before any figure is built, it loads
                          # in seconds; loaded later (by the first view), it has taken 10-15 s here


def trace_named(fig, name):
    """The trace of a plotly figure whose legend name is ``name``."""
    return next(t for t in fig.data if t.name == name)


def drawn_line(strip, line, topic, partition):
    """The offset at which a log strip draws ``line`` ("LEO", "HW" or "LSO") on the row of the
    partition's current leader (the row marked ★)."""
    labels = list(strip.figure.layout.yaxis.ticktext)
    row = next(i for i, label in enumerate(labels) if label.startswith(f"{topic}-{partition} ·") and "★" in label)
    return strip.line_positions(line)[row]


def drawn_consumers(strip, isolation):
    """{(consumer, partition): position} of the triangles a log strip draws for ``isolation`` consumers."""
    tr = trace_named(strip.figure, f"{isolation} consumer")
    out = {}
    for name, hover in zip(tr.text or (), tr.hovertext or ()):
        m = re.search(r"position (-?\d+) on (\S+?)<br>", hover)
        out[(name, m.group(2))] = int(m.group(1))
    return out


def clear_filter(stepper):
    """Set the stepper's Filter back to "any API, any process, any transactional.id" (the message
    diagram then draws every message again, as the checks expect)."""
    for dropdown in (stepper._f_api, stepper._f_node, stepper._f_tid):
        dropdown.value = ""


def arrows_now(stepper):
    """(api, from, to) of the messages delivered at the stepper's current step (the purple arrows)."""
    return [(api, src, dst) for how, src, dst, api in stepper.messages.last_arrows.values() if how == "this step"]


def on_the_wire(stepper):
    """(api, request or response, from, to) of the messages in flight now (the orange dots)."""
    return [(m.api, "response" if m.is_response else "request", m.src, m.dst) for m in stepper.in_flight()]


def coordinator_says(stepper, transactional_id):
    """What the state-machine picture says about a transactional id (its dot's hover text, one line per fact)."""
    ids = trace_named(stepper.coordinators.figure, "transactional ids")
    for label, hover in zip(ids.text or (), ids.hovertext or ()):
        if label.split(" ")[0] == transactional_id:
            return re.sub(r"</?b>", "", hover).split("<br>")
    return []


def html_rows(table_html):
    """The rows of an HTML table (as the coordinator view's tables show them), header left out."""
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table_html, re.S)
    return [re.findall(r"<td[^>]*>(.*?)</td>", r, re.S) for r in rows if "<td" in r]
# --- end: views ---------------------------------------------------------------------------
