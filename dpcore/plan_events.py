"""A noise plan's events in dp-accounting's terms: this package's own events (those dp-accounting
has no class for) and the versioned JSON document :meth:`dpcore.privacy.NoisePlan.to_dp_events`
writes and :meth:`~dpcore.privacy.NoisePlan.from_dp_events` reads (``docs/certify.md``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import dp_accounting as dpa

__all__ = ["EpsilonDeltaDpEvent", "GammaNormDpEvent", "AnyOfDpEvent", "DisjointPartsDpEvent", "OWN_EVENTS", "DP_EVENTS_FORMAT", "DP_EVENTS_LIST_FORMAT",
           "DP_EVENTS_VERSION", "NEIGHBOURING", "event_to_json", "event_from_json", "dp_accounting_composes",
           "plan_to_json", "plan_from_json"]

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


def event_from_json(data: dict) -> dpa.DpEvent:
    """The event :func:`event_to_json` wrote (dp-accounting's classes, or this module's own)."""
    data = dict(data)
    kind = data.pop("type")
    cls = OWN_EVENTS.get(kind) or getattr(dpa, kind, None)
    if cls is None or not (isinstance(cls, type) and issubclass(cls, dpa.DpEvent)):
        raise ValueError(f"unknown event type {kind!r}")
    args = {}
    for key, value in data.items():
        if isinstance(value, dict) and "type" in value:
            value = event_from_json(value)
        elif isinstance(value, list):
            value = [event_from_json(v) if isinstance(v, dict) and "type" in v else v for v in value]
            value = tuple(value) if cls in (AnyOfDpEvent, DisjointPartsDpEvent) else value
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
    """A :class:`~dpcore.privacy.NoisePlan` as JSON: its releases (with their alternatives), parts,
    void reason and neighbouring relation."""
    return {"releases": [{**{k: getattr(r, k) for k in ("kind", "what", "sensitivity", "noise", "count",
                                                         "sample_rate", "epsilon", "delta")},
                          "alternatives": [plan_to_json(a) for a in r.alternatives]} for r in plan.releases],
            "parts": [plan_to_json(p) for p in plan.parts], "void": plan.void, "neighbouring": plan.neighbouring}


def plan_from_json(data: dict, plan_type, release_type):
    """The plan :func:`plan_to_json` wrote, built with ``plan_type`` and ``release_type`` (the
    privacy module's ``NoisePlan`` and ``Release``: this module sits below it)."""
    releases = tuple(release_type(**{**{k: v for k, v in r.items() if k != "alternatives"},
                                     "alternatives": tuple(plan_from_json(a, plan_type, release_type)
                                                           for a in r.get("alternatives", ()))})
                     for r in data.get("releases", ()))
    return plan_type(releases, tuple(plan_from_json(p, plan_type, release_type) for p in data.get("parts", ())),
                     data.get("void"), data.get("neighbouring", NEIGHBOURING))
