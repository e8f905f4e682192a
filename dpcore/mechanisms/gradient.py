"""Gradient perturbation (SPEC §3.4): noise on every step, accounted exactly."""

from __future__ import annotations

import math

import numpy as np

from ..privacy import accounting as acc
from ..privacy import core as privacy
from ..optim import gradient_descent, sgd
from ..params import Interval, Param
from ..theory.formulas import noisy_gd_variance
from .base import Mechanism, MechanismOutput, Stack, declare, register


def gradient_bound(problem, config) -> tuple[float, float | None]:
    """(G, clip): the per-example gradient bound, and the clipping norm if clipping is needed.

    Convex GLMs have a Lipschitz bound on ‖x‖ ≤ 1; the MLP has none, so its
    per-example gradients are clipped to ``clip_norm`` (default 1), which then
    plays the role of G.
    """
    G = problem.model.lipschitz
    if math.isfinite(G) and config.clip_norm is None:
        return G, None
    C = config.clip_norm or 1.0
    return C, C


def clipped_records(mechanism, model, config) -> str | None:
    """:meth:`~dpcore.mechanisms.base.Mechanism.clips_records` of the mechanisms that clip as
    :func:`gradient_bound` says: a clipping norm given, or a model without a Lipschitz bound."""
    G = model.lipschitz
    if math.isfinite(G) and config.clip_norm is None:
        return None
    return f"{mechanism.short} clips every per-record gradient to C = {config.clip_norm or 1.0:g}"


def dpgd_published_sigma(c: float, G: float, T: int, n: int, epsilon: float, delta: float) -> float:
    """Wang, Ye & Xu 2017: σ² = c·G²·T·log(1/δ)/(n²ε²) on the mean gradient."""
    return math.sqrt(noisy_gd_variance(G, T, n, epsilon, delta, c))


def dpgd_certified_sigma(G: float, T: int, n: int, epsilon: float, delta: float) -> float:
    """T Gaussian steps of replace-one sensitivity 2G/n composing to (ε, δ): (2G/n)√T σ_AG(ε, δ)."""
    return (2.0 * G / n) * math.sqrt(T) * acc.sigma_ag(epsilon, delta)


