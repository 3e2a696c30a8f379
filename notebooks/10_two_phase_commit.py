# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10 · Classic two-phase commit, and where Kafka's transactions differ
#
# **You need:** 02 and 06. **Time:** about 30 minutes.
# **You will be able to:** run a two-phase commit, see it block when its coordinator crashes after the votes, and say which of its steps Kafka's transaction protocol keeps or drops.
#
# Kafka's transactions are often compared with the classic **two-phase commit** (2PC):
# "看似相似，都分PREPARE阶段和最终COMMIT阶段，但又有很大不同" (they look alike, both have a PREPARE phase
# and a final COMMIT phase, yet they differ a lot). In 2PC the coordinator sends
# **PREPARE** to every participant; each answers **VOTE_COMMIT** (it made its changes durable and *holds its
# locks*) or **VOTE_ABORT**; then the coordinator logs and sends **GLOBAL_COMMIT** or **GLOBAL_ABORT**, and the
# participants **ACK**. Once a participant voted VOTE_COMMIT it is *prepared*: it may no longer decide alone.
#
# The sharpest difference: *if the coordinator fails after the participants prepared, they block*
# ("其它事务参与方无法判断事务状态从而使得整个事务阻塞": the other participants cannot tell the transaction's
# state, so the whole transaction blocks). Kafka's coordinator writes PrepareCommit to a
# *replicated* log: once that record is durable the outcome is fixed, and another broker can finish it.

# %%
from txnlab import Cluster, Producer, Consumer, TopicPartition
from txnlab.broker.broker import broker_name
from txnlab.twopc import TwoPhaseCommitLab, KeyLocked
from widgets.rocketmq_views import participants_table, space_time_figure
from widgets.predict import Exercise, Predict, at_moment

ACCOUNTS = {"bank-a": {"alice": 100}, "bank-b": {"bob": 20}}
TRANSFER = {"bank-a": {"alice": -30}, "bank-b": {"bob": +30}}     # alice pays bob 30

def bank(seed=1, **config):
    return TwoPhaseCommitLab(ACCOUNTS, seed=seed, config=config or None)

def all_voted(lab, tx_id):
    tx = lab.coordinator.txs.get(tx_id)
    return tx is not None and len(tx.votes) == len(lab.participants)


# %% [markdown]
# ## 1. A transfer that commits
#
# Every log write is *forced* (it takes `log.force.ms` of simulated time): the coordinator forces
# `START_2PC` before PREPARE goes out and the decision before anyone hears it; a participant forces `READY`
# before it votes.

# %% [markdown]
# Think of the records that end up in the coordinator's log, then answer:

# %% jupyter={"source_hidden": true}
p_messages = Predict("How many messages does one committed transfer between two banks take?", kind="number",
                     check=lambda: len(apis),
                     why="Two PREPARE, two votes, two GLOBAL_COMMIT and two ACK: two round trips per participant. The "
                         "coordinator's log holds START_2PC, GLOBAL_COMMIT and END.")
p_messages

# %%
lab = bank()
print(lab.run_transaction("T1", TRANSFER), lab.balances())
print(lab.coordinator.log.lines())
space_time_figure(lab)

# %% [markdown]
# **Check** 2 PREPARE + 2 votes + 2 GLOBAL_COMMIT + 2 ACK, and START_2PC, GLOBAL_COMMIT, END in the log.

# %%
apis = [m.api for m in lab.network_messages()]
assert len(apis) == 8 and all(apis.count(a) == 2 for a in ("PREPARE", "VOTE_COMMIT", "GLOBAL_COMMIT", "ACK"))
assert [r.kind for r in lab.coordinator.log.records] == ["START_2PC", "GLOBAL_COMMIT", "END"]
assert lab.balances() == {"bank-a": {"alice": 70}, "bank-b": {"bob": 50}}

# %% [markdown]
# ## 2. One "no" is enough
#
# Alice cannot pay 500. bank-a votes VOTE_ABORT — allowed, it has promised nothing yet — and the coordinator
# aborts everywhere. bank-b, which had prepared, waits for GLOBAL_ABORT and then drops its locks.

