# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 07 · Spark: at-least-once and exactly-once against the ground truth
#
# **You need:** 04 and 05; PySpark basics help. **Time:** about 40 minutes (Spark starts slowly).
# **You will be able to:** compare an at-least-once and an exactly-once sink against the ground truth under the same failures, and say which Kafka mechanism each exactly-once guarantee rests on.
#
# A classic example: all orders are in a Kafka topic `Order`; a stream job computes the
# **income of every minute** and writes the results to a topic `Income`. To keep the result
# correct, every message must be computed exactly once, whichever node fails: counted twice, the
# income is wrong. And the condition: Kafka's exactly-once covers this
# *read - compute - write* loop only when the data comes from Kafka and the results go back to Kafka.
#
# Here Spark Structured Streaming is the stream job (the example is usually told with Flink) and the
# lab's cluster plays Kafka. We run **the same query twice**, once with a sink that gives
# *at-least-once* (what Spark's own Kafka sink gives) and once with a sink built on Kafka's
# transactions, with **the same failures** injected into Spark, and we compare both results with the
# ground truth minute by minute.
#
# The plan: *explain* each piece, *predict* what the failures will do, *run*, and *check* the numbers.

# %% [markdown]
# Spark takes several seconds to start (a JVM, then its SparkContext), so the first cell starts it in the
# background, while the rest of the set-up runs and you read on: the line under it says what Spark is doing.
# Section 2 explains its settings and waits for it. The line `WARNING: Using incubator modules:
# jdk.incubator.vector`, under whichever cell runs while Spark's JVM starts, is Java noting that Spark's
# start-up options include one of Java's incubator modules (an API that is not final yet); nothing is wrong.

# %%
import os
import sys

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")          # Spark on loopback
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)        # Spark's Python workers use this kernel's Python

from pyspark.sql import SparkSession

from txnlab.spark import register
from txnlab.spark.kafka_connector import ConnectorUnavailable, connector_jars
from txnlab.spark.session import Starting, quick_jvm, quick_python, quiet, start_in_background

MASTER = os.environ.get("TXNLAB_SPARK_MASTER", "local[2,3]")


def start_spark(say):
    say("looking for Spark's Kafka connector (section 9)")
    try:                               # Spark's own Kafka connector, for section 9 (fetched once by Maven)
        jars, no_connector = connector_jars(), None
    except ConnectorUnavailable as e:
        jars, no_connector = [], str(e)
    quick_python()                     # Spark's Python processes import the installed pyspark, not its zip copy
    say(Starting.JVM)                  # from here on the line follows PySpark's own start-up
    spark = (quiet(SparkSession.builder, quick_jvm())         # no start-up notices; a JVM tuned to start quickly
             .master(MASTER).appName("txnlab-07")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.enabled", "false")             # no web UI: this notebook shows what happens
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.python.daemon.module", "txnlab.spark_daemon")   # workers start with txnlab imported
             .config("spark.jars", ",".join(jars))
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
             .getOrCreate())
    spark.sparkContext.setLogLevel("OFF")      # the failures below are on purpose
    say("registering the txnlab data source (a Python process of Spark's looks up data sources)")
    register(spark)                    # the `txnlab` data source: format("txnlab")
    return spark, no_connector


spark_start = start_in_background(start_spark, title="starting Spark")

# %%
import inspect
import json
import tempfile

import pandas as pd
import plotly.graph_objects as go
import ipywidgets
from IPython.display import display

from txnlab import Cluster, Producer
from txnlab.spark import SparkFaults
from txnlab.spark import pipeline as pl
from txnlab.spark.status import watching
from widgets.predict import Exercise, Predict
from txnlab.spark.io import EARLIEST, LATEST, Link
from txnlab.protocol import messages as m
from widgets.tables import narration, show

# %% [markdown]
# ## 1 · The orders and the ground truth
#
# `datasets/orders.csv` holds 20,000 orders of one morning (order id, user, amount, event time),
# generated from a seed by `datasets/make_orders.py`, which also wrote the ground truth:
# `income_per_minute.csv`, computed exactly (in cents) without Spark and without Kafka.

# %%
lines = pl.read_orders()
truth = pl.truth()                     # {minute: income in cents}
print(len(lines), "orders, e.g.", lines[0])
print(len(truth), "minutes, total income", f"{sum(truth.values()) / 100:,.2f}")
pd.read_csv(pl.TRUTH_CSV).head()

