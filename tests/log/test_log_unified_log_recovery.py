"""UnifiedLog across crashes, clean shutdowns, segment rolls and truncation; epochs and expiry."""
import pytest

from txnlab.log import AbortedTxn, ProducerDescription
from txnlab.protocol.errors import Errors

from txnlog_kit import (ONE_RECORD_SIZE, OTHER_PID, PID, append, data, expect_error, marker,
                        new_log, offsets, plain)

THREE_BATCH_SEGMENTS = {"segment.bytes": 3 * ONE_RECORD_SIZE}


def five_batches(log):
    for seq in range(5):
        append(log, data(1, seq=seq))


def test_segments_roll_when_full_and_snapshot_at_the_new_base_offset():
    log = new_log(**THREE_BATCH_SEGMENTS)
    for seq in range(7):
        append(log, data(1, seq=seq))
    assert log.segments == [(0, 3, 3 * ONE_RECORD_SIZE), (3, 3, 3 * ONE_RECORD_SIZE), (6, 1, ONE_RECORD_SIZE)]
    assert log.snapshot_offsets == [3, 6]
    assert log.producer_state.snapshots[6].entries[0].last_sequence == 5


def test_after_clean_shutdown_only_the_last_batch_is_deduplicated():
    log = new_log()
    five_batches(log)
    log.close()
    log.recover()
    assert log.snapshot_offsets == [5]
    assert append(log, data(1, seq=4)).duplicate
    error = expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, log, data(1, seq=3))
    assert "expected sequence 5" in error.message
    assert append(log, data(1, seq=5)).first_offset == 5


def test_after_hard_crash_without_snapshots_the_replayed_batches_are_deduplicated():
    log = new_log()
    five_batches(log)
    log.crash()
    log.recover()
    info = append(log, data(1, seq=0))
    assert info.duplicate and info.first_offset == 0


def test_after_hard_crash_the_window_is_the_snapshot_batch_plus_the_replayed_ones():
    log = new_log(**THREE_BATCH_SEGMENTS)
    five_batches(log)                                   # roll + snapshot at offset 3
    log.crash()
    log.recover()                                       # snapshot 3 (seq 2) + replay seq 3, 4
    assert [append(log, data(1, seq=s)).first_offset for s in (2, 3, 4)] == [2, 3, 4]
    expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, log, data(1, seq=1))
    assert log.snapshot_offsets == [3, 5]               # recovery snapshots at the log end
    log.crash()
    log.recover()
    expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, log, data(1, seq=3))
    assert append(log, data(1, seq=4)).duplicate


def test_crash_loses_memory_but_keeps_the_disk():
    log = new_log()
    append(log, data(2, seq=0, txn=True))
    marker(log, "abort")
    log.update_high_watermark(3)
    log.crash()
    assert not log.is_online and log.producer_state.producers == {}
    with pytest.raises(RuntimeError):
        append(log, plain(1))
    with pytest.raises(RuntimeError):
        log.read(0, 3)
    assert log.log_end_offset == 3 and len(log.batches) == 2 and len(log.txn_index) == 1


def test_high_watermark_comes_back_from_its_checkpoint_clamped_to_the_log_end():
    log = new_log()
    for _ in range(4):
        append(log, plain(1))
    log.update_high_watermark(2)
    log.checkpoint_high_watermark()
    log.update_high_watermark(4)
    log.crash()
    log.recover()
    assert log.high_watermark == 2
    log.update_high_watermark(4)
    log.close()                                         # a clean shutdown checkpoints the HW
    log.recover()
    assert log.high_watermark == 4
    log.truncate_to(1)
    log.crash()
    log.recover()
    assert log.high_watermark == 1 and log.high_watermark_checkpoint == 4


@pytest.mark.parametrize("shutdown", ["close", "crash"])
def test_recovery_with_an_unfinished_transaction_keeps_it_open(shutdown):
    log = new_log()
    append(log, plain(1))
    append(log, data(2, seq=0, txn=True))               # 1..2
    log.update_high_watermark(3)
    log.checkpoint_high_watermark()
    getattr(log, shutdown)()
    log.recover()
    assert log.first_unstable_offset == 1 and log.last_stable_offset == 1
    assert log.describe_producers()[0].current_txn_start_offset == 1
    assert marker(log, "abort") == 3
    assert log.txn_index.all() == [AbortedTxn(PID, 1, 3, 4)]
    log.update_high_watermark(4)
    assert log.last_stable_offset == 4


