"""TransactionIndex (aborted txns) and LeaderEpochFileCache on their own."""
import pytest

from txnlab.log import AbortedTxn, LeaderEpochFileCache, TransactionIndex


def index_of(*entries):
    index = TransactionIndex()
    for entry in entries:
        index.append(AbortedTxn(*entry))
    return index


def test_collect_returns_aborts_overlapping_the_fetch_range():
    index = index_of((1, 0, 10, 11), (2, 12, 20, 21), (3, 25, 30, 31))
    assert [t.producer_id for t in index.collect_aborted_txns(0, 100)] == [1, 2, 3]
    assert [t.producer_id for t in index.collect_aborted_txns(11, 25)] == [2]      # 3 starts at 25
    assert [t.producer_id for t in index.collect_aborted_txns(10, 13)] == [1, 2]   # 1 ends at 10
    assert index.collect_aborted_txns(31, 40) == []


def test_collect_stops_at_an_entry_whose_lso_reaches_the_upper_bound():
    # Entry 1 says: when it was aborted, nothing below offset 50 was still open, so no later
    # abort can start below 50. Kafka stops scanning there (the later entry is a planted lie).
    index = index_of((1, 0, 5, 50), (2, 3, 60, 61))
    assert [t.producer_id for t in index.collect_aborted_txns(0, 40)] == [1]
    assert [t.producer_id for t in index.collect_aborted_txns(0, 51)] == [1, 2]


def test_truncate_drops_entries_whose_marker_is_at_or_above_the_offset():
    index = index_of((1, 0, 10, 11), (2, 12, 20, 21))
    index.truncate_to(20)
    assert index.all() == [AbortedTxn(1, 0, 10, 11)]
    index.truncate_to(11)
    assert len(index) == 1
    index.truncate_to(10)
    assert index.all() == []


def test_out_of_order_appends_stay_sorted_by_marker_offset():
    index = index_of((2, 12, 20, 21), (1, 0, 10, 11))
    assert [t.last_offset for t in index.all()] == [10, 20]


def test_epoch_cache_assign_keeps_epochs_and_offsets_monotonic():
    cache = LeaderEpochFileCache()
    assert cache.assign(1, 0) and cache.assign(2, 5) and cache.assign(4, 9)
    assert not cache.assign(4, 12)                       # same epoch, later offset: no change
    assert cache.assign(3, 7)                            # a lower epoch removes the higher ones
    assert cache.entries == [(1, 0), (2, 5), (3, 7)]
    assert cache.assign(5, 6)                            # an earlier offset removes later entries
    assert cache.entries == [(1, 0), (2, 5), (5, 6)]
    with pytest.raises(ValueError):
        cache.assign(-1, 0)


def test_epoch_cache_end_offsets_and_truncation():
    cache = LeaderEpochFileCache()
    for epoch, start in [(1, 0), (3, 10), (6, 20)]:
        cache.assign(epoch, start)
    assert cache.end_offset_for(1, 30) == (1, 10)
    assert cache.end_offset_for(2, 30) == (1, 10)
    assert cache.end_offset_for(5, 30) == (3, 20)
    assert cache.end_offset_for(6, 30) == (6, 30)
    assert cache.end_offset_for(0, 30) == (0, 0)
    assert cache.end_offset_for(7, 30) == (-1, -1)
    assert (cache.epoch_for_offset(15), cache.epoch_for_offset(20)) == (3, 6)
    cache.truncate_from_end(20)
    assert cache.latest_epoch == 3
    cache.truncate_from_start(12)
    assert cache.entries == [(3, 12)]
