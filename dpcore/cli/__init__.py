"""The command line, ``python -m dpcore <command>``: the parser (``parser``), what every command
shares (``common``: budgets, progress, the one-line errors), one module a family of commands
(``run``, ``sweep``, ``audit``, ``certify``, ``export``) and the dispatcher (``commands``)."""

import importlib

from ..exceptions import names_of
from . import commands
from .commands import build_parser, main

__all__ = ["main", "build_parser"]

#: names read from ``dpcore.cli`` when the command line's code all lived in one module: imported on first use
_MOVED = {"MAX_PLAN_BYTES": (".certify", "MAX_PLAN_BYTES"), "SlowProgress": (".common", "SlowProgress"),
          "_sweep_outputs": (".sweep", "sweep_outputs"), "get_preset": ("..experiments.presets", "get_preset"),
          "with_overrides": ("..experiments.presets", "with_overrides")}


_COMMANDS_NAMES = names_of(__name__, commands)


def __getattr__(name: str):
    """A name the one module had: from where it lives now, or any other name of ``commands``."""
    if name in _MOVED:
        module, attribute = _MOVED[name]
        return getattr(importlib.import_module(module, __name__), attribute)
    return _COMMANDS_NAMES(name)
