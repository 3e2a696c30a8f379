"""A request the client gives up on (its request timeout passed) and the others in flight on the connection it then
closes, as the application sees them, per client dialect (dialect.LOCAL_TIMEOUT).

librdkafka fails the request with its local _TIMED_OUT (-185, rd_kafka_broker_timeout_scan) and, socket.max.fails
being 1, takes the connection down failing the others in flight with _TIMED_OUT too (rd_kafka_broker_fail); a
Produce's records then say _MSG_TIMED_OUT (rd_kafka_handle_Produce_error).  Kafka's Java client fails every request
in flight on the connection as timed out (NetworkClient.processTimeoutDisconnection): REQUEST_TIMED_OUT
(TimeoutException).  A broker's own REQUEST_TIMED_OUT (7) stays 7 in both."""
import pytest

from txnlab import Cluster, Producer

PRODUCE_SEEN = {"librdkafka": ("_MSG_TIMED_OUT", -192), "java": ("REQUEST_TIMED_OUT", 7)}


def _producer_cut_off(dialect, c, **cfg):
    """A producer (retries=0: a failed request fails its records) that wrote one record to t-0, then a network
    partition cuts it off from t-0's leader."""
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 0, "retries": 0, "enable.idempotence": False,
                  "batch.num.messages": 1, "sim.client.dialect": dialect, "socket.timeout.ms": 4_000,
                  "request.timeout.ms": 4_000, "message.timeout.ms": 60_000, **cfg})
    p.produce("t", value=b"before", partition=0)
    assert p.flush(10) == 0
    return p


def _two_in_flight(c, p):
    """Two records produced at once: two Produce requests in flight on one connection to a leader that cannot be
    reached; [(ms after producing, error name, code)] of their delivery reports."""
    report = []
    t0 = c.kernel.now
    for v in (b"v0", b"v1"):
        p.produce("t", value=v, partition=0,
                  on_delivery=lambda err, msg: report.append((c.kernel.now - t0, err.name(), err.code())))
    p.flush(30)
    sent = [m for m in c.network_messages() if m.api == "Produce" and not m.is_response and m.sent_at >= t0]
    assert len(sent) == 2 and sent[0].conn is sent[1].conn
    return report


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_a_produce_timed_out_here_and_the_one_in_flight_with_it(dialect):
    """The first Produce times out after its 4 s; the second, in flight on the same connection, fails when the
    client closes it.  librdkafka: both requests fail with _TIMED_OUT, their records report _MSG_TIMED_OUT (the
    second used to be a transport error, _TRANSPORT); Java: both REQUEST_TIMED_OUT (Sender.handleProduceResponse,
    wasTimedOut(); the second used to be NETWORK_EXCEPTION)."""
    c = Cluster(brokers=3, seed=11)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = _producer_cut_off(dialect, c)
    c.partition([p._node.name], [f"broker-{c.leader('t', 0)}"])
    assert _two_in_flight(c, p) == [(4_000, *PRODUCE_SEEN[dialect])] * 2


def test_a_brokers_request_timed_out_stays_7_next_to_the_clients_own_timeouts():
    """librdkafka: the leader's acks=all wait expires (its followers are cut off from it: request.timeout.ms, 1 s, is
    the ack timeout it was told) and it answers REQUEST_TIMED_OUT: the record reports the broker's 7 ("Broker:
    Request timed out"), not a local code; then the producer is cut off from the leader and its own timeouts
    report _MSG_TIMED_OUT for both requests in flight."""
    c = Cluster(brokers=3, seed=11)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = _producer_cut_off("librdkafka", c, **{"request.timeout.ms": 1_000})
    leader = c.leader("t", 0)
    c.partition([f"broker-{leader}"], [f"broker-{b}" for b in (0, 1, 2) if b != leader])
    report = []
    p.produce("t", value=b"unreplicated", partition=0, on_delivery=lambda err, msg: report.append(err))
    p.flush(30)
    [err] = report
    assert (err.code(), err.name(), err.str()) == (7, "REQUEST_TIMED_OUT", "request timed out")
    c.heal()
    c.partition([p._node.name], [f"broker-{leader}"])
    assert _two_in_flight(c, p) == [(4_000, "_MSG_TIMED_OUT", -192)] * 2


def _admin_describe_configs_timing_out(dialect):
    """An admin client asks one broker for its configs and a topic's (two DescribeConfigs in flight on its one
    connection) while that broker is paused; the call's request_timeout is the request's 5 s.  Returns
    [(code, name)] of the two futures' errors."""
    from txnlab.admin import AdminClient, ConfigResource, ResourceType
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t", partitions=1)
    a = AdminClient({"bootstrap.servers": c.bootstrap, "sim.client.dialect": dialect, "socket.timeout.ms": 5_000,
                     "request.timeout.ms": 5_000})
    a.list_topics()                                   # connected, and knows the broker
    c.pause("broker-0", 20_000)
    futures = a.describe_configs([ConfigResource(ResourceType.BROKER, "0"), ConfigResource(ResourceType.TOPIC, "t")],
                                 request_timeout=5)
    sent = [m for m in c.network_messages() if m.api == "DescribeConfigs" and not m.is_response]
    assert len(sent) == 2 and sent[0].conn is sent[1].conn
    out = []
    for f in futures.values():
        e = f.exception(30).args[0]
        out.append((e.code(), e.name()))
    return out


