"""A Kafka broker: request handling, partitions it hosts, its metadata cache.

Owns the dispatch of requests by API name (``handle_<Api>``; the admin APIs in ``admin``), the partition
replicas this broker hosts (``Partition`` over a ``UnifiedLog`` that survives
a crash), produce and fetch for clients, and what a crash and a restart do:
memory is lost, logs stay, caches are rebuilt from the logs.  Replication to
followers lives in ``replica_fetcher``; coordinators in ``txnlab.coordinator``.
"""
from __future__ import annotations


from ..log.producer_state import AppendOrigin
from ..log.unified_log import UnifiedLog
from ..protocol import messages as m
from ..protocol.errors import Errors, ProtocolError
from ..protocol.hashing import partition_for
from ..kernel.node import Node, own_copies
from .add_partitions_manager import AddPartitionsToTxnManager
from .admin import AdminHandling
from .authorizer import CLUSTER_RESOURCE, check_request, metadata_topics
from .fetch import FetchHandling
from .inter_broker import is_inter_broker, refuse_cluster_action
from .lifecycle import PENDING_CONTROLLED_SHUTDOWN, BrokerLifecycle
from .partition import Partition
from .produce import ProduceHandling
from .replica_fetcher import ReplicaFetcher
from ..protocol.names import CONTROLLER, OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, broker_name, topic_name_error

# append_to_leader's origins, read once (a member read through its enum class costs CPython 3.11 a call)
_FROM_CLIENT, _FROM_COORDINATOR = AppendOrigin.CLIENT, AppendOrigin.COORDINATOR
_WHOLE_LOG = 1 << 62            # ListOffsets by time reads every batch, however large the log


def _offset_of_max_timestamp(log: UnifiedLog, end: int) -> tuple[int, int, int]:
    """ListOffsets MAX_TIMESTAMP (KIP-734), as Kafka's UnifiedLog.fetchOffsetByTimestamp: the whole log's largest
    timestamp, markers' included (a segment's maxTimestampSoFar counts every batch), found in the first batch that
    has it, at its first record that has it (RecordBatch.offsetOfMaxTimestamp): (offset, that timestamp, the batch's
    partition leader epoch); answered only below ``end``, the LSO or HW (ReplicaManager.fetchOffset's
    lastFetchableOffset), else (-1, None, -1)."""
    best, found = None, None
    for b in log.read(log.log_start_offset, log.log_end_offset, _WHOLE_LOG) \
            if log.log_end_offset > log.log_start_offset else []:
        if best is None or b.max_timestamp > best:
            best = b.max_timestamp
            off = b.base_offset if b.log_append_time >= 0 else \
                next((b.base_offset + i for i, r in enumerate(b.records) if r.timestamp == best), b.base_offset)
            found = (off, best, _epoch_of(b))
    return found if found is not None and found[0] < end else _NOT_FOUND


def _epoch_of(batch) -> int:
    """A found batch's leader epoch as ListOffsets answers it (FileRecords.maybeLeaderEpoch: none below 0)."""
    return batch.partition_leader_epoch if batch.partition_leader_epoch >= 0 else -1


_NOT_FOUND = (-1, None, -1)     # ReplicaManager.fetchOffset's buildErrorResponse(NONE): no offset, time or epoch


def _offset_for_time(log: UnifiedLog, ts: int, end: int) -> tuple[int, int, int]:
    """Kafka's FileRecords.searchForTimestamp: the first batch whose max timestamp is at least ``ts``, its first
    record that is -- (offset, that record's timestamp, the batch's leader epoch); control batches too (a marker's
    record has the time it was written), and only an offset below the LSO / HW is answered (ReplicaManager.fetchOffset:
    lastFetchableOffset)."""
    for b in log.read(log.log_start_offset, end, _WHOLE_LOG) if end > log.log_start_offset else []:
        if b.max_timestamp >= ts:
            if b.log_append_time >= 0:       # every record reads as having the batch's time
                return b.base_offset, b.log_append_time, _epoch_of(b)
            for i, r in enumerate(b.records):
                if r.timestamp >= ts:
                    return b.base_offset + i, r.timestamp, _epoch_of(b)
            break
    return _NOT_FOUND


