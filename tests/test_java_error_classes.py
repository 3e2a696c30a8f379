"""The Java dialect classifies transactional errors as Kafka 4.1.1's TransactionManager does
(clients/producer/internals/TransactionManager.java: the handlers' handleResponse and maybeTransitionToErrorState)."""
import pytest

from txnlab.client.dialect import Action, classify
from txnlab.protocol.errors import Errors as E

R, A, F = Action.RETRY, Action.ABORTABLE, Action.FATAL


@pytest.mark.parametrize("api, error, action", [
    # 4.1.1: INVALID_PRODUCER_ID_MAPPING is fatal (October 2024: abortableErrorIfPossible)
    ("AddPartitionsToTxn", E.INVALID_PRODUCER_ID_MAPPING, F),
    ("AddOffsetsToTxn", E.INVALID_PRODUCER_ID_MAPPING, F),
    ("EndTxn", E.INVALID_PRODUCER_ID_MAPPING, F),
    ("Produce", E.INVALID_PRODUCER_ID_MAPPING, F),      # maybeTransitionToErrorState: InvalidPidMappingException
    # an error no branch names: fatal "Unexpected error in ...Response", AddPartitionsToTxn's abortable
    ("InitProducerId", E.INVALID_REQUEST, F),
    ("AddOffsetsToTxn", E.UNKNOWN_SERVER_ERROR, F),
    ("EndTxn", E.UNKNOWN_SERVER_ERROR, F),
    ("TxnOffsetCommit", E.UNKNOWN_SERVER_ERROR, F),
    ("AddPartitionsToTxn", E.UNKNOWN_SERVER_ERROR, A),
    # named abortable ones
    ("InitProducerId", E.CLUSTER_AUTHORIZATION_FAILED, A),
    ("InitProducerId", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, A),
    ("TxnOffsetCommit", E.ILLEGAL_GENERATION, A),
    ("TxnOffsetCommit", E.TRANSACTION_ABORTABLE, A),
    ("EndTxn", E.UNKNOWN_PRODUCER_ID, A),
    ("Produce", E.INVALID_PRODUCER_EPOCH, A),
    ("Produce", E.INVALID_TXN_STATE, A),
    # fenced, and retriable
    ("TxnOffsetCommit", E.INVALID_PRODUCER_EPOCH, F),
    ("EndTxn", E.PRODUCER_FENCED, F),
    ("EndTxn", E.CONCURRENT_TRANSACTIONS, R),
    ("InitProducerId", E.COORDINATOR_LOAD_IN_PROGRESS, R),
    ("TxnOffsetCommit", E.UNKNOWN_TOPIC_OR_PARTITION, R),
])
def test_java_classifies_as_kafka_4_1_1(api, error, action):
    assert classify("java", api, error) is action
