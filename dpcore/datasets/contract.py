"""What a :class:`~dpcore.datasets.Dataset` handed to the library must satisfy, and the check.

The sensitivity bounds behind every certificate assume what SPEC §1 states: training rows
with ``‖x‖₂ ≤ 1`` and labels in the model's label set.  The bundled datasets and user CSVs
(:func:`~dpcore.datasets.from_csv`) hold them by construction; a :class:`Dataset` built by hand
and passed as ``dataset=`` to :func:`dpcore.run`, :func:`dpcore.tune`, :func:`dpcore.run_audit`, a
grid or a sweep is checked against :data:`CONTRACT` at that door, before any noise is
calibrated (``dpcore.experiments.run.check_data`` calls :func:`check_dataset` with the
mechanism's waiver).  Data that break a bound are refused with a one-line
:class:`~dpcore.exceptions.DatasetError` naming the bound and what to change.

One bound may be waived by a mechanism's own declaration
(:meth:`~dpcore.mechanisms.base.Mechanism.clips_records`): the row-norm bound, by a mechanism
that clips every record's contribution (DP-SGD, DP-GD with a clipping norm) and so does not
need it; the run then says so in its warnings.  Every other bound holds for every run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..numerics import linalg
from ..exceptions import DatasetError

__all__ = ["Bound", "Violation", "CONTRACT", "ROW_NORM_TOLERANCE", "LABEL_SETS", "SHAPES", "FINITE", "LABELS",
           "ROW_NORMS", "violations", "check_dataset"]

#: Training rows may exceed norm 1 by this much, the rounding of a row scaled onto the sphere
#: (``x / ‖x‖`` reads 1 + a few ulps): it moves a sensitivity, and the ε it certifies, by a
#: relative 1e-9, below the precision at which any ε is shown.
ROW_NORM_TOLERANCE = 1e-9

#: the label set of each task's models (SPEC §1), in words
LABEL_SETS = {"classification": "−1 or +1", "regression": "in [−1, 1]"}

SHAPES, FINITE, LABELS, ROW_NORMS = "shapes", "finite values", "labels", "row norms"


@dataclass(frozen=True)
class Bound:
    """One bound of the contract: its name, the sentence it states, and what to change when broken."""

    name: str
    states: str
    fix: str
    #: the bound only a certificate needs (a mechanism whose privacy does not depend on it may waive it)
    waivable: bool = False


#: The contract, in the order it is checked (the first broken bound is the one reported).
CONTRACT: tuple[Bound, ...] = (
    Bound(SHAPES, "X_train and X_test are 2-D arrays of numbers with the same d ≥ 1 columns, X_train has "
                  "n ≥ 1 rows and X_test at least one (every view shows the test accuracy), y_train and y_test "
                  "are 1-D with one label per row, and feature_names has d names",
          "give one label per row, at least one test row, and the same columns in both splits (numpy arrays, "
          "or lists of lists of numbers)"),
    Bound(FINITE, "every value of X_train, y_train, X_test and y_test is finite (no NaN, no ±inf)",
          "drop or impute the missing values (dpcore.datasets.from_dataframe does) before handing the data over"),
    Bound(LABELS, "classification labels (both splits) are −1 or +1; regression training targets are in [−1, 1]",
          "map the positive class to +1 and every other to −1, or scale regression targets into [−1, 1] "
          "with a public range (dpcore.datasets.from_dataframe does both)"),
    Bound(ROW_NORMS, f"every training row has ‖x‖₂ ≤ 1 (up to the rounding tolerance {ROW_NORM_TOLERANCE:g})",
          "scale the rows into the unit ball (dpcore.datasets.normalize_rows, or divide by a public bound), "
          "or use a mechanism that clips per-record gradients (gradient-dpsgd, or gradient-dpgd with clip_norm)",
          waivable=True),
)
_BOUNDS = {b.name: b for b in CONTRACT}


@dataclass(frozen=True)
class Violation:
    """A broken bound and where: ``fact`` says what is wrong (``"row 17 of X_train has norm 6.58e+04 > 1"``)."""

    bound: str
    fact: str

    @property
    def message(self) -> str:
        """One line: what is wrong, which bound it breaks, what to change."""
        return f"{self.fact} (the dataset bound on {self.bound}): {_BOUNDS[self.bound].fix}"


def _numbers(a) -> np.ndarray | None:
    try:
        out = np.asarray(a)
    except Exception:  # an object that is not array-like at all
        return None
    if out.dtype.kind not in "biuf":
        return None
    return out


def _shapes(ds) -> str | None:
    arrays = {name: _numbers(getattr(ds, name, None)) for name in ("X_train", "y_train", "X_test", "y_test")}
    for name, a in arrays.items():
        if a is None:
            return f"{name} is not an array of real numbers"
    X, y, Xt, yt = arrays.values()
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        return f"X_train must be a 2-D array with at least one row and one column, got shape {X.shape}"
    if Xt.ndim != 2 or Xt.shape[1] != X.shape[1]:
        return f"X_test has shape {Xt.shape} but X_train has {X.shape[1]} columns"
    if Xt.shape[0] < 1:
        return "X_test has no rows: the test accuracy (or RMSE) would be NaN"
    for name, labels, rows in (("y_train", y, X.shape[0]), ("y_test", yt, Xt.shape[0])):
        if labels.ndim != 1 or labels.shape[0] != rows:
            return f"{name} has shape {labels.shape} but its split has {rows} rows"
    names = getattr(ds, "feature_names", None)
    if names is None or len(names) != X.shape[1]:
        return f"feature_names has {0 if names is None else len(names)} names for {X.shape[1]} columns"
    if getattr(ds, "task", None) not in LABEL_SETS:
        return f"task is {getattr(ds, 'task', None)!r}, not one of {', '.join(LABEL_SETS)}"
    return None


def _first(mask: np.ndarray) -> int:
    """The first row (index along axis 0) where ``mask`` holds."""
    return int(np.argmax(mask.reshape(mask.shape[0], -1).any(axis=1)))


def _finite(ds) -> str | None:
    for name in ("X_train", "y_train", "X_test", "y_test"):
        a = np.asarray(getattr(ds, name))
        bad = ~np.isfinite(a)
        if bad.any():
            i = _first(bad)
            value = a[i] if a.ndim == 1 else a[i][~np.isfinite(a[i])][0]
            return f"row {i} of {name} holds {float(value)!r}"
    return None


def _labels(ds, task: str) -> str | None:
    splits = ("y_train", "y_test") if task == "classification" else ("y_train",)
    for name in splits:
        y = np.asarray(getattr(ds, name), dtype=np.float64)
        bad = (np.abs(y) != 1.0) if task == "classification" else ~(np.abs(y) <= 1.0)
        if bad.any():
            i = _first(bad)
            return f"{name}[{i}] = {y[i]:g} is not a {task} label ({LABEL_SETS[task]})"
    return None


def _row_norms(ds) -> str | None:
    X = np.asarray(ds.X_train)
    # in float64 whatever X's precision (a float32 norm reads 1 + 3e-8 as exactly 1); a float64 X's
    # norms are held per shared matrix: once, not per run
    norms = linalg.row_norms(X) if X.dtype == np.float64 else np.linalg.norm(X.astype(np.float64), axis=-1)
    bad = ~(norms <= 1.0 + ROW_NORM_TOLERANCE)
    if not bad.any():
        return None
    i = int(np.argmax(np.where(np.isnan(norms), np.inf, norms)))
    shown = f"{norms[i]:.3g}" if norms[i] >= 1.001 else f"{norms[i]:.10g}"  # never "norm 1 > 1"
    return f"row {i} of X_train has norm {shown} > 1"


def violations(dataset, task: str | None = None, bounds: tuple[str, ...] | None = None) -> list[Violation]:
    """Every bound of :data:`CONTRACT` (or of ``bounds``) ``dataset`` breaks, the first offence of each.

    ``task``: the model's (its label set); default the dataset's.  When the shapes or the values are
    broken, the later bounds are not evaluated (they would read nonsense)."""
    wanted = tuple(b.name for b in CONTRACT) if bounds is None else tuple(bounds)
    out: list[Violation] = []
    for name in (SHAPES, FINITE):
        if name in wanted:
            fact = _shapes(dataset) if name == SHAPES else _finite(dataset)
            if fact:
                return out + [Violation(name, fact)]
    task = getattr(dataset, "task", None) if task is None else task
    if LABELS in wanted and task in LABEL_SETS:
        fact = _labels(dataset, task)
        if fact:
            out.append(Violation(LABELS, fact))
    if ROW_NORMS in wanted:
        fact = _row_norms(dataset)
        if fact:
            out.append(Violation(ROW_NORMS, fact))
    return out


def check_dataset(dataset, *, task: str | None = None, waive: Mapping[str, str] | None = None) -> list[str]:
    """Check ``dataset`` against :data:`CONTRACT`; raise :class:`~dpcore.exceptions.DatasetError` on
    the first broken bound, in one line naming it and what to change.

    ``waive`` maps a waivable bound (only :data:`ROW_NORMS`) to the reason the run does not need it
    (a mechanism's :meth:`~dpcore.mechanisms.base.Mechanism.clips_records`); a waived bound that is
    broken is returned as a note for the run's warnings, never raised.

    >>> import numpy as np
    >>> from dpcore.datasets import Dataset
    >>> X = np.array([[0.6, 0.8], [3.0, 4.0]])
    >>> ds = Dataset("mine", "mine", "classification", X, np.array([1.0, -1.0]), X, np.array([1.0, -1.0]), ("a", "b"))
    >>> check_dataset(ds)
    Traceback (most recent call last):
      ...
    dpcore.exceptions.DatasetError: row 1 of X_train has norm 5 > 1 (the dataset bound on row norms): scale the rows into the unit ball (dpcore.datasets.normalize_rows, or divide by a public bound), or use a mechanism that clips per-record gradients (gradient-dpsgd, or gradient-dpgd with clip_norm)
    >>> check_dataset(ds, waive={"row norms": "DP-SGD clips every per-record gradient to C = 1"})
    ['row 1 of X_train has norm 5 > 1, outside the dataset bound ‖x‖ ≤ 1: DP-SGD clips every per-record gradient to C = 1, so its guarantee does not depend on that bound']
    """
    waive = dict(waive or {})
    for name in waive:
        if name not in _BOUNDS or not _BOUNDS[name].waivable:
            raise ValueError(f"the dataset bound {name!r} cannot be waived")
    notes = []
    for v in violations(dataset, task):
        if v.bound not in waive:
            raise DatasetError(v.message)
        notes.append(f"{v.fact}, outside the dataset bound ‖x‖ ≤ 1: {waive[v.bound]}, "
                     "so its guarantee does not depend on that bound")
    return notes
