"""A directory put on the ``PYTHONPATH`` of the Python processes Spark starts (``txnlab.spark.session.quick_python``):
its ``sitecustomize.py`` runs when each of them starts.  Nothing here is imported by the lab itself."""
