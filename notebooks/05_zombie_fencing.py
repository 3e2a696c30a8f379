# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · Zombie fencing
#
# **You need:** 02 and 04 (transactions, the copier). **Time:** about 45 minutes.
# **You will be able to:** explain how epochs fence a zombie, what `transaction.timeout.ms` bounds, and what a hanging transaction is and how `transaction.version` 2 prevents it.
#
# A **zombie** is an old instance of an application that everybody believes dead (it crashed, was
# partitioned from the network, or froze in a long GC pause) but that wakes up and keeps writing
# while a new instance has already taken over its work. With the same `transactional.id`, the two
# would write the same output twice.
#
# Kafka stops zombies with the **producer epoch**. Every `init_transactions()` of a
# `transactional.id` bumps the epoch at the transaction coordinator, which also finishes
# (aborts) whatever transaction the previous instance left open. From then on:
#
# * a **Produce** with the old epoch is refused by the partition leader with
#   **`INVALID_PRODUCER_EPOCH` (47)**;
# * a request with the old epoch to the **coordinator** (`AddPartitionsToTxn`, `EndTxn`, ...) is
#   refused with **`PRODUCER_FENCED` (90)**.
#
# confluent-kafka's producer (librdkafka) reacts to both the same way: it is **fenced**. It raises the
# *fatal* error **`_FENCED` (-144)**, and from then on every transactional call fails with it: the
# producer must be closed. (Kafka's Java producer differs for the leader's answer: there
# `INVALID_PRODUCER_EPOCH` is only *abortable*, and `PRODUCER_FENCED` is the fatal one.)
#
# This notebook shows fencing by a new instance, fencing by the **transaction timeout**, the
# anomalies that the classic protocol still allowed (KIP-890) and the admin tools that clean up after
# them.

# %%
from txnlab import Cluster, KafkaException, Producer, TopicPartition
from txnlab.admin import AbortTransactionSpec, AdminClient
from txnlab.errors import KafkaStateError

# %% [markdown]
# Tables and pictures come from the lab's `widgets` package. They only *read* the cluster: its trace, its
# logs and its partition state (the *Check* cells also read back what a picture drew). `read` is a fresh
# consumer that reads a topic from the start; it polls the cluster like any client.

# %%
import pandas as pd
import plotly.graph_objects as go

from widgets.tables import show, narration, since
from widgets.snapshots import log_snapshot
from widgets.drawn import trace_named, drawn_line, arrows_now, coordinator_says
from widgets.reader import read
from widgets.predict import Exercise, Predict, moment, narration_says, predict_at, txn_value


# %%
def attempt(call):
    """Run a client call; return 'ok' or the error it raised, with its classification."""
    try:
        call()
        return "ok"
    except KafkaException as e:
        err = e.args[0]
        kind = "fatal" if err.fatal() else "abortable" if err.txn_requires_abort() else \
            "retriable" if err.retriable() else "error"
        return f"{err.name()} ({kind})"


# %% [markdown]
# ## 1 · A second instance fences the first
#
# Instance **old** of the `payments` service opens a transaction and writes one record. Then it
# stalls, and an orchestrator starts instance **new** with the same `transactional.id`.

# %% jupyter={"source_hidden": true}
OPEN_TXN = ["the coordinator aborts it", "it is committed", "it stays open until old's transaction times out"]
p_old_txn = Predict("What happens to <code>old</code>'s open transaction when <code>new</code> calls "
                    "<code>init_transactions()</code>?", choices=OPEN_TXN,
                    check=lambda: OPEN_TXN[0] if "ABORT" in fenced_markers else
                    OPEN_TXN[1] if "COMMIT" in fenced_markers else OPEN_TXN[2],
                    why="The coordinator finds payments-svc Ongoing: it bumps the epoch to fence the old instance and "
                        "aborts the open transaction (ABORT markers) before the new instance may start.")
p_old_txn

# %% jupyter={"source_hidden": true}
WAKES = ["it commits", "a retriable error: it may try again", "the fatal _FENCED: it must be closed"]
p_old_commit = Predict("<code>old</code> wakes up and calls <code>commit_transaction()</code>. What does it get?",
                       choices=WAKES,
                       check=lambda: WAKES[0] if fate["(b) commit_transaction"] == "ok" else
                       WAKES[2] if "_FENCED" in fate["(b) commit_transaction"] else WAKES[1],
                       why="Its epoch is older than the coordinator's: librdkafka reports the fatal _FENCED, and the "
                           "producer can do nothing more (abort_transaction() raises the same).")
p_old_commit

# %%
cluster = Cluster(brokers=3, seed=7)
cluster.create_topic("payments", partitions=2, replication_factor=3)
old = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "payments-svc"})
old.init_transactions()
old.begin_transaction()
old.produce("payments", value=b"old: pay 100", partition=0)
old.flush()
print("old: producer id", old.transaction_manager.producer_id, "epoch", old.transaction_manager.producer_epoch)

mark = len(cluster.trace)
new = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "payments-svc"})
new.init_transactions()
fenced_markers = [b.control_type.name for b in cluster.log("payments", 0).batches if b.is_control]
print("new: producer id", new.transaction_manager.producer_id, "epoch", new.transaction_manager.producer_epoch)
show(narration([e for e in since(cluster, mark) if e.api in ("InitProducerId", "WriteTxnMarkers") and not e.is_response]))

