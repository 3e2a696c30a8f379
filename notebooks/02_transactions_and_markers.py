# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02 · Transactions and markers
#
# **You need:** the tour (00) and 01 (PIDs, epochs, sequence numbers). **Time:** about 45 minutes.
# **You will be able to:** name every request of a transaction in order, read `__transaction_state` and the markers in a log, and say at which moment a transaction is decided.
#
# The idempotent producer (notebook 01) makes retries safe on **one** partition, for **one** producer
# session. Two things are still missing:
#
# * **atomicity across partitions**: an order written to `orders` and its payment written to
#   `payments` must both be committed or both be discarded: one decision for both (each partition
#   then shows the committed records as soon as its own marker lands there);
# * **surviving a restart**: a new instance of the same application must finish or cancel whatever
#   its crashed predecessor left open, and the predecessor must never write again (notebook 05).
#
# Kafka's transactions give both. The application names itself with a stable **`transactional.id`**;
# a broker-side **transaction coordinator** keeps each transaction's state in the internal topic
# **`__transaction_state`**; and when a transaction ends, the coordinator writes a **COMMIT** or
# **ABORT marker** (a *control batch*) into every partition the transaction touched. There is no
# "BEGIN" marker in the data partitions: a transaction begins, for the coordinator, with its first
# `AddPartitionsToTxn`.
#
# In this notebook we follow one transaction request by request.

# %%
from txnlab import Cluster, Producer
from txnlab.coordinator.transaction_log import describe_record
from txnlab.coordinator.transaction_metadata import (VALID_PREVIOUS_STATES, TV2_EXTRA_PREVIOUS_STATES,
                                                     TransactionState, is_valid_transition)

# %% [markdown]
# Tables and pictures come from the lab's `widgets` package. They only *read* the cluster: its trace, its
# logs and its partition state (the *Check* cells also read back what a picture drew).

# %%
import pandas as pd
import plotly.graph_objects as go

from widgets.tables import show, narration, batches_table
from widgets.snapshots import log_snapshot, message_flow
from widgets.drawn import arrows_now, on_the_wire, coordinator_says, html_rows
from widgets.predict import Exercise, Predict, at_moment, predict_at, txn_value

# %% [markdown]
# ## 1 · The transactional API
#
# The same calls as the Java client's `initTransactions / beginTransaction / send /
# commitTransaction`, in confluent-kafka's spelling. `init_transactions()` finds the coordinator and
# obtains a producer id and epoch; `begin_transaction()` only changes the producer's local state;
# each `produce()` to a partition not yet in the transaction makes the producer send
# `AddPartitionsToTxn` first; `commit_transaction()` flushes and sends `EndTxn`.
#
# Our cluster has 3 brokers and Kafka's default of **50** `__transaction_state` partitions (created
# on first use). `mark` remembers where the trace stood, so that we can read what each call did.

# %%
cluster = Cluster(brokers=3, seed=7)
cluster.create_topic("orders", partitions=2, replication_factor=3)
cluster.create_topic("payments", partitions=1, replication_factor=3)

producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "shop-1"})
mark_init = len(cluster.trace)
producer.init_transactions()
print("producer id", producer.transaction_manager.producer_id, "epoch", producer.transaction_manager.producer_epoch)


# %% [markdown]
# ## 2 · Which broker is the coordinator?
#
# Every `transactional.id` belongs to one partition of `__transaction_state`:
#
#     partition = Utils.abs(transactionalId.hashCode()) % transaction.state.log.num.partitions
#
# (Java's `String.hashCode`, the same formula that places a consumer group on `__consumer_offsets`.)
# The **leader** of that partition is the transaction coordinator for this id. The producer asks any
# broker with `FindCoordinator` (key type 1 = TRANSACTION).

# %% [markdown]
# Compute the partition for `"shop-1"` yourself, before you look at the trace: the two functions below are
# Java's `String.hashCode` and Kafka's `Utils.abs` (call them in a new cell), or work it out by hand.

# %% jupyter={"source_hidden": true}
def java_string_hash(s):
    h = 0
    for ch in s.encode("utf-16-be").decode("utf-16-be"):   # Java hashes UTF-16 code units
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h

def kafka_abs(n):
    return 0 if n == -(1 << 31) else abs(n)              # Utils.abs: MIN_VALUE maps to 0


