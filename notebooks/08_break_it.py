# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 08 · Break it
#
# **You need:** 01 to 06. **Time:** about 30 minutes.
# **You will be able to:** switch off one safeguard of Kafka's exactly-once machinery, find a run that breaks an invariant, and read the counterexample in the stepper.
#
# Every mechanism in the earlier notebooks exists because something goes wrong without it. This
# notebook proves it the way FoundationDB and TigerBeetle test (run the same workload under **many
# seeds**, each seed choosing its own faults: broker crashes, client crashes and zombies, lost, late and
# duplicated messages, network partitions) and the way Jepsen judges (check every run with a **history
# checker**).
#
# * A **workload** is an application: here the **copier** of Kafka's own system test of transactions. A
#   transactional *feeder* writes the input (some transactions aborted); one copier per input
#   partition reads it `read_committed` and copies each batch to the output in a transaction together
#   with its consumed offsets; about one batch in four (in Kafka's test, one in three) is aborted on
#   purpose and re-read.
# * The **checker** reads only the recorded history (what each client sent, polled and was told) and
#   names what went wrong with Jepsen's words: **G1a** (aborted read), **lost-write**, **duplicate**,
#   **poll-skip**, **nonmonotonic-poll**, **G0**/**G1c** (dependency cycles), ... The engine's own
#   invariants (LSO ≤ HW ≤ LEO after every step, no transaction left hanging) are checked too.
# * A **seed** is a complete bug report: the same seed (and fault schedule) replays into the same
#   trace, step for step.
#
# Then we **break** things: a *mutation* turns one safety mechanism off, and the sweep must find the
# damage.

# %%
import ipywidgets
import pandas as pd
from IPython.display import display

from txnlab import MUTATIONS
from txnlab.check import KINDS
from txnlab.sweep.explore import Explorer, replay as replay_choices
from txnlab.sweep.runner import RunConfig, minimize_failure, replay, replay_command, run_seed
from widgets.tables import narration, show
from widgets.predict import Exercise, Predict


# %%
def sweep(cfg, seeds, stop_at_first=True):
    """Run seeds with a progress bar; return (results, first failing result or None)."""
    bar = ipywidgets.IntProgress(min=0, max=len(seeds), description=cfg.mutation or "no mutation",
                                 style={"description_width": "initial"})     # (the whole name)
    label = ipywidgets.Label()
    display(ipywidgets.HBox([bar, label]))
    results, failing = [], None
    for seed in seeds:
        res = run_seed(seed, cfg)
        results.append(res)
        bar.value += 1
        label.value = f"seed {seed}: {res.result.summary() if not res.ok else 'ok'}"
        if not res.ok and failing is None:
            failing = res
            if stop_at_first:
                break
    print(f"{len(results)} seeds, {sum(not r.ok for r in results)} violations")
    return results, failing


def nodes_of(process):
    """History process 'copier-0#2' -> the prefix of its client nodes ('copier-0.2', 'copier-0.2-c')."""
    name, _, instance = process.partition("#")
    return f"{name}.{instance}"


def failing_steps(res, anomaly, limit=12):
    """The foreground steps of the clients involved in one anomaly case, in the time it happened."""
    ops = [res.history[i] for i in anomaly.ops] or list(res.history)[-2:]
    prefixes = {nodes_of(op.process) for op in ops}
    start, end = min(op.start for op in ops), max(op.end for op in ops)
    steps = [e for e in res.cluster.trace.events if not e.background and start <= e.time <= end
             and any(p in (e.node + " " + e.src + " " + e.dst) for p in prefixes)]
    return steps[-limit:]


# %% [markdown]
# ## 1 · A clean sweep
#
# First the machinery as built: the copier, every kind of fault, twenty seeds. Each seed builds a
# fresh three-broker cluster, runs the workload while its faults strike, heals everything, waits for
# every timeout, reads everything back and checks the history. The table after the run has one row per
# seed, all twenty: how many faults struck, the first of them, the run's length and the checker's verdict.

# %% [markdown]
# With idempotence, fencing, markers, the LSO and offsets committed inside the transaction all in place: answer
# first, then run the twenty seeds.

