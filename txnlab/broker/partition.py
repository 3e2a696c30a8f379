"""One partition as seen by one broker (Kafka's ``Partition``): leader or follower.

Owns the replication state the leader keeps: the ISR (and the maximal ISR
while an ISR change is pending at the controller), every follower's LEO and
last caught-up time, the High Watermark rule (min LEO over the ISR, never
while under min.insync.replicas), and the produce requests waiting for acks=all
(Kafka's DelayedProduce).  The log itself is the ``UnifiedLog`` on disk.
"""
from __future__ import annotations

from typing import Callable, Optional

from .._mypyc import new as _new    # object.__new__ (compiled by mypyc: the class call)
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.names import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, broker_name

# read on every completed acks=all wait: a member read through its enum class costs CPython 3.11 a call of the
# class's attribute hook each time (~60 ns)
_NONE = Errors.NONE


class FollowerState:
    __slots__ = ("broker_id", "leo", "last_caught_up_ms", "last_fetch_ms", "last_sent_hw", "broker_epoch")

    def __init__(self, broker_id: int, now: int) -> None:
        self.broker_id = broker_id
        self.leo = -1                 # unknown until it fetches
        self.last_caught_up_ms = now
        self.last_fetch_ms = now
        self.last_sent_hw = -1
        # the broker epoch its last fetch was sent with (KIP-903; -1: the fetch had none), None until it fetches
        # from this leader (Kafka's ReplicaState.brokerEpoch)
        self.broker_epoch: Optional[int] = None


class DelayedProduce:
    __slots__ = ("required_offset", "callback", "timer")

    def __init__(self, required_offset: int = 0, callback=None, timer=None) -> None:
        self.required_offset = required_offset
        self.callback = callback
        self.timer = timer


