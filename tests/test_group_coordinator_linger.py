"""The group coordinator's write batching, as Kafka 4.1.1's CoordinatorRuntime does it:

* a write (OffsetCommit, TxnOffsetCommit, SyncGroup's GroupMetadata) is applied in memory at once and its records
  join the batch of its ``__consumer_offsets`` partition; the batch is appended when
  ``group.coordinator.append.linger.ms`` (default 5) has passed since it was started, or when it is full, or
  before a transactional write (never accumulated) -- with linger 0, at the end of each write;
* the operations are answered once the high watermark passes the batch;
* a read at the last committed offset (OffsetFetch without RequireStable) does not see a lingering write; a
  RequireStable fetch joins the batch and is answered after it;
* a failed append fails every operation of the batch (as handleOperationException maps the error) and the
  coordinator's memory goes back to before the batch; losing the partition fails it with NOT_COORDINATOR."""
import pytest

from txnlab import Cluster, Consumer, TopicPartition
from txnlab.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from txnlab.errors import ConfigException
from txnlab.coordinator import offset_records as rec
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors as E
from txnlab.protocol.names import OFFSETS_TOPIC
from txnlab.protocol.record_batch import RECORD_BATCH_OVERHEAD, RECORD_OVERHEAD_ESTIMATE

from helpers import RawClient

T0, T1, T2 = ("t", 0), ("t", 1), ("t", 2)


def lab(**config):
    """Two brokers, one __consumer_offsets partition on both; group 'g' has committed t-0=1."""
    c = Cluster(brokers=2, seed=3, config={"offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": 2,
                                           "transaction.state.log.num.partitions": 1,
                                           "transaction.partition.verification.enable": False, **config})
    c.create_topic("t", partitions=3, replication_factor=1)
    Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"}).committed([TopicPartition("t", 0)], 10)
    raw = RawClient(c)
    assert raw.call(c.group_coordinator("g"), m.OffsetCommitRequest("g", -1, "", None, {T0: (1, -1, "")})).errors \
        == {T0: E.NONE}
    c.run_until(lambda: offsets_log(c).high_watermark == offsets_log(c).log_end_offset)
    return c, raw


def offsets_log(c):
    return c.log(OFFSETS_TOPIC, 0, c.group_coordinator("g"))


def send(c, key: str, request, box: dict, coord=None) -> None:
    """Send ``request`` to the coordinator from a client of its own; the answer lands in ``box[key]`` as
    (time, response or error)."""
    raw = RawClient(c, f"raw-{key}")
    coord = c.group_coordinator("g") if coord is None else coord
    raw.send_request(f"broker-{coord}", request,
                     lambda resp, err: box.setdefault(key, (c.now, resp if err is None else err)), timeout_ms=60_000)


def commit(offsets: dict):
    return m.OffsetCommitRequest("g", -1, "", None, {tp: (o, -1, "") for tp, o in offsets.items()})


def batches_from(c, leo: int, row) -> list:
    """The data batches of __consumer_offsets-0 from offset ``leo`` on, each as (base offset, transactional,
    [row(key, record) for each record])."""
    return [(b.base_offset, b.is_transactional, [row(rec.read_key(r.key), r) for r in b.records])
            for b in offsets_log(c).batches if b.base_offset >= leo and not b.is_control]


def new_batches(c, leo: int) -> list:
    """The record batches of __consumer_offsets-0 from offset ``leo`` on, as (base offset, transactional,
    [(topic, partition, committed offset), ...])."""
    return batches_from(c, leo, lambda k, r: (k.topic, k.partition, rec.read_offset_value(r.value).offset))


def narrations(c) -> str:
    return "\n".join(e.narration or "" for e in c.trace)


def test_two_commits_within_the_linger_go_into_one_batch_answered_after_it_is_replicated():
    c, raw = lab()
    follower = next(b for b in c.broker_ids if b != c.group_coordinator("g"))
    leo = offsets_log(c).log_end_offset
    c.pause(follower, 500)                    # the follower does not fetch for 500 ms: the HW stays behind
    box: dict = {}
    start = c.now
    send(c, "a", commit({T0: 5}), box)
    send(c, "b", commit({T1: 6}), box)
    c.advance(4)
    # both writes are in memory and lingering: nothing is in the log yet
    assert offsets_log(c).log_end_offset == leo and box == {}
    c.advance(50)
    # after group.coordinator.append.linger.ms=5 one record batch holds both commits
    assert new_batches(c, leo) == [(leo, False, [("t", 0, 5), ("t", 1, 6)])]
    assert box == {}                          # appended, not replicated: not answered yet
    c.run_until(lambda: len(box) == 2)
    (ta, a), (tb, b) = box["a"], box["b"]
    assert a.errors == {T0: E.NONE} and b.errors == {T1: E.NONE}
    assert ta == tb >= start + 500
    assert offsets_log(c).high_watermark >= leo + 2
    assert "appends the batch of 2 record(s) (2 operation(s)) to __consumer_offsets-0 after lingering 5 ms" \
        in narrations(c)


