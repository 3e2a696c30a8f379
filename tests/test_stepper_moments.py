"""Story-level stepping: the stepper's granularities, folded plumbing and retries, key moments and chapters."""
from __future__ import annotations

import pytest

from txnlab import gallery
from txnlab.gallery.moments import GRANULARITIES
from widgets import Stepper
from widgets.ticks import TRACK_PX

ALL = gallery.names() + gallery.comparison_names()


@pytest.fixture(scope="module")
def commit():
    s = Stepper("commit-visible-atomically")
    yield s
    s.close()


def test_moment_is_the_default_and_a_step_folds_plumbing_into_one_meaningful_change(commit):
    s = commit
    s.reset()
    assert s.granularity == "moment" and s._zoom.value == "moment"
    s._btn_step.click()
    first = s.position
    assert first > 1, "the first moment folds the plumbing before it"
    assert s.stop.folded == first - 1
    assert f"+{first - 1} plumbing events folded" in s._narr.value
    assert "moment 1 of" in s._narr.value and f"step {first} of {s.length}" in s._narr.value


def test_each_granularity_is_a_view_of_boundaries_over_the_same_kernel_positions(commit):
    s = commit
    counts = {}
    for g in GRANULARITIES:
        s.granularity = g
        s.reset()
        seen = []
        while not s.at_end:
            before = s.position
            s.step()
            assert s.position > before
            seen.append(s.position)
        counts[g] = seen
    assert set(counts["moment"]) <= set(counts["exchange"]) <= set(counts["event"])
    assert counts["event"] == list(range(1, s.length + 1))
    assert len(counts["moment"]) < len(counts["exchange"]) < len(counts["event"])
    s.granularity = "moment"


def test_switching_granularity_in_the_ui_changes_what_step_does(commit):
    s = commit
    s.reset()
    s._zoom.value = "event"
    assert s.granularity == "event"
    s._btn_step.click()
    assert s.position == 1
    s._zoom.value = "moment"
    s._btn_step.click()
    assert s.position == s.moments.stops("moment")[0].position


def test_back_and_jump_land_on_the_same_state_at_every_granularity(commit):
    s = commit
    for g in GRANULARITIES:
        s.granularity = g
        s.reset()
        s.step(3)
        here, trace = s.position, s.trace_text(30)
        s.step(2)
        s.back(2)
        assert s.position == here and s.trace_text(30) == trace
    s.granularity = "moment"


def test_a_granularity_is_refused_by_name():
    with pytest.raises(ValueError, match="granularity must be one of moment, exchange, event"):
        Stepper("2pc-transfer", granularity="second")


def test_key_moments_show_as_ticks_and_chapters_and_a_chapter_click_jumps_there(commit):
    s = commit
    s.reset()
    ids = [m for m, _, _ in s.key_moments]
    assert ids == ["in-logs", "prepare-commit", "marker-0", "lso-0", "complete"]
    assert s._ticks.labels == [f"▲ {mid}" for mid in ids]
    chapter = next(b for b in s._chapters.children[1:] if b.moment_id == "prepare-commit")
    assert "PrepareCommit is durable in __transaction_state" in chapter.description
    chapter.click()
    assert s.position == s.moments.found["prepare-commit"]
    assert s.cluster.transaction_state("tx-orders")["state"] == "PrepareCommit"
    assert "★ PrepareCommit is durable" in s._narr.value and chapter.button_style == "info"


def test_a_click_on_a_key_moments_tick_under_the_slider_jumps_there(commit):
    s = commit
    s.reset()
    lefts = [t["left"] for t in s._ticks.ticks]
    assert lefts == sorted(lefts) and 0 < lefts[0] and lefts[-1] <= 100      # where each is on the slider
    for a, b in zip(s._ticks.ticks, s._ticks.ticks[1:]):                     # close ones are on different rows
        if (b["left"] - a["left"]) * TRACK_PX / 100 < 8.5 * (len(a["id"]) + 2) + 8:
            assert a["row"] != b["row"], (a, b)
    s._ticks._on_msg(s._ticks, {"moment": "marker-0"}, [])                    # what the browser sends on a click
    assert s.position == s.moments.found["marker-0"] and s._slider.value == s.position
    assert s._ticks.current == "marker-0" and "★" in s._narr.value
    s._ticks.click("in-logs")                                                 # back to an earlier one
    assert s.position == s.moments.found["in-logs"] and s._ticks.current == "in-logs"
    s.step()
    assert s._ticks.current == ""


def test_open_at_a_named_moment_by_id_or_caption():
    s = Stepper("commit-visible-atomically", at="marker-0")
    assert s.cluster.log("orders", 0).batches[-1].is_control
    pos = s.position
    s.close()
    s = Stepper("commit-visible-atomically", at="orders-0's COMMIT marker lands")
    assert s.position == pos
    with pytest.raises(KeyError, match="no key moment 'nope'.*marker-0"):
        s.goto("nope")
    s.close()


def test_open_at_a_moment_of_a_saved_branch_with_its_faults(tmp_path):
    s = Stepper("2pc-transfer")
    s.goto("prepared")
    s.crash("coordinator")
    path = tmp_path / "branch.json"
    s.save(str(path))
    name = s.branch
    s.close()
    t = Stepper("2pc-transfer", saved=str(path), branch=name, at="prepared")
    assert t.branch == name and t.history.branches[name].faults
    t.step()
    assert not t.lab.coordinator.alive, "the saved branch's crash is applied at its step"
    t.close()


def test_a_run_of_identical_failures_is_one_step_that_says_what_happened():
    s = Stepper("marker-leader-down", at="leader-crash")
    for _ in range(3):                       # the crash's first consequences, then the retries
        s._btn_step.click()
        if s.stop.summary:
            break
    stop = s.stop
    assert stop.repeated > 20 and stop.folded > 100
    assert "WriteTxnMarkers from broker-1 to broker-0 lost" in stop.summary
    assert "while broker-0 was down" in stop.summary and " over " in stop.summary
    assert stop.summary in s._narr.value.replace("&#x27;", "'")
    s.close()


@pytest.mark.parametrize("name", ALL)
def test_every_key_moment_is_at_most_15_step_clicks_from_opening(name):
    """From opening a gallery scenario, clicking Step at the default granularity reaches each key moment
    in 15 clicks or fewer (the clicks are counted on the button)."""
    s = Stepper(name)
    declared = [k.id for k in gallery.load(name).moments]
    assert len(declared) >= 3, "every story declares its key moments"
    assert [m for m, _, _ in s.key_moments] and {m for m, _, _ in s.key_moments} == set(declared)
    clicks, reached = 0, {}
    targets = {pos: mid for mid, _, pos in s.key_moments}
    while len(reached) < len(targets) and not s.at_end:
        s._btn_step.click()
        clicks += 1
        if s.position in targets:
            reached[targets[s.position]] = clicks
    assert set(reached) == set(targets.values()), f"Step passed over a key moment: {reached}"
    assert max(reached.values()) <= 15, reached
    s.close()


def test_a_counterexample_opens_with_its_faults_as_key_moments():
    from txnlab.sweep.explore import Explorer
    explorer = Explorer(mutation="no-fencing", max_faults=2)
    explorer.explore()
    s = Stepper.open(explorer.found())
    ids = [mid for mid, _, _ in s.key_moments]
    assert ids == ["fault-1", "fault-2"]
    assert s.key_moments[0][1] == "Drop message #48"
    s.goto("fault-1")
    assert "the network drops" in s.narration
    s.goto("fault-2")
    assert "crashes" in s.narration
    s.close()