@register
class GradientDPGD(Mechanism):
    """Full-batch noisy gradient descent (Wang, Ye & Xu 2017).

    Each step adds ``N(0, σ²I)`` to the mean gradient (sensitivity 2G/n).
    Published: ``σ² = c·G²·T·log(1/δ)/(n²ε²)`` — with c = 1 it under-calibrates
    (zCDP needs c ≈ 8–12); certified: ``σ = (2G/n)√T·σ_AG(ε, δ)``, exact.

    References: Wang, Ye & Xu 2017 (NeurIPS), Alg. 1 / Thm 4.
    """

    id = "gradient-dpgd"
    settings = ("clip_norm",)
    name = "Noisy gradient descent (DP-GD)"
    short = "DP-GD"
    family = "gradient"
    paper = "Wang, Ye & Xu 2017"
    models = ("logreg", "linreg", "mlp")
    notion = "(ε, δ)"
    calibrations = ("certified", "published")
    description = ("Full-batch GD with Gaussian noise on every mean gradient; T steps compose exactly to "
                   "μ = √T·(2G/n)/σ Gaussian DP.")
    formula = (r"\sigma^2_{pub} = \frac{c\,G^2 T\log(1/\delta)}{n^2\varepsilon^2},\quad "
               r"\sigma_{cert} = \frac{2G}{n}\sqrt{T}\,\sigma_{AG}(\varepsilon,\delta)")
    privacy_event = ("T Gaussian releases of the (clipped) mean gradient, replace-one sensitivity 2G/n: "
                     "exact composition, μ = √T·(2G/n)/σ Gaussian DP")
    calibration_note = "Published is the paper's σ with the constant c (c = 1 under-calibrates)."

    def clips_records(self, model, config):
        return clipped_records(self, model, config)

    def plan(self, problem, config, sigma):
        G, _ = gradient_bound(problem, config)
        return privacy.gaussian("the mean gradient, every step", 2.0 * G / problem.n, sigma,
                                config.iterations)

    def published_noise(self, problem, config):
        G, _ = gradient_bound(problem, config)
        return dpgd_published_sigma(config.c, G, config.iterations, problem.n, config.epsilon, config.delta)

    def calibration_start(self, problem, config):
        G, _ = gradient_bound(problem, config)
        return dpgd_certified_sigma(G, config.iterations, problem.n, config.epsilon, config.delta)

    stack_fields = ("epsilon", "learning_rate")

    def run(self, problem, config, rngs):
        return self.run_stack(problem, [config], [rngs])[0]

    def run_stack(self, problem, configs, rngs):
        stack = Stack(configs, rngs)
        first = configs[0]
        n, T = problem.n, first.iterations
        G, clip = gradient_bound(problem, first)
        sigmas = [self.noise(problem, c) for c in configs]
        opt = gradient_descent(problem.model, problem.X, problem.y, problem.start(stack.rngs), iterations=T,
                               learning_rate=stack.learning_rate([c.learning_rate for c in configs]),
                               rngs=stack.rngs, noise_std=stack.per_run(sigmas), clip_norm=clip,
                               trace_points=problem.trace_points, progress=problem.progress,
                               on_trace=problem.on_trace)
        sens = 2.0 * G / n
        return [MechanismOutput(
            theta=theta, sigma=sigma, plan=self.plan(problem, config, sigma),
            loss_trace=trace, trace_steps=opt.trace_steps,
            extras={"noise": "Gaussian σ on the mean gradient, every step", "sensitivity": sens,
                    "clip_norm": clip,
                    # σ can underflow to 0 (a subnormal --noise-scale): no noise, μ = ∞
                    "mu_gdp": math.sqrt(T) * sens / sigma if sigma > 0 else math.inf},
        ) for config, sigma, theta, trace in zip(configs, sigmas, stack.split(opt.theta),
                                                 stack.split(opt.loss_trace, axis=1))]


_SAMPLED_EVENT = ("T Poisson-sampled Gaussian releases of the sum of clipped per-record gradients "
                  "(replace-one sensitivity 2C, noise σ = zC): PLD accountant, replace-one")


def _sampled_plan(config, sample_rate, clip, z):
    return privacy.sampled_gaussian("the sum of clipped per-record gradients, every step", clip, z,
                                    sample_rate, config.iterations)


def _sampled_run(problem, configs, rngs, *, sample_rate, clip, zs, lrs, grad_hook=None):
    """Poisson-sampled clipped SGD with noise σ = z·C on the clipped sum, for a stack of
    configurations (one noise multiplier and learning rate each)."""
    stack = Stack(configs, rngs)
    n, T = problem.n, configs[0].iterations
    noise_mean_space = [z * clip / (sample_rate * n) for z in zs]
    opt = sgd(problem.model, problem.X, problem.y, problem.start(stack.rngs), iterations=T,
              learning_rate=stack.learning_rate(lrs), rngs=stack.rngs, sample_rate=sample_rate,
              clip_norm=clip, noise_std=stack.per_run(noise_mean_space), grad_hook=grad_hook,
              trace_points=problem.trace_points, progress=problem.progress,
              on_trace=problem.on_trace)
    return [MechanismOutput(
        theta=theta, sigma=z * clip, plan=_sampled_plan(config, sample_rate, clip, z),
        loss_trace=trace, trace_steps=opt.trace_steps,
        extras={"noise": "Gaussian σ = z·C on the sum of clipped gradients, every step",
                "noise_multiplier": z, "sample_rate": sample_rate, "clip_norm": clip},
    ) for config, z, theta, trace in zip(configs, zs, stack.split(opt.theta), stack.split(opt.loss_trace, axis=1))]


def _decaying(lr: float):
    """Bassily et al.'s step size η/√t."""
    return lambda t: lr / math.sqrt(t + 1)


