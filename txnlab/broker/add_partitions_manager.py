"""A partition leader's questions to transaction coordinators (Kafka 4.1's ``AddPartitionsToTxnManager``, KIP-890).

Before a transaction's first write to a partition (a Produce, or a TxnOffsetCommit to ``__consumer_offsets``), its
leader asks the transaction's coordinator whether the partition is in the transaction (verify-only) or, for a
transaction.version 2 client, adds it on the producer's behalf.  The questions to one coordinator are batched: at
most one AddPartitionsToTxn (v4+, one entry per transaction) is in flight to each broker, and what is asked while it
is out waits and goes together in the next one.  A batch holds one question per transactional id: a newer one
replaces it (its asker is answered NETWORK_EXCEPTION, a retriable error, or INVALID_PRODUCER_EPOCH when the new one
has a higher epoch), and one with a lower epoch is answered INVALID_PRODUCER_EPOCH at once.

The asker gets the coordinator's errors per partition (a partition not named was verified), NETWORK_EXCEPTION for
every partition when the connection failed or the request timed out, COORDINATOR_NOT_AVAILABLE when no live broker
leads the transaction's ``__transaction_state`` partition, and the request's own error for every partition
(CLUSTER_AUTHORIZATION_FAILED becomes INVALID_TXN_STATE: "the client should not be exposed to it").  Of a
coordinator's per-partition errors, PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH, and TRANSACTION_ABORTABLE becomes
INVALID_TXN_STATE when the batch was opened by an asker whose request predates that error (DEFAULT_ERROR: a Produce
v10 or older, a TxnOffsetCommit v3 or older).  Kafka decides that by the batch, not by each asker
(AddPartitionsToTxnHandler.onComplete reads TransactionDataAndCallbacks.transactionSupportedOperation, set by
whichever addTxnData created the node's entry), so an old client whose question rode in a batch a newer one opened is
told TRANSACTION_ABORTABLE, and a new one in an old one's batch INVALID_TXN_STATE.  What a Produce or a
TxnOffsetCommit answers for each error is the asker's (``produce.verification_error``,
``group_offsets.verification_error``).
"""
from __future__ import annotations

from typing import Callable

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.hashing import partition_for
from ..protocol.names import TRANSACTION_STATE_TOPIC, broker_name

_NONE = Errors.NONE
BROKER_REQUEST_TIMEOUT_MS = 30_000     # the broker's request.timeout.ms (Kafka's default)


