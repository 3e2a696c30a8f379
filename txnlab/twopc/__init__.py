"""Classic two-phase commit (2PC) on txnlab's deterministic kernel, for comparison with Kafka's transactions.

A coordinator with a durable log and participants that vote (PREPARE / VOTE_COMMIT / VOTE_ABORT /
GLOBAL_COMMIT / GLOBAL_ABORT / ACK).  It shows what the seeds contrast with Kafka: a prepared
participant holds its locks and cannot decide alone, so when the one coordinator crashes after the
votes, the participants are blocked until it comes back and reads its log; Kafka's coordinator
writes PrepareCommit to a replicated log, and another broker finishes the transaction.

    from txnlab.twopc import TwoPhaseCommitLab
    lab = TwoPhaseCommitLab({"bank-a": {"alice": 100}, "bank-b": {"bob": 20}}, seed=1)
    lab.run_transaction("T1", {"bank-a": {"alice": -30}, "bank-b": {"bob": +30}})
"""
from .coordinator import CoordinatorState, TwoPhaseCommitCoordinator
from .lab import TwoPhaseCommitLab
from .log import DurableLog, LogRecord
from .participant import KeyLocked, Participant, ParticipantState
from .protocol import Ack, DecisionRequest, GlobalAbort, GlobalCommit, Prepare, VoteAbort, VoteCommit

__all__ = ["CoordinatorState", "TwoPhaseCommitCoordinator", "TwoPhaseCommitLab", "DurableLog", "LogRecord",
           "KeyLocked", "Participant", "ParticipantState", "Ack", "DecisionRequest", "GlobalAbort", "GlobalCommit",
           "Prepare", "VoteAbort", "VoteCommit"]
