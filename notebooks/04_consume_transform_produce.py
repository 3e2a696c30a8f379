# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 · Consume, transform, produce
#
# **You need:** 02 and 03 (markers, LSO, isolation levels). **Time:** about 40 minutes.
# **You will be able to:** write a copier that reads, transforms, writes and commits its input offsets in one transaction, and say what happens to the offsets when it aborts.
#
# The typical stream-processing application reads records from an input topic, transforms them, and
# writes the results to an output topic. Besides its output it has a second piece of state: **how
# far it has read**, the consumer group's committed offsets (stored in the internal topic
# `__consumer_offsets`). If the output and the offsets are committed separately, a crash between the
# two breaks exactly-once:
#
# * output first, then offsets: after a crash the input is read again and the output is written
#   **twice** (at least once);
# * offsets first, then output: after a crash the input is skipped and the output is **lost**
#   (at most once).
#
# Kafka puts the offsets **into the producer's transaction**:
# `producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata())` sends
# `AddOffsetsToTxn` to the transaction coordinator (which adds the group's `__consumer_offsets`
# partition to the transaction) and `TxnOffsetCommit` to the group coordinator (which stores the
# offsets as *pending*). One commit decision covers output and offsets (each becomes visible when the
# COMMIT marker lands in its own partition); an abort discards both. The consumer must not commit offsets itself (`enable.auto.commit=False`).

# %%
import re
from collections import Counter
from txnlab import Cluster, Producer, Consumer, TopicPartition, KafkaException

# %% [markdown]
# Tables and pictures come from the lab's `widgets` package. They only *read* the cluster: its trace, its
# logs and its partition state (the *Check* cells also read back what a picture drew). `read` is a fresh
# consumer that reads a topic from the start; it polls the cluster like any client.

# %%
import pandas as pd
import plotly.graph_objects as go

from widgets.tables import show, narration, since
from widgets.snapshots import log_snapshot, message_flow
from widgets.drawn import trace_named, html_rows
from widgets.reader import read
from widgets.predict import Exercise, Predict, moment, reached

# %%
N = 30
CLUSTER_CONFIG = {"group.initial.rebalance.delay.ms": 0}   # a broker setting: start groups without waiting

def new_cluster(seed=7, outputs=("shipments",)):
    """Three brokers, an input topic `orders` with N records, and empty output topics."""
    cluster = Cluster(brokers=3, seed=seed, config=CLUSTER_CONFIG)
    for topic in ("orders",) + tuple(outputs):
        cluster.create_topic(topic, partitions=1, replication_factor=3)
    source = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(N):
        source.produce("orders", value=b"order-%02d" % i)
    source.flush()
    return cluster

def transform(msg):
    return b"shipped " + msg.value()

def consumer_for(cluster, group):
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
    c.subscribe(["orders"])
    return c

def committed(consumer):
    return consumer.committed([TopicPartition("orders", 0)])[0].offset

def read_output(cluster, topic, isolation="read_committed"):
    return [v.replace("shipped ", "") for v in read(cluster, topic, isolation=isolation, sort=False)]


# %% [markdown]
# ## 1 · The copier loop
#
# This is the classic consume–transform–produce loop (Kafka's own `TransactionalMessageCopier` runs it),
# in confluent-kafka's API. One round = one transaction:
#
# ```python
# msgs = consumer.consume(5, timeout)                  # up to 5 records
# producer.begin_transaction()
# for msg in msgs:
#     producer.produce("shipments", value=transform(msg))
# producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
#                                      consumer.consumer_group_metadata())
# producer.commit_transaction()
# ```
#
# The offsets to commit are the consumer's **positions** (the next offset to read), and
# `consumer_group_metadata()` carries the group id, the member id and the generation, so that the
# group coordinator can refuse offsets from a member that was replaced in a rebalance (KIP-447).

# %%
cluster = new_cluster()
consumer = consumer_for(cluster, "copier")
producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "copier-1"})
producer.init_transactions()

def copy_round(consumer, producer, out="shipments", end="commit"):
    msgs = [m for m in consumer.consume(5, 2.0) if m.error() is None]
    if not msgs:
        return 0
    producer.begin_transaction()
    for msg in msgs:
        producer.produce(out, value=transform(msg))
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()), consumer.consumer_group_metadata())
    if end == "commit":
        producer.commit_transaction()
    elif end == "abort":
        producer.abort_transaction()
    return len(msgs)

