"""The explorer's scenarios: the cluster it builds, the copier it runs, and the faults it may choose.

Owns ``Scenario`` (what a scenario adds to the plain copier: its input, how the copier joins the group,
which faults and application choices the explorer may make), ``SCENARIOS``, ``SCENARIO_OF`` (the scenario
in which each mutation can show itself), ``setup(explorer)`` (the settled cluster every run starts from),
``copier(...)`` (the application: it copies the input to the output in a transaction with its consumed
offsets; an abortable error -- or its own choice to abort -- aborts and rewinds to the committed offsets, as
Kafka's TransactionalMessageCopier does; a fatal error or a crash starts a new instance) and
``outcome(...)`` (the run's end: every timeout passes, a final read, the history checker).
``explore.py`` owns the search over the choices these make.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..check import check, check_copy, check_fencing, check_offsets
from ..check.history import FAIL, INFO, OK, History
from ..client.consumer import Consumer
from ..client.message import TopicPartition
from ..client.producer import Producer
from ..cluster import MUTATIONS, Cluster
from ..errors import KafkaException
from .clientops import final_read, poll_mops, record_committed_offsets

INPUT = ("a", "b")
ABORTED_INPUT = ("x", "y")             # the "aborted-input" scenario: an aborted transaction before the input
APP_DEADLINE_MS = 90_000
SESSION_MS = 6_000                     # the group scenario's session timeout (the broker's minimum)
BAD = ("violation", "duplicate", "loss", "stuck")

# The faults a scenario may offer (``Scenario.faults``), in the order the explorer lists them:
FAULTS = {
    "drop": "a Produce, EndTxn, WriteTxnMarkers or TxnOffsetCommit request, or a Produce, EndTxn, "
            "TxnOffsetCommit or InitProducerId response, is lost",
    "crash": "the copier process crashes just before an InitProducerId, Produce, TxnOffsetCommit or EndTxn "
             "response reaches it (a new instance starts over)",
    "crash-broker": "the broker a Produce, EndTxn, WriteTxnMarkers, TxnOffsetCommit or AddPartitionsToTxn "
                    "request reached crashes just after it (back after 6 s; three brokers)",
    "delay": "a Produce request of the copier arrives 8 s late, after the copier gave up on it (5 s)",
    "stall": "the copier stops for 8 s (a GC pause) just before a Produce or AddOffsetsToTxn response reaches "
             "it: longer than its session timeout, so the group removes it",
    "blackout": "the broker a Produce request reached goes down just after it, the other two 8 s later; they "
                "come back in that order, so the first one back has missed what was written meanwhile "
                "(three brokers)",
}


@dataclass(frozen=True)
class Scenario:
    name: str
    text: str
    faults: tuple = ("drop", "crash", "crash-broker")
    abort_choice: bool = False      # the copier may choose to abort a transaction (and rewind), once per run
    group: bool = False             # the copier subscribes (a group member with a generation), else it assigns
    aborted_input: bool = False     # the input begins with an aborted transaction of two batches
    brokers: tuple = (1, 3)         # the broker counts the scenario runs with

    def describe(self) -> str:
        extra = []
        if self.abort_choice:
            extra.append("the copier may choose to abort its transaction once and rewind to the committed offsets")
        return self.text + ("; " + "; ".join(extra) if extra else "") + \
            ". Faults: " + "; ".join(FAULTS[f] for f in self.faults) + "."


SCENARIOS = {s.name: s for s in (
    Scenario("copier", "a copier (one read_committed consumer, one transactional producer) copies two committed "
             "records to two output partitions in one transaction, with its consumed offsets"),
    Scenario("rewind", "the copier of 'copier', which may abort a transaction of its own accord and then reads "
             "its group's committed offsets again (OffsetFetch with require_stable, racing the ABORT markers)",
             faults=("drop",), abort_choice=True),
    Scenario("aborted-input", "the input begins with a transaction aborted after two batches (x, y), then the two "
             "committed records; the copier's consumer fetches one batch at a time (max.partition.fetch.bytes=1), "
             "so its second fetch starts inside the aborted span", faults=("drop", "crash"), aborted_input=True),
    Scenario("group", "the copier subscribes to the input as a member of its group (KIP-447: the group's "
             "generation fences a zombie's offsets)", faults=("stall",), group=True),
    Scenario("late-produce", "the copier of 'copier', one of whose Produce requests may arrive after the "
             "request timed out", faults=("delay",)),
    Scenario("blackout", "the copier of 'copier' on three brokers; every broker may go down in turn",
             faults=("blackout",), brokers=(3,)),
)}

# the scenario each mutation can show itself in (the first listed for it is the one the explorer uses)
SCENARIO_OF = {m: "copier" for m in MUTATIONS}
SCENARIO_OF.update({"offset-fetch-unstable": "rewind", "aborted-index-from-fetch-offset": "aborted-input",
                    "no-txn-generation-check": "group", "naive-client-classic": "late-produce",
                    "unclean-election": "blackout"})


def scenario(name) -> Scenario:
    if isinstance(name, Scenario):
        return name
    if name not in SCENARIOS:
        raise ValueError(f"scenario: unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    return SCENARIOS[name]


# ------------------------------------------------------------------------------ the cluster
def setup(ex) -> Cluster:
    """The settled cluster a run starts from: topics, the input, the internal topics, the output's reader."""
    sc = ex.scenario
    config = {"transaction.state.log.num.partitions": 1, "offsets.topic.num.partitions": 1,
              "transaction.version": ex.transaction_version,
              "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1_000,
              "group.initial.rebalance.delay.ms": 0}
    if ex.brokers > 1:       # quick failure detection, as in the sweep
        config.update({"broker.session.timeout.ms": 3_000, "broker.heartbeat.interval.ms": 1_000,
                       "replica.lag.time.max.ms": 4_000})
    cluster = Cluster(brokers=ex.brokers, seed=ex.seed, config=config,
                      mutations=(ex.mutation,) if ex.mutation else ())
    topic_config = {"min.insync.replicas": 2} if ex.brokers > 1 else None
    cluster.create_topic("in", partitions=1, replication_factor=ex.brokers, config=topic_config)
    cluster.create_topic("out", partitions=2, replication_factor=ex.brokers, config=topic_config)
    if sc.aborted_input:
        s = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": "aborter", "transactional.id": "aborter",
                      "linger.ms": 0})
        s.init_transactions()
        s.begin_transaction()
        for v in ABORTED_INPUT:           # two batches: a fetch from the second one starts inside the span
            s.produce("in", value=v, partition=0)
            s.flush()
        s.abort_transaction()
    p = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": "seeder"})
    for v in INPUT:
        p.produce("in", value=v, partition=0)
    p.flush()
    # create the internal topics now, so that the explored part starts from a settled cluster
    w = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": "warmup", "transactional.id": "warmup"})
    w.init_transactions()
    wc = Consumer({"bootstrap.servers": cluster.bootstrap, "client.id": "warmup-c", "group.id": "warmup"})
    wc.committed([TopicPartition("in", 0)])
    wc.close()
    if ex.brokers > 1:
        # a read_committed reader of the output, fetching on its own while the copier works (its fetches
        # are what the step invariants check against the HW and the LSO)
        r = Consumer({"bootstrap.servers": cluster.bootstrap, "client.id": "reader", "group.id": "reader",
                      "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
        r.assign([TopicPartition("out", 0, 0), TopicPartition("out", 1, 0)])
        cluster.explore_reader = r
    cluster.run_until_idle()
    cluster.explore_input_end = cluster.log("in", 0).log_end_offset
    return cluster


# -------------------------------------------------------------------------------- the copier
def copier(ex, cluster, history: History, state: dict, decide) -> bool:
    """The copier, restarted as a new instance after a crash or a fatal error; True when it copied
    everything.  ``decide(what, n)`` is the explorer's choice point for the application's own choices."""
    for instance in range(1, 4 + ex.max_faults):
        try:
            if _instance(ex, cluster, history, state, instance, decide):
                return True
        except KafkaException:
            _retire(state)
        if cluster.kernel.now > APP_DEADLINE_MS:
            return False
    return False


def _retire(state: dict) -> None:
    """A failed instance leaves its group (a crashed one cannot: the group removes it after its session)."""
    if state["copier"] is None:
        return
    _p, c = state["copier"]
    if not c._closed and not c._node.crashed:
        try:
            c.close()
        except KafkaException:
            pass


def _out_partition(v: str) -> int:
    return INPUT.index(v) if v in INPUT else 0


def _instance(ex, cluster, history: History, state: dict, instance: int, decide) -> bool:
    sc = ex.scenario
    name = f"copier.{instance}"
    p = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": name, "transactional.id": "copier",
                  "transaction.timeout.ms": 10_000, "request.timeout.ms": 5_000, "linger.ms": 0,
                  # librdkafka waits socket.timeout.ms for every request, for a Produce at most what is left of
                  # its record's message.timeout.ms (10 s here): a Produce gives up after 5 s, as the Java client
                  "socket.timeout.ms": 5_000})
    conf = {"bootstrap.servers": cluster.bootstrap, "client.id": name + "-c", "group.id": "g",
            "isolation.level": "read_committed", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "request.timeout.ms": 5_000}
    if sc.aborted_input:
        conf["max.partition.fetch.bytes"] = 1          # one batch per fetch
    if sc.group:
        conf.update({"session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 1_000})
    c = Consumer(conf)
    state["copier"] = (p, c)
    proc = f"copier#{instance}"
    start = cluster.kernel.now
    p.init_transactions(30.0)
    history.add(proc, "init", [], OK, start, cluster.kernel.now, transactional_id="copier", instance=instance)
    tp = TopicPartition("in", 0)
    end = cluster.explore_input_end
    if sc.group:
        c.subscribe(["in"])
        while not c.assignment():
            c.consume(8, 0.1)                  # joins the group; what it returns is read again after the seek
            if cluster.kernel.now > APP_DEADLINE_MS:
                return False
    for attempt in range(1, 4):
        committed = max(c.committed([tp], timeout=30.0)[0].offset, 0)
        if sc.group:
            c.seek(TopicPartition("in", 0, committed))
        else:
            c.assign([TopicPartition("in", 0, committed)])
        history.add(proc, "assign", [["seek", "in-0", committed]], OK, cluster.kernel.now, cluster.kernel.now)
        if committed >= end:
            return True
        msgs: list = []
        while c.position([tp])[0].offset < end and cluster.kernel.now < APP_DEADLINE_MS:
            msgs += [m for m in c.consume(8, 0.5) if m.error() is None]
        if not msgs:
            return False
        if _transaction(ex, cluster, history, state, p, c, msgs, instance, attempt, decide):
            return True
    return False


def _transaction(ex, cluster, history, state, p, c, msgs, instance: int, attempt: int, decide) -> bool:
    """One transaction of ``msgs``: True when committed, False when aborted (the caller rewinds); a fatal
    error raises."""
    proc = f"copier#{instance}"
    start = cluster.kernel.now
    sends: list = []
    attrs = {"transactional_id": "copier", "instance": instance}
    outcome = FAIL
    try:
        try:
            p.begin_transaction()
            for m in msgs:
                v = m.value().decode()
                box = [None]
                out = f"{v}|{instance}.{attempt}"
                p.produce("out", value=out, partition=_out_partition(v),
                          on_delivery=lambda err, msg, box=box: box.__setitem__(0, msg.offset() if err is None else None))
                sends.append((f"out-{_out_partition(v)}", out, box))
            _peek(cluster)
            off = msgs[-1].offset() + 1
            attrs["offsets"] = {"in-0": off}
            attrs["group"] = "g"
            if ex.mutation == "offsets-outside-txn":     # the application's bug: offsets outside the transaction
                c.commit(offsets=[TopicPartition("in", 0, off)], asynchronous=False)
            else:
                p.send_offsets_to_transaction([TopicPartition("in", 0, off)], c.consumer_group_metadata(), 30.0)
            attrs["commit_at"] = cluster.kernel.now
            outcome = INFO
            _peek(cluster)
            if ex.scenario.abort_choice and state["aborts"] < 1 and decide("the copier commits or aborts", 2) == 1:
                state["aborts"] += 1
                p.abort_transaction(30.0)
                outcome = FAIL
                return False
            p.commit_transaction(60.0)
            outcome = OK
            _peek(cluster)
            return True
        except KafkaException as e:
            err = e.args[0]
            if not err.txn_requires_abort() or err.fatal():
                raise
            p.abort_transaction(30.0)          # an abortable error: abort, then rewind to the committed offsets
            outcome = FAIL
            return False
    finally:
        mops = poll_mops(msgs) + [["send", k, v, b[0]] for k, v, b in sends]
        history.add(proc, "txn", mops, outcome, start, cluster.kernel.now, **attrs)


def _peek(cluster) -> None:
    """The output's reader (three brokers) polls a little: its fetches go out while the copier works."""
    r = getattr(cluster, "explore_reader", None)
    if r is not None:
        for _ in range(3):
            r.poll(0.005)


# ------------------------------------------------------------------------------- the outcome
def outcome(cluster, history: History, finished: bool, quiet_at=0) -> tuple:
    """(outcome, detail, broken invariants) once every fault has played out (``quiet_at``: when the last of
    them does -- a number, or a function that says it now: a fault playing out can schedule more, as a
    blackout's last broker going down schedules its restart), every timeout has passed and a final read is
    done."""
    history.attrs["finished"] = finished
    last = quiet_at if callable(quiet_at) else (lambda: quiet_at)
    while cluster.kernel.now < last():
        cluster.advance(last() - cluster.kernel.now)
    for _ in range(40):              # let every timeout pass while a transaction is open
        if not _open(cluster):
            break
        cluster.advance(1_000)
    final_read(cluster, history, ["in", "out"])
    record_committed_offsets(cluster, history, "g", [("in", 0)])
    r = check(history).merge(check_copy(history, "in", "out")).merge(check_fencing(history))
    r.merge(check_offsets(history, "in", "out"))
    lso_stuck = [f"out-{p}" for p in (0, 1) if cluster.log("out", p).first_unstable_offset is not None]
    if r.violations:
        return "violation", r.summary() + "\n" + r.explain(examples=2), sorted(r.violations)
    if not finished or lso_stuck:
        return ("stuck", f"copier finished: {finished}; open transaction on {lso_stuck or 'no partition'}",
                ["hanging-transaction"] if lso_stuck else ["unfinished"])
    outs = Counter(v.split("|")[0] for op in history if op.f == "final-read"
                   for k, es in op.polls() if k.startswith("out") for _o, v in es)
    if any(n > 1 for n in outs.values()):
        return "duplicate", str(dict(outs)), ["duplicate"]
    if set(outs) != set(INPUT):
        return "loss", str(dict(outs)), ["lost-write"]
    redone = sum(1 for op in history if op.f == "txn" and op.outcome != OK)
    return ("exactly-once" if not redone else "exactly-once (after an abort)"), "", []


def _open(cluster) -> bool:
    st = cluster.transaction_state("copier")
    open_txn = st is not None and st["state"] not in ("Empty", "CompleteCommit", "CompleteAbort")
    return open_txn or any(cluster.log("out", p).first_unstable_offset is not None for p in (0, 1)) or \
        bool(cluster.kernel.network.in_flight())
