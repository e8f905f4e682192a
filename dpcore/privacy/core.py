"""Certification in one place: a mechanism declares its noise, this module proves the ε.

Every mechanism describes what it releases as a :class:`NoisePlan`: a tuple of
:class:`Release` s, each with its sensitivity under the plan's neighbouring
relation (replace-one, SPEC §1), or an explicit *void* plan with the reason no
guarantee exists.  :func:`certify` turns a plan into the ε it provably gives at
a δ, the same way for every mechanism:

* unsampled Gaussian releases compose exactly to μ-Gaussian DP,
  ``μ² = Σ T_k (Δ_k/σ_k)²`` (Dong, Roth & Su 2019), read at δ in closed form;
* Poisson-sampled Gaussians, and Gaussians composed with randomized response,
  go through dp-accounting's PLD accountant under ``REPLACE_ONE`` (pessimistic,
  so an upper bound; :mod:`dpcore.privacy.pld`);
* pure releases (Gamma-norm "ℓ2-Laplace" noise, randomized response alone, and
  results proved by a published theorem for a given (ε, δ)) add up by basic
  composition;
* a plan over disjoint sets of records (the clients of a federation) is
  certified as its worst part (parallel composition).

:func:`calibrate` is the inverse of :func:`certify`: the smallest noise
parameter of a family of plans whose certified ε meets a target, confirmed by
:func:`certify` itself, so calibrate → certify round-trips by construction.

Every release also names its dp-accounting ``DpEvent`` (:meth:`Release.event`)
in the library's units for ``REPLACE_ONE``: a ``GaussianDpEvent(z)`` there is a
shift of 2 against noise z, so a replace-one sensitivity Δ with noise σ is
``GaussianDpEvent(2σ/Δ)``.

References: Dong, Roth & Su 2019 (Gaussian DP); Balle & Wang 2018 (analytic
Gaussian); Koskela et al. 2020 and dp-accounting (PLD); Dwork & Roth 2014 §3.5
(basic and parallel composition).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, replace
from typing import Callable

import dp_accounting as dpa
from scipy.optimize import brentq

from . import accounting as acc
from .events import (  # noqa: F401 — the events and the document are part of this module's face
    DP_EVENTS_FORMAT,
    DP_EVENTS_LIST_FORMAT,
    DP_EVENTS_VERSION,
    NEIGHBOURING,
    RELEASE_FIELDS,
    AnyOfDpEvent,
    DisjointPartsDpEvent,
    EpsilonDeltaDpEvent,
    GammaNormDpEvent,
    dp_accounting_composes,
    event_from_json,
    event_to_json,
    plan_from_json,
    plan_to_json,
)
from .._version import __version__
from ..exceptions import ParameterError
from .pld import CHOICE_DOTS, PLD_MAX_MU, gdp_mu, pld_or_basic  # noqa: F401 — the PLD route of certify

__all__ = [
    "NEIGHBOURING",
    "Release",
    "NoisePlan",
    "EpsilonDeltaDpEvent",
    "GammaNormDpEvent",
    "AnyOfDpEvent",
    "gaussian",
    "sampled_gaussian",
    "gamma_norm",
    "randomized_response",
    "theorem",
    "void",
    "any_of",
    "parallel",
    "compose",
    "fixed_delta",
    "certify",
    "gdp_rr_epsilon",
    "calibrate",
    "classical_gaussian_sigma",
    "DP_EVENTS_FORMAT",
    "CLOSED_FORM_TOL",
    "certificate_error",
    "same_certificate",
    "DP_EVENTS_LIST_FORMAT",
    "dp_events_list",
    "DP_EVENTS_VERSION",
    "event_from_json",
]

# Relative tolerance of :func:`calibrate`'s root search (the result is then confirmed).
CALIBRATION_RTOL = 1e-9

#: the closed forms' and root finders' error, absolute, per unit of 1 + ε: brentq stops within
#: 1e-13 + 1e-13·ε of the root and ``gdp_rr_epsilon`` rounds up by 2e-13·(1 + ε), so two evaluations
#: (two CPUs, two kernels) agree to 6e-13·(1 + ε) (docs/spec.md, §9.1)
CLOSED_FORM_TOL = 1e-12


def certificate_error(plan: "NoisePlan", delta: float) -> float:
    """The accountant's own error of :func:`certify` ``(plan, delta)``, absolute: one step of the PLD's
    grid where :func:`certify` composes on the PLD (it rounds every privacy loss up onto the grid, so
    its ε is an upper bound good to one step; a loss on a step's edge may round either way on another
    CPU), else the closed forms' :data:`CLOSED_FORM_TOL` · (1 + ε).  It follows :func:`certify`'s
    routes: a test holds the two together.

    >>> certificate_error(gaussian("a query", 1.0, 2.0), 1e-5)  # GDP, a closed form: 1e-12 · (1 + ε)  # doctest: +ELLIPSIS
    2.99...e-12
    >>> certificate_error(sampled_gaussian("DP-SGD", 1.0, 1.1, 0.01, 1000), 1e-5)  # the PLD's grid
    0.001
    """
    eps = certify(plan, delta)
    closed = CLOSED_FORM_TOL * (1.0 + eps) if math.isfinite(eps) else 0.0
    if plan.void is not None or not math.isfinite(eps):
        return closed
    if plan.parts and plan.releases:  # the two halves' errors add, as their ε's do
        (own, d_own), (parts, d_parts) = _releases_then_parts(plan, delta)
        return certificate_error(own, d_own) + certificate_error(parts, d_parts)
    worst = max((certificate_error(p, delta) for p in plan.parts), default=0.0)
    rr = [r for r in plan.releases if r.kind == "randomized-response" and r.epsilon >= FAINT_RR]
    gauss = [r for r in plan.releases if r.kind in ("gaussian", "sampled-gaussian", "any-of")]
    rest = delta - sum(r.count * r.delta for r in plan.releases if r.kind == "theorem")
    grid = 0.0
    if not gauss or (not rr and all(r.kind == "gaussian" for r in gauss)):
        grid = 0.0  # pure releases added up, or GDP
    elif not rr and len(gauss) == 1 and gauss[0].kind == "sampled-gaussian":
        r = gauss[0]
        if (r.sample_rate < 1 and r.noise_multiplier >= acc.PLD_MIN_MULTIPLIER and rest >= acc.PLD_MIN_DELTA
                and acc.never_sampled(r.sample_rate, r.count) > rest):
            grid = acc.pld_grid(r.noise_multiplier, r.sample_rate, r.count) or 0.0
    elif all(r.kind == "gaussian" for r in gauss) and sum(r.count for r in rr) <= MAX_EXACT_RR:
        grid = 0.0  # the exact profile of Gaussians and randomized responses
    elif rest >= acc.PLD_MIN_DELTA:
        grid = 0.05  # pld_or_basic: the PLD on a grid no coarser than this (or basic composition, exact)
    else:  # below the PLD's smallest δ: bounds by routes exact at any δ, some of them parts' PLDs
        grid = max((certificate_error(NoisePlan((r,)), rest) for r in gauss if r.kind == "sampled-gaussian"),
                   default=0.0)
    return max(worst, closed, grid)


def same_certificate(stored: float | None, recomputed: float, error: float | None = None) -> bool:
    """Whether a stored certified ε is the one this code recomputes, within ``error``: the accountant's
    own (:func:`certificate_error` of the plan; by default a closed form's, :data:`CLOSED_FORM_TOL` ·
    (1 + ε)).  An infinite ε (no guarantee, stored as ``None``) equals only itself.  Across CPUs a
    PLD certificate moves by far less than its grid (a shipped DP-SGD row: 0.9999915219379503 →
    0.9999916088859793, 8.7e-8, between an AVX-512 and an AVX2 machine, on a grid of 1e-3).

    >>> same_certificate(0.9999915219379503, 0.9999916088859793, error=1e-3), same_certificate(0.99, 1.0)
    (True, False)
    >>> same_certificate(None, float("inf")), same_certificate(1.0, float("inf"))
    (True, False)
    >>> same_certificate(0.4999999999999977, 0.49999997400097623)  # a closed form's shift: another code's
    False
    """
    stored = math.inf if stored is None else float(stored)
    if math.isinf(stored) or math.isinf(recomputed) or math.isnan(stored):
        return stored == recomputed
    allowed = CLOSED_FORM_TOL * (1.0 + abs(recomputed)) if error is None else error
    return abs(stored - recomputed) <= allowed


_KINDS = tuple(RELEASE_FIELDS)  # gaussian, sampled-gaussian, gamma-norm, randomized-response, theorem, any-of


@dataclass(frozen=True)
class Release:
    """One noisy release (or ``count`` identical ones) and what it is sensitive to.

    ``sensitivity`` is the ℓ2 distance a replaced record can move the released
    quantity before noise (for ``sampled-gaussian``: twice the clipping norm);
    ``noise`` the standard deviation (Gaussians) or the scale s of the
    Gamma-norm density; ``sample_rate`` the Poisson rate; ``epsilon`` the label
    budget of randomized response, or a theorem's ε (with ``delta``); ``alternatives`` the
    plans an ``any-of`` release chooses among (:func:`any_of`).
    """

    kind: str
    what: str
    sensitivity: float | None = None
    noise: float | None = None
    count: int = 1
    sample_rate: float = 1.0
    epsilon: float | None = None
    delta: float = 0.0
    alternatives: tuple["NoisePlan", ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown release kind {self.kind!r}")
        if (self.kind == "any-of") != bool(self.alternatives):
            raise ValueError("an any-of release, and only it, has alternatives")

    @property
    def noise_multiplier(self) -> float | None:
        """Noise over sensitivity (sampled Gaussian: over the clipping norm, as in DP-SGD)."""
        if self.noise is None or not self.sensitivity:
            return None
        if self.kind == "sampled-gaussian":
            return 2.0 * self.noise / self.sensitivity
        return self.noise / self.sensitivity

    def event(self) -> dpa.DpEvent:
        """This release as a dp-accounting event, in the library's ``REPLACE_ONE`` units."""
        if self.kind == "gaussian":
            inner = dpa.GaussianDpEvent(2.0 * self.noise / self.sensitivity)
        elif self.kind == "sampled-gaussian":
            inner = dpa.GaussianDpEvent(self.noise_multiplier)
            if self.sample_rate < 1.0:
                inner = dpa.PoissonSampledDpEvent(self.sample_rate, inner)
        elif self.kind == "gamma-norm":
            inner = GammaNormDpEvent(self.noise / self.sensitivity)
        elif self.kind == "randomized-response":
            inner = dpa.RandomizedResponseDpEvent(2.0 / (1.0 + math.exp(self.epsilon)), 2)
        elif self.kind == "any-of":
            inner = AnyOfDpEvent(tuple(p.event() for p in self.alternatives))
        else:
            inner = EpsilonDeltaDpEvent(self.epsilon, self.delta)
        return inner if self.count == 1 else dpa.SelfComposedDpEvent(inner, int(self.count))

    def describe(self) -> str:
        times = f" × {self.count}" if self.count != 1 else ""
        if self.kind == "gaussian":
            return f"Gaussian σ = {self.noise:.4g} on {self.what}, Δ = {self.sensitivity:.4g}{times}"
        if self.kind == "sampled-gaussian":
            return (f"Poisson-sampled (q = {self.sample_rate:.4g}) Gaussian σ = {self.noise:.4g} on "
                    f"{self.what}, Δ = {self.sensitivity:.4g}{times}")
        if self.kind == "gamma-norm":
            return f"Gamma-norm noise of scale {self.noise:.4g} on {self.what}, Δ = {self.sensitivity:.4g}{times}"
        if self.kind == "randomized-response":
            return f"randomized response with ε = {self.epsilon:.4g} on {self.what}{times}"
        if self.kind == "any-of":
            inner = " | ".join(p.describe() for p in self.alternatives)
            return f"{self.what}: the worst of {len(self.alternatives)} possible plans [{inner}]{times}"
        return f"{self.what}: ({self.epsilon:.4g}, {self.delta:.3g})-DP by a theorem{times}"


