"""The consumer's look-ups that are not fetching: watermarks, ``offsets_for_times`` and metadata.

Owns ``get_watermark_offsets`` (ListOffsets earliest/latest, or the cached values the last fetch answer
carried), ``offsets_for_times`` (ListOffsets by timestamp: the first offset whose record timestamp is at
least the one asked) and ``list_topics``, and reports from ``poll()`` a topic that Metadata refuses for good.
A mixin of ``Consumer``.  Timestamps cross here between the
application's Unix time and the lab's clock (``sim.clock.epoch.ms`` is the lab's 0).
"""
from __future__ import annotations

from typing import Optional

from ..errors import KafkaError, KafkaException
from ..protocol import messages as m
from ..protocol.errors import Errors
from .config import dialect_of
from .dialect import (CONSUMER_TOPIC_ERROR, JAVA, LIBRDKAFKA, Action, metadata_topic_action, seen_as,
                      topic_error_text)
from .fetcher import LIST_EARLIEST, LIST_LATEST
from .message import OFFSET_END, OFFSET_INVALID, Message, TopicPartition


class ConsumerLookups:
    def _list_offsets(self, asks: dict, timeout: Optional[float]) -> Optional[dict]:
        """One ListOffsets per (name -> (tp, timestamp)) to each partition's leader; {name: (error, offset)},
        or None when ``timeout`` simulated seconds passed first."""
        box: dict = {}
        for name, (key, ts) in asks.items():
            def go(name=name, key=key, ts=ts):
                self._fetcher.list_offsets(key, ts, lambda e, off: box.__setitem__(name, (e, off)))
            if self._node.leader_for(key) is None:
                self._node.request_metadata((key[0],), then=go)
            else:
                go()
        if not self._wait(lambda: len(box) == len(asks), self._timeout_ms(timeout)):
            self._check_open()
            return None
        return box

    def get_watermark_offsets(self, partition: TopicPartition, timeout: Optional[float] = None,
                              cached: bool = False) -> Optional[tuple]:
        """(low, high): the log start offset, and the end a consumer of this isolation level may read (the LSO
        for read_committed, else the HW).  ``cached=True`` answers, as librdkafka does, from the last fetch
        answer: (log start, **high watermark**) whatever the isolation level (the LSO is kept apart)."""
        self._check_open()
        key = (partition.topic, partition.partition)
        if cached:
            st = self._assignment.get(key)
            if st is None:
                return (OFFSET_INVALID, OFFSET_INVALID)
            return (st.log_start_offset, st.high_watermark)
        got = self._list_offsets({"low": (key, LIST_EARLIEST), "high": (key, LIST_LATEST)}, timeout)
        if got is None:
            return None
        for name in ("low", "high"):
            e, _ = got[name]
            if e != Errors.NONE:
                shown = seen_as(dialect_of(self._config), e)     # a local timeout: dialect.LOCAL_TIMEOUT
                raise KafkaException(KafkaError(shown, f"get_watermark_offsets: {KafkaError(shown).name()}"))
        return (got["low"][1], got["high"][1])

    def offsets_for_times(self, partitions: list, timeout: Optional[float] = None) -> list[TopicPartition]:
        """For each TopicPartition whose ``offset`` holds a timestamp (Unix ms): the earliest offset whose
        record timestamp is at least that (ListOffsets by timestamp), or -1 (OFFSET_END) if there is none."""
        self._check_open()
        epoch = self._config["sim.clock.epoch.ms"]
        # one question per partition, with the timestamp of its last entry, answered to each of its entries:
        # librdkafka's rd_kafka_topic_partition_list_get_leaders (rdkafka_partition.c) updates a partition already
        # in the leader's list, and rd_kafka_topic_partition_list_update copies the one answer to every entry
        # (Kafka's broker would answer a partition twice in one ListOffsets INVALID_REQUEST)
        asks = {}
        for tp in partitions:
            # -1 / -2 keep ListOffsets' meaning (latest / earliest); a time before the lab began asks below 0
            asks[(tp.topic, tp.partition)] = ((tp.topic, tp.partition), m.asked_time(tp.offset, epoch))
        self._note(f"{self.name} calls offsets_for_times({', '.join(f'{tp.topic}-{tp.partition}@{tp.offset}' for tp in partitions)})")
        got = self._list_offsets(asks, timeout)
        if got is None:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get offsets: Local: Timed out"))
        out = []
        for tp in partitions:
            e, off = got[(tp.topic, tp.partition)]
            r = TopicPartition(tp.topic, tp.partition, off if off >= 0 else OFFSET_END)
            if e != Errors.NONE:
                r.offset = OFFSET_INVALID
                r.error = KafkaError(seen_as(dialect_of(self._config), e))
            out.append(r)
        return out

    def list_topics(self, topic: Optional[str] = None, timeout: float = -1):
        self._check_open()
        from .admin import cluster_metadata
        return cluster_metadata(self._node, self._kernel, topic, dialect_of(self._config))

    def cluster_id(self, timeout: float = -1):
        """The cluster id from a Metadata request (v2+ carries it), as librdkafka's rd_kafka_clusterid."""
        return self.list_topics(None, timeout).cluster_id

    def _metadata_arrived(self) -> None:
        if self._node.topic_errors:
            self._changed = True                  # (a poll waiting wakes to report a refused topic)

    def _report_topic_errors(self) -> None:
        """A topic that Metadata refused for good (dialect.METADATA_TOPIC: not authorized, invalid) is reported
        from poll() once per error; the consumer goes on with its other topics (the group's leader assigns only
        topics with partitions).  librdkafka: a subscribed topic, as an error message "Subscribed topic not
        available: <topic>: ..." (rdkafka_cgrp.c rd_kafka_propagate_consumer_topic_errors; a topic only assign()ed
        and never known just waits: rd_kafka_topic_partition_cnt_update has no partitions to fail); Java: a
        subscribed or assigned one, poll throws it (ConsumerNetworkClient.poll -> Metadata.maybeThrowAnyException)."""
        errors, seen = self._node.topic_errors, self._topic_errors_reported
        for t in [t for t, e in seen.items() if errors.get(t) != e]:
            del seen[t]                           # gone or changed: a new error is reported again
        dialect = JAVA if self._java else LIBRDKAFKA
        for t, e in errors.items():
            if seen.get(t) == e or metadata_topic_action(dialect, e) is not Action.PERMANENT:
                continue
            if t not in self._subscription and (not self._java or not any(tp[0] == t for tp in self._assignment)):
                continue        # librdkafka checks only the subscription's topics (an assigned one waits)
            seen[t] = e
            code = CONSUMER_TOPIC_ERROR[dialect].get(e, e)
            text = topic_error_text(dialect, code, t)
            self._say(f"{self.name}: Metadata refuses topic {t!r} ({Errors(e).name}); poll() reports it")
            if self._java:
                raise KafkaException(KafkaError(int(code), text))
            # (rd_kafka_consumer_err names the topic, not a partition: the message's partition is 0)
            self._fetcher.events.append(Message(t, 0, OFFSET_INVALID, None, None, error=KafkaError(
                int(code), f"Subscribed topic not available: {t}: {text}")))
