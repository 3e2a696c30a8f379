"""The config types of confluent-kafka's admin API: ``ConfigResource``, ``ConfigEntry``, ``ConfigSource``.

Owns the resource a DescribeConfigs asks about (a topic or a broker, by
Kafka's resource type numbers) and one described config entry with the source
Kafka reports for it (a topic override, a broker's static config, a default).
"""
from __future__ import annotations

from enum import IntEnum
from typing import Optional


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


class ConfigResource:
    """A topic or a broker whose configs are asked for (``ConfigResource(ConfigResource.Type.TOPIC, "orders")``,
    or ``ConfigResource("broker", "0")``)."""

    Type = ResourceType

    def __init__(self, restype, name: str, set_config: Optional[dict] = None) -> None:
        if isinstance(restype, str):
            try:
                restype = ResourceType[restype.upper()]
            except KeyError:
                raise ValueError(f"unknown resource type {restype!r}; known: topic, broker") from None
        self.restype = ResourceType(restype)
        self.name = str(name)
        self.set_config_dict = dict(set_config or {})

    def __repr__(self) -> str:
        return f"ConfigResource({self.restype.name},{self.name})"

    def __eq__(self, other) -> bool:
        return isinstance(other, ConfigResource) and (self.restype, self.name) == (other.restype, other.name)

    def __hash__(self) -> int:
        return hash((self.restype, self.name))


class ConfigEntry:
    """One described config: its value (text, as Kafka sends it), source and flags."""

    def __init__(self, name: str, value: Optional[str], source: ConfigSource = ConfigSource.UNKNOWN_CONFIG,
                 is_read_only: bool = False, is_default: bool = False, is_sensitive: bool = False) -> None:
        self.name = name
        self.value = value
        self.source = ConfigSource(source)
        self.is_read_only = is_read_only
        self.is_default = is_default
        self.is_sensitive = is_sensitive

    def __repr__(self) -> str:
        return f"ConfigEntry({self.name}={self.value!r}, {self.source.name})"

    def __str__(self) -> str:
        return f"{self.name}={self.value}"
