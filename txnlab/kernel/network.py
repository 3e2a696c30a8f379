"""The simulated network: every request and response is a visible message on a connection.

Owns ``Message`` (id, source, destination, API name, payload, send and delivery time, its connection),
``Connection`` (one TCP connection, as Kafka's clients and brokers keep them), delivery, and the network
faults.  A connection delivers in order in each direction: latency and jitter (from the cluster's seeded RNG)
never let a later message overtake an earlier one.  A server that serves one request of a connection at a
time (Kafka's ``SocketServer`` mutes the channel until the response is sent) leaves the next request waiting
in the connection.  Faults speak TCP's language: a lost request or response breaks its connection (everything
in flight on it fails, and the client reconnects and retries by its own rules); delaying a message delays
the connection behind it; a request is seen twice only when its answer is lost and the client sends it again
on a new connection.  A network partition loses nothing on an open connection: its messages are held (the
sender's kernel keeps them and retransmits) and arrive in order at TCP's first retransmission after the heal
(the rule is in ``tcp.py``), unless an end closes the connection first.
"""
from __future__ import annotations

from collections import deque
from heapq import heappush
from itertools import islice
from operator import attrgetter
from typing import Any, ClassVar, Iterator, Optional

from .._mypyc import new as _new    # object.__new__ (compiled by mypyc: the class call)
from .fault_rule import FaultRule   # noqa: F401  (imported from here)
from .tcp import TCP_RTO_MIN_MS, TCP_TIMEOUT_INIT_MS, retransmission_at
from .trace import DeliveryEvent, TraceEvent

_new_entry = object.__new__     # trace.py is never compiled: its entries are always made this way
_id = attrgetter("id")

# The kernel's heap key of a queued event or message: (time << SEQ_BITS) | seq, in (time, seq) order below 2**40
# events (defined here, where the one caller outside the kernel needs it; the kernel imports it)
SEQ_BITS = 40


class Message:
    """One message on the wire.  ``Network.send`` builds them with ``object.__new__`` and sets every field
    itself (a class call costs CPython 3.11 an argument tuple and a slot dispatch, once per message): a new
    field goes there too.

    A message on its way is in the kernel's queue in one of two forms.  Most often the message itself, under
    the key ``(deliver_at, seq)``: ``Network.send`` queues it so, and no event object is made for it (one fewer
    object per message, ~4 % of a transaction's instructions).  Otherwise -- a delivery re-timed by a fault, by
    a paused receiver, or read from its connection's waiting line -- an ``Event`` of kind "deliver", held in
    ``event``.  ``Kernel.cancel_delivery`` takes back either; ``Kernel.pending_events`` shows both as events.
    ``cancelled`` answers the kernel's question about a queued entry the way an event would (a queued message
    is never cancelled: a taken-back one leaves the queue)."""

    __slots__ = ("id", "src", "dst", "api", "payload", "sent_at", "deliver_at", "is_response",
                 "correlation_id", "state", "background", "note", "event", "sent_step", "conn", "lose_response",
                 "seq", "retransmitted")

    cancelled: ClassVar[bool] = False

    def __init__(self, id=0, src="", dst="", api="", payload=None, sent_at=0, deliver_at=0, is_response=False,
                 correlation_id=0, background=False, sent_step=0, conn=None):
        self.id = id
        self.src = src
        self.dst = dst
        self.api = api
        self.payload = payload
        self.sent_at = sent_at
        self.deliver_at = deliver_at
        self.is_response = is_response
        self.correlation_id = correlation_id
        # in-flight | held (by a network partition: TCP retransmits it) | waiting (in its connection, at the
        # server) | delivered | dropped
        self.state = "in-flight"
        self.background = background
        self.note = ""
        self.event = None
        self.sent_step = sent_step
        self.conn: Optional[Connection] = conn
        self.lose_response = False   # a fault: the answer to this request is lost (its connection breaks)
        self.seq = 0                 # its place in the kernel's queue when it waits there itself (see the class)
        self.retransmitted = -1      # held by a partition: when TCP retransmitted it after the heal (ms)

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
        late = "" if self.retransmitted < 0 else \
            f", delivered after the heal, retransmitted at +{self.retransmitted - self.sent_at} ms"
        return f"{self.dst} {verb} from {self.src}" + (f" ({desc})" if desc else "") + late

    def __repr__(self) -> str:
        return (f"Message(#{self.id} {self.api} {self.kind} {self.src}->{self.dst} "
                f"sent {self.sent_at}ms due {self.deliver_at}ms {self.state})")


