"""Kafka's own anomalies of the classic transaction protocol, as a sweep meets them.

Under transaction.version < 2 a producer's next transaction keeps its epoch, so a request of an earlier
transaction that arrives late acts on it: an EndTxn ends it (KAFKA-17754), WriteTxnMarkers close it, a Produce joins
it, a TxnOffsetCommit puts its offsets in it.  KIP-890 (transaction.version 2) bumps the epoch per transaction and
refuses them.  A violation is one of these when the failing run had such a late request and the same seed and faults
under transaction.version 2, with a client that speaks it (the Java dialect), violate nothing.  The sweep's report
says so (``python -m txnlab.sweep``); ``tests/test_sim_sweep.py`` lets exactly these through under
transaction.version 0 and nothing else.
"""
from __future__ import annotations

from dataclasses import replace

from .runner import RunConfig, SeedResult, replay, run_seed

# requests of a transaction's life: arriving late, one of them may act on a later transaction of the same producer
TRANSACTION_APIS = ("Produce", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "WriteTxnMarkers")
LATE_MS = 1_000         # held on the way at least this long (a delay, or a connection's retransmissions)


def late_transaction_requests(run: SeedResult) -> list:
    """The requests of a transaction's life that reached their broker late in ``run`` (a replayed run: its trace and
    messages kept), held by a delay fault or retransmitted on a connection a partition had cut and delivered after
    the heal: [(trace entry, sent at ms)], in the order delivered."""
    messages = run.cluster.kernel.network.messages
    late = []
    for e in run.cluster.trace.events:
        if e.kind == "deliver" and not e.is_response and e.api in TRANSACTION_APIS:
            m = messages.get(e.msg_id)
            if m is not None and e.time - m.sent_at >= LATE_MS:
                late.append((e, m.sent_at))
    return late


def under_transaction_version_2(seed: int, cfg: RunConfig, schedule) -> tuple:
    """(the configuration, the result) of the same seed and faults under transaction.version 2 with the Java
    dialect."""
    tv2 = replace(cfg, transaction_version=2, dialect="java")
    return tv2, run_seed(seed, tv2, schedule=schedule)


def is_classic_anomaly(res: SeedResult) -> bool:
    """Whether the failing ``res`` is one of the classic protocol's own anomalies (see the module's docstring)."""
    cfg = res.config
    if res.ok or cfg.transaction_version >= 2 or cfg.mutation or res.error:
        return False
    run = replay(res.seed, cfg, res.schedule)
    if run.cluster is None or not late_transaction_requests(run):
        return False
    return under_transaction_version_2(res.seed, cfg, res.schedule)[1].ok
