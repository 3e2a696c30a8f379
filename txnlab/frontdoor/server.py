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

Every bad input gets an error response (400 with a sentence naming the field,
403 for a wrong token, 413 for an oversized body); the cluster never sees it.
"""
from __future__ import annotations

import functools
import json
import os
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional

from ..kernel.node import Node
from . import codec
from .codec import BadRequest

MAX_BODY = 256 * 1024 * 1024
LOOPBACK = ("127.0.0.1", "localhost", "::1")
KERNEL_ENTRY_POINTS = ("step", "run_until", "run_until_idle", "advance", "begin_step", "schedule", "cancel")
CLUSTER_ENTRY_POINTS = ("step", "run_until", "run_until_idle", "advance", "create_topic", "crash", "restart",
                        "drop_next", "delay_next", "duplicate_next", "drop_message", "delay_message",
                        "duplicate_message", "partition", "heal", "pause", "partition_state",
                        "transaction_state")


class RemoteNode(Node):
    """A client process outside the kernel, as a node of the simulated network."""

    def __init__(self, kernel, name: str, label: str) -> None:
        super().__init__(kernel, name)
        self.label = label
        self.crashed = False

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
    return lock


class FrontDoor:
    """One HTTP server thread serving one cluster (see the module docstring)."""

    def __init__(self, cluster, host: str = "127.0.0.1", port: int = 0, token: Optional[str] = None,
                 mode: str = "run", settle_ms: int = 1_000, step_wait_s: float = 600.0) -> None:
        if mode not in ("run", "step"):
            raise ValueError(f"mode must be 'run' or 'step', got {mode!r}")
        self.cluster = cluster
        self.kernel = cluster.kernel
        self.mode = mode
        self.settle_ms = settle_ms
        self.step_wait_s = step_wait_s
        self.token = token or secrets.token_urlsafe(24)
        self.lock = guard(cluster)
        self.nodes: dict[str, RemoteNode] = {}
        self.claims: set = set()
        self.hooks: dict[str, Callable[[Any], Any]] = {}
        self.requests = 0
        self.refused = 0
        self.stats: dict[str, list] = {}      # api -> [requests, seconds in the kernel, seconds in total]
        self._next = 0
        self._names_lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.door = self
        self.host, self.port = self._httpd.server_address[:2]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        name=f"txnlab-frontdoor-{self.port}", daemon=True)
        self._thread.start()
        self.ops = {"hello": self._hello, "connect": self._connect, "request": self._request,
                    "claim": self._claim, "signal": self._signal}

    @property
    def address(self) -> str:
        return f"txnlab://{self.host}:{self.port}/{self.token}"

    def __repr__(self) -> str:
        return f"<FrontDoor {self.host}:{self.port} mode={self.mode} requests={self.requests}>"

    def stop(self) -> None:
        """Close the door (the cluster keeps its lock wrappers; ``cluster.serve()`` opens a new door)."""
        self._httpd.shutdown()
        self._httpd.server_close()
        if getattr(self.cluster, "front_door", None) is self:
            self.cluster.front_door = None

    def on_signal(self, name: str, fn: Optional[Callable[[Any], Any]]) -> None:
        """Run ``fn(data)`` (in the server thread) when a remote process sends signal ``name``."""
        if fn is None:
            self.hooks.pop(name, None)
        else:
            self.hooks[name] = fn

    # ------------------------------------------------------------- dispatch
    def handle(self, token: Optional[str], body: bytes) -> tuple[int, dict]:
        """(HTTP status, JSON reply) for one POST."""
        if token is None or not secrets.compare_digest(token.encode(), self.token.encode()):
            self._refuse("a request without the right token")
            return 403, {"ok": False, "error": "forbidden", "message": "wrong or missing token"}
        try:
            payload = codec.parse_json(body)
            if type(payload) is not dict or type(payload.get("op")) is not str:
                raise BadRequest("the body must be a JSON object with a string 'op'")
            op = self.ops.get(payload["op"])
            if op is None:
                raise BadRequest(f"unknown op {payload['op']!r}; known: {', '.join(self.ops)}")
            return 200, {"ok": True, **op(payload)}
        except BadRequest as e:
            self._refuse(str(e))
            return 400, {"ok": False, "error": "bad_request", "message": str(e)}
        except Exception as e:  # noqa: BLE001 - the door answers; it never takes the kernel down
            self._refuse(f"internal error {type(e).__name__}: {e}")
            return 500, {"ok": False, "error": "internal", "message": f"{type(e).__name__}: {e}"}

    def _refuse(self, why: str) -> None:
        self.refused += 1
        with self.lock:
            self.kernel.record("note", "front-door", f"the front door refused a request: {why}")

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
        principal = self._field(payload, "principal", str, None)
        with self.lock:
            while True:
                self._next += 1
                name = f"remote-{self._next}"
                if name not in self.kernel.nodes:
                    break
            node = RemoteNode(self.kernel, name, label)
            self.nodes[name] = node
            if principal:
                self.cluster.attachment.principals[name] = principal   # what SASL would have told the brokers
            self.kernel.record("note", name, f"{name} connects through the front door: {label} (pid {pid})")
        return {"node": name, "now": self.kernel.now}

    def _request(self, payload: dict) -> dict:
        name = self._field(payload, "node", str)
        node = self.nodes.get(name)
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
        if self.mode == "step" and not done.wait(self.step_wait_s):
            return {"response": None, "error": "REQUEST_TIMED_OUT", "sent": sent, "now": k.now,
                    "crashed": not node.alive}
        if not done.is_set():
            return {"response": None, "error": None, "sent": sent, "now": k.now, "crashed": True}
        err = box["e"]
        return {"response": None if err is not None else codec.encode(box["r"]),
                "error": None if err is None else err.name, "sent": sent, "now": box["t"], "crashed": False}

    def _claim(self, payload: dict) -> dict:
        key = self._field(payload, "key", str)
        with self._names_lock:
            first = key not in self.claims
            self.claims.add(key)
        return {"first": first}

    def _signal(self, payload: dict) -> dict:
        name = self._field(payload, "name", str)
        fn = self.hooks.get(name)
        reply = fn(payload.get("data")) if fn is not None else None
        json.dumps(reply)   # a hook must answer with JSON
        return {"reply": reply, "handled": fn is not None}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "txnlab-frontdoor/1"
    disable_nagle_algorithm = True      # headers and body go out at once: no 40 ms delayed-ACK stalls

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        door: FrontDoor = self.server.door
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self._reply(411, {"ok": False, "error": "length_required", "message": "send a Content-Length"}, close=True)
            return
        n = int(length)
        if n > MAX_BODY:
            self._reply(413, {"ok": False, "error": "too_large", "message": f"the body is over {MAX_BODY} bytes"},
                        close=True)
            return
        body = self.rfile.read(n)
        if self.path != "/v1":
            self._reply(404, {"ok": False, "error": "not_found", "message": "POST /v1"})
            return
        status, reply = door.handle(self.headers.get("X-Txnlab-Token"), body)
        self._reply(status, reply)

    def do_GET(self) -> None:  # noqa: N802
        self._reply(405, {"ok": False, "error": "method", "message": "POST JSON to /v1"})

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET

    def _reply(self, status: int, reply: dict, close: bool = False) -> None:
        data = json.dumps(reply, separators=(",", ":")).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self._headers_buffer.append(b"\r\n")            # end of headers, and the body in the same write
        if self.command != "HEAD":
            self._headers_buffer.append(data)
        self.flush_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - quiet: the trace is the log
        return


def serve(cluster, host: str = "127.0.0.1", port: int = 0, token: Optional[str] = None, mode: str = "run",
          allow_remote: bool = False, **kw) -> FrontDoor:
    """Open (or return the already open) front door of ``cluster``."""
    door = getattr(cluster, "front_door", None)
    if door is not None:
        return door
    if host not in LOOPBACK and not allow_remote and not os.environ.get("TXNLAB_FRONTDOOR_ALLOW_REMOTE"):
        raise ValueError(f"the front door listens on loopback only; host={host!r} needs allow_remote=True")
    door = FrontDoor(cluster, host, port, token, mode, **kw)
    cluster.front_door = door
    return door
