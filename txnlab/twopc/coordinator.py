"""The two-phase commit coordinator (the transaction manager of XA / the textbook's coordinator).

Owns the coordinator's state per transaction (INIT -> WAIT -> COMMIT | ABORT), its durable log
(START_2PC before PREPARE goes out; the decision GLOBAL_COMMIT / GLOBAL_ABORT before it is sent;
END once every participant acknowledged), the vote timeout (no vote in time -> abort: nobody has
been told to commit yet), resending the decision until it is acknowledged, and recovery: after a
restart it reads its log, sends a logged decision again, and aborts a transaction whose decision
never reached the log (presumed abort).  There is one coordinator and its log is on its own disk:
while it is down, nobody can learn a decision it alone knows.
"""
from __future__ import annotations

from enum import Enum
from typing import Optional

from ..kernel.lab import send_oneway
from ..kernel.node import Node
from .log import DurableLog, LogRecord
from .protocol import GlobalAbort, GlobalCommit, Prepare

DEFAULTS = {"log.force.ms": 2, "vote.timeout.ms": 5_000, "decision.retry.ms": 3_000,
            "decision.timeout.ms": 2_000, "cooperative.termination": True}


class CoordinatorState(Enum):
    INIT = "INIT"
    WAIT = "WAIT"          # PREPARE sent, collecting votes
    COMMIT = "COMMIT"      # GLOBAL_COMMIT is durable
    ABORT = "ABORT"        # GLOBAL_ABORT is durable
    DONE = "DONE"          # every participant acknowledged (END logged)


class CoordinatorTx:
    def __init__(self, tx_id: str, writes: dict) -> None:
        self.tx_id = tx_id
        self.writes = writes                     # participant -> {key: delta}
        self.state = CoordinatorState.INIT
        self.votes: dict[str, str] = {}
        self.acks: set[str] = set()
        self.deciding: Optional[bool] = None     # a decision whose log write is in progress
        self.vote_timer = None

    @property
    def participants(self) -> tuple:
        return tuple(sorted(self.writes))


