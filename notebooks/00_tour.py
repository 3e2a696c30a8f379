# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 · The lab in twenty minutes
#
# **You need:** Python you can read; no Kafka yet. **Time:** about 20 minutes.
# **You will be able to:** step a simulated Kafka cluster one event at a time, read the LEO, HW and LSO of
# a partition, apply a fault at a chosen step and compare how two runs end.
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
# 2. ask you to **predict** what will happen (a small box: answer, press *Check*; the lab compares your
#    answer with what the simulation shows and says why),
# 3. **step** through it one event at a time, watching the logs, the coordinator and the messages,
# 4. **check** what you saw (the check cells replay the scenario on their own and fail if the lab disagrees;
#    they never move your stepper).
#
# Run the whole notebook first (*Run → Run All Cells*): nothing below gives an answer away.

# %%
from IPython.display import HTML

from txnlab import OFFSET_INVALID, gallery
from widgets import Stepper
from widgets.predict import Exercise, Predict, moment, partition_value, predict_at
from widgets.visibility import commit_timeline, visibility_figure

for name in gallery.names():                 # the scenarios of the gallery; every chapter steps some of them
    print(f"{name:36} {gallery.load(name).title}")

# %% [markdown]
# ## 1 · Explain: a transaction across two partitions
#
# The scenario `commit-visible-atomically` is ordinary client code: open *what happens, and the expected
# ending* at the top of the stepper for a description in words, and see the code with
# `gallery.load("commit-visible-atomically").run` (`import inspect; print(inspect.getsource(...))`).
# A transactional producer writes four records, two to `orders-0` and two to `orders-1`, and commits.
# A `read_committed` consumer and a `read_uncommitted` consumer watch.
#
# Three offsets of a partition log matter:
#
# * **LEO** (log end offset): where the next record will be appended, on each replica;
# * **HW** (high watermark): every replica in the ISR has the log up to here; consumers never read past it;
# * **LSO** (last stable offset): the first offset of the oldest transaction still open (or the HW
#   if none is open). A `read_committed` consumer never reads past the LSO.
#
# A transaction ends with a **COMMIT or ABORT marker** that the coordinator asks each partition
# leader to write, *after* it has made its decision durable in `__transaction_state`. The decision is
# one record, so it is atomic: all partitions commit or none. Each partition becomes readable when
# its own marker is written there, so two partitions may show the commit at different moments (section 3).

# %%
s = Stepper("commit-visible-atomically")
s.widget

# %% [markdown]
# This stepper (just above) starts at step 0. **Step** goes to the next *moment*: one change you can
# see (a request and its answer, a state change of the transaction, a marker landing, the LSO moving);
# the plumbing in between is folded in and counted ("+14 plumbing events"), and the purple box says
# what happened and *why*. The step-size toggle switches to one request/response *exchange* or to
# single kernel *events*. The buttons under the slider are the scenario's **key moments**: one click
# jumps to each (`Stepper("commit-visible-atomically", at="marker-0")` opens there). **Back** goes one
# step back (the lab re-executes the run from its seed). **Run** plays the steps at the chosen speed.
# The tabs show the partition logs (one row per replica; ★ marks the leader), the coordinator's state
# machine and its log, the message flow on a time axis, and the raw trace; `s.present()` shows the
# controls, narration and log on one projector-sized screen. The filter can follow one API, one process
# or one transactional.id. The stepper's pictures are 840 px wide: on a screen 1280 px wide they fit the
# notebook column even with JupyterLab's file browser open; hiding it (Ctrl+B, or *View → Appearance → Show
# Left Sidebar*) gives them more room.
#
# **Your move:** answer the two questions below, then go to the moment they ask about: click the key moment
# **1. The four records are in the logs, but the transaction is open** (the records are in the leaders' logs,
# not yet on the followers), then press **Step** three times, until the narration says
# `reader-uncommitted got the Fetch response from broker-1 (orders-1 2 record(s) HW 2)`. The producer's
# `flush()` has returned: its four records are replicated (the HW of both partitions is 2) and the
# `read_uncommitted` consumer has fetched all four, but the transaction is not committed yet. Look at the
# *Partition logs* tab, then press *Check*.

# %% jupyter={"source_hidden": true}
def records_received(run, name="reader-committed"):
    """How many records consumer ``name`` has been given so far (a position not set yet counts as none)."""
    c = run.cluster.clients[name]
    return sum(max(tp.offset, 0) for tp in c.position(c.assignment()))


def uncommitted_has_all(run):
    """The moment of the questions: the read_uncommitted consumer has been given all four records."""
    return records_received(run, "reader-uncommitted") == 4


p_lso = predict_at(
    "The four records are replicated and the <code>read_uncommitted</code> consumer has all four; the transaction "
    "is still open. Where is the <b>LSO</b> of <code>orders-0</code>?",
    "commit-visible-atomically", uncommitted_has_all, partition_value("orders", 0, "lso"), kind="offset",
    why="The LSO stops at the first offset of the oldest open transaction: the transaction's first record "
        "is at offset 0, so the LSO stays at 0 although the HW has moved past both records.")
