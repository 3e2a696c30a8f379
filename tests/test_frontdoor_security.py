"""Attacks on the front door: each gets a clear refusal, the kernel keeps serving, nothing is lost, and the
trace (the cluster's story) records none of them."""
from __future__ import annotations

import http.client
import json
import socket
import threading
import time

import pytest

from txnlab import Cluster, Producer
from txnlab.frontdoor import parse_address
from txnlab.frontdoor.server import FrontDoor
from helpers import values_in_log


@pytest.fixture
def door():
    threads = threading.active_count()
    cluster = Cluster(brokers=3, seed=5)
    cluster.create_topic("t", partitions=1, replication_factor=3)
    _produce(cluster, b"before")
    d = FrontDoor(cluster, max_body=64 * 1024, body_budget=256 * 1024, max_connections=4, idle_timeout_s=30,
                  max_nodes=3, max_claims=5)
    cluster.front_door = d
    yield cluster, d
    d.stop()
    assert threading.active_count() <= threads, "the door left threads behind"


def _produce(cluster, value: bytes) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    p.produce("t", value=value, partition=0)
    assert p.flush(30) == 0


def raw(d: FrontDoor, head: bytes, body: bytes = b"", read: bool = True):
    """Send bytes on a new socket; (status, reply) of the answer."""
    s = socket.create_connection((d.host, d.port), timeout=30)
    s.sendall(head + body)
    if not read:
        return s
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    header, _, rest = data.partition(b"\r\n\r\n")
    status = int(header.split()[1])
    length = int([h.split(b":")[1] for h in header.split(b"\r\n") if h.lower().startswith(b"content-length")][0])
    while len(rest) < length:
        rest += s.recv(65536)
    s.close()
    return status, json.loads(rest[:length])


def post(d: FrontDoor, body: bytes, token: str | None = "", length: str | None = None, path: str = "/v1"):
    h = f"POST {path} HTTP/1.1\r\nHost: x\r\n"
    if token is not None:
        h += f"X-Txnlab-Token: {d.token if token == '' else token}\r\n"
    h += f"Content-Length: {len(body) if length is None else length}\r\n\r\n"
    return raw(d, h.encode(), body)


def still_serving(cluster, d: FrontDoor) -> None:
    """The kernel and the door keep working, and nothing written before is lost."""
    status, reply = post(d, json.dumps({"op": "hello"}).encode())
    assert status == 200 and reply["ok"]
    _produce(cluster, b"after")
    assert values_in_log(cluster, "t", 0)[:1] == [b"before"] and values_in_log(cluster, "t", 0)[-1] == b"after"


def no_trace_of_refusals(cluster) -> None:
    assert not any("refused a request" in e.text or "front door refused" in e.text for e in cluster.trace)


def test_the_token_is_checked_before_the_body_is_read(door):
    cluster, d = door
    # a huge Content-Length with a wrong token: refused at once, the body never read (the answer comes back
    # although the 50 MB were never sent)
    status, reply = post(d, b"", token="wrong", length=str(50 * 1024 * 1024))
    assert status == 403 and reply["error"] == "forbidden"
    status, reply = post(d, b"{}", token=None)
    assert status == 401 and "token" in reply["message"]
    assert d.refused == 2
    no_trace_of_refusals(cluster)
    still_serving(cluster, d)


def test_oversized_bodies_get_413_and_bad_lengths_400(door):
    cluster, d = door
    status, reply = post(d, b"", length=str(d.max_body + 1))
    assert status == 413 and str(d.max_body) in reply["message"]
    status, reply = post(d, b"", length="\u00b2".encode().decode("latin-1"))       # '²': isdigit() but no number
    assert status == 400 and "Content-Length" in reply["message"]
    status, reply = post(d, b"", length="-5")
    assert status == 400
    no_trace_of_refusals(cluster)
    still_serving(cluster, d)


@pytest.mark.parametrize("body, words", [
    (b"[" * 30_000 + b"]" * 30_000, "nested too deeply"),
    (b'{"op": "hello", "x": ' + b"9" * 5000 + b"}", "digits"),
    (b'{"op": "claim", "key": ' + b"[" * 70 + b"1" + b"]" * 70 + b"}", "nested too deeply"),
])
def test_deep_nesting_and_huge_integers_are_400_not_500(door, body, words):
    cluster, d = door
    status, reply = post(d, body)
    assert status == 400 and words in reply["message"], reply
    no_trace_of_refusals(cluster)
    still_serving(cluster, d)


def test_too_many_connections_get_503_and_idle_ones_are_closed(door):
    cluster, d = door
    idle = [socket.create_connection((d.host, d.port), timeout=30) for _ in range(d.max_connections)]
    deadline = time.monotonic() + 30
    while len(d._conns) < d.max_connections and time.monotonic() < deadline:
        time.sleep(0.01)
    status, reply = post(d, json.dumps({"op": "hello"}).encode())
    assert status == 503 and str(d.max_connections) in reply["message"]
    for s in idle:
        s.close()
    while d._conns and time.monotonic() < deadline:
        time.sleep(0.01)
    still_serving(cluster, d)
    # an idle connection is closed after idle_timeout_s (a socket timeout), freeing its thread
    d.idle_timeout_s = 0.2
    s = socket.create_connection((d.host, d.port), timeout=30)
    assert s.recv(10) == b""          # the door closed it
    s.close()
    no_trace_of_refusals(cluster)


