"""A tuning's privacy cost, as far as its certificate needs: what a search runs and what that certifies.

:func:`dpcore.experiments.tune.tune` searches each mechanism's grid (:func:`search_space`) on a
validation split (:func:`validation_split`), chooses privately and trains the choice; what that costs is
a function of the settings alone, computed here once (:func:`search_spent`, composing :func:`search_plan`)
for the two who need it: :func:`~dpcore.experiments.tune.tune`, which writes ε spent and δ spent into
its record, and :func:`~dpcore.experiments.tune.check_tuning`, which recomputes them when a shipped
record is read (:func:`check_search_costs`; issue 67: a record whose ε spent had been edited to its
certified ε × 1.000123, its hash listed again in the manifest, was shown 16× cheaper than its search).

Its names are :mod:`dpcore.experiments.tune`'s too (it imports them): this module holds what the
tuning's reader and writer share, below both.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import fields, replace
from typing import Any

import numpy as np

from .. import datasets as _datasets
from ..numerics import streams
from ..datasets import Dataset
from ..exceptions import DPCoreError, ParameterError
from .context import Context
from .run import RunSpec, noise_plan
from ..mechanisms import REGISTRY
from ..params import validate
from ..partition import record_split
from ..privacy.core import (NoisePlan, any_of, certificate_error, certify, compose, fixed_delta, parallel, same_certificate,
                      theorem)

__all__ = ["TUNABLE_FAMILIES", "RELEASE_FAMILIES", "SEARCH_SPACES", "search_space", "candidates", "validation_split",
           "validation_positions", "released_tunable", "search_spent", "search_cost", "search_plan",
           "check_search_costs", "check_released_costs", "check_tuning_spent", "PLAN_FREE", "SearchPlans", "one_read", "plan_of"]

#: Families whose runs release one flat privacy event (composable across candidates).
TUNABLE_FAMILIES = ("output", "objective", "gradient")

#: Families that release the records themselves: tuned for free, on what they released.
RELEASE_FAMILIES = ("input", "local")

_LAMBDAS = (1e-4, 1e-3, 3e-3, 1e-2, 3e-2)

#: The grids, per mechanism (logistic and linear regression).  T and η widen Yu et al.'s
#: {50, 200, 800} × {0.1, 1, 5}; λ spans the values at which output and objective
#: perturbation are known to work on the bundled tabular data.
SEARCH_SPACES: dict[str, dict[str, tuple]] = {
    "output-laplace": {"lam": _LAMBDAS},
    "output-gaussian": {"lam": _LAMBDAS},
    "output-bolt-on": {"lam": _LAMBDAS},
    "objective-chaudhuri": {"lam": _LAMBDAS},
    "objective-gaussian": {"lam": _LAMBDAS},
    "gradient-dpgd": {"iterations": (50, 200, 800), "learning_rate": (0.5, 1.0, 2.0, 5.0),
                      "clip_norm": (0.5, 1.0), "lam": (1e-4,)},
    "gradient-dpsgd": {"iterations": (200, 800), "learning_rate": (1.0, 2.0, 5.0),
                       "sample_rate": (0.01, 0.05), "lam": (1e-4,)},
    "gradient-bassily": {"iterations": (200, 1000, 5000), "learning_rate": (0.1, 0.5, 2.0), "lam": (1e-4,)},
    "gradient-lssgd": {"iterations": (200, 800), "learning_rate": (1.0, 2.0, 5.0),
                       "sample_rate": (0.01, 0.05), "lam": (1e-4,)},
}


def search_space(mechanism: str, model: str = "logreg") -> dict[str, tuple]:
    """The grid :func:`~dpcore.experiments.tune.tune` searches for ``mechanism`` (RunSpec field → values)."""
    if mechanism not in REGISTRY:
        raise ParameterError(f"unknown mechanism {mechanism!r}; see `dpcore mechanisms`")
    cls = REGISTRY[mechanism]
    if not cls.private:
        raise ParameterError(f"{mechanism} is not private: there is nothing to tune against a budget")
    if cls.family in RELEASE_FAMILIES and released_tunable(mechanism):
        raise ParameterError(f"{mechanism} releases its records: it is tuned for free on them "
                             "(tune_released), not by a paid search")
    if cls.family not in TUNABLE_FAMILIES:
        raise ParameterError(
            f"tuning covers the central mechanisms ({', '.join(TUNABLE_FAMILIES)} families); "
            f"{mechanism} is a {cls.family} mechanism, whose privacy is per client or per record part")
    if model == "mlp":
        raise ParameterError("tuning the MLP is not offered: each of its candidates takes minutes here; "
                             "tune a linear model (logreg or linreg)")
    return dict(SEARCH_SPACES[mechanism])


def check_tune_arguments(mechanisms, epsilons, grids, seed) -> None:
    """:func:`~dpcore.experiments.tune.tune`'s arguments of the wrong kind, refused in one line (issue 67's
    campaign: a lone ε, a grid naming no setting, a list for the grids, a negative seed were tracebacks)."""
    for name, value in (("mechanisms", mechanisms), ("epsilons", epsilons)):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise ParameterError(f"tune: {name} must be a list, e.g. {['output-gaussian'] if name == 'mechanisms' else [0.1, 1.0]}. "
                                 f"Got {value!r:.60} instead.")
    if grids is not None:
        settings = {f.name for f in fields(RunSpec)} - {"dataset", "model", "mechanism", "epsilon", "delta", "stream"}
        if not isinstance(grids, Mapping) or not all(isinstance(g, Mapping) for g in grids.values()):
            raise ParameterError(f"tune: grids must map a mechanism to {{setting: values}}. Got {grids!r:.60} instead.")
        for mech, grid in grids.items():
            unknown = sorted(str(k) for k in grid if k not in settings)
            if unknown:
                raise ParameterError(f"tune: the grid of {mech} names {unknown[0]!r}, not a setting of a run "
                                     f"({', '.join(sorted(settings))})")
            if not all(isinstance(v, Iterable) and not isinstance(v, (str, bytes)) for v in grid.values()):
                raise ParameterError(f"tune: each setting of the grid of {mech} needs a list of values")
    validate("seed", seed, "tune")


def candidates(base: RunSpec, space: dict[str, tuple]) -> list[RunSpec]:
    """``base`` with every combination of the grid's values."""
    names = sorted(space)
    return [replace(base, **dict(zip(names, values))) for values in itertools.product(*(space[k] for k in names))]


