"""One specification, R batched runs: the function behind ``dpcore run`` and every view.

:class:`RunSpec` holds every setting that can change a number (validated
against :mod:`dpcore.params`; frozen and hashable, its content is the key of
every result cache); :func:`run` loads the data, takes the exact ERM from the
context's store (solving it once), lets the mechanism train R runs at once and
returns a frozen :class:`RunResult` with every number the UI shows.  *How* it
executes (caches, loss-curve points) comes from an explicit
:class:`~dpcore.experiments.context.Context`.
"""

from __future__ import annotations

import math
import numbers
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import datasets as _datasets
from ..numerics import linalg
from ..privacy import core as privacy
from ..datasets import contract
from ..erm import MLP_RESTARTS, reference_passes, solve_erm
from ..exceptions import BudgetError, DPCoreError, ModelError, ParameterError, PrivacyWarning
from ..mechanisms import REGISTRY, Problem, get_mechanism, validate_options
from ..metrics import accuracy, optimality_gap, rmse
from ..models import make_model
from ..optim import BatchRNG, run_seeds
from ..params import check_conflicts, validate
from ..privacy.core import NoisePlan
from .result import RunResult, SpecOf
from .budget import (BUDGET_SCALE, GLM_UNCOMPILED_SLOWDOWN, SECONDS_PER_OPERATION, UNCOMPILED_SLOWDOWN,  # noqa: F401
                     check_budget, memory_estimate, reference_estimate, work_estimate)
from .context import DEFAULT_STACK_RUNS, DEFAULT_TRACE_POINTS, Budget, Context, default_context


if TYPE_CHECKING:  # the event type, for annotations only
    import dp_accounting as dpa

__all__ = ["RunSpec", "RunResult", "SpecOf", "run", "run_many", "run_outcomes", "stack_groups", "load_problem", "noise_plan",
           "problem_data", "check_data", "check_data_many", "delta_warning", "row_norm_warning", "slow_reference"]


