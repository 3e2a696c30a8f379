"""The stepper's views of the comparison labs: RocketMQ's half and op topics, two-phase commit's participants.

Owns ``FigureView`` (a plotly FigureWidget of a function of the lab, redrawn only when the picture
changed), ``HalfTopicView`` (``rocketmq_views.half_topic_figure`` for a ``RocketMQCluster`` and the
table of its transactions), ``TwoPhaseCommitView`` (what ``rocketmq_views.participants_table`` shows,
for the latest transaction, and every durable log: the coordinator's and each participant's) and
``lab_views(lab)``: the (title, view) tabs a stepper shows for a lab beyond the message diagram and
the trace.  Each view has ``widget`` and ``update(lab)``; each only reads the lab.
"""
from __future__ import annotations

import html
from typing import Callable, Optional

import ipywidgets as W
import plotly.graph_objects as go

from .coordinator_view import TABLE_CSS
from .figure_widget import FigureWidget
from .rocketmq_views import STATUS_COLOURS, half_topic_figure, waiting


class FigureView:
    """Shows ``draw(lab)``; ``update`` puts a new FigureWidget in its box when the picture changed.

    (A whole new widget rather than traces swapped in place: in the browser, removing and adding
    traces of one FigureWidget in a batch left stale titles and table headers behind.)"""

    def __init__(self, draw: Callable[[object], go.Figure]) -> None:
        self.draw = draw
        self.figure = FigureWidget()
        self.widget = W.Box([self.figure])
        self.updates = 0
        self._last = None

    def update(self, lab) -> bool:
        fig = self.draw(lab)
        key = fig.to_json()
        if key == self._last:
            return False
        self._last = key
        old, self.figure = self.figure, FigureWidget(fig)
        self.widget.children = (self.figure,)
        old.close()
        self.updates += 1
        return True


def _table(head: list, rows: list, fills: Optional[list] = None) -> str:
    """An HTML table (plotly's go.Table inside a FigureWidget loses every cell text with a space in it
    in JupyterLab, so the stepper's tables are HTML, like the coordinator view's)."""
    out = ["<table class='txl-t'><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for i, row in enumerate(rows):
        cells = []
        for j, v in enumerate(row):
            fill = fills[i][j] if fills and fills[i][j] else ""
            style = f" style='background:{fill}'" if fill else ""
            cells.append(f"<td{style}>{html.escape(str(v))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "".join(out) + "</table>"


class HalfTopicView:
    """RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC and the real topic, then one row per transaction."""

    def __init__(self) -> None:
        self.half = FigureView(half_topic_figure)
        self.transactions = W.HTML()
        self.widget = W.VBox([self.half.widget, self.transactions])

    @staticmethod
    def rows(lab) -> list:
        """One row per transaction id, as the table shows it."""
        return [[t["transaction_id"], t["keys"], t["status"], t["check_times"], t["half_offsets"], t["delivered"]]
                for t in lab.transactions()]

    def transactions_html(self, lab) -> str:
        rows = self.rows(lab)
        if not rows:
            return TABLE_CSS + "<div class='txl-status'>No transactional message yet.</div>"
        fills = [[None, None, STATUS_COLOURS.get(r[2]), None, None, None] for r in rows]
        return (TABLE_CSS + "<div class='txl-status'>One row per transaction id (UNIQ_KEY):</div>"
                + _table(["transactionId", "keys", "status", "checks", "half offsets", "delivered"], rows, fills))

    def update(self, lab) -> bool:
        changed = self.half.update(lab)
        text = self.transactions_html(lab)
        if text != self.transactions.value:
            self.transactions.value = text
            changed = True
        return changed


class TwoPhaseCommitView:
    """Each process's state for the latest transaction (coloured, who is in doubt or blocked, locks, data) and the
    durable logs that recovery reads (the coordinator's and every participant's)."""

    COLOURS = {"READY": "#f0ad4e", "COMMIT": "#5cb85c", "ABORT": "#d9534f"}

    def __init__(self) -> None:
        self.participants = W.HTML()
        self.logs = W.HTML()
        self.widget = W.VBox([self.participants, self.logs])

    @staticmethod
    def rows(lab) -> list:
        """[process, state, waiting, locks, data] for the latest transaction (empty before any)."""
        ids = lab.tx_ids()
        if not ids:
            return []
        tx = ids[-1]
        c = lab.coordinator
        states, waits = lab.participant_states(tx), waiting(lab, tx)
        locks, data = lab.locks(), lab.balances()
        out = [[c.name, f"{'up' if c.alive else 'DOWN'}: {c.state_of(tx) or '-'} "
                        f"(log: {lab.outcome(tx) or 'no decision'})", "", "", ""]]
        for n in sorted(states):
            down = "" if lab.participants[n].alive else " (down)"
            out.append([n, f"{states[n] or '-'}{down}", waits.get(n, ""), locks[n], data[n]])
        return out

    def participants_html(self, lab) -> str:
        ids = lab.tx_ids()
        if not ids:
            return TABLE_CSS + "<div class='txl-status'>No transaction has started yet.</div>"
        rows = self.rows(lab)
        fills = [[None, "#eee" if i == 0 else self.COLOURS.get(str(r[1]).split(" ")[0]), None, None, None]
                 for i, r in enumerate(rows)]
        return (TABLE_CSS + f"<div class='txl-status'>transaction <b>{html.escape(ids[-1])}</b> at "
                f"t={lab.clock}ms:</div>" + _table(["process", "state", "waiting", "locks", "data"], rows, fills))

    @staticmethod
    def logs_html(lab) -> str:
        nodes = [lab.coordinator, *lab.participants.values()]
        rows = []
        for n in nodes:
            lines = n.log.lines() or ["(empty)"]
            state = "up" if n.alive else "<b style='color:#c92a2a'>down</b>"
            rows.append(f"<tr><td><b>{html.escape(n.name)}</b> ({state})</td><td>"
                        + "<br>".join(html.escape(x) for x in lines) + "</td></tr>")
        return (TABLE_CSS + "<div class='txl-status'>Durable logs (they survive a crash; recovery reads them):"
                "</div><table class='txl-t'><tr><th>process</th><th>log records</th></tr>" + "".join(rows)
                + "</table>")

    def update(self, lab) -> bool:
        changed = False
        for w, text in ((self.participants, self.participants_html(lab)), (self.logs, self.logs_html(lab))):
            if text != w.value:
                w.value = text
                changed = True
        return changed


def lab_views(lab) -> list:
    """(tab title, view) for what this kind of lab has to show besides messages and the trace."""
    from txnlab.rocketmq import RocketMQCluster
    from txnlab.twopc import TwoPhaseCommitLab
    if isinstance(lab, RocketMQCluster):
        return [("Half and op topics", HalfTopicView())]
    if isinstance(lab, TwoPhaseCommitLab):
        return [("Participants", TwoPhaseCommitView())]
    return []
