"""Input perturbation (SPEC §3.5): the seed papers' mechanisms.

Noise goes on the data.  The certified guarantee is about the perturbed
records themselves: each record's features are released once as
``x + N(0, σ²I)`` (replace-one sensitivity 2 on the unit ball), so the record's
owner is protected against the server (the **local** ε), and the model, a
post-processing of the released data, gets the same **central** ε.  Labels
released raw void the guarantee under replace-one (a neighbour may change the
label): ε = ∞ unless the labels are protected too (``label_epsilon``; certified
mode does it by default with ε_y = ε/2):

* binary labels (±1) go through randomized response, kept with probability
  e^{ε_y}/(1 + e^{ε_y}); the logistic loss is then debiased for the flips
  (Natarajan et al. 2013; option ``debias_labels``, default on);
* real-valued targets, clipped to [−1, 1] (sensitivity 2), get Gaussian noise
  σ_y (``label_sigma``) calibrated so that the label release alone is
  (ε_y, δ)-DP.  Randomized response on a real value would flip its sign and
  keep |y|: no guarantee at all.

Features and label compose exactly (the Gaussian's privacy profile with the response's ±ε_y, or
Gaussian DP for two Gaussians),
through :mod:`dpcore.privacy.core`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import expit
from scipy.stats import wishart

from ..privacy import accounting as acc
from ..numerics import linalg, streams
from ..privacy import core as privacy
from ..erm import quadratic_ball
from ..exceptions import ModelError, ParameterError
from ..optim import gradient_descent, sgd, step_reporter
from ..params import BOOL, PARAMS, Interval, Options, Param
from ..theory.formulas import (
    fukuchi_local_epsilon,
    fukuchi_sigma_u,
    kang_input_variance,
    kifer_sigma,
)
from .base import Mechanism, MechanismOutput, declare, register
from .released import ReleasedRecords, choose_on_release, is_guess
from .released import work_steps as released_work_steps

# Keep per-run perturbed copies of the data below this many floats at once.
_GROUP_FLOATS = 20_000_000
LABEL_BOUND = 1.0  # real-valued targets are clipped to [−B, B] before their noise
RAW_LABELS = ("labels are released raw: a replaced record can change its label, which nothing "
              "hides (set label_epsilon to protect them)")


def label_budget(config) -> float | None:
    """ε_y for the labels: the ``label_epsilon`` option, or ε/2 in certified mode, else raw."""
    v = config.option("label_epsilon")
    if v is not None:
        v = float(v)
        if not v > 0:
            raise ParameterError(f"label_epsilon must be > 0, got {v!r}")
        return v
    return config.epsilon / 2.0 if config.calibration == "certified" else None


# pure: a calibration from its arguments
@functools.lru_cache(maxsize=256)
def label_sigma(label_epsilon: float, delta: float) -> float:
    """Gaussian noise on a target in [−B, B] (sensitivity 2B) whose release alone is (ε_y, δ)."""
    return privacy.calibrate(lambda s: privacy.gaussian("the label", 2.0 * LABEL_BOUND, s),
                             label_epsilon, delta, start=2.0 * LABEL_BOUND)


def label_release(task: str, label_epsilon: float | None, delta: float,
                  noise_scale: float = 1.0) -> privacy.Release | None:
    """How a record's label is released: randomized response (classification), Gaussian
    noise (regression), or raw (``None``)."""
    if label_epsilon is None:
        return None
    if task == "classification":
        return privacy.randomized_response("the record's label", label_epsilon)
    return privacy.Release("gaussian", "the record's label (clipped to [−1, 1])", 2.0 * LABEL_BOUND,
                           label_sigma(label_epsilon, delta) * noise_scale)


def record_plan(feature_sigma: float, label: privacy.Release | None) -> privacy.NoisePlan:
    """One record released once: features ``x + N(0, σ²I)`` (‖x‖ ≤ 1: sensitivity 2) and its label."""
    if label is None:
        return privacy.void(RAW_LABELS)
    features = privacy.Release("gaussian", "the record's features", 2.0, float(feature_sigma))
    return privacy.NoisePlan((features, label))


def release_labels(y: np.ndarray, label: privacy.Release | None, rngs) -> np.ndarray:
    """Per-run released labels, (R, n): raw, randomized response, or clipped plus Gaussian noise."""
    R = len(rngs)
    if label is None:
        return np.array(np.broadcast_to(y, (R, y.shape[0])))
    if label.kind == "randomized-response":
        keep = acc.rr_keep_probability(label.epsilon)
        flips = np.stack([g.random(y.shape[0]) >= keep for g in rngs])
        return np.where(flips, -y[None, :], y[None, :])
    clipped = np.clip(y, -LABEL_BOUND, LABEL_BOUND)
    return clipped[None, :] + rngs.normal(y.shape[0], label.noise)


def randomized_response(y: np.ndarray, label_epsilon: float | None, rngs) -> np.ndarray:
    """Per-run ±1 labels, (R, n), each kept with probability e^ε/(1+e^ε), else flipped."""
    label = None if label_epsilon is None else privacy.randomized_response("label", label_epsilon)
    return release_labels(y, label, rngs)


def debias_hook(model, Xp: np.ndarray, yp: np.ndarray, label: privacy.Release | None):
    """The unbiased logistic loss for labels flipped with probability ρ (Natarajan et al. 2013).

    With symmetric flips, ℓ̃(t, ỹ) = ((1 − ρ)ℓ(t, ỹ) − ρℓ(t, −ỹ))/(1 − 2ρ), and for the
    logistic loss ℓ(t, y) − ℓ(t, −y) = −yt, so ℓ̃(t, ỹ) = ℓ(t, ỹ) − ρ/(1 − 2ρ)·ỹt: a
    fixed linear tilt, −ρ/(1 − 2ρ)·mean(ỹ x̃), added to every gradient.  Convex, and
    post-processing of the released data.  ``None`` where it does not apply.

    References: Natarajan, Dhillon, Ravikumar & Tewari 2013 (NeurIPS), Lemma 1.
    """
    if label is None or label.kind != "randomized-response" or model.id != "logreg":
        return None
    rho = acc.rr_flip_probability(label.epsilon)
    n = Xp.shape[-2]
    tilt = rho / (1.0 - 2.0 * rho) * np.einsum("rn,rnd->rd", yp, Xp) / n
    return lambda t, grad, rngs: grad - tilt


def perturb_features(X: np.ndarray, sigma: float, rngs) -> np.ndarray:
    """Per-record Gaussian noise, per run: (R, n, d)."""
    return rngs.normal_around(X, sigma)


def groups(rngs, n: int, d: int):
    """Split the runs so that (runs × n × d) stays below the memory budget."""
    size = max(1, _GROUP_FLOATS // max(1, n * d))
    for s in range(0, len(rngs), size):
        yield rngs.subset(range(s, min(len(rngs), s + size)))


def choose_per_release(problem, Xp, yp, sigma, label, rngs, trainer, *, batch=None, debias=True):
    """θ (R, d) of each run's release tuned on itself alone (:mod:`dpcore.mechanisms.released`),
    and what each chose.  Only the released arrays and the release's public facts are passed on."""
    choice_rngs = rngs.spawn_stream(streams.RELEASE_CHOICE)
    has_bias = bool(problem.dataset.feature_names) and problem.dataset.feature_names[-1] == "bias"
    tell = step_reporter(problem.progress, len(rngs), "choosing each release's setting on its own records")

    def choose(r: int):
        rec = ReleasedRecords(X=Xp[r], y=yp[r], sigma=sigma, label=label, has_bias=has_bias)
        return choose_on_release(rec, problem.model, problem.dataset.task, trainer, choice_rngs[r],
                                 batch=batch, debias=debias)

    # the releases are independent (each its own records and random stream): a round of them at a
    # time on the pool's threads (Adult's float32 release, 12 MB, stays in L3 two at a time), the
    # progress told here between rounds; each release's numbers are what it computes alone
    chosen: list = []
    for start in range(0, len(rngs), linalg.THREADS):
        chosen += linalg.map_chunks(choose, range(start, min(len(rngs), start + linalg.THREADS)))
        for done in range(start + 1, len(chosen) + 1):  # each release of the round, in order
            tell(done)
    return np.stack([theta for theta, _ in chosen]), [info for _, info in chosen]


