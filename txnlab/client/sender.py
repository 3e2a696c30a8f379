"""The producer's ``Sender``: drains batches into Produce requests and runs transactional requests.

Owns when a batch is sent (linger, flush, retries with backoff), sequence
assignment at drain time, at most ``max.in.flight.requests.per.connection``
requests per broker, the handling of every Produce error as Kafka's client
does (retry, OUT_OF_ORDER_SEQUENCE_NUMBER, the KIP-360 epoch bump, abortable
and fatal errors), delivery timeouts, and the transactional request queue
(FindCoordinator, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
TxnOffsetCommit, EndTxn), one request in flight at a time, by priority.
"""
from __future__ import annotations

import heapq
from typing import Callable, Optional

from ..errors import KafkaError
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.record_batch import RecordBatch
from .message import Message
from .transaction_manager import PRIORITY, State

RETRIABLE_TXN = {Errors.CONCURRENT_TRANSACTIONS, Errors.COORDINATOR_LOAD_IN_PROGRESS}
REFIND = {Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, Errors.NETWORK_EXCEPTION,
          Errors.REQUEST_TIMED_OUT}
FATAL_TXN = {Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH, Errors.INVALID_TXN_STATE,
             Errors.INVALID_TRANSACTION_TIMEOUT, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
             Errors.CLUSTER_AUTHORIZATION_FAILED, Errors.UNSUPPORTED_VERSION, Errors.INVALID_REQUEST}


class PendingOp:
    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = False
        self.error: Optional[KafkaError] = None

    def finish(self, error: Optional[KafkaError] = None) -> None:
        self.done = True
        self.error = error


