"""Spark's Python worker daemon for the lab (``spark.python.daemon.module``): PySpark's own daemon, started with
what every task of the lab imports already imported, so that each worker it forks finds them there.

Spark starts one daemon per kind of Python worker and the daemon forks a process per worker; a worker imports
what its task needs after the fork (PySpark's daemon imports as little as it can, because a module that starts a
thread on import -- pyarrow, pandas -- must not be imported before a fork).  This daemon imports, before forking,
PySpark's worker code and the lab's source and sink, which start no thread; pandas and pyarrow are still imported
by each worker, after its fork.

That the daemon and its workers import the installed ``pyspark`` (with its bytecode cache) rather than Spark's zip
copy of it is ``txnlab.spark.session.quick_python()``'s work, done at each Spark Python process's start-up
(``txnlab/spark/workers/sitecustomize.py``).
"""
from __future__ import annotations


def preload() -> None:
    """What every worker of the lab's tasks imports that starts no thread."""
    import pyspark.worker  # noqa: F401
    import pyspark.sql.datasource  # noqa: F401
    import pyspark.sql.streaming.datasource  # noqa: F401
    import txnlab.spark.pipeline  # noqa: F401
    import txnlab.spark.reader  # noqa: F401
    import txnlab.spark.sink  # noqa: F401


if __name__ == "__main__":
    from pyspark import daemon
    preload()
    daemon.manager()