def released_choice_extras(infos) -> dict:
    """What the runs' choices on their own releases were, for the result's extras."""
    settings = [i["setting"] for i in infos]
    return {"tuned_on_release": [s if isinstance(s, str) else dict(s) for s in settings],
            "guess_chosen": sum(1 for s in settings if is_guess(s)),
            "tuning_note": ("each release chose its training setting on a validation part of its own released "
                            "records, then trained on all of them: post-processing, so the certified ε is the "
                            "release's and the choice cost nothing")}


RECORD_EVENT = ("each record released once: its features with Gaussian noise (replace-one sensitivity 2 "
                 "on the unit ball) and its label through randomized response (classification) or "
                 "Gaussian noise on the clipped target (regression), composed exactly (the exact privacy profile / Gaussian DP); "
                 "the model is post-processing (local ε = central ε). Raw labels: no guarantee")


LABEL_EPSILON = PARAMS["label_epsilon"]  # also the command line's --label-epsilon
KEEP_DATA = Param("keep_data", BOOL, False, "keep the released records (D_priv) in the output")
TUNE_ON_RELEASE = Param("tune_on_release", BOOL, False,
                        "choose T, η and λ on a validation part of the released records alone, then train on "
                        "all of them: post-processing, free of privacy cost (the guess competes too)")
FEATURE_SIGMA = Param("sigma", Interval(float, 1e-3, 1e6, "both"), None,
                      "a fixed feature noise σ instead of the calibration's (its certified ε is reported)")


