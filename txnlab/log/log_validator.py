"""Kafka's ``LogValidator`` (with the request-level checks of a leader's append): whether a produce request's or a
coordinator's batches may enter a partition leader's log, before offsets are assigned."""
from __future__ import annotations

from collections.abc import Sequence

from txnlab.protocol.errors import Errors, ProtocolError

from .producer_state import AppendOrigin
from ..protocol.record_batch import RecordBatch

_CLIENT = AppendOrigin.CLIENT


def validate_leader_batches(batches: Sequence[RecordBatch], origin: AppendOrigin, tp: str, max_message_bytes: int,
                            segment_bytes: int) -> int:
    """Raise the first rule a batch breaks (of partition ``tp``); returns the batches' total size."""
    total = 0
    txn_pid = None
    for batch in batches:
        if not batch.record_count:
            raise ProtocolError(Errors.INVALID_RECORD, f"a record batch with no records was sent to {tp}")
        size = batch._size or batch.size_in_bytes      # (the property, without its call when known)
        if size > max_message_bytes:
            raise ProtocolError(Errors.MESSAGE_TOO_LARGE,
                                f"a batch of {size} bytes is larger than max.message.bytes="
                                f"{max_message_bytes} of {tp}")
        if origin is _CLIENT:
            if batch.is_control:
                raise ProtocolError(Errors.INVALID_RECORD,
                                    f"clients are not allowed to write control records to {tp}: "
                                    f"COMMIT/ABORT markers come only from the transaction coordinator")
            if batch.producer_id >= 0 and batch.base_sequence < 0:
                raise ProtocolError(Errors.INVALID_RECORD,
                                    f"batch from producer {batch.producer_id} to {tp} has sequence "
                                    f"{batch.base_sequence}: an idempotent producer must number its batches")
        if batch.is_transactional and batch.producer_id >= 0:
            if txn_pid is None:
                txn_pid = batch.producer_id
            elif txn_pid != batch.producer_id:
                raise ProtocolError(Errors.INVALID_PRODUCER_ID_MAPPING,
                                    f"transactional batches to {tp} carry more than one producer id "
                                    f"({txn_pid} and {batch.producer_id})")
        total += size
    if total > segment_bytes:
        raise ProtocolError(Errors.RECORD_LIST_TOO_LARGE,
                            f"the request's {total} bytes do not fit in one segment "
                            f"(segment.bytes={segment_bytes}) of {tp}")
    return total
