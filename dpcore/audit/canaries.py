"""Neighbouring training sets: the canary that tells ``D'`` from ``D`` (SPEC §5).

The audit builds two neighbouring training sets under the project's relation
(replace-one, SPEC §1):

* ``D``  – the training data (or a seeded subsample of it, :func:`subsample`);
* ``D'`` – ``D`` with one record, index ``k``, replaced by a *canary*.

Canaries (``canary=``; ``"auto"``, the default, takes the orthogonal pair for mechanisms that
train by noisy gradient steps (the gradient and distributed families) and the opposite pair
for the others, whichever is stronger there: :func:`resolve_canary`):

* ``"opposite-pair"`` – ``D`` holds ``(−v, y_c)`` and ``D'`` holds ``(v, y_c)`` in
  place of one record, with ``v`` the lowest-variance direction below: the two
  neighbours pull θ in opposite directions along a direction no other record
  uses, the strongest black-box pair we know for these models;
* ``"orthogonal-pair"`` – ``D`` holds ``(u, y_c)`` and ``D'`` holds ``(v, y_c)``, the two
  lowest-variance directions (orthogonal), scored by ``y_c(f_θ(v) − f_θ(u))``.  For the
  logistic loss the opposite pair is capped at half the worst-case separation: σ(a) + σ(−a)
  = 1 makes the two records' gradients differ by exactly v/n at every θ.  Iterative training
  of logistic regression then starts at ``θ₀ = −10·y_c(u + v)`` (:data:`ORTHOGONAL_START`), the
  auditor's choice (the privacy claim holds for every start), which keeps both canaries
  misclassified, so each contributes a full-norm gradient every step: their difference
  has norm √2 of the worst case's 2 (Nasr et al. 2021 use such "Dirac" canaries);
* ``"lowest-variance"`` – the unit vector ``v`` minimising the mean
  squared projection ``(1/n)Σ(vᵀx_i)²`` of the training rows, i.e. the
  eigenvector of the smallest eigenvalue of ``XᵀX/n`` (uncentred: the model
  has no intercept other than the bias feature, so the second moment about 0 is
  what its Hessian sees).  Other records barely pull θ along ``v``, so the
  canary's influence is easiest to see.  Label ``canary_label`` (default +1);
* ``"random-unit"`` – a seeded uniformly random unit vector, label ``canary_label``;
* ``"mislabeled"`` – a real training record with its label flipped (``D'``
  replaces record ``k`` by itself with ``−y_k``).

For the first two, the replaced record ``k`` is a seeded choice among records
whose label equals the canary's (classification), so label-stratified steps of
a mechanism see the same label counts on ``D`` and ``D'``: those canaries test the
noise, not the preprocessing.  ``"mislabeled"`` changes a label, so it is the canary
that moves records under a label-stratified client split (``split=stratified``: more
than 50 records on Breast Cancer, ``tests/test_partition.py``) and audits that split's
effect; the distributed mechanisms certify that split by composing every client.

Scores (``score=``, :func:`canary_scores`): ``"margin"`` – ``y_c·f_θ(x_c)`` (``y_c θᵀx_c``
for the linear models); ``"loss"`` – the canary's loss ``ℓ(θ; x_c, y_c)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..numerics import streams
from ..erm import LazySolution
from ..exceptions import ParameterError
from ..mechanisms import Problem
from ..params import PARAMS, validate

__all__ = [
    "CANARIES",
    "NEIGHBOURING",
    "ORTHOGONAL_START",
    "SCORES",
    "Canary",
    "canary_scores",
    "make_canary",
    "neighbours",
    "replace_record",
    "resolve_canary",
    "subsample",
]

NEIGHBOURING = "replace-one"
#: the concrete canaries ("auto" picks one of them per mechanism, :func:`resolve_canary`)
CANARIES = tuple(c for c in PARAMS["canary"].constraint.values if c != "auto")
SCORES = ("margin", "loss")
#: the orthogonal pair's start: θ₀ = −ORTHOGONAL_START·y_c(u + v) (logistic regression)
ORTHOGONAL_START = 10.0


def _check(name: str, value: Any) -> Any:
    """Validate an audit parameter against its declaration in :data:`dpcore.params.PARAMS`."""
    return validate(name, value, "audit")


@dataclass(frozen=True)
class Canary:
    """The record that distinguishes ``D'`` from ``D``: it replaces row ``index``.

    ``anti`` (the opposite-pair canary): ``D`` has row ``index`` replaced too, by
    ``(anti_x, y)``, so the two neighbours pull θ in opposite directions.
    """

    kind: str
    x: np.ndarray  # (d,), ‖x‖ ≤ 1
    y: float
    index: int  # the row of D it replaces
    description: str
    anti_x: np.ndarray | None = None


def make_canary(dataset, canary: str = "lowest-variance", label: float = 1.0, seed: int = 0) -> Canary:
    """Build a canary for ``dataset`` (see the module docstring); seeded and deterministic.

    >>> from dpcore.datasets import load
    >>> ds = load("breast-cancer")
    >>> can = make_canary(ds, "lowest-variance", seed=0)
    >>> can.kind, can.y, round(float(np.linalg.norm(can.x)), 6)    # a unit vector with label +1
    ('lowest-variance', 1.0, 1.0)
    >>> make_canary(ds, "lowest-variance", seed=0).index == can.index   # the same seed, the same record
    True
    >>> flipped = make_canary(ds, "mislabeled", seed=0)
    >>> bool(flipped.y == -ds.y_train[flipped.index])   # a real record with its label flipped
    True
    """
    canary = _check("canary", canary)
    if canary == "auto":
        raise ParameterError("make_canary needs a concrete canary; 'auto' is resolved per mechanism by audit")
    X, y = np.asarray(dataset.X_train, float), np.asarray(dataset.y_train, float)
    n, d = X.shape
    classification = dataset.task == "classification"
    label = float(label)
    if classification and label not in (-1.0, 1.0):
        raise ParameterError(
            f"The canary label must be -1 or +1 for a classification task. Got {label!r} instead.")
    if not classification and not -1.0 <= label <= 1.0:
        raise ParameterError(
            f"The canary label must be in [-1, 1] for a regression task. Got {label!r} instead.")
    rng = np.random.default_rng([int(seed), streams.AUDIT_CANARY])
    if canary == "mislabeled":
        pool = np.flatnonzero(y != 0)
        k = int(rng.choice(pool if pool.size else np.arange(n)))
        x_c, y_c = X[k].copy(), -float(y[k])
        desc = (f"training record {k} with its label flipped ({y[k]:+g} → {y_c:+g}); "
                f"D' replaces record {k} by this copy")
        return Canary(canary, x_c, y_c, k, desc)
    pool = np.flatnonzero(y == label) if classification else np.arange(n)
    k = int(rng.choice(pool if pool.size else np.arange(n)))
    if canary in ("lowest-variance", "opposite-pair", "orthogonal-pair"):
        evals, vecs = np.linalg.eigh(X.T @ X / n)
        x_c = vecs[:, 0].copy()
        x_c *= np.sign(x_c[np.argmax(np.abs(x_c))])  # a fixed sign, for reproducibility
        if canary == "orthogonal-pair":
            if d < 2:
                raise ParameterError("the orthogonal pair needs at least 2 features")
            v = vecs[:, 1].copy()
            v *= np.sign(v[np.argmax(np.abs(v))])
            desc = (f"two records no training record resembles, along the two lowest-variance directions "
                    f"of the training features (eigenvalues {evals[0]:.3g} and {evals[1]:.3g} of XᵀX/n): "
                    f"D has u, D' the orthogonal v, both with label {label:+g}, replacing training record {k}")
            return Canary(canary, v, label, k, desc, anti_x=x_c)
        desc = (f"unit vector along the lowest-variance direction of the training features "
                f"(smallest eigenvalue {evals[0]:.3g} of XᵀX/n), label {label:+g}, replacing "
                f"training record {k}")
        if canary == "opposite-pair":
            desc = ("a pair of records no training record resembles: D has " + desc.replace(
                "unit vector", "the unit vector −v", 1).replace(", replacing", ", D' the unit vector +v "
                                                                 "with the same label; both replace", 1))
            return Canary(canary, x_c, label, k, desc, anti_x=-x_c)
    else:
        x_c = rng.standard_normal(d)
        x_c /= np.linalg.norm(x_c)
        desc = f"uniformly random unit vector (seeded), label {label:+g}, replacing training record {k}"
    return Canary(canary, x_c, label, k, desc)


def replace_record(dataset, index: int, x: np.ndarray, y: float):
    """A copy of ``dataset`` whose training row ``index`` is ``(x, y)`` (replace-one neighbour).

    >>> from dpcore.datasets import load
    >>> ds = load("breast-cancer")
    >>> other = replace_record(ds, 0, np.zeros(ds.X_train.shape[1]), -1.0)
    >>> other.n == ds.n, float(other.y_train[0]), bool(np.all(other.X_train[0] == 0))
    (True, -1.0, True)
    >>> bool(np.array_equal(other.X_train[1:], ds.X_train[1:]))   # every other row as it was
    True
    """
    X = np.array(dataset.X_train, dtype=float, copy=True)
    Y = np.array(dataset.y_train, dtype=float, copy=True)
    X[index], Y[index] = x, y
    X.setflags(write=False)
    Y.setflags(write=False)
    return dataclasses.replace(dataset, X_train=X, y_train=Y)


def subsample(dataset, rows: int, seed: int = 0):
    """A seeded random subsample of ``rows`` training rows (order kept), or the dataset itself.

    >>> from dpcore.datasets import load
    >>> ds = load("breast-cancer")
    >>> small = subsample(ds, 100, seed=0)
    >>> small.n, small.X_train.shape[1] == ds.X_train.shape[1], "subsample of 100" in small.notes[-1]
    (100, True, True)
    >>> bool(np.array_equal(small.X_train, subsample(ds, 100, seed=0).X_train))   # seeded
    True
    >>> subsample(ds, 10**6) is ds   # no more rows than asked for: the dataset itself
    True
    """
    if dataset.n <= rows:
        return dataset
    rng = np.random.default_rng([int(seed), streams.AUDIT_SUBSAMPLE])
    idx = np.sort(rng.choice(dataset.n, size=int(rows), replace=False))
    X, Y = dataset.X_train[idx], dataset.y_train[idx]
    X.setflags(write=False)
    Y.setflags(write=False)
    note = (f"audited on a seeded random subsample of {rows} of the {dataset.n} training rows "
            f"(seed {seed}); the certified ε refers to n = {rows}")
    return dataclasses.replace(dataset, X_train=X, y_train=Y, notes=tuple(dataset.notes) + (note,))


def canary_scores(model, theta: np.ndarray, canary: Canary, score: str) -> np.ndarray:
    """The score of each released θ (rows of ``theta``) on ``canary``: ``score`` is ``"margin"`` or
    ``"loss"`` (the module docstring); a diverged run scores ``−inf``.

    >>> from dpcore.datasets import load
    >>> from dpcore.models import make_model
    >>> ds = load("breast-cancer")
    >>> model, can = make_model("logreg", lam=1e-3), make_canary(ds, "lowest-variance")
    >>> theta = np.zeros((2, ds.X_train.shape[1]))   # two released θ, at the origin
    >>> canary_scores(model, theta, can, "margin").tolist()
    [0.0, 0.0]
    >>> np.round(canary_scores(model, theta, can, "loss"), 4).tolist()   # log 2 each
    [0.6931, 0.6931]
    >>> canary_scores(model, np.full((1, ds.X_train.shape[1]), np.nan), can, "margin").tolist()
    [-inf]
    """
    xc, yc = canary.x[None, :], np.array([canary.y])
    if score == "margin" and canary.kind == "orthogonal-pair":  # D' pushes v up, D pushes u up
        s = canary.y * (model.scores(theta, xc)[:, 0] - model.scores(theta, canary.anti_x[None, :])[:, 0])
    elif score == "margin":
        s = canary.y * model.scores(theta, xc)[:, 0]
    else:
        s = model.data_loss(theta, xc, yc)
    s = np.asarray(s, dtype=float)
    # A diverged run is one more outcome of the mechanism; map it to one fixed value.
    return np.where(np.isnan(s), -np.inf, s)

def resolve_canary(canary: str, mechanism) -> str:
    """``"auto"``: the orthogonal pair where training takes noisy gradient steps (its start keeps
    both canaries' gradients at full norm), the opposite pair where it does not (the released θ
    is a minimiser, which the opposite pair moves most).

    >>> from dpcore.mechanisms import get_mechanism
    >>> resolve_canary("auto", get_mechanism("gradient-dpgd")), resolve_canary("auto", get_mechanism("output-gaussian"))
    ('orthogonal-pair', 'opposite-pair')
    >>> resolve_canary("mislabeled", get_mechanism("gradient-dpgd"))   # a concrete canary is kept
    'mislabeled'
    """
    if canary != "auto":
        return canary
    return "orthogonal-pair" if mechanism.family in ("gradient", "distributed") else "opposite-pair"


def neighbours(problem: Problem, model, config, canary: str, label: float) -> tuple[Canary, Problem, Problem]:
    """The canary of ``problem``'s data and the two neighbouring problems ``(D, D')`` it makes.

    ``D'`` has the canary in place of record ``canary.index``; ``D`` is ``problem`` itself, or,
    for the pairs, has the canary's twin (``anti_x``) in that place.  The orthogonal pair of
    logistic regression starts both sides' iterative training at :data:`ORTHOGONAL_START`
    (its description says so).  ``config``: its ``seed`` seeds the canary, its ``model`` says
    whether the start applies.

    >>> from dpcore.experiments.run import RunSpec, load_problem
    >>> cfg = RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", epsilon=1.0, delta=1e-5)
    >>> problem = load_problem(cfg)
    >>> can, d, d_prime = neighbours(problem, problem.model, cfg, "orthogonal-pair", 1.0)
    >>> np.flatnonzero(np.any(d.X != d_prime.X, axis=1)).tolist() == [can.index]   # one record differs
    True
    >>> bool(np.array_equal(d.X[can.index], can.anti_x)), bool(np.array_equal(d_prime.X[can.index], can.x))
    (True, True)
    >>> bool(np.array_equal(d.theta_start, d_prime.theta_start)), "θ₀" in can.description   # one start
    (True, True)
    """
    can = make_canary(problem.dataset, canary, label, config.seed)
    ds_prime = replace_record(problem.dataset, can.index, can.x, can.y)
    problem_dp = Problem(dataset=ds_prime, model=model,
                         erm=LazySolution(model, ds_prime.X_train, ds_prime.y_train))
    problem_d = problem
    if can.anti_x is not None:
        ds0 = replace_record(problem.dataset, can.index, can.anti_x, can.y)
        problem_d = Problem(dataset=ds0, model=model, erm=LazySolution(model, ds0.X_train, ds0.y_train))
    if can.kind == "orthogonal-pair" and config.model == "logreg":
        start = -ORTHOGONAL_START * can.y * (can.x + can.anti_x)
        problem_d = dataclasses.replace(problem_d, theta_start=start)
        problem_dp = dataclasses.replace(problem_dp, theta_start=start)
        can = dataclasses.replace(can, description=can.description + (
            f"; iterative training starts at θ₀ = −{ORTHOGONAL_START:g}·y(u + v), the auditor's choice "
            "(the privacy claim holds for every start), which keeps both canaries misclassified"))
    return can, problem_d, problem_dp
