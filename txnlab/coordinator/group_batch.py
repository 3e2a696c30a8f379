"""How the group coordinator writes to ``__consumer_offsets``: Kafka 4.1.1's ``CoordinatorRuntime`` write path.

Owns, per ``__consumer_offsets`` partition this broker coordinates, the batch being filled and the writes
appended but not yet committed (the high watermark has not passed them):

* A write operation (OffsetCommit, TxnOffsetCommit, SyncGroup's GroupMetadata, ...) is applied to the
  coordinator's memory at once, as uncommitted state, and its records join the partition's current batch
  (``CoordinatorRuntime.CoordinatorContext.append``; ``maybeAllocateNewBatch`` starts a batch, and with it the
  linger timer, when there is none).
* The batch is appended (``flushCurrentBatch``, through ``CoordinatorPartitionWriter.append``: acks=1) when
  ``group.coordinator.append.linger.ms`` has passed since it was started (the linger timer's ``FlushBatch``
  event, or ``maybeFlushCurrentBatch`` when a write arrives that late), when it is full (its size reaches the
  partition's ``max.message.bytes``, or the next write's records do not fit: they go to a new batch), before a
  transactional write (which is never accumulated: its own batch is appended at once), and before a transaction
  marker is written (``completeTransaction``).  With linger 0 there is no timer: ``maybeFlushCurrentBatch``
  appends each write's batch at the end of that write (4.1.1 has no adaptive linger).
* The operations are answered once the high watermark passes their batch (``deferredEventQueue``, completed by
  the ``HighWatermarkUpdate`` event), or at ``offsets.commit.timeout.ms`` (``OperationTimeout``, counted from
  the operation, lingering included): REQUEST_TIMED_OUT, the records staying in the log and in memory.
* A failed append fails every operation of the batch (``failCurrentBatch``: ``DeferredEventCollection.complete``
  with the error) and reverts the memory to the batch's start (``revertLastWrittenOffset``); so does losing the
  partition (``unload``: NOT_COORDINATOR, the waiting operations too).
* A read-your-writes operation with no records (OffsetFetch with RequireStable) waits for the writes before it
  (``waitForPendingWrites``): it joins the current batch if there is one, else waits for the last written offset.

Errors are answered as ``CoordinatorOperationExceptionHelper.handleOperationException`` maps them
(``OPERATION_ERRORS``), or as each operation's own handler does (``GroupWrite.map_error``).
"""
from __future__ import annotations

from typing import Callable, Optional

from ..protocol.errors import Errors
from ..protocol.record_batch import NO_SEQUENCE, RECORD_BATCH_OVERHEAD, RECORD_OVERHEAD_ESTIMATE, RecordBatch
from ..protocol.names import OFFSETS_TOPIC

# Kafka 4.1.1 CoordinatorOperationExceptionHelper.handleOperationException: how an error failing a write of the group
# coordinator is answered (anything else is answered as it is).  OffsetCommit ("commit-offset") and TxnOffsetCommit
# ("txn-commit-offset") take it in GroupCoordinatorService.commitOffsets / commitTransactionalOffsets; JoinGroup's and
# SyncGroup's group metadata writes answer through GroupMetadataManager.appendGroupMetadataErrorToResponseError,
# the same table.  NETWORK_EXCEPTION is a TxnOffsetCommit's lost or timed-out verification, "which older clients may
# not expect": COORDINATOR_LOAD_IN_PROGRESS retries without a coordinator look-up.  (Kafka's Scala
# GroupMetadataManager answered a too-large offsets write INVALID_COMMIT_OFFSET_SIZE and a timed-out one
# REQUEST_TIMED_OUT; 4.1.1 answers UNKNOWN_SERVER_ERROR and COORDINATOR_NOT_AVAILABLE.)
OPERATION_ERRORS = {Errors.NETWORK_EXCEPTION: Errors.COORDINATOR_LOAD_IN_PROGRESS,
                    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
                    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
                    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
                    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
                    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
                    Errors.MESSAGE_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
                    Errors.RECORD_LIST_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
                    Errors.INVALID_FETCH_SIZE: Errors.UNKNOWN_SERVER_ERROR}