p_partition = Predict(
    "Which partition of <code>__transaction_state</code> (of 50) does <code>shop-1</code> belong to? Its leader "
    "is the coordinator that answers <code>InitProducerId</code>.", kind="number",
    check=lambda: cluster.transaction_state("shop-1")["transaction_state_partition"],
    why="abs(hashCode('shop-1')) % 50, with Java's String.hashCode and Kafka's Utils.abs: the coordinator "
        "stored shop-1 in exactly that partition.")
p_partition

# %% [markdown]
# Answer first; then the trace shows who answered:

# %%
my_partition = kafka_abs(java_string_hash("shop-1")) % 50
show(narration([e for e in cluster.trace.events[mark_init:]
                if e.api in ("FindCoordinator", "InitProducerId") and not e.background]))

# %% [markdown]
# The first `FindCoordinator` found no `__transaction_state` yet, so the broker had it created and
# answered `COORDINATOR_NOT_AVAILABLE` (retriable). The retry found the coordinator. `InitProducerId`
# then gave `shop-1` a producer id (from a block of 1000 that the coordinator got from the
# controller) and **epoch 0**, and wrote the mapping `shop-1 → (pid, epoch 0, state Empty)` to
# `__transaction_state` before answering. The answer waited until that record was replicated:
# the coordinator writes with `acks=all`.

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
coordinator = cluster.transaction_coordinator("shop-1")
state = cluster.transaction_state("shop-1")
assert state["transaction_state_partition"] == my_partition
assert coordinator == cluster.leader("__transaction_state", my_partition)
assert state["state"] == "Empty" and state["producer_epoch"] == 0
assert state["producer_id"] == producer.transaction_manager.producer_id
init = [e for e in cluster.trace.events[mark_init:] if e.api == "InitProducerId" and not e.is_response]
assert init[-1].node == f"broker-{coordinator}"

# %% [markdown]
# ## 3 · One transaction, request by request
#
# The order `o-1` goes to `orders` (partitions 0 and 1, one line each) and its payment to `payments`.

# %% [markdown]
# Before you run it, think of the requests you expect, in order, with their sender and receiver; then
# answer two of them. (The lab reads the answers from the trace of the next cell: run it before *Check*.)

# %% jupyter={"source_hidden": true}
APIS = ("AddPartitionsToTxn", "Produce", "EndTxn", "WriteTxnMarkers")
mark_txn = len(cluster.trace)


def txn_requests():
    """The requests of section 3's transaction, in the order they were sent (the cell below runs it)."""
    return [e for e in cluster.trace.events[mark_txn:] if e.api in APIS and not e.is_response and not e.background]


p_first = Predict("After <code>begin_transaction()</code> and the first <code>produce()</code>, which request does "
                  "the producer send first?", choices=["Produce", "AddPartitionsToTxn", "EndTxn"],
                  check=lambda: txn_requests()[0].api,      # (none yet: Check asks to run the cell first)
                  why="A partition must be in the transaction before a transactional record is written to it: "
                      "AddPartitionsToTxn to the coordinator comes first, then Produce to the partition's leader.")
p_first

# %% jupyter={"source_hidden": true}
SENDERS = ["the producer, to each partition leader", "the transaction coordinator, to each partition leader",
           "each partition leader, to the coordinator"]


def marker_sender():
    sent = [e for e in txn_requests() if e.api == "WriteTxnMarkers"]
    if not sent:
        raise LookupError("the transaction has not run yet")      # Check asks to run the cell first
    by_coordinator = {e.src for e in sent} == {f"broker-{cluster.transaction_coordinator('shop-1')}"}
    return SENDERS[1] if by_coordinator else SENDERS[0] if {e.src for e in sent} == {producer.name} else SENDERS[2]


p_sender = Predict("Who sends the <code>WriteTxnMarkers</code> requests, and to whom?", choices=SENDERS,
                   check=marker_sender,
                   why="Markers are the coordinator's job: once PrepareCommit is durable it asks every leader of a "
                       "partition in the transaction to append a COMMIT marker (one request per broker).")
p_sender

# %%
mark_txn = len(cluster.trace)
producer.begin_transaction()
producer.produce("orders", key=b"o-1", value=b"o-1 line 1", partition=0)
producer.produce("orders", key=b"o-1", value=b"o-1 line 2", partition=1)
producer.produce("payments", key=b"o-1", value=b"o-1 paid", partition=0)
producer.commit_transaction()
cluster.run_until_idle()          # let the coordinator finish its work

