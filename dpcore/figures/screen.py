"""Figures laid out for a page: a chart's title and the notes below it taken out as text the page
writes around it (:func:`on_screen`, :func:`without_notes`), the room a legend needs, and a figure
of many panels as one chart a panel (:func:`panels`, :func:`panel_columns`) with one legend for
all drawn as HTML (:func:`legend_html`).  Used by the app's views and by the offline report
(:mod:`dpcore.report`); the figures themselves keep their layout for downloads.
"""

from __future__ import annotations

import html
import re

import plotly.graph_objects as go

__all__ = ["NOTE", "without_notes", "on_screen", "PLOT_ROOM", "AXES_ROOM", "LEGEND_LINE", "legend_entries",
           "legend_room", "PANEL_HEIGHT", "panels", "panel_columns", "legend_html"]


#: The ``name`` of an annotation that is a note below a figure (it becomes page text on screen).
NOTE = "note"


def _plain(text: str) -> str:
    return re.sub(r"<[^>]+>", "", re.sub(r"<br\s*/?>", " — ", text or "")).strip(" —")


def without_notes(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` without its notes below it (annotations named :data:`NOTE`), for a page
    that writes the note itself as text (its own :func:`figure_note`); ``fig`` keeps them."""
    shown = go.Figure(fig)
    if any(a.name == NOTE for a in shown.layout.annotations):
        shown.layout.annotations = [a for a in shown.layout.annotations if a.name != NOTE]
        shown.update_layout(margin=dict(b=10))
    return shown


def on_screen(fig: go.Figure) -> tuple[str, go.Figure, list[str]]:
    """(title, copy of ``fig``, notes) for a page: the title and the notes below the figure
    (annotations named :data:`NOTE`) come out of the chart, as plain text the page writes
    around it (it wraps on a phone; Plotly's does not, and the toolbar covers a title in the
    chart's corner), and a horizontal legend goes above the plot area, clear of the x-axis
    title.  A figure with no height of its own is made tall enough for its legend
    (:func:`legend_room`): on a phone every entry takes a line of its own, and a plot of fixed
    height would keep what the legend leaves (150 px under ten entries).  The figure itself (for
    downloads) keeps them all as they were."""
    shown = go.Figure(fig)
    text = shown.layout.title.text or ""
    title = _plain(text)
    if text:
        shown.update_layout(title_text=None)
    notes = [_plain(a.text) for a in shown.layout.annotations if a.name == NOTE]
    if notes:
        shown.layout.annotations = [a for a in shown.layout.annotations if a.name != NOTE]
        shown.update_layout(margin=dict(b=10))
    legend = shown.layout.legend
    on_top = legend.orientation == "h"
    if on_top:
        shown.update_layout(legend=dict(yanchor="bottom", y=1.02, xanchor="left", x=0))
    top = 100 if shown.layout.margin.t is None else shown.layout.margin.t  # Plotly's default: 100 px
    # the title's room, less: what stays up there (a legend, subplot titles) needs at most 40 px
    shown.update_layout(margin=dict(t=max(28 if on_top else 10, min(top, 40))))
    if on_top and shown.layout.height is None:
        shown.update_layout(height=legend_room(shown))
    return title, shown, notes


#: The plot area (px) a chart keeps under a legend of a line per entry, what the axes' ticks and
#: titles take below it, and the height of a legend's line; Plotly's own default height is 450.
PLOT_ROOM, AXES_ROOM, LEGEND_LINE = 300, 100, 20


def legend_entries(fig: go.Figure) -> int:
    """How many entries ``fig``'s legend shows (Plotly's rule: a trace is listed unless it says
    ``showlegend=False``, and a lone trace only when it asks to be)."""
    if fig.layout.showlegend is False:
        return 0
    listed = [t for t in fig.data if t.showlegend is not False]
    if fig.layout.showlegend is None and len(listed) <= 1 and not any(t.showlegend for t in listed):
        return 0
    return len(listed)


def legend_room(fig: go.Figure) -> int:
    """The height that leaves :data:`PLOT_ROOM` px of plot under ``fig``'s legend even on a phone,
    where each entry wraps to a line of its own (on a wide screen several share a line and the
    plot gets taller); never less than Plotly's default 450 px.  Chosen on the server, which does
    not know the screen's width: a legend below the plot would take the same room, and a
    shorter legend (fewer entries) would hide what the curves are."""
    return max(450, PLOT_ROOM + AXES_ROOM + LEGEND_LINE * legend_entries(fig))


# -- a figure of many panels, one chart a panel (a phone stacks them) ------------------------------

#: the height of one panel drawn on its own (:func:`panels`): a plot a phone shows whole
PANEL_HEIGHT = 340


def _axis_id(name: str) -> str:
    """``xaxis3`` → ``x3``; ``xaxis`` → ``x``."""
    return name[0] + name[5:]


def panels(fig: go.Figure) -> list[tuple[str, go.Figure]]:
    """A figure of subplots (``make_subplots``) as one figure per panel, in reading order (top row
    first, left to right), each with its panel's title (the subplot title, as text for the page),
    its own axes as the panel had them, its traces and its shapes, and no legend (:func:`legend_html`
    draws the one legend for all).  Laid out in the page's columns, the panels sit side by side
    on a wide screen and one under another on a phone, where a figure of six panels squeezed them
    to 30 px each; the figure itself (its download) keeps the paper's layout.  A figure of one
    panel is returned as it is."""
    layout = fig.layout
    xs = sorted((k for k in layout.to_plotly_json() if k.startswith("xaxis")), key=lambda k: int(k[5:] or 1))
    if len(xs) <= 1:
        return [("", fig)]
    titles = [a for a in layout.annotations if a.xref == "paper" and a.yref == "paper" and a.name != NOTE
              and a.showarrow is False]
    found = []
    for xname in xs:
        xaxis = layout[xname]
        yid = xaxis.anchor or "y"
        yname = "yaxis" + yid[1:]
        yaxis = layout[yname]
        xd, yd = list(xaxis.domain or (0, 1)), list(yaxis.domain or (0, 1))
        xid = _axis_id(xname)
        centre = (xd[0] + xd[1]) / 2
        title = next((a.text for a in titles if abs(a.x - centre) < 1e-6 and abs(a.y - yd[1]) < 1e-6), "")
        one = go.Figure(layout=dict(template=layout.template, showlegend=False, height=PANEL_HEIGHT,
                                    margin=dict(l=10, r=10, t=10, b=10), hovermode=layout.hovermode,
                                    font=layout.font))
        one.update_xaxes(xaxis.to_plotly_json() | {"domain": [0, 1], "anchor": "y"})
        one.update_yaxes(yaxis.to_plotly_json() | {"domain": [0, 1], "anchor": "x"})
        for trace in fig.data:
            if (trace.xaxis or "x") == xid and (trace.yaxis or "y") == yid:
                one.add_trace(trace)
                one.data[-1].update(xaxis="x", yaxis="y", showlegend=False)
        for shape in layout.shapes:
            xref, yref = shape.xref or "x", shape.yref or "y"
            if xref.split(" ")[0] == xid and yref.split(" ")[0] == yid:
                one.add_shape(shape.to_plotly_json() | {"xref": xref.replace(xid, "x", 1),
                                                        "yref": yref.replace(yid, "y", 1)})
        found.append((-yd[1], xd[0], _plain(title or ""), one))
    found.sort(key=lambda f: (round(f[0], 6), f[1]))
    # a metric row's panels are untitled below the first row (the column's name is above them) and
    # name their metric on the row's first y-axis only; drawn one under another on a phone, every
    # panel needs its own title and axis title
    column_title: dict[float, str] = {}
    for _, left, title, _ in found:
        column_title.setdefault(round(left, 6), title)
    row_title: dict[float, str] = {}
    for top, _, _, one in found:
        row_title.setdefault(round(top, 6), one.layout.yaxis.title.text or "")
    for top, _, _, one in found:
        if not one.layout.yaxis.title.text and row_title[round(top, 6)]:
            one.update_yaxes(title_text=row_title[round(top, 6)])
    return [(title or " — ".join(t for t in (column_title[round(left, 6)], _plain(one.layout.yaxis.title.text or ""))
                                 if t), one) for _, left, title, one in found]


def panel_columns(fig: go.Figure) -> int:
    """How many panels a row of ``fig`` holds (its distinct x-domains)."""
    layout = fig.layout
    return max(1, len({tuple(layout[k].domain or (0, 1)) for k in layout.to_plotly_json() if k.startswith("xaxis")}))


_BORDERS = {"dash": "dashed", "longdash": "dashed", "dashdot": "dashed", "longdashdot": "dashed", "dot": "dotted"}


def legend_html(fig: go.Figure) -> str:
    """The legend of ``fig`` (its entries, each drawn as its line and marker are, simply: colour,
    solid, dashed or dotted, a filled or open dot or diamond) as HTML that wraps at the page's width,
    for a figure drawn as :func:`panels`, whose charts have none of their own.  Drawn with CSS alone
    (the page's HTML keeps no SVG); the text takes the page's colour (light and dark themes)."""
    seen, items = set(), []
    for trace in fig.data:
        name = trace.name
        if not name or trace.showlegend is False or name in seen:
            continue
        seen.add(name)
        line = getattr(trace, "line", None)
        marker = getattr(trace, "marker", None)
        colour = html.escape((line.color if line is not None and line.color else None)
                             or (marker.color if marker is not None and isinstance(marker.color, str) else None)
                             or "currentColor")
        mode = trace.mode or "lines"
        style = _BORDERS.get(line.dash if line is not None and line.dash else "", "solid")
        stroke = (f'<span style="position:absolute;left:0;right:0;top:6px;border-top:2px {style} {colour}"></span>'
                  if "lines" in mode else "")
        symbol = str(getattr(marker, "symbol", "") or "") if marker is not None else ""
        dot = ""
        if "markers" in mode or not stroke:
            fill = "transparent" if "open" in symbol else colour
            turn = "transform:rotate(45deg);border-radius:1px;" if "diamond" in symbol else "border-radius:50%;"
            dot = (f'<span style="position:absolute;left:9px;top:2px;width:8px;height:8px;{turn}'
                   f'background:{fill};border:1.5px solid {colour};box-sizing:border-box"></span>')
        items.append(f'<span style="display:inline-flex;align-items:center;gap:5px;margin-right:14px;'
                     f'white-space:nowrap"><span style="position:relative;display:inline-block;width:26px;'
                     f'height:14px" aria-hidden="true">{stroke}{dot}</span>{html.escape(_plain(name))}</span>')
    return f'<div style="display:flex;flex-wrap:wrap;row-gap:2px;font-size:0.85rem">{"".join(items)}</div>'
