"""What every plot over ε must show: which points miss their target ε.

A mechanism whose noise certifies less than the ε it is drawn at (a published
formula that under-calibrates, a heuristic with no guarantee) must never read as
the winner.  Plots keep the target ε on the axis (that is what the papers
draw), and every point carries its certified ε in the hover; a point that
misses its target gets a hollow red ring on top, and a note under the figure
names the mechanisms and what they really certify.  Used by the app's views
and by the presets' exported figures.
"""

from __future__ import annotations

import html
import math
import re
from typing import Iterable

import numpy as np
import plotly.graph_objects as go

from .mechanisms import short_name

__all__ = ["NOTE", "on_screen", "panels", "panel_columns", "legend_html", "PANEL_HEIGHT", "tuning_figure", "released_tuning_figure", "MISS_RTOL", "misses_target", "fmt_epsilon",
           "mark_missed", "target_note", "figure_note", "NOTE_LEAD", "join_words", "without_notes", "tradeoff_figure",
           "band_figure", "REFERENCE_LINE", "readable_axes", "PAID_LINE", "legend_entries", "legend_room",
           "empty_figure"]

# Calibrations round up by about 1e-9; anything above this relative slack misses.
MISS_RTOL = 1e-6
MISS_NAME = "misses its target ε"


def misses_target(target, certified) -> bool:
    """True when the certified ε is above the target (or there is none: ∞, null)."""
    if target is None or not math.isfinite(float(target)):
        return False  # the non-private baseline claims nothing
    if certified is None or not math.isfinite(float(certified)):
        return True
    return float(certified) > float(target) * (1 + MISS_RTOL)


def fmt_epsilon(value) -> str:
    if value is None or not math.isfinite(float(value)):
        return "∞ (no guarantee)"
    return f"{float(value):.4g}"


def hover_texts(targets: Iterable, certs: Iterable) -> list[str]:
    """Hover lines: 'ε target 1, certified 2.04 — misses its target'."""
    out = []
    for t, c in zip(targets, certs):
        line = f"ε target {fmt_epsilon(t)}, certified {fmt_epsilon(c)}"
        out.append(line + (" — MISSES ITS TARGET" if misses_target(t, c) else ""))
    return out


def mark_missed(fig, xs, ys, targets, certs, *, legend: bool = True, **where) -> int:
    """Overlay hollow red rings on the points that miss their target; returns how many.

    ``where`` passes ``row``/``col`` for subplots.
    """
    pts = [(x, y, t, c) for x, y, t, c in zip(xs, ys, targets, certs) if misses_target(t, c)]
    if not pts:
        return 0
    already = any(tr.name == MISS_NAME for tr in fig.data)
    fig.add_trace(go.Scatter(
        x=[p[0] for p in pts], y=[p[1] for p in pts], mode="markers", name=MISS_NAME,
        legendgroup=MISS_NAME, showlegend=legend and not already,
        marker=dict(symbol="circle-open", size=16, line=dict(width=3, color="#d62728"), color="#d62728"),
        hovertext=hover_texts([p[2] for p in pts], [p[3] for p in pts]), hoverinfo="text"), **where)
    return len(pts)


def target_note(rows: Iterable[dict], *, group: str = "mechanism", target: str = "epsilon",
                certified: str = "epsilon_certified", x: str | None = None) -> str | None:
    """The note under a single chart (Compare, Local vs central, Distributed): every group with
    points that miss their target, or ``None``.  The rows go through :func:`figure_note`, the one
    formatter every note is written by (``x``: a swept coordinate other than ε, e.g. ``"skew"``)."""
    points = [{"series": short_name(r.get(group)) if group == "mechanism" else str(r.get(group)),
               "mechanism": r.get(group) if group == "mechanism" else None, "calibration": r.get("calibration"),
               "epsilon": r.get(target), "epsilon_certified": r.get(certified),
               **({x: r.get(x)} if x else {})} for r in rows]
    return figure_note(points, x=x)


#: The note's first sentence: what a ring means.
NOTE_LEAD = ("Ringed points miss their target ε: the noise that ran certifies more than the ε they are "
             "drawn at, so read them as leaking, not as winners.")
#: How a note names a swept coordinate other than ε ("… with n = 2^7").
_X_NAMES = {"n": "n", "skew": "u"}