@dataclass(frozen=True)
class NoisePlan:
    """What a mechanism released, for certification; frozen and hashable.

    ``releases`` compose (sequential composition); ``parts`` are plans over
    disjoint sets of records (parallel composition: the worst part counts);
    ``void`` is the reason there is no guarantee at all (ε = ∞).
    """

    releases: tuple[Release, ...] = ()
    parts: tuple["NoisePlan", ...] = ()
    void: str | None = None
    neighbouring: str = NEIGHBOURING

    def __post_init__(self) -> None:
        if self.neighbouring != NEIGHBOURING:
            raise ValueError(f"only {NEIGHBOURING!r} neighbours are certified here")
        if self.void is None and not self.releases and not self.parts:
            raise ValueError("a plan needs releases, parts, or the reason it has no guarantee")

    def event(self) -> dpa.DpEvent:
        """The plan as one dp-accounting event; two or more disjoint parts as this package's
        ``DisjointPartsDpEvent`` (dp-accounting has no parallel composition)."""
        if self.void is not None:
            return dpa.NonPrivateDpEvent()
        parts = [p.event() for p in self.parts]
        events = [r.event() for r in self.releases] + (parts if len(parts) <= 1 else
                                                       [DisjointPartsDpEvent(tuple(parts))])
        return events[0] if len(events) == 1 else dpa.ComposedDpEvent(events)

    def describe(self) -> str:
        if self.void is not None:
            return f"no guarantee: {self.void}"
        said = [r.describe() for r in self.releases]
        runs = [(text, sum(1 for _ in group)) for text, group in itertools.groupby(said)]
        text = "; ".join(t if k == 1 else f"({t}) × {k} runs" for t, k in runs)
        if self.parts:
            inner = " | ".join(p.describe() for p in self.parts)
            text = (text + "; " if text else "") + f"disjoint parts (the worst counts): {inner}"
        return text

    def sensitivities(self) -> dict[str, float]:
        """What each release declares, for the empirical sensitivity checks."""
        return {r.what: r.sensitivity for r in self.releases if r.sensitivity is not None}

    def to_dp_events(self, delta: float) -> dict:
        """The plan as a versioned JSON document (:data:`DP_EVENTS_FORMAT`): its dp-accounting
        event (:meth:`event`, in the library's ``REPLACE_ONE`` units, every field named), the
        neighbouring relation, the plan itself (what :meth:`from_dp_events` reads back) and the
        ε :func:`certify` gives at ``delta``.  Events only this module makes (``EpsilonDeltaDpEvent``,
        ``GammaNormDpEvent``, ``AnyOfDpEvent``) are named as such: dp-accounting cannot compose them.
        """
        eps = certify(self, float(delta))
        return {"format": DP_EVENTS_FORMAT, "version": DP_EVENTS_VERSION, "dpcore": __version__,
                "neighbouring": self.neighbouring, "dp_accounting_relation": "REPLACE_ONE",
                "event": event_to_json(self.event()), "plan": plan_to_json(self),
                "certified": {"delta": float(delta), "epsilon": eps if math.isfinite(eps) else None},
                "dp_accounting_supported": dp_accounting_composes(self.event())}

    @classmethod
    def from_dp_events(cls, document: dict) -> NoisePlan:
        """The plan a :meth:`to_dp_events` document holds (ValueError: not one, or a newer version)."""
        if not isinstance(document, dict) or document.get("format") != DP_EVENTS_FORMAT:
            raise ValueError(f"not a {DP_EVENTS_FORMAT} document")
        version = document.get("version")
        if type(version) is not int or version != DP_EVENTS_VERSION:
            raise ValueError(f"{DP_EVENTS_FORMAT} version {version!r}: this dpcore reads version {DP_EVENTS_VERSION}")
        if "plan" not in document:
            raise ValueError(f"a {DP_EVENTS_FORMAT} document without its plan")
        return plan_from_json(document["plan"], cls, Release)


