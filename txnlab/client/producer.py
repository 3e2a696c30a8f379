"""``Producer``: confluent-kafka's producer surface over Kafka's producer machinery.

The public face (``produce``, ``poll``, ``flush``, ``len``, and the
transactional calls) over a ``RecordAccumulator``, a ``Sender`` and a
``TransactionManager``, all running on a simulated client process.  Blocking
calls drive the simulation until they are done, and their timeouts are in
simulated seconds.
"""
from __future__ import annotations

import zlib
from types import MappingProxyType
from typing import Callable, Optional

from ..errors import KafkaError, KafkaException, KafkaStateError
from ..kernel.attach import constructed_in_turn
from ..protocol.errors import Errors
from ..protocol.hashing import murmur2_partition
from . import argcheck
from .client_events import ClientEvents
from .config import dialect_of, notices, producer_config
from .dialect import LIBRDKAFKA, Action, metadata_topic_action, topic_error_text
from .message import Message
from .network_client import attach_client, block
from .record_accumulator import RECORD_OVERHEAD, RecordAccumulator
from .sender import Sender
from .transaction_manager import S, State, TransactionManager


def _to_bytes(v, what: str):
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    raise TypeError(f"{what} must be bytes or str, not {type(v).__name__}")



_UNASSIGNED = -1    # produce()'s partition: the partitioner chooses
_NOW = 0            # produce()'s timestamp: now
_NO_BATCHES = MappingProxyType({})     # produce()'s short path while the producer may not produce

# librdkafka's rd_kafka_topic_scan_all (from rd_kafka_1s_tmr_cb): a topic with no partitions is asked for again
TOPIC_SCAN_INTERVAL_MS = 1_000