# pure: a seeded split of the dataset it is given
@functools.lru_cache(maxsize=8)
def validation_split(dataset: _datasets.Dataset, fraction: float = 0.2, seed: int = 0) -> _datasets.Dataset:
    """The training rows split into a training part (``X_train``) and a validation part
    (``X_test``), by a seeded permutation of positions: which part a record falls in does
    not depend on the data, so the two parts compose in parallel.  The test split is not
    touched.  The same arguments give the same object (its exact ERM is kept once)."""
    fraction = validate("test_fraction", fraction, "validation_split")
    n = dataset.n
    n_val = int(round(fraction * n))
    if n_val < 1 or n - n_val < 2:
        raise ParameterError(f"{dataset.id} has {n} training rows: too few for a validation split of {fraction:g}")
    train, val = validation_positions(n, fraction, seed)
    X_tr, y_tr, X_va, y_va = (dataset.X_train[train], dataset.y_train[train],
                              dataset.X_train[val], dataset.y_train[val])
    for a in (X_tr, y_tr, X_va, y_va):
        a.setflags(write=False)
    return replace(dataset, X_train=X_tr, y_train=y_tr, X_test=X_va, y_test=y_va,
                   notes=dataset.notes + (f"validation split: {n - n_val} training and {n_val} validation "
                                          f"rows of the training split (seed {seed})",))


@record_split("tuning (validation part)", record_independent=True,
              certifies=("the search's cost composes the training part and the validation part in parallel: "
                         "a seeded permutation of positions decides which part holds a record"))
def _validation_parts(X, y, seed):
    return list(validation_positions(len(y), 0.2, seed))


