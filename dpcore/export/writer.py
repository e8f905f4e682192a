"""Take a view home: a view's link as a Jupyter notebook and a plain Python script that compute its
result again, with the same library calls, settings and seeds (issue 70).

A view's link (``compare?cmp_T=20&cmp_R=2``: the settings ``pages/links.py`` writes to the address) is
the input.  :data:`dpcore.export.views.VIEWS` declares, once for each view, its link keys with their
defaults (the page's own ``URL_KEYS``, checked equal by the tests), the variable each key becomes, and
the steps the view takes: each a sentence for the reader and a piece of valid Python that calls the
same dpcore function the page calls.  :func:`export_view` writes them out: a first cell naming the
commit and the install command, a cell of settings (one line a control, the link's values), then
the steps; the same cells make the notebook (:func:`notebook`, nbformat v4) and the script
(:func:`script`).  The code imports dpcore's public face only: ``from dpcore… import`` of modules and
names that do not start with ``_``; no cell needs the network.

>>> text = export_view("explore?ex_T=5&ex_R=1", fmt="py")
>>> "explore_spec(" in text and "T = 5" in text
True
"""

from __future__ import annotations

import functools
import json
from typing import Any, Mapping
from urllib.parse import parse_qsl, urlsplit

from .._version import __version__
from ..exceptions import DPCoreError, unknown_choice
from .views import VIEWS
from .declare import ViewExport, url_text, url_value
from ..experiments.sweep import environment

__all__ = ["FORMATS", "INSTALL", "export_view", "notebook", "parse_link", "script", "settings_of", "url_text",
           "url_value"]

#: what the export writes: a Jupyter notebook (JSON) or a plain Python script
FORMATS = ("ipynb", "py")
#: how a reader installs what the code needs, from the repository's folder
INSTALL = "python -m pip install -r requirements.txt"
#: query keys a link may carry that are not a view's settings (presenter mode)
IGNORED_KEYS = ("present",)


def parse_link(link: str) -> tuple[str, dict[str, str]]:
    """A view's link (``compare?cmp_T=20``, or the whole address the app shows) as the view's name and
    its query; an unknown view raises :class:`DPCoreError` naming the known ones."""
    parts = urlsplit(link.strip())
    view = parts.path.rstrip("/").rsplit("/", 1)[-1]
    if view not in VIEWS:
        raise DPCoreError(unknown_choice("view", view, list(VIEWS)))
    try:
        query = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        raise DPCoreError(f"the link's query {parts.query[:60]!r} is not key=value pairs joined by &") from None
    return view, dict(query)


def settings_of(view: ViewExport, given: Mapping[str, Any]) -> dict[str, Any]:
    """The view's settings by link key: its declared defaults, with ``given`` (a link's text, or the
    values of the widgets themselves) converted to each default's type; a key the view does not
    declare, or a value that does not parse, raises :class:`DPCoreError` saying what to change."""
    out = dict(view.defaults)
    for key, raw in given.items():
        default = view.default_of(key)
        if default is None:
            if key in IGNORED_KEYS:
                continue
            raise DPCoreError(f"the {view.name} view has no setting {key!r}: its link keys are "
                              + ", ".join(k for k in view.defaults if k in view.names) + ".")
        if isinstance(raw, str) and not isinstance(default, str):
            try:
                raw = url_value(raw, default)
            except (ValueError, OverflowError):
                kind = ("true or false" if isinstance(default, bool) else "a whole number"
                        if isinstance(default, int) else "a number" if isinstance(default, float) else "a list")
                raise DPCoreError(f"the link's {key} = {raw[:40]!r} is not {kind}") from None
        out[key] = list(raw) if isinstance(raw, tuple) else raw
    return out


# pure: the commit of the code this process runs
@functools.cache
def _commit() -> str | None:
    """The commit this package runs from (once a process: the environment takes a second)."""
    return environment()["git_commit"]