# %% [markdown]
# ## 2 · The cluster, its front door, and Spark
#
# The cluster runs inside this kernel. Spark's Python workers -- where a data source's `read()` and
# `write()` run -- are **other processes**, and so is the process where a sink's `commit()` runs.
# They reach the cluster through its *front door*: `cluster.serve()` opens a server on 127.0.0.1
# (a random port and a random token) and returns the address they use as `bootstrap.servers`.
# Each request that comes in through it becomes a message of the simulated network, in the trace
# like any other, and every fault armed with the cluster API applies to it. The txnlab clients in
# the workers are the same `Producer` and `Fetch` code as in the other notebooks: only their
# requests travel over a socket to get here.
#
# Spark runs on `local[2,3]`: two cores, and a failed task is tried up to 3 times (in local mode
# `spark.task.maxFailures` is ignored; the `F` in `local[N,F]` is what allows retries). Set
# `TXNLAB_SPARK_MASTER` to use another master (section 8). The session was started at the top of the chapter:
# its JVM uses only Java's quick compiler and one garbage-collector thread, which halves the CPU time Spark
# spends starting (the optimizing compiler pays off in long jobs, not in a notebook's short ones), and, when `make
# lab` has recorded one, maps Spark's classes from an archive instead of loading them again (`quick_jvm()`); its Python
# processes import the installed PySpark instead of compiling Spark's zip copy of it again (`quick_python()`), and
# its Python workers start with the lab's modules already imported (`txnlab.spark_daemon`).

# %%
cluster = Cluster(brokers=3, seed=7)
pl.load_orders(cluster, lines, topic="orders", partitions=3)
address = cluster.serve()
print("topics:", cluster.topics())
print("front door:", address.rsplit("/", 1)[0] + "/<token>")

# %%
spark, NO_CONNECTOR = spark_start.result()     # waits here, saying for what, if Spark is not up yet
spark.version, MASTER

# %% [markdown]
# A first look through Spark: the `txnlab` source has the columns of Spark's own Kafka source (and its
# `startingOffsets` / `endingOffsets` options: here only the first two records of each partition are read).
# (`timestamp` is the record's CreateTime on the simulated clock: milliseconds since the cluster
# started. The order's own event time is inside the value.)

# %%
first_two = json.dumps({"orders": {str(p): 2 for p in range(3)}})         # each partition's offsets 0 and 1
with watching(spark, "a first read", planning="Spark is planning the read: Python processes of Spark's create the "
              "txnlab source and ask it for its schema and its partitions (the first time, they start)"):
    orders_df = (spark.read.format("txnlab").option("bootstrap.servers", address).option("subscribe", "orders")
                 .option("endingOffsets", first_two).load())
    first_rows = orders_df.toPandas()
first_rows

# %% [markdown]
# ## 3 · The query: income per minute, one increment per micro-batch
#
# The streaming query reads `orders` with the `txnlab` source in micro-batches of 10,000 orders
# (`maxOffsetsPerTrigger`), takes each order's minute and amount (in cents), and adds them up per
# minute **within the micro-batch** (each Spark task does its share: `partial_income`). It writes
# one record per minute per task: key = the minute, value = how much income that minute gained in
# this micro-batch -- an *increment*. The income of a minute is the sum of its increments in the
# output topic. An increment written twice is income counted twice.

# %%
print(inspect.getsource(pl.income_increments))
print(inspect.getsource(pl.partial_income))

# %% [markdown]
# The two sinks are the same `txnlab` sink with a different `delivery` option; they differ only in how they write:
#
# * **at-least-once** (`delivery="at-least-once"`): each task produces its rows straight into the
#   output topic and flushes. Spark's commit of the batch adds nothing. This is what Spark's Kafka
#   sink does.
# * **exactly-once** (`delivery="exactly-once"`): each task *stages* its rows in a transaction of its
#   own (`transactional.id = <sink>-stage-<partition>`) into `__spark_sink_staging`, tagged with its
#   attempt. On the driver side, `commit(messages, batchId)` *publishes*: one transaction
#   (`transactional.id = <sink>-publish`) copies exactly the staged rows of the attempts Spark chose
#   into the output topic **and** writes a progress record `{sink, batchId}` into
#   `__spark_sink_progress`. Before that it reads the progress records: a batch already published is
#   not published again.
#
# `init_transactions()` is where Kafka's fencing works for us: a new instance with the same
# transactional.id bumps the epoch, so an older instance (a failed or duplicate task attempt, the
# publisher of a driver that was stopped) is a *zombie*: the coordinator aborts what it left open,
# and its next request is refused. A transaction nobody comes back for is aborted by the
# coordinator when `transaction.timeout.ms` passes.