@dataclass(frozen=True)
class RunSpec:
    """Every setting of one run: what to compute, never how (that is a :class:`Context`'s).

    Frozen, validated against :data:`dpcore.params.PARAMS` when made, and hashable: its content is
    the key of every result cache.  ``None`` means "the model's or the mechanism's default".

    Parameters
    ----------
    dataset : str
        A registered dataset id (``python -m dpcore datasets``), the only positional parameter.
    model : str
        ``"logreg"``, ``"linreg"`` or ``"mlp"``.
    mechanism : str
        A mechanism id of :data:`dpcore.mechanisms.REGISTRY` (``"non-private"`` by default).
    epsilon, delta : float
        The target (ε, δ); the run reports the ε its noise certifies beside it.
    iterations : int
        T, the optimiser's steps (or a mechanism's rounds).
    repeats : int
        R independent runs, trained as one batch (run ``r`` draws from seed ``seed + r``).
    seed : int
        The first run's seed.
    calibration : str
        ``"certified"`` (the smallest noise whose certified ε meets the target) or ``"published"``
        (the paper's formula with constant ``c``).
    c, noise_scale : float
        The published formula's constant; a factor on the noise (an audit's under-noised run).
    lam, learning_rate, batch_size, sample_rate, clip_norm, radius : float or int, optional
        The model's and optimiser's settings (λ, η, the batch, q, C, the parameter ball's radius).
    clients, skew : int or float, optional
        The distributed mechanisms' number of clients and the skew of their sizes.
    n, d, noise : int or float, optional
        Training rows (a seeded subsample of bundled data, or the size of synthetic data); a
        synthetic dataset's dimension and label noise.
    options : tuple of (str, value) pairs
        Mechanism-specific extras its ``options`` declare.
    stream : tuple of int
        Extra words of the runs' random stream, so that separate releases sharing a seed (a
        tuning's candidates and its final run) never share noise.

    Raises
    ------
    ParameterError
        A setting outside its declared range, in one line naming it and what to change.

    See Also
    --------
    run : train and measure the runs a spec describes.
    RunSpec.dp_event : the spec's privacy as a dp-accounting event, without training.

    Examples
    --------
    >>> from dpcore import RunSpec
    >>> spec = RunSpec("iris", mechanism="gradient-dpgd", epsilon=1.0, iterations=50, repeats=3)
    >>> spec.label()
    'gradient-dpgd on iris (logreg), ε = 1, δ = 1e-05, T = 50, seed 0'
    >>> RunSpec("iris", epsilon=-1)
    Traceback (most recent call last):
      ...
    dpcore.exceptions.ParameterError: The 'epsilon' parameter of run must be a float in [0.0001, 1000]. Got -1 instead.
    """

    dataset: str = "breast-cancer"
    _: KW_ONLY  # every setting after the dataset by name
    model: str = "logreg"
    mechanism: str = "non-private"
    epsilon: float = 1.0
    delta: float = 1e-5
    iterations: int = 100
    repeats: int = 5
    seed: int = 0
    calibration: str = "certified"
    c: float = 1.0
    noise_scale: float = 1.0
    lam: float | None = None
    learning_rate: float = 1.0
    batch_size: int | None = None
    sample_rate: float | None = None
    clip_norm: float | None = None
    clients: int | None = None
    skew: float | None = None
    radius: float | None = None
    # training rows: generated (synthetic data) or a seeded subsample (bundled data)
    n: int | None = None
    # synthetic data only
    d: int | None = None
    noise: float | None = None
    options: tuple[tuple[str, Any], ...] = ()  # mechanism-specific extras, as (key, value) pairs
    # Extra words of the runs' random stream: () for a plain run (repeat r draws from seed S + r).
    # Runs that share a seed but are separate releases (a tuning's candidates and its final run)
    # each get their own, so no two of them share noise.
    stream: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        owner = "run"
        words = tuple(self.stream) if isinstance(self.stream, (tuple, list)) else None
        if words is None or not all(isinstance(w, numbers.Integral) and not isinstance(w, bool)
                                    and 0 <= w < 2**32 for w in words):
            raise ParameterError(f"The 'stream' of {owner} must be a tuple of integers in [0, 2**32). "
                                 f"Got {self.stream!r} instead.")
        object.__setattr__(self, "stream", tuple(int(w) for w in words))
        for name in ("dataset", "model", "mechanism"):  # ids: a list would make the spec unhashable
            if not isinstance(getattr(self, name), str):
                raise ParameterError(f"The {name!r} parameter of {owner} must be an id (a str). "
                                     f"Got {getattr(self, name)!r} instead.")
        pairs = list(self.options.items()) if isinstance(self.options, Mapping) else self.options
        if not isinstance(pairs, (tuple, list)) or not all(isinstance(p, (tuple, list)) and len(p) == 2
                                                      and isinstance(p[0], str) for p in pairs):
            raise ParameterError(f"The 'options' of {owner} must be (name, value) pairs, e.g. (('smoothing', 1.0),). "
                                 f"Got {self.options!r} instead.")
        for name in ("epsilon", "delta", "iterations", "repeats", "seed", "calibration", "c",
                     "noise_scale", "learning_rate"):
            object.__setattr__(self, name, validate(name, getattr(self, name), owner))
        for name in ("lam", "batch_size", "sample_rate", "clip_norm", "clients", "skew",
                     "radius", "n", "d", "noise"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, validate(name, v, owner))
        object.__setattr__(self, "options", validate_options(self.mechanism, self.options))
        # two settings that set one thing two ways are refused, never one of them dropped (issue 43)
        check_conflicts([f.name for f in fields(self) if getattr(self, f.name) is not None], owner)

    def option(self, key: str, default: Any = None) -> Any:
        """A mechanism option: as given, else its declared default, else ``default``."""
        given = dict(self.options)
        if key in given:
            return given[key]
        declared = REGISTRY[self.mechanism].options.get(key) if self.mechanism in REGISTRY else None
        return declared.default if declared is not None and declared.default is not None else default

    def dp_event(self, *, ctx: Context | None = None, dataset=None) -> "dpa.DpEvent":
        """This run's privacy as one dp-accounting ``DpEvent``, in its units for ``REPLACE_ONE``
        neighbours (the relation every certificate here states), so any accountant can take it:
        the noise its mechanism declares (:func:`noise_plan`), without training.  Mechanisms whose
        releases dp-accounting has no event for use this package's (``GammaNormDpEvent``,
        ``DisjointPartsDpEvent``, :mod:`dpcore.privacy.core`), which its PLD accountant does not take.

        >>> import dp_accounting as dpa
        >>> spec = RunSpec("breast-cancer", mechanism="gradient-dpgd", epsilon=1.0, delta=1e-5)
        >>> accountant = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_ONE)
        >>> eps = accountant.compose(spec.dp_event()).get_epsilon(1e-5)
        >>> 0.99 < eps <= 1.0 + 1e-3    # the certified calibration: ε = 1 up to the PLD's grid
        True
        """
        return noise_plan(self, ctx, dataset=dataset).event()

    def label(self) -> str:
        """One line naming the run: what it runs, on what, at which (ε, δ) (an exported plan's label)."""
        return (f"{self.mechanism} on {self.dataset} ({self.model}), ε = {self.epsilon:g}, δ = {self.delta:g}, "
                f"T = {self.iterations}, seed {self.seed}")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["options"] = dict(self.options)
        if self.stream:
            out["stream"] = list(self.stream)
        else:
            del out["stream"]  # a plain run's record (and its cache key) stays what it always was
        return out


