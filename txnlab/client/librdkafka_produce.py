"""librdkafka's idempotent and transactional producer after a failed Produce, a part of the ``Sender``.

Owns, for a producer of the librdkafka dialect with idempotence (transactional or not), what librdkafka's
rd_kafka_handle_Produce_error and rd_kafka_handle_idempotent_Produce_error (src/rdkafka_request.c) do with a batch
that failed: the partition drains before a retry, a batch refused with OUT_OF_ORDER_SEQUENCE_NUMBER past the next
sequence to be acknowledged is retried under a bumped epoch (the idempotent producer bumps it itself, the
transactional one fails the transaction and asks the coordinator for the bump after the abort), and one at or before
that sequence is a fatal error.  Kafka's Java client follows other rules (TransactionManager.canRetry), which the
sender keeps for the Java dialect.
"""
from __future__ import annotations

from ..errors import KafkaError
from ..protocol.errors import Errors
from .transaction_manager import S

_OUT_OF_ORDER = Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
# rd_kafka_idemp_drain_epoch_bump's reason for a batch refused behind a gap, the error text of a transaction it fails
SKIPPED = "skipped sequence numbers"


class LibrdkafkaProduceErrors:
    """Mixed into ``Sender``, for a producer whose ``_draining`` is a set (not None: an idempotent or transactional
    producer of the librdkafka dialect, not the naive client).  It uses the sender's ``p``, ``txn``, ``narrate``,
    ``_draining``, ``_bump_after_end``, ``_requeue``, ``_can_retry``, ``_expired``, ``_complete`` and
    ``_abort_undrained``."""

    def _librdkafka_drain(self, b, error: Errors, reason: str, name: str, broker) -> bool:
        """librdkafka's idempotent and transactional producer (rd_kafka_handle_Produce_error, src/rdkafka_request.c).
        A batch that will be retried first lets the partition drain: nothing more of it is sent until every request
        of it in flight has come back ("drain before retrying", rd_kafka_idemp_drain_toppar), so the retry goes out
        with what they answered known.  OUT_OF_ORDER_SEQUENCE_NUMBER (rd_kafka_handle_idempotent_Produce_error)
        compares the batch's first sequence with the next one the partition expects acknowledged, whatever the
        broker's own state (its epoch included: the answer does not carry it):
        - past it (R2 behind a failed R1): the batch was not written and cannot be a duplicate.  It is queued again
          without counting a retry, and the epoch is bumped once every partition has drained ("skipped sequence
          numbers", _skipped_sequences); then the queued batches are numbered from 0 under the new epoch;
        - at it (the head of the line) or before it: the producer and the broker disagree on what was written, a
          fatal error (_desynchronized).
        True when it handled ``b``.  (librdkafka first compares the batch's producer id and epoch with the
        partition's current ones and fails a batch of an older one at once with its error, PERMANENT; the lab's
        drains leave no batch in flight when the epoch changes, and the sender leaves such a batch to its other
        rules.)"""
        txn = self.txn
        if error == _OUT_OF_ORDER:
            next_ack = txn.seq(b.tp).last_acked_sequence + 1
            if b.base_sequence <= next_ack:
                self._desynchronized(b, error, reason, next_ack, broker)
                return True
            if self._expired(b):
                return False        # (past its message.timeout.ms: not retried, the rules below fail it)
            b.attempts -= 1         # perr->incr_retry = 0
            self._skipped_sequences(b, next_ack, name)
        elif not self._can_retry(b, error):
            return False
        else:
            self._draining.add(b.tp)
        if self._bump_after_end and (txn.state == S.ABORTABLE_ERROR or txn.state == S.ABORTING_TRANSACTION):
            self._purge_retry(b, error)
            return True
        self._requeue(b)
        waits = sum(1 for x in txn.seq(b.tp).in_flight if x.in_flight)
        self.narrate(f"{self.p.name}: will retry {b.describe()} after {error.name} (attempt {b.attempts + 1}, "
                     + ("once its epoch is bumped)" if txn.epoch_bump_required or self._bump_after_end else
                        f"when the partition's {waits} other batch(es) in flight are answered)" if waits else
                        "same sequence)"))
        return True

    def _skipped_sequences(self, b, next_ack: int, name: str) -> None:
        """A batch was refused with OUT_OF_ORDER_SEQUENCE_NUMBER past the next sequence to be acknowledged:
        rd_kafka_idemp_drain_epoch_bump(rk, err, "skipped sequence numbers") (src/rdkafka_idempotence.c).  The
        idempotent producer bumps its own epoch once every partition has drained (rd_kafka_idemp_drain_done,
        rd_kafka_pid_bump).  A transactional one cannot: the idempotence state waits for the abort
        (WAIT_TXN_ABORT) and the transaction fails with an abortable error that requires an epoch bump
        (rd_kafka_txn_set_abortable_error_with_bump), which purges the queued records (_PURGE_QUEUE); the
        abort then asks the coordinator for the bump, InitProducerId with the current producer id and epoch
        (rd_kafka_txn_endtxn_complete -> rd_kafka_idemp_drain_epoch_bump0, KIP-360).  A later abortable error
        is ignored, the first one stands (rd_kafka_txn_set_abortable_error0), but the bump is still required."""
        txn = self.txn
        if not txn.is_transactional:
            if not txn.epoch_bump_required:
                self.narrate(f"{self.p.name}: {name} batch seq {b.base_sequence} got OUT_OF_ORDER_SEQUENCE_NUMBER "
                             f"past the next sequence to be acknowledged ({next_ack}): a request before it failed; "
                             f"it drains every partition, then bumps its epoch and numbers its batches from 0 again")
            txn.epoch_bump_required = True
            return
        self._bump_after_end = True
        if txn.state == S.IN_TRANSACTION or txn.state == S.COMMITTING_TRANSACTION:
            kerr = KafkaError(_OUT_OF_ORDER, SKIPPED, retriable=False, txn_requires_abort=True)
            self.narrate(f"{self.p.name}: {name} batch seq {b.base_sequence} got OUT_OF_ORDER_SEQUENCE_NUMBER past "
                         f"the next sequence to be acknowledged ({next_ack}): a request before it failed; librdkafka "
                         f"fails the transaction (abortable, {SKIPPED}), purges its queue and bumps the epoch "
                         f"through the coordinator after the abort")
            txn.transition(S.ABORTABLE_ERROR, kerr)
            self._abort_undrained(kerr)

    def _desynchronized(self, b, error: Errors, reason: str, next_ack: int, broker) -> None:
        """OUT_OF_ORDER_SEQUENCE_NUMBER for the batch at the head of the line (its first sequence is the next one
        to be acknowledged) or before it: "a state desynchronization between the producer and broker", after which
        librdkafka "can no longer reason about the state of messages and thus not guarantee ordering or once-ness"
        (rd_kafka_handle_idempotent_Produce_error).  rd_kafka_idemp_set_fatal_error (src/rdkafka_idempotence.h)
        raises a fatal error with the broker's code, for the transactional producer too (rd_kafka_txn_set_fatal_error:
        "until KIP-360 has been fully implemented any fatal idempotent producer error will also raise a fatal
        transactional producer error"); the batch's records are reported with the broker's error, the queued ones
        purged (rd_kafka_set_fatal_error0), and nothing is produced any more.  (The idempotent producer still
        drains and bumps its epoch: the permanent error's "message sequence gap" in rd_kafka_handle_Produce_error.)
        Kafka's Java client instead bumps the epoch and retries (an idempotent producer) or aborts (a
        transactional one)."""
        txn, tp = self.txn, b.tp
        pid = f"PID{{Id:{b.producer_id},Epoch:{b.producer_epoch}}}"
        node = str(broker).rsplit("-", 1)[-1]
        text = f"ProduceRequest for {tp[0]} [{tp[1]}] with {len(b.values)} message(s) failed " + (
            f"with rewound sequence number on broker {node} ({pid}, base seq {b.base_sequence} < next seq {next_ack})"
            if b.base_sequence < next_ack else
            f"due to sequence desynchronization with broker {node} ({pid}, base seq {b.base_sequence})")
        kerr = KafkaError(error, text, fatal=True, retriable=False)
        self.narrate(f"{self.p.name}: {tp[0]}-{tp[1]} batch seq {b.base_sequence} got OUT_OF_ORDER_SEQUENCE_NUMBER "
                     f"although it is the next sequence to be acknowledged ({next_ack})" if b.base_sequence == next_ack
                     else f"{self.p.name}: {tp[0]}-{tp[1]} batch seq {b.base_sequence} got OUT_OF_ORDER_SEQUENCE_NUMBER "
                     f"below the next sequence to be acknowledged ({next_ack})")
        self.narrate(f"{self.p.name}: librdkafka: a sequence desynchronization is fatal "
                     f"({error.name}): the producer is now in FATAL_ERROR")
        txn.transition(S.FATAL_ERROR, kerr)
        self._complete(b, KafkaError(int(error), reason or None), -1)
        self._abort_undrained(kerr)
        if not txn.is_transactional:
            txn.epoch_bump_required = True

    def _purge_retry(self, b, error: Errors) -> None:
        """A batch of a transaction that must be aborted, or is being aborted, with an epoch bump to follow, came
        back to be retried.  librdkafka puts it back in its partition's queue (rd_kafka_toppar_retry_msgq), where
        nothing is sent any more (rd_kafka_txn_may_send_msg), and purges that queue with _PURGE_QUEUE: the purge of
        the abortable error (rd_kafka_txn_set_abortable_error0), which the broker threads serve after the responses
        they are reading, or abort_transaction's.  The lab purges it at once (librdkafka would leave a batch answered
        after both purges in the queue until its message.timeout.ms).  Its sequence numbers are not given out again:
        the bump starts every partition at 0."""
        txn = self.txn
        self.narrate(f"{self.p.name}: {b.describe()} came back with {error.name} while the transaction "
                     f"{'must be aborted' if txn.state == S.ABORTABLE_ERROR else 'is being aborted'}: purged, "
                     f"not retried")
        self._complete(b, KafkaError(KafkaError._PURGE_QUEUE, "purged: the transaction must be aborted"
                                     if txn.state == S.ABORTABLE_ERROR else "purged: the transaction was aborted"), -1)
