"""Kafka's own Java client as a reference (issue 17 item 4): a transactional copier on kafka-clients
(reference/src/main/java/txnlab/reference/Copier.java) runs against real Apache Kafka, plainly, with a zombie
fenced by a second initTransactions, and with the transaction coordinator's broker killed: mid-transaction
(before the commit), or once the commit is answered (on txnlab exactly between PrepareCommit and the markers).
The same copier written with txnlab's client runs on a txnlab cluster with the same settings, and the Java copier
itself runs on a txnlab cluster through its Kafka-protocol listener; what a user checks must agree: the records
read_committed in the output, the offset committed for the input, whether the zombie was fenced, and the producer
epoch after each commit (with transaction.version 2 the Java client bumps it on every EndTxn, KIP-890)."""
import json
import os
import signal
import subprocess

import pytest

from conftest import CLUSTERS
from reference import kafka
from reference.backends import KafkaBackend, LabBackend, WireBackend
from reference.harness import Observer, err_sig, fill, group_consumer, new_topic, produce, txn_producer

TOTAL, BATCH = 6, 2


def _seed(b) -> tuple:
    src, dst, group, tid = new_topic(b, "jin"), new_topic(b, "jout"), b.unique("jg"), b.unique("jtx")
    fill(b, src, [f"e{i}" for i in range(TOTAL)])
    return src, dst, group, tid


def _outcome(b, dst: str, result: dict) -> dict:
    o = Observer(b)
    o.read("out", dst)
    return {"copied": result["copied"], "committed": result["committed"], "epochs": result["epochs"],
            "fenced": result["fenced"], "out": o.values["out.rc.records"], "lso": o.values["out.rc.lso"]}


class Failover:
    """What the test does at the copier's two pauses around its second commit.  ``failover``: the transaction
    coordinator's broker is killed before the commit (mid-transaction: the commit meets a new coordinator).
    ``failover-after-prepare``: it is killed once the commit is answered; on txnlab its markers are held back
    first, so the crash comes exactly between PrepareCommit and the markers (``window`` says what it found), and
    the next transaction meets a new coordinator that must finish the old commit first."""

    def __init__(self, b, mode: str, tid: str, dst: str, group: str) -> None:
        self.b, self.mode, self.tid, self.dst, self.group = b, mode, tid, dst, group
        self.killed, self.held, self.window = None, None, None

    def pause(self, where: str) -> None:
        if not self.mode.startswith("failover"):
            return
        if where == "before-commit":
            self.coordinator = self.b.coordinator(self.tid)
            if self.mode == "failover":
                self.kill()
            elif self.mode == "failover-after-prepare":
                self.held = self.b.hold_markers(self.tid, self.dst, self.group)
        elif where == "after-commit" and self.mode == "failover-after-prepare":
            self.window = self.b.commit_window(self.tid, self.dst)
            self.kill()
            self.b.release(self.held)

    def kill(self) -> None:
        self.killed = self.coordinator
        self.b.kill(self.killed)

    def restart(self) -> None:
        if self.killed is not None:
            self.b.restart(self.killed)


def java_copier(b, mode: str) -> dict:
    """The Java copier against ``b`` (real Kafka, or a txnlab cluster's listener)."""
    src, dst, group, tid = _seed(b)
    cmd = kafka.java(kafka.classpath(), "txnlab.reference.Copier", b.bootstrap, src, dst, group, tid, str(TOTAL),
                     str(BATCH), mode)
    proc = kafka.popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    failover = Failover(b, mode, tid, dst, group)
    try:
        while True:
            line = proc.stdout.readline()
            assert line, "the Java copier ended without an answer"
            if line.startswith("PAUSE "):
                failover.pause(line.split()[1])
                proc.stdin.write("go\n")
                proc.stdin.flush()
            elif line.startswith("{"):
                break
        proc.wait(120)
    finally:
        if proc.poll() is None:            # the test failed with the copier still running: end it
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdin.close()
        proc.stdout.close()
        failover.restart()                 # the session's cluster gets its broker back whatever happened
    result = json.loads(line)
    result["fenced"] = any(e.startswith("fenced") for e in result["events"])
    return {**_outcome(b, dst, result), "window": failover.window}


