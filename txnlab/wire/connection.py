"""One real client's side of the simulated network: ``WireNode`` (the client, one lane, all its sockets) and
``WireConnection`` (one accepted socket: its buffers and the requests it waits for, answered in order)."""
from __future__ import annotations

import collections
import socket
import threading
from typing import Optional

from ..kernel.node import Node
from . import clock as wall, codec


class _OneChannel(dict):
    """``Node.CHANNELS`` for one send: every API travels on the socket's own connection."""

    def __init__(self, channel: str) -> None:
        super().__init__()
        self.channel = channel

    def get(self, key, default=None):
        return self.channel


class WireNode(Node):
    """A real client outside the kernel (all its sockets), as one node (one lane) of the simulated network."""

    def __init__(self, kernel, name: str, client_id: str, software: str) -> None:
        super().__init__(kernel, name)
        self.client_id = client_id
        self.software = software
        self.role = "client"
        self.crashed = False

    @property
    def label(self) -> str:
        return f"{self.software} {self.role} {self.client_id}"

    def handle_request(self, msg):
        return None

    def send_on(self, channel: str, dst: str, request, callback, timeout_ms: int):
        """``send_request`` on the simulated connection of one socket."""
        self.CHANNELS = _OneChannel(channel)
        try:
            return self.send_request(dst, request, callback, timeout_ms=timeout_ms)
        finally:
            del self.CHANNELS

    def on_crash(self) -> None:
        self.crashed = True


class _Slot:
    """One request read from a socket, waiting for its response bytes (answered in request order)."""

    __slots__ = ("conn", "frame", "api", "data", "msg", "state", "sent", "seq")

    def __init__(self, conn: "WireConnection", frame: codec.Frame, api: str) -> None:
        self.conn = conn
        self.frame = frame
        self.api = api
        self.data: Optional[bytes] = None
        self.msg = None
        self.state = None
        self.sent = 0
        self.seq = 0              # its arrival number at the door (the door's recorded inputs name it so)


class WireConnection:
    """One accepted socket."""

    def __init__(self, door, sock: Optional[socket.socket], broker: int, number: int, peer=None) -> None:
        self.door = door
        self.sock = sock
        self.broker = broker
        self.number = number
        self.channel = f"wire-{number}"
        self.peer = tuple(peer) if peer is not None else sock.getpeername()
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.slots: collections.deque = collections.deque()
        self.node: Optional[WireNode] = None
        self.closing: Optional[str] = None
        self.closed = False
        self.last_active = wall.monotonic()     # (the door's one wall clock: clock.py)
        self.lock = threading.Lock()

    @property
    def dst(self) -> str:
        return self.door.cluster.broker(self.broker).name

    def describe(self) -> str:
        who = self.node.name if self.node is not None else f"{self.peer[0]}:{self.peer[1]}"
        return f"wire connection #{self.number} {who} -> {self.dst}"

    def flush_ready(self) -> None:
        """Move the answered head of the queue to the output buffer (Kafka answers a connection in order)."""
        with self.lock:
            while self.slots and self.slots[0].data is not None:
                self.outbuf += self.slots.popleft().data
