"""The live pictures' figures send plotly's browser code once per kernel, not once per figure: each figure's own
module is a small loader naming the kernel's one PlotlyBundle, which holds plotly's widget bundle unchanged."""
import plotly.graph_objects as go

from widgets import Stepper
from widgets.figure_widget import BUNDLE, FigureWidget, plotly_bundle


def test_figures_share_one_bundle_which_is_plotlys_own():
    a, b = FigureWidget(), FigureWidget(go.Figure(go.Scatter(x=[1], y=[2])))
    assert isinstance(a, go.FigureWidget)
    assert a._plotly_bundle == b._plotly_bundle == "IPY_MODEL_" + plotly_bundle().model_id
    assert plotly_bundle().bundle == BUNDLE.read_text(encoding="utf-8") == str(go.FigureWidget._esm)
    assert len(a._esm) < 5_000 < len(go.FigureWidget()._esm)
    assert "_plotly_bundle" in a.get_state() and a.get_state()["_esm"] == a._esm
    assert b.data[0].x == (1,)


def test_a_closed_bundle_is_made_again():
    first = plotly_bundle()
    first.close()
    assert plotly_bundle() is not first and FigureWidget()._plotly_bundle == "IPY_MODEL_" + plotly_bundle().model_id


def test_a_steppers_figures_all_load_the_one_bundle():
    s = Stepper("dropped-ack-dedup", skip_background=True)
    s.widget                                         # shown: the first tab's picture; the others wait for their tab
    assert len(s._figures()) == 1
    for i in range(len(s._tabs.children)):
        s._tabs.selected_index = i
    figures = s._figures()
    assert len(figures) == 3
    assert {f._plotly_bundle for f in figures} == {"IPY_MODEL_" + plotly_bundle().model_id}
    assert all(len(f._esm) < 5_000 for f in figures)


def test_a_figure_gets_plotlys_default_template_as_its_own_copy():
    import plotly.io as pio
    f = FigureWidget()
    assert f.layout.template.to_plotly_json() == pio.templates[pio.templates.default].to_plotly_json()
    assert f.layout.to_plotly_json() == go.FigureWidget().layout.to_plotly_json()
    f.layout.template.layout.font.size = 33          # a learner's change to one figure stays in that figure
    assert pio.templates[pio.templates.default].layout.font.size is None and FigureWidget().layout.template.layout.font.size is None
