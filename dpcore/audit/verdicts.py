"""The one verdict rule (issue 66): a claim is shown refuted only when a second, independent audit
refutes it too.

:func:`dpcore.audit.run_audit` runs its first audit at α; where it refutes a claim (the target, the
certificate), a second audit with a fresh seed (:func:`confirmation_seed`: disjoint runs) at
α₂ = :func:`confirmation_alpha` of α; :func:`confirmed_result` then shows refuted ("claim not met") the
claims both refute, and calls the others "refuted once, not confirmed".  The two audits' runs are
independent, so a correct claim is shown refuted in at most α·α₂ ≤ :data:`CONFIRMED_FALSE_RATE` of audits.
"""

from __future__ import annotations

import dataclasses

from .membership import NOT_CONFIRMED, NOT_MET

__all__ = ["CONFIRMED_FALSE_RATE", "confirmation_alpha", "confirmation_seed", "confirmed_result"]

#: a correct claim is shown refuted ("claim not met") in at most this share of audits: the first audit
#: refutes it with probability ≤ α, the second, independent one with probability ≤ α₂ = this / α
CONFIRMED_FALSE_RATE = 1e-3


def confirmation_alpha(alpha: float) -> float:
    """The second audit's α: α₂ = min(α, 10⁻³/α), so a correct claim is refuted by both in at most
    α·α₂ ≤ :data:`CONFIRMED_FALSE_RATE` of audits.

    >>> confirmation_alpha(0.05), confirmation_alpha(0.01)
    (0.02, 0.01)
    """
    return min(float(alpha), CONFIRMED_FALSE_RATE / float(alpha))


def confirmation_seed(seed: int) -> int:
    """The seed of the second audit that confirms a refutation: another half of the seed range, so its
    runs are disjoint from the first audit's and from any audit with a seed below 2³¹.

    >>> confirmation_seed(0), confirmation_seed(2**31 + 5)
    (2147483648, 5)
    """
    return int(seed) + 2**31 if int(seed) < 2**31 else int(seed) - 2**31


def confirmed_result(first, again):
    """The first audit's refutations (``refuted_once``) judged by the second's: each claim the second
    also refutes is shown refuted (``refuted``, verdict "claim not met"); the others stay "refuted once,
    not confirmed"."""
    once = first.refuted_once
    shown = tuple(c for c in once if again is not None and c in again.refuted_once)
    warned = list(first.warnings)
    if "certified" in shown:
        warned.append("the audited lower bound exceeds the certified ε in two independent audits: the proof or "
                      f"its implementation is wrong (a correct certificate is refuted twice in at most "
                      f"{first.alpha * confirmation_alpha(first.alpha):.2g} of audits)")
    confirmation = None if again is None else {
        "seed": again.spec.seed, "alpha": again.alpha, "verdict": again.verdict, "refuted": list(again.refuted_once),
        "epsilon_lower_bound": again.epsilon_lower_bound, "confirmed": list(shown),
        "noise_check": again.noise_check, "findings": list(again.findings), "refutation": again.refutation}
    return dataclasses.replace(first, verdict=NOT_MET if shown else NOT_CONFIRMED, refuted=shown,
                               refuted_once=tuple(c for c in once if c not in shown), confirmation=confirmation,
                               warnings=tuple(warned))
