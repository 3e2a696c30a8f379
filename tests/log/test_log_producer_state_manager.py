"""ProducerStateManager / ProducerAppendInfo, driven directly (themes of Kafka's ProducerStateManagerTest)."""
import pytest

from txnlab.log import (AppendOrigin, CompletedTxn, ControlRecordType, ProducerStateManager,
                        RecordBatch, SnapshotEntry)
from txnlab.protocol.errors import Errors

from txnlog_kit import PID, OTHER_PID, data, expect_error

MAX = 2**31 - 1
CLIENT, REPLICATION, COORDINATOR = AppendOrigin.CLIENT, AppendOrigin.REPLICATION, AppendOrigin.COORDINATOR


def append(psm, offset, pid=PID, epoch=0, seq=0, n=1, txn=False, ts=0, origin=CLIENT):
    batch = data(n, pid, epoch, seq, txn, ts).with_base_offset(offset)
    info = psm.prepare_update(pid, origin)
    info.append(batch)
    psm.update(info)
    psm.update_map_end_offset(offset + n)
    return batch


def end_txn(psm, offset, kind="commit", pid=PID, epoch=0, coordinator_epoch=0, tv=0, ts=0,
            origin=COORDINATOR):
    ctype = ControlRecordType.COMMIT if kind == "commit" else ControlRecordType.ABORT
    batch = RecordBatch.control(ctype, pid, epoch, coordinator_epoch, ts).with_base_offset(offset)
    info = psm.prepare_update(pid, origin)
    completed = info.append_end_txn_marker(batch, coordinator_epoch, tv, origin)
    psm.update(info)
    if completed is not None:
        psm.complete_txn(completed)
    psm.update_map_end_offset(offset + 1)
    return completed


@pytest.fixture
def psm():
    return ProducerStateManager("orders-0")


def test_entry_tracks_epoch_sequence_and_offsets(psm):
    append(psm, 0, seq=0, n=2, ts=10)
    append(psm, 2, seq=2, n=3, ts=20)
    entry = psm.last_entry(PID)
    assert (entry.producer_epoch, entry.first_seq, entry.last_seq) == (0, 0, 4)
    assert (entry.first_data_offset, entry.last_data_offset, entry.last_timestamp) == (0, 4, 20)
    assert psm.last_entry(OTHER_PID) is None


def test_duplicate_is_found_only_with_same_epoch_and_exact_sequence_range(psm):
    append(psm, 0, seq=0, n=2)
    append(psm, 2, seq=2, n=2)
    entry = psm.last_entry(PID)
    found = entry.find_duplicate_batch(data(2, seq=0))
    assert (found.first_offset, found.last_offset, found.first_seq, found.last_seq) == (0, 1, 0, 1)
    assert entry.find_duplicate_batch(data(1, seq=0)) is None      # overlapping, not identical
    assert entry.find_duplicate_batch(data(2, seq=0, epoch=1)) is None


def test_only_five_batches_are_cached(psm):
    for i in range(7):
        append(psm, i, seq=i)
    entry = psm.last_entry(PID)
    assert [m.last_seq for m in entry.batch_metadata] == [2, 3, 4, 5, 6]
    assert entry.find_duplicate_batch(data(1, seq=1)) is None


def test_next_sequence_must_follow_the_last_one(psm):
    append(psm, 0, seq=0, n=5)
    append(psm, 5, seq=5)
    error = expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, psm, 6, seq=7)
    assert "expected sequence 6 from producer 4000 epoch 0" in error.message and "got 7" in error.message


def test_sequence_wraps_around_after_int32_max(psm):
    append(psm, 0, seq=MAX - 1, n=2)          # MAX-1, MAX
    append(psm, 2, seq=0, n=3)                # wraps to 0
    assert psm.last_entry(PID).last_seq == 2


def test_invalid_wraparound_is_out_of_order(psm):
    append(psm, 0, seq=0, n=17)                                  # last seq 16
    expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, psm, 17, seq=MAX)
    append(psm, 17, seq=17)
    psm2 = ProducerStateManager("orders-0")
    append(psm2, 0, seq=MAX)
    expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, psm2, 1, seq=1)


def test_unknown_producer_is_accepted_with_any_sequence(psm):
    append(psm, 0, seq=12345)
    append(psm, 1, pid=OTHER_PID, epoch=3, seq=99)
    assert psm.last_entry(PID).last_seq == 12345 and psm.last_entry(OTHER_PID).producer_epoch == 3