def _text(value) -> str:
    """A name as text: ``None``, NaN and blanks are empty, and a name in parts (a tuple or
    list: ``("input (Kang)", "(published)")``) joins its non-empty parts with a space, so an
    empty part never leaves a separator behind."""
    if isinstance(value, (tuple, list)):
        return " ".join(p for p in (_text(v) for v in value) if p)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return " ".join(str(value).split())


def _certified(value) -> float:
    """A certified ε as a float: missing (``None``, NaN) is ∞ (no guarantee)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.inf
    return math.inf if math.isnan(v) else v


def _fmt_x(key: str, value) -> str:
    v = float(value)
    if key == "n" and v >= 4 and v == int(v) and int(v) & (int(v) - 1) == 0:
        return f"2^{int(v).bit_length() - 1}"  # the papers' n = 2^7 … 2^21
    return f"{v:g}"


def join_words(parts: Iterable[str], last: str = " and ") -> str:
    """'a', 'a and b', 'a, b and c': the non-empty parts as an English list."""
    parts = [p for p in (_text(p) for p in parts) if p]
    return last.join(parts) if len(parts) <= 2 else ", ".join(parts[:-1]) + last + parts[-1]


def figure_note(rows: Iterable[dict], *, panels: Iterable[str] | None = None, x: str | None = None,
                limit: int | None = 4) -> str | None:
    """The note under a figure: which series have points that miss their target ε, what those
    points certify, and in which panel; ``None`` when no point misses.

    ``rows``: one dict per point drawn (those that miss and the others), with ``series`` (the
    legend name, or its parts as a tuple), ``epsilon`` (the target), ``epsilon_certified``
    (``None``/NaN: ∞) and optionally ``panel`` (the subplot's title), ``mechanism`` and
    ``calibration`` (two series drawing the same runs are one entry, naming both) and, when
    ``x`` names a swept coordinate other than ε (``"n"``, ``"skew"``), the point's value of it
    (``None``: one run drawn flat across the panel).  ``panels``: the figure's panels in order
    (default: as the rows come).

    The text is generated from the entries, never from pieces of text: one entry per series ×
    panel × x × target ε (a duplicate keeps the larger certified ε); a series that reads the
    same in several panels is listed once for them; with more than one panel every number is in
    a sentence that names its panels ("In every panel: …", "In the Adult (LR) panel: …"); the
    swept coordinate is named when it takes more than one value; empty name parts leave no
    separator behind.  At most ``limit`` values per entry (then "…"; ``None``: all).
    """
    rows = list(rows)
    key_x = x if x not in (None, "epsilon") else None
    given = [] if panels is None else [_text(p) for p in panels]
    panels = list(dict.fromkeys([*given, *(_text(r.get("panel")) for r in rows)]))
    show_x = key_x is not None and len({float(r[key_x]) for r in rows if r.get(key_x) is not None}) > 1
    x_name = _X_NAMES.get(key_x or "", key_x)
    names: dict[tuple, list[str]] = {}  # a series' runs -> the legend names drawing them
    drawn: dict[tuple, set] = {}  # (runs, panel) -> every x drawn
    missed: dict[tuple, dict[tuple, float]] = {}  # (runs, panel) -> (x, target) -> certified
    for r in rows:
        mechanism = _text(r.get("mechanism"))
        name = _text(r.get("series")) or (_text(short_name(mechanism)) if mechanism else "") or "an unnamed series"
        runs = (mechanism or name, _text(r.get("calibration")))
        panel = _text(r.get("panel"))
        xv = float(r[key_x]) if key_x is not None and r.get(key_x) is not None else None
        drawn.setdefault((runs, panel), set()).add(xv)
        target, cert = r.get("epsilon"), _certified(r.get("epsilon_certified"))
        if not misses_target(target, cert):
            continue
        if name not in names.setdefault(runs, []):
            names[runs].append(name)
        at = missed.setdefault((runs, panel), {})
        at[xv, float(target)] = max(at.get((xv, float(target)), -math.inf), cert)
    if not missed:
        return None

    def number(c: float) -> str:
        return "∞" if math.isinf(c) else f"{c:.4g}"

    def detail(at: dict[tuple, float], xs: set) -> str:
        if all(math.isinf(c) for c in at.values()):
            return "no guarantee at all: certified ε = ∞"
        shown = {(number(c), t) for (_, t), c in at.items()}
        if show_x and len(shown) == 1 and len(at) > 1 and {xv for xv, _ in at} == xs:
            (c, t), = shown  # the same at every x of the panel
            return f"certified {c} at {t:g} for every {x_name}"

        def at_x(xv) -> str:
            return f" with {x_name} = {_fmt_x(key_x, xv)}" if show_x and xv is not None else ""

        pairs = [f"{number(c)} at {t:g}{at_x(xv)}" for (xv, t), c in
                 sorted(at.items(), key=lambda kv: (-math.inf if kv[0][0] is None else kv[0][0], kv[0][1]))]
        if limit is not None and len(pairs) > limit:
            pairs = [*pairs[:limit], "…"]
        return "certified " + ", ".join(pairs)

    # panels -> detail -> the series' names: a series goes with every panel where it reads the
    # same, and series that read the same there share one entry
    groups: dict[tuple[str, ...], dict[str, list[str]]] = {}
    for runs, labels in names.items():
        same: dict[str, list[str]] = {}  # detail -> the panels where the series reads so
        for panel in panels:
            if (runs, panel) in missed:
                same.setdefault(detail(missed[runs, panel], drawn[runs, panel]), []).append(panel)
        for text, ps in same.items():
            entry = groups.setdefault(tuple(ps), {}).setdefault(text, [])
            entry += [n for n in labels if n not in entry]

    def entries(by_detail: dict[str, list[str]]) -> str:
        return "; ".join(f"{join_words(labels)} ({text})" for text, labels in by_detail.items())

    if len(panels) == 1:
        return f"{NOTE_LEAD} The ringed series: {entries(next(iter(groups.values())))}."
    order = {p: i for i, p in enumerate(panels)}

    def heading(where: tuple[str, ...]) -> str:
        if len(where) == len(panels):
            return "In every panel"
        return f"In the {join_words(p or 'untitled' for p in where)} panel{'s' if len(where) > 1 else ''}"

    sentences = [f"{heading(where)}: {entries(by_detail)}."
                 for where, by_detail in sorted(groups.items(), key=lambda g: (order[g[0][0]], -len(g[0])))]
    return " ".join([NOTE_LEAD, *sentences])


def privacy_region_figure(rec: dict, log_axes: bool = False):
    """The audit as the hypothesis test it is: the attack's ROC and the region no attack can
    enter under the certified guarantee (and under the target), from an audit record
    (:meth:`dpcore.audit.AuditResult.to_dict`)."""
    region, roc = rec["region"], rec["roc"]
    fig = go.Figure()
    fpr = region["fpr"]
    fig.add_trace(go.Scatter(x=fpr, y=[1.0] * len(fpr), mode="lines", line=dict(width=0),
                             showlegend=False, hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=fpr, y=region["tpr_max_certified"], mode="lines", fill="tonexty",
                             fillcolor="rgba(214,39,40,0.12)", line=dict(color="#d62728", width=2),
                             name=f"certified ε = {fmt_epsilon(rec['epsilon_certified'])}: no attack above"))
    if region.get("tpr_max_target") is not None:
        fig.add_trace(go.Scatter(x=fpr, y=region["tpr_max_target"], mode="lines",
                                 line=dict(color="#7f7f7f", width=2, dash="dash"),
                                 name=f"target ε = {fmt_epsilon(rec['epsilon_target'])}, δ = {rec['delta']:g}"))
    fig.add_trace(go.Scatter(x=roc["fpr"], y=roc["tpr"], mode="lines+markers", marker=dict(size=3),
                             line=dict(color="#1f77b4", width=2), name=f"this attack ({rec['threat']})"))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#bbbbbb", dash="dot"),
                             name="guessing"))
    fig.update_layout(xaxis_title="false-positive rate (says 'in' when the record is out)",
                      yaxis_title="true-positive rate", legend=dict(orientation="h", y=-0.25),
                      margin=dict(l=10, r=10, t=30, b=10), title=region.get("note", ""))
    if log_axes:
        fig.update_xaxes(type="log", range=[-4, 0])
        fig.update_yaxes(type="log", range=[-4, 0])
    else:
        fig.update_xaxes(range=[0, 1])
        fig.update_yaxes(range=[0, 1.01])
    return fig


def _local(row: dict) -> float | None:
    """A trade-off row's local ε (``None`` for a refused mechanism)."""
    value = row.get("epsilon_local")
    return None if "error" in row or value is None else float(value)


def tradeoff_figure(result: dict, baseline: float | None = None, baseline_label: str = "non-private") -> go.Figure:
    """Accuracy against local ε of :func:`dpcore.experiments.studies.tradeoff`'s result:
    every mechanism with a local guarantee at the central target, each its own colour and
    symbol in the legend (several share a local ε, so labels on the points would collide;
    ringed when its certified ε misses the target), the input-noise curve, and the best
    central mechanism (local ε = ∞) as a dotted line; ``baseline``: the non-private reference
    (labelled at the left, so that it stays readable where it meets the best central one)."""
    rows = result["rows"]
    finite = [r for r in rows if _local(r) is not None and math.isfinite(_local(r))]
    fig = go.Figure()
    for k, r in enumerate(finite):
        target, cert = r.get("epsilon_target"), r.get("epsilon_certified")
        fig.add_trace(go.Scatter(
            x=[r["epsilon_local"]], y=[r["accuracy_mean"]], mode="markers", name=short_name(r["mechanism"]),
            marker=dict(color=COLOURS[k % len(COLOURS)], symbol=SYMBOLS[k % len(SYMBOLS)], size=11,
                        line=dict(width=1, color="#ffffff")),
            hovertext=(f"{short_name(r['mechanism'])} ({r['mechanism']})<br>local ε {r['epsilon_local']:.4g}"
                       f"<br>{hover_texts([target], [cert])[0]}"),
            hoverinfo="text"))
        mark_missed(fig, [r["epsilon_local"]], [r["accuracy_mean"]], [target], [cert])
    curve = [r for r in result["curve"] if _local(r) is not None and math.isfinite(_local(r))]
    fig.add_trace(go.Scatter(x=[r["epsilon_local"] for r in curve], y=[r["accuracy_mean"] for r in curve],
                             mode="lines+markers", line=dict(color="#888888"), marker=dict(size=5),
                             name=f"{short_name(result['curve_mechanism'])}, input noise varied"))
    central = [r["accuracy_mean"] for r in rows if _local(r) is not None and math.isinf(_local(r))]
    if central:
        # its label under its line, the non-private one's above (top left): the two lines are often
        # a hair apart, and at a phone's width their labels overprinted
        fig.add_hline(y=max(central), annotation_text="best central mechanism (local ε = ∞)",
                      annotation_position="bottom right", **REFERENCE_LINE)
    if baseline is not None:
        fig.add_hline(y=baseline, annotation_text=baseline_label, annotation_position="top left", **REFERENCE_LINE)
    guess = next((r.get("accuracy_guess") for r in rows if r.get("accuracy_guess") is not None), None)
    if guess is not None:
        fig.add_hline(y=guess, annotation_text=GUESS_LABEL["accuracy"], annotation_position="bottom right",
                      **GUESS_LINE)
    fig.update_yaxes(title="test accuracy")
    legend_above(fig)
    # decades: the input-noise curve's local ε's are not round numbers worth a label each
    fig.update_xaxes(type="log", dtick=1, title="local ε (against the server; smaller: stronger)")
    return fig


COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
           "#7f7f7f", "#bcbd22"]