class AddPartitionsToTxnManager:
    __slots__ = ("broker", "pending", "in_flight", "generic_errors")

    def __init__(self, broker) -> None:
        self.broker = broker
        # coordinator's node name -> {transactional id: (AddPartitionsToTxnTransaction, callback)}, in the order asked
        self.pending: dict = {}
        self.in_flight: set = set()      # the coordinators a request is out to (inflightNodes)
        # coordinator's node name -> whether the asker that opened its waiting batch is told TRANSACTION_ABORTABLE
        # (TransactionDataAndCallbacks.transactionSupportedOperation is not DEFAULT_ERROR)
        self.generic_errors: dict = {}

    def coordinator(self, tid: str) -> int:
        """The live broker that leads ``tid``'s __transaction_state partition, -1 if none (getTransactionCoordinator)."""
        b = self.broker
        leader = b.metadata.leader((TRANSACTION_STATE_TOPIC,
                                    partition_for(tid, b.config["transaction.state.log.num.partitions"])))
        return leader if leader >= 0 and b.metadata.alive_broker_epoch(leader) is not None else -1

    def add_or_verify(self, coordinator: int, tid: str, producer_id: int, producer_epoch: int, tps: tuple, add: bool,
                      generic_errors: bool, callback: Callable[[dict], None]) -> None:
        """Ask ``coordinator`` (``coordinator(tid)``) to verify (``add`` false) or add ``tps``; ``callback({tp:
        error})`` with the partitions not verified, now or once the answer is in (addOrVerifyTransaction).
        ``generic_errors``: the asker's request is new enough to be told TRANSACTION_ABORTABLE (not DEFAULT_ERROR);
        it counts if this question opens the coordinator's batch."""
        b = self.broker
        if coordinator < 0:
            callback({tp: Errors.COORDINATOR_NOT_AVAILABLE for tp in tps})
            return
        node = broker_name(coordinator)
        batch = self.pending.get(node)
        if batch is None:
            batch = self.pending[node] = {}
            self.generic_errors[node] = generic_errors      # (computeIfAbsent: the batch's, from its first asker)
        queued = batch.get(tid)
        if queued is not None:
            # addTxnData: one question per transactional id in a batch
            old, old_callback = queued
            if old.producer_epoch > producer_epoch:
                b.narrate(f"{tid!r}: a question about epoch {old.producer_epoch} waits already for {node}; this one (epoch "
                          f"{producer_epoch}) is fenced -> INVALID_PRODUCER_EPOCH")
                callback({tp: Errors.INVALID_PRODUCER_EPOCH for tp in tps})
                return
            error = Errors.INVALID_PRODUCER_EPOCH if old.producer_epoch < producer_epoch else Errors.NETWORK_EXCEPTION
            del batch[tid]
            b.narrate(f"{tid!r}: a newer question replaces the one waiting for {node}; that one is answered "
                      f"{error.name}")
            old_callback({tp: error for tp in old.partitions})
        batch[tid] = (m.AddPartitionsToTxnTransaction(tid, producer_id, producer_epoch, tuple(tps), not add), callback)
        if node in self.in_flight:
            b.narrate(f"an AddPartitionsToTxn to {node} is out: {tid!r} is asked in the next one, with whatever else "
                      f"is asked of {node} until then")
        else:
            self._send(node)

    def _mapped(self, error, generic: bool, tid: str, tp) -> Errors:
        """A coordinator's refusal of ``tp`` as the asker is told it (AddPartitionsToTxnHandler.onComplete)."""
        error = Errors(error)
        if error == Errors.PRODUCER_FENCED:
            return Errors.INVALID_PRODUCER_EPOCH        # "Producers expect to handle INVALID_PRODUCER_EPOCH"
        if error == Errors.TRANSACTION_ABORTABLE and not generic:
            self.broker.narrate(f"{tid!r} {tp[0]}-{tp[1]}: the coordinator answered TRANSACTION_ABORTABLE; the "
                                f"question rode in a batch opened by a request too old for that error, so it is told "
                                f"INVALID_TXN_STATE")
            return Errors.INVALID_TXN_STATE
        return error

    def _send(self, node: str) -> None:
        """Send what waits for ``node`` unless a request to it is out (generateRequests)."""
        if node in self.in_flight:
            return
        batch = self.pending.pop(node, None)
        generic = self.generic_errors.pop(node, True)
        if not batch:
            return
        self.in_flight.add(node)
        b = self.broker

        def answered(resp, err) -> None:
            self.in_flight.discard(node)
            if err is not None:         # disconnected or timed out
                for t, callback in batch.values():
                    callback({tp: Errors.NETWORK_EXCEPTION for tp in t.partitions})
            elif resp.error:
                error = Errors.INVALID_TXN_STATE if resp.error == Errors.CLUSTER_AUTHORIZATION_FAILED \
                    else Errors(resp.error)
                for t, callback in batch.values():
                    callback({tp: error for tp in t.partitions})
            else:
                results = resp.results or {}
                for tid, (t, callback) in batch.items():
                    errors = results.get(tid, {})
                    callback({tp: self._mapped(e, generic, tid, tp) for tp, e in errors.items() if e != _NONE})
            self._send(node)        # what was asked meanwhile
        # AddPartitionsToTxnRequest(transactions=...), by position (a keyword costs the dataclass's __init__ more)
        req = m.AddPartitionsToTxnRequest("", -1, -1, (), tuple([t for t, _ in batch.values()]))
        b.send_request(node, req, answered, timeout_ms=BROKER_REQUEST_TIMEOUT_MS)
