"""Privacy accounting on top of Google's ``dp-accounting``.

Neighbouring datasets differ by **replacing** one record (SPEC §1).  Every
function states the sensitivity it assumes under that relation.

* :func:`sigma_ag` — the analytic Gaussian calibration σ_AG(ε, δ) (Balle &
  Wang 2018) for sensitivity 1, from ``dp_accounting.get_sigma_gaussian``;
* :func:`gdp_epsilon` — ε(δ) of a μ-GDP mechanism; T Gaussian steps with
  sensitivity Δ and noise σ compose exactly to μ = √T·Δ/σ;
* :func:`pld_gaussian_epsilon` — the same through the PLD accountant (a
  second, independent computation used by the tests);
* :func:`sampled_gaussian_epsilon` / :func:`calibrate_sampled_gaussian` —
  T Poisson-sampled Gaussian steps (DP-SGD) through the PLD accountant under
  ``REPLACE_ONE`` (the tests check it against a privacy-loss distribution
  written independently in ``tests/independent.py``).

Which of these a mechanism's guarantee uses is decided in one place,
:mod:`dpcore.privacy.core`, from the noise plan the mechanism declares.

Pitfall (STYLE.md): under ``REPLACE_ONE`` the PLD accountant reads
``GaussianDpEvent(z)`` as sensitivity 2 (in units of the clipping norm), which is
right for a sum of clipped gradients; for an unsampled Gaussian with a known
replace-one sensitivity Δ we pass ``σ/Δ`` under ``ADD_OR_REMOVE_ONE`` instead.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import numbers
from collections.abc import Callable
from importlib.metadata import version as _version
from pathlib import Path

import dp_accounting as dpa
import numpy as np
from dp_accounting.pld import pld_privacy_accountant as _pld
from dp_accounting.pld import privacy_loss_distribution as _pl
from dp_accounting.pld import privacy_loss_mechanism as _plm
from scipy.optimize import brentq, minimize_scalar
from scipy.special import logsumexp
from scipy.stats import norm

from .._version import __version__
from ..cache import DiskCache, Memo

__all__ = [
    "NEIGHBOURING",
    "sigma_ag",
    "gdp_delta",
    "gdp_epsilon",
    "gaussian_epsilon",
    "pld_gaussian_epsilon",
    "sampled_gaussian_event",
    "sampled_gaussian_epsilon",
    "pld_span",
    "pld_grid",
    "PLD_MIN_MULTIPLIER",
    "sampled_gaussian_epsilon_rdp",
    "convex_bridge",
    "sampled_gaussian_rdp",
    "calibrate_sampled_gaussian",
    "CalibrationTable",
    "rr_keep_probability",
    "feature_release_epsilon",
]

NEIGHBOURING = "replace-one"
_NR = dpa.NeighboringRelation
# Relative safety margin so that rounding never lets a calibrated σ undershoot.
_SAFETY = 1e-9
PLD_DISCRETIZATION = 1e-3
PLD_MIN_MULTIPLIER = 0.005
#: a calibration whose noise certifies an ε more than this share below its target searches again,
#: on the certifier itself (its one-grid search could not resolve the target: at ε = 1e-4,
#: δ = 1e-12 it had asked for 5·10⁶ times the noise the unsampled bound needs)
CALIBRATION_SLACK = 0.01
#: below this δ the PLD's FFT composition cannot resolve the tail (double precision: ε(z) at
#: δ = 1e-15 is no longer monotone in z, so a value may be too low); the Rényi-DP route
#: (:func:`sampled_gaussian_epsilon_rdp`), computed in log space, takes over
PLD_MIN_DELTA = 1e-12
#: Rényi orders of the RDP route
RDP_ORDERS = (1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0, 32.0,
              48.0, 64.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0)


def gdp_delta(mu: float, epsilon: float) -> float:
    """δ(ε) of μ-GDP: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)  (Dong, Roth, Su 2019)."""
    if mu == 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    a = -epsilon / mu
    # e^ε Φ(a − μ/2) evaluated in log space to avoid overflow.
    log_second = epsilon + float(norm.logcdf(a - mu / 2))
    second = math.exp(log_second) if log_second < 700 else math.inf
    return max(0.0, float(norm.cdf(a + mu / 2) - second))


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest ε ≥ 0 with δ(ε) ≤ delta for μ-GDP (inf for μ = inf, 0 for μ = 0)."""
    if mu <= 0:
        return 0.0
    if math.isinf(mu):
        return math.inf
    if gdp_delta(mu, 0.0) <= delta:
        return 0.0
    if mu > 1e4:  # next to no noise: the Gaussian tail bound of the loss N(μ²/2, μ²) (an upper bound)
        return mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta))
    hi = max(1.0, mu * mu)
    while gdp_delta(mu, hi) > delta:
        hi *= 2.0
        if hi > 1e9:
            return math.inf
    eps = brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, hi, xtol=1e-14, rtol=1e-13)
    return float(eps) * (1 + _SAFETY)  # round up: never understate ε


