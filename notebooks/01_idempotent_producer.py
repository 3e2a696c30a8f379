# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 · The idempotent producer
#
# **You need:** the tour (00); what a partition, an offset and a producer are. **Time:** about 45 minutes.
# **You will be able to:** explain why a retried write is never duplicated, read PIDs and sequence numbers in a log, and predict what a broker answers to a duplicate, a gap or a stale epoch.
#
# Messaging systems promise one of three delivery guarantees:
#
# | guarantee | what it means | how it happens |
# |---|---|---|
# | **at most once** | a message may be lost, never written twice | the producer never retries |
# | **at least once** | a message is never lost, but may be written twice | the producer retries when it is not sure |
# | **exactly once** | every message is written once and only once | retries are safe because the broker recognises them |
#
# The trouble starts with a network that loses messages. When a producer sends a write and hears
# nothing back, it cannot tell whether the **request** was lost (nothing was written) or the
# **acknowledgement** was lost (the write is in the log). Retrying is right in the first case and
# writes a duplicate in the second. Kafka 0.11 added the *idempotent producer* so that retrying is
# always right: every producer gets a **producer id (PID)**, and every batch it sends to a partition
# carries a **sequence number**. The broker keeps the last sequence numbers of each producer on each
# partition and recognises a retry it has already written.
#
# (The consumer has the same choice on its side: process then commit its offset is at least once,
# commit then process is at most once. Notebook 04 makes both atomic with a transaction.)
#
# Everything below runs on `txnlab`: a deterministic re-implementation of Kafka's brokers, the
# replication protocol and the clients, inside this notebook. The client API is confluent-kafka's.
# Time is simulated: a 30-second request timeout takes no real time, and the same seed always gives
# the same run.

# %%
from txnlab import Cluster, Producer, ConfigException
from txnlab.protocol.errors import Errors

# %% [markdown]
# Tables and pictures come from the lab's `widgets` package. They only *read* the cluster: its trace, its
# logs and its partition state (the *Check* cells also read back what a picture drew).

# %%
import pandas as pd

from widgets.tables import show, narration, batches_table
from widgets.snapshots import log_snapshot
from widgets.drawn import drawn_line
from widgets.predict import Exercise, Predict, moment
from widgets.reader import read

# %%
import plotly.graph_objects as go

def copies_in_log(cluster, topic, partition=0):
    """The values of every data record in the partition's log (the leader's replica)."""
    return [r.value.decode() for b in cluster.log(topic, partition).batches if not b.is_control for r in b.records]


# %% [markdown]
# ## 1 · One write, two kinds of lost message, three producers
#
# We write one record, `order-1`, to a topic with one partition replicated on three brokers, and
# make the network lose either the Produce **request** or the Produce **response**. We try three
# producer configurations:
#
# * **at most once**: `enable.idempotence=False, retries=0`: never retry;
# * **at least once**: `enable.idempotence=False` (retries stay at their default, 2 147 483 647);
# * **idempotent**: `enable.idempotence=True` (with `acks=all`).
#
# We set `enable.idempotence` explicitly every time. confluent-kafka's producer (librdkafka) is **not**
# idempotent unless you ask: its default is `false`. (Kafka's Java producer is idempotent by default since
# Kafka 3.2, 3.1.1 and 3.0.1; many articles describe that client.)
#
# `cluster.drop_next("Produce", response=...)` arms the fault: the next matching message on the
# simulated network disappears. A producer talks to a broker over a TCP connection, and TCP never
# silently drops one message while later ones arrive: it retransmits lost packets, and when it cannot
# deliver, the connection **breaks**. The lab models a lost message that way: the connection breaks and
# the producer notices one network latency later (a real client may notice only when the request times
# out: `request.timeout.ms`, 30 s, in the Java client; `socket.timeout.ms`, 60 s, in librdkafka).
# Every request that was waiting for an answer on that connection fails
# (the narration uses Kafka's name for it, `NETWORK_EXCEPTION`; librdkafka, whose API the lab's client
# follows, reports it to the application as its local error `_TRANSPORT`, -195), and, if it may retry,
# the producer sends them again on a **new connection**
# after `retry.backoff.ms` (100 ms). What it cannot know is whether the broker had received the
# request before the connection broke.

# %% [markdown]
# The next cell writes `order-1` once with each of three producers, losing first the request, then the
# response: six runs. Guess the six rows of its table (copies in the log, delivery report), then answer
# for the run that matters most:

# %% jupyter={"source_hidden": true}
p_copies = Predict(
    "An <b>at-least-once</b> producer (retries on, no idempotence) loses the <b>response</b> to its Produce. "
    "How many copies of <code>order-1</code> will the log hold?", kind="number",
    check=lambda: int(outcomes[(outcomes["producer"] == "at least once")
                               & (outcomes["lost message"] == "Produce response")]["copies in the log"].iloc[0]),
    why="The leader had appended the record before its answer was lost. The retry carries no producer id, so "
        "the leader cannot tell it from a new record and appends it again; the delivery report says success.")
p_copies

# %%
CONFIGS = {
    "at most once": {"enable.idempotence": False, "retries": 0},
    "at least once": {"enable.idempotence": False},
    "idempotent": {"enable.idempotence": True},
}

def one_write(config, lose):
    cluster = Cluster(brokers=3, seed=7)
    cluster.create_topic("orders", partitions=1, replication_factor=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, **config})
    reports = []
    producer.produce("orders", value=b"order-1", on_delivery=lambda err, msg: reports.append(err))
    cluster.drop_next("Produce", response=(lose == "response"))
    producer.flush()
    report = "success" if reports == [None] else f"failed: {reports[0].name()}"
    return cluster, producer, len(copies_in_log(cluster, "orders")), report

rows = []
for name, config in CONFIGS.items():
    for lose in ("request", "response"):
        _, _, copies, report = one_write(config, lose)
        rows.append({"producer": name, "lost message": f"Produce {lose}", "copies in the log": copies,
                     "delivery report": report})