mark_first = len(cluster.trace)
copy_round(consumer, producer)
cluster.run_until_idle()
print("group metadata sent with the offsets:", consumer.consumer_group_metadata())
print("committed offset of the group after one round:", committed(consumer))

# %% jupyter={"source_hidden": true}
MARKED = ["shipments-0 only", "shipments-0 and the group's __consumer_offsets partition",
          "shipments-0 and orders-0 (the input)"]


def marked_in_round_one():
    names = set()
    for e in round1_markers:
        names |= set(re.findall(r"(shipments-0|orders-0|__consumer_offsets-\d+)", e.narration.split(";")[0]))
    offsets = any(n.startswith("__consumer_offsets") for n in names)
    return MARKED[1] if offsets and "orders-0" not in names else MARKED[2] if "orders-0" in names else MARKED[0]


p_marked = Predict("Which partitions received a COMMIT marker at the end of that round?", choices=MARKED,
                   check=marked_in_round_one,
                   why="The transaction wrote to shipments-0 and, through TxnOffsetCommit, to the partition of "
                       "__consumer_offsets that stores group copier: both get a marker. The input is only read.")
p_marked

# %%
APIS = ("AddPartitionsToTxn", "Produce", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "WriteTxnMarkers")
round1_markers = [e for e in since(cluster, mark_first) if e.api == "WriteTxnMarkers" and not e.is_response]
show(narration([e for e in since(cluster, mark_first)
                if e.api in ("AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "WriteTxnMarkers") and not e.is_response]))

# %% [markdown]
# The transaction spans two partitions: `shipments-0` (the output) and the `__consumer_offsets`
# partition that stores group `copier`. The offsets reached `__consumer_offsets` as a
# **transactional** batch of the copier's producer id; the group coordinator kept them pending until
# the COMMIT marker for that partition arrived, and only then made them the group's committed
# offsets. Here is the message flow of the **second** round (the first also had to find the group
# coordinator).

# %%
mark_second = len(cluster.trace)
copy_round(consumer, producer)
cluster.run_until_idle()
lanes = [producer.name] + [f"broker-{b}" for b in cluster.brokers]
message_flow(cluster, mark_second, APIS, lanes,
             title=f"Round 2: txn coordinator broker-{cluster.transaction_coordinator('copier-1')}, "
                   f"group coordinator broker-{cluster.group_coordinator('copier')}")

# %%
markers = [e for e in since(cluster, mark_second) if e.api == "WriteTxnMarkers" and not e.is_response]
show(narration(markers))

# %%
rounds = 2
while committed(consumer) < N and rounds < 20:
    copy_round(consumer, producer)
    rounds += 1
cluster.run_until_idle()
output = read_output(cluster, "shipments")
print(rounds, "rounds; output:", len(output), "records, distinct:", len(set(output)))
log_snapshot(cluster, [("shipments", 0)], title="shipments-0: six transactions of five records, each with its COMMIT marker",
             short=lambda v: v.replace("shipped order-", "#"), width=840)

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
marked = " ".join(e.narration for e in markers)
assert "shipments-0" in marked and "__consumer_offsets-" in marked      # output and offsets, one transaction
assert output == ["order-%02d" % i for i in range(N)]                    # everything once, in order
assert committed(consumer) == N
assert sum(1 for b in cluster.log("shipments", 0).batches if b.is_control) == rounds

# %% [markdown]
# ## 2 · Offsets that are not committed yet: `UNSTABLE_OFFSET_COMMIT`
#
# While a transaction holds pending offsets for a partition, what is the group's committed offset?
# Neither the old one (it may be replaced in a moment) nor the new one (it may be aborted). A
# consumer that asks (`OffsetFetch` with `RequireStable`, KIP-447: the Java consumer always sets it,
# librdkafka when `isolation.level` is `read_committed`, its default) gets the retriable error **`UNSTABLE_OFFSET_COMMIT`** and asks again until the marker has landed.
# This is what a new member of the group does when it takes over a partition after a rebalance.

# %% [markdown]
# In the middle of a round (offsets sent, transaction not yet committed), a second consumer of the group asks
# for the committed offset with a 1-second timeout. Answer first:

# %% jupyter={"source_hidden": true}
UNSTABLE_CHOICES = ["it gets the offset before the round (0)", "it gets the new offset (5)",
                    "it keeps retrying until its 1 s timeout"]
p_unstable = Predict(
    "Mid-round (offsets sent inside the transaction, not committed yet), a second consumer of the group asks "
    "for the committed offset with a 1-second timeout. What happens?", choices=UNSTABLE_CHOICES,
    check=lambda: {"_TIMED_OUT": UNSTABLE_CHOICES[2], 5: UNSTABLE_CHOICES[1]}.get(during, UNSTABLE_CHOICES[0]),
    why="The group coordinator holds the offsets as pending and answers OffsetFetch with UNSTABLE_OFFSET_COMMIT; "
        "the consumer retries until its timeout. Right after the commit it gets 5.")
p_unstable

# %%
cluster = new_cluster(seed=3)
consumer = consumer_for(cluster, "copier")
producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "copier-1"})
producer.init_transactions()
msgs = [m for m in consumer.consume(5, 2.0) if m.error() is None]
producer.begin_transaction()
for msg in msgs:
    producer.produce("shipments", value=transform(msg))
producer.send_offsets_to_transaction(consumer.position(consumer.assignment()), consumer.consumer_group_metadata())

observer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "copier", "enable.auto.commit": False})
mark = len(cluster.trace)
try:
    during = observer.committed([TopicPartition("orders", 0)], timeout=1.0)[0].offset
