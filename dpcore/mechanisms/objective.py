"""Objective perturbation (SPEC §3.3): minimise a randomly tilted objective exactly."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr

from ..privacy import core as privacy
from ..erm import known_start, solve_perturbed
from ..numerics.noise import gamma_norm
from ..theory.formulas import chaudhuri_objective, kifer_sigma
from .base import Mechanism, MechanismOutput, register


def logistic_objective_epsilon(scale: float, k: float) -> float:
    """Pure ε of Chaudhuri et al.'s objective perturbation of logistic regression under replace-one:
    Gamma-norm linear term of scale s, k = n(λ + Δ) the regularisation in the sum scaling.

    ``2/s`` when s ≤ k; otherwise ``(2 − p)/s + log(1 + p(1 − p)/k)`` with
    ``p = 2(s − k)/(1 + 2s + √(1 + 4s² + 4k))`` (derivation: :class:`ObjectiveChaudhuri`).  Never
    above CMS's 2/s + 2 log(1 + 1/(4k)), nor above 2/s + log(1 + 1/(4k))."""
    if not scale > 0:
        return math.inf
    if scale <= k:
        return 2.0 / scale
    p = 2.0 * (scale - k) / (1.0 + 2.0 * scale + math.sqrt(1.0 + 4.0 * scale * scale + 4.0 * k))
    return ((2.0 - p) / scale + math.log1p(p * (1.0 - p) / k)) * (1 + 1e-12)


def solve_passes(d: int) -> float:
    """Passes over the rows one exact perturbed solve costs, for the work budget: batched Newton's
    gradients and its Hessians (n·p² each, p/8 passes at GEMM's speed), 6 + d/6.  Measured as the
    marginal cost of 20 more runs on a 2-core machine at load 4: Adult (d = 103) 13 passes a run,
    a synthetic set with d = 401 45; the formula stays within 2× above both (counted as one pass,
    1,000 runs on Adult were priced 18× below their cost and the Compare view waited minutes)."""
    return 6.0 + d / 6.0