# %%
lanes = [producer.name] + [f"broker-{b}" for b in cluster.brokers]
message_flow(cluster, mark_txn, APIS, lanes,
             title=f"shop-1's transaction: the coordinator is broker-{coordinator}")

# %%
story = [e for e in cluster.trace.events[mark_txn:] if e.api in APIS and not e.background]
show(narration(story))

# %% [markdown]
# Reading the trace top to bottom:
#
# 1. **AddPartitionsToTxn** (producer → coordinator): before the first write to a partition, the
#    producer registers it. The coordinator writes `Ongoing` with the partition set to
#    `__transaction_state`; the first one starts the transaction's timer (`transaction.timeout.ms`).
#    The producer learned the `payments` leader later, so `payments-0` came in a second request.
# 2. **Produce** (producer → partition leaders): ordinary batches, with `isTransactional` set and the
#    pid, epoch and sequence of notebook 01. Since Kafka 3.6, before it appends the transaction's
#    first batch on a partition, the leader checks with the coordinator that the partition really is
#    in the transaction (an `AddPartitionsToTxn` with *verify only*, KIP-890; notebook 05 shows what it
#    prevents).
# 3. **EndTxn** (producer → coordinator): `COMMIT`. The coordinator writes **`PrepareCommit`**. Once
#    that record is replicated the outcome is **decided**: the coordinator answers the producer
#    *now*, and `commit_transaction()` returns.
# 4. **WriteTxnMarkers** (coordinator → each partition leader, one request per broker): each leader
#    appends a COMMIT control batch. When every partition has acknowledged, the coordinator writes
#    **`CompleteCommit`**.

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
first = {}
for e in story:
    key = (e.api, e.is_response)
    first.setdefault(key, e.step)
assert first[("AddPartitionsToTxn", False)] < first[("Produce", False)] < first[("EndTxn", False)] \
    < first[("WriteTxnMarkers", False)]
end_txn_response = [e for e in story if e.api == "EndTxn" and e.is_response][0]
markers = [e for e in story if e.api == "WriteTxnMarkers" and not e.is_response]
assert end_txn_response.step <= min(e.step for e in markers) + 1        # answered before the markers landed
assert all(e.src == f"broker-{coordinator}" for e in markers)          # the coordinator sends the markers
assert {e.node for e in markers} == {f"broker-{cluster.leader(t, p)}" for t, p in
                                     (("orders", 0), ("orders", 1), ("payments", 0))}
assert cluster.transaction_state("shop-1")["state"] == "CompleteCommit"


# %% [markdown]
# ## 4 · What `__transaction_state` holds
#
# Every state change of a transaction is one record in its `__transaction_state` partition, keyed
# by the `transactional.id` (the topic is compacted: the newest record per key is the state). The
# value carries the producer id and epoch, the timeout, the **state** and the **partition set**.
# `describe_record` decodes one.

# %%
def transaction_log(cluster, transactional_id):
    part = cluster.transaction_state(transactional_id)["transaction_state_partition"]
    rows = []
    for batch in cluster.log("__transaction_state", part).batches:
        for offset, record in enumerate(batch.records, start=batch.base_offset):
            row = describe_record(record.key, record.value)
            if row["transactional_id"] == transactional_id:
                rows.append({"offset": offset, **row})
    return pd.DataFrame(rows)


# %% jupyter={"source_hidden": true}
p_records = Predict(
    "How many records does <code>shop-1</code> have in its <code>__transaction_state</code> partition now "
    "(after one committed transaction)? Think of the state each one carries.", kind="number",
    check=len(transaction_log(cluster, "shop-1")),        # read now: the chapter's cluster moves on below
    why="Empty (InitProducerId), Ongoing (first AddPartitionsToTxn), Ongoing again (payments-0 added later), "
        "PrepareCommit (the decision) and CompleteCommit (after the markers): every transition is a record.")
p_records

# %% [markdown]
# Answer first; then the table shows the records:

# %%
show(transaction_log(cluster, "shop-1"))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
txlog = transaction_log(cluster, "shop-1")
assert list(txlog["state"]) == ["Empty", "Ongoing", "Ongoing", "PrepareCommit", "CompleteCommit"]
assert txlog["partitions"].iloc[3] == [("orders", 0), ("orders", 1), ("payments", 0)]
assert set(txlog["producer_epoch"]) == {0}

