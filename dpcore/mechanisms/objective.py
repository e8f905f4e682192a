"""Objective perturbation (SPEC §3.3): minimise a randomly tilted objective exactly."""

from __future__ import annotations

import math


from ..erm import solve_perturbed
from ..noise import gamma_norm
from .base import Mechanism, MechanismOutput, register
from .output import require_strong_convexity


def chaudhuri_parameters(epsilon: float, n: int, lam: float, c: float = 0.25) -> tuple[float, float]:
    """(ε', Δ) of CMS 2011 Alg. 2: the budget left for the noise and the extra L2 term.

    ``ε' = ε − 2 log(1 + c/(nλ))``; if that is ≤ 0, ``Δ = c/(n(e^{ε/4} − 1)) − λ``
    and ``ε' = ε/2``; otherwise Δ = 0.
    """
    eps_p = epsilon - 2.0 * math.log1p(c / (n * lam))
    if eps_p > 0:
        return eps_p, 0.0
    return epsilon / 2.0, c / (n * math.expm1(epsilon / 4.0)) - lam


@register
class ObjectiveChaudhuri(Mechanism):
    """Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2 (logistic, c = 1/4), (ε, 0)-DP.

    ``θ = argmin L(θ) + (1/n)bᵀθ + (Δ/2)‖θ‖²`` with Gamma-norm ``b`` of scale
    ``2/ε'``.  The proof needs the exact minimiser; we solve to ‖∇‖ ≤ 1e-10.

    References: CMS 2011 JMLR 12, Alg. 2 and Thm 9.
    """

    id = "objective-chaudhuri"
    name = "Objective perturbation (Chaudhuri et al.)"
    family = "objective"
    paper = "Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2"
    models = ("logreg",)
    notion = "(ε, 0)"
    calibrations = ("certified", "published")
    description = ("Add a random linear term bᵀθ/n (Gamma-norm, scale 2/ε') and, when λ is too small, "
                   "extra regularisation Δ; release the exact minimiser. Exact constants: published = certified.")
    formula = (r"\theta = \arg\min_\theta L(\theta) + \tfrac1n b^\top\theta + \tfrac{\Delta}{2}\|\theta\|^2,\ "
               r"\|b\|\sim\Gamma(p, 2/\varepsilon'),\ \varepsilon' = \varepsilon - 2\log\left(1+\tfrac{c}{n\lambda}\right)")

    def check(self, problem, config):
        super().check(problem, config)
        require_strong_convexity(self, problem)

    def run(self, problem, config, rngs):
        model, n = problem.model, problem.n
        c = model.smoothness
        eps_p, extra = chaudhuri_parameters(config.epsilon, n, model.lam, c)
        scale = 2.0 / eps_p
        b = gamma_norm(rngs, problem.p, scale)
        theta = solve_perturbed(model, problem.X, problem.y, b / n, extra, start=problem.erm.theta)
        # ε from what ran: ε' = 2/scale, plus the slack term (or doubled when Δ > 0).
        eps_run = 2.0 / scale
        certified = 2.0 * eps_run if extra > 0 else eps_run + 2.0 * math.log1p(c / (n * model.lam))
        return MechanismOutput(
            theta=theta, sigma=scale, epsilon_certified=certified,
            extras={"noise": "Gamma-norm scale of the linear term b", "epsilon_prime": eps_p,
                    "extra_l2": extra,
                    "accounting_event": "pure ε objective perturbation (CMS 2011 Thm 9)"},
        )


def kifer_sigma(epsilon: float, delta: float, zeta: float) -> float:
    """σ of Kifer, Smith & Thakurta 2012's Gaussian linear term: ζ√(8 log(2/δ) + 4ε)/ε."""
    return zeta * math.sqrt(8.0 * math.log(2.0 / delta) + 4.0 * epsilon) / epsilon


def kifer_epsilon(sigma: float, delta: float, zeta: float) -> float:
    """Inverse of :func:`kifer_sigma` in ε (σ decreases in ε): the ε a given σ certifies."""
    # σ²ε² = ζ²(8 log(2/δ) + 4ε)  ⇒  (σ²)ε² − 4ζ²ε − 8ζ² log(2/δ) = 0
    a, bq, cq = sigma**2, -4.0 * zeta**2, -8.0 * zeta**2 * math.log(2.0 / delta)
    return (-bq + math.sqrt(bq * bq - 4 * a * cq)) / (2 * a)


@register
class ObjectiveGaussian(Mechanism):
    """Kifer, Smith & Thakurta 2012 ("Obj-Gauss"), (ε, δ)-DP.

    ``θ = argmin (1/n)Σℓ + (Δ/(2n))‖θ‖² + (1/n)bᵀθ`` with ``b ~ N(0, σ²I)``,
    ``σ² = ζ²(8 log(2/δ) + 4ε)/ε²`` and ``Δ ≥ 2λ_H/ε``.  We take
    ``Δ = max(nλ, 2λ_H/ε)`` so the model's own regularisation is kept.

    References: Kifer, Smith & Thakurta 2012 (COLT), Thm 2.
    """

    id = "objective-gaussian"
    name = "Objective perturbation (Gaussian, Kifer et al.)"
    family = "objective"
    paper = "Kifer, Smith & Thakurta 2012"
    models = ("logreg", "linreg")
    notion = "(ε, δ)"
    calibrations = ("certified", "published")
    description = ("Add a Gaussian linear term with σ² = ζ²(8 log(2/δ) + 4ε)/ε² and at least 2λ_H/ε of "
                   "regularisation; release the exact minimiser. Exact constants: published = certified.")
    formula = (r"\theta=\arg\min_\theta \tfrac1n\sum_i\ell_i + \tfrac{\Delta}{2n}\|\theta\|^2+\tfrac1n b^\top\theta,\ "
               r"\sigma^2=\frac{\zeta^2(8\log(2/\delta)+4\varepsilon)}{\varepsilon^2},\ \Delta\ge\frac{2\lambda_H}{\varepsilon}")

    def run(self, problem, config, rngs):
        model, n = problem.model, problem.n
        zeta, lam_h = model.lipschitz, model.smoothness
        big_delta = max(n * model.lam, 2.0 * lam_h / config.epsilon)
        extra = big_delta / n - model.lam
        sigma = kifer_sigma(config.epsilon, config.delta, zeta)
        b = rngs.normal(problem.p, sigma)
        theta = solve_perturbed(model, problem.X, problem.y, b / n, extra, start=problem.erm.theta)
        certified = max(kifer_epsilon(sigma, config.delta, zeta), 2.0 * lam_h / big_delta)
        extras = {"noise": "Gaussian σ of the linear term b", "Delta": big_delta, "extra_l2": extra,
                  "accounting_event": "Kifer et al. 2012 Thm 2 (explicit constants)"}
        if extra > 0:
            extras["note"] = f"regularisation raised to Δ/n = {big_delta / n:.3g} (needs Δ ≥ 2λ_H/ε)"
        return MechanismOutput(theta=theta, sigma=sigma, epsilon_certified=certified, extras=extras)