class Sender:
    def __init__(self, producer) -> None:
        self.p = producer
        self.node = producer._node
        self.kernel = producer._kernel
        self.cfg = producer._config
        self.txn = producer._txn
        self.flushing = 0
        self._wakeup_ev = None
        self._inflight_requests: dict = {}
        self._txn_queue: list = []
        self._txn_seq = 0
        self._txn_in_flight = False
        self._pid_requested = False
        self._end_txn_sent = False
        self._end_commit = False
        self._bump_after_end = False
        self._failed_in_txn = False
        self.features: Optional[dict] = None     # learned from ApiVersions
        self._features_requested = False

    def on_crash(self) -> None:
        self._wakeup_ev = None

    # ------------------------------------------------------------- wakeups
    def wakeup(self, delay_ms: int) -> None:
        k = self.kernel
        if self.node.crashed:
            return
        ev = self._wakeup_ev
        if ev is not None and not ev.cancelled and ev.time <= k.now + delay_ms:
            return
        if ev is not None:
            k.cancel(ev)
        self._wakeup_ev = self.node.set_timer(delay_ms, "sender wakeup", self.run)

    def narrate(self, text: str) -> None:
        self.kernel.narrate(text)

    # ---------------------------------------------------------------- drain
    def run(self) -> None:
        self._wakeup_ev = None
        p, txn, k = self.p, self.txn, self.kernel
        now = k.now
        self._expire_batches(now)
        if p._idempotent and not txn.is_transactional:
            if txn.epoch_bump_required and not self._any_in_flight():
                old = txn.producer_epoch
                if txn.bump_idempotent_epoch():
                    self.narrate(f"{p.name} bumped its epoch {old} -> {txn.producer_epoch} locally (KIP-360) and "
                                 f"restarts sequences at 0")
                    self._renumber_queued()
            if not txn.has_producer_id:
                self.send_init_producer_id()
                return
        if txn.is_transactional:
            if not txn.has_producer_id or txn.state in (State.UNINITIALIZED, State.INITIALIZING):
                return
            if txn.pending_partitions and txn.state in (State.IN_TRANSACTION, State.COMMITTING_TRANSACTION):
                if self.transaction_version >= 2:
                    # KIP-890 part 2: the partition leader adds the partition on our behalf
                    txn.partitions_in_txn.update(txn.pending_partitions)
                    txn.pending_partitions.clear()
                    txn.transaction_started = True
                else:
                    self._add_partitions()
        next_wake = None
        by_node: dict = {}
        linger = self.cfg["linger.ms"]
        need_metadata = False
        for tp, dq in p._acc.batches.items():
            if not dq:
                continue
            b = dq[0]
            if b.retry and b.next_attempt_ms > now:
                next_wake = min(next_wake or b.next_attempt_ms, b.next_attempt_ms)
                continue
            ready = self.flushing or len(dq) > 1 or b.closed or now - b.created_ms >= linger or b.retry \
                or txn.state in (State.COMMITTING_TRANSACTION,)
            if not ready:
                t = b.created_ms + linger
                next_wake = t if next_wake is None else min(next_wake, t)
                continue
            if txn.is_transactional and tp not in txn.partitions_in_txn:
                continue
            if p._idempotent:
                first = txn.first_in_flight_sequence(tp)
                if b.has_sequence and first >= 0 and b.base_sequence != first:
                    continue          # a retry waits until it is the oldest batch in flight
                if not b.has_sequence and first >= 0 and self._has_retry_in_flight_gap(tp):
                    continue
            leader = self.node.leader_for(tp)
            if leader is None:
                need_metadata = True
                continue
            by_node.setdefault(leader, []).append(tp)
        if need_metadata:
            self.node.request_metadata(then=lambda: self.wakeup(0))
        for node, tps in by_node.items():
            self._send_produce(node, tps, now)
        if next_wake is not None:
            self.wakeup(max(0, next_wake - now))
        self._maybe_end_txn()

    def _has_retry_in_flight_gap(self, tp) -> bool:
        s = self.txn.partitions.get(tp)
        return bool(s and any(b.retry for b in s.in_flight))

    def _any_in_flight(self) -> bool:
        return any(v > 0 for v in self._inflight_requests.values())

    def _send_produce(self, node: str, tps: list, now: int) -> None:
        p, txn = self.p, self.txn
        max_in_flight = self.cfg["max.in.flight.requests.per.connection"]
        while tps and self._inflight_requests.get(node, 0) < max_in_flight:
            data = {}
            batches = {}
            rest = []
            for tp in tps:
                dq = p._acc.batches[tp]
                b = dq.popleft()
                b.closed = True
                if p._idempotent and not b.has_sequence:
                    s = txn.seq(tp)
                    b.base_sequence = s.next_sequence
                    b.producer_id = txn.producer_id
                    b.producer_epoch = txn.producer_epoch
                    b.is_transactional = txn.is_transactional
                    s.next_sequence += len(b.records)
                if p._idempotent:
                    txn.add_in_flight(tp, b)
                b.in_flight = True
                b.retry = False
                b.attempts += 1
                b.sent_once = True
                data[tp] = RecordBatch(tuple(b.records), b.producer_id, b.producer_epoch, b.base_sequence,
                                       b.is_transactional)
                batches[tp] = b
                if dq and self._drainable_again(tp, dq[0], now):
                    rest.append(tp)
            req = m.ProduceRequest(txn.transactional_id, p._acks, self.cfg["request.timeout.ms"], data)
            if p._acks == 0:
                self.kernel.network.send(self.node.name, node, req.API, req, False, 0)
                for tp, b in batches.items():
                    self._complete(b, Errors.NONE, -1)
            else:
                self._inflight_requests[node] = self._inflight_requests.get(node, 0) + 1
                self.node.send_request(node, req, self._on_produce_response(node, batches),
                                       timeout_ms=self.cfg["request.timeout.ms"])
            tps = rest

    def _drainable_again(self, tp, b, now) -> bool:
        if b.retry:
            return False
        return self.flushing or b.closed or now - b.created_ms >= self.cfg["linger.ms"] \
            or self.txn.state == State.COMMITTING_TRANSACTION

    # ------------------------------------------------------- produce results
    def _on_produce_response(self, node: str, batches: dict) -> Callable:
        def cb(resp, err):
            self._inflight_requests[node] -= 1
            for tp, b in batches.items():
                if err is not None:
                    self._handle_error(b, err, "")
                    continue
                r = resp.responses.get(tp)
                if r is None:
                    self._handle_error(b, Errors.UNKNOWN_SERVER_ERROR, "no answer for partition")
                elif r.error == Errors.NONE:
                    self._complete(b, Errors.NONE, r.base_offset)
                else:
                    self._handle_error(b, Errors(r.error), r.error_message)
            self.wakeup(0)
        return cb

    def _complete(self, b, error: Errors, base_offset: int, reason: str = "") -> None:
        p, txn = self.p, self.txn
        b.in_flight = False
        b.done = True
        if p._idempotent:
            txn.remove_in_flight(b.tp, b)
        kerr = None
        if error == Errors.NONE or error == Errors.DUPLICATE_SEQUENCE_NUMBER:
            if p._idempotent and b.producer_epoch == txn.producer_epoch and b.producer_id == txn.producer_id:
                s = txn.seq(b.tp)
                s.last_acked_sequence = max(s.last_acked_sequence, b.last_sequence)
                s.last_acked_offset = base_offset + len(b.records) - 1
        else:
            kerr = error if isinstance(error, KafkaError) else KafkaError(error, reason or Errors(error).description)
        topic, part = b.tp
        if not any(b.callbacks):          # nobody asked for delivery reports: just count them off
            p._unacked -= len(b.records)
            return
        for i, (rec, cb) in enumerate(zip(b.records, b.callbacks)):
            off = base_offset + i if base_offset >= 0 and kerr is None else -1
            msg = Message(topic, part, off, rec.key, rec.value, rec.headers or None, (1, rec.timestamp), kerr)
            p.deliver(cb or _noop, kerr, msg)

    def _can_retry(self, b, error: Errors) -> bool:
        if b.attempts > self.cfg["retries"]:
            return False
        if self.cfg["sim.naive.client"] and error in (Errors.REQUEST_TIMED_OUT, Errors.NETWORK_EXCEPTION):
            return False     # a naive client gives up on a request that timed out and moves on
        if self.kernel.now - b.created_ms >= self.cfg["delivery.timeout.ms"]:
            return False
        if error.retriable:
            return True
        if error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER and self.p._idempotent:
            return True
        return False

    def _handle_error(self, b, error: Errors, reason: str) -> None:
        p, txn, tp = self.p, self.txn, b.tp
        name = f"{tp[0]}-{tp[1]}"
        if error in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NETWORK_EXCEPTION,
                     Errors.LEADER_NOT_AVAILABLE, Errors.FENCED_LEADER_EPOCH, Errors.REQUEST_TIMED_OUT):
            self.node.request_metadata()
        stale_epoch = p._idempotent and (b.producer_epoch != txn.producer_epoch or b.producer_id != txn.producer_id)
        if error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER and p._idempotent and not stale_epoch:
            s = txn.seq(tp)
            if b.base_sequence == s.last_acked_sequence + 1 and not self._earlier_in_flight(b):
                # the broker has lost our state (or we overran its 5-batch window): KIP-360
                if txn.is_transactional:
                    self._fail_batch(b, error, reason, abortable=True)
                    return
                if self.cfg["sim.naive.client"]:
                    self._fail_batch(b, error, reason)
                    return
                self.narrate(f"{p.name}: {name} batch seq {b.base_sequence} got OUT_OF_ORDER_SEQUENCE_NUMBER although "
                             f"it follows the last acked sequence {s.last_acked_sequence}; requesting an epoch bump")
                txn.epoch_bump_required = True
        if self._can_retry(b, error):
            b.in_flight = False
            b.retry = True
            backoff = min(self.cfg["retry.backoff.max.ms"], self.cfg["retry.backoff.ms"] * 2 ** min(b.attempts - 1, 16))
            b.next_attempt_ms = self.kernel.now + backoff   # exponential backoff (KIP-580)
            if stale_epoch or (txn.epoch_bump_required and not txn.is_transactional):
                pass   # renumbered when the bump happens
            p._acc.reenqueue(b)
            self.narrate(f"{p.name}: will retry {b.describe()} after {error.name} "
                         f"(attempt {b.attempts + 1}, same sequence)")
            return
        self._fail_batch(b, error, reason)

    def _earlier_in_flight(self, b) -> bool:
        s = self.txn.partitions.get(b.tp)
        return bool(s and s.in_flight and s.in_flight[0] is not b and s.in_flight[0].base_sequence < b.base_sequence)

    def _fail_batch(self, b, error: Errors, reason: str, abortable: bool = False) -> None:
        p, txn = self.p, self.txn
        self.narrate(f"{p.name}: {b.describe()} failed with {error.name}")
        if txn.is_transactional:
            fatal = error in (Errors.PRODUCER_FENCED, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                              Errors.CLUSTER_AUTHORIZATION_FAILED)
            kerr = KafkaError(error, reason or error.description, fatal=fatal, retriable=False,
                              txn_requires_abort=not fatal)
            self._complete(b, kerr, -1)
            if fatal:
                txn.transition(State.FATAL_ERROR, kerr)
                self._abort_undrained(kerr)
            elif txn.state in (State.IN_TRANSACTION, State.COMMITTING_TRANSACTION, State.ABORTABLE_ERROR):
                txn.transition(State.ABORTABLE_ERROR, kerr)
                self._abort_undrained(kerr)
            if error in (Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, Errors.INVALID_PRODUCER_ID_MAPPING) \
                    and not self.cfg["sim.naive.client"]:
                self._bump_after_end = True
            return
        self._complete(b, KafkaError(error, reason or error.description), -1)
        if p._idempotent and b.sent_once and not self.cfg["sim.naive.client"]:
            # later batches of this partition would carry a gap: bump and renumber (KIP-360)
            txn.epoch_bump_required = True

    def _renumber_queued(self) -> None:
        txn = self.txn
        for tp, dq in self.p._acc.batches.items():
            s = txn.seq(tp)
            for b in dq:
                if b.has_sequence:
                    b.base_sequence = s.next_sequence
                    b.producer_id = txn.producer_id
                    b.producer_epoch = txn.producer_epoch
                    s.next_sequence += len(b.records)
            s.in_flight = [b for b in s.in_flight if b.in_flight]

    def _expire_batches(self, now: int) -> None:
        timeout = self.cfg["delivery.timeout.ms"]
        p = self.p
        for tp, dq in p._acc.batches.items():
            while dq and now - dq[0].created_ms >= timeout and not dq[0].in_flight:
                b = dq.popleft()
                self.narrate(f"{p.name}: {b.describe()} expired (delivery.timeout.ms={timeout})")
                sent = b.sent_once
                self._complete(b, KafkaError(KafkaError._MSG_TIMED_OUT, "Local: Message timed out"), -1)
                if sent and p._idempotent and not self.cfg["sim.naive.client"]:
                    if self.txn.is_transactional:
                        self._bump_after_end = True
                        if self.txn.state in (State.IN_TRANSACTION, State.COMMITTING_TRANSACTION):
                            self.txn.transition(State.ABORTABLE_ERROR, KafkaError(
                                KafkaError._MSG_TIMED_OUT, "a sent batch expired", txn_requires_abort=True))
                    else:
                        self.txn.epoch_bump_required = True

    def purge_queued(self, error: KafkaError) -> None:
        p = self.p
        waiting, p._unassigned = p._unassigned, []
        for topic, value, key, _part, cb, ts, headers in waiting:
            p.deliver(cb or _noop, error, Message(topic, -1, -1, key, value, headers or None, (1, ts), error))
        for tp, dq in p._acc.batches.items():
            keep = [b for b in dq if b.in_flight or b.retry]
            for b in dq:
                if not (b.in_flight or b.retry):
                    self._complete(b, error, -1)
            dq.clear()
            dq.extend(keep)

    # ---------------------------------------------------- transactional queue
    def _enqueue(self, name: str, send: Callable[[], None]) -> None:
        self._txn_seq += 1
        heapq.heappush(self._txn_queue, (PRIORITY[name], self._txn_seq, name, send))
        self._pump()

    def _pump(self) -> None:
        if self._txn_in_flight or not self._txn_queue or self.node.crashed:
            return
        _, _, name, send = heapq.heappop(self._txn_queue)
        self._txn_in_flight = True
        send()

    def _txn_done(self) -> None:
        self._txn_in_flight = False
        self._pump()
        self.wakeup(0)

    def _retry_later(self, name: str, send: Callable[[], None], ms: Optional[int] = None) -> None:
        self._txn_in_flight = False
        delay = self.cfg["retry.backoff.ms"] if ms is None else ms
        self.node.set_timer(delay, f"retry {name}", lambda: self._enqueue(name, send))

    def _to_coordinator(self, name: str, build: Callable, handle: Callable, key_type: int = m.COORDINATOR_TRANSACTION,
                        key: Optional[str] = None) -> Callable[[], None]:
        """A send function: find the coordinator if needed, then send, then handle."""
        txn = self.txn
        key = key if key is not None else txn.transactional_id
        holder = {}

        def send():
            coord = txn.coordinator if key_type == m.COORDINATOR_TRANSACTION else holder.get("coord")
            if coord is None:
                def found(node, err):
                    if err is not None:
                        self._retry_later(name, send)
                        return
                    if key_type == m.COORDINATOR_TRANSACTION:
                        txn.coordinator = node
                    else:
                        holder["coord"] = node
                    send()
                self.node.find_coordinator(key, key_type, found)
                return
            req = build()
            if req is None:
                self._txn_done()
                return

            def on_resp(resp, err):
                action = handle(resp, err)
                if action == "refind":
                    if key_type == m.COORDINATOR_TRANSACTION:
                        txn.coordinator = None
                    else:
                        holder.pop("coord", None)
                    self._retry_later(name, send)
                elif action == "retry":
                    self._retry_later(name, send)
                elif action == "retry-fast":
                    self._retry_later(name, send, 20)
                else:
                    self._txn_done()
            self.node.send_request(coord, req, on_resp, timeout_ms=self.cfg["request.timeout.ms"])
        return send

    def _fatal(self, error, where: str) -> None:
        kerr = KafkaError(error, f"{where}: {Errors(error).description}", fatal=True, retriable=False)
        self.narrate(f"{self.p.name}: {where} failed with {Errors(error).name}; the producer is now in FATAL_ERROR")
        self.txn.transition(State.FATAL_ERROR, kerr)
        self._abort_undrained(kerr)

    def _abort_undrained(self, kerr) -> None:
        """Records not yet sent can never be part of this transaction now: fail them (Kafka's
        abortUndrainedBatches)."""
        self.txn.pending_partitions.clear()
        self.purge_queued(kerr)

    def _abortable(self, error, where: str) -> None:
        kerr = KafkaError(error, f"{where}: {Errors(error).description}", retriable=False, txn_requires_abort=True)
        self.narrate(f"{self.p.name}: {where} failed with {Errors(error).name}; the transaction must be aborted")
        if self.txn.state in (State.IN_TRANSACTION, State.COMMITTING_TRANSACTION, State.ABORTABLE_ERROR):
            self.txn.transition(State.ABORTABLE_ERROR, kerr)
            self._abort_undrained(kerr)
        return kerr

    # ---------------------------------------------------------- ApiVersions
    @property
    def transaction_version(self) -> int:
        return (self.features or {}).get("transaction.version", 0)

    def _learn_features(self, then: Callable[[], None]) -> None:
        """ApiVersions first, as every Kafka client does on a new connection: it tells which
        transaction.version the cluster has finalized (KIP-890's protocol depends on it)."""
        if self._features_requested:
            return
        self._features_requested = True

        def done(resp, err):
            self._features_requested = False
            if err is not None or resp.error:
                self.node.set_timer(self.cfg["retry.backoff.ms"], "retry ApiVersions", lambda: self._learn_features(then))
                return
            self.features = dict(resp.finalized_features)
            then()
        self.node.send_request(self.node.any_broker(), m.ApiVersionsRequest(), done,
                               timeout_ms=self.cfg["request.timeout.ms"])

    # ------------------------------------------------------ InitProducerId
    def send_init_producer_id(self, bump: bool = False) -> None:
        txn = self.txn
        if self.features is None:
            self._learn_features(lambda: self.send_init_producer_id(bump))
            return
        if self._pid_requested:
            return
        self._pid_requested = True
        if not txn.is_transactional:
            def done(resp, err):
                self._pid_requested = False
                if err is None and resp.error == Errors.NONE:
                    txn.set_producer_id_and_epoch(resp.producer_id, resp.producer_epoch)
                    txn.reset_sequences()
                    self.wakeup(0)
                else:
                    self.node.set_timer(self.cfg["retry.backoff.ms"], "retry InitProducerId", self.send_init_producer_id)
            self.node.send_request(self.node.any_broker(), m.InitProducerIdRequest(None, self.cfg["transaction.timeout.ms"]),
                                   done, timeout_ms=self.cfg["request.timeout.ms"])
            return

        def build():
            if bump:
                return m.InitProducerIdRequest(txn.transactional_id, txn.transaction_timeout_ms,
                                               txn.producer_id, txn.producer_epoch)
            return m.InitProducerIdRequest(txn.transactional_id, txn.transaction_timeout_ms)

        def handle(resp, err):
            if err is not None:
                return "refind"
            e = Errors(resp.error)
            if e == Errors.NONE:
                self._pid_requested = False
                txn.set_producer_id_and_epoch(resp.producer_id, resp.producer_epoch)
                txn.reset_sequences()
                txn.partitions.clear()
                txn.transition(State.READY)
                return None
            if e in REFIND:
                return "refind"
            if e in RETRIABLE_TXN:
                return "retry"
            self._pid_requested = False
            self._fatal(e, "InitProducerId")
            return None
        self._enqueue("EpochBump" if bump else "InitProducerId", self._to_coordinator("InitProducerId", build, handle))

    # ---------------------------------------------------- AddPartitionsToTxn
    def _add_partitions(self) -> None:
        txn = self.txn
        if txn.new_partitions_in_flight or not txn.pending_partitions:
            return
        tps = tuple(sorted(txn.pending_partitions))
        txn.new_partitions_in_flight = set(tps)
        txn.pending_partitions.clear()
        first = not txn.partitions_in_txn

        def build():
            return m.AddPartitionsToTxnRequest(txn.transactional_id, txn.producer_id, txn.producer_epoch, tps)

        def handle(resp, err):
            if err is not None:
                return "refind"
            errors = {Errors(e) for e in resp.errors.values()}
            if errors <= {Errors.NONE}:
                txn.partitions_in_txn.update(tps)
                txn.new_partitions_in_flight = set()
                txn.transaction_started = True
                return None
            bad = next(e for e in errors if e not in (Errors.NONE, Errors.OPERATION_NOT_ATTEMPTED)) \
                if errors - {Errors.NONE, Errors.OPERATION_NOT_ATTEMPTED} else Errors.OPERATION_NOT_ATTEMPTED
            if bad in REFIND:
                return "refind"
            if bad in RETRIABLE_TXN:
                return "retry-fast" if first and bad == Errors.CONCURRENT_TRANSACTIONS else "retry"
            txn.new_partitions_in_flight = set()
            if bad in FATAL_TXN:
                self._fatal(bad, "AddPartitionsToTxn")
            else:
                self._abortable(bad, "AddPartitionsToTxn")
                if bad == Errors.INVALID_PRODUCER_ID_MAPPING:
                    self._bump_after_end = True
                self._fail_queued_of(tps, bad)
            return None
        self._enqueue("AddPartitionsToTxn", self._to_coordinator("AddPartitionsToTxn", build, handle))

    def _fail_queued_of(self, tps, error) -> None:
        for tp in tps:
            dq = self.p._acc.batches.get(tp)
            while dq:
                self._complete(dq.popleft(), KafkaError(error, txn_requires_abort=True), -1)

    # ------------------------------------------------------ offsets in txn
    def send_offsets(self, offsets: dict, group_metadata) -> PendingOp:
        txn = self.txn
        op = PendingOp()
        tv2 = self.transaction_version >= 2

        def commit_offsets():
            def build():
                return m.TxnOffsetCommitRequest(txn.transactional_id, group_metadata.group_id, txn.producer_id,
                                                txn.producer_epoch, group_metadata.generation_id,
                                                group_metadata.member_id, group_metadata.group_instance_id,
                                                dict(offsets))

            def handle(resp, err):
                if err is not None:
                    return "refind"
                errors = {Errors(e) for e in resp.errors.values()} - {Errors.NONE}
                if not errors:
                    op.finish()
                    return None
                bad = sorted(errors)[0]
                if bad in REFIND or bad == Errors.COORDINATOR_LOAD_IN_PROGRESS:
                    return "refind"
                if bad in (Errors.CONCURRENT_TRANSACTIONS, Errors.UNKNOWN_TOPIC_OR_PARTITION):
                    return "retry"
                if bad in (Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED):
                    self._fatal(bad, "TxnOffsetCommit")
                    op.finish(self.txn.last_error)
                    return None
                op.finish(self._abortable(bad, "TxnOffsetCommit"))
                return None
            self._enqueue("TxnOffsetCommit", self._to_coordinator(
                "TxnOffsetCommit", build, handle, m.COORDINATOR_GROUP, group_metadata.group_id))

        if tv2:
            txn.transaction_started = True
            commit_offsets()
            return op

        def build_add():
            return m.AddOffsetsToTxnRequest(txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                            group_metadata.group_id)

        def handle_add(resp, err):
            if err is not None:
                return "refind"
            e = Errors(resp.error)
            if e == Errors.NONE:
                txn.transaction_started = True
                commit_offsets()
                return None
            if e in REFIND:
                return "refind"
            if e in RETRIABLE_TXN:
                return "retry"
            if e in FATAL_TXN:
                self._fatal(e, "AddOffsetsToTxn")
                op.finish(self.txn.last_error)
            else:
                op.finish(self._abortable(e, "AddOffsetsToTxn"))
            return None
        self._enqueue("AddOffsetsToTxn", self._to_coordinator("AddOffsetsToTxn", build_add, handle_add))
        return op

    # ---------------------------------------------------------------- EndTxn
    def begin_end_txn(self, commit: bool) -> None:
        txn = self.txn
        txn.transition(State.COMMITTING_TRANSACTION if commit else State.ABORTING_TRANSACTION)
        self._end_txn_sent = False
        self._end_commit = commit
        if not commit:
            txn.pending_partitions.clear()
            self.purge_queued(KafkaError(KafkaError._PURGE_QUEUE, "purged: the transaction was aborted"))
        self.wakeup(0)

    def _maybe_end_txn(self) -> None:
        txn = self.txn
        if txn.state not in (State.COMMITTING_TRANSACTION, State.ABORTING_TRANSACTION) or self._end_txn_sent:
            return
        if self.p._acc.has_queued() or self.p._unassigned or txn.has_in_flight() or txn.new_partitions_in_flight \
                or (self._end_commit and txn.pending_partitions) or self._txn_in_flight:
            return
        self._end_txn_sent = True
        commit = self._end_commit
        if not txn.transaction_started:
            self.narrate(f"{self.p.name}: nothing was added to the transaction; no EndTxn needed")
            self._finish_txn()
            return
        tv2 = self.transaction_version >= 2

        def build():
            return m.EndTxnRequest(txn.transactional_id, txn.producer_id, txn.producer_epoch, commit)

        def handle(resp, err):
            if err is not None:
                return "refind"
            e = Errors(resp.error)
            if e == Errors.NONE:
                if resp.producer_id >= 0 and tv2:
                    txn.set_producer_id_and_epoch(resp.producer_id, resp.producer_epoch)
                    txn.reset_sequences()
                self._finish_txn()
                return None
            if e in REFIND:
                return "refind"
            if e in RETRIABLE_TXN:
                return "retry"
            if e in FATAL_TXN:
                self._fatal(e, "EndTxn")
            else:
                self._abortable(e, "EndTxn")
                if e == Errors.INVALID_PRODUCER_ID_MAPPING:
                    self._bump_after_end = True
            return None
        self._enqueue("EndTxn", self._to_coordinator("EndTxn", build, handle))

    def _finish_txn(self) -> None:
        txn = self.txn
        txn.partitions_in_txn.clear()
        txn.pending_partitions.clear()
        txn.transaction_started = False
        if self._bump_after_end and self.transaction_version < 2:
            self._bump_after_end = False
            txn.transition(State.INITIALIZING)
            self.narrate(f"{self.p.name}: asking the coordinator for an epoch bump (InitProducerId with the current "
                         f"producer id and epoch, KIP-360)")
            self.send_init_producer_id(bump=True)
            return
        self._bump_after_end = False
        txn.transition(State.READY)     # TV0/TV1: sequences continue across transactions


def _noop(err, msg) -> None:
    return None