# %% [markdown]
# ## 5 · The markers in the partition logs
#
# A marker is a **control batch**: one record, both `isTransactional` and `isControl` set, the
# transaction's pid and epoch, no sequence. Its key holds the type (**0 = ABORT, 1 = COMMIT**) and
# its value the coordinator epoch. It takes an offset like any record, so a committed transaction
# leaves a visible gap in the offsets a consumer sees. A consumer fetches control batches but skips them:
# `poll()` never returns one.

# %%
show(batches_table(cluster, "orders", 0))

# %%
log_snapshot(cluster, [("orders", 0), ("orders", 1), ("payments", 0)], title="After the commit: data, then a COMMIT marker")

# %% [markdown]
# Now a second transaction that the application **aborts**. The coordinator writes `PrepareAbort`,
# then ABORT markers, then `CompleteAbort`. The aborted records stay in the log (a log is
# append-only); the marker tells readers to skip them (notebook 03).

# %% jupyter={"source_hidden": true}
def offsets_2_and_3():
    if not abort_ran:
        raise LookupError("the abort has not run yet")      # Check asks to run the next cell first
    kinds = [b.control_type.name if b.is_control else "data" for b in cluster.log("orders", 0).batches][2:4]
    return {("data", "ABORT"): "the aborted record at 2, an ABORT marker at 3",
            ("ABORT",): "an ABORT marker at 2, nothing at 3"}.get(tuple(kinds), "nothing new: an abort removes the record")


abort_ran = False              # (the next cell runs the abort)
p_abort = Predict("After the abort, what will <code>orders-0</code> hold at offsets 2 and 3?", choices=["the aborted record at 2, an ABORT marker at 3", "nothing new: an abort removes the record", "an ABORT marker at 2, nothing at 3"],
                  check=offsets_2_and_3,
                  why="A log is append-only: the aborted record stays at offset 2 and the ABORT marker (a control "
                      "batch with an offset of its own) follows it at 3. read_committed readers skip both.")
p_abort

# %%
abort_ran = True
producer.begin_transaction()
producer.produce("orders", key=b"o-2", value=b"o-2 line 1", partition=0)
producer.produce("payments", key=b"o-2", value=b"o-2 paid", partition=0)
producer.flush()
producer.abort_transaction()
cluster.run_until_idle()
show(batches_table(cluster, "orders", 0))

# %%
log_snapshot(cluster, [("orders", 0), ("orders", 1), ("payments", 0)], title="After the abort: aborted data stays, an ABORT marker follows it")

# %%
show(transaction_log(cluster, "shop-1").tail(4))

# %% [markdown]
# Two details to notice. `orders-1` got no marker for the second transaction: it was never added
# to it, so the coordinator does not write there. And with the classic protocol (Kafka before 4.0,
# `transaction.version` 0) the sequence numbers simply continue across transactions under the same
# epoch. A client that speaks `transaction.version` 2 (Kafka's Java client 4.0+; librdkafka 2.x does not
# yet) ends every transaction with an epoch bump and restarts its sequences at 0.

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
b = list(cluster.log("orders", 0).batches)
assert [x.control_type.name if x.is_control else "data" for x in b] == ["data", "COMMIT", "data", "ABORT"]
commit, aborted, abort = b[1], b[2], b[3]
assert commit.is_transactional and commit.is_control and commit.base_sequence == -1
assert commit.records[0].key[2:4] == b"\x00\x01" and abort.records[0].key[2:4] == b"\x00\x00"  # type 1 / 0
assert aborted.base_sequence == 1 and aborted.producer_epoch == 0           # sequences continue (TV0)
assert [x.control_type.name for x in cluster.log("orders", 1).batches if x.is_control] == ["COMMIT"]
assert list(transaction_log(cluster, "shop-1")["state"])[-3:] == ["Ongoing", "PrepareAbort", "CompleteAbort"]

# %% [markdown]
# ## 6 · The coordinator's state machine
#
# The coordinator moves a transactional id through these states (their ids are what
# `__transaction_state` stores). Kafka keeps the legal moves as a table: for each target state, the
# states it may be entered from. A transition is written to the log first and applied only when the
# write is durable (a *pending* state in between); a request that finds a transition pending gets
# `CONCURRENT_TRANSACTIONS` and retries.

# %%
states = list(TransactionState)
matrix = pd.DataFrame([{"to ↓ / from →": target.name,
                        **{source.name: ("✓" if source in VALID_PREVIOUS_STATES[target] else
                                         "TV2" if source in TV2_EXTRA_PREVIOUS_STATES.get(target, ()) else "")
                           for source in states}}
                       for target in states])
