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
so importing it cannot race."""

from __future__ import annotations

import importlib
import pkgutil
import threading

_LOCK = threading.Lock()
_loaded = False


def load_core() -> None:
    """Import every module of ``dpcore`` (but its ``__main__``) and ``pages.common``, once per
    process; a thread that comes while another imports them waits for it."""
    global _loaded
    if _loaded:
        return
    with _LOCK:
        if _loaded:
            return
        import dpcore

        for module in pkgutil.walk_packages(dpcore.__path__, "dpcore."):
            if not module.name.endswith(".__main__"):
                importlib.import_module(module.name)
        importlib.import_module("pages.common")
        _loaded = True