# %% [markdown]
# Think of the balances after T2, then answer:

# %% jupyter={"source_hidden": true}
LOCKS = ["none", "bank-b's (it had prepared)", "bank-a's (it said no)"]
p_locks = Predict("After T2 has aborted, whose locks are still held?", choices=LOCKS,
                  check=lambda: LOCKS[0] if t2_locks == {"bank-a": {}, "bank-b": {}} else
                  LOCKS[1] if t2_locks.get("bank-b") else LOCKS[2],
                  why="bank-a voted VOTE_ABORT and holds nothing; bank-b had prepared and kept its lock only until "
                      "GLOBAL_ABORT reached it. Balances are unchanged.")
p_locks

# %%
print(lab.run_transaction("T2", {"bank-a": {"alice": -500}, "bank-b": {"bob": +500}}))
t2_locks = lab.locks()
participants_table(lab, "T2")

# %% [markdown]
# **Check** Nothing changed and no lock is left.

# %%
assert lab.outcome("T2") == "ABORT"
assert lab.balances() == {"bank-a": {"alice": 70}, "bank-b": {"bob": 50}}
assert lab.locks() == {"bank-a": {}, "bank-b": {}}

# %% [markdown]
# ## 3. The coordinator crashes after both participants prepared: blocking
#
# We step until both votes reached the coordinator, then crash it — its decision is not on disk yet. Both banks
# are prepared. After `decision.timeout.ms` each asks the coordinator (down) and the other bank
# (cooperative termination) for the outcome. The other bank is prepared too and knows nothing.

# %% [markdown]
# One minute later, can a teller at bank-a read alice's balance? Has either bank decided on its own? Think about
# it, then answer for the coordinator's restart:

# %% jupyter={"source_hidden": true}
DECIDES = ["commit: both banks voted yes", "abort: no decision in its log", "it asks the banks again"]
p_presumed = Predict("When the coordinator restarts and finds <code>START_2PC T3</code> but no decision in its log, "
                     "what does it decide?", choices=DECIDES,
                     check=lambda: {"COMMIT": DECIDES[0], "ABORT": DECIDES[1]}.get(lab.outcome("T3"), DECIDES[2]),
                     why="Presumed abort: the votes were never forced to its disk, so it cannot know they were all "
                         "yes; with no decision logged, it aborts. Until then the prepared banks block.")
p_presumed

# %%
lab.begin_transaction("T3", TRANSFER)
lab.run_until(lambda: all_voted(lab, "T3"))
lab.crash(lab.coordinator)
lab.advance(60_000)
try:
    lab.participants["bank-a"].read("alice")
except KeyLocked as e:
    print("read refused:", e)
print("blocked:", lab.blocked("T3"))
print(lab.trace.filter(contains="cannot help")[-1])
participants_table(lab, "T3")

# %% [markdown]
# **Check** Both prepared participants are blocked and hold their locks; nothing was applied.

# %%
assert lab.blocked("T3") == ["bank-a", "bank-b"]
assert lab.locks() == {"bank-a": {"alice": "T3"}, "bank-b": {"bob": "T3"}}
assert lab.balances() == {"bank-a": {"alice": 70}, "bank-b": {"bob": 50}}

# %%
lab.restart(lab.coordinator)
lab.run_until_idle()
print(lab.trace.filter(contains="read its log")[-1])
participants_table(lab, "T3")

# %% [markdown]
# **Check** No decision in the log -> presumed abort; the locks are free again only now.

# %%
assert lab.outcome("T3") == "ABORT" and lab.blocked("T3") == []
assert lab.locks() == {"bank-a": {}, "bank-b": {}}

