"""UnifiedLog with transactions: markers, LSO, aborted index, reads, followers, KIP-890 guards."""
import random

import pytest

from txnlab.log import AbortedTxn, ControlRecordType, ProducerDescription, RecordBatch, UnifiedLog, VerificationGuard
from txnlab.protocol.errors import Errors

from txnlog_kit import OTHER_PID, PID, append, data, expect_error, marker, new_log, offsets, plain


def test_open_transaction_pins_the_lso_for_itself_and_for_later_data():
    log = new_log()
    append(log, plain(1))                                  # 0
    append(log, data(2, seq=0, txn=True))                  # 1..2
    append(log, plain(1))                                  # 3
    log.update_high_watermark(4)
    assert (log.high_watermark, log.first_unstable_offset, log.last_stable_offset) == (4, 1, 1)
    assert offsets(log)[:1] == [(b.base_offset, b.last_offset) for b in log.read(0, log.last_stable_offset)]


def test_marker_above_the_high_watermark_keeps_the_transaction_unstable():
    log = new_log()
    append(log, data(2, seq=0, txn=True))                  # 0..1
    log.update_high_watermark(2)
    assert marker(log, "commit") == 2
    assert log.last_stable_offset == 0                     # decided, but marker not replicated
    log.update_high_watermark(3)
    assert log.first_unstable_offset is None and log.last_stable_offset == 3


def test_lso_never_passes_the_high_watermark():
    log = new_log()
    append(log, plain(3))
    append(log, data(1, seq=0, txn=True))                  # 3
    log.update_high_watermark(2)
    assert log.first_unstable_offset == 3 and log.last_stable_offset == 2
    assert log.last_stable_offset <= log.high_watermark <= log.log_end_offset


def test_high_watermark_is_clamped_and_maybe_increment_is_monotone():
    log = new_log()
    append(log, plain(5))
    assert log.update_high_watermark(99) and log.high_watermark == 5
    assert not log.maybe_increment_high_watermark(3) and log.high_watermark == 5
    assert log.update_high_watermark(2) and log.high_watermark == 2
    assert log.maybe_increment_high_watermark(4) and log.high_watermark == 4
    with pytest.raises(ValueError):
        log.maybe_increment_high_watermark(6)


def test_aborted_index_entries_carry_the_lso_of_overlapping_transactions():
    log = new_log()
    append(log, data(1, pid=PID, seq=0, txn=True))         # 0  A starts
    append(log, data(1, pid=OTHER_PID, seq=0, txn=True))   # 1  B starts
    append(log, data(1, pid=PID, seq=1, txn=True))         # 2
    assert marker(log, "abort", pid=PID) == 3              # B still open -> LSO 1
    append(log, data(1, pid=OTHER_PID, seq=1, txn=True))   # 4
    assert marker(log, "abort", pid=OTHER_PID) == 5        # nothing open -> marker + 1
    assert log.txn_index.all() == [AbortedTxn(PID, 0, 3, 1), AbortedTxn(OTHER_PID, 1, 5, 6)]


def test_aborted_txn_lso_can_be_an_earlier_started_transaction():
    log = new_log()
    append(log, data(1, pid=PID, seq=0, txn=True))         # 0
    append(log, data(1, pid=OTHER_PID, seq=0, txn=True))   # 1
    marker(log, "abort", pid=OTHER_PID)                    # 2
    assert log.txn_index.all() == [AbortedTxn(OTHER_PID, 1, 2, 0)]


def test_commits_and_empty_transactions_are_not_indexed():
    log = new_log()
    append(log, data(1, seq=0, txn=True))
    marker(log, "commit")
    assert marker(log, "abort", pid=OTHER_PID, epoch=3) == 2   # no open txn: legal, no entry
    assert len(log.txn_index) == 0 and log.log_end_offset == 3
    assert log.producer_state.last_entry(OTHER_PID).producer_epoch == 3