p_lso

# %% jupyter={"source_hidden": true}
p_read = predict_at(
    "At that same moment, how many of the four records has the <code>read_committed</code> consumer "
    "received?", "commit-visible-atomically", uncommitted_has_all, records_received, kind="number",
    why="A read_committed consumer reads only below the LSO, and both LSOs are 0 while the transaction is "
        "open. The read_uncommitted consumer reads up to the HW: it already has all four.")
p_read

# %% [markdown]
# **Check** (on a replay of its own, never your stepper): the records are below the HW (replicated) but
# above the LSO (their transaction is open):

# %%
at_flush = moment("commit-visible-atomically", uncommitted_has_all, skip_background=True)
p0 = at_flush.cluster.partition_state("orders", 0)
reader = at_flush.cluster.clients["reader-committed"]
assert p0["hw"] == 2 and p0["lso"] == 0, p0          # replicated, but not stable
assert "reader-uncommitted got the Fetch response from broker-1" in at_flush.narration   # the step the text names
assert records_received(at_flush) == 0              # read_committed got nothing yet
# (its position() is still OFFSET_INVALID, -1001: as in librdkafka, poll() sets it when it consumes a record,
# a message it returns or a marker it skips)
assert all(tp.offset == OFFSET_INVALID for tp in reader.position(reader.assignment()))

# %% [markdown]
# ## 2 · Step inside `commit_transaction()`, and crash the coordinator there
#
# The producer then calls `commit_transaction()`, and from then on the client code is *inside*
# it: its thread waits while you step. The coordinator first writes **PrepareCommit** to
# `__transaction_state` and waits until it is replicated: from that moment the outcome is decided, whatever
# crashes. Then it sends the markers.
#
# **Your move:** click the key moment **2. PrepareCommit is durable in __transaction_state** (the narration
# says `'tx-orders' is now PrepareCommit`). Then open the stepper's *Faults* section and crash the broker that
# is the transaction coordinator (the *Coordinators* tab names it; or run
# `s.crash(s.cluster.transaction_coordinator("tx-orders"))` in a new cell). A fault starts a
# new **branch**; the run as written stays as branch `main`. Before you step on, answer:

# %% jupyter={"source_hidden": true}
p_outcome = Predict(
    "The coordinator dies right after <code>PrepareCommit</code> became durable, before any marker is "
    "written. How does the transaction end?",
    choices=["committed", "aborted", "stuck until the coordinator's broker comes back"],
    check=lambda: {"CompleteCommit": "committed", "CompleteAbort": "aborted"}.get(
        crashed_run().cluster.transaction_state("tx-orders")["state"], "stuck until the coordinator's broker comes back"),
    why="PrepareCommit was replicated before the crash, so the decision survives it: another broker becomes "
        "leader of that __transaction_state partition, loads PrepareCommit and sends the markers itself.")


def crashed_run():
    """A replay of its own: crash the coordinator once PrepareCommit is durable, then run to the end."""
    run = moment("commit-visible-atomically", None, skip_background=True,
                 faults=[("is now PrepareCommit", "crash", lambda st: st.cluster.transaction_coordinator("tx-orders"))])
    run.run_to_end()
    return run


p_outcome

# %% jupyter={"source_hidden": true}
p_who = Predict("Who writes the COMMIT markers in that branch?",
                choices=["the producer, when it retries", "the new transaction coordinator", "nobody"],
                check="the new transaction coordinator",
                why="Markers are the coordinator's job. The producer's answer was lost in the crash, so it retries "
                    "EndTxn at the new coordinator (CONCURRENT_TRANSACTIONS while the markers are being written, then "
                    "OK), but EndTxn never carries markers; the new coordinator finds PrepareCommit in the log it "
                    "loads and completes it.")
p_who

# %% [markdown]
# **Check** on a replay with the same crash: another broker took over `__transaction_state`, loaded
# PrepareCommit and finished the commit; the consumers end with the same four records as the run as written.

# %%
crash_check = crashed_run()
main_check = moment("commit-visible-atomically", None, skip_background=True)
main_check.run_to_end()
old = crash_check.history.branches[crash_check.branch].faults[0][1].node
assert crash_check.cluster.transaction_coordinator("tx-orders") != int(old.rsplit("-", 1)[1])
assert crash_check.cluster.transaction_state("tx-orders")["state"] == "CompleteCommit"
assert sorted(crash_check.result["read_committed_after_commit"]) == ["order-0", "order-1", "order-2", "order-3"]
assert sorted(main_check.result["read_committed_after_commit"]) == ["order-0", "order-1", "order-2", "order-3"]

