"""Certify exported noise plans again (``certify --plan``): the documents ``run --plan-out``,
``tune --plan-out`` and a sweep's ``-plans.json`` write (:data:`~dpcore.privacy.core.DP_EVENTS_FORMAT`, or a
:data:`~dpcore.privacy.core.DP_EVENTS_LIST_FORMAT` list of them), each read and checked, its accounting
priced against the work budget before any of it runs (:func:`plan_work`, :func:`dp_accounting_work`),
then certified from the plan it holds, never from the figure it states: by this package's accountant
and, where it composes the events, by dp-accounting's ``PLDAccountant`` (:class:`PlanCertificate`).

Every name here is also :mod:`dpcore.certify.core`'s.

>>> from dpcore import privacy
>>> doc = privacy.dp_events_list([("one", privacy.gaussian("a sum", 2.0, 4.0), 1e-5)], [("two", "no run")])
>>> [(c.label, c.epsilon == doc["documents"][0]["certified"]["epsilon"]) for c in certify_plans(doc)][0]
('one', True)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import dp_accounting as dpa
import numpy as np

from ..privacy import accounting as acc
from ..privacy import core as P
# _v and _fmt: the short names the code reads (as in dpcore.certify.core)
from .params import CERTIFY_PARAMS, CURVE_DELTAS, FULL_CURVE_DELTAS, epsilon_curve, lowered_at
from .params import checked_param as _v
from .params import format_delta
from .params import format_epsilon as _fmt
from ..exceptions import BudgetError, ParameterError
from ..experiments.context import DEFAULT_WORK_BUDGET, Budget
from ..experiments.run import SECONDS_PER_OPERATION
from ..params import Interval, Param, check
from ..privacy.events import (DP_EVENTS_LIST_FORMAT, DP_EVENTS_VERSION, MAX_RELEASES, OWN_EVENTS, PlanError,
                          event_to_json, plan_releases)

__all__ = [
    "PlanCertificate",
    "MAX_PLAN_DOCUMENTS",
    "DP_ACCOUNTING_GRID",
    "Work",
    "certify_plan",
    "certify_plans",
    "prepare_plans",
    "PreparedPlans",
    "plan_work",
    "dp_accounting_work",
]

_NR = dpa.NeighboringRelation


# ---------------------------------------------------------------------------
# a noise plan exported as dp-accounting events (``run --plan-out``, ``tune --plan-out``, a sweep's
# ``-plans.json``): certified again from the plan it holds, never from the figure it states


@dataclass(frozen=True)
class PlanCertificate:
    """A :data:`~dpcore.privacy.core.DP_EVENTS_FORMAT` document certified afresh.  ε's are floats (``inf``:
    nothing proven); ``dp_accounting`` is ``None`` where dp-accounting cannot compose the events
    (``unsupported`` says which); ``curve`` is ε(δ), the running minimum over δ
    (:func:`~dpcore.certify.params.epsilon_curve`)."""

    label: str | None
    plan: str
    neighbouring: str
    delta: float
    epsilon: float
    stated: float | None
    stated_delta: float | None
    dp_accounting: float | None
    unsupported: str | None
    curve: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        e = _fmt
        lines = [(f"{self.label}: " if self.label else "") + self.plan,
                 f"  ε certified ({self.neighbouring}, this package's accountant) {e(self.epsilon)} at δ = "
                 f"{format_delta(self.delta)}"]
        if self.dp_accounting is not None:
            lines.append(f"  ε by dp-accounting's PLDAccountant (REPLACE_ONE) {e(self.dp_accounting)}")
        else:
            lines.append(f"  dp-accounting's figure: {self.unsupported}" if self.unsupported.startswith("not run")
                         else f"  dp-accounting cannot compose this plan: {self.unsupported}")
        if self.curve:
            lines.append("  ε(δ):  " + "   ".join(f"δ={_short_delta(c['delta'])}: {e(c['epsilon'])}"
                                                  for c in self.curve))
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _short_delta(delta: float) -> str:
    """A δ of a plan's curve in two digits where they read back as δ, else every digit it needs
    (0.999999, never 1)."""
    text = f"{delta:.2g}"
    return text if float(text) == delta else format_delta(delta)


def _own_events(event) -> list[str]:
    """The names of this package's own events inside ``event`` (dp-accounting does not know them)."""
    name = type(event).__name__
    if name in OWN_EVENTS:
        return [name]
    inner = list(getattr(event, "events", ())) + ([event.event] if hasattr(event, "event") else [])
    return sorted({n for e in inner for n in _own_events(e)})


