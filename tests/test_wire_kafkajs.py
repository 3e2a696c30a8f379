"""kafkajs (the Node.js client, from npm) against the lab's wire door: an idempotent producer, a transactional
producer that commits, aborts and commits, and a read_committed consumer group (``tests/kafkajs/eos.js``).
kafkajs is installed into ``build/node`` by ``scripts/install-kafkajs.sh`` (cached: a second run does nothing)."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess

import pytest

from txnlab.cluster import Cluster
from txnlab.protocol.record_batch import ControlRecordType

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def node_path() -> str:
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed, so kafkajs cannot run")
    done = subprocess.run([str(ROOT / "scripts" / "install-kafkajs.sh")], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"npm could not install kafkajs: {done.stdout.strip() or done.stderr.strip()}")
    return str(ROOT / "build" / "node" / "node_modules")


def test_kafkajs_idempotent_and_transactional_producers_and_a_read_committed_consumer(node_path):
    c = Cluster(brokers=3, seed=1)
    c.create_topic("t", partitions=1, replication_factor=3)
    door = c.listen()
    try:
        run = subprocess.run(["node", str(ROOT / "tests" / "kafkajs" / "eos.js"), door.bootstrap_servers, "t"],
                             capture_output=True, text=True, env={**os.environ, "NODE_PATH": node_path})
    finally:
        door.close()
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines, f"kafkajs printed no result: {run.stdout[-1000:]} {run.stderr[-1000:]}"
    out = json.loads(lines[-1])
    assert "error" not in out, out
    assert out["idempotent"] == [{"partition": 0, "baseOffset": "0", "errorCode": 0}]
    # read_committed: the aborted record and the three markers are skipped, offsets are the log's
    assert [(r["value"], r["offset"]) for r in out["read"]] == [
        ("idem-0", 0), ("idem-1", 1), ("committed-0", 2), ("committed-1", 3), ("committed-2", 7)]
    log = c.log("t")
    batches = list(log.batches)
    assert [b.control_type for b in batches if b.is_control] == [ControlRecordType.COMMIT, ControlRecordType.ABORT,
                                                                  ControlRecordType.COMMIT]
    assert batches[0].producer_id >= 0 and batches[0].base_sequence == 0     # the idempotent producer's batch
    assert [r.value for r in batches[3].records] == [b"aborted-0"]           # the aborted record is in the log
    assert log.last_stable_offset == log.log_end_offset == 9
