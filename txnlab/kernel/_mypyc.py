"""``mypyc_attr`` for the optional compiled build (``scripts/compile_engine.py``).

mypyc reads the decorator in the source (``native_class=False``: a class it compiles as an ordinary Python class,
as exception subclasses and classes built with ``object.__new__`` must be); at run time it changes nothing, and the
lab does not need ``mypy_extensions`` installed.
"""
try:
    from mypy_extensions import mypyc_attr
except ImportError:
    def mypyc_attr(*args, **kwargs):  # type: ignore[no-redef]
        return lambda cls: cls