show(matrix, left=False)

# %% [markdown]
# `TV2` marks the moves that `transaction.version` 2 (Kafka 4.0, KIP-890) adds: an abort from
# `Empty` or a completed state, so that a client that lost track of its outcome can always abort.
# `PrepareEpochFence` is never written to the log; it is the pending state of a coordinator that
# fences a producer (notebooks 05 and 06). `Dead` is written as a tombstone when an idle
# transactional id expires (notebook 06).

# %% jupyter={"source_hidden": true}
S_ = TransactionState
p_skip = Predict("Can a transaction go straight from <code>Ongoing</code> to <code>CompleteCommit</code>?",
                 choices=["yes", "no"], check=lambda: "yes" if is_valid_transition(S_.Ongoing, S_.CompleteCommit) else "no",
                 why="The decision (PrepareCommit) must be durable before any marker is written; Complete* only "
                     "follows Prepare*.")
p_skip

# %% jupyter={"source_hidden": true}
p_undo = Predict("Can <code>PrepareCommit</code> become <code>PrepareAbort</code> if a partition leader is down "
                 "when the markers are due?", choices=["yes", "no"],
                 check=lambda: "yes" if is_valid_transition(S_.PrepareCommit, S_.PrepareAbort) else "no",
                 why="Once decided, never undone: the coordinator retries the marker until the partition has a leader "
                     "again (notebook 06).")
p_undo

# %%
POS = {"Empty": (0, 1), "Ongoing": (1.5, 1), "PrepareCommit": (3, 1.8), "PrepareAbort": (3, 0.2),
       "CompleteCommit": (4.5, 1.8), "CompleteAbort": (4.5, 0.2), "PrepareEpochFence": (1.5, -0.6),
       "Dead": (0, -0.6)}
HALF_W, HALF_H = 0.6, 0.22         # half the size of a state's box, in axis units
taken = list(transaction_log(cluster, "shop-1")["state"])
path = {(a, b) for a, b in zip(taken, taken[1:]) if a != b}

def edge(a, b):
    """The arrow from box a to box b, from border to border."""
    (x0, y0), (x1, y1) = POS[a], POS[b]
    dx, dy = x1 - x0, y1 - y0
    t = min(HALF_W / abs(dx) if dx else 1, HALF_H / abs(dy) if dy else 1)
    return x0 + t * dx, y0 + t * dy, x1 - t * dx, y1 - t * dy

fig = go.Figure()
for target, sources in VALID_PREVIOUS_STATES.items():
    for source in sources:
        if source == target:
            continue
        used = (source.name, target.name) in path
        ax, ay, x, y = edge(source.name, target.name)
        fig.add_annotation(x=x, y=y, ax=ax, ay=ay, xref="x", yref="y", axref="x", ayref="y", showarrow=True,
                           arrowhead=2, arrowsize=1.1, arrowwidth=3.5 if used else 1.2,
                           arrowcolor="#1F5FBF" if used else "#BDBDBD")
for name, (x, y) in POS.items():
    fig.add_shape(type="rect", x0=x - HALF_W, x1=x + HALF_W, y0=y - HALF_H, y1=y + HALF_H,
                  line=dict(color="#455A64", width=1.5), fillcolor="#E3F2FD" if name in taken else "#F5F5F5")
    fig.add_annotation(x=x, y=y, text=f"<b>{name}</b><br>({TransactionState[name].value})", showarrow=False,
                       font=dict(size=14))
fig.update_layout(title="Transaction states: blue arrows are the moves shop-1 made (commit, then abort),<br>"
                        "grey ones the other legal moves",
                  width=840, height=520, plot_bgcolor="white", showlegend=False, margin=dict(l=10, r=10, t=80, b=10),
                  xaxis=dict(visible=False, range=[-0.7, 5.2]), yaxis=dict(visible=False, range=[-0.95, 2.15]))
fig

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
S = TransactionState
assert not is_valid_transition(S.Ongoing, S.CompleteCommit)          # PrepareCommit must be durable first
assert not is_valid_transition(S.PrepareCommit, S.PrepareAbort)      # once decided, never undone
assert is_valid_transition(S.Ongoing, S.PrepareAbort) and is_valid_transition(S.PrepareEpochFence, S.PrepareAbort)
assert not is_valid_transition(S.CompleteCommit, S.PrepareAbort)
assert is_valid_transition(S.CompleteCommit, S.PrepareAbort, transaction_version=2)
assert ("Ongoing", "PrepareCommit") in path and ("PrepareAbort", "CompleteAbort") in path