# %% [markdown]
# ## 4 · The failures
#
# Spark's own failures, the ones a streaming job meets in practice, all in micro-batch 1 (the second one):
#
# 1. **a task fails after writing part of its rows**: task 0 raises after writing 3 rows; Spark
#    retries it (attempt 1), which writes all its rows;
# 2. **a duplicate task attempt**: a speculative copy of task 2 runs too and writes its rows;
# 3. **the sink's commit fails** half-way through publishing: for the exactly-once sink, after the
#    rows went into the publish transaction and before it commits. Spark fails the batch and stops
#    the query; we restart it from its checkpoint, as an operator would, and **Spark replays
#    batch 1** with the same batchId and the same offsets.
#
# Each failure fires once (the first process to reach it claims it at the front door), so the
# retry and the replay run clean.

# %%
plan = SparkFaults(batch=1,
                   fail_task_after_rows=3, failing_task=0,      # 1
                   duplicate_task=2,                             # 2
                   commit_error="mid-publish")                   # 3
print(plan.describe().replace("; ", "\n"))


# %% [markdown]
# Before both runs: which result will equal the ground truth, and what does each of the three failures add to
# the at-least-once result? Answer the three questions below first.

# %% jupyter={"source_hidden": true}
READERS = ["at-least-once", "exactly-once (read_committed)", "exactly-once (read_uncommitted)"]
p_truth = Predict("Which reader's result will equal the ground truth?", choices=READERS + ["none of them"],
                  check=lambda: next((r for r in READERS if results[r] == truth), "none of them"),
                  why="Only the exactly-once output read with read_committed: the failed attempts' rows were staged or "
                      "published in transactions that were aborted, and read_committed skips them.")
p_truth

# %% jupyter={"source_hidden": true}
CAUSES = ["the replay of batch 1", "the duplicate attempt of task 2", "task 0's first 3 increments, retried"]
p_cause = Predict("Which of the three failures adds the most to the at-least-once result?", choices=CAUSES,
                  check=lambda: max(zip((sum(replay.values()), sum(speculative.values()), sum(retried.values())),
                                        CAUSES))[1],
                  why="The replay writes all of batch 1 again; the duplicate attempt only task 2's share of it; the "
                      "failed attempt only 3 increments.")
p_cause

# %% jupyter={"source_hidden": true}
p_copies = Predict("The exactly-once output read with <code>read_uncommitted</code>: how many extra copies of "
                   "batch 1 will it show?", kind="number",
                   check=lambda: round(sum(v for v in uncommitted_extra.values()) / sum(replay.values())),
                   why="One: the publish transaction that failed before its commit is in the log, aborted. The staged "
                       "rows of failed task attempts are in the staging topic, never published.")
p_copies

# %% [markdown]
# ## 5 · Run: the same query, the same failures, two sinks
#
# While a run waits, the line under its progress bar says for what (Spark starting the query, a micro-batch
# running, the sink committing). The bar counts the input rows of the micro-batches Spark *completes*: batch 1
# of the first start fails in its commit and is not counted, its replay after the restart is. So each sink
# shows 2 micro-batches and 20,000 input rows, although Spark ran batch 1 twice.

# %%
def progress(title, total=None):
    bar = ipywidgets.IntProgress(min=0, max=total or len(lines), description=title, layout=ipywidgets.Layout(width="60%"),
                                 style={"description_width": "initial"})     # (the whole name, not "at-least-o...")
    label = ipywidgets.Label("no micro-batch completed yet")
    display(ipywidgets.HBox([bar, label]))
    def on_progress(p):
        bar.max = max(bar.max, p["rows_total"])
        bar.value = p["rows_total"]
        label.value = f"batch {p['batch']}: {p['rows']:,} rows ({p['batches']} micro-batches completed)"
    return on_progress

