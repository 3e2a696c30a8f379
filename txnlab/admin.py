"""``txnlab.admin`` mirrors ``confluent_kafka.admin``: ``from txnlab.admin import AdminClient, NewTopic, ...``.

The names are confluent-kafka's; the calls are protocol requests on the lab's simulated network and their
futures drive the simulation when asked for a result (``txnlab/client/admin_future.py``).  The transaction
tools of Kafka's Java Admin (KIP-664) have no confluent-kafka counterpart: ``TransactionListing``,
``ProducerState`` and ``AbortTransactionSpec`` are their value types.
"""
from .client.admin import AdminClient
from .client.admin_model import (ConsumerGroupState, ConsumerGroupTopicPartitions, ConsumerGroupType,
                                 IsolationLevel, Node, TopicCollection, TopicPartitionInfo)
from .client.admin_types import (AbortTransactionSpec, AlterConfigOpType, BrokerMetadata, ClusterMetadata,
                                 ConfigEntry, ConfigResource, ConfigSource, ConsumerGroupDescription,
                                 ConsumerGroupListing, DescribeClusterResult, ListConsumerGroupsResult,
                                 ListOffsetsResultInfo, MemberAssignment, MemberDescription, NewPartitions, NewTopic,
                                 OffsetSpec, PartitionMetadata, ProducerState, ResourceType, TopicDescription,
                                 TopicMetadata, TransactionListing)
from .client.message import OFFSET_INVALID, TopicPartition
from .errors import KafkaError, KafkaException

RESOURCE_UNKNOWN, RESOURCE_ANY, RESOURCE_TOPIC, RESOURCE_GROUP, RESOURCE_BROKER, RESOURCE_TRANSACTIONAL_ID = \
    (int(t) for t in ResourceType)
CONFIG_SOURCE_UNKNOWN_CONFIG = ConfigSource.UNKNOWN_CONFIG.value
CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG = ConfigSource.DYNAMIC_BROKER_CONFIG.value
CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
CONFIG_SOURCE_STATIC_BROKER_CONFIG = ConfigSource.STATIC_BROKER_CONFIG.value
CONFIG_SOURCE_DEFAULT_CONFIG = ConfigSource.DEFAULT_CONFIG.value
CONFIG_SOURCE_GROUP_CONFIG = ConfigSource.GROUP_CONFIG.value

__all__ = ["AdminClient", "NewTopic", "NewPartitions", "ConfigResource", "ConfigEntry", "ConfigSource",
           "AlterConfigOpType", "ResourceType", "BrokerMetadata", "ClusterMetadata", "PartitionMetadata",
           "TopicMetadata", "TopicDescription", "DescribeClusterResult", "ConsumerGroupListing",
           "ListConsumerGroupsResult", "ConsumerGroupDescription", "MemberDescription", "MemberAssignment",
           "OffsetSpec", "ListOffsetsResultInfo", "TransactionListing", "ProducerState", "AbortTransactionSpec",
           "ConsumerGroupState", "ConsumerGroupTopicPartitions", "ConsumerGroupType", "IsolationLevel", "Node",
           "TopicCollection", "TopicPartitionInfo", "TopicPartition", "KafkaError", "KafkaException",
           "OFFSET_INVALID", "RESOURCE_UNKNOWN", "RESOURCE_ANY", "RESOURCE_TOPIC", "RESOURCE_GROUP",
           "RESOURCE_BROKER", "RESOURCE_TRANSACTIONAL_ID", "CONFIG_SOURCE_UNKNOWN_CONFIG",
           "CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG", "CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG",
           "CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG", "CONFIG_SOURCE_STATIC_BROKER_CONFIG",
           "CONFIG_SOURCE_DEFAULT_CONFIG", "CONFIG_SOURCE_GROUP_CONFIG"]
