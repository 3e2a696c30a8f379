"""RocketMQ's message store (``DefaultMessageStore``): one ``CommitLog`` for every topic, a
``ConsumeQueue`` per (topic, queue id) indexing it, and the ``ConsumerOffsetManager``.

Owns the dispatch rule that makes half messages invisible: a message whose sysFlag says
TRANSACTION_PREPARED or TRANSACTION_ROLLBACK is written to the commit log but never indexed in a
consume queue, so no consumer can reach it.  (A half message is stored with sysFlag
TRANSACTION_NOT_TYPE under RMQ_SYS_TRANS_HALF_TOPIC, so it is indexed there, for the broker's own
check service only.)  Commit log offsets count messages here, not bytes.  The store is the
broker's disk: it survives a broker crash.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .message import MessageExt
from .protocol import MessageSysFlag


@dataclass
class PutMessageResult:
    status: str                      # PUT_OK | ...
    queue_offset: int = -1
    commit_log_offset: int = -1
    msg_id: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "PUT_OK"


class DefaultMessageStore:
    def __init__(self, broker_name: str) -> None:
        self.broker_name = broker_name
        self.commit_log: list[MessageExt] = []
        self.consume_queues: dict[tuple, list[int]] = {}         # (topic, qid) -> commit log offsets
        self.consumer_offsets: dict[tuple, int] = {}             # (group, topic, qid) -> next offset

    # ----------------------------------------------------------------- write
    def put_message(self, inner: MessageExt, now: int) -> PutMessageResult:
        m = inner.copy()
        m.commit_log_offset = len(self.commit_log)
        m.store_timestamp = now
        m.msg_id = f"{self.broker_name}:{m.commit_log_offset:08X}"
        tran = MessageSysFlag.get_transaction_value(m.sys_flag)
        if tran in (MessageSysFlag.TRANSACTION_NOT_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE):
            cq = self.consume_queues.setdefault((m.topic, m.queue_id), [])
            m.queue_offset = len(cq)
            cq.append(m.commit_log_offset)
        else:
            m.queue_offset = inner.queue_offset      # prepared/rolled back: not dispatched
        self.commit_log.append(m)
        return PutMessageResult("PUT_OK", m.queue_offset, m.commit_log_offset, m.msg_id)

    # ------------------------------------------------------------------ read
    def look_message_by_offset(self, commit_log_offset: int) -> Optional[MessageExt]:
        if 0 <= commit_log_offset < len(self.commit_log):
            return self.commit_log[commit_log_offset].copy()
        return None

    def get_message(self, topic: str, queue_id: int, offset: int, max_nums: int = 32) -> list[MessageExt]:
        cq = self.consume_queues.get((topic, queue_id), [])
        return [self.commit_log[clo].copy() for clo in cq[offset:offset + max_nums]]

    def max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return len(self.consume_queues.get((topic, queue_id), []))

    def queue_messages(self, topic: str, queue_id: int) -> list[MessageExt]:
        """Every message indexed in one consume queue, oldest first (for views and tests)."""
        return self.get_message(topic, queue_id, 0, 1 << 30)

    # -------------------------------------------------------- consumer offsets
    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        return self.consumer_offsets.get((group, topic, queue_id), 0)

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.consumer_offsets[(group, topic, queue_id)] = offset
