"""A noise plan's events in dp-accounting's terms: this package's own events (those dp-accounting
has no class for) and the versioned JSON document :meth:`dpcore.privacy.core.NoisePlan.to_dp_events`
writes and :meth:`~dpcore.privacy.core.NoisePlan.from_dp_events` reads (``docs/certify.md``).

What a file may hold is declared once, per kind: :data:`RELEASE_FIELDS` (a plan's releases) and
:data:`EVENT_FIELDS` (dp-accounting's events and this module's), each number with its range
(:class:`dpcore.params.Param`).  :func:`plan_from_json` and :func:`event_from_json` read a file
through them and refuse, with where and why (``ValueError``, one line), what no accountant here
would accept: a number that is not finite or outside its range, a ``true`` or ``50.5`` where a
count belongs, a text where a number belongs, a field the kind has not, plans nested deeper than
:data:`MAX_DEPTH`, more than :data:`MAX_RELEASES` releases."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

import dp_accounting as dpa

from ..params import Interval, Param, check

__all__ = ["EpsilonDeltaDpEvent", "GammaNormDpEvent", "AnyOfDpEvent", "DisjointPartsDpEvent", "OWN_EVENTS", "DP_EVENTS_FORMAT", "DP_EVENTS_LIST_FORMAT",
           "DP_EVENTS_VERSION", "NEIGHBOURING", "event_to_json", "event_from_json", "dp_accounting_composes",
           "plan_to_json", "plan_from_json", "Field", "RELEASE_FIELDS", "RELEASE_DEFAULTS", "PLAN_FIELDS",
           "EVENT_FIELDS", "MAX_COUNT", "MAX_DEPTH", "MAX_NOISE_MULTIPLIER", "MAX_RELEASES", "PlanError",
           "plan_releases"]

#: the neighbouring relation every plan of this package states unless it says otherwise
NEIGHBOURING = "replace-one"


@dataclass(frozen=True)
class EpsilonDeltaDpEvent(dpa.DpEvent):
    """A release that a published theorem proves (ε, δ)-DP (dp-accounting has no such event)."""

    epsilon: float
    delta: float


@dataclass(frozen=True)
class GammaNormDpEvent(dpa.DpEvent):
    """Noise with density ∝ exp(−‖b‖/s) on a vector of ℓ2 sensitivity Δ: pure (Δ/s)-DP.

    ``noise_multiplier = s/Δ``.  Not dp-accounting's ``LaplaceDpEvent``, whose
    privacy-loss distribution is that of a one-dimensional Laplace.
    """

    noise_multiplier: float


@dataclass(frozen=True)
class AnyOfDpEvent(dpa.DpEvent):
    """One of several events runs, and which one may depend on the data (a tuned setting's
    final run).  Certified through a pair that dominates every alternative (:func:`any_of`)."""

    events: tuple


@dataclass(frozen=True)
class DisjointPartsDpEvent(dpa.DpEvent):
    """Releases on disjoint parts of the data (each record is in one part: the clients of a
    distributed run, a tuning's training and validation records): the worst part counts.
    dp-accounting has no parallel composition; composing the parts would overstate ε."""

    events: tuple


#: the name and version of :meth:`NoisePlan.to_dp_events`'s JSON document
DP_EVENTS_FORMAT = "dpcore.dp-events"
DP_EVENTS_VERSION = 1
#: several labelled documents in one file (a sweep's rows, a tuning's searches)
DP_EVENTS_LIST_FORMAT = "dpcore.dp-events-list"
#: this module's own events, which dp-accounting's accountants do not know
OWN_EVENTS = {"EpsilonDeltaDpEvent": EpsilonDeltaDpEvent, "GammaNormDpEvent": GammaNormDpEvent,
               "AnyOfDpEvent": AnyOfDpEvent, "DisjointPartsDpEvent": DisjointPartsDpEvent}


def event_to_json(event) -> dict:
    """A dp-accounting (attrs) or own (dataclass) event as ``{"type": name, field: value, …}``."""
    names = ([f.name for f in dataclasses.fields(event)] if dataclasses.is_dataclass(event)  # this module's
             else [f.name for f in type(event).__attrs_attrs__])  # dp-accounting's (attrs classes)
    out: dict = {"type": type(event).__name__}
    for name in names:
        value = getattr(event, name)
        if isinstance(value, dpa.DpEvent):
            value = event_to_json(value)
        elif isinstance(value, (list, tuple)):
            value = [event_to_json(v) if isinstance(v, dpa.DpEvent) else v for v in value]
        out[name] = value
    return out


# ---------------------------------------------------------------------------
# what a file may hold, declared once


class PlanError(ValueError):
    """A file's plan or event that no accountant here would accept: where (``plan.releases[0].count``) and why."""


#: the most identical releases one release of a plan counts: a run takes at most 10⁶ steps
#: (``PARAMS["iterations"]``) and the work budget refuses far fewer; a tuning composes a few
#: hundred runs.  Beyond, no run of this package wrote it
MAX_COUNT = 10**9
#: how deep plans nest (disjoint parts, a choice's alternatives): a tuning's search is 2 deep
MAX_DEPTH = 8
#: the most noise over sensitivity (σ/Δ) a release may state: beyond, its ε is 0 to every digit, and
#: the accountants square the multiplier (dp-accounting's overflows near 10¹⁵⁴)
MAX_NOISE_MULTIPLIER = 1e100
#: the most releases (every part's and alternative's counted) one file may hold: a sweep of
#: thousands of runs holds a few thousand; the accounting of many more is priced by the work budget
MAX_RELEASES = 100_000


@dataclass(frozen=True)
class Field:
    """One field of a release or an event in a file: a number and its range (``param``), or
    (``param`` None) what ``shape`` names: ``"text"``, ``"plans"`` (a list of plans), ``"event"``
    (one event), ``"events"`` (a non-empty list of events); ``optional``: ``null`` is allowed."""

    param: Param | None = None
    shape: str = "number"
    optional: bool = False


def _number(name: str, interval: Interval, help: str) -> Field:
    return Field(Param(name, interval, None, help))


_SENSITIVITY = _number("sensitivity", Interval(float, 0.0, None, "neither"),
                       "the replace-one ℓ2 sensitivity Δ (sampled Gaussian: twice the clipping norm)")
_NOISE = _number("noise", Interval(float, 0.0, None, "neither"), "the noise's standard deviation σ or scale s")
_COUNT = _number("count", Interval(int, 1, MAX_COUNT, "both"), "identical releases, composed")
_RATE = _number("sample_rate", Interval(float, 0.0, 1.0, "right"), "the Poisson sampling rate q")
#: randomized response's ε: beyond 700 its flip probability 2/(1 + e^ε) underflows (keeps every label)
_RR_EPSILON = _number("epsilon", Interval(float, 0.0, 700.0, "both"), "the label budget ε of randomized response")
_THEOREM_EPSILON = _number("epsilon", Interval(float, 0.0, 1e6, "both"), "the ε a theorem proves")
_THEOREM_DELTA = _number("delta", Interval(float, 0.0, 1.0, "left"), "the δ a theorem proves")
_TEXT = Field(shape="text")

#: the fields of a release of each kind (:class:`dpcore.privacy.core.Release`), each number with its range;
#: every kind has ``kind`` and ``what`` (a text).  Another field of a release must be missing or hold
#: its default (:data:`RELEASE_DEFAULTS`): a Gaussian's ``sample_rate`` is never read, so a file
#: that sets one states something the accountant would not certify
RELEASE_FIELDS: dict[str, dict[str, Field]] = {
    "gaussian": {"sensitivity": _SENSITIVITY, "noise": _NOISE, "count": _COUNT},
    "sampled-gaussian": {"sensitivity": _SENSITIVITY, "noise": _NOISE, "count": _COUNT, "sample_rate": _RATE},
    "gamma-norm": {"sensitivity": _SENSITIVITY, "noise": _NOISE, "count": _COUNT},
    "randomized-response": {"epsilon": _RR_EPSILON, "count": _COUNT},
    "theorem": {"epsilon": _THEOREM_EPSILON, "delta": _THEOREM_DELTA, "count": _COUNT,
                "sensitivity": dataclasses.replace(_SENSITIVITY, optional=True)},
    "any-of": {"count": _COUNT, "alternatives": Field(shape="plans")},
}
#: a release's fields its kind does not read, and the value each must then hold (or be missing)
RELEASE_DEFAULTS: dict[str, Any] = {"sensitivity": None, "noise": None, "count": 1, "sample_rate": 1.0,
                                    "epsilon": None, "delta": 0.0, "alternatives": []}
#: a plan's own fields (``neighbouring`` must be :data:`NEIGHBOURING`; ``void``: the reason there is no
#: guarantee, or null)
PLAN_FIELDS: dict[str, Field] = {"releases": Field(shape="releases"), "parts": Field(shape="plans"),
                                 "void": Field(shape="text", optional=True), "neighbouring": _TEXT}

_EVENT, _EVENTS = Field(shape="event"), Field(shape="events")
_MULTIPLIER = _number("noise_multiplier", Interval(float, 0.0, 2 * MAX_NOISE_MULTIPLIER, "right"),
                      "noise over sensitivity")
#: the events :func:`event_to_json` writes, by type, and their fields (dp-accounting's and this module's)
EVENT_FIELDS: dict[str, dict[str, Field]] = {
    "GaussianDpEvent": {"noise_multiplier": _MULTIPLIER},
    "LaplaceDpEvent": {"noise_multiplier": _MULTIPLIER},
    "PoissonSampledDpEvent": {"sampling_probability": _number("sampling_probability", _RATE.param.constraint,
                                                              "the Poisson sampling rate q"), "event": _EVENT},
    "SelfComposedDpEvent": {"event": _EVENT, "count": _COUNT},
    "ComposedDpEvent": {"events": _EVENTS},
    "RandomizedResponseDpEvent": {
        "noise_parameter": _number("noise_parameter", Interval(float, 0.0, 1.0, "both"),
                                   "the probability of answering at random"),
        "num_buckets": _number("num_buckets", Interval(int, 2, 2**31, "both"), "the number of answers")},
    "NonPrivateDpEvent": {},
    "NoOpDpEvent": {},
    "EpsilonDeltaDpEvent": {"epsilon": _THEOREM_EPSILON, "delta": _THEOREM_DELTA},
    "GammaNormDpEvent": {"noise_multiplier": _MULTIPLIER},
    "AnyOfDpEvent": {"events": _EVENTS},
    "DisjointPartsDpEvent": {"events": _EVENTS},
}


def _shown(value: Any) -> str:
    """A value as the file spells it (``true``, ``null``, ``Infinity``), short (a 400-digit number
    keeps its ends)."""
    try:
        text = json.dumps(value, ensure_ascii=False) if isinstance(value, (bool, int, float, str, type(None))) \
            else type(value).__name__.replace("dict", "an object").replace("list", "a list")
    except ValueError:  # an integer past Python's digit limit for text
        return "an integer of more than 4,300 digits"
    return text if len(text) <= 40 else f"{text[:16]}…{text[-8:]} ({len(text)} characters)"


def _check_field(field: Field, value: Any, where: str) -> Any:
    """``value`` checked against ``field`` (a number: its declared range; a text); ``ValueError``
    naming ``where`` otherwise."""
    if value is None and field.optional:
        return None
    if field.shape == "text":
        if not isinstance(value, str):
            raise PlanError(f"{where} must be a text, got {_shown(value)}")
        return value
    param = field.param
    try:
        return check(param, value, where)
    except ValueError:
        kind = param.constraint
        what = ("a whole number" if kind.kind is int else "a number")
        raise PlanError(f"{where} must be {what} in {kind.describe().split(' in ', 1)[1]} ({param.help}), "
                         f"got {_shown(value)}") from None


def _depth_error(where: str) -> ValueError:
    return PlanError(f"{where}: events or plans nested more than {MAX_DEPTH} deep (a run's plan is 2 deep)")


def event_from_json(data: dict, where: str = "event", _depth: int = 0) -> dpa.DpEvent:
    """The event :func:`event_to_json` wrote (dp-accounting's classes, or this module's own), each
    field checked against :data:`EVENT_FIELDS` (``ValueError`` naming ``where`` and the field)."""
    if _depth > MAX_DEPTH:
        raise _depth_error(where)
    if not isinstance(data, dict):
        raise PlanError(f"{where} must be an event (a JSON object with its type), got {_shown(data)}")
    kind = data.get("type")
    fields = EVENT_FIELDS.get(kind) if isinstance(kind, str) else None
    cls = (OWN_EVENTS.get(kind) or getattr(dpa, kind, None)) if fields is not None else None
    if cls is None or not (isinstance(cls, type) and issubclass(cls, dpa.DpEvent)):
        raise PlanError(f"{where}: unknown event type {_shown(kind)} (known: {', '.join(EVENT_FIELDS)})")
    extra = sorted(set(data) - set(fields) - {"type"})
    if extra:
        raise PlanError(f"{where}: a {kind} has no field {extra[0]!r}")
    args = {}
    for key, field in fields.items():
        at = f"{where}.{key}"
        if key not in data:
            raise PlanError(f"{where}: a {kind} needs its {key!r}")
        value = data[key]
        if field.shape == "event":
            value = event_from_json(value, at, _depth + 1)
        elif field.shape == "events":
            if not isinstance(value, list) or not value:
                raise PlanError(f"{at} must be a non-empty list of events, got {_shown(value)}")
            value = [event_from_json(v, f"{at}[{i}]", _depth + 1) for i, v in enumerate(value)]
            value = tuple(value) if cls in (AnyOfDpEvent, DisjointPartsDpEvent) else value
        else:
            value = _check_field(field, value, at)
        args[key] = value
    return cls(**args)


def dp_accounting_composes(event) -> bool:
    """Whether dp-accounting's own accountants can compose ``event`` (none of this module's events)."""
    if type(event).__name__ in OWN_EVENTS:
        return False
    if isinstance(event, dpa.ComposedDpEvent):
        return all(dp_accounting_composes(e) for e in event.events)
    inner = getattr(event, "event", None)
    return True if inner is None else dp_accounting_composes(inner)


def plan_to_json(plan) -> dict:
    """A :class:`~dpcore.privacy.core.NoisePlan` as JSON: its releases (with their alternatives), parts,
    void reason and neighbouring relation."""
    return {"releases": [{**{k: getattr(r, k) for k in ("kind", "what", "sensitivity", "noise", "count",
                                                         "sample_rate", "epsilon", "delta")},
                          "alternatives": [plan_to_json(a) for a in r.alternatives]} for r in plan.releases],
            "parts": [plan_to_json(p) for p in plan.parts], "void": plan.void, "neighbouring": plan.neighbouring}


def plan_from_json(data: dict, plan_type, release_type, where: str = "plan"):
    """The plan :func:`plan_to_json` wrote, built with ``plan_type`` and ``release_type`` (the
    privacy module's ``NoisePlan`` and ``Release``: this module sits below it), every field checked
    against :data:`PLAN_FIELDS` and :data:`RELEASE_FIELDS` first (``ValueError``: where and why), so
    nothing an accountant would refuse, and no shape it would take hours over, gets through."""
    counted = [0]
    return _plan(data, plan_type, release_type, where, 0, counted)


def _plan(data, plan_type, release_type, where: str, depth: int, counted: list):
    if depth > MAX_DEPTH:
        raise _depth_error(where)
    if not isinstance(data, dict):
        raise PlanError(f"{where} must be a plan (a JSON object), got {_shown(data)}")
    extra = sorted(set(data) - set(PLAN_FIELDS))
    if extra:
        raise PlanError(f"{where}: a plan has no field {extra[0]!r} (its fields: {', '.join(PLAN_FIELDS)})")
    neighbouring = data.get("neighbouring", NEIGHBOURING)
    if neighbouring != NEIGHBOURING:
        raise PlanError(f"{where}.neighbouring: only {NEIGHBOURING!r} neighbours are certified here, "
                         f"got {_shown(neighbouring)}")
    void = _check_field(PLAN_FIELDS["void"], data.get("void"), f"{where}.void")
    releases = _list(data.get("releases", []), f"{where}.releases", "releases")
    parts = _list(data.get("parts", []), f"{where}.parts", "plans")
    counted[0] += len(releases)
    if counted[0] > MAX_RELEASES:
        raise PlanError(f"{where}: more than {MAX_RELEASES:,} releases in one file (a sweep of thousands of runs "
                         "holds a few thousand): certify it in parts")
    built = tuple(_release(r, plan_type, release_type, f"{where}.releases[{i}]", depth, counted)
                  for i, r in enumerate(releases))
    inner = tuple(_plan(p, plan_type, release_type, f"{where}.parts[{i}]", depth + 1, counted)
                  for i, p in enumerate(parts))
    try:
        return plan_type(built, inner, void, neighbouring)
    except ValueError as exc:
        raise PlanError(f"{where}: {exc}") from None


def _list(value, where: str, what: str) -> list:
    if not isinstance(value, list):
        raise PlanError(f"{where} must be a list of {what}, got {_shown(value)}")
    return value


def _release(data, plan_type, release_type, where: str, depth: int, counted: list):
    if not isinstance(data, dict):
        raise PlanError(f"{where} must be a release (a JSON object), got {_shown(data)}")
    kind = data.get("kind")
    fields = RELEASE_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        raise PlanError(f"{where}.kind: unknown release kind {_shown(kind)} (known: {', '.join(RELEASE_FIELDS)})")
    extra = sorted(set(data) - set(RELEASE_DEFAULTS) - {"kind", "what"})
    if extra:
        raise PlanError(f"{where}: a release has no field {extra[0]!r}")
    args: dict[str, Any] = {"kind": kind, "what": _check_field(_TEXT, data.get("what"), f"{where}.what")}
    for key, default in RELEASE_DEFAULTS.items():
        at = f"{where}.{key}"
        field = fields.get(key)
        if field is None:  # a field this kind never reads: missing, or its default
            value = data.get(key, default)
            if value != default or type(value) is bool:
                raise PlanError(f"{at}: a {kind} release has no {key} (its fields: {', '.join(fields)}), "
                                 f"got {_shown(value)}")
            continue
        if key not in data and not (field.optional or key == "count"):
            raise PlanError(f"{where}: a {kind} release needs its {key!r}")
        value = data.get(key, default)
        if field.shape == "plans":
            alts = _list(value, at, "plans")
            if not alts:
                raise PlanError(f"{at}: a choice needs at least one plan")
            args[key] = tuple(_plan(a, plan_type, release_type, f"{at}[{i}]", depth + 1, counted)
                              for i, a in enumerate(alts))
        else:
            args[key] = _check_field(field, value, at)
    noise, sensitivity = args.get("noise"), args.get("sensitivity")
    if noise is not None and sensitivity is not None and not noise / sensitivity <= MAX_NOISE_MULTIPLIER:
        raise PlanError(f"{where}: its noise over its sensitivity is {noise / sensitivity:.3g}, more than "
                        f"{MAX_NOISE_MULTIPLIER:.0e} (its ε is 0 to every digit, and the accountants square it)")
    return release_type(**args)


def plan_releases(plan) -> int:
    """The releases of a plan, its parts' and its choices' alternatives' counted too."""
    return (sum(1 + sum(plan_releases(a) for a in r.alternatives) for r in plan.releases)
            + sum(plan_releases(p) for p in plan.parts))
