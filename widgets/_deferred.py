"""Imports the pictures never need at start-up, deferred until first use.

plotly's renderers import ``nbformat`` (plotly.io._renderers asks for it up front); nbformat imports
``jsonschema``, whose format checkers import ``rfc3987_syntax``, which compiles an IRI grammar when imported:
0.7 s of a learner's wait for the first picture, for a checker of ``"format": "iri"`` strings the lab never
validates.  ``defer_iri_grammar()`` puts a stand-in for ``rfc3987_syntax`` in its place until something calls
it: the first call imports the real module (grammar and all) and answers with it, so behaviour is unchanged.
Importing this module installs it (``widgets`` imports it before plotly).
"""
from __future__ import annotations

import importlib
import sys
import types

_NAME = "rfc3987_syntax"


def _real():
    if getattr(sys.modules.get(_NAME), "_txnlab_stand_in", False):
        del sys.modules[_NAME]
    return importlib.import_module(_NAME)


def defer_iri_grammar() -> None:
    """Install the stand-in, unless the real module is loaded already or is not installed."""
    if _NAME in sys.modules or importlib.util.find_spec(_NAME) is None:
        return
    stand_in = types.ModuleType(_NAME, "stand-in: the real rfc3987_syntax is imported on first use")
    stand_in._txnlab_stand_in = True

    def is_valid_syntax(*args, **kwargs):
        return _real().is_valid_syntax(*args, **kwargs)

    def __getattr__(name):              # any other public name: the real module's
        if name.startswith("__"):       # the import system asks for __path__ and the like: not a use
            raise AttributeError(name)
        return getattr(_real(), name)

    stand_in.is_valid_syntax = is_valid_syntax
    stand_in.__getattr__ = __getattr__
    sys.modules[_NAME] = stand_in


defer_iri_grammar()