#: reference lines (non-private level, L*) in a grey that reads on light and dark backgrounds
SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "star", "triangle-down", "cross"]
REFERENCE_LINE = dict(line_dash="dot", line_color="#888888", line_width=1.5)
#: the line of what guessing scores (the majority class; the mean label for an RMSE)
GUESS_LINE = dict(line_dash="dash", line_color="#c0392b", line_width=1.5)
GUESS_LABEL = {"accuracy": "guessing (always the majority class)", "rmse": "guessing (always the mean)"}
#: a tuned curve drawn again at the ε its whole search spent (:func:`band_figure`'s ``paid``): in its
#: mechanism's colour, thin, dash-dotted and faded, so it neither reads as the red dashed guessing line
#: nor outweighs the curve at the target ε
PAID_LINE = dict(dash="dashdot", width=1.5)
PAID_OPACITY = 0.7
#: the largest number of distinct x values labelled one by one on a log axis
MAX_LABELLED = 12


def privacy_profile_figure(curve: list[dict], delta: float) -> go.Figure:
    """ε(δ) under add/remove (solid) and replace-one (dashed) from a certificate's ``curve``, on a
    log δ axis labelled in powers of ten (1e-5, never "10µ"), with the δ asked for marked: a
    dotted line and each relation's ε there."""
    fig = go.Figure()
    for relation, dash, name in (("add-remove", "solid", "add/remove"), ("replace-one", "dash", "replace-one")):
        pts = [(c["delta"], c[relation]) for c in curve
               if c.get(relation) is not None and math.isfinite(c[relation])]
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers", name=name,
                                 line={"dash": dash}, hovertemplate="δ = %{x:.2g}<br>ε = %{y:.4g}<extra>" + name
                                 + "</extra>"))
        here = [e for d, e in pts if d == delta]
        if here:
            fig.add_trace(go.Scatter(x=[delta], y=here, mode="markers+text", showlegend=False,
                                     marker={"size": 12, "symbol": "circle-open", "line": {"width": 2}},
                                     text=[f"ε = {here[0]:.3g}"], textposition="middle right",
                                     hoverinfo="skip"))
    fig.add_vline(x=delta, line_dash="dot", line_color="grey",
                  annotation_text=f"δ asked: {delta:.2g}", annotation_position="top")
    deltas = [c["delta"] for c in curve]
    decades = list(range(math.floor(math.log10(min(deltas + [delta]))),
                         math.ceil(math.log10(max(deltas + [delta]))) + 1))
    # at most 6 labels (every 2nd or 3rd decade over 15, the δ asked's among them): a phone's 330 px
    # of axis fits them without one label printing over the next
    step, asked = max(1, math.ceil(len(decades) / 6)), math.floor(math.log10(delta))
    ticks = [10.0**k for k in decades if (k - asked) % step == 0]
    fig.update_xaxes(type="log", tickmode="array", tickvals=ticks, ticktext=[f"{t:.0e}".replace("e-0", "e-")
                                                                            for t in ticks], title="δ")
    fig.update_layout(title="ε(δ): the privacy profile, both relations", yaxis_title="ε", height=420)
    legend_above(fig)
    return fig