def dp_events_list(items, omitted=()) -> dict:
    """Several plans as one versioned JSON document (:data:`DP_EVENTS_LIST_FORMAT`): ``items`` are
    (label, plan, δ), each written as :meth:`NoisePlan.to_dp_events` writes it, with its label;
    ``omitted`` (label, reason) names what has no plan to write, and why."""
    return {"format": DP_EVENTS_LIST_FORMAT, "version": DP_EVENTS_VERSION, "dpcore": __version__,
            "documents": [{"label": str(label), **plan.to_dp_events(delta)} for label, plan, delta in items],
            "omitted": [{"label": str(label), "reason": str(reason)} for label, reason in omitted]}


# ---------------------------------------------------------------------------
# building plans


def gaussian(what: str, sensitivity: float, std: float, count: int = 1) -> NoisePlan:
    """``count`` releases of a quantity with replace-one ℓ2 sensitivity Δ plus N(0, σ²I)."""
    return NoisePlan((Release("gaussian", what, float(sensitivity), float(std), int(count)),))


def sampled_gaussian(what: str, clip_norm: float, noise_multiplier: float, sample_rate: float,
                     count: int) -> NoisePlan:
    """DP-SGD's event: T Poisson-sampled sums of contributions clipped to C, noise σ = zC."""
    return NoisePlan((Release("sampled-gaussian", what, 2.0 * clip_norm, noise_multiplier * clip_norm,
                              int(count), sample_rate=float(sample_rate)),))


