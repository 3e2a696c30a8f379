"""Connections behave like Kafka's TCP connections: in order, one request of a connection served at a time,
and a lost message breaks the connection (everything in flight on it fails and is retried in order)."""
from txnlab import Cluster, Producer
from txnlab.protocol.errors import Errors

from helpers import values_in_log


def cluster(**cfg):
    c = Cluster(brokers=3, seed=11, config=cfg or None)
    c.create_topic("t", partitions=1, replication_factor=3)
    return c


def pipelined(c, n=5, **cfg):
    """An idempotent producer with ``n`` batches in flight at once (one record per batch)."""
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "linger.ms": 0,
                  "batch.num.messages": 1, "max.in.flight.requests.per.connection": 5, **cfg})
    got = []
    for i in range(n):
        p.produce("t", value=f"v{i}".encode(), partition=0,
                  on_delivery=lambda err, msg: got.append((err, msg.value().decode())))
    return p, got


def test_jitter_never_reorders_one_connection():
    c = cluster(**{"sim.network.jitter.ms": 40})
    p, got = pipelined(c)
    assert p.flush(30) == 0
    assert values_in_log(c, "t") == [b"v0", b"v1", b"v2", b"v3", b"v4"]
    assert [v for err, v in got] == ["v0", "v1", "v2", "v3", "v4"] and all(err is None for err, _ in got)
    sent = [m for m in c.network_messages() if m.api == "Produce" and not m.is_response and m.src.startswith("producer")]
    arrivals = [m.deliver_at for m in sent]
    assert arrivals == sorted(arrivals)


def test_a_lost_produce_request_breaks_the_connection_and_everything_is_retried_in_order():
    c = cluster()
    p, got = pipelined(c)
    c.drop_next("Produce")
    assert p.flush(60) == 0
    assert values_in_log(c, "t") == [b"v0", b"v1", b"v2", b"v3", b"v4"]      # no gap, no duplicate
    assert all(err is None for err, _ in got)
    broke = [e for e in c.trace if "breaks" in e.narration and "connection producer-1 -> broker" in e.narration]
    assert broke, "the lost request must break its connection"
    failed = [e for e in c.trace if "lost its connection" in e.narration and "NETWORK_EXCEPTION" in e.narration]
    assert failed, "the requests in flight on the broken connection fail with a disconnect"


def test_a_broker_serves_one_request_of_a_connection_at_a_time():
    c = cluster()
    p, _ = pipelined(c)
    p.flush(30)
    waits = [e for e in c.trace if e.kind == "wait" and e.api == "Produce"]
    assert waits, "pipelined Produce requests wait in the connection while the leader answers the first"
    # while an acks=all Produce is parked waiting for the followers, the leader holds one producer batch that
    # is not yet replicated, never five
    c2 = cluster()
    p2, _ = pipelined(c2)
    worst = 0
    for _ in range(2000):
        if c2.step() is None:
            break
        log = c2.log("t", 0)
        worst = max(worst, log.log_end_offset - log.high_watermark)
    assert worst == 1


def test_a_lost_answer_makes_the_client_send_the_request_again_on_a_new_connection():
    c = cluster()
    p, got = pipelined(c, n=1)
    c.duplicate_next("Produce")
    assert p.flush(30) == 0
    produce = [m for m in c.network_messages() if m.api == "Produce" and not m.is_response and m.src == "producer-1"]
    assert len(produce) == 2 and produce[0].conn is not produce[1].conn
    assert values_in_log(c, "t") == [b"v0"]          # the broker recognised the retry: idempotence
    assert got == [(None, "v0")]


def test_a_request_timeout_closes_the_connection_and_fails_what_else_is_in_flight_on_it():
    c = cluster()
    p, got = pipelined(c, n=3, **{"request.timeout.ms": 5000})
    c.partition(["producer-1"], ["broker-0", "broker-1", "broker-2"])
    c.advance(61000)        # longer than the Metadata request's timeout: a shorter partition only delays it (TCP)
    c.heal()
    assert p.flush(60) == 0
    assert values_in_log(c, "t") == [b"v0", b"v1", b"v2"]
    closed = [e for e in c.trace if "closes its connection" in e.narration]
    assert closed


def test_a_crashed_broker_takes_its_connections_with_it():
    c = cluster()
    leader = c.leader("t", 0)
    p, got = pipelined(c, n=2)
    c.step()
    c.crash(leader)
    assert all(conn.server != f"broker-{leader}" and conn.client != f"broker-{leader}"
               for conn in c.kernel.network.connections())
    assert p.flush(60) == 0
    assert sorted(values_in_log(c, "t")) == [b"v0", b"v1"]
    said = " ".join(e.narration for e in c.trace)
    assert Errors.NETWORK_EXCEPTION.name in said
    # two Produce requests sent back to back to the dead broker on one connection: both are refused at once,
    # neither waits out its request timeout (socket.timeout.ms, 60 s)
    assert "request timeout (Produce" not in said and c.kernel.now < 30_000


def _plain_producer_after_a_lost_request(dialect=None):
    c = cluster()
    cfg = {"bootstrap.servers": c.bootstrap, "linger.ms": 0, "batch.num.messages": 1, "enable.idempotence": False,
           "max.in.flight.requests.per.connection": 5}
    if dialect:
        cfg["sim.client.dialect"] = dialect
    p = Producer(cfg)
    p.produce("t", value=b"m0")
    p.flush()
    c.drop_next("Produce")
    for i in range(1, 6):
        p.produce("t", value=b"m%d" % i)
    assert p.flush(60) == 0
    return values_in_log(c, "t")


def test_librdkafka_retries_a_broken_connections_batches_in_message_order():
    """All five fail with the disconnect; librdkafka puts them back in message order."""
    assert _plain_producer_after_a_lost_request() == [b"m0", b"m1", b"m2", b"m3", b"m4", b"m5"]


def test_the_java_client_puts_each_non_idempotent_retry_at_the_head_of_the_queue():
    """Java's RecordAccumulator.reenqueue adds a non-idempotent retry first: five failures come back reversed."""
    assert _plain_producer_after_a_lost_request("java") == [b"m0", b"m5", b"m4", b"m3", b"m2", b"m1"]
