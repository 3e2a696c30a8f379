"""RocketMQ's half messages and check-back on the deterministic kernel: the seed's order service
(a SQLite order table plus a message) under each fault, and Kafka's behaviour for the same cases."""
import pytest

from txnlab import Cluster
from txnlab.rocketmq import (RMQ_SYS_TRANS_HALF_TOPIC, ConsumeFromWhere, DefaultLitePullConsumer,
                             LocalTransactionState, MessageConst, MQClientException, RocketMQCluster)
from txnlab.rocketmq.order_service import (ORDER_TOPIC, CreateOrderRequest, CreateOrderService, KafkaOrderService,
                                           OrderDao, create_message, kafka_committed_orders)

ORDER = CreateOrderRequest("o-1", "book", 30)


def order_lab(seed=7, **config):
    lab = RocketMQCluster(seed=seed, config=config or None)
    lab.create_topic(ORDER_TOPIC, queues=2)
    dao = OrderDao()
    svc = CreateOrderService(lab.namesrv_addr, dao)
    consumer = DefaultLitePullConsumer("order-consumers", namesrv_addr=lab.namesrv_addr)
    consumer.set_consume_from_where(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(ORDER_TOPIC)
    consumer.start()
    return lab, dao, svc, consumer


def received(consumer, timeout=1_000):
    return [m.get_user_property("orderId") for m in consumer.poll(timeout)]


def sent(lab, api, dst=None):
    return [m for m in lab.network_messages() if m.api == api and not m.is_response and (dst is None or m.dst == dst)]


def test_commit_copies_the_half_message_to_the_real_topic_and_the_consumer_sees_it_once():
    lab, dao, svc, consumer = order_lab()
    assert svc.create_order(ORDER) is True
    lab.run_until_idle()
    assert dao.order_ids() == ["o-1"]
    assert received(consumer) == ["o-1"]
    [half] = lab.half_messages()
    assert half["status"] == "committed" and half["check_times"] == 0
    assert [(op["tag"], op["half_offset"]) for op in lab.op_messages()] == [("d", 0)]
    lab.advance(3 * 60_000)                       # processed: the check service never asks about it
    assert sent(lab, "CHECK_TRANSACTION_STATE") == []
    assert received(consumer) == []


def test_half_message_lives_in_queue_0_of_the_half_topic_with_its_real_topic_in_properties_and_is_invisible():
    lab, dao, svc, consumer = order_lab()
    op = svc.producer.default_mq_producer_impl.begin_send_message_in_transaction(create_message(ORDER), ORDER)
    lab.run_until(lambda: op.stage == "HALF_STORED")
    [stored] = lab.broker.store.queue_messages(RMQ_SYS_TRANS_HALF_TOPIC, 0)
    assert stored.topic == RMQ_SYS_TRANS_HALF_TOPIC and stored.queue_id == 0
    assert stored.get_property(MessageConst.PROPERTY_REAL_TOPIC) == ORDER_TOPIC
    assert stored.get_property(MessageConst.PROPERTY_REAL_QUEUE_ID) == str(op.send_result.message_queue.queue_id)
    assert stored.get_property(MessageConst.PROPERTY_TRANSACTION_PREPARED) == "true"
    assert stored.get_property(MessageConst.PROPERTY_PRODUCER_GROUP) == "myGroup"
    assert lab.topic_messages(ORDER_TOPIC) == []
    assert received(consumer, timeout=0) == []
    with pytest.raises(MQClientException):
        DefaultLitePullConsumer("snoop", namesrv_addr=lab.namesrv_addr).subscribe(RMQ_SYS_TRANS_HALF_TOPIC)
    lab.run_until(lambda: op.done)
    lab.run_until_idle()
    assert received(consumer) == ["o-1"]


def test_end_transaction_is_one_way_and_gets_no_response():
    lab, dao, svc, consumer = order_lab()
    svc.create_order(ORDER)
    lab.run_until_idle()
    ends = [m for m in lab.network_messages() if m.api == "END_TRANSACTION"]
    assert len(ends) == 1 and not ends[0].is_response and ends[0].state == "delivered"


def test_lost_end_transaction_is_repaired_by_the_check_back_and_the_consumer_sees_exactly_one_message():
    lab, dao, svc, consumer = order_lab()
    lab.drop_next("END_TRANSACTION")
    result = svc.producer.send_message_in_transaction(create_message(ORDER), ORDER)
    assert result.local_transaction_state == LocalTransactionState.COMMIT_MESSAGE
    lab.run_until_idle()
    assert dao.order_ids() == ["o-1"]
    assert received(consumer) == []               # the half message is still pending
    assert [t["status"] for t in lab.transactions()] == ["pending"]
    lab.advance(61_000)                            # one transactionCheckInterval
    assert len(sent(lab, "CHECK_TRANSACTION_STATE")) == 1
    assert received(consumer) == ["o-1"]
    lab.advance(5 * 60_000)
    assert received(consumer) == []                # exactly once
    [t] = lab.transactions()
    assert t["status"] == "committed" and t["check_times"] == 1 and t["delivered"] == 1


def test_local_database_failure_rolls_the_message_back_the_consumer_sees_nothing_and_the_db_has_no_order():
    lab, dao, svc, consumer = order_lab()
    dao.fail_next_write = "database disk image is malformed"
    result = svc.producer.send_message_in_transaction(create_message(ORDER), ORDER)
    assert result.local_transaction_state == LocalTransactionState.ROLLBACK_MESSAGE
    lab.run_until_idle()
    assert dao.order_ids() == []
    assert lab.topic_messages(ORDER_TOPIC) == []   # rollback copies nothing ...
    assert [r["status"] for r in lab.half_messages()] == ["rolled back"]
    assert len(lab.op_messages()) == 1             # ... it only marks the half message processed
    lab.advance(3 * 60_000)
    assert sent(lab, "CHECK_TRANSACTION_STATE") == []
    assert received(consumer) == []


def test_a_check_constraint_violation_in_the_db_is_a_local_failure_too():
    lab, dao, svc, consumer = order_lab()
    assert svc.create_order(CreateOrderRequest("o-9", "nothing", 0)) is True     # SEND_OK: the half was stored
    lab.advance(2 * 60_000)
    assert dao.order_ids() == [] and received(consumer) == []
    assert [t["status"] for t in lab.transactions()] == ["rolled back"]


def test_producer_crash_after_the_local_commit_the_check_back_reaches_another_instance_that_finds_the_order():
    lab, dao, svc, consumer = order_lab()
    op = svc.producer.default_mq_producer_impl.begin_send_message_in_transaction(create_message(ORDER), ORDER)
    lab.run_until(lambda: op.stage == "LOCAL_TRANSACTION_DONE")     # the order is in the DB ...
    lab.crash(svc.producer)                                         # ... END_TRANSACTION never leaves
    assert dao.order_ids() == ["o-1"] and sent(lab, "END_TRANSACTION") == []
    restarted = CreateOrderService(lab.namesrv_addr, dao)           # the service comes back: same group
    lab.advance(61_000)
    checks = sent(lab, "CHECK_TRANSACTION_STATE")
    assert [m.dst for m in checks] == [restarted.producer.name]
    assert received(consumer) == ["o-1"]
    assert lab.transactions()[0]["delivered"] == 1


def test_producer_crash_before_the_local_transaction_is_checked_15_times_as_UNKNOW_then_discarded():
    lab, dao, svc, consumer = order_lab()
    op = svc.producer.default_mq_producer_impl.begin_send_message_in_transaction(create_message(ORDER), ORDER)
    lab.run_until(lambda: op.stage == "HALF_STORED")
    lab.crash(svc.producer)                                 # no order was written
    CreateOrderService(lab.namesrv_addr, dao)
    lab.advance(15 * 60_000 + 1_000)
    assert len(sent(lab, "CHECK_TRANSACTION_STATE")) == 15
    assert [t["status"] for t in lab.transactions()] == ["pending"]
    lab.advance(60_000)                                     # the 16th scan gives up
    [t] = lab.transactions()
    assert t["status"] == "discarded" and t["check_times"] == 15 and t["delivered"] == 0
    lab.advance(5 * 60_000)
    assert len(sent(lab, "CHECK_TRANSACTION_STATE")) == 15
    assert dao.order_ids() == [] and received(consumer) == []


def test_transaction_check_max_is_a_broker_setting():
    lab, dao, svc, consumer = order_lab(transactionCheckMax=3, transactionCheckInterval=10_000)
    svc.producer.default_mq_producer_impl.begin_send_message_in_transaction(create_message(ORDER), ORDER)
    lab.run_until(lambda: bool(lab.half_messages()))
    lab.crash(svc.producer)
    CreateOrderService(lab.namesrv_addr, dao)
    lab.advance(60_000)
    assert len(sent(lab, "CHECK_TRANSACTION_STATE")) == 3
    assert lab.transactions()[0]["status"] == "discarded"


def test_slow_local_transaction_returns_UNKNOW_then_the_check_back_commits_it():
    lab, dao, svc, consumer = order_lab()
    dao.insert_takes_ms = 90_000                   # the insert finishes between the first and second check
    result = svc.producer.send_message_in_transaction(create_message(ORDER), ORDER)
    assert result.local_transaction_state == LocalTransactionState.UNKNOW
    lab.advance(1_000)
    assert [m.payload.commit_or_rollback for m in sent(lab, "END_TRANSACTION")] == [0]   # TRANSACTION_NOT_TYPE
    lab.advance(60_000)                            # check #1: no order yet -> UNKNOW
    assert dao.order_ids() == [] and received(consumer) == []
    lab.advance(60_000)                            # the insert finished at 90 s; check #2 -> COMMIT
    assert dao.order_ids() == ["o-1"]
    assert received(consumer) == ["o-1"]
    [t] = lab.transactions()
    assert t["status"] == "committed" and t["check_times"] == 2 and t["delivered"] == 1


def test_no_check_is_sent_while_the_group_has_no_live_producer():
    lab, dao, svc, consumer = order_lab()
    lab.drop_next("END_TRANSACTION")
    svc.create_order(ORDER)
    lab.crash(svc.producer)
    lab.advance(3 * 60_000)
    assert sent(lab, "CHECK_TRANSACTION_STATE") == []
    assert lab.transactions()[0]["check_times"] == 3        # each scan still counted a check
    CreateOrderService(lab.namesrv_addr, dao)
    lab.advance(60_000)
    assert received(consumer) == ["o-1"]


def test_a_paused_producer_can_get_its_transaction_committed_twice_rocketmq_is_at_least_once():
    lab, dao, svc, consumer = order_lab()
    op = svc.producer.default_mq_producer_impl.begin_send_message_in_transaction(create_message(ORDER), ORDER)
    lab.run_until(lambda: op.stage == "HALF_STORED")
    lab.pause(svc.producer, 100_000)              # a long GC pause before the local transaction runs
    lab.advance(101_000)
    lab.run_until_idle()
    got = consumer.poll(1_000)
    assert [m.get_user_property("orderId") for m in got] == ["o-1", "o-1"]
    assert got[0].get_msg_id() == got[1].get_msg_id()        # same UNIQ_KEY: a consumer can deduplicate
    assert dao.order_ids() == ["o-1"]


def test_half_messages_survive_a_broker_restart_and_are_checked_afterwards():
    lab, dao, svc, consumer = order_lab()
    lab.drop_next("END_TRANSACTION")
    svc.create_order(ORDER)
    lab.crash(lab.broker)
    lab.advance(5_000)
    lab.restart(lab.broker)
    lab.advance(65_000)                            # the producer heartbeats again, then the check runs
    assert received(consumer) == ["o-1"]


def test_same_seed_same_trace():
    def run():
        lab, dao, svc, consumer = order_lab(seed=11)
        lab.drop_next("END_TRANSACTION")
        svc.create_order(ORDER)
        lab.advance(61_000)
        return lab.trace.to_jsonl()
    assert run() == run()


# ------------------------------------------------ Kafka's behaviour for the same cases
def kafka_orders(seed=3, transaction_timeout_ms=10_000):
    c = Cluster(brokers=1, seed=seed)
    c.create_topic(ORDER_TOPIC, partitions=1)
    dao = OrderDao()
    return c, dao, KafkaOrderService(c, dao, transaction_timeout_ms=transaction_timeout_ms)


def test_kafka_order_service_commits_both_or_aborts_on_a_db_failure():
    c, dao, svc = kafka_orders()
    assert svc.create_order(ORDER) is True
    dao.fail_next_write = "disk I/O error"
    assert svc.create_order(CreateOrderRequest("o-2", "pen", 3)) is False
    assert dao.order_ids() == ["o-1"]
    assert kafka_committed_orders(c) == ["o-1"]


def test_kafka_lost_end_txn_is_retried_by_the_producer_no_check_back_needed():
    c, dao, svc = kafka_orders(transaction_timeout_ms=60_000)
    svc.begin(ORDER)
    dao.create_order_in_db(ORDER)
    c.drop_next("EndTxn")                  # lost: its connection breaks, the producer notices at once
    t0 = c.now
    svc.producer.commit_transaction(60)    # EndTxn is a request with a response: it is retried
    assert c.now - t0 < 1_000              # no wait for socket.timeout.ms (59.9 s): the disconnect was seen
    assert kafka_committed_orders(c) == ["o-1"]


def test_kafka_has_no_check_back_a_crash_after_the_db_commit_leaves_an_order_without_a_message():
    c, dao, svc = kafka_orders()
    svc.begin(ORDER)
    svc.producer.flush()
    dao.create_order_in_db(ORDER)
    c.crash(svc.producer)                          # before commit_transaction()
    c.advance(20_000)                              # transaction.timeout.ms=10 s: the coordinator aborts
    assert c.transaction_state("order-service")["state"] == "CompleteAbort"
    assert dao.order_ids() == ["o-1"]
    assert kafka_committed_orders(c) == []         # inconsistent: nobody asked the order service


def test_half_topic_picture_colours_each_half_offset_by_its_fate():
    pytest.importorskip("plotly")
    from widgets.rocketmq_views import STATUS_COLOURS, half_topic_figure, message_rows, space_time_figure
    lab, dao, svc, consumer = order_lab()
    svc.create_order(ORDER)                                  # committed
    lab.drop_next("END_TRANSACTION")
    svc.create_order(CreateOrderRequest("o-2", "pen", 3))    # copied by the check, then committed
    lab.advance(61_000)
    fig = half_topic_figure(lab)
    halves = fig.data[0]
    assert list(halves.x) == [0, 1, 2]
    cells = [sh for sh in fig.layout.shapes if sh.type == "rect" and sh.y0 > 1.5]      # the half topic's row
    assert [(sh.x0 + sh.x1) / 2 for sh in cells] == [0, 1, 2]
    assert [sh.fillcolor for sh in cells] == [STATUS_COLOURS[s] for s in ("committed", "copied", "committed")]
    assert all(a.x1 < b.x0 for a, b in zip(cells, cells[1:]))  # neighbours never meet, however wide the picture
    assert list(fig.data[1].x) == [0, 2]                     # op messages sit under the offsets they mark
    rows = message_rows(lab)
    assert [r["state"] for r in rows if r["api"] == "END_TRANSACTION"] == ["delivered", "dropped", "delivered"]
    assert space_time_figure(lab).layout.xaxis.ticktext[:2] == ("producer-1", "broker-a")


def test_the_comparison_pictures_are_read_on_a_projector_without_hovering():
    pytest.importorskip("plotly")
    from widgets.legible import off_picture, too_small, touching
    from widgets.rocketmq_views import half_topic_figure, space_time_figure
    lab, dao, svc, consumer = order_lab()
    svc.create_order(ORDER)
    lab.drop_next("END_TRANSACTION")
    svc.create_order(CreateOrderRequest("o-2", "pen", 3))
    lab.advance(61_000)
    crowded, dao2, svc2, _ = order_lab(seed=10)           # chapter 09's 16 minutes of checks: 16 half offsets
    op = svc2.producer.default_mq_producer_impl.begin_send_message_in_transaction(create_message(ORDER), ORDER)
    crowded.run_until(lambda: op.stage == "HALF_STORED")
    crowded.crash(svc2.producer)
    CreateOrderService(crowded.namesrv_addr, dao2)
    crowded.advance(16 * 60_000)
    assert crowded.transactions()[0]["status"] == "discarded"
    for fig in (half_topic_figure(lab), half_topic_figure(crowded), space_time_figure(lab)):
        assert too_small(fig, 14) == [] and touching(fig) == [] and off_picture(fig) == []
        assert not fig.layout.showlegend or fig.layout.legend.orientation == "h"   # no legend beside the rows


def test_fault_rules_speak_rocketmq_request_codes():
    lab = RocketMQCluster(seed=1)
    with pytest.raises(ValueError):
        lab.drop_next("EndTxn")                      # a Kafka API: not a RocketMQ request code
    lab.drop_next("END_TRANSACTION")
    with pytest.raises(RuntimeError):
        lab.restart(lab.broker)                      # it is running
