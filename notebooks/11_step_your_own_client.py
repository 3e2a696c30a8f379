# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 11 · Step through your own client
#
# **You need:** 02 and 06 (markers, the coordinator's decision). **Time:** about 25 minutes.
# **You will be able to:** point a real Kafka client at the lab, stop it between two requests, crash a broker
# there, and read from the lab's trace what the real client did to recover.
#
# So far the clients in the lab were the lab's own. Here the client is a **real one**: confluent-kafka,
# the Python face of librdkafka, the C library that Confluent's Python, Go and .NET clients are built on. The lab opens Kafka's binary
# protocol on this machine's loopback (one port per broker); the real client connects to it as to any
# Kafka cluster, and every request it sends becomes one message of the lab's network, a step you can see.
#
# The plan: start a real transactional producer, let it write three records, ask it to commit, and
# **stop between the durable PrepareCommit and the markers**. Then crash the transaction coordinator
# there, and watch the real client finish the commit on its own.

# %%
import threading

from confluent_kafka import Consumer, Producer

from txnlab import Cluster
from txnlab.wire import presets
from widgets.predict import Exercise, Predict
from widgets.snapshots import log_snapshot

# The end of this chapter runs on the wall clock; so that it does not keep you waiting, a crashed broker is
# declared dead after 1 s without a heartbeat (Kafka's default: 9 s), and a new consumer group forms at once
# (no initial rebalance delay, as in the server.properties that ships with Kafka; the default is 3 s).
lab = Cluster(brokers=3, seed=11, config={"broker.session.timeout.ms": 1_000, "broker.heartbeat.interval.ms": 250,
                                          "group.initial.rebalance.delay.ms": 0})
lab.create_topic("orders", partitions=1, replication_factor=3)
door = lab.listen(mode="step")          # requests of real clients wait until somebody steps the lab
print(door)

# %% [markdown]
# `mode="step"` means: nothing a real client asks is answered until the lab takes a step. A real client
# also keeps its own wall-clock timers; `presets.librdkafka_stepping_producer` stretches them (a request
# may wait up to five minutes, a transaction may stay open for fifteen), so pausing here does not make
# the client give up.

# %%
producer = Producer({"bootstrap.servers": door.bootstrap_servers, "transactional.id": "copier",
                     "client.id": "copier-1", **presets.librdkafka_stepping_producer})


def in_background(call):
    """Run a blocking client call on a thread; the returned event is set when it returns."""
    finished = threading.Event()
    threading.Thread(target=lambda: (call(), finished.set()), daemon=True).start()
    return finished


finished = in_background(lambda: producer.init_transactions(300))
steps = door.step_until(finished.is_set)
print(f"init_transactions() returned after {steps} steps of the lab")
print("the coordinator says:", lab.transaction_state("copier")["state"])

# %% [markdown]
# Every request of the real client was a step. Answer before you read the list below.

# %% jupyter={"source_hidden": true}
p_first = Predict("Which request does the real client send first, on every new connection?",
                  choices=["Metadata", "ApiVersions", "FindCoordinator", "InitProducerId"],
                  check=lambda: next(m.api for m in lab.network_messages() if m.src == "copier-1" and not m.is_response),
                  why="ApiVersions: a Kafka client first asks a broker which versions of each API it speaks, and "
                      "picks the versions both sides know. Only then Metadata, FindCoordinator, InitProducerId.")
p_first

# %% [markdown]
# The trace keeps them, with the client's name as it introduced itself.

# %%
for e in lab.trace.events:
    if e.kind == "remote":
        print(e.text)

# %% [markdown]
# Now a transaction: three orders, flushed (so the broker holds them, not yet committed).

# %%
producer.begin_transaction()
for i in range(3):
    producer.produce("orders", value=f"order-{i}".encode())
finished = in_background(lambda: producer.flush(300))
door.step_until(finished.is_set)
LSO_OPEN = lab.partition_state("orders", 0)["lso"]        # what the next question is checked against
log_snapshot(lab, [("orders", 0)], title="three orders written by the real client, not committed yet",
             marks=("LEO", "HW"))

# %% jupyter={"source_hidden": true}
p_lso = Predict("A read_committed consumer of orders-0, now: up to which offset may it read (the LSO)?",
                kind="offset", check=lambda: LSO_OPEN,
                why="0: the three orders belong to a transaction that is still open, and the Last Stable Offset "
                    "stops at the first offset of the oldest open transaction.")
p_lso

# %% [markdown]
# The client now asks to commit. The coordinator first writes *PrepareCommit* to `__transaction_state`
# (durably, on every in-sync replica), answers the client, and only then writes the COMMIT markers into
# `orders`. We step only until the coordinator's state reads PrepareCommit, and crash it there.

