"""The wire door: Kafka's binary protocol on loopback, one listener per broker, into the simulated network.

``cluster.listen()`` opens one TCP listener per broker on 127.0.0.1 (ephemeral ports) and returns a
``WireDoor`` whose ``bootstrap_servers`` a real client (librdkafka via confluent-kafka, kafka-python,
aiokafka) is given.  Metadata and FindCoordinator answer with those ``host:port``s, so a client talks to
the broker that leads a partition and reconnects to the right one after a leader moves.

Each accepted socket is one connection of the simulated network (``channel`` ``wire-<n>``) from a node that
stands for the client (``WireNode``, named by its ``client.id``, labelled with the software it reported in
ApiVersions v3+ and what it does: "confluent-kafka-python producer copier-1").  Every request read from the
socket is injected as a ``remote`` step: a message on that connection, in order, one in service at a time
at the broker, subject to every fault the lab applies.  Its response is written back when the simulation
has produced it (in request order, as Kafka answers a connection).  A lost connection, a request timeout
or a crashed broker closes the socket: the client sees a disconnect and retries by its own rules.

One I/O thread (``selectors``) accepts, reads, injects and writes for all sockets.  In ``mode="run"`` it
then drives the kernel until the responses exist and lets the cluster settle (as the HTTP door does); in
``mode="step"`` it only injects: the requests wait until a person (or the notebook) steps the kernel, and
``pending()`` says which connection holds which request.  The kernel's and cluster's entry points are
wrapped with the HTTP door's re-entrant lock (``frontdoor.server.guard``), so the notebook and the door
never step at once.  Threads, sockets and the wall clock live only in this package.

With ``clock="wall"`` simulated time follows the wall clock: the requests' own work may move it at most
``lead_ms`` ahead, and each time the wall clock moves it is a ``clock`` step of the trace.  Everything the door
does to the simulation is recorded in ``door.inputs``; ``txnlab.wire.replay`` repeats a run from them.

Bad input never reaches the engine: an unknown API key, an API version the door does not speak (other than
ApiVersions, which answers UNSUPPORTED_VERSION as Kafka does), a frame that kio cannot read, a negative or
oversized size prefix close the connection with a trace note; a corrupt batch gets CORRUPT_MESSAGE on its
partition; an idle connection is closed after ``idle_timeout_s``.  Nothing is unpickled or evaluated.

A door never listens on a port an earlier door of the same process listened on.  A client of a closed lab (a
producer left from a cell run before, a Spark job's cached producer) keeps reconnecting to that lab's ports for
minutes; on a reused port it would reach the new lab, and its Metadata request would create its topics there.
"""
from __future__ import annotations

import selectors
import socket
import struct
import threading
import time
from typing import Optional

from ..frontdoor.server import guard
from ..protocol.errors import Errors
from ..protocol.names import looks_like_server
from . import clock as wall, codec
from .apis import ADMIN_APIS, CONSUMER_APIS, PRODUCER_APIS, TABLE
from .apis_data import api_versions_body, topic_names_by_id
from .clock import WallClock
from .connection import WireConnection, WireNode, _Slot

LOOPBACK = "127.0.0.1"


_PORTS_TAKEN: set[int] = set()      # every port a door of this process has listened on
_PORTS_LOCK = threading.Lock()


def _loopback_socket() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((LOOPBACK, 0))
    return s


def unused_port_socket(bound, tries: int = 100) -> socket.socket:
    """A socket from ``bound()`` (a new socket bound to an ephemeral port) on a port no door of this process
    has had; the operating system's choices that were are closed and asked again."""
    with _PORTS_LOCK:
        for _ in range(tries):
            s = bound()
            port = s.getsockname()[1]
            if port not in _PORTS_TAKEN:
                _PORTS_TAKEN.add(port)
                return s
            s.close()
    raise OSError(f"no ephemeral port left that an earlier door of this process did not use ({tries} tries)")


