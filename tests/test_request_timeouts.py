"""How long a client waits for a request's answer, per client dialect (dialect.REQUEST_TIMEOUT).

librdkafka times every request with socket.timeout.ms unless the request's builder sets its own
(rd_kafka_buf_new_request0 in rdkafka_buf.c; the overrides in rdkafka_request.c and rdkafka_fetcher.c), and a
transactional producer's socket.timeout.ms defaults to transaction.timeout.ms - 100.  Kafka's Java client
times every request with request.timeout.ms, JoinGroup with at least the rebalance timeout + 5 s."""
import pytest

from txnlab import Cluster, KafkaException, Producer
from txnlab.client.config import consumer_config, producer_config
from txnlab.client.dialect import request_timeouts


def _end_txn_gives_up_after(dialect, **cfg):
    """The EndTxn of a commit reaches a coordinator that does not answer it (it arrives 100 s late): how long the
    producer waits before it gives up on it (and closes the connection)."""
    c = Cluster(brokers=3, seed=1, config={"transaction.state.log.num.partitions": 3})
    c.create_topic("out", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "slow-coordinator",
                  "sim.client.dialect": dialect, **cfg})
    p.init_transactions()
    p.begin_transaction()
    p.produce("out", value=b"v", partition=0)
    p.flush()
    c.delay_next("EndTxn", 100_000)
    try:
        p.commit_transaction(150)               # the EndTxn is retried when the first one is given up
    except KafkaException as e:                 # (at librdkafka's defaults the retry races the transaction's timeout)
        assert not e.args[0].fatal()
    first = next(m for m in c.network_messages() if m.api == "EndTxn" and not m.is_response)
    gave_up = next(e for e in c.trace if "gave up waiting for the EndTxn response" in e.narration)
    c.run_until_idle()
    return gave_up.time - first.sent_at, c.transaction_state("slow-coordinator")["state"]


def test_librdkafka_waits_socket_timeout_for_end_txn_transaction_timeout_minus_100_ms():
    """rd_kafka_EndTxnRequest sets no timeout: socket.timeout.ms, 60 000 - 100 for a transactional producer."""
    assert _end_txn_gives_up_after("librdkafka")[0] == 59_900


def test_librdkafka_end_txn_follows_transaction_timeout_and_ignores_request_timeout():
    assert _end_txn_gives_up_after("librdkafka", **{"transaction.timeout.ms": 20_000,
                                                    "request.timeout.ms": 1_000})[0] == 19_900


def test_librdkafka_end_txn_waits_an_explicit_socket_timeout():
    assert _end_txn_gives_up_after("librdkafka", **{"socket.timeout.ms": 5_000}) == (5_000, "CompleteCommit")


def test_java_waits_request_timeout_for_end_txn():
    """Kafka's Java client: TransactionManager's requests go out with request.timeout.ms (30 s)."""
    assert _end_txn_gives_up_after("java") == (30_000, "CompleteCommit")    # the retry commits


def test_java_end_txn_ignores_socket_timeout():
    assert _end_txn_gives_up_after("java", **{"socket.timeout.ms": 5_000, "request.timeout.ms": 7_000}) \
        == (7_000, "CompleteCommit")


TXN_APIS = ("FindCoordinator", "Metadata", "InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn",
            "TxnOffsetCommit", "EndTxn")


@pytest.mark.parametrize("dialect,expected", [("librdkafka", 59_900), ("java", 30_000)])
def test_a_transactional_producers_requests_share_one_timeout(dialect, expected):
    t = request_timeouts(producer_config({"bootstrap.servers": "x:9092", "transactional.id": "t",
                                          "sim.client.dialect": dialect}))
    assert {api: t[api] for api in TXN_APIS} == {api: expected for api in TXN_APIS}


def test_an_idempotent_librdkafka_producer_waits_socket_timeout_60_s():
    t = request_timeouts(producer_config({"bootstrap.servers": "x:9092", "enable.idempotence": True}))
    assert (t["InitProducerId"], t["Metadata"], t["ApiVersions"]) == (60_000, 60_000, 10_000)


