"""The value types of confluent-kafka's admin API, with its names: what is asked (``NewTopic``,
``NewPartitions``, ``ConfigResource``, ``OffsetSpec``) and what comes back (``ConfigEntry``, the metadata
of ``list_topics``, ``TopicDescription``, ``DescribeClusterResult``, the consumer-group listings and
descriptions, ``ListOffsetsResultInfo``), plus the KIP-664 transaction types of Kafka's Java Admin.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Dict, List, Optional

from .admin_model import ConsumerGroupState, ConsumerGroupType, Node
from .message import TopicPartition


class ResourceType(IntEnum):
    """Kafka's ``ResourceType`` / ``ConfigResource.Type`` codes (librdkafka's ``RD_KAFKA_RESOURCE_*``)."""
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    BROKER = 4
    TRANSACTIONAL_ID = 5


class ConfigSource(IntEnum):
    """Where a described config's value comes from (Kafka's ``DescribeConfigsResponse.ConfigSource``)."""
    UNKNOWN_CONFIG = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    GROUP_CONFIG = 8


class AlterConfigOpType(Enum):
    """An incremental config change (KIP-339)."""
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConfigEntry:
    """One config: its value (text, as Kafka sends it), source and flags; or one incremental change."""

    def __init__(self, name: str, value: Optional[str], source: ConfigSource = ConfigSource.UNKNOWN_CONFIG,
                 is_read_only: bool = False, is_default: bool = False, is_sensitive: bool = False,
                 is_synonym: bool = False, synonyms: Optional[Dict[str, "ConfigEntry"]] = None,
                 incremental_operation: Optional[AlterConfigOpType] = None) -> None:
        self.name = name
        self.value = value
        self.source = ConfigSource(source)
        self.is_read_only = is_read_only
        self.is_default = is_default
        self.is_sensitive = is_sensitive
        self.is_synonym = is_synonym
        self.synonyms = dict(synonyms or {})
        self.incremental_operation = incremental_operation

    def __repr__(self) -> str:
        return f"ConfigEntry({self.name}={self.value!r}, {self.source.name})"

    def __str__(self) -> str:
        return f"{self.name}={self.value}"


class ConfigResource:
    """A topic or a broker whose configs are described or altered (``ConfigResource(ResourceType.TOPIC,
    "orders")``, or ``ConfigResource("broker", "0")``)."""

    Type = ResourceType

    def __init__(self, restype, name: str, set_config: Optional[dict] = None, described_configs=None,
                 error=None, incremental_configs: Optional[List[ConfigEntry]] = None) -> None:
        if isinstance(restype, str):
            try:
                restype = ResourceType[restype.upper()]
            except KeyError:
                raise ValueError(f"Unknown resource type \"{restype}\": should be a ResourceType") from None
        self.restype = ResourceType(restype)
        self.restype_int = int(self.restype)
        self.name = str(name)
        self.set_config_dict = dict(set_config or {})
        self.incremental_configs = list(incremental_configs or [])
        self.configs = described_configs
        self.error = error

    def set_config(self, name: str, value: str, overwrite: bool = True) -> None:
        if not overwrite and name in self.set_config_dict:
            return
        self.set_config_dict[name] = value

    def add_incremental_config(self, config_entry: ConfigEntry) -> None:
        self.incremental_configs.append(config_entry)

    def __repr__(self) -> str:
        return f"ConfigResource({self.restype.name},{self.name})"

    def __eq__(self, other) -> bool:
        return isinstance(other, ConfigResource) and (self.restype, self.name) == (other.restype, other.name)

    def __hash__(self) -> int:
        return hash((self.restype, self.name))


class NewTopic:
    """``NewTopic(topic, num_partitions=-1, replication_factor=-1, replica_assignment=None, config=None)``:
    -1 takes the broker's ``num.partitions`` / ``default.replication.factor``."""

    def __init__(self, topic: str, num_partitions: int = -1, replication_factor: int = -1,
                 replica_assignment: Optional[list] = None, config: Optional[dict] = None) -> None:
        if replica_assignment is not None:
            raise NotImplementedError("replica_assignment: the lab's controller places replicas itself")
        self.topic = topic
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.replica_assignment = None
        self.config = dict(config or {})

    def __repr__(self) -> str:
        return f"NewTopic(topic={self.topic},num_partitions={self.num_partitions})"


class NewPartitions:
    """``NewPartitions(topic, new_total_count)``: grow a topic to this many partitions."""

    def __init__(self, topic: str, new_total_count: int, replica_assignment: Optional[list] = None) -> None:
        if replica_assignment is not None:
            raise NotImplementedError("replica_assignment: the lab's controller places replicas itself")
        self.topic = topic
        self.new_total_count = new_total_count
        self.replica_assignment = None

    def __repr__(self) -> str:
        return f"NewPartitions(topic={self.topic},new_total_count={self.new_total_count})"


# ------------------------------------------------------------- list_topics
class BrokerMetadata:
    def __init__(self, id: int = -1, host: Optional[str] = None, port: int = -1) -> None:
        self.id, self.host, self.port = id, host, port

    def __repr__(self) -> str:
        return f"BrokerMetadata({self.id}, {self.host}:{self.port})"

    def __str__(self) -> str:
        return f"{self.host}:{self.port}/{self.id}"


