"""The seed article's order service, in Python: an order table in a local SQLite database plus a
message that must agree with it ("写数据库和发消息这两个操作在一个事务内执行，
要么都成功，要么都失败").

``OrderDao`` is the local database (stdlib sqlite3); ``OrderTransactionListener`` is the seed's
``createTransactionListener()`` (execute: insert the order, COMMIT_MESSAGE, or ROLLBACK_MESSAGE if the
insert throws; check: COMMIT_MESSAGE if the order id exists, else UNKNOW because the transaction may have
failed or may still be running); ``CreateOrderService`` is the seed's ``createOrder``.
``KafkaOrderService`` does the same job with Kafka's transactional producer, which has no check-back.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Optional

from .message import LocalTransactionState, Message, MessageExt
from .producer import TransactionListener, TransactionMQProducer
from .message import SendStatus

ORDER_TOPIC = "order-topic"


@dataclass(frozen=True)
class CreateOrderRequest:
    order_id: str
    item: str
    amount: int


class OrderDao:
    """The orders table.  ``fail_next_write`` makes the next insert fail like a broken disk or a lock timeout;
    ``insert_takes_ms`` makes the insert slow: it is handed to a worker and finishes later (simulated time)."""

    def __init__(self, path: str = ":memory:") -> None:
        # A stepper runs the application's code on its own thread while the broker's check-back (and the
        # local transaction, a step of the producer process) run on the stepping thread; the two never run
        # at the same time, so one connection may be shared between them.
        self.conn = sqlite3.connect(path, check_same_thread=False)
        self.conn.execute("CREATE TABLE IF NOT EXISTS orders (order_id TEXT PRIMARY KEY, item TEXT NOT NULL, "
                          "amount INTEGER NOT NULL CHECK (amount > 0))")
        self.conn.commit()
        self.fail_next_write: Optional[str] = None
        self.insert_takes_ms = 0

    def create_order_in_db(self, request: CreateOrderRequest) -> None:
        with self.conn:             # one local transaction: commit on success, roll back on error
            self.conn.execute("INSERT INTO orders (order_id, item, amount) VALUES (?, ?, ?)",
                              (request.order_id, request.item, request.amount))
            if self.fail_next_write:
                reason, self.fail_next_write = self.fail_next_write, None
                raise sqlite3.OperationalError(reason)

    def is_order_id_exists_in_db(self, order_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM orders WHERE order_id = ?", (order_id,)).fetchone() is not None

    def order_ids(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT order_id FROM orders ORDER BY order_id")]


def create_message(request: CreateOrderRequest) -> Message:
    body = json.dumps({"orderId": request.order_id, "item": request.item, "amount": request.amount}).encode()
    msg = Message(ORDER_TOPIC, body, tags="create", keys=request.order_id)
    msg.put_user_property("orderId", request.order_id)
    return msg


class OrderTransactionListener(TransactionListener):
    def __init__(self, dao: OrderDao, producer: Optional[TransactionMQProducer] = None) -> None:
        self.dao = dao
        self.producer = producer

    def execute_local_transaction(self, msg: Message, arg) -> LocalTransactionState:
        request: CreateOrderRequest = arg
        if self.dao.insert_takes_ms:
            # A slow local transaction: the insert runs on a worker and finishes later; not decided yet.
            self.producer.get_executor_service().submit(
                lambda: self._insert_quietly(request), self.dao.insert_takes_ms, f"insert order {request.order_id}")
            return LocalTransactionState.UNKNOW
        try:
            self.dao.create_order_in_db(request)
            return LocalTransactionState.COMMIT_MESSAGE
        except Exception:
            return LocalTransactionState.ROLLBACK_MESSAGE

    def _insert_quietly(self, request: CreateOrderRequest) -> None:
        try:
            self.dao.create_order_in_db(request)
        except sqlite3.Error:
            pass

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        order_id = msg.get_user_property("orderId")
        return (LocalTransactionState.COMMIT_MESSAGE if self.dao.is_order_id_exists_in_db(order_id)
                else LocalTransactionState.UNKNOW)


class CreateOrderService:
    """The seed's CreateOrderService: ``init`` builds the producer; ``create_order`` returns SEND_OK or not."""

    def __init__(self, namesrv_addr: str, dao: OrderDao, group: str = "myGroup") -> None:
        self.dao = dao
        self.producer = TransactionMQProducer(group, namesrv_addr=namesrv_addr)
        self.producer.set_transaction_listener(OrderTransactionListener(dao, self.producer))
        self.producer.start()

    def create_order(self, request: CreateOrderRequest) -> bool:
        result = self.producer.send_message_in_transaction(create_message(request), request)
        return result.send_status == SendStatus.SEND_OK


class KafkaOrderService:
    """The same order service on Kafka: one Kafka transaction around the produce, the DB insert inside it.
    Kafka has no check-back: if the process dies after the insert and before commit_transaction(), the
    coordinator aborts the transaction when transaction.timeout.ms passes, and the order has no message."""

    def __init__(self, cluster, dao: OrderDao, transactional_id: str = "order-service",
                 transaction_timeout_ms: int = 60_000) -> None:
        from ..client.producer import Producer
        self.dao = dao
        self.producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": transactional_id,
                                  "transaction.timeout.ms": transaction_timeout_ms})
        self.producer.init_transactions()

    def begin(self, request: CreateOrderRequest) -> None:
        """The first half: open the transaction and produce the message (not yet visible)."""
        self.producer.begin_transaction()
        body = json.dumps({"orderId": request.order_id, "item": request.item, "amount": request.amount})
        self.producer.produce(ORDER_TOPIC, key=request.order_id, value=body)

    def create_order(self, request: CreateOrderRequest) -> bool:
        self.begin(request)
        try:
            self.dao.create_order_in_db(request)
        except sqlite3.Error:
            self.producer.abort_transaction()
            return False
        self.producer.commit_transaction()
        return True


def kafka_committed_orders(cluster, topic: str = ORDER_TOPIC) -> list[str]:
    """The order ids a read_committed Kafka consumer can read from ``topic`` (every partition, from the start)."""
    from ..client.consumer import Consumer
    from ..client.message import TopicPartition
    n = sum(1 for (t, _) in cluster.controller.states if t == topic)
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "order-audit",
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p) for p in range(n)])
    out, empty = [], 0
    while empty < 2:
        m = c.poll(0.5)
        if m is None:
            empty += 1
        elif m.error() is None:
            out.append(json.loads(m.value())["orderId"])
    c.close()
    return out