# %% [markdown]
# The coordinator found `payments-svc` **Ongoing**. It bumped the epoch once to fence the old
# instance (0 → 1) and aborted the open transaction with that epoch (`PrepareEpochFence` → `PrepareAbort`
# → ABORT markers → `CompleteAbort`). The new instance's `InitProducerId` waited for the `PrepareAbort` to be
# durable (the abort decided) and was then answered `CONCURRENT_TRANSACTIONS`; its retry, once the abort was
# complete (a retry before that is answered `CONCURRENT_TRANSACTIONS` again), got a second bump (1 → 2). So a
# new instance ends at **old epoch + 2**.

# %%
reports = []
old.produce("payments", value=b"old: pay 100 again", partition=0, on_delivery=lambda err, msg: reports.append(err))
fate = {"(a) produce + flush": attempt(old.flush),
        "(a) its delivery report": reports[0].name() + (" (fatal)" if reports[0].fatal() else "") if reports[0] else "ok",
        "(b) commit_transaction": attempt(old.commit_transaction),
        "(c) abort_transaction": attempt(old.abort_transaction)}
show(pd.DataFrame([{"old instance calls": k, "result": v} for k, v in fate.items()]))

# %%
show(narration([e for e in since(cluster, mark) if ("INVALID_PRODUCER_EPOCH" in e.narration or "PRODUCER_FENCED"
                                                    in e.narration) and not e.is_response]))

# %% [markdown]
# * (a) The new write reached the leader of `payments-0`. The ABORT marker had closed this producer's
#   transaction there and left epoch 1 in the leader's producer state, so the leader refused the write
#   on its own, before any verification with the coordinator: **`INVALID_PRODUCER_EPOCH`**, the batch's
#   epoch 0 being older than epoch 1 (Kafka 4.1's log checks a stale epoch first; a write with the current
#   epoch to a partition new to the transaction would be verified with the coordinator, KIP-890). For
#   confluent-kafka's producer that means *fenced*: the producer
#   enters the fatal **`_FENCED`** state, and the `flush()` (or `poll()`) that hears of it raises it, once.
#   The record's own delivery report carries the broker's answer, `INVALID_PRODUCER_EPOCH` (47), which by
#   itself is not fatal.
# * (b) and (c): a fenced producer is finished. `commit_transaction()` and `abort_transaction()` raise
#   the same fatal `_FENCED`; the old instance must be closed. (The Java producer
#   would have got an abortable error at (a) and (b), and `PRODUCER_FENCED` from the coordinator at (c).)
#
# The new instance works normally, and nothing the zombie wrote is visible:

# %%
new.begin_transaction()
new.produce("payments", value=b"new: pay 100", partition=0)
new.commit_transaction()
cluster.run_until_idle()
print("read_committed sees:", read(cluster, "payments"))
log_snapshot(cluster, [("payments", 0)], title="payments-0: the zombie's write was aborted by the fence; the new instance's committed")

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert old.transaction_manager.producer_epoch == 0 and new.transaction_manager.producer_epoch == 2
assert fate["(a) produce + flush"] == "_FENCED (fatal)"
assert fate["(a) its delivery report"] == "INVALID_PRODUCER_EPOCH" and reports[0].code() == 47
assert fate["(b) commit_transaction"] == "_FENCED (fatal)"
assert fate["(c) abort_transaction"] == "_FENCED (fatal)"
assert cluster.trace.filter(api="Produce", contains="INVALID_PRODUCER_EPOCH")   # what the leader answered
assert read(cluster, "payments") == ["new: pay 100"]
markers = [b for b in cluster.log("payments", 0).batches if b.is_control]
assert [(b.control_type.name, b.producer_epoch) for b in markers] == [("ABORT", 1), ("COMMIT", 2)]

# %% [markdown]
# ## 2 · The transaction timeout fences a stuck producer
#
# What if no new instance comes? An open transaction pins the LSO of every partition it touched
# (notebook 03): `read_committed` consumers stop, for everybody's records. So every transaction has a
# deadline, `transaction.timeout.ms` (sent in `InitProducerId`; at most the broker's
# `transaction.max.timeout.ms`). The coordinator checks every
# `transaction.abort.timed.out.transaction.cleanup.interval.ms` (10 s) for `Ongoing` transactions
# older than their timeout, **bumps the epoch** (fencing the producer) and **aborts** them.
#
# The `inventory` service sets a 10 s timeout, writes one record, and then freezes in a 30 s pause
# (`cluster.pause`). Meanwhile a plain producer writes a record every second to the same partition.
# We sample the HW and the LSO every half second.

# %% jupyter={"source_hidden": true}
LSO_MOVES = ["at 10 s", "after 10 s, at the coordinator's next check (up to 10 s later)",
             "only when the pause ends at 30 s"]


def lso_moves_at():
    moved = samples[samples["LSO"] > samples["LSO"].iloc[0]]["t (s)"].min()
    return LSO_MOVES[0] if moved == 10 else LSO_MOVES[1] if moved < 30 else LSO_MOVES[2]


p_lso_moves = Predict("When will the LSO of <code>stock-0</code> move again?", choices=LSO_MOVES, check=lso_moves_at,
                      why="The coordinator looks for expired transactions every 10 s; the first check after the 10 s "
                          "timeout bumps the epoch and aborts, and the LSO moves once the ABORT marker is replicated. "
                          "The frozen producer plays no part in it.")
