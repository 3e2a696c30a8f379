"""ApiVersions, Metadata, Produce, Fetch, ListOffsets, FindCoordinator, InitProducerId and CreateTopics:
a kio request -> the engine's protocol message, and the engine's answer -> the kio response of the
version the client spoke.  Each ``decode_*`` returns ``(engine request or None, state)``; with None the
door answers at once from ``state`` (every partition was refused before it reached the broker)."""
from __future__ import annotations

import uuid
from functools import lru_cache

from ..broker.authorizer import CLUSTER_RESOURCE
from ..protocol import messages as m
from ..protocol.errors import Errors
from .codec import build, get, ms, nested
from ..protocol.messages import NO_TIMESTAMP, unix_time
from .records import BatchError, encode_batches, parse_batches

ZERO_UUID = uuid.UUID(int=0)
NO_OPS = -2147483648          # topic/cluster authorized operations not asked for


def topic_id(door, name: str) -> uuid.UUID:
    """A topic's id (KIP-516, ``m.topic_id_for``: the same in a run and its replay, txnlab.wire.replay) as the
    controller gave it at the topic's latest creation."""
    return _uuid(m.topic_id_for(door.cluster.seed, name, door.cluster.controller.topic_creations.get(name, 1)))


@lru_cache(maxsize=4096)
def _uuid(text: str) -> uuid.UUID:
    return uuid.UUID(text)


# ------------------------------------------------------------ ApiVersions
def decode_api_versions(body, version, door):
    return m.ApiVersionsRequest(get(body, "client_software_name") or "unknown"), None


def encode_api_versions(resp, body, version, state, door, cls):
    tv = dict(resp.finalized_features).get("transaction.version", 0) if resp is not None else 0
    return api_versions_body(cls, door.supported(tv), 0 if resp is None else resp.error, tv)


def api_versions_body(cls, supported: dict, error: int, tv: int):
    Key = nested(cls, "api_keys")
    keys = tuple(build(Key, api_key=k, min_version=lo, max_version=hi) for k, (_, lo, hi) in sorted(supported.items()))
    kw = {}
    if "supported_features" in {f for f in cls.__dataclass_fields__}:
        Sup, Fin = nested(cls, "supported_features"), nested(cls, "finalized_features")
        kw = dict(supported_features=(build(Sup, name="transaction.version", min_version=0, max_version=2),),
                  finalized_features_epoch=1,
                  finalized_features=(build(Fin, name="transaction.version", max_version_level=tv,
                                            min_version_level=tv),))
    return build(cls, error_code=error, api_keys=keys, **kw)


# --------------------------------------------------------------- Metadata
def decode_metadata(body, version, door):
    topics, unknown_ids = None, []
    if body.topics is not None:
        names = []
        for t in body.topics:
            name = get(t, "name")
            if name is None:        # v10+: by topic id
                name = door.topic_name(get(t, "topic_id"))
                if name is None:
                    unknown_ids.append(get(t, "topic_id"))
            if name is not None:
                names.append(name)
        topics = tuple(names)
    auto = get(body, "allow_auto_topic_creation", True)
    return m.MetadataRequest(topics, bool(auto)), unknown_ids


