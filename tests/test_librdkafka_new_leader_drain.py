"""librdkafka's idempotent producer waits for the requests still in flight to a partition's old leader before it
produces anything to the new one: "wait for outstanding requests to finish before producing to new leader"
(rd_kafka_toppar_broker_delegate -> rd_kafka_idemp_drain_toppar; rd_kafka_toppar_producer_serve sends nothing while
the partition drains).  Without that wait, the next batch reaches the new leader first: a leader that has no state
of the producer yet takes its sequence as the first (Kafka's ProducerAppendInfo.checkSequence accepts any sequence
from an unknown producer), and the held batch, retried after it, is refused as a rewound sequence: fatal for
librdkafka.  (Found by the sweep: mixed, seed 418045.)"""
from txnlab import Cluster, Producer
from txnlab.protocol.errors import Errors

from helpers import values_in_log


def test_the_next_batch_waits_for_the_request_in_flight_to_the_old_leader():
    c = Cluster(brokers=3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=3)
    c.create_topic("u", partitions=1, replication_factor=3)
    c.create_topic("v", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "linger.ms": 0})
    p.produce("u", value=b"warm-up")        # metadata and a producer id; t-0 has no state of this producer
    p.flush()
    old = c.leader("t")
    reports = []
    on_delivery = lambda err, msg: reports.append((msg.value(), err, msg.offset()))   # noqa: E731
    # A's request is held by a network partition (in flight, unanswered); the old leader is cut off from the
    # controller too, which moves the leadership away from it
    c.partition([p._node.name], [f"broker-{old}"])
    c.partition(["controller"], [f"broker-{old}"])
    p.produce("t", value=b"A", on_delivery=on_delivery)
    c.advance(12_000)
    new = c.leader("t")
    assert new != old
    p.produce("v", value=b"V")               # (a topic new to the producer: its metadata shows the new leader)
    c.advance(100)
    p.produce("t", value=b"B", on_delivery=on_delivery)
    c.advance(3_000)
    # B waits: nothing of t-0 went to the new leader while A's request to the old one is unanswered
    to_new = [e for e in c.trace.filter(api="Produce") if not e.is_response and e.dst == f"broker-{new}"
              and "t-0" in e.text]
    assert to_new == []
    assert c.trace.filter(contains=f"t-0 has a new leader (broker-{new}) while a request to the old one is in flight",
                          include_background=True)
    c.heal()
    assert p.flush(60) == 0
    # A was answered by the old leader (not the leader), retried first, then B: in order, no sequence error
    assert sorted(reports) == [(b"A", None, 0), (b"B", None, 1)]
    assert values_in_log(c, "t", broker=new) == [b"A", b"B"]
    refused = [e for e in c.trace.filter(api="Produce") if e.is_response and "OUT_OF_ORDER" in e.text]
    assert refused == []
    assert not c.trace.filter(contains=Errors.OUT_OF_ORDER_SEQUENCE_NUMBER.name, include_background=True)
    assert p.transaction_manager.producer_epoch == 0
