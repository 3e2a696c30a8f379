"""Presenter mode: one stepper on one 1280×720 screen, for a class.

Owns ``presenter(stepper)``: the stepper's own controls (Reset, Back, Step, the granularity), its narration in
large type and its main picture -- the partition logs for a Kafka lab, the message diagram otherwise, switchable
-- and the key moments as chapters, in one box that fits 1280×720.  The stage under the controls (one row) and
the narration takes what is left of the screen's height (``PICTURE_HEIGHT``); with the partition logs on it the
chapters stand in its lower right corner, under the legend, and with the message diagram (which takes the stage's
width) in one row below it.  The partition logs fit the stage, their rows
given fewer pixels as there are more of them, down to the least their cells' 14 px words need
(widgets/strip_rows.py): two and three partitions of three replicas fit without scrolling; four partitions and
more take the least and scroll inside the stage.  The widgets are the stepper's own, so the normal view and the
presenter's stay in step; nothing here steps or reads the engine.
"""
from __future__ import annotations

import ipywidgets as W

from .figure_send import ShownBox

WIDTH = 1060           # what is left of 1280 px beside JupyterLab's bars and the cell's prompt
# 1280×720 in JupyterLab (file browser closed): the notebook's area is 599 px high, under the menu, the tabs and the
# notebook's toolbar and above the status bar (measured in Chromium).  From its top the box holds the controls (one
# row of 40 px buttons), the narration (four whole lines of 19 px type, 24 px each, and no padding under them, where
# a fifth line would show its top; more lines scroll, and while some are below a purple shade darkens the box's foot:
# a shade fixed to the box, covered once the end of the text, which carries a cover of the box's colour, scrolls
# into view; the line saying how many plumbing events a step folded is left out: a class steps by moment) and the
# stage for the picture, each with its margins (measured: the controls 4 + 44, the narration's widget 2 + 112 + 2
# (its 102 px box and margins); a 425 px picture ends 10 px above the notebook's foot)
NOTEBOOK_PX, CONTROLS_PX, NARRATION_PX, STAGE_PAD = 599, 48, 116, 10
PICTURE_HEIGHT = NOTEBOOK_PX - CONTROLS_PX - NARRATION_PX - STAGE_PAD     # 425
# the strip's margins above and below its plot: its words above the first row need 3 px of it, the offset axis 44
STRIP_MARGIN = dict(t=10, b=44)
CSS = """<style>
.txl-present .txl-narr{font-size:19px;line-height:24px;min-height:0;max-height:96px;overflow:auto;margin:2px 0 8px;
                      padding-bottom:0;background:
  linear-gradient(rgba(248,240,252,0), #f8f0fc 60%) center bottom / 100% 26px no-repeat local,
  linear-gradient(rgba(134,46,156,0), rgba(134,46,156,.55)) center bottom / 100% 16px no-repeat scroll, #f8f0fc}
.txl-present .txl-narr .txl-head{font-size:17px}
.txl-present .txl-narr .txl-folded{display:none}
.txl-present .txl-narr ul{font-size:18px}
.txl-present .txl-status{font-size:16px}
.txl-present .widget-button, .txl-present .widget-toggle-button{font-size:18px;height:40px}
.txl-present .widget-toggle-button{width:auto !important;padding:0 12px}
.txl-present .widget-toggle-buttons{display:flex;flex-wrap:nowrap;align-items:center}
.txl-present .widget-toggle-buttons > div{display:flex;flex-wrap:nowrap}
.txl-present .widget-toggle-buttons .widget-label{font-size:16px;width:auto;min-width:0;padding-right:6px}
.txl-present .txl-key{font-size:19px}
.txl-present .txl-ticks{display:none}
.txl-present{position:relative}
.txl-present.txl-on-logs .txl-chapters{position:absolute;right:0;bottom:6px;width:240px;flex-flow:column nowrap;
                                       z-index:2;background:#fff}
.txl-present.txl-on-logs .txl-chapters .widget-button{font-size:15px;height:27px;line-height:27px;
                                       width:100% !important;margin:1px 0;text-align:left;white-space:nowrap;
                                       overflow:hidden;text-overflow:ellipsis}
.txl-present.txl-on-logs .txl-chapters .widget-html, .txl-present.txl-on-logs .txl-chapters .txl-status{
                                       font-size:15px;line-height:18px;margin:0}
.txl-present:not(.txl-on-logs) .txl-chapters{flex-wrap:nowrap !important;align-items:center}
.txl-present:not(.txl-on-logs) .txl-chapters .widget-button{font-size:15px;height:29px;line-height:29px;
                                       flex:1 1 0;min-width:0;max-width:none;margin:0 2px;white-space:nowrap;
                                       overflow:hidden;text-overflow:ellipsis;text-align:left}
.txl-present:not(.txl-on-logs) .txl-chapters .widget-html{font-size:15px;margin:0;flex:none}
</style>"""
# With the partition logs on the stage, the key moments stand in the stage's lower right corner, under the strip's
# legend (at most five key moments, 29 px each, as in every gallery story); captions longer than the column end in
# "…" (the narration says the whole one at the moment).  Under the message diagram, which takes the stage's width,
# they stand in one row below it (each moment's number and the start of its caption), and the diagram is
# CHAPTER_ROW_PX shorter, so the box still fits the screen.
CHAPTER_ROW_PX = 35


