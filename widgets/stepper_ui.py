"""The stepper's controls and its refresh: buttons, keys, sliders, filter, faults, branches, tabs.

Owns the ipywidgets of ``Stepper`` (a mixin: the stepping logic lives in ``stepper.py``) and
``refresh()``, which redraws the views on screen from the live run after each change.  Callbacks only call
the stepper's Python methods, so a button click and the same call from code do the same thing.
Each part is built when a person first sees it, or code first reads it (``_build_panel``, ``_view``): the
widget when it is shown, a closed panel when opened, a tab's picture when its tab is chosen.
Once the widget is built, a step redraws only the pictures on screen (``on_screen.py``).
"""
from __future__ import annotations

import html
from typing import Optional

import ipywidgets as W
import plotly.graph_objects as go

from txnlab.protocol import messages as _messages

from .cluster_view import in_flight_now, transactional_ids
from .coordinator_view import TABLE_CSS
from .history import EVENT_KINDS
from .door_panel import panel_for
from .invariants import panel_html
from .figure_send import ShownBox, sync_state
from .keys import KeyCatcher
from .on_screen import TAB_VIEWS, OnScreen
from .ticks import MomentTicks
from .spacetime import lanes_of

APIS = sorted({getattr(c, "API") for c in vars(_messages).values() if isinstance(c, type) and hasattr(c, "API")})


def apis_of(lab) -> list:
    """The request names a filter can pick: the lab's own (RocketMQ's request codes, 2PC's messages)."""
    own = getattr(lab, "APIS", None)
    return sorted(own) if own else APIS


# the stepper's closed panels and the tabs after the first: built on first use (``StepperUI._build_panel``, ``_view``)
TOOLS = ("Filter", "Faults", "Branches")
PANEL_CONTROLS = {
    "Filter": ("_f_api", "_f_node", "_f_tid", "_f_bg"),
    "Faults": ("_fault_node", "_btn_crash", "_btn_shutdown", "_btn_restart", "_pause_ms", "_btn_pause", "_btn_isolate", "_btn_heal",
               "_lead_tp", "_btn_lead", "_fault_msg", "_delay_ms", "_btn_drop", "_btn_delay", "_btn_dup"),
    "Branches": ("_branch_dd", "_cmp_a", "_cmp_b", "_btn_cmp", "_cmp_out"),
    "Trace": ("_trace_html",),
    # the widget itself: the controls, the slider, the narration, the panels' titles and the tabs
    "UI": ("widget", "_header", "_btn_reset", "_btn_back", "_btn_step", "_play", "_speed", "_slider", "_end", "_zoom",
           "_ticks", "_chapters", "_chapter_key", "_keys", "_narr", "_status", "_tools", "_tool_boxes", "_tabs",
           "_tab_boxes", "_tab_names")}

CSS = """<style>
.txl-narr{border-left:4px solid #ae3ec9;background:#f8f0fc;padding:6px 10px;margin:4px 0;font-size:15px;
          line-height:1.45;min-height:64px}
.txl-narr .txl-head{color:#862e9c;font-size:14px}
.txl-narr .txl-main{font-weight:600}
.txl-narr ul{margin:2px 0 2px 18px;padding:0}
.txl-narr .txl-then{color:#495057}
.txl-status{font-size:14px;color:#495057}
.txl-trace{font-family:monospace;font-size:14px;white-space:pre-wrap;line-height:1.35}
.txl-trace .txl-cur{background:#f3d9fa}
.txl-trace .txl-bg{color:#adb5bd}
.txl-notice{color:#c92a2a}
.txl-key{color:#1864ab;font-weight:700}
.txl-inv{margin-top:3px}.txl-inv span{margin-right:10px;white-space:nowrap}
.txl-ok{color:#2b8a3e}.txl-bad{color:#c92a2a;font-weight:700}.txl-wait{color:#868e96}
.txl-fold{color:#c92a2a;font-weight:600}
.txl-change{color:#2b8a3e}
</style>"""


def _b(description: str, icon: str = "", tooltip: str = "", style: str = "", width: str = "auto") -> W.Button:
    return W.Button(description=description, icon=icon, tooltip=tooltip or description, button_style=style,
                    layout=W.Layout(width=width))