p_lso_moves

# %% jupyter={"source_hidden": true}
p_wakes = Predict("The frozen producer wakes up at 30 s and calls <code>commit_transaction()</code>. What does it "
                  "get?", choices=WAKES, check=lambda: WAKES[0] if woke_up == "ok" else
                  WAKES[2] if "_FENCED" in woke_up else WAKES[1],
                  why="The timeout abort bumped the epoch: the coordinator answers PRODUCER_FENCED, which librdkafka "
                      "reports as the fatal _FENCED.")
p_wakes

# %%
cluster = Cluster(brokers=3, seed=7)
cluster.create_topic("stock", partitions=1, replication_factor=3)
stuck = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "inventory-svc",
                  "transaction.timeout.ms": 10_000})
stuck.init_transactions()
ticker = Producer({"bootstrap.servers": cluster.bootstrap})
stuck.begin_transaction()
stuck.produce("stock", value=b"reserve 3")
stuck.flush()
t0 = cluster.now
cluster.pause(stuck, 30_000)                       # a 30 s GC pause: the producer handles nothing
samples = []
for i in range(60):
    if i % 2 == 0:
        ticker.produce("stock", value=b"tick %d" % (i // 2))
    cluster.advance(500)
    st = cluster.partition_state("stock", 0)
    samples.append({"t (s)": (cluster.now - t0) / 1000, "HW": st["hw"], "LSO": st["lso"],
                    "state": cluster.transaction_state("inventory-svc")["state"]})
samples = pd.DataFrame(samples)
woke_up = attempt(stuck.commit_transaction)
print("the frozen producer wakes up at", (cluster.now - t0) / 1000, "s; commit_transaction ->", woke_up)

# %%
abort_at = samples[samples["state"] == "CompleteAbort"]["t (s)"].min()
fig = go.Figure()
fig.add_trace(go.Scatter(x=samples["t (s)"], y=samples["HW"], name="HW (what read_uncommitted may read)",
                         line=dict(color="#1F5FBF", dash="dash", width=3, shape="hv")))
fig.add_trace(go.Scatter(x=samples["t (s)"], y=samples["LSO"], name="LSO (what read_committed may read)",
                         line=dict(color="#D9480F", width=3, shape="hv")))
fig.add_vrect(x0=0, x1=30, fillcolor="#9E9E9E", opacity=0.12, line_width=0, annotation_text="producer paused",
              annotation_position="top left")
fig.add_vline(x=10, line_dash="dot", line_color="#616161", annotation_text="timeout (10 s)", annotation_position="top right")
fig.add_vline(x=abort_at, line_color="#B71C1C", annotation_text=f"coordinator aborts ({abort_at:.1f} s)",
              annotation_position="top right", annotation_font_color="#B71C1C")
fig.update_layout(title="stock-0 while inventory-svc's transaction is stuck", width=840, height=420,
                  xaxis_title="simulated seconds since the transaction's first write", yaxis_title="offset",
                  plot_bgcolor="white", legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0), margin=dict(t=90),
                  font=dict(size=14))
fig

# %%
show(narration(cluster.trace.filter(contains="longer than its transaction.timeout.ms")))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
pinned = samples[samples["t (s)"] < 10]
assert (pinned["LSO"] == 0).all() and pinned["HW"].iloc[-1] > 5          # readers blocked, writers not
assert 10 < abort_at <= 21                                                 # between timeout and timeout + 10 s
assert (samples[samples["t (s)"] > abort_at]["LSO"] == samples[samples["t (s)"] > abort_at]["HW"]).all()
assert woke_up == "_FENCED (fatal)"                                       # the coordinator said PRODUCER_FENCED
assert cluster.trace.filter(api="EndTxn", contains="-> PRODUCER_FENCED")
assert cluster.transaction_state("inventory-svc")["producer_epoch"] == 1
assert "reserve 3" not in read(cluster, "stock")

# %% [markdown]
# ## 3 · What epochs alone did not stop: KIP-890
#
# In the classic protocol (`transaction.version` 0, all Kafka before 4.0) a producer keeps the **same
# epoch** for all its transactions. Messages that arrive late can then be mistaken for messages of a
# later transaction (Jepsen's tests of Kafka-compatible systems found 2 and 3; 1, the hanging transaction,
# was known before, and the admin tools of section 3.1, KIP-664, repair it):
#
# 1. **Hanging transaction**: a Produce delayed in the network arrives *after* the ABORT marker of its
#    transaction. The leader sees a transactional batch from a producer with no open transaction and
#    opens a new one, which no coordinator knows about. Nobody will ever write its marker: the LSO is
#    stuck for good.
# 2. **Joining the next transaction**: the same late Produce arrives after the producer has already
#    started its *next* transaction on that partition, with the same epoch: the aborted record is
#    committed with the next transaction.
# 3. **KAFKA-17754**: a delayed `EndTxn(commit)` of transaction N, retried and already done, arrives
#    during transaction N+1 and commits N+1, although the application later aborts it.
#
# KIP-890 fixes them in two parts. **Part 1** (Kafka 3.6, `transaction.partition.verification.enable`):
# before a leader opens a transaction for a producer, it asks the coordinator whether that partition is
# really in the producer's current transaction, which stops anomaly 1. **Part 2**
# (`transaction.version` 2, Kafka 4.0, and a client that speaks it): every transaction ends with an
# epoch bump, so a late message of transaction N carries an epoch that is already too old, which stops 2
# and 3.
#
# The stock clients make 1 and 2 hard to hit (Kafka's Java client, and librdkafka since KIP-360, bump
# the epoch when a batch times out), so the lab offers a *naive* client, `"sim.naive.client": True`,
# that behaves like older clients.

# %%
BASE = {"transaction.state.log.num.partitions": 3, "transaction.max.timeout.ms": 60_000}

def anomaly_cluster(tv, verification, seed=1):
    cluster = Cluster(brokers=3, seed=seed, config={**BASE, "transaction.version": tv,
                                                    "transaction.partition.verification.enable": verification})
    cluster.create_topic("out", partitions=2, replication_factor=3)
    return cluster

def naive_producer(cluster, tid="naive", client="librdkafka"):
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid, "sim.naive.client": True,
                  "socket.timeout.ms": 1_000, "request.timeout.ms": 1_000,   # a Produce gives up after 1 s
                  "sim.client.dialect": client})
    p.init_transactions()
    return p