class MetadataCache:
    """What this broker believes about the cluster (from the controller's LeaderAndIsr)."""

    def __init__(self) -> None:
        self.partitions: dict[tuple, m.PartitionState] = {}
        self.topics: dict[str, int] = {}
        self.topic_ids: dict[str, str] = {}         # topic -> its id, as the controller's records gave it
        self.live_brokers: tuple = ()
        self.broker_epochs: dict[int, int] = {}     # live broker id -> the broker epoch of its registration
        self.shutting_down: tuple = ()              # live brokers in controlled shutdown (isBrokerShuttingDown)

    def update(self, states, live_brokers=None, broker_epochs: tuple = (), shutting_down: tuple = ()) -> None:
        """``live_brokers`` None: the brokers are as they were (an AlterPartition answer changes one ISR)."""
        for s in states:
            self.partitions[(s.topic, s.partition)] = s
            n = self.topics.get(s.topic, 0)
            self.topics[s.topic] = max(n, s.partition + 1)
            self.topic_ids[s.topic] = s.topic_id
        if live_brokers is not None:
            self.live_brokers = tuple(live_brokers)
            self.broker_epochs = dict(zip(self.live_brokers, broker_epochs))
            self.shutting_down = shutting_down

    def alive_broker_epoch(self, broker_id: int):
        """The broker epoch of ``broker_id``'s registration, None if it is fenced or unknown (Kafka's
        KRaftMetadataCache.getAliveBrokerEpoch)."""
        return self.broker_epochs.get(broker_id)

    def leader(self, tp) -> int:
        s = self.partitions.get(tp)
        return s.leader if s else -1


