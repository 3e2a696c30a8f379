"""``rd_kafka_conf_finalize`` for the lab's clients: the cross-property rules librdkafka applies when a
producer or consumer is created (and, under ``sim.client.dialect=java``, the Java client's rules instead).

Each rule adjusts a defaulted property or refuses an explicit one, with librdkafka's words behind
"Failed to create producer: ".  At the end the few keys the client machinery reads under Kafka's names
(``acks`` as an int, the consumer's ``request.timeout.ms``, one ``partition.assignment.strategy``) are set.
"""
from __future__ import annotations

from ..errors import ConfigException
from . import dialect as dialects
from . import librdkafka_config as L

IDEMP_MAX_INFLIGHT = 5          # RD_KAFKA_IDEMP_MAX_INFLIGHT
INT32_MAX = 2_147_483_647

# the Java client's wording (ProducerConfig), kept for sim.client.dialect=java
IDEMPOTENCE_RETRIES = "Must set retries to non-zero when using the idempotent producer."
IDEMPOTENCE_ACKS = ("Must set acks to all in order to use the idempotent producer. "
                    "Otherwise we cannot guarantee idempotence.")
IDEMPOTENCE_IN_FLIGHT = ("Must set max.in.flight.requests.per.connection to at most 5 "
                         "to use the idempotent producer.")
TXN_NEEDS_IDEMPOTENCE = "Cannot set a transactional.id without also enabling idempotence."


def _refuse(modified: dict, name: str, what: str, text: str) -> ConfigException:
    key = modified.get(name, name)
    full = f"Failed to create {what}: {text}" + ("" if key in text else f' (set as "{key}")')
    return ConfigException(key, text, full)


def finalize_producer(cfg: dict, modified: dict, dialect: str, what: str = "producer") -> None:
    tid = cfg["transactional.id"]
    if tid is not None and tid == "":
        raise ConfigException(modified.get("transactional.id", "transactional.id"), "must not be empty")
    if dialect == dialects.JAVA:
        _java_producer(cfg, modified)
    else:
        _librdkafka_producer(cfg, modified, what)
    mt, linger = cfg["message.timeout.ms"], cfg["queue.buffering.max.ms"]
    if dialect == dialects.LIBRDKAFKA and mt != 0 and mt <= linger:
        if "queue.buffering.max.ms" in modified:
            raise _refuse(modified, "message.timeout.ms" if "message.timeout.ms" in modified
                          else "queue.buffering.max.ms", what, "`message.timeout.ms` must be greater than `linger.ms`")
        cfg["queue.buffering.max.ms"] = mt - 0.1
    if "sticky.partitioning.linger.ms" not in modified:
        cfg["sticky.partitioning.linger.ms"] = int(min(900_000, 2 * cfg["queue.buffering.max.ms"]))
    _common(cfg, modified, what)


