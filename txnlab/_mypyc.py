"""What the optional compiled build (``scripts/compile_engine.py``, mypyc) needs of the sources; the lab never does.

``new``: how the engine makes the objects it builds field by field (events, messages, batch copies).  In pure
Python it is ``object.__new__``: a class call costs CPython 3.11 an argument tuple and a slot dispatch, and the
engine makes one object per message and timer.  A class compiled by mypyc refuses ``object.__new__``, and calling
it is a C call: compiled (this module is compiled with the engine, and a compiled function has no ``__code__``),
``new`` calls the class, whose ``__init__`` then has a default for every field.

``mypyc_attr``: stands in for ``mypy_extensions.mypyc_attr`` where that is not installed (the lab does not need it).
mypyc reads the decorator in the source, imported from ``mypy_extensions`` by name (``native_class=False``:
compile a class as an ordinary Python class, as exception subclasses must be; ``allow_interpreted_subclasses``:
Python classes may subclass it); at run time it changes nothing.
"""
from __future__ import annotations

from typing import TypeVar


def mypyc_attr(*args, **kwargs):
    return lambda cls: cls


_T = TypeVar("_T")


def _called(cls: type[_T]) -> _T:
    return cls()


COMPILED = not hasattr(_called, "__code__")
new = _called if COMPILED else object.__new__
