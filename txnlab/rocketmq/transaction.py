"""RocketMQ's broker-side transactional messages: half messages, op messages and the check-back.

Owns, under RocketMQ's names:
``TransactionalMessageBridge`` (parseHalfMessageInner: the real topic and queue go into the
properties REAL_TOPIC / REAL_QID and the message is stored in RMQ_SYS_TRANS_HALF_TOPIC queue 0;
op messages tagged "d" in RMQ_SYS_TRANS_OP_HALF_TOPIC whose body is the half message's offset;
putBackHalfMsgQueue), ``TransactionalMessageServiceImpl`` (prepareMessage, commitMessage,
rollbackMessage, deletePrepareMessage and ``check``: the scan of the half queue from the broker's
own consume offset, skipping offsets named by op messages), ``TransactionalMessageCheckService``
(wakes every transactionCheckInterval) and ``DefaultTransactionalMessageCheckListener``
(resolveHalfMsg: CHECK_TRANSACTION_STATE to a live producer of the group; resolveDiscardMsg:
after transactionCheckMax checks the half message is given up and parked in
TRANS_CHECK_MAX_TIME_TOPIC, as RocketMQ has done since 4.5.2; 4.3 to 4.5.1 only logged it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..kernel.lab import send_oneway
from .message import MessageExt
from .protocol import (CID_SYS_RMQ_TRANS, REMOVETAG, RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC,
                       TRANS_CHECK_MAX_TIME_TOPIC, CheckTransactionStateRequestHeader, MessageConst, MessageSysFlag,
                       ResponseCode)
from .store import PutMessageResult


@dataclass
class OperationResult:
    prepare_message: Optional[MessageExt]
    response_code: int
    response_remark: str = ""


class TransactionalMessageBridge:
    """The bridge between the transactional service and the message store."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self.store = broker.store

    def put_half_message(self, inner: MessageExt) -> PutMessageResult:
        return self.store.put_message(self.parse_half_message_inner(inner), self.broker.kernel.now)

    @staticmethod
    def parse_half_message_inner(inner: MessageExt) -> MessageExt:
        m = inner.copy()
        m.properties[MessageConst.PROPERTY_REAL_TOPIC] = inner.topic
        m.properties[MessageConst.PROPERTY_REAL_QUEUE_ID] = str(inner.queue_id)
        m.sys_flag = MessageSysFlag.reset_transaction_value(m.sys_flag, MessageSysFlag.TRANSACTION_NOT_TYPE)
        m.topic = RMQ_SYS_TRANS_HALF_TOPIC
        m.queue_id = 0
        return m

    def put_op_message(self, half: MessageExt, tag: str) -> PutMessageResult:
        op = MessageExt(RMQ_SYS_TRANS_OP_HALF_TOPIC, str(half.queue_offset).encode(),
                        {MessageConst.PROPERTY_TAGS: tag}, queue_id=half.queue_id,
                        born_timestamp=self.broker.kernel.now, born_host=self.broker.name)
        return self.store.put_message(op, self.broker.kernel.now)

    def put_back_half_msg(self, half: MessageExt) -> PutMessageResult:
        """renewHalfMessageInner: the same message (same born time, updated check count) at the queue's end."""
        m = half.copy()
        m.topic, m.queue_id = RMQ_SYS_TRANS_HALF_TOPIC, 0
        return self.store.put_message(m, self.broker.kernel.now)

    def get_half_message(self, offset: int) -> Optional[MessageExt]:
        got = self.store.get_message(RMQ_SYS_TRANS_HALF_TOPIC, 0, offset, 1)
        return got[0] if got else None

    def get_op_messages(self, offset: int) -> list[MessageExt]:
        return self.store.get_message(RMQ_SYS_TRANS_OP_HALF_TOPIC, 0, offset, 1 << 30)

    def fetch_consume_offset(self, topic: str) -> int:
        return self.store.query_offset(CID_SYS_RMQ_TRANS, topic, 0)

    def update_consume_offset(self, topic: str, offset: int) -> None:
        self.store.commit_offset(CID_SYS_RMQ_TRANS, topic, 0, offset)


