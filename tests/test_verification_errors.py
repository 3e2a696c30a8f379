"""What a partition leader answers a transactional Produce when verifying (or, transaction.version 2, adding) the
partition with the coordinator goes wrong, as Kafka 4.1.1 does (ReplicaManager.appendRecordsWithTransactionVerification,
AddPartitionsToTxnManager, UnifiedLog.maybeStartTransactionVerification)."""
import pytest

from txnlab import Cluster, Producer
from txnlab.broker.produce import verification_error
from txnlab.log import UnifiedLog
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors as E
from txnlab.protocol.record_batch import Record, RecordBatch

from helpers import RawClient, values_in_log


@pytest.mark.parametrize("coordinator, tv2, produce", [
    (E.INVALID_PRODUCER_EPOCH, False, E.INVALID_PRODUCER_EPOCH),   # (PRODUCER_FENCED, as AddPartitionsToTxnManager says it)
    (E.NOT_COORDINATOR, True, E.NOT_ENOUGH_REPLICAS),             # retriable: NotEnoughReplicasException
    (E.COORDINATOR_LOAD_IN_PROGRESS, False, E.NOT_ENOUGH_REPLICAS),
    (E.COORDINATOR_NOT_AVAILABLE, False, E.NOT_ENOUGH_REPLICAS),
    (E.NETWORK_EXCEPTION, False, E.NOT_ENOUGH_REPLICAS),
    (E.CONCURRENT_TRANSACTIONS, False, E.NOT_ENOUGH_REPLICAS),    # verify-only (Produce v11 and older)
    (E.CONCURRENT_TRANSACTIONS, True, E.CONCURRENT_TRANSACTIONS),  # 4.1: kept for Produce v12+ (after retries)
    (E.INVALID_TXN_STATE, False, E.INVALID_TXN_STATE),            # "Partition was not added to the transaction"
    (E.TRANSACTION_ABORTABLE, False, E.TRANSACTION_ABORTABLE),    # passed on (the manager decides who is told it)
    (E.INVALID_PRODUCER_ID_MAPPING, True, E.INVALID_PRODUCER_ID_MAPPING),
])
def test_coordinator_errors_become_these_produce_errors(coordinator, tv2, produce):
    assert verification_error(coordinator, tv2) == produce


def test_a_late_produce_of_a_finished_transaction_is_refused_by_the_produce_version():
    """The coordinator finds the partition outside the producer's transaction: TRANSACTION_ABORTABLE, which only a
    Produce v11+ is told; v10 and older (librdkafka's highest) get INVALID_TXN_STATE "for backward compatibility with
    clients" (AddPartitionsToTxnManager: DEFAULT_ERROR)."""
    c = Cluster(brokers=3, seed=1)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"a")
    p.commit_transaction()
    c.advance(1_000)                                    # (the markers written: the transaction is complete)
    tm = p.transaction_manager
    raw = RawClient(c)
    answers = {}
    for version in (3, 10, 11, 12):
        late = RecordBatch((Record(None, b"late", (), c.now),), tm.producer_id, tm.producer_epoch, 1, True)
        resp = raw.call(c.leader("t"), m.ProduceRequest("tx", -1, 30_000, {("t", 0): late}, version))
        answers[version] = resp.responses[("t", 0)].error
    assert answers == {3: E.INVALID_TXN_STATE, 10: E.INVALID_TXN_STATE, 11: E.TRANSACTION_ABORTABLE,
                       12: E.TRANSACTION_ABORTABLE}
    assert b"late" not in values_in_log(c, "t")


@pytest.mark.parametrize("dialect, tv, version", [("librdkafka", 0, 10), ("librdkafka", 2, 10), ("java", 0, 11),
                                                  ("java", 2, 13)])
def test_each_client_sends_its_produce_version(dialect, tv, version):
    """librdkafka: rd_kafka_ProduceRequest_max_version 10; Kafka 4.1's Java client: its newest (v13) under
    transaction.version 2, at most v11 below it (ProduceRequest.builder)."""
    c = Cluster(brokers=1, seed=1, config={"transaction.version": tv})
    c.create_topic("t")
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "sim.client.dialect": dialect})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"a")
    p.commit_transaction()
    sent = [c.kernel.network.message(e.msg_id).payload for e in c.trace.filter(api="Produce") if not e.is_response]
    assert sent and {r.version for r in sent} == {version}


def _tv2_transactions(monkeypatch, n: int = 3):
    seen = []
    original = UnifiedLog.maybe_start_transaction_verification

    def spy(self, producer_id, sequence, epoch, now, supports_epoch_bump=False):
        seen.append(supports_epoch_bump)
        return original(self, producer_id, sequence, epoch, now, supports_epoch_bump)
    monkeypatch.setattr(UnifiedLog, "maybe_start_transaction_verification", spy)
    c = Cluster(brokers=3, seed=3, config={"transaction.version": 2})
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "sim.client.dialect": "java"})
    p.init_transactions()
    for _ in range(n):
        p.begin_transaction()
        p.produce("t", value=b"a")
        p.commit_transaction()
    return c, seen


def test_the_leader_retries_concurrent_transactions_when_it_adds_the_partition(monkeypatch):
    """Kafka 4.1 ReplicaManager.maybeRetryOnConcurrentTransactions: with transaction.version 2 the next transaction's
    first Produce usually reaches the leader while the coordinator still completes the previous one; the leader asks
    again every add.partitions.to.txn.retry.backoff.ms (20) instead of answering NOT_ENOUGH_REPLICAS."""
    c, seen = _tv2_transactions(monkeypatch)
    retried = c.trace.filter(api="AddPartitionsToTxn", contains="the leader asks again in 20 ms")
    assert retried
    produce_answers = " ".join(e.narration for e in c.trace.filter(api="Produce") if e.is_response)
    assert "NOT_ENOUGH_REPLICAS" not in produce_answers and "CONCURRENT_TRANSACTIONS" not in produce_answers
    # ReplicaManager passes transactionSupportedOperation.supportsEpochBump to maybeStartTransactionVerification,
    # which arms ProducerAppendInfo.checkSequence's "transactions v2: the first sequence must be 0" rule
    assert seen and all(seen)
