"""Auditing with one training run (Steinke, Nasr & Jagielski 2023).

The many-runs audit (:mod:`dpcore.audit.core`) trains thousands of models.  Here one
training run carries ``m`` canaries at once:

* the training data get ``m`` extra feature columns that no training record uses (their
  values are 0), and ``m`` extra records, one per column j: the canary ``(+e_j, +1)`` when
  canary j is *in*, the filler ``(−e_j, +1)`` when it is *out*.  Each canary is in with
  probability ½, independently.  In and out differ in one record, so each canary's
  membership is a replace-one change and the mechanism's own guarantee covers it;
* the mechanism trains once (its certified ε is for these n + m records);
* each canary is scored by the released model's weight on its column, θ_j (the canary
  pushes it up, the filler down); the auditor guesses "in" for the k highest scores and
  "out" for the k lowest and abstains on the rest;
* the number of right guesses bounds ε from below (:func:`bounds.one_run_epsilon`) for
  one guess count r = 2k, fixed before the run from the claim alone
  (:func:`bounds.planned_guesses`: the r whose bound is largest were the claim exact), so
  the bound keeps its full confidence 1 − α.

For noisy-gradient training the records' gradients are clipped at a small norm
(``clip_norm``, default :data:`DEFAULT_CLIP` where the mechanism clips), so the canary and
its filler each push with the full clipped norm every step: the pair then reaches the
declared sensitivity 2C, as the plan assumes.

References: Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1) training run"
(NeurIPS), Alg. 1 and Thm 5.2.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..numerics import streams
from ..erm import LazySolution
from ..exceptions import ParameterError
from ..experiments.context import in_context_pool
from ..experiments.run import RunSpec, SpecOf, check_budget, check_data, problem_data
from ..mechanisms import Problem, get_mechanism
from ..optim import BatchRNG
from ..params import PARAMS, validate
from .bounds import one_run_epsilon, planned_guesses
from .canaries import subsample

__all__ = ["DEFAULT_CLIP", "MAX_CANARIES", "OneRunResult", "one_run_audit"]

#: clipping norm when the configuration names none (small: the pair stays clipped throughout)
DEFAULT_CLIP = 0.1
MAX_CANARIES = int(PARAMS["canaries"].constraint.high)


@dataclass(frozen=True)
class OneRunResult(SpecOf):
    """What a one-run audit found (:func:`one_run_audit`); :meth:`to_dict` is the command line's record.

    >>> cfg = RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", epsilon=1.0,
    ...               delta=1e-5, iterations=10)
    >>> record = one_run_audit(cfg, canaries=100).to_dict(scores=True)
    >>> record["mode"], record["canaries"], record["confidence"]
    ('one-run', 100, 0.95)
    >>> len(record["scores"]["in"]) + len(record["scores"]["out"]) == 100 == record["canaries"]
    True
    >>> "scores" in one_run_audit(cfg, canaries=100).to_dict()   # the scores only when asked for
    False
    """

    spec: RunSpec
    mechanism_name: str
    canaries: int
    included: int
    n_train: int  # the records the run trained on (data + canary slots)
    epsilon_target: float
    epsilon_certified: float
    epsilon_lower_bound: float
    guesses: int  # r, the guess count fixed from the claim before the run
    correct: int
    alpha: float
    seconds: float
    notes: tuple[str, ...] = ()
    scores: np.ndarray | None = None  # (m,): the released weight on each canary's column
    members: np.ndarray | None = None  # (m,): which canaries were in

    def to_dict(self, scores: bool = False) -> dict[str, Any]:
        out = {
            "mode": "one-run", "dataset": self.spec.dataset, "model": self.spec.model,
            "mechanism": self.spec.mechanism, "mechanism_name": self.mechanism_name,
            "calibration": self.spec.calibration, "canaries": self.canaries, "included": self.included,
            "n_train": self.n_train, "epsilon_target": self.epsilon_target,
            "epsilon_certified": self.epsilon_certified, "epsilon_lower_bound": self.epsilon_lower_bound,
            "guesses": self.guesses, "correct": self.correct, "alpha": self.alpha,
            "confidence": 1.0 - self.alpha,
            "seconds": self.seconds, "notes": list(self.notes), "config": self.spec.to_dict(),
        }
        if scores and self.scores is not None:
            out["scores"] = {"in": [float(v) for v in self.scores[self.members]],
                             "out": [float(v) for v in self.scores[~self.members]]}
        return out


def _with_canaries(ds, members: np.ndarray):
    """``ds`` with one zero column per canary and one record per canary (in: +e_j, out: −e_j)."""
    n, d = ds.X_train.shape
    m = members.size
    X = np.zeros((n + m, d + m))
    X[:n, :d] = ds.X_train
    X[n + np.arange(m), d + np.arange(m)] = np.where(members, 1.0, -1.0)
    y = np.concatenate([np.asarray(ds.y_train, float), np.ones(m)])
    X_test = np.hstack([ds.X_test, np.zeros((ds.X_test.shape[0], m))])
    for a in (X, y, X_test):
        a.setflags(write=False)
    names = tuple(ds.feature_names) + tuple(f"canary {j}" for j in range(m))
    return dataclasses.replace(ds, X_train=X, y_train=y, X_test=X_test, feature_names=names)


@in_context_pool
def one_run_audit(config: RunSpec, canaries: int = 1000, alpha: float = 0.05, max_rows: int | None = 5000,
                  progress: Callable[[int, int], None] | None = None, *, dataset=None) -> OneRunResult:
    """One training run of ``config`` with ``canaries`` canaries; a lower bound on ε (module doc).

    >>> cfg = RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", epsilon=1.0,
    ...               delta=1e-5, iterations=10)
    >>> r = one_run_audit(cfg, canaries=100)
    >>> r.canaries, r.n_train - r.canaries, r.spec.clip_norm   # 546 records and a canary slot each
    (100, 546, 0.1)
    >>> r.guesses % 2 == 0 and 0 <= r.correct <= r.guesses <= r.canaries   # k 'in' and k 'out' guesses
    True
    >>> bool(0.0 <= r.epsilon_lower_bound <= r.epsilon_certified <= 1.0)
    True
    >>> try:
    ...     one_run_audit(RunSpec(dataset="breast-cancer", model="logreg", mechanism="output-gaussian"))
    ... except ParameterError as e:
    ...     print(str(e)[:60])
    the one-run audit trains logistic regression with a noisy-gr
    """
    t0 = time.perf_counter()
    if not isinstance(config, RunSpec):
        raise ParameterError(f"one_run_audit needs a RunSpec; got {type(config).__name__}")
    canaries = validate("canaries", canaries, "one_run_audit")
    alpha = validate("alpha", alpha, "one_run_audit")
    mechanism = get_mechanism(config.mechanism)
    if mechanism.family != "gradient" or config.model != "logreg":
        raise ParameterError("the one-run audit trains logistic regression with a noisy-gradient mechanism "
                             f"(gradient-dpgd, gradient-dpsgd …); {config.mechanism} with {config.model} is not one")
    notes = []
    if "clip_norm" in mechanism.settings and config.clip_norm is None:
        config = dataclasses.replace(config, clip_norm=DEFAULT_CLIP)
        notes.append(f"records clipped at C = {DEFAULT_CLIP:g} (none was given), so each canary and its filler "
                     "push with the full clipped norm every step")
    data, model = problem_data(config, dataset)
    if dataset is not None and mechanism.private:  # a waived bound the data break is said (check_data)
        notes += check_data(config, dataset)[0]
    if max_rows is not None and data.n > max_rows:
        data = subsample(data, max_rows, config.seed)
        notes.append(data.notes[-1])
    rng = np.random.default_rng([int(config.seed), streams.ONE_RUN_MEMBERS])
    members = rng.random(int(canaries)) < 0.5
    ds = _with_canaries(data, members)
    problem = Problem(dataset=ds, model=model, erm=LazySolution(model, ds.X_train, ds.y_train))
    mechanism.check(problem, config)
    check_budget(dataclasses.replace(config, repeats=1), ds, model, mechanism, what="the iterations or the canaries")
    if progress is not None:
        progress(0, 1)
    out = mechanism.run(problem, config, BatchRNG([int(config.seed)], stream=streams.ONE_RUN_NOISE))
    if progress is not None:
        progress(1, 1)
    eps_certified = out.certified(config.delta)[0]
    d = data.d
    scores = np.asarray(out.theta, dtype=float)[0, d:d + canaries]
    scores = np.where(np.isfinite(scores), scores, 0.0)  # a diverged weight says nothing
    order = np.argsort(scores, kind="stable")
    delta = float(config.delta)
    # one guess count, fixed by the claim before the scores are seen, so the bound keeps all of α
    claim = eps_certified if math.isfinite(eps_certified) else float(config.epsilon)
    r = planned_guesses(canaries, claim, delta, alpha)
    k = r // 2
    correct = int(np.sum(members[order[-k:]]) + np.sum(~members[order[:k]]))
    notes.append(f"{r} guesses ({k} highest scores 'in', {k} lowest 'out'): the count that gives the largest "
                 f"bound were the claim ε = {claim:.3g} exact, fixed before the run, so the bound keeps its "
                 f"full confidence {1 - alpha:g}")
    return OneRunResult(
        spec=config, mechanism_name=mechanism.name, canaries=int(canaries), included=int(members.sum()),
        n_train=problem.n, epsilon_target=float(config.epsilon), epsilon_certified=float(eps_certified),
        epsilon_lower_bound=one_run_epsilon(canaries, r, correct, delta, alpha), guesses=r, correct=correct, alpha=alpha,
        seconds=time.perf_counter() - t0, notes=tuple(notes),
        scores=scores, members=members)
