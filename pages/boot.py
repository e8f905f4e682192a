"""The core imported whole, once per server process, before any view runs (``app.py`` calls
:func:`load_core` first thing).

Python's imports are not safe when two threads start one package at once and the package's
``__init__`` imports its own submodules: a thread importing ``dpcore.experiments.tune`` does not
wait for a ``dpcore`` another thread is still initialising, the two then wait on each other's
module, and Python breaks the cycle by handing one of them a partially initialised module.  On a
new server, six sessions opening Explore at once got ``ImportError: cannot import name 'tune' from
partially initialized module 'dpcore.experiments.tune'`` on every page (one server start in
three; ``tests/test_concurrency.py`` makes it happen every time).  Here the first session imports
every module of the core and the views' shared code while the others wait on one lock; after
that every import is a lookup.  This module imports only the standard library at its own import,
so importing it cannot race.

Every view calls :func:`load_core` too, first thing, before it imports the core: on a new server
Streamlit runs a requested view straight from the ``pages/`` folder (its older multipage mode) until
``app.py`` has run once and declared the navigation, so six sessions opening ``/explore`` on a new
server each ran ``pages/explore.py`` without ``app.py`` and broke each other's imports (a deadlock
between module locks, then "partially initialized module" on every page; two new servers in three).
``tests/test_concurrency.py`` checks that every view of ``app.py``'s navigation starts so.

It also makes Python's syntax trees one thread's at a time (:func:`serialize_syntax_trees`).  On
Python 3.11 two threads building ``ast`` objects at once can break each other (CPython
gh-106905: the converter keeps its recursion depth per interpreter, not per thread, and a garbage
collection in the middle of one tree lets the other thread run): ``SystemError: AST constructor
recursion depth mismatch``.  A full CI run saw it break a page while Streamlit compiled it.  The
parties in a server are Streamlit's "magic" (off in ``.streamlit/config.toml``: no view uses it,
and ``tests/test_concurrency.py`` keeps it so), and Python 3.11's ``traceback``, which parses the
failing line to place its carets whenever any thread formats an exception."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import threading

_LOCK = threading.Lock()
_loaded = False
_AST_LOCK = threading.RLock()


def serialize_syntax_trees() -> None:
    """Replace ``ast.parse`` (once per process) by one that holds a process-wide lock while the
    tree is built, so no two threads build one at once.  ``traceback`` and Streamlit look
    ``ast.parse`` up when they call it, so they get this one too."""
    parse = ast.parse
    if getattr(parse, "serialized", False):
        return

    def locked_parse(*args, **kwargs):
        with _AST_LOCK:
            return parse(*args, **kwargs)

    locked_parse.__doc__ = parse.__doc__
    locked_parse.__wrapped__ = parse
    locked_parse.serialized = True
    ast.parse = locked_parse


def load_core() -> None:
    """Import every module of ``dpcore`` (but its ``__main__``) and ``pages.common``, once per
    process; a thread that comes while another imports them waits for it.  Syntax trees are made
    one at a time from then on (:func:`serialize_syntax_trees`)."""
    global _loaded
    if _loaded:
        return
    with _LOCK:
        if _loaded:
            return
        serialize_syntax_trees()
        import dpcore

        for module in pkgutil.walk_packages(dpcore.__path__, "dpcore."):
            if not module.name.endswith(".__main__"):
                importlib.import_module(module.name)
        importlib.import_module("pages.common")
        _loaded = True
        _compile_kernels_ahead()


def _compile_kernels_ahead() -> None:
    """On a server (not a test's script runner), the compiled kernels compiled in a second process as it
    starts (:func:`dpcore.experiments.ahead.kernels_ahead`): a class's first run then loads them from the
    kernel cache (about 1 s) instead of compiling them in front of the class (about 5 s of CPU)."""
    from streamlit import runtime

    if runtime.exists():
        from dpcore.experiments.ahead import kernels_ahead

        kernels_ahead().start()
