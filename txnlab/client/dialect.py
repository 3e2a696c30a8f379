"""Client dialects: which client's defaults and error reactions a lab client follows.

``librdkafka`` (the default; confluent-kafka is librdkafka) or ``java`` (Kafka's Java client), chosen with
the lab key ``sim.client.dialect``.  This module owns, as data, (1) the defaults where the two differ and
(2) how each classifies a broker error per request: retry, abortable (``txn_requires_abort``) or fatal.
librdkafka's tables are read from ``rdkafka_txnmgr.c`` (``rd_kafka_txn_handle_<Api>``), ``rdkafka_request.c``
(``rd_kafka_handle_Produce_error``) and ``rdkafka_idempotence.c`` (``rd_kafka_idemp_pid_fetch``); Java's from
KAFKA-EOS §9.  A producer asks ``classify(dialect, api, code)`` and builds its error with ``kafka_error``.
"""
from __future__ import annotations

from enum import Enum
from typing import Optional

from ..errors import KafkaError
from ..protocol.errors import Errors as E
from ..protocol.errors import LocalTimeout

LIBRDKAFKA = "librdkafka"
JAVA = "java"
DIALECTS = (LIBRDKAFKA, JAVA)

INT32_MAX = 2_147_483_647

# Defaults where Kafka's Java client differs from librdkafka (librdkafka's are in librdkafka_config.py).
# Keys are librdkafka's canonical property names.
JAVA_DEFAULTS = {
    "enable.idempotence": True,                          # Java 3.0+
    "max.in.flight.requests.per.connection": 5,
    "batch.size": 16_384,
    "message.timeout.ms": 120_000,                       # delivery.timeout.ms
    "isolation.level": "read_uncommitted",
    "auto.offset.reset": "latest",
    "partition.assignment.strategy": "range,cooperative-sticky",
    "socket.timeout.ms": 30_000,                         # the consumer's request.timeout.ms
}


class Action(Enum):
    RETRY = "retry"             # retry the request (after refreshing the coordinator/leader if need be)
    ABORTABLE = "abortable"     # the transaction must be aborted; the producer carries on
    FATAL = "fatal"             # the producer must be closed
    PERMANENT = "permanent"     # fails this request/message only (idempotent producer, consumer calls)


R, A, F = Action.RETRY, Action.ABORTABLE, Action.FATAL
_COORD = {E.NOT_COORDINATOR: R, E.COORDINATOR_NOT_AVAILABLE: R, E.COORDINATOR_LOAD_IN_PROGRESS: R,
          E.CONCURRENT_TRANSACTIONS: R, E.REQUEST_TIMED_OUT: R, E.NETWORK_EXCEPTION: R}
_AUTH_FATAL = {E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: F, E.CLUSTER_AUTHORIZATION_FAILED: F}

# librdkafka: what each transactional request's handler does with a broker error; anything not listed is
# "unhandled error, fail transaction" (abortable).  Fencing errors become _FENCED (rd_kafka_txn_normalize_err).
LIBRDKAFKA_TXN = {
    "InitProducerId": {**_COORD, **_AUTH_FATAL, E.INVALID_TRANSACTION_TIMEOUT: F, E.INVALID_PRODUCER_EPOCH: F,
                       E.PRODUCER_FENCED: F, "default": R},
    "AddPartitionsToTxn": {**_COORD, E.UNKNOWN_TOPIC_OR_PARTITION: R, **_AUTH_FATAL, E.INVALID_PRODUCER_EPOCH: F,
                           E.PRODUCER_FENCED: F, E.INVALID_TXN_STATE: F, E.UNKNOWN_PRODUCER_ID: A,
                           E.INVALID_PRODUCER_ID_MAPPING: A, E.TOPIC_AUTHORIZATION_FAILED: A,
                           E.OPERATION_NOT_ATTEMPTED: A, "default": A},
    "AddOffsetsToTxn": {**_COORD, E.UNKNOWN_TOPIC_OR_PARTITION: R, **_AUTH_FATAL, E.INVALID_PRODUCER_EPOCH: F,
                        E.PRODUCER_FENCED: F, E.INVALID_TXN_STATE: F, E.UNSUPPORTED_FOR_MESSAGE_FORMAT: F,
                        E.TOPIC_AUTHORIZATION_FAILED: A, E.GROUP_AUTHORIZATION_FAILED: A, "default": A},
    "TxnOffsetCommit": {**_COORD, E.UNKNOWN_TOPIC_OR_PARTITION: R, **_AUTH_FATAL, E.INVALID_PRODUCER_ID_MAPPING: F,
                        E.INVALID_PRODUCER_EPOCH: F, E.PRODUCER_FENCED: F, E.INVALID_TXN_STATE: F,
                        E.UNSUPPORTED_FOR_MESSAGE_FORMAT: F, E.TOPIC_AUTHORIZATION_FAILED: A,
                        E.GROUP_AUTHORIZATION_FAILED: A, E.ILLEGAL_GENERATION: A, E.UNKNOWN_MEMBER_ID: A,
                        E.FENCED_INSTANCE_ID: A, "default": A},
    "EndTxn": {**_COORD, **_AUTH_FATAL, E.INVALID_PRODUCER_EPOCH: F, E.PRODUCER_FENCED: F, E.INVALID_TXN_STATE: F,
               E.UNKNOWN_PRODUCER_ID: A, E.INVALID_PRODUCER_ID_MAPPING: A, "default": A},
    # the coordinator look-up: refused for the transactional id -> fatal (rd_kafka_txn_handle_FindCoordinator);
    # refused for the group of send_offsets_to_transaction -> that TxnOffsetCommit fails, abortable
    # (rd_kafka_coord_req fails it with the error); anything else: look it up again
    "FindCoordinator": {E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: F, E.GROUP_AUTHORIZATION_FAILED: A, "default": R},
    # a transactional producer's Produce: fenced -> fatal _FENCED, any other permanent error -> abortable
    "Produce": {E.NOT_LEADER_OR_FOLLOWER: R, E.LEADER_NOT_AVAILABLE: R, E.UNKNOWN_TOPIC_OR_PARTITION: R,
                E.REQUEST_TIMED_OUT: R, E.NETWORK_EXCEPTION: R, E.NOT_ENOUGH_REPLICAS: R,
                E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: R, E.KAFKA_STORAGE_ERROR: R, E.FENCED_LEADER_EPOCH: R,
                E.UNKNOWN_LEADER_EPOCH: R, E.INVALID_PRODUCER_EPOCH: F, E.PRODUCER_FENCED: F, "default": A},
}

