"""The offset half of Kafka's ``GroupCoordinator``: OffsetCommit, TxnOffsetCommit and OffsetFetch.

Owns who may commit (Kafka's validateOffsetCommit: member id, generation,
static instance id; KIP-447's rules for TxnOffsetCommit, where generation -1
without a member id is accepted), the KIP-890 check that a transactional
offset commit belongs to the producer's ongoing transaction (asked of the
transaction coordinator before the write; TxnOffsetCommit v5 adds it), and OffsetFetch with
RequireStable as Kafka 4.1.1 serves it: a write operation of the group coordinator, answered once the writes
before it are replicated, with UNSTABLE_OFFSET_COMMIT for offsets a transaction still holds.  Also KafkaApis' per-topic checks
before the group coordinator: READ for a commit, DESCRIBE for a fetch (TOPIC_AUTHORIZATION_FAILED), then
UNKNOWN_TOPIC_OR_PARTITION for a commit of a partition the broker does not know.
Mixed into ``GroupCoordinator``; the writes themselves are the manager's.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from ..protocol import messages as m
from ..protocol.errors import Errors, ProtocolError
from .group_metadata import GroupMetadata, GroupState
from .group_batch import OPERATION_ERRORS, GroupWrite

S = GroupState
NO_OFFSET = (-1, -1, "", Errors.NONE)       # OffsetFetch's answer for a partition with no committed offset

# Kafka 4.1.1 AddPartitionsToTxnManager.TransactionSupportedOperation: what the group coordinator's KIP-890 check of
# a TxnOffsetCommit may do, by the request's version (txnOffsetCommitRequestVersionToTransactionSupportedOperation)
DEFAULT_ERROR = "DEFAULT_ERROR"                     # v3 and older: verify; TRANSACTION_ABORTABLE not understood
GENERIC_ERROR_SUPPORTED = "GENERIC_ERROR_SUPPORTED"  # v4: verify (TxnOffsetCommitRequest's last version before TV2)
ADD_PARTITION = "ADD_PARTITION"                     # v5: add the offsets partition to the transaction (KIP-890 part 2)


def supported_operation(api_version: int, cluster_transaction_version: int) -> str:
    """What a TxnOffsetCommit of ``api_version`` lets the group coordinator do (Kafka 4.1.1
    AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation: the request's version
    decides, not the cluster's transaction.version).  -1 (the lab's clients, which send none): the newest version a
    client may send on this cluster, 5 with transaction.version 2, else 4 (TxnOffsetCommitRequest.Builder caps it at
    LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2 unless transaction V2 is enabled)."""
    if api_version < 0:
        api_version = 5 if cluster_transaction_version >= 2 else 4
    return ADD_PARTITION if api_version > 4 else GENERIC_ERROR_SUPPORTED if api_version > 3 else DEFAULT_ERROR


def verification_error(error: Errors) -> Errors:
    """What a TxnOffsetCommit is answered when the transaction coordinator refused to verify (or add) the group's
    offsets partition, or could not be asked (NETWORK_EXCEPTION), as the broker's AddPartitionsToTxnManager told it
    (which already mapped PRODUCER_FENCED and, by its batch, TRANSACTION_ABORTABLE), then, the error failing
    CoordinatorRuntime.scheduleTransactionalWriteOperation
    (CoordinatorPartitionWriter.maybeStartTransactionVerification completes its future exceptionally),
    GroupCoordinatorService.commitTransactionalOffsets' handleOperationException.  Unlike a Produce (ReplicaManager's
    postVerificationCallback) nothing becomes NOT_ENOUGH_REPLICAS, and CONCURRENT_TRANSACTIONS is not retried here:
    the client gets it and retries."""
    return OPERATION_ERRORS.get(error, error)


def fetch_error(error: Errors) -> Errors:
    """GroupCoordinatorService.handleOffsetFetchException: a RequireStable OffsetFetch that timed out (or whose
    writes failed with UNKNOWN_TOPIC_OR_PARTITION or NOT_ENOUGH_REPLICAS) is answered NOT_COORDINATOR -- consumers
    before 3.9 retry neither REQUEST_TIMED_OUT nor COORDINATOR_NOT_AVAILABLE, and NOT_COORDINATOR also looks the
    coordinator up again; anything else as handleOperationException maps it."""
    if error in (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_ENOUGH_REPLICAS, Errors.REQUEST_TIMED_OUT):
        return Errors.NOT_COORDINATOR
    return OPERATION_ERRORS.get(error, error)


def _every(req, error, unknown: dict) -> dict:
    """The answer of a (Txn)OffsetCommit: ``error`` for each of ``req``'s partitions, beside ``unknown``'s answers
    (the partitions the broker does not know: ``_known_partitions``)."""
    return {**unknown, **dict.fromkeys(req.offsets, error)}

class GroupOffsetHandlers:
    def _metadata_too_large(self, req, unknown: dict):
        """OffsetMetadataManager.commitOffset / commitTransactionalOffset (isMetadataInvalid): a partition whose
        metadata is longer than offset.metadata.max.bytes is answered OFFSET_METADATA_TOO_LARGE and gets no record;
        returns the request for the others and every answer so far (``unknown``'s and these)."""
        limit = self.config["offset.metadata.max.bytes"]
        long = {tp: Errors.OFFSET_METADATA_TOO_LARGE for tp, (_, _, meta) in req.offsets.items() if len(meta) > limit}
        if not long:
            return req, unknown
        self.narrate(f"group {req.group_id!r}: the metadata of {m.tps_str(long)} is longer than "
                     f"offset.metadata.max.bytes={limit} -> OFFSET_METADATA_TOO_LARGE, not written")
        return (dataclasses.replace(req, offsets={tp: o for tp, o in req.offsets.items() if tp not in long}),
                {**unknown, **long})

    def _validate_offset_commit(self, group: GroupMetadata, generation_id: int, member_id: str,
                                instance_id: Optional[str], transactional: bool) -> Optional[Errors]:
        """Kafka's validateOffsetCommit, with KIP-447's rules for TxnOffsetCommit."""
        what = "TxnOffsetCommit" if transactional else "OffsetCommit"
        if group.is_state(S.DEAD):
            return Errors.COORDINATOR_NOT_AVAILABLE
        if transactional and "no-txn-generation-check" in self.broker.mutations:
            self.narrate(f"[mutation no-txn-generation-check] TxnOffsetCommit of generation {generation_id} accepted "
                         f"without checking the member or the generation (group at {group.generation_id})")
        elif generation_id < 0 and group.is_state(S.EMPTY) and (member_id or instance_id is not None):
            # Kafka 4's ClassicGroup.validateOffsetCommit returns before any membership check when the generation
            # is -1 and the group is Empty, whatever member id or instance id the request names
            self.narrate(f"group {group.group_id!r} is Empty and the {what} carries generation -1: accepted without "
                         f"checking member {member_id or '(none)'!s} (as a commit of a consumer without a group)")
        elif generation_id >= 0 or member_id or instance_id is not None:
            err = self._validate_member(group, member_id, instance_id, what)
            if err is not None:
                return err
            if generation_id != group.generation_id:
                self.narrate(f"group {group.group_id!r} is at generation {group.generation_id}, the {what} carries "
                             f"generation {generation_id} (a zombie of an older generation) -> ILLEGAL_GENERATION")
                return Errors.ILLEGAL_GENERATION
        elif not transactional and not group.is_state(S.EMPTY):
            self.narrate(f"group {group.group_id!r} has members, so only a member may commit -> UNKNOWN_MEMBER_ID")
            return Errors.UNKNOWN_MEMBER_ID
        elif transactional:
            self.narrate("TxnOffsetCommit without member id and generation (-1): accepted without membership "
                         "checks (the groupId-only API)")
        if not transactional and group.is_state(S.COMPLETING_REBALANCE):
            self.narrate(f"group {group.group_id!r} is waiting for the assignment -> REBALANCE_IN_PROGRESS")
            return Errors.REBALANCE_IN_PROGRESS
        return None

    def _known_partitions(self, msg, what: str):
        """KafkaApis.handleOffsetCommitRequest / handleTxnOffsetCommitRequest, after the group (and transactional
        id) checks (``authorizer.check_request``): per topic, a topic the principal may not READ is answered
        TOPIC_AUTHORIZATION_FAILED for each of its partitions (authHelper.filterByAuthorized, asked before whether
        the topic exists); then a partition this broker's metadata does not hold (an unknown topic, or a partition
        number the topic lacks) is answered UNKNOWN_TOPIC_OR_PARTITION; the group coordinator sees only the
        others.  Returns the request for those (``msg.payload`` itself when none was refused) and the answers of
        the refused ones."""
        req = msg.payload
        refused = sorted({t for t, _ in req.offsets if not self.broker._allowed(msg, "TOPIC", t, "READ")}) \
            if self.broker.cluster.authorizer is not None else ()
        known = self.broker.metadata.partitions
        unknown = {tp: Errors.TOPIC_AUTHORIZATION_FAILED if tp[0] in refused else Errors.UNKNOWN_TOPIC_OR_PARTITION
                   for tp in req.offsets if tp[0] in refused or tp not in known}
        if not unknown:
            return req, unknown
        if refused:
            self.narrate(f"{self.broker.cluster.principal_of(msg.src)} may not READ topic(s) {refused}: their "
                         f"offsets are answered TOPIC_AUTHORIZATION_FAILED")
        missing = [tp for tp, e in unknown.items() if e == Errors.UNKNOWN_TOPIC_OR_PARTITION]
        if missing:
            self.narrate(f"broker {self.broker.broker_id} knows no partition {m.tps_str(missing)}: their offsets "
                         f"are answered UNKNOWN_TOPIC_OR_PARTITION before the group coordinator sees the {what}")
        return dataclasses.replace(req, offsets={tp: o for tp, o in req.offsets.items() if tp not in unknown}), unknown

    def handle_OffsetCommit(self, msg):
        req, unknown = self._known_partitions(msg, "OffsetCommit")
        if not req.offsets:
            return m.OffsetCommitResponse(unknown)
        err = self._check_coordinator(req.group_id, empty_ok=True)
        if err is not None:
            return m.OffsetCommitResponse(_every(req, err, unknown))
        group = self.manager.get_group(req.group_id)
        if group is None:
            if req.generation_id >= 0:
                self.narrate(f"group {req.group_id!r} does not exist but the commit carries generation "
                             f"{req.generation_id} -> ILLEGAL_GENERATION")
                return m.OffsetCommitResponse(_every(req, Errors.ILLEGAL_GENERATION, unknown))
            group = self.manager.add_group(GroupMetadata(req.group_id, S.EMPTY, self.kernel.now))
        err = self._validate_offset_commit(group, req.generation_id, req.member_id, req.group_instance_id, False)
        if err is not None:
            return m.OffsetCommitResponse(_every(req, err, unknown))
        if group.has(req.member_id):
            self._schedule_heartbeat(group, group.get(req.member_id))
        req, unknown = self._metadata_too_large(req, unknown)
        if not req.offsets:
            return m.OffsetCommitResponse(unknown)
        self.manager.store_offsets(group, dict(req.offsets),
                                   lambda errors: self.broker.respond(msg, m.OffsetCommitResponse({**unknown,
                                                                                                   **errors})))
        return None

    def handle_TxnOffsetCommit(self, msg):
        req, unknown = self._known_partitions(msg, "TxnOffsetCommit")
        if not req.offsets:
            return m.TxnOffsetCommitResponse(unknown)
        err = self._check_coordinator(req.group_id)
        if err is not None:
            return m.TxnOffsetCommitResponse(_every(req, err, unknown))
        tp_log = self.manager.tp_for(req.group_id)
        p = self.broker.partitions.get(tp_log)
        op = supported_operation(req.api_version, self.config["transaction.version"])
        # Kafka 4.1 ReplicaManager.maybeSendPartitionsToTransactionCoordinator: no check unless the request may add
        # the partition or transaction.partition.verification.enable; none when the transaction is open here
        # (UnifiedLog.maybeStartTransactionVerification's SENTINEL guard)
        if not (op == ADD_PARTITION or self.config["transaction.partition.verification.enable"]) or p is None or \
                p.log.has_ongoing_transaction(req.producer_id, req.producer_epoch):
            return self._txn_offset_commit(msg, req, unknown, None)
        return self._verify_then_commit(msg, req, unknown, p, op)

    def _verify_then_commit(self, msg, req, unknown: dict, p, op: str):
        """KIP-890 for TxnOffsetCommit: the offsets partition must be in the producer's transaction (Kafka 4.1.1
        CoordinatorPartitionWriter.maybeStartTransactionVerification via ReplicaManager
        .maybeSendPartitionToTransactionCoordinator).  ``req``: the request's known partitions; ``unknown``: the
        answers of the others; ``op``: what the request's version lets the check do (``supported_operation``)."""
        implicit_add = op == ADD_PARTITION
        try:    # Kafka 4.1 UnifiedLog.maybeStartTransactionVerification: a stale epoch is refused at once
            guard = p.log.maybe_start_transaction_verification(req.producer_id, -1, req.producer_epoch,
                                                               self.kernel.now, implicit_add)
        except ProtocolError as e:
            mapped = OPERATION_ERRORS.get(e.error, e.error)
            self.narrate(f"{p.name}: TxnOffsetCommit refused before verification -> {mapped.name}: {e.message}")
            return m.TxnOffsetCommitResponse(_every(req, mapped, unknown))
        verifier = self.broker.txn_verifier
        coord = verifier.coordinator(req.transactional_id)
        what = "adds it to the transaction (TxnOffsetCommit v5, transaction.version 2)" if implicit_add else \
            "verifies it is in the transaction"
        if coord >= 0:
            self.narrate(f"{p.name}: first transactional offsets of pid {req.producer_id} here; the group coordinator "
                         f"asks the transaction coordinator (broker {coord}) and {what} before writing (KIP-890)")
        else:
            self.narrate(f"{p.name}: TxnOffsetCommit must be verified with the transaction coordinator (KIP-890), "
                         f"but none is available for {req.transactional_id!r}")

        def answered(errors: dict):
            e = Errors(errors.get(p.tp, Errors.NONE))
            if e == Errors.NONE:
                out = self._txn_offset_commit(msg, req, unknown, guard)
            else:
                mapped = verification_error(e)
                self.narrate(f"{p.name}: not verified ({e.name}); the offsets are refused -> {mapped.name}")
                out = m.TxnOffsetCommitResponse(_every(req, mapped, unknown))
            if out is not None:
                self.broker.respond(msg, out)       # (at once when there is no coordinator to ask)
        verifier.add_or_verify(coord, req.transactional_id, req.producer_id, req.producer_epoch, (p.tp,),
                               implicit_add, op != DEFAULT_ERROR, answered)
        return None

    def _txn_offset_commit(self, msg, req, unknown: dict, guard):
        err = self._check_coordinator(req.group_id)
        if err is not None:
            return m.TxnOffsetCommitResponse(_every(req, err, unknown))
        group = self.manager.get_group(req.group_id)
        if group is None:
            if req.generation_id >= 0:
                # Kafka 4's OffsetMetadataManager.validateTransactionalOffsetCommit: a group the coordinator does not
                # know (never created, or deleted) is created only for generation -1; a member's metadata of an
                # earlier incarnation of the group is refused ILLEGAL_GENERATION, and no group is created
                self.narrate(f"group {req.group_id!r} does not exist but the TxnOffsetCommit carries generation "
                             f"{req.generation_id} (member {req.member_id or '(none)'!s}) -> ILLEGAL_GENERATION")
                return m.TxnOffsetCommitResponse(_every(req, Errors.ILLEGAL_GENERATION, unknown))
            group = self.manager.add_group(GroupMetadata(req.group_id, S.EMPTY, self.kernel.now))
        err = self._validate_offset_commit(group, req.generation_id, req.member_id, req.group_instance_id, True)
        if self.broker.cluster.auditors:
            self.broker.cluster.audit("txn-offset-commit", broker=self.broker.broker_id, group=req.group_id,
                                      generation=req.generation_id, member=req.member_id,
                                      group_generation=group.generation_id, members=tuple(group.members),
                                      accepted=err is None, empty=group.is_state(S.EMPTY))
        if err is not None:
            return m.TxnOffsetCommitResponse(_every(req, err, unknown))
        req, unknown = self._metadata_too_large(req, unknown)
        if not req.offsets:
            return m.TxnOffsetCommitResponse(unknown)
        self.manager.store_offsets(group, dict(req.offsets),
                                   lambda errors: self.broker.respond(msg, m.TxnOffsetCommitResponse({**unknown,
                                                                                                      **errors})),
                                   req.producer_id, req.producer_epoch, guard)
        return None

    def handle_OffsetFetch(self, msg):
        req = msg.payload
        # GroupCoordinatorService.fetchOffsets / fetchAllOffsets refuse only a null group id (INVALID_GROUP_ID): "for
        # backwards compatibility, we support fetch commits for the empty group id", any version; "" is looked up
        # like any group (none has offsets: -1 for each partition asked, none for a fetch of all)
        err = self._check_coordinator(req.group_id, empty_ok=True)
        if err is not None:
            return m.OffsetFetchResponse(err)
        # KafkaApis.fetchOffsetsForGroup / fetchAllOffsetsForGroup: "clients are not allowed to see offsets for
        # topics that are not authorized for Describe": the partitions asked of such a topic are answered
        # TOPIC_AUTHORIZATION_FAILED, and a fetch of all the group's offsets leaves those topics out
        refused = {}
        hidden = sorted({t for t, _ in req.partitions if not self.broker._allowed(msg, "TOPIC", t, "DESCRIBE")}) \
            if req.partitions is not None and self.broker.cluster.authorizer is not None else ()
        if hidden:
            self.narrate(f"{self.broker.cluster.principal_of(msg.src)} may not DESCRIBE topic(s) {hidden}: their "
                         f"offsets are answered TOPIC_AUTHORIZATION_FAILED")
            refused = {tp: (-1, -1, "", Errors.TOPIC_AUTHORIZATION_FAILED) for tp in req.partitions if tp[0] in hidden}
            req = dataclasses.replace(req, partitions=tuple(tp for tp in req.partitions if tp not in refused))
        stable = req.require_stable and "offset-fetch-unstable" not in self.broker.mutations
        resp = self._fetch_offsets(msg, req, stable)
        if refused:
            resp = dataclasses.replace(resp, offsets={**resp.offsets, **refused})
        return self._answer_once_written(msg, req.group_id, resp) if stable else resp

    def _fetch_offsets(self, msg, req, stable: bool):
        """OffsetMetadataManager.fetchOffsets / fetchAllOffsets.  Without RequireStable a read operation
        (scheduleReadOperation at the last committed offset): only replicated offsets.  With it a write operation
        reading the latest state (lastCommittedOffset Long.MAX_VALUE): a plain commit still being replicated is
        read too (the answer waits for it: ``_answer_once_written``); a partition with pending transactional offsets
        (hasPendingTransactionalOffsets) is answered UNSTABLE_OFFSET_COMMIT."""
        group = self.manager.get_group(req.group_id)
        if group is None or group.is_state(S.DEAD):
            # (validateOffsetFetch's GroupIdNotFoundException: failAllPartitions)
            if req.partitions is None:
                return m.OffsetFetchResponse(Errors.NONE, {})
            return m.OffsetFetchResponse(Errors.NONE, {tp: NO_OFFSET for tp in req.partitions})
        latest = {**group.offsets, **group.pending_offset_commits} if stable else group.offsets
        if req.partitions is None:
            shown = {t for t, _ in latest if self.broker._allowed(msg, "TOPIC", t, "DESCRIBE")}
            tps = sorted(tp for tp in latest if tp[0] in shown)
        else:
            tps = req.partitions
        out = {}
        unstable = []
        for tp in tps:
            if stable and group.has_pending_transactional_offsets(tp):
                out[tp] = (-1, -1, "", Errors.UNSTABLE_OFFSET_COMMIT)
                unstable.append(tp)
                continue
            e = latest.get(tp)
            # (OffsetMetadataManager.fetchOffsets: setCommittedLeaderEpoch(offsetAndMetadata.leaderEpoch.orElse(-1)))
            out[tp] = (e.offset, e.leader_epoch, e.metadata, Errors.NONE) if e is not None else NO_OFFSET
        if self.broker.cluster.auditors and req.require_stable and req.partitions is not None:
            pending = [tp for tp in req.partitions if group.has_pending_transactional_offsets(tp)]
            if pending:
                self.broker.cluster.audit("offset-fetch", broker=self.broker.broker_id, group=req.group_id,
                                          answered=tuple(tp for tp in pending if out[tp][3] == Errors.NONE))
        if unstable:
            self.narrate(f"group {group.group_id!r}: the offsets of {m.tps_str(unstable)} were written by a transaction "
                         f"that has no marker yet -> UNSTABLE_OFFSET_COMMIT (retriable: ask again once the "
                         f"transaction ends)")
        return m.OffsetFetchResponse(Errors.NONE, out)

    def _answer_once_written(self, msg, group_id: str, resp):
        """GroupCoordinatorService.fetchOffsets / fetchAllOffsets with RequireStable run as a write operation
        ("fetch-offsets") with no records: CoordinatorRuntime answers it once every write made before it to the
        group's ``__consumer_offsets`` partition is replicated (waitForPendingWrites: it joins the batch not yet
        appended, or waits for the last written offset; the high watermark completes it).  So a plain commit
        still lingering or being replicated is waited for, not answered UNSTABLE_OFFSET_COMMIT.  Returns ``resp``
        when nothing is pending, else None (answered later)."""
        op = GroupWrite(f"OffsetFetch with RequireStable of group {group_id!r}", (),
                        lambda error: self.broker.respond(msg, resp if error == Errors.NONE
                                                          else m.OffsetFetchResponse(error)),
                        map_error=fetch_error)
        runtime, partition = self.manager.runtime, self.manager.partition_for(group_id)
        if not runtime.has_pending_writes(partition):
            return resp
        self.narrate(f"group {group_id!r}: OffsetFetch with RequireStable is a write operation of the group "
                     f"coordinator: read now, answered once the writes before it are replicated")
        runtime.wait_for_pending_writes(partition, op)
        return None
