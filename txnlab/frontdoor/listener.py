"""The front door's listener: HTTP/1.1 on one socket, one thread per connection, every socket and thread
known to the door (``server.FrontDoor``), which decides what is served.

Owns the connection limit (a connection over ``door.max_connections`` gets a 503 at once, no thread), the
idle timeout (a socket timeout per connection), the order of the checks before a body is read (path, token,
Content-Length in ASCII digits, size and the shared body budget), and quiet failure (no traceback).
"""
from __future__ import annotations

import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

LENGTH = re.compile(r"[0-9]{1,12}")  # ASCII digits only ('\u00b2'.isdigit() is True)


class Refused(Exception):
    """A request the door answers with an HTTP error (never reaching the cluster)."""

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error, self.message = status, error, message


class _Server(ThreadingHTTPServer):
    """The listener: one thread per connection, at most ``door.max_connections`` of them; every socket and
    thread is known, so ``stop()`` can close and join them all."""

    daemon_threads = True
    block_on_close = False

    def process_request(self, request, client_address) -> None:
        door = self.door
        if not door.opened(request):
            door.refuse(503, "too many connections")
            _refuse_raw(request, 503, {"ok": False, "error": "busy", "message":
                                       f"the door serves at most {door.max_connections} connections at once"})
            self.shutdown_request(request)
            return
        t = threading.Thread(target=self.process_request_thread, args=(request, client_address),
                             name=f"txnlab-frontdoor-{door.port}-conn", daemon=True)
        with door._names_lock:
            door._threads.add(t)
        t.start()

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.door._names_lock:
                self.door._threads.discard(threading.current_thread())

    def handle_error(self, request, client_address) -> None:
        return                                  # a connection that broke: quiet, no traceback on the notebook's stderr


def _refuse_raw(sock, status: int, reply: dict) -> None:
    """Answer a connection the door will not serve (read what it sent first, so the answer is not reset)."""
    data = json.dumps(reply).encode()
    try:
        sock.settimeout(0.5)
        try:
            sock.recv(65536)
        except OSError:
            pass
        sock.sendall(f"HTTP/1.1 {status} Refused\r\nContent-Type: application/json\r\nContent-Length: {len(data)}"
                     f"\r\nConnection: close\r\n\r\n".encode() + data)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def open_server(host: str, port: int) -> _Server:
    """Listen exactly at ``host`` (an IPv6 literal on an IPv6 socket) or say why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    cls = type("_Server6" if family == socket.AF_INET6 else "_Server4", (_Server,), {"address_family": family})
    try:
        return cls((host, port), _Handler)
    except (OSError, OverflowError) as e:
        raise ValueError(f"the front door cannot listen at host={host!r} port={port!r}: {e}") from None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "txnlab-frontdoor/1"
    disable_nagle_algorithm = True      # headers and body go out at once: no 40 ms delayed-ACK stalls
    session: Optional[str] = None

    def setup(self) -> None:
        self.timeout = self.server.door.idle_timeout_s       # a socket timeout: idle connections are closed
        super().setup()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.door.closed(self.connection, self.session)

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        door = self.server.door
        try:
            if self.path != "/v1":
                raise Refused(404, "not_found", "POST /v1")
            door.check_token(self.headers.get("X-Txnlab-Token"))          # before a byte of the body is read
            length = self.headers.get("Content-Length")
            if length is None:
                raise Refused(411, "length_required", "send a Content-Length")
            if not LENGTH.fullmatch(length.strip()):
                raise Refused(400, "bad_request", "Content-Length must be a number of bytes (ASCII digits)")
            n = int(length)
            door.reserve(n)
        except Refused as e:
            door.refuse(e.status, e.message)
            self._reply(e.status, {"ok": False, "error": e.error, "message": e.message}, close=True)
            return
        try:
            body = self.rfile.read(n)
        finally:
            door.unreserve(n)
        if len(body) < n:
            self.close_connection = True
            return
        session = self.headers.get("X-Txnlab-Session")
        if session and self.session is None and len(session) <= 64:
            self.session = session
            door.joined(session)
        status, reply = door.handle(self.headers.get("X-Txnlab-Token"), body, self.session)
        self._reply(status, reply)

    def do_GET(self) -> None:  # noqa: N802
        self._reply(405, {"ok": False, "error": "method", "message": "POST JSON to /v1"})

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET

    def _reply(self, status: int, reply: dict, close: bool = False) -> None:
        data = json.dumps(reply, separators=(",", ":")).encode("utf-8")
        try:
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
        except OSError:
            self.close_connection = True                  # the client (or stop()) closed the connection

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - quiet: the trace is the log
        return


