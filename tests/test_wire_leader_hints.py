"""KIP-951 leader hints at the wire door, as Kafka's KafkaApis answers them: a Fetch v16+ partition answered
NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, and a Produce v10+ partition answered NOT_LEADER_OR_FOLLOWER,
carry CurrentLeader (the answering broker's view of the leader id and epoch) and the leader's endpoint in the
answer's NodeEndpoints, so a client sent astray goes to the new leader without a Metadata round trip."""
from __future__ import annotations

import datetime

from txnlab.protocol.errors import Errors
from txnlab.protocol.record_batch import Record, RecordBatch
from txnlab.wire import codec
from txnlab.wire.apis_data import topic_id
from txnlab.wire.codec import nested, request_type
from txnlab.wire.records import encode_batch
from wire_helpers import lab
from wire_raw import ask


def fetch_at(door, version: int, broker: int, tid, partition: int, leader_epoch: int):
    """One partition fetched with a current leader epoch (by id from v13), sent to ``broker``."""
    Req = request_type(1, version)
    Topic = nested(Req, "topics")
    Part = nested(Topic, "partitions")
    part = Part(partition=partition, fetch_offset=0, partition_max_bytes=1 << 20, current_leader_epoch=leader_epoch)
    return ask(door, 1, version, broker, max_wait=datetime.timedelta(0), min_bytes=0, isolation_level=1,
               forgotten_topics_data=(), rack_id="", topics=(Topic(topic_id=tid, partitions=(part,)),))


def test_fetch_v16_names_the_current_leader_after_not_leader_or_fenced_epoch():
    """KIP-951, as KafkaApis answers Fetch v16+: a partition answered NOT_LEADER_OR_FOLLOWER or
    FENCED_LEADER_EPOCH carries CurrentLeader (the answering broker's view: leader id and epoch) and the
    leader's endpoint is in NodeEndpoints, so the client can go there without a Metadata round trip.  Other
    errors (UNKNOWN_LEADER_EPOCH) and versions before 16 carry no hint."""
    with lab() as (c, door):
        tid = topic_id(door, "t")
        first = c.leader("t", 0)
        follower = next(b for b in c.broker_ids if b != first)
        with door.lock:
            epoch = c.partition_state("t", 0)["leader_epoch"]

        r = fetch_at(door, 16, follower, tid, 0, epoch)
        (q,) = r.responses[0].partitions
        assert q.error_code == Errors.NOT_LEADER_OR_FOLLOWER
        assert (q.current_leader.leader_id, q.current_leader.leader_epoch) == (first, epoch)
        assert [(n.node_id, n.host, n.port) for n in r.node_endpoints] == [(first, "127.0.0.1", door.port_of(first))]

        with door.lock:
            c.move_leader("t", 0, follower)
            c.run_until_idle()
            new_epoch = c.partition_state("t", 0)["leader_epoch"]
        assert c.leader("t", 0) == follower and new_epoch > epoch
        for version in (16, 17, 18):
            r = fetch_at(door, version, follower, tid, 0, epoch)      # the old epoch, at the new leader
            (q,) = r.responses[0].partitions
            assert q.error_code == Errors.FENCED_LEADER_EPOCH
            assert (q.current_leader.leader_id, q.current_leader.leader_epoch) == (follower, new_epoch)
            assert [n.node_id for n in r.node_endpoints] == [follower]
        r = fetch_at(door, 16, first, tid, 0, new_epoch)              # the old leader knows the new one
        (q,) = r.responses[0].partitions
        assert q.error_code == Errors.NOT_LEADER_OR_FOLLOWER
        assert (q.current_leader.leader_id, q.current_leader.leader_epoch) == (follower, new_epoch)
        assert [(n.node_id, n.port) for n in r.node_endpoints] == [(follower, door.port_of(follower))]

        r = fetch_at(door, 16, follower, tid, 0, new_epoch + 5)       # an epoch from the future: no hint
        (q,) = r.responses[0].partitions
        assert q.error_code == Errors.UNKNOWN_LEADER_EPOCH
        assert (q.current_leader.leader_id, q.current_leader.leader_epoch) == (-1, -1) and r.node_endpoints == ()
        r = fetch_at(door, 16, follower, tid, 0, new_epoch)           # served: no hint
        assert r.responses[0].partitions[0].error_code == 0 and r.node_endpoints == ()
        r = fetch_at(door, 15, first, tid, 0, new_epoch)              # v15: Kafka leaves CurrentLeader unset
        (q,) = r.responses[0].partitions
        assert q.error_code == Errors.NOT_LEADER_OR_FOLLOWER and q.current_leader.leader_id == -1



def produce_at(door, version: int, broker: int):
    """One record to t-0 (acks=1), sent to ``broker``."""
    cls = codec.request_type(0, version)
    Topic = codec.nested(cls, "topic_data")
    Part = codec.nested(Topic, "partition_data")
    records = encode_batch(RecordBatch((Record(None, b"x", (), 1),)))
    return ask(door, 0, version, broker, transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=5),
               topic_data=(Topic(name="t", partition_data=(Part(index=0, records=records),)),))


def test_produce_v10_names_the_current_leader_after_not_leader_or_follower():
    with lab() as (c, door):
        leader = c.leader("t", 0)
        follower = next(b for b in c.broker_ids if b != leader)
        with door.lock:
            epoch = c.partition_state("t", 0)["leader_epoch"]
        for version in (10, 11):
            r = produce_at(door, version, follower)
            (q,) = r.responses[0].partition_responses
            assert q.error_code == Errors.NOT_LEADER_OR_FOLLOWER
            assert (q.current_leader.leader_id, q.current_leader.leader_epoch) == (leader, epoch)
            assert [(n.node_id, n.host, n.port) for n in r.node_endpoints] == [
                (leader, "127.0.0.1", door.port_of(leader))]
        r = produce_at(door, 11, leader)                              # written: no hint
        (q,) = r.responses[0].partition_responses
        assert q.error_code == 0 and q.current_leader.leader_id == -1 and r.node_endpoints == ()
        r = produce_at(door, 9, follower)                             # v9 has neither field
        assert r.responses[0].partition_responses[0].error_code == Errors.NOT_LEADER_OR_FOLLOWER
        assert not hasattr(r, "node_endpoints")
