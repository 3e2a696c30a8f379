"""Client operations shared by the simulation workloads, each recorded into the history as it happens.

Owns ``transact`` (one transaction as a well-behaved application runs it:
begin, produce, optionally send the consumed offsets, commit or abort; abortable
errors abort, fatal errors end the instance, commit timeouts are retried because
a commit's outcome is only known when it returns), ``poll_mops`` (a consume()
batch as poll micro-operations), and ``final_read`` (read every partition of some
topics to its end with a fresh read_committed consumer).

The helpers here read a ``Message``'s fields directly (``msg._offset`` for ``msg.offset()``): they run once or
more per consumed or produced record of every seed, where a Python call per field was ~2 % of a seed's
instructions.  The workloads themselves use the client's public API.
"""
from __future__ import annotations

from typing import Iterator, Optional

from ..check.history import FAIL, INFO, OK, key_of
from ..client.message import TopicPartition
from ..client.transaction_manager import State
from ..errors import KafkaException

# What transact() returns: the transaction's fate as the application saw it.
COMMITTED, ABORTED, UNKNOWN, FATAL, DEAD = "committed", "aborted", "unknown", "fatal", "dead"


def poll_mops(msgs) -> list:
    """Group a consume() batch into ["poll", key, [[offset, value], ...]] micro-ops (key order of first arrival)."""
    per: dict = {}            # (topic, partition) -> entries; its key written once per partition
    topic = partition = es = None
    for msg in msgs:
        if msg._error is not None:
            continue
        if msg._partition != partition or msg._topic != topic:     # (a consume() returns partition by partition)
            topic, partition = msg._topic, msg._partition
            es = per.get((topic, partition))
            if es is None:
                es = per[(topic, partition)] = []
        v = msg._value
        es.append([msg._offset, v.decode() if isinstance(v, bytes) else v])
    return [["poll", key_of(t, p), es] for (t, p), es in per.items()]


def consume(ctx, c, n: int, timeout: float) -> list:
    """consume() that tolerates transient errors; returns messages without errors."""
    try:
        msgs = c.consume(n, timeout)
    except KafkaException:
        if ctx.dead:
            raise
        return []
    return [m for m in msgs if m._error is None]


def transact(ctx, p, writes: list, tid: str, polls: Optional[list] = None, offsets: Optional[list] = None,
             group_metadata=None, abort: bool = False, plain_commit=None, pause_ms: int = 0) -> Iterator:
    """Generator: run one transaction of ``writes`` [(topic, partition, value)]; returns its fate.

    ``offsets`` (TopicPartition list) go into the transaction with send_offsets_to_transaction, unless
    ``plain_commit`` (a consumer) is given: then they are committed outside it (the offsets-outside-txn
    mutation).  ``pause_ms``: the whole process (its heartbeats too) stops for that long after producing,
    before the offsets go in (a GC pause at the worst moment: a group member comes back as a zombie of an older
    generation, which KIP-447's generation check must fence).  The op is recorded: ok if committed, fail if
    certainly not, info if unknown."""
    start = ctx.now
    sends: list = []
    attrs = {"transactional_id": tid, "instance": ctx.instance}
    if offsets:
        attrs["offsets"] = {key_of(tp.topic, tp.partition): tp.offset for tp in offsets}
        attrs["group"] = group_metadata.group_id if group_metadata is not None else None
    state = {"commit_invoked": False}

    def record(outcome: str) -> None:
        mops = list(polls or []) + [["send", k, v, box[0]] for k, v, box in sends]
        ctx.record("txn", mops, outcome, start, **attrs)

    def undecided() -> str:
        return INFO if state["commit_invoked"] else FAIL
    try:
        p.begin_transaction()
        keys: dict = {}           # (topic, partition) -> its key, written once per transaction
        for topic, partition, value in writes:
            box = [None]

            def delivered(err, msg, box=box):
                if err is None:
                    offset = msg._offset
                    if offset >= 0:
                        box[0] = offset
            p.produce(topic, value=value, partition=partition, on_delivery=delivered)
            key = keys.get((topic, partition))
            if key is None:
                key = keys[(topic, partition)] = key_of(topic, partition)
            sends.append((key, value, box))
        yield
        if pause_ms and ctx.rt.stall(ctx.name, pause_ms, replace=False):
            yield
        if offsets:
            if plain_commit is not None:
                plain_commit.commit(offsets=offsets, asynchronous=False)
            else:
                p.send_offsets_to_transaction(offsets, group_metadata, 10.0)
        if abort:
            p.abort_transaction(10.0)
            record(FAIL)
            return ABORTED
        state["commit_invoked"] = True
        attrs["commit_at"] = ctx.now
        for attempt in range(6):
            try:
                p.commit_transaction(10.0)
                break
            except KafkaException as e:
                if ctx.dead or not e.args[0].retriable() or attempt == 5:
                    raise
            yield
            if p.transaction_manager.state == State.READY:
                break       # the commit completed while we were away (librdkafka: COMMIT_NOT_ACKED)
        record(OK)
        return COMMITTED
    except GeneratorExit:
        record(undecided())
        raise
    except KafkaException as e:
        err = e.args[0]
        if ctx.dead:
            record(undecided())
            return DEAD
        if err.txn_requires_abort() and not err.fatal():
            try:
                p.abort_transaction(10.0)
            except KafkaException:
                record(FAIL)
                return FATAL
            record(FAIL)
            return ABORTED
        record(undecided())
        return FATAL