# Java (Kafka 4.1.1 clients/producer/internals/TransactionManager.java, the handlers' handleResponse): fenced
# (INVALID_PRODUCER_EPOCH or PRODUCER_FENCED) is fatal PRODUCER_FENCED; retriable codes are retried; an error no
# branch names is fatal ("Unexpected error in ...Response"), except AddPartitionsToTxn's (abortable: "Could not add
# partitions to transaction due to errors").  INVALID_PRODUCER_ID_MAPPING is fatal in 4.1.1 (October 2024:
# abortableErrorIfPossible).  Produce's INVALID_PRODUCER_EPOCH is abortable.
_JAVA_FATAL = {E.PRODUCER_FENCED: F, E.INVALID_PRODUCER_EPOCH: F, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: F}
_JAVA_COORDINATOR_FATAL = {**_JAVA_FATAL, E.INVALID_TXN_STATE: F, E.INVALID_PRODUCER_ID_MAPPING: F,
                           E.UNKNOWN_PRODUCER_ID: A, E.TRANSACTION_ABORTABLE: A}
JAVA_TXN = {
    "InitProducerId": {**_JAVA_FATAL, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: A, E.CLUSTER_AUTHORIZATION_FAILED: A,
                       E.TRANSACTION_ABORTABLE: A, "default": F},
    "AddPartitionsToTxn": {**_JAVA_COORDINATOR_FATAL, E.TOPIC_AUTHORIZATION_FAILED: A, "default": A},
    "AddOffsetsToTxn": {**_JAVA_COORDINATOR_FATAL, E.GROUP_AUTHORIZATION_FAILED: A, "default": F},
    "TxnOffsetCommit": {**_JAVA_FATAL, E.UNSUPPORTED_FOR_MESSAGE_FORMAT: F, E.GROUP_AUTHORIZATION_FAILED: A,
                        E.FENCED_INSTANCE_ID: A, E.TRANSACTION_ABORTABLE: A, E.UNKNOWN_MEMBER_ID: A,
                        E.ILLEGAL_GENERATION: A, "default": F},
    "EndTxn": {**_JAVA_COORDINATOR_FATAL, "default": F},
    # TransactionManager.maybeTransitionToErrorState: these exceptions are fatal (4.1.1 added InvalidPidMapping),
    # the others abortable (retriable ones and InvalidTxnState wrapped in TransactionAbortableException)
    "Produce": {E.PRODUCER_FENCED: F, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: F, E.CLUSTER_AUTHORIZATION_FAILED: F,
                E.UNSUPPORTED_VERSION: F, E.INVALID_PRODUCER_ID_MAPPING: F, E.INVALID_PRODUCER_EPOCH: A,
                E.INVALID_TXN_STATE: A, "default": A},
    # TransactionManager.FindCoordinatorHandler: retriable codes look it up again, the transactional id refused
    # is fatal, the group refused abortable
    "FindCoordinator": {E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: F, E.GROUP_AUTHORIZATION_FAILED: A, "default": R},
}

TABLES = {LIBRDKAFKA: LIBRDKAFKA_TXN, JAVA: JAVA_TXN}