@pytest.mark.parametrize("dialect,seen", [("librdkafka", (-185, "_TIMED_OUT")), ("java", (7, "REQUEST_TIMED_OUT"))])
def test_admin_calls_whose_requests_timed_out_here(dialect, seen):
    """librdkafka: both results carry _TIMED_OUT (rd_kafka_admin_handle_response; it used to be REQUEST_TIMED_OUT
    and NETWORK_EXCEPTION); Java: both TimeoutException, the call's deadline passed (the second used to be
    NETWORK_EXCEPTION)."""
    assert _admin_describe_configs_timing_out(dialect) == [seen, seen]


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_a_create_partitions_the_broker_answers_request_timed_out_stays_7(dialect):
    """The controller does not answer within the operation timeout: the broker answers the topic REQUEST_TIMED_OUT
    (7), a broker's answer, not a client's timeout, in both dialects; the same admin client's own timeouts are
    local (paired here so that the check has something to tell apart)."""
    from txnlab.admin import AdminClient, NewPartitions
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t", partitions=1)
    a = AdminClient({"bootstrap.servers": c.bootstrap, "sim.client.dialect": dialect})
    a.list_topics()
    c.pause("controller", 10_000)
    e = a.create_partitions([NewPartitions("t", 2)], operation_timeout=1)["t"].exception(30).args[0]
    assert (e.code(), e.name()) == (7, "REQUEST_TIMED_OUT")
    assert _admin_describe_configs_timing_out(dialect)[1][0] == {"librdkafka": -185, "java": 7}[dialect]


def _consumer_asks_a_paused_leader(dialect):
    """A consumer asks offsets_for_times of two partitions of one leader (two ListOffsets in flight on its one
    connection) while that broker is paused; each request waits the consumer's 5 s.  [(code, name)] per
    partition."""
    from txnlab import Consumer, TopicPartition
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t", partitions=2)
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect,
                  "socket.timeout.ms": 5_000, "request.timeout.ms": 5_000})
    k.offsets_for_times([TopicPartition("t", 0, 0)], timeout=10)    # it knows the leader
    c.pause("broker-0", 60_000)
    t0 = c.kernel.now
    got = k.offsets_for_times([TopicPartition("t", 0, 0), TopicPartition("t", 1, 0)], timeout=30)
    sent = [m for m in c.network_messages() if m.api == "ListOffsets" and not m.is_response and m.sent_at >= t0]
    assert len(sent) == 2 and sent[0].conn is sent[1].conn
    return [(tp.error.code(), tp.error.name()) for tp in got]


@pytest.mark.parametrize("dialect,seen", [("librdkafka", (-185, "_TIMED_OUT")), ("java", (7, "REQUEST_TIMED_OUT"))])
def test_a_consumers_list_offsets_timed_out_here(dialect, seen):
    """librdkafka: both partitions' errors are _TIMED_OUT (they used to be REQUEST_TIMED_OUT and NETWORK_EXCEPTION);
    Java: offsetsForTimes retries a disconnect until its timeout and throws TimeoutException (REQUEST_TIMED_OUT)."""
    assert _consumer_asks_a_paused_leader(dialect) == [seen, seen]


@pytest.mark.parametrize("dialect,seen,attempts", [("librdkafka", (-185, "_TIMED_OUT"), 3),
                                                   ("java", (13, "NETWORK_EXCEPTION"), 1)])
def test_commits_whose_offset_commits_timed_out_here(dialect, seen, attempts):
    """Two asynchronous commits: their OffsetCommit requests travel together on the connection to the group
    coordinator, which never gets them in time (each delayed 100 s); every attempt of the first times out, and the
    second fails with the connection closed then, until both give up.  What on_commit reports: librdkafka
    _TIMED_OUT for both (it used to be REQUEST_TIMED_OUT and NETWORK_EXCEPTION), after three sends each (the
    request buffer's RD_KAFKA_REQUEST_DEFAULT_RETRIES = 2; a timeout is not deferred; it used to be five); Java
    sends each once (commitAsync does not retry) and reports RetriableCommitFailedException caused by the
    disconnect, NETWORK_EXCEPTION, for both (dialect.commit_error; it used to be REQUEST_TIMED_OUT after five
    attempts)."""
    from txnlab import Consumer, TopicPartition
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t", partitions=1)
    reports = []
    k = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "sim.client.dialect": dialect,
                  "enable.auto.commit": False, "socket.timeout.ms": 5_000, "request.timeout.ms": 5_000,
                  "on_commit": lambda err, parts: reports.append(err)})
    k.assign([TopicPartition("t", 0, 0)])
    k.commit(offsets=[TopicPartition("t", 0, 0)], asynchronous=False)      # the coordinator is known
    c.delay_next("OffsetCommit", 100_000, count=100)
    t0 = c.kernel.now
    k.commit(offsets=[TopicPartition("t", 0, 1)])
    k.commit(offsets=[TopicPartition("t", 0, 2)])
    for _ in range(20):
        if len(reports) == 2:
            break
        k.poll(5)
    sent = [m for m in c.network_messages() if m.api == "OffsetCommit" and not m.is_response and m.sent_at >= t0]
    assert len(sent) == 2 * attempts and sent[0].conn is sent[1].conn
    assert [(e.code(), e.name()) for e in reports] == [seen, seen]


