"""Theory tables: every published noise bound and excess-risk bound, evaluated (SPEC §4).

Students meet these results as rows of big-O expressions.  Here each row keeps
the LaTeX exactly as the seed paper prints it, and a Python function of named
parameters that evaluates it.  Big-O constants are set to 1 and the row is
marked ``"order only"``; where the paper gives real constants (Fukuchi et al.'s
Lemma 2 and Cor. 1, Chaudhuri et al.'s noise rate γ) the function uses them and
the row is marked ``"exact"``.

Conventions (also in :data:`GLOBAL_NOTES`):

* ``log`` and ``ln`` are read as the natural logarithm;
* a row's noise value is the quantity its table prints (``noise_quantity``):
  mostly the variance σ² of Gaussian noise (tables' footnotes), but the rate γ
  of Chaudhuri's density, the scale of Song's exponential noise, or σ_u —
  compare noise values only within one quantity;
* the papers' names map onto ours: ``L`` (smoothness) → β, ``Δ`` (strong
  convexity) → λ, ``ζ`` → G, ``η`` (radius) → D, seed 002's ``m`` (number of
  parameters) → p, seed 003's ``d`` (parameter dimension) → p and its ``λ``
  (smoothness) → β.

Parameters are inferred from a dataset, a model and the user's settings by
:func:`infer_parameters`, each with where it came from; :func:`evaluate`,
:func:`scaling` and :func:`compare_measured` work on them and
:func:`bounds_report` gathers everything as one JSON-able document.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Collection, Iterable, Mapping, Sequence

import numpy as np

from .. import datasets as _datasets
from ..erm import solve_erm
from ..exceptions import ModelError, ParameterError
from ..jsonutil import to_jsonable
from ..models import make_model
from ..params import PARAMS, validate
from ..partition import client_sizes as _sizes
from .rows import (  # the table itself; this module evaluates it
    CATALOG,
    CITATIONS,
    EMPTY,
    EXACTNESS,
    GLOBAL_NOTES,
    PAPERS,
    PERTURBATIONS,
    BoundRow,
    Undefined,
    Values,
    get_row,
)

__all__ = [
    "BoundRow",
    "CATALOG",
    "EMPTY",
    "EXACTNESS",
    "GLOBAL_NOTES",
    "PAPERS",
    "CITATIONS",
    "PARAMETERS",
    "PERTURBATIONS",
    "ParamValue",
    "bounds_report",
    "client_sizes",
    "scaling_plan",
    "predictions",
    "evaluate",
    "get_row",
    "infer_parameters",
    "loglog_slope",
    "scaling",
    "scaling_report",
]


@dataclass(frozen=True)
class ParamValue:
    """One named parameter: its value and where it came from.

    ``source`` is ``"dataset"``, ``"model"``, ``"user"``, ``"default"``,
    ``"derived"`` (computed from other parameters, recomputed when they change)
    or ``"override"``.  ``value`` is ``None`` where the quantity is undefined
    (e.g. β of the MLP).
    """

    name: str
    value: float | int | None
    source: str
    symbol: str
    description: str


# name: (LaTeX symbol, description, kind) — kind "int" or "float"
PARAMETERS: dict[str, tuple[str, str, str]] = {
    "n": (r"n", "training records", "int"),
    "d": (r"d", "features per record (bias included)", "int"),
    "p": (r"p", "model parameters (seed 002: m, seed 003: d)", "int"),
    "G": (r"G", "Lipschitz constant of the per-record loss (papers: G, ζ)", "float"),
    "beta": (r"\beta", "smoothness of the per-record loss (papers: L; seed 003: λ)", "float"),
    "lam": (r"\lambda", "strong convexity from (λ/2)‖θ‖² (papers: Δ)", "float"),
    "D": (r"D", "bound on ‖θ‖ (papers: D, η)", "float"),
    "w_hat": (r"\|\hat{\theta}\|", "norm of the non-private minimiser (Kifer's θ̂, Fukuchi's ŵ)", "float"),
    "T": (r"T", "iterations", "int"),
    "epsilon": (r"\epsilon", "privacy budget ε", "float"),
    "delta": (r"\delta", "privacy parameter δ", "float"),
    "alpha": (r"\alpha", "learning rate (seed 001 Thm 2)", "float"),
    "q": (r"q", "sampling rate of mini-batch SGD", "float"),
    "m": (r"m", "parties (seed 004)", "int"),
    "u": (r"u", "client-size skew n_max/n_min (seed 004)", "float"),
    "n_min": (r"n_{(1)}", "records of the smallest party (seed 004)", "int"),
    "m_svrg": (r"m", "DP-SVRG inner-loop length (seed 001 row 6)", "int"),
    "fk_alpha": (r"\alpha", "Fukuchi's privacy-scaling factor α ∈ (0, 1] (seed 003 §3.5)", "float"),
    "fk_Delta": (r"\Delta", "Fukuchi's regulariser Δ (> 2λ/ε)", "float"),
    "fk_gamma": (r"\gamma", "Fukuchi's failure probability γ of Lemma 1 / Cor. 2", "float"),
    "fk_beta": (r"\beta", "Fukuchi's failure probability β of Lemma 2 (not the smoothness)", "float"),
}

_OWNER = "bounds"
_DEFAULT_BATCH = 256  # gradient-dpsgd's default batch size (q = 256/n)


def client_sizes(n: int, clients: int, skew: float = 1.0) -> list[int]:
    """Party sizes: the distributed mechanisms' two-group split (one source of truth).

    References: seed 004 §Experiments (two groups, level of non-average u); SPEC §3.7.
    """
    m = validate("clients", clients, "client_sizes")
    u = validate("skew", skew, "client_sizes")
    return _sizes(int(n), m, u)


def _static_defaults(model, lam_value: float) -> dict[str, tuple[Any, str, str]]:
    """D from the model: its radius, or for logreg the bound √(2 ln 2/λ) on ‖θ*‖."""
    out: dict[str, tuple[Any, str, str]] = {}
    if model.radius is not None:
        out["D"] = (float(model.radius), "model", "radius of the model's parameter ball")
    elif model.id == "logreg" and lam_value > 0:
        out["D"] = (math.sqrt(2.0 * math.log(2.0) / lam_value), "derived",
                    "√(2 ln 2/λ): L(θ*) ≤ L(0) = ln 2 bounds ‖θ*‖; it does not bound noisy iterates")
    else:
        out["D"] = (None, "model", "undefined: no parameter-domain bound for this model")
    return out


def _derive(vals: dict[str, Any], fixed: set[str]) -> dict[str, tuple[Any, str]]:
    """Derived parameters (value, description) at the current n, ε, δ; skips ``fixed`` names."""
    out: dict[str, tuple[Any, str]] = {}
    n = vals["n"]
    if "w_hat" not in fixed:
        out["w_hat"] = (vals.get("D"), "taken as D (an upper bound on ‖θ̂‖); override or use exact_norm")
    if "q" not in fixed:
        out["q"] = (min(1.0, _DEFAULT_BATCH / n), f"min(1, {_DEFAULT_BATCH}/n): DP-SGD's default batch")
    if "n_min" not in fixed:
        sizes = client_sizes(int(round(n)), vals["m"], vals["u"])
        out["n_min"] = (min(sizes), f"smallest of the client sizes {_short(sizes)} (two groups, skew u)")
    beta, lam = vals.get("beta"), vals.get("lam")
    if "m_svrg" not in fixed:
        ok = beta is not None and lam is not None and lam > 0 and math.isfinite(beta)
        out["m_svrg"] = ((max(1, math.ceil(beta / lam)) if ok else None),
                         "⌈β/λ⌉ (SVRG's usual m = Θ(L/μ); seed 001 leaves it undefined)")
    if "fk_gamma" not in fixed:
        out["fk_gamma"] = (vals["delta"] / 2.0, "δ/2 (Fukuchi's Thm 1)")
    gamma = out.get("fk_gamma", (vals.get("fk_gamma"),))[0]
    if "fk_beta" not in fixed:
        out["fk_beta"] = (gamma, "= γ (Fukuchi's proof of Thm 2 sets β = γ)")
    if "fk_Delta" not in fixed:
        w = out.get("w_hat", (vals.get("w_hat"),))[0]
        if w:
            val = math.sqrt(vals["G"] ** 2 * vals["p"] * math.log(1.0 / vals["delta"])) / (vals["epsilon"] * w)
        else:
            val = None
        out["fk_Delta"] = (val, "√(ζ² d log(1/δ))/(ε‖ŵ‖): Fukuchi's Thm 2 choice with Θ-constant 1")
    return out


def _short(sizes: list[int]) -> str:
    uniq = sorted(set(sizes))
    return "{" + ", ".join(f"{s}×{sizes.count(s)}" for s in uniq) + "}"


def _check_override(name: str, value: Any) -> Any:
    if name not in PARAMETERS:
        raise ParameterError(
            f"cannot override unknown parameter {name!r}; choose one of: {', '.join(PARAMETERS)}"
        )
    kind = PARAMETERS[name][2]
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value))
    if ok and kind == "int":
        ok = float(value).is_integer() and value >= 1
    if ok:
        ok = value > 0
    ranges = {"delta": (None, 1.0, "a float in (0, 1)"), "fk_gamma": (None, 1.0, "a float in (0, 1)"),
              "fk_beta": (None, 1.0, "a float in (0, 1)"), "q": (None, 1.0 + 1e-12, "a float in (0, 1]"),
              "fk_alpha": (None, 1.0 + 1e-12, "a float in (0, 1]"), "u": (1.0, None, "a float ≥ 1"),
              "n": (2, None, "an integer ≥ 2")}
    low, high, what = ranges.get(name, (None, None, "a positive integer" if kind == "int"
                                         else "a finite number > 0"))
    if ok and high is not None:
        ok = value < high
    if ok and low is not None:
        ok = value >= low
    if not ok:
        raise ParameterError(
            f"The override {name!r} of bounds must be {what}. Got {value!r} instead."
        )
    return int(value) if kind == "int" else float(value)


def _dataset_shape(dataset_id: str) -> tuple[int, int, str]:
    spec = _datasets.get_spec(dataset_id)
    if spec.n_train is not None and spec.d is not None:
        return int(spec.n_train), int(spec.d), spec.task
    ds = _datasets.load(dataset_id)
    return ds.n, ds.d, ds.task


def infer_parameters(
    dataset_id: str,
    model_id: str,
    epsilon: float,
    delta: float,
    iterations: int,
    clients: int | None = None,
    skew: float | None = None,
    lam: float | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    learning_rate: float | None = None,
    exact_norm: bool = False,
) -> dict[str, ParamValue]:
    """Every parameter the bounds use, each with its value and where it came from.

    n and d come from the dataset's documented shape (default split, bias
    on); p, G, β, λ, D from the model; ε, δ, T, m, u, λ, α from the user or
    defaults; q, n_(1), m_svrg, ‖θ̂‖ and Fukuchi's γ, β, Δ are derived.
    ``overrides`` replaces any of them (source ``"override"``); derived values
    are recomputed from the overridden ones.  ``exact_norm=True`` solves the
    non-private ERM once to set ‖θ̂‖ (slower on large datasets).

    Raises a :class:`~dpcore.exceptions.DPCoreError` subclass on bad input.

    References: SPEC §1 (constants), §3.7 (client sizes), §4.
    """
    epsilon = validate("epsilon", epsilon, _OWNER)
    delta = validate("delta", delta, _OWNER)
    iterations = validate("iterations", iterations, _OWNER)
    if clients is not None:
        clients = validate("clients", clients, _OWNER)
    if skew is not None:
        skew = validate("skew", skew, _OWNER)
    if lam is not None:
        lam = validate("lam", lam, _OWNER)
    if learning_rate is not None:
        learning_rate = validate("learning_rate", learning_rate, _OWNER)
    overrides = dict(overrides or {})
    checked = {k: _check_override(k, v) for k, v in overrides.items()}
    n, d, task = _dataset_shape(dataset_id)
    return _infer(dataset_id, n, d, task, model_id, epsilon, delta, iterations, clients, skew, lam,
                  learning_rate, checked, exact_norm)


def _infer(dataset_id, n, d, task, model_id, epsilon, delta, iterations, clients, skew, lam,
           learning_rate, overrides, exact_norm, n_source="dataset") -> dict[str, ParamValue]:
    model = make_model(model_id, lam=lam)
    if model.task != task:
        raise ModelError(
            f"model {model.id!r} is for {model.task} but dataset {dataset_id!r} is a {task} task; "
            f"pick a {task} model" + (" (linreg)" if task == "regression" else " (logreg or mlp)")
        )
    rec: dict[str, tuple[Any, str, str]] = {}
    rec["n"] = (n, n_source, "training rows of the dataset (default split)")
    rec["d"] = (d, "dataset", "features incl. the bias")
    G = model.lipschitz
    if math.isfinite(G):
        rec["G"] = (G, "model", f"Lipschitz bound of the {model.id} loss on ‖x‖ ≤ 1")
    else:
        rec["G"] = (1.0, "default", "no Lipschitz bound: the clipping norm C = 1 plays G")
    beta = model.smoothness
    rec["beta"] = ((beta, "model", f"smoothness of the {model.id} loss on ‖x‖ ≤ 1") if math.isfinite(beta)
                   else (None, "model", "undefined: no smoothness bound for this model"))
    lam_value = float(model.strong_convexity)
    rec["lam"] = (lam_value, "user" if lam is not None else "model",
                  "L2 regularisation λ (0 for a non-convex model)")
    rec["T"] = (iterations, "user", "iterations")
    rec["epsilon"] = (epsilon, "user", "privacy budget")
    rec["delta"] = (delta, "user", "privacy parameter")
    rec["alpha"] = ((learning_rate, "user", "learning rate") if learning_rate is not None
                    else (PARAMS["learning_rate"].default, "default", "learning rate (RunSpec default)"))
    rec["m"] = ((clients, "user", "parties") if clients is not None
                else (PARAMS["clients"].default, "default", "parties (default)"))
    rec["u"] = ((skew, "user", "client-size skew") if skew is not None
                else (PARAMS["skew"].default, "default", "client-size skew (default: even)"))
    rec["fk_alpha"] = (1.0, "default", "Fukuchi's privacy-scaling factor (1: no scaling)")
    # overrides of base values first, so that everything derived follows them
    for k, v in overrides.items():
        if k in rec:
            rec[k] = (v, "override", rec[k][2])
    rec["p"] = (model.n_params(int(rec["d"][0])), "model", f"parameters of {model.id} with d features")
    rec.update(_static_defaults(model, rec["lam"][0]))
    if exact_norm:
        erm_model = make_model(model_id, lam=rec["lam"][0]) if "lam" in overrides else model
        rec["w_hat"] = (_exact_norm(dataset_id, erm_model), "dataset", "‖θ*‖ of the exact non-private ERM")
    for k, v in overrides.items():
        if k in ("p", "D", "w_hat"):
            rec[k] = (v, "override", PARAMETERS[k][1])
    vals = {k: v[0] for k, v in rec.items()}
    vals.update(overrides)
    for k, (value, desc) in _derive(vals, set(rec) | set(overrides)).items():
        rec[k] = (value, "derived", desc)
    for k, v in overrides.items():
        if rec.get(k, (None, ""))[1] != "override":
            rec[k] = (v, "override", PARAMETERS[k][1])
    return {k: ParamValue(k, rec[k][0], rec[k][1], PARAMETERS[k][0], rec[k][2])
            for k in PARAMETERS if k in rec}


def _exact_norm(dataset_id: str, model) -> float:
    ds = _datasets.load(dataset_id)
    sol = solve_erm(model, ds.X_train, ds.y_train)
    return float(np.linalg.norm(sol.theta))


def _values(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v.value if isinstance(v, ParamValue) else v) for k, v in params.items()}


def _at(params: Mapping[str, Any], over: str, x: float) -> dict[str, Any]:
    """Plain values with ``over`` set to ``x`` and the derived parameters recomputed."""
    vals = _values(params)
    vals[over] = x
    derived = {k for k, v in params.items() if isinstance(v, ParamValue) and v.source == "derived"}
    if derived:
        fixed = set(vals) - derived
        for k, (value, _) in _derive(vals, fixed).items():
            vals[k] = value
    return vals


# --------------------------------------------------------------------------
# evaluation


def _call(fn, vals: Values) -> tuple[float | None, str | None]:
    if fn is None:
        return None, None
    try:
        out = float(fn(vals))
    except Undefined as exc:
        name = exc.args[0]
        what = PARAMETERS[name][1] if name in PARAMETERS else name
        return None, f"needs {name} ({what}), undefined here: give it with overrides={{'{name}': …}}"
    except ZeroDivisionError:
        return None, "division by zero: the bound is infinite here (λ = 0 or n = 1?)"
    except OverflowError:
        return None, "overflow: the bound is astronomically large here"
    except ValueError as exc:
        return None, f"outside the formula's domain ({exc})"
    if not math.isfinite(out):
        return None, "the bound is not finite here"
    return out, None


def evaluate(params: Mapping[str, Any], rows: Iterable[BoundRow] = CATALOG) -> list[dict[str, Any]]:
    """Each row's noise, excess-risk and (where stated) privacy value at ``params``.

    ``params`` maps names of :data:`PARAMETERS` to :class:`ParamValue` or plain
    numbers.  A value is ``None`` where the paper gives nothing or the formula
    does not apply; ``issues`` then says why.

    References: SPEC §4.
    """
    vals = Values(_values(params))
    out = []
    for row in rows:
        rec: dict[str, Any] = {"id": row.id}
        issues = []
        for part, fn in (("noise", row.noise_fn), ("risk", row.risk_fn), ("privacy", row.privacy_fn)):
            value, issue = _call(fn, vals)
            rec[part] = value
            if issue:
                issues.append(f"{part}: {issue}")
        rec["issues"] = issues
        out.append(rec)
    return out


def loglog_slope(x: Sequence[float], y: Sequence[float | None]) -> float | None:
    """Least-squares slope of log y against log x; ``None`` unless ≥ 2 points are positive and finite.

    References: SPEC §4 ("log-log slope vs n and vs ε").
    """
    pts = [(a, b) for a, b in zip(x, y) if b is not None and math.isfinite(b) and b > 0 and a > 0]
    if len(pts) < 2 or len({a for a, _ in pts}) < 2:
        return None
    lx = np.log([a for a, _ in pts])
    ly = np.log([b for _, b in pts])
    return float(np.polyfit(lx, ly, 1)[0])


def _grid(params: Mapping[str, Any], over: str, grid: Sequence[float] | None) -> list[float]:
    if over not in ("n", "epsilon"):
        raise ParameterError(f"scaling is over 'n' or 'epsilon', got {over!r}")
    if grid is None:
        x0 = _values(params)[over]
        grid = [x0 * 2.0**k for k in range(-3, 4)]
    grid = list(grid)
    if len(grid) < 2 or not all(isinstance(g, numbers.Real) and math.isfinite(g) and g > 0 for g in grid):
        raise ParameterError(f"a scaling grid needs at least 2 finite values > 0; got {grid!r}")
    if over == "n":
        if any(g < 2 for g in grid):
            raise ParameterError(f"every n in the grid must be ≥ 2; got {grid!r}")
        grid = [int(g) if float(g).is_integer() else float(g) for g in grid]
    return grid


def scaling(rows: Iterable[BoundRow], params: Mapping[str, Any], over: str = "n",
            grid: Sequence[float] | None = None) -> dict[str, Any]:
    """Values over a grid of n or ε and their numerical log-log slopes.

    Derived parameters (n_(1), q, Fukuchi's γ, β, Δ, …) are recomputed at each
    grid point; overridden ones stay fixed.  The default grid is the current
    value times 2^k, k = −3…3.

    References: SPEC §4 ("how each scales").
    """
    rows = list(rows)
    grid = _grid(params, over, grid)
    series: dict[str, dict[str, list]] = {r.id: {"noise": [], "risk": [], "privacy": [], "issues": []}
                                          for r in rows}
    for x in grid:
        for rec in evaluate(_at(params, over, x), rows):
            s = series[rec["id"]]
            for part in ("noise", "risk", "privacy"):
                s[part].append(rec[part])
            for issue in rec["issues"]:
                if issue not in s["issues"]:
                    s["issues"].append(issue)
    out_rows = []
    for r in rows:
        s = series[r.id]
        out_rows.append({
            "id": r.id,
            "noise": s["noise"], "risk": s["risk"], "privacy": s["privacy"],
            "noise_slope": loglog_slope(grid, s["noise"]),
            "risk_slope": loglog_slope(grid, s["risk"]),
            "privacy_slope": loglog_slope(grid, s["privacy"]),
            "issues": s["issues"],
        })
    return {"over": over, "grid": grid, "rows": out_rows}


def scaling_report(dataset: str, model: str, epsilon: float, delta: float, iterations: int,
                   clients: int | None = None, skew: float | None = None, *, over: str = "n",
                   rows: Iterable[BoundRow] = CATALOG) -> dict[str, Any]:
    """:func:`scaling` of ``rows`` over ``n`` or ``epsilon`` around the setting's inferred
    parameters (the Theory view's curves)."""
    params = infer_parameters(dataset, model, epsilon, delta, iterations, clients, skew)
    return scaling(rows, params, over)


# --------------------------------------------------------------------------
# what the measured-vs-predicted comparison reads (it runs in dpcore.experiments.studies)


def scaling_plan(dataset_id: str, model_id: str, epsilon: float, delta: float, iterations: int, *,
                 over: str = "n", grid: Sequence[float] | None = None, lam: float | None = None,
                 learning_rate: float | None = None, clients: int | None = None,
                 skew: float | None = None) -> dict[str, Any]:
    """Where a scaling check runs and the parameters its predictions are evaluated at.

    Over n the runs use the synthetic dataset of the model's task with the
    chosen dataset's feature count (bundled files cannot be resized); over ε
    they use the chosen dataset.  Default grid: n = 500, 1000, 2000, 4000 or
    ε × (1/4, 1/2, 1, 2).  Returns ``over``, ``grid``, ``run_dataset``,
    ``d_raw`` (raw features of the synthetic data, over n), ``dataset_note`` and
    ``params`` (for :func:`predictions`).
    """
    epsilon = validate("epsilon", epsilon, _OWNER)
    delta = validate("delta", delta, _OWNER)
    iterations = validate("iterations", iterations, _OWNER)
    n0, d0, task = _dataset_shape(dataset_id)
    spec = _datasets.get_spec(dataset_id)
    if over == "n":
        run_dataset = f"synthetic-{task}"
        d_raw = int(d0) - 1 if not spec.synthetic else PARAMS["d"].default
        d_raw = max(1, d_raw)
        dataset_note = (f"n-scaling runs on {run_dataset} with d = {d_raw} raw features (+ bias), the "
                        f"feature count of {dataset_id}; bundled datasets cannot be resized.")
        grid = _grid({"n": n0}, "n", grid if grid is not None else (500, 1000, 2000, 4000))
        params = _infer(run_dataset, grid[0], d_raw + 1, task, model_id, epsilon, delta, iterations,
                        clients, skew, lam, learning_rate, {}, False, n_source="user")
    elif over == "epsilon":
        run_dataset, d_raw = dataset_id, None
        dataset_note = f"ε-scaling runs on {dataset_id} itself."
        grid = _grid({"epsilon": epsilon}, "epsilon",
                     grid if grid is not None else [epsilon * f for f in (0.25, 0.5, 1.0, 2.0)])
        params = _infer(dataset_id, n0, d0, task, model_id, epsilon, delta, iterations, clients, skew,
                        lam, learning_rate, {}, False)
    else:
        raise ParameterError(f"compare_measured scales over 'n' or 'epsilon', got {over!r}")
    return {"over": over, "grid": grid, "run_dataset": run_dataset, "d_raw": d_raw,
            "dataset_note": dataset_note, "params": params}


def predictions(plan: Mapping[str, Any], mechanism: str,
                rows: Iterable[BoundRow] = CATALOG) -> list[dict[str, Any]]:
    """Each catalog row implemented by ``mechanism``: its predicted excess risk at every
    grid point of a :func:`scaling_plan` and the log-log slope of those predictions."""
    over, grid, params = plan["over"], plan["grid"], plan["params"]
    out = []
    for r in rows:
        if r.mechanism != mechanism:
            continue
        risks = [evaluate(_at(params, over, x), [r])[0]["risk"] for x in grid]
        out.append({"id": r.id, "predicted_risk": risks, "predicted_slope": loglog_slope(grid, risks)})
    return out


# --------------------------------------------------------------------------
# the report


def bounds_report(
    dataset: str,
    model: str,
    epsilon: float,
    delta: float,
    iterations: int,
    clients: int | None = None,
    skew: float | None = None,
    lam: float | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    learning_rate: float | None = None,
    exact_norm: bool = False,
    registered: Collection[str] | None = None,
) -> dict[str, Any]:
    """The bounds view as one strict-JSON-able document (``dpcore bounds --json``).

    ``registered``: the mechanism ids the package runs (``dpcore.mechanisms.REGISTRY``), handed in by
    the callers above the mechanisms so that the catalog, below them, never imports them: each row's
    ``mechanism_registered`` then says whether a registered mechanism implements it (``None``: the
    field is left out).

    Rows carry their metadata (LaTeX as published, exactness, notes), values at
    the inferred parameters, and log-log slopes in n and ε over the current
    value ×(1/2, 1, 2); ``parameters`` carries every value with its provenance.

    References: SPEC §4, §7.
    """
    params = infer_parameters(dataset, model, epsilon, delta, iterations, clients, skew, lam,
                              overrides, learning_rate=learning_rate, exact_norm=exact_norm)
    values = {r["id"]: r for r in evaluate(params)}
    slopes: dict[str, dict[str, dict[str, float | None]]] = {r.id: {} for r in CATALOG}
    for over in ("n", "epsilon"):
        x0 = params[over].value
        sc = scaling(CATALOG, params, over, [x0 / 2.0, x0, x0 * 2.0])
        for rec in sc["rows"]:
            slopes[rec["id"]][over] = {"noise": rec["noise_slope"], "risk": rec["risk_slope"],
                                       "privacy": rec["privacy_slope"]}
    rows = []
    for r in CATALOG:
        rec = r.metadata()
        if registered is not None:
            rec["mechanism_registered"] = r.mechanism in registered if r.mechanism else False
        v = values[r.id]
        rec.update(noise=v["noise"], risk=v["risk"], privacy=v["privacy"], issues=v["issues"],
                   slopes=slopes[r.id])
        rows.append(rec)
    counts: dict[str, int] = {}
    for r in CATALOG:
        counts[r.seed] = counts.get(r.seed, 0) + 1
    doc = {
        "dataset": dataset,
        "model": model,
        "settings": {"epsilon": params["epsilon"].value, "delta": params["delta"].value,
                     "iterations": params["T"].value, "clients": params["m"].value,
                     "skew": params["u"].value, "lam": params["lam"].value},
        "parameters": {k: {"value": p.value, "source": p.source, "symbol": p.symbol,
                           "description": p.description} for k, p in params.items()},
        "rows": rows,
        "counts": counts,
        "notes": list(GLOBAL_NOTES),
    }
    return to_jsonable(doc)