# %% [markdown]
# ## 4. Step through it yourself: crash the coordinator at the moment you choose
#
# The stepper runs the same transfer as a story, `2pc-transfer`: the application asks for T1 and waits up to
# 30 s for the outcome; an operator then restarts whatever is down. Nothing goes wrong as written. Each
# **Step** (or →) goes to the next moment that changes a picture; **Back** (←) re-runs from the seed; the
# **Key moments** buttons jump straight to a moment, one click each. The tab **Participants** shows each
# process's state for T1 (a prepared bank is orange and *in doubt*: it waits for a decision it may not take
# alone; BLOCKED once the coordinator that would tell it is down), its locks and data, and below it the durable
# logs recovery will read. **Faults** offers this lab's processes: `coordinator`, `bank-a`, `bank-b`.
#
# Click key moment **1** (*Both banks forced READY and voted VOTE_COMMIT*): both banks are prepared, their
# votes are on their way, and the coordinator has decided nothing. Then open **Faults**, pick `coordinator`
# (or click its lane head in **Messages**) and **Crash** it. A new branch starts; `main` is kept; **Step**
# then takes you through what follows, a moment per click.

# %% jupyter={"source_hidden": true}
ENDS = ["COMMIT: both banks had voted yes", "ABORT, once the operator restarts the coordinator (presumed abort)",
        "the banks stay blocked for ever"]
p_branch = Predict("In your branch (the coordinator crashed before GLOBAL_COMMIT was on its disk), how does T1 end?",
                   choices=ENDS,
                   check=at_moment("2pc-transfer", None,
                                   lambda run: {"COMMIT": ENDS[0], "ABORT": ENDS[1]}.get(run.result["outcome"], ENDS[2]),
                                   faults=[("bank-b is prepared for T1", "crash", "coordinator")], to_end=True),
                   why="Both banks are prepared and block (each asks the other, which knows nothing) for the 30 s; the "
                       "restarted coordinator finds only START_2PC in its log and presumes abort. main committed.")
p_branch

# %%
from IPython.display import HTML
from widgets import Stepper

transfer = Stepper("2pc-transfer")
transfer.widget

# %% [markdown]
# **Check** what you should have seen (the cell drives a replay of the stepper above to key moment 1, crashes the
# coordinator there and follows the new branch to its end; it fails if the lab disagrees):

# %%
transfer_check = Stepper("2pc-transfer", skip_background=True)
transfer_check.goto("prepared")                                       # key moment 1
assert transfer_check.lab.participant_states("T1") == {"bank-a": "READY", "bank-b": "READY"}
crashed = transfer_check.crash("coordinator")                       # Faults -> coordinator -> Crash, at this step
assert transfer_check.step_until("cannot help")                      # each bank asks the other: prepared too
assert transfer_check.lab.blocked("T1") == ["bank-a", "bank-b"]
assert [r.kind for r in transfer_check.lab.coordinator.log.records] == ["START_2PC"]
transfer_check.run_to_end()
r = transfer_check.result
assert r["after_30s"]["blocked"] == ["bank-a", "bank-b"] and r["after_30s"]["teller_reads_alice"].startswith("locked")
assert r["operator_restarted"] == ["coordinator"] and r["outcome"] == "ABORT"
assert transfer_check.lab.balances() == {"bank-a": {"alice": 100}, "bank-b": {"bob": 20}}
assert transfer_check.outcome("main")["state"]["T1: coordinator's log"] == "COMMIT"
HTML(transfer_check.compare_html("main", crashed))

# %% [markdown]
# The branch where you crashed the coordinator ends like section 3 — blocked for 30 s, then presumed abort —
# while `main` committed. The scenario `2pc-coordinator-crash-blocks` is that branch written as a story
# (`Stepper("2pc-coordinator-crash-blocks")`). Before the exercise below, try one more crash: go back to `main`
# (**Branches**, or `transfer.switch("main", 0)`), click key moment **2** (*The coordinator forces GLOBAL_COMMIT to
# its log*: its narration ends *GLOBAL_COMMIT T1 is on disk*) and crash the coordinator there. Its decision is on
# its disk, and it has just sent GLOBAL_COMMIT to both banks (the **Messages** tab shows them). Step on: do the
# banks hear it, and how does T1 end? Section 5 asks the same question of a lab run in code.