except KafkaException as e:
    during = e.args[0].name()
producer.commit_transaction()
after = observer.committed([TopicPartition("orders", 0)], timeout=1.0)[0].offset
print("during the transaction:", during, "   after the commit:", after)

# %%
unstable = [e for e in since(cluster, mark) if e.api == "OffsetFetch" and "UNSTABLE_OFFSET_COMMIT" in e.narration]
print(len(unstable), "OffsetFetch requests and responses mentioned UNSTABLE_OFFSET_COMMIT; the first two:")
show(narration(unstable[:2]))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert during == "_TIMED_OUT"                 # kept retrying UNSTABLE_OFFSET_COMMIT for the whole second
assert after == 5
assert len(unstable) >= 4


# %% [markdown]
# ## 3 · Aborting and rewinding (KAFKA-17582)
#
# An application may abort a transaction (a transform failed, a downstream check said no). The
# ABORT marker discards the output and the pending offsets, so the group's committed offset stays
# where it was. **But the consumer's position does not move back**: it already returned those
# records, and the client does not rewind on its own (the Kafka developers confirmed this is
# intended, KAFKA-17582). If the loop simply continues, the next transaction commits offsets *past*
# the aborted records: they are never processed.
#
# The fix, which Kafka's own copier and system tests use: after an abort, **seek back to the
# committed offsets**.
#
# Two copiers abort every third round; one rewinds, one does not.

# %% jupyter={"source_hidden": true}
p_missing = Predict("With 30 input records, 5 per round, and rounds 3, 6, 9, ... aborted: how many records are "
                    "missing from the output of the copier that does <b>not</b> rewind?", kind="number",
                    check=lambda: len(missing),
                    why="An abort discards the round's output, but the consumer's position has moved on: without a "
                        "seek back to the committed offsets those five records are never copied again (rounds 3 and 6 "
                        "lose 5 each before the input runs out).")
p_missing

# %% jupyter={"source_hidden": true}
p_rewound = Predict("How many duplicates does the copier that rewinds write?", kind="number",
                    check=lambda: len(with_rewind) - len(set(with_rewind)),
                    why="It seeks back to the committed offsets after each abort and copies those records again, in a "
                        "new transaction; the aborted attempt is never visible to read_committed: no duplicate.")
p_rewound

# %%
def rewind(consumer):
    for tp in consumer.committed(consumer.assignment()):
        consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))

def copier_with_aborts(do_rewind):
    cluster = new_cluster(seed=5)
    consumer = consumer_for(cluster, "copier")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "copier-1"})
    producer.init_transactions()
    rounds = 0
    while rounds < 30:
        rounds += 1
        end = "abort" if rounds % 3 == 0 else "commit"
        if copy_round(consumer, producer, end=end) == 0 and committed(consumer) >= N:
            break
        if end == "abort" and do_rewind:
            rewind(consumer)
    cluster.run_until_idle()
    return cluster, read_output(cluster, "shipments")