# %% jupyter={"source_hidden": true}
p_clean = Predict("Everything in place, every kind of fault: how many of the twenty seeds will the checker flag?",
                  kind="number", check=lambda: sum(not r.ok for r in clean),
                  why="None: the faults strike (broker and client crashes, lost and duplicated messages, zombies), "
                      "and the machinery as built keeps exactly-once through all of them.")
p_clean

# %%
clean_cfg = RunConfig(workload="copier", faults="all", records=20)
clean, _ = sweep(clean_cfg, list(range(20)), stop_at_first=False)
table = pd.DataFrame([{"seed": r.seed, "faults": len(r.schedule), "first fault": r.schedule[0].describe() if r.schedule else "-",
                       "steps": r.steps, "simulated ms": r.sim_ms, "checker": r.result.summary()} for r in clean])
show(table).set_properties(subset=["steps", "simulated ms", "checker"], **{"white-space": "nowrap"})   # one line a seed

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert len(clean) == 20                      # every seed ran, one row each in the table
assert all(r.ok for r in clean), [r.result.summary() for r in clean if not r.ok]
assert any(r.schedule for r in clean)        # the runs did inject faults

# %% [markdown]
# ## 2 · Ignore the last stable offset
#
# A `read_committed` consumer may only read up to the **LSO**, the first offset of the oldest
# transaction that is still open (the HW if none is); from there on the log may hold records of undecided
# transactions. The mutation **`ignore-lso`** makes
# the broker answer `read_committed` fetches up to the high watermark instead (and forget the
# aborted-transaction list).

# %% [markdown]
# The feeder aborts about one transaction in five. Answer first, then run the sweep with `ignore-lso`.

# %% jupyter={"source_hidden": true}
ANOMALIES = ["G1a: an aborted read", "duplicate: a record copied twice", "lost-write: a committed record missing"]
p_lso = Predict("With <code>ignore-lso</code>, which anomaly does the checker report first?", choices=ANOMALIES,
                check=lambda: next((a for a in ANOMALIES if a.split(":")[0] in lso_fail.violations), "none"),
                why="Reading up to the HW, the copier sees the feeder's records before the feeder decides, and copies "
                    "records whose transaction is then aborted: a value no committed transaction wrote was read.")
p_lso

# %%
lso_cfg = RunConfig(workload="copier", faults="none", mutation="ignore-lso", records=20)
_, lso_fail = sweep(lso_cfg, list(range(20)))
print(lso_fail.result.explain(examples=2))

# %% [markdown]
# The checker's **G1a** is Adya's *aborted read*: a value written by a transaction that did not
# commit was returned to a reader. With the LSO ignored, the copier reads the feeder's records before
# the feeder decides, and copies records whose transaction is then aborted.
#
# ### The counterexample
#
# The seed replays with the trace on. This cell prints the command that replays it from a terminal and
# the narration of the steps of the clients involved. (Section 4 opens a counterexample in the stepper.)

# %%
print("replay:", replay_command(lso_fail.seed, lso_cfg))
lso_run = replay(lso_fail.seed, lso_cfg)
case = lso_run.result.violations["G1a"][0]
print("first case:", case.detail)
show(narration(failing_steps(lso_run, case)))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert "G1a" in lso_fail.violations
again = replay(lso_fail.seed, lso_cfg)
assert again.trace_jsonl() == lso_run.trace_jsonl()      # the same seed, the same trace, byte for byte
assert again.violations == lso_run.violations

# %% [markdown]
# ## 3 · No fencing
#
# `init_transactions()` bumps the producer **epoch** and aborts whatever the previous instance of the
# `transactional.id` left open: that is what fences a zombie. The mutation **`no-fencing`** hands the new
# instance the *same* epoch and leaves the old transaction open. The client faults kill copiers
# (a supervisor restarts them) and create zombies (an instance stalls while a replacement starts).

# %% [markdown]
# Two instances now write with the same producer id and epoch, and the broker still de-duplicates by sequence
# number. Answer first:

