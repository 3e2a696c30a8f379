"""A fault rule of the network (``Network.add_rule``): the next ``count`` messages that match are dropped, delayed or
seen twice.  (Its own module: network.py is at the line limit.)"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class FaultRule:
    """Applies to the next ``count`` messages that match."""

    action: str            # drop | delay | duplicate
    api: str
    response: bool = False
    src: Optional[str] = None
    dst: Optional[str] = None
    ms: int = 0
    count: int = 1

    def matches(self, m: Any) -> bool:     # m: a network.Message (not imported: no import cycle)
        return (self.api in (m.api, "*") and self.response == m.is_response
                and (self.src is None or self.src == m.src)
                and (self.dst is None or self.dst == m.dst))

    def describe(self) -> str:
        what = f"{self.api} {'response' if self.response else 'request'}"
        if self.src:
            what += f" from {self.src}"
        if self.dst:
            what += f" to {self.dst}"
        extra = f" by {self.ms}ms" if self.action == "delay" else ""
        return f"{self.action} the next {what}{extra}"