#: Above this many training rows the MLP's reference solve takes long enough to announce.
SLOW_REFERENCE_ROWS = 5000


def slow_reference(config: RunSpec, ctx: Context | None = None) -> str | None:
    """A sentence for the user when this configuration's exact reference (L*, behind every
    gap) is a slow solve not yet cached, the MLP's multi-start L-BFGS on a large dataset;
    ``None`` otherwise (also for an invalid configuration: the run will say what is wrong)."""
    if config.model != "mlp":
        return None
    try:
        dataset, model = problem_data(config)
    except DPCoreError:
        return None
    if dataset.n < SLOW_REFERENCE_ROWS or (ctx is not None and ctx.store.holds(dataset, model)):
        return None
    seconds = reference_estimate(dataset, model) * SECONDS_PER_OPERATION
    took = f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} minutes"
    return (f"Computing the MLP's reference optimum L* on {dataset.name} (n = {dataset.n:,}): the best of "
            f"{MLP_RESTARTS} L-BFGS runs, up to about {took} on 2 cores the first time. It is kept (on disk, "
            "for the app) for every later run on these data.")


#: the synthetic generators' test rows (``datasets.load``'s ``n_test``)
SYNTHETIC_TEST_ROWS = _datasets.load.__kwdefaults__["n_test"]


def synthetic_bytes(n: int, d: int, n_test: int = SYNTHETIC_TEST_ROWS) -> float:
    """Bytes the synthetic generator holds at its peak: the training and test features (float64),
    drawn, copied with the bias column and scaled onto the unit ball (three copies at once)."""
    return float((int(n) + int(n_test)) * (int(d) + 1) * 8 * 3)


