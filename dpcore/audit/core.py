"""The audit: many runs a side, a lower bound on ε and a verdict (SPEC §5).

:func:`audit` is the one procedure: it checks its arguments, builds the audited problem (a
seeded subsample of large data), lets the threat model's strategy
(:mod:`dpcore.audit.threats`) build the problems it trains on, trains ``trials`` runs a side
in batched chunks that the strategy scores, and turns the two score samples into the
audited ε (:mod:`dpcore.audit.membership`, :mod:`dpcore.audit.bounds`) and a verdict on the
target and the certified ε.  :class:`AuditResult` holds everything it found.

Estimators.  The direct bound (:func:`dpcore.audit.membership.membership_test`) assumes
nothing but independent runs.  White-box audits of noisy-gradient mechanisms measure the mechanism
(:mod:`dpcore.audit.measured`: a pair of real records through its own code, the shift measured at
every state, the noise's shape and the runs' independence checked); elsewhere, where the family of
the noise is known (white-box scores of Gaussian and Poisson-sampled Gaussian mechanisms), sharper
estimators from :mod:`dpcore.audit.bounds` are added, each naming its assumption.  The declared
shift at the measured noise (the χ² bound on the noise scale) is the **noise check**: what the noise
that ran certifies, labelled, never the audited ε, but refuting the certificate when it exceeds it.
The audited ε is the largest of the others, each estimator (the noise check too) run at its declared
share of α (``bounds.ALPHA_SHARES``, a weighted Bonferroni correction), so the verdict holds with
confidence 1 − α.  A refutation reports its size and its chance (:func:`refutation_chance`), and is
shown ("claim not met") only when a second, independent audit refutes the same claim (``confirm``).  Black-box audits also report a Gaussian-assumption
figure beside the direct bound, labelled as such and not part of the audited ε (black-box
scores are not exactly Gaussian).

References: Jagielski, Ullman & Oprea 2020, "Auditing Differentially Private Machine
Learning: How Private is Private SGD?" (NeurIPS), Alg. 2; Nasr et al. 2023 ("Tight auditing").
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..erm import LazySolution
from ..exceptions import ParameterError, PrivacyWarning
from ..experiments.context import Context, in_context_pool
from ..experiments.run import (
    RunSpec,
    SpecOf,
    check_budget,
    check_data,
    delta_warning,
    load_problem,
    problem_data,
)
from ..mechanisms import Problem, get_mechanism
from ..optim import BatchRNG
from ..params import validate
from .bounds import gdp_epsilon_lower
from .canaries import NEIGHBOURING, resolve_canary, subsample
from .evidence import Evidence, estimate
from .membership import (
    NOT_CONFIRMED,
    SplitHalfCounts,
    NOT_MET,
    privacy_region,
    roc_points,
    size_ceiling,
    verdict,
)
from .measured import Measured
from .measured_release import MeasuredRelease, release_measurable
from .verdicts import CONFIRMED_FALSE_RATE, confirmation_alpha, confirmation_seed, confirmed_result
from .threats import threat_strategy

__all__ = ["CONFIRMED_FALSE_RATE", "DEFAULT_CHUNK", "RUN_SEED_STRIDE", "AuditResult", "confirmation_alpha", "run_audit",
           "audit"]

DEFAULT_CHUNK = 250
#: run r on side s of audit seed S uses seed (2S + s)·RUN_SEED_STRIDE + r (trials ≤ the stride)
RUN_SEED_STRIDE = 2**20


def _check(name: str, value: Any) -> Any:
    """Validate an audit parameter against its declaration in :data:`dpcore.params.PARAMS`."""
    return validate(name, value, "audit")


@dataclass(frozen=True, kw_only=True)
class AuditResult(SpecOf, SplitHalfCounts):
    """Everything an audit found (:func:`run_audit`); the UI formats these, it does not compute.

    Attributes
    ----------
    spec : RunSpec
        The audited spec (``config`` is its 0.1.0 name, deprecated).
    epsilon_target, epsilon_certified : float
        The ε asked for, and what the noise that ran certifies.
    epsilon_lower_bound : float
        The audited ε: an empirical lower bound at confidence 1 − α, never a guarantee.
    verdict : str
        One of :data:`dpcore.audit.VERDICTS` ("not refuted", "claim not met", …); ``refuted``
        names what refuted the claim.
    scores_without, scores_with : numpy.ndarray
        The score of every run on ``D`` / ``D'`` (first halves chose the threshold, second
        halves were counted).
    false_positives, n_without, false_negatives, n_with : int
        The evaluation counts; ``fpr_upper`` / ``fnr_upper`` their Clopper–Pearson bounds at
        confidence 1 − α/2.
    estimates : tuple of dict
        Every estimator's ε with its share of α and its assumption.

    Examples
    --------
    >>> from dpcore import RunSpec, run_audit
    >>> result = run_audit(RunSpec("iris", mechanism="output-gaussian", epsilon=1.0), trials=100)
    >>> result.verdict, result.spec.mechanism, result.scores_with.shape
    ('not refuted', 'output-gaussian', (100,))
    >>> result.epsilon_lower_bound <= result.epsilon_certified <= result.epsilon_target
    True
    """

    spec: RunSpec
    mechanism_name: str
    dataset_name: str
    n_train: int
    d: int
    epsilon_target: float
    epsilon_certified: float
    epsilon_lower_bound: float
    verdict: str
    refuted: tuple[str, ...]  # the claims shown refuted: refuted by this audit and by a second, independent one
    delta: float  # δ used in the bound (0 for an (ε, 0) mechanism)
    alpha: float
    trials: int
    score: str
    canary: str
    canary_description: str
    canary_index: int
    canary_label: float
    # threshold, direction, false_positives, n_without, false_negatives, n_with, fpr_upper, fnr_upper:
    # the split-half test's counts (membership.SplitHalfCounts)
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
    # every estimator's bound with its assumption (bounds.Estimate.to_dict); "headline":
    # whether it enters epsilon_lower_bound (the maximum, Bonferroni-corrected)
    estimates: tuple[dict[str, Any], ...] = ()
    share_of_claim: float | None = None  # ε_LB / min(target, certified)
    epsilon_attack_ceiling: float | None = None  # white-box: the most the attack's view can show
    size_ceiling: float = math.inf  # the largest direct bound this many runs can give
    at_size_ceiling: bool = False
    epsilon_gaussian_assumption: float | None = None  # black-box: labelled, not in the headline
    shift_check: dict[str, Any] | None = None  # end-to-end: what the real neighbours moved
    # the declared shift at the measured noise: what the noise that ran certifies (gradient-canary threat
    # model), labelled, never the audited ε; "refutes": it exceeds the certified ε
    noise_check: dict[str, Any] | None = None
    noise: dict[str, Any] | None = None  # the measured audit's checks of the noise (shape, independence)
    findings: tuple[str, ...] = ()  # measured facts that refute the certificate's premise
    # a refutation's size and chance (see _refutation); None when nothing is refuted
    refutation: dict[str, Any] | None = None
    epsilon_domain_ceiling: float | None = None  # the ε the data domain allows at the declared noise
    # a second, independent audit (fresh seed, α₂ = confirmation_alpha(α)) run to confirm a refutation
    confirmation: dict[str, Any] | None = None
    # the claims this audit refuted that no second audit confirmed (verdict "refuted once, not confirmed")
    refuted_once: tuple[str, ...] = ()

    def roc(self, points: int = 201) -> dict[str, list[float]]:
        """The attack's empirical ROC on all runs (at most ``points`` points).

        >>> from dpcore.experiments.run import RunSpec
        >>> r = run_audit(RunSpec(dataset="breast-cancer", model="logreg", mechanism="non-private"), trials=100)
        >>> roc = r.roc(points=5)
        >>> sorted(roc), len(roc["fpr"]) == len(roc["tpr"]) <= 5
        (['fpr', 'tpr'], True)
        >>> (roc["fpr"][0], roc["tpr"][0]), (roc["fpr"][-1], roc["tpr"][-1])   # from (1, 1) down to (0, 0)
        ((1.0, 1.0), (0.0, 0.0))
        >>> (0.0, 1.0) in zip(roc["fpr"], roc["tpr"])   # no noise: a threshold that is never wrong
        True
        """
        fpr, tpr = roc_points(self.scores_without, self.scores_with)
        keep = np.unique(np.linspace(0, fpr.size - 1, min(points, fpr.size)).round().astype(int))
        return {"fpr": fpr[keep].tolist(), "tpr": tpr[keep].tolist()}

    def to_dict(self, scores: bool = True) -> dict[str, Any]:
        """The command line's JSON record (SPEC §7); infinite ε become ``null`` in ``jsonutil.dumps``.

        >>> import json
        >>> from dpcore.experiments.run import RunSpec
        >>> from dpcore.jsonutil import dumps
        >>> r = run_audit(RunSpec(dataset="breast-cancer", model="logreg", mechanism="non-private"), trials=100)
        >>> record = json.loads(dumps(r.to_dict()))
        >>> record["verdict"], record["epsilon_certified"], len(record["scores"]["with_canary"])
        ('no guarantee claimed', None, 100)
        >>> "scores" in r.to_dict(scores=False)
        False
        """
        out: dict[str, Any] = {
            **self.spec_names(),
            "calibration": self.spec.calibration,
            "epsilon_target": self.epsilon_target,
            "epsilon_certified": self.epsilon_certified,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "verdict": self.verdict,
            "refuted": list(self.refuted),
            "refuted_once": list(self.refuted_once),
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
            "noise_check": self.noise_check,
            "noise": self.noise,
            "findings": list(self.findings),
            "refutation": self.refutation,
            "epsilon_domain_ceiling": self.epsilon_domain_ceiling,
            "confirmation": self.confirmation,
            "roc": self.roc(),
            "config": self.spec.to_dict(),
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


@in_context_pool
def run_audit(
    spec: RunSpec,
    *,
    trials: int,
    alpha: float = 0.05,
    canary: str = "auto",
    score: str = "margin",
    max_rows: int | None = 5000,
    progress: Callable[[int, int], None] | None = None,
    threat: str = "black-box",
    canary_label: float = 1.0,
    chunk_size: int = DEFAULT_CHUNK,
    dataset=None,
    ctx: Context | None = None,
    end_to_end: bool = False,
    measure: bool = True,
    confirm: bool = True,
) -> AuditResult:
    """Audit one configuration: ``trials`` runs on ``D`` and on ``D'``, a lower bound on ε.

    Parameters
    ----------
    spec : RunSpec
        The dataset, model, mechanism and every setting, as for :func:`dpcore.run` (its
        ``repeats`` is ignored; ``seed`` seeds the canary, the subsample and the runs).
    trials : int
        Runs on each side of the neighbouring pair.
    alpha : float
        The audit's error probability: the verdict holds with confidence 1 − α (split below).
    canary, canary_label, score : str, float, str
        The black-box attack: which record tells ``D`` from ``D'`` (``"auto"``: the mechanism's
        choice), its label, and how a released model is scored on it.
    max_rows : int or None
        More training rows than this are audited on a seeded subsample of that many (``note``
        says so).
    progress : callable, optional
        ``progress(done, total)``, ``total = 2·trials``: before the first chunk and after every
        chunk (black-box: after each side of it).
    threat : str
        ``"black-box"`` or ``"white-box"`` (:data:`dpcore.audit.threats.STRATEGIES`).
    chunk_size : int
        Runs trained as one batch.
    dataset : Dataset, optional
        A user's own data in place of ``spec.dataset``.
    ctx : Context, optional
        Where the full data's exact solution comes from (default:
        :func:`~dpcore.experiments.context.default_context`).
    end_to_end, measure, confirm : bool
        The white-box options below; ``confirm`` (default) audits again with a fresh seed when this
        audit refutes a claim, and shows a claim refuted only when both do.

    Returns
    -------
    AuditResult
        The audited ε (an empirical lower bound, never a guarantee) beside the certified ε, the
        verdict, the counts and every score.

    Raises
    ------
    ParameterError
        An audit setting out of range, or a threat the mechanism cannot be audited under.
    BudgetError
        The audit's runs exceed the context's budget (refused before any work).

    Notes
    -----
    The threat model is a strategy of :data:`dpcore.audit.threats.STRATEGIES`: ``"black-box"``
    scores the released model on the canary (``canary``, ``canary_label``, ``score``);
    ``"white-box"`` every release along the way (:mod:`dpcore.audit.whitebox`);
    ``end_to_end=True`` (white-box, noisy-gradient mechanisms) first measures, on a real
    neighbouring pair with common random numbers, what the record moves the first release and
    how often it is sampled, scores with that shift, and refutes the certificate if either
    exceeds what the plan declares.

    How α is split: the audited ε is the largest estimate, each estimator at its share of α
    (weighted Bonferroni, :data:`dpcore.audit.bounds.ALPHA_SHARES`); the noise check (the declared
    shift at the measured noise: what the noise that ran certifies, labelled, never the audited ε) takes
    its own share, so the verdict — refuted by the audited ε, by the noise check or by a measured fact —
    holds with confidence 1 − α.  The shares depend on what the threat's scores are, never on their values:

    * the measured white-box audit of noisy-gradient mechanisms (:mod:`dpcore.audit.measured`, the
      default where the releases allow it; ``measure=False`` turns it off): the direct bound 0.1·α, the
      measured bound 0.6·α, the noise check 0.3·α;
    * plain white-box scores that are exact Gaussian shifts of Gaussian noise the attack reads itself
      (output and objective perturbation, bolt-on, the federations), δ > 0: the direct bound 0.1·α, the
      pooled error 0.1·α, the effect size 0.5·α, the noise check (χ² scale bound) 0.3·α;
    * other white-box scores that are exact Gaussian shifts (input perturbation's records), δ > 0:
      the direct bound 0.1·α, the pooled error 0.1·α, the effect size 0.8·α;
    * plain white-box scores of Poisson-sampled Gaussian steps, δ > 0: the direct bound 0.7·α, the noise
      check 0.3·α (the Monte-Carlo sampled-Gaussian fit takes 0.9·α where the noise itself is not read);
    * anything else (every black-box audit; other white-box noise, the non-private baseline,
      δ = 0): the direct bound alone, at α.

    One verdict rule (``confirm``): a claim (the target, the certificate) is shown refuted — verdict
    "claim not met", listed in ``refuted`` — only when a second, independent audit (fresh seed,
    :func:`confirmation_seed`, disjoint runs, at α₂ = :func:`confirmation_alpha` of α) refutes that same
    claim; a claim only the first audit refutes reads "refuted once, not confirmed" (``refuted_once``),
    and so does every refutation when ``confirm=False``.  A correct claim is thus shown refuted in at most
    α·α₂ ≤ :data:`CONFIRMED_FALSE_RATE` (10⁻³) of audits.  The noise check never drives a verdict (its
    exceeding the certificate is ``noise_check["exceeds"]``, a labelled figure).  Every refutation reports
    its size and its chance (``refutation``: the first audit's family-wise p-value, :func:`refutation_chance`).

    The direct bound's share α_d picks the threshold and is halved between the two error rates
    (Clopper–Pearson at 1 − α_d/2 each); the size ceiling uses α_d too.  Black-box audits of
    private mechanisms at δ > 0 also report a Gaussian-assumption figure (pooled error and
    effect size, at α/2 each), labelled, never in the audited ε.  The end-to-end check bounds
    the sampling rate at 1 − α/2 a side, outside this split.  δ is 0 for (ε, 0) mechanisms.

    References: Jagielski, Ullman & Oprea 2020, Alg. 2; Nasr et al. 2023.

    Examples
    --------
    >>> from dpcore.experiments.run import RunSpec
    >>> cfg = RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", epsilon=1.0,
    ...               delta=1e-5, iterations=10)
    >>> r = run_audit(cfg, trials=50)
    >>> r.verdict, r.threat, r.canary, r.scores_without.shape, r.scores_with.shape
    ('not refuted', 'black-box', 'orthogonal-pair', (50,), (50,))
    >>> bool(0.0 <= r.epsilon_lower_bound <= r.size_ceiling), bool(0.99 < r.epsilon_certified <= 1.0)
    (True, True)
    >>> blind = run_audit(RunSpec(dataset="breast-cancer", model="logreg", mechanism="non-private"), trials=100)
    >>> blind.verdict, blind.false_positives + blind.false_negatives   # the exact minimiser: told apart
    ('no guarantee claimed', 0)
    """
    t_start = time.perf_counter()
    trials, alpha, canary, score, strategy, chunk_size, max_rows = _arguments(
        spec, trials, alpha, canary, score, threat, chunk_size, max_rows, end_to_end, progress)
    mechanism = get_mechanism(spec.mechanism)
    canary = resolve_canary(canary, mechanism)
    problem, model, note = _audited_problem(spec, dataset, max_rows, ctx)
    mechanism.check(problem, spec)
    # every run of both sides is trained, a chunk at a time: refuse what would not fit or finish
    check_budget(dataclasses.replace(spec, repeats=min(chunk_size, trials)), problem.dataset, model, mechanism,
                 runs=2 * trials, what="the iterations or the trials")
    attack = _attack(strategy, measure, mechanism, problem, model, spec, canary, canary_label, score)
    message = delta_warning(spec.delta, attack.problem.n)
    caught = [message] if mechanism.private and message else []
    if dataset is not None and mechanism.private:  # a waived bound the data break is said (check_data)
        caught += check_data(spec, dataset)[0]
    if progress is not None:
        progress(0, 2 * trials)
    seeds = (_run_seeds(spec.seed, 0, trials), _run_seeds(spec.seed, 1, trials))
    first = mechanism.run(attack.problem, spec, BatchRNG([int(seeds[0][0])]))
    eps_certified = first.certified(spec.delta)[0]
    caught += attack.measure(seeds, alpha)
    scores = _score_runs(attack, seeds, chunk_size, progress, caught)
    delta = 0.0 if mechanism.notion == "(ε, 0)" else float(spec.delta)
    evidence = estimate(attack, scores, delta, alpha, spec.seed)
    result = _result(spec, mechanism, attack, first, eps_certified, evidence, alpha, note, caught, t_start)
    if not result.refuted_once:
        return result
    # the one verdict rule: a claim is shown refuted only when a second, independent audit refutes it too
    again = None
    if confirm:
        again = run_audit(dataclasses.replace(spec, seed=confirmation_seed(spec.seed)), trials=trials,
                          alpha=confirmation_alpha(alpha), canary=canary, score=score, max_rows=max_rows,
                          progress=progress, threat=threat, canary_label=canary_label, chunk_size=chunk_size,
                          dataset=dataset, ctx=ctx, end_to_end=end_to_end, measure=measure, confirm=False)
    return confirmed_result(result, again)


def audit(config: RunSpec, trials: int, alpha: float = 0.05, canary: str = "auto", score: str = "margin",
          max_rows: int | None = 5000, progress: Callable[[int, int], None] | None = None, **options) -> AuditResult:
    """The old spelling of :func:`run_audit` (its parameters by position), kept for one release."""
    warnings.warn("dpcore.audit.audit(config, trials, ...) is renamed dpcore.run_audit(spec, trials=..., ...): "
                  "every parameter after the spec is keyword-only", DeprecationWarning, stacklevel=2)
    return run_audit(config, trials=trials, alpha=alpha, canary=canary, score=score, max_rows=max_rows,
                     progress=progress, **options)


def _attack(strategy, measure: bool, mechanism, problem, model, config, canary, canary_label, score):
    """The threat's strategy; white-box audits of noisy-gradient mechanisms measure the mechanism
    (:class:`~dpcore.audit.measured.Measured`) wherever its releases allow, and so do those of
    output-gaussian and objective-gaussian (:class:`~dpcore.audit.measured_release.MeasuredRelease`)
    (``measure=False``: the plain white-box audit at the declared sensitivity)."""
    if strategy.threat == "white-box" and measure and mechanism.family == "gradient" and mechanism.private:
        try:
            return Measured(mechanism, problem, model, config, canary, canary_label, score)
        except ParameterError:
            pass  # a federation, a step that is not θ − η·release: the plain white-box audit
    # output-gaussian and objective-gaussian: the measured release audit (end_to_end keeps its own refusal)
    if strategy is threat_strategy("white-box", False) and measure and release_measurable(mechanism, model):
        try:
            return MeasuredRelease(mechanism, problem, model, config, canary, canary_label, score)
        except ParameterError:
            pass  # not one measurable release: the plain white-box audit
    return strategy(mechanism, problem, model, config, canary, canary_label, score)


def _arguments(config, trials, alpha, canary, score, threat, chunk_size, max_rows, end_to_end, progress) -> tuple:
    """:func:`audit`'s arguments checked, in order (the first bad one is named), the threat as
    its strategy class."""
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
    strategy = threat_strategy(threat, end_to_end)
    if progress is not None and not callable(progress):
        raise ParameterError("progress must be a callable progress(done, total) or None")
    return trials, alpha, canary, score, strategy, chunk_size, max_rows


def _audited_problem(config: RunSpec, dataset, max_rows: int | None, ctx) -> tuple[Problem, Any, str | None]:
    """The problem the audit trains on, its model, and the note of a subsample (more than
    ``max_rows`` training rows are audited on a seeded subsample of that many)."""
    data, model = problem_data(config, dataset)
    if max_rows is not None and data.n > max_rows:
        # the full data's exact ERM is never needed (for an MLP on Adult it takes minutes)
        ds = subsample(data, max_rows, config.seed)
        return Problem(dataset=ds, model=model, erm=LazySolution(model, ds.X_train, ds.y_train)), model, ds.notes[-1]
    return load_problem(config, dataset, ctx), model, None


def _score_runs(attack, seeds, chunk_size: int, progress, caught: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every run of both sides, a chunk at a time, scored by the threat's strategy, with
    ``progress(done, 2·trials)`` after each step.  The privacy warnings the runs raise go to
    ``caught`` (once each); any other warning passes on."""
    trials = seeds[0].size
    scores = (np.empty(trials), np.empty(trials))
    done = 0
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always", PrivacyWarning)
        for start in range(0, trials, chunk_size):
            for runs in attack.score_chunk(seeds, start, min(trials, start + chunk_size), scores):
                done += runs
                if progress is not None:
                    progress(done, 2 * trials)
    for w in wlist:
        if issubclass(w.category, PrivacyWarning):
            if str(w.message) not in caught:
                caught.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return scores


#: the chances a refutation reports are searched down to this (smaller reads "less than 1 in 10¹²")
SMALLEST_CHANCE = 1e-12


def refutation_chance(make, claim: float, alpha: float) -> float:
    """The smallest α' at which ``make(α')`` (an estimator at confidence 1 − α') still exceeds
    ``claim``: the p-value of the refutation, i.e. how often a correct claim is refuted this strongly
    or more (exact for an exact estimator).  ``make(alpha)`` exceeds the claim (else 1).

    >>> from dpcore.privacy.accounting import gdp_epsilon
    >>> from dpcore.audit.bounds import gaussian_scale_bound
    >>> from scipy.stats import chi2
    >>> claim = gdp_epsilon(1.0, 1e-5) * (1 - 1e-6)   # the attack's own ceiling, μ = 1
    >>> p = refutation_chance(lambda a: gaussian_scale_bound(9700.0, 10000, 1.0, 1e-5, a), claim, 0.05)
    >>> bool(abs(p / chi2.cdf(9700.0, 10000) - 1) < 0.02)   # the χ² test's own p-value
    True
    >>> refutation_chance(lambda a: gaussian_scale_bound(8000.0, 10000, 1.0, 1e-5, a), claim, 0.05)  # a bug
    1e-12
    """
    if not make(alpha).epsilon > claim:
        return 1.0
    lo, hi = math.log(SMALLEST_CHANCE), math.log(alpha)
    if make(SMALLEST_CHANCE).epsilon > claim:
        return SMALLEST_CHANCE
    for _ in range(30):
        mid = (lo + hi) / 2
        if make(math.exp(mid)).epsilon > claim:
            hi = mid
        else:
            lo = mid
        if hi - lo < 0.01:
            break
    return math.exp(hi)


#: the declared-shift estimators of the plain white-box audit: noise checks, labelled, never the audited ε
NOISE_CHECKS = ("gaussian-scale", "sampled-gaussian-scale", "noise-check")
#: a refutation this unlikely under a correct certificate reads as a bug, not bad luck
BUG_CHANCE = 1e-4


def _result(config: RunSpec, mechanism, attack, first, eps_certified: float, ev: Evidence, alpha: float,
            note: str | None, caught: list[str], t_start: float) -> AuditResult:
    """The verdict on the two claims, and everything the audit found."""
    checks = [e for e in ev.headline if e.name in NOISE_CHECKS]
    records_est = [e for e in ev.headline if e.name not in NOISE_CHECKS]
    records = [dict(e.to_dict(), headline=True) for e in records_est] + [
        dict(e.to_dict(), headline=False) for e in (*checks, *(ev.labelled or ()))]
    best = max(records_est, key=lambda e: e.epsilon)
    gaussian_best = max((e for e in records_est if e.name != "direct"), key=lambda e: e.epsilon, default=None)
    eps_target = float(config.epsilon) if mechanism.private else math.inf
    eps_lb = best.epsilon
    v, refuted = verdict(eps_lb, eps_target, eps_certified, mechanism.private)
    noise_check = max(checks, key=lambda e: e.epsilon) if checks and mechanism.private else None
    findings = []
    shift = attack.shift
    if shift is not None and mechanism.private:
        findings += shift.findings()
    noise = getattr(attack, "noise", None)
    if noise is not None and mechanism.private:
        findings += noise.findings()
    # the noise check is a labelled figure: its exceeding the certificate is shown, never a verdict
    exceeds = noise_check is not None and noise_check.epsilon > eps_certified
    if findings:  # the certificate's premise is measured false
        v, refuted = NOT_MET, tuple(dict.fromkeys((*refuted, "certified")))
    refutation = _refutation(ev, alpha, eps_lb, eps_target, eps_certified, findings, refuted)
    if refuted:  # refuted once: the verdict waits for a second audit (run_audit's _confirmed)
        v = NOT_CONFIRMED
    claim = min(eps_target, eps_certified)
    ceiling = size_ceiling(len(ev.scores[0]), ev.delta, ev.alpha_direct)
    if noise is not None and mechanism.private:
        caught += noise.notes()
    for finding in findings:
        caught.append("measured: " + finding)
    for arr in ev.scores:
        arr.setflags(write=False)
    test, problem, ceiling_mu = ev.test, attack.problem, attack.ceiling_mu
    return AuditResult(
        spec=config,
        mechanism_name=mechanism.name,
        dataset_name=problem.dataset.name,
        n_train=problem.n,
        d=problem.d,
        epsilon_target=eps_target,
        epsilon_certified=eps_certified,
        epsilon_lower_bound=eps_lb,
        verdict=v,
        refuted=(),
        refuted_once=refuted,
        delta=ev.delta,
        alpha=alpha,
        trials=len(ev.scores[0]),
        **test.counts(),
        scores_without=ev.scores[0],
        scores_with=ev.scores[1],
        sigma=first.sigma,
        seconds=time.perf_counter() - t_start,
        note=note,
        warnings=tuple(caught),
        threat=attack.threat,
        epsilon_lower_bound_direct=test.epsilon_lower_bound,
        epsilon_lower_bound_gdp=gaussian_best.epsilon if gaussian_best else None,
        mu_lower_bound=gaussian_best.mu if gaussian_best else None,
        confidence=1.0 - alpha,
        region=privacy_region(first.plan, eps_target, float(config.delta), mechanism.private),
        estimates=tuple(records),
        share_of_claim=eps_lb / claim if mechanism.private and math.isfinite(claim) and claim > 0 else None,
        epsilon_attack_ceiling=(gdp_epsilon_lower(ceiling_mu, ev.delta) if ceiling_mu is not None and ev.delta > 0
                                else None),
        size_ceiling=ceiling,
        at_size_ceiling=best.name == "direct" and eps_lb >= ceiling * (1 - 1e-9),
        epsilon_gaussian_assumption=max((e.epsilon for e in ev.labelled), default=None) if ev.labelled else None,
        shift_check=None if shift is None else shift.to_dict(),
        noise_check=None if noise_check is None else dict(
            noise_check.to_dict(), line=f"noise check: the noise that ran certifies at least "
                                        f"{noise_check.epsilon:.4g}", exceeds=exceeds),
        noise=None if noise is None else noise.to_dict(),
        findings=tuple(findings),
        refutation=refutation,
        epsilon_domain_ceiling=(attack.domain_ceiling(ev.delta) if hasattr(attack, "domain_ceiling") and ev.delta > 0
                                else None),
        **attack.record(),
    )


def _refutation(ev: Evidence, alpha: float, eps_lb: float, target: float, certified: float,
                findings: list[str], refuted: tuple[str, ...]) -> dict[str, Any] | None:
    """How large a refutation is and how likely under a correct claim: for each refuted claim, the
    evidence that refutes it by the most, its size (how far above the claim) and its chance (the
    family-wise p-value: the smallest α at which the audit would still refute, each estimator at its
    share of α).  A measured finding is a fact, not an estimate: its chance is 0.  The noise check
    never refutes (a labelled figure)."""
    if not refuted:
        return None
    out: dict[str, Any] = {"claims": {}}
    for name, claim in (("target", target), ("certified", certified)):
        if name not in refuted:
            continue
        chances = []
        for est_name, share, make in ev.makers:
            if est_name in NOISE_CHECKS:
                continue
            if make(alpha * share).epsilon > claim:
                chances.append(refutation_chance(make, claim, alpha * share) / share)
        size = eps_lb / claim - 1.0 if claim > 0 else math.inf
        by = "the audited ε"
        if name == "certified" and findings:
            chances.append(0.0)
            by = "a measurement" if not eps_lb > claim else by
        chance = min(1.0, min(chances)) if chances else alpha
        out["claims"][name] = {"claim": claim, "by": by, "size": size, "chance": chance,
                               "bug": chance < BUG_CHANCE}
    worst = min(out["claims"].values(), key=lambda c: c["chance"])
    out.update(worst)
    return out