@pytest.mark.parametrize("fetch, upper, expected", [
    (0, 6, [(PID, 0), (OTHER_PID, 1)]),
    (3, 4, [(PID, 0), (OTHER_PID, 1)]),
    (4, 6, [(OTHER_PID, 1)]),
    (0, 1, [(PID, 0)]),          # B starts at 1: not in [0, 1)
    (6, 7, []),
])
def test_collect_aborted_transactions_ranges(fetch, upper, expected):
    log = new_log()
    append(log, data(1, pid=PID, seq=0, txn=True))
    append(log, data(1, pid=OTHER_PID, seq=0, txn=True))
    append(log, data(1, pid=PID, seq=1, txn=True))
    marker(log, "abort", pid=PID)
    append(log, data(1, pid=OTHER_PID, seq=1, txn=True))
    marker(log, "abort", pid=OTHER_PID)
    assert log.collect_aborted_transactions(fetch, upper) == expected


def test_read_returns_whole_batches_within_bounds():
    log = new_log()
    for n in (2, 3, 1, 4):                                  # 0..1, 2..4, 5, 6..9
        append(log, plain(n))
    assert [b.base_offset for b in log.read(3, 10)] == [2, 5, 6]   # fetch inside a batch
    assert [b.base_offset for b in log.read(0, 5)] == [0, 2]       # max_offset is exclusive
    assert log.read(10, 10) == [] and log.read(4, 2) == []
    size = log.batches[0].size_in_bytes
    assert [b.base_offset for b in log.read(0, 10, max_bytes=size + 1)] == [0]
    assert [b.base_offset for b in log.read(0, 10, max_bytes=1)] == [0]   # always at least one


def test_read_to_end_is_read_up_to_the_log_end():
    """What a follower is sent: read(offset, LEO, max bytes), from the last append or from anywhere before it."""
    log = new_log()
    append(log, plain(2))                                   # 0..1
    append(log, plain(1), plain(3))                         # 2, 3..5: one append of two batches
    size = log.batches[1].size_in_bytes
    for offset in (0, 1, 2, 3, 6):
        for max_bytes in (1, size, 2 * size + 1, 1_048_576):
            assert log.read_to_end(offset, max_bytes) == tuple(log.read(offset, log.log_end_offset, max_bytes))
    assert [b.base_offset for b in log.read_to_end(2, size)] == [2]       # the append's batches, within max bytes
    assert marker(log, "abort") == 6 and [b.base_offset for b in log.read_to_end(6, 1)] == [6]
    log.truncate_to(6)                                      # drops the marker (the last append)
    assert log.read_to_end(6, 1_048_576) == ()
    log.truncate_to(3)                                      # drops batch 3..5: LEO 3
    assert [b.base_offset for b in log.read_to_end(2, 1_048_576)] == [2]
    expect_error(Errors.OFFSET_OUT_OF_RANGE, log.read_to_end, 6, 1_048_576)


def test_read_outside_the_log_is_offset_out_of_range():
    log = new_log()
    append(log, plain(3))
    expect_error(Errors.OFFSET_OUT_OF_RANGE, log.read, 4, 10)
    log.truncate_fully_and_start_at(10)
    expect_error(Errors.OFFSET_OUT_OF_RANGE, log.read, 9, 20)
    assert append(log, plain(1)).first_offset == 10


def test_marker_from_an_older_coordinator_is_fenced_and_not_written():
    log = new_log()
    append(log, data(1, seq=0, txn=True))
    marker(log, "commit", coordinator_epoch=2)
    append(log, data(1, seq=1, txn=True))
    expect_error(Errors.TRANSACTION_COORDINATOR_FENCED, marker, log, "commit", coordinator_epoch=1)
    log.update_high_watermark(3)
    assert log.log_end_offset == 3 and log.first_unstable_offset == 2


def test_tv2_markers_need_a_bumped_epoch_and_fence_the_old_one():
    log = new_log()
    append(log, data(1, epoch=0, seq=0, txn=True))
    expect_error(Errors.INVALID_PRODUCER_EPOCH, marker, log, "commit", epoch=0, tv=2)
    assert marker(log, "commit", epoch=1, tv=2) == 1
    assert marker(log, "commit", epoch=1, tv=2) == 2                    # retried marker, txn over
    expect_error(Errors.INVALID_PRODUCER_EPOCH, append, log, data(1, epoch=0, seq=1, txn=True))
    expect_error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, append, log, data(1, epoch=1, seq=1, txn=True))
    assert append(log, data(1, epoch=1, seq=0, txn=True)).first_offset == 3