class Producer:
    """A Kafka producer (idempotent by default; transactional with ``transactional.id``)."""

    @constructed_in_turn
    def __init__(self, config: dict, **kwargs) -> None:
        conf = dict(config or {})
        conf.update(kwargs)
        self._config = cfg = producer_config(conf)
        # the lab's "naive-client-classic" switch reaches us as sim.naive.client (every producer pre-KIP-360)
        self._attachment, self.name, self._node = attach_client(cfg, "producer", self)
        self._kernel = self._attachment.kernel
        self._acks = cfg["acks"]
        self._idempotent = cfg["enable.idempotence"]
        self._txn = TransactionManager(cfg["transactional.id"], cfg["transaction.timeout.ms"])
        self._acc = RecordAccumulator(cfg["batch.size"], cfg["batch.num.messages"],
                                      retry_in_order=dialect_of(cfg) != "java",
                                      max_record_size=cfg["message.max.bytes"])
        self._default_cb = cfg["on_delivery"]
        self._reports: list = []               # (callback, err, msg) waiting for poll()
        self._unacked = 0                      # records produced, delivery not yet reported
        self._delivered = 0                    # records acknowledged (statistics' txmsgs)
        self._sticky: dict = {}                # topic -> the sticky partition of keyless records
        self._sticky_batch: dict = {}          # topic -> the open batch of that partition (produce's short path)
        self._unassigned: list = []
        self._topic_refused_at: dict = {}      # librdkafka: topic -> when Metadata refused it (its error state)
        self._topic_born: dict = {}            # librdkafka: topic -> when it was first produced to (rkt_ts_create)
        self._topic_gone: set = set()          # librdkafka: topics marked non-existent (RD_KAFKA_TOPIC_S_NOTEXISTS)
        self._closed: Optional[KafkaError] = None
        self._resumable: Optional[tuple] = None   # (call, op) of a transactional call that timed out
        self._partitioner = cfg["partitioner"]
        self._dialect = dialect_of(cfg)
        self._epoch_ms = cfg["sim.clock.epoch.ms"]     # the lab clock's 0, as a Unix time (timestamps, latency)
        self._max_bytes = cfg["message.max.bytes"]
        # produce() is legal in exactly one client state: IN_TRANSACTION for a transactional
        # producer; an idempotent or plain producer never leaves UNINITIALIZED
        self._producing_state = S.IN_TRANSACTION if cfg["transactional.id"] is not None else S.UNINITIALIZED
        self._open_batches = _NO_BATCHES       # produce()'s short path: see _reopen_short_path
        self._reopen_short_path()
        self.sender = Sender(self)
        self._events = ClientEvents(cfg, "producer", self.name, self._kernel, self._epoch_ms, self._statistics)
        self._txn.on_transition = self._on_txn_transition
        for line in notices(cfg):                 # librdkafka's CONFWARN lines and what the lab ignores
            self._kernel.record("note", self.name, line)

    # --------------------------------------------------------------- helpers
    def __repr__(self) -> str:
        return f"<Producer {self.name}>"

    @property
    def transaction_manager(self) -> TransactionManager:
        return self._txn

    def _check_alive(self, serving: bool = False) -> None:
        """``serving``: poll() and flush(), which a fatal error does not stop (they serve the events and delivery
        reports left; the fatal error itself is raised once, by the call that serves it: ClientEvents.fatal)."""
        if self._closed is not None:
            raise RuntimeError("Producer has been closed")
        if self._node.crashed:
            raise KafkaException(KafkaError(KafkaError._FATAL, f"{self.name}'s process has crashed", fatal=True))
        if self._txn.state == S.FATAL_ERROR and not serving:
            raise KafkaException(self._txn.last_error)

    def _on_process_crash(self) -> None:
        self._reopen_short_path()
        self.sender.on_crash()

    def _reopen_short_path(self) -> None:
        """produce()'s short path finds its batch in ``_open_batches``: the open batches of the sticky partitions
        while the producer may produce (in the one transaction state it produces in, its process alive, not
        closed), an empty mapping otherwise.  So the short path checks none of the three itself: this runs
        wherever one of them changes (every transaction state transition, the crash, close()), and any other
        call goes the long way, where _produce_refused says why."""
        allowed = self._txn.state is self._producing_state and not self._node.crashed and self._closed is None
        self._open_batches = self._sticky_batch if allowed else _NO_BATCHES

    def _on_txn_transition(self, old: State, new: State) -> None:
        producing = self._producing_state
        if new is producing:
            self._reopen_short_path()
        elif old is producing:
            self._open_batches = _NO_BATCHES          # (see _reopen_short_path)
        # librdkafka's rd_kafka_set_fatal_error queues _FATAL for the application; confluent-kafka raises the
        # underlying error from the poll() or flush() that serves it (ClientEvents.fatal)
        if new == S.FATAL_ERROR:
            err = self._txn.last_error
            self._events.fatal(err if err is not None else KafkaError(KafkaError._FATAL, "Fatal error", fatal=True))

    def _statistics(self) -> dict:
        """The producer's part of librdkafka's statistics (msg_cnt, txmsgs, brokers' tx/rx, eos)."""
        node, txn = self._node, self._txn
        return {"msg_cnt": self._unacked, "msg_max": self._config["queue.buffering.max.messages"],
                "txmsgs": self._delivered,
                "brokers": {b: {"name": b, "nodeid": int(b.rsplit("-", 1)[-1]), "tx": node.tx.get(b, 0),
                                "rx": node.rx.get(b, 0)} for b in sorted(set(node.tx) | set(node.rx))},
                "eos": {"idemp_state": "Assigned" if txn.has_producer_id else "Init",
                        "txn_state": txn.state.name, "producer_id": txn.producer_id,
                        "producer_epoch": txn.producer_epoch}}

    def _note(self, text: str) -> None:
        self._kernel.record("call", self.name, text)

    # ---------------------------------------------------------------- produce
    def produce(self, topic: str, value=None, key=None, partition: int = -1, callback: Optional[Callable] = None,
                on_delivery: Optional[Callable] = None, timestamp: int = 0, headers=None) -> None:
        """confluent-kafka's argument order (``callback`` is ``on_delivery``'s old name).  ``timestamp`` is
        milliseconds since the Unix epoch, as the application sees it (0: now, on the lab's anchored clock)."""
        if key is None and partition is _UNASSIGNED and timestamp is _NOW and headers is None and on_delivery is None \
                and callback is None and value.__class__ is bytes:
            # the common case, kept short (it is what a benchmark and a busy notebook call most): a keyless
            # record stamped now, with no callback of its own, joins the open batch of its topic's sticky
            # partition.  (``is``: CPython has one int object each for -1 and 0, so no float, bool or other int
            # passes, as the checks below would refuse them.)  Each check it leaves out is kept true elsewhere:
            # the batch is there only while the producer may produce (_reopen_short_path), and ``limit`` stands
            # for the batch's room, batch.num.messages and message.max.bytes (RecordAccumulator.open_short_path).
            b = self._open_batches.get(topic)
            if b is not None:
                size = b.size + RECORD_OVERHEAD + len(value)
                if size < b.limit and b.stamp == self._kernel.now:
                    # at the time of the batch's last row (ProducerBatch.stamp), its value is all there is to
                    # keep: no callback, no key or headers, and the timestamp of the row before it
                    b.size = size
                    b.values.append(value)
                    self._unacked += 1
                    return
        if self._txn.state is not self._producing_state or self._node.crashed or self._closed is not None:
            self._produce_refused()
        if timestamp.__class__ is not int or timestamp < 0 or on_delivery is not None and not callable(on_delivery) \
                or callback is not None and not callable(callback) or partition.__class__ is not int \
                or headers is not None and headers.__class__ not in (dict, list, tuple):
            argcheck.produce_args(timestamp, on_delivery, callback)
            argcheck.produce_extras(partition, headers)
        if value.__class__ is not bytes and value is not None:
            value = value.encode("utf-8") if value.__class__ is str else _to_bytes(value, "value")
        if key.__class__ is not bytes and key is not None:
            key = _to_bytes(key, "key")
        if headers:
            if isinstance(headers, dict):
                headers = tuple((k, _to_bytes(v, "header value")) for k, v in headers.items())
            else:
                headers = tuple((k, _to_bytes(v, "header value")) for k, v in headers)
        else:
            headers = ()
        # librdkafka's rd_kafka_msg_new0 refuses an oversized record at once, before it is partitioned
        size = RECORD_OVERHEAD + (len(value) if value else 0) + (len(key) if key else 0)
        if size > self._max_bytes:
            raise KafkaException(KafkaError(10, f"Unable to produce message: Broker: Message size too large "
                                            f"({size} bytes > message.max.bytes {self._max_bytes})"))
        ts = timestamp - self._epoch_ms if timestamp else self._kernel.now    # the log keeps lab time
        cb = on_delivery or callback or self._default_cb
        parts = self._node.topics.get(topic)         # ClientNode.num_partitions, inlined
        n = len(parts) if parts else None
        if n is None:
            if not isinstance(topic, str):
                raise TypeError("topic must be a str")
            if topic in self._topic_gone:
                # rd_kafka_msg_partitioner: a topic marked non-existent refuses at once
                raise KafkaException(KafkaError(KafkaError._UNKNOWN_TOPIC, "Unable to produce message: Local: "
                                                                           "Unknown topic"))
            self._topic_born.setdefault(topic, self._kernel.now)
            refused = self._topic_refused_at.get(topic)
            if refused is not None and self._kernel.now - refused < TOPIC_SCAN_INTERVAL_MS:
                # rd_kafka_msg_partitioner: a topic in the error state (rd_kafka_topic_set_error) refuses at once,
                # until rd_kafka_topic_scan_all (every second) asks for its metadata again
                raise KafkaException(KafkaError(int(Errors.TOPIC_AUTHORIZATION_FAILED),
                                                "Unable to produce message: Broker: Topic authorization failed"))
            # like librdkafka: the record waits (unassigned) until the topic's metadata arrives
            self._unassigned.append((topic, value, key, partition, cb, ts, headers))
            self._unacked += 1
            self._node.request_metadata((topic,), then=self._assign_waiting)
            return
        self._append(topic, value, key, partition, cb, ts, headers, n)

    def _produce_refused(self) -> None:
        txn = self._txn
        if self._closed is not None:
            raise RuntimeError("Producer has been closed")
        if self._dialect == LIBRDKAFKA and not self._node.crashed:
            # librdkafka's rd_kafka_msg_new: a producer with a fatal error refuses with _FATAL, a transactional
            # producer not IN_TRANSACTION (an abortable error included) with _STATE
            if txn.state == S.FATAL_ERROR:
                raise KafkaException(KafkaError(KafkaError._FATAL, "Unable to produce message: Local: Fatal error "
                                                f"({txn.last_error.name()}: the producer must be closed)"))
            if txn.state is not self._producing_state:
                raise KafkaStateError("Unable to produce message: Local: Erroneous state (" + (
                    f"the transaction must be aborted after {txn.last_error.name()}"
                    if txn.state == S.ABORTABLE_ERROR else
                    f"a transactional producer must call begin_transaction() first; state {txn.state.name}") + ")")
            return
        self._check_alive()
        if txn.state is self._producing_state:
            return
        if txn.state == S.ABORTABLE_ERROR:
            raise KafkaException(txn.last_error)      # Java: the error that made the transaction abortable
        raise KafkaStateError(f"produce() outside a transaction: a transactional producer must call "
                              f"begin_transaction() first (state {txn.state.name})")

    def _assign_waiting(self) -> None:
        waiting, self._unassigned = self._unassigned, []
        retry = False
        for rec in waiting:
            topic = rec[0]
            n = self._node.num_partitions(topic)
            err = self._node.topic_errors.get(topic)
            if n is not None:
                self._unacked -= 1
                try:
                    self._append(*rec, n)
                except KafkaException as e:
                    self._unacked += 1
                    self.sender.record_failed_in_txn(e.error, unassigned=True)
                    self.deliver(rec[4], e.error, Message(topic, -1, -1, rec[2], rec[1], error=e.error))
            elif err == Errors.UNKNOWN_TOPIC_OR_PARTITION and self._dialect == LIBRDKAFKA and \
                    self._kernel.now - self._topic_born.get(topic, rec[5]) >= \
                    self._config["topic.metadata.propagation.max.ms"]:
                # rd_kafka_topic_set_notexists: once topic.metadata.propagation.max.ms has passed since the topic was
                # first produced to, a Metadata answer without it marks it non-existent and fails its waiting
                # records (rd_kafka_topic_assign_uas); produce() to it then refuses at once (_UNKNOWN_TOPIC)
                self._topic_gone.add(topic)
                kerr = KafkaError(int(err), topic_error_text(self._dialect, err, topic), retriable=False)
                self.sender.record_failed_in_txn(kerr, unassigned=True)
                self.deliver(rec[4], kerr, Message(topic, -1, -1, rec[2], rec[1], error=kerr))
            elif err is not None and metadata_topic_action(self._dialect, err) is Action.PERMANENT:
                # a permanent topic error (invalid, not authorized: dialect.METADATA_TOPIC) fails the waiting
                # records at once with the broker's error (librdkafka's rd_kafka_topic_assign_uas; Java's
                # KafkaProducer.doSend: the callback, and an abortable transaction)
                kerr = KafkaError(int(err), topic_error_text(self._dialect, err, topic))
                if err == Errors.TOPIC_AUTHORIZATION_FAILED and self._dialect == LIBRDKAFKA:
                    self._topic_refused_at[topic] = self._kernel.now
                self.sender.record_failed_in_txn(kerr, unassigned=True)
                self.deliver(rec[4], kerr, Message(topic, -1, -1, rec[2], rec[1], error=kerr))
            elif 0 < self._config["delivery.timeout.ms"] <= self._kernel.now - rec[5]:    # (0: never expires)
                kerr = KafkaError(KafkaError._MSG_TIMED_OUT if err is None else err,
                                  f"no metadata for topic {topic!r}")
                self.sender.record_failed_in_txn(kerr, unassigned=True)
                self.deliver(rec[4], kerr, Message(topic, -1, -1, rec[2], rec[1], error=kerr))
            else:
                self._unassigned.append(rec)
                retry = True
        if retry:
            self._node.set_timer(self._config["retry.backoff.ms"], "metadata retry for unassigned records",
                                 lambda: self._node.request_metadata(
                                     tuple({r[0] for r in self._unassigned}), then=self._assign_waiting))

    def _append(self, topic, value, key, partition, cb, ts, headers, n) -> None:
        txn = self._txn
        if partition is None or partition < 0:
            partition = self._partition_for(topic, key, n)
        elif partition >= n:
            if self._dialect == LIBRDKAFKA:     # rd_kafka_msg_partitioner: a partition the known topic does not have
                raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION, f"Unable to produce message: Local: "
                                                f"Unknown partition ({topic} has {n} partitions)"))
            raise KafkaException(KafkaError(3, f"partition {partition} of {topic} does not exist ({n} partitions)"))
        tp = (topic, partition)
        size = RECORD_OVERHEAD + (len(value) if value else 0) + (len(key) if key else 0)
        # a plain (key, value, headers, timestamp) tuple, as produce()'s short path stores: the batch turns its
        # rows into Records only if somebody reads them
        batch, created, full = self._acc.append(tp, (key, value, headers, ts), size, cb, self._kernel.now)
        self._unacked += 1
        if key is None and headers == () and self._sticky.get(topic) == partition:
            self._sticky_batch[topic] = batch
            self._acc.open_short_path(batch)
        if txn.transactional_id is not None and tp not in txn.partitions_in_txn:
            txn.pending_partitions.add(tp)
        if full:
            self._sticky.pop(topic, None)
            self.sender.wakeup(0)
        elif created:
            # a flush() in progress sends at once (librdkafka: flush ignores linger.ms)
            self.sender.wakeup(0 if self.sender.flushing else self._config["linger.ms"])

    def _partition_for(self, topic: str, key, n: int) -> int:
        if key is None:
            p = self._sticky.get(topic)
            if p is None or p >= n:
                p = self._sticky[topic] = self._kernel.rng.randrange(n)
            return p
        if self._partitioner in ("murmur2", "murmur2_random"):
            return murmur2_partition(key, n)
        if self._partitioner == "random":
            return self._kernel.rng.randrange(n)
        return zlib.crc32(key) % n

    # ---------------------------------------------------------- poll / flush
    def _serve_reports(self, flushing: bool = False) -> int:
        """The client's events, then the delivery reports.  A fatal error raises (ClientEvents.serve): from poll()
        before the reports, which wait for the next call; from flush() after them."""
        served, fatal = self._events.serve_through(stop_at_fatal=not flushing)
        if fatal is not None and not flushing:
            raise KafkaException(fatal)
        while self._reports:
            cb, err, msg = self._reports.pop(0)
            served += 1
            if cb is not None:
                cb(err, msg)
        if fatal is not None:
            raise KafkaException(fatal)
        return served

    def deliver(self, cb, err, msg) -> None:
        self._unacked -= 1
        if err is None:
            self._delivered += 1
        if cb is not None:
            self._reports.append((cb, err, msg))

    def poll(self, timeout: Optional[float] = None) -> int:
        """Serve delivery reports; wait up to ``timeout`` simulated seconds for one."""
        self._check_alive(serving=True)
        argcheck.timeout_s(timeout, "poll()")
        if not self._reports and timeout != 0:
            if timeout is None or timeout < 0:   # block until a report, as long as one can still come
                block(self._kernel, lambda: bool(self._reports) or self._unacked == 0 or self._node.crashed, None, "poll()")
            else:
                self._kernel.run_until(lambda: bool(self._reports) or self._node.crashed,
                                       timeout_ms=int(timeout * 1000))
        return self._serve_reports()

    def flush(self, timeout: Optional[float] = None) -> int:
        """Send everything now and wait for every delivery report.  Returns the number still waiting."""
        self._check_alive(serving=True)
        self.sender.flushing += 1
        try:
            self.sender.scan_message_timeouts()     # librdkafka: flush() wakes the broker threads, which scan
            self.sender.wakeup(0)
            timeout = argcheck.timeout_s(timeout, "flush()")
            ms = None if timeout is None or timeout < 0 else int(timeout * 1000)
            block(self._kernel, lambda: self._unacked == 0 or self._node.crashed
                  or self._txn.state == S.FATAL_ERROR, ms, "flush()")
        finally:
            self.sender.flushing -= 1
        self._serve_reports(flushing=True)
        return self._unacked

    def __len__(self) -> int:
        return self._unacked + len(self._reports)

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        if in_queue:
            self.sender.purge_queued(KafkaError(KafkaError._PURGE_QUEUE, "purged"))

    def list_topics(self, topic: Optional[str] = None, timeout: float = -1):
        from .admin import cluster_metadata
        return cluster_metadata(self._node, self._kernel, topic, self._dialect)

    def cluster_id(self, timeout: float = -1) -> Optional[str]:
        """The cluster id from a Metadata request (v2+ carries it), as librdkafka's rd_kafka_clusterid."""
        return self.list_topics(None, timeout).cluster_id

    # ------------------------------------------------------- transactions
    def _wait(self, until: Callable[[], bool], timeout: Optional[float], default_ms: int) -> bool:
        """Drive the simulation until ``until()``, which each caller writes as ``<its condition> or node.crashed or
        txn.state == fatal`` in one lambda (it runs once per step: a lambda calling another cost a call more),
        with S.FATAL_ERROR read once before.  A condition that the state has left the states it waits through
        needs no ``txn.state == fatal`` (FATAL_ERROR is not one of them).  (The states are read from ``S``, not
        ``State``: a member read through its enum class costs CPython 3.11 a call of EnumType's attribute hook.)"""
        return self._kernel.run_until(until, timeout_ms=self._timeout_ms(timeout, default_ms))

    def _require_transactional(self, call: str) -> bool:
        """Checks a transactional call may start now; True when it resumes the same call that timed out.

        librdkafka's rule for the blocking transactional calls: one at a time; a call that timed out goes
        on in the background and is *resumed* by calling it again (which returns its outcome once known);
        any other transactional call meanwhile fails with _CONFLICT."""
        self._check_alive()
        if not self._txn.is_transactional:     # librdkafka's rd_kafka_ensure_transactional
            raise KafkaException(KafkaError(KafkaError._NOT_CONFIGURED, f"{call}(): The Transactional API requires "
                                            "transactional.id to be configured"))
        pending = self._resumable
        if pending is None:
            return False
        if pending[0] != call:
            raise KafkaException(KafkaError(KafkaError._CONFLICT, f"Conflicting {call} API call: {pending[0]}() "
                                            f"timed out and is still in progress; call {pending[0]}() again"))
        return True

    def _timed_out(self, call: str, op=None) -> KafkaException:
        """The _TIMED_OUT a blocking transactional call raises; calling it again resumes it."""
        self._resumable = (call, op)
        return KafkaException(KafkaError(KafkaError._TIMED_OUT, f"{call}() timed out; call it again to wait for "
                                         f"its outcome", retriable=True))

    def init_transactions(self, timeout: Optional[float] = None, /) -> None:
        resuming = self._require_transactional("init_transactions")
        txn = self._txn
        self._note(f"{self.name} calls init_transactions()" + (
            " again (resuming)" if resuming else f" (a {'Java' if self._dialect == 'java' else 'librdkafka'} client)"))
        if txn.state == S.UNINITIALIZED:
            txn.transition(S.INITIALIZING)
            self.sender.send_init_producer_id()
        elif txn.state != S.INITIALIZING and not resuming:
            raise KafkaStateError(f"init_transactions() was already called (state {txn.state.name})")
        self._resumable = None
        initializing, node = S.INITIALIZING, self._node
        done = self._wait(lambda: txn.state != initializing or node.crashed, timeout,
                          2 * txn.transaction_timeout_ms)
        self._check_alive()
        if not done:
            raise self._timed_out("init_transactions")

    def begin_transaction(self) -> None:
        self._require_transactional("begin_transaction")
        txn = self._txn
        if txn.state != S.READY:
            if txn.state == S.ABORTABLE_ERROR:
                raise KafkaException(txn.last_error)
            raise KafkaStateError(f"begin_transaction() needs state READY, the producer is {txn.state.name}"
                                  + (" (call init_transactions() first)" if txn.state == S.UNINITIALIZED else ""))
        self._note(f"{self.name} calls begin_transaction()")
        txn.transition(S.IN_TRANSACTION)
        txn.transaction_started = False
        txn.dr_fails = 0

    def send_offsets_to_transaction(self, positions, group_metadata, timeout: Optional[float] = None, /) -> None:
        txn = self._txn
        if not all(hasattr(group_metadata, a) for a in ("group_id", "generation_id", "member_id")):
            # confluent-kafka checks it before anything else (a TypeError)
            raise TypeError(f"group_metadata must be the consumer's consumer_group_metadata(), not "
                            f"{type(group_metadata).__name__}")
        if self._require_transactional("send_offsets_to_transaction"):
            op = self._resumable[1]
            self._resumable = None
            self._note(f"{self.name} calls send_offsets_to_transaction() again (resuming)")
            self._finish_send_offsets(op, timeout)
            return
        if txn.state == S.ABORTABLE_ERROR:
            raise KafkaException(txn.last_error)
        if txn.state != S.IN_TRANSACTION:
            raise KafkaStateError(f"send_offsets_to_transaction() needs an open transaction (state {txn.state.name})")
        positions = argcheck.offsets_for_transaction(positions)
        offsets = {}
        for tp in positions:
            if tp.offset < 0:
                if self._dialect == "java":     # OffsetAndMetadata refuses a negative offset
                    raise KafkaException(KafkaError(KafkaError._INVALID_ARG,
                                                    f"invalid offset {tp.offset} for {tp.topic}-{tp.partition}"))
                continue    # librdkafka sends only absolute offsets (a position() of OFFSET_INVALID is skipped)
            # with the position's leader epoch: librdkafka's TxnOffsetCommit v2+ writes CommittedLeaderEpoch
            # (rd_kafka_txn_send_TxnOffsetCommitRequest), Java's TxnOffsetCommitRequest the OffsetAndMetadata's
            offsets[(tp.topic, tp.partition)] = (tp.offset, -1 if tp.leader_epoch is None else tp.leader_epoch,
                                                 tp.metadata or "")
        if not offsets:
            self._note(f"{self.name} calls send_offsets_to_transaction(group {group_metadata.group_id!r}) with no "
                       f"valid offset: nothing to send")
            return
        self._note(f"{self.name} calls send_offsets_to_transaction(group {group_metadata.group_id!r})")
        op = self.sender.send_offsets(offsets, group_metadata, self._timeout_ms(timeout, txn.transaction_timeout_ms))
        self._finish_send_offsets(op, timeout)

    @staticmethod
    def _timeout_ms(timeout: Optional[float], default_ms: int) -> int:
        return default_ms if timeout is None or timeout < 0 else int(timeout * 1000)

    # librdkafka's send_offsets_to_transaction waits for its operation without a limit (RD_POLL_INFINITE); the
    # operation ends at the first TxnOffsetCommit answer after the call's timeout (its retries are 500 ms apart)
    _SEND_OFFSETS_GRACE_MS = 1000

    def _finish_send_offsets(self, op, timeout: Optional[float]) -> None:
        node, txn, fatal = self._node, self._txn, S.FATAL_ERROR
        done = self._wait(lambda: op.done or node.crashed or txn.state == fatal, timeout, txn.transaction_timeout_ms)
        if not done and op.retrying and self._dialect != "java" and not node.crashed:
            done = self._kernel.run_until(lambda: op.done or node.crashed or txn.state == fatal,
                                          timeout_ms=self._SEND_OFFSETS_GRACE_MS)
        self._check_alive()
        if not done:
            raise self._timed_out("send_offsets_to_transaction", op)
        if op.error is not None:
            raise KafkaException(op.error)

    def commit_transaction(self, timeout: Optional[float] = None, /) -> None:
        self._end_transaction(True, timeout)

    def abort_transaction(self, timeout: Optional[float] = None, /) -> None:
        self._end_transaction(False, timeout)

    def _end_transaction(self, commit: bool, timeout: Optional[float]) -> None:
        call = "commit_transaction" if commit else "abort_transaction"
        resuming = self._require_transactional(call)
        self._resumable = None
        txn = self._txn
        ending = S.COMMITTING_TRANSACTION if commit else S.ABORTING_TRANSACTION
        if commit and txn.state == S.ABORTABLE_ERROR:
            raise KafkaException(txn.last_error)
        if resuming and txn.state == S.READY:
            self._note(f"{self.name} calls {call}() again: it finished in the background")
            return
        if txn.state == ending:
            self._note(f"{self.name} calls {call}() again (resuming)")   # keep waiting for the same outcome
        elif txn.state == S.IN_TRANSACTION or (not commit and txn.state == S.ABORTABLE_ERROR):
            self._note(f"{self.name} calls {call}()")
            self.sender.begin_end_txn(commit)
        else:
            raise KafkaStateError(f"{call}() needs an open transaction (state {txn.state.name})"
                                  + ("; begin_transaction() was not called" if txn.state == S.READY else ""))
        busy = (S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION, S.INITIALIZING)
        node = self._node
        # A commit made abortable fails once every record is reported: librdkafka flushes first
        # (rd_kafka_commit_transaction; rd_kafka_txn_set_abortable_error0 purged only the queue); Java holds the EndTxn
        # while a batch is incomplete (TransactionManager.nextRequest).
        done = self._wait(lambda: (txn.state not in busy and not (commit and txn.state == S.ABORTABLE_ERROR
                                                                    and self._unacked)) or node.crashed,
                          timeout, txn.transaction_timeout_ms)
        self._serve_reports()
        self._check_alive()
        if not done and txn.state == S.ABORTABLE_ERROR:
            self._resumable = (call, None)      # (librdkafka's flush timed out; called again, it raises the error)
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to flush all outstanding messages within "
                                            f"the API timeout: {self._unacked} message(s) remaining", retriable=True))
        if not done:
            raise self._timed_out(call)
        if txn.state == S.ABORTABLE_ERROR:
            raise KafkaException(txn.last_error)

    def close(self, *args, **kwargs) -> bool:
        """librdkafka's close: abort an open transaction, flush what is left, then refuse every call.  Returns
        True (confluent-kafka ignores the arguments)."""
        if self._closed is not None:
            return True
        self._note(f"{self.name} calls close()")
        txn = self._txn
        if not self._node.crashed and txn.is_transactional and txn.state in (
                S.IN_TRANSACTION, S.ABORTABLE_ERROR, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION):
            try:
                self._end_transaction(False, None)
            except KafkaException:
                pass
        if not self._node.crashed and txn.state != S.FATAL_ERROR:
            self.flush()
        self._closed = KafkaError(KafkaError._DESTROY, "Producer has been closed")
        self._reopen_short_path()
        return True

    def produce_batch(self, topic: str, messages: list, partition: int = -1, on_delivery: Optional[Callable] = None,
                      callback: Optional[Callable] = None) -> int:
        """Produce dicts (``value``, ``key``, ``partition``, ``timestamp``, ``callback``/``on_delivery``); returns
        how many were queued; a refused one gets its error in ``_error``, as in confluent-kafka."""
        if not isinstance(messages, list):
            raise TypeError("expected list of messages")
        queued = 0
        for msg in messages:
            try:
                self.produce(topic, msg.get("value"), msg.get("key"), msg.get("partition", partition),
                             msg.get("callback") or msg.get("on_delivery") or on_delivery or callback,
                             timestamp=msg.get("timestamp", 0))
                queued += 1
            except KafkaException as e:
                msg["_error"] = e.args[0]
        return queued