def late_produce_then_abort(cluster, producer, delay_ms):
    """A Produce is held up in the network; the client gives up on it and aborts the transaction."""
    producer.begin_transaction()
    cluster.delay_next("Produce", delay_ms)
    producer.produce("out", value=b"late", partition=0)
    first = attempt(producer.commit_transaction)    # the timed-out batch makes the transaction abortable
    producer.abort_transaction()
    return first


# %% [markdown]
# ### 3.1 The hanging transaction
#
# The Produce of `late` is delayed by 20 s; the naive client gives up on it after 1 s, its commit
# fails, it aborts. The ABORT marker is written; when its 20 s are up, the delayed batch arrives, after the marker.
#
# How long a client waits for a Produce is one of the places where the two clients differ. librdkafka
# waits `socket.timeout.ms`, or what is left of the batch's first record's `message.timeout.ms` if that
# is less (a transactional producer's defaults: `transaction.timeout.ms` minus 100 ms, and
# `transaction.timeout.ms`); its `request.timeout.ms` is only how long the broker may wait for its
# replicas before it answers. The Java client waits `request.timeout.ms`. The story sets both to 1 s.

# %% jupyter={"source_hidden": true}
STUCK = ["stuck at the late batch, below the HW", "at the HW: the late batch is refused"]
p_stuck = Predict("With <code>transaction.version</code> 0 and verification <b>off</b>, the late batch lands after the "
                  "ABORT marker. Where is the LSO of <code>out-0</code> once an innocent record follows it?",
                  choices=STUCK, check=lambda: STUCK[0] if out0["lso"] < out0["hw"] else STUCK[1],
                  why="Nothing checks the late batch: it opens a transaction no coordinator knows about, and the LSO "
                      "stops at it for ever. Even the innocent record after it is hidden from read_committed until an "
                      "admin aborts the hanging transaction.")
p_stuck

# %%
hang = anomaly_cluster(tv=0, verification=False)
p = naive_producer(hang)
first_commit = late_produce_then_abort(hang, p, 20_000)
hang.advance(30_000)                                # the delayed Produce lands after the ABORT marker
innocent = Producer({"bootstrap.servers": hang.bootstrap})
innocent.produce("out", value=b"innocent", partition=0)
innocent.flush()
hang.run_until_idle()
out0 = hang.partition_state("out", 0)
print("commit_transaction said:", first_commit)
print("coordinator's view of 'naive':", hang.transaction_state("naive")["state"], "; out-0 HW", out0["hw"], "LSO", out0["lso"])
print("read_committed sees:", read(hang, "out"))
log_snapshot(hang, [("out", 0)], title="out-0: 'late' arrived after the ABORT marker and opened a transaction nobody will end")

# %%
late_offset = [b for b in hang.log("out", 0).batches if b.is_transactional and not b.is_control][0].base_offset
show(narration([e for e in hang.trace.filter(api="Produce") if not e.is_response and " txn," in e.narration]))

# %% [markdown]
# The coordinator says `CompleteAbort`: for it, the transaction is over. But the leader of `out-0`
# holds an open transaction from `late`'s offset on, and the LSO will stay there forever; every
# `read_committed` reader of `out-0` is stuck, including the innocent record behind it.
#
# The way out is operational: `kafka-transactions.sh find-hanging` and `abort` (KIP-664), here
# `AdminClient.find_hanging_transactions` and `AdminClient.abort_transaction`. *find-hanging* asks the
# partition leaders for their producers' open transactions (`DescribeProducers`), keeps those older
# than the maximum transaction timeout, and checks with the coordinators (`ListTransactions`,
# `DescribeTransactions`) whether anybody knows them. *abort* writes an ABORT marker for that producer
# and epoch directly (`WriteTxnMarkers`).

