"""A process of the simulation (a broker, the controller, or a client).

Owns the request/response plumbing every process shares: sending a request
with a correlation id and a timeout, matching the response, answering a
request, timers, and what a crash does to all of that (the memory is gone,
outstanding requests are forgotten, timers of the old incarnation never fire).
"""
from __future__ import annotations

import types
from heapq import heappush
from typing import Any, Callable, ClassVar, Optional, Union

from .._mypyc import new as _new    # object.__new__ (compiled by mypyc: the class call)
from ..protocol.errors import CLOSED_AFTER_TIMEOUT, TIMED_OUT_HERE, Errors, LocalTimeout
from .kernel import Event, Kernel
from .network import SEQ_BITS, Message
from .timeouts import CID_BITS, RequestTimeouts

try:
    from mypy_extensions import mypyc_attr
except ImportError:         # the lab does not need it (see txnlab/_mypyc.py)
    from .._mypyc import mypyc_attr  # type: ignore[assignment]


def own_copies(cls: type, *names: str) -> None:
    """Give ``cls`` its own copy of each of the methods ``names`` it inherits from ``Node`` (same code, same
    globals): CPython 3.11 specializes an attribute read or a call for the one type it sees at that place of a
    function's code, so Node's code run by brokers and by clients alike (send_request, on_message: once per
    message) missed its caches at every change of type; a broker's copy sees only brokers.  (Nothing to do in
    the compiled build, whose methods have no code object.)"""
    for name in names:
        f = Node.__dict__[name]
        code = getattr(f, "__code__", None)
        if code is not None and getattr(cls, name) is f:
            g = types.FunctionType(code.replace(), f.__globals__, f.__name__, f.__defaults__, f.__closure__)
            g.__kwdefaults__, g.__qualname__, g.__doc__ = f.__kwdefaults__, f.__qualname__, f.__doc__
            setattr(cls, name, g)


ResponseCallback = Callable[[Any, Optional[Union[Errors, LocalTimeout]]], None]


class _Pending:
    """A request waiting for its answer.  Its timeout waits in a lane of the node as an int (timeouts.py) until
    it is due -- ``deadline`` -- and is an event (``_timer``) only from then on."""

    __slots__ = ("dst", "api", "callback", "deadline", "_timer", "msg")

    def __init__(self, dst="", api="", callback=None, timeout_event=None, msg=None):
        self.dst = dst
        self.api = api
        self.callback = callback
        self.deadline = None if timeout_event is None else timeout_event.time
        self._timer = timeout_event
        self.msg = msg

    @property
    def timeout_event(self) -> Optional[Event]:
        """The request's timeout as an event, to read (when it is due): cancelling it is taking the request out
        of ``Node._pending``."""
        if self._timer is not None or self.deadline is None:
            return self._timer
        return Event(self.deadline, 0, "timer", "", "request timeout", background=True)


