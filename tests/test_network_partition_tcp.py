"""A network partition holds an open connection's messages, as TCP does, and they arrive after the heal.

The sender's kernel keeps what it could not deliver and retransmits the oldest segment RTO_MIN = 200 ms after
sending it, then after 400, 800, ... ms (Linux's tcp_retransmit_timer, up to TCP_RTO_MAX = 120 s): what was held
arrives, in order, one latency after the first retransmission at or after the heal.  A connection opened
during the partition retransmits its SYN from 1 s.  Only a close or a crash loses what was held."""
from txnlab import Cluster, Producer
from txnlab.kernel.tcp import TCP_RTO_MAX_MS, TCP_TIMEOUT_INIT_MS, retransmission_at

from helpers import values_in_log


def _cluster():
    c = Cluster(brokers=3, seed=5)
    c.create_topic("t", partitions=1, replication_factor=3)
    return c


def _producer(c, **cfg):
    """A Java idempotent producer whose connection to the leader is open (one record sent and acknowledged)."""
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "linger.ms": 0,
                  "sim.client.dialect": "java", **cfg})
    p.produce("t", value=b"warm-up", partition=0)
    assert p.flush(30) == 0
    return p


def _produce_requests(c, after_id=0):
    return [m for m in c.network_messages()
            if m.api == "Produce" and not m.is_response and m.src == "producer-1" and m.id > after_id]


def _cut_and_send(c, p, values):
    """Cut the producer off the leader, produce ``values``: the first Produce request is held; returns it."""
    last = max(m.id for m in c.network_messages())
    c.partition(["producer-1"], [f"broker-{c.leader('t', 0)}"])
    for v in values:
        p.produce("t", value=v, partition=0)
    for _ in range(200):
        held = [m for m in _produce_requests(c, last) if m.state == "held"]
        if held:
            return held[0]
        c.step()
    raise AssertionError("no Produce request was held by the partition")


def test_the_retransmission_rule():
    """200 ms after the send, then the timeout doubles (600, 1400, 3000 ms ...), at most 120 s apart."""
    assert [retransmission_at(0, t) for t in (0, 200, 201, 600, 601, 2999, 3000)] == \
        [200, 200, 600, 600, 1400, 3000, 3000]
    assert retransmission_at(1000, 0, 1000) == 2000          # a SYN: first after 1 s
    assert retransmission_at(1000, 2001, 1000) == 4000
    # 200 + 400 + ... + 102 400 = 204 600 ms, then every 120 s
    assert retransmission_at(0, 204_600) == 204_600
    assert retransmission_at(0, 204_601) == 204_600 + TCP_RTO_MAX_MS
    assert retransmission_at(0, 204_600 + 5 * TCP_RTO_MAX_MS) == 204_600 + 5 * TCP_RTO_MAX_MS


def test_a_request_held_by_a_short_partition_is_answered_at_the_first_retransmission_after_the_heal():
    c = _cluster()
    p = _producer(c)
    m = _cut_and_send(c, p, [b"v"])
    assert m.state == "held"
    assert [e for e in c.trace if f"Produce request #{m.id} from producer-1 is held: network partition between "
            f"producer-1 and {m.dst} (TCP retransmits it)" in e.narration]
    assert not [e for e in c.trace if e.kind == "drop"]
    c.advance(m.sent_at + 2500 - c.kernel.now)
    assert m.state == "held"
    c.heal()                                    # 2500 ms after the send: retransmissions at +200, +600, +1400, +3000
    assert m.deliver_at == m.sent_at + 3000 + c.kernel.network.latency_ms
    assert p.flush(30) == 0
    assert m.state == "delivered"
    delivered = next(e for e in c.trace if e.msg_id == m.id and e.kind == "deliver")
    assert delivered.time == m.sent_at + 3001
    assert "delivered after the heal, retransmitted at +3000 ms" in delivered.narration
    assert len(_produce_requests(c, m.id - 1)) == 1          # answered: the producer never sent it again
    assert values_in_log(c, "t") == [b"warm-up", b"v"]


