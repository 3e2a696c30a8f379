"""Imports the pictures never need at start-up, deferred until first use.

plotly imports modules up front that it uses only on demand: ``nbformat`` (plotly.io._renderers, for the
mime-bundle renderer's version check), which imports ``jsonschema``, whose format checkers import
``rfc3987_syntax``, which compiles an IRI grammar when imported (0.7 s, for a checker of ``"format": "iri"``
strings the lab never validates); and ``kaleido`` (plotly.io._kaleido, to write figures as images), which
imports ``choreographer``.  Together well over half of a learner's wait for the first picture.

``defer(name)`` puts a stand-in for the module in ``sys.modules`` until something uses it: the first
attribute read (or a submodule import) imports the real module, which then replaces the stand-in, and
answers from it -- so behaviour is unchanged, only later.  Importing this module installs the stand-ins
(``widgets`` imports it before plotly).
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types

DEFERRED = ("rfc3987_syntax", "nbformat", "kaleido")

# what the import system reads of a module already in sys.modules: answered by the stand-in itself
_PROBES = frozenset({"__spec__", "__loader__", "__name__", "__package__", "__class__", "__dict__"})


def _real(name: str):
    if getattr(sys.modules.get(name), "_txnlab_stand_in", False):
        del sys.modules[name]
    return importlib.import_module(name)


class _StandIn(types.ModuleType):
    """A module's place-holder: any use loads the real module and is answered by it."""

    _txnlab_stand_in = True

    def __getattr__(self, attr: str):       # only for names the stand-in does not have
        if attr in _PROBES:
            raise AttributeError(attr)
        return getattr(_real(self.__name__), attr)


def defer(name: str) -> None:
    """Install a stand-in for ``name``, unless the real module is loaded already or is not installed."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    stand_in = _StandIn(name, f"stand-in: the real {name} is imported on first use")
    stand_in.__spec__ = spec           # importlib.util.find_spec(name) still answers
    sys.modules[name] = stand_in


def defer_iri_grammar() -> None:
    """The IRI grammar of jsonschema's format checker (kept by this name for callers)."""
    defer("rfc3987_syntax")


for _name in DEFERRED:
    defer(_name)