def presenter(stepper, stepper_css: str = "") -> W.VBox:
    """The presenter's box for ``stepper`` (``Stepper.present()`` builds it, with the stepper's own style sheet
    ``stepper_css``: the narration's colours and type, when ``present()`` is the first of the stepper on the
    page).  Its pictures are views of their own (a ``LogStrip``, a ``SpaceTime``) sized for the screen; the
    stepper redraws the one on the stage at each step, the other when it is picked."""
    from .log_strip import LogStrip
    from .spacetime import SpaceTime
    views, figures, strip = [], [], None
    if stepper._kafka:
        # no title (the toggle above names the picture): the rows get its room, and all of the stage's height
        strip = LogStrip(topics=stepper._topics, max_cells=stepper._max_cells, width=WIDTH, title="",
                         max_height=PICTURE_HEIGHT)
        strip.on_row_click(stepper.select_node)
        views.append(strip)
        figures.append(("partition logs", strip.figure))
    else:
        figures += [(title, getattr(view, "figure", None)) for title, view in stepper._drawn_lab_views()]
    messages = SpaceTime(window=stepper._window)
    stepper._follow(messages)
    messages.on_message_click(stepper.select_message)
    messages.on_node_click(stepper.select_node)
    views.append(messages)
    figures.append(("messages", messages.figure))
    figures = [(t, f) for t, f in figures if f is not None]
    for _, fig in figures:
        # no plotly toolbar: under the mouse it stood over the legend's first entries (a class reads the picture;
        # the normal view keeps it, for zooming and saving)
        fig._config = dict(fig._config or {}, displayModeBar=False)
        with fig.batch_update():      # the legend beside the picture: the height goes to the picture itself
            fig.layout.width = WIDTH
            if strip is None or fig is not strip.figure:     # the strip sets its own, from these margins
                fig.layout.height = PICTURE_HEIGHT - CHAPTER_ROW_PX      # the key moments' row below it
            # (against the plot: the strip's own legend stands against the figure's foot, xref/yref "container")
            fig.layout.legend.update(orientation="v", xref="paper", yref="paper", x=1.01, xanchor="left", y=1.0,
                                     yanchor="top")
            fig.layout.margin.update(r=250, b=50, t=40)
    if strip is not None:
        strip.figure.layout.margin.update(STRIP_MARGIN)
    with messages.figure.batch_update():
        # the message diagram needs its width for the lanes (its legend goes below it, as in the stepper) and
        # the room above the plot for the lanes' names (the toggle above names the picture: no title)
        messages.figure.layout.update(title_text="", margin=dict(r=20, t=64),
                                      legend=dict(orientation="h", x=0.0, xanchor="left", y=-0.02, yanchor="top"))
    stepper.presenter_views = views
    for view in views:
        view.update(stepper.cluster)
    stepper.presenter_picture = figures[0][1]
    stage = W.Box([figures[0][1]], layout=W.Layout(width=f"{WIDTH + 10}px", overflow="hidden auto",
                                                    max_height=f"{PICTURE_HEIGHT + STAGE_PAD}px"))
    pick = W.ToggleButtons(options=[t for t, _ in figures], value=figures[0][0], description="show",
                           style={"button_width": "auto"})

    def show(change) -> None:
        fig = dict(figures)[change["new"]]
        stepper.presenter_picture = fig
        stepper._show_current()       # a step redraws only the picture on the stage: this one may have waited
        stage.children = [fig]
        on_logs(strip is not None and fig is strip.figure)
    pick.observe(show, "value")

    def on_logs(yes: bool) -> None:
        """The key moments in the stage's corner (the stage then keeps its whole height, under the legend: a strip
        of two partitions is shorter), or below it."""
        (box.add_class if yes else box.remove_class)("txl-on-logs")
        stage.layout.min_height = f"{PICTURE_HEIGHT + STAGE_PAD}px" if yes else None
    for b in (stepper._btn_reset, stepper._btn_back, stepper._btn_step):
        b.layout.height = "40px"
    controls = W.HBox([stepper._btn_reset, stepper._btn_back, stepper._btn_step, stepper._zoom, pick],
                      layout=W.Layout(align_items="center", flex_flow="row wrap"))
    box = ShownBox([W.HTML(stepper_css + CSS + "<span class='txl-present'></span>"), controls, stepper._narr,
                    stage, stepper._chapters], before_shown=stepper._sync_figures,
                   layout=W.Layout(width="100%", max_width=f"{WIDTH + 20}px"))
    box.add_class("txl-present")
    on_logs(strip is not None)
    return box
