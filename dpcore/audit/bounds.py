"""Sharper audit estimators: lower confidence bounds on ε that use what is known of the noise.

The direct bound of :mod:`dpcore.audit.membership` assumes nothing about the mechanism,
and pays for it: it bounds two error rates separately, on half the runs each.  When
the family of the noise is known, the same runs support a much larger bound.  Each
estimator here is a valid lower confidence bound **under its stated assumption**, which
is the certificate's own (the noise is Gaussian, or Poisson-sampled Gaussian): if a bug
made the noise leave that family the certificate is void anyway, so a refutation still
points at a real bug, but the number may not be a valid bound.  Every estimator returns
an :class:`Estimate` that names its assumption.

* :func:`pooled_error_bound` (assumes μ-Gaussian DP) – for a μ-GDP mechanism every
  test has ``FNR ≥ Φ(Φ⁻¹(1 − FPR) − μ)``; that trade-off curve is convex and symmetric,
  so ``(FPR + FNR)/2 ≥ Φ(−μ/2)`` for *every* test, whatever its threshold.  One
  Clopper–Pearson upper bound ``p_u`` on the pooled error ``(FP + FN)/2N`` then gives
  ``μ ≥ −2Φ⁻¹(p_u)``.  The pooled count is a sum of two binomials with possibly
  different rates; its lower tail is no heavier than that of the binomial with the
  mean rate (Hoeffding 1956, Thm 4), so the Clopper–Pearson bound stays valid.
* :func:`effect_size_bound` (assumes the scores are Gaussian with a common variance,
  as the white-box log-likelihood-ratio scores of a Gaussian mechanism are exactly) –
  the scores on the two sides are ``N(m₀, v)`` and ``N(m₁, v)`` with
  ``μ = (m₁ − m₀)/√v``; the two-sample t statistic is noncentral t with
  ``2N − 2`` degrees of freedom and noncentrality ``μ/√(1/N₀ + 1/N₁)``, whose lower
  confidence bound is exact.
* :func:`gaussian_scale_bound` (assumes Gaussian noise and the declared shift: the white-box
  audit adds the shift itself, so only the noise scale is unknown) – with ``SS`` the sum of
  squares of the recovered noise (or of the scores about their known means) in units of the
  claimed variance over ``df`` degrees of freedom, ``SS/r² ~ χ²(df)`` when the noise is r times
  the claimed one, so ``r_U² = SS/χ²_α(df)`` (lower α-quantile) is an exact upper confidence
  bound on r, the uniformly most accurate one; ``μ_L = μ_c/r_U``, read as ε at δ.  Every
  coordinate of every recovered noise vector counts (white-box DP-GD on Breast Cancer, 1,000
  runs a side, T = 100: 2·10⁶ degrees of freedom, so ``r_U`` is within 10⁻³ of 1).  Were the noise
  Gaussian but not isotropic, the mean variance it bounds is at least the smallest, so the
  bound stays below the worst direction's μ.  :func:`sampled_gaussian_scale_bound` reads the
  same ``r_U`` through the Poisson-sampled Gaussian accountant (white-box DP-SGD).
* :func:`sampled_gaussian_bound` (assumes the mechanism is a Poisson-sampled Gaussian
  with the run's sampling rate and number of steps, only its noise multiplier unknown) – the
  white-box scores are sums of step log-likelihood ratios; under noise r times the claimed
  one, the effect size (mean(s1) − mean(s0))/pooled sd of an audit of this size is simulated
  (Monte Carlo, whose p-value ``(1 + #)/(B + 1)`` is exact), r is rejected where the observed
  effect is in the simulated top α, and the largest r kept bounds the multiplier from above;
  its ε at δ, read off an *optimistic* privacy-loss distribution (a lower estimate), is the
  lower bound on ε.  The whole score distribution is used, not only which side of 0 each
  score falls on (white-box DP-SGD on Breast Cancer at certified ε = 2, 1,000 runs a side:
  0.65× of the certificate from the pooled error, 0.75× from this, mean of 20 seeds).  The
  search brackets and bisects r, so it relies on the p-value falling as r grows: with
  common random numbers the count of simulated effects above any positive observed one
  does not grow with r (checked in the tests).

When several estimators are reported and the largest is taken, each runs at its share of α
(a weighted Bonferroni correction, :data:`ALPHA_SHARES`, fixed before any run: most of α on
the estimator the claim's own family makes the strongest), so the maximum holds with
confidence 1 − α.

References: Dong, Roth & Su 2019 (Gaussian DP, Prop. 2.12 and the symmetric trade-off);
Nasr et al. 2023 ("Tight auditing", §4: Gaussian fits of white-box scores); Hoeffding 1956
(Ann. Math. Stat. 27, "On the distribution of the number of successes in independent
trials"); Clopper & Pearson 1934.
"""

from __future__ import annotations

import functools
import hashlib
import math
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import beta as _beta
from scipy.stats import binom, chi2, nct, norm

from ..privacy import accounting as acc
from ..numerics import streams
from ..exceptions import ParameterError

