"""Kafka's wire vocabulary: request/response messages and error codes."""
from .errors import Errors, ProtocolError

__all__ = ["Errors", "ProtocolError"]
