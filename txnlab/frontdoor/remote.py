"""The other side of the front door: txnlab's clients in a process outside the kernel.

A client given ``bootstrap.servers="txnlab://127.0.0.1:PORT/TOKEN"`` attaches
through the kernel's registry (``txnlab.kernel.attach``) like any client; for
that scheme the registry returns a ``RemoteAttachment``: an ``Attachment`` whose
kernel is a private one of this process, whose brokers are the served cluster's,
and whose nodes forward their requests through the front door.  So
``Producer``, ``Consumer`` and ``AdminClient`` run unchanged in a Spark worker,
speaking nothing but protocol messages (CreateTopics included).

Why this design: a client's logic (the Sender, the Fetcher, the transaction
manager, group membership) is written as reactions to events of a kernel --
callbacks, timers, ``kernel.run_until`` in blocking calls.  Rather than a
second, socket-driven copy of that logic, the remote process runs a *private*
``Kernel`` that holds only its client nodes.  A ``RemoteClientNode`` differs
from a ``ClientNode`` in one method: ``send_request`` hands the request to the
front door (a blocking HTTP call on real loopback I/O), where it becomes a
message of the real cluster's network, and schedules the response (or the
network error) as an event of the private kernel at the simulated time the
server reports.  So a client's blocking call (``flush``, ``poll``,
``commit_transaction``) steps its private kernel, and each step that sends
blocks on the network; timers (linger, backoff, request timeouts) keep their
local meaning.  The private clock starts at the cluster's time when a client
is created and then moves by the client's own timers and by each request's
own round trip as the cluster measured it (sent -> answered), so a
``poll(1.0)`` times out after one simulated second of *its* waiting, not
because other processes made the cluster's clock run on in between.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import socket
import threading
from typing import Any, Optional

from ..client.network_client import ClientNode
from ..errors import ConfigException, KafkaError, KafkaException
from ..kernel.attach import Attachment
from ..kernel.kernel import Kernel
from ..protocol.errors import CLOSED_AFTER_TIMEOUT, TIMED_OUT_HERE, Errors
from ..kernel.network import Message
from ..kernel.node import _Pending
from . import codec

ADDRESS = re.compile(r"^txnlab://(?P<host>\[[0-9a-fA-F:]+\]|[A-Za-z0-9.\-]+):(?P<port>\d{1,5})/(?P<token>[A-Za-z0-9_\-]+)$")


class FrontDoorError(KafkaException):
    """The front door refused a call (bad token, malformed request) or cannot be reached."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(KafkaError(KafkaError._TRANSPORT, f"front door: {message}"))
        self.status = status
        self.message = message


def parse_address(address: str) -> tuple[str, int, str]:
    """(host, port, token) of ``txnlab://HOST:PORT/TOKEN``."""
    m = ADDRESS.match(address.strip()) if isinstance(address, str) else None
    if m is None:
        raise ConfigException("bootstrap.servers", f"expected txnlab://HOST:PORT/TOKEN (from cluster.serve()), "
                              f"got {address!r}")
    return m["host"].strip("[]"), int(m["port"]), m["token"]