def encode_metadata(resp, body, version, unknown_ids, door, cls):
    Broker, Topic = nested(cls, "brokers"), nested(cls, "topics")
    Part = nested(Topic, "partitions")
    brokers = tuple(build(Broker, node_id=b, host=door.host, port=door.port_of(b), rack=None)
                    for b in resp.brokers if door.port_of(b))
    topics = []
    for name, (err, parts) in resp.topics.items():
        ps = tuple(build(Part, error_code=p.error, partition_index=p.partition, leader_id=p.leader,
                         leader_epoch=p.leader_epoch, replica_nodes=tuple(p.replicas), isr_nodes=tuple(p.isr),
                         offline_replicas=()) for p in parts)
        tid = (resp.topic_ids or {}).get(name)          # the id the answering broker knows
        topics.append(build(Topic, error_code=err, name=name,
                            topic_id=ZERO_UUID if err else _uuid(tid) if tid else topic_id(door, name),
                            is_internal=name.startswith("__"), partitions=ps,
                            topic_authorized_operations=NO_OPS))
    for tid in unknown_ids or ():   # as Kafka: an id no broker knows is answered, not dropped
        topics.append(build(Topic, error_code=Errors.UNKNOWN_TOPIC_ID, name=None, topic_id=tid, is_internal=False,
                            partitions=(), topic_authorized_operations=NO_OPS))
    controller = min(resp.brokers) if resp.brokers else -1
    return build(cls, brokers=brokers, cluster_id=door.cluster.id, controller_id=controller, topics=tuple(topics),
                 cluster_authorized_operations=NO_OPS)


# ------------------------------------------------------------ leader hints
def current_leader(door, broker_id: int, tp) -> tuple:
    """Kafka's KafkaApis.getCurrentLeader (KIP-951): (leader id, leader epoch) of ``tp`` as the answering broker
    sees it (its own replica, else its metadata cache, else (-1, -1)), and whether that leader is a broker it
    believes alive (then its endpoint goes into the answer's NodeEndpoints)."""
    b = door.cluster.broker(broker_id)
    p = b.partitions.get(tp)
    if p is not None:
        leader, epoch = p.leader, p.leader_epoch
    else:
        s = b.metadata.partitions.get(tp)
        leader, epoch = (s.leader, s.leader_epoch) if s is not None else (-1, -1)
    return leader, epoch, leader >= 0 and leader in b.metadata.live_brokers and door.port_of(leader) is not None


def leader_hint(door, tp, Leader, endpoints: dict):
    """A partition's CurrentLeader (Produce v10+, Fetch v16+) from the broker whose answer is being encoded;
    the leader's port is added to ``endpoints`` when that broker believes it alive."""
    leader, epoch, alive = current_leader(door, door.answering, tp)
    if alive:
        endpoints[leader] = door.port_of(leader)
    return Leader(leader_id=leader, leader_epoch=epoch)


def node_endpoints(door, cls, endpoints: dict, hints: bool) -> dict:
    """The answer's NodeEndpoints field (a keyword for ``build``), by node id; nothing before the version has it."""
    if not hints:
        return {}
    Node = nested(cls, "node_endpoints")
    return {"node_endpoints": tuple(build(Node, node_id=n, host=door.host, port=port, rack=None)
                                    for n, port in sorted(endpoints.items()))}


# ---------------------------------------------------------------- Produce
def decode_produce(body, version, door):
    data, refused = {}, {}
    for t in body.topic_data:
        for p in t.partition_data:
            tp = (t.name, p.index)
            try:
                batches = parse_batches(p.records or b"", version, door.epoch_ms)
                if len(batches) != 1:
                    raise BatchError(Errors.INVALID_RECORD, f"a produce request carries one batch per partition, "
                                                            f"got {len(batches)}")
                data[tp] = batches[0]
            except BatchError as e:
                refused[tp] = (e.error, e.message)
    if refused:
        door.note("; ".join(f"{m.tp_str(tp)}: {e.name} ({why})" for tp, (e, why) in refused.items()),
                  "refused a batch")
    if not data:
        return None, refused
    return m.ProduceRequest(body.transactional_id, body.acks, ms(body.timeout), data, version), refused


