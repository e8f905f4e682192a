"""A seed-paper preset's figure, in the paper's panel layout, from the tidy table of its sweep.

:func:`figure_and_points` draws what :meth:`~dpcore.experiments.presets_spec.Preset.figure` shows: one
panel per model (or metric) and dataset (or ε), one line per mechanism (the learning rate with the best
mean metric at each point), the one non-private reference every view draws where it is cheap, what
guessing scores, red rings on the points whose certified ε misses the target, and the note that says so.
"""

from __future__ import annotations

import functools
import math
import textwrap

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from ..datasets import DATASETS, load
from ..figures.charts import (
    GUESS_LABEL,
    GUESS_LINE,
    NOTE,
    empty_figure,
    figure_note,
    hover_texts,
    mark_missed,
)
from ..mechanisms import REGISTRY, short_name
from ..models import make_model
from .baselines import baseline
from .context import shared_context
from .run import RunSpec

__all__ = ["figure_and_points", "panel_name", "wrap_note"]


def figure_and_points(preset, df, published=None, calibration: str | None = None) -> tuple[go.Figure, dict]:
    """:meth:`~dpcore.experiments.presets_spec.Preset.figure` of ``preset``, and what its note is made
    of: ``{"rows": …, "panels": …, "x": …}``, the keyword arguments of :func:`dpcore.figures.charts.figure_note` (every point drawn of a
    private mechanism: its series, mechanism, calibration, panel, x, target and certified
    ε; the panels in order; the swept coordinate).  The figure's note is
    ``figure_note(**points)``; a page that writes the note itself calls it the same way."""
    ok = _with_guess(df[df["error"].isna()] if "error" in df else df)
    sources = [(ok, "")]
    if published is not None:
        pub = published[published["error"].isna()] if "error" in published else published
        pub = pub[(pub["calibration"] == "published") & pub["mechanism"].map(lambda m: REGISTRY[m].private)]
        if not pub.empty:
            sources.append((pub, "published"))
    metrics = [m for m in preset.metrics if m in ok.columns]
    if preset.x == "n" and "rmse" in ok.columns:
        metrics = ["rmse"]
    row_keys = (list(preset.models) if preset.rows == "model" else
                metrics if preset.rows == "metric" else [None])
    col_keys = list(preset.datasets) if preset.cols == "dataset" else sorted(ok["epsilon"].unique())
    if preset.cols == "epsilon":
        col_keys = [e for e in col_keys if any(abs(e - p) < 1e-12 for p in preset.epsilons)]
    row_keys = [r for r in row_keys if r is None or preset.rows != "model" or (ok["model"] == r).any()]
    if ok.empty or not metrics or not row_keys or not col_keys:  # every setting refused: say so, draw nothing
        return (empty_figure(preset.title, "Nothing to draw: every setting was refused (the table's error column "
                                           "says why)."),
                {"rows": [], "panels": [], "x": {"epsilon": "epsilon", "n": "n", "skew": "skew"}[preset.x]})
    titles = []
    for i, r in enumerate(row_keys):
        for c in col_keys:
            if preset.rows == "metric":  # the metric is the row's y-axis title: name the column once
                titles.append(panel_name(preset, r, c) if i == 0 else "")
            else:
                titles.append(panel_name(preset, r, c))
    fig = make_subplots(rows=len(row_keys), cols=len(col_keys), subplot_titles=titles,
                        horizontal_spacing=0.06, vertical_spacing=0.12)
    colours = {m: qualitative.Plotly[i % 10] for i, m in enumerate(preset.mechanisms)}
    xcol = {"epsilon": "epsilon", "n": "n", "skew": "skew"}[preset.x]
    points: list[dict] = []  # every point drawn of a private mechanism: the note's rows
    for i, r in enumerate(row_keys, start=1):
        metric = r if preset.rows == "metric" else metrics[0]
        for j, c in enumerate(col_keys, start=1):
            xs: list[float] = []
            line = None  # the certified table's guessing line: the published runs' too (the same splits)
            for frame, style in sources:
                drawn, line = _draw_panel(preset, fig, frame, style, r, c, i, j, metric, xcol, colours, points, line)
                xs += drawn
            fig.update_yaxes(title_text=_row_label("metric", metric) if j == 1 else None,
                             type="log" if metric == "gap" else None,
                             dtick=1 if metric == "gap" else None, row=i, col=j)  # log: decades only
            log_x = preset.x == "n" or preset.log_x
            span = _fitted_range(xs, log_x)
            fig.update_xaxes(title_text={"epsilon": "ε", "n": "n (training rows)",
                                         "skew": "skew u = n_max / n_min"}[preset.x],
                             type="log" if log_x else None, range=span, row=i, col=j,
                             # over a decade or more, a label at each decade only (Plotly's own put
                             # "2" and "5" between them, read as values of n)
                             dtick=1 if log_x and span is not None and span[1] - span[0] >= 1 else None)
    panels = list(dict.fromkeys(panel_name(preset, r, c) for r in row_keys for c in col_keys))
    note = {"rows": points, "panels": panels, "x": xcol}
    _finish(preset, fig, note, row_keys, col_keys)
    if calibration:
        fig.layout.title.text = fig.layout.title.text.replace("<br>", f" ({calibration} calibration)<br>", 1)
    return fig, note