class Broker(BrokerLifecycle, ProduceHandling, FetchHandling, AdminHandling, Node):
    restartable = True
    # Kafka's SocketServer mutes a connection until its request is answered
    serves_one_request_at_a_time = True
    # a broker's own clients each keep their connections: the replica fetcher threads, the marker sender
    # (TransactionMarkerChannelManager), AddPartitionsToTxnManager, the controller channels (BrokerLifecycleManager
    # sends its registrations and heartbeats through one, BrokerServer's "heartbeat" channel manager)
    CHANNELS = {"Fetch": "replica-fetcher", "WriteTxnMarkers": "txn-markers",
                "AddPartitionsToTxn": "add-partitions-to-txn", "BrokerHeartbeat": "heartbeat",
                "BrokerRegistration": "heartbeat", "AlterPartition": "alter-partition"}
    def __init__(self, kernel, broker_id: int, config: dict, cluster) -> None:
        super().__init__(kernel, broker_name(broker_id))
        self.broker_id = broker_id
        self.config = config
        self.cluster = cluster
        self.logs: dict[tuple, UnifiedLog] = {}      # the disk: survives crashes
        self.mutations: set = cluster.mutations
        self.handler_errors: list[str] = []        # requests a handler failed on (see handle_request)
        self._init_memory()

    # ------------------------------------------------------------ lifecycle
    def _init_memory(self) -> None:
        from ..coordinator.group_coordinator import GroupCoordinator
        from ..coordinator.transaction_coordinator import TransactionCoordinator

        self.metadata = MetadataCache()
        self.partitions: dict[tuple, Partition] = {}
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.parked: list = []                 # ParkedFetch: long-poll fetches waiting for data
        self.fetch_sessions: dict = {}         # session id -> FetchSession (KIP-227)
        self.replica_last_fetch: dict[int, int] = {}
        self._next_session_id = 0
        self._init_lifecycle()
        self.group_coordinator = GroupCoordinator(self)
        self.txn_coordinator = TransactionCoordinator(self)
        self.txn_verifier = AddPartitionsToTxnManager(self)    # its questions to transaction coordinators (KIP-890)
        self._handlers: dict = {}              # api -> bound handler (of the objects above)
        self.isr_version = 0                   # bumped whenever a partition here changes leader or ISR

    def narrate(self, text: str) -> None:
        k = self.kernel
        cur = k.current
        if cur is not None and k.trace.enabled:     # Kernel.narrate, inlined
            details = cur._details
            if details is None:
                cur._details = text
            elif details.__class__ is list:
                details.append(text)
            else:
                cur._details = [details, text]

    def on_registered(self) -> None:
        """What BrokerServer starts once the broker has registered (its lifecycle is in ``lifecycle``)."""
        self.set_timer(self.config["replica.lag.time.max.ms"] // 2, "ISR shrink check",
                       self._isr_check, background=True)
        self.set_timer(self.config["replica.high.watermark.checkpoint.interval.ms"], "HW checkpoint",
                       self._checkpoint_hw, background=True)
        self.set_timer(self.config["producer.id.expiration.check.interval.ms"], "producer id expiration check",
                       self._expire_producers, background=True)
        self.txn_coordinator.start()
        self.txn_coordinator.producer_id_manager.prefetch()

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
        try:
            k = self.kernel
            node = k.servers.get(msg.src)
            if node is not None and self.cluster.authorizer is None and k.nodes.get(msg.src) is node:
                # _dispatch's first case, without its call: a server's request with no authorizer (every replica
                # fetch), which nothing refuses
                handler = self._handlers.get(msg.api) or self._handler(msg.api)
                if handler is not None:
                    return handler(msg)
            return self._dispatch(msg)
        except Exception as e:  # noqa: BLE001 - a malformed request must not take the broker down
            # Kafka's network layer closes the connection of a request it cannot handle; the client sees
            # the disconnect (NETWORK_EXCEPTION).  The error is kept for the simulation sweep to report.
            self.handler_errors.append(f"{msg.api} from {msg.src}: {type(e).__name__}: {e}")
            self.narrate(f"broker {self.broker_id} could not handle {msg.api} from {msg.src} "
                         f"({type(e).__name__}); it closes the connection")
            self.kernel.network.refuse(msg, f"{self.name} could not handle it")
            return None

    def _handler(self, api: str):
        """The method that handles ``api`` here (the broker's own, or its group or transaction coordinator's)."""
        h = self._handlers.get(api)
        if h is None:
            name = "handle_" + api
            h = getattr(self, name, None) or getattr(self.group_coordinator, name, None) \
                or getattr(self.txn_coordinator, name, None)
            if h is not None:
                self._handlers[api] = h
        return h

    def _dispatch(self, msg):
        k = self.kernel
        node = k.servers.get(msg.src)       # Kernel.is_server, inlined: the lab's record of its servers, never a name
        from_server = node is not None and k.nodes.get(msg.src) is node
        authz = self.cluster.authorizer
        if from_server and authz is None:
            # a server's request with no authorizer: nothing below refuses it (the path of every replica fetch)
            handler = self._handlers.get(msg.api) or self._handler(msg.api)
            if handler is None:
                self.narrate(f"broker {self.broker_id} does not handle {msg.api}")
                return None
            return handler(msg)
        if is_inter_broker(msg):
            refused, response = refuse_cluster_action(self, msg, self.cluster.authorizer, self.cluster.principal_of)
            if refused:
                return response
        if not self.running and not from_server:
            # A (re)starting broker accepts client connections only once the controller has unfenced it
            # (BrokerServer enables its listeners after setReadyToUnfence: the broker is RUNNING); until then a
            # client is refused.
            self.narrate(f"broker {self.broker_id} is still starting ({self.lifecycle_state}: not unfenced yet): "
                         f"it does not accept client connections")
            self.kernel.network.refuse(msg, f"{self.name} is still starting")
            return None
        if authz is not None and not from_server:
            denied = check_request(authz, self.cluster.principal_of(msg.src), msg, self.narrate)
            if denied is not None:
                return denied
        handler = self._handler(msg.api)
        if handler is None:
            self.narrate(f"broker {self.broker_id} does not handle {msg.api}")
            return None
        return handler(msg)

    # ------------------------------------------------------- controller side
    def handle_LeaderAndIsr(self, msg):
        req = msg.payload
        if 0 <= req.metadata_offset < self.life.metadata_offset:
            # KRaft: a broker applies the metadata log in order, each record once (MetadataLoader); a change
            # older than what it has applied -- held in a network partition, delivered after newer ones -- is
            # not applied again (it would move its partitions back to older leaders and leader epochs)
            self.narrate(f"broker {self.broker_id} has applied the metadata log up to offset "
                         f"{self.life.metadata_offset}: this change, from offset {req.metadata_offset}, is older "
                         f"and is not applied")
            return m.LeaderAndIsrResponse(Errors.NONE)
        if req.full:
            self.life.metadata_loaded = True
        elif not self.life.metadata_loaded:
            # KRaft: a (re)started broker publishes metadata only once it has caught up with the metadata log, and
            # its first image is the whole state (MetadataLoader); a change meant for its previous incarnation,
            # applied to an empty cache, would make it lead partitions (and load coordinators) while it knows
            # no other topic.  It waits for the whole image, which the controller sends when it registers.
            self.narrate(f"broker {self.broker_id} has not had the whole metadata image since it started: it does "
                         f"not act on a change of {len(req.partition_states)} partition(s) (STALE_BROKER_EPOCH)")
            return m.LeaderAndIsrResponse(Errors.STALE_BROKER_EPOCH)
        self.metadata.update(req.partition_states, req.live_brokers, req.broker_epochs, req.shutting_down)
        self.caught_up_to(req.metadata_offset)
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
                if self.life.state == PENDING_CONTROLLED_SHUTDOWN and (s.leader < 0 or self.broker_id not in s.isr):
                    # ReplicaManager.applyLocalFollowersDelta: "During controlled shutdown, replica with no leaders and
                    # replica where this broker is not in the ISR are stopped"
                    for f in self.fetchers.values():
                        f.remove_partition(tp)
                elif changed or tp not in self._fetched_tps():
                    for f in self.fetchers.values():
                        f.remove_partition(tp)
                    if s.leader >= 0:
                        self._fetcher_for(s.leader).add_partition(p, fetch=False)
        for f in list(self.fetchers.values()):
            f.maybe_fetch()
        self.txn_coordinator.markers.metadata_changed()
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
        # v3 (KIP-903): each member with the broker epoch its replica fetched with (Partition.addBrokerEpochToIsr)
        req = m.AlterPartitionRequest(self.broker_id, self.broker_epoch, p.topic, p.partition, p.leader_epoch,
                                      p.isr_with_broker_epochs(new_isr), p.partition_epoch)

        def done(resp, err):
            if err or resp.error:
                p.pending_isr = None
                return
            if p.leader_epoch == resp.state.leader_epoch and p.is_leader:
                p.isr_changed(resp.state, self.kernel.now)
                self.metadata.update([resp.state])
                self.txn_coordinator.markers.metadata_changed()
        self.send_request(CONTROLLER, req, done, timeout_ms=5_000)

    # ------------------------------------------------------------- metadata
    def handle_Metadata(self, msg):
        req = msg.payload
        topics = {}
        names = req.topics if req.topics is not None else tuple(self.metadata.topics)
        authz = self.cluster.authorizer
        if authz is not None and not self.kernel.is_server(msg.src):
            # KafkaApis.handleTopicMetadataRequest: DESCRIBE per topic (refused ones answer 29 with no partitions,
            # or are left out of a listing of all topics); auto-creation needs CREATE
            names, refused = metadata_topics(
                authz, self.cluster.principal_of(msg.src), names, req.topics is None,
                req.allow_auto_topic_creation and self.config["auto.create.topics.enable"],
                self.metadata.topics.__contains__, self.narrate)
        else:
            refused = ()
        for t in names:
            n = self.metadata.topics.get(t)
            if n is None:
                why = topic_name_error(t)
                if why is not None:      # Kafka's KafkaApis: Topic.validate, whether or not it may auto-create
                    self.narrate(f"broker {self.broker_id}: Metadata for {t!r}: {why} -> INVALID_TOPIC_EXCEPTION")
                    topics[t] = (Errors.INVALID_TOPIC_EXCEPTION, [])
                elif req.topics is not None and req.allow_auto_topic_creation \
                        and self.config["auto.create.topics.enable"] and not t.startswith("__"):
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
        for t in refused:           # after the others, as Kafka lists them
            topics[t] = (Errors.TOPIC_AUTHORIZATION_FAILED, [])
        ids = self.metadata.topic_ids
        return m.MetadataResponse(self.metadata.live_brokers, -1, topics, self.cluster.cluster_id,
                                  {t: ids[t] for t, (e, _) in topics.items() if e == Errors.NONE and t in ids})

    def _create_topic(self, name: str, partitions: int, rf: int, config: tuple = ()) -> None:
        self.narrate(f"broker {self.broker_id} asks the controller to create topic {name}")
        self.send_request(CONTROLLER, m.CreateTopicsRequest((m.CreatableTopic(name, partitions, rf, config),)),
                          lambda r, e: None)

    def append_to_leader(self, p: Partition, batches, now, origin_client=True, verification_guard=None):
        """Append on the leader, narrate it, wake waiting fetches, move the HW."""
        info = p.log.append_as_leader(batches, p.leader_epoch, now,
                                      _FROM_CLIENT if origin_client else _FROM_COORDINATOR,
                                      verification_guard)
        b = batches[0]
        if info.duplicate:
            self.narrate(f"{p.name}: duplicate of a batch already in the log (pid {b.producer_id} epoch "
                         f"{b.producer_epoch} seq {b.base_sequence}..{b.last_sequence}); nothing appended, "
                         f"answering with the original offset {info.first_offset}")
        else:
            self.kernel.narrate_f(("%s: appended at offsets %d..%d (LEO now %d)", p.name, info.first_offset,
                                   info.last_offset, p.log.log_end_offset))
            self._complete_parked_for(p.tp)
        p.maybe_increment_hw(now)
        p.check_replication_hold()
        return info

    def append_internal(self, tp, batches, callback, timeout_ms: int = 30_000, origin_client=False,
                        verification_guard=None, acks: int = -1) -> None:
        """Append for a coordinator.  acks=-1 (the transaction coordinator: TransactionStateManager.
        appendTransactionToLog): callback(error, info) after replication.  acks=1 (the group coordinator: Kafka
        4.1.1's CoordinatorPartitionWriter.append): callback(error, info) once appended locally; the caller waits
        for the high watermark itself (CoordinatorRuntime's deferred events).
        ``verification_guard``: the KIP-890 guard of a verified transactional write (TxnOffsetCommit)."""
        p = self.partitions.get(tp)
        if p is None or not p.is_leader:
            callback(Errors.NOT_LEADER_OR_FOLLOWER, None)
            return
        # Partition.appendRecordsToLeader refuses a write under min.insync.replicas only for requiredAcks == -1
        if acks == -1 and len(p.isr) < p.min_insync_replicas:
            callback(Errors.NOT_ENOUGH_REPLICAS, None)
            return
        try:
            info = self.append_to_leader(p, batches, self.kernel.now, origin_client=origin_client,
                                         verification_guard=verification_guard)
        except ProtocolError as e:
            self.narrate(f"{p.name}: rejected -> {e.error.name}: {e.message}")
            callback(e.error, None)
            return
        if acks == 1:
            callback(Errors.NONE, info)
            return
        p.add_delayed(info.last_offset + 1, timeout_ms, lambda err: callback(err, info))
        p.complete_delayed(self.kernel.now)

    def on_high_watermark(self, p: Partition) -> None:
        """The HW of a coordinator's own log moved (after the fetches parked on it were completed: see
        Partition.maybe_increment_hw)."""
        if p.tp[0] == OFFSETS_TOPIC:
            self.group_coordinator.on_high_watermark(p)
        elif p.tp[0] == TRANSACTION_STATE_TOPIC:
            self.txn_coordinator.on_high_watermark(p)

    # ---------------------------------------------------------- list offsets
    def handle_ListOffsets(self, msg):
        """Each partition's (error, offset, timestamp, leader epoch), as Kafka's ListOffsetsPartitionResponse
        (Partition.fetchOffsetForTimestamp, UnifiedLog.fetchOffsetByTimestamp): LATEST answers the LSO or HW and
        the partition's leader epoch, EARLIEST the log start offset and the epoch it began in (if the epoch cache
        reaches back to it), a time or MAX_TIMESTAMP the found record's offset, timestamp and batch epoch."""
        req = msg.payload
        out = {}
        for tp, ts in req.partitions.items():
            p = self.partitions.get(tp)
            if p is None or not p.is_leader:
                out[tp] = (Errors.NOT_LEADER_OR_FOLLOWER, *_NOT_FOUND)
                continue
            log = p.log
            end = log.last_stable_offset if req.isolation_level == m.READ_COMMITTED else log.high_watermark
            if ts == -2:
                first = log.epoch_entries[0] if log.epoch_entries else None
                epoch = first.epoch if first is not None and first.start_offset <= log.log_start_offset else -1
                out[tp] = (Errors.NONE, log.log_start_offset, None, epoch)
            elif ts == -1:
                out[tp] = (Errors.NONE, end, None, p.leader_epoch)
            elif ts == -3:      # KIP-734 MAX_TIMESTAMP
                out[tp] = (Errors.NONE, *_offset_of_max_timestamp(log, end))
            else:
                out[tp] = (Errors.NONE, *_offset_for_time(log, ts, end))
        return m.ListOffsetsResponse(out)

    def handle_OffsetForLeaderEpoch(self, msg):
        """Where each asked leader epoch ends in this leader's log (ReplicaManager.lastOffsetForLeaderEpoch,
        Partition.lastOffsetForLeaderEpoch: only the leader answers; a current leader epoch older than the
        partition's is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH): the largest epoch at or below the
        asked one and the start offset of the epoch after it, or the LEO for the latest; (-1, -1) past every epoch
        (LeaderEpochFileCache.endOffsetFor).  With the authorizer on, KafkaApis answers every
        partition to CLUSTER_ACTION, else each topic's to DESCRIBE on it (KIP-320: consumers ask too), the others
        TOPIC_AUTHORIZATION_FAILED."""
        out = {}
        refused = self._topics_refused(msg, {t for t, _ in msg.payload.partitions})
        for tp, (current, epoch) in msg.payload.partitions.items():
            p = self.partitions.get(tp)
            if tp[0] in refused:
                out[tp] = (Errors.TOPIC_AUTHORIZATION_FAILED, -1, -1)
            elif p is None or not p.is_leader:
                out[tp] = (Errors.NOT_LEADER_OR_FOLLOWER if tp in self.metadata.partitions
                           else Errors.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
            elif current >= 0 and current != p.leader_epoch:
                out[tp] = (Errors.FENCED_LEADER_EPOCH if current < p.leader_epoch else Errors.UNKNOWN_LEADER_EPOCH,
                           -1, -1)
            else:
                out[tp] = (Errors.NONE, *p.log.end_offset_for_epoch(epoch))
        return m.OffsetForLeaderEpochResponse(out)

    def _topics_refused(self, msg, topics: set) -> set:
        """The topics ``msg``'s sender may not DESCRIBE, unless it holds CLUSTER_ACTION (narrated); none with the
        authorizer off."""
        authz = self.cluster.authorizer
        if authz is None:
            return set()
        principal = self.cluster.principal_of(msg.src)
        if authz.authorize(principal, "CLUSTER", CLUSTER_RESOURCE, "CLUSTER_ACTION"):
            return set()
        refused = {t for t in topics if not authz.authorize(principal, "TOPIC", t, "DESCRIBE")}
        if refused:
            self.narrate(f"{principal} may not DESCRIBE topic(s) {sorted(refused)} -> "
                         f"{Errors.TOPIC_AUTHORIZATION_FAILED.name}")
        return refused

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

    # --------------------------------------------------------- describe
    def handle_DescribeProducers(self, msg):
        # Kafka's KafkaApis.handleDescribeProducersRequest, per topic: a name Kafka cannot hold, then READ on the
        # topic (else TOPIC_AUTHORIZATION_FAILED for each of its partitions, asked before whether the topic
        # exists), then the topic in the metadata cache, then ReplicaManager.activeProducerState per partition
        out = {}
        refused = set()
        for tp in msg.payload.partitions:
            p = self.partitions.get(tp)
            if topic_name_error(tp[0]) is not None:
                out[tp] = (Errors.INVALID_TOPIC_EXCEPTION, [])
            elif tp[0] in refused or not self._allowed(msg, "TOPIC", tp[0], "READ"):
                if tp[0] not in refused:
                    refused.add(tp[0])
                    self.narrate(f"{self.cluster.principal_of(msg.src)} may not READ topic {tp[0]!r}: "
                                 f"its producers are not described -> TOPIC_AUTHORIZATION_FAILED")
                out[tp] = (Errors.TOPIC_AUTHORIZATION_FAILED, [])
            elif tp not in self.metadata.partitions:
                out[tp] = (Errors.UNKNOWN_TOPIC_OR_PARTITION, [])   # as Kafka: not in this broker's metadata
            elif p is None or not p.is_leader:
                out[tp] = (Errors.NOT_LEADER_OR_FOLLOWER, [])
            else:
                out[tp] = (Errors.NONE, p.log.describe_producers())
        return m.DescribeProducersResponse(out)


# its own copies of the Node methods every message runs (see own_copies: a client node runs the originals)
own_copies(Broker, "send_request", "on_message", "respond", "set_timer")
