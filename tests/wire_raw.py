"""Hand-made Kafka frames on a socket to the wire door (no client library): send one request of a given API
version and read its answer with kio, as a client that asks exactly what the test wants would."""
from __future__ import annotations

import io
import socket
import struct

from kio.serial import entity_reader, entity_writer

from txnlab.wire import codec


def dial(door, broker: int = 0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", door.port_of(broker)))
    s.settimeout(60)
    return s


def frame(api_key: int, version: int, body, cid: int = 7) -> bytes:
    buf = io.BytesIO()
    buf.write(struct.pack(">hhih", api_key, version, cid, 3) + b"raw")
    if type(body).__flexible__:
        buf.write(b"\0")                  # request header v2: no tagged fields
    entity_writer(type(body))(buf, body)
    data = buf.getvalue()
    return struct.pack(">i", len(data)) + data


def _exactly(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        assert chunk, "the door closed the connection"
        out += chunk
    return out


def response(s: socket.socket, api_key: int, version: int):
    """(correlation id, decoded body) of the next answer on ``s``."""
    size = struct.unpack(">i", _exactly(s, 4))[0]
    data = _exactly(s, size)
    cid = struct.unpack_from(">i", data, 0)[0]
    cls = codec.response_type(api_key, version)
    pos = 5 if cls.__flexible__ and api_key != codec.API_VERSIONS else 4     # ApiVersions: response header v0
    return cid, entity_reader(cls)(data, pos)[0]


def ask(door, api_key: int, version: int, broker: int = 0, **fields):
    """The decoded answer to one request ``api_key`` v``version`` built from ``fields``, sent to ``broker``."""
    req = codec.request_type(api_key, version)(**fields)
    with dial(door, broker) as s:
        s.sendall(frame(api_key, version, req))
        return response(s, api_key, version)[1]