CHECKPOINTS = tempfile.mkdtemp(prefix="txnlab-07-")     # the queries' checkpoints: this run's own
runs = {}
for delivery in ("at-least-once", "exactly-once"):
    runs[delivery] = pl.run_income(
        spark, cluster, output=f"income-{delivery}", delivery=delivery,
        checkpoint=f"{CHECKPOINTS}/{delivery}", faults=plan, max_per_trigger=10_000,
        sink_id=f"spark-07-{delivery}",            # names the transactional ids (default: the query id)
        on_progress=progress(delivery))
pd.DataFrame([{"sink": d, "starts of the query": " | ".join(f"{n}: {s}" for n, s in r.starts),
               "micro-batches completed": r.batches, "input rows": r.rows_in, "seconds": round(r.seconds, 1)}
              for d, r in runs.items()])

# %% [markdown]
# ## 6 · The results against the ground truth
#
# Three readers: the at-least-once output read with `read_committed` (it has no transactions, so
# `read_uncommitted` gives the same), and the exactly-once output read both ways.

# %%
results = {
    "at-least-once": pl.income_from_topic(cluster, "income-at-least-once"),
    "exactly-once (read_committed)": pl.income_from_topic(cluster, "income-exactly-once", "read_committed"),
    "exactly-once (read_uncommitted)": pl.income_from_topic(cluster, "income-exactly-once", "read_uncommitted"),
}
table = pd.DataFrame([{"reader": name, **{k: v for k, v in pl.summary(truth, r).items() if k != "wrong"}}
                      for name, r in results.items()])
table.insert(1, "truth", sum(truth.values()) / 100)
table

# %%
cmp = pl.comparison(truth, results)
LINES = {"ground truth": ("truth", dict(width=8, color="#bbbbbb")),
         "exactly-once (read_committed)": ("exactly-once (read_committed)", dict(width=2, dash="dot", color="#2b8a3e")),
         "exactly-once (read_uncommitted)": ("exactly-once (read_uncommitted)", dict(width=2, dash="dash", color="#7048e8")),
         "at-least-once": ("at-least-once", dict(width=2, color="#e03131"))}
fig = go.Figure()
for name, (column, line) in LINES.items():
    fig.add_scatter(x=cmp["minute"], y=cmp[column], name=name, line=line, showlegend=False)
# each line's name stands on the picture, left of where the lines part (no legend to match by colour and dash)
peak_alos, peak_ru = cmp["at-least-once"].idxmax(), cmp["exactly-once (read_uncommitted)"].idxmax()
before = cmp.index[cmp.index.get_loc(peak_alos) - 5]
for text, row, column, colour, ay in (
        ("at-least-once", peak_alos, "at-least-once", "#e03131", 0),
        ("exactly-once, read_uncommitted", peak_ru, "exactly-once (read_uncommitted)", "#7048e8", 0),
        ("ground truth =<br>exactly-once, read_committed", before, "truth", "#2b8a3e", -90)):
    fig.add_annotation(x=cmp["minute"][row], y=cmp[column][row], text=text, font=dict(size=16, color=colour),
                       showarrow=True, arrowcolor=colour, ax=-40, ay=ay, xanchor="right", align="right",
                       bgcolor="rgba(255,255,255,0.8)")
fig.update_layout(title="Income per minute: the three readers against the ground truth", height=460,
                  font=dict(size=15), xaxis_title="minute (UTC)", yaxis_title="income of the minute",
                  margin=dict(l=70, r=20, t=60, b=60), plot_bgcolor="white")
fig.update_xaxes(showgrid=True, gridcolor="#eee", tickformat="%H:%M")
fig.update_yaxes(showgrid=True, gridcolor="#eee", rangemode="tozero")
fig

# %%
show(cmp[cmp["at-least-once - truth"] != 0][["minute", "truth", "at-least-once", "at-least-once - truth",
                                               "exactly-once (read_committed)"]].head(12)).format(precision=2)


# %% [markdown]
# ## Exercise: measure the damage
#
# Write `extra_of(result)`: the extra (or, negative, missing) income in cents of a result (a dict minute → cents)
# compared with `truth`, over every minute either has. The lab checks it on the readers above.


# %% jupyter={"source_hidden": true}
def check_extra(fn):
    want = {name: sum(r.get(mi, 0) - truth.get(mi, 0) for mi in set(truth) | set(r)) for name, r in results.items()}
    got = {name: fn(r) for name, r in results.items()}
    return got == want, f"yours: {got}"


