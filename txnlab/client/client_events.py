"""What a client tells its application outside the call it is in: ``error_cb``, ``stats_cb`` and ``logger``.

librdkafka puts these on the client's reply queue and confluent-kafka serves them from ``poll()`` (and
``flush()``, ``consume()``, ``list_topics()``…), in the application's thread — never from inside the library's
own machinery.  The lab does the same: the client's node records an event when it happens (simulated time) and
the next serving call runs the callbacks in order.

- ``error_cb(KafkaError)``: errors that belong to no single request — a broker connection that failed or broke
  (``_TRANSPORT``, -195), every known broker down (``_ALL_BROKERS_DOWN``, -187, once each time the last one goes).
  Without an ``error_cb`` librdkafka logs such an error; so does the lab, to ``logger`` if one is set.
- a fatal error (``fatal``): librdkafka queues ``_FATAL`` (-150) for ``error_cb``, but confluent-kafka never calls
  ``error_cb`` with it: the serving call raises ``KafkaException`` with the underlying error instead (its
  ``error_cb`` trampoline, src/confluent_kafka/src/confluent_kafka.c: "If the client raised a fatal error we'll
  raise an exception rather than calling the error callback"), once.  ``poll()`` raises it where it stands in the
  queue, the events behind it stay for the next call; ``flush()`` serves the rest and then raises.  (The Java
  dialect has no such exception: its ``error_cb`` gets ``_FATAL``, as before.)
- ``stats_cb(json_str)``: every ``statistics.interval.ms`` of simulated time (0: never), librdkafka's
  statistics JSON with the fields the lab can state truthfully (see ``statistics``); one report per interval
  that passed, as librdkafka's timer would have queued them.
- ``logger``: a ``logging.Logger``; lines go to ``logger.log(level, "%s [%s] %s", facility, name, text)`` as
  confluent-kafka forwards them, served from ``poll()`` like the rest; lines above ``log_level`` are dropped
  (rd_kafka_log0).

A request the client gave up on (its request timeout passed) is logged, not reported to ``error_cb``: librdkafka
logs each ``REQTMOUT`` (NOTICE) and the count (WARNING), then takes the connection down as a *planned* failure,
logged at DEBUG only, with no error event and not counted towards ``_ALL_BROKERS_DOWN`` (``request_timed_out``).
"""
from __future__ import annotations

import json
import logging
from typing import Callable, Optional

from ..errors import KafkaError, KafkaException

# librdkafka's syslog levels as confluent-kafka maps them onto Python's logging levels
_PY_LEVEL = {0: logging.CRITICAL, 1: logging.CRITICAL, 2: logging.CRITICAL, 3: logging.ERROR,
             4: logging.WARNING, 5: logging.INFO, 6: logging.INFO, 7: logging.DEBUG}


