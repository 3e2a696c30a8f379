"""Consumer groups and the group coordinator: rebalances (join, leave, crash, poll interval),
range/roundrobin assignment, committed offsets in __consumer_offsets surviving a coordinator crash,
and transactional offsets (TxnOffsetCommit, UNSTABLE_OFFSET_COMMIT, markers) of KAFKA-EOS §5."""
import pytest

from txnlab import Cluster, Consumer, KafkaException, Producer, TopicPartition
from txnlab.coordinator import offset_records as rec
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors
from txnlab.protocol.hashing import partition_for

from helpers import RawClient

N_OFFSETS = 5
FAST = {"offsets.topic.num.partitions": N_OFFSETS, "group.initial.rebalance.delay.ms": 0,
        "transaction.state.log.num.partitions": 5}
MEMBER = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest"}


def cluster(partitions=4, **cfg):
    c = Cluster(brokers=3, seed=11, config={**FAST, **cfg})
    c.create_topic("t", partitions=partitions, replication_factor=3)
    return c


def member(c, group="g", **cfg):
    return Consumer({"bootstrap.servers": c.bootstrap, "group.id": group, **MEMBER, **cfg})


def owned(cons):
    return sorted((tp.topic, tp.partition) for tp in cons.assignment())


def poll_until(c, consumers, pred, max_ms=120_000):
    """Poll every consumer in turn until pred() holds; returns the messages they got meanwhile."""
    deadline = c.now + max_ms
    got = []
    while not pred():
        for cons in consumers:
            msg = cons.poll(0.1)
            if msg is not None:
                got.append(msg)
        assert c.now < deadline, "the group did not settle in time"
    return got


def stable_pair(c, **cfg):
    a, b = member(c, **cfg), member(c, **cfg)
    a.subscribe(["t"])
    b.subscribe(["t"])
    poll_until(c, [a, b], lambda: len(owned(a)) == 2 and len(owned(b)) == 2)
    return a, b


def coordinator_of(c, group):
    return c.broker(c.group_coordinator(group)).group_coordinator


def offsets_tp(group):
    return ("__consumer_offsets", partition_for(group, N_OFFSETS))


# ------------------------------------------------------------------ membership
def test_two_members_split_a_four_partition_topic_with_range_assignment():
    c = cluster()
    a, b = stable_pair(c)
    assert owned(a) == [("t", 0), ("t", 1)] and owned(b) == [("t", 2), ("t", 3)]
    g = coordinator_of(c, "g").describe_group("g")
    assert g["state"] == "Stable" and g["protocol"] == "range" and len(g["members"]) == 2
    assert a.consumer_group_metadata().generation_id == g["generation_id"] == b.consumer_group_metadata().generation_id


def test_roundrobin_deals_partitions_of_all_topics_in_turn():
    c = cluster(partitions=2)
    c.create_topic("u", partitions=2, replication_factor=3)
    a = member(c, **{"partition.assignment.strategy": "roundrobin"})
    b = member(c, **{"partition.assignment.strategy": "roundrobin"})
    a.subscribe(["t", "u"])
    b.subscribe(["t", "u"])
    poll_until(c, [a, b], lambda: len(owned(a)) == 2 and len(owned(b)) == 2)
    assert owned(a) == [("t", 0), ("u", 0)] and owned(b) == [("t", 1), ("u", 1)]


def test_a_crashed_member_loses_its_partitions_after_the_session_timeout():
    c = cluster()
    a, b = stable_pair(c)
    c.crash(b)
    crashed_at = c.now
    poll_until(c, [a], lambda: len(owned(a)) == 4)
    assert c.now - crashed_at >= 6000                       # nobody notices before session.timeout.ms
    assert any("session timeout 6000 ms passed without a Heartbeat" in e.narration for e in c.trace)


def test_close_sends_leave_group_and_the_other_member_takes_over_at_once():
    c = cluster()
    a, b = stable_pair(c)
    b.close()
    left_at = c.now
    poll_until(c, [a], lambda: len(owned(a)) == 4)
    assert c.now - left_at < 6000                          # no session timeout needed
    assert any("left (LeaveGroup)" in e.narration for e in c.trace)


def test_initial_rebalance_delay_lets_members_that_arrive_together_share_the_first_generation():
    c = cluster(**{"group.initial.rebalance.delay.ms": 3000})
    a, b = member(c), member(c)
    a.subscribe(["t"])
    b.subscribe(["t"])
    poll_until(c, [a, b], lambda: len(owned(a)) == 2 and len(owned(b)) == 2)
    assert a.consumer_group_metadata().generation_id == 1
    assert any("group.initial.rebalance.delay.ms=3000" in e.narration for e in c.trace)


