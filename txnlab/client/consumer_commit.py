"""The consumer's offsets in its group: ``store_offsets``, ``commit`` (synchronous or not, with its
``on_commit`` report served from ``poll()``), the auto-commit timer (``enable.auto.commit``, every
``auto.commit.interval.ms``) and ``committed`` (OffsetFetch with RequireStable: it waits out open
transactions).  A mixin of ``Consumer``; the requests themselves are the ``ConsumerCoordinator``'s.
"""
from __future__ import annotations

from typing import Optional

from ..errors import KafkaError, KafkaException
from ..protocol.errors import Errors
from . import argcheck
from .config import dialect_of
from .dialect import AUTO_COMMIT_REPORTED, COMMIT_ASYNC_ATTEMPTS, JAVA, description
from .message import OFFSET_INVALID, Message, TopicPartition
from .offset_commit import java_retry_backoff

JAVA_DEFAULT_CLOSE_TIMEOUT_MS = 30_000      # ConsumerUtils.DEFAULT_CLOSE_TIMEOUT_MS: close() without a timeout


COMMIT_FAILED_TEXT = ("Commit cannot be completed since the group has already rebalanced and assigned the partitions "
                      "to another member. This means that the time between subsequent calls to poll() was longer "
                      "than the configured max.poll.interval.ms, which typically implies that the poll loop is "
                      "spending too much time message processing. You can address this either by increasing "
                      "max.poll.interval.ms or by reducing the maximum size of batches returned in poll() with "
                      "max.poll.records.")


# What Java's commitSync tries again: the errors OffsetCommitResponseHandler.handle raises as they are, all
# RetriableExceptions (COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION; COORDINATOR_NOT_AVAILABLE,
# NOT_COORDINATOR and REQUEST_TIMED_OUT after markCoordinatorUnknown), and a disconnect (DisconnectException, the
# lab's NETWORK_EXCEPTION; a request that timed out is failed as disconnected too).  Everything else it raises
# (authorization, OFFSET_METADATA_TOO_LARGE, RebalanceInProgressException, CommitFailedException, FENCED_INSTANCE_ID,
# "Unexpected error in commit") is not retriable: commitOffsetsSync throws it at once.
JAVA_COMMIT_SYNC_RETRIABLE = frozenset({Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                        Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR,
                                        Errors.REQUEST_TIMED_OUT, Errors.NETWORK_EXCEPTION})


def offsets_shown(offsets: dict) -> str:
    """A Map<TopicPartition, OffsetAndMetadata> as Java prints it (its leaderEpoch an Integer: null when none)."""
    return "{" + ", ".join(f"{t}-{p}=OffsetAndMetadata{{offset={o}, leaderEpoch={e if e >= 0 else 'null'}, "
                           f"metadata='{meta}'}}" for (t, p), (o, e, meta) in sorted(offsets.items())) + "}"


def _epoch(e: Optional[int]) -> int:
    """A TopicPartition's or Message's leader_epoch (None: unknown) as requests carry it (-1)."""
    return -1 if e is None else e


