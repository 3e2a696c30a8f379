"""Producer, consumer and admin configuration as librdkafka (confluent-kafka) takes it.

Every librdkafka property (``librdkafka_config.py``) is accepted with librdkafka's parsing, ranges and
defaults; aliases (``linger.ms`` -> ``queue.buffering.max.ms``, ``acks`` -> ``request.required.acks``) set
their property; ``rd_kafka_conf_finalize``'s rules run at construction (idempotence adjusts or refuses
``acks``/``retries``/``max.in.flight``; a ``transactional.id`` turns idempotence on).  Unknown names fail as
librdkafka fails (``_INVALID_ARG``, ``No such configuration property: "..."``).  confluent-kafka's own keys
(``on_delivery``, ``on_commit``, ``error_cb``, ``stats_cb``, ``throttle_cb``, ``logger``, ``oauth_cb``,
``default.topic.config``) are checked as confluent-kafka checks them.  Lab keys start with ``sim.``
(``sim.client.dialect``: ``librdkafka`` or ``java``, see ``dialect.py``).

What the lab cannot honour (TLS, SASL mechanisms, compression, sockets...) is accepted,
validated, and reported: ``notices(cfg)`` lists "has no effect in the lab" and librdkafka's own CONFWARN
lines (a producer property on a consumer...); the client narrates them once at construction.  The
properties the lab does honour are ``HONOURED`` below.
"""
from __future__ import annotations

import logging
import math
import re
from typing import Any, Optional

from ..config import JAVA_CONSUMER, ConfigKey
from ..errors import ConfigException
from . import dialect as dialects
from . import librdkafka_config as L
from .librdkafka_config import API, BOOL, ENUM, FLAGS, FLOAT, INT, PATTERNS, STR

INT32_MAX = 2_147_483_647
log = logging.getLogger("txnlab.client")

# Canonical librdkafka properties the lab's clients act on.  Everything else is accepted and reported.
HONOURED = frozenset({
    "metadata.broker.list", "client.id", "message.max.bytes", "max.in.flight.requests.per.connection",
    "retry.backoff.ms", "retry.backoff.max.ms", "socket.timeout.ms", "sasl.username", "sasl.password",
    "enable.idempotence", "transactional.id", "transaction.timeout.ms", "queue.buffering.max.ms",
    "message.send.max.retries", "batch.num.messages", "batch.size",
    "request.required.acks", "request.timeout.ms", "message.timeout.ms", "partitioner",
    "group.id", "group.instance.id", "partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms",
    "max.poll.interval.ms", "enable.auto.commit", "auto.commit.interval.ms", "enable.auto.offset.store",
    "fetch.wait.max.ms", "fetch.message.max.bytes", "isolation.level", "enable.partition.eof", "auto.offset.reset",
    "statistics.interval.ms", "topic.metadata.propagation.max.ms",
})
# confluent-kafka's Python keys: which clients take them and how a bad value fails there.
PYTHON_KEYS = {
    "error_cb": ("*", TypeError, "expected error_cb property as a callable function"),
    "throttle_cb": ("*", ValueError, "expected throttle_cb property as a callable function"),
    "stats_cb": ("*", TypeError, "expected stats_cb property as a callable function"),
    "oauth_cb": ("*", TypeError, "expected oauth_cb property as a callable function"),
    "logger": ("*", None, ""),
    "on_delivery": ("P", ConfigException, "on_delivery requires a callable object"),
    "on_commit": ("C", ConfigException, "on_commit requires a callable object"),
}
PYTHON_HONOURED = frozenset({"on_delivery", "on_commit", "error_cb", "stats_cb", "logger"})   # client_events.py
# sim.clock.epoch.ms: the Unix time (ms) the lab clock's 0 stands for; clients add it to what they show (record
# timestamps, offsets_for_times), so timestamps look real and stay deterministic (never the wall clock)
EPOCH_MS = 1_767_225_600_000          # 2026-01-01T00:00:00Z
LAB_KEYS = {"sim.client.dialect": dialects.LIBRDKAFKA, "sim.naive.client": False, "sim.clock.epoch.ms": EPOCH_MS}
NO_EFFECT = "has no effect in the lab"