# %% jupyter={"source_hidden": true}
SEES = ["nothing wrong: sequence numbers still de-duplicate", "something no committed transaction wrote, or a duplicate"]
p_fence = Predict("With <code>no-fencing</code> and client faults, does a sweep find a reader seeing something wrong?",
                  choices=SEES, check=lambda: SEES[1] if fence_fail is not None and fence_fail.violations else SEES[0],
                  why="Two instances write with the same producer id and epoch; sequence numbers cannot tell them apart, "
                      "so a zombie's writes or commit slip through and the checker flags the history.")
p_fence

# %%
fence_cfg = RunConfig(workload="copier", faults="clients", mutation="no-fencing", records=20)
_, fence_fail = sweep(fence_cfg, list(range(60)))
print(fence_fail.result.explain(examples=2))
print()
print("fault schedule:")
for f in fence_fail.schedule:
    print("  ", f.describe())
small = minimize_failure(fence_fail)
print("minimized by delta debugging:")
for f in small:
    print("  ", f.describe())
print("replay:", replay_command(fence_fail.seed, fence_cfg, small))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert set(fence_fail.violations) & {"G1a", "duplicate", "inconsistent-offsets", "zombie-commit", "lost-write"}
assert 1 <= len(small) <= len(fence_fail.schedule)
assert not run_seed(fence_fail.seed, fence_cfg, schedule=small).ok     # the small schedule still fails

# %% [markdown]
# ## 4 · Enumerating the interleavings of a small case
#
# A sweep samples; a model checker enumerates. `txnlab.sweep.explore` takes one copier (a read_committed
# consumer and a transactional producer) copying two records into two partitions on one broker, and
# runs it again and again: at every moment where two messages could arrive in either order, or where a
# fault could strike (a lost Produce, EndTxn, WriteTxnMarkers or TxnOffsetCommit, or the copier crashing
# just before an answer), it tries every choice, with up to two faults and (by default) one delivery out
# of its default order per run. States it has seen before
# are pruned. A counterexample is the list of choices: replaying it gives the same trace.

# %%
explorer = Explorer(mutation="no-fencing", max_faults=2)
explorer.explore()
print("runs:", explorer.runs, " states:", len(explorer.visited))
print(dict(explorer.histogram))
ce = explorer.counterexample
print("counterexample choices:", ce.choices)
print(ce.detail.splitlines()[0])

# %% [markdown]
# `explorer.found()` is the counterexample as a value: the seed, the mutation and the list of choices,
# the first invariant that broke and the step at which it broke. `Stepper.open` re-runs it from its seed
# and opens the stepper **at that step**; the status line shows each invariant as ✓ or ✗. Here the
# checks at the end of the run see the violation, so the stepper opens at the last step. The buttons
# under the slider jump to its two faults (`fault-1`: a lost message; `fault-2`: the copier killed and
# restarted); step on from each and watch what the restarted copier and the old transaction do;
# **Messages** shows the whole run.

# %%
from widgets import Stepper

found = explorer.found()
print(found.describe())
counterexample = Stepper.open(found)
counterexample.widget

# %% [markdown]
# The last client steps, in words (the same run, replayed from its choice list):

# %%
run = replay_choices(ce.choices, "no-fencing")
steps = [e for e in run.cluster.trace.events if not e.background and e.kind in ("fault", "deliver", "call")
         and ("copier" in e.node or "copier" in e.src or e.kind == "fault")]
show(narration(steps[-14:]))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert ce is not None and ce.outcome in ("violation", "duplicate", "loss", "stuck")
assert replay_choices(ce.choices, "no-fencing").cluster.trace.to_jsonl() == run.cluster.trace.to_jsonl()
assert counterexample.counterexample == found
broken = [name for name, ok, _ in counterexample.invariants if ok is False]
assert broken                                                        # ✗ on the status line where it opened
assert found.step is None and counterexample.position == counterexample.length   # the end checks see it
assert counterexample.notice.startswith(f"{found.invariant} ✗")

# %% [markdown]
# ## Exercise: which faults does `no-dedup` need?
#
# The mutation `no-dedup` makes the broker forget producers' sequence numbers. Which kind of fault must a sweep
# inject to catch it: `network`, `brokers` or `clients`? Type one and press *Check*: the lab runs ten seeds of
# the copier with that fault kind and the mutation on, and tells you whether the checker caught it.


