"""Keyboard control for the stepper: a small focusable box that turns key presses into messages.

Owns ``KeyCatcher``, an anywidget (its JavaScript ships inline: no CDN).  Click it, then
→ / n step, ← / p back, space run or pause, Home reset.  Keys are sent to Python as
``{"key": ...}`` messages and handled by the stepper; ``press(key)`` does the same from code.
"""
from __future__ import annotations

from typing import Callable, Optional

import anywidget
import traitlets

KEYS = ("ArrowRight", "ArrowLeft", " ", "Home", "End", "n", "p")


class KeyCatcher(anywidget.AnyWidget):
    _esm = """
    const KEYS = %s;
    function render({ model, el }) {
      const box = document.createElement("div");
      box.tabIndex = 0;
      box.className = "txl-keys";
      box.textContent = model.get("label");
      box.addEventListener("keydown", (e) => {
        if (!KEYS.includes(e.key)) return;
        e.preventDefault();
        e.stopPropagation();
        model.send({ key: e.key });
      });
      box.addEventListener("focus", () => box.classList.add("txl-keys-on"));
      box.addEventListener("blur", () => box.classList.remove("txl-keys-on"));
      el.appendChild(box);
    }
    export default { render };
    """ % (list(KEYS),)
    _css = """
    .txl-keys { display:inline-block; padding:3px 8px; border:1px dashed #adb5bd; border-radius:4px;
                font-size:12px; color:#495057; cursor:pointer; user-select:none; }
    .txl-keys-on { border:1px solid #1c7ed6; background:#e7f5ff; color:#1864ab; outline:none; }
    """
    label = traitlets.Unicode("⌨ click here for keys: → step · ← back · space run/pause · Home reset").tag(sync=True)

    def __init__(self, handler: Optional[Callable[[str], None]] = None, **kw) -> None:
        super().__init__(**kw)
        self._handler = handler
        self.on_msg(self._on_msg)

    def _on_msg(self, widget, content, buffers) -> None:
        key = content.get("key") if isinstance(content, dict) else None
        if key is not None:
            self.press(key)

    def press(self, key: str) -> None:
        if self._handler is not None:
            self._handler(key)
