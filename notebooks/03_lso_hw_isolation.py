# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 · LEO, high watermark, last stable offset and isolation levels
#
# **You need:** 02 (transactions and markers). **Time:** about 40 minutes.
# **You will be able to:** compute the LEO, HW and LSO of a partition from its log, say what each isolation level returns, and explain why one open transaction holds back every `read_committed` reader.
#
# Three offsets decide what a consumer may read from a partition:
#
# | offset | meaning | who may read below it |
# |---|---|---|
# | **LEO**, log end offset | the next offset a replica will write | nobody reads up to it: it may still be lost |
# | **HW**, high watermark | every in-sync replica has the records below it | `read_uncommitted` consumers |
# | **LSO**, last stable offset | below it, no transaction is still undecided | `read_committed` consumers |
#
# Always **LSO ≤ HW ≤ LEO** on the leader. A `read_committed` consumer additionally skips the
# records of **aborted** transactions, using the list of aborted transactions that the broker sends
# with each fetch. This notebook shows each of these, then what `acks` has to do with the HW.
#
# (Kafka's Java consumer defaults to `read_uncommitted`; librdkafka, and so confluent-kafka and this
# lab, default to `read_committed`. We always set `isolation.level` explicitly.)

# %%
from txnlab import Cluster, Producer, Consumer, TopicPartition
from widgets import LogStrip

# %% [markdown]
# Tables and pictures come from the lab's `widgets` package. They only *read* the cluster: its trace, its
# logs and its partition state (the *Check* cells also read back what a picture drew). `read` is a fresh
# consumer that reads a topic from the start; it polls the cluster like any client.

# %%
import pandas as pd

from widgets.tables import show, narration, since
from widgets.snapshots import log_snapshot
from widgets.drawn import trace_named, drawn_line, drawn_consumers
from widgets.predict import Exercise, Predict, narration_says, partition_value, predict_at


