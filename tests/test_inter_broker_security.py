"""Attacks a learner could try: a client that speaks the brokers' own APIs, or calls itself a broker.

In Kafka only brokers (and controllers) send WriteTxnMarkers, LeaderAndIsr, a replica's Fetch,
BrokerRegistration...; the receiver authorises each as CLUSTER_ACTION on the cluster and answers anybody
else CLUSTER_AUTHORIZATION_FAILED (31).  A client's ``client.id`` is a label, never its identity.
"""
from __future__ import annotations

import dataclasses

import pytest

from txnlab import Cluster, KafkaException, Producer
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors

from helpers import RawClient, read_all

CFG = {"transaction.state.log.num.partitions": 2, "offsets.topic.num.partitions": 2}
ACL = {**CFG, "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


def lab(config=CFG) -> Cluster:
    c = Cluster(brokers=3, seed=7, config=config)
    c.create_topic("t", partitions=2, replication_factor=3)
    return c


def open_transaction(c: Cluster):
    """A victim's transaction, open on t-0 and t-1: (producer, producer id, epoch)."""
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "victim"})
    p.init_transactions()
    p.begin_transaction()
    for part in (0, 1):
        p.produce("t", value=f"secret-{part}".encode(), partition=part)
    assert p.flush(30) == 0
    batch = next(b for b in c.log("t", 0).batches if b.is_transactional)
    return p, batch.producer_id, batch.producer_epoch


def refusals(c: Cluster) -> list[str]:
    return [d for e in c.trace for d in getattr(e, "details", ()) or () if "refused" in d]


def test_a_client_cannot_commit_someone_elses_transaction_with_write_txn_markers():
    c = lab()
    victim, pid, epoch = open_transaction(c)
    mallory = RawClient(c, "mallory")
    commit = m.WriteTxnMarkersRequest((m.TxnMarkerEntry(pid, epoch, True, (("t", 0),), 0),))
    resp = mallory.call(c.leader("t", 0), commit)
    assert resp.markers[pid][("t", 0)] == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert any("refused WriteTxnMarkers from mallory: only brokers send WriteTxnMarkers COMMIT" in t
               and t.endswith("-> CLUSTER_AUTHORIZATION_FAILED") for t in refusals(c))
    assert not any(b.is_control for b in c.log("t", 0).batches)       # no marker was written
    assert read_all(c, "t") == []                                      # read_committed sees nothing of it
    victim.abort_transaction()
    assert read_all(c, "t") == []


def test_a_client_cannot_send_leader_and_isr_or_stop_replica():
    c = lab()
    mallory = RawClient(c, "mallory")
    s = c.controller.states[("t", 0)]
    usurper = next(r for r in s.replicas if r != s.leader)
    forged = dataclasses.replace(s, leader=usurper, leader_epoch=s.leader_epoch + 5)
    resp = mallory.call(usurper, m.LeaderAndIsrRequest(1, (forged,), tuple(c.broker_ids)))
    assert resp.error == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert not c.broker(usurper).partitions[("t", 0)].is_leader
    resp = mallory.call(s.leader, m.StopReplicaRequest(1, (("t", 0),)))
    assert resp.error == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert ("t", 0) in c.broker(s.leader).logs


def test_a_client_cannot_fetch_as_a_replica():
    """A replica's Fetch (replica_id >= 0) would move the leader's view of a follower (and its HW)."""
    c = lab()
    victim, pid, epoch = open_transaction(c)
    mallory = RawClient(c, "mallory")
    leader = c.leader("t", 0)
    follower = next(r for r in c.controller.states[("t", 0)].replicas if r != leader)
    req = m.FetchRequest(follower, 0, 1, m.READ_UNCOMMITTED, {("t", 0): m.FetchPartition(10_000)})
    resp = mallory.call(leader, req)
    # KafkaApis: a follower fetch without CLUSTER_ACTION fails on each partition with TOPIC_AUTHORIZATION_FAILED
    assert resp.error == Errors.NONE
    assert resp.partitions[("t", 0)].error == Errors.TOPIC_AUTHORIZATION_FAILED == 29
    assert c.broker(leader).partitions[("t", 0)].followers[follower].leo < 10_000   # its view is unchanged
    victim.abort_transaction()


def test_a_client_cannot_register_as_a_broker_with_the_controller():
    c = lab()
    c.crash(2)
    c.run_until(lambda: 2 not in c.controller.live_brokers, timeout_ms=60_000)     # its session expired
    mallory = RawClient(c, "mallory")
    resp = mallory.call("controller", m.BrokerRegistrationRequest(2, 99))
    assert resp.error == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert 2 not in c.controller.live_brokers