def test_a_member_that_stops_polling_leaves_after_max_poll_interval_and_rejoins_when_it_polls():
    c = cluster()
    a, b = stable_pair(c, **{"max.poll.interval.ms": 8000})
    poll_until(c, [a], lambda: len(owned(a)) == 4, max_ms=30_000)    # b is busy elsewhere
    assert any("more than max.poll.interval.ms=8000" in e.narration for e in c.trace)
    revoked = []
    b._on_revoke = lambda cons, parts: revoked.append(len(parts))
    poll_until(c, [a, b], lambda: len(owned(a)) == 2 and len(owned(b)) == 2)
    assert revoked == [2]


def test_rebalance_callbacks_run_inside_poll_with_the_partitions():
    c = cluster()
    events = []
    a = member(c)
    a.subscribe(["t"], on_assign=lambda cons, parts: events.append(("assign", len(parts))),
                on_revoke=lambda cons, parts: events.append(("revoke", len(parts))))
    poll_until(c, [a], lambda: len(owned(a)) == 4)
    b = member(c)
    b.subscribe(["t"])
    poll_until(c, [a, b], lambda: len(owned(a)) == 2 and len(owned(b)) == 2)
    assert events == [("assign", 4), ("revoke", 4), ("assign", 2)]


def test_a_static_member_replaced_by_a_new_instance_is_fenced():
    c = cluster()
    old = member(c, **{"group.instance.id": "worker-1"})
    old.subscribe(["t"])
    poll_until(c, [old], lambda: len(owned(old)) == 4)
    new = member(c, **{"group.instance.id": "worker-1"})
    new.subscribe(["t"])
    poll_until(c, [new], lambda: len(owned(new)) == 4)
    with pytest.raises(KafkaException) as e:
        for _ in range(50):
            old.poll(0.2)
    assert e.value.args[0].name() == "FENCED_INSTANCE_ID"


def test_join_with_a_session_timeout_outside_the_brokers_bounds_fails():
    c = cluster()
    a = member(c, **{"session.timeout.ms": 1000, "heartbeat.interval.ms": 100})
    a.subscribe(["t"])
    with pytest.raises(KafkaException) as e:
        for _ in range(50):
            a.poll(0.1)
    assert e.value.args[0].name() == "INVALID_SESSION_TIMEOUT"


# ------------------------------------------------------------------ offsets
def test_committed_offsets_are_written_to_consumer_offsets_and_readable_as_records():
    c = cluster(partitions=1)
    a = member(c, **{"enable.auto.commit": False})
    a.assign([TopicPartition("t", 0)])
    a.commit(offsets=[TopicPartition("t", 0, 42)], asynchronous=False)
    log = c.log(*offsets_tp("g"))
    lines = [rec.describe_record(r.key, r.value) for b in log.batches if not b.is_control for r in b.records]
    assert "OffsetCommit g/t-0 = 42" in lines
    raw = next(r for b in log.batches for r in b.records if rec.read_key(r.key) == rec.OffsetCommitKey("g", "t", 0))
    assert raw.key[:2] == b"\x00\x01" and rec.decode_json(raw.key) == {"version": 1, "group": "g", "topic": "t",
                                                                       "partition": 0}
    assert rec.decode_json(raw.value)["offset"] == 42


def test_committed_offsets_survive_a_crash_of_the_group_coordinator():
    c = cluster()
    producer = Producer({"bootstrap.servers": c.bootstrap})
    for i in range(40):
        producer.produce("t", value=b"v%d" % i, partition=i % 4)
    producer.flush()
    a = member(c, **{"enable.auto.commit": False})
    a.subscribe(["t"])
    first = []
    while len(first) < 10:
        msg = a.poll(1.0)
        if msg is not None:
            first.append(msg)
    a.commit(asynchronous=False)
    committed = {tp.partition: tp.offset for tp in a.committed(a.assignment())}
    a.close()
    old = c.group_coordinator("g")
    c.crash(old)
    c.advance(12_000)                                         # the controller fences it and moves leadership
    assert c.group_coordinator("g") not in (old, -1)
    b = member(c, **{"enable.auto.commit": False})
    b.subscribe(["t"])
    rest = poll_until(c, [b], lambda: len(owned(b)) == 4)
    assert {tp.partition: tp.offset for tp in b.committed(b.assignment())} == committed
    while (msg := b.poll(1.0)) is not None:
        rest.append(msg)
    assert len(rest) == 30
    assert {(msg.partition(), msg.offset()) for msg in rest}.isdisjoint({(x.partition(), x.offset()) for x in first})
    assert any(e.narration.count(f"loaded __consumer_offsets-{offsets_tp('g')[1]}") for e in c.trace)