def empty_figure(title: str, message: str) -> go.Figure:
    """A figure with nothing to draw (every setting of a sweep refused, say): its title and one
    sentence saying why, where the panels would be (Plotly refuses a grid of no panels)."""
    fig = go.Figure()
    fig.add_annotation(text=message, xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False,
                       font={"color": "#d62728", "size": 14})
    fig.update_layout(title=title, template="plotly_white", height=300,
                      xaxis={"visible": False}, yaxis={"visible": False})
    return fig


def readable_axes(fig: go.Figure, xs, *, log_x: bool, log_y: bool, ys=None, reach=()) -> None:
    """Axes a class can read: on a log x axis the plotted values themselves as tick labels
    (decades only when there are many), decades on a log y axis (no stray minor labels
    such as "2 5") or, when the plotted ``ys`` span less than two decades (so one decade
    tick or none would be in view), labelled 1–2–5 steps, and the legend above the plot,
    clear of the axis titles.  ``reach``: further x values the (log) x axis must cover without
    labelling each (the ε's tuning searches spent): the axis's range takes them in, and the
    decades beyond the labelled values are labelled."""
    values = sorted({float(x) for x in xs if x is not None and float(x) > 0})
    beyond = sorted({float(x) for x in reach if x is not None and math.isfinite(float(x)) and float(x) > 0})
    if log_x:
        if 0 < len(values) <= MAX_LABELLED:
            top = max(beyond) if beyond else values[-1]  # decades up to the farthest ε spent, clear of the last label
            ticks = values + [10.0**k for k in range(math.floor(math.log10(values[-1])) + 1,
                                                       math.floor(math.log10(top)) + 1) if 10.0**k > values[-1] * 1.5]
            fig.update_xaxes(type="log", tickmode="array", tickvals=ticks, ticktext=[f"{v:g}" for v in ticks])
        else:
            fig.update_xaxes(type="log", dtick=1)
        if beyond:
            every = values + beyond
            lo, hi = math.log10(min(every)), math.log10(max(every))
            pad = 0.04 * max(hi - lo, 1.0)  # room for the end markers
            fig.update_xaxes(range=[lo - pad, hi + pad])
    if log_y:
        positive = [float(v) for v in (ys if ys is not None else []) if v is not None and math.isfinite(v) and v > 0]
        if positive and max(positive) / min(positive) < 100:
            lo, hi = min(positive), max(positive)
            ticks = [m * 10.0**k for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
                     for m in (1, 2, 5)]
            ticks = [t for t in ticks if lo / 1.5 <= t <= hi * 1.5]
            fig.update_yaxes(type="log", tickmode="array", tickvals=ticks, ticktext=[f"{t:.3g}" for t in ticks])
        else:
            fig.update_yaxes(type="log", dtick=1, exponentformat="power")
    legend_above(fig)


