"""Kafka's system test ``transactions_test.py``, reproduced: transactional copiers under bounces.

One copier per input partition (read_committed consumer, about a third of the transactions
aborted and then rewound to the committed offsets), while brokers or copiers are bounced cleanly
or hard.  The output must equal the input: nothing lost, nothing twice, in order when checked.
"""
from random import Random

import pytest

from txnlab import Cluster, Consumer, KafkaException, Producer, TopicPartition
from txnlab.errors import KafkaStateError

from helpers import read_all

CFG = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3,
       "group.initial.rebalance.delay.ms": 0, "transaction.state.log.min.isr": 2}


class Copier:
    """Kafka's TransactionalMessageCopier, in confluent-kafka's API."""

    def __init__(self, cluster, index: int, out_partitions):
        self.c = cluster
        self.i = index
        self.out_partitions = out_partitions
        self.rng = Random(index)
        self.start()

    def start(self):
        c = self.c
        self.consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": f"copier-{self.i}",
                                  "enable.auto.commit": False, "isolation.level": "read_committed",
                                  "auto.offset.reset": "earliest"})
        self.consumer.assign([TopicPartition("input", self.i)])
        self.producer = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": f"copier-{self.i}",
                                  "transaction.timeout.ms": 40_000})
        self.producer.init_transactions()
        self.rewind()

    def rewind(self):
        tp = TopicPartition("input", self.i)
        committed = self.consumer.committed([tp])[0].offset
        self.consumer.seek(TopicPartition("input", self.i, committed if committed >= 0 else 0))

    def done(self, n) -> bool:
        committed = self.consumer.committed([TopicPartition("input", self.i)])[0].offset
        return committed >= n

    def round(self):
        msgs = [m for m in self.consumer.consume(20, 0.5) if m.error() is None]
        if not msgs:
            return
        p = self.producer
        try:
            p.begin_transaction()
            for m in msgs:
                part = self.out_partitions[int(m.value()) % len(self.out_partitions)]
                p.produce("output", key=m.key(), value=m.value(), partition=part)
            p.send_offsets_to_transaction(self.consumer.position([TopicPartition("input", self.i)]),
                                          self.consumer.consumer_group_metadata())
            if self.rng.random() < 1 / 3:
                p.abort_transaction()
                self.rewind()
            else:
                p.commit_transaction()
        except KafkaException as e:
            if e.error.fatal() or isinstance(e, KafkaStateError):
                self.restart()
                return
            try:
                p.abort_transaction()
            except KafkaException:
                self.restart()
                return
            self.rewind()

    def restart(self, crash=False):
        if crash:
            self.c.crash(self.producer)
            self.c.crash(self.consumer)
        self.start()


def run_system_test(bounce_target, failure_mode, check_order, seed=0, n=240):
    c = Cluster(brokers=3, seed=seed, config=CFG)
    inputs = 1 if check_order else 2
    outputs = [0] if check_order else [0, 1, 2]
    c.create_topic("input", partitions=inputs, replication_factor=3, config={"min.insync.replicas": 2})
    c.create_topic("output", partitions=3, replication_factor=3, config={"min.insync.replicas": 2})
    seed_producer = Producer({"bootstrap.servers": c.bootstrap})
    expected = {i: [] for i in range(inputs)}
    for k in range(n):
        part = k % inputs
        seed_producer.produce("input", key=b"%d" % k, value=b"%d" % k, partition=part)
        expected[part].append(b"%d" % k)
    seed_producer.flush()
    copiers = [Copier(c, i, outputs) for i in range(inputs)]
    per_part = n // inputs
    bounces = list(c.brokers) if bounce_target == "brokers" else list(range(3))
    rounds = 0
    while not all(cp.done(per_part) for cp in copiers):
        rounds += 1
        assert rounds < 400, "the copiers stopped making progress"
        for cp in copiers:
            cp.round()
        if bounces and rounds % 3 == 0:
            target = bounces.pop(0)
            if bounce_target == "brokers":
                c.crash(target, clean=(failure_mode == "clean"))
                for cp in copiers:
                    cp.round()
                c.advance(2_000)
                c.restart(target)
                c.advance(10_000)
            else:
                for cp in copiers:
                    cp.restart(crash=(failure_mode == "hard"))
    c.advance(5_000)
    c.run_until_idle()
    out = read_all(c, "output", max_polls=2000)
    all_in = [v for vs in expected.values() for v in vs]
    assert len(out) == len(set(out)), "duplicates in the output"
    assert sorted(out) == sorted(all_in), "the output must equal the input"
    if check_order:
        assert out == expected[0]
    # the run really was disturbed: bounces happened and some transactions were aborted
    if bounce_target == "brokers":
        assert len([e for e in c.trace if e.kind == "fault"]) >= 3
    aborts = [b for p in range(3) for b in c.log("output", p).batches if b.is_control and b.control_type.name == "ABORT"]
    assert aborts, "about a third of the transactions are aborted"
    if bounce_target == "clients":
        assert any("fence" in e.narration for e in c.trace)


@pytest.mark.parametrize("bounce_target", ["brokers", "clients"])
@pytest.mark.parametrize("failure_mode", ["clean", "hard"])
@pytest.mark.parametrize("check_order", [True, False])
def test_transactional_copier_under_bounces(bounce_target, failure_mode, check_order):
    run_system_test(bounce_target, failure_mode, check_order)
