"""Certify a run described in another library's terms (``core``: :func:`certify_noise`, the command
line's ``certify``), noise plans exported by runs and sweeps (``plans``) and the parameters both share
(``params``).  Every public name of ``core`` and of ``plans`` is importable from here, as before the
package had folders (``from dpcore.certify import certify_noise, certify_plans``)."""

import sys

from ..exceptions import names_of
from . import core, plans
from .core import *  # noqa: F401,F403 — the package's face: its core's __all__
from .plans import *  # noqa: F401,F403 — the package's face: its plans' __all__

__all__ = [*core.__all__, *plans.__all__]
#: any other name of core or plans, as this path had it before the package grew folders
__getattr__ = names_of(__name__, core, plans)


class _CallableModule(type(sys.modules[__name__])):
    """This package, callable for one release as the function that used to hide it: before, ``dpcore.certify``
    was the function and its module reachable only through ``sys.modules``."""

    def __call__(self, *args, **kwargs):
        return core.certify(*args, **kwargs)  # warns, naming the new spelling


sys.modules[__name__].__class__ = _CallableModule
