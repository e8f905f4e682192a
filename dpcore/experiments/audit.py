"""Privacy audit: an empirical lower bound on ε from a membership test (SPEC §5).

A certified ε is a proof; an audited ε is evidence.  The audit builds two
neighbouring training sets under the project's relation (replace-one, SPEC §1):

* ``D``  – the training data (or a seeded subsample of it, see ``max_rows``);
* ``D'`` – ``D`` with one record, index ``k``, replaced by a *canary*.

It runs the mechanism ``trials`` times on each (batched, in chunks), scores
every released θ by how much it "remembers" the canary, and turns the two
score samples into a statistical test "was the canary in the training set?".
For an (ε, δ)-DP mechanism every such test has false-positive and
false-negative rates with ``FPR + e^ε·FNR ≥ 1 − δ`` and ``FNR + e^ε·FPR ≥ 1 − δ``
(Kairouz, Oh & Viswanath 2015), so upper confidence bounds on the two rates give
a lower confidence bound on ε:

    ε_LB = max( ln((1 − δ − FNR_u)/FPR_u), ln((1 − δ − FPR_u)/FNR_u) ),  floored at 0.

Procedure (Jagielski, Ullman & Oprea 2020):

1. each side's runs are split in half; on the first halves the threshold and
   its direction ("canary present when the score is above / below t") are
   chosen to maximise the bound;
2. on the second halves the false positives (runs on ``D`` judged "canary
   present") and false negatives (runs on ``D'`` judged "absent") are counted;
3. one-sided Clopper–Pearson upper bounds at confidence ``1 − α/2`` each give
   ``FPR_u`` and ``FNR_u``; by the union bound both hold together with
   probability ≥ 1 − α, so ``P(ε_LB > ε_true) ≤ α``.  The threshold was chosen
   on independent runs, so the evaluation counts are honest binomials.

Canaries (``canary=``; ``"auto"``, the default, takes the orthogonal pair for mechanisms that
train by noisy gradient steps (the gradient and distributed families) and the opposite pair
for the others, whichever is stronger there):

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

Scores (``score=``): ``"margin"`` – ``y_c·f_θ(x_c)`` (``y_c θᵀx_c`` for the
linear models); ``"loss"`` – the canary's loss ``ℓ(θ; x_c, y_c)``.

Verdict.  An audit tests two claims: the target ε (what the calibration
promised) and the certified ε (what the noise that ran provably gives).  The
claim tested is the stronger (smaller) of the two:

* ``"claim not met"`` – ``ε_LB`` exceeds it; ``refuted`` names which claims
  (``"target"``, ``"certified"``) the evidence contradicts.  A refuted
  *certified* ε means a bug or an event of probability ≤ α;
* ``"not refuted"`` – otherwise; ``share_of_claim`` (ε_LB / claim) says how close
  the attack came.  An audit only ever gives a lower bound: it can refute a claim,
  never prove one, and a small share is no evidence either way (a thousand runs
  cannot tell ε = 1 from ε = 0.1 by the direct bound);
* ``"no guarantee claimed"`` – the non-private baseline.

Estimators.  The direct bound above assumes nothing.  Where the family of the
noise is known (white-box scores of Gaussian and Poisson-sampled Gaussian
mechanisms) sharper estimators from :mod:`dpcore.experiments.audit_bounds` are
added, each naming its assumption; the audited ε is the largest, each estimator
run at its declared share of α (``audit_bounds.ALPHA_SHARES``, a weighted Bonferroni
correction), so the maximum holds with confidence 1 − α.  Black-box
audits also report a Gaussian-assumption figure beside the direct bound, labelled
as such and not part of the audited ε (black-box scores are not exactly Gaussian).

References: Jagielski, Ullman & Oprea 2020, "Auditing Differentially Private
Machine Learning: How Private is Private SGD?" (NeurIPS), Alg. 2; Kairouz, Oh &
Viswanath 2015, Thm 2.1; Clopper & Pearson 1934.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import streams
from ..erm import LazySolution
from ..exceptions import ModelError, ParameterError, PrivacyWarning
from ..mechanisms import Problem, get_mechanism
from ..optim import BatchRNG
from ..params import PARAMS, validate
from ..privacy import certify
from .context import Context, in_context_pool
from .run import RunSpec, check_budget, delta_warning, load_problem, problem_data
from .audit_bounds import (
    ALPHA_SHARES,
    ASSUMPTIONS,
    Estimate,
    clopper_pearson_upper,
    effect_size_bound,
    gdp_epsilon_lower,
    pooled_error_bound,
    sampled_gaussian_bound,
)
from .whitebox import measure_shift, white_box_scores

__all__ = [
    "AuditResult",
    "Canary",
    "CANARIES",
    "SCORES",
    "VERDICTS",
    "audit",
    "make_canary",
    "resolve_canary",
    "replace_record",
    "subsample",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "choose_threshold",
    "MembershipTest",
    "membership_test",
    "verdict",
    "summary",
    "size_ceiling",
    "THREATS",
    "tradeoff_curve",
    "roc_points",
    "privacy_region",
]

NEIGHBOURING = "replace-one"
#: the concrete canaries ("auto" picks one of them per mechanism, :func:`resolve_canary`)
CANARIES = tuple(c for c in PARAMS["canary"].constraint.values if c != "auto")
THREATS = ("black-box", "white-box")
SCORES = ("margin", "loss")
NOT_REFUTED, NOT_MET, NO_GUARANTEE = ("not refuted", "claim not met", "no guarantee claimed")
VERDICTS = (NOT_REFUTED, NOT_MET, NO_GUARANTEE)
DEFAULT_CHUNK = 250
#: run r on side s of audit seed S uses seed (2S + s)·RUN_SEED_STRIDE + r (trials ≤ the stride)
RUN_SEED_STRIDE = 2**20
#: the orthogonal pair's start: θ₀ = −ORTHOGONAL_START·y_c(u + v) (logistic regression)
ORTHOGONAL_START = 10.0


def _check(name: str, value: Any) -> Any:
    """Validate an audit parameter against its declaration in :data:`dpcore.params.PARAMS`."""
    return validate(name, value, "audit")


# ---------------------------------------------------------------------------
# pure statistics


def epsilon_lower_bound(fp, n0, fn, n1, delta: float, alpha: float):
    """ε lower bound at confidence 1 − α from a membership test's error counts.

    ``fp`` of ``n0`` runs without the canary were judged "canary present",
    ``fn`` of ``n1`` runs with it were judged "absent".  Each rate gets a
    Clopper–Pearson upper bound at confidence ``1 − α/2`` (union bound: both
    hold together with probability ≥ 1 − α); then

        ε_LB = max(ln((1 − δ − FNR_u)/FPR_u), ln((1 − δ − FPR_u)/FNR_u)),

    floored at 0.  It never grows with fp or fn.  Works elementwise on arrays.

    >>> round(epsilon_lower_bound(0, 500, 0, 500, 1e-5, 0.05), 4)   # a perfect test
    4.9056
    >>> epsilon_lower_bound(250, 500, 250, 500, 1e-5, 0.05)         # a coin flip
    0.0

    References: Kairouz, Oh & Viswanath 2015, Thm 2.1; Jagielski et al. 2020, Alg. 2.
    """
    alpha = _check("alpha", alpha)
    if not 0.0 <= delta < 1.0:  # a statistic: δ = 0 (pure DP) is allowed here
        raise ParameterError(f"delta must be in [0, 1); got {delta!r}")
    conf = 1.0 - alpha / 2.0
    eps = _epsilon_from_uppers(np.asarray(clopper_pearson_upper(fp, n0, conf)),
                               np.asarray(clopper_pearson_upper(fn, n1, conf)), delta)
    return float(eps) if eps.ndim == 0 else eps


def _epsilon_from_uppers(fpr_u: np.ndarray, fnr_u: np.ndarray, delta: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1.0 - delta - fnr_u, 0.0) / fpr_u)
        b = np.log(np.maximum(1.0 - delta - fpr_u, 0.0) / fnr_u)
    return np.maximum(np.maximum(a, b), 0.0)


def choose_threshold(s0: np.ndarray, s1: np.ndarray, delta: float, alpha: float) -> tuple[float, str]:
    """Threshold and direction maximising :func:`epsilon_lower_bound` on (s0, s1).

    ``s0``: scores of runs without the canary, ``s1``: with it.  Candidates are
    every observed score ``t`` in both directions: "above" judges the canary
    present when ``score > t``, "below" when ``score < t``.  Ties in the bound
    go to the smaller balanced error ``FPR + FNR``.
    """
    s0, s1 = np.asarray(s0, float), np.asarray(s1, float)
    alpha = _check("alpha", alpha)
    # Counts are integers: bound every possible count once, then look them up.
    conf = 1.0 - alpha / 2.0
    up0 = np.asarray(clopper_pearson_upper(np.arange(s0.size + 1), s0.size, conf))
    up1 = np.asarray(clopper_pearson_upper(np.arange(s1.size + 1), s1.size, conf))
    best: tuple | None = None
    for direction, sign in (("above", 1.0), ("below", -1.0)):
        a0, a1 = np.sort(sign * s0), np.sort(sign * s1)
        cand = np.unique(np.concatenate([a0, a1]))
        fp = a0.size - np.searchsorted(a0, cand, side="right")  # runs on D with score > t
        fn = np.searchsorted(a1, cand, side="right")  # runs on D' with score ≤ t
        bound = _epsilon_from_uppers(up0[fp], up1[fn], delta)
        err = fp / a0.size + fn / a1.size
        i = np.lexsort((err, -bound))[0]
        key = (float(bound[i]), -float(err[i]))
        if best is None or key > best[0]:
            best = (key, float(sign * cand[i]), direction)
    return best[1], best[2]


def _judge(scores: np.ndarray, threshold: float, direction: str) -> np.ndarray:
    """True where the test says "canary present"."""
    return scores > threshold if direction == "above" else scores < threshold


@dataclass(frozen=True)
class MembershipTest:
    """Outcome of the split-half test on two score samples (see :func:`membership_test`)."""

    threshold: float
    direction: str  # "above": canary judged present when score > threshold; "below": <
    false_positives: int
    n_without: int
    false_negatives: int
    n_with: int
    fpr_upper: float
    fnr_upper: float
    epsilon_lower_bound: float


def membership_test(s0, s1, delta: float, alpha: float) -> MembershipTest:
    """Split-half membership test on scores without (``s0``) and with (``s1``) the canary.

    The first ``⌊N/2⌋`` scores of each sample choose the threshold
    (:func:`choose_threshold`); the rest are counted and bounded with
    :func:`epsilon_lower_bound`.  Runs are i.i.d., so a fixed split is a random one.

    >>> t = membership_test(np.zeros(1000), np.ones(1000), 0.0, 0.05)
    >>> (t.false_positives, t.false_negatives, round(t.epsilon_lower_bound, 4))
    (0, 0, 4.9056)
    """
    s0, s1 = np.asarray(s0, float), np.asarray(s1, float)
    h0, h1 = s0.size // 2, s1.size // 2
    if min(h0, h1) < 1:
        raise ParameterError("the membership test needs at least 2 scores on each side")
    threshold, direction = choose_threshold(s0[:h0], s1[:h1], delta, alpha)
    e0, e1 = s0[h0:], s1[h1:]
    fp = int(np.sum(_judge(e0, threshold, direction)))
    fn = int(np.sum(~_judge(e1, threshold, direction)))
    conf = 1.0 - alpha / 2.0
    return MembershipTest(
        threshold=threshold, direction=direction,
        false_positives=fp, n_without=e0.size, false_negatives=fn, n_with=e1.size,
        fpr_upper=clopper_pearson_upper(fp, e0.size, conf),
        fnr_upper=clopper_pearson_upper(fn, e1.size, conf),
        epsilon_lower_bound=epsilon_lower_bound(fp, e0.size, fn, e1.size, delta, alpha),
    )


def tradeoff_curve(profile, fpr: np.ndarray) -> np.ndarray:
    """The smallest false-negative rate any test can have at each false-positive rate, for a
    mechanism that is (ε_i, δ_i)-DP for every pair of ``profile`` (its privacy profile):
    ``β(α) = max(0, max_i 1 − δ_i − e^{ε_i}α, max_i e^{−ε_i}(1 − δ_i − α))``.

    >>> float(tradeoff_curve([(0.0, 0.0)], np.array([0.3]))[0])   # ε = 0: no test beats chance
    0.7

    References: Kairouz, Oh & Viswanath 2015, Thm 2.1; Dong, Roth & Su 2019, Prop. 2.12.
    """
    fpr = np.asarray(fpr, dtype=float)
    beta = np.zeros_like(fpr)
    for eps, dlt in profile:
        if not math.isfinite(eps):
            continue
        beta = np.maximum(beta, 1.0 - dlt - math.exp(min(eps, 700)) * fpr)
        beta = np.maximum(beta, math.exp(-eps) * (1.0 - dlt - fpr))
    return np.clip(beta, 0.0, 1.0)


def roc_points(s0, s1) -> tuple[np.ndarray, np.ndarray]:
    """Empirical (FPR, TPR) of "canary present when score > t" over every threshold t."""
    s0, s1 = np.sort(np.asarray(s0, float)), np.sort(np.asarray(s1, float))
    t = np.unique(np.concatenate([[-np.inf], s0, s1]))
    fpr = 1.0 - np.searchsorted(s0, t, side="right") / s0.size
    tpr = 1.0 - np.searchsorted(s1, t, side="right") / s1.size
    return fpr, tpr


def verdict(epsilon_lb: float, epsilon_target: float, epsilon_certified: float,
            private: bool = True) -> tuple[str, tuple[str, ...]]:
    """(verdict, refuted claims) for an audit; see the module docstring.

    >>> verdict(3.0, 1.0, 2.4)
    ('claim not met', ('target', 'certified'))
    >>> verdict(1.5, 1.0, 2.4)
    ('claim not met', ('target',))
    >>> verdict(0.6, 1.0, 1.0)
    ('not refuted', ())
    >>> verdict(4.0, math.inf, math.inf, private=False)
    ('no guarantee claimed', ())
    """
    if not private:
        return NO_GUARANTEE, ()
    refuted = tuple(name for name, eps in (("target", epsilon_target), ("certified", epsilon_certified))
                    if epsilon_lb > eps)
    if refuted:
        return NOT_MET, refuted
    return NOT_REFUTED, ()


def size_ceiling(trials: int, delta: float, alpha: float) -> float:
    """The largest direct bound an audit of ``trials`` runs a side can give (a perfect test
    on the counted halves): beyond it, only more runs can show more.

    >>> round(size_ceiling(1000, 1e-5, 0.05), 4)
    4.9056
    """
    half = int(trials) - int(trials) // 2
    return epsilon_lower_bound(0, half, 0, half, delta, alpha)


def summary(rec: dict[str, Any]) -> str:
    """The one line a student reads: which claim the audit refuted, or how close it came.

    ``rec`` is :meth:`AuditResult.to_dict`.  Infinite ε may be ``inf`` or ``None`` (JSON)."""
    def e(v):
        return "∞" if v is None or v == math.inf else f"{v:.3g}"

    lb = rec["epsilon_lower_bound"]
    shown = f"ε ≥ {e(lb)}"
    if rec.get("at_size_ceiling"):
        shown = (f"ε ≥ {e(lb)}, the ceiling of an audit of {rec['trials']} runs a side "
                 "(more runs could show more)")
    if rec["verdict"] == NO_GUARANTEE:
        return f"No guarantee claimed; the audit shows {shown}."
    target, certified = rec["epsilon_target"], rec["epsilon_certified"]
    if rec["verdict"] == NOT_MET:
        names = {"target": f"the target ε = {e(target)}", "certified": f"the certified ε = {e(certified)}"}
        which = " and ".join(names[r] for r in rec["refuted"])
        line = f"Refuted: {which}. The audit shows {shown}."
        findings = (rec.get("shift_check") or {}).get("findings")
        if findings:
            line += (" The end-to-end check measured the implementation doing more than its plan declares, "
                     "so the certificate does not apply to the noise that ran.")
        elif "certified" in rec["refuted"]:
            line += " A refuted certificate means a bug, or bad luck of probability ≤ α."
        return line
    claim = min(v for v in (target, certified) if v is not None)
    share = rec.get("share_of_claim")
    pct = "" if share is None else f" ({100 * share:.0f} % of the claim ε = {e(claim)})"
    return f"Not refuted{pct}: the audit shows {shown}. An audit can refute a claim, never prove one."


# ---------------------------------------------------------------------------
# neighbouring datasets


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
    """Build a canary for ``dataset`` (see the module docstring); seeded and deterministic."""
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
    """A copy of ``dataset`` whose training row ``index`` is ``(x, y)`` (replace-one neighbour)."""
    X = np.array(dataset.X_train, dtype=float, copy=True)
    Y = np.array(dataset.y_train, dtype=float, copy=True)
    X[index], Y[index] = x, y
    X.setflags(write=False)
    Y.setflags(write=False)
    return dataclasses.replace(dataset, X_train=X, y_train=Y)


def subsample(dataset, rows: int, seed: int = 0):
    """A seeded random subsample of ``rows`` training rows (order kept), or the dataset itself."""
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


def _scores(model, theta: np.ndarray, canary: Canary, score: str) -> np.ndarray:
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


# ---------------------------------------------------------------------------
# the audit


@dataclass(frozen=True)
class AuditResult:
    """Everything an audit found; the UI formats these, it does not compute.

    ``scores_without`` / ``scores_with``: the score of every run on ``D`` /
    ``D'`` (first halves chose the threshold, second halves were counted).
    ``false_positives`` of ``n_without`` and ``false_negatives`` of ``n_with``
    are the evaluation counts; ``fpr_upper``/``fnr_upper`` their
    Clopper–Pearson bounds at confidence ``1 − α/2``.
    """

    config: RunSpec
    mechanism_name: str
    dataset_name: str
    n_train: int
    d: int
    epsilon_target: float
    epsilon_certified: float
    epsilon_lower_bound: float
    verdict: str
    refuted: tuple[str, ...]
    delta: float  # δ used in the bound (0 for an (ε, 0) mechanism)
    alpha: float
    trials: int
    score: str
    canary: str
    canary_description: str
    canary_index: int
    canary_label: float
    threshold: float
    direction: str  # "above": canary judged present when score > threshold; "below": <
    false_positives: int
    n_without: int
    false_negatives: int
    n_with: int
    fpr_upper: float
    fnr_upper: float
    scores_without: np.ndarray  # (trials,)
    scores_with: np.ndarray  # (trials,)
    sigma: float | None
    seconds: float
    note: str | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    threat: str = "black-box"
    epsilon_lower_bound_direct: float = 0.0
    epsilon_lower_bound_gdp: float | None = None  # only where the scores are Gaussian shifts
    mu_lower_bound: float | None = None
    confidence: float = 0.95
    region: dict[str, Any] = field(default_factory=dict)  # the certified privacy region, drawn
    # every estimator's bound with its assumption (audit_bounds.Estimate.to_dict); "headline":
    # whether it enters epsilon_lower_bound (the maximum, Bonferroni-corrected)
    estimates: tuple[dict[str, Any], ...] = ()
    share_of_claim: float | None = None  # ε_LB / min(target, certified)
    epsilon_attack_ceiling: float | None = None  # white-box: the most the attack's view can show
    size_ceiling: float = math.inf  # the largest direct bound this many runs can give
    at_size_ceiling: bool = False
    epsilon_gaussian_assumption: float | None = None  # black-box: labelled, not in the headline
    shift_check: dict[str, Any] | None = None  # end-to-end: what the real neighbours moved

    def roc(self, points: int = 201) -> dict[str, list[float]]:
        """The attack's empirical ROC on all runs (at most ``points`` points)."""
        fpr, tpr = roc_points(self.scores_without, self.scores_with)
        keep = np.unique(np.linspace(0, fpr.size - 1, min(points, fpr.size)).round().astype(int))
        return {"fpr": fpr[keep].tolist(), "tpr": tpr[keep].tolist()}

    def to_dict(self, scores: bool = True) -> dict[str, Any]:
        """The command line's JSON record (SPEC §7); infinite ε become ``null`` in ``jsonutil.dumps``."""
        out: dict[str, Any] = {
            "dataset": self.config.dataset,
            "dataset_name": self.dataset_name,
            "model": self.config.model,
            "mechanism": self.config.mechanism,
            "mechanism_name": self.mechanism_name,
            "calibration": self.config.calibration,
            "epsilon_target": self.epsilon_target,
            "epsilon_certified": self.epsilon_certified,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "verdict": self.verdict,
            "refuted": list(self.refuted),
            "delta": self.delta,
            "alpha": self.alpha,
            "trials": self.trials,
            "score": self.score,
            "canary": self.canary,
            "canary_description": self.canary_description,
            "canary_index": self.canary_index,
            "canary_label": self.canary_label,
            "neighbouring": NEIGHBOURING,
            "threshold": self.threshold,
            "direction": self.direction,
            "false_positives": self.false_positives,
            "n_without": self.n_without,
            "false_negatives": self.false_negatives,
            "n_with": self.n_with,
            "fpr_upper": self.fpr_upper,
            "fnr_upper": self.fnr_upper,
            "n_train": self.n_train,
            "d": self.d,
            "sigma": self.sigma,
            "seconds": self.seconds,
            "note": self.note,
            "warnings": list(self.warnings),
            "threat": self.threat,
            "epsilon_lower_bound_direct": self.epsilon_lower_bound_direct,
            "epsilon_lower_bound_gdp": self.epsilon_lower_bound_gdp,
            "mu_lower_bound": self.mu_lower_bound,
            "confidence": self.confidence,
            "region": self.region,
            "estimates": [dict(e) for e in self.estimates],
            "share_of_claim": self.share_of_claim,
            "epsilon_attack_ceiling": self.epsilon_attack_ceiling,
            "size_ceiling": self.size_ceiling,
            "at_size_ceiling": self.at_size_ceiling,
            "epsilon_gaussian_assumption": self.epsilon_gaussian_assumption,
            "shift_check": self.shift_check,
            "roc": self.roc(),
            "config": self.config.to_dict(),
        }
        if scores:
            out["scores"] = {"without_canary": [float(v) for v in self.scores_without],
                             "with_canary": [float(v) for v in self.scores_with]}
        return out


