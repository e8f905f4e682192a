"""Parameter constraints, declared once.

The core's validation, the command line's argument checks and the app's
widget limits all read :data:`PARAMS`, so they cannot disagree.  Messages
follow scikit-learn's form::

    The 'epsilon' parameter of run must be a float in (0, inf). Got -1 instead.
"""

from __future__ import annotations

import math
import numbers
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from .exceptions import ParameterError

__all__ = ["TINY", "subnormal", "Interval", "Options", "Param", "PARAMS", "CONFLICTS", "BOOL", "check", "check_conflicts", "validate",
           "validate_all", "log_ticks", "parse_grid"]


#: the smallest normal float: a number nearer 0 than this (but not 0) is subnormal, and no declared
#: float range holds one.  Such a value keeps a few bits at most, and the arithmetic of a setting
#: that small (σ = C·z, λ·n, 1/η) underflows to 0 or overflows to ∞ where a formula assumes neither.
TINY = sys.float_info.min


def subnormal(value: Any) -> bool:
    """Whether ``value`` is a float nearer 0 than :data:`TINY` without being 0."""
    try:
        return 0.0 < abs(float(value)) < TINY
    except (TypeError, ValueError, OverflowError):
        return False


@dataclass(frozen=True)
class Interval:
    """A numeric range; ``closed`` is one of 'both', 'left', 'right', 'neither'."""

    kind: type  # int or float
    low: float | None
    high: float | None
    closed: str = "both"

    def contains(self, value: float) -> bool:
        if self.kind is float and subnormal(value):
            return False
        lo_ok = (
            self.low is None
            or value > self.low
            or (value == self.low and self.closed in ("both", "left"))
        )
        hi_ok = (
            self.high is None
            or value < self.high
            or (value == self.high and self.closed in ("both", "right"))
        )
        return lo_ok and hi_ok

    def describe(self) -> str:
        left = "[" if self.closed in ("both", "left") and self.low is not None else "("
        right = "]" if self.closed in ("both", "right") and self.high is not None else ")"
        lo = "-inf" if self.low is None else _fmt(self.low)
        hi = "inf" if self.high is None else _fmt(self.high)
        name = "an int" if self.kind is int else "a float"
        return f"{name} in {left}{lo}, {hi}{right}"


@dataclass(frozen=True)
class Options:
    """A closed set of allowed values."""

    values: tuple

    def contains(self, value: Any) -> bool:
        return value in self.values

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class Param:
    """One named parameter: its constraint, default and UI hints."""

    name: str
    constraint: Interval | Options
    default: Any
    help: str
    ui_min: float | None = None  # widget range (may be narrower than the constraint)
    ui_max: float | None = None
    log_scale: bool = False
    ticks: tuple[float, ...] | None = None  # a slider's values, when it offers a fixed set
    tick_format: str = "g"  # how a slider shows them


def log_ticks(low: float, high: float, count: int, extra=()) -> tuple[float, ...]:
    """``count`` log-spaced values from ``low`` to ``high`` (3 significant digits), with ``extra``."""
    return tuple(sorted({float(f"{v:.3g}") for v in np.geomspace(low, high, count)} | set(extra)))


def _fmt(x: float) -> str:
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return repr(x) if not isinstance(x, float) else f"{x:g}"


