"""What the interactive views draw, read back as plain Python, for the chapters' check cells.

Owns the small questions a check cell asks of a ``Stepper`` and its views: where the log strip draws
a partition's LEO / HW / LSO and its consumers (``LogStrip``), which arrows the message diagram draws
for this step and which messages are on the wire (``SpaceTime``), what the coordinator view says about
a transactional.id (``CoordinatorView``).  A check then fails when the picture and the lab disagree.
Reads the figures only; ``clear_filter`` sets the stepper's filter dropdowns as a learner would.
"""
from __future__ import annotations

import re


def trace_named(fig, name: str):
    """The trace of a plotly figure whose legend name is ``name``."""
    return next(t for t in fig.data if t.name == name)


def drawn_line(strip, line: str, topic: str, partition: int):
    """The offset at which a log strip draws ``line`` ("LEO", "HW" or "LSO") on the row of the
    partition's current leader (the row marked ★)."""
    labels = list(strip.figure.layout.yaxis.ticktext)
    row = next(i for i, label in enumerate(labels) if label.startswith(f"{topic}-{partition} ·") and "★" in label)
    return strip.line_positions(line)[row]


def drawn_consumers(strip, isolation: str) -> dict:
    """{(consumer, partition): position} of the triangles a log strip draws for ``isolation`` consumers."""
    tr = trace_named(strip.figure, f"{isolation} consumer")
    out = {}
    for name, hover in zip(tr.text or (), tr.hovertext or ()):
        m = re.search(r"position (-?\d+) on (\S+?)<br>", hover)
        out[(name, m.group(2))] = int(m.group(1))
    return out


def clear_filter(stepper) -> None:
    """Set the stepper's Filter back to "any API, any process, any transactional.id" (the message
    diagram then draws every message again, as the checks expect)."""
    for dropdown in (stepper._f_api, stepper._f_node, stepper._f_tid):
        dropdown.value = ""


def arrows_now(stepper) -> list[tuple]:
    """(api, from, to) of the messages delivered at the stepper's current step (the purple arrows)."""
    return [(api, src, dst) for how, src, dst, api in stepper.messages.last_arrows.values() if how == "this step"]


def on_the_wire(stepper) -> list[tuple]:
    """(api, request or response, from, to) of the messages in flight now (the orange dots)."""
    return [(m.api, "response" if m.is_response else "request", m.src, m.dst) for m in stepper.in_flight()]


def coordinator_says(stepper, transactional_id: str) -> list[str]:
    """What the state-machine picture says about a transactional id (its dot's hover text, one line per fact)."""
    ids = trace_named(stepper.coordinators.figure, "transactional ids")
    for label, hover in zip(ids.text or (), ids.hovertext or ()):
        if label.split(" ")[0] == transactional_id:
            return re.sub(r"</?b>", "", hover).split("<br>")
    return []


def html_rows(table_html: str) -> list[list[str]]:
    """The rows of an HTML table (as the coordinator view's tables show them), header left out."""
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table_html, re.S)
    return [re.findall(r"<td[^>]*>(.*?)</td>", r, re.S) for r in rows if "<td" in r]