class _BuiltOnUse:
    """A control of a panel that is built on first use: reading it from code builds its panel first, as opening
    the panel does (``stepper._fault_node`` is there whether or not a person has opened Faults)."""

    def __init__(self, panel: str, name: str) -> None:
        self.panel, self.name = panel, name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        obj._build_panel(self.panel)
        return obj.__dict__[self.name]


class StepperUI(OnScreen):
    """Widgets and refresh for ``Stepper``.

    Nothing is built until the stepper is shown (or code reads a part of it); then what a person sees first: the
    controls, the slider with the key moments, the narration and the first tab's picture.  The closed panels
    (Filter, Faults, Branches) and the other tabs (Coordinators, Messages, Trace) are built when first opened, or
    when code reads them, and drawn from the run at the current step: about half the widgets and most of the
    plotly work of opening a stepper wait until a person asks for them (each widget is a message to the
    browser)."""

    # ------------------------------------------------------------------ build
    def _build_ui(self, title: Optional[str]) -> None:
        sc = self.story.scenario
        head = f"<b>{html.escape(title or (sc.title if sc else self.story.name))}</b>"
        if sc is not None:
            head += (f" <span class='txl-status'>(scenario <code>{sc.name}</code>, seed {self.seed})</span>"
                     f"<details><summary>what happens, and the expected ending</summary>"
                     f"<p>{html.escape(sc.description)}</p><p><b>Expected:</b> {html.escape(sc.expected)}</p></details>")
        self._header = W.HTML(CSS + TABLE_CSS + head)
        self._btn_reset = _b("Reset", "fast-backward", "back to step 0 (Home)")
        self._btn_back = _b("Back", "step-backward", "one step back, by re-executing from the seed (←)")
        self._btn_step = _b("Step", "step-forward", "execute exactly one event (→)", "primary")
        self._play = W.Play(value=0, min=0, max=1, interval=250, description="Run", show_repeat=False,
                            tooltip="run / pause")
        self._speed = W.IntSlider(value=4, min=1, max=60, description="steps/s", continuous_update=False,
                                  layout=W.Layout(width="230px"))
        self._slider = W.IntSlider(value=0, min=0, max=1, description="step", continuous_update=False,
                                   layout=W.Layout(width="520px"))
        self._end = W.HTML()
        self._zoom = W.ToggleButtons(options=[("moment", "moment"), ("exchange", "exchange"), ("event", "event")],
                                     value=self.granularity, description="Step by",
                                     tooltips=["one change a picture shows (plumbing folded in)",
                                               "a request and its response", "one kernel event"],
                                     style={"button_width": "86px"})
        self._zoom.observe(self._on_zoom, "value")
        self._ticks = MomentTicks(self._on_tick)          # the key moments, clickable, under the slider's track
        self._chapters = W.HBox(layout=W.Layout(flex_flow="row wrap"))
        self._chapters.add_class("txl-chapters")
        self._chapter_key: tuple = ()
        self._keys = KeyCatcher(self._on_key)
        self._narr = W.HTML()
        self._status = W.HTML()
        self._btn_reset.on_click(lambda _: self.reset())
        self._btn_back.on_click(lambda _: self.back())
        self._btn_step.on_click(lambda _: self.step())
        self._play.observe(self._on_play, "value")
        self._speed.observe(lambda ch: setattr(self._play, "interval", int(1000 / max(1, ch["new"]))), "value")
        self._slider.observe(self._on_slider, "value")

        controls = W.HBox([self._btn_reset, self._btn_back, self._btn_step, W.HTML("&nbsp;&nbsp;Run:"), self._play,
                           self._speed, self._zoom, self._keys],
                          layout=W.Layout(align_items="center", flex_flow="row wrap"))
        position = W.VBox([W.HBox([self._slider, self._end], layout=W.Layout(align_items="center")),
                           self._ticks, self._chapters])
        # Filter, Faults and Branches start closed: each panel's controls are built when it is first opened (or
        # used from code), in the box that stands for it until then
        self._tool_boxes = [W.VBox() for _ in TOOLS]
        tools = W.Accordion(children=self._tool_boxes, titles=TOOLS)
        tools.selected_index = None
        tools.observe(self._on_tool, "selected_index")
        self._tools = tools
        # the first tab's picture is built now; the others when their tab is first opened (or read from code)
        if self._kafka:
            tabs = [("Partition logs", self._view("log_strip").figure), ("Coordinators", None)]
        else:
            tabs = [(title, view.widget) for title, view in self._drawn_lab_views()]
        tabs += [("Messages", None), ("Trace", None)]
        self._tab_names = [t for t, _ in tabs]
        self._tab_boxes = [w if w is not None else W.VBox() for _, w in tabs]
        self._tabs = W.Tab(children=self._tab_boxes, titles=tuple(self._tab_names))
        self._tabs.observe(self._on_tab, "selected_index")
        for name in self._views:                   # pictures code read before the widget was built
            self._place(name)
        self.widget = ShownBox([self._header, controls, position, self._narr, self._status, tools, self._tabs],
                               before_shown=self._sync_figures)

    # --------------------------------------------------------- built on first use
    def _on_tool(self, change) -> None:
        if change["new"] is not None:
            self._build_panel(TOOLS[change["new"]])

    def _on_tab(self, change) -> None:
        name = self._tab_names[change["new"]] if change["new"] is not None else None
        if name in TAB_VIEWS:
            self._view(TAB_VIEWS[name])
        elif name == "Trace":
            self._build_panel("Trace")
        self._show_current()                     # a picture that waited off screen: drawn at this step now

    def _view(self, name: str):
        """The view ``name`` ('coordinators', 'messages'), built, drawn at the current step and put in its tab on
        first use: the tab opened, or the view read from code (``stepper.messages``)."""
        view = self._views.get(name)
        if view is None:
            view = self._views[name] = self._make_view(name)
            view.update(self._ex.cluster)
            if "UI" in self._built:              # the widget exists (perhaps on the screen): the picture goes in
                sync_state(view.figure)          # its tab, and its browser model gets all of it (figure_send.py)
                self._place(name)
        else:
            self._fresh(view)                    # off screen at the last steps: drawn at the current step now
        return view

    def _place(self, name: str) -> None:
        """Put the built view ``name`` in the box of its tab (the first tab's picture is the tab itself)."""
        title = next((t for t, v in TAB_VIEWS.items() if v == name), None)
        if title is not None:
            view = self._views[name]
            self._tab_boxes[self._tab_names.index(title)].children = (getattr(view, "widget", view.figure),)

    def _build_panel(self, name: str) -> None:
        """Build the controls of a panel ('Filter', 'Faults', 'Branches', 'Trace') once, set from the current run."""
        if name in self._built:
            return
        if name != "UI":
            self._build_panel("UI")                # a panel is a part of the stepper's widget
        self._built.add(name)
        if name == "UI":
            self._build_ui(self._title)
            self.refresh()
            return
        if name == "Trace":
            self._trace_html = W.HTML(self._trace_view())
            self._tab_boxes[self._tab_names.index("Trace")].children = (self._trace_html,)
            return
        box = self._tool_boxes[TOOLS.index(name)]
        box.children = ({"Filter": self._build_filter, "Faults": self._build_faults,
                         "Branches": self._build_branches}[name](),)
        syncing, self._syncing = self._syncing, True       # (menus set from the run are not a person's choice)
        try:
            self._sync_panel(name, self._ex.cluster)
        finally:
            self._syncing = syncing

    def _build_filter(self) -> W.Widget:
        f = self.filter
        self._f_api = W.Dropdown(options=[("any API", "")] + [(a, a) for a in apis_of(self._ex.cluster)],
                                 description="API", layout=W.Layout(width="240px"))
        self._f_node = W.Dropdown(options=[("any process", "")], description="process", layout=W.Layout(width="250px"))
        self._f_tid = W.Dropdown(options=[("any transactional.id", "")], description="txn id",
                                 layout=W.Layout(width="260px", display=None if self._kafka else "none"))
        self._f_bg = W.Checkbox(value=f.skip_background, description="skip background events",
                                indent=False, layout=W.Layout(width="200px"))
        for w in (self._f_api, self._f_node, self._f_tid, self._f_bg):
            w.observe(self._on_filter, "value")
        return W.VBox([W.HTML("<span class='txl-status'>Step and Back stop only at events that match "
                              "(the trace tab and the message diagram show only those):</span>"),
                       W.HBox([self._f_api, self._f_node, self._f_tid, self._f_bg],
                              layout=W.Layout(flex_flow="row wrap"))])

    def _build_faults(self) -> W.Widget:
        self._fault_node = W.Dropdown(options=[], description="process", layout=W.Layout(width="250px"))
        self._btn_crash = _b("Crash", "bolt", "crash this process now (memory lost; what it wrote to its disk stays)",
                             "danger")
        self._btn_shutdown = _b("Shut down", "power-off", "stop this broker as an operator does: a controlled shutdown "
                                "(the controller moves its leaderships away first), then a clean exit", "warning")
        self._btn_restart = _b("Restart", "redo", "restart this server process (it recovers from its disk)", "success")
        self._pause_ms = W.BoundedIntText(value=5000, min=1, max=10_000_000, description="ms",
                                          layout=W.Layout(width="140px"))
        self._btn_pause = _b("Pause", "pause", "freeze this process for the given ms (a long GC pause)", "warning")
        self._btn_isolate = _b("Isolate", "cut", "cut this process off from every other (network partition)")
        self._btn_heal = _b("Heal", "link", "heal every network partition")
        self._lead_tp = W.Dropdown(options=[], description="partition", layout=W.Layout(width="250px"))
        self._btn_lead = _b("Move leader to it", "exchange",
                            "an operator makes the chosen broker lead this partition (it must be an in-sync replica)")
        self._btn_lead.on_click(lambda _: self._fault(lambda: self.move_leader(
            *self._lead_tp.value, self._fault_node.value)))
        self._fault_msg = W.Dropdown(options=[], description="message", layout=W.Layout(width="430px"))
        self._delay_ms = W.BoundedIntText(value=1000, min=1, max=10_000_000, description="ms",
                                          layout=W.Layout(width="140px"))
        self._btn_drop = _b("Drop", "trash", "lose this message", "danger")
        self._btn_delay = _b("Delay", "clock", "deliver this message later by the given ms", "warning")
        self._btn_dup = _b("Duplicate", "clone", "deliver this message twice")
        self._btn_crash.on_click(lambda _: self._fault(lambda: self.crash(self._fault_node.value)))
        self._btn_shutdown.on_click(lambda _: self._fault(lambda: self.shutdown(self._fault_node.value)))
        self._btn_restart.on_click(lambda _: self._fault(lambda: self.restart(self._fault_node.value)))
        self._btn_pause.on_click(lambda _: self._fault(lambda: self.pause(self._fault_node.value, self._pause_ms.value)))
        self._btn_isolate.on_click(lambda _: self._fault(lambda: self.isolate(self._fault_node.value)))
        self._btn_heal.on_click(lambda _: self._fault(self.heal))
        self._btn_drop.on_click(lambda _: self._fault(lambda: self.drop(self._fault_msg.value)))
        self._btn_delay.on_click(lambda _: self._fault(lambda: self.delay(self._fault_msg.value, self._delay_ms.value)))
        self._btn_dup.on_click(lambda _: self._fault(lambda: self.duplicate(self._fault_msg.value)))
        return W.VBox([
            W.HTML("<span class='txl-status'>Faults happen now, at this step; each one starts a new branch "
                   "(the old one is kept). Click a lane head or an in-flight dot in the message diagram, or a "
                   "row of the partition logs, to pick it here.</span>"),
            W.HBox([self._fault_node, self._btn_crash] + ([self._btn_shutdown] if self._kafka else [])
                   + [self._btn_restart, self._pause_ms, self._btn_pause, self._btn_isolate, self._btn_heal],
                   layout=W.Layout(flex_flow="row wrap")),
            W.HBox([self._fault_msg, self._delay_ms, self._btn_drop, self._btn_delay, self._btn_dup],
                   layout=W.Layout(flex_flow="row wrap"))]
            + ([W.HBox([self._lead_tp, self._btn_lead], layout=W.Layout(flex_flow="row wrap"))]
               if self._kafka else []))

    def _build_branches(self) -> W.Widget:
        self._branch_dd = W.Dropdown(options=[], description="branch", layout=W.Layout(width="520px"))
        self._branch_dd.observe(self._on_branch, "value")
        self._cmp_a = W.Dropdown(options=[], description="compare", layout=W.Layout(width="260px"))
        self._cmp_b = W.Dropdown(options=[], description="with", layout=W.Layout(width="260px"))
        self._btn_cmp = _b("Compare endings", "balance-scale")
        self._cmp_out = W.HTML()
        self._btn_cmp.on_click(lambda _: self._show_compare())
        return W.VBox([self._branch_dd, W.HBox([self._cmp_a, self._cmp_b, self._btn_cmp]), self._cmp_out])

    def _figures(self) -> list:
        return [v.figure for v in self._built_views() if isinstance(getattr(v, "figure", None), go.FigureWidget)]

    def _sync_figures(self) -> None:
        """Before the stepper is shown: every picture's browser model gets its whole state (``figure_send``)."""
        for fig in self._figures():
            sync_state(fig)

    # --------------------------------------------------------------- callbacks
    def _on_key(self, key: str) -> None:
        if key in ("ArrowRight", "n"):
            self.step()
        elif key in ("ArrowLeft", "p"):
            self.back()
        elif key == "Home":
            self.reset()
        elif key == "End":
            self.run_to_end()
        elif key == " ":
            self._play.playing = not self._play.playing

    def _on_play(self, change) -> None:
        if self._syncing:
            return
        new = change["new"]
        if new == self.position + 1:
            self.step()
        elif new != self.position:
            self.jump(new)
        if self.at_end:
            self._play.playing = False

    def _on_zoom(self, change) -> None:
        if not self._syncing:
            self.granularity = change["new"]

    def _on_tick(self, moment: str) -> None:
        """A click on a key moment's tick under the slider: go there."""
        self.goto(moment)

    def _on_slider(self, change) -> None:
        if not self._syncing and change["new"] != self.position:
            self.jump(change["new"])

    def _on_filter(self, change) -> None:
        if self._syncing:
            return
        self.filter.api = self._f_api.value or None
        self.filter.node = self._f_node.value or None
        self.filter.transactional_id = self._f_tid.value or None
        self.filter.skip_background = self._f_bg.value
        if "messages" in self._views:
            self._views["messages"]._sent.clear()
        self.refresh()

    def _on_branch(self, change) -> None:
        if not self._syncing and change["new"] and change["new"] != self.branch:
            self.switch(change["new"])

    def _fault(self, fn) -> None:
        try:
            fn()
        except (ValueError, KeyError) as e:
            self.notice = f"not applied: {e}"
            self.refresh()

    def _show_compare(self) -> None:
        a, b = self._cmp_a.value, self._cmp_b.value
        if a and b:
            self._cmp_out.value = TABLE_CSS + self.compare_html(a, b)

    def select_message(self, msg_id: int) -> None:
        """Pick an in-flight message for Drop / Delay / Duplicate (a click on the diagram does this)."""
        values = [v for _, v in self._fault_msg.options]
        if msg_id in values:
            self._fault_msg.value = msg_id
            self._tools.selected_index = 1
            self.notice = f"picked message #{msg_id}: Drop, Delay or Duplicate it under Faults"
            self._status.value = self._status_html()

    def select_node(self, name: str) -> None:
        """Pick a process for Crash / Restart / Pause (a click on a lane head does this)."""
        values = [v for _, v in self._fault_node.options]
        if name in values:
            self._fault_node.value = name
            self._tools.selected_index = 1
            self.notice = f"picked {name}: Crash, Restart, Pause or Isolate it under Faults"
            self._status.value = self._status_html()

    # ----------------------------------------------------------------- refresh
    def refresh(self) -> None:
        """Redraw the views on screen and every control built so far from the run at the current position; the
        pictures off screen are marked stale (drawn when they come on screen or code reads them)."""
        ex = self._ex
        c = ex.cluster
        self._syncing = True
        try:
            self._redraw_pictures(c)                              # those on screen; the others wait
            if "UI" not in self._built:
                return          # not shown yet: the controls are built, from the run as it is then, when first shown
            length = self.length
            for w in (self._slider, self._play):
                if w.max != length:
                    w.max = max(1, length)
                w.value = self.position
            self._end.value = f"<span class='txl-status'>of {length}</span>"
            self._zoom.value = self.granularity
            self._sync_moments(length)
            self._narr.value = self._narration_html()
            self._status.value = self._status_html()
            self._redraw_trace()
            self._btn_step.disabled = ex.at_end
            self._btn_back.disabled = self.position == 0
            for panel in TOOLS:
                if panel in self._built:
                    self._sync_panel(panel, c)
        finally:
            self._syncing = False

    def _set_options(self, dd: W.Dropdown, options: list) -> None:
        if list(dd.options) != options:
            keep = dd.value
            dd.options = options
            values = [v for _, v in options]
            if keep in values:
                dd.value = keep
            elif values:
                dd.value = values[0]

    def _sync_panel(self, panel: str, c) -> None:
        """Set a built panel's menus from the run: the processes, transactional.ids, partitions, messages in
        flight and branches there are now."""
        if panel == "Filter":
            lanes = lanes_of(c)
            self._set_options(self._f_node, [("any process", "")] + [(n, n) for n in lanes])
            self._set_options(self._f_tid, [("any transactional.id", "")] + [(t, t) for t in transactional_ids(c)])
        elif panel == "Faults":
            self._sync_faults(c)
        elif panel == "Branches":
            self._sync_branches()

    def _sync_faults(self, c) -> None:
        lanes = lanes_of(c)
        procs = []
        for n in lanes:                                  # the lab's own processes, as the fault menu offers them
            node = c.kernel.nodes[n]
            if not getattr(node, "crashable", True):     # Kafka's controller stands for the whole quorum
                continue
            up = node.alive and not getattr(node, "crashed", False)
            procs.append((f"{n} ({'up' if up else 'down'})", n))
        self._set_options(self._fault_node, procs)
        if self._kafka:                                  # Kafka: partitions whose leader may move
            self._set_options(self._lead_tp, [(f"{t}-{p} (leader {s.leader})", (t, p))
                                              for (t, p), s in sorted(c.controller.states.items())
                                              if not t.startswith("__")])
        msgs = [(f"#{m.id} {m.api} {m.kind} {m.src} → {m.dst} (due t={m.deliver_at}ms)", m.id)
                for m in in_flight_now(c)]
        self._set_options(self._fault_msg, msgs)

    def _sync_branches(self) -> None:
        names = list(self.history.branches)
        labels = [(f"{n}: {self.history.labels[n]}", n) for n in names]
        self._set_options(self._branch_dd, labels)
        self._branch_dd.value = self.branch
        self._set_options(self._cmp_a, labels)
        self._set_options(self._cmp_b, labels)
        if len(names) > 1 and self._cmp_a.value == self._cmp_b.value:
            self._cmp_a.value, self._cmp_b.value = names[0], self.branch if self.branch != names[0] else names[-1]

    def _narration_html(self) -> str:
        ex = self._ex
        es = ex.entries()
        head = f"<div class='txl-head'>{html.escape(self.step_words())}</div>" + self._stop_html()
        if not es:
            body = "<div class='txl-main'>" + html.escape(self.narration) + "</div>"
            return f"<div class='txl-narr'>{head}{body}</div>"
        parts = []
        for e in es:
            if e.kind in EVENT_KINDS:
                details = "".join(f"<li>{html.escape(d)}</li>" for d in e.details)
                parts.append(f"<div class='txl-main'>{'(background) ' if e.background else ''}"
                             f"{html.escape(e.text)}</div>" + (f"<ul>{details}</ul>" if details else ""))
            else:
                parts.append(f"<div class='txl-then'>then {html.escape(e.narration)}</div>")
        return f"<div class='txl-narr'>{head}{''.join(parts)}</div>"

    def step_words(self) -> str:
        """The one numbering every view uses: the step (the position), the moment number at the granularity,
        simulated time; the kernel event id is a detail."""
        ex = self._ex
        m = self.moments
        words = f"step {self.position} of {self.length}"
        if self.granularity != "event":
            words += f" · {self.granularity} {m.ordinal(self.position, self.granularity)} of " \
                     f"{len(m.stops(self.granularity))}"
        return words + f" · t = {ex.kernel.now} ms · kernel event #{ex.kernel_steps[self.position]}"

    def _stop_html(self) -> str:
        """What the current stop folded and, at a key moment, its caption."""
        out = ""
        for mid, caption, pos in self.key_moments:
            if pos == self.position:
                out += f"<div class='txl-key'>★ {html.escape(caption)} <code>{html.escape(mid)}</code></div>"
        stop = self.stop if self.granularity != "event" else None
        if stop is not None:
            p = self.moments.positions[stop.position]
            if stop.summary:
                out += f"<div class='txl-fold'>{html.escape(stop.summary)}</div>"
            if p.words:
                out += f"<div class='txl-change'>{html.escape('; '.join(p.words))}</div>"
            if stop.folded:
                out += f"<div class='txl-head txl-folded'>+{stop.folded} plumbing " \
                       f"event{'s' if stop.folded != 1 else ''} folded into this step (Step by event to see them)</div>"
        return out

    def _sync_moments(self, length: int) -> None:
        """The key moments as clickable labelled ticks under the slider and as a clickable chapter list."""
        keys = self.key_moments
        ticks = MomentTicks.place([{"id": mid, "caption": cap, "left": round(100 * pos / max(1, length), 2)}
                                   for mid, cap, pos in keys])
        if self._ticks.ticks != ticks:
            self._ticks.ticks = ticks
        self._ticks.current = next((mid for mid, _, pos in keys if pos == self.position), "")
        key = (self.branch, tuple(keys))
        if key != self._chapter_key:
            self._chapter_key = key
            buttons = []
            for i, (mid, cap, pos) in enumerate(keys, 1):
                b = W.Button(description=f"{i}. {cap}", tooltip=f"go to the key moment '{mid}' (step {pos})",
                             layout=W.Layout(width="auto", max_width="100%"))
                b.on_click(lambda _, p=pos: self.jump(p))
                b.moment_id = mid
                buttons.append(b)
            self._chapters.children = ([W.HTML("<span class='txl-status'>Key moments:&nbsp;</span>")] + buttons
                                       if buttons else [])
        for b in self._chapters.children[1:]:
            b.button_style = "info" if self.moments.found.get(b.moment_id) == self.position else ""

    def _status_html(self) -> str:
        ex = self._ex
        client = ("finished" if ex.done and not ex.error else f"raised {ex.error_text}" if ex.done
                  else "waiting inside a blocking call")
        end = " · <b>end of this branch</b>" if ex.at_end else ""
        notice = f"<br><span class='txl-notice'>{html.escape(self.notice)}</span>" if self.notice else ""
        notice += panel_html(self.invariants) + panel_for(ex.cluster)      # real clients' pending requests
        return (f"<div class='txl-status'>branch <b>{html.escape(self.branch)}</b> "
                f"({html.escape(self.history.labels[self.branch])}) · stepping: {html.escape(self.stepping_words())}"
                f" · client code: {html.escape(client)}{end}{notice}</div>")

    def stepping_words(self) -> str:
        """What one Step does now, as the status line says it: the granularity, then the filter's choices."""
        g = self.granularity
        if g != "event" and self.filter.narrows:   # a chosen API / process / transactional.id steps event by event
            return f"by event, {self.filter.describe()} (by {g} once the filter is cleared)"
        words = {"moment": "by moment (one change a picture shows; plumbing folded in)",
                 "exchange": "by exchange (a request and its response)",
                 "event": "by event (one kernel event)"}[g]
        if self.filter.active:
            words += f", {self.filter.describe()}"
        return words

    def _trace_view(self, n: int = 40) -> str:
        current = {id(e) for e in self._ex.entries()}
        rows = []
        for e in reversed(self._recent(n)):                # newest first: this step is on top
            cls = "txl-cur" if id(e) in current else ("txl-bg" if e.background else "")
            rows.append(f"<div class='{cls}'>{html.escape(str(e))}</div>")
        return CSS + "<div class='txl-trace'>" + "".join(rows) + "</div>"

    def present(self):
        """Presenter mode: controls, narration in large type and the main picture on one 1280×720 screen (the
        stepper's own widgets: Step here steps the stepper).  Returns the box, displayed when it is the cell's
        last expression."""
        from .presenter import presenter
        self.presenter = presenter(self, CSS)         # the narration's own style: the stepper may not be shown
        self.refresh()
        return self.presenter

    def show(self):
        """Display the stepper (``display(stepper.widget)``)."""
        from IPython.display import display
        display(self.widget)


for _panel, _names in PANEL_CONTROLS.items():
    for _name in _names:
        setattr(StepperUI, _name, _BuiltOnUse(_panel, _name))