def encode_produce(resp, body, version, refused, door, cls):
    Topic = nested(cls, "responses")
    Part = nested(Topic, "partition_responses")
    results = dict(resp.responses) if resp is not None else {}
    hints = version >= 10                 # KIP-951: CurrentLeader and NodeEndpoints on NOT_LEADER_OR_FOLLOWER
    Leader = nested(Part, "current_leader") if hints else None
    endpoints = {}
    out = []
    for t in body.topic_data:
        ps = []
        for p in t.partition_data:
            tp = (t.name, p.index)
            if tp in refused:
                err, why = refused[tp]
                ps.append(build(Part, index=p.index, error_code=err, base_offset=-1, log_append_time=-1,
                                log_start_offset=-1, record_errors=(), error_message=why))
                continue
            r = results.get(tp) or m.PartitionProduceResponse(Errors.UNKNOWN_SERVER_ERROR)
            extra = {}
            if hints and r.error == Errors.NOT_LEADER_OR_FOLLOWER:
                extra["current_leader"] = leader_hint(door, tp, Leader, endpoints)
            ps.append(build(Part, index=p.index, error_code=r.error, base_offset=r.base_offset,
                            log_append_time=unix_time(r.log_append_time, door.epoch_ms),
                            log_start_offset=r.log_start_offset,
                            record_errors=(), error_message=r.error_message or None, **extra))
        out.append(build(Topic, name=t.name, partition_responses=tuple(ps)))
    return build(cls, responses=tuple(out), **node_endpoints(door, cls, endpoints, hints))


# ------------------------------------------------------------------ Fetch
def topic_names_by_id(door, ids) -> dict:
    """Fetch v13+ (KIP-516) names its topics by id: each id -> the topic name any broker's metadata holds for it
    (the ids are the ones Metadata hands out), None for an id no broker knows."""
    want = set(ids)
    found = dict.fromkeys(want)
    for b in door.cluster._brokers.values():
        for name in b.metadata.topics:
            tid = topic_id(door, name)
            if tid in want:
                found[tid] = name
    return found


def decode_fetch(body, version, door):
    by_id = version >= 13
    names = topic_names_by_id(door, [t.topic_id for t in body.topics]) if by_id else {}
    parts = {}
    for t in body.topics:
        name = names[t.topic_id] if by_id else t.topic
        if name is None:
            continue                      # an unknown topic id: UNKNOWN_TOPIC_ID in the answer, never asked
        for p in t.partitions:
            parts[(name, p.partition)] = m.FetchPartition(p.fetch_offset, p.partition_max_bytes,
                                                          get(p, "current_leader_epoch", -1),
                                                          get(p, "last_fetched_epoch", -1))
    if by_id and not parts:
        return None, names
    replica = get(body, "replica_id")
    replica_epoch = -1
    if replica is None:                   # v15+: the replica's id moved into ReplicaState, with its epoch (KIP-903)
        state = get(body, "replica_state")
        replica = get(state, "replica_id", -1) if state is not None else -1
        replica_epoch = get(state, "replica_epoch", -1) if state is not None else -1
    # consumers fetch without a session (KIP-227 sessions are the followers' here): session id 0 in the answer
    return m.FetchRequest(replica, ms(body.max_wait), body.min_bytes, get(body, "isolation_level", 0),
                          parts, replica_epoch=replica_epoch), names


LEADER_HINT_ERRORS = (Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH)     # Fetch v16+