def test_java_transactional_records_in_flight_when_both_timeouts_pass_expire_first():
    """Java, in a transaction, delivery.timeout.ms = request.timeout.ms (the least Java allows with linger.ms 0):
    two Produce requests in flight when the leader is cut off.  At 4 s both batches reach their delivery timeout
    and the first request its request timeout.  Java's Sender.runOnce expires the batches in flight first
    (sendProducerData: getExpiredInflightBatches, `deliveryTimeoutMs <= now - createdMs`) before NetworkClient.poll
    times the request out (which needs more than request.timeout.ms since it was sent): both records report the
    expiry (the lab's _MSG_TIMED_OUT, with Java's "Expiring 1 record(s)" words), and so does the transaction's
    abortable error, which commit_transaction raises; the request timeout that follows changes nothing."""
    from txnlab import KafkaException
    c = Cluster(brokers=3, seed=11)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 0, "transactional.id": "x", "batch.num.messages": 1,
                  "sim.client.dialect": "java", "request.timeout.ms": 4_000, "delivery.timeout.ms": 4_000})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"first", partition=0)
    assert p.flush(10) == 0                           # t-0 is in the transaction
    c.partition([p._node.name], [f"broker-{c.leader('t', 0)}"])
    assert _two_in_flight(c, p) == [(4_000, "_MSG_TIMED_OUT", -192)] * 2
    with pytest.raises(KafkaException) as e:
        p.commit_transaction(20)
    err = e.value.args[0]
    assert (err.code(), err.txn_requires_abort(), err.fatal()) == (-192, True, False)
    assert "Expiring 1 record(s) for t-0" in err.str()


def test_the_markers_are_the_codes_the_retry_rules_know():
    """What the kernel fails a request with when the client gives up on it: equal to REQUEST_TIMED_OUT and
    NETWORK_EXCEPTION (so retrying is unchanged), but told apart when the application is told: a broker's
    REQUEST_TIMED_OUT stays 7 in both dialects."""
    from txnlab.client.dialect import LOCAL_TIMEOUT, Action, classify, seen_as
    from txnlab.protocol.errors import CLOSED_AFTER_TIMEOUT, TIMED_OUT_HERE, Errors
    assert (TIMED_OUT_HERE, CLOSED_AFTER_TIMEOUT) == (Errors.REQUEST_TIMED_OUT, Errors.NETWORK_EXCEPTION)
    assert TIMED_OUT_HERE.retriable and CLOSED_AFTER_TIMEOUT.retriable
    assert (TIMED_OUT_HERE.name, str(CLOSED_AFTER_TIMEOUT)) == ("REQUEST_TIMED_OUT", "NETWORK_EXCEPTION(13)")
    for dialect in ("librdkafka", "java"):
        for api in ("InitProducerId", "AddPartitionsToTxn", "EndTxn", "Produce"):
            assert classify(dialect, api, TIMED_OUT_HERE) is classify(dialect, api, Errors.REQUEST_TIMED_OUT)
        assert seen_as(dialect, Errors.REQUEST_TIMED_OUT) is Errors.REQUEST_TIMED_OUT
        assert seen_as(dialect, TIMED_OUT_HERE) == seen_as(dialect, CLOSED_AFTER_TIMEOUT) == LOCAL_TIMEOUT[dialect]
    assert LOCAL_TIMEOUT == {"librdkafka": -185, "java": 7}
    assert classify("librdkafka", "EndTxn", TIMED_OUT_HERE) is Action.RETRY


def test_a_remote_clients_request_timed_out_in_the_served_cluster():
    """Through the front door: the request of a client outside the kernel times out in the cluster's kernel; the door
    says which local timeout it was, so the remote librdkafka consumer reports _TIMED_OUT (it used to be
    REQUEST_TIMED_OUT)."""
    from txnlab import Consumer, TopicPartition
    c = Cluster(brokers=1, seed=5)
    c.create_topic("t", partitions=1)
    addr = c.serve()
    try:
        k = Consumer({"bootstrap.servers": addr, "group.id": "g", "socket.timeout.ms": 5_000,
                      "request.timeout.ms": 5_000})
        k.offsets_for_times([TopicPartition("t", 0, 0)], timeout=10)
        c.pause("broker-0", 60_000)
        [tp] = k.offsets_for_times([TopicPartition("t", 0, 0)], timeout=30)
        assert (tp.error.code(), tp.error.name()) == (-185, "_TIMED_OUT")
    finally:
        c.front_door.stop()