def test_offset_commit_from_a_stale_generation_is_rejected():
    c = cluster()
    a, b = stable_pair(c)
    raw = RawClient(c)
    gen = a.consumer_group_metadata()
    coord = c.group_coordinator("g")
    stale = m.OffsetCommitRequest("g", gen.generation_id - 1, gen.member_id, None, {("t", 0): (1, -1, "")})
    assert raw.call(coord, stale).errors[("t", 0)] == Errors.ILLEGAL_GENERATION
    stranger = m.OffsetCommitRequest("g", gen.generation_id, "nobody", None, {("t", 0): (1, -1, "")})
    assert raw.call(coord, stranger).errors[("t", 0)] == Errors.UNKNOWN_MEMBER_ID
    outsider = m.OffsetCommitRequest("g", -1, "", None, {("t", 0): (1, -1, "")})
    assert raw.call(coord, outsider).errors[("t", 0)] == Errors.UNKNOWN_MEMBER_ID   # the group has members


# ------------------------------------------------------- transactional offsets
# Tests that play the producer with hand-made TxnOffsetCommit requests turn KIP-890 verification
# off (the transaction coordinator does not know their made-up producer ids).
UNVERIFIED = {"transaction.partition.verification.enable": False}


def txn_offset_commit(raw, c, group, offsets, pid=500, epoch=0, generation=-1, member_id=""):
    req = m.TxnOffsetCommitRequest("tx", group, pid, epoch, generation, member_id, None, offsets)
    return raw.call(c.group_coordinator(group), req)


def write_marker(raw, c, group, pid=500, epoch=0, commit=True):
    tp = offsets_tp(group)
    req = m.WriteTxnMarkersRequest((m.TxnMarkerEntry(pid, epoch, commit, (tp,), 0),))
    return raw.call(c.group_coordinator(group), req, from_broker=True).markers[pid][tp]


def ready_group(c, group="g"):
    """The offsets topic exists and the group's partition is loaded (a plain commit went through)."""
    a = member(c, group=group, **{"enable.auto.commit": False})
    a.assign([TopicPartition("t", 3)])
    a.commit(offsets=[TopicPartition("t", 3, 1)], asynchronous=False)
    return a


def test_offset_fetch_says_unstable_offset_commit_while_transactional_offsets_are_pending():
    c = cluster(**UNVERIFIED)
    reader = ready_group(c)
    raw = RawClient(c)
    resp = txn_offset_commit(raw, c, "g", {("t", 0): (5, -1, "")})
    assert resp.errors == {("t", 0): Errors.NONE}
    fetch = raw.call(c.group_coordinator("g"), m.OffsetFetchRequest("g", (("t", 0), ("t", 1)), require_stable=True))
    assert fetch.offsets[("t", 0)][3] == Errors.UNSTABLE_OFFSET_COMMIT == 88
    assert fetch.offsets[("t", 1)] == (-1, -1, "", Errors.NONE)
    loose = raw.call(c.group_coordinator("g"), m.OffsetFetchRequest("g", (("t", 0),), require_stable=False))
    assert loose.offsets[("t", 0)] == (-1, -1, "", Errors.NONE)        # not visible before the marker
    with pytest.raises(KafkaException) as e:
        reader.committed([TopicPartition("t", 0)], timeout=1.0)     # keeps retrying, then times out
    assert e.value.args[0].name() == "_TIMED_OUT"
    assert any("UNSTABLE_OFFSET_COMMIT" in e.narration and "asking again" in e.narration for e in c.trace)
    assert coordinator_of(c, "g").pending_transactional_offsets == {500: {"g": {("t", 0): 5}}}

    assert write_marker(raw, c, "g", commit=True) == Errors.NONE
    assert reader.committed([TopicPartition("t", 0)], timeout=5.0)[0].offset == 5
    assert coordinator_of(c, "g").pending_transactional_offsets == {}


def test_abort_marker_discards_pending_transactional_offsets():
    c = cluster(**UNVERIFIED)
    reader = ready_group(c)
    raw = RawClient(c)
    txn_offset_commit(raw, c, "g", {("t", 0): (5, -1, ""), ("t", 3): (9, -1, "")})
    assert write_marker(raw, c, "g", commit=False) == Errors.NONE
    got = reader.committed([TopicPartition("t", 0), TopicPartition("t", 3)], timeout=5.0)
    assert [tp.offset for tp in got] == [-1001, 1]                  # nothing new; the plain commit stays
    assert any("discards its pending transactional offsets" in e.narration for e in c.trace)


