"""Scenarios on a single broker (transaction.version 2) about what an isolation-aware consumer sees beside its
records: watermarks from ListOffsets (the LSO for read_committed, the HW for read_uncommitted) while a
transaction is open, after it commits and after an abort; seek() into an aborted range and into an open one;
offsets_for_times() for timestamps inside aborted and open ranges; consume() across an open transaction and its
commit; when enable.partition.eof's event comes; the committed offset against the position past a marker; and
auto.offset.reset=latest while a transaction is open.

A consumer is drained until it has been idle for a while (or its partition's EOF event), and every end of a
transaction is followed by ``b.settle()`` (Kafka answers EndTxn before its markers land), so nothing observed
depends on timing.  Timestamps are taken from delivery reports (each side's own clock) and observed only as the
offsets they find."""
from __future__ import annotations

from .harness import err_sig, fill, in_transaction, new_topic, produce, scenario


def _consumer(b, isolation: str, **extra):
    return b.Consumer({"bootstrap.servers": b.bootstrap, "group.id": b.unique("c"), "isolation.level": isolation,
                       "enable.auto.commit": False, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
                       **extra})


def _assigned(b, t: str, isolation: str, offset=None, **extra):
    c = _consumer(b, isolation, **extra)
    c.assign([b.TopicPartition(t, 0, b.mod.OFFSET_BEGINNING if offset is None else offset)])
    return c


def _fetched(b, c) -> bool:
    """Whether ``c`` has had a Fetch answer for its partitions: its cached high watermark (librdkafka's, updated
    from each Fetch answer; -1001 until the first) is known.  A new consumer takes half a second or more to
    connect, look its offsets up and fetch (through the lab's listener too), longer on a loaded machine."""
    try:
        return all(c.get_watermark_offsets(tp, cached=True)[1] >= 0 for tp in c.assignment())
    except b.KafkaException:
        return True


def _drain(b, cs, rounds: int = 12, first_fetch_polls: int = 400) -> dict:
    """What poll() returns to each consumer of ``cs`` ({tag: consumer}, polled in turn) until it has found nothing
    in ``rounds`` rounds in a row (a second or so with fetch.wait.max.ms=100), or after its EOF event:
    {tag: [(offset, value), ("eof", offset), or ("error", signature)]}.  Rounds before a consumer's first Fetch
    answer are not quiet ones (at most ``first_fetch_polls`` of them: 20 s)."""
    out = {tag: [] for tag in cs}
    quiet = dict.fromkeys(cs, 0)
    waited = dict.fromkeys(cs, 0)
    while any(n < rounds for n in quiet.values()):
        for tag, c in cs.items():
            if quiet[tag] >= rounds:
                continue
            m = c.poll(0.05)
            if m is None:
                if waited[tag] < first_fetch_polls and not _fetched(b, c):
                    waited[tag] += 1
                else:
                    waited[tag] = first_fetch_polls      # fetched: from now on idle rounds count
                    quiet[tag] += 1
                continue
            quiet[tag] = 0
            if m.error():
                if m.error().code() == b.KafkaError._PARTITION_EOF:
                    out[tag].append(("eof", m.offset()))
                    quiet[tag] = rounds
                    continue
                out[tag].append(("error", err_sig(m.error())))
                continue
            out[tag].append((m.offset(), (m.value() or b"").decode()))
    return out


def _position(b, c, t: str) -> int:
    return c.position([b.TopicPartition(t, 0)])[0].offset


def _observe_drain(b, o, step: str, cs: dict, t: str) -> None:
    for tag, records in _drain(b, cs).items():
        o[f"{step}.{tag}.records"] = records
        o[f"{step}.{tag}.position"] = _position(b, cs[tag], t)


def _watermarks(b, c, t: str):
    try:
        return list(c.get_watermark_offsets(b.TopicPartition(t, 0), timeout=10, cached=False))
    except b.KafkaException as e:
        return err_sig(e)


def _offset_for_time(b, c, t: str, ts: int):
    try:
        tp = c.offsets_for_times([b.TopicPartition(t, 0, ts)], 10)[0]
    except b.KafkaException as e:
        return err_sig(e)
    return tp.offset if tp.error is None else err_sig(tp.error)