__all__ = [
    "ALPHA_SHARES",
    "ASSUMPTIONS",
    "Estimate",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "effect_size_bound",
    "gaussian_scale_bound",
    "gdp_epsilon_lower",
    "one_run_epsilon",
    "one_run_p_value",
    "planned_guesses",
    "pooled_error_bound",
    "pooled_error_upper",
    "sampled_gaussian_bound",
    "sampled_gaussian_p_value",
    "sampled_epsilon_lower",
    "sampled_gaussian_scale_bound",
    "sampled_step_llr",
    "scale_upper",
    "score_sum_of_squares",
    "simulation_seed",
]

#: What each estimator assumes, in the words the JSON and the views use.
_TAIL = ("; if a bug broke that, the certificate is void anyway, so a refutation still points at a real "
         "bug, but this number may not be a valid bound")
ASSUMPTIONS = {
    "direct": "nothing but independent runs: (ε, δ)-DP's definition and two Clopper–Pearson bounds",
    "pooled-error": "the noise is Gaussian (a μ-GDP trade-off), as the certificate itself assumes" + _TAIL,
    "effect-size": ("the scores are Gaussian with one variance on both sides, as white-box scores of "
                    "Gaussian noise are exactly" + _TAIL),
    "sampled-gaussian": ("the noise is a Poisson-sampled Gaussian at the run's sampling rate and step "
                         "count, only its multiplier unknown, as the certificate assumes" + _TAIL),
    "gaussian-scale": ("a noise check, not an ε of records (what the noise that ran certifies for a canary at the "
                       "declared sensitivity): Gaussian noise, declared shift: the noise the attack reads is Gaussian, only its "
                       "scale unknown, and the neighbours differ by the shift the audit adds (the declared "
                       "sensitivity, or the measured one end to end), as the certificate assumes" + _TAIL),
    "sampled-gaussian-scale": ("a noise check, not an ε of records (what the noise that ran certifies for a "
                               "canary at the declared sensitivity): Gaussian noise, declared shift, Poisson "
                               "sampling at the run's rate: the "
                               "noise is Gaussian, only its scale unknown, the record moves each step it is "
                               "sampled in by the declared clipping norm, as the certificate assumes" + _TAIL),
    "measured": ("Gaussian noise and independent runs, both checked by the audit itself (a skewness and "
                 "kurtosis test on every noise coordinate; no two runs with the same noise), the estimator "
                 "not shown where either fails; nothing declared: the record's shift is the smallest measured "
                 "at every state of every run (one step of the mechanism's own code on both neighbours, "
                 "common random numbers), the noise scale is bounded from every coordinate it drew (χ²), the "
                 "sampling rate from how often the record was in the measured steps, the steps are counted"),
    "noise-check": ("a noise check, not an ε of records: the certificate's formula at the declared "
                    "sensitivity and the noise scale measured (χ²), so it says what the noise that ran "
                    "certifies in the gradient-canary threat model (a record may move each step by the whole "
                    "declared sensitivity, which the data domain need not allow); it takes the noise to be Gaussian and "
                    "the runs independent, both checked by the audit"),
}


#: How an audit splits α among the estimators that apply (weighted Bonferroni: the shares of
#: each row sum to 1, so the largest estimate holds with confidence 1 − α).  Fixed in advance,
#: by what the scores are (never by their values): where the attack reads the Gaussian noise
#: itself and adds the declared shift, the χ² scale bound is the strongest (``…-declared-shift``
#: rows); where it sees only Gaussian-shift scores, the effect size; for Poisson-sampled
#: Gaussian scores without the noise, the family fit.  The pooled error is kept for what it
#: assumes less, and the direct bound keeps a tenth, enough to catch noise that left its family.
ALPHA_SHARES = {
    # the χ² scale bound at the declared shift is the noise check (labelled, never the audited ε)
    "gaussian-declared-shift": {"direct": 0.1, "pooled-error": 0.1, "effect-size": 0.5, "gaussian-scale": 0.3},
    "gaussian": {"direct": 0.1, "pooled-error": 0.1, "effect-size": 0.8},
    "sampled-gaussian-declared-shift": {"direct": 0.7, "sampled-gaussian-scale": 0.3},
    "sampled-gaussian": {"direct": 0.1, "sampled-gaussian": 0.9},
    "other": {"direct": 1.0},
    # the measured audit (dpcore.audit.measured): the records' bound, and the noise check beside it
    "measured": {"direct": 0.1, "measured": 0.6, "noise-check": 0.3},
}


@dataclass(frozen=True)
class Estimate:
    """One estimator's lower bound on ε, at confidence ``1 − alpha`` under ``assumption``."""

    name: str
    epsilon: float
    alpha: float
    assumption: str
    mu: float | None = None  # the Gaussian-DP μ it bounds from below, where it bounds one
    detail: str = ""

    def to_dict(self) -> dict:
        return {"name": self.name, "epsilon": self.epsilon, "alpha": self.alpha,
                "assumption": self.assumption, "mu": self.mu, "detail": self.detail}


