"""An ACL authorizer (Kafka's ``StandardAuthorizer``): who may do what to which resource.

Owns ACL bindings (principal, resource type, name or prefix, operation, allow)
and the per-request checks a broker makes before handling a request (FindCoordinator: DESCRIBE on its key; Metadata:
DESCRIBE on each topic, per topic, in ``metadata_topics``), with the
errors Kafka answers: TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53),
TOPIC_AUTHORIZATION_FAILED (29), GROUP_AUTHORIZATION_FAILED (30), CLUSTER_AUTHORIZATION_FAILED (31)
(the admin APIs check per topic in ``admin.py``, OffsetCommit and TxnOffsetCommit READ and OffsetFetch DESCRIBE
per topic in the group coordinator's ``group_offsets.py``; the transaction admin APIs of KIP-664 per item where they
are answered: DescribeProducers in the broker, DescribeTransactions and ListTransactions in the transaction
coordinator).  Off unless
``authorizer.class.name`` is set; then everything not allowed is denied.
A client's principal is ``User:<sasl.username>`` (``User:ANONYMOUS`` without one).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..protocol import messages as m
from ..protocol.errors import Errors

RESOURCE_TYPES = ("TOPIC", "GROUP", "TRANSACTIONAL_ID", "CLUSTER")
OPERATIONS = ("ALL", "READ", "WRITE", "DESCRIBE", "CREATE", "DELETE", "ALTER", "DESCRIBE_CONFIGS",
              "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CLUSTER_ACTION")
# DESCRIBE is implied by READ/WRITE/ALTER/DELETE, DESCRIBE_CONFIGS by ALTER_CONFIGS, as in Kafka
IMPLIES = {"DESCRIBE": {"READ", "WRITE", "ALTER", "DELETE"}, "DESCRIBE_CONFIGS": {"ALTER_CONFIGS"}}
CLUSTER_RESOURCE = "kafka-cluster"       # the name of the one CLUSTER resource
# the principal the lab's servers authenticate as on the inter-broker listener; it holds CLUSTER_ACTION
# (what an operator grants brokers in Kafka).  A client naming itself so gains nothing: inter-broker APIs
# are refused first by the sender's role (``inter_broker.py``)
BROKER_PRINCIPAL = "User:broker"


@dataclass(frozen=True)
class AclBinding:
    principal: str
    resource_type: str
    resource_name: str
    operation: str
    pattern_type: str = "LITERAL"     # LITERAL | PREFIXED
    permission: str = "ALLOW"         # ALLOW | DENY

    def matches(self, principal: str, rtype: str, name: str, op: str) -> bool:
        if self.principal not in (principal, "User:*") or self.resource_type != rtype:
            return False
        if self.pattern_type == "PREFIXED":
            if not name.startswith(self.resource_name):
                return False
        elif self.resource_name not in (name, "*"):
            return False
        return self.operation in ("ALL", op) or self.operation in IMPLIES.get(op, ())


class Authorizer:
    def __init__(self) -> None:
        self.acls: list[AclBinding] = [AclBinding(BROKER_PRINCIPAL, "CLUSTER", CLUSTER_RESOURCE, "CLUSTER_ACTION")]

    def add(self, binding: AclBinding) -> None:
        if binding.resource_type not in RESOURCE_TYPES:
            raise ValueError(f"resource_type must be one of {RESOURCE_TYPES}")
        if binding.operation not in OPERATIONS:
            raise ValueError(f"operation must be one of {OPERATIONS}")
        self.acls.append(binding)

    def authorize(self, principal: str, rtype: str, name: str, op: str) -> bool:
        hits = [a for a in self.acls if a.matches(principal, rtype, name, op)]
        if any(a.permission == "DENY" for a in hits):
            return False
        return any(a.permission == "ALLOW" for a in hits)


def check_request(authz: Authorizer, principal: str, msg, narrate) -> Optional[object]:
    """The error response for a request the principal may not make, or None if it may."""
    req = msg.payload
    api = msg.api
    ok = lambda rtype, name, op: authz.authorize(principal, rtype, name, op)  # noqa: E731

    def deny(what: str, err: Errors):
        narrate(f"{principal} may not {what} -> {err.name}")
        return err

    if api == "FindCoordinator":
        # KafkaApis.getCoordinator: DESCRIBE on the key's group or transactional id, before anything else
        if req.key_type == m.COORDINATOR_GROUP and not ok("GROUP", req.key, "DESCRIBE"):
            return m.FindCoordinatorResponse(deny(f"DESCRIBE group {req.key!r}", Errors.GROUP_AUTHORIZATION_FAILED))
        if req.key_type == m.COORDINATOR_TRANSACTION and not ok("TRANSACTIONAL_ID", req.key, "DESCRIBE"):
            return m.FindCoordinatorResponse(deny(f"DESCRIBE transactional.id {req.key!r}",
                                                  Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
        return None
    tid = getattr(req, "transactional_id", None)
    if api in ("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit") and tid:
        if not ok("TRANSACTIONAL_ID", tid, "WRITE"):
            e = deny(f"WRITE transactional.id {tid!r}", Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            if api == "InitProducerId":
                return m.InitProducerIdResponse(e)
            if api == "AddPartitionsToTxn":
                return m.AddPartitionsToTxnResponse({tp: e for tp in req.partitions})
            if api == "AddOffsetsToTxn":
                return m.AddOffsetsToTxnResponse(e)
            if api == "EndTxn":
                return m.EndTxnResponse(e)
            return m.TxnOffsetCommitResponse({tp: e for tp in req.offsets})
    if api == "AddPartitionsToTxn" and not req.transactions:     # (v4+ come from brokers: no topic check)
        bad = [tp for tp in req.partitions if not ok("TOPIC", tp[0], "WRITE")]
        if bad:
            deny(f"WRITE topic(s) {sorted({t for t, _ in bad})}", Errors.TOPIC_AUTHORIZATION_FAILED)
            return m.AddPartitionsToTxnResponse({tp: (Errors.TOPIC_AUTHORIZATION_FAILED if tp in bad
                                                      else Errors.OPERATION_NOT_ATTEMPTED) for tp in req.partitions})
    if api == "OffsetFetch" and not ok("GROUP", req.group_id, "DESCRIBE"):
        # KafkaApis.handleOffsetFetchRequest: DESCRIBE on the group (each topic's DESCRIBE: ``group_offsets.py``)
        return m.OffsetFetchResponse(deny(f"DESCRIBE group {req.group_id!r}", Errors.GROUP_AUTHORIZATION_FAILED))
    if api in ("AddOffsetsToTxn", "TxnOffsetCommit", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup",
               "OffsetCommit"):
        group = req.group_id
        if not ok("GROUP", group, "READ"):
            e = deny(f"READ group {group!r}", Errors.GROUP_AUTHORIZATION_FAILED)
            return {
                "AddOffsetsToTxn": lambda: m.AddOffsetsToTxnResponse(e),
                "TxnOffsetCommit": lambda: m.TxnOffsetCommitResponse({tp: e for tp in req.offsets}),
                "JoinGroup": lambda: m.JoinGroupResponse(e),
                "SyncGroup": lambda: m.SyncGroupResponse(e),
                "Heartbeat": lambda: m.HeartbeatResponse(e),
                "LeaveGroup": lambda: m.LeaveGroupResponse(e),
                "OffsetCommit": lambda: m.OffsetCommitResponse({tp: e for tp in req.offsets}),
            }[api]()
    if api == "Produce":
        if tid and not ok("TRANSACTIONAL_ID", tid, "WRITE"):
            e = deny(f"WRITE transactional.id {tid!r}", Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            return m.ProduceResponse({tp: m.PartitionProduceResponse(e) for tp in req.topic_data})
        bad = [tp for tp in req.topic_data if not ok("TOPIC", tp[0], "WRITE")]
        if bad:
            deny(f"WRITE topic(s) {sorted({t for t, _ in bad})}", Errors.TOPIC_AUTHORIZATION_FAILED)
            return m.ProduceResponse({tp: m.PartitionProduceResponse(
                Errors.TOPIC_AUTHORIZATION_FAILED if tp in bad else Errors.NONE) for tp in req.topic_data}) \
                if len(bad) == len(req.topic_data) else _partial_produce(bad)
    if api == "Fetch" and req.replica_id < 0:
        bad = [tp for tp in req.partitions if not ok("TOPIC", tp[0], "READ")]
        if bad:
            deny(f"READ topic(s) {sorted({t for t, _ in bad})}", Errors.TOPIC_AUTHORIZATION_FAILED)
            return m.FetchResponse({tp: m.FetchPartitionData(Errors.TOPIC_AUTHORIZATION_FAILED) for tp in bad})
    return None


def metadata_topics(authz: Authorizer, principal: str, names, listing_all: bool, auto_create: bool, exists,
                    narrate) -> tuple[list, list]:
    """Metadata's per-topic check (KafkaApis.handleTopicMetadataRequest): (the topics answered as usual, the ones
    answered TOPIC_AUTHORIZATION_FAILED with no partitions).  DESCRIBE on each topic, without looking whether it
    exists (an unauthorized topic's existence is not disclosed); when listing all topics the undescribable ones
    are simply left out.  A missing topic the broker would auto-create needs CREATE on the cluster or the topic."""
    ok = lambda rtype, name, op: authz.authorize(principal, rtype, name, op)  # noqa: E731
    allowed = [t for t in names if ok("TOPIC", t, "DESCRIBE")]
    refused = [] if listing_all else [t for t in names if t not in allowed]
    if refused:
        narrate(f"{principal} may not DESCRIBE topic(s) {sorted(refused)} -> {Errors.TOPIC_AUTHORIZATION_FAILED.name}")
    if auto_create and not listing_all and not ok("CLUSTER", CLUSTER_RESOURCE, "CREATE"):
        no_create = [t for t in allowed if not exists(t) and not ok("TOPIC", t, "CREATE")]
        if no_create:
            narrate(f"{principal} may not CREATE topic(s) {sorted(no_create)} (auto-creation) "
                    f"-> {Errors.TOPIC_AUTHORIZATION_FAILED.name}")
            allowed = [t for t in allowed if t not in no_create]
            refused += no_create
    return allowed, refused


def _partial_produce(bad):
    # A mixed request: Kafka answers the unauthorized partitions with the error and still
    # writes the others.  The lab's clients send one request per leader, so keep it simple:
    # refuse the whole request, naming the unauthorized partitions.
    return m.ProduceResponse({tp: m.PartitionProduceResponse(Errors.TOPIC_AUTHORIZATION_FAILED) for tp in bad})
