"""What a dataset is: the preprocessed :class:`Dataset` and the registry's :class:`DatasetSpec`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..metrics import guessing_accuracy, guessing_rmse, majority_label

__all__ = ["DataFile", "Dataset", "DatasetSpec"]


def _as_array(value):
    """An array-like as a numpy array (numbers as float64), or ``value`` itself if it is none."""
    try:
        out = np.asarray(value)
    except (ValueError, TypeError):  # ragged lists, objects numpy cannot read
        return value
    return out.astype(np.float64) if out.dtype.kind in "biuf" else out


@dataclass(frozen=True, eq=False)
class Dataset:
    """A preprocessed dataset: arrays plus what a user needs to know about them.

    ``X_*`` are float64 with every row norm ≤ 1; ``y_*`` are ±1 for
    classification and in [−1, 1] for regression.  ``n`` is the number of
    training rows (the records the privacy guarantee is about); ``d`` counts
    every feature, the bias included.

    The four arrays may be given as any array-like (lists of lists, as scikit-learn takes
    them): whatever is not a numpy array is converted here, numbers to float64; what does
    not convert to an array of numbers is kept as given, for the door's check
    (:func:`~dpcore.datasets.contract.check_dataset`) to refuse in one line.
    """

    id: str
    name: str
    task: str  # "classification" | "regression"
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    feature_names: tuple[str, ...]
    description: str = ""
    citation: str = ""
    license: str = ""
    source: str = ""
    positive_class: str | None = None
    notes: tuple[str, ...] = ()
    #: the two classes as a reader names them, (−1, +1): "benign (class 2)", not the file's "2"
    class_names: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        for name in ("X_train", "y_train", "X_test", "y_test"):
            value = getattr(self, name)
            if isinstance(value, np.ma.MaskedArray) and value.dtype.kind in "biuf":  # masked: missing, so NaN
                value = value.astype(np.float64).filled(np.nan)  # (the door refuses it in one line)
                object.__setattr__(self, name, value)
            if type(value) is not np.ndarray:  # a list, or a subclass (np.matrix, a memory map): a plain array
                object.__setattr__(self, name, _as_array(value))

    @property
    def n(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.X_test.shape[0])

    @property
    def d(self) -> int:
        return int(self.X_train.shape[1])

    @property
    def positive_share(self) -> float | None:
        """Share of +1 labels in the training split (classification only)."""
        if self.task != "classification":
            return None
        return float(np.mean(self.y_train > 0))

    @property
    def guessing(self) -> float:
        """What a model that learned nothing scores on the test split: the accuracy of always
        answering the training majority class, or (regression) the RMSE of always answering
        the training mean (:mod:`dpcore.metrics`)."""
        if self.task == "classification":
            return guessing_accuracy(self.y_train, self.y_test)
        return guessing_rmse(self.y_train, self.y_test)

    @property
    def guess_class(self) -> str | None:
        """The class guessing answers (the training majority, +1 on a tie), named: by
        :attr:`class_names` where the dataset has them, else the positive class's name or "not <it>"
        for −1 (classification only)."""
        if self.task != "classification":
            return None
        majority = majority_label(self.y_train) > 0
        if self.class_names is not None:
            return self.class_names[1 if majority else 0]
        positive = self.positive_class or "+1"
        return positive if majority else f"not {positive}"

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "task": self.task,
            "n_train": self.n,
            "n_test": self.n_test,
            "d": self.d,
            "positive_class": self.positive_class,
            "positive_share": self.positive_share,
            "description": self.description,
            "citation": self.citation,
            "license": self.license,
        }


@dataclass(frozen=True)
class DataFile:
    filename: str
    sha256: str


@dataclass(frozen=True)
class DatasetSpec:
    """A registry entry: metadata plus the function that builds the dataset.

    ``n_train``, ``n_test`` and ``d`` are the documented shapes with the default
    options (bias on, test fraction 0.2); the test suite checks them.
    """

    id: str
    name: str
    task: str
    description: str
    citation: str
    license: str
    source: str
    builder: Callable[..., Dataset] = field(repr=False)
    files: tuple[DataFile, ...] = ()
    n_train: int | None = None
    n_test: int | None = None
    d: int | None = None
    synthetic: bool = False

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "task": self.task,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "d": self.d,
            "synthetic": self.synthetic,
            "description": self.description,
            "citation": self.citation,
            "license": self.license,
            "source": self.source,
            "files": [f.filename for f in self.files],
        }
