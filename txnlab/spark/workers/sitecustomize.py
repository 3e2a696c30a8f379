"""Run at start-up by each Python process Spark starts for the lab (``txnlab.spark.session.quick_python()`` puts
this directory on their ``PYTHONPATH``): import the installed ``pyspark`` instead of Spark's zip copy of it.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on its Python processes' path, and Python keeps no
bytecode cache for modules imported from a zip, so each process compiled PySpark again (about 0.5 s of CPU, for
each of the dozen or so processes a chapter-07 run starts).  With a pip-installed pyspark that zip lies inside the
installed package -- the same code -- and this drops it (and py4j's) from ``sys.path``; any other zip stays.
Nothing else is changed, and nothing is imported.
"""
import os
import sys


def drop_pyspark_zips() -> bool:
    """Drop the ``pyspark.zip`` (and py4j zip) entries of ``sys.path`` that lie inside an installed ``pyspark``
    package that is itself importable from ``sys.path``; True if any was dropped."""
    dropped = False
    for entry in [e for e in sys.path if e.endswith(".zip")]:
        lib = os.path.dirname(entry)
        package = os.path.dirname(os.path.dirname(lib))
        if (os.path.basename(lib) == "lib" and os.path.basename(os.path.dirname(lib)) == "python"
                and os.path.basename(package) == "pyspark" and os.path.exists(os.path.join(package, "__init__.py"))
                and os.path.dirname(package) in sys.path):
            sys.path.remove(entry)
            dropped = True
    return dropped


def _chain() -> None:
    """Run the next ``sitecustomize`` on the path too, if there is one (this one would otherwise hide it)."""
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        candidate = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.abspath(entry or ".") != here and os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_next_sitecustomize", candidate)
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


if __name__ == "sitecustomize":          # Python's start-up (a test may load this file under another name)
    drop_pyspark_zips()
    _chain()
