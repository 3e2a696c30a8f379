"""One consumer commit on its way to the group coordinator: the OffsetCommit requests it sends, how each client
reads their answers, and what it retries (Kafka's ``OffsetCommitResponseHandler``; librdkafka's
``rd_kafka_handle_OffsetCommit`` and ``rd_kafka_cgrp_op_handle_OffsetCommit``).

librdkafka (src/rdkafka_request.c, src/rdkafka_cgrp.c, src/rdkafka_broker.c, master 4c3b017c3): every commit --
``rd_kafka_commit`` synchronous or not, the auto-commit timer, the commit of a rebalance -- is one op the group
handler serves with ``rd_kafka_cgrp_offsets_commit``.  Its OffsetCommit request is one buffer that
``rd_kafka_buf_retry`` sends at most ``1 + RD_KAFKA_REQUEST_DEFAULT_RETRIES`` = 3 times, the retry after
retry.backoff.ms doubled per retry, at most retry.backoff.max.ms (``rd_kafka_broker_buf_retry``), while
``rd_kafka_handle_OffsetCommit`` asks for it: only when every partition failed (or the request itself did), with
the actions of ``rd_kafka_handle_OffsetCommit_error``.  When the request is spent with NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE or a broken connection (``_TRANSPORT``), ``rd_kafka_cgrp_op_handle_OffsetCommit`` defers
the op once (``rd_kafka_cgrp_defer_offset_commit``: the op's ``ts_timeout`` is set, so never twice) until the
coordinator is up again, which sends a new buffer (three more sends); a commit made while no coordinator is known is
deferred the same way by ``rd_kafka_cgrp_offsets_commit`` and so uses up its deferral.  A deferred op that waits more
than session.timeout.ms fails with ``_WAIT_COORD`` (``rd_kafka_cgrp_timeout_scan``; librdkafka scans once a second,
the lab at the deadline itself).  The backoff's +-20 % jitter is left out, as in the producer's retries.

Java (Kafka 4.1.1 ConsumerCoordinator): each OffsetCommit is sent once (``sendOffsetCommitRequest``); the answer
marks the coordinator unknown for COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR and REQUEST_TIMED_OUT
(``OffsetCommitResponseHandler.handle``: ``markCoordinatorUnknown``) and for a disconnect
(``CoordinatorResponseHandler.onFailure``).  What retries is the caller: ``commitOffsetsSync`` (the consumer's
``_commit_sync_java``) until its timer runs out, ``commitOffsetsAsync`` never.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional

from ..errors import KafkaError
from ..protocol import messages as m
from ..protocol.errors import Errors, LocalTimeout
from .config import dialect_of
from .dialect import LIBRDKAFKA, commit_error

COORDINATOR_ERRORS = {Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, Errors.NETWORK_EXCEPTION,
                      Errors.REQUEST_TIMED_OUT}

# rd_kafka_err_action's action flags (src/rdkafka_request.h)
PERMANENT, RETRY, REFRESH, SPECIAL, FATAL = 1, 2, 4, 8, 16
RD_KAFKA_REQUEST_DEFAULT_RETRIES = 2          # src/rdkafka_proto.h: a request buffer's rkbuf_max_retries
# rd_kafka_handle_OffsetCommit_error ("These actions are mimicking AK's ConsumerCoordinator.java")
LIBRDKAFKA_PARTITION_ACTIONS = {
    Errors.GROUP_AUTHORIZATION_FAILED: PERMANENT, Errors.TOPIC_AUTHORIZATION_FAILED: PERMANENT,
    Errors.OFFSET_METADATA_TOO_LARGE: PERMANENT, Errors.INVALID_COMMIT_OFFSET_SIZE: PERMANENT,
    Errors.COORDINATOR_LOAD_IN_PROGRESS: RETRY, Errors.UNKNOWN_TOPIC_OR_PARTITION: RETRY,
    Errors.COORDINATOR_NOT_AVAILABLE: REFRESH | RETRY | SPECIAL,     # mark the coordinator dead, refresh, retry
    Errors.NOT_COORDINATOR: REFRESH | RETRY | SPECIAL,
    Errors.REQUEST_TIMED_OUT: REFRESH | RETRY,     # "Replicas possibly unavailable": re-query (coord_query), not dead
    Errors.FENCED_INSTANCE_ID: PERMANENT | FATAL,
    Errors.REBALANCE_IN_PROGRESS: PERMANENT, Errors.UNKNOWN_MEMBER_ID: PERMANENT, Errors.ILLEGAL_GENERATION: PERMANENT,
}
# what rd_kafka_err_action does with a code no explicit entry names (its switch): refresh-and-retry metadata
# errors, retry timeouts and NOT_ENOUGH_REPLICAS_AFTER_APPEND, anything else permanent
_DEFAULT_ACTIONS = {Errors.LEADER_NOT_AVAILABLE: REFRESH, Errors.NOT_LEADER_OR_FOLLOWER: REFRESH,
                    Errors.KAFKA_STORAGE_ERROR: REFRESH | RETRY,
                    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: RETRY, Errors.NOT_ENOUGH_REPLICAS: RETRY}
# the errors rd_kafka_cgrp_op_handle_OffsetCommit defers until the coordinator is back (_TRANSPORT: a broken
# connection, the lab's NETWORK_EXCEPTION that is not a local timeout)
DEFERRED = {Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, Errors.NETWORK_EXCEPTION}


def librdkafka_actions(error) -> int:
    """The actions for one partition's error (rd_kafka_handle_OffsetCommit_error, rd_kafka_err_action)."""
    return LIBRDKAFKA_PARTITION_ACTIONS.get(error, _DEFAULT_ACTIONS.get(error, PERMANENT))