def leader_script(leader: UnifiedLog):
    """Yields after each leader append so a follower can copy it."""
    append(leader, data(1, pid=PID, seq=0, txn=True), leader_epoch=1)
    yield
    append(leader, data(2, pid=OTHER_PID, seq=0, txn=True), leader_epoch=1)
    yield
    marker(leader, "abort", pid=PID, coordinator_epoch=3, leader_epoch=1)
    yield
    append(leader, plain(2), leader_epoch=2)
    yield
    marker(leader, "commit", pid=OTHER_PID, coordinator_epoch=3, leader_epoch=2)
    yield


def test_follower_copy_reaches_the_same_producer_state_and_index():
    leader, follower = new_log(), UnifiedLog("orders", 0)
    leader.assign_epoch_start_offset(1, 0)
    for _ in leader_script(leader):
        follower.append_as_follower(leader.read(follower.log_end_offset, leader.log_end_offset), now=0)
    assert follower.batches[:] == leader.batches[:]
    assert follower.txn_index.all() == leader.txn_index.all() == [AbortedTxn(PID, 0, 3, 1)]
    assert follower.describe_producers() == leader.describe_producers()
    assert follower.leader_epoch_cache.entries == leader.leader_epoch_cache.entries == [(1, 0), (2, 4)]
    follower.update_high_watermark(follower.log_end_offset)
    assert follower.last_stable_offset == 7 and follower.first_unstable_offset is None


def test_follower_copies_what_its_leader_accepted_without_the_epoch_checks():
    # REPLICATION appends are not validated (Kafka only logs): an older producer epoch and a marker from an older
    # coordinator epoch are copied, and the stored entry follows them
    follower = new_log()
    follower.append_as_follower((data(1, epoch=1, seq=0, txn=True, ts=5).with_base_offset(0, 0),), now=0)
    follower.append_as_follower((RecordBatch.control(ControlRecordType.COMMIT, PID, 1, 3, 6).with_base_offset(1, 0),),
                                now=0)
    follower.append_as_follower((data(2, epoch=0, seq=7, txn=True, ts=7).with_base_offset(2, 0),), now=0)
    follower.append_as_follower((RecordBatch.control(ControlRecordType.ABORT, PID, 0, 2, 8).with_base_offset(4, 0),),
                                now=0)
    assert follower.describe_producers() == [ProducerDescription(PID, 0, 8, 8, 2, -1)]
    assert follower.txn_index.all() == [AbortedTxn(PID, 2, 4, 5)]


def test_follower_refuses_a_plain_batch_inside_an_open_transaction():
    follower = new_log()
    follower.append_as_follower((data(1, seq=0, txn=True).with_base_offset(0, 0),), now=0)
    before = follower.describe_producers()
    expect_error(Errors.INVALID_TXN_STATE, follower.append_as_follower, (data(1, seq=1).with_base_offset(1, 0),), 0)
    assert follower.log_end_offset == 1 and follower.describe_producers() == before
    assert follower.first_unstable_offset == 0


def test_follower_refuses_batches_below_its_log_end():
    leader, follower = new_log(), new_log()
    append(leader, plain(3))
    follower.append_as_follower(leader.read(0, 3), now=0)
    with pytest.raises(ValueError):
        follower.append_as_follower(leader.read(0, 3), now=0)


def test_verification_guard_is_required_to_start_a_transaction():
    log = new_log(**{"transaction.partition.verification.enable": True})
    append(log, data(1, pid=OTHER_PID, seq=0))                          # idempotent: no guard needed
    expect_error(Errors.INVALID_TXN_STATE, append, log, data(1, seq=0, txn=True))
    guard = log.maybe_start_transaction_verification(PID, 0, 0, now=0)
    assert guard is not VerificationGuard.SENTINEL and log.verification_guard(PID) is guard
    expect_error(Errors.INVALID_TXN_STATE, append, log, data(1, seq=0, txn=True),
                 guard=VerificationGuard(999))
    append(log, data(1, seq=0, txn=True), guard=guard)
    assert log.verification_guard(PID) is VerificationGuard.SENTINEL
    assert log.maybe_start_transaction_verification(PID, 1, 0, now=0) is VerificationGuard.SENTINEL
    append(log, data(1, seq=1, txn=True))                               # txn already open here
    marker(log, "abort")
    # A produce delayed past the abort still holds the old guard: it may not open a hanging txn.
    expect_error(Errors.INVALID_TXN_STATE, append, log, data(1, seq=2, txn=True), guard=guard)
    log.update_high_watermark(log.log_end_offset)
    assert log.first_unstable_offset is None


