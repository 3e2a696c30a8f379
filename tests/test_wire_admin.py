"""The transaction admin APIs at the wire door (DescribeProducers, DescribeTransactions, ListTransactions), asked
by Apache Kafka's own ``kafka-transactions`` tool (org.apache.kafka.tools.TransactionsCommand, on Kafka's Java
Admin client) and by hand-made frames.  A transaction is left open on a lab cluster and the tool must print what
the engine holds: state Ongoing, the producer id and epoch, the partitions, the open transaction's first offset.
Times in the tool's output are Unix ms, as Kafka's: the lab's simulated milliseconds plus the door's epoch (its
duration column subtracts them from the wall clock and is not checked)."""
from __future__ import annotations

import pytest

import txnlab.admin
from txnlab import Cluster, Producer
from txnlab.protocol.errors import Errors
from txnlab.wire.codec import nested, request_type
from helpers import kafka_transactions_tool
from wire_raw import ask

TID = "copier"


@pytest.fixture
def open_txn():
    """Three brokers, topic ``t`` (2 partitions); ``copier`` committed a0 a1 on t-0 (offsets 0, 1, its COMMIT
    marker at 2) and has a transaction open with c0 at offset 3 of t-0 and c1 at offset 0 of t-1."""
    c = Cluster(brokers=3, seed=1, config={"transaction.state.log.num.partitions": 3})
    c.create_topic("t", partitions=2, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": TID, "transaction.timeout.ms": 900_000})
    p.init_transactions()
    p.begin_transaction()
    for v in (b"a0", b"a1"):
        p.produce("t", value=v, partition=0)
    p.commit_transaction()
    p.begin_transaction()
    p.produce("t", value=b"c0", partition=0)
    p.produce("t", value=b"c1", partition=1)
    p.flush()
    door = c.listen()
    try:
        yield c, door, p
    finally:
        door.close()


def in_lab(c, door) -> dict:
    """What the engine itself says about ``copier`` (txnlab's own admin client, in-process, on the door's clock:
    its times are Unix ms as the real tools' are)."""
    with door.lock:
        admin = txnlab.admin.AdminClient({"bootstrap.servers": c.bootstrap, "sim.clock.epoch.ms": door.epoch_ms})
        return admin.describe_transactions([TID])[TID].result(30)


# ------------------------------------------------------------ the Java tool
def transactions(door, *args: str):
    """``kafka-transactions --bootstrap-server <door> <args>``: (exit code, rows as dicts by column, stdout)."""
    done = kafka_transactions_tool(door, *args)
    lines = [[cell.strip() for cell in line.rstrip("\t\n").split("\t")] for line in done.stdout.splitlines()
             if line.strip()]
    rows = [dict(zip(lines[0], line)) for line in lines[1:]] if done.returncode == 0 and lines else []
    return done.returncode, rows, done.stdout + done.stderr


def test_kafka_transactions_tool_sees_the_open_transaction(open_txn):
    c, door, p = open_txn
    lab = in_lab(c, door)
    assert lab["state"] == "Ongoing"

    rc, rows, out = transactions(door, "list")
    assert rc == 0, out
    assert rows == [{"TransactionalId": TID, "Coordinator": str(lab["coordinator"]),
                     "ProducerId": str(lab["producer_id"]), "TransactionState": "Ongoing"}]

    rc, rows, out = transactions(door, "describe", "--transactional-id", TID)
    assert rc == 0, out
    (row,) = rows
    assert {k: row[k] for k in ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                                "TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs")} == {
        "CoordinatorId": str(lab["coordinator"]), "TransactionalId": TID, "ProducerId": str(lab["producer_id"]),
        "ProducerEpoch": str(lab["producer_epoch"]), "TransactionState": "Ongoing",
        "TransactionTimeoutMs": "900000", "CurrentTransactionStartTimeMs": str(lab["transaction_start_ms"])}
    assert sorted(row["TopicPartitions"].split(",")) == ["t-0", "t-1"]

    rc, rows, out = transactions(door, "describe-producers", "--topic", "t", "--partition", "0")
    assert rc == 0, out
    (row,) = rows
    assert row["ProducerId"] == str(lab["producer_id"]) and row["ProducerEpoch"] == str(lab["producer_epoch"])
    assert row["LastSequence"] == "2"                          # a0, a1, c0: sequences 0, 1, 2
    assert row["CurrentTransactionStartOffset"] == "3"         # c0, after a0 a1 and their COMMIT marker
    rc, rows, out = transactions(door, "describe-producers", "--topic", "t", "--partition", "1")
    assert rc == 0 and rows[0]["CurrentTransactionStartOffset"] == "0", out


