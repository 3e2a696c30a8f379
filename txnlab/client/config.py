"""Producer and consumer configuration: Kafka's keys, defaults and the rules the seed articles quote.

The idempotence rules follow Kafka's ``ProducerConfig``: if ``enable.idempotence``
is set explicitly, ``retries`` must be non-zero, ``acks`` must be ``all`` and
``max.in.flight.requests.per.connection`` at most 5; if it is only defaulted, a
conflicting setting silently turns idempotence off.  ``transactional.id``
requires idempotence.
"""
from __future__ import annotations

from ..config import INT_MAX, at_least, between, defs, key, resolve
from ..errors import ConfigException

PRODUCER = defs(
    key("bootstrap.servers", str, None),
    key("client.id", str, None),
    key("acks", str, "all", choices=("all", "-1", "0", "1")),
    key("enable.idempotence", bool, True),
    key("retries", int, INT_MAX, at_least(0)),
    key("max.in.flight.requests.per.connection", int, 5, at_least(1)),
    key("linger.ms", int, 5, at_least(0)),
    key("batch.size", int, 1_000_000, at_least(1)),        # librdkafka's default (Java's is 16384)
    key("batch.num.messages", int, 10_000, at_least(1)),
    key("delivery.timeout.ms", int, 120_000, at_least(1)),
    key("request.timeout.ms", int, 30_000, at_least(1)),
    key("retry.backoff.ms", int, 100, at_least(0)),
    key("retry.backoff.max.ms", int, 1_000, at_least(0)),
    key("message.max.bytes", int, 1_000_000, at_least(1)),
    key("transactional.id", str, None),
    key("transaction.timeout.ms", int, 60_000, at_least(1)),
    key("partitioner", str, "consistent_random",
        choices=("consistent_random", "murmur2_random", "consistent", "murmur2", "random")),
    key("on_delivery", object, None),
    key("error_cb", object, None),
    key("sim.naive.client", bool, False),
    key("sasl.username", str, None),
    key("sasl.password", str, None),
)

CONSUMER = defs(
    key("bootstrap.servers", str, None),
    key("client.id", str, None),
    key("group.id", str, None),
    key("group.instance.id", str, None),
    key("isolation.level", str, "read_committed", choices=("read_committed", "read_uncommitted")),
    key("enable.auto.commit", bool, True),
    key("auto.commit.interval.ms", int, 5_000, at_least(0)),
    key("enable.auto.offset.store", bool, True),
    key("auto.offset.reset", str, "latest",
        choices=("earliest", "latest", "smallest", "largest", "beginning", "end", "error")),
    key("session.timeout.ms", int, 45_000, at_least(1)),
    key("heartbeat.interval.ms", int, 3_000, at_least(1)),
    key("max.poll.interval.ms", int, 300_000, at_least(1)),
    key("fetch.wait.max.ms", int, 500, at_least(0)),
    key("fetch.max.bytes", int, 52_428_800, at_least(1)),
    key("max.partition.fetch.bytes", int, 1_048_576, at_least(1)),
    key("request.timeout.ms", int, 30_000, at_least(1)),
    key("retry.backoff.ms", int, 100, at_least(0)),
    key("partition.assignment.strategy", str, "range", choices=("range", "roundrobin")),
    key("enable.partition.eof", bool, False),
    key("on_commit", object, None),
    key("error_cb", object, None),
    key("sasl.username", str, None),
    key("sasl.password", str, None),
)

ADMIN = defs(
    key("bootstrap.servers", str, None),
    key("client.id", str, None),
    key("request.timeout.ms", int, 30_000, at_least(1)),
    key("sasl.username", str, None),
    key("sasl.password", str, None),
)


def principal(cfg: dict):
    return f"User:{cfg['sasl.username']}" if cfg.get("sasl.username") else None

IDEMPOTENCE_RETRIES = "Must set retries to non-zero when using the idempotent producer."
IDEMPOTENCE_ACKS = ("Must set acks to all in order to use the idempotent producer. "
                    "Otherwise we cannot guarantee idempotence.")
IDEMPOTENCE_IN_FLIGHT = ("Must set max.in.flight.requests.per.connection to at most 5 "
                         "to use the idempotent producer.")
TXN_NEEDS_IDEMPOTENCE = "Cannot set a transactional.id without also enabling idempotence."


def producer_config(given: dict) -> dict:
    cfg, explicit = resolve(PRODUCER, given, "producer")
    if not cfg["bootstrap.servers"]:
        raise ConfigException("bootstrap.servers", "is required (use cluster.bootstrap)")
    cfg["acks"] = -1 if cfg["acks"] in ("all", "-1") else int(cfg["acks"])
    tid = cfg["transactional.id"]
    if tid is not None and tid == "":
        raise ConfigException("transactional.id", "must not be empty")
    idem_explicit = "enable.idempotence" in explicit
    if cfg["enable.idempotence"]:
        strict = idem_explicit
        conflicts = []
        if cfg["retries"] == 0:
            conflicts.append(("retries", IDEMPOTENCE_RETRIES))
        if cfg["acks"] != -1:
            conflicts.append(("acks", IDEMPOTENCE_ACKS))
        if cfg["max.in.flight.requests.per.connection"] > 5:
            conflicts.append(("max.in.flight.requests.per.connection", IDEMPOTENCE_IN_FLIGHT))
        if conflicts:
            if strict:
                k, msg = conflicts[0]
                raise ConfigException(k, msg)
            cfg["enable.idempotence"] = False   # defaulted: silently off, as Kafka does
    if tid is not None and not cfg["enable.idempotence"]:
        raise ConfigException("transactional.id", TXN_NEEDS_IDEMPOTENCE
                              + ("" if idem_explicit else " (idempotence was turned off by "
                                 + ", ".join(k for k in ("acks", "retries", "max.in.flight.requests.per.connection")
                                             if k in explicit) + ")"))
    return cfg


def consumer_config(given: dict) -> dict:
    cfg, _ = resolve(CONSUMER, given, "consumer")
    if not cfg["bootstrap.servers"]:
        raise ConfigException("bootstrap.servers", "is required (use cluster.bootstrap)")
    if cfg["heartbeat.interval.ms"] >= cfg["session.timeout.ms"]:
        raise ConfigException("heartbeat.interval.ms", "must be lower than session.timeout.ms")
    reset = cfg["auto.offset.reset"]
    cfg["auto.offset.reset"] = {"smallest": "earliest", "beginning": "earliest",
                                "largest": "latest", "end": "latest"}.get(reset, reset)
    return cfg


__all__ = ["PRODUCER", "CONSUMER", "producer_config", "consumer_config", "between"]
