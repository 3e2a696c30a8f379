"""The wire door's panel: which real-client connection holds which pending request (step mode).

Kafka answers each connection in request order, so of a connection's waiting requests only the first (the
head) can be answered next; the ones behind it wait for it.  ``door_html(door)`` draws the table from
``WireDoor.pending()`` (connection, client, broker, API, correlation id, where the request is in the simulated
network, "next" or "behind #n"); ``DoorPanel(door)`` is the widget (the table, Refresh, and Step: one step of
the lab, which delivers or answers one of the heads).  The stepper shows the table under its status line when
its cluster has an open wire door (``panel_for(cluster)``).  Reads state only, except Step.
"""
from __future__ import annotations

import html
from typing import Optional

import ipywidgets as W

CSS = ("<style>.txl-door{border-collapse:collapse;font-size:13px;margin:4px 0}"
       ".txl-door td,.txl-door th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
       ".txl-door .txl-head{background:#e8f5e9}.txl-door .txl-behind{color:#777}</style>")
STATES = {"reading": "being read from the socket", "in-flight": "on the way to the broker",
          "waiting": "at the broker, queued behind the request it serves", "delivered": "at the broker, being served",
          "held": "held by a network partition (TCP retransmits it after the heal)",
          "dropped": "lost in the network (the client will time out)"}


def door_of(cluster) -> Optional[object]:
    """The cluster's open wire door, or None."""
    door = getattr(cluster, "wire_door", None)
    return door if door is not None and door.open else None


def door_html(door) -> str:
    """The pending requests of ``door`` as an HTML table (a sentence when none waits)."""
    rows = door.pending()
    head = (f"<b>Wire door</b> ({html.escape(door.mode)} mode, bootstrap.servers "
            f"<code>{html.escape(door.bootstrap_servers)}</code>): ")
    if not rows:
        return CSS + f"<div class='txl-status'>{head}no real client waits for an answer.</div>"
    cells = []
    first_of: dict = {}
    for r in rows:
        first_of.setdefault(r["connection"], r["correlation_id"])
        where = "next: can be answered" if r["head"] else f"behind correlation id {first_of[r['connection']]}"
        cls = "txl-head" if r["head"] else "txl-behind"
        state = STATES.get(r["state"], r["state"])
        cells.append(f"<tr class='{cls}'><td>#{r['connection']}</td><td>{html.escape(str(r['client']))}</td>"
                     f"<td>{html.escape(str(r['broker']))}</td><td>{html.escape(r['api'])}</td>"
                     f"<td>{r['correlation_id']}</td><td>{html.escape(str(state))}</td><td>{where}</td></tr>")
    return (CSS + f"<div class='txl-status'>{head}{len(rows)} request(s) wait; each connection is answered in "
            f"order, so only its first request can be answered next.</div><table class='txl-door'><tr>"
            "<th>connection</th><th>client</th><th>broker</th><th>request</th><th>correlation id</th>"
            "<th>where</th><th>order</th></tr>" + "".join(cells) + "</table>")


def panel_for(cluster) -> str:
    """The table for the stepper's status line: '' unless the cluster has an open wire door in step mode."""
    door = door_of(cluster)
    if door is None or door.mode != "step":
        return ""
    return door_html(door)


class DoorPanel:
    """``DoorPanel(door).widget``: the pending requests of a wire door, with Refresh and Step."""

    def __init__(self, door) -> None:
        self.door = door
        self.html = W.HTML()
        self.refresh_button = W.Button(description="Refresh", icon="refresh")
        self.step_button = W.Button(description="Step", icon="step-forward",
                                    tooltip="one step of the lab: delivers or answers a waiting request")
        self.refresh_button.on_click(lambda _: self.update())
        self.step_button.on_click(lambda _: self.step())
        self.widget = W.VBox([W.HBox([self.step_button, self.refresh_button]), self.html])
        self.update()

    def update(self) -> None:
        self.html.value = door_html(self.door)
        self.step_button.disabled = not self.door.open

    def step(self) -> None:
        """One step of the lab (the kernel's next event), then redraw."""
        self.door.cluster.step()
        self.update()

    def _repr_mimebundle_(self, **kw):
        return self.widget._repr_mimebundle_(**kw)
