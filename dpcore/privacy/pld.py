"""The PLD route of :func:`dpcore.privacy.core.certify`: Gaussian releases (sampled or not, or a choice
among plans) composed with randomized responses by dp-accounting's PLD accountant under
``REPLACE_ONE``, extended through its own hook to the events only :mod:`dpcore.privacy.core` makes
(:class:`~dpcore.privacy.events.AnyOfDpEvent`, :class:`~dpcore.privacy.events.GammaNormDpEvent`,
:class:`~dpcore.privacy.events.EpsilonDeltaDpEvent`); with next to no noise, basic composition instead
(:func:`pld_or_basic`).  Every public name here is also :mod:`dpcore.privacy.core`'s.

>>> from dpcore import privacy
>>> gauss = privacy.gaussian("a sum", 2.0, 4.0).releases
>>> gdp_mu(gauss), gdp_mu(gauss * 4)
(0.5, 1.0)
>>> eps = pld_or_basic(list(gauss), [privacy.randomized_response("a label", 1.0)], 1e-5)
>>> privacy.gdp_rr_epsilon(0.5, (1.0,), 1e-5) <= eps < privacy.gdp_rr_epsilon(0.5, (1.0,), 1e-5) + 1e-3
True
"""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np
from dp_accounting.pld import common as _plc
from dp_accounting.pld import pld_pmf as _pmf
from dp_accounting.pld import pld_privacy_accountant as _pld
from dp_accounting.pld import privacy_loss_distribution as _pldist

from . import accounting as acc
from .events import AnyOfDpEvent, EpsilonDeltaDpEvent, GammaNormDpEvent

__all__ = ["PLD_MAX_MU", "CHOICE_DOTS", "pld_or_basic", "gdp_mu"]

_NR = dpa.NeighboringRelation

#: beyond this μ (ε in the tens of thousands) the PLD's grid would not fit in memory
PLD_MAX_MU = 300.0
#: at most this many dots for a choice's dominating pair (any dots give a dominating pair: between two,
#: the true profile is convex in e^ε and lies under the chord)
CHOICE_DOTS = 4000


def pld_or_basic(gauss, rr, delta: float) -> float:
    """ε of composed Gaussian (sampled or not, or a choice among plans) and randomized-response
    releases by the PLD accountant; with next to no noise, where its grid would not fit in
    memory, by basic composition instead: the Gaussians as one μ-GDP release (Poisson sampling
    only helps, so unsampled is an upper bound) plus each response's ε, also an upper bound."""
    if all(r.kind != "any-of" for r in gauss):
        mu = gdp_mu(gauss)
        if mu > PLD_MAX_MU:  # the basic bound only here: certify is on calibration's hot path
            return acc.gdp_epsilon(mu, delta) + sum(r.count * r.epsilon for r in rr) if math.isfinite(mu) else math.inf
    try:
        return _pld_epsilon(tuple(r.event() for r in gauss + rr), delta)
    except _Unrepresentable:
        return math.inf


class _Unrepresentable(ArithmeticError):
    """A choice among plans whose worst plan's privacy loss lies beyond what a float's e^ε holds (ε above
    about 700 at every δ the PLD can represent): no PLD to compose, so no finite ε is proven (∞, an upper
    bound; such a plan protects nothing at any ε a reader would use)."""


def gdp_mu(gauss) -> float:
    """μ of composed Gaussian releases, √Σ count·(Δ/σ)²; ∞ where it overflows (noise next to 0)."""
    try:
        return math.sqrt(math.fsum(r.count * (r.sensitivity / r.noise) ** 2 for r in gauss))
    except OverflowError:
        return math.inf


def _pld_epsilon(events: tuple, delta: float) -> float:
    """PLD (REPLACE_ONE) of composed events, on a grid relative to the result (weak noise
    needs no 1e-4 resolution, which would be slow); pessimistic, so an upper bound."""
    coarse = _pld_run(events, delta, 0.05)
    grid = min(0.05, 1e-4 * max(1.0, coarse))
    return min(coarse, _pld_run(events, delta, grid))