class Connection:
    """One TCP connection from ``client`` to ``server``.  ``channel`` tells apart the connections one process
    keeps to the same peer (a broker's replica fetcher, its marker sender, a client's coordinator connection).

    ``state``: open | broken (a message was lost; the client has not noticed yet, so what it sends meanwhile
    is lost too) | closed.  ``due`` is the last delivery time in each direction (to the server, to the
    client), so nothing overtakes; ``in_service`` the request the server is answering when it serves one at a
    time, ``waiting`` the requests that arrived behind it.  ``held``: the messages a network partition holds in
    each direction, in order (None when none ever was); ``syn_at``: when it was opened across a partition, its
    SYN not answered yet (-1 once established).
    """

    __slots__ = ("id", "client", "server", "channel", "state", "due", "in_service", "waiting", "held", "syn_at")

    def __init__(self, id: int, client: str, server: str, channel: str, syn_at: int = -1) -> None:
        self.held: Optional[tuple[deque, deque]] = None
        self.syn_at = syn_at
        self.id = id
        self.client = client
        self.server = server
        self.channel = channel
        self.state = "open"
        self.due = [0, 0]
        self.in_service: Optional[Message] = None
        self.waiting: deque = deque()

    def describe(self) -> str:
        return f"{self.client} -> {self.server}" + (f" ({self.channel})" if self.channel else "")

    def __repr__(self) -> str:
        return f"Connection(#{self.id} {self.describe()} {self.state})"


