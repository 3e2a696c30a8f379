"""Request timeouts: one per request a node sends, almost all cancelled by the answer a few milliseconds later.

A request's timeout is not an event until it is due.  ``Node.send_request`` puts an int in a lane of its node
(one lane per delay): ``(time << SEQ_BITS | seq) << CID_BITS | correlation id``, the event's place in the
kernel's order and the request it times out.  A lane is in (time, seq) order (the clock never goes back), and
only its head is in the kernel's heap, under its key, with the lane as the queued object.  The answer cancels
the timeout by what the node does anyway, taking the request out of its ``_pending``: an entry whose request is
no longer pending is dead, and is dropped when it reaches the head.  When a live entry reaches the head, it
leaves the lane as a real ``Event`` (``RequestTimeouts.leave``), which runs, or is held for a paused node, or
waits in the heap, as any timer does -- the events run in exactly the order they did when every request timeout
was an ``Event`` in a lane of the kernel.

Why: an ``Event`` per request cost its construction and a bound method (~90 opcodes of the ~115 a request's
timeout cost), and a cancelled one stayed in its 30-second lane until its time: ~1,500 transactions' worth of
dead events, each walked by every collection of the garbage collector's older generations.  An int is neither.
"""
from __future__ import annotations

from collections import deque
from heapq import heappush
from typing import Any, Iterator

from .kernel import Event
from .network import SEQ_BITS

CID_BITS = 40       # correlation ids below 2**40 (a node would send a request every microsecond for 12 days)
CID_MASK = (1 << CID_BITS) - 1
SEQ_MASK = (1 << SEQ_BITS) - 1
NAME = "request timeout (%s #%d)"       # (formatted when first read: see kernel.Event)


class RequestTimeouts(deque):
    """The pending request timeouts of ``node`` that wait ``delay`` ms, as ints (see the module).

    Queued in the kernel's heap it stands for the event of its head: ``lane`` (not None) sends it through
    ``Kernel._left_lane`` when its key leaves the heap, ``cancelled`` says the head's request was answered."""

    __slots__ = ("node", "delay")
    lane = True

    def __init__(self, node: Any, delay: int) -> None:
        super().__init__()
        self.node = node
        self.delay = delay

    @staticmethod
    def new(node: Any, delay: int) -> "RequestTimeouts":
        """The lane of ``node``'s request timeouts of ``delay`` ms, made now (and known to its kernel)."""
        lane = RequestTimeouts(node, delay)
        node.kernel._request_lanes.setdefault(id(node), {})[delay] = lane
        return lane

    @property
    def cancelled(self) -> bool:
        return (self[0] & CID_MASK) not in self.node._pending

    def leave(self, kernel) -> Any:
        """The head's key left the heap: the head's event if its request still waits (linked to the request, so
        that the answer cancels it), else None; the next live entry's key takes the head's place in the heap."""
        e = self.popleft()
        pending = self.node._pending
        while self and (self[0] & CID_MASK) not in pending:
            self.popleft()
        if self:
            key = self[0] >> CID_BITS
            heappush(kernel._queue, key)
            kernel._queued[key] = self
        p = pending.get(e & CID_MASK)
        if p is None:
            return None
        ev = p._timer = self.event(e, p)
        return ev

    def event(self, e: int, p: Any) -> Event:
        """The event of entry ``e`` (of the pending request ``p``), as ``Kernel.schedule_timeout`` would have
        made it."""
        node = self.node
        key = e >> CID_BITS
        return Event(key >> SEQ_BITS, key & SEQ_MASK, "timer", node.name, (NAME, p.api, p.msg.id), node._on_timeout,
                     background=True, incarnation=node.incarnation, arg=e & CID_MASK)

    def views(self) -> Iterator[Event]:
        """The events of the live entries (the head's too), for those who look at the queue (a dead entry is
        skipped: an event per entry cost a crash in a sweep's seed ~1 % of its instructions)."""
        pending = self.node._pending
        for e in self:
            p = pending.get(e & CID_MASK)
            if p is not None:
                yield self.event(e, p)

    def cancel_all(self) -> None:
        """Cancel every timeout of the lane (``Kernel.cancel_timers_of``): the head's key stays in the heap,
        so the head stays, dead (correlation id 0 is never a request's)."""
        if self:
            head = self[0]
            self.clear()
            self.append(head >> CID_BITS << CID_BITS)
