"""The stepper's pictures, headless: one numbering, a simulated-time axis with labelled arrows, one visual
language for the live log strip and the chapters' snapshots, the invariants panel, faults picked from the pictures
and presenter mode."""
from __future__ import annotations

import pytest

from txnlab import Cluster, Producer, gallery
from txnlab.gallery import BASE_CONFIG
from widgets import Stepper
from widgets.log_strip import COLORSCALE
from widgets.pictures import LINES, STATUS, idle_words
from widgets.snapshots import log_snapshot


def names(fig) -> set:
    return {t.name for t in fig.data if t.showlegend is not False}


def test_every_view_says_the_same_step_number():
    s = Stepper("commit-visible-atomically", at="prepare-commit")
    here = s.position
    assert f"step {here} of {s.length}" in s._narr.value
    assert s.messages.figure.data[1].hovertext[0].startswith(f"step {here} ")       # the current-step band
    assert s._slider.value == here
    sent_steps = [int(h.split("sent at step ")[1].split(" ")[0]) for tr in s.messages.figure.data[2:8]
                  for h in (tr.hovertext or ()) if h and "sent at step" in h]
    assert sent_steps and max(sent_steps) <= here          # arrows speak the stepper's numbering, not kernel ids
    s.close()


def test_arrows_are_labelled_with_their_api_and_a_response_with_its_error():
    s = Stepper("commit-visible-atomically", granularity="event")
    s.step_until(lambda st: "COORDINATOR_NOT_AVAILABLE" in st.narration)
    labels = set(s.messages.last_labels.values())
    assert "FindCoordinator ✗ COORDINATOR_NOT_AVAILABLE" in labels
    assert "FindCoordinator" in labels and any(lab.endswith(" ✓") for lab in labels)
    drawn = s.messages.figure.data[s.messages._n + 4]
    assert set(drawn.text) == {lab for lab in labels}                     # drawn on the picture, not only hovered
    s.close()


def test_a_lost_message_is_marked_on_its_arrow():
    s = Stepper("dropped-ack-dedup", at="ack-lost")
    assert "Produce response ✗ lost" in s.messages.last_labels.values()
    s.close()


def test_the_time_axis_is_simulated_time_with_idle_gaps_compressed_and_labelled():
    s = Stepper("transaction-timeout-abort", at="timed-out")
    axis = s.messages.axis
    assert axis.gaps, "the transaction's 3 s of silence is an idle gap"
    gap_text = s.messages.figure.data[s.messages._n + 5].text
    assert list(gap_text) == [idle_words(ms) for _, ms in axis.gaps]
    ys = [axis(k) for k in sorted(axis.y)]
    assert ys == sorted(ys)                                                 # time runs down, never back
    ticks = s.messages.figure.layout.yaxis.ticktext
    assert ticks and all(t.endswith(" ms") for t in ticks)
    assert "simulated time" in s.messages.figure.layout.yaxis.title.text
    s.close()


def test_the_log_strip_shows_values_in_bordered_cells_and_names_every_colour():
    s = Stepper("dropped-ack-dedup", at="plain-duplicate")
    strip = s.log_strip.figure
    row = next(t for t in strip.data if t.name == "orders-1")
    assert list(row.text).count("a") >= 2, "the plain producer's duplicate can be seen: a, b, c twice"
    assert row.marker.line.width > 0
    legend = names(strip)
    for colour, words, _ in STATUS.values():
        assert words in legend
    for *_, words in LINES.values():
        assert words in legend
    assert strip.layout.font.size >= 14 and strip.layout.yaxis.tickfont.size >= 14
    assert strip.layout.uniformtext.minsize >= 14
    s.close()


def test_live_and_static_log_pictures_speak_one_language():
    sc = gallery.load("abort-hidden-from-read-committed")
    c, _ = sc.play()
    snap = log_snapshot(c, [("orders", 0)])
    live_colours = {colour for _, colour in COLORSCALE}
    snap_colours = {t.marker.color for t in snap.data if t.type == "bar"}
    assert snap_colours <= live_colours == {colour for colour, _, _ in STATUS.values()}
    assert {words for _, words, _ in STATUS.values()} <= names(snap)
    cells = {t.name: list(t.text) for t in snap.data if t.type == "bar"}
    # (the values cut in the middle to fit their cells in 14 px type; the hover keeps them whole)
    assert cells["ABORT marker"] == ["ABORT"] and cells["transactional, aborted"] == ["abort…-1", "abort…-2"]
    hover = {t.name: list(t.hovertext) for t in snap.data if t.type == "bar"}
    assert ["aborted-1" in hover["transactional, aborted"][0], "aborted-2" in hover["transactional, aborted"][1]] == \
        [True, True]