# %% [markdown]
# The answer to the second question is the heart of Kafka's design: once `PrepareCommit` is durable
# the transaction **is** committed, whatever happens next. A marker that cannot be written now is
# retried until its partition's leader is back (notebook 06). This is a two-phase commit in which the
# "vote" is only the coordinator's own log write; the participants (the partitions) cannot refuse.

# %% [markdown]
# ## 7 · Step through a transaction over three partitions, when a marker is lost
#
# Sections 3 to 6 read one transaction after it had happened, and in the tour every request arrived.
# The **stepper** below runs one live: the gallery scenario `commit-marker-lost-retried`. The producer `shop`
# (`transactional.id` `shop-1`) writes the order `o-1` to three partitions of two topics, as in section 3:
# `o-1 line 1` to `orders-0`, `o-1 line 2` to `orders-1` and `o-1 paid` to `payments-0`, flushes and commits.
# This time the network **loses** the coordinator's `WriteTxnMarkers` request for `orders-0`. Then a
# `read_committed` consumer, `reader-committed`, reads all three partitions. (This cluster has 3
# `__transaction_state` partitions instead of 50: the story is shorter to step through.)
#
# * **Step** (→) goes to the next moment (a request and its answer, a state change, a marker landing, the LSO
#   moving); **Back** (←) re-runs from the seed to the step before. The buttons under the slider are the
#   story's key moments: `prepare-commit`, `marker-lost`, `partial-read`, `marker-retried`, `complete`
#   (`Stepper("commit-marker-lost-retried", at="marker-lost")` opens there).
# * **Filter → txn id `shop-1`** makes Step stop only at what concerns this transaction; an **API** such
#   as `EndTxn` or `WriteTxnMarkers` jumps between its requests and responses.
# * The **Coordinators** tab is the state machine of section 6, drawn from the coordinator's own
#   transition table. The dot is `shop-1` at its current state (hover it); a **dashed** coloured arrow is a
#   transition being written to `__transaction_state` and not yet replicated, a **solid** one the last
#   transition that became durable. Under it, the `__transaction_state` records (yellow: not replicated yet).
# * The **Messages** tab is the space-time diagram of section 3, live: one lane per process, time running
#   down; a lost message ends in ✗. The request for `orders-0` is lost as it is sent, at the step of the
#   decision; the coordinator notices a moment later, when its connection to that broker breaks.
# * The **Partition logs** tab shows the three partitions: each one's LSO moves when *its own* marker is written and
#   replicated.

# %%
from widgets import Stepper

txn = Stepper("commit-marker-lost-retried")
txn.widget

# %% [markdown]
# **Your move:** answer the first two questions, then go to the step where the coordinator receives `EndTxn`
# (the narration says `got EndTxn from shop`), and on to the producer's answer. **Step** by moment passes over
# both: neither changes a picture, so each is folded into the next moment (the decision, then `marker-lost`).
# Open **Filter** and pick the API `EndTxn`: the first Step then goes to the request, the second to the answer.

# %% jupyter={"source_hidden": true}
p_endtxn = predict_at(
    "At the step the coordinator receives <code>EndTxn</code>, which state does <code>shop-1</code> have?",
    "commit-marker-lost-retried", "got EndTxn from shop", txn_value("shop-1"),
    choices=["Ongoing", "PrepareCommit", "CompleteCommit"],
    why="Receiving EndTxn only starts the write of PrepareCommit (the dashed arrow); the state changes when that "
        "record is replicated, a few events later.")
p_endtxn


# %% jupyter={"source_hidden": true}
def markers_in_logs(run):
    return sum(any(b.is_control for b in run.cluster.log(t, p).batches)
               for t, p in (("orders", 0), ("orders", 1), ("payments", 0)))


p_markers = predict_at(
    "When the producer receives the answer to its <code>EndTxn</code>, how many of the three partitions hold "
    "their COMMIT marker?", "commit-marker-lost-retried", "shop got the EndTxn response", markers_in_logs,
    kind="number",
    why="The coordinator answers as soon as the decision is durable and sends the markers in the same step: "
        "commit_transaction() returns while they are still on the wire.")
p_markers

