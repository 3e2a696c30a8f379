"""The admin client speaks the protocol: CreateTopics, DeleteTopics and DescribeConfigs are requests on the
simulated network (forwarded by a broker to the controller), errors come back with Kafka's codes, the same
calls work through the front door, and no client module reaches into the cluster, brokers or logs."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from txnlab import Cluster, KafkaException, Producer
from txnlab.admin import AdminClient, ConfigResource, ConfigSource, NewTopic
from txnlab.kernel import attach
from helpers import values_in_log

CLIENT_DIR = Path(__file__).resolve().parent.parent / "txnlab" / "client"


def admin_of(c: Cluster, **conf) -> AdminClient:
    return AdminClient({"bootstrap.servers": c.bootstrap, **conf})


def error_of(future) -> tuple:
    e = future.exception()
    return (e.error.name(), e.error.code()) if e is not None else None


def apis_between(c: Cluster, a: str, b: str) -> list:
    return [(msg.api, msg.is_response) for msg in c.network_messages() if {msg.src, msg.dst} == {a, b}]


def test_create_topics_is_a_request_a_broker_forwards_to_the_controller():
    c = Cluster(brokers=3, seed=4)
    admin = admin_of(c)
    assert admin.create_topics([NewTopic("orders", 3, 3)])["orders"].result() is None
    sent = [msg for msg in c.network_messages() if msg.api == "CreateTopics"]
    to_broker = [msg for msg in sent if msg.src == admin.name and not msg.is_response]
    assert len(to_broker) == 1 and to_broker[0].dst.startswith("broker-")
    broker = to_broker[0].dst
    assert [(msg.src, msg.dst, msg.is_response) for msg in sent] == [
        (admin.name, broker, False), (broker, "controller", False), ("controller", broker, True),
        (broker, admin.name, True)]
    assert any("forwards CreateTopics" in e.narration for e in c.trace)
    assert any("controller created topic orders" in e.narration for e in c.trace)
    assert c.topics() == ["orders"] and len(c.partition_state("orders", 2)["isr"]) == 3
    # the topic is usable right away (clients learn the leaders with Metadata)
    p = Producer({"bootstrap.servers": c.bootstrap})
    p.produce("orders", value=b"first", partition=1)
    assert p.flush(10) == 0
    assert values_in_log(c, "orders", 1) == [b"first"]


def test_create_topics_errors_carry_kafkas_codes_per_topic():
    c = Cluster(brokers=3, seed=1)
    c.create_topic("exists", partitions=1, replication_factor=1)
    admin = admin_of(c)
    got = admin.create_topics([NewTopic("exists", 1, 1), NewTopic("too-many-copies", 1, 4),
                               NewTopic("no partitions", 1, 1), NewTopic("zero", 0, 1),
                               NewTopic("strict", 1, 1, config={"min.insync.replicas": 2}), NewTopic("fine", 2, 2)])
    assert error_of(got["exists"]) == ("TOPIC_ALREADY_EXISTS", 36)
    assert error_of(got["too-many-copies"]) == ("INVALID_REPLICATION_FACTOR", 38)
    assert error_of(got["no partitions"]) == ("TOPIC_EXCEPTION", 17)
    assert error_of(got["zero"]) == ("INVALID_PARTITIONS", 37)
    # min.insync.replicas above the replication factor: Kafka's CreateTopics accepts it (LogConfig checks only
    # the compaction lags); acks=all writes then need every replica (Partition.effectiveMinIsr)
    assert got["strict"].result() is None
    assert got["fine"].result() is None
    assert c.topics() == ["exists", "fine", "strict"]
    refused = [e for e in c.trace if "controller refused to create topic 'too-many-copies'" in e.narration]
    assert refused and "INVALID_REPLICATION_FACTOR" in refused[0].narration


def test_validate_only_checks_without_creating():
    c = Cluster(brokers=1, seed=2)
    admin = admin_of(c)
    assert admin.create_topics([NewTopic("dry", 1, 1)], validate_only=True)["dry"].result() is None
    assert error_of(admin.create_topics([NewTopic("dry", 1, 2)], validate_only=True)["dry"]) == \
        ("INVALID_REPLICATION_FACTOR", 38)
    assert c.topics() == []
    assert any("(validate only)" in e.text for e in c.trace if e.api == "CreateTopics")


def test_delete_topics_removes_the_partitions_from_every_replica():
    c = Cluster(brokers=3, seed=6)
    admin = admin_of(c)
    admin.create_topics([NewTopic("gone", 2, 3), NewTopic("kept", 1, 3)])
    p = Producer({"bootstrap.servers": c.bootstrap})
    p.produce("gone", value=b"x", partition=0)
    p.flush(10)
    got = admin.delete_topics(["gone", "never-was"])
    assert got["gone"].result() is None
    assert error_of(got["never-was"]) == ("UNKNOWN_TOPIC_OR_PART", 3)
    c.run_until_idle()
    assert c.topics() == ["kept"]
    assert all(tp[0] != "gone" for b in c.brokers for tp in c.broker(b).logs)
    assert any(msg.api == "StopReplica" for msg in c.network_messages())
    assert "gone" not in admin.list_topics().topics
    assert sum(1 for msg in c.network_messages() if msg.api == "DeleteTopics" and not msg.is_response) == 2
    # the name can be used again
    assert admin.create_topics([NewTopic("gone", 1, 1)])["gone"].result() is None


def test_a_restarted_broker_drops_the_replicas_of_a_topic_deleted_while_it_was_down():
    c = Cluster(brokers=3, seed=8)
    admin = admin_of(c)
    admin.create_topics([NewTopic("gone", 1, 3)])
    c.run_until_idle()
    c.crash(2)
    assert admin.delete_topics(["gone"])["gone"].result() is None
    assert ("gone", 0) in c.broker(2).logs              # its disk still holds the replica
    c.restart(2)
    c.run_until_idle()
    assert ("gone", 0) not in c.broker(2).logs


def test_internal_topics_cannot_be_deleted():
    c = Cluster(brokers=1, seed=3, config={"transaction.state.log.num.partitions": 1,
                                           "transaction.state.log.replication.factor": 1})
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "t"})
    p.init_transactions()
    got = admin_of(c).delete_topics(["__transaction_state"])["__transaction_state"]
    assert error_of(got) == ("INVALID_REQUEST", 42)
    assert "__transaction_state" in c.topics()


def test_describe_configs_of_a_topic_and_of_a_broker():
    c = Cluster(brokers=2, seed=5, config={"min.insync.replicas": 2})
    admin = admin_of(c)
    admin.create_topics([NewTopic("small", 1, 2, config={"max.message.bytes": "2048"})])["small"].result()
    topic, broker = ConfigResource(ConfigResource.Type.TOPIC, "small"), ConfigResource("broker", "1")
    got = admin.describe_configs([topic, broker])
    tc = got[topic].result()
    assert tc["max.message.bytes"].value == "2048"
    assert tc["max.message.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert tc["min.insync.replicas"].value == "2"
    assert tc["min.insync.replicas"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert tc["retention.ms"].source == ConfigSource.DEFAULT_CONFIG and tc["retention.ms"].is_default
    bc = got[broker].result()
    assert bc["transaction.version"].value == str(c.broker_config["transaction.version"])
    assert bc["min.insync.replicas"].source == ConfigSource.STATIC_BROKER_CONFIG
    to_broker_1 = [msg for msg in c.network_messages() if msg.api == "DescribeConfigs" and not msg.is_response
                   and "broker 1" in msg.describe()]
    assert to_broker_1 and to_broker_1[0].dst == "broker-1"        # a broker's configs are asked of it
    missing = admin.describe_configs([ConfigResource("topic", "nope")])
    assert error_of(next(iter(missing.values()))) == ("UNKNOWN_TOPIC_OR_PART", 3)


def test_admin_operations_need_acls_when_an_authorizer_is_on():
    c = Cluster(brokers=1, seed=9, config={"authorizer.class.name": "StandardAuthorizer"})
    c.add_acl("User:ops", "TOPIC", "ops-", "CREATE", pattern_type="PREFIXED")
    c.add_acl("User:ops", "TOPIC", "ops-", "DELETE", pattern_type="PREFIXED")
    ops = admin_of(c, **{"sasl.username": "ops"})
    mallory = admin_of(c, **{"sasl.username": "mallory"})
    got = ops.create_topics([NewTopic("ops-a", 1, 1), NewTopic("other", 1, 1)])
    assert got["ops-a"].result() is None
    assert error_of(got["other"]) == ("TOPIC_AUTHORIZATION_FAILED", 29)
    assert error_of(mallory.delete_topics(["ops-a"])["ops-a"]) == ("TOPIC_AUTHORIZATION_FAILED", 29)
    assert ops.delete_topics(["ops-a"])["ops-a"].result() is None
    assert error_of(next(iter(mallory.describe_configs([ConfigResource("broker", "0")]).values()))) == \
        ("CLUSTER_AUTHORIZATION_FAILED", 31)


def test_clients_get_names_and_switches_from_the_kernels_registry():
    c = Cluster(brokers=1, seed=1, mutations=("naive-client-classic",))
    att = attach.lookup(c.bootstrap)
    assert att is c.attachment and att.kernel is c.kernel and att.brokers == ("broker-0",)
    p1, p2 = Producer({"bootstrap.servers": c.bootstrap}), Producer({"bootstrap.servers": c.bootstrap})
    assert (p1.name, p2.name, admin_of(c).name) == ("producer-1", "producer-2", "admin-1")
    assert p1._config["sim.naive.client"] is True          # the lab's break-it switch, carried by the attachment
    assert c.clients["producer-2"] is p2
    assert not hasattr(p1, "_cluster")
    with pytest.raises(KafkaException, match="bootstrap.servers"):
        Producer({"bootstrap.servers": "broker-0:9092@cluster-does-not-exist"})


def test_the_admin_works_through_the_front_door():
    c = Cluster(brokers=3, seed=5)
    addr = c.serve()
    script = r"""