ex_extra = Exercise("Write <code>extra_of(result)</code> (cents).", kind="code", check=check_extra,
                    solution='def extra_of(result):\n'
                             '    minutes = set(truth) | set(result)\n'
                             '    return sum(result.get(mi, 0) - truth.get(mi, 0) for mi in minutes)')
ex_extra

# %%
def extra_of(result):
    raise NotImplementedError          # your code here


ex_extra.submit(extra_of)

# %% [markdown]
# ## 7 · Why each number is what it is
#
# Spark's checkpoint records the offsets of every micro-batch (`offsets/<batchId>`), so we can
# compute what each failure should add, from the input alone:
#
# * the **replay** of batch 1 writes all of batch 1's increments again: + the income of batch 1's orders;
# * the **duplicate attempt** of task 2 writes task 2's increments again: + the income of batch 1's
#   orders of partition 2 (task *i* reads partition *i* of `orders`);
# * the **failed attempt** of task 0 wrote its first 3 increments before failing, and its retry wrote
#   them again: + 3 increments (a task writes its minutes in order, so: the 3 earliest minutes of
#   task 0's share of batch 1).

# %%
def batch_ends(checkpoint, batch):
    last = open(f"{checkpoint}/offsets/{batch}").read().strip().splitlines()[-1]
    return {("orders", int(p)): off for p, off in json.loads(last)["orders"].items()}

def orders_income(start, end, partitions=None):
    link = Link(cluster.bootstrap, "notebook")
    picked = []
    for tp, e in end.items():
        if partitions is None or tp[1] in partitions:
            for _, _, values, *_ in link.read_range(tp, start[tp], e, m.READ_COMMITTED):
                picked.extend(v.decode() for v in values)
    return pl.truth_of(picked)

ck = f"{CHECKPOINTS}/at-least-once"
b0, b1 = batch_ends(ck, 0), batch_ends(ck, 1)
replay = orders_income(b0, b1)
speculative = orders_income(b0, b1, partitions={2})
task0 = orders_income(b0, b1, partitions={0})
retried = {minute: task0[minute] for minute in sorted(task0)[:3]}

expected = {}
for part in (replay, speculative, retried):
    for minute, cents in part.items():
        expected[minute] = expected.get(minute, 0) + cents
alos_extra = {mi: results["at-least-once"].get(mi, 0) - truth.get(mi, 0) for mi in truth}
alos_extra = {mi: c for mi, c in alos_extra.items() if c}
pd.DataFrame([{"cause": "replay of batch 1", "extra income": sum(replay.values()) / 100},
              {"cause": "duplicate attempt of task 2", "extra income": sum(speculative.values()) / 100},
              {"cause": "task 0's first 3 increments, written again by its retry", "extra income": sum(retried.values()) / 100},
              {"cause": "total expected", "extra income": sum(expected.values()) / 100},
              {"cause": "total measured (at-least-once - truth)", "extra income": sum(alos_extra.values()) / 100}])

# %% [markdown]
# **Check** what you should have seen (this cell fails if the lab disagrees):

# %%
assert results["exactly-once (read_committed)"] == truth, "exactly-once must equal the ground truth"
assert alos_extra == expected, "every extra cent of the at-least-once result is explained by the three failures"
uncommitted_extra = {mi: results["exactly-once (read_uncommitted)"].get(mi, 0) - truth.get(mi, 0) for mi in truth}
assert {mi: c for mi, c in uncommitted_extra.items() if c} == replay
assert runs["exactly-once"].starts[-1] == (2, "finished")
print("checked: exactly-once == truth; at-least-once - truth == replay + duplicate attempt + 3 retried increments")

# %% [markdown]
# And the exactly-once output read with `read_uncommitted` shows **exactly one extra copy of batch 1**:
# the publish transaction that failed before its commit. Its rows are in the log; the new publisher
# (after the restart) fenced it, the coordinator wrote ABORT markers, and a `read_committed`
# reader skips it. The failed task attempt's and the speculative copy's staged rows are in
# `__spark_sink_staging`, where nobody publishes them.
#
# The trace says what Kafka did. The fencing of the failed staging attempt and of the failed publisher:

# %%
fenced = [e for e in cluster.trace if e.api == "InitProducerId" and not e.is_response
          and "has an open transaction" in e.narration]