def sigma_ag(epsilon: float, delta: float) -> float:
    """Analytic Gaussian: smallest σ giving (ε, δ)-DP for sensitivity 1 (rounded up)."""
    if math.isinf(epsilon):
        return 0.0
    return float(dpa.get_sigma_gaussian(epsilon, delta)) * (1 + _SAFETY)


def gaussian_epsilon(sensitivity: float, sigma: float, steps: int, delta: float) -> float:
    """ε of ``steps`` Gaussian releases with replace-one sensitivity Δ and noise σ (exact, GDP)."""
    if sigma is None or sigma <= 0:
        return math.inf
    return gdp_epsilon(math.sqrt(steps) * sensitivity / sigma, delta)


def pld_gaussian_epsilon(sensitivity: float, sigma: float, steps: int, delta: float,
                         discretization: float = 1e-4) -> float:
    """Same as :func:`gaussian_epsilon` through dp-accounting's PLD accountant."""
    acc = _pld.PLDAccountant(_NR.ADD_OR_REMOVE_ONE, value_discretization_interval=discretization)
    acc.compose(dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(sigma / sensitivity), int(steps)))
    return float(acc.get_epsilon(delta))


def sampled_gaussian_event(noise_multiplier: float, sample_rate: float, steps: int) -> dpa.DpEvent:
    """The event of DP-SGD: T Poisson-sampled Gaussians, σ = z·C on the clipped sum."""
    inner = dpa.GaussianDpEvent(noise_multiplier)
    if sample_rate < 1:
        inner = dpa.PoissonSampledDpEvent(sample_rate, inner)
    return dpa.SelfComposedDpEvent(inner, int(steps))


class _GaussianLoss(_plm.GaussianPrivacyLoss):
    """dp-accounting's Gaussian privacy loss, with its connect-the-dots δ(ε) vectorised.

    The library inverts the privacy loss one grid point at a time in Python
    (``inverse_privacy_loss`` in a list comprehension), which is most of the
    cost of a sampled-Gaussian PLD: about 70,000 calls for a 1e-3 grid.  This
    evaluates the library's own closed form (``_inverse_privacy_loss_replace``:
    x = σ²/Δ·(asinh(−sinh(ε/2)·α) − ε/2), α = e^{Δ²/2σ²}(1 − q)/q) on the whole
    grid at once.  Only the replace-one case is overridden; anything else goes
    to the library.  ``tests/test_accounting.py`` checks that the resulting ε
    equals the accountant's.
    """

    def get_delta_for_epsilon(self, epsilon):
        if (isinstance(epsilon, numbers.Number)
                or self.adjacency_type != _plm.AdjacencyType.REPLACE):
            return super().get_delta_for_epsilon(epsilon)
        eps = np.asarray(epsilon, dtype=float)
        x = self._inverse_replace(eps)
        deltas = self.mu_upper_cdf(x) - np.exp(eps + self.mu_lower_log_cdf(x))
        return np.clip(deltas, 0, 1)

    def _inverse_replace(self, eps: np.ndarray) -> np.ndarray:
        s, sd, q = self.sensitivity, self._standard_deviation, self.sampling_prob
        if q == 1.0:
            return -eps * sd**2 / s / 2
        a = np.abs(eps)
        log_alpha = 0.5 * (s / sd) ** 2 + math.log1p(-q) - math.log(q)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_sinh = a / 2 + np.log1p(-np.exp(-a)) - math.log(2)  # common.log_sinh(|ε|/2)
            t = log_alpha + log_sinh
            # common.asinh_exp(t, −sign ε) = −sign ε · logaddexp(½ logaddexp(0, 2t), t)
            asinh = -np.sign(eps) * np.logaddexp(0.5 * np.logaddexp(0, 2 * t), t)
            x = sd**2 / s * (asinh - eps / 2)
        return np.where(eps == 0, 0.0, x)