def legend_above(fig: go.Figure) -> None:
    """A horizontal legend above the plot area, clear of the axis titles (and room for it)."""
    fig.update_layout(legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
                      margin=dict(l=10, r=10, t=90, b=10), title=dict(y=0.98, yanchor="top"))


def band_figure(rows: list[dict], x: str, y: str, *, group: str = "mechanism", log_x: bool = True,
                log_y: bool = False, title: str = "", baseline: float | None = None,
                x_title: str | None = None, y_title: str | None = None,
                bounds: tuple[float, float] | None = None, guess: float | None = None,
                baseline_label: str = "non-private", paid: str | None = None) -> go.Figure:
    """Lines with ±1 std bands over repeats, one per group (rows' ``<y>`` and
    ``<y with _std>``); points whose certified ε misses their target ε (rows' ``epsilon``
    and ``epsilon_certified``) get a red ring and every point names both in its hover.

    A band stays where its metric can be: within ``bounds`` (e.g. (0, 1) for an
    accuracy) and, on a log y axis, above a tenth of its mean (a band reaching 0 would
    otherwise fall to the bottom edge).  ``baseline``: the non-private model's value (a grey
    dotted line, ``baseline_label``); ``guess``: what always answering the majority class (the
    mean, for an RMSE) scores, a red dashed line, so a private model that does no better than
    guessing reads as useless, not as weak.  ``paid``: a row field holding the ε a tuning's whole
    search spent; a group whose points all have it is drawn again at that ε (:data:`PAID_LINE`:
    thin, dash-dotted, faded, so it never reads as the red dashed guessing line), so a tuned
    curve is seen at what it really cost.  Its points go in the order of the ε spent (a line
    that runs back and forth along x would zig-zag), and two points at one ε spent (two target
    ε's tuned by the same search) are not joined (a vertical stroke would read as a collapse);
    each is joined to its tuned point by a faint dotted stroke at its height; the x axis reaches
    every ε spent.
    """
    fig = go.Figure()
    groups = list(dict.fromkeys(r[group] for r in rows))
    plotted: list[float] = []
    xname, yname = x_title or x, y_title or y  # the hover says what the axes say, not the column names
    paid_drawn = False
    spent_xs: list[float] = []  # the ε's the searches spent: the x axis must reach them
    for k, g in enumerate(groups):
        pts = sorted((r for r in rows if r[group] == g and r.get(y) is not None), key=lambda r: r[x])
        if not pts:
            continue
        xs = [r[x] for r in pts]
        ys = np.array([r[y] for r in pts], dtype=float)
        sd = np.array([r.get(y.replace("_mean", "_std")) or 0.0 for r in pts], dtype=float)
        low, high = ys - sd, ys + sd
        if bounds is not None:
            low, high = np.clip(low, *bounds), np.clip(high, *bounds)
        if log_y:
            low = np.maximum(low, ys / 10.0)
        plotted += [*ys, *low, *high]
        colour = COLOURS[k % len(COLOURS)]
        fig.add_trace(go.Scatter(x=xs + xs[::-1], y=list(high) + list(low[::-1]), fill="toself", mode="lines",
                                 line=dict(width=0), fillcolor=colour, opacity=0.15, showlegend=False,
                                 hoverinfo="skip"))
        targets = [r.get("epsilon") for r in pts]
        certs = [r.get("epsilon_certified") for r in pts]
        name = short_name(g) if group == "mechanism" else str(g)
        head = f"{name} ({g})" if name != str(g) else name
        searched = [("" if r.get("tuned_search_epsilon") is None else
                     f"<br>tuned at ε = {r.get('tuned_at', 0):g} by a search that spent ε = "
                     f"{r['tuned_search_epsilon']:.3g} in all") for r in pts]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=name, line=dict(color=colour),
                                 hovertext=[f"{head}<br>{xname} = {xv:g}<br>{yname} = {yv:.4g}<br>{h}{t}" for xv, yv, h, t in
                                            zip(xs, ys, hover_texts(targets, certs), searched)], hoverinfo="text"))
        mark_missed(fig, xs, list(ys), targets, certs)
        spent = [r.get(paid) for r in pts] if paid else []
        if spent and all(v is not None and math.isfinite(v) for v in spent):
            px, py, ph = [], [], []
            for sv, yv, xv in sorted(zip(spent, ys, xs)):  # along the ε spent; at one ε, lowest first
                if px and px[-1] == sv:  # the same search's ε again: a gap, not a vertical stroke
                    px, py, ph = px + [None], py + [None], ph + [None]
                px.append(sv)
                py.append(yv)
                ph.append(f"{head}<br>tuned for ε = {xv:g}; the whole search spent ε = {sv:.3g}<br>"
                          f"{yname} = {yv:.4g}")
            # each tuned point joined to where its search's ε puts it (a faint dotted stroke at its
            # height): a point at the ε spent never stands alone like an outlier
            jx = [v for xv, sv in zip(xs, spent) for v in (xv, sv, None)]
            jy = [v for yv in ys for v in (yv, yv, None)]
            fig.add_trace(go.Scatter(x=jx, y=jy, mode="lines", showlegend=False, hoverinfo="skip",
                                     name=f"{name}, tuned → paid", line=dict(color=colour, width=1, dash="dot"),
                                     opacity=PAID_OPACITY))
            fig.add_trace(go.Scatter(x=px, y=py, mode="lines+markers", name=f"{name}, search paid",
                                     showlegend=False, line=dict(color=colour, **PAID_LINE), opacity=PAID_OPACITY,
                                     marker=dict(size=5), hovertext=ph, hoverinfo="text"))
            spent_xs += spent
            paid_drawn = True
    if paid_drawn:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name="dash-dot: the tuned curve at the ε its "
                                 "search spent", line=dict(color="#888888", **PAID_LINE), opacity=PAID_OPACITY,
                                 hoverinfo="skip"))
    if baseline is not None:
        fig.add_hline(y=baseline, annotation_text=baseline_label, **REFERENCE_LINE)
    if guess is not None:
        fig.add_hline(y=guess, annotation_text=GUESS_LABEL["accuracy" if "accuracy" in y else "rmse"],
                      annotation_position="bottom right", **GUESS_LINE)
    fig.update_layout(title=title, xaxis_title=x_title or x, yaxis_title=y_title or y)
    readable_axes(fig, [r[x] for r in rows], log_x=log_x, log_y=log_y, ys=plotted, reach=spent_xs)
    return fig


