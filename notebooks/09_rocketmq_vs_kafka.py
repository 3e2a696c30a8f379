# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 09 · RocketMQ's half messages next to Kafka's transactions
#
# **You need:** 02 and 06. **Time:** about 40 minutes.
# **You will be able to:** explain RocketMQ's half message and transaction check, and compare it with Kafka's markers when the end of a transaction is lost.
#
# Picture an **order service**: it inserts an order into its local database *and* sends an "order
# created" message — both or neither (要么都成功，要么都失败: "either both succeed or both fail").
# RocketMQ builds exactly that: a **half message** parked where no consumer can see it, the **local
# transaction**, a one-way **END_TRANSACTION**, and a **check-back** (事务反查) that repairs whatever the
# one-way request did not. Kafka's transactions solve a different problem (several messages, and the
# consumer offsets, atomically — exactly-once for read-process-write) and have **no check-back**.
#
# Here both run on the same deterministic kernel, under the same four faults:
#
# | fault | RocketMQ | Kafka |
# |---|---|---|
# | the end-transaction request is lost | ? | ? |
# | the local database fails | ? | ? |
# | the producer crashes after the half message | ? | ? |
# | the local transaction is slow | ? | ? |
#
# You fill in the table as you go.

# %%
import inspect
from txnlab import Cluster
from txnlab.rocketmq import (RocketMQCluster, DefaultLitePullConsumer, ConsumeFromWhere, LocalTransactionState,
                             MessageConst, RMQ_SYS_TRANS_HALF_TOPIC)
from txnlab.rocketmq.order_service import (ORDER_TOPIC, CreateOrderRequest, CreateOrderService, OrderDao,
                                           OrderTransactionListener, KafkaOrderService, create_message,
                                           kafka_committed_orders)
from widgets.rocketmq_views import half_topic_figure, transactions_table, space_time_figure, message_table_figure
from widgets.predict import Exercise, Predict, moment

# %% [markdown]
# ## The order service
#
# This is the order service's transaction listener, in Python. `execute_local_transaction` inserts the order into
# a SQLite table and answers `COMMIT_MESSAGE`, or `ROLLBACK_MESSAGE` if the insert throws.
# `check_local_transaction` is what the broker's check-back calls: if the order id is in the database the
# transaction must have committed; if not, it *may have failed or may still be running*, so it answers
# `UNKNOW` (RocketMQ's own spelling).

# %%
print(inspect.getsource(OrderTransactionListener))