# %%
hang.advance(70_000)           # older than transaction.max.timeout.ms (60 s here): nobody can still be working on it
admin = AdminClient({"bootstrap.servers": hang.bootstrap})
hanging = admin.find_hanging_transactions([TopicPartition("out", 0)], max_transaction_timeout_ms=60_000)
for tp, ps in hanging:
    print(f"hanging: {tp.topic}-{tp.partition} producer", ps.producer_id, "epoch", ps.producer_epoch,
          "open since offset", ps.current_transaction_start_offset)
    admin.abort_transaction(AbortTransactionSpec(tp, ps.producer_id, ps.producer_epoch, ps.coordinator_epoch)).result()
hang.run_until_idle()
print("read_committed sees now:", read(hang, "out"))
log_snapshot(hang, [("out", 0)], title="After the admin's abort: an ABORT marker closes the hanging transaction")

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert first_commit.endswith("(abortable)")
assert out0["lso"] == late_offset < out0["hw"]               # stuck at the late batch
assert hang.transaction_state("naive")["state"] == "CompleteAbort"
assert len(hanging) == 1 and hanging[0][1].current_transaction_start_offset == late_offset
assert read(hang, "out") == ["innocent"]
st_after = hang.partition_state("out", 0)
assert st_after["lso"] == st_after["hw"]


# %% [markdown]
# ### 3.2 The same three stories under each protocol
#
# Now the three anomalies, each under the classic protocol and under the fix. For anomaly 2 the
# producer, after its abort, starts a new transaction that writes `new` to the same partition and
# commits; the delayed `late` arrives in the middle of it (5 s delay). For anomaly 3 a normal client
# commits `txn-N`, its `EndTxn` is delayed by 10 s; the client gives up on it after 2 s (librdkafka times
# `EndTxn` with `socket.timeout.ms`, the Java client with `request.timeout.ms`: the story sets both) and
# retries it; it then writes `txn-N+1`, the delayed `EndTxn` arrives, and the application aborts `txn-N+1`.

# %% [markdown]
# Fill in the table in your head before running it: for each anomaly and protocol, what does `read_committed`
# finally see? Then answer for the case that surprises most:

# %% jupyter={"source_hidden": true}
JOINS = ["yes: the aborted late is committed with new", "no: late is refused"]
p_joins = Predict("Anomaly 2 under classic + verification (KIP-890 part 1): does the aborted <code>late</code> "
                  "become visible to <code>read_committed</code>?", choices=JOINS,
                  check=lambda: JOINS[0] if "late" in results[("2 · late Produce joins the next transaction",
                                                               "classic (TV0) + verification (KIP-890 part 1)")]
                  else JOINS[1],
                  why="When late arrives, out-0 is in the producer's current transaction (the next one, same epoch), "
                      "so verification says yes and late is committed with new. Only transaction.version 2, with an "
                      "epoch per transaction, refuses it.")
p_joins

# %%
def hanging_story(tv, verification, client):
    c = anomaly_cluster(tv, verification)
    late_produce_then_abort(c, naive_producer(c, client=client), 20_000)
    c.advance(30_000)
    st = c.partition_state("out", 0)
    return c, "LSO stuck (hanging transaction)" if st["lso"] < st["hw"] else f"refused; sees {read(c, 'out', isolation='read_uncommitted')}"

def join_next_story(tv, verification, client):
    c = anomaly_cluster(tv, verification)
    p = naive_producer(c, client=client)
    late_produce_then_abort(c, p, 5_000)
    p.begin_transaction()
    p.produce("out", value=b"new", partition=0)
    p.commit_transaction()
    c.advance(10_000)
    return c, f"sees {read(c, 'out')}"

def delayed_end_txn_story(tv, verification, client):
    c = anomaly_cluster(tv, verification)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "k17754", "sim.client.dialect": client,
                  "socket.timeout.ms": 2_000, "request.timeout.ms": 2_000})   # EndTxn gives up after 2 s (either client)
    p.init_transactions()
    p.begin_transaction()
    p.produce("out", value=b"txn-N", partition=0)
    c.delay_next("EndTxn", 10_000)
    p.commit_transaction()              # the retried EndTxn commits N
    p.begin_transaction()
    p.produce("out", value=b"txn-N+1", partition=1)
    p.flush()
    c.advance(9_000)                    # the delayed EndTxn(commit) of N reaches the coordinator now
    try:
        p.abort_transaction()           # the application decides to abort N+1
    except (KafkaException, KafkaStateError):
        pass
    c.run_until_idle()
    return c, f"sees {read(c, 'out', partitions=(0, 1))}"

TV2 = "transaction.version 2, Java client (KIP-890 part 2)"
PROTOCOLS = {"classic (TV0), no verification": (0, False, "librdkafka"),
             "classic (TV0) + verification (KIP-890 part 1)": (0, True, "librdkafka"),
             "transaction.version 2, librdkafka client": (2, True, "librdkafka"),   # verification: Kafka's default
             TV2: (2, False, "java")}
STORIES = {"1 · late Produce after the abort": hanging_story,
           "2 · late Produce joins the next transaction": join_next_story,
           "3 · delayed EndTxn (KAFKA-17754)": delayed_end_txn_story}
results, clusters = {}, {}
for story, fn in STORIES.items():
    for proto, (tv, verification, client) in PROTOCOLS.items():
        clusters[(story, proto)], results[(story, proto)] = fn(tv, verification, client)
show(pd.DataFrame([{"anomaly": s, **{p: results[(s, p)] for p in PROTOCOLS}} for s in STORIES]))