def _both(b, t: str, **extra) -> dict:
    return {"rc": _assigned(b, t, "read_committed", **extra), "ru": _assigned(b, t, "read_uncommitted", **extra)}


@scenario()
def watermarks_follow_the_lso(b, o):
    """get_watermark_offsets(cached=False) of a read_committed and a read_uncommitted consumer while a transaction
    is open (LSO at its first record, HW past it), once it commits (both past the marker), and with a second
    transaction aborted; the position each consumer ends at after reading what it may, at each step."""
    t, tid = new_topic(b, "wm"), b.unique("tx")
    fill(b, t, ["p0"])
    p = in_transaction(b, tid)
    produce(p, t, ["a1", "a2"])
    fill(b, t, ["n1"])
    cs = _both(b, t)
    for step in ("open", "committed", "aborted"):
        if step == "committed":
            o.call("commit", p.commit_transaction, 30)
            b.settle()
        elif step == "aborted":
            p.begin_transaction()
            produce(p, t, ["x1"])
            o.call("abort", p.abort_transaction, 30)
            b.settle()
        for tag, c in cs.items():
            o[f"{step}.{tag}.watermarks"] = _watermarks(b, c, t)
        _observe_drain(b, o, step, cs, t)
    for c in cs.values():
        c.close()


@scenario()
def seek_into_aborted_and_open_ranges(b, o):
    """seek() into the middle of an aborted transaction: read_committed skips the rest of it (the fetch's aborted
    transactions start before the fetch offset) and reads on past its marker, read_uncommitted returns it; seek()
    into an open transaction: read_committed returns nothing until the commit, then the rest of it."""
    t, ta, tb = new_topic(b, "seek"), b.unique("txa"), b.unique("txb")
    fill(b, t, ["p0"])                                  # 0
    pa = in_transaction(b, ta)
    produce(pa, t, ["a1", "a2", "a3"])                  # 1..3, aborted (marker 4)
    o.call("a.abort", pa.abort_transaction, 30)
    b.settle()
    fill(b, t, ["n1"])                                  # 5
    pb = in_transaction(b, tb)
    produce(pb, t, ["b1", "b2", "b3"])                  # 6..8, open
    fill(b, t, ["n2"])                                  # 9
    cs = _both(b, t)
    _observe_drain(b, o, "start", cs, t)
    for step, offset in (("seek_aborted", 2), ("seek_open", 7)):
        for tag, c in cs.items():
            o.call(f"{step}.{tag}", c.seek, b.TopicPartition(t, 0, offset))
        _observe_drain(b, o, step, cs, t)
    o.call("b.commit", pb.commit_transaction, 30)
    b.settle()
    _observe_drain(b, o, "after_commit", cs, t)
    for c in cs.values():
        c.close()


