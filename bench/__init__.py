"""Benchmarks: txnlab's engine next to librdkafka's in-process mock cluster.

``python -m bench`` (or ``make bench``) runs them and merges the numbers into
``bench/results.json``. ``engine.py`` measures txnlab, ``reference.py`` measures the mock cluster
through confluent-kafka; both time the same operations with the same record sizes.
"""