def test_a_long_partition_the_request_timeout_closes_the_connection_the_request_still_arrives():
    c = _cluster()
    p = _producer(c, **{"request.timeout.ms": 5000})
    m = _cut_and_send(c, p, [b"v"])
    first_conn = m.conn
    c.advance(8000)
    gave_up = [e for e in c.trace if "gave up waiting for the Produce response" in e.narration]
    assert gave_up and first_conn.state == "closed"
    assert m.state == "held"                    # the FIN follows the data: the request is still on its way
    healed_at = c.kernel.now
    c.heal()
    assert p.flush(60) == 0                     # the retry, on a new connection, is answered first
    c.advance(10_000)                           # the old connection's request: its 6th retransmission, +12 600 ms
    assert m.state == "delivered"
    assert m.deliver_at == m.sent_at + 12_600 + c.kernel.network.latency_ms
    assert m.deliver_at == retransmission_at(m.sent_at, healed_at) + c.kernel.network.latency_ms
    answer = next(x for x in c.network_messages() if x.is_response and x.conn is first_conn and x.api == "Produce"
                  and x.correlation_id == m.correlation_id)
    assert answer.state == "dropped"            # handled, but no answer comes back on a closed connection
    retries = [x for x in _produce_requests(c, m.id) if x.conn is not first_conn]
    assert retries and all(x.state == "delivered" for x in retries)
    # the retry went on a connection opened during the partition: it crossed with the SYN's retransmission (1 s,
    # then 2 s ...) after the heal
    assert retries[0].deliver_at == retransmission_at(retries[0].sent_at, healed_at, TCP_TIMEOUT_INIT_MS) + 1
    assert values_in_log(c, "t") == [b"warm-up", b"v"]     # the retry is recognised: idempotence


def test_held_messages_keep_their_order():
    c = _cluster()
    p = _producer(c, **{"max.in.flight.requests.per.connection": 5, "batch.size": 16})
    values = [f"v{i}".encode() for i in range(5)]
    first = _cut_and_send(c, p, values)
    c.advance(1000)
    c.heal()
    assert p.flush(60) == 0
    sent = [m for m in _produce_requests(c, first.id - 1) if m.conn is first.conn]
    arrivals = [next(e.step for e in c.trace if e.msg_id == m.id and e.kind in ("deliver", "wait")
                     and "is held" not in e.narration) for m in sent]
    assert len(sent) > 1 and arrivals == sorted(arrivals)
    assert [m.deliver_at for m in sent] == sorted(m.deliver_at for m in sent)
    assert values_in_log(c, "t") == [b"warm-up"] + values


def test_a_crash_loses_what_the_partition_held():
    c = _cluster()
    p = _producer(c)
    m = _cut_and_send(c, p, [b"v"])
    c.crash(c.leader("t", 0))
    assert m.state == "dropped"
    c.heal()
    c.advance(5000)
    assert m.state == "dropped" and not [e for e in c.trace if e.msg_id == m.id and e.kind == "deliver"]
    assert p.flush(60) == 0                     # sent again to the new leader
    assert values_in_log(c, "t") == [b"warm-up", b"v"]


def _run():
    c = _cluster()
    p = _producer(c, **{"request.timeout.ms": 5000})
    _cut_and_send(c, p, [b"a", b"b"])
    c.advance(7000)
    c.heal()
    p.flush(60)
    return [(e.step, e.time, e.kind, e.narration) for e in c.trace]


def test_the_same_partition_gives_the_same_trace():
    assert _run() == _run()


def test_the_space_time_diagram_draws_a_held_message_as_held_not_lost():
    from widgets.pictures import arrow_label
    from widgets.spacetime import SpaceTime

    c = _cluster()
    p = _producer(c)
    m = _cut_and_send(c, p, [b"v"])
    st = SpaceTime(c)
    assert st.last_labels[m.id] == arrow_label(m) == "Produce ⏸ held"
    assert not [w for w in st.last_labels.values() if "lost" in w]
    c.heal()
    p.flush(30)
    st.update(c)
    assert st.last_labels.get(m.id, "Produce") == "Produce"          # delivered: an ordinary arrow
