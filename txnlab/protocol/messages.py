"""Requests and responses, named after Kafka's APIs, with Kafka's field names.

The only thing clients and brokers share.  Each message is a small frozen
dataclass with ``API`` (Kafka's request name) and ``API_KEY`` (its number).
Partitions are keyed by ``(topic, partition)`` tuples.  ``describe()`` gives
the short text the trace shows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .errors import Errors

TP = tuple  # (topic, partition)

READ_UNCOMMITTED = 0
READ_COMMITTED = 1
CONSUMER_REPLICA_ID = -1


def tp_str(tp) -> str:
    return f"{tp[0]}-{tp[1]}"


def _tps(tps, limit: int = 4) -> str:
    tps = sorted(tps)
    s = ", ".join(tp_str(t) for t in tps[:limit])
    return s + (f" +{len(tps) - limit} more" if len(tps) > limit else "")


def _err(e) -> str:
    return "ok" if e == Errors.NONE else str(Errors(e))


# ------------------------------------------------------------------ metadata
@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    error: int
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple
    isr: tuple


@dataclass(frozen=True, slots=True)
class MetadataRequest:
    API = "Metadata"
    API_KEY = 3
    topics: Optional[tuple] = None   # None = all topics

    def describe(self) -> str:
        return "all topics" if self.topics is None else ", ".join(self.topics)


@dataclass(frozen=True, slots=True)
class MetadataResponse:
    brokers: tuple                      # broker ids that are alive
    controller_id: int
    topics: dict                        # topic -> (error, [PartitionMetadata])

    def describe(self) -> str:
        return f"{len(self.topics)} topic(s), brokers {list(self.brokers)}"


# ------------------------------------------------------------------- produce
@dataclass(frozen=True, slots=True)
class ProduceRequest:
    API = "Produce"
    API_KEY = 0
    transactional_id: Optional[str]
    acks: int
    timeout_ms: int
    topic_data: dict                    # tp -> RecordBatch

    def describe(self) -> str:
        parts = []
        for tp, b in self.topic_data.items():
            s = f"{tp_str(tp)}: {b.record_count} record(s)"
            if b.producer_id >= 0:
                s += f" pid {b.producer_id} epoch {b.producer_epoch} seq {b.base_sequence}..{b.last_sequence}"
            if b.is_transactional:
                s += " txn"
            parts.append(s)
        return "; ".join(parts) + f", acks={self.acks}"


@dataclass(frozen=True, slots=True)
class PartitionProduceResponse:
    error: int
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class ProduceResponse:
    responses: dict                     # tp -> PartitionProduceResponse

    def describe(self) -> str:
        out = []
        for tp, r in self.responses.items():
            if r.error == Errors.NONE:
                out.append(f"{tp_str(tp)} ok at offset {r.base_offset}")
            else:
                out.append(f"{tp_str(tp)} {_err(r.error)}")
        return "; ".join(out)


# --------------------------------------------------------------------- fetch
@dataclass(frozen=True, slots=True)
class FetchPartition:
    fetch_offset: int
    partition_max_bytes: int = 1_048_576
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1


@dataclass(frozen=True, slots=True)
class FetchRequest:
    API = "Fetch"
    API_KEY = 1
    replica_id: int                     # -1 for consumers
    max_wait_ms: int
    min_bytes: int
    isolation_level: int
    partitions: dict                    # tp -> FetchPartition (with a session: only what changed)
    session_id: int = -1                # KIP-227: -1 no session, 0 open one, >0 an incremental fetch
    session_epoch: int = -1
    forgotten: tuple = ()               # partitions to drop from the session

    def describe(self) -> str:
        who = "consumer" if self.replica_id < 0 else f"follower {self.replica_id}"
        if self.session_id > 0:
            who += f" (session {self.session_id}, {len(self.partitions)} changed)"
        iso = " read_committed" if self.isolation_level == READ_COMMITTED else ""
        offs = ", ".join(f"{tp_str(tp)}@{p.fetch_offset}" for tp, p in sorted(self.partitions.items())[:4])
        return f"{who}{iso} {offs}"


@dataclass(frozen=True, slots=True)
class FetchPartitionData:
    error: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted_transactions: Optional[tuple] = None   # ((producer_id, first_offset), ...)
    records: tuple = ()                            # RecordBatch, ...
    diverging_epoch: Optional[tuple] = None        # (epoch, end_offset)


@dataclass(frozen=True, slots=True)
class FetchResponse:
    partitions: dict                    # tp -> FetchPartitionData (with a session: only what changed)
    error: int = 0                      # top-level: FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH
    session_id: int = 0

    def describe(self) -> str:
        if self.error:
            return _err(self.error)
        out = []
        for tp, d in sorted(self.partitions.items()):
            if d.error != Errors.NONE:
                out.append(f"{tp_str(tp)} {_err(d.error)}")
                continue
            n = sum(b.record_count for b in d.records)
            s = f"{tp_str(tp)} {n} record(s) HW {d.high_watermark}"
            if d.aborted_transactions:
                s += f" aborted {list(d.aborted_transactions)}"
            if d.diverging_epoch:
                s += f" diverging epoch {d.diverging_epoch}"
            out.append(s)
        return "; ".join(out[:4]) + (" ..." if len(out) > 4 else "")

    def is_quiet(self) -> bool:
        return not self.error and not any(d.records or d.diverging_epoch or d.error for d in self.partitions.values())


@dataclass(frozen=True, slots=True)
class ListOffsetsRequest:
    API = "ListOffsets"
    API_KEY = 2
    isolation_level: int
    partitions: dict                    # tp -> timestamp (-1 latest, -2 earliest)

    def describe(self) -> str:
        return ", ".join(f"{tp_str(tp)} {'latest' if t == -1 else 'earliest' if t == -2 else t}"
                         for tp, t in sorted(self.partitions.items()))


@dataclass(frozen=True, slots=True)
class ListOffsetsResponse:
    partitions: dict                    # tp -> (error, offset)

    def describe(self) -> str:
        return ", ".join(f"{tp_str(tp)} {o if e == 0 else _err(e)}" for tp, (e, o) in sorted(self.partitions.items()))


# --------------------------------------------------------- find coordinator
COORDINATOR_GROUP = 0
COORDINATOR_TRANSACTION = 1


@dataclass(frozen=True, slots=True)
class FindCoordinatorRequest:
    API = "FindCoordinator"
    API_KEY = 10
    key: str
    key_type: int

    def describe(self) -> str:
        return f"{'transactional.id' if self.key_type == COORDINATOR_TRANSACTION else 'group'} {self.key!r}"


@dataclass(frozen=True, slots=True)
class FindCoordinatorResponse:
    error: int
    node_id: int = -1
    error_message: str = ""

    def describe(self) -> str:
        return f"coordinator is broker {self.node_id}" if self.error == 0 else _err(self.error)


# --------------------------------------------------------- init producer id
@dataclass(frozen=True, slots=True)
class InitProducerIdRequest:
    API = "InitProducerId"
    API_KEY = 22
    transactional_id: Optional[str]
    transaction_timeout_ms: int
    producer_id: int = -1
    producer_epoch: int = -1

    def describe(self) -> str:
        s = f"transactional.id {self.transactional_id!r}" if self.transactional_id is not None else "idempotent"
        if self.producer_id >= 0:
            s += f", current pid {self.producer_id} epoch {self.producer_epoch}"
        return s


@dataclass(frozen=True, slots=True)
class InitProducerIdResponse:
    error: int
    producer_id: int = -1
    producer_epoch: int = -1

    def describe(self) -> str:
        if self.error:
            return _err(self.error)
        return f"pid {self.producer_id} epoch {self.producer_epoch}"


# ---------------------------------------------------------------- groups
@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    API = "JoinGroup"
    API_KEY = 11
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    group_instance_id: Optional[str]
    protocol_type: str
    protocols: tuple                    # ((name, subscribed topics tuple), ...)

    def describe(self) -> str:
        return f"group {self.group_id!r} member {self.member_id or '(new)'}"


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error: int
    generation_id: int = -1
    protocol_name: str = ""
    leader: str = ""
    member_id: str = ""
    members: tuple = ()                 # ((member_id, group_instance_id, metadata), ...) for the leader

    def describe(self) -> str:
        if self.error:
            return _err(self.error)
        role = "leader" if self.leader == self.member_id else "follower"
        return f"generation {self.generation_id}, {self.member_id} is {role}"


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    API = "SyncGroup"
    API_KEY = 14
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: Optional[str]
    assignments: tuple                  # ((member_id, assignment), ...) from the leader only

    def describe(self) -> str:
        return f"group {self.group_id!r} generation {self.generation_id} member {self.member_id}"


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error: int
    assignment: tuple = ()              # ((topic, partition), ...)

    def describe(self) -> str:
        return _err(self.error) if self.error else f"assigned {_tps(self.assignment) or 'nothing'}"


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    API = "Heartbeat"
    API_KEY = 12
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: Optional[str] = None

    def describe(self) -> str:
        return f"group {self.group_id!r} generation {self.generation_id} member {self.member_id}"


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error: int

    def describe(self) -> str:
        return _err(self.error)

    def is_quiet(self) -> bool:
        return self.error == 0


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    API = "LeaveGroup"
    API_KEY = 13
    group_id: str
    member_id: str

    def describe(self) -> str:
        return f"group {self.group_id!r} member {self.member_id}"


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error: int

    def describe(self) -> str:
        return _err(self.error)


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    API = "OffsetCommit"
    API_KEY = 8
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: Optional[str]
    offsets: dict                       # tp -> (offset, metadata)

    def describe(self) -> str:
        return f"group {self.group_id!r} " + ", ".join(f"{tp_str(tp)}={o}" for tp, (o, _) in sorted(self.offsets.items()))


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    errors: dict                        # tp -> error

    def describe(self) -> str:
        return ", ".join(f"{tp_str(tp)} {_err(e)}" for tp, e in sorted(self.errors.items()))


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    API = "OffsetFetch"
    API_KEY = 9
    group_id: str
    partitions: Optional[tuple]         # None = all
    require_stable: bool = True

    def describe(self) -> str:
        return f"group {self.group_id!r}" + (" require_stable" if self.require_stable else "")


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    error: int
    offsets: dict = field(default_factory=dict)   # tp -> (offset, metadata, error)

    def describe(self) -> str:
        if self.error:
            return _err(self.error)
        return ", ".join(f"{tp_str(tp)}={o if e == 0 else _err(e)}" for tp, (o, _, e) in sorted(self.offsets.items())) or "no offsets"


# ------------------------------------------------------------ transactions
@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnRequest:
    API = "AddPartitionsToTxn"
    API_KEY = 24
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple                   # (tp, ...)
    verify_only: bool = False

    def describe(self) -> str:
        v = " verify-only" if self.verify_only else ""
        return f"{self.transactional_id!r} pid {self.producer_id} epoch {self.producer_epoch}{v}: {_tps(self.partitions)}"


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnResponse:
    errors: dict                        # tp -> error

    def describe(self) -> str:
        errs = {e for e in self.errors.values()}
        if errs <= {0}:
            return "ok"
        return ", ".join(f"{tp_str(tp)} {_err(e)}" for tp, e in sorted(self.errors.items()))


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnRequest:
    API = "AddOffsetsToTxn"
    API_KEY = 25
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str

    def describe(self) -> str:
        return f"{self.transactional_id!r} pid {self.producer_id} epoch {self.producer_epoch} group {self.group_id!r}"


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnResponse:
    error: int

    def describe(self) -> str:
        return _err(self.error)


@dataclass(frozen=True, slots=True)
class EndTxnRequest:
    API = "EndTxn"
    API_KEY = 26
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool

    def describe(self) -> str:
        return (f"{'COMMIT' if self.committed else 'ABORT'} {self.transactional_id!r} "
                f"pid {self.producer_id} epoch {self.producer_epoch}")


@dataclass(frozen=True, slots=True)
class EndTxnResponse:
    error: int
    producer_id: int = -1               # TV2 (v5+): the pid/epoch to use next
    producer_epoch: int = -1

    def describe(self) -> str:
        s = _err(self.error)
        if self.producer_id >= 0 and not self.error:
            s += f", next pid {self.producer_id} epoch {self.producer_epoch}"
        return s


@dataclass(frozen=True, slots=True)
class TxnMarkerEntry:
    producer_id: int
    producer_epoch: int
    transaction_result: bool            # True = COMMIT
    partitions: tuple                   # (tp, ...)
    coordinator_epoch: int
    transaction_version: int = 0


@dataclass(frozen=True, slots=True)
class WriteTxnMarkersRequest:
    API = "WriteTxnMarkers"
    API_KEY = 27
    markers: tuple                      # (TxnMarkerEntry, ...)

    def describe(self) -> str:
        return "; ".join(f"{'COMMIT' if m.transaction_result else 'ABORT'} pid {m.producer_id} epoch "
                         f"{m.producer_epoch} coordinatorEpoch {m.coordinator_epoch} -> {_tps(m.partitions)}"
                         for m in self.markers)


@dataclass(frozen=True, slots=True)
class WriteTxnMarkersResponse:
    markers: dict                       # producer_id -> {tp: error}

    def describe(self) -> str:
        out = []
        for pid, errs in self.markers.items():
            bad = {tp: e for tp, e in errs.items() if e}
            out.append(f"pid {pid}: " + ("ok" if not bad else ", ".join(f"{tp_str(tp)} {_err(e)}" for tp, e in bad.items())))
        return "; ".join(out)


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequest:
    API = "TxnOffsetCommit"
    API_KEY = 28
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int
    member_id: str
    group_instance_id: Optional[str]
    offsets: dict                       # tp -> (offset, metadata)

    def describe(self) -> str:
        return (f"{self.transactional_id!r} group {self.group_id!r} pid {self.producer_id} epoch {self.producer_epoch} "
                + ", ".join(f"{tp_str(tp)}={o}" for tp, (o, _) in sorted(self.offsets.items())))


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitResponse:
    errors: dict                        # tp -> error

    def describe(self) -> str:
        return ", ".join(f"{tp_str(tp)} {_err(e)}" for tp, e in sorted(self.errors.items()))


# ------------------------------------------------------------------ admin
@dataclass(frozen=True, slots=True)
class DescribeProducersRequest:
    API = "DescribeProducers"
    API_KEY = 61
    partitions: tuple

    def describe(self) -> str:
        return _tps(self.partitions)


@dataclass(frozen=True, slots=True)
class DescribeProducersResponse:
    partitions: dict                    # tp -> (error, [dict])

    def describe(self) -> str:
        return ", ".join(f"{tp_str(tp)}: {len(ps)} producer(s)" for tp, (e, ps) in sorted(self.partitions.items()))


@dataclass(frozen=True, slots=True)
class DescribeTransactionsRequest:
    API = "DescribeTransactions"
    API_KEY = 65
    transactional_ids: tuple

    def describe(self) -> str:
        return ", ".join(repr(t) for t in self.transactional_ids)


@dataclass(frozen=True, slots=True)
class DescribeTransactionsResponse:
    transaction_states: tuple           # (dict, ...)

    def describe(self) -> str:
        return ", ".join(f"{d['transactional_id']!r} {d.get('state', _err(d['error']))}" for d in self.transaction_states)


@dataclass(frozen=True, slots=True)
class ListTransactionsRequest:
    API = "ListTransactions"
    API_KEY = 66
    state_filters: tuple = ()
    producer_id_filters: tuple = ()

    def describe(self) -> str:
        return "all" if not (self.state_filters or self.producer_id_filters) else "filtered"


@dataclass(frozen=True, slots=True)
class ListTransactionsResponse:
    error: int
    transaction_states: tuple = ()      # ((transactional_id, producer_id, state), ...)

    def describe(self) -> str:
        return f"{len(self.transaction_states)} transaction(s)"


# ----------------------------------------------------- controller <-> broker
@dataclass(frozen=True, slots=True)
class BrokerHeartbeatRequest:
    API = "BrokerHeartbeat"
    API_KEY = 63
    broker_id: int
    broker_epoch: int

    def describe(self) -> str:
        return f"broker {self.broker_id}"


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatResponse:
    error: int
    is_fenced: bool = False

    def describe(self) -> str:
        return _err(self.error)

    def is_quiet(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class BrokerRegistrationRequest:
    API = "BrokerRegistration"
    API_KEY = 62
    broker_id: int
    incarnation: int

    def describe(self) -> str:
        return f"broker {self.broker_id} (incarnation {self.incarnation})"


@dataclass(frozen=True, slots=True)
class BrokerRegistrationResponse:
    error: int
    broker_epoch: int = -1

    def describe(self) -> str:
        return _err(self.error) if self.error else f"broker epoch {self.broker_epoch}"


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class LeaderAndIsrRequest:
    API = "LeaderAndIsr"
    API_KEY = 4
    controller_epoch: int
    partition_states: tuple             # (PartitionState, ...)
    live_brokers: tuple

    def describe(self) -> str:
        return "; ".join(f"{p.topic}-{p.partition} leader {p.leader} epoch {p.leader_epoch} isr {list(p.isr)}"
                         for p in self.partition_states[:4]) + (" ..." if len(self.partition_states) > 4 else "")


@dataclass(frozen=True, slots=True)
class LeaderAndIsrResponse:
    error: int

    def describe(self) -> str:
        return _err(self.error)


@dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    API = "AlterPartition"
    API_KEY = 56
    broker_id: int
    topic: str
    partition: int
    leader_epoch: int
    new_isr: tuple
    partition_epoch: int

    def describe(self) -> str:
        return f"{self.topic}-{self.partition} ISR -> {list(self.new_isr)}"


@dataclass(frozen=True, slots=True)
class AlterPartitionResponse:
    error: int
    state: Optional[PartitionState] = None

    def describe(self) -> str:
        return _err(self.error) if self.error else f"ISR now {list(self.state.isr)}"


@dataclass(frozen=True, slots=True)
class ControlledShutdownRequest:
    API = "ControlledShutdown"
    API_KEY = 7
    broker_id: int

    def describe(self) -> str:
        return f"broker {self.broker_id}"


@dataclass(frozen=True, slots=True)
class ControlledShutdownResponse:
    error: int

    def describe(self) -> str:
        return _err(self.error)


@dataclass(frozen=True, slots=True)
class CreateTopicsRequest:
    API = "CreateTopics"
    API_KEY = 19
    name: str
    num_partitions: int
    replication_factor: int
    config: tuple = ()

    def describe(self) -> str:
        return f"{self.name} ({self.num_partitions} partitions, RF {self.replication_factor})"


@dataclass(frozen=True, slots=True)
class CreateTopicsResponse:
    error: int
    error_message: str = ""

    def describe(self) -> str:
        return _err(self.error) + (f": {self.error_message}" if self.error_message else "")


@dataclass(frozen=True, slots=True)
class AllocateProducerIdsRequest:
    API = "AllocateProducerIds"
    API_KEY = 67
    broker_id: int

    def describe(self) -> str:
        return f"broker {self.broker_id}"


@dataclass(frozen=True, slots=True)
class AllocateProducerIdsResponse:
    error: int
    producer_id_start: int = -1
    producer_id_len: int = 0

    def describe(self) -> str:
        return _err(self.error) if self.error else f"ids {self.producer_id_start}..{self.producer_id_start + self.producer_id_len - 1}"


@dataclass(frozen=True, slots=True)
class ApiVersionsRequest:
    API = "ApiVersions"
    API_KEY = 18
    client_software_name: str = "txnlab"

    def describe(self) -> str:
        return self.client_software_name


@dataclass(frozen=True, slots=True)
class ApiVersionsResponse:
    error: int
    api_keys: tuple = ()                # (name, api_key), ...
    finalized_features: tuple = ()      # (name, level), ... e.g. ("transaction.version", 2)

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.finalized_features) or _err(self.error)