def _run_seeds(seed: int, side: int, trials: int) -> np.ndarray:
    """Run r on side s (0: D, 1: D') of audit seed S uses seed (2S + s)·2²⁰ + r.

    Disjoint between the two sides and between audits with different seeds, whatever
    their sizes (a larger audit with the same seed extends a smaller one).
    """
    if not 0 < int(trials) <= RUN_SEED_STRIDE:  # pragma: no cover - PARAMS caps trials below
        raise ParameterError(f"at most {RUN_SEED_STRIDE} runs a side")
    return (2 * int(seed) + side) * RUN_SEED_STRIDE + np.arange(int(trials))


def privacy_region(plan, epsilon_target: float, delta: float, private: bool = True,
                   points: int = 101) -> dict[str, Any]:
    """The region no attack can enter: at each false-positive rate α, the largest true-positive
    rate ``1 − β(α)`` that the certified guarantee (the plan's privacy profile over δ) and the
    target (ε, δ) allow.  An infinite guarantee leaves every point allowed (the region is empty)."""
    fpr = np.concatenate([[0.0], np.geomspace(1e-4, 1.0, points - 1)])
    out: dict[str, Any] = {"fpr": fpr.tolist()}
    if not private:
        out.update(tpr_max_certified=[1.0] * fpr.size, tpr_max_target=None,
                   note="no guarantee: every (FPR, TPR) is possible, the region is empty")
        return out
    deltas = sorted({*np.geomspace(1e-10, 0.5, 16).tolist(), float(delta)})
    profile = [(certify(plan, d), d) for d in deltas]
    if all(math.isinf(e) for e, _ in profile):
        out["tpr_max_certified"] = [1.0] * fpr.size
        out["note"] = "certified ε = ∞: no guarantee, so nothing is excluded (the region is empty)"
    else:
        out["tpr_max_certified"] = (1.0 - tradeoff_curve(profile, fpr)).tolist()
        out["note"] = ("above the certified curve no attack can go (with the certified guarantee); above "
                       "the target curve, none if the target were met. The attack's curve is measured on "
                       "finitely many runs, so it may cross a curve by chance; the audited ε allows for that")
    out["tpr_max_target"] = (1.0 - tradeoff_curve([(epsilon_target, delta)], fpr)).tolist()
    return out


