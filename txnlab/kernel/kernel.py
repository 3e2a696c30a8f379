"""The deterministic kernel: simulated clock, one seeded RNG, the event queue.

Owns time and order.  ``step()`` takes exactly one event (deliver one message,
fire one timer, apply one fault), lets the receiving node handle it to
completion, and records one ``TraceEvent``.  Nothing here reads the wall clock
or the global ``random`` module: same seed, same calls, same faults -> the same
trace, byte for byte.
"""
from __future__ import annotations

import heapq
from collections import deque
from itertools import islice
from random import Random
from typing import Any, Callable, Optional, Protocol

from .._mypyc import new as _new    # object.__new__ (compiled by mypyc: the class call)
from .gc_pacing import GC_YOUNG_THRESHOLD, collecting_seldom  # noqa: F401  (GC_YOUNG_THRESHOLD: imported from here)
from .network import SEQ_BITS as _SEQ_BITS
from .network import Message, Network
from .stuck import NothingCanArrive, SimulationStuck
from .trace import Trace, TraceEvent

_new_entry = object.__new__     # trace.py is never compiled: its entries are always made this way


class Process(Protocol):
    """What the kernel needs of a node (``node.Node`` is the one implementation; node.py imports this module)."""

    name: str
    alive: bool
    incarnation: int
    paused_until: int


class Event:
    """A scheduled event: a message delivery or a timer (faults are applied at once).

    The kernel's schedule functions build events with ``object.__new__`` and set every field themselves:
    calling a class with a Python ``__init__`` costs CPython 3.11 an argument tuple and a slot dispatch, and
    the kernel makes an event for every message and timer.  A new field goes into all of them.

    ``name`` is what the trace calls a timer.  A request timeout's name ("request timeout (Fetch #812)") is
    almost never read -- the answer comes first and cancels it -- so ``Kernel.schedule_timeout`` keeps it
    unformatted, ``(template, value, ...)``, and it is written (``template % values``) when first read:
    formatting a number into a string for each request cost ~0.8 % of a transaction."""

    __slots__ = ("time", "seq", "kind", "node", "_name", "fn", "msg", "background",
                 "cancelled", "incarnation", "arg", "lane")

    def __init__(self, time=0, seq=0, kind="", node="", name="", fn=None, msg=None, background=False,
                 incarnation=0, arg=None):
        self.time = time
        self.seq = seq
        self.kind = kind
        self.node = node
        self._name: Any = name  # a str, or (template, value, ...) until first read (see the class)
        self.fn = fn
        self.msg = msg
        self.background = background
        self.cancelled = False
        self.incarnation = incarnation
        self.arg = arg          # a timer runs fn(arg) when given (no closure per timer), else fn()
        self.lane = None        # the lane of a timeout (Kernel.schedule_timeout), while it waits in it

    @property
    def name(self) -> str:
        n = self._name
        if n.__class__ is not str:
            n = self._name = n[0] % n[1:]
        return n

    def __lt__(self, other: "Event") -> bool:
        return (self.time, self.seq) < (other.time, other.seq)


def _order(ev: Event) -> tuple:
    return (ev.time, ev.seq)


def _delivery_of(m: Message) -> Event:
    """The event that delivers ``m``, a message queued itself (see network.Message): as the kernel would have
    made it, for those who look at the queue (pending_events, choices, peek_event) and for a delivery held for
    a paused receiver."""
    return Event(m.deliver_at, m.seq, "deliver", m.dst, m.api, msg=m, background=m.background)


# What a delivery taken back (Kernel.cancel_delivery) leaves in the queue under its message's key: an event
# already cancelled, skipped like any other.
_TAKEN_BACK = Event(kind="deliver", background=True)
_TAKEN_BACK.cancelled = True

_NO_DEADLINE = 1 << 62   # later than any time a run reaches (ms): _run_until's bound for a message without a deadline
QUIET_MS = 3_600_000     # an hour with only background events: longer than every timeout a run can have pending