def load_dataset(config: RunSpec, budget: Budget | None = None):
    """The configuration's data (a synthetic set drawn only if it fits half the memory ``budget``,
    by default the environment's, read now)."""
    budget = Budget.from_environment() if budget is None else budget
    kw: dict[str, Any] = {}
    if _datasets.get_spec(config.dataset).synthetic:
        for k in ("n", "d", "noise"):
            if getattr(config, k) is not None:
                kw[k] = getattr(config, k)
        # the data come before the run's own estimate (which needs them): check them first
        defaults = _datasets.load.__kwdefaults__
        need = synthetic_bytes(kw.get("n", defaults["n"]), kw.get("d", defaults["d"]))
        if budget.error:
            raise ParameterError(budget.error)
        if need > budget.memory / 2:
            raise BudgetError(
                f"the synthetic data alone ({kw.get('n', defaults['n']):,} training and {SYNTHETIC_TEST_ROWS:,} test "
                f"rows × {kw.get('d', defaults['d']):,} features) need about {need / 2**30:.1f} GiB, more than half "
                f"the memory budget ({budget.memory / 2**30:.1f} GiB, DPCORE_MEMORY_BUDGET): lower d or n")
    elif config.n is not None:
        kw["subsample"] = config.n  # a seeded subsample of the training split
    return _datasets.load(config.dataset, **kw)


def problem_data(config: RunSpec, dataset=None, budget: Budget | None = None):
    """The dataset (``dataset``: a user's own, checked at the door: :func:`check_data`) and model
    of a configuration, checked against each other, without solving the exact ERM."""
    if dataset is None:
        dataset = load_dataset(config, budget)
        model = make_model(config.model, lam=config.lam, radius=config.radius)
        _same_task(model, dataset)
    else:
        model = check_data(config, dataset)[1]
    return dataset, model


def _same_task(model, dataset) -> None:
    if model.task != getattr(dataset, "task", None):
        task = getattr(dataset, "task", None)
        raise ModelError(
            f"model {model.id!r} is for {model.task} but dataset {getattr(dataset, 'id', '?')!r} is a "
            f"{task} task; pick a {task} model"
            + (" (linreg)" if task == "regression" else " (logreg or mlp)")
        )


def check_data(config: RunSpec, dataset) -> tuple[list[str], Any]:
    """The door of a user's own ``dataset``: refuse it, before any noise is calibrated, if it breaks
    a bound of :data:`dpcore.datasets.contract.CONTRACT` that ``config``'s mechanism needs.

    The row-norm bound ‖x‖ ≤ 1 is waived for a mechanism whose declaration says it clips every
    record's contribution (:meth:`~dpcore.mechanisms.base.Mechanism.clips_records`); then the
    notes (returned, with the model) say so, and a run puts them in its warnings.

    Raises
    ------
    DatasetError
        The first bound broken, in one line naming it and what to change.
    ModelError
        The dataset's task is not the model's.
    """
    model = make_model(config.model, lam=config.lam, radius=config.radius)
    shape = contract.violations(dataset, bounds=(contract.SHAPES,))
    if shape:  # the task and the arrays are read below: nonsense shapes are named first
        raise _datasets.DatasetError(shape[0].message)
    _same_task(model, dataset)
    cls = REGISTRY.get(config.mechanism)
    why = None if cls is None else cls().clips_records(model, config)
    notes = contract.check_dataset(dataset, task=model.task, waive={contract.ROW_NORMS: why} if why else None)
    return notes, model


def check_data_many(specs: Sequence[RunSpec], dataset) -> None:
    """:func:`check_data` of each distinct (model, λ, radius, mechanism, clipping norm) among ``specs``,
    before any of them runs (a grid's, a tuning's door): the first bound broken is raised; a refusal
    that is not about the data (a model for another task) is left to that spec's own run.  ``dataset``
    ``None`` (registered data, in the bounds by construction): nothing to check."""
    for spec in ([] if dataset is None else {(s.model, s.lam, s.radius, s.mechanism, s.clip_norm): s for s in specs}.values()):
        try:
            check_data(spec, dataset)
        except _datasets.DatasetError:
            raise
        except DPCoreError:
            pass


