"""Training settings chosen from the released records alone: free post-processing.

Input and local perturbation release every record once (noisy features, protected labels);
the model is trained afterwards, by the server, on what was released.  Anything computed
from the released records alone is post-processing and costs no privacy (Dwork & Roth 2014,
Prop. 2.1), the choice of the training settings included.  So these mechanisms can be tuned
for free, where the central ones pay for every look at the data (``dpcore.experiments.tune``).

:func:`choose_on_release` does it for one release:

1. the released records are split by a seeded permutation of their positions (the split
   never reads a record) into a fitting part and a validation part (:data:`VALIDATION_SHARE`);
2. every setting of the grid (T, η, λ; λ alone for an exact solve) is fitted on the fitting
   part, with the mechanism's own trainer (full-batch GD, mini-batch SGD or the exact ERM);
   settings that differ only in numbers train together as one batch of matrix products;
3. each is scored on the validation part, correcting for what the release is known to add
   (:func:`score`): randomized response is inverted per class, and the feature noise's share
   σ²‖θ‖² is taken out of the released margins (classification: the accuracy of a normal margin
   per class; regression: the squared error), each estimate at the cautious end of a one-sided
   (1 − :data:`CAUTION`) bound, Bonferroni over the settings;
4. a guess competes too: "always answer the released majority class" (classification, on data
   with a bias feature) or "always 0", the middle of the scaled label range (regression): a
   model that the released records cannot show to beat guessing is replaced by the guess;
5. the chosen setting is fitted again on every released record: the released model.

Scored naively, the validation records' own accuracy understates every trained model (their
features carry the noise) and not the guess (which reads no feature): the guess would win even
where a model is better.  Nothing here reads a raw record: the functions receive a
:class:`ReleasedRecords` and the model, never the dataset (the test suite checks it by
poisoning the raw data once the release is made).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from ..privacy import accounting as acc
from ..privacy import core as privacy
from ..erm import solve_erm
from ..exceptions import ParameterError

__all__ = ["ReleasedRecords", "RELEASED_GRIDS", "VALIDATION_SHARE", "CAUTION", "GUESS", "is_guess", "fit_grid",
           "score", "debiased_errors", "class_moments", "work_steps", "choose_on_release"]

#: the share of the released records the choice validates on (the rest fits the candidates)
VALIDATION_SHARE = 0.2

#: the grids the choice searches, by trainer: T and η for the iterative trainers (T read off one
#: trajectory at each of its values), λ for all
RELEASED_GRIDS: dict[str, dict[str, tuple]] = {
    "gd": {"iterations": (25, 100, 400), "learning_rate": (0.1, 1.0), "lam": (1e-3, 1e-1)},
    "sgd": {"iterations": (100, 400, 1600), "learning_rate": (0.1, 1.0), "lam": (1e-3, 1e-1)},
    "erm": {"lam": (1e-4, 1e-3, 1e-2, 1e-1, 1.0)},
}

#: the scores' error rate: each setting's estimate is the cautious end of a one-sided
#: (1 − CAUTION) bound, Bonferroni over the settings (:func:`score`)
CAUTION = 0.05

#: the settings that guess, whatever the features say, by task
GUESS = {"classification": "guess (always the released majority class)",
         "regression": "guess (always 0, the middle of the scaled label range)"}


def is_guess(setting) -> bool:
    """Whether a chosen setting is one of the guesses."""
    return isinstance(setting, str) and setting in GUESS.values()


@dataclass(frozen=True)
class ReleasedRecords:
    """What the server received, and only that: the released features and labels, with the
    public facts of the release (its feature noise σ and how the labels were released)."""

    X: np.ndarray  # (n, d) released features
    y: np.ndarray  # (n,) released labels
    sigma: float  # the feature noise's standard deviation (public: part of the mechanism)
    label: privacy.Release | None  # how the labels were released (None: raw)
    has_bias: bool = False  # the last feature is the dataset's constant bias (before the noise)


def _tilt(model, X: np.ndarray, y: np.ndarray, label, debias: bool) -> np.ndarray | None:
    """The Natarajan et al. debiasing tilt of the logistic loss for randomized-response labels."""
    if not debias or label is None or label.kind != "randomized-response" or model.id != "logreg":
        return None
    rho = _label_flip(label)
    return rho / (1.0 - 2.0 * rho) * (y @ X) / X.shape[0]


def fit_grid(model, X: np.ndarray, y: np.ndarray, learning_rates, lams, steps, *, tilt=None,
             batch: int | None = None, rng: np.random.Generator | None = None,
             dtype=np.float64) -> dict[int, np.ndarray]:
    """K settings (``learning_rates[k]``, ``lams[k]``) trained together from zero on one data
    set: full-batch GD, or SGD on uniform mini-batches of ``batch`` rows shared by the settings.
    Returns θ (K, d) after each number of steps in ``steps`` (float64): one trajectory gives
    every T.  ``dtype``: the arithmetic's (float32 halves the bytes each step reads)."""
    X, y = np.asarray(X, dtype=dtype), np.asarray(y, dtype=dtype)
    eta = np.asarray(learning_rates, dtype=dtype)[:, None]
    lam = np.asarray(lams, dtype=dtype)[:, None]
    tilt = None if tilt is None else np.asarray(tilt, dtype=dtype)
    theta = np.zeros((eta.shape[0], X.shape[1]), dtype=dtype)
    wanted, out = set(int(s) for s in steps), {}
    n = X.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, max(wanted) + 1):
            if batch is not None and batch < n:
                rows = rng.choice(n, size=batch, replace=False)
                Xb, yb = X[rows], y[rows]
            else:
                Xb, yb = X, y
            coef = model.dphi(Xb @ theta.T, yb[:, None])  # (b, K): the settings share the products
            grad = (coef.T @ Xb) / Xb.shape[0] + lam * theta  # (K, b)(b, d): 1.2× faster than (Xᵀ coef)ᵀ
            if tilt is not None:
                grad -= tilt
            theta = model.project(theta - eta * grad)
            if t in wanted:
                out[t] = theta.astype(np.float64)
    return out


