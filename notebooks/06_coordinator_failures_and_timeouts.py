# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · Coordinator failures and timeouts
#
# **You need:** 02, 03 and 05. **Time:** about 45 minutes.
# **You will be able to:** say what survives a coordinator crash before and after the decision, who finishes a transaction, and why a partition without a leader pins its LSO.
#
# The transaction coordinator is a broker like any other: it can crash at any moment of a commit.
# Kafka's answer rests on one rule from notebook 02: **a transaction is decided when its
# `PrepareCommit` (or `PrepareAbort`) record is durable in `__transaction_state`**. Everything after
# that (markers, `CompleteCommit`) is roll-forward work that any later coordinator can redo from the
# log. So:
#
# | the coordinator crashes ... | the decision | what the new coordinator does |
# |---|---|---|
# | before `PrepareCommit` is replicated | not taken | finds `Ongoing`; the client's retried `EndTxn` decides |
# | after `PrepareCommit` is durable | **commit** | reloads `PrepareCommit`, **resends the markers** |
# | after `CompleteCommit` | commit, finished | nothing to do |
#
# The new coordinator is the new leader of the same `__transaction_state` partition. It gets there
# when the controller notices the dead broker (`broker.session.timeout.ms`, 9 s) and elects another
# in-sync replica; it then **loads** the partition (`COORDINATOR_LOAD_IN_PROGRESS` meanwhile) with a
# higher **coordinator epoch**, which it stamps on its markers so that leaders can ignore a deposed
# coordinator.
#
# This notebook crashes the coordinator at each moment, stops its broker the way an operator does,
# takes a marker partition's leader away, and ends with the slow clocks: transaction timeouts, transactional-id expiration and epoch
# exhaustion.

# %%
from txnlab import Cluster, KafkaException, Producer
from txnlab.coordinator.transaction_log import describe_record

# %% [markdown]
# Tables and pictures come from the lab's `widgets` package. They only *read* the cluster: its trace, its
# logs and its partition state (the *Check* cells also read back what a picture drew). `read` is a fresh
# consumer that reads a topic from the start; it polls the cluster like any client.

# %%
import pandas as pd
import plotly.graph_objects as go

from widgets.tables import show, narration, batches_table
from widgets.snapshots import log_snapshot
from widgets.drawn import (arrows_now, coordinator_says, drawn_consumers, drawn_line, on_the_wire,
                           trace_named)
from widgets.reader import read
from widgets.predict import Exercise, Predict, moment, partition_value, predict_at, reached


# %%
def setup(seed=3):
    """Three brokers, `orders` with three partitions, and an open transaction of 'crashy' on all of them."""
    cluster = Cluster(brokers=3, seed=seed)
    cluster.create_topic("orders", partitions=3, replication_factor=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "crashy"})
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(3):
        producer.produce("orders", value=b"c%d" % i, partition=i)
    producer.flush()
    return cluster, producer, cluster.transaction_coordinator("crashy")

def txn_log(cluster, transactional_id, broker=None):
    """The records of one transactional id in a replica of its __transaction_state partition."""
    part = cluster.broker(0).txn_coordinator.state_manager.partition_for(transactional_id)
    rows = []
    for batch in cluster.log("__transaction_state", part, broker).batches:
        for offset, record in enumerate(batch.records, start=batch.base_offset):
            row = describe_record(record.key, record.value)
            if row["transactional_id"] == transactional_id:
                rows.append({"offset": offset, "state": row["state"], "producer_id": row.get("producer_id"),
                             "producer_epoch": row.get("producer_epoch")})
    return pd.DataFrame(rows, columns=["offset", "state", "producer_id", "producer_epoch"])

def seconds(cluster, since_ms):
    return round((cluster.now - since_ms) / 1000, 1)


# %% [markdown]
# ## 1a · Crash before `PrepareCommit` is replicated
#
# We cut the coordinator off from the other brokers (`cluster.partition`), so the `PrepareCommit` it
# appends to its own log cannot reach its followers, and give `commit_transaction()` only 50 ms.
# In confluent-kafka a commit that times out raises a **retriable** `_TIMED_OUT` (Kafka's Java client: a
# `TimeoutException`, also retriable) meaning *"the outcome is not known yet: call `commit_transaction()`
# again"*. Then the coordinator
# crashes, the network heals, and we call commit again.

# %% jupyter={"source_hidden": true}
SECOND = ["it commits", "it raises: the outcome was lost with the coordinator", "it aborts the transaction"]
p_second = Predict("The first <code>commit_transaction(0.05)</code> timed out and the coordinator crashed before its "
                   "<code>PrepareCommit</code> was replicated. What does the second <code>commit_transaction()</code> do?",
                   choices=SECOND, check=lambda: {"CompleteCommit": SECOND[0], "CompleteAbort": SECOND[2]}.get(
                       crash1_state, SECOND[1]),
                   why="No decision existed yet: the new coordinator found the transaction Ongoing, and the producer's "
                       "retried EndTxn made it write its own PrepareCommit and commit.")
p_second

# %% jupyter={"source_hidden": true}
ORPHAN = ["it is truncated when the old coordinator comes back", "it is replicated later and counts",
          "it stays in that broker's log for ever"]
p_orphan = Predict("What happens to the <code>PrepareCommit</code> record that only the old coordinator had?",
                   choices=ORPHAN, check=lambda: ORPHAN[0] if story["what happened"].str.contains(
                       "truncated its log").any() else ORPHAN[2],
                   why="It was never below the HW: when the old coordinator restarts as a follower it truncates what "
                       "the new leader does not have, and copies the new leader's log.")
p_orphan

# %%
cluster, producer, coord = setup()
others = [b for b in cluster.brokers if b != coord]
cluster.partition([coord], others)
first = None
try:
    producer.commit_transaction(0.05)
except KafkaException as e:
    first = e.args[0]
print("1st commit_transaction(0.05):", first.name(), "retriable" if first.retriable() else "")
print("old coordinator's log:   ", list(txn_log(cluster, "crashy", coord)["state"]))
print("a follower's copy:       ", list(txn_log(cluster, "crashy", others[0])["state"]))