def panel_name(preset, r, c) -> str:
    """A panel's title as its note names it: its data ("KDD Cup 1999", not the id; the sample
    size is in the datasets view) or its ε, and its model (LR, MLP); a metric row's panels
    (accuracy, gap: the same runs) share their column's name."""
    cname = DATASETS[c].name.split(" (")[0] if preset.cols == "dataset" else f"ε = {c:g}"
    return cname if r is None or preset.rows == "metric" else f"{cname} ({_row_label(preset.rows, r)})"


def _draw_panel(preset, fig, frame, style: str, r, c, i: int, j: int, metric: str, xcol: str, colours,
                points: list[dict], line: pd.Series | None = None) -> tuple[list[float], pd.Series]:
    """One panel's lines from one table: the certified run (``style`` "") or the published.
    Adds to ``points`` the note's row of every point of a private mechanism (with its mean and what
    guessing scores at its x: the table's own, else ``line``); returns the x values of the points
    drawn (the axis fits them) and the guessing line by x."""
    drawn: list[float] = []
    sub = frame
    if preset.rows == "model":
        sub = sub[sub["model"] == r]
    if preset.cols == "dataset":
        sub = sub[sub["dataset"] == c]
    else:  # the non-private runs (ε = 1 nominally) belong in every ε panel
        sub = sub[(sub["epsilon"] == c) | (sub["mechanism"] == "non-private")]
    guess = f"{metric}_guess"
    # what guessing scores at each x (it follows n where the test set changes with it): the line
    # drawn below, and each point's comparison (the view's box: dpcore.figures.result.versus_guessing)
    g = (sub.dropna(subset=[guess]).groupby(xcol)[guess].mean().sort_index()
         if metric in GUESS_LABEL and guess in sub else pd.Series(dtype=float))
    if not len(g) and line is not None and metric in GUESS_LABEL:
        g = line
    for mech in preset.mechanisms:
        s = sub[sub["mechanism"] == mech]
        if s.empty or metric not in s:
            continue
        if metric == "gap" and mech == "non-private":
            continue  # 0 by definition (rounding noise on a log axis)
        flat = mech in preset.reference or (preset.x == "epsilon"
                                          and not REGISTRY[mech].private)
        pts = _best_points(s, xcol, metric, flat=flat,
                           xs=sorted(sub.loc[sub["mechanism"].map(
                               lambda m: REGISTRY[m].private and m not in preset.reference),
                               xcol].dropna().unique()))
        if not pts:
            continue
        name = short_name(mech) + (" (published)" if style else "")
        ref = _panel_reference(sub, metric, preset.base) if mech == "non-private" and flat else None
        if ref is not None:  # the one reference every view draws: the best exact model over the λ grid
            pts = [(x, ref.value, 0.0, t, ce) for x, _, _, t, ce in pts]
            name = ref.label
        xs, ys, sd, tgt, cert = zip(*pts)
        drawn += xs
        # on a log axis a bar below zero means nothing: cap the lower bar at 90 % of the mean
        sd_minus = [min(e, 0.9 * y) for e, y in zip(sd, ys)] if metric == "gap" else sd
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines+markers", name=name, legendgroup=name,
            showlegend=(i == 1 and j == 1) or False,
            line=dict(color=colours[mech],
                      dash="dot" if style else "dash" if not REGISTRY[mech].private else None),
            marker=dict(symbol="diamond" if style else "circle"),
            error_y=dict(type="data", array=sd, arrayminus=sd_minus, visible=True,
                         thickness=1),
            hovertext=[f"{name}, {mech}<br>{xcol}={xv:g}<br>{metric}={yv:.4g}<br>{h}"
                       for xv, yv, h in zip(xs, ys, hover_texts(tgt, cert))],
            hoverinfo="text",
        ), row=i, col=j)
        if REGISTRY[mech].private:
            mark_missed(fig, xs, ys, tgt, cert, row=i, col=j)
            calibration = (s["calibration"].dropna().iloc[0]
                           if "calibration" in s and s["calibration"].notna().any() else None)
            # a flat series is one run drawn at every x: its note names it once
            points += [{"series": name, "mechanism": mech, "calibration": calibration,
                        "panel": panel_name(preset, r, c), xcol: None if flat else xv,
                        "epsilon": t, "epsilon_certified": ce, f"{metric}_mean": yv,
                        guess: float(g.get(xv, g.mean())) if len(g) else None}
                       for xv, yv, t, ce in zip(xs, ys, tgt, cert)]
    if not style and len(g):
        # what always answering the majority class (the mean) scores: a flat line, or one that
        # follows n where the test set changes with it; across the plotted x values only (the
        # non-private run's nominal ε = 1 is no point of an ε axis: it stretched 0.01–0.25 to 0–1)
        plotted = sorted(set(drawn)) or sorted(sub[xcol].dropna().unique())
        inside = g[g.index.isin(plotted)]
        if len(inside) > 1:
            xs, ys = list(inside.index), list(inside.values)
        else:
            xs = plotted
            ys = [float(inside.iloc[0] if len(inside) else g.mean())] * len(xs)
        if len(xs) == 1:
            xs, ys = xs * 2, ys * 2
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=GUESS_LABEL[metric], legendgroup="guess",
                                 showlegend=False, line=dict(color=GUESS_LINE["line_color"], dash="dash",
                                                             width=GUESS_LINE["line_width"]),
                                 hovertext=f"{GUESS_LABEL[metric]}: {sum(ys) / len(ys):.4g}", hoverinfo="text"),
                      row=i, col=j)
    return drawn, g


