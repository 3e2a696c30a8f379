"""Produce and WriteTxnMarkers on a partition leader.

Owns the checks before an append (leadership, min.insync.replicas), KIP-890 verification or
implicit AddPartitionsToTxn for a transaction's first write to a partition, waiting for
acks=all, and writing COMMIT/ABORT markers for the transaction coordinator.  A mixin of ``Broker``.
"""
from __future__ import annotations

from ..protocol.record_batch import ControlRecordType
from ..protocol import messages as m
from ..protocol.errors import Errors, ProtocolError
from ..protocol.names import OFFSETS_TOPIC
from ..coordinator.transaction_metadata import PartitionList
from .add_partitions_manager import BROKER_REQUEST_TIMEOUT_MS

# NONE is read on every request: a member read through its enum class costs CPython 3.11 a call of the class's
# attribute hook
_NONE = Errors.NONE
_COMMIT, _ABORT = ControlRecordType.COMMIT, ControlRecordType.ABORT     # (enum members read once, as constants)
_A_MARKER = {_COMMIT: "a COMMIT", _ABORT: "an ABORT"}     # for the narration


def verification_error(error: Errors, supports_epoch_bump: bool) -> Errors:
    """What a Produce answers when its partition was not verified (or added), as the leader's
    AddPartitionsToTxnManager told it (which already mapped PRODUCER_FENCED and, by its batch, TRANSACTION_ABORTABLE):
    Kafka 4.1 ReplicaManager.appendRecordsWithTransactionVerification's postVerificationCallback (retriable
    coordinator errors -> NOT_ENOUGH_REPLICAS, which old clients retry without a metadata refresh;
    CONCURRENT_TRANSACTIONS kept for a Produce v12+ that adds the partition); any other error is passed on."""
    if error in _VERIFICATION_RETRIABLE or (error == Errors.CONCURRENT_TRANSACTIONS and not supports_epoch_bump):
        return Errors.NOT_ENOUGH_REPLICAS
    return error


_VERIFICATION_RETRIABLE = frozenset({Errors.NETWORK_EXCEPTION, Errors.COORDINATOR_LOAD_IN_PROGRESS,
                                     Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR})




class _ProduceState:
    """One Produce request being answered: partitions may wait for verification and for acks=all."""

    def __init__(self, broker, msg, req) -> None:
        self.broker = broker
        self.msg = msg
        self.req = req
        self.results: dict = {}
        self.pending = 0
        self.ready = False
        self.done = False

    def maybe_respond(self) -> None:
        if not self.ready or self.pending or self.done:
            return
        self.done = True
        if self.req.acks == 0:
            return
        if self.req.acks == -1 and any(r.error == _NONE for r in self.results.values()):
            self.broker.narrate("every replica in the ISR has the write (HW passed it): acks=all satisfied")
        self.broker.respond(self.msg, m.ProduceResponse(self.results))