t0 = cluster.now
cluster.crash(coord)
cluster.heal()
producer.commit_transaction()                           # the same call again: waits for the outcome
print("2nd commit_transaction() returned after", seconds(cluster, t0), "s; new coordinator: broker",
      cluster.transaction_coordinator("crashy"))
cluster.restart(coord)
cluster.run_until_idle()
crash1_state = cluster.transaction_state("crashy")["state"]

# %%
new_coord = cluster.transaction_coordinator("crashy")
part = f"__transaction_state-{cluster.transaction_state('crashy')['transaction_state_partition']}"
rows = []
for e in cluster.trace.filter():
    if e.time < t0:
        continue
    lines = [d for d in [e.text] + e.details if f"loaded {part}:" in d or "truncated its log" in d and part in d
             or (e.api == "EndTxn" and not e.is_response and e.node == f"broker-{new_coord}" and "'crashy'" in d)]
    if lines:
        rows.append({"step": e.step, "t (ms)": e.time, "node": e.node, "what happened": "; ".join(lines)})
story = pd.DataFrame(rows)
show(story)

# %% [markdown]
# The new coordinator loaded the partition and found `crashy` **Ongoing**: the `PrepareCommit` had
# never been replicated, so no decision existed. The producer had kept retrying `EndTxn` (first to the
# dead broker, then, once `FindCoordinator` named the new leader, to it); the new coordinator wrote
# its own `PrepareCommit`, answered, and sent the markers. When the old coordinator came back it
# truncated its unreplicated record and copied the new leader's log.

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert first.name() == "_TIMED_OUT" and first.retriable()
assert cluster.transaction_state("crashy")["state"] == "CompleteCommit"
assert read(cluster, "orders", (0, 1, 2)) == ["c0", "c1", "c2"]
assert new_coord != coord
assert story["what happened"].str.contains("truncated its log").any()

# %% [markdown]
# ## 1b · Crash after `PrepareCommit` is durable, before the markers
#
# This time the `PrepareCommit` is replicated, the coordinator answers the producer, and only then
# dies: we make the network lose its `WriteTxnMarkers` requests and crash it as soon as
# `commit_transaction()` has returned. The markers were never written.

# %% jupyter={"source_hidden": true}
WAITING = ["nothing of this transaction: the LSO stays at its first offset", "the committed records: it is decided"]
p_waiting = Predict("<code>commit_transaction()</code> returned, then the coordinator crashed with no marker written. "
                    "What can a <code>read_committed</code> consumer of <code>orders-0</code> read until a new "
                    "coordinator exists?", choices=WAITING,
                    check=lambda: WAITING[0] if (timeline[timeline["state"] == "(no coordinator)"]["LSO of orders-0"]
                                                 == 0).all() else WAITING[1],
                    why="The commit is decided, but a partition becomes readable only when its marker is written. For "
                        "about 9 s nobody writes markers; then the new coordinator loads PrepareCommit and sends them.")
p_waiting

# %%
cluster, producer, coord = setup()
cluster.drop_next("WriteTxnMarkers", count=3)           # the markers are lost on the way
producer.commit_transaction()
t0 = cluster.now
print("commit_transaction() returned; coordinator state:", cluster.transaction_state("crashy")["state"])
cluster.crash(coord)
timeline, done_ms = [], None
while (done_ms is None or cluster.now - done_ms < 2_000) and cluster.now - t0 < 30_000:
    cluster.advance(250)
    if done_ms is None and (cluster.transaction_state("crashy") or {}).get("state") == "CompleteCommit":
        done_ms = cluster.now
    st = cluster.transaction_state("crashy")
    timeline.append({"t (s)": seconds(cluster, t0), "coordinator": f"broker {cluster.transaction_coordinator('crashy')}",
                     "state": st["state"] if st else "(no coordinator)",
                     "HW of orders-0": cluster.partition_state("orders", 0)["hw"],
                     "LSO of orders-0": cluster.partition_state("orders", 0)["lso"]})
timeline = pd.DataFrame(timeline)
show(timeline.drop_duplicates(subset=["coordinator", "state", "HW of orders-0", "LSO of orders-0"]))

# %%
done_at = timeline[timeline["state"] == "CompleteCommit"]["t (s)"].min()
fig = go.Figure()
fig.add_trace(go.Scatter(x=[0] + list(timeline["t (s)"]), y=[1] + list(timeline["HW of orders-0"]),
                         name="HW of orders-0", line=dict(color="#1F5FBF", dash="dash", width=3, shape="hv")))
fig.add_trace(go.Scatter(x=[0] + list(timeline["t (s)"]), y=[0] + list(timeline["LSO of orders-0"]),
                         name="LSO of orders-0 (read_committed)", line=dict(color="#D9480F", width=3, shape="hv")))
fig.add_vrect(x0=0, x1=done_at, fillcolor="#9E9E9E", opacity=0.15, line_width=0,
              annotation_text="no coordinator for 'crashy'", annotation_position="top left")
fig.add_vline(x=0, line_color="#B71C1C", annotation_text="commit returned; coordinator crashes",
              annotation_position="bottom right", annotation_font_color="#B71C1C")
fig.add_vline(x=done_at, line_color="#1B5E20", annotation_text="new coordinator resends the markers",
              annotation_position="bottom left", annotation_font_color="#1B5E20")
final = timeline.iloc[-1]
fig.add_annotation(x=done_at, y=final["LSO of orders-0"], xanchor="left", xshift=6, yanchor="bottom", showarrow=False,
                   text=f"HW = LSO = {final['LSO of orders-0']}", font=dict(color="#D9480F"))
fig.update_layout(title="orders-0 after a crash with PrepareCommit durable and no marker written",
                  width=840, height=420, plot_bgcolor="white", xaxis_title="simulated seconds after commit_transaction() returned",
                  yaxis=dict(title="offset", dtick=1, range=[-0.3, 2.8]), font=dict(size=14),
                  legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0), margin=dict(t=90, l=60, r=10))
fig