# %%
tv2 = clusters[("3 · delayed EndTxn (KAFKA-17754)", TV2)]
show(narration(tv2.trace.filter(api="EndTxn")))

# %% [markdown]
# Reading the table:
#
# * **1** hangs only without verification. With verification (part 1) the leader asks the coordinator,
#   which answers that `out-0` is not in a current transaction, and the late write is refused.
# * **2** slips through part 1: when `late` arrives, `out-0` *is* in the producer's current
#   transaction (the next one, same epoch), so verification says yes and the aborted record is
#   committed with `new`. Only part 2 stops it: the next transaction has a higher epoch.
# * **3** is the same mistake with `EndTxn`: in TV0 the coordinator cannot tell transaction N's
#   commit from transaction N+1's. In TV2 every `EndTxn` bumps the epoch (its response carries the
#   new one): the delayed request still carries epoch 0 while transaction N+1 runs under epoch 1, so
#   the coordinator answers it `PRODUCER_FENCED` (an answer nobody hears: the producer closed that
#   connection when the request timed out, and its retry on a new connection had long committed N),
#   and the application's abort of N+1 goes through (the trace above).
# * **Part 2 needs a client that speaks it.** Kafka's Java client 4.0 and later does, when the cluster
#   finalizes `transaction.version` 2. librdkafka 2.x (what confluent-kafka runs, and this lab's default
#   client) does not yet: it still adds partitions with `AddPartitionsToTxn` and ends transactions with an
#   `EndTxn` older than version 5, and the coordinator then ends them the classic way, without an epoch
#   bump. On a TV2 cluster such a client is protected by part 1 (partition verification) only, and only
#   while `transaction.partition.verification.enable` is on (its default; a Java client of TV2 is verified
#   either way): the librdkafka column shows anomaly 1 refused, and 2 and 3 back. The lab's `"sim.client.dialect": "java"`
#   gives a producer the Java client's behaviour; the trace says which one ran ("the cluster finalized
#   transaction.version 2; a librdkafka client does not ...").

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
r = results
assert r[("1 · late Produce after the abort", "classic (TV0), no verification")].startswith("LSO stuck")
assert r[("1 · late Produce after the abort", "classic (TV0) + verification (KIP-890 part 1)")] == "refused; sees []"
assert r[("1 · late Produce after the abort", TV2)] == "refused; sees []"
assert r[("1 · late Produce after the abort", "transaction.version 2, librdkafka client")] == "refused; sees []"
assert r[("2 · late Produce joins the next transaction", "classic (TV0) + verification (KIP-890 part 1)")] == "sees ['late', 'new']"
assert r[("2 · late Produce joins the next transaction", TV2)] == "sees ['new']"
assert r[("2 · late Produce joins the next transaction", "transaction.version 2, librdkafka client")] == "sees ['late', 'new']"
assert r[("3 · delayed EndTxn (KAFKA-17754)", "classic (TV0), no verification")] == "sees ['txn-N', 'txn-N+1']"
assert r[("3 · delayed EndTxn (KAFKA-17754)", TV2)] == "sees ['txn-N']"
assert r[("3 · delayed EndTxn (KAFKA-17754)", "transaction.version 2, librdkafka client")] == "sees ['txn-N', 'txn-N+1']"
assert tv2.trace.filter(contains="PRODUCER_FENCED", api="EndTxn")

# %% [markdown]
# ## 4 · Step through it yourself: a zombie, a timeout, a late Produce
#
# Three scenarios from the lab's gallery, each a short version of a section above, stepped one moment
# at a time (**Step** or →; **Back** or ← re-runs from the seed; **Run** plays). In the
# **Coordinators** tab the state machine shows each `transactional.id` as a dot labelled with its
# **epoch** (`copier e1`): watch the label as the fence happens. A dashed coloured arrow is a
# transition being written to `__transaction_state`, a solid one the last that became durable.
#
# **4.1 A zombie** (`zombie-fenced`, section 1): instance `zombie` of `transactional.id` `copier`
# opens a transaction and writes `zombie-1`; instance `new-instance` calls `init_transactions()`;
# then the zombie writes `zombie-2` and tries to commit.

# %% [markdown]
# Step through it, watching the `copier` dot's epoch in the Coordinators tab; answer the two questions under
# the stepper.

# %%
from widgets import Stepper

zombie = Stepper("zombie-fenced")
zombie.widget

# %% jupyter={"source_hidden": true}
p_epoch = predict_at("Which epoch does <code>copier</code> have after the new instance's retried "
                     "<code>InitProducerId</code>?", "zombie-fenced", "new-instance calls begin_transaction()",
                     txn_value("copier", "producer_epoch"), kind="number",
                     why="One bump fences the old instance and aborts its open transaction (0 -> 1); the new "
                      "instance's retry gets a second one (1 -> 2): old epoch + 2.")
p_epoch

# %% jupyter={"source_hidden": true}
WHO = ["the partition leader, on its own", "the partition leader, after asking the coordinator"]
p_who_refuses = predict_at("Who refuses the zombie's <code>zombie-2</code>?", "zombie-fenced",
                           "rejected before verification -> INVALID_PRODUCER_EPOCH",
                           narration_says("request epoch 0 but the current epoch is 2", WHO[1], WHO[0]), choices=WHO,
                           why="The ABORT marker the fence wrote left epoch 1 in the leader's producer state: a batch of "
                            "epoch 0 is stale, and the leader refuses it before it would ask the coordinator "
                            "(KIP-890 verification is for a write of the current epoch to a partition new to the "
                            "transaction).")
