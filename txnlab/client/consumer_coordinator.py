"""The consumer's side of the group protocol (Kafka's ``ConsumerCoordinator`` / ``AbstractCoordinator``).

Owns finding the group coordinator (FindCoordinator, key type 0), the member
id and generation, JoinGroup / SyncGroup (the leader runs the assignor on the
client), heartbeats every ``heartbeat.interval.ms`` with the reaction to each
answer, leaving the group (LeaveGroup, or when ``max.poll.interval.ms``
passes without a poll), and the offset requests that go to the coordinator:
OffsetCommit and OffsetFetch (RequireStable for read_committed, retrying
UNSTABLE_OFFSET_COMMIT).  Application callbacks never run here: the consumer
runs them inside ``poll()``.
"""
from __future__ import annotations

from enum import Enum
from typing import Callable, Optional

from ..errors import KafkaError
from ..protocol import messages as m
from ..protocol.errors import Errors
from .assignors import ASSIGNORS, COOPERATIVE
from .config import dialect_of
from .dialect import JAVA, JOIN_ERROR_BACKOFF_MS, JOIN_INTERVAL_MS, LIBRDKAFKA
from .offset_commit import COORDINATOR_ERRORS, OffsetCommit

PROTOCOL_TYPE = "consumer"


class MemberState(Enum):
    UNJOINED = "UNJOINED"
    JOINING = "JOINING"          # JoinGroup sent
    SYNCING = "SYNCING"          # SyncGroup sent
    STABLE = "STABLE"            # assignment received