no_rewind_cluster, no_rewind = copier_with_aborts(False)
_, with_rewind = copier_with_aborts(True)
missing = sorted(set("order-%02d" % i for i in range(N)) - set(no_rewind))
print("without rewind:", len(no_rewind), "records; missing:", missing)
print("with rewind:   ", len(with_rewind), "records; duplicates:", len(with_rewind) - len(set(with_rewind)))

# %%
fig = go.Figure()
for name, out, colour in (("no rewind after abort", no_rewind, "#E45756"), ("seek to committed after abort", with_rewind, "#54A24B")):
    counts = Counter(out)
    fig.add_trace(go.Bar(x=["%02d" % i for i in range(N)], y=[counts.get("order-%02d" % i, 0) for i in range(N)],
                         name=name, marker_color=colour))
lost_runs = []                                   # the missing records, in runs of consecutive numbers
for i in sorted(int(m[-2:]) for m in missing):
    if lost_runs and lost_runs[-1][1] == i - 1:
        lost_runs[-1][1] = i
    else:
        lost_runs.append([i, i])
for first, last in lost_runs:
    fig.add_annotation(x=(first + last) / 2, y=1.25, text=f"{first:02d}–{last:02d} lost", showarrow=False,
                       font=dict(size=14, color="#B71C1C"))
fig.update_layout(title="Copies of each input record in the committed output", barmode="group", width=840, height=400,
                  yaxis=dict(title="copies", dtick=1, range=[0, 1.6]), xaxis=dict(title="input record order-NN"),
                  plot_bgcolor="white", font=dict(size=14),
                  legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0), margin=dict(t=90, l=60, r=10))
fig

# %%
log_snapshot(no_rewind_cluster, [("shipments", 0)], short=lambda v: v.replace("shipped order-", "#"), width=840,
             title="Without rewind: aborted rounds stay in the log (grey), never redone")

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert len(missing) == 10 and len(set(no_rewind)) == len(no_rewind)      # rounds 3 and 6 lost 5 records each
assert with_rewind == ["order-%02d" % i for i in range(N)]                # rewound: each record once, in order


# %% [markdown]
# ## 4 · A crash in the middle: at-least-once vs exactly-once
#
# Now the real test. Two copiers process the same input; each **crashes** in its third round, after
# writing the round's output and before committing, and is restarted (a new consumer and producer
# with the same group and, for the transactional one, the same `transactional.id`).
#
# * The **at-least-once** copier writes with a plain producer (not idempotent: librdkafka's default),
#   `flush()`es, then commits its offsets with `consumer.commit()`.
# * The **exactly-once** copier is the transactional loop above.
#
# `cluster.crash(client)` kills a client process: it sends nothing more and its memory is gone. The
# restarted consumer must wait for the group to notice that the old member is gone
# (`session.timeout.ms`, 6 s here) before it gets the partition.

# %% jupyter={"source_hidden": true}
p_alo = Predict("How many duplicates will the <b>at-least-once</b> output hold at the end?", kind="number",
                check=lambda: len(alo) - len(set(alo)),
                why="The crashed round's output was written (flushed) but its offsets were not committed: the "
                    "restarted copier reads those five records again and writes them a second time.")
p_alo

# %% jupyter={"source_hidden": true}
UNCOMMITTED = ["the same records as read_committed", "also the crashed round's aborted output"]
p_eos_ru = Predict("What does a <code>read_uncommitted</code> reader see in the <b>exactly-once</b> output?",
                   choices=UNCOMMITTED,
                   check=lambda: UNCOMMITTED[1] if len(eos_uncommitted) > len(eos) else UNCOMMITTED[0],
                   why="The crashed round's records stay in the log; the restarted producer's init_transactions() "
                       "aborted them. read_committed skips them, read_uncommitted does not.")
p_eos_ru

# %%
def crashing_copier(cluster, mode, crash_round=3):
    out = f"out-{mode}"
    def start():
        consumer = consumer_for(cluster, f"group-{mode}")
        if mode == "eos":
            producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "copier-eos"})
            producer.init_transactions()
        else:
            producer = Producer({"bootstrap.servers": cluster.bootstrap})
        return consumer, producer
    consumer, producer = start()
    rounds = 0
    while committed(consumer) < N and rounds < 40:
        rounds += 1
        msgs = [m for m in consumer.consume(5, 2.0) if m.error() is None]
        if not msgs:
            continue
        if mode == "eos":
            producer.begin_transaction()
        for msg in msgs:
            producer.produce(out, value=transform(msg))
        if mode == "eos":
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata())
        producer.flush()
        if rounds == crash_round:                   # output written, nothing committed yet
            cluster.crash(producer)
            cluster.crash(consumer)
            consumer, producer = start()
            continue
        if mode == "eos":
            producer.commit_transaction()
        else:
            consumer.commit(asynchronous=False)
    return rounds