p_who_refuses

# %% [markdown]
# **Check** what you should have seen (on a replay in a stepper of its own, never yours; it fails if the lab disagrees):

# %%
zombie_check = Stepper("zombie-fenced", skip_background=True)
assert zombie_check.step_until("got InitProducerId from new-instance")
assert "fence the old producer (epoch 0 -> 1) and abort it" in zombie_check.narration
assert "state Ongoing → writing PrepareAbort" in coordinator_says(zombie_check, "copier")
assert "producer id 2000 epoch 1" in coordinator_says(zombie_check, "copier")
assert zombie_check.step_until("epoch 1 -> 2")                           # the new instance's retry
assert zombie_check.step_until("rejected before verification -> INVALID_PRODUCER_EPOCH")
assert "but epoch 1 is already current there" in zombie_check.narration     # the leader refused on its own
assert not [a for a in arrows_now(zombie_check) if a[0] == "AddPartitionsToTxn"]    # nobody was asked
assert zombie_check.step_until("zombie got the Produce response")
assert "INVALID_PRODUCER_EPOCH" in zombie_check.narration
zombie_check.run_to_end()
assert trace_named(zombie_check.coordinators.figure, "transactional ids").text == ("copier e2",)
assert zombie_check.result["read_committed"] == ["fresh-1"]
zombie_check.close()

# %% [markdown]
# **4.2 The transaction timeout** (`transaction-timeout-abort`, section 2): a producer with
# `transaction.timeout.ms=3000` writes `late-1` to `orders-0` (its transaction starts at about
# 0.5 s) and then stalls for 8 s; the coordinator checks for expired transactions every second.
# Watch the clock in the narration header, the `tx-slow` dot and the LSO of `orders-0`.

# %% [markdown]
# Answer the question under the stepper first; then step until the coordinator acts (the clock is in the
# narration header; the key moment `timed-out` under the slider jumps there).

# %%
timeout = Stepper("transaction-timeout-abort")
timeout.widget


# %% jupyter={"source_hidden": true}
def abort_delay():
    run = moment("transaction-timeout-abort", "longer than its transaction.timeout.ms", skip_background=True)
    return run.cluster.now - run.cluster.transaction_state("tx-slow")["transaction_start_ms"]


WHEN = ["exactly 3 s after the transaction started", "between 3 s and 4 s after it started",
        "only when the producer wakes up"]
p_when = Predict("<code>transaction.timeout.ms</code> is 3000 and the coordinator checks every second. When does it "
                 "abort the stalled transaction?", choices=WHEN,
                 check=lambda: WHEN[0] if abort_delay() == 3000 else WHEN[1] if abort_delay() <= 4000 else WHEN[2],
                 why="The coordinator's periodic check finds the transaction older than its timeout: after the timeout, "
                     "within one check interval. It fences the producer (epoch 0 -> 1) and writes PrepareAbort.")
p_when

# %% [markdown]
# **Check** what you should have seen (on a replay in a stepper of its own, never yours; it fails if the lab disagrees):

# %%
timeout_check = Stepper("transaction-timeout-abort", skip_background=True)
assert timeout_check.step_until("longer than its transaction.timeout.ms")
started = timeout_check.cluster.transaction_state("tx-slow")["transaction_start_ms"]
assert 3000 < timeout_check.cluster.now - started <= 3000 + 1000       # after the timeout, within one check interval
assert "the coordinator fences the producer (epoch 0 -> 1)" in timeout_check.narration
assert "state Ongoing → writing PrepareAbort" in coordinator_says(timeout_check, "tx-slow")
assert (drawn_line(timeout_check.log_strip, "HW", "orders", 0), drawn_line(timeout_check.log_strip, "LSO", "orders", 0)) == (1, 0)
assert timeout_check.step_until(lambda s: s.cluster.partition_state("orders", 0)["lso"] == 2)
assert drawn_line(timeout_check.log_strip, "LSO", "orders", 0) == 2    # the ABORT marker is replicated: LSO free
assert timeout_check.step_until("EndTxn with epoch 0")
assert "-> PRODUCER_FENCED" in timeout_check.narration
timeout_check.run_to_end()
assert timeout_check.result["commit_error"] == {"name": "_FENCED", "code": -144, "fatal": True}   # librdkafka: fenced
timeout_check.close()

# %% [markdown]
# **4.3 A late Produce, classic protocol vs `transaction.version` 2**
# (`hanging-transaction-classic-vs-v2`, section 3.1): a naive client's Produce to `orders-0` is
# delayed 10 s in the network; the client gives up on it and aborts; the Produce arrives after the
# abort; later a plain producer writes `after-1`. The stepper starts with the **classic** variant
# (`transaction.version` 0, no verification). `hanging.variant("v2")` adds a branch that runs the
# same story with `transaction.version` 2 and a Java client (which speaks it), and **Branches → Compare
# endings** (or
# `hanging.compare(...)`) tells the two endings apart.

# %% [markdown]
# Step through the classic variant, then add the `v2` branch (run `hanging.variant("v2")` in a new cell: the
# stepper has no button for it) and compare the endings. Answer the question under the stepper first.

