"""The one non-private reference every view draws beside private results.

A private model is compared with the *best* non-private model of the same kind that the
private runs could have been: the exact (noise-free) minimiser of the same regularised
loss, at the best of the λ's the comparison lets a private run use — the tuning's λ grid
(:data:`LAMBDA_GRID`, what :func:`dpcore.experiments.tune.tune` searches for output and
objective perturbation) and every λ a run on screen uses.  Its test accuracy (RMSE for a
regression) is the one "non-private" figure, and :meth:`Baseline.definition` says in one
sentence what it is and at which λ, so a view can put the definition beside the line.

Why the best, and not each run's own λ: a lecturer compares a private model with the
best a model of that kind does without privacy.  At its own λ the reference moves when
only the mechanism changes (tuned mechanisms run at different λ's), and a private run
that was tuned at a smaller λ than the one drawn lands above the line.  The best over
the λ's in use is never below any run's own non-private model, so a private point is
above it only by the noise of its own estimate (a gradient method stopped early is
itself a regulariser, and the test split is finite): the band drawn around the point.

The MLP's exact reference is a multi-start solve of minutes: for it only the λ's the
runs use are searched (their references are shipped or kept by the context's store).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..figures.result import row_lam
from ..models import make_model
from ..figures.result import reference_terms
from .context import Context, default_context
from .run import RunSpec, run

__all__ = ["Baseline", "LAMBDA_GRID", "baseline", "lambdas_searched", "row_lambdas"]

#: The λ grid the tuning searches for output and objective perturbation (and the gradient
#: methods' λ = 1e-4): the λ's a private run of a linear model may be shown at.
LAMBDA_GRID = (1e-4, 1e-3, 3e-3, 1e-2, 3e-2)

#: models whose exact reference is cheap enough (well under a second on the bundled data)
#: to search the whole grid
_CHEAP_MODELS = ("logreg", "linreg")


@dataclass(frozen=True)
class Baseline:
    """The reference numbers of one configuration's data and model."""

    metric: str  # "accuracy" (higher is better) or "rmse" (lower is better)
    value: float  # the best non-private test metric over ``searched``
    lam: float  # the λ at which it is reached
    searched: tuple[float, ...]  # the λ's compared
    guess: float  # always answering the majority class (accuracy) or the mean label (RMSE)
    guess_class: str | None
    model: str

    @property
    def label(self) -> str:
        """The reference line's short label: "best λ" when a grid was searched, so that a line at
        λ = 0.0001 beside a view's λ of 0.001 says why (the caption, :meth:`definition`, says over which)."""
        return f"non-private (best λ = {self.lam:g})" if len(self.searched) > 1 else f"non-private (λ = {self.lam:g})"

    def definition(self) -> str:
        """One sentence saying what the reference is (for the caption beside the line)."""
        which = "highest test accuracy" if self.metric == "accuracy" else "lowest test RMSE"
        over = ("λ = " + f"{self.searched[0]:g}" if len(self.searched) == 1
                else "λ ∈ {" + ", ".join(f"{v:g}" for v in self.searched) + "}")
        guess = (f"always answering “{self.guess_class}”" if self.guess_class else
                 "always answering the majority class" if self.metric == "accuracy" else
                 "always answering the mean label")
        ceiling = (" (λ chosen on the test split itself: a ceiling, which no private run reaches without spending "
                   "ε on the choice)" if len(self.searched) > 1 else "")
        return (f"Non-private: {reference_terms(self.model).minimiser}, at the "
                f"{which} over {over}: {self.value:.4f} at λ = {self.lam:g}{ceiling}. Guessing ({guess}): "
                f"{self.guess:.4f}.")

    def is_above(self, value: float, band: float = 0.0) -> bool:
        """Whether a private result beats this reference by more than its band (it should not)."""
        if self.metric == "accuracy":
            return value - band > self.value + 1e-12
        return value + band < self.value - 1e-12

    def to_dict(self) -> dict:
        return {"metric": self.metric, "value": self.value, "lam": self.lam, "searched": list(self.searched),
                "guess": self.guess, "guess_class": self.guess_class, "model": self.model,
                "definition": self.definition()}