def librdkafka_request_actions(error) -> int:
    """A request that got no answer: ``_TRANSPORT`` (a broken connection) marks the coordinator dead and retries
    (rd_kafka_handle_OffsetCommit's explicit entry); a local ``_TIMED_OUT`` is only retried (rd_kafka_err_action)."""
    return RETRY if isinstance(error, LocalTimeout) else REFRESH | SPECIAL | RETRY


def librdkafka_retry_backoff(cfg: dict, retries: int) -> int:
    """rd_kafka_broker_buf_retry: retry.backoff.ms << (retries - 1), at most retry.backoff.max.ms (no jitter)."""
    return min(cfg["retry.backoff.ms"] << min(max(retries - 1, 0), 34), cfg["retry.backoff.max.ms"])


def java_retry_backoff(cfg: dict, attempts: int) -> int:
    """Kafka's ExponentialBackoff(retry.backoff.ms, 2, retry.backoff.max.ms, jitter 0.2).backoff(attempts), the
    jitter's random factor taken as 1: 100, 200, 400, 800, 1000, 1000 ... ms with the defaults."""
    initial = min(cfg["retry.backoff.max.ms"], cfg["retry.backoff.ms"])
    top = cfg["retry.backoff.max.ms"]
    exp_max = math.log(top / max(initial, 1)) / math.log(2) if top > initial else 0
    if exp_max == 0:
        return initial
    return min(int(initial * math.pow(2, min(attempts, exp_max))), top)


