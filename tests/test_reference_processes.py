"""The real Kafka the reference tests start must not outlive them (issue 17): every JVM tests/reference/kafka.py
starts dies with the process that started it.  Here a Python process stands for pytest: it starts a Kafka broker
JVM the way the fixtures do and is then killed with SIGKILL (no clean-up code can run); the broker must go too."""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reference import kafka

TESTS = Path(__file__).resolve().parent

PARENT = """
import sys, time
sys.path.insert(0, sys.argv[1])
from reference import kafka
c = kafka.KafkaCluster(1, name="orphan")
c.start_node(0)
print(c.procs[0].pid, c.dir, flush=True)
time.sleep(3600)
"""


def _state(pid: int) -> str:
    """'running', 'zombie' (dead, not yet reaped) or 'gone'."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return "gone"
    state = next(line.split()[1] for line in status.splitlines() if line.startswith("State:"))
    return "zombie" if state in ("Z", "X") else "running"


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except FileNotFoundError:
        return []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux's")
def test_a_kafka_jvm_dies_with_the_process_that_started_it():
    try:
        kafka.build()
    except kafka.Unavailable as e:
        pytest.skip(f"Apache Kafka cannot run here: {e}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), os.environ.get("PYTHONPATH", "")])}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(TESTS)], stdout=subprocess.PIPE, text=True, env=env)
    line = parent.stdout.readline().split()
    assert line, "the parent process did not start its broker"
    jvm, directory = int(line[0]), line[1]
    try:
        assert _state(jvm) == "running" and "kafka.Kafka" in _cmdline(jvm)
        assert os.getpgid(jvm) == jvm != os.getpgid(parent.pid)      # a process group of its own
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        for _ in range(600):            # the kernel sends the signal at once; the check allows a loaded machine
            if _state(jvm) != "running":
                break
            time.sleep(0.05)
        assert _state(jvm) in ("zombie", "gone"), "the broker JVM outlived the process that started it"
    finally:
        if _state(jvm) == "running" and "kafka.Kafka" in _cmdline(jvm):
            os.kill(jvm, signal.SIGKILL)
        parent.stdout.close()
        shutil.rmtree(directory, ignore_errors=True)