cluster = new_cluster(seed=7, outputs=("out-alo", "out-eos"))
crashing_copier(cluster, "alo")
crashing_copier(cluster, "eos")
cluster.run_until_idle()
alo, eos = read_output(cluster, "out-alo"), read_output(cluster, "out-eos")
eos_uncommitted = read_output(cluster, "out-eos", "read_uncommitted")
show(pd.DataFrame([
    {"copier": "at least once (commit after produce)", "records": len(alo), "distinct": len(set(alo)),
     "duplicates": len(alo) - len(set(alo))},
    {"copier": "exactly once (transaction)", "records": len(eos), "distinct": len(set(eos)),
     "duplicates": len(eos) - len(set(eos))},
    {"copier": "exactly once, read with read_uncommitted", "records": len(eos_uncommitted),
     "distinct": len(set(eos_uncommitted)), "duplicates": len(eos_uncommitted) - len(set(eos_uncommitted))}]))

# %%
fig = go.Figure()
for name, out, colour in (("at least once", alo, "#E45756"), ("exactly once", eos, "#54A24B")):
    counts = Counter(out)
    fig.add_trace(go.Bar(x=["%02d" % i for i in range(N)], y=[counts.get("order-%02d" % i, 0) for i in range(N)],
                         name=name, marker_color=colour))
fig.update_layout(title="Copies of each input record after a crash in round 3 (read_committed)", barmode="group",
                  width=840, height=400, yaxis=dict(title="copies", dtick=1, range=[0, 2.6]),
                  xaxis=dict(title="input record order-NN"), plot_bgcolor="white", font=dict(size=14),
                  legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0), margin=dict(t=90, l=60, r=10))
fig

# %%
second_copies = [offset for offset, v in enumerate(alo) if v in alo[:offset]]    # out-alo has no markers: index = offset
first, last = second_copies[0], second_copies[-1]
fig = log_snapshot(cluster, [("out-alo", 0), ("out-eos", 0)], short=lambda v: v.replace("shipped order-", "#"), width=840,
                   title="The crashed round: written twice (top), aborted and grey (bottom)")
fig.add_shape(type="rect", x0=first - 0.5, x1=last + 0.5, y0=-0.36, y1=0.36, line=dict(color="#B71C1C", width=3))
fig.add_annotation(x=(first + last) / 2, y=-0.4, yanchor="bottom", showarrow=False,
                   text=f"offsets {first}–{last}: order-{alo[first][-2:]} … order-{alo[last][-2:]} again",
                   font=dict(size=14, color="#B71C1C"))
fig

# %% [markdown]
# What happened to the crashed transaction of the exactly-once copier? Nobody committed it. When the
# restarted copier called `init_transactions()` with the same `transactional.id`, the coordinator
# found the old transaction still `Ongoing`, **aborted it** (ABORT markers on the output and on
# `__consumer_offsets`) and bumped the producer epoch so the crashed instance could never write again.
# The aborted output stays in the log: a downstream reader with `read_uncommitted` still sees the
# duplicates. Exactly-once is a property of the whole pipeline, readers included. Notebook 05 is
# about that fencing.

# %%
show(narration([e for e in cluster.trace.filter(api="InitProducerId") if "copier-eos" in e.narration
                and not e.is_response]))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert len(alo) == N + 5 and len(set(alo)) == N           # the crashed round was written twice
assert eos == ["order-%02d" % i for i in range(N)]         # exactly once, in order
assert len(eos_uncommitted) == N + 5                       # the aborted round is still in the log
aborts = [b for b in cluster.log("out-eos", 0).batches if b.is_control and b.control_type.name == "ABORT"]
assert len(aborts) == 1