outcomes = pd.DataFrame(rows)
show(outcomes)

# %%
fig = go.Figure()
for lose, colour in (("Produce request", "#9ECAE9"), ("Produce response", "#1F5FBF")):
    part = outcomes[outcomes["lost message"] == lose]
    fig.add_trace(go.Bar(x=part["producer"], y=part["copies in the log"], name=f"{lose} lost",
                         marker_color=colour, text=part["copies in the log"], textposition="outside"))
# the "exactly one copy" line is named in the legend (a word on the line would sit on a bar)
fig.add_hline(y=1, line_dash="dot", line_color="#2E7D32")
fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(dash="dot", color="#2E7D32"),
                         name="exactly one copy"))
fig.update_layout(title="Copies of order-1 in the log after one lost message", barmode="group",
                  yaxis=dict(title="copies in the log", dtick=1, range=[0, 2.6]), width=760, height=400,
                  plot_bgcolor="white", legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0),
                  margin=dict(t=90), font=dict(size=14))
fig

# %% [markdown]
# Read the table row by row:
#
# * **at most once** loses the record when the request is lost, and when the *response* is lost it
#   reports a failure (`_TRANSPORT`: the connection broke) for a record that *is* in the log.
#   The application cannot tell the two apart. (Kafka's Java client reports the same failure as
#   `NETWORK_EXCEPTION`.)
# * **at least once** never loses it, but the lost response makes it write `order-1` twice.
# * **idempotent** writes it exactly once either way, and the report is right both times.

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
table = {(r["producer"], r["lost message"]): (r["copies in the log"], r["delivery report"]) for r in rows}
assert table[("at most once", "Produce request")][0] == 0
assert table[("at most once", "Produce response")][0] == 1
assert table[("at most once", "Produce response")][1].startswith("failed")     # written, but reported as failed
assert table[("at least once", "Produce request")] == (1, "success")
assert table[("at least once", "Produce response")] == (2, "success")           # the duplicate
assert table[("idempotent", "Produce request")] == (1, "success")
assert table[("idempotent", "Produce response")] == (1, "success")

# %% [markdown]
# ## 2 · The lost acknowledgement, told by the trace
#
# Every step of the simulation (a message delivered, a timer firing, a fault) is recorded in
# `cluster.trace`, and each entry has a `.narration` that says in plain words what happened and which
# rule decided. Let us replay the idempotent producer with a lost response and read what the
# producer and the partition leader did.

# %% jupyter={"source_hidden": true}
RETRY = ["DUPLICATE_SEQUENCE_NUMBER, nothing appended", "NONE with the original offset 0, nothing appended",
         "NONE with offset 1: appended again"]
p_dup = Predict(
    "The idempotent producer's retry reaches the leader, which already has <code>order-1</code> at offset 0. What "
    "does the leader answer? (Older articles say <code>DUPLICATE_SEQUENCE_NUMBER</code>.)", choices=RETRY,
    check=lambda: (RETRY[1] if copies == 1 and any("original offset 0" in e.narration for e in story)
                   else RETRY[2] if copies == 2 else RETRY[0]),
    why="The leader finds (pid, epoch, sequence) among the batches it remembers for this producer: a duplicate. "
        "Brokers since 1.0 answer success with the original offset instead of an error.")
p_dup

# %%
cluster, producer, copies, report = one_write(CONFIGS["idempotent"], "response")
def tells_the_story(e):
    return e.api in ("InitProducerId", "Produce") or "[injected fault]" in e.narration or "will retry" in e.narration

story = [e for e in cluster.trace.filter() if tells_the_story(e)]
show(narration(story))

# %% [markdown]
# The story, line by line:
#
# 1. `InitProducerId`: the producer asks a broker for a producer id. An idempotent producer without
#    a `transactional.id` may ask any broker; nothing is persisted.
# 2. The first `Produce` carries `pid 0 epoch 0 seq 0..0`. The leader appends it at offset 0 and,
#    because `acks=all`, waits until the followers have it (the high watermark passes it).
# 3. The response is dropped by the network (the fault we armed), and the connection breaks. The
#    producer notices one latency later: the Produce fails with `NETWORK_EXCEPTION`, and after
#    `retry.backoff.ms` the producer sends **the same batch with the same sequence number** again,
#    on a new connection.
# 4. The leader finds `(pid 0, epoch 0, seq 0..0)` among the batches it remembers for this producer:
#    a duplicate. It appends nothing and answers **success with the original offset 0**
#    (error `NONE`; brokers since 1.0 no longer answer `DUPLICATE_SEQUENCE_NUMBER`).
#
# For comparison, the same lost response with the at-least-once producer: its batches carry no
# producer id (`-1`), so the leader has nothing to compare them with.

# %%
plain, plain_producer, _, _ = one_write(CONFIGS["at least once"], "response")
show(narration([e for e in plain.trace.filter(api="Produce") if not e.is_response or e.node == plain_producer.name]))

# %%
show(batches_table(plain, "orders"))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
dup = cluster.trace.filter(contains="duplicate of a batch already in the log")
assert len(dup) == 1 and "original offset 0" in dup[0].narration
assert copies_in_log(cluster, "orders") == ["order-1"]
assert copies_in_log(plain, "orders") == ["order-1", "order-1"]
assert [b.producer_id for b in plain.log("orders", 0).batches] == [-1, -1]       # no PID: nothing to compare
retry = cluster.trace.filter(node=producer.name, contains="will retry", include_background=True)
assert retry and "same sequence" in retry[0].narration

# %% [markdown]
# ## 3 · PID and sequence numbers in the log
#
# PID, epoch and sequence are fields of every v2 **record batch** header (`producerId`,
# `producerEpoch`, `baseSequence`). The sequence is counted **per partition**, starting at 0, and a
# batch of *n* records uses *n* sequence numbers (its last sequence is `baseSequence + n - 1`).
# librdkafka numbers each message of a partition when `produce()` queues it and writes the batch's
# `baseSequence` from that number when it builds the request; the Java producer assigns it at drain time.
#
# Note what idempotence does **not** do: two `produce()` calls with the same content are two records
# with two sequence numbers. Kafka deduplicates *retries*, not *content*.