def gamma_norm(what: str, sensitivity: float, scale: float) -> NoisePlan:
    """Noise with density ∝ exp(−‖b‖/s) on a vector of ℓ2 sensitivity Δ: (Δ/s, 0)."""
    return NoisePlan((Release("gamma-norm", what, float(sensitivity), float(scale)),))


def randomized_response(what: str, epsilon: float) -> Release:
    """Binary randomized response keeping the label with probability e^ε/(1 + e^ε)."""
    return Release("randomized-response", what, epsilon=float(epsilon))


def theorem(what: str, epsilon: float, delta: float = 0.0, sensitivity: float | None = None) -> NoisePlan:
    """A release a theorem shows (ε, δ)-DP (a paper's, or one derived and tested here, which
    ``what`` names), with the proof's constants; ``sensitivity``
    is the bound the proof assumes (objective perturbation: how far one replaced record moves
    the gradient of the loss)."""
    return NoisePlan((Release("theorem", what, None if sensitivity is None else float(sensitivity),
                              epsilon=float(epsilon), delta=float(delta)),))


def void(reason: str) -> NoisePlan:
    """No guarantee, with the reason a user reads."""
    return NoisePlan(void=reason)


def any_of(what: str, plans) -> NoisePlan:
    """One of ``plans`` runs, and a rule that may read the data chooses which (a tuning's
    final run: the setting trained is the one the private choice picked).

    Certifying the plan that happened to be chosen would let the data decide the proof; this
    plan is dominated by every alternative at once, so it certifies whichever runs:

    * unsampled Gaussians only: the largest μ (a μ_k-GDP mechanism is μ-GDP for μ ≥ μ_k, and
      Gaussian DP composes adaptively, Dong, Roth & Su 2022 Thm 3.2); exact;
    * pure and theorem-proved releases only: the largest ε and the largest δ (each alternative
      is then (max ε, max δ)-DP, and basic composition is adaptive); exact;
    * anything else: a pair whose privacy profile is the pointwise maximum of the
      alternatives' (the profile of the convex hull of the minimum of their trade-off
      functions, a valid pair that dominates each), discretised pessimistically by
      connecting the dots (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022, Alg. 1) and
      composed through the PLD accountant (a dominating pair for every possible choice
      composes adaptively: Zhu, Dong & Wang 2022, Thm 10).

    A void alternative voids the choice.

    References: Dong, Roth & Su 2022 (JRSS B); Zhu, Dong & Wang 2022 (AISTATS), "Optimal
    accounting of differential privacy via characteristic function"; Doroshenko et al. 2022
    (PETS), "Connect the dots".
    """
    plans = tuple(plans)
    if not plans:
        raise ValueError("any_of needs at least one plan")
    for plan in plans:
        if plan.void is not None:
            return plan
        if plan.parts:
            raise ValueError("plans with disjoint parts are not chosen among here")
    if len(set(plans)) == 1:
        return plans[0]
    kinds = {r.kind for plan in plans for r in plan.releases}
    if kinds == {"gaussian"}:
        if any(not (r.noise and r.noise > 0) for plan in plans for r in plan.releases):
            return void(f"{what}: a possible choice adds no noise")
        mu = max(math.sqrt(sum(r.count * (r.sensitivity / r.noise) ** 2 for r in plan.releases))
                 for plan in plans)
        return gaussian(f"{what} (the largest μ of {len(plans)} possible plans)", mu, 1.0)
    if kinds <= {"gamma-norm", "randomized-response", "theorem"}:
        eps, dlt = zip(*(_basic(plan) for plan in plans))
        if not all(math.isfinite(e) for e in eps):
            return void(f"{what}: a possible choice adds no noise")
        return theorem(f"{what} (the largest ε and δ of {len(plans)} possible plans)", max(eps), max(dlt))
    return NoisePlan((Release("any-of", what, alternatives=plans),))