def fresh_port() -> int:
    """A free loopback port no door of this process has listened on, now taken for good: for another server the
    process starts (the tests' real Kafka brokers), which a client of a closed lab must not reach either."""
    s = unused_port_socket(_loopback_socket)
    port = s.getsockname()[1]
    s.close()
    return port


class WireDoor(WallClock):
    """The listeners of one cluster (see the module docstring).  ``with cluster.listen() as door:`` ..."""

    def __init__(self, cluster, mode: str = "run", settle_ms: int = 5_000, idle_timeout_s: float = 600.0,
                 max_connections: int = 4_096, request_timeout_ms: int = 30_000, clock: str = "wall",
                 lead_ms: int = 1_000) -> None:
        if mode not in ("run", "step"):
            raise ValueError(f"mode must be 'run' or 'step', got {mode!r}")
        if clock not in ("wall", "requests"):
            raise ValueError(f"clock must be 'wall' (simulated time follows the wall clock while idle) or "
                             f"'requests' (only requests move it), got {clock!r}")
        self._setup(cluster, mode, settle_ms, idle_timeout_s, max_connections, request_timeout_ms, clock, lead_ms)
        self._listeners: dict[int, socket.socket] = {}
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        for b in cluster.broker_ids:
            s = unused_port_socket(_loopback_socket)
            s.listen(128)
            s.setblocking(False)
            self._listeners[b] = s
            self._ports[b] = s.getsockname()[1]
            self._sel.register(s, selectors.EVENT_READ, ("listener", b))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"txnlab-wire-{self.bootstrap_servers}",
                                        daemon=True)
        self._opened()
        self._thread.start()

    def _setup(self, cluster, mode, settle_ms, idle_timeout_s, max_connections, request_timeout_ms, clock,
               lead_ms, epoch_ms=None) -> None:
        """The door's state, without sockets (a replay builds a door from this alone)."""
        self.clock = clock
        self.cluster = cluster
        self.kernel = cluster.kernel
        self.mode = mode
        self.settle_ms = settle_ms
        self.idle_timeout_s = idle_timeout_s
        self.max_connections = max_connections
        self.request_timeout_ms = request_timeout_ms
        self.host = LOOPBACK
        self.answering: Optional[int] = None    # the broker whose answer is being encoded (_answer)
        self.asking: Optional[str] = None       # the node whose request is being decoded (_request)
        self.lock = guard(cluster)
        self.requests = 0
        self.refused = 0
        self.error: Optional[BaseException] = None     # what stopped the I/O thread, if anything did but close()
        self.connections: dict[int, WireConnection] = {}
        self.nodes: dict[tuple, WireNode] = {}
        self._numbers = 0
        self._arrivals = 0
        self._ports: dict[int, int] = {}
        self._start_clock(lead_ms, epoch_ms)
        # one clock on the cluster: the lab's own clients attached from now on read times as the real ones do
        cluster.attachment.client_config["sim.clock.epoch.ms"] = self.epoch_ms

    def _opened(self) -> None:
        self._input({"kind": "open", "ports": {str(b): p for b, p in sorted(self._ports.items())},
                     "mode": self.mode, "clock": self.clock, "settle_ms": self.settle_ms, "lead_ms": self.lead_ms,
                     "request_timeout_ms": self.request_timeout_ms, "max_connections": self.max_connections,
                     "epoch_ms": self.epoch_ms})
        with self.lock:
            self.kernel.record("note", "wire-door", f"Kafka's wire protocol is open at {self.bootstrap_servers} "
                                                    f"(mode {self.mode})")

    # ---------------------------------------------------------------- face
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{self.host}:{p}" for _, p in sorted(self._ports.items()))

    def port_of(self, broker_id: int) -> Optional[int]:
        return self._ports.get(broker_id)

    def supported(self, transaction_version: Optional[int] = None) -> dict:
        tv = self.cluster.broker_config["transaction.version"] if transaction_version is None else transaction_version
        return codec.versions(tv)

    def topic_name(self, tid) -> Optional[str]:
        return topic_names_by_id(self, [tid])[tid]

    def __repr__(self) -> str:
        return (f"<WireDoor bootstrap.servers={self.bootstrap_servers} mode={self.mode} "
                f"connections={len(self.connections)} requests={self.requests}"
                f"{'' if self.error is None else f' stopped by {type(self.error).__name__}: {self.error}'}>")

    def __str__(self) -> str:
        return f"bootstrap.servers={self.bootstrap_servers}"

    def __enter__(self) -> "WireDoor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def open(self) -> bool:
        return self._thread.is_alive()

    def close(self) -> None:
        """Close every socket and listener and stop the I/O thread (waits for it)."""
        self._stop.set()
        self._wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=30)
        if getattr(self.cluster, "wire_door", None) is self:
            self.cluster.wire_door = None

    def pending(self) -> list[dict]:
        """The requests real clients are waiting for, connection by connection, oldest first: only the head
        of a connection can be answered next (Kafka answers a connection in order)."""
        rows = []
        for c in list(self.connections.values()):
            with c.lock:
                slots = list(c.slots)
            for i, s in enumerate(slots):
                if s.data is not None:
                    continue
                m = s.msg
                rows.append({"connection": c.number, "client": c.node.label if c.node else "?",
                             "node": c.node.name if c.node else None, "broker": c.dst, "api": s.api,
                             "correlation_id": s.frame.correlation_id, "msg_id": m.id if m is not None else None,
                             "state": m.state if m is not None else "reading", "head": i == 0})
        return rows

    def step_until(self, done, max_steps: int = 1_000_000) -> int:
        """Step mode, from the notebook: step the kernel whenever a real client waits for an answer, until
        ``done()`` (e.g. the client's call returned); the number of steps taken."""
        steps = 0
        while not done() and steps < max_steps:
            if self.pending():
                self.cluster.step()
                steps += 1
            else:
                time.sleep(0.005)
        return steps

    def note(self, text: str, what: str = "note") -> None:
        with self.lock:
            self.kernel.record("note", "wire-door", f"the wire door {what}: {text}")

    # ---------------------------------------------------------------- loop
    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def _loop(self) -> None:
        last_idle_check = wall.monotonic()
        try:
            while not self._stop.is_set():
                try:
                    events = self._sel.select(timeout=0.01 if self.mode == "run" and self.clock == "wall" else 0.25)
                except OSError:
                    events = []
                injected = []
                for key, mask in events:
                    data = key.data
                    try:
                        if data == "wake":
                            try:
                                while self._wake_r.recv(4096):
                                    pass
                            except (BlockingIOError, OSError):
                                pass
                        elif isinstance(data, tuple):
                            self._accept(key.fileobj, data[1])
                        else:
                            if mask & selectors.EVENT_READ:
                                injected += self._read(data)
                    except Exception as e:  # noqa: BLE001 - one bad socket never stops the door
                        if isinstance(data, WireConnection):
                            self._closed_by_edge(data, f"{type(e).__name__}: {e}")
                if injected and self.mode == "run":
                    self._drive(injected)
                if self.mode == "run" and self.clock == "wall":
                    self._pump()
                now = wall.monotonic()
                if now - last_idle_check > 1.0:
                    last_idle_check = now
                    for c in list(self.connections.values()):
                        if not c.slots and now - c.last_active > self.idle_timeout_s:
                            self._closed_by_edge(c, f"idle for more than {self.idle_timeout_s:g} s "
                                             f"(connections.max.idle.ms)")
                self._write_all()
        except Exception as e:     # the door stops (its clients see their connections close) and says why
            self.error = e
            self.kernel.record("note", "wire-door", f"the wire door stopped: {type(e).__name__}: {e}")
            raise
        finally:
            for c in list(self.connections.values()):
                self._close_now(c, "the door closed")
            for s in self._listeners.values():
                self._unregister(s)
                s.close()
            self._unregister(self._wake_r)
            self._wake_r.close()
            self._wake_w.close()
            self._sel.close()

    def _unregister(self, sock) -> None:
        try:
            self._sel.unregister(sock)
        except (KeyError, ValueError, OSError):
            pass

    def _accept(self, lsock: socket.socket, broker: int) -> None:
        while True:
            try:
                sock, _ = lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            if len(self.connections) >= self.max_connections:
                sock.close()
                self._input({"kind": "refuse", "broker": broker})
                self._refuse(broker)
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._numbers += 1
            c = WireConnection(self, sock, broker, self._numbers)
            self._input({"kind": "accept", "conn": c.number, "broker": broker, "peer": list(c.peer)})
            self.connections[c.number] = c
            self._sel.register(sock, selectors.EVENT_READ, c)

    def _refuse(self, broker: int) -> None:
        self.refused += 1
        self.note(f"a connection to broker {broker} was closed at once: {self.max_connections} are open "
                  f"(max.connections)", "refused")

    def _read(self, c: WireConnection) -> list:
        if c.closing or c.closed:
            return []
        try:
            chunk = c.sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError as e:
            self._closed_by_edge(c, f"the socket failed ({e})", quiet=True)
            return []
        if not chunk:
            self._closed_by_edge(c, "the client closed the connection", quiet=True)
            return []
        c.last_active = wall.monotonic()
        c.inbuf += chunk
        injected = []
        while len(c.inbuf) >= 4:
            (size,) = struct.unpack_from(">i", c.inbuf, 0)
            if size < codec._HEAD.size or size > codec.MAX_FRAME:
                self._closed_by_edge(c, f"a frame size of {size} bytes is outside 8..{codec.MAX_FRAME} "
                                 f"(socket.request.max.bytes)")
                return injected
            if len(c.inbuf) < 4 + size:
                break
            payload = bytes(c.inbuf[4:4 + size])
            del c.inbuf[:4 + size]
            self._input({"kind": "request", "conn": c.number, "payload": payload})
            slot = self._request(c, payload)
            if c.closing:
                return injected
            if slot is not None:
                injected.append(slot)
        return injected

    # ------------------------------------------------------------ requests
    def _request(self, c: WireConnection, payload: bytes) -> Optional[_Slot]:
        supported = self.supported()
        try:
            frame = codec.parse_frame(payload, supported)
        except codec.FrameError as e:
            self._closing(c, str(e))
            return None
        name = supported[frame.api_key][0]
        slot = _Slot(c, frame, name)
        self._arrivals += 1
        slot.seq = self._arrivals
        with c.lock:
            c.slots.append(slot)
        if frame.body is None:
            lo, hi = supported[frame.api_key][1:]
            if frame.api_key == codec.API_VERSIONS:
                # KIP-511: an ApiVersions the broker does not speak is answered in v0 with UNSUPPORTED_VERSION
                cls = codec.response_type(codec.API_VERSIONS, 0)
                slot.data = codec.encode_response(codec.API_VERSIONS, False, frame.correlation_id,
                                                  api_versions_body(cls, supported, Errors.UNSUPPORTED_VERSION, 0))
                self.note(f"ApiVersions v{frame.api_version} from {c.describe()} -> UNSUPPORTED_VERSION "
                          f"(this door speaks v{lo}..v{hi})", "answered")
                c.flush_ready()
                return None
            self._closing(c, f"{name} v{frame.api_version} is not a version this door speaks (v{lo}..v{hi})")
            return None
        decode, _ = TABLE[frame.api_key]
        with self.lock:
            node = self._node_for(c, frame)
            self.asking = node.name             # whose principal a decoder asks the authorizer about
            try:
                req, slot.state = decode(frame.body, frame.api_version, self)
            except Exception as e:  # noqa: BLE001 - a request the engine's messages cannot express
                self._closing(c, f"{name} v{frame.api_version} could not be translated: {type(e).__name__}: {e}")
                return None
            self.requests += 1
            if req is None:
                self._answer(c, slot, None)
                return None
            k = self.kernel
            k.begin_step("remote", node.name, f"{node.name} ({node.label}) sends {name} v{frame.api_version} to "
                                              f"{c.dst} on wire connection #{c.number}")
            if frame.api_key == 0 and req.acks == 0:
                slot.msg = k.network.send(node.name, c.dst, req.API, req, False, 0, channel=c.channel)
                slot.data = b""            # acks=0: Kafka sends no response
                c.flush_ready()
                return None
            slot.sent = k.now
            timeout = self.request_timeout_ms + _request_wait_ms(req)

            def arrived(resp, err, c=c, slot=slot):
                self._arrived(c, slot, resp, err)
            slot.msg = node.send_on(c.channel, c.dst, req, arrived, timeout)
        return slot

    def _node_for(self, c: WireConnection, frame: codec.Frame) -> WireNode:
        if c.node is None:
            client_id = frame.client_id or "client"
            software = "kafka-client"
            if frame.api_key == codec.API_VERSIONS and frame.body is not None:
                software = getattr(frame.body, "client_software_name", None) or software
            key = (client_id, software)
            node = self.nodes.get(key)
            if node is None or (not node.alive):
                name = client_id
                n = 1
                while looks_like_server(name) or self.kernel.is_server(name) or name in self.kernel.nodes:
                    n += 1
                    name = f"{client_id}-{n}"
                node = WireNode(self.kernel, name, client_id, software)
                self.nodes[key] = node
                self.kernel.record("note", name, f"{name} connects through the wire door: {software} client "
                                                 f"client.id={client_id!r}")
            c.node = node
        node = c.node
        if node.role == "client":
            if frame.api_key in PRODUCER_APIS:
                node.role = "producer"
            elif frame.api_key in CONSUMER_APIS:
                node.role = "consumer"
            elif frame.api_key in ADMIN_APIS:
                node.role = "admin"
        return node

    def _arrived(self, c: WireConnection, slot: _Slot, resp, err) -> None:
        """The simulation answered (a kernel callback, on whichever thread steps the kernel)."""
        try:
            if c.closed or c.closing:
                return
            if err is not None:
                self._closing(c, f"{slot.api} failed in the simulation with {err.name}: the client sees a disconnect")
                return
            self._answer(c, slot, resp)
        except Exception as e:  # noqa: BLE001 - never raise into the kernel's step
            self._closing(c, f"answering {slot.api} failed: {type(e).__name__}: {e}")

    def _answer(self, c: WireConnection, slot: _Slot, resp) -> None:
        f = slot.frame
        _, encode = TABLE[f.api_key]
        cls = codec.response_type(f.api_key, f.api_version)
        self.answering = c.broker          # whose view an encoder reads (Fetch's leader hints)
        body = encode(resp, f.body, f.api_version, slot.state, self, cls)
        slot.data = codec.encode_response(f.api_key, f.flexible, f.correlation_id, body)
        c.flush_ready()
        if threading.current_thread() is not self._thread:
            self._wake()

    def _drive(self, slots: list) -> None:
        """Run mode: step the kernel through the foreground work the requests started (their delivery,
        the appends, replication, markers) until the cluster is idle again.  What legitimately waits
        (a long-polling Fetch, a JoinGroup waiting for the other members, acks=all behind a slow follower)
        is answered as simulated time passes with the wall clock (``_pump``), as the real client expects.

        With ``clock="wall"`` the requests' work may move simulated time ahead of the wall clock by at most
        ``lead_ms`` (the pump then lets the wall clock catch up before moving it further): a timer further
        away (a group's initial rebalance delay, a session timeout) fires when the wall clock gets there, so
        the real client's own timers (heartbeats, retries) keep the meaning they have against Kafka."""
        k = self.kernel
        with self.lock:
            if k.driver is not None:
                return                       # a stepper drives this kernel: the requests wait for it
            until = None if self.clock != "wall" else k.now + max(0, min(self.settle_ms, self.lead_ms - self._lead))
            self._input({"kind": "settle", "requests": [s.seq for s in slots], "until": until})
            self._settle(slots, until)

    def _settle(self, slots: list, until: Optional[int]) -> None:
        k = self.kernel

        def done() -> bool:
            return k.idle and all(s.data is not None or s.conn.closing or _parked(s) for s in slots)
        if until is None:
            k.run_until(done, timeout_ms=self.settle_ms)
            return
        before = k.now
        steps = 0
        while not done() and steps < 500_000:
            t = k.next_event_time()
            if t is None or t > until:
                break
            k.step()
            steps += 1
        self._lead += k.now - before

    # --------------------------------------------------------------- close
    def _closed_by_edge(self, c: WireConnection, why: str, quiet: bool = False) -> None:
        """The socket side decided to close (the client hung up, a bad size prefix, idle): a recorded input."""
        if c.closing or c.closed:
            return
        self._input({"kind": "closing", "conn": c.number, "why": why, "quiet": quiet})
        self._closing(c, why, quiet)

    def _closing(self, c: WireConnection, why: str, quiet: bool = False) -> None:
        if c.closing or c.closed:
            return
        c.closing = why
        if not quiet:
            self.refused += 1
            self.note(f"closed {c.describe()}: {why}", "closed a connection")
        if threading.current_thread() is not self._thread:
            self._wake()

    def _close_now(self, c: WireConnection, why: str) -> None:
        if c.closed:
            return
        self._input({"kind": "close", "conn": c.number, "why": why})
        c.closed = True
        c.closing = c.closing or why
        if c.sock is not None:
            self._unregister(c.sock)
            try:
                c.sock.close()
            except OSError:
                pass
        self.connections.pop(c.number, None)
        node = c.node
        if node is not None:
            with self.lock:
                net = self.kernel.network
                for sc in net.connections():
                    if sc.client == node.name and sc.channel == c.channel:
                        for p in node._pending_on(sc):      # nobody reads these answers any more
                            self.kernel.cancel(p.timeout_event)
                        net.close(sc, f"the client's socket closed ({c.closing})", by_client=True)

    def _write_all(self) -> None:
        for c in list(self.connections.values()):
            if c.closed:
                continue
            if c.outbuf:
                try:
                    with c.lock:
                        n = c.sock.send(c.outbuf)
                        del c.outbuf[:n]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError as e:
                    self._closed_by_edge(c, f"the socket failed ({e})", quiet=True)
            if c.closing and not c.outbuf:
                self._close_now(c, c.closing)
            elif c.closing and c.outbuf and c.closing.startswith("the client closed"):
                self._close_now(c, c.closing)
            else:
                want = selectors.EVENT_READ | (selectors.EVENT_WRITE if c.outbuf else 0)
                try:
                    if self._sel.get_key(c.sock).events != want:
                        self._sel.modify(c.sock, want, c)
                except (KeyError, ValueError, OSError):
                    pass


def _parked(slot: _Slot) -> bool:
    """The broker holds this request on purpose (it was delivered and is being served): a long poll."""
    m = slot.msg
    return m is not None and m.state in ("delivered", "waiting")


def _request_wait_ms(req) -> int:
    """How long the broker may legitimately hold this request before answering (simulated ms)."""
    return int(getattr(req, "max_wait_ms", 0) or getattr(req, "timeout_ms", 0) or
               getattr(req, "rebalance_timeout_ms", 0) or 0)


def listen(cluster, mode: str = "run", **kw) -> WireDoor:
    """Open (or return the already open) wire door of ``cluster``."""
    door = getattr(cluster, "wire_door", None)
    if door is not None and door.open:
        return door
    door = WireDoor(cluster, mode=mode, **kw)
    cluster.wire_door = door
    return door