@pytest.mark.parametrize("shutdown", ["close", "crash"])
def test_recovery_with_a_finished_transaction_leaves_nothing_open(shutdown):
    log = new_log()
    append(log, data(2, seq=0, txn=True))
    marker(log, "commit", coordinator_epoch=1)
    log.update_high_watermark(3)
    log.checkpoint_high_watermark()
    getattr(log, shutdown)()
    log.recover()
    assert log.producer_state.ongoing_txns == {} and log.first_unstable_offset is None
    assert log.last_stable_offset == 3
    assert append(log, data(1, seq=2)).first_offset == 3        # TV0: sequences continue


@pytest.mark.parametrize("shutdown", ["close", "crash"])
def test_recovery_with_an_empty_transaction_remembers_the_marker(shutdown):
    log = new_log()
    marker(log, "abort", epoch=3, coordinator_epoch=5, now=70)
    getattr(log, shutdown)()
    log.recover()
    assert log.describe_producers() == [ProducerDescription(PID, 3, -1, 70, 5, -1)]
    assert log.producer_state.ongoing_txns == {} and len(log.txn_index) == 0


@pytest.mark.parametrize("shutdown", ["close", "crash"])
def test_coordinator_fencing_survives_recovery(shutdown):
    log = new_log()
    append(log, data(1, seq=0, txn=True))
    marker(log, "commit", coordinator_epoch=2)
    getattr(log, shutdown)()
    log.recover()
    append(log, data(1, seq=1, txn=True))
    expect_error(Errors.TRANSACTION_COORDINATOR_FENCED, marker, log, "abort", coordinator_epoch=1)


def test_a_snapshot_does_not_remember_unreplicated_transactions():
    # Kafka's snapshot has no field for "decided, marker not yet below the HW": after a
    # restart from a snapshot taken after the marker, that transaction stops pinning the LSO.
    log = new_log()
    append(log, data(1, seq=0, txn=True))               # 0
    append(log, plain(1))                                # 1
    marker(log, "commit")                                # 2
    log.update_high_watermark(2)
    assert log.last_stable_offset == 0
    log.close()
    log.recover()
    assert log.first_unstable_offset is None and log.last_stable_offset == 2


def test_recovery_rebuilds_the_aborted_index_identically():
    log = new_log(**{"segment.bytes": 4 * ONE_RECORD_SIZE})
    append(log, data(1, pid=PID, seq=0, txn=True))
    append(log, data(1, pid=OTHER_PID, seq=0, txn=True))
    marker(log, "abort", pid=PID)
    append(log, data(1, pid=PID, seq=1, txn=True))
    marker(log, "abort", pid=OTHER_PID)
    marker(log, "abort", pid=PID)
    before = log.txn_index.all()
    assert len(before) == 3 and log.snapshot_offsets
    log.crash()
    log.recover()
    assert log.txn_index.all() == before


def test_truncation_drops_markers_index_entries_and_reopens_the_transaction():
    log = new_log()
    append(log, data(2, pid=PID, seq=0, txn=True))      # 0..1
    marker(log, "abort", pid=PID)                        # 2
    append(log, data(1, pid=OTHER_PID, seq=0, txn=True))  # 3
    append(log, plain(1))                                # 4
    log.update_high_watermark(5)
    assert log.first_unstable_offset == 3 and len(log.txn_index) == 1
    assert log.truncate_to(2)
    assert log.log_end_offset == 2 and log.high_watermark == 2 and offsets(log) == [(0, 1)]
    assert log.txn_index.all() == [] and log.producer_state.last_entry(OTHER_PID) is None
    assert log.first_unstable_offset == 0 and log.last_stable_offset == 0
    assert list(log.producer_state.ongoing_txns) == [0]


def test_first_unstable_offset_after_truncation_of_a_commit_marker():
    log = new_log()
    append(log, plain(1))
    append(log, data(1, seq=0, txn=True))               # 1
    marker(log, "commit")                                # 2
    log.update_high_watermark(3)
    assert log.first_unstable_offset is None
    log.truncate_to(2)
    assert log.first_unstable_offset == 1


def test_truncation_rebuilds_sequences_and_the_dedup_cache():
    log = new_log()
    for seq in range(3):
        append(log, data(1, seq=seq))
    log.truncate_to(2)
    assert append(log, data(1, seq=1)).duplicate
    info = append(log, data(1, seq=2))                   # the truncated batch, written again
    assert not info.duplicate and info.first_offset == 2


def test_truncation_inside_a_batch_drops_the_whole_batch():
    log = new_log()
    for n in (2, 3, 2):                                  # 0..1, 2..4, 5..6
        append(log, plain(n))
    assert log.truncate_to(3)
    assert log.log_end_offset == 2 and offsets(log) == [(0, 1)]
    assert not log.truncate_to(2) and not log.truncate_to(9)