# %% jupyter={"source_hidden": true}
p_crash = Predict("The coordinator crashes right after the durable PrepareCommit, before any marker is written. "
                  "What becomes of the three orders?",
                  choices=["they are committed", "they are aborted", "they stay undecided until an operator acts"],
                  check=lambda: {"CompleteCommit": "they are committed", "CompleteAbort": "they are aborted"}.get(
                      after_crash, "they stay undecided until an operator acts"),
                  why="The decision is durable in __transaction_state: the broker that takes over its partition "
                      "loads it, finds PrepareCommit and writes the COMMIT markers. The client's EndTxn is retried "
                      "against the new coordinator and answered once the commit is complete.")
p_crash

# %%
committed = in_background(lambda: producer.commit_transaction(300))
door.step_until(lambda: (lab.transaction_state("copier") or {}).get("state") == "PrepareCommit")
coordinator = lab.transaction_coordinator("copier")
print("coordinator: broker", coordinator, "| state:", lab.transaction_state("copier")["state"])
print("markers in orders:", [b.describe() for b in lab.log("orders").batches if b.is_control])
print("waiting at the door:", door.pending())

# %% [markdown]
# The decision is durable, the coordinator's answer to the client is still on its way (the door shows
# the EndTxn waiting), and no marker is written yet. Crash the coordinator here, then let the lab run
# by itself (`mode="run"`: each request is answered as soon as the lab has produced the answer, and the
# lab's clock follows the wall clock).

# %%
lab.crash(f"broker-{coordinator}")
door.mode = "run"
committed.wait(300)
after_crash = lab.transaction_state("copier")["state"]         # what the question above is checked against
print("commit_transaction() returned:", committed.is_set())
print("new coordinator: broker", lab.transaction_coordinator("copier"),
      "| state:", lab.transaction_state("copier")["state"])
log_snapshot(lab, [("orders", 0)], title="after the crash: the new coordinator wrote the COMMIT marker")

# %% [markdown]
# **Check.** The new coordinator loaded `__transaction_state`, found the transaction in PrepareCommit
# and finished it: the COMMIT marker is in `orders`. The real client did not have to know: its EndTxn
# was retried against the new coordinator and answered as soon as the commit was complete. A
# read_committed consumer (also a real one) sees the three orders.
#
# Lines starting with `%6|` or `%3|` under the cell are librdkafka's own log (it writes to the kernel's
# stderr): the real client noting each connection the crashed broker closed (`Disconnected`) or refused
# (`Connection refused`). Your code never saw them; the client dealt with them itself.

# %%
consumer = Consumer({"bootstrap.servers": door.bootstrap_servers, "group.id": "audit",
                     "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                     "client.id": "audit-1"})
consumer.subscribe(["orders"])
seen = []
for _ in range(100):
    msg = consumer.poll(0.2)
    if msg is not None and not msg.error():
        seen.append((msg.offset(), msg.value().decode()))
    if len(seen) == 3:
        break
consumer.close()
producer.flush(10)
print(seen)
assert [v for _, v in seen] == ["order-0", "order-1", "order-2"]

# %% [markdown]
# ## Exercise: find the real client's recovery in the trace
#
# The real client's EndTxn was answered by a different broker than the one it first asked. Write
# `endtxn_brokers(lab)`: the brokers (in order, without repeats) that a request of the client `copier-1` with API
# `EndTxn` reached. Every trace event has `.kind`, `.api`, `.text`; remote requests are events of kind `"remote"`,
# and the network keeps every message (`lab.network_messages()`, each with `.src`, `.dst`, `.api`,
# `.is_response`).

# %% jupyter={"source_hidden": true}
def check_endtxn_brokers(fn):
    want = []
    for msg in lab.network_messages():
        if msg.api == "EndTxn" and not msg.is_response and "copier-1" in msg.src and msg.dst not in want:
            want.append(msg.dst)
    got = fn(lab)
    return (got == want, f"the EndTxn requests of copier-1 went to {want}" + ("" if got == want else f"; yours: {got}"))


ex_endtxn = Exercise("Write <code>endtxn_brokers(lab)</code>: the brokers, in order, that copier-1's EndTxn "
                     "requests reached.", kind="code", check=check_endtxn_brokers,
                     solution="def endtxn_brokers(lab):\n"
                              "    out = []\n"
                              "    for msg in lab.network_messages():\n"
                              "        if msg.api == 'EndTxn' and not msg.is_response and 'copier-1' in msg.src \\\n"
                              "                and msg.dst not in out:\n"
                              "            out.append(msg.dst)\n"
                              "    return out")
ex_endtxn

# %%
def endtxn_brokers(lab):
    raise NotImplementedError        # your code here


ex_endtxn.submit(endtxn_brokers)

# %%
lab.restart(f"broker-{coordinator}")
producer = None      # the real client goes first (letting it go destroys it: its connections close in order) ...
door.close()         # ... then the lab stops listening

# %% [markdown]
# ## Where next
#
# Point your own service's client at `lab.listen()` the same way, and step it through the faults of chapters 05
# and 06 (a zombie producer fenced by a new instance, a partition leader's crash, a transaction that times out).
# **08 · Break it** turns the lab's safeguards off one at a time. `GLOSSARY.md` explains the Kafka terms.