def _librdkafka_producer(cfg: dict, modified: dict, what: str) -> None:
    if cfg["transactional.id"] is not None and not cfg["enable.idempotence"]:
        if "enable.idempotence" in modified:
            raise _refuse(modified, "enable.idempotence", what, "`transactional.id` requires `enable.idempotence=true`")
        cfg["enable.idempotence"] = True
    if cfg["transactional.id"] is not None:
        if "socket.timeout.ms" not in modified:
            cfg["socket.timeout.ms"] = max(cfg["transaction.timeout.ms"] - 100, 900)
        elif cfg["transaction.timeout.ms"] + 100 < cfg["socket.timeout.ms"]:
            raise _refuse(modified, "socket.timeout.ms", what,
                          "`socket.timeout.ms` must be set <= `transaction.timeout.ms` + 100")
    if cfg["enable.idempotence"]:
        rules = (
            ("max.in.flight.requests.per.connection", lambda v: v <= IDEMP_MAX_INFLIGHT,
             lambda v: min(v, IDEMP_MAX_INFLIGHT),
             f"`max.in.flight` must be set <= {IDEMP_MAX_INFLIGHT} when `enable.idempotence` is true"),
            ("message.send.max.retries", lambda v: v >= 1, lambda v: INT32_MAX,
             "`retries` must be set >= 1 when `enable.idempotence` is true"),
            ("queue.buffering.backpressure.threshold", lambda v: v <= 1, lambda v: 1,
             "`queue.buffering.backpressure.threshold` must be set to 1 when `enable.idempotence` is true"),
            ("request.required.acks", lambda v: v == -1, lambda v: -1,
             "`acks` must be set to `all` when `enable.idempotence` is true"),
            ("queuing.strategy", lambda v: v == "fifo", lambda v: "fifo",
             "`queuing.strategy` must be set to `fifo` when `enable.idempotence` is true"),
        )
        for name, ok, adjust, text in rules:
            if name in modified:
                if not ok(cfg[name]):
                    raise _refuse(modified, name, what, text)
            else:
                cfg[name] = adjust(cfg[name])
        if cfg["transactional.id"] is not None:
            if "message.timeout.ms" not in modified:
                cfg["message.timeout.ms"] = cfg["transaction.timeout.ms"]
            elif cfg["message.timeout.ms"] > cfg["transaction.timeout.ms"]:
                raise _refuse(modified, "message.timeout.ms", what,
                              "`message.timeout.ms` must be set <= `transaction.timeout.ms`")
    elif cfg["enable.gapless.guarantee"] and "enable.gapless.guarantee" in modified:
        raise _refuse(modified, "enable.gapless.guarantee", what,
                      "`enable.gapless.guarantee` requires `enable.idempotence` to be enabled")


def _java_producer(cfg: dict, modified: dict) -> None:
    """Kafka's ProducerConfig: an explicit enable.idempotence refuses conflicts; a defaulted one is silently
    switched off by them; transactional.id requires idempotence."""
    explicit = "enable.idempotence" in modified
    if cfg["enable.idempotence"]:
        conflicts = [(n, t) for n, bad, t in (
            ("message.send.max.retries", cfg["message.send.max.retries"] == 0, IDEMPOTENCE_RETRIES),
            ("request.required.acks", cfg["request.required.acks"] != -1, IDEMPOTENCE_ACKS),
            ("max.in.flight.requests.per.connection", cfg["max.in.flight.requests.per.connection"] > 5,
             IDEMPOTENCE_IN_FLIGHT)) if bad]
        if conflicts and explicit:
            name, text = conflicts[0]
            raise ConfigException(modified.get(name, name), text)
        if conflicts:
            cfg["enable.idempotence"] = False
    if cfg["transactional.id"] is not None and not cfg["enable.idempotence"]:
        by = ", ".join(modified[n] for n in ("request.required.acks", "message.send.max.retries",
                                              "max.in.flight.requests.per.connection") if n in modified)
        raise ConfigException(modified.get("transactional.id", "transactional.id"), TXN_NEEDS_IDEMPOTENCE
                              + ("" if explicit else f" (idempotence was turned off by {by})"))