def _dp_accounting_epsilon(plan, delta: float) -> tuple[float | None, str | None]:
    """dp-accounting's ``PLDAccountant`` (``REPLACE_ONE``) on ``plan``'s event: (ε, None), or (None,
    why not).  A plan of disjoint parts alone: each part composed there, the worst one."""
    if plan.parts and not plan.releases and len(plan.parts) > 1:
        found = [_dp_accounting_epsilon(p, delta) for p in plan.parts]
        why = next((w for _, w in found if w is not None), None)
        return (None, why) if why is not None else (max(e for e, _ in found), None)
    event = plan.event()
    own = _own_events(event)
    if own:
        return None, "it holds " + ", ".join(own) + " (this package's own events)"
    try:
        accountant = dpa.pld.PLDAccountant(_NR.REPLACE_ONE, value_discretization_interval=1e-4)
        accountant.compose(event)
        return float(accountant.get_epsilon(delta)), None
    except Exception as exc:  # an event dp-accounting's PLD has no rule for: said, not hidden
        return None, f"dp-accounting's PLDAccountant refused it ({type(exc).__name__}: {exc})"


#: the most documents one plan file may hold (a sweep's file has one per task: a few thousand)
MAX_PLAN_DOCUMENTS = 100_000
#: the relation and grid of dp-accounting's second figure (its ``PLDAccountant``)
DP_ACCOUNTING_GRID = 1e-4


def certify_plan(document: dict, delta: float | None = None, *, full_curve: bool = False,
                 budget: Any = None) -> PlanCertificate:
    """Certify a :meth:`~dpcore.privacy.core.NoisePlan.to_dp_events` document again: the plan it holds,
    at ``delta`` (default: the δ it states), by this package's accountant and, where it composes
    them, by dp-accounting's ``PLDAccountant`` under ``REPLACE_ONE``.  The ε the document states
    is compared, never used; a document whose event is not its plan's is said.  Refuses what is
    not such a document, a plan no accountant here would accept, and a plan whose accounting the
    work budget does not cover (:class:`~dpcore.exceptions.ParameterError`, one line).

    >>> from dpcore import privacy
    >>> doc = privacy.gaussian("a sum", 2.0, 4.0, count=10).to_dp_events(1e-5)
    >>> c = certify_plan(doc)
    >>> c.epsilon == doc["certified"]["epsilon"] and abs(c.dp_accounting / c.epsilon - 1) < 1e-3
    True
    """
    return certify_plans(document if isinstance(document, dict) else [], delta, full_curve=full_curve,
                         budget=budget, single=True)[0]


@dataclass(frozen=True)
class _Document:
    """One document of a plan file, read and checked (nothing certified yet)."""

    label: str | None
    plan: Any
    stated_delta: float | None
    stated_epsilon: float | None
    event: Any  # the event the document states (JSON), compared with its plan's


def _read_document(document: Any, where: str) -> _Document:
    """A :data:`~dpcore.privacy.core.DP_EVENTS_FORMAT` document read through the declarations
    (:mod:`dpcore.privacy.events`): ``ParameterError`` naming where and why otherwise."""
    prefix = f"{where}: " if where else ""
    if not isinstance(document, dict):
        raise ParameterError(f"certify --plan: {prefix}not a {P.DP_EVENTS_FORMAT} document (a JSON object)")
    try:
        plan = P.NoisePlan.from_dp_events(document)
    except PlanError as exc:
        raise ParameterError(f"certify --plan: not a valid {P.DP_EVENTS_FORMAT} document: {prefix}{exc}") from None
    except ValueError as exc:
        raise ParameterError(f"certify --plan: {prefix}{exc}") from None
    label = document.get("label")
    if label is not None and not isinstance(label, str):
        raise ParameterError(f"certify --plan: {prefix}its label must be a text, got {type(label).__name__}")
    stated = document.get("certified")
    if stated is None:
        stated = {}
    if not isinstance(stated, dict):
        raise ParameterError(f"certify --plan: {prefix}'certified' must be an object with its delta and epsilon")
    stated_delta, stated_eps = stated.get("delta"), stated.get("epsilon")
    try:
        if stated_delta is not None:
            stated_delta = check(CERTIFY_PARAMS["delta"], stated_delta, "certify --plan")
        if stated_eps is not None:
            stated_eps = check(_STATED_EPSILON, stated_eps, "certify --plan")
    except ParameterError as exc:
        raise ParameterError(f"certify --plan: {prefix}the stated certificate: {exc} "
                             "(null states no guarantee)") from None
    return _Document(label, plan, stated_delta, stated_eps, document.get("event"))