def _label_flip(label) -> float:
    """The probability ρ that a released label was flipped (0: released raw or Gaussian)."""
    if label is None or label.kind != "randomized-response":
        return 0.0
    return acc.rr_flip_probability(label.epsilon)


def class_moments(f: np.ndarray, y: np.ndarray, rho: float) -> tuple[float, np.ndarray, np.ndarray]:
    """(p, E[f | y = +1], E[f | y = −1]) of columns ``f`` (m, K) under the *true* labels, from
    labels ``y`` flipped with probability ρ: the 2 × 2 mixing of randomized response inverted
    (p = P(y = +1), clipped to (0, 1))."""
    m = y.shape[0]
    p = (np.mean(y > 0) - rho) / (1.0 - 2.0 * rho)
    p = min(max(p, 1.0 / m), 1.0 - 1.0 / m)
    a, b = f[y > 0].sum(axis=0) / m, f[y < 0].sum(axis=0) / m  # E[f·1{ỹ = ±1}]
    mix = np.array([[(1 - rho) * p, rho * (1 - p)], [rho * p, (1 - rho) * (1 - p)]])
    plus, minus = np.linalg.solve(mix, np.stack([a, b]))
    return p, plus, minus


def debiased_errors(theta: np.ndarray, X: np.ndarray, y: np.ndarray, sigma: float) -> np.ndarray:
    """Each released record's squared error less the feature noise's expected share, (m, K):
    (ỹ − θᵀx̃)² − σ²‖θ‖², whose mean is unbiased for the error on the noise-free features
    (plus the label noise's variance, the same for every θ)."""
    return (y[:, None] - X @ theta.T) ** 2 - sigma**2 * np.sum(theta**2, axis=1)