def tuning_figure(rows: list[dict], published: dict[str, tuple[str, float]] | None = None,
                  published_epsilon: float | None = None, guess: float | None = None,
                  baseline: float | None = None, baseline_label: str = "non-private") -> go.Figure:
    """Tuned test accuracy against ε, per mechanism (one colour each), twice: a solid line at
    the target ε (what the released run certifies; papers report this) and a dashed one at
    the ε the whole search spent.  ``published``: mechanism → (label, accuracy in %) at
    ``published_epsilon``, drawn as open diamonds (Yu et al. 2020's table).  Three grey
    legend entries say what the line styles mean; ``baseline``: the non-private reference (a grey
    dotted line, ``baseline_label``)."""
    fig = go.Figure()
    groups = list(dict.fromkeys(r["mechanism"] for r in rows))
    xs_all: list[float] = []
    for k, g in enumerate(groups):
        pts = sorted((r for r in rows if r["mechanism"] == g and r.get("test_accuracy") is not None),
                     key=lambda r: r["epsilon"])
        if not pts:
            continue
        colour = COLOURS[k % len(COLOURS)]
        acc = [r["test_accuracy"] for r in pts]
        name = short_name(g)
        hover = [f"{name} ({g})<br>ε target {fmt_epsilon(r['epsilon'])} · certified {fmt_epsilon(r.get('epsilon_certified'))}"
                 f" · spent by the search {fmt_epsilon(r.get('epsilon_spent'))}<br>test accuracy "
                 f"{r['test_accuracy']:.4f}<br>" + ", ".join(f"{a}={b:g}" for a, b in r["setting"].items())
                 for r in pts]
        for x, dash in (("epsilon", None), ("epsilon_spent", "dash")):
            xs = [r.get(x) for r in pts]
            if any(v is None or not math.isfinite(v) for v in xs):
                continue
            xs_all += xs
            fig.add_trace(go.Scatter(x=xs, y=acc, mode="lines+markers", name=name, legendgroup=g,
                                     showlegend=dash is None, line=dict(color=colour, dash=dash),
                                     hovertext=hover, hoverinfo="text"))
        if published and g in published and published_epsilon is not None:
            label, value = published[g]
            xs_all.append(published_epsilon)
            fig.add_trace(go.Scatter(x=[published_epsilon], y=[value / 100.0], mode="markers", legendgroup=g,
                                     name=f"{name}: published ({label})", showlegend=False,
                                     marker=dict(symbol="diamond-open", size=12, color=colour, line=dict(width=2)),
                                     hovertext=f"published: {label}, {value:.1f} % at ε = {published_epsilon:g}",
                                     hoverinfo="text"))
    keys = [("solid: the released run, at its target ε", dict(mode="lines", line=dict(color="#888888"))),
            ("dashed: with the search paid, at the ε spent",
             dict(mode="lines", line=dict(color="#888888", dash="dash")))]
    if published:
        keys.append(("◇ published (Yu et al. 2020, Table 2)",
                     dict(mode="markers", marker=dict(symbol="diamond-open", size=11, color="#888888"))))
    for name, style in keys:
        fig.add_trace(go.Scatter(x=[None], y=[None], name=name, hoverinfo="skip", **style))
    if baseline is not None:
        fig.add_hline(y=baseline, annotation_text=baseline_label, **REFERENCE_LINE)
    if guess is not None:  # what always answering the majority class scores
        fig.add_hline(y=guess, annotation_text=GUESS_LABEL["accuracy"], annotation_position="bottom right",
                      **GUESS_LINE)
    fig.update_layout(title="tuned test accuracy against ε", xaxis_title="ε", yaxis_title="test accuracy")
    readable_axes(fig, xs_all or [1.0], log_x=True, log_y=False)
    return fig