#: the ε a document states (``null``: none proven)
_STATED_EPSILON = Param("epsilon", Interval(float, 0.0, None, "left"), None, "the ε the document states")


def _read_file(document: Any, single: bool) -> list[_Document | tuple[str, str]]:
    """Every document of a file (one document, or a :data:`~dpcore.privacy.core.DP_EVENTS_LIST_FORMAT`
    list), and each task the list names as omitted (its label and reason), all read and checked."""
    if not single and isinstance(document, dict) and document.get("format") == DP_EVENTS_LIST_FORMAT:
        version = document.get("version")
        if type(version) is not int or version != DP_EVENTS_VERSION:
            raise ParameterError(f"certify --plan: {DP_EVENTS_LIST_FORMAT} version {version!r}: "
                                 f"this dpcore reads version {DP_EVENTS_VERSION}")
        docs, omitted = document.get("documents"), document.get("omitted") or []
        if not isinstance(docs, list) or not isinstance(omitted, list):
            raise ParameterError("certify --plan: 'documents' and 'omitted' must be lists")
        if not (docs or omitted):
            raise ParameterError("certify --plan: the list holds no documents")
        if len(docs) + len(omitted) > MAX_PLAN_DOCUMENTS:
            raise ParameterError(f"certify --plan: {len(docs) + len(omitted):,} documents; at most "
                                 f"{MAX_PLAN_DOCUMENTS:,} in one file: certify it in parts")
        out: list = []
        releases = 0
        for i, d in enumerate(docs):
            read = _read_document(d, f"documents[{i}]")
            releases += plan_releases(read.plan)
            if releases > MAX_RELEASES:
                raise ParameterError(f"certify --plan: more than {MAX_RELEASES:,} releases in one file (a sweep of "
                                     "thousands of runs holds a few thousand): certify it in parts")
            out.append(read)
        for i, o in enumerate(omitted):
            if not (isinstance(o, dict) and isinstance(o.get("label"), str) and isinstance(o.get("reason"), str)):
                raise ParameterError(f"certify --plan: omitted[{i}] must name a task's label and the reason "
                                     "it has no plan (texts)")
            out.append((o["label"], o["reason"]))
        return out
    if not isinstance(document, dict):
        raise ParameterError("certify --plan: the file holds no JSON object")
    return [_read_document(document, "")]


def certify_plans(document: dict, delta: float | None = None, *, full_curve: bool = False, budget: Any = None,
                  progress: Callable[[int, int, str], None] | None = None,
                  single: bool = False) -> list[PlanCertificate]:
    """:func:`certify_plan` on one document or on each of a :data:`~dpcore.privacy.core.DP_EVENTS_LIST_FORMAT`
    list (a task the list names as omitted, with no plan, is one with ε = ∞ and the list's reason).

    Every document is read and checked first (:mod:`dpcore.privacy.events`' declarations, at most
    :data:`MAX_PLAN_DOCUMENTS` documents and :data:`~dpcore.privacy.events.MAX_RELEASES` releases), then
    the accounting is priced (:func:`plan_work`) against ``budget`` (the work and memory budget of a
    run, :class:`~dpcore.experiments.context.Budget`; by default the environment's) before any of it
    runs: a file whose certificates it does not cover is refused in one line saying what to lower;
    dp-accounting's second figure, where it alone would not fit, is left out and said so.  Identical
    plans are certified once.  ``progress(done, total, label)`` hears of each document certified.
    (:func:`prepare_plans` is the first half: what may refuse, before anything is certified.)"""
    return prepare_plans(document, delta, full_curve=full_curve, budget=budget, single=single).certify(progress)


@dataclass
class PreparedPlans:
    """A plan file read, checked and priced within the budget (:func:`prepare_plans`): :meth:`certify`
    does the accounting, and refuses nothing more."""

    entries: list
    jobs: dict
    second: dict

    def certify(self, progress: Callable[[int, int, str], None] | None = None) -> list[PlanCertificate]:
        out: list[PlanCertificate] = []
        for i, entry in enumerate(self.entries):
            if isinstance(entry, tuple):
                out.append(PlanCertificate(entry[0], "no plan", "replace-one", math.nan, math.inf, None,
                                           None, None, entry[1], notes=["no plan was written"]))
            else:
                out.append(_certify_one(entry, self.jobs[i][0], self.jobs[i][1], self.second))
            if progress is not None:
                progress(i + 1, len(self.entries), out[-1].label or "the plan")
        return out


