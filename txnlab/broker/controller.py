"""The controller (Kafka's KRaft ``QuorumController``, modelled as one always-up node).

Owns the cluster's partition states (replicas, leader, leader epoch, ISR,
partition epoch), broker liveness (registration, which is fenced until a heartbeat shows the broker caught up
with the metadata log past its registration record, heartbeats, fencing after ``broker.session.timeout.ms``), leader election from the ISR (unclean election
only when enabled), ISR changes requested by leaders (AlterPartition), topic
creation and deletion (CreateTopics, DeleteTopics: clients' requests forwarded by a
broker, and StopReplica to the replicas of a deleted topic), and producer-id blocks (AllocateProducerIds, blocks of 1000).
Adding partitions and changing topic configs (CreatePartitions, AlterConfigs, IncrementalAlterConfigs)
live in ``controller_topics.py``.
It tells brokers what changed with LeaderAndIsr.
"""
from __future__ import annotations

from ..kernel.node import Node
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.names import CONTROLLER, OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, broker_name, topic_name_error
from .controller_topics import TopicChanges
from .inter_broker import refuse_cluster_action
from .topic_config import check_topic_config

PRODUCER_ID_BLOCK_SIZE = 1000


MAX_PARTITIONS_PER_BATCH = 10_000    # Kafka: partitions one CreateTopics/CreatePartitions may create

