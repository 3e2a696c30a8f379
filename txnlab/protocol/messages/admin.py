"""CreateTopics, DeleteTopics and DescribeConfigs: what ``kafka-topics.sh`` / ``kafka-configs.sh`` send.

A client sends them to any broker; the broker forwards topic changes to the
controller (as Kafka 4 forwards them to the KRaft quorum) and answers with the
controller's result.  Brokers send CreateTopics to the controller themselves to
create internal topics and (with ``auto.create.topics.enable``) asked-for ones.
"""
from __future__ import annotations

from typing import Optional

from ..message_base import _err, message

# ConfigResource.Type (org.apache.kafka.common.config.ConfigResource)
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
# DescribeConfigsResponse.ConfigSource
SOURCE_DYNAMIC_TOPIC_CONFIG = 1
SOURCE_STATIC_BROKER_CONFIG = 4
SOURCE_DEFAULT_CONFIG = 5


def _results(results) -> str:
    """One result: its error (the line a broker's own CreateTopics always had); several: each topic's.
    The error messages travel to the client; the trace says why in the controller's narration."""
    if len(results) == 1:
        return _err(results[0].error_code)
    return "; ".join(f"{r.name}: {_err(r.error_code)}" for r in results)


# --------------------------------------------------------------- CreateTopics
@message
class CreatableTopic:
    name: str
    num_partitions: int = -1           # -1: the broker's num.partitions
    replication_factor: int = -1       # -1: the broker's default.replication.factor
    configs: tuple = ()                # (name, value), ...


@message
class CreateTopicsRequest:
    API = "CreateTopics"
    API_KEY = 19
    topics: tuple                      # (CreatableTopic, ...)
    timeout_ms: int = 30_000
    validate_only: bool = False

    def describe(self) -> str:
        return "; ".join(f"{t.name} ({t.num_partitions} partitions, RF {t.replication_factor})"
                         for t in self.topics) + (" (validate only)" if self.validate_only else "")


@message
class CreatableTopicResult:
    name: str
    error_code: int
    error_message: str = ""
    num_partitions: int = -1
    replication_factor: int = -1


@message
class CreateTopicsResponse:
    topics: tuple                      # (CreatableTopicResult, ...)

    def describe(self) -> str:
        return _results(self.topics)


# --------------------------------------------------------------- DeleteTopics
@message
class DeleteTopicsRequest:
    API = "DeleteTopics"
    API_KEY = 20
    topic_names: tuple                 # (name, ...)
    timeout_ms: int = 30_000

    def describe(self) -> str:
        return ", ".join(self.topic_names)


@message
class DeletableTopicResult:
    name: str
    error_code: int
    error_message: str = ""


@message
class DeleteTopicsResponse:
    responses: tuple                   # (DeletableTopicResult, ...)

    def describe(self) -> str:
        return _results(self.responses)


# ------------------------------------------------------------ DescribeConfigs
@message
class DescribeConfigsResource:
    resource_type: int                 # RESOURCE_TOPIC or RESOURCE_BROKER
    resource_name: str                 # a topic, or a broker id as text
    configuration_keys: Optional[tuple] = None   # None: every key


@message
class DescribeConfigsRequest:
    API = "DescribeConfigs"
    API_KEY = 32
    resources: tuple                   # (DescribeConfigsResource, ...)

    def describe(self) -> str:
        kinds = {RESOURCE_TOPIC: "topic", RESOURCE_BROKER: "broker"}
        return ", ".join(f"{kinds.get(r.resource_type, r.resource_type)} {r.resource_name}" for r in self.resources)


@message
class DescribeConfigsResourceResult:
    name: str
    value: Optional[str]
    read_only: bool
    config_source: int                 # SOURCE_*
    is_sensitive: bool = False


@message
class DescribeConfigsResult:
    error_code: int
    error_message: str
    resource_type: int
    resource_name: str
    configs: tuple = ()                # (DescribeConfigsResourceResult, ...)


@message
class DescribeConfigsResponse:
    results: tuple                     # (DescribeConfigsResult, ...)

    def describe(self) -> str:
        return "; ".join(f"{r.resource_name}: {_err(r.error_code) if r.error_code else f'{len(r.configs)} config(s)'}"
                         for r in self.results)


# ----------------------------------------------------------- CreatePartitions
@message
class CreatePartitionsTopic:
    name: str
    count: int                         # the new total number of partitions


@message
class CreatePartitionsRequest:
    API = "CreatePartitions"
    API_KEY = 37
    topics: tuple                      # (CreatePartitionsTopic, ...)
    timeout_ms: int = 30_000
    validate_only: bool = False

    def describe(self) -> str:
        return "; ".join(f"{t.name} to {t.count} partitions" for t in self.topics) + \
            (" (validate only)" if self.validate_only else "")


@message
class CreatePartitionsTopicResult:
    name: str
    error_code: int
    error_message: str = ""


@message
class CreatePartitionsResponse:
    results: tuple                     # (CreatePartitionsTopicResult, ...)

    def describe(self) -> str:
        return _results(self.results)


# ------------------------------------------ AlterConfigs / IncrementalAlterConfigs
# AlterConfigOp.OpType (IncrementalAlterConfigs)
OP_SET = 0
OP_DELETE = 1
OP_APPEND = 2
OP_SUBTRACT = 3


@message
class AlterableConfig:
    name: str
    value: Optional[str]
    config_operation: int = OP_SET     # IncrementalAlterConfigs only (AlterConfigs replaces every key)


@message
class AlterConfigsResource:
    resource_type: int                 # RESOURCE_TOPIC (the lab alters topic configs only)
    resource_name: str
    configs: tuple                     # (AlterableConfig, ...)


@message
class AlterConfigsRequest:
    """The legacy AlterConfigs (33): the given keys become the topic's whole set of overrides."""
    API = "AlterConfigs"
    API_KEY = 33
    resources: tuple                   # (AlterConfigsResource, ...)
    validate_only: bool = False

    def describe(self) -> str:
        return _alter_text(self.resources, self.validate_only)


@message
class IncrementalAlterConfigsRequest:
    """KIP-339: SET / DELETE (APPEND / SUBTRACT for list configs) one key at a time."""
    API = "IncrementalAlterConfigs"
    API_KEY = 44
    resources: tuple                   # (AlterConfigsResource, ...)
    validate_only: bool = False

    def describe(self) -> str:
        return _alter_text(self.resources, self.validate_only)


def _alter_text(resources, validate_only: bool) -> str:
    ops = {OP_SET: "=", OP_DELETE: " deleted", OP_APPEND: "+=", OP_SUBTRACT: "-="}
    return "; ".join(f"{r.resource_name}: " + ", ".join(
        f"{c.name}{ops.get(c.config_operation, '?')}{c.value if c.config_operation != OP_DELETE else ''}"
        for c in r.configs) for r in resources) + (" (validate only)" if validate_only else "")


@message
class AlterConfigsResourceResponse:
    error_code: int
    error_message: str
    resource_type: int
    resource_name: str


@message
class AlterConfigsResponse:
    responses: tuple                   # (AlterConfigsResourceResponse, ...): AlterConfigs' and
                                       # IncrementalAlterConfigs' answers have the same shape

    def describe(self) -> str:
        return "; ".join(f"{r.resource_name}: {_err(r.error_code)}" for r in self.responses)
