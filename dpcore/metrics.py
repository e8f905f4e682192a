"""Metrics over R runs and their summaries (SPEC §1).

Accuracy is measured on the test split; the optimality gap ``L(θ) − L*`` on
the original training data in float64; RMSE on the test split.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["accuracy", "rmse", "optimality_gap", "summarize", "guessing_accuracy", "guessing_rmse", "majority_label",
           "METRIC_RANGE", "within"]

#: Where each metric's true mean lies, whatever the runs: a share of correct answers is in
#: [0, 1] and a root mean square is ≥ 0.  A confidence interval for the mean is cut to it
#: (:func:`summarize`).  The gap ``L(θ) − L*`` is left out: its ``L*`` is a solver's, so a run
#: may sit a rounding below it.
METRIC_RANGE: dict[str, tuple[float, float]] = {"accuracy": (0.0, 1.0), "rmse": (0.0, math.inf)}


def accuracy(model, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Share of correct ±1 predictions per run, (R,)."""
    return np.mean(model.predict(theta, X) == y[None, :], axis=1)


def rmse(model, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Root mean squared error of real-valued predictions per run, (R,)."""
    return np.sqrt(np.mean((model.scores(theta, X) - y[None, :]) ** 2, axis=1))


def guessing_accuracy(y_train: np.ndarray, y_test: np.ndarray) -> float:
    """The test accuracy of always answering the training split's majority class (+1 on a tie):
    what a model that learned nothing about the features scores.  A private model below it
    is worse than guessing, not merely weak."""
    return float(np.mean(np.asarray(y_test) == majority_label(y_train)))


def majority_label(y_train: np.ndarray) -> float:
    """The training split's more frequent label, ±1 (+1 on a tie): what guessing answers."""
    y_train = np.asarray(y_train)
    return 1.0 if np.sum(y_train > 0) >= np.sum(y_train < 0) else -1.0


def guessing_rmse(y_train: np.ndarray, y_test: np.ndarray) -> float:
    """The test RMSE of always answering the training split's mean label (the best constant)."""
    return float(np.sqrt(np.mean((np.asarray(y_test, float) - float(np.mean(y_train))) ** 2)))


def optimality_gap(model, theta: np.ndarray, X: np.ndarray, y: np.ndarray, loss_star: float) -> np.ndarray:
    """``L(θ_r) − L*`` per run on the given (training) data, (R,)."""
    return model.loss(np.asarray(theta, dtype=np.float64), X, y) - loss_star


def within(metric: str, interval) -> bool:
    """Whether an interval lies in the range of ``metric``'s mean (:data:`METRIC_RANGE`; any, for others)."""
    low, high = METRIC_RANGE.get(metric, (-math.inf, math.inf))
    return low <= interval[0] and interval[1] <= high


def summarize(values, confidence: float = 0.95, metric: str | None = None) -> dict:
    """Mean, sample std and a Student-t confidence interval for the mean, over the finite values.

    Given the ``metric`` named in :data:`METRIC_RANGE`, the interval is cut to the range
    its true mean lies in (accuracy's [0, 1]): with few runs the t interval reaches past it
    (three accuracies 0.55, 0.99, 0.99 give [0.21, 1.47]), and since the true mean is
    always in the range, the cut interval covers it exactly as often as the whole one.

    Non-finite values (runs that diverged, which the run reports in its warnings and
    ``diverged_runs``) are left out and ``n`` counts the rest; with none left every figure
    is NaN.  With one run the std is 0 and the interval is undefined (``None``).
    """
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"mean": math.nan, "std": math.nan, "ci_low": None, "ci_high": None, "n": 0}
    mean = float(np.mean(v))
    if v.size < 2:
        return {"mean": mean, "std": 0.0, "ci_low": None, "ci_high": None, "n": int(v.size)}
    std = float(np.std(v, ddof=1))
    half = float(stats.t.ppf(0.5 + confidence / 2, v.size - 1)) * std / math.sqrt(v.size)
    low, high = METRIC_RANGE.get(metric, (-math.inf, math.inf))
    return {"mean": mean, "std": std, "ci_low": max(low, mean - half), "ci_high": min(high, mean + half),
            "n": int(v.size)}