def score(task: str, theta: np.ndarray, X: np.ndarray, y: np.ndarray, sigma: float,
          rho: float = 0.0) -> np.ndarray:
    """Each setting's score on released validation records (higher is better), (K,); a
    non-finite θ scores −∞.

    Regression: minus (the squared error − σ²‖θ‖²): the feature noise's expected share removed,
    unbiased for the error on noise-free features up to a constant every setting shares (the
    label noise's variance), taken at the cautious end of its one-sided (1 − :data:`CAUTION`)
    bound, Bonferroni over the settings.

    Classification: a cautious estimate of the accuracy on noise-free records.  The released
    margin is the clean one plus N(0, τ²), τ = σ‖θ‖, so the released records' own accuracy
    understates a model (and not the guess, which reads no feature).  Per true class (randomized
    response inverted, :func:`class_moments`) the clean margin's mean is the released one's, and
    its variance the released one's minus τ²; with a normal margin per class the accuracy is
    p·Φ(μ₊/s) + (1 − p)·Φ(−μ₋/s).  Each estimate is taken at the cautious end of its one-sided
    (1 − :data:`CAUTION`) bound, Bonferroni over the settings scored: the variance high, each
    class's mean towards the wrong side.  Where the records cannot tell, the estimate stays
    below the guess's accuracy, and the guess is kept."""
    m = X.shape[0]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        z = X @ theta.T  # (m, K)
        if task == "classification":
            tau2 = sigma**2 * np.sum(theta**2, axis=1)
            p, plus, minus = class_moments(np.concatenate([z, z**2], axis=1), y, rho)
            k = theta.shape[0]
            mu_p, mu_m = plus[:k], minus[:k]
            var = np.maximum(p * (plus[k:] - mu_p**2) + (1 - p) * (minus[k:] - mu_m**2), 0.0)  # released
            z_bound = ndtri(1.0 - CAUTION / k)  # one-sided, Bonferroni over the k settings
            inflate = 1.0 / (1.0 - 2.0 * rho)  # inverting randomized response widens every estimate
            clean = np.maximum(var - tau2, 0.0) + z_bound * inflate * math.sqrt(2.0 / m) * var
            sd = np.sqrt(np.maximum(clean, 1e-300))
            mu_p = mu_p - z_bound * inflate * np.sqrt(var / (m * p))  # each class's margin taken
            mu_m = mu_m + z_bound * inflate * np.sqrt(var / (m * (1 - p)))  # towards the wrong side
            s = p * ndtr(mu_p / sd) + (1 - p) * ndtr(-mu_m / sd)
        else:  # each record's error with the noise's share removed, taken at its cautious end
            loss = debiased_errors(theta, X, y, sigma)
            z_bound = ndtri(1.0 - CAUTION / theta.shape[0])
            s = -(loss.mean(axis=0) + z_bound * loss.std(axis=0, ddof=1) / math.sqrt(m))
    return np.where(np.all(np.isfinite(theta), axis=1) & np.isfinite(s), s, -np.inf)


def work_steps(trainer: str, n: int, batch: int | None = None) -> float:
    """Passes over n rows that :func:`choose_on_release` makes with the default grid, for the
    work budget: every (η, λ) trajectory to the largest T, then the chosen setting again (a mini-
    batch step counts batch/n of a pass; an exact solve, like the untuned run's, counts one)."""
    grid = RELEASED_GRIDS[trainer]
    if trainer == "erm":
        return 2.0 * len(grid["lam"])
    passes = max(grid["iterations"]) * (len(grid["learning_rate"]) * len(grid["lam"]) + 1)
    return passes * (1.0 if batch is None else min(1.0, batch / max(1, n)))


def _settings(trainer: str, grid: dict[str, tuple]) -> list[dict[str, Any]]:
    if trainer == "erm":
        return [{"lam": float(lam)} for lam in grid["lam"]]
    return [{"iterations": int(T), "learning_rate": float(eta), "lam": float(lam)}
            for T in grid["iterations"] for eta in grid["learning_rate"] for lam in grid["lam"]]