def sampled_gaussian_pld(noise_multiplier: float, sample_rate: float, discretization: float,
                         pessimistic: bool = True) -> "_pl.PrivacyLossDistribution":
    """One step's PLD (replace-one) as ``PLDAccountant`` builds it, only faster.

    ``pessimistic=False`` rounds the other way: its ε(δ) is a lower estimate, which is
    what an audit's lower bound needs (``dpcore.audit.bounds``).  Trusted for
    δ ≥ :data:`PLD_MIN_DELTA` only (the truncated and round-off mass must stay far below δ).
    The builder
    is a private dp-accounting function; should a release drop it, the library's own
    (slower) public constructor is used instead.
    """
    build = getattr(_pl, "_create_pld_pmf_from_monotone_privacy_loss", None)
    if build is None:  # pragma: no cover - depends on the installed dp-accounting
        return _pl.from_gaussian_mechanism(
            standard_deviation=noise_multiplier, sampling_prob=sample_rate,
            pessimistic_estimate=pessimistic,
            value_discretization_interval=discretization, neighboring_relation=_NR.REPLACE_ONE)
    loss = _GaussianLoss(noise_multiplier, sensitivity=1, pessimistic_estimate=pessimistic,
                         log_mass_truncation_bound=-50, sampling_prob=sample_rate,
                         adjacency_type=_plm.AdjacencyType.REPLACE)
    return _pl.PrivacyLossDistribution(build(loss, pessimistic_estimate=pessimistic,
                                             value_discretization_interval=discretization,
                                             use_connect_dots=pessimistic))


# pure: an accountant's result from its arguments (dp-accounting's, at this code's version)
@functools.lru_cache(maxsize=1024)
def _sampled_gaussian_pld_epsilon(noise_multiplier: float, sample_rate: float, steps: int,
                                  delta: float, discretization: float) -> float:
    """ε of ``sampled_gaussian_event(z, q, T)`` by the PLD accountant on this grid, built the same way:
    a Poisson-sampled step self-composed T times, or, with q = 1, one Gaussian of
    noise z/√T (how the accountant reads a self-composed Gaussian)."""
    if sample_rate >= 1:
        pld = sampled_gaussian_pld(noise_multiplier / math.sqrt(steps), 1.0, discretization)
    else:
        pld = sampled_gaussian_pld(noise_multiplier, sample_rate, discretization).self_compose(int(steps))
    identity = _pl.identity(value_discretization_interval=discretization)
    return float(identity.compose(pld).get_epsilon_for_delta(delta))


# pure: an accountant's result from its arguments (dp-accounting's, at this code's version)
@functools.lru_cache(maxsize=512)
def never_sampled(sample_rate: float, steps: int) -> float:
    """The probability 1 − (1 − q)^T that a record is in at least one of T Poisson batches.  Two
    neighbouring datasets give identical outputs unless the replaced record is sampled, so the
    total variation between the outputs, hence δ at ε = 0, is at most this, whatever the noise:
    when it is ≤ δ the run is (0, δ)-DP, and no accountant needs to run (a calibration at
    q = 1e-7 spent a minute on ever finer PLD grids to find so)."""
    return -math.expm1(int(steps) * math.log1p(-float(sample_rate))) if sample_rate < 1 else 1.0


def sampled_gaussian_epsilon(noise_multiplier: float, sample_rate: float, steps: int,
                             delta: float) -> float:
    """ε (replace-one) of T Poisson-sampled Gaussian steps with noise multiplier z.

    PLD accountant; its discretisation is pessimistic, so the value is an upper
    bound.  Very weak noise (huge ε) is evaluated on a coarser grid first, which
    keeps it fast and still an upper bound.  Without sampling (q = 1), the exact
    GDP closed form, μ = 2√T/z (the PLD of a million steps took seconds to say less).
    """
    if noise_multiplier <= 0:
        return math.inf
    if never_sampled(sample_rate, steps) <= delta:
        return 0.0  # the record is in no batch but with probability ≤ δ: (0, δ) whatever the noise
    if delta < PLD_MIN_DELTA:  # the bounds exact at any δ, bridged to the PLD's value at PLD_MIN_DELTA
        anchor = sampled_gaussian_epsilon(noise_multiplier, sample_rate, steps, PLD_MIN_DELTA)
        return convex_bridge(delta, anchor, PLD_MIN_DELTA,
                             lambda d: _below_pld(noise_multiplier, sample_rate, steps, d))
    if noise_multiplier < PLD_MIN_MULTIPLIER:
        # So little noise that the PLD grid would not fit in memory.  Subsampling never
        # hurts, so the unsampled composition (μ = 2√T/z, replace-one) is a valid bound.
        return gaussian_epsilon(2.0, noise_multiplier, steps, delta)
    bound = gaussian_epsilon(2.0, noise_multiplier, steps, delta)
    if sample_rate >= 1:
        return bound  # no sampling: T Gaussians of sensitivity 2 compose to μ = 2√T/z exactly
    discretization = pld_grid(noise_multiplier, sample_rate, steps)
    if discretization is None:
        return bound
    return min(bound, _sampled_gaussian_pld_epsilon(noise_multiplier, sample_rate, steps, delta,
                                                    discretization))


