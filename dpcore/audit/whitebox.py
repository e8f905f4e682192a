"""White-box audits: the attacker sees everything a mechanism releases along the way.

The black-box audit (:mod:`dpcore.audit.threats`) sees only the released model.  Here
the attacker sees every intermediate release, knows every other record, and
chooses the two differing records freely — the threat model under which the
certified ε is proved.  What separates the neighbours is then exactly the noise
the implementation drew against the sensitivity the mechanism declares, so a
white-box audit tests the **implementation of the calibration**: too little
noise for the claimed ε shows.

For each run, the noise the mechanism actually drew is recovered, as the
attacker can (who knows the data):

* Gaussian noise on parameters or gradients (output perturbation after GD,
  bolt-on, DP-GD, the distributed clients, DP-SGD / Bassily / LSSGD, Kifer's
  objective perturbation): every Gaussian draw the run makes, read off its
  random-number generator (:class:`TapRNG`), projected on a fixed unit vector
  e — what a "Dirac" canary (a gradient or output of norm Δ/2 along e, the
  other record along −e) would be observed through;
* Gamma-norm output noise: the released θ minus the exact minimiser;
  Chaudhuri's objective perturbation: the linear term recovered from the
  optimality condition of the released minimiser, ``b = −n(∇L(θ) + Δθ)``;
* input perturbation: the released record (``D_priv``) minus the record;
  the released label against the true one;
* Duchi's ℓ2-ball mechanism: its privatiser on the gradients ±r·e.

The neighbour's shift is then added at the declared sensitivity (a replaced
record moves each release by Δ: −Δ/2 on one side, +Δ/2 on the other; for
Poisson sampling only in the steps that include it), and each run is scored
by the log-likelihood ratio of the two hypotheses under the *claimed* noise,
the Neyman–Pearson test when the claim is true.

References: Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini & Terzis
2023, "Tight auditing of differentially private machine learning" (USENIX
Security); Nasr, Song, Thakurta, Papernot & Carlini 2021 (IEEE S&P).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..numerics import streams
from ..exceptions import ParameterError
from ..mechanisms import Problem
from ..mechanisms.local import duchi_privatize
from ..optim import BatchRNG
from .noisecheck import FINDING_LEVEL, GAUSSIAN_CHECK_LEVEL, NoiseCheck, NoiseMoments, check_noise
from .bounds import (
    clopper_pearson_lower,
    clopper_pearson_upper,
    sampled_step_llr,
    simulation_seed,
)

__all__ = [
    "FINDING_LEVEL",
    "GAUSSIAN_CHECK_LEVEL",
    "WHITE_BOX_UNAVAILABLE",
    "NoiseCheck",
    "NoiseMoments",
    "check_noise",
    "ReleaseTap",
    "ShiftCheck",
    "TapRNG",
    "WhiteBoxScores",
    "measure_shift",
    "white_box_scores",
]

WHITE_BOX_UNAVAILABLE = {
    "input-dbdp-if": "it has no guarantee to test (its selection reads the raw data)",
    "input-fukuchi": ("it simulates the database's aggregate statistics and never draws the "
                      "per-contributor noise a white-box attacker would see"),
}


class TapRNG(BatchRNG):
    """A :class:`BatchRNG` that keeps what each noisy optimiser step released beyond the clean
    gradient (``BatchRNG.observer``): the noise as it was added, not as it was drawn.

    >>> from dpcore.experiments.run import RunSpec, load_problem
    >>> from dpcore.mechanisms import get_mechanism
    >>> cfg = RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", iterations=10)
    >>> tap = TapRNG([0, 1])   # two runs
    >>> _ = get_mechanism(cfg.mechanism).run(load_problem(cfg), cfg, tap)
    >>> len(tap.draws), tap.draws[0].shape   # one (runs, p) noise vector a step
    (10, (2, 10))
    """

    def __init__(self, seeds, stream: int = 0):
        super().__init__(seeds, stream)
        self.draws: list[np.ndarray] = []
        self.observer = self.draws.append


class ReleaseTap(BatchRNG):
    """A :class:`BatchRNG` that keeps every noisy release of an optimiser, clean part included.

    >>> from dpcore.experiments.run import RunSpec, load_problem
    >>> from dpcore.mechanisms import get_mechanism
    >>> cfg = RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", iterations=10)
    >>> plain, tap = TapRNG([0, 1]), ReleaseTap([0, 1], stream=0)
    >>> _ = [get_mechanism(cfg.mechanism).run(load_problem(cfg), cfg, rng) for rng in (plain, tap)]
    >>> len(tap.releases), tap.releases[0].shape
    (10, (2, 10))
    >>> clean = tap.releases[0] - plain.draws[0]   # the same seeds and stream: the same noise
    >>> bool(np.allclose(clean[0], clean[1]))   # what is left is the clean gradient, the same at the start
    True
    """

    def __init__(self, seeds, stream: int = streams.RUN):
        super().__init__(seeds, stream)
        self.releases: list[np.ndarray] = []
        self.release_observer = self.releases.append


#: a measured shift above the declared sensitivity by more than this (relative) is a finding
SHIFT_RTOL = 1e-9


@dataclass(frozen=True)
class ShiftCheck:
    """What a replaced record really moved the first release, against what the plan declares.

    Both neighbours run with common random numbers (the same seeds, so the same noise and the
    same Poisson coins) from the same start, so the first releases differ by exactly the
    record's clipped contribution, computed by the mechanism's own code.  ``declared`` and
    ``measured`` are in the plan's units (the mean gradient for DP-GD, the clipped sum for the
    Poisson-sampled mechanisms); ``included`` counts the runs whose first step sampled the
    record, against the declared rate ``sample_rate`` (Clopper–Pearson bounds at ``alpha``).

    >>> ok = ShiftCheck(declared=2.0, measured=2.0, runs=100, what="the clipped sum")
    >>> ok.reached, ok.exceeds, ok.findings()
    (True, False, [])
    >>> bad = ShiftCheck(declared=2.0, measured=3.0, runs=100, what="the clipped sum")
    >>> bad.to_dict()["findings"][0][:60]
    'the replaced record moved the clipped sum by 3, more than th'
    >>> often = ShiftCheck(2.0, 2.0, 100, "the clipped sum", sample_rate=0.01, included=40, rate_lower=0.3)
    >>> often.rate_exceeds, "more often than the declared rate" in often.findings()[0]
    (True, True)
    """

    declared: float
    measured: float
    runs: int
    what: str
    sample_rate: float | None = None
    included: int | None = None
    rate_lower: float | None = None
    rate_upper: float | None = None

    @property
    def exceeds(self) -> bool:
        return self.measured > self.declared * (1.0 + SHIFT_RTOL) + 1e-300

    @property
    def rate_exceeds(self) -> bool:
        return self.rate_lower is not None and self.rate_lower > self.sample_rate

    @property
    def reached(self) -> bool:
        """The worst case the plan declares was reached (within rounding)."""
        return abs(self.measured - self.declared) <= 1e-9 * max(self.declared, 1e-300)

    def findings(self) -> list[str]:
        out = []
        if self.exceeds:
            out.append(f"the replaced record moved {self.what} by {self.measured:.6g}, more than the declared "
                       f"sensitivity {self.declared:.6g}: the calibration's sensitivity or the clipping is wrong")
        if self.rate_exceeds:
            out.append(f"the record was sampled in {self.included} of {self.runs} measured steps (rate ≥ "
                       f"{self.rate_lower:.4g}), more often than the declared rate q = {self.sample_rate:.4g}")
        return out

    def to_dict(self) -> dict:
        return {"declared": self.declared, "measured": self.measured, "runs": self.runs, "what": self.what,
                "sample_rate": self.sample_rate, "included": self.included, "rate_lower": self.rate_lower,
                "rate_upper": self.rate_upper, "reached": self.reached, "findings": self.findings()}


def measure_shift(mechanism, problem0: Problem, problem1: Problem, config, seeds, alpha: float = 0.05):
    """Run the real mechanism on two neighbouring problems with common random numbers and
    compare the first releases (see :class:`ShiftCheck`); ``None`` where the mechanism does not
    release noisy gradients one step at a time (or releases them per client).

    >>> from dpcore.experiments.run import RunSpec, load_problem
    >>> from dpcore.mechanisms import get_mechanism
    >>> from dpcore.audit.canaries import make_canary, replace_record
    >>> cfg = RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", iterations=1)
    >>> problem = load_problem(cfg)
    >>> can = make_canary(problem.dataset, "opposite-pair")
    >>> pair = [dataclasses.replace(problem, dataset=replace_record(problem.dataset, can.index, x, can.y))
    ...         for x in (can.anti_x, can.x)]
    >>> check = measure_shift(get_mechanism(cfg.mechanism), *pair, cfg, list(range(20)))
    >>> check.runs, check.what, check.exceeds   # within what the plan declares
    (20, 'the released mean gradient', False)
    >>> measure_shift(get_mechanism("output-gaussian"), *pair, cfg, [0]) is None   # no gradient steps
    True
    """
    if mechanism.family != "gradient" or not mechanism.private:
        return None
    taps = []
    for problem in (problem0, problem1):
        tap = ReleaseTap(seeds)
        out = mechanism.run(problem, config, tap)
        taps.append(tap)
    if not taps[0].releases or out.plan.parts or len(out.plan.releases) != 1:
        return None
    release = out.plan.releases[0]
    diff = taps[1].releases[0] - taps[0].releases[0]  # (runs, p): the noise cancels exactly
    shifts = np.linalg.norm(diff, axis=1)
    runs = shifts.size
    if release.kind == "sampled-gaussian":
        unit = release.sample_rate * problem0.n  # the optimiser divides the clipped sum by q·n
        moved = shifts > 0
        k = int(np.sum(moved))
        lo = clopper_pearson_lower(k, runs, 1 - alpha / 2)
        hi = clopper_pearson_upper(k, runs, 1 - alpha / 2)
        return ShiftCheck(release.sensitivity, float(shifts.max() * unit), runs, "the clipped sum of gradients",
                          release.sample_rate, k, lo, hi)
    return ShiftCheck(release.sensitivity, float(shifts.max()), runs, "the released mean gradient")


@dataclass(frozen=True)
class WhiteBoxScores:
    """Per-run scores on the two sides (higher: 'the canary is in'), and what was tested."""

    without: np.ndarray  # (trials,)
    with_: np.ndarray  # (trials,)
    description: str
    # Scores whose two distributions are Gaussian shifts symmetric about 0 (the Gaussian-DP
    # fit applies): the scores themselves, or the Gaussian part of a composed release.
    gaussian: tuple[np.ndarray, np.ndarray] | None = None
    # μ of the Gaussian releases the attack observes, were the claim exact: the largest
    # Gaussian-DP μ its scores can show (below the certified one where the proof pays for
    # more than the attack sees, as in objective perturbation).
    ceiling_mu: float | None = None
    # (sampling rate, steps, noise multiplier the scores assume) where the scores are sums of
    # Poisson-sampled Gaussian step scores: the family fit of dpcore.audit.bounds applies.
    sampled: tuple[float, int, float] | None = None
    # (SS, df) where the attack reads the Gaussian noise itself, every coordinate of every noisy
    # release of both sides' runs: SS is their sum of squares in units of the claimed variance,
    # df their count (χ²(df) at the claimed scale; the χ² scale bound of dpcore.audit.bounds).
    noise_ss: tuple[float, int] | None = None
    # the same noise's statistics, for the audit's own checks (dpcore.audit.noisecheck.NoiseMoments)
    noise_moments: NoiseMoments | None = None


def _unit(p: int) -> np.ndarray:
    e = np.ones(p)
    return e / np.linalg.norm(e)


def _shift_scores(y0: np.ndarray, y1: np.ndarray, deltas: np.ndarray, sigmas: np.ndarray):
    """Gaussian releases (runs × releases): observations y ∓ Δ/2, scored by the LLR
    Σ_j Δ_j·obs_j/σ_j² of N(+Δ/2, σ²) against N(−Δ/2, σ²)."""
    w = deltas / sigmas**2
    return (y0 - deltas / 2) @ w, (y1 + deltas / 2) @ w


def _sampled_scores(y0, y1, clip, sigma, q, rng):
    """Poisson-sampled sums (runs × steps, in sum units): the record (±C) enters each step with
    probability q; scored by the mixture log-likelihood ratio, summed over steps."""
    b0 = rng.random(y0.shape) < q
    b1 = rng.random(y1.shape) < q
    z = sigma / clip
    return (sampled_step_llr((y0 - clip * b0) / clip, z, q).sum(axis=1),
            sampled_step_llr((y1 + clip * b1) / clip, z, q).sum(axis=1))


def _noise_moments(sides, sigmas) -> NoiseMoments:
    """The audit's check of the noise it read (:class:`~dpcore.audit.noisecheck.NoiseMoments`): per side
    a list of (runs, p) arrays, one a release, release j of claimed scale ``sigmas[j]``."""
    moments = NoiseMoments()
    for draws in sides:
        moments.add(np.stack([np.asarray(d, dtype=float) / float(s) for d, s in zip(draws, sigmas)], axis=1))
    return moments


def _noise_ss(sides, sigmas) -> tuple[float, int]:
    """(Σ (noise/σ)², count) over every coordinate of the noise vectors ``sides`` (per side a list,
    one (runs, p) array per release, release j of claimed scale ``sigmas[j]``)."""
    ss, df = 0.0, 0
    for draws in sides:
        for d, sigma in zip(draws, sigmas):
            d = np.asarray(d, dtype=float)
            ss += float(np.einsum("ij,ij->", d, d)) / float(sigma) ** 2
            df += d.size
    return ss, df


def _run(mechanism, problem, config, seeds, rng_cls=TapRNG):
    rngs = rng_cls(seeds)
    return mechanism.run(problem, config, rngs), rngs


def white_box_scores(mechanism, problem: Problem, config, seeds0, seeds1, seed: int | None = None,
                     shift: ShiftCheck | None = None) -> WhiteBoxScores:
    """Scores of ``len(seeds0)`` runs without and ``len(seeds1)`` with the neighbour's shift.

    ``shift``: the end-to-end measurement (:func:`measure_shift`); the noisy steps are then
    scored with the shift the real neighbours produced instead of the declared sensitivity.
    ``seed`` seeds the attacker's own draws (the Poisson coins of DP-SGD's canary); by default it
    is :func:`~dpcore.audit.bounds.simulation_seed` of the run seeds, so it is fresh for every
    chunk of every audit and deterministic given the audit's seed (which fixes its run seeds).

    >>> from dpcore.experiments.run import RunSpec, load_problem
    >>> from dpcore.mechanisms import get_mechanism
    >>> cfg = RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", iterations=10)
    >>> problem = load_problem(cfg)
    >>> wb = white_box_scores(get_mechanism(cfg.mechanism), problem, cfg, [0, 1, 2], [3, 4, 5])
    >>> wb.without.shape, wb.with_.shape, wb.gaussian is not None, wb.sampled   # Gaussian shifts
    ((3,), (3,), True, None)
    >>> again = white_box_scores(get_mechanism(cfg.mechanism), problem, cfg, [0, 1, 2], [3, 4, 5])
    >>> bool(np.array_equal(again.with_, wb.with_))   # the run seeds fix the scores
    True
    >>> try:
    ...     white_box_scores(get_mechanism("input-fukuchi"), problem, cfg, [0], [1])
    ... except ParameterError as e:
    ...     print(str(e)[:40])
    no white-box audit for input-fukuchi: it
    """
    mid = mechanism.id
    if mid in WHITE_BOX_UNAVAILABLE:
        raise ParameterError(f"no white-box audit for {mid}: {WHITE_BOX_UNAVAILABLE[mid]}; "
                             "use the black-box threat model")
    if seed is None:
        seed = simulation_seed(np.asarray(seeds0, dtype=np.int64), np.asarray(seeds1, dtype=np.int64))
    rng = np.random.default_rng([int(seed), streams.WHITE_BOX])
    p = problem.p
    e = _unit(p)
    if not mechanism.private:
        zeros = np.zeros(len(seeds0))
        return WhiteBoxScores(zeros, np.ones(len(seeds1)),
                              "the exact minimiser, no noise: neighbours are told apart with certainty")
    if mid == "local-duchi":
        r = problem.model.lipschitz
        side = []
        for sign, seeds in ((-1.0, seeds0), (1.0, seeds1)):
            z = duchi_privatize(np.tile(sign * r * _unit(problem.d), (len(seeds), 1)), r, config.epsilon,
                                BatchRNG(seeds))
            side.append(z @ _unit(problem.d))
        return WhiteBoxScores(side[0], side[1], "the ℓ2-ball privatiser on the gradients −r·e and +r·e")
    if mechanism.family in ("input", "local"):
        return _record_scores(mechanism, problem, config, seeds0, seeds1)
    if mid == "output-laplace":
        return _gamma_scores(mechanism, problem, config, seeds0, seeds1, e,
                             lambda out, pr: out.theta - pr.erm.theta[None, :],
                             "the released θ minus the exact minimiser (the Gamma-norm noise)")
    if mid == "objective-chaudhuri":
        def recovered(out, pr):  # b = −n(∇L(θ) + Δθ) at the exact minimiser of the tilted objective
            return -pr.n * (pr.model.grad(out.theta, pr.X, pr.y) + out.extras["extra_l2"] * out.theta)
        return _gamma_scores(mechanism, problem, config, seeds0, seeds1, e, recovered,
                             "the linear term b recovered from the optimality condition of the released θ")
    if mechanism.family in ("output", "objective"):
        return _released_vector_scores(mechanism, problem, config, seeds0, seeds1, e)
    # the noisy steps of an optimiser, observed as they are released
    out0, tap0 = _run(mechanism, problem, config, seeds0)
    out1, tap1 = _run(mechanism, problem, config, seeds1)
    plan = out0.plan
    releases = list(plan.releases)
    what = "every Gaussian draw of the run"
    if plan.parts:  # a federation: the record sits in the client with the largest Δ/σ
        j = max(range(len(plan.parts)), key=lambda k: plan.parts[k].releases[0].sensitivity
                / plan.parts[k].releases[0].noise)
        before = sum(q.releases[0].count for q in plan.parts[:j])
        releases = list(plan.parts[j].releases)
        what = f"client {j + 1}'s {releases[0].count} noisy steps (the client where one record weighs most)"
    else:
        before = 0
    steps = sum(r.count for r in releases)
    draws0, draws1 = tap0.draws[before:before + steps], tap1.draws[before:before + steps]
    if len(draws0) != steps or any(d.shape[1:] != (p,) for d in draws0 + draws1):
        raise ParameterError(f"{mid}: the run drew {len(tap0.draws)} Gaussian vectors where its plan "
                             f"declares {steps} releases of dimension {p}")
    y0 = np.stack([d @ e for d in draws0], axis=1)
    y1 = np.stack([d @ e for d in draws1], axis=1)
    kind = releases[0].kind
    noise = np.concatenate([np.full(r.count, r.noise) for r in releases])
    if shift is not None:
        what += f" (shifted by {shift.measured:.4g}, what the real neighbours moved the first release)"
    if kind == "sampled-gaussian":
        r = releases[0]
        clip, sigma, q = (r.sensitivity if shift is None else shift.measured) / 2, r.noise, r.sample_rate
        unit = 1.0 / (q * problem.n)  # the optimiser adds the noise to the sum divided by qn
        s0, s1 = _sampled_scores(y0 / unit, y1 / unit, clip, sigma, q, rng)
        return WhiteBoxScores(s0, s1, f"{what}: a Dirac canary of norm C in each Poisson-sampled sum",
                              sampled=(float(q), int(steps), float(sigma / clip)),
                              noise_ss=_noise_ss((draws0, draws1), noise * unit),
                              noise_moments=_noise_moments((draws0, draws1), noise * unit))
    deltas = np.concatenate([np.full(r.count, r.sensitivity if shift is None else shift.measured)
                             for r in releases])
    sigmas = np.concatenate([np.full(r.count, r.noise) for r in releases])
    s0, s1 = _shift_scores(y0, y1, deltas, sigmas)
    how = "by the declared sensitivity" if shift is None else "by the measured shift"
    return WhiteBoxScores(s0, s1, f"{what}, shifted {how} along e", (s0, s1),
                          ceiling_mu=float(np.sqrt(np.sum((deltas / sigmas) ** 2))),
                          noise_ss=_noise_ss((draws0, draws1), noise),
                          noise_moments=_noise_moments((draws0, draws1), noise))


def _released_vector_scores(mechanism, problem, config, seeds0, seeds1, e) -> WhiteBoxScores:
    """Output and Kifer's objective perturbation: one Gaussian vector, recovered from the release."""
    quiet = dataclasses.replace(config, noise_scale=1e-300)
    ys, plan, vectors = [], None, []
    for seeds in (seeds0, seeds1):
        out, _ = _run(mechanism, problem, config, seeds, BatchRNG)
        plan = out.plan
        if mechanism.family == "output":  # the released θ minus the same run without noise
            clean, _ = _run(mechanism, problem, quiet, seeds, BatchRNG)
            noise = out.theta - clean.theta
        else:  # b = −n(∇L(θ) + Δθ): the optimality condition of the released minimiser
            noise = -problem.n * (problem.model.grad(out.theta, problem.X, problem.y)
                                  + out.extras["extra_l2"] * out.theta)
        ys.append((noise @ e)[:, None])
        vectors.append([noise])
    release = plan.releases[0]
    sigma = release.noise if release.kind == "gaussian" else out.sigma  # Kifer's: the σ it claims
    s0, s1 = _shift_scores(ys[0], ys[1], np.array([release.sensitivity]), np.array([sigma]))
    what = ("the released θ minus the same run without noise" if mechanism.family == "output" else
            "the linear term b recovered from the optimality condition of the released θ")
    return WhiteBoxScores(s0, s1, f"{what}, shifted by the declared sensitivity along e", (s0, s1),
                          ceiling_mu=float(release.sensitivity / sigma), noise_ss=_noise_ss(vectors, [sigma]),
                          noise_moments=_noise_moments(vectors, [sigma]))