class TransactionalMessageServiceImpl:
    def __init__(self, bridge: TransactionalMessageBridge) -> None:
        self.bridge = bridge
        self.broker = bridge.broker

    def narrate(self, text: str) -> None:
        self.broker.narrate(text)

    # ------------------------------------------------------- prepare / end
    def prepare_message(self, inner: MessageExt) -> PutMessageResult:
        return self.bridge.put_half_message(inner)

    def _get_half_message_by_offset(self, commit_log_offset: int) -> OperationResult:
        m = self.bridge.store.look_message_by_offset(commit_log_offset)
        if m is None or m.topic != RMQ_SYS_TRANS_HALF_TOPIC:
            return OperationResult(None, ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        return OperationResult(m, ResponseCode.SUCCESS)

    def commit_message(self, header) -> OperationResult:
        return self._get_half_message_by_offset(header.commit_log_offset)

    def rollback_message(self, header) -> OperationResult:
        return self._get_half_message_by_offset(header.commit_log_offset)

    def delete_prepare_message(self, half: MessageExt) -> bool:
        """Mark the half message processed: an op message tagged "d" whose body is its half offset."""
        r = self.bridge.put_op_message(half, REMOVETAG)
        self.narrate(f"op message (tag {REMOVETAG!r}, body {half.queue_offset}) written to "
                     f"{RMQ_SYS_TRANS_OP_HALF_TOPIC} at offset {r.queue_offset}: half offset {half.queue_offset} "
                     f"is processed and will never be checked again")
        return r.ok

    # ----------------------------------------------------------------- check
    def check(self, transaction_timeout: int, transaction_check_max: int, listener) -> None:
        now = self.broker.kernel.now
        start_time = now
        half_offset = self.bridge.fetch_consume_offset(RMQ_SYS_TRANS_HALF_TOPIC)
        op_offset = self.bridge.fetch_consume_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC)
        remove_map, done_op_offset = self._fill_op_remove_map(op_offset, half_offset)
        self.narrate(f"TransactionalMessageCheckService scans {RMQ_SYS_TRANS_HALF_TOPIC} queue 0 from offset "
                     f"{half_offset} (op queue from offset {op_offset}; "
                     f"{len(remove_map)} half offset(s) already processed)")
        i = new_offset = half_offset
        checked = discarded = 0
        # Copies this scan puts back reach the consume queue only after it (ReputMessageService
        # dispatches asynchronously), so the scan ends at the queue's end as it was when it began.
        end = self.bridge.store.max_offset_in_queue(RMQ_SYS_TRANS_HALF_TOPIC, 0)
        while i < end:
            if i in remove_map:
                done_op_offset.append(remove_map.pop(i))
                self.narrate(f"half offset {i}: an op message says it was committed or rolled back: skip it")
            else:
                m = self.bridge.get_half_message(i)
                if m is None:
                    break
                if self._is_need_discard(m, transaction_check_max):
                    listener.resolve_discard_msg(m)
                    discarded += 1
                    new_offset = i = i + 1
                    continue
                if m.store_timestamp >= start_time:
                    break      # stored by this very scan: check it next time
                age = now - m.born_timestamp
                if 0 <= age < transaction_timeout:
                    self.narrate(f"half offset {i} is {age}ms old, younger than transactionTimeOut="
                                 f"{transaction_timeout}ms: the local transaction may still be running; stop here")
                    break
                old = i
                put = self.bridge.put_back_half_msg(m)
                m.queue_offset, m.commit_log_offset, m.msg_id = put.queue_offset, put.commit_log_offset, put.msg_id
                self.narrate(f"half offset {old} ({m.uniq_key}) has no op message after {age}ms: it is copied to "
                             f"half offset {m.queue_offset} with {MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES}="
                             f"{m.get_property(MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES)}, and the producer "
                             f"group is asked")
                listener.resolve_half_msg(m)
                checked += 1
            new_offset = i = i + 1
        if new_offset != half_offset:
            self.bridge.update_consume_offset(RMQ_SYS_TRANS_HALF_TOPIC, new_offset)
        new_op = self._calculate_op_offset(done_op_offset, op_offset)
        if new_op != op_offset:
            self.bridge.update_consume_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, new_op)
        if checked or discarded:
            cur = self.broker.kernel.current
            if cur is not None:
                cur.background = False      # a scan that acted is part of the story, not background noise
        self.narrate(f"scan done: {checked} check(s) sent, {discarded} discarded; the check service's offsets "
                     f"are now half {new_offset}, "
                     f"op {new_op}")

    def _fill_op_remove_map(self, op_offset: int, half_offset: int):
        remove_map: dict[int, int] = {}
        done: list[int] = []
        for op in self.bridge.get_op_messages(op_offset):
            q = int(op.body.decode())
            if op.get_tags() == REMOVETAG:
                if q < half_offset:
                    done.append(op.queue_offset)
                else:
                    remove_map[q] = op.queue_offset
        return remove_map, done

    @staticmethod
    def _calculate_op_offset(done: list[int], old: int) -> int:
        new = old
        for off in sorted(done):
            if off == new:
                new += 1
            else:
                break
        return new

    def _is_need_discard(self, m: MessageExt, check_max: int) -> bool:
        times = m.get_property(MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES)
        n = 1
        if times is not None:
            n = int(times)
            if n >= check_max:
                return True
            n += 1
        m.put_user_property(MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES, n)
        return False


