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

Two uses are answered without the real module at all:

* ``nbformat.__version__``: all that plotly reads of nbformat, each time it shows a figure (its mime-bundle
  renderer checks the version); nbformat's own ``__version__`` is its installed distribution's version, which
  the stand-in reads the same way (``importlib.metadata``).  Without this the first static figure of a chapter
  imported nbformat -> jsonschema -> the IRI grammar (~0.8 s of CPU).
* ``rfc3987_syntax.is_valid_syntax``: what jsonschema's format checkers take from the grammar's module when
  jsonschema is imported; the stand-in hands out a function that loads the real module (and compiles its
  grammar) on its first call, so importing jsonschema compiles nothing until an IRI is checked.
"""
from __future__ import annotations

import importlib
import importlib.metadata
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


# module -> its functions handed out lazily (the real module is loaded by the first call, not by the import)
_LAZY_FUNCTIONS = {"rfc3987_syntax": frozenset({"is_valid_syntax"})}
# modules whose ``__version__`` is their distribution's version (nbformat/_version.py reads it this way)
_VERSION_FROM_METADATA = frozenset({"nbformat"})


def _lazy_function(module: str, name: str):
    def call(*args, **kwargs):
        return getattr(_real(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__module__ = module
    return call


class _StandIn(types.ModuleType):
    """A module's place-holder: any use loads the real module and is answered by it."""

    _txnlab_stand_in = True

    def __getattr__(self, attr: str):       # only for names the stand-in does not have
        if attr in _PROBES:
            raise AttributeError(attr)
        name = self.__name__
        if attr == "__version__" and name in _VERSION_FROM_METADATA:
            return importlib.metadata.version(name)
        if attr in _LAZY_FUNCTIONS.get(name, ()):
            function = _lazy_function(name, attr)
            setattr(self, attr, function)
            return function
        return getattr(_real(name), attr)


def defer(name: str) -> None:
    """Install a stand-in for ``name``, unless the real module is loaded already or is not installed."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    stand_in = _StandIn(name, f"stand-in: the real {name} is imported on first use")
    stand_in.__spec__ = spec           # importlib.util.find_spec(name) still answers
    if name in _LAZY_FUNCTIONS and spec.submodule_search_locations is not None:
        # ``from package import f`` asks for ``__path__`` first: answered here, it does not load the package
        stand_in.__path__ = list(spec.submodule_search_locations)
    sys.modules[name] = stand_in


def defer_iri_grammar() -> None:
    """The IRI grammar of jsonschema's format checker (kept by this name for callers)."""
    defer("rfc3987_syntax")


for _name in DEFERRED:
    defer(_name)