def _outside_bounds(config: RunSpec, mechanism, dataset, model) -> tuple[list[str], str | None]:
    """What a run must say of its data beyond the door: the notes of a waived row-norm bound, and
    the reason it has no guarantee (``None``: none) if the data break a bound its mechanism needs
    (data that reached the run without passing :func:`check_data`): its certificate is then ∞, with
    that reason, never the target.  Reads the cached row norms and the labels, nothing more."""
    why = mechanism.clips_records(model, config)
    notes, broken = [], None
    for v in contract.violations(dataset, model.task, bounds=(contract.LABELS, contract.ROW_NORMS)):
        if v.bound == contract.ROW_NORMS and why:
            notes.append(f"{v.fact}, outside the dataset bound ‖x‖ ≤ 1: {why}, so its guarantee does not "
                         "depend on that bound")
        elif broken is None:
            broken = (f"the data break the bound the certificate assumes ({v.fact}; the dataset bound on "
                      f"{v.bound}), so the stated guarantee does not hold")
    return notes, broken


def load_problem(config: RunSpec, dataset=None, ctx: Context | None = None) -> Problem:
    """Dataset, model and exact ERM for a configuration.

    ``dataset`` (optional) is a user's own :class:`~dpcore.datasets.Dataset` (an
    uploaded CSV); its exact ERM is solved afresh rather than kept in the store.
    """
    ctx = default_context() if ctx is None else ctx
    with ctx.active():
        return _with_reference(*problem_data(config, dataset), dataset is not None, ctx)


def _with_reference(dataset, model, user_data: bool, ctx: Context, trace_points: int | None = None) -> Problem:
    if user_data:
        erm = solve_erm(model, dataset.X_train, dataset.y_train, progress=ctx.progress)
    else:
        erm = ctx.store.exact(dataset, model, progress=ctx.progress)
    return Problem(dataset=dataset, model=model, erm=erm, trace_points=trace_points,
                   store=None if user_data else ctx.store, progress=ctx.progress, on_trace=ctx.on_trace)


def noise_plan(config: RunSpec, ctx: Context | None = None, *, dataset=None) -> NoisePlan:
    """The noise plan a run of ``config`` declares (:meth:`~dpcore.mechanisms.Mechanism.planned`),
    without training it or solving its exact ERM: a tuning composes the plan of every setting it
    could have chosen, not only the one it chose.  ``dataset``: a user's own, as for :func:`run`."""
    ctx = default_context() if ctx is None else ctx
    data, model = problem_data(config, dataset)
    mechanism = get_mechanism(config.mechanism)
    problem = Problem(dataset=data, model=model, erm=None, store=ctx.store)
    mechanism.check(problem, config)
    return mechanism.planned(problem, config)


def delta_warning(delta: float, n: int) -> str | None:
    """Why δ ≥ 1/n is no real guarantee (``None`` when δ < 1/n)."""
    if delta < 1.0 / n:
        return None
    return (f"δ = {delta:g} ≥ 1/n = {1.0 / n:.3g}: a mechanism could publish "
            "a whole record and still meet (ε, δ); choose δ well below 1/n.")


def row_norm_warning(X: np.ndarray) -> str | None:
    """Why a row with ‖x‖ > 1 voids the sensitivity bounds (``None`` when all rows fit)."""
    max_norm = float(np.max(linalg.row_norms(X)))  # held per shared matrix: not 4 ms a run on Adult
    if max_norm <= 1.0 + 1e-9:
        return None
    return (f"a training row has norm {max_norm:.4g} > 1: the sensitivity bounds assume "
            "‖x‖ ≤ 1, so the stated guarantee does not hold.")


