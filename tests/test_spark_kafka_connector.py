"""Spark's own Kafka connector (``format("kafka")``, the Java library Spark ships for Kafka) against the lab,
through the Kafka-protocol listener.  Its source with ``kafka.isolation.level=read_committed`` stops at the Last
Stable Offset while a transaction is open; its sink is at-least-once (as Spark documents): a retried task writes
its rows again.  The txnlab data source's exactly-once sink under the same retry is tests/test_spark_pipeline.py."""
from __future__ import annotations

import os
import sys

import pytest

from txnlab import Consumer, Producer, TopicPartition
from txnlab.cluster import Cluster

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed")
pytest.importorskip("kio", reason="the wire door's codec (kio) is not installed")


@pytest.fixture(scope="module")
def spark():
    from txnlab.spark.kafka_connector import ConnectorUnavailable, connector_jars
    try:
        jars = connector_jars()
    except ConnectorUnavailable as e:
        pytest.skip(str(e))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    session = (SparkSession.builder.master("local[1,2]").appName("txnlab-spark-kafka")     # 2 attempts per task
               .config("spark.jars", ",".join(jars)).config("spark.ui.enabled", "false")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
               .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    session.sparkContext.setLogLevel("OFF")
    yield session
    session.stop()


def read_kafka(spark, door, topic):
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", door.bootstrap_servers)
          .option("subscribe", topic).option("kafka.isolation.level", "read_committed")
          .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    return [(r.offset, r.v) for r in df.selectExpr("offset", "CAST(value AS STRING) v").orderBy("offset").collect()]


def test_sparks_read_committed_source_stops_at_the_lso_of_an_open_transaction(spark):
    cluster = Cluster(brokers=3, seed=5)
    cluster.create_topic("in", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "orders"})
    p.init_transactions()
    for values, commit in ((["c0", "c1", "c2"], True), (["a0", "a1"], False)):
        p.begin_transaction()
        for v in values:
            p.produce("in", v.encode())
        p.flush()                                # written before the abort (librdkafka purges unsent records)
        (p.commit_transaction if commit else p.abort_transaction)()
    p.begin_transaction()
    p.produce("in", b"open0")
    p.flush()                                    # written, replicated, not committed: it pins the LSO
    with cluster.listen() as door:
        rows = read_kafka(spark, door, "in")
        state = cluster.partition_state("in", 0)
        assert rows == [(0, "c0"), (1, "c1"), (2, "c2")]          # nothing aborted, nothing past the LSO
        assert state["lso"] == 7 < state["hw"] == 8              # c0-2, COMMIT, a0-1, ABORT | open0
        p.commit_transaction()
        rows = read_kafka(spark, door, "in")
        assert rows == [(0, "c0"), (1, "c1"), (2, "c2"), (7, "open0")]


def test_sparks_kafka_sink_writes_a_retried_tasks_rows_twice(spark):
    from pyspark import TaskContext

    def fail_first_attempt_at_row_700(batches):
        # batches of 100 rows stream to Spark's Kafka writer as they are yielded; the first attempt dies at r700
        import pyarrow as pa
        first = TaskContext.get().attemptNumber() == 0
        for b in batches:
            if first and "r700" in b.column(0).to_pylist():
                raise RuntimeError("injected: the task dies after writing rows r0..r699")
            yield pa.RecordBatch.from_arrays([b.column(0)], names=["value"])

    cluster = Cluster(brokers=3, seed=6)
    cluster.create_topic("out", partitions=1, replication_factor=3)
    rows = [(f"r{i}",) for i in range(1000)]
    with cluster.listen() as door:
        (spark.createDataFrame(rows, ["v"]).coalesce(1).mapInArrow(fail_first_attempt_at_row_700, "value string")
         .write.format("kafka").option("kafka.bootstrap.servers", door.bootstrap_servers).option("topic", "out")
         .option("kafka.linger.ms", "0").save())
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "check", "isolation.level": "read_uncommitted"})
    c.assign([TopicPartition("out", 0, 0)])
    got = []
    while (m := c.poll(1.0)) is not None:
        got.append(m.value().decode())
    assert sorted(set(got)) == sorted(v for (v,) in rows)        # every row arrived...
    dups = {v for v in got if got.count(v) > 1}
    assert dups == {f"r{i}" for i in range(700)}                 # ...and what the failed attempt wrote, twice
    assert len(got) == 1700