def _gamma_scores(mechanism, problem, config, seeds0, seeds1, e, noise_of, what) -> WhiteBoxScores:
    """Gamma-norm noise b (density ∝ e^{−‖b‖/s}) against b + Δe: LLR (‖v‖ − ‖v − Δe‖)/s."""
    side = []
    for k, seeds in enumerate((seeds0, seeds1)):
        out, _ = _run(mechanism, problem, config, seeds, BatchRNG)
        release = out.plan.releases[0]
        delta, scale = release.sensitivity, out.sigma
        v = noise_of(out, problem) + (k * delta) * e[None, :]
        side.append((np.linalg.norm(v, axis=1) - np.linalg.norm(v - delta * e[None, :], axis=1)) / scale)
    return WhiteBoxScores(side[0], side[1], what + ", against the same shifted by the declared sensitivity")


def _record_scores(mechanism, problem, config, seeds0, seeds1) -> WhiteBoxScores:
    """Input perturbation: record 0 is −e (label −1) on one side, +e (label +1) on the other;
    the released record's feature noise and label are scored by the exact LLR."""
    options = tuple(sorted({**dict(config.options), "keep_data": True}.items()))
    cfg = dataclasses.replace(config, options=options)
    d = problem.d
    e = _unit(d)
    side, feature_side = [], []
    for sign, seeds in ((-1.0, seeds0), (1.0, seeds1)):
        out, _ = _run(mechanism, problem, cfg, seeds, BatchRNG)
        if out.released_data is None:
            raise ParameterError(f"{mechanism.id} does not return the released records")
        Xp, yp = out.released_data
        features, label = out.plan.releases if out.plan.void is None else (None, None)
        if features is None:
            raise ParameterError(f"{mechanism.id} has no guarantee here ({out.plan.void}); nothing to test")
        sigma = features.noise
        obs = (Xp[:, 0, :] - problem.X[0]) @ e + sign  # the record is sign·e, released with noise
        score = 2.0 * obs / sigma**2
        feature_side.append(score)
        if label.kind == "randomized-response":
            kept = yp[:, 0] == problem.y[0]
            score = score + label.epsilon * sign * np.where(kept, 1.0, -1.0)
        else:
            noise = yp[:, 0] - np.clip(problem.y[0], -1, 1)
            score = score + 2.0 * (noise + sign) / label.noise**2
        side.append(score)
    desc = ("the released record: its feature noise along e (the record is −e or +e) and its label "
            "(−1 or +1), scored by the exact log-likelihood ratio")
    gaussian = (side[0], side[1]) if label.kind == "gaussian" else (feature_side[0], feature_side[1])
    return WhiteBoxScores(side[0], side[1], desc, gaussian)
