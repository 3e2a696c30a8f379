"""Every picture can be read on a projector without hovering: no two text labels meet (overlap or come closer than
``legible.MARGIN`` px, by the one size estimate of ``widgets/legible.py``) and none runs off the picture or under
its legend, and none is set in type under ``legible.SMALLEST_PX``.  The audit builds every picture of the
chapters' stepper stories at each of their key moments -- the stepper's partition logs, message diagram, coordinator
view and a lab's own pictures, presenter mode's pictures, and the chapters' static snapshots of the same moment
(the logs of every partition, the message flow since the moment before) -- and checks all pairs of labels."""
from __future__ import annotations

from bisect import bisect_left

import pytest

from txnlab import Cluster, Producer
from widgets import Stepper
from widgets.legible import (CHAR_EM, LINE_EM, MARGIN, clash, label_boxes, off_picture, text_box, text_extent,
                             too_small, touching)
from widgets.snapshots import log_snapshot, message_flow

# the stories the chapters open in a stepper (notebooks/*.py), with their key moments
CHAPTER_STORIES = {
    "00_tour": ["commit-visible-atomically"],
    "01_idempotent_producer": ["dropped-ack-dedup"],
    "02_transactions_and_markers": ["commit-marker-lost-retried"],
    "03_lso_hw_isolation": ["lso-stuck-by-open-transaction", "abort-hidden-from-read-committed"],
    "04_consume_transform_produce": ["consume-transform-produce"],
    "05_zombie_fencing": ["zombie-fenced", "transaction-timeout-abort", "hanging-transaction-classic-vs-v2"],
    "06_coordinator_failures_and_timeouts": ["coordinator-dies-after-prepare", "marker-leader-down"],
    "09_rocketmq_vs_kafka": ["rocketmq-end-transaction-lost"],
    "10_two_phase_commit": ["2pc-transfer", "2pc-coordinator-crash-blocks"],
}
# the APIs the chapters' message-flow snapshots draw (chapters 02 and 04)
FLOW_APIS = ("AddPartitionsToTxn", "Produce", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "WriteTxnMarkers")


def _pictures(s: Stepper, since: int) -> list:
    """(name, figure) of every picture of stepper ``s`` at its position; ``since``: the kernel step after which the
    message-flow snapshot starts."""
    out = [("message diagram", s.messages.figure)]
    if s.log_strip is not None:
        out += [("partition logs", s.log_strip.figure), ("coordinator view", s.coordinators.figure)]
        c = s.cluster
        parts = sorted({(t, p) for t, p, *_ in s.log_strip._rows})
        out.append(("log_snapshot", log_snapshot(c, parts)))
        mark = bisect_left(c.trace.events, since + 1, key=lambda e: e.step)
        lanes = [n for n in c.kernel.nodes if n != "controller"]
        out.append(("message_flow", message_flow(c, mark, FLOW_APIS, lanes)))
    out += [(title, view.figure) for title, view in (s.lab_views or []) if getattr(view, "figure", None) is not None]
    out += [(f"presenter {type(view).__name__}", view.figure) for view in s.presenter_views]
    return out


@pytest.mark.parametrize("chapter", sorted(CHAPTER_STORIES))
def test_no_two_labels_meet_in_any_picture_at_a_chapters_key_moments(chapter):
    found, moments = [], 0
    for story in CHAPTER_STORIES[chapter]:
        s = Stepper(story)
        s.present()
        since = 0
        for moment, _caption, position in s.key_moments:
            s.goto(moment)
            moments += 1
            for name, fig in _pictures(s, since):
                found += [f"{chapter} {story} at {moment!r}, {name}: {a[1]!r} ({a[0]}) meets {b[1]!r} ({b[0]})"
                          for a, b in touching(fig)]
                found += [f"{chapter} {story} at {moment!r}, {name}: {text!r} ({what}) runs off the picture"
                          for what, text in off_picture(fig)]
                found += [f"{chapter} {story} at {moment!r}, {name}: {text!r} ({what}) is set in {size:.0f} px type"
                          for what, text, size in too_small(fig)]
            since = position
        s.close()
    assert moments >= 3
    assert found == [], "\n".join(found)


def test_the_estimate_is_one_function_of_the_words_and_their_type():
    """A label's box: an average character is CHAR_EM of the type size wide, a line LINE_EM of it high; <br> breaks
    a line and tags take no room; two boxes meet when they come closer than MARGIN."""
    assert text_extent("Fetch ✓", 13) == pytest.approx((7 * CHAR_EM * 13, LINE_EM * 13))
    assert text_extent("<b>HW</b> 4<br>LSO 3", 20) == pytest.approx((5 * CHAR_EM * 20, 2 * LINE_EM * 20))
    a = text_box(100, 100, "Produce", 13, "top center")
    assert a[3] == 100 and a[1] - a[0] == pytest.approx(7 * CHAR_EM * 13)
    assert clash(a, (a[1] + MARGIN - 0.5, a[1] + 50, a[2], a[3]))            # closer than the margin: they meet
    assert not clash(a, (a[1] + MARGIN + 0.5, a[1] + 50, a[2], a[3]))