def _fit(model, trainer: str, X, y, settings: list[dict[str, Any]], tilt, batch, rng) -> np.ndarray:
    """θ (K, d) of each setting fitted on (X, y), as one batch per distinct T trajectory."""
    if trainer == "erm":  # the exact regularised minimiser of each λ
        return np.stack([solve_erm(replace(model, lam=s["lam"]), X, y).theta for s in settings])
    pairs = list(dict.fromkeys((s["learning_rate"], s["lam"]) for s in settings))
    steps = sorted({s["iterations"] for s in settings})
    traj = fit_grid(model, X, y, [p[0] for p in pairs], [p[1] for p in pairs], steps, tilt=tilt,
                    batch=batch, rng=rng, dtype=np.float32)  # memory-bound: half the bytes, 1.8× faster
    return np.stack([traj[s["iterations"]][pairs.index((s["learning_rate"], s["lam"]))] for s in settings])


def choose_on_release(released: ReleasedRecords, model, task: str, trainer: str, rng: np.random.Generator, *,
                      batch: int | None = None, debias: bool = True) -> tuple[np.ndarray, dict[str, Any]]:
    """Choose the training setting on ``released`` alone and fit it on all of it (module
    docstring).  Returns the released model θ (d,) and what was chosen: the setting (or
    :data:`GUESS`), its validation score and every setting's."""
    if not model.convex:
        raise ParameterError("choosing the settings on the released records covers the linear models "
                             "(logreg, linreg); the MLP's candidates take minutes each here")
    if trainer not in RELEASED_GRIDS:
        raise ParameterError(f"unknown trainer {trainer!r}: one of {', '.join(RELEASED_GRIDS)}")
    X, y = released.X, released.y
    n = X.shape[0]
    n_val = int(round(VALIDATION_SHARE * n))
    if n_val < 1 or n - n_val < 2:
        raise ParameterError(f"{n} released records are too few to choose settings on a validation part")
    order = rng.permutation(n)  # positions only: which part holds a record never reads it
    fit_rows, val_rows = np.sort(order[n_val:]), np.sort(order[:n_val])
    Xf, yf, Xv, yv = X[fit_rows], y[fit_rows], X[val_rows], y[val_rows]
    settings = _settings(trainer, RELEASED_GRIDS[trainer])
    theta = _fit(model, trainer, Xf, yf, settings, _tilt(model, Xf, yf, released.label, debias), batch, rng)
    rho = _label_flip(released.label)
    scores = score(task, theta, Xv, yv, released.sigma, rho)
    guess = np.zeros(X.shape[1])  # regression: always 0
    if task == "classification":
        sign = 1.0 if np.sum(yf > 0) >= np.sum(yf < 0) else -1.0  # the released majority (+1 on a tie)
        guess[-1] = sign  # the bias feature is positive on every record: one class, always
        p = class_moments(np.zeros((yv.shape[0], 1)), yv, rho)[0]  # the true labels' share of +1
        guess_score = p if sign > 0 else 1.0 - p
    else:
        guess_score = float(score(task, guess[None], Xv, yv, released.sigma)[0])
    best = int(np.argmax(scores))
    info: dict[str, Any] = {"scores": [float(s) for s in scores], "settings": settings}
    if (task == "regression" or released.has_bias) and not scores[best] > guess_score:
        if task == "classification":
            guess[-1] = 1.0 if np.sum(y > 0) >= np.sum(y < 0) else -1.0
        info.update(setting=GUESS[task], score=guess_score)
        return guess, info
    chosen = settings[best]
    final = _fit(model, trainer, X, y, [chosen], _tilt(model, X, y, released.label, debias), batch, rng)[0]
    info.update(setting=chosen, score=float(scores[best]))
    return final, info

