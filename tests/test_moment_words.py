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