def test_a_snapshot_can_print_each_record_s_producer_id_and_sequence_on_its_cell():
    c = Cluster(brokers=1, seed=1)
    c.create_topic("orders", partitions=2)
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True})
    for v, part in ((b"a1", 0), (b"a2", 0), (b"b1", 1)):
        p.produce("orders", value=v, partition=part)
    p.flush()
    pid = c.log("orders", 0).batches[0].producer_id
    snap = log_snapshot(c, [("orders", 0), ("orders", 1)], headers=True)
    texts = [x for t in snap.data if t.type == "bar" for x in t.text]
    assert texts == [f"a1<br>pid {pid} · seq 0", f"a2<br>pid {pid} · seq 1", f"b1<br>pid {pid} · seq 0"]
    plain = log_snapshot(c, [("orders", 0)])
    assert [x for t in plain.data if t.type == "bar" for x in t.text] == ["a1", "a2"]


def test_the_invariants_panel_is_green_on_a_correct_run():
    s = Stepper("commit-visible-atomically", at="complete")
    checks = s.invariants
    assert [ok for _, ok, _ in checks] == [True] * len(checks) and len(checks) >= 3
    assert "txl-bad" not in s._status.value and "LSO ≤ HW ≤ LEO on every leader ✓" in s._status.value
    s.close()


def _no_dedup_lab(seed: int) -> Cluster:
    c = Cluster(brokers=3, seed=seed, config=dict(BASE_CONFIG), mutations=("no-dedup",))
    c.create_topic("orders", partitions=2, replication_factor=3)
    return c


def test_a_broken_invariant_shows_red_at_the_step_it_breaks():
    s = Stepper(gallery.load("dropped-ack-dedup").run, lab=_no_dedup_lab)
    name = "no duplicate of an idempotent producer's batch"
    s.step_until(lambda st: dict((n, ok) for n, ok, _ in st.invariants)[name] is False)
    assert "orders-0: producer id" in s._status.value and "txl-bad" in s._status.value
    s.back()
    assert dict((n, ok) for n, ok, _ in s.invariants)[name] is True
    s.close()


def test_clicking_a_log_row_picks_its_broker_and_crash_applies():
    s = Stepper("commit-visible-atomically", at="in-logs")
    bar = next(t for t in s.log_strip.figure.data if t.name == "orders-0")
    leader = s.cluster.leader("orders", 0)
    row_y = next(r[3] for r in s.log_strip._rows if r[:3] == ("orders", 0, leader))
    cell = list(bar.y).index(row_y)                       # a cell of the leader's replica of orders-0
    s.log_strip._clicked_bar(bar, type("P", (), {"point_inds": [cell]})())
    assert s._fault_node.value == f"broker-{leader}" and s._tools.selected_index == 1    # the Faults panel opens
    s._btn_crash.click()
    assert not s.cluster.broker(leader).alive and s.branch != "main"
    s.close()


@pytest.mark.parametrize("name", ["commit-visible-atomically", "2pc-transfer"])
def test_presenter_mode_puts_controls_narration_and_the_picture_on_one_screen(name):
    s = Stepper(name)
    p = s.present()
    kids = p.children
    assert s._btn_step in _walk(p) and s._narr in _walk(p)
    picture = s.presenter_picture
    assert picture.layout.width <= 1280 and picture.layout.height <= 480
    assert "font-size:2" in s._narr.value or "txl-present" in kids[0].value
    s._btn_step.click()
    assert s.position > 0
    s.close()


def _walk(w):
    out = [w]
    for c in getattr(w, "children", ()):
        out += _walk(c)
    return out