class ClientEvents:
    """The reply queue of one client for the events no call returns."""

    def __init__(self, cfg: dict, kind: str, name: str, kernel, epoch_ms: int,
                 statistics: Callable[[], dict]) -> None:
        self.kind, self.name, self._kernel, self._epoch_ms = kind, name, kernel, epoch_ms
        self._error_cb = cfg.get("error_cb")
        self._stats_cb = cfg.get("stats_cb")
        self._logger = cfg.get("logger")
        self._client_id = cfg.get("client.id", "rdkafka")
        self._java = cfg.get("sim.client.dialect") == "java"
        self._log_level = int(cfg.get("log_level", 6))
        self._thread_name = bool(cfg.get("log.thread.name", True))
        self._interval = int(cfg.get("statistics.interval.ms") or 0) if self._stats_cb else 0
        self._started = kernel.now
        self._next_stats = kernel.now + self._interval
        self._statistics = statistics
        self._queue: list = []                 # ("error", KafkaError) | ("log", level, fac, text) | ("stats", ts)
        self.all_down_reported = False

    # ----------------------------------------------------------------- recording (the client's machinery)
    def fatal(self, err: KafkaError) -> None:
        """The client's fatal error ``err`` (its own code, e.g. ``_FENCED``): raised by the serving call."""
        if self._java:
            self.error(KafkaError._FATAL, f"Fatal error: {err.str()}", fatal=True)
        else:
            self._queue.append(("fatal", err))

    def error(self, code: int, reason: str, fatal: bool = False) -> None:
        err = KafkaError(code, reason, fatal=fatal)
        if self._error_cb is not None:
            self._queue.append(("error", err))
        else:                                  # librdkafka: no error_cb, so the error is logged
            self.log(3, "ERROR", f"{reason}")

    def log(self, level: int, facility: str, text: str) -> None:
        if self._logger is not None and level <= self._log_level:
            self._queue.append(("log", level, facility, text))

    def request_timed_out(self, thread: str, logname: str, node_id: str, timed_out: list) -> None:
        """The client gave up on requests in flight to a broker (their request timeout passed) and takes the
        connection down.  ``logname``: librdkafka's name of that broker connection ("broker-1/1",
        "GroupCoordinator/1"), ``thread`` its thread's ("broker-1/1", "GroupCoordinator"); ``timed_out``: [(api, ms since sent)] of the requests whose timeout passed, oldest
        first (the others in flight on the connection fail with them and are not counted).

        librdkafka (src/rdkafka_broker.c): rd_kafka_broker_bufq_timeout_scan logs each of the first 5 at NOTICE,
        "Timed out <Api>Request in flight (after <ms>ms, timeout #<n>)", and rd_kafka_broker_timeout_scan the count
        at WARNING; socket.max.fails being 1, it then calls rd_kafka_broker_planned_fail(_TIMED_OUT, "<n>
        request(s) timed out: disconnect"), which is rd_kafka_broker_fail at LOG_DEBUG: rd_kafka_broker_set_error
        logs and sends an ERR op to the application (error_cb) only for level <= LOG_INFO (and the op only for
        <= LOG_ERR), so nothing reaches error_cb, and the broker going DOWN is not counted towards
        _ALL_BROKERS_DOWN (skip_broker_down).  Since librdkafka 2.11.1 (#5126); before, it was
        rd_kafka_broker_fail(LOG_ERR): an error_cb event _TIMED_OUT.
        Java (NetworkClient.handleTimedOutRequests): log.info("Disconnecting from node {} due to request
        timeout."), no callback (the requests fail as timed out)."""
        if self._java:
            self.log(6, "NetworkClient", f"Disconnecting from node {node_id} due to request timeout.")
            return
        prefix = f"[thrd:{thread}]: " if self._thread_name else ""          # log.thread.name
        for n, (api, after_ms) in enumerate(timed_out[:5]):
            self.log(5, "REQTMOUT", f"{prefix}{logname}: Timed out {api}Request in flight "
                                    f"(after {after_ms}ms, timeout #{n})")
        self.log(4, "REQTMOUT", f"{prefix}{logname}: Timed out {len(timed_out)} in-flight, 0 retry-queued, "
                                f"0 out-queue, 0 partially-sent requests")

    # ----------------------------------------------------------------- serving (the application's thread)
    def serve(self) -> int:
        """Run what is due: the statistics intervals that passed, then queued events in order; a fatal error is
        raised (``KafkaException``) where it stands, and the events behind it wait for the next call (``poll()``)."""
        served, fatal = self.serve_through(stop_at_fatal=True)
        if fatal is not None:
            raise KafkaException(fatal)
        return served

    def serve_logs(self) -> None:
        """Hand the queued log lines to ``logger`` now, the other events staying queued: the Java client has no
        reply queue for its log lines (slf4j logs in the thread that logs), so what ``close()`` logged is out when
        it returns -- nothing would poll for it afterwards."""
        lines = [ev for ev in self._queue if ev[0] == "log"]
        self._queue = [ev for ev in self._queue if ev[0] != "log"]
        for _, level, fac, text in lines:
            self._logger.log(_PY_LEVEL.get(level, logging.INFO), "%s [%s] %s", fac, self.name, text)

    def serve_through(self, stop_at_fatal: bool = False) -> tuple:
        """As ``serve``, but a fatal error is returned, not raised: (events served, the fatal error or None).
        ``flush()`` serves every event and its delivery reports, then raises it."""
        if self._interval:
            now = self._kernel.now
            while self._next_stats <= now:
                self._queue.append(("stats", self._next_stats))
                self._next_stats += self._interval
        served = 0
        fatal = None
        while self._queue:
            ev = self._queue.pop(0)
            served += 1
            if ev[0] == "fatal":
                fatal = fatal or ev[1]
                if stop_at_fatal:
                    break
            elif ev[0] == "error":
                self._error_cb(ev[1])
            elif ev[0] == "log":
                _, level, fac, text = ev
                self._logger.log(_PY_LEVEL.get(level, logging.INFO), "%s [%s] %s", fac, self.name, text)
            else:
                self._stats_cb(json.dumps(self.statistics(ev[1])))
        return served, fatal

    def statistics(self, at_ms: Optional[int] = None) -> dict:
        """librdkafka's statistics object (STATISTICS.md): the top-level fields, then what the client adds."""
        at = self._kernel.now if at_ms is None else at_ms
        out = {"name": self.name, "client_id": self._client_id, "type": self.kind,
               "ts": at * 1000,                                   # µs on the client's monotonic clock
               "time": (self._epoch_ms + at) // 1000,             # Unix seconds
               "age": (at - self._started) * 1000}
        out.update(self._statistics())
        return out
