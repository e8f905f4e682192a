"""An audit at a δ far below what a privacy-loss distribution resolves (1e-12) still errs low: the
white-box audit of DP-SGD at δ = 1e-100 read ε = ∞ from the optimistic distribution, and a correct
certificate (ε = 1) was shown refuted twice, "the implementation leaks".  The lower bound now takes the
figure at the smallest δ the distribution resolves, a lower bound still (ε(δ) grows as δ shrinks)."""

from __future__ import annotations

import math

import pytest

from dpcore import RunSpec, run_audit
from dpcore.privacy.accounting import PLD_MIN_DELTA
from dpcore.audit import bounds
from dpcore.privacy.core import certify, sampled_gaussian

TINY = 1e-100


def test_the_sampled_lower_bound_below_the_distributions_reach_is_its_figure_at_that_reach():
    z, q, steps = 20.19, 0.4404, 1  # the false refutation's measured noise multiplier, rate and steps
    low = bounds.sampled_epsilon_lower(z, q, steps, TINY)
    assert math.isfinite(low) and low == bounds.sampled_epsilon_lower(z, q, steps, PLD_MIN_DELTA)
    # a lower bound: below what the accountant certifies for the same noise at that δ (its own route below
    # 1e-12: the bounds exact at any δ)
    plan = sampled_gaussian("the measured step", 1.0, z, q, steps)
    assert low <= certify(plan, TINY)
    # the check of the check: the distribution asked at δ = 1e-100 itself, on the audit's grid, says ∞ (what
    # the audit read before)
    assert bounds._epsilon_optimistic(z, q, steps, TINY, 1e-4) == math.inf


def test_the_scale_bound_below_the_distributions_reach_is_its_figure_at_that_reach():
    """The χ² bound on a sampled Gaussian's noise takes the same floor (it said "no estimate" below it):
    at δ = 1e-100 its figure at 1e-12, finite, and below the certificate of the noise it bounds; a third
    of the noise (sum of squares 9× smaller) reads an ε above the claim's certificate at 1e-100."""
    z, q, steps, df = 2.0, 0.1, 10, 20_000
    ss = df * 1.0  # the sum of squares of unit-scale noise: r_U just above 1
    low = bounds.sampled_gaussian_scale_bound(ss, df, z, q, steps, TINY, 0.05)
    assert low.epsilon == bounds.sampled_gaussian_scale_bound(ss, df, z, q, steps, PLD_MIN_DELTA, 0.05).epsilon
    assert 0 < low.epsilon <= certify(sampled_gaussian("the step", 1.0, z, q, steps), TINY)
    assert "smallest the distribution resolves" in low.detail
    planted = bounds.sampled_gaussian_scale_bound(ss / 9, df, z, q, steps, TINY, 0.05)
    assert planted.epsilon > certify(sampled_gaussian("the step", 1.0, z, q, steps), TINY)


@pytest.mark.parametrize("scale, refuted", [(1.0, False), (0.1, True)], ids=["as certified", "a tenth of the noise"])
def test_a_white_box_audit_at_delta_1e_100_passes_the_truth_and_catches_a_tenth_of_the_noise(scale, refuted):
    spec = RunSpec("breast-cancer", mechanism="gradient-dpsgd", epsilon=1.0, delta=TINY, iterations=1, repeats=1,
                   noise_scale=scale)
    r = run_audit(spec, trials=500, threat="white-box")
    assert math.isfinite(r.epsilon_lower_bound)
    if refuted:  # ε ≥ about 3 at a tenth of the noise: above the target 1 (the noise that ran certifies 10.6)
        assert r.epsilon_lower_bound > r.epsilon_target and r.verdict == "claim not met", r.verdict
        assert r.epsilon_lower_bound <= r.epsilon_certified
    else:
        assert r.epsilon_lower_bound <= r.epsilon_certified and r.verdict == "not refuted", r.verdict
