"""RocketMQ's message types as a user meets them: ``Message`` (what a producer sends),
``MessageExt`` (a stored message, as the broker and consumers see it), ``MessageQueue``,
``SendStatus`` / ``SendResult`` / ``TransactionSendResult``, ``LocalTransactionState``
(COMMIT_MESSAGE, ROLLBACK_MESSAGE and RocketMQ's own spelling UNKNOW) and ``MQClientException``.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional

from .protocol import MessageConst


class LocalTransactionState(Enum):
    """What the local transaction decided (org.apache.rocketmq.client.producer.LocalTransactionState).
    UNKNOW is RocketMQ's spelling: "not decided yet, ask me again later"."""
    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


class SendStatus(Enum):
    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


class MQClientException(Exception):
    """A client-side failure (org.apache.rocketmq.client.exception.MQClientException)."""

    def __init__(self, message: str, response_code: int = -1) -> None:
        super().__init__(message)
        self.response_code = response_code

    def get_error_message(self) -> str:
        return str(self)


@dataclass(frozen=True)
class MessageQueue:
    topic: str
    broker_name: str
    queue_id: int

    def __str__(self) -> str:
        return f"{self.topic}@{self.broker_name}:{self.queue_id}"


class Message:
    """A message to send: topic, body, tags, keys and properties (system and user properties
    share one map, as in RocketMQ)."""

    def __init__(self, topic: str, body, tags: str = "", keys: str = "") -> None:
        if isinstance(body, str):
            body = body.encode("utf-8")
        self.topic = topic
        self.body: bytes = body
        self.flag = 0
        self.properties: dict[str, str] = {}
        self.transaction_id: Optional[str] = None
        if tags:
            self.properties[MessageConst.PROPERTY_TAGS] = tags
        if keys:
            self.properties[MessageConst.PROPERTY_KEYS] = keys

    # RocketMQ's accessors, in Python spelling
    def get_topic(self) -> str:
        return self.topic

    def get_body(self) -> bytes:
        return self.body

    def get_tags(self) -> Optional[str]:
        return self.properties.get(MessageConst.PROPERTY_TAGS)

    def get_keys(self) -> Optional[str]:
        return self.properties.get(MessageConst.PROPERTY_KEYS)

    def get_property(self, name: str) -> Optional[str]:
        return self.properties.get(name)

    def put_user_property(self, name: str, value) -> None:
        self.properties[name] = str(value)

    def get_user_property(self, name: str) -> Optional[str]:
        return self.properties.get(name)

    def get_transaction_id(self) -> Optional[str]:
        return self.transaction_id

    def __repr__(self) -> str:
        return f"Message(topic={self.topic!r}, body={self.body!r}, properties={self.properties})"


class MessageExt(Message):
    """A message as stored: where (queue id, queue offset, commit log offset), when, and its sysFlag."""

    def __init__(self, topic: str, body: bytes, properties: dict, queue_id: int = 0, sys_flag: int = 0,
                 born_timestamp: int = 0, born_host: str = "") -> None:
        super().__init__(topic, body)
        self.properties = dict(properties)
        self.queue_id = queue_id
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.born_host = born_host
        self.store_timestamp = 0
        self.queue_offset = -1
        self.commit_log_offset = -1
        self.msg_id = ""                    # offsetMsgId: store host + commit log offset
        self.prepared_transaction_offset = 0
        self.reconsume_times = 0
        self.transaction_id = properties.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    def copy(self) -> "MessageExt":
        m = MessageExt(self.topic, self.body, self.properties, self.queue_id, self.sys_flag, self.born_timestamp,
                       self.born_host)
        for k in ("store_timestamp", "queue_offset", "commit_log_offset", "msg_id", "prepared_transaction_offset",
                  "reconsume_times", "transaction_id", "flag"):
            setattr(m, k, getattr(self, k))
        return m

    @property
    def uniq_key(self) -> Optional[str]:
        return self.properties.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    def get_msg_id(self) -> Optional[str]:
        """For a consumer, getMsgId() is the client-side unique id (UNIQ_KEY)."""
        return self.uniq_key or self.msg_id

    def get_queue_offset(self) -> int:
        return self.queue_offset

    def get_queue_id(self) -> int:
        return self.queue_id

    def __repr__(self) -> str:
        return (f"MessageExt(topic={self.topic!r}, queue={self.queue_id}, offset={self.queue_offset}, "
                f"body={self.body!r}, UNIQ_KEY={self.uniq_key})")


@dataclass
class SendResult:
    send_status: SendStatus
    msg_id: str                      # UNIQ_KEY
    message_queue: Optional[MessageQueue]
    queue_offset: int
    transaction_id: Optional[str] = None
    offset_msg_id: str = ""
    commit_log_offset: int = -1      # decoded from offsetMsgId in RocketMQ; carried plainly here


@dataclass
class TransactionSendResult(SendResult):
    local_transaction_state: Optional[LocalTransactionState] = None