def committed_positions(ctx, c, tps: list) -> Iterator:
    """Generator: the group's committed offsets for ``tps``; seeks the consumer there and records it."""
    start = ctx.now
    offsets = yield from ctx.committed(c, tps)
    ctx.seek_to(c, offsets, start)
    return offsets


def final_read(cluster, history, topics: list, process: str = "final-reader", max_polls: int = 400) -> None:
    """Read every partition of ``topics`` from offset 0 to its end (read_committed); record one final-read op."""
    from ..client.consumer import Consumer

    c = Consumer({"group.id": "lab-reader", "bootstrap.servers": cluster.bootstrap, "client.id": process, "isolation.level": "read_committed",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    tps = [TopicPartition(t, p, 0) for (t, p) in sorted(cluster.controller.states) if t in topics]
    start = cluster.kernel.now
    c.assign(tps)
    mops: list = [["seek", key_of(tp.topic, tp.partition), 0] for tp in tps]
    ends = {}
    for tp in tps:
        w = None
        for _attempt in range(6):           # a leader may still be moving: ask again
            try:
                w = c.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=5.0)
            except KafkaException:
                w = None
            if w:
                break
        ends[(tp.topic, tp.partition)] = w[1] if w else -1
    empty = 0
    for _ in range(max_polls):
        try:
            msgs = c.consume(500, 0.05)
        except KafkaException:
            msgs = []
        msgs = [m for m in msgs if m._error is None]
        mops.extend(poll_mops(msgs))
        if msgs:
            empty = 0
            continue
        empty += 1
        pos = {(tp.topic, tp.partition): tp.offset for tp in c.position(tps)}
        caught_up = all(e == 0 or (e > 0 and pos.get(k, -1) >= e) for k, e in ends.items())
        if caught_up or empty >= 40:
            break
    history.add(process, "final-read", mops, OK, start, cluster.kernel.now)
    c.close()
    history.attrs["final_keys"] = sorted(set(history.attrs.get("final_keys", [])) |
                                         {key_of(tp.topic, tp.partition) for tp in tps})


def record_committed_offsets(cluster, history, group: str, tps: list) -> None:
    """Record the group's committed offsets (read with a fresh consumer of that group)."""
    from ..client.consumer import Consumer

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "client.id": f"offsets-of-{group}", "group.id": group,
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    start = cluster.kernel.now
    try:
        got = c.committed([TopicPartition(t, p) for t, p in tps], timeout=10.0)
        offsets = {key_of(tp.topic, tp.partition): tp.offset for tp in got}
        history.add(f"offsets-of-{group}", "committed-offsets", [], OK, start, cluster.kernel.now, offsets=offsets)
    except KafkaException:
        pass
    c.close()


__all__ = ["transact", "poll_mops", "consume", "final_read", "committed_positions", "record_committed_offsets",
           "COMMITTED", "ABORTED", "UNKNOWN", "FATAL", "DEAD", "OK", "FAIL", "INFO"]
