"""The figures a view draws from its result, in the core so that the view and the code it exports
(:mod:`dpcore.figures_export`) draw the same chart: Explore's loss curve (:func:`loss_figure`) and Compare's
two charts against ε (:func:`compare_figures`), Distributed's against skew (:func:`skew_figures`)."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from .figures import REFERENCE_LINE, band_figure

__all__ = ["compare_figures", "loss_figure", "skew_figures"]


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
    if star is not None:
        # under its line: the released model's label sits above its point, at L* + gap ≥ L*
        fig.add_hline(y=star, annotation_text="L* (non-private optimum)", annotation_position="bottom right",
                      **REFERENCE_LINE)
    if star is not None and gap is not None and math.isfinite(gap):
        released = star + gap
        end = float(np.nanmean(arr[-1])) if np.isfinite(arr[-1]).any() else math.nan
        apart = not math.isfinite(end) or abs(released - end) > 1e-6 * max(1.0, abs(released))
        fig.add_trace(go.Scatter(
            x=[steps[-1]], y=[released], mode="markers", name="released model",
            marker=dict(symbol="diamond", size=11, color="#d62728"),
            error_y=dict(type="data", array=[rec.get("gap_std") or 0.0], visible=True),
            hovertext=[f"the released model: L(θ) = L* + gap = {released:.4g} (mean over runs)"
                       + ("; the curve is the training before the noise added at the end" if apart else "")],
            hoverinfo="text"))
        fig.add_annotation(x=steps[-1], y=released, text="released model" + (" (after its noise)" if apart else ""),
                           showarrow=False, xanchor="right", yanchor="bottom", font=dict(color="#d62728"))
        if apart:
            title = "Training objective before the noise, and the released model's (◆, after it)"
    fig.update_layout(title=title, xaxis_title="step t",
                      yaxis_title="L(θ_t)", margin=dict(l=10, r=10, t=40, b=10), showlegend=False)
    return fig


def compare_figures(rows: list[dict], reference=None) -> tuple[go.Figure, go.Figure]:
    """Compare's two charts of its rows (those without ``error``): accuracy (RMSE) against ε, with the
    one non-private ``reference`` (a :class:`~dpcore.experiments.baselines.Baseline`, or ``None``) and
    what guessing scores, and the optimality gap against ε."""
    metric = "accuracy_mean" if any("accuracy_mean" in r for r in rows) else "rmse_mean"
    name = metric.split("_")[0]
    fig1 = band_figure(rows, "epsilon", metric, title=name + " against ε",
                       baseline=None if reference is None else reference.value,
                       baseline_label="non-private" if reference is None else reference.label,
                       guess=None if reference is None else reference.guess, x_title="ε", y_title=name,
                       bounds=(0.0, 1.0) if metric == "accuracy_mean" else None, paid="tuned_search_epsilon")
    fig2 = band_figure(rows, "epsilon", "gap_mean", log_y=True, title="optimality gap against ε",
                       x_title="ε", y_title="L(θ) − L*")
    return fig1, fig2


def skew_figures(rows: list[dict], reference=None) -> tuple[go.Figure, go.Figure]:
    """Distributed's two charts of its skew sweep's rows (those without ``error``): accuracy (RMSE)
    against skew u with the non-private ``reference`` and what guessing scores, and the gap."""
    metric, label = (("accuracy_mean", "test accuracy") if any(r.get("accuracy_mean") is not None for r in rows)
                     else ("rmse_mean", "test RMSE"))
    fig = band_figure(rows, "skew", metric, title=f"{label} against skew u",
                      x_title="u = n_max / n_min", y_title=label,
                      bounds=(0.0, 1.0) if metric == "accuracy_mean" else None,
                      baseline=None if reference is None else reference.value,
                      baseline_label="non-private" if reference is None else reference.label,
                      guess=None if reference is None else reference.guess)
    gap = band_figure(rows, "skew", "gap_mean", log_y=True, title="optimality gap against skew u",
                      x_title="u = n_max / n_min", y_title="L(θ) − L*")
    return fig, gap