def _cells(view: ViewExport, values: dict[str, Any], fmt: str, given=frozenset()) -> list[tuple[str, str]]:
    """The export's cells, (``"markdown"`` or ``"code"``, text), in order."""
    commit = _commit()
    head = (f"# {view.title}: the view as code\n\n"
            f"This {'notebook' if fmt == 'ipynb' else 'script'} computes what the app's **{view.title}** view "
            f"showed for the link `{view.link(values)}`, with the same dpcore calls, settings and seeds, "
            "so it prints the same numbers (up to their last bits on another CPU: docs/spec.md §9).\n\n"
            f"Made by dpcore {__version__}" + (f", commit `{commit}`" if commit else "") + ". Run it from the "
            f"repository's folder (the one that holds `dpcore/`) at that commit, after\n\n    {INSTALL}\n\n"
            "Nothing here needs the network: the datasets and the shipped results are in the repository.")
    show = ("def show(fig, name):\n    \"\"\"Draw a chart below this cell.\"\"\"\n    fig.show()"
            if fmt == "ipynb" else
            "def show(fig, name):\n    \"\"\"Write a chart to name.html (open it in a browser; it needs no network).\"\"\"\n"
            "    fig.write_html(f\"{name}.html\", include_plotlyjs=True)\n    print(f\"chart: {name}.html\")")
    cells = [("markdown", head),
             ("markdown", "## The library\n\nThe view's own functions, from dpcore's public modules."),
             ("code", view.imports + "\n\n\n" + show),
             ("markdown", "## The settings\n\nOne line a control of the view, at the link's value. "
                          + view.change + " Change any of them and run the following cells again.")]
    prepared = view.prepare(values, given)
    lines = []
    for key, name in view.names.items():
        note = prepared.notes.get(key, "")
        lines.append(f"{name} = {prepared.values[key]!r}  # {key}" + (f": {note}" if note else ""))
    cells.append(("code", "\n".join(lines + list(prepared.extra))))
    for words, code in view.steps:
        cells += [("markdown", words), ("code", code)]
    return cells


def notebook(cells: list[tuple[str, str]]) -> dict[str, Any]:
    """The cells as an nbformat v4 notebook (a JSON document; the Python 3 kernel)."""
    out = []
    for i, (kind, text) in enumerate(cells):
        cell = {"cell_type": kind, "id": f"cell-{i}", "metadata": {}, "source": text}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        out.append(cell)
    return {"cells": out, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                      "language": "python"},
                                       "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def script(cells: list[tuple[str, str]]) -> str:
    """The cells as a plain Python script: the words as comments, the code as it is."""
    parts = []
    for kind, text in cells:
        if kind == "markdown":
            parts.append("\n".join(("# " + line).rstrip() for line in text.splitlines()))
        else:
            parts.append(text)
    return "\n\n".join(parts) + "\n"


def export_view(link: str, *, fmt: str = "ipynb", given: Mapping[str, Any] | None = None) -> str:
    """A view of the app as a Jupyter notebook or a Python script that computes it again.

    The code calls the same dpcore functions as the view, with the same settings and seeds, prints
    the view's headline numbers and draws its charts with the view's own figure functions.

    Parameters
    ----------
    link : str
        The view's link: its name and the settings of its address (``"compare?cmp_T=20&cmp_R=2"``,
        or the whole address the app's "Link for students" shows); a setting it leaves out is at the
        view's default.
    fmt : {"ipynb", "py"}
        A notebook (nbformat v4, as JSON text) or a plain script.
    given : mapping, optional
        Settings by link key as values (the app's widgets), over those of the link.

    Returns
    -------
    str
        The notebook's JSON or the script's text.

    Raises
    ------
    DPCoreError
        A view, key or value the view does not declare, or settings its library call refuses, with
        what to change.

    Examples
    --------
    >>> from dpcore import export_view
    >>> script = export_view("compare?cmp_T=20&cmp_eps=0.5,1", fmt="py")
    >>> "epsilon_sweep(" in script and "T = 20" in script
    True
    """
    if fmt not in FORMATS:
        raise DPCoreError(unknown_choice("format", fmt, FORMATS))
    name, query = parse_link(link)
    view = VIEWS[name]
    values = settings_of(view, {**query, **(given or {})})
    view.check(values)  # the library call's own refusals, before any code is written
    cells = _cells(view, values, fmt, frozenset(query) | frozenset(given or ()))
    if fmt == "py":
        return script(cells)
    return json.dumps(notebook(cells), indent=1, ensure_ascii=False) + "\n"