class PartitionMetadata:
    def __init__(self, id: int = -1, leader: int = -1, replicas=(), isrs=(), error=None) -> None:
        self.id, self.leader, self.replicas, self.isrs, self.error = id, leader, list(replicas), list(isrs), error

    def __repr__(self) -> str:
        return f"PartitionMetadata({self.id})" if self.error is None else f"PartitionMetadata({self.id}, {self.error})"


class TopicMetadata:
    def __init__(self, topic: Optional[str] = None, partitions: Optional[dict] = None, error=None) -> None:
        self.topic, self.partitions, self.error = topic, dict(partitions or {}), error

    def __repr__(self) -> str:
        return f"TopicMetadata({self.topic}, {len(self.partitions)} partitions)"

    def __str__(self) -> str:
        return str(self.topic)


class ClusterMetadata:
    def __init__(self, cluster_id: Optional[str] = None, controller_id: int = -1, brokers=None, topics=None,
                 orig_broker_id: int = -1, orig_broker_name: Optional[str] = None) -> None:
        self.cluster_id, self.controller_id = cluster_id, controller_id
        self.brokers = dict(brokers or {})
        self.topics = dict(topics or {})
        self.orig_broker_id, self.orig_broker_name = orig_broker_id, orig_broker_name

    def __repr__(self) -> str:
        return f"ClusterMetadata({self.cluster_id})"


# --------------------------------------------------- describe_topics / cluster
class TopicDescription:
    def __init__(self, name: str, topic_id, is_internal: bool, partitions: List, authorized_operations=None) -> None:
        self.name, self.topic_id, self.is_internal = name, topic_id, is_internal
        self.partitions = partitions
        self.authorized_operations = authorized_operations


class DescribeClusterResult:
    def __init__(self, controller: Node, nodes: List[Node], cluster_id: Optional[str] = None,
                 authorized_operations=None) -> None:
        self.controller, self.nodes, self.cluster_id = controller, nodes, cluster_id
        self.authorized_operations = authorized_operations


# ------------------------------------------------------------ consumer groups
class ConsumerGroupListing:
    def __init__(self, group_id: str, is_simple_consumer_group: bool, state=None, type=None) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.state = state if state is None else ConsumerGroupState(state)
        self.type = type if type is None else ConsumerGroupType(type)


class ListConsumerGroupsResult:
    def __init__(self, valid: Optional[list] = None, errors: Optional[list] = None) -> None:
        self.valid = valid
        self.errors = errors


class MemberAssignment:
    def __init__(self, topic_partitions: Optional[List[TopicPartition]]) -> None:
        self.topic_partitions = topic_partitions or []


class MemberDescription:
    def __init__(self, member_id: str, client_id: str, host: str, assignment: MemberAssignment,
                 group_instance_id: Optional[str] = None, target_assignment=None) -> None:
        self.member_id, self.client_id, self.host = member_id, client_id, host
        self.assignment = assignment
        self.group_instance_id = group_instance_id
        self.target_assignment = target_assignment


class ConsumerGroupDescription:
    def __init__(self, group_id: str, is_simple_consumer_group: bool, members: List[MemberDescription],
                 partition_assignor: str, state, coordinator: Node, authorized_operations=None,
                 type=ConsumerGroupType.UNKNOWN) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.members = members
        self.partition_assignor = partition_assignor
        self.state = ConsumerGroupState(state) if state is not None else None
        self.coordinator = coordinator
        self.authorized_operations = authorized_operations
        self.type = ConsumerGroupType(type)


# ------------------------------------------------------------- list_offsets
class OffsetSpec:
    """Which offset ``list_offsets`` asks for: ``OffsetSpec.earliest()``, ``latest()``, ``max_timestamp()``,
    ``for_timestamp(ms)`` (the timestamp Kafka's ListOffsets carries: -2, -1, -3, or the time)."""

    def __init__(self, index: int) -> None:
        self._value = index

    @classmethod
    def earliest(cls) -> "OffsetSpec":
        return cls(-2)

    @classmethod
    def latest(cls) -> "OffsetSpec":
        return cls(-1)

    @classmethod
    def max_timestamp(cls) -> "OffsetSpec":
        return cls(-3)

    @classmethod
    def for_timestamp(cls, timestamp: int) -> "OffsetSpec":
        return cls(int(timestamp))

    def __repr__(self) -> str:
        names = {-2: "earliest", -1: "latest", -3: "max_timestamp"}
        return f"OffsetSpec.{names[self._value]}()" if self._value in names else \
            f"OffsetSpec.for_timestamp({self._value})"


class ListOffsetsResultInfo:
    def __init__(self, offset: int, timestamp: int, leader_epoch: int) -> None:
        self.offset, self.timestamp = offset, timestamp
        self.leader_epoch = leader_epoch if leader_epoch is not None and leader_epoch >= 0 else None


# ------------------------------------------- transactions (KIP-664, Java Admin)
@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_transaction_start_offset: int


@dataclass(frozen=True)
class AbortTransactionSpec:
    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