class Controller(TopicChanges, Node):
    crashable = False          # it stands for the whole KRaft quorum
    serves_one_request_at_a_time = True
    def __init__(self, kernel, cluster) -> None:
        super().__init__(kernel, CONTROLLER)
        self.cluster = cluster
        self.states: dict[tuple, m.PartitionState] = {}
        self.topic_configs: dict[str, dict] = {}
        self.registered: dict[int, int] = {}       # broker id -> broker epoch (alive, unfenced)
        self.broker_epochs: dict[int, int] = {}    # broker id -> the broker epoch of its registration, which a
                                                   # fence keeps (ClusterControlManager.brokerRegistrations)
        self.incarnations: dict[int, int] = {}     # broker id -> incarnation of its registration
        self.session_timers: dict[int, object] = {}
        self.metadata_offset = 0                   # the offset of the last record of the (modelled) metadata log
        self.register_offsets: dict[int, int] = {}  # broker id -> offset of its registration record
        self.catching_up: set = set()              # registered brokers not yet unfenced since they registered
        self.shutting_down: dict[int, int] = {}    # broker id -> its controlled shutdown offset (BrokerHeartbeatManager:
                                                   # the metadata offset every active broker must reach first)
        self.heartbeat_offsets: dict[int, int] = {}     # broker id -> the metadata offset its last heartbeat showed
        self.next_broker_epoch = 1
        self.deleted: dict[tuple, bool] = {}        # partitions of deleted topics (a restarted replica drops them)
        self.topic_creations: dict[str, int] = {}   # topic name -> times created (the wire door's topic ids)
        self.next_producer_id_block = 0
        self.controller_epoch = 1
        self._next_replica_start = 0

    def narrate(self, text: str) -> None:
        self.kernel.narrate(text)

    @property
    def live_brokers(self) -> tuple:
        return tuple(sorted(self.registered))

    def _active(self) -> set:
        """Unfenced brokers not in controlled shutdown (ClusterControlManager.isActive): leaders are elected, and
        ISRs grow, only among them."""
        return set(self.registered).difference(self.shutting_down)

    def handle_request(self, msg):
        # everything the controller serves is controller traffic: only the lab's servers send it
        refused, response = refuse_cluster_action(self, msg, self.cluster.authorizer, self.cluster.principal_of)
        if refused:
            return response
        handler = getattr(self, "handle_" + msg.api, None)
        if handler is None:
            self.narrate(f"controller does not handle {msg.api}")
            return None
        return handler(msg)

    # ---------------------------------------------------------- brokers
    def handle_BrokerRegistration(self, msg):
        req = msg.payload
        known = self.incarnations.get(req.broker_id)
        if req.broker_id in self.registered and known is not None and known != req.incarnation:
            # KRaft: a restarted broker cannot register while its previous incarnation still holds a valid
            # session; it retries, and is admitted once that session has expired and the old one is fenced.
            self.narrate(f"controller refused broker {req.broker_id} (incarnation {req.incarnation}): its previous "
                         f"incarnation {known} still has a session -> DUPLICATE_BROKER_REGISTRATION")
            return m.BrokerRegistrationResponse(Errors.DUPLICATE_BROKER_REGISTRATION, -1)
        if req.broker_id in self.registered:
            # the same incarnation registers again (the answer to its registration was lost): a new registration is
            # fenced, and what the old one led is elected anew
            self._fence(req.broker_id, "it registered again")
        self.incarnations[req.broker_id] = req.incarnation
        self.shutting_down.pop(req.broker_id, None)     # a new registration is not in controlled shutdown
        epoch = self.next_broker_epoch
        self.next_broker_epoch += 1
        self.broker_epochs[req.broker_id] = epoch
        # ClusterControlManager.registerBroker: the RegisterBrokerRecord of a new registration is fenced; the broker
        # is unfenced by a heartbeat that asks for it once the broker has caught up past this record
        self.register_offsets[req.broker_id] = offset = self.append_record()
        self.catching_up.add(req.broker_id)
        self._reset_session(req.broker_id)
        self.narrate(f"controller registered broker {req.broker_id} (broker epoch {epoch}, registration record at "
                     f"metadata offset {offset}): it is fenced until it has caught up with the metadata log")
        # the broker catches up on the metadata log while it is fenced: the whole image
        self._send(req.broker_id, tuple(self.states[tp] for tp in sorted(self.states)), full=True)
        if self.deleted:
            self._stop_replicas(req.broker_id, tuple(sorted(self.deleted)))
        return m.BrokerRegistrationResponse(Errors.NONE, epoch)

    def append_record(self) -> int:
        """The offset of a new record in the metadata log (registrations, fencing, partition changes)."""
        self.metadata_offset += 1
        return self.metadata_offset

    def check_broker_epoch(self, broker_id: int, broker_epoch: int):
        """Why a request that carries ``broker_epoch`` is not from ``broker_id``'s current registration (None: it is),
        as ClusterControlManager.checkBrokerEpoch words its StaleBrokerEpochException.  A fenced broker keeps its
        registration, and its epoch with it."""
        epoch = self.broker_epochs.get(broker_id)
        if epoch is None:
            return f"No broker registration found for broker id {broker_id}"
        if epoch != broker_epoch:
            return f"Expected broker epoch {epoch}, but got broker epoch {broker_epoch}"
        return None

    def handle_BrokerHeartbeat(self, msg):
        req = msg.payload
        stale = self.check_broker_epoch(req.broker_id, req.broker_epoch)
        if stale is not None:
            # QuorumController.processBrokerHeartbeat -> ReplicationControlManager.processBrokerHeartbeat: a heartbeat
            # of another registration (an earlier incarnation's, held up in the network) changes nothing
            self.narrate(f"controller: a heartbeat of broker {req.broker_id}: {stale} -> STALE_BROKER_EPOCH")
            return m.BrokerHeartbeatResponse(Errors.STALE_BROKER_EPOCH)
        # BrokerHeartbeatManager.calculateNextBrokerState (ReplicationControlManager.processBrokerHeartbeat)
        bid = req.broker_id
        caught_up = req.current_metadata_offset >= self.register_offsets[bid]
        in_shutdown = shut_down = False
        if bid not in self.registered:
            if req.want_shut_down:
                shut_down = True        # "Fenced broker has requested and been granted an immediate shutdown"
            elif not req.want_fence and caught_up:
                self._unfence(bid, req.current_metadata_offset)
        elif bid in self.shutting_down:
            shut_down = self._may_shut_down(bid)
            in_shutdown = not shut_down
        elif req.want_shut_down and not req.want_fence and self._leads_any(bid):
            self._begin_controlled_shutdown(bid)
            in_shutdown = True
        elif req.want_shut_down:
            shut_down = True            # it leads nothing: "granted an immediate shutdown"
        elif req.want_fence:
            self._fence(bid, "it asked to be fenced")
        if shut_down:
            # SHUTDOWN_NOW: handleBrokerFenced -- out of every ISR, its registration fenced
            self._fence(bid, "it is shutting down (controlled shutdown complete: it leads nothing, and every "
                             "active broker has caught up with the metadata that moved its leaderships)")
        self.heartbeat_offsets[bid] = req.current_metadata_offset        # (heartbeatManager.touch)
        self._reset_session(bid)
        return m.BrokerHeartbeatResponse(Errors.NONE, bid not in self.registered, caught_up, in_shutdown, shut_down)

    def _leads_any(self, broker_id: int) -> bool:
        return any(s.leader == broker_id for s in self.states.values())       # (brokersToIsrs.hasLeaderships)

    def _begin_controlled_shutdown(self, broker_id: int) -> None:
        """ReplicationControlManager.handleBrokerInControlledShutdown: a BrokerRegistrationChangeRecord (in
        controlled shutdown), then the broker out of every ISR and a new leader for each partition it led; the
        broker may go once every active broker has caught up with these records (its controlled shutdown
        offset, maybeUpdateControlledShutdownOffset)."""
        self.append_record()
        self.shutting_down[broker_id] = self.metadata_offset     # (now no election picks it; the offset is final below)
        led = {tp for tp, s in self.states.items() if s.leader == broker_id}
        changed = self._without(broker_id, quiet=True)
        self.shutting_down[broker_id] = self.metadata_offset
        by_leader: dict = {}
        for s in changed:
            if (s.topic, s.partition) in led and s.leader >= 0:
                by_leader.setdefault(s.leader, []).append(s.topic)
        moved = "; ".join(f"broker {b} now leads " + ", ".join(f"{topics.count(t)} of {t}" for t in sorted(set(topics)))
                          for b, topics in sorted(by_leader.items()))
        self.narrate(f"controller: broker {broker_id} asks to shut down and leads {len(led)} partition(s): controlled "
                     f"shutdown -- it leaves every ISR and its partitions get new leaders ({moved or 'none could'})")
        self.kernel.current.background = False
        self._publish(changed, brokers_changed=True)

    def _may_shut_down(self, broker_id: int) -> bool:
        """calculateNextBrokerState in CONTROLLED_SHUTDOWN: no leadership left, and its controlled shutdown offset
        at or below the lowest metadata offset an active broker has shown in its heartbeats."""
        if self._leads_any(broker_id):
            return False
        lowest = min((self.heartbeat_offsets.get(b, -1) for b in self._active()), default=None)
        if lowest is not None and self.shutting_down[broker_id] > lowest:
            self.narrate(f"controller: broker {broker_id} may not shut down yet: an active broker has not caught up "
                         f"with metadata offset {self.shutting_down[broker_id]} (the lowest is {lowest})")
            return False
        return True

    def _unfence(self, broker_id: int, offset: int) -> None:
        # FENCED -> UNFENCED: a fenced broker that heartbeats with its registration's epoch, wants to be unfenced
        # and has caught up with its registration record is unfenced, with the same broker epoch (it does not
        # register again); it learns what changed while it was fenced (the whole image)
        self.registered[broker_id] = self.broker_epochs[broker_id]
        self.catching_up.discard(broker_id)
        self.append_record()
        self.narrate(f"controller unfenced broker {broker_id}: its heartbeat (broker epoch "
                     f"{self.broker_epochs[broker_id]}) asks to be unfenced and shows it has caught up with the "
                     f"metadata log (offset {offset}, its registration record at {self.register_offsets[broker_id]})")
        self.kernel.current.background = False
        self._on_broker_up(broker_id)

    def _reset_session(self, broker_id: int) -> None:
        self.cancel_timer(self.session_timers.get(broker_id))
        timeout = self.cluster.broker_config["broker.session.timeout.ms"]
        self.session_timers[broker_id] = self.set_timer(
            timeout, f"session of broker {broker_id} expires",
            lambda: self._fence(broker_id, f"missed heartbeats for broker.session.timeout.ms={timeout}"),
            background=True)

    def _fence(self, broker_id: int, why: str) -> None:
        if broker_id not in self.registered:
            self.catching_up.discard(broker_id)       # (its session expired before it caught up)
            return
        del self.registered[broker_id]
        self.shutting_down.pop(broker_id, None)
        self.append_record()
        self.narrate(f"controller fenced broker {broker_id}: {why}")
        self.kernel.current.background = False
        self._publish(self._without(broker_id), brokers_changed=True)

    def _without(self, broker_id: int, quiet: bool = False) -> list:
        """generateLeaderAndIsrUpdates with ``broker_id`` to remove: a new leader where it led, out of every other
        ISR it is in (unless it is the last member)."""
        changed = []
        for tp, s in sorted(self.states.items()):
            if s.leader == broker_id:
                changed.append(self._elect(tp, exclude=broker_id, quiet=quiet))
            elif broker_id in s.isr and len(s.isr) > 1:
                changed.append(self._with(s, isr=tuple(r for r in s.isr if r != broker_id)))
        return changed

    def _on_broker_up(self, broker_id: int) -> None:
        changed = []
        for tp, s in sorted(self.states.items()):
            if s.leader < 0 and broker_id in s.replicas:
                ns = self._elect(tp, exclude=None)
                if ns.leader >= 0:
                    changed.append(ns)
        # (while no partition exists yet, as when the cluster starts, the next change carries the broker list)
        self._publish(changed, skip=broker_id, brokers_changed=bool(self.states))
        # a (re)started broker learns every partition state (those changes included), and forgets the deleted
        # ones it may still hold
        self._send(broker_id, tuple(self.states[tp] for tp in sorted(self.states)), full=True)
        if self.deleted:
            self._stop_replicas(broker_id, tuple(sorted(self.deleted)))

    # --------------------------------------------------------- election
    def _with(self, s: m.PartitionState, **kw) -> m.PartitionState:
        d = dict(topic=s.topic, partition=s.partition, leader=s.leader, leader_epoch=s.leader_epoch,
                 isr=s.isr, replicas=s.replicas, partition_epoch=s.partition_epoch + 1, config=s.config,
                 topic_id=s.topic_id)
        d.update(kw)
        ns = m.PartitionState(**d)
        self.states[(s.topic, s.partition)] = ns
        self.metadata_offset += 1                  # a PartitionChangeRecord
        return ns

    def _unclean_allowed(self, topic: str) -> bool:
        v = self.topic_configs.get(topic, {}).get("unclean.leader.election.enable")
        if v is None:
            v = self.cluster.broker_config["unclean.leader.election.enable"]
        return bool(v) or "unclean-election" in self.cluster.mutations

    def _elect(self, tp, exclude, quiet: bool = False) -> m.PartitionState:
        """A new leader for ``tp`` from its live ISR (``quiet``: the caller sums the clean elections up)."""
        s = self.states[tp]
        live = self._active() - ({exclude} if exclude is not None else set())
        candidates = [r for r in s.replicas if r in s.isr and r in live]
        name = f"{tp[0]}-{tp[1]}"
        if candidates:
            leader = candidates[0]
            isr = tuple(r for r in s.isr if r in live) or (leader,)
            if not quiet:
                self.narrate(f"controller elected broker {leader} leader of {name} from the ISR "
                             f"(leader epoch {s.leader_epoch + 1})")
            return self._with(s, leader=leader, leader_epoch=s.leader_epoch + 1, isr=isr)
        unclean = [r for r in s.replicas if r in live]
        if unclean and self._unclean_allowed(tp[0]) and not tp[0].startswith("__transaction_state"):
            leader = unclean[0]
            self.narrate(f"controller elected broker {leader} leader of {name} UNCLEANLY: no ISR member is alive "
                         f"and unclean.leader.election.enable=true (acknowledged data may be lost)")
            return self._with(s, leader=leader, leader_epoch=s.leader_epoch + 1, isr=(leader,))
        self.narrate(f"{name} has no leader: no ISR member ({list(s.isr)}) is alive"
                     + ("" if not unclean else " and unclean.leader.election.enable=false"))
        keep_isr = s.isr if exclude is None else (tuple(r for r in s.isr if r != exclude) or s.isr)
        return self._with(s, leader=-1, leader_epoch=s.leader_epoch + 1 if s.leader >= 0 else s.leader_epoch,
                          isr=keep_isr)

    def leader_move_error(self, tp, target: int) -> Errors:
        """Why leadership of ``tp`` cannot move to ``target`` (NONE: it can): only a live ISR member can take over."""
        s = self.states.get(tp)
        if s is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        if target not in s.replicas:
            return Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
        if s.leader == target:
            return Errors.ELECTION_NOT_NEEDED
        if target not in s.isr or target not in self._active():
            return Errors.PREFERRED_LEADER_NOT_AVAILABLE
        return Errors.NONE

    def move_leader(self, tp, target: int) -> Errors:
        """An operator moves leadership (kafka-reassign-partitions puts ``target`` first in the replica list,
        then ElectLeaders with election type PREFERRED)."""
        err = self.leader_move_error(tp, target)
        if err != Errors.NONE:
            return err
        s = self.states[tp]
        replicas = (target,) + tuple(r for r in s.replicas if r != target)
        self.narrate(f"controller: broker {target} is now the preferred replica of {tp[0]}-{tp[1]} and is elected "
                     f"leader (leader epoch {s.leader_epoch + 1}); broker {s.leader} becomes a follower")
        self._publish([self._with(s, leader=target, leader_epoch=s.leader_epoch + 1, replicas=replicas)])
        return Errors.NONE

    def _publish(self, changed, skip=None, brokers_changed: bool = False) -> None:
        """Send the changed partition states to every live broker; ``brokers_changed``: a broker was registered
        or fenced, which every broker learns even when no partition changes (KRaft's RegisterBrokerRecord /
        FenceBrokerRecord in the metadata log): a leader adds only live brokers to an ISR (KIP-841)."""
        if not changed and not brokers_changed:
            return
        for b in self.live_brokers:
            if b != skip:
                self._send(b, tuple(changed))

    def _send(self, broker_id: int, states, full: bool = False) -> None:
        live = self.live_brokers
        req = m.LeaderAndIsrRequest(self.controller_epoch, tuple(states), live, full,
                                    tuple(self.registered[b] for b in live), self.metadata_offset,
                                    tuple(sorted(self.shutting_down)))
        tps = [(st.topic, st.partition) for st in states]
        epoch = self.broker_epochs.get(broker_id)

        def wanted() -> bool:
            # a registered broker (unfenced, or fenced since it registered and catching up) still needs it
            return self.broker_epochs.get(broker_id) == epoch and (broker_id in self.registered
                                                                    or broker_id in self.catching_up)

        def done(resp, err):
            # A lost update must not be lost for good (KRaft brokers pull the metadata log and catch up):
            # while the broker is registered, send it the current state of those partitions again (of every
            # partition, if what was lost was the whole image).
            if err is not None and wanted():
                self.set_timer(500, f"resend LeaderAndIsr to broker {broker_id}",
                               lambda: wanted() and
                               self._send(broker_id, tuple(self.states[tp] for tp in (sorted(self.states) if full
                                                                                      else tps)), full),
                               background=True)
        timeout = 2 * self.cluster.broker_config["broker.heartbeat.interval.ms"]
        self.send_request(broker_name(broker_id), req, done, timeout_ms=timeout)

    # -------------------------------------------------------------- ISR
    def handle_AlterPartition(self, msg):
        req = msg.payload
        tp = (req.topic, req.partition)
        s = self.states.get(tp)
        stale = self.check_broker_epoch(req.broker_id, req.broker_epoch)
        if stale is not None:
            # ReplicationControlManager.alterPartition checks the leader's registration before any partition
            self.narrate(f"controller refused an AlterPartition of broker {req.broker_id}: {stale} "
                         f"-> STALE_BROKER_EPOCH")
            return m.AlterPartitionResponse(Errors.STALE_BROKER_EPOCH)
        if s is None:
            return m.AlterPartitionResponse(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        if s.leader != req.broker_id or s.leader_epoch != req.leader_epoch:
            return m.AlterPartitionResponse(Errors.FENCED_LEADER_EPOCH)
        ineligible = self.ineligible_replicas_for_isr(req.new_isr_with_epochs)
        if ineligible:
            # ReplicationControlManager.validatePartitionChange: a fenced broker may not join the ISR (KIP-841),
            # nor a broker on the word of a fetch sent by an earlier registration of it (KIP-903); nothing changes,
            # and the leader keeps its ISR until new metadata comes
            self.narrate(f"controller refused the new ISR of {req.topic}-{req.partition}: "
                         + ", ".join(f"broker {r} {why}" for r, why in ineligible) + " -> INELIGIBLE_REPLICA")
            return m.AlterPartitionResponse(Errors.INELIGIBLE_REPLICA)
        new_isr = tuple(req.new_isr)
        ns = self._with(s, isr=new_isr)
        self.narrate(f"controller changed the ISR of {req.topic}-{req.partition} to {list(new_isr)}")
        others = [b for b in self.live_brokers if b != req.broker_id]
        for b in others:
            self._send(b, (ns,))
        return m.AlterPartitionResponse(Errors.NONE, ns)

    def ineligible_replicas_for_isr(self, broker_states) -> list:
        """(broker id, why) of each proposed ISR member that may not be in it (ReplicationControlManager.
        ineligibleReplicasForIsr): not registered, shutting down, fenced, or named with a broker epoch (other than -1,
        which skips the check) that is not the one of its current registration."""
        out = []
        for st in broker_states:
            epoch = self.registered.get(st.broker_id)
            if st.broker_id in self.shutting_down:
                out.append((st.broker_id, "is shutting down"))
            elif epoch is None:
                out.append((st.broker_id, "is fenced" if st.broker_id in self.incarnations else "is not registered"))
            elif st.broker_epoch != -1 and st.broker_epoch != epoch:
                out.append((st.broker_id, f"broker epoch mismatch: requested={st.broker_epoch} VS expected={epoch}"))
        return out

    # ---------------------------------------------------------- topics
    def create_topic(self, name: str, partitions: int, rf: int, config: dict) -> Errors:
        if any(t == name for t, _ in self.states):
            return Errors.TOPIC_ALREADY_EXISTS
        brokers = sorted(self.cluster.broker_ids)
        if rf > len(brokers) or rf < 1:
            return Errors.INVALID_REPLICATION_FACTOR
        if partitions < 1:
            return Errors.INVALID_PARTITIONS
        self.topic_configs[name] = dict(config)
        self.topic_creations[name] = self.topic_creations.get(name, 0) + 1
        for tp in [tp for tp in self.deleted if tp[0] == name]:
            del self.deleted[tp]
        new = self._place(name, 0, partitions, rf, tuple(sorted(config.items())))
        self.narrate(f"controller created topic {name}: {partitions} partition(s), replication factor {rf}")
        self._publish(new)
        return Errors.NONE

    def _place(self, name: str, first: int, count: int, rf: int, items: tuple) -> list:
        """Partitions ``first``..``first+count-1`` of ``name``: replicas round-robin over the brokers, the first
        live replica leads (Kafka's StripedReplicaPlacer, without racks)."""
        brokers = sorted(self.cluster.broker_ids)
        live = self._active()
        start = self._next_replica_start
        self._next_replica_start += 1
        new = []
        topic_id = m.topic_id_for(self.cluster.seed, name, self.topic_creations.get(name, 1))   # (a TopicRecord's)
        for i in range(first, first + count):
            replicas = tuple(brokers[(start + i + j) % len(brokers)] for j in range(rf))
            alive = [r for r in replicas if r in live]
            leader = alive[0] if alive else -1
            s = m.PartitionState(name, i, leader, 0, tuple(alive) or replicas[:1], replicas, 0, items, topic_id)
            self.states[(name, i)] = s
            self.metadata_offset += 1              # a PartitionRecord
            new.append(s)
        return new

    def check_new_topic(self, t) -> tuple:
        """(error, message, partitions, replication factor, config) for one CreatableTopic: Kafka's rules
        (``ReplicationControlManager.createTopic``) with the broker defaults for -1 partitions / RF."""
        name = t.name
        why = topic_name_error(name)
        if why is not None:
            return Errors.INVALID_TOPIC_EXCEPTION, why, 0, 0, {}
        if any(tn == name for tn, _ in self.states):
            return Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.", 0, 0, {}
        c = self.cluster.broker_config
        partitions = c["num.partitions"] if t.num_partitions == -1 else t.num_partitions
        rf = c["default.replication.factor"] if t.replication_factor == -1 else t.replication_factor
        if type(partitions) is not int or partitions < 1:
            return Errors.INVALID_PARTITIONS, "Number of partitions must be larger than 0.", 0, 0, {}
        brokers = len(self.cluster.broker_ids)
        if type(rf) is not int or rf < 1 or rf > brokers:
            return (Errors.INVALID_REPLICATION_FACTOR, f"Unable to replicate the partition {rf} time(s): the "
                    f"cluster has {brokers} broker(s).", 0, 0, {})
        err, why, config = check_topic_config(dict(t.configs), rf, internal=name in (TRANSACTION_STATE_TOPIC,
                                                                                    OFFSETS_TOPIC))
        if err != Errors.NONE:
            return err, why, 0, 0, {}
        return Errors.NONE, "", partitions, rf, config

    def handle_CreateTopics(self, msg):
        req = msg.payload
        out = []
        total = sum(self.cluster.broker_config["num.partitions"] if t.num_partitions == -1 else t.num_partitions
                    for t in req.topics if type(t.num_partitions) is int and (t.num_partitions > 0 or t.num_partitions == -1))
        if total > MAX_PARTITIONS_PER_BATCH:         # Kafka's ReplicationControlManager.validateTotalNumberOfPartitions
            why = "Excessively large number of partitions per request."
            self.narrate(f"controller refused CreateTopics: {total} partitions in one request, over "
                         f"{MAX_PARTITIONS_PER_BATCH} -> POLICY_VIOLATION")
            return m.CreateTopicsResponse(tuple(m.CreatableTopicResult(t.name, Errors.POLICY_VIOLATION, why, -1, -1)
                                                for t in req.topics))
        for t in req.topics:
            err, why, partitions, rf, config = self.check_new_topic(t)
            if err == Errors.NONE and not req.validate_only:
                err = self.create_topic(t.name, partitions, rf, config)
            elif err not in (Errors.NONE, Errors.TOPIC_ALREADY_EXISTS):
                self.narrate(f"controller refused to create topic {t.name!r}: {why} -> {err.name}")
            out.append(m.CreatableTopicResult(t.name, err, why if err else "",
                                              partitions if not err else -1, rf if not err else -1))
        return m.CreateTopicsResponse(tuple(out))

    def handle_DeleteTopics(self, msg):
        out = []
        for name in msg.payload.topic_names:
            err, why = self.delete_topic(name)
            out.append(m.DeletableTopicResult(name, err, why))
        return m.DeleteTopicsResponse(tuple(out))

    def delete_topic(self, name: str) -> tuple:
        """(error, message): remove the topic's partitions and tell their replicas to delete them."""
        tps = sorted(tp for tp in self.states if tp[0] == name)
        if not tps:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name!r} does not exist."
        if name in (TRANSACTION_STATE_TOPIC, OFFSETS_TOPIC):
            self.narrate(f"controller refused to delete {name}: the coordinators' state lives there")
            return Errors.INVALID_REQUEST, f"the internal topic {name} cannot be deleted"
        for tp in tps:
            del self.states[tp]
            self.deleted[tp] = True
        self.topic_configs.pop(name, None)
        self.narrate(f"controller deleted topic {name} ({len(tps)} partition(s)); every broker is told to forget "
                     f"it, and its replicas to delete their logs")
        # every live broker, not only the replicas: each one's metadata names the topic (in KRaft every broker
        # reads the RemoveTopicRecord from the metadata log); a broker without a copy just forgets it
        for b in self.live_brokers:
            self._stop_replicas(b, tuple(tps))
        return Errors.NONE, ""

    def _stop_replicas(self, broker_id: int, tps: tuple) -> None:
        self.send_request(broker_name(broker_id), m.StopReplicaRequest(self.controller_epoch, tps, True),
                          lambda r, e: None, timeout_ms=2 * self.cluster.broker_config["broker.heartbeat.interval.ms"])

    # ------------------------------------------------------ producer ids
    def handle_AllocateProducerIds(self, msg):
        start = self.next_producer_id_block
        self.next_producer_id_block += PRODUCER_ID_BLOCK_SIZE
        return m.AllocateProducerIdsResponse(Errors.NONE, start, PRODUCER_ID_BLOCK_SIZE)