_P = [
    # ε beyond 1000 is no privacy at all and overflows the calibrations (e^ε); below 1e-4
    # the noise swamps any signal and the sampled-Gaussian accountant's grid explodes.
    Param("epsilon", Interval(float, 1e-4, 1000.0, "both"), 1.0,
          "privacy budget ε (from 1e-4 to 1000)", 0.01, 10.0, log_scale=True,
          # round values a class can say aloud, with every ε the seed papers plot
          ticks=(0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0, 1.5, 2.0,
                 3.0, 4.0, 5.0, 7.0, 10.0)),
    Param("label_epsilon", Interval(float, 1e-4, 50.0, "both"), None,
          "budget ε_y for the labels (randomized response, or Gaussian noise on a real target); "
          "default ε/2 in certified mode, raw labels in published mode", 0.01, 10.0, log_scale=True),
    Param("delta", Interval(float, 1e-100, 1.0, "left"), 1e-5,
          "privacy parameter δ in [1e-100, 1); keep it below 1/n", 1e-10, 1e-2, log_scale=True,
          ticks=(1e-10, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2), tick_format=".0e"),
    Param("iterations", Interval(int, 1, 1_000_000, "both"), 100,
          "number of optimisation steps T", 1, 5000),
    Param("repeats", Interval(int, 1, 100_000, "both"), 5,
          "independent runs R (batched)", 1, 200),
    Param("seed", Interval(int, 0, 2**32 - 1, "both"), 0,
          "base seed; repeat r uses seed + r", 0, 2**31 - 1),
    # The scales below end at 1e6 (λ, η, C, the ball's radius, the noise factor): far beyond any
    # setting that teaches or works, and short of where the mechanisms' arithmetic overflows (λ, η
    # and the radius at 1e50, a clipping norm at 1e308: a crash, not an answer).  η starts at 1e-9,
    # a step that moves nothing in a million steps (the output perturbations' sensitivity, 1/η,
    # overflowed near 1e-100).
    Param("lam", Interval(float, 0.0, 1e6, "both"), 1e-3,
          "L2 regularisation λ (strong convexity)", 1e-6, 1.0, log_scale=True),
    Param("learning_rate", Interval(float, 1e-9, 1e6, "both"), 1.0,
          "step size η of the optimiser", 1e-3, 10.0, log_scale=True),
    Param("batch_size", Interval(int, 1, None, "both"), 256,
          "mini-batch size", 1, 10_000),
    Param("sample_rate", Interval(float, 0.0, 1.0, "right"), 0.01,
          "Poisson sampling rate q", 1e-4, 1.0, log_scale=True),
    Param("clip_norm", Interval(float, 0.0, 1e6, "right"), 1.0,
          "per-example gradient clipping norm C", 0.01, 10.0, log_scale=True),
    Param("c", Interval(float, 1e-6, 1e6, "both"), 1.0,
          "constant c of a published noise formula", 1e-4, 100.0, log_scale=True),
    Param("clients", Interval(int, 1, None, "both"), 4,
          "number of parties m", 1, 64),
    Param("skew", Interval(float, 1.0, None, "both"), 1.0,
          "client-size skew u = n_max / n_min", 1.0, 100.0, log_scale=True,
          ticks=(1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 64.0, 100.0)),  # seed 004's 2^k
    Param("radius", Interval(float, 0.0, 1e6, "right"), 1.0,
          "radius η of the parameter ball (linreg)", 0.1, 100.0, log_scale=True),
    Param("test_fraction", Interval(float, 0.0, 1.0, "neither"), 0.2,
          "share of rows held out for testing", 0.05, 0.5),
    Param("n", Interval(int, 2, 2**24, "both"), 10_000,
          "number of training rows (synthetic data)", 16, 2**21),
    Param("d", Interval(int, 1, 10_000, "both"), 14,
          "number of features (synthetic data)", 1, 200),
    Param("noise", Interval(float, 0.0, None, "left"), 0.1,
          "label / target noise level (synthetic data)", 0.0, 2.0),
    Param("noise_scale", Interval(float, 0.0, 1e6, "right"), 1.0,
          "multiplies every noise the mechanism draws; below 1 it deliberately under-noises "
          "(the certified ε reads the noise that ran, the target stays what was asked)",
          0.05, 1.0, log_scale=True),
    Param("calibration", Options(("certified", "published")), "certified",
          "certified: exact accountant; published: the paper's formula with constant c"),
    # the privacy audit
    Param("trials", Interval(int, 2, 10_000, "both"), 500,
          "mechanism runs per neighbouring dataset (6,000 a side is the tight mode)", 100, 6000),
    Param("canaries", Interval(int, 10, 5000, "both"), 1000,
          "canaries of a one-run audit, each in the training data with probability ½", 100, 5000),
    Param("alpha", Interval(float, 0.0, 1.0, "neither"), 0.05,
          "the audit's bound holds with confidence 1 − α", 0.001, 0.2),
    Param("canary", Options(("auto", "opposite-pair", "orthogonal-pair", "lowest-variance", "random-unit", "mislabeled")), "auto",
          "the record pair that differs between the two neighbours (auto: the orthogonal pair for "
          "gradient training, the opposite pair otherwise)"),
    Param("score", Options(("margin", "loss")), "margin", "statistic of the canary per run"),
    Param("threat", Options(("black-box", "white-box")), "black-box",
          "black-box: the attacker sees the released model; white-box: every release along the way"),
    Param("max_rows", Interval(int, 2, None, "both"), 5000,
          "larger training sets are audited on a seeded subsample of this many rows", 100, 100_000),
    Param("chunk_size", Interval(int, 1, 1_000_000, "both"), 250, "runs per batched call", 1, 10_000),
    # a grid never starts more workers than it has tasks, so the top only keeps the number a number
    Param("workers", Interval(int, 1, 10_000, "both"), None,
          "local worker processes of a grid (default: one per CPU; 1 runs in this process)", 1, 64),
]