@register
class ObjectiveChaudhuri(Mechanism):
    """Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2 (logistic, c = 1/4), (ε, 0)-DP.

    ``θ = argmin L(θ) + (1/n)bᵀθ + (Δ/2)‖θ‖²`` with Gamma-norm ``b`` (density ∝ e^{−‖b‖/s}).
    The proof needs the exact minimiser; we solve to ‖∇‖ ≤ 1e-10.  CMS Thm 9 (replace-one):
    ε = 2/s + 2 log(1 + c/(n(λ + Δ))); the published calibration is the paper's
    (s = 2/ε', ε' = ε − 2 log(1 + c/(nλ)), or Δ raised and ε' = ε/2).

    **The certificate** is tighter, for the logistic loss f(m) = log(1 + e^{−m}) on ‖x‖ ≤ 1.
    In the sum scaling, θ ↦ b_D(θ) = −(Σ f'(yᵢθᵀxᵢ)yᵢxᵢ + kθ), k = n(λ + Δ), is a bijection, so θ̂
    has density ν(b_D(θ))·det H_D(θ).  Replacing record z = (x, y) by z' = (x', y') gives the
    privacy loss at θ

        (‖b_D'(θ)‖ − ‖b_D(θ)‖)/s + log det H_D(θ) − log det H_D'(θ).

    The first term is at most ‖b_D − b_D'‖/s ≤ (σ(−m) + σ(−m'))/s with m = yθᵀx, m' = y'θᵀx'
    (|f'(m)| = σ(−m), σ the logistic function).  H_D and H_D' are a common A ⪰ kI plus the rank-one
    f''(m)xxᵀ and f''(m')x'x'ᵀ, so by the matrix determinant lemma the second term is
    log((1 + f''(m)xᵀA⁻¹x)/(1 + f''(m')x'ᵀA⁻¹x')) ≤ log(1 + σ(m)σ(−m)/k): one log where CMS's
    bound on a rank-two change has two.  With σ(−m') ≤ 1 and p = σ(m) the loss is at most
    1/s + h(p), h(p) = (1 − p)/s + log(1 + p(1 − p)/k).  h' = −1/s + (1 − 2p)/(k + p − p²)
    decreases on [0, ½] and is negative beyond, so h is largest at p = 0 (h = 1/s) when s ≤ k, and
    otherwise at the smaller root of p² − (1 + 2s)p + s − k = 0 (:func:`logistic_objective_epsilon`).
    Reaching the bound needs records of nearly opposite gradients at large θ; a search over
    datasets of four records already finds 0.9× of it (``tests/test_certification.py``, which
    maximises the exact privacy loss); ``tests/independent.py`` maximises the bound numerically.

    The certified calibration keeps the paper's Δ and runs the smallest s the certificate admits:
    the same algorithm with less noise.  (A smaller Δ, which the certificate would also allow,
    trades noise for bias: on Adult at ε ≤ 0.1 it raised the accuracy but doubled the gap.)

    References: CMS 2011 JMLR 12, Alg. 2 and Thm 9; the determinant lemma as in Kifer, Smith &
    Thakurta 2012, Thm 2.
    """

    id = "objective-chaudhuri"
    iterative = False
    name = "Objective perturbation (Chaudhuri et al.)"
    short = "objective (Chaudhuri)"
    family = "objective"
    paper = "Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2"
    models = ("logreg",)
    notion = "(ε, 0)"
    calibrations = ("certified", "published")
    description = ("Add a random linear term bᵀθ/n (Gamma-norm, scale s) and, when λ is too small, "
                   "extra regularisation Δ; release the exact minimiser. Published is the paper's "
                   "calibration; certified calibrates on a tighter certificate of the logistic loss.")
    formula = (r"\begin{gathered}\theta = \arg\min_\theta L(\theta) + \tfrac1n b^\top\theta "
               r"+ \tfrac{\Delta}{2}\|\theta\|^2,\ \|b\|\sim\Gamma(p, s)\\ "
               r"\varepsilon_{pub} = \tfrac2s + 2\log\left(1+\tfrac{c}{n(\lambda+\Delta)}\right)\\ "
               r"\varepsilon_{cert} = \sup_m \tfrac{1+\sigma(-m)}{s} + \log\left(1+\tfrac{\sigma(m)\sigma(-m)}"
               r"{n(\lambda+\Delta)}\right)\end{gathered}")
    privacy_event = ("one release of the minimiser of an objective tilted by a Gamma-norm linear term: pure "
                     "ε = sup over the margin m of (1 + σ(−m))/s + log(1 + σ(m)σ(−m)/(n(λ + Δ))) "
                     "(2/s when s ≤ n(λ + Δ); replace-one, the logistic loss; CMS 2011 Thm 9 bounds it "
                     "by 2/s + 2 log(1 + c/(n(λ + Δ))))")
    calibration_note = ("Published is the paper's noise, proved by CMS Thm 9 (two Jacobian logs); the "
                        "logistic loss's certificate gives it a smaller ε. Certified keeps the paper's "
                        "regularisation Δ and calibrates the noise on that certificate.")

    strongly_convex = True

    @staticmethod
    def extra_l2(problem, config) -> float:
        """Δ, the paper's rule, in both calibrations."""
        return chaudhuri_objective(config.epsilon, problem.n, problem.model.lam, problem.model.smoothness)[1]

    def plan(self, problem, config, scale):
        k = problem.n * (problem.model.lam + self.extra_l2(problem, config))
        # one replaced record moves the sum's gradient, so b, by at most 2 (|f'| ≤ 1, ‖x‖ ≤ 1)
        return privacy.theorem("the minimiser of the tilted objective (the logistic loss's supremum, "
                               "replace-one; CMS 2011 Thm 9 with one Jacobian log)",
                               logistic_objective_epsilon(scale, k), sensitivity=2.0 * problem.model.lipschitz)

    def published_noise(self, problem, config):
        eps_p, _ = chaudhuri_objective(config.epsilon, problem.n, problem.model.lam, problem.model.smoothness)
        return 2.0 / eps_p

    def calibration_start(self, problem, config):
        return 2.0 / config.epsilon  # the certificate is never below 2/s

    def work_steps(self, config, n: int, d: int = 0) -> float:
        return solve_passes(d)

    def run(self, problem, config, rngs):
        model, n = problem.model, problem.n
        extra = self.extra_l2(problem, config)
        scale = self.noise(problem, config)
        b = gamma_norm(rngs, problem.p, scale)
        theta = solve_perturbed(model, problem.X, problem.y, b / n, extra, start=known_start(problem.erm))
        return MechanismOutput(
            theta=theta, sigma=scale, plan=self.plan(problem, config, scale),
            extras={"noise": "Gamma-norm scale of the linear term b", "epsilon_prime": 2.0 / scale,
                    "extra_l2": extra},
        )


