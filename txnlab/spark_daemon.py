"""Spark's Python worker daemon for the lab (``spark.python.daemon.module``): PySpark's own daemon, started with
what every task of the lab imports already imported, so that each worker it forks finds them there.

Spark starts one daemon per kind of Python worker and the daemon forks a process per worker; a worker imports
what its task needs after the fork (PySpark's daemon imports as little as it can, because a module that starts a
thread on import -- pyarrow, pandas -- must not be imported before a fork).  This daemon imports, before forking,
PySpark's worker code and the lab's source and sink, which start no thread; pandas and pyarrow are still imported
by each worker, after its fork.

Spark also puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on the workers' ``PYTHONPATH``, and Python keeps no
bytecode cache for modules imported from a zip: each process compiles PySpark's modules again (about 0.5 s of
CPU).  When that zip is the copy inside the installed ``pyspark`` package (a pip install: the same code), this
daemon imports the installed package instead, with its bytecode cache.

This module is not part of ``txnlab.spark`` so that importing it does not import PySpark before the path is set.
"""
from __future__ import annotations

import sys
from pathlib import Path


def prefer_installed_pyspark() -> bool:
    """Drop the ``pyspark.zip`` (and py4j zip) entries of ``sys.path`` that lie inside an installed ``pyspark``
    package that is itself importable from ``sys.path``; True if any was dropped."""
    entries = [e for e in sys.path if e.endswith(".zip") and Path(e).parent.name == "lib"
               and Path(e).parents[1].name == "python" and Path(e).parents[2].name == "pyspark"]
    keep = []
    for e in entries:
        package = Path(e).parents[2]
        if (package / "__init__.py").exists() and str(package.parent) in sys.path:
            keep.append(e)
    for e in keep:
        sys.path.remove(e)
    return bool(keep)


def preload() -> None:
    """What every worker of the lab's tasks imports that starts no thread."""
    import pyspark.worker  # noqa: F401
    import pyspark.sql.datasource  # noqa: F401
    import pyspark.sql.streaming.datasource  # noqa: F401
    import txnlab.spark.pipeline  # noqa: F401
    import txnlab.spark.reader  # noqa: F401
    import txnlab.spark.sink  # noqa: F401


if __name__ == "__main__":
    prefer_installed_pyspark()
    from pyspark import daemon
    preload()
    daemon.manager()