def encode_fetch(resp, body, version, names, door, cls):
    Topic = nested(cls, "responses")
    Part = nested(Topic, "partitions")
    Aborted = nested(Part, "aborted_transactions")
    by_id = version >= 13
    hints = version >= 16                 # KIP-951: CurrentLeader and NodeEndpoints for a client sent astray
    Leader = nested(Part, "current_leader") if hints else None
    endpoints = {}
    out = []
    for t in body.topics:
        name = names[t.topic_id] if by_id else t.topic
        ps = []
        for p in t.partitions:
            if name is None:
                d = m.FetchPartitionData(Errors.UNKNOWN_TOPIC_ID)
            else:
                d = resp.partitions.get((name, p.partition)) or m.FetchPartitionData(Errors.UNKNOWN_TOPIC_OR_PARTITION)
            aborted = None
            if d.aborted_transactions is not None:
                aborted = tuple(build(Aborted, producer_id=pid, first_offset=off) for pid, off in d.aborted_transactions)
            extra = {}
            if hints and name is not None and d.error in LEADER_HINT_ERRORS:
                extra["current_leader"] = leader_hint(door, (name, p.partition), Leader, endpoints)
            ps.append(build(Part, partition_index=p.partition, error_code=d.error, high_watermark=d.high_watermark,
                            last_stable_offset=d.last_stable_offset, log_start_offset=d.log_start_offset,
                            aborted_transactions=aborted, preferred_read_replica=-1,
                            records=encode_batches(d.records, door.epoch_ms) if d.records else b"", **extra))
        out.append(build(Topic, topic=t.topic, partitions=tuple(ps)) if not by_id else
                   build(Topic, topic_id=t.topic_id, partitions=tuple(ps)))
    return build(cls, error_code=resp.error if resp is not None else 0, session_id=0, responses=tuple(out),
                 **node_endpoints(door, cls, endpoints, hints))


# ------------------------------------------------------------ ListOffsets
def decode_list_offsets(body, version, door):
    parts = {(t.name, p.partition_index): m.asked_time(p.timestamp, door.epoch_ms)
             for t in body.topics for p in t.partitions}
    return m.ListOffsetsRequest(get(body, "isolation_level", 0), parts), None


def encode_list_offsets(resp, body, version, state, door, cls):
    def part(Part, t, p):
        err, off, ts, epoch = resp.partitions.get((t.name, p.partition_index),
                                                  (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1, None, -1))
        # the found record's time, in Unix time (NO_TIMESTAMP for earliest and latest, or nothing found)
        return build(Part, partition_index=p.partition_index, error_code=err, offset=off, leader_epoch=epoch,
                     timestamp=NO_TIMESTAMP if ts is None else ts + door.epoch_ms)
    return each_partition(cls, body.topics, "name", part)


def each_partition(cls, topics, name: str, part):
    """The response ``cls`` with an answer for each asked topic (its name in field ``name``) and partition, in the
    order asked: ``part(Part, topic, partition)`` builds each."""
    Topic = nested(cls, "topics")
    Part = nested(Topic, "partitions")
    return build(cls, topics=tuple(build(Topic, **{name: getattr(t, name)},
                                         partitions=tuple(part(Part, t, p) for p in t.partitions)) for t in topics))


# ------------------------------------------------- OffsetForLeaderEpoch
def decode_offset_for_leader_epoch(body, version, door):
    """KIP-320: a consumer's check after a leader change (v3+ carries a replica id; Kafka answers the same)."""
    parts = {(t.topic, p.partition): (get(p, "current_leader_epoch", -1), p.leader_epoch)
             for t in body.topics for p in t.partitions}
    return m.OffsetForLeaderEpochRequest(get(body, "replica_id", -1), parts), None


def encode_offset_for_leader_epoch(resp, body, version, state, door, cls):
    def part(Part, t, p):
        err, epoch, end = resp.partitions.get((t.topic, p.partition), (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1, -1))
        return build(Part, error_code=err, partition=p.partition, leader_epoch=epoch, end_offset=end)
    return each_partition(cls, body.topics, "topic", part)


# -------------------------------------------------------- FindCoordinator
def decode_find_coordinator(body, version, door):
    keys = get(body, "coordinator_keys")
    key = keys[0] if keys else get(body, "key", "")
    return m.FindCoordinatorRequest(key, get(body, "key_type", 0)), keys


def encode_find_coordinator(resp, body, version, keys, door, cls):
    host, port = (door.host, door.port_of(resp.node_id)) if resp.error == 0 else ("", -1)
    if keys is not None:              # v4+: one answer per key (the door asks the broker for the first)
        Coord = nested(cls, "coordinators")
        cs = [build(Coord, key=keys[0], node_id=resp.node_id, host=host, port=port, error_code=resp.error,
                    error_message=resp.error_message or None)]
        cs += [build(Coord, key=k, node_id=-1, host="", port=-1, error_code=Errors.INVALID_REQUEST,
                     error_message="the lab's door answers one coordinator key per request") for k in keys[1:]]
        return build(cls, coordinators=tuple(cs))
    return build(cls, error_code=resp.error, error_message=resp.error_message or None, node_id=resp.node_id,
                 host=host, port=port)


