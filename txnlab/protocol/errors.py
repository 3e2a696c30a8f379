"""Kafka's protocol error codes (``org.apache.kafka.common.protocol.Errors``).

Owns the numeric codes, names, and how a Java client classifies each error:
retriable (the request may simply be retried), and for transactional producers
whether the error is abortable (abort the transaction, then go on) or fatal
(close the producer).
"""
from __future__ import annotations

from enum import IntEnum


class Errors(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    UNKNOWN_PRODUCER_ID = 59
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    FENCED_INSTANCE_ID = 82
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    PRODUCER_FENCED = 90
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    TRANSACTIONAL_ID_NOT_FOUND = 105
    INELIGIBLE_REPLICA = 107
    TRANSACTION_ABORTABLE = 120
    INVALID_REGULAR_EXPRESSION = 128

    @property
    def retriable(self) -> bool:
        return self in _RETRIABLE

    @property
    def description(self) -> str:
        return _DESCRIPTIONS.get(self, self.name.replace("_", " ").lower())

    def __str__(self) -> str:  # stable text form used in narration
        return f"{self.name}({int(self)})"


_RETRIABLE = frozenset({
    Errors.CORRUPT_MESSAGE,
    Errors.UNKNOWN_TOPIC_OR_PARTITION,
    Errors.UNKNOWN_TOPIC_ID,
    Errors.LEADER_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER,
    Errors.REQUEST_TIMED_OUT,
    Errors.NETWORK_EXCEPTION,
    Errors.COORDINATOR_LOAD_IN_PROGRESS,
    Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_COORDINATOR,
    Errors.NOT_ENOUGH_REPLICAS,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    Errors.REBALANCE_IN_PROGRESS,
    Errors.NOT_CONTROLLER,
    Errors.CONCURRENT_TRANSACTIONS,
    Errors.KAFKA_STORAGE_ERROR,
    Errors.UNSTABLE_OFFSET_COMMIT,
    Errors.FENCED_LEADER_EPOCH,
    Errors.UNKNOWN_LEADER_EPOCH,
    Errors.FETCH_SESSION_ID_NOT_FOUND,
    Errors.INVALID_FETCH_SESSION_EPOCH,
    Errors.PREFERRED_LEADER_NOT_AVAILABLE,
})

_DESCRIPTIONS = {
    Errors.NOT_LEADER_OR_FOLLOWER: "this broker is not the leader of that partition",
    Errors.NOT_ENOUGH_REPLICAS: "fewer in-sync replicas than min.insync.replicas; nothing was appended",
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: "appended, but the ISR shrank below min.insync.replicas before it was replicated",
    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER: "the batch's sequence number does not follow the last one the broker has for this producer",
    Errors.DUPLICATE_SEQUENCE_NUMBER: "the batch is a duplicate of one already written",
    Errors.INVALID_PRODUCER_EPOCH: "the producer's epoch is older than the one the broker knows",
    Errors.INVALID_TXN_STATE: "the request is not legal in the transaction's current state",
    Errors.OFFSET_METADATA_TOO_LARGE: "the offset's metadata is longer than offset.metadata.max.bytes",
    Errors.INVALID_PRODUCER_ID_MAPPING: "the producer id does not belong to this transactional.id",
    Errors.INVALID_TRANSACTION_TIMEOUT: "transaction.timeout.ms is larger than the broker's transaction.max.timeout.ms",
    Errors.CONCURRENT_TRANSACTIONS: "the coordinator is still completing an earlier state change for this transactional.id",
    Errors.TRANSACTION_COORDINATOR_FENCED: "a newer transaction coordinator has taken over",
    Errors.PRODUCER_FENCED: "a newer producer with the same transactional.id has fenced this one",
    Errors.INVALID_RECORD: "the broker rejected a malformed record batch (e.g. no records, a client-written control record, or a producer id without a sequence)",
    Errors.UNSTABLE_OFFSET_COMMIT: "a transaction holding offsets for this partition is still open",
    Errors.TRANSACTION_ABORTABLE: "the transaction cannot go on and must be aborted",
    Errors.STALE_BROKER_EPOCH: "broker epoch has changed: the request carries a broker epoch that is not the one of the broker's registration",
    Errors.INELIGIBLE_REPLICA: "the new ISR contains at least one ineligible replica (a fenced broker, or one named with an earlier broker epoch)",
    Errors.COORDINATOR_LOAD_IN_PROGRESS: "the coordinator is still loading its state from the log",
    Errors.NOT_COORDINATOR: "this broker is not the coordinator for that key",
    Errors.COORDINATOR_NOT_AVAILABLE: "the coordinator is not available",
    Errors.PREFERRED_LEADER_NOT_AVAILABLE: "the replica to lead is not alive or not in the ISR",
    Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE: "that broker holds no replica of the partition",
    Errors.ELECTION_NOT_NEEDED: "that replica already leads the partition",
}


class ProtocolError(Exception):
    """Raised inside broker-side code to answer a request with an error code."""

    def __init__(self, error: Errors, message: str = ""):
        super().__init__(f"{error}: {message}" if message else str(error))
        self.error = error
        self.message = message


class LocalTimeout(int):
    """How the kernel fails a request the client gave up on: ``TIMED_OUT_HERE`` for the one whose request timeout
    passed, ``CLOSED_AFTER_TIMEOUT`` for the others in flight on the connection the client then closed.

    Each is equal to (and hashed as) the ``Errors`` code the clients' retry rules treat it as, REQUEST_TIMED_OUT
    and NETWORK_EXCEPTION, and answers ``name``, ``retriable``, ``description`` and ``str`` as that code does:
    retrying, finding the coordinator again and the narration are those of the code.  What differs is what the
    application is told when the request's error reaches it, which is not Kafka's protocol code but each
    client's own: librdkafka's local ``_TIMED_OUT`` (-185) for both (rd_kafka_broker_timeout_scan fails the
    request, rd_kafka_broker_fail the others in flight, with it), Java's TimeoutException (REQUEST_TIMED_OUT);
    ``client/dialect.py`` (``LOCAL_TIMEOUT``, ``seen_as``) says which.  A broker's own REQUEST_TIMED_OUT (a
    Produce whose ISR did not answer within its ack timeout) is a plain ``Errors`` member and stays 7."""

    def __new__(cls, error: Errors, label: str) -> "LocalTimeout":
        self = int.__new__(cls, int(error))
        self.label = label
        return self

    @property
    def error(self) -> Errors:
        return Errors(int(self))

    @property
    def name(self) -> str:
        return self.error.name

    @property
    def value(self) -> int:
        return int(self)

    @property
    def retriable(self) -> bool:
        return self.error.retriable

    @property
    def description(self) -> str:
        return self.error.description

    def __str__(self) -> str:
        return str(self.error)

    def __format__(self, spec: str) -> str:
        return format(self.error, spec)

    def __repr__(self) -> str:
        return f"<LocalTimeout {self.label}: {self.error.name}>"

    def __reduce__(self):
        return self.label        # the module's singleton (a copy or a pickle is the same marker)


TIMED_OUT_HERE = LocalTimeout(Errors.REQUEST_TIMED_OUT, "TIMED_OUT_HERE")
CLOSED_AFTER_TIMEOUT = LocalTimeout(Errors.NETWORK_EXCEPTION, "CLOSED_AFTER_TIMEOUT")