def lab_copier(b: LabBackend, mode: str) -> dict:
    """The same copier, on txnlab's confluent-kafka-shaped client in the Java client's dialect (the one that
    speaks transaction.version 2, as the Java client does)."""
    src, dst, group, tid = _seed(b)
    java = {"sim.client.dialect": "java"}
    c = group_consumer(b, group, src, **{"auto.offset.reset": "earliest", "isolation.level": "read_committed",
                                         **java})
    tp = b.TopicPartition(src, 0)
    p = txn_producer(b, tid, **java)
    p.init_transactions(30)
    copied, txn, epochs, fenced = 0, 0, [], False
    failover = Failover(b, mode, tid, dst, group)
    while copied < TOTAL:
        batch = [m for m in c.consume(BATCH, 20) if not m.error()]
        if not batch:
            break
        txn += 1
        p.begin_transaction()
        produce(p, dst, [m.value().upper() for m in batch])
        p.send_offsets_to_transaction(c.position([tp]), c.consumer_group_metadata(), 30)
        if txn == 2 and mode == "fence":
            successor = txn_producer(b, tid, **java)
            successor.init_transactions(30)
            try:
                p.commit_transaction(30)
            except b.KafkaException as e:
                fenced = err_sig(e).startswith(("_FENCED", "PRODUCER_FENCED"))   # Java keeps the code
            p = successor
            c.seek(b.TopicPartition(src, 0, c.committed([tp], 10)[0].offset))
            continue
        if txn == 2:
            failover.pause("before-commit")
        p.commit_transaction(60)
        if txn == 2:
            failover.pause("after-commit")
        copied += len(batch)
        epochs.append(b.describe_transactions(tid)[tid]["producer_epoch"])
    committed = c.committed([tp], 10)[0].offset
    c.close()
    failover.restart()
    return {**_outcome(b, dst, {"copied": copied, "committed": committed, "epochs": epochs, "fenced": fenced}),
            "window": failover.window}


_ON_KAFKA: dict = {}      # (mode, kind) -> the Java copier's outcome on real Kafka, run once per session


def on_kafka(real_kafka, mode: str, kind: str) -> dict:
    if (mode, kind) not in _ON_KAFKA:
        _ON_KAFKA[(mode, kind)] = java_copier(KafkaBackend(real_kafka(kind)), mode)
    return dict(_ON_KAFKA[(mode, kind)])


def _expected(want: dict, mode: str) -> None:
    """What the Java copier must achieve on real Kafka whatever happens: every record once, in order, visible to
    read_committed, and the input's offset committed past the last one."""
    assert want["out"] == [(o, f"E{i}") for o, i in zip([r[0] for r in want["out"]], range(TOTAL))]
    assert want["copied"] == TOTAL and want["committed"] == TOTAL and want["lso"] == want["out"][-1][0] + 2
    assert want["fenced"] == (mode == "fence")


def _as_if_marked_once(want: dict, mode: str) -> dict:
    """On Kafka the moment of the kill after the second commit is not under the test's control: sometimes the old
    coordinator has already written the output's COMMIT marker when it dies, and the new coordinator, finding the
    transaction in PrepareCommit, writes it again (a broker appends a marker for a producer with no open
    transaction: ProducerAppendInfo.appendEndTxnMarker checks only the epochs), so every later offset is one
    higher.  txnlab's crash always comes before that marker; the outcome is compared as if Kafka's had been
    written once, and only that difference is forgiven."""
    out = want["out"]
    if mode != "failover-after-prepare" or out[2 * BATCH][0] - out[2 * BATCH - 1][0] != 3:
        return want
    return {**want, "out": out[:2 * BATCH] + [(o - 1, v) for o, v in out[2 * BATCH:]], "lso": want["lso"] - 1}


MODES = [("plain", "one"), ("fence", "one"), ("failover", "three"), ("failover-after-prepare", "three")]