class Kernel:
    """Clock + RNG + queue + trace.  One per cluster."""

    def __init__(self, seed: int = 0, latency_ms: int = 1, jitter_ms: int = 0) -> None:
        self.seed = seed
        self.now = 0
        self.rng = Random(seed)
        self.step_count = 0
        self.trace = Trace()
        self.nodes: dict[str, Process] = {}
        # the nodes the lab itself created as servers (brokers, the controller): a node's role on the network
        # is this record, never its name or anything a client's config says
        self.servers: dict[str, Process] = {}
        # The heap holds one int per event, (time << _SEQ_BITS) | seq: ints compare in C, one comparison each
        # (no tuple to build and compare item by item, no Event.__lt__); ``_queued`` maps it to its event, or
        # to the message itself for most deliveries (see network.Message).
        self._queue: list[int] = []
        self._queued: dict[int, Any] = {}
        # Request timeouts are almost always cancelled (the answer comes first).  They wait in lanes, one per
        # delay: a lane is in (time, seq) order because the clock never goes back, and only its head is in the
        # heap.  A cancelled timeout is dropped from its lane when it reaches the head -- the heap never sees
        # it -- and the events run in exactly the order one heap would run them.  Requests' own timeouts wait
        # in lanes of their nodes, as ints (timeouts.py): ``_request_lanes``, id(node) -> delay -> lane.
        self._lanes: dict[int, deque] = {}
        self._request_lanes: dict[int, dict[int, Any]] = {}
        self._seq = 0
        self._foreground = 0
        self._holds: set = set()
        self.current: Optional[TraceEvent] = None
        # Any: a front door's private kernel puts a forwarding network in its place (frontdoor/remote.py)
        self.network: Any = Network(self, latency_ms=latency_ms, jitter_ms=jitter_ms)
        self.observers: list[Callable[[TraceEvent], None]] = []
        # A stepper may install a gate: blocking client calls then wait for Step
        # clicks instead of driving the scheduler themselves.
        self.driver: Optional[Callable[[Callable[[], bool], Optional[int]], bool]] = None

    # ----------------------------------------------------------------- nodes
    def register(self, node: Process) -> None:
        if node.name in self.nodes:
            raise ValueError(f"a node named {node.name!r} already exists")
        self.nodes[node.name] = node

    def add_server(self, node: Process) -> None:
        """The lab made ``node`` a server (a broker, the controller): only the lab calls this."""
        self.servers[node.name] = node

    def is_server(self, name: str) -> bool:
        """Is the node now called ``name`` one the lab created as a server (the very object)?"""
        node = self.servers.get(name)
        return node is not None and self.nodes.get(name) is node

    # ------------------------------------------------------------- scheduling
    def schedule(self, delay: int, kind: str, node: str, name: Any, fn=None, msg=None,
                 background: bool = False, incarnation: int = 0, arg=None) -> Event:
        self._seq += 1
        # whole milliseconds: int() only for another type (calling the class int costs ~600 instructions)
        t = self.now + (delay if delay.__class__ is int else int(delay)) if delay > 0 else self.now
        ev: Event = _new(Event)      # Event(...) without the class call (see Event): the same fields
        ev.time = t
        ev.seq = self._seq
        ev.kind = kind
        ev.node = node
        ev._name = name
        ev.fn = fn
        ev.msg = msg
        ev.background = background
        ev.cancelled = False
        ev.incarnation = incarnation
        ev.arg = arg
        ev.lane = None
        key = (t << _SEQ_BITS) | self._seq
        heapq.heappush(self._queue, key)
        self._queued[key] = ev
        if not background:
            self._foreground += 1
        return ev

    def schedule_delivery(self, m) -> Event:
        """The delivery of message ``m`` at ``m.deliver_at`` (``schedule`` for the network's one caller that
        runs for every message)."""
        seq = self._seq = self._seq + 1
        now = self.now
        t = m.deliver_at
        if t <= now:
            t = now
        elif t.__class__ is not int:        # as schedule(): whole milliseconds
            t = now + int(t - now)
        ev: Event = _new(Event)      # Event(t, seq, "deliver", m.dst, m.api, msg=m, background=m.background)
        ev.time = t
        ev.seq = seq
        ev.kind = "deliver"
        ev.node = m.dst
        ev._name = m.api
        ev.fn = ev.arg = ev.lane = None
        ev.msg = m
        ev.background = background = m.background
        ev.cancelled = False
        ev.incarnation = 0
        key = (t << _SEQ_BITS) | seq
        heapq.heappush(self._queue, key)
        self._queued[key] = ev
        if not background:
            self._foreground += 1
        return ev

    def schedule_timeout(self, delay: int, node: str, name: Any, fn, arg=None, incarnation: int = 0) -> Event:
        """A background timer that will most likely be cancelled (a request timeout): same order as
        ``schedule``, cheaper to cancel.  ``name``: a str, or ``(template, value, ...)``, formatted only if
        someone reads it (see Event)."""
        seq = self._seq = self._seq + 1
        d = (delay if delay.__class__ is int else int(delay)) if delay > 0 else 0    # (as schedule())
        lane = self._lanes.get(d)
        if lane is None:
            lane = self._lanes[d] = deque()
        ev: Event = _new(Event)      # Event(now + d, seq, "timer", node, name, fn, background=True, ...)
        ev.time = self.now + d
        ev.seq = seq
        ev.kind = "timer"
        ev.node = node
        ev._name = name
        ev.fn = fn
        ev.msg = None
        ev.background = True
        ev.cancelled = False
        ev.incarnation = incarnation
        ev.arg = arg
        ev.lane = lane
        if not lane:        # its head: in the heap
            self._push(ev)
        lane.append(ev)
        return ev

    def _left_lane(self, ev: Any) -> Optional[Event]:
        """``ev``, the head of its lane, left the heap: the next live timeout of the lane takes its place.
        Returns the event to run: ``ev``; for a lane of request timeouts (timeouts.py), its head's event, or None
        when the head's request was answered."""
        if ev.__class__ is not Event:
            return ev.leave(self)
        lane = ev.lane
        ev.lane = None
        lane.popleft()
        while lane and lane[0].cancelled:
            lane.popleft().lane = None
        if lane:
            self._push(lane[0])
        return ev

    def _push(self, ev: Event) -> None:
        key = (ev.time << _SEQ_BITS) | ev.seq
        heapq.heappush(self._queue, key)
        self._queued[key] = ev

    def _all_queued(self, requests: bool = True):
        """Every queued event (cancelled ones too, but of the request timeouts only those still waited for, and
        none without ``requests``), in no particular order; a message queued itself as the event that delivers
        it."""
        for ev in self._queued.values():
            if ev.__class__ is Message:
                yield _delivery_of(ev)
            elif ev.__class__ is Event:         # (not a lane of request timeouts: its entries come below)
                yield ev
        for lane in self._lanes.values():
            yield from islice(lane, 1, None)     # a lane's head is in the heap
        if requests:
            for lanes in self._request_lanes.values():
                for rlane in lanes.values():
                    yield from rlane.views()

    def cancel(self, ev: Optional[Event]) -> None:
        if ev is not None and not ev.cancelled:
            ev.cancelled = True
            # it will never run: let go of what it would have run (a closure holding the object that holds
            # this event is a reference cycle only the garbage collector could free)
            ev.fn = ev.arg = None
            if not ev.background:
                self._foreground -= 1

    def revive(self, ev: Optional[Event], fn, arg=None) -> bool:
        """Undo ``cancel(ev)`` of a timer whose time has not come: it runs at its time after all, in its place in
        the order, with ``fn(arg)``.  For a timer armed and cancelled again and again for the same instant
        (librdkafka's message timeout scan, armed while a record is queued): no new event each time, and no
        cancelled one left queued each time.  False (nothing done) unless ``ev`` is such a timer."""
        if ev is None or not ev.cancelled or ev.time <= self.now or ev.lane is not None or ev.kind != "timer":
            return False
        ev.cancelled = False
        ev.fn = fn
        ev.arg = arg
        if not ev.background:
            self._foreground += 1
        return True

    def cancel_delivery(self, m: Message) -> None:
        """Take back the delivery of message ``m`` (its connection closed; a fault drops or re-times it)."""
        ev = m.event
        if ev is not None:
            self.cancel(ev)
            m.event = None
        elif m.seq:
            key = (m.deliver_at << _SEQ_BITS) | m.seq
            if self._queued.get(key) is m:
                self._queued[key] = _TAKEN_BACK
                if not m.background:
                    self._foreground -= 1

    def cancel_timers_of(self, node: str) -> None:
        for ev in self._all_queued(requests=False):     # (the request timeouts: cancel_all below)
            if ev.node == node and ev.kind == "timer":
                self.cancel(ev)
        for lanes in self._request_lanes.values():
            for rlane in lanes.values():
                if rlane.node.name == node:
                    rlane.cancel_all()

    def pending_events(self) -> list[Event]:
        return sorted((e for e in self._all_queued() if not e.cancelled), key=_order)

    @property
    def idle(self) -> bool:
        """True when only background work (heartbeats, parked fetches, reapers) is left
        and no node holds outstanding work (e.g. a leader waiting for followers to catch up)."""
        return self._foreground <= 0 and not self._holds

    def hold(self, key: tuple) -> None:
        """A node has work in progress that background events will finish (replication)."""
        self._holds.add(key)

    def release(self, key: tuple) -> None:
        self._holds.discard(key)

    def release_holds_of(self, node: str) -> None:
        self._holds = {h for h in self._holds if h[0] != node}

    def peek_event(self) -> Optional[Event]:
        """The event ``step()`` would run next (None when nothing is queued)."""
        q = self._queue
        queued = self._queued
        while q and queued[q[0]].cancelled:
            ev = queued.pop(heapq.heappop(q))
            if ev.lane is not None:
                self._left_lane(ev)
        if not q:
            return None
        ev = queued[q[0]]
        if ev.__class__ is not Message and ev.lane is True:
            # a lane of request timeouts (timeouts.py): its head leaves it for the heap as its event
            del queued[heapq.heappop(q)]
            ev = self._left_lane(ev)
            self._push(ev)
        return _delivery_of(ev) if ev.__class__ is Message else ev

    def next_event_time(self) -> Optional[int]:
        ev = self.peek_event()
        return None if ev is None else ev.time

    # ------------------------------------------------------------------- trace
    def record(self, kind: str, node: str, text: str, api: str = "", src: str = "", dst: str = "",
               msg_id: int = -1, is_response: bool = False, background: bool = False) -> TraceEvent:
        ev: TraceEvent = _new_entry(TraceEvent)     # TraceEvent(step, now, kind, ...) without the class call
        ev.step = self.step_count                   # (every timer that fires, every client call: see Event)
        ev.time = self.now
        ev.kind = kind
        ev.node = node
        ev._text = text
        ev._message = None
        ev.api, ev.src, ev.dst = api, src, dst
        ev.msg_id, ev.is_response, ev.background = msg_id, is_response, background
        ev._details = ev._sent = ev._attrs = None
        self.trace.append(ev)       # _recorded(ev), inlined (every timer that fires, every client call)
        if self.observers:
            for obs in self.observers:
                obs(ev)
        return ev

    def record_delivery(self, message) -> TraceEvent:
        """The trace entry of a delivered message (its narration is written from the message when read)."""
        return self._recorded(TraceEvent.delivery(self.step_count, self.now, message))

    def _recorded(self, ev: TraceEvent) -> TraceEvent:
        self.trace.append(ev)
        if self.observers:
            for obs in self.observers:
                obs(ev)
        return ev

    def narrate(self, text: str) -> None:
        """Add a line to what the current step did (the rule that decided says why)."""
        cur = self.current
        if cur is not None and self.trace.enabled:
            details = cur._details          # TraceEvent.add_detail, inlined
            if details is None:
                cur._details = text
            elif details.__class__ is list:
                details.append(text)
            else:
                cur._details = [details, text]

    def narrate_f(self, line: tuple) -> None:
        """``narrate(template % values)`` for ``line = (template, value, ...)``, written only when someone reads
        the step: formatting numbers into text costs ~2,400 instructions a line, and most lines of a long run are
        never read (with the trace off, none is).  For the lines of the paths every message takes (a follower's
        append, a HW move)."""
        cur = self.current
        if cur is not None and self.trace.enabled:
            details = cur._details          # (as narrate)
            if details is None:
                cur._details = line
            elif details.__class__ is list:
                details.append(line)
            else:
                cur._details = [details, line]

    def begin_step(self, kind: str, node: str, text: str, **kw) -> TraceEvent:
        """A step that is not a queued event (a fault applied from the API)."""
        self.step_count += 1
        self.current = self.record(kind, node, text, **kw)
        return self.current

    # -------------------------------------------------------------------- step
    def choices(self) -> list[Event]:
        """The events a stepper or an explorer may pick to run next (``step(choice=i)``): each foreground
        message delivery that is the oldest in flight on its connection in its direction (which is FIFO) and is
        due no later than the next other event (so no timer is overtaken).  Soonest first."""
        pending = self.pending_events()
        other = min((e.time for e in pending if e.kind != "deliver" or e.background), default=None)
        heads: dict = {}
        for e in pending:
            if e.kind == "deliver" and not e.background and (other is None or e.time <= other):
                heads.setdefault((e.msg.conn.id if e.msg.conn else (e.msg.src, e.msg.dst), e.msg.is_response), e)
        return sorted(heads.values(), key=_order)

    def step(self, choice: Optional[int] = None, deadline: Optional[int] = None) -> Optional[TraceEvent]:
        """Execute exactly one event.  Returns its trace entry, or None if nothing is queued (or, with a
        ``deadline``, nothing is due by then: the next event stays queued).  ``choice`` runs
        ``choices()[choice]`` instead of the earliest event (an explorer's pick)."""
        if choice is not None:
            chosen = self.choices()[choice]
            key = (chosen.time << _SEQ_BITS) | chosen.seq
            del self._queued[key]
            self._queue.remove(key)
            heapq.heapify(self._queue)
            self._foreground -= 1
            if chosen.time > self.now:
                self.now = chosen.time
            self.step_count += 1
            chosen.msg.event = None     # (as below)
            tev = self.network.deliver(chosen.msg, self.nodes.get(chosen.msg.dst))
            self.current = None
            return tev
        q = self._queue
        queued = self._queued
        ev: Any       # an Event, or a Message queued itself (see network.Message)
        m: Optional[Message]        # the message it delivers (None: a timer)
        while q:
            ev = queued.pop(heapq.heappop(q))
            if ev.__class__ is Message:     # a message queued itself (see network.Message): its delivery
                m = ev
                at = m.deliver_at
                node = self.nodes.get(m.dst)
            else:
                if ev.lane is not None:
                    ev = self._left_lane(ev)
                    if ev is None:          # (a request timeout whose answer came)
                        continue
                if ev.cancelled:
                    continue
                m = ev.msg                  # None for a timer
                at = ev.time
                node = self.nodes.get(ev.node)
            if node is not None and node.paused_until > at and node.alive:
                # A paused process handles nothing until it wakes: hold the event (a message's delivery is
                # held by an event from now on).
                if ev is m:
                    ev = m.event = _delivery_of(m)
                ev.time = node.paused_until
                self._seq += 1
                ev.seq = self._seq
                self._push(ev)
                continue
            if deadline is not None and at > deadline:
                # not due by the deadline: back under its own key (the same place in the order)
                key = (at << _SEQ_BITS) | (m.seq if ev is m else ev.seq)
                heapq.heappush(q, key)
                queued[key] = ev
                return None
            if not ev.background:
                self._foreground -= 1
            if at > self.now:
                self.now = at
            self.step_count += 1
            if m is None:
                tev = self._fire_timer(ev, node)
            else:
                m.event = None      # its event has run (no cycle message <-> event is left for the collector)
                tev = self.network.deliver(m, node)
            self.current = None
            return tev
        return None

    def _fire_timer(self, ev: Event, node) -> TraceEvent:
        if node is not None and (not node.alive or node.incarnation != ev.incarnation):
            # timers of a crashed incarnation never fire
            self.current = self.record("timer", ev.node, f"timer {ev.name} of a crashed process discarded",
                                       background=True)
            return self.current
        self.current = self.record("timer", ev.node, f"{ev.node}: {ev.name}" if self.trace.enabled else "",
                                   "", "", "", -1, False, ev.background)    # (by position: Node.send_request)
        fn, arg = ev.fn, ev.arg
        ev.fn = ev.arg = None       # it ran: see cancel()
        if arg is None:
            fn()
        else:
            fn(arg)
        return self.current

    # --------------------------------------------------------------- running
    def run_until(self, predicate: Callable[[], bool], timeout_ms: Optional[int] = None,
                  max_steps: int = 500_000) -> bool:
        """Step until predicate() holds.  With a timeout (simulated ms), stop when the
        clock would pass it; the clock then stands at the deadline.  Returns predicate()."""
        if self.driver is not None:
            return self.driver(predicate, timeout_ms)
        return collecting_seldom(self._run_until, predicate, timeout_ms, max_steps)

    def _run_until(self, predicate: Callable[[], bool], timeout_ms: Optional[int], max_steps: int) -> bool:
        deadline = None if timeout_ms is None else self.now + int(timeout_ms)
        # A long wait costs only the events that really happen; what is refused is a loop at one instant
        # (max_steps steps without the clock moving) and, without a deadline, waiting on a simulation that
        # has only idle background timers left (nothing can ever arrive) or that works on for max_steps steps
        # without getting there.
        steps = total = 0
        at = self.now
        quiet_since = None
        q = self._queue
        queued = self._queued
        nodes = self.nodes
        deliver = self.network.deliver
        heappop, due_by = heapq.heappop, _NO_DEADLINE if deadline is None else deadline   # (an int comparison a step)
        while not predicate():
            # step(None, deadline), inlined for nine steps in ten -- a message queued itself (see network.Message), due
            # by the deadline, for a node not paused -- and called for the others (as step(): keep the two alike)
            m = queued[q[0]] if q else None
            if m.__class__ is Message and (t := m.deliver_at) <= due_by and \
                    (node := nodes.get(m.dst)) is not None and node.paused_until <= t:
                del queued[heappop(q)]
                if not m.background:
                    self._foreground -= 1
                if t > self.now:
                    self.now = t
                self.step_count += 1
                tev = deliver(m, node)
                self.current = None
            else:
                tev = self.step(None, deadline)
            if tev is None:
                # nothing queued, or nothing due by the deadline
                if deadline is not None and deadline > self.now:
                    self.now = deadline
                return predicate()
            if self.now != at:
                at = self.now
                steps = 0
            else:
                steps += 1
                if steps > max_steps:
                    raise SimulationStuck(f"no progress: {max_steps} steps at t={at}ms without the clock moving "
                                          f"(events keep scheduling each other at the same instant)")
            if deadline is None:
                total += 1
                if total > max_steps:          # no deadline, and work keeps happening without reaching it
                    raise SimulationStuck(f"no progress: {max_steps} steps (t={self.now}ms) without what the call "
                                          f"waits for; the cluster keeps working but never gets there")
                if self._foreground > 0 or self._holds:
                    quiet_since = None
                elif quiet_since is None:
                    quiet_since = self.now
                elif self.now - quiet_since > QUIET_MS:
                    raise NothingCanArrive(
                        f"nothing can arrive: for {QUIET_MS // 60_000} simulated minutes (t={quiet_since}.."
                        f"{self.now}ms) the cluster ran only background timers (heartbeats, parked fetches), and "
                        f"no other code runs while this call blocks, so what it waits for can never happen")
        return True

    def run_until_idle(self, max_steps: int = 5_000_000) -> int:
        """Step until only background work is left.  Returns the number of steps."""
        if self.driver is not None:
            # under a stepper the person's Step clicks execute these steps, as for run_until
            before = self.step_count
            self.driver(lambda: self.idle, None)
            return self.step_count - before
        return collecting_seldom(self._run_until_idle, max_steps)

    def _run_until_idle(self, max_steps: int) -> int:
        n = 0
        while not self.idle:
            if self.step() is None:
                break
            n += 1
            if n > max_steps:
                raise SimulationStuck(f"still busy after {max_steps} steps")
        return n

    def advance(self, ms: int) -> None:
        """Let ``ms`` of simulated time pass, handling every event due in it."""
        self.run_until(lambda: False, timeout_ms=ms)