# %%
show(narration([e for e in cluster.trace.filter() if e.time >= t0 and ("the new coordinator finishes it" in e.narration
                or (e.api == "WriteTxnMarkers" and not e.is_response))]))

# %%
show(batches_table(cluster, "orders", 0))

# %% [markdown]
# The producer was told *committed* at once, and that was true: the decision was in the log. For
# about 9 s there was no coordinator at all; the partitions' LSO stayed at the transaction's first
# offset, so `read_committed` readers waited. The new leader of the `__transaction_state` partition
# loaded it, found `PrepareCommit`, and finished the job: COMMIT markers stamped with **coordinator
# epoch 1** (the old coordinator's was 0), then `CompleteCommit`.

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert timeline["state"].iloc[-1] == "CompleteCommit"
before_failover = timeline[timeline["state"] == "(no coordinator)"]
assert len(before_failover) > 0 and (before_failover["LSO of orders-0"] == 0).all()   # readers wait
assert read(cluster, "orders", (0, 1, 2)) == ["c0", "c1", "c2"]
markers = [b for b in cluster.log("orders", 0).batches if b.is_control]
assert [(b.control_type.name, b.coordinator_epoch) for b in markers] == [("COMMIT", 1)]

# %% [markdown]
# ## 1c · Crash after `CompleteCommit`
#
# Nothing is left to do for this transaction. What the application notices is the next one: its
# first request goes to a dead coordinator, and the producer keeps asking `FindCoordinator` until a
# new one has taken over.

# %% jupyter={"source_hidden": true}
NEXT = ["about as long as usual: milliseconds", "several seconds: it waits for a new coordinator",
        "it fails with an error"]
p_next = Predict("The commit is complete when the coordinator crashes. How long does the application's <i>next</i> "
                 "transaction take?", choices=NEXT, check=lambda: NEXT[1] if took > 5 else NEXT[0],
                 why="Its first request goes to the dead coordinator; the producer keeps asking FindCoordinator until "
                     "the controller has fenced the broker (about 9 s) and a new leader of __transaction_state answers. "
                     "No error reaches the application.")
p_next

# %%
cluster, producer, coord = setup()
producer.commit_transaction()
cluster.run_until_idle()
cluster.crash(coord)
t0 = cluster.now
producer.begin_transaction()
producer.produce("orders", value=b"next", partition=0)
producer.commit_transaction()
took = seconds(cluster, t0)
cluster.run_until_idle()
print("the next transaction took", took, "simulated seconds; the new coordinator is broker",
      cluster.transaction_coordinator("crashy"))
show(txn_log(cluster, "crashy"))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert took > 5                                       # it waited for the failover
assert read(cluster, "orders", (0, 1, 2)) == ["c0", "c1", "c2", "next"]
assert list(txn_log(cluster, "crashy")["state"])[-2:] == ["PrepareCommit", "CompleteCommit"]

# %% [markdown]
# What the client saw, in all three cases: `commit_transaction()` either returned success or raised a
# retriable timeout that a second call turned into success. The application never had to guess
# whether its transaction committed.

# %% [markdown]
# ## 1d · The coordinator moves without a crash
#
# Coordinators move in healthy clusters too: an operator reassigns partitions, or the controller's
# preferred-leader rebalancing hands `__transaction_state` partitions back to their preferred replica.
# `cluster.move_leader(topic, partition, broker)` is that operator (a reassignment that makes `broker`
# the preferred replica, then a preferred leader election). Nothing crashes and nothing is lost, but
# the old coordinator stops answering for the transactional id the moment it is no longer the leader.

# %% jupyter={"source_hidden": true}
MOVED = ["NOT_COORDINATOR, from the old coordinator", "COORDINATOR_NOT_AVAILABLE, from the new one",
         "none: the old coordinator forwards the request"]


def moved_error():
    answers = [e.text for e in moved if e.api == "AddPartitionsToTxn" and e.is_response]
    return MOVED[0] if any("NOT_COORDINATOR" in a for a in answers) else \
        MOVED[1] if any("COORDINATOR_NOT_AVAILABLE" in a for a in answers) else MOVED[2]


p_moved = Predict("The transaction is open. We move its <code>__transaction_state</code> partition to another broker "
                  "and produce to a new partition, which needs <code>AddPartitionsToTxn</code>. Which error does the "
                  "producer get?", choices=MOVED, check=moved_error,
                  why="The old coordinator no longer leads the partition and has dropped what it cached: "
                      "NOT_COORDINATOR. The producer asks FindCoordinator again; the new leader loaded the state from "
                      "the log and the commit succeeds.")
p_moved

# %%
cluster = Cluster(brokers=3, seed=3)
cluster.create_topic("orders", partitions=2, replication_factor=3)
producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "mover"})
producer.init_transactions()
producer.begin_transaction()
producer.produce("orders", value=b"o1", partition=0)
producer.flush()
part = cluster.transaction_state("mover")["transaction_state_partition"]
coord = cluster.transaction_coordinator("mover")
target = next(b for b in cluster.partition_state("__transaction_state", part)["isr"] if b != coord)
t0 = cluster.now
cluster.move_leader("__transaction_state", part, target)
producer.produce("orders", value=b"o2", partition=1)
producer.commit_transaction()
cluster.run_until_idle()
moved = [e for e in cluster.trace.filter() if e.time >= t0 and
         (e.kind == "fault" or e.api in ("AddPartitionsToTxn", "FindCoordinator", "EndTxn"))]
print("coordinator: broker", coord, "->", cluster.transaction_coordinator("mover"), "; state",
      cluster.transaction_state("mover")["state"], "; read_committed reads", read(cluster, "orders", (0, 1)))
show(narration(moved[:8]))

# %% [markdown]
# The old coordinator answered the producer's `AddPartitionsToTxn` with `NOT_COORDINATOR`: it no longer
# leads the partition, so it dropped the transactions it had cached. The producer looked the
# coordinator up again (`FindCoordinator`), and the new leader, which had loaded the partition's
# `__transaction_state` records when it became leader, knew `mover` as `Ongoing` and carried on. The
# state lives in the log, not in a broker's memory.

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert cluster.transaction_coordinator("mover") == target != coord
assert any(e.api == "AddPartitionsToTxn" and e.is_response and "NOT_COORDINATOR" in e.text for e in moved)
assert any(e.api == "FindCoordinator" for e in moved)
assert cluster.transaction_state("mover")["state"] == "CompleteCommit"
assert read(cluster, "orders", (0, 1)) == ["o1", "o2"]