# --------------------------------------------------------- InitProducerId
def decode_init_producer_id(body, version, door):
    return m.InitProducerIdRequest(body.transactional_id, ms(body.transaction_timeout),
                                   get(body, "producer_id", -1), get(body, "producer_epoch", -1)), None


def encode_init_producer_id(resp, body, version, state, door, cls):
    return build(cls, error_code=resp.error, producer_id=resp.producer_id, producer_epoch=resp.producer_epoch)


# ----------------------------------------------------------- CreateTopics
def decode_create_topics(body, version, door):
    topics = []
    for t in body.topics:
        if t.assignments:
            topics.append(m.CreatableTopic(t.name, -2, -2))      # manual assignments: refused below
            continue
        configs = tuple((c.name, c.value) for c in t.configs)
        topics.append(m.CreatableTopic(t.name, t.num_partitions, t.replication_factor, configs))
    return m.CreateTopicsRequest(tuple(topics), ms(body.timeout), bool(get(body, "validate_only", False))), None


def encode_create_topics(resp, body, version, state, door, cls):
    Topic = nested(cls, "topics")
    out = []
    for r in resp.topics:
        out.append(build(Topic, name=r.name, topic_id=topic_id(door, r.name) if not r.error_code else ZERO_UUID,
                         error_code=r.error_code, error_message=r.error_message or None,
                         num_partitions=r.num_partitions, replication_factor=r.replication_factor, configs=()))
    return build(cls, topics=tuple(out))


# ----------------------------------------------------------- DeleteTopics
# Kafka's ControllerApis.deleteTopics, in its words
_NEITHER = "Neither topic name nor id were specified."
_BOTH = "You may not specify both topic name and topic id."
_DUPLICATE_NAME = "Duplicate topic name."
_DUPLICATE_ID = "Duplicate topic id."
_NAME_OF_AN_ID = "The provided topic name maps to an ID that was already supplied."
_TOPIC_AUTHORIZATION = "Topic authorization failed."      # new ApiError(TOPIC_AUTHORIZATION_FAILED)