def prepare_plans(document: dict, delta: float | None = None, *, full_curve: bool = False, budget: Any = None,
                  single: bool = False) -> PreparedPlans:
    """The first half of :func:`certify_plans`: every document read and checked, the accounting priced
    against the budget (:class:`~dpcore.exceptions.ParameterError` or
    :class:`~dpcore.exceptions.BudgetError`, one line, before any of it runs)."""
    entries = _read_file(document, single)
    budget = Budget.from_environment() if budget is None else budget
    if budget.error:
        raise ParameterError(budget.error)
    if delta is not None:
        delta = _v("delta", delta)
    jobs: dict[int, tuple[float, list, bool]] = {}  # by document: its δ, its curve's δ's, whether at its δ
    priced: dict = {}  # each distinct plan once (identical plans share their results): every δ it is asked at
    for i, entry in enumerate(entries):
        if isinstance(entry, tuple):
            continue
        d = delta if delta is not None else (entry.stated_delta if entry.stated_delta is not None
                                             else CERTIFY_PARAMS["delta"].default)
        need = P.fixed_delta(entry.plan)
        curve = [x for x in sorted(set(FULL_CURVE_DELTAS if full_curve else CURVE_DELTAS) | {d}, reverse=True)
                 if x >= need]
        jobs[i] = (d, curve, d >= need and entry.plan.void is None)
        asked = priced.setdefault(entry.plan, set())
        asked.update(curve)
        if entry.stated_delta is not None and need <= entry.stated_delta < 1:
            asked.add(entry.stated_delta)
    # the price, before any accounting
    pricer = _Pricer()
    costs = {plan: plan_work(plan, sorted(ds), pricer) for plan, ds in priced.items()}
    ours = sum(c.seconds for c in costs.values())
    ours += sum(_DOCUMENT_SECONDS * (1 + plan_releases(entries[i].plan)) for i in jobs)
    memory = max((c.memory for c in costs.values()), default=0.0)
    _check_plan_budget(ours, memory, budget, len(jobs), full_curve)
    # dp-accounting's second figure, where what the budget leaves covers it (else said, not run)
    left = budget.work * SECONDS_PER_OPERATION - ours
    second: dict = {}
    for i, (d, _, wanted) in jobs.items():
        key = (entries[i].plan, d)
        if not wanted or key in second:
            continue
        cost = dp_accounting_work(key[0], pricer)
        if cost.seconds <= left and cost.memory <= budget.memory:
            left -= cost.seconds
            second[key] = None  # computed when its document comes
        else:
            second[key] = (None, f"not run: dp-accounting's PLDAccountant on its {DP_ACCOUNTING_GRID:g} grid "
                                 f"would take about {cost.seconds / SECONDS_PER_OPERATION:.1e} operations and "
                                 f"{cost.memory / 2**30:.2g} GiB, more than the budget leaves "
                                 "(DPCORE_WORK_BUDGET, DPCORE_MEMORY_BUDGET)")
    return PreparedPlans(entries, jobs, second)


def _certify_one(entry: _Document, delta: float, deltas: list, second: dict) -> PlanCertificate:
    plan = entry.plan
    need = P.fixed_delta(plan)
    eps = P.certify(plan, delta) if delta >= need else math.inf
    notes = [] if delta >= need else [f"the plan's published theorems spend δ = {need:.3g} by themselves: "
                                     "nothing is proven at this δ (ask at a larger one)"]
    stated_delta, stated_eps = entry.stated_delta, entry.stated_epsilon
    if stated_delta is not None and need <= stated_delta < 1:
        again = P.certify(plan, stated_delta)
        said = math.inf if stated_eps is None else float(stated_eps)
        if said != again:
            notes.append(f"the document states ε = {_fmt(said)} at δ = {stated_delta:g}, but its plan "
                         f"certifies {_fmt(again)}: the plan's figure is the one shown")
    event = plan.event()
    if entry.event != event_to_json(event):
        notes.append("the document's event is not its plan's: the plan's event is the one composed")
    ours, unsupported = None, None
    if delta < need:
        unsupported = "nothing to compose at this δ"
    elif plan.void is not None:
        unsupported = f"no guarantee ({plan.void})"
    else:
        key = (plan, delta)
        if second.get(key) is None:
            second[key] = _dp_accounting_epsilon(plan, delta)
        ours, unsupported = second[key]
        if ours is not None and plan.parts and not plan.releases and len(plan.parts) > 1:
            notes.append(f"dp-accounting composed each of the {len(plan.parts)} disjoint parts; the worst is shown "
                         "(it has no parallel composition)")
    curve = epsilon_curve(deltas, {"epsilon": lambda d: eps if d == delta else P.certify(plan, d)})
    notes += lowered_at(curve, delta)
    return PlanCertificate(entry.label, plan.describe(), plan.neighbouring, delta, eps,
                           stated_eps, stated_delta, ours, unsupported, curve, notes)


