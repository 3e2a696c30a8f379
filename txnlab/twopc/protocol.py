"""Classic two-phase commit's messages (the textbook protocol, Tanenbaum's names; PREPARE is the vote request).

Phase 1: the coordinator sends PREPARE; each participant answers VOTE_COMMIT (it has made its writes
durable and holds its locks: it is now *prepared*, and may no longer decide alone) or VOTE_ABORT.
Phase 2: GLOBAL_COMMIT if every vote was VOTE_COMMIT, else GLOBAL_ABORT; participants ACK.
DECISION_REQUEST is a prepared participant asking for the outcome it waits for (the termination
protocol: it asks the coordinator, and other participants).  Every message is one-way.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Prepare:
    API = "PREPARE"
    tx_id: str
    writes: tuple            # ((key, delta), ...) for this participant
    participants: tuple      # every participant of the transaction (for the termination protocol)

    def describe(self) -> str:
        return f"{self.tx_id}: " + ", ".join(f"{k} {d:+d}" for k, d in self.writes)


@dataclass(frozen=True)
class VoteCommit:
    API = "VOTE_COMMIT"
    tx_id: str
    participant: str

    def describe(self) -> str:
        return f"{self.tx_id}: {self.participant} is prepared"


@dataclass(frozen=True)
class VoteAbort:
    API = "VOTE_ABORT"
    tx_id: str
    participant: str
    reason: str = ""

    def describe(self) -> str:
        return f"{self.tx_id}: {self.participant} refuses ({self.reason})"


@dataclass(frozen=True)
class GlobalCommit:
    API = "GLOBAL_COMMIT"
    tx_id: str

    def describe(self) -> str:
        return self.tx_id


@dataclass(frozen=True)
class GlobalAbort:
    API = "GLOBAL_ABORT"
    tx_id: str

    def describe(self) -> str:
        return self.tx_id


@dataclass(frozen=True)
class Ack:
    API = "ACK"
    tx_id: str
    participant: str

    def describe(self) -> str:
        return f"{self.tx_id} from {self.participant}"


@dataclass(frozen=True)
class DecisionRequest:
    API = "DECISION_REQUEST"
    tx_id: str
    participant: str

    def describe(self) -> str:
        return f"{self.participant} asks the outcome of {self.tx_id}"


ALL_APIS = frozenset(c.API for c in (Prepare, VoteCommit, VoteAbort, GlobalCommit, GlobalAbort, Ack, DecisionRequest))
