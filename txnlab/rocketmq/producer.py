"""RocketMQ's transactional producer: ``TransactionMQProducer`` over ``DefaultMQProducerImpl``, and
the ``TransactionListener`` an application implements.

``send_message_in_transaction(msg, arg)`` follows DefaultMQProducerImpl.sendMessageInTransaction:
mark the message TRAN_MSG=true and PGROUP=<group>, send it (SEND_MESSAGE_V2; the broker keeps it as a
half message), and only if the send was SEND_OK run ``execute_local_transaction(msg, arg)``; then
tell the broker the outcome with a ONE-WAY END_TRANSACTION (COMMIT / ROLLBACK / NOT type for
UNKNOW).  One-way means the producer never learns whether the broker got it: the broker's check
service (CHECK_TRANSACTION_STATE -> ``check_local_transaction(msg)``) is the safety net.

In the simulation the calling thread's three moves are three steps of the producer process
(the SEND_MESSAGE_V2 response arrives; ``executeLocalTransaction`` runs; ``endTransaction`` sends),
so a crash or a pause can fall between any two of them.
"""
from __future__ import annotations

from enum import Enum
from typing import Optional

from ..kernel.lab import send_oneway
from .client import ExecutorService
from .message import (LocalTransactionState, Message, MessageQueue, MQClientException, SendResult, SendStatus,
                      TransactionSendResult)
from .protocol import (SYSTEM_TOPICS, EndTransactionRequestHeader, MessageConst, MessageSysFlag, ResponseCode,
                       SendMessageRequestHeaderV2)

SEND_MSG_TIMEOUT = 3_000
RETRY_TIMES_WHEN_SEND_FAILED = 2
TRANSACTION_ID_PROPERTY = "__transactionId__"


class ServiceState(Enum):
    CREATE_JUST = "CREATE_JUST"
    RUNNING = "RUNNING"
    SHUTDOWN_ALREADY = "SHUTDOWN_ALREADY"


class TransactionListener:
    """Implement both methods.  ``execute_local_transaction`` runs the local transaction right after
    the half message is stored; ``check_local_transaction`` answers the broker's check-back and must
    find the answer in durable state (the database), since it may run in another process of the group."""

    def execute_local_transaction(self, msg: Message, arg) -> LocalTransactionState:
        raise NotImplementedError

    def check_local_transaction(self, msg) -> LocalTransactionState:
        raise NotImplementedError


_END_TYPE = {LocalTransactionState.COMMIT_MESSAGE: MessageSysFlag.TRANSACTION_COMMIT_TYPE,
             LocalTransactionState.ROLLBACK_MESSAGE: MessageSysFlag.TRANSACTION_ROLLBACK_TYPE,
             LocalTransactionState.UNKNOW: MessageSysFlag.TRANSACTION_NOT_TYPE}


class TransactionSendOp:
    """One sendMessageInTransaction call in progress: its stage is visible between steps."""

    def __init__(self, msg: Message, arg) -> None:
        self.msg = msg
        self.arg = arg
        self.stage = "SEND_MESSAGE_V2"   # -> HALF_STORED -> LOCAL_TRANSACTION_DONE -> END_TRANSACTION_SENT | FAILED
        self.send_result: Optional[SendResult] = None
        self.local_transaction_state: Optional[LocalTransactionState] = None
        self.local_exception: Optional[BaseException] = None
        self.result: Optional[TransactionSendResult] = None
        self.error: Optional[MQClientException] = None
        self.attempts = 0

    @property
    def done(self) -> bool:
        return self.stage in ("END_TRANSACTION_SENT", "FAILED")


