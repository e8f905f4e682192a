"""Privacy in one place: the noise plan a mechanism declares and its certificate (``core``:
:func:`certify`, :func:`calibrate`), the tight PLD route (``pld``), the accountants on dp-accounting
(``accounting``) and the plan's events and their JSON (``events``).  Every public name of ``core``
is importable from here, as before the package had folders (``from dpcore.privacy import certify``)."""

from ..exceptions import names_of
from . import core
from .core import *  # noqa: F401,F403 — the package's face: its core's __all__

__all__ = [*core.__all__]
#: any other name of core, as this path had it before the package grew folders
__getattr__ = names_of(__name__, core)
