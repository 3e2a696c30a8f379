"""The anomalies KIP-890 fixes (KAFKA-EOS §7), reproducible with the classic protocol and a naive
client, prevented by partition verification or by transaction.version 2."""
import pytest

from txnlab import Cluster, KafkaException, Producer, TopicPartition
from txnlab.admin import AbortTransactionSpec, AdminClient
from txnlab.errors import KafkaStateError

from helpers import RawClient, read_all

BASE = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3}


def cluster(tv=0, verification=False, seed=1):
    cfg = dict(BASE)
    cfg.update({"transaction.version": tv, "transaction.partition.verification.enable": verification})
    c = Cluster(brokers=3, seed=seed, config=cfg)
    c.create_topic("out", partitions=2, replication_factor=3)
    return c


def naive_producer(c, tid="naive", dialect="librdkafka"):
    """Gives up on a Produce after 1 s: librdkafka waits socket.timeout.ms (or what is left of the record's
    message.timeout.ms, if less), Kafka's Java client request.timeout.ms."""
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": tid, "sim.naive.client": True,
                  "socket.timeout.ms": 1_000, "request.timeout.ms": 1_000, "sim.client.dialect": dialect})
    p.init_transactions()
    return p


def late_produce_then_abort(c, p, delay_ms=20_000):
    """A Produce is delayed in the network; the naive client gives up on it and aborts."""
    p.begin_transaction()
    c.delay_next("Produce", delay_ms)
    p.produce("out", value=b"late", partition=0)
    with pytest.raises(KafkaException):
        p.commit_transaction()          # the timed-out batch makes the transaction abortable
    p.abort_transaction()


def test_late_produce_after_the_abort_marker_hangs_the_partition_classic():
    c = cluster(tv=0, verification=False)
    p = naive_producer(c)
    late_produce_then_abort(c, p)
    c.advance(30_000)                    # the delayed Produce lands after the ABORT marker
    st = c.partition_state("out", 0)
    assert st["lso"] < st["hw"], "an open transaction nobody will ever end pins the LSO"
    assert c.transaction_state("naive")["state"] == "CompleteAbort"
    plain = Producer({"bootstrap.servers": c.bootstrap})
    plain.produce("out", value=b"innocent", partition=0)
    plain.flush()
    c.run_until_idle()
    assert b"innocent" not in read_all(c, "out")      # stuck behind the hanging transaction
    # kafka-transactions.sh find-hanging + abort (KIP-664) frees it
    c.advance(16 * 60_000)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    hanging = admin.find_hanging_transactions([TopicPartition("out", 0)])
    assert len(hanging) == 1
    tp, ps = hanging[0]
    admin.abort_transaction(AbortTransactionSpec(tp, ps.producer_id, ps.producer_epoch,
                                                 ps.coordinator_epoch)).result()
    c.run_until_idle()
    assert read_all(c, "out") == [b"innocent"]


@pytest.mark.parametrize("tv,verification,dialect", [(0, True, "librdkafka"), (2, False, "java")])
def test_late_produce_after_abort_is_refused_with_verification_or_a_tv2_client(tv, verification, dialect):
    """A client that speaks transaction.version 2 (the Java dialect here) is verified whatever the setting."""
    c = cluster(tv=tv, verification=verification)
    p = naive_producer(c, dialect=dialect)
    late_produce_then_abort(c, p)
    c.advance(30_000)
    st = c.partition_state("out", 0)
    assert st["lso"] == st["hw"]
    assert read_all(c, "out", "read_uncommitted") == []
    assert any("the write is refused" in e.narration for e in c.trace)


def test_an_older_client_on_a_tv2_cluster_without_verification_hangs_the_partition():
    """Kafka 4.1 verifies a Produce below v12 only with transaction.partition.verification.enable
    (ReplicaManager.maybeStartTransactionVerificationForPartitions), and its log then checks nothing
    (UnifiedLog.batchMissingRequiredVerification): librdkafka's late write lands after the ABORT marker as on a
    classic cluster."""
    c = cluster(tv=2, verification=False)
    p = naive_producer(c)
    late_produce_then_abort(c, p)
    c.advance(30_000)
    st = c.partition_state("out", 0)
    assert st["lso"] < st["hw"]
    assert read_all(c, "out", "read_uncommitted") == [b"late"]
    assert not any("the write is refused" in e.narration for e in c.trace)