def decode_delete_topics(body, version, door):
    """v1-5 name topics; v6 names each by name or by id (KIP-516).  What Kafka's ControllerApis.deleteTopics
    decides before the deletion is decided here, in its order and words: neither or both of name and id
    (per entry), a duplicated name or id (answered once), an id no broker knows (UNKNOWN_TOPIC_ID), and a name
    whose topic's id the request also gives (answered once, for the name, with that id: INVALID_REQUEST, and
    neither is deleted; if the principal may not DELETE that topic, both are TOPIC_AUTHORIZATION_FAILED, the
    id's entry without the name unless the principal may DESCRIBE it: Kafka does not reveal the mapping).  The
    other names go to the broker, which checks DELETE and forwards them to the controller; the door answers its
    TOPIC_AUTHORIZATION_FAILED in Kafka's words.  State, per answered entry: (name or None, the id to answer,
    whether it was asked by name, the door's refusal or None), and for an id sent on to the broker the name to
    show if the broker refuses it."""
    if version < 6:
        asked = [(n, ZERO_UUID) for n in body.topic_names]
    else:
        asked = [(t.name, t.topic_id or ZERO_UUID) for t in body.topics]
    named = [n for n, tid in asked if n and tid == ZERO_UUID]
    ids = [tid for n, tid in asked if not n and tid != ZERO_UUID]
    names = topic_names_by_id(door, ids)
    existing = {tp[0] for tp in door.cluster.controller.states}
    given = {names[tid]: tid for tid in ids if names[tid] is not None}       # topic name -> its id, given by id
    clashes = {n for n in named if named.count(n) == 1 and n in given}      # a name given by name and by id
    entries, answered = [], set()
    for n, tid in asked:
        if (n, tid) in answered and ((n and tid == ZERO_UUID) or (not n and tid != ZERO_UUID)):
            continue        # Kafka answers a duplicated name or id once
        answered.add((n, tid))
        if not n and tid == ZERO_UUID:
            entries.append((None, tid, False, (Errors.INVALID_REQUEST, _NEITHER)))
        elif n and tid != ZERO_UUID:
            entries.append((n, tid, True, (Errors.INVALID_REQUEST, _BOTH)))
        elif n and named.count(n) > 1:
            entries.append((n, ZERO_UUID, True, (Errors.INVALID_REQUEST, _DUPLICATE_NAME)))
        elif not n and ids.count(tid) > 1:
            entries.append((None, tid, False, (Errors.INVALID_REQUEST, _DUPLICATE_ID)))
        elif not n and names[tid] is None:
            entries.append((None, tid, False, (Errors.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")))
        elif not n and names[tid] in clashes:
            if not _topic_allowed(door, names[tid], "DELETE"):
                entries.append((names[tid] if _topic_allowed(door, names[tid], "DESCRIBE") else None, tid, False,
                                (Errors.TOPIC_AUTHORIZATION_FAILED, _TOPIC_AUTHORIZATION)))
            # else: answered with its name's entry
        elif not n:
            # the name its answer shows should the broker refuse it (KafkaApis: only if the principal may DESCRIBE)
            entries.append((names[tid], tid, False, None, names[tid] if _topic_allowed(door, names[tid], "DESCRIBE")
                            else None))
        elif n in clashes:
            if not _topic_allowed(door, n, "DELETE"):
                door.note(f"{door.cluster.principal_of(door.asking)} may not DELETE topic {n!r} "
                          f"-> TOPIC_AUTHORIZATION_FAILED", "refused")
                entries.append((n, ZERO_UUID, True, (Errors.TOPIC_AUTHORIZATION_FAILED, _TOPIC_AUTHORIZATION)))
            else:
                entries.append((n, given[n], True, (Errors.INVALID_REQUEST, _NAME_OF_AN_ID)))
        else:                   # by name: the answer carries the id of the topic the name holds, if any
            entries.append((n, topic_id(door, n) if n in existing else ZERO_UUID, True, None))
    go = tuple(e[0] for e in entries if e[3] is None)
    return (m.DeleteTopicsRequest(go, ms(body.timeout)) if go else None), entries


def _topic_allowed(door, name: str, op: str) -> bool:
    """ControllerApis.deleteTopics' authorization: DELETE on the cluster allows everything, else ``op`` (DELETE or
    DESCRIBE) on the topic; True without an authorizer."""
    authz = door.cluster.authorizer
    if authz is None:
        return True
    who = door.cluster.principal_of(door.asking)
    return authz.authorize(who, "CLUSTER", CLUSTER_RESOURCE, "DELETE") or authz.authorize(who, "TOPIC", name, op)


def encode_delete_topics(resp, body, version, entries, door, cls):
    Result = nested(cls, "responses")
    results = iter(resp.responses if resp is not None else ())
    out = []
    for name, tid, by_name, refused, *shown in entries:
        if refused is not None:
            err, why = refused
        else:
            r = next(results)
            err, why = r.error_code, r.error_message
            if err != Errors.NONE and by_name:
                tid = ZERO_UUID            # a name the broker refused: answered without an id
            if err == Errors.TOPIC_AUTHORIZATION_FAILED:
                why = _TOPIC_AUTHORIZATION
                name = name if by_name else shown[0]
        out.append(build(Result, name=name, topic_id=tid, error_code=err, error_message=why or None))
    return build(cls, responses=tuple(out))
