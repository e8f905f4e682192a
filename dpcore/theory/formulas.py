"""The published formulas, each written once.

Pure functions of numbers (no data, no models): a noise scale, a privacy
parameter, a rate.  The mechanisms' *published* calibrations call them with the
paper's constant ``c``; the bounds catalog's rows call them for the tables
(where a table prints only the order, with its constant set to 1).  A formula
that is not a published one (a certified calibration, an accountant) does not
belong here: those live in :mod:`dpcore.privacy.core` and :mod:`dpcore.privacy.accounting`.

Notation as in SPEC §1: n records, T steps, G the Lipschitz bound of the loss
(or the clip norm), λ the L2 strength, (ε, δ) the target.
"""

from __future__ import annotations

import math

from ..exceptions import ParameterError

__all__ = [
    "noisy_gd_variance",
    "noisy_gd_risk",
    "kang_input_variance",
    "kifer_sigma",
    "chaudhuri_output_rate",
    "chaudhuri_objective",
    "chaudhuri_objective_rate",
    "fukuchi_sigma_u",
    "fukuchi_kappa_lower",
    "fukuchi_sigma_b2",
    "fukuchi_local_epsilon",
    "fukuchi_lemma2_risk",
]


def noisy_gd_variance(G: float, T: int, n: float, epsilon: float, delta: float, c: float = 1.0) -> float:
    """``σ² = c·G²·T·log(1/δ)/(n²ε²)``: the per-coordinate variance of noisy GD's mean gradient.

    Wang, Ye & Xu 2017 (DP-GD); seed 004 Thm 1 for WD-DP (n the pooled size) and,
    with ``n = m·n_(1)``, its reading of Jayaraman et al.'s averaging; the seed
    tables' order-only rows with c = 1.
    """
    return c * G**2 * T * math.log(1 / delta) / (n**2 * epsilon**2)


def noisy_gd_risk(p: float, G: float, n: float, epsilon: float, delta: float, log_power: int = 1) -> float:
    """``p·G²·log(1/δ)·log^k(n)/(n²ε²)``: the excess-risk order of noisy GD on n records.

    Seed 001 prints Wang et al. 2017's with k = 1 and seed 004 (Remark 1) reads it
    with k = 2; seed 004's WD-DP (Thms 2–3) and seed 002's DBDP rows have k = 1;
    Jayaraman et al.'s averaging is k = 2 at n = m·n_(1).  Order only: constant 1.
    """
    return p * G**2 * math.log(1 / delta) * math.log(n) ** log_power / (n**2 * epsilon**2)


def kang_input_variance(G: float, T: int, n: float, epsilon: float, delta: float, lam_term: float = 1.0,
                        c: float = 1.0) -> float:
    """Seed 001's input perturbation: ``σ² = c·G²·T·log(1/δ)/(n(n−1)·lam_term·ε²)``.

    ``lam_term`` is √λ under strong convexity (Thm 1) and 1 for a PL loss (Thm 3).
    """
    return c * G**2 * T * math.log(1 / delta) / (n * (n - 1) * lam_term * epsilon**2)


def kifer_sigma(epsilon: float, delta: float, zeta: float) -> float:
    """Kifer, Smith & Thakurta 2012's Gaussian linear term: ``σ = ζ√(8 log(2/δ) + 4ε)/ε``.

    ζ bounds how far one record moves the loss gradient; Kifer et al. prove it for
    add/remove neighbours (under replace-one pass 2ζ).  Seed 001's table prints
    ``σ² = O(ζ²(ε + log(4/δ²))/ε²)``, which is σ²/4; Fukuchi et al.'s σ_b is σ at δ/2.
    """
    return zeta * math.sqrt(8.0 * math.log(2.0 / delta) + 4.0 * epsilon) / epsilon


def chaudhuri_output_rate(*, n: float, lam: float, epsilon: float, G: float = 1.0) -> float:
    """Rate γ of the output-perturbation density ``v(b) ∝ e^{−γ‖b‖}``: ``γ = nλε/(2G)``.

    The minimiser of a λ-strongly convex regularised ERM moves by at most
    ``2G/(nλ)`` when one record is replaced; CMS 2011 state it for ``G = 1``.

    References: Chaudhuri, Monteleoni & Sarwate 2011, Alg. 1 (β = nΛε/2), Cor. 8.
    """
    return n * lam * epsilon / (2.0 * G)


def chaudhuri_objective(epsilon: float, n: float, lam: float, c: float = 0.25) -> tuple[float, float]:
    """(ε', Δ) of CMS 2011 Alg. 2: the budget left for the noise and the extra L2 term.

    ``ε' = ε − log(1 + 2c/(nλ) + c²/(n²λ²)) = ε − 2 log(1 + c/(nλ))``; if that is
    ≤ 0, ``Δ = c/(n(e^{ε/4} − 1)) − λ`` and ``ε' = ε/2``; otherwise Δ = 0.  ``c``
    bounds ℓ'' (seed 001 writes it L; 1/4 for the logistic loss).

    References: Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2.
    """
    eps_p = epsilon - 2.0 * math.log1p(c / (n * lam))
    if eps_p > 0:
        return eps_p, 0.0
    return epsilon / 2.0, c / (n * math.expm1(epsilon / 4.0)) - lam