def test_the_static_state_machine_is_the_live_views_drawing():
    from widgets.snapshots import coordinator_snapshot
    c, _ = gallery.load("zombie-fenced").play()
    fig = coordinator_snapshot(c, title="after the fence")
    ids = next(t for t in fig.data if t.name == "transactional ids")
    assert [t.split(" ")[0] for t in ids.text] == ["copier"]
    assert "CompleteCommit" in " ".join(ids.hovertext)
    assert fig.layout.title.text == "after the fence"


def test_a_transactional_ids_path_is_drawn_on_the_live_views_state_machine():
    from widgets.snapshots import state_machine_snapshot
    fig = state_machine_snapshot(["Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "Ongoing", "PrepareAbort"])
    taken = [t.name for t in fig.data if t.name.endswith(" taken")]
    assert taken == ["Empty->Ongoing taken", "Ongoing->PrepareCommit taken", "PrepareCommit->CompleteCommit taken",
                     "CompleteCommit->Ongoing taken", "Ongoing->PrepareAbort taken"]


def _idle_reader(**config) -> Cluster:
    from txnlab import Consumer
    c = Cluster(brokers=3, seed=0, config=config)
    c.create_topic("t", partitions=1, replication_factor=3)
    reader = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
    reader.subscribe(["t"])
    reader.poll(1.0)
    c.advance(30_000)
    return c


def test_the_message_diagram_of_a_bounded_trace_draws_its_last_steps_as_the_full_trace_does():
    from widgets.spacetime import SpaceTime
    bounded, full = _idle_reader(**{"sim.trace.keep.steps": 200}), _idle_reader()
    assert bounded.kernel.trace.first_position > 1_000          # most of the run was discarded
    drawn = {}
    for name, c in (("bounded", bounded), ("full", full)):
        view = SpaceTime(window=40, show_background=True)
        view.update(c)
        drawn[name] = (view.last_arrows, [view.axis(k) for k in sorted(view.axis.y)],
                       [tuple(tr.x or ()) for tr in view.figure.data])
    assert drawn["bounded"][0], "the heartbeats and fetches of the last 40 steps are drawn"
    assert drawn["bounded"] == drawn["full"]


def test_the_status_line_says_what_one_step_is_after_the_granularity_toggle():
    s = Stepper("commit-visible-atomically", granularity="event")
    assert "stepping: by event" in s._status.value
    s._zoom.value = "moment"
    assert "stepping: by moment" in s._status.value and "every event" not in s._status.value
    s._zoom.value = "exchange"
    assert "stepping: by exchange" in s._status.value
    s._f_api.value = "Produce"                    # a chosen API steps event by event to the matching ones
    assert "stepping: by event, API Produce" in s._status.value
    s.close()


class _BrowserModel:
    """What JupyterLab's plotly widget model holds for a figure: the traces it was sent, changed by every restyle
    and update message the way its front end applies them (a placeholder value is stored as it comes)."""

    def __init__(self, monkeypatch) -> None:
        import plotly.basewidget as bw
        from plotly.basedatatypes import Undefined
        self.traces: dict = {}

        def plain(v):
            if isinstance(v, dict):
                return {k: plain(x) for k, x in v.items()}
            if isinstance(v, (list, tuple)) or hasattr(v, "tolist"):
                return [plain(x) for x in (v.tolist() if hasattr(v, "tolist") else v)]
            return "_undefined_" if v is Undefined else v

        def put(d, path, v):
            *head, last = path.split(".")
            for k in head:
                d = d.setdefault(k, {})
            if v is None:
                d.pop(last, None)
            else:
                d[last] = v

        def style(fig, data, indexes):
            traces = self.traces.setdefault(id(fig), [])
            indexes = list(range(len(traces))) if indexes is None else [indexes] if isinstance(indexes, int) \
                else indexes
            for path, v in plain(data).items():
                v = v if isinstance(v, list) else [v]
                for j, i in enumerate(indexes):
                    put(traces[i], path, v[j % len(v)])

        orig = {n: getattr(bw.BaseFigureWidget, n) for n in ("__init__", "_send_addTraces_msg", "_send_deleteTraces_msg",
                                                            "_send_restyle_msg", "_send_update_msg")}

        def init(fig, *args, **kwargs):          # a figure built with its traces: the model starts with them
            orig["__init__"](fig, *args, **kwargs)
            self.traces[id(fig)] = plain(fig._widget_data)

        def add(fig, new_traces_data):
            self.traces.setdefault(id(fig), []).extend(plain(new_traces_data))
            return orig["_send_addTraces_msg"](fig, new_traces_data)

        def delete(fig, delete_inds):
            for i in sorted(delete_inds, reverse=True):
                del self.traces[id(fig)][i]
            return orig["_send_deleteTraces_msg"](fig, delete_inds)

        def restyle(fig, restyle_data, trace_indexes=None, source_view_id=None):
            style(fig, restyle_data, trace_indexes)
            return orig["_send_restyle_msg"](fig, restyle_data, trace_indexes, source_view_id)

        def update(fig, restyle_data, relayout_data, trace_indexes=None, source_view_id=None):
            style(fig, restyle_data, trace_indexes)
            return orig["_send_update_msg"](fig, restyle_data, relayout_data, trace_indexes, source_view_id)
        for name, fn in (("__init__", init), ("_send_addTraces_msg", add), ("_send_deleteTraces_msg", delete),
                         ("_send_restyle_msg", restyle), ("_send_update_msg", update)):
            monkeypatch.setattr(bw.BaseFigureWidget, name, fn)

    def trace(self, fig, name: str, legend: bool = False) -> dict:
        return next(t for t in self.traces[id(fig)] if t.get("name") == name and (t.get("showlegend") or not legend))


def test_presenter_pictures_drawn_before_they_are_shown_keep_the_legends_colours(monkeypatch):
    from widgets.pictures import CONSUMERS
    model = _BrowserModel(monkeypatch)
    s = Stepper("commit-visible-atomically", at="in-logs")
    s.present()                         # its pictures are drawn now and shown later: the browser draws the model
    s.step(2)
    logs = s.presenter_views[0].figure
    for iso, (colour, symbol) in CONSUMERS.items():
        drawn = model.trace(logs, f"{iso} consumer")
        assert drawn["x"], f"the {iso} reader is drawn"
        assert drawn["marker"]["color"] == colour and drawn["marker"]["symbol"] == symbol
        assert drawn["textfont"]["color"] == colour
    for colour, words, _ in STATUS.values():
        assert model.trace(logs, words, legend=True)["marker"]["color"] == colour
    messages = s.presenter_views[1].figure
    for name in ("requests", "responses"):
        assert model.trace(messages, name)["marker"]["color"] == model.trace(messages, name)["line"]["color"]
    s.close()


def test_a_stepper_shown_after_it_was_built_and_stepped_gives_the_browser_every_pictures_whole_state():
    s = Stepper("commit-visible-atomically", at="in-logs")        # built and stepped before it is shown
    box = s.present()
    for shown in (s.widget, box):
        for fig in s._figures():
            fig._widget_data = []                                  # what a model that missed the messages holds
        shown._repr_mimebundle_()                                  # what the notebook does to show it
        for fig in s._figures():
            assert [t.get("name") for t in fig._widget_data] == [t.name for t in fig.data]
        logs = s.log_strip.figure
        rc = next(t for t in logs._widget_data if t["name"] == "read_committed consumer")
        assert rc["marker"]["color"] == "#2b8a3e" and list(rc["x"]) == [0, 0]
    s.close()


ATOMIC = "offsets atomic with outputs (group copier)"


def _check(s, name=ATOMIC):
    return next((ok, words) for n, ok, words in s.invariants if n == name)


def test_offsets_atomic_with_outputs_holds_at_every_step_of_the_transactional_copier():
    s = Stepper("consume-transform-produce", granularity="exchange")
    seen = []
    while not s.at_end:
        s.step()
        seen.append(_check(s)[0])
        assert seen[-1] is not False, (s.position, _check(s)[1])
    assert seen.count(True) > len(seen) // 2
    s.goto("first-commit")          # totals-0's COMMIT marker landed; __consumer_offsets' is on its way
    g = s.cluster.group_state("copier")
    assert g["offsets"] == {} and list(g["pending_transactional_offsets"].values()) == [{("orders", 0): 2}]
    assert f"{ATOMIC} ✓" in s._status.value      # one decided transaction: both become visible
    s.run_to_end()
    assert s.cluster.group_state("copier")["offsets"] == {("orders", 0): 6} and _check(s)[0] is True
    s.close()


def _naive_copier(c) -> dict:
    """A copier that commits its input offsets with the consumer, outside its transaction, before it commits."""
    from txnlab.gallery.scenario import consumer, producer
    cons = consumer(c, "copier-consumer", "read_committed", group="copier")
    cons.subscribe(["orders"])
    prod = producer(c, "copier-producer", **{"transactional.id": "copier-0"})
    prod.init_transactions()
    batches, idle = 0, 0
    while idle < 3:
        msgs = [m for m in cons.consume(num_messages=2, timeout=1.0) if m.error() is None]
        if not msgs:
            idle += 1
            continue
        idle, batches = 0, batches + 1
        prod.begin_transaction()
        for m in msgs:
            prod.produce("totals", value=f"{int(m.value()) * 10}", partition=0)
        cons.commit(asynchronous=False)           # the bug: the offsets are committed outside the transaction
        if batches == 2:
            prod.abort_transaction()              # the outputs are aborted; the committed offsets stay
        else:
            prod.commit_transaction()
    return {}


def test_offsets_committed_outside_the_transaction_show_red_while_they_disagree_with_the_outputs():
    from dataclasses import replace
    ctp = gallery.load("consume-transform-produce")
    naive = replace(ctp, name="naive-copier", run=_naive_copier, check=lambda c, r, v: None, moments=())
    s = Stepper(naive, granularity="exchange")
    assert s.step_until(lambda st: _check(st)[0] is False)
    ok, words = _check(s)
    assert "committed orders-0 up to offset 2, but input '0' at offset 0 has no committed output in totals" in words
    assert f"{ATOMIC} ✗" in s._status.value and "txl-bad" in s._status.value
    s.step_until(lambda st: _check(st)[0] is True)             # its transaction commits: they agree again
    s.run_to_end()                                             # the aborted batch's input was never copied
    ok, words = _check(s)
    assert ok is False and "input '2' at offset 2 has no committed output" in words
    s.close()


def _covering_labels(view) -> list:
    """Pairs of labels that meet on a message diagram (as its figure says: data, size, range; widgets/legible.py's
    one estimate of a label's box)."""
    from widgets.legible import touching
    return [(a[1], b[1]) for a, b in touching(view.figure)]


@pytest.mark.parametrize("scenario", ["commit-visible-atomically", "consume-transform-produce"])
def test_every_moment_of_a_story_has_a_message_diagram_whose_labels_can_be_read(scenario):
    """Stepping a story moment by moment, no two arrow labels of the message diagram are drawn over each other: the
    diagram holds as many steps as its height has room for, a line of words each (with 40 steps, the busy
    stretches of these two stories had labels on top of each other at 11 of 16 and 32 of 34 moments)."""
    s = Stepper(scenario)
    seen = 0
    while True:
        assert _covering_labels(s.messages) == [], f"at step {s.position}"
        seen += len(s.messages.last_labels)
        if s._ex.at_end:
            break
        s.step()
    assert seen > 100               # the pictures had arrows to label
    s.close()


def test_the_message_diagram_holds_fewer_steps_in_a_lower_picture():
    """The window follows the picture's height: the stepper's diagram and presenter mode's lower one (which gives
    its width to the lanes and has no title over their names)."""
    s = Stepper("commit-visible-atomically", at="prepare-commit")
    s.present()
    shown = next(v for v in s.presenter_views if hasattr(v, "steps_shown"))
    assert s.messages.steps_shown() == 16 and shown.steps_shown() < s.messages.steps_shown()
    assert not shown.figure.layout.title.text and shown.figure.layout.margin.t >= 60
    assert _covering_labels(shown) == []
    s.close()


def test_arrow_labels_do_not_cover_each_other_when_messages_leave_together():
    """At the moment the commit is decided, the coordinator sends EndTxn's answer and its WriteTxnMarkers at once:
    each message in flight ends on its own row and every label on the picture can be read."""
    s = Stepper("commit-visible-atomically", at="prepare-commit")
    fig = s.messages.figure
    drawn = fig.data[s.messages._n + 4]
    flights = fig.data[s.messages._n]
    assert len(flights.y) >= 3 and len(set(flights.y)) == len(flights.y)        # one row per message in flight
    assert sum("WriteTxnMarkers" in t for t in drawn.text) >= 2
    assert _covering_labels(s.messages) == []
    s.close()
