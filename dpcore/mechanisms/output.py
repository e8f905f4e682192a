"""Output perturbation (SPEC §3.2): train, then add noise to the parameters."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from ..privacy import core as privacy
from ..exceptions import ModelError
from ..numerics.noise import gamma_norm
from ..optim import BatchRNG, gradient_descent, trace_marks
from .base import Mechanism, MechanismOutput, register


@register
class OutputLaplace(Mechanism):
    """Chaudhuri, Monteleoni & Sarwate 2011, Alg. 1: exact minimiser plus Gamma-norm noise.

    Sensitivity of the regularised minimiser is ``2G/(nλ)``; noise density
    ∝ exp(−ε‖b‖/(2G/(nλ))), i.e. ‖b‖ ~ Gamma(p, 2G/(nλε)).  (ε, 0)-DP.

    References: CMS 2011 JMLR 12, Alg. 1 and Thm 6.
    """

    id = "output-laplace"
    iterative = False
    name = "Output perturbation (Laplace / Gamma-norm)"
    short = "output (Laplace)"
    family = "output"
    paper = "Chaudhuri, Monteleoni & Sarwate 2011, Alg. 1"
    models = ("logreg", "linreg")
    notion = "(ε, 0)"
    calibrations = ("certified", "published")
    description = ("Solve the regularised ERM exactly, then add noise whose norm is Gamma(p, 2G/(nλε)) "
                   "in a uniformly random direction. The formula is exact, so published = certified.")
    formula = r"\theta_{priv} = \hat\theta + b,\quad \|b\| \sim \Gamma\!\left(p,\ \frac{2G}{n\lambda\varepsilon}\right)"
    privacy_event = ("one Gamma-norm (ℓ2-Laplace) release of the exact minimiser, replace-one sensitivity "
                     "2G/(nλ): pure ε = Δ/scale")
    calibration_note = "The paper's constant is exact: published and certified are the same noise."

    strongly_convex = True

    @staticmethod
    def sensitivity(problem) -> float:
        return 2.0 * problem.model.lipschitz / (problem.n * problem.model.lam)

    def plan(self, problem, config, scale):
        return privacy.gamma_norm("the exact minimiser", self.sensitivity(problem), scale)

    def published_noise(self, problem, config):
        return self.sensitivity(problem) / config.epsilon

    calibration_start = published_noise

    def run(self, problem, config, rngs):
        model = problem.model
        scale = self.noise(problem, config)
        theta = problem.erm.theta[None, :] + gamma_norm(rngs, problem.p, scale)
        theta = model.project(theta) if model.radius is not None else theta
        return MechanismOutput(
            theta=theta, plan=self.plan(problem, config, scale), sigma=scale,
            extras={"noise": "Gamma-norm scale on the released parameters",
                    "sensitivity": self.sensitivity(problem)},
        )


def _gd_step(model, config) -> tuple[float, bool]:
    """Step η ≤ 1/β for the sensitivity proofs; returns (η, clamped?)."""
    beta = model.smoothness + model.lam
    step = min(config.learning_rate, 1.0 / beta)
    return step, step < config.learning_rate


_CLASSICAL = ("The papers use the classical Gaussian mechanism σ = Δ√(2 ln(1.25/δ))/ε (published; valid for "
              "ε < 1); certified calibrates σ with the analytic Gaussian, exact for every ε.")


class _GaussianOutput(Mechanism):
    """One Gaussian release of a trained vector of declared sensitivity; the papers' classical σ
    published, the analytic Gaussian certified."""

    released: ClassVar[str] = ""

    @staticmethod
    def sensitivity(problem, config) -> float:
        raise NotImplementedError

    def plan(self, problem, config, sigma):
        return privacy.gaussian(self.released, self.sensitivity(problem, config), sigma)

    def published_noise(self, problem, config):
        return privacy.classical_gaussian_sigma(self.sensitivity(problem, config), config.epsilon,
                                                config.delta)

    calibration_start = published_noise


@register
class OutputGaussian(_GaussianOutput):
    """Gaussian output perturbation after T steps of GD (Zhang et al. 2017; seed 001's baseline).

    From a fixed start with step η ≤ 1/β, the T-th iterate has replace-one
    sensitivity ``Δ_T = (2G/(nλ))(1 − (1 − ηλ)^T)``.  Published: the classical
    ``σ = Δ_T√(2 ln(1.25/δ))/ε``; certified: ``σ = Δ_T·σ_AG(ε, δ)``.

    References: Zhang, Zheng, Mou & Wang 2017 (IJCAI), Thm 4; Balle & Wang 2018.
    """

    id = "output-gaussian"
    name = "Output perturbation (Gaussian, after GD)"
    short = "output (Gaussian)"
    family = "output"
    paper = "Zhang et al. 2017; seed 001 baseline"
    models = ("logreg", "linreg")
    notion = "(ε, δ)"
    calibrations = ("certified", "published")
    description = ("Run T non-private GD steps (η ≤ 1/β), then add Gaussian noise calibrated to the "
                   "contraction-based sensitivity of the T-th iterate.")
    formula = (r"\sigma = \Delta_T\,\sigma_{AG}(\varepsilon,\delta),\quad "
               r"\Delta_T = \frac{2G}{n\lambda}\left(1-(1-\eta\lambda)^T\right)")
    privacy_event = ("one Gaussian release of the T-th GD iterate, replace-one sensitivity "
                     "Δ_T = (2G/(nλ))(1 − (1 − ηλ)^T): exact Gaussian DP")
    calibration_note = _CLASSICAL

    strongly_convex = True

    released = "the T-th GD iterate"

    @staticmethod
    def sensitivity(problem, config) -> float:
        model = problem.model
        step, _ = _gd_step(model, config)
        return (2.0 * model.lipschitz / (problem.n * model.lam)
                * (1.0 - (1.0 - step * model.lam) ** config.iterations))

    def run(self, problem, config, rngs):
        step, clamped = _gd_step(problem.model, config)
        T = config.iterations
        sens = self.sensitivity(problem, config)
        sigma = self.noise(problem, config)
        opt = _nonprivate_gd(problem, step, T)  # deterministic: one run serves all R
        R = len(rngs)
        theta = np.repeat(opt.theta, R, axis=0) + rngs.normal(problem.p, sigma)
        extras = {"noise": "Gaussian σ on the released parameters", "sensitivity": sens,
                  "learning_rate_used": step}
        if clamped:
            extras["note"] = f"learning rate clamped to 1/β = {step:.4g} (the sensitivity proof needs η ≤ 1/β)"
        return MechanismOutput(theta=theta, sigma=sigma, plan=self.plan(problem, config, sigma),
                               loss_trace=np.repeat(opt.loss_trace, R, axis=1), trace_steps=opt.trace_steps,
                               extras=extras)


def _nonprivate_gd(problem, step: float, T: int):
    """T noise-free GD steps from the model's zero start, computed once per setting.

    The trajectory involves no randomness, so the R runs (and every ε) share it:
    the problem's store (its run's context) keeps it per (dataset, model, step, T,
    loss-curve points).
    """
    ds, model, points = problem.dataset, problem.model, problem.trace_points

    def compute():
        return gradient_descent(model, ds.X_train, ds.y_train, model.init(1, ds.d), iterations=T,
                                learning_rate=step, rngs=BatchRNG([0]), trace_points=points,
                                progress=problem.progress)

    if problem.store is None:
        return compute()
    key = ("noise-free gd", ds, model, float(step), int(T), tuple(sorted(trace_marks(T, points))))
    return problem.store.memo(key, compute)


def bolt_on_batches(n: int, batch_size: int | None) -> tuple[int, int]:
    """(steps per pass k, smallest batch b_min) of permutation SGD over n records."""
    b = int(min(batch_size or 50, n))
    k = math.ceil(n / b)
    return k, n // k  # np.array_split makes batches of ⌊n/k⌋ and ⌈n/k⌉


@register
class OutputBoltOn(_GaussianOutput):
    """Bolt-on output perturbation of permutation SGD (Wu et al. 2017; seed 002's baseline).

    Whole passes of permutation-based mini-batch SGD with
    ``η_t = min(1/β, 1/(λt))``; sensitivity ``2G/(λn)`` for equal batches.
    ``iterations`` T is rounded up to whole passes of k = ⌈n/b⌉ steps (the bound
    needs every record visited the same number of times).  When b does not
    divide n the batches differ by one record, and a record in the smallest
    batch b_min moves its step by 2ηG/b_min: the sensitivity is
    ``2G/(λ·k·b_min)`` (= 2G/(λn) for equal batches).

    References: Wu, Li, Kumar, Chaudhuri, Jha & Naughton 2017 (SIGMOD), Alg. 2, Thm 5.
    """

    id = "output-bolt-on"
    settings = ("batch_size",)
    name = "Bolt-on output perturbation (permutation SGD)"
    short = "output (bolt-on)"
    family = "output"
    paper = "Wu et al. 2017 (bolt-on DP-SGD); seed 002 baseline"
    models = ("logreg", "linreg")
    notion = "(ε, δ)"
    calibrations = ("certified", "published")
    description = ("Permutation SGD with step min(1/β, 1/(λt)), then Gaussian output noise for "
                   "sensitivity 2G/(λ·k·b_min) (2G/(λn) with equal batches).")
    formula = r"\sigma = \frac{2G}{\lambda\,k\,b_{min}}\,\sigma_{AG}(\varepsilon,\delta),\quad \eta_t=\min\left(\frac1\beta,\frac1{\lambda t}\right)"
    privacy_event = ("one Gaussian release of the last SGD iterate, replace-one sensitivity 2G/(λ·k·b_min) "
                     "(k batches per pass, the smallest of size b_min): exact Gaussian DP")
    calibration_note = _CLASSICAL

    strongly_convex = True

    released = "the last SGD iterate"

    @staticmethod
    def sensitivity(problem, config) -> float:
        k, b_min = bolt_on_batches(problem.n, config.batch_size)
        return 2.0 * problem.model.lipschitz / (problem.model.lam * k * b_min)

    def run(self, problem, config, rngs):
        model = problem.model
        n, R = problem.n, len(rngs)
        steps_per_pass, b_min = bolt_on_batches(n, config.batch_size)
        passes = max(1, math.ceil(config.iterations / steps_per_pass))
        beta = model.smoothness + model.lam
        X, y = problem.X, problem.y
        theta = model.init(R, problem.d)
        t = 0
        for _ in range(passes):
            perms = np.stack([g.permutation(n) for g in rngs])
            for chunk in np.array_split(perms, steps_per_pass, axis=1):
                t += 1
                Xb, yb = X[chunk], y[chunk]
                grad = model.clipped_grad_sum(theta, Xb, yb, np.inf) / chunk.shape[1] + model.lam * theta
                theta = model.project(theta - min(1.0 / beta, 1.0 / (model.lam * t)) * grad)
        sens = self.sensitivity(problem, config)
        sigma = self.noise(problem, config)
        theta = theta + rngs.normal(problem.p, sigma)
        return MechanismOutput(
            theta=theta, sigma=sigma, plan=self.plan(problem, config, sigma),
            extras={"noise": "Gaussian σ on the released parameters", "sensitivity": sens,
                    "passes": passes, "batch_size": int(min(config.batch_size or 50, n)),
                    "smallest_batch": b_min, "steps": t},
        )
