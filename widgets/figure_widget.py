"""The live pictures' plotly widget, with plotly's browser code sent once per kernel instead of once per figure.

plotly's ``FigureWidget`` is an anywidget whose browser module (``_esm``) is plotly's whole widget bundle, ~5 MB of
JavaScript, and anywidget sends a widget's module with the widget: every figure the kernel builds sends those 5 MB
to the browser again (a stepper has three figures, so 15 MB; about 40 ms of the kernel's CPU per figure to encode,
sign and send it), and the browser loads each copy as a module of its own.

``FigureWidget`` here is plotly's, with a small module instead: the bundle travels once, in ``PlotlyBundle`` (one
widget per kernel, never displayed, made when the first figure is), and each figure's module loads it from there
the first time the page needs it (``import`` of the bundle's text, kept by the page) and hands plotly's own
``initialize`` and ``render`` the same arguments as before.  The figure in Python and what the browser draws are
plotly's, unchanged.  A new figure also takes plotly's default template as a ``go.Figure`` does (copied, not
validated again).
"""
from __future__ import annotations

import pathlib

import anywidget
import plotly.basewidget
import plotly.graph_objects as go
import traitlets

# the module plotly's own FigureWidget sends (plotly/package_data/widgetbundle.js)
BUNDLE = pathlib.Path(plotly.basewidget.__file__).parent / "package_data" / "widgetbundle.js"

# The figure's module: plotly's widget (the bundle's default export, a function making one widget's hooks), loaded
# once per page from the PlotlyBundle model named by ``_plotly_bundle`` ("IPY_MODEL_<id>").
STUB = """
const KEY = Symbol.for("txnlab.plotly.widgetbundle");

async function bundleModel(manager, id) {
  // a page restoring the kernel's widgets may create this figure's model before the bundle's: wait for it
  for (let attempt = 0; ; attempt++) {
    try {
      return await manager.get_model(id);
    } catch (e) {
      if (attempt >= 100) throw e;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function plotlyWidget(model) {
  const ref = model.get("_plotly_bundle");
  const cache = (globalThis[KEY] ||= new Map());
  if (!cache.has(ref)) {
    cache.set(ref, (async () => {
      const bundle = await bundleModel(model.widget_manager, ref.slice("IPY_MODEL_".length));
      const url = URL.createObjectURL(new Blob([bundle.get("bundle")], { type: "text/javascript" }));
      try {
        return (await import(/* webpackIgnore: true */ /* @vite-ignore */ url)).default;
      } finally {
        URL.revokeObjectURL(url);
      }
    })());
  }
  return cache.get(ref);
}

export default () => {
  let widget;
  return {
    async initialize(ctx) {
      widget = (await plotlyWidget(ctx.model))();
      return widget.initialize(ctx);
    },
    async render(ctx) {
      return widget.render(ctx);
    },
  };
};
"""


class PlotlyBundle(anywidget.AnyWidget):
    """Holds plotly's widget bundle for the page (one per kernel; never displayed)."""

    _esm = "export default {};"
    bundle = traitlets.Unicode("").tag(sync=True)


_bundle: "PlotlyBundle | None" = None


def plotly_bundle() -> PlotlyBundle:
    """The kernel's PlotlyBundle (made again if somebody closed it)."""
    global _bundle
    if _bundle is None or _bundle.comm is None:
        _bundle = PlotlyBundle(bundle=BUNDLE.read_text(encoding="utf-8"))
    return _bundle


class FigureWidget(go.FigureWidget):
    """plotly's FigureWidget whose browser code comes from the kernel's one ``PlotlyBundle``."""

    _esm = STUB
    # The default template (plotly's, validated when it was registered) is copied into each new figure without
    # validating it again, as plotly does for a go.Figure (its FigureWidget validates it again: ~15 ms a figure).
    _allow_disable_validation = True
    _plotly_bundle = traitlets.Unicode("").tag(sync=True)

    @traitlets.default("_plotly_bundle")
    def _default_plotly_bundle(self) -> str:
        return "IPY_MODEL_" + plotly_bundle().model_id