@pytest.mark.parametrize("mode,kind", MODES)
def test_java_copier_on_kafka_and_txnlab_copier_agree(mode, kind, real_kafka):
    want = on_kafka(real_kafka, mode, kind)
    got = lab_copier(LabBackend(*CLUSTERS[kind]), mode)
    _expected(want, mode)
    want = _as_if_marked_once(want, mode)
    if mode == "failover-after-prepare":
        # txnlab crashed its coordinator with the commit decided and no marker of it written (the first
        # transaction's COMMIT is the only one); on Kafka the moment of the kill is not under the test's control
        assert got.pop("window") == {"state": "PrepareCommit", "markers": ["COMMIT"]}
        assert want.pop("window") is None
    assert got == want


@pytest.mark.parametrize("mode,kind", [("fence", "one"), ("failover", "three"), ("failover-after-prepare", "three")])
def test_java_copier_against_the_labs_listener(mode, kind, real_kafka):
    """Kafka's Java client itself on a txnlab cluster, through its Kafka-protocol listener (cluster.listen()):
    the same copier, the same outcome as on real Kafka.  With the coordinator's broker crashed (three brokers,
    transaction.version 1) the Java client finds the new coordinator by its own rules (FindCoordinator, retries
    of CONCURRENT_TRANSACTIONS while the new coordinator finishes the decided commit) and copies every record
    once."""
    want = on_kafka(real_kafka, mode, kind)
    _expected(want, mode)
    want = _as_if_marked_once(want, mode)
    wire = WireBackend(*CLUSTERS[kind])
    try:
        got = java_copier(wire, mode)
    finally:
        wire.close()
    if mode == "failover-after-prepare":
        assert got.pop("window") == {"state": "PrepareCommit", "markers": ["COMMIT"]}
        assert want.pop("window") is None
    assert got == want


JAVA_EXCEPTION = {"PRODUCER_FENCED": "ProducerFencedException", "_FENCED": "ProducerFencedException",
                  "INVALID_PRODUCER_EPOCH": "InvalidProducerEpochException",
                  "INVALID_TXN_STATE": "InvalidTxnStateException", "_TIMED_OUT": "TimeoutException",
                  "TRANSACTION_ABORTABLE": "TransactionAbortableException"}


@pytest.mark.parametrize("kind", ["one", "three"])
def test_java_client_transaction_timeout_matches_the_labs_java_dialect(kind, real_kafka):
    """A transaction older than transaction.timeout.ms is aborted by the coordinator (epoch bumped); Kafka's Java
    client on real Kafka and txnlab's client in its Java dialect (sim.client.dialect=java) see the same exception
    at the next commit and abort (transaction.version 2 on one broker, 1 on three)."""
    real = KafkaBackend(real_kafka(kind))
    t, tid = real.unique("jto"), real.unique("jtotx")
    real.create_topic(t)
    out = kafka.run(kafka.java(real.cluster.cp, "txnlab.reference.TimeoutProbe", real.bootstrap, t, tid, "5000"),
                    timeout=180)
    want = json.loads(out.stdout.strip().splitlines()[-1])

    lab = LabBackend(*CLUSTERS[kind])
    lab.create_topic(t)
    p = lab.Producer({"bootstrap.servers": lab.bootstrap, "transactional.id": tid, "sim.client.dialect": "java",
                      "transaction.timeout.ms": 2000, "delivery.timeout.ms": 2000, "request.timeout.ms": 1500,
                      "linger.ms": 0})
    p.init_transactions(30)
    p.begin_transaction()
    produce(p, t, ["slow"])
    lab.sleep(5)

    def java_name(call) -> str:
        try:
            call(30)
            return "ok"
        except lab.KafkaException as e:
            name = e.args[0].name()
            return JAVA_EXCEPTION.get(name, name)
    got = {"commit": java_name(p.commit_transaction)}
    got["abort"] = "-" if got["commit"] == "ok" else java_name(p.abort_transaction)
    assert want["commit"] != "ok"                     # the coordinator did abort it on real Kafka
    if want["abort"] == "KafkaException" and got["abort"] == got["commit"] != "ProducerFencedException":
        # the Java client rethrows a fatal error other than fencing, on every later call, as a plain KafkaException
        # ("Cannot execute transactional method because we are in an error state", the error as its cause);
        # txnlab's KafkaError keeps the fatal error's own name: the same error, named one level deeper
        got["abort"] = "KafkaException"
    assert got == want
