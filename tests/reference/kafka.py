"""Apache Kafka itself, started on demand for the differential suite (issue 17).

``classpath()`` resolves the pinned Kafka (reference/pom.xml) through Maven, offline first (``~/.m2`` is the
cache), then online; it never runs at import time.  ``KafkaCluster`` formats KRaft storage with
``kafka.tools.StorageTool`` and starts real JVM processes on loopback ephemeral ports: one combined
broker+controller for a single-broker cluster, or one controller plus N brokers (so a broker can be killed
without losing the quorum).  Every JVM logs to files under its own temporary directory.

Every JVM started here (``popen`` / ``run``) dies with the process that started it: it gets its own process
group (so a kill reaches the JVM and anything it forks) and the kernel's parent-death signal (``prctl
PR_SET_PDEATHSIG``, SIGKILL), so a pytest that is killed, even with SIGKILL, leaves no Kafka broker running."""
from __future__ import annotations

import base64
import ctypes
import ctypes.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]
POM_DIR = ROOT / "reference"
KAFKA_VERSION = "4.1.1"          # keep in step with <kafka.version> in reference/pom.xml
CLASSPATH_FILE = POM_DIR / "target" / "classpath.txt"
COPIER_JAR = POM_DIR / "target" / "txnlab-reference-1.jar"

LOG4J2 = """status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
"""


class Unavailable(Exception):
    """Real Kafka cannot run here; the message is the one sentence the suite skips with."""


PR_SET_PDEATHSIG = 1             # <linux/prctl.h>
_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True) if os.name == "posix" else None


def die_with_parent(parent: int):
    """A ``preexec_fn`` for a child of process ``parent``: a session (process group) of its own, and SIGKILL as
    soon as its parent ends.  The signal follows the thread that forked, so start JVMs from the main thread.  If
    the parent has already gone by the time the child runs this, the child ends at once."""
    def setup() -> None:
        os.setsid()
        if _LIBC is not None and hasattr(_LIBC, "prctl"):
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
    return setup


def popen(cmd: list[str], **kw) -> subprocess.Popen:
    """``subprocess.Popen`` for a JVM (or any helper process) that must not outlive this process."""
    return subprocess.Popen(cmd, preexec_fn=die_with_parent(os.getpid()), **kw)