import json, sys
from txnlab.admin import AdminClient, NewTopic
from txnlab.admin import ConfigResource
a = AdminClient({"bootstrap.servers": sys.argv[1]})
out = {}
made = a.create_topics([NewTopic("remote", 2, 3, config={"max.message.bytes": "2048"}), NewTopic("bad", 1, 9)])
out["remote"] = made["remote"].result()
out["bad"] = made["bad"].exception().error.name()
out["again"] = a.create_topics([NewTopic("remote", 1, 1)])["remote"].exception().error.code()
out["policy"] = a.describe_configs([ConfigResource("topic", "remote")])[ConfigResource("topic", "remote")].result()["max.message.bytes"].value
out["topics"] = sorted(a.list_topics().topics)
out["deleted"] = a.delete_topics(["remote"])["remote"].result()
print(json.dumps(out))
"""
    try:
        run = subprocess.run([sys.executable, "-c", script, addr], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
        out = json.loads(run.stdout.strip().splitlines()[-1])
    finally:
        c.front_door.stop()
    assert out == {"remote": None, "bad": "INVALID_REPLICATION_FACTOR", "again": 36, "policy": "2048",
                   "topics": ["remote"], "deleted": None}
    remote = [msg for msg in c.network_messages() if msg.src.startswith("remote-") and not msg.is_response]
    assert {"CreateTopics", "DescribeConfigs", "DeleteTopics", "Metadata"} <= {msg.api for msg in remote}
    c.run_until_idle()
    assert c.topics() == []


def _imports_of(path: Path) -> list:
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:          # relative: resolve against txnlab.client
                pkg = ["txnlab", "client"][: 2 - (node.level - 1)]
                base = ".".join(pkg + ([base] if base else []))
            out.append(base)
            out += [f"{base}.{a.name}" for a in node.names]
    return out


def test_no_client_module_imports_the_cluster_brokers_coordinators_or_logs():
    forbidden = ("txnlab.cluster", "txnlab.broker", "txnlab.coordinator", "txnlab.log")
    files = sorted(CLIENT_DIR.glob("*.py"))
    assert len(files) > 5
    bad = {f.name: [i for i in _imports_of(f) if any(i == fb or i.startswith(fb + ".") for fb in forbidden)]
           for f in files}
    assert {k: v for k, v in bad.items() if v} == {}
    # and every txnlab import of a client module is one of the allowed layers
    allowed = ("txnlab.protocol", "txnlab.kernel", "txnlab.errors", "txnlab.config", "txnlab.client")
    for f in files:
        for i in _imports_of(f):
            if i.startswith("txnlab"):
                assert i == "txnlab" or i.startswith(allowed), (f.name, i)


def test_every_broker_forgets_a_deleted_topic_not_only_its_replicas():
    # a 1-replica topic lives on one broker; the others know it only from the metadata they were sent
    c = Cluster(brokers=3, seed=6)
    admin = admin_of(c)
    assert admin.create_topics([NewTopic("solo", 1, 1)])["solo"].result() is None
    c.run_until_idle()
    assert all("solo" in c.broker(b).metadata.topics for b in c.brokers)
    assert admin.delete_topics(["solo"])["solo"].result() is None
    c.run_until_idle()
    stops = {msg.dst for msg in c.network_messages() if msg.api == "StopReplica" and not msg.is_response}
    assert stops == {f"broker-{b}" for b in c.brokers}
    for b in c.brokers:           # what that broker answers a Metadata request from
        assert "solo" not in c.broker(b).metadata.topics
    assert "solo" not in admin.list_topics().topics