def _below_pld(z: float, q: float, steps: int, delta: float) -> float:
    """The smaller of the unsampled GDP bound and the Rényi route, both exact at any δ (the
    Rényi integrals skipped when their conversion alone cannot beat the first)."""
    bound = gaussian_epsilon(2.0, z, steps, delta)
    if bound <= rdp_conversion_floor(delta):
        return bound  # no order's conversion alone gets below it: skip the integrals
    return min(bound, sampled_gaussian_epsilon_rdp(z, q, steps, delta))


#: the anchors δ/k that :func:`convex_bridge` joins to the PLD's last trusted point
BRIDGE_FACTORS = (2.0, 10.0)


def convex_bridge(delta: float, anchor_epsilon: float, anchor_delta: float,
                  bound: Callable[[float], float]) -> float:
    """ε at ``delta`` < ``anchor_delta`` from a certificate (``anchor_epsilon``, ``anchor_delta``)
    and a ``bound`` valid at every δ: the smaller of ``bound(delta)`` and, for each anchor
    δ_r = δ/k (:data:`BRIDGE_FACTORS`), the chord through (e^ε_anchor, δ_anchor) and
    (e^bound(δ_r), δ_r).  The chord is sound because the privacy profile δ(γ) = sup_S P(S) − γQ(S)
    is a supremum of affine functions of γ = e^ε, hence convex, and lies below the chord of any
    two of its upper bounds; it makes the certificate continuous where the route switches (the
    Rényi route alone jumped from 3.84 at δ = 1e-12 to 4.34 just below, issue 45)."""
    best = bound(delta)
    if not (delta < anchor_delta and math.isfinite(anchor_epsilon)):
        return best
    for k in BRIDGE_FACTORS:
        low = delta / k
        far = bound(low)
        if not math.isfinite(far):
            continue
        t = (anchor_delta - delta) / (anchor_delta - low)  # in (0, 1): where δ sits between the anchors
        if t >= 1.0:  # δ far below the anchor: the chord is bound(δ/k) ≥ bound(δ)
            continue
        best = min(best, float(np.logaddexp(math.log1p(-t) + anchor_epsilon, math.log(t) + far)))
    return best


def sampled_gaussian_rdp(noise_multiplier: float, sample_rate: float, order: float) -> float:
    """Rényi divergence of order α between the replace-one pair of one Poisson-sampled Gaussian
    step: (1 − q)N(0, z²) + qN(+1, z²) against (1 − q)N(0, z²) + qN(−1, z²) (records ±C, in units
    of C; the pair is symmetric, so one direction is the worst).  Integrated in log space on a
    grid wide enough for the order's tilt, so it stays exact where δ is far below 1e-15.

    >>> round(sampled_gaussian_rdp(2.0, 1.0, 3.0), 6)   # no sampling: αΔ²/(2σ²) with Δ = 2, σ = 2
    1.5
    """
    z, q, a = float(noise_multiplier), float(sample_rate), float(order)
    return _rdp_step(z, q, a)


#: the Rényi route's grid: at most this many points per integral, spaced at most σ/RDP_POINTS_PER_SD
#: (the trapezoid rule on a Gaussian of width σ errs by about e^(−2π²k²) at σ/k: nothing at k = 8)
RDP_MAX_POINTS = 100_001
RDP_POINTS_PER_SD = 8.0