def run(cmd: list[str], timeout: float, **kw) -> subprocess.CompletedProcess:
    """``subprocess.run`` with the same guarantee; on a timeout the whole process group is killed."""
    with popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            raise
        return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def java(cp: str, main: str, *args: str, heap: str = "-Xmx256m") -> list[str]:
    """The command line of a small client JVM (the Java tools in reference/)."""
    return ["java", heap, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", cp, main, *args]


def _mvn(args: list[str], offline: bool) -> subprocess.CompletedProcess:
    cmd = ["mvn", "-B", "-q"] + (["-o"] if offline else []) + args
    return run(cmd, timeout=900, cwd=POM_DIR)


def build() -> None:
    """Resolves Kafka's jars and builds the Java copier: offline from ~/.m2 when they are there, else online."""
    if shutil.which("java") is None or shutil.which("mvn") is None:
        raise Unavailable("real Kafka needs Java 17+ and Maven on PATH, and this machine lacks "
                          + ("java" if shutil.which("java") is None else "mvn"))
    if CLASSPATH_FILE.exists() and COPIER_JAR.exists():
        sources = [POM_DIR / "pom.xml", *(POM_DIR / "src").rglob("*.java")]
        built = min(CLASSPATH_FILE.stat().st_mtime, COPIER_JAR.stat().st_mtime)
        if all(f.stat().st_mtime <= built for f in sources):
            return
    args = ["package", "dependency:build-classpath", f"-Dmdep.outputFile={CLASSPATH_FILE}"]
    done = _mvn(args, offline=True)
    if done.returncode != 0:
        done = _mvn(args, offline=False)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        raise Unavailable("Maven could not resolve Apache Kafka " + KAFKA_VERSION + " (no cached jars in ~/.m2 and "
                          "no reachable Maven repository): " + " | ".join(tail))


def classpath() -> str:
    build()
    return CLASSPATH_FILE.read_text().strip() + os.pathsep + str(COPIER_JAR)


def free_port() -> int:
    """A port for a real broker that no lab door of this process has had: a client of a closed lab (Spark's cached
    producers reconnect for minutes) must not find a real broker on its old port."""
    from txnlab.wire.listener import fresh_port
    return fresh_port()


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def cluster_uuid() -> str:
    # like Kafka's Uuid.randomUuid: never one that starts with '-' (a command line would take it for an option)
    while True:
        u = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not u.startswith("-"):
            return u


def _props(d: dict) -> str:
    return "".join(f"{k}={v}\n" for k, v in d.items())


# Broker settings both sides share (the txnlab Cluster gets the same keys): small internal topics so a cluster
# starts in seconds, no initial rebalance delay, and a 1 s sweep for timed-out transactions (the timeout scenario)
def shared_broker_config(brokers: int) -> dict:
    rf = min(3, brokers)
    return {
        "offsets.topic.num.partitions": 3,
        "offsets.topic.replication.factor": rf,
        "transaction.state.log.num.partitions": 3,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": min(2, rf),
        "group.initial.rebalance.delay.ms": 0,
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
        "transaction.max.timeout.ms": 900_000,
        "auto.create.topics.enable": False,
    }


class KafkaCluster:
    """A real Apache Kafka cluster of ``brokers`` broker processes (ids 0..N-1) with ``transaction.version`` set
    at format time.  ``kill(i)`` is SIGKILL, ``stop(i)`` a clean shutdown, ``start(i)`` brings a broker back."""

    def __init__(self, brokers: int = 1, transaction_version: int = 2, name: str = "kafka") -> None:
        self.n = brokers
        self.transaction_version = transaction_version
        self.cp = classpath()
        self.dir = Path(tempfile.mkdtemp(prefix=f"txnlab-{name}-"))
        self.cluster_id = cluster_uuid()
        self.combined = brokers == 1
        self.controller_port = free_port()
        self.ports = {i: free_port() for i in range(brokers)}
        self.procs: dict = {}
        self.killed: set = set()                      # nodes killed on purpose and not started again
        self._tool = None                             # the TxnTool JVM (admin_tool)
        self.bootstrap = ",".join(f"127.0.0.1:{p}" for p in self.ports.values())
        self.nodes = {}                               # node key -> properties file
        controller_id = 0 if self.combined else 1000
        voters = f"{controller_id}@127.0.0.1:{self.controller_port}"
        base = {"controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "inter.broker.listener.name": "PLAINTEXT",
                "controller.quorum.voters": voters,
                "num.network.threads": 2, "num.io.threads": 2, "num.recovery.threads.per.data.dir": 1,
                "log.flush.interval.messages": 1, **shared_broker_config(brokers)}
        if self.combined:
            self.nodes[0] = {**base, "node.id": 0, "process.roles": "broker,controller",
                             "listeners": f"PLAINTEXT://127.0.0.1:{self.ports[0]},"
                                          f"CONTROLLER://127.0.0.1:{self.controller_port}",
                             "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.ports[0]}"}
        else:
            self.nodes["controller"] = {k: v for k, v in base.items() if k != "inter.broker.listener.name"}
            self.nodes["controller"].update({"node.id": controller_id, "process.roles": "controller",
                                             "listeners": f"CONTROLLER://127.0.0.1:{self.controller_port}"})
            for i in range(brokers):
                self.nodes[i] = {**base, "node.id": i, "process.roles": "broker",
                                 "listeners": f"PLAINTEXT://127.0.0.1:{self.ports[i]}",
                                 "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.ports[i]}"}
        for key, props in self.nodes.items():
            d = self.dir / f"node-{key}"
            (d / "data").mkdir(parents=True)
            (d / "logs").mkdir()
            props["log.dirs"] = str(d / "data")
            (d / "server.properties").write_text(_props(props))
            (d / "log4j2.properties").write_text(LOG4J2)
        for key in self.nodes:
            self._format(key)

    def _java(self, key, main: str, *args: str) -> list[str]:
        d = self.dir / f"node-{key}"
        heap = "-Xmx256m" if key == "admin-tool" else "-Xmx512m"
        return ["java", "-Xms128m", heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.awt.headless=true", f"-Dkafka.logs.dir={d / 'logs'}",
                f"-Dlog4j2.configurationFile={d / 'log4j2.properties'}", "-cp", self.cp, main, *args]

    def _format(self, key) -> None:
        d = self.dir / f"node-{key}"
        args = ["format", "--cluster-id", self.cluster_id, "--config", str(d / "server.properties"),
                "--ignore-formatted", "--feature", f"transaction.version={self.transaction_version}"]
        done = run(self._java(key, "kafka.tools.StorageTool", *args), timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed for node {key}: {done.stdout}{done.stderr}")

    def start_node(self, key) -> None:
        self.killed.discard(key)
        d = self.dir / f"node-{key}"
        out = open(d / "logs" / "stdout.log", "ab")
        self.procs[key] = popen(self._java(key, "kafka.Kafka", str(d / "server.properties")),
                                stdout=out, stderr=subprocess.STDOUT)
        out.close()

    def start(self, timeout: float = 180.0) -> "KafkaCluster":
        if not self.combined:
            self.start_node("controller")
        for i in range(self.n):
            self.start_node(i)
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 180.0, brokers: Optional[int] = None) -> None:
        """Until ``brokers`` (default: all) brokers are registered and the internal topics can be created."""
        from confluent_kafka.admin import AdminClient
        want = self.n if brokers is None else brokers
        deadline = time.monotonic() + timeout
        admin = None
        while time.monotonic() < deadline:
            for key, p in self.procs.items():
                if p.poll() is not None and key not in self.killed:
                    raise RuntimeError(f"Kafka node {key} exited with {p.returncode}; see {self.dir}/node-{key}/logs")
            if admin is None:
                if not any(_listening(p) for p in self.ports.values()):
                    time.sleep(0.3)
                    continue
                admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
            try:
                md = admin.list_topics(timeout=2)
                if len(md.brokers) >= want:
                    return
            except Exception:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"Kafka did not start within {timeout}s; logs under {self.dir}")

    @property
    def alive(self) -> set:
        return {k for k, p in self.procs.items() if p.poll() is None}

    def kill(self, broker: int) -> None:
        p = self.procs[broker]
        self.killed.add(broker)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(30)

    def stop_node(self, key, timeout: float = 60.0) -> None:
        p = self.procs.get(key)
        if p is None or p.poll() is not None:
            return
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(30)

    def restart(self, broker: int, timeout: float = 120.0) -> None:
        self.start_node(broker)
        self.wait_ready(timeout)

    def admin_tool(self, *args: str):
        """Runs one TxnTool command (reference/TxnTool.java: Kafka's Admin client) in a JVM kept for the cluster's
        life; returns its JSON answer."""
        import json
        if self._tool is None or self._tool.poll() is not None:
            d = self.dir / "node-admin-tool"
            d.mkdir(exist_ok=True)
            (d / "logs").mkdir(exist_ok=True)
            (d / "log4j2.properties").write_text(LOG4J2)
            self._tool = popen(self._java("admin-tool", "txnlab.reference.TxnTool", self.bootstrap),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._tool.stdin.write(" ".join(args) + "\n")
        self._tool.stdin.flush()
        line = self._tool.stdout.readline()
        if not line:
            raise RuntimeError(f"TxnTool ended without answering {args}")
        answer = json.loads(line)
        if isinstance(answer, dict) and "tool_error" in answer:
            raise RuntimeError(f"TxnTool {args}: {answer['tool_error']}")
        return answer

    def close(self) -> None:
        """Clean shutdown: brokers first, then the controller; the temporary directory goes with them."""
        if self._tool is not None and self._tool.poll() is None:
            self._tool.stdin.close()
            try:
                self._tool.wait(30)
            except subprocess.TimeoutExpired:
                self._tool.kill()
        for key in [k for k in self.procs if k != "controller"]:
            self.stop_node(key)
        self.stop_node("controller")
        if os.environ.get("TXNLAB_KEEP_KAFKA_LOGS") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)
