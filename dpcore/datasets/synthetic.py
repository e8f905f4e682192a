"""The synthetic generators: seeded linear-model data of any size, and their registry entries."""

from __future__ import annotations

import functools

import numpy as np

from ..numerics import streams
from ..params import validate
from .base import Dataset, DatasetSpec
from .preprocess import normalize_rows

__all__ = ["SYNTHETIC_SPECS", "generate_synthetic"]


def generate_synthetic(
    task: str, n: int, d: int, noise: float, seed: int, n_test: int, bias: bool
) -> Dataset:
    """Seeded linear-model data: x uniform in direction, y from a fixed unit θ*.

    Classification: ``y = sign(⟨θ*, x⟩ + noise·g)``; regression:
    ``y = clip(⟨θ*, x⟩ + noise·g, −1, 1)`` with ``g ~ N(0, 1)``.  ``d`` is the
    number of raw features (the bias, if any, is added on top).
    """
    owner = f"synthetic-{task}"
    n = validate("n", n, owner)
    d = validate("d", d, owner)
    noise = validate("noise", noise, owner)
    seed = validate("seed", seed, owner)
    n_test = validate("n", n_test, owner)
    rng = np.random.default_rng([seed, streams.SYNTHETIC_DATA])
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)

    def draw(m: int) -> tuple[np.ndarray, np.ndarray]:
        X = rng.standard_normal((m, d))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        X *= rng.uniform(0.5, 1.0, size=(m, 1))  # varied norms, all ≤ 1
        t = X @ theta + noise * rng.standard_normal(m)
        if task == "classification":
            y = np.where(t >= 0, 1.0, -1.0)
        else:
            y = np.clip(t, -1.0, 1.0)
        if bias:
            X = normalize_rows(np.hstack([X, np.ones((m, 1))]))
        return X, y

    X_tr, y_tr = draw(n)
    X_te, y_te = draw(n_test)
    for a in (X_tr, y_tr, X_te, y_te):
        a.setflags(write=False)
    names = tuple(f"x{i}" for i in range(d)) + (("bias",) if bias else ())
    spec = SYNTHETIC_SPECS[f"synthetic-{task}"]
    return Dataset(
        id=spec.id,
        name=f"{spec.name} (n={n}, d={d}, noise={noise:g}, seed={seed})",
        task=task,
        X_train=X_tr,
        y_train=y_tr,
        X_test=X_te,
        y_test=y_te,
        feature_names=names,
        description=spec.description,
        citation=spec.citation,
        license=spec.license,
        source=spec.source,
        positive_class="+1" if task == "classification" else None,
        notes=(f"Generated with seed {seed}; test set of {n_test} fresh draws.",),
    )


#: the registry entries of the generators (``load("synthetic-…", n=…, d=…, noise=…)``), by id
SYNTHETIC_SPECS: dict[str, DatasetSpec] = {s.id: s for s in (
    DatasetSpec(
        "synthetic-classification", "Synthetic classification", "classification",
        "Seeded linear-separator data with label noise; choose n, d and the noise "
        "level (scales to n = 2^21).",
        "", "public domain (generated)", "dpcore.datasets",
        functools.partial(generate_synthetic, "classification"), (), None, None, None, True,
    ),
    DatasetSpec(
        "synthetic-regression", "Synthetic regression", "regression",
        "Seeded linear-regression data, targets clipped to [−1, 1]; choose n, d and the "
        "noise level (scales to n = 2^21).",
        "", "public domain (generated)", "dpcore.datasets",
        functools.partial(generate_synthetic, "regression"), (), None, None, None, True,
    ),
)}
