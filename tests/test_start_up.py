"""The first picture does not wait for a grammar nobody uses: importing the widgets leaves the IRI grammar
(rfc3987_syntax, reached through plotly -> nbformat -> jsonschema) unbuilt until something checks an IRI, and
such a check still answers as before."""
import subprocess
import sys

CODE = """
import sys
import widgets
mod = sys.modules.get("rfc3987_syntax")
print("deferred" if mod is None or getattr(mod, "_txnlab_stand_in", False) else "loaded")
from jsonschema._format import is_iri
print(is_iri("http://example.com/a"), is_iri("::not an iri"))
print("deferred" if getattr(sys.modules["rfc3987_syntax"], "_txnlab_stand_in", False) else "loaded")
"""


def test_importing_the_widgets_builds_no_iri_grammar_and_iri_checks_still_work():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:3] == ["deferred", "True False", "loaded"]