def resolve_canary(canary: str, mechanism) -> str:
    """``"auto"``: the orthogonal pair where training takes noisy gradient steps (its start keeps
    both canaries' gradients at full norm), the opposite pair where it does not (the released θ
    is a minimiser, which the opposite pair moves most)."""
    if canary != "auto":
        return canary
    return "orthogonal-pair" if mechanism.family in ("gradient", "distributed") else "opposite-pair"


@in_context_pool
def audit(
    config: RunSpec,
    trials: int,
    alpha: float = 0.05,
    canary: str = "auto",
    score: str = "margin",
    max_rows: int | None = 5000,
    progress: Callable[[int, int], None] | None = None,
    *,
    threat: str = "black-box",
    canary_label: float = 1.0,
    chunk_size: int = DEFAULT_CHUNK,
    dataset=None,
    ctx: Context | None = None,
    end_to_end: bool = False,
) -> AuditResult:
    """Audit one configuration: ``trials`` runs on ``D`` and on ``D'``, a lower bound on ε.

    ``config`` names the dataset, model, mechanism and every setting as for
    :func:`dpcore.experiments.run.run` (its ``repeats`` is ignored; ``seed`` seeds
    the canary, the subsample and the runs).  Runs go through the mechanism in
    batched chunks of ``chunk_size``; ``progress(done, total)`` is called before
    the first and after every chunk, with ``total = 2·trials``.  With more than
    ``max_rows`` training rows the audit runs on a seeded random subsample of
    that many (``note`` says so).  ``dataset``: a user's own data in place of
    ``config.dataset`` (as for :func:`dpcore.experiments.run.run`).  ``ctx``: where
    the full data's exact solution comes from (its store; by default the process's :func:`~dpcore.experiments.context.default_context`).

    ``threat="black-box"`` scores the released model on the canary;
    ``"white-box"`` scores every release along the way (:mod:`dpcore.experiments.whitebox`).
    Two estimators: the direct (ε, δ) bound from Clopper–Pearson rates and, where
    the two score distributions are Gaussian shifts (white-box audits of
    Gaussian mechanisms), the Gaussian-DP fit; with both, each runs at α/2 so the
    reported maximum holds with confidence 1 − α.  See the module docstring.

    ``end_to_end=True`` (white-box, noisy-gradient mechanisms): first run the real mechanism
    on a real neighbouring pair (the opposite pair) with common random numbers and measure
    what the record moves the first release, and how often it is sampled
    (:func:`dpcore.experiments.whitebox.measure_shift`); a shift above the declared sensitivity
    or a sampling rate above the declared one refutes the certificate, and the runs are then
    scored with the measured shift, so a bug in clipping, the sensitivity or the sampler shows.

    References: Jagielski, Ullman & Oprea 2020, Alg. 2; Nasr et al. 2023.
    """
    t_start = time.perf_counter()
    if not isinstance(config, RunSpec):
        raise ParameterError(f"audit needs a dpcore.experiments.run.RunSpec; got {type(config).__name__}")
    trials = _check("trials", trials)
    alpha = _check("alpha", alpha)
    canary = _check("canary", canary)
    score = _check("score", score)
    threat = _check("threat", threat)
    chunk_size = _check("chunk_size", chunk_size)
    if max_rows is not None:
        max_rows = _check("max_rows", max_rows)
    if not isinstance(end_to_end, bool):
        raise ParameterError(f"end_to_end must be True or False; got {end_to_end!r}")
    if end_to_end and threat != "white-box":
        raise ParameterError("the end-to-end check is a white-box audit: use threat='white-box'")
    if progress is not None and not callable(progress):
        raise ParameterError("progress must be a callable progress(done, total) or None")

    mechanism = get_mechanism(config.mechanism)
    canary = resolve_canary(canary, mechanism)
    data, model = problem_data(config, dataset)
    note = None
    if max_rows is not None and data.n > max_rows:
        # the full data's exact ERM is never needed (for an MLP on Adult it takes minutes)
        ds = subsample(data, max_rows, config.seed)
        note = ds.notes[-1]
        problem_d = Problem(dataset=ds, model=model, erm=LazySolution(model, ds.X_train, ds.y_train))
    else:
        problem_d = load_problem(config, dataset, ctx)
    mechanism.check(problem_d, config)
    # every run of both sides is trained, a chunk at a time: refuse what would not fit or finish
    check_budget(dataclasses.replace(config, repeats=min(chunk_size, trials)), problem_d.dataset, model, mechanism,
                 runs=2 * trials, what="the iterations or the trials")
    if threat == "white-box":
        can = None
        problems = (problem_d,)
    else:
        can = make_canary(problem_d.dataset, canary, canary_label, config.seed)
        ds_prime = replace_record(problem_d.dataset, can.index, can.x, can.y)
        problem_dp = Problem(dataset=ds_prime, model=model,
                             erm=LazySolution(model, ds_prime.X_train, ds_prime.y_train))
        if can.anti_x is not None:
            ds0 = replace_record(problem_d.dataset, can.index, can.anti_x, can.y)
            problem_d = Problem(dataset=ds0, model=model, erm=LazySolution(model, ds0.X_train, ds0.y_train))
        if can.kind == "orthogonal-pair" and config.model == "logreg":
            start = -ORTHOGONAL_START * can.y * (can.x + can.anti_x)
            problem_d = dataclasses.replace(problem_d, theta_start=start)
            problem_dp = dataclasses.replace(problem_dp, theta_start=start)
            can = dataclasses.replace(can, description=can.description + (
                f"; iterative training starts at θ₀ = −{ORTHOGONAL_START:g}·y(u + v), the auditor's choice "
                "(the privacy claim holds for every start), which keeps both canaries misclassified"))
        mechanism.check(problem_dp, config)
        problems = (problem_d, problem_dp)

    caught: list[str] = []
    message = delta_warning(config.delta, problem_d.n)
    if mechanism.private and message:
        caught.append(message)
    total = 2 * trials
    done = 0
    if progress is not None:
        progress(done, total)
    seeds = (_run_seeds(config.seed, 0, trials), _run_seeds(config.seed, 1, trials))
    scores = (np.empty(trials), np.empty(trials))
    gauss = (np.empty(trials), np.empty(trials))  # white-box: scores that are Gaussian shifts
    first = mechanism.run(problem_d, config, BatchRNG([int(seeds[0][0])]))
    eps_certified, sigma, plan = first.certified(config.delta)[0], first.sigma, first.plan
    gaussian_scores, sampled, ceiling_mu = False, None, None
    shift = None
    if end_to_end:
        shift = _measure_shift(mechanism, problem_d, config, seeds[0][: min(trials, 2000)].tolist(), alpha)
        for finding in shift.findings():
            caught.append("end-to-end check: " + finding)
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always", PrivacyWarning)
        for start in range(0, trials, chunk_size):
            stop = min(trials, start + chunk_size)
            if threat == "white-box":
                wb = white_box_scores(mechanism, problem_d, config, seeds[0][start:stop].tolist(),
                                      seeds[1][start:stop].tolist(), seed=config.seed * 100_003 + start,
                                      shift=shift)
                scores[0][start:stop], scores[1][start:stop] = wb.without, wb.with_
                if wb.gaussian is not None:
                    for side in (0, 1):
                        gauss[side][start:stop] = wb.gaussian[side]
                description, gaussian_scores = wb.description, wb.gaussian is not None
                sampled, ceiling_mu = wb.sampled, wb.ceiling_mu
                done += 2 * (stop - start)
                if progress is not None:
                    progress(done, total)
                continue
            for side, problem in enumerate(problems):
                out = mechanism.run(problem, config, BatchRNG(seeds[side][start:stop].tolist()))
                theta = np.asarray(out.theta, dtype=float)
                if theta.shape[0] != stop - start:
                    raise ModelError(f"mechanism {mechanism.id!r} returned {theta.shape[0]} runs "
                                     f"for {stop - start} seeds")
                scores[side][start:stop] = _scores(model, theta, can, score)
                done += stop - start
                if progress is not None:
                    progress(done, total)
    for w in wlist:
        if issubclass(w.category, PrivacyWarning):
            if str(w.message) not in caught:
                caught.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)

    delta = 0.0 if mechanism.notion == "(ε, 0)" else float(config.delta)
    s0, s1 = scores
    gdp = gaussian_scores and delta > 0  # the two score distributions are Gaussian shifts
    fit_sampled = sampled is not None and delta > 0  # Poisson-sampled Gaussian sums
    share = ALPHA_SHARES["gaussian" if gdp else "sampled-gaussian" if fit_sampled else "other"]
    a = alpha * share["direct"]
    test = membership_test(s0, s1, delta, a)
    estimates = [Estimate("direct", test.epsilon_lower_bound, a, ASSUMPTIONS["direct"], None,
                          f"{test.false_positives} false positives of {test.n_without}, "
                          f"{test.false_negatives} false negatives of {test.n_with}")]
    if gdp:  # threshold 0: the log-likelihood-ratio scores are symmetric about it
        g0, g1 = gauss
        fp, fn = int(np.sum(g0 > 0.0)), int(np.sum(g1 <= 0.0))
        estimates.append(pooled_error_bound(fp, g0.size, fn, g1.size, delta, alpha * share["pooled-error"]))
        estimates.append(effect_size_bound(g0, g1, delta, alpha * share["effect-size"]))
    if fit_sampled:
        estimates.append(sampled_gaussian_bound(s0, s1, sampled[2], sampled[0], sampled[1], delta,
                                                alpha * share["sampled-gaussian"], seed=config.seed))
    assumed = None
    if threat == "black-box" and delta > 0 and mechanism.private:
        assumed = _gaussian_assumption(s0, s1, delta, alpha)
    records = [dict(e.to_dict(), headline=True) for e in estimates] + [
        dict(e.to_dict(), headline=False) for e in (assumed or ())]
    best = max(estimates, key=lambda e: e.epsilon)
    gaussian_best = max((e for e in estimates if e.name != "direct"), key=lambda e: e.epsilon, default=None)
    eps_target = float(config.epsilon) if mechanism.private else math.inf
    eps_lb = best.epsilon
    v, refuted = verdict(eps_lb, eps_target, eps_certified, mechanism.private)
    if shift is not None and shift.findings():  # the certificate's premise is measured false
        v, refuted = NOT_MET, tuple(dict.fromkeys(refuted + ("certified",)))
    claim = min(eps_target, eps_certified)
    ceiling = size_ceiling(trials, delta, a)
    if eps_lb > eps_certified:
        caught.append("the audited lower bound exceeds the certified ε: either the proof or its "
                      f"implementation is wrong, or this is an event of probability ≤ α = {alpha:g}")
    for arr in scores:
        arr.setflags(write=False)
    if can is None:
        can_kind, can_desc, can_index, can_label = "white-box", description, -1, float("nan")
    else:
        can_kind, can_desc, can_index, can_label = canary, can.description, can.index, can.y
    return AuditResult(
        config=config,
        mechanism_name=mechanism.name,
        dataset_name=problem_d.dataset.name,
        n_train=problem_d.n,
        d=problem_d.d,
        epsilon_target=eps_target,
        epsilon_certified=eps_certified,
        epsilon_lower_bound=eps_lb,
        verdict=v,
        refuted=refuted,
        delta=delta,
        alpha=alpha,
        trials=trials,
        score=score if threat == "black-box" else "log-likelihood ratio",
        canary=can_kind,
        canary_description=can_desc,
        canary_index=can_index,
        canary_label=can_label,
        threshold=test.threshold,
        direction=test.direction,
        false_positives=test.false_positives,
        n_without=test.n_without,
        false_negatives=test.false_negatives,
        n_with=test.n_with,
        fpr_upper=test.fpr_upper,
        fnr_upper=test.fnr_upper,
        scores_without=s0,
        scores_with=s1,
        sigma=sigma,
        seconds=time.perf_counter() - t_start,
        note=note,
        warnings=tuple(caught),
        threat=threat,
        epsilon_lower_bound_direct=test.epsilon_lower_bound,
        epsilon_lower_bound_gdp=gaussian_best.epsilon if gaussian_best else None,
        mu_lower_bound=gaussian_best.mu if gaussian_best else None,
        confidence=1.0 - alpha,
        region=privacy_region(plan, eps_target, float(config.delta), mechanism.private),
        estimates=tuple(records),
        share_of_claim=eps_lb / claim if mechanism.private and math.isfinite(claim) and claim > 0 else None,
        epsilon_attack_ceiling=(gdp_epsilon_lower(ceiling_mu, delta) if ceiling_mu is not None and delta > 0
                                else None),
        size_ceiling=ceiling,
        at_size_ceiling=best.name == "direct" and eps_lb >= ceiling * (1 - 1e-9),
        epsilon_gaussian_assumption=max((e.epsilon for e in assumed), default=None) if assumed else None,
        shift_check=None if shift is None else shift.to_dict(),
    )