def test_librdkafka_consumer_request_timeouts_follow_rdkafka_request_c():
    t = request_timeouts(consumer_config({"bootstrap.servers": "x:9092", "group.id": "g"}))
    assert {api: t[api] for api in ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "Fetch", "OffsetCommit",
                                    "OffsetFetch", "ListOffsets", "FindCoordinator", "Metadata")} == {
        "JoinGroup": 300_000 + 3_000,           # max.poll.interval.ms + 3 s, forced
        "SyncGroup": 45_000 + 3_000,            # session.timeout.ms + 3 s, capped by socket.timeout.ms
        "Heartbeat": 45_000,                    # session.timeout.ms, capped
        "LeaveGroup": 5_000,                    # best effort
        "Fetch": 60_000 + 500,                  # socket.timeout.ms + fetch.wait.max.ms
        "OffsetCommit": 60_000, "OffsetFetch": 60_000, "ListOffsets": 60_000,
        "FindCoordinator": 60_000, "Metadata": 60_000}


def test_librdkafka_caps_session_based_timeouts_by_socket_timeout():
    t = request_timeouts(consumer_config({"bootstrap.servers": "x:9092", "group.id": "g",
                                          "socket.timeout.ms": 4_000}))
    assert (t["SyncGroup"], t["Heartbeat"], t["LeaveGroup"], t["JoinGroup"]) == (4_000, 4_000, 4_000, 303_000)


def test_java_consumer_request_timeouts():
    t = request_timeouts(consumer_config({"bootstrap.servers": "x:9092", "group.id": "g",
                                          "sim.client.dialect": "java"}))
    assert t["JoinGroup"] == 300_000 + 5_000      # max(request.timeout.ms, rebalance timeout + 5 s)
    assert {t[api] for api in ("SyncGroup", "Heartbeat", "LeaveGroup", "Fetch", "OffsetCommit", "Metadata")} \
        == {30_000}


def test_find_coordinator_to_an_unresponsive_broker_waits_socket_timeout():
    """FindCoordinator (and Metadata) used to give up after a fixed 5 s; librdkafka waits socket.timeout.ms."""
    c = Cluster(brokers=1, seed=1)
    c.create_topic("out", partitions=1)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tid", "socket.timeout.ms": 12_000})
    c.delay_next("FindCoordinator", 100_000)
    p.init_transactions()
    first = next(m for m in c.network_messages() if m.api == "FindCoordinator" and not m.is_response)
    gave_up = next(e for e in c.trace if "gave up waiting for the FindCoordinator response" in e.narration)
    assert gave_up.time - first.sent_at == 12_000


@pytest.mark.parametrize("dialect,cfg,expected", [
    ("librdkafka", {}, (60_000, 60_000)),                            # both default to socket.timeout.ms
    ("librdkafka", {"socket.timeout.ms": 7_000}, (7_000, 7_000)),
    ("java", {}, (60_000, 30_000)),                                  # default.api.timeout.ms; request.timeout.ms
])
def test_admin_call_defaults(dialect, cfg, expected):
    from txnlab.client.config import admin_config
    from txnlab.client.dialect import admin_timeout
    c = admin_config({"bootstrap.servers": "x:9092", "sim.client.dialect": dialect, **cfg})
    assert (admin_timeout(c, "request_timeout"), admin_timeout(c, "operation_timeout")) == expected


def test_librdkafka_admin_create_topics_sends_socket_timeout_as_its_operation_timeout():
    from txnlab.admin import AdminClient, NewTopic
    c = Cluster(brokers=1, seed=1)
    a = AdminClient({"bootstrap.servers": c.bootstrap, "socket.timeout.ms": 9_000})
    a.create_topics([NewTopic("t", 1, 1)])["t"].result()
    req = next(m for m in c.network_messages() if m.api == "CreateTopics" and not m.is_response
               and m.src.startswith("admin"))
    assert req.payload.timeout_ms == 9_000


