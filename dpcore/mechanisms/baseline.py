"""The non-private baseline: exact ERM (SPEC §3.1)."""

from __future__ import annotations

import numpy as np

from ..privacy import core as privacy
from .base import Mechanism, MechanismOutput, register


@register
class NonPrivate(Mechanism):
    """Exact empirical risk minimiser, released as is: ε = ∞.

    The reference for ``L*`` and for the accuracy a private mechanism can hope
    for.  Every repeat returns the same θ*.
    """

    id = "non-private"
    iterative = False
    name = "Non-private ERM"
    short = "non-private"
    family = "baseline"
    paper = "—"
    models = ("logreg", "linreg", "mlp")
    notion = "none"
    calibrations = ("certified", "published")
    private = False
    description = "Exact minimiser of the regularised training objective; no privacy (ε = ∞)."
    privacy_event = "none: the exact minimiser is released as it is (NonPrivateDpEvent)"
    calibration_note = "No noise, so nothing to calibrate: both modes release the exact minimiser."
    formula = r"\hat\theta = \arg\min_\theta \frac1n\sum_i \ell(\theta; x_i, y_i) + \frac{\lambda}{2}\|\theta\|^2"

    def clips_records(self, model, config):
        return "the non-private baseline claims no guarantee (ε = ∞)"

    def run(self, problem, config, rngs):
        theta = np.repeat(problem.erm.theta[None, :], len(rngs), axis=0)
        return MechanismOutput(theta=theta, plan=privacy.void("the exact minimiser is released as it is"),
                               sigma=0.0)
