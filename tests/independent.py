"""Second routes to a privacy guarantee, written here from the definitions, independently of
dpcore.privacy.core / dpcore.privacy.accounting and of dp-accounting.  The verification suite checks every
certified ε against these.

* :func:`gdp_delta` / :func:`gdp_epsilon` – μ-Gaussian DP in closed form (Dong, Roth & Su 2019,
  Cor. 2.13), evaluated in log space;
* :func:`gaussian_rr_epsilon` – a Gaussian release composed with binary randomized response:
  the privacy loss is the sum of N(μ²/2, μ²) and ±ε_y, so δ(ε) is a two-term mixture of
  Gaussian δ's, exact;
* :func:`sampled_gaussian_epsilon_bracket` – T Poisson-sampled Gaussians under replace-one by a
  privacy-loss distribution built here on a grid (the likelihood ratio of
  (1−q)N(0, z²) + qN(1, z²) against (1−q)N(0, z²) + qN(−1, z²) is monotone, so rounding each
  cell's loss up or down gives an upper and a lower bound), composed by FFT.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.signal import fftconvolve
from scipy.stats import norm


def gdp_delta(mu: float, eps: float) -> float:
    """δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), any real ε (negative too)."""
    return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps + norm.logcdf(-eps / mu - mu / 2)))


def _solve(delta_of_eps, delta: float) -> float:
    if delta_of_eps(0.0) <= delta:
        return 0.0
    hi = 1.0
    while delta_of_eps(hi) > delta:
        hi *= 2.0
    return brentq(lambda e: delta_of_eps(e) - delta, 0.0, hi, xtol=1e-13, rtol=1e-13)


def gdp_epsilon(mu: float, delta: float) -> float:
    return math.inf if math.isinf(mu) else _solve(lambda e: gdp_delta(mu, e), delta)


def gaussian_rr_epsilon(mu: float, eps_y: float, delta: float) -> float:
    """ε of a μ-GDP release composed with randomized response at ε_y (replace-one)."""
    p = 1.0 / (1.0 + math.exp(-eps_y))  # the label is kept: loss +ε_y
    return _solve(lambda e: p * gdp_delta(mu, e - eps_y) + (1 - p) * gdp_delta(mu, e + eps_y), delta)


def _one_step(z: float, q: float, h: float, upper: bool) -> tuple[np.ndarray, int, float]:
    """One step's privacy-loss PMF on the grid h·k: (probabilities, offset k_min, mass at +∞)."""
    K = 1.0 + 12.0 * z
    edges = np.linspace(-K, K, 400_001)
    mass = (1 - q) * np.diff(norm.cdf(edges / z)) + q * np.diff(norm.cdf((edges - 1) / z))

    def loss(x):
        lp = np.logaddexp(math.log1p(-q) + norm.logpdf(x / z), math.log(q) + norm.logpdf((x - 1) / z))
        lq = np.logaddexp(math.log1p(-q) + norm.logpdf(x / z), math.log(q) + norm.logpdf((x + 1) / z))
        return lp - lq

    cell = loss(edges[1:]) if upper else loss(edges[:-1])  # the loss increases in x
    k = np.ceil(cell / h).astype(np.int64) if upper else np.floor(cell / h).astype(np.int64)
    outside = 1.0 - mass.sum()  # both tails beyond ±K
    k0 = int(k.min())
    pmf = np.bincount(k - k0, weights=mass)
    return pmf, k0, (outside if upper else 0.0)


def _compose(pmf: np.ndarray, k0: int, inf_mass: float, T: int):
    out, o0, o_inf = np.array([1.0]), 0, 0.0
    base, b0, b_inf = pmf, k0, inf_mass
    while T:
        if T & 1:
            o_inf = 1 - (1 - o_inf) * (1 - b_inf)
            out, o0 = np.clip(fftconvolve(out, base), 0, None), o0 + b0
        T >>= 1
        if T:
            b_inf = 1 - (1 - b_inf) ** 2
            base, b0 = np.clip(fftconvolve(base, base), 0, None), 2 * b0
        keep = out > 1e-300
        lo, hi = np.argmax(keep), len(keep) - np.argmax(keep[::-1])
        out, o0 = out[lo:hi], o0 + lo
    return out, o0, o_inf


def sampled_gaussian_epsilon_bracket(z: float, q: float, T: int, delta: float,
                                     h: float = 2e-3) -> tuple[float, float]:
    """(lower, upper) bounds on ε of T Poisson-sampled Gaussian steps (noise multiplier z, rate q)."""
    out = []
    for upper in (False, True):
        pmf, k0, inf_mass = _one_step(z, q, h, upper)
        comp, c0, c_inf = _compose(pmf, k0, inf_mass, T)
        losses = (c0 + np.arange(comp.size)) * h

        def d_of(e):
            return c_inf + float(np.sum(comp * np.clip(1 - np.exp(np.minimum(e - losses, 700)), 0, None)))

        out.append(_solve(d_of, delta))
    return out[0], out[1]


def rr_delta(eps_rr: float, eps: float) -> float:
    """δ(ε), any real ε, of binary randomized response at ε_rr: P = (p, 1 − p) against
    Q = (1 − p, p), p = e^ε_rr/(1 + e^ε_rr); symmetric, so one direction is both."""
    p = 1.0 / (1.0 + math.exp(-eps_rr))
    g = math.exp(eps)
    return max(0.0, p - g * (1 - p)) + max(0.0, (1 - p) - g * p)