class _InputBase(Mechanism):
    family = "input"
    data_copies = 1  # the perturbed records, per repeat (the noise is drawn into them in place)
    options = declare(LABEL_EPSILON, KEEP_DATA, FEATURE_SIGMA, TUNE_ON_RELEASE,
                      Param("debias_labels", BOOL, True,
                            "debias the logistic loss for randomized-response flips (Natarajan et al. 2013)"))
    notion = "(ε, δ)"
    calibrations = ("certified", "published")
    models = ("logreg", "linreg", "mlp")
    privacy_event = RECORD_EVENT
    calibration_note = ("Published is the paper's feature noise with the constant c, labels raw (ε = ∞) "
                        "unless label_epsilon is set; certified calibrates the record release.")

    def label(self, problem, config, noise_scale: float = 1.0) -> privacy.Release | None:
        return label_release(problem.dataset.task, label_budget(config), config.delta, noise_scale)

    def plan(self, problem, config, sigma):
        """The plan for feature noise σ, labels as calibrated (what certified mode inverts)."""
        return record_plan(sigma, self.label(problem, config))

    def calibration_start(self, problem, config):
        return 2.0 * acc.sigma_ag(config.epsilon, config.delta)

    def noise(self, problem, config) -> float:
        eps_y = label_budget(config)
        if config.calibration == "certified" and eps_y is not None and not eps_y < config.epsilon:
            raise ParameterError(f"the label budget ε_y = {eps_y:g} must be below ε = {config.epsilon:g}: "
                                 "the features need the rest.")
        fixed = config.option("sigma")
        if fixed is not None:
            fixed = float(fixed)
            if not (fixed > 0 and math.isfinite(fixed)):
                raise ParameterError(f"the option sigma must be a finite number > 0; got {fixed!r}")
            return fixed * config.noise_scale
        return super().noise(problem, config)

    @staticmethod
    def lipschitz(problem) -> float:
        G = problem.model.lipschitz
        return G if math.isfinite(G) else 1.0  # MLP: the published formulas assume G = 1

    #: the trainer :func:`~dpcore.mechanisms.released.choose_on_release` tunes (option tune_on_release)
    release_trainer = "gd"

    def release_batch(self, n: int, config) -> int | None:
        """The mini-batch of the tuned trainer on n records (None: full batch)."""
        return None

    def work_steps(self, config, n: int, d: int = 0) -> float:
        if config.option("tune_on_release"):
            return released_work_steps(self.release_trainer, n, self.release_batch(n, config))
        return super().work_steps(config, n, d)

    def train(self, problem, config, Xp, yp, rngs, grad_hook):
        raise NotImplementedError

    def run(self, problem, config, rngs):
        label = self.label(problem, config, config.noise_scale)
        sigma = self.noise(problem, config)
        debias = bool(config.option("debias_labels"))
        tuning = bool(config.option("tune_on_release"))
        thetas, traces, released, chosen = [], [], ([], []), []
        for sub in groups(rngs, problem.n, problem.d):
            Xp = perturb_features(problem.X, sigma, sub)
            yp = release_labels(problem.y, label, sub)
            if tuning:  # the setting chosen on each release alone, then the model: post-processing
                theta, info = choose_per_release(problem, Xp, yp, sigma, label, sub, self.release_trainer,
                                                 batch=self.release_batch(problem.n, config), debias=debias)
                thetas.append(theta)
                chosen += info
            else:
                hook = debias_hook(problem.model, Xp, yp, label) if debias else None
                opt = self.train(problem, config, Xp, yp, sub, hook)
                thetas.append(opt.theta)
                traces.append(opt.loss_trace)
            if config.option("keep_data", False):
                released[0].append(Xp)
                released[1].append(yp)
        plan = record_plan(sigma, label)
        extras = {"noise": "Gaussian σ on every record's features, once",
                  "epsilon_features_only": acc.feature_release_epsilon([sigma], config.delta),
                  "label_epsilon": None if label is None else label_budget(config),
                  "label_release": "raw" if label is None else label.kind,
                  "lipschitz_assumed": self.lipschitz(problem)}
        if label is not None and label.kind == "gaussian":
            extras["label_sigma"] = label.noise
        if label is not None and label.kind == "randomized-response":
            extras["labels_debiased"] = debias and problem.model.id == "logreg"
        if tuning:
            extras.update(released_choice_extras(chosen))
        return MechanismOutput(
            theta=np.concatenate(thetas), sigma=sigma, plan=plan, local_plan=plan,
            loss_trace=np.concatenate(traces, axis=1) if traces else None,
            trace_steps=opt.trace_steps if traces else None, extras=extras,
            released_data=(np.concatenate(released[0]), np.concatenate(released[1])) if released[0] else None,
        )