class TwoPhaseCommitCoordinator(Node):
    restartable = True

    def __init__(self, kernel, name: str = "coordinator", config: Optional[dict] = None) -> None:
        super().__init__(kernel, name)
        self.config = {**DEFAULTS, **(config or {})}
        self.log = DurableLog()                  # the disk: survives a crash
        self.txs: dict[str, CoordinatorTx] = {}

    def narrate(self, text: str) -> None:
        self.kernel.narrate(text)

    def _force(self, rec: LogRecord, then, what: str) -> None:
        """Write a record and wait for the disk (log.force.ms); only then is it durable."""
        def durable():
            self.log.append(LogRecord(rec.tx_id, rec.kind, rec.data, self.kernel.now))
            self.narrate(f"{self.name}: {rec.kind} {rec.tx_id} is on disk")
            then()
        self.narrate(f"{self.name} forces {rec.kind} {rec.tx_id} to its log ({what})")
        self.set_timer(self.config["log.force.ms"], f"log force {rec.kind} {rec.tx_id}", durable)

    # ------------------------------------------------------------- phase 1
    def begin(self, tx_id: str, writes: dict) -> None:
        if tx_id in self.txs or self.log.of(tx_id):
            raise ValueError(f"transaction {tx_id} was already started")
        tx = self.txs[tx_id] = CoordinatorTx(tx_id, {p: dict(w) for p, w in writes.items()})
        data = tuple((p, tuple(sorted(w.items()))) for p, w in sorted(tx.writes.items()))
        self._force(LogRecord(tx_id, "START_2PC", data), lambda: self._send_prepare(tx),
                    "before asking anyone to prepare")

    def _send_prepare(self, tx: CoordinatorTx) -> None:
        tx.state = CoordinatorState.WAIT
        for p in tx.participants:
            send_oneway(self, p, Prepare(tx.tx_id, tuple(sorted(tx.writes[p].items())), tx.participants))
        self.narrate(f"{self.name}: PREPARE sent to {', '.join(tx.participants)}; waiting for their votes "
                     f"(vote.timeout.ms={self.config['vote.timeout.ms']})")
        tx.vote_timer = self.set_timer(self.config["vote.timeout.ms"], f"vote timeout {tx.tx_id}",
                                       lambda: self._vote_timeout(tx))

    def _vote_timeout(self, tx: CoordinatorTx) -> None:
        if tx.state != CoordinatorState.WAIT or tx.deciding is not None:
            return
        missing = [p for p in tx.participants if p not in tx.votes]
        self.narrate(f"{self.name}: no vote from {', '.join(missing)} within vote.timeout.ms: abort "
                     f"(allowed, since no one was told to commit)")
        self._decide(tx, False)

    def handle_request(self, msg):
        fn = getattr(self, "on_" + msg.api, None)
        if fn is not None:
            fn(msg.payload, msg.src)
        return None

    def on_VOTE_COMMIT(self, v, src) -> None:
        tx = self.txs.get(v.tx_id)
        if tx is None or tx.state != CoordinatorState.WAIT or tx.deciding is not None:
            return
        tx.votes[v.participant] = "VOTE_COMMIT"
        missing = [p for p in tx.participants if p not in tx.votes]
        if missing:
            self.narrate(f"{self.name}: {v.participant} voted to commit {v.tx_id}; still waiting for "
                         f"{', '.join(missing)}")
            return
        self.narrate(f"{self.name}: every participant voted VOTE_COMMIT: the decision is COMMIT")
        self._decide(tx, True)

    def on_VOTE_ABORT(self, v, src) -> None:
        tx = self.txs.get(v.tx_id)
        if tx is None or tx.state != CoordinatorState.WAIT or tx.deciding is not None:
            return
        tx.votes[v.participant] = "VOTE_ABORT"
        self.narrate(f"{self.name}: {v.participant} voted VOTE_ABORT ({v.reason}): one no is enough, the decision "
                     f"is ABORT")
        self._decide(tx, False)

    # ------------------------------------------------------------- phase 2
    def _decide(self, tx: CoordinatorTx, commit: bool) -> None:
        tx.deciding = commit
        self.cancel_timer(tx.vote_timer)
        kind = "GLOBAL_COMMIT" if commit else "GLOBAL_ABORT"
        self._force(LogRecord(tx.tx_id, kind), lambda: self._decided(tx, commit),
                    "the decision must be durable before anyone hears it")

    def _decided(self, tx: CoordinatorTx, commit: bool) -> None:
        tx.state = CoordinatorState.COMMIT if commit else CoordinatorState.ABORT
        self._send_decision(tx)

    def _send_decision(self, tx: CoordinatorTx, only: Optional[list] = None) -> None:
        msg = GlobalCommit(tx.tx_id) if tx.state == CoordinatorState.COMMIT else GlobalAbort(tx.tx_id)
        targets = only if only is not None else [p for p in tx.participants if p not in tx.acks]
        for p in targets:
            send_oneway(self, p, msg)
        if only is None and targets:
            self.set_timer(self.config["decision.retry.ms"], f"resend {msg.API} {tx.tx_id}",
                           lambda: self._resend(tx), background=True)

    def _resend(self, tx: CoordinatorTx) -> None:
        if tx.state in (CoordinatorState.COMMIT, CoordinatorState.ABORT):
            waiting = [p for p in tx.participants if p not in tx.acks]
            self.narrate(f"{self.name}: no ACK yet from {', '.join(waiting)}: sending the decision again")
            self._send_decision(tx)

    def on_ACK(self, a, src) -> None:
        tx = self.txs.get(a.tx_id)
        if tx is None or tx.state not in (CoordinatorState.COMMIT, CoordinatorState.ABORT):
            return
        tx.acks.add(a.participant)
        if all(p in tx.acks for p in tx.participants):
            self.log.append(LogRecord(tx.tx_id, "END", (), self.kernel.now))   # lazily written: not forced
            tx.state = CoordinatorState.DONE
            self.narrate(f"{self.name}: every participant acknowledged {tx.tx_id}: END logged, it can be forgotten")

    def on_DECISION_REQUEST(self, r, src) -> None:
        tx = self.txs.get(r.tx_id)
        if tx is None and not self.log.of(r.tx_id):
            self.narrate(f"{self.name} has no record of {r.tx_id}: presumed abort")
            send_oneway(self, src, GlobalAbort(r.tx_id))
            return
        if tx is None or tx.state in (CoordinatorState.INIT, CoordinatorState.WAIT):
            self.narrate(f"{self.name}: {r.tx_id} is not decided yet; {src} must keep waiting")
            return
        self._send_decision(tx, only=[src])

    # --------------------------------------------------------------- recovery
    def on_crash(self) -> None:
        self.txs = {}

    def on_restart(self) -> None:
        for tx_id in self.log.tx_ids():
            recs = self.log.of(tx_id)
            start = next(r for r in recs if r.kind == "START_2PC")
            tx = self.txs[tx_id] = CoordinatorTx(tx_id, {p: dict(w) for p, w in start.data})
            kinds = {r.kind for r in recs}
            if "END" in kinds:
                tx.state = CoordinatorState.DONE
            elif "GLOBAL_COMMIT" in kinds or "GLOBAL_ABORT" in kinds:
                tx.state = CoordinatorState.COMMIT if "GLOBAL_COMMIT" in kinds else CoordinatorState.ABORT
                self.narrate(f"{self.name} read its log: {tx_id} was decided {tx.state.value}; telling the "
                             f"participants again")
                self._send_decision(tx)
            else:
                tx.state = CoordinatorState.WAIT
                self.narrate(f"{self.name} read its log: START_2PC {tx_id} but no decision; the votes were lost "
                             f"with its memory, so it aborts (presumed abort)")
                self._decide(tx, False)

    # ------------------------------------------------------------------ views
    def outcome(self, tx_id: str) -> Optional[str]:
        k = self.log.last_kind(tx_id, ("GLOBAL_COMMIT", "GLOBAL_ABORT"))
        return {"GLOBAL_COMMIT": "COMMIT", "GLOBAL_ABORT": "ABORT"}.get(k) if k else None

    def state_of(self, tx_id: str) -> Optional[str]:
        tx = self.txs.get(tx_id)
        return tx.state.value if tx else None
