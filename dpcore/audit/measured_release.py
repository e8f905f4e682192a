"""The measured white-box audit of output and objective perturbation (SPEC §5).

The plain white-box audit of these mechanisms (:func:`dpcore.audit.whitebox.white_box_scores`) reads the
noise a run drew and adds the *declared* sensitivity along a fixed direction: a noise check, not an ε
that a pair of records reaches.  This audit measures the mechanism instead, as
:mod:`dpcore.audit.measured` does for the noisy-gradient mechanisms: a pair of real records of the data
domain (replace-one: ``D`` has record ``x``, ``D'`` has ``x'`` at the same index), trained on by the
mechanism's own code, the shift they make measured, and an estimator on measured quantities only.

**Output perturbation** (``output-gaussian``: θ = θ̂_T(D) + N(0, σ²I), θ̂_T the T-th noiseless GD
iterate).  The mechanism's own run with the noise switched off (``noise_scale`` 10⁻³⁰⁰) on ``D`` and on
``D'`` gives the measured shift c = θ̂_T(D') − θ̂_T(D); the released θ minus the same run's noiseless
solution is the noise that ran.  The pair's privacy is exactly a Gaussian shift of ‖c‖/σ (its truth),
and each run is scored by the Neyman–Pearson log-likelihood ratio cᵀ(θ − (θ̂_T(D) + θ̂_T(D'))/2)/σ².
The pair: for logistic regression a *wide pair* x± = a·w ± b·v (v the lowest-variance direction of the
training features, w the direction opposite to y·θ̂_T off v, b = √(1 − a²), both with the replaced
record's label, ‖x±‖ = 1), a chosen on a grid (a = 0 is the opposite pair ±v) to maximise the measured
‖c‖: both records are misclassified by the trained model, so each pulls with nearly its whole
gradient, where the opposite pair's pulls add to one gradient's norm (σ(m) + σ(−m) = 1).  On Breast
Cancer (λ = 10⁻³, T = 100) the opposite pair reaches 0.47 of the declared sensitivity Δ_T, the wide pair
0.71 (a search over every pair of unit records, 0.714): the rest is the start at θ = 0 (the first steps'
margins are near 0) and the data's curvature along v, which contract the record's pull faster than
the proof's (1 − ηλ).  Other models: the opposite pair.

**Objective perturbation** (``objective-gaussian``, Kifer et al. 2012: θ = argmin J_D(θ) + bᵀθ/n,
J_D = L_D + (Δ'/2)‖θ‖², b ~ N(0, σ²I)).  The attacker reads b from the optimality condition,
b_D(θ) = −n(∇L_D(θ) + Δ'θ).  Which measured quantity gives a **sound** lower bound:

* θ ↦ b_D(θ) is a bijection (J_D is strongly convex and smooth), one fixed map applied to the releases
  of both neighbours, so the pair's distinguishability is that of b_D(θ) under ``D`` and under ``D'``.
  Under ``D`` it is b itself, N(0, σ²I).  Under ``D'`` (θ = θ_D'(b)) it is b + s(θ) with
  s(θ) = b_D(θ) − b_D'(θ) = ∇ℓ(θ; z') − ∇ℓ(θ; z) (only the replaced record's gradient differs),
  ‖s‖ ≤ 2ζ, the declared sensitivity: a shift that **depends on the noise** through θ;
* so neither the θ-space difference θ_D'(b) − θ_D(b) (θ's noise is about H⁻¹b/n, not N(0, σ²I)) nor
  the norm ‖s‖ is the right quantity: a shift that follows the noise can carry b onto its own
  distribution (s(b) = −2b: b + s(b) = −b is N(0, σ²I) again, nothing to tell apart, though ‖s‖
  averages about 2σ√p);
* the linear test T = eᵀb_D(θ) along a direction e **fixed before the runs** (the noiseless pair's
  shift) is sound: under ``D``, T ~ N(0, κσ²) (κ the noise's variance along e, 1 as claimed); under
  ``D'``, T = eᵀb + eᵀs(θ) ≥ eᵀb + m wherever eᵀs(θ) ≥ m, so T stochastically dominates N(m, κσ²), every
  threshold on T has FNR ≤ G_μ(FPR) with μ = m/(σ√κ), and the best test on θ does no worse: the pair
  is at least μ-GDP distinguishable.  m is measured: each run's b is solved on ``D`` and on ``D'``
  (common random numbers), and the two releases read through ``D``'s optimality condition differ by
  exactly s(θ_D'(b)) = b_D(θ_D'(b)) − b_D(θ_D(b)); m is the smallest eᵀs over the 2N runs (as the
  noisy-gradient audit takes its smallest path).

For the logistic loss the opposite pair (±v, one label) has s(θ) = −y·v·(σ(−m) + σ(m)) = −y·v at every θ
and equal Hessians (f'' is even), so its privacy loss is **exactly** a Gaussian shift of μ = ζ/σ and the
measured m is ζ: the bound is tight to the pair's truth.  A wide pair moves b by up to 2ζ on average
but not at every θ: objective perturbation's released θ is dominated by its noise (Breast Cancer at
ε = 2: a standard deviation of 3–7 along every direction), so no record stays misclassified in every
run and the smallest projected shift falls below the opposite pair's (0.86 at a = 0.5, mean ‖s‖ 1.36):
the audit takes the opposite pair.  The pair's ε is below the certificate by construction (μ = ζ/σ
against a certificate that pays for 2ζ, a folded statistic, 2μ² and the Jacobian term; Breast Cancer at
certified ε = 2: the pair's truth is 0.73).  Models on a ball (linear regression) have a multiplier
in their optimality condition: not measured (the plain audit runs).

**The estimator** (``measured``), for both: μ_L = m/(σ·r_U), read as ε at δ
(:func:`~dpcore.audit.bounds.gdp_epsilon_lower`), where r_U² = Σ_r u_r²/χ²_α(2N) bounds from above the
noise's variance **along the measured shift direction** e, from one value a run, u_r = eᵀn_r/σ (n_r the
noise that ran on that run's own side: released minus noiseless, or b read from the optimality
condition), 2N independent N(0, κ) values.  It is sound for anisotropic Gaussian noise: the linear
test along e sees exactly κ = eᵀΣe/σ², and its μ is m/(σ√κ) ≤ the pair's (for a constant shift c,
√(cᵀΣ⁻¹c) ≥ ‖c‖²/√(cᵀΣc) by Cauchy–Schwarz; for objective perturbation, the dominance above); with
probability 1 − α, κ_U ≥ κ.  Pooling every coordinate instead bounds the *mean* variance, which is below
κ when the noise is stronger along the shift, and puts the bound above the truth
(``tests/test_audit_measured_release.py`` checks both).  It assumes the noise Gaussian and the runs
independent, both checked by the audit (:class:`~dpcore.audit.noisecheck.NoiseMoments`); where either
fails it is not shown.  The shift is the same in every run of output perturbation (where it is not,
the smallest is taken).

**Findings** (measured facts that refute the certificate): the measured shift above the declared
sensitivity (:class:`~dpcore.audit.whitebox.ShiftCheck`: output perturbation's sensitivity computed for
2n or 2λ), the noise's checks at 10⁻⁹, and the noise's scale below the declared σ (χ² over every
coordinate read, at 10⁻⁹: the mean variance below σ² means some direction carries less noise than the
plan declares; half the noise drawn, or objective perturbation's linear term scaled by 2n, where no
pair of records can show it: the opposite pair's truth at half the noise, μ = 2ζ/σ, is still below the
GLM certificate).  **The noise check** (labelled, never the audited ε): the declared sensitivity at
the measured noise scale, μ = Δ/(σ·r_U) over every coordinate (χ²).

References: Kifer, Smith & Thakurta 2012 (COLT), objective perturbation; Zhang et al. 2017 (IJCAI),
output perturbation after GD; Dong, Roth & Su 2019 (Gaussian DP, post-processing); Nasr et al. 2023
("Tight auditing": white-box access, Gaussian reading).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..erm import LazySolution
from ..exceptions import ParameterError
from ..mechanisms import Problem
from ..optim import BatchRNG
from .bounds import ASSUMPTIONS, Estimate, gaussian_scale_bound, gdp_epsilon_lower, scale_upper
from .canaries import Canary, make_canary, replace_record
from .noisecheck import FINDING_LEVEL, NoiseCheck, NoiseMoments
from .whitebox import ShiftCheck

__all__ = [
    "MEASURED_RELEASES",
    "MeasuredRelease",
    "ReleaseNoiseCheck",
    "along_shift",
    "release_bound",
    "release_measurable",
]

#: the mechanisms this audit measures (one Gaussian release of a trained vector, or of a linear term)
MEASURED_RELEASES = ("output-gaussian", "objective-gaussian")
#: the noise scale of the noiseless runs (the mechanism's own code with the noise switched off)
QUIET = 1e-300
#: the wide pair's share a along the misclassifying direction w, searched on this grid and then ±0.05
#: around its best (a = 0: the opposite pair)
WIDE_GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def release_measurable(mechanism, model) -> bool:
    """Whether this audit applies: output-gaussian, or objective-gaussian of an unconstrained model
    (on a ball the optimality condition has a multiplier the attacker cannot read).

    >>> from dpcore.mechanisms import get_mechanism
    >>> from dpcore.models import make_model
    >>> release_measurable(get_mechanism("output-gaussian"), make_model("logreg"))
    True
    >>> release_measurable(get_mechanism("gradient-dpgd"), make_model("logreg"))
    False
    """
    if mechanism.id not in MEASURED_RELEASES or not mechanism.private:
        return False
    return mechanism.id == "output-gaussian" or getattr(model, "radius", None) is None


def along_shift(noise: np.ndarray, direction: np.ndarray, sigma: float) -> tuple[float, int]:
    """(Σ_r u_r², count): every run's noise projected on the unit ``direction``, in units of the claimed
    ``sigma`` (u_r = eᵀn_r/σ, one value a run).

    >>> along_shift(np.array([[3.0, 4.0], [0.0, 2.0]]), np.array([1.0, 0.0]), 1.0)
    (9.0, 2)
    """
    u = np.asarray(noise, dtype=float) @ np.asarray(direction, dtype=float) / float(sigma)
    return float(u @ u), int(u.size)


def release_bound(shift_min: float, ss: float, df: int, sigma: float, delta: float, alpha: float,
                  noise: NoiseCheck | None = None) -> Estimate:
    """The measured lower bound on ε at confidence 1 − α (module docstring): μ_L = m/(σ·r_U), r_U² =
    ``ss``/χ²_α(``df``), ``ss`` the runs' noise along the measured shift direction (:func:`along_shift`)
    and ``shift_min`` the smallest measured shift along it; not shown where the noise's checks fail.

    >>> e = release_bound(0.5, 2000.0, 2000, 1.0, 1e-5, 0.03)
    >>> round(e.mu, 3)   # 0.5 / r_U, r_U = √(2000/χ²₀.₀₃(2000)) ≈ 1.031
    0.485
    """
    name, why = "measured", ASSUMPTIONS["measured"]
    if noise is not None and not noise.passed:
        return Estimate(name, 0.0, alpha, why, None, "not shown: " + noise.why_not())
    if not df:
        return Estimate(name, 0.0, alpha, why, 0.0, "no run measured: no estimate")
    if not shift_min > 0:
        return Estimate(name, 0.0, alpha, why, 0.0, "the record moved nothing along the shift in some run: "
                                                     "no estimate")
    r_u = scale_upper(ss, df, alpha)
    if not math.isfinite(r_u):
        return Estimate(name, 0.0, alpha, why, 0.0, "the noise is not finite (diverged runs): no estimate")
    mu = math.inf if r_u == 0 else float(shift_min) / (float(sigma) * r_u)
    return Estimate(name, gdp_epsilon_lower(mu, delta), alpha, why, mu,
                    f"smallest measured shift {shift_min:.5g} along its direction, noise along it ≤ {r_u:.5g}× the "
                    f"claimed {sigma:.4g} (χ², {df:,} runs): μ ≥ {mu:.4g}")


@dataclass(frozen=True)
class ReleaseNoiseCheck(NoiseCheck):
    """The noise's checks (:class:`~dpcore.audit.noisecheck.NoiseCheck`) and one more: the noise's scale
    against the declared σ.  ``scale_upper``: the noise's root mean square over every coordinate read,
    over the declared σ, bounded from above at 1 − 10⁻⁹ (χ² over ``scale_count`` coordinates); below 1 the
    noise that ran is smaller than the plan declares somewhere, a finding.

    >>> rng = np.random.default_rng(0)
    >>> from dpcore.audit.noisecheck import check_noise
    >>> base = check_noise(rng.standard_normal((500, 10)))
    >>> ok = ReleaseNoiseCheck.of(base, ss=5000.0, df=5000, sigma=2.0)
    >>> ok.smaller, ok.findings()
    (False, [])
    >>> half = ReleaseNoiseCheck.of(base, ss=1250.0, df=5000, sigma=2.0)
    >>> half.smaller, half.findings()[0][:47]
    (True, 'the noise that ran is smaller than the plan dec')
    """

    scale_upper: float | None = None
    scale_rms: float | None = None
    scale_count: int = 0
    declared_sigma: float | None = None

    @classmethod
    def of(cls, base: NoiseCheck, ss: float, df: int, sigma: float) -> "ReleaseNoiseCheck":
        values = {f.name: getattr(base, f.name) for f in dataclasses.fields(NoiseCheck)}
        upper = scale_upper(ss, df, FINDING_LEVEL) if df else None
        return cls(**values, scale_upper=upper, scale_rms=math.sqrt(ss / df) if df else None, scale_count=int(df),
                   declared_sigma=float(sigma))

    @property
    def smaller(self) -> bool:
        """The noise is smaller than declared, at 1 − 10⁻⁹ (only where it reads as Gaussian, which the χ²
        bound assumes)."""
        return self.scale_upper is not None and self.scale_upper < 1.0 and self.passed

    def findings(self) -> list[str]:
        out = super().findings()
        if self.smaller:
            out.append(f"the noise that ran is smaller than the plan declares: its scale is at most "
                       f"{self.scale_upper:.4g}× the declared σ = {self.declared_sigma:.4g} (root mean square "
                       f"{self.scale_rms:.4g}×, χ² over {self.scale_count:,} coordinates at 1 − 10⁻⁹), so the "
                       "certificate is computed for noise that did not run")
        return out

    def to_dict(self) -> dict:
        return dict(super().to_dict(), scale_upper=self.scale_upper, scale_rms=self.scale_rms,
                    scale_count=self.scale_count, declared_sigma=self.declared_sigma, scale_smaller=self.smaller)


@dataclass
class _Found:
    """What the audit accumulated over its chunks."""

    sensitivity: float  # declared: output Δ_T (θ-space), objective 2ζ (b-space)
    sigma: float  # the claimed noise scale
    what: str
    runs: int = 0
    shift_min: float = math.inf  # the smallest measured shift along the fixed direction e
    shift_max: float = 0.0  # the largest measured ‖shift‖
    shift_sum: float = 0.0  # Σ ‖shift‖ (the mean, reported)
    proj_ss: float = 0.0  # Σ_r (eᵀn_r/σ)²
    proj_df: int = 0
    ss: float = 0.0  # Σ ‖n_r/σ‖² over every coordinate (the noise check, the scale finding)
    df: int = 0
    moments: NoiseMoments = field(default_factory=NoiseMoments)


class MeasuredRelease:
    """The measured white-box audit of output and objective perturbation (module docstring), as a
    threat strategy of :mod:`dpcore.audit.threats` (the interface of :class:`~dpcore.audit.measured.Measured`).

    >>> from dpcore.experiments.run import RunSpec, load_problem
    >>> from dpcore.mechanisms import get_mechanism
    >>> cfg = RunSpec(dataset="breast-cancer", model="logreg", mechanism="output-gaussian", epsilon=2.0)
    >>> problem = load_problem(cfg)
    >>> attack = MeasuredRelease(get_mechanism(cfg.mechanism), problem, problem.model, cfg, "auto", 1.0, "margin")
    >>> attack.canary.kind, round(float(np.linalg.norm(attack.canary.x)), 9)
    ('wide-pair', 1.0)
    >>> seeds, scores = (np.arange(6), np.arange(6) + 100), (np.zeros(6), np.zeros(6))
    >>> list(attack.score_chunk(seeds, 0, 6, scores))
    [12]
    >>> 0.6 < attack.shift.measured / attack.shift.declared < 1.0, attack.shift.findings()
    (True, [])
    """

    threat = "white-box"
    gaussian = None
    sampled = None
    noise_ss = None
    measured = True

    def __init__(self, mechanism, problem, model, config, canary: str, canary_label: float, score: str):
        if not release_measurable(mechanism, model):
            raise ParameterError(f"the measured release audit runs on {' and '.join(MEASURED_RELEASES)} "
                                 f"(objective perturbation unconstrained); not {mechanism.id} with {model.id}")
        self.mechanism, self.model, self.config = mechanism, model, config
        self.objective = mechanism.id == "objective-gaussian"
        self._quiet = dataclasses.replace(config, noise_scale=QUIET)
        wide = (not self.objective and config.model == "logreg" and problem.d >= 2)
        self.canary, self.problems, clean = self._pair(problem, canary_label, config.seed, wide)
        mechanism.check(self.problems[1], config)
        self.problem = self.problems[0]
        if self.objective:  # the exact solutions, solved once: every solve of a run starts from them
            for p in self.problems:
                p.erm.theta
        out = mechanism.run(self.problem, config, BatchRNG([0]))
        plan = out.plan
        if plan.void is not None or plan.parts or len(plan.releases) != 1:
            raise ParameterError(f"{mechanism.id} releases otherwise than one noisy vector: not measured")
        release = plan.releases[0]
        if self.objective:
            sigma = float(out.sigma)
            what = "the linear term b read from the optimality condition"
        else:
            if release.kind != "gaussian":
                raise ParameterError(f"{mechanism.id}'s release is not Gaussian: not measured")
            sigma = float(release.noise)
            what = "the released θ before its noise (the mechanism's own GD, the noise switched off)"
        if release.sensitivity is None or not sigma > 0:
            raise ParameterError(f"{mechanism.id} declares no sensitivity or no noise: not measured")
        self.found = _Found(float(release.sensitivity), sigma, what)
        # the direction of the linear test, fixed before the runs: the noiseless pair's shift
        s0 = self._shifts(clean[0], clean[1], self._extra(out))[0]
        norm = float(np.linalg.norm(s0))
        if not norm > 0:
            raise ParameterError("the canary pair moves nothing: not measured")
        self.direction = s0 / norm

    # -- the pair ----------------------------------------------------------------------------
    def _problem(self, dataset, index: int, x: np.ndarray, y: float) -> Problem:
        ds = replace_record(dataset, index, x, y)
        return Problem(dataset=ds, model=self.model, erm=LazySolution(self.model, ds.X_train, ds.y_train),
                       trace_points=0)  # the audit reads no loss curve

    def _clean(self, problem: Problem, seeds) -> np.ndarray:
        """The mechanism's own run with the noise switched off."""
        return self.mechanism.run(problem, self._quiet, BatchRNG([int(s) for s in seeds])).theta

    def _pair(self, problem: Problem, label: float, seed: int, wide: bool):
        """The canary pair, its two problems and their noiseless releases (one run each)."""
        base = make_canary(problem.dataset, "opposite-pair", label, seed)
        pairs = {0.0: (base, *self._sides(problem.dataset, base))}
        if wide:
            v, y = base.x, base.y
            ref = pairs[0.0][2][0][0]  # the noiseless release on D (the opposite pair's −v in place)
            off = ref - (ref @ v) * v
            if np.linalg.norm(off) > 1e-12:
                w = -y * off / np.linalg.norm(off)

                def size(a):
                    if a not in pairs:
                        b = math.sqrt(1.0 - a * a)
                        can = Canary("wide-pair", a * w + b * v, y, base.index, _wide_words(a, y, base.index),
                                     anti_x=a * w - b * v)
                        pairs[a] = (can, *self._sides(problem.dataset, can))
                    c = pairs[a][2]
                    return float(np.linalg.norm(c[1][0] - c[0][0]))

                best = max(WIDE_GRID, key=size)
                for a in (round(best - 0.05, 2), round(best + 0.05, 2)):
                    if 0.0 < a < 1.0:
                        size(a)
                best = max(pairs, key=size)
                return pairs[best]
        return pairs[0.0]

    def _sides(self, dataset, can: Canary):
        problems = tuple(self._problem(dataset, can.index, x, can.y) for x in (can.anti_x, can.x))
        return problems, tuple(self._clean(p, [0]) for p in problems)

    # -- reading the releases -----------------------------------------------------------------
    @staticmethod
    def _extra(out) -> float:
        return float(out.extras.get("extra_l2", 0.0))

    def _b(self, problem: Problem, theta: np.ndarray, extra: float) -> np.ndarray:
        """b = −n(∇L(θ) + Δ'θ): the linear term a released minimiser of ``problem`` solved with."""
        return -problem.n * (self.model.grad(theta, problem.X, problem.y) + extra * theta)

    def _shifts(self, theta0: np.ndarray, theta1: np.ndarray, extra: float) -> np.ndarray:
        """What the record moved, run by run, between the two releases of common random numbers: θ's
        difference (output), or the two releases read through D's optimality condition (objective)."""
        if not self.objective:
            return theta1 - theta0
        d = self.problems[0]
        return self._b(d, theta1, extra) - self._b(d, theta0, extra)

    # -- the strategy's interface ------------------------------------------------------------
    def measure(self, seeds, alpha: float) -> list[str]:
        return []

    def score_chunk(self, seeds, start: int, stop: int, scores):
        chunk = [np.asarray(seeds[side][start:stop]).tolist() for side in (0, 1)]
        R = stop - start
        if self.objective:
            # every b of both sides solved on D and on D' (common random numbers), one batch a neighbour
            both = chunk[0] + chunk[1]
            outs = [self.mechanism.run(p, self.config, BatchRNG(both)) for p in self.problems]
            extra = self._extra(outs[0])
            shifts = self._shifts(outs[0].theta, outs[1].theta, extra)
            released = [outs[0].theta[:R], outs[1].theta[R:]]
            noise = [self._b(self.problems[side], released[side], extra) for side in (0, 1)]
            for side in (0, 1):
                rel = released[side]
                b0, b1 = self._b(self.problems[0], rel, extra), self._b(self.problems[1], rel, extra)
                scores[side][start:stop] = (np.einsum("rp,rp->r", b0, b0)
                                            - np.einsum("rp,rp->r", b1, b1)) / (2 * self.found.sigma ** 2)
            self._add(shifts, np.concatenate(noise))
        else:
            noise, shifts = [], []
            for side in (0, 1):
                out = self.mechanism.run(self.problems[side], self.config, BatchRNG(chunk[side]))
                clean = [self._clean(p, chunk[side]) for p in self.problems]
                c = clean[1] - clean[0]
                mid = (clean[0] + clean[1]) / 2
                scores[side][start:stop] = np.einsum("rp,rp->r", c, out.theta - mid) / self.found.sigma ** 2
                noise.append(out.theta - clean[side])
                shifts.append(c)
            self._add(np.concatenate(shifts), np.concatenate(noise))
        yield 2 * R

    def _add(self, shifts: np.ndarray, noise: np.ndarray) -> None:
        f = self.found
        norms = np.linalg.norm(shifts, axis=1)
        f.runs += norms.size
        f.shift_min = min(f.shift_min, float(np.min(shifts @ self.direction)))
        f.shift_max = max(f.shift_max, float(norms.max()))
        f.shift_sum += float(norms.sum())
        ss, df = along_shift(noise, self.direction, f.sigma)
        f.proj_ss += ss
        f.proj_df += df
        z = noise / f.sigma
        f.ss += float(np.einsum("rp,rp->", z, z))
        f.df += z.size
        f.moments.add(z)

    def labelled_estimates(self, s0, s1, delta: float, alpha: float):
        return None

    def record(self) -> dict:
        how = ("the noise switched off in the mechanism's own GD on both neighbours gives the shift; the released θ "
               "minus the same run's noiseless solution is the noise" if not self.objective else
               "every run's linear term b solved on both neighbours (common random numbers), the two releases "
               "read through D's optimality condition: the shift in b; b of the released θ: the noise")
        return {"score": "log-likelihood ratio", "canary": self.canary.kind,
                "canary_description": f"{self.canary.description}; {how}",
                "canary_index": self.canary.index, "canary_label": self.canary.y}

    @property
    def ceiling_mu(self) -> float | None:
        """μ of the measured pair at the declared noise: the most this pair's releases can show were the
        claim exact (None before any run)."""
        f = self.found
        return f.shift_min / f.sigma if f.runs and f.shift_min > 0 else None

    @property
    def shift(self) -> ShiftCheck:
        f = self.found
        return ShiftCheck(f.sensitivity, f.shift_max, f.runs, f.what)

    @property
    def noise(self) -> ReleaseNoiseCheck:
        """The noise's checks so far, with its scale against the declared σ (computed once per number of runs)."""
        f = self.found
        if getattr(self, "_noise", (None,))[0] != f.moments.runs:
            self._noise = (f.moments.runs, ReleaseNoiseCheck.of(f.moments.check(), f.ss, f.df, f.sigma))
        return self._noise[1]

    def measured_estimate(self, delta: float, alpha: float) -> Estimate:
        """:func:`release_bound` on what the runs measured, at confidence 1 − α."""
        f = self.found
        return release_bound(f.shift_min if f.runs else 0.0, f.proj_ss, f.proj_df, f.sigma, delta, alpha, self.noise)

    def noise_check_estimate(self, delta: float, alpha: float) -> Estimate:
        """The declared sensitivity at the measured noise scale (χ² over every coordinate): labelled."""
        f = self.found
        why = ASSUMPTIONS["noise-check"]
        noise = self.noise
        if not noise.passed:
            return Estimate("noise-check", 0.0, alpha, why, None, "not shown: " + noise.why_not())
        if not f.df:
            return Estimate("noise-check", 0.0, alpha, why, None, "no run measured")
        e = gaussian_scale_bound(f.ss, f.df, f.sensitivity / f.sigma, delta, alpha)
        return dataclasses.replace(e, name="noise-check", assumption=why,
                                   detail="the noise that ran, at the declared sensitivity: " + e.detail)


def _wide_words(a: float, y: float, index: int) -> str:
    return (f"a wide pair of records of the data domain: D has a·w − b·v, D' has a·w + b·v (v the lowest-variance "
            f"direction of the training features, w the direction opposite to y·θ̂ off v, θ̂ the noiseless release; "
            f"a = {a:g}, b = √(1 − a²), chosen to maximise the measured shift), both with label {y:+g}, replacing "
            f"training record {index}: the trained model misclassifies both, so each pulls with nearly its whole "
            "gradient")