def _finish(preset, fig, note: dict, row_keys, col_keys) -> None:
    """Legend, the note on missed targets (:func:`figure_note` of ``note``, the points drawn),
    title and size."""
    # the legend needs every mechanism once
    shown = set()
    for tr in fig.data:
        if tr.name not in shown:
            tr.showlegend = True
            shown.add(tr.name)
    note = figure_note(**note)
    extra = 0  # the room the note needs below the usual 140 px
    if note:
        # Plotly never wraps an annotation: line breaks at spaces, for the exported figure (a
        # page writes the note as text, from figure_note, never from these broken lines)
        text = wrap_note(note, 150)
        fig.add_annotation(text=text, name=NOTE, xref="paper", yref="paper", x=0, y=-0.08,
                           yanchor="top", showarrow=False, align="left",
                           font=dict(color="#d62728", size=11))
        bottom = max(140, 70 + 15 * (text.count("<br>") + 1))  # every line of it, below the axis title
        fig.update_layout(margin=dict(b=bottom))
        extra = bottom - 140
    fig.update_layout(title=f"{preset.title}<br><sup>{preset.paper}: {preset.figures}. "
                            f"Points: mean ± sd over repeats; tuned grids show the best value; "
                            f"the non-private gap is 0 by definition.</sup>",
                      height=330 * len(row_keys) + 120 + extra, width=max(700, 330 * len(col_keys)),
                      template="plotly_white")


def _panel_reference(sub, metric: str, base: dict):
    """The non-private reference of a panel's runs (:func:`~dpcore.experiments.baselines.baseline`,
    the same every view draws), where it is cheap (linear models, one data set, one size):
    ``None`` otherwise (the MLP's line, and a sweep over n, stay the panel's own runs at its λ).
    ``base``: the preset's own data options (``d``, ``noise`` of synthetic data; a table's ``d``
    column is the data's width, not the option)."""
    runs = sub.drop_duplicates(["dataset", "model"])
    if len(runs) != 1 or metric not in ("accuracy", "rmse") or runs["model"].iloc[0] not in ("logreg", "linreg"):
        return None
    row = runs.iloc[0]
    if "n" in sub and sub["n"].nunique() > 1:
        return None
    n = None if "n" not in row or pd.isna(row["n"]) else int(row["n"])
    given = {float(v) for v in sub["lam"].dropna()} if "lam" in sub else set()
    own = make_model(str(row["model"])).lam  # a run with no λ ran at its model's own
    default = {own} if "lam" not in sub or sub["lam"].isna().any() else set()
    lams = tuple(sorted(given | default))
    return _reference(str(row["dataset"]), str(row["model"]), n, base.get("d"), base.get("noise"), lams)