def lambdas_searched(model: str, lams=()) -> tuple[float, ...]:
    """The λ's a baseline compares: the grid (cheap models) and every λ given, sorted (λ = 0 only
    where the exact solver allows it: the ball-constrained least squares of ``linreg``)."""
    lowest = 0.0 if model == "linreg" else math.ulp(0.0)
    given = {float(v) for v in lams if v is not None and math.isfinite(float(v)) and float(v) >= lowest}
    grid = set(LAMBDA_GRID) if model in _CHEAP_MODELS else set()
    return tuple(sorted(grid | given)) or (LAMBDA_GRID[1],)


def row_lambdas(rows, default: float | None) -> tuple[float, ...]:
    """The λ's a table of results ran at: a row's own (``lam`` or its ``overrides`` text, as
    :mod:`dpcore.experiments.studies` writes them, e.g. ``"T=800, lam=0.0001"``), else ``default``."""
    found = {row_lam(r, default) for r in rows}
    return tuple(sorted(lam for lam in found if lam is not None))


def lambdas_for(spec: RunSpec, lams=()) -> tuple[float, ...]:
    """The λ's :func:`baseline` compares for ``spec``: :func:`lambdas_searched` of ``lams`` and
    ``spec.lam`` (``None``: the model's default λ)."""
    own = make_model(spec.model).lam if spec.lam is None else spec.lam
    return lambdas_searched(spec.model, (*lams, own))


def baseline(spec: RunSpec, *, lams=(), ctx: Context | None = None, dataset=None) -> Baseline:
    """The non-private reference for ``spec``'s data and model: the best exact solution over λ.

    Parameters
    ----------
    spec : RunSpec
        Its dataset, model, ``n``, ``d`` and ``noise`` (the mechanism and its settings do not enter).
    lams : sequence of float
        λ's to search besides ``spec.lam`` and the default grid (:func:`lambdas_searched`).
    ctx : Context, optional
        Where the exact solutions are kept (default:
        :func:`~dpcore.experiments.context.default_context`).
    dataset : Dataset, optional
        A user's own :class:`~dpcore.datasets.Dataset` in place of the registered one.

    Returns
    -------
    Baseline
        The best test accuracy (or lowest RMSE), its λ, the λ's searched, and what guessing the
        majority class (the mean) scores.

    Raises
    ------
    ParameterError
        A λ out of its range.

    Examples
    --------
    >>> from dpcore import RunSpec, baseline
    >>> ref = baseline(RunSpec("iris"), lams=(1e-3,))
    >>> ref.metric, round(ref.value, 3), round(ref.guess, 3), ref.guess_class
    ('accuracy', 0.933, 0.667, 'setosa or versicolor')
    """
    ctx = ctx or default_context()
    searched = lambdas_for(spec, lams)
    base = RunSpec(dataset=spec.dataset, model=spec.model, mechanism="non-private", repeats=1, seed=0,
                   n=spec.n, d=spec.d, noise=spec.noise)
    quiet = ctx.with_(progress=None, on_trace=None)
    found = [(lam, run(replace(base, lam=lam), ctx=quiet, dataset=dataset)) for lam in searched]
    first = found[0][1]
    if first.task == "classification":
        lam, best = max(found, key=lambda f: (f[1].accuracy_nonprivate, -f[0]))
        return Baseline("accuracy", float(best.accuracy_nonprivate), lam, searched, float(first.accuracy_guess),
                        first.guess_class, spec.model)
    lam, best = min(found, key=lambda f: (f[1].rmse_nonprivate, f[0]))
    return Baseline("rmse", float(best.rmse_nonprivate), lam, searched, float(first.rmse_guess), None, spec.model)
