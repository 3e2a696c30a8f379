"""A two-phase commit participant (a resource manager: here a tiny bank ledger of accounts).

Owns the participant's states per transaction (INIT -> READY -> COMMIT | ABORT), its locks, its
durable data and log, and the rules that make 2PC block: before voting it may abort on its own; once
it voted VOTE_COMMIT (READY, "prepared") it must keep its locks and may neither commit nor abort
until it learns the decision.  While waiting it asks (DECISION_REQUEST) the coordinator and, with
cooperative termination, the other participants; a participant that has not voted yet may answer
by aborting, one that knows the outcome tells it, one that is READY too cannot help.
"""
from __future__ import annotations

from enum import Enum
from typing import Optional

from ..kernel.lab import send_oneway
from ..kernel.node import Node
from .coordinator import DEFAULTS
from .log import DurableLog, LogRecord
from .protocol import Ack, DecisionRequest, GlobalAbort, GlobalCommit, VoteAbort, VoteCommit


class ParticipantState(Enum):
    INIT = "INIT"
    READY = "READY"        # voted VOTE_COMMIT: prepared, uncertain, holding locks
    COMMIT = "COMMIT"
    ABORT = "ABORT"


class KeyLocked(Exception):
    """A read or write met a lock held by a prepared transaction."""


class ParticipantTx:
    def __init__(self, tx_id: str, writes: dict, coordinator: str, participants: tuple) -> None:
        self.tx_id = tx_id
        self.writes = writes
        self.coordinator = coordinator
        self.participants = participants
        self.state = ParticipantState.INIT
        self.ready_since: Optional[int] = None


