"""Stories of RocketMQ's transactional messages for the stepper: the seed's order service under a fault.

Owns ``GALLERY`` (``txnlab.gallery.load(name)`` finds these too).  Each is a ``txnlab.gallery.Scenario``
whose ``lab`` recipe builds a ``RocketMQCluster`` (a name server and broker-a, ``order-topic`` with two
queues) and whose ``run`` is the application's code, written with RocketMQ's client API only
(``CreateOrderService`` over ``TransactionMQProducer``, ``DefaultLitePullConsumer``).  Run plainly, its
blocking calls drive the kernel; under a stepper each event waits for a Step.  The code copes with
the faults a person is likely to add from the stepper: if its producer process crashes inside
``sendMessageInTransaction`` the order service comes back as a new instance of the same producer group
(that is what RocketMQ's check-back relies on).  Pure engine: no widgets here.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from .moments import KeyMoment, narrated
from .scenario import Scenario, expect
from ..rocketmq.cluster import RocketMQCluster
from ..rocketmq.consumer import ConsumeFromWhere, DefaultLitePullConsumer
from ..rocketmq.message import MQClientException
from ..rocketmq.order_service import ORDER_TOPIC, CreateOrderRequest, CreateOrderService, OrderDao

ORDER = CreateOrderRequest("o-1", "book", 30)


def order_lab(seed: int = 0, config: Optional[dict] = None) -> RocketMQCluster:
    """A name server and broker-a (RocketMQ's default broker.conf unless ``config`` says otherwise)."""
    return RocketMQCluster(brokers=1, seed=seed, config=dict(config) if config else None)


def _setup(lab: RocketMQCluster) -> None:
    lab.create_topic(ORDER_TOPIC, queues=2)


def order_ids(messages) -> list[str]:
    return [m.get_user_property("orderId") for m in messages]


# ----------------------------------------------------- the lost END_TRANSACTION, repaired by a check-back
def _end_transaction_lost(lab: RocketMQCluster) -> dict:
    dao = OrderDao()                                              # the service's local database (sqlite3)
    service = CreateOrderService(lab.namesrv_addr, dao)           # TransactionMQProducer of group myGroup
    consumer = DefaultLitePullConsumer("order-consumers", namesrv_addr=lab.namesrv_addr)
    consumer.set_consume_from_where(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(ORDER_TOPIC)
    consumer.start()
    # END_TRANSACTION is one-way: this producer's will be lost and it will never know.
    lab.drop_next("END_TRANSACTION", src=service.producer)
    first_producer = service.producer.name
    try:
        created, error = service.create_order(ORDER), ""
    except MQClientException as e:                               # its process crashed mid-way (a stepper fault)
        created, error = False, str(e)
        service = CreateOrderService(lab.namesrv_addr, dao)       # the order service comes back: a new instance
    seen_at_once = order_ids(consumer.poll(0))
    seen = list(seen_at_once)
    for _ in range(2):                                            # the check service wakes once a minute
        lab.advance(60_000)
        seen += order_ids(consumer.poll(1_000))
    checks = [m for m in lab.network_messages() if m.api == "CHECK_TRANSACTION_STATE" and not m.is_response]
    return {"create_order": created, "error": error, "producers": [first_producer, service.producer.name],
            "orders_in_db": dao.order_ids(), "consumer_saw_at_once": seen_at_once, "consumer_saw": seen,
            "checks_sent_to": [m.dst for m in checks]}


def _check_end_transaction_lost(lab: RocketMQCluster, r: dict, variant: str) -> None:
    expect(r["create_order"] is True and r["orders_in_db"] == ["o-1"], f"the order was created: {r}")
    expect(r["consumer_saw_at_once"] == [], "without END_TRANSACTION the message stays a half message: invisible")
    expect(r["checks_sent_to"] == [r["producers"][0]], f"one check-back, to the producer: {r['checks_sent_to']}")
    expect(r["consumer_saw"] == ["o-1"], f"the check-back committed it and the consumer read it once: {r}")
    [t] = lab.transactions()
    expect(t["status"] == "committed" and t["check_times"] == 1 and t["delivered"] == 1,
           f"the half message was checked once, then committed and copied once: {t}")


GALLERY = {sc.name: sc for sc in [
    Scenario(
        "rocketmq-end-transaction-lost", "RocketMQ: the one-way END_TRANSACTION is lost; the check-back repairs it",
        "The seed's order service creates order o-1: its TransactionMQProducer sends a half message "
        "(SEND_MESSAGE_V2 with TRAN_MSG=true: the broker parks it in RMQ_SYS_TRANS_HALF_TOPIC queue 0, where no "
        "consumer reads), runs the local transaction (the order goes into its SQLite table) and sends "
        "END_TRANSACTION one-way, which is lost. A consumer of order-topic polls. The broker's check service "
        "wakes every transactionCheckInterval (60 s), finds the half message older than transactionTimeOut "
        "(6 s) with no op message, copies it to the end of the half queue with TRANSACTION_CHECK_TIMES=1 and "
        "asks the producer (CHECK_TRANSACTION_STATE); checkLocalTransaction finds the order in the database. "
        "If the producer's process crashes on the way, the service starts a new instance of group myGroup.",
        "create_order returns SEND_OK and the order is in the database, but the consumer sees nothing until the "
        "check-back at about t=60 s commits the half message: then it reads o-1 exactly once. The half queue "
        "shows the original at offset 0 (copied by the check) and the checked copy at offset 1 (committed, "
        "marked as processed by an op message).",
        _end_transaction_lost, _check_end_transaction_lost, setup=_setup, lab=order_lab),
]}

# the key moments (Stepper(name, at=id)): predicates over the lab's trace, never step numbers
GALLERY["rocketmq-end-transaction-lost"] = replace(GALLERY["rocketmq-end-transaction-lost"], moments=(
    KeyMoment("half-stored", "The half message is stored in RMQ_SYS_TRANS_HALF_TOPIC: no consumer can see it",
              narrated("the half message is stored")),
    KeyMoment("end-lost", "END_TRANSACTION goes one-way and is lost: the producer never knows",
              narrated("the network dropped END_TRANSACTION")),
    KeyMoment("check-back", "A minute later the check service asks the producer: checkLocalTransaction says COMMIT",
              narrated("checkLocalTransaction", "COMMIT_MESSAGE")),
    KeyMoment("committed", "The broker commits the half message: the consumer can read o-1",
              narrated("END_TRANSACTION", "TRANSACTION_COMMIT_TYPE", node="broker-a"))))
