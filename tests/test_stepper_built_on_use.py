"""What a stepper builds when it opens and what waits until a person opens it: the closed panels (Filter, Faults,
Branches) and the tabs after the first (Coordinators, Messages, Trace) are built on first use, drawn from the run
at the current step -- the same pictures and menus as if they had been there from the start."""
from __future__ import annotations

import ipywidgets as W

from widgets import Stepper
from widgets.stepper_ui import TOOLS


def _drawn(fig) -> dict:
    """A figure as drawn: its traces and layout, without the ids plotly gives each trace."""
    d = fig.to_dict()
    return {"data": [{k: v for k, v in t.items() if k != "uid"} for t in d["data"]], "layout": d["layout"]}


def _widgets_opened(make) -> tuple:
    before = set(W.widgets.widget._instances)
    made = make()
    return made, [w for k, w in W.widgets.widget._instances.items() if k not in before]


def test_a_stepper_builds_no_widget_until_shown_and_then_its_first_tab_and_controls_only():
    s, opened = _widgets_opened(lambda: Stepper("commit-visible-atomically", at="prepare-commit"))
    assert opened == []                                  # a stepper a check cell only reads opens nothing
    assert "PrepareCommit" in s.narration and s.position > 0
    box, opened = _widgets_opened(lambda: s.widget)      # what displaying it does
    assert isinstance(box, W.VBox) and box is s.widget
    assert [b.children for b in s._tool_boxes] == [(), (), ()] and s._tools.selected_index is None
    assert s._tabs.selected_index == 0 and s._tabs.children[0] is s.log_strip.figure
    assert all(b.children == () for b in s._tabs.children[1:])
    assert sum(isinstance(w, W.Dropdown) for w in opened) == 0          # every menu is in a closed panel
    assert sum(type(w).__name__ == "FigureWidget" for w in opened) == 1  # the partition logs
    # what a person sees first is all there, drawn at the step the stepper is on
    assert s._btn_step.description == "Step" and s._slider.max == s.length and s._slider.value == s.position
    assert f"step {s.position} of {s.length}" in s._narr.value and "★" in s._narr.value
    assert len(s._chapters.children) - 1 == len(s.key_moments) > 0
    assert s.log_strip.updates > 0 and s.log_strip.figure.layout.yaxis.ticktext
    s.close()


def test_opening_a_panel_builds_its_controls_set_from_the_run_at_this_step():
    s = Stepper("commit-visible-atomically", at="prepare-commit")
    s._tools.selected_index = TOOLS.index("Faults")                  # what a click on the panel's title does
    faults = s._tool_boxes[TOOLS.index("Faults")].children
    assert faults and s._btn_crash in faults[0].children[1].children
    eager = Stepper("commit-visible-atomically")
    eager._tools.selected_index = TOOLS.index("Faults")             # opened at step 0, then stepped there
    eager.goto("prepare-commit")
    for name in ("_fault_node", "_fault_msg", "_lead_tp"):
        assert getattr(s, name).options == getattr(eager, name).options, name
    assert s._fault_msg.options, "the messages in flight at this step"
    assert s._tool_boxes[TOOLS.index("Branches")].children == ()      # the others stay unbuilt
    s.crash("broker-0")                                               # a fault: the branch menu, once opened, has it
    s._tools.selected_index = TOOLS.index("Branches")
    assert [v for _, v in s._branch_dd.options] == list(s.history.branches) and s._branch_dd.value == s.branch
    s.close(), eager.close()


def test_code_that_reads_a_control_builds_its_panel():
    s = Stepper("dropped-ack-dedup")
    assert s._tool_boxes[TOOLS.index("Filter")].children == ()
    s._f_api.value = "Produce"                                        # as a person choosing Produce in Filter
    assert s._tool_boxes[TOOLS.index("Filter")].children and s.filter.api == "Produce"
    s.step()
    assert all(e.api == "Produce" for e in s.entries() if e.kind == "deliver")
    s.close()


def test_a_tab_opened_late_draws_what_it_would_have_drawn_from_the_start():
    late = Stepper("commit-visible-atomically")
    eager = Stepper("commit-visible-atomically")
    eager._tabs.selected_index = 2                                    # Messages, open from the start
    eager._tabs.selected_index = 1                                    # Coordinators
    for s in (late, eager):
        s.goto("prepare-commit")
        s.step(2)
    assert "messages" not in late._views and "coordinators" not in late._views
    late._tabs.selected_index = late._tab_names.index("Messages")
    late._tabs.selected_index = late._tab_names.index("Coordinators")
    for name in ("messages", "coordinators"):
        a, b = getattr(late, name).figure, getattr(eager, name).figure
        assert _drawn(a) == _drawn(b), name
        assert late._tabs.children[late._tab_names.index(name.capitalize())].children == \
            (getattr(late, name).widget if name == "coordinators" else a,)
        assert [t.get("name") for t in a._widget_data] == [t.name for t in a.data]   # the browser gets it whole
    assert late.coordinators.ids_html.value == eager.coordinators.ids_html.value
    late._tabs.selected_index = late._tab_names.index("Trace")
    assert late._trace_html.value == late._trace_view() and "PrepareCommit" in late._trace_html.value
    late.step()                                                       # built views follow every step from now on
    assert late._trace_html.value == late._trace_view()
    assert late.messages.figure.data[1].hovertext[0].startswith(f"step {late.position} ")
    late.close(), eager.close()


def test_a_lab_stepper_builds_its_first_picture_and_waits_with_messages_and_trace():
    s = Stepper("rocketmq-end-transaction-lost")
    assert s.coordinators is None and s._tab_names == ["Half and op topics", "Messages", "Trace"]
    assert s._tabs.children[0] is s.lab_views[0][1].widget and "messages" not in s._views
    assert s.messages.figure.data[1].hovertext                        # read from code: built, at this step
    assert s._tabs.children[1].children == (s.messages.figure,)
    s.close()


def test_pictures_read_from_code_before_the_stepper_is_shown_are_in_their_tabs_when_it_is():
    s = Stepper("commit-visible-atomically", at="prepare-commit")
    assert "PrepareCommit" in s.coordinators.txn_log_html.value and s.messages.last_arrows   # a check cell's reads
    s.widget._repr_mimebundle_()                                      # then the learner shows it
    assert s._tabs.children[s._tab_names.index("Coordinators")].children == (s.coordinators.widget,)
    assert s._tabs.children[s._tab_names.index("Messages")].children == (s.messages.figure,)
    fig = s.messages.figure
    assert [t.get("name") for t in fig._widget_data] == [t.name for t in fig.data]   # sent whole when shown
    s.close()

