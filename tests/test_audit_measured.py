"""The measured white-box audit (dpcore.audit.measured): its checks of the noise, its bound against a
closed form, what the data domain allows, and the noise check named as one (issue 56)."""

import math

import numpy as np
import pytest
from scipy.stats import chi2

from dpcore.privacy.accounting import gdp_epsilon
from dpcore.audit import run_audit
from dpcore.audit.measured import GAUSSIAN_CHECK_LEVEL, check_noise, measured_bound
from dpcore.experiments.run import RunSpec

ALPHA = 0.05


def _cfg(**kw):
    base = dict(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", epsilon=2.0, delta=1e-5,
                iterations=20)
    base.update(kw)
    return RunSpec(**base)


def test_the_gaussian_check_rejects_gaussian_noise_at_its_level():
    """Jarque–Bera on 20,000 coordinates: Gaussian noise fails the check in about 10⁻³ of the audits (≤ 5 of
    1,000 allowed at test error 10⁻³: P(Bin(1000, 10⁻³) ≥ 6) < 10⁻³), and its p-values are uniform enough
    that a tenth of them fall below 0.1."""
    rng = np.random.default_rng(7)
    p = np.array([check_noise(rng.standard_normal((200, 100))).p_value for _ in range(1000)])
    assert np.sum(p < GAUSSIAN_CHECK_LEVEL) <= 5 and 0.07 <= np.mean(p < 0.1) <= 0.13, np.mean(p < 0.1)


def test_the_measured_bound_is_the_chi_square_bound_at_the_measured_shift():
    """Every step released: μ_L = √T·shift/(σ·r_U), r_U² = SS/χ²_α(df), read as ε at δ (rounded down)."""
    ss, df, steps, shift, sigma = 9_900.0, 10_000, 25, 0.02, 0.1
    e = measured_bound("gaussian", ss=ss, df=df, steps=steps, shift_min=shift, sigma=sigma, delta=1e-5, alpha=ALPHA)
    r_u = math.sqrt(ss / chi2.ppf(ALPHA, df))
    assert e.mu == pytest.approx(math.sqrt(steps) * shift / (sigma * r_u), rel=1e-12)
    assert e.epsilon == pytest.approx(gdp_epsilon(e.mu, 1e-5), rel=1e-6) and e.epsilon <= gdp_epsilon(e.mu, 1e-5)
    assert measured_bound("gaussian", ss=ss, df=df, steps=steps, shift_min=0.0, sigma=sigma, delta=1e-5,
                          alpha=ALPHA).epsilon == 0.0  # the record moved nothing somewhere: no estimate
    # sampled: more inclusions measured, or less noise, never a smaller bound
    kw = dict(ss=9_900.0, df=10_000, steps=10, shift_min=2.0, sigma=1.5, delta=1e-5, alpha=ALPHA, states=10_000)
    a = measured_bound("sampled-gaussian", included=2_000, **kw).epsilon
    b = measured_bound("sampled-gaussian", included=3_000, **kw).epsilon
    c = measured_bound("sampled-gaussian", included=3_000, **dict(kw, ss=8_000.0)).epsilon
    assert 0 < a < b < c


def test_where_the_clip_does_not_bind_the_audit_states_what_the_data_domain_allows():
    """Clip 10 on logistic regression (every per-record gradient has norm ≤ 1): the certificate pays for a
    shift of 20/n that no pair of records makes; the audit reports the domain's ceiling (the shift 2/n at
    the declared noise), an audited ε of records at or below it, and the noise check — which reads the
    certificate's own figure — labelled as such, never the audited ε."""
    r = run_audit(_cfg(clip_norm=10.0, seed=3), trials=200, threat="white-box")
    ceiling = r.epsilon_domain_ceiling
    assert ceiling is not None and ceiling < 0.15 * r.epsilon_certified
    assert 0 < r.epsilon_lower_bound <= ceiling and r.verdict == "not refuted"
    assert 0.9 * r.epsilon_certified <= r.noise_check["epsilon"] and not r.noise_check["exceeds"]
    assert [e["name"] for e in r.estimates if not e["headline"]] == ["noise-check"]
    # the clip binds: no ceiling below the certificate
    assert run_audit(_cfg(clip_norm=0.1, seed=3), trials=20, threat="white-box").epsilon_domain_ceiling is None


def test_unclipped_dp_gd_is_audited_with_the_wide_pair_near_the_worst_case():
    """No clip (G = 1): the opposite pair would reach half the declared 2G/n; the wide pair from its
    start reaches 0.99 of it, so the audited ε lands near the certificate (it was 0.5× the μ before; at
    200 runs a side the noise along the shift is bounded by χ² over 400 runs, about 7 % of μ)."""
    r = run_audit(_cfg(seed=4), trials=200, threat="white-box")
    assert r.canary == "wide-pair" and r.shift_check["measured"] >= 0.99 * r.shift_check["declared"]
    assert r.shift_check["measured"] <= r.shift_check["declared"] and r.findings == ()
    assert 0.82 * r.epsilon_certified <= r.epsilon_lower_bound <= r.epsilon_certified


def test_a_noise_that_is_not_gaussian_hides_the_estimators_that_assume_it(monkeypatch):
    """Laplace noise of the declared variance in place of the Gaussian: the audit's own check sees it,
    the measured bound and the noise check are not shown, and the certificate's premise is refuted as a
    measured fact."""
    from dpcore import optim

    def laplace_draw(self, shape, scale=1.0):  # each run's own generator: common random numbers still hold
        out = np.stack([g.laplace(0.0, 1 / math.sqrt(2), shape) for g in self.gens])
        s = np.asarray(scale, dtype=float)
        return out * (s.reshape((-1,) + (1,) * (out.ndim - 1)) if s.ndim == 1 else s)

    monkeypatch.setattr(optim.BatchRNG, "normal", laplace_draw)
    r = run_audit(_cfg(clip_norm=0.1, seed=5), trials=100, threat="white-box")
    assert not r.noise["gaussian"] and r.noise["excess_kurtosis"] > 1
    shown = {e["name"]: e for e in r.estimates}
    assert shown["measured"]["epsilon"] == 0.0 and shown["measured"]["detail"].startswith("not shown")
    assert shown["noise-check"]["epsilon"] == 0.0 and "certified" in r.refuted
    assert any("not Gaussian" in f for f in r.findings)
