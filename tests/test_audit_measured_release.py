"""The measured white-box audit of output and objective perturbation (dpcore.audit.measured_release): a
correct certificate is not refuted, planted calibration bugs are (each with words saying what is wrong), and
the estimator is sound against anisotropic noise where pooling every coordinate is not (the check of the
check)."""

from __future__ import annotations

import dataclasses
import doctest
import math

import numpy as np
import pytest
from scipy.stats import chi2

import dpcore.mechanisms.objective as objective
import dpcore.mechanisms.output as output
from dpcore.privacy.accounting import gdp_epsilon
from dpcore.audit import run_audit
from dpcore.audit.bounds import gdp_epsilon_lower, scale_upper
from dpcore.audit import measured_release
from dpcore.audit.measured_release import along_shift, release_bound
from dpcore.experiments.run import RunSpec

ALPHA = 0.05
REFUTED = ("claim not met", "refuted once, not confirmed")


def _cfg(mechanism, **kw):
    return RunSpec(**dict(dict(dataset="breast-cancer", model="logreg", mechanism=mechanism, epsilon=2.0, delta=1e-5),
                          **kw))


def _estimates(r) -> dict:
    return {e["name"]: e for e in r.estimates}


def _refuted(r) -> bool:
    """The certificate refuted, by this audit (and by its second one, or not: either is accepted)."""
    return "certified" in r.refuted or r.verdict in REFUTED


def _truth(r) -> float:
    """The pair's exact ε under the noise that ran: a Gaussian shift of the measured shift over σ (the shift
    is the same in every run: output's noiseless solutions, the opposite pair's −y·v in b)."""
    return gdp_epsilon(r.shift_check["measured"] / r.sigma, r.delta)


# -- a correct certificate ------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism, seed", [("output-gaussian", 11), ("output-gaussian", 12),
                                             ("objective-gaussian", 11), ("objective-gaussian", 12)])
def test_a_correct_certificate_is_not_refuted_and_the_bound_is_near_the_pairs_truth(mechanism, seed):
    """Certified ε = 2, 300 runs a side: routed to the measured audit (the wide pair for output perturbation,
    the opposite pair for objective perturbation), nothing found, the measured bound below the pair's truth
    and within the χ² bound's price of it (600 values at 0.6α: about 0.94× of μ)."""
    r = run_audit(_cfg(mechanism, seed=seed), trials=300, threat="white-box")
    est = _estimates(r)
    assert list(est) == ["direct", "measured", "noise-check"] and not est["noise-check"]["headline"]
    assert r.canary == ("wide-pair" if mechanism == "output-gaussian" else "opposite-pair")
    assert r.findings == () and not _refuted(r) and r.epsilon_lower_bound <= r.epsilon_certified
    sc = r.shift_check
    if mechanism == "output-gaussian":  # 0.71 of the declared Δ_T on Breast Cancer (λ = 10⁻³, T = 100)
        assert 0.65 * sc["declared"] <= sc["measured"] <= sc["declared"]
    else:  # the opposite pair moves b by exactly ζ = 1, half the declared 2ζ
        assert sc["measured"] == pytest.approx(1.0, rel=1e-6) and sc["declared"] == 2.0
    truth = _truth(r)
    assert 0.85 * truth <= est["measured"]["epsilon"] <= truth
    assert r.epsilon_attack_ceiling == pytest.approx(truth, rel=1e-6)  # the pair's μ at the declared noise
    assert r.noise["scale_smaller"] is False and r.noise["gaussian"] and r.noise["independent"]


def test_measure_false_and_end_to_end_keep_the_plain_audit():
    """``measure=False`` is the plain white-box audit (declared shift); ``end_to_end`` keeps refusing
    output perturbation (it measures one gradient step)."""
    r = run_audit(_cfg("output-gaussian", seed=3), trials=50, threat="white-box", measure=False)
    assert "measured" not in _estimates(r) and r.canary == "white-box"
    with pytest.raises(Exception, match="noisy-gradient"):
        run_audit(_cfg("output-gaussian"), trials=10, threat="white-box", end_to_end=True)


