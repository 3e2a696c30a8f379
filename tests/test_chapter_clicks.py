"""The click counts the chapters promise their learner (00, 02, 04, 06), stepping by moment as a new stepper does:
each moment a question asks about is a key moment (one click on its button) or a few Steps after one, and the
narration the text tells the learner to look for is on the step they land on."""
from __future__ import annotations

from widgets import Stepper


def _steps(s: Stepper, n: int) -> None:
    for _ in range(n):
        s.step()


def test_tour_question_moment_is_key_moment_1_and_three_steps():
    s = Stepper("commit-visible-atomically")
    s.goto("in-logs")
    _steps(s, 3)
    assert "reader-uncommitted got the Fetch response from broker-1 (orders-1 2 record(s) HW 2)" in s.narration
    p0 = s.cluster.partition_state("orders", 0)
    assert (p0["hw"], p0["lso"]) == (2, 0)
    s.goto("prepare-commit")
    assert "'tx-orders' is now PrepareCommit" in s.narration
    s.close()


def test_copier_questions_are_asked_at_key_moments_and_offsets_commit_one_step_after_the_markers():
    from widgets.drawn import html_rows
    s = Stepper("consume-transform-produce")
    offsets = lambda: [row[2:5] for row in html_rows(s.coordinators.offsets_html.value)]   # noqa: E731
    s.goto("first-prepare")
    assert offsets() == [["orders-0", "2", "pending transaction"]]
    s.goto("first-commit")
    assert offsets() == [["orders-0", "2", "pending transaction"]]
    _steps(s, 1)
    assert offsets() == [["orders-0", "2", "committed"]]
    s.goto("abort")
    assert "wrote an ABORT marker" in s.narration and offsets() == [["orders-0", "2", "committed"]]
    s.close()


def test_coordinator_crash_branch_reaches_complete_commit_in_seven_steps_or_one_key_moment_click():
    s = Stepper("coordinator-dies-after-prepare")
    s.goto("prepare-commit")
    crash_ms = s.cluster.now
    s.crash(s.cluster.transaction_coordinator("tx-orders"))
    _steps(s, 1)
    assert s.cluster.now - crash_ms > 8000                       # the first Step folds the failed retries
    _steps(s, 1)
    assert "controller elected broker 2" in s.narration            # the second Step: new leaders
    _steps(s, 1)                                                  # the third: the new coordinator loaded it ...
    assert s.cluster.transaction_state("tx-orders")["coordinator"] == 2
    assert s.position == s.moments.find("new-coordinator-markers")   # ... and its first COMMIT marker lands
    _steps(s, 4)
    assert s.cluster.transaction_state("tx-orders")["state"] == "CompleteCommit"
    assert s.position == s.moments.find("complete")               # its key-moment button, in the crash branch
    assert 8 < (s.cluster.now - crash_ms) / 1000 < 9.5            # the exercise's answer: about 9 s
    s.close()


def test_marker_of_the_live_partition_is_one_step_after_the_leader_crash():
    s = Stepper("marker-leader-down")
    s.goto("leader-crash")
    _steps(s, 1)
    assert "orders-1: wrote a COMMIT marker" in s.narration and s.cluster.partition_state("orders", 1)["lso"] == 0
    s.close()


def test_transactions_chapter_reaches_endtxn_by_the_api_filter_and_marker_lost_one_moment_later():
    """02 §7: stepping by moment folds EndTxn's request and answer (no picture changes); the API filter stops at
    each in one Step; with the filter cleared, one Step more is the key moment marker-lost."""
    s = Stepper("commit-marker-lost-retried")
    stops = {st.position for st in s.moments.stops("moment")}
    s._build_panel("Filter")
    s._f_api.value = "EndTxn"
    s._btn_step.click()
    assert "got EndTxn from shop" in s.narration and s.position not in stops
    s._btn_step.click()
    assert "shop got the EndTxn response" in s.narration and s.position not in stops
    s._f_api.value = ""
    s._btn_step.click()
    assert s.position == s.moments.find("marker-lost")
    s.close()
