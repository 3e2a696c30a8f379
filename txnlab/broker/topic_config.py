"""Topic configs as the controller checks them (Kafka's ``LogConfig.validate``): which keys exist, which the lab
honours, and the clear refusal for the ones it cannot.

Owns the answer to "may this topic have these overrides?" for CreateTopics, AlterConfigs and
IncrementalAlterConfigs: an unknown key is INVALID_CONFIG ("Unknown topic config name", as Kafka
says); a value breaking the key's rule is INVALID_CONFIG naming the key and the rule; and a setting the
engine could not honour (compaction, time retention) is refused the same way rather than silently ignored.
Honoured: ``min.insync.replicas`` (acks=all and the HW), ``unclean.leader.election.enable`` (elections),
``segment.bytes`` (segment rolls and RECORD_LIST_TOO_LARGE; at least 1 MiB, as in Kafka), ``max.message.bytes`` (MESSAGE_TOO_LARGE
for a larger batch, Kafka's ``UnifiedLog.analyzeAndValidateRecords``), ``message.timestamp.type`` (LogAppendTime:
the leader stamps each batch, ``LogValidator``).
"""
from __future__ import annotations

from ..config import TOPIC, resolve
from ..errors import ConfigException
from ..protocol.errors import Errors

# Kafka's least segment.bytes for a topic (4.1.1 org/apache/kafka/storage/internals/log/LogConfig.java:
# define(SEGMENT_BYTES_CONFIG, INT, DEFAULT_SEGMENT_BYTES, atLeast(1024 * 1024), ...)).  CreateTopics and
# AlterConfigs refuse less, as Kafka does; the lab's own Cluster.create_topic takes smaller segments for its
# demonstrations (Kafka's tests use internal.segment.bytes for that).
KAFKA_MIN_SEGMENT_BYTES = 1024 * 1024

# What the engine cannot do, by key: the value it can honour, and why the others are refused.
NOT_HONOURED = {
    "cleanup.policy": (("delete",), "the lab has no log cleaner, so 'compact' (log compaction) cannot be honoured"),
    "retention.ms": ((-1, 604_800_000), "the lab never deletes old segments, so only -1 (keep forever) or the "
                                         "default can be honoured"),
}


def check_topic_config(given: dict, replication_factor: int, internal: bool = False) -> tuple:
    """(error, message, overrides): Kafka's checks, then the lab's own limits.  ``given`` maps keys to values
    (text or typed); a value of None means the key is not overridden.  ``internal``: ``__consumer_offsets`` /
    ``__transaction_state``, compacted as in Kafka; their coordinators load them keeping the last value per
    key, which is what compaction preserves, so the lab lets them say so."""
    for name in given:
        if name not in TOPIC:
            return Errors.INVALID_CONFIG, f"Unknown topic config name: {name}", {}
    try:
        resolved, _ = resolve(TOPIC, {k: v for k, v in given.items() if v is not None}, "topic")
    except ConfigException as e:
        return Errors.INVALID_CONFIG, f"Invalid value {given.get(e.key)!r} for configuration {e.key}: {e.message}", {}
    config = {k: resolved[k] for k, v in given.items() if v is not None}
    if not internal and config.get("segment.bytes", KAFKA_MIN_SEGMENT_BYTES) < KAFKA_MIN_SEGMENT_BYTES:
        return (Errors.INVALID_CONFIG, f"Invalid value {given['segment.bytes']} for configuration segment.bytes: "
                                       f"Value must be at least {KAFKA_MIN_SEGMENT_BYTES}", {})
    for name, (honoured, why) in NOT_HONOURED.items():
        if name in config and not internal and config[name] not in honoured:
            return Errors.INVALID_CONFIG, f"{name}={given[name]} is refused: {why}", {}
    # min.insync.replicas above the replication factor: Kafka accepts it (LogConfig.validateValues checks only
    # the compaction lags), and its partitions then ask for min(min.insync.replicas, replication factor) in-sync
    # replicas (Partition.effectiveMinIsr; the lab's Partition._apply).  The lab's own Cluster.create_topic
    # refuses it with a ConfigException.
    return Errors.NONE, "", config