@register
class GradientBassily(Mechanism):
    """Noisy SGD of Bassily, Smith & Thakurta 2014, one record per step in expectation.

    Published: ``σ² = c·32·G²·T·log(n/δ)·log(1/δ)/ε²`` on ``n∇ℓ`` (the paper
    takes T = n²; we take the user's T).  Bassily's uniform draw of one record
    is run as Poisson sampling with q = 1/n (same expected batch), so the
    certified accountant (PLD, replace-one) sees exactly what ran.

    References: Bassily, Smith & Thakurta 2014 (FOCS), Alg. 1, Thm 2.4.
    """

    id = "gradient-bassily"
    settings = ("clip_norm",)
    name = "Noisy SGD (Bassily et al.)"
    short = "noisy SGD (Bassily)"
    family = "gradient"
    paper = "Bassily, Smith & Thakurta 2014"
    models = ("logreg", "linreg", "mlp")
    notion = "(ε, δ)"
    calibrations = ("certified", "published")
    description = ("SGD on one (Poisson-sampled, q = 1/n) record per step with Gaussian noise and step "
                   "η/√t; certified by the PLD accountant of the sampled Gaussian.")
    formula = (r"\theta_{t+1}=\Pi\left(\theta_t-\eta_t\,(n\nabla\ell(\theta_t;x)+b_t)\right),\ "
               r"\sigma^2 = \frac{32\,c\,G^2T\log(n/\delta)\log(1/\delta)}{\varepsilon^2}")

    privacy_event = _SAMPLED_EVENT + " (q = 1/n)"
    calibration_note = "Published is the paper's σ with the user's T (the paper takes T = n²)."

    def clips_records(self, model, config):  # its sampled steps clip at C, or at G without one
        C = config.clip_norm or (model.lipschitz if math.isfinite(model.lipschitz) else 1.0)
        return f"{self.short} clips every per-record gradient to C = {C:g}"

    # the noise parameter is the multiplier z on the sampled sum, in units of G (or the clip)
    def plan(self, problem, config, z):
        G, clip = gradient_bound(problem, config)
        return _sampled_plan(config, 1.0 / problem.n, G if clip is None else clip, z)

    def published_noise(self, problem, config):
        n = problem.n
        G, _ = gradient_bound(problem, config)
        sigma_paper = math.sqrt(config.c * 32.0 * G**2 * config.iterations * math.log(n / config.delta)
                                * math.log(1.0 / config.delta)) / config.epsilon
        return sigma_paper / (n * G)  # noise on n∇ℓ, in units of G on the sampled sum

    stack_fields = ("epsilon", "learning_rate")

    def run(self, problem, config, rngs):
        return self.run_stack(problem, [config], [rngs])[0]

    def run_stack(self, problem, configs, rngs):
        G, clip = gradient_bound(problem, configs[0])
        return _sampled_run(problem, configs, rngs, sample_rate=1.0 / problem.n,
                            clip=G if clip is None else clip, zs=[self.noise(problem, c) for c in configs],
                            lrs=[_decaying(c.learning_rate) for c in configs])


def dpsgd_published_multiplier(c: float, q: float, T: int, epsilon: float, delta: float) -> float:
    """Abadi et al. 2016, Thm 1: σ = c·q·√(T log(1/δ))/ε (noise multiplier)."""
    return c * q * math.sqrt(T * math.log(1.0 / delta)) / epsilon


def _dpsgd_settings(problem, config) -> tuple[float, float]:
    n = problem.n
    if config.sample_rate is not None:
        q = config.sample_rate
    else:
        q = min(1.0, (config.batch_size or 256) / n)
    C = config.clip_norm or 1.0
    return q, C


