"""Chapter 00's picture of one commit made readable partition by partition: its words are on the picture, large
enough for a projector, none meet or run off, and none claims a partition waited for its marker when it only
waited for its HW (marker-leader-down: orders-1 has its marker at once, yet is readable only after the fencing)."""
from __future__ import annotations

import pytest

from widgets.legible import off_picture, too_small, touching
from widgets.visibility import commit_timeline, visibility_figure


@pytest.fixture(scope="module")
def timeline():
    return commit_timeline("marker-leader-down", "tx-orders", [("orders", 0), ("orders", 1)])


def test_each_partition_is_readable_after_the_decision_orders_1_first(timeline):
    t = timeline
    assert t.decided_ms < t.readable_ms["orders-1"] < t.readable_ms["orders-0"]
    assert t.readable_ms["orders-1"] - t.decided_ms > 8000        # the HW waits for the fencing, marker or not


def test_the_picture_reads_on_a_projector_and_fits_a_notebook_column(timeline):
    fig = visibility_figure(timeline)
    assert touching(fig) == [] and off_picture(fig) == []
    assert too_small(fig, 14) == []
    assert fig.layout.width <= 850                                 # JupyterLab's column beside the file browser
    shown = [tr.name for tr in fig.data if tr.showlegend is not False]
    texts = " ".join(str(tr.text) for tr in fig.data)
    assert "readable from" in texts                                # the moment each partition became readable
    assert not any("waiting for its marker" in n for n in shown)  # orders-1 had its marker at once
    assert any("not readable yet" in n for n in shown)