class Participant(Node):
    restartable = True

    def __init__(self, kernel, name: str, data: dict, config: Optional[dict] = None,
                 coordinator: str = "coordinator") -> None:
        super().__init__(kernel, name)
        self.config = {**DEFAULTS, **(config or {})}
        self.coordinator = coordinator
        self.data: dict[str, int] = dict(data)   # the disk: committed values
        self.log = DurableLog()                  # the disk: READY / COMMIT / ABORT records
        self.txs: dict[str, ParticipantTx] = {}
        self.locks: dict[str, str] = {}

    def narrate(self, text: str) -> None:
        self.kernel.narrate(text)

    def _force(self, rec: LogRecord, then) -> None:
        def durable():
            self.log.append(LogRecord(rec.tx_id, rec.kind, rec.data, self.kernel.now))
            then()
        self.set_timer(self.config["log.force.ms"], f"log force {rec.kind} {rec.tx_id}", durable)

    # ----------------------------------------------------------- local access
    def read(self, key: str) -> int:
        """What a local application reads; a key locked by a prepared transaction cannot be read."""
        holder = self.locks.get(key)
        if holder is not None:
            tx = self.txs.get(holder)
            since = f" since t={tx.ready_since}ms" if tx and tx.ready_since is not None else ""
            raise KeyLocked(f"{self.name}: {key!r} is locked by {holder}, prepared{since} and waiting for the "
                            f"coordinator's decision")
        return self.data[key]

    # ---------------------------------------------------------------- phase 1
    def handle_request(self, msg):
        fn = getattr(self, "on_" + msg.api, None)
        if fn is not None:
            fn(msg.payload, msg.src)
        return None

    def on_PREPARE(self, p, src) -> None:
        tx = self.txs.get(p.tx_id)
        if tx is not None and tx.state != ParticipantState.INIT:
            vote = VoteCommit(p.tx_id, self.name) if tx.state == ParticipantState.READY else \
                VoteAbort(p.tx_id, self.name, "already aborted")
            send_oneway(self, src, vote)
            return
        tx = self.txs[p.tx_id] = ParticipantTx(p.tx_id, dict(p.writes), src, p.participants)
        reason = self._refusal(tx)
        if reason:
            tx.state = ParticipantState.ABORT
            self.log.append(LogRecord(p.tx_id, "ABORT", (), self.kernel.now))
            self.narrate(f"{self.name} cannot prepare {p.tx_id}: {reason} -> VOTE_ABORT (it may abort alone: it "
                         f"has not promised anything)")
            send_oneway(self, src, VoteAbort(p.tx_id, self.name, reason))
            return
        for k in tx.writes:
            self.locks[k] = p.tx_id
        self.narrate(f"{self.name} locks {sorted(tx.writes)} for {p.tx_id} and forces READY to its log")
        self._force(LogRecord(p.tx_id, "READY", tuple(sorted(tx.writes.items()))), lambda: self._ready(tx))

    def _refusal(self, tx: ParticipantTx) -> str:
        for k, delta in tx.writes.items():
            holder = self.locks.get(k)
            if holder is not None and holder != tx.tx_id:
                return f"{k!r} is locked by {holder}"
            if k not in self.data:
                return f"no account {k!r}"
            if self.data[k] + delta < 0:
                return f"{k!r} has {self.data[k]}, cannot apply {delta:+d}"
        return ""

    def _ready(self, tx: ParticipantTx) -> None:
        tx.state = ParticipantState.READY
        tx.ready_since = self.kernel.now
        self.narrate(f"{self.name} is prepared for {tx.tx_id}: VOTE_COMMIT. From now on it may not decide alone "
                     f"and keeps its locks until it hears the decision")
        send_oneway(self, tx.coordinator, VoteCommit(tx.tx_id, self.name))
        self._arm_decision_timer(tx)

    def _arm_decision_timer(self, tx: ParticipantTx) -> None:
        self.set_timer(self.config["decision.timeout.ms"], f"waiting for the decision on {tx.tx_id}",
                       lambda: self._ask_for_decision(tx), background=True)

    def _ask_for_decision(self, tx: ParticipantTx) -> None:
        if tx.state != ParticipantState.READY:
            return
        held = sorted(k for k, t in self.locks.items() if t == tx.tx_id)
        peers = [p for p in tx.participants if p != self.name] if self.config["cooperative.termination"] else []
        self.narrate(f"{self.name} is BLOCKED on {tx.tx_id}: prepared for {self.kernel.now - tx.ready_since}ms, "
                     f"holding locks on {held}; it asks {', '.join([tx.coordinator] + peers)} for the decision")
        cur = self.kernel.current
        if cur is not None:
            cur.background = False
        for dst in [tx.coordinator] + peers:
            send_oneway(self, dst, DecisionRequest(tx.tx_id, self.name))
        self._arm_decision_timer(tx)

    # ---------------------------------------------------------------- phase 2
    def on_GLOBAL_COMMIT(self, d, src) -> None:
        self._finish(d.tx_id, True, src)

    def on_GLOBAL_ABORT(self, d, src) -> None:
        self._finish(d.tx_id, False, src)

    def _finish(self, tx_id: str, commit: bool, src: str) -> None:
        tx = self.txs.get(tx_id)
        outcome = ParticipantState.COMMIT if commit else ParticipantState.ABORT
        if tx is None:
            tx = self.txs[tx_id] = ParticipantTx(tx_id, {}, src, ())
        if tx.state in (ParticipantState.COMMIT, ParticipantState.ABORT):
            send_oneway(self, tx.coordinator, Ack(tx_id, self.name))
            return
        kind = "COMMIT" if commit else "ABORT"

        def done():
            if commit:
                for k, delta in tx.writes.items():
                    self.data[k] += delta
            for k in [k for k, t in self.locks.items() if t == tx_id]:
                del self.locks[k]
            tx.state = outcome
            how = f"applied {dict(tx.writes)}" if commit else "discarded its writes"
            self.narrate(f"{self.name}: {kind} {tx_id} is durable; it {how} and released its locks")
            send_oneway(self, tx.coordinator, Ack(tx_id, self.name))
        self.narrate(f"{self.name} learned {kind} for {tx_id} from {src}")
        self._force(LogRecord(tx_id, kind), done)

    def on_DECISION_REQUEST(self, r, src) -> None:
        if r.participant == self.name:
            return
        tx = self.txs.get(r.tx_id)
        if tx is not None and tx.state == ParticipantState.COMMIT:
            self.narrate(f"{self.name} knows {r.tx_id} committed and tells {src}")
            send_oneway(self, src, GlobalCommit(r.tx_id))
        elif tx is not None and tx.state == ParticipantState.ABORT:
            self.narrate(f"{self.name} knows {r.tx_id} aborted and tells {src}")
            send_oneway(self, src, GlobalAbort(r.tx_id))
        elif tx is None or tx.state == ParticipantState.INIT:
            self.narrate(f"{self.name} never voted on {r.tx_id}: it aborts it and says so (the coordinator cannot "
                         f"have decided COMMIT without its vote)")
            self.txs[r.tx_id] = ParticipantTx(r.tx_id, {}, self.coordinator, ())
            self.txs[r.tx_id].state = ParticipantState.ABORT
            self.log.append(LogRecord(r.tx_id, "ABORT", (), self.kernel.now))
            send_oneway(self, src, GlobalAbort(r.tx_id))
        else:
            self.narrate(f"{self.name} is prepared for {r.tx_id} too and does not know the outcome: it cannot help "
                         f"{src}")

    # --------------------------------------------------------------- recovery
    def on_crash(self) -> None:
        self.txs = {}
        self.locks = {}

    def on_restart(self) -> None:
        for tx_id in self.log.tx_ids():
            recs = self.log.of(tx_id)
            kinds = [r.kind for r in recs]
            ready = next((r for r in recs if r.kind == "READY"), None)
            tx = self.txs[tx_id] = ParticipantTx(tx_id, dict(ready.data) if ready else {}, self.coordinator, ())
            if "COMMIT" in kinds:
                tx.state = ParticipantState.COMMIT
            elif "ABORT" in kinds:
                tx.state = ParticipantState.ABORT
            elif ready is not None:
                tx.state, tx.ready_since = ParticipantState.READY, ready.at
                for k in tx.writes:
                    self.locks[k] = tx_id
                self.narrate(f"{self.name} read its log: prepared for {tx_id} with no outcome; it takes its locks "
                             f"again and must ask for the decision")
                self._arm_decision_timer(tx)

    def state_of(self, tx_id: str) -> Optional[str]:
        tx = self.txs.get(tx_id)
        return tx.state.value if tx else None
