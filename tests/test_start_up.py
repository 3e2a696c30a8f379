"""The first picture does not wait for a grammar nobody uses: importing the widgets leaves the IRI grammar
(rfc3987_syntax, reached through plotly -> nbformat -> jsonschema) unbuilt until something checks an IRI, and
such a check still answers as before.  Showing a figure (plotly reads ``nbformat.__version__``) imports neither
nbformat nor the grammar, and importing jsonschema compiles the grammar only when an IRI is first checked."""
import subprocess
import sys

CODE = """
import sys
import widgets
def state(name):
    mod = sys.modules.get(name)
    return "deferred" if mod is None or getattr(mod, "_txnlab_stand_in", False) else "loaded"
print(state("rfc3987_syntax"))
from jsonschema._format import is_iri
print(state("rfc3987_syntax"))
print(is_iri("http://example.com/a"), is_iri("::not an iri"))
print(state("rfc3987_syntax"))
"""

SHOW = """
import importlib.metadata, sys
import widgets
import plotly.graph_objects as go
import plotly.io as pio
shown = []
import IPython.display
IPython.display.display = lambda *a, **k: shown.append(a)       # no front end here: keep what would be sent
import plotly.io._renderers as r
r.ipython_display = IPython.display
go.Figure(go.Scatter(x=[1], y=[2])).show(renderer="plotly_mimetype")
print(len(shown), "application/vnd.plotly.v1+json" in shown[0][0])
print(r.nbformat.__version__ == importlib.metadata.version("nbformat"))
print(getattr(sys.modules["nbformat"], "_txnlab_stand_in", False), "jsonschema" in sys.modules)
"""


def _run(code: str) -> list:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")


def test_importing_the_widgets_builds_no_iri_grammar_and_iri_checks_still_work():
    assert _run(CODE)[:4] == ["deferred", "deferred", "True False", "loaded"]


def test_showing_a_figure_imports_neither_nbformat_nor_jsonschema():
    assert _run(SHOW)[:3] == ["1 True", "True", "True False"]