def test_invariants_hold_under_a_mixed_workload():
    rng = random.Random(20241025)
    log = new_log(**{"segment.bytes": 600})
    pids = [PID, OTHER_PID, 6000]
    seq = {p: 0 for p in pids}
    open_first: dict[int, int] = {}
    decided: list[tuple[int, int, int, bool]] = []          # pid, first, marker, aborted
    forgotten_below = 0   # markers below the snapshot loaded at restart no longer pin the LSO
    for step in range(600):
        action = rng.random()
        pid = rng.choice(pids)
        if action < 0.5:
            info = append(log, data(rng.randint(1, 3), pid=pid, seq=seq[pid], txn=True))
            seq[pid] += info.num_records
            open_first.setdefault(pid, info.first_offset)
        elif action < 0.62:
            append(log, plain(rng.randint(1, 2)))
        elif action < 0.8:
            aborted = rng.random() < 0.5
            offset = marker(log, "abort" if aborted else "commit", pid=pid)
            if pid in open_first:
                decided.append((pid, open_first.pop(pid), offset, aborted))
        elif action < 0.97:
            log.maybe_increment_high_watermark(rng.randint(log.high_watermark, log.log_end_offset))
        else:
            log.checkpoint_high_watermark()
            log.crash() if rng.random() < 0.5 else log.close()
            forgotten_below = max(log.snapshot_offsets, default=0)
            log.recover()
        hw, lso = log.high_watermark, log.last_stable_offset
        assert log.log_start_offset <= lso <= hw <= log.log_end_offset
        unstable = list(open_first.values()) + [f for _, f, m, _ in decided
                                                if m >= hw and m >= forgotten_below]
        assert lso == min([hw] + unstable), f"step {step}"
    expected = [(p, f, m) for p, f, m, aborted in decided if aborted]
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in log.txn_index.all()] == expected
    assert len(log.segments) > 5 and len(expected) > 10


def test_a_stale_epoch_is_refused_before_the_verification_check():
    """Kafka 4.1.1 UnifiedLog.analyzeAndValidateProducerState checks a stale producer epoch first and throws the
    recoverable InvalidProducerEpochException; only a batch of the current epoch is checked for its verification
    (the October 2024 code answered InvalidTxnStateException, as the verification check came first)."""
    log = new_log(**{"transaction.partition.verification.enable": True})
    guard = log.maybe_start_transaction_verification(PID, 0, 1, now=0)
    append(log, data(1, epoch=1, seq=0, txn=True), guard=guard)
    marker(log, "abort", epoch=1)                          # the txn is closed: no ongoing txn for the producer
    expect_error(Errors.INVALID_PRODUCER_EPOCH, append, log, data(1, epoch=0, seq=0, txn=True))
    expect_error(Errors.INVALID_PRODUCER_EPOCH, append, log, data(1, epoch=0, seq=0, txn=True),
                 guard=VerificationGuard(999))
    expect_error(Errors.INVALID_TXN_STATE, append, log, data(1, epoch=1, seq=1, txn=True))   # current: verification


def test_a_stale_epoch_is_refused_when_verification_starts():
    """Kafka 4.1.1 UnifiedLog.maybeStartTransactionVerification rejects an epoch below the producer's stored one
    early (InvalidProducerEpochException), before a guard is made and the coordinator asked."""
    log = new_log(**{"transaction.partition.verification.enable": True})
    append(log, data(1, epoch=2, seq=0))
    expect_error(Errors.INVALID_PRODUCER_EPOCH, log.maybe_start_transaction_verification, PID, 1, 1, now=0)
    assert log.verification_guard(PID) is VerificationGuard.SENTINEL
    assert log.maybe_start_transaction_verification(PID, 1, 2, now=0) is not VerificationGuard.SENTINEL
