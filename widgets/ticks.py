"""The key moments as clickable ticks under the stepper's slider.

Owns ``MomentTicks``, an anywidget (its JavaScript ships inline: no CDN): one labelled tick ``▲ id`` per key
moment, placed where the moment is on the slider (a tick that would cover the one before it goes one row down: ``place``); the
current one is highlighted.  A click sends ``{"moment": id}`` to Python, and the stepper jumps there;
``click(id)`` does the same from code.
"""
from __future__ import annotations

from typing import Callable, Optional

import anywidget
import traitlets


# Where the stepper's 520 px slider draws its track in JupyterLab (its label before it, its number after it): the
# ticks' row starts 94 px in and is as long as the track, so a tick stands under its step.
TRACK_PX = 344


class MomentTicks(anywidget.AnyWidget):
    _esm = """
    function render({ model, el }) {
      const row = document.createElement("div");
      row.className = "txl-ticks";
      el.appendChild(row);
      function draw() {
        row.replaceChildren();
        row.style.width = model.get("width");
        const current = model.get("current");
        model.get("ticks").forEach((t, i) => {
          const tick = document.createElement("span");
          tick.className = "txl-tick" + (t.id === current ? " txl-tick-on" : "");
          tick.style.left = t.left + "%";
          tick.style.top = (t.row || 0) * 21 + "px";
          tick.title = t.caption + " (click to go there)";
          tick.textContent = "▲ " + t.id;
          tick.dataset.moment = t.id;
          tick.addEventListener("click", () => model.send({ moment: t.id }));
          row.appendChild(tick);
        });
        const rows = Math.max(0, ...model.get("ticks").map((t) => t.row || 0)) + 1;
        row.style.height = rows * 21 + 2 + "px";
        row.style.display = model.get("ticks").length ? "block" : "none";
      }
      model.on("change:ticks", draw);
      model.on("change:current", draw);
      model.on("change:width", draw);
      draw();
    }
    export default { render };
    """
    _css = """
    .txl-ticks { position:relative; height:23px; margin-left:94px; font-size:14px; color:#1864ab; }
    .txl-tick { position:absolute; transform:translateX(-6px); white-space:nowrap; cursor:pointer;
                padding:0 3px; border-radius:3px; user-select:none; }
    .txl-tick:hover { background:#e7f5ff; text-decoration:underline; }
    .txl-tick-on, .txl-tick-on:hover { background:#1864ab; color:white; }
    """
    ticks = traitlets.List(traitlets.Dict()).tag(sync=True)       # {"id", "caption", "left": % of the slider}
    current = traitlets.Unicode("").tag(sync=True)                 # the key moment at the current step, if any
    width = traitlets.Unicode(f"{TRACK_PX}px").tag(sync=True)     # the slider's track, under which they stand

    def __init__(self, handler: Optional[Callable[[str], None]] = None, **kw) -> None:
        super().__init__(**kw)
        self._handler = handler
        self.on_msg(self._on_msg)

    def _on_msg(self, widget, content, buffers) -> None:
        moment = content.get("moment") if isinstance(content, dict) else None
        if moment is not None:
            self.click(moment)

    def click(self, moment: str) -> None:
        """What a click on the tick of ``moment`` does."""
        if self._handler is not None:
            self._handler(moment)

    @staticmethod
    def place(ticks: list, width_px: int = TRACK_PX, char_px: float = 8.5) -> list:
        """Give each tick ({"id", "left": %}) the first row in which its label does not cover another's."""
        ends: list = []
        for t in ticks:
            start = width_px * t["left"] / 100 - 6
            row = next((r for r, end in enumerate(ends) if end <= start), len(ends))
            if row == len(ends):
                ends.append(0.0)
            ends[row] = start + char_px * (len(t["id"]) + 2) + 8
            t["row"] = row
        return ticks

    @property
    def labels(self) -> list:
        """The words on the ticks, left to right."""
        return [f"▲ {t['id']}" for t in self.ticks]