def _check_plan_budget(seconds: float, memory: float, budget, documents: int, full_curve: bool) -> None:
    """Refuse, before any accounting, certificates whose estimate exceeds the budget (what to lower)."""
    work = seconds / SECONDS_PER_OPERATION
    fewer = "certify fewer plans at once (split the file)" if documents > 1 else "certify a smaller plan"
    if full_curve:
        fewer += f", drop --json (its ε(δ) curve has {len(FULL_CURVE_DELTAS)} δ's, the text {len(CURVE_DELTAS)})"
    if memory > budget.memory:
        raise BudgetError(f"certify --plan: the accounting of this plan would hold about {memory / 2**30:.1f} GiB "
                          f"(budget {budget.memory / 2**30:.1f} GiB, DPCORE_MEMORY_BUDGET): its privacy loss spans "
                          "too wide a grid; " + fewer)
    if work > budget.work:
        raise BudgetError(f"certify --plan: certifying {documents:,} plan{'s' if documents != 1 else ''} is about "
                          f"{work:.1e} operations (budget {budget.work:.0e}, DPCORE_WORK_BUDGET; "
                          f"{DEFAULT_WORK_BUDGET:.0e} takes up to about {DEFAULT_WORK_BUDGET * SECONDS_PER_OPERATION / 60:.0f} "
                          f"minutes on 2 cores): {fewer}, or raise the budget")


# ---------------------------------------------------------------------------
# pricing a plan's accounting, before any of it runs (the work budget's units: SECONDS_PER_OPERATION)
#
# The accountants' cost is the privacy-loss distributions they build: points = the loss's width
# (nats) over the grid.  Each release's one-step loss has a mean m, a variance v and a width w: a
# Gaussian's N(μ²/2, μ²) with μ = Δ/σ, ±ε for a pure release, and a Poisson-sampled Gaussian's read
# off its one-step distribution on a 1e-2 grid (what pld_grid builds too; a few milliseconds unless
# the noise is tiny: within :data:`_PROBE_SECONDS`, else bounded by its χ² divergence q²(e^{μ²} − 1)).
# ``count`` of them compose, by FFT, to the width dp-accounting's truncation keeps (Chernoff bounds at
# orders k/w, k ≤ 20, tail 1e-15).  The seconds per point were measured on 2 shared cores
# (dp-accounting's Gaussian PLD at 1e-4: 43 s for 1.0e7 points; this package's sampled Gaussian:
# 3.1 s for 1.2e7; its composition of 100 sampled events at 1e-4: 18.6 s, 4.2e5 points each) and
# rounded up: an estimate within a small factor, mostly above, never a bound
# (tests/test_fuzz_files.py runs every plan it accepts under a time limit).

#: seconds per point of this package's PLD compositions, and of dp-accounting's ``PLDAccountant``
_SECONDS_PER_POINT = 5e-7
_DPA_SECONDS_PER_POINT = 2e-6
#: seconds per point of dp-accounting's δ(ε) at many ε's, a Python loop over the distribution's points and
#: the ε's (4.5 µs measured under load, a 6.3e5-point distribution at 4000 ε's: 2.9 s), which a choice among
#: plans reads for each of them (benchmarks/bench_certify_price.py)
_PROFILE_SECONDS_PER_POINT = 3e-6
#: seconds per event composed (building its distribution, whatever its size)
_SECONDS_PER_EVENT = 0.005
#: bytes a point of a distribution costs while it is composed (complex FFT buffers, copies)
_BYTES_PER_POINT = 64
#: seconds of a closed form (μ-GDP, a Rényi bound), and per privacy-loss value of the exact profile
#: of Gaussians with randomized responses (its root search evaluates each value ~100 times)
_CLOSED_FORM_SECONDS = 0.01
_EXACT_RR_SECONDS = 6e-4
#: seconds per document and per release of it (its event, its description, its curve's lookups)
_DOCUMENT_SECONDS = 2e-5
#: the standard deviations a distribution keeps each side (this package truncates at e^-50)
_TAILS = 10.0
_LOG_TAIL = math.log(2 / 1e-15)  # dp-accounting's truncation of a composition
#: at most this many seconds of one-step distributions read while pricing one file (1.8e-5/z² each)
_PROBE_SECONDS = 2.0


