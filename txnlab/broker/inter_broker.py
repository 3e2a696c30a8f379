"""Inter-broker APIs (Kafka's ``CLUSTER_ACTION`` requests): who may send them.

Owns the list of APIs only servers send (WriteTxnMarkers, LeaderAndIsr, StopReplica, a replica's Fetch,
AlterPartition, BrokerHeartbeat, BrokerRegistration, AllocateProducerIds, ControlledShutdown...) and the
refusal of one from anybody else.  In Kafka only brokers and controllers send them, and the receiver
authorises each as CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED, 31, when refused; a
follower's Fetch gets TOPIC_AUTHORIZATION_FAILED, 29, on each partition instead).
Here the sender's *role* decides first: a node is a server only if the lab created it as one
(``kernel.is_server``), never because of its name; with the authorizer on, the server's principal must
also hold CLUSTER_ACTION (brokers do).  One exception, as in Kafka: KIP-664's admin abort (a
WriteTxnMarkers whose markers are all ABORT) may come from a client, with CLUSTER_ACTION when the
authorizer is on; a COMMIT marker never does.
"""
from __future__ import annotations

import dataclasses
from ..protocol import messages as m
from ..protocol.errors import Errors
from .authorizer import CLUSTER_RESOURCE

INTER_BROKER_APIS = frozenset({
    "WriteTxnMarkers", "LeaderAndIsr", "StopReplica", "UpdateMetadata", "AlterPartition", "BrokerHeartbeat",
    "BrokerRegistration", "AllocateProducerIds", "ControlledShutdown", "Vote", "BeginQuorumEpoch",
    "EndQuorumEpoch", "FetchSnapshot", "Envelope"})


def is_inter_broker(msg) -> bool:
    """Only a server may send this request (a Fetch is a replica's when its replica_id is >= 0)."""
    if msg.api == "Fetch":
        return getattr(msg.payload, "replica_id", -1) >= 0
    if msg.api == "AddPartitionsToTxn":         # v4+ (KIP-890's batches of a partition leader's questions)
        return bool(getattr(msg.payload, "transactions", ()))
    return msg.api in INTER_BROKER_APIS


def refuse_cluster_action(node, msg, authorizer, principal_of) -> tuple:
    """``(False, None)`` if the sender of ``msg`` may send it; else ``(True, the refusal)``, narrated by
    ``node``: a response with CLUSTER_AUTHORIZATION_FAILED, or None after closing the connection when the
    API's response has no error field to carry it."""
    src = msg.src
    server = node.kernel.is_server(src)
    # KIP-664: kafka-transactions.sh abort (AdminClient.abortTransaction) writes an ABORT marker itself;
    # Kafka authorises it as CLUSTER_ACTION like a broker's.  A COMMIT never comes from a client.
    if not server and not _admin_abort(msg):
        what = "a replica's Fetch" if msg.api == "Fetch" else msg.api
        why = f"only brokers send {what}"
        if msg.api == "WriteTxnMarkers":
            why += " COMMIT (a client may only ABORT a hanging transaction, KIP-664)"
    elif authorizer is not None and not authorizer.authorize(principal_of(src), "CLUSTER", CLUSTER_RESOURCE,
                                                             "CLUSTER_ACTION"):
        why = f"{principal_of(src)} has no CLUSTER_ACTION on the cluster" + (
            "" if server else " (needed to abort a transaction)")
    else:
        return False, None
    # KafkaApis.handleFetchRequest answers a follower fetch without CLUSTER_ACTION per partition with
    # TOPIC_AUTHORIZATION_FAILED; every other CLUSTER_ACTION request fails as a whole with CLUSTER_AUTHORIZATION_FAILED
    err = Errors.TOPIC_AUTHORIZATION_FAILED if msg.api == "Fetch" else Errors.CLUSTER_AUTHORIZATION_FAILED
    node.kernel.narrate(f"{node.name} refused {msg.api} from {src}: {why} -> {err.name}")
    return True, refusal(msg, err, node)


def _admin_abort(msg) -> bool:
    """A WriteTxnMarkers that only aborts: what KIP-664's admin tool sends for a hanging transaction."""
    return msg.api == "WriteTxnMarkers" and all(not e.transaction_result for e in msg.payload.markers)


def refusal(msg, err: Errors, node=None):
    """The response to ``msg`` that carries ``err`` everywhere it can (Kafka's error response)."""
    req = msg.payload
    if msg.api == "WriteTxnMarkers":
        return m.WriteTxnMarkersResponse({e.producer_id: {tp: err for tp in e.partitions} for e in req.markers})
    if msg.api == "Fetch":
        return m.FetchResponse({tp: m.FetchPartitionData(err) for tp in req.partitions})
    if msg.api == "AddPartitionsToTxn":
        if req.transactions:        # v4+: the request's own error (KafkaApis: authorizeClusterOperation throws)
            return m.AddPartitionsToTxnResponse({}, error=err)
        return m.AddPartitionsToTxnResponse({tp: err for tp in req.partitions})
    cls = getattr(m, msg.api + "Response", None)
    fields = dataclasses.fields(cls) if cls is not None and dataclasses.is_dataclass(cls) else ()
    if fields and fields[0].name == "error" and all(
            f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            for f in fields[1:]):
        return cls(err)
    # no error field to carry the refusal: close the connection, as Kafka's network layer would
    if node is not None:
        node.kernel.network.refuse(msg, f"{node.name} refused {msg.api}")
    return None