class DefaultTransactionalMessageCheckListener:
    """What the check service does with a half message: ask the group, or give it up."""

    def __init__(self, broker) -> None:
        self.broker = broker

    def resolve_half_msg(self, half: MessageExt) -> None:
        b = self.broker
        group = half.get_property(MessageConst.PROPERTY_PRODUCER_GROUP)
        m = half.copy()        # the producer sees the message under its real topic and queue
        m.topic = half.get_property(MessageConst.PROPERTY_REAL_TOPIC)
        m.queue_id = int(half.get_property(MessageConst.PROPERTY_REAL_QUEUE_ID))
        header = CheckTransactionStateRequestHeader(half.queue_offset, half.commit_log_offset, half.uniq_key,
                                                    half.uniq_key, m)
        channel = b.producer_manager.get_available_channel(group)
        if channel is None:
            b.narrate(f"no live producer of group {group!r} is connected: the check of {half.uniq_key} cannot be "
                      f"sent (\"Check transaction failed, channel is null\"); the half message stays and is "
                      f"checked again at the next scan")
            return
        b.narrate(f"CHECK_TRANSACTION_STATE for {half.uniq_key} goes one-way to {channel} (a producer of group "
                  f"{group!r}, not necessarily the one that sent it)")
        send_oneway(b, channel, header)

    def resolve_discard_msg(self, half: MessageExt) -> None:
        b = self.broker
        times = half.get_property(MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES)
        m = half.copy()
        m.topic, m.queue_id = TRANS_CHECK_MAX_TIME_TOPIC, 0
        r = b.store.put_message(m, b.kernel.now)
        b.narrate(f"half offset {half.queue_offset} ({half.uniq_key}) was already checked {times} time(s) "
                  f"(transactionCheckMax={b.config['transactionCheckMax']}): it is discarded, never delivered, "
                  f"and parked in {TRANS_CHECK_MAX_TIME_TOPIC} at offset {r.queue_offset}")


class TransactionalMessageCheckService:
    """The broker's timer: every transactionCheckInterval, check the half queue."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self.timer = None

    def start(self) -> None:
        self.timer = self.broker.set_timer(self.broker.config["transactionCheckInterval"],
                                           "TransactionalMessageCheckService", self._on_wait_end, background=True)

    def _on_wait_end(self) -> None:
        b = self.broker
        b.transactional_message_service.check(b.config["transactionTimeOut"], b.config["transactionCheckMax"],
                                              b.check_listener)
        self.start()