# What a client does with a topic's error in a Metadata answer.  PERMANENT: the topic cannot be used as it stands:
# the client forgets its partitions, a producer fails the records waiting for the topic at once with the error (in
# a transaction: abortable), a consumer reports it from poll() and goes on with its other topics.  Anything else:
# wait and ask again (LEADER_NOT_AVAILABLE while a topic is auto-created, UNKNOWN_TOPIC_OR_PARTITION).
#   librdkafka: rdkafka_topic.c rd_kafka_topic_metadata_update -> rd_kafka_topic_set_error (29) /
#   rd_kafka_topic_set_notexists (invalid topic) -> rd_kafka_topic_assign_uas fails the unassigned records;
#   rdkafka_cgrp.c rd_kafka_propagate_consumer_topic_errors ("Subscribed topic not available").
#   Java: Metadata.checkUnauthorizedTopics / checkInvalidTopics; KafkaProducer.waitOnMetadata ->
#   Metadata.maybeThrowExceptionForTopic (send() fails through its future and callback, doSend ->
#   TransactionManager.maybeTransitionToErrorState: abortable); the consumer's poll -> Metadata.maybeThrowAnyException.
METADATA_TOPIC = {
    LIBRDKAFKA: {E.TOPIC_AUTHORIZATION_FAILED: Action.PERMANENT, E.INVALID_TOPIC_EXCEPTION: Action.PERMANENT,
                 "default": R},
    JAVA: {E.TOPIC_AUTHORIZATION_FAILED: Action.PERMANENT, E.INVALID_TOPIC_EXCEPTION: Action.PERMANENT,
           "default": R},
}
# What a consumer reports from poll() for a subscribed topic's permanent error: librdkafka's metadata cache keeps only
# NO_ERROR, UNKNOWN_TOPIC_OR_PART and TOPIC_AUTHORIZATION_FAILED (rdkafka_metadata_cache.c
# rd_kafka_metadata_cache_topic_update), so an invalid topic is simply missing and reported as UNKNOWN_TOPIC_OR_PART
# (rd_kafka_propagate_consumer_topic_errors); Java throws InvalidTopicException (Metadata.checkInvalidTopics).
CONSUMER_TOPIC_ERROR = {
    LIBRDKAFKA: {E.TOPIC_AUTHORIZATION_FAILED: E.TOPIC_AUTHORIZATION_FAILED,
                 E.INVALID_TOPIC_EXCEPTION: E.UNKNOWN_TOPIC_OR_PARTITION},
    JAVA: {E.TOPIC_AUTHORIZATION_FAILED: E.TOPIC_AUTHORIZATION_FAILED,
           E.INVALID_TOPIC_EXCEPTION: E.INVALID_TOPIC_EXCEPTION},
}
# the topic errors some dialect treats as permanent (what a client's metadata cache drops a topic's partitions for)
PERMANENT_TOPIC_ERRORS = frozenset(e for t in METADATA_TOPIC.values() for e, a in t.items() if a is Action.PERMANENT)


def metadata_topic_action(dialect: str, code: int) -> Action:
    """What a client of ``dialect`` does with topic error ``code`` in a Metadata answer."""
    table = METADATA_TOPIC[check(dialect)]
    try:
        return table.get(E(code), table["default"])
    except ValueError:
        return table["default"]


def topic_error_text(dialect: str, code: int, topic: str) -> str:
    """The text of the error a client reports for a topic's permanent Metadata error: librdkafka's
    ``rd_kafka_err2str``; Java's exception messages (TopicAuthorizationException, InvalidTopicException)."""
    if dialect == JAVA:
        if code == E.TOPIC_AUTHORIZATION_FAILED:
            return f"Not authorized to access topics: [{topic}]"
        if code == E.INVALID_TOPIC_EXCEPTION:
            return f"Invalid topics: [{topic}]"
        return E(code).description
    return KafkaError(code).str()          # (no reason given: rd_kafka_err2str's text)

# The highest transaction protocol each client speaks (KIP-890 part 2 is transaction.version 2: Produce v12
# adds a partition implicitly, EndTxn v5 bumps the epoch at every end).  Kafka's Java client 4.0+ speaks it
# when the cluster finalizes it (TransactionManager.isTransactionV2Enabled); librdkafka 2.x does not: it
# sends AddPartitionsToTxn and EndTxn below v5 on any cluster, and the coordinator ends its transactions the
# classic way (TransactionVersion.transactionVersionForEndTxn).  Versions 0 and 1 look the same to a client.
MAX_TRANSACTION_VERSION = {LIBRDKAFKA: 1, JAVA: 2}


def transaction_version(dialect: str, finalized: int) -> int:
    """The transaction protocol a client of ``dialect`` speaks with a cluster that finalized ``finalized``."""
    return min(finalized, MAX_TRANSACTION_VERSION[check(dialect)])


def produce_version(dialect: str, transaction_version: int) -> int:
    """The Produce version a client of ``dialect`` sends: librdkafka's highest is v10
    (rd_kafka_ProduceRequest_max_version, src/rdkafka_msgset_writer.c); Kafka 4.1's Java client sends its newest,
    v13, under transaction.version 2 and at most v11 below it (ProduceRequest.builder:
    LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2)."""
    return 10 if dialect == LIBRDKAFKA else 13 if transaction_version >= 2 else 11