def map_write_error(error: Errors) -> Errors:
    """How a failed ``__consumer_offsets`` write (offsets or group metadata) is answered: ``OPERATION_ERRORS``.
    (The write is appended with acks=1, so the local append never refuses it under min.insync.replicas; the
    high watermark does not move then (Partition.maybeIncrementLeaderHW), and the write is answered
    REQUEST_TIMED_OUT at offsets.commit.timeout.ms: COORDINATOR_NOT_AVAILABLE.)"""
    return OPERATION_ERRORS.get(error, error)


def _size(records) -> int:
    """The records' share of a batch's size (as ``record_batch``'s estimate counts it)."""
    return sum(RECORD_OVERHEAD_ESTIMATE + len(r.key or b"") + len(r.value or b"") for r in records)


class GroupWrite:
    """One write operation of the group coordinator (Kafka 4.1.1's ``CoordinatorWriteEvent``).  ``records``: what
    it appends (none for a read-your-writes fetch); ``apply()``: replay them into memory, as uncommitted state
    (run as they join a batch); ``appended(first)``: they are in the local log from offset ``first``;
    ``replicated(first)``: the HW passed them, returns the error to answer; ``answer(error)``: the answer, the
    error already mapped by ``map_error``; ``revert()``: undo ``apply()`` (its batch failed)."""

    __slots__ = ("what", "records", "apply", "appended", "replicated", "answer", "revert", "map_error", "timer",
                 "answered")

    def __init__(self, what: str, records: tuple, answer: Callable[[Errors], None],
                 replicated: Optional[Callable[[int], Errors]] = None, apply: Optional[Callable[[], None]] = None,
                 revert: Optional[Callable[[], None]] = None, appended: Optional[Callable[[int], None]] = None,
                 map_error: Callable[[Errors], Errors] = map_write_error) -> None:
        self.what = what
        self.records = records
        self.apply = apply
        self.answer = answer
        self.replicated = replicated
        self.revert = revert
        self.appended = appended
        self.map_error = map_error
        self.timer = None
        self.answered = False


class CoordinatorBatch:
    """The batch being filled for one ``__consumer_offsets`` partition (Kafka 4.1.1's ``CoordinatorBatch``):
    started at ``append_time``, its records, its operations (``DeferredEventCollection``) with the index of each
    one's first record, its size and its linger timer (none with linger 0)."""

    __slots__ = ("partition", "append_time", "producer_id", "producer_epoch", "guard", "records", "writes",
                 "starts", "size", "linger_timer")

    def __init__(self, partition: int, now: int, producer_id: int, producer_epoch: int, guard) -> None:
        self.partition = partition
        self.append_time = now
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.guard = guard
        self.records: list = []
        self.writes: list[GroupWrite] = []
        self.starts: list[int] = []
        self.size = RECORD_BATCH_OVERHEAD
        self.linger_timer = None


class Deferred:
    """Operations waiting for the HW to reach ``offset``: an appended batch's (with each one's first record offset
    in ``firsts``), or a fetch waiting for the last written offset."""

    __slots__ = ("offset", "writes", "firsts")

    def __init__(self, offset: int, writes: list, firsts: list) -> None:
        self.offset = offset
        self.writes = writes
        self.firsts = firsts


