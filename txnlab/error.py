"""``txnlab.error`` mirrors ``confluent_kafka.error``: the client errors the serializing clients raise.

``ConsumeError`` / ``ProduceError`` wrap a ``KafkaError`` (``code`` and ``name`` properties, the original
``exception``, and for consumes the ``kafka_message``); the (de)serialization errors are both those and a
``SerializationError`` (``confluent_kafka.serialization.SerializationError``, re-exported here).
"""
from __future__ import annotations

from typing import Optional

from .client.message import Message
from .errors import KafkaError, KafkaException


class SerializationError(KafkaException):
    """Generic error from serializer package"""


class _KafkaClientError(KafkaException):
    def __init__(self, kafka_error: KafkaError, exception: Optional[Exception] = None,
                 kafka_message: Optional[Message] = None) -> None:
        super().__init__(kafka_error)
        self.exception = exception
        self.kafka_message = kafka_message

    @property
    def code(self) -> int:
        return self.args[0].code()

    @property
    def name(self) -> str:
        return self.args[0].name()


class ConsumeError(_KafkaClientError):
    """An error met while consuming a message (``kafka_message`` holds the raw message)."""


class KeyDeserializationError(ConsumeError, SerializationError):
    def __init__(self, exception: Optional[Exception] = None, kafka_message: Optional[Message] = None) -> None:
        super().__init__(KafkaError(KafkaError._KEY_DESERIALIZATION, str(exception)), exception=exception,
                         kafka_message=kafka_message)


class ValueDeserializationError(ConsumeError, SerializationError):
    def __init__(self, exception: Optional[Exception] = None, kafka_message: Optional[Message] = None) -> None:
        super().__init__(KafkaError(KafkaError._VALUE_DESERIALIZATION, str(exception)), exception=exception,
                         kafka_message=kafka_message)


class ProduceError(_KafkaClientError):
    """An error met while producing."""

    def __init__(self, kafka_error: KafkaError, exception: Optional[Exception] = None) -> None:
        super().__init__(kafka_error, exception, None)


class KeySerializationError(ProduceError, SerializationError):
    def __init__(self, exception: Optional[Exception] = None) -> None:
        super().__init__(KafkaError(KafkaError._KEY_SERIALIZATION, str(exception)), exception=exception)


class ValueSerializationError(ProduceError, SerializationError):
    def __init__(self, exception: Optional[Exception] = None) -> None:
        super().__init__(KafkaError(KafkaError._VALUE_SERIALIZATION, str(exception)), exception=exception)


__all__ = ["KafkaError", "KafkaException", "SerializationError", "ConsumeError", "KeyDeserializationError",
           "ValueDeserializationError", "ProduceError", "KeySerializationError", "ValueSerializationError"]