# %% [markdown]
# A fresh idempotent producer writes `a1, a2, a3` to partition 0 (one flush), then `b1, b2` to partition 1,
# then `a4` and `a4` again (same value, twice) to partition 0. Think of the `base..last sequence` of each
# batch, then answer:

# %% jupyter={"source_hidden": true}
p_seq_p1 = Predict("Which sequence number does the first record of partition 1 (<code>b1</code>) carry?",
                   kind="number", check=lambda: seq_cluster.log("orders", 1).batches[0].base_sequence,
                   why="Sequence numbers are counted per partition: partition 1 starts at 0, although the producer "
                       "has already written three records to partition 0.")
p_seq_p1

# %% jupyter={"source_hidden": true}
p_seq_a4 = Predict("The two <code>a4</code> records (same value) go to partition 0 after <code>a1..a3</code>. Which "
                   "sequence does the second <code>a4</code> carry?", kind="number",
                   check=lambda: [b.base_sequence + i for b in seq_cluster.log("orders", 0).batches
                                  for i, r in enumerate(b.records) if r.value == b"a4"][-1],
                   why="Two produce() calls are two records with two sequence numbers (3 and 4): Kafka deduplicates "
                       "retries, not content.")
p_seq_a4

# %%
cluster = Cluster(brokers=3, seed=11)
cluster.create_topic("orders", partitions=2, replication_factor=3)
producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True})
for v in (b"a1", b"a2", b"a3"):
    producer.produce("orders", value=v, partition=0)
producer.flush()
for v in (b"b1", b"b2"):
    producer.produce("orders", value=v, partition=1)
producer.flush()
producer.produce("orders", value=b"a4", partition=0)
producer.produce("orders", value=b"a4", partition=0)      # same content: a second record, not a retry
producer.flush()
seq_cluster = cluster                                      # (the questions above read this cluster)
show(batches_table(cluster, "orders", 0))

# %%
show(batches_table(cluster, "orders", 1))

# %%
log_snapshot(cluster, [("orders", 0), ("orders", 1)], headers=True,
             title="Both partitions: one producer id, sequences counted per partition")

# %% [markdown]
# The broker keeps, for every producer on every partition, a `ProducerStateEntry`: the producer's
# epoch and the last **five** batches it wrote (first/last sequence and offsets). This is what it
# compares a retry with.

# %%
pid = producer.transaction_manager.producer_id
entry = cluster.log("orders", 0).producer_state.last_entry(pid)
print("producer", entry.producer_id, "epoch", entry.producer_epoch)
show(pd.DataFrame([{"first sequence": m.first_seq, "last sequence": m.last_seq,
                    "first offset": m.first_offset, "last offset": m.last_offset} for m in entry.batch_metadata]))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
b0 = [b for b in cluster.log("orders", 0).batches]
b1 = [b for b in cluster.log("orders", 1).batches]
assert {b.producer_id for b in b0 + b1} == {pid}                       # one PID for all partitions
assert [(b.base_sequence, b.last_sequence) for b in b0] == [(0, 2), (3, 4)]
assert [(b.base_sequence, b.last_sequence) for b in b1] == [(0, 1)]  # partition 1 starts again at 0
assert copies_in_log(cluster, "orders", 0).count("a4") == 2            # content is not deduplicated
assert entry.last_seq == 4


# %% [markdown]
# ## 4 · Five requests in flight: what keeps their order, and what breaks it
#
# A producer may have up to `max.in.flight.requests.per.connection` requests on the wire at once
# (at most 5 with idempotence). They travel on **one TCP connection** to the partition leader, and
# TCP delivers in order. The broker reads one request of a connection at a time and answers it before
# it reads the next one, so the requests of one connection are appended in the order they were sent.
#
# `linger.ms=0` and `batch.num.messages=1` make every record its own request.
#
# ### 4a · The first request is lost
#
# A lost packet does not make request 1 vanish while requests 2–5 land: the **connection breaks**. All
# five requests fail together with `NETWORK_EXCEPTION`, and the idempotent producer sends them again,
# in sequence order, on a new connection. The broker sees no gap. A plain producer keeps the order here
# too: librdkafka puts failed messages back into the queue in their original order. (The Java client
# puts each failed non-idempotent batch at the *head* of its queue, so it would send the five back
# reversed: `sim.client.dialect: "java"` shows it.)

# %% jupyter={"source_hidden": true}
ORDERS = ["m0, m1, m2, m3, m4, m5", "m0, m2, m3, m4, m5, m1", "m0, m2, m3, m4, m5"]
p_lost_order = Predict("Records <code>m0</code> (warm-up), then <code>m1 … m5</code> with the request of "
                       "<code>m1</code> lost. In which order will the idempotent producer's records stand in the log?",
                       choices=ORDERS, check=lambda: ", ".join(copies_in_log(lost, "t")),
                       why="The lost request breaks the connection: the four requests behind it fail with it, and the "
                           "producer sends all five again, in sequence order. The broker sees no gap and refuses nothing.")
p_lost_order

# %%
def five_in_flight(idempotent):
    cluster = Cluster(brokers=3, seed=7)
    cluster.create_topic("t", partitions=1, replication_factor=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0, "batch.num.messages": 1,
                         "enable.idempotence": idempotent})
    producer.produce("t", value=b"m0")
    producer.flush()
    cluster.drop_next("Produce")                  # the next Produce request (m1's) is lost
    for i in range(1, 6):
        producer.produce("t", value=b"m%d" % i)
    producer.flush()
    return cluster, producer

lost, lost_producer = five_in_flight(True)
lost_plain, _ = five_in_flight(False)
print("idempotent:", copies_in_log(lost, "t"))
print("plain:     ", copies_in_log(lost_plain, "t"))
show(narration([e for e in lost.trace.filter(contains="connection") if e.node in (lost_producer.name, "network")]))