class ProduceHandling:
    # -------------------------------------------------------------- produce
    def handle_Produce(self, msg):
        req = msg.payload
        if req.acks not in (0, 1, -1):
            return m.ProduceResponse({tp: m.PartitionProduceResponse(Errors.INVALID_REQUIRED_ACKS)
                                      for tp in req.topic_data})
        st = _ProduceState(self, msg, req)
        appendable = []
        verify = False
        tv = self.config["transaction.version"]
        # Produce v12+ from a client that speaks transaction.version 2 lets the leader add the partition
        # (KafkaApis: produceRequestVersionToTransactionSupportedOperation); an older one is only verified, and only
        # with transaction.partition.verification.enable (Kafka 4.1 ReplicaManager
        # .maybeSendPartitionsToTransactionCoordinator skips it when !supportsEpochBump && !verificationEnable)
        client_tv = tv if req.version < 0 else min(tv, 2 if req.version >= 12 else 0)
        checked = req.transactional_id is not None and \
            (client_tv >= 2 or self.config["transaction.partition.verification.enable"])
        for tp, batch in req.topic_data.items():
            p = self._produce_partition(st, tp, batch)
            if p is not None:
                appendable.append((p, batch))
                verify = verify or (checked and batch.is_transactional)
        if verify:      # (it finds which partitions are new to the transaction, if any)
            self._verify_then_append(st, appendable, client_tv >= 2)
        else:
            for p, batch in appendable:
                self._append_produce(st, p, batch, None)
        st.ready = True
        st.maybe_respond()
        return None

    def _produce_partition(self, st, tp, batch):
        """The partition ``tp`` if this broker may append ``batch`` to it; else None, its error in the results."""
        p = self.partitions.get(tp)
        if p is None or not p.is_leader:
            err = Errors.NOT_LEADER_OR_FOLLOWER if tp in self.metadata.partitions else Errors.UNKNOWN_TOPIC_OR_PARTITION
            self.narrate(f"{m.tp_str(tp)}: broker {self.broker_id} is not the leader -> {err.name}")
            st.results[tp] = m.PartitionProduceResponse(err)
            return None
        if st.req.acks == -1 and len(p.isr) < p.min_insync_replicas:
            self.narrate(f"{p.name}: ISR {list(p.isr)} is smaller than min.insync.replicas="
                         f"{p.min_insync_replicas} -> NOT_ENOUGH_REPLICAS, nothing appended")
            st.results[tp] = m.PartitionProduceResponse(Errors.NOT_ENOUGH_REPLICAS)
            return None
        return p

    def _append_produce(self, st, p, batch, guard) -> None:
        tp = p.tp
        try:
            info = self.append_to_leader(p, [batch], self.kernel.now, origin_client=True, verification_guard=guard)
        except ProtocolError as e:
            self.narrate(f"{p.name}: rejected -> {e.error.name}: {e.message}")
            st.results[tp] = m.PartitionProduceResponse(e.error, error_message=e.message)
            return
        st.results[tp] = m.PartitionProduceResponse(_NONE, info.first_offset, info.log_append_time,
                                                    p.log.log_start_offset)
        if st.req.acks == -1:
            st.pending += 1
            self.narrate(f"{p.name}: waiting for the ISR to replicate (acks=all)")

            def acked(error, tp=tp):
                if error != _NONE:
                    r = st.results[tp]
                    st.results[tp] = m.PartitionProduceResponse(error, r.base_offset, r.log_append_time,
                                                                r.log_start_offset)
                st.pending -= 1
                st.maybe_respond()
            p.add_delayed(info.last_offset + 1, st.req.timeout_ms, acked)
            p.complete_delayed(self.kernel.now)

    def _verify_then_append(self, st, appendable: list, implicit_add: bool, started: int | None = None) -> None:
        """KIP-890 (ReplicaManager.handleProduceAppend): the partitions of a transaction's first write here are
        verified with its coordinator -- or, with transaction.version 2, added on the producer's behalf -- all in one
        question, and the request's batches are appended once it is answered."""
        now = self.kernel.now
        guards: dict = {}
        refused = False
        for p, batch in appendable:
            if not batch.is_transactional or p.log.has_ongoing_transaction(batch.producer_id, batch.producer_epoch):
                continue
            try:    # Kafka 4.1 UnifiedLog.maybeStartTransactionVerification: a stale epoch is refused at once
                guards[p.tp] = p.log.maybe_start_transaction_verification(batch.producer_id, batch.base_sequence,
                                                                          batch.producer_epoch, now, implicit_add)
                pid, epoch = batch.producer_id, batch.producer_epoch
            except ProtocolError as e:
                self.narrate(f"{p.name}: rejected before verification -> {e.error.name}: {e.message}")
                st.results[p.tp] = m.PartitionProduceResponse(e.error, error_message=e.message)
                refused = True
        if refused:
            appendable = [(p, batch) for p, batch in appendable if p.tp not in st.results]
        if not guards:      # every partition is in the transaction already (or now, at a retry)
            for p, batch in appendable:
                # (at a retry, leadership and min ISR again, at the append, as below; checked a moment ago otherwise)
                q = p if started is None else self._produce_partition(st, p.tp, batch)
                if q is not None:
                    self._append_produce(st, q, batch, None)
            return
        tid = st.req.transactional_id
        verifier = self.txn_verifier
        coordinator = verifier.coordinator(tid)
        what = "adds it to the transaction (transaction.version 2)" if implicit_add else "verifies it is in the transaction"
        self.kernel.narrate_f(("%s: first transactional write of pid %d here; the leader asks the coordinator "
                               "(broker %d) and %s before appending (KIP-890)", PartitionList(guards), pid, coordinator,
                               what))
        st.pending += 1
        started = now if started is None else started

        def answered(errors: dict) -> None:
            st.pending -= 1
            if implicit_add and Errors.CONCURRENT_TRANSACTIONS in errors.values() and \
                    self.kernel.now - started < min(self.config["add.partitions.to.txn.retry.backoff.max.ms"],
                                                    BROKER_REQUEST_TIMEOUT_MS):
                # ReplicaManager.maybeRetryOnConcurrentTransactions: the previous transaction is still completing; the
                # leader asks again for the whole request (a Produce is expensive to retry from the client)
                backoff = self.config["add.partitions.to.txn.retry.backoff.ms"]
                self.narrate(f"{PartitionList(guards)}: the coordinator answered CONCURRENT_TRANSACTIONS; the leader "
                             f"asks again in {backoff} ms")
                st.pending += 1

                def again():
                    st.pending -= 1
                    self._verify_then_append(st, appendable, implicit_add, started)
                    st.maybe_respond()
                self.set_timer(backoff, "retry-add-partitions-to-txn", again)
                return
            for p, batch in appendable:
                e = errors.get(p.tp, _NONE)
                if e != _NONE:
                    e = Errors(e)       # (only a refusal is converted: for its name)
                    mapped = verification_error(e, implicit_add)
                    self.narrate(f"{p.name}: not verified ({e.name}); the write is refused -> {mapped.name}")
                    st.results[p.tp] = m.PartitionProduceResponse(mapped, error_message=f"verification: {e.name}")
                else:
                    # leadership and min.insync.replicas again: Kafka checks them at the append, after the answer
                    # (Partition.appendRecordsToLeader); either may have changed while the question was out
                    q = self._produce_partition(st, p.tp, batch)
                    if q is not None:
                        self._append_produce(st, q, batch, guards.get(p.tp))
            st.maybe_respond()
        # (produceRequestVersionToTransactionSupportedOperation: a Produce v11+ is told TRANSACTION_ABORTABLE; the lab's
        # own clients send no version, -1: the newest)
        verifier.add_or_verify(coordinator, tid, pid, epoch, tuple(guards), implicit_add,
                               st.req.version < 0 or st.req.version >= 11, answered)

    # ------------------------------------------------------ transaction markers
    def handle_WriteTxnMarkers(self, msg):
        req = msg.payload
        now = self.kernel.now
        results: dict = {}
        waiting = []
        for entry in req.markers:
            res = results.setdefault(entry.producer_id, {})
            kind = _COMMIT if entry.transaction_result else _ABORT
            for tp in entry.partitions:
                p = self.partitions.get(tp)
                if p is None or not p.is_leader:
                    res[tp] = Errors.NOT_LEADER_OR_FOLLOWER if tp in self.metadata.partitions \
                        else Errors.UNKNOWN_TOPIC_OR_PARTITION
                    self.narrate(f"{m.tp_str(tp)}: not the leader here -> {Errors(res[tp]).name}")
                    continue
                if len(p.isr) < p.min_insync_replicas:
                    res[tp] = Errors.NOT_ENOUGH_REPLICAS
                    continue
                if p.topic == OFFSETS_TOPIC:    # the group coordinator's batch goes first (completeTransaction)
                    self.group_coordinator.before_marker(p.partition)
                try:
                    off = p.log.append_control_as_leader(kind, entry.producer_id, entry.producer_epoch,
                                                         entry.coordinator_epoch, p.leader_epoch, now,
                                                         entry.transaction_version)
                except ProtocolError as e:
                    self.narrate(f"{p.name}: {kind.name} marker for pid {entry.producer_id} rejected -> "
                                 f"{e.error.name}: {e.message}")
                    res[tp] = e.error
                    continue
                # narrate_f: written only if the step is read (every transaction writes markers)
                self.kernel.narrate_f(("%s: wrote %s marker at offset %d for pid %d epoch %d", p.name, _A_MARKER[kind],
                                       off, entry.producer_id, entry.producer_epoch))
                self._complete_parked_for(tp)
                p.maybe_increment_hw(now)
                p.check_replication_hold()
                waiting.append((entry, p, off))
        if not waiting:
            return m.WriteTxnMarkersResponse(results)
        left = {"n": len(waiting)}
        for entry, p, off in waiting:
            def acked(error, entry=entry, p=p, off=off):
                results[entry.producer_id][p.tp] = error
                if error == _NONE and p.topic == OFFSETS_TOPIC:
                    self.group_coordinator.complete_txn(p.partition, entry.producer_id, entry.transaction_result, off)
                left["n"] -= 1
                if left["n"] == 0:
                    self.respond(msg, m.WriteTxnMarkersResponse(results))
            p.add_delayed(off + 1, 30_000, acked)
            p.complete_delayed(now)
        return None

