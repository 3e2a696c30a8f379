"""The front door: the in-kernel cluster served on loopback to processes outside the kernel.

Kafka's brokers listen on a socket; our brokers live inside the notebook's
kernel, so ``cluster.serve()`` starts one HTTP server thread (127.0.0.1, an
ephemeral port, a random token) through which other processes -- Spark's
Python workers above all -- reach the simulated network.  Owns: the address
(``txnlab://127.0.0.1:PORT/TOKEN``, used as ``bootstrap.servers``), the token
check, one ``RemoteNode`` per remote client (``remote-<n>``), and turning each
remote request into a message of the simulated network: the server thread
takes the kernel's lock, injects the request with ``node.send_request`` (a
step in the trace, subject to every fault the cluster API arms), runs the
kernel until the response has arrived, lets the cluster settle, and sends the
response back with the simulated times it was sent and answered at.  In ``mode="step"`` it
only injects and then waits for a person (or the notebook) to step the kernel.

The lock: while a door is open, the kernel's and the cluster's entry points
(``step``, ``run_until``, faults, ...) are wrapped with one re-entrant lock, so
a notebook cell that drives the kernel and a remote request never step it at
the same time.  That wrapping, threads and the wall clock live only here; the
engine underneath stays single-threaded and deterministic (remote requests
arrive when they arrive, so a run with remote clients is reproducible only as
far as their order is).

Every bad input gets an error response (400 with a sentence naming the field or
rule, 401 without a token and 403 with a wrong one -- checked before a byte of the
body is read --, 411/400 for a missing or malformed Content-Length, 413 for a body
over ``max_body``, 503 when ``max_connections`` are open or the bodies being read
would pass ``body_budget``); the cluster never sees it and the trace does not
either (``door.refused`` counts refusals, ``door.refusals`` keeps the last few).
Bounded: connections, idle time per connection (``idle_timeout_s``, a socket
timeout), body bytes, remote nodes (``max_nodes``) and claim keys.  ``stop()``
closes every connection, keep-alive ones included, waits for their threads and
releases every remote node; a client that leaves (``release`` op, or every
connection of its session closed for ``linger_s``) has its nodes released.
"""
from __future__ import annotations

import collections
import functools
import ipaddress
import json
import os
import secrets
import socket
import threading
import time
from typing import Any, Callable, Optional

from ..kernel.node import Node
from . import codec
from .codec import BadRequest
from .listener import Refused, open_server

MAX_BODY = 16 * 1024 * 1024          # one request body (a Spark task's batch is far smaller)
BODY_BUDGET = 64 * 1024 * 1024       # all bodies being read at once
MAX_CONNECTIONS = 32
IDLE_TIMEOUT_S = 120.0               # a connection that sends nothing for this long is closed
MAX_NODES = 512                      # remote client nodes connected at once
MAX_CLAIMS = 100_000
MAX_CLAIM_KEY = 512
LINGER_S = 300.0                     # a session with no open connection keeps its nodes this long
KERNEL_ENTRY_POINTS = ("step", "run_until", "run_until_idle", "advance", "begin_step", "schedule", "cancel")
CLUSTER_ENTRY_POINTS = ("step", "run_until", "run_until_idle", "advance", "create_topic", "crash", "restart",
                        "drop_next", "delay_next", "duplicate_next", "drop_message", "delay_message",
                        "duplicate_message", "partition", "heal", "heal_between", "pause", "partition_state",
                        "transaction_state", "shutdown", "move_leader", "note", "add_acl")


class RemoteNode(Node):
    """A client process outside the kernel, as a node of the simulated network."""

    def __init__(self, kernel, name: str, label: str) -> None:
        super().__init__(kernel, name)
        self.label = label
        self.crashed = False
        self.session = ""

    def handle_request(self, msg):
        return None

    def on_crash(self) -> None:
        self.crashed = True


