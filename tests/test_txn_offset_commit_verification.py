"""What a TxnOffsetCommit is answered when the group coordinator's KIP-890 check of the transaction goes wrong, and
which check it makes, as Kafka 4.1.1 does:

- GroupCoordinatorService.commitTransactionalOffsets -> CoordinatorRuntime.scheduleTransactionalWriteOperation ->
  CoordinatorPartitionWriter.maybeStartTransactionVerification -> ReplicaManager.maybeSendPartitionToTransactionCoordinator:
  the coordinator's answer, as AddPartitionsToTxnManager maps it (PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH,
  TRANSACTION_ABORTABLE -> INVALID_TXN_STATE for a TxnOffsetCommit v3 or older, a lost or timed-out request ->
  NETWORK_EXCEPTION), fails the operation, and CoordinatorOperationExceptionHelper.handleOperationException maps it
  once more (NETWORK_EXCEPTION -> COORDINATOR_LOAD_IN_PROGRESS, ...); there is no Produce-style mapping to
  NOT_ENOUGH_REPLICAS and no retry of CONCURRENT_TRANSACTIONS: the client gets it.
- AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation: the request's version,
  not the cluster's transaction.version, says whether the group coordinator adds the offsets partition to the
  transaction (v5, KIP-890 part 2) or only verifies it (v4 and older)."""
import pytest

from txnlab import Cluster, Consumer, Producer, TopicPartition
from txnlab.coordinator.group_offsets import (ADD_PARTITION, DEFAULT_ERROR, GENERIC_ERROR_SUPPORTED,
                                              supported_operation, verification_error)
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors as E
from txnlab.protocol.names import OFFSETS_TOPIC

from helpers import RawClient

TID = "tx"          # (its transaction coordinator, broker 2, is not the group coordinator of "g", broker 0)


def lab(tv: int, **cfg):
    c = Cluster(brokers=3, seed=7, config={"offsets.topic.num.partitions": 3,
                                           "transaction.state.log.num.partitions": 3, "transaction.version": tv,
                                           **cfg})
    c.create_topic("t", partitions=1, replication_factor=3)
    c.create_topic("out", partitions=1, replication_factor=3)
    Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"}).committed([TopicPartition("t", 0)], 10)
    assert c.transaction_coordinator(TID) != c.group_coordinator("g")
    return c


def ongoing(c, dialect: str = "librdkafka"):
    """A producer of ``TID`` in a transaction that wrote to out-0 and holds no offsets: (producer, pid, epoch)."""
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": TID, "sim.client.dialect": dialect})
    p.init_transactions(10)
    p.begin_transaction()
    p.produce("out", value=b"x", partition=0)
    p.flush(10)
    st = c.transaction_state(TID)
    return p, st["producer_id"], st["producer_epoch"]


def commit(c, pid: int, epoch: int, version: int = -1) -> E:
    """A TxnOffsetCommit of ``TID``'s offsets for t-0, as a client sending TxnOffsetCommit ``version`` would."""
    raw = c.kernel.nodes.get("raw-client") or RawClient(c)
    req = m.TxnOffsetCommitRequest(TID, "g", pid, epoch, -1, "", None, {("t", 0): (5, -1, "")}, version)
    return E(raw.call(c.group_coordinator("g"), req).errors[("t", 0)])