# %% [markdown]
# ## 5 · Step through it yourself: offsets inside the transaction
#
# The gallery scenario `consume-transform-produce` is the copier of section 1 in a smaller form: it
# reads `orders` (values `0 … 5`) two records at a time with `read_committed`, writes `value × 10` to
# `totals`, and commits its input offsets with `send_offsets_to_transaction()` in the same
# transaction. Its **second** transaction fails on purpose: the copier aborts it and rewinds to the
# committed offsets (section 3), then does the work again.
#
# Step through it (**Step** or →; **Back** or ← re-runs from the seed; **Filter → API** jumps between
# requests of one kind, e.g. `TxnOffsetCommit` or `WriteTxnMarkers`; if the pictures are cut at their right
# edge, hide the file browser with Ctrl+B). Two tabs matter here:
#
# * **Coordinators**: the transaction state machine with `copier-0`, and at the bottom the table
#   **`__consumer_offsets`** as the group coordinator holds it: each offset with its status,
#   *pending transaction* (yellow) until the transaction's marker has reached that partition, then
#   *committed*.
# * **Partition logs**: `orders-0` (the input) and `totals-0` (the output), with COMMIT and ABORT
#   markers (dark green and red cells; ◆ and ✕ where a cell is too narrow for the word); records of
#   an aborted transaction turn grey.

# %% [markdown]
# The buttons under the stepper's slider are the story's **key moments**: one click jumps to each. Answer the
# two questions under the stepper first, then click **1. The first transaction (outputs and input offsets) is
# decided** and look at the `__consumer_offsets` table in the *Coordinators* tab, then **2.**, **3.** and
# **4.** (Step, or ←/→, between them to see what changes).

# %%
from widgets import Stepper

ctp = Stepper("consume-transform-produce")
ctp.widget


# %% jupyter={"source_hidden": true}
def offsets_at(where):
    """The __consumer_offsets rows (partition, offset, status) as drawn, on a replay stopped at ``where``."""
    run = moment("consume-transform-produce", where, skip_background=True)
    return [row[2:5] for row in html_rows(run.coordinators.offsets_html.value)]


p_pending = Predict(
    "Key moment 1: the first transaction is decided (<code>PrepareCommit</code> is durable). Which status does the "
    "<code>__consumer_offsets</code> table show for <code>orders-0</code>?",
    choices=["committed", "pending transaction"],
    check=lambda: offsets_at(reached("first-prepare"))[0][2],
    why="The decision is in __transaction_state, but the offsets are a transactional write of the copier's producer "
        "id in __consumer_offsets: they stay pending until the COMMIT marker of that partition is written and "
        "replicated (one Step after key moment 2), and only then become the group's committed offset.")
p_pending

# %% jupyter={"source_hidden": true}
p_abort_offsets = Predict(
    "Key moment 3: the aborted second transaction's ABORT marker is written. Which committed offset does the table "
    "show for <code>orders-0</code>?", kind="offset",
    check=lambda: int(offsets_at(reached("abort"))[0][1]),
    why="The aborted attempt failed before send_offsets_to_transaction(): the group's offset stays where the first "
        "transaction left it (2), and the aborted output records stay in totals-0, grey.")
p_abort_offsets

# %% [markdown]
# **Check** what you should have seen. The cell replays the scenario in a stepper of its own (yours stays where
# you left it) and reads its `__consumer_offsets` table and strip as they are drawn (it fails if the lab disagrees):

# %%
ctp_check = Stepper("consume-transform-produce", skip_background=True)
def offsets():
    return [row[2:5] for row in html_rows(ctp_check.coordinators.offsets_html.value)]   # partition, offset, status


assert ctp_check.step_until("writing transactional offsets")
assert offsets() == [["orders-0", "2", "pending transaction"]]          # stored, not yet the group's offset
assert ctp_check.step_until(reached("first-prepare"))
assert offsets() == [["orders-0", "2", "pending transaction"]]          # decided, still pending
assert ctp_check.step_until("__consumer_offsets-1: wrote a COMMIT marker")
assert offsets() == [["orders-0", "2", "pending transaction"]]          # the marker is not replicated yet
ctp_check.granularity = "moment"
ctp_check.step()                                                        # one Step, as in your stepper
assert offsets() == [["orders-0", "2", "committed"]]                    # replicated: the group's offset now
ctp_check.granularity = "event"
assert ctp_check.step_until("writing CompleteCommit")
assert offsets() == [["orders-0", "2", "committed"]]                    # output and offsets: one commit

