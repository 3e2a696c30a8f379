"""The transaction APIs (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, WriteTxnMarkers, TxnOffsetCommit) and the admin APIs that describe transactions and producers."""
from __future__ import annotations

from typing import Optional

from ..message_base import committed_str, tp_str, _err, tps_str, message


# ------------------------------------------------------------ transactions
@message
class AddPartitionsToTxnTransaction:
    """One transaction of a partition leader's AddPartitionsToTxn (v4+, KIP-890): verify that ``partitions`` are in
    it, or (``verify_only`` false: transaction.version 2) add them on the producer's behalf."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple                   # (tp, ...)
    verify_only: bool = True

    def describe(self) -> str:
        v = " verify-only" if self.verify_only else ""
        return f"{self.transactional_id!r} pid {self.producer_id} epoch {self.producer_epoch}{v}: {tps_str(self.partitions)}"


@message
class AddPartitionsToTxnRequest:
    """A producer's (v0-3: one transaction, its fields) or a partition leader's (v4+: ``transactions``, a batch of
    transactions whose coordinator is the receiver: Kafka's AddPartitionsToTxnManager; only brokers send it)."""
    API = "AddPartitionsToTxn"
    API_KEY = 24
    transactional_id: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    partitions: tuple = ()              # (tp, ...)
    transactions: tuple = ()            # (AddPartitionsToTxnTransaction, ...): v4+, a broker's

    def describe(self) -> str:
        if self.transactions:
            return "; ".join(t.describe() for t in self.transactions)
        return f"{self.transactional_id!r} pid {self.producer_id} epoch {self.producer_epoch}: {tps_str(self.partitions)}"


@message
class AddPartitionsToTxnResponse:
    errors: dict                        # tp -> error (v0-3)
    results: Optional[dict] = None      # v4+: transactional id -> {tp: error}
    error: int = 0                      # v4+: the request's own error (CLUSTER_AUTHORIZATION_FAILED)

    def describe(self) -> str:
        if self.error:
            return _err(self.error)
        if self.results is not None:
            return "; ".join(f"{tid!r} {_errors(errs)}" for tid, errs in self.results.items())
        return _errors(self.errors)


def _errors(errors: dict) -> str:
    if {e for e in errors.values()} <= {0}:
        return "ok"
    return ", ".join(f"{tp_str(tp)} {_err(e)}" for tp, e in sorted(errors.items()))


@message
class AddOffsetsToTxnRequest:
    API = "AddOffsetsToTxn"
    API_KEY = 25
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str

    def describe(self) -> str:
        return f"{self.transactional_id!r} pid {self.producer_id} epoch {self.producer_epoch} group {self.group_id!r}"


@message
class AddOffsetsToTxnResponse:
    error: int

    def describe(self) -> str:
        return _err(self.error)


@message
class EndTxnRequest:
    API = "EndTxn"
    API_KEY = 26
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    # the transaction protocol the client speaks: 2 for EndTxn v5+ (KIP-890 part 2), 0 for an older EndTxn
    # (Kafka's TransactionVersion.transactionVersionForEndTxn); -1: the one the cluster finalized (the lab's clients)
    transaction_version: int = -1

    def describe(self) -> str:
        return (f"{'COMMIT' if self.committed else 'ABORT'} {self.transactional_id!r} "
                f"pid {self.producer_id} epoch {self.producer_epoch}")


@message
class EndTxnResponse:
    error: int
    producer_id: int = -1               # TV2 (v5+): the pid/epoch to use next
    producer_epoch: int = -1

    def describe(self) -> str:
        s = _err(self.error)
        if self.producer_id >= 0 and not self.error:
            s += f", next pid {self.producer_id} epoch {self.producer_epoch}"
        return s


@message
class TxnMarkerEntry:
    producer_id: int
    producer_epoch: int
    transaction_result: bool            # True = COMMIT
    partitions: tuple                   # (tp, ...)
    coordinator_epoch: int
    transaction_version: int = 0


@message
class WriteTxnMarkersRequest:
    API = "WriteTxnMarkers"
    API_KEY = 27
    markers: tuple                      # (TxnMarkerEntry, ...)

    def describe(self) -> str:
        return "; ".join(f"{'COMMIT' if m.transaction_result else 'ABORT'} pid {m.producer_id} epoch "
                         f"{m.producer_epoch} coordinatorEpoch {m.coordinator_epoch} -> {tps_str(m.partitions)}"
                         for m in self.markers)


@message
class WriteTxnMarkersResponse:
    markers: dict                       # producer_id -> {tp: error}

    def describe(self) -> str:
        out = []
        for pid, errs in self.markers.items():
            bad = {tp: e for tp, e in errs.items() if e}
            out.append(f"pid {pid}: " + ("ok" if not bad else ", ".join(f"{tp_str(tp)} {_err(e)}" for tp, e in bad.items())))
        return "; ".join(out)


@message
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
    offsets: dict                       # tp -> (offset, leader epoch (v2+, -1: none), metadata), as in OffsetCommit
    # the TxnOffsetCommit version the client sent, which says what the group coordinator's KIP-890 check may do
    # (Kafka's AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation): v5+ adds
    # the group's offsets partition to the transaction (transaction.version 2), v4 only verifies it and understands
    # TRANSACTION_ABORTABLE, v3 and older (librdkafka's) neither.  -1: the newest the cluster's transaction.version
    # lets a client send (5 with transaction.version 2, else 4: the Java client's TxnOffsetCommitRequest.Builder)
    api_version: int = -1

    def describe(self) -> str:
        return (f"{self.transactional_id!r} group {self.group_id!r} pid {self.producer_id} epoch {self.producer_epoch} "
                + committed_str(self.offsets))


@message
class TxnOffsetCommitResponse:
    errors: dict                        # tp -> error

    def describe(self) -> str:
        return ", ".join(f"{tp_str(tp)} {_err(e)}" for tp, e in sorted(self.errors.items()))


# ------------------------------------------------------------------ admin
@message
class DescribeProducersRequest:
    API = "DescribeProducers"
    API_KEY = 61
    partitions: tuple

    def describe(self) -> str:
        return tps_str(self.partitions)


@message
class DescribeProducersResponse:
    partitions: dict                    # tp -> (error, [dict])

    def describe(self) -> str:
        return ", ".join(f"{tp_str(tp)}: {len(ps)} producer(s)" for tp, (e, ps) in sorted(self.partitions.items()))


@message
class DescribeTransactionsRequest:
    API = "DescribeTransactions"
    API_KEY = 65
    transactional_ids: tuple

    def describe(self) -> str:
        return ", ".join(repr(t) for t in self.transactional_ids)


@message
class DescribeTransactionsResponse:
    transaction_states: tuple           # (dict, ...)

    def describe(self) -> str:
        return ", ".join(f"{d['transactional_id']!r} {d.get('state', _err(d['error']))}" for d in self.transaction_states)


@message
class ListTransactionsRequest:
    API = "ListTransactions"
    API_KEY = 66
    state_filters: tuple = ()
    producer_id_filters: tuple = ()
    duration_filter: int = -1           # ms (v1+): only transactions running longer than this; < 0: all

    def describe(self) -> str:
        return "all" if not (self.state_filters or self.producer_id_filters or self.duration_filter >= 0) \
            else "filtered"


@message
class ListTransactionsResponse:
    error: int
    transaction_states: tuple = ()      # ((transactional_id, producer_id, state), ...)
    unknown_state_filters: tuple = ()   # state filters the coordinator does not know

    def describe(self) -> str:
        return f"{len(self.transaction_states)} transaction(s)"
