"""A Kafka broker: request handling, partitions it hosts, its metadata cache.

Owns the dispatch of requests by API name (``handle_<Api>``), the partition
replicas this broker hosts (``Partition`` over a ``UnifiedLog`` that survives
a crash), produce and fetch for clients, and what a crash and a restart do:
memory is lost, logs stay, caches are rebuilt from the logs.  Replication to
followers lives in ``replica_fetcher``; coordinators in ``txnlab.coordinator``.
"""
from __future__ import annotations

from typing import Optional

from ..log.producer_state import AppendOrigin
from ..log.record_batch import ControlRecordType
from ..log.unified_log import UnifiedLog
from ..protocol import messages as m
from ..protocol.errors import Errors, ProtocolError
from ..protocol.hashing import partition_for
from ..sim.node import Node
from .authorizer import check_request
from .partition import Partition
from .replica_fetcher import ReplicaFetcher

CONTROLLER = "controller"
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"


def broker_name(broker_id: int) -> str:
    return f"broker-{broker_id}"


class MetadataCache:
    """What this broker believes about the cluster (from the controller's LeaderAndIsr)."""

    def __init__(self) -> None:
        self.partitions: dict[tuple, m.PartitionState] = {}
        self.topics: dict[str, int] = {}
        self.live_brokers: tuple = ()

    def update(self, states, live_brokers) -> None:
        for s in states:
            self.partitions[(s.topic, s.partition)] = s
            n = self.topics.get(s.topic, 0)
            self.topics[s.topic] = max(n, s.partition + 1)
        self.live_brokers = tuple(live_brokers)

    def leader(self, tp) -> int:
        s = self.partitions.get(tp)
        return s.leader if s else -1


class ParkedFetch:
    __slots__ = ("msg", "timer", "tps", "parts", "session")

    def __init__(self, msg, timer, tps, parts, session):
        self.msg = msg
        self.timer = timer
        self.tps = tps
        self.parts = parts
        self.session = session


class FetchSession:
    """A follower's incremental fetch session (KIP-227): the leader remembers every partition's
    fetch position, so each request carries only what changed and each response only what is new."""

    __slots__ = ("session_id", "replica_id", "epoch", "partitions", "dirty")

    def __init__(self, session_id: int, replica_id: int) -> None:
        self.session_id = session_id
        self.replica_id = replica_id
        self.epoch = 1
        self.partitions: dict = {}
        self.dirty: set = set()

    def view(self, changed: dict) -> dict:
        """The partitions worth looking at now: those the request changed, and those with news."""
        parts = dict(changed)
        for tp in self.dirty:
            fp = self.partitions.get(tp)
            if fp is not None and tp not in parts:
                parts[tp] = fp
        self.dirty.clear()
        return parts


class _ProduceState:
    """One Produce request being answered: partitions may wait for verification and for acks=all."""

    def __init__(self, broker, msg, req) -> None:
        self.broker = broker
        self.msg = msg
        self.req = req
        self.results: dict = {}
        self.pending = 0
        self.ready = False
        self.done = False

    def maybe_respond(self) -> None:
        if not self.ready or self.pending or self.done:
            return
        self.done = True
        if self.req.acks == 0:
            return
        if self.req.acks == -1 and any(r.error == Errors.NONE for r in self.results.values()):
            self.broker.narrate("every replica in the ISR has the write (HW passed it): acks=all satisfied")
        self.broker.respond(self.msg, m.ProduceResponse(self.results))


