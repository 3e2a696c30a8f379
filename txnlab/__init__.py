"""txnlab: Kafka's exactly-once machinery, re-implemented faithfully and deterministically, to learn from.

    from txnlab import Cluster, Producer, Consumer, TopicPartition
"""
from .client.message import (OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID, OFFSET_STORED,  # noqa: F401
                             TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, TIMESTAMP_NOT_AVAILABLE, Message,
                             TopicPartition)
from .client.producer import Producer
from .cluster import MUTATIONS, Cluster
from .errors import (ConcurrentModificationException, ConfigException, IllegalStateException,  # noqa: F401
                     KafkaError, KafkaException, KafkaStateError)
from .protocol.errors import Errors

from .client.consumer import Consumer, ConsumerGroupMetadata  # noqa: F401

from . import error  # noqa: F401,E402  (txnlab.error mirrors confluent_kafka.error)


def libversion() -> tuple:
    """The librdkafka version whose behaviour the lab's clients follow (confluent_kafka.libversion())."""
    return ("2.16.0", 0x021000FF)


__all__ = ["Cluster", "Producer", "Consumer", "ConsumerGroupMetadata", "TopicPartition", "Message", "KafkaError", "KafkaException", "KafkaStateError",
           "ConfigException", "IllegalStateException", "ConcurrentModificationException", "Errors", "MUTATIONS",
           "OFFSET_BEGINNING", "OFFSET_END", "OFFSET_INVALID", "OFFSET_STORED",
           "TIMESTAMP_NOT_AVAILABLE", "TIMESTAMP_CREATE_TIME", "TIMESTAMP_LOG_APPEND_TIME", "libversion", "error"]

# confluent_kafka's top-level admin model types (AdminClient itself lives in txnlab.admin, as in confluent_kafka.admin)
from .client.admin_model import (ConsumerGroupState, ConsumerGroupTopicPartitions, ConsumerGroupType,  # noqa: E402
                                 IsolationLevel, Node, TopicCollection, TopicPartitionInfo)
__all__ += ["ConsumerGroupState", "ConsumerGroupTopicPartitions", "ConsumerGroupType", "IsolationLevel", "Node",
            "TopicCollection", "TopicPartitionInfo"]