# -- planted bugs: the mechanism module's calibration patched, the plan unaware ---------------------------


class _HalfNoise:
    """The runs' generators with every Gaussian draw halved: half the noise drawn, the plan still declaring
    all of it."""

    def __init__(self, rngs):
        self._rngs = rngs

    def __len__(self):
        return len(self._rngs)

    def __getattr__(self, name):
        return getattr(self._rngs, name)

    def normal(self, shape, scale=1.0):
        return self._rngs.normal(shape, 0.5 * np.asarray(scale, dtype=float))


def _half_sigma(monkeypatch, cls):
    real = cls.run
    monkeypatch.setattr(cls, "run", lambda self, problem, config, rngs: real(self, problem, config, _HalfNoise(rngs)))


def test_output_half_the_noise_is_refuted(monkeypatch):
    _half_sigma(monkeypatch, output.OutputGaussian)
    r = run_audit(_cfg("output-gaussian", seed=21), trials=300, threat="white-box")
    est = _estimates(r)
    assert _refuted(r) and est["measured"]["epsilon"] > 1.2 * r.epsilon_certified
    assert any("the noise that ran is smaller than the plan declares" in f for f in r.findings)
    assert r.noise["scale_rms"] == pytest.approx(0.5, rel=0.05)


def test_output_sensitivity_for_twice_n_is_refuted(monkeypatch):
    """Δ_T = 2G/(nλ)(1 − (1 − ηλ)^T) computed for 2n: half the sensitivity, so half the noise, declared so:
    the wide pair moves θ by 0.71 of the true Δ_T, above the declared half of it, a measured fact."""
    real = output.OutputGaussian.sensitivity
    monkeypatch.setattr(output.OutputGaussian, "sensitivity",
                        staticmethod(lambda problem, config: real(problem, config) / 2))  # ∝ 1/n: n → 2n
    r = run_audit(_cfg("output-gaussian", seed=22), trials=300, threat="white-box")
    assert _refuted(r) and _estimates(r)["measured"]["epsilon"] > 1.2 * r.epsilon_certified
    assert r.shift_check["measured"] > 1.3 * r.shift_check["declared"]
    assert any("more than the declared sensitivity" in f for f in r.findings)


def test_output_sensitivity_for_twice_lambda_is_refuted(monkeypatch):
    """λ = 0.03 (ηλT = 3, where λ matters: at λ = 10⁻³, T = 100 the sensitivity for 2λ is only 4.7 % smaller,
    and no pair of records reaches 95 % of Δ_T): the sensitivity for 2λ is 0.52 of the true one."""
    real = output.OutputGaussian.sensitivity

    def for_twice_lambda(problem, config):
        wrong = dataclasses.replace(problem.model, lam=2 * problem.model.lam)
        return real(dataclasses.replace(problem, model=wrong), config)

    monkeypatch.setattr(output.OutputGaussian, "sensitivity", staticmethod(for_twice_lambda))
    r = run_audit(_cfg("output-gaussian", lam=0.03, seed=23), trials=300, threat="white-box")
    assert _refuted(r) and _estimates(r)["measured"]["epsilon"] > r.epsilon_certified
    assert r.shift_check["measured"] > 1.1 * r.shift_check["declared"]
    assert any("more than the declared sensitivity" in f for f in r.findings)


def test_objective_half_the_noise_is_refuted_by_its_measured_scale(monkeypatch):
    """No pair of records shows it (the opposite pair's truth at half the noise, μ = 2ζ/σ, is still below the
    GLM certificate); the noise read from the optimality condition is half the declared σ, a finding."""
    _half_sigma(monkeypatch, objective.ObjectiveGaussian)
    r = run_audit(_cfg("objective-gaussian", seed=24), trials=200, threat="white-box")
    assert _refuted(r) and r.noise["scale_upper"] < 0.6
    assert any("the noise that ran is smaller than the plan declares" in f for f in r.findings)
    # what the records show: twice the pair's μ at the declared noise, still below the certificate
    assert _estimates(r)["measured"]["mu"] > 1.8 * r.shift_check["measured"] / r.sigma


