"""Apache Kafka itself as the reference (issue 17): the real cluster fixture, the two backends and the
scenarios of the differential suite (tests/test_differential.py)."""
