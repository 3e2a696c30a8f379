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
(CLUSTER_AUTHORIZATION_FAILED becomes INVALID_TXN_STATE: "the client should not be exposed to it").  The rest of
AddPartitionsToTxnHandler's mapping (PRODUCER_FENCED to INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE to
INVALID_TXN_STATE for an old request) and what a Produce or a TxnOffsetCommit answers for each error is the asker's
(``produce.verification_error``, ``group_offsets.verification_error``), which narrates what the coordinator said.
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
    __slots__ = ("broker", "pending", "in_flight")

    def __init__(self, broker) -> None:
        self.broker = broker
        # coordinator's node name -> {transactional id: (AddPartitionsToTxnTransaction, callback)}, in the order asked
        self.pending: dict = {}
        self.in_flight: set = set()      # the coordinators a request is out to (inflightNodes)

    def coordinator(self, tid: str) -> int:
        """The live broker that leads ``tid``'s __transaction_state partition, -1 if none (getTransactionCoordinator)."""
        b = self.broker
        leader = b.metadata.leader((TRANSACTION_STATE_TOPIC,
                                    partition_for(tid, b.config["transaction.state.log.num.partitions"])))
        return leader if leader >= 0 and b.metadata.alive_broker_epoch(leader) is not None else -1

    def add_or_verify(self, coordinator: int, tid: str, producer_id: int, producer_epoch: int, tps: tuple, add: bool,
                      callback: Callable[[dict], None]) -> None:
        """Ask ``coordinator`` (``coordinator(tid)``) to verify (``add`` false) or add ``tps``; ``callback({tp:
        error})`` with the partitions not verified, now or once the answer is in (addOrVerifyTransaction)."""
        b = self.broker
        if coordinator < 0:
            callback({tp: Errors.COORDINATOR_NOT_AVAILABLE for tp in tps})
            return
        node = broker_name(coordinator)
        batch = self.pending.get(node)
        if batch is None:
            batch = self.pending[node] = {}
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

    def _send(self, node: str) -> None:
        """Send what waits for ``node`` unless a request to it is out (generateRequests)."""
        if node in self.in_flight:
            return
        batch = self.pending.pop(node, None)
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
                    callback({tp: e for tp, e in errors.items() if e != _NONE})
            self._send(node)        # what was asked meanwhile
        # AddPartitionsToTxnRequest(transactions=...), by position (a keyword costs the dataclass's __init__ more)
        req = m.AddPartitionsToTxnRequest("", -1, -1, (), tuple([t for t, _ in batch.values()]))
        b.send_request(node, req, answered, timeout_ms=BROKER_REQUEST_TIMEOUT_MS)
