"""confluent-kafka's ``_model`` types that its admin API returns and takes (exported at its top level):
``Node``, ``ConsumerGroupTopicPartitions``, ``ConsumerGroupState``, ``ConsumerGroupType``, ``TopicCollection``,
``TopicPartitionInfo``, ``IsolationLevel``.  Plain values, with confluent-kafka's names and numbers.
"""
from __future__ import annotations

from enum import Enum
from typing import List, Optional


class Node:
    """A broker as the admin API names it (``Node(id, host, port, rack)``)."""

    def __init__(self, id: int, host: str, port: int, rack: Optional[str] = None) -> None:
        self.id = id
        self.id_string = str(id)
        self.host = host
        self.port = port
        self.rack = rack

    def __str__(self) -> str:
        return f"({self.id}) {self.host}:{self.port} {f'(Rack - {self.rack})' if self.rack else ''}"

    def __repr__(self) -> str:
        return f"Node({self.id}, {self.host!r}, {self.port})"


class ConsumerGroupTopicPartitions:
    """A group and (some of) its partitions: asked for by list/alter_consumer_group_offsets, and their result."""

    def __init__(self, group_id: str, topic_partitions: Optional[List] = None) -> None:
        self.group_id = group_id
        self.topic_partitions = topic_partitions


class _Ordered(Enum):
    def __lt__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return NotImplemented
        return self.value < other.value


class ConsumerGroupState(_Ordered):
    UNKNOWN = 0
    PREPARING_REBALANCING = 1
    COMPLETING_REBALANCING = 2
    STABLE = 3
    DEAD = 4
    EMPTY = 5

    @classmethod
    def from_kafka(cls, text: str) -> "ConsumerGroupState":
        """Kafka's state text ("PreparingRebalance", "Stable", ...) as librdkafka maps it."""
        return {"PreparingRebalance": cls.PREPARING_REBALANCING, "CompletingRebalance": cls.COMPLETING_REBALANCING,
                "Stable": cls.STABLE, "Dead": cls.DEAD, "Empty": cls.EMPTY}.get(text, cls.UNKNOWN)


class ConsumerGroupType(_Ordered):
    UNKNOWN = 0
    CONSUMER = 1
    CLASSIC = 2


class IsolationLevel(_Ordered):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class TopicCollection:
    def __init__(self, topic_names: List[str]) -> None:
        self.topic_names = topic_names


class TopicPartitionInfo:
    """One partition in a TopicDescription: its id, leader, replicas and ISR as ``Node``s."""

    def __init__(self, id: int, leader: Optional[Node], replicas: List[Node], isr: List[Node]) -> None:
        self.id = id
        self.leader = leader
        self.replicas = replicas
        self.isr = isr