@pytest.mark.parametrize("coordinator, answer", [
    (E.INVALID_PRODUCER_EPOCH, E.INVALID_PRODUCER_EPOCH),  # (PRODUCER_FENCED, as AddPartitionsToTxnManager says it)
    (E.TRANSACTION_ABORTABLE, E.TRANSACTION_ABORTABLE),    # (INVALID_TXN_STATE in a batch an old request opened)
    (E.INVALID_TXN_STATE, E.INVALID_TXN_STATE),            # passed on, not TRANSACTION_ABORTABLE
    (E.CONCURRENT_TRANSACTIONS, E.CONCURRENT_TRANSACTIONS),
    (E.NOT_COORDINATOR, E.NOT_COORDINATOR),
    (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_LOAD_IN_PROGRESS),
    (E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE),
    (E.NETWORK_EXCEPTION, E.COORDINATOR_LOAD_IN_PROGRESS),          # handleOperationException
    (E.INVALID_PRODUCER_ID_MAPPING, E.INVALID_PRODUCER_ID_MAPPING),
    (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
    (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE),
])
def test_coordinator_errors_become_these_txn_offset_commit_errors(coordinator, answer):
    assert verification_error(coordinator) == answer


@pytest.mark.parametrize("version, operation", [(0, DEFAULT_ERROR), (3, DEFAULT_ERROR), (4, GENERIC_ERROR_SUPPORTED),
                                                (5, ADD_PARTITION)])
def test_the_request_version_says_what_the_coordinator_may_do(version, operation):
    assert supported_operation(version, cluster_transaction_version=2) == operation
    assert supported_operation(version, cluster_transaction_version=0) == operation


def test_offsets_outside_the_transaction_are_refused_as_the_request_version_understands():
    """The group's partition was never added (no AddOffsetsToTxn): the coordinator answers TRANSACTION_ABORTABLE,
    which a TxnOffsetCommit v3 or older (librdkafka's) is answered as INVALID_TXN_STATE."""
    c = lab(tv=1)
    _, pid, epoch = ongoing(c)
    assert commit(c, pid, epoch, 3) == E.INVALID_TXN_STATE
    assert commit(c, pid, epoch, 4) == E.TRANSACTION_ABORTABLE
    assert c.broker(c.group_coordinator("g")).group_coordinator.pending_transactional_offsets == {}


def test_a_v4_commit_on_a_transaction_version_2_cluster_is_only_verified():
    """KIP-890 part 2: only a TxnOffsetCommit v5 adds the group to the transaction; a v4 one (a client that does not
    speak transaction.version 2) is verified, even on a cluster that finalized it."""
    c = lab(tv=2)
    _, pid, epoch = ongoing(c, "java")
    assert commit(c, pid, epoch, 4) == E.TRANSACTION_ABORTABLE
    offsets_tp = (OFFSETS_TOPIC, c.broker(c.group_coordinator("g")).group_coordinator.manager.partition_for("g"))
    assert offsets_tp not in c.transaction_state(TID)["partitions"]
    assert commit(c, pid, epoch, 5) == E.NONE
    assert offsets_tp in c.transaction_state(TID)["partitions"]


def test_a_coordinator_finishing_the_previous_transaction_is_answered_concurrent_transactions():
    """The transaction is in PrepareCommit (its markers held back): the coordinator answers the verification
    CONCURRENT_TRANSACTIONS, which the group coordinator passes on (the client retries after its backoff)."""
    c = lab(tv=1)
    p, pid, epoch = ongoing(c)
    c.delay_next("WriteTxnMarkers", 5_000)
    p.commit_transaction(10)
    assert c.transaction_state(TID)["state"] == "PrepareCommit"
    assert commit(c, pid, epoch, 4) == E.CONCURRENT_TRANSACTIONS


def test_a_lost_verification_request_is_answered_coordinator_load_in_progress():
    """AddPartitionsToTxnManager fails a request whose connection broke with NETWORK_EXCEPTION, which
    handleOperationException turns into COORDINATOR_LOAD_IN_PROGRESS (retried without looking the coordinator up)."""
    c = lab(tv=1)
    _, pid, epoch = ongoing(c)
    c.drop_next("AddPartitionsToTxn", src=f"broker-{c.group_coordinator('g')}")
    assert commit(c, pid, epoch, 4) == E.COORDINATOR_LOAD_IN_PROGRESS


@pytest.mark.parametrize("tv, highest", [(1, 4), (2, 5)])
def test_the_wire_door_advertises_v5_on_a_transaction_version_2_cluster_and_passes_the_version_on(tv, highest):
    """What a real client sends: the Java client sends v5 once the cluster finalized transaction.version 2 (and no
    AddOffsetsToTxn), else v4 (TxnOffsetCommitRequest.Builder); librdkafka v3.  The door hands the version to the
    group coordinator."""
    from kio.index import load_request_schema
    from txnlab.wire.apis_txn import decode_txn_offset_commit
    from txnlab.wire.codec import versions

    assert versions(tv)[28] == ("TxnOffsetCommit", 0, highest)
    body = load_request_schema(28, highest)(transactional_id=TID, group_id="g", producer_id=7, producer_epoch=0,
                                            generation_id=-1, member_id="", group_instance_id=None, topics=())
    req, _ = decode_txn_offset_commit(body, highest, None)
    assert req.api_version == highest
    assert supported_operation(req.api_version, tv) == (ADD_PARTITION if highest == 5 else GENERIC_ERROR_SUPPORTED)


@pytest.mark.parametrize("version, answer", [(1, E.COORDINATOR_NOT_AVAILABLE), (2, E.COORDINATOR_LOAD_IN_PROGRESS)])
def test_a_client_older_than_v2_is_not_told_coordinator_load_in_progress(version, answer):
    """KafkaApis.handleTxnOffsetCommitRequest's sendResponse: clients before 2.0 could crash on it (KAFKA-7296)."""
    from kio.index import load_request_schema, load_response_schema
    from txnlab.wire.apis_txn import encode_txn_offset_commit
    from txnlab.wire.codec import nested

    req_cls = load_request_schema(28, version)
    topic, part = nested(req_cls, "topics"), nested(nested(req_cls, "topics"), "partitions")
    kw = {"committed_leader_epoch": -1} if version >= 2 else {}
    body = req_cls(transactional_id=TID, group_id="g", producer_id=7, producer_epoch=0, topics=(
        topic(name="t", partitions=(part(partition_index=0, committed_offset=5, committed_metadata="", **kw),)),))
    resp = m.TxnOffsetCommitResponse({("t", 0): E.COORDINATOR_LOAD_IN_PROGRESS})
    out = encode_txn_offset_commit(resp, body, version, None, None, load_response_schema(28, version))
    assert out.topics[0].partitions[0].error_code == answer


@pytest.mark.parametrize("dialect,tv,version", [("librdkafka", 0, 3), ("librdkafka", 2, 3), ("java", 0, 4),
                                                ("java", 2, 5)])
def test_the_lab_clients_send_the_version_their_library_sends(dialect, tv, version):
    """librdkafka sends TxnOffsetCommit v3 at most (rd_kafka_txn_send_TxnOffsetCommitRequest); Java's Builder sends
    v5 with transaction.version 2, else v4 -- and the group coordinator's check follows that version."""
    c = lab(tv)
    p, _, _ = ongoing(c, dialect)
    group = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"}).consumer_group_metadata()
    p.send_offsets_to_transaction([TopicPartition("t", 0, 1)], group, 10)
    p.commit_transaction(10)
    sent = [x.payload.api_version for x in c.network_messages() if x.api == "TxnOffsetCommit" and not x.is_response]
    assert sent == [version]
