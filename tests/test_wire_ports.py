"""A new lab's door never takes a port an earlier door of the process had: a client of a closed lab keeps
reconnecting to its old ports (librdkafka and Java retry for minutes, and Spark keeps its Kafka producers in
a cache for ten), and on a reused port it would reach the new lab and create its topics there with its
Metadata request.  Seen once in CI: a topic "out" from an earlier test appeared in franz-go's lab."""
from __future__ import annotations

import socket

import pytest

from txnlab.cluster import Cluster
from txnlab.wire import listener


def test_a_new_door_is_not_given_a_port_an_earlier_door_had_even_when_the_system_offers_it(monkeypatch):
    first = Cluster(brokers=3, seed=1).listen()
    old = {first.port_of(b) for b in (0, 1, 2)}
    first.close()
    offered = []

    def the_system_offers_the_old_ports_first() -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        unoffered = sorted(old - set(offered))
        port = unoffered[0] if unoffered else 0
        s.bind((listener.LOOPBACK, port))
        offered.append(s.getsockname()[1])
        return s

    monkeypatch.setattr(listener, "_loopback_socket", the_system_offers_the_old_ports_first)
    second = Cluster(brokers=3, seed=1).listen()
    try:
        new = {second.port_of(b) for b in (0, 1, 2)}
        assert set(offered[:3]) == old              # the old ports were offered first, and refused
        assert len(new) == 3 and not new & old
        assert second.bootstrap_servers == ",".join(f"127.0.0.1:{second.port_of(b)}" for b in (0, 1, 2))
    finally:
        second.close()


class _Bound:
    def __init__(self, port: int):
        self.port, self.closed = port, False

    def getsockname(self):
        return ("127.0.0.1", self.port)

    def close(self):
        self.closed = True


def test_ports_are_asked_for_again_until_a_fresh_one_comes_and_a_system_with_none_left_is_an_error(monkeypatch):
    monkeypatch.setattr(listener, "_PORTS_TAKEN", {40001, 40002})
    handed = [_Bound(40001), _Bound(40002), _Bound(40003)]
    got = listener.unused_port_socket(lambda: handed.pop(0))
    assert got.port == 40003 and not got.closed
    assert 40003 in listener._PORTS_TAKEN
    with pytest.raises(OSError, match="no ephemeral port left"):
        listener.unused_port_socket(lambda: _Bound(40001), tries=5)


def test_a_port_for_a_real_broker_is_never_a_doors_and_no_door_takes_it_later(monkeypatch):
    door = Cluster(brokers=1, seed=1).listen()
    old = door.port_of(0)
    door.close()
    offered = iter([old])

    def the_system_offers_the_door_port_first() -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((listener.LOOPBACK, next(offered, 0)))
        return s

    monkeypatch.setattr(listener, "_loopback_socket", the_system_offers_the_door_port_first)
    port = listener.fresh_port()
    assert port != old and port in listener._PORTS_TAKEN
    offered = iter([port])
    later = Cluster(brokers=1, seed=1).listen()
    try:
        assert later.port_of(0) not in (old, port)
    finally:
        later.close()