class Network:
    def __init__(self, kernel, latency_ms: int = 1, jitter_ms: int = 0) -> None:
        self.kernel = kernel
        self.latency_ms = latency_ms
        self.jitter_ms = jitter_ms
        self.rules: list[FaultRule] = []
        self.cuts: set[tuple[str, str]] = set()
        self.messages: dict[int, Message] = {}       # every message ever sent (when keep_history)
        self._keep_history = True
        # None: the history keeps every message; N: only the last N sent (up to a quarter more), for long runs
        self._history_limit: Optional[int] = None
        # where send() puts each message: the history when it keeps every one (else None: one test per message)
        self._history: Optional[dict[int, Message]] = self.messages
        # (the messages on the wire now are those whose delivery is queued and those a partition holds: _on_the_wire)
        self._next_id = 0
        self._connections: dict[tuple, Connection] = {}   # (client, server, channel) -> the live connection
        self._next_conn = 0
        self._holding: dict[int, Connection] = {}   # connection id -> a connection a partition holds messages of

    @property
    def keep_history(self) -> bool:
        return self._keep_history

    @keep_history.setter
    def keep_history(self, on: bool) -> None:
        self._keep_history = on
        self._history = self.messages if on and self._history_limit is None else None

    @property
    def history_limit(self) -> Optional[int]:
        return self._history_limit

    @history_limit.setter
    def history_limit(self, limit: Optional[int]) -> None:
        self._history_limit = limit
        self._history = self.messages if self._keep_history and limit is None else None

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
        self._release()

    def heal_between(self, a: str, b: str) -> None:
        """Heal the cut between two processes only (other cuts stay)."""
        self.cuts.discard((a, b))
        self.cuts.discard((b, a))
        self._release()

    def is_cut(self, src: str, dst: str) -> bool:
        return (src, dst) in self.cuts

    # ----------------------------------------------------------- connections
    def connection(self, client: str, server: str, channel: str = "") -> Connection:
        """The live connection ``client -> server`` on ``channel``; a new one when there is none (a reconnect)."""
        key = (client, server, channel)
        c = self._connections.get(key)
        if c is None:
            self._next_conn += 1
            c = self._connections[key] = Connection(self._next_conn, client, server, channel,
                                                    self.kernel.now if (client, server) in self.cuts else -1)
        return c

    def connections(self) -> list[Connection]:
        return sorted(self._connections.values(), key=lambda c: c.id)

    def close(self, conn: Connection, reason: str, by_client: bool = False) -> None:
        """Close a connection: what is on the wire or waiting in it is gone (its ends fail what they wait for).
        ``by_client``: the client closed it in order (after a request timed out); as with TCP, the requests it
        had already sent still reach the server and are handled, but no answer comes back."""
        if conn.state == "closed":
            return
        if conn.state == "broken" or conn.syn_at >= 0:
            by_client = False       # (a connection never established carries nothing to the server)
        conn.state = "closed"
        if self._connections.get((conn.client, conn.server, conn.channel)) is conn:
            del self._connections[(conn.client, conn.server, conn.channel)]
        for m in [m for m in self._on_the_wire() if m.conn is conn and (m.is_response or not by_client)]:
            self.kernel.cancel_delivery(m)
            if m.state == "held":
                self._unhold(m)
            m.state = "dropped"
            m.note = reason
        if by_client:
            return
        for m in conn.waiting:
            m.state = "dropped"
            m.note = reason
        conn.waiting.clear()
        conn.in_service = None

    def close_all_of(self, node: str, reason: str) -> None:
        """A process crashed: every connection it had is gone."""
        for c in [c for c in self._connections.values() if node in (c.client, c.server)]:
            self.close(c, reason)
        for c in [c for c in self._holding.values() if node in (c.client, c.server)]:
            for m in [*c.held[0], *c.held[1]]:      # type: ignore[index]  (closed by its client before: gone too)
                m.state = "dropped"
                m.note = reason
            del self._holding[c.id]

    def break_connection(self, conn: Connection, reason: str) -> None:
        """A message on ``conn`` was lost: the connection breaks.  The client notices it one latency later
        (a step of its own), and fails every request in flight on it; until then what it sends is lost too."""
        if conn.state in ("closed", "broken"):
            return
        self.close(conn, reason)
        conn.state = "broken"
        self._connections[(conn.client, conn.server, conn.channel)] = conn   # the client still writes to it
        self.kernel.narrate(f"the connection {conn.describe()} breaks ({reason})")
        client = self.kernel.nodes.get(conn.client)
        if client is not None and client.alive:
            self.kernel.schedule(self.latency_ms, "timer", conn.client, f"connection to {conn.server} broken",
                                 fn=client.connection_broken, arg=conn, incarnation=client.incarnation)

    # ------------------------------------------------------------------ send
    def send(self, src: str, dst: str, api: str, payload: Any, is_response: bool,
             correlation_id: int, background: bool = False, channel: str = "",
             reply_to: Optional[Message] = None) -> Message:
        """Put a message on its connection: a request on ``src``'s connection to ``dst`` (``channel``), a
        response on the connection of the request it answers (``reply_to``)."""
        k = self.kernel
        mid = self._next_id = self._next_id + 1
        if reply_to is not None:
            conn: Connection = reply_to.conn  # type: ignore[assignment]
        else:
            # connection(), inlined for the common case: the connection is there
            conn = self._connections.get((src, dst, channel)) or self.connection(src, dst, channel)
        now = k.now
        due = now + self.latency_ms
        if self.jitter_ms:
            due += k.rng.randint(0, self.jitter_ms)
        direction = 1 if is_response else 0
        dues = conn.due
        if due < dues[direction]:
            due = dues[direction]              # one connection: nothing overtakes
        m: Message = _new(Message)     # Message(...) without the class call (see Message): the same fields
        m.id = mid
        m.src = src
        m.dst = dst
        m.api = api
        m.payload = payload
        m.sent_at = now
        m.deliver_at = due
        m.is_response = is_response
        m.correlation_id = correlation_id
        m.state = "in-flight"
        m.background = background
        m.note = ""
        m.event = None
        m.sent_step = k.step_count
        m.conn = conn
        m.lose_response = False
        m.retransmitted = -1
        hist = self._history
        if hist is not None:
            hist[mid] = m
        elif self._keep_history:        # a bounded history
            hist = self.messages
            hist[mid] = m
            if len(hist) > self._history_limit + max(1, self._history_limit // 4):  # type: ignore[operator]
                self._trim_history()
        cur = k.current
        if cur is not None:
            sent = cur._sent            # TraceEvent.add_sent, inlined (once per message)
            if sent is None:
                cur._sent = mid
            elif sent.__class__ is int:
                cur._sent = [sent, mid]
            else:
                sent.append(mid)
        if reply_to is not None and conn.in_service is reply_to:
            if conn.waiting:
                self._next_request(conn)
            else:
                conn.in_service = None      # (_next_request with nothing waiting)
        if conn.state == "open" and not self.rules and not self.cuts and \
                (reply_to is None or not reply_to.lose_response):
            # the common case: no fault touches this message
            dues[direction] = due
            if due.__class__ is int:
                # the message itself waits in the kernel's queue (see Message): Kernel.schedule_delivery,
                # inlined, without the event
                seq = m.seq = k._seq = k._seq + 1
                key = (due << SEQ_BITS) | seq
                heappush(k._queue, key)
                k._queued[key] = m
                if not background:
                    k._foreground += 1
            else:
                m.seq = 0
                m.event = k.schedule_delivery(m)
            return m
        m.seq = 0           # (not queued as itself: see Message)
        if conn.state in ("closed", "broken"):
            m.state = "dropped"
            m.note = f"its connection was {conn.state}"
            k.narrate(f"{api} {m.kind} #{m.id} is lost: the connection {conn.describe()} was {conn.state}")
            return m
        if (src, dst) in self.cuts or conn.held is not None and conn.held[direction]:
            self._hold(m)                       # the sender's kernel keeps it in its socket buffer
            k.narrate(self._held_text(m))
            return m
        action = None
        if self.rules:
            for rule in self.rules:
                if rule.matches(m):
                    action = rule
                    rule.count -= 1
                    if rule.count <= 0:
                        self.rules.remove(rule)
                    break
        lost_answer = reply_to is not None and reply_to.lose_response
        if action is not None and action.action == "duplicate" and is_response:
            lost_answer = True       # a request is seen twice only when its answer is lost and it is sent again
        if (action is not None and action.action == "drop") or lost_answer:
            m.state = "dropped"
            m.note = "lost by an injected fault"
            k.narrate(f"the network dropped {api} {m.kind} #{m.id} ({src} -> {dst}) [injected fault]")
            self.break_connection(conn, f"{api} {m.kind} #{m.id} was lost")
            return m
        if action is not None and action.action == "delay":
            m.deliver_at += action.ms
            m.note = f"delayed {action.ms}ms by an injected fault"
            k.narrate(f"{api} {m.kind} #{m.id} will be delayed by {action.ms}ms, and the connection "
                      f"{conn.describe()} behind it [injected fault]")
        if action is not None and action.action == "duplicate":
            m.lose_response = True
            k.narrate(f"{api} request #{m.id} will arrive, but its answer will be lost: the client will send it "
                      f"again on a new connection [injected fault]")
        conn.due[direction] = m.deliver_at
        m.event = k.schedule(m.deliver_at - k.now, "deliver", dst, api, msg=m, background=background)
        return m

    def _trim_history(self) -> None:
        """Forget the oldest messages of the history beyond ``history_limit`` (those on the wire stay readable
        through ``message()``)."""
        hist = self.messages
        for mid in list(islice(hist, len(hist) - self._history_limit)):  # type: ignore[operator]
            del hist[mid]

    def _next_request(self, conn: Connection) -> None:
        """The server answered the request it was serving: it reads the next one waiting in the connection."""
        conn.in_service = None
        if conn.waiting:
            nxt = conn.waiting.popleft()
            nxt.state = "in-flight"
            nxt.event = self.kernel.schedule(0, "deliver", nxt.dst, nxt.api, msg=nxt, background=nxt.background)

    def message(self, msg_id: int) -> Message:
        """A message by id: any one on the wire now, or any sent before when the history is kept."""
        m = self.messages.get(msg_id) or next((x for x in self._on_the_wire() if x.id == msg_id), None)
        if m is None:
            raise KeyError(f"no message #{msg_id} in flight"
                           + ("" if self.keep_history else " (this network keeps no history)"))
        return m

    def in_flight(self) -> list[Message]:
        return sorted(self._on_the_wire(), key=lambda m: (m.deliver_at, m.id))

    def _on_the_wire(self) -> Iterator[Message]:
        """The messages on the wire now, in no particular order: those whose delivery is queued in the kernel (a
        message queued itself, or a live delivery event: see Message) and those a partition holds.  (No dict of
        them is kept: adding and removing every message cost more than these rare looks.)"""
        for e in self.kernel._queued.values():
            if e.__class__ is Message:
                yield e
            else:
                m = getattr(e, "msg", None)     # (a lane of request timeouts has none)
                if m is not None and not e.cancelled:
                    yield m
        for c in self._holding.values():
            yield from c.held[0]        # type: ignore[index]
            yield from c.held[1]        # type: ignore[index]

    def drop(self, m: Message, reason: str) -> None:
        """Lose a message that is on the wire (a fault applied to a chosen message): its connection breaks."""
        if m.state not in ("in-flight", "waiting", "held"):
            raise ValueError(f"message #{m.id} is not in flight ({m.state})")
        if m.state == "held":
            self._unhold(m)
        self.kernel.cancel_delivery(m)
        m.state = "dropped"
        m.note = reason
        if m.conn is not None:
            self.break_connection(m.conn, f"{m.api} {m.kind} #{m.id} was lost")

    def delay(self, m: Message, ms: int) -> None:
        """Delay a message on the wire by ``ms``, and with it everything behind it on its connection."""
        if m.state != "in-flight":
            raise ValueError(f"message #{m.id} is not in flight ({m.state})")
        k = self.kernel
        k.cancel_delivery(m)
        m.deliver_at += ms
        m.note = f"delayed {ms}ms"
        m.event = k.schedule(m.deliver_at - k.now, "deliver", m.dst, m.api, msg=m, background=m.background)
        behind = sorted((x for x in self._on_the_wire()
                         if x.conn is m.conn and x.is_response == m.is_response and x.id > m.id), key=lambda x: x.id)
        for x in behind:
            if x.deliver_at < m.deliver_at:
                k.cancel_delivery(x)
                x.deliver_at = m.deliver_at
                x.note = f"behind #{m.id} on its connection"
                x.event = k.schedule(x.deliver_at - k.now, "deliver", x.dst, x.api, msg=x, background=x.background)
        if m.conn is not None:
            direction = 1 if m.is_response else 0
            m.conn.due[direction] = max(m.conn.due[direction], m.deliver_at)

    def duplicate(self, m: Message) -> Message:
        """Make a request be seen twice, the only way a connection can: its answer is lost, the connection
        breaks and the client sends the request again on a new one (by its own retry rules)."""
        if m.state != "in-flight":
            raise ValueError(f"message #{m.id} is not in flight ({m.state})")
        if m.is_response:
            self.drop(m, "its answer was lost, so the client sends the request again [injected fault]")
            return m
        m.lose_response = True
        m.note = "its answer will be lost [injected fault]"
        return m

    def refuse(self, m: Message, reason: str) -> None:
        """The server end of ``m``'s connection refuses it (its process is down, not serving clients yet, or closes
        the connection of a request it cannot handle): the connection closes, and ``m``'s client fails ``m`` and
        every request sent behind it on that connection, waiting there or on the wire, at once (not each by its
        request timeout).  A later request goes out on a new connection."""
        conn = m.conn
        behind = [] if conn is None or m.is_response else \
            sorted([*conn.waiting, *(x for x in self._on_the_wire() if x.conn is conn and not x.is_response)], key=_id)
        if conn is not None:
            self.close(conn, reason)
        src = self.kernel.nodes.get(m.src)
        if not m.is_response and src is not None and src.alive:
            src.connection_refused(m)
            for x in behind:
                src.connection_refused(x)

    # --------------------------------------------------------------- deliver
    def deliver(self, m: Message, dst) -> TraceEvent:
        """Deliver ``m`` to ``dst``: its destination's node, looked up by the kernel (None: there is none)."""
        k = self.kernel
        conn = m.conn           # (m.event is None: the kernel let go of the event that delivered it)
        if self.cuts and conn is not None and \
                ((m.src, m.dst) in self.cuts or conn.held is not None and conn.held[1 if m.is_response else 0]):
            self._hold(m)       # lost on the way: the sender's kernel retransmits it (tcp.py)
            k.current = k.record("wait", m.dst, self._held_text(m), api=m.api, src=m.src, dst=m.dst, msg_id=m.id,
                                 is_response=m.is_response, background=m.background)
            return k.current
        if dst is None or not dst.alive:
            m.state = "dropped"
            m.note = f"{m.dst} is down"
            k.current = k.record("drop", m.dst, f"{m.api} {m.kind} #{m.id} from {m.src} lost: {m.dst} is down",
                                 api=m.api, src=m.src, dst=m.dst, msg_id=m.id, is_response=m.is_response,
                                 background=m.background)
            self.refuse(m, f"{m.dst} is down")     # a dead process refuses connections at once
            return k.current
        if (not m.is_response and m.correlation_id and dst.serves_one_request_at_a_time and conn is not None):
            if conn.in_service is not None:
                m.state = "waiting"
                conn.waiting.append(m)
                k.current = k.record("wait", m.dst, f"{m.api} request #{m.id} from {m.src} waits in its connection: "
                                     f"{m.dst} answers #{conn.in_service.id} ({conn.in_service.api}) first",
                                     api=m.api, src=m.src, dst=m.dst, msg_id=m.id, background=m.background)
                return k.current
            conn.in_service = m
        m.state = "delivered"
        trace = k.trace
        tev = _new_entry(DeliveryEvent)     # DeliveryEvent(...) without the class call (see TraceEvent)
        tev.step = k.step_count
        tev.time = k.now
        tev.background = m.background
        tev._details = tev._sent = tev._attrs = None
        tev._message = m                    # (the fields it shares with its message are read from it)
        if trace.enabled:
            # the delivery's line is written from the message when someone reads it
            tev._text = None            # type: ignore[assignment]
            trace.events.append(tev)
        else:
            # nobody will read it: the narration of a run with the trace off is not built
            tev._text = ""
        k.current = tev
        if k.observers:
            for obs in k.observers:
                obs(tev)
        dst.on_message(m)
        return k.current

    # ------------------------------------------------------------- partitions
    def _hold(self, m: Message) -> None:
        """A network partition holds ``m`` (or a message held before it on its connection does): TCP keeps it
        and retransmits it; ``_release`` delivers it after the heal."""
        conn: Connection = m.conn     # type: ignore[assignment]
        if conn.held is None:
            conn.held = (deque(), deque())
        conn.held[1 if m.is_response else 0].append(m)
        self._holding[conn.id] = conn
        m.state = "held"
        m.event = None
        m.seq = 0
        m.note = "held by a network partition: TCP retransmits it after the heal"

    def _unhold(self, m: Message) -> None:
        """``m`` is held no more (its connection closed, or a fault drops it)."""
        conn = m.conn
        if conn is not None and conn.held is not None:
            q = conn.held[1 if m.is_response else 0]
            if m in q:
                q.remove(m)

    def _held_text(self, m: Message) -> str:
        held = m.conn is not None and m.conn.held is not None and len(m.conn.held[1 if m.is_response else 0]) > 1
        why = (f"behind a held message on its connection {m.conn.describe()}" if held   # type: ignore[union-attr]
               else f"network partition between {m.src} and {m.dst}")
        return f"{m.api} {m.kind} #{m.id} from {m.src} is held: {why} (TCP retransmits it)"

    def _release(self) -> None:
        """After a heal: each held direction whose path is whole again is delivered, in order, at TCP's first
        retransmission of its oldest message at or after now (tcp.py), one latency later; what is on the wire
        behind it on the connection waits for it."""
        k = self.kernel
        for cid in sorted(self._holding):
            conn = self._holding[cid]
            for direction, (src, dst) in enumerate(((conn.client, conn.server), (conn.server, conn.client))):
                q = conn.held[direction]        # type: ignore[index]
                if not q or (src, dst) in self.cuts:
                    continue
                head = q[0]
                if conn.syn_at >= 0:        # the SYN crosses first: the connection is established then
                    at = retransmission_at(conn.syn_at, k.now, TCP_TIMEOUT_INIT_MS)
                    conn.syn_at = -1
                else:
                    at = retransmission_at(head.sent_at, k.now, TCP_RTO_MIN_MS)
                due = max(at + self.latency_ms, conn.due[direction])
                conn.due[direction] = due
                k.narrate(f"{head.api} {head.kind} #{head.id} from {head.src} (and {len(q) - 1} behind it) will be "
                          f"delivered after the heal: TCP retransmits it at t = {at} ms"
                          if len(q) > 1 else f"{head.api} {head.kind} #{head.id} from {head.src} will be delivered "
                          f"after the heal: TCP retransmits it at t = {at} ms")
                behind = sorted((x for x in self._on_the_wire() if x.conn is conn and x.state == "in-flight"
                                 and x.is_response == bool(direction) and x.id > head.id and x.deliver_at < due),
                                key=lambda x: x.id)
                for m in list(q) + behind:
                    k.cancel_delivery(m)
                    if m.state == "held":
                        m.state = "in-flight"
                        m.retransmitted = at
                        m.note = f"delivered after the heal, retransmitted at +{at - m.sent_at} ms"
                    else:
                        m.note = f"behind #{head.id} on its connection"
                    m.deliver_at = due
                    m.event = k.schedule(due - k.now, "deliver", m.dst, m.api, msg=m, background=m.background)
                q.clear()
            if not conn.held[0] and not conn.held[1]:   # type: ignore[index]
                del self._holding[cid]
        for c in self._connections.values():     # opened across the cut, nothing held: established at once
            if c.syn_at >= 0 and (c.client, c.server) not in self.cuts:
                c.syn_at = -1