def test_unknown_producer_is_unchecked_for_its_whole_first_request(psm):
    # Kafka compares with the STORED entry's epoch: with no state, even a gap inside the
    # first request is accepted.
    info = psm.prepare_update(PID, CLIENT)
    info.append(data(1, seq=100).with_base_offset(0))
    info.append(data(1, seq=500).with_base_offset(1))
    psm.update(info)
    assert psm.last_entry(PID).last_seq == 500
    info = psm.prepare_update(PID, CLIENT)
    info.append(data(1, seq=501).with_base_offset(2))
    expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, info.append, data(1, seq=600).with_base_offset(3))


def test_lower_epoch_is_rejected_for_clients_but_replicated(psm):
    append(psm, 0, epoch=2, seq=0)
    error = expect_error(Errors.INVALID_PRODUCER_EPOCH, append, psm, 1, epoch=1, seq=1)
    assert "epoch 2 is already current" in error.message
    append(psm, 1, epoch=1, seq=1, origin=REPLICATION)  # followers copy what the leader accepted


def test_coordinator_origin_checks_epoch_but_not_sequence(psm):
    append(psm, 0, epoch=1, seq=0)
    append(psm, 1, epoch=1, seq=50, origin=COORDINATOR)
    expect_error(Errors.INVALID_PRODUCER_EPOCH, append, psm, 2, epoch=0, seq=51, origin=COORDINATOR)


def test_new_epoch_must_start_at_sequence_zero(psm):
    append(psm, 0, epoch=0, seq=0, n=3)
    error = expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, psm, 3, epoch=1, seq=3)
    assert "must start at sequence 0" in error.message
    append(psm, 3, epoch=1, seq=0)
    entry = psm.last_entry(PID)
    assert entry.producer_epoch == 1 and len(entry.batch_metadata) == 1
    assert entry.find_duplicate_batch(data(3, seq=0, epoch=0)) is None


def test_transactional_batch_opens_a_transaction_at_its_base_offset(psm):
    append(psm, 0, pid=OTHER_PID)
    append(psm, 1, seq=0, n=2, txn=True)
    append(psm, 3, seq=2, n=2, txn=True)
    assert psm.last_entry(PID).current_txn_first_offset == 1
    assert list(psm.ongoing_txns) == [1] and psm.first_unstable_offset() == 1


def test_non_transactional_append_during_open_transaction_is_invalid_txn_state(psm):
    append(psm, 0, seq=0, txn=True)
    error = expect_error(Errors.INVALID_TXN_STATE, append, psm, 1, seq=1, txn=False)
    assert "transaction open on orders-0 since offset 0" in error.message


def test_marker_completes_txn_and_bumped_epoch_clears_the_batch_cache(psm):
    append(psm, 0, epoch=0, seq=0, n=2, txn=True)
    completed = end_txn(psm, 2, "abort", epoch=1, coordinator_epoch=3, ts=77)
    assert completed == CompletedTxn(PID, 0, 2, True)
    entry = psm.last_entry(PID)
    assert (entry.producer_epoch, entry.coordinator_epoch, entry.last_timestamp) == (1, 3, 77)
    assert entry.current_txn_first_offset is None and entry.is_empty()
    assert not psm.ongoing_txns and list(psm.unreplicated_txns) == [0]


def test_out_of_order_after_marker_epoch_bump(psm):
    append(psm, 0, epoch=0, seq=0, n=2, txn=True)
    end_txn(psm, 2, "commit", epoch=1)
    expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, psm, 3, epoch=1, seq=2, txn=True)
    append(psm, 3, epoch=1, seq=0, txn=True)


def test_tv0_marker_at_same_epoch_keeps_sequences_running(psm):
    append(psm, 0, seq=0, n=2, txn=True)
    end_txn(psm, 2, "commit", epoch=0)
    expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, psm, 3, seq=0, txn=True)
    append(psm, 3, seq=2, txn=True)


def test_marker_without_open_transaction_completes_nothing(psm):
    assert end_txn(psm, 0, "abort", epoch=5, coordinator_epoch=2) is None
    assert psm.last_entry(PID).producer_epoch == 5 and not psm.unreplicated_txns