class ConsumerCommits:
    def store_offsets(self, message: Optional[Message] = None, offsets: Optional[list] = None) -> None:
        self._check_open()
        if self._config["enable.auto.offset.store"]:
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG,
                                            "store_offsets() requires enable.auto.offset.store=false"))
        if message is not None and offsets is not None:
            raise ValueError("message and offsets are mutually exclusive")
        # confluent-kafka's Consumer_store_offsets stores the message's leader epoch with its offset + 1
        # (rd_kafka_topic_partition_set_leader_epoch), or each TopicPartition's; rd_kafka_offsets_store keeps both
        items = [((message.topic(), message.partition()), message.offset() + 1, message.leader_epoch())] \
            if message is not None else [((tp.topic, tp.partition), tp.offset, tp.leader_epoch) for tp in offsets or []]
        for key, off, epoch in items:
            st = self._assignment.get(key)
            if st is None:
                raise KafkaException(KafkaError(KafkaError._STATE, f"{key[0]}-{key[1]} is not assigned"))
            st.stored_offset, st.stored_epoch = off, epoch

    def _stored_offsets(self) -> dict:
        """What a commit of the stored offsets sends: each with the leader epoch of the record it follows
        (librdkafka's stored rd_kafka_fetch_pos_t; Java's SubscriptionState.allConsumed, the position's
        offsetEpoch)."""
        return {tp: (st.stored_offset, _epoch(st.stored_epoch), "") for tp, st in self._assignment.items()
                if st.stored_offset is not None and st.stored_offset != st.committed}

    def commit(self, message: Optional[Message] = None, offsets: Optional[list] = None,
               asynchronous: bool = True) -> Optional[list[TopicPartition]]:
        """Commit the message's offset+1, the given offsets, or the stored offsets of the assignment."""
        self._check_open()
        self._require_group("commit")
        if message is not None and offsets is not None:
            raise ValueError("message and offsets are mutually exclusive")
        # with the leader epoch of the message (confluent-kafka's Consumer_commit), or of each TopicPartition
        # (py_to_c_parts); rd_kafka_OffsetCommitRequest writes it as CommittedLeaderEpoch (v6+)
        if message is not None:
            to_commit = {(message.topic(), message.partition()): (message.offset() + 1,
                                                                  _epoch(message.leader_epoch()), "")}
        elif offsets is not None:
            to_commit = {(tp.topic, tp.partition): (tp.offset, _epoch(tp.leader_epoch), tp.metadata or "")
                         for tp in argcheck.tp_list(offsets, "commit()")}
        else:
            to_commit = self._stored_offsets()
        if not to_commit:
            raise KafkaException(KafkaError(KafkaError._NO_OFFSET, "Commit failed: Local: No offset stored"))
        self._note(f"{self.name} calls commit({', '.join(f'{t}-{p}={o}' for (t, p), (o, *_) in sorted(to_commit.items()))}"
                   f"{', asynchronous=False' if not asynchronous else ''})")
        box: dict = {}

        def done(err, errors):
            box["err"] = err
            self._after_commit(to_commit, err, errors, report=asynchronous)
        if asynchronous:           # Java's commitAsync: one attempt; librdkafka: offset_commit.OffsetCommit's rules
            self._coordinator.commit(to_commit, done, 1, True)
            return None
        if dialect_of(self._config) == JAVA:
            timeout = self._config["default.api.timeout.ms"]
            if not self._commit_sync_java(to_commit, timeout, "commitSync"):
                text = (f"Timeout of {timeout}ms expired before successfully committing offsets "
                        f"{offsets_shown(to_commit)}")
                self._say(f"{self.name}: commitSync throws TimeoutException: {text}")
                raise KafkaException(KafkaError(Errors.REQUEST_TIMED_OUT, text, retriable=True))
        else:
            # rd_kafka_commit waits for the op's result with RD_POLL_INFINITE (src/rdkafka_offset.c): the call
            # ends when the group handler ends the op (offset_commit.OffsetCommit), however long that takes
            self._coordinator.commit(to_commit, done)
            if not self._wait(lambda: "err" in box, None):
                self._check_open()
            if box["err"] is not None:
                raise KafkaException(box["err"])
        return [TopicPartition(t, p, o, leader_epoch=e) for (t, p), (o, e, _) in sorted(to_commit.items())]

    def _commit_sync_java(self, to_commit: dict, timeout: int, caller: str) -> bool:
        """Java's ConsumerCoordinator.commitOffsetsSync with a timer of ``timeout`` ms: KafkaConsumer.commitSync's,
        default.api.timeout.ms (ClassicKafkaConsumer.commitSync; group.protocol=classic is 4.x's default), or
        close's (``_close_commit_java``).  Each round finds the coordinator if it is unknown and sends one
        OffsetCommit; a retriable failure (the ones OffsetCommitResponseHandler raises as they are, and a
        disconnect) sleeps retryBackoff.backoff(attempts++) (ExponentialBackoff: retry.backoff.ms doubled per
        attempt up to retry.backoff.max.ms) and goes round again while the timer has time left; any other failure
        is thrown at once (KafkaException).  False when the timer runs out -- waiting for an answer, for the
        coordinator or in a backoff: commitSync then throws TimeoutException ("Timeout of ...ms expired before
        successfully committing offsets ..."), the lab's REQUEST_TIMED_OUT (as dialect.LOCAL_TIMEOUT says for
        Java's TimeoutException)."""
        deadline = self._kernel.now + timeout
        attempts = 0
        while True:
            box: dict = {}

            def done(err, errors, box=box):
                box["err"] = err
                if box.get("abandoned"):
                    self._kernel.narrate(f"{self.name}: this OffsetCommit is answered after {caller} gave up ("
                                         + ("committed" if err is None else err.name()) + "); nobody is told")
                elif err is None or err.code() not in JAVA_COMMIT_SYNC_RETRIABLE:
                    self._after_commit(to_commit, err, errors, report=False)
            op = self._coordinator.commit(to_commit, done)
            if not self._wait(lambda: "err" in box, max(0, deadline - self._kernel.now)):
                self._check_open()
                box["abandoned"] = True
                op.abandon()
                break
            err = box["err"]
            if err is None:
                return True
            if err.code() not in JAVA_COMMIT_SYNC_RETRIABLE:
                raise KafkaException(err)
            backoff = java_retry_backoff(self._config, attempts)
            attempts += 1
            left = deadline - self._kernel.now
            timer = "default.api.timeout.ms" if caller == "commitSync" else "close's timeout"
            self._say(f"{self.name}: {caller}: OffsetCommit failed with {err.name()}, retriable: it tries again "
                      f"after {min(backoff, max(0, left))} ms (retry.backoff.ms={self._config['retry.backoff.ms']} "
                      f"doubled per attempt, at most retry.backoff.max.ms={self._config['retry.backoff.max.ms']}); "
                      f"{max(0, left)} ms left of {timer}={timeout}")
            self._wait(lambda: self._node.crashed, min(backoff, max(0, left)))        # timer.sleep
            self._check_open()
            if self._kernel.now >= deadline:
                break
        return False

    def _close_commit_java(self) -> None:
        """Java's close() with enable.auto.commit: ConsumerCoordinator.close -> maybeAutoCommitOffsetsSync(timer),
        before the revoke callbacks and the LeaveGroup (AbstractCoordinator.close -> onLeavePrepare,
        maybeLeaveGroup): commitOffsetsSync of allConsumed with close's timer, min(30 s, request.timeout.ms)
        (ClassicKafkaConsumer.createTimerForRequest; close() without a timeout is close(DEFAULT_CLOSE_TIMEOUT_MS)).
        A failure is only logged: WARN "Synchronous auto-commit of offsets ... failed: ...", or DEBUG when the
        timer ran out."""
        offsets = self._stored_offsets()
        if not offsets:
            return
        shown = offsets_shown(offsets)
        self._events.log(7, "ConsumerCoordinator", f"Sending synchronous auto-commit of offsets {shown}")
        timeout = min(JAVA_DEFAULT_CLOSE_TIMEOUT_MS, self._config["request.timeout.ms"])
        try:
            if not self._commit_sync_java(offsets, timeout, "close()"):
                text = f"Auto-commit of offsets {shown} timed out before completion"
                self._events.log(7, "ConsumerCoordinator", text)
                self._say(f"{self.name}: {text} (close's timeout, {timeout} ms; logged only)")
        except KafkaException as e:         # (done() has told the consumer)
            self._auto_commit_failed(offsets, e.args[0], sync=True)

    def _after_commit(self, to_commit: dict, err, errors: dict, report: bool) -> None:
        if err is None:
            for tp, (off, *_) in to_commit.items():
                st = self._assignment.get(tp)
                if st is not None:
                    st.committed = off
            self._kernel.narrate(f"{self.name}: commit acknowledged: "
                                 + ", ".join(f"{t}-{p}={o}" for (t, p), (o, *_) in sorted(to_commit.items())))
        else:
            self._kernel.narrate(f"{self.name}: commit failed: {err.name()}")
        if report and self._config["on_commit"] is not None:
            parts = []
            for (t, p), (o, epoch, _) in sorted(to_commit.items()):
                tp = TopicPartition(t, p, o, leader_epoch=epoch)
                e = errors.get((t, p))
                if e is not None and e != Errors.NONE:
                    tp.error = KafkaError(e)
                parts.append(tp)
            self._commit_reports.append((err, parts))

    def _serve_commit_reports(self) -> None:
        while self._commit_reports:
            err, parts = self._commit_reports.pop(0)
            self._config["on_commit"](err, parts)

    def _commit_stored(self, sync: bool, offsets: Optional[dict] = None) -> None:
        offsets = self._stored_offsets() if offsets is None else offsets
        if not offsets or not self._config["group.id"]:
            return
        if self._committing and not sync:
            return
        box: dict = {}
        self._committing = True
        dialect = dialect_of(self._config)

        def done(err, errors):
            self._committing = False
            box["err"] = err
            self._after_commit(offsets, err, errors, report=AUTO_COMMIT_REPORTED[dialect])
            if err is not None and not AUTO_COMMIT_REPORTED[dialect]:
                self._auto_commit_failed(offsets, err, sync)
        if dialect == JAVA:
            # the timer's autoCommitOffsetsAsync: commitOffsetsAsync, one attempt (Java's own waited-for auto-commits
            # are onJoinPrepare's, _join_prepare_commit, and close()'s, _close_commit_java)
            self._coordinator.commit(offsets, done, COMMIT_ASYNC_ATTEMPTS[dialect], True)
        else:
            self._coordinator.commit(offsets, done)     # (librdkafka's sends: offset_commit.OffsetCommit)
        if sync:
            self._wait(lambda: "err" in box, self._config["request.timeout.ms"])

    def _join_prepare_commit(self) -> None:
        """Java, before every rejoin (ConsumerCoordinator.onJoinPrepare with enable.auto.commit): an asynchronous
        auto-commit of everything consumed (autoCommitOffsetsAsync: one attempt, its callback logs as the timer's
        does), waited for before the JoinGroup -- and, eager, before on_revoke runs (a cooperative member keeps its
        partitions and commits nothing when onJoinComplete revokes some).  A retriable failure is
        retried after retry.backoff.ms (DEBUG), until max.poll.interval.ms (the rebalance timeout) has passed; any
        other failure is logged at ERROR and the member rejoins without its commit.  (Java returns from poll()
        between the attempts; the lab waits inside it.)"""
        deadline = self._kernel.now + self._config["max.poll.interval.ms"]
        self._join_preparing = True     # no timer auto-commit meanwhile: Java's poll() returns before it
        try:
            self._join_prepare_commits(deadline)
        finally:
            self._join_preparing = False

    def _join_prepare_commits(self, deadline: int) -> None:
        while True:
            offsets = self._stored_offsets()
            if not offsets:
                return
            box: dict = {}
            self._committing = True

            def done(err, errors, offsets=offsets, box=box):
                self._committing = False
                box["err"] = err
                self._after_commit(offsets, err, errors, report=False)
                if err is not None:
                    self._auto_commit_failed(offsets, err, sync=False)
            self._coordinator.commit(offsets, done, COMMIT_ASYNC_ATTEMPTS[JAVA], True)
            if not self._wait(lambda: "err" in box, max(0, deadline - self._kernel.now)) or \
                    self._kernel.now >= deadline:
                if not self._node.crashed:
                    self._join_prepare_log(3, "Asynchronous auto-commit of offsets failed: joinPrepare timeout. "
                                              "Will continue to join group")
                return
            err = box["err"]
            if err is None:
                return
            # the failed future's own exception: a lost connection is DisconnectException.INSTANCE (no message);
            # a member the group no longer knows gets a CommitFailedException (OffsetCommitResponseHandler)
            text = "null" if err.code() == Errors.NETWORK_EXCEPTION else COMMIT_FAILED_TEXT if err.code() in (
                Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION) else description(err.code())
            if not err.retriable():
                self._join_prepare_log(3, f"Asynchronous auto-commit of offsets failed: {text}. Will continue to "
                                          f"join group.")
                return
            self._join_prepare_log(7, f"Asynchronous auto-commit of offsets failed with retryable error: {text}. "
                                      f"Will retry it.")
            self._wait(lambda: self._node.crashed, min(self._config["retry.backoff.ms"],
                                                       max(0, deadline - self._kernel.now)))

    def _join_prepare_log(self, level: int, text: str) -> None:
        self._events.log(level, "ConsumerCoordinator", text)
        self._kernel.narrate(f"{self.name}: {text}")

    def _auto_commit_failed(self, offsets: dict, err: KafkaError, sync: bool) -> None:
        """Java: an auto-commit's failure is only logged (dialect.AUTO_COMMIT_REPORTED); after a retriable one the
        timer's next auto-commit comes after retry.backoff.ms."""
        shown = offsets_shown(offsets)
        if sync:
            level, text = 4, f"Synchronous auto-commit of offsets {shown} failed: {err.str()}"
        elif err.retriable():
            level, text = 7, f"Asynchronous auto-commit of offsets {shown} failed due to retriable error."
            if not self._closed and not self._node.crashed:
                self._node.cancel_timer(self._auto_commit_timer)
                self._auto_commit_timer = None
                self._start_auto_commit(self._config["retry.backoff.ms"])
        else:
            level, text = 4, f"Asynchronous auto-commit of offsets {shown} failed: {err.str()}"
        self._events.log(level, "ConsumerCoordinator", text)
        self._kernel.narrate(f"{self.name}: {text} (logged only: Java's auto-commit calls no commit callback)")

    def _start_auto_commit(self, delay_ms: Optional[int] = None) -> None:
        if not self._config["enable.auto.commit"] or not self._config["group.id"] or self._auto_commit_timer:
            return

        def tick():
            self._auto_commit_timer = None
            if self._closed or self._node.crashed:
                return
            if self._assignment and (self._manual or self._coordinator.in_group) and not self._join_preparing:
                if self._stored_offsets():
                    self._kernel.narrate(f"{self.name}: auto-commit (every auto.commit.interval.ms="
                                         f"{self._config['auto.commit.interval.ms']})")
                    self._commit_stored(sync=False)
            self._start_auto_commit()
        self._auto_commit_timer = self._node.set_timer(
            self._config["auto.commit.interval.ms"] if delay_ms is None else delay_ms, "auto-commit", tick,
            background=True)

    def committed(self, partitions: list, timeout: Optional[float] = None) -> list[TopicPartition]:
        """The group's committed offsets (OffsetFetch with RequireStable: waits out open transactions)."""
        self._check_open()
        self._require_group("committed")
        tps = [(tp.topic, tp.partition) for tp in argcheck.tp_list(partitions, "committed()")]
        box: dict = {}

        def done(err, offsets):
            box["err"], box["offsets"] = err, offsets
        self._coordinator.fetch_committed(tps, done, wanted=lambda: "abandoned" not in box)
        if not self._wait(lambda: "err" in box, self._timeout_ms(timeout)):
            box["abandoned"] = True
            self._check_open()
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "committed() timed out"))
        if box["err"] is not None:
            raise KafkaException(box["err"])
        out = []
        for t, p in tps:        # (each with the leader epoch OffsetFetch answered: rd_kafka_handle_OffsetFetch)
            off, epoch, meta = box["offsets"].get((t, p), (-1, -1, ""))
            out.append(TopicPartition(t, p, off if off >= 0 else OFFSET_INVALID, meta or None, epoch))
        return out
