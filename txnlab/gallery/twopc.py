"""Stories of classic two-phase commit for the stepper: a bank transfer, and the coordinator crash that blocks it.

Owns ``GALLERY`` (``txnlab.gallery.load(name)`` finds these too).  Each is a ``txnlab.gallery.Scenario``
whose ``lab`` recipe builds a ``TwoPhaseCommitLab`` (the coordinator, bank-a with alice's account and
bank-b with bob's) and whose ``run`` is the application and the operator: alice pays bob 30 in
transaction T1, the application waits up to 30 s for the outcome, and an operator who finds the
coordinator down restarts it.  Written so that a fault a person adds from a stepper (crash the
coordinator, a participant, drop a vote) still lets the story end.  Pure engine: no widgets here.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from .moments import KeyMoment, fault, narrated
from .scenario import Scenario, expect
from ..twopc.lab import TwoPhaseCommitLab
from ..twopc.participant import KeyLocked, ParticipantState

ACCOUNTS = {"bank-a": {"alice": 100}, "bank-b": {"bob": 20}}
TRANSFER = {"bank-a": {"alice": -30}, "bank-b": {"bob": +30}}      # alice pays bob 30
TX = "T1"
WAIT_MS = 30_000


def bank_lab(seed: int = 0, config: Optional[dict] = None) -> TwoPhaseCommitLab:
    """The coordinator and two banks (2PC's defaults unless ``config`` says otherwise)."""
    return TwoPhaseCommitLab(ACCOUNTS, seed=seed, config=dict(config) if config else None)


def all_voted(lab: TwoPhaseCommitLab, tx_id: str = TX) -> bool:
    tx = lab.coordinator.txs.get(tx_id)
    return tx is not None and len(tx.votes) == len(lab.participants)


def finished(lab: TwoPhaseCommitLab, tx_id: str = TX) -> bool:
    """Every participant knows the outcome (COMMIT or ABORT) and has released its locks."""
    done = (ParticipantState.COMMIT.value, ParticipantState.ABORT.value)
    return all(p.alive and p.state_of(tx_id) in done for p in lab.participants.values())


def teller_reads(lab: TwoPhaseCommitLab, bank: str = "bank-a", account: str = "alice") -> str:
    """What a teller at ``bank`` gets when reading ``account`` now: the balance, or why not."""
    p = lab.participants[bank]
    if not p.alive:
        return f"{bank} is down"
    try:
        return str(p.read(account))
    except KeyLocked as e:
        return f"locked: {e}"


def _transfer(lab: TwoPhaseCommitLab, crash_after_votes: bool) -> dict:
    lab.begin_transaction(TX, TRANSFER)
    crashed_at = None
    if crash_after_votes:
        # Both banks voted VOTE_COMMIT (they are prepared and hold their locks); the coordinator's machine
        # dies before its decision is on its disk.
        lab.run_until(lambda: all_voted(lab) or not lab.coordinator.alive, 10_000)
        if lab.coordinator.alive:                      # a person stepping the story may have crashed it already
            crashed_at = lab.clock
            lab.crash(lab.coordinator)
    in_time = lab.run_until(lambda: finished(lab), WAIT_MS)   # the application waits up to 30 s
    waited = {"finished_in_time": in_time, "blocked": lab.blocked(TX), "locks": lab.locks(),
              "teller_reads_alice": teller_reads(lab)}
    restarted = []
    for node in [lab.coordinator, *lab.participants.values()]:
        if not node.alive:                             # the operator restarts what is down
            lab.restart(node)
            restarted.append(node.name)
    if restarted:
        lab.run_until(lambda: finished(lab), WAIT_MS)
    return {"crashed_at_ms": crashed_at, "after_30s": waited, "operator_restarted": restarted,
            "outcome": lab.outcome(TX), "states": lab.participant_states(TX), "balances": lab.balances(),
            "locks": lab.locks(), "teller_reads_alice": teller_reads(lab)}


def _plain_transfer(lab: TwoPhaseCommitLab) -> dict:
    return _transfer(lab, crash_after_votes=False)


def _crash_after_votes(lab: TwoPhaseCommitLab) -> dict:
    return _transfer(lab, crash_after_votes=True)


def _check_plain_transfer(lab: TwoPhaseCommitLab, r: dict, variant: str) -> None:
    expect(r["outcome"] == "COMMIT" and r["after_30s"]["finished_in_time"], f"T1 committed in time: {r}")
    expect(r["balances"] == {"bank-a": {"alice": 70}, "bank-b": {"bob": 50}}, f"alice paid bob 30: {r['balances']}")
    expect(r["locks"] == {"bank-a": {}, "bank-b": {}} and r["teller_reads_alice"] == "70", "no lock is left")
    expect([x.kind for x in lab.coordinator.log.records] == ["START_2PC", "GLOBAL_COMMIT", "END"],
           f"the coordinator's log: {lab.coordinator.log.lines()}")


def _check_crash_after_votes(lab: TwoPhaseCommitLab, r: dict, variant: str) -> None:
    w = r["after_30s"]
    expect(r["crashed_at_ms"] is not None and not w["finished_in_time"], "the coordinator crashed; T1 did not finish")
    expect(w["blocked"] == ["bank-a", "bank-b"], f"both prepared banks were blocked after 30 s: {w['blocked']}")
    expect(w["locks"] == {"bank-a": {"alice": TX}, "bank-b": {"bob": TX}} and w["teller_reads_alice"].startswith(
        "locked"), f"they held their locks all that time: {w}")
    expect(r["operator_restarted"] == ["coordinator"], f"the operator restarted the coordinator: {r}")
    expect(r["outcome"] == "ABORT" and r["states"] == {"bank-a": "ABORT", "bank-b": "ABORT"},
           f"no decision in its log: presumed abort: {r}")
    expect(r["balances"] == {"bank-a": {"alice": 100}, "bank-b": {"bob": 20}} and r["teller_reads_alice"] == "100",
           f"nothing was applied and the locks are free again: {r}")


STORY = ("The application asks the coordinator to move 30 from alice (bank-a) to bob (bank-b) in transaction "
         "T1 and waits up to 30 s for the outcome; an operator then restarts whatever is down. The coordinator "
         "forces START_2PC to its log and sends PREPARE; each bank locks the account, forces READY and votes "
         "VOTE_COMMIT (from then on it may not decide alone); the coordinator forces its decision, sends "
         "GLOBAL_COMMIT or GLOBAL_ABORT, and the banks apply it, release their locks and ACK.")

GALLERY = {sc.name: sc for sc in [
    Scenario(
        "2pc-transfer", "Two-phase commit: a bank transfer",
        STORY + " Nothing goes wrong in the story as written: crash the coordinator from the stepper after "
        "both banks voted to see it block.",
        "T1 commits within milliseconds: START_2PC, GLOBAL_COMMIT and END in the coordinator's log, alice 70, "
        "bob 50, no locks left, 8 messages (2 PREPARE, 2 VOTE_COMMIT, 2 GLOBAL_COMMIT, 2 ACK).",
        _plain_transfer, _check_plain_transfer, lab=bank_lab),
    Scenario(
        "2pc-coordinator-crash-blocks", "Two-phase commit: the coordinator crashes after the votes: blocking",
        STORY + " Here the coordinator crashes once both votes have reached it, before its decision is on its "
        "disk. Both banks are prepared: every decision.timeout.ms (2 s) each asks the coordinator (down) and "
        "the other bank (cooperative termination), which is prepared too and cannot help.",
        "For 30 s both banks are blocked and hold their locks (a teller cannot read alice's balance). The "
        "operator restarts the coordinator; its log has START_2PC T1 and no decision, so it aborts (presumed "
        "abort): alice 100, bob 20, the locks are free again only now.",
        _crash_after_votes, _check_crash_after_votes, lab=bank_lab),
]}

# the key moments (Stepper(name, at=id)): predicates over the lab's trace, never step numbers
_PREPARED = KeyMoment("prepared", "Both banks forced READY and voted VOTE_COMMIT: from now on they may not decide alone",
                      narrated("bank-b: log force READY T1"))
GALLERY["2pc-transfer"] = replace(GALLERY["2pc-transfer"], moments=(
    _PREPARED,
    KeyMoment("decision", "The coordinator forces GLOBAL_COMMIT to its log: the transfer is decided",
              narrated("coordinator: log force GLOBAL_COMMIT T1")),
    KeyMoment("applied", "Both banks applied the commit and released their locks", narrated("bank-b: log force COMMIT T1"))))
GALLERY["2pc-coordinator-crash-blocks"] = replace(GALLERY["2pc-coordinator-crash-blocks"], moments=(
    _PREPARED,
    KeyMoment("coordinator-crash", "The coordinator crashes before its decision is on its disk", fault("crash")),
    KeyMoment("blocked", "The prepared banks ask for the decision again and again: blocked, holding their locks",
              narrated("DECISION_REQUEST")),
    KeyMoment("presumed-abort", "Restarted, the coordinator finds no decision in its log: GLOBAL_ABORT (presumed abort)",
              narrated("coordinator: log force GLOBAL_ABORT T1"))))