def test_truncation_drops_snapshots_above_and_segments():
    log = new_log(**THREE_BATCH_SEGMENTS)
    for seq in range(7):
        append(log, data(1, seq=seq))
    log.truncate_to(4)
    assert log.snapshot_offsets == [3, 4]
    assert log.segments == [(0, 3, 3 * ONE_RECORD_SIZE), (3, 1, ONE_RECORD_SIZE)]
    assert log.producer_state.last_entry(PID).last_seq == 3
    assert append(log, data(1, seq=4)).first_offset == 4


def test_truncate_fully_restarts_the_log_at_an_offset():
    log = new_log()
    append(log, data(2, seq=0, txn=True))
    marker(log, "abort")
    log.assign_epoch_start_offset(1, 0)
    log.truncate_fully_and_start_at(50)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (50, 50, 50)
    assert log.batches[:] == [] and len(log.txn_index) == 0 and log.latest_epoch is None
    assert log.producer_state.producers == {} and log.snapshot_offsets == []


def test_leader_epoch_cache_answers_offsets_for_leader_epoch():
    log = new_log()
    log.assign_epoch_start_offset(0, 0)
    append(log, plain(3), leader_epoch=0)
    log.assign_epoch_start_offset(2, 3)
    append(log, plain(2), leader_epoch=2)
    assert log.latest_epoch == 2
    assert log.end_offset_for_epoch(0) == (0, 3)
    assert log.end_offset_for_epoch(1) == (0, 3)         # largest epoch <= 1 is 0
    assert log.end_offset_for_epoch(2) == (2, 5)         # the latest epoch ends at the LEO
    assert log.end_offset_for_epoch(3) == (-1, -1)
    assert log.end_offset_for_epoch(-1) == (-1, -1)
    log.truncate_to(3)
    assert log.latest_epoch == 0 and log.end_offset_for_epoch(0) == (0, 3)


def test_leader_epoch_cache_edges():
    log = new_log()
    assert log.end_offset_for_epoch(0) == (-1, -1) and log.latest_epoch is None
    append(log, plain(2), leader_epoch=4)                # appends record their epoch
    assert log.leader_epoch_cache.entries == [(4, 0)]
    assert log.end_offset_for_epoch(2) == (2, 0)         # below every epoch: first start offset
    log.assign_epoch_start_offset(5, 2)
    assert not log.truncate_to(2) and log.latest_epoch == 4   # unused epoch at the LEO is dropped


def test_expired_producers_are_forgotten_but_never_with_an_open_transaction():
    log = new_log(**{"producer.id.expiration.ms": 1000})
    append(log, data(1, pid=PID, seq=0, ts=0))
    append(log, data(1, pid=OTHER_PID, seq=0, txn=True, ts=0))
    assert log.remove_expired_producers(999) == []
    assert log.remove_expired_producers(1000) == [PID]
    assert log.describe_producers() == [ProducerDescription(OTHER_PID, 0, 0, 0, -1, 1)]
    assert append(log, data(1, pid=PID, seq=9, ts=2000)).first_offset == 2


def test_recovery_with_a_clock_drops_producers_that_expired_while_down():
    log = new_log(**{"producer.id.expiration.ms": 1000})
    append(log, data(1, pid=PID, seq=0, ts=0))
    append(log, data(1, pid=OTHER_PID, seq=0, txn=True, ts=0))
    log.close()
    log.recover(now=5000)
    assert [p.producer_id for p in log.describe_producers()] == [OTHER_PID]


def test_epoch_entries_follow_the_cache_through_every_change():
    """``epoch_entries`` (read by replication without a call) is the cache's own list, whatever changes it."""
    log = new_log()
    cache = log.leader_epoch_cache
    append(log, plain(2), leader_epoch=1)
    log.assign_epoch_start_offset(3, 2)
    append(log, plain(2), leader_epoch=3)
    assert log.epoch_entries == cache.entries == [(1, 0), (3, 2)] and log.latest_epoch == 3
    cache.truncate_from_start(3)                          # the log start moved past epoch 1's start
    assert log.epoch_entries == cache.entries == [(3, 3)] and log.latest_epoch == 3
    log.truncate_to(3)                                    # (to the batch boundary 2: epoch 3 had started at 3)
    assert log.epoch_entries == cache.entries == [] and log.latest_epoch is None
    log.assign_epoch_start_offset(4, 2)
    assert log.epoch_entries == cache.entries == [(4, 2)] and log.latest_epoch == 4
    log.truncate_fully_and_start_at(10)                   # clears the cache
    assert log.epoch_entries == cache.entries == [] and log.latest_epoch is None
    append(log, plain(1), leader_epoch=5)
    assert log.epoch_entries == cache.entries == [(5, 10)] and log.latest_epoch == 5
