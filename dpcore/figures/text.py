"""A chart's text alternative, read from its Plotly figure: a one-line summary for a screen reader
(:func:`chart_summary`: what kind of chart, what against what, its series, the ranges of x and y,
its reference lines) and its data as a table (:func:`chart_rows`: a row a point, with the series
it belongs to).  The app writes both beside every chart (pages/charts.py): a chart is an image to
a screen reader, and these say what it shows.  Both are made from the figure alone, by
:func:`chart_text`, so they always say what the figure draws.

What counts as data: every trace with at least one point whose x and y are both drawn (a
histogram's values), except the decoration a figure adds around its data, which it marks by
``hoverinfo="skip"`` (a band's outline, a stroke joining two points, an entry of the legend with
no point); reference lines are the figure's horizontal and vertical line shapes (``add_hline``,
``add_vline``), named by the annotation beside them.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from numbers import Number
from typing import Any

import numpy as np
import plotly.graph_objects as go

__all__ = ["ChartText", "chart_text", "chart_summary", "chart_rows", "panels_text", "table_html", "data_traces",
           "reference_lines", "MAX_NAMED", "HISTOGRAM_BINS", "DATA_LABEL"]

#: the most series a summary names (the rest: "and N more"; the table has them all)
MAX_NAMED = 6
#: the most bins a histogram's table counts its values in
HISTOGRAM_BINS = 20
#: what the folded table of a chart's data is called on the page
DATA_LABEL = "Data of this chart"


@dataclass(frozen=True)
class ChartText:
    """A chart's text alternative: its one-line ``summary`` and its data as ``rows`` (dicts of one
    point each: ``series`` and the point's coordinates, named by :attr:`columns`)."""
    summary: str
    rows: list[dict]
    columns: tuple[str, ...]


def _plain(text: Any) -> str:
    """An axis title, a trace's name or an annotation as plain text (no HTML tags; a line break a space)."""
    text = re.sub(r"<br\s*/?>", " ", str(text or ""))
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", text)).strip()


