"""The trace: every step of the simulation, in order, with a one-line narration.

Owns ``TraceEvent`` (one scheduler step, or a note such as a client call) and
``Trace`` (the ordered list).  ``str(event)`` is a stable text form with no
memory addresses, so two runs compare as text.  Pictures, narration and
checkers read the trace; they never reach into the engine.
"""
from __future__ import annotations

import json
from operator import attrgetter
from typing import Any, Iterator, Optional


class TraceEvent:
    """One entry of the trace.

    kind: ``deliver`` (a message reached its destination), ``timer``, ``fault``,
    ``drop`` (a message was lost), ``call`` (a client API call, not a step) or
    ``note``.  ``details`` holds extra lines added by the handlers during the step
    (what was appended, which rule decided).  ``sent`` lists ids of messages sent
    while handling this step, so a space-time diagram can draw the arrows.

    ``Network.deliver`` builds a delivery's entry with ``object.__new__`` and sets every field itself (once per
    message, where the class call costs an argument tuple and a slot dispatch): a new field goes there too.
    """

    __slots__ = ("step", "time", "kind", "node", "_text", "api", "src", "dst", "msg_id", "is_response",
                 "background", "_details", "_sent", "_attrs", "_message")

    def __init__(self, step: int, time: int, kind: str, node: str, text: str, api: str = "", src: str = "",
                 dst: str = "", msg_id: int = -1, is_response: bool = False, background: bool = False,
                 details: Optional[list] = None, sent: Optional[list] = None, attrs: Optional[dict] = None):
        self.step = step
        self.time = time
        self.kind = kind
        self.node = node
        self._text = text
        self._message: Any = None      # a delivery: its message (its line is written from it when first read)
        self.api = api
        self.src = src
        self.dst = dst
        self.msg_id = msg_id
        self.is_response = is_response
        self.background = background
        # most steps add no detail lines or one and many send nothing: a list is made for a second line (one line is
        # kept as itself: a list per step is an object the garbage collector walks for as long as the trace lives)
        self._details = details
        self._sent = sent
        self._attrs = attrs

    @staticmethod
    def delivery(step: int, time: int, message) -> "TraceEvent":
        """The entry of a delivered message (a ``DeliveryEvent``: ``Network.deliver`` builds it so)."""
        ev = object.__new__(DeliveryEvent)
        ev.step = step
        ev.time = time
        ev.background = message.background
        ev._details = ev._sent = ev._attrs = None
        ev._text = None
        ev._message = message
        return ev

    @property
    def details(self) -> list:
        """Lines the handlers added to this step (which rule decided, what was appended)."""
        if self._details is None:
            self._details = []
        return self._written_details()

    def _written_details(self) -> list:
        """``_details``, each line written now if it was kept as ``(template, value, ...)`` (``Kernel.narrate_f``:
        a line is formatted only when someone reads it)."""
        d = self._details
        if d is not None and d.__class__ is not list:
            d = self._details = [d]         # one line, kept as itself (see add_detail)
        if d:
            for i, line in enumerate(d):
                if line.__class__ is not str:
                    d[i] = line[0] % line[1:]
        return d  # type: ignore[return-value]

    def add_detail(self, text: str) -> None:
        d = self._details
        if d is None:
            self._details = text
        elif d.__class__ is list:
            d.append(text)
        else:
            self._details = [d, text]

    @property
    def sent(self) -> list:
        """Ids of the messages sent while handling this step."""
        s = self._sent
        if s is None:
            s = self._sent = []
        elif s.__class__ is int:        # one message sent: kept as its id until read (see add_sent)
            s = self._sent = [s]
        return s

    def add_sent(self, msg_id: int) -> None:
        """The step sent message ``msg_id``.  Most steps send one: its id is kept as is, and a list is made for a
        second one or when ``sent`` is read (a list per step cost ~0.3 % of a transaction's instructions)."""
        s = self._sent
        if s is None:
            self._sent = msg_id
        elif s.__class__ is int:
            self._sent = [s, msg_id]
        else:
            s.append(msg_id)

    @property
    def attrs(self) -> dict:
        if self._attrs is None:
            self._attrs = {}
        return self._attrs

    @property
    def text(self) -> str:
        return self._text

    def __eq__(self, other) -> bool:
        if not isinstance(other, TraceEvent):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None

    def __repr__(self) -> str:
        return f"TraceEvent({str(self)!r})"

    @property
    def narration(self) -> str:
        if not self._details:
            return self.text
        return self.text + "; " + "; ".join(self._written_details())

    def __str__(self) -> str:
        head = f"#{self.step} t={self.time}ms {self.kind}"
        if self.api:
            head += f" {self.api}{' response' if self.is_response else ''}"
        return f"{head} [{self.node}] {self.narration}"

    def to_dict(self) -> dict:
        return {
            "step": self.step, "time": self.time, "kind": self.kind, "node": self.node,
            "text": self.text, "api": self.api, "src": self.src, "dst": self.dst,
            "msg_id": self.msg_id, "is_response": self.is_response,
            "background": self.background, "details": list(self._written_details() or ()),
            "sent": list(self.sent), "attrs": dict(self._attrs or {}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "TraceEvent":
        return cls(**d)


def _from_message(field: str, doc: str) -> property:
    return property(attrgetter("_message." + field), doc=doc)


class DeliveryEvent(TraceEvent):
    """The entry of a delivered message, one per message (``Network.deliver`` builds it field by field, as
    TraceEvent says).  What it shares with its message -- API, source, destination, id, direction -- is read
    from the message instead of copied into six fields of every entry (~1.5 % of a transaction's
    instructions); ``background`` stays its own (a handler may make its step part of the story).  Its line
    ("broker-1 got Produce from producer-1 (...)") is written only when someone reads it: most steps of a long
    run are never read one by one."""

    __slots__ = ()

    kind = "deliver"
    node = _from_message("dst", "the process that got the message")
    api = _from_message("api", "the message's API")
    src = _from_message("src", "who sent the message")
    dst = _from_message("dst", "who got the message")
    msg_id = _from_message("id", "the message's id")
    is_response = _from_message("is_response", "a response (else a request)")

    @property
    def text(self) -> str:
        t = self._text
        if t is None:
            t = self._text = self._message.delivery_text()
        return t


class TraceWindow:
    """The events of a bounded trace: the last ``limit`` of them (up to a quarter more), read by the positions
    they had in the whole run.  ``len()`` counts every event ever appended; ``window[i]`` is the event at
    position ``i`` (an IndexError that says so for a discarded one); a slice gives what is kept of it;
    iterating goes over what is kept.  ``first`` is the position of the oldest kept event."""

    __slots__ = ("_items", "first", "limit", "_slack")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a bounded trace keeps at least 1 step, not {limit}")
        self._items: list[TraceEvent] = []
        self.first = 0
        self.limit = limit
        self._slack = max(1, limit // 4)      # discard in chunks: one list shift per limit/4 appends

    def append(self, event: TraceEvent) -> None:
        items = self._items
        items.append(event)
        if len(items) > self.limit + self._slack:
            cut = len(items) - self.limit
            del items[:cut]
            self.first += cut

    def __len__(self) -> int:
        return self.first + len(self._items)

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self._items)

    def __getitem__(self, i):
        n = self.first + len(self._items)
        if isinstance(i, slice):
            start, stop, stride = i.indices(n)
            first = self.first
            if stride == 1:
                return self._items[max(start, first) - first:max(stop, first) - first]
            return [self._items[j - first] for j in range(start, stop, stride) if j >= first]
        if i < 0:
            i += n
        if i < self.first:
            if i < 0:
                raise IndexError("trace position out of range")
            raise IndexError(f"trace position {i} was discarded: this trace keeps the last {self.limit} steps "
                             f"(the oldest kept is position {self.first}, step {self._items[0].step})")
        return self._items[i - self.first]


class Trace:
    """The ordered list of trace events of one cluster.

    ``limit`` (None: keep everything) bounds its memory for long runs: only the last ``limit`` events are kept
    (a ring), still read by their positions in the whole run (``TraceWindow``); step numbers stay absolute.
    ``first_position`` is the position of the oldest kept event (0 when nothing was discarded)."""

    def __init__(self, limit: Optional[int] = None) -> None:
        self.events = [] if limit is None else TraceWindow(limit)
        self.enabled = True

    @property
    def limit(self) -> Optional[int]:
        return None if isinstance(self.events, list) else self.events.limit

    def set_limit(self, limit: Optional[int]) -> None:
        """Bound the trace to the last ``limit`` events (None: unbounded again, from what is kept now)."""
        kept = list(self.events)
        first = self.first_position
        if limit is None:
            if first:
                raise ValueError("this trace already discarded its oldest steps: it cannot be unbounded again")
            self.events = kept
            return
        w = TraceWindow(limit)
        w.first = first
        for e in kept:
            w.append(e)
        self.events = w

    @property
    def first_position(self) -> int:
        return 0 if isinstance(self.events, list) else self.events.first

    def append(self, event: TraceEvent) -> TraceEvent:
        if self.enabled:
            self.events.append(event)
        return event

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def __getitem__(self, i):
        return self.events[i]

    def text(self, include_background: bool = True) -> str:
        return "\n".join(str(e) for e in self.events if include_background or not e.background)

    def __str__(self) -> str:
        return self.text()

    def filter(self, api: str | None = None, node: str | None = None, kind: str | None = None,
               contains: str | None = None, include_background: bool = False) -> list[TraceEvent]:
        out = []
        for e in self.events:
            if e.background and not include_background:
                continue
            if api and e.api != api:
                continue
            if node and node not in (e.node, e.src, e.dst):
                continue
            if kind and e.kind != kind:
                continue
            if contains and contains not in e.narration:
                continue
            out.append(e)
        return out

    def tail(self, n: int = 20, include_background: bool = False) -> str:
        evs = [e for e in self.events if include_background or not e.background]
        return "\n".join(str(e) for e in evs[-n:])

    def to_jsonl(self) -> str:
        return "\n".join(json.dumps(e.to_dict(), sort_keys=True) for e in self.events)

    @classmethod
    def from_jsonl(cls, text: str) -> "Trace":
        t = cls()
        for line in text.splitlines():
            if line.strip():
                t.events.append(TraceEvent.from_dict(json.loads(line)))
        return t
