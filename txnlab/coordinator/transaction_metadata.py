"""``TransactionMetadata``: one transactional.id's state at its coordinator, and the legal transitions.

Owns the state enum (ids as persisted in ``__transaction_state``), the table of
legal previous states as data (KAFKA-EOS §2.3, with the TV2 additions), and
Kafka's two-step transition: ``prepare_transition`` checks the table, sets
``pending_state`` and returns an immutable ``TxnTransitMetadata``; only after
that record is durable does ``complete_transition`` apply it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum
from types import SimpleNamespace
from typing import Optional

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767


class TransactionState(IntEnum):
    Empty = 0
    Ongoing = 1
    PrepareCommit = 2
    PrepareAbort = 3
    CompleteCommit = 4
    CompleteAbort = 5
    Dead = 6
    PrepareEpochFence = 7

    def __str__(self) -> str:
        return self.name


# The states by name as plain attributes (S.Ongoing, ...), for the paths every request takes: reading a member
# through its enum class (TransactionState.Ongoing) costs CPython 3.11 a call of the enum type's __getattr__ hook.
S = SimpleNamespace(**TransactionState.__members__)
# A state's name by its number, for narration kept unformatted (Kernel.narrate_f): a line of strings and numbers is
# a tuple the garbage collector stops tracking, one holding a member is walked for as long as the trace lives
STATE_NAMES = tuple(s.name for s in sorted(TransactionState))

# target state -> legal previous states (baseline, TV0/TV1)
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset] = {
    S.Empty: frozenset({S.Empty, S.CompleteCommit, S.CompleteAbort}),
    S.Ongoing: frozenset({S.Ongoing, S.Empty, S.CompleteCommit, S.CompleteAbort}),
    S.PrepareCommit: frozenset({S.Ongoing}),
    S.PrepareAbort: frozenset({S.Ongoing, S.PrepareEpochFence}),
    S.CompleteCommit: frozenset({S.PrepareCommit}),
    S.CompleteAbort: frozenset({S.PrepareAbort}),
    S.Dead: frozenset({S.Empty, S.CompleteAbort, S.CompleteCommit}),
    S.PrepareEpochFence: frozenset({S.Ongoing}),
}
# added by transaction.version 2 (KIP-890 part 2): abort from Empty / Complete*
TV2_EXTRA_PREVIOUS_STATES: dict[TransactionState, frozenset] = {
    S.PrepareAbort: frozenset({S.Empty, S.CompleteCommit, S.CompleteAbort}),
}
EXPIRATION_ALLOWED = frozenset({S.Empty, S.CompleteCommit, S.CompleteAbort})


def is_valid_transition(old: TransactionState, new: TransactionState, transaction_version: int = 0) -> bool:
    ok = old in VALID_PREVIOUS_STATES[new]
    if not ok and transaction_version >= 2:
        ok = old in TV2_EXTRA_PREVIOUS_STATES.get(new, frozenset())
    return ok


class PartitionList(tuple):
    """Partitions as a narration lists them ("out-0, out-1", sorted), written only when the line is read
    (``Kernel.narrate_f`` formats it with ``%s``): joining them costs more than the rest of the line."""
    __slots__ = ()

    def __str__(self) -> str:
        return ", ".join(f"{t}-{p}" for t, p in sorted(self))


class IllegalTransition(RuntimeError):
    pass


# Not ``frozen`` (built three times per transaction; a frozen dataclass sets each field through
# ``object.__setattr__``, several times slower), but hashable like a frozen one: nothing changes it once built.
@dataclass(slots=True, unsafe_hash=True)
class TxnTransitMetadata:
    """The immutable record of one transition: what gets written to __transaction_state."""
    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int = 0


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 60_000
    state: TransactionState = S.Empty
    topic_partitions: set = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    client_transaction_version: int = 0
    pending_state: Optional[TransactionState] = None
    has_failed_epoch_fence: bool = False
    last_transition: Optional[tuple] = None      # (from, to, at ms) for pictures

    # ----------------------------------------------------------------- epochs
    @property
    def is_epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH - 1

    def is_producer_epoch_exhausted(self, epoch: int) -> bool:
        return epoch >= MAX_EPOCH - 1

    # --------------------------------------------------------------- transit
    def _transit(self, txn_state: TransactionState, now: int, changes: dict) -> TxnTransitMetadata:
        """This metadata in state ``txn_state`` updated at ``now``, with the fields in ``changes`` replaced."""
        t: TxnTransitMetadata = object.__new__(TxnTransitMetadata)     # TxnTransitMetadata(...): every field, no class call
        t.producer_id = self.producer_id
        t.previous_producer_id = self.previous_producer_id
        t.next_producer_id = self.next_producer_id
        t.producer_epoch = self.producer_epoch
        t.last_producer_epoch = self.last_producer_epoch
        t.txn_timeout_ms = self.txn_timeout_ms
        t.txn_state = txn_state
        t.topic_partitions = frozenset(self.topic_partitions)
        t.txn_start_timestamp = self.txn_start_timestamp
        t.txn_last_update_timestamp = now
        t.client_transaction_version = self.client_transaction_version
        for name, value in changes.items():     # before anyone sees it
            setattr(t, name, value)
        return t

    def prepare_transition(self, new_state: TransactionState, now: int, transaction_version: int = 0,
                           **kw) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalTransition(f"{self.transactional_id}: a transition to {self.pending_state} is still pending")
        if not is_valid_transition(self.state, new_state, transaction_version):
            raise IllegalTransition(f"{self.transactional_id}: {self.state} -> {new_state} is not a legal transition")
        self.pending_state = new_state
        return self._transit(new_state, now, kw)

    def complete_transition(self, t: TxnTransitMetadata, now: int) -> None:
        """Apply a transit record whose write is durable (Kafka's completeTransitionTo)."""
        if self.pending_state != t.txn_state and not (self.pending_state == S.PrepareEpochFence
                                                      and t.txn_state == S.PrepareAbort):
            raise IllegalTransition(f"{self.transactional_id}: completing {t.txn_state} but pending is "
                                    f"{self.pending_state}")
        old = self.state
        self.producer_id = t.producer_id
        self.previous_producer_id = t.previous_producer_id
        self.next_producer_id = t.next_producer_id
        self.producer_epoch = t.producer_epoch
        self.last_producer_epoch = t.last_producer_epoch
        self.txn_timeout_ms = t.txn_timeout_ms
        self.state = t.txn_state
        self.topic_partitions = set(t.topic_partitions)
        self.txn_start_timestamp = t.txn_start_timestamp
        self.txn_last_update_timestamp = t.txn_last_update_timestamp
        self.client_transaction_version = t.client_transaction_version
        self.pending_state = None
        self.last_transition = (old, t.txn_state, now)

    def prepare_fence_producer_epoch(self, transaction_version: int = 0) -> None:
        """Ongoing -> (pending) PrepareEpochFence, with the epoch bumped once (not again after a failed fence).  With
        transaction.version 2 the epoch is left as it is: Kafka 4.1's endTransaction (TV2, isEpochFence) lets
        prepareAbortOrCommit bump it in the PrepareAbort it writes; the TV1 path sets it here, before the write."""
        if self.producer_epoch >= MAX_EPOCH:
            raise IllegalTransition(f"{self.transactional_id}: cannot fence at epoch {self.producer_epoch}")
        if transaction_version >= 2:
            self.pending_state = S.PrepareEpochFence
            return
        if not self.has_failed_epoch_fence:
            self.producer_epoch += 1
        self.pending_state = S.PrepareEpochFence
        self.last_producer_epoch = NO_PRODUCER_EPOCH

    def describe(self) -> dict:
        return {
            "transactional_id": self.transactional_id,
            "state": self.state.name,
            "pending_state": self.pending_state.name if self.pending_state is not None else None,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "last_producer_epoch": self.last_producer_epoch,
            "previous_producer_id": self.previous_producer_id,
            "transaction_timeout_ms": self.txn_timeout_ms,
            "partitions": sorted(self.topic_partitions),
            "transaction_start_ms": self.txn_start_timestamp,
            "last_update_ms": self.txn_last_update_timestamp,
            "last_transition": None if self.last_transition is None else
            (self.last_transition[0].name, self.last_transition[1].name, self.last_transition[2]),
        }


def from_transit(transactional_id: str, t: TxnTransitMetadata) -> TransactionMetadata:
    """Build cache metadata from a loaded record (lastProducerEpoch is not persisted)."""
    return TransactionMetadata(
        transactional_id=transactional_id, producer_id=t.producer_id,
        previous_producer_id=t.previous_producer_id, next_producer_id=t.next_producer_id,
        producer_epoch=t.producer_epoch, last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_timeout_ms=t.txn_timeout_ms, state=t.txn_state, topic_partitions=set(t.topic_partitions),
        txn_start_timestamp=t.txn_start_timestamp, txn_last_update_timestamp=t.txn_last_update_timestamp,
        client_transaction_version=t.client_transaction_version)


__all__ = ["TransactionState", "TransactionMetadata", "TxnTransitMetadata", "VALID_PREVIOUS_STATES",
           "TV2_EXTRA_PREVIOUS_STATES", "is_valid_transition", "IllegalTransition", "from_transit", "replace"]
