"""A stand-in for Opacus (not a dependency): its three accountants, each returning what ``get_epsilon``
gives for the history it was handed, installed for one test (``monkeypatch``)."""
from __future__ import annotations

import sys
import types
from typing import Callable


def install(monkeypatch, get_epsilon: Callable[[list, float], float]) -> None:
    """``import opacus`` (version 9.9) gives accountants whose ``get_epsilon(delta)`` returns
    ``get_epsilon(their history, delta)``."""
    class Accountant:
        def __init__(self):
            self.history = []

        def get_epsilon(self, delta):
            return get_epsilon(list(self.history), delta)

    fake = types.ModuleType("opacus")
    fake.__version__ = "9.9"
    fake.accountants = types.SimpleNamespace(RDPAccountant=Accountant, PRVAccountant=Accountant,
                                             GaussianAccountant=Accountant)
    monkeypatch.setitem(sys.modules, "opacus", fake)
    monkeypatch.setitem(sys.modules, "opacus.accountants", fake.accountants)
