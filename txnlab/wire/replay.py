"""A run with real clients, repeated without them: the wire door's recorded inputs replayed on a fresh cluster.

The engine never reads the wall clock; real clients enter only at the door, and everything the door does to the
simulation is recorded in ``door.inputs``, in order: the door's settings and its epoch, the Unix time of the lab
clock's 0 that converts the clients' timestamps (``open``), a socket accepted (``accept``), the bytes of each request
a client sent (``request``), the requests the door then let the cluster settle on (``settle``), each time the
wall clock moved simulated time on (``advance``: also a ``clock`` step of the trace), and a connection the
socket side closed (``closing``, ``close``) or refused (``refuse``).  ``replay(cluster, inputs)`` feeds the same
inputs, in the same order, to a door without sockets on a cluster built like the first (same seed, config and
topics), so the trace comes out the same, step for step: a run with real clients is reproducible as far as
their arrival order is.  ``inputs_to_jsonl`` / ``inputs_from_jsonl`` carry the inputs to another process.
"""
from __future__ import annotations

import base64
import json
import threading

from .connection import WireConnection
from .listener import WireDoor


class ReplayDoor(WireDoor):
    """A wire door without sockets or thread, driven by recorded inputs (``apply``)."""

    def __init__(self, cluster, opened: dict) -> None:
        if opened.get("kind") != "open":
            raise ValueError("recorded wire inputs start with the door's 'open' entry")
        self._setup(cluster, opened["mode"], opened["settle_ms"], 600.0, opened["max_connections"],
                    opened["request_timeout_ms"], opened["clock"], opened["lead_ms"],
                    opened.get("epoch_ms", 0))     # (recorded before the door kept lab time: 0, no shift)
        self._ports = {int(b): p for b, p in opened["ports"].items()}
        self._thread = threading.current_thread()
        self._by_seq: dict = {}
        self._coalesce = False           # each recorded advance is one clock step, as it was recorded
        self._opened()

    @property
    def open(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def _wake(self) -> None:
        pass

    def apply(self, entry: dict) -> None:
        kind = entry["kind"]
        if kind in ("accept", "refuse"):
            self._input(entry)
        if kind == "accept":
            c = WireConnection(self, None, entry["broker"], entry["conn"], peer=entry["peer"])
            self._numbers = max(self._numbers, c.number)
            self.connections[c.number] = c
        elif kind == "refuse":
            self._refuse(entry["broker"])
        elif kind == "request":
            c = self.connections[entry["conn"]]
            self._input(entry)
            try:
                slot = self._request(c, entry["payload"])
            except Exception as e:  # noqa: BLE001 - as the door's loop does
                self._closing(c, f"{type(e).__name__}: {e}")
                return
            if slot is not None:
                self._by_seq[slot.seq] = slot
        elif kind == "settle":
            slots = [self._by_seq[n] for n in entry["requests"]]
            self._input(entry)
            with self.lock:
                self._settle(slots, entry["until"])
        elif kind == "advance":
            with self.lock:
                self._advance(entry["ms"])
        elif kind == "closing":
            self._closed_by_edge(self.connections[entry["conn"]], entry["why"], entry["quiet"])
        elif kind == "close":
            c = self.connections.get(entry["conn"])
            if c is not None:
                self._close_now(c, entry["why"])
        else:
            raise ValueError(f"unknown wire door input {kind!r}")


def replay(cluster, inputs: list) -> ReplayDoor:
    """Repeat a wire door's recorded ``inputs`` on ``cluster`` (built as the recorded one was: same seed,
    config, topics, and nothing else done to it).  Returns the socketless door (its ``inputs`` are the
    replayed ones)."""
    door = ReplayDoor(cluster, inputs[0])
    for entry in inputs[1:]:
        door.apply(entry)
    return door


def inputs_to_jsonl(inputs: list) -> str:
    """One JSON object a line; request bytes in base64."""
    out = []
    for e in inputs:
        if "payload" in e:
            e = {**e, "payload": base64.b64encode(e["payload"]).decode("ascii")}
        out.append(json.dumps(e, sort_keys=True))
    return "\n".join(out)


def inputs_from_jsonl(text: str) -> list:
    inputs = []
    for line in text.splitlines():
        if line.strip():
            e = json.loads(line)
            if "payload" in e:
                e["payload"] = base64.b64decode(e["payload"])
            inputs.append(e)
    return inputs
