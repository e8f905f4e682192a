"""What an audit's scores show: every estimator the threat's scores allow, each at its share of α.

:func:`estimate` turns the two score samples of an audit (:func:`dpcore.audit.core.run_audit`) into
its :class:`Evidence`: the membership test at the direct bound's share of α, the estimators whose
maximum is the audited ε (the direct bound, and the sharper ones of :mod:`dpcore.audit.bounds` where
the threat's scores allow them, each naming its assumption; those the audit's own check of the noise
rules out are shown as 0, saying why), the ones reported beside it, and how to make each again at
another α (what a refutation's chance is searched with, :func:`dpcore.audit.core.refutation_chance`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .bounds import (
    ALPHA_SHARES,
    ASSUMPTIONS,
    Estimate,
    effect_size_bound,
    gaussian_scale_bound,
    pooled_error_bound,
    sampled_gaussian_bound,
    sampled_gaussian_scale_bound,
    simulation_seed,
)
from .membership import MembershipTest, membership_test

__all__ = ["Evidence", "estimate"]


@dataclass(frozen=True)
class Evidence:
    """What the scores showed: the membership test, the estimators whose maximum is the audited ε
    (``headline``), the ones reported beside it (``labelled``), and the δ and direct share of α used."""

    scores: tuple[np.ndarray, np.ndarray]
    test: MembershipTest
    headline: list[Estimate]
    labelled: tuple | None
    delta: float
    alpha_direct: float
    makers: list = field(default_factory=list)  # (name, share of α, estimate at a given α)


def _makers(attack, scores, delta: float, seed: int) -> tuple[str, list]:
    """The estimators the threat's scores allow, as ``(name, share of α, estimate at a given α)``,
    and the row of :data:`~dpcore.audit.bounds.ALPHA_SHARES` they come from (see :func:`~dpcore.audit.core.audit`)."""
    s0, s1 = scores
    if getattr(attack, "measured", False):
        share = ALPHA_SHARES["measured"]
        return "measured", [
            ("direct", share["direct"], lambda a: _direct(s0, s1, delta, a, attack.noise)),
            ("measured", share["measured"], lambda a: attack.measured_estimate(delta, a)),
            ("noise-check", share["noise-check"], lambda a: attack.noise_check_estimate(delta, a))]
    gdp = attack.gaussian is not None and delta > 0  # the two score distributions are Gaussian shifts
    sampled = attack.sampled if delta > 0 else None  # Poisson-sampled Gaussian sums
    # the attack read the Gaussian noise itself and added the declared shift: the χ² scale bound
    noise_ss = attack.noise_ss if (gdp and attack.ceiling_mu is not None) or sampled is not None else None
    row = "gaussian" if gdp else "sampled-gaussian" if sampled is not None else "other"
    if row != "other" and noise_ss is not None:
        row += "-declared-shift"
    share = ALPHA_SHARES[row]
    noise = getattr(attack, "noise", None)  # the audit's own check of the noise it read, where it reads it
    out = [("direct", share["direct"], lambda a: _direct(s0, s1, delta, a, noise))]
    if gdp:  # threshold 0: the log-likelihood-ratio scores are symmetric about it
        g0, g1 = attack.gaussian
        fp, fn = int(np.sum(g0 > 0.0)), int(np.sum(g1 <= 0.0))
        out.append(("pooled-error", share["pooled-error"],
                    lambda a: pooled_error_bound(fp, g0.size, fn, g1.size, delta, a)))
        out.append(("effect-size", share["effect-size"], lambda a: effect_size_bound(g0, g1, delta, a)))
        if noise_ss is not None:  # the noise check: labelled, never the audited ε
            out.append(("gaussian-scale", share["gaussian-scale"],
                        lambda a: gaussian_scale_bound(*noise_ss, attack.ceiling_mu, delta, a)))
    if sampled is not None:
        q, steps, z = sampled
        if noise_ss is not None:
            out.append(("sampled-gaussian-scale", share["sampled-gaussian-scale"],
                        lambda a: sampled_gaussian_scale_bound(*noise_ss, z, q, steps, delta, a)))
        else:
            # the simulation's seed: fresh for this audit, fixed by its seed and its scores
            sim = simulation_seed([seed], s0, s1)
            out.append(("sampled-gaussian", share["sampled-gaussian"],
                        lambda a: sampled_gaussian_bound(s0, s1, z, q, steps, delta, a, seed=sim)))
    if noise is not None:  # hide what assumes Gaussian noise and independent runs (and steps, for the χ² scale)
        kept = [out[0]]
        for name, sh, make in out[1:]:
            pooled = name in ("gaussian-scale", "sampled-gaussian-scale")
            if not (noise.passed_steps if pooled else noise.passed):
                make = _hidden(name, "not shown: " + (noise.why_not_steps() if pooled else noise.why_not()))
            kept.append((name, sh, make))
        out = kept
    return row, out


def _hidden(name: str, why: str):
    """An estimator the audit's own check of the noise hides: 0, saying why."""
    return lambda a: Estimate(name, 0.0, a, ASSUMPTIONS.get(name, ""), None, why)


def _direct(s0, s1, delta: float, a: float, noise=None) -> Estimate:
    """The direct bound at α = ``a``; not shown where the audit found its runs repeating (``noise``, a
    :class:`~dpcore.audit.measured.NoiseCheck`): its one assumption, independent runs, is then false."""
    if noise is not None and not noise.independent:
        return Estimate("direct", 0.0, a, ASSUMPTIONS["direct"], None, "not shown: " + noise.why_not())
    test = membership_test(s0, s1, delta, a)
    return Estimate("direct", test.epsilon_lower_bound, a, ASSUMPTIONS["direct"], None,
                    f"{test.false_positives} false positives of {test.n_without}, "
                    f"{test.false_negatives} false negatives of {test.n_with}")


def estimate(attack, scores, delta: float, alpha: float, seed: int) -> Evidence:
    """Every estimator the threat's scores allow, each at its share of α (see :func:`~dpcore.audit.core.audit`)."""
    s0, s1 = scores
    row, makers = _makers(attack, scores, delta, seed)
    a = alpha * ALPHA_SHARES[row]["direct"]
    test = membership_test(s0, s1, delta, a)
    estimates = [make(alpha * share) for name, share, make in makers]
    labelled = attack.labelled_estimates(s0, s1, delta, alpha)
    return Evidence(scores, test, estimates, labelled, delta, a, makers)