# %% [markdown]
# ## 1e · An operator restarts the coordinator's broker
#
# Brokers are restarted on purpose all the time (an upgrade, a new setting), one at a time. Stopping a
# broker the usual way does not kill the process: with `controlled.shutdown.enable` (the default) the
# broker first asks the controller, in its next heartbeat, for a **controlled shutdown**. The controller
# takes it out of every ISR, gives each partition it leads a new leader, and lets it go only when every
# other broker has learned the new leaders. Then it exits cleanly. `cluster.shutdown(broker)` stops a
# broker that way; in a stepper it is the **Shut down** button under Faults.
#
# We commit a transaction and, in the same instant, shut its coordinator's broker down. In 1b the
# crashed coordinator made everyone wait for the controller to miss its heartbeats.

# %% jupyter={"source_hidden": true}
RESTART = ["about 9 s, as after a crash", "well under a second", "it fails: the transaction is aborted"]


def restart_wait():
    return RESTART[0] if took_ms >= 5_000 else RESTART[1] if took_ms < 1_000 else "between 1 and 5 s"


p_restart = Predict("The producer calls <code>commit_transaction()</code> and its coordinator's broker is shut down "
                    "(a controlled shutdown) at the same moment. How long does the call take?", choices=RESTART,
                    check=restart_wait,
                    why="The controller moves the <code>__transaction_state</code> leaderships away in the broker's "
                        "first shutdown heartbeat. The old coordinator answers NOT_COORDINATOR at once, and the "
                        "producer finds the new one, which has loaded the transaction from the log and finishes "
                        "the commit. Nobody waits for a missed heartbeat.")
p_restart

# %%
cluster = Cluster(brokers=3, seed=3)
cluster.create_topic("orders", partitions=2, replication_factor=3)
producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "restarted"})
producer.init_transactions()
producer.begin_transaction()
producer.produce("orders", value=b"r1", partition=0)
producer.flush()
coord = cluster.transaction_coordinator("restarted")
t0 = cluster.now
cluster.shutdown(coord)
producer.commit_transaction()
took_ms = cluster.now - t0
cluster.run_until_idle()
stopped = [e for e in cluster.trace.filter() if e.time >= t0 and
           (e.kind == "fault" or e.api in ("BrokerHeartbeat", "EndTxn", "FindCoordinator")
            or "shut down (controlled shutdown complete)" in e.text)]
print(f"commit_transaction() took {took_ms} ms; coordinator: broker", coord, "->",
      cluster.transaction_coordinator("restarted"), "; broker", coord, "running:", cluster.broker(coord).alive,
      "; read_committed reads", read(cluster, "orders", (0,)))
show(narration(stopped))

# %% [markdown]
# Read the steps in order. The broker's first heartbeat asks to shut down; the controller moves its
# leaderships and answers *in controlled shutdown: not yet*. The old coordinator lost
# `__transaction_state` while its `PrepareCommit` was being replicated, so it answered the producer's
# `EndTxn` with `NOT_COORDINATOR`. `FindCoordinator` named the new coordinator. It had loaded the
# transaction from the log as `PrepareCommit` (the decision was durable) and was finishing it: it
# answered the retried `EndTxn` with `CONCURRENT_TRANSACTIONS` until its markers were written, then
# with success. The broker exits only when the controller answers *shut down now*, about two seconds
# later: the controller waited until every other broker had heartbeated with the new metadata. Nothing
# waited for the 9 s session timeout.
#
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert took_ms < 1_000 and not cluster.broker(coord).alive
assert cluster.transaction_coordinator("restarted") not in (coord, -1)
ends = [e.text for e in stopped if e.api == "EndTxn" and e.is_response]
assert "NOT_COORDINATOR" in ends[0] and "CONCURRENT_TRANSACTIONS" in ends[1] and ends[-1].endswith("(ok)")
assert any(e.api == "BrokerHeartbeat" and e.is_response and "shut down now" in e.text for e in stopped)
assert cluster.transaction_state("restarted")["state"] == "CompleteCommit"
assert read(cluster, "orders", (0,)) == ["r1"]
cluster.restart(coord)           # the restart of a rolling restart: it registers and catches up again

# %% [markdown]
# ## 2 · A marker partition's leader is down
#
# The coordinator can decide without the partitions: they have no vote. But it cannot finish without
# them: each partition needs its marker. If a partition has no leader, the coordinator keeps its marker
# **for as long as it takes** while the rest of the transaction is already visible. Kafka sends markers
# from one thread per broker, `TxnMarkerSenderThread`: a marker whose partition has no available leader
# waits in that thread's `markersQueueForUnknownBroker`, and the thread looks the leader up again in its
# metadata cache on every loop.
#
# `audit` has a single replica, on a broker that is neither the coordinator nor the leader of
# `orders-0`. The transaction writes to `orders-0` and `audit`; then that broker crashes.

# %% jupyter={"source_hidden": true}
p_audit = Predict("Does <code>commit_transaction()</code> return successfully while the <code>audit</code> broker is "
                  "down?", choices=["yes", "no: it raises an error", "it blocks until the broker returns"],
                  check=lambda: "yes" if commit_took < 20 else "it blocks until the broker returns",
                  why="The decision needs only the coordinator's own log. Once PrepareCommit is durable the producer is "
                      "answered; the audit partition's marker waits until its broker is back.")
p_audit

# %% jupyter={"source_hidden": true}
p_orders_rc = Predict("While that broker is down, can a <code>read_committed</code> consumer read the "
                      "<code>orders-0</code> record (<code>order 7</code>)?", choices=["yes", "no"],
                      check=lambda: "yes" if orders_while_down == ["order 7"] else "no",
                      why="orders-0's leader is alive and got its COMMIT marker at once: that partition is readable, "
                          "while audit waits for its own marker.")