def test_stop_closes_keep_alive_connections_and_releases_remote_nodes(door):
    cluster, d = door
    conn = http.client.HTTPConnection(d.host, d.port, timeout=30)
    headers = {"X-Txnlab-Token": d.token, "X-Txnlab-Session": "s1"}
    conn.request("POST", "/v1", json.dumps({"op": "connect", "label": "keep-alive"}), headers)
    node = json.loads(conn.getresponse().read())["node"]
    assert node in cluster.kernel.nodes
    d.stop()
    with pytest.raises((OSError, http.client.HTTPException)):
        conn.request("POST", "/v1", json.dumps({"op": "hello"}), headers)
        conn.getresponse().read()
    assert node not in cluster.kernel.nodes and not d.nodes
    assert cluster.front_door is None
    _produce(cluster, b"after")                    # the cluster is fine without its door


def test_a_departed_client_has_its_nodes_released_and_nodes_are_bounded(door):
    cluster, d = door
    d.linger_s = 0
    conn = http.client.HTTPConnection(d.host, d.port, timeout=30)
    headers = {"X-Txnlab-Token": d.token, "X-Txnlab-Session": "gone-soon"}
    conn.request("POST", "/v1", json.dumps({"op": "connect", "label": "leaves"}), headers)
    node = json.loads(conn.getresponse().read())["node"]
    conn.close()                                   # the process left
    deadline = time.monotonic() + 30
    while node in d.nodes and time.monotonic() < deadline:
        time.sleep(0.01)
    assert node not in d.nodes and node not in cluster.kernel.nodes
    # a request for a released node: to its client, its process crashed (not an error of the door)
    status, reply = post(d, json.dumps({"op": "request", "node": node, "dst": "broker-0", "api": "Metadata",
                                        "request": {"$m": "MetadataRequest", "f": {}}}).encode())
    assert status == 200 and reply["crashed"] is True
    names = []
    for _ in range(d.max_nodes):
        status, reply = post(d, json.dumps({"op": "connect"}).encode())
        names.append(reply["node"])
    status, reply = post(d, json.dumps({"op": "connect"}).encode())
    assert status == 503 and "max_nodes" in reply["message"]
    status, reply = post(d, json.dumps({"op": "release", "node": names[0]}).encode())
    assert status == 200 and reply["released"] and names[0] not in cluster.kernel.nodes
    assert post(d, json.dumps({"op": "connect"}).encode())[0] == 200
    still_serving(cluster, d)


def test_claims_are_bounded_in_number_and_key_length(door):
    cluster, d = door
    assert post(d, json.dumps({"op": "claim", "key": "k" * 10_000}).encode())[0] == 400
    for i in range(d.max_claims):
        assert post(d, json.dumps({"op": "claim", "key": f"k{i}"}).encode())[1]["first"]
    status, reply = post(d, json.dumps({"op": "claim", "key": "one-more"}).encode())
    assert status == 503
    assert post(d, json.dumps({"op": "claim", "key": "k0"}).encode())[1]["first"] is False
    no_trace_of_refusals(cluster)


def test_create_topics_with_huge_partition_counts_is_a_policy_violation(door):
    from txnlab.admin import AdminClient, NewTopic
    cluster, d = door
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    fut = admin.create_topics([NewTopic("huge", 10_001, 1)])["huge"]
    with pytest.raises(Exception) as e:
        fut.result()
    assert "POLICY_VIOLATION" in str(e.value) or "Excessively large" in str(e.value)
    assert "huge" not in cluster.topics()
    with pytest.raises(Exception, match="10000"):
        cluster.create_topic("huge", partitions=10**9)
    still_serving(cluster, d)


def test_the_door_binds_exactly_where_it_says():
    threads = threading.active_count()
    cluster = Cluster(brokers=1, seed=2)
    try:
        addr = cluster.serve(host="::1")
    except ValueError as e:                 # a machine without IPv6 loopback: a clear refusal
        assert "::1" in str(e)
    else:
        host, port, _ = parse_address(addr)
        assert addr.startswith("txnlab://[::1]:") and host == "::1"
        assert cluster.front_door.host == "::1"
        s = socket.create_connection(("::1", port), timeout=30)
        s.close()
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=5)
        from txnlab.frontdoor import RemoteAttachment
        assert list(RemoteAttachment(addr).brokers) == ["broker-0"]
        cluster.front_door.stop()
    with pytest.raises(ValueError, match="loopback"):
        Cluster(brokers=1, seed=1).serve(host="10.1.2.3")
    with pytest.raises(ValueError, match="cannot listen"):
        Cluster(brokers=1, seed=1).serve(host="127.0.0.1", port=70000)
    assert threading.active_count() <= threads