# %% [markdown]
# The whole connection failed: the request of `m1` was dropped, the four requests behind it were
# lost with the connection, the producer failed all five with `NETWORK_EXCEPTION` and retried them
# with their sequence numbers 1 to 5, in order.

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert copies_in_log(lost, "t") == ["m0", "m1", "m2", "m3", "m4", "m5"]      # order kept
assert copies_in_log(lost_plain, "t") == ["m0", "m1", "m2", "m3", "m4", "m5"]  # librdkafka retries in order
assert not lost.trace.filter(contains="OUT_OF_ORDER_SEQUENCE_NUMBER")          # no gap: nothing refused
retried = lost.trace.filter(node=lost_producer.name, contains="after NETWORK_EXCEPTION")
assert retried and all(f"seq {i}..{i} after NETWORK_EXCEPTION" in retried[0].narration for i in range(1, 6))

# %% [markdown]
# ### 4b · The first request is refused, the next four are accepted
#
# What really reorders a producer with several requests in flight is a request that **fails with a
# retriable error while the requests behind it succeed**: its retry is sent after them, so it lands
# after them.
#
# Here is one way that happens. The topic has two replicas and `min.insync.replicas=2`: a write with
# `acks=all` needs both replicas in the ISR. The follower crashed a while ago and has just been
# restarted; it is not back in the ISR yet. The request of `m1` arrives: the ISR is too small, the
# leader answers `NOT_ENOUGH_REPLICAS` (retriable) and appends nothing. The network holds the request of
# `m2` for 700 ms (TCP retransmissions, say), and the requests `m3 … m5` behind it on the connection
# wait with it. Meanwhile the follower registers with the controller, is unfenced, catches up and
# rejoins the ISR (the leader adds it at its next fetch), so `m2 … m5` are accepted when they arrive. The retry of `m1`, sent 100 ms after the refusal (`retry.backoff.ms`) on the same
# connection, arrives behind them.

# %% jupyter={"source_hidden": true}
p_plain_order = Predict("With <code>enable.idempotence=False</code>, in which order will <code>m0 … m5</code> stand "
                        "in the log?", choices=ORDERS[:2], check=lambda: ", ".join(copies_in_log(plain, "t")),
                        why="m2 … m5 are accepted when they arrive; the retry of m1 comes after them and is appended "
                            "after them: the order is lost.")
p_plain_order

# %% jupyter={"source_hidden": true}
p_idem_order = Predict("And with <code>enable.idempotence=True</code>?", choices=ORDERS[:2],
                       check=lambda: ", ".join(copies_in_log(idem, "t")),
                       why="The leader refuses m2 … m5 with OUT_OF_ORDER_SEQUENCE_NUMBER (sequence 1 is missing); the "
                           "producer sends m1 … m5 again, in order (under a new epoch, from sequence 0), and the log "
                           "keeps the order of the sends.")
p_idem_order

# %%
def refused_first(idempotent):
    cluster = Cluster(brokers=2, seed=7)
    cluster.create_topic("t", partitions=1, replication_factor=2, config={"min.insync.replicas": 2})
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0, "batch.num.messages": 1,
                         "enable.idempotence": idempotent})
    producer.produce("t", value=b"m0")
    producer.flush()
    follower = 1 - cluster.leader("t")
    cluster.crash(follower)                                   # the follower drops out of the ISR ...
    cluster.run_until(lambda: len(cluster.partition_state("t")["isr"]) == 1, 60_000)
    cluster.restart(follower)                                 # ... and is on its way back
    for i in range(1, 6):
        producer.produce("t", value=b"m%d" % i)
    cluster.run_until(lambda: len([m for m in cluster.in_flight() if m.api == "Produce" and not m.is_response]) == 5, 1_000)
    requests = [m for m in cluster.in_flight() if m.api == "Produce" and not m.is_response]
    cluster.delay_message(requests[1].id, 700)                # m2's request (and all behind it) waits 700 ms
    producer.flush()
    return cluster, producer

plain, plain_producer = refused_first(False)
idem, idem_producer = refused_first(True)
show(pd.DataFrame({"offset": range(6), "enable.idempotence=False": copies_in_log(plain, "t"),
                   "enable.idempotence=True": copies_in_log(idem, "t")}))

# %% [markdown]
# The plain producer's log holds `m1` last: the leader appended whatever arrived, in the order it
# arrived. The idempotent producer's requests carry sequence numbers. The leader expected sequence 1
# (`m1`) and got 2, 3, 4, 5: a **gap**, refused with `OUT_OF_ORDER_SEQUENCE_NUMBER` and nothing appended.
# The producer, as librdkafka does, first lets the partition **drain**: `m1`'s retry waits until `m2 … m5`
# have been answered. Their refusals tell it that nothing after `m1` was written, so it **bumps its
# producer epoch itself** (0 → 1, no request needed) and sends `m1 … m5` again, in order, numbered from
# sequence 0 under the new epoch. (Kafka's Java client keeps the epoch instead: it retries `m1` while
# `m2 … m5` are still on the wire and then retries them with their old sequence numbers. The log ends in
# the same order either way.) The leader saw:

# %%
show(narration([e for e in idem.trace.filter(api="Produce") if not e.is_response
                and ("NOT_ENOUGH_REPLICAS" in e.narration or "OUT_OF_ORDER" in e.narration or "appended" in e.narration)]))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert copies_in_log(plain, "t") == ["m0", "m2", "m3", "m4", "m5", "m1"]      # reordered by the retry
assert copies_in_log(idem, "t") == ["m0", "m1", "m2", "m3", "m4", "m5"]       # order kept
for cluster_ in (plain, idem):
    assert len(cluster_.trace.filter(api="Produce", contains="-> NOT_ENOUGH_REPLICAS, nothing appended")) == 1
refused = [e for e in idem.trace.filter(api="Produce") if "OUT_OF_ORDER_SEQUENCE_NUMBER" in e.narration
           and not e.is_response]