def _locked(lock, fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with lock:
            return fn(*args, **kwargs)
    wrapper.__txnlab_locked__ = True
    return wrapper


def guard(cluster) -> threading.RLock:
    """Wrap the cluster's and its kernel's entry points with one re-entrant lock (once)."""
    lock = getattr(cluster, "_door_lock", None)
    if lock is not None:
        return lock
    lock = threading.RLock()
    for obj, names in ((cluster.kernel, KERNEL_ENTRY_POINTS), (cluster, CLUSTER_ENTRY_POINTS)):
        for name in names:
            fn = getattr(obj, name, None)
            if fn is not None and not getattr(fn, "__txnlab_locked__", False):
                setattr(obj, name, _locked(lock, fn))
    cluster._door_lock = lock
    cluster.attachment.serialize(lock)      # the notebook's own clients' calls, too (txnlab.kernel.attach)
    return lock


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class FrontDoor:
    """One HTTP server thread serving one cluster (see the module docstring)."""

    def __init__(self, cluster, host: str = "127.0.0.1", port: int = 0, token: Optional[str] = None,
                 mode: str = "run", settle_ms: int = 1_000, step_wait_s: float = 600.0, *,
                 max_body: int = MAX_BODY, body_budget: int = BODY_BUDGET, max_connections: int = MAX_CONNECTIONS,
                 idle_timeout_s: float = IDLE_TIMEOUT_S, max_nodes: int = MAX_NODES, max_claims: int = MAX_CLAIMS,
                 linger_s: float = LINGER_S) -> None:
        if mode not in ("run", "step"):
            raise ValueError(f"mode must be 'run' or 'step', got {mode!r}")
        for name, v in (("max_body", max_body), ("body_budget", body_budget), ("max_connections", max_connections),
                        ("max_nodes", max_nodes), ("max_claims", max_claims)):
            if type(v) is not int or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not (isinstance(idle_timeout_s, (int, float)) and idle_timeout_s > 0):
            raise ValueError(f"idle_timeout_s must be a positive number of seconds, got {idle_timeout_s!r}")
        self.cluster = cluster
        self.kernel = cluster.kernel
        self.mode = mode
        self.settle_ms = settle_ms
        self.step_wait_s = step_wait_s
        self.max_body, self.body_budget, self.max_connections = max_body, body_budget, max_connections
        self.idle_timeout_s, self.max_nodes, self.max_claims, self.linger_s = idle_timeout_s, max_nodes, max_claims, linger_s
        self.token = token or secrets.token_urlsafe(24)
        self.lock = guard(cluster)
        self.nodes: dict[str, RemoteNode] = {}
        self.released: collections.OrderedDict = collections.OrderedDict()   # names released (bounded)
        self.claims: set = set()
        self.hooks: dict[str, Callable[[Any], Any]] = {}
        self.requests = 0
        self.refused = 0
        self.refusals: collections.deque = collections.deque(maxlen=20)      # (status, why) of the last few
        self.stats: dict[str, list] = {}      # api -> [requests, seconds in the kernel, seconds in total]
        self._next = 0
        self._names_lock = threading.Lock()
        self._conns: set = set()              # open client sockets
        self._threads: set = set()            # their handler threads
        self._sessions: dict[str, list] = {}  # session -> [open connections, wall time the last one closed]
        self._reading = 0                     # body bytes being read now
        self._closing = False
        self._httpd = open_server(host, port)
        self._httpd.door = self
        self.host, self.port = self._httpd.server_address[:2]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        name=f"txnlab-frontdoor-{self.port}", daemon=True)
        self._thread.start()
        self.ops = {"hello": self._hello, "connect": self._connect, "request": self._request,
                    "claim": self._claim, "signal": self._signal, "release": self._release_op}

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"txnlab://{host}:{self.port}/{self.token}"

    def __repr__(self) -> str:
        return f"<FrontDoor {self.host}:{self.port} mode={self.mode} requests={self.requests}>"

    def stop(self, wait_s: float = 10.0) -> None:
        """Close the door: the listener, every open connection (keep-alive ones too), their threads, and
        every remote node (the cluster keeps its lock wrappers; ``cluster.serve()`` opens a new door)."""
        self._closing = True
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._names_lock:
            conns = list(self._conns)
        for sock in conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + wait_s
        with self._names_lock:
            threads = list(self._threads)
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self._thread.join(max(0.0, deadline - time.monotonic()))
        with self.lock:
            for name in list(self.nodes):
                self._release(name, "the front door closed")
        if getattr(self.cluster, "front_door", None) is self:
            self.cluster.front_door = None

    def on_signal(self, name: str, fn: Optional[Callable[[Any], Any]]) -> None:
        """Run ``fn(data)`` (in the server thread) when a remote process sends signal ``name``."""
        if fn is None:
            self.hooks.pop(name, None)
        else:
            self.hooks[name] = fn

    # ------------------------------------------------------- bookkeeping
    def refuse(self, status: int, why: str) -> None:
        """Count a refusal (never in the trace: a refused request is not an event of the cluster)."""
        with self._names_lock:
            self.refused += 1
            self.refusals.append((status, why[:300]))

    def check_token(self, token: Optional[str]) -> None:
        if token is None:
            raise Refused(401, "unauthorized", "send the door's token in the X-Txnlab-Token header")
        if not secrets.compare_digest(token.encode("utf-8", "replace"), self.token.encode()):
            raise Refused(403, "forbidden", "wrong token")

    def reserve(self, n: int) -> None:
        """Room to read an ``n``-byte body (413 over ``max_body``, 503 over the shared ``body_budget``)."""
        if n > self.max_body:
            raise Refused(413, "too_large", f"the body is {n} bytes, over the door's limit of {self.max_body}")
        with self._names_lock:
            if self._reading + n > self.body_budget:
                raise Refused(503, "busy", f"the door is reading {self._reading} bytes of other bodies; "
                              f"{n} more would pass its budget of {self.body_budget}: try again")
            self._reading += n

    def unreserve(self, n: int) -> None:
        with self._names_lock:
            self._reading -= n

    def opened(self, sock) -> bool:
        """A new connection: False (refuse it) when ``max_connections`` are open or the door is closing."""
        with self._names_lock:
            if self._closing or len(self._conns) >= self.max_connections:
                return False
            self._conns.add(sock)
            return True

    def closed(self, sock, session: Optional[str]) -> None:
        with self._names_lock:
            self._conns.discard(sock)
            s = self._sessions.get(session) if session else None
            if s is not None:
                s[0] -= 1
                s[1] = time.monotonic()
        if session:
            self._reap()

    def joined(self, session: str) -> None:
        with self._names_lock:
            s = self._sessions.setdefault(session, [0, 0.0])
            s[0] += 1

    def _reap(self) -> None:
        """Release the nodes of sessions whose connections have all been closed for ``linger_s``."""
        now = time.monotonic()
        with self._names_lock:
            gone = [sid for sid, (n, t) in self._sessions.items() if n <= 0 and now - t >= self.linger_s]
            for sid in gone:
                del self._sessions[sid]
        if gone:
            with self.lock:
                for name in [n for n, node in self.nodes.items() if node.session in gone]:
                    self._release(name, "its client left (no connection for "
                                  f"{self.linger_s:g} s)")

    def _release(self, name: str, why: str) -> None:
        """Forget a remote node (under the lock): its requests, timers, connections and principal go."""
        node = self.nodes.pop(name, None)
        if node is None:
            return
        self.released[name] = why
        while len(self.released) > 10_000:
            self.released.popitem(last=False)
        if node.alive:
            node.crash()
        self.kernel.network.close_all_of(name, f"{name} was released")
        if self.kernel.nodes.get(name) is node:
            del self.kernel.nodes[name]
        self.cluster.attachment.principals.pop(name, None)

    # ------------------------------------------------------------- dispatch
    def handle(self, token: Optional[str], body: bytes, session: Optional[str] = None) -> tuple[int, dict]:
        """(HTTP status, JSON reply) for one POST."""
        try:
            self.check_token(token)
            payload = codec.parse_json(body)
            if type(payload) is not dict or type(payload.get("op")) is not str:
                raise BadRequest("the body must be a JSON object with a string 'op'")
            op = self.ops.get(payload["op"])
            if op is None:
                raise BadRequest(f"unknown op {payload['op']!r}; known: {', '.join(self.ops)}")
            if payload["op"] == "connect":
                payload["_session"] = session
            return 200, {"ok": True, **op(payload)}
        except Refused as e:
            self.refuse(e.status, e.message)
            return e.status, {"ok": False, "error": e.error, "message": e.message}
        except BadRequest as e:
            self.refuse(400, str(e))
            return 400, {"ok": False, "error": "bad_request", "message": str(e)}
        except RecursionError:
            self.refuse(400, "nested too deeply")
            return 400, {"ok": False, "error": "bad_request", "message": "the body is nested too deeply"}
        except Exception as e:  # noqa: BLE001 - the door answers; it never takes the kernel down
            self.refuse(500, f"internal error {type(e).__name__}: {e}")
            return 500, {"ok": False, "error": "internal", "message": f"{type(e).__name__}: {e}"}

    @staticmethod
    def _field(payload: dict, name: str, typ: type, default: Any = ...) -> Any:
        v = payload.get(name, default)
        if v is ...:
            raise BadRequest(f"{name}: missing")
        if v is not default and (type(v) is not typ):
            raise BadRequest(f"{name}: expected {typ.__name__}, got {type(v).__name__}")
        return v

    # ------------------------------------------------------------------ ops
    def _hello(self, payload: dict) -> dict:
        """What a client learns by dialing: the brokers to bootstrap from and the lab's client switches
        (the cluster's attachment); everything else it asks the brokers with protocol requests."""
        c = self.cluster
        att = c.attachment
        return {"cluster": c.id, "brokers": list(c.broker_ids), "now": self.kernel.now,
                "client_config": {k: v for k, v in att.client_config.items() if type(v) in (int, str, bool)},
                "seed": secrets.randbits(32)}

    def _connect(self, payload: dict) -> dict:
        label = self._field(payload, "label", str, "client")[:200]
        pid = self._field(payload, "pid", int, 0)
        if not 0 <= pid < 2 ** 32:
            raise BadRequest("pid: must be between 0 and 4294967295")
        principal = self._field(payload, "principal", str, None)
        if principal is not None and len(principal) > 256:
            raise BadRequest("principal: at most 256 characters")
        session = payload.get("_session") or ""
        self._reap()
        with self.lock:
            if len(self.nodes) >= self.max_nodes:
                raise Refused(503, "busy", f"{len(self.nodes)} remote clients are connected, the door's limit "
                              f"(max_nodes={self.max_nodes}): close a client first")
            while True:
                self._next += 1
                name = f"remote-{self._next}"
                if name not in self.kernel.nodes:
                    break
            node = RemoteNode(self.kernel, name, label)
            node.session = session
            self.nodes[name] = node
            if principal:
                self.cluster.attachment.principals[name] = principal   # what SASL would have told the brokers
            self.kernel.record("note", name, f"{name} connects through the front door: {label} (pid {pid})")
        return {"node": name, "now": self.kernel.now}

    def _release_op(self, payload: dict) -> dict:
        """A client that is done says so: its node leaves the cluster's kernel."""
        name = self._field(payload, "node", str)
        with self.lock:
            known = name in self.nodes
            self._release(name, "its client closed it")
        return {"released": known}

    def _request(self, payload: dict) -> dict:
        name = self._field(payload, "node", str)
        node = self.nodes.get(name)
        if node is None and name in self.released:
            # the door let it go (the client left, or the door was idle): to the client, its process crashed
            return {"response": None, "error": None, "sent": self.kernel.now, "now": self.kernel.now, "crashed": True}
        if node is None:
            raise BadRequest(f"node: {name!r} is not a connected remote client (op 'connect' first)")
        dst = self._field(payload, "dst", str)
        if dst not in {f"broker-{b}" for b in self.cluster.broker_ids}:
            raise BadRequest(f"dst: {dst!r} is not a broker of this cluster")
        timeout_ms = self._field(payload, "timeout_ms", int, 30_000)
        if not 1 <= timeout_ms <= 3_600_000:
            raise BadRequest("timeout_ms: must be between 1 and 3600000")
        oneway = self._field(payload, "oneway", bool, False)
        t0 = time.perf_counter()
        req = codec.decode_request(payload.get("api"), payload.get("request"))
        if oneway and not (req.API == "Produce" and req.acks == 0):
            raise BadRequest("oneway: only a Produce with acks=0 expects no response")
        box: dict = {}
        done = threading.Event()

        def arrived(resp, err):
            box.update(r=resp, e=err, t=self.kernel.now)
            done.set()
        k = self.kernel
        with self.lock:
            t1 = time.perf_counter()
            self.requests += 1
            if not node.alive:
                return {"response": None, "error": None, "sent": k.now, "now": k.now, "crashed": True}
            k.begin_step("remote", name, f"{name} ({node.label}) sends {req.API} to {dst} through the front door")
            box["sent"] = k.now
            if oneway:
                k.network.send(name, dst, req.API, req, False, 0)
            else:
                node.send_request(dst, req, arrived, timeout_ms=timeout_ms)
            if self.mode == "run":
                if not oneway:
                    k.run_until(lambda: done.is_set() or not node.alive)
                if self.settle_ms:
                    k.run_until(lambda: k.idle, timeout_ms=self.settle_ms)
            t2 = time.perf_counter()
        try:
            return self._outcome(req, node, box, done, oneway)
        finally:
            with self._names_lock:
                st = self.stats.setdefault(req.API, [0, 0.0, 0.0])
                st[0] += 1
                st[1] += t2 - t1
                st[2] += time.perf_counter() - t0

    def _outcome(self, req, node: RemoteNode, box: dict, done: threading.Event, oneway: bool) -> dict:
        """The reply: the response (or the network error) and the simulated times the request was
        sent at and answered at (the remote side's clock moves by the difference)."""
        k = self.kernel
        sent = box.get("sent", k.now)
        if oneway:
            return {"response": None, "error": None, "sent": sent, "now": k.now, "crashed": False}
        if self.mode == "step" and not self._wait(done, node):
            return {"response": None, "error": "REQUEST_TIMED_OUT", "sent": sent, "now": k.now,
                    "crashed": not node.alive}
        if not done.is_set():
            return {"response": None, "error": None, "sent": sent, "now": k.now, "crashed": True}
        err = box["e"]
        # (a request the kernel gave up on: its LocalTimeout marker's label, which the remote side turns back into it)
        return {"response": None if err is not None else codec.encode(box["r"]),
                "error": None if err is None else getattr(err, "label", err.name), "sent": sent, "now": box["t"],
                "crashed": False}

    def _wait(self, done: threading.Event, node: RemoteNode) -> bool:
        """Step mode: wait for the notebook to step the kernel until the answer came (or the door closes)."""
        deadline = time.monotonic() + self.step_wait_s
        while not done.wait(0.05):
            if self._closing or not node.alive or time.monotonic() >= deadline:
                return False
        return True

    def _claim(self, payload: dict) -> dict:
        key = self._field(payload, "key", str)
        if len(key) > MAX_CLAIM_KEY:
            raise BadRequest(f"key: at most {MAX_CLAIM_KEY} characters (got {len(key)})")
        with self._names_lock:
            first = key not in self.claims
            if first and len(self.claims) >= self.max_claims:
                raise Refused(503, "busy", f"the door holds {len(self.claims)} claims, its limit (max_claims)")
            self.claims.add(key)
        return {"first": first}

    def _signal(self, payload: dict) -> dict:
        name = self._field(payload, "name", str)
        fn = self.hooks.get(name)
        reply = fn(payload.get("data")) if fn is not None else None
        json.dumps(reply)   # a hook must answer with JSON
        return {"reply": reply, "handled": fn is not None}


def serve(cluster, host: str = "127.0.0.1", port: int = 0, token: Optional[str] = None, mode: str = "run",
          allow_remote: bool = False, **kw) -> FrontDoor:
    """Open (or return the already open) front door of ``cluster``."""
    door = getattr(cluster, "front_door", None)
    if door is not None:
        return door
    if not isinstance(host, str):
        raise ValueError(f"host must be a string, got {host!r}")
    if not _is_loopback(host) and not allow_remote and not os.environ.get("TXNLAB_FRONTDOOR_ALLOW_REMOTE"):
        raise ValueError(f"the front door listens on loopback only; host={host!r} needs allow_remote=True")
    door = FrontDoor(cluster, host, port, token, mode, **kw)
    cluster.front_door = door
    return door
