"""The simulation workloads: what the client processes do, and what must hold at the end.

Owns ``Workload`` (topics, processes, the final read, the checks) and the four
workloads of the sweep:

* ``copier`` -- Kafka's ``transactions_test.py``: a transactional feeder writes the
  input (some transactions aborted); one ``TransactionalMessageCopier`` per input
  partition consumes read_committed, copies each batch in a transaction with its
  consumed offsets, aborts about one batch in four and rewinds to the committed
  offsets; a concurrent read_committed reader watches the output.  The output must
  be the committed input exactly once, in agreement with the committed offsets.
* ``bank-transfer`` -- tellers move money between accounts (one partition each);
  every transfer is a debit and a credit in one transaction; read_committed readers
  must always find the total conserved and never half a transfer.
* ``multi-partition-atomic`` -- each transaction writes one record to several
  partitions; a read_committed reader sees all of a transaction or none of it.
* ``group-rebalance`` -- ``group_mode_transactions_test.py``: copiers subscribe to the
  input as one consumer group (KIP-447: the group generation fences zombies),
  members come and go, partitions move; exactly once must survive the rebalances.
"""
from __future__ import annotations

from typing import Iterator

from ..check import (CheckResult, check, check_atomic, check_bank, check_copy, check_fencing, check_offsets,
                     final_values)
from ..check.history import key_of
from ..client.message import TopicPartition
from ..errors import KafkaException
from .clientops import (ABORTED, COMMITTED, DEAD, committed_positions, consume, final_read, poll_mops,
                        record_committed_offsets, transact)

WORKLOADS: dict = {}


def workload(cls):
    WORKLOADS[cls.name] = cls
    return cls