def test_objective_linear_term_scaled_for_twice_n_is_refuted(monkeypatch):
    """The solve divides b by 2n where the proof divides it by n: half the noise in effect."""
    real = objective.solve_perturbed
    monkeypatch.setattr(objective, "solve_perturbed",
                        lambda model, X, y, linear, extra_l2=0.0, start=None: real(model, X, y, linear / 2, extra_l2,
                                                                                   start))
    r = run_audit(_cfg("objective-gaussian", seed=25), trials=200, threat="white-box")
    assert _refuted(r) and r.noise["scale_rms"] == pytest.approx(0.5, rel=0.05)
    assert any("the noise that ran is smaller than the plan declares" in f for f in r.findings)


# -- the estimator's soundness against anisotropic noise, and the check of the check ---------------------

P, RUNS, SHIFT, SIMULATIONS = 10, 600, 0.5, 200


def _along(noise, e, sigma):
    return along_shift(noise, e, sigma)


def _pooled(noise, e, sigma):
    """Every coordinate of every run pooled (the mean variance): what the estimator must not do."""
    z = noise / sigma
    return float(np.einsum("rp,rp->", z, z)), int(z.size)


def _exceedances(read, seed=2026) -> int:
    """How many of 200 synthetic audits put μ_L above the truth: noise of variance 1.3 along the shift
    direction (a random one) and 1 elsewhere, the shift c = 0.5·e, 2N = 600 runs; the truth is
    √(cᵀΣ⁻¹c) = 0.5/√1.3."""
    rng = np.random.default_rng(seed)
    truth = SHIFT / math.sqrt(1.3)
    over = 0
    for _ in range(SIMULATIONS):
        e = rng.standard_normal(P)
        e /= np.linalg.norm(e)
        z = rng.standard_normal((RUNS, P))
        noise = z + (math.sqrt(1.3) - 1.0) * np.outer(z @ e, e)
        ss, df = read(noise, e, 1.0)
        over += release_bound(SHIFT, ss, df, 1.0, 1e-5, ALPHA).mu > truth
    return over


def test_the_estimator_stays_under_the_truth_of_anisotropic_noise():
    """At most about α of the audits above the truth: ≤ 20 of 200 (P(Bin(200, 0.05) ≥ 21) ≈ 10⁻³)."""
    assert _exceedances(_along) <= 20


def test_check_of_the_check_pooling_every_coordinate_fails_the_soundness_test():
    """Pooled, the χ² bound sees the mean variance (1.03), not the 1.3 along the shift: above the truth in
    nearly every audit."""
    assert _exceedances(_pooled) > 150


def test_the_bound_is_the_chi_square_bound_along_the_shift_and_is_hidden_where_the_noise_fails():
    from dpcore.audit.noisecheck import check_noise

    ss, df, shift, sigma = 590.0, 600, 0.4, 0.8
    e = release_bound(shift, ss, df, sigma, 1e-5, ALPHA)
    r_u = math.sqrt(ss / chi2.ppf(ALPHA, df))
    assert e.mu == pytest.approx(shift / (sigma * r_u), rel=1e-12) and r_u == pytest.approx(scale_upper(ss, df, ALPHA))
    assert e.epsilon == pytest.approx(gdp_epsilon_lower(e.mu, 1e-5), rel=1e-12)
    assert e.epsilon <= gdp_epsilon(e.mu, 1e-5)
    assert release_bound(0.0, ss, df, sigma, 1e-5, ALPHA).epsilon == 0.0
    laplace = check_noise(np.random.default_rng(1).laplace(size=(600, 10)))
    hidden = release_bound(shift, ss, df, sigma, 1e-5, ALPHA, laplace)
    assert hidden.epsilon == 0.0 and hidden.detail.startswith("not shown")


def test_docstring_examples():
    result = doctest.testmod(measured_release)
    assert result.attempted > 0 and result.failed == 0, result