class Channel:
    """One keep-alive HTTP connection to a front door (reconnects once when it breaks)."""

    def __init__(self, host: str, port: int, token: str, timeout_s: float = 600.0) -> None:
        self.host, self.port, self.token, self.timeout_s = host, port, token, timeout_s
        self._conn: Optional[http.client.HTTPConnection] = None
        self._lock = threading.Lock()
        self.session = secrets.token_hex(8)      # the door releases this process's nodes when it has left

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
            self._conn.connect()
            self._conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self._conn

    def call(self, payload: dict) -> dict:
        body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
        headers = {"Content-Type": "application/json", "X-Txnlab-Token": self.token, "X-Txnlab-Session": self.session}
        with self._lock:
            for attempt in (1, 2):
                try:
                    conn = self._connection()
                    conn.request("POST", "/v1", body, headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    if resp.getheader("Connection", "").lower() == "close":
                        self.close()
                    break
                except (OSError, http.client.HTTPException) as e:
                    self.close()
                    if attempt == 2:
                        raise FrontDoorError(0, f"cannot reach {self.host}:{self.port}: {e}") from None
        try:
            reply = json.loads(data)
        except ValueError:
            raise FrontDoorError(resp.status, f"a reply that is not JSON (HTTP {resp.status})") from None
        if resp.status != 200 or not reply.get("ok"):
            raise FrontDoorError(resp.status, reply.get("message", f"HTTP {resp.status}"))
        return reply

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class RemoteClientNode(ClientNode):
    """A client's node in the private kernel: requests go through the front door."""

    def __init__(self, kernel, name: str, bootstrap: list, owner, remote: "RemoteAttachment") -> None:
        super().__init__(kernel, name, bootstrap, owner)
        self.remote = remote

    def send_request(self, dst: str, request: Any, callback, timeout_ms: Optional[int] = None,
                     background: bool = False) -> Message:
        k = self.kernel
        if timeout_ms is None:
            timeout_ms = self.timeouts[request.API]     # the client dialect's rule (ClientNode.send_request)
        self._next_correlation += 1
        cid = self._next_correlation
        m = Message(-cid, self.name, dst, request.API, request, k.now, k.now, False, cid, background, k.step_count)
        self._pending[cid] = _Pending(dst, request.API, callback, None, m)
        outcome = self.remote.forward(self.name, dst, request, timeout_ms)
        # the request's own round trip in the cluster's time (not what others made the clock do before)
        delay = max(1, outcome.get("now", 0) - outcome.get("sent", 0))
        self.set_timer(delay, f"{request.API} response from {dst}", lambda: self._arrive(cid, m, outcome),
                       background=background)
        return m

    def _arrive(self, cid: int, m: Message, outcome: dict) -> None:
        if outcome.get("crashed"):
            self.kernel.narrate(f"{self.name} was crashed in the cluster")
            self.crash()
            return
        p = self._pending.pop(cid, None)
        if p is None:
            return
        err = outcome.get("error")
        if err is None:
            p.callback(outcome["response"], None)
        else:
            p.callback(None, _LOCAL.get(err) or (Errors[err] if err in Errors.__members__ else Errors.NETWORK_EXCEPTION))

    def send_oneway(self, dst: str, request: Any) -> None:
        self.remote.forward(self.name, dst, request, 30_000, oneway=True)


# a request the cluster's kernel gave up on, or failed with the connection it closed then: the door sends the
# LocalTimeout marker's label, and the client reports it as its dialect does (dialect.LOCAL_TIMEOUT)
_LOCAL = {m.label: m for m in (TIMED_OUT_HERE, CLOSED_AFTER_TIMEOUT)}


class _ForwardingNetwork:
    """The private kernel's network: a client sends acks=0 Produce requests with network.send."""

    def __init__(self, inner, kernel) -> None:
        self._inner = inner
        self._kernel = kernel

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def send(self, src, dst, api, payload, is_response, correlation_id, background=False):
        node = self._kernel.nodes.get(src)
        if dst not in self._kernel.nodes and isinstance(node, RemoteClientNode) and not is_response:
            node.send_oneway(dst, payload)
            return Message(0, src, dst, api, payload, self._kernel.now, self._kernel.now, False,
                           correlation_id, background, self._kernel.step_count)
        return self._inner.send(src, dst, api, payload, is_response, correlation_id, background)


class RemoteAttachment(Attachment):
    """What a client sees of a cluster served by a front door in another process: a private kernel,
    the served brokers, and the lab's client switches (``client_config``) as the door reports them."""

    _connected: dict = {}
    _connect_lock = threading.Lock()

    @classmethod
    def connect(cls, address: str) -> "RemoteAttachment":
        """One RemoteAttachment per address and process (clients of one process share a private kernel)."""
        key = (address.strip(), os.getpid())
        with cls._connect_lock:
            rc = cls._connected.get(key)
            if rc is None:
                rc = cls._connected[key] = cls(address)
            return rc

    def __init__(self, address: str) -> None:
        host, port, token = parse_address(address)
        channel = Channel(host, port, token)
        info = channel.call({"op": "hello"})
        kernel = Kernel(info["seed"], latency_ms=1)
        kernel.trace.enabled = False
        kernel.network.keep_history = False
        kernel.network = _ForwardingNetwork(kernel.network, kernel)
        kernel.now = info["now"]
        super().__init__(address.strip(), kernel, [f"broker-{b}" for b in info["brokers"]],
                         info.get("client_config", {}))
        self.bootstrap = self.address
        self.channel = channel
        self.id = info["cluster"]
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<RemoteAttachment {self.id} via {self.channel.host}:{self.channel.port}>"

    def attach(self, name: str, owner, node_class=None, principal: Optional[str] = None) -> RemoteClientNode:
        """Connect a node at the front door (it names it ``remote-<n>`` in the cluster) and make its local
        twin here, whose requests go through the door."""
        reply = self.channel.call({"op": "connect", "label": str(name), "pid": os.getpid(), "principal": principal})
        node = RemoteClientNode(self.kernel, reply["node"], list(self.brokers), owner, self)
        self.kernel.now = max(self.kernel.now, reply["now"])
        self.clients[node.name] = owner
        return node

    def release(self, node) -> None:
        """Forget a client that is done (a Spark task's producer): its node and timers leave the
        private kernel, so a long-lived worker process does not accumulate them."""
        name = getattr(node, "name", node)
        if self.kernel.nodes.get(name) is node or not isinstance(node, RemoteClientNode):
            self.kernel.cancel_timers_of(name)
            self.kernel.nodes.pop(name, None)
            self.clients.pop(name, None)
            try:
                self.channel.call({"op": "release", "node": name})     # and its node in the cluster goes too
            except FrontDoorError:
                pass                                                   # the door is gone: nothing is held

    def forward(self, node: str, dst: str, request: Any, timeout_ms: int, oneway: bool = False) -> dict:
        """Send one request through the front door; the outcome with the response decoded."""
        payload = {"op": "request", "node": node, "dst": dst, "timeout_ms": int(max(1, min(timeout_ms, 3_600_000))),
                   "api": request.API, "request": codec.encode(request)}
        if oneway:
            payload["oneway"] = True
        try:
            reply = self.channel.call(payload)
        except FrontDoorError as e:
            if e.status == 0:          # the door is unreachable: like a broken connection
                return {"response": None, "error": "NETWORK_EXCEPTION", "now": self.kernel.now}
            raise
        if reply.get("response") is not None:
            reply["response"] = codec.decode(reply["response"], "response")
        return reply

    # -------------------------------------------------- helpers for txnlab.spark
    def claim(self, key: str) -> bool:
        """True the first time anyone (any process) claims ``key`` at this front door."""
        return bool(self.channel.call({"op": "claim", "key": key})["first"])

    def signal(self, name: str, data: Any = None) -> Any:
        """Tell the kernel side something happened; returns what its hook answered (or None)."""
        return self.channel.call({"op": "signal", "name": name, "data": data}).get("reply")
