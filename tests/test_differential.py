"""Apache Kafka as the reference (issue 17): every scenario of tests/reference/scenarios_*.py is written once
against confluent-kafka's API and runs twice: confluent_kafka (librdkafka) on a real Apache Kafka cluster
started here, and txnlab's clients on a txnlab Cluster with the same broker settings.  Every observable
(offsets, what read_committed and read_uncommitted consumers return and where they stop, HW and LSO, the
error and its classes at each call, DescribeTransactions / ListTransactions / DescribeProducers, committed
offsets) must agree, except the differences listed in KNOWN_DIFFERENCES with their reason.  The run writes
tests/artifacts/fidelity.md.  Without Java or Maven (or a reachable Maven repository on the first run) the real
side cannot start and these tests skip, saying so."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reference import kafka
from reference.backends import KafkaBackend, LabBackend
from reference.harness import SCENARIOS, Observer
from reference import scenarios_basic, scenarios_faults  # noqa: F401  (they register the scenarios)

ARTIFACT = Path(__file__).parent / "artifacts" / "fidelity.md"
CLUSTERS = {"one": (1, 2), "three": (3, 1)}      # kind -> (brokers, transaction.version)

# (scenario, observable) -> why the lab differs from Apache Kafka + librdkafka there.  Each entry is a difference
# that is understood and left on purpose; anything else that differs fails its test.
KNOWN_DIFFERENCES: dict = {}

_ROWS: list = []           # (scenario, observable, same, kafka value, lab value)
_REAL: dict = {}


def _real_cluster(kind: str):
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


@pytest.fixture(scope="session", autouse=True)
def _real_clusters_and_table():
    yield
    for c in _REAL.values():
        if isinstance(c, kafka.KafkaCluster):
            c.close()
    if _ROWS:
        write_table(_ROWS)


def _run(scenario_fn, backend) -> dict:
    o = Observer(backend)
    try:
        scenario_fn(backend, o)
    except Exception as e:     # the scenario could not go on: that is an observable too
        o.values["raised"] = f"{type(e).__name__}: {str(e)[:120]}"
    return o.values


@pytest.mark.parametrize("name,kind,fn", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_scenario_agrees_with_apache_kafka(name, kind, fn):
    real = _real_cluster(kind)
    brokers, tv = CLUSTERS[kind]
    want = _run(fn, KafkaBackend(real))
    got = _run(fn, LabBackend(brokers, tv))
    assert "raised" not in want, f"the scenario itself failed on real Kafka: {want['raised']}"
    unexplained = []
    for key in sorted(set(want) | set(got), key=lambda k: (list(want) + list(got)).index(k)):
        a, b = _norm(want.get(key, "<absent>")), _norm(got.get(key, "<absent>"))
        same = a == b
        _ROWS.append((name, key, same, a, b))
        if not same and (name, key) not in KNOWN_DIFFERENCES and (name, "*") not in KNOWN_DIFFERENCES:
            unexplained.append(f"{key}: kafka={a} txnlab={b}")
    assert not unexplained, "txnlab differs from Apache Kafka:\n" + "\n".join(unexplained)


def _norm(v):
    return json.loads(json.dumps(v, default=str))


def write_table(rows: list) -> None:
    scenarios = sorted({r[0] for r in rows})
    same = sum(1 for r in rows if r[2])
    lines = [f"# Fidelity: txnlab against Apache Kafka {kafka.KAFKA_VERSION}", "",
             "Written by `tests/test_differential.py` (issue 17). Each scenario runs once with confluent-kafka "
             f"(librdkafka) on a real Apache Kafka {kafka.KAFKA_VERSION} cluster and once with txnlab's clients on a "
             "txnlab Cluster with the same broker settings; producer ids are normalised to P1, P2, ... "
             "Single-broker scenarios run with transaction.version=2, three-broker ones with transaction.version=1.",
             "", f"**{len(scenarios)} scenarios, {len(rows)} observables: {same} agree, {len(rows) - same} differ.**",
             "", "| scenario | observable | | Apache Kafka | txnlab | why it differs |", "|---|---|---|---|---|---|"]
    for name, key, ok, a, b in rows:
        why = KNOWN_DIFFERENCES.get((name, key)) or KNOWN_DIFFERENCES.get((name, "*"), "")
        cell = lambda v: json.dumps(v)[:160].replace("|", "\\|")  # noqa: E731
        lines.append(f"| {name} | {key} | {'same' if ok else '**differs**'} | {cell(a)} | "
                     f"{'' if ok else cell(b)} | {'' if ok else why} |")
    ARTIFACT.parent.mkdir(exist_ok=True)
    if os.environ.get("TXNLAB_FIDELITY_PARTIAL") != "1" or not ARTIFACT.exists():
        ARTIFACT.write_text("\n".join(lines) + "\n")