def _basic(plan: NoisePlan) -> tuple[float, float]:
    """(ε, δ) of a plan of pure and theorem-proved releases by basic composition."""
    eps = dlt = 0.0
    for r in plan.releases:
        if r.kind == "gamma-norm":
            eps += r.count * (r.sensitivity / r.noise if r.noise > 0 else math.inf)
        else:
            eps += r.count * r.epsilon
            dlt += r.count * r.delta
    return eps, dlt


def parallel(plans) -> NoisePlan:
    """Plans over disjoint sets of records (the worst part counts)."""
    return NoisePlan(parts=tuple(plans))


def compose(plans, times=None) -> NoisePlan:
    """Sequential composition: every release of every plan, plan k repeated ``times[k]``
    times (default once); a plan without a guarantee voids the composition.  Plans with
    disjoint parts are not composed here (their parts would need splitting): ValueError."""
    plans = list(plans)
    times = [1] * len(plans) if times is None else [int(k) for k in times]
    for plan in plans:
        if plan.void is not None:
            return plan
    if any(plan.parts for plan in plans):
        raise ValueError("plans with disjoint parts are not composed")
    releases = tuple(replace(r, count=r.count * k) for plan, k in zip(plans, times) if k > 0
                     for r in plan.releases)
    if not releases:
        raise ValueError("nothing to compose")
    return NoisePlan(releases)