def test_older_coordinator_epoch_is_fenced(psm):
    append(psm, 0, seq=0, txn=True)
    end_txn(psm, 1, "commit", coordinator_epoch=2)
    append(psm, 2, seq=1, txn=True)
    error = expect_error(Errors.TRANSACTION_COORDINATOR_FENCED, end_txn, psm, 3, "commit", coordinator_epoch=1)
    assert "coordinator epoch 1" in error.message and "zombie coordinator" in error.message
    end_txn(psm, 3, "commit", coordinator_epoch=1, origin=REPLICATION)   # followers only log it


def test_coordinator_fencing_survives_a_snapshot_reload(psm):
    append(psm, 0, seq=0, txn=True)
    end_txn(psm, 1, "commit", coordinator_epoch=4)
    snapshot = psm.take_snapshot(2)
    reloaded = ProducerStateManager("orders-0")
    reloaded.load_snapshot(snapshot)
    append(reloaded, 2, seq=1, txn=True)
    expect_error(Errors.TRANSACTION_COORDINATOR_FENCED, end_txn, reloaded, 3, coordinator_epoch=3)


def test_tv0_marker_with_lower_epoch_is_rejected(psm):
    append(psm, 0, epoch=3, seq=0, txn=True)
    end_txn(psm, 1, epoch=3, tv=0)
    append(psm, 2, epoch=3, seq=1, txn=True)
    expect_error(Errors.INVALID_PRODUCER_EPOCH, end_txn, psm, 3, epoch=2, tv=0)


def test_tv2_marker_must_carry_a_greater_epoch(psm):
    append(psm, 0, epoch=3, seq=0, txn=True)
    error = expect_error(Errors.INVALID_PRODUCER_EPOCH, end_txn, psm, 1, epoch=3, tv=2)
    assert "transaction version 2" in error.message
    assert end_txn(psm, 1, epoch=4, tv=2) == CompletedTxn(PID, 0, 1, False)


def test_tv2_equal_epoch_marker_is_a_retry_when_no_transaction_is_open(psm):
    append(psm, 0, epoch=3, seq=0, txn=True)
    end_txn(psm, 1, epoch=4, tv=2)
    assert end_txn(psm, 2, epoch=4, tv=2) is None                 # KAFKA-19999
    append(psm, 3, epoch=4, seq=0, txn=True)
    expect_error(Errors.INVALID_PRODUCER_EPOCH, end_txn, psm, 4, epoch=4, tv=2)


def test_first_unstable_offset_waits_for_the_high_watermark_to_pass_the_marker(psm):
    append(psm, 0, seq=0, txn=True)
    append(psm, 1, pid=OTHER_PID, seq=0, txn=True)
    assert psm.first_unstable_offset() == 0
    end_txn(psm, 2, "commit")
    assert psm.first_unstable_offset() == 0 and psm.first_undecided_offset() == 1
    psm.on_high_watermark_updated(2)                   # marker at 2 is not below the HW yet
    assert psm.first_unstable_offset() == 0
    psm.on_high_watermark_updated(3)
    assert psm.first_unstable_offset() == 1


def test_unreplicated_transactions_stay_ordered_by_first_offset(psm):
    append(psm, 0, seq=0, txn=True)
    append(psm, 1, pid=OTHER_PID, seq=0, txn=True)
    end_txn(psm, 2, "abort", pid=OTHER_PID)
    end_txn(psm, 3, "abort", pid=PID)
    assert list(psm.unreplicated_txns) == [0, 1]
    psm.on_high_watermark_updated(3)                   # only OTHER_PID's marker (2) is below 3
    assert list(psm.unreplicated_txns) == [0] and psm.first_unstable_offset() == 0


def test_last_stable_offset_of_a_completed_txn_is_the_earliest_other_open_txn(psm):
    append(psm, 0, seq=0, txn=True)
    append(psm, 1, pid=OTHER_PID, seq=0, txn=True)
    assert psm.last_stable_offset(CompletedTxn(OTHER_PID, 1, 2, True)) == 0
    assert psm.last_stable_offset(CompletedTxn(PID, 0, 2, True)) == 1
    alone = ProducerStateManager("orders-0")
    append(alone, 0, seq=0, txn=True)
    assert alone.last_stable_offset(CompletedTxn(PID, 0, 5, True)) == 6


def test_completing_an_unknown_transaction_is_a_bug(psm):
    with pytest.raises(ValueError):
        psm.complete_txn(CompletedTxn(PID, 42, 43, False))


