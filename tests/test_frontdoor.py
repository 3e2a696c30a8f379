"""The front door: the in-kernel cluster served on loopback, and txnlab's clients outside the kernel."""
from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import time

import pytest

from txnlab import Cluster, Consumer, KafkaException, Producer
from txnlab.frontdoor import FrontDoorError, RemoteAttachment, codec, parse_address
from txnlab.spark.io import Link
from helpers import values_in_log


@pytest.fixture
def served():
    cluster = Cluster(brokers=3, seed=5)
    cluster.create_topic("t", partitions=2, replication_factor=3)
    addr = cluster.serve()
    yield cluster, addr
    cluster.front_door.stop()


def post(addr: str, body: bytes, token: str | None = "", headers: dict | None = None):
    """(status, reply) of one raw POST to the front door."""
    host, port, real = parse_address(addr)
    conn = http.client.HTTPConnection(host, port, timeout=60)
    h = {"Content-Type": "application/json", **(headers or {})}
    if token is not None:
        h["X-Txnlab-Token"] = real if token == "" else token
    conn.request("POST", "/v1", body, h)
    resp = conn.getresponse()
    reply = json.loads(resp.read())
    conn.close()
    return resp.status, reply


def call(addr: str, payload: dict, token: str | None = ""):
    return post(addr, json.dumps(payload).encode(), token)


def connected_node(addr: str) -> str:
    status, reply = call(addr, {"op": "connect", "label": "raw test client"})
    assert status == 200
    return reply["node"]


def test_serve_returns_a_loopback_address_with_a_token(served):
    cluster, addr = served
    host, port, token = parse_address(addr)
    assert addr.startswith("txnlab://127.0.0.1:") and port > 0 and len(token) >= 24
    assert cluster.serve() == addr                         # one door per cluster
    with pytest.raises(ValueError, match="loopback"):
        Cluster(brokers=1, seed=1).serve(host="0.0.0.0")