show(narration(fenced)[["step", "t (ms)", "node", "what happened"]])

# %% [markdown]
# The sink's progress records (what made the replay of batch 1 a no-op for the exactly-once sink,
# had it been published already) and the staged rows, committed and aborted:

# %%
link = Link(cluster.bootstrap, "notebook")
tp = ("__spark_sink_progress", 0)
lo, hi = link.offsets([tp], EARLIEST, m.READ_COMMITTED)[tp], link.offsets([tp], LATEST, m.READ_COMMITTED)[tp]
progress_records = [json.loads(v) for chunk in link.read_range(tp, lo, hi, m.READ_COMMITTED) for v in chunk[2]]
display(pd.DataFrame(progress_records))

def count(topic, level):
    iso = m.READ_COMMITTED if level == "read_committed" else m.READ_UNCOMMITTED
    tps = [(topic, p) for p in range(link.partitions(topic))]
    lows, highs = link.offsets(tps, EARLIEST, iso), link.offsets(tps, LATEST, iso)
    return sum(len(c[0]) for t in tps for c in link.read_range(t, lows[t], highs[t], iso))

pd.DataFrame([{"topic": t, "read_committed records": count(t, "read_committed"),
               "read_uncommitted records": count(t, "read_uncommitted")}
              for t in ("income-at-least-once", "income-exactly-once", "__spark_sink_staging")])

# %% [markdown]
# Remote requests are steps like any other. Per API, how many came in through the front door:

# %%
from collections import Counter
remote = Counter(msg.api for msg in cluster.network_messages() if msg.src.startswith("remote-") and not msg.is_response)
pd.DataFrame(sorted(remote.items(), key=lambda kv: -kv[1]), columns=["API", "requests from Spark's processes"])

# %% [markdown]
# ## 8 · The same pipeline on another Spark master
#
# Nothing above depends on `local[*]`. For a standalone cluster, YARN or Kubernetes:
#
# 1. the executors must reach the front door: open it on an interface they can reach,
#    `address = cluster.serve(host="0.0.0.0", allow_remote=True)` (loopback is the default on
#    purpose: anyone with the address and token can drive the cluster), and replace `0.0.0.0` in
#    the address by this machine's name;
# 2. the executors' Python needs `txnlab` (`pip install` it there, or ship it with
#    `spark.submit.pyFiles`), pandas and pyarrow (the query uses `mapInPandas`);
# 3. start the session with the master: `TXNLAB_SPARK_MASTER=spark://host:7077 jupyter lab`, or
#    `SparkSession.builder.master("spark://host:7077")`; use `spark.task.maxFailures` there for
#    retries instead of `local[N,F]`.
#
# The sinks' protocol does not change: staging happens wherever tasks run, publishing in the
# driver's commit, and every request is still a message of this kernel's simulated network.

# %%
print("this run used", MASTER, "with", spark.sparkContext.defaultParallelism, "cores")

# %% [markdown]
# ## 9 · Spark's own Kafka connector, through the lab's Kafka-protocol listener
#
# Spark ships a Kafka source and sink of its own (`format("kafka")`, a Java library built on Kafka's Java
# client). It speaks Kafka's binary protocol, so it reaches the cluster through `cluster.listen()`: one
# listener per broker on 127.0.0.1, each request a step of the simulated network like any other.
#
# Two things to see. Its **source** with `kafka.isolation.level=read_committed` stops at the Last Stable
# Offset: while a transaction is open on `orders-0`, Spark reads nothing of `orders-0` past it. Its **sink**
# is at-least-once, as Spark's documentation says: a task that dies part-way and is retried writes its rows
# again (the txnlab sink above, under the same kind of retry, did not).

# %% jupyter={"source_hidden": true}
p_sink = Predict("1,000 rows go to a topic through Spark's Kafka sink; the task dies after handing over its first "
                 "700 rows, and Spark retries it once. How many records does the topic hold afterwards?",
                 kind="number", check=lambda: SINK_RECORDS,
                 why="The failed attempt's 700 rows were already sent, and the retry sends all 1,000 again as new "
                     "records: 1,700. The producer's idempotence only stops one batch from being written twice.")
p_sink

# %%
from pyspark import TaskContext

door = cluster.listen() if not NO_CONNECTOR else None
print(NO_CONNECTOR or f"Kafka-protocol listener: {door.bootstrap_servers}")