# How long a client waits for the answer to one request before it gives up on it (the kernel then closes the
# connection and fails the request, and the others in flight on it, with a local timeout: LOCAL_TIMEOUT).  Each rule is a function of the client's finalized
# config; "default" covers every request without a rule of its own.
#   librdkafka: every request buffer starts with socket.timeout.ms (rd_kafka_buf_new_request0 sets
#   rkbuf_rel_timeout = socket_timeout_ms, src/rdkafka_buf.c); a request builder may replace it:
#   rd_kafka_buf_set_timeout(t) waits t, rd_kafka_buf_set_abs_timeout(t) waits min(t, socket.timeout.ms) per
#   attempt and rd_kafka_buf_set_abs_timeout_force(t) waits t (rd_kafka_buf_calc_timeout).  The builders that do
#   (src/rdkafka_request.c, src/rdkafka_fetcher.c): JoinGroup forces max.poll.interval.ms + 3 s; SyncGroup
#   session.timeout.ms + 3 s and Heartbeat session.timeout.ms (both capped); LeaveGroup 5 s (capped; "best
#   effort"); ApiVersions api.version.request.timeout.ms (capped); Fetch socket.timeout.ms + fetch.wait.max.ms.
#   The transactional requests (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn),
#   FindCoordinator, Metadata, ListOffsets, OffsetCommit, OffsetFetch and the admin requests keep
#   socket.timeout.ms (OffsetFetch's and the admin operations' longer absolute timeouts are capped by it, as is
#   ListOffsets' from offsets_for_times).  A transactional producer's socket.timeout.ms defaults to
#   transaction.timeout.ms - 100 (config_finalize.py): 59.9 s.  Produce depends on the batch: PRODUCE_TIMEOUT.
#   Java: NetworkClient's defaultRequestTimeoutMs, request.timeout.ms, for every request (the producer's
#   Sender and TransactionManager, the consumer's ConsumerNetworkClient), but JoinGroup, which waits
#   max(request.timeout.ms, rebalance timeout + 5 s) (AbstractCoordinator.sendJoinGroupRequest,
#   JOIN_GROUP_TIMEOUT_LAPSE).  A lab consumer's request.timeout.ms is its socket.timeout.ms (finalize_consumer;
#   the Java dialect's default is Java's 30 s).
REQUEST_TIMEOUT = {
    LIBRDKAFKA: {
        "default": lambda c: c["socket.timeout.ms"],
        "JoinGroup": lambda c: c["max.poll.interval.ms"] + 3_000,
        "SyncGroup": lambda c: min(c["socket.timeout.ms"], c["session.timeout.ms"] + 3_000),
        "Heartbeat": lambda c: min(c["socket.timeout.ms"], c["session.timeout.ms"]),
        "LeaveGroup": lambda c: min(c["socket.timeout.ms"], 5_000),
        "ApiVersions": lambda c: min(c["socket.timeout.ms"], c["api.version.request.timeout.ms"]),
        "Fetch": lambda c: c["socket.timeout.ms"] + c["fetch.wait.max.ms"],
    },
    JAVA: {
        "default": lambda c: c["request.timeout.ms"],
        "JoinGroup": lambda c: max(c["request.timeout.ms"], c["max.poll.interval.ms"] + 5_000),
    },
}


# How long a Produce request waits for its answer, as a function of the client's finalized config and of what is
# left (ms) of the message.timeout.ms (delivery.timeout.ms) of the oldest record it carries (None: the records
# never expire, message.timeout.ms 0).  The sender asks it for every Produce it sends (Sender._send_produce).
#   librdkafka: rd_kafka_ProduceRequest (src/rdkafka_request.c) takes "timeout from first message in batch":
#   rkm_ts_timeout - now, or 100 ms if that is already past ("allow 100 ms to produce anyway"), and sets it with
#   rd_kafka_buf_set_abs_timeout; rd_kafka_buf_calc_timeout (src/rdkafka_buf.c), called when the request is
#   queued for the broker (rd_kafka_broker_buf_enq0, src/rdkafka_broker.c), makes the attempt's timeout
#   min(now + socket.timeout.ms, that absolute time), and rd_kafka_broker_timeout_scan fails the request with
#   _TIMED_OUT when it passes (and, socket.max.fails being 1, takes the connection down).  A record that never
#   expires (message.timeout.ms 0: rkm_ts_timeout is INT64_MAX) leaves socket.timeout.ms.  request.timeout.ms is
#   only the ack timeout the broker is told (the ProduceRequest's timeout field).  librdkafka builds one
#   ProduceRequest per partition; a lab Produce carries one batch per partition of a leader and waits what its
#   soonest-expiring batch allows: in librdkafka that request's timeout would take the connection down and
#   fail the others in flight on it anyway.  (librdkafka counts a record's message.timeout.ms from produce()
#   (rd_kafka_msg_new0); the lab from when its batch was created, as the sender's expiry of queued batches does:
#   the same, but for a record that first waited for its topic's metadata.)
#   Java: NetworkClient's request.timeout.ms (Sender.sendProduceRequest passes requestTimeoutMs); the ack
#   timeout it sends is request.timeout.ms too.
PRODUCE_TIMEOUT = {
    LIBRDKAFKA: lambda c, left: c["socket.timeout.ms"] if left is None
    else min(c["socket.timeout.ms"], left if left > 0 else 100),
    JAVA: lambda c, left: c["request.timeout.ms"],
}

