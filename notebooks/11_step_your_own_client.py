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
# So far the clients in the lab were the lab's own. Here the client is a **real one**: confluent-kafka,
# the Python face of librdkafka, the same library your services use. The lab opens Kafka's binary
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

lab = Cluster(brokers=3, seed=11)
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
# Every request of the real client was a step: ApiVersions, Metadata, FindCoordinator, InitProducerId.
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
print([b.describe() for b in lab.log("orders").batches])

# %% [markdown]
# **Predict.** The client now asks to commit. The coordinator first writes *PrepareCommit* to
# `__transaction_state` (durably, on every in-sync replica), answers the client, and only then writes
# the COMMIT markers into `orders`. What happens if the coordinator crashes right after the durable
# PrepareCommit, before any marker is written?
#
# We step only until the coordinator's state reads PrepareCommit.

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
print("commit_transaction() returned:", committed.is_set())
print("new coordinator: broker", lab.transaction_coordinator("copier"),
      "| state:", lab.transaction_state("copier")["state"])
print([b.describe() for b in lab.log("orders").batches])

# %% [markdown]
# **Check.** The new coordinator loaded `__transaction_state`, found the transaction in PrepareCommit
# and finished it: the COMMIT marker is in `orders`. The real client did not have to know: its EndTxn
# was retried against the new coordinator and answered as soon as the commit was complete. A
# read_committed consumer (also a real one) sees the three orders.

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

# %%
lab.restart(f"broker-{coordinator}")
door.close()