p_orders_rc

# %%
cluster = Cluster(brokers=3, seed=4)
cluster.create_topic("orders", partitions=1, replication_factor=3)
cluster.create_topic("audit", partitions=3, replication_factor=1)
producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "auditor"})
producer.init_transactions()
coord = cluster.transaction_coordinator("auditor")
# the audit partition whose only replica is on a third broker
audit_p = [p for p in range(3) if cluster.leader("audit", p) not in (coord, cluster.leader("orders", 0))][0]
audit_broker = cluster.leader("audit", audit_p)
producer.begin_transaction()
producer.produce("orders", value=b"order 7", partition=0)
producer.produce("audit", value=b"order 7 audited", partition=audit_p)
producer.flush()

cluster.crash(audit_broker)
t0 = cluster.now
producer.commit_transaction()
commit_took = seconds(cluster, t0)
print(f"commit_transaction() returned after {commit_took} s with audit-{audit_p} offline (broker {audit_broker} down)")
cluster.advance(20_000)
orders_while_down = read(cluster, "orders", (0,))
print("20 s later: coordinator state", cluster.transaction_state("auditor")["state"],
      "; read_committed reads orders:", orders_while_down)
log_snapshot(cluster, [("orders", 0), ("audit", audit_p)], width=840,
             title=f"orders-0 committed; audit-{audit_p} waits for its marker (its broker is down)")

# %%
def audit_marker_requests():
    return [msg for msg in cluster.network_messages() if msg.api == "WriteTxnMarkers" and not msg.is_response
            and any(("audit", audit_p) in entry.partitions for entry in msg.payload.markers)]


audit_requests_while_down = len(audit_marker_requests())
print("WriteTxnMarkers requests for the audit partition while its broker was down:", audit_requests_while_down)
show(narration([e for e in cluster.trace.filter() if e.time >= t0 and e.api in ("EndTxn", "WriteTxnMarkers")]))

# %%
cluster.restart(audit_broker)
t1 = cluster.now
cluster.run_until(lambda: cluster.transaction_state("auditor")["state"] == "CompleteCommit", timeout_ms=60_000)
print("CompleteCommit", seconds(cluster, t1), "s after the broker restarted")
told = [e for e in cluster.trace.filter(include_background=True) if e.time >= t1 and e.api == "LeaderAndIsr"
        and not e.is_response and e.node == f"broker-{coord}" and f"audit-{audit_p} leader" in e.text][0]
resent = audit_marker_requests()[audit_requests_while_down]
print(f"the coordinator's broker learned audit-{audit_p}'s leader at {told.time} ms; "
      f"the marker went out at {resent.sent_at} ms")
show(narration([e for e in cluster.trace.filter(include_background=True) if told.step <= e.step <= resent.sent_step]))
cluster.run_until_idle()
print("read_committed reads audit:", read(cluster, "audit", (audit_p,)))
log_snapshot(cluster, [("orders", 0), ("audit", audit_p)], width=840,
             title="The broker is back: the retried marker lands, the LSO moves")

# %% [markdown]
# Why did `commit_transaction()` take about 9 s? Not because of the marker: the crashed broker also
# held a follower replica of the coordinator's `__transaction_state` partition, and the
# `PrepareCommit` write (acks=all) waited until the controller noticed the dead broker and removed it
# from the ISR. From then on the decision was durable, the producer was answered, and the markers
# went out: `orders-0` got its COMMIT at once. The `audit` partition had no leader (its only replica
# was down), so its marker waited in `markersQueueForUnknownBroker` and no request was sent for it.
# While that queue holds a marker the sender thread does not pause: each loop puts the marker back
# and wakes the thread again, so it re-reads its metadata cache over and over. (The lab runs that loop
# each time the broker's metadata cache changes, the only thing that can change its outcome: a step
# named *loops (spinning while markersQueueForUnknownBroker holds markers)*.) So the marker went out
# in the same millisecond as the controller told the coordinator's broker that the restarted broker
# leads `audit` again: the wait was exactly as long as the partition had no leader.

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert audit_broker not in (coord, cluster.leader("orders", 0))
assert 5 < commit_took < 15 and audit_requests_while_down == 0
assert resent.sent_at == told.time
assert read(cluster, "orders", (0,)) == ["order 7"]
assert read(cluster, "audit", (audit_p,)) == ["order 7 audited"]
assert cluster.transaction_state("auditor")["state"] == "CompleteCommit"
st = cluster.partition_state("audit", audit_p)
assert st["lso"] == st["hw"]

# %% [markdown]
# ## 3 · The slow clocks
#
# ### 3.1 Transaction timeouts
#
# Notebook 05 showed the coordinator aborting a transaction older than its `transaction.timeout.ms`
# (default 60 s) and fencing its producer. The broker bounds what a producer may ask for:
# `transaction.timeout.ms` must not exceed `transaction.max.timeout.ms` (default 15 min), or
# `init_transactions()` fails with `INVALID_TRANSACTION_TIMEOUT`, a fatal error.

# %% jupyter={"source_hidden": true}
GREEDY = ["init_transactions(): a fatal INVALID_TRANSACTION_TIMEOUT", "init_transactions(): a retriable error",
          "nothing: the broker lowers the timeout to its maximum"]
p_greedy = Predict("A producer asks for <code>transaction.timeout.ms</code> = 20 minutes on a broker whose maximum is "
                   "15 minutes. What happens?", choices=GREEDY,
                   check=lambda: GREEDY[2] if outcome == "ok" else GREEDY[0] if "(fatal)" in outcome else GREEDY[1],
                   why="The coordinator refuses the InitProducerId with INVALID_TRANSACTION_TIMEOUT, a fatal error: "
                       "retrying cannot help, the configuration must change.")
p_greedy

# %%
cluster = Cluster(brokers=3, seed=1)
greedy = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "greedy",
                   "transaction.timeout.ms": 20 * 60_000})
try:
    greedy.init_transactions()
    outcome = "ok"
except KafkaException as e:
    outcome = f"{e.args[0].name()} ({'fatal' if e.args[0].fatal() else 'not fatal'})"
