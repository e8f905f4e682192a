"""Take a view home: a view's link as a notebook or a script (``writer``: :func:`export_view`), each
view's declaration (``declare``: the views that run specifications; ``views``: the others and
:data:`VIEWS`, every view that computes).  Every public name of ``writer`` is importable from here."""

from ..exceptions import names_of
from . import writer
from .writer import *  # noqa: F401,F403 — the package's face: its writer's __all__

__all__ = [*writer.__all__]
#: any other name of writer, as this path had it before the package grew folders
__getattr__ = names_of(__name__, writer)