def kafka_read(topic):
    """Everything Spark's Kafka source returns under read_committed, as (partition, offset) pairs."""
    with watching(spark, f"Spark's Kafka source reads {topic}", planning="Spark's Kafka source asks the brokers "
                  "for the topic's partitions and offsets (Kafka's protocol, through the listener)"):
        df = (spark.read.format("kafka").option("kafka.bootstrap.servers", door.bootstrap_servers)
              .option("subscribe", topic).option("kafka.isolation.level", "read_committed")
              .option("startingOffsets", "earliest").option("endingOffsets", "latest")
              .option("kafka.fetch.max.wait.ms", "0")      # a fetch with nothing to read returns at once (default:
              .load())                                     # the broker holds it up to 500 ms, waiting for data)
        return df.select("partition", "offset").collect()


if door is not None:
    opener = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "section-9"})
    opener.init_transactions()
    opener.begin_transaction()
    opener.produce("orders", b"an order still in an open transaction", partition=0)
    opener.flush()
    st = cluster.partition_state("orders", 0)
    rows = kafka_read("orders")
    last0 = max(r.offset for r in rows if r.partition == 0)
    print(f"orders-0 while the transaction is open: HW {st['hw']}, LSO {st['lso']}; "
          f"Spark's read_committed source read up to offset {last0}")
    assert last0 < st["lso"] < st["hw"]
    opener.commit_transaction()
    rows = kafka_read("orders")
    print("after the commit it reads", sum(r.partition == 0 for r in rows), "records of orders-0, up to offset",
          max(r.offset for r in rows if r.partition == 0))

# %%
def fail_first_attempt_at_row_700(batches):
    import pyarrow as pa
    first = TaskContext.get().attemptNumber() == 0
    for b in batches:                     # batches of 100 rows reach Spark's Kafka writer as they come
        if first and "r700" in b.column(0).to_pylist():
            raise RuntimeError("the task dies after handing over rows r0..r699")
        yield pa.RecordBatch.from_arrays([b.column(0)], names=["value"])


if door is not None:
    cluster.create_topic("spark-kafka-sink", partitions=1, replication_factor=3)
    with watching(spark, "Spark's Kafka sink writes 1,000 rows", planning="Spark is planning the write",
                  finishing="Spark is finishing the write"):
        (spark.createDataFrame([(f"r{i}",) for i in range(1000)], ["v"]).coalesce(1)
         .mapInArrow(fail_first_attempt_at_row_700, "value string")
         .write.format("kafka").option("kafka.bootstrap.servers", door.bootstrap_servers)
         .option("topic", "spark-kafka-sink").option("kafka.linger.ms", "0").save())
    SINK_RECORDS = cluster.partition_state("spark-kafka-sink", 0)["hw"]     # what the prediction is checked against
    assert SINK_RECORDS == 1700
    door.close()
else:
    SINK_RECORDS = 1700                 # (no connector here) what Spark's Kafka sink writes in this lab when it has one

# %% [markdown]
# (Check your prediction above before reading on.) The topic holds 1,700 records: the 700 the failed attempt
# handed to the producer were sent (the
# producer is idempotent, which stops a *retried batch* from being written twice, not a *retried task*
# that produces the same rows again as new records). That is at-least-once. The txnlab sink stages a
# task's rows and publishes them in one transaction at commit, which is why section 6 found no duplicate.

# %% [markdown]
# ## What to take away
#
# * At-least-once is not "usually right": each Spark failure left its own footprint -- 3 increments,
#   one task's share, one whole micro-batch -- and the numbers can be explained cent by cent.
# * Exactly-once needed three Kafka mechanisms: **transactions** (rows and the progress record
#   commit together), **epochs** (a new instance fences the zombies of failed attempts and old
#   drivers, and the coordinator aborts what they left open), and **read_committed** (readers
#   skip aborted data; `read_uncommitted` shows it is still in the log).
# * It works because the data comes from Kafka (Spark can replay a batch from its offsets) and the
#   results go back to Kafka: end-to-end exactly-once needs Kafka (or a replayable source) at both ends.

# %% [markdown]
# ## Where next
#
# **08 · Break it**: switch the safeguards off one at a time and find what breaks (about 30 minutes).
# `GLOSSARY.md` explains every Kafka term used here; `INDEX.md` lists the gallery's scenarios by concept.