assert len(refused) == 4 and all("a gap" in e.narration for e in refused)
# m1 ... m5 were written under the bumped epoch, numbered from 0 again
assert [(b.producer_epoch, b.base_sequence) for b in idem.log("t", 0).batches] == \
    [(0, 0), (1, 0), (1, 1), (1, 2), (1, 3), (1, 4)]
assert not plain.trace.filter(contains="OUT_OF_ORDER_SEQUENCE_NUMBER")          # no sequence numbers, no gap

# %% [markdown]
# Two neighbours of this case end differently with librdkafka. A **transactional** producer cannot bump
# its epoch on its own: the same gap fails its transaction, `commit_transaction()` raises an abortable
# `OUT_OF_ORDER_SEQUENCE_NUMBER`, and `abort_transaction()` asks the transaction coordinator for the next
# epoch (Kafka's Java client retries and commits). And if the leader refuses the batch **right after the
# last one it acknowledged**, the producer and the broker disagree about what was written: librdkafka
# stops the producer with a **fatal** error (Kafka's Java client bumps the epoch and sends the batch
# again, or in a transaction has it aborted).


# %% [markdown]
# ## 5 · The broker remembers five batches
#
# Why *five*? The broker caches only the last 5 batches of each producer on each partition
# (`NUM_BATCHES_TO_RETAIN = 5`), which is why a producer may have at most 5 requests in flight: any
# batch it could still retry is in the cache. A retry of something **older** than the cache cannot be
# told apart from a bogus write, and the broker refuses it with `OUT_OF_ORDER_SEQUENCE_NUMBER`.
#
# A real client never sends such a retry, so we build a tiny hand-made client that sends whatever
# batch we give it: a process on the simulated network that builds a `ProduceRequest` itself.

# %%
from txnlab.protocol.record_batch import Record, RecordBatch
from txnlab.protocol import messages as m
from txnlab.kernel.node import Node


class RawClient(Node):
    """A bare process that sends hand-made Produce requests (what a buggy or old client could send)."""

    def __init__(self, cluster, name="raw-client"):
        super().__init__(cluster.kernel, name)
        self.cluster = cluster

    def handle_request(self, msg):
        return None

    def produce(self, topic, partition, values, pid, epoch, seq):
        box = {}
        batch = RecordBatch(tuple(Record(None, v, (), self.kernel.now) for v in values), pid, epoch, seq, False)
        request = m.ProduceRequest(None, -1, 30_000, {(topic, partition): batch})
        leader = f"broker-{self.cluster.leader(topic, partition)}"
        self.send_request(leader, request, lambda resp, err: box.update(resp=resp, err=err))
        self.cluster.run_until(lambda: "resp" in box)
        answer = box["resp"].responses[(topic, partition)]
        return Errors(answer.error).name, answer.base_offset


# %% [markdown]
# Our client pretends to be producer 4000, epoch 0, and writes six one-record batches with
# sequences 0 to 5. Then it "retries" three of them.

# %% [markdown]
# The broker's cache now holds the last five batches. Answer before you run the retries:

# %% jupyter={"source_hidden": true}
ANSWERS = ["NONE, with its original offset", "OUT_OF_ORDER_SEQUENCE_NUMBER", "DUPLICATE_SEQUENCE_NUMBER", "INVALID_PRODUCER_EPOCH"]


def answer_named(code):
    return next((a for a in ANSWERS if a.startswith(code)), code)


p_seq0 = Predict("The cache holds the batches with sequences 1 to 5. What does the leader answer to a retry of "
                 "<b>sequence 0</b>?", choices=ANSWERS, check=lambda: answer_named(retries[0][0]),
                 why="Sequence 0 has fallen out of the five-batch cache: the leader cannot recognise it as a duplicate "
                     "and refuses it as out of order. Retries of 5 and 1 are recognised and answered with their "
                     "original offsets; nothing is written twice.")
p_seq0

# %%
cluster = Cluster(brokers=3, seed=7)
cluster.create_topic("t", partitions=1, replication_factor=3)
raw = RawClient(cluster)
first = [raw.produce("t", 0, [b"b%d" % i], pid=4000, epoch=0, seq=i) for i in range(6)]
window = [(meta.first_seq, meta.last_offset) for meta in cluster.log("t", 0).producer_state.last_entry(4000).batch_metadata]
print("first writes:", first)
print("cached (sequence, offset):", window)
retries = {seq: raw.produce("t", 0, [b"b%d" % seq], pid=4000, epoch=0, seq=seq) for seq in (5, 1, 0)}
show(pd.DataFrame([{"retried sequence": s, "answer": err, "offset in the answer": off}
                   for s, (err, off) in retries.items()]))

# %%
cached = {s for s, _ in window}
fig = go.Figure()
for in_cache, colour, name in ((True, "#1F5FBF", "in the broker's 5-batch cache"), (False, "#BDBDBD", "forgotten")):
    seqs = [s for s in range(6) if (s in cached) == in_cache]
    fig.add_trace(go.Bar(x=seqs, y=[1] * len(seqs), name=name, marker_color=colour, width=0.8,
                         text=[f"seq {s}<br>offset {s}" for s in seqs], textposition="inside",
                         insidetextanchor="middle", hoverinfo="skip"))
for s, (err, off) in retries.items():
    ok = err == "NONE"
    # seq 1's label stands low and to the right of its batch, seq 0's and seq 5's higher: no label meets another,
    # no two arrows cross
    fig.add_annotation(x=s, y=1, yanchor="bottom", ay=-40 if s == 1 else -85, ax={0: 40, 1: 90}.get(s, -70),
                       showarrow=True, arrowhead=2,
                       text=f"retry of seq {s}: " + (f"duplicate, NONE at offset {off}" if ok else err),
                       font=dict(color="#1B5E20" if ok else "#B71C1C", size=14),
                       arrowcolor="#1B5E20" if ok else "#B71C1C")