def rdp_points(z: float, a: float) -> int:
    """Points of one order's integral (:func:`sampled_gaussian_rdp`); the accountant's cost is counted in them."""
    reach = 2.0 * a + 1.0 + 40.0 * z
    return 2 * int(min((RDP_MAX_POINTS - 1) // 2, max(2_000, RDP_POINTS_PER_SD * reach / min(z, 1.0)))) + 1


# pure: an accountant's result from its arguments (dp-accounting's, at this code's version)
@functools.lru_cache(maxsize=8192)
def _rdp_step(z: float, q: float, a: float) -> float:
    if q >= 1.0:  # no sampling: two Gaussians 2 apart, D_α = αΔ²/(2σ²) with Δ = 2, σ = z
        return 2.0 * a / z**2
    # the integrand p^α q^(1−α) is a Gaussian in x tilted by at most α·2x/z² (its log-ratio's
    # slope): centre within ±(2α/z² + 1)·z² of 0, width z
    reach = 2.0 * a + 1.0 + 40.0 * z
    x = np.linspace(-reach, reach, rdp_points(z, a))
    if x[1] - x[0] > z / 2:
        # next to no noise (z below ~1e-4): the grid no longer resolves the integrand's peak and
        # would miss part of it; the unsampled pair N(+1, z²), N(−1, z²) bounds the sampled one
        # from above (data processing), so it is used instead: αΔ²/(2z²) with Δ = 2 (∞ past floats)
        with np.errstate(over="ignore", divide="ignore"):
            return float(np.float64(2.0 * a) / np.float64(z) / np.float64(z))
    log_phi = -0.5 * (x / z) ** 2
    lq, l1q = math.log(q), math.log1p(-q)
    log_p = np.logaddexp(l1q + log_phi, lq - 0.5 * ((x - 1.0) / z) ** 2)
    log_q = np.logaddexp(l1q + log_phi, lq - 0.5 * ((x + 1.0) / z) ** 2)
    norm = -0.5 * math.log(2 * math.pi) - math.log(z) + math.log(x[1] - x[0])  # density × dx
    log_integral = float(logsumexp(a * log_p + (1.0 - a) * log_q)) + norm
    if not math.isfinite(log_integral):  # never read as 0 (max(0, nan) is 0): no bound, so none claimed
        return math.inf
    return max(0.0, log_integral / (a - 1.0))


def _conversion(a: float, delta: float) -> float:
    """The Rényi-to-(ε, δ) conversion's cost at order α: log((α − 1)/α) − (log δ + log α)/(α − 1)."""
    return math.log((a - 1.0) / a) - (math.log(delta) + math.log(a)) / (a - 1.0)


#: the orders the Rényi route may reach: its grid, the refinement below its first order, above its last
RDP_ORDER_RANGE = (1.0 + (RDP_ORDERS[0] - 1.0) / 8, 2.0 * RDP_ORDERS[-1])


# pure: an accountant's result from its arguments (dp-accounting's, at this code's version)
@functools.lru_cache(maxsize=512)
def rdp_conversion_floor(delta: float) -> float:
    """A lower bound on what :func:`sampled_gaussian_epsilon_rdp` can return at δ whatever the
    noise (its T·D_α ≥ 0): the conversion's least cost over :data:`RDP_ORDER_RANGE`, on 4,000
    log-spaced orders, less 0.1 % (far more than the grid can miss of a smooth minimum).  When
    another bound is already below it the Rényi integrals need not run: Bassily et al. at
    ε = 1e-4, δ = 1e-100 calibrated for 36 s on integrals that could not win."""
    orders = np.geomspace(*RDP_ORDER_RANGE, 4000)
    costs = np.log((orders - 1.0) / orders) - (math.log(delta) + np.log(orders)) / (orders - 1.0)
    low = float(np.min(costs))
    return low - 1e-3 * abs(low)


def sampled_gaussian_epsilon_rdp(noise_multiplier: float, sample_rate: float, steps: int,
                                 delta: float) -> float:
    """ε at δ of T Poisson-sampled Gaussian steps (replace-one) by Rényi DP: T·D_α composed,
    converted by ε = T·D_α + log((α − 1)/α) − (log δ + log α)/(α − 1) (Balle et al. 2020,
    Thm 21; Canonne, Kamath & Steinke 2020, Prop. 12), the best order of :data:`RDP_ORDERS`
    refined to the best real order between its neighbours, rounded up.  A second, independent route to :func:`sampled_gaussian_epsilon`, looser by
    a few percent; unlike the PLD it stays exact at any δ."""
    if noise_multiplier <= 0:
        return math.inf
    z, q = float(noise_multiplier), float(sample_rate)

    def eps_at(a: float) -> float:
        return steps * _rdp_step(z, q, a) + _conversion(a, delta)

    found = [eps_at(a) for a in RDP_ORDERS]
    k = int(np.argmin(found))
    best = found[k]
    if not math.isfinite(best):  # next to no noise: no order bounds it (nothing to refine)
        return math.inf
    # every order α > 1 gives a bound: between the best grid order's neighbours, the best real α
    # (ε(α) is smooth there; the grid alone was up to 22 % above it, issue 45)
    lo = RDP_ORDERS[k - 1] if k > 0 else RDP_ORDER_RANGE[0]
    hi = RDP_ORDERS[k + 1] if k + 1 < len(RDP_ORDERS) else RDP_ORDER_RANGE[1]
    res = minimize_scalar(eps_at, bounds=(lo, hi), method="bounded", options={"xatol": 1e-4 * lo})
    if math.isfinite(res.fun):
        best = min(best, float(res.fun))
    return max(0.0, best) * (1 + 1e-9)


def pld_span(noise_multiplier: float, sample_rate: float, steps: int) -> float | None:
    """How far the composed privacy loss of T steps spreads, ``T·|m| + 20·√T·s`` (m, s: mean and
    std of one replace-one step's loss, read off a coarse one-step PLD); ``None``: no mass to read."""
    one = sampled_gaussian_pld(noise_multiplier, min(sample_rate, 1.0), 1e-2)
    pmf = one._pmf_remove
    probs = np.asarray(getattr(pmf, "_probs", []), dtype=float)
    if probs.size == 0 or probs.sum() <= 0:
        return None
    losses = (pmf._lower_loss + np.arange(probs.size)) * 1e-2
    probs = probs / probs.sum()
    mean = float(losses @ probs)
    std = float(np.sqrt(((losses - mean) ** 2) @ probs))
    return steps * abs(mean) + 20.0 * math.sqrt(steps) * std


def pld_grid(noise_multiplier: float, sample_rate: float, steps: int) -> float | None:
    """A PLD grid step that keeps the composed distribution below ~2e6 points of :func:`pld_span`.
    A coarser grid is still an upper bound; when even 0.5 is too fine, ``None`` (use the bound)."""
    span = pld_span(noise_multiplier, sample_rate, steps)
    if span is None:
        return PLD_DISCRETIZATION
    grid = max(PLD_DISCRETIZATION, span / 2e6)
    return None if grid > 0.5 else grid


# pure: an accountant's result from its arguments (dp-accounting's, at this code's version)
@functools.lru_cache(maxsize=512)
def calibrate_sampled_gaussian(epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    """Smallest noise multiplier z (to 1e-4) whose certified ε is ≤ the target.

    Brent's method on ε(z) − target over a bracket found by doubling, all on one
    PLD grid (the coarsest the bracket needs, so an upper bound everywhere);
    then z is nudged up until :func:`sampled_gaussian_epsilon` itself confirms
    the target (never overshoot).  Brent needs about 6 PLD evaluations where
    bisection to the same tolerance needs about 14.
    """
    if delta < PLD_MIN_DELTA and epsilon <= rdp_conversion_floor(delta):
        # no Rényi order can certify so small an ε at so small a δ: start from the unsampled
        # bound's closed form (μ = 2√T/z, the analytic Gaussian), less only if the bridge allows
        z = _nudged(2.0 * math.sqrt(steps) * sigma_ag(epsilon, delta), epsilon, delta, sample_rate, steps)
        return _on_the_certifier(z, epsilon, delta, sample_rate, steps)
    if sample_rate >= 1:  # no sampling: the closed form is the certifier itself
        return _nudged(2.0 * math.sqrt(steps) * sigma_ag(epsilon, delta), epsilon, delta, sample_rate, steps)
    # Our own bracket: tiny z makes PLD slow, so never evaluate far below the root.
    lo = hi = 1.0
    if sampled_gaussian_epsilon(hi, sample_rate, steps, delta) > epsilon:
        while sampled_gaussian_epsilon(hi, sample_rate, steps, delta) > epsilon:
            lo, hi = hi, hi * 2.0
    else:
        while sampled_gaussian_epsilon(lo, sample_rate, steps, delta) <= epsilon:
            lo, hi = lo / 2.0, lo
            if lo < PLD_MIN_MULTIPLIER:
                return hi
    if delta < PLD_MIN_DELTA:  # the RDP route: solve on the certifier itself
        return _solved_on_the_certifier(lo, hi, epsilon, delta, sample_rate, steps)
    grid = pld_grid(lo, sample_rate, steps)  # the coarsest grid any bracketed z needs
    if grid is None:
        # So little noise suffices that the PLD grid cannot resolve it: calibrate on the
        # unsampled bound instead (conservative: it gives up the amplification by sampling).
        return 2.0 * math.sqrt(steps) * sigma_ag(epsilon, delta)

    @functools.cache
    def excess(log_z):  # log ε(z) − log target: nearly linear in log z, so Brent converges fast
        eps = _sampled_gaussian_pld_epsilon(math.exp(log_z), sample_rate, steps, delta, grid)
        return math.log(eps) - math.log(epsilon) if eps > 0 else -math.inf

    lo, hi = math.log(lo), math.log(hi)
    closed = 2.0 * math.sqrt(steps) * sigma_ag(epsilon, delta)
    while excess(hi) > 0:  # the coarser grid may need a little more noise
        if math.exp(hi) > closed * (1.0 + CALIBRATION_SLACK):  # ... but never more than the unsampled bound's
            return _on_the_certifier(math.exp(hi), epsilon, delta, sample_rate, steps)
        lo, hi = hi, hi + math.log(1.5)
    tol = 1e-4
    if excess(lo) <= 0:
        z = math.exp(lo)
    else:
        z = math.exp(brentq(excess, lo, hi, xtol=tol / 2, rtol=1e-6))
    z += tol
    while sampled_gaussian_epsilon(z, sample_rate, steps, delta) > epsilon:
        z *= 1.001
    return _on_the_certifier(z, epsilon, delta, sample_rate, steps)


def _on_the_certifier(z: float, epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    """``z`` (which certifies ``epsilon``), or less noise: the unsampled composition's closed form
    2√T·σ_AG(ε, δ) when ``z`` is more than :data:`CALIBRATION_SLACK` above it (the certifier is
    never above that bound), then Brent's method on :func:`sampled_gaussian_epsilon` itself when
    what remains certifies more than :data:`CALIBRATION_SLACK` below the target.  The one-grid
    search cannot resolve a target of a few grid steps, nor one its grid makes costlier than the
    unsampled bound."""
    closed = 2.0 * math.sqrt(steps) * sigma_ag(epsilon, delta)
    if z > closed * (1.0 + CALIBRATION_SLACK):
        z = _nudged(closed, epsilon, delta, sample_rate, steps)
    if sampled_gaussian_epsilon(z, sample_rate, steps, delta) >= (1.0 - CALIBRATION_SLACK) * epsilon:
        return z
    lo = z / 2.0
    while sampled_gaussian_epsilon(lo, sample_rate, steps, delta) <= epsilon:
        if lo < PLD_MIN_MULTIPLIER:
            return z
        lo /= 2.0

    return min(z, _solved_on_the_certifier(lo, z, epsilon, delta, sample_rate, steps))


def _solved_on_the_certifier(lo: float, hi: float, epsilon: float, delta: float, sample_rate: float,
                             steps: int) -> float:
    """Brent's method on log ε(z) − log target over [lo, hi] (ε(lo) > target ≥ ε(hi)), on
    :func:`sampled_gaussian_epsilon` itself, then :func:`_nudged` until it confirms the target."""
    def excess(log_z):
        eps = sampled_gaussian_epsilon(math.exp(log_z), sample_rate, steps, delta)
        return math.log(eps) - math.log(epsilon) if eps > 0 else -math.inf

    found = math.exp(brentq(excess, math.log(lo), math.log(hi), xtol=1e-6, rtol=1e-6))
    return _nudged(found, epsilon, delta, sample_rate, steps)


def _nudged(z: float, epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    """``z`` raised by 1e-6, then by steps that double, until :func:`sampled_gaussian_epsilon`
    confirms the target (a few evaluations even where the certifier steps with its grid)."""
    step = 1e-6
    while sampled_gaussian_epsilon(z, sample_rate, steps, delta) > epsilon:
        z *= 1.0 + step
        step *= 2.0
    return z


#: a stored calibration that certifies with this share less noise is discarded as over-noised
TABLE_SLACK = 0.01
#: calibrations kept on disk: at most this many bytes of ``calibration-*.json`` in a folder (an
#: entry is about 300 bytes), checked every 200 calibrations written
TABLE_FOLDER_BYTES = 16 * 2**20


class CalibrationTable:
    """:func:`calibrate_sampled_gaussian`, remembered in memory and, given ``folder``, on
    disk (one small JSON file per event, shared by processes and kept between sessions), on the
    package's cache layer (:mod:`dpcore.cache`: single flight across threads and processes).

    A calibration costs 5–30 PLD constructions (0.1–0.8 s); checking one costs two PLD
    evaluations (0.02–0.09 s).  Where the folder has no answer, the file shipped with the package
    for the event (:attr:`shipped`: Compare's classroom preset's calibrations) is read instead.
    So every answer read back is **re-certified** before it is used: if
    :func:`sampled_gaussian_epsilon` at the stored multiplier exceeds the target (a
    corrupted, edited or stale file), the entry is discarded and calibrated again, so a
    table can never under-noise; nor over-noise: an entry whose multiplier, 1 % smaller,
    still certifies is discarded too (one more PLD evaluation a read).  Entries are keyed by
    the event (ε, δ, q, T, as exact floats), the versions of dpcore and dp-accounting and this
    module's code, so a changed accountant never reads old answers and a hit returns exactly
    what a fresh calibration would.
    """

    def __init__(self, folder=None, shipped: Callable[[str], Path | None] | None = None):
        self.folder = None if folder is None else Path(folder)
        #: ``shipped(key)``: the file shipped with the package that holds the entry ``key`` (listed in
        #: the data folder's manifest), or ``None``: read when this table's folder has no answer, and
        #: re-certified like any stored entry (the reference store gives it: this layer knows no
        #: data folder)
        self.shipped = shipped
        #: the keys asked of this table in this process (what ``prepare --ship`` ships)
        self.asked: set[str] = set()
        self._memo = Memo(size=4096)
        self.disk = DiskCache(self.folder, prefix="calibration-", max_file_bytes=2**16,
                              folder_bytes=TABLE_FOLDER_BYTES, prune_every=200, what="stored calibration", log=__name__)

    def __reduce__(self):
        return (CalibrationTable, (self.folder, self.shipped))

    def __repr__(self) -> str:
        return f"CalibrationTable(folder={self.folder!r}, held={len(self._memo)})"

    @staticmethod
    def _key(epsilon: float, delta: float, sample_rate: float, steps: int) -> str:
        h = hashlib.sha256(_TABLE_FINGERPRINT)
        h.update(repr(_event_key(epsilon, delta, sample_rate, steps)).encode())
        return h.hexdigest()[:24]

    def path(self, epsilon: float, delta: float, sample_rate: float, steps: int) -> Path | None:
        """The file that holds this event's calibration (``None`` without a folder)."""
        return self.disk.path(self._key(epsilon, delta, sample_rate, steps))

    def sampled_gaussian(self, epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
        """The noise multiplier :func:`calibrate_sampled_gaussian` gives, from the table when
        it holds a re-certified answer."""
        event = _event_key(epsilon, delta, sample_rate, steps)
        key = self._key(epsilon, delta, sample_rate, steps)
        self.asked.add(key)
        return self._memo.get(event, lambda: self.disk.get_or_make(
            key, lambda: calibrate_sampled_gaussian(epsilon, delta, sample_rate, steps),
            check=lambda rec: _check_calibration(rec, epsilon, delta, sample_rate, steps),
            encode=lambda z: {"event": list(event), "noise_multiplier": z, "epsilon": epsilon, "delta": delta,
                              "sample_rate": sample_rate, "steps": int(steps)},
            shipped=None if self.shipped is None else self.shipped(key)))


def _check_calibration(rec, epsilon, delta, sample_rate, steps) -> float:
    """The stored multiplier, if it re-certifies the event with no more than TABLE_SLACK to spare."""
    if not isinstance(rec, dict):
        raise ValueError("not a JSON object")
    if rec.get("event") != list(_event_key(epsilon, delta, sample_rate, steps)):
        raise ValueError("written for another event")
    z = float(rec["noise_multiplier"])
    if not (math.isfinite(z) and z > 0):
        raise ValueError(f"noise multiplier {z!r}")
    certified = sampled_gaussian_epsilon(z, sample_rate, steps, delta)
    if not certified <= epsilon:
        raise ValueError(f"z = {z!r} certifies ε = {certified!r} > {epsilon!r}")
    # two-sided: a fresh calibration is within 0.1 % of the least noise that certifies,
    # so an entry that still certifies with TABLE_SLACK less noise would over-noise
    if sampled_gaussian_epsilon(z * (1.0 - TABLE_SLACK), sample_rate, steps, delta) <= epsilon:
        raise ValueError(f"z = {z!r} is more noise than the target needs ({1 - TABLE_SLACK:g}·z certifies it too)")
    return z


def _event_key(epsilon, delta, sample_rate, steps) -> tuple:
    return (float(epsilon).hex(), float(delta).hex(), float(sample_rate).hex(), int(steps))


_LOG = logging.getLogger(__name__)
#: what a stored calibration depends on besides its event: a change to any of these
#: (this module's source included) starts a new table
_TABLE_FINGERPRINT = (f"{__version__} dp-accounting {_version('dp-accounting')} ".encode()
                      + Path(__file__).read_bytes())


def rr_keep_probability(label_epsilon: float) -> float:
    """Binary randomized response keeps the label with probability e^ε/(1 + e^ε)."""
    return 1.0 / (1.0 + math.exp(-label_epsilon))


def rr_flip_probability(label_epsilon: float) -> float:
    """… and flips it with probability ρ = 1/(1 + e^ε)."""
    return 1.0 / (1.0 + math.exp(label_epsilon))


def feature_release_epsilon(sigmas, delta: float) -> float:
    """ε of the feature releases alone (neighbours that keep the label): μ = √Σ(2/σ_j)²."""
    sigmas = np.atleast_1d(np.asarray(sigmas, dtype=float))
    if np.any(sigmas <= 0):
        return math.inf
    return gdp_epsilon(float(np.sqrt(np.sum((2.0 / sigmas) ** 2))), delta)