def _fail(key: str, text: str, rule: Optional[str] = None, given: Optional[str] = None) -> ConfigException:
    if given and given != key:
        text = f'{text} (set as "{given}")'
    return ConfigException(given or key, rule or text, text)


# ------------------------------------------------------------------ librdkafka's value parsing
_STRTOL = re.compile(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_STRTOD = re.compile(r"\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf(inity)?)", re.I)


def _strtol(s: str) -> Optional[int]:
    m = _STRTOL.match(s)
    if not m:
        return None
    digits = m.group(2)
    n = int(digits, 16) if digits[:2].lower() == "0x" else int(digits, 8) if digits.startswith("0") else int(digits)
    return -n if m.group(1) == "-" else n


def parse(prop: L.Property, value: Any, given: str) -> Any:
    """One value as ``rd_kafka_anyconf_set_prop`` parses ``str(value)``; fails with librdkafka's words."""
    name = prop.name
    if prop.type == API:
        raise _fail(name, f'Property "{name}" must be set through dedicated .._set_..() function', given=given)
    if value is None:
        if prop.type in (STR, PATTERNS):
            return None
        kind = {INT: "Integer configuration", FLOAT: "Float configuration", BOOL: "Bool configuration"}.get(
            prop.type, "Configuration")
        raise _fail(name, f'{kind} property "{name}" cannot be set to empty value', given=given)
    s = value if isinstance(value, str) else str(value)
    if prop.type == BOOL:
        if s.lower() in ("true", "t") or s == "1":
            return True
        if s.lower() in ("false", "f") or s == "0":
            return False
        raise _fail(name, f'Expected bool value for "{name}": true or false', given=given)
    if prop.type == INT:
        n = _strtol(s)
        if n is None:
            n = -1 if (name == "request.required.acks" and s.lower() == "all") else None
        if n is None:
            raise _fail(name, f'Invalid value for configuration property "{name}"',
                        "expected an integer", given=given)
        lo, hi = prop.range
        if not lo <= n <= hi:
            raise _fail(name, f'Configuration property "{name}" value {n} is outside allowed range {lo}..{hi}',
                        given=given)
        return n
    if prop.type == FLOAT:
        m = _STRTOD.match(s)
        x = float(m.group(0)) if m else math.nan
        if math.isnan(x):       # librdkafka lets "nan" through; the lab does not
            raise _fail(name, f'Invalid value for configuration property "{name}"', "expected a number", given=given)
        lo, hi = prop.range
        if not lo <= x <= hi:
            raise _fail(name, f'Configuration property "{name}" value {x:g} is outside allowed range {lo}..{hi}',
                        given=given)
        return int(x) if x.is_integer() else x
    if prop.type in (ENUM, FLAGS):
        words = [w.strip() for w in s.split(",")] if prop.type == FLAGS else [s.strip()]
        out = []
        for w in words:
            bare = w[1:] if prop.type == FLAGS and w[:1] in "+-" else w
            if not bare:
                continue
            match = [v for v in prop.range if v.lower() == bare.lower()]
            if not match:
                raise _fail(name, f'Invalid value "{bare}" for configuration property "{name}"',
                            "must be one of " + ", ".join(prop.range), given=given)
            out.append(match[0])
        if prop.type == ENUM and not out:
            raise _fail(name, f'Invalid value "{s}" for configuration property "{name}"',
                        "must be one of " + ", ".join(prop.range), given=given)
        return out[0] if prop.type == ENUM else ",".join(out)
    s = s.lstrip() if prop.type == STR else s
    if name == "partitioner" and s not in L.PARTITIONERS:
        raise _fail(name, f'Invalid value for configuration property "partitioner": {s}',
                    "must be one of " + ", ".join(L.PARTITIONERS), given=given)
    return s


# ------------------------------------------------------------------ resolution
def _java_value(k: ConfigKey, value: Any) -> Any:
    """One value of a Java-only key as Kafka's ConfigDef parses and validates it (ConfigDef.parseType for INT,
    Range.atLeast), failing with Java's words: "Invalid value -1 for configuration default.api.timeout.ms: Value
    must be at least 0"."""
    n = value
    if isinstance(value, str):
        try:
            n = int(value.strip())
        except ValueError:
            n = None
    if isinstance(n, bool) or not isinstance(n, int) or not -2**31 <= n < 2**31:
        raise ConfigException(k.name, "Not a number of type INT",
                              f"Invalid value {value} for configuration {k.name}: Not a number of type INT")
    if k.rule is not None and not k.rule(n):
        raise ConfigException(k.name, k.rule_text,
                              f"Invalid value {value} for configuration {k.name}: Value {k.rule_text}")
    return n


def _split(given: dict, client: str) -> tuple:
    conf = dict(given or {})
    topic_conf = conf.pop("default.topic.config", None) or {}
    for k, v in dict(topic_conf).items():      # confluent-kafka: a dict of topic properties (deprecated)
        conf.setdefault(k, v)
    java_keys = JAVA_CONSUMER if client == "C" and conf.get("sim.client.dialect") == dialects.JAVA else {}
    props, python, lab = {}, {}, {}
    for key, value in conf.items():
        if not isinstance(key, str):
            raise _fail(str(key), f'No such configuration property: "{key}"', "not a configuration property")
        if key in java_keys:
            lab[key] = _java_value(java_keys[key], value)
        elif key.startswith("sim."):
            if key not in LAB_KEYS:
                raise _fail(key, f'No such configuration property: "{key}"',
                            "not a lab key (" + ", ".join(LAB_KEYS) + ")")
            lab[key] = value
        elif key in PYTHON_KEYS and PYTHON_KEYS[key][0] in ("*", client):
            python[key] = value
        else:
            prop = L.lookup(key)
            if prop is None:
                raise _fail(key, f'No such configuration property: "{key}"', "not a librdkafka property")
            props[prop.name] = (key, parse(prop, value, key))
    return props, python, lab


def _check_python_keys(python: dict) -> None:
    for key, value in python.items():
        _, exc, text = PYTHON_KEYS[key]
        if exc is None or value is None or callable(value):
            continue
        raise _fail(key, text) if exc is ConfigException else exc(text)


def _defaults(dialect: str) -> dict:
    cfg = {name: p.default for table in (L.TOPIC, L.GLOBAL) for name, p in table.items() if not p.alias_of}
    cfg["client.id"] = None     # the lab names an unnamed client producer-1, consumer-1 (librdkafka: rdkafka#producer-1)
    if dialect == dialects.JAVA:
        cfg.update(dialects.JAVA_DEFAULTS)
    return cfg


def _resolve(given: dict, client: str) -> tuple:
    props, python, lab = _split(given, client)
    dialect = lab.get("sim.client.dialect", dialects.LIBRDKAFKA)
    if dialect not in dialects.DIALECTS:
        raise _fail("sim.client.dialect", f'Invalid value "{dialect}" for configuration property '
                    f'"sim.client.dialect"', "must be one of " + ", ".join(dialects.DIALECTS))
    cfg = _defaults(dialect)
    if dialect == dialects.JAVA and client == "C":
        cfg.update({name: k.default for name, k in JAVA_CONSUMER.items()})
    cfg.update({name: v for name, (_, v) in props.items()})
    modified = {name: key for name, (key, _) in props.items()}
    _check_python_keys(python)
    cfg.update({k: python.get(k) for k in PYTHON_KEYS})
    cfg.update(LAB_KEYS)
    cfg.update(lab)
    if not cfg["metadata.broker.list"]:
        raise ConfigException("bootstrap.servers", "is required (use cluster.bootstrap)")
    return cfg, modified, python, dialect


def _notices(cfg: dict, modified: dict, python: dict, client: str, dialect: str) -> list:
    other = {"P": "C", "C": "P"}[client]
    kinds = {"P": "producer", "C": "consumer"}
    out = []
    for name, key in modified.items():
        prop = L.lookup(name)
        if prop.client == other:
            out.append(f"Configuration property {name} is a {kinds[other]} property and will be ignored by "
                       f"this {kinds[client]} instance")
        elif prop.deprecated or prop.experimental:
            what = " and ".join(w for w, on in (("deprecated", prop.deprecated),
                                                ("experimental", prop.experimental)) if on)
            out.append(f"Configuration property {name} is {what}")
        if prop.client != other and name not in HONOURED:
            out.append(f"{key} {NO_EFFECT}")
    for key in python:
        if key not in PYTHON_HONOURED:
            out.append(f"{key} {NO_EFFECT} (the lab never calls it)")
    strategies = cfg.get("partition.assignment.strategies") or ()
    if client == "C" and len(strategies) > 1 and "partition.assignment.strategy" in modified:
        out.append(f"partition.assignment.strategy={','.join(strategies)}: the lab's consumer offers only the "
                   f"first, {strategies[0]}, in JoinGroup")
    if client == "P" and cfg["partitioner"] in ("fnv1a", "fnv1a_random"):
        out.append(f"partitioner={cfg['partitioner']}: the lab hashes keys with CRC32 (as consistent_random)")
    if cfg["retry.backoff.ms"] > cfg["retry.backoff.max.ms"]:        # librdkafka's CONFWARN (rd_kafka_new)
        out.append(f"Configuration `retry.backoff.ms` with value {cfg['retry.backoff.ms']} is greater than "
                   f"configuration `retry.backoff.max.ms` with value {cfg['retry.backoff.max.ms']}. A static backoff "
                   f"with value `retry.backoff.max.ms` will be applied.")
    if dialect != dialects.LIBRDKAFKA:
        out.append(f"sim.client.dialect={dialect}: {dialect} client defaults and error reactions")
    return out


def _report(cfg: dict, notices: list) -> dict:
    cfg["sim.notices"] = tuple(notices)
    for line in notices:
        if NO_EFFECT in line and line not in _REPORTED:
            _REPORTED.add(line)
            log.warning(line)
    return cfg


_REPORTED: set = set()


def _aliases(cfg: dict) -> dict:
    """Every alias reads as its property, so ``cfg["linger.ms"]`` is ``cfg["queue.buffering.max.ms"]``."""
    for name in L.names():
        p = L.GLOBAL.get(name) or L.TOPIC[name]
        if p.alias_of:                   # a name that is a global property is that property, not a topic alias
            cfg[name] = cfg[p.alias_of]
    return cfg


def notices(cfg: dict) -> tuple:
    """What the client should narrate at construction: librdkafka's CONFWARN lines and what the lab ignores."""
    return cfg.get("sim.notices", ())


def dialect_of(cfg: dict) -> str:
    return cfg.get("sim.client.dialect", dialects.LIBRDKAFKA)


from .config_finalize import finalize_consumer, finalize_producer  # noqa: E402  (uses the helpers above)


def producer_config(given: dict, what: str = "producer") -> dict:
    cfg, modified, python, dialect = _resolve(given, "P")
    finalize_producer(cfg, modified, dialect, what)
    return _report(_aliases(cfg), _notices(cfg, modified, python, "P", dialect))


def consumer_config(given: dict) -> dict:
    cfg, modified, python, dialect = _resolve(given, "C")
    finalize_consumer(cfg, modified, dialect)
    return _report(_aliases(cfg), _notices(cfg, modified, python, "C", dialect))


def admin_config(given: dict) -> dict:
    """confluent-kafka's AdminClient is a librdkafka producer handle underneath."""
    return producer_config(given, "admin")


def principal(cfg: dict):
    return f"User:{cfg['sasl.username']}" if cfg.get("sasl.username") else None


def _known(client: str) -> dict:
    names = {n: L.lookup(n) for n in L.names()}
    keep = {n: p for n, p in names.items() if p.client in ("*", client) or p.client == ""}
    keep.update({k: None for k, (c, _, _) in PYTHON_KEYS.items() if c in ("*", client)})
    keep.update({k: None for k in LAB_KEYS})
    return keep


PRODUCER = _known("P")       # every key a producer takes (name -> librdkafka Property, None for Python/lab keys)
CONSUMER = _known("C")
ADMIN = PRODUCER

__all__ = ["PRODUCER", "CONSUMER", "ADMIN", "HONOURED", "producer_config", "consumer_config", "admin_config",
           "notices", "dialect_of", "principal"]
