"""The plotly figures the app's views, the report and the exported code draw (``charts``), what every
plot over ε must show (``missed``), a figure laid out for a page (``screen``), what a result says
beside its numbers (``result``), a chart's text alternative (``text``) and the figures a view draws
from its result (``views``).  Every public name of ``charts`` is importable from here."""

from ..exceptions import names_of
from . import charts
from .charts import *  # noqa: F401,F403 — the package's face: its charts' __all__

__all__ = [*charts.__all__]
#: any other name of charts, as this path had it before the package grew folders
__getattr__ = names_of(__name__, charts)