@register
class GradientDPSGD(Mechanism):
    """DP-SGD (Abadi et al. 2016): Poisson sampling q, per-example clipping C, σ = zC.

    Certified: the smallest z whose replace-one PLD ε (dp-accounting's
    accountant) meets the target, found by Brent's method on that same ε.
    Published: the moments-accountant form ``z = c·q√(T log(1/δ))/ε``.

    References: Abadi et al. 2016 (CCS), Alg. 1, Thm 1.
    """

    id = "gradient-dpsgd"
    settings = ("batch_size", "sample_rate", "clip_norm")
    name = "DP-SGD (Abadi et al.)"
    short = "DP-SGD"
    family = "gradient"
    paper = "Abadi et al. 2016"
    models = ("logreg", "linreg", "mlp")
    notion = "(ε, δ)"
    calibrations = ("certified", "published")
    description = ("Poisson-sampled mini-batches, per-example clipping to C, Gaussian noise zC on the "
                   "clipped sum; z calibrated by the PLD accountant.")
    formula = r"z_{pub} = \frac{c\,q\sqrt{T\log(1/\delta)}}{\varepsilon},\quad \sigma = zC"

    privacy_event = _SAMPLED_EVENT
    calibration_note = "Published is the moments-accountant form with the constant c."

    def clips_records(self, model, config):
        return f"{self.short} clips every per-record gradient to C = {config.clip_norm or 1.0:g}"

    def plan(self, problem, config, z):
        q, C = _dpsgd_settings(problem, config)
        return _sampled_plan(config, q, C, z)

    def published_noise(self, problem, config):
        q, _ = _dpsgd_settings(problem, config)
        return dpsgd_published_multiplier(config.c, q, config.iterations, config.epsilon, config.delta)

    stack_fields = ("epsilon", "learning_rate")

    def run(self, problem, config, rngs):
        return self.run_stack(problem, [config], [rngs])[0]

    def run_stack(self, problem, configs, rngs):
        q, C = _dpsgd_settings(problem, configs[0])
        return _sampled_run(problem, configs, rngs, sample_rate=q, clip=C, grad_hook=self.smooth(configs[0]),
                            zs=[self.noise(problem, c) for c in configs], lrs=[c.learning_rate for c in configs])

    def smooth(self, config):
        """The hook applied to each noisy gradient (none: plain DP-SGD)."""
        return None


def laplacian_smoothing(v: np.ndarray, smoothing: float) -> np.ndarray:
    """``A_σ⁻¹ v`` row-wise, ``A_σ = I − σ L`` with L the periodic 1-D Laplacian (via FFT)."""
    p = v.shape[-1]
    eig = 1.0 + 2.0 * smoothing * (1.0 - np.cos(2.0 * np.pi * np.arange(p) / p))
    return np.real(np.fft.ifft(np.fft.fft(v, axis=-1) / eig, axis=-1))


@register
class GradientLSSGD(GradientDPSGD):
    """DP-LSSGD (Wang et al. 2019): DP-SGD whose noisy gradient is smoothed by ``A_σ⁻¹``.

    Smoothing is post-processing, so the accounting is DP-SGD's.  The smoothing
    strength is the option ``smoothing`` (default 1).

    References: Wang, Gu, Boedihardjo, Barekat & Osher 2019, "DP-LSSGD".
    """

    id = "gradient-lssgd"
    options = declare(Param("smoothing", Interval(float, 0.0, 1e6, "both"), 1.0,
                            "strength σ of the Laplacian smoothing A_σ = I − σL (0: plain DP-SGD)"))
    name = "DP-LSSGD (Laplacian smoothing)"
    short = "DP-LSSGD"
    paper = "Wang et al. 2019 (DP-LSSGD)"
    description = ("DP-SGD with the noisy gradient smoothed by the inverse of I − σL (periodic 1-D "
                   "Laplacian, FFT); post-processing, so the same ε as DP-SGD.")
    formula = r"\theta_{t+1} = \theta_t - \eta\,A_\sigma^{-1}(g_t + zC\,\xi_t),\quad A_\sigma = I - \sigma L"

    def smooth(self, config):
        s = float(config.option("smoothing"))
        return lambda t, g, r: laplacian_smoothing(g, s)

    def run_stack(self, problem, configs, rngs):
        outs = super().run_stack(problem, configs, rngs)
        for out in outs:
            out.extras["smoothing"] = float(configs[0].option("smoothing"))
        return outs
