"""Configuration definitions with Kafka's keys, defaults and rules (Kafka's ``ConfigDef``).

Each component (broker, topic, producer, consumer, cluster) declares its keys
here once; ``resolve()`` checks a user's dict against them and fails at
construction with a ``ConfigException`` naming the key and the rule.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .errors import ConfigException

INT_MAX = 2_147_483_647


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: type
    default: Any
    rule: Optional[Callable[[Any], bool]] = None
    rule_text: str = ""
    choices: Optional[tuple] = None
    doc: str = ""


def at_least(n):
    return (lambda v: v >= n), f"must be at least {n}"


def between(lo, hi):
    return (lambda v: lo <= v <= hi), f"must be between {lo} and {hi}"


def key(name, type_, default, rule=None, choices=None, doc=""):
    fn, text = rule if rule else (None, "")
    if choices:
        text = "must be one of " + ", ".join(repr(c) for c in choices)
    return ConfigKey(name, type_, default, fn, text, tuple(choices) if choices else None, doc)


def _coerce(k: ConfigKey, value: Any) -> Any:
    if k.type is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ConfigException(k.name, f"expected a boolean (true/false), got {value!r}")
    if k.type is int:
        if isinstance(value, bool):
            raise ConfigException(k.name, f"expected an integer, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                pass
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ConfigException(k.name, f"expected an integer, got {value!r}")
    if k.type is str:
        if value is None or isinstance(value, str):
            return value
        raise ConfigException(k.name, f"expected a string, got {value!r}")
    return value


def resolve(defs: dict[str, ConfigKey], given: Optional[dict], what: str,
            passthrough: tuple = ()) -> tuple[dict, set]:
    """Returns (config with defaults, set of keys the user set explicitly)."""
    out = {name: k.default for name, k in defs.items()}
    explicit: set = set()
    for name, value in (given or {}).items():
        if not isinstance(name, str):
            raise ConfigException(str(name), "configuration keys must be strings")
        if name not in defs:
            if name.startswith(passthrough):
                out[name] = value
                explicit.add(name)
                continue
            close = difflib.get_close_matches(name, list(defs), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigException(name, f"not a known {what} configuration{hint}")
        k = defs[name]
        v = _coerce(k, value)
        if k.choices is not None and v not in k.choices:
            raise ConfigException(name, f"{k.rule_text}, got {value!r}")
        if k.rule is not None and v is not None and not k.rule(v):
            raise ConfigException(name, f"{k.rule_text}, got {value!r}")
        out[name] = v
        explicit.add(name)
    return out, explicit


def defs(*keys: ConfigKey) -> dict[str, ConfigKey]:
    return {k.name: k for k in keys}


# ------------------------------------------------------------------ broker
BROKER = defs(
    key("replica.lag.time.max.ms", int, 30_000, at_least(1)),
    key("replica.fetch.wait.max.ms", int, 500, at_least(0)),
    key("replica.fetch.max.bytes", int, 1_048_576, at_least(1)),
    key("min.insync.replicas", int, 1, at_least(1)),
    key("unclean.leader.election.enable", bool, False),
    key("default.replication.factor", int, 1, at_least(1)),
    key("num.partitions", int, 1, at_least(1)),
    key("auto.create.topics.enable", bool, True),
    key("log.segment.bytes", int, 1_073_741_824, at_least(1024)),
    key("offsets.topic.num.partitions", int, 50, at_least(1)),
    key("offsets.topic.replication.factor", int, 3, at_least(1)),
    key("offsets.commit.timeout.ms", int, 5_000, at_least(1)),
    key("offset.metadata.max.bytes", int, 4096, at_least(0)),
    key("transaction.state.log.num.partitions", int, 50, at_least(1)),
    key("transaction.state.log.replication.factor", int, 3, at_least(1)),
    key("transaction.state.log.min.isr", int, 2, at_least(1)),
    key("transaction.state.log.segment.bytes", int, 104_857_600, at_least(1024)),
    key("transaction.max.timeout.ms", int, 900_000, at_least(1)),
    key("transactional.id.expiration.ms", int, 604_800_000, at_least(1)),
    key("transaction.abort.timed.out.transaction.cleanup.interval.ms", int, 10_000, at_least(1)),
    key("transaction.remove.expired.transaction.cleanup.interval.ms", int, 3_600_000, at_least(1)),
    key("transaction.partition.verification.enable", bool, True),
    # Kafka 4.1 AddPartitionsToTxnConfig: a leader adding a partition for a Produce v12+ retries CONCURRENT_TRANSACTIONS
    key("add.partitions.to.txn.retry.backoff.ms", int, 20, at_least(0)),
    key("add.partitions.to.txn.retry.backoff.max.ms", int, 100, at_least(0)),
    key("transaction.version", int, 0, choices=(0, 1, 2)),
    key("producer.id.expiration.ms", int, 86_400_000, at_least(1)),
    key("producer.id.expiration.check.interval.ms", int, 600_000, at_least(1)),
    key("group.initial.rebalance.delay.ms", int, 3_000, at_least(0)),
    key("group.min.session.timeout.ms", int, 6_000, at_least(0)),
    key("group.max.session.timeout.ms", int, 1_800_000, at_least(0)),
    # Kafka 4.1.1 GroupCoordinatorConfig (CoordinatorRuntime's appendLingerMs)
    key("group.coordinator.append.linger.ms", int, 5, at_least(0),
        doc="how long the group coordinator lets writes to __consumer_offsets accumulate in one batch before "
            "appending it (0: each write's batch at once); transactional writes are not accumulated"),
    key("broker.heartbeat.interval.ms", int, 2_000, at_least(1)),
    key("broker.session.timeout.ms", int, 9_000, at_least(1)),
    key("controlled.shutdown.enable", bool, True),
    key("replica.high.watermark.checkpoint.interval.ms", int, 5_000, at_least(1)),
    key("authorizer.class.name", str, ""),
)

TOPIC = defs(
    key("min.insync.replicas", int, None, at_least(1)),
    key("unclean.leader.election.enable", bool, None),
    key("segment.bytes", int, None, at_least(1024)),
    key("cleanup.policy", str, "delete", choices=("delete", "compact")),
    key("max.message.bytes", int, 1_048_588, at_least(0)),
    key("retention.ms", int, 604_800_000),
    # CreateTime: a record keeps the producer's timestamp; LogAppendTime: the leader stamps each batch with its
    # append time (LogValidator), and readers see that time for every record of the batch
    key("message.timestamp.type", str, "CreateTime", choices=("CreateTime", "LogAppendTime")),
)

# Lab-only keys (not Kafka's) start with "sim."
CLUSTER = defs(
    # one way, per message; beyond a minute no request of Kafka's (30 s timeouts) could ever be answered
    key("sim.network.latency.ms", int, 1, between(0, 60_000)),
    key("sim.network.jitter.ms", int, 0, between(0, 60_000)),
    key("sim.trace", bool, True),
    # a long run's memory: keep only the last N steps of the trace and N messages of the network's history
    key("sim.trace.keep.steps", int, 0, at_least(0), doc="0: keep every step"),
)

# Kafka Java client keys that librdkafka has no property for: taken only under sim.client.dialect=java (librdkafka
# refuses them as "No such configuration property"), checked as Java's ConfigDef checks them (ConsumerConfig)
JAVA_CONSUMER = defs(
    # ConsumerConfig: define(DEFAULT_API_TIMEOUT_MS_CONFIG, Type.INT, 60 * 1000, atLeast(0), ...); the timer of
    # commitSync() and the other calls given no timeout (ClassicKafkaConsumer.defaultApiTimeoutMs)
    key("default.api.timeout.ms", int, 60_000, at_least(0)),
)