# What the application sees for a record whose Produce failed because time ran out: its request timed out in
# the client (and is not retried), or a retriable error came back after its message.timeout.ms.  None: the
# error itself.
#   librdkafka: a request that timed out in flight fails with _TIMED_OUT (in the output or retry queue
#   _TIMED_OUT_QUEUE; rd_kafka_broker_timeout_scan, src/rdkafka_broker.c); rd_kafka_handle_Produce_error
#   (src/rdkafka_request.c) retries both (rd_kafka_err_action: RETRY), and "translate[s] request-level timeout
#   error code to message-level timeout error code", _MSG_TIMED_OUT, for the records it does not.  A retriable
#   error puts the records back in the partition's queue whatever their age (rd_kafka_toppar_retry_msgq counts
#   only retries), where rd_kafka_msgq_age_scan finds them past rkm_ts_timeout and
#   rd_kafka_broker_toppar_msgq_scan reports them _MSG_TIMED_OUT.  So both end as _MSG_TIMED_OUT (-192).
#   Java: Sender.handleProduceResponse completes a timed-out request's batches with REQUEST_TIMED_OUT
#   ("Disconnected from node ... due to timeout"), and Sender.completeBatch fails a batch it may not retry
#   (delivery.timeout.ms reached) with its error's exception.
PRODUCE_GAVE_UP = {LIBRDKAFKA: KafkaError._MSG_TIMED_OUT, JAVA: None}

# Whether a batch whose delivery.timeout.ms (message.timeout.ms) passes while its Produce request is in flight
# fails then, without waiting for the request to end (its answer, when it comes, is ignored for the records).
#   Java: Sender.sendProducerData expires the batches of inFlightBatches past their delivery timeout
#   (getExpiredInflightBatches, ProducerBatch.hasReachedDeliveryTimeout) with those of the accumulator
#   (RecordAccumulator.expiredBatches), fails each with a TimeoutException (Sender.failBatch, the sequence not
#   adjusted), and marks a retried one's sequence unresolved (TransactionManager.markSequenceUnresolved); the
#   late answer finds the batch in its final state (ProducerBatch.done logs it and changes nothing).
#   librdkafka: no.  rd_kafka_broker_toppar_msgq_scan (src/rdkafka_broker.c) times out only the messages in the
#   partition's queues (rktp_msgq, rktp_xmit_msgq); a message in a request waiting for its answer fails when
#   that request does (rd_kafka_broker_timeout_scan at the request's own timeout, which PRODUCE_TIMEOUT caps by
#   what is left of the message's timeout).
EXPIRES_IN_FLIGHT = {LIBRDKAFKA: False, JAVA: True}

# Whether the sender wakes when a partition's oldest queued batch (waiting for its retry backoff, for a leader, for
# its turn) reaches its delivery timeout, so that it expires at that ms.
#   Java: yes.  Sender.sendProducerData caps its poll timeout by RecordAccumulator.nextExpiryTimeMs(), the soonest
#   createdMs + delivery.timeout.ms of each partition's first batch (expiredBatches -> maybeUpdateNextBatchExpiryTime),
#   and ProducerBatch.hasReachedDeliveryTimeout expires it then.
#   librdkafka: no: MSG_TIMEOUT_SCAN_MS.
WAKES_AT_BATCH_EXPIRY = {LIBRDKAFKA: False, JAVA: True}

# How often (ms) the client looks for queued records past their message.timeout.ms, if only then (None: whenever the
# sender runs, WAKES_AT_BATCH_EXPIRY).
#   librdkafka: once a second.  Only rd_kafka_broker_toppar_msgq_scan (src/rdkafka_broker.c) times out queued
#   messages (rktp_msgq, rktp_xmit_msgq; rd_kafka_msgq_age_scan).  A broker thread serves its producer partitions in
#   rounds, rd_kafka_broker_serve(rkb, rd_kafka_max_block_ms = 1000), and rd_kafka_broker_producer_serve scans on
#   a round's first iteration (cnt++ == 0) or once rd_interval(&timeout_scan, 1000 * 1000) has passed, which it
#   cannot within a round of 1 s; the scan makes the next message timeout the thread's next wakeup, but that wakeup
#   scans only at the next round.  A round starts over at once on a WAKEUP op: flush() wakes the broker threads
#   (rd_kafka_all_brokers_wakeup(..., "flushing")), which scan then.  So a queued message fails at the first scan
#   at or after its timeout: up to a second late, and one that could be sent before that scan is sent (its Produce
#   then gets the 100 ms rd_kafka_ProduceRequest allows a timed-out message, PRODUCE_TIMEOUT).  The lab scans on
#   one grid, every second from the producer's creation (librdkafka's broker threads each have their own phase),
#   and at flush(); not at a broker connection's state changes, which also start a round.
#   Java: None (RecordAccumulator.expiredBatches on every Sender.sendProducerData).
MSG_TIMEOUT_SCAN_MS = {LIBRDKAFKA: 1000, JAVA: None}

