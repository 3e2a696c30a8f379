"""Kafka's own Java client as a reference (issue 17 item 4): a transactional copier on kafka-clients
(reference/src/main/java/txnlab/reference/Copier.java) runs against real Apache Kafka, plainly, with a zombie
fenced by a second initTransactions, and with the transaction coordinator's broker killed before a commit.  The
same copier written with txnlab's client runs on a txnlab cluster with the same settings; what a user checks
must agree: the records read_committed in the output, the offset committed for the input, whether the zombie
was fenced, and the producer epoch after each commit (with transaction.version 2 the Java client bumps it on
every EndTxn, KIP-890)."""
import subprocess

import pytest

from conftest import CLUSTERS
from reference import kafka
from reference.backends import KafkaBackend, LabBackend, WireBackend
from reference.harness import Observer, err_sig, produce, txn_producer

TOTAL, BATCH = 6, 2


def _seed(b) -> tuple:
    src, dst, group, tid = b.unique("jin"), b.unique("jout"), b.unique("jg"), b.unique("jtx")
    b.create_topic(src)
    b.create_topic(dst)
    produce(b.Producer({"bootstrap.servers": b.bootstrap}), src, [f"e{i}" for i in range(TOTAL)])
    return src, dst, group, tid


def _outcome(b, dst: str, result: dict) -> dict:
    o = Observer(b)
    o.read("out", dst)
    return {"copied": result["copied"], "committed": result["committed"], "epochs": result["epochs"],
            "fenced": result["fenced"], "out": o.values["out.rc.records"], "lso": o.values["out.rc.lso"]}


def java_copier(b, mode: str) -> dict:
    """The Java copier against ``b`` (real Kafka, or a txnlab cluster's listener)."""
    src, dst, group, tid = _seed(b)
    cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", kafka.classpath(),
           "txnlab.reference.Copier", b.bootstrap, src, dst, group, tid, str(TOTAL), str(BATCH), mode]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    killed = None
    while True:
        line = proc.stdout.readline()
        assert line, "the Java copier ended without an answer"
        if line.startswith("KILL "):
            killed = int(line.split()[1])
            b.kill(killed)
            proc.stdin.write("go\n")
            proc.stdin.flush()
            continue
        if line.startswith("{"):
            break
    proc.wait(120)
    import json
    result = json.loads(line)
    result["fenced"] = any(e.startswith("fenced") for e in result["events"])
    if -1 in result["epochs"] and isinstance(b, WireBackend):
        # the listener does not serve DescribeTransactions: the lab tells the final epoch in-process
        result["epochs"] = [b.describe_transactions(tid)[tid]["producer_epoch"]]
    if killed is not None:
        b.restart(killed)
    return _outcome(b, dst, result)


def lab_copier(b: LabBackend, mode: str) -> dict:
    """The same copier, on txnlab's confluent-kafka-shaped client in the Java client's dialect (the one that
    speaks transaction.version 2, as the Java client does)."""
    src, dst, group, tid = _seed(b)
    java = {"sim.client.dialect": "java"}
    c = b.Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False,
                    "auto.offset.reset": "earliest", "isolation.level": "read_committed", **java})
    tp = b.TopicPartition(src, 0)
    c.assign([b.TopicPartition(src, 0, b.mod.OFFSET_BEGINNING)])
    p = txn_producer(b, tid, **java)
    p.init_transactions(30)
    copied, txn, epochs, fenced = 0, 0, [], False
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
        if txn == 2 and mode == "failover":
            b.kill(b.coordinator(tid))
        p.commit_transaction(60)
        copied += len(batch)
        epochs.append(b.describe_transactions(tid)[tid]["producer_epoch"])
    committed = c.committed([tp], 10)[0].offset
    c.close()
    return _outcome(b, dst, {"copied": copied, "committed": committed, "epochs": epochs, "fenced": fenced})


@pytest.mark.parametrize("mode,kind", [("plain", "one"), ("fence", "one"), ("failover", "three")])
def test_java_copier_on_kafka_and_txnlab_copier_agree(mode, kind, real_kafka):
    real = real_kafka(kind)
    want = java_copier(KafkaBackend(real), mode)
    got = lab_copier(LabBackend(*CLUSTERS[kind]), mode)
    assert want["out"] == [(o, f"E{i}") for o, i in zip([r[0] for r in want["out"]], range(TOTAL))]
    assert want["committed"] == TOTAL and want["fenced"] == (mode == "fence")
    assert got == want


@pytest.mark.parametrize("mode", ["fence"])
def test_java_copier_against_the_labs_listener(mode, real_kafka):
    """Kafka's Java client itself on a txnlab cluster, through its Kafka-protocol listener (cluster.listen()):
    the same copier, the same outcome as on real Kafka (transaction.version 2, one broker)."""
    want = java_copier(KafkaBackend(real_kafka("one")), mode)
    wire = WireBackend(*CLUSTERS["one"])
    try:
        got = java_copier(wire, mode)
    finally:
        wire.close()
    assert got.pop("epochs") == want.pop("epochs")[-1:]          # the epoch after the last commit
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
    out = subprocess.run(["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", real.cluster.cp,
                          "txnlab.reference.TimeoutProbe", real.bootstrap, t, tid, "5000"],
                         capture_output=True, text=True, timeout=180)
    import json
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
