"""A step redraws only the pictures on screen: the chosen tab's (or the trace), and presenter mode's picture on its
stage.  A picture off screen waits, and is drawn at the current step when its tab is chosen again or code reads
it -- the same picture a view built fresh at that step draws.  Before the widget is built, code is the only reader
and every picture it built follows every step."""
from __future__ import annotations

from widgets import Stepper
from widgets.lab_views import HalfTopicView

SCENARIO = "commit-visible-atomically"


def _drawn(fig) -> dict:
    """A figure as drawn: its traces and layout, without the ids plotly gives each trace."""
    d = fig.to_dict()
    return {"data": [{k: v for k, v in t.items() if k != "uid"} for t in d["data"]], "layout": d["layout"]}


def _picture(view) -> dict:
    """What a view shows: its figure as drawn and, for the coordinator view, its tables."""
    out = {"figure": _drawn(view.figure)}
    for name in ("ids_html", "txn_log_html", "offsets_html"):
        if hasattr(view, name):
            out[name] = getattr(view, name).value
    return out


def _fresh(s: Stepper, name: str) -> dict:
    """The picture ``name`` as a view built now, at the stepper's current step, draws it."""
    view = s._make_view(name)
    view.update(s.cluster)
    return _picture(view)


def _select(s: Stepper, title: str) -> None:
    s._tabs.selected_index = s._tab_names.index(title)       # what a click on the tab does


def _opened_everything(**kw) -> Stepper:
    """A stepper a learner has looked at: every tab opened once, then back on the partition logs."""
    s = Stepper(SCENARIO, granularity="event", **kw)
    s.widget._repr_mimebundle_()                                # shown
    for title in ("Coordinators", "Messages", "Trace", "Partition logs"):
        _select(s, title)
    return s


def test_a_step_does_not_redraw_the_tabs_the_learner_is_not_looking_at():
    s = _opened_everything()
    views = s._views                                             # (read past the accessors, which redraw)
    before = {name: (views[name].updates, _picture(views[name])) for name in ("messages", "coordinators")}
    strip_updates, trace = views["log_strip"].updates, s._trace_html.value
    assert s.step_until("sending COMMIT markers")
    assert views["log_strip"].updates > strip_updates                  # the chosen tab follows every step
    assert _picture(views["log_strip"]) == _fresh(s, "log_strip")
    for name, (updates, picture) in before.items():
        assert _fresh(s, name) != picture, f"{name}: the step changed what it would show"
        assert (views[name].updates, _picture(views[name])) == (updates, picture), f"{name} was redrawn off screen"
    assert s._trace_html.value == trace != s._trace_view()             # the trace tab waits too
    s.close()


def test_a_tab_chosen_again_shows_the_current_step():
    s = _opened_everything()
    assert s.step_until("sending COMMIT markers")
    for title, name in (("Messages", "messages"), ("Coordinators", "coordinators")):
        _select(s, title)
        assert _picture(s._views[name]) == _fresh(s, name), name
    _select(s, "Trace")
    assert s._trace_html.value == s._trace_view()
    s.step(3)                                                     # the partition logs wait now, and come back
    strip = s._views["log_strip"]
    waited = _picture(strip)
    assert waited != _fresh(s, "log_strip")
    _select(s, "Partition logs")
    assert _picture(strip) == _fresh(s, "log_strip")
    assert s._tabs.children[0] is strip.figure
    s.close()


def test_code_reading_a_picture_gets_the_current_step_whatever_tab_is_chosen():
    s = _opened_everything()
    _select(s, "Trace")                                           # every picture off screen
    assert s.step_until("sending COMMIT markers")
    assert s.messages.last_arrows and _picture(s.messages) == _fresh(s, "messages")
    assert _picture(s.coordinators) == _fresh(s, "coordinators")
    assert _picture(s.log_strip) == _fresh(s, "log_strip")
    assert s._tabs.selected_index == s._tab_names.index("Trace")  # reading moved no tab
    s.close()


def test_a_picture_code_read_follows_every_step_whatever_tab_is_chosen():
    """``m = s.messages`` in a cell of its own shows the diagram there: stepping with the stepper (its partition
    logs chosen) moves that picture too.  A picture code never read still waits off screen."""
    s = _opened_everything()                                      # the partition logs chosen
    m = s.messages
    coordinators = s._views["coordinators"]
    updates = coordinators.updates
    assert s.step_until("sending COMMIT markers")
    assert _picture(m) == _fresh(s, "messages")
    assert coordinators.updates == updates
    s.step(2)
    assert _picture(m) == _fresh(s, "messages")
    assert s._tabs.selected_index == s._tab_names.index("Partition logs")
    s.close()


