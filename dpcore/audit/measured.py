"""The measured white-box audit: a canary record through the real pipeline (SPEC §5).

The plain white-box audit (:mod:`dpcore.audit.whitebox`) reads the noise a run drew and adds the
*declared* sensitivity to it, so what it bounds is the certificate's own formula at the measured
noise: a **noise check** (the sharpest test of σ), not an ε that any pair of records reaches.  This
audit measures the whole mechanism instead, in the threat model the certificate is stated in
(replace one record of the data domain; the attacker sees every release):

* **the canary** is a pair of real records of the data domain, ``D`` holding one and ``D'`` the
  other in place of the same training record, trained on by the mechanism's own code (its
  clipping, its sampler, its optimiser).  For logistic regression the pair is *wide*:
  ``x± = a·u ± b·v`` (u, v the two lowest-variance directions, a = 0.06, b = √(1 − a²), the
  label of the replaced record) with training started at ``θ₀ = −(6/a)·y·u`` (the auditor's
  choice: the claim holds for every start), which keeps both misclassified, so each pushes with
  (nearly) the full per-record gradient and the two pushes are nearly opposite: their difference
  is 2·0.998 of the worst case under a clip, 2·0.995 without one.  Under a small clip
  (C ≤ :data:`OPPOSITE_CLIP`) and for other models the opposite pair (:mod:`dpcore.audit.canaries`)
  from the model's own start: both its records' gradients are clipped to C, so they differ by 2C exactly;
* **the shift is measured from the output**: at the state θ_t of every step of every run the
  attacker knows (it sees the releases), the mechanism's own code takes one step on ``D`` and
  on ``D'`` with common random numbers (the same noise and the same Poisson coins on both
  sides), so the two releases differ by exactly what the record moved (0 when the sampler left
  it out).  This gives, per state, the record's contribution, and over all states how often it
  was sampled;
* **the estimator** rests on measured quantities only: where every step releases the record,
  the smallest path's measured shift (Σ_t ‖c_t‖² over a run's steps, the smallest over the 2N
  runs; post-processing each step down to a predictable share of it leaves a Gaussian martingale
  whose total variance is fixed, exactly μ-GDP, so the real pair is at least that
  distinguishable wherever every path moves that much, which the audit measures on each of its
  paths), or, for Poisson-sampled steps, the smallest shift measured when sampled and a lower
  confidence bound on the measured sampling rate; T counted; and an upper confidence bound on the
  noise **along the measured shift, over a whole run**: each run's noise projected on its own
  shift and summed over its steps, u_r = Σ_t c_t·n_t / (σ·√Σ_t ‖c_t‖²) (Poisson-sampled: on the
  shift's mean direction, Σ_t e·n_t/(σ√T)), whose variance κ is 1 for the claimed noise and is
  bounded above by χ² over the 2N independent runs.  The linear test along the shift sees exactly
  that variance, whatever the noise's covariance: noise stronger along the shift (anisotropic) or
  correlated across steps gives a larger κ and a lower, still sound, figure (μ_L = √T·shift/(σ√κ_U)
  is μ of that linear test, and the best test does at least as well).  Pooling every coordinate of
  every step instead (the audit's earlier bound) assumes both isotropy and independent steps, and
  exceeds the truth of such noise in nearly every audit.  It assumes the noise is Gaussian and the
  runs independent, **and the audit checks both** (:mod:`dpcore.audit.noisecheck`); where either
  fails the estimator is not shown.  The audit also checks what it no longer assumes (independent
  steps, equal variances) and names a failure as a finding.

The noise check (the declared shift at the measured noise) is kept beside it, labelled, at its
own share of α: "the noise that ran certifies at least …" in the gradient-canary threat model
(any gradient of the declared norm), never an audited ε of records and never a verdict (its
exceeding the certificate is shown, labelled).  A measured shift above the declared sensitivity and a
measured sampling rate above the declared q refute the certificate as measured facts, as does noise
that fails one of the noise's checks at 10⁻⁹ (:mod:`dpcore.audit.noisecheck`).

References: Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini & Terzis 2023, "Tight
auditing of differentially private machine learning" (USENIX Security), §4–5 (gradient canaries,
white-box access to every step); Jagielski, Ullman & Oprea 2020; Dong, Roth & Su 2019 (Gaussian
DP, post-processing); Jarque & Bera 1980.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..numerics import streams
from ..erm import LazySolution
from ..exceptions import ParameterError
from ..mechanisms import Problem
from ..optim import BatchRNG
from .bounds import (
    ASSUMPTIONS,
    Estimate,
    clopper_pearson_lower,
    clopper_pearson_upper,
    gaussian_scale_bound,
    gdp_epsilon_lower,
    sampled_epsilon_lower,
    sampled_gaussian_scale_bound,
    sampled_step_llr,
    scale_upper,
)
from .canaries import Canary, make_canary, replace_record
from .whitebox import (
    FINDING_LEVEL,
    GAUSSIAN_CHECK_LEVEL,
    NoiseCheck,
    ShiftCheck,
    TapRNG,
    NoiseMoments,
    check_noise,
)

__all__ = [
    "GAUSSIAN_CHECK_LEVEL",
    "NoiseCheck",
    "Measured",
    "check_noise",
    "measurable",
    "measured_bound",
    "wide_pair",
]

#: the wide pair's component along u and its start's margin: θ₀ = −(WIDE_MARGIN/WIDE_A)·y·u
WIDE_A, WIDE_MARGIN = 0.06, 12.0
#: at a clipping norm up to this, logistic regression is audited with the opposite pair from θ₀ = 0: each
#: record's gradient has norm σ(∓θ·v) ≥ C while |θ·v| ≤ ln(1/C − 1), so both are clipped and their difference
#: is the declared 2C exactly (the measured shift says where it is not)
OPPOSITE_CLIP = 0.4
#: runs of one batched one-step re-run (bounds its memory)
RERUN_BLOCK = 2000


def measurable(mechanism, plan) -> bool:
    """Whether the measured audit applies: a private noisy-gradient mechanism whose plan is one
    kind of Gaussian release every step (not a federation).

    >>> from dpcore.mechanisms import get_mechanism
    >>> from dpcore import privacy
    >>> measurable(get_mechanism("gradient-dpgd"), privacy.gaussian("g", 1.0, 1.0, 10))
    True
    >>> measurable(get_mechanism("output-gaussian"), privacy.gaussian("g", 1.0, 1.0, 1))
    False
    """
    if mechanism.family != "gradient" or not mechanism.private or plan is None:
        return False
    if plan.parts or len(plan.releases) != 1:
        return False
    return plan.releases[0].kind in ("gaussian", "sampled-gaussian")


def wide_pair(dataset, label: float = 1.0, seed: int = 0) -> tuple[Canary, np.ndarray]:
    """The wide pair of records and the start that keeps both misclassified (module docstring).

    >>> from dpcore.datasets import load
    >>> can, start = wide_pair(load("breast-cancer"))
    >>> round(float(np.linalg.norm(can.x)), 9), round(float(np.linalg.norm(can.anti_x)), 9)
    (1.0, 1.0)
    >>> round(float(np.linalg.norm(can.x - can.anti_x)), 4)   # 2b: nearly opposite
    1.9964
    >>> round(float(can.y * start @ can.x), 9), round(float(can.y * start @ can.anti_x), 9)   # both misclassified
    (-12.0, -12.0)
    """
    base = make_canary(dataset, "orthogonal-pair", label, seed)  # u = anti_x, v = x: the two lowest-variance
    u, v = base.anti_x, base.x
    b = math.sqrt(1.0 - WIDE_A**2)
    x_plus, x_minus = WIDE_A * u + b * v, WIDE_A * u - b * v
    start = -(WIDE_MARGIN / WIDE_A) * base.y * u
    desc = (f"a wide pair of records of the data domain: D has a·u − b·v, D' has a·u + b·v (u, v the two "
            f"lowest-variance directions of the training features, a = {WIDE_A:g}), both with label "
            f"{base.y:+g}, replacing training record {base.index}; training starts at θ₀ = "
            f"−{WIDE_MARGIN / WIDE_A:g}·y·u, the auditor's choice (the claim holds for every start), which "
            "keeps both misclassified, so each pushes with nearly the full per-record gradient")
    return Canary("wide-pair", x_plus, base.y, base.index, desc, anti_x=x_minus), start


def measured_bound(kind: str, *, ss: float, df: int, steps: int, shift_min: float, sigma: float, delta: float,
                   alpha: float, included: int | None = None, states: int | None = None,
                   noise: NoiseCheck | None = None, grid: float = 1e-4) -> Estimate:
    """The measured mechanism's lower bound on ε at confidence 1 − α (see the module).

    ``kind``: ``"gaussian"`` (every step releases the record's contribution, at least
    ``shift_min`` in the plan's units in root mean square over the steps of every path, under noise of claimed
    scale ``sigma``) or
    ``"sampled-gaussian"`` (the contribution, at least ``shift_min`` when the sampler took the
    record, ``included`` of ``states`` measured states); ``ss``/``df``: the noise along the measured
    shift, one value a run (u_r in the module docstring, in units of the claimed scale): Σ_r u_r² and
    the number of runs.  Its χ² bound takes α (Gaussian) or α/2 with the rate's Clopper–Pearson bound
    taking the other α/2 (sampled).

    >>> e = measured_bound("gaussian", ss=2000.0, df=2000, steps=100, shift_min=0.05, sigma=1.0, delta=1e-5,
    ...                    alpha=0.05)
    >>> round(e.mu, 3)   # √100·0.05/1, divided by the noise's upper bound along the shift (≈ 1.027)
    0.487
    """
    name, why = "measured", ASSUMPTIONS["measured"]
    if noise is not None and not noise.passed:
        return Estimate(name, 0.0, alpha, why, None, "not shown: " + noise.why_not())
    if not shift_min > 0:
        return Estimate(name, 0.0, alpha, why, 0.0, "the record moved nothing at some measured state: no estimate")
    if kind == "gaussian":
        r_u = scale_upper(ss, df, alpha)
        if not math.isfinite(r_u):
            return Estimate(name, 0.0, alpha, why, 0.0, "the noise is not finite (diverged runs): no estimate")
        mu = math.inf if r_u == 0 else math.sqrt(steps) * shift_min / (sigma * r_u)
        return Estimate(name, gdp_epsilon_lower(mu, delta), alpha, why, mu,
                        f"smallest measured shift {shift_min:.4g} (root mean square over the {steps} steps of a run's "
                        f"path, the smallest path), noise along the shift ≤ "
                        f"{r_u:.5g}× the claimed {sigma:.4g} (χ², {df:,} runs): μ ≥ {mu:.4g}")
    if included is None or not states:
        raise ParameterError("the sampled measured bound needs the measured inclusions")
    r_u = scale_upper(ss, df, alpha / 2)
    q_l = clopper_pearson_lower(int(included), int(states), 1 - alpha / 2)
    if not math.isfinite(r_u):
        return Estimate(name, 0.0, alpha, why, None, "the noise is not finite (diverged runs): no estimate")
    if q_l <= 0:
        return Estimate(name, 0.0, alpha, why, None, "the record was never sampled: no estimate")
    z_u = max(r_u * sigma / (shift_min / 2), 1e-3)
    eps = sampled_epsilon_lower(float(z_u), float(min(q_l, 1.0)), int(steps), float(delta), grid)
    return Estimate(name, eps, alpha, why, None,
                    f"smallest measured shift {shift_min:.4g} when sampled, sampling rate ≥ {q_l:.4g} ({included:,} "
                    f"of {states:,} measured steps), {steps} steps, noise along the shift ≤ {r_u:.5g}× the claimed "
                    f"{sigma:.4g}: noise multiplier ≤ {z_u:.4g}")


def noise_check_bound(kind: str, *, ss: float, df: int, steps: int, sensitivity: float, sigma: float,
                      sample_rate: float, delta: float, alpha: float, noise: NoiseCheck | None = None,
                      grid: float = 1e-4) -> Estimate:
    """The noise check: the certificate's formula at the declared sensitivity and the measured noise
    scale (χ² upper bound), "the noise that ran certifies at least …" (gradient-canary threat model)."""
    why = ASSUMPTIONS["noise-check"]
    if noise is not None and not noise.passed_steps:  # it pools every step's noise as independent draws
        return Estimate("noise-check", 0.0, alpha, why, None, "not shown: " + noise.why_not_steps())
    if kind == "gaussian":
        e = gaussian_scale_bound(ss, df, math.sqrt(steps) * sensitivity / sigma, delta, alpha)
    else:
        e = sampled_gaussian_scale_bound(ss, df, sigma / (sensitivity / 2), sample_rate, steps, delta, alpha, grid)
    return dataclasses.replace(e, name="noise-check", assumption=why,
                               detail="the noise that ran, at the declared sensitivity: " + e.detail)


class _StartedProblem(Problem):
    """A problem whose iterative training starts each run at its own state (one-step re-runs)."""

    def __init__(self, base: Problem, starts: np.ndarray):
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(Problem)}
        super().__init__(**dict(fields, trace_points=0))  # one step: no loss curve to record
        object.__setattr__(self, "_starts", starts)

    def start(self, rngs) -> np.ndarray:
        return np.array(self._starts, dtype=float, copy=True)


class _Tap(TapRNG):
    """The noise as added (``draws``) and every release (``releases``)."""

    def __init__(self, seeds, stream: int = streams.RUN):
        super().__init__(seeds, stream)
        self.releases: list[np.ndarray] = []
        self.release_observer = self.releases.append


class _CommonRNG(_Tap):
    """The one-step re-runs' random numbers: one generator for a block of states, keyed by the block,
    so that the two neighbours' re-runs of the block draw the same noise and the same Poisson coins
    (common random numbers), and every state's draws are fresh.  One generator a block, not one a
    state: building 2·10⁵ generators was half of an audit's time."""

    def __init__(self, key, runs: int, stream: int = streams.WHITE_BOX):
        self.seeds = [int(k) for k in key]
        self.keys = [()] * runs
        self._runs = runs
        self.gen = np.random.default_rng([*self.seeds, stream])
        self.gens = None
        self.draws, self.releases = [], []
        self.observer = self.draws.append
        self.release_observer = self.releases.append

    def __len__(self) -> int:
        return self._runs

    def __getitem__(self, r: int):
        raise ParameterError("the measured audit's re-runs draw for a block of states at once")

    def normal(self, shape, scale=1.0) -> np.ndarray:
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        out = self.gen.standard_normal((self._runs, *shape))
        scale = np.asarray(scale, dtype=float)
        if scale.ndim == 1:
            scale = scale.reshape((-1,) + (1,) * (out.ndim - 1))
        return out * scale

    def sample_batch(self, n: int, batch_size: int) -> np.ndarray:
        return np.sort(np.argsort(self.gen.random((self._runs, n)), axis=1)[:, :batch_size], axis=1)

    def poisson_batch(self, n: int, rate: float) -> tuple[np.ndarray, np.ndarray]:
        """Each row independently with probability ``rate`` (as :meth:`BatchRNG.poisson_batch`: padded
        indices in increasing order and a 0/1 mask)."""
        taken = self.gen.random((self._runs, n)) < rate
        sizes = taken.sum(axis=1)
        bmax = max(1, int(sizes.max()))
        idx = np.argsort(~taken, axis=1, kind="stable")[:, :bmax]
        mask = (np.arange(bmax)[None, :] < sizes[:, None]).astype(float)
        return np.where(mask > 0, idx, 0), mask


