"""Kafka's log layer for one partition replica: record batches, ``UnifiedLog``,
``ProducerStateManager`` (idempotence and transactions), the aborted-transaction
index and the leader epoch cache."""
from .leader_epoch_cache import EpochEntry, LeaderEpochFileCache
from .producer_state import (NUM_BATCHES_TO_RETAIN, AppendOrigin, BatchMetadata, CompletedTxn,
                             ProducerAppendInfo, ProducerStateEntry, ProducerStateManager,
                             ProducerStateSnapshot, SnapshotEntry, TxnMetadata)
from ..protocol.record_batch import (NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE,
                           ControlRecordType, Record, RecordBatch)
from .txn_index import AbortedTxn, TransactionIndex
from .unified_log import LogAppendInfo, ProducerDescription, UnifiedLog
from .verification import VerificationGuard, VerificationStateEntry

__all__ = [
    "AbortedTxn", "AppendOrigin", "BatchMetadata", "CompletedTxn", "ControlRecordType", "EpochEntry",
    "LeaderEpochFileCache", "LogAppendInfo", "NO_PARTITION_LEADER_EPOCH", "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID", "NO_SEQUENCE", "NUM_BATCHES_TO_RETAIN", "ProducerAppendInfo",
    "ProducerDescription", "ProducerStateEntry", "ProducerStateManager", "ProducerStateSnapshot",
    "Record", "RecordBatch", "SnapshotEntry", "TransactionIndex", "TxnMetadata", "UnifiedLog",
    "VerificationGuard", "VerificationStateEntry",
]
