"""Scenarios on three brokers (transaction.version 1), with broker processes killed: the coordinator's
mid-commit, a partition leader's mid-transaction, an idempotent producer's leader under load."""
from __future__ import annotations

from .harness import in_transaction, new_topic, produce, scenario, txn_producer


@scenario("three")
def tv1_commit_and_abort(b, o):
    t, tid = new_topic(b, "tv1"), b.unique("tx")
    p = txn_producer(b, tid)
    o.call("init", p.init_transactions, 30)
    for i, end in enumerate((p.commit_transaction, p.abort_transaction, p.commit_transaction)):
        p.begin_transaction()
        produce(p, t, [f"t{i}"])
        o.call(f"end{i}", end, 30)
        o.transactions(f"after{i}", tid)
    o.read_both("log", t)
    o.producers("producers", t)


@scenario("three")
def tv1_zombie_fenced(b, o):
    t, tid = new_topic(b, "tv1z"), b.unique("tx")
    zombie = in_transaction(b, tid)
    produce(zombie, t, ["z"])
    fresh = txn_producer(b, tid)
    o.call("fresh.init", fresh.init_transactions, 30)
    o.call("zombie.commit", zombie.commit_transaction, 30)
    o.transactions("describe", tid)
    o.read("log", t, isolation="read_uncommitted")


@scenario("three")
def tv1_transaction_timeout_fences(b, o):
    """transaction.version 1: the coordinator aborts a transaction older than transaction.timeout.ms and bumps
    the epoch; the producer's next call is fenced."""
    t, tid = new_topic(b, "tv1to"), b.unique("tx")
    p = in_transaction(b, tid, **{"transaction.timeout.ms": 2000})
    produce(p, t, ["slow"])
    b.sleep(5)
    o.transactions("describe", tid)
    o.read_both("expired", t)
    o.call("commit", p.commit_transaction, 30)
    o.call("abort", p.abort_transaction, 30)


def _commit_across_coordinator_loss(b, o, prefix: str, lose, stopped: bool) -> None:
    """A transaction open on two partitions; its coordinator's broker is lost (``lose``: killed, or stopped by an
    operator), the commit goes through the new coordinator, the broker comes back and a next transaction commits."""
    t, tid = new_topic(b, prefix, 2), b.unique("tx")
    p = in_transaction(b, tid)
    produce(p, t, ["a0", "a1"], partition=0)
    produce(p, t, ["b0"], partition=1)
    coordinator = b.coordinator(tid)
    lose(coordinator)
    if stopped:         # (a controlled shutdown moved the coordinator before the broker exited)
        o["moved"] = b.coordinator(tid) not in (coordinator, -1)
    o.call("commit", p.commit_transaction, 60)
    o.transactions("after", tid)
    for part in range(2):
        o.read(f"p{part}", t, part)
    b.restart(coordinator)
    o.call("next.begin", p.begin_transaction)
    produce(p, t, ["c0"])
    o.call("next.commit", p.commit_transaction, 60)
    o.read("final", t, 0)


@scenario("three")
def coordinator_killed_mid_commit(b, o):
    _commit_across_coordinator_loss(b, o, "cfail", b.kill, stopped=False)


@scenario("three")
def coordinator_stopped_mid_transaction(b, o):
    """An operator stops the coordinator's broker (a controlled shutdown: the controller moves its leaderships
    first) while a transaction is open on two partitions."""
    _commit_across_coordinator_loss(b, o, "cstop", b.stop, stopped=True)


@scenario("three")
def leader_stopped_mid_transaction(b, o):
    """An operator stops a partition's leader in the middle of a transaction: leadership moves before the broker
    exits, the next records go to the new leader without a failed delivery, and the commit holds them all."""
    t, tid = new_topic(b, "lstop"), b.unique("tx")
    p = in_transaction(b, tid)
    produce(p, t, ["a", "b"])
    leader = b.leader(t)
    b.stop(leader)
    o["moved"] = b.leader(t) not in (leader, -1)
    reports: list = []
    produce(p, t, ["c", "d"], reports=reports)
    o["delivery.after_stop"] = reports
    o.call("commit", p.commit_transaction, 60)
    o.read_both("log", t)
    b.restart(leader)


@scenario("three")
def leader_killed_mid_transaction(b, o):
    t, tid = new_topic(b, "lfail"), b.unique("tx")
    p = in_transaction(b, tid)
    produce(p, t, ["a", "b"])
    leader = b.leader(t)
    b.kill(leader)
    reports: list = []
    produce(p, t, ["c", "d"], reports=reports)
    o["delivery.after_kill"] = reports
    o.call("commit", p.commit_transaction, 60)
    o.read_both("log", t)
    b.restart(leader)


@scenario("three")
def idempotent_retries_across_leader_kill(b, o):
    """Dedup of retried batches: records in flight when the leader dies are retried to the new leader; each
    record is in the log once, in order."""
    t = new_topic(b, "dedup")
    p = b.Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 0})
    reports: list = []
    produce(p, t, [f"r{i}" for i in range(5)], reports=reports)
    leader = b.leader(t)
    for i in range(5, 10):
        p.produce(t, value=f"r{i}".encode(), partition=0,
                  on_delivery=lambda err, msg: reports.append(msg.offset() if err is None else str(err)))
    b.kill(leader)
    p.flush(60)
    o["delivery.offsets"] = sorted(r for r in reports if isinstance(r, int))
    o["delivery.errors"] = [r for r in reports if not isinstance(r, int)]
    values = [v for _, v in o.read("log", t, isolation="read_uncommitted")]
    o["log.duplicates"] = len(values) - len(set(values))
    b.restart(leader)

