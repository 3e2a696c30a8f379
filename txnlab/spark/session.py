"""A quiet SparkSession for the lab: Spark's start-up notices (its log profile, the native Hadoop library
warning) are not errors, and in a notebook they look like one.

Owns ``quiet(builder)``: the driver JVM logs with ``log4j2-quiet.properties`` (warnings and errors, Hadoop's
start-up notice left out).  The JVM's own "Using incubator modules" line comes from Java, before any logging
exists, and stays.
"""
from __future__ import annotations

from pathlib import Path

LOG_CONFIG = Path(__file__).with_name("log4j2-quiet.properties")


def quiet(builder, extra_java_options: str = ""):
    """``builder`` (a ``SparkSession.Builder``) with the lab's quiet logging; call before ``getOrCreate()``."""
    opts = f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()} {extra_java_options}".strip()
    return builder.config("spark.driver.extraJavaOptions", opts)