# %% [markdown]
# Your stepper's **Branches** section lists both runs: `main` (as written) and the branch with the crash.
# Its *compare* shows how they end; here is the same comparison for the replay above. The same records
# are committed in both, one COMMIT marker per partition; the crash branch only ends later. The old
# coordinator's markers were still on the wire when it crashed and were lost with its connections, so the
# new coordinator wrote both. (Crash it one key moment later, after `orders-0`'s marker has landed, and
# `orders-0` ends with two COMMIT markers, one from each coordinator: markers are safe to repeat.)

# %%
HTML(crash_check.compare_html("main", crash_check.branch))

# %% [markdown]
# ## 3 · One decision, a marker per partition
#
# The decision is atomic and durable, but it is not a single moment for the readers. Each partition
# becomes readable to `read_committed` consumers when **its own** marker is written and replicated.
# The gallery scenario `marker-leader-down` crashes the leader of one partition while its COMMIT
# marker is on the way: the coordinator retries that marker until a new leader is elected.

# %% jupyter={"source_hidden": true}
p_split = Predict(
    "In <code>marker-leader-down</code>, the leader of <code>orders-0</code> crashes while its COMMIT marker "
    "is on the way. Can a <code>read_committed</code> consumer of <code>orders-1</code> read the committed "
    "records before <code>orders-0</code> gets its marker?",
    choices=["yes: orders-1 is readable first", "no: both become readable at the same moment"],
    check=lambda: ("yes: orders-1 is readable first" if visibility().readable_ms["orders-1"]
                   < visibility().readable_ms["orders-0"] else "no: both become readable at the same moment"),
    why="Each partition's LSO moves when its own marker is written and replicated. The decision covers both "
        "partitions, but a reader of one partition can see the commit while a reader of the other still waits. "
        "Here both first wait about 9 s: the crashed broker stays in the ISR until the controller fences it, and "
        "no HW can pass it; then orders-1 is readable, and orders-0 waits for its new leader and the "
        "coordinator's retried marker.")

_timeline = []


def visibility():
    """When each partition of the commit became readable (a replay of its own, computed once)."""
    if not _timeline:
        _timeline.append(commit_timeline("marker-leader-down", "tx-orders", [("orders", 0), ("orders", 1)]))
    return _timeline[0]


p_split

# %% [markdown]
# The picture below (drawn from a replay of the scenario) shows the moment of the decision and, for
# each partition, when its committed records became readable. Look at it after you have answered.

# %%
visibility_figure(visibility())

# %% [markdown]
# **Check:** one decision, two moments of visibility, both after the decision:

# %%
tl = visibility()
assert tl.decided_ms < tl.readable_ms["orders-1"] < tl.readable_ms["orders-0"]

# %% [markdown]
# ## 4 · Back in time is exact
#
# Going back re-executes the run from its seed up to the earlier step, so the state you return to
# is the state you left, event for event. (This check uses a stepper of its own.)

# %%
replay = Stepper("commit-visible-atomically", skip_background=True)
replay.jump(5)
before = replay.trace_text(50)
replay.jump(8)
replay.back(3)
assert replay.position == 5 and replay.trace_text(50) == before
replay.close()

# %% [markdown]
# ## 5 · Exercise: find the moment of the decision
#
# In your stepper (branch `main`: pick it in *Branches*), find the step at which the transaction becomes
# **decided**: the narration says `decided (PrepareCommit is durable)`. Type its step number (the
# stepper shows *step k / n*) and press *Check*. Then step on: the markers are sent in the same step,
# and the `orders` rows of the *Partition logs* tab show each marker landing, the **HW** moving and the **LSO**
# jumping with it, because no transaction is open any more.

# %% jupyter={"source_hidden": true}
ex_decided = Exercise(
    "At which step of the run as written does <code>tx-orders</code> become decided?", kind="number",
    check=lambda answer: (answer == moment("commit-visible-atomically", "decided (PrepareCommit is durable)",
                                           skip_background=True).position,
                          "Step back and forth around it: one step earlier the record was written but not yet "
                          "replicated."),
    solution='s.switch("main", 0)\ns.step_until("decided (PrepareCommit is durable)")\ns.position')
ex_decided

# %% [markdown]
# ## 6 · Every scenario of the gallery
#
# Every scenario also runs plainly, to its end, and checks its expected ending:

# %%
for name in gallery.names():
    sc = gallery.load(name)
    for variant in (list(sc.variants) or [None]):
        cluster, result = sc.play(seed=0, variant=variant)
        sc.verify(cluster, result, variant)
        print(f"ok  {name}{' [' + variant + ']' if variant else ''}: {sc.title}")

# %% [markdown]
# ## Where next
#
# * **01 · The idempotent producer**: why a retry never writes a record twice (about 45 minutes).
# * Then **02 · Transactions and markers** takes a transaction apart request by request, over three partitions
#   of two topics, and loses one of its markers on the way.
# * `INDEX.md`, in the folder of this notebook, lists every gallery scenario by concept; `GLOSSARY.md` explains
#   every Kafka term the lab uses.