def test_a_figures_labels_are_read_where_plotly_puts_them():
    """Annotations (anchors, shifts, arrows' tails) and text traces (textposition beside a marker) in pixels."""
    import plotly.graph_objects as go
    fig = go.Figure(go.Scatter(x=[0, 10], y=[0, 10], mode="markers+text", text=["a", "bb"], marker=dict(size=10),
                               textposition="middle right", textfont=dict(size=10)))
    fig.update_layout(width=220, height=220, margin=dict(l=10, r=10, t=10, b=10), showlegend=False,
                      xaxis=dict(range=[0, 10]), yaxis=dict(range=[0, 10], showticklabels=False))
    fig.add_annotation(x=5, y=5, text="mid", showarrow=False, yanchor="bottom", yshift=4, font=dict(size=10))
    boxes = {what: box for what, _, box in label_boxes(fig)}
    mid = boxes["annotation 0"]
    assert mid[3] == pytest.approx(110 - 4) and (mid[0] + mid[1]) / 2 == pytest.approx(110)
    a = boxes["trace 0 #0"]
    assert a[0] == pytest.approx(10 + 5 + 3) and (a[2] + a[3]) / 2 == pytest.approx(210)


def _three_rows_aligned() -> Cluster:
    """orders-0: LSO 18, LEO=HW 20; orders-1: LSO 19, LEO=HW 20; orders-2: LEO=HW=LSO 20 (an open transaction on
    the first two; narrow cells: neighbouring offsets' labels cannot stand side by side)."""
    c = Cluster(brokers=1, seed=1)
    c.create_topic("orders", partitions=3)
    plain = Producer({"bootstrap.servers": c.bootstrap})
    for part, n in ((0, 18), (1, 19), (2, 20)):
        for i in range(n):
            plain.produce("orders", value=b"%d" % i, partition=part)
    plain.flush()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "t"})
    p.init_transactions()
    p.begin_transaction()
    for part in (0, 0, 1):
        p.produce("orders", value=b"b", partition=part)
    p.flush()
    return c


def test_a_snapshots_mark_labels_of_three_aligned_rows_do_not_meet():
    """Three rows with labels at the same offsets: orders-1's second label cannot go under its row (orders-2's label
    stands there) and, stacked above it, it met orders-0's second label under orders-0 (the old alternating rule).
    Each label stays beside its own row: between the cells of the rows over and under it, inside the plot."""
    snap = log_snapshot(_three_rows_aligned(), [("orders", 0), ("orders", 1), ("orders", 2)])
    assert touching(snap) == []
    _beside_own_rows(snap, 3)


def _beside_own_rows(snap, n: int) -> None:
    boxes = {what: box for what, _, box in label_boxes(snap)}
    from widgets.legible import _frame
    _, Y, (_, top, _, plot_h) = _frame(snap)
    for k, a in enumerate(snap.layout.annotations):
        if a.showarrow is False and a.text[:3] in ("LEO", "HW ", "HW=", "LSO"):
            box = boxes[f"annotation {k}"]
            row = round(a.y + 0.42)
            above = Y(row - 1 + 0.28) if row > 0 else top        # the cells of the row over it (bar half-width 0.28)
            below = Y(row + 1 - 0.28) if row < n - 1 else top + plot_h
            assert above <= box[2] and box[3] <= below, (a.text, row, box, above, below)


def test_a_snapshots_neighbouring_mark_labels_alternate_around_their_row():
    """A row with marks at two neighbouring offsets (an open transaction: LSO 2, LEO=HW 3) on a narrow picture: the
    second label goes under its row, not stacked into the row over it nor into the title."""
    c = _three_rows_aligned()
    snap = log_snapshot(c, [("orders", 0)], width=700)
    labels = {a.text: a for a in snap.layout.annotations}
    assert touching(snap) == [] and labels["LSO 18"].yshift == 2
    assert labels["LEO=HW 20"].yshift < 0                          # under its row
    _beside_own_rows(snap, 1)


