"""UnifiedLog.append_as_leader for idempotent producers: dedup window, sequences, epochs, validation."""
from txnlab.log import ControlRecordType, Record, RecordBatch
from txnlab.protocol.errors import Errors

from txnlog_kit import (ONE_RECORD_SIZE, OTHER_PID, PID, append, data, expect_error, new_log,
                        offsets, plain)


def test_in_cache_duplicate_returns_original_offsets_and_appends_nothing():
    log = new_log()
    append(log, data(3, seq=0, ts=11))
    append(log, data(2, seq=3, ts=12))
    info = append(log, data(3, seq=0, ts=11))
    assert info.duplicate and (info.first_offset, info.last_offset) == (0, 2)
    assert info.log_append_time == 11                    # Kafka answers with the cached timestamp
    assert log.log_end_offset == 5 and offsets(log) == [(0, 2), (3, 4)]


def test_each_of_the_last_five_batches_is_recognised_but_not_an_older_one():
    log = new_log()
    for seq in range(6):
        append(log, data(1, seq=seq))
    for seq in range(1, 6):
        info = append(log, data(1, seq=seq))
        assert info.duplicate and info.first_offset == seq
    error = expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, log, data(1, seq=0))
    assert "last 5 batches" in error.message
    assert log.log_end_offset == 6


def test_sequence_gap_is_out_of_order_and_nothing_is_appended():
    log = new_log()
    append(log, data(2, seq=0))
    error = expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, log, data(1, seq=5))
    assert error.message.startswith("expected sequence 2 from producer 4000 epoch 0")
    assert "gap" in error.message and log.log_end_offset == 2


def test_fenced_epoch_is_rejected_even_for_a_retry_of_a_written_batch():
    log = new_log()
    append(log, data(1, epoch=0, seq=0))
    append(log, data(1, epoch=1, seq=0))
    expect_error(Errors.INVALID_PRODUCER_EPOCH, append, log, data(1, epoch=0, seq=0))
    expect_error(Errors.INVALID_PRODUCER_EPOCH, append, log, data(1, epoch=0, seq=1))
    assert log.log_end_offset == 2


def test_newer_epoch_needs_sequence_zero():
    log = new_log()
    append(log, data(4, epoch=0, seq=0))
    expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, log, data(1, epoch=1, seq=4))
    assert append(log, data(1, epoch=1, seq=0)).first_offset == 4


def test_unknown_producer_is_accepted_with_any_sequence():
    log = new_log()
    assert append(log, data(2, seq=1_000)).first_offset == 0
    assert append(log, data(1, pid=OTHER_PID, epoch=7, seq=42)).first_offset == 2


def test_a_request_is_validated_batch_after_batch():
    log = new_log()
    info = append(log, data(2, seq=0), data(2, seq=2))
    assert (info.first_offset, info.last_offset, info.num_records, info.num_batches) == (0, 3, 4, 2)
    expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, log, data(1, seq=4), data(1, seq=6))
    assert log.log_end_offset == 4


def test_append_is_all_or_nothing():
    log = new_log()
    append(log, data(1, pid=OTHER_PID, epoch=2, seq=0))
    expect_error(Errors.INVALID_PRODUCER_EPOCH, append, log, data(1, pid=PID, seq=0),
                 data(1, pid=OTHER_PID, epoch=1, seq=1))
    assert log.log_end_offset == 1 and log.producer_state.last_entry(PID) is None
    assert not append(log, data(1, pid=PID, seq=0)).duplicate


def test_non_idempotent_batches_are_never_deduplicated():
    log = new_log()
    append(log, plain(2))
    append(log, plain(2))
    assert offsets(log) == [(0, 1), (2, 3)] and log.producer_state.producers == {}


def test_no_dedup_mutation_turns_a_retry_into_out_of_order():
    log = new_log()
    log.mutations.add("no-dedup")
    append(log, data(1, seq=0))
    expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, log, data(1, seq=0))
    log.mutations.add("no-sequence-check")
    assert not append(log, data(1, seq=0)).duplicate
    assert offsets(log) == [(0, 0), (1, 1)]                  # the duplicate is now in the log


def test_leader_assigns_offsets_and_epoch_without_touching_the_client_batch():
    log = new_log()
    sent = data(3, seq=0)
    append(log, plain(2))
    append(log, sent, leader_epoch=7)
    stored = log.batches[-1]
    assert (stored.base_offset, stored.partition_leader_epoch) == (2, 7)
    assert stored.records is sent.records and sent.base_offset == -1
    assert log.latest_epoch == 7


def test_create_time_keeps_record_timestamps_and_log_append_time_overrides_them():
    created = new_log()
    info = created.append_as_leader([data(2, seq=0, ts=5)], 0, now=900)
    assert info.log_append_time == -1 and created.batches[0].max_timestamp == 5
    stamped = new_log(**{"message.timestamp.type": "LogAppendTime"})
    info = stamped.append_as_leader([data(2, seq=0, ts=5)], 0, now=900)
    assert info.log_append_time == 900 and stamped.batches[0].max_timestamp == 900
    assert stamped.producer_state.last_entry(PID).last_timestamp == 900


def test_malformed_batches_are_invalid_records():
    log = new_log()
    expect_error(Errors.INVALID_RECORD, append, log, RecordBatch((), PID, 0, 0))
    marker = RecordBatch.control(ControlRecordType.COMMIT, PID, 0, 0, 0)
    error = expect_error(Errors.INVALID_RECORD, append, log, marker)
    assert "control records" in error.message
    expect_error(Errors.INVALID_RECORD, append, log, RecordBatch((Record(b"k", b"v"),), PID, 0, -1))
    assert log.log_end_offset == 0


def test_size_limits():
    log = new_log(**{"max.message.bytes": ONE_RECORD_SIZE, "segment.bytes": 3 * ONE_RECORD_SIZE})
    expect_error(Errors.MESSAGE_TOO_LARGE, append, log, data(2, seq=0))
    expect_error(Errors.RECORD_LIST_TOO_LARGE, append, log, *[data(1, seq=i) for i in range(4)])
    assert append(log, *[data(1, seq=i) for i in range(3)]).last_offset == 2


def test_transactional_batches_of_two_producers_in_one_request_are_rejected():
    log = new_log()
    expect_error(Errors.INVALID_PRODUCER_ID_MAPPING, append, log,
                 data(1, pid=PID, txn=True), data(1, pid=OTHER_PID, txn=True))
    assert log.log_end_offset == 0