@dataclass
class _Found:
    """What the measured audit accumulated over its chunks."""

    kind: str
    sensitivity: float
    sigma: float  # the claimed noise scale in the plan's units
    sample_rate: float
    steps: int = 0
    ss: float = 0.0
    df: int = 0
    shift_min: float = math.inf
    shift_max: float = 0.0
    path_min: float = math.inf  # the smallest Σ_t ‖shift_t‖² over the runs' paths (every step released)
    proj_ss: float = 0.0  # Σ_r u_r²: each run's noise along its measured shift (module docstring)
    proj_df: int = 0  # the runs in it
    included: int = 0
    states: int = 0
    moments: NoiseMoments = field(default_factory=NoiseMoments)


class Measured:
    """The measured white-box audit (module docstring), as a threat strategy of
    :mod:`dpcore.audit.threats`.

    >>> from dpcore.experiments.run import RunSpec, load_problem
    >>> from dpcore.mechanisms import get_mechanism
    >>> cfg = RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", iterations=5, clip_norm=0.1)
    >>> problem = load_problem(cfg)
    >>> attack = Measured(get_mechanism(cfg.mechanism), problem, problem.model, cfg, "auto", 1.0, "margin")
    >>> seeds, scores = (np.arange(6), np.arange(6) + 100), (np.zeros(6), np.zeros(6))
    >>> list(attack.score_chunk(seeds, 0, 6, scores))
    [12]
    >>> attack.shift.runs, attack.shift.reached   # 60 states; the opposite pair, clipped: 2C/n exactly
    (60, True)
    """

    threat = "white-box"
    gaussian = None
    sampled = None
    ceiling_mu = None
    noise_ss = None
    measured = True

    def __init__(self, mechanism, problem, model, config, canary: str, canary_label: float, score: str):
        self.mechanism, self.model, self.config = mechanism, model, config
        clip = config.clip_norm
        if config.model == "logreg" and problem.d >= 2 and not (clip is not None and clip <= OPPOSITE_CLIP):
            self.canary, start = wide_pair(problem.dataset, canary_label, config.seed)
        else:  # a binding clip: the opposite pair's two gradients, both clipped, differ by exactly 2C
            self.canary, start = make_canary(problem.dataset, "opposite-pair", canary_label, config.seed), None
        pair = []
        for x in (self.canary.anti_x, self.canary.x):
            ds = replace_record(problem.dataset, self.canary.index, x, self.canary.y)
            pair.append(Problem(dataset=ds, model=model, erm=LazySolution(model, ds.X_train, ds.y_train),
                                theta_start=start, trace_points=0))  # the audit reads no loss curve
        mechanism.check(pair[1], config)
        self.problems = tuple(pair)
        self.problem = pair[0]
        plan = mechanism.run(self.problem, config, BatchRNG([0])).plan
        if not measurable(mechanism, plan):
            raise ParameterError(f"the measured audit needs one kind of Gaussian release every step; "
                                 f"{mechanism.id} releases otherwise")
        r = plan.releases[0]
        self.unit = 1.0 if r.kind == "gaussian" else r.sample_rate * self.problem.n  # release → plan units
        self.found = _Found(r.kind, float(r.sensitivity), float(r.noise), float(r.sample_rate))
        self._lr = config.learning_rate
        # the states must be followable from the releases (a step θ − η·release): checked on a short run
        short = dataclasses.replace(config, iterations=min(3, config.iterations))
        tap = _Tap([0, 1])
        out = mechanism.run(self.problem, short, tap)
        self._states(self.problem, np.array([0, 1]), np.stack(tap.releases, axis=1), out.theta)

    # -- the strategy's interface ------------------------------------------------------------
    def measure(self, seeds, alpha: float) -> list[str]:
        return []

    def score_chunk(self, seeds, start: int, stop: int, scores):
        for side, problem in enumerate(self.problems):
            run_seeds = seeds[side][start:stop]
            scores[side][start:stop] = self._side(problem, side, run_seeds)
        yield 2 * (stop - start)

    def labelled_estimates(self, s0, s1, delta: float, alpha: float):
        return None

    def record(self) -> dict:
        return {"score": "log-likelihood ratio", "canary": self.canary.kind,
                "canary_description": self.canary.description + ("; the record's contribution at every state "
                                                                  "measured by one step of the mechanism's own "
                                                                  "code on both neighbours, common random numbers"),
                "canary_index": self.canary.index, "canary_label": self.canary.y}

    @property
    def shift(self) -> ShiftCheck:
        f = self.found
        rate = None if f.kind == "gaussian" else f.sample_rate
        lo = hi = None
        if rate is not None and f.states:
            lo = clopper_pearson_lower(f.included, f.states, 0.999)
            hi = clopper_pearson_upper(f.included, f.states, 0.999)
        what = "the released mean gradient" if f.kind == "gaussian" else "the clipped sum of gradients"
        return ShiftCheck(f.sensitivity, f.shift_max if f.shift_max > 0 else 0.0, f.states, what, rate,
                          None if rate is None else f.included, lo, hi)

    @property
    def noise(self) -> NoiseCheck:
        """The audit's checks of the noise read so far (computed once per number of runs read)."""
        m = self.found.moments
        if getattr(self, "_noise", (None,))[0] != m.runs:
            self._noise = (m.runs, m.check())
        return self._noise[1]

    def measured_estimate(self, delta: float, alpha: float) -> Estimate:
        """The measured mechanism's bound (:func:`measured_bound`) at confidence 1 − α."""
        f = self.found
        shift = math.sqrt(f.path_min / f.steps) if f.kind == "gaussian" and f.steps else f.shift_min
        if not f.proj_df:
            return Estimate("measured", 0.0, alpha, ASSUMPTIONS["measured"], 0.0,
                            "the record moved nothing at some measured state: no estimate")
        return measured_bound(f.kind, ss=f.proj_ss, df=f.proj_df, steps=f.steps, shift_min=shift, sigma=f.sigma,
                              delta=delta, alpha=alpha, included=f.included, states=f.states, noise=self.noise)

    def noise_check_estimate(self, delta: float, alpha: float) -> Estimate:
        """The noise check (:func:`noise_check_bound`) at confidence 1 − α."""
        f = self.found
        return noise_check_bound(f.kind, ss=f.ss, df=f.df, steps=f.steps, sensitivity=f.sensitivity, sigma=f.sigma,
                                 sample_rate=f.sample_rate, delta=delta, alpha=alpha, noise=self.noise)

    def domain_ceiling(self, delta: float) -> float | None:
        """The ε the data domain allows at the noise that was declared: the largest contribution a
        record of the domain can make is 2·min(C, G) (G the model's per-record gradient bound), where
        the plan declares its sensitivity (which is 2C, or 2G unclipped)."""
        G = float(self.model.lipschitz)
        f = self.found
        clip = f.sensitivity / (2.0 / self.problem.n if f.kind == "gaussian" else 2.0)
        if not math.isfinite(G) or G >= clip:
            return None
        dom = f.sensitivity * G / clip
        if f.kind == "gaussian":
            return gdp_epsilon_lower(math.sqrt(f.steps) * dom / f.sigma, delta)
        return sampled_epsilon_lower(f.sigma / (dom / 2), f.sample_rate, f.steps, delta, 1e-4)

    # -- one side of one chunk -------------------------------------------------------------------
    def _side(self, problem: Problem, side: int, run_seeds: np.ndarray) -> np.ndarray:
        tap = _Tap(run_seeds.tolist())
        out = self.mechanism.run(problem, self.config, tap)
        runs = len(run_seeds)
        if not tap.draws or len(tap.draws) != len(tap.releases):
            raise ParameterError(f"{self.mechanism.id}: no noisy steps to read")
        noise = np.stack(tap.draws, axis=1) * self.unit  # (R, T, p) in the plan's units
        releases = np.stack(tap.releases, axis=1)
        states = self._states(problem, run_seeds, releases, out.theta)  # (R, T, p): θ before each step
        R, T, p = noise.shape
        contrib, included = self._contributions(states.reshape(R * T, p), run_seeds)
        contrib = contrib.reshape(R, T, p) * self.unit
        included = included.reshape(R, T)
        f = self.found
        f.steps = T
        sig = f.sigma
        f.ss += float(np.einsum("ijk,ijk->", noise, noise)) / sig**2
        f.df += noise.size
        f.moments.add(noise / sig)
        norms = np.linalg.norm(contrib, axis=2)
        if np.any(included):
            f.shift_min = min(f.shift_min, float(norms[included].min()))
            f.shift_max = max(f.shift_max, float(norms[included].max()))
        f.path_min = min(f.path_min, float((norms**2).sum(axis=1).min()))
        f.included += int(included.sum())
        f.states += included.size
        sign = 1.0 if side == 1 else -1.0
        if f.kind == "gaussian":  # the Neyman–Pearson score of the observed releases, measured shift
            q = (norms**2).sum(axis=1)
            moved = q > 0
            along = np.einsum("rtk,rtk->r", contrib, noise)[moved] / (sig * np.sqrt(q[moved]))
            f.proj_ss += float(along @ along)
            f.proj_df += int(moved.sum())
            return np.einsum("rtk,rtk->r", contrib, noise + sign * contrib / 2) / sig**2
        # Poisson-sampled: along the measured direction, the mixture score with the coins the
        # mechanism's own sampler drew in the re-runs (the attacked runs' own coins are not observed)
        mean_dir = contrib[included].sum(axis=0) if np.any(included) else np.ones(p)
        e = mean_dir / max(np.linalg.norm(mean_dir), 1e-300)
        along = (noise @ e).sum(axis=1) / (sig * math.sqrt(T))
        f.proj_ss += float(along @ along)
        f.proj_df += R
        c_half = max(float(np.median(norms[included])) / 2 if np.any(included) else f.sensitivity / 2, 1e-300)
        q_hat = max(float(included.mean()), 1e-6)
        obs = (noise @ e) / c_half + sign * included
        return sampled_step_llr(obs, sig / c_half, min(q_hat, 1.0)).sum(axis=1)

    def _states(self, problem, run_seeds, releases, final) -> np.ndarray:
        """θ before each step, followed from the releases (θ_{t+1} = project(θ_t − η_t·g_t)), checked
        against the released final θ."""
        theta = problem.start(BatchRNG(run_seeds.tolist()))
        R, T, _ = releases.shape
        out = np.empty(releases.shape)
        for t in range(T):
            out[:, t] = theta
            lr = self._lr(t) if callable(self._lr) else self._lr
            theta = self.model.project(theta - lr * releases[:, t])
        if not np.allclose(theta, final, rtol=1e-7, atol=1e-9 * max(1.0, float(np.abs(final).max()))):
            raise ParameterError(f"the measured audit cannot follow {self.mechanism.id}'s states from its releases "
                                 "(its step is not θ − η·release)")
        return out

    def _contributions(self, states: np.ndarray, run_seeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One step of the real mechanism from each state on D and on D', common random numbers: the
        releases' difference (in release units) and whether the record was in the step."""
        one = dataclasses.replace(self.config, iterations=1)
        T = states.shape[0] // len(run_seeds)
        seeds = [int(r) * T + t for r in run_seeds for t in range(T)]  # Python ints: no overflow
        diffs = np.empty_like(states)
        for a in range(0, states.shape[0], RERUN_BLOCK):
            b = min(states.shape[0], a + RERUN_BLOCK)
            rel = []
            for problem in self.problems:  # the same block key on both sides: common random numbers
                tap = _CommonRNG((seeds[a], b - a), b - a)
                self.mechanism.run(_StartedProblem(problem, states[a:b]), one, tap)
                rel.append(tap.releases[0])
            diffs[a:b] = rel[1] - rel[0]
        return diffs, np.any(diffs != 0.0, axis=1)