def chaudhuri_objective_rate(*, n: float, lam: float, epsilon: float, c: float) -> float:
    """Rate γ = ε'/2 of objective perturbation's density (ε' from :func:`chaudhuri_objective`)."""
    return chaudhuri_objective(epsilon, n, lam, c)[0] / 2.0


def fukuchi_sigma_u(n: float, d: float, lam: float, epsilon: float, gamma: float) -> float:
    """σ_u of Fukuchi, Tran & Sakuma 2017, Cor. 2: the lowest value Alg. 1 allows.

    ``λ`` is Fukuchi's smoothness bound and ``d`` the parameter dimension.  Needs
    ``n > 4 log(4/γ)`` (else a :class:`ParameterError`).  Cor. 2's proof writes
    √(2dλ) where its statement has √(2d)λ; the statement is used.
    """
    a = math.sqrt(math.log(2 / gamma) / n)
    b = 2 * math.sqrt(math.log(4 / gamma) / n)
    if b >= 1:
        raise ParameterError(f"Fukuchi's Cor. 2 needs n > 4 log(4/γ) = {4 * math.log(4 / gamma):.4g}; "
                             f"got n = {n:g}: use more records or a larger γ")
    return (math.sqrt(2 * d) * lam * a
            + math.sqrt(2 * d * lam**2 * a * a + (2 * lam / epsilon) * (1 - b))) / (1 - b)


def fukuchi_kappa_lower(n: float, sigma_u: float, lam: float, d: float, gamma: float) -> float:
    """Lemma 1's lower bound on Δ_0 (w.p. ≥ 1 − γ): the quantity Cor. 2 makes ≥ 2λ/ε."""
    a = math.sqrt(math.log(2 / gamma) / n)
    b = 2 * math.sqrt(math.log(4 / gamma) / n)
    return sigma_u**2 * (1 - b) - 2 * math.sqrt(2 * d) * lam * sigma_u * a


def fukuchi_sigma_b2(*, G: float, epsilon: float, delta: float) -> float:
    """Variance of the linear-term noise: ``σ_b² = ζ²(8 log(2/δ') + 4ε)/ε²`` with ``δ' = δ/2``
    (Kifer's variance at δ/2, ζ = G).

    References: Fukuchi, Tran & Sakuma 2017, Alg. 1 and §3.3 (after Thm 1).
    """
    return kifer_sigma(epsilon, delta / 2.0, G) ** 2


def fukuchi_local_epsilon(*, d: float, G: float, lam: float, n: float, epsilon: float,
                          delta: float, gamma: float) -> float:
    """Corollary 1's local-DP level ``2c√n(λ/σ_u + ζ/σ_b)`` with ``c = √(2 ln(1.25/δ))`` (its infimum).

    The guarantee is ``(·, 2δ)``-local DP.

    References: Fukuchi, Tran & Sakuma 2017, Cor. 1 (with σ_u from Cor. 2, σ_b from Alg. 1).
    """
    su = fukuchi_sigma_u(n, d, lam, epsilon, gamma)
    sb = kifer_sigma(epsilon, delta / 2.0, G)
    c = math.sqrt(2.0 * math.log(1.25 / delta))
    return 2.0 * c * math.sqrt(n) * (lam / su + G / sb)


def fukuchi_lemma2_risk(*, d: float, G: float, lam: float, n: float, epsilon: float, delta: float,
                        Delta: float, w_norm: float, gamma: float, beta: float) -> float:
    """Lemma 2's excess empirical risk, term by term as stated (holds w.p. ≥ 1 − γ − β).

    ``lam`` is Fukuchi's smoothness λ, ``Delta`` the regulariser (must exceed
    2λ/ε, else a :class:`ParameterError`), ``w_norm`` = ‖ŵ‖₂; σ_u is Cor. 2's
    smallest value at this γ.  The statement prints its last term twice; both
    copies are kept.

    References: Fukuchi, Tran & Sakuma 2017, Lemma 2.
    """
    if not Delta > 2.0 * lam / epsilon:
        raise ParameterError(f"Fukuchi's Lemma 2 needs Δ > 2λ/ε = {2 * lam / epsilon:.4g}; got Δ = {Delta:.4g}")
    su = fukuchi_sigma_u(n, d, lam, epsilon, gamma)
    w2 = w_norm**2
    log = math.log
    t1 = 4.0 * d * G**2 * (8.0 * log(4.0 / delta) + 4.0 * epsilon) * log(1.0 / beta) / (n * epsilon**2 * Delta)
    t2 = Delta / (2.0 * n) * w2
    t3 = (su**2 - 2.0 * lam / epsilon) / (2.0 * n) * w2
    t4 = (su**2 * math.sqrt(log(4.0 / gamma)) + su * lam * math.sqrt(2.0 * d * log(2.0 / gamma))) / (
        n * math.sqrt(n)) * w2
    return t1 + t2 + t3 + 2.0 * t4