def _pld_run(events: tuple, delta: float, grid: float) -> float:
    accountant = _Accountant(_NR.REPLACE_ONE, value_discretization_interval=grid)
    accountant.compose(dpa.ComposedDpEvent(list(events)))
    return float(accountant.get_epsilon(delta))


class _Accountant(_pld.PLDAccountant):
    """dp-accounting's PLD accountant, extended (through its own hook) to the events only
    :mod:`dpcore.privacy.core` makes: a data-dependent choice among plans (:class:`AnyOfDpEvent`), and, inside
    one, pure releases (Gamma-norm noise: dominated by randomized response at the same ε, the
    extremal pure pair) and theorem-proved (ε, δ) releases (dp-accounting's pessimistic PLD of
    an (ε, δ) guarantee)."""

    def _maybe_compose(self, event, count, do_compose):
        grid = self._value_discretization_interval
        if isinstance(event, GammaNormDpEvent):
            eps = 1.0 / event.noise_multiplier if event.noise_multiplier > 0 else math.inf
            event = dpa.RandomizedResponseDpEvent(2.0 / (1.0 + math.exp(min(eps, 700.0))), 2)
        elif isinstance(event, EpsilonDeltaDpEvent):
            if do_compose:
                params = _plc.DifferentialPrivacyParameters(event.epsilon, event.delta)
                pld = _pldist.from_privacy_parameters(params, grid)
                self._pld = self._pld.compose(pld.self_compose(count))
            return None
        elif isinstance(event, AnyOfDpEvent):
            if do_compose:
                pld = self._dominating(event.events)
                if pld is None:
                    self._contains_non_dp_event = True
                else:
                    self._pld = self._pld.compose(pld.self_compose(count))
            return None
        return super()._maybe_compose(event, count, do_compose)

    def _dominating(self, events):
        """A PLD that dominates every event of ``events`` (``None``: one of them has no
        guarantee): connect-the-dots on the pointwise maximum of their privacy profiles, both
        directions of replace-one included, so one symmetric PLD covers the pair and its reverse."""
        grid = self._value_discretization_interval
        plds = []
        for e in events:
            inner = _Accountant(self.neighboring_relation, value_discretization_interval=grid)
            inner.compose(e)
            if inner._contains_non_dp_event:
                return None
            plds.append(inner._pld)
        top = 0.0
        for pld in plds:
            inf_mass = float(pld.get_delta_for_epsilon([math.inf])[0])
            e = pld.get_epsilon_for_delta(max(1e-15, 2.0 * inf_mass))
            top = max(top, e if math.isfinite(e) else 100.0)
        top = max(top, grid)
        step = max(1, math.ceil(2.0 * top / grid / CHOICE_DOTS))
        rounded = np.arange(-math.ceil(top / grid), math.ceil(top / grid) + step, step, dtype=int)
        eps = rounded * grid
        deltas = np.max([np.asarray(p.get_delta_for_epsilon(eps), dtype=float) for p in plds], axis=0)
        # dp-accounting's δ(ε) is NaN where e^ε overflows against a mass of 0 (a plan whose ε reaches the
        # hundreds): 1 there, then the running minimum below, both upper bounds of a profile that never rises
        deltas = np.minimum(1.0, np.maximum(0.0, np.where(np.isnan(deltas), 1.0, deltas)))
        deltas = np.minimum.accumulate(deltas)  # rounding; a profile never increases
        if not deltas[-1] < 1.0 - 1e-12:  # every dot at δ = 1: all of the loss beyond e^ε's range
            raise _Unrepresentable(f"a choice whose privacy loss exceeds ε = {eps[-1]:.0f} at every δ")
        pmf = _pmf.create_pmf_pessimistic_connect_dots(grid, rounded, deltas)
        return _pldist.PrivacyLossDistribution(pmf)