def _releases_then_parts(plan: NoisePlan, delta: float):
    """A plan with releases and disjoint parts: its releases read every record and each part a disjoint
    set of them, so a record of a part is in both halves, which compose sequentially (basic composition:
    their ε's added, the δ beyond what each half's theorems spend split evenly; replace-one, as both
    halves).  Returns ((releases, their δ), (parts, their δ)); both δ's ``None`` where nothing is left."""
    own = NoisePlan(releases=plan.releases, neighbouring=plan.neighbouring)
    parts = NoisePlan(parts=plan.parts, neighbouring=plan.neighbouring)
    spare = delta - fixed_delta(own) - fixed_delta(parts)
    if not spare > 0:
        return (own, None), (parts, None)
    return (own, fixed_delta(own) + spare / 2), (parts, fixed_delta(parts) + spare / 2)


def fixed_delta(plan: NoisePlan) -> float:
    """The δ a plan's published theorems spend between them (the worst part for parallel
    parts): :func:`certify` needs at least this much δ for a finite ε."""
    own = sum(r.count * r.delta for r in plan.releases if r.kind == "theorem")
    return own + max((fixed_delta(p) for p in plan.parts), default=0.0)


def classical_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """The classical Gaussian mechanism's σ = Δ√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1)."""
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


# ---------------------------------------------------------------------------
# certification


# pure: a frozen plan's certified ε at δ
@functools.lru_cache(maxsize=4096)
def certify(plan: NoisePlan, delta: float) -> float:
    """The ε that ``plan`` provably gives at ``delta`` (``inf`` where no proof applies)."""
    if not 0.0 <= delta < 1.0:
        raise ParameterError(f"δ must be in [0, 1); got {delta!r}")
    if plan.void is not None:
        return math.inf
    if plan.parts and plan.releases:
        (own, d_own), (parts, d_parts) = _releases_then_parts(plan, delta)
        return certify(own, d_own) + certify(parts, d_parts) if d_own is not None else math.inf
    worst = max((certify(p, delta) for p in plan.parts), default=0.0)
    if not plan.releases:
        return worst
    fixed = [r for r in plan.releases if r.kind in ("gamma-norm", "theorem")]
    rr = [r for r in plan.releases if r.kind == "randomized-response"]
    # a response with next to no ε (its flip probability rounds to ½, which the accountant
    # refuses) enters by basic composition: it adds its ε, an upper bound
    faint = [r for r in rr if r.epsilon < FAINT_RR]
    rr = [r for r in rr if r.epsilon >= FAINT_RR]
    gauss = [r for r in plan.releases if r.kind in ("gaussian", "sampled-gaussian", "any-of")]
    eps_fixed, delta_fixed = 0.0, 0.0
    for r in fixed:
        if r.kind == "gamma-norm":
            if not r.noise > 0:
                return math.inf
            eps_fixed += r.count * r.sensitivity / r.noise
        else:
            eps_fixed += r.count * r.epsilon
            delta_fixed += r.count * r.delta
    eps_fixed += sum(r.count * r.epsilon for r in faint)
    if delta_fixed > delta * (1 + 1e-12):
        return math.inf  # a theorem's δ is more than we may spend
    rest = delta - delta_fixed
    if not gauss:
        eps = eps_fixed + sum(r.count * r.epsilon for r in rr)
        return max(worst, eps)
    if any(not (r.noise and r.noise > 0) for r in gauss if r.kind != "any-of") or not rest > 0:
        return math.inf
    if not rr and all(r.kind == "gaussian" for r in gauss):
        mu = gdp_mu(gauss)
        eps = acc.gdp_epsilon(mu, rest) if math.isfinite(mu) else math.inf
    elif not rr and len(gauss) == 1 and gauss[0].kind == "sampled-gaussian":
        r = gauss[0]
        eps = acc.sampled_gaussian_epsilon(r.noise_multiplier, r.sample_rate, r.count, rest)
    elif all(r.kind == "gaussian" for r in gauss) and sum(r.count for r in rr) <= MAX_EXACT_RR:
        # Gaussian features + randomized-response labels (input and local perturbation): the
        # exact profile at every δ, as plain Gaussians take the exact GDP route.  The PLD's
        # pessimism over-noised them (2.6× at δ = 1e-20, about 1e-4 of ε at δ = 1e-8), and its
        # FFT made every calibration of a record release cost 0.4 s (brentq over PLD runs)
        mu = gdp_mu(gauss)
        eps = (gdp_rr_epsilon(mu, tuple(r.epsilon for r in rr for _ in range(r.count)), rest)
               if math.isfinite(mu) else math.inf)
    elif rest < acc.PLD_MIN_DELTA:
        eps = _tiny_delta_bound(gauss, rr, rest)
    else:
        eps = pld_or_basic(gauss, rr, rest)
    return max(worst, eps_fixed + eps)