def test_snapshot_keeps_only_the_last_batch_per_producer(psm):
    for i in range(4):
        append(psm, i * 2, seq=i * 2, n=2, ts=100 + i)
    snapshot = psm.take_snapshot()
    assert snapshot.offset == 8
    assert snapshot.entries == (SnapshotEntry(PID, 0, 7, 7, 1, 103, -1, None),)
    reloaded = ProducerStateManager("orders-0")
    reloaded.load_snapshot(snapshot)
    entry = reloaded.last_entry(PID)
    assert len(entry.batch_metadata) == 1 and entry.last_seq == 7
    assert entry.find_duplicate_batch(data(2, seq=6)) is not None
    assert entry.find_duplicate_batch(data(2, seq=4)) is None
    assert reloaded.map_end_offset == 8


def test_snapshot_restores_open_transactions_in_offset_order(psm):
    append(psm, 0, pid=OTHER_PID, seq=0, txn=True)
    append(psm, 1, pid=PID, seq=0, txn=True)
    append(psm, 2, pid=3000, seq=0, txn=True)
    reloaded = ProducerStateManager("orders-0")
    reloaded.load_snapshot(psm.take_snapshot())
    assert list(reloaded.ongoing_txns) == [0, 1, 2]
    assert [t.producer_id for t in reloaded.ongoing_txns.values()] == [OTHER_PID, PID, 3000]
    assert reloaded.first_unstable_offset() == 0


def test_snapshot_is_written_once_per_offset(psm):
    append(psm, 0)
    first = psm.take_snapshot()
    assert psm.take_snapshot() is first and psm.snapshot_offsets == [1]
    assert ProducerStateManager("x").take_snapshot() is None      # nothing to write at offset 0


def test_truncate_and_reload_uses_the_newest_snapshot_in_range(psm):
    for i in range(9):
        append(psm, i, seq=i)
        if i in (2, 5, 8):
            psm.take_snapshot()
    assert psm.snapshot_offsets == [3, 6, 9]
    psm.truncate_and_reload(0, 7)
    assert psm.snapshot_offsets == [3, 6] and psm.map_end_offset == 6
    assert psm.last_entry(PID).last_seq == 5


def test_expired_producers_are_removed_and_then_accept_any_sequence():
    psm = ProducerStateManager("orders-0", producer_id_expiration_ms=1000)
    append(psm, 0, seq=0, ts=500)
    assert psm.remove_expired_producers(1499) == [] and psm.last_entry(PID) is not None
    assert psm.remove_expired_producers(1500) == [PID] and psm.last_entry(PID) is None
    append(psm, 1, seq=77, ts=2000)                    # a very late retry would be accepted too


def test_producer_with_open_transaction_never_expires():
    psm = ProducerStateManager("orders-0", producer_id_expiration_ms=1000)
    append(psm, 0, seq=0, txn=True, ts=0)
    assert psm.remove_expired_producers(10**9) == []
    end_txn(psm, 1, "commit", ts=10)
    assert psm.remove_expired_producers(10**9) == [PID]


def test_loading_a_snapshot_with_a_clock_drops_expired_producers():
    psm = ProducerStateManager("orders-0", producer_id_expiration_ms=1000)
    append(psm, 0, pid=PID, seq=0, ts=0)
    append(psm, 1, pid=OTHER_PID, seq=0, ts=900, txn=False)
    snapshot = psm.take_snapshot()
    reloaded = ProducerStateManager("orders-0", producer_id_expiration_ms=1000)
    reloaded.load_snapshot(snapshot, now=1500)
    assert list(reloaded.producers) == [OTHER_PID]


def test_late_transaction_is_detected_after_timeout_plus_five_minutes(psm):
    append(psm, 0, seq=0, txn=True, ts=1000)
    assert not psm.has_late_transaction(1000 + 60_000 + 300_000, max_transaction_timeout_ms=60_000)
    assert psm.has_late_transaction(1001 + 60_000 + 300_000, max_transaction_timeout_ms=60_000)


def test_verification_state_rejects_a_sequence_above_the_lowest_seen(psm):
    entry = psm.maybe_create_verification_state_entry(PID, 5, 0, now=0)
    psm.maybe_create_verification_state_entry(PID, 3, 0, now=1)
    assert entry.lowest_sequence == 3 and psm.verification_state_entry(PID) is entry
    error = expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, psm, 0, seq=4, txn=True)
    assert "lowest sequence seen" in error.message
    append(psm, 0, seq=3, txn=True)