class Workload:
    name = ""
    topics: dict = {}                 # topic -> partitions
    horizon_ms = 3_000                # faults are placed in [0, horizon) (set from the size)
    deadline_ms = 120_000             # the run gives up (stuck) after this much simulated time

    def __init__(self, records: int = 100, mutations: tuple = ()) -> None:
        self.records = records
        self.mutations = set(mutations)
        self.state: dict = {}
        # faults land while the workload runs: its length grows with the records
        self.horizon_ms = 1_000 + 20 * records
        self.batch = max(2, min(20, records // 5))      # records per feeder transaction, at most
        self.deadline_ms = max(120_000, 60_000 + 100 * records)

    # what the fault plan may target
    def client_processes(self) -> list:
        return []

    def transactional_ids(self) -> list:
        return []

    def start(self, rt) -> None:
        raise NotImplementedError

    def finish(self, cluster, history) -> None:
        final_read(cluster, history, sorted(self.topics))

    def check(self, history) -> CheckResult:
        return check(history).merge(check_fencing(history))


def _reader(topic: str, partitions: int):
    """A concurrent read_committed reader of ``topic`` (records every poll), until the workers are done."""
    def run(ctx) -> Iterator:
        c = ctx.consumer()
        tps = [TopicPartition(topic, i, 0) for i in range(partitions)]
        c.assign(tps)
        ctx.record("assign", [["seek", key_of(topic, i), 0] for i in range(partitions)])
        while not ctx.rt.workers_done():
            start = ctx.now
            msgs = consume(ctx, c, 200, 0.05)
            if msgs:
                ctx.record("poll", poll_mops(msgs), start=start)
            yield
        c.close()
    return run


# ---------------------------------------------------------------------------------- copier
@workload
class Copier(Workload):
    name = "copier"
    topics = {"in": 2, "out": 2}
    group = "copier-group"

    def client_processes(self) -> list:
        return ["feeder"] + [f"copier-{i}" for i in range(self.topics["in"])]

    def transactional_ids(self) -> list:
        return self.client_processes()

    def start(self, rt) -> None:
        self.state.update(fed=0, value=0, in_max={}, in_ok={})
        rt.spawn("feeder", self.feeder)
        for i in range(self.topics["in"]):
            rt.spawn(f"copier-{i}", self.copier(i))
        rt.spawn("reader", _reader("out", self.topics["out"]), supervised=False)

    def feeder(self, ctx) -> Iterator:
        """Writes the input in transactions of 1..20 records; about one in five is aborted."""
        p = ctx.producer("feeder")
        yield from ctx.init_transactions(p, "feeder")
        while self.state["fed"] < self.records:
            n = min(self.records - self.state["fed"], ctx.rng.randint(1, self.batch))
            writes = []
            for _ in range(n):
                self.state["value"] += 1
                writes.append(("in", ctx.rng.randrange(self.topics["in"]), f"v{self.state['value']}"))
            fate = yield from transact(ctx, p, writes, "feeder", abort=ctx.rng.random() < 0.2)
            in_max, in_ok = self.state["in_max"], self.state["in_ok"]
            for m in ctx.history.ops[-1].mops:      # (Op.sends(), inlined: once per record)
                if m[0] != "send" or m[3] is None:
                    continue
                key, offset = m[1], m[3]     # the input ends no earlier than this (a copier's stop rule)
                if offset > in_max.get(key, -1):
                    in_max[key] = offset
                if fate == COMMITTED and offset > in_ok.get(key, -1):
                    in_ok[key] = offset
            if fate == COMMITTED:
                self.state["fed"] += n
            elif fate not in (ABORTED,):
                return "restart"
        self.state["feeder_done"] = True

    def copier(self, i: int):
        tid = f"copier-{i}"

        def run(ctx) -> Iterator:
            p = ctx.producer(tid)
            c = ctx.consumer(**{"group.id": self.group})
            yield from ctx.init_transactions(p, tid)
            tp = TopicPartition("in", i)
            c.assign([tp])
            yield from committed_positions(ctx, c, [tp])
            n = 0
            while True:
                msgs = consume(ctx, c, ctx.rng.randint(1, 2 * self.batch), 0.02)
                if ctx.dead:
                    return None
                if not msgs:
                    if self.state.get("feeder_done") and self._caught_up(c, tp):
                        return None
                    yield
                    continue
                n += 1
                writes = [("out", i, f"{m.value().decode()}|c{i}.{ctx.instance}.{n}") for m in msgs]
                offsets = [TopicPartition("in", i, msgs[-1].offset() + 1)]
                plain = c if "offsets-outside-txn" in self.mutations else None
                fate = yield from transact(ctx, p, writes, tid, polls=poll_mops(msgs), offsets=offsets,
                                           group_metadata=c.consumer_group_metadata(),
                                           abort=ctx.rng.random() < 0.25, plain_commit=plain)
                if fate == DEAD:
                    return None
                if fate not in (COMMITTED, ABORTED):
                    return "restart"
                if fate == ABORTED:
                    yield from committed_positions(ctx, c, [tp])
                yield
        return run

    def _caught_up(self, c, tp) -> bool:
        """Past every input record the feeder ever wrote to ``tp``, and at the partition's LSO."""
        from ..errors import KafkaException
        try:
            w = c.get_watermark_offsets(tp, timeout=2.0)
            if w is None:
                return False
            pos = c.position([tp])[0].offset
            if pos < 0:     # librdkafka: nothing returned since the assignment, which started at the committed
                committed = c.committed([tp], timeout=2.0)[0].offset     # offset, or at the log start (earliest)
                pos = committed if committed >= 0 else w[0]
        except KafkaException:
            return False
        return pos > self.state["in_max"].get(key_of(tp.topic, tp.partition), -1) and pos >= w[1]

    def finish(self, cluster, history) -> None:
        final_read(cluster, history, sorted(self.topics))
        record_committed_offsets(cluster, history, self.group, [("in", i) for i in range(self.topics["in"])])

    def check(self, history) -> CheckResult:
        r = super().check(history)
        finals = final_values(history)      # (what the final read returned, for both checks)
        r.merge(check_copy(history, "in", "out", finals=finals))
        r.merge(check_offsets(history, "in", "out", finals=finals))
        return r


# ---------------------------------------------------------------------------- group-rebalance
@workload
class GroupRebalance(Copier):
    """Copiers as members of one consumer group (subscribe); members leave and come back."""

    name = "group-rebalance"
    topics = {"in": 4, "out": 4}
    group = "rebalance-group"
    members = 3
    session_ms = 6_000

    def client_processes(self) -> list:
        return ["feeder"] + [f"member-{i}" for i in range(self.members)]

    def start(self, rt) -> None:
        self.state.update(fed=0, value=0, in_max={}, in_ok={})
        rt.spawn("feeder", self.feeder)
        for i in range(self.members):
            rt.spawn(f"member-{i}", self.member(i))
        rt.spawn("reader", _reader("out", self.topics["out"]), supervised=False)

    def member(self, i: int):
        tid = f"member-{i}"

        def run(ctx) -> Iterator:
            p = ctx.producer(tid)
            c = ctx.consumer(**{"group.id": self.group, "session.timeout.ms": self.session_ms,
                                "heartbeat.interval.ms": 1_000})
            yield from ctx.init_transactions(p, tid)
            assigned: list = []
            rebalances = [0]

            def on_assign(consumer, parts):
                assigned[:] = [TopicPartition(tp.topic, tp.partition) for tp in parts]
                rebalances[0] += 1
                ctx.record("assign", [["seek", key_of(tp.topic, tp.partition), None] for tp in parts])

            def on_revoke(consumer, parts):
                assigned[:] = []
                rebalances[0] += 1
                ctx.record("assign", [["seek", key_of(tp.topic, tp.partition), None] for tp in parts])
            c.subscribe(["in"], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
            n = 0
            leave_after = ctx.rng.randint(5, 40) if ctx.instance == 1 and i == 0 else None
            # once per instance, maybe, a pause longer than the session timeout in the middle of a transaction
            zombie_at = ctx.rng.randint(1, 24) if i == self.members - 1 and ctx.instance == 1 else None
            while True:
                before = rebalances[0]
                msgs = consume(ctx, c, ctx.rng.randint(1, 2 * self.batch), 0.02)
                if ctx.dead:
                    return None
                if rebalances[0] != before:
                    # the batch spans a rebalance: records from before it belong to the old assignment.
                    # Drop the batch and start again from the group's committed offsets.
                    if assigned:
                        yield from committed_positions(ctx, c, list(assigned))
                    yield
                    continue
                if leave_after is not None and n >= leave_after:
                    c.close()          # a member leaves; the supervisor brings it back as a new instance
                    return "restart"
                if not msgs:
                    if self.state.get("feeder_done") and self._all_caught_up(ctx, c, list(assigned)):
                        c.close()
                        return None
                    yield
                    continue
                n += 1
                by_part: dict = {}
                for m in msgs:
                    by_part[m.partition()] = m.offset() + 1
                writes = [("out", m.partition(), f"{m.value().decode()}|m{i}.{ctx.instance}.{n}") for m in msgs]
                offsets = [TopicPartition("in", part, off) for part, off in sorted(by_part.items())]
                plain = c if "offsets-outside-txn" in self.mutations else None
                fate = yield from transact(ctx, p, writes, tid, polls=poll_mops(msgs), offsets=offsets,
                                           group_metadata=c.consumer_group_metadata(),
                                           abort=ctx.rng.random() < 0.25, plain_commit=plain,
                                           pause_ms=self.session_ms + 2_000 if n == zombie_at else 0)
                if fate == DEAD:
                    return None
                if fate not in (COMMITTED, ABORTED):
                    return "restart"
                if fate == ABORTED and assigned:
                    yield from committed_positions(ctx, c, list(assigned))
                yield
        return run

    def _all_caught_up(self, ctx, c, assigned: list) -> bool:
        """This member read its partitions to their end, and the group committed every committed input
        record (the committed offset follows the last record returned, so it may stop before markers or
        aborted data at the end of a partition: compare it with the records, not with the LSO).

        The group's offsets are asked with a short timeout: the answer takes a round trip, or much longer
        when the member is between generations (its OffsetFetch waits behind its own JoinGroup, which the
        coordinator answers only when every member has rejoined; one request of a connection at a time), and
        this runtime runs one application at a time, so a long wait here holds up every other member's poll,
        hence its rejoin (seed 210225: members with nothing assigned asked with 2 s, back to back for a
        minute, and generation after generation ended in session timeouts until the deadline).  Still asking
        keeps what a real application's committed() does to a coordinator connection that died silently: the
        request times out after socket.timeout.ms and takes the connection, and the JoinGroup waiting on it,
        down (seed 210262, where a partition ate a JoinGroup answer: without the asking the member waits for
        it max.poll.interval.ms + 3 s)."""
        from ..errors import KafkaException
        if not all(self._caught_up(c, tp) for tp in assigned):
            return False
        tps = [TopicPartition("in", i) for i in range(self.topics["in"])]
        try:
            got = c.committed(tps, timeout=0.2)
        except KafkaException:
            return False
        last = self.state["in_ok"]          # the last committed input record of each partition
        return all(key_of("in", tp.partition) not in last or tp.offset > last[key_of("in", tp.partition)]
                   for tp in got)


def _transaction_loop(workload, tid: str, next_writes, credit):
    """A client process that writes ``next_writes(ctx)`` in one transaction after another (about 1 in 5
    aborted on purpose) until ``workload.records`` units are committed; ``credit(writes)`` counts a
    commit.  A fatal error ends the process; anything else unexpected restarts it."""
    def run(ctx) -> Iterator:
        p = ctx.producer(tid, **workload.producer_extra)
        yield from ctx.init_transactions(p, tid)
        while workload.state["done"] < workload.records:
            writes = next_writes(ctx)
            fate = yield from transact(ctx, p, writes, tid, abort=ctx.rng.random() < 0.2)
            if fate == COMMITTED:
                workload.state["done"] += credit(writes)
            elif fate == DEAD:
                return None
            elif fate != ABORTED:
                return "restart"
            yield
    return run


class _TransactionalWriters(Workload):
    """``workers`` client processes ``<role>-<i>``, each writing ``writes(ctx, tid)`` in one transaction after
    another (``_transaction_loop``), and an unsupervised read_committed reader of the workload's topic."""
    role = "writer"
    workers = 2
    reader = "reader"
    state_keys: tuple = ()
    producer_extra: dict = {}          # more producer settings of the transactional writers

    @property
    def topic(self) -> str:
        return next(iter(self.topics))

    def client_processes(self) -> list:
        return [f"{self.role}-{i}" for i in range(self.workers)]

    def transactional_ids(self) -> list:
        return self.client_processes()

    def start(self, rt) -> None:
        self.state.update(done=0, **{k: 0 for k in self.state_keys})
        for tid in self.client_processes():
            rt.spawn(tid, _transaction_loop(self, tid, lambda ctx, tid=tid: self.writes(ctx, tid), self.credit))
        rt.spawn(self.reader, _reader(self.topic, self.topics[self.topic]), supervised=False)

    def writes(self, ctx, tid: str) -> list:
        raise NotImplementedError

    def credit(self, writes: list) -> int:
        """How many units of ``records`` a committed transaction of these writes counts for."""
        return len(writes)


# ---------------------------------------------------------------------------- bank-transfer
@workload
class BankTransfer(_TransactionalWriters):
    name = "bank-transfer"
    topics = {"accounts": 4}
    role = "teller"
    reader = "auditor"
    state_keys = ("tx",)
    initial = 100

    def writes(self, ctx, tid: str) -> list:
        """One transfer: a debit on one account and the matching credit on another."""
        accounts = self.topics["accounts"]
        a = ctx.rng.randrange(accounts)
        b = (a + ctx.rng.randrange(1, accounts)) % accounts
        amount = ctx.rng.randint(1, 10)
        self.state["tx"] += 1
        t = f"t{self.state['tx']}"
        return [("accounts", a, f"{t}:{a}:{-amount}|{tid}.{ctx.instance}"),
                ("accounts", b, f"{t}:{b}:{amount}|{tid}.{ctx.instance}")]

    def credit(self, writes: list) -> int:
        return 1

    def check(self, history) -> CheckResult:
        r = super().check(history)
        r.merge(check_bank(history, "accounts", self.initial * self.topics["accounts"]))
        return r


# ------------------------------------------------------------------- multi-partition-atomic
@workload
class MultiPartitionAtomic(_TransactionalWriters):
    name = "multi-partition-atomic"
    topics = {"atomic": 3}
    state_keys = ("value",)

    def writes(self, ctx, tid: str) -> list:
        """A value on each of 2..all partitions, in one transaction: all or none must be visible."""
        parts = self.topics[self.topic]
        chosen = sorted(ctx.rng.sample(range(parts), ctx.rng.randint(2, parts)))
        writes = []
        for part in chosen:
            self.state["value"] += 1
            writes.append((self.topic, part, f"a{self.state['value']}"))
        return writes

    def check(self, history) -> CheckResult:
        r = super().check(history)
        r.merge(check_atomic(history, self.topic))
        return r


# ------------------------------------------------------------------------------------ mixed
@workload
class Mixed(MultiPartitionAtomic):
    """Every kind of writer and reader on the same partitions: the transactional writers of
    ``multi-partition-atomic`` (their records are the history's), a plain (not idempotent) and an idempotent
    producer interleaving records between the transactions' batches, a read_committed reader that fetches a
    few hundred bytes at a time (its fetches start inside transactions' spans, where the aborted-transaction
    index must still find the aborts that began earlier) and a read_uncommitted reader.  Only transactional
    values are recorded; the step invariants watch every fetch of every reader."""

    name = "mixed"
    topics = {"mixed": 3}
    reader = "rc-reader"
    plain_prefixes = ("p", "i")
    # one record per batch: a transaction spans several batches of a partition, with other producers' records
    # between them, so a fetch can begin inside an aborted transaction's span
    producer_extra = {"batch.num.messages": 1}

    def writes(self, ctx, tid: str) -> list:
        """2..6 records on random partitions (several on one partition, each its own batch)."""
        out = []
        for _ in range(ctx.rng.randint(2, 6)):
            self.state["value"] += 1
            out.append((self.topic, ctx.rng.randrange(self.topics[self.topic]), f"a{self.state['value']}"))
        return out

    def client_processes(self) -> list:
        return super().client_processes() + ["plain", "idempotent"]

    def transactional_ids(self) -> list:
        return [f"{self.role}-{i}" for i in range(self.workers)]

    def start(self, rt) -> None:
        self.state.update(done=0, value=0)
        for tid in self.transactional_ids():
            rt.spawn(tid, _transaction_loop(self, tid, lambda ctx, tid=tid: self.writes(ctx, tid), self.credit))
        rt.spawn("plain", self._plain("p", {"enable.idempotence": False, "acks": "all"}), supervised=False)
        rt.spawn("idempotent", self._plain("i", {"enable.idempotence": True}), supervised=False)
        rt.spawn(self.reader, self._reader(**{"max.partition.fetch.bytes": 300}),
                 supervised=False)
        rt.spawn("ru-reader", self._reader(record=False, **{"isolation.level": "read_uncommitted"}),
                 supervised=False)

    def _plain(self, prefix: str, extra: dict):
        """A producer outside any transaction: a record every few ms on a random partition, until the
        transactional writers are done."""
        def run(ctx) -> Iterator:
            p = ctx.producer(None, **extra)
            n = 0
            while not ctx.rt.workers_done():
                n += 1
                try:
                    p.produce("mixed", value=f"{prefix}{ctx.instance}.{n}".encode(),
                              partition=ctx.rng.randrange(self.topics["mixed"]))
                    p.poll(0)
                except Exception:  # noqa: BLE001 - a full queue or a fatal error: this writer just stops
                    return None
                yield
            try:
                p.flush(1.0)
            except KafkaException:      # a fatal error raised at the end: the writer stops all the same
                pass
        return run

    def _reader(self, record: bool = True, **extra):
        topic, parts = "mixed", self.topics["mixed"]

        def run(ctx) -> Iterator:
            c = ctx.consumer(**extra)
            c.assign([TopicPartition(topic, i, 0) for i in range(parts)])
            if record:
                ctx.record("assign", [["seek", key_of(topic, i), 0] for i in range(parts)])
            while not ctx.rt.workers_done():
                start = ctx.now
                msgs = [m for m in consume(ctx, c, 200, 0.05) if not self._plain_value(m.value())]
                if msgs and record:
                    ctx.record("poll", poll_mops(msgs), start=start)
                yield
            c.close()
        return run

    def _plain_value(self, v) -> bool:
        return isinstance(v, bytes) and v[:1].decode() in self.plain_prefixes

    def finish(self, cluster, history) -> None:
        final_read(cluster, history, sorted(self.topics))
        op = history.ops[-1]           # the final read: the plain writers' records are not the history's
        op.mops = [m if m[0] != "poll" else [m[0], m[1], [e for e in m[2] if e[1][:1] not in self.plain_prefixes]]
                   for m in op.mops]