def test_kafka_transactions_tool_after_the_commit_and_for_an_unknown_id(open_txn):
    c, door, p = open_txn
    with door.lock:
        p.commit_transaction()
        c.run_until_idle()
    rc, rows, out = transactions(door, "describe", "--transactional-id", TID)
    assert rc == 0, out
    assert rows[0]["TransactionState"] == "CompleteCommit" and rows[0]["TopicPartitions"] == ""
    rc, rows, out = transactions(door, "describe-producers", "--topic", "t", "--partition", "0")
    assert rc == 0 and rows[0]["CurrentTransactionStartOffset"] == "None", out   # no transaction open there
    # ListTransactions v1 (KIP-994): only transactions running longer than the filter; the lab's clock is
    # simulated and nowhere near an hour
    rc, rows, out = transactions(door, "list", "--duration-filter", "3600000")
    assert rc == 0 and rows == [], out
    rc, rows, out = transactions(door, "describe", "--transactional-id", "nobody")
    assert rc != 0 and "could not be found" in out            # TRANSACTIONAL_ID_NOT_FOUND


def test_kafka_transactions_describe_producers_on_a_missing_topic_retries_until_its_timeout(open_txn, tmp_path):
    """As against a real Kafka 4.1.1 broker: the Java Admin looks the leader up with Metadata (auto-creation off),
    and its DescribeProducers lookup tolerates UNKNOWN_TOPIC_OR_PARTITION (PartitionLeaderStrategy built with
    tolerateUnknownTopics), so it asks again until default.api.timeout.ms (60 s by default) runs out.  A name Kafka
    cannot hold fails at once (INVALID_TOPIC_EXCEPTION in Metadata).  Neither creates a topic."""
    c, door, p = open_txn
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=4000\nrequest.timeout.ms=3000\n")
    rc, rows, out = transactions(door, "--command-config", str(config), "describe-producers", "--topic", "nope",
                                 "--partition", "0")
    # (the Java Admin says "timed out" -- or, on a loaded machine, "Timed out waiting for a node assignment")
    assert rc != 0 and "describeProducers(api=METADATA)" in out and "timed out" in out.lower(), out
    rc, rows, out = transactions(door, "--command-config", str(config), "describe-producers", "--topic", "bad/name",
                                 "--partition", "0")
    assert rc != 0 and "InvalidTopicException" in out and "timed out" not in out.lower(), out
    with door.lock:
        assert set(c.topics()) & {"nope", "bad/name"} == set()


# ------------------------------------------------------- hand-made frames
def test_api_versions_advertises_the_admin_apis(open_txn):
    c, door, p = open_txn
    answer = ask(door, 18, 3, client_software_name="raw", client_software_version="1")
    keys = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert keys[61] == (0, 0) and keys[65] == (0, 0) and keys[66] == (0, 2)