class OffsetCommit:
    """One commit of ``offsets`` ({tp: (offset, leader epoch, metadata)}) by ``coordinator`` (the consumer's
    ``ConsumerCoordinator``); ``done(error, {tp: error})`` runs once, in the event loop, with the error as the dialect
    reports a commit (``dialect.commit_error``).  ``attempts``: the Java dialect's sends (1 for commitAsync and each
    round of commitSync).  ``abandon()``: the caller gave up (Java's commitSync
    past its timeout): nothing more is sent, and an answer still on its way only updates the consumer."""

    def __init__(self, coordinator: Any, offsets: dict,
                 done: Callable[[Optional[KafkaError], dict], None], attempts: int = 1, asynchronous: bool = False):
        self.co = coordinator
        self.offsets = dict(offsets)
        self.done = done
        self.attempts = attempts
        self.asynchronous = asynchronous
        self.librdkafka = dialect_of(coordinator.cfg) == LIBRDKAFKA
        self.retries = 0                    # librdkafka: rkbuf_retries of the current request buffer
        self.deferred_until: Optional[int] = None       # librdkafka: the op's ts_timeout, once deferred
        self._defer_timer = None
        self.finished = False
        self.abandoned = False

    def start(self) -> "OffsetCommit":
        if self.librdkafka:
            self._process(calling=True)
        else:
            self.co.ensure_coordinator(self._send)
        return self

    def abandon(self) -> None:
        self.abandoned = True

    # ---------------------------------------------------------------- sending
    def _process(self, calling: bool = False) -> None:
        """rd_kafka_cgrp_offsets_commit: a new request buffer now, or a deferral while no coordinator is known.
        ``calling``: in the application's call, where no step is under way to narrate into."""
        if self.co.coordinator is None:
            if not self._defer("no coordinator is known", calling):
                self._finish(KafkaError._WAIT_COORD, {})
            return
        self.retries = 0
        self._send()

    def _send(self) -> None:
        if self.abandoned or self.finished or self.co.node.crashed:
            return
        co = self.co
        generation, member = (co.generation_id, co.member_id) if co.generation_id >= 0 else (-1, "")
        req = m.OffsetCommitRequest(co.group_id, generation, member, co.group_instance_id, dict(self.offsets))
        co.node.send_request(co.coordinator, req, self._on_response, timeout_ms=co.cfg["request.timeout.ms"])

    def _later(self, delay_ms: int, send: Callable[[], None]) -> None:
        self.co.node.set_timer(delay_ms, "OffsetCommit retry backoff", lambda: self.co.ensure_coordinator(send))

    # ---------------------------------------------------------------- answers
    def _on_response(self, resp, err) -> None:
        self.co._changed()
        errors = {tp: Errors(e) for tp, e in (resp.errors.items() if resp else ())}
        if self.librdkafka:
            self._librdkafka_response(err, errors)
        else:
            self._java_response(err, errors)

    def _java_response(self, err, errors: dict) -> None:
        """OffsetCommitResponseHandler.handle: the first partition in error decides."""
        bad = err if err is not None else next((e for e in errors.values() if e != Errors.NONE), None)
        if bad is None:
            self._finish(None, errors)
            return
        if bad in COORDINATOR_ERRORS:          # markCoordinatorUnknown (also after commitAsync's only attempt)
            self.co.coordinator_dead(f"OffsetCommit -> {bad.name}", disconnected=err is not None)
        self.attempts -= 1
        if (bad in COORDINATOR_ERRORS or bad == Errors.COORDINATOR_LOAD_IN_PROGRESS) and self.attempts > 0 \
                and not self.abandoned:
            self._later(self.co.cfg["retry.backoff.ms"], self._send)
            return
        self._finish(bad, errors)

    def _librdkafka_response(self, err, errors: dict) -> None:
        """rd_kafka_handle_OffsetCommit, then rd_kafka_cgrp_op_handle_OffsetCommit."""
        co = self.co
        if err is not None:
            code, actions = err, librdkafka_request_actions(err)
        else:
            failed = [e for e in errors.values() if e != Errors.NONE]
            if not failed:
                self._finish(None, errors)
                return
            code = failed[-1]               # "use error code from last partition as the global error"
            actions = 0
            if len(failed) == len(errors):  # only when every partition failed are their actions taken
                for e in failed:
                    actions |= librdkafka_actions(e)
        if actions & FATAL:
            co._set_fatal(Errors(code), "OffsetCommit")
            self._finish(code, errors)
            return
        if actions & REFRESH and actions & SPECIAL:
            co.coordinator_dead(f"OffsetCommit -> {code.name}")        # rd_kafka_cgrp_coord_dead
        elif actions & REFRESH:
            co.coordinator_query(f"OffsetCommit -> {code.name}")       # rd_kafka_cgrp_coord_query
        if actions & RETRY and not actions & PERMANENT and self.retries < RD_KAFKA_REQUEST_DEFAULT_RETRIES:
            self.retries += 1
            delay = librdkafka_retry_backoff(co.cfg, self.retries)
            co.narrate(f"{co.c.name}: OffsetCommit -> {code.name}: librdkafka retries the request "
                       f"(retry {self.retries} of {RD_KAFKA_REQUEST_DEFAULT_RETRIES}) after {delay} ms "
                       f"(retry.backoff.ms={co.cfg['retry.backoff.ms']}, doubled per retry)")
            self._later(delay, self._send)
            return
        if code in DEFERRED and not isinstance(code, LocalTimeout) and self._defer(f"OffsetCommit -> {code.name}"):
            return
        self._finish(code, errors)

    def _defer(self, why: str, calling: bool = False) -> bool:
        """rd_kafka_cgrp_defer_offset_commit: once per op, until the coordinator is up again or session.timeout.ms
        has passed (then _WAIT_COORD)."""
        if self.deferred_until is not None or self.abandoned:
            return False
        co = self.co
        timeout = co.cfg["session.timeout.ms"]
        self.deferred_until = co.kernel.now + timeout
        if not calling:     # (a commit made while the coordinator is being looked up: the FindCoordinator steps show it)
            co.narrate(f"{co.c.name}: {why}: librdkafka defers the commit until the coordinator of group "
                       f"{co.group_id!r} is known again (once per commit; at most session.timeout.ms={timeout} ms, "
                       f"then _WAIT_COORD)")
        self._defer_timer = co.node.set_timer(timeout, "deferred OffsetCommit timeout", self._wait_coord_expired)
        co.ensure_coordinator(self._reprocess)
        return True

    def _reprocess(self) -> None:
        if self.finished or self.co.node.crashed:
            return
        self.co.node.cancel_timer(self._defer_timer)
        self._process()

    def _wait_coord_expired(self) -> None:
        if self.finished:
            return
        self.co.narrate(f"{self.co.c.name}: the deferred commit waited session.timeout.ms for the coordinator: "
                        f"_WAIT_COORD")
        self._finish(KafkaError._WAIT_COORD, {})

    def _finish(self, code, errors: dict) -> None:
        if self.finished:
            return
        self.finished = True
        self.co.node.cancel_timer(self._defer_timer)
        if code is None:
            self.done(None, errors)
            return
        co = self.co
        if code == Errors.UNKNOWN_MEMBER_ID:
            co.member_id, co.generation_id = "", -1
            co.request_rejoin("OffsetCommit -> UNKNOWN_MEMBER_ID", lost=True)
        elif code == Errors.ILLEGAL_GENERATION:
            co.generation_id = -1
            co.request_rejoin("OffsetCommit -> ILLEGAL_GENERATION", lost=True)
        elif code == Errors.REBALANCE_IN_PROGRESS:
            co.request_rejoin("OffsetCommit -> REBALANCE_IN_PROGRESS")
        self.done(commit_error(dialect_of(co.cfg), code, self.asynchronous), errors)
