"""Kafka's ``VerificationGuard`` and ``VerificationStateEntry`` (KIP-890 part 1).

Owns the per-producer token a partition leader creates before it asks the
transaction coordinator "is this partition in your current transaction?"
(AddPartitionsToTxn with VerifyOnly). The first transactional append of a
transaction is only accepted with the very guard the leader handed out, so a
late produce that lands after an abort marker cannot open a hanging transaction.
"""
from __future__ import annotations


class VerificationGuard:
    """An identity token; two guards are equal only if they are the same object."""

    __slots__ = ("guard_id",)

    SENTINEL: "VerificationGuard"

    def __init__(self, guard_id: int):
        self.guard_id = guard_id

    def verify(self, verifying_guard: "VerificationGuard | None") -> bool:
        """Called on the stored guard with the guard a produce request carries."""
        return verifying_guard is not None and verifying_guard is not VerificationGuard.SENTINEL \
            and verifying_guard is self

    def __repr__(self) -> str:
        return "VerificationGuard(SENTINEL)" if self is VerificationGuard.SENTINEL \
            else f"VerificationGuard({self.guard_id})"


VerificationGuard.SENTINEL = VerificationGuard(0)


class VerificationStateEntry:
    """Pending verification of one producer: its guard and the lowest sequence/epoch seen."""

    __slots__ = ("timestamp", "verification_guard", "lowest_sequence", "epoch", "supports_epoch_bump")

    def __init__(self, timestamp: int, verification_guard: VerificationGuard, sequence: int,
                 epoch: int, supports_epoch_bump: bool = False):
        self.timestamp = timestamp
        self.verification_guard = verification_guard
        self.lowest_sequence = sequence
        self.epoch = epoch
        self.supports_epoch_bump = supports_epoch_bump

    def maybe_update_lowest_sequence_and_epoch(self, sequence: int, epoch: int) -> None:
        if epoch > self.epoch:
            self.epoch = epoch
            self.lowest_sequence = sequence
        elif epoch == self.epoch:
            self.lowest_sequence = min(sequence, self.lowest_sequence)

    def __repr__(self) -> str:
        return (f"VerificationStateEntry({self.verification_guard!r}, lowestSequence="
                f"{self.lowest_sequence}, epoch={self.epoch})")