def test_metadata_for_a_missing_topic_is_kafkas_answer(open_txn):
    """Kafka's getTopicMetadata: a topic no broker knows, auto-creation off -> UNKNOWN_TOPIC_OR_PARTITION (3) with no
    partitions, nothing created; an illegal name -> INVALID_TOPIC_EXCEPTION (17); auto-creation on (and
    auto.create.topics.enable) -> the topic is created and LEADER_NOT_AVAILABLE (5) answered while it has no leader."""
    c, door, p = open_txn
    T = nested(request_type(3, 12), "topics")
    for _ in range(2):          # asked twice: the first answer created nothing
        r = ask(door, 3, 12, topics=(T(name="nope", topic_id=None), T(name="bad/name", topic_id=None)),
                allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        assert [(t.name, t.error_code, t.partitions) for t in r.topics] == [
            ("nope", Errors.UNKNOWN_TOPIC_OR_PARTITION, ()), ("bad/name", Errors.INVALID_TOPIC_EXCEPTION, ())]
    with door.lock:
        assert "nope" not in c.topics()
    r = ask(door, 3, 12, topics=(T(name="nope", topic_id=None),), allow_auto_topic_creation=True,
            include_topic_authorized_operations=False)
    assert [(t.name, t.error_code) for t in r.topics] == [("nope", Errors.LEADER_NOT_AVAILABLE)]
    with door.lock:
        assert "nope" in c.topics()


def test_list_transactions_filters_by_state_and_names_the_unknown_filters(open_txn):
    c, door, p = open_txn
    coordinator = in_lab(c, door)["coordinator"]
    r = ask(door, 66, 1, coordinator, state_filters=("Ongoing", "Bogus"), producer_id_filters=())
    assert r.error_code == 0 and tuple(r.unknown_state_filters) == ("Bogus",)
    assert [(s.transactional_id, s.transaction_state) for s in r.transaction_states] == [(TID, "Ongoing")]
    r = ask(door, 66, 1, coordinator, state_filters=("CompleteCommit",), producer_id_filters=())
    assert r.error_code == 0 and r.transaction_states == ()


def list_everywhere(c, door, version=2, **filters) -> tuple:
    """ListTransactions asked of every broker (as the Admin does): (error codes, rows (id, state) sorted,
    unknown state filters of each broker)."""
    filters = {"state_filters": (), "producer_id_filters": (), **filters}
    answers = [ask(door, 66, version, b, **filters) for b in c.broker_ids]
    return ({a.error_code for a in answers},
            sorted((s.transactional_id, s.transaction_state) for a in answers for s in a.transaction_states),
            {tuple(a.unknown_state_filters) for a in answers})


def test_list_transactions_v2_filters_by_a_transactional_id_pattern(open_txn):
    """KIP-1152: a regular expression the whole transactional id must match (re2j's matches()); null or empty
    filters nothing; it narrows the other filters; one that does not compile is INVALID_REGULAR_EXPRESSION (128)
    for the whole answer, as Kafka's KafkaApis answers the coordinator's InvalidRegularExpression."""
    c, door, p = open_txn
    with door.lock:
        other = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "loader"})
        other.init_transactions()
    both = [(TID, "Ongoing"), ("loader", "Empty")]
    assert list_everywhere(c, door)[:2] == ({0}, both)                                   # null: all
    assert list_everywhere(c, door, transactional_id_pattern="")[:2] == ({0}, both)
    assert list_everywhere(c, door, transactional_id_pattern="cop.*")[:2] == ({0}, [(TID, "Ongoing")])
    assert list_everywhere(c, door, transactional_id_pattern="op")[:2] == ({0}, [])      # the whole id, not a part
    assert list_everywhere(c, door, transactional_id_pattern="(copi|load)er")[:2] == ({0}, both)
    assert list_everywhere(c, door, transactional_id_pattern="[a-z]+", state_filters=("Empty",))[:2] == \
        ({0}, [("loader", "Empty")])
    for bad in ("cop[", r"(c)\1opier"):      # does not compile; a backreference RE2 refuses
        errors, rows, unknown = list_everywhere(c, door, transactional_id_pattern=bad, state_filters=("Bogus",))
        assert (errors, rows, unknown) == ({128}, [], {()})
    # v1 has no pattern field: every transaction, whatever v2 would have filtered
    assert list_everywhere(c, door, version=1)[:2] == ({0}, both)


def test_kafka_transactions_list_with_a_transactional_id_pattern(open_txn):
    c, door, p = open_txn
    rc, rows, out = transactions(door, "list", "--transactional-id-pattern", "cop.*")
    assert rc == 0 and [r["TransactionalId"] for r in rows] == [TID], out
    rc, rows, out = transactions(door, "list", "--transactional-id-pattern", "opier")
    assert rc == 0 and rows == [], out


def test_describe_transactions_errors_are_kafkas(open_txn):
    c, door, p = open_txn
    coordinator = in_lab(c, door)["coordinator"]
    other = next(b for b in c.broker_ids if b != coordinator)
    (s,) = ask(door, 65, 0, other, transactional_ids=(TID,)).transaction_states
    assert s.error_code == Errors.NOT_COORDINATOR and s.transactional_id == TID
    found, missing, empty = ask(door, 65, 0, coordinator, transactional_ids=(TID, "nobody", "")).transaction_states
    assert found.error_code == 0 and found.transaction_state == "Ongoing"
    assert sorted((t.topic, tuple(t.partitions)) for t in found.topics) == [("t", (0, 1))]
    assert missing.error_code == Errors.TRANSACTIONAL_ID_NOT_FOUND
    assert empty.error_code == Errors.INVALID_REQUEST


def test_describe_producers_errors_are_kafkas(open_txn):
    c, door, p = open_txn
    leader = c.leader("t", 0)
    follower = next(b for b in c.broker_ids if b != leader)
    T = nested(request_type(61, 0), "topics")
    r = ask(door, 61, 0, leader, topics=(T(name="t", partition_indexes=(0, 7)), T(name="nope", partition_indexes=(0,)),
                                         T(name="bad/name", partition_indexes=(0,))))
    (t0, t7), (nope,), (bad,) = (tuple(t.partitions) for t in r.topics)
    assert t0.error_code == 0 and [ps.current_txn_start_offset for ps in t0.active_producers] == [3]
    for unknown in (t7, nope):              # new ApiError(UNKNOWN_TOPIC_OR_PARTITION): the error's own words
        assert unknown.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
        assert unknown.error_message == "This server does not host this topic-partition."
    assert bad.error_code == Errors.INVALID_TOPIC_EXCEPTION and "illegal" in bad.error_message
    (t,) = ask(door, 61, 0, follower, topics=(T(name="t", partition_indexes=(0,)),)).topics
    assert t.partitions[0].error_code == Errors.NOT_LEADER_OR_FOLLOWER