# %% jupyter={"source_hidden": true}
def check_dedup_faults(answer):
    kind = str(answer).strip().lower()
    if kind not in ("network", "brokers", "clients"):
        return False, "Type network, brokers or clients."
    cfg = RunConfig(workload="copier", faults=kind, mutation="no-dedup", records=20)
    caught = next((s for s in range(10) if not run_seed(s, cfg).ok), None)
    if caught is not None:
        return True, f"Caught at seed {caught}."
    return False, ("Not caught in ten seeds. no-dedup only matters when a broker receives a batch it already has: "
                   "which faults make a producer send the same batch again? "
                   + {"brokers": "(A crash resends a batch only if the leader fails between appending it and answering.)",
                      "clients": "(A restarted client is a new producer session: its batches are new ones, not resends.)"}[kind])


ex_dedup = Exercise("Fault kind that catches <code>no-dedup</code>:", kind="text", check=check_dedup_faults,
                    why="A lost or duplicated message makes the producer send a batch the broker already has; without "
                        "de-duplication the broker appends it twice, and the checker reports a duplicate.",
                    solution="network: a lost or duplicated answer makes the producer send the batch again; without "
                             "de-duplication the broker appends it twice, and the checker reports a duplicate.")
ex_dedup

# %% [markdown]
# ## 5 · The other switches
#
# Each mutation is caught within 200 seeds by a sweep of a workload it applies to (the lab's own test
# suite checks it). Try them from a terminal:
# `python -m txnlab.sweep --workload <workload> --faults <set> --mutation <name>`.
#
# | mutation | what is turned off | fault set | what the checker reports |
# |---|---|---|---|
# | `no-dedup` | the broker's duplicate and sequence checks | network | duplicate |
# | `no-fencing` | the epoch bump of `init_transactions()` | clients | inconsistent-offsets, lost-write, zombie-commit |
# | `ignore-lso` | the LSO bound and the aborted list of read_committed fetches | none | G1a |
# | `no-marker-retry` | the coordinator's retry of a failed marker | brokers | G1a (the missing ABORT marker lets the next transaction commit the old records), lost-write |
# | `offsets-outside-txn` | `send_offsets_to_transaction` (a plain commit instead) | none | lost-write, offsets-outputs-mismatch |
# | `no-coordinator-reload` | completing Prepare* transactions after a coordinator failover | brokers | hanging-transaction, stuck |
# | `unclean-election` | the rule that only ISR members become leader | brokers | lost-write, inconsistent-offsets |
# | `naive-client-classic` | KIP-360/KIP-890 (TV0, no verification, a naive client) | network | G1a |
# | `lso-ignores-hw` | the HW bound of read_committed fetches (the LSO alone limits them) | all | read-above-hw (a step check: no consumer reads at or above the HW) |
# | `no-txn-generation-check` | KIP-447's generation check of TxnOffsetCommit (workload `group-rebalance`) | all | kip447-fencing (a step check) |
# | `aborted-index-from-fetch-offset` | aborted spans that begin before the fetch offset (workload `mixed`) | all | G1a |
# | `offset-fetch-unstable` | OffsetFetch's require_stable (pending transactional offsets are answered) | all | require-stable (a step check) |

# %%
show(pd.DataFrame([{"anomaly": k.name, "allowed in Kafka": k.allowed, "meaning": k.explanation}
                   for k in KINDS.values()]))

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert set(MUTATIONS) == {"no-dedup", "no-fencing", "ignore-lso", "no-marker-retry", "offsets-outside-txn",
                          "no-coordinator-reload", "unclean-election", "naive-client-classic", "lso-ignores-hw",
                          "no-txn-generation-check", "aborted-index-from-fetch-offset", "offset-fetch-unstable"}

# %% [markdown]
# ## Where next
#
# **09 · RocketMQ's half messages next to Kafka's transactions** (about 40 minutes).
# `GLOSSARY.md` explains every Kafka term used here; `INDEX.md` lists the gallery's scenarios by concept.