# ------------------------------------------------------------------ Produce (dialect.PRODUCE_TIMEOUT)
def _cut_off_from_its_leader(**cfg):
    """(cluster, producer): the producer has written one record to t-0, then a network partition cuts it off
    from t-0's leader."""
    c = Cluster(brokers=3, seed=11)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 0, **cfg})
    p.produce("t", value=b"before", partition=0)
    assert p.flush(10) == 0
    c.partition([p._node.name], [f"broker-{c.leader('t', 0)}"])
    return c, p


def _produce_to_a_partitioned_away_leader(dialect, **cfg):
    """A producer writes one record to a partition whose leader it cannot reach any more (a network partition):
    returns (when each Produce was sent, when the producer gave up on each, (when, error) of the delivery
    report), in ms since the record was produced, and the ack timeouts the Produce requests carried."""
    c, p = _cut_off_from_its_leader(**{"sim.client.dialect": dialect, **cfg})
    report = []
    p.produce("t", value=b"x", partition=0, on_delivery=lambda err, msg: report.append((c.kernel.now, err)))
    t0 = c.kernel.now
    p.flush(400)
    sent = [m for m in c.network_messages() if m.api == "Produce" and not m.is_response and m.src == p._node.name
            and m.sent_at >= t0]
    gave_up = [e.time - t0 for e in c.trace if "gave up waiting for the Produce response" in e.narration]
    [(at, err)] = report
    return [m.sent_at - t0 for m in sent], gave_up, (at - t0, err), {m.payload.timeout_ms for m in sent}


def test_librdkafka_gives_up_on_a_produce_after_socket_timeout_then_when_its_record_expires():
    """rd_kafka_ProduceRequest: the request's timeout is what is left of its first record's message.timeout.ms,
    capped by socket.timeout.ms (rd_kafka_buf_calc_timeout); request.timeout.ms is not waited for."""
    sent, gave_up, (at, err), acks = _produce_to_a_partitioned_away_leader(
        "librdkafka", **{"socket.timeout.ms": 4_000, "message.timeout.ms": 10_000, "request.timeout.ms": 1_000})
    assert [g - s for s, g in zip(sent, gave_up)] == [4_000, 4_000, 10_000 - sent[2]]   # the last: what is left
    assert gave_up[-1] == 10_000
    assert (at, err.code(), err.name(), err.str()) == (10_000, -192, "_MSG_TIMED_OUT", "Local: Message timed out")
    assert acks == {1_000}                  # request.timeout.ms: the ack timeout the broker is told


def test_librdkafka_waits_what_is_left_of_message_timeout_when_it_is_less_than_socket_timeout():
    sent, gave_up, (at, err), _ = _produce_to_a_partitioned_away_leader("librdkafka", **{"message.timeout.ms": 5_000})
    assert (sent, gave_up) == ([0], [5_000])              # socket.timeout.ms is 60 s
    assert (at, err.name()) == (5_000, "_MSG_TIMED_OUT")


def test_librdkafka_a_produce_that_timed_out_and_may_not_be_retried_reports_msg_timed_out():
    """retries=0: the request's _TIMED_OUT is permanent, and rd_kafka_handle_Produce_error translates it into
    the records' _MSG_TIMED_OUT (not the broker's REQUEST_TIMED_OUT)."""
    sent, gave_up, (at, err), _ = _produce_to_a_partitioned_away_leader(
        "librdkafka", **{"socket.timeout.ms": 4_000, "retries": 0})
    assert (sent, gave_up, at, err.name()) == ([0], [4_000], 4_000, "_MSG_TIMED_OUT")


def test_java_gives_up_on_a_produce_after_request_timeout_and_ignores_socket_timeout():
    sent, gave_up, (at, err), acks = _produce_to_a_partitioned_away_leader(
        "java", **{"request.timeout.ms": 3_000, "delivery.timeout.ms": 10_000, "socket.timeout.ms": 60_000})
    assert [g - s for s, g in zip(sent, gave_up)] == [3_000] * len(gave_up) and len(gave_up) >= 2
    assert acks == {3_000}
    # the last attempt is still in flight when the record's delivery.timeout.ms passes: Java fails it then, with
    # its TimeoutException, without giving up on the request (Sender.getExpiredInflightBatches)
    assert len(sent) == len(gave_up) + 1
    assert (at, err.str()) == (10_000, "Expiring 1 record(s) for t-0:10000 ms has passed since batch creation")