# The text of the error an expired record's delivery report carries (its code is _MSG_TIMED_OUT in both):
# librdkafka's rd_kafka_err2str; Java's TimeoutException of Sender.sendProducerData.
EXPIRED_TEXT = {
    LIBRDKAFKA: lambda records, tp, age_ms: "Local: Message timed out",
    JAVA: lambda records, tp, age_ms: f"Expiring {records} record(s) for {tp[0]}-{tp[1]}:{age_ms} ms has passed "
                                      f"since batch creation",
}


# What the application is told for a request the client gave up on because its request timeout passed, and for the
# others in flight on the connection the client then closed (the kernel's LocalTimeout markers, TIMED_OUT_HERE and
# CLOSED_AFTER_TIMEOUT: for the retry rules they are REQUEST_TIMED_OUT and NETWORK_EXCEPTION, and retried as those).
# A broker's own REQUEST_TIMED_OUT (a Produce with acks=all whose ISR did not answer within its ack timeout) is not
# one: it stays 7 in both dialects.
#   librdkafka: its local _TIMED_OUT (-185) for both.  rd_kafka_broker_timeout_scan (src/rdkafka_broker.c) fails
#   a request that timed out in flight with _TIMED_OUT (one still in the output or retry queue _TIMED_OUT_QUEUE)
#   and, socket.max.fails being 1, takes the connection down with rd_kafka_broker_planned_fail(_TIMED_OUT), whose
#   rd_kafka_broker_fail purges the other requests in flight with that same error (not _TRANSPORT, which is the
#   error of a connection that broke).  A Produce's records then end as _MSG_TIMED_OUT (PRODUCE_GAVE_UP:
#   rd_kafka_handle_Produce_error translates _TIMED_OUT and _TIMED_OUT_QUEUE); the transactional requests
#   retry it (rd_kafka_txn_handle_<Api>: RETRY, with REFRESH for the coordinator's), as txn_requests.py does, so
#   a transactional call only ever reports its own _TIMED_OUT when its timeout passes; a commit's or an admin
#   call's result carries the request's error (rd_kafka_admin_handle_response: "worker request failed").
#   Java: REQUEST_TIMED_OUT (TimeoutException) for both.  NetworkClient.handleTimedOutRequests closes the
#   connection and processTimeoutDisconnection fails every request in flight on it with
#   InFlightRequest.timedOut (disconnected, and timed out): the producer's Sender.handleProduceResponse sees
#   wasTimedOut() and completes their batches with REQUEST_TIMED_OUT ("Disconnected from node ... due to
#   timeout"); the consumer's ConsumerNetworkClient and the admin client see a disconnect (DisconnectException,
#   retriable), which commitSync (ConsumerCoordinator.commitOffsetsSync, KafkaConsumer: "Timeout of ...ms expired
#   before successfully committing offsets") and the admin call (KafkaAdminClient.Call.fail, past its deadline)
#   retry until their time is up and then throw TimeoutException.
LOCAL_TIMEOUT = {LIBRDKAFKA: KafkaError._TIMED_OUT, JAVA: E.REQUEST_TIMED_OUT}


def seen_as(dialect: str, error) -> int:
    """The code an application of ``dialect`` is told for a request's ``error``: a local timeout (a ``LocalTimeout``
    marker from the kernel) as ``LOCAL_TIMEOUT`` says; any other error is its own code (returned as it is)."""
    if isinstance(error, LocalTimeout):
        return LOCAL_TIMEOUT[check(dialect)]
    return error


# What an asynchronous commit (``commit(asynchronous=True)``) tries, and what its ``on_commit`` is told when it fails.
#   Java: ConsumerCoordinator.commitOffsetsAsync -> doCommitOffsetsAsync sends one OffsetCommit and never retries it;
#   its listener's onFailure wraps a RetriableException in a RetriableCommitFailedException for the
#   OffsetCommitCallback: a disconnect (ConsumerNetworkClient.RequestFutureCompletionHandler raises
#   DisconnectException, for a request that timed out too: NetworkClient fails it as disconnected), and the
#   retriable codes OffsetCommitResponseHandler raises (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR and
#   REQUEST_TIMED_OUT, which mark the coordinator unknown; COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION).
#   The exception has no error code of its own: the lab's error keeps its cause's (a disconnect's NETWORK_EXCEPTION,
#   as the lab says for Java's lost connections) with the exception's message, retriable.  Anything else (fenced,
#   a rebalance, authorization) reaches the callback as it is.  (commitSync retries until default.api.timeout.ms:
#   ConsumerCommits._commit_sync_java.)
#   librdkafka: an asynchronous commit is the same op as a synchronous one, retried and deferred by the same rules
#   (client/offset_commit.py: three sends of its request, deferred once while the coordinator is away, three more);
#   rd_kafka_cgrp_op_handle_OffsetCommit hands the op's error to the offset_commit_cb as it is (a local timeout as
#   LOCAL_TIMEOUT says).
COMMIT_ASYNC_ATTEMPTS = {LIBRDKAFKA: 1, JAVA: 1}       # librdkafka's entry is unused: offset_commit.OffsetCommit

