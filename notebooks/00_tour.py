# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 · The lab in ten minutes
#
# A whole Kafka cluster runs inside this notebook: three brokers with replicated partition logs, the
# transaction coordinator, the group coordinator, and the confluent-kafka client API you would use
# against a real cluster. It is a *simulation*: one clock, one seeded random generator, and a
# network in which every request and response is a message you can see, hold up, lose or duplicate.
# The same seed always gives the same run, so you can go **back in time** and try something else.
#
# This tour does what every chapter does:
#
# 1. **explain** a mechanism,
# 2. ask you to **predict** what will happen,
# 3. **step** through it one event at a time, watching the logs, the coordinator and the messages,
# 4. **check** what you saw (the check cells fail if the lab disagrees).

# %%
from txnlab import gallery
from widgets import Stepper

for name in gallery.names():
    print(f"{name:36} {gallery.load(name).title}")

# %% [markdown]
# ## 1 · Explain: a transaction across two partitions
#
# The scenario `commit-visible-atomically` is ordinary client code (open the *what happens* line in
# the stepper to read it). A transactional producer writes four records, two to `orders-0` and two
# to `orders-1`, and commits. A `read_committed` consumer and a `read_uncommitted` consumer watch.
#
# Three offsets of a partition log matter:
#
# * **LEO** (log end offset): where the next record will be appended, on each replica;
# * **HW** (high watermark): every replica in the ISR has the log up to here; consumers never read past it;
# * **LSO** (last stable offset): the first offset of the oldest transaction still open (or the HW
#   if none is open). A `read_committed` consumer never reads past the LSO.
#
# A transaction ends with a **COMMIT or ABORT marker** that the coordinator asks each partition
# leader to write, *after* it has made its decision durable in `__transaction_state`.

# %%
s = Stepper("commit-visible-atomically", skip_background=True)
s.widget

# %% [markdown]
# Above: **Step** executes exactly one event (a message delivered, a timer fired) and the narration
# says what happened and *why*. **Back** goes one step back (the lab re-executes the run from its
# seed). **Run** plays the steps at the chosen speed; the slider jumps anywhere. The tabs show the
# partition logs (one row per replica; ★ marks the leader), the coordinator's state machine and its
# log, the message flow, and the raw trace. *skip background events* hides idle replica fetches and
# timers; the filter can follow one API, one process or one transactional.id.

# %% [markdown]
# **Predict:** The producer has written its four records and `flush()` returned: they are in the leaders' logs
# and replicated (the HW has passed them), but the transaction is not committed yet. Where is the
# LSO of `orders-0`? What does the `read_committed` consumer get?

# %%
# step until the producer's flush() has returned (the records are replicated and acknowledged)
s.step_until("calls commit_transaction()")
print(s.narration)
p0 = s.cluster.partition_state("orders", 0)
print("orders-0: LEO", p0["leo"], " HW", p0["hw"], " LSO", p0["lso"])
reader = s.cluster.clients["reader-committed"]
print("read_committed consumer position:", [(tp.partition, tp.offset) for tp in reader.position(reader.assignment())])

# %% [markdown]
# **Check** the records are below the HW (replicated) but above the LSO (their transaction is open):

# %%
assert p0["hw"] == 2 and p0["lso"] == 0, p0          # replicated, but not stable
assert all(tp.offset == 0 for tp in reader.position(reader.assignment()))   # it got nothing yet

# %% [markdown]
# ## 2 · Step inside `commit_transaction()`, and crash the coordinator there
#
# The client code is now *inside* `commit_transaction()`: its thread waits while you step. The
# coordinator first writes **PrepareCommit** to `__transaction_state` and waits until it is
# replicated: from that moment the outcome is decided, whatever crashes. Then it sends the markers.
#
# Let us stop exactly there, with the decision durable and the markers not yet written, and crash
# the coordinator.

# %% [markdown]
# **Predict:** The coordinator dies after PrepareCommit is durable. Will the transaction be committed, aborted,
# or stuck? Who finishes it?

# %%
s.step_until("is now PrepareCommit")
print(s.narration)
old = s.cluster.transaction_coordinator("tx-orders")
crashed = s.crash(old)                       # a fault at this step: a new branch starts here
print(s.branches)

# %%
s.step_until(lambda s: (s.cluster.transaction_state("tx-orders") or {}).get("state") == "CompleteCommit")
print(s.narration)
new = s.cluster.transaction_coordinator("tx-orders")
print(f"old coordinator: broker {old}, new coordinator: broker {new}")

# %% [markdown]
# **Check** another broker took over `__transaction_state`, loaded PrepareCommit and finished the commit:

# %%
assert new != old
assert s.cluster.transaction_state("tx-orders")["state"] == "CompleteCommit"
s.run_to_end()
assert sorted(s.result["read_committed_after_commit"]) == ["order-0", "order-1", "order-2", "order-3"]

# %% [markdown]
# The **Branches** section of the stepper lists both runs: `main` (as written) and the branch with
# the crash. Compare how they end: the same records are committed in both; the crash branch ends
# later, and a partition may hold a second COMMIT marker, written by the new coordinator (markers
# are safe to repeat).

# %%
from IPython.display import HTML
HTML(s.compare_html("main", crashed))

# %% [markdown]
# ## 3 · Back in time is exact
#
# Going back re-executes the run from its seed up to the earlier step, so the state you return to
# is the state you left, event for event.

# %%
s.switch("main", 5)
before = s.trace_text(50)
s.jump(8)
s.back(3)
assert s.position == 5 and s.trace_text(50) == before
print(s.narration)

# %% [markdown]
# ## 4 · Your turn
#
# The stepper below stands where the coordinator is about to send the COMMIT markers. Click
# **Step** a few times and watch the `orders-0` rows: the marker is appended (LEO), the followers
# fetch it, the **HW** moves, and the **LSO** jumps with it, because no transaction is open any
# more. Then try a fault of your own from the *Faults* section: crash a partition leader now, or
# drop a marker in flight (click its orange dot in the *Messages* tab), and compare the branches.
#
# Every scenario of the gallery also runs plainly, to its end, and checks its expected ending:

# %%
s.switch("main", 0)
s.step_until("sending COMMIT markers")
print(s.narration)

# %%
for name in gallery.names():
    sc = gallery.load(name)
    for variant in (list(sc.variants) or [None]):
        cluster, result = sc.play(seed=0, variant=variant)
        sc.verify(cluster, result, variant)
        print(f"ok  {name}{' [' + variant + ']' if variant else ''}: {sc.expected[:90]}...")