# %%
def reader(cluster, isolation, topic, partition=0):
    """A consumer reading one partition from offset 0 (assigned by hand: it never joins its group)."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "reader", "isolation.level": isolation,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, partition, 0)])
    return c

def drain(consumer, polls=3):
    """Everything the consumer returns until it has nothing more (values, in order)."""
    out, empty = [], 0
    while empty < polls:
        msg = consumer.poll(0.5)
        if msg is None:
            empty += 1
        elif msg.error() is None:
            out.append(msg.value().decode())
    return out

def position(consumer, topic, partition=0):
    return consumer.position([TopicPartition(topic, partition)])[0].offset


# %% [markdown]
# ## 1 · LEO and HW: replication in progress
#
# A partition with three replicas. The leader appends a produced batch at its LEO; the followers
# fetch it; the leader learns from their next fetch how far each one got and moves the HW to the
# smallest LEO in the ISR (in-sync replicas). We stop the simulation right after the leader has
# appended three new records, before any follower has fetched them.
#
# The pictures in this section are the lab's **log strip** (`widgets.LogStrip`): one row per replica
# (★ marks the leader), one cell per offset, coloured by what the record is (hover a cell for its batch header:
# producer id, epoch, sequence, value). Each replica has its **LEO** as a thin black line and its
# **HW** as a dashed blue one; the leader's HW is also written above the partition. (The wide orange
# line, the LSO, is the subject of section 2; without transactions it sits on the HW.)

# %% [markdown]
# The next cells stop at the moment the leader has appended `r2, r3, r4` and no follower has fetched them yet.
# Think of the LEO of each replica, then answer:

# %% jupyter={"source_hidden": true}
p_mid_hw = Predict("The leader has just appended r2, r3, r4 (offsets 2 to 4); no follower has fetched them. "
                   "Where is the leader's <b>HW</b>?", kind="offset", check=lambda: mid["hw"],
                   why="The HW is the smallest LEO in the ISR: the followers still end at 2, so the HW stays at 2 "
                       "and a read_uncommitted consumer can read r0 and r1 only.")
p_mid_hw

# %%
cluster = Cluster(brokers=3, seed=5)
cluster.create_topic("t", partitions=1, replication_factor=3)
producer = Producer({"bootstrap.servers": cluster.bootstrap})
for v in (b"r0", b"r1"):
    producer.produce("t", value=v)
producer.flush()
leader = cluster.leader("t", 0)
followers = [b for b in cluster.brokers if b != leader]
for v in (b"r2", b"r3", b"r4"):
    producer.produce("t", value=v)
cluster.run_until(lambda: cluster.partition_state("t", 0)["replicas"][leader]["leo"] == 5)   # step by step until appended
mid = cluster.partition_state("t", 0)
mid_strip = LogStrip(cluster, title="Mid-replication: the leader (★) has r2..r4, the followers do not yet")
mid_strip.figure

# %%
show(narration(cluster.trace.filter(api="Produce")[-1:]))

# %%
producer.flush()            # let it finish: followers fetch, the HW moves, the Produce is acknowledged
cluster.run_until_idle()
done = cluster.partition_state("t", 0)
done_strip = LogStrip(cluster, title="Replicated: every replica has r0..r4; the leader's HW is 5")
done_strip.figure

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert mid["replicas"][leader]["leo"] == 5 and mid["replicas"][leader]["hw"] == 2
assert all(mid["replicas"][f]["leo"] == 2 for f in followers)
assert drawn_line(mid_strip, "LEO", "t", 0) == 5 and drawn_line(mid_strip, "HW", "t", 0) == 2   # as drawn
assert sorted(mid_strip.line_positions("LEO")) == [2, 2, 5]             # one LEO line per replica
assert all(done["replicas"][b]["leo"] == 5 for b in cluster.brokers)
assert done["hw"] == 5 and done["lso"] == 5           # no transactions: the LSO is the HW

# %% [markdown]
# ### Followers learn the HW late
#
# Look again at the dashed blue lines of the finished strip. The leader moved its HW to 5 when the
# followers' fetches told it they had everything; but a follower learns the HW only from a **fetch
# response**, and the leader does not answer a parked follower fetch just because the HW moved:
# Kafka's `DelayedFetch` waits for new **bytes** (or a diverging epoch, or an error). The new HW rides
# along with the next data, or with the empty answer when the long poll expires after
# `replica.fetch.wait.max.ms` (500 ms).

# %% [markdown]
# The next cell prints the HW of each replica now, and after 500 ms of simulated time with nothing produced.
# Answer first:

# %% jupyter={"source_hidden": true}
p_follower_hw = Predict("After 500 ms of simulated time with nothing produced, which HW does each follower hold?",
                        kind="offset", check=lambda: min(r["hw"] for r in later["replicas"].values()),
                        why="The followers' long polls expire after replica.fetch.wait.max.ms (500 ms); the empty "
                            "answers carry the leader's HW, 5.")
p_follower_hw

# %%
print("HW per replica now:      ", {b: r["hw"] for b, r in done["replicas"].items()})
cluster.advance(500)        # the followers' long polls expire: the answers carry HW 5
later = cluster.partition_state("t", 0)
print("HW per replica 500ms on: ", {b: r["hw"] for b, r in later["replicas"].items()})
show(narration(cluster.trace.filter(api="Fetch", include_background=True)[-2:]))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert sorted(done_strip.line_positions("HW")) == [2, 2, 5]                 # one HW line per replica, as drawn
assert all(done["replicas"][f]["hw"] == 2 for f in followers)     # still the HW of their last answer
assert all(later["replicas"][b]["hw"] == 5 for b in cluster.brokers)

# %% [markdown]
# ## 2 · An open transaction pins the LSO
#
# The LSO is the first offset of the **oldest transaction still undecided** on the partition (or the
# HW if there is none). Everything from there on is hidden from `read_committed` consumers, **even
# records written later by someone else**, non-transactional or already committed: a consumer reads
# a partition in offset order and cannot jump over an undecided record.
#
# On one partition `orders-0`:
#
# 1. a plain (non-transactional) producer writes `before`;
# 2. transactional producer **A** writes `A1` and leaves its transaction open;
# 3. the plain producer writes `after`;
# 4. transactional producer **B** writes `B1` and **commits**.

# %% jupyter={"source_hidden": true}
p_pinned_lso = Predict("After these four steps, where is the <b>LSO</b> of <code>orders-0</code> "
                       "(<code>before</code> is at offset 0)?", kind="offset", check=lambda: st["lso"],
                       why="A1, at offset 1, belongs to writer-A's transaction, still open: the LSO stops there, "
                           "although B1 after it is committed. The HW is at the end of the log.")
p_pinned_lso

# %% jupyter={"source_hidden": true}
PINNED = ["before", "before, B1", "before, after, B1", "before, A1, after, B1"]
p_pinned_rc = Predict("What does the <code>read_committed</code> consumer read?", choices=PINNED,
                      check=lambda: ", ".join(pinned_rc),
                      why="It reads in offset order up to the LSO (1) and cannot jump over A1's open transaction: only "
                          "'before'. The read_uncommitted consumer reads up to the HW: before, A1, after, B1.")
p_pinned_rc

# %%
cluster = Cluster(brokers=3, seed=7)
cluster.create_topic("orders", partitions=1, replication_factor=3)
plain = Producer({"bootstrap.servers": cluster.bootstrap})
A = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "writer-A"})
B = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "writer-B"})
A.init_transactions()
B.init_transactions()

plain.produce("orders", value=b"before")
plain.flush()
A.begin_transaction()
A.produce("orders", value=b"A1")
A.flush()
plain.produce("orders", value=b"after")
plain.flush()
B.begin_transaction()
B.produce("orders", value=b"B1")
B.commit_transaction()
cluster.run_until_idle()

rc, ru = reader(cluster, "read_committed", "orders"), reader(cluster, "read_uncommitted", "orders")
seen_rc, seen_ru = drain(rc), drain(ru)
pinned_rc = list(seen_rc)
st = cluster.partition_state("orders", 0)
print("LEO", st["leo"], " HW", st["hw"], " LSO", st["lso"])
print("read_committed reads  ", seen_rc, " position", position(rc, "orders"))
print("read_uncommitted reads", seen_ru, " position", position(ru, "orders"))

# %%
log_snapshot(cluster, [("orders", 0)], title="writer-A's open transaction pins the LSO at offset 1",
          positions={0: [(position(rc, "orders"), "read_committed position"),
                         (position(ru, "orders"), "read_uncommitted position")]})

# %% [markdown]
# `get_watermark_offsets` asks the leader (ListOffsets) for the log start and the end of what *this*
# consumer may read: the LSO for `read_committed`, the HW for `read_uncommitted`. This is also where
# a consumer lands when it seeks to `OFFSET_END` (Java: `seekToEnd`), and what consumer lag is measured
# against.

# %%
tp = TopicPartition("orders", 0)
show(pd.DataFrame([{"consumer": "read_committed", "get_watermark_offsets": rc.get_watermark_offsets(tp)},
                   {"consumer": "read_uncommitted", "get_watermark_offsets": ru.get_watermark_offsets(tp)}]))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert (st["leo"], st["hw"], st["lso"]) == (5, 5, 1)     # before=0, A1=1, after=2, B1=3, B's COMMIT=4
assert seen_rc == ["before"]
assert seen_ru == ["before", "A1", "after", "B1"]
assert position(rc, "orders") == 1 and position(ru, "orders") == 5
assert rc.get_watermark_offsets(tp) == (0, 1) and ru.get_watermark_offsets(tp) == (0, 5)

# %% [markdown]
# Now writer-A commits. Its COMMIT marker is written at the end of the log.

# %% jupyter={"source_hidden": true}
p_late = Predict("The <code>read_committed</code> consumer is still waiting at offset 1. After writer-A's commit, "
                 "which records do its next polls return, in which order?",
                 choices=["A1, after, B1", "A1", "after, B1", "A1, B1"], check=lambda: ", ".join(late),
                 why="The commit's marker moves the LSO to the end of the log; the consumer goes on in offset order "
                     "from 1: A1, then after and B1, which waited behind it.")
p_late

# %%
A.commit_transaction()
cluster.run_until_idle()
late = drain(rc)
st2 = cluster.partition_state("orders", 0)
print("LSO now", st2["lso"], "= HW", st2["hw"], "; read_committed now reads", late)
log_snapshot(cluster, [("orders", 0)], title="writer-A committed: the LSO caught up with the HW",
          positions={0: [(position(rc, "orders"), "read_committed position")]})

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert rc.get_watermark_offsets(tp) == (0, st2["lso"])
assert late == ["A1", "after", "B1"]
assert st2["lso"] == st2["hw"] == st2["leo"]

# %% [markdown]
# ## 3 · Aborted transactions and the consumer's filter
#
# An aborted transaction's records stay in the log. The broker does not remove them from a
# `read_committed` fetch either (that would mean rewriting batches); instead it sends, with the
# records, the list of **aborted transactions** that overlap the fetched range, as
# `(producer id, first offset)` pairs taken from its aborted-transaction index. The consumer walks the
# batches in offset order: from a listed first offset on, that producer's transactional batches are
# skipped, until its ABORT marker. Batches of other producers in between are kept.
#
# Two transactions interleave on one partition: **A** writes `A1`, **B** writes `B1`, **A** writes
# `A2`; then B commits and A aborts.

# %% jupyter={"source_hidden": true}
MIXED = ["B1", "A1, B1", "B1, A2", "nothing"]
p_mixed = Predict("B committed, A aborted. What will the <code>read_committed</code> consumer return?", choices=MIXED,
                  check=lambda: ", ".join(mixed_rc) or "nothing",
                  why="The broker sends the whole log with A's aborted transaction listed as (producer id, first offset "
                      "0); the consumer skips A's batches from offset 0 to its ABORT marker and keeps B1.")
p_mixed

# %%
cluster = Cluster(brokers=3, seed=9)
cluster.create_topic("orders", partitions=1, replication_factor=3)
A = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "writer-A"})
B = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "writer-B"})
A.init_transactions()
B.init_transactions()
A.begin_transaction()
B.begin_transaction()
A.produce("orders", value=b"A1")
A.flush()
B.produce("orders", value=b"B1")
B.flush()
A.produce("orders", value=b"A2")
A.flush()
B.commit_transaction()
A.abort_transaction()
cluster.run_until_idle()

mark = len(cluster.trace)
rc, ru = reader(cluster, "read_committed", "orders"), reader(cluster, "read_uncommitted", "orders")
mixed_rc, mixed_ru = drain(rc), drain(ru)
print("read_committed  :", mixed_rc)
print("read_uncommitted:", mixed_ru)
log_snapshot(cluster, [("orders", 0)], title="A aborted (grey), B committed (green), interleaved on one partition",
          positions={0: [(position(rc, "orders"), "both consumers' position")]})

# %%
filtering = [e for e in since(cluster, mark) if "aborted transactions" in e.narration or " skips " in e.narration]
show(narration(filtering))

# %%
show(pd.DataFrame([t._asdict() for t in cluster.log("orders", 0).txn_index.all()]))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
pid_a = A.transaction_manager.producer_id
assert mixed_rc == ["B1"]
assert mixed_ru == ["A1", "B1", "A2"]                       # read_uncommitted sees aborted data
assert position(rc, "orders") == position(ru, "orders") == cluster.partition_state("orders", 0)["lso"]
assert any(f"({pid_a}, 0)" in e.narration for e in filtering)   # A's aborted txn starts at offset 0
assert len([e for e in filtering if " skips " in e.narration]) >= 2


# %% [markdown]
# ## 4 · `acks` and the high watermark: losing an acknowledged record
#
# Why does the idempotent producer insist on `acks=all`? With `acks=1` the leader acknowledges as
# soon as the record is in **its own** log, above the HW. If the leader then dies before any follower
# copied the record, a follower becomes leader without it, and when the old leader comes back it
# **truncates** its log to match the new leader. The record the producer was told is "written at
# offset 1" is gone, on every replica.
#
# With `acks=all` the leader answers only when the HW has passed the record, that is when every
# in-sync replica has it (and refuses to append at all while fewer than `min.insync.replicas` are in
# sync). Same fault, other outcome.
#
# The fault: the followers are cut off from the leader (`cluster.partition`), the producer writes
# `doomed`, the leader crashes, the network heals, a follower is elected.

# %% jupyter={"source_hidden": true}
p_acks1 = Predict("With <code>acks=1</code>, the producer is told that <code>doomed</code> is written. Is it in the "
                  "log of any replica at the end?", choices=["yes", "no: lost although acknowledged"],
                  check=lambda: "yes" if any("doomed" in log for log in one[3].values()) else "no: lost although acknowledged",
                  why="The leader acknowledged it from its own log, above the HW; a follower without it became leader, "
                      "and the old leader truncated its log when it came back.")
p_acks1

# %% jupyter={"source_hidden": true}
p_acks_all = Predict("With <code>acks=all</code>, is <code>doomed</code> acknowledged before the leader crashes?",
                     choices=["yes", "no"],
                     check=lambda: "yes" if any(e is None for e, o in every[1]["acknowledged"]) else "no",
                     why="acks=all waits until the HW passes the record, and the followers are cut off: no answer before "
                         "the crash. The producer retries it to the new leader, where it is written once.")
p_acks_all

# %%
def lost_ack(acks):
    cluster = Cluster(brokers=3, seed=11)
    cluster.create_topic("t", partitions=1, replication_factor=3, config={"min.insync.replicas": 2})
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": acks})   # not idempotent (the default)
    producer.produce("t", value=b"safe")
    producer.flush()
    cluster.run_until_idle()
    leader = cluster.leader("t", 0)
    followers = [b for b in cluster.brokers if b != leader]
    cluster.partition(followers, [leader])            # the followers cannot fetch any more
    reports = []
    producer.produce("t", value=b"doomed", on_delivery=lambda err, msg: reports.append((err, msg.offset())))
    producer.flush(2.0)                               # wait at most 2 simulated seconds
    before_crash = {"acknowledged": list(reports),
                    "strip": LogStrip(cluster, title=f"acks={acks}: just before the leader crashes")}
    cluster.crash(leader)
    cluster.heal()
    cluster.run_until(lambda: cluster.leader("t", 0) in followers, timeout_ms=30_000)
    producer.flush(60)
    cluster.restart(leader)
    cluster.run_until_idle()
    logs = {b: [r.value.decode() for x in cluster.log("t", 0, b).batches for r in x.records] for b in cluster.brokers}
    return cluster, before_crash, reports, logs

one = lost_ack("1")
one[1]["strip"].figure

# %%
every = lost_ack("all")
every[1]["strip"].figure

# %%
rows = []
for acks, (c, before, reports, logs) in (("1", one), ("all", every)):
    rows.append({"acks": acks, "acknowledged before the crash": [f"offset {o}" for e, o in before["acknowledged"] if e is None],
                 "final delivery report": [("ok, offset %d" % o) if e is None else e.name() for e, o in reports],
                 "replica logs at the end": logs})
show(pd.DataFrame(rows))

# %%
show(narration(one[0].trace.filter(contains="truncat")))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
c1, before1, _, logs1 = one
assert [o for e, o in before1["acknowledged"] if e is None] == [1]      # acks=1: acknowledged at offset 1 ...
assert drawn_line(before1["strip"], "HW", "t", 0) == 1                   # ... above the HW, as drawn
assert all(log == ["safe"] for log in logs1.values())                    # ... and lost everywhere
assert c1.trace.filter(contains="truncated its log")
_, before2, reports2, logs2 = every
assert before2["acknowledged"] == []                                     # acks=all: not acknowledged yet
assert drawn_line(before2["strip"], "LEO", "t", 0) == 2 and drawn_line(before2["strip"], "HW", "t", 0) == 1
assert all(log == ["safe", "doomed"] for log in logs2.values())         # retried to the new leader: kept once
assert [e for e, o in reports2] == [None]

# %% [markdown]
# With `acks=1`, the producer was told "offset 1" for a record that no longer exists anywhere: that
# is outside what exactly-once can promise, which is why idempotence and transactions require
# `acks=all` (and the transaction coordinator writes `__transaction_state` and the markers with
# `acks=all` too, with unclean leader election always off for `__transaction_state`). With
# `acks=all` the record was never acknowledged by the old leader; the producer retried it to the new
# leader, where it is written exactly once.

# %% [markdown]
# ## 5 · Step through it yourself: the LSO and the two readers
#
# Two scenarios from the lab's gallery, stepped one moment at a time (**Step** or →; **Back** or ←
# re-runs from the seed; **Run** plays). Keep the **Partition logs** tab open: the log strip of
# section 1, now following every step. Besides the LEO (thin black) and HW (dashed blue) it draws
# each replica's **LSO** as a wide orange line, the COMMIT and ABORT markers (dark green and red cells
# that say so; ◆ and ✕ where a cell is too narrow for the word), cells of an open transaction in
# yellow and aborted ones in grey. Under each partition stand the
# consumers: **▲** a `read_committed` one, **△** a `read_uncommitted` one, at their positions (the
# next offset each will fetch).
#
# First `lso-stuck-by-open-transaction`, section 2 in a smaller form: a transaction writes `open-1`
# to `orders-0` and stays open; a plain producer writes `plain-1` and `plain-2` after it; the two
# consumers read; then the transaction commits.

# %%
from widgets import Stepper

stuck = Stepper("lso-stuck-by-open-transaction")
stuck.widget

# %% [markdown]
# **Your move:** answer both, then step: until `reader-uncommitted got the Fetch response`, then until the
# leader `wrote a COMMIT marker`, then one fetch round more. (The key moments under the slider, `ru-reads`,
# `commit-marker` and `lso-moves`, jump to those three.)

# %% jupyter={"source_hidden": true}
p_triangle = predict_at(
    "While the transaction is open (after both consumers have fetched), at which offset does the "
    "<code>read_committed</code> triangle stop?", "lso-stuck-by-open-transaction",
    "reader-uncommitted got the Fetch response", partition_value("orders", 0, "lso"), kind="offset",
    why="At the LSO, the first offset of the open transaction (0): the plain records after it wait too. The "
        "read_uncommitted triangle goes on to the HW, 3.")
p_triangle

# %% jupyter={"source_hidden": true}
p_jump = predict_at(
    "When the COMMIT marker is appended to the leader's log, does the LSO jump to the end at once?",
    "lso-stuck-by-open-transaction", "wrote a COMMIT marker",
    lambda run: ("yes, at once" if partition_value("orders", 0, "lso")(run) == partition_value("orders", 0, "leo")(run)
                 else "no: only once the marker is replicated (below the HW)"),
    choices=["yes, at once", "no: only once the marker is replicated (below the HW)"],
    why="A marker counts, like any record, once it is below the HW; one fetch round later the LSO jumps from 0 to 4.")
p_jump

# %% [markdown]
# **Check** what you should have seen. The cell replays the scenario in a stepper of its own (yours stays where
# you left it) and reads the lines and triangles as its strip draws them (this cell fails if the lab disagrees):

# %%
stuck_check = Stepper("lso-stuck-by-open-transaction", skip_background=True)
strip = stuck_check.log_strip
assert stuck_check.step_until("reader-uncommitted got the Fetch response")
assert [drawn_line(strip, x, "orders", 0) for x in ("LEO", "HW", "LSO")] == [3, 3, 0]
assert drawn_consumers(strip, "read_committed") == {("reader-committed", "orders-0"): 0}       # held at the LSO
assert drawn_consumers(strip, "read_uncommitted") == {("reader-uncommitted", "orders-0"): 3}   # read to the HW

assert stuck_check.step_until("wrote a COMMIT marker")
assert [drawn_line(strip, x, "orders", 0) for x in ("LEO", "HW", "LSO")] == [4, 3, 0]   # marker not replicated yet
assert stuck_check.step_until("reader-committed skips offset 3")
assert [drawn_line(strip, x, "orders", 0) for x in ("LEO", "HW", "LSO")] == [4, 4, 4]
assert drawn_consumers(strip, "read_committed") == {("reader-committed", "orders-0"): 4}
stuck_check.run_to_end()
assert stuck_check.result["read_committed_after_commit"] == ["open-1", "plain-1", "plain-2"]
stuck_check.close()

# %% [markdown]
# The LSO did not move when the COMMIT marker was appended: a transaction counts as decided on a
# partition only once its marker is **below the HW**, replicated like any record. One fetch round
# later the LSO jumped from 0 to 4 and the `read_committed` consumer read all three records in one
# go.
#
# Second, `abort-hidden-from-read-committed`, section 3 in a smaller form: a transaction writes
# `aborted-1`, `aborted-2` to `orders-0` and aborts; the next writes `committed-1`, `committed-2`
# and commits; then the two consumers read from offset 0.

# %%
aborted = Stepper("abort-hidden-from-read-committed")
aborted.widget

# %% jupyter={"source_hidden": true}
p_filter = predict_at(
    "When the <code>read_committed</code> consumer fetches <code>orders-0</code>, does the leader leave the "
    "aborted records out of its answer?", "abort-hidden-from-read-committed", "fetch carries aborted transactions",
    narration_says("6 record(s)", "no: it sends them, with the list of aborted transactions",
                   "yes: the broker filters them out"),
    choices=["yes: the broker filters them out", "no: it sends them, with the list of aborted transactions"],
    why="Filtering would mean rewriting batches. The broker sends the whole log with (producer id, first offset) "
        "of each aborted transaction, and the consumer skips those batches itself; both triangles end at 6.")
p_filter

# %% [markdown]
# **Check** what you should have seen (on a stepper of its own; it fails if the lab disagrees):

# %%
aborted_check = Stepper("abort-hidden-from-read-committed", skip_background=True)
strip = aborted_check.log_strip
assert aborted_check.step_until("wrote an ABORT marker")
cells = trace_named(strip.figure, "orders-0").hovertext
assert sum("ABORTED" in h for h in cells) == 2       # grey on the leader (the followers have no marker yet)
assert aborted_check.step_until("fetch carries aborted transactions")
assert "6 record(s)" in aborted_check.narration                # the whole log, aborted records included ...
assert "skips offsets 0..1 of orders-0 (aborted transaction" in aborted_check.narration   # ... skipped by the consumer
aborted_check.run_to_end()
assert drawn_consumers(strip, "read_committed") == {("reader-committed", "orders-0"): 6}
assert drawn_consumers(strip, "read_uncommitted") == {("reader-uncommitted", "orders-0"): 6}
assert list(trace_named(strip.figure, "orders-0").text).count("ABORT") == 3      # one ABORT cell per replica
assert aborted_check.result == {"read_committed": ["committed-1", "committed-2"],
                          "read_uncommitted": ["aborted-1", "aborted-2", "committed-1", "committed-2"]}
aborted_check.close()

# %% [markdown]
# ## Exercise: make the LSO stop at 4
#
# Write `pin_lso_at_4(lab)`: on a fresh cluster with a topic `orders` of one partition, produce so that, when
# everything has settled, the LSO of `orders-0` is **4** and the HW is past it (records after the LSO are
# replicated but hidden from `read_committed`). `Producer` is imported above; `lab.bootstrap` is the address.

# %% jupyter={"source_hidden": true}
def check_pin(fn):
    lab = Cluster(brokers=3, seed=3)
    lab.create_topic("orders", partitions=1, replication_factor=3)
    fn(lab)
    lab.run_until_idle()
    st = lab.partition_state("orders", 0)
    return st["lso"] == 4 and st["hw"] > 4, f"orders-0 ends with LSO {st['lso']}, HW {st['hw']}"


ex_pin = Exercise("Write <code>pin_lso_at_4(lab)</code>: LSO 4, HW past it.", kind="code", check=check_pin,
                  solution='def pin_lso_at_4(lab):\n'
                           '    plain = Producer({"bootstrap.servers": lab.bootstrap})\n'
                           '    for i in range(4):\n'
                           '        plain.produce("orders", value=b"p%d" % i, partition=0)\n'
                           '    plain.flush()                                 # offsets 0..3, committed as plain records\n'
                           '    txn = Producer({"bootstrap.servers": lab.bootstrap, "transactional.id": "pinner"})\n'
                           '    txn.init_transactions()\n'
                           '    txn.begin_transaction()\n'
                           '    txn.produce("orders", value=b"open", partition=0)\n'
                           '    txn.flush()                                   # offset 4: a transaction left open\n'
                           '    plain.produce("orders", value=b"after", partition=0)\n'
                           '    plain.flush()                                 # offset 5: below the HW, above the LSO')
ex_pin

# %%
def pin_lso_at_4(lab):
    raise NotImplementedError          # your code here


ex_pin.submit(pin_lso_at_4)

# %% [markdown]
# ## What to remember
#
# * **HW**: replicated to every in-sync replica; `read_uncommitted` reads up to it.
# * **LSO**: the first offset of the oldest undecided transaction (or the HW); `read_committed` reads
#   up to it. One open transaction holds back *everything* after it on that partition, which is why
#   transactions should be short, and why a stuck transaction must time out (notebooks 05 and 06).
# * Aborted records stay in the log; the broker sends `(producer id, first offset)` of each aborted
#   transaction, and the `read_committed` consumer skips those batches itself.
# * Only records below the HW are safe; `acks=all` is what makes an acknowledgement mean that.

# %% [markdown]
# ## Where next
#
# **04 · Consume, transform, produce**: offsets committed inside the transaction (about 40 minutes).
# `GLOSSARY.md` explains every Kafka term used here; `INDEX.md` lists the gallery's scenarios by concept.