def _check_alpha(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ParameterError(f"α must be in (0, 1); got {alpha!r}")
    return float(alpha)


def gdp_epsilon_lower(mu: float, delta: float) -> float:
    """ε at δ of μ-GDP, rounded *down* (``accounting.gdp_epsilon`` rounds up, for certificates)."""
    if not mu > 0:
        return 0.0
    if delta <= 0:
        return math.inf
    return acc.gdp_epsilon(mu, delta) * (1.0 - 1e-8)


def clopper_pearson_upper(k, n, conf: float):
    """One-sided Clopper–Pearson upper bound on a binomial rate from k of n.

    The smallest p with ``P(Bin(n, p) ≤ k) ≤ 1 − conf``: the ``conf`` quantile of
    ``Beta(k + 1, n − k)``, and 1 when ``k = n``.  Works elementwise on arrays.

    >>> round(clopper_pearson_upper(0, 100, 0.95), 6)   # = 1 − 0.05^(1/100)
    0.029513
    >>> round(clopper_pearson_upper(5, 100, 0.95), 4)
    0.1023
    >>> clopper_pearson_upper(10, 10, 0.95)
    1.0

    References: Clopper & Pearson 1934, Biometrika 26(4).
    """
    k_arr, n_arr = np.asarray(k), np.asarray(n)
    if not 0.0 < conf < 1.0:
        raise ParameterError(f"confidence must be in (0, 1); got {conf!r}")
    if np.any(n_arr < 1) or np.any(k_arr < 0) or np.any(k_arr > n_arr):
        raise ParameterError(f"need 0 ≤ k ≤ n and n ≥ 1; got k = {k!r}, n = {n!r}")
    k_f, n_f = k_arr.astype(float), n_arr.astype(float)
    full = k_f >= n_f
    up = np.where(full, 1.0, _beta.ppf(conf, k_f + 1.0, np.where(full, 1.0, n_f - k_f)))
    return float(up) if up.ndim == 0 else up


def clopper_pearson_lower(k: int, n: int, conf: float) -> float:
    """One-sided Clopper–Pearson lower bound on a binomial rate from k of n: the ``1 − conf``
    quantile of ``Beta(k, n − k + 1)``, and 0 when ``k = 0``.

    >>> round(clopper_pearson_lower(100, 100, 0.95), 6)   # = 0.05^(1/100)
    0.970487
    """
    if not 0.0 < conf < 1.0:
        raise ParameterError(f"confidence must be in (0, 1); got {conf!r}")
    if n < 1 or not 0 <= k <= n:
        raise ParameterError(f"need 0 ≤ k ≤ n and n ≥ 1; got k = {k!r}, n = {n!r}")
    return 0.0 if k == 0 else float(_beta.ppf(1.0 - conf, k, n - k + 1))


def pooled_error_upper(errors: int, total: int, alpha: float) -> float:
    """One-sided Clopper–Pearson upper bound on the mean error rate from ``errors`` of ``total``.

    >>> round(pooled_error_upper(0, 2000, 0.05), 6)   # 1 − 0.05^(1/2000)
    0.001497
    """
    alpha = _check_alpha(alpha)
    if not 0 <= errors <= total or total < 1:
        raise ParameterError(f"need 0 ≤ errors ≤ total and total ≥ 1; got {errors!r} of {total!r}")
    return clopper_pearson_upper(errors, total, 1.0 - alpha)


def pooled_error_bound(fp: int, n0: int, fn: int, n1: int, delta: float, alpha: float) -> Estimate:
    """μ ≥ −2Φ⁻¹(p_u) from the pooled error of one test with fixed threshold (see the module).

    Needs equal sides (``n0 == n1``): the pooled rate is then the mean of the two rates.

    >>> e = pooled_error_bound(0, 1000, 0, 1000, 1e-5, 0.05)   # a perfect test
    >>> round(e.mu, 3)
    5.937
    >>> pooled_error_bound(500, 1000, 500, 1000, 1e-5, 0.05).epsilon
    0.0
    """
    if n0 != n1:
        raise ParameterError(f"the pooled-error bound needs as many runs on each side; got {n0} and {n1}")
    p_u = pooled_error_upper(int(fp) + int(fn), n0 + n1, alpha)
    mu = max(0.0, -2.0 * float(norm.ppf(min(p_u, 0.5)))) if p_u < 0.5 else 0.0
    return Estimate("pooled-error", gdp_epsilon_lower(mu, delta), alpha, ASSUMPTIONS["pooled-error"], mu,
                    f"{int(fp) + int(fn)} errors in {n0 + n1} runs, pooled error ≤ {p_u:.4g}, μ ≥ {mu:.4g}")


def _ncp_lower_conservative(t_obs: float, df: float, alpha: float) -> float:
    """A valid, slightly conservative lower bound where the noncentral t's numerics give out
    (huge t): T = (Z + λ)/S with S² ~ χ²_df/df, so P(T ≥ t) ≤ P(S < s) + P(Z ≥ ts − λ) ≤ α for
    s the α/2 quantile of S and λ ≤ ts − z_{α/2}."""
    s = math.sqrt(float(chi2.ppf(alpha / 2, df)) / df)
    return max(0.0, t_obs * s - float(norm.isf(alpha / 2)))


def _ncp_lower(t_obs: float, df: float, alpha: float) -> float:
    """Largest noncentrality λ with P(T ≥ t_obs | λ) ≤ α (a lower 1 − α bound on λ); ≥ 0."""
    if not math.isfinite(t_obs) or t_obs <= 0:
        return 0.0 if not t_obs > 0 else math.inf
    if t_obs > 200.0:  # beyond scipy's noncentral t (its series stops converging)
        return _ncp_lower_conservative(t_obs, df, alpha)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return _ncp_lower_exact(t_obs, df, alpha)
    except (ValueError, RuntimeError):
        return _ncp_lower_conservative(t_obs, df, alpha)


def _ncp_lower_exact(t_obs: float, df: float, alpha: float) -> float:

    def excess(lam: float) -> float:
        value = float(nct.sf(t_obs, df, lam))
        if not math.isfinite(value):
            raise ValueError("the noncentral t did not converge")
        return value - alpha

    if excess(0.0) >= 0:
        return 0.0
    z = float(norm.isf(alpha))
    hi = t_obs
    while excess(hi) < 0:  # the bound lies below t_obs (λ = t_obs gives about one half)
        hi = hi * 1.5 + 1.0
    lo = max(0.0, t_obs - 2.0 * z * math.sqrt(1.0 + t_obs**2 / (2.0 * df)) - 1.0)
    while lo > 0 and excess(lo) > 0:
        lo = max(0.0, lo - (hi - lo))
    return float(brentq(excess, lo, hi, xtol=1e-10, rtol=1e-12))


def effect_size_bound(s0, s1, delta: float, alpha: float) -> Estimate:
    """μ ≥ the lower 1 − α bound of the noncentral t (two samples, pooled variance).

    ``s0``: scores without the canary, ``s1`` with it (larger: "the canary is in").  Non-finite
    scores leave the family: the estimate is then 0 (and says so).
    """
    alpha = _check_alpha(alpha)
    s0, s1 = np.asarray(s0, dtype=float), np.asarray(s1, dtype=float)
    n0, n1 = s0.size, s1.size
    if min(n0, n1) < 2:
        raise ParameterError("the effect-size bound needs at least 2 scores on each side")
    if not (np.all(np.isfinite(s0)) and np.all(np.isfinite(s1))):
        return Estimate("effect-size", 0.0, alpha, ASSUMPTIONS["effect-size"], 0.0,
                        "some scores are not finite (diverged runs): not Gaussian, no estimate")
    df = n0 + n1 - 2
    sp = math.sqrt((((s0 - s0.mean()) ** 2).sum() + ((s1 - s1.mean()) ** 2).sum()) / df)
    scale = math.sqrt(1.0 / n0 + 1.0 / n1)
    if sp == 0:
        mu = math.inf if s1.mean() > s0.mean() else 0.0
    else:
        t_obs = float(s1.mean() - s0.mean()) / (sp * scale)
        mu = _ncp_lower(t_obs, df, alpha) * scale
    return Estimate("effect-size", gdp_epsilon_lower(mu, delta), alpha, ASSUMPTIONS["effect-size"], mu,
                    f"mean shift / sd of the scores ≥ {mu:.4g} (noncentral t, {df} degrees of freedom)")


# ---------------------------------------------------------------------------
# Gaussian noise, declared shift: the χ² bound on the noise scale


def score_sum_of_squares(s0, s1, mu: float) -> tuple[float, int]:
    """``(SS, df)`` of log-likelihood-ratio scores of a Gaussian shift whose μ under the claimed
    noise is ``mu``: such scores are ``N(∓μ²/2, μ²)`` on the two sides, so SS is their sum of
    squares about those known means in units of μ² (``χ²(N₀ + N₁)`` at the claimed scale).

    >>> score_sum_of_squares([-0.5, -1.5], [0.5, 1.5], 1.0)
    (2.0, 4)
    """
    s0, s1 = np.asarray(s0, dtype=float), np.asarray(s1, dtype=float)
    if not mu > 0:
        raise ParameterError(f"the scores' μ must be positive; got {mu!r}")
    m = mu * mu / 2.0
    ss = (float(np.sum((s0 + m) ** 2)) + float(np.sum((s1 - m) ** 2))) / (mu * mu)
    return ss, int(s0.size + s1.size)


def scale_upper(ss: float, df: int, alpha: float) -> float:
    """``r_U = √(SS/χ²_α(df))``: the exact upper 1 − α confidence bound on the ratio of the true
    noise scale to the claimed one from ``SS/r² ~ χ²(df)`` (0 when SS is 0; ∞ when SS is not finite).

    >>> round(scale_upper(2.0, 2, 0.05), 6) == round(math.sqrt(2.0 / (-2 * math.log(0.95))), 6)
    True
    """
    alpha = _check_alpha(alpha)
    if int(df) < 1:
        raise ParameterError(f"need at least one degree of freedom; got {df!r}")
    if not math.isfinite(ss):
        return math.inf
    return math.sqrt(max(0.0, float(ss)) / float(chi2.ppf(alpha, int(df))))


def gaussian_scale_bound(ss: float, df: int, mu_claim: float, delta: float, alpha: float) -> Estimate:
    """μ ≥ μ_c/r_U, the χ² bound on the noise scale (see the module), read as ε at δ.

    ``ss``/``df``: the sum of squares of the recovered noise coordinates (or of the scores about
    their known means, :func:`score_sum_of_squares`) in units of the claimed variance, and their
    count; ``mu_claim``: the μ the attack's view has at the claimed scale (its ceiling).
    """
    alpha = _check_alpha(alpha)
    name, why = "gaussian-scale", ASSUMPTIONS["gaussian-scale"]
    r_u = scale_upper(ss, df, alpha)
    if not math.isfinite(r_u):
        return Estimate(name, 0.0, alpha, why, 0.0, "the noise is not finite (diverged runs): no estimate")
    mu = math.inf if r_u == 0 else float(mu_claim) / r_u
    return Estimate(name, gdp_epsilon_lower(mu, delta), alpha, why, mu,
                    f"noise scale ≤ {r_u:.6g}× the claimed (χ², {int(df)} degrees of freedom, sum of squares "
                    f"{ss / df:.6g} per degree), μ ≥ {mu:.6g} of the attack's {mu_claim:.6g}")


def sampled_gaussian_scale_bound(ss: float, df: int, noise_multiplier: float, sample_rate: float, steps: int,
                                 delta: float, alpha: float, grid: float = 1e-4) -> Estimate:
    """The χ² bound on the noise scale (:func:`gaussian_scale_bound`) for ``steps`` Poisson-sampled
    Gaussian steps at ``sample_rate``: the multiplier is at most ``r_U·z``, whose ε at δ from an
    *optimistic* privacy-loss distribution (a lower estimate) is the bound.  One accountant call,
    so on a fine grid (10⁻⁴: white-box DP-SGD at certified ε = 2 reads 1.995 at r_U = 1, against
    1.950 on the family fit's 10⁻³)."""
    alpha = _check_alpha(alpha)
    name, why = "sampled-gaussian-scale", ASSUMPTIONS["sampled-gaussian-scale"]
    z, q, steps = float(noise_multiplier), float(sample_rate), int(steps)
    if not (z > 0 and 0 < q <= 1 and steps >= 1):
        raise ParameterError(f"need a positive multiplier, a rate in (0, 1] and ≥ 1 step; got {z}, {q}, {steps}")
    at = f" at δ = {acc.PLD_MIN_DELTA:g}, the smallest the distribution resolves" if delta < acc.PLD_MIN_DELTA else ""
    delta = max(float(delta), acc.PLD_MIN_DELTA)  # ε(δ) grows as δ shrinks: still a lower bound at the δ asked
    r_u = scale_upper(ss, df, alpha)
    if not math.isfinite(r_u):
        return Estimate(name, 0.0, alpha, why, None, "the noise is not finite (diverged runs): no estimate")
    if r_u * z < 1e-3:  # next to no noise: the accountant's grid cannot resolve it
        r_u = 1e-3 / z
    return Estimate(name, _epsilon_optimistic(r_u * z, q, steps, float(delta), grid), alpha, why, None,
                    f"noise multiplier ≤ {r_u * z:.6g}, {r_u:.6g}× the claimed {z:.4g} (χ², {int(df)} degrees "
                    f"of freedom; q = {q:.4g}, {steps} steps){at}")


# ---------------------------------------------------------------------------
# Poisson-sampled Gaussians: fit the noise multiplier within the family

def simulation_seed(*parts) -> int:
    """The seed of a Monte-Carlo simulation that names none: a 64-bit hash (BLAKE2b) of what it is
    for — an audit's scores or run seeds — so it is deterministic for a given audit (whose scores
    and runs its own seed fixes) and differs between audits; no two calls share a default set.

    >>> simulation_seed([1.0, 2.0]) == simulation_seed(np.array([1.0, 2.0]))
    True
    >>> simulation_seed([1.0, 2.0]) == simulation_seed([1.0, 2.5])
    False
    """
    h = hashlib.blake2b(digest_size=8, person=b"dpcore-audit-mc")
    for part in parts:
        a = np.asarray(part)
        a = np.ascontiguousarray(a.astype(np.int64 if a.dtype.kind in "iub" else float))
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return int.from_bytes(h.digest(), "little")


#: Monte-Carlo replicates of the sampled-Gaussian test (the p-value (1 + #)/(B + 1) is exact for any B)
SAMPLED_REPLICATES = 99
#: the bracket on the noise ratio r is narrowed to this relative width (its upper end is reported)
_R_RTOL = 0.005


def _composed(z: float, q: float, steps: int, grid: float, pessimistic: bool):
    if q >= 1.0:
        return acc.sampled_gaussian_pld(z / math.sqrt(steps), 1.0, grid, pessimistic=pessimistic)
    return acc.sampled_gaussian_pld(z, q, grid, pessimistic=pessimistic).self_compose(int(steps))


# pure: the optimistic PLD's ε of its arguments (dp-accounting's, at this code's version)
@functools.lru_cache(maxsize=4096)
def _epsilon_optimistic(z: float, q: float, steps: int, delta: float, grid: float) -> float:
    return max(0.0, float(_composed(z, q, steps, grid, pessimistic=False).get_epsilon_for_delta(delta)))


def sampled_epsilon_lower(z: float, q: float, steps: int, delta: float, grid: float = 1e-3) -> float:
    """ε at δ of ``steps`` Poisson-sampled Gaussians (multiplier z, rate q) from an *optimistic*
    privacy-loss distribution: a lower estimate of the true ε, what a lower bound may use (cached).

    Below :data:`~dpcore.privacy.accounting.PLD_MIN_DELTA` the distribution does not resolve δ (at δ = 1e-100 it
    answered ε = ∞, and a correct certificate was shown refuted): the figure at that δ is taken instead,
    still a lower bound, as ε(δ) only grows as δ shrinks."""
    delta = max(float(delta), acc.PLD_MIN_DELTA)
    return _epsilon_optimistic(float(z), float(q), int(steps), delta, float(grid))


def sampled_step_llr(o, z: float, q: float):
    """The white-box score of one Poisson-sampled step, in units of the clipping norm C: the
    log-likelihood ratio of ``(1 − q)N(0, z²) + qN(+1, z²)`` against ``(1 − q)N(0, z²) + qN(−1, z²)``
    at the observation ``o`` (what :mod:`dpcore.audit.whitebox` sums over the steps)."""
    o = np.asarray(o, dtype=float)
    lq, l1q = math.log(q), math.log1p(-q) if q < 1.0 else -math.inf
    return (np.logaddexp(l1q, lq + (o - 0.5) / z**2) - np.logaddexp(l1q, lq + (-o - 0.5) / z**2))


def _effect(s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
    """(mean(s1) − mean(s0)) / pooled sd along the last axis (0 where the sd is 0)."""
    n0, n1 = s0.shape[-1], s1.shape[-1]
    ss = (((s0 - s0.mean(-1, keepdims=True)) ** 2).sum(-1) + ((s1 - s1.mean(-1, keepdims=True)) ** 2).sum(-1))
    sd = np.sqrt(ss / (n0 + n1 - 2))
    diff = s1.mean(-1) - s0.mean(-1)
    return np.divide(diff, sd, out=np.zeros_like(diff), where=sd > 0)


class _SimulatedAudits:
    """``replicates`` simulated audits of ``n`` runs a side of the sampled-Gaussian family, scored
    like the real runs under the claim; :meth:`effects` gives their effect statistic when the noise
    is ``r`` times the claimed one.  Replicate j always draws from the generator ``[seed,
    AUDIT_SIMULATION, j]``: common random numbers, so the statistic moves smoothly with r (the
    draws are kept between calls when they fit in :data:`_SIM_BYTES`).  The side without the
    canary is simulated as the negated side with it (its scores have exactly that law, the step
    score being odd).  Blocks of replicates run on two threads (numpy releases the GIL)."""

    def __init__(self, n: int, z: float, q: float, steps: int, replicates: int, seed: int):
        self.n, self.z, self.q, self.steps, self.replicates, self.seed = n, z, q, steps, replicates, seed
        per = 2 * n * steps
        self.block = max(1, min(replicates, _SIM_BLOCK // max(1, per)))
        self.keep = replicates * per * 9 <= _SIM_BYTES
        self.draws: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _draws(self, j: int):
        if j in self.draws:
            return self.draws[j]
        g = np.random.default_rng([int(self.seed), streams.AUDIT_SIMULATION, j])
        out = (g.standard_normal((2 * self.n, self.steps)), g.random((2 * self.n, self.steps)) < self.q)
        if self.keep:
            self.draws[j] = out
        return out

    def _block(self, start: int, stop: int, r: float) -> np.ndarray:
        sims = []
        for j in range(start, stop):
            noise, coins = self._draws(j)
            sims.append(sampled_step_llr((r * self.z) * noise + coins, self.z, self.q).sum(axis=1))
        sims = np.stack(sims)
        return _effect(-sims[:, :self.n], sims[:, self.n:])

    def effects(self, r: float) -> np.ndarray:
        starts = range(0, self.replicates, self.block)
        with ThreadPoolExecutor(max_workers=2) as pool:
            parts = pool.map(lambda a: self._block(a, min(self.replicates, a + self.block), r), starts)
            return np.concatenate(list(parts))


#: elements of one block of simulated step scores, and the most the kept draws may take (bytes)
_SIM_BLOCK, _SIM_BYTES = 2_000_000, 400 * 2**20


def sampled_gaussian_p_value(s0, s1, noise_multiplier: float, sample_rate: float, steps: int,
                             ratio: float = 1.0, replicates: int = SAMPLED_REPLICATES,
                             seed: int | None = None) -> float:
    """Monte-Carlo p-value of "the noise is ``ratio`` times the claimed multiplier" given white-box
    scores ``s0`` / ``s1`` (see :func:`sampled_gaussian_bound`): ``(1 + #{simulated effect ≥
    observed})/(B + 1)``, exact for any number B of replicates (the simulated audits and the real
    one are exchangeable under the hypothesis).  ``seed`` (the simulation's; by default
    :func:`simulation_seed` of the scores: fresh for every audit, deterministic for each)."""
    s0, s1 = np.asarray(s0, dtype=float), np.asarray(s1, dtype=float)
    observed = float(_effect(s0, s1))
    seed = simulation_seed(s0, s1) if seed is None else int(seed)
    sims = _SimulatedAudits(s0.size, float(noise_multiplier), float(sample_rate), int(steps), int(replicates),
                            seed).effects(float(ratio))
    return _mc_p_value(sims, observed)


def _mc_p_value(sims: np.ndarray, observed: float) -> float:
    """(1 + #{simulated ≥ observed})/(B + 1): exact for any B when they are exchangeable."""
    return (1.0 + float(np.sum(sims >= observed))) / (sims.size + 1.0)


def sampled_gaussian_bound(s0, s1, noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                           alpha: float, replicates: int = SAMPLED_REPLICATES, seed: int | None = None,
                           grid: float = 1e-3) -> Estimate:
    """ε lower bound within the family of ``steps`` Poisson-sampled Gaussians at ``sample_rate``,
    from the white-box scores of a run whose claimed noise multiplier is ``noise_multiplier``.

    The scores are sums over the steps of :func:`sampled_step_llr` (units of the clipping norm).
    The family: the noise is ``r`` times the claimed one, r unknown.  The statistic is the effect
    size (mean(s1) − mean(s0))/pooled sd; its law under each r is simulated (Monte Carlo,
    common random numbers, so it falls as r grows), and r is rejected where the observed effect
    is in the top α of the simulated ones (:func:`sampled_gaussian_p_value`).  The largest r not
    rejected, ``r_U``, is an upper confidence bound on the ratio; the ε at δ of the multiplier
    ``r_U·z`` from an *optimistic* privacy-loss distribution (a lower estimate) is the bound.
    ``seed`` seeds the simulation; by default it is :func:`simulation_seed` of the scores (fresh
    for every audit, deterministic given the audit's seed, which fixes its scores).
    """
    alpha = _check_alpha(alpha)
    s0, s1 = np.asarray(s0, dtype=float), np.asarray(s1, dtype=float)
    seed = simulation_seed(s0, s1) if seed is None else int(seed)
    z, q, steps = float(noise_multiplier), float(sample_rate), int(steps)
    name, why = "sampled-gaussian", ASSUMPTIONS["sampled-gaussian"]
    if s0.size != s1.size or s0.size < 2:
        raise ParameterError(f"the family fit needs as many runs on each side (≥ 2); got {s0.size} and {s1.size}")
    if not (z > 0 and 0 < q <= 1 and steps >= 1):
        raise ParameterError(f"need a positive multiplier, a rate in (0, 1] and ≥ 1 step; got {z}, {q}, {steps}")
    if delta < acc.PLD_MIN_DELTA:  # the PLD cannot resolve such a δ: no estimate rather than a wrong one
        return Estimate(name, 0.0, alpha, why, None, f"δ = {delta:g} is below what the privacy-loss "
                        f"distribution resolves ({acc.PLD_MIN_DELTA:g}): no estimate")
    if not (np.all(np.isfinite(s0)) and np.all(np.isfinite(s1))):
        return Estimate(name, 0.0, alpha, why, None, "some scores are not finite (diverged runs): no estimate")
    observed = float(_effect(s0, s1))
    if not observed > 0:
        return Estimate(name, 0.0, alpha, why, None, f"no separation (effect {observed:.3g}): no estimate")
    # the smallest replicate count whose p-value can fall to α
    replicates = max(int(replicates), math.ceil(1.0 / alpha) - 1)
    simulated = _SimulatedAudits(s0.size, z, q, steps, replicates, int(seed))
    cache: dict[float, bool] = {}

    def rejected(r: float) -> bool:
        if r not in cache:
            cache[r] = _mc_p_value(simulated.effects(r), observed) <= alpha
        return cache[r]

    # bracket lo (kept) < hi (rejected) around a normal approximation's guess (the effect falls
    # about as 1/r), widening the step each time it misses, then bisect
    sims = simulated.effects(1.0)
    cache[1.0] = _mc_p_value(sims, observed) <= alpha
    lead = observed - float(norm.isf(alpha)) * float(sims.std())
    guess = min(1e3, max(1e-3, float(sims.mean()) / lead)) if lead > 0 else 1e3
    lo = hi = guess
    step = 1.02
    if rejected(guess):
        while rejected(lo):
            hi, lo, step = lo, lo / step, step * step
            if lo < 1e-3:  # the claimed noise would have to be 1,000 times too large
                return Estimate(name, _epsilon_optimistic(z * hi, q, steps, delta, grid), alpha, why, None,
                                f"noise multiplier ≤ {z * hi:.4g} (the search's end)")
    else:
        while not rejected(hi):
            lo, hi, step = hi, hi * step, step * step
            if hi > 1e3:
                return Estimate(name, 0.0, alpha, why, None, f"no noise multiplier up to {z * hi:.4g} "
                                "is rejected: no estimate")
    while hi / lo - 1.0 > _R_RTOL:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if rejected(mid) else (mid, hi)
    z_upper = z * hi
    return Estimate(name, _epsilon_optimistic(z_upper, q, steps, delta, grid), alpha, why, None,
                    f"effect {observed:.4g}; noise multiplier ≤ {z_upper:.4g}, {hi:.4g}× the claimed {z:.4g} "
                    f"(q = {q:.4g}, {steps} steps; {replicates} simulated audits a ratio)")


# ---------------------------------------------------------------------------
# one training run, many canaries (Steinke, Nasr & Jagielski 2023)


def one_run_p_value(m: int, guesses: int, correct: int, epsilon: float, delta: float) -> float:
    """P(at least ``correct`` of ``guesses`` right) for an (ε, δ)-DP run with ``m`` canaries.

    Each canary is in or out with probability ½, independently; an auditor guesses in/out for
    ``guesses`` of them from the one released model.  For (ε, δ)-DP (each canary's membership
    a neighbouring change) the count W of right guesses satisfies, for every v,
    ``P(W ≥ v) ≤ f(v) + 2mδ·max_{1≤i≤v} (f(v − i) − f(v))/i`` with ``f(u) = P(Bin(r, p) ≥ u)``,
    ``p = e^ε/(1 + e^ε)`` (Steinke, Nasr & Jagielski 2023, Thm 5.2; δ = 0 is their Thm 3.1).

    >>> round(one_run_p_value(100, 10, 10, math.log(9), 0.0), 6)   # 0.9^10
    0.348678
    """
    r, v = int(guesses), int(correct)
    p = 1.0 / (1.0 + math.exp(-epsilon)) if epsilon < 700 else 1.0
    f_v = float(binom.sf(v - 1, r, p))
    if delta <= 0 or v <= 0:
        return f_v
    i = np.arange(1, v + 1)
    slack = float(np.max((binom.sf(v - i - 1, r, p) - f_v) / i))
    return min(1.0, f_v + 2.0 * int(m) * delta * slack)


def one_run_epsilon(m: int, guesses: int, correct: int, delta: float, alpha: float) -> float:
    """The largest ε whose (ε, δ) claim the one-run counts refute at level α (0 if none): a lower
    confidence bound on ε.  The p-value grows with ε, so the root is bracketed and unique.

    >>> round(one_run_epsilon(1000, 100, 100, 0.0, 0.05), 4)   # logit(0.05^(1/100))
    3.493
    """
    alpha = _check_alpha(alpha)
    if guesses < 1 or not 0 <= correct <= guesses or guesses > m:
        raise ParameterError(f"need 0 ≤ correct ≤ guesses ≤ m; got {correct}, {guesses}, {m}")

    def excess(eps: float) -> float:
        return alpha - one_run_p_value(m, guesses, correct, eps, delta)

    if excess(0.0) <= 0:
        return 0.0
    hi = 1.0
    while excess(hi) > 0:
        hi *= 2.0
        if hi > 1e4:  # pragma: no cover - a p-value below α at ε = 10⁴ needs ~10⁴ guesses
            return math.inf
    return float(brentq(excess, 0.0, hi, xtol=1e-9)) * (1.0 - 1e-9)


def planned_guesses(m: int, epsilon: float, delta: float, alpha: float) -> int:
    """The guess count r (even: r/2 highest and r/2 lowest scores) to use in a one-run audit of ``m``
    canaries of a run that claims (ε, δ): the r whose bound :func:`one_run_epsilon` is largest on
    average when the claim is exact and each canary's score is a Gaussian shift of the claim's μ
    (Gaussian DP matched to ε at δ; the right guesses binomial at the precision that shift gives,
    the mean taken over five of its quantiles).
    It depends on the claim only, never on the run, so the bound at this one r keeps its full
    confidence (no split of α).

    >>> planned_guesses(1000, 2.0, 1e-5, 0.05), planned_guesses(1000, 14.1, 1e-5, 0.05)
    (100, 300)
    """
    epsilon = float(epsilon)
    if not math.isfinite(epsilon) or epsilon > 50:  # no claim, or an empty one: plan as for ε = 50
        epsilon = 50.0
    return _planned_guesses(int(m), round(max(epsilon, 1e-6), 6), float(delta), float(alpha))


# pure: a bisection on a closed form of its arguments
@functools.lru_cache(maxsize=256)
def _planned_guesses(m: int, epsilon: float, delta: float, alpha: float) -> int:
    lo, hi = 1e-6, 60.0  # μ whose ε at δ is the claim, by bisection on the closed-form δ(ε) of μ-GDP
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if acc.gdp_delta(mid, epsilon) < delta else (lo, mid)
    mu = lo
    best, best_eps = 2, -1.0
    for r in sorted({max(2, 2 * int(round(share * m / 2))) for share in _PLAN_SHARES}):
        k = r // 2
        # the score above which k of the m canaries fall when half are N(μ, 1) and half N(0, 1)
        t = float(brentq(lambda x: m * 0.5 * (norm.sf(x - mu) + norm.sf(x)) - k, -40.0, 40.0 + mu))
        precision = float(norm.sf(t - mu) / (norm.sf(t - mu) + norm.sf(t)))
        # the bound's mean over the right guesses' binomial law, by its deciles 0.1, 0.3, …, 0.9
        counts = binom.ppf(_PLAN_QUANTILES, r, precision).astype(int)
        eps = sum(one_run_epsilon(m, r, int(c), delta, alpha) for c in counts) / len(counts)
        if eps > best_eps:
            best, best_eps = r, eps
    return best


_PLAN_QUANTILES = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
#: the guess counts a plan chooses among, as shares of the canaries
_PLAN_SHARES = (0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.17, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0)