def run(spec: RunSpec, *, ctx: Context | None = None, dataset=None) -> RunResult:
    """Run ``spec.repeats`` batched runs of one mechanism and measure them.

    Parameters
    ----------
    spec : RunSpec
        What to run: dataset, model, mechanism, (ε, δ), T, R and every other setting.
    ctx : Context, optional
        How to execute: threads, stores, progress and loss-curve listeners, the work budget
        (default: :func:`~dpcore.experiments.context.default_context`, one per process, which keeps
        each dataset's exact solution between calls).
    dataset : Dataset, optional
        The user's own data (:func:`dpcore.datasets.from_csv`) in place of ``spec.dataset``.

    Returns
    -------
    RunResult
        The runs' accuracy (or RMSE), optimality gap and target, certified and local ε.

    Raises
    ------
    ParameterError
        A setting the mechanism cannot run, in one line saying what to change.
    BudgetError
        The run's memory or work estimate exceeds the context's budget (refused before any work).
    ModelError
        A model, mechanism and data combination that cannot work.

    Examples
    --------
    >>> from dpcore import RunSpec, run
    >>> result = run(RunSpec("iris", mechanism="output-gaussian", epsilon=0.5, repeats=4))
    >>> len(result.seeds), result.epsilon_target
    (4, 0.5)
    >>> round(result.accuracy_nonprivate, 3)       # the exact (non-private) solution, for scale
    0.933
    """
    (result,) = run_many([spec], ctx, dataset=dataset)
    return result


def spec_list(specs, owner: str) -> list[RunSpec]:
    """``specs`` as a list, each a :class:`RunSpec`; anything else (a dataset's name, one spec not in
    a list, a dict) refused in one line naming what ``owner`` expects."""
    if isinstance(specs, (RunSpec, str, bytes, Mapping)) or not isinstance(specs, Iterable):
        raise ParameterError(f"{owner} expects a list of RunSpec, got {_shown(specs)}: "
                             "pass [RunSpec('breast-cancer', mechanism=...), ...]")
    out = list(specs)
    for i, spec in enumerate(out):
        if not isinstance(spec, RunSpec):
            name = repr(spec) if isinstance(spec, str) and len(spec) <= 40 else "'breast-cancer'"
            raise ParameterError(f"{owner} expects a list of RunSpec, but item {i} is {_shown(spec)}: "
                                 f"build each with RunSpec({name}, mechanism=...)")
    return out


def _shown(value) -> str:
    """``value`` named in a line: its repr, cut to 40 characters, and its type."""
    text = repr(value)
    return f"{text if len(text) <= 40 else text[:37] + '...'} (a {type(value).__name__})"


def run_many(specs: Sequence[RunSpec], ctx: Context | None = None, *, dataset=None) -> list[RunResult]:
    """:func:`run` of each spec; specs that differ only in what their mechanism can stack
    (ε and the learning rate of the noisy-gradient mechanisms) train as one batch.

    A stacked spec's result is its :func:`run`'s: the same seeds, noise draws and
    certified ε; its numbers equal to the rounding of the batched products (bit for bit
    on sparse data, within ~1e-12 relative on dense data); its ``seconds`` are its share
    of the batch's.  Raises the first spec's error, as :func:`run` would.
    """
    outcomes = run_outcomes(specs, ctx, dataset=dataset)
    for out in outcomes:
        if isinstance(out, Exception):
            raise out
    return outcomes


def stack_groups(specs: Sequence[RunSpec], limit: int = DEFAULT_STACK_RUNS) -> list[list[int]]:
    """Indices of ``specs`` in groups that can train as one batch (:meth:`Mechanism.run_stack`),
    in first-appearance order, at most ``limit`` runs each (the context's
    :attr:`~Context.stack_runs`; a stack whose arrays would pass a quarter of the memory budget
    is halved when it runs)."""
    groups: dict[Any, list[int]] = {}
    for i, spec in enumerate(specs):
        cls = REGISTRY.get(spec.mechanism)
        fields_ = cls.stack_fields if cls is not None else ()
        # a stacking mechanism draws every run's noise from that run's own generator, so runs of
        # different streams stack too
        neutral = {f: getattr(RunSpec, f) for f in fields_ + (("stream",) if fields_ else ())}
        key = (replace(spec, **neutral), i if not fields_ else None)
        groups.setdefault(key, []).append(i)
    out = []
    for members in groups.values():
        chunk: list[int] = []
        for i in members:
            if chunk and sum(specs[j].repeats for j in chunk) + specs[i].repeats > limit:
                out.append(chunk)
                chunk = []
            chunk.append(i)
        out.append(chunk)
    return out