def gdp_then_worst_of_epsilon(mu: float, profiles, delta: float, nodes: int = 4001) -> float:
    """ε of a μ-GDP release followed by one of several releases chosen from the data, through
    the pair whose profile is the pointwise maximum of theirs (``profiles``: functions ε ↦ δ,
    any real ε).  Composition with a product pair: δ(ε) = E[h*(ε − L)], L ~ N(μ²/2, μ²) the
    Gaussian's privacy loss, integrated here on a fine grid of ±10 standard deviations."""
    z = np.linspace(-10.0, 10.0, nodes)
    w = norm.pdf(z)
    w /= w.sum()
    losses = mu * mu / 2 + mu * z

    def d_of(e):
        return float(sum(wi * max(h(e - li) for h in profiles) for wi, li in zip(w, losses)))

    return _solve(d_of, delta)


def glm_objective_delta(eps, mu, shift, rhos=np.linspace(0.0, 1.0, 21)):
    """δ(ε) of the GLM objective-perturbation bound, by a second route written here: the loss is at
    most shift + μ(|U| + |V|), U, V standard normals of correlation ρ; |U| + |V| = max(|U + V|, |U − V|),
    two independent normals of variances 2 ± 2ρ, whose maximum has the CDF F(w) = (2Φ(w/s) − 1)(2Φ(w/d) − 1);
    δ = E[(1 − e^(ε − loss))₊] = ∫ μe^(ε − shift − μw)·(1 − F(w)) dw from w₀ (plus the head below shift),
    by scipy's adaptive quadrature, at the worst ρ of a grid of 21."""
    from scipy import integrate

    w0 = max((eps - shift) / mu, 0.0)
    head = -math.expm1(min(eps - shift, 0.0))
    worst = 0.0
    for rho in rhos:
        s, d = math.sqrt(2 + 2 * rho), math.sqrt(max(2 - 2 * rho, 0.0))

        def tail(w, s=s, d=d):
            ps = 2 * norm.sf(w / s)
            pd = 2 * norm.sf(w / d) if d > 0 else 0.0
            return ps + pd - ps * pd

        val, _ = integrate.quad(lambda w, tail=tail: mu * math.exp(eps - shift - mu * w) * tail(w), w0, w0 + 60,
                                limit=200, epsabs=1e-14)
        worst = max(worst, head + val)
    return worst


def glm_objective_epsilon(sigma, delta, zeta, lam_h, big_delta):
    mu = zeta / sigma
    shift = math.log1p(lam_h / big_delta) + 2 * mu * mu
    if glm_objective_delta(shift, mu, shift) <= delta:
        return shift
    return brentq(lambda e: glm_objective_delta(e, mu, shift) - delta, shift, shift + 40 * mu, xtol=1e-12)


def glm_objective_sigma(epsilon, delta, zeta, lam_h, big_delta):
    """The σ at which :func:`glm_objective_delta` at ``epsilon`` equals ``delta`` (Brent on log σ)."""
    def excess(log_sigma):
        mu = zeta / math.exp(log_sigma)
        shift = math.log1p(lam_h / big_delta) + 2 * mu * mu
        return math.log(max(glm_objective_delta(epsilon, mu, shift), 1e-300)) - math.log(delta)

    return math.exp(brentq(excess, math.log(zeta * 0.1), math.log(zeta * 1e4), xtol=1e-10))


def logistic_objective_epsilon(scale, k, grid=400_001):
    """Pure ε of Chaudhuri et al.'s objective perturbation of logistic regression (replace-one),
    by brute force: the privacy loss at θ is at most ‖g‖/s + log(1 + f''(m)/k) with
    ‖g‖ ≤ σ(−m) + σ(−m') ≤ σ(−m) + 1 and f''(m) = σ(m)σ(−m) (m the replaced record's margin, k the
    sum scaling's regularisation); its maximum over m on a fine grid of [−60, 60], refined by a
    bounded scalar search around the best point, and the limit m → −∞ (2/s)."""
    from scipy.optimize import minimize_scalar
    from scipy.special import expit

    def bound(m):
        return (1 + expit(-m)) / scale + math.log1p(expit(m) * expit(-m) / k)

    ms = np.linspace(-60.0, 60.0, grid)
    vals = (1 + expit(-ms)) / scale + np.log1p(expit(ms) * expit(-ms) / k)
    i = int(np.argmax(vals))
    lo, hi = ms[max(i - 1, 0)], ms[min(i + 1, grid - 1)]
    best = max(float(vals[i]), 2.0 / scale)
    if lo < hi:
        r = minimize_scalar(lambda m: -bound(m), bounds=(lo, hi), method="bounded", options={"xatol": 1e-14})
        best = max(best, -float(r.fun))
    return best


def logistic_objective_scale(epsilon, k):
    """The Gamma-norm scale at which :func:`logistic_objective_epsilon` equals ``epsilon`` (Brent)."""
    return brentq(lambda s: logistic_objective_epsilon(s, k) - epsilon, 2.0 / epsilon, 1e3 / epsilon, xtol=1e-13,
                  rtol=1e-12)