def _tiny_delta_bound(gauss, rr, delta: float) -> float:
    """Below :data:`~dpcore.privacy.accounting.PLD_MIN_DELTA` the PLD's FFT composition is no longer
    monotone in the noise, so a value there could be too low.  Upper bounds by routes exact at
    any δ instead, joined by basic composition (δ split evenly among the parts):

    * each choice among plans (``any-of``), ``count`` times: its profile is the pointwise
      maximum of its alternatives' (:func:`any_of`), so one choice is ε-DP at δ' for ε the
      largest alternative's certificate at δ'; ``count`` choices add (basic composition);
    * the other Gaussians, sampled or not, and the randomized responses: the smaller of two
      bounds — each Gaussian release certified on its own (Poisson sampling through its own
      route, exact at any δ) at an even share of δ, plus each response's ε; or all Gaussians as
      one unsampled μ-GDP release (Poisson sampling only helps) with the responses through the
      exact profile (:func:`gdp_rr_epsilon`, at most :data:`MAX_EXACT_RR` of them; else adding
      their ε).
    """
    choices = [r for r in gauss if r.kind == "any-of"]
    plain = [r for r in gauss if r.kind != "any-of"]
    parts = len(choices) + (1 if plain else 0)
    share = delta / parts
    eps = 0.0
    for r in choices:
        per = share / r.count
        eps += r.count * max(certify(alt, per) for alt in r.alternatives)
    responses = tuple(r.epsilon for r in rr for _ in range(r.count))
    if not plain:
        return eps + sum(responses)
    # each release on its own at an even share of δ, the responses adding their ε …
    separately = sum(certify(NoisePlan((r,)), share / len(plain)) for r in plain) + sum(responses)
    # … or all Gaussians as one unsampled μ, exact with the responses: the smaller bound holds
    mu = gdp_mu(plain)
    if not math.isfinite(mu):
        return eps + separately
    if len(responses) <= MAX_EXACT_RR:
        return eps + min(separately, gdp_rr_epsilon(mu, responses, share))
    return eps + min(separately, acc.gdp_epsilon(mu, share) + sum(responses))


#: randomized responses with less ε than this are composed by adding their ε
FAINT_RR = 1e-9

#: at most this many randomized-response releases composed with Gaussians take the exact route
MAX_EXACT_RR = 64


