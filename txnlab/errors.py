"""Client-facing errors shaped like confluent-kafka's: ``KafkaError`` and ``KafkaException``.

A ``KafkaError`` carries Kafka's error name and code and how the client must
react: ``retriable()``, ``fatal()`` (the producer must be closed) and
``txn_requires_abort()`` (abort the transaction, then carry on).
``ConfigException`` is raised at construction for an invalid configuration and
names the key and the rule.
"""
from __future__ import annotations

from typing import Optional, Union

from .protocol.errors import Errors


class KafkaError:
    # librdkafka's local error codes that confluent-kafka users meet
    _INVALID_ARG = -186
    _TIMED_OUT = -185
    _STATE = -172
    _FATAL = -150
    _MSG_TIMED_OUT = -192
    _PURGE_QUEUE = -152
    _TRANSPORT = -195
    _PARTITION_EOF = -191
    _ALL_BROKERS_DOWN = -187
    _NO_OFFSET = -168
    _CONFLICT = -147
    _NAMES = {-186: "_INVALID_ARG", -185: "_TIMED_OUT", -172: "_STATE", -150: "_FATAL",
              -192: "_MSG_TIMED_OUT", -152: "_PURGE_QUEUE", -195: "_TRANSPORT",
              -191: "_PARTITION_EOF", -187: "_ALL_BROKERS_DOWN",
              -168: "_NO_OFFSET", -147: "_CONFLICT"}

    def __init__(self, error: Union[Errors, int], reason: str = "", fatal: bool = False,
                 retriable: Optional[bool] = None, txn_requires_abort: bool = False) -> None:
        self._code = int(error)
        self._reason = reason
        self._fatal = fatal
        if retriable is None:
            try:
                retriable = Errors(self._code).retriable
            except ValueError:
                retriable = False
        self._retriable = retriable
        self._txn_requires_abort = txn_requires_abort

    def code(self) -> int:
        return self._code

    def name(self) -> str:
        if self._code in self._NAMES:
            return self._NAMES[self._code]
        try:
            return Errors(self._code).name
        except ValueError:
            return f"UNKNOWN_{self._code}"

    def str(self) -> str:
        return self._reason or self.name()

    def retriable(self) -> bool:
        return self._retriable

    def fatal(self) -> bool:
        return self._fatal

    def txn_requires_abort(self) -> bool:
        return self._txn_requires_abort

    def __eq__(self, other) -> bool:
        if isinstance(other, KafkaError):
            return self._code == other._code
        if isinstance(other, int):
            return self._code == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._code)

    def __repr__(self) -> str:
        flags = [f for f, on in (("fatal", self._fatal), ("retriable", self._retriable),
                                 ("txn_requires_abort", self._txn_requires_abort)) if on]
        return f"KafkaError{{code={self.name()},val={self._code},str=\"{self.str()}\"{',' if flags else ''}{','.join(flags)}}}"

    __str__ = __repr__


class KafkaException(Exception):
    """Raised by client calls; ``args[0]`` is the ``KafkaError`` (as in confluent-kafka)."""

    def __init__(self, error: Union[KafkaError, Errors, int], reason: str = "", **kw) -> None:
        if not isinstance(error, KafkaError):
            error = KafkaError(error, reason, **kw)
        super().__init__(error)

    @property
    def error(self) -> KafkaError:
        return self.args[0]

    def __str__(self) -> str:
        return str(self.args[0])


class ConfigException(KafkaException, ValueError):
    """An invalid configuration, found at construction.  Names the key and the rule."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        self.message = message
        super().__init__(KafkaError(KafkaError._INVALID_ARG, f"Invalid value for configuration {key!r}: {message}"))

    def __str__(self) -> str:
        return f"ConfigException: Invalid value for configuration '{self.key}': {self.message}"


class KafkaStateError(KafkaException):
    """An API call that is illegal in the client's current state (Kafka's IllegalStateException)."""

    def __init__(self, message: str) -> None:
        super().__init__(KafkaError(KafkaError._STATE, message))