print("transaction.timeout.ms = 20 min ->", outcome)
show(narration(cluster.trace.filter(api="InitProducerId", contains="transaction.timeout.ms")))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert outcome == "INVALID_TRANSACTION_TIMEOUT (fatal)"

# %% [markdown]
# ### 3.2 A transactional id that is never used again expires
#
# A coordinator keeps every `transactional.id` it has seen in memory and in `__transaction_state`.
# One that has been idle (in `Empty`, `CompleteCommit` or `CompleteAbort`) for
# `transactional.id.expiration.ms` (default 7 days) is removed: the coordinator moves it to `Dead`
# and writes a **tombstone** (a record with a null value), which log compaction later uses to delete
# its records. Here the expiration is 60 s and the scan runs every 10 s.

# %% jupyter={"source_hidden": true}
LAST = ["CompleteCommit", "a record with state Dead", "a tombstone (a record with a null value)"]
p_last = Predict("After 80 idle seconds (expiration 60 s), what is the last record of <code>forgotten</code> in "
                 "<code>__transaction_state</code>?", choices=LAST,
                 check=lambda: LAST[2] if forgotten_states[-1] == "(tombstone)" else
                 LAST[1] if forgotten_states[-1] == "Dead" else LAST[0],
                 why="The coordinator moves the idle id to Dead in memory and writes a tombstone, which log compaction "
                     "later uses to delete its records.")
p_last

# %% jupyter={"source_hidden": true}
AGAIN = ["the same producer id, with the next epoch", "a new producer id, at epoch 0"]
p_again = Predict("The application then starts again with the same <code>transactional.id</code>. Which producer id "
                  "and epoch does it get?", choices=AGAIN,
                  check=lambda: AGAIN[1] if again.transaction_manager.producer_id != first_pid else AGAIN[0],
                  why="The coordinator has forgotten the id: it is new to it, and gets a fresh producer id at epoch 0.")
p_again

# %%
cluster = Cluster(brokers=3, seed=2, config={"transactional.id.expiration.ms": 60_000,
                                             "transaction.remove.expired.transaction.cleanup.interval.ms": 10_000})
cluster.create_topic("orders", partitions=1, replication_factor=3)
p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "forgotten"})
p.init_transactions()
p.begin_transaction()
p.produce("orders", value=b"x")
p.commit_transaction()
first_pid = p.transaction_manager.producer_id
cluster.advance(80_000)
forgotten_states = list(txn_log(cluster, "forgotten")["state"])
print("coordinator's view now:", cluster.transaction_state("forgotten"))
show(txn_log(cluster, "forgotten"))

# %%
again = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "forgotten"})
again.init_transactions()
print("first life: pid", first_pid, " second life: pid", again.transaction_manager.producer_id,
      "epoch", again.transaction_manager.producer_epoch)
show(narration(cluster.trace.filter(contains="expires")))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
log = txn_log(cluster, "forgotten")
states = list(log["state"])
assert "(tombstone)" in states and states[states.index("(tombstone)") - 1] == "CompleteCommit"
assert again.transaction_manager.producer_id != first_pid and again.transaction_manager.producer_epoch == 0

# %% [markdown]
# ### 3.3 Epoch exhaustion
#
# The epoch is a 16-bit number. Each `init_transactions()` of the same `transactional.id` bumps it,
# and an application restarted in a tight loop could in principle use all 32 767 values. The
# coordinator treats an epoch of 32 766 or more as **exhausted**: the next `InitProducerId` allocates
# a **new producer id** and starts again at epoch 0 (32 767 stays reserved so that the coordinator can
# always fence once more).
#
# Restarting 32 766 times would take a while even simulated, so we take a shortcut only a lab can take:
# we set the epoch in the coordinator's memory, as if it had happened.

# %% jupyter={"source_hidden": true}
EXHAUSTED = ["the same producer id, epoch 32767", "a new producer id, epoch 0", "an error: the epoch is used up"]
p_exhausted = Predict("The coordinator holds epoch 32 766 for <code>restarted-a-lot</code>. What does the next "
                      "<code>init_transactions()</code> get?", choices=EXHAUSTED,
                      check=lambda: EXHAUSTED[1] if after[0] != before[0] and after[1] == 0 else EXHAUSTED[0],
                      why="32 766 counts as exhausted: the coordinator allocates a new producer id and starts again at "
                          "epoch 0 (32 767 stays reserved so that it can always fence once more).")
p_exhausted

# %%
cluster = Cluster(brokers=3, seed=5)
p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "restarted-a-lot"})
p.init_transactions()
before = (p.transaction_manager.producer_id, p.transaction_manager.producer_epoch)
coordinator = cluster.broker(cluster.transaction_coordinator("restarted-a-lot")).txn_coordinator
_, cache = coordinator.state_manager.lookup("restarted-a-lot")
cache.metadata["restarted-a-lot"].producer_epoch = 32766          # the lab's shortcut

p2 = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "restarted-a-lot"})
p2.init_transactions()
after = (p2.transaction_manager.producer_id, p2.transaction_manager.producer_epoch)
print("before: (pid, epoch) =", before, "  after the exhausted epoch:", after)
show(narration(cluster.trace.filter(contains="exhausted")))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert after[0] != before[0] and after[1] == 0
assert list(txn_log(cluster, "restarted-a-lot")["producer_id"])[-1] == after[0]