def test_txn_offset_commit_checks_member_and_generation_kip_447():
    c = cluster(**UNVERIFIED)
    a, b = stable_pair(c)
    raw = RawClient(c)
    meta = a.consumer_group_metadata()
    ok = txn_offset_commit(raw, c, "g", {("t", 0): (3, -1, "")}, generation=meta.generation_id,
                           member_id=meta.member_id)
    assert ok.errors[("t", 0)] == Errors.NONE
    zombie = txn_offset_commit(raw, c, "g", {("t", 0): (4, -1, "")}, pid=501, generation=meta.generation_id - 1,
                               member_id=meta.member_id)
    assert zombie.errors[("t", 0)] == Errors.ILLEGAL_GENERATION
    unknown = txn_offset_commit(raw, c, "g", {("t", 0): (4, -1, "")}, pid=502, generation=meta.generation_id,
                                member_id="consumer-9-dead")
    assert unknown.errors[("t", 0)] == Errors.UNKNOWN_MEMBER_ID
    group_id_only = txn_offset_commit(raw, c, "g", {("t", 1): (4, -1, "")}, pid=503)      # generation -1, no member
    assert group_id_only.errors[("t", 1)] == Errors.NONE


def test_transactional_offset_commit_is_a_transactional_batch_of_the_producer():
    c = cluster(**UNVERIFIED)
    ready_group(c)
    raw = RawClient(c)
    txn_offset_commit(raw, c, "g", {("t", 0): (5, -1, "")}, pid=777, epoch=3)
    log = c.log(*offsets_tp("g"))
    batch = [b for b in log.batches if b.producer_id == 777][0]
    assert batch.is_transactional and not batch.is_control and batch.producer_epoch == 3
    assert log.last_stable_offset <= batch.base_offset                # the open transaction pins the LSO
    write_marker(raw, c, "g", pid=777, epoch=3)
    assert log.last_stable_offset == log.high_watermark


def test_a_new_coordinator_reloads_pending_transactional_offsets_and_completes_them_on_the_marker():
    c = cluster(**UNVERIFIED)
    ready_group(c)
    raw = RawClient(c)
    txn_offset_commit(raw, c, "g", {("t", 0): (7, -1, "")}, pid=600)
    old = c.group_coordinator("g")
    c.crash(old)
    c.advance(12_000)
    new = c.group_coordinator("g")
    assert new not in (old, -1)
    gc = c.broker(new).group_coordinator
    assert gc.pending_transactional_offsets == {600: {"g": {("t", 0): 7}}}
    assert gc.describe_group("g")["offsets"] == {("t", 3): 1}
    fetch = raw.call(new, m.OffsetFetchRequest("g", (("t", 0),), require_stable=True))
    assert fetch.offsets[("t", 0)][3] == Errors.UNSTABLE_OFFSET_COMMIT
    assert write_marker(raw, c, "g", pid=600) == Errors.NONE
    assert gc.describe_group("g")["offsets"] == {("t", 0): 7, ("t", 3): 1}


def test_a_committed_transaction_does_not_overwrite_a_newer_plain_commit():
    c = cluster(**UNVERIFIED)
    reader = ready_group(c)
    raw = RawClient(c)
    txn_offset_commit(raw, c, "g", {("t", 3): (5, -1, "")}, pid=800)    # older record
    reader.commit(offsets=[TopicPartition("t", 3, 9)], asynchronous=False)   # newer plain record
    write_marker(raw, c, "g", pid=800)
    assert reader.committed([TopicPartition("t", 3)])[0].offset == 9


def test_requests_reach_only_the_coordinator_and_wait_while_it_loads():
    c = cluster(**UNVERIFIED)
    ready_group(c)
    raw = RawClient(c)
    coord = c.group_coordinator("g")
    other = next(b for b in c.brokers if b != coord)
    resp = raw.call(other, m.OffsetFetchRequest("g", (("t", 0),)))
    assert resp.error == Errors.NOT_COORDINATOR
    gc = c.broker(coord).group_coordinator
    gc.manager.loading.add(offsets_tp("g")[1])
    assert raw.call(coord, m.OffsetFetchRequest("g", (("t", 0),))).error == Errors.COORDINATOR_LOAD_IN_PROGRESS


