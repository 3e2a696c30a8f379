"""How a live picture sends its changes to the browser: few messages, and never a value a trace did not set.

Owns ``send(figure, traces, layout)``, which the live views (``LogStrip``, ``SpaceTime``) use instead of
``figure.batch_update()``.  A batch update sends one message for every trace it touched, and a trace that did not
change a property the others changed gets the placeholder ``"_undefined_"`` for it.  JupyterLab's plotly widget
model stores that placeholder as the value (only a view already on the screen ignores it), so a figure drawn
before it is displayed -- presenter mode's pictures, a stepper opened at a key moment -- or shown a second time
comes up with those traces in plotly's default colours.  Here the traces that changed the same properties go
in one restyle, with one value per trace; nothing else is sent.  ``sync_state`` and ``ShownBox`` give a figure's
browser model its whole state when the stepper (or presenter mode) is displayed.  Reads nothing of the lab.
"""
from __future__ import annotations

from typing import Optional

import ipywidgets as W


def send(figure, traces: dict, layout: Optional[dict] = None) -> None:
    """Send ``traces`` ({trace index: {property path: value}}) and ``layout`` ({layout path: value}) to ``figure``:
    one restyle per set of traces that change the same properties (each trace gets its own value), then one
    relayout.  An array value is one trace's array (it is never spread over traces)."""
    groups: dict = {}
    for i, props in traces.items():
        if props:
            groups.setdefault(tuple(props), []).append(i)
    for keys, indexes in groups.items():
        figure.plotly_restyle({k: [traces[i][k] for i in indexes] for k in keys}, trace_indexes=indexes)
    if layout:
        figure.plotly_relayout(layout)


def sync_state(figure) -> None:
    """Give the browser's model of ``figure`` its whole state now, as plotly does when a figure itself is displayed.
    A figure shown inside a box never gets this; and its model listens for changes only once plotly's script has
    loaded, so changes sent while it loads (a stepper built and stepped in one cell) would be lost."""
    from copy import deepcopy
    figure._widget_layout = deepcopy(figure._layout_obj._props)
    figure._widget_data = deepcopy(figure._data)


class ShownBox(W.VBox):
    """A VBox that calls ``before_shown()`` each time it is displayed (the stepper syncs its figures then)."""

    def __init__(self, children=(), before_shown=None, **kw) -> None:
        super().__init__(children=children, **kw)
        self._before_shown = before_shown

    def _repr_mimebundle_(self, **kw):
        if self._before_shown is not None:
            self._before_shown()
        return super()._repr_mimebundle_(**kw)

    def __repr__(self) -> str:
        # the output's plain text (ipywidgets keeps its first 110 characters): without this, every widget and figure
        # of the box is written out in full first, each time it is displayed
        return f"{type(self).__name__}({len(self.children)} widgets)"
