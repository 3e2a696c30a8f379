"""The live log strip keeps its rows tall enough for their 14 px words: its legend stands in a bottom margin made
for it and never changes as the story goes on.  (Seen in JupyterLab: once the first consumer appeared, the legend
grew by two rows, the browser took them from the plot, and plotly hid every value and COMMIT word in the cells.)"""
from __future__ import annotations

import math

from widgets import Stepper
from widgets.log_strip import BOTTOM_PX

AXIS_PX = 48            # the offset axis under the plot: its numbers and its title
ENTRY_ROW_PX = 24       # one row of legend entries in 14 px type
ENTRIES_PER_ROW = 3     # what fits across the plot's width at 840 px


def _in_legend(fig) -> list:
    """The entries a browser shows: traces in the legend with something to draw (plotly leaves an empty one out)."""
    return [t.name for t in fig.data if t.showlegend is not False and t.x is not None and len(t.x) > 0]


def test_the_legend_is_the_same_before_and_after_the_consumers_appear():
    s = Stepper("lso-stuck-by-open-transaction")
    before = _in_legend(s.log_strip.figure)
    s.goto("ru-reads")
    assert s.cluster.clients["reader-uncommitted"] is not None
    after = _in_legend(s.log_strip.figure)
    s.close()
    assert before == after
    assert {"read_committed", "read_uncommitted"} <= set(after)       # the triangles are named from the start


def test_the_bottom_margin_holds_the_axis_and_the_legend_so_the_browser_never_takes_room_from_the_rows():
    s = Stepper("lso-stuck-by-open-transaction", at="lso-moves")
    lay = s.log_strip.figure.layout
    entries = len(_in_legend(s.log_strip.figure))
    s.close()
    assert lay.legend.yref == "container" and lay.legend.yanchor == "bottom"   # at the foot, not against the plot
    assert lay.margin.b == BOTTOM_PX >= AXIS_PX + ENTRY_ROW_PX * math.ceil(entries / ENTRIES_PER_ROW)
    rows = len(lay.yaxis.tickvals)
    plot_px = lay.height - lay.margin.t - lay.margin.b
    per_row = plot_px / (lay.yaxis.range[0] - lay.yaxis.range[1])
    assert 0.8 * per_row >= 14 + 6 + 4, f"a cell of {0.8 * per_row:.0f} px holds 14 px words ({rows} rows)"