PARAMS: dict[str, Param] = {p.name: p for p in _P}

#: Settings that say one thing two ways: given together, one of them would be dropped without a
#: word, so they are refused together (:func:`check_conflicts`).  (first, second, why)
CONFLICTS: tuple[tuple[str, str, str], ...] = (
    # DP-SGD's batch only sets its Poisson rate, q = batch / n: a rate given as well wins
    ("batch_size", "sample_rate", "the batch size only sets the sampling rate (q = batch / n): give one of them"),
    # a grid's tasks run on a Dask scheduler's workers or on local ones, never both
    ("workers", "scheduler", "a Dask scheduler runs the tasks in place of local workers: give one of them"),
)

#: The constraint of an on/off option.
BOOL = Options((True, False))


def validate(name: str, value: Any, owner: str = "dpcore") -> Any:
    """Check ``value`` against the declared constraint of ``name`` and return it.

    Ints are accepted for float parameters (and returned as float); bools and
    non-finite floats are refused except where the interval is open to infinity
    only by its description (it never admits inf itself).
    """
    return check(PARAMS[name], value, owner)


def parse_grid(name: str, text: str, owner: str, max_values: int) -> list[float]:
    """A comma- (or semicolon-) separated list of values of ``name``, each checked, sorted,
    without repeats; at least one and at most ``max_values`` of them."""
    values = []
    for part in str(text).replace(";", ",").split(","):
        if part.strip():
            try:
                number = float(part)
            except ValueError:
                raise ParameterError(f"{owner}: {part.strip()!r} is not a number") from None
            values.append(validate(name, number, owner))
    values = sorted(set(values))
    if not values:
        raise ParameterError(f"{owner} needs at least one value, e.g. 0.1, 1, 10")
    if len(values) > max_values:
        raise ParameterError(f"{owner} has {len(values)} values; at most {max_values} keep it quick")
    return values


def check(param: Param, value: Any, owner: str = "dpcore") -> Any:
    """:func:`validate` against a given declaration (a mechanism's own options use this)."""
    name = param.name
    cons = param.constraint
    if isinstance(cons, Options):
        if isinstance(value, (dict, list)) or not cons.contains(value):
            raise ParameterError(
                f"The {name!r} parameter of {owner} must be {cons.describe()}. "
                f"Got {value!r} instead."
            )
        return value
    ok_type = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok_type and cons.kind is int:
        ok_type = isinstance(value, numbers.Integral) or (
            isinstance(value, float) and value.is_integer()
        )
    try:
        if ok_type and not math.isfinite(float(value)):
            ok_type = False
    except OverflowError:  # an integer no float holds (a JSON file's 400-digit number)
        ok_type = False
    # the range is checked on the number stored, not on the one given: a numpy long double of 1e-4000
    # is above 0 but stores as 0.0, which an open range refuses (issue 67's campaign)
    if not ok_type or not cons.contains(int(value) if cons.kind is int else float(value)):
        tiny = ", not a subnormal number (0 < |x| < 2.2e-308)" if ok_type and subnormal(value) else ""
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be {cons.describe()}{tiny}. "
            f"Got {value!r} instead."
        )
    return int(value) if cons.kind is int else float(value)


def check_conflicts(given: Any, owner: str = "dpcore", names: Any = None) -> None:
    """Refuse two :data:`CONFLICTS` settings given together.  ``given``: the names of the settings
    given (not merely defaulted); ``names(setting)``: how the message names one (a flag)."""
    given = set(given)
    for first, second, why in CONFLICTS:
        if first in given and second in given:
            a, b = (names(first), names(second)) if names is not None else (repr(first), repr(second))
            raise ParameterError(f"{owner + ': ' if owner else ''}{a} and {b} cannot be given together: {why}")


def validate_all(owner: str = "dpcore", **values: Any) -> dict[str, Any]:
    """Validate several parameters at once; ``None`` values are passed through."""
    return {k: (None if v is None else validate(k, v, owner)) for k, v in values.items()}