# %%
def order_lab(seed=7, **broker_conf):
    lab = RocketMQCluster(seed=seed, config=broker_conf or None)       # a name server and broker-a
    lab.create_topic(ORDER_TOPIC, queues=2)
    dao = OrderDao()                                                    # sqlite3, in memory
    service = CreateOrderService(lab.namesrv_addr, dao)                 # TransactionMQProducer("myGroup")
    consumer = DefaultLitePullConsumer("order-consumers", namesrv_addr=lab.namesrv_addr)
    consumer.set_consume_from_where(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(ORDER_TOPIC)
    consumer.start()
    return lab, dao, service, consumer

def seen(consumer, ms=1000):
    return [m.get_user_property("orderId") for m in consumer.poll(ms)]

lab, dao, service, consumer = order_lab()
impl = service.producer.default_mq_producer_impl
lab.topics(), service.producer.name

# %% [markdown]
# ## 1. The happy path, one step at a time
#
# `send_message_in_transaction(msg, arg)` does three things, and here each is a step of the producer process:
#
# 1. **SEND_MESSAGE_V2** (the producer's send request) with the property `TRAN_MSG=true`. The broker sees the flag and does *not* store the
#    message in `order-topic`: it records `REAL_TOPIC` and `REAL_QID` in the message's properties and stores it
#    in **`RMQ_SYS_TRANS_HALF_TOPIC` queue 0**, which no consumer reads.
# 2. **executeLocalTransaction**: the order goes into the database.
# 3. **END_TRANSACTION**, *one-way*: commit copies the half message to its real topic and queue, then writes an
#    **op message** (tag `d`, body = the half offset) to `RMQ_SYS_TRANS_OP_HALF_TOPIC` so the check service
#    knows this half message is done.

# %% jupyter={"source_hidden": true}
p_half = Predict("Right after step 1 (the half message is stored, the order is not inserted yet), how many messages "
                 "can the consumer of <code>order-topic</code> read?", kind="number", check=lambda: visible_at_half,
                 why="A half message is stored in RMQ_SYS_TRANS_HALF_TOPIC, not in its real topic: nothing is "
                     "readable until END_TRANSACTION (COMMIT) copies it to order-topic.")
p_half

# %% jupyter={"source_hidden": true}
p_oneway = Predict("How many responses does END_TRANSACTION get?", kind="number", check=lambda: end_txn_responses,
                   why="END_TRANSACTION is one-way (invokeOneway): the producer never learns whether it arrived.")
p_oneway

# %%
order1 = CreateOrderRequest("o-1", "book", 30)
op = impl.begin_send_message_in_transaction(create_message(order1), order1)
lab.run_until(lambda: op.stage == "HALF_STORED")
[half] = lab.broker.store.queue_messages(RMQ_SYS_TRANS_HALF_TOPIC, 0)
print(half.topic, "queue", half.queue_id, {k: half.get_property(k) for k in ("REAL_TOPIC", "REAL_QID", "TRAN_MSG", "PGROUP")})
# (no poll here: a poll would step the simulation on; we look at what a consumer *could* read)
half_was_invisible = lab.topic_messages(ORDER_TOPIC) == [] and dao.order_ids() == []
visible_at_half = len(lab.topic_messages(ORDER_TOPIC))
print("order-topic holds:", lab.topic_messages(ORDER_TOPIC), "| orders in the DB:", dao.order_ids())
half_topic_figure(lab)

# %%
lab.run_until(lambda: op.done)
lab.run_until_idle()
end_txn_responses = len([m for m in lab.network_messages() if m.api == "END_TRANSACTION" and m.is_response])
print(lab.trace.tail(4))
print("consumer sees:", seen(consumer), "| orders in the DB:", dao.order_ids())
half_topic_figure(lab)

# %% [markdown]
# **Check** The half message was invisible, the commit copied it once, END_TRANSACTION got no response.

# %%
assert half_was_invisible
assert op.local_transaction_state == LocalTransactionState.COMMIT_MESSAGE
assert half.get_property(MessageConst.PROPERTY_REAL_TOPIC) == ORDER_TOPIC and half.queue_id == 0
assert dao.order_ids() == ["o-1"]
assert [t["status"] for t in lab.transactions()] == ["committed"]
assert [m for m in lab.network_messages() if m.api == "END_TRANSACTION" and m.is_response] == []

# %% [markdown]
# ## 2. Fault: the END_TRANSACTION request is lost
#
# END_TRANSACTION is one-way (`invokeOneway`): the producer never learns whether it arrived. That does not
# matter, "由于有事务反查的机制来兜底" — the check-back is the safety net. The broker's
# `TransactionalMessageCheckService` wakes every `transactionCheckInterval` (60 s here, RocketMQ 4's default;
# 30 s since 5.1.1), reads the half queue from its own offset, skips every half offset named by an op
# message, and for a half message older than `transactionTimeOut` (6 s) it copies the message to the end of
# the half queue with `TRANSACTION_CHECK_TIMES` + 1 and sends **CHECK_TRANSACTION_STATE** to a live producer
# of the group.

# %% jupyter={"source_hidden": true}
p_o2 = Predict("We drop the next END_TRANSACTION; the order <code>o-2</code> is in the database. After six minutes, "
               "how many times has the consumer received <code>o-2</code>?", kind="number",
               check=lambda: delivered_o2,
               why="Nothing at first: the half message waits. The check service finds it older than 6 s at its next "
                   "run, asks the producer (CHECK_TRANSACTION_STATE), hears COMMIT from the database, copies it once "
                   "and writes the op message, so later checks skip it.")
p_o2

# %%
lab.drop_next("END_TRANSACTION")
order2 = CreateOrderRequest("o-2", "pen", 3)
print("create_order ->", service.create_order(order2))
print("now:", seen(consumer), "| DB:", dao.order_ids())
lab.advance(61_000)
print("after a minute:", seen(consumer))
lab.advance(5 * 60_000)
print("five minutes later:", seen(consumer))
delivered_o2 = [t for t in lab.transactions() if t["keys"] == "o-2"][0]["delivered"]
half_topic_figure(lab)

# %%
transactions_table(lab)

# %% [markdown]
# **Check** One check-back, one delivery, and the half offset that was checked is marked by an op message.

# %%
t2 = [t for t in lab.transactions() if t["keys"] == "o-2"][0]
assert t2["status"] == "committed" and t2["check_times"] == 1 and t2["delivered"] == 1
assert len([m for m in lab.network_messages() if m.api == "CHECK_TRANSACTION_STATE"]) == 1
assert dao.order_ids() == ["o-1", "o-2"]

# %% [markdown]
# **Kafka, same fault.** Kafka's `EndTxn` is a request *with* a response. If it is lost, its connection
# breaks: the producer notices and sends it again on a new one (had the coordinator merely stayed silent,
# confluent-kafka would have waited `socket.timeout.ms` — 59.9 s here, `transaction.timeout.ms` minus
# 100 ms — before giving up and sending it again). `commit_transaction()` returns only when the coordinator
# answered. No check-back is needed because the client retries — but the client must be alive to do so.

# %%
kc = Cluster(brokers=1, seed=3)
kc.create_topic(ORDER_TOPIC, partitions=1)
kdao = OrderDao()
kafka = KafkaOrderService(kc, kdao, transaction_timeout_ms=60_000)
kafka.begin(order2)
kdao.create_order_in_db(order2)
kc.drop_next("EndTxn")
kafka.producer.commit_transaction(60)
print("Kafka read_committed consumer sees:", kafka_committed_orders(kc), "| DB:", kdao.order_ids())

# %% [markdown]
# **Check** Kafka's retried EndTxn committed: one message, one order.

# %%
assert kafka_committed_orders(kc) == ["o-2"] and kdao.order_ids() == ["o-2"]
assert len([m for m in kc.network_messages() if m.api == "EndTxn" and not m.is_response]) >= 2

# %% [markdown]
# ## 3. Fault: the local database fails
#
# The insert throws (a broken disk). The listener catches it and answers `ROLLBACK_MESSAGE`. Rollback does
# *less* than commit: nothing is copied; only the op message is written, so the check service never asks.

# %% jupyter={"source_hidden": true}
p_rolled = Predict("The local transaction fails and the listener answers ROLLBACK_MESSAGE. Will the broker ever send "
                   "a CHECK_TRANSACTION_STATE about <code>o-3</code>?", choices=["yes", "no"],
                   check=lambda: "yes" if checks_after_rollback > checks_before else "no",
                   why="Rollback writes the op message for the half offset: the check service skips it for ever. "
                       "Nothing is copied to order-topic and the database has no o-3.")
p_rolled

# %%
checks_before = len([m for m in lab.network_messages() if m.api == "CHECK_TRANSACTION_STATE"])
dao.fail_next_write = "disk I/O error"
order3 = CreateOrderRequest("o-3", "cup", 8)
result = service.producer.send_message_in_transaction(create_message(order3), order3)
print("local transaction:", result.local_transaction_state)
lab.advance(3 * 60_000)
checks_after_rollback = len([m for m in lab.network_messages() if m.api == "CHECK_TRANSACTION_STATE"])
print("consumer sees:", seen(consumer), "| DB:", dao.order_ids())
half_topic_figure(lab)

# %% [markdown]
# **Check** Rolled back, never checked, never delivered, and no order.

# %%
t3 = [t for t in lab.transactions() if t["keys"] == "o-3"][0]
assert result.local_transaction_state == LocalTransactionState.ROLLBACK_MESSAGE
assert t3["status"] == "rolled back" and t3["delivered"] == 0
assert "o-3" not in dao.order_ids()
assert len([m for m in lab.network_messages() if m.api == "CHECK_TRANSACTION_STATE"]) == checks_before

# %% [markdown]
# **Kafka, same fault:** the service calls `abort_transaction()`; ABORT markers are written and a
# read_committed consumer skips the record. Consistent, too.

# %%
kdao.fail_next_write = "disk I/O error"
print("create_order ->", kafka.create_order(order3))
print("Kafka consumer sees:", kafka_committed_orders(kc), "| DB:", kdao.order_ids())

# %% [markdown]
# **Check** Aborted on both sides.

# %%
assert kafka_committed_orders(kc) == ["o-2"] and "o-3" not in kdao.order_ids()

# %% [markdown]
# ## 4. Fault: the producer crashes after the half message
#
# The process dies after the order was inserted but **before END_TRANSACTION left**. While no producer of
# group `myGroup` is connected, the check service finds no channel ("channel is null") and can ask nobody.
# When the order service comes back — a *new instance* of the same group — its heartbeat registers it, and the
# check goes to it. That is why `check_local_transaction` must look at the database, not at memory: the
# instance that is asked may not be the one that sent the message.

# %% jupyter={"source_hidden": true}
ASKED = ["the crashed instance, once it is back", "the new instance of the producer group",
         "nobody: the half message is discarded"]
p_asked = Predict("We crash the producer after its local transaction, wait two minutes, then start a new instance. "
                  "Who receives CHECK_TRANSACTION_STATE?", choices=ASKED,
                  check=lambda: ASKED[1] if checks and all(m.dst == restarted.producer.name for m in checks)
                  else ASKED[2] if not checks else ASKED[0],
                  why="The broker asks a live producer of the group: while none is alive nobody is asked; the new "
                      "instance answers from the database (COMMIT), and o-4 is delivered once.")
p_asked

# %%
lab, dao, service, consumer = order_lab(seed=8)
order4 = CreateOrderRequest("o-4", "lamp", 12)
op = service.producer.default_mq_producer_impl.begin_send_message_in_transaction(create_message(order4), order4)
lab.run_until(lambda: op.stage == "LOCAL_TRANSACTION_DONE")      # the order is committed in the DB ...
lab.crash(service.producer)                                       # ... and END_TRANSACTION never leaves
lab.advance(2 * 60_000)
print("while no producer of the group is alive:", seen(consumer), "| DB:", dao.order_ids())
restarted = CreateOrderService(lab.namesrv_addr, dao)
lab.advance(60_000)
checks = [m for m in lab.network_messages() if m.api == "CHECK_TRANSACTION_STATE"]
print("checks went to:", [m.dst for m in checks], "| consumer sees:", seen(consumer))
space_time_figure(lab, hide=("HEART_BEAT", "REGISTER_BROKER", "GET_ROUTEINFO_BY_TOPIC", "PULL_MESSAGE"))

# %% [markdown]
# **Check** The new instance answered the check from the database; the message is delivered exactly once.

# %%
assert [m.dst for m in checks] == [restarted.producer.name]
[t4] = lab.transactions()
assert t4["status"] == "committed" and t4["delivered"] == 1 and dao.order_ids() == ["o-4"]

# %% [markdown]
# **Kafka, same fault.** The service inserted the order inside its Kafka transaction and dies before
# `commit_transaction()`. Nobody asks the order service anything: after `transaction.timeout.ms` the
# coordinator aborts the transaction. The order exists; its message never will.

# %% jupyter={"source_hidden": true}
KAFKA_SEES = ["o-4", "nothing: the transaction was aborted, though o-4 is in the database"]
p_kafka = Predict("After the transaction timeout, what does Kafka's <code>read_committed</code> consumer see?",
                  choices=KAFKA_SEES, check=lambda: KAFKA_SEES[0] if kafka_sees == ["o-4"] else KAFKA_SEES[1],
                  why="Kafka never asks the application: the coordinator aborts the expired transaction. The database "
                      "and the topic now disagree.")
p_kafka

# %%
kc = Cluster(brokers=1, seed=4)
kc.create_topic(ORDER_TOPIC, partitions=1)
kdao = OrderDao()
kafka = KafkaOrderService(kc, kdao, transaction_timeout_ms=10_000)
kafka.begin(order4)
kafka.producer.flush()
kdao.create_order_in_db(order4)
kc.crash(kafka.producer)                          # before commit_transaction()
kc.advance(20_000)
kafka_sees = kafka_committed_orders(kc)
print(kc.transaction_state("order-service")["state"], "| Kafka consumer sees:", kafka_sees,
      "| DB:", kdao.order_ids())

# %% [markdown]
# **Check** Kafka aborted on the timeout: the database and the topic disagree (no check-back).

# %%
assert kc.transaction_state("order-service")["state"] == "CompleteAbort"
assert kdao.order_ids() == ["o-4"] and kafka_committed_orders(kc) == []

# %% [markdown]
# ## 5. Fault: a slow local transaction — UNKNOW, then commit at check-back
#
# Here the insert is handed to a worker and takes 90 s, so `execute_local_transaction` answers `UNKNOW`
# and END_TRANSACTION carries `TRANSACTION_NOT_TYPE` (the broker does nothing). The first check (about
# 60 s) finds no order and gets `UNKNOW` again; the second (about 120 s) finds it.

# %% jupyter={"source_hidden": true}
p_checks5 = Predict("The insert takes 90 s, so the listener first answers UNKNOW. How many CHECK_TRANSACTION_STATE "
                    "requests will there be?", kind="number", check=lambda: checks_slow,
                    why="The first check (about 60 s) finds no order yet and gets UNKNOW; the second (about 120 s) "
                        "finds it and commits: two checks, TRANSACTION_CHECK_TIMES 2.")
p_checks5

# %%
lab, dao, service, consumer = order_lab(seed=9)
dao.insert_takes_ms = 90_000
order5 = CreateOrderRequest("o-5", "desk", 120)
result = service.producer.send_message_in_transaction(create_message(order5), order5)
print("local transaction:", result.local_transaction_state)
for minute in (1, 2):
    lab.advance(60_000 if minute == 2 else 61_000)
    print(f"after check #{minute}: consumer sees {seen(consumer, 0)}, DB {dao.order_ids()}")
checks_slow = len([m for m in lab.network_messages() if m.api == "CHECK_TRANSACTION_STATE"])
half_topic_figure(lab)

# %% [markdown]
# **Check** UNKNOW first, one UNKNOW check, then a committing check; delivered once.

# %%
[t5] = lab.transactions()
assert result.local_transaction_state == LocalTransactionState.UNKNOW
assert t5["status"] == "committed" and t5["check_times"] == 2 and t5["delivered"] == 1
assert len([m for m in lab.network_messages() if m.api == "CHECK_TRANSACTION_STATE"]) == 2

# %% [markdown]
# **When the answer stays UNKNOW.** If the process died *before* the insert, the database never gets the
# order and every check answers `UNKNOW`. After `transactionCheckMax` = 15 checks the broker gives up: the half
# message is discarded (parked in `TRANS_CHECK_MAX_TIME_TOPIC` since RocketMQ 4.5.2; before, only logged) and
# is never delivered. Consistent — but only because the check said UNKNOW rather than COMMIT.

# %% [markdown]
# How long does the broker keep asking? Answer first:

# %% jupyter={"source_hidden": true}
p_minutes = Predict("The producer died before its local transaction; every check-back answers UNKNOW. After how "
                    "many minutes is the half message discarded?", kind="number", check=lambda: minutes,
                    why="transactionCheckMax is 15: the first check comes about a minute after the half message, then "
                        "one a minute; after the 15th the next scan discards it.")
p_minutes

# %%
lab, dao, service, consumer = order_lab(seed=10)
order6 = CreateOrderRequest("o-6", "chair", 40)
op = service.producer.default_mq_producer_impl.begin_send_message_in_transaction(create_message(order6), order6)
lab.run_until(lambda: op.stage == "HALF_STORED")
lab.crash(service.producer)                       # before the local transaction
CreateOrderService(lab.namesrv_addr, dao)
minutes = 0
while lab.transactions()[0]["status"] != "discarded":
    lab.advance(60_000)
    minutes += 1
print(f"discarded after {minutes} minutes;", lab.transactions()[0])
half_topic_figure(lab)

# %% [markdown]
# **Check** 15 checks, then discarded; no message, no order.

# %%
[t6] = lab.transactions()
assert t6["check_times"] == 15 and t6["delivered"] == 0 and minutes == 16
assert len([m for m in lab.network_messages() if m.api == "CHECK_TRANSACTION_STATE"]) == 15
assert dao.order_ids() == [] and seen(consumer) == []

# %% [markdown]
# ## 6. Step through it yourself: the lost END_TRANSACTION, then a crash of your own
#
# The stepper runs the order service of section 2 as a story, `rocketmq-end-transaction-lost`: the same
# `CreateOrderService`, a consumer of `order-topic`, and a lost END_TRANSACTION. Each **Step** (or →) goes to the
# next moment that changes a picture (**Step by: event** shows every event of the simulation); **Back** (←) re-runs
# it from its seed; the **Key moments** buttons jump straight to a moment, one click each. The tab **Half and op topics** is the
# picture of sections 1 and 2, redrawn at every step; **Messages** is the space-time diagram; **Faults**
# offers this lab's own processes (`producer-1`, `consumer-1`, `broker-a`, `namesrv`) and the messages in
# flight. The story's code waits a minute twice (the check service wakes once a minute), so the clock in the
# narration header jumps.

# %% [markdown]
# Answer the question below first. Then step until `o-1` becomes readable in `order-topic`, watching the cells of
# `RMQ_SYS_TRANS_HALF_TOPIC` (seven clicks of **Step**; key moments 1 to 4 are the half message stored,
# END_TRANSACTION lost, the check-back, and the commit).

# %%
from IPython.display import HTML
from widgets import Stepper

story = Stepper("rocketmq-end-transaction-lost")
story.widget

# %% jupyter={"source_hidden": true}
WHEN = ["when END_TRANSACTION is sent", "about a minute later, after the broker's check-back", "never"]
p_readable = Predict("The END_TRANSACTION (COMMIT) is lost. When does <code>o-1</code> become readable in "
                     "<code>order-topic</code>?", choices=WHEN,
                     check=lambda: WHEN[1] if moment("rocketmq-end-transaction-lost", "is copied to its real topic",
                                                     skip_background=True).lab.clock >= 60_000 else WHEN[0],
                     why="END_TRANSACTION is one-way: nobody notices it was lost. The broker's check service finds the "
                         "half message still pending after a minute and asks the producer, which looks in its database "
                         "and answers COMMIT_MESSAGE.")
p_readable

# %% [markdown]
# **Check** what you should have seen (the cell drives the stepper above from step 0; it fails if the lab disagrees):

# %%
story_check = Stepper("rocketmq-end-transaction-lost", skip_background=True)
assert story_check.step_until("the network dropped END_TRANSACTION")
assert story_check.lab.topic_messages(ORDER_TOPIC) == []                          # still a half message
assert story_check.step_until("CHECK_TRANSACTION_STATE for")                        # the check service, a minute on
assert 60_000 <= story_check.lab.clock < 61_000
assert [h["status"] for h in story_check.lab.half_messages()] == ["copied", "pending"]
assert story_check.step_until("checkLocalTransaction(")                            # the producer looks in its DB
assert "returned COMMIT_MESSAGE" in story_check.narration
assert story_check.step_until("is copied to its real topic")
assert len(story_check.lab.topic_messages(ORDER_TOPIC)) == 1
story_check.run_to_end()
assert story_check.result["consumer_saw"] == ["o-1"] and story_check.result["orders_in_db"] == ["o-1"]
story_check.close()

# %% [markdown]
# Now add the fault of section 4 yourself, at an earlier moment. Click key moment **1** (*The half message is
# stored*), open **Faults**, pick `producer-1` (or click its lane head in **Messages**) and **Crash** it. The local
# transaction has not run yet. The story's code sees its `send_message_in_transaction` fail and starts a new
# instance of the order service (`producer-2`, same group `myGroup`). A new branch starts; `main` is kept. Three
# clicks of **Step** take the branch to its end: the first check-back, the second, the story's end.

# %% [markdown]
# Build the branch, then answer the question below before you step to its end.

# %% jupyter={"source_hidden": true}
p_checks = Predict("In your branch (producer-1 crashed once the half message is stored), how many "
                   "CHECK_TRANSACTION_STATE requests go out before the story ends?", kind="number",
                   check=lambda: len(branch_check.result["checks_sent_to"]),
                   why="The broker asks a live producer of the group, producer-2; it finds no order in the database and "
                       "answers UNKNOW, so the broker asks again a minute later (the story ends after the second).")
p_checks

# %% [markdown]
# The same branch on a replay of its own (yours stays where you left it), compared with the run as written:

# %%
branch_check = Stepper("rocketmq-end-transaction-lost", skip_background=True)
branch_check.step_until("the half message is stored")
crashed = branch_check.crash("producer-1")              # the same as Faults -> producer-1 -> Crash
branch_check.run_to_end()
HTML(branch_check.compare_html("main", crashed))

# %% [markdown]
# **Check** The database and the topic agree in both branches: a message without its order never became visible.

# %%
r = branch_check.result
assert r["orders_in_db"] == [] and r["consumer_saw"] == []                   # neither the order nor the message
assert r["checks_sent_to"] == ["producer-2", "producer-2"]                    # asked twice, UNKNOW twice
assert [t["status"] for t in branch_check.lab.transactions()] == ["pending"]         # until transactionCheckMax
assert branch_check.compare("main", crashed)["state"]["order-topic: what consumers can read"] == (["q0@0 o-1"], [])

# %% [markdown]
# ## Exercise: when does the broker ask?
#
# In your stepper (branch `main`: pick it under **Branches**), find the step where the broker sends its first
# `CHECK_TRANSACTION_STATE`. At which simulated second is that (the narration header shows the clock as
# `t = ... ms`; within 1 s is right)?


# %% jupyter={"source_hidden": true}
def check_first_check(answer):
    at = moment("rocketmq-end-transaction-lost", "CHECK_TRANSACTION_STATE for", skip_background=True).lab.clock / 1000
    return abs(float(answer) - at) <= 1, "Step until the narration names CHECK_TRANSACTION_STATE and read the clock."


ex_first_check = Exercise("Simulated second of the first CHECK_TRANSACTION_STATE:", kind="number",
                          check=check_first_check,
                          solution='story.switch("main", 0)\n'
                                   'story.step_until("CHECK_TRANSACTION_STATE for")\n'
                                   'story.lab.clock / 1000     # about 60 s: the check service runs once a minute')
ex_first_check

# %% [markdown]
# ## 7. What you should have filled in
#
# | fault | RocketMQ | Kafka |
# |---|---|---|
# | END_TRANSACTION / EndTxn lost | check-back commits it; one message | the client retries EndTxn; one message |
# | local database fails | ROLLBACK_MESSAGE; no order, no message | abort_transaction(); no order, no message |
# | producer crash after the local commit | check-back (to another instance) finds the order and commits | the coordinator aborts on timeout: **order without message** |
# | slow local transaction | UNKNOW, then the check-back commits | the transaction simply stays open (and aborts if it outlives `transaction.timeout.ms`) |
#
# In short: both use a two-phase protocol and a special topic; RocketMQ keeps the uncommitted
# message *outside* its topic (half queue, then a copy), Kafka writes it *into* the partition and lets
# read_committed consumers skip it until the marker. RocketMQ's check-back ties the message to a *local*
# transaction; Kafka's transactions make a group of Kafka writes (and consumer offsets) atomic, which is what
# exactly-once stream processing needs.
#
# One more difference worth seeing in the lab: RocketMQ's documentation warns that a transactional message
# can be checked — and delivered — more than once (try `lab.pause(service.producer, 100_000)` right after the
# half message is stored), so its consumers deduplicate on the message key.

# %%
message_table_figure(lab, hide=("HEART_BEAT", "REGISTER_BROKER", "GET_ROUTEINFO_BY_TOPIC", "PULL_MESSAGE"))

# %% [markdown]
# ## Where next
#
# **10 · Classic two-phase commit**: where Kafka's transactions differ from it (about 30 minutes).
# `GLOSSARY.md` explains every Kafka term used here; `INDEX.md` lists the gallery's scenarios by concept.