def released_tuning_figure(rows: list[dict], guess: float | None = None, baseline: float | None = None,
                           baseline_label: str = "non-private") -> go.Figure:
    """Input and local perturbation against ε, per mechanism (one colour each): solid, with the
    settings each release chose on its own records (free); dotted, at the defaults on the same
    releases.  Accuracy or RMSE, whichever the rows carry, with the non-private level and
    guessing as grey lines (``baseline``: the one non-private reference, ``baseline_label``)."""
    metric = "accuracy" if any("test_accuracy" in r for r in rows) else "rmse"
    fig = go.Figure()
    xs_all: list[float] = []
    for k, g in enumerate(dict.fromkeys(r["mechanism"] for r in rows)):
        pts = sorted((r for r in rows if r["mechanism"] == g and r.get(f"test_{metric}") is not None),
                     key=lambda r: r["epsilon"])
        if not pts:
            continue
        colour, name = COLOURS[k % len(COLOURS)], short_name(g)
        xs = [r["epsilon"] for r in pts]
        xs_all += xs
        for key, label, dash in ((f"test_{metric}", "tuned on its released records", None),
                                 (f"untuned_test_{metric}", "defaults", "dot")):
            hover = [f"{name} ({g}), {label}<br>ε {fmt_epsilon(r['epsilon'])} certified "
                     f"{fmt_epsilon(r.get('epsilon_certified'))} = spent"
                     + (" (the choice is post-processing)" if dash is None else "") + f"<br>test {metric} "
                     f"{r[key]:.4f}" + (f"<br>the guess chosen by {r['guess_chosen']} of {r['repeats']} releases"
                                        if dash is None and "guess_chosen" in r else "") for r in pts]
            fig.add_trace(go.Scatter(x=xs, y=[r[key] for r in pts], mode="lines+markers", name=name, legendgroup=g,
                                     showlegend=dash is None, line=dict(color=colour, dash=dash),
                                     hovertext=hover, hoverinfo="text"))
    for name, style in (("solid: settings chosen on the released records (free)",
                         dict(mode="lines", line=dict(color="#888888"))),
                        ("dotted: the defaults, same releases", dict(mode="lines", line=dict(color="#888888", dash="dot")))):
        fig.add_trace(go.Scatter(x=[None], y=[None], name=name, hoverinfo="skip", **style))
    if baseline is not None:
        fig.add_hline(y=baseline, annotation_text=baseline_label, **REFERENCE_LINE)
    if guess is not None:
        fig.add_hline(y=guess, annotation_text=GUESS_LABEL[metric], annotation_position="bottom right", **GUESS_LINE)
    label = "test accuracy" if metric == "accuracy" else "test RMSE"
    fig.update_layout(title=f"input and local perturbation, tuned for free: {label} against ε",
                      xaxis_title="ε (certified = spent)", yaxis_title=label)
    readable_axes(fig, xs_all or [1.0], log_x=True, log_y=False)
    return fig


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
