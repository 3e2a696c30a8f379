"""Which Produce requests a leader verifies with the coordinator (KIP-890) on a transaction.version 2 cluster: a client
that speaks transaction.version 2 (Produce v12+) always -- the leader adds the partition itself --, an older one only
with transaction.partition.verification.enable (Kafka 4.1 ReplicaManager.maybeStartTransactionVerificationForPartitions:
it skips when !transactionSupportedOperation.supportsEpochBump && !transactionPartitionVerificationEnable)."""
import pytest

from txnlab import Cluster, Producer


def first_produce(dialect: str, verification: bool) -> list:
    """The lines the leader wrote for the transaction's first Produce, and the coordinator's verify requests."""
    c = Cluster(brokers=1, seed=3, config={"transaction.version": 2,
                                           "transaction.partition.verification.enable": verification})
    c.create_topic("t")
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "sim.client.dialect": dialect})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"a")
    p.commit_transaction()
    return [e.narration for e in c.trace.filter(api="AddPartitionsToTxn")
            if not e.is_response and e.src.startswith("broker")]


@pytest.mark.parametrize("verification", [True, False])
def test_a_client_that_speaks_tv2_is_always_verified(verification):
    asked = first_produce("java", verification)
    assert len(asked) == 1 and "add" in asked[0]


def test_an_older_client_is_verified_only_with_the_setting_on():
    assert len(first_produce("librdkafka", True)) == 1
    assert first_produce("librdkafka", False) == []
