"""The "change the import" promise: ordinary confluent-kafka programs, written once as source text, run unchanged
against the lab but for their import line (``from confluent_kafka import`` -> ``from txnlab import``).  Where
librdkafka's mock cluster is a valid oracle (an idempotent producer's delivery reports) the same text also runs
against confluent-kafka itself.  Each program gets its connection settings as ``CONNECTION`` (as a real program
reads them from its environment) and leaves what a user would look at in ``result``."""
import pytest

from txnlab import Cluster

IDEMPOTENT_PRODUCER = '''
from confluent_kafka import Producer

delivered, failed = [], []

def on_delivery(err, msg):
    if err is not None:
        failed.append(err)
    else:
        delivered.append((msg.partition(), msg.offset(), msg.key(), msg.value(), msg.latency()))

producer = Producer({**CONNECTION, "enable.idempotence": True, "linger.ms": 5})
for i in range(10):
    producer.produce("events", value=b"event-%d" % i, key=b"user-%d" % (i % 3), on_delivery=on_delivery)
    producer.poll(0)
remaining = producer.flush(10)
result = {"delivered": delivered, "failed": failed, "remaining": remaining}
'''

TRANSACTIONAL_COPIER = '''
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

consumer = Consumer({**CONNECTION, "group.id": "copier", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
producer = Producer({**CONNECTION, "transactional.id": "copier-1"})
producer.init_transactions()
consumer.subscribe(["in"])
copied = 0
while copied < 6:
    batch = consumer.consume(3, 5.0)
    if not batch:
        break
    producer.begin_transaction()
    for msg in batch:
        if msg.error():
            raise KafkaException(msg.error())
        producer.produce("out", value=msg.value().upper(), key=msg.key())
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                         consumer.consumer_group_metadata())
    producer.commit_transaction()
    copied += len(batch)
committed = consumer.committed([TopicPartition("in", 0)], 10)
consumer.close()
result = {"copied": copied, "committed": [(tp.topic, tp.partition, tp.offset) for tp in committed]}
'''

READ_COMMITTED_CONSUMER = '''
from confluent_kafka import Consumer, TopicPartition

consumer = Consumer({**CONNECTION, "group.id": "reader", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
consumer.subscribe(["out"])
seen = []
while len(seen) < WANT:
    msg = consumer.poll(5.0)
    if msg is None:
        break
    if msg.error():
        continue
    seen.append(msg.value())
    consumer.commit(message=msg, asynchronous=False)
committed = consumer.committed([TopicPartition("out", 0)], 10)
low, high = consumer.get_watermark_offsets(TopicPartition("out", 0), 10)
consumer.close()
result = {"seen": seen, "committed": committed[0].offset, "high": high}
'''


def run(source: str, module: str, **names) -> dict:
    """Runs a program's text with its import line pointed at ``module``; returns its ``result``."""
    text = source.replace("from confluent_kafka import", f"from {module} import")
    assert text.count(f"from {module} import") == 1 and "txnlab" not in source
    scope = dict(names)
    exec(compile(text, f"<{module} program>", "exec"), scope)
    return scope["result"]


def lab(**topics) -> Cluster:
    c = Cluster(brokers=3, seed=7)
    for name, partitions in topics.items():
        c.create_topic(name, partitions=partitions, replication_factor=3)
    return c


def test_idempotent_producer_program_gets_one_delivery_report_per_record_in_order():
    c = lab(events=3)
    r = run(IDEMPOTENT_PRODUCER, "txnlab", CONNECTION={"bootstrap.servers": c.bootstrap})
    assert r["failed"] == [] and r["remaining"] == 0 and len(r["delivered"]) == 10
    for part in {p for p, *_ in r["delivered"]}:
        offsets = [o for p, o, *_ in r["delivered"] if p == part]
        assert offsets == list(range(len(offsets)))          # per partition: consecutive, in produce order
    assert all(latency is not None and 0 <= latency < 1 for *_, latency in r["delivered"])   # simulated seconds


def test_idempotent_producer_program_runs_unchanged_on_confluent_kafka():
    ck = pytest.importorskip("confluent_kafka")
    assert ck.Producer
    r = run(IDEMPOTENT_PRODUCER, "confluent_kafka", CONNECTION={"bootstrap.servers": "", "test.mock.num.brokers": 3})
    assert r["failed"] == [] and r["remaining"] == 0 and len(r["delivered"]) == 10
    for part in {p for p, *_ in r["delivered"]}:
        offsets = [o for p, o, *_ in r["delivered"] if p == part]
        assert offsets == list(range(len(offsets)))


def test_transactional_copier_then_read_committed_consumer_see_every_record_once():
    c = lab(**{"in": 1, "out": 1})
    connection = {"bootstrap.servers": c.bootstrap}
    seed = run(IDEMPOTENT_PRODUCER.replace('"events"', '"in"'), "txnlab", CONNECTION=connection)
    assert len(seed["delivered"]) == 10
    copier = run(TRANSACTIONAL_COPIER, "txnlab", CONNECTION=connection)
    assert copier["copied"] == 6
    assert copier["committed"] == [("in", 0, 6)]               # the offsets went in with the transactions
    reader = run(READ_COMMITTED_CONSUMER, "txnlab", CONNECTION=connection, WANT=6)
    assert reader["seen"] == [b"EVENT-%d" % i for i in range(6)]
    # out holds 0..2, a commit marker at 3, 4..6, a marker at 7: the last message read is offset 6, so the
    # manual commit stores 7 (the next offset to read), and the end of the log is 8
    assert reader["committed"] == 7 and reader["high"] == 8


def test_read_committed_consumer_program_does_not_see_an_open_transaction():
    c = lab(out=1)
    from txnlab import Producer
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "slow"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("out", value=b"not yet", partition=0)
    p.flush()
    reader = run(READ_COMMITTED_CONSUMER, "txnlab", CONNECTION={"bootstrap.servers": c.bootstrap}, WANT=1)
    assert reader["seen"] == [] and reader["high"] == 0         # read_committed asks for the LSO, held at 0
    p.commit_transaction()
    reader = run(READ_COMMITTED_CONSUMER, "txnlab", CONNECTION={"bootstrap.servers": c.bootstrap}, WANT=1)
    assert reader["seen"] == [b"not yet"]
