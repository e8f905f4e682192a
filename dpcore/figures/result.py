"""What a shown result says beside its numbers, in one place for every view, the command line and the
charts: what guessing scores (:func:`versus_guessing`), a regression's R², and the noise's name
(:func:`noise_words`).

A private model that scores no better than a constant answer has learned nothing the data says:
the noise has drowned it.  Every place that shows a result applies :func:`versus_guessing` to
it, so a collapse is never shown without its box, whichever view the reader is in (issue 68).
Guessing is always answering the training split's majority class (an accuracy) or its mean
label (an RMSE), scored on the test split (:mod:`dpcore.metrics`).

The comparison is made at the digits shown (:data:`DIGITS`): 0.8874 beside a guess of 0.8874
reads as "no better", as a reader would read it.  A regression's R² is taken against the same
constant: ``1 − (RMSE / RMSE of guessing)²``, 0 for a model that does as well as the mean
label and negative for one that does worse.

>>> v = versus_guessing({"accuracy_mean": 0.4501, "accuracy_guess": 0.8874, "guess_class": "no"})
>>> v.no_better, v.worse
(True, True)
>>> v.words
'always answering the majority class, “no”'
>>> round(r_squared(0.1, 0.2), 4)
0.75
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["DIGITS", "Guessing", "versus_guessing", "r_squared", "no_better_rows", "from_zero", "noise_words"]

#: results and guesses are compared at the digits the views and the command line print
DIGITS = 4


def r_squared(rmse: float, rmse_guess: float) -> float:
    """``1 − (rmse / rmse_guess)²``: the share of the test labels' spread around the training mean
    that the model explains (0: no better than predicting that mean; below 0: worse)."""
    if not (rmse_guess > 0 and math.isfinite(rmse_guess) and math.isfinite(rmse)):
        return math.nan
    return 1.0 - (rmse / rmse_guess) ** 2


@dataclass(frozen=True)
class Guessing:
    """One result beside what guessing scores on the same test split."""

    metric: str  # "accuracy" or "rmse"
    value: float
    guess: float
    words: str  # what guessing answers, in words ("always answering the majority class, “>50K”")

    @property
    def no_better(self) -> bool:
        """Scores at most what guessing scores, at the digits shown (the box is due)."""
        v, g = round(self.value, DIGITS), round(self.guess, DIGITS)
        return v <= g if self.metric == "accuracy" else v >= g

    @property
    def worse(self) -> bool:
        """Scores strictly worse than guessing, at the digits shown."""
        v, g = round(self.value, DIGITS), round(self.guess, DIGITS)
        return v < g if self.metric == "accuracy" else v > g

    def sentence(self, who: str = "this private model") -> str:
        """"No better than guessing: … scores better than this private model." """
        return (f"No better than guessing: {self.words} "
                + (f"scores better than {who}" if self.worse else f"scores as well as {who}")
                + f" ({self.label}: guessing {self.guess:.{DIGITS}f}, {who} {self.value:.{DIGITS}f}).")

    @property
    def label(self) -> str:
        return "accuracy" if self.metric == "accuracy" else "RMSE"


def _finite(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def versus_guessing(row: dict, guess: float | None = None) -> Guessing | None:
    """``row`` (a run's record or a sweep's row: ``accuracy_mean`` or ``rmse_mean``) beside what
    guessing scores (its ``accuracy_guess`` / ``rmse_guess``, or ``guess`` when the row carries
    none); ``None`` when either is missing or not finite."""
    for metric in ("accuracy", "rmse"):
        value = row.get(f"{metric}_mean")
        g = row.get(f"{metric}_guess")
        g = guess if g is None else g
        if _finite(value) and _finite(g):
            if metric == "accuracy":
                cls = row.get("guess_class")
                words = ("always answering the majority class" + (f", “{cls}”" if cls else ""))
            else:
                words = "always predicting the training split's mean label"
            return Guessing(metric, float(value), float(g), words)
    return None


def no_better_rows(rows, guess: float | None = None) -> list[tuple[dict, Guessing]]:
    """The rows whose result is no better than guessing, each with its comparison."""
    out = []
    for r in rows:
        v = versus_guessing(r, guess)
        if v is not None and v.no_better:
            out.append((r, v))
    return out


def from_zero(values, guess: float | None, metric: str = "accuracy") -> bool:
    """Whether a chart of ``values`` must draw its y axis from zero: some value falls to guessing
    or below, and a range fitted to the values would draw that fall out of scale with the
    whole scale of the metric (a 0.4-point dip drawn as a cliff, a 45-point collapse as a dip)."""
    vals = [float(v) for v in values if _finite(v)]
    if not vals or not _finite(guess):
        return False
    return any(Guessing(metric, v, float(guess), "").no_better for v in vals)


def noise_words(record: dict) -> str:
    """The run's noise named as what it is: ``σ = 0.4`` on its own, or, for a sampled mechanism whose
    noise is a multiple z of its clip C (its record's ``noise_multiplier`` and ``clip_norm``),
    ``σ = z·C = 5.638 × 1``.  The same words in Explore and the command line's text; the JSON
    carries ``sigma``, ``noise_multiplier`` and ``clip_norm``.

    >>> noise_words({"sigma": 11.276, "noise_multiplier": 5.638, "clip_norm": 2.0})
    'σ = z·C = 5.638 × 2 = 11.28'
    >>> noise_words({"sigma": 0.25})
    'σ = 0.25'
    """
    sigma = record.get("sigma")
    if sigma is None or not isinstance(sigma, (int, float)):
        return "σ = –"
    z, clip = record.get("noise_multiplier"), record.get("clip_norm")
    if _finite(z) and _finite(clip):
        return f"σ = z·C = {z:.4g} × {clip:g} = {sigma:.4g}"
    return f"σ = {sigma:.4g}"