fig.update_layout(title="Retries of producer 4000: answered from the cache, or refused", width=820, height=400,
                  plot_bgcolor="white", yaxis=dict(visible=False, range=[0, 2.2]),
                  xaxis=dict(title="sequence number (one batch each; offset = sequence here)", dtick=1, range=[-0.6, 5.6]),
                  legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0), margin=dict(t=90), font=dict(size=14))
fig

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert [e for e, _ in first] == ["NONE"] * 6 and [o for _, o in first] == list(range(6))
assert [s for s, _ in window] == [1, 2, 3, 4, 5]                      # batch 0 fell out of the cache
assert retries[5] == ("NONE", 5) and retries[1] == ("NONE", 1)         # duplicates: the original offsets
assert retries[0][0] == "OUT_OF_ORDER_SEQUENCE_NUMBER"                 # too old to recognise
assert copies_in_log(cluster, "t") == ["b%d" % i for i in range(6)]   # nothing was written twice


# %% [markdown]
# ## 6 · The window after a broker restart
#
# The cache lives in memory. When a broker restarts it rebuilds producer state from disk: the newest
# **producer snapshot** (written at a segment roll and at a clean shutdown) plus a replay of the
# batches after it. A snapshot keeps only the **last** batch of each producer. So:
#
# * after a **clean** shutdown the snapshot is at the end of the log: the cache holds 1 batch;
# * after a **hard crash** with no snapshot yet, the whole log is replayed: all 5 batches are back.
#
# We use a one-broker cluster so that the restarted broker is the leader again.

# %% [markdown]
# Producer 4000 writes sequences 0–4, the broker restarts, and the producer retries sequence 3. Answer first:

# %% jupyter={"source_hidden": true}
p_hard = Predict("After a <b>hard crash</b> and restart, what does the leader answer to the retry of sequence 3?",
                 choices=ANSWERS, check=lambda: answer_named(hard_answer[0]),
                 why="After a crash the producer state is rebuilt by replaying the log, which restores all five "
                     "batches: the retry is recognised. A clean shutdown's snapshot keeps only the last batch, so "
                     "there the retry of 3 is out of order.")
p_hard

# %%
def after_restart(clean):
    cluster = Cluster(brokers=1, seed=3)
    cluster.create_topic("t")
    raw = RawClient(cluster)
    for i in range(5):
        raw.produce("t", 0, [b"b%d" % i], pid=4000, epoch=0, seq=i)
    cluster.crash(0, clean=clean)
    cluster.restart(0)
    cluster.run_until_idle()
    cached = len(cluster.log("t", 0).producer_state.last_entry(4000).batch_metadata)
    return cluster, cached, raw.produce("t", 0, [b"b3"], pid=4000, epoch=0, seq=3)

clean_cluster, clean_cached, clean_answer = after_restart(clean=True)
hard_cluster, hard_cached, hard_answer = after_restart(clean=False)
show(pd.DataFrame([
    {"restart": "clean shutdown", "batches cached after restart": clean_cached, "retry of seq 3": clean_answer},
    {"restart": "hard crash", "batches cached after restart": hard_cached, "retry of seq 3": hard_answer}]))

# %%
show(narration(clean_cluster.trace.filter(kind="fault") + hard_cluster.trace.filter(kind="fault")))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert clean_cached == 1 and clean_answer[0] == "OUT_OF_ORDER_SEQUENCE_NUMBER"
assert hard_cached == 5 and hard_answer == ("NONE", 3)

# %% [markdown]
# ## 7 · A stale epoch
#
# The **epoch** says which incarnation of a producer id is speaking. A batch whose epoch is lower
# than the one the broker has seen for that producer is refused with `INVALID_PRODUCER_EPOCH`: an
# older incarnation (a "zombie", notebook 05) must not write any more. A batch with a **newer**
# epoch starts a new sequence stream, so its first sequence must be 0.

# %% [markdown]
# Producer 4000 writes with epoch 3, sequence 0. Then it sends (epoch 2, seq 1), (epoch 4, seq 5) and
# (epoch 4, seq 0). Answer first:

# %% jupyter={"source_hidden": true}
p_stale = Predict("After writes with epoch 3, what does the leader answer to <b>(epoch 2, seq 1)</b>?",
                  choices=ANSWERS, check=lambda: answer_named(epochs[1]["answer"]),
                  why="An older epoch belongs to a fenced producer: INVALID_PRODUCER_EPOCH, nothing written. A newer "
                      "epoch must start again at sequence 0, so (4, 5) is out of order and (4, 0) is accepted.")
p_stale

# %%
cluster = Cluster(brokers=3, seed=7)
cluster.create_topic("t", partitions=1, replication_factor=3)
raw = RawClient(cluster)
attempts = [(3, 0, b"a"), (2, 1, b"z"), (4, 5, b"b"), (4, 0, b"b")]
epochs = [{"epoch": e, "sequence": s, "answer": raw.produce("t", 0, [v], pid=4000, epoch=e, seq=s)[0]}
          for e, s, v in attempts]
show(pd.DataFrame(epochs))

# %%
show(narration([e for e in cluster.trace.filter(api="Produce") if "rejected" in e.narration]))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert [a["answer"] for a in epochs] == ["NONE", "INVALID_PRODUCER_EPOCH", "OUT_OF_ORDER_SEQUENCE_NUMBER", "NONE"]
assert copies_in_log(cluster, "t") == ["a", "b"]

# %% [markdown]
# ## 8 · The configuration rules
#
# Idempotence only works if the producer retries (`retries` > 0), waits for every in-sync replica
# (`acks=all`: a write acknowledged by the leader alone can be lost, notebook 03) and keeps at most 5
# requests in flight (the broker's cache). The producer checks this when it is built:
#
# * if you set `enable.idempotence=True` and break a rule, construction fails with a
#   `ConfigException` quoting the rule (librdkafka's words here);
# * confluent-kafka's producer is not idempotent unless you ask (`enable.idempotence` defaults to
#   `false`), so without it the other settings are simply used as given;
# * a `transactional.id` needs idempotence (notebook 02).
#
# Kafka's Java producer differs: idempotence is on by default (KIP-679, planned for Kafka 3.0; a bug kept
# it off until 3.0.1, 3.1.1 and 3.2), and when it is only defaulted, a conflicting setting turns it off
# without an error (the client only logs a line). Kafka 4.0's client makes one exception: with
# idempotence defaulted, `max.in.flight.requests.per.connection` > 5 raises a `ConfigException`. The lab's
# config key `sim.client.dialect: "java"` gives a producer the Java client's defaults and rules as in
# Kafka 3.2 to 3.9; the last column uses it.

