"""Local DP (SPEC §3.6): every record is privatised by its owner before the server sees it."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from ..privacy import accounting as acc
from ..privacy import core as privacy
from ..erm import solve_erm
from ..exceptions import ParameterError
from .base import Mechanism, MechanismOutput, declare, register
from .input import (
    RECORD_EVENT,
    KEEP_DATA,
    LABEL_EPSILON,
    TUNE_ON_RELEASE,
    choose_per_release,
    label_release,
    perturb_features,
    record_plan,
    release_labels,
    released_choice_extras,
)
from .released import work_steps as released_work_steps


@register
class LocalGaussian(Mechanism):
    """Gaussian local DP: each record releases ``x + N(0, σ²I)`` and its label by randomized response.

    The budget is split between labels (option ``label_epsilon``, default ε/2)
    and features; σ is calibrated so that the composition of the two meets
    (ε, δ) exactly (the exact privacy profile of a Gaussian with a randomized response).  The server runs exact ERM on the released data.
    Local ε = central ε.

    References: Warner 1965 (randomized response); Balle & Wang 2018 (σ_AG).
    """

    id = "local-gaussian"
    iterative = False
    options = declare(LABEL_EPSILON, KEEP_DATA, TUNE_ON_RELEASE)
    name = "Local Gaussian + randomized response"
    short = "local Gaussian"
    family = "local"
    data_copies = 1  # the released records, per repeat (the noise is drawn into them in place)
    paper = "Gaussian mechanism per record (Balle & Wang 2018) + randomized response"
    models = ("logreg",)  # labels go through binary randomized response
    notion = "(ε, δ)"
    calibrations = ("certified",)
    description = ("Every record is released as x + N(0, σ²I) with its label through randomized "
                   "response; the server fits the exact ERM on what it received.")
    formula = r"\tilde x = x + \mathcal N(0,\sigma^2 I),\ \Pr[\tilde y = y] = \frac{e^{\varepsilon_y}}{1+e^{\varepsilon_y}}"

    privacy_event = RECORD_EVENT
    calibration_note = "Certified only: the record release is calibrated exactly."

    def label(self, config):
        eps_y = config.option("label_epsilon")
        eps_y = config.epsilon / 2.0 if eps_y is None else float(eps_y)
        if not 0 < eps_y < config.epsilon:
            raise ParameterError(f"the label budget ε_y = {eps_y:g} must be in (0, ε = {config.epsilon:g}): "
                                 "the features need the rest.")
        return label_release("classification", eps_y, config.delta)

    def plan(self, problem, config, sigma):
        return record_plan(sigma, self.label(config))

    def work_steps(self, config, n: int, d: int = 0) -> float:
        return released_work_steps("erm", n) if config.option("tune_on_release") else 1

    def calibration_start(self, problem, config):
        return 2.0 * acc.sigma_ag(config.epsilon, config.delta)

    def run(self, problem, config, rngs):
        label = self.label(config)
        sigma = self.noise(problem, config)
        Xp = perturb_features(problem.X, sigma, rngs)
        yp = release_labels(problem.y, label, rngs)
        extras = {"noise": "Gaussian σ on each record's features; RR on labels",
                  "label_epsilon": label.epsilon,
                  "epsilon_features_only": acc.feature_release_epsilon([sigma], config.delta)}
        if config.option("tune_on_release"):  # λ chosen on each release alone: post-processing
            theta, infos = choose_per_release(problem, Xp, yp, sigma, label, rngs, "erm", debias=False)
            extras.update(released_choice_extras(infos))
        else:
            theta = np.stack([solve_erm(problem.model, Xp[r], yp[r]).theta for r in range(len(rngs))])
        plan = record_plan(sigma, label)
        return MechanismOutput(
            theta=theta, sigma=sigma, plan=plan, local_plan=plan,
            released_data=(Xp, yp) if config.option("keep_data", False) else None,
            extras=extras,
        )


def duchi_radius(r: float, epsilon: float, d: int) -> float:
    """B of the ℓ2-ball mechanism: r·(e^ε+1)/(e^ε−1)·√π·Γ((d+1)/2)/Γ(d/2) — makes it unbiased."""
    if d < 1:
        raise ParameterError("the ℓ2-ball mechanism needs dimension d ≥ 1")
    # (e^ε + 1)/(e^ε − 1) = coth(ε/2), which does not overflow for large ε
    return r / math.tanh(epsilon / 2) * math.sqrt(math.pi) * math.exp(gammaln((d + 1) / 2) - gammaln(d / 2))


def duchi_privatize(v: np.ndarray, r: float, epsilon: float, rngs) -> np.ndarray:
    """ε-LDP ℓ2-ball mechanism on vectors ``v`` (R, d) with ‖v‖ ≤ r; unbiased, output on the B-sphere.

    Round v to ±r·v/‖v‖ (the + sign w.p. ½ + ‖v‖/(2r)), then draw uniformly on the
    radius-B sphere, in the hemisphere around the rounded vector w.p. e^ε/(e^ε+1).

    References: Duchi, Jordan & Wainwright 2018 (JASA), Sec. 4.2.3.
    """
    R, d = v.shape
    B = duchi_radius(r, epsilon, d)
    norms = np.linalg.norm(v, axis=1)
    u = np.empty_like(v)
    for k, g in enumerate(rngs):
        if norms[k] > 0:
            u[k] = v[k] / norms[k]
        else:
            w = g.standard_normal(d)
            u[k] = w / np.linalg.norm(w)
    p_plus = 0.5 + np.minimum(norms, r) / (2 * r)
    coins = np.array([g.random() for g in rngs])
    u = np.where((coins < p_plus)[:, None], u, -u)
    same_side = np.array([g.random() for g in rngs]) < 1.0 / (1.0 + math.exp(-epsilon))  # e^ε/(1+e^ε)
    z = np.stack([g.standard_normal(d) for g in rngs])
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    side = np.sign(np.sum(z * u, axis=1))
    side[side == 0] = 1.0
    want = np.where(same_side, 1.0, -1.0)
    z = z * (side * want)[:, None]  # reflect into the chosen hemisphere (keeps it uniform)
    return B * z


@register
class LocalDuchi(Mechanism):
    """Duchi, Jordan & Wainwright: one pass of SGD on ε-LDP privatised gradients.

    Every record, in a random order, privatises its own gradient once with the
    ℓ2-ball mechanism (radius r = G) and is never used again, so local ε = central ε = ε.
    Step ``η/√t``.  ``iterations`` is ignored: one pass over all n records.

    References: Duchi, Jordan & Wainwright 2013 (FOCS) / 2018 (JASA).
    """

    id = "local-duchi"
    iterative = False
    name = "Local SGD with the ℓ2-ball mechanism (Duchi et al.)"
    short = "local ℓ2-ball (Duchi)"
    family = "local"
    paper = "Duchi, Jordan & Wainwright 2013/2018"
    models = ("logreg", "linreg")
    notion = "(ε, 0)"
    calibrations = ("certified", "published")
    description = ("One pass of SGD; each record privatises its gradient once with the unbiased "
                   "ℓ2-ball mechanism (ε-LDP).")
    formula = (r"B = r\,\frac{e^\varepsilon+1}{e^\varepsilon-1}\,\frac{\sqrt\pi\,\Gamma(\frac{d+1}{2})}{\Gamma(\frac d2)}")

    privacy_event = ("each record privatises its own gradient once with the ℓ2-ball mechanism: pure ε-LDP "
                     "(Duchi et al.'s proof), used once, so local ε = central ε")
    calibration_note = "The mechanism is exactly ε-LDP: published and certified are the same."

    def plan(self, problem, config, epsilon):
        return privacy.theorem("each record's gradient through the ℓ2-ball mechanism (Duchi et al.)", epsilon)

    def noise(self, problem, config):
        if config.noise_scale != 1.0:
            raise ParameterError("local-duchi has no continuous noise scale to change (its output is a "
                                 "point on a sphere): noise_scale must be 1")
        return config.epsilon

    def run(self, problem, config, rngs):
        model, n, d = problem.model, problem.n, problem.d
        G = model.lipschitz
        R = len(rngs)
        eps = self.noise(problem, config)
        perms = np.stack([g.permutation(n) for g in rngs])
        theta = model.init(R, d)
        X, y = problem.X, problem.y
        for t in range(n):
            idx = perms[:, t]
            g_i = model.per_example_grads(theta, X[idx][:, None, :], y[idx][:, None])[:, 0]
            z = duchi_privatize(g_i, G, eps, rngs)
            theta = model.project(theta - config.learning_rate / math.sqrt(t + 1) * (z + model.lam * theta))
        plan = self.plan(problem, config, eps)
        return MechanismOutput(
            theta=theta, sigma=duchi_radius(G, eps, d), plan=plan, local_plan=plan,
            extras={"noise": "ℓ2-ball mechanism radius B on each record's gradient", "steps": n},
        )