@dataclass(frozen=True)
class Work:
    """The estimated cost of an accounting: ``seconds`` on 2 cores, ``memory`` bytes held at once."""

    seconds: float = 0.0
    memory: float = 0.0

    def __add__(self, other: "Work") -> "Work":
        return Work(self.seconds + other.seconds, max(self.memory, other.memory))

    def __mul__(self, k: float) -> "Work":
        return Work(self.seconds * k, self.memory)


def _points(width: float, grid: float) -> float:
    return width / grid + 1.0


def _pld(points: float, per: float = _SECONDS_PER_POINT) -> Work:
    return Work(per * points + _SECONDS_PER_EVENT, _BYTES_PER_POINT * points)


def _power_seconds(count: int) -> float:
    """dp-accounting's self-composition of a sparse distribution (≤ 1000 points) first computes
    ``size ** count``, an integer of 3·count digits: 0.8 s at 10⁶, 32 s at 10⁷ (measured), ~count^1.6."""
    return 0.8 * (count / 1e6) ** 1.6 if count > 1 else 0.0


def _composed(m: float, v: float, w: float, count: int) -> float:
    """The width of ``count`` compositions of a loss (mean m, variance v, width w) that dp-accounting's
    FFT keeps: its Chernoff bounds at orders k/w (k = 1 … 20), tail 1e-15 each side."""
    if v <= 0 or w <= 0:
        return max(w, 0.0)
    theta = min(max(math.sqrt(2 * _LOG_TAIL / (count * v)), 1.0 / w), 20.0 / w)
    half = count * v * theta / 2 + _LOG_TAIL / theta
    return min(count * w, 2 * half + w)


# pure: one sampled Gaussian step's privacy loss on a fixed grid, from its arguments
@functools.lru_cache(maxsize=4096)
def _one_step(noise_multiplier: float, sample_rate: float) -> tuple[bool, float, float, float]:
    """A Poisson-sampled Gaussian step's privacy loss (replace-one) on a 1e-2 grid, as
    :func:`~dpcore.privacy.accounting.pld_span` reads it: (sparse, mean, variance, width)."""
    pmf = acc.sampled_gaussian_pld(noise_multiplier, min(sample_rate, 1.0), 1e-2)._pmf_remove
    if hasattr(pmf, "_probs"):
        probs = np.asarray(pmf._probs, dtype=float)
        losses = (pmf._lower_loss + np.arange(probs.size)) * 1e-2
    else:
        keys = sorted(getattr(pmf, "_loss_probs", {}))
        probs = np.asarray([pmf._loss_probs[k] for k in keys], dtype=float)
        losses = np.asarray(keys, dtype=float) * 1e-2
    if probs.size == 0 or probs.sum() <= 0:
        return True, 0.0, 0.0, 1e-2
    probs = probs / probs.sum()
    mean = float(losses @ probs)
    return (not hasattr(pmf, "_probs"), mean, float(((losses - mean) ** 2) @ probs),
            float(losses.max() - losses.min()) + 1e-2)