def test_late_produce_joins_the_next_transaction_classic_even_with_verification():
    c = cluster(tv=0, verification=True)
    p = naive_producer(c)
    late_produce_then_abort(c, p, delay_ms=5_000)
    p.begin_transaction()
    p.produce("out", value=b"new", partition=0)
    p.commit_transaction()
    c.run_until_idle()
    assert sorted(read_all(c, "out")) == [b"late", b"new"], "the aborted write was committed with the next txn"


def late_produce_then_next_transaction(dialect):
    c = cluster(tv=2)
    p = naive_producer(c, dialect=dialect)
    late_produce_then_abort(c, p, delay_ms=5_000)
    p.begin_transaction()
    p.produce("out", value=b"new", partition=0)
    p.commit_transaction()
    c.advance(10_000)
    c.run_until_idle()
    return c, read_all(c, "out")


def test_late_produce_cannot_join_the_next_transaction_with_tv2():
    """Kafka's Java client speaks KIP-890 part 2 on a transaction.version 2 cluster: the abort bumped the
    epoch, so the late batch (old epoch) is refused."""
    c, seen = late_produce_then_next_transaction("java")
    assert seen == [b"new"]
    assert any("INVALID_PRODUCER_EPOCH" in e.narration or "PRODUCER_FENCED" in e.narration for e in c.trace)


def test_late_produce_joins_the_next_transaction_of_a_classic_client_on_tv2():
    """librdkafka ends its transactions the classic way on any cluster (EndTxn below v5, no epoch bump), so
    transaction.version 2 cannot protect it: partition verification (part 1) lets the late batch in, because
    the partition is in the next transaction under the same epoch."""
    c, seen = late_produce_then_next_transaction("librdkafka")
    assert sorted(seen) == [b"late", b"new"]


def delayed_end_txn(c, tid, dialect="librdkafka"):
    """KAFKA-17754: EndTxn(commit) of transaction N is delayed; the client retries it, goes on with
    transaction N+1, and then the delayed request arrives.  The client gives up on a request after 2 s:
    librdkafka times EndTxn with socket.timeout.ms, Kafka's Java client with request.timeout.ms."""
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": tid, "socket.timeout.ms": 2_000,
                  "request.timeout.ms": 2_000, "sim.client.dialect": dialect})
    p.init_transactions()
    p.begin_transaction()
    p.produce("out", value=b"txn-N", partition=0)
    c.delay_next("EndTxn", 10_000)
    p.commit_transaction()              # the retried EndTxn commits N
    p.begin_transaction()
    p.produce("out", value=b"txn-N+1", partition=1)
    p.flush()
    c.advance(9_000)                    # the delayed EndTxn(commit) of N reaches the coordinator now
    c.run_until_idle()
    try:
        p.abort_transaction()           # the application decides to abort N+1
    except (KafkaException, KafkaStateError):
        pass
    c.run_until_idle()
    return read_all(c, "out")


def test_delayed_end_txn_commits_the_next_transaction_classic():
    assert sorted(delayed_end_txn(cluster(tv=0), "k17754")) == [b"txn-N", b"txn-N+1"]


def test_delayed_end_txn_is_fenced_with_tv2():
    c = cluster(tv=2)
    assert delayed_end_txn(c, "k17754", dialect="java") == [b"txn-N"]
    assert any("PRODUCER_FENCED" in e.narration for e in c.trace)


def test_delayed_end_txn_commits_the_next_transaction_of_a_classic_client_on_tv2():
    """The same race with librdkafka's classic EndTxn on a transaction.version 2 cluster: no epoch bump, so
    the delayed EndTxn(commit) ends transaction N+1 as well."""
    assert sorted(delayed_end_txn(cluster(tv=2), "k17754")) == [b"txn-N", b"txn-N+1"]


def test_producer_state_expiry_lets_a_very_late_retry_in_twice():
    c = Cluster(brokers=1, seed=2, config={"producer.id.expiration.ms": 60_000,
                                           "producer.id.expiration.check.interval.ms": 10_000})
    c.create_topic("t")
    raw = RawClient(c)
    for i in range(3):
        raw.produce("t", 0, [b"r%d" % i], pid=77, epoch=0, seq=i)
    assert raw.produce("t", 0, [b"r2"], pid=77, epoch=0, seq=2).base_offset == 2     # deduplicated
    c.advance(90_000)                                                                # producer 77 expires
    assert c.log("t", 0).producer_state.last_entry(77) is None
    r = raw.produce("t", 0, [b"r2"], pid=77, epoch=0, seq=2)
    assert r.base_offset == 3                                                        # accepted again
    from helpers import values_in_log
    assert values_in_log(c, "t") == [b"r0", b"r1", b"r2", b"r2"]
