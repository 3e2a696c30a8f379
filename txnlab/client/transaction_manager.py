"""The producer's ``TransactionManager``: producer id/epoch, sequences, and the transaction's client states.

Owns (as Kafka's client does, for idempotent and transactional producers alike):
the producer id and epoch, per-partition sequence bookkeeping (next sequence,
last acked sequence, batches in flight), the KIP-360 epoch bump, the client
state machine (UNINITIALIZED ... FATAL_ERROR) with its legal transitions as
data, the partitions and groups added to the current transaction, and the
queue of transactional requests (one in flight, by priority).
"""
from __future__ import annotations

from enum import IntEnum
from types import SimpleNamespace
from typing import Callable, Optional


NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767


class State(IntEnum):
    UNINITIALIZED = 0
    INITIALIZING = 1
    READY = 2
    IN_TRANSACTION = 3
    COMMITTING_TRANSACTION = 4
    ABORTING_TRANSACTION = 5
    ABORTABLE_ERROR = 6
    FATAL_ERROR = 7


# The states by name as plain attributes (S.READY, ...), for the paths every transaction takes: reading a member
# through its enum class (State.READY) costs CPython 3.11 a call of the enum type's __getattr__ hook.
S = SimpleNamespace(**State.__members__)

# Kafka's TransactionManager.State.isTransitionValid, as data: target -> legal sources.
VALID_TRANSITIONS = {
    State.UNINITIALIZED: {State.READY, State.UNINITIALIZED},
    State.INITIALIZING: {State.UNINITIALIZED, State.ABORTING_TRANSACTION, State.COMMITTING_TRANSACTION,
                         State.INITIALIZING},
    State.READY: {State.INITIALIZING, State.COMMITTING_TRANSACTION, State.ABORTING_TRANSACTION},
    State.IN_TRANSACTION: {State.READY},
    State.COMMITTING_TRANSACTION: {State.IN_TRANSACTION},
    State.ABORTING_TRANSACTION: {State.IN_TRANSACTION, State.ABORTABLE_ERROR},
    State.ABORTABLE_ERROR: {State.IN_TRANSACTION, State.COMMITTING_TRANSACTION, State.ABORTABLE_ERROR,
                            State.INITIALIZING},
    State.FATAL_ERROR: set(State),
}

# Priorities of transactional requests (lower goes first).
PRIORITY = {"FindCoordinator": 0, "InitProducerId": 1, "AddPartitionsToTxn": 2, "AddOffsetsToTxn": 2,
            "EndTxn": 3, "EpochBump": 4, "TxnOffsetCommit": 2}


class PartitionSequences:
    __slots__ = ("next_sequence", "last_acked_sequence", "in_flight", "last_acked_offset")

    def __init__(self) -> None:
        self.next_sequence = 0
        self.last_acked_sequence = -1
        self.in_flight: list = []          # ProducerBatch sorted by base_sequence
        self.last_acked_offset = -1

    def acked_words(self) -> str:
        """The last acknowledged sequence, in words (-1, Kafka's NO_LAST_ACKED_SEQUENCE_NUMBER: none yet)."""
        if self.last_acked_sequence < 0:
            return "no sequence acknowledged yet"
        return f"last acked sequence {self.last_acked_sequence}"


class TransactionManager:
    def __init__(self, transactional_id: Optional[str], transaction_timeout_ms: int) -> None:
        self.transactional_id = transactional_id
        self.is_transactional = transactional_id is not None     # (the id never changes; read on every drain)
        self.transaction_timeout_ms = transaction_timeout_ms
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.state = S.UNINITIALIZED
        self.last_error = None                 # KafkaError behind ABORTABLE_ERROR / FATAL_ERROR
        self.dr_fails = 0                      # librdkafka's txn_dr_fails: records of this transaction reported failed
        self.partitions: dict = {}             # tp -> PartitionSequences
        self.epoch_bump_required = False
        # Java: partitionsWithUnresolvedSequences, tp -> the sequence after a retried batch that expired (its records
        # may or may not be in the log); nothing new is sent to the partition meanwhile
        self.unresolved: dict = {}
        self.partitions_in_txn: set = set()
        self.pending_partitions: set = set()   # produced to, AddPartitionsToTxn not yet sent
        self.new_partitions_in_flight: set = set()
        self.coordinator: Optional[str] = None
        self.transaction_started = False
        self.on_transition: Optional[Callable[[State, State], None]] = None

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    def transition(self, target: State, error=None) -> None:
        if self.state == S.FATAL_ERROR:
            return
        if target not in (S.FATAL_ERROR, S.ABORTABLE_ERROR) and self.state not in VALID_TRANSITIONS[target]:
            raise RuntimeError(f"invalid transition {self.state.name} -> {target.name}")
        old = self.state
        self.state = target
        if error is not None:
            self.last_error = error
        elif target in (S.READY, S.IN_TRANSACTION):
            self.last_error = None
        if self.on_transition:
            self.on_transition(old, target)

    # ------------------------------------------------------------ sequences
    def seq(self, tp) -> PartitionSequences:
        s = self.partitions.get(tp)
        if s is None:
            s = self.partitions[tp] = PartitionSequences()
        return s

    def set_producer_id_and_epoch(self, pid: int, epoch: int) -> None:
        self.producer_id = pid
        self.producer_epoch = epoch

    def reset_sequences(self) -> None:
        for s in self.partitions.values():
            s.next_sequence = 0
            s.last_acked_sequence = -1
        self.unresolved.clear()         # (Java: resetSequenceNumbers, bumpIdempotentProducerEpoch)

    def mark_sequence_unresolved(self, batch) -> int:
        """Java's markSequenceUnresolved: returns the partition's unresolved next sequence."""
        nxt = batch.last_sequence + 1
        self.unresolved[batch.tp] = max(self.unresolved.get(batch.tp, nxt), nxt)
        return self.unresolved[batch.tp]

    def first_in_flight_sequence(self, tp) -> int:
        s = self.partitions.get(tp)
        return s.in_flight[0].base_sequence if s and s.in_flight else -1

    def add_in_flight(self, tp, batch) -> None:
        s = self.seq(tp)
        if any(b is batch for b in s.in_flight):
            return
        s.in_flight.append(batch)
        s.in_flight.sort(key=lambda b: b.base_sequence)

    def remove_in_flight(self, tp, batch) -> None:
        s = self.partitions.get(tp)
        if s:
            s.in_flight = [b for b in s.in_flight if b is not batch]

    def has_in_flight(self) -> bool:
        for s in self.partitions.values():     # (a loop, not any() over a generator: read on every drain)
            if s.in_flight:
                return True
        return False

    def bump_idempotent_epoch(self) -> bool:
        """KIP-360: a purely local bump. Returns False when the epoch is exhausted (a new pid is needed)."""
        self.epoch_bump_required = False
        if self.producer_epoch >= MAX_EPOCH:
            self.producer_id = NO_PRODUCER_ID
            self.producer_epoch = NO_PRODUCER_EPOCH
            self.reset_sequences()
            return False
        self.producer_epoch += 1
        self.reset_sequences()
        return True