# %% [markdown]
# ## 4 · Step through it yourself: crash the coordinator, lose a marker's leader
#
# Two scenarios from the lab's gallery, stepped one moment at a time (**Step** or →; **Back** or ←
# re-runs from the seed; **Run** plays; the slider jumps; the buttons under it jump to the key moments; if the
# pictures are cut at their right edge, hide the file browser with Ctrl+B).
#
# **4.1 You crash the coordinator** (`coordinator-dies-after-prepare`, section 1b). A producer
# writes `order-0 … order-3` to `orders-0` and `orders-1` and commits; the network loses the
# coordinator's first `WriteTxnMarkers` requests, so no marker is written; and the scenario crashes
# the coordinator right after `commit_transaction()` returns. You will crash it one step *earlier*:
#
# 1. Click the key moment **1. PrepareCommit is durable in __transaction_state** under the slider (five
#    Steps get there too): the narration says **decided (PrepareCommit is durable)**. The
#    **Coordinators** tab shows `tx-orders` in `PrepareCommit`; the **Messages** tab shows the answer
#    to `EndTxn` on its way to the producer (an orange dot).
# 2. Open **Faults**, pick the coordinator (`broker-1`; a click on its lane head in the Messages tab
#    picks it too) and press **Crash**. A new branch starts here; the branch as written is kept.
# 3. Step on and watch the Coordinators tab. The first Step jumps over about 9 simulated seconds of
#    failed retries (the narration counts them); the second elects new leaders; at the third the new
#    coordinator has loaded `tx-orders` (the Coordinators tab shows it at broker 2, in `PrepareCommit`)
#    and its first COMMIT marker lands; seven Steps after the crash it reaches `CompleteCommit`. The key-moment
#    buttons now follow your branch: **CompleteCommit: every partition has its marker** goes there in one
#    click.

# %% [markdown]
# Answer the two questions under the stepper before you step on from the crash.

# %%
from widgets import Stepper

dies = Stepper("coordinator-dies-after-prepare")
dies.widget

# %% [markdown]
# **Your move:** click key moment 1 (`decided (PrepareCommit is durable)`), crash the coordinator (*Faults*, or
# `dies.crash(dies.cluster.transaction_coordinator("tx-orders"))`), and step on. Answer first:


# %% jupyter={"source_hidden": true}
def crash_at_decision(until=None):
    """A replay of its own: the coordinator crashed at the decision, stopped at ``until`` (or at its end)."""
    run = moment("coordinator-dies-after-prepare", until, skip_background=True,
                 faults=[("decided (PrepareCommit is durable)", "crash",
                          lambda st: st.cluster.transaction_coordinator("tx-orders"))])
    if until is None:
        run.run_to_end()
    return run


ENDS = ["committed", "aborted", "stuck until the crashed broker returns"]
p_dies = Predict("The coordinator dies with the producer's answer on the wire and no marker written. How does the "
                 "transaction end?", choices=ENDS,
                 check=lambda: ENDS[0] if len(crash_at_decision().result["read_committed"]) == 4 else ENDS[1],
                 why="PrepareCommit was durable: a follower of __transaction_state-0 becomes leader, loads it and sends "
                     "the markers itself. Nothing waits for the crashed broker.")
p_dies

# %% jupyter={"source_hidden": true}
WHEN = ["at once: the answer was already sent", "after several seconds of retries", "never: it raises an error"]
p_return = Predict("When does the producer's <code>commit_transaction()</code> return, and how?", choices=WHEN,
                   check=lambda: WHEN[1] if crash_at_decision(
                       "the commit already finished (a retried EndTxn) -> NONE").cluster.now > 5000 else WHEN[0],
                   why="The answer died with the connection; the producer retries EndTxn and FindCoordinator until the "
                       "controller fences the dead broker (broker.session.timeout.ms, about 9 s) and the new "
                       "coordinator answers the retry with success.")
p_return

# %% [markdown]
# **Check** what you should have seen. The cell replays the scenario in a stepper of its own (yours stays where you left it): it replays the branch as written to
# the decision, crashes the coordinator there and follows the new branch to its end (this cell
# fails if the lab disagrees):

# %%
dies_check = Stepper("coordinator-dies-after-prepare", skip_background=True)
assert dies_check.step_until("decided (PrepareCommit is durable)")
assert "state PrepareCommit → writing CompleteCommit" in coordinator_says(dies_check, "tx-orders")
old = dies_check.cluster.transaction_coordinator("tx-orders")
assert ("EndTxn", "response", f"broker-{old}", "producer") in on_the_wire(dies_check)
crashed = dies_check.crash(old)                                   # Faults → Crash, at this step
assert f"broker-{old} ✕" in trace_named(dies_check.messages.figure, "processes (click: crash / restart)").text

assert f"producer lost its connection to broker-{old}; EndTxn fails with NETWORK_EXCEPTION" in dies_check.narration
assert ("EndTxn", "response", f"broker-{old}", "producer") not in on_the_wire(dies_check)   # the answer died with it
assert dies_check.step_until("the new coordinator finishes it")     # a new leader of __transaction_state-0 loaded it
new = dies_check.cluster.transaction_coordinator("tx-orders")
assert new != old and f"tx-orders at coordinator broker {new}" in coordinator_says(dies_check, "tx-orders")
assert dies_check.cluster.now > 9000                                # after broker.session.timeout.ms
assert dies_check.step_until("the commit already finished (a retried EndTxn) -> NONE")   # the producer's retry
dies_check.run_to_end()
assert "state CompleteCommit" in coordinator_says(dies_check, "tx-orders")
assert dies_check.result["read_committed"] == ["order-0", "order-1", "order-2", "order-3"]
ending = dies_check.compare("main", crashed)
assert ending["partitions"] == {} and ending["transactions"] == {}   # the same commit as the branch as written
dies_check.close()

# %% [markdown]
# The producer's answer was lost with its coordinator's connection: the producer saw the connection
# break and its `EndTxn` fail (the trace says `NETWORK_EXCEPTION`, Kafka's name for it; librdkafka's own code
# is `_TRANSPORT`), so `commit_transaction()` kept retrying `EndTxn` and asking `FindCoordinator`, for about 9 s, until
# the controller fenced the dead broker and a follower of `__transaction_state-0` took over. The new
# coordinator loaded `PrepareCommit`, sent the markers itself and answered the retried `EndTxn` with
# success: the commit ends exactly as in the branch where the scenario crashed the coordinator one
# step later.
#
# **4.2 A marker's leader is down** (`marker-leader-down`, section 2). The producer writes to
# `orders-0` and `orders-1` and commits; the coordinator leads `orders-1` and writes its marker at
# once, while the marker for `orders-0` is still on the wire when `orders-0`'s leader crashes. Keep
# the **Partition logs** tab open: ✕ marks a replica that is down, ★ the leader, and ▲ the
# `read_committed` consumer's position on each partition.

