"""kafka-python and aiokafka (pure-Python clients) against the lab through the wire door: a transaction that
commits and one that aborts, read back by a read_committed consumer of the same library."""
from __future__ import annotations

import asyncio
import time

import pytest

from wire_helpers import lab

# The group's initial rebalance delay (Kafka's default 3 s, which the lab's simulated time spends at the wall
# clock's pace) only slows these reads: these labs set it to 0 as Kafka's own development config
# (config/server.properties) does.
NO_JOIN_DELAY = {"group.initial.rebalance.delay.ms": 0}
PATIENCE_S, IDLE_POLLS = 60.0, 4      # a consumer reads until its record came, then 4 empty polls of 0.5 s


class _Reading:
    """(offset, value) of what a consumer's polls return ({partition: [record]} each, a poll of 0.5 s): until a
    record came and then IDLE_POLLS polls came back empty (so nothing extra hides behind), or patience runs out.
    A consumer joining its group and fetching can take seconds on a loaded machine: a fixed 3 s read once came
    back empty."""

    def __init__(self) -> None:
        self.got, self.idle, self.deadline = [], 0, time.monotonic() + PATIENCE_S

    def more(self) -> bool:
        return self.idle < IDLE_POLLS and time.monotonic() < self.deadline

    def add(self, batches: dict) -> None:
        records = [r for rs in batches.values() for r in rs]
        self.got += [(r.offset, r.value) for r in records]
        self.idle = self.idle + 1 if self.got and not records else 0


def test_kafka_python_commits_and_aborts_and_reads_committed():
    kafka = pytest.importorskip("kafka", reason="kafka-python is not installed (pip install kafka-python)")
    with lab(config=NO_JOIN_DELAY) as (c, door):
        p = kafka.KafkaProducer(bootstrap_servers=door.bootstrap_servers, transactional_id="kp-copier",
                                client_id="kp-copier-1")
        p.init_transactions()
        p.begin_transaction()
        p.send("t", b"kept")
        p.commit_transaction()
        p.begin_transaction()
        p.send("t", b"dropped").get(timeout=30)      # written, so the abort writes a marker
        p.abort_transaction()
        p.close()
        cons = kafka.KafkaConsumer("t", bootstrap_servers=door.bootstrap_servers, group_id="kp-reader",
                                   auto_offset_reset="earliest", isolation_level="read_committed",
                                   client_id="kp-reader-1")
        reading = _Reading()
        while reading.more():
            reading.add(cons.poll(timeout_ms=500))
        got = reading.got
        cons.close()
        assert got == [(0, b"kept")]
        assert [b.control_type.name for b in c.log("t").batches if b.is_control] == ["COMMIT", "ABORT"]


def test_aiokafka_commits_and_aborts_and_reads_committed():
    aiokafka = pytest.importorskip("aiokafka", reason="aiokafka is not installed (pip install aiokafka)")

    async def run(door):
        p = aiokafka.AIOKafkaProducer(bootstrap_servers=door.bootstrap_servers, transactional_id="aio-copier",
                                      client_id="aio-copier-1")
        await p.start()
        async with p.transaction():
            await p.send_and_wait("t", b"kept")
        await p.begin_transaction()
        await p.send_and_wait("t", b"dropped")
        await p.abort_transaction()
        await p.stop()
        cons = aiokafka.AIOKafkaConsumer("t", bootstrap_servers=door.bootstrap_servers, group_id="aio-reader",
                                         auto_offset_reset="earliest", isolation_level="read_committed")
        await cons.start()
        reading = _Reading()
        try:
            while reading.more():
                reading.add(await cons.getmany(timeout_ms=500))
        finally:
            await cons.stop()
        return reading.got

    with lab(config=NO_JOIN_DELAY) as (c, door):
        assert asyncio.run(run(door)) == [(0, b"kept")]
