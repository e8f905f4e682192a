"""What a view of the app computes, built from its settings in one place: the view and the code it
exports (:mod:`dpcore.export.writer`) call these same functions with the same arguments, so their numbers
agree by construction.

* Explore: :func:`explore_spec` (the RunSpec of its settings, each mechanism reading the common
  settings it declares) and :func:`run_record` (the run as the view shows it, with its loss curve);
* Compare: :func:`compare_setting` (the base specification, the ε grid and a seed preset's overrides);
* Local vs central: :func:`tradeoff_mechanisms` (every mechanism it runs);
* Distributed: :func:`distributed_spec` (each distributed mechanism's run) and :func:`skew_grid` (its sweep's u);
* Tune: :func:`tuning_here` (its "Tune here") and :func:`tuning_lambdas` (the λ's its reference covers);
* Audit: :func:`audit_spec` (the run it attacks).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..exceptions import DPCoreError
from ..mechanisms import REGISTRY
from ..params import parse_grid
from .context import Context
from .presets import PRESETS
from .run import RunSpec, run
from .studies import compare_base
from .tune import tune, tuned_row

__all__ = ["HIDDEN_OPTIONS", "MAX_GRID", "TRADEOFF_FAMILIES", "audit_spec", "compare_setting", "distributed_spec", "explore_options",
           "option_default_of",
           "explore_spec", "run_record", "tuned_search_spent", "skew_grid", "tradeoff_mechanisms", "tuning_here", "tuning_lambdas"]

#: a mechanism's options that are for audits and scripts, never a view's choice
HIDDEN_OPTIONS = ("keep_data",)
#: the most ε values of one comparison (Compare)
MAX_GRID = 50
#: the families Local vs central runs (every one with a central ε; logistic regression)
TRADEOFF_FAMILIES = ("output", "objective", "gradient", "input", "local", "distributed")
#: the skews u of Distributed's sweep (the chosen one joins them)
SKEWS = (1.0, 2.0, 4.0, 8.0, 16.0)


def run_record(spec: RunSpec, ctx: Context | None = None, dataset=None) -> dict[str, Any]:
    """:func:`dpcore.run` of ``spec`` as a JSON-able record with its loss curve (``loss_trace``, one column
    a repeat, at the steps ``trace_steps``): what Explore shows."""
    res = run(spec, ctx=ctx, dataset=dataset)
    rec = res.to_dict()
    rec["loss_trace"] = None if res.loss_trace is None else res.loss_trace.tolist()
    rec["trace_steps"] = None if res.trace_steps is None else res.trace_steps.tolist()
    return rec


def option_default_of(name: str) -> Any:
    """The declared default of a mechanism's option box named ``<mechanism>_<option>`` (as the views'
    keys end), ``None`` for a name no mechanism declares, or an option no view shows (:data:`HIDDEN_OPTIONS`)."""
    for mid, cls in REGISTRY.items():
        if name.startswith(mid + "_"):
            p = cls.options.get(name[len(mid) + 1:])
            if p is not None and p.default is not None and p.name not in HIDDEN_OPTIONS:
                return p.default
    return None


def explore_options(mechanism: str, given: Mapping[str, Any]) -> tuple:
    """A mechanism's own options as Explore sets them: each declared option with a default, at its
    value in ``given`` (by option name) or its default, sorted by name."""
    out = {p.name: given.get(p.name, p.default) for p in REGISTRY[mechanism].options.values()
           if p.default is not None and p.name not in HIDDEN_OPTIONS}
    return tuple(sorted(out.items()))


def explore_spec(*, dataset: str, model: str, mechanism: str, epsilon: float, delta: float, iterations: int,
                 repeats: int, seed: int, calibration: str, c: float, lam: float, learning_rate: float,
                 options: Sequence = (), sample_rate: float | None = None, batch_size: int | None = None,
                 clip_norm: float = 0.0, clients: int | None = None, skew: float | None = None) -> RunSpec:
    """Explore's run: the settings on screen, of which a mechanism reads the common ones it declares
    (``cls.settings``: the sampling rate, else the batch size; the clipping norm, 0 meaning the
    mechanism's own; the clients and their skew); ``c`` holds for the published calibration only."""
    cls = REGISTRY[mechanism]
    extra: dict[str, Any] = {}
    if "sample_rate" in cls.settings:
        extra["sample_rate"] = sample_rate
    elif "batch_size" in cls.settings:
        extra["batch_size"] = batch_size
    if "clip_norm" in cls.settings and clip_norm:
        extra["clip_norm"] = clip_norm
    if "clients" in cls.settings:
        extra["clients"], extra["skew"] = clients, skew
    extra = {k: v for k, v in extra.items() if v is not None}
    return RunSpec(dataset=dataset, model=model, mechanism=mechanism, epsilon=epsilon, delta=delta,
                   iterations=iterations, repeats=repeats, seed=seed, calibration=calibration,
                   c=c if calibration == "published" else 1.0, lam=lam, learning_rate=learning_rate,
                   options=tuple(options), **extra)


def compare_setting(dataset: str, model: str, mechanisms: Sequence[str], epsilons: str, *, delta: float,
                    iterations: int, repeats: int, calibration: str, lam: float, clients: int = 4,
                    skew: float = 4.0, paper: str = "") -> dict[str, Any]:
    """Compare's comparison: ``base`` (:func:`~dpcore.experiments.studies.compare_base`), the ε grid
    parsed from its text (at most :data:`MAX_GRID`), and a seed preset's per-mechanism settings and data
    options (``paper``: its id, ``""`` for none), ready for
    :func:`~dpcore.experiments.studies.epsilon_sweep`.  The clients and their skew hold only when a
    distributed mechanism is compared (else 4 and 4)."""
    if not any(REGISTRY[m].family == "distributed" for m in mechanisms):
        clients, skew = 4, 4.0
    preset = PRESETS.get(paper)
    per_mechanism, data_options = preset.overrides(dataset, mechanisms) if preset is not None else ({}, {})
    grid = parse_grid("epsilon", epsilons, "the ε grid", MAX_GRID)
    base = compare_base(dataset, model, delta=delta, iterations=iterations, repeats=repeats,
                        calibration=calibration, lam=lam, clients=clients, skew=skew, **data_options)
    if not mechanisms:
        raise DPCoreError("choose at least one mechanism")
    return {"base": base, "epsilons": grid, "per_mechanism": per_mechanism, "data_options": data_options}


def tradeoff_mechanisms(model: str = "logreg") -> list[str]:
    """Local vs central's mechanisms: every registered one of :data:`TRADEOFF_FAMILIES` for ``model``."""
    return [m for m, cls in REGISTRY.items() if model in cls.models and cls.family in TRADEOFF_FAMILIES]


def distributed_spec(mechanism: str, *, dataset: str, model: str, epsilon: float, delta: float, iterations: int,
                     repeats: int, clients: int, skew: float, calibration: str, split: str) -> RunSpec:
    """Distributed's run of one distributed ``mechanism``: m clients at skew u, the records split
    by ``split`` (the mechanism's option)."""
    return RunSpec(dataset=dataset, model=model, mechanism=mechanism, epsilon=epsilon, delta=delta,
                   iterations=iterations, repeats=repeats, clients=clients, skew=skew, calibration=calibration,
                   options=(("split", split),))


def skew_grid(skew: float) -> list[float]:
    """Distributed's sweep: the skews :data:`SKEWS` and the chosen ``skew``, sorted."""
    return sorted({*SKEWS, float(skew)})


def tuning_here(dataset: str, mechanisms: Sequence[str], epsilons: str, ctx: Context | None = None) -> dict[str, Any]:
    """Tune's "Tune here": :func:`~dpcore.experiments.tune.tune` of ``mechanisms`` at every ε of the grid's
    text (at most 12) on ``dataset``, as a JSON-able record."""
    grid = parse_grid("epsilon", epsilons, "the ε grid", 12)
    if not mechanisms:
        raise DPCoreError("choose at least one mechanism")
    return tune(dataset, mechanisms=mechanisms, epsilons=grid, ctx=ctx).to_dict()


def tuning_lambdas(rows: Sequence[Mapping], released_rows: Sequence[Mapping] = ()) -> list:
    """The λ's a tuning's rows chose (and those its releases chose on their own records): Tune's
    non-private reference is the best exact model over the λ grid and these."""
    return ([r["setting"].get("lam") for r in rows]
            + [c.get("lam") for r in released_rows for c in r.get("tuned_on_release") or [] if isinstance(c, dict)])


def audit_spec(*, dataset: str, model: str, mechanism: str, epsilon: float, delta: float, iterations: int,
               calibration: str, c: float, noise_scale: float, seed: int) -> RunSpec:
    """The Audit view's run (one repeat: the audit draws its own runs from ``seed``); ``c`` holds for the
    published calibration only."""
    return RunSpec(dataset=dataset, model=model, mechanism=mechanism, epsilon=epsilon, delta=delta,
                   iterations=iterations, calibration=calibration, c=c if calibration == "published" else 1.0,
                   repeats=1, noise_scale=noise_scale, seed=seed)


def tuned_search_spent(dataset: str, model: str, mechanism: str, epsilon: float, *,
                       data_dir=None) -> tuple[float | None, float] | None:
    """(what the private search that chose the shipped tuned setting of ``mechanism`` at the tuned ε
    closest to ``epsilon`` spent in all, that tuned ε), or ``None`` where nothing was tuned: the ε spent
    recomputed from the search as Compare and Tune show it (:func:`~dpcore.experiments.tune.tuned_row` with
    ``spent``; 0.1–8 s the first time a machine reads a row, then marked).  Explore shows it beside its
    ε's when the tuned settings are in use (:func:`dpcore.figures.result.search_spent_words`)."""
    row = tuned_row(dataset, model, mechanism, epsilon, data_dir=data_dir, spent=True)
    if row is None:
        return None
    paid = row.get("epsilon_spent")
    return (None if paid is None else float(paid)), float(row["epsilon"])
