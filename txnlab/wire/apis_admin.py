"""The transaction admin APIs (KIP-664) a real Admin client or ``kafka-transactions`` sends: DescribeProducers v0
(to a partition's leader), DescribeTransactions v0 (to a transactional id's coordinator) and ListTransactions
v0-2 (to every broker; v1 adds the duration filter, KIP-994; v2 the transactional id pattern, KIP-1152),
between kio and the engine's own requests (the ones txnlab's admin client sends in-process).  Kafka's field
names and error codes.  No ACLs are checked here: with an authorizer on, the engine checks them as Kafka's
KafkaApis does (READ on each topic for DescribeProducers, DESCRIBE on each transactional id for
DescribeTransactions, ListTransactions answering only the ids the principal may DESCRIBE), for a wire client
as for an in-process one.  The engine keeps lab time; the timestamps answered (a producer's last_timestamp, a
transaction's start time) are Unix ms, as Kafka's, through the door's epoch (messages.unix_time)."""
from __future__ import annotations

import re
from itertools import groupby

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.names import topic_name_error
from .codec import build, get, nested
from ..protocol.messages import unix_time


# ------------------------------------------------------ DescribeProducers
def decode_describe_producers(body, version, door):
    tps = tuple((t.name, p) for t in body.topics for p in t.partition_indexes)
    return m.DescribeProducersRequest(tuple(dict.fromkeys(tps))), None


def encode_describe_producers(resp, body, version, state, door, cls):
    Topic = nested(cls, "topics")
    Part = nested(Topic, "partitions")
    Producer = nested(Part, "active_producers")
    out = []
    for t in body.topics:
        ps = []
        for p in t.partition_indexes:
            err, producers = resp.partitions.get((t.name, p), (Errors.UNKNOWN_SERVER_ERROR, []))
            ps.append(build(Part, partition_index=p, error_code=err,
                            error_message=_producers_error_message(t.name, err),
                            active_producers=tuple(
                                build(Producer, producer_id=d.producer_id, producer_epoch=d.producer_epoch,
                                      last_sequence=d.last_sequence,
                                      last_timestamp=unix_time(d.last_timestamp, door.epoch_ms),
                                      coordinator_epoch=d.coordinator_epoch,
                                      current_txn_start_offset=d.current_txn_start_offset)
                                for d in producers)))
        out.append(build(Topic, name=t.name, partitions=tuple(ps)))
    return build(cls, topics=tuple(out))


def _producers_error_message(topic, err):
    # Kafka's KafkaApis.handleDescribeProducersRequest: Topic.validate's message for a name Kafka cannot hold;
    # new ApiError(TOPIC_AUTHORIZATION_FAILED), which carries that error's default message, for a topic the
    # principal may not READ, and new ApiError(UNKNOWN_TOPIC_OR_PARTITION) for a partition the metadata cache does
    # not hold
    if err == Errors.INVALID_TOPIC_EXCEPTION:
        return topic_name_error(topic)
    if err == Errors.TOPIC_AUTHORIZATION_FAILED:
        return "Topic authorization failed."
    if err == Errors.UNKNOWN_TOPIC_OR_PARTITION:
        return "This server does not host this topic-partition."
    return None


# --------------------------------------------------- DescribeTransactions
def decode_describe_transactions(body, version, door):
    return m.DescribeTransactionsRequest(tuple(body.transactional_ids)), None


def encode_describe_transactions(resp, body, version, state, door, cls):
    State = nested(cls, "transaction_states")
    TopicData = nested(State, "topics")
    out = []
    for d in resp.transaction_states:
        if d["error"]:
            # Kafka leaves the other fields at their schema defaults when it answers an error
            out.append(build(State, error_code=d["error"], transactional_id=d["transactional_id"],
                             transaction_state="", transaction_timeout=0, transaction_start_time=0,
                             producer_id=0, producer_epoch=0, topics=()))
            continue
        topics = tuple(build(TopicData, topic=topic, partitions=tuple(p for _, p in tps))
                       for topic, tps in groupby(sorted(d["partitions"]), key=lambda tp: tp[0]))
        out.append(build(State, error_code=0, transactional_id=d["transactional_id"], transaction_state=d["state"],
                         transaction_timeout=d["transaction_timeout_ms"],
                         transaction_start_time=unix_time(d["transaction_start_ms"], door.epoch_ms),
                         producer_id=d["producer_id"],
                         producer_epoch=d["producer_epoch"], topics=topics))
    return build(cls, transaction_states=tuple(out))


# ------------------------------------------------------- ListTransactions
# constructs Python's re accepts and RE2 (com.google.re2j, what Kafka's coordinator compiles the pattern with)
# refuses: backreferences, lookaround, atomic groups, conditionals
_NOT_RE2 = re.compile(r"\\[1-9]|\(\?P=|\(\?<?[=!]|\(\?>|\(\?\(")


def id_pattern(pattern):
    """KIP-1152's TransactionalIdPattern as Kafka's TransactionStateManager reads it: null or empty filters
    nothing (None); otherwise a regular expression the whole transactional id must match (re2j's
    ``matches()``).  A pattern that does not compile: ``(None, why)``."""
    if not pattern:
        return None, None
    if _NOT_RE2.search(pattern):
        return None, "a construct RE2 does not support (backreference, lookaround, atomic group or conditional)"
    try:
        return re.compile(pattern), None
    except re.error as e:
        return None, str(e)


def decode_list_transactions(body, version, door):
    # the engine filters by state, producer id and duration; the door applies the id pattern to its answer
    # (the filters are a conjunction, so the order does not change the rows)
    return m.ListTransactionsRequest(tuple(body.state_filters), tuple(body.producer_id_filters),
                                     int(get(body, "duration_filter", -1))), get(body, "transactional_id_pattern")


def encode_list_transactions(resp, body, version, pattern, door, cls):
    State = nested(cls, "transaction_states")
    rows, unknown, error = resp.transaction_states, resp.unknown_state_filters, resp.error
    compiled, why = id_pattern(pattern)
    if why is not None and error == Errors.NONE:
        # Kafka: the coordinator throws InvalidRegularExpression after its load check; the whole answer is
        # KafkaApis' error response (no rows, no unknown state filters)
        door.note(f"transactional id pattern {pattern!r} is not a valid regular expression: {why}",
                  "INVALID_REGULAR_EXPRESSION")
        rows, unknown, error = (), (), Errors.INVALID_REGULAR_EXPRESSION
    elif compiled is not None:
        rows = tuple(r for r in rows if compiled.fullmatch(r[0]))
    return build(cls, error_code=error, unknown_state_filters=tuple(unknown),
                 transaction_states=tuple(build(State, transactional_id=tid, producer_id=pid, transaction_state=s)
                                          for tid, pid, s in rows))