def test_librdkafka_every_record_in_flight_when_its_message_timeout_passes_reports_msg_timed_out():
    """Two Produce requests in flight on one connection, their records produced at the same time: the first
    times out when they expire and the connection goes down with it; the second fails with the connection, and
    its records, expired too, are _MSG_TIMED_OUT, not a transport error (librdkafka fails both requests with
    _TIMED_OUT, rd_kafka_broker_timeout_scan, and the records expire: rd_kafka_msgq_age_scan)."""
    c, p = _cut_off_from_its_leader(**{"batch.num.messages": 1, "message.timeout.ms": 5_000})
    report = []
    t0 = c.kernel.now
    for v in (b"v0", b"v1"):
        p.produce("t", value=v, partition=0, on_delivery=lambda err, msg: report.append((c.kernel.now - t0, err)))
    p.flush(30)
    sent = [m for m in c.network_messages() if m.api == "Produce" and not m.is_response and m.sent_at >= t0]
    assert len(sent) == 2 and sent[0].conn is sent[1].conn
    assert [(at, err.name()) for at, err in report] == [(5_000, "_MSG_TIMED_OUT")] * 2


def test_librdkafka_records_with_message_timeout_0_never_expire():
    """message.timeout.ms 0 is "infinite" (rd_kafka_msg_new0: rkm_ts_timeout INT64_MAX): each Produce waits
    socket.timeout.ms and the record is retried until the leader can be reached again."""
    c, p = _cut_off_from_its_leader(**{"message.timeout.ms": 0, "socket.timeout.ms": 4_000})
    report = []
    t0 = c.kernel.now
    p.produce("t", value=b"x", partition=0, on_delivery=lambda err, msg: report.append(err))
    c.advance(20_000)
    assert report == []
    gave_up = [e.time - t0 for e in c.trace if "gave up waiting for the Produce response" in e.narration]
    assert gave_up[:2] == [4_000, 8_100]          # socket.timeout.ms each, the retry after its 100 ms backoff
    c.heal()
    assert p.flush(30) == 0 and report == [None]


def test_librdkafka_a_record_waiting_for_its_topic_with_message_timeout_0_waits_for_it():
    c = Cluster(brokers=1, seed=1, config={"auto.create.topics.enable": False})
    p = Producer({"bootstrap.servers": c.bootstrap, "message.timeout.ms": 0})
    report = []
    p.produce("later", value=b"x", on_delivery=lambda err, msg: report.append(err))
    assert p.flush(10) == 1 and report == []      # no such topic yet: the record waits, it does not expire
    c.create_topic("later")
    assert p.flush(30) == 0 and report == [None]


@pytest.mark.parametrize("dialect,cfg,left,expected", [
    ("librdkafka", {"transactional.id": "t"}, 60_000, 59_900),         # socket.timeout.ms: 60 000 - 100
    ("librdkafka", {"transactional.id": "t"}, 2_500, 2_500),           # what is left of message.timeout.ms
    ("librdkafka", {"transactional.id": "t"}, 0, 100),                 # already past: 100 ms "to produce anyway"
    ("librdkafka", {"socket.timeout.ms": 7_000}, None, 7_000),         # message.timeout.ms 0: never expires
    ("java", {"transactional.id": "t"}, 2_500, 30_000),                # request.timeout.ms
    ("java", {"request.timeout.ms": 4_000}, 100, 4_000),
])
def test_produce_timeout_rule(dialect, cfg, left, expected):
    from txnlab.client.dialect import PRODUCE_TIMEOUT
    finalized = producer_config({"bootstrap.servers": "x:9092", "sim.client.dialect": dialect, **cfg})
    assert PRODUCE_TIMEOUT[dialect](finalized, left) == expected       # the table the sender reads
