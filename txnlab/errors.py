"""Client-facing errors shaped like confluent-kafka's: ``KafkaError`` and ``KafkaException``.

A ``KafkaError`` carries librdkafka's error code and name (every ``rd_kafka_resp_err_t``, from
``librdkafka_errors``: ``KafkaError._FENCED == -144``, ``KafkaError.NOT_LEADER_FOR_PARTITION == 6``) and how
the client must react: ``retriable()``, ``fatal()`` (the producer must be closed) and
``txn_requires_abort()`` (abort the transaction, then carry on).  Which errors are which, per client
dialect, is data in ``client/dialect.py``.  ``ConfigException`` is raised at construction for an invalid
configuration and names the key and the rule.
"""
from __future__ import annotations

from typing import Optional, Union

from .librdkafka_errors import CODE, DESCRIPTION, ERRORS, NAME
from .protocol.errors import Errors


class KafkaError:
    """confluent-kafka's ``KafkaError``: ``code()``, ``name()``, ``str()``, ``fatal()``, ``retriable()``,
    ``txn_requires_abort()``; equal to (and ordered like) its code, hashed as its code."""

    def __init__(self, error: Union[Errors, int], reason: Optional[str] = None, fatal: bool = False,
                 retriable: Optional[bool] = None, txn_requires_abort: bool = False) -> None:
        self._code = int(error)
        self._reason = reason or ""
        self._fatal = bool(fatal)
        if retriable is None:
            # lab convenience: a broker code made without flags is retriable as Kafka's table says
            # (confluent-kafka leaves it False unless librdkafka set it)
            try:
                retriable = Errors(self._code).retriable
            except ValueError:
                retriable = False
        self._retriable = bool(retriable)
        self._txn_requires_abort = bool(txn_requires_abort)

    def code(self) -> int:
        return self._code

    def name(self) -> str:
        return NAME.get(self._code, f"ERR_{self._code}?")

    def str(self) -> str:
        return self._reason or DESCRIPTION.get(self._code, f"Err-{self._code}?")

    def retriable(self) -> bool:
        return self._retriable

    def fatal(self) -> bool:
        return self._fatal

    def txn_requires_abort(self) -> bool:
        return self._txn_requires_abort

    def _cmp_code(self, other) -> Optional[int]:
        if isinstance(other, KafkaError):
            return other._code
        if isinstance(other, int):
            return int(other)
        return None

    def __eq__(self, other) -> bool:
        c = self._cmp_code(other)
        return NotImplemented if c is None else self._code == c

    def __ne__(self, other) -> bool:
        c = self._cmp_code(other)
        return NotImplemented if c is None else self._code != c

    def __lt__(self, other) -> bool:
        c = self._cmp_code(other)
        return NotImplemented if c is None else self._code < c

    def __le__(self, other) -> bool:
        c = self._cmp_code(other)
        return NotImplemented if c is None else self._code <= c

    def __gt__(self, other) -> bool:
        c = self._cmp_code(other)
        return NotImplemented if c is None else self._code > c

    def __ge__(self, other) -> bool:
        c = self._cmp_code(other)
        return NotImplemented if c is None else self._code >= c

    def __hash__(self) -> int:
        return hash(self._code)

    def __repr__(self) -> str:
        fatal = "FATAL," if self._fatal else ""
        return f'KafkaError{{{fatal}code={self.name()},val={self._code},str="{self.str()}"}}'

    __str__ = __repr__


for _code, _name, _ in ERRORS:          # every librdkafka constant, as confluent-kafka spells it
    setattr(KafkaError, _name, _code)
del _code, _name


class KafkaException(Exception):
    """Raised by client calls; ``args[0]`` is the ``KafkaError`` (as in confluent-kafka).

    Lab conveniences: ``KafkaException(code, reason)`` wraps a bare code into a ``KafkaError`` (confluent-kafka
    keeps the arguments as given), and ``.error`` is ``args[0]``."""

    def __init__(self, *args, **kw) -> None:
        if args and isinstance(args[0], int) and not isinstance(args[0], bool):
            args = (KafkaError(args[0], *args[1:2], **kw),)
        super().__init__(*args)

    @property
    def error(self):
        return self.args[0] if self.args else None

    def __str__(self) -> str:
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class ConfigException(KafkaException, ValueError):
    """An invalid configuration, found at construction.  Names the key (``key``, as the user wrote it) and the
    rule (``message``).  ``text`` is the whole ``KafkaError`` string when it follows librdkafka's wording."""

    def __init__(self, key: str, message: str, text: Optional[str] = None) -> None:
        self.key = key
        self.message = message
        self._librdkafka = text is not None
        super().__init__(KafkaError(CODE["_INVALID_ARG"],
                                    text if text is not None else f"Invalid value for configuration {key!r}: {message}"))

    def __str__(self) -> str:
        if self._librdkafka:
            return str(self.args[0])
        return f"ConfigException: Invalid value for configuration '{self.key}': {self.message}"


class KafkaStateError(KafkaException):
    """An API call that is illegal in the client's current state (Kafka's IllegalStateException)."""

    def __init__(self, message: str) -> None:
        super().__init__(KafkaError(CODE["_STATE"], message))


class IllegalStateException(RuntimeError):
    """confluent-kafka's ``IllegalStateException`` (a ``RuntimeError``)."""


class ConcurrentModificationException(RuntimeError):
    """confluent-kafka's ``ConcurrentModificationException`` (a ``RuntimeError``)."""