@scenario()
def offsets_for_times_in_transactions(b, o):
    """offsets_for_times() for the timestamps of records in an aborted transaction, in an open one and after it:
    ListOffsets by time does not look at transactions, except that an offset at or past the LSO is not answered to
    read_committed (-1: OFFSET_END) where read_uncommitted gets it; markers count (a time after the aborted
    transaction's last record finds its marker; MAX_TIMESTAMP, -3, finds the latest marker); a partition given
    several times in one call is asked once, with its last timestamp (librdkafka)."""
    t, ta, tb = new_topic(b, "oft"), b.unique("txa"), b.unique("txb")
    stamps: list = []

    def put(p, values) -> None:
        reports: list = []
        for v in values:
            p.produce(t, value=v.encode(), partition=0,
                      on_delivery=lambda err, msg: reports.append(msg.timestamp()[1]))
            p.flush(30)
            b.sleep(0.02)         # a millisecond apart at least: each timestamp finds its own record
        stamps.extend(reports)
    put(b.Producer({"bootstrap.servers": b.bootstrap}), ["p0"])          # 0
    pa = in_transaction(b, ta)
    put(pa, ["a1", "a2"])                                               # 1, 2, aborted (marker 3)
    o.call("a.abort", pa.abort_transaction, 30)
    b.settle()
    pb = in_transaction(b, tb)
    put(pb, ["b1"])                                                     # 4, open
    put(b.Producer({"bootstrap.servers": b.bootstrap}), ["n1"])          # 5
    # "after_a2": after the aborted transaction's last record, before what follows its marker
    asks = {"p0": stamps[0], "a1": stamps[1], "a2": stamps[2], "after_a2": stamps[2] + 1, "b1": stamps[3],
            "n1": stamps[4], "future": stamps[4] + 3_600_000}
    cs = _both(b, t)
    for tag, c in cs.items():       # one call per timestamp
        o[f"{tag}.offsets"] = {name: _offset_for_time(b, c, t, ts) for name, ts in asks.items()}
    # one call with the partition several times: librdkafka asks once, with the last entry's timestamp
    got = cs["ru"].offsets_for_times([b.TopicPartition(t, 0, ts) for ts in (asks["a1"], asks["n1"], asks["p0"])], 10)
    o["ru.one_call"] = [tp.offset if tp.error is None else err_sig(tp.error) for tp in got]
    o["max_timestamp"] = {tag: _offset_for_time(b, c, t, -3) for tag, c in cs.items()}     # KIP-734
    o.call("b.commit", pb.commit_transaction, 30)
    b.settle()
    o["rc.b1.after_commit"] = _offset_for_time(b, cs["rc"], t, asks["b1"])
    o["max_timestamp.after_commit"] = {tag: _offset_for_time(b, c, t, -3) for tag, c in cs.items()}
    for c in cs.values():
        c.close()


@scenario()
def consume_across_open_transaction(b, o):
    """consume() with a short timeout while a transaction is open returns, to read_committed, only what comes
    before it (and nothing more however often it is called); once the transaction commits, the next calls return
    its records and those written after it, in order, the marker skipped: the position goes past it, the offset
    stored for commit() stays the last record's + 1, and committed() says so."""
    t, tid = new_topic(b, "cons"), b.unique("tx")
    fill(b, t, ["p0", "p1"])
    p = in_transaction(b, tid)
    produce(p, t, ["t1", "t2", "t3"])                   # 2..4
    fill(b, t, ["n1"])                                  # 5
    c = _assigned(b, t, "read_committed", **{"enable.auto.offset.store": True})

    def batch(n: int = 10, timeout: float = 0.5) -> list:
        return [(m.offset(), m.value().decode()) if not m.error() else ("error", err_sig(m.error()))
                for m in c.consume(n, timeout)]
    seen = []
    for _ in range(4):
        seen.extend(batch())
    o["open.records"] = seen
    o["open.position"] = _position(b, c, t)
    o.call("commit", p.commit_transaction, 30)
    b.settle()
    seen = []
    for _ in range(4):
        seen.extend(batch(2))
    o["committed.records"] = seen
    o["committed.position"] = _position(b, c, t)
    o.call("commit_offsets", c.commit, asynchronous=False)
    o["committed_offset"] = [tp.offset for tp in c.committed([b.TopicPartition(t, 0)], 10)]
    # a transaction that ends the partition: the position goes past its marker, the stored offset does not
    p.begin_transaction()
    produce(p, t, ["u1"])                               # 7, marker 8
    o.call("commit2", p.commit_transaction, 30)
    b.settle()
    o["end.records"] = batch()
    o["end.position"] = _position(b, c, t)
    o.call("commit_offsets2", c.commit, asynchronous=False)
    o["end.committed_offset"] = [tp.offset for tp in c.committed([b.TopicPartition(t, 0)], 10)]
    c.close()


@scenario()
def partition_eof_at_the_lso(b, o):
    """enable.partition.eof: read_committed's EOF event comes at the LSO while a transaction is open (records
    after the transaction wait), read_uncommitted's at the HW; once the transaction commits, each comes once more,
    past the marker; an abort moves both past its marker too, with no record for read_committed."""
    t, tid = new_topic(b, "eof"), b.unique("tx")
    fill(b, t, ["p0"])
    p = in_transaction(b, tid)
    produce(p, t, ["t1", "t2"])                         # 1, 2
    fill(b, t, ["n1"])                                  # 3
    cs = _both(b, t, **{"enable.partition.eof": True})
    for step in ("open", "open.again"):
        for tag, records in _drain(b, cs, rounds=8).items():
            o[f"{step}.{tag}"] = records
    o.call("commit", p.commit_transaction, 30)
    b.settle()
    for tag, records in _drain(b, cs).items():
        o[f"committed.{tag}"] = records
    p.begin_transaction()
    produce(p, t, ["x1"])
    o.call("abort", p.abort_transaction, 30)
    b.settle()
    for tag, records in _drain(b, cs).items():
        o[f"aborted.{tag}"] = records
        o[f"aborted.{tag}.position"] = _position(b, cs[tag], t)
    for c in cs.values():
        c.close()


