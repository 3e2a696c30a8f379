"""librdkafka's idempotent producer after a gap (rd_kafka_handle_Produce_error, src/rdkafka_request.c): the failed
batch's partition drains before the retry, and batches refused with OUT_OF_ORDER_SEQUENCE_NUMBER behind it make the
producer bump its own epoch and number its batches from 0 again.  Kafka's Java client keeps the epoch and retries
with the old sequence numbers (TransactionManager.canRetry)."""
import pytest

from txnlab import Cluster, Producer


def refused_first(dialect: str):
    """m1 is refused with NOT_ENOUGH_REPLICAS while m2 ... m5 wait on the wire; they reach the leader after the ISR
    is whole again and are refused as a gap (the scenario of chapter 01, section 4b)."""
    c = Cluster(brokers=2, seed=7)
    c.create_topic("t", partitions=1, replication_factor=2, config={"min.insync.replicas": 2})
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 0, "batch.num.messages": 1,
                  "enable.idempotence": True, "sim.client.dialect": dialect})
    p.produce("t", value=b"m0")
    p.flush()
    follower = 1 - c.leader("t")
    c.crash(follower)
    c.run_until(lambda: len(c.partition_state("t")["isr"]) == 1, 60_000)
    c.restart(follower)
    for i in range(1, 6):
        p.produce("t", value=b"m%d" % i)
    c.run_until(lambda: len([m for m in c.in_flight() if m.api == "Produce" and not m.is_response]) == 5, 1_000)
    second = [m for m in c.in_flight() if m.api == "Produce" and not m.is_response][1]
    c.delay_message(second.id, 700)
    assert p.flush(30) == 0
    return c, p


def batches(c):
    return [(b.producer_epoch, b.base_sequence, [r.value for r in b.records]) for b in c.log("t", 0).batches]


def produce_requests(c):
    """(epoch, sequence) of each Produce request the leader got, in the order it got them."""
    return [(e.step, e.narration) for e in c.trace.filter(api="Produce") if not e.is_response]


def test_librdkafka_drains_then_bumps_its_epoch_and_renumbers():
    c, p = refused_first("librdkafka")
    assert batches(c) == [(0, 0, [b"m0"])] + [(1, i - 1, [b"m%d" % i]) for i in range(1, 6)]
    assert p.transaction_manager.producer_epoch == 1
    reqs = produce_requests(c)
    refused = [s for s, text in reqs if "OUT_OF_ORDER_SEQUENCE_NUMBER" in text]
    m1_retry = [s for s, text in reqs if "epoch 1 seq 0..0" in text]
    assert len(refused) == 4 and len(m1_retry) == 1
    # the drain: m1 is sent again only after m2 ... m5 came back refused, never while they are on the wire
    assert not [s for s, text in reqs if "epoch 0 seq 1..1" in text and s > min(refused)]
    assert m1_retry[0] > max(refused)
    assert c.trace.filter(contains="bumped its epoch 0 -> 1 locally")
    assert c.trace.filter(contains="past the next sequence to be acknowledged (1)")


def test_librdkafka_does_not_count_a_retry_for_a_batch_refused_behind_a_gap():
    """perr->incr_retry = 0: m2 ... m5, refused behind m1's gap, are queued again without a retry counted (their
    next send is still their first retry's attempt number, 2 -> 1), unlike m1, refused for itself."""
    c, _p = refused_first("librdkafka")
    again = [d for e in c.trace for d in e.details if "will retry" in d]
    m1 = [d for d in again if "seq 1..1" in d]
    behind = [d for d in again if "OUT_OF_ORDER_SEQUENCE_NUMBER" in d]
    assert len(m1) == 1 and "attempt 2" in m1[0]
    assert len(behind) == 4 and all("attempt 1, once its epoch is bumped" in d for d in behind)


def test_java_keeps_its_epoch_and_sequences():
    c, p = refused_first("java")
    assert batches(c) == [(0, i, [b"m%d" % i]) for i in range(6)]
    assert p.transaction_manager.producer_epoch == 0
    assert not c.trace.filter(contains="bumped its epoch")


@pytest.mark.parametrize("dialect", ["librdkafka", "java"])
def test_the_log_keeps_the_order_of_the_sends(dialect):
    c, _p = refused_first(dialect)
    assert [v for _e, _s, v in batches(c)] == [[b"m%d" % i] for i in range(6)]