def test_a_read_does_not_see_a_lingering_commit_and_a_stable_fetch_waits_for_its_batch():
    c, raw = lab(**{"group.coordinator.append.linger.ms": 200})
    leo = offsets_log(c).log_end_offset
    box: dict = {}
    send(c, "commit", commit({T0: 7}), box)
    c.advance(20)
    # OffsetFetch without RequireStable reads at the last committed offset: the old offset
    plain = raw.call(c.group_coordinator("g"), m.OffsetFetchRequest("g", (T0,), require_stable=False))
    assert plain.offsets == {T0: (1, -1, "", E.NONE)}
    assert offsets_log(c).log_end_offset == leo and box == {}          # still lingering
    # with RequireStable: a write operation reading the latest state, answered after the batch it joined
    send(c, "stable", m.OffsetFetchRequest("g", (T0,), require_stable=True), box)
    c.run_until(lambda: len(box) == 2)
    (t_commit, committed), (t_fetch, fetched) = box["commit"], box["stable"]
    assert committed.errors == {T0: E.NONE}
    assert fetched.error == E.NONE and fetched.offsets == {T0: (7, -1, "", E.NONE)}
    assert t_fetch >= t_commit >= 200
    assert new_batches(c, leo) == [(leo, False, [("t", 0, 7)])]


def alter_offsets_topic(c, key: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    res = ConfigResource(ResourceType.TOPIC, OFFSETS_TOPIC)
    res.add_incremental_config(ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET))
    assert admin.incremental_alter_configs([res])[res].result() is None


def test_a_failed_append_fails_every_operation_of_the_batch_and_the_memory_goes_back():
    c, raw = lab(**{"group.coordinator.append.linger.ms": 1_000})
    coord = c.group_coordinator("g")
    leo = offsets_log(c).log_end_offset
    box: dict = {}
    send(c, "a", commit({T0: 7}), box)
    send(c, "b", commit({T1: 8}), box)
    c.advance(10)
    send(c, "stable", m.OffsetFetchRequest("g", (T0, T1), require_stable=True), box)
    c.advance(10)
    # an operator lowers the offsets topic's max.message.bytes while the batch lingers: its append is refused
    # MESSAGE_TOO_LARGE, which handleOperationException answers UNKNOWN_SERVER_ERROR
    alter_offsets_topic(c, "max.message.bytes", "100")
    c.run_until(lambda: len(box) == 3)
    assert box["a"][1].errors == {T0: E.UNKNOWN_SERVER_ERROR}
    assert box["b"][1].errors == {T1: E.UNKNOWN_SERVER_ERROR}
    assert box["stable"][1].error == E.UNKNOWN_SERVER_ERROR     # the fetch had joined the batch
    assert new_batches(c, leo) == []
    # the coordinator's memory is back to before the batch: the latest state holds the old offsets
    stable = raw.call(coord, m.OffsetFetchRequest("g", (T0, T1), require_stable=True))
    assert stable.offsets == {T0: (1, -1, "", E.NONE), T1: (-1, -1, "", E.NONE)}
    assert "MESSAGE_TOO_LARGE -> UNKNOWN_SERVER_ERROR" in narrations(c)


