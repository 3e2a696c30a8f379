"""Spark's own Kafka connector (``format("kafka")``) against the lab, through its Kafka-protocol listener.

The connector is a Java library that pyspark does not ship; ``reference/spark-kafka/pom.xml`` names it and Maven
fetches it once into ``~/.m2`` (then it is copied from there, offline).  ``connector_jars()`` returns the jar paths
for ``spark.jars``; ``ConnectorUnavailable`` says in one sentence why they cannot be had (no Java, no Maven, no
repository).  What the connector shows beside the txnlab data source (notebook 07,
tests/test_spark_kafka_connector.py): its source with ``kafka.isolation.level=read_committed`` stops at the
Last Stable Offset, and its sink is at-least-once -- a retried task writes its rows again.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Optional

POM = Path(__file__).resolve().parents[2] / "reference" / "spark-kafka" / "pom.xml"
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "build" / "spark-kafka-jars"


class ConnectorUnavailable(RuntimeError):
    """Spark's Kafka connector jars cannot be had on this machine (the message says why)."""


def connector_jars(directory: Optional[Path] = None) -> list[str]:
    """The jars of Spark's Kafka connector, copied from ~/.m2 (fetched from Maven Central the first time)."""
    out = Path(directory or DEFAULT_DIR)
    jars = sorted(str(p) for p in out.glob("*.jar"))
    if any("spark-sql-kafka" in j for j in jars):
        return jars
    if not POM.exists():
        raise ConnectorUnavailable(f"{POM} is missing (a txnlab checkout carries it)")
    mvn = shutil.which("mvn")
    if mvn is None or shutil.which("java") is None:
        raise ConnectorUnavailable("Spark's Kafka connector needs Java and Maven to fetch it, and "
                                   f"{'mvn' if mvn is None else 'java'} is not on PATH")
    out.mkdir(parents=True, exist_ok=True)
    err = ""
    for offline in (True, False):                       # from the local cache first; Maven Central if needed
        cmd = [mvn, "-q", "-B", *(["-o"] if offline else []), "-f", str(POM), "dependency:copy-dependencies",
               f"-DoutputDirectory={out}"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if done.returncode == 0:
            break
        err = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["(no output)"]
        err = err[0]
    else:
        raise ConnectorUnavailable(f"Maven could not fetch Spark's Kafka connector: {err}")
    jars = sorted(str(p) for p in out.glob("*.jar"))
    if not any("spark-sql-kafka" in j for j in jars):
        raise ConnectorUnavailable(f"Maven ran but left no connector jar in {out}")
    return jars