class DefaultMQProducerImpl:
    def __init__(self, producer: "TransactionMQProducer") -> None:
        self.p = producer
        self.service_state = ServiceState.CREATE_JUST
        self.client = None
        self.ops: list[TransactionSendOp] = []
        self._send_which_queue = 0
        self._uniq = 0

    # --------------------------------------------------------------- helpers
    @property
    def kernel(self):
        return self.p.lab.kernel

    def narrate(self, text: str) -> None:
        self.kernel.narrate(text)

    def _create_uniq_id(self) -> str:
        self._uniq += 1
        return f"7F0000{self.p.instance:02X}{self._uniq:08X}"

    # ------------------------------------------------------------- lifecycle
    def start(self) -> None:
        if self.service_state != ServiceState.CREATE_JUST:
            raise MQClientException(f"The producer service state not OK, maybe started once, {self.service_state.name}")
        lab = self.p.lab
        self.client = lab.new_client_instance(lab.next_client_name("producer"))
        self.client.producer_table[self.p.producer_group] = self
        self.p.node = self.client
        lab.note(self.client.name,
                 f"{self.client.name} starts TransactionMQProducer of group {self.p.producer_group!r}")
        self.client.start()
        ok = self.kernel.run_until(lambda: self.client.heartbeats_acked > 0 or self.client.crashed, 10_000)
        if not ok:
            raise MQClientException("the producer could not reach any broker")
        self.service_state = ServiceState.RUNNING

    def shutdown(self) -> None:
        self.service_state = ServiceState.SHUTDOWN_ALREADY

    def on_process_crash(self) -> None:
        for op in self.ops:
            if not op.done:
                op.stage = "FAILED"
                op.error = MQClientException(f"{self.client.name}'s process crashed during sendMessageInTransaction")

    # ---------------------------------------------------- send in transaction
    def send_message_in_transaction(self, msg: Message, arg=None) -> TransactionSendResult:
        op = self.begin_send_message_in_transaction(msg, arg)
        self.kernel.run_until(lambda: op.done or self.client.crashed)
        if op.error is not None:
            raise op.error
        if not op.done:
            raise MQClientException(f"{self.client.name}'s process crashed during sendMessageInTransaction")
        return op.result

    def begin_send_message_in_transaction(self, msg: Message, arg=None) -> TransactionSendOp:
        """Start sendMessageInTransaction and return at once; the steps that follow carry it on."""
        if self.service_state != ServiceState.RUNNING:
            raise MQClientException(f"The producer service state not OK, {self.service_state.name}")
        if self.client.crashed:
            raise MQClientException(f"{self.client.name}'s process has crashed")
        if self.p.transaction_listener is None:
            raise MQClientException("TransactionListener is null")
        if not isinstance(msg, Message) or not msg.topic:
            raise MQClientException("the message is null or has no topic")
        if msg.topic in SYSTEM_TOPICS:
            raise MQClientException(f"The topic[{msg.topic}] is conflict with system topic.")
        msg.properties[MessageConst.PROPERTY_TRANSACTION_PREPARED] = "true"
        msg.properties[MessageConst.PROPERTY_PRODUCER_GROUP] = self.p.producer_group
        uniq = msg.properties.setdefault(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, self._create_uniq_id())
        op = TransactionSendOp(msg, arg)
        self.ops.append(op)
        self.p.lab.note(self.client.name, f"{self.client.name} calls sendMessageInTransaction(topic {msg.topic}, "
                                          f"UNIQ_KEY {uniq})")
        self._send(op)
        return op

    def _send(self, op: TransactionSendOp) -> None:
        route = self.client.topic_route_table.get(op.msg.topic)
        if route is None:
            def routed(r):
                if r is None:
                    self._fail(op, f"No route info of this topic: {op.msg.topic}")
                else:
                    self._send(op)
            self.client.update_topic_route(op.msg.topic, routed)
            return
        queues = [MessageQueue(op.msg.topic, b, q) for b, n in route.queue_datas for q in range(n)]
        mq = queues[self._send_which_queue % len(queues)]
        self._send_which_queue += 1
        op.attempts += 1
        m = op.msg
        req = SendMessageRequestHeaderV2(self.p.producer_group, m.topic, mq.queue_id,
                                         MessageSysFlag.TRANSACTION_PREPARED_TYPE, self.kernel.now, self.client.name,
                                         tuple(m.properties.items()), m.body)
        self.client.send_request(mq.broker_name, req, lambda resp, err: self._on_send_response(op, mq, resp, err),
                                 timeout_ms=SEND_MSG_TIMEOUT)

    def _on_send_response(self, op, mq, resp, err) -> None:
        if err is not None:
            if op.attempts < 1 + RETRY_TIMES_WHEN_SEND_FAILED:
                self.narrate(f"{self.client.name}: SEND_MESSAGE_V2 failed ({err.name}); retrying "
                             f"(attempt {op.attempts + 1} of {1 + RETRY_TIMES_WHEN_SEND_FAILED})")
                self._send(op)
            else:
                self._fail(op, f"send message Exception: {err.name} after {op.attempts} attempts")
            return
        if resp.code != ResponseCode.SUCCESS:
            self._fail(op, f"send message Exception: {ResponseCode.name(resp.code)}: {resp.remark}", resp.code)
            return
        uniq = op.msg.get_property(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        op.send_result = SendResult(SendStatus.SEND_OK, uniq, mq, resp.queue_offset, resp.transaction_id, resp.msg_id,
                                    resp.commit_log_offset)
        op.stage = "HALF_STORED"
        self.narrate(f"{self.client.name}: the half message is stored (SEND_OK, half offset {resp.queue_offset}); "
                     f"next the local transaction runs")
        self.client.set_timer(0, "executeLocalTransaction", lambda: self._execute_local_transaction(op))

    def _fail(self, op, text: str, code: int = -1) -> None:
        op.stage = "FAILED"
        op.error = MQClientException(text, code)
        self.narrate(f"{self.client.name}: sendMessageInTransaction fails: {text}; no local transaction runs")

    def _execute_local_transaction(self, op: TransactionSendOp) -> None:
        msg, sr = op.msg, op.send_result
        if sr.transaction_id is not None:
            msg.put_user_property(TRANSACTION_ID_PROPERTY, sr.transaction_id)
        msg.transaction_id = msg.get_property(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        state = LocalTransactionState.UNKNOW
        try:
            state = self.p.transaction_listener.execute_local_transaction(msg, op.arg)
            if state is None:
                state = LocalTransactionState.UNKNOW
        except Exception as e:      # executeLocalTransactionBranch exception: the outcome is unknown
            op.local_exception = e
            state = LocalTransactionState.UNKNOW
            self.narrate(f"{self.client.name}: executeLocalTransaction threw {type(e).__name__}: {e} -> UNKNOW")
        op.local_transaction_state = state
        op.stage = "LOCAL_TRANSACTION_DONE"
        self.narrate(f"{self.client.name}: executeLocalTransaction returned {state.value}")
        self.client.set_timer(0, "endTransaction", lambda: self._end_transaction(op))

    def _end_transaction(self, op: TransactionSendOp) -> None:
        sr = op.send_result
        state = op.local_transaction_state
        h = EndTransactionRequestHeader(self.p.producer_group, sr.queue_offset, sr.commit_log_offset, _END_TYPE[state],
                                        False, sr.msg_id, op.msg.transaction_id,
                                        str(op.local_exception) if op.local_exception else "")
        self.narrate(f"{self.client.name}: END_TRANSACTION ({MessageSysFlag.name(h.commit_or_rollback)}) goes one-way "
                     f"to {sr.message_queue.broker_name}: no answer will come back")
        send_oneway(self.client, sr.message_queue.broker_name, h)
        op.result = TransactionSendResult(sr.send_status, sr.msg_id, sr.message_queue, sr.queue_offset,
                                          sr.transaction_id, sr.offset_msg_id, sr.commit_log_offset, state)
        op.stage = "END_TRANSACTION_SENT"

    # ------------------------------------------------------------ check-back
    def check_transaction_state(self, broker: str, header) -> None:
        msg = header.message_ext
        state = LocalTransactionState.UNKNOW
        exc = None
        try:
            state = self.p.transaction_listener.check_local_transaction(msg) or LocalTransactionState.UNKNOW
        except Exception as e:
            exc = e
            self.narrate(f"{self.client.name}: checkLocalTransaction threw {type(e).__name__}: {e} -> UNKNOW")
        self.narrate(f"{self.client.name}: checkLocalTransaction({msg.uniq_key}) returned {state.value}")
        h = EndTransactionRequestHeader(self.p.producer_group, header.tran_state_table_offset, header.commit_log_offset,
                                        _END_TYPE[state], True, msg.uniq_key, header.transaction_id,
                                        str(exc) if exc else "")
        send_oneway(self.client, broker, h)


class TransactionMQProducer:
    """RocketMQ's transactional producer (org.apache.rocketmq.client.producer.TransactionMQProducer)."""

    def __init__(self, producer_group: str, namesrv_addr: Optional[str] = None) -> None:
        if not producer_group:
            raise MQClientException("producerGroup can not be null")
        self.producer_group = producer_group
        self.namesrv_addr = namesrv_addr
        self.transaction_listener: Optional[TransactionListener] = None
        self.default_mq_producer_impl = DefaultMQProducerImpl(self)
        self.lab = None
        self.node = None
        self.instance = 0

    def __repr__(self) -> str:
        where = self.node.name if self.node else "(not started)"
        return f"<TransactionMQProducer group={self.producer_group!r} {where}>"

    def set_namesrv_addr(self, addr: str) -> None:
        self.namesrv_addr = addr

    def set_transaction_listener(self, listener: TransactionListener) -> None:
        self.transaction_listener = listener

    def get_transaction_listener(self) -> Optional[TransactionListener]:
        return self.transaction_listener

    def get_executor_service(self) -> ExecutorService:
        if self.node is None:
            raise MQClientException("start() the producer first")
        return ExecutorService(self.node)

    def start(self) -> None:
        from .cluster import RocketMQCluster
        self.lab = RocketMQCluster.lookup(self.namesrv_addr)
        self.instance = self.lab.next_instance()
        self.default_mq_producer_impl.start()

    def shutdown(self) -> None:
        self.default_mq_producer_impl.shutdown()

    def send_message_in_transaction(self, msg: Message, arg=None) -> TransactionSendResult:
        return self.default_mq_producer_impl.send_message_in_transaction(msg, arg)

    @property
    def name(self) -> str:
        return self.node.name if self.node else ""
