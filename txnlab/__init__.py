"""txnlab: Kafka's exactly-once machinery, re-implemented faithfully and deterministically, to learn from.

    from txnlab import Cluster, Producer, Consumer, TopicPartition
"""
from .client.message import (OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID, OFFSET_STORED, Message,  # noqa: F401
                             TopicPartition)
from .client.producer import Producer
from .cluster import MUTATIONS, Cluster
from .errors import ConfigException, KafkaError, KafkaException, KafkaStateError
from .protocol.errors import Errors

from .client.consumer import Consumer, ConsumerGroupMetadata  # noqa: F401

from .client.admin import AbortTransactionSpec, AdminClient, NewTopic  # noqa: F401

__all__ = ["Cluster", "Producer", "Consumer", "ConsumerGroupMetadata", "AdminClient", "NewTopic",
           "AbortTransactionSpec", "TopicPartition", "Message", "KafkaError", "KafkaException", "KafkaStateError", "ConfigException", "Errors", "MUTATIONS",
           "OFFSET_BEGINNING", "OFFSET_END", "OFFSET_INVALID", "OFFSET_STORED"]