class Partition:
    def __init__(self, broker, topic: str, partition: int, log) -> None:
        self.broker = broker
        self.topic = topic
        self.partition = partition
        self.tp = (topic, partition)
        self.name = f"{topic}-{partition}"      # read by every narration of this partition
        # a coordinator's own log (the offsets or transaction state topic): its HW moves tell the coordinator too
        self._internal = topic == OFFSETS_TOPIC or topic == TRANSACTION_STATE_TOPIC
        self._hold_key = (broker.name, "replicate", self.tp)
        self.log = log
        self.leader = -1
        self.is_leader = False        # leader == this broker (kept with ``leader``, read on every fetch)
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: tuple = ()
        self._replica_names: dict[int, str] = {}
        self.isr: tuple = ()
        self.pending_isr: Optional[tuple] = None
        self.followers: dict[int, FollowerState] = {}
        # (replica, its FollowerState or None) of every other ISR member, in ISR order: read by every fetch
        # (the HW rule, the replication hold); rebuilt by _note_isr_followers when the ISR or the followers change
        self._isr_followers: tuple = ()
        self.delayed: list[DelayedProduce] = []
        self.config: dict = {}
        # the topic's min.insync.replicas, else the broker's, at most the replication factor: a field set with the
        # config (read on every fetch)
        self.min_insync_replicas: int = broker.config["min.insync.replicas"]
        # len(isr) < min_insync_replicas: a field set with both (read by every HW check: no len() call)
        self._isr_too_small = 0 < self.min_insync_replicas
        self.epoch_start_offset = 0

    @property
    def maximal_isr(self) -> tuple:
        if self.pending_isr is None:
            return self.isr
        return tuple(sorted(set(self.isr) | set(self.pending_isr)))

    # ------------------------------------------------------------ leadership
    def make_leader(self, state, now: int) -> None:
        was_leader = self.is_leader and self.leader_epoch == state.leader_epoch
        self._apply(state)
        if was_leader:
            return
        self.log.assign_epoch_start_offset(self.leader_epoch, self.log.log_end_offset)
        self.epoch_start_offset = self.log.log_end_offset
        self.followers = {r: FollowerState(r, now) for r in self.replicas if r != self.broker.broker_id}
        self._note_isr_followers()
        self.pending_isr = None
        self.broker.narrate(f"broker {self.broker.broker_id} is now leader of {self.name} "
                            f"(leader epoch {self.leader_epoch}, ISR {list(self.isr)}, LEO {self.log.log_end_offset}, "
                            f"HW {self.log.high_watermark})")
        self.maybe_increment_hw(now)

    def check_replication_hold(self) -> None:
        """Keep the simulation busy while followers in the ISR lag behind this leader's log.  (Not its HW:
        followers learn the HW lazily, with their next fetch answer, as in Kafka.)"""
        k = self.broker.kernel
        if self.is_leader:
            leo = self.log.log_end_offset
            for r, f in self._isr_followers:
                if f is None or f.leo < leo:
                    node = k.nodes.get(self._replica_names.get(r) or broker_name(r))
                    if node is not None and node.alive:
                        k._holds.add(self._hold_key)        # (Kernel.hold, inlined: once per replicated write)
                        return
        k._holds.discard(self._hold_key)                    # (Kernel.release, inlined)

    def make_follower(self, state) -> None:
        was_leader = self.is_leader
        self._apply(state)
        self.check_replication_hold()
        if was_leader:
            self.fail_delayed(Errors.NOT_LEADER_OR_FOLLOWER, "leadership moved")
            self.followers = {}
            self._note_isr_followers()
            self.pending_isr = None

    def _apply(self, state) -> None:
        self.broker.isr_version += 1         # fetch sessions re-check who is out of an ISR
        self.leader = state.leader
        self.is_leader = state.leader == self.broker.broker_id
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.isr = tuple(state.isr)
        self.replicas = tuple(state.replicas)
        self._replica_names = {r: broker_name(r) for r in self.replicas}    # read while a follower lags
        self.config = dict(state.config)
        v = self.config.get("min.insync.replicas")
        v = v if v is not None else self.broker.config["min.insync.replicas"]
        # Kafka's Partition.effectiveMinIsr (4.1.1 core/.../cluster/Partition.scala): min(min.insync.replicas,
        # replication factor), so a setting above the replication factor asks for every replica, not more
        self.min_insync_replicas = min(v, len(self.replicas)) if self.replicas else v
        self._isr_too_small = len(self.isr) < self.min_insync_replicas
        self.log.update_topic_config(self.config)     # topic configs changed by an admin apply at once
        self._note_isr_followers()

    def _note_isr_followers(self) -> None:
        self._isr_followers = self._follower_states(self.isr)

    def _follower_states(self, isr: tuple) -> tuple:
        """(replica, its FollowerState or None) of every member of ``isr`` but this broker."""
        me = self.broker.broker_id
        return tuple((r, self.followers.get(r)) for r in isr if r != me)

    # ------------------------------------------------------------------- HW
    def maybe_increment_hw(self, now: int) -> bool:
        """HW = min LEO over the (maximal) ISR; never advanced while under min ISR."""
        if not self.is_leader:
            return False
        log = self.log
        if self.pending_isr is None:
            if self._isr_too_small:
                return False
            followers = self._isr_followers
        else:
            isr = self.maximal_isr
            if len(isr) < self.min_insync_replicas:
                return False
            followers = self._follower_states(isr)
        new_hw = log.log_end_offset
        for r, f in followers:
            if f is None:
                return False
            leo = f.leo
            if leo < new_hw:
                if leo < 0:         # (unknown until it fetches: the LEO, never below 0, is the bound)
                    return False
                new_hw = leo
        if new_hw <= log.high_watermark:
            return False
        old = log.high_watermark
        log.update_high_watermark(new_hw)
        b = self.broker
        b.kernel.narrate_f(("%s HW %d -> %d", self.name, old, log.high_watermark))
        if self.delayed:        # (complete_delayed's own first test, without its call when nothing is done)
            hw = log.high_watermark
            for d in self.delayed:
                if d.required_offset <= hw:
                    self.complete_delayed(now)
                    break
        # what a moved HW completes: parked fetches, then a coordinator's writes waiting on its own log's HW
        b._complete_parked_for(self.tp)
        if self._internal:
            b.on_high_watermark(self)
        return True

    # -------------------------------------------------------- acks=all waits
    def add_delayed(self, required_offset: int, timeout_ms: int, callback: Callable) -> None:
        """callback(error) once HW >= required_offset, or on failure/timeout."""
        d: DelayedProduce = _new(DelayedProduce)    # DelayedProduce(required_offset, callback, None), no class call
        d.required_offset = required_offset
        d.callback = callback
        b = self.broker
        # almost always cancelled (the HW gets there first): a timeout lane, and no closure per write
        d.timer = b.kernel.schedule_timeout(timeout_ms, b.name, ("DelayedProduce expiry %s", self.name),
                                            self._expire_delayed, d, b.incarnation)
        self.delayed.append(d)

    def _expire_delayed(self, d: DelayedProduce) -> None:
        if d in self.delayed:
            self.delayed.remove(d)
            self.broker.narrate(f"{self.name}: acks=all wait expired before HW reached {d.required_offset}")
            d.callback(Errors.REQUEST_TIMED_OUT)

    def complete_delayed(self, now: int) -> None:
        hw = self.log.high_watermark
        for d in self.delayed:      # (most calls complete nothing: found without building the two lists)
            if d.required_offset <= hw:
                break
        else:
            return
        done: list[DelayedProduce] = []
        waiting: list[DelayedProduce] = []
        for d in self.delayed:          # (one loop, no comprehensions: each is a call in CPython 3.11)
            (done if d.required_offset <= hw else waiting).append(d)
        if not done:
            return
        self.delayed = waiting
        for d in done:
            timer = d.timer     # Kernel.cancel, inlined: a timeout lane's timer is background
            if timer is not None and not timer.cancelled:
                timer.cancelled = True
                timer.fn = timer.arg = None
            callback = d.callback   # (read, then called: see Node.on_message)
            callback(_NONE)

    def fail_delayed(self, error: Errors, why: str) -> None:
        pending, self.delayed = self.delayed, []
        for d in pending:
            self.broker.cancel_timer(d.timer)
            self.broker.narrate(f"{self.name}: a write waiting for acks=all fails with {error.name} ({why})")
            d.callback(error)

    # ------------------------------------------------------------------- ISR
    def update_follower(self, replica: int, fetch_offset: int, now: int, broker_epoch: int = -1) -> None:
        """Record a follower's fetch (Kafka's updateFollowerFetchState), with the broker epoch it was sent with.
        (The caller has refused a stale one: see stale_broker_epoch.)"""
        f = self.followers.get(replica)
        if f is None:
            f = self.followers[replica] = FollowerState(replica, now)
            self._note_isr_followers()
        leo = self.log.log_end_offset
        f.leo = fetch_offset
        f.last_fetch_ms = now
        f.broker_epoch = broker_epoch
        if fetch_offset >= leo:
            f.last_caught_up_ms = now
        if self.pending_isr is None and replica not in self.isr:     # (else maybe_expand_isr has nothing to do)
            self.maybe_expand_isr(replica, now)
        self.maybe_increment_hw(now)
        self.check_replication_hold()

    def stale_broker_epoch(self, replica: int, broker_epoch: int) -> None:
        """Narrate the refusal of a fetch of ``replica`` sent with an older broker epoch than its registration known
        here: a fetch of an earlier incarnation of that broker, held up on its way.  Kafka's
        Replica.updateFetchStateOrThrow (KIP-903) records nothing and the partition is answered
        NOT_LEADER_OR_FOLLOWER.  (Whether it is stale is the same for every partition of a request: the fetch
        path looks once per request, FetchHandling._stale_replica_epoch.)"""
        self.broker.narrate(f"{self.name}: a fetch of follower {replica} sent with broker epoch {broker_epoch} is "
                            f"stale (its registration has broker epoch "
                            f"{self.broker.metadata.alive_broker_epoch(replica)}): not recorded -> NOT_LEADER_OR_FOLLOWER")

    def is_replica_isr_eligible(self, replica: int) -> bool:
        """Kafka's Partition.isReplicaIsrEligible (KRaft): a broker the controller has fenced never joins (KIP-841),
        nor one in controlled shutdown (metadataCache.isBrokerShuttingDown),
        nor one whose last fetch here was sent with another broker epoch than its registration's (KIP-903:
        isBrokerEpochIsrEligible; a fetch without one, -1, skips the check).  None of them before it has fetched."""
        f = self.followers.get(replica)
        cached = self.broker.metadata.alive_broker_epoch(replica)
        if f is None or cached is None or f.broker_epoch is None or replica in self.broker.metadata.shutting_down:
            return False
        return f.broker_epoch == -1 or f.broker_epoch == cached

    def isr_with_broker_epochs(self, isr: tuple) -> tuple:
        """``isr`` as AlterPartition v3 names it (Partition.addBrokerEpochToIsr): this broker with its own broker
        epoch, every other member with the one its last fetch here was sent with, -1 if none has come yet."""
        me = self.broker.broker_id
        out = []
        for r in isr:
            if r == me:
                epoch = self.broker.broker_epoch
            else:
                f = self.followers.get(r)
                epoch = f.broker_epoch if f is not None and f.broker_epoch is not None else -1
            out.append(m.BrokerState(r, epoch))
        return tuple(out)

    def maybe_expand_isr(self, replica: int, now: int) -> None:
        if replica in self.isr or self.pending_isr is not None:
            return
        if not self.is_replica_isr_eligible(replica):
            return
        f = self.followers[replica]
        # Kafka: caught up to the HW and to the start of the current leader epoch
        if f.leo >= max(self.log.high_watermark, self.epoch_start_offset) and f.leo >= 0:
            new_isr = tuple(sorted(set(self.isr) | {replica}))
            self.broker.narrate(f"follower {replica} caught up on {self.name} (LEO {f.leo}); "
                                f"leader asks the controller to add it to the ISR")
            self.broker.alter_partition(self, new_isr)

    def check_isr_shrink(self, now: int) -> None:
        if not self.is_leader or self.pending_isr is not None:
            return
        lag = self.broker.config["replica.lag.time.max.ms"]
        me = self.broker.broker_id
        leo = self.log.log_end_offset
        out = []
        for r in self.isr:
            if r == me:
                continue
            f = self.followers.get(r)
            caught_up = f.last_caught_up_ms if f is not None else now
            if f is not None and f.leo >= leo:
                # it has everything: any fetch since (a session fetch need not name this partition) counts
                caught_up = max(caught_up, self.broker.replica_last_fetch.get(r, caught_up))
            if now - caught_up > lag:
                out.append(r)
        if out:
            new_isr = tuple(r for r in self.isr if r not in out)
            self.broker.narrate(f"{self.name}: replica(s) {out} have not caught up for more than "
                                f"replica.lag.time.max.ms={lag}; leader asks the controller to shrink the ISR to {list(new_isr)}")
            self.broker.alter_partition(self, new_isr)

    def isr_changed(self, state, now: int) -> None:
        self._apply(state)
        self.pending_isr = None
        self.check_replication_hold()
        if len(self.isr) < self.min_insync_replicas:
            self.fail_delayed(Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                              f"ISR {list(self.isr)} is below min.insync.replicas={self.min_insync_replicas}")
        self.maybe_increment_hw(now)