#: the models whose loss is a GLM's, unconstrained, with |f'| ≤ ``lipschitz`` and f'' ≤ ``smoothness``
#: on ‖x‖ ≤ 1: the privacy-profile certificate of :class:`ObjectiveGaussian` applies to them
GLM_MODELS = ("logreg",)


def kifer_epsilon(sigma: float, delta: float, zeta: float) -> float:
    """Inverse of :func:`kifer_sigma` in ε (σ decreases in ε): the ε a given σ certifies."""
    # σ²ε² = ζ²(8 log(2/δ) + 4ε)  ⇒  (σ²)ε² − 4ζ²ε − 8ζ² log(2/δ) = 0
    a, bq, cq = sigma**2, -4.0 * zeta**2, -8.0 * zeta**2 * math.log(2.0 / delta)
    if not a > 0:  # σ so small that σ² is 0 in floating point: next to no noise, no guarantee
        return math.inf
    return (-bq + math.sqrt(bq * bq - 4 * a * cq)) / (2 * a)


#: the folded statistic's grid (from the point where the privacy loss passes ε): its tail beyond 40 is below 1e-170
_W = np.linspace(0.0, 40.0, 8001)


def folded_tail(w: np.ndarray) -> np.ndarray:
    """sup over ρ of P(|U| + |V| > w) for standard normals U, V of correlation ρ: |U| + |V| =
    max(|U + V|, |U − V|), two independent normals of variances 2 ± 2ρ; the supremum is at ρ = 1
    (2|U|: 2Φ̄(w/2)) or ρ = 0 (1 − (1 − p)², p = 2Φ̄(w/√2)) (``tests/test_certification.py``
    checks every ρ on a fine grid)."""
    p = 2.0 * ndtr(-w / math.sqrt(2.0))
    return np.maximum(2.0 * ndtr(-w / 2.0), 2.0 * p - p * p)


def glm_objective_delta(epsilon: float, mu: float, shift: float) -> float:
    """δ(ε) of Gaussian objective perturbation of a GLM under replace-one, for μ = ζ/σ and
    shift = log(1 + λ_H/Δ) + 2μ²: E[(1 − e^(ε − Λ))₊] with Λ = shift + μ·W, W the folded
    statistic of :func:`folded_tail` (derivation: :class:`ObjectiveGaussian`).  Trapezoid rule on a
    fine grid, raised by 1e-9 relative."""
    if not mu > 0:
        return 0.0 if epsilon >= shift else 1.0
    w0 = max((epsilon - shift) / mu, 0.0)
    head = 0.0 if w0 > 0 else -math.expm1(epsilon - shift) if epsilon < shift else 0.0
    w = w0 + _W
    body = mu * np.exp(epsilon - shift - mu * w) * folded_tail(w)
    return (head + float(np.trapezoid(body, w))) * (1 + 1e-9)


