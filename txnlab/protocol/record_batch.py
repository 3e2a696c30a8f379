"""Record batches are part of the wire protocol; the implementation lives with the log for now."""
from ..log.record_batch import (NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, ControlRecordType,  # noqa: F401
                                Record, RecordBatch)