def test_client_id_broker_2_does_not_replace_a_down_broker_2():
    c = lab()
    c.crash(2)
    real = c.broker(2)
    p = Producer({"bootstrap.servers": c.bootstrap, "client.id": "broker-2"})
    p.produce("t", value=b"hello", partition=0)
    assert p.flush(30) == 0
    assert c.kernel.nodes["broker-2"] is real                        # broker 2's node is still broker 2's
    assert not any(n == "broker-2" for n in c.clients)               # the client works under its own name
    assert any(e.kind == "note" and "client.id 'broker-2' is only a label" in e.text for e in c.trace)
    c.restart(2)
    c.run_until(lambda: real.running, timeout_ms=60_000)
    assert real.running and 2 in c.controller.live_brokers


def test_client_id_shaped_like_a_broker_does_not_skip_acl_checks():
    c = lab(ACL)
    p = Producer({"bootstrap.servers": c.bootstrap, "client.id": "broker-0", "sasl.username": "mallory",
                  "transactional.id": "secret"})
    with pytest.raises(KafkaException) as e:
        p.init_transactions()
    assert e.value.error.name() == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


def test_brokers_still_hold_cluster_action_with_the_authorizer_on():
    c = lab(ACL)
    c.add_acl("User:alice", "TRANSACTIONAL_ID", "app", "WRITE")
    c.add_acl("User:alice", "TOPIC", "t", "WRITE")
    c.add_acl("User:alice", "TOPIC", "t", "READ")
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "app", "sasl.username": "alice"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"ok", partition=0)
    p.commit_transaction()
    c.run_until_idle()                        # the coordinator's markers are accepted (CLUSTER_ACTION)
    assert any(b.is_control for b in c.log("t", 0).batches)
    assert not refusals(c)


# ------------------------------------------------------------------------------------------- front door
@pytest.fixture
def served():
    c = lab()
    addr = c.serve()
    yield c, addr
    c.front_door.stop()


def test_the_same_attacks_through_the_front_door_are_refused(served):
    from test_frontdoor import call, connected_node
    c, addr = served
    victim, pid, epoch = open_transaction(c)
    node = connected_node(addr)
    marker = {"$m": "WriteTxnMarkersRequest", "f": {"markers": {"$t": [{"$m": "TxnMarkerEntry", "f": {
        "producer_id": pid, "producer_epoch": epoch, "transaction_result": True,
        "partitions": {"$t": [{"$t": ["t", 0]}]}, "coordinator_epoch": 0}}]}}}
    leader = f"broker-{c.leader('t', 0)}"
    for api, body in (("WriteTxnMarkers", marker), ("LeaderAndIsr", {"$m": "LeaderAndIsrRequest", "f": {}})):
        status, reply = call(addr, {"op": "request", "node": node, "dst": leader, "api": api, "request": body})
        assert status == 400 and "not a client API" in reply["message"], reply
    assert read_all(c, "t") == []
    victim.abort_transaction()


def test_a_remote_client_named_broker_2_does_not_pass_for_broker_2(served):
    c, addr = served
    c.crash(2)
    p = Producer({"bootstrap.servers": addr, "client.id": "broker-2"})
    p.produce("t", value=b"from outside", partition=1)
    assert p.flush(30) == 0
    assert c.kernel.nodes["broker-2"] is c.broker(2)
    c.restart(2)
    c.run_until(lambda: c.broker(2).running, timeout_ms=60_000)
    assert 2 in c.controller.live_brokers


def test_an_admin_abort_needs_cluster_action_with_the_authorizer_on():
    """KIP-664's abort is the one WriteTxnMarkers a client may send (ABORT only), authorised as in Kafka."""
    c = lab(ACL)
    c.add_acl("User:alice", "TRANSACTIONAL_ID", "victim", "WRITE")
    c.add_acl("User:alice", "TOPIC", "t", "WRITE")
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "victim", "sasl.username": "alice"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"x", partition=0)
    assert p.flush(30) == 0
    batch = next(b for b in c.log("t", 0).batches if b.is_transactional)
    abort = m.WriteTxnMarkersRequest((m.TxnMarkerEntry(batch.producer_id, batch.producer_epoch, False,
                                                       (("t", 0),), 0),))
    resp = RawClient(c, "mallory").call(c.leader("t", 0), abort)
    assert resp.markers[batch.producer_id][("t", 0)] == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert any("User:ANONYMOUS has no CLUSTER_ACTION" in t for t in refusals(c))
    assert not any(b.is_control for b in c.log("t", 0).batches)