@mypyc_attr(allow_interpreted_subclasses=True)      # the compiled build: brokers, clients are Python classes
class Node:
    """Base class of every simulated process.

    ``CHANNELS`` maps an API to the connection it travels on when a process keeps more than one to the same
    peer (a broker's replica fetcher and marker sender, a client's coordinator connection); anything else
    uses the one connection per peer.  ``serves_one_request_at_a_time``: a Kafka broker reads the next request
    of a connection only once it has answered the current one.
    """

    CHANNELS: ClassVar[dict] = {}
    serves_one_request_at_a_time: ClassVar[bool] = False

    def __init__(self, kernel: Kernel, name: str) -> None:
        self.kernel = kernel
        self.name = name
        self.alive = True
        self.incarnation = 0
        self.paused_until = 0
        self._pending: dict[int, _Pending] = {}
        self._next_correlation = 0
        kernel.register(self)

    # ----------------------------------------------------------- messaging
    def send_request(self, dst: str, request: Any, callback: ResponseCallback,
                     timeout_ms: int = 30_000, background: bool = False) -> Message:
        """Send ``request`` to ``dst``; ``callback(response, error)`` runs exactly once:
        with the response, or with (None, error): NETWORK_EXCEPTION when the connection is lost, and when the
        request timeout passes TIMED_OUT_HERE (see ``_on_timeout``)."""
        self._next_correlation += 1
        cid = self._next_correlation
        api = request.API
        k = self.kernel
        # every argument by position: a call with a keyword is not specialized by CPython 3.11 (a C call through
        # the generic path: ~0.2 % of a transaction over these hot calls), one with every argument is
        m = k.network.send(self.name, dst, api, request, False, cid, background, self.CHANNELS.get(api, ""), None)
        # its timeout: an int in the lane of its delay, an event only once due (timeouts.py); the same seq, in
        # the same place in the order, as Kernel.schedule_timeout gives a timer
        seq = k._seq = k._seq + 1
        d = (timeout_ms if timeout_ms.__class__ is int else int(timeout_ms)) if timeout_ms > 0 else 0
        t = k.now + d
        p: _Pending = _new(_Pending)    # _Pending(dst, api, callback, None, m) without the class call (as Event)
        p.dst = dst
        p.api = api
        p.callback = callback
        p.deadline = t
        p._timer = None
        p.msg = m
        self._pending[cid] = p
        # (the lanes are the kernel's, by node: a Broker has as many attributes as CPython 3.11 shares the keys
        # of among a class's instances -- one more, and every attribute read of a broker is a slower dict lookup)
        lanes = k._request_lanes.get(id(self))
        lane = None if lanes is None else lanes.get(d)
        if lane is None:
            lane = RequestTimeouts.new(self, d)
        key = (t << SEQ_BITS) | seq
        if not lane:          # the head of its lane: in the heap
            heappush(k._queue, key)
            k._queued[key] = lane
        lane.append((key << CID_BITS) | cid)
        return m

    def respond(self, request_msg: Message, response: Any, background: bool = False) -> Message:
        return self.kernel.network.send(self.name, request_msg.src, request_msg.api, response, True,
                                        request_msg.correlation_id, background, "", request_msg)

    def _on_timeout(self, cid: int) -> None:
        """The request timeout passed: the client gives up on the request and closes its connection, failing the
        others in flight on it.  librdkafka: rd_kafka_broker_timeout_scan fails the request with _TIMED_OUT and,
        socket.max.fails being 1, rd_kafka_broker_fail takes the connection down and fails the others in flight
        with _TIMED_OUT too (src/rdkafka_broker.c).  Java: NetworkClient.handleTimedOutRequests closes the
        connection and processTimeoutDisconnection fails every request in flight on it as timed out
        (InFlightRequest.timedOut: disconnected and timed out).  The errors given are local markers
        (protocol/errors.py ``LocalTimeout``), equal to REQUEST_TIMED_OUT and NETWORK_EXCEPTION for the retry
        rules: what the application sees is the client dialect's (``dialect.seen_as``)."""
        p = self._pending.pop(cid, None)
        if p is None:
            return
        conn = p.msg.conn
        others = self._pending_on(conn)
        self.kernel.narrate(f"{self.name} gave up waiting for the {p.api} response from {p.dst} "
                            f"(request timed out) and closes its connection to {p.dst}"
                            + (f": {len(others)} more request(s) on it fail" if others else ""))
        self.kernel.network.close(conn, "the client closed the connection after a request timed out",
                                  by_client=True)
        p.callback(None, TIMED_OUT_HERE)
        self._fail(others, CLOSED_AFTER_TIMEOUT)

    def _pending_on(self, conn) -> list:
        """The requests of this incarnation waiting for an answer on ``conn``, oldest first (removed)."""
        cids = [cid for cid, p in self._pending.items() if p.msg.conn is conn]
        return [self._pending.pop(cid) for cid in sorted(cids)]

    def _fail(self, pending: list, error: Union[Errors, LocalTimeout]) -> None:
        for p in pending:
            self.kernel.cancel(p._timer)
            p.callback(None, error)

    def connection_broken(self, conn) -> None:
        """A message on ``conn`` was lost and the connection broke: what waits on it fails (a disconnect)."""
        self.kernel.network.close(conn, "the connection broke")
        failed = self._pending_on(conn)
        self.kernel.narrate(f"{self.name} lost its connection to {conn.server}"
                            + (f"; {', '.join(p.api for p in failed)} fail(s) with NETWORK_EXCEPTION" if failed
                               else "; nothing was waiting on it"))
        self._fail(failed, Errors.NETWORK_EXCEPTION)

    def on_message(self, msg: Message) -> None:
        if msg.is_response:
            p = self._pending.pop(msg.correlation_id, None)
            if p is None:
                self.kernel.narrate(f"{self.name} ignored it: no request of this incarnation is waiting for it")
                return
            ev = p._timer       # its timeout is an event once due (Kernel.cancel, inlined: a background timer)
            if ev is not None and not ev.cancelled:
                ev.cancelled = True
                ev.fn = ev.arg = None
            callback = p.callback   # (read, then called: a call through a slot's method look-up is not specialized)
            callback(msg.payload, None)
        else:
            response = self.handle_request(msg)
            if response is not None:        # respond(), inlined (once per request)
                self.kernel.network.send(self.name, msg.src, msg.api, response, True, msg.correlation_id,
                                         msg.background and self._quiet(response), "", msg)    # (by position)

    @staticmethod
    def _quiet(response: Any) -> bool:
        q = getattr(response, "is_quiet", None)
        return bool(q()) if q else True

    def handle_request(self, msg: Message) -> Any:
        """Handle a request; return the response, or None to answer later with respond()."""
        raise NotImplementedError

    def connection_refused(self, msg: Message) -> None:
        p = self._pending.pop(msg.correlation_id, None)
        if p is None or p.msg is not msg:
            if p is not None:
                self._pending[msg.correlation_id] = p
            return
        self.kernel.cancel(p._timer)
        self.kernel.narrate(f"{self.name} could not reach {msg.dst} (connection refused); "
                            f"{p.api} fails with NETWORK_EXCEPTION")
        p.callback(None, Errors.NETWORK_EXCEPTION)

    def disconnected(self, peer: str) -> None:
        """The connections to ``peer`` broke (it crashed): fail what waits on them, oldest first."""
        for cid in sorted(cid for cid, p in self._pending.items() if p.dst == peer):
            p = self._pending.pop(cid, None)
            if p is None:
                continue
            self.kernel.cancel(p._timer)
            self.kernel.narrate(f"{self.name} lost its connection to {peer}; "
                                f"{p.api} fails with NETWORK_EXCEPTION")
            p.callback(None, Errors.NETWORK_EXCEPTION)

    # --------------------------------------------------------------- timers
    def set_timer(self, delay_ms: int, name: Any, fn: Callable[[], None],
                  background: bool = False) -> Event:
        """A timer named ``name``: a str, or ``(template, value, ...)`` written when first read (see Event)."""
        return self.kernel.schedule(delay_ms, "timer", self.name, name, fn, None, background,   # (by position:
                                    self.incarnation, None)                                    # send_request)

    def cancel_timer(self, ev: Optional[Event]) -> None:
        self.kernel.cancel(ev)

    # --------------------------------------------------------------- faults
    def go_down(self, clean: bool = False) -> None:
        """The process stops: its memory is lost (what it wrote to its disk stays), its connections close, and
        every other process learns it lost them.  ``clean``: an orderly exit, which may write to disk first
        (``shutdown_cleanly``).  A fault (``Lab.crash``) or the process itself (a broker at the end of its
        controlled shutdown) calls it, inside a step."""
        if clean:
            shutdown = getattr(self, "shutdown_cleanly", None)
            if shutdown is not None:
                shutdown()
        self.crash()
        self.kernel.network.close_all_of(self.name, f"{self.name} went down")
        for other in list(self.kernel.nodes.values()):
            if other is not self and other.alive:
                other.disconnected(self.name)

    def crash(self) -> None:
        self.alive = False
        self.incarnation += 1
        for p in self._pending.values():
            self.kernel.cancel(p._timer)
        self._pending.clear()
        self.kernel.cancel_timers_of(self.name)
        self.kernel.release_holds_of(self.name)
        self.on_crash()

    def restart(self) -> None:
        self.alive = True
        self.paused_until = 0
        self.on_restart()

    def on_crash(self) -> None:
        pass

    def on_restart(self) -> None:
        pass