# %% [markdown]
# ## Exercise: a crash that still commits
#
# Write `make_it_commit(st)`: given a fresh stepper on `2pc-transfer`, step it and crash the coordinator (only the
# coordinator, once) so that the branch ends with both banks committed. The lab checks the branch's ending.

# %% jupyter={"source_hidden": true}
def check_commit_despite_crash(fn):
    st = Stepper("2pc-transfer", skip_background=True)
    try:
        fn(st)
        crashes = [f for _, f in st.history.branches[st.branch].faults]
        end = st.outcome(st.branch)["state"]
    finally:
        st.close()
    ok = [(f.kind, f.node) for f in crashes] == [("crash", "coordinator")] and \
        (end["T1: bank-a"], end["T1: bank-b"]) == ("COMMIT", "COMMIT")
    return ok, f"faults {[f.describe() for f in crashes]}; banks end {end['T1: bank-a']}, {end['T1: bank-b']}"


ex_commit = Exercise("Write <code>make_it_commit(st)</code>: one coordinator crash, and T1 still commits.", kind="code",
                     check=check_commit_despite_crash,
                     solution='def make_it_commit(st):\n'
                              '    st.goto("decision")      # key moment 2: the decision is on the coordinator\'s disk\n'
                              '    st.crash("coordinator")')
ex_commit

# %%
def make_it_commit(st):
    raise NotImplementedError          # your code here


ex_commit.submit(make_it_commit)

# %% [markdown]
# ## 5. The decision was logged, but nobody heard it
#
# This time GLOBAL_COMMIT reaches the coordinator's disk and both messages are lost; then it crashes. Only its
# disk knows the outcome.

# %% jupyter={"source_hidden": true}
HEARD = ["yes: they learn it from each other", "no: they stay blocked until it restarts, then commit"]
p_heard = Predict("GLOBAL_COMMIT is on the coordinator's disk, both messages are lost and it crashes. Do the banks "
                  "commit before the coordinator is back?", choices=HEARD,
                  check=lambda: HEARD[1] if t4_blocked_while_down else HEARD[0],
                  why="Only the coordinator's disk knows the decision; a prepared bank may not decide alone. After the "
                      "restart the coordinator reads GLOBAL_COMMIT from its log and sends it again.")
p_heard

# %%
lab4 = bank(seed=2)
lab4.drop_next("GLOBAL_COMMIT", count=2)
lab4.begin_transaction("T4", TRANSFER)
lab4.run_until(lambda: lab4.outcome("T4") == "COMMIT")
lab4.crash(lab4.coordinator)
lab4.advance(30_000)
t4_blocked_while_down = lab4.blocked("T4")
print("while it is down:", lab4.participant_states("T4"), "blocked", lab4.blocked("T4"))
lab4.restart(lab4.coordinator)
lab4.run_until_idle()
print("after restart:", lab4.participant_states("T4"), lab4.balances())

# %% [markdown]
# **Check** Blocked until the restart, then committed from the log.

# %%
assert lab4.participant_states("T4") == {"bank-a": "COMMIT", "bank-b": "COMMIT"}
assert lab4.balances() == {"bank-a": {"alice": 70}, "bank-b": {"bob": 50}}

# %% [markdown]
# ## 6. Kafka at the same moment: PrepareCommit is durable, the coordinator crashes
#
# Kafka's PREPARE is not a vote: the transaction coordinator writes `PrepareCommit` to its partition of
# `__transaction_state`, replicated to other brokers. Once that record is durable, the transaction *will*
# commit; the partitions never voted. We drive `commit_transaction()` step by step, stop right there, throw
# away the markers the coordinator just sent, and crash it. The partitions' leaders are "participants" that
# also wait — a read_committed consumer cannot pass the LSO — but the controller soon makes another broker
# leader of that `__transaction_state` partition; it loads the log, finds PrepareCommit, and writes the
# markers.

