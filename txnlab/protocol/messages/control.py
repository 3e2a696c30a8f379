"""Between the controller (the KRaft quorum) and the brokers: registration, heartbeats, LeaderAndIsr, AlterPartition, StopReplica, AllocateProducerIds
(CreateTopics, which brokers also send to the controller, is in ``admin``)."""
from __future__ import annotations

import uuid
from functools import lru_cache
from typing import Optional

from ..message_base import _err, tps_str, message


@lru_cache(maxsize=4096)
def topic_id_for(seed: int, name: str, creation: int) -> str:
    """A topic's id (KIP-516).  Kafka's controller draws a random UUID at each creation; here it follows from the
    cluster's seed, the topic's name and how many times the controller created that name, so that a run and its
    replay hand out the same ids and a topic deleted and created again gets a new one."""
    again = f":{creation}" if creation > 1 else ""          # the first creation keeps the ids handed out before
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"txnlab:seed-{seed}:{name}{again}"))


# ----------------------------------------------------- controller <-> broker
@message
class BrokerHeartbeatRequest:
    API = "BrokerHeartbeat"
    API_KEY = 63
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int = -1   # the metadata offset the broker has caught up to
    want_fence: bool = False            # true until the broker is ready to be unfenced (a starting broker)
    want_shut_down: bool = False        # the broker is in controlled shutdown (BrokerState PENDING_CONTROLLED_SHUTDOWN)

    def describe(self) -> str:
        return f"broker {self.broker_id}" + (" (wants to stay fenced)" if self.want_fence else "") \
            + (" (wants to shut down)" if self.want_shut_down else "")


@message
class BrokerHeartbeatResponse:
    error: int
    is_fenced: bool = False
    is_caught_up: bool = False          # the broker's metadata has reached the offset of its registration record
    in_controlled_shutdown: bool = False    # the controller has moved (is moving) its leaderships away
    should_shut_down: bool = False      # the controller lets it go: it leads nothing and every broker knows it

    def describe(self) -> str:
        if self.error:
            return _err(self.error)
        if self.should_shut_down:
            return "shut down now"
        if self.in_controlled_shutdown:
            return "in controlled shutdown: not yet"
        return "fenced" if self.is_fenced else "unfenced"

    def is_quiet(self) -> bool:
        return not (self.in_controlled_shutdown or self.should_shut_down)


@message
class BrokerRegistrationRequest:
    API = "BrokerRegistration"
    API_KEY = 62
    broker_id: int
    incarnation: int

    def describe(self) -> str:
        return f"broker {self.broker_id} (incarnation {self.incarnation})"


@message
class BrokerRegistrationResponse:
    error: int
    broker_epoch: int = -1

    def describe(self) -> str:
        return _err(self.error) if self.error else f"broker epoch {self.broker_epoch}"


@message
class PartitionState:
    """What the controller decided for one partition (LeaderAndIsr / UpdateMetadata)."""
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple
    replicas: tuple
    partition_epoch: int
    config: tuple = ()                 # topic config items
    topic_id: str = ""                 # the topic's id (KIP-516), topic_id_for(); "" before the controller gives one


@message
class LeaderAndIsrRequest:
    API = "LeaderAndIsr"
    API_KEY = 4
    controller_epoch: int
    partition_states: tuple             # (PartitionState, ...)
    live_brokers: tuple
    full: bool = False                  # the whole image (every partition), not a change: what a (re)started
                                        # broker needs before it acts on any of it
    broker_epochs: tuple = ()           # the broker epoch of each live broker's registration, in live_brokers'
                                        # order (KRaft: the RegisterBrokerRecord's epoch in the metadata image)
    metadata_offset: int = -1           # the controller's metadata log offset when this was sent (a broker that
                                        # applies it has caught up to there)
    shutting_down: tuple = ()           # live brokers in controlled shutdown (KRaft's BrokerRegistration
                                        # inControlledShutdown): no leader adds one of them to an ISR

    def describe(self) -> str:
        if not self.partition_states:
            return f"live brokers {list(self.live_brokers)}"       # (a broker registered or was fenced)
        return "; ".join(f"{p.topic}-{p.partition} leader {p.leader} epoch {p.leader_epoch} isr {list(p.isr)}"
                         for p in self.partition_states[:4]) + (" ..." if len(self.partition_states) > 4 else "")


@message
class LeaderAndIsrResponse:
    error: int

    def describe(self) -> str:
        return _err(self.error)


@message
class BrokerState:
    """One member of a proposed ISR (AlterPartition v3, KIP-903): the broker and the broker epoch its replica
    fetched with (-1: no epoch to check)."""
    broker_id: int
    broker_epoch: int = -1


@message
class AlterPartitionRequest:
    API = "AlterPartition"
    API_KEY = 56
    broker_id: int
    broker_epoch: int                   # the leader's: the controller refuses a stale one (STALE_BROKER_EPOCH)
    topic: str
    partition: int
    leader_epoch: int
    new_isr_with_epochs: tuple          # (BrokerState, ...): v3's NewIsrWithEpochs (KIP-903)
    partition_epoch: int

    @property
    def new_isr(self) -> tuple:
        return tuple(b.broker_id for b in self.new_isr_with_epochs)

    def describe(self) -> str:
        return f"{self.topic}-{self.partition} ISR -> {list(self.new_isr)}"


@message
class AlterPartitionResponse:
    error: int
    state: Optional[PartitionState] = None

    def describe(self) -> str:
        return _err(self.error) if self.error else f"ISR now {list(self.state.isr)}"


@message
class StopReplicaRequest:
    """The controller tells a broker to stop hosting partitions (and delete them: a deleted topic)."""
    API = "StopReplica"
    API_KEY = 5
    controller_epoch: int
    partitions: tuple                   # ((topic, partition), ...)
    delete_partitions: bool = True

    def describe(self) -> str:
        return tps_str(self.partitions) + (" (delete)" if self.delete_partitions else "")


@message
class StopReplicaResponse:
    error: int

    def describe(self) -> str:
        return _err(self.error)


@message
class AllocateProducerIdsRequest:
    API = "AllocateProducerIds"
    API_KEY = 67
    broker_id: int

    def describe(self) -> str:
        return f"broker {self.broker_id}"


@message
class AllocateProducerIdsResponse:
    error: int
    producer_id_start: int = -1
    producer_id_len: int = 0

    def describe(self) -> str:
        return _err(self.error) if self.error else f"ids {self.producer_id_start}..{self.producer_id_start + self.producer_id_len - 1}"
