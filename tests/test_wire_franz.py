"""A real client's own transactional integration tests, unchanged, against the lab's wire door.

franz-go (github.com/twmb/franz-go, the Go client) ships its integration tests inside its module: ``pkg/kgo``'s
``TestTxnEtl`` produces records in transactions and runs three chained levels of transactional consumer groups
(range, cooperative-sticky, cooperative-sticky with static members), each consuming read_committed, producing
to the next topic and committing its offsets in the transaction, and fails on any record consumed twice or
lost; ``TestGroupETL`` is the same chain without transactions.  They are configured by environment variables
(``KGO_SEEDS``: the brokers; ``KGO_TEST_RECORDS``: how many records, 500,000 by default).  This test fetches
the module with ``go mod download`` (Go's module cache), compiles its test binary with a build cache under
``build/go-cache`` and runs it against a three-broker lab.  Set ``TXNLAB_FRANZ_RECORDS`` for another size.

Both once failed now and then ("saw double offset", "unable to join group session: UNKNOWN_MEMBER_ID"): the door
let the requests' settling jump simulated time to the next timer (a group's 3 s initial rebalance delay, its
5 s settle deadline), so a member's 20 s session expired within a fraction of a wall second while the member
was alive and heartbeating every 3 s; the group rebalanced without it and its partitions were consumed twice.
The door now keeps simulated time at most ``lead_ms`` ahead of the wall clock (``txnlab/wire/listener.py``).
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from txnlab.cluster import Cluster

MODULE = "github.com/twmb/franz-go@v1.22.2"
ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
RECORDS = int(os.environ.get("TXNLAB_FRANZ_RECORDS", "25000"))   # three producer transactions of 10,000


def _go_env() -> dict:
    return {**os.environ, "GOCACHE": str(BUILD / "go-cache"), "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}


@pytest.fixture(scope="module")
def kgo_test_binary() -> pathlib.Path:
    go = shutil.which("go")
    if go is None:
        pytest.skip("Go is not installed, so franz-go's integration tests cannot be built")
    env = _go_env()
    got = subprocess.run([go, "mod", "download", "-json", MODULE], capture_output=True, text=True, env=env,
                         cwd=BUILD if BUILD.exists() else ROOT)
    try:
        directory = pathlib.Path(json.loads(got.stdout)["Dir"])
    except (ValueError, KeyError):
        directory = None
    if got.returncode != 0 or directory is None or not (directory / "pkg" / "kgo" / "txn_test.go").exists():
        pytest.skip(f"the Go module {MODULE} could not be fetched: {(got.stderr or got.stdout).strip()[:200]}")
    BUILD.mkdir(exist_ok=True)
    binary = BUILD / "franz-go" / "kgo.test"
    binary.parent.mkdir(exist_ok=True)
    built = subprocess.run([go, "test", "-c", "-o", str(binary), "."], cwd=directory / "pkg" / "kgo",
                           capture_output=True, text=True, env=env)
    assert built.returncode == 0, f"franz-go's kgo tests did not compile:\n{built.stderr[-2000:]}"
    return binary


def _results(output: str) -> dict:
    """``--- PASS: TestTxnEtl/range (6.8s)`` lines -> {"TestTxnEtl/range": "PASS"}."""
    return {m.group(2): m.group(1) for m in re.finditer(r"^\s*--- (PASS|FAIL|SKIP): (\S+)", output, re.M)}


def _run(binary: pathlib.Path, door, pattern: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KGO_SEEDS": door.bootstrap_servers, "KGO_TEST_RECORDS": str(RECORDS),
           "KGO_LOG_LEVEL": "none"}
    proc = subprocess.Popen([str(binary), "-test.run", pattern, "-test.v", "-test.count", "1",
                             "-test.timeout", "30m"], cwd=binary.parent, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


def _markers(c: Cluster) -> int:
    """Transaction markers the coordinators sent for the partitions of the topics the tests created (from the
    trace: franz-go deletes its topics when a test ends, through the door's DeleteTopics)."""
    return sum(1 for e in c.trace.events if e.kind == "deliver" and e.api == "WriteTxnMarkers" and not e.is_response
               for tp in e.text.rsplit(" -> ", 1)[-1].rstrip(")").split(", ") if not tp.startswith("__"))


def _user_topics(c: Cluster) -> list:
    return sorted({topic for topic, _ in c.controller.states if not topic.startswith("__")})


def _on_a_lab(binary, seed: int, test: str, sources: tuple) -> tuple:
    """(the lab, the test's results by name, the clients that came to its door) of franz-go's ``test`` run
    against a fresh three-broker lab's door; fails with the lines of ``sources`` (and FAIL lines) the run printed when ``test`` did not pass."""
    c = Cluster(brokers=3, seed=seed)
    door = c.listen()
    try:
        run = _run(binary, door, f"^{test}$")
    finally:
        door.close()
    results = _results(run.stdout)
    failed = [line for line in run.stdout.splitlines() if any(src in line for src in sources)
              or line.lstrip().startswith("--- FAIL")]
    assert results.get(test) == "PASS", "\n".join(failed[-40:]) or run.stdout[-3000:]
    return c, results, sorted(door.nodes)     # the clients that came, (client.id, software)


def test_franz_go_transactional_etl_chain_passes_unchanged_against_the_lab(kgo_test_binary):
    c, results, clients = _on_a_lab(kgo_test_binary, 1, "TestTxnEtl", ("txn_test.go", "group_test.go"))
    # the chains of classic groups pass; KIP-848 groups (ConsumerGroupHeartbeat) are not in the lab: skipped
    for sub in ("range", "cooperative-sticky", "cooperative-sticky/static"):
        assert results[f"TestTxnEtl/{sub}"] == "PASS"
    assert {k for k, v in results.items() if v == "SKIP"} == {"TestTxnEtl/range/848", "TestTxnEtl/sticky/848",
                                                               "TestTxnEtl/sticky/848/static"}
    assert _markers(c) > 0          # the coordinators wrote the transactions' markers to the tests' topics
    # and franz-go deleted its topics at the end (DeleteTopics at the door)
    assert _user_topics(c) == [], clients


def test_franz_go_group_etl_chain_passes_unchanged_against_the_lab(kgo_test_binary):
    c, results, clients = _on_a_lab(kgo_test_binary, 2, "TestGroupETL", ("group_test.go", "helpers_test.go:9"))
    for sub in ("range", "cooperative-sticky", "cooperative-sticky/static"):
        assert results[f"TestGroupETL/{sub}"] == "PASS"
    assert _user_topics(c) == [], clients