class Broker(Node):
    restartable = True
    def __init__(self, kernel, broker_id: int, config: dict, cluster) -> None:
        super().__init__(kernel, broker_name(broker_id))
        self.broker_id = broker_id
        self.config = config
        self.cluster = cluster
        self.logs: dict[tuple, UnifiedLog] = {}      # the disk: survives crashes
        self.mutations: set = cluster.mutations
        self._init_memory()

    # ------------------------------------------------------------ lifecycle
    def _init_memory(self) -> None:
        from ..coordinator.group_coordinator import GroupCoordinator
        from ..coordinator.transaction_coordinator import TransactionCoordinator

        self.metadata = MetadataCache()
        self.partitions: dict[tuple, Partition] = {}
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.parked: list[ParkedFetch] = []
        self.fetch_sessions: dict[int, FetchSession] = {}
        self.replica_last_fetch: dict[int, int] = {}
        self._next_session_id = 0
        self.broker_epoch = -1
        self.registered = False
        self.group_coordinator = GroupCoordinator(self)
        self.txn_coordinator = TransactionCoordinator(self)

    def narrate(self, text: str) -> None:
        self.kernel.narrate(text)

    def start(self) -> None:
        self.send_request(CONTROLLER, m.BrokerRegistrationRequest(self.broker_id, self.incarnation),
                          self._on_registered, timeout_ms=5_000)

    def _on_registered(self, resp, err) -> None:
        if err or resp.error:
            self.set_timer(1_000, "retry BrokerRegistration", self.start)
            return
        self.broker_epoch = resp.broker_epoch
        self.registered = True
        self._heartbeat()
        self.set_timer(self.config["replica.lag.time.max.ms"] // 2, "ISR shrink check",
                       self._isr_check, background=True)
        self.set_timer(self.config["replica.high.watermark.checkpoint.interval.ms"], "HW checkpoint",
                       self._checkpoint_hw, background=True)
        self.set_timer(self.config["producer.id.expiration.check.interval.ms"], "producer id expiration check",
                       self._expire_producers, background=True)
        self.txn_coordinator.start()
        self.txn_coordinator.producer_id_manager.prefetch()

    def _heartbeat(self) -> None:
        def sent(resp, err):
            if err is None and resp.is_fenced and self.registered:
                # The controller fenced us (our session expired while we could not reach it) and moved our
                # leaderships away: register again, and learn the current partition states with it.
                self.narrate(f"broker {self.broker_id}: the controller says it is fenced; it registers again")
                self.registered = False
                self._register_again()
        self.send_request(CONTROLLER, m.BrokerHeartbeatRequest(self.broker_id, self.broker_epoch), sent,
                          timeout_ms=self.config["broker.heartbeat.interval.ms"], background=True)
        self.set_timer(self.config["broker.heartbeat.interval.ms"], "BrokerHeartbeat", self._heartbeat,
                       background=True)

    def _register_again(self) -> None:
        def done(resp, err):
            if err or resp.error:
                self.set_timer(1_000, "retry BrokerRegistration", self._register_again, background=True)
                return
            self.broker_epoch = resp.broker_epoch
            self.registered = True
        self.send_request(CONTROLLER, m.BrokerRegistrationRequest(self.broker_id, self.incarnation), done,
                          timeout_ms=5_000, background=True)

    def _isr_check(self) -> None:
        for p in self.partitions.values():
            p.check_isr_shrink(self.kernel.now)
        self.set_timer(self.config["replica.lag.time.max.ms"] // 2, "ISR shrink check", self._isr_check,
                       background=True)

    def _checkpoint_hw(self) -> None:
        for log in self.logs.values():
            log.checkpoint_high_watermark()
        self.set_timer(self.config["replica.high.watermark.checkpoint.interval.ms"], "HW checkpoint",
                       self._checkpoint_hw, background=True)

    def _expire_producers(self) -> None:
        for log in self.logs.values():
            log.remove_expired_producers(self.kernel.now)
        self.set_timer(self.config["producer.id.expiration.check.interval.ms"], "producer id expiration check",
                       self._expire_producers, background=True)

    def on_crash(self) -> None:
        for log in self.logs.values():
            log.crash()
        self._init_memory()

    def shutdown_cleanly(self) -> None:
        for log in self.logs.values():
            log.close()
        self._init_memory()

    def on_restart(self) -> None:
        for tp, log in sorted(self.logs.items()):
            log.recover()
        self.narrate(f"broker {self.broker_id} restarted: recovered {len(self.logs)} partition log(s) from disk "
                     f"(producer state from the last snapshot, then replay)")
        self.start()

    # ------------------------------------------------------------- dispatch
    def handle_request(self, msg):
        authz = self.cluster.authorizer
        if authz is not None and not msg.src.startswith("broker-") and msg.src != "controller":
            denied = check_request(authz, self.cluster.principal_of(msg.src), msg, self.narrate)
            if denied is not None:
                return denied
        name = "handle_" + msg.api
        handler = getattr(self, name, None) or getattr(self.group_coordinator, name, None) \
            or getattr(self.txn_coordinator, name, None)
        if handler is None:
            self.narrate(f"broker {self.broker_id} does not handle {msg.api}")
            return None
        return handler(msg)

    # ------------------------------------------------------- controller side
    def handle_LeaderAndIsr(self, msg):
        req = msg.payload
        self.metadata.update(req.partition_states, req.live_brokers)
        now = self.kernel.now
        for s in req.partition_states:
            if self.broker_id not in s.replicas:
                continue
            tp = (s.topic, s.partition)
            p = self.partitions.get(tp)
            if p is None:
                log = self.logs.get(tp)
                if log is None:
                    log = self.logs[tp] = self.cluster.new_log(s.topic, s.partition, dict(s.config))
                p = self.partitions[tp] = Partition(self, s.topic, s.partition, log)
            if s.leader == self.broker_id:
                if not p.is_leader or p.leader_epoch != s.leader_epoch:
                    for f in self.fetchers.values():
                        f.remove_partition(tp)
                    p.make_leader(s, now)
                    self.coordinator_partition_event(tp, True, s.leader_epoch)
                else:
                    p.isr_changed(s, now)
            else:
                was_leader = p.is_leader
                changed = p.leader != s.leader or p.leader_epoch != s.leader_epoch
                p.make_follower(s)
                if was_leader:
                    self.coordinator_partition_event(tp, False, s.leader_epoch)
                    self._complete_parked_for(tp)
                if changed or tp not in self._fetched_tps():
                    for f in self.fetchers.values():
                        f.remove_partition(tp)
                    if s.leader >= 0:
                        self._fetcher_for(s.leader).add_partition(p)
        return m.LeaderAndIsrResponse(Errors.NONE)

    def _fetched_tps(self) -> set:
        out = set()
        for f in self.fetchers.values():
            out.update(f.partitions)
        return out

    def _fetcher_for(self, leader: int) -> ReplicaFetcher:
        f = self.fetchers.get(leader)
        if f is None:
            f = self.fetchers[leader] = ReplicaFetcher(self, leader)
        return f

    def coordinator_partition_event(self, tp, became_leader: bool, epoch: int) -> None:
        if tp[0] == OFFSETS_TOPIC:
            (self.group_coordinator.on_elected if became_leader else self.group_coordinator.on_resigned)(tp[1], epoch)
        elif tp[0] == TRANSACTION_STATE_TOPIC:
            (self.txn_coordinator.on_elected if became_leader else self.txn_coordinator.on_resigned)(tp[1], epoch)

    def alter_partition(self, p: Partition, new_isr: tuple) -> None:
        p.pending_isr = new_isr
        req = m.AlterPartitionRequest(self.broker_id, p.topic, p.partition, p.leader_epoch, new_isr, p.partition_epoch)

        def done(resp, err):
            if err or resp.error:
                p.pending_isr = None
                return
            if p.leader_epoch == resp.state.leader_epoch and p.is_leader:
                p.isr_changed(resp.state, self.kernel.now)
                self.metadata.update([resp.state], self.metadata.live_brokers)
        self.send_request(CONTROLLER, req, done, timeout_ms=5_000)

    # ------------------------------------------------------------- metadata
    def handle_Metadata(self, msg):
        req = msg.payload
        topics = {}
        names = req.topics if req.topics is not None else tuple(self.metadata.topics)
        for t in names:
            n = self.metadata.topics.get(t)
            if n is None:
                if req.topics is not None and self.config["auto.create.topics.enable"] and not t.startswith("__"):
                    self._create_topic(t, self.config["num.partitions"],
                                       min(self.config["default.replication.factor"], len(self.cluster.broker_ids)))
                    topics[t] = (Errors.LEADER_NOT_AVAILABLE, [])
                else:
                    topics[t] = (Errors.UNKNOWN_TOPIC_OR_PARTITION, [])
                continue
            parts = []
            for i in range(n):
                s = self.metadata.partitions.get((t, i))
                if s is None:     # a restarted broker may learn of a later partition first
                    parts.append(m.PartitionMetadata(Errors.LEADER_NOT_AVAILABLE, i, -1, -1, (), ()))
                    continue
                err = Errors.NONE if s.leader >= 0 else Errors.LEADER_NOT_AVAILABLE
                parts.append(m.PartitionMetadata(err, i, s.leader, s.leader_epoch, s.replicas, s.isr))
            topics[t] = (Errors.NONE, parts)
        return m.MetadataResponse(self.metadata.live_brokers, -1, topics)

    def _create_topic(self, name: str, partitions: int, rf: int, config: tuple = ()) -> None:
        self.narrate(f"broker {self.broker_id} asks the controller to create topic {name}")
        self.send_request(CONTROLLER, m.CreateTopicsRequest(name, partitions, rf, config), lambda r, e: None)

    # -------------------------------------------------------------- produce
    def handle_Produce(self, msg):
        req = msg.payload
        if req.acks not in (0, 1, -1):
            return m.ProduceResponse({tp: m.PartitionProduceResponse(Errors.INVALID_REQUIRED_ACKS)
                                      for tp in req.topic_data})
        st = _ProduceState(self, msg, req)
        for tp, batch in req.topic_data.items():
            self._produce_partition(st, tp, batch)
        st.ready = True
        st.maybe_respond()
        return None

    def _produce_partition(self, st, tp, batch) -> None:
        req = st.req
        p = self.partitions.get(tp)
        if p is None or not p.is_leader:
            err = Errors.NOT_LEADER_OR_FOLLOWER if tp in self.metadata.partitions else Errors.UNKNOWN_TOPIC_OR_PARTITION
            self.narrate(f"{m.tp_str(tp)}: broker {self.broker_id} is not the leader -> {err.name}")
            st.results[tp] = m.PartitionProduceResponse(err)
            return
        if req.acks == -1 and len(p.isr) < p.min_insync_replicas:
            self.narrate(f"{p.name}: ISR {list(p.isr)} is smaller than min.insync.replicas="
                         f"{p.min_insync_replicas} -> NOT_ENOUGH_REPLICAS, nothing appended")
            st.results[tp] = m.PartitionProduceResponse(Errors.NOT_ENOUGH_REPLICAS)
            return
        tv = self.config["transaction.version"]
        needs_check = batch.is_transactional and req.transactional_id is not None and \
            (tv >= 2 or self.config["transaction.partition.verification.enable"]) and \
            not p.log.has_ongoing_transaction(batch.producer_id, batch.producer_epoch)
        if needs_check:
            self._verify_then_append(st, p, batch, implicit_add=tv >= 2)
            return
        self._append_produce(st, p, batch, None)

    def _append_produce(self, st, p, batch, guard) -> None:
        tp = p.tp
        try:
            info = self.append_to_leader(p, [batch], self.kernel.now, origin_client=True, verification_guard=guard)
        except ProtocolError as e:
            self.narrate(f"{p.name}: rejected -> {e.error.name}: {e.message}")
            st.results[tp] = m.PartitionProduceResponse(e.error, error_message=e.message)
            return
        st.results[tp] = m.PartitionProduceResponse(Errors.NONE, info.first_offset, info.log_append_time,
                                                    p.log.log_start_offset)
        if st.req.acks == -1:
            st.pending += 1
            self.narrate(f"{p.name}: waiting for the ISR to replicate (acks=all)")

            def acked(error, tp=tp):
                if error != Errors.NONE:
                    r = st.results[tp]
                    st.results[tp] = m.PartitionProduceResponse(error, r.base_offset, r.log_append_time,
                                                                r.log_start_offset)
                st.pending -= 1
                st.maybe_respond()
            p.add_delayed(info.last_offset + 1, st.req.timeout_ms, acked)
            p.complete_delayed(self.kernel.now)

    def _verify_then_append(self, st, p, batch, implicit_add: bool) -> None:
        """KIP-890: ask the transaction coordinator whether this partition is in the producer's transaction
        (verification) or, with transaction.version 2, add it on the producer's behalf."""
        tid = st.req.transactional_id
        guard = p.log.maybe_start_transaction_verification(batch.producer_id, batch.base_sequence,
                                                           batch.producer_epoch, self.kernel.now)
        n = self.config["transaction.state.log.num.partitions"]
        coord = self.metadata.leader((TRANSACTION_STATE_TOPIC, partition_for(tid, n)))
        if coord < 0:
            st.results[p.tp] = m.PartitionProduceResponse(Errors.NOT_ENOUGH_REPLICAS)
            return
        what = "adds it to the transaction (transaction.version 2)" if implicit_add else "verifies it is in the transaction"
        self.narrate(f"{p.name}: first transactional write of pid {batch.producer_id} here; the leader asks the "
                     f"coordinator (broker {coord}) and {what} before appending (KIP-890)")
        st.pending += 1
        req = m.AddPartitionsToTxnRequest(tid, batch.producer_id, batch.producer_epoch, (p.tp,),
                                          verify_only=not implicit_add)

        def answered(resp, err):
            st.pending -= 1
            e = err if err is not None else Errors(resp.errors.get(p.tp, Errors.UNKNOWN_SERVER_ERROR))
            if e == Errors.NONE:
                if p.is_leader:
                    self._append_produce(st, p, batch, guard)
                else:
                    st.results[p.tp] = m.PartitionProduceResponse(Errors.NOT_LEADER_OR_FOLLOWER)
            else:
                mapped = {Errors.PRODUCER_FENCED: Errors.INVALID_PRODUCER_EPOCH,
                          Errors.INVALID_TXN_STATE: Errors.TRANSACTION_ABORTABLE,
                          Errors.TRANSACTION_ABORTABLE: Errors.TRANSACTION_ABORTABLE,
                          Errors.INVALID_PRODUCER_ID_MAPPING: Errors.INVALID_PRODUCER_ID_MAPPING}.get(
                    e, Errors.NOT_ENOUGH_REPLICAS)
                self.narrate(f"{p.name}: the coordinator answered {e.name}; the write is refused -> {mapped.name}")
                st.results[p.tp] = m.PartitionProduceResponse(mapped, error_message=f"verification: {e.name}")
            st.maybe_respond()
        self.send_request(broker_name(coord), req, answered, timeout_ms=st.req.timeout_ms)

    def append_to_leader(self, p: Partition, batches, now, origin_client=True, verification_guard=None):
        """Append on the leader, narrate it, wake waiting fetches, move the HW."""
        info = p.log.append_as_leader(batches, p.leader_epoch, now,
                                      AppendOrigin.CLIENT if origin_client else AppendOrigin.COORDINATOR,
                                      verification_guard)
        b = batches[0]
        if info.duplicate:
            self.narrate(f"{p.name}: duplicate of a batch already in the log (pid {b.producer_id} epoch "
                         f"{b.producer_epoch} seq {b.base_sequence}..{b.last_sequence}); nothing appended, "
                         f"answering with the original offset {info.first_offset}")
        else:
            self.narrate(f"{p.name}: appended at offsets {info.first_offset}..{info.last_offset} (LEO now "
                         f"{p.log.log_end_offset})")
            self._complete_parked_for(p.tp)
        p.maybe_increment_hw(now)
        p.check_replication_hold()
        return info

    def append_internal(self, tp, batches, callback, timeout_ms: int = 30_000, origin_client=False,
                        verification_guard=None) -> None:
        """Append for a coordinator (acks=-1): callback(error, info) after replication.
        ``verification_guard``: the KIP-890 guard of a verified transactional write (TxnOffsetCommit)."""
        p = self.partitions.get(tp)
        if p is None or not p.is_leader:
            callback(Errors.NOT_LEADER_OR_FOLLOWER, None)
            return
        if len(p.isr) < p.min_insync_replicas:
            callback(Errors.NOT_ENOUGH_REPLICAS, None)
            return
        try:
            info = self.append_to_leader(p, batches, self.kernel.now, origin_client=origin_client,
                                         verification_guard=verification_guard)
        except ProtocolError as e:
            self.narrate(f"{p.name}: rejected -> {e.error.name}: {e.message}")
            callback(e.error, None)
            return
        p.add_delayed(info.last_offset + 1, timeout_ms, lambda err: callback(err, info))
        p.complete_delayed(self.kernel.now)

    def on_high_watermark(self, p: Partition) -> None:
        self._complete_parked_for(p.tp)
        if p.tp[0] == OFFSETS_TOPIC:
            self.group_coordinator.on_high_watermark(p)
        elif p.tp[0] == TRANSACTION_STATE_TOPIC:
            self.txn_coordinator.on_high_watermark(p)

    # ---------------------------------------------------------------- fetch
    def handle_Fetch(self, msg):
        req = msg.payload
        sess = None
        parts = req.partitions
        if req.replica_id >= 0:
            self.replica_last_fetch[req.replica_id] = self.kernel.now
        if req.replica_id >= 0 and req.session_id >= 0:
            sess, err = self._fetch_session(req)
            if err is not None:
                self.narrate(f"follower {req.replica_id}'s fetch session {req.session_id} -> {err.name}; "
                             f"it must open a new one")
                return m.FetchResponse({}, err)
            parts = sess.view(req.partitions)
        resp, has_data = self._read_fetch(req, parts, initial=True, session=sess)
        if has_data or req.max_wait_ms <= 0:
            self._note_sent(req, resp)
            return resp
        timer = self.set_timer(req.max_wait_ms, f"Fetch long-poll expiry (#{msg.id})",
                               lambda: self._expire_parked(msg), background=True)
        tps = set(sess.partitions) if sess is not None else set(parts)
        self.parked.append(ParkedFetch(msg, timer, tps, parts, sess))
        return None

    def _fetch_session(self, req) -> tuple:
        if req.session_id == 0:
            # a follower opens a new session after any error: its old one is evicted
            for sid in [sid for sid, s in self.fetch_sessions.items() if s.replica_id == req.replica_id]:
                del self.fetch_sessions[sid]
            self._next_session_id += 1
            sess = FetchSession(self._next_session_id, req.replica_id)
            self.fetch_sessions[sess.session_id] = sess
            sess.partitions.update(req.partitions)
            return sess, None
        sess = self.fetch_sessions.get(req.session_id)
        if sess is None or sess.replica_id != req.replica_id:
            return None, Errors.FETCH_SESSION_ID_NOT_FOUND
        if req.session_epoch != sess.epoch:
            return None, Errors.INVALID_FETCH_SESSION_EPOCH
        sess.epoch += 1
        sess.partitions.update(req.partitions)
        for tp in req.forgotten:
            sess.partitions.pop(tp, None)
        return sess, None

    def _parked_parts(self, pf) -> dict:
        if pf.session is None:
            return pf.parts
        return pf.session.view(pf.parts)

    def _expire_parked(self, msg) -> None:
        for pf in self.parked:
            if pf.msg is msg:
                self.parked.remove(pf)
                resp, _ = self._read_fetch(msg.payload, self._parked_parts(pf), session=pf.session)
                self._note_sent(msg.payload, resp)
                # an empty answer to a background long-poll stays background (run_until_idle ignores it)
                self.respond(msg, resp, background=msg.background and self._quiet(resp))
                return

    def _complete_parked_for(self, tp) -> None:
        for sess in self.fetch_sessions.values():
            if tp in sess.partitions:
                sess.dirty.add(tp)
        if not self.parked:
            return
        for pf in list(self.parked):
            if tp in pf.tps and pf in self.parked:
                parts = self._parked_parts(pf)
                resp, has_data = self._read_fetch(pf.msg.payload, parts, session=pf.session)
                if has_data:
                    self.parked.remove(pf)
                    self.cancel_timer(pf.timer)
                    self._note_sent(pf.msg.payload, resp)
                    self.respond(pf.msg, resp)
                elif pf.session is not None:
                    pf.parts = parts           # keep what was looked at for the next wake-up

    def _note_sent(self, req, resp) -> None:
        if req.replica_id < 0:
            return
        for tp, d in resp.partitions.items():
            p = self.partitions.get(tp)
            f = p.followers.get(req.replica_id) if p is not None else None
            if f is not None:
                f.last_sent_hw = d.high_watermark
                p.check_replication_hold()

    def _read_fetch(self, req, parts: Optional[dict] = None, initial: bool = False, session=None) -> tuple:
        out = {}
        has_data = False
        follower = req.replica_id >= 0
        now = self.kernel.now
        for tp, fp in (req.partitions if parts is None else parts).items():
            p = self.partitions.get(tp)
            if p is None or not p.is_leader:
                err = Errors.NOT_LEADER_OR_FOLLOWER if tp in self.metadata.partitions else Errors.UNKNOWN_TOPIC_OR_PARTITION
                out[tp] = m.FetchPartitionData(err)
                has_data = True
                continue
            if fp.current_leader_epoch >= 0 and fp.current_leader_epoch != p.leader_epoch:
                err = Errors.FENCED_LEADER_EPOCH if fp.current_leader_epoch < p.leader_epoch else Errors.UNKNOWN_LEADER_EPOCH
                out[tp] = m.FetchPartitionData(err)
                has_data = True
                continue
            log = p.log
            if follower:
                f = p.followers.get(req.replica_id)
                leo = log.log_end_offset
                if f is not None and fp.fetch_offset == leo and f.leo == leo and f.last_sent_hw == log.high_watermark \
                        and req.replica_id in p.isr:
                    if initial:
                        f.last_caught_up_ms = f.last_fetch_ms = now
                    continue        # nothing new here: left out of the response (an incremental fetch, KIP-227)
                d = self._read_follower(p, req.replica_id, fp, now, initial)
                f = p.followers.get(req.replica_id)
                if d.records or d.diverging_epoch or d.error or (f is not None and f.last_sent_hw != d.high_watermark):
                    has_data = True
                out[tp] = d
                continue
            committed = req.isolation_level == m.READ_COMMITTED and "ignore-lso" not in self.mutations
            max_offset = log.last_stable_offset if committed else log.high_watermark
            try:
                batches = log.read(fp.fetch_offset, max_offset, fp.partition_max_bytes) if fp.fetch_offset < max_offset else []
            except ProtocolError as e:
                out[tp] = m.FetchPartitionData(e.error, log.high_watermark, log.last_stable_offset, log.log_start_offset)
                has_data = True
                continue
            if fp.fetch_offset > log.log_end_offset or fp.fetch_offset < log.log_start_offset:
                out[tp] = m.FetchPartitionData(Errors.OFFSET_OUT_OF_RANGE, log.high_watermark,
                                               log.last_stable_offset, log.log_start_offset)
                has_data = True
                continue
            aborted = None
            if committed:
                upper = batches[-1].next_offset if batches else fp.fetch_offset
                aborted = tuple(log.collect_aborted_transactions(fp.fetch_offset, min(upper, max_offset)))
            if batches:
                has_data = True
            out[tp] = m.FetchPartitionData(Errors.NONE, log.high_watermark, log.last_stable_offset,
                                           log.log_start_offset, aborted, tuple(batches))
        return m.FetchResponse(out, 0, session.session_id if session is not None else 0), has_data

    def _read_follower(self, p: Partition, replica: int, fp, now, initial: bool) -> m.FetchPartitionData:
        log = p.log
        if fp.last_fetched_epoch >= 0:
            epoch, end = log.end_offset_for_epoch(fp.last_fetched_epoch)
            if epoch != fp.last_fetched_epoch or end < fp.fetch_offset:
                self.narrate(f"{p.name}: follower {replica} has diverged (its epoch {fp.last_fetched_epoch} "
                             f"ends at {end} here); it must truncate")
                return m.FetchPartitionData(Errors.NONE, log.high_watermark, log.last_stable_offset,
                                            log.log_start_offset, None, (), (epoch, end))
        if fp.fetch_offset > log.log_end_offset:
            return m.FetchPartitionData(Errors.OFFSET_OUT_OF_RANGE, log.high_watermark)
        if initial:
            p.update_follower(replica, fp.fetch_offset, now)
        batches = log.read(fp.fetch_offset, log.log_end_offset, fp.partition_max_bytes) \
            if fp.fetch_offset < log.log_end_offset else []
        return m.FetchPartitionData(Errors.NONE, log.high_watermark, log.last_stable_offset,
                                    log.log_start_offset, None, tuple(batches))

    # ---------------------------------------------------------- list offsets
    def handle_ListOffsets(self, msg):
        req = msg.payload
        out = {}
        for tp, ts in req.partitions.items():
            p = self.partitions.get(tp)
            if p is None or not p.is_leader:
                out[tp] = (Errors.NOT_LEADER_OR_FOLLOWER, -1)
                continue
            log = p.log
            end = log.last_stable_offset if req.isolation_level == m.READ_COMMITTED else log.high_watermark
            if ts == -2:
                out[tp] = (Errors.NONE, log.log_start_offset)
            elif ts == -1:
                out[tp] = (Errors.NONE, end)
            else:
                off = -1
                for b in log.read(log.log_start_offset, end) if end > log.log_start_offset else []:
                    if b.max_timestamp >= ts and not b.is_control:
                        for i, r in enumerate(b.records):
                            if r.timestamp >= ts:
                                off = b.base_offset + i
                                break
                        break
                out[tp] = (Errors.NONE, off)
        return m.ListOffsetsResponse(out)

    # ----------------------------------------------------------- coordinators
    def handle_FindCoordinator(self, msg):
        req = msg.payload
        if req.key_type == m.COORDINATOR_GROUP:
            topic, n_key = OFFSETS_TOPIC, "offsets.topic.num.partitions"
        elif req.key_type == m.COORDINATOR_TRANSACTION:
            topic, n_key = TRANSACTION_STATE_TOPIC, "transaction.state.log.num.partitions"
        else:
            return m.FindCoordinatorResponse(Errors.INVALID_REQUEST, error_message="unknown key type")
        if req.key_type == m.COORDINATOR_TRANSACTION and not req.key:
            return m.FindCoordinatorResponse(Errors.INVALID_REQUEST, error_message="empty transactional.id")
        if topic not in self.metadata.topics:
            self.cluster.ensure_internal_topic(self, topic)
            self.narrate(f"{topic} does not exist yet; broker {self.broker_id} asked for it to be created "
                         f"-> COORDINATOR_NOT_AVAILABLE (retry)")
            return m.FindCoordinatorResponse(Errors.COORDINATOR_NOT_AVAILABLE)
        part = partition_for(req.key, self.config[n_key])
        leader = self.metadata.leader((topic, part))
        if leader < 0:
            return m.FindCoordinatorResponse(Errors.COORDINATOR_NOT_AVAILABLE)
        self.narrate(f"{req.key!r} hashes to {topic} partition {part}, led by broker {leader}")
        return m.FindCoordinatorResponse(Errors.NONE, leader)

    def handle_ApiVersions(self, msg):
        keys = tuple(sorted((c.API, c.API_KEY) for c in vars(m).values()
                            if isinstance(c, type) and hasattr(c, "API_KEY")))
        return m.ApiVersionsResponse(Errors.NONE, keys,
                                     (("transaction.version", self.config["transaction.version"]),))

    def handle_InitProducerId(self, msg):
        return self.txn_coordinator.handle_init_producer_id(msg)

    # ------------------------------------------------------ transaction markers
    def handle_WriteTxnMarkers(self, msg):
        req = msg.payload
        now = self.kernel.now
        results: dict = {}
        waiting = []
        for entry in req.markers:
            res = results.setdefault(entry.producer_id, {})
            kind = ControlRecordType.COMMIT if entry.transaction_result else ControlRecordType.ABORT
            for tp in entry.partitions:
                p = self.partitions.get(tp)
                if p is None or not p.is_leader:
                    res[tp] = Errors.NOT_LEADER_OR_FOLLOWER if tp in self.metadata.partitions \
                        else Errors.UNKNOWN_TOPIC_OR_PARTITION
                    self.narrate(f"{m.tp_str(tp)}: not the leader here -> {Errors(res[tp]).name}")
                    continue
                if len(p.isr) < p.min_insync_replicas:
                    res[tp] = Errors.NOT_ENOUGH_REPLICAS
                    continue
                try:
                    off = p.log.append_control_as_leader(kind, entry.producer_id, entry.producer_epoch,
                                                         entry.coordinator_epoch, p.leader_epoch, now,
                                                         entry.transaction_version)
                except ProtocolError as e:
                    self.narrate(f"{p.name}: {kind.name} marker for pid {entry.producer_id} rejected -> "
                                 f"{e.error.name}: {e.message}")
                    res[tp] = e.error
                    continue
                self.narrate(f"{p.name}: wrote a {kind.name} marker at offset {off} for pid {entry.producer_id} "
                             f"epoch {entry.producer_epoch}")
                self._complete_parked_for(tp)
                p.maybe_increment_hw(now)
                p.check_replication_hold()
                waiting.append((entry, p, off))
        if not waiting:
            return m.WriteTxnMarkersResponse(results)
        left = {"n": len(waiting)}
        for entry, p, off in waiting:
            def acked(error, entry=entry, p=p, off=off):
                results[entry.producer_id][p.tp] = error
                if error == Errors.NONE and p.topic == OFFSETS_TOPIC:
                    complete = getattr(self.group_coordinator, "complete_txn", None)
                    if complete is not None:
                        complete(p.partition, entry.producer_id, entry.transaction_result, off)
                left["n"] -= 1
                if left["n"] == 0:
                    self.respond(msg, m.WriteTxnMarkersResponse(results))
            p.add_delayed(off + 1, 30_000, acked)
            p.complete_delayed(now)
        return None

    # --------------------------------------------------------- describe
    def handle_DescribeProducers(self, msg):
        out = {}
        for tp in msg.payload.partitions:
            p = self.partitions.get(tp)
            if p is None or not p.is_leader:
                out[tp] = (Errors.NOT_LEADER_OR_FOLLOWER, [])
            else:
                out[tp] = (Errors.NONE, p.log.describe_producers())
        return m.DescribeProducersResponse(out)

