"""The simulated network: every request and response is a visible message in flight.

Owns ``Message`` (id, source, destination, API name, payload, send and delivery
time), delivery, and the network faults: drop / delay / duplicate the next
matching message, and partitions between groups of nodes.  Random delay, when
configured, comes from the cluster's seeded RNG.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .trace import TraceEvent


class Message:
    __slots__ = ("id", "src", "dst", "api", "payload", "sent_at", "deliver_at", "is_response",
                 "correlation_id", "state", "background", "note", "event", "sent_step")

    def __init__(self, id, src, dst, api, payload, sent_at, deliver_at, is_response,
                 correlation_id, background, sent_step):
        self.id = id
        self.src = src
        self.dst = dst
        self.api = api
        self.payload = payload
        self.sent_at = sent_at
        self.deliver_at = deliver_at
        self.is_response = is_response
        self.correlation_id = correlation_id
        self.state = "in-flight"   # in-flight | delivered | dropped
        self.background = background
        self.note = ""
        self.event = None
        self.sent_step = sent_step

    @property
    def kind(self) -> str:
        return "response" if self.is_response else "request"

    def describe(self) -> str:
        d = getattr(self.payload, "describe", None)
        if not d:
            return ""
        try:
            return d()
        except Exception:  # noqa: BLE001 - a malformed request must still show up in the trace
            return "malformed: its fields cannot be read"

    def delivery_text(self) -> str:
        """The trace's line for this message's delivery."""
        desc = self.describe()
        verb = f"got the {self.api} response" if self.is_response else f"got {self.api}"
        return f"{self.dst} {verb} from {self.src}" + (f" ({desc})" if desc else "")

    def __repr__(self) -> str:
        return (f"Message(#{self.id} {self.api} {self.kind} {self.src}->{self.dst} "
                f"sent {self.sent_at}ms due {self.deliver_at}ms {self.state})")


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

    def matches(self, m: Message) -> bool:
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


class Network:
    def __init__(self, kernel, latency_ms: int = 1, jitter_ms: int = 0) -> None:
        self.kernel = kernel
        self.latency_ms = latency_ms
        self.jitter_ms = jitter_ms
        self.rules: list[FaultRule] = []
        self.cuts: set[tuple[str, str]] = set()
        self.messages: dict[int, Message] = {}       # every message ever sent (when keep_history)
        self.keep_history = True
        self._in_flight: dict[int, Message] = {}     # the messages on the wire now (always kept)
        self._next_id = 0

    # ---------------------------------------------------------------- faults
    def add_rule(self, rule: FaultRule) -> None:
        self.rules.append(rule)

    def partition(self, a: list[str], b: list[str]) -> None:
        for x in a:
            for y in b:
                self.cuts.add((x, y))
                self.cuts.add((y, x))

    def heal(self) -> None:
        self.cuts.clear()

    def is_cut(self, src: str, dst: str) -> bool:
        return (src, dst) in self.cuts

    # ------------------------------------------------------------------ send
    def send(self, src: str, dst: str, api: str, payload: Any, is_response: bool,
             correlation_id: int, background: bool = False) -> Message:
        k = self.kernel
        self._next_id += 1
        delay = self.latency_ms
        if self.jitter_ms:
            delay += k.rng.randint(0, self.jitter_ms)
        m = Message(self._next_id, src, dst, api, payload, k.now, k.now + delay, is_response,
                    correlation_id, background, k.step_count)
        if self.keep_history:
            self.messages[m.id] = m
        cur = k.current
        if cur is not None:
            cur.add_sent(m.id)
        action = None
        if self.rules:
            for rule in self.rules:
                if rule.matches(m):
                    action = rule
                    rule.count -= 1
                    if rule.count <= 0:
                        self.rules.remove(rule)
                    break
        if action is not None and action.action == "drop":
            m.state = "dropped"
            m.note = "dropped by an injected fault"
            k.narrate(f"the network dropped {api} {m.kind} #{m.id} ({src} -> {dst}) [injected fault]")
            return m
        if action is not None and action.action == "delay":
            m.deliver_at += action.ms
            m.note = f"delayed {action.ms}ms by an injected fault"
            k.narrate(f"{api} {m.kind} #{m.id} will be delayed by {action.ms}ms [injected fault]")
        m.event = k.schedule(m.deliver_at - k.now, "deliver", dst, api, msg=m, background=background)
        self._in_flight[m.id] = m
        if action is not None and action.action == "duplicate":
            self._next_id += 1
            d = Message(self._next_id, src, dst, api, payload, k.now, m.deliver_at + 1, is_response,
                        correlation_id, background, k.step_count)
            d.note = f"duplicate of #{m.id} [injected fault]"
            if self.keep_history:
                self.messages[d.id] = d
            if cur is not None:
                cur.add_sent(d.id)
            d.event = k.schedule(d.deliver_at - k.now, "deliver", dst, api, msg=d, background=background)
            self._in_flight[d.id] = d
            k.narrate(f"the network duplicated {api} {m.kind} #{m.id} as #{d.id} [injected fault]")
        return m

    def message(self, msg_id: int) -> Message:
        """A message by id: any one on the wire now, or any sent before when the history is kept."""
        m = self._in_flight.get(msg_id) or self.messages.get(msg_id)
        if m is None:
            raise KeyError(f"no message #{msg_id} in flight"
                           + ("" if self.keep_history else " (this network keeps no history)"))
        return m

    def in_flight(self) -> list[Message]:
        return sorted(self._in_flight.values(), key=lambda m: (m.deliver_at, m.id))

    def drop(self, m: Message, reason: str) -> None:
        """Drop a message that is already in flight (a fault applied to a chosen message)."""
        if m.state != "in-flight":
            raise ValueError(f"message #{m.id} is not in flight ({m.state})")
        self.kernel.cancel(m.event)
        m.state = "dropped"
        m.note = reason
        self._in_flight.pop(m.id, None)

    def delay(self, m: Message, ms: int) -> None:
        if m.state != "in-flight":
            raise ValueError(f"message #{m.id} is not in flight ({m.state})")
        k = self.kernel
        k.cancel(m.event)
        m.deliver_at += ms
        m.note = f"delayed {ms}ms"
        m.event = k.schedule(m.deliver_at - k.now, "deliver", m.dst, m.api, msg=m, background=m.background)

    def duplicate(self, m: Message) -> Message:
        """Deliver a copy of a message that is in flight now, 1ms after the original."""
        if m.state != "in-flight":
            raise ValueError(f"message #{m.id} is not in flight ({m.state})")
        k = self.kernel
        self._next_id += 1
        d = Message(self._next_id, m.src, m.dst, m.api, m.payload, m.sent_at, m.deliver_at + 1, m.is_response,
                    m.correlation_id, m.background, m.sent_step)
        d.note = f"duplicate of #{m.id} [injected fault]"
        if self.keep_history:
            self.messages[d.id] = d
        if k.current is not None:
            k.current.add_sent(d.id)
        d.event = k.schedule(max(0, d.deliver_at - k.now), "deliver", d.dst, d.api, msg=d, background=d.background)
        self._in_flight[d.id] = d
        return d

    def drop_all_for(self, node: str, reason: str) -> int:
        n = 0
        for m in list(self._in_flight.values()):
            if m.dst == node or m.src == node:
                self.drop(m, reason)
                n += 1
        return n

    # --------------------------------------------------------------- deliver
    def deliver(self, m: Message) -> TraceEvent:
        k = self.kernel
        self._in_flight.pop(m.id, None)
        dst = k.nodes.get(m.dst)
        if dst is None or not dst.alive:
            m.state = "dropped"
            m.note = f"{m.dst} is down"
            k.current = k.record("drop", m.dst, f"{m.api} {m.kind} #{m.id} from {m.src} lost: {m.dst} is down",
                                 api=m.api, src=m.src, dst=m.dst, msg_id=m.id, is_response=m.is_response,
                                 background=m.background)
            src = k.nodes.get(m.src)
            if not m.is_response and src is not None and src.alive:
                src.connection_refused(m)       # a dead process refuses connections at once
            return k.current
        if self.cuts and (m.src, m.dst) in self.cuts:
            m.state = "dropped"
            m.note = "network partition"
            k.current = k.record("drop", m.dst,
                                 f"{m.api} {m.kind} #{m.id} from {m.src} lost: network partition between {m.src} and {m.dst}",
                                 api=m.api, src=m.src, dst=m.dst, msg_id=m.id, is_response=m.is_response,
                                 background=m.background)
            return k.current
        m.state = "delivered"
        if k.trace.enabled:
            k.current = k.record_delivery(m)
        else:
            # nobody will read it: the narration of a run with the trace off is not built
            k.current = k.record("deliver", m.dst, "", m.api, m.src, m.dst, m.id, m.is_response, m.background)
        dst.on_message(m)
        return k.current