class CoordinatorRuntime:
    """The write path of Kafka 4.1.1's ``CoordinatorRuntime`` for this broker's group coordinator (see the module's
    docstring)."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self.kernel = broker.kernel
        self.linger_ms = broker.config["group.coordinator.append.linger.ms"]
        self.commit_timeout_ms = broker.config["offsets.commit.timeout.ms"]
        self.current: dict[int, CoordinatorBatch] = {}       # partition index -> the batch being filled
        self.deferred: dict[int, list[Deferred]] = {}        # partition index -> appended, not yet committed

    def narrate(self, text: str) -> None:
        self.broker.narrate(text)

    # --------------------------------------------------------------- writes
    def write(self, partition: int, op: GroupWrite, producer_id: int = -1, producer_epoch: int = -1,
              guard=None) -> None:
        """CoordinatorWriteEvent.run: the operation's records are replayed into memory and join the batch
        (``CoordinatorContext.append``), its timeout starts, and the batch is appended if it must be.  A batch
        that must be appended first and fails fails this operation too, which is then not applied."""
        self._start_timeout(partition, op)
        tp = f"{OFFSETS_TOPIC}-{partition}"
        txn = producer_id >= 0
        if txn and partition in self.current:
            # "If the current write operation is transactional, the current batch is written before proceeding"
            error = self.flush(partition, "first: a transactional write is not accumulated with other writes")
            if error != Errors.NONE:
                self._fail_op(op, error, f"the batch before it failed ({error.name})")
                return
        size = _size(op.records)
        batch = self.current.get(partition)
        if batch is not None and batch.size + size > self._max_batch_size(partition):
            error = self.flush(partition, f"first: it is full ({batch.size} bytes; the next write's {size} bytes "
                                          f"would pass max.message.bytes={self._max_batch_size(partition)})")
            if error != Errors.NONE:
                self._fail_op(op, error, f"the batch before it failed ({error.name})")
                return
            batch = None
        if batch is None:
            batch = self._new_batch(partition, producer_id, producer_epoch, guard)
        if op.apply is not None:
            op.apply()
        batch.starts.append(len(batch.records))
        batch.records.extend(op.records)
        batch.writes.append(op)
        batch.size += size
        # CoordinatorContext.maybeFlushCurrentBatch: transactional, lingered long enough, or full
        waited = self.kernel.now - batch.append_time
        if txn:
            self.flush(partition, "at once: transactional writes are not accumulated")
        elif waited >= self.linger_ms:
            self.flush(partition, "at once (group.coordinator.append.linger.ms=0)" if self.linger_ms == 0 else
                       f"after lingering {waited} ms (group.coordinator.append.linger.ms={self.linger_ms})")
        elif batch.size >= self._max_batch_size(partition):
            self.flush(partition, f"before its linger time: it is full ({batch.size} bytes, "
                                  f"max.message.bytes={self._max_batch_size(partition)})")
        else:
            n = len(batch.records)
            self.narrate(f"the group coordinator adds the {op.what} to the batch for {tp} ({n} record(s), "
                         f"{len(batch.writes)} operation(s); appended {self.linger_ms - waited} ms from now, when "
                         f"group.coordinator.append.linger.ms={self.linger_ms} has passed since it was started); "
                         f"answered once that batch is replicated")

    def has_pending_writes(self, partition: int) -> bool:
        """Is a write to the partition lingering in its batch, or appended and not yet committed?"""
        if partition in self.current:
            return True
        p = self.broker.partitions.get((OFFSETS_TOPIC, partition))
        return p is not None and p.log.high_watermark < p.log.log_end_offset

    def wait_for_pending_writes(self, partition: int, op: GroupWrite) -> bool:
        """CoordinatorContext.waitForPendingWrites, for an operation with no records: it joins the current batch,
        or waits for the last written offset; False when nothing is pending (answer it now)."""
        p = self.broker.partitions.get((OFFSETS_TOPIC, partition))
        batch = self.current.get(partition)
        if batch is not None:
            self._start_timeout(partition, op)
            batch.starts.append(len(batch.records))
            batch.writes.append(op)
            self.narrate(f"the {op.what} waits for the batch not yet appended to {OFFSETS_TOPIC}-{partition} "
                         f"({len(batch.records)} record(s)): answered once it is replicated")
            return True
        if p is None or p.log.high_watermark >= p.log.log_end_offset:
            return False
        self._start_timeout(partition, op)
        written = p.log.log_end_offset
        self.deferred.setdefault(partition, []).append(Deferred(written, [op], [written]))
        self.narrate(f"the {op.what} is answered once {OFFSETS_TOPIC}-{partition} is replicated up to offset "
                     f"{written} (HW {p.log.high_watermark}): the writes before it are waited for")
        return True

    def _max_batch_size(self, partition: int) -> int:
        """maybeAllocateNewBatch: the batch's size limit is the partition's max.message.bytes."""
        p = self.broker.partitions.get((OFFSETS_TOPIC, partition))
        if p is None:
            return 1_048_588
        v = p.config.get("max.message.bytes")      # (the topic's own setting, else the log's default)
        return int(v) if v is not None else p.log.config["max.message.bytes"]

    def _new_batch(self, partition: int, producer_id: int, producer_epoch: int, guard) -> CoordinatorBatch:
        """CoordinatorContext.maybeAllocateNewBatch: a batch, and its linger timer when the linger is above 0."""
        batch = CoordinatorBatch(partition, self.kernel.now, producer_id, producer_epoch, guard)
        if self.linger_ms > 0 and producer_id < 0:
            batch.linger_timer = self.broker.set_timer(
                self.linger_ms, ("linger timer of the group coordinator's batch for %s-%d", OFFSETS_TOPIC, partition),
                lambda: self._linger_expired(batch))
        self.current[partition] = batch
        return batch

    def _linger_expired(self, batch: CoordinatorBatch) -> None:
        """The linger timer's FlushBatch event."""
        if self.current.get(batch.partition) is batch:
            self.flush(batch.partition, f"after lingering {self.kernel.now - batch.append_time} ms "
                                        f"(group.coordinator.append.linger.ms={self.linger_ms})")

    def flush(self, partition: int, why: str) -> Errors:
        """CoordinatorContext.flushCurrentBatch: append the partition's batch (acks=1).  On success its operations
        wait for the HW; on failure ``_fail_batch``.  Returns the append's error."""
        batch = self.current.pop(partition, None)
        if batch is None:
            return Errors.NONE
        self.kernel.cancel(batch.linger_timer)
        tp = (OFFSETS_TOPIC, partition)
        if not batch.records:       # (only waiting fetches joined it: nothing to append)
            self._deferred_at(partition, Deferred(self._written(partition), batch.writes, [-1] * len(batch.writes)))
            return Errors.NONE
        txn = batch.producer_id >= 0
        records = tuple(batch.records)
        kind = f"transactional batch of producer {batch.producer_id} epoch {batch.producer_epoch}" if txn else "batch"
        self.narrate(f"the group coordinator appends the {kind} of {len(records)} record(s) "
                     f"({len(batch.writes)} operation(s)) to {tp[0]}-{tp[1]} {why}")
        rb = RecordBatch(records, batch.producer_id, batch.producer_epoch if txn else -1, NO_SEQUENCE,
                         is_transactional=txn)
        result: list = []
        self.broker.append_internal(tp, [rb], lambda error, info: result.append((Errors(error), info)),
                                    verification_guard=batch.guard, acks=1)
        error, info = result[0]         # (acks=1: answered during the call, as CoordinatorPartitionWriter.append)
        if error != Errors.NONE:
            self._fail_batch(batch, error, f"the append failed with {error.name}")
            return error
        firsts = [info.first_offset + start for start in batch.starts]
        for op, first in zip(batch.writes, firsts):
            if op.appended is not None and op.records:
                op.appended(first)
        p = self.broker.partitions.get(tp)
        short = p is not None and len(p.isr) < p.min_insync_replicas
        self.narrate(f"{tp[0]}-{tp[1]}: the batch is appended locally (acks=1) at offsets {info.first_offset}.."
                     f"{info.last_offset}; its operations are answered once replicated (HW passes {info.last_offset})"
                     + (f"; the ISR {list(p.isr)} is below min.insync.replicas={p.min_insync_replicas}: the HW "
                        f"cannot move until it grows back" if short else ""))
        self._deferred_at(partition, Deferred(info.last_offset + 1, batch.writes, firsts))
        return Errors.NONE

    def _written(self, partition: int) -> int:
        p = self.broker.partitions.get((OFFSETS_TOPIC, partition))
        return p.log.log_end_offset if p is not None else 0

    def _deferred_at(self, partition: int, d: Deferred) -> None:
        self.deferred.setdefault(partition, []).append(d)
        p = self.broker.partitions.get((OFFSETS_TOPIC, partition))
        if p is not None and p.log.high_watermark >= d.offset:     # (a single replica: the HW moved at append)
            self.on_high_watermark(p)

    def _fail_batch(self, batch: CoordinatorBatch, error: Errors, why: str) -> None:
        """CoordinatorContext.failCurrentBatch: every operation of the batch fails with ``error``, and the memory
        goes back to where it was when the batch started (revertLastWrittenOffset: newest write first)."""
        self.kernel.cancel(batch.linger_timer)
        n = sum(1 for op in batch.writes if op.records)
        self.narrate(f"{why}: the batch of {len(batch.records)} record(s) for {OFFSETS_TOPIC}-{batch.partition} is "
                     f"dropped; the coordinator's memory goes back to before it ({n} write(s) undone) and each of "
                     f"its {len(batch.writes)} operation(s) fails with {error.name}")
        for op in reversed(batch.writes):
            if op.revert is not None:
                op.revert()
        for op in batch.writes:
            self._fail_op(op, error, None)

    def _fail_op(self, op: GroupWrite, error: Errors, why: Optional[str]) -> None:
        self.kernel.cancel(op.timer)
        if op.answered:
            return
        op.answered = True
        mapped = op.map_error(error)
        self.narrate(f"the {op.what} fails with {error.name} -> {mapped.name}" + (f": {why}" if why else ""))
        op.answer(mapped)

    # ------------------------------------------------------------ timeouts
    def _start_timeout(self, partition: int, op: GroupWrite) -> None:
        """CoordinatorWriteEvent.run: an OperationTimeout of offsets.commit.timeout.ms from now."""
        b = self.broker
        op.timer = self.kernel.schedule_timeout(max(self.commit_timeout_ms, 1), b.name,
                                                ("coordinator write timeout %s-%d", OFFSETS_TOPIC, partition),
                                                self._timed_out, op, b.incarnation)

    def _timed_out(self, op: GroupWrite) -> None:
        if op.answered:
            return
        op.answered = True
        mapped = op.map_error(Errors.REQUEST_TIMED_OUT)
        if op.records:
            self.narrate(f"the {op.what} is not replicated within offsets.commit.timeout.ms={self.commit_timeout_ms}"
                         f": answered REQUEST_TIMED_OUT -> {mapped.name}; its records stay in the coordinator's "
                         f"memory (and in the log once appended), applied once the HW passes them")
        else:
            self.narrate(f"the writes the {op.what} waits for are not replicated within offsets.commit.timeout.ms="
                         f"{self.commit_timeout_ms}: answered REQUEST_TIMED_OUT -> {mapped.name}")
        op.answer(mapped)

    # ---------------------------------------------------------- completion
    def on_high_watermark(self, p) -> None:
        """The HW of an offsets partition moved (the HighWatermarkUpdate event): updateLastCommittedOffset, then
        deferredEventQueue.completeUpTo -- each operation it passed is applied and answered (unless timed out)."""
        waiting = self.deferred.get(p.tp[1])
        if not waiting:
            return
        hw = p.log.high_watermark
        while waiting and waiting[0].offset <= hw:
            d = waiting.pop(0)
            for op, first in zip(d.writes, d.firsts):
                error = op.replicated(first) if op.replicated is not None else Errors.NONE
                if not op.answered:
                    op.answered = True
                    self.kernel.cancel(op.timer)
                    if error != Errors.NONE:
                        self.narrate(f"the {op.what} failed with {error.name}")
                    op.answer(error)
                elif error == Errors.NONE and op.records:
                    self.narrate(f"the {op.what}, answered at its timeout, is replicated now (HW {hw}): applied "
                                 f"all the same")

    def unload(self, partition: int) -> None:
        """The offsets partition moved away (CoordinatorContext.unload): the operations waiting for the HW fail with
        NOT_COORDINATOR (deferredEventQueue.failAll), then the batch not yet appended (failCurrentBatch)."""
        waiting = self.deferred.pop(partition, [])
        if waiting:
            self.narrate(f"{OFFSETS_TOPIC}-{partition} moved away: the operations waiting for its HW fail with "
                         f"NOT_COORDINATOR")
        for d in waiting:
            for op in d.writes:
                self._fail_op(op, Errors.NOT_COORDINATOR, None)
        batch = self.current.pop(partition, None)
        if batch is not None:
            self._fail_batch(batch, Errors.NOT_COORDINATOR, f"{OFFSETS_TOPIC}-{partition} moved away before its "
                                                            f"batch was appended")