# %% [markdown]
# The COMMIT marker of `orders-1` is written a step after the crash: click the key moment **2. A partition's leader
# crashes**, then Step once. Answer the question under the stepper first.

# %%
marker = Stepper("marker-leader-down")
marker.widget

# %% jupyter={"source_hidden": true}
p_lso1 = predict_at("Right after the COMMIT marker of <code>orders-1</code> is written (its leader is alive), where "
                    "is the LSO of <code>orders-1</code>?", "marker-leader-down", "orders-1: wrote a COMMIT marker",
                    partition_value("orders", 1, "lso"), kind="offset",
                    why="A marker counts once it is below the HW, and the HW of orders-1 cannot pass the crashed broker, "
                     "still in the ISR, until the controller fences it: the LSO stays at 0 for about 9 s.")
p_lso1

# %% [markdown]
# **Check** what you should have seen (on a replay in a stepper of its own, never yours; it fails if the lab disagrees):

# %%
marker_check = Stepper("marker-leader-down", skip_background=True)
strip = marker_check.log_strip
assert marker_check.step_until("crashes")
assert "orders-0 · broker 0 ★ ✕ down" in strip.figure.layout.yaxis.ticktext
assert marker_check.step_until("orders-1: wrote a COMMIT marker")
assert [drawn_line(strip, x, "orders", 1) for x in ("LEO", "HW", "LSO")] == [3, 2, 0]   # the dead broker is in the ISR
assert marker_check.step_until("controller fenced broker 0")                  # broker.session.timeout.ms later
assert marker_check.cluster.now > 9000 and "orders-0 · broker 1 ★" in strip.figure.layout.yaxis.ticktext
assert marker_check.step_until(lambda s: s.cluster.partition_state("orders", 1)["lso"] == 3)
assert drawn_line(strip, "LSO", "orders", 1) == 3 and drawn_line(strip, "LSO", "orders", 0) == 0
assert marker_check.step_until("orders-0: wrote a COMMIT marker")             # the coordinator's retry, to the new leader
assert arrows_now(marker_check) == [("WriteTxnMarkers", f"broker-{marker_check.cluster.transaction_coordinator('tx-orders')}",
                               "broker-1")]
marker_check.run_to_end()
assert drawn_line(strip, "LSO", "orders", 0) == drawn_line(strip, "LSO", "orders", 1) == 3
assert set(drawn_consumers(strip, "read_committed").values()) == {3}
assert marker_check.result["read_committed"] == ["order-0", "order-1", "order-2", "order-3"]
marker_check.close()

# %% [markdown]
# `orders-1` had its marker at once, but its LSO waited too: a marker counts only once it is below
# the HW, and the HW of `orders-1` could not pass the dead broker, still in the ISR, until the
# controller fenced it (`broker.session.timeout.ms`, 9 s). Then the ISR shrank, the HW and the LSO of
# `orders-1` moved, a new leader took `orders-0`, and the coordinator's next retry of the marker
# reached it.

# %% [markdown]
# ## Exercise: how long did the failover take?
#
# In your `dies` stepper, on the branch where you crashed the coordinator at the decision, click the key moment
# **CompleteCommit: every partition has its marker**. How many simulated seconds after the crash is that? (The
# narration's first line shows the clock, `t = … ms`, at the crash and there; within 1 s is right.)


# %% jupyter={"source_hidden": true}
def check_wait(answer):
    crash_ms = moment("coordinator-dies-after-prepare", "decided (PrepareCommit is durable)",
                      skip_background=True).cluster.now          # the step the crash happens at
    complete_ms = crash_at_decision(reached("complete")).cluster.now
    seconds = (complete_ms - crash_ms) / 1000
    return abs(float(answer) - seconds) <= 1, "Read the clock at the crash and at CompleteCommit, and subtract."


ex_wait = Exercise("Seconds from the crash to <code>CompleteCommit</code> at the new coordinator:", kind="number",
                   check=check_wait,
                   why="About 9 s: broker.session.timeout.ms. Until the controller fenced the dead broker nobody led "
                       "__transaction_state-0, no marker was written and read_committed readers waited; the producer's "
                       "retried EndTxn was answered some 20 ms after CompleteCommit, so its "
                       "commit_transaction() waited as long.",
                   solution='dies.switch("main", 0)\n'
                            'dies.goto("prepare-commit")\n'
                            't0 = dies.cluster.now\n'
                            'dies.crash(dies.cluster.transaction_coordinator("tx-orders"))\n'
                            'dies.goto("complete")\n'
                            '(dies.cluster.now - t0) / 1000      # about 9 s: broker.session.timeout.ms')
ex_wait

# %% [markdown]
# ## What to remember
#
# * The decision is the durable `Prepare*` record. A coordinator crash before it loses nothing but
#   time (the client's retried `EndTxn` decides); after it, the new coordinator reloads the record and
#   resends the markers with a higher coordinator epoch.
# * A `_TIMED_OUT` from `commit_transaction()` is retriable: call it again to learn the outcome.
# * A coordinator that moves (a preferred leader election) answers `NOT_COORDINATOR`; the producer
#   finds the new one, which has loaded the transaction from `__transaction_state`.
# * A broker stopped on purpose goes through a controlled shutdown: its leaderships move before it
#   exits, so its clients move on in milliseconds instead of waiting out `broker.session.timeout.ms`.
# * A partition that cannot take its marker pins its LSO until it can; the rest of the transaction is
#   already visible, and the coordinator keeps the marker, sending it as soon as it learns the
#   partition's new leader.
# * `transaction.timeout.ms ≤ transaction.max.timeout.ms`; idle transactional ids expire with a
#   tombstone after `transactional.id.expiration.ms`; an exhausted epoch rotates the producer id.

# %% [markdown]
# ## Where next
#
# **07 · Spark: at-least-once and exactly-once** puts it all in a pipeline (about 40 minutes), or **08 · Break it** switches the safeguards off (about 30 minutes).
# `GLOSSARY.md` explains every Kafka term used here; `INDEX.md` lists the gallery's scenarios by concept.