def validation_positions(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(training, validation) row positions of :func:`validation_split`: a seeded permutation
    of the positions, so which part holds a record never depends on the records."""
    n_val = int(round(fraction * n))
    order = np.random.default_rng([seed, streams.TUNE_SPLIT]).permutation(n)
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def released_tunable(mechanism: str) -> bool:
    """Whether ``mechanism`` releases its records and can choose its settings on them for free
    (it declares the option ``tune_on_release``)."""
    cls = REGISTRY.get(mechanism)
    return cls is not None and cls.family in RELEASE_FAMILIES and "tune_on_release" in cls.options


#: RunSpec fields of a search's grid that a mechanism's noise plan does not read, so settings that differ only
#: in them share one plan, computed once (:class:`SearchPlans`): the step size of the gradient mechanisms
#: (their noise is calibrated on T, the sampling and the clipping; η only moves the iterate).  Every
#: mechanism's ``repeats`` is left out too: a plan is one run's (the search composes it ``repeats`` times,
#: :func:`search_plan`'s ``times``).  ``tests/test_tuning_spent.py`` holds each declaration to the plans
#: :func:`~dpcore.experiments.run.noise_plan` computes over the whole grid.
PLAN_FREE: dict[str, tuple[str, ...]] = {
    "gradient-dpgd": ("learning_rate",),
    "gradient-dpsgd": ("learning_rate",),
    "gradient-bassily": ("learning_rate",),
    "gradient-lssgd": ("learning_rate",),
}


def _plan_key(spec: RunSpec) -> RunSpec:
    """``spec`` with the fields its plan does not read (:data:`PLAN_FREE`, ``repeats``) at one value."""
    canonical = {name: getattr(RunSpec, name) for name in PLAN_FREE.get(spec.mechanism, ())}  # the defaults
    return replace(spec, repeats=1, **canonical)


class SearchPlans:
    """The noise plans one read of a tuning (or one search) computes, each once: a setting's plan
    (:func:`~dpcore.experiments.run.noise_plan`, its noise calibrated) is kept by the setting, less the
    fields it does not read (:data:`PLAN_FREE`), and by the dataset it runs on.  A read of Adult's tuning
    asks for 1059 plans (its 56 searches' and its rows' final runs'), 587 of them distinct: DP-GD's 24
    candidates are 6 plans per split (η does not enter them), and a row's final run is the one its
    certificate check (``check_tuning``) computed.

    Held by one read only (:func:`one_read`) or one call of :func:`search_spent`, never by the module:
    what it keeps is let go with the read."""

    def __init__(self) -> None:
        self._plans: dict[tuple[RunSpec, int | None], NoisePlan] = {}
        self._datasets: dict[int, Dataset] = {}  # held, so an id is not reused while its plan is kept
        self.asked = 0  # how many plans were asked for (tests: what the sharing saved)

    def __len__(self) -> int:
        return len(self._plans)

    def plan(self, spec: RunSpec, ctx: Context | None = None, dataset: Dataset | None = None) -> NoisePlan:
        """:func:`~dpcore.experiments.run.noise_plan` ``(spec, ctx, dataset=dataset)``, computed once per
        plan."""
        self.asked += 1
        key = (_plan_key(spec), None if dataset is None else id(dataset))
        plan = self._plans.get(key)
        if plan is None:
            plan = noise_plan(spec, ctx, dataset=dataset)
            if dataset is not None:
                self._datasets[id(dataset)] = dataset
            self._plans[key] = plan
        return plan


#: the plans of the read under way (:func:`one_read`), if any
_READ: contextvars.ContextVar[SearchPlans | None] = contextvars.ContextVar("dpcore_tuning_read", default=None)


@contextlib.contextmanager
def one_read() -> Iterator[SearchPlans]:
    """Within it, every plan :func:`plan_of` and :func:`search_spent` compute is computed once
    (:class:`SearchPlans`): one read of a record (:func:`~dpcore.experiments.tune.check_tuning`).  Nested,
    the outer read's plans are shared."""
    held = _READ.get()
    if held is not None:
        yield held
        return
    plans = SearchPlans()
    token = _READ.set(plans)
    try:
        yield plans
    finally:
        _READ.reset(token)


def plan_of(spec: RunSpec, ctx: Context | None = None, dataset: Dataset | None = None) -> NoisePlan:
    """``spec``'s noise plan (:func:`~dpcore.experiments.run.noise_plan`), from the read under way's
    plans when there is one (:func:`one_read`)."""
    plans = _READ.get()
    return noise_plan(spec, ctx, dataset=dataset) if plans is None else plans.plan(spec, ctx, dataset)


def search_spent(searched: Sequence[RunSpec], *, final_repeats: int, split: Dataset, selection_epsilon: float,
                 ctx: Context | None = None, dataset: Dataset | None = None, plans: SearchPlans | None = None
                 ) -> tuple[float, float, NoisePlan, list[NoisePlan]]:
    """What a search cost, from its settings alone: ``(ε spent, δ spent, the whole search's plan, each
    candidate's plan)``.  ``searched``: the candidates that ran (each at the target ε and δ, run
    ``repeats`` times on ``split``'s training part, :func:`validation_split`); the choice among them at
    ``selection_epsilon``; the final run of any of them (``final_repeats`` runs on the whole training
    split of ``dataset``, a user's own, or the registered one the specs name).

    Every plan is the one the setting declares (:func:`~dpcore.experiments.run.noise_plan`, what its
    runs release), so :func:`~dpcore.experiments.tune.tune`, which computes the figure, and
    :func:`~dpcore.experiments.tune.check_tuning`, which recomputes it from a record, call this one
    function (:func:`search_plan`, certified).  Each distinct plan is computed once (:class:`SearchPlans`:
    ``plans``, else the read's, :func:`one_read`, else this call's own): the same plans, so the same ε."""
    if plans is None:
        plans = _READ.get()
    if plans is None:
        plans = SearchPlans()
    candidate_plans = [plans.plan(s, ctx, split) for s in searched]
    finals = [plans.plan(replace(s, repeats=final_repeats), ctx, dataset) for s in searched]
    whole, delta_spent = search_plan(candidate_plans, [s.repeats for s in searched], finals, selection_epsilon,
                                     searched[0].delta)
    return certify(whole, delta_spent), delta_spent, whole, candidate_plans


def search_cost(plans, times, final_plans, selection_epsilon: float, delta: float) -> tuple[float, float]:
    """(ε, δ) of "search, choose privately, train the choice" (:func:`search_plan`, certified)."""
    whole, delta_spent = search_plan(plans, times, final_plans, selection_epsilon, delta)
    return certify(whole, delta_spent), delta_spent


def search_plan(plans, times, final_plans, selection_epsilon: float, delta: float) -> tuple[NoisePlan, float]:
    """The noise plan of "search, choose privately, train the choice", and the δ it is certified
    at: a training record is in every
    candidate run (``times[k]`` runs of ``plans[k]``) and the final run; a validation record
    only in the choice (pure ``selection_epsilon``) and the final run.  Parallel parts: the
    worse counts.  δ: the target plus what the composed theorems spend.

    ``final_plans``: the plan of the final run for each setting the choice could pick (one plan:
    a search with one possible final).  The choice reads the data, so the final run is
    certified as any of them (:func:`~dpcore.privacy.core.any_of`), never as the one that was picked.

    Settings whose final runs declare the same plan (DP-SGD's step sizes: its noise does not depend
    on η) are one alternative of the choice: the worst of copies of a plan is that plan, and the PLD
    accountant builds the pointwise worst profile of the distinct plans only (Adult's DP-SGD searches:
    4 plans instead of 12, the same ε to the last bit, 3–5× faster)."""
    if isinstance(final_plans, NoisePlan):
        final_plans = [final_plans]
    final_plan = any_of("the final run of the chosen setting", list(dict.fromkeys(final_plans)))
    train_part = compose(list(plans) + [final_plan], list(times) + [1])
    validation_part = compose([theorem("the private choice among candidates", selection_epsilon), final_plan])
    whole = parallel([train_part, validation_part])
    return whole, delta + fixed_delta(whole)


#: what :func:`~dpcore.experiments.tune.tune` records of how its searches ran (``search`` in
#: :meth:`~dpcore.experiments.tune.TuneResult.to_dict`)
_SEARCH_FIELDS = ("repeats", "final_repeats", "validation_fraction", "seed", "selection_epsilon")
#: a candidate's fields besides its setting (``candidates`` in a record)
_CANDIDATE_FIELDS = frozenset({"mechanism", "epsilon", "validation_accuracy", "epsilon_certified", "chosen"})
#: δ spent is the target plus the theorems' δ's: rounding only (docs/spec.md, §9.1)
_DELTA_RTOL = 1e-12


def _same_delta(stored: Any, recomputed: float) -> bool:
    return (not isinstance(stored, bool) and isinstance(stored, (int, float))
            and abs(stored - recomputed) <= _DELTA_RTOL * recomputed)


def check_released_costs(doc: dict[str, Any], row: dict[str, Any]) -> None:
    """A choice on released records is post-processing: ε spent is the certified ε, δ spent the target δ."""
    where = f"{row['mechanism']} at ε = {row['epsilon']!r}"
    if row.get("epsilon_spent") != row.get("epsilon_certified"):
        raise ValueError(f"{where}: ε spent {row.get('epsilon_spent')!r} is not its certified ε "
                         f"{row.get('epsilon_certified')!r} (a choice on released records is free)")
    if not _same_delta(row.get("delta_spent"), float(doc["delta"])):
        raise ValueError(f"{where}: δ spent {row.get('delta_spent')!r} is not the target δ {doc['delta']!r}")


def _search_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The record's ``search`` (how its searches ran), each value of its declared type and range."""
    search = doc.get("search")
    if not isinstance(search, dict) or set(search) != set(_SEARCH_FIELDS):
        raise ValueError(f"it does not say how its searches ran (`search`: {', '.join(_SEARCH_FIELDS)}), "
                         "so their ε spent cannot be recomputed")
    try:
        return {"repeats": validate("repeats", search["repeats"], "search"),
                "final_repeats": validate("repeats", search["final_repeats"], "search"),
                "validation_fraction": validate("test_fraction", search["validation_fraction"], "search"),
                "seed": validate("seed", search["seed"], "search"),
                "selection_epsilon": None if search["selection_epsilon"] is None
                else validate("epsilon", search["selection_epsilon"], "search")}
    except ParameterError as exc:
        raise ValueError(f"its search: {exc}") from None


def check_search_costs(doc: dict[str, Any], dataset: str, model: str, only=None) -> None:
    """Every searched row's candidates are its mechanism's whole grid, one of them chosen (the row's
    setting), each certified as this code certifies it; and its ε spent and δ spent are what
    :func:`search_spent` computes from them, run as the record's ``search`` says, within the
    accountant's error (:func:`~dpcore.privacy.core.same_certificate`; δ: 1e-12, relative).  ``doc`` has
    passed :func:`~dpcore.experiments.tune.check_tuning`'s checks of its fields and ranges.  Raises
    ``ValueError`` (one line) saying what is wrong.  ``only``: the searched rows to recompute, as
    (mechanism, ε) pairs (default: every row)."""
    with one_read():
        _check_search_costs(doc, dataset, model, only)


def check_tuning_spent(doc: dict[str, Any], dataset: str, model: str, only=None) -> dict[str, Any]:
    """``doc``'s ε spent and δ spent, recomputed: its released rows' (:func:`check_released_costs`) and its
    searches' (:func:`check_search_costs`).  ``doc`` has passed ``check_tuning(..., spent=False)``
    (:func:`~dpcore.experiments.tune.check_tuning`); what :func:`~dpcore.experiments.tune.shipped_tuning`
    runs only for a reader who asks for the spent figures.  ``only``: the searched rows whose searches are
    recomputed, as (mechanism, ε) pairs (default: every row; a row's search takes 0.1–8 s on Adult).  Raises
    ``ValueError`` (one line)."""
    with one_read():
        for row in doc.get("released_rows", []):
            if "error" not in row:
                check_released_costs(doc, row)
        if doc.get("rows") or doc.get("candidates"):
            check_search_costs(doc, dataset, model, only)
    return doc


def _check_search_costs(doc: dict[str, Any], dataset: str, model: str, only=None) -> None:
    search = _search_of(doc)
    try:
        n_train, n_validation = _split_sizes(dataset, search["validation_fraction"], search["seed"])
    except (DPCoreError, ValueError) as exc:
        raise ValueError(f"its validation split is not one this code makes ({exc})") from None
    if doc.get("n_train") != n_train or doc.get("n_validation") != n_validation:
        raise ValueError(f"its searches ran on {doc.get('n_train')!r} training rows, {doc.get('n_validation')!r} of "
                         f"them for validation; {dataset}'s split at a validation fraction of "
                         f"{search['validation_fraction']:g} has {n_train} and {n_validation}")
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for c in doc.get("candidates", []):
        groups.setdefault(_search_key_of(c, "a candidate"), []).append(c)
    rows: dict[tuple[Any, Any], dict[str, Any]] = {}
    for row in doc.get("rows", []):
        key = _search_key_of(row, "a row")
        if key in rows:
            raise ValueError(f"{key[0]} at ε = {key[1]!r}: two rows")
        rows[key] = row
    for (mech, eps) in groups:
        if (mech, eps) not in rows:
            raise ValueError(f"candidates of {mech} at ε = {eps!r}, a search with no row")
    for key, row in rows.items():
        if "error" not in row and (only is None or key in only):
            _check_search_row(doc, model, row, groups.get(key, []), search)


def _search_key_of(entry: dict[str, Any], what: str) -> tuple[str, float]:
    mech, eps = entry.get("mechanism"), entry.get("epsilon")
    if not isinstance(mech, str) or isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise ValueError(f"{what} without a mechanism and an ε")
    return mech, eps


def _check_search_row(doc: dict[str, Any], model: str, row: dict[str, Any], group: list[dict[str, Any]],
                      search: dict[str, Any]) -> None:
    mech, eps = row["mechanism"], row["epsilon"]
    where = f"{mech} at ε = {eps!r}"
    space = search_space(mech, model)
    names = sorted(space)
    fields_ = sorted(_CANDIDATE_FIELDS | set(space))
    found: dict[tuple, dict[str, Any]] = {}
    for c in group:
        if sorted(c) != fields_:
            raise ValueError(f"{where}: a candidate with the fields {sorted(c)}, not the search's {fields_}")
        setting = tuple(c[k] for k in names)
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in setting) \
                or not isinstance(c["chosen"], bool):
            raise ValueError(f"{where}: a candidate's setting or choice is not of its type")
        if setting in found:
            raise ValueError(f"{where}: the candidate {dict(zip(names, setting))} is listed twice")
        found[setting] = c
    grid = list(itertools.product(*(space[k] for k in names)))
    missing = [dict(zip(names, g)) for g in grid if g not in found]
    extra = [dict(zip(names, g)) for g in found if g not in set(grid)]
    if missing or extra:
        raise ValueError(f"{where}: its candidates are not the grid its search declares ("
                         + (f"{len(missing)} missing, such as {missing[0]}" if missing else
                            f"{len(extra)} not in it, such as {extra[0]}")
                         + "): a shipped search runs its whole grid")
    if row.get("candidates") != len(grid):
        raise ValueError(f"{where}: {row.get('candidates')!r} candidates, but it lists {len(grid)}")
    chosen = [g for g, c in found.items() if c["chosen"]]
    if len(chosen) != 1 or dict(zip(names, chosen[0])) != row["setting"]:
        raise ValueError(f"{where}: its chosen candidate is not its setting {row['setting']}")
    selection = float(eps) if search["selection_epsilon"] is None else search["selection_epsilon"]
    if row.get("selection_epsilon") != selection:
        raise ValueError(f"{where}: the choice at ε = {row.get('selection_epsilon')!r}, but its search chose at "
                         f"ε = {selection!r}")
    try:
        spent, delta_spent, error, certified = _searched(
            doc["dataset"], model, mech, float(eps), float(doc["delta"]), search["repeats"], search["final_repeats"],
            search["validation_fraction"], search["seed"], selection)
    except (DPCoreError, TypeError, NotImplementedError) as exc:
        raise ValueError(f"{where}: its search is not one this code runs ({exc})") from None
    for g, (eps_c, err_c) in zip(grid, certified):
        if not same_certificate(found[g]["epsilon_certified"], eps_c, err_c):
            raise ValueError(f"{where}: the candidate {dict(zip(names, g))} certified ε "
                             f"{found[g]['epsilon_certified']!r}, but its setting's noise certifies {eps_c!r}")
    if not same_certificate(row.get("epsilon_spent"), spent, error):
        runs = f"{search['repeats']} run{'s' * (search['repeats'] != 1)}"
        raise ValueError(f"{where}: ε spent {row.get('epsilon_spent')!r}, but its search certifies {spent!r} "
                         f"({len(grid)} candidates of {runs} each, the choice at ε = {selection:g}, the final run; "
                         f"the accountant's error {error:.2g})")
    if not _same_delta(row.get("delta_spent"), delta_spent):
        raise ValueError(f"{where}: δ spent {row.get('delta_spent')!r}, but its search spends {delta_spent!r}")


def _split_sizes(dataset: str, fraction: float, seed: int) -> tuple[int, int]:
    """A registered dataset's training rows, and how many of them its validation split holds out."""
    full = _datasets.load(dataset)
    return full.n, validation_split(full, fraction, seed).n_test


def _search_inputs(dataset: str, model: str, mechanism: str, epsilon: float, delta: float, repeats: int,
                   validation_fraction: float, seed: int) -> tuple[list[RunSpec], Dataset]:
    """A search of a registered dataset's grid: its candidates' settings and the split they ran on."""
    full = _datasets.load(dataset)
    split = validation_split(full, validation_fraction, seed)
    base = RunSpec(dataset=dataset, model=model, mechanism=mechanism, epsilon=epsilon, delta=delta, repeats=repeats,
                   seed=seed)
    return candidates(base, search_space(mechanism, model)), split


def plan_searches(doc: dict[str, Any], dataset: str, model: str, ctx: Context) -> int:
    """Compute, in ``ctx`` (its calibration table), every plan that recomputing ``doc``'s searches'
    spent figures computes (:func:`check_search_costs`): what ``prepare --ship`` calibrates ahead, so a
    reader's table only re-certifies them.  Returns how many searches were planned."""
    search = _search_of(doc)
    planned = 0
    for row in doc.get("rows", []):
        if "error" in row:
            continue
        mech, eps = _search_key_of(row, "a row")
        specs, split = _search_inputs(doc["dataset"], model, mech, float(eps), float(doc["delta"]), search["repeats"],
                                      search["validation_fraction"], search["seed"])
        selection = float(eps) if search["selection_epsilon"] is None else search["selection_epsilon"]
        with contextlib.suppress(DPCoreError):  # a search this code refuses plans nothing (its check says why)
            search_spent(specs, final_repeats=search["final_repeats"], split=split, selection_epsilon=selection,
                         ctx=ctx)
            planned += 1
    return planned


# pure: a search's certificates from its settings (a registered dataset's size is the code's)
@functools.lru_cache(maxsize=1024)
def _searched(dataset: str, model: str, mechanism: str, epsilon: float, delta: float, repeats: int,
              final_repeats: int, validation_fraction: float, seed: int, selection_epsilon: float
              ) -> tuple[float, float, float, tuple[tuple[float, float], ...]]:
    """A search of a registered dataset's grid, recomputed (:func:`search_spent`): ε spent, δ spent, the
    accountant's error on ε spent, and each candidate's certified ε with its error (in the grid's order)."""
    specs, split = _search_inputs(dataset, model, mechanism, epsilon, delta, repeats, validation_fraction, seed)
    spent, delta_spent, whole, plans = search_spent(specs, final_repeats=final_repeats, split=split,
                                                    selection_epsilon=selection_epsilon)
    return (spent, delta_spent, certificate_error(whole, delta_spent),
            tuple((certify(p, delta), certificate_error(p, delta)) for p in plans))