def run_outcomes(specs: Sequence[RunSpec], ctx: Context | None = None, *,
                 dataset=None, keep_reference: bool = False) -> list[RunResult | DPCoreError]:
    """:func:`run_many`, with each spec's refusal (a :class:`DPCoreError`) in its place
    instead of raised: what a grid records.

    ``keep_reference``: ``dataset`` is one dpcore derived from bundled data (a validation
    split), so its exact ERM may be kept in the context's store like the bundled data's,
    rather than solved afresh for every stack as a user's upload is."""
    specs = spec_list(specs, "run_many")
    ctx = default_context() if ctx is None else ctx
    with ctx.active():
        return _outcomes(specs, ctx, dataset, keep_reference)


def _outcomes(specs: Sequence[RunSpec], ctx: Context, dataset, keep_reference: bool) -> list:
    """:func:`run_outcomes` inside its context's thread pool."""
    outcomes: list[RunResult | DPCoreError | None] = [None] * len(specs)
    for group in stack_groups(specs, ctx.stack_runs):
        try:
            try:
                results = _run_stack([specs[i] for i in group], ctx, dataset, keep_reference)
            except MemoryError as exc:  # an allocation no estimate priced: one line, never a traceback
                raise _out_of_memory(specs[group[0]], dataset, exc) from None
        except DPCoreError as exc:
            if len(group) == 1:
                results = [exc]
            else:  # one configuration's refusal must not take the others with it
                kw = {"dataset": dataset, "keep_reference": keep_reference}
                results = run_outcomes([specs[i] for i in group[:1]], ctx, **kw) + \
                    run_outcomes([specs[i] for i in group[1:]], ctx, **kw)
        for i, res in zip(group, results):
            outcomes[i] = res
    return outcomes  # type: ignore[return-value]


def _out_of_memory(spec: RunSpec, dataset, exc: MemoryError) -> BudgetError:
    """A MemoryError as the one line of a :class:`BudgetError` naming the data's size."""
    data = dataset if dataset is not None else (spec.n, spec.d)
    size = (f"{data.n:,} rows × {data.d:,} features" if dataset is not None
            else f"{spec.dataset} (n = {data[0] or 'all'}, d = {data[1] or 'its own'})")
    said = str(exc).splitlines()[0][:120] if str(exc) else "no detail"
    return BudgetError(f"{spec.mechanism} on {size} ran out of memory ({said}): use fewer features or rows, "
                       "or fewer repeats")


