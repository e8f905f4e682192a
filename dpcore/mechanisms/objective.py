"""Objective perturbation (SPEC §3.3): minimise a randomly tilted objective exactly."""

from __future__ import annotations

import math

from .. import privacy
from ..erm import known_start, solve_perturbed
from ..noise import gamma_norm
from ..theory.formulas import chaudhuri_objective, kifer_sigma
from .base import Mechanism, MechanismOutput, register
from .output import require_strong_convexity


@register
class ObjectiveChaudhuri(Mechanism):
    """Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2 (logistic, c = 1/4), (ε, 0)-DP.

    ``θ = argmin L(θ) + (1/n)bᵀθ + (Δ/2)‖θ‖²`` with Gamma-norm ``b`` of scale
    ``2/ε'``.  The proof needs the exact minimiser; we solve to ‖∇‖ ≤ 1e-10.
    Thm 9 (replace-one): the release is ε-DP with
    ``ε = ε' + 2 log(1 + c/(n(λ + Δ)))``, ε' = 2/scale.

    References: CMS 2011 JMLR 12, Alg. 2 and Thm 9.
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
    description = ("Add a random linear term bᵀθ/n (Gamma-norm, scale 2/ε') and, when λ is too small, "
                   "extra regularisation Δ; release the exact minimiser. Exact constants: published = certified.")
    formula = (r"\theta = \arg\min_\theta L(\theta) + \tfrac1n b^\top\theta + \tfrac{\Delta}{2}\|\theta\|^2,\ "
               r"\|b\|\sim\Gamma(p, 2/\varepsilon'),\ \varepsilon' = \varepsilon - 2\log\left(1+\tfrac{c}{n\lambda}\right)")
    privacy_event = ("one release of the minimiser of an objective tilted by a Gamma-norm linear term: pure "
                     "ε = 2/scale + 2 log(1 + c/(n(λ + Δ))) by CMS 2011 Thm 9 (replace-one)")
    calibration_note = "The paper's constants are exact: published and certified are the same noise."

    def check(self, problem, config):
        super().check(problem, config)
        require_strong_convexity(self, problem)

    @staticmethod
    def extra_l2(problem, config) -> float:
        return chaudhuri_objective(config.epsilon, problem.n, problem.model.lam, problem.model.smoothness)[1]

    def plan(self, problem, config, scale):
        model, n = problem.model, problem.n
        slack = 2.0 * math.log1p(model.smoothness / (n * (model.lam + self.extra_l2(problem, config))))
        # CMS's proof: one replaced record moves n·∇ of the loss by at most 2 (|ℓ'| ≤ 1, ‖x‖ ≤ 1)
        return privacy.theorem("the minimiser of the tilted objective (CMS 2011 Thm 9)",
                               2.0 / scale + slack, sensitivity=2.0 * model.lipschitz)

    def published_noise(self, problem, config):
        eps_p, _ = chaudhuri_objective(config.epsilon, problem.n, problem.model.lam, problem.model.smoothness)
        return 2.0 / eps_p

    calibration_start = published_noise

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


def kifer_epsilon(sigma: float, delta: float, zeta: float) -> float:
    """Inverse of :func:`kifer_sigma` in ε (σ decreases in ε): the ε a given σ certifies."""
    # σ²ε² = ζ²(8 log(2/δ) + 4ε)  ⇒  (σ²)ε² − 4ζ²ε − 8ζ² log(2/δ) = 0
    a, bq, cq = sigma**2, -4.0 * zeta**2, -8.0 * zeta**2 * math.log(2.0 / delta)
    if not a > 0:  # σ so small that σ² is 0 in floating point: next to no noise, no guarantee
        return math.inf
    return (-bq + math.sqrt(bq * bq - 4 * a * cq)) / (2 * a)


@register
class ObjectiveGaussian(Mechanism):
    """Kifer, Smith & Thakurta 2012 ("Obj-Gauss"), (ε, δ)-DP.

    ``θ = argmin (1/n)Σℓ + (Δ/(2n))‖θ‖² + (1/n)bᵀθ`` with ``b ~ N(0, σ²I)`` and
    ``Δ ≥ 2λ_H/ε``.  We take ``Δ = max(nλ, 2λ_H/ε)`` so the model's own
    regularisation is kept.  The paper proves ``σ² = ζ²(8 log(2/δ) + 4ε)/ε²``
    for neighbours that add or remove a record (published mode).  Under
    replace-one, the gradient of the loss moves by up to 2ζ, so certified mode
    uses 2ζ: twice the paper's σ.  The Jacobian half of the proof is unchanged
    (det(A + H')/det(A + H) ≤ det(A + H')/det(A) ≤ 1 + λ_H/Δ for PSD rank-one H, H').

    References: Kifer, Smith & Thakurta 2012 (COLT), Thm 2.
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
                   "minimiser. The paper's σ is proved for add/remove neighbours: under replace-one "
                   "(certified) σ doubles.")
    formula = (r"\theta=\arg\min_\theta \tfrac1n\sum_i\ell_i + \tfrac{\Delta}{2n}\|\theta\|^2+\tfrac1n b^\top\theta,\ "
               r"\sigma^2_{pub}=\frac{\zeta^2(8\log(2/\delta)+4\varepsilon)}{\varepsilon^2},\ "
               r"\sigma_{cert}=2\sigma_{pub},\ \Delta\ge\frac{2\lambda_H}{\varepsilon}")
    privacy_event = ("one release of the minimiser of an objective tilted by a Gaussian linear term: "
                     "(ε, δ) by Kifer et al. 2012 Thm 2 with the replace-one gradient bound 2ζ, "
                     "ε = max(ε_noise(σ, δ, 2ζ), 2λ_H/Δ)")
    calibration_note = ("Published is the paper's σ, proved for add/remove neighbours; under replace-one it "
                        "certifies about 2ε. Certified doubles σ.")

    @staticmethod
    def big_delta(problem, config) -> float:
        return max(problem.n * problem.model.lam, 2.0 * problem.model.smoothness / config.epsilon)

    def plan(self, problem, config, sigma):
        zeta, lam_h = problem.model.lipschitz, problem.model.smoothness
        eps = max(kifer_epsilon(sigma, config.delta, 2.0 * zeta), 2.0 * lam_h / self.big_delta(problem, config))
        return privacy.theorem("the minimiser of the Gaussian-tilted objective (Kifer et al. Thm 2, "
                               "replace-one: gradient bound 2ζ)", eps, config.delta, sensitivity=2.0 * zeta)

    def published_noise(self, problem, config):
        return kifer_sigma(config.epsilon, config.delta, problem.model.lipschitz)

    def calibration_start(self, problem, config):
        return 2.0 * self.published_noise(problem, config)

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