# Whether the consumer's own commits of enable.auto.commit (the auto.commit.interval.ms timer, the commit before a
# rebalance gives partitions up, the one at close) reach the application's ``on_commit``.
#   librdkafka: yes.  rd_kafka_cgrp_offset_commit_tmr_cb -> rd_kafka_cgrp_assigned_offsets_commit (src/rdkafka_cgrp.c)
#   commits like any commit, and rd_kafka_cgrp_propagate_commit_result posts the result to offset_commit_cb when one
#   is set (else logs COMMITFAIL at WARNING for a failure).
#   Java: no.  ConsumerCoordinator.maybeAutoCommitOffsetsAsync -> autoCommitOffsetsAsync sends commitOffsetsAsync
#   (one attempt) with its own callback, which only logs: a RetriableCommitFailedException at DEBUG ("Asynchronous
#   auto-commit of offsets {} failed due to retriable error.") and the next auto-commit after retry.backoff.ms
#   (nextAutoCommitTimer.updateAndReset(retryBackoffMs)), anything else at WARN ("Asynchronous auto-commit of
#   offsets {} failed: {}"); onJoinPrepare's auto-commit before a rebalance is the same asynchronous commit, and
#   onJoinPrepare adds its own line: DEBUG "Asynchronous auto-commit of offsets failed with retryable error: {}. Will
#   retry it." (and commits again), else ERROR "Asynchronous auto-commit of offsets failed: {}. Will continue to join
#   group." (ConsumerCommits._join_prepare_commit); close's maybeAutoCommitOffsetsSync logs "Synchronous auto-commit
#   of offsets {} failed: {}" at WARN.  The application's OffsetCommitCallback is only for its own commitAsync.
AUTO_COMMIT_REPORTED = {LIBRDKAFKA: True, JAVA: False}
# How often a consumer may send JoinGroup.
#   librdkafka: at most once a second.  rd_kafka_cgrp_join_state_serve (src/rdkafka_cgrp.c) joins from join state
#   INIT only when rd_interval_immediate(&rkcg_join_intvl, 1 s) fires, which records the time; an error code in the
#   JoinGroup answer adds a backoff of another second (rd_kafka_cgrp_handle_JoinGroup: rd_interval_backoff), a lost
#   connection does not.  The interval is skipped (rd_interval_reset) after MEMBER_ID_REQUIRED, when an unassign is
#   done (rd_kafka_cgrp_unassign_done, rd_kafka_cgrp_incr_unassign_done with a rejoin), for a new subscription, and
#   when the assignment is revoked with nothing to give up (rd_kafka_cgrp_revoke_all_rejoin): after a rebalance the
#   member rejoins at once, after a failed JoinGroup or SyncGroup it waits for the interval.
#   Java: no interval; AbstractCoordinator.joinGroupIfNeeded waits retry.backoff.ms after a retriable failure and
#   rejoins at once after UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, MEMBER_ID_REQUIRED and REBALANCE_IN_PROGRESS.
JOIN_INTERVAL_MS = {LIBRDKAFKA: 1000, JAVA: 0}
JOIN_ERROR_BACKOFF_MS = {LIBRDKAFKA: 1000, JAVA: 0}
RETRIABLE_COMMIT_FAILED_TEXT = ("Offset commit failed with a retriable exception. You should retry committing the "
                                "latest consumed offsets.")


def commit_error(dialect: str, error, asynchronous: bool) -> KafkaError:
    """The error a commit that failed with ``error`` (an ``Errors`` code or a ``LocalTimeout`` marker) reports: to
    ``on_commit`` when ``asynchronous``, else raised by commit().  Java's commitAsync: a retriable cause wrapped in
    RetriableCommitFailedException (``COMMIT_ASYNC_ATTEMPTS``' note)."""
    if dialect == JAVA and asynchronous and error.retriable:
        cause = E.NETWORK_EXCEPTION if isinstance(error, LocalTimeout) else error     # DisconnectException
        return KafkaError(cause, RETRIABLE_COMMIT_FAILED_TEXT, retriable=True)
    shown = seen_as(dialect, error)                     # a local timeout: LOCAL_TIMEOUT
    if dialect == LIBRDKAFKA and shown == E.NETWORK_EXCEPTION:
        shown = KafkaError._TRANSPORT                   # a broken connection: librdkafka's own code (normalize)
    # librdkafka: confluent-kafka builds a commit's error from the bare code (Consumer_commit's cfl_PyErr_Format,
    # KafkaError_init): no class flags, so even a retriable code (UNKNOWN_TOPIC_OR_PARTITION) says retriable() False
    return KafkaError(shown, f"Commit failed: {description(shown)}", retriable=False if dialect == LIBRDKAFKA else None)


