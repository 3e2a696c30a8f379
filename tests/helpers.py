"""Test helpers: a raw protocol client and invariant checks shared by the scenario tests."""
from __future__ import annotations

import logging

from txnlab.protocol.record_batch import Record, RecordBatch
from txnlab.protocol import messages as m
from txnlab.kernel.node import Node


class RawClient(Node):
    """A bare process that sends hand-made requests (what a buggy or old client could send)."""

    def __init__(self, cluster, name: str = "raw-client") -> None:
        super().__init__(cluster.kernel, name)
        self.cluster = cluster

    def handle_request(self, msg):
        return None

    def call(self, dst, request, timeout_ms: int = 30_000, from_broker=None):
        """Send ``request`` to ``dst`` and wait for the answer.  ``from_broker``: send it from that broker's
        own node instead (an inter-broker request, e.g. WriteTxnMarkers as a coordinator would send it;
        ``True`` picks the first live broker): brokers refuse those from any client."""
        box = {}

        def cb(resp, err):
            box["resp"], box["err"] = resp, err
        if isinstance(dst, int):
            dst = f"broker-{dst}"
        sender = self
        if from_broker is True:
            from_broker = next(b for b in self.cluster.broker_ids if self.cluster.broker(b).alive)
        if from_broker is not None:
            sender = self.cluster.broker(from_broker)
        sender.send_request(dst, request, cb, timeout_ms=timeout_ms)
        self.cluster.run_until(lambda: "resp" in box or "err" in box)
        if box.get("err") is not None:
            raise AssertionError(f"{request.API} failed: {box['err']}")
        return box["resp"]

    def produce(self, topic, partition, values, pid=-1, epoch=-1, seq=-1, txn=False, acks=-1,
                transactional_id=None):
        leader = self.cluster.leader(topic, partition)
        batch = RecordBatch(tuple(Record(None, v, (), self.kernel.now) for v in values), pid, epoch, seq, txn)
        resp = self.call(leader, m.ProduceRequest(transactional_id, acks, 30_000, {(topic, partition): batch}))
        return resp.responses[(topic, partition)]


def values_in_log(cluster, topic, partition=0, broker=None, include_control=False):
    log = cluster.log(topic, partition, broker)
    out = []
    for b in log.batches:
        if b.is_control and not include_control:
            continue
        out.extend(r.value for r in b.records)
    return out


def check_watermarks(cluster, topics):
    """LSO <= HW <= LEO on every live leader, and HW <= every ISR member's LEO."""
    for topic in topics:
        for (t, p), s in cluster.controller.states.items():
            if t != topic or s.leader < 0:
                continue
            b = cluster.broker(s.leader)
            if not b.alive or (t, p) not in b.logs:
                continue
            log = b.logs[(t, p)]
            part = b.partitions.get((t, p))
            if part is None or not part.is_leader:
                continue
            assert log.last_stable_offset <= log.high_watermark <= log.log_end_offset, log.describe()
            for r in part.isr:
                rb = cluster.broker(r)
                if rb.alive and (t, p) in rb.logs and r != s.leader:
                    f = part.followers.get(r)
                    if f is not None and f.leo >= 0:
                        assert log.high_watermark <= rb.logs[(t, p)].log_end_offset or \
                            log.high_watermark <= f.leo, (t, p, r)


def read_all(cluster, topic, isolation="read_committed", partitions=None, max_polls=200):
    """Everything a fresh consumer with this isolation level can read now (values, in order per partition)."""
    from txnlab import Consumer, TopicPartition
    n = len([1 for (t, _p) in cluster.controller.states if t == topic])
    parts = partitions if partitions is not None else range(n)
    c = Consumer({"group.id": "lab-reader", "bootstrap.servers": cluster.bootstrap, "isolation.level": isolation,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    out = []
    empty = 0
    for _ in range(max_polls):
        msg = c.poll(0.2)
        if msg is None:
            empty += 1
            if empty >= 3:
                break
            continue
        empty = 0
        if msg.error() is None:
            out.append(msg.value())
    c.close()
    return out


def kafka_transactions_tool(door, *args: str):
    """Kafka's own ``kafka-transactions --bootstrap-server <door> <args>`` (TransactionsCommand on Kafka's jars):
    the finished process; the test is skipped when Kafka's jars cannot run here."""
    import pytest
    from reference import kafka
    try:
        cp = kafka.classpath()
    except kafka.Unavailable as e:
        pytest.skip(f"Kafka's kafka-transactions tool cannot run here: {e}")
    return kafka.run(kafka.java(cp, "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server",
                                door.bootstrap_servers, *args), timeout=180)


class Capture(logging.Handler):
    """A logging handler that keeps (level, message) of every line: what a client's ``logger`` was told."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append((record.levelno, record.getMessage()))


def poll_until(c, consumers, pred, max_ms=60_000, poll_s=0.1):
    """Each consumer polls in turn until ``pred()`` holds, within ``max_ms`` of simulated time."""
    deadline = c.now + max_ms
    while not pred():
        for cons in consumers:
            cons.poll(poll_s)
        assert c.now < deadline, "the group did not settle in time"


def captured_logger(name: str):
    """(a DEBUG logger named ``name``, the Capture that keeps what it is told): a client's ``logger``."""
    logger = logging.getLogger(name)
    logger.setLevel(logging.DEBUG)
    cap = Capture()
    logger.addHandler(cap)
    return logger, cap


def replicated_with_records(seed: int = 3):
    """(a 3-broker cluster whose topic t has 3 replicas and 6 records written with acks=all, one second later; the
    producer that wrote them)."""
    from txnlab import Cluster, Producer
    c = Cluster(brokers=3, seed=seed)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
    for i in range(6):
        p.produce("t", value=b"%d" % i)
    p.flush()
    c.advance(1_000)
    return c, p


def open_transaction(seed: int = 3):
    """(a 3-broker cluster whose topic t has 3 replicas; a transactional producer with one record in an open
    transaction)."""
    from txnlab import Cluster, Producer
    c = Cluster(brokers=3, seed=seed)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"v")
    return c, p


def read_offsets(consumer, n: int, polls: int = 40) -> list:
    """Poll ``consumer`` until it has read ``n`` messages and then finds nothing new (at most ``polls`` polls of
    0.5 s): [(offset, value as text)] for records, ("error", its name) for an error event."""
    got = []
    for _ in range(polls):
        msg = consumer.poll(0.5)
        if msg is None:
            if len(got) >= n:
                break
            continue
        got.append(("error", msg.error().name()) if msg.error() else (msg.offset(), msg.value().decode()))
    return got


def produce_values(cluster, values, topic: str = "t", partition: int = 0, **conf) -> None:
    """Produce ``values`` (text) to ``topic``-``partition`` with a plain producer (``conf`` added) and flush."""
    from txnlab import Producer
    p = Producer({"bootstrap.servers": cluster.bootstrap, **conf})
    for v in values:
        p.produce(topic, value=v.encode(), partition=partition)
    p.flush(10)


def explorer_outputs(capsys, args: list, *ways: list) -> list:
    """``python -m txnlab.sweep.explore`` with ``args``, once plainly and once with each of ``ways`` added (``--jobs
    2``, ``--spark local[2]``): each run's exit status and stdout lines, without the line of wall-clock seconds."""
    import re

    from txnlab.sweep.explore import main
    out = []
    for extra in ([], *ways):
        status = main(list(args) + list(extra))
        lines = [line for line in capsys.readouterr().out.splitlines() if not re.search(r"\(\d+s\)$", line)]
        out.append((status, lines))
    return out