# %% [markdown]
# The next cell tries to build a producer from each of seven configurations, with librdkafka's rules and with the
# Java client's. Answer for two of them first:

# %% jupyter={"source_hidden": true}
BUILDS = ["raises a ConfigException", "builds an idempotent producer", "builds a producer that is not idempotent"]


def built(text):
    return BUILDS[0] if text.startswith("ConfigException") else BUILDS[1] if "(idempotent)" in text else BUILDS[2]


p_acks = Predict("<code>{\"enable.idempotence\": True, \"acks\": \"1\"}</code> with confluent-kafka (librdkafka):",
                 choices=BUILDS, check=lambda: built(rules[1]["confluent-kafka (librdkafka)"]),
                 why="Idempotence asked for explicitly needs acks=all: librdkafka refuses the configuration and names "
                     "the key.")
p_acks

# %% jupyter={"source_hidden": true}
p_java = Predict("<code>{\"acks\": \"1\"}</code> with the Java client's rules (idempotence on by default since 3.2):",
                 choices=BUILDS, check=lambda: built(rules[4]["Java client's rules"]),
                 why="When idempotence is only defaulted, the Java client turns it off for a conflicting acks "
                     "without an error (it only logs a line): the producer builds, and its batches carry no producer id.")
p_java

# %%
candidates = [
    {"enable.idempotence": True, "retries": 0},
    {"enable.idempotence": True, "acks": "1"},
    {"enable.idempotence": True, "max.in.flight.requests.per.connection": 6},
    {"transactional.id": "shop-1", "enable.idempotence": False},
    {"acks": "1"},
    {"max.in.flight.requests.per.connection": 6},
    {},
]
cluster = Cluster(brokers=1, seed=1)
cluster.create_topic("t")

def try_build(conf):
    try:
        p = Producer({"bootstrap.servers": cluster.bootstrap, **conf})
    except ConfigException as e:
        return f"ConfigException ({e.key}): {e.message}"
    p.produce("t", value=b"x")
    p.flush()
    pid = cluster.log("t", 0).batches[-1].producer_id
    return f"built; batches carry producer id {pid}" + (" (idempotent)" if pid >= 0 else " (-1: not idempotent)")

rules = [{"config": conf, "confluent-kafka (librdkafka)": try_build(conf),
          "Java client's rules": try_build({"sim.client.dialect": "java", **conf})} for conf in candidates]
show(pd.DataFrame(rules))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
results = [r["confluent-kafka (librdkafka)"] for r in rules]
java = [r["Java client's rules"] for r in rules]
assert "`retries` must be set >= 1 when `enable.idempotence` is true" in results[0]
assert "`acks` must be set to `all` when `enable.idempotence` is true" in results[1]
assert "`max.in.flight` must be set <= 5 when `enable.idempotence` is true" in results[2]
assert "`transactional.id` requires `enable.idempotence=true`" in results[3]
assert all("not idempotent" in r for r in results[4:])                  # librdkafka: off unless asked
assert "Must set acks to all in order to use the idempotent producer." in java[1]
assert "not idempotent" in java[4] and "not idempotent" in java[5]      # Java 3.x: defaulted, off without an error
assert "(idempotent)" in java[6]                                         # Java: on by default

# %% [markdown]
# ## 9 · Step through it yourself: the lost acknowledgement
#
# Section 2 read the lost acknowledgement from the trace after the fact. The **stepper** below replays
# a scenario from the lab's gallery, `dropped-ack-dedup`, one event at a time. Two producers each write
# `a, b, c`: the idempotent one to `orders-0`, one with `enable.idempotence=False` to `orders-1`. The
# scenario itself loses the first Produce **response** to each of them (it arms `drop_next` before
# each write): the connection breaks, and each producer reconnects and sends its batch again.
#
# * **Step** (or the → key) goes to the next *moment* (the *Step by* toggle switches to one request/response
#   *exchange* or to one kernel *event*: a message delivered or a timer firing). The
#   purple box says what happened and which rule decided. **Back** (←) goes one step back by
#   re-running the scenario from its seed, so the past is reproduced exactly; **Run** plays, the
#   slider jumps. `skip_background=True` skips the background chatter (empty follower fetches,
#   heartbeats).
# * The tabs follow every step. **Partition logs**: every replica of `orders-0` and `orders-1` (★ the
#   leader), one cell per offset (hover a cell for its producer id, epoch and sequence), with each
#   replica's LEO (thin black line) and HW (dashed blue; the wide orange line under it is the LSO of
#   notebook 03). **Messages**: the space-time diagram, one lane per process and time running down;
#   the step just executed is purple, a message still on the wire ends in an orange dot. **Trace**:
#   the last events in words.
# * **Faults** act *now*, at the current step. Pick an in-flight message (or click its orange dot in
#   the Messages tab) and **Drop** it. A fault starts a new **branch** and keeps the old one;
#   **Branches → Compare endings** says how two branches end differently.
#
# Step to the lost response (narration: *the network dropped Produce response*), to the moment the
# producer notices (*lost its connection*) and on to the retry (*duplicate of a batch already in the log*). Then go back to the start and build a branch in
# which the answer to each producer's **retry** is lost too: step until a Produce response to
# `idempotent-producer` is on the wire and drop it, then the same for `plain-producer`. (The first
# answers never get on the wire: the scenario's fault drops them as they are sent.)

