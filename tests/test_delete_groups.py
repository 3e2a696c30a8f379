"""DeleteGroups as Kafka 4.1.1's group coordinator runs it (GroupCoordinatorService.deleteGroups ->
GroupCoordinatorShard.deleteGroups): one write operation per ``__consumer_offsets`` partition, whose tombstones
(the group's committed offsets, the partitions only a pending transactional offset commit holds, its
GroupMetadata) join the coordinator's batch like any write; the group is gone from memory at once, the request
answered once the batch is replicated, and a failed batch brings the group back."""
from test_group_coordinator_linger import T0, T1, alter_offsets_topic, batches_from, lab, narrations, offsets_log, send
from txnlab import Consumer, Producer, TopicPartition
from txnlab.coordinator import offset_records as rec
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors as E


def records_from(c, leo: int) -> list:
    """The data records of __consumer_offsets-0 from ``leo`` on, batch by batch: ("offset", group, topic,
    partition, committed offset or None for a tombstone) or ("group", group, None for a tombstone)."""
    def row(k, r):
        if isinstance(k, rec.OffsetCommitKey):
            v = rec.read_offset_value(r.value)
            return ("offset", k.group, k.topic, k.partition, None if v is None else v.offset)
        return ("group", k.group, None if r.value is None else "metadata")
    return [rows for _base, _txn, rows in batches_from(c, leo, row)]


def results(resp) -> dict:
    return {r.group_id: E(r.error_code) for r in resp.results}


def test_the_tombstones_join_the_batch_and_the_answer_waits_until_it_is_replicated():
    c, raw = lab()
    coord = c.group_coordinator("g")
    follower = next(b for b in c.broker_ids if b != coord)
    leo = offsets_log(c).log_end_offset
    c.pause(follower, 500)                       # the HW stays behind for 500 ms
    box: dict = {}
    start = c.now
    send(c, "h", m.OffsetCommitRequest("h", -1, "", None, {T1: (4, -1, "")}), box)
    send(c, "delete", m.DeleteGroupsRequest(("g", "nobody")), box)
    c.advance(1)
    # in memory the group is gone at once: ListGroups no longer lists it ...
    assert [g.group_id for g in raw.call(coord, m.ListGroupsRequest()).groups] == ["h"]
    c.advance(50)
    # ... and one batch holds the other group's commit and g's tombstones
    assert records_from(c, leo) == [[("offset", "h", "t", 1, 4), ("offset", "g", "t", 0, None), ("group", "g", None)]]
    assert "delete" not in box                     # appended, not replicated: not answered yet
    c.run_until(lambda: len(box) == 2)
    t, resp = box["delete"]
    assert t >= start + 500 and results(resp) == {"g": E.NONE, "nobody": E.GROUP_ID_NOT_FOUND}
    assert raw.call(coord, m.OffsetFetchRequest("g", (T0,), require_stable=True)).offsets == {T0: (-1, -1, "", E.NONE)}
    assert "deleting group(s) 'g': 2 tombstone(s)" in narrations(c)


def test_a_failed_batch_brings_the_group_back_with_its_offsets():
    c, raw = lab(**{"group.coordinator.append.linger.ms": 1_000})
    coord = c.group_coordinator("g")
    leo = offsets_log(c).log_end_offset
    box: dict = {}
    send(c, "delete", m.DeleteGroupsRequest(("g",)), box)
    c.advance(10)
    assert raw.call(coord, m.DescribeGroupsRequest(("g",))).groups[0].group_state == "Dead"    # gone in memory
    alter_offsets_topic(c, "max.message.bytes", "100")       # the lingering batch's append is refused
    c.run_until(lambda: "delete" in box)
    assert results(box["delete"][1]) == {"g": E.UNKNOWN_SERVER_ERROR}
    assert records_from(c, leo) == []
    assert raw.call(coord, m.DescribeGroupsRequest(("g",))).groups[0].group_state == "Empty"
    assert raw.call(coord, m.OffsetFetchRequest("g", (T0,), require_stable=True)).offsets == {T0: (1, -1, "", E.NONE)}
    # and it can be deleted again
    again: dict = {}
    alter_offsets_topic(c, "max.message.bytes", "1048588")
    send(c, "again", m.DeleteGroupsRequest(("g",)), again)
    c.run_until(lambda: "again" in again)
    assert results(again["again"][1]) == {"g": E.NONE}


def test_a_partition_only_a_pending_transactional_commit_holds_gets_a_tombstone_too():
    c, raw = lab()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    p.begin_transaction()
    group = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"}).consumer_group_metadata()
    p.send_offsets_to_transaction([TopicPartition("t", 2, 9)], group)       # pending: the transaction is open
    c.run_until(lambda: offsets_log(c).high_watermark == offsets_log(c).log_end_offset)
    leo = offsets_log(c).log_end_offset
    box: dict = {}
    send(c, "delete", m.DeleteGroupsRequest(("g",)), box)
    c.run_until(lambda: "delete" in box)
    assert results(box["delete"][1]) == {"g": E.NONE}
    assert records_from(c, leo) == [[("offset", "g", "t", 0, None), ("offset", "g", "t", 2, None), ("group", "g", None)]]
