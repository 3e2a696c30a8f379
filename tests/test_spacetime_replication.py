"""The message diagram at a busy moment: a follower's Fetch and the leader's answer (replication) are drawn fainter
and thinner than the messages of the protocol the step is about, their words in grey, and their words yield: the
other arrows' labels choose their places first, and in a crowd the replication labels are the ones left out."""
from __future__ import annotations

from widgets import Stepper
from widgets.spacetime import LABEL_FAINT, LABEL_INK, STYLE, place_labels


def _trace(fig, name):
    return next(t for t in fig.data if t.name == name)


def _arrows(trace) -> int:
    return sum(1 for x in trace.x if x is None)


def test_follower_fetches_are_drawn_faint_at_chapter_02s_busiest_moment():
    s = Stepper("commit-marker-lost-retried")
    s.goto("prepare-commit")
    fig = s.messages.figure
    replication, requests = _trace(fig, "follower Fetch"), _trace(fig, "requests")
    assert _arrows(replication) >= 6 and _arrows(requests) >= 3
    assert replication.line.width < requests.line.width and replication.line.color != requests.line.color
    arrows = s.messages.last_arrows                        # message id -> (group, src, dst, api)
    for group, src, dst, api in arrows.values():
        follower = api == "Fetch" and src.startswith("broker-") and dst.startswith("broker-")
        assert (group == "follower Fetch") == (follower and group not in ("this step", "in flight", "dropped"))
    labels = _trace(fig, "arrow labels")
    colours = dict(zip(labels.text, labels.textfont.color))
    assert colours.get("AddPartitionsToTxn") == LABEL_INK and colours.get("Fetch ✓") == LABEL_FAINT
    assert replication.showlegend
    s.close()


def test_a_lab_without_replication_names_no_follower_fetch_in_its_legend():
    s = Stepper("2pc-transfer")
    s.step()
    assert not _trace(s.messages.figure, "follower Fetch").showlegend
    assert _trace(s.messages.figure, "requests").showlegend
    s.close()


def test_a_replication_label_yields_its_place_to_an_older_protocol_label():
    """Two arrows on the same segment: the protocol message's words take the place half way along it although the
    follower Fetch is newer (the newest choose first otherwise)."""
    seg = (0.0, 0.0, 1.0, 1.0, (0.5,))
    xs, ys, words = place_labels([seg, seg], ["EndTxn", "Fetch"], 100.0, 100.0, yielding=[False, True])
    assert (xs[0], ys[0], words[0]) == (0.5, 0.5, "EndTxn")
    assert words[1] == "" or (xs[1], ys[1]) != (0.5, 0.5)
    xs, ys, words = place_labels([seg, seg], ["EndTxn", "Produce"], 100.0, 100.0)
    assert (xs[1], ys[1], words[1]) == (0.5, 0.5, "Produce")          # without yielding: the newest first
    assert "follower Fetch" in STYLE