# %% [markdown]
# In that branch each producer loses two answers instead of one. Answer the first question below before you
# build it; the check cell further down builds it too.

# %%
from widgets import Stepper

dedup = Stepper("dropped-ack-dedup")
dedup.widget


# %% jupyter={"source_hidden": true}
def retry_offset():
    import re
    run = moment("dropped-ack-dedup", "duplicate of a batch already in the log", skip_background=True)
    return int(re.search(r"original offset (\d+)", run.narration).group(1))


ENDS = ["orders-0 (the idempotent producer's)", "orders-1 (the plain producer's)", "both", "neither"]
p_branch = Predict("In the branch where each producer loses two answers, which partition's log ends differently from "
                   "the branch as written?", choices=ENDS,
                   check=lambda: {frozenset(): ENDS[3], frozenset({"orders-0"}): ENDS[0], frozenset({"orders-1"}): ENDS[1]}
                   .get(frozenset(ending["partitions"]), ENDS[2]),
                   why="Every retry of the idempotent producer is recognised, so orders-0 holds a, b, c once as before; "
                       "each retry of the plain producer appends a, b, c again, so orders-1 gets a third copy. Both "
                       "delivery reports say success.")
p_branch

# %% jupyter={"source_hidden": true}
p_offset = Predict("The idempotent producer's retry reaches the leader. With which offset does the leader answer?",
                   kind="offset", check=retry_offset,
                   why="The batch is already in the log at offset 0: the leader recognises (pid, epoch, sequence) and "
                       "answers success with the original offset, appending nothing.")
p_offset

# %% [markdown]
# **Check** what you should have seen. The cell replays the scenario in a stepper of its own, not shown (yours stays
# where you left it): it replays the branch as written, then builds the branch with two lost answers per producer
# and compares the endings (this cell fails if the lab disagrees):

# %%
dedup_check = Stepper("dropped-ack-dedup", skip_background=True)
assert dedup_check.step_until("the network dropped Produce response")
assert "orders-0 HW 0 -> 3" in dedup_check.narration            # written and replicated: only the answer is lost
assert dedup_check.step_until("duplicate of a batch already in the log")
assert "answering with the original offset 0" in dedup_check.narration
assert drawn_line(dedup_check.log_strip, "LEO", "orders", 0) == 3   # the retry appended nothing

def drop_answer_to(client):
    """Step until a Produce response to ``client`` is on the wire, then drop it (Faults → Drop)."""
    def answer(s):
        return next((m for m in s.in_flight() if m.api == "Produce" and m.is_response and m.dst == client), None)
    assert dedup_check.step_until(lambda s: answer(s) is not None)
    return dedup_check.drop(answer(dedup_check).id)

dedup_check.reset()
drop_answer_to("idempotent-producer")                    # the answer to its retry is lost too ...
lost_twice = drop_answer_to("plain-producer")            # ... and the plain producer's: a branch with both faults
dedup_check.run_to_end()
assert dedup_check.result == {"unacked_idempotent": 0, "unacked_plain": 0}      # every report says success
ending = dedup_check.compare("main", lost_twice)
assert "orders-0" not in ending["partitions"]                             # idempotent: a, b, c once, as before
assert ending["partitions"]["orders-1"]["read_uncommitted"]["only_in_b"] == ["a", "b", "c"]   # plain: a third copy
assert dedup_check.outcome(lost_twice)["partitions"]["orders-1"]["leo"] == 9

# %% [markdown]
# The comparison, as **Branches → Compare endings** shows it. The retries of the idempotent producer
# were recognised every time; each retry of the plain producer wrote `a, b, c` once more.

# %%
from IPython.display import HTML
HTML(dedup_check.compare_html("main", lost_twice))

# %% [markdown]
# ## Exercise: a producer that survives a lost acknowledgement
#
# Write `safe_config(bootstrap)`: the configuration (a dict) of a producer whose single record is written once
# even though the network loses the first answer to its `Produce`. The lab builds the producer on a fresh cluster,
# drops that answer, flushes, and counts the copies in the log.


# %% jupyter={"source_hidden": true}
def check_safe_config(fn):
    lab = Cluster(brokers=3, seed=4)
    lab.create_topic("orders", partitions=1, replication_factor=3)
    p = Producer(fn(lab.bootstrap))
    lab.drop_next("Produce", response=True)
    p.produce("orders", value=b"order-1", partition=0)
    p.flush(10)
    lab.run_until_idle()
    copies = read(lab, "orders", isolation="read_uncommitted")
    return copies == ["order-1"], f"the log holds {copies}"


ex_safe = Exercise("Write <code>safe_config(bootstrap)</code>: one copy despite a lost acknowledgement.", kind="code",
                   check=check_safe_config,
                   solution='def safe_config(bootstrap):\n'
                            '    return {"bootstrap.servers": bootstrap, "enable.idempotence": True}')
ex_safe

# %%
def safe_config(bootstrap):
    raise NotImplementedError          # your code here


ex_safe.submit(safe_config)

# %% [markdown]
# ## What to remember
#
# * A producer cannot tell a lost request from a lost acknowledgement; retrying is only safe if the
#   broker can recognise a retry. The **PID + per-partition sequence number** lets it.
# * A duplicate in the broker's cache is answered with **success and the original offset**; a gap is
#   `OUT_OF_ORDER_SEQUENCE_NUMBER`; an older epoch is `INVALID_PRODUCER_EPOCH`.
# * The cache holds **5 batches** per producer per partition, hence `max.in.flight ≤ 5`; after a
#   restart it is rebuilt from a snapshot that keeps one batch, plus replay.
# * Idempotence is per producer session and per partition. Writing to **several** partitions
#   atomically, and surviving a producer restart, needs a `transactional.id`: notebook 02.

# %% [markdown]
# ## Where next
#
# **02 · Transactions and markers**: one decision for writes to several partitions (about 45 minutes).
# `GLOSSARY.md` explains every Kafka term used here; `INDEX.md` lists the gallery's scenarios by concept.