# %% [markdown]
# **Your move:** set the filter back to *any API*, step on to the key moment `marker-lost` (one Step; the
# narration says the coordinator *lost its connection* and `WriteTxnMarkers fail(s)`), answer the next three
# questions, then step to the end.

# %% jupyter={"source_hidden": true}
AFTER_LOSS = ["sends the marker again: the commit is decided", "aborts: one partition could not commit",
              "waits for the producer to commit again"]
p_lost = Predict(
    "The <code>WriteTxnMarkers</code> request for <code>orders-0</code> is lost. What does the coordinator do?",
    choices=AFTER_LOSS,
    check=at_moment("commit-marker-lost-retried", None, lambda run: {
        "CompleteCommit": AFTER_LOSS[0], "CompleteAbort": AFTER_LOSS[1]}.get(txn_value("shop-1")(run), AFTER_LOSS[2]),
        to_end=True),
    why="PrepareCommit is durable: the transaction is committed, whatever happens to a marker. The coordinator "
        "notices the broken connection and sends the marker again; the producer is not involved any more.")
p_lost

# %% jupyter={"source_hidden": true}
PARTIAL = ["yes: a reader can see part of the order before the rest", "no: it gets all three lines together"]
p_partial = Predict(
    "Can <code>reader-committed</code> (<code>read_committed</code>) receive <code>o-1 line 2</code> before "
    "<code>o-1 line 1</code>?", choices=PARTIAL,
    check=at_moment("commit-marker-lost-retried", None,
                    lambda run: PARTIAL[0] if run.result["read_committed"][-1] == "o-1 line 1" else PARTIAL[1],
                    to_end=True),
    why="Each partition becomes readable when its own marker is written and replicated. The markers of orders-1 "
        "and payments-0 landed at once; orders-0's came about 50 ms later: the coordinator's marker sender "
        "waits 50 ms (its reconnect backoff) before it connects to that broker again. The decision is "
        "atomic, its visibility is per partition: a reader of several partitions can see part of a transaction.")
p_partial

# %% jupyter={"source_hidden": true}
p_state = Predict(
    "When <code>reader-committed</code> receives its first record of the order, which state does the coordinator "
    "hold for <code>shop-1</code>?", choices=["Ongoing", "PrepareCommit", "CompleteCommit"],
    check=at_moment("commit-marker-lost-retried", None, lambda run: run.result["state_at_first_read"], to_end=True),
    why="CompleteCommit is written only when every partition has acknowledged its marker, and orders-0's was "
        "still missing. Readers do not wait for CompleteCommit: a partition is readable once its marker is "
        "below its HW.")
p_state

# %% [markdown]
# **Check** what you should have seen. The cell replays the scenario in a stepper of its own (yours stays
# where you left it), stopping at each step of the transaction, and asserts what the narration, the
# state machine, the message diagram and the logs showed (this cell fails if the lab disagrees):

# %%
THREE = (("orders", 0), ("orders", 1), ("payments", 0))


def has_marker(stepper, topic, partition):
    return any(b.is_control for b in stepper.cluster.log(topic, partition).batches)


chk = Stepper("commit-marker-lost-retried", skip_background=True)
assert chk.step_until("got AddPartitionsToTxn from shop")
coordinator = f"broker-{chk.cluster.transaction_coordinator('shop-1')}"
assert arrows_now(chk) == [("AddPartitionsToTxn", "shop", coordinator)]
assert "state Empty → writing Ongoing" in coordinator_says(chk, "shop-1")          # dashed: being written

assert chk.step_until("got EndTxn from shop")
assert arrows_now(chk) == [("EndTxn", "shop", coordinator)]
assert "state Ongoing → writing PrepareCommit" in coordinator_says(chk, "shop-1")   # not decided yet

assert chk.step_until("is now PrepareCommit")
assert "decided (PrepareCommit is durable)" in chk.narration
assert ("EndTxn", "response", coordinator, "shop") in on_the_wire(chk)             # the answer goes out ...
lost_to = f"broker-{chk.cluster.leader('orders', 0)}"
assert "dropped WriteTxnMarkers request" in chk.narration and f"({coordinator} -> {lost_to})" in chk.narration
assert {w[3] for w in on_the_wire(chk) if w[0] == "WriteTxnMarkers"} == \
    {f"broker-{chk.cluster.leader(t, p)}" for t, p in THREE[1:]}                    # ... with the other markers
assert chk.step_until("shop got the EndTxn response")                             # commit_transaction() returns
assert not any(has_marker(chk, t, p) for t, p in THREE)                            # no marker written yet