def glm_objective_epsilon(sigma: float, delta: float, zeta: float, lam_h: float, big_delta: float) -> float:
    """The ε at δ that :func:`glm_objective_delta` certifies for noise σ (∞ when none does)."""
    if not sigma > 0:
        return math.inf
    mu = zeta / sigma
    shift = math.log1p(lam_h / big_delta) + 2.0 * mu * mu
    if not math.isfinite(shift):  # σ so small that μ² overflows: next to no noise, no guarantee
        return math.inf
    if glm_objective_delta(shift, mu, shift) <= delta:  # already below δ where the loss begins
        return shift
    hi = shift + mu * 40.0
    if glm_objective_delta(hi, mu, shift) > delta:
        return math.inf
    return brentq(lambda e: glm_objective_delta(e, mu, shift) - delta, shift, hi, xtol=1e-12, rtol=1e-10) * (1 + 1e-9)


@register
class ObjectiveGaussian(Mechanism):
    """Kifer, Smith & Thakurta 2012 ("Obj-Gauss"), (ε, δ)-DP.

    ``θ = argmin (1/n)Σℓ + (Δ/(2n))‖θ‖² + (1/n)bᵀθ`` with ``b ~ N(0, σ²I)`` and
    ``Δ ≥ 2λ_H/ε``.  We take ``Δ = max(nλ, 2λ_H/ε)`` so the model's own
    regularisation is kept.  The paper proves ``σ² = ζ²(8 log(2/δ) + 4ε)/ε²``
    for neighbours that add or remove a record (published mode).  Under
    replace-one, the gradient of the loss moves by up to 2ζ, so that bound is
    read with 2ζ: twice the paper's σ.  The Jacobian half of the proof is unchanged
    (det(A + H')/det(A + H) ≤ det(A + H')/det(A) ≤ 1 + λ_H/Δ for PSD rank-one H, H').

    **The privacy profile of a GLM** (logistic regression: ℓ = f(y θᵀx), |f'| ≤ ζ, 0 ≤ f'' ≤ λ_H,
    unconstrained), a tighter certificate in the spirit of Redberg, Koskela & Wang 2023 (whose
    analysis is add/remove), derived here for replace-one.  In the sum scaling J_D(θ) = Σℓ +
    (Δ/2)‖θ‖² + bᵀθ, θ ↦ b_D(θ) = −∇(J_D − bᵀθ)(θ) is a bijection, so θ̂ has density
    ν(b_D(θ))·det H_D(θ) (ν the N(0, σ²I) density, H_D the Hessian).  Replacing record z by z'
    moves b by g(θ) = ∇ℓ(θ; z) − ∇ℓ(θ; z') = a·x − a'·x' with |a|, |a'| ≤ ζ, and the Hessian by a
    rank-one swap.  Under D, b ~ N(0, σ²I) exactly, and the privacy loss at θ̂ is
    (2⟨b, g⟩ + ‖g‖²)/(2σ²) + log det H_D/det H_D' ≤ μ(|U| + |V|) + 2μ² + log(1 + λ_H/Δ), with
    μ = ζ/σ and U = ⟨b, x⟩/(σ‖x‖), V likewise for x' (standard normals of correlation ρ, the
    cosine of x and x'), since ‖x‖, ‖x'‖ ≤ 1.  δ(ε) = E[(1 − e^(ε − loss))₊] is increasing in the
    loss, so the bound's expectation, at the worst ρ, is a δ for ε (:func:`glm_objective_delta`).
    The certificate is the smaller of the two; linear regression (on a ball) keeps Kifer et al.'s.

    References: Kifer, Smith & Thakurta 2012 (COLT), Thm 2; Redberg, Koskela & Wang 2023 (NeurIPS).
    """

    id = "objective-gaussian"
    iterative = False
    name = "Objective perturbation (Gaussian, Kifer et al.)"
    short = "objective (Gaussian)"
    family = "objective"
    paper = "Kifer, Smith & Thakurta 2012"
    models = ("logreg", "linreg")
    notion = "(ε, δ)"
    calibrations = ("certified", "published")
    description = ("Add a Gaussian linear term and at least 2λ_H/ε of regularisation; release the exact "
                   "minimiser. The paper's σ is proved for add/remove neighbours; certified mode calibrates "
                   "on the tighter of Kifer et al.'s bound with the replace-one gradient bound 2ζ and, for "
                   "logistic regression, the GLM's privacy profile (a folded Gaussian loss).")
    formula = (r"\theta=\arg\min_\theta \tfrac1n\sum_i\ell_i + \tfrac{\Delta}{2n}\|\theta\|^2+\tfrac1n b^\top\theta,\ "
               r"\sigma^2_{pub}=\frac{\zeta^2(8\log(2/\delta)+4\varepsilon)}{\varepsilon^2},\ "
               r"\sigma_{cert}=2\sigma_{pub}\ \text{(or less: the GLM profile, logistic)},\ "
               r"\Delta\ge\frac{2\lambda_H}{\varepsilon}")
    privacy_event = ("one release of the minimiser of an objective tilted by a Gaussian linear term: "
                     "(ε, δ), the smaller of Kifer et al. 2012 Thm 2 with the replace-one gradient bound 2ζ, "
                     "ε = max(ε_noise(σ, δ, 2ζ), 2λ_H/Δ), and (logistic regression) the GLM's privacy profile: "
                     "loss ≤ log(1 + λ_H/Δ) + 2μ² + μ(|U| + |V|), μ = ζ/σ, U, V standard normals")
    calibration_note = ("Published is the paper's σ, proved for add/remove neighbours; under replace-one "
                        "Kifer et al.'s bound certifies about 2ε with it, the GLM profile (logistic "
                        "regression) less. Certified calibrates on the tighter of the two.")

    @staticmethod
    def big_delta(problem, config) -> float:
        return max(problem.n * problem.model.lam, 2.0 * problem.model.smoothness / config.epsilon)

    def plan(self, problem, config, sigma):
        zeta, lam_h = problem.model.lipschitz, problem.model.smoothness
        big_delta = self.big_delta(problem, config)
        eps = max(kifer_epsilon(sigma, config.delta, 2.0 * zeta), 2.0 * lam_h / big_delta)
        if problem.model.id in GLM_MODELS:
            profile = glm_objective_epsilon(sigma, config.delta, zeta, lam_h, big_delta)
            if profile < eps:
                return privacy.theorem("the minimiser of the Gaussian-tilted objective (a GLM's privacy "
                                       "profile, replace-one: a folded Gaussian loss of μ = ζ/σ)", profile,
                                       config.delta, sensitivity=2.0 * zeta)
        return privacy.theorem("the minimiser of the Gaussian-tilted objective (Kifer et al. Thm 2, "
                               "replace-one: gradient bound 2ζ)", eps, config.delta, sensitivity=2.0 * zeta)

    def published_noise(self, problem, config):
        return kifer_sigma(config.epsilon, config.delta, problem.model.lipschitz)

    def calibration_start(self, problem, config):
        return 2.0 * self.published_noise(problem, config)

    def work_steps(self, config, n: int, d: int = 0) -> float:
        return solve_passes(d)

    def run(self, problem, config, rngs):
        model, n = problem.model, problem.n
        big_delta = self.big_delta(problem, config)
        extra = big_delta / n - model.lam
        sigma = self.noise(problem, config)
        b = rngs.normal(problem.p, sigma)
        theta = solve_perturbed(model, problem.X, problem.y, b / n, extra, start=known_start(problem.erm))
        extras = {"noise": "Gaussian σ of the linear term b", "Delta": big_delta, "extra_l2": extra,
                  "sigma_paper": self.published_noise(problem, config)}
        if extra > 0:
            extras["note"] = f"regularisation raised to Δ/n = {big_delta / n:.3g} (needs Δ ≥ 2λ_H/ε)"
        return MechanismOutput(theta=theta, sigma=sigma, plan=self.plan(problem, config, sigma), extras=extras)
