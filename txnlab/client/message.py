"""``Message`` and ``TopicPartition`` with confluent-kafka's Python surface."""
from __future__ import annotations

from typing import Optional

from ..errors import KafkaError

OFFSET_BEGINNING = -2
OFFSET_END = -1
OFFSET_STORED = -1000
OFFSET_INVALID = -1001

TIMESTAMP_NOT_AVAILABLE = 0
TIMESTAMP_CREATE_TIME = 1
TIMESTAMP_LOG_APPEND_TIME = 2


class TopicPartition:
    __slots__ = ("topic", "partition", "offset", "metadata", "leader_epoch", "error")

    def __init__(self, topic: str, partition: int = -1, offset: int = OFFSET_INVALID,
                 metadata: Optional[str] = None, leader_epoch: Optional[int] = None) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.metadata = metadata
        self.leader_epoch = leader_epoch
        self.error: Optional[KafkaError] = None

    def __repr__(self) -> str:
        err = f",error={self.error!r}" if self.error else ""
        return f"TopicPartition{{topic={self.topic},partition={self.partition},offset={self.offset}{err}}}"

    def __eq__(self, other) -> bool:
        return (isinstance(other, TopicPartition) and self.topic == other.topic
                and self.partition == other.partition and self.offset == other.offset)

    def __hash__(self) -> int:
        return hash((self.topic, self.partition))

    def __lt__(self, other) -> bool:
        return (self.topic, self.partition) < (other.topic, other.partition)


class Message:
    __slots__ = ("_topic", "_partition", "_offset", "_key", "_value", "_headers", "_timestamp",
                 "_error", "_latency")

    def __init__(self, topic, partition, offset, key, value, headers=None, timestamp=(0, 0),
                 error: Optional[KafkaError] = None, latency: Optional[float] = None) -> None:
        self._topic = topic
        self._partition = partition
        self._offset = offset
        self._key = key
        self._value = value
        self._headers = headers
        self._timestamp = timestamp
        self._error = error
        self._latency = latency

    def topic(self):
        return self._topic

    def partition(self):
        return self._partition

    def offset(self):
        return self._offset

    def key(self):
        return self._key

    def value(self):
        return self._value

    def headers(self):
        return list(self._headers) if self._headers else None

    def timestamp(self):
        return self._timestamp

    def error(self):
        return self._error

    def latency(self):
        return self._latency

    def set_value(self, v) -> None:
        self._value = v

    def set_key(self, k) -> None:
        self._key = k

    def __len__(self) -> int:
        return len(self._value) if self._value is not None else 0

    def __repr__(self) -> str:
        return (f"Message(topic={self._topic!r}, partition={self._partition}, offset={self._offset}, "
                f"key={self._key!r}, value={self._value!r}{', error=' + repr(self._error) if self._error else ''})")