@register
class InputKang(_InputBase):
    """Seed 001, Alg. 1: perturb every record's features once, then T steps of full-batch GD.

    Published (Thm 1, λ-strongly convex): ``σ² = c·G²·T·log(1/δ)/(n(n−1)·√λ·ε²)``;
    Thm 3 (PL condition, option ``variant="pl"``): the same without √λ.  The
    paper's Eq. 16 reuses one z for all records; we draw per-record noise, the
    reading DBDP's ``D_priv`` describes.

    References: Kang et al., "Input Perturbation: A New Paradigm between Central
    and Local DP", Alg. 1, Thm 1, Thm 3.
    """

    id = "input-kang"
    options = {**_InputBase.options, **declare(Param(
        "variant", Options(("strongly-convex", "pl")), None,
        "published noise: Thm 1 (λ-strongly convex) or Thm 3 (PL); default by λ"))}
    name = "Input perturbation + GD (Kang et al.)"
    short = "input (Kang)"
    paper = "seed 001: Kang et al., Input Perturbation (Alg. 1, Thm 1/3)"
    description = ("Add N(0, σ²) to every record's features once, then run full-batch GD on the "
                   "perturbed data. Certified ε counts the released records (local = central).")
    formula = (r"\sigma^2 = \frac{c\,G^2\,T\log(1/\delta)}{n(n-1)\sqrt{\lambda}\,\varepsilon^2}"
               r"\quad(\text{Thm 3, PL: without }\sqrt\lambda)")

    def published_noise(self, problem, config):
        n, T, G = problem.n, config.iterations, self.lipschitz(problem)
        variant = config.option("variant") or ("strongly-convex" if problem.model.strong_convexity > 0 else "pl")
        if variant not in ("strongly-convex", "pl"):
            raise ParameterError(f"variant must be 'strongly-convex' or 'pl', got {variant!r}")
        lam_term = math.sqrt(problem.model.lam) if variant == "strongly-convex" else 1.0
        if lam_term <= 0:
            raise ModelError("the strongly convex variant (Thm 1) needs λ > 0; use variant='pl' (Thm 3)")
        return math.sqrt(kang_input_variance(G, T, n, config.epsilon, config.delta, lam_term, config.c))

    def train(self, problem, config, Xp, yp, rngs, grad_hook):
        theta0 = problem.start(rngs)
        return gradient_descent(problem.model, Xp, yp, theta0, iterations=config.iterations,
                                learning_rate=config.learning_rate, rngs=rngs, grad_hook=grad_hook,
                                trace_points=problem.trace_points, progress=problem.progress,
                                on_trace=problem.on_trace)


@register
class InputDBDP(_InputBase):
    """Seed 002, Alg. 1 (DBDP-ERM): perturb all records once, then mini-batch SGD with q = |B|/n.

    Published (Thm 1): ``σ = c·q·G·√(T log(1/δ))/ε``.  Returns θ_priv and
    ``D_priv`` (set the option ``keep_data`` to keep the perturbed arrays).

    References: Kang et al., "DP-ERM Based on Data Perturbation", Alg. 1, Thm 1.
    """

    id = "input-dbdp"
    settings = ("batch_size",)
    name = "Data-perturbation DP-ERM (DBDP-SGD)"
    short = "DBDP"
    paper = "seed 002: Kang et al., DBDP-ERM (Alg. 1, Thm 1)"
    description = ("Perturb every record once (D_priv), then mini-batch SGD with sampling rate "
                   "q = |B|/n on D_priv. Certified ε counts the released records.")
    formula = r"\sigma = \frac{c\,q\,G\sqrt{T\log(1/\delta)}}{\varepsilon}"

    def batch(self, problem, config) -> int:
        return self.release_batch(problem.n, config)

    def published_noise(self, problem, config):
        q = self.batch(problem, config) / problem.n
        return (config.c * q * self.lipschitz(problem)
                * math.sqrt(config.iterations * math.log(1 / config.delta)) / config.epsilon)

    release_trainer = "sgd"

    def release_batch(self, n: int, config) -> int | None:
        return int(min(n, config.batch_size or 256))

    def train(self, problem, config, Xp, yp, rngs, grad_hook):
        theta0 = problem.start(rngs)
        return sgd(problem.model, Xp, yp, theta0, iterations=config.iterations,
                   learning_rate=config.learning_rate, rngs=rngs,
                   batch_size=self.batch(problem, config), grad_hook=grad_hook,
                   trace_points=problem.trace_points, progress=problem.progress,
                   on_trace=problem.on_trace)


