"""``TwoPhaseCommitLab``: one coordinator and its participants on a deterministic kernel, with faults.

Owns construction (participants with their accounts; config keys log.force.ms, vote.timeout.ms,
decision.timeout.ms, decision.retry.ms, cooperative.termination), starting a transaction (a bank
transfer: writes per participant), the faults of ``txnlab.kernel.lab.Lab`` (crash and restart the
coordinator or a participant, drop the next GLOBAL_COMMIT, pause, partitions) and the views that
pictures and tests read: the outcome in the coordinator's log, each participant's state, locks and
balances, and which participants are blocked.
"""
from __future__ import annotations

from typing import Optional

from ..kernel.lab import Lab
from .coordinator import TwoPhaseCommitCoordinator
from .participant import Participant, ParticipantState
from .protocol import ALL_APIS


class TwoPhaseCommitLab(Lab):
    APIS = ALL_APIS

    def __init__(self, participants: dict, seed: int = 0, config: Optional[dict] = None,
                 latency_ms: int = 1, jitter_ms: int = 0) -> None:
        super().__init__(seed, latency_ms, jitter_ms)
        if not participants:
            raise ValueError("two-phase commit needs at least one participant")
        self.coordinator = TwoPhaseCommitCoordinator(self.kernel, "coordinator", config)
        self.participants = {name: Participant(self.kernel, name, data, config)
                             for name, data in participants.items()}

    def begin_transaction(self, tx_id: str, writes: dict) -> None:
        """The application asks the coordinator to run ``tx_id``: writes = {participant: {key: delta}}."""
        unknown = [p for p in writes if p not in self.participants]
        if unknown:
            raise KeyError(f"no participant {unknown[0]!r}; participants are {sorted(self.participants)}")
        self.kernel.begin_step("call", "coordinator", f"the application asks the coordinator to run {tx_id}: "
                               + "; ".join(f"{p}: {w}" for p, w in sorted(writes.items())))
        self.coordinator.begin(tx_id, writes)

    def run_transaction(self, tx_id: str, writes: dict) -> Optional[str]:
        self.begin_transaction(tx_id, writes)
        self.run_until_idle()
        return self.outcome(tx_id)

    # ------------------------------------------------------------------ views
    def outcome(self, tx_id: str) -> Optional[str]:
        """COMMIT or ABORT once the coordinator's decision is on its disk, else None."""
        return self.coordinator.outcome(tx_id)

    def participant_states(self, tx_id: str) -> dict:
        return {n: p.state_of(tx_id) for n, p in sorted(self.participants.items())}

    def blocked(self, tx_id: str) -> list[str]:
        """Participants that are prepared and still do not know the outcome (alive or not)."""
        out = []
        for n, p in sorted(self.participants.items()):
            tx = p.txs.get(tx_id)
            in_doubt = tx is not None and tx.state == ParticipantState.READY
            if not p.alive:
                kinds = {r.kind for r in p.log.of(tx_id)}
                in_doubt = "READY" in kinds and not kinds & {"COMMIT", "ABORT"}
            if in_doubt:
                out.append(n)
        return out

    def tx_ids(self) -> list[str]:
        """Every transaction the coordinator or a participant has heard of, in the order first seen."""
        seen: dict = {}
        for tx_id in self.coordinator.log.tx_ids() + list(self.coordinator.txs):
            seen.setdefault(tx_id, None)
        for p in self.participants.values():
            for tx_id in p.log.tx_ids() + list(p.txs):
                seen.setdefault(tx_id, None)
        return list(seen)

    def summary(self) -> dict:
        """What the run ended with: each transaction's decision in the coordinator's log and each
        participant's state, who is blocked, then every participant's data and locks."""
        out: dict = {}
        for tx_id in self.tx_ids():
            out[f"{tx_id}: coordinator's log"] = self.outcome(tx_id) or "no decision"
            for n, state in self.participant_states(tx_id).items():
                out[f"{tx_id}: {n}"] = state or "-"
            out[f"{tx_id}: blocked"] = self.blocked(tx_id)
        for n, data in self.balances().items():
            out[f"{n}: data"] = data
        for n, locks in self.locks().items():
            out[f"{n}: locks"] = locks
        return out

    def balances(self) -> dict:
        return {n: dict(p.data) for n, p in sorted(self.participants.items())}

    def locks(self) -> dict:
        return {n: dict(p.locks) for n, p in sorted(self.participants.items())}