# %%
hanging = Stepper("hanging-transaction-classic-vs-v2")
hanging.widget


# %% jupyter={"source_hidden": true}
def classic_ending():
    run = moment("hanging-transaction-classic-vs-v2", None, skip_background=True)
    run.run_to_end()
    return run.result


p_after = Predict("In the classic variant, can a <code>read_committed</code> consumer read <code>after-1</code> at "
                  "the end?", choices=["yes", "no"],
                  check=lambda: "yes" if "after-1" in classic_ending()["read_committed"] else "no",
                  why="The late Produce opened a transaction the coordinator never ends (it already wrote CompleteAbort): "
                      "the LSO stays at late's offset and everything after it, after-1 included, stays hidden.")
p_after

# %% [markdown]
# **Check** what you should have seen (on a replay in a stepper of its own, never yours: it steps the classic
# variant, adds the `v2` branch and compares the endings; it fails if the lab disagrees):

# %%
hanging_check = Stepper("hanging-transaction-classic-vs-v2", skip_background=True)
assert hanging_check.step_until("got Produce from naive-producer")          # the delayed Produce, after the ABORT
assert "appended at offsets 1..1" in hanging_check.narration                 # classic: nobody checks, it opens a txn
hanging_check.run_to_end()
assert [drawn_line(hanging_check.log_strip, x, "orders", 0) for x in ("HW", "LSO")] == [3, 1]   # LSO stuck below HW
assert hanging_check.result["hanging"] == 1 and hanging_check.result["read_committed"] == []

hanging_check.variant("v2")                      # a branch: the same story with transaction.version 2
v2 = "v2"
assert hanging_check.step_until("got Produce from naive-producer")
assert "adds it to the transaction (transaction.version 2)" in hanging_check.narration   # the leader asks first ...
assert hanging_check.step_until("the write is refused -> INVALID_PRODUCER_EPOCH")        # ... and refuses: old epoch
assert "the connection naive-producer -> broker-0 was closed" in hanging_check.narration  # the client gave up on it
hanging_check.run_to_end()
assert [drawn_line(hanging_check.log_strip, x, "orders", 0) for x in ("HW", "LSO")] == [1, 1]
ending = hanging_check.compare("main", v2)["partitions"]["orders-0"]
assert ending["read_committed"]["only_in_b"] == ["after-1"]       # v2: the later record is readable
assert ending["read_uncommitted"]["only_in_a"] == ["late"]        # classic: the late record is in the log

# %%
from IPython.display import HTML
HTML(hanging_check.compare_html("main", v2))

# %% [markdown]
# ## Exercise: fence a zombie
#
# A producer `old` with `transactional.id` `app` has written `zombie` in a transaction and stalls. Write
# `restart(lab)`: start the application's new instance so that `old` can never commit. The lab then lets `old`
# try `commit_transaction()` and reads `orders` with `read_committed`.

# %% jupyter={"source_hidden": true}
def check_fence(fn):
    lab = Cluster(brokers=3, seed=21)
    lab.create_topic("orders", partitions=1, replication_factor=3)
    old = Producer({"bootstrap.servers": lab.bootstrap, "transactional.id": "app"})
    old.init_transactions()
    old.begin_transaction()
    old.produce("orders", value=b"zombie", partition=0)
    old.flush()
    fn(lab)
    try:
        old.commit_transaction()
        fenced = "old committed"
    except KafkaException as e:
        fenced = e.args[0].name()
    seen = read(lab, "orders")
    return fenced == "_FENCED" and "zombie" not in seen, f"old's commit: {fenced}; read_committed sees {seen}"


ex_fence = Exercise("Write <code>restart(lab)</code>: a new instance that fences <code>old</code>.", kind="code",
                    check=check_fence,
                    solution='def restart(lab):\n'
                             '    new = Producer({"bootstrap.servers": lab.bootstrap, "transactional.id": "app"})\n'
                             '    new.init_transactions()      # bumps the epoch, aborts what old left open\n'
                             '    return new')
ex_fence

# %%
def restart(lab):
    raise NotImplementedError          # your code here


ex_fence.submit(restart)

# %% [markdown]
# ## What to remember
#
# * `init_transactions()` bumps the epoch and aborts what the previous instance left open; a new
#   instance ends at old epoch + 2 when it had to fence an open transaction.
# * Old epoch at a partition leader: `INVALID_PRODUCER_EPOCH`. Old epoch at the coordinator:
#   `PRODUCER_FENCED`. confluent-kafka's producer raises the fatal `_FENCED` for both: close it. (The
#   Java producer treats the leader's answer as abortable.)
# * `transaction.timeout.ms` bounds how long a stuck producer can pin the LSO; the coordinator aborts
#   between the timeout and the timeout plus one cleanup interval, and fences the producer.
# * With one epoch for many transactions, late messages can join or end the wrong transaction.
#   Verification (KIP-890 part 1) stops hanging transactions; `transaction.version` 2 (part 2) stops
#   the rest. `find_hanging_transactions` and `abort_transaction` repair a partition by hand.

# %% [markdown]
# ## Where next
#
# **06 · Coordinator failures and timeouts**: the coordinator itself crashes (about 45 minutes).
# `GLOSSARY.md` explains every Kafka term used here; `INDEX.md` lists the gallery's scenarios by concept.