@pytest.mark.parametrize("tv", [0, 2])
def test_consume_transform_produce_commits_offsets_with_the_transaction(tv):
    c = cluster(partitions=1, **{"transaction.version": tv})     # TV2: TxnOffsetCommit adds the partition
    c.create_topic("out", partitions=1, replication_factor=3)
    Producer({"bootstrap.servers": c.bootstrap}).produce("t", value=b"in-0")
    src = Producer({"bootstrap.servers": c.bootstrap})
    for i in range(4):
        src.produce("t", value=b"in-%d" % i, partition=0)
    src.flush()
    cons = member(c, group="copier", **{"enable.auto.commit": False})
    cons.subscribe(["t"])
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "copier-1"})
    p.init_transactions()
    msg = None
    while msg is None:
        msg = cons.poll(1.0)
    p.begin_transaction()
    p.produce("out", value=msg.value().upper(), partition=0)
    p.send_offsets_to_transaction(cons.position(cons.assignment()), cons.consumer_group_metadata())
    gc = coordinator_of(c, "copier")
    assert any(row["status"] == "pending transaction" for row in gc.offsets_view())
    other = member(c, group="copier")
    with pytest.raises(KafkaException):
        other.committed([TopicPartition("t", 0)], timeout=0.5)     # UNSTABLE until the marker
    p.commit_transaction()
    assert other.committed([TopicPartition("t", 0)], timeout=5.0)[0].offset == msg.offset() + 1


def test_an_unverified_txn_offset_commit_is_refused_when_verification_is_on():
    c = cluster()                                              # transaction.partition.verification.enable=true
    ready_group(c)
    real = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    real.init_transactions()                                   # 'tx' exists, but not with producer id 4242
    raw = RawClient(c)
    resp = txn_offset_commit(raw, c, "g", {("t", 0): (5, -1, "")}, pid=4242)
    assert resp.errors[("t", 0)] == Errors.INVALID_PRODUCER_ID_MAPPING
    assert coordinator_of(c, "g").pending_transactional_offsets == {}
    assert any("KIP-890" in e.narration for e in c.trace)


def test_members_keep_their_generation_and_partitions_when_the_coordinator_fails_over():
    c = cluster()
    a, b = stable_pair(c)
    generation = a.consumer_group_metadata().generation_id
    before = (owned(a), owned(b))
    old = c.group_coordinator("g")
    c.crash(old)
    crashed_at = c.now
    poll_until(c, [a, b], lambda: c.now - crashed_at >= 30_000)     # failover, then well past session.timeout.ms
    assert c.group_coordinator("g") not in (old, -1)
    new = coordinator_of(c, "g").describe_group("g")
    assert new["state"] == "Stable" and new["generation_id"] == generation
    assert (owned(a), owned(b)) == before
    assert a.consumer_group_metadata().generation_id == generation


def group_scenario(seed):
    c = Cluster(brokers=3, seed=seed, config={**FAST, "sim.network.jitter.ms": 3})
    c.create_topic("t", partitions=4, replication_factor=3)
    Producer({"bootstrap.servers": c.bootstrap}).produce("t", value=b"x")
    a, b = stable_pair(c)
    c.crash(b)
    poll_until(c, [a], lambda: len(owned(a)) == 4)
    return c.trace.to_jsonl()


def test_same_seed_gives_the_same_group_trace_byte_for_byte():
    assert group_scenario(4) == group_scenario(4)


def test_range_gives_the_first_members_one_extra_partition_and_skips_unsubscribed_topics():
    from txnlab.client.assignors import range_assign, roundrobin_assign
    subs = {"m-b": ("t",), "m-a": ("t", "u"), "m-c": ("t",)}
    plan = range_assign(subs, {"t": 5, "u": 2})
    assert plan == {"m-a": [("t", 0), ("t", 1), ("u", 0), ("u", 1)], "m-b": [("t", 2), ("t", 3)], "m-c": [("t", 4)]}
    rr = roundrobin_assign(subs, {"t": 5, "u": 2})
    assert sorted(tp for tps in rr.values() for tp in tps) == [("t", i) for i in range(5)] + [("u", 0), ("u", 1)]
    assert all(tp[0] in subs[mid] for mid, tps in rr.items() for tp in tps)


def test_group_metadata_record_round_trips_through_its_json_schema():
    value = rec.GroupMetadataValue("consumer", 3, "range", "m-1", 1234, (
        rec.MemberRecord("m-1", None, "consumer-1", "consumer-1", 300000, 45000, ("t",), (("t", 0), ("t", 1))),))
    raw = rec.group_metadata_value(value)
    assert raw[:2] == b"\x00\x03"
    assert rec.read_group_value(raw) == value
    assert rec.read_key(rec.group_metadata_key("g")) == rec.GroupMetadataKey("g")
    assert rec.decode_json(raw)["members"][0]["memberId"] == "m-1"