# %% jupyter={"source_hidden": true}
p_kafka_rc = Predict("Kafka: the coordinator crashed right after <code>PrepareCommit</code> became durable, with no "
                     "marker written. Will a <code>read_committed</code> consumer see the transfer before the crashed "
                     "broker restarts?", choices=["yes", "no"],
                     check=lambda: "yes" if seen_while_down == [b"alice -30", b"bob +30"] else "no",
                     why="PrepareCommit is replicated: another broker becomes leader of that __transaction_state "
                         "partition (after about 9 s, when the controller fences the dead broker), loads it and writes "
                         "the markers. Nobody waits for the crashed broker.")
p_kafka_rc

# %%
c = Cluster(brokers=3, seed=7)
for t in ("debits", "credits"):
    c.create_topic(t, partitions=1, replication_factor=3)
tid = "transfer"
p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": tid})
p.init_transactions()
p.begin_transaction()
p.produce("debits", value=b"alice -30")
p.produce("credits", value=b"bob +30")
p.flush()
p.sender.begin_end_txn(True)                      # commit_transaction(), one step at a time
c.run_until(lambda: (c.transaction_state(tid) or {}).get("state") == "PrepareCommit")
old = c.transaction_coordinator(tid)
for m in c.in_flight():
    if m.api == "WriteTxnMarkers" and m.src == broker_name(old):
        c.drop_message(m.id)
crashed_at = c.clock
c.crash(old)

def read_committed(cluster):
    cons = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "audit", "enable.auto.commit": False,
                     "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    cons.assign([TopicPartition("debits", 0), TopicPartition("credits", 0)])
    out, empty = [], 0
    while empty < 2:
        msg = cons.poll(0.5)
        if msg is None:
            empty += 1
        elif msg.error() is None:
            out.append(msg.value())
    return sorted(out)

print("right after the crash:", read_committed(c))
c.run_until(lambda: (c.transaction_state(tid) or {}).get("state") == "CompleteCommit", 60_000)
new = c.transaction_coordinator(tid)
print(f"broker {new} finished the commit {c.clock - crashed_at} ms after broker {old} crashed; "
      f"broker {old} is {'up' if c.broker(old).alive else 'still down'}")
seen_while_down = read_committed(c) if not c.broker(old).alive else []
print("now:", read_committed(c))

# %% [markdown]
# **Check** Rolled forward by another broker, without the crashed one.

# %%
assert new != old and not c.broker(old).alive
assert c.clock - crashed_at < 30_000
assert read_committed(c) == [b"alice -30", b"bob +30"]

# %% [markdown]
# ## 7. The differences, side by side
#
# | | classic 2PC | Kafka's transactions |
# |---|---|---|
# | prepare | PREPARE to every participant; each votes | `PrepareCommit`/`PrepareAbort` written to `__transaction_state` only; no votes |
# | when is the outcome fixed | when the coordinator has all votes and logs its decision | when PrepareCommit is durable (replicated) |
# | coordinator failure after prepare | prepared participants block, holding locks, until *that* coordinator returns | another broker becomes coordinator, reads the replicated log, writes the markers |
# | a participant unavailable | no decision without its vote: the coordinator waits for it, or aborts | no vote is needed: only that partition's marker waits; others are readable |
# | abandoned transactions | locks held until the coordinator decides | `transaction.timeout.ms`: the coordinator aborts them |
# | coordinators | one transaction manager | many, one per `__transaction_state` partition leader |
#
# Note what Kafka does *not* remove: a read_committed consumer of a partition still waits at the LSO until the
# marker is written. The wait is seconds (a leader election), not "until the machine comes back".

# %% [markdown]
# ## Where next
#
# **11 · Step through your own client**: a real Kafka client at the lab (about 25 minutes), or back to
# **08 · Break it** with a mutation you have not tried.
# `GLOSSARY.md` explains every Kafka term used here; `INDEX.md` lists the gallery's scenarios by concept.