def test_a_producer_and_a_consumer_in_another_process_work_unchanged(served):
    cluster, addr = served
    script = r"""
import json, sys
from txnlab import Producer, Consumer, TopicPartition
addr = sys.argv[1]
p = Producer({"bootstrap.servers": addr, "transactional.id": "outside"})
p.init_transactions()
p.begin_transaction()
for i in range(10):
    p.produce("t", key=b"k%d" % i, value=b"committed-%d" % i)
p.commit_transaction()
p.begin_transaction()
for i in range(5):
    p.produce("t", key=b"k%d" % i, value=b"aborted-%d" % i)
p.flush()
p.abort_transaction()
seen = {}
for level in ("read_committed", "read_uncommitted"):
    c = Consumer({"group.id": "lab-reader", "enable.auto.commit": False, "bootstrap.servers": addr, "isolation.level": level})
    c.assign([TopicPartition("t", 0, 0), TopicPartition("t", 1, 0)])
    values = []
    while True:
        m = c.poll(1.0)
        if m is None:
            break
        if m.error() is None:
            values.append(m.value().decode())
    seen[level] = sorted(values)
print(json.dumps(seen))
"""
    run = subprocess.run([sys.executable, "-c", script, addr], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["read_committed"] == sorted(f"committed-{i}" for i in range(10))
    assert len(seen["read_uncommitted"]) == 15          # the aborted records are in the log too
    in_log = values_in_log(cluster, "t", 0) + values_in_log(cluster, "t", 1)
    assert sorted(v.decode() for v in in_log if v.startswith(b"committed")) == seen["read_committed"]
    # every remote request was a message of the simulated network, in the trace
    remote = [msg for msg in cluster.network_messages() if msg.src.startswith("remote-")]
    apis = {msg.api for msg in remote}
    assert {"InitProducerId", "AddPartitionsToTxn", "Produce", "EndTxn", "Fetch"} <= apis
    assert all(msg.state == "delivered" for msg in remote)
    steps = [e for e in cluster.trace if e.kind == "remote"]
    assert any("sends EndTxn" in e.text for e in steps)
    assert any(e.kind == "deliver" and e.api == "EndTxn" and e.is_response and e.dst.startswith("remote-")
               for e in cluster.trace)
    assert cluster.transaction_state("outside")["state"] in ("CompleteAbort", "PrepareAbort")


def test_faults_armed_in_the_kernel_hit_remote_requests(served):
    cluster, addr = served
    cluster.drop_next("Produce", response=True)        # the broker appends, the answer is lost
    p = Producer({"bootstrap.servers": addr, "client.id": "remote-idempotent", "enable.idempotence": True})
    for i in range(20):
        p.produce("t", value=b"v%d" % i, partition=0)
    assert p.flush(60) == 0
    values = values_in_log(cluster, "t", 0)
    assert sorted(values) == sorted(b"v%d" % i for i in range(20))   # retried, deduplicated: no copy
    dropped = [msg for msg in cluster.network_messages() if msg.state == "dropped"]
    assert dropped and dropped[0].api == "Produce" and dropped[0].dst.startswith("remote-")


def test_a_remote_client_crashed_from_the_notebook_learns_it_crashed(served):
    cluster, addr = served
    p = Producer({"bootstrap.servers": addr})
    p.produce("t", value=b"before", partition=0)
    p.flush()
    cluster.crash(p._node.name)                          # the same name in the kernel as outside
    p.produce("t", value=b"after", partition=0)
    p.flush(5)
    with pytest.raises(KafkaException, match="crashed"):
        p.produce("t", value=b"again", partition=0)
    assert values_in_log(cluster, "t", 0) == [b"before"]


@pytest.mark.parametrize("body, status, words", [
    (b"\x00\xff\xfe garbage", 400, "UTF-8"),
    (b"{not json", 400, "not JSON"),
    (b"[1, 2, 3]", 400, "JSON object"),
    (json.dumps({"op": "reboot"}).encode(), 400, "unknown op"),
    (json.dumps({"op": "request", "node": "remote-999", "dst": "broker-0", "api": "Metadata",
                 "request": {"$m": "MetadataRequest", "f": {}}}).encode(), 400, "not a connected"),
    (b'{"op": "hello", "x": NaN}', 400, "NaN"),
])
def test_malformed_bodies_get_error_responses(served, body, status, words):
    cluster, addr = served
    got, reply = post(addr, body)
    assert got == status and not reply["ok"] and words in reply["message"]


def _request(node: str, api: str, request, dst: str = "broker-0") -> dict:
    return {"op": "request", "node": node, "dst": dst, "api": api, "request": request}


def _produce_body(records: dict, **header) -> dict:
    batch = {"base_offset": -1, "partition_leader_epoch": -1, "producer_id": -1, "producer_epoch": -1,
             "base_sequence": -1, "log_append_time": -1, "is_transactional": False, "is_control": False,
             **header, **records}
    return {"$m": "ProduceRequest", "f": {"transactional_id": None, "acks": -1, "timeout_ms": 30000,
                                          "topic_data": {"$d": [[{"$t": ["t", 0]}, {"$rb": batch}]]}}}


GOOD_RECORDS = {"k": "", "kl": [-1], "v": "aGk=", "vl": [2], "ts": [0]}


@pytest.mark.parametrize("api, request_body, words", [
    ("Shutdown", {"$m": "MetadataRequest", "f": {}}, "unknown API"),
    ("LeaderAndIsr", {"$m": "LeaderAndIsrRequest", "f": {}}, "not a client API"),
    ("WriteTxnMarkers" if False else "AlterPartition", {"$m": "AlterPartitionRequest", "f": {}}, "not a client API"),
    ("Metadata", {"$m": "MetadataRequest", "f": {"topics": "t"}}, "expected a tuple"),
    ("Metadata", {"$m": "MetadataRequest", "f": {"topics": {"$t": [1]}}}, "expected a string"),
    ("Metadata", {"$m": "MetadataRequest", "f": {"topicz": None}}, "no field 'topicz'"),
    ("Metadata", {"$m": "FetchRequest", "f": {}}, "needs the field"),
    ("Metadata", {"$m": "os.system", "f": {}}, "unknown message class"),
    ("Metadata", {"$x": 1}, "must be one of the tags"),
    ("Fetch", {"$m": "FetchRequest", "f": {"replica_id": "-1", "max_wait_ms": 0, "min_bytes": 1,
                                          "isolation_level": 0, "partitions": {"$d": []}}}, "expected an integer"),
    ("Fetch", {"$m": "FetchRequest", "f": {"replica_id": 1, "max_wait_ms": 0, "min_bytes": 1,
                                          "isolation_level": 0, "partitions": {"$d": []}}}, "only followers"),
    ("Fetch", {"$m": "FetchRequest", "f": {"replica_id": -1, "max_wait_ms": 0.5, "min_bytes": 1,
                                          "isolation_level": 0, "partitions": {"$d": []}}}, "fraction"),
    ("Fetch", {"$m": "FetchRequest", "f": {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1,
                                          "isolation_level": 0, "partitions": {"$d": [[{"$t": ["t", -1]},
                                          {"$m": "FetchPartition", "f": {"fetch_offset": 0}}]]}}}, "outside"),
    ("Produce", _produce_body({**GOOD_RECORDS, "v": "%%%"}), "not valid base64"),
    ("Produce", _produce_body({**GOOD_RECORDS, "vl": [2, 2]}), "lengths"),
    ("Produce", _produce_body({**GOOD_RECORDS, "vl": [5]}), "add up to 5 bytes"),
    ("Produce", _produce_body({**GOOD_RECORDS, "vl": [True]}), "length must be an integer"),
    ("Produce", _produce_body(GOOD_RECORDS, is_control=True), "control batches"),
    ("Produce", _produce_body({"k": "", "kl": [], "v": "", "vl": [], "ts": []}), "at least one record"),
    ("Produce", _produce_body(GOOD_RECORDS, producer_epoch=10 ** 30), "digits"),
    ("AddPartitionsToTxn", {"$m": "AddPartitionsToTxnRequest", "f": {
        "transactions": {"$t": [{"$m": "AddPartitionsToTxnTransaction", "f": {
            "transactional_id": "x", "producer_id": 1, "producer_epoch": 0, "partitions": {"$t": []}}}]}}},
     "only a partition leader"),
])
def test_wrong_requests_are_refused_field_by_field_and_the_cluster_keeps_working(served, api, request_body, words):
    cluster, addr = served
    node = connected_node(addr)
    steps = cluster.kernel.step_count
    status, reply = call(addr, _request(node, api, request_body))
    assert status == 400 and words in reply["message"], reply
    assert cluster.kernel.step_count == steps               # nothing reached the simulated network
    assert not any("refused" in e.text for e in cluster.trace)    # a refusal is not an event of the cluster
    assert cluster.front_door.refused and words in cluster.front_door.refusals[-1][1]
    # the cluster still works, in the kernel and through the door
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    p.produce("t", value=b"still fine", partition=1)
    assert p.flush(30) == 0
    assert Link(addr).partitions("t") == 2


def test_wrong_token_and_missing_length_are_refused(served):
    cluster, addr = served
    assert call(addr, {"op": "hello"}, token="not-the-token")[0] == 403
    assert call(addr, {"op": "hello"}, token=None)[0] == 401
    host, port, token = parse_address(addr)
    wrong = addr.rsplit("/", 1)[0] + "/" + "x" * 32
    with pytest.raises(FrontDoorError, match="token"):
        RemoteAttachment(wrong)
    conn = http.client.HTTPConnection(host, port, timeout=60)
    conn.putrequest("POST", "/v1")
    conn.putheader("X-Txnlab-Token", token)
    conn.endheaders()
    assert conn.getresponse().status == 411
    assert call(addr, {"op": "hello"})[0] == 200


def test_a_valid_raw_request_gets_its_response_and_the_server_clock(served):
    cluster, addr = served
    node = connected_node(addr)
    status, reply = call(addr, _request(node, "Produce", _produce_body(GOOD_RECORDS), dst=f"broker-{cluster.leader('t', 0)}"))
    assert status == 200 and reply["error"] is None and reply["now"] == cluster.clock
    response = codec.decode(reply["response"])
    assert response.responses[("t", 0)].error == 0
    assert values_in_log(cluster, "t", 0) == [b"hi"]


def test_every_message_of_a_transactional_run_survives_the_codec():
    cluster = Cluster(brokers=3, seed=3)
    cluster.create_topic("t", partitions=2, replication_factor=3)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "codec"})
    p.init_transactions()
    p.begin_transaction()
    for i in range(30):
        p.produce("t", key=b"%d" % i, value=b"v" * i, headers=[("h", b"1"), ("n", None)])
    p.commit_transaction()
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
    c.subscribe(["t"])
    for _ in range(10):
        c.poll(0.5)
    payloads = [msg.payload for msg in cluster.network_messages()]
    assert len(payloads) > 100
    for payload in payloads:
        assert codec.loads(codec.dumps(payload)) == payload


def test_step_mode_waits_for_the_notebook_to_step_the_kernel():
    cluster = Cluster(brokers=1, seed=2)
    cluster.create_topic("t", partitions=1, replication_factor=1)
    addr = cluster.serve(mode="step")
    result = {}
    worker = threading.Thread(target=lambda: result.update(n=Link(addr).partitions("t")))
    worker.start()
    stepped = 0
    while worker.is_alive():
        if cluster.kernel.network.in_flight():
            cluster.step()
            stepped += 1
        else:
            time.sleep(0.001)
    worker.join()
    assert result["n"] == 1 and stepped >= 2
    cluster.front_door.stop()