def _measure_shift(mechanism, problem, config: RunSpec, seeds: list[int], alpha: float):
    """The end-to-end measurement on the opposite pair (one-step runs: the first release of a
    T-step run is the same computation, and the noise cancels between the two sides)."""
    if mechanism.family != "gradient":
        raise ParameterError(f"the end-to-end check runs on noisy-gradient mechanisms; {mechanism.id} "
                             "releases no gradient steps")
    can = make_canary(problem.dataset, "opposite-pair", 1.0, config.seed)
    pair = []
    for x in (can.anti_x, can.x):
        ds = replace_record(problem.dataset, can.index, x, can.y)
        pair.append(dataclasses.replace(problem, dataset=ds, erm=LazySolution(problem.model, ds.X_train,
                                                                               ds.y_train)))
    one_step = dataclasses.replace(config, iterations=1)
    shift = measure_shift(mechanism, pair[0], pair[1], one_step, seeds, alpha)
    if shift is None:
        raise ParameterError(f"the end-to-end check cannot read {mechanism.id}'s releases one step at a time")
    return shift


def _gaussian_assumption(s0: np.ndarray, s1: np.ndarray, delta: float, alpha: float) -> tuple:
    """Black-box: what the runs would show *if* the attack's trade-off were Gaussian — the
    pooled error at a threshold chosen on the first halves (counted on the second) and the
    effect size of the scores, each at α/2.  Reported beside the direct bound, labelled; never
    part of the audited ε (black-box scores are not exactly Gaussian)."""
    a = alpha / 2
    h0, h1 = s0.size // 2, s1.size // 2
    e0, e1 = s0[h0:], s1[h1:]
    best = None
    for direction, sign in (("above", 1.0), ("below", -1.0)):
        a0, a1 = np.sort(sign * s0[:h0]), np.sort(sign * s1[:h1])
        cand = np.unique(np.concatenate([a0, a1]))
        err = (a0.size - np.searchsorted(a0, cand, side="right")) + np.searchsorted(a1, cand, side="right")
        i = int(np.argmin(err))
        if best is None or err[i] < best[0]:
            best = (int(err[i]), float(sign * cand[i]), direction)
    _, threshold, direction = best
    n = min(e0.size, e1.size)
    e0, e1 = e0[:n], e1[:n]
    fp = int(np.sum(_judge(e0, threshold, direction)))
    fn = int(np.sum(~_judge(e1, threshold, direction)))
    sign = 1.0 if direction == "above" else -1.0
    return (pooled_error_bound(fp, n, fn, n, delta, a), effect_size_bound(sign * s0, sign * s1, delta, a))