class _Pricer:
    """Prices :func:`dpcore.privacy.core.certify` and dp-accounting's ``PLDAccountant`` on plans, route by
    route, reading Poisson-sampled steps' distributions while :data:`_PROBE_SECONDS` last."""

    def __init__(self):
        self.allowance = _PROBE_SECONDS
        self.read_steps: set = set()

    def step(self, release) -> tuple[float, float, float]:
        """A release's one-step privacy loss (replace-one): its mean, variance and width (nats)."""
        if release.kind in ("gaussian", "sampled-gaussian"):
            mu = min(release.sensitivity / release.noise, 1e100) if release.noise > 0 else 1e100
            if release.kind == "gaussian" or release.sample_rate >= 1:
                return mu * mu / 2, mu * mu, 2 * _TAILS * mu + 1e-3
            read = self.read(release)
            if read is not None:
                return read[1], read[2], read[3]
            q = release.sample_rate
            chi2 = q * q * math.expm1(min(mu * mu, 700.0))
            return (min(mu * mu / 2, math.log1p(chi2)), min(mu * mu * (1 + mu * mu / 4), chi2),
                    mu * mu / 2 + 2 * _TAILS * mu + 1e-3)
        if release.kind == "any-of":
            parts = [self.spread(alt.releases) for alt in release.alternatives]
            return (max((p[0] for p in parts), default=0.0), max((p[1] for p in parts), default=0.0),
                    max((p[2] for p in parts), default=0.0) + 1e-3)
        if release.kind == "gamma-norm":
            eps = min(release.sensitivity / release.noise, 1e100) if release.noise > 0 else 1e100
        else:
            eps = release.epsilon or 0.0
        return eps, eps * eps, 2 * eps + 1e-3

    def read(self, release) -> tuple[bool, float, float, float] | None:
        """:func:`_one_step` of a sampled Gaussian release, if the allowance covers it (else None)."""
        z, q = release.noise_multiplier, release.sample_rate
        if not (z and acc.PLD_MIN_MULTIPLIER <= z and q < 1):
            return None
        if (z, q) not in self.read_steps:
            cost = 1.8e-5 / (z * z) + 1e-3
            if cost > self.allowance:
                return None
            self.allowance -= cost
            self.read_steps.add((z, q))
        return _one_step(z, q)

    def spread(self, releases) -> tuple[float, float, float]:
        """Composed releases' privacy loss: its mean, variance and width (nats)."""
        m = v = widths = top = 0.0
        for r in releases:
            m1, v1, w1 = self.step(r)
            m += r.count * m1
            v += r.count * v1
            widths += _composed(m1, v1, w1, r.count)
            top = max(top, w1)
        return m, v, min(widths, 2 * math.sqrt(2 * _LOG_TAIL * v) + 4 * top)

    def composition(self, releases, grid: float, per: float = _SECONDS_PER_POINT) -> Work:
        """A PLD accountant composing ``releases`` on ``grid``: each one's one-step distribution, its
        self-composition, and its convolution with what came before."""
        _, _, total = self.spread(releases)
        work = Work()
        for r in releases:
            m1, v1, w1 = self.step(r)
            work += _pld(_points(w1, grid) + _points(_composed(m1, v1, w1, r.count), grid)
                         + _points(total, grid), per)
            work += Work(_power_seconds(r.count))
            if r.kind == "any-of":  # each alternative composed, its privacy profile read at ≤ 4000 dots
                for alt in r.alternatives:
                    work += self.composition(alt.releases, grid, per) * 2
                    points = _points(self.spread(alt.releases)[2], grid)
                    work += Work(_PROFILE_SECONDS_PER_POINT * (points + P.CHOICE_DOTS))
        return work

    def sampled(self, release, delta: float) -> Work:
        """:func:`dpcore.privacy.accounting.sampled_gaussian_epsilon`: one Poisson-sampled Gaussian, ``count``
        steps, on the grid :func:`~dpcore.privacy.accounting.pld_grid` chooses (a 1e-2 one-step PLD first)."""
        z, q, T = release.noise_multiplier, release.sample_rate, release.count
        if not z or z <= 0 or acc.never_sampled(q, T) <= delta:
            return Work(_CLOSED_FORM_SECONDS)
        if delta < acc.PLD_MIN_DELTA:  # the anchor at the PLD's smallest δ, bridged by the Rényi route
            return self.sampled(release, acc.PLD_MIN_DELTA) + Work(4 * _CLOSED_FORM_SECONDS)
        if z < acc.PLD_MIN_MULTIPLIER or q >= 1:
            return Work(_CLOSED_FORM_SECONDS)
        m1, v1, w1 = self.step(release)
        work = _pld(_points(w1, 1e-2)) + Work(_power_seconds(T))  # pld_span's one-step distribution; the power
        read = self.read(release)
        grid = acc.PLD_DISCRETIZATION
        if read is not None:  # pld_grid itself: 1e-3 for a sparse step, else the span over 2·10⁶ points
            if not read[0]:
                grid = max(grid, (T * abs(m1) + 20 * math.sqrt(T * v1)) / 2e6)
                if grid > 0.5:
                    return work + Work(_CLOSED_FORM_SECONDS)
            return work + _pld(_points(w1, grid) + _points(_composed(m1, v1, w1, T), grid))
        # unread (tiny noise, or the allowance spent): the larger of a dense step's ≤ 4·10⁶ points and a
        # sparse one's (width at most 10 at 1e-2) on 1e-3
        dense = min(_points(_composed(m1, v1, w1, T), grid), 4e6)
        sparse = _points(_composed(m1, min(v1, 25.0), min(w1, 10.0), T), grid)
        return work + _pld(min(_points(w1, grid), 4e6) + max(dense, sparse))

    def certify(self, plan, delta: float) -> Work:
        """:func:`dpcore.privacy.core.certify` ``(plan, delta)``, route by route."""
        if plan.void is not None:
            return Work()
        work = Work()
        for part in plan.parts:
            work += self.certify(part, delta)
        if not plan.releases:
            return work
        rr = [r for r in plan.releases if r.kind == "randomized-response" and r.epsilon >= P.FAINT_RR]
        gauss = [r for r in plan.releases if r.kind in ("gaussian", "sampled-gaussian", "any-of")]
        rest = delta - sum(r.count * r.delta for r in plan.releases if r.kind == "theorem")
        work += Work(_CLOSED_FORM_SECONDS + 1e-6 * len(plan.releases))
        if not gauss or not rest > 0:
            return work
        if not rr and all(r.kind == "gaussian" for r in gauss):
            return work
        if not rr and len(gauss) == 1 and gauss[0].kind == "sampled-gaussian":
            return work + self.sampled(gauss[0], rest)
        responses = sum(r.count for r in rr)
        if all(r.kind == "gaussian" for r in gauss) and responses <= P.MAX_EXACT_RR:
            return work + Work(_EXACT_RR_SECONDS * _rr_values(rr))
        if rest < acc.PLD_MIN_DELTA:  # each release on its own, each choice's alternatives
            for r in gauss:
                if r.kind == "any-of":
                    for alt in r.alternatives:
                        work += self.certify(alt, rest / max(1, len(gauss)) / r.count)
                else:
                    work += self.certify(P.NoisePlan((r,)), rest / max(1, len(gauss)))
            return work + Work(_EXACT_RR_SECONDS * _rr_values(rr) if responses <= P.MAX_EXACT_RR else 0.0)
        if all(r.kind != "any-of" for r in gauss) and P.gdp_mu(gauss) > P.PLD_MAX_MU:
            return work
        m, v, _ = self.spread(gauss + rr)
        # _pld_epsilon's grids: 0.05, then 1e-4 of the ε found there (read as a Gaussian loss's at rest)
        fine = min(0.05, 1e-4 * max(1.0, m + math.sqrt(2 * v * math.log(1 / rest))))
        return work + self.composition(gauss + rr, 0.05) + self.composition(gauss + rr, fine)

    def dp_accounting(self, plan) -> Work:
        """dp-accounting's ``PLDAccountant`` on ``plan`` (:func:`_dp_accounting_epsilon`)."""
        if plan.void is not None:
            return Work()
        if plan.parts and not plan.releases and len(plan.parts) > 1:  # as _dp_accounting_epsilon: part by part
            work = Work()
            for part in plan.parts:
                work += self.dp_accounting(part)
            return work
        if _own_events(plan.event()):
            return Work()
        releases = list(plan.releases) + [r for p in plan.parts for r in p.releases]
        return self.composition(releases, DP_ACCOUNTING_GRID, _DPA_SECONDS_PER_POINT)