def _mixed_derivative_norm(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """‖∇_x∇_θ ℓ‖₂ of the logistic loss per run: M = −y·s·I + s(1−s)·x θᵀ, s = σ(−y θᵀx)."""
    z = np.einsum("rd,rd->r", theta, x)
    s = expit(-y * z)
    M = (-y * s)[:, None, None] * np.eye(x.shape[1])[None] + (s * (1 - s))[:, None, None] * x[:, :, None] * theta[:, None, :]
    return np.linalg.norm(M, ord=2, axis=(1, 2))


DBDP_IF_VOID = ("the method starts from the non-private minimiser and chooses which records to perturb, and "
               "by how much, with an influence function built from the raw data's Hessian: the choice "
               "itself depends on every record, and records it leaves raw are used as they are")


@register
class InputDBDPInfluence(Mechanism):
    """Seed 002, Alg. 2: influence-function selective perturbation — a **heuristic**.

    Pre-train θ̃ (the exact minimiser) and H⁻¹; for R = T/T_local rounds of
    T_local single-record SGD steps, a record's contribution
    ``c_t = (1/n) H⁻¹ ∇ℓ(z_t, θ_r)`` decides: if
    ``e^{−ε} ≤ ‖(c_t + θ_r) ⊘ θ_r‖₂ ≤ e^{ε}`` the raw record is used, else
    ``z_t + b_t`` with ``σ_t = c·G·√(T log(1/δ))/√(w_t n ε)``,
    ``w_t = ‖∇_x∇_θ ℓ(z_t, θ_t)‖₂``.  The condition is implemented literally;
    option ``normalize=True`` divides the norm by √d.  The paper's Thm 1 assumes
    ``w_t ≥ I > 0``, which the logistic loss violates; w_t is floored at
    ``w_min`` (default 0.01).

    Certified ε is ∞ for every option: the start (the non-private minimiser),
    the influence function (the raw data's Hessian) and the noise scales (w_t of
    raw records) all depend on the raw data, and records judged harmless are used
    raw.  The method runs as published so that its accuracy can be compared.

    References: Kang et al., "DP-ERM Based on Data Perturbation", Alg. 2, Eq. 14.
    """

    id = "input-dbdp-if"
    options = declare(
        LABEL_EPSILON, KEEP_DATA,
        Param("t_local", Interval(int, 1, 10_000, "both"), 10, "local SGD steps per global round"),
        Param("normalize", BOOL, False, "divide the selection's norm by √d"),
        Param("w_min", Interval(float, 0.0, 1e6, "neither"), 0.01,
              "floor I of ‖∇x∇θ ℓ‖ in σ_t (the paper assumes w_t ≥ I > 0)"))
    name = "DBDP with influence-function selection (heuristic)"
    short = "DBDP-IF"
    family = "input"
    data_copies = 1  # the perturbed records, per repeat
    paper = "seed 002: Kang et al., DBDP-ERM (Alg. 2)"
    models = ("logreg",)
    notion = "(ε, δ)"
    calibrations = ("published",)
    heuristic = True
    description = ("Perturb only the records whose influence on the model looks large; the others are "
                   "used raw. A heuristic: the selection reads the raw data, so there is no guarantee "
                   "(certified ε = ∞).")
    formula = (r"e^{-\varepsilon}\le\left\|\frac{c_t+\theta_r}{\theta_r}\right\|_2\le e^{\varepsilon}"
               r"\ \Rightarrow\ \text{raw},\quad \sigma_t = \frac{c\,G\sqrt{T\log(1/\delta)}}{\sqrt{w_t\,n\,\varepsilon}}")
    privacy_event = "none: " + DBDP_IF_VOID
    calibration_note = "Only the published heuristic exists; it has no certified counterpart."

    def run(self, problem, config, rngs):
        model, n, d = problem.model, problem.n, problem.d
        R = len(rngs)
        T = config.iterations
        T_local = int(config.option("t_local"))
        rounds = max(1, math.ceil(T / T_local))
        normalize = bool(config.option("normalize"))
        w_min = float(config.option("w_min"))
        eps, delta = config.epsilon, config.delta
        eps_y = config.option("label_epsilon")
        eps_y = None if eps_y is None else float(eps_y)
        G = model.lipschitz
        X = problem.X
        y_used = np.array(randomized_response(problem.y, eps_y, rngs))

        def point_grad(theta, x, y):  # ∇θ ℓ(θ; x, y) of one record per run, (R, d)
            return model.dphi(np.einsum("rd,rd->r", theta, x), y)[:, None] * x

        theta_tilde = problem.erm.theta
        H_inv = np.linalg.inv(model.hessian(theta_tilde[None], X, problem.y)[0])
        theta_g = np.repeat(theta_tilde[None], R, axis=0)
        ar = np.arange(R)
        X_priv = np.broadcast_to(X, (R, n, d)).copy()
        scale = math.sqrt(d) if normalize else 1.0
        n_raw = 0
        step = 0
        for _ in range(rounds):
            theta_l = theta_g.copy()
            for _ in range(T_local):
                idx = np.array([g.integers(n) for g in rngs])
                x, yy = X[idx], y_used[ar, idx]
                grad_g = point_grad(theta_g, x, yy)
                c_t = grad_g @ H_inv.T / n
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.linalg.norm((c_t + theta_g) / theta_g, axis=1) / scale
                # e^ε overflows above ε ≈ 709, where the bound is ∞ (the same math.exp below it)
                hi = math.exp(eps) if eps < 709.0 else math.inf
                raw = (math.exp(-eps) <= ratio) & (ratio <= hi)
                # Thm 1 assumes ‖∇x∇θ ℓ‖ ≥ I > 0; the logistic loss has no such floor (w → 0 on
                # well-fitted records, σ_t → ∞), so w is floored at I = option w_min (0.01).
                w = np.maximum(_mixed_derivative_norm(theta_l, x, yy), w_min)
                sig = (config.c * G * math.sqrt(T * math.log(1 / delta)) / np.sqrt(w * n * eps)
                       * config.noise_scale)
                noise = np.stack([g.standard_normal(d) for g in rngs]) * sig[:, None]
                x_used = np.where(raw[:, None], x, x + noise)
                # D_priv keeps the last perturbed version of each record.
                pert = ~raw
                X_priv[ar[pert], idx[pert]] = x_used[pert]
                n_raw += int(raw.sum())
                g_l = point_grad(theta_l, x_used, yy)
                theta_l = theta_l - config.learning_rate * (g_l + model.lam * theta_l)
                step += 1
            theta_g = theta_l
        plan = privacy.void(DBDP_IF_VOID)
        return MechanismOutput(
            theta=theta_g, sigma=None, plan=plan, local_plan=plan,
            extras={"noise": "per-step Gaussian σ_t on selected records' features",
                    "raw_steps": n_raw, "total_steps": step * R,
                    "raw_share": n_raw / max(1, step * R), "normalize": normalize,
                    "heuristic": True, "note": "no guarantee: " + DBDP_IF_VOID},
            released_data=(X_priv, y_used) if config.option("keep_data", False) else None,
        )


#: Why a certified input-fukuchi model can score far below guessing: the record's note when the
#: noise-corrected statistics' noise exceeds the data (:func:`fukuchi_noise_to_data` > 1).
FUKUCHI_NOISE_SIGN = (
    "The noise swamps the data here: the noise-corrected second-moment matrix the database solves with "
    "fluctuates by about {ratio:.3g}× the largest eigenvalue the data can give it (2·(s_u/max‖q‖)²·√(d/n)), so it "
    "is not positive definite ({k} of {R} runs) and the model points along directions the noise chose; the "
    "data only choose its sign, through a noisy sum that can get it wrong. A run far below guessing is such a "
    "sign-flipped model (negated, it scores well): single runs can land anywhere from far below guessing to near "
    "the non-private accuracy, and only the mean over many runs says how good the mechanism is. More records or a "
    "larger ε shrink the ratio.")


def fukuchi_noise_to_data(s_u: float, q_max: float, n: int, d: int) -> float:
    """Half-width of the noise left in the corrected Gram ``Σq̃q̃ᵀ − n·s_u²·I`` (its Wishart part's
    spectrum spans about ±2·s_u²·√(nd)) over the data Gram's largest possible eigenvalue n·max‖q‖²:
    above 1 the corrected quadratic is noise, its minimiser's direction the noise's.  Public: it
    reads n, d and the noise scale only."""
    return 2.0 * (s_u / q_max) ** 2 * math.sqrt(d / n)


@register
class InputFukuchi(Mechanism):
    """Seed 003 (Fukuchi, Tran & Sakuma 2017), Alg. 1 + Alg. 2, quadratic losses.

    Contributor i sends ``q̃ = q + u``, ``p̃ = p − r`` with ``u ~ N(0, s_u²I)``,
    ``r ~ N(0, s_b²I)``; the database minimises
    ``½wᵀ(Σq̃q̃ᵀ + Δ_in I)w − (Σp̃)ᵀw`` over ‖w‖ ≤ η.
    Linear regression: ``q = x, p = yx``; logistic through its Taylor expansion at 0:
    ``q = x/2, p = yx/2``.  Only the d×d statistics are needed: ``Σq̃q̃ᵀ`` is drawn
    exactly as ``QᵀQ + RᵀA + AᵀR + AᵀA + W`` with ``RᵀR = QᵀQ``, ``A`` a d×d
    Gaussian and ``W ~ Wishart(n − d)``, so n = 2²¹ is cheap.

    Published (Alg. 1, Cor. 2): ``s_u = σ_u/√n``, ``s_b = σ_b/√n`` with
    ``Δ_in = Δ − 2λ/ε``, for Thm 1's central (ε, δ).  That theorem rests on Lemma 1,
    whose event ``λ_min(UᵀU + UᵀQ + QᵀU) ≥ 2λ/ε`` fails almost surely on real
    data (Lemma 7 bounds ‖Q‖_F by √d·λ, but ‖Q‖_F grows like √n), and σ_b inherits
    Kifer et al.'s add/remove constant.  What we can prove is the per-contributor
    release: a Gaussian on (q, p) with replace-one sensitivities (2 max‖q‖,
    2 max‖p‖), which the model inherits by post-processing.  Certified mode
    calibrates (s_u, s_b) so that this release meets (ε, δ) (equal shares of
    μ², Gaussian DP), and the database subtracts the noise's expected Gram
    n·s_u²·I (post-processing) before solving with the model's own λ.

    That correction (not in the paper's Alg. 2, whose objective keeps the noise's Gram as a
    regulariser) is what lets the certified model approach θ* as n grows, but where the
    per-contributor noise dwarfs the data (breast-cancer at local ε = 1: the corrected
    statistics' eigenvalues span ±3·10³ against 86 for the data's largest) the corrected
    quadratic is indefinite, its minimiser on the ball points along the noise's most negative
    direction and the data only choose its sign: single runs then scatter from far below
    guessing (a sign-flipped model, good when negated) to near the non-private accuracy
    (:data:`FUKUCHI_NOISE_SIGN`, the record's note when :func:`fukuchi_noise_to_data` > 1;
    extras ``gram_noise_to_data`` and ``gram_indefinite_runs``).

    References: Fukuchi, Tran & Sakuma 2017, Alg. 1–2, Thm 1–2, Cor. 1–2, Lemma 1–2.
    """

    id = "input-fukuchi"
    iterative = False
    options = declare(
        Param("radius", Interval(float, 0.0, 1e6, "neither"), 1.0,
              "radius η of the parameter ball for logistic regression (linreg uses --radius)"),
        Param("Delta", Interval(float, 0.0, None, "neither"), None,
              "Alg. 2's regulariser Δ (> 2λ/ε); default 4λ/ε + nλ"))
    name = "Input perturbation of (q, p) (Fukuchi et al.)"
    short = "input (Fukuchi)"
    family = "input"
    paper = "seed 003: Fukuchi, Tran & Sakuma 2017 (Alg. 1–2)"
    models = ("linreg", "logreg")
    notion = "(ε, δ)"
    calibrations = ("certified", "published")
    description = ("Each contributor perturbs q = x and p = yx (logistic: their Taylor form) with "
                   "Gaussian noise; the database solves the noisy quadratic ERM from the d×d statistics. "
                   "Certified ε: the per-contributor release (local = central).")
    formula = (r"\sigma_b^2=\frac{\zeta^2(8\log(2/\delta')+4\varepsilon)}{\varepsilon^2},\ "
               r"\sigma_u=\frac{\sqrt{2d}\lambda a+\sqrt{2d\lambda^2a^2+\frac{2\lambda}{\varepsilon}(1-2b)}}{1-2b}")
    privacy_event = ("each contributor releases q + N(0, s_u²I) and p − N(0, s_b²I) once (replace-one "
                     "sensitivities 2 max‖q‖ and 2 max‖p‖): exact Gaussian DP, local = central "
                     "(Thm 1's central claim is not certified: its Lemma 1 event fails on real data)")
    calibration_note = ("Published is Alg. 1's σ_u, σ_b for Thm 1's central claim (per contributor "
                        "σ/√n), which certifies a huge per-record ε; certified calibrates the "
                        "per-contributor release.")

    def constants(self, problem, config) -> dict:
        model, n, d = problem.model, problem.n, problem.d
        eta = float(model.radius if model.radius is not None else config.option("radius", 1.0))
        if not (eta > 0 and math.isfinite(eta)):
            raise ParameterError(f"the option radius must be a finite number > 0; got {eta!r}")
        if model.id == "linreg":
            q_max, p_max = 1.0, 1.0
        else:
            q_max, p_max = 0.5, 0.5
        zeta = q_max**2 * eta + p_max
        lam = q_max**2
        delta = config.delta
        gamma = delta_p = delta / 2.0
        if n < 16 * math.log(8 / delta):
            raise ParameterError(
                f"input-fukuchi's utility theorem needs n ≥ 16·log(8/δ) = {16 * math.log(8 / delta):.1f}; got n = {n}"
            )
        sigma_b = kifer_sigma(config.epsilon, delta_p, zeta)
        sigma_u = fukuchi_sigma_u(n, d, lam, config.epsilon, gamma)
        floor = 2 * lam / config.epsilon
        Delta = float(config.option("Delta", 2 * floor + n * model.lam))
        if not Delta > floor:
            raise ParameterError(f"input-fukuchi needs Δ > 2λ/ε = {floor:.4g}; got Δ = {Delta:.4g}")
        return dict(eta=eta, q_max=q_max, p_max=p_max, zeta=zeta, lam=lam, gamma=gamma,
                    sigma_b=sigma_b, sigma_u=sigma_u, Delta=Delta, Delta_in=Delta - floor)

    # The noise parameter s: the per-contributor stds are s_u = 2·max‖q‖·s, s_b = 2·max‖p‖·s
    # (equal shares of μ²); published mode's pair is (σ_u/√n, σ_b/√n).
    def contributor_stds(self, problem, config, s) -> tuple[float, float]:
        k = self.constants(problem, config)
        return 2.0 * k["q_max"] * s, 2.0 * k["p_max"] * s

    def _plan(self, k, s_u, s_b):
        return privacy.NoisePlan((
            privacy.Release("gaussian", "the contributor's q", 2.0 * k["q_max"], s_u),
            privacy.Release("gaussian", "the contributor's p", 2.0 * k["p_max"], s_b),
        ))

    def plan(self, problem, config, s):
        return self._plan(self.constants(problem, config), *self.contributor_stds(problem, config, s))

    def calibration_start(self, problem, config):
        return acc.sigma_ag(config.epsilon, config.delta)

    def run(self, problem, config, rngs):
        k = self.constants(problem, config)
        n, d = problem.n, problem.d
        published = config.calibration == "published"
        if published:
            s_u, s_b = k["sigma_u"] / math.sqrt(n), k["sigma_b"] / math.sqrt(n)
            s_u, s_b = s_u * config.noise_scale, s_b * config.noise_scale
        else:
            s_u, s_b = self.contributor_stds(problem, config, self.noise(problem, config))
        ridge = k["Delta_in"] if published else n * problem.model.lam
        scale = 1.0 if problem.model.id == "linreg" else 0.5
        Q = problem.X * scale
        P = (problem.y[:, None] * problem.X) * scale
        QtQ = Q.T @ Q
        p_sum = P.sum(axis=0)
        evals, V = np.linalg.eigh(QtQ)
        Rm = (np.sqrt(np.maximum(evals, 0.0))[:, None] * V.T)  # RᵀR = QᵀQ
        thetas = []
        indefinite = 0  # runs whose quadratic was not convex: the noise outweighed the data somewhere

        for g in rngs:
            A = g.standard_normal((d, d)) * s_u
            if not s_u**2 > 0:  # s_u² is 0 in floating point: the Wishart of no noise is exactly 0
                W = np.zeros((d, d))
            else:
                W = wishart.rvs(df=n - d, scale=s_u**2 * np.eye(d), random_state=g) if n - d >= d else (
                    (lambda U: U.T @ U)(g.standard_normal((n - d, d)) * s_u))
            W = np.atleast_2d(W)
            S = QtQ + Rm.T @ A + A.T @ Rm + A.T @ A + W
            S = 0.5 * (S + S.T)
            if not published:
                S = S - n * s_u**2 * np.eye(d)  # E[UᵀU] = n·s_u²·I: debias (post-processing)
            p_tilde = p_sum - g.standard_normal(d) * s_b * math.sqrt(n)  # Σ r_i ~ N(0, n s_b² I)
            M = S + ridge * np.eye(d)
            evals_m = np.linalg.eigvalsh(M)
            if evals_m.min() <= 0:
                # Not convex (certified: the debiased Gram is indefinite; published's Σq̃q̃ᵀ + Δ_in·I
                # is positive definite): lift the spectrum to PSD, as the solver needs.  On the ball
                # the lift leaves the minimiser unchanged (it lies on the sphere, where the lift adds a
                # constant); where the noise dominates, it leans on the most negative eigenvectors,
                # its sign set by p̃ (FUKUCHI_NOISE_SIGN).
                indefinite += 1
                M = M + (1e-12 - evals_m.min()) * np.eye(d)
            thetas.append(quadratic_ball(M / n, p_tilde / n, k["eta"])[0])
        theta = np.stack(thetas)
        # certified mode subtracts the noise's expected Gram; how large the noise it leaves is
        noise_to_data = None if published else fukuchi_noise_to_data(s_u, k["q_max"], n, d)
        plan = self._plan(k, s_u, s_b)
        # Cor. 1's local level for the paper's noise (with 2δ), for comparison.
        eps_cor1 = fukuchi_local_epsilon(d=d, G=k["zeta"], lam=k["lam"], n=n, epsilon=config.epsilon,
                                         delta=config.delta, gamma=k["gamma"])
        return MechanismOutput(
            theta=theta, sigma=s_u, plan=plan, local_plan=plan,
            extras={"noise": "per-contributor std of the q noise (s_u) and of the p noise (s_b)",
                    "contributor_sigma_q": s_u, "contributor_sigma_p": s_b,
                    "sigma_b": k["sigma_b"], "sigma_u": k["sigma_u"], "Delta": k["Delta"],
                    "zeta": k["zeta"], "lambda_smooth": k["lam"],
                    "epsilon_local_cor1": eps_cor1, "delta_local_cor1": 2 * config.delta,
                    "epsilon_claimed_thm1": config.epsilon if published else None,
                    "gram_noise_to_data": noise_to_data, "gram_indefinite_runs": indefinite,
                    "note": ("Thm 1 claims central (ε, δ), but its Lemma 1 event (Δ0 ≥ 2λ/ε) fails "
                             "almost surely for real data (Lemma 7 assumes ‖Q‖_F ≤ √d·λ; it grows like √n), "
                             "and σ_b uses Kifer et al.'s add/remove constant; the certified ε is the "
                             "per-contributor (local) one, which the model inherits."
                             + (" " + FUKUCHI_NOISE_SIGN.format(ratio=noise_to_data, k=indefinite, R=len(rngs))
                                if noise_to_data is not None and noise_to_data > 1 else ""))},
        )