# pure: the exact baseline of a registered dataset's settings (every stored solution re-checked)
@functools.lru_cache(maxsize=64)
def _reference(dataset: str, model: str, n, d, noise, lams: tuple):
    spec = RunSpec(dataset=dataset, model=model, n=None if n is None else int(n), d=None if d is None else int(d),
                   noise=noise)
    return baseline(spec, lams=lams, ctx=shared_context())


def _with_guess(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``accuracy_guess`` filled in for bundled classification data where a table
    written before the column existed lacks it (the guess depends only on the split, so it is
    the dataset's own :attr:`~dpcore.datasets.Dataset.guessing`); synthetic data, whose split
    changes with n, are left as they are."""
    if "accuracy_guess" in df.columns or "dataset" not in df.columns or df.empty:
        return df
    guesses = {}
    for ds in df["dataset"].dropna().unique():
        spec = DATASETS.get(ds)
        if spec is not None and not spec.synthetic and spec.task == "classification":
            guesses[ds] = load(ds).guessing
    if not guesses:
        return df
    return df.assign(accuracy_guess=df["dataset"].map(guesses))


def _row_label(kind: str, key) -> str:
    if kind == "model":
        return {"logreg": "LR", "mlp": "MLP", "linreg": "linear regression"}.get(key, key)
    return {"accuracy": "accuracy", "gap": "optimality gap", "rmse": "RMSE"}.get(key, key)


def _best_points(s, xcol: str, metric: str, *, flat: bool, xs):
    """(x, mean, sd, ε target, ε certified) per x, taking the learning rate with the best mean
    metric (the smallest of equal rates, up to rounding; ε certified: the largest among that
    point's runs; ∞ stays ∞).

    One grouped aggregation over (x, learning rate), then a walk over its few rows: a
    figure has hundreds of points, and a pandas call per point made opening one take seconds.
    """
    better_high = metric == "accuracy"
    frame = pd.DataFrame({
        "x": 0.0 if flat else s[xcol], "lr": s["learning_rate"], "m": s[metric].astype(float),
        "target": s["epsilon_target"].astype(float).fillna(math.inf),
        "cert": s["epsilon_certified"].astype(float).fillna(math.inf)})
    stats = frame.groupby(["x", "lr"], sort=True).agg(
        mean=("m", "mean"), sd=("m", "std"), size=("m", "size"), target=("target", "max"), cert=("cert", "max"))
    best: dict[float, tuple] = {}
    for (xv, _), mean, sd, size, target, cert in zip(stats.index, stats["mean"], stats["sd"], stats["size"],
                                                      stats["target"], stats["cert"]):
        old = best.get(xv)
        # better by more than rounding: equal means (summation order moves the last bits) keep the first
        margin = (mean - old[0] if better_high else old[0] - mean) if old is not None else math.inf
        if margin > 1e-12 * max(1.0, abs(mean)):
            best[xv] = (float(mean), float(sd) if size > 1 else 0.0, float(target), float(cert))
    if flat:
        return [(x, *best[0.0]) for x in xs] if best else []
    return [(xv, *point) for xv, point in best.items()]


def _fitted_range(xs, log: bool) -> list[float] | None:
    """An x range that fits the plotted ``xs`` with a margin of 6 % of their span either side
    (a ring at the last point stays whole); in decades on a log axis.  ``None`` (Plotly's own)
    without two distinct positive values."""
    values = sorted({float(v) for v in xs if v is not None and math.isfinite(float(v)) and (float(v) > 0 or not log)})
    if len(values) < 2:
        return None
    lo, hi = (math.log10(values[0]), math.log10(values[-1])) if log else (values[0], values[-1])
    pad = 0.06 * (hi - lo)
    return [lo - pad, hi + pad]


def wrap_note(text: str, width: int) -> str:
    """``text`` in lines of at most ``width`` characters joined by ``<br>`` (Plotly never wraps an annotation)."""
    return "<br>".join(textwrap.wrap(text, width, break_on_hyphens=False))