def gdp_rr_epsilon(mu: float, rr_epsilons: tuple[float, ...], delta: float) -> float:
    """ε at ``delta`` of μ-GDP composed with binary randomized responses of ``rr_epsilons``,
    from the exact privacy profile: the privacy loss is the Gaussian's plus an independent
    ±ε_k for each response (+ε_k with probability e^ε_k/(1 + e^ε_k)), so
    δ(ε) = Σ_ℓ P(L_RR = ℓ)·δ_μ(ε − ℓ), with δ_μ the Gaussian DP profile (Dong, Roth & Su 2019).
    An upper bound: the root is returned past brentq's tolerance (1e-13 + 1e-13·ε) on the safe side."""
    losses = {0.0: 1.0}
    for e in rr_epsilons:
        keep = math.exp(e) / (1.0 + math.exp(e)) if e < 700 else 1.0
        nxt: dict[float, float] = {}
        for ell, prob in losses.items():
            nxt[ell + e] = nxt.get(ell + e, 0.0) + prob * keep
            nxt[ell - e] = nxt.get(ell - e, 0.0) + prob * (1.0 - keep)
        losses = nxt

    def profile(eps: float) -> float:
        return sum(prob * acc.gdp_delta(mu, eps - ell) for ell, prob in losses.items() if prob > 0)

    if profile(0.0) <= delta:
        return 0.0
    hi = sum(rr_epsilons) + acc.gdp_epsilon(mu, delta)  # basic composition: an upper end
    if not math.isfinite(hi):
        return math.inf
    while profile(hi) > delta:  # rounding at the bracket's end
        hi = hi * 1.01 + 1e-9
    root = brentq(lambda e: math.log(max(profile(e), 1e-320)) - math.log(delta), 0.0, hi, xtol=1e-13, rtol=1e-13)
    return min(hi, root + 2e-13 * (1.0 + root))


# ---------------------------------------------------------------------------
# calibration: the inverse of certify


def calibrate(family: Callable[[float], NoisePlan], epsilon: float, delta: float, *,
              start: float = 1.0, table: acc.CalibrationTable | None = None) -> float:
    """Smallest noise parameter s > 0 with ``certify(family(s), δ) ≤ ε``.

    ``family`` maps the noise parameter (σ, a scale, a noise multiplier …) to
    the plan the mechanism would run; more noise never certifies a larger ε.
    A family whose plan is one Poisson-sampled Gaussian with multiplier s uses
    the accountant's own calibration of that event; every other family is
    solved by Brent's method on log ε(s).  Either way the answer is confirmed
    by :func:`certify` (and nudged up until it is), so it never undershoots.  ``table``
    remembers sampled-Gaussian calibrations between processes (re-certified on every read).
    """
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ParameterError(f"a calibration needs a finite ε > 0; got {epsilon!r}")

    def eps_at(s: float) -> float:
        return certify(family(s), delta)

    probe = family(1.0)
    sampled = (probe.void is None and not probe.parts and len(probe.releases) == 1
               and probe.releases[0].kind == "sampled-gaussian"
               and math.isclose(probe.releases[0].noise_multiplier, 1.0, rel_tol=1e-12))
    if sampled:
        r = probe.releases[0]
        calibrate_event = acc.calibrate_sampled_gaussian if table is None else table.sampled_gaussian
        s = calibrate_event(epsilon, delta, r.sample_rate, r.count)
    else:
        s = _brent(eps_at, epsilon, start)
    for _ in range(10_000):
        if eps_at(s) <= epsilon:
            return s
        s *= 1.0 + 1e-7
    raise ParameterError(f"no noise level meets ε = {epsilon:g} at δ = {delta:g}")  # pragma: no cover


def _brent(eps_at: Callable[[float], float], epsilon: float, start: float) -> float:
    big = 1e6  # log-ε stand-in for "no guarantee" (keeps Brent's bracket finite)

    def excess(log_s: float) -> float:
        e = eps_at(math.exp(log_s))
        if e <= 0:
            return -big
        return math.log(e) - math.log(epsilon) if math.isfinite(e) else big

    lo = hi = math.log(start)
    if excess(hi) > 0:
        while excess(hi) > 0:
            lo, hi = hi, hi + math.log(4.0)
            if hi > math.log(1e300):
                raise ParameterError(f"no finite noise level meets ε = {epsilon:g}")
    else:
        while excess(lo) <= 0:
            lo, hi = lo - math.log(4.0), lo
            if lo < math.log(1e-300):
                return math.exp(hi)
    return math.exp(brentq(excess, lo, hi, xtol=1e-14, rtol=CALIBRATION_RTOL, maxiter=500))
