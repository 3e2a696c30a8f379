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

try:  # the admin client arrives with its module
    from .client.admin import AdminClient  # noqa: F401
except ImportError:  # pragma: no cover
    pass

__all__ = ["Cluster", "Producer", "Consumer", "AdminClient", "TopicPartition", "Message", "KafkaError",
           "KafkaException", "KafkaStateError", "ConfigException", "Errors", "MUTATIONS",
           "OFFSET_BEGINNING", "OFFSET_END", "OFFSET_INVALID", "OFFSET_STORED"]