def test_back_a_jump_and_a_branch_switch_off_screen_show_where_the_stepper_is():
    s = _opened_everything()
    assert s.step_until("sending COMMIT markers")
    far = s.position
    _select(s, "Coordinators")
    s.back(4)                                                     # re-executed from the seed
    s._slider.value = far + 6                                     # the slider jumps forward
    assert s.position == far + 6
    s.crash("broker-1")                                           # a new branch from here
    crashed = s.branch
    s.step(5)
    s.switch("main", far - 2)                                     # back on the first branch, earlier
    _select(s, "Messages")
    assert _picture(s._views["messages"]) == _fresh(s, "messages")
    _select(s, "Partition logs")
    assert _picture(s._views["log_strip"]) == _fresh(s, "log_strip")
    s.switch(crashed)
    _select(s, "Coordinators")
    assert s.branch == crashed and _picture(s._views["coordinators"]) == _fresh(s, "coordinators")
    s.close()


def test_a_tab_chosen_before_the_stepper_is_shown_is_the_one_that_follows():
    s = Stepper(SCENARIO, granularity="event")
    _select(s, "Messages")                                        # the widget is built, not yet on the screen
    strip, messages = s._views["log_strip"], s._views["messages"]
    strip_picture, updates = _picture(strip), messages.updates
    assert s.step_until("sending COMMIT markers")
    assert messages.updates > updates and _picture(messages) == _fresh(s, "messages")
    assert _picture(strip) == strip_picture != _fresh(s, "log_strip")   # the first tab, not chosen, waits
    s.widget._repr_mimebundle_()                                  # shown: the browser gets every figure whole
    assert [t.get("name") for t in strip.figure._widget_data] == [t.name for t in strip.figure.data]
    _select(s, "Partition logs")
    assert _picture(strip) == _fresh(s, "log_strip")
    s.close()


def test_pictures_code_read_before_the_stepper_is_built_follow_every_step():
    s = Stepper(SCENARIO, skip_background=True)
    strip, messages = s.log_strip, s.messages                     # a check cell keeps them and steps
    assert s.step_until("sending COMMIT markers")
    assert "UI" not in s._built
    assert _picture(strip) == _fresh(s, "log_strip") and _picture(messages) == _fresh(s, "messages")
    s.close()


def test_presenter_mode_redraws_the_picture_on_its_stage_and_the_other_when_picked():
    s = _opened_everything()
    box = s.present()
    logs, messages = s._presenter_views
    assert s.presenter_picture is logs.figure
    pick = box.children[1].children[-1]                           # "show": partition logs / messages
    logs_updates, messages_updates, waited = logs.updates, messages.updates, _picture(messages)
    assert s.step_until("sending COMMIT markers")
    assert logs.updates > logs_updates
    assert (messages.updates, _picture(messages)) == (messages_updates, waited)
    pick.value = "messages"                                       # what a click on the toggle does
    assert s.presenter_picture is messages.figure and messages.updates > messages_updates
    fresh = s._make_view("messages")                              # presenter mode's own size, drawn at this step
    fresh.update(s.cluster)
    assert messages.last_arrows == fresh.last_arrows and messages.last_labels == fresh.last_labels
    logs_updates = logs.updates
    assert s.step_until("wrote a COMMIT marker")
    assert logs.updates == logs_updates                           # off the stage now: it waits
    lines = [(line, s.log_strip.line_positions(line)) for line in ("LEO", "HW", "LSO")]   # the tab's, current
    assert [(line, logs.line_positions(line)) for line in ("LEO", "HW", "LSO")] != lines
    assert s.presenter_views[0] is logs                           # read from code: drawn at this step
    assert [(line, logs.line_positions(line)) for line in ("LEO", "HW", "LSO")] == lines
    s.close()


def test_a_lab_steppers_own_tab_waits_off_screen_and_shows_the_current_step_when_chosen():
    s = Stepper("rocketmq-end-transaction-lost", skip_background=True)
    s.widget._repr_mimebundle_()
    half = s._lab_views[0][1]
    _select(s, "Messages")
    shown = half.transactions.value
    assert s.step_until("the half message is stored")
    fresh = HalfTopicView()
    fresh.update(s.lab)
    assert fresh.transactions.value != shown == half.transactions.value      # not redrawn off screen
    _select(s, "Half and op topics")
    assert half.transactions.value == fresh.transactions.value
    assert _drawn(half.half.figure) == _drawn(fresh.half.figure)
    s.close()