def _number(v: Any) -> float | None:
    """``v`` as a finite float, or ``None`` (a gap, a missing value, a category's name)."""
    if isinstance(v, bool) or not isinstance(v, (Number, np.number)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _fmt(v: Any) -> str:
    f = _number(v)
    if f is None:
        return _plain(v)
    return f"{f:.4g}"


def _values(seq: Any) -> list:
    return [] if seq is None else list(np.asarray(seq, dtype=object).ravel())


def _points(trace) -> list[tuple[Any, Any]]:
    """The (x, y) points a trace draws: both present (a ``None`` or NaN is a gap in a line)."""
    xs, ys = _values(getattr(trace, "x", None)), _values(getattr(trace, "y", None))
    if not xs and ys:
        xs = list(range(len(ys)))
    if not ys and xs:  # a bar chart of its x only draws nothing: no y
        return []
    drawn = lambda v: v is not None and not (isinstance(v, float) and math.isnan(v)) and v == v  # noqa: E731
    return [(x, y) for x, y in zip(xs, ys) if drawn(x) and drawn(y)]


def _histogram_values(trace) -> list[float]:
    return [f for f in (_number(v) for v in _values(trace.x)) if f is not None]


def data_traces(fig: go.Figure) -> list:
    """The traces of ``fig`` that hold data (not decoration: see the module's doc)."""
    found = []
    for trace in fig.data:
        if trace.hoverinfo == "skip":
            continue
        if trace.type == "histogram":
            if _histogram_values(trace):
                found.append(trace)
        elif _points(trace):
            found.append(trace)
    return found


def _name(trace, k: int) -> str:
    return _plain(trace.name) or f"series {k + 1}"


def reference_lines(fig: go.Figure) -> list[tuple[str, str, float]]:
    """The figure's reference lines: (label, ``"x"`` or ``"y"``, value) of each line shape that spans
    its plot (a horizontal line at a y, a vertical one at an x), labelled by the annotation at it; two
    lines at one value (the best central mechanism's and the non-private one, say) each take their own
    annotation, in the order they were drawn (each annotation labels one line)."""
    found, used = [], set()
    for shape in fig.layout.shapes:
        if shape.type not in (None, "line"):
            continue
        xref, yref = str(shape.xref or "x"), str(shape.yref or "y")
        if shape.y0 is not None and shape.y0 == shape.y1 and ("domain" in xref or xref == "paper"):
            axis, value, ref = "y", shape.y0, yref
        elif shape.x0 is not None and shape.x0 == shape.x1 and ("domain" in yref or yref == "paper"):
            axis, value, ref = "x", shape.x0, xref
        else:
            continue
        at = next((k for k, a in enumerate(fig.layout.annotations) if k not in used and a.text
                   and str(getattr(a, f"{axis}ref") or axis) == ref and getattr(a, axis) == value), None)
        used.add(at)
        label = "" if at is None else _plain(fig.layout.annotations[at].text)
        if _number(value) is not None:
            found.append((label or "reference line", axis, float(value)))
    return found


def _axis_title(fig: go.Figure, axis: str) -> str:
    layout = fig.layout[f"{axis}axis"]
    return _plain(layout.title.text) if layout is not None and layout.title is not None else ""


def _kind(traces) -> str:
    """What the traces draw: a line chart (any of them a line: points beside lines are marks on it),
    a scatter plot, bars, a histogram, or a chart (of several kinds)."""
    kinds = set()
    for t in traces:
        if t.type == "bar":
            kinds.add("Bar chart")
        elif t.type == "histogram":
            kinds.add("Histogram")
        elif t.type in ("scatter", "scattergl"):
            kinds.add("Line chart" if "lines" in (t.mode or "lines") else "Scatter plot")
        else:
            kinds.add("Chart")
    if kinds == {"Line chart", "Scatter plot"}:
        return "Line chart"
    return kinds.pop() if len(kinds) == 1 else "Chart"


def _range(values: list, axis: str, log: bool) -> str:
    numbers = [f for f in (_number(v) for v in values) if f is not None]
    if numbers and len(numbers) == len(values):
        lo, hi = min(numbers), max(numbers)
        scale = " (log scale)" if log else ""
        return f"{axis} {_fmt(lo)}{scale}" if lo == hi else f"{axis} from {_fmt(lo)} to {_fmt(hi)}{scale}"
    names = list(dict.fromkeys(_plain(v) for v in values))
    shown = ", ".join(names[:MAX_NAMED]) + (f", and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")
    return f"{axis}: {shown}"


def _names(names: list[str]) -> str:
    listed = ", ".join(names[:MAX_NAMED])
    return listed + (f", and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")


def chart_summary(fig: go.Figure) -> str:
    """One line that says what ``fig`` shows, e.g. "Line chart: accuracy against ε, 3 series (DP-GD,
    output, objective), x from 0.1 to 10 (log scale), y from 0.51 to 0.97; reference lines:
    non-private at y = 0.97." (see :func:`chart_text`)."""
    return chart_text(fig).summary


def chart_rows(fig: go.Figure) -> list[dict]:
    """``fig``'s data as rows, a point each (see :func:`chart_text`)."""
    return chart_text(fig).rows


def _histogram_rows(traces, xname: str) -> list[dict]:
    """Each histogram's values counted in shared bins (at most :data:`HISTOGRAM_BINS`): a row a bin
    and series, ``<xname> from``, ``<xname> to`` and ``count``."""
    every = np.array([v for t in traces for v in _histogram_values(t)], dtype=float)
    edges = np.histogram_bin_edges(every, bins="auto")
    if len(edges) - 1 > HISTOGRAM_BINS:
        edges = np.histogram_bin_edges(every, bins=HISTOGRAM_BINS)
    rows = []
    for k, t in enumerate(traces):
        counts, _ = np.histogram(np.array(_histogram_values(t), dtype=float), bins=edges)
        rows += [{"series": _name(t, k), f"{xname} from": float(a), f"{xname} to": float(b), "count": int(c)}
                 for a, b, c in zip(edges[:-1], edges[1:], counts)]
    return rows


def chart_text(fig: go.Figure) -> ChartText:
    """``fig``'s text alternative: its summary and its rows (a row a point: ``series``, then the
    point's x and y under the axes' titles, ``x`` and ``y`` where an axis has none; a histogram's
    values counted in bins; a reference line a row with only its value)."""
    traces = data_traces(fig)
    lines = reference_lines(fig)
    xname = _axis_title(fig, "x") or "x"
    yname = _axis_title(fig, "y") or "y"
    if yname in ("series", xname):
        yname = f"{yname} (y)"
    if xname == "series":
        xname = "series (x)"
    if not traces and not lines:
        return ChartText("Chart with no data.", [], ("series", xname, yname))
    kind = _kind(traces) if traces else "Chart"
    names = list(dict.fromkeys(_name(t, k) for k, t in enumerate(traces)))
    hists = [t for t in traces if t.type == "histogram"]
    others = [t for t in traces if t.type != "histogram"]
    rows: list[dict] = []
    for k, t in enumerate(traces):
        if t.type != "histogram":
            rows += [{"series": _name(t, k), xname: x, yname: y} for x, y in _points(t)]
    columns: tuple[str, ...] = ("series", xname, yname)
    if hists:
        rows += _histogram_rows(hists, xname)
        columns = ("series", xname, yname, f"{xname} from", f"{xname} to", "count") if others \
            else ("series", f"{xname} from", f"{xname} to", "count")
    for label, axis, value in lines:
        rows.append({"series": f"{label} (reference line)", xname if axis == "x" else yname: value})
    if any(axis == "x" for _, axis, _ in lines) and xname not in columns:
        columns = (*columns, xname)
    # the summary
    if kind == "Histogram":
        what = f"{kind} of {xname}" if xname != "x" else kind
    elif xname != "x" and yname != "y":
        what = f"{kind}: {yname} against {xname}"
    else:
        what = f"{kind} of {yname}" if yname != "y" else f"{kind} against {xname}" if xname != "x" else kind
    parts = [f"{len(names)} series ({_names(names)})" if len(names) != 1 else f"1 series ({names[0]})"] if names else []
    xs = [x for t in others for x, _ in _points(t)] + [v for t in hists for v in _histogram_values(t)]
    ys = [y for t in others for _, y in _points(t)]
    log_x = getattr(fig.layout.xaxis, "type", None) == "log"
    log_y = getattr(fig.layout.yaxis, "type", None) == "log"
    if hists:
        counts = [len(_histogram_values(t)) for t in hists]
        parts.append(f"{counts[0]} values" + (" each" if len(counts) > 1 else "") if len(set(counts)) == 1
                     else "; ".join(f"{c} values" for c in counts[:MAX_NAMED]))
    if xs:
        parts.append(_range(xs, "x", log_x))
    if ys:
        parts.append(_range(ys, "y", log_y))
    summary = f"{what}, " + ", ".join(parts) if parts else what
    if lines:
        summary += ("; reference line" + ("s" if len(lines) > 1 else "") + ": "
                    + ", ".join(f"{label} at {axis} = {_fmt(value)}" for label, axis, value in lines))
    return ChartText(summary + ".", rows, columns)


def panels_text(named: list[tuple[str, go.Figure]]) -> ChartText:
    """The data of a figure drawn as panels (:func:`dpcore.figures.screen.panels`: (title, figure)
    each) as one table: each panel's rows (:func:`chart_text`) under its title, its axes' columns
    named ``x`` and ``y`` (each panel's own summary says what they are); the summary names the
    panels."""
    rows: list[dict] = []
    columns: dict[str, None] = {"panel": None, "series": None}
    for k, (title, fig) in enumerate(named):
        text = chart_text(fig)
        x, y = text.columns[1], text.columns[2]
        generic = {x: "x", y: "y", f"{x} from": "x from", f"{x} to": "x to"}
        for row in text.rows:
            renamed = {"panel": title or f"panel {k + 1}", **{generic.get(c, c): v for c, v in row.items()}}
            columns.update(dict.fromkeys(renamed))
            rows.append(renamed)
    titles = [t or f"panel {k + 1}" for k, (t, _) in enumerate(named)]
    summary = f"Figure of {len(named)} panels ({_names(titles)}); each panel's chart is described beside it."
    return ChartText(summary, rows, tuple(columns))


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, (float, np.floating)) and math.isnan(v)):
        return ""
    f = _number(v)
    return f"{f:.6g}" if f is not None and not isinstance(v, (int, np.integer)) else html.escape(str(v))


def table_html(text: ChartText, label: str = DATA_LABEL) -> str:
    """``text``'s rows as an HTML table folded under ``label`` (a ``<details>``: one line until it is
    opened, from the keyboard too), its header cells marked as the columns' (``scope="col"``), in a
    box that scrolls (it takes the keyboard's focus, so the keyboard scrolls it too).  The page styles
    it by its class, ``chart-data``."""
    head = "".join(f'<th scope="col">{html.escape(c)}</th>' for c in text.columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(row.get(c))}</td>" for c in text.columns) + "</tr>"
                   for row in text.rows)
    name = html.escape(label)
    return (f'<details class="chart-data"><summary>{name}</summary><div class="chart-data-box" tabindex="0" '
            f'role="region" aria-label="{name}"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
            "</table></div></details>")