def _run_stack(specs: list[RunSpec], ctx: Context, dataset, keep_reference: bool = False) -> list[RunResult]:
    first = specs[0]
    mechanism = get_mechanism(first.mechanism)
    data, model = problem_data(first, dataset, ctx.budget)
    user_data = dataset is not None and not keep_reference
    unsolved = bool(reference_passes(model)) and (user_data or not ctx.store.holds(data, model))
    for spec in specs:  # before the exact ERM's solve, which counts when it has yet to run
        check_budget(spec, data, model, mechanism, budget=ctx.budget, reference=unsolved)
    rows = max(data.n, data.X_test.shape[0])
    if len(specs) > 1 and sum(s.repeats for s in specs) * rows * 8 * 4 > ctx.budget.memory / 4:
        half = len(specs) // 2  # a stack as large as the budget allows, no larger
        return (_run_stack(specs[:half], ctx, dataset, keep_reference)
                + _run_stack(specs[half:], ctx, dataset, keep_reference))
    points = DEFAULT_TRACE_POINTS if ctx.trace_points is None else ctx.trace_points
    problem = _with_reference(data, model, user_data, ctx, points)
    for spec in specs:
        mechanism.check(problem, spec)
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always", PrivacyWarning)
        notes, void = _outside_bounds(first, mechanism, data, model)
        if mechanism.private:
            for message in [delta_warning(first.delta, problem.n), *notes, void]:
                if message:
                    warnings.warn(message, PrivacyWarning)
        seeds = [run_seeds(spec.seed, spec.repeats) for spec in specs]
        t0 = time.perf_counter()
        # overflow on the way to a diverged run is reported once, as divergence (see _result)
        with np.errstate(over="ignore", invalid="ignore"):
            outs = mechanism.run_stack(problem, specs,
                                       [BatchRNG(s, key=spec.stream) for s, spec in zip(seeds, specs)])
        if void:  # no certificate but ∞ for a guarantee that does not hold (the void plan's path)
            outs = [replace(out, plan=privacy.void(void),
                            local_plan=None if out.local_plan is None else privacy.void(void)) for out in outs]
        seconds = time.perf_counter() - t0
        certified = [out.certified(spec.delta) for spec, out in zip(specs, outs)]
    for w in wlist:
        if issubclass(w.category, PrivacyWarning):
            caught.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    total = sum(spec.repeats for spec in specs)
    return [_result(spec, mechanism, problem, out, s, eps, seconds * spec.repeats / total, list(caught))
            for spec, out, s, eps in zip(specs, outs, seeds, certified)]


def _result(config: RunSpec, mechanism, problem: Problem, out, seeds: list[int], certified: tuple[float, float],
            seconds: float, caught: list[str]) -> RunResult:
    eps_certified, eps_local = certified
    ds, model = problem.dataset, problem.model
    theta = out.theta
    gap = optimality_gap(model, theta, ds.X_train, ds.y_train, problem.erm.loss)
    # a run whose parameters or loss became non-finite diverged: a result, said out loud, and
    # its accuracy (a non-finite θ predicts one class) is not averaged with the finite runs
    diverged = ~(np.all(np.isfinite(theta), axis=1) & np.isfinite(gap))
    star = problem.erm.theta[None, :]
    if diverged.any():
        caught = caught + [
            f"{int(diverged.sum())} of {len(diverged)} runs diverged (their parameters or loss became "
            "non-finite): they are left out of the means; lower the learning rate, or raise λ or the "
            "clipping norm"]
    if ds.task == "classification":
        acc, err = accuracy(model, theta, ds.X_test, ds.y_test), None
        acc = np.where(diverged, np.nan, acc)
        acc_np, err_np = float(accuracy(model, star, ds.X_test, ds.y_test)[0]), None
        guess = {"accuracy_guess": ds.guessing, "guess_class": ds.guess_class}
    else:
        acc, err = None, rmse(model, theta, ds.X_test, ds.y_test)
        err = np.where(diverged, np.nan, err)
        acc_np, err_np = None, float(rmse(model, star, ds.X_test, ds.y_test)[0])
        guess = {"rmse_guess": ds.guessing}
    return RunResult(
        spec=config,
        dataset_name=ds.name,
        mechanism_name=mechanism.name,
        task=ds.task,
        n_train=ds.n,
        d=ds.d,
        p=problem.p,
        seeds=seeds,
        accuracy=acc,
        rmse=err,
        gap=gap,
        loss_star=problem.erm.loss,
        accuracy_nonprivate=acc_np,
        rmse_nonprivate=err_np,
        sigma=out.sigma,
        epsilon_target=config.epsilon if mechanism.private else math.inf,
        epsilon_certified=eps_certified,
        epsilon_local=eps_local,
        seconds=seconds,
        erm_method=problem.erm.method,
        erm_certified=problem.erm.certified_optimum,
        loss_trace=out.loss_trace,
        trace_steps=out.trace_steps,
        client_sizes=out.client_sizes,
        warnings=caught,
        extras={**out.extras, "privacy_event": out.plan.describe(),
                "neighbouring": out.plan.neighbouring},
        plan=out.plan,
        diverged=diverged,
        **guess,
    )
