"""RecordBatch: header arithmetic, sequence wraparound, control records, cheap copies."""
from txnlab.log import ControlRecordType, Record, RecordBatch
from txnlab.protocol.record_batch import decrement_sequence, increment_sequence

from txnlog_kit import data, plain

MAX = 2**31 - 1


def test_offsets_are_derived_from_base_offset_and_record_count():
    batch = data(5).with_base_offset(3)
    assert (batch.record_count, batch.last_offset_delta) == (5, 4)
    assert (batch.base_offset, batch.last_offset, batch.next_offset) == (3, 7, 8)


def test_last_sequence_wraps_past_int32_max_to_zero():
    assert data(5, seq=0).last_sequence == 4
    assert data(4, seq=MAX - 1).last_sequence == 1        # MAX-1, MAX, 0, 1
    assert data(3, seq=MAX - 1).last_sequence == 0
    assert data(1, seq=MAX).last_sequence == MAX
    assert plain(4).last_sequence == -1                  # no sequence -> none


def test_sequence_helpers_are_inverse():
    for seq, delta in [(0, 0), (5, 3), (MAX, 1), (MAX - 2, 7), (1, 4)]:
        assert decrement_sequence(increment_sequence(seq, delta), delta) == seq


def test_timestamps_and_size_are_cached_estimates():
    batch = RecordBatch((Record(b"kk", b"vvv", (("h", b"x"),), 7), Record(None, b"v", (), 9)))
    assert batch.base_timestamp == 7 and batch.max_timestamp == 9
    assert batch.size_in_bytes == 61 + 2 * 10 + (2 + 3 + 1 + 1) + 1
    assert batch.with_base_offset(10).size_in_bytes == batch.size_in_bytes


def test_log_append_time_overrides_record_timestamps():
    batch = data(3, ts=5).with_base_offset(0, 1, log_append_time=1234)
    assert batch.max_timestamp == 1234 and batch.base_timestamp == 1234


def test_with_base_offset_shares_records_and_leaves_original_untouched():
    original = data(2, seq=7, txn=True)
    placed = original.with_base_offset(40, partition_leader_epoch=3)
    assert placed.records is original.records
    assert (placed.base_offset, placed.partition_leader_epoch) == (40, 3)
    assert (original.base_offset, original.partition_leader_epoch) == (-1, -1)
    assert placed.producer_id == 4000 and placed.base_sequence == 7 and placed.is_transactional


def test_with_sequence_stamps_producer_fields():
    stamped = plain(3).with_sequence(4000, 2, 10, True)
    assert (stamped.producer_id, stamped.producer_epoch, stamped.base_sequence) == (4000, 2, 10)
    assert stamped.is_transactional and stamped.has_producer_id and stamped.last_sequence == 12
    assert not plain(1).has_producer_id


def test_control_batch_encodes_type_and_coordinator_epoch():
    commit = RecordBatch.control(ControlRecordType.COMMIT, 4000, 1, 7, 99)
    assert commit.is_control and commit.is_transactional and commit.base_sequence == -1
    assert commit.record_count == 1
    assert commit.records[0].key == b"\x00\x00\x00\x01"
    assert commit.records[0].value == b"\x00\x00\x00\x00\x00\x07"
    assert commit.control_type is ControlRecordType.COMMIT and commit.coordinator_epoch == 7
    assert commit.max_timestamp == 99
    abort = RecordBatch.control(ControlRecordType.ABORT, 4000, 1, 0, 99)
    assert abort.control_type is ControlRecordType.ABORT


def test_data_batches_have_no_control_fields_and_unknown_types_decode_as_unknown():
    assert data(1).control_type is None and data(1).coordinator_epoch is None
    odd = RecordBatch((Record(b"\x00\x00\x00\x09", b"\x00\x00\x00\x00\x00\x01"),), 1, 0, -1, True, True)
    assert odd.control_type is ControlRecordType.UNKNOWN


def test_describe_is_short_and_stable():
    assert repr(data(5, seq=0, txn=True).with_base_offset(3)) == \
        "batch[offsets 3..7 pid=4000 epoch=0 seq=0..4 txn]"
    assert plain(2).with_base_offset(0).describe() == "batch[offsets 0..1]"
    assert data(2).describe() == "batch[unassigned, 2 records pid=4000 epoch=0 seq=0..1]"
    marker = RecordBatch.control(ControlRecordType.COMMIT, 4000, 0, 1, 5).with_base_offset(8)
    assert marker.describe() == "COMMIT marker[offset 8 pid=4000 epoch=0 coordinatorEpoch=1]"


def test_equality_compares_values():
    assert data(2, seq=3).with_base_offset(1) == data(2, seq=3).with_base_offset(1)
    assert data(2, seq=3).with_base_offset(1) != data(2, seq=4).with_base_offset(1)
    assert data(2).with_base_offset(1) != data(2).with_base_offset(2)
    assert len({data(1).with_base_offset(0), data(1).with_base_offset(0)}) == 1
