"""Arguments of the client API that confluent-kafka refuses: a TypeError/KafkaException with a sentence naming
the rule, raised at the call, never an AttributeError or TypeError from deep inside the library."""
from __future__ import annotations

from typing import Any, Optional

from ..errors import KafkaError, KafkaException
from .message import TopicPartition


def tp_list(value: Any, call: str) -> list:
    """A list (or tuple) of TopicPartition."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{call}: expected a list of TopicPartition, got {type(value).__name__}")
    for tp in value:
        one_tp(tp, call)
    return list(value)


def one_tp(value: Any, call: str) -> TopicPartition:
    if not isinstance(value, TopicPartition):
        raise TypeError(f"{call}: expected TopicPartition, got {type(value).__name__} {value!r:.40}")
    return value


def timeout_s(value: Any, call: str) -> Optional[float]:
    """A timeout in seconds (None or negative: no timeout)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise TypeError(f"{call}: timeout is a number of seconds (-1 or None: wait without limit), "
                        f"got {type(value).__name__}")
    return value


def offsets_for_transaction(value: Any) -> list:
    if not isinstance(value, (list, tuple)) or not all(isinstance(tp, TopicPartition) for tp in value):
        raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "send_offsets_to_transaction(): offsets must be "
                                        "a list of TopicPartition (the next offset to consume of each partition)"))
    return list(value)


def produce_extras(partition: Any, headers: Any) -> None:
    """produce()'s partition and headers."""
    if isinstance(partition, bool) or not isinstance(partition, int):
        raise TypeError(f"partition expects an int (-1: the partitioner chooses), got {type(partition).__name__}")
    if headers is not None and not isinstance(headers, (dict, list, tuple)):
        raise TypeError(f"headers expects a dict or a list of (key, value) tuples, got {type(headers).__name__}")


def produce_args(timestamp, on_delivery, callback) -> None:
    """produce()'s arguments a confluent-kafka producer refuses, each with a sentence naming the rule."""
    for what, fn in (("on_delivery", on_delivery), ("callback", callback)):
        if fn is not None and not callable(fn):
            raise TypeError(f"{what} expects a callable (a function of (err, msg)), got {type(fn).__name__}")
    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        raise TypeError(f"timestamp expects an int (milliseconds since the Unix epoch, 0 for now), got "
                        f"{type(timestamp).__name__}")
    if timestamp < 0:
        raise KafkaException(KafkaError(KafkaError._INVALID_ARG, f"produce(timestamp={timestamp}): a record's timestamp "
                                        f"is milliseconds since the Unix epoch (0 for now) and must not be negative"))