def description(code: int) -> str:
    """The words for ``code``: a Kafka protocol code's description, a librdkafka local code's rd_kafka_err2str."""
    try:
        return E(code).description
    except ValueError:
        return KafkaError(code).str()


# How long an admin call waits in all (its ``request_timeout``, every retry included) and the operation timeout it
# sends with CreateTopics and the like, when the call does not give them.
#   librdkafka: rd_kafka_new sets admin.request_timeout_ms = socket.timeout.ms (src/rdkafka.c), the default of
#   both AdminOptions request_timeout and operation_timeout (rd_kafka_AdminOptions_init, src/rdkafka_admin.c).
#   Java: the call's deadline is default.api.timeout.ms, 60 s (KafkaAdminClient.calcDeadlineMs); the request is
#   built with the time left for it, at most request.timeout.ms (Call.createRequest(timeoutMs)).
ADMIN_TIMEOUT = {
    LIBRDKAFKA: {"request_timeout": lambda c: c["socket.timeout.ms"],
                 "operation_timeout": lambda c: c["socket.timeout.ms"]},
    JAVA: {"request_timeout": lambda c: 60_000, "operation_timeout": lambda c: c["request.timeout.ms"]},
}


def admin_timeout(cfg: dict, which: str) -> int:
    """An admin client's default ``request_timeout`` or ``operation_timeout`` (ms), per ``ADMIN_TIMEOUT``."""
    return int(ADMIN_TIMEOUT[check(cfg.get("sim.client.dialect", LIBRDKAFKA))][which](cfg))


class RequestTimeouts(dict):
    """api name -> ms a client waits for its answer (``REQUEST_TIMEOUT`` worked out for one client's config);
    an api without a rule of its own gets the default."""
    __slots__ = ("default",)

    def __missing__(self, api: str) -> int:
        self[api] = t = self.default        # kept: the next request of this api finds it (no call)
        return t


def request_timeouts(cfg: dict) -> RequestTimeouts:
    """The per-request timeouts of a client with finalized config ``cfg`` (its dialect's ``REQUEST_TIMEOUT``)."""
    rules = REQUEST_TIMEOUT[check(cfg.get("sim.client.dialect", LIBRDKAFKA))]
    out = RequestTimeouts({api: int(rule(cfg)) for api, rule in rules.items() if api != "default"})
    out.default = int(rules["default"](cfg))
    return out


def check(dialect: str) -> str:
    if dialect not in DIALECTS:
        raise ValueError(f"sim.client.dialect must be one of {', '.join(DIALECTS)}, got {dialect!r}")
    return dialect


def classify(dialect: str, api: str, code: int) -> Action:
    """What a transactional producer of ``dialect`` does with broker error ``code`` answering ``api``."""
    table = TABLES[check(dialect)][api]
    try:
        err = E(code)
    except ValueError:
        return table["default"]
    if err in table:
        return table[err]
    if table["default"] is not R and err.retriable:
        return R                     # retriable broker codes are retried by both clients
    return table["default"]


def normalize(dialect: str, code: int) -> int:
    """The code the application sees: librdkafka folds both fencing errors into ``_FENCED`` and a request
    that timed out in its queue into ``_TIMED_OUT`` (``rd_kafka_txn_normalize_err``), and reports a request
    lost with its connection as its local ``_TRANSPORT`` (``rd_kafka_broker_fail`` fails what was in flight
    with it; ``rd_kafka_handle_Produce_error`` keeps that code), where Kafka's Java client says
    NETWORK_EXCEPTION.  (A request the client gave up on, and the others on the connection it closed then, are
    ``seen_as``'s: LOCAL_TIMEOUT.)"""
    if dialect == LIBRDKAFKA:
        if code in (E.INVALID_PRODUCER_EPOCH, E.PRODUCER_FENCED):
            return KafkaError._FENCED
        if code == KafkaError._TIMED_OUT_QUEUE:
            return KafkaError._TIMED_OUT
        if code == E.NETWORK_EXCEPTION:
            return KafkaError._TRANSPORT
    return code


def kafka_error(dialect: str, api: str, code: int, reason: Optional[str] = None) -> KafkaError:
    """The ``KafkaError`` a transactional call raises for ``code`` from ``api``, flags set per the dialect."""
    action = classify(dialect, api, code)
    if action is Action.FATAL:
        code = normalize(dialect, code)
    return KafkaError(code, reason, fatal=action is Action.FATAL, retriable=action is Action.RETRY,
                      txn_requires_abort=action is Action.ABORTABLE)


def is_fencing(dialect: str, api: str, code: int) -> bool:
    return classify(dialect, api, code) is Action.FATAL and normalize(dialect, code) == KafkaError._FENCED