def _rr_values(rr) -> float:
    """The privacy-loss values of the exact profile: ∏ (count + 1) over the distinct ε's."""
    counts: dict[float, int] = {}
    for r in rr:
        counts[r.epsilon] = counts.get(r.epsilon, 0) + r.count
    return math.prod(min(c + 1, 1e6) for c in counts.values())


def plan_work(plan, deltas, pricer: _Pricer | None = None) -> Work:
    """The estimated cost of :func:`dpcore.privacy.core.certify` on ``plan`` at each of ``deltas``: priced
    at the smallest, the middle and the largest of them (the routes change with δ at the ends),
    their mean for each."""
    pricer = _Pricer() if pricer is None else pricer
    deltas = sorted(deltas)
    if not deltas:
        return Work()
    per = [pricer.certify(plan, d) for d in {deltas[0], deltas[len(deltas) // 2], deltas[-1]}]
    return Work(sum(w.seconds for w in per) / len(per) * len(deltas), max(w.memory for w in per))


def dp_accounting_work(plan, pricer: _Pricer | None = None) -> Work:
    """The estimated cost of dp-accounting's ``PLDAccountant`` on ``plan`` (:func:`_dp_accounting_epsilon`)."""
    return (_Pricer() if pricer is None else pricer).dp_accounting(plan)