def finalize_consumer(cfg: dict, modified: dict, dialect: str) -> None:
    what = "consumer"
    if dialect == dialects.LIBRDKAFKA and not cfg["group.id"]:
        raise ValueError("Failed to create consumer: group.id must be set")   # confluent-kafka's own check
    if not 1 <= cfg["fetch.min.bytes"] <= 100_000_000:
        raise _refuse(modified, "fetch.min.bytes", what,
                      'Configuration property "fetch.min.bytes" value is outside allowed range 1..100000000')
    if cfg["group.protocol"] == "classic":
        if cfg["max.poll.interval.ms"] < cfg["session.timeout.ms"]:
            raise _refuse(modified, "max.poll.interval.ms" if "max.poll.interval.ms" in modified
                          else "session.timeout.ms", what, "`max.poll.interval.ms`must be >= `session.timeout.ms`")
    else:
        for name, text in (
                ("session.timeout.ms", "`session.timeout.ms` is not supported for `group.protocol=consumer` or "
                                       "share consumer. It is defined broker side"),
                ("partition.assignment.strategy", "`partition.assignment.strategy` is not supported for "
                                                  "`group.protocol=consumer`. Use `group.remote.assignor` instead"),
                ("group.protocol.type", "`group.protocol.type` is not supported for `group.protocol=consumer` or "
                                        "share consumer"),
                ("heartbeat.interval.ms", "`heartbeat.interval.ms` is not supported for `group.protocol=consumer` "
                                          "or share consumer. It is defined broker side")):
            if name in modified:
                raise _refuse(modified, name, what, text)
    if "fetch.max.bytes" in modified:
        if cfg["fetch.max.bytes"] < cfg["message.max.bytes"]:
            raise _refuse(modified, "fetch.max.bytes", what, "`fetch.max.bytes` must be >= `message.max.bytes`")
    else:
        cfg["fetch.max.bytes"] = max(min(cfg["fetch.max.bytes"], cfg["queued.max.messages.kbytes"] * 1024),
                                     cfg["message.max.bytes"])
    if "receive.message.max.bytes" in modified:
        if cfg["fetch.max.bytes"] + 512 > cfg["receive.message.max.bytes"]:
            raise _refuse(modified, "receive.message.max.bytes", what,
                          "`receive.message.max.bytes` must be >= `fetch.max.bytes` + 512")
    else:
        cfg["receive.message.max.bytes"] = max(cfg["receive.message.max.bytes"], cfg["fetch.max.bytes"] + 512)
    cfg["enable.idempotence"] = False
    _assignors(cfg, modified)
    _common(cfg, modified, what)
    reset = cfg["auto.offset.reset"]
    cfg["auto.offset.reset"] = {"smallest": "earliest", "beginning": "earliest",
                                "largest": "latest", "end": "latest"}.get(reset, reset)
    # librdkafka's consumer times its requests with socket.timeout.ms (request.timeout.ms is a producer
    # property); the consumer machinery reads it under Kafka's name
    cfg["request.timeout.ms"] = cfg["socket.timeout.ms"]


def _assignors(cfg: dict, modified: dict) -> None:
    names = [s.strip() for s in (cfg["partition.assignment.strategy"] or "").split(",") if s.strip()]
    for s in names:
        if s not in L.ASSIGNORS:
            raise _refuse(modified, "partition.assignment.strategy", "consumer",
                          f"Unsupported partition.assignment.strategy: {s}")
    if len({L.ASSIGNORS[s] for s in names}) > 1 and "partition.assignment.strategy" in modified:
        raise _refuse(modified, "partition.assignment.strategy", "consumer",
                      f"All partition.assignment.strategy ({','.join(names)}) assignors must have the same "
                      "protocol type, online migration between assignors with different protocol types is "
                      "not supported")
    cfg["partition.assignment.strategies"] = tuple(names)
    cfg["partition.assignment.strategy"] = names[0] if names else "range"     # the one the consumer offers


def _common(cfg: dict, modified: dict, what: str) -> None:
    if cfg["reconnect.backoff.max.ms"] < cfg["reconnect.backoff.ms"]:
        raise _refuse(modified, "reconnect.backoff.max.ms", what,
                      "`reconnect.backoff.max.ms` must be >= `reconnect.backoff.ms`")
    if "metadata.max.age.ms" not in modified and cfg["topic.metadata.refresh.interval.ms"] > 0:
        cfg["metadata.max.age.ms"] = cfg["topic.metadata.refresh.interval.ms"] * 3
    if "topic.metadata.refresh.fast.interval.ms" not in modified:
        cfg["topic.metadata.refresh.fast.interval.ms"] = cfg["retry.backoff.ms"]
    cfg["acks"] = cfg["request.required.acks"]
