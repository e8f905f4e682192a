"""The plotly figures shared by the app's views and the offline report, by what they are for.

The per-view charts are built here: the audit's privacy region, the local-vs-central trade-off,
the privacy profile, the swept bands, the tuning curves, and their shared axes and reference
lines.  What every plot over ε must show (which points miss their target ε: the ring, the hover,
the note under the figure) is :mod:`dpcore.figures.missed`; laying a figure out for a page (its
title and notes as text, its panels one chart each, its legend as HTML) is
:mod:`dpcore.figures.screen`.  Every public name of both is importable from here as well.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go

from .missed import (
    MISS_NAME,
    MISS_RTOL,
    NOTE_LEAD,
    figure_note,
    fmt_epsilon,
    hover_texts,
    join_words,
    mark_missed,
    misses_target,
    target_note,
)
from .screen import (
    AXES_ROOM,
    LEGEND_LINE,
    NOTE,
    PANEL_HEIGHT,
    PLOT_ROOM,
    legend_entries,
    legend_html,
    legend_room,
    on_screen,
    panel_columns,
    panels,
    without_notes,
)
from ..mechanisms import short_name
from .result import best_central, best_central_label, curve_point_name, from_zero, sampling_words, search_cost

__all__ = ["NOTE", "on_screen", "panels", "panel_columns", "legend_html", "PANEL_HEIGHT", "tuning_figure", "released_tuning_figure", "MISS_RTOL", "misses_target", "fmt_epsilon",
           "mark_missed", "target_note", "figure_note", "NOTE_LEAD", "join_words", "without_notes", "tradeoff_figure",
           "band_figure", "REFERENCE_LINE", "readable_axes", "PAID_LINE", "legend_entries", "legend_room",
           "empty_figure",
           # re-exported as well (defined in dpcore.figures.missed, dpcore.figures.screen)
           "MISS_NAME", "hover_texts", "PLOT_ROOM", "AXES_ROOM", "LEGEND_LINE", "privacy_region_figure", "privacy_profile_figure", "legend_above", "COLOURS", "SYMBOLS", "GUESS_LINE", "GUESS_LABEL", "PAID_OPACITY", "MAX_LABELLED"]


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
    central mechanism (local ε = ∞) as a dotted line labelled with its name and as the best of
    N means (:func:`~dpcore.figures.result.best_central_label`); ``baseline``: the non-private reference
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
                             name=f"{short_name(result['curve_mechanism'])}, input noise varied "
                                  f"(its labels' ε fixed at ε/2 = {result.get('epsilon', 0) / 2:g})",
                             hovertext=[f"{curve_point_name(result, r)}<br>accuracy {r['accuracy_mean']:.4f}"
                                        for r in curve], hoverinfo="text"))
    if (central := best_central(rows)) is not None:
        # its label under its line, the non-private one's above (top left): the two lines are often
        # a hair apart, and at a phone's width their labels overprinted
        fig.add_hline(y=central[0]["accuracy_mean"], annotation_text=best_central_label(rows),
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
                baseline_label: str = "non-private", paid: str | None = None,
                point_note: Callable[[dict], str] | None = None) -> go.Figure:
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
    every ε spent.  ``point_note``: a line more for a point's hover, from its row.
    """
    fig = go.Figure()
    groups = list(dict.fromkeys(r[group] for r in rows))
    plotted: list[float] = []
    means: list[float] = []  # the drawn points (without their bands)
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
        means += list(ys)
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
                     f"{r['tuned_search_epsilon']:.3g} in all"
                     + ("" if (c := search_cost(r.get("epsilon"), r["tuned_search_epsilon"])) is None
                        else f", {c:.1f}× this point's ε"))
                    + (f"<br>{sampling_words(r)}" if sampling_words(r) else "")
                    + (f"<br>{r['skew_note']}" if r.get("skew_note") else "")
                    + (f"<br>{point_note(r)}" if point_note is not None else "") for r in pts]
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
    if not log_y and from_zero(means, guess, "accuracy" if "accuracy" in y else "rmse"):
        # a point at or below guessing: the axis from zero, so the fall is drawn to the metric's scale
        top = max([v for v in plotted if math.isfinite(v)] + [guess]) * 1.05
        fig.update_yaxes(range=[0.0, min(top, bounds[1] * 1.02) if bounds is not None else top])
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
