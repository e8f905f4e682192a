"""The noise's checks (dpcore/audit/noisecheck.py) as verdicts with two error rates (issue 66): each
check says "broken" to Gaussian, independent, isotropic noise at most at its level, and says it to the
broken assumption it names nearly always at an audit's sizes.  Fixed seeds; the allowed counts are
one-sided binomial bounds at test error 1e-4, so a correct check fails this test about once in 10⁴
runs of it, and a check with no power fails it."""

import numpy as np
import pytest
from scipy.stats import binom

from dpcore.audit.noisecheck import GAUSSIAN_CHECK_LEVEL, check_noise

AUDITS = 1000
SHAPE = (200, 10, 6)  # runs, steps, coordinates: a small audit (the view's is 100–1,000 runs a side)
CHECKS = {"gaussian": lambda c: c.gaussian, "steps independent": lambda c: c.steps_independent,
          "isotropic": lambda c: c.isotropic, "runs independent": lambda c: c.independent}


def _allowed(audits: int, level: float, test_error: float = 1e-4) -> int:
    return int(binom.isf(test_error, audits, level))


def test_gaussian_noise_passes_every_check_at_its_level():
    rng = np.random.default_rng(66)
    said_broken = dict.fromkeys(CHECKS, 0)
    for _ in range(AUDITS):
        c = check_noise(rng.standard_normal(SHAPE))
        for name, holds in CHECKS.items():
            said_broken[name] += not holds(c)
    allowed = _allowed(AUDITS, GAUSSIAN_CHECK_LEVEL)
    assert allowed <= 6  # the bound is tight enough to mean something: 6 of 1,000 at a level of 1e-3
    assert all(n <= allowed for n in said_broken.values()), (said_broken, allowed)


def _ar1(rng, rho):
    z = rng.standard_normal(SHAPE)
    out = np.empty_like(z)
    out[:, 0] = z[:, 0]
    for t in range(1, SHAPE[1]):
        out[:, t] = rho * out[:, t - 1] + np.sqrt(1 - rho**2) * z[:, t]
    return out


def _wide(rng, factor):
    z = rng.standard_normal(SHAPE)
    z[:, :, 0] *= np.sqrt(factor)
    return z


#: a broken assumption, the check that names it, and how often it must be named at SHAPE (at least)
PLANTED = {
    "heavy-tailed (Laplace)": (lambda rng: rng.laplace(size=SHAPE) / np.sqrt(2), "gaussian"),
    "skewed (χ²₁ centred)": (lambda rng: (rng.standard_normal(SHAPE) ** 2 - 1) / np.sqrt(2), "gaussian"),
    "correlated across steps (AR(1), ρ = 0.3)": (lambda rng: _ar1(rng, 0.3), "steps independent"),
    "reused across steps": (lambda rng: np.repeat(rng.standard_normal((SHAPE[0], 1, SHAPE[2])), SHAPE[1], axis=1),
                            "steps independent"),
    "anisotropic (1.5× the variance on one coordinate)": (lambda rng: _wide(rng, 1.5), "isotropic"),
    "runs repeated": (lambda rng: np.repeat(rng.standard_normal((SHAPE[0] // 10, *SHAPE[1:])), 10, axis=0),
                      "runs independent"),
}


@pytest.mark.parametrize("broken", sorted(PLANTED))
def test_each_broken_assumption_is_named_by_its_check(broken):
    make, check = PLANTED[broken]
    rng = np.random.default_rng(67)
    audits = 200
    named = sum(not CHECKS[check](check_noise(make(rng))) for _ in range(audits))
    # power ≥ 0.95 at these sizes: fewer than 95 % named (at test error 1e-4) fails
    assert named >= binom.ppf(1e-4, audits, 0.95), (broken, named, audits)