class ConsumerCoordinator:
    def __init__(self, consumer) -> None:
        self.c = consumer
        self.node = consumer._node
        self.kernel = consumer._kernel
        self.cfg = consumer._config
        self.group_id: Optional[str] = self.cfg["group.id"]
        self.group_instance_id: Optional[str] = self.cfg["group.instance.id"]
        self.strategy = self.cfg["partition.assignment.strategy"]
        # KIP-429: a cooperative member keeps its partitions through a rebalance and gives up only those the
        # leader moves away; its subscription carries what it owns (ConsumerProtocolSubscription's
        # owned_partitions), so JoinGroup's metadata is (topics, owned partitions) for it
        self.cooperative = self.strategy in COOPERATIVE
        self.coordinator: Optional[str] = None
        self.finding = False
        self._find_not_before = 0
        self.member_id = ""
        self.generation_id = -1
        self.protocol: Optional[str] = None
        self.leader_id = ""
        self.state = MemberState.UNJOINED
        self.rejoin_needed = True
        self.lost = False                       # membership was lost: revoke without committing
        self.pending_assignment: Optional[tuple] = None
        self.join_not_before = 0
        # librdkafka's rkcg_join_intvl (dialect.JOIN_INTERVAL_MS): when the last JoinGroup went out through the
        # interval (None: reset, the next one goes at once) and the backoff a JoinGroup error added
        self.join_interval_last: Optional[int] = None
        self.join_interval_backoff = 0
        self._join_interval_timer = None
        self._left = False                      # LeaveGroup sent (close, max.poll.interval.ms): no joining by itself
        self.fatal: Optional[KafkaError] = None
        self._heartbeat_timer = None
        self._heartbeat_in_flight = False
        self._coordinator_waiters: list[Callable[[], None]] = []

    def narrate(self, text: str) -> None:
        self.kernel.narrate(text)

    def _changed(self) -> None:
        self.c._changed = True

    # --------------------------------------------------------- coordinator
    def ensure_coordinator(self, then: Optional[Callable[[], None]] = None) -> None:
        """Find the coordinator if unknown; ``then()`` runs once it is known."""
        if self.coordinator is not None:
            if then is not None:
                then()
            return
        if then is not None:
            self._coordinator_waiters.append(then)
        if self.finding or self.node.crashed or self.kernel.now < self._find_not_before:
            return
        self.finding = True
        self.node.find_coordinator(self.group_id, m.COORDINATOR_GROUP, self._found)

    def _found(self, node: Optional[str], err) -> None:
        """A FindCoordinator answer: of ``ensure_coordinator`` or of a ``coordinator_query``."""
        self.finding = False
        self._changed()
        if err == Errors.GROUP_AUTHORIZATION_FAILED:      # no DESCRIBE on the group: poll() reports it
            self._set_fatal(err, "FindCoordinator")
            return
        if err is not None and self.coordinator is not None:       # (a query: the coordinator is kept)
            self.narrate(f"{self.c.name}: FindCoordinator for group {self.group_id!r} failed ({err.name}); it "
                         f"keeps coordinator {self.coordinator}")
            return
        if err is not None:
            self.narrate(f"{self.c.name}: FindCoordinator for group {self.group_id!r} failed ({err.name}); "
                         f"retrying after retry.backoff.ms")
            self._find_not_before = self.kernel.now + self.cfg["retry.backoff.ms"]
            self.node.set_timer(self.cfg["retry.backoff.ms"], "FindCoordinator retry backoff",
                                lambda: self.ensure_coordinator())
            return
        if node != self.coordinator:
            self.narrate(f"{self.c.name}: the coordinator of group {self.group_id!r} is {node}"
                         + (f" (was {self.coordinator})" if self.coordinator is not None else ""))
        self.coordinator = node
        waiters, self._coordinator_waiters = self._coordinator_waiters, []
        for w in waiters:
            w()

    def coordinator_query(self, why: str) -> None:
        """librdkafka's rd_kafka_cgrp_coord_query: ask any broker which broker coordinates the group, keeping the
        current coordinator meanwhile; an answer naming another one moves the group's requests there
        (rd_kafka_cgrp_handle_FindCoordinator -> rd_kafka_cgrp_coord_update)."""
        if self.finding or self.node.crashed:
            return
        self.narrate(f"{self.c.name}: {why}: it asks again which broker coordinates group {self.group_id!r} "
                     f"(keeping {self.coordinator} meanwhile)")
        self.finding = True
        self.node.find_coordinator(self.group_id, m.COORDINATOR_GROUP, self._found)

    def coordinator_dead(self, why: str, disconnected: bool = False) -> None:
        """Forget the coordinator (and find it again before the next group request).  Java's
        AbstractCoordinator.markCoordinatorUnknown also disconnects from it unless the cause was a disconnect
        (``disconnected``: the request got no answer), so that nothing stays in flight to it: what is, fails
        as disconnected (NetworkClient.disconnect)."""
        old = self.coordinator
        if old is not None:
            self.narrate(f"{self.c.name}: forgets coordinator {old} ({why}) and will look it up again")
        self.coordinator = None
        if old is not None and not disconnected and dialect_of(self.cfg) == JAVA:
            self.node.disconnect(old, self.node.CHANNELS["OffsetCommit"],
                                 f"markCoordinatorUnknown: {self.c.name} disconnects from its old coordinator")

    # ----------------------------------------------------------------- join
    @property
    def in_group(self) -> bool:
        return self.state == MemberState.STABLE and self.generation_id >= 0

    def need_rejoin(self) -> bool:
        return self.rejoin_needed and self.state in (MemberState.UNJOINED, MemberState.STABLE)

    def request_rejoin(self, why: str, lost: bool = False, expedite: bool = True) -> None:
        """``expedite``: librdkafka skips its join interval for this rejoin (dialect.JOIN_INTERVAL_MS): the
        rejoin follows a revoke of the assignment (rd_kafka_cgrp_unassign_done) or a new subscription."""
        if not self.rejoin_needed:
            self.narrate(f"{self.c.name} must rejoin group {self.group_id!r}: {why}")
        if expedite:
            self.join_interval_last = None          # rd_interval_reset(&rkcg_join_intvl)
            self.join_interval_backoff = 0
        self.rejoin_needed = True
        self.lost = self.lost or lost
        self._changed()

    def start_join(self) -> None:
        """Send JoinGroup (the caller already revoked the old assignment)."""
        if self.fatal is not None or self.node.crashed or self.kernel.now < self.join_not_before:
            return
        if self.coordinator is None:
            self.ensure_coordinator()
            return
        if self._join_interval_wait():
            return
        self.stop_heartbeats()
        self.state = MemberState.JOINING
        self.rejoin_needed = False
        self._left = False
        self.lost = False
        topics = tuple(sorted(self.c._subscription))
        meta = (topics, tuple(sorted(self.c._assignment))) if self.cooperative else topics
        req = m.JoinGroupRequest(self.group_id, self.cfg["session.timeout.ms"], self.cfg["max.poll.interval.ms"],
                                 self.member_id, self.group_instance_id, PROTOCOL_TYPE, ((self.strategy, meta),))
        self.node.send_request(self.coordinator, req, self._on_join_response)   # dialect.REQUEST_TIMEOUT

    def _join_interval_wait(self) -> bool:
        """librdkafka: rd_interval_immediate(&rkcg_join_intvl, 1 s) in rd_kafka_cgrp_join_state_serve.  True when
        the JoinGroup must wait (a timer sends it when the interval is over); else the interval starts now."""
        interval = JOIN_INTERVAL_MS[dialect_of(self.cfg)]
        if not interval:
            return False
        if self.join_interval_last is not None:
            due = self.join_interval_last + interval + self.join_interval_backoff
            if self.kernel.now < due:
                if self._join_interval_timer is None:
                    self.narrate(f"{self.c.name}: the next JoinGroup waits until t={due} ms (one JoinGroup a "
                                 f"second{', plus 1 s after an error' if self.join_interval_backoff else ''})")
                    self._join_interval_timer = self.node.set_timer(due - self.kernel.now, "JoinGroup interval",
                                                                    self._join_interval_over)
                return True
        self.join_interval_last, self.join_interval_backoff = self.kernel.now, 0
        return False

    def _join_interval_over(self) -> None:
        self._join_interval_timer = None
        self._join_by_itself()

    def _retry_join(self, why: str, backoff: bool = True) -> None:
        self.state = MemberState.UNJOINED
        self.rejoin_needed = True
        # librdkafka's background thread joins again by itself (rd_kafka_cgrp_handle_JoinGroup ->
        # rd_kafka_cgrp_rejoin: join state INIT; rd_kafka_cgrp_join_state_serve sends the JoinGroup); the Java
        # client joins only inside poll() (AbstractCoordinator.joinGroupIfNeeded)
        by_itself = dialect_of(self.cfg) == LIBRDKAFKA
        self.narrate(f"{self.c.name}: {why}; it will send JoinGroup again"
                     + (" (its background thread does)" if by_itself else ""))
        if by_itself:
            self._join_by_itself()           # rd_kafka_cgrp_rejoin: state INIT, the join interval paces it
        elif backoff:
            delay = self.cfg["retry.backoff.ms"]
            self.join_not_before = self.kernel.now + delay
            self.node.set_timer(delay, "JoinGroup retry backoff", self._changed)
        self._changed()

    def _join_by_itself(self) -> None:
        """librdkafka, join state INIT: the JoinGroup goes out without the application, unless the application
        has a rebalance to see first (partitions to give up, an assignment to take) or left by not polling."""
        self._changed()
        c = self.c
        if (c._closed or self._left or self.state != MemberState.UNJOINED or not self.rejoin_needed
                or self.pending_assignment is not None or (c._assignment and (not self.cooperative or self.lost))
                or c._poll_interval_exceeded()):
            return
        if self.coordinator is None:
            self.ensure_coordinator(then=self._join_by_itself)
            return
        self.start_join()

    def _on_join_response(self, resp, err) -> None:
        self._changed()
        if err is None and Errors(resp.error) not in (Errors.NONE, Errors.MEMBER_ID_REQUIRED):
            self.join_interval_backoff = JOIN_ERROR_BACKOFF_MS[dialect_of(self.cfg)]     # rd_interval_backoff
        if err is not None:
            self.coordinator_dead(f"JoinGroup failed with {err.name}", disconnected=True)
            self._retry_join(f"JoinGroup got no answer ({err.name})")
            return
        e = Errors(resp.error)
        if e == Errors.NONE:
            self.member_id = resp.member_id
            self.generation_id = resp.generation_id
            self.protocol = resp.protocol_name
            self.leader_id = resp.leader
            if resp.leader == resp.member_id:
                self.narrate(f"{self.c.name} is the leader of group {self.group_id!r} generation "
                             f"{resp.generation_id}: it computes the {resp.protocol_name} assignment")
                self._assign_as_leader(resp)
            else:
                self._send_sync(())
            self.start_heartbeats()
            return
        if e == Errors.MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
            self.state = MemberState.UNJOINED
            self.rejoin_needed = True
            self.join_interval_last = None          # librdkafka: "Skip the join backoff" (rd_interval_reset)
            self.start_join()
            return
        if e == Errors.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self.generation_id = -1
            self._retry_join("the coordinator does not know its member id (UNKNOWN_MEMBER_ID)", backoff=False)
        elif e in COORDINATOR_ERRORS:
            self.coordinator_dead(f"JoinGroup -> {e.name}")
            self._retry_join(f"JoinGroup -> {e.name}")
        elif e == Errors.COORDINATOR_LOAD_IN_PROGRESS:
            self._retry_join(f"JoinGroup -> {e.name}")
        elif e == Errors.REBALANCE_IN_PROGRESS:
            # Java: joinGroupIfNeeded goes on with the next JoinGroup without retry.backoff.ms after a
            # RebalanceInProgressException, as after UNKNOWN_MEMBER_ID (librdkafka's join interval paces it anyway)
            self._retry_join(f"JoinGroup -> {e.name}", backoff=False)
        else:
            self._set_fatal(e, "JoinGroup")

    def _set_fatal(self, e: Errors, where: str) -> None:
        self.state = MemberState.UNJOINED
        self.stop_heartbeats()
        self.fatal = KafkaError(e, f"{where}: {e.description}", fatal=e == Errors.FENCED_INSTANCE_ID)
        self.narrate(f"{self.c.name}: {where} failed with {e.name}; the consumer reports it from poll()")

    def _assign_as_leader(self, resp) -> None:
        cooperative = resp.protocol_name in COOPERATIVE
        subscriptions = {mid: tuple(meta[0] if cooperative else meta) for mid, _, meta in resp.members}
        owned = {mid: tuple(tuple(tp) for tp in meta[1]) for mid, _, meta in resp.members} if cooperative else {}
        topics = sorted({t for ts in subscriptions.values() for t in ts})
        generation = resp.generation_id

        def ready():
            if self.generation_id != generation or self.state != MemberState.JOINING:
                return
            counts = {t: self.node.num_partitions(t) for t in topics if self.node.num_partitions(t)}
            if cooperative:
                plan = COOPERATIVE[resp.protocol_name](subscriptions, counts, owned)
            else:
                plan = ASSIGNORS.get(resp.protocol_name, ASSIGNORS["range"])(subscriptions, counts)
            self.narrate(f"{self.c.name} ({resp.protocol_name} assignor) assigns "
                         + "; ".join(f"{mid}: {m.tps_str(tps) or 'nothing'}" for mid, tps in plan.items()))
            self._send_sync(tuple((mid, tuple(tps)) for mid, tps in plan.items()))
        self.node.request_metadata(tuple(topics), then=ready)

    def _send_sync(self, assignments: tuple) -> None:
        if self.coordinator is None:
            # the coordinator was forgotten while the leader waited for metadata to assign: no SyncGroup
            # (Java's AbstractCoordinator.sendSyncGroupRequest fails it with COORDINATOR_NOT_AVAILABLE; librdkafka
            # resets its join state when the coordinator goes away): find the coordinator, then join again
            self._retry_join("the coordinator is unknown, so SyncGroup cannot be sent (COORDINATOR_NOT_AVAILABLE)")
            return
        self.state = MemberState.SYNCING
        req = m.SyncGroupRequest(self.group_id, self.generation_id, self.member_id, self.group_instance_id,
                                 assignments)
        self.node.send_request(self.coordinator, req, self._on_sync_response)   # dialect.REQUEST_TIMEOUT

    def _on_sync_response(self, resp, err) -> None:
        self._changed()
        if self.state != MemberState.SYNCING:
            return
        if err is not None:
            self.coordinator_dead(f"SyncGroup failed with {err.name}", disconnected=True)
            self._retry_join(f"SyncGroup got no answer ({err.name})")
            return
        e = Errors(resp.error)
        if e == Errors.NONE:
            self.state = MemberState.STABLE
            self.pending_assignment = tuple(resp.assignment)
            return
        if e in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION) and self.cooperative:
            # A KIP-429 member kept its partitions through the rebalance; with its membership gone they are lost,
            # given up before it joins again: librdkafka's rd_kafka_cgrp_handle_SyncGroup_memberstate calls
            # rd_kafka_cgrp_revoke_all_rejoin ("assignment is lost"); in Java the reset generation makes the next
            # onJoinPrepare invoke onPartitionsLost.  (An eager member gave up everything before its JoinGroup.)
            self.lost = True
        if e == Errors.UNKNOWN_MEMBER_ID:
            self.member_id, self.generation_id = "", -1
        elif e == Errors.ILLEGAL_GENERATION:
            self.generation_id = -1
        elif e in COORDINATOR_ERRORS:
            self.coordinator_dead(f"SyncGroup -> {e.name}")
        elif e not in (Errors.REBALANCE_IN_PROGRESS, Errors.COORDINATOR_LOAD_IN_PROGRESS):
            self._set_fatal(e, "SyncGroup")
            return
        self._retry_join(f"SyncGroup -> {e.name}", backoff=e != Errors.REBALANCE_IN_PROGRESS)

    def drop_stale_assignment(self, assignment: tuple) -> None:
        """Java: the assignment of a generation that ended before poll() took it is not handed out
        (AbstractCoordinator.joinGroupIfNeeded: hasGenerationReset -> resetStateAndRejoin with the member id)."""
        self.narrate(f"{self.c.name} drops its assignment ({m.tps_str(assignment) or 'nothing'}) unseen: the "
                     f"generation was reset by a heartbeat answer before poll() took it; it rejoins with no "
                     f"member id")
        self.member_id, self.generation_id = "", -1
        self.state = MemberState.UNJOINED
        self.stop_heartbeats()
        self.request_rejoin("rebalance failed since the generation was reset by the heartbeat thread", lost=True)

    def take_assignment(self) -> Optional[tuple]:
        a, self.pending_assignment = self.pending_assignment, None
        return a

    # ------------------------------------------------------------ heartbeats
    def start_heartbeats(self) -> None:
        self.stop_heartbeats()
        self._heartbeat_timer = self.node.set_timer(self.cfg["heartbeat.interval.ms"], "Heartbeat", self._heartbeat_tick,
                                                    background=True)

    def stop_heartbeats(self) -> None:
        self.node.cancel_timer(self._heartbeat_timer)
        self._heartbeat_timer = None

    def _heartbeat_tick(self) -> None:
        self._heartbeat_timer = None
        if self.c._closed or self.node.crashed or self.generation_id < 0 or not self.member_id:
            return
        if self.c._poll_interval_exceeded():
            self.kernel.current.background = False
            gap = self.kernel.now - self.c._last_poll
            self.narrate(f"{self.c.name} has not called poll() for {gap} ms, more than max.poll.interval.ms="
                         f"{self.cfg['max.poll.interval.ms']}: it leaves group {self.group_id!r} so the others can "
                         f"take over its partitions")
            self.leave_group("max.poll.interval.ms exceeded")
            return
        self.start_heartbeats()
        if self.coordinator is None:
            self.ensure_coordinator()
            return
        # librdkafka heartbeats only a member that has its assignment: a Heartbeat sent while SyncGroup waits
        # for the leader would wait behind it in the coordinator connection anyway (the broker answers one
        # request of a connection at a time), and the coordinator keeps a member awaiting sync alive
        if self._heartbeat_in_flight or self.state != MemberState.STABLE:
            return
        self._heartbeat_in_flight = True
        req = m.HeartbeatRequest(self.group_id, self.generation_id, self.member_id, self.group_instance_id)
        self.node.send_request(self.coordinator, req, self._on_heartbeat_response, background=True)

    def _lost_rejoin_expedited(self) -> bool:
        """librdkafka's rd_kafka_cgrp_revoke_all_rejoin: the rejoin skips the join interval once the lost
        partitions are unassigned; a cooperative member with nothing to give up rejoins within it."""
        return not self.cooperative or bool(self.c._assignment)

    def _on_heartbeat_response(self, resp, err) -> None:
        self._heartbeat_in_flight = False
        if self.c._closed or self.node.crashed:
            return
        if err is not None:
            self.coordinator_dead(f"Heartbeat failed with {err.name}", disconnected=True)
            return
        e = Errors(resp.error)
        if e == Errors.NONE:
            return
        if e == Errors.REBALANCE_IN_PROGRESS:
            # librdkafka: a cooperative member just rejoins (rd_kafka_cgrp_rejoin, within the join interval)
            self.request_rejoin("the group is rebalancing (Heartbeat -> REBALANCE_IN_PROGRESS)",
                                expedite=not self.cooperative)
        elif e == Errors.ILLEGAL_GENERATION:
            self.generation_id = -1
            self.stop_heartbeats()
            self.request_rejoin("its generation is over (Heartbeat -> ILLEGAL_GENERATION); its partitions "
                                "are lost", lost=True, expedite=self._lost_rejoin_expedited())
        elif e == Errors.UNKNOWN_MEMBER_ID:
            self.member_id, self.generation_id = "", -1
            self.stop_heartbeats()
            self.request_rejoin("the coordinator removed it from the group (Heartbeat -> UNKNOWN_MEMBER_ID); "
                                "its partitions are lost", lost=True, expedite=self._lost_rejoin_expedited())
        elif e in COORDINATOR_ERRORS or e == Errors.COORDINATOR_LOAD_IN_PROGRESS:
            if e != Errors.COORDINATOR_LOAD_IN_PROGRESS:
                self.coordinator_dead(f"Heartbeat -> {e.name}")
        else:
            self._set_fatal(e, "Heartbeat")
            self._changed()

    # ---------------------------------------------------------------- leave
    def leave_group(self, why: str, then: Optional[Callable[[], None]] = None) -> None:
        """LeaveGroup (static members do not send it: their session timeout decides)."""
        self.stop_heartbeats()
        self._left = True
        member = self.member_id
        self.member_id, self.generation_id = "", -1
        self.state = MemberState.UNJOINED
        self.rejoin_needed = True
        self.lost = True
        self._changed()
        if not member or self.coordinator is None or self.group_instance_id is not None:
            if then is not None:
                then()
            return

        def done(resp, err):
            self._changed()
            if then is not None:
                then()
        self.node.send_request(self.coordinator, m.LeaveGroupRequest(self.group_id, member), done)

    # --------------------------------------------------------------- offsets
    def commit(self, offsets: dict, done: Callable[[Optional[KafkaError], dict], None], attempts: int = 1,
               asynchronous: bool = False) -> OffsetCommit:
        """OffsetCommit of {tp: (offset, leader epoch, metadata)}; done(error, {tp: error}) in the event loop, the
        error as the dialect reports a commit.  What is sent again, and when, is ``offset_commit.OffsetCommit``'s."""
        return OffsetCommit(self, offsets, done, attempts, asynchronous).start()

    def fetch_committed(self, tps: list, done: Callable[[Optional[KafkaError], dict], None],
                        wanted: Callable[[], bool] = lambda: True) -> None:
        """OffsetFetch; retries UNSTABLE_OFFSET_COMMIT and coordinator errors until
        ``done(error, {tp: (offset, leader epoch, metadata)})`` can be called (or until ``wanted()`` says the caller
        gave up).
        RequireStable (KIP-447) only for a read_committed consumer, as librdkafka and the Java client ask it:
        a read_uncommitted one gets the last committed offsets at once, even while a transaction holds new ones."""
        require_stable = self.cfg["isolation.level"] == "read_committed"

        def send():
            if not wanted():
                return
            req = m.OffsetFetchRequest(self.group_id, tuple(sorted(tps)), require_stable=require_stable)
            self.node.send_request(self.coordinator, req, on_resp, timeout_ms=self.cfg["request.timeout.ms"])

        def retry(why: str, refind: bool, disconnected: bool = False) -> None:
            if refind:
                self.coordinator_dead(why, disconnected)
            self.node.set_timer(self.cfg["retry.backoff.ms"], "OffsetFetch retry backoff",
                                lambda: self.fetch_committed(tps, done, wanted))

        def on_resp(resp, err):
            self._changed()
            if self.c._closed or self.node.crashed or not wanted():
                return
            if err is not None:
                retry(f"OffsetFetch failed with {err.name}", True, disconnected=True)
                return
            e = Errors(resp.error)
            if e in COORDINATOR_ERRORS or e == Errors.COORDINATOR_LOAD_IN_PROGRESS:
                retry(f"OffsetFetch -> {e.name}", e != Errors.COORDINATOR_LOAD_IN_PROGRESS)
                return
            if e != Errors.NONE:
                done(KafkaError(e, f"OffsetFetch: {e.description}"), {})
                return
            unstable = sorted(tp for tp, (*_, pe) in resp.offsets.items() if pe == Errors.UNSTABLE_OFFSET_COMMIT)
            if unstable:
                self.narrate(f"{self.c.name}: OffsetFetch -> UNSTABLE_OFFSET_COMMIT for {m.tps_str(unstable)}: the "
                             f"transaction that holds their offsets has no marker yet; asking again after "
                             f"retry.backoff.ms={self.cfg['retry.backoff.ms']}")
                retry("", False)
                return
            other = next((Errors(pe) for *_, pe in resp.offsets.values() if pe != Errors.NONE), None)
            if other is not None:
                done(KafkaError(other, f"OffsetFetch: {other.description}"), {})
                return
            done(None, {tp: (off, epoch, meta) for tp, (off, epoch, meta, _) in resp.offsets.items()})
        self.ensure_coordinator(send)
