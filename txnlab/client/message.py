"""``Message`` and ``TopicPartition`` with confluent-kafka's Python surface.

``TopicPartition`` equals, orders and hashes by (topic, partition), as confluent-kafka's does; its
``leader_epoch`` is None when unknown (-1).  ``Message`` equals another with the same topic, partition,
offset, key, value, headers, error, timestamp and leader epoch, and is not hashable, as in confluent-kafka.
"""
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
    """TopicPartition(topic, [partition], [offset], [metadata], [leader_epoch])"""
    __slots__ = ("topic", "partition", "offset", "metadata", "_leader_epoch", "error")

    def __init__(self, topic: str, partition: int = -1, offset: int = OFFSET_INVALID,
                 metadata: Optional[str] = None, leader_epoch: Optional[int] = None) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.metadata = metadata
        self._leader_epoch = None if leader_epoch is None or leader_epoch < 0 else leader_epoch
        self.error: Optional[KafkaError] = None

    @property
    def leader_epoch(self) -> Optional[int]:
        return self._leader_epoch

    def __repr__(self) -> str:
        return (f"TopicPartition{{topic={self.topic},partition={self.partition},offset={self.offset},"
                f"leader_epoch={self._leader_epoch},error={self.error!r}}}")

    __str__ = __repr__

    def _key(self) -> tuple:
        return (self.topic, self.partition)

    def __eq__(self, other) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return self._key() == other._key()

    def __ne__(self, other) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return self._key() != other._key()

    def __lt__(self, other) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return self._key() < other._key()

    def __le__(self, other) -> bool:
        return self == other or self < other

    def __gt__(self, other) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return self._key() > other._key()

    def __ge__(self, other) -> bool:
        return self == other or self > other

    def __hash__(self) -> int:
        return hash(self._key())


class Message:
    """Message([topic], [partition], [offset], [key], [value], [headers], [error], [timestamp], [latency],
    [leader_epoch]): a consumed or delivered message, or an event (``error()`` is not None)."""
    __slots__ = ("_topic", "_partition", "_offset", "_key", "_value", "_headers", "_timestamp",
                 "_error", "_latency", "_leader_epoch")

    def __init__(self, topic=None, partition=None, offset=None, key=None, value=None, headers=None,
                 error: Optional[KafkaError] = None, timestamp=(TIMESTAMP_NOT_AVAILABLE, 0),
                 latency: Optional[float] = None, leader_epoch: Optional[int] = None) -> None:
        self._topic = topic
        self._partition = partition
        self._offset = offset
        self._key = key
        self._value = value
        self._headers = headers
        self._error = error
        self._timestamp = tuple(timestamp) if timestamp is not None else (TIMESTAMP_NOT_AVAILABLE, 0)
        self._latency = None if latency is None or latency < 0 else latency
        self._leader_epoch = None if leader_epoch is None or leader_epoch < 0 else leader_epoch

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
        if self._headers is None or isinstance(self._headers, dict):
            return self._headers
        return list(self._headers) if self._headers else None

    def timestamp(self) -> tuple:
        """(type, ms): TIMESTAMP_CREATE_TIME / TIMESTAMP_LOG_APPEND_TIME / TIMESTAMP_NOT_AVAILABLE."""
        return self._timestamp

    def error(self) -> Optional[KafkaError]:
        return self._error

    def latency(self) -> Optional[float]:
        """Produce latency in seconds (delivery reports), None otherwise."""
        return self._latency

    def leader_epoch(self) -> Optional[int]:
        return self._leader_epoch

    def delivery_count(self) -> Optional[int]:
        return None              # share consumers only (KIP-932), which the lab does not have

    def deserialized_key(self):
        return self._key

    def deserialized_value(self):
        return self._value

    def set_headers(self, headers) -> None:
        self._headers = headers

    def set_value(self, value) -> None:
        self._value = value

    def set_key(self, key) -> None:
        self._key = key

    def set_topic(self, topic) -> None:
        self._topic = topic

    def set_error(self, error) -> None:
        self._error = error

    def __len__(self) -> int:
        return len(self._value) if self._value is not None else 0

    def _fields(self) -> tuple:
        return (self._topic, self._partition, self._offset, self._key, self._value, self._headers,
                self._error, self._timestamp[1], self._leader_epoch)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]   # unhashable, as confluent-kafka's Message

    def __repr__(self) -> str:
        return (f"Message(topic={self._topic!r}, partition={self._partition}, offset={self._offset}, "
                f"key={self._key!r}, value={self._value!r}{', error=' + repr(self._error) if self._error else ''})")
