"""kafka-python and aiokafka (pure-Python clients) against the lab through the wire door: a transaction that
commits and one that aborts, read back by a read_committed consumer of the same library."""
from __future__ import annotations

import asyncio

import pytest

from wire_helpers import lab

# The consumers below stop after 3 s (wall clock) without a record; the group's initial rebalance delay (Kafka's
# default 3 s, which the lab's simulated time now spends at the wall clock's pace) would race that timer, so these
# labs set it to 0 as Kafka's own development config (config/server.properties) does.
NO_JOIN_DELAY = {"group.initial.rebalance.delay.ms": 0}


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
                                   consumer_timeout_ms=3000, client_id="kp-reader-1")
        got = [(m.offset, m.value) for m in cons]
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
        got = []
        try:
            batches = await cons.getmany(timeout_ms=3000)
            for records in batches.values():
                got += [(r.offset, r.value) for r in records]
        finally:
            await cons.stop()
        return got

    with lab(config=NO_JOIN_DELAY) as (c, door):
        assert asyncio.run(run(door)) == [(0, b"kept")]