def test_a_snapshots_neighbouring_mark_labels_stay_beside_their_own_row():
    """Three rows of an open transaction's marks (LSO 2, LEO=HW 3; the third row every mark at 3) in a narrow
    picture: the first labels stand above their rows, the others move only as far as they must, and each stays
    beside its own row, clear of the other rows' cells and inside the plot (not into the title)."""
    c = Cluster(brokers=1, seed=1)
    c.create_topic("orders", partitions=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "t"})
    p.init_transactions()
    p.begin_transaction()
    for i in range(3):
        p.produce("orders", value=b"a%d" % i, partition=i)
    p.commit_transaction()
    p.begin_transaction()
    for i in (0, 1):
        p.produce("orders", value=b"b%d" % i, partition=i)
    p.flush()
    plain = Producer({"bootstrap.servers": c.bootstrap})
    plain.produce("orders", value=b"c2", partition=2)
    plain.flush()
    snap = log_snapshot(c, [("orders", 0), ("orders", 1), ("orders", 2)], width=400)
    assert touching(snap) == []
    at = {(a.text, round(a.y, 2)): (a.xshift or 0, a.yshift) for a in snap.layout.annotations}
    assert at[("LSO 2", -0.42)] == at[("LSO 2", 0.58)] == at[("LEO=HW=LSO 3", 1.58)] == (0, 2)
    assert at[("LEO=HW 3", -0.42)] != (0, 2) and at[("LEO=HW 3", 0.58)] != (0, 2)     # they would meet 'LSO 2'
    _beside_own_rows(snap, 3)


def test_a_consumer_position_at_the_logs_end_is_written_inside_the_picture():
    """Chapter 03 draws consumers' positions under a row: at the log's end the words, centred on the arrow, ran
    past the plot's right edge (under the legend, when it stood there); they end at the arrow instead."""
    c = _three_rows_aligned()
    for positions in ({0: [(18, "read_committed position"), (20, "read_uncommitted position")]},
                      {0: [(20, "both consumers' position")]}):
        snap = log_snapshot(c, [("orders", 0)], positions=positions, width=700)
        assert touching(snap) == [] and off_picture(snap) == []
        assert [a.xanchor for a in snap.layout.annotations if a.text.endswith("position")][-1] == "right"


def test_type_under_the_projectors_floor_is_found_in_labels_and_axis_ticks():
    import plotly.graph_objects as go

    from widgets.legible import SMALLEST_PX
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1], mode="text", text=["ok", "tiny"],
                               textfont=dict(size=[SMALLEST_PX, 9])))
    fig.add_annotation(x=0.5, y=0.5, text="small note", showarrow=False, font=dict(size=SMALLEST_PX - 1))
    fig.update_layout(yaxis=dict(tickvals=[0, 1], ticktext=["#1 0ms", "#2 3ms"], tickfont=dict(size=9)))
    found = {(what, text) for what, text, _ in too_small(fig)}
    assert found == {("trace 0 #1", "tiny"), ("annotation 0", "small note"), ("yaxis ticks", "#1 0ms #2 3ms")}
    fig.update_annotations(font=dict(size=SMALLEST_PX))
    fig.update_layout(yaxis=dict(tickfont=dict(size=SMALLEST_PX)))
    assert {what for what, _, _ in too_small(fig)} == {"trace 0 #1"}


def test_words_in_a_short_bar_are_found_at_the_size_plotly_shrinks_them_to():
    import plotly.graph_objects as go

    fig = go.Figure(go.Bar(y=["a"], x=[1], orientation="h", text=["readable from 9004 ms"], textposition="inside",
                           textfont=dict(size=14)))
    fig.update_layout(width=700, xaxis=dict(range=[0, 10]), margin=dict(l=10, r=10))
    assert [text for _, text, _ in too_small(fig)] == ["readable from 9004 ms"]      # 68 px of bar for ~150 px
    fig.update_layout(xaxis=dict(range=[0, 2]))
    assert too_small(fig) == []


def test_category_axes_and_domain_anchored_words_are_placed_where_plotly_draws_them():
    """A bar chart over named categories (place 0, 1, 2 in order of appearance), and a line's label anchored to the
    top of the plot area ('y domain', as add_vline writes it), not at y=1 of the data."""
    import plotly.graph_objects as go
    fig = go.Figure(go.Bar(x=["at most once", "at least once", "idempotent"], y=[0, 2, 1]))
    fig.add_vline(x=1, annotation_text="here", annotation_position="top")
    fig.update_layout(width=700, height=400, margin=dict(l=50, r=50, t=50, b=50))
    box = {what: b for what, _, b in label_boxes(fig)}["annotation 0"]
    assert (box[0] + box[1]) / 2 == pytest.approx(50 + 600 * (1.5 / 3))     # category 1 of [-0.5, 2.5]
    assert box[3] == pytest.approx(50)                                     # standing on the plot's top edge


def test_a_title_longer_than_its_picture_is_found():
    """plotly never wraps a title: one wider than the picture is cut off at its right edge."""
    import plotly.graph_objects as go

    long = "Transaction states: blue arrows are the moves shop-1 made (commit, then abort), grey ones the other legal moves"
    fig = go.Figure(layout=dict(width=840, title=long, font=dict(size=14)))
    assert off_picture(fig) == [("title", long)]
    fig.update_layout(title=long.replace(", grey", ",<br>grey"))
    assert off_picture(fig) == []
