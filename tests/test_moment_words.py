"""What a stop's words and a key moment's caption tell a learner: true, and in the learner's words."""
from __future__ import annotations

import re

import pytest

from txnlab.gallery.moments import changes
from widgets import Stepper

NEGATIVE_OFFSET = re.compile(r"(offset|was) -\d")


def _picture(*consumers) -> dict:
    return {"nodes": (), "partitions": {}, "transactions": {}, "consumers": tuple(consumers)}


def test_a_consumer_with_no_position_yet_is_said_in_words_not_as_a_sentinel():
    before = _picture(("reader", (("orders", 0, -1001),)))
    after = _picture(("reader", (("orders", 0, 3),)))
    strong, _ = changes(before, after)
    assert strong == ["reader reads orders-0 from offset 3 (had no position yet)"]


def test_a_consumer_that_loses_its_position_is_said_in_words_not_as_a_sentinel():
    before = _picture(("copier", (("orders", 0, 4),)))
    after = _picture(("copier", (("orders", 0, -1001),)))
    strong, _ = changes(before, after)
    assert strong == ["copier has no position on orders-0 any more (was offset 4)"]


@pytest.mark.parametrize("name", ["lso-stuck-by-open-transaction", "consume-transform-produce"])
def test_no_stop_of_a_story_prints_a_negative_offset(name):
    s = Stepper(name)
    words = [w for p in s.moments.positions for w in p.words]
    s.close()
    assert any("reads orders-0 from offset" in w for w in words)
    assert [w for w in words if NEGATIVE_OFFSET.search(w)] == []


LOADED = "'tx-orders' was PrepareCommit when the old coordinator stopped"


def _position_saying(s: Stepper, text: str, branch: str, before: int = 10**9) -> int:
    """The last position (before ``before``) of ``branch`` whose trace says ``text``."""
    ex = s.history.execution(branch)
    last = None
    while ex.position < before - 1 and ex.step():
        if any(text in e.narration for e in ex.entries()):
            last = ex.position
    ex.close()
    assert last is not None, text
    return last


def _captions_at(s: Stepper, position: int) -> list:
    return [caption for _, caption, pos in s.key_moments if pos == position]


def test_crashing_the_coordinator_at_the_decision_keeps_the_decision_where_it_was_taken():
    s = Stepper("coordinator-dies-after-prepare")
    s.goto("prepare-commit")
    decided = s.position
    branch = s.crash(s.cluster.transaction_coordinator("tx-orders"))
    assert s.moments.found["prepare-commit"] == decided          # the decision and the crash: the same step
    loaded = _position_saying(s, LOADED, branch)
    assert loaded > decided and _captions_at(s, loaded) == []   # the reload is not captioned as the decision
    s.close()


def test_a_decision_the_old_coordinator_never_saw_durable_is_not_captioned_where_the_new_one_loads_it():
    """Crash the coordinator after its followers copied the PrepareCommit record but before it heard so: nobody
    said 'decided', and the new coordinator reads PrepareCommit from the log.  No step is the decision."""
    s = Stepper("coordinator-dies-after-prepare")
    decided = s.moments.find("prepare-commit")
    copied = _position_saying(s, "__transaction_state-0: follower", "main", before=decided)
    s.granularity = "event"
    s.jump(copied)
    branch = s.crash(s.cluster.transaction_coordinator("tx-orders"))
    assert "prepare-commit" not in s.moments.found
    loaded = _position_saying(s, LOADED, branch)
    assert not any("decided" in c for c in _captions_at(s, loaded))
    s.run_to_end()
    assert s.result["read_committed"] == ["order-0", "order-1", "order-2", "order-3"]   # still committed
    s.close()