assert chk.step_until("WriteTxnMarkers fail")
assert f"{coordinator} lost its connection to {lost_to}" in chk.narration           # the request was lost
assert chk.step_until("reader-committed skips offset")                             # the first committed read ...
assert chk.cluster.transaction_state("shop-1")["state"] == "PrepareCommit"          # ... while still PrepareCommit
assert has_marker(chk, "orders", 1) and not has_marker(chk, "orders", 0)            # orders-0: still no marker
assert chk.cluster.partition_state("orders", 1)["lso"] == 2 and chk.cluster.partition_state("orders", 0)["lso"] == 0

assert chk.step_until("orders-0: wrote a COMMIT marker")                           # the retried request
assert chk.step_until("is now CompleteCommit")
assert "state CompleteCommit" in coordinator_says(chk, "shop-1")
assert [r[3] for r in html_rows(chk.coordinators.txn_log_html.value)][-2:] == ["PrepareCommit", "CompleteCommit"]
chk.run_to_end()
assert chk.result["read_committed"] == ["o-1 line 2", "o-1 paid", "o-1 line 1"]
chk.close()

# %% [markdown]
# The commit was decided once, for all three partitions, when `PrepareCommit` became durable; the producer
# was answered then. The lost marker did not change the outcome: the coordinator stayed in `PrepareCommit`,
# sent the marker again, and wrote `CompleteCommit` only when `orders-0` had acknowledged it. In between,
# `reader-committed` had read `o-1 line 2` and `o-1 paid` but not yet `o-1 line 1`. An application that
# must see a whole order at once needs more than `read_committed` (for example, all of an order's records
# in one partition, keyed by the order id).

# %% [markdown]
# ## Exercise: a commit, then an abort
#
# Write `commit_then_abort(producer)`: with a transactional producer whose `init_transactions()` has run,
# commit one record to `orders-0`, then abort one record on `orders-0`. The lab runs your function on a fresh
# cluster and checks that `orders-0` holds, in offset order: a record, a COMMIT marker, a record, an ABORT marker.

# %% jupyter={"source_hidden": true}
def check_commit_then_abort(fn):
    lab = Cluster(brokers=3, seed=11)
    lab.create_topic("orders", partitions=2, replication_factor=3)
    p = Producer({"bootstrap.servers": lab.bootstrap, "transactional.id": "exercise"})
    p.init_transactions()
    fn(p)
    lab.run_until_idle()
    kinds = [b.control_type.name if b.is_control else "data" for b in lab.log("orders", 0).batches]
    return kinds == ["data", "COMMIT", "data", "ABORT"], f"orders-0 holds {kinds}"


ex_markers = Exercise(
    "Write <code>commit_then_abort(producer)</code>: one committed record, then one aborted record, on "
    "<code>orders-0</code>.", kind="code", check=check_commit_then_abort,
    solution='def commit_then_abort(producer):\n'
             '    producer.begin_transaction()\n'
             '    producer.produce("orders", value=b"kept", partition=0)\n'
             '    producer.commit_transaction()\n'
             '    producer.begin_transaction()\n'
             '    producer.produce("orders", value=b"dropped", partition=0)\n'
             '    producer.flush()\n'
             '    producer.abort_transaction()')
ex_markers

# %%
def commit_then_abort(producer):
    raise NotImplementedError          # your code here


ex_markers.submit(commit_then_abort)

# %% [markdown]
# ## What to remember
#
# * A `transactional.id` maps to one `__transaction_state` partition; its leader is the coordinator.
# * `InitProducerId` gives the pid and epoch; `AddPartitionsToTxn` registers partitions (state
#   `Ongoing`); `EndTxn` writes `PrepareCommit`/`PrepareAbort` (the decision) and is answered at once;
#   `WriteTxnMarkers` puts a COMMIT/ABORT control batch into each partition; then `Complete*`.
# * Markers are records with offsets; aborted data is never removed, only marked.
# * The decision is atomic; visibility is per partition. A lost marker is sent again (the outcome never
#   changes), and until it lands a `read_committed` reader of several partitions can see part of a transaction.

# %% [markdown]
# ## Where next
#
# **03 · LEO, HW, LSO and isolation levels**: what a `read_committed` consumer may read, and when (about 40 minutes).
# `GLOSSARY.md` explains every Kafka term used here; `INDEX.md` lists the gallery's scenarios by concept.
