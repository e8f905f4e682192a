"""The figures a view draws from its result, in the core so that the view and the code it exports
(:mod:`dpcore.export.writer`) draw the same chart: Explore's loss curve (:func:`loss_figure`) and Compare's
two charts against ε (:func:`compare_figures`), Distributed's against skew (:func:`skew_figures`), Theory's
scaling of the bounds and its measured gaps (:func:`scaling_figure`, :func:`measured_figure`)."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from .charts import GUESS_LINE, REFERENCE_LINE, band_figure, readable_axes
from .result import gap_objective_words, realised_skew_rows, reference_terms

__all__ = ["audit_scores_figure", "compare_figures", "integer_ticks", "lesson_noise_figure", "lesson_places_figure",
           "lesson_skew_figure", "loss_figure", "measured_figure", "odds_figure", "scaling_figure", "skew_figures",
           "tell_apart"]


def loss_figure(rec: dict, title: str = "Training objective on the data the optimiser saw") -> go.Figure | None:
    """Every repeat's training objective against the step, with L* when the record has it, and
    the *released* model's objective L* + gap (mean ± sd over runs) at the last step: the loss
    of the model whose gap the view reports.  Where noise is added after training (output
    perturbation) it stands apart from the curve, and the title says so."""
    trace, steps = rec.get("loss_trace"), rec.get("trace_steps")
    if not trace:
        return None
    arr = np.asarray(trace, dtype=float)
    fig = go.Figure()
    for r in range(arr.shape[1]):
        fig.add_trace(go.Scatter(x=steps, y=arr[:, r], mode="lines", name=f"run {r + 1}",
                                 line=dict(width=1)))
    star, gap = rec.get("loss_star"), rec.get("gap_mean")
    terms = reference_terms(rec.get("model"))  # L*, or a non-convex model's L_ref
    if star is not None:
        # under its line: the released model's label sits above its point, at L* + gap ≥ L*
        fig.add_hline(y=star, annotation_text=terms.star_line, annotation_position="bottom right",
                      **REFERENCE_LINE)
    if star is not None and gap is not None and math.isfinite(gap):
        released = star + gap
        end = float(np.nanmean(arr[-1])) if np.isfinite(arr[-1]).any() else math.nan
        apart = not math.isfinite(end) or abs(released - end) > 1e-6 * max(1.0, abs(released))
        fig.add_trace(go.Scatter(
            x=[steps[-1]], y=[released], mode="markers", name="released model",
            marker=dict(symbol="diamond", size=11, color="#d62728"),
            error_y=dict(type="data", array=[rec.get("gap_std") or 0.0], visible=True),
            hovertext=[f"the released model: L(θ) = {terms.star} + gap = {released:.4g} (mean over runs)"
                       + ("; the curve is the training before the noise added at the end" if apart else "")],
            hoverinfo="text"))
        fig.add_annotation(x=steps[-1], y=released, text="released model" + (" (after its noise)" if apart else ""),
                           showarrow=False, xanchor="right", yanchor="bottom", font=dict(color="#d62728"))
        if apart:
            title = "Training objective before the noise, and the released model's (◆, after it)"
    fig.update_layout(title=title, xaxis_title="step t",
                      yaxis_title="L(θ_t)", margin=dict(l=10, r=10, t=40, b=10), showlegend=False)
    return fig


def _gap_title(rows: list[dict], reference, own_lambda: bool = False) -> str:
    """The gap axis's name: L(θ) − L*, or L(θ) − L_ref for a non-convex model (:func:`reference_terms`);
    ``own_lambda``: points that may each run at their own λ (Compare's tuned ones) say whose L* it is."""
    model = reference.model if reference is not None else next((r["model"] for r in rows if r.get("model")), None)
    terms = reference_terms(model)
    return f"{terms.gap} ({terms.star} of the point's own λ)" if own_lambda else terms.gap


def compare_figures(rows: list[dict], reference=None, lam: float | None = None) -> tuple[go.Figure, go.Figure]:
    """Compare's two charts of its rows (those without ``error``): accuracy (RMSE) against ε, with the
    one non-private ``reference`` (a :class:`~dpcore.experiments.baselines.Baseline`, or ``None``) and
    what guessing scores, and the optimality gap against ε, each point's against the exact minimum of its
    own objective (its λ: the row's own, else ``lam``, named in its hover)."""
    metric = "accuracy_mean" if any("accuracy_mean" in r for r in rows) else "rmse_mean"
    name = metric.split("_")[0]
    fig1 = band_figure(rows, "epsilon", metric, title=name + " against ε",
                       baseline=None if reference is None else reference.value,
                       baseline_label="non-private" if reference is None else reference.label,
                       guess=None if reference is None else reference.guess, x_title="ε", y_title=name,
                       bounds=(0.0, 1.0) if metric == "accuracy_mean" else None, paid="tuned_search_epsilon")
    fig2 = band_figure(rows, "epsilon", "gap_mean", log_y=True, title="optimality gap against ε",
                       x_title="ε", y_title=_gap_title(rows, reference, own_lambda=True),
                       point_note=lambda r: gap_objective_words(r, lam))
    return fig1, fig2


#: the skew axis: the clients' realised n_max / n_min (:func:`~dpcore.figures.result.realised_skew_rows`)
SKEW_AXIS = "u = n_max / n_min of the clients' sizes"


def skew_figures(rows: list[dict], reference=None) -> tuple[go.Figure, go.Figure]:
    """Distributed's two charts of its skew sweep's rows (those without ``error``): accuracy (RMSE)
    against skew u with the non-private ``reference`` and what guessing scores, and the gap.  Each point is
    drawn at the skew its clients' whole-record sizes have (:func:`~dpcore.figures.result.realised_skew_rows`), its
    hover naming the u asked where the two differ."""
    rows = realised_skew_rows(rows)
    metric, label = (("accuracy_mean", "test accuracy") if any(r.get("accuracy_mean") is not None for r in rows)
                     else ("rmse_mean", "test RMSE"))
    fig = band_figure(rows, "skew", metric, title=f"{label} against skew u",
                      x_title=SKEW_AXIS, y_title=label,
                      bounds=(0.0, 1.0) if metric == "accuracy_mean" else None,
                      baseline=None if reference is None else reference.value,
                      baseline_label="non-private" if reference is None else reference.label,
                      guess=None if reference is None else reference.guess)
    gap = band_figure(rows, "skew", "gap_mean", log_y=True, title="optimality gap against skew u",
                      x_title=SKEW_AXIS, y_title=_gap_title(rows, reference))
    return fig, gap


#: how a curve that coincides with an earlier one is drawn over it (k-th repeat: k-th style), so
#: both stay visible: a dashed line over a solid one shows both colours, and the markers differ
OVER_DASHES = ["dash", "dashdot", "longdash", "longdashdot", "5px,3px,1px,3px"]
OVER_SYMBOLS = ["square-open", "diamond-open", "triangle-up-open", "x-thin-open", "star-open", "cross-thin-open"]


def tell_apart(fig: go.Figure) -> None:
    """Curves with the same values (several rows share one bound) all visible: each repeat is
    drawn on top, dashed, with its own open marker, and its legend entry says which curve it
    lies on.  Two curves are the same when every point agrees to 0.1 % (indistinguishable on
    a log axis)."""
    drawn: list[tuple[object, list[float], int]] = []  # (first trace, its y's, repeats so far)
    for tr in fig.data:
        ys = [None if v is None else float(v) for v in (tr.y if tr.y is not None else ())]
        same = next((i for i, (_, other, _) in enumerate(drawn) if len(other) == len(ys) and ys
                     and all(u == v if u is None or v is None else math.isclose(u, v, rel_tol=1e-3)
                             for u, v in zip(ys, other))), None)
        if same is None:
            drawn.append((tr, ys, 0))
            continue
        first, other, k = drawn[same]
        drawn[same] = (first, other, k + 1)
        tr.line.dash = OVER_DASHES[k % len(OVER_DASHES)]
        tr.marker.symbol = OVER_SYMBOLS[k % len(OVER_SYMBOLS)]
        tr.marker.size = 9
        tr.name = f"{tr.name} (same as {first.name.split(' (')[0]})"


def integer_ticks(fig: go.Figure, xs) -> None:
    """A sample-size axis (log) labelled at round integers, 1–2–5 steps: 5,000, 10,000, 20,000, …
    (the scaling grid's n are the dataset's n times powers of 2, e.g. 4522.125).  The hover
    reads n as a whole number too."""
    lo, hi = min(xs), max(xs)
    ticks = [m * 10**k for k in range(10) for m in (1, 2, 5) if lo <= m * 10**k <= hi]
    fig.update_xaxes(tickmode="array", tickvals=ticks, ticktext=[f"{t:,}" for t in ticks])
    fig.update_traces(xhoverformat=",.0f")


def scaling_figure(sc: dict, rows) -> go.Figure:
    """Theory's chart: each chosen row's predicted excess risk (``rows``: their ids) along the grid of
    :func:`dpcore.theory.catalog.scaling_report`'s result ``sc``, on log axes, coinciding curves told apart."""
    fig = go.Figure()
    for r in sc["rows"]:
        if r["id"] in rows:
            fig.add_trace(go.Scatter(x=sc["grid"], y=r["risk"], mode="lines+markers",
                                     name=f"{r['id']} (slope {r['risk_slope']:.2f})" if r["risk_slope"] is not None
                                     else r["id"]))
    fig.update_xaxes(title=sc["over"])
    fig.update_yaxes(title="predicted excess risk")
    readable_axes(fig, sc["grid"], log_x=True, log_y=True)  # decades, no minor labels; legend above
    if sc["over"] == "n":
        integer_ticks(fig, sc["grid"])
    tell_apart(fig)
    return fig


def measured_figure(meas: dict) -> go.Figure:
    """Theory's measured gaps (:func:`dpcore.experiments.studies.compare_measured`'s result) beside each
    implementing row's predicted excess risk, dotted."""
    fig = go.Figure()
    for mrec in meas["mechanisms"]:
        if not mrec.get("gap_mean"):
            continue
        fig.add_trace(go.Scatter(x=meas["grid"], y=mrec["gap_mean"], mode="lines+markers",
                                 name=f"{mrec['mechanism']} measured (slope {mrec['measured_slope']:.2f})"))
        for row in mrec["rows"]:
            fig.add_trace(go.Scatter(x=meas["grid"], y=row["predicted_risk"], mode="lines", line=dict(dash="dot"),
                                     name=f"{row['id']} predicted (slope {row['predicted_slope']:.2f})"))
    if meas.get("model") == "logreg":  # L(0) − L* ≤ ln 2: a model above it does worse than θ = 0
        fig.add_hline(y=math.log(2), line=dict(color=GUESS_LINE["line_color"], dash="dash", width=1))
        # on a log axis an annotation's y is the exponent (add_hline's own label lands at e^…)
        fig.add_annotation(x=0, xref="paper", y=math.log10(math.log(2)), yref="y", xanchor="left", yanchor="bottom",
                           text="ln 2: a model above it is worse than θ = 0", showarrow=False,
                           font=dict(color=GUESS_LINE["line_color"], size=11))
    fig.update_xaxes(title=meas["over"])
    fig.update_yaxes(title="gap or predicted risk")
    readable_axes(fig, meas["grid"], log_x=True, log_y=True)
    if meas["over"] == "n":
        integer_ticks(fig, meas["grid"])
    tell_apart(fig)
    return fig


def audit_scores_figure(res: dict) -> go.Figure:
    """The Audit view's histograms of an audit's scores (:meth:`dpcore.audit.AuditResult.to_dict`): the runs
    on D (the record out) and on D' (in), overlaid, with the attack's threshold."""
    hist = go.Figure()
    hist.add_trace(go.Histogram(x=res["scores"]["without_canary"], name="D (record out)", opacity=0.6))
    hist.add_trace(go.Histogram(x=res["scores"]["with_canary"], name="D' (record in)", opacity=0.6))
    if res.get("threshold") is not None:
        hist.add_vline(x=res["threshold"], line_dash="dot", annotation_text="threshold")
    hist.update_layout(barmode="overlay", xaxis_title=f"score ({res['score']})", yaxis_title="runs",
                       margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h"))
    return hist


def odds_figure() -> go.Figure:
    """The Lesson's first step: e to the power ε, the most one record can move the odds of a conclusion."""
    eps = [0.1, 0.5, 1.0, 2.0, 5.0]
    fig = go.Figure(go.Bar(x=[f"ε = {e:g}" for e in eps], y=[math.exp(e) for e in eps],
                           text=[f"{math.exp(e):.3g}×" for e in eps], textposition="outside"))
    fig.update_layout(title="How much one record can move the odds of any conclusion: e to the power ε",
                      yaxis_title="largest odds factor", yaxis_type="log", yaxis_dtick=1,  # decades only
                      margin=dict(l=10, r=10, t=60, b=10))
    return fig


def lesson_noise_figure(rows: list[dict], reference) -> go.Figure:
    """The Lesson's second step: DP-GD's test accuracy against ε (:func:`dpcore.lesson.noise_rows`), with the
    non-private ``reference`` and what guessing scores."""
    return band_figure(rows, "epsilon", "accuracy_mean", title="DP-GD: test accuracy against ε", x_title="ε",
                       y_title="accuracy", baseline=reference.value, baseline_label=reference.label,
                       bounds=(0.0, 1.0), guess=reference.guess)


def lesson_places_figure(rows: list[dict]) -> go.Figure:
    """The Lesson's third step: the optimality gap of each place the noise enters (:func:`dpcore.lesson.places_rows`)."""
    return band_figure(rows, "epsilon", "gap_mean", log_y=True, title="Where the noise enters: optimality gap",
                       x_title="ε", y_title=_gap_title(rows, None))


def lesson_skew_figure(rows: list[dict]) -> go.Figure:
    """The Lesson's fifth step: accuracy against the clients' skew u (:func:`dpcore.lesson.skew_rows`)."""
    return band_figure(realised_skew_rows(rows), "skew", "accuracy_mean", title="Uneven clients: accuracy against skew u",
                       x_title=SKEW_AXIS, y_title="accuracy", bounds=(0.0, 1.0),
                       guess=rows[0].get("accuracy_guess") if rows else None)