@scenario()
def latest_reset_while_open(b, o):
    """auto.offset.reset=latest with no committed offset, while a transaction is open: read_committed starts at
    the LSO (the open transaction's first record) and so reads the transaction once it commits; read_uncommitted
    starts at the HW, past it, and reads only what comes after."""
    t, tid = new_topic(b, "latest"), b.unique("tx")
    fill(b, t, ["p0"])
    p = in_transaction(b, tid)
    produce(p, t, ["t1", "t2"])                         # 1, 2
    cs = {}
    for tag, iso in (("rc", "read_committed"), ("ru", "read_uncommitted")):
        cs[tag] = _consumer(b, iso, **{"auto.offset.reset": "latest"})
        cs[tag].assign([b.TopicPartition(t, 0)])        # the stored offset: none, so auto.offset.reset
    for tag, records in _drain(b, cs, rounds=20).items():       # long enough for the reset to be done
        o[f"open.{tag}"] = records
    o.call("commit", p.commit_transaction, 30)
    b.settle()
    fill(b, t, ["n1"])                                  # 4 (marker 3)
    _observe_drain(b, o, "committed", cs, t)
    for c in cs.values():
        c.close()


@scenario()
def admin_list_offsets_answers(b, o):
    """The Admin client's list_offsets: each answer's offset, timestamp and leader epoch (Kafka's
    ListOffsetsPartitionResponse).  Earliest and latest carry no timestamp, and the epoch the log start began in /
    the partition's current epoch; a time finds the first record stamped at least that, with its own timestamp and
    its batch's epoch; MAX_TIMESTAMP the largest stamp (here the COMMIT marker's, written after records the
    application stamped in the past); a time past everything finds nothing (-1, no timestamp, no epoch).  Records
    are stamped by the application, so both sides answer the same times."""
    t, tid = new_topic(b, "alo"), b.unique("tx")
    base = 1_700_000_000_000
    p = b.Producer({"bootstrap.servers": b.bootstrap})
    for i in range(3):                                  # 0, 1, 2: stamped base, base+1000, base+2000
        p.produce(t, value=f"r{i}".encode(), partition=0, timestamp=base + 1000 * i)
    p.flush(30)
    tp = in_transaction(b, tid)
    tp.produce(t, value=b"t3", partition=0, timestamp=base + 3000)      # 3, its COMMIT marker at 4
    o.call("commit", tp.commit_transaction, 30)
    b.settle()
    admin = b.AdminClient({"bootstrap.servers": b.bootstrap})
    specs = {"earliest": b.admin.OffsetSpec.earliest(), "latest": b.admin.OffsetSpec.latest(),
             "max_timestamp": b.admin.OffsetSpec.max_timestamp(),
             "at_r1": b.admin.OffsetSpec.for_timestamp(base + 1000),
             "between_r1_r2": b.admin.OffsetSpec.for_timestamp(base + 1500),
             "past_everything": b.admin.OffsetSpec.for_timestamp(4_000_000_000_000)}       # (2096)
    for name, spec in specs.items():
        key = b.TopicPartition(t, 0)
        try:
            info = admin.list_offsets({key: spec}, request_timeout=30)[key].result(30)
        except b.KafkaException as e:
            o[f"{name}"] = err_sig(e)
            continue
        # the marker's time is the broker's clock: observed as "after the records", not as a number
        ts = info.timestamp if name != "max_timestamp" else ("after t3" if info.timestamp > base + 3000 else
                                                              info.timestamp)
        o[f"{name}"] = [info.offset, ts if ts == -1 or isinstance(ts, str) else ts - base, info.leader_epoch]