def test_losing_the_offsets_partition_fails_the_lingering_batch_with_not_coordinator():
    c, raw = lab(**{"group.coordinator.append.linger.ms": 1_000})
    coord = c.group_coordinator("g")
    other = next(b for b in c.broker_ids if b != coord)
    leo = offsets_log(c).log_end_offset
    box: dict = {}
    sent = c.now
    send(c, "a", commit({T0: 7}), box)
    send(c, "b", commit({T1: 8}), box)
    c.advance(10)
    c.move_leader(OFFSETS_TOPIC, 0, other)
    c.run_until(lambda: len(box) == 2)
    assert box["a"][1].errors == {T0: E.NOT_COORDINATOR}
    assert box["b"][1].errors == {T1: E.NOT_COORDINATOR}
    assert box["a"][0] - sent < 1_000         # answered when the partition moved, before the linger would end
    c.run_until(lambda: c.group_coordinator("g") == other and not c.broker(other).group_coordinator.manager.loading)
    assert new_batches(c, leo) == []          # the batch never reached the log
    fetched = raw.call(other, m.OffsetFetchRequest("g", (T0, T1), require_stable=True))
    assert fetched.offsets == {T0: (1, -1, "", E.NONE), T1: (-1, -1, "", E.NONE)}


def test_with_linger_zero_each_write_is_appended_at_once():
    c, raw = lab(**{"group.coordinator.append.linger.ms": 0})
    leo = offsets_log(c).log_end_offset
    box: dict = {}
    send(c, "a", commit({T0: 5}), box)
    send(c, "b", commit({T1: 6}), box)
    c.run_until(lambda: offsets_log(c).log_end_offset >= leo + 2)
    # no timer: each write's batch is appended at the end of that write, one batch each
    assert new_batches(c, leo) == [(leo, False, [("t", 0, 5)]), (leo + 1, False, [("t", 1, 6)])]
    c.run_until(lambda: len(box) == 2)
    assert box["a"][1].errors == {T0: E.NONE} and box["b"][1].errors == {T1: E.NONE}
    assert "at once (group.coordinator.append.linger.ms=0)" in narrations(c)
    assert "linger timer" not in narrations(c)


def test_a_transactional_offset_commit_is_not_accumulated_and_appends_the_batch_before_it():
    c, raw = lab(**{"group.coordinator.append.linger.ms": 1_000})
    leo = offsets_log(c).log_end_offset
    box: dict = {}
    start = c.now
    send(c, "plain", commit({T1: 4}), box)
    c.advance(100)
    assert offsets_log(c).log_end_offset == leo               # lingering
    send(c, "txn", m.TxnOffsetCommitRequest("tx", "g", 500, 0, -1, "", None, {T0: (9, -1, "")}, api_version=4), box)
    c.run_until(lambda: len(box) == 2)
    # the plain batch first, then the transactional one in a batch of its own, both long before the linger ends
    assert new_batches(c, leo) == [(leo, False, [("t", 1, 4)]), (leo + 1, True, [("t", 0, 9)])]
    assert box["plain"][1].errors == {T1: E.NONE} and box["txn"][1].errors == {T0: E.NONE}
    assert max(box["plain"][0], box["txn"][0]) - start < 1_000


def test_a_full_batch_is_appended_before_its_linger_ends():
    c, raw = lab(**{"group.coordinator.append.linger.ms": 1_000})
    leo = offsets_log(c).log_end_offset
    one = rec.offset_commit_records("g", {T0: (5, -1, "")}, c.now)[0]
    record = RECORD_OVERHEAD_ESTIMATE + len(one.key) + len(one.value) + 2      # (+2: a later time is longer)
    alter_offsets_topic(c, "max.message.bytes", str(RECORD_BATCH_OVERHEAD + 2 * record + 5))   # two fit, not three
    box: dict = {}
    start = c.now
    for key, tp in (("a", T0), ("b", T1), ("c", T2)):
        send(c, key, commit({tp: 5}), box)
    c.advance(50)
    # the third commit did not fit: the batch of the first two was appended then; the third lingers
    assert new_batches(c, leo) == [(leo, False, [("t", 0, 5), ("t", 1, 5)])]
    c.run_until(lambda: len(box) == 3)
    assert box["a"][0] - start < 1_000 <= box["c"][0] - start
    assert new_batches(c, leo)[1] == (leo + 2, False, [("t", 2, 5)])
    assert "it is full" in narrations(c)


@pytest.mark.parametrize("value, rule", [(-1, "must be at least 0"), ("soon", "expected an integer")])
def test_an_invalid_linger_fails_at_construction_naming_the_key_and_the_rule(value, rule):
    with pytest.raises(ConfigException) as e:
        Cluster(brokers=1, config={"group.coordinator.append.linger.ms": value})
    assert "group.coordinator.append.linger.ms" in str(e.value) and rule in str(e.value)


def test_the_linger_defaults_to_5_ms():
    c = Cluster(brokers=1)
    assert c.broker_config["group.coordinator.append.linger.ms"] == 5
