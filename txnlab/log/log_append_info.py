"""What the log answers: ``LogAppendInfo`` (an append, Kafka's class of that name) and ``ProducerDescription`` (a
row of DescribeProducers)."""
from __future__ import annotations

from typing import NamedTuple

from ..protocol.record_batch import NO_TIMESTAMP


class LogAppendInfo(NamedTuple):
    """What an append did (Kafka's ``LogAppendInfo``, the fields a Produce response needs).

    For a duplicate, the offsets and ``log_append_time`` are those of the ORIGINAL batch (its cached
    timestamp, as Kafka answers) and nothing was appended; ``num_records`` counts the records offered."""
    first_offset: int
    last_offset: int
    log_append_time: int = NO_TIMESTAMP
    duplicate: bool = False
    num_records: int = 0
    num_batches: int = 0
    log_start_offset: int = 0


class ProducerDescription(NamedTuple):
    """One row of a DescribeProducers answer."""
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int  # -1 when no transaction is open
