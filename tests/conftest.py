"""Shared fixtures.  ``real_kafka(kind)``: a real Apache Kafka cluster (tests/reference/kafka.py), started once per
session on first use and shut down cleanly at the end; the test skips, saying why, where Kafka cannot run."""
import pytest

_REAL: dict = {}
CLUSTERS = {"one": (1, 2), "three": (3, 1)}      # kind -> (brokers, transaction.version)


@pytest.fixture(scope="session")
def real_kafka():
    from reference import kafka

    def get(kind: str):
        if kind not in _REAL:
            brokers, tv = CLUSTERS[kind]
            try:
                _REAL[kind] = kafka.KafkaCluster(brokers, transaction_version=tv, name=f"ref{kind}").start()
            except kafka.Unavailable as e:
                _REAL[kind] = e
        got = _REAL[kind]
        if isinstance(got, Exception):
            pytest.skip(f"Apache Kafka cannot run here: {got}")
        return got
    yield get
    for c in _REAL.values():
        if isinstance(c, kafka.KafkaCluster):
            c.close()
    _REAL.clear()