assert ctp_check.step_until("calls abort_transaction()")
assert ctp_check.step_until("wrote an ABORT marker") and ctp_check.position == ctp_check.moments.find("abort")
totals = trace_named(ctp_check.log_strip.figure, "totals-0").hovertext
assert sum("ABORTED" in h for h in totals) == 2                         # the failed attempt, grey on the leader
assert offsets() == [["orders-0", "2", "committed"]]                    # the group's offset did not move

ctp_check.run_to_end()
assert offsets() == [["orders-0", "6", "committed"]]
assert ctp_check.result["read_committed"] == ["0", "10", "20", "30", "40", "50"]
assert ctp_check.result["read_uncommitted"] == ["0", "10", "20", "30", "20", "30", "40", "50"]
ctp_check.close()

# %% [markdown]
# The offsets were written to `__consumer_offsets` long before they counted: as a pending,
# transactional write of the copier's producer id, turned into the group's committed offset by the
# same COMMIT marker that made the transaction's output visible in `totals`. The aborted attempt sent no
# offsets at all (it failed before `send_offsets_to_transaction()`); its two output records stay in
# `totals-0`, grey, and a `read_uncommitted` reader sees them twice.

# %% [markdown]
# ## Exercise: fix a copier that commits its offsets outside the transaction
#
# This round of a copier commits its output in a transaction, then the input offsets with the consumer's own
# `commit()`. A crash between the two copies the same input again:
#
# ```python
# def broken_round(consumer, producer):
#     msgs = [m for m in consumer.consume(5, 2.0) if m.error() is None]
#     producer.begin_transaction()
#     for msg in msgs:
#         producer.produce("shipments", value=transform(msg))
#     producer.commit_transaction()
#     consumer.commit(asynchronous=False)          # outside the transaction
# ```
#
# Write `fixed_round(consumer, producer)`. The lab runs it once on a fresh cluster and checks that the offsets
# went into the transaction (`TxnOffsetCommit`, no plain `OffsetCommit`) and that the group's committed offset
# equals the number of records copied.

# %% jupyter={"source_hidden": true}
def check_fixed_round(fn):
    lab = new_cluster(seed=9)
    consumer = consumer_for(lab, "fixer")
    producer = Producer({"bootstrap.servers": lab.bootstrap, "transactional.id": "fixer-1"})
    producer.init_transactions()
    mark = len(lab.trace)
    fn(consumer, producer)
    lab.run_until_idle()
    apis = {e.api for e in since(lab, mark) if not e.is_response}
    copied, offset = len(read_output(lab, "shipments")), committed(consumer)
    inside = "TxnOffsetCommit" in apis and "OffsetCommit" not in apis
    return (inside and copied > 0 and offset == copied,
            f"offsets {'inside' if inside else 'outside'} the transaction; {copied} copied, committed offset {offset}")


ex_fix = Exercise("Write <code>fixed_round(consumer, producer)</code>: output and input offsets in one transaction.",
                  kind="code", check=check_fixed_round,
                  solution='def fixed_round(consumer, producer):\n'
                           '    msgs = [m for m in consumer.consume(5, 2.0) if m.error() is None]\n'
                           '    producer.begin_transaction()\n'
                           '    for msg in msgs:\n'
                           '        producer.produce("shipments", value=transform(msg))\n'
                           '    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),\n'
                           '                                         consumer.consumer_group_metadata())\n'
                           '    producer.commit_transaction()')
ex_fix

# %%
def fixed_round(consumer, producer):
    raise NotImplementedError          # your code here


ex_fix.submit(fixed_round)

# %% [markdown]
# ## What to remember
#
# * In a consume-transform-produce loop the input offsets are **part of the output**: commit them
#   with `send_offsets_to_transaction(positions, consumer.consumer_group_metadata())`, never with
#   `consumer.commit()`.
# * The offsets are pending in `__consumer_offsets` until the marker; meanwhile `OffsetFetch` answers
#   `UNSTABLE_OFFSET_COMMIT` and the consumer retries.
# * After `abort_transaction()`, **seek back to the committed offsets** yourself (KAFKA-17582).
# * Downstream readers must use `read_committed`, or they see aborted attempts.

# %% [markdown]
# ## Where next
#
# **05 · Zombie fencing**: what stops an old instance of the same copier (about 45 minutes).
# `GLOSSARY.md` explains every Kafka term used here; `INDEX.md` lists the gallery's scenarios by concept.
