"""PySpark data sources over the lab's cluster: ``register(spark)``, then ``format("txnlab")``.

The cluster lives in the notebook's kernel and Spark's Python workers are other
processes, so the source and sink reach it through the front door:
``addr = cluster.serve()`` and ``.option("bootstrap.servers", addr)``.
``reader`` is the source (Spark's Kafka source columns), ``sink`` the
at-least-once and exactly-once sinks, ``faults`` the Spark-side failures a
notebook switches on, ``pipeline`` the helpers the orders notebook uses.
"""
from __future__ import annotations

from pyspark.sql.datasource import DataSource

from .faults import InjectedFault, SparkFaults  # noqa: F401
from .reader import SCHEMA, TxnlabBatchReader, TxnlabStreamReader
from .sink import PROGRESS_TOPIC, STAGING_TOPIC, TxnlabBatchWriter, TxnlabStreamWriter  # noqa: F401


class TxnlabDataSource(DataSource):
    """``spark.readStream.format("txnlab")`` / ``df.writeStream.format("txnlab")``."""

    @classmethod
    def name(cls) -> str:
        return "txnlab"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema):
        return TxnlabBatchReader(self.options)

    def streamReader(self, schema):
        return TxnlabStreamReader(self.options)

    def writer(self, schema, overwrite: bool):
        return TxnlabBatchWriter(self.options, schema)

    def streamWriter(self, schema, overwrite: bool):
        return TxnlabStreamWriter(self.options, schema)


def register(spark) -> None:
    """Register the ``txnlab`` data source with a SparkSession."""
    spark.dataSource.register(TxnlabDataSource)


__all__ = ["register", "TxnlabDataSource", "SparkFaults", "InjectedFault", "STAGING_TOPIC", "PROGRESS_TOPIC"]
