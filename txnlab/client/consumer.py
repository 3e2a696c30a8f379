"""``Consumer``: confluent-kafka's consumer surface over Kafka's consumer machinery.

The public face (``subscribe``, ``poll``, ``commit``, ``seek``, ...) over a
``ConsumerCoordinator`` (group membership and offsets in the group
coordinator) and a ``Fetcher`` (fetching with ``isolation.level`` and
read_committed filtering), all running on a simulated client process.
Blocking calls drive the simulation until they are done; their timeouts are
simulated seconds, so a ``poll(1.0)`` that finds nothing moves the clock on by
one second.  Rebalance and commit callbacks run inside ``poll()``, never in the
middle of a simulation step.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..errors import KafkaError, KafkaException
from ..kernel.attach import constructed_in_turn
from ..protocol.errors import Errors
from . import argcheck
from .client_events import ClientEvents
from .config import consumer_config, dialect_of, notices
from .dialect import JAVA
from .consumer_commit import ConsumerCommits
from .consumer_coordinator import ConsumerCoordinator, MemberState
from .consumer_lookup import ConsumerLookups
from .consumer_rebalance import ConsumerRebalance, _tp_list
from .epoch_check import CHECK_NOW
from .fetcher import Fetcher, PartitionState
from .network_client import attach_client, block
from .message import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID, OFFSET_STORED, Message, TopicPartition


class ConsumerGroupMetadata:
    """What ``Producer.send_offsets_to_transaction`` needs to fence zombies (KIP-447)."""

    __slots__ = ("group_id", "generation_id", "member_id", "group_instance_id")

    def __init__(self, group_id: str, generation_id: int = -1, member_id: str = "",
                 group_instance_id: Optional[str] = None) -> None:
        self.group_id = group_id
        self.generation_id = generation_id
        self.member_id = member_id
        self.group_instance_id = group_instance_id

    def __repr__(self) -> str:
        return (f"ConsumerGroupMetadata(group_id={self.group_id!r}, generation_id={self.generation_id}, "
                f"member_id={self.member_id!r}, group_instance_id={self.group_instance_id!r})")


_UNSET = object()      # subscribe()'s "no callback given" (an explicit None is refused, as in confluent-kafka)


class Consumer(ConsumerRebalance, ConsumerLookups, ConsumerCommits):
    """A Kafka consumer (group member with ``subscribe``, or manual with ``assign``)."""

    @constructed_in_turn
    def __init__(self, config: dict, **kwargs) -> None:
        conf = dict(config or {})
        conf.update(kwargs)
        self._config = cfg = consumer_config(conf)
        self._attachment, _, self._node = attach_client(cfg, "consumer", self)
        self._kernel = self._attachment.kernel
        self._java = dialect_of(cfg) == "java"      # position() is the fetch position (else the app's)
        self.name = self._node.name
        self._subscription: set = set()
        self._on_assign: Optional[Callable] = None
        self._on_revoke: Optional[Callable] = None
        self._on_lost: Optional[Callable] = None
        self._assignment: dict[tuple, PartitionState] = {}
        self._manual = False
        self._assign_called = False
        self._closed = False
        self._changed = False
        self._in_poll = False
        self._last_poll = self._kernel.now
        self._commit_reports: list = []
        self._coordinator = ConsumerCoordinator(self)
        self._fetcher = Fetcher(self)
        self._committing = False
        self._committing_fetch = False
        self._auto_commit_timer = None
        self._join_preparing = False            # Java's onJoinPrepare commit in progress (consumer_commit)
        self._received = 0                        # messages returned to the application (statistics' rxmsgs)
        self._topic_errors_reported: dict = {}    # topic -> the permanent Metadata error poll() reported for it
        self._events = ClientEvents(cfg, "consumer", self.name, self._kernel, cfg["sim.clock.epoch.ms"],
                                    self._statistics)
        self._note(f"{self.name} created ({'Java' if self._java else 'librdkafka'} client, group {cfg['group.id']!r}, "
                   f"isolation.level={cfg['isolation.level']})")
        for line in notices(cfg):                 # librdkafka's CONFWARN lines and what the lab ignores
            self._say(line)

    # --------------------------------------------------------------- helpers
    def __repr__(self) -> str:
        return f"<Consumer {self.name}>"

    @property
    def fetcher(self) -> Fetcher:
        return self._fetcher

    @property
    def coordinator(self) -> ConsumerCoordinator:
        return self._coordinator

    def _note(self, text: str) -> None:
        self._kernel.record("call", self.name, text)

    def _say(self, text: str) -> None:
        self._kernel.record("note", self.name, text)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Consumer closed")
        if self._node.crashed:
            raise KafkaException(KafkaError(KafkaError._FATAL, f"{self.name}'s process has crashed", fatal=True))

    def _require_group(self, call: str) -> None:
        if not self._config["group.id"]:
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG,
                                            f"{call}() needs a consumer group: set group.id"))

    def _on_process_crash(self) -> None:
        self._fetcher.in_flight.clear()

    def _statistics(self) -> dict:
        """The consumer's part of librdkafka's statistics (rxmsgs, brokers' tx/rx, cgrp)."""
        node, co = self._node, self._coordinator
        return {"rxmsgs": self._received,
                "brokers": {b: {"name": b, "nodeid": int(b.rsplit("-", 1)[-1]), "tx": node.tx.get(b, 0),
                                "rx": node.rx.get(b, 0)} for b in sorted(set(node.tx) | set(node.rx))},
                "cgrp": {"state": "up" if co.member_id else "init", "join_state": co.state.name.lower(),
                         "assignment_size": len(self._assignment)} if self._config["group.id"] else {}}

    def _poll_interval_exceeded(self) -> bool:
        return not self._in_poll and self._kernel.now - self._last_poll > self._config["max.poll.interval.ms"]

    def _wait(self, pred: Callable[[], bool], timeout_ms: Optional[int]) -> bool:
        """Drive the simulation until pred() (checked whenever something happened for this consumer)."""
        deadline = None if timeout_ms is None else self._kernel.now + timeout_ms
        while not pred():
            if self._node.crashed:
                return False
            remaining = None if deadline is None else deadline - self._kernel.now
            if remaining is not None and remaining <= 0:
                return False
            self._changed = False
            block(self._kernel, lambda: self._changed or pred() or self._node.crashed, remaining, "a consumer call")
        return True

    @staticmethod
    def _timeout_ms(timeout: Optional[float]) -> Optional[int]:
        timeout = argcheck.timeout_s(timeout, "consumer")
        return None if timeout is None or timeout < 0 else int(round(timeout * 1000))

    # ------------------------------------------------------------ subscribe
    def subscribe(self, topics: list, on_assign: Optional[Callable] = _UNSET, on_revoke: Optional[Callable] = _UNSET,
                  on_lost: Optional[Callable] = _UNSET) -> None:
        self._check_open()
        for what, fn in (("on_assign", on_assign), ("on_revoke", on_revoke), ("on_lost", on_lost)):
            if fn is not _UNSET and not callable(fn):
                raise TypeError(f"{what} expects a callable")      # confluent-kafka refuses None too
        on_assign, on_revoke, on_lost = (None if fn is _UNSET else fn for fn in (on_assign, on_revoke, on_lost))
        self._require_group("subscribe")
        if isinstance(topics, str) or not all(isinstance(t, str) for t in topics):
            raise TypeError("topics must be a list of topic names")
        if not all(topics):     # librdkafka's rd_kafka_subscribe refuses an empty name locally
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "Failed to set subscription: Local: Invalid "
                                            "argument or configuration"))
        self._note(f"{self.name} calls subscribe({sorted(set(topics))})")
        self._subscription = set(topics)
        self._on_assign, self._on_revoke, self._on_lost = on_assign, on_revoke, on_lost
        self._manual = False
        self._node.request_metadata(tuple(sorted(self._subscription)), then=self._metadata_arrived)
        self._coordinator.request_rejoin(f"subscribe({sorted(self._subscription)})")

    def unsubscribe(self) -> None:
        self._check_open()
        self._note(f"{self.name} calls unsubscribe()")
        self._revoke()
        self._subscription = set()
        if self._coordinator.member_id:
            self._coordinator.leave_group("unsubscribe()")
        self._coordinator.rejoin_needed = False

    # --------------------------------------------------------------- assign
    def assign(self, partitions: list, /) -> None:
        """Consume exactly these partitions (offsets: >=0, OFFSET_BEGINNING, OFFSET_END, or committed)."""
        self._check_open()
        partitions = argcheck.tp_list(partitions, "assign()")
        if self._rebalance_protocol() == "COOPERATIVE":
            raise KafkaException(KafkaError(KafkaError._STATE, "Changes to the current assignment must be made "
                                            "using incremental_assign() or incremental_unassign() when rebalance "
                                            "protocol type is COOPERATIVE"))
        self._assign_called = True
        if not self._subscription:
            self._manual = True
        self._note(f"{self.name} calls assign({[f'{tp.topic}-{tp.partition}' for tp in partitions]})")
        self._set_assignment(partitions)

    def _set_assignment(self, partitions: list) -> None:
        self._assignment = {}
        self._committing_fetch = False          # an OffsetFetch for the old assignment is abandoned
        self._fetcher.clear_buffer()
        self._add_partitions(partitions)

    def _add_partitions(self, partitions: list) -> None:
        """Start fetching ``partitions`` from their given offsets (or the committed / reset ones)."""
        for tp in partitions:
            key = (tp.topic, tp.partition)
            st = self._assignment[key] = PartitionState()
            self._init_position(key, st, tp.offset)
        self._node.request_metadata(tuple(sorted({t for t, _ in self._assignment})), then=self._metadata_arrived)
        self._start_auto_commit()
        self._changed = True

    def _init_position(self, tp: tuple, st: PartitionState, offset: int) -> None:
        st.position = st.app_position = None
        st.position_epoch = None        # a seek without a leader epoch: not checked (KIP-320)
        st.reset_strategy = None
        st.awaiting_committed = False
        if offset is not None and offset >= 0:
            st.position = offset
        elif offset == OFFSET_BEGINNING:
            st.reset_strategy = "earliest"
        elif offset == OFFSET_END:
            st.reset_strategy = "latest"
        elif self._config["group.id"]:
            st.awaiting_committed = True
        else:
            self._apply_reset_policy(tp, st)

    def _apply_reset_policy(self, tp: tuple, st: PartitionState) -> None:
        """No offset to start from: auto.offset.reset decides (earliest, latest, or an error)."""
        policy = self._config["auto.offset.reset"]
        if policy in ("earliest", "latest"):
            st.reset_strategy = policy
            return
        self._fetcher.events.append(Message(tp[0], tp[1], OFFSET_INVALID, None, None, error=KafkaError(
            Errors.OFFSET_OUT_OF_RANGE, f"{tp[0]}-{tp[1]}: no offset to start from and auto.offset.reset=error")))

    def unassign(self) -> None:
        self._check_open()
        self._assign_called = True
        self._note(f"{self.name} calls unassign()")
        self._assignment = {}
        self._fetcher.clear_buffer()

    def _rebalance_protocol(self) -> str:
        """librdkafka's rd_kafka_rebalance_protocol: NONE until the group has chosen a protocol."""
        if not self._subscription or self._coordinator.protocol is None:
            return "NONE"
        return "COOPERATIVE" if self._coordinator.cooperative else "EAGER"

    def _incremental_allowed(self, call: str) -> None:
        self._check_open()
        if self._rebalance_protocol() == "EAGER":
            raise KafkaException(KafkaError(KafkaError._STATE, f"{call}: Changes to the current assignment must be "
                                            f"made using assign() when rebalance protocol type is EAGER"))

    def incremental_assign(self, partitions: list, /) -> None:
        """Add these partitions to the assignment (the others keep their positions)."""
        self._incremental_allowed("incremental_assign")
        for tp in partitions:
            if (tp.topic, tp.partition) in self._assignment:
                raise KafkaException(KafkaError(KafkaError._CONFLICT, f"{tp.topic} [{tp.partition}] is already "
                                                f"part of the current assignment"))
        self._assign_called = True
        if not self._subscription:
            self._manual = True
        self._note(f"{self.name} calls incremental_assign({[f'{tp.topic}-{tp.partition}' for tp in partitions]})")
        self._add_partitions(partitions)

    def incremental_unassign(self, partitions: list, /) -> None:
        """Remove these partitions from the assignment."""
        self._incremental_allowed("incremental_unassign")
        for tp in partitions:
            if (tp.topic, tp.partition) not in self._assignment:
                raise KafkaException(KafkaError(KafkaError._INVALID_ARG, f"{tp.topic} [{tp.partition}] can't be "
                                                f"unassigned since it is not in the current assignment"))
        self._note(f"{self.name} calls incremental_unassign({[f'{tp.topic}-{tp.partition}' for tp in partitions]})")
        for tp in partitions:
            key = (tp.topic, tp.partition)
            del self._assignment[key]
            self._fetcher.clear_buffer(key)
        self._changed = True

    def assignment(self) -> list[TopicPartition]:
        self._check_open()
        return _tp_list(self._assignment)

    def pause(self, partitions: list) -> None:
        for tp in partitions:
            st = self._assignment.get((tp.topic, tp.partition))
            if st is not None:
                st.paused = True

    def resume(self, partitions: list) -> None:
        for tp in partitions:
            st = self._assignment.get((tp.topic, tp.partition))
            if st is not None:
                st.paused = False
        self._changed = True

    def _update_positions(self) -> None:
        waiting = [tp for tp, st in self._assignment.items() if st.awaiting_committed]
        if waiting and not self._committing_fetch:
            self._committing_fetch = True
            gen = self._assignment

            def done(err, offsets):
                self._committing_fetch = False
                if gen is not self._assignment:
                    return
                for tp in waiting:
                    st = self._assignment.get(tp)
                    if st is None or not st.awaiting_committed:
                        continue
                    st.awaiting_committed = False
                    off, epoch, _ = offsets.get(tp, (-1, -1, "")) if err is None else (-1, -1, "")
                    if off >= 0:
                        st.position = st.committed = off
                        self._fetcher.restored(tp, st, epoch)
                    else:
                        self._apply_reset_policy(tp, st)
                        self._kernel.narrate(f"{self.name}: no committed offset for {tp[0]}-{tp[1]} -> "
                                             f"auto.offset.reset={self._config['auto.offset.reset']}")
                self._fetcher.reset_offsets()
                self._fetcher.send_fetches()
            self._coordinator.fetch_committed(waiting, done, wanted=lambda: gen is self._assignment)
        self._fetcher.reset_offsets()

    # ------------------------------------------------------------------ poll
    def poll(self, timeout: Optional[float] = None) -> Optional[Message]:
        """The next message, or None if none arrived within ``timeout`` simulated seconds."""
        return self._poll(timeout, "poll()")

    def _poll(self, timeout: Optional[float], call: str) -> Optional[Message]:
        self._check_open()
        return self._poll_ms(self._timeout_ms(timeout), call)

    def _poll_ms(self, ms: Optional[int], call: str, polled: bool = False) -> Optional[Message]:
        """_poll() after its checks, with its timeout in ms (None: no limit).  ``polled``: its first _poll_once()
        has just been done (by consume()'s _poll_fetched(), at this same simulated time) and found nothing."""
        deadline = None if ms is None else self._kernel.now + ms
        self._in_poll = True
        try:
            while True:
                if polled:
                    polled = False
                else:
                    msg = self._poll_once()
                    if msg is not None:
                        return msg
                remaining = None if deadline is None else deadline - self._kernel.now
                if remaining is not None and remaining <= 0:
                    return None
                self._changed = False
                block(self._kernel, lambda: self._changed or self._node.crashed, remaining, call)
                self._check_open()
        finally:
            self._in_poll = False
            self._last_poll = self._kernel.now

    def _poll_once(self) -> Optional[Message]:
        self._last_poll = self._kernel.now
        if self._node.topic_errors:
            self._report_topic_errors()
        events = self._events
        if events._interval or events._queue:       # (ClientEvents.serve() has something to do)
            events.serve()
        if self._commit_reports:
            self._serve_commit_reports()
        # _handle_group() and _update_positions() only when they have something to do (asked at every poll):
        # a fatal group error, or a subscription; a partition awaiting its committed offset or a reset
        if self._coordinator.fatal is not None or self._subscription and not self._manual:
            self._handle_group()
        for st in self._assignment.values():
            if st.awaiting_committed or st.reset_strategy is not None:
                self._update_positions()
                break
        fetcher = self._fetcher
        msg = fetcher.next_message()
        fetcher.send_fetches()
        if msg is not None and msg._error is None:     # (Message's fields read directly: once per message)
            if self._config["enable.auto.offset.store"]:
                st = self._assignment.get((msg._topic, msg._partition))
                if st is not None:
                    st.stored_offset, st.stored_epoch = msg._offset + 1, msg._leader_epoch
            self._received += 1
        return msg

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        """Up to ``num_messages`` messages, waiting at most ``timeout`` simulated seconds for them."""
        self._check_open()
        if not isinstance(num_messages, int) or not 0 <= num_messages <= 1_000_000:
            raise ValueError("num_messages must be between 0 and 1000000 (1M)")
        ms = self._timeout_ms(timeout)
        deadline = None if ms is None else self._kernel.now + ms
        out: list[Message] = []
        polled = False
        while len(out) < num_messages:
            remaining = None if deadline is None else max(0, deadline - self._kernel.now)
            if self._closed or self._node.crashed:          # (_poll's _check_open, inlined)
                self._check_open()
            msg = self._poll_ms(remaining, "consume()", polled)     # (_poll's ms: remaining, an int >= 0, or None)
            if msg is None:
                break
            out.append(msg)
            # the next polls, while they find fetched records at once (see _poll_fetched); when one finds nothing,
            # the loop goes on with the rest of its poll (its wait for a fetch), as if _poll_ms had done it
            polled = len(out) < num_messages and self._poll_quiet() and not self._poll_fetched(out, num_messages)
        return out

    def _poll_quiet(self) -> bool:
        """A _poll_once() now would find nothing to do but return fetched data: no topic error to report, no
        client event or commit report to serve, no group to handle, no partition waiting for its committed offset or
        a reset.  None of these changes without a simulation step or an application call."""
        if self._node.topic_errors or self._commit_reports or self._coordinator.fatal is not None \
                or self._subscription and not self._manual:
            return False
        events = self._events
        if events._interval or events._queue:
            return False
        for st in self._assignment.values():
            if st.awaiting_committed or st.reset_strategy is not None:
                return False
        return True

    def _poll_fetched(self, out: list, num_messages: int) -> bool:
        """consume()'s next polls after one returned a message, when _poll_quiet(): each is _poll_once() without
        what it would find nothing to do in, appending to ``out`` until it holds ``num_messages`` (True) or a poll
        finds nothing (False: that poll's _poll_once() is done).

        No simulated time passes between these polls and nothing but them runs, so what made _poll_quiet() true
        stays true; and send_fetches() is called only when the fetch buffer lost an entry.  While the buffer keeps
        its entries, the partitions it holds are the same (next_message() only moves their positions on), every
        other partition is as the previous send_fetches() left it (its Fetch sent, waiting for a leader's Fetch
        response, in backoff, or waiting for metadata already asked for), and a send_fetches() would send nothing."""
        fetcher = self._fetcher
        buf = fetcher.buffer
        held = len(buf)                 # the buffer's entries when send_fetches() last ran
        assignment = self._assignment
        store = self._config["enable.auto.offset.store"]
        self._in_poll = True
        try:
            while len(out) < num_messages:
                taken = fetcher.take_fetched(out, num_messages)
                if taken:                       # (records of one partition: the last one's offset is stored)
                    if store:
                        msg = out[-1]
                        st = assignment.get((msg._topic, msg._partition))
                        if st is not None:
                            st.stored_offset, st.stored_epoch = msg._offset + 1, msg._leader_epoch
                    self._received += taken
                    continue
                msg = fetcher.next_message()
                if len(buf) != held:
                    fetcher.send_fetches()
                    held = len(buf)
                if msg is None:
                    return False
                if msg._error is None:
                    if store:
                        st = assignment.get((msg._topic, msg._partition))
                        if st is not None:
                            st.stored_offset, st.stored_epoch = msg._offset + 1, msg._leader_epoch
                    self._received += 1
                out.append(msg)
            return True
        finally:
            self._in_poll = False

    # -------------------------------------------------------------- offsets
    def position(self, partitions: list) -> list[TopicPartition]:
        self._check_open()
        out = []
        for tp in partitions:
            st = self._assignment.get((tp.topic, tp.partition))
            # librdkafka: the application's position (OFFSET_INVALID until poll() returns a message of the
            # partition, again after a seek); Kafka's Java client: the fetch position.  Each with its leader epoch
            # (rd_kafka_position: rktp_app_pos's; Java: the FetchPosition's offsetEpoch), known here while the
            # application's position is the fetch position
            pos = None if st is None else st.position if self._java else st.app_position
            epoch = st.position_epoch if pos is not None and pos == st.position else None
            out.append(TopicPartition(tp.topic, tp.partition, OFFSET_INVALID if pos is None else pos,
                                      leader_epoch=epoch))
        return out

    def seek(self, partition: TopicPartition) -> None:
        self._check_open()
        argcheck.one_tp(partition, "seek()")
        key = (partition.topic, partition.partition)
        st = self._assignment.get(key)
        if st is None:
            raise KafkaException(KafkaError(KafkaError._STATE,
                                            f"seek: {partition.topic}-{partition.partition} is not assigned"))
        self._note(f"{self.name} calls seek({partition.topic}-{partition.partition}, {partition.offset})")
        self._fetcher.clear_buffer(key)
        self._init_position(key, st, partition.offset if partition.offset != OFFSET_INVALID else OFFSET_STORED)
        if partition.leader_epoch is not None and st.position is not None and \
                (st.position > 0 or dialect_of(self._config) == JAVA):
            # a position with a leader epoch is checked before it is fetched (KIP-320): librdkafka's
            # rd_kafka_toppar_op_seek for an offset above 0, Java's seek -> SubscriptionState.seekUnvalidated for any
            st.position_epoch, st.fetched_epoch = partition.leader_epoch, CHECK_NOW
        st.eof_at = None
        self._changed = True

    def consumer_group_metadata(self) -> ConsumerGroupMetadata:
        self._check_open()
        self._require_group("consumer_group_metadata")
        c = self._coordinator
        return ConsumerGroupMetadata(self._config["group.id"], c.generation_id, c.member_id, c.group_instance_id)

    def memberid(self) -> Optional[str]:
        self._check_open()
        return self._coordinator.member_id or None

    # ---------------------------------------------------------------- close
    def close(self) -> None:
        """Revoke (committing stored offsets if enable.auto.commit), leave the group, stop."""
        if self._closed:
            return
        self._note(f"{self.name} calls close()")
        if self._node.crashed:
            self._closed = True
            return
        coord = self._coordinator
        if self._subscription and not self._manual:
            self._revoke(closing=True)
            if coord.member_id:
                box: dict = {}
                coord.leave_group("close()", then=lambda: box.__setitem__("done", True))
                self._wait(lambda: "done" in box, self._config["request.timeout.ms"])
        elif self._assignment and self._config["enable.auto.commit"]:
            if self._java:
                self._close_commit_java()
            else:
                self._commit_stored(sync=True)
        coord.rejoin_needed = False
        coord.stop_heartbeats()
        self._node.cancel_timer(self._auto_commit_timer)
        self._assignment = {}
        self._fetcher.clear_buffer()
        self._closed = True
        if self._java:
            self._events.serve_logs()       # (Java logs as it goes: close()'s lines are out when it returns)

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["Consumer", "ConsumerGroupMetadata", "MemberState"]
