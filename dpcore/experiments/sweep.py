"""The grid runner's back end: tasks executed here, in local processes or on Dask, cached.

A task is one :class:`~dpcore.experiments.run.RunSpec` (a batch of R
repeats: the coarse unit of work) with the labels a table groups by.  Every
task is keyed by a content hash of its spec and of the package's source; given a
results folder its result is written to ``<folder>/<hash>.json`` the moment it
arrives, so an interrupted grid resumes where it stopped and a repeated one
does no training (a changed mechanism, or any changed source file, computes again).  Tasks run in this process, in local worker processes
(joblib, ``loky``, which stay alive between calls and keep their data warm) or,
given a scheduler address, on a Dask distributed cluster.  With several
workers each task runs with one BLAS thread, so the numbers do not depend on
how many workers ran it.  :func:`dpcore.experiments.grid.run_grid` is the
one way to run tasks; :func:`warm_workers` only starts its worker processes
ahead of time (the Compare view does, while the user chooses).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import math
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
from joblib import Parallel, delayed
from threadpoolctl import threadpool_info, threadpool_limits

from .. import linalg
from .._version import __version__
from .. import datasets as _datasets
from ..exceptions import BudgetError, DPCoreError, ParameterError
from ..cache import Memo, code_fingerprint
from ..jsonutil import dumps
from ..mechanisms import REGISTRY, get_mechanism
from ..models import make_model
from ..privacy import certificate_error, certify, same_certificate
from .context import DEFAULT_STACK_RUNS, Context
from .run import RunSpec, load_dataset, load_problem, noise_plan, problem_data, run_outcomes, slow_reference, stack_groups, work_estimate

__all__ = ["results_fingerprint", "Task", "SweepResult", "task_key", "task_cost", "execute", "dispatch", "warm_workers", "run_tasks",
           "tidy_rows", "check_table", "environment", "CACHE_SCHEMA"]

#: bump when the meaning of a cached result changes (the package version is hashed too)
CACHE_SCHEMA = 2  # 2: records carry the accuracy (RMSE) of guessing
#: how long to wait for a Dask scheduler before giving up with a clear message
CONNECT_TIMEOUT = "10s"


@dataclass(frozen=True)
class Task:
    """One configuration (R batched repeats) plus the labels a plot groups by."""

    config: RunSpec
    tags: tuple[tuple[str, Any], ...] = ()

    @property
    def key(self) -> str:
        return task_key(self.config)

    def label(self) -> str:
        c = self.config
        bits = [c.mechanism, c.dataset, c.model, f"ε={c.epsilon:g}"]
        if c.n is not None:
            bits.append(f"n={c.n}")
        if c.clients is not None and "clients" in getattr(REGISTRY.get(c.mechanism), "settings", ()):
            bits.append(f"m={c.clients} u={c.skew:g}")  # only where the mechanism reads them
        bits.append(f"lr={c.learning_rate:g}")
        return " ".join(bits)


def _config_record(config: RunSpec) -> dict[str, Any]:
    rec = config.to_dict()
    rec["options"] = {k: rec["options"][k] for k in sorted(rec["options"])}
    return rec


def task_key(config: RunSpec) -> str:
    """Content hash of a configuration and of the code that computes it (the package's
    version and every source file of it: a changed mechanism never reads an old result)."""
    payload = json.dumps(
        {"config": _config_record(config), "dpcore": __version__, "schema": CACHE_SCHEMA,
         "source": results_fingerprint()},
        sort_keys=True, allow_nan=True, default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


#: the modules that cannot change a task's record (presentation, studies that only arrange runs,
#: the audit): a change to one of them keeps the stored results; a change anywhere else
#: (a mechanism, the accountant, a solver, a new module) computes them again
NOT_IN_RESULTS = ("cli.py", "__main__.py", "__init__.py", "figures.py", "report.py", "estimators.py", "certify.py",
                  "shipped.py",  # reads shipped files, computes no result
                  "lesson.py",  # arranges the lesson's runs
                  "theory/catalog.py", "audit/*", "experiments/studies.py", "experiments/presets*.py",
                  "experiments/tune.py", "experiments/baselines.py", "experiments/progress.py")


@functools.cache
def results_fingerprint() -> str:
    """The code a stored task result belongs to (:func:`dpcore.cache.code_fingerprint` of the
    package but :data:`NOT_IN_RESULTS`): one rule for the results cache's keys and the shipped
    result files."""
    return code_fingerprint(Path(__file__).resolve().parent.parent, NOT_IN_RESULTS)


def _config_from_record(rec: dict[str, Any]) -> RunSpec:
    rec = dict(rec)
    rec["options"] = tuple(sorted(rec.get("options", {}).items()))
    names = {f.name for f in fields(RunSpec)}
    return RunSpec(**{k: v for k, v in rec.items() if k in names})


# --------------------------------------------------------------------------
# cache


def check_record(key: str, config: RunSpec | None, ctx: Context | None = None) -> Callable[[Any], dict]:
    """What reads a stored task record: it is used only if it is a JSON object whose key and
    configuration are the task's own, whose fields have the types and ranges of
    :data:`RESULT_FIELDS` and :data:`RUN_FIELDS`, and whose certified ε (or refusal) the code
    recomputes from the configuration (a cheap function of it: the noise plan, not the training);
    anything else (torn, edited, forged, a FIFO or device in its place, another task's record) is
    logged, ignored and computed again."""
    def check(rec: Any) -> dict:
        _check_record(rec, key, config)
        if config is not None:
            result = rec["result"]
            claims = (key, "error" in result, *(result.get(f) for f in _CERTIFICATE_CLAIMS))
            _VERIFIED.get(claims, lambda: _check_certificate(result, config, ctx))
        return rec
    return check


#: what :func:`_check_certificate` reads of a stored result (with whether it holds an "error")
_CERTIFICATE_CLAIMS = ("error", "epsilon_certified", "n_train", "epsilon_target")
#: the records this process has verified, by their task key (the configuration and the code) and
#: what they claim: a record read again (a second click, another session) is the same function of
#: the same code, so its accounting is not run again (0.7 s of the 0.8 s a cached 72-run grid took
#: to read).  A check that fails is not remembered.
_VERIFIED = Memo(size=8192)


_NUMBER = (int, float)
#: the fields of a stored task result: (types, low, high); ``None`` is allowed wherever a value may be absent
RESULT_FIELDS: dict[str, tuple[tuple[type, ...], float, float]] = {
    "n_train": ((int,), 1, math.inf), "d": ((int,), 1, math.inf), "p": ((int,), 1, math.inf),
    "sigma": (_NUMBER, 0.0, math.inf), "epsilon_target": (_NUMBER, 0.0, math.inf),
    "epsilon_certified": (_NUMBER, 0.0, math.inf), "epsilon_local": (_NUMBER, 0.0, math.inf),
    "loss_star": (_NUMBER, -math.inf, math.inf), "accuracy_nonprivate": (_NUMBER, 0.0, 1.0),
    "rmse_nonprivate": (_NUMBER, 0.0, math.inf), "accuracy_guess": (_NUMBER, 0.0, 1.0),
    "rmse_guess": (_NUMBER, 0.0, math.inf), "seconds": (_NUMBER, 0.0, math.inf),
    "wall_seconds": (_NUMBER, 0.0, math.inf),
}
#: … and of each of its runs
RUN_FIELDS: dict[str, tuple[tuple[type, ...], float, float]] = {
    "seed": ((int,), 0, math.inf), "accuracy": (_NUMBER, 0.0, 1.0), "rmse": (_NUMBER, 0.0, math.inf),
    "gap": (_NUMBER, -math.inf, math.inf),
}


def _check_fields(obj: dict, declared: dict, where: str) -> None:
    for name, (types, low, high) in declared.items():
        value = obj.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            raise ValueError(f"{where}{name} is not a number of the right kind")
        if not (low <= value <= high):
            raise ValueError(f"{where}{name} = {value!r} is outside [{low:g}, {high:g}]")


def _check_record(rec: Any, key: str, config: RunSpec | None) -> None:
    """Raise ValueError unless ``rec`` is what :func:`run_tasks` writes for this task."""
    if not isinstance(rec, dict) or rec.get("key") != key:
        raise ValueError("written for another task")
    if config is not None and rec.get("config") != json.loads(dumps(_config_record(config))):
        raise ValueError("its configuration is not the task's")
    result = rec.get("result")
    if not isinstance(result, dict):
        raise ValueError("no result object")
    if "error" in result:
        if not isinstance(result["error"], str):
            raise ValueError("an error that is not text")
        return
    runs = result.get("runs")
    if not isinstance(runs, list) or not runs or not all(isinstance(r, dict) for r in runs):
        raise ValueError("no list of runs")
    if config is not None and len(runs) != config.repeats:
        raise ValueError(f"{len(runs)} runs for {config.repeats} repeats")
    for r in runs:
        for name, value in r.items():
            if value is not None and not isinstance(value, (bool, int, float, str)):
                raise ValueError(f"run field {name!r} is not a number")
        _check_fields(r, RUN_FIELDS, "a run's ")
    _check_fields(result, RESULT_FIELDS, "")
    for name in ("warnings", "client_sizes"):
        if result.get(name) is not None and not isinstance(result[name], list):
            raise ValueError(f"{name} is not a list")


def _check_certificate(result: dict, config: RunSpec, ctx: Context | None) -> None:
    """Recompute what a stored record claims of privacy and of its data: the refusal, or the
    certified ε, the target and the training rows (the noise plan's accounting; no training)."""
    try:
        plan = noise_plan(config, ctx)
    except DPCoreError as exc:
        if result.get("error") != str(exc):
            raise ValueError("a refusal the code does not give for this configuration") from None
        return
    except NotImplementedError:  # a plan the data decide (the clients' split): known only by training
        plan = None
    if "error" in result:
        if plan is not None:
            raise ValueError("a refusal of a configuration the code runs")
        return
    if plan is not None:
        claimed = result.get("epsilon_certified")
        certified = certify(plan, config.delta)
        if not same_certificate(claimed, certified, certificate_error(plan, config.delta)):  # another CPU's rounding
            raise ValueError(f"certified ε {claimed!r}, but the configuration's noise certifies {certified!r}")
    data, _ = problem_data(config)
    if result.get("n_train") != data.n:
        raise ValueError(f"n_train {result.get('n_train')!r}, but the data have {data.n} training rows")
    target = config.epsilon if get_mechanism(config.mechanism).private else None  # ∞ is stored as null
    if result.get("epsilon_target") != target:
        raise ValueError(f"target ε {result.get('epsilon_target')!r}, not the configuration's")


def check_table(table: pd.DataFrame, configs: Sequence[dict[str, Any]], ctx: Context | None = None) -> None:
    """Raise ``ValueError`` (saying what) unless ``table`` is the tidy table :func:`tidy_rows` makes of
    the tasks ``configs`` (a sweep record's: each a configuration with its ``key``): the same rule as
    :func:`check_record`, for a shipped table.  Every column :data:`RESULT_FIELDS` and
    :data:`RUN_FIELDS` declare holds numbers in their ranges; every row's settings are its task's;
    each task has its repeats' rows (or one refusal); and each task's certified ε, target, training
    rows or refusal are recomputed from its configuration (:func:`_check_certificate`)."""
    if not isinstance(configs, list) or not configs or not all(isinstance(c, dict) for c in configs):
        raise ValueError("its record lists no configurations")
    missing = [c for c in ("task", "epsilon_certified", "error", "dataset", "mechanism", "epsilon")
               if c not in table.columns]
    if missing or table.empty:
        raise ValueError(f"no column {missing[0]!r}" if missing else "no rows")
    for name, (_, low, high) in {**RESULT_FIELDS, **RUN_FIELDS}.items():
        if name not in table.columns:
            continue
        col = table[name]
        if col.dtype == bool or not (pd.api.types.is_numeric_dtype(col) or col.isna().all()):
            raise ValueError(f"column {name!r} holds text where numbers belong")
        values = col.dropna().to_numpy(dtype=float)
        bad = values[~((values >= low) & (values <= high))]
        if bad.size:
            raise ValueError(f"{name} = {bad[0]!r} is outside [{low:g}, {high:g}]")
    by_key = {}
    for c in configs:
        try:
            by_key[c["key"]] = (c, _config_from_record(c))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"a configuration of its record is not one this code runs ({exc})") from None
    errors = table["error"].where(table["error"].notna(), None)
    for key, rows in table.groupby("task", sort=False):
        if key not in by_key:
            raise ValueError(f"rows of task {key!r}, which its record does not list")
        stored, config = by_key[key]
        for name in (c for c in _CONFIG_COLUMNS if c not in _RESULT_COLUMNS):
            if name not in table.columns:  # a column older tables lack: the setting at its default
                if not _same_setting(getattr(config, name), None):
                    raise ValueError(f"task {key}: no column {name!r} for its setting {getattr(config, name)!r}")
                continue
            want, got = getattr(config, name), rows[name].iloc[0]
            if not (rows[name] == got).all() and not rows[name].isna().all():
                raise ValueError(f"task {key}: its rows disagree on {name}")
            if not _same_setting(want, got):
                raise ValueError(f"task {key}: {name} = {got!r} in the table, {want!r} in its configuration")
        refusal = errors[rows.index].dropna()
        if len(refusal):
            result = {"error": str(refusal.iloc[0])}
            if len(rows) != 1:
                raise ValueError(f"task {key}: a refusal and runs")
        else:
            if len(rows) != config.repeats:
                raise ValueError(f"task {key}: {len(rows)} runs for {config.repeats} repeats")
            for name in RUN_FIELDS:  # a metric a run has, every run of the task has (else the mean moves)
                if name in rows and 0 < rows[name].isna().sum() < len(rows):
                    raise ValueError(f"task {key}: {name} is missing in some of its runs")
            first = rows.iloc[0]
            result = {f: (None if pd.isna(first[f]) or (f.startswith("epsilon") and first[f] == math.inf)
                          else float(first[f])) for f in ("epsilon_certified", "epsilon_target")}
            result["n_train"] = None if pd.isna(first.get("n_train")) else int(first["n_train"])
        claims = (key, "check_table", *(result.get(f) for f in _CERTIFICATE_CLAIMS))
        _VERIFIED.get(claims, lambda: _check_certificate(result, config, ctx))
    absent = set(by_key) - set(table["task"])
    if absent:
        raise ValueError(f"{len(absent)} configurations of its record have no rows")


def _same_setting(want: Any, got: Any) -> bool:
    """A configuration's value and a table cell read back by pandas (a number as float, ``None`` as NaN,
    a tuple as its text)."""
    if want is None or (isinstance(want, tuple) and not want and (got is None or pd.isna(got))):
        return got is None or (not isinstance(got, str) and pd.isna(got))
    if isinstance(want, bool) or isinstance(want, str):
        return str(want) == str(got)
    if isinstance(want, tuple):
        return str(want) == str(got)
    try:
        return float(want) == float(got)
    except (TypeError, ValueError):
        return False


_LOG = logging.getLogger(__name__)


# Keys of RunResult.to_dict() kept per task (the per-run metrics are under "runs").
_SUMMARY_KEYS = (
    "dataset_name", "mechanism_name", "task", "n_train", "d", "p", "sigma", "epsilon_target",
    "epsilon_certified", "epsilon_local", "loss_star", "accuracy_nonprivate", "rmse_nonprivate",
    "accuracy_guess", "rmse_guess",
    "seconds", "warnings", "client_sizes",
)


def execute(config_record: dict[str, Any], threads: int | None = 1,
            erm_dir: str | None = None, dataset=None, trace_points: int = 0,
            ctx: Context | None = None) -> dict[str, Any]:
    """Run one task (in whatever process this is) and return its JSON-able record.

    A setting the core refuses (a :class:`DPCoreError`) is a result too: the
    record carries ``error`` and is cached like any other, so the same grid
    does not try it again; a refusal by this machine's budget
    (:class:`~dpcore.exceptions.BudgetError`, marked ``budget``) is not cached, so a
    sweep rerun with a larger ``DPCORE_WORK_BUDGET`` computes it.  ``dataset``: a
    user's own data (see :func:`run`).
    ``ctx``: the caller's context, when the task runs in the caller's process
    (its store is reused); a worker process builds one from ``erm_dir``.
    """
    return execute_many([config_record], threads, erm_dir, dataset, trace_points, ctx)[0]


def execute_many(config_records: Sequence[dict[str, Any]], threads: int | None = 1,
                 erm_dir: str | None = None, dataset=None, trace_points: int = 0,
                 ctx: Context | None = None, policy: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """:func:`execute` for several tasks; those that can train as one batch do
    (:func:`~dpcore.experiments.run.run_many`); a task's ``wall_seconds`` is its share.
    ``policy``: the grid's execution policy (:func:`policy_of` its context) for the context a
    worker process builds."""
    t0 = time.perf_counter()
    if ctx is None:
        ctx = Context(erm_dir=erm_dir, trace_points=trace_points, **(policy or {}))
    else:  # the grid reports whole tasks: the task's own steps are not the grid's progress
        ctx = ctx.with_(trace_points=trace_points, progress=None)
    specs = [_config_from_record(r) for r in config_records]
    sparse_threads = linalg.limit_threads(threads) if threads else contextlib.nullcontext()
    with threadpool_limits(limits=threads), sparse_threads:
        outcomes = run_outcomes(specs, ctx, dataset=dataset)
    wall = time.perf_counter() - t0
    total = sum(spec.repeats for spec in specs)
    records = []
    for spec, outcome in zip(specs, outcomes):
        share = wall * spec.repeats / total
        if isinstance(outcome, DPCoreError):
            records.append({"error": str(outcome), "wall_seconds": share,
                            **({"budget": True} if isinstance(outcome, BudgetError) else {})})
            continue
        result = outcome.to_dict()
        out = {k: result.get(k) for k in _SUMMARY_KEYS}
        out["runs"] = result["runs"]
        out["wall_seconds"] = share
        out["host"] = platform.node()
        records.append(out)
    return records


def _execute_keyed(keys: Sequence[str], config_records: Sequence[dict[str, Any]], threads: int | None,
                   erm_dir: str | None = None, dataset=None, trace_points: int = 0,
                   ctx: Context | None = None, policy: dict[str, Any] | None = None) -> list[tuple[str, dict]]:
    return list(zip(keys, execute_many(config_records, threads, erm_dir, dataset, trace_points, ctx, policy)))


def policy_of(ctx: Context) -> dict[str, Any]:
    """The part of a context a worker process needs besides its folders: the budget and the stacking."""
    return {"budget": ctx.budget, "stack_runs": ctx.stack_runs}


def bundles(tasks: Sequence[Task], limit: int = DEFAULT_STACK_RUNS) -> list[list[Task]]:
    """The tasks in groups that train as one batch (:func:`~dpcore.experiments.run.stack_groups`,
    at most ``limit`` runs each): a preset's ε × learning-rate grid of one mechanism is one bundle."""
    return [[tasks[i] for i in group] for group in stack_groups([t.config for t in tasks], limit)]


@dataclass
class SweepResult:
    tasks: list[Task]
    results: dict[str, dict]  # key -> task record
    computed: int
    cached: int
    wall_seconds: float

    def rows(self, extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        return tidy_rows(self.tasks, self.results, extra)


def _folder(path: Path | None) -> str | None:
    return None if path is None else str(Path(path).resolve())


def dispatch(tasks: Sequence[Task], ctx: Context, threads: int | None, trace_points: int, dataset=None):
    """Run tasks (no result cache) and yield ``(key, record)`` as each finishes.

    Tasks that can train as one batch go together (:func:`bundles`).  One worker (or a
    user's own ``dataset``, which never leaves this process) runs them here, in order,
    with ``ctx``'s store; more use loky worker processes, which share exact solutions
    through ``ctx.erm_dir``, for every bundle but the first, which runs here meanwhile.
    """
    erm_dir = _folder(ctx.erm_dir)
    workers = ctx.n_workers
    groups = _schedule(bundles(tasks, ctx.stack_runs) if workers == 1 or dataset is not None
                       else _for_workers(tasks, workers, ctx.stack_runs))

    def args(group):
        return [t.key for t in group], [_config_record(t.config) for t in group]

    if workers == 1 or len(groups) <= 1 or dataset is not None:
        for group in groups:
            yield from _execute_keyed(*args(group), threads, erm_dir, dataset, trace_points, ctx)
        return
    par = Parallel(n_jobs=min(workers, len(groups) - 1), backend="loky", return_as="generator_unordered")
    rest = par(delayed(_execute_keyed)(*args(group), threads, erm_dir, None, trace_points, None, policy_of(ctx))
               for group in groups[1:])
    # the first (cheapest) bundle here, while the workers start and take the rest: the first
    # curve does not wait for a worker process to start (about 2 s on a new server); the same
    # code and thread settings as in a worker, so the same numbers
    yield from _execute_keyed(*args(groups[0]), threads, erm_dir, None, trace_points, ctx)
    for done in rest:
        yield from done


def _steps(group: Sequence[Task]) -> int:
    """A bundle's size in runs × steps (the work estimate's factor that varies within a grid)."""
    return sum(t.config.repeats * (t.config.iterations if getattr(REGISTRY.get(t.config.mechanism), "iterative", True)
                                   else 1) for t in group)


def task_cost(config: RunSpec, dataset=None) -> float | None:
    """What a task costs in the work budget's units: :func:`~dpcore.experiments.run.work_estimate`
    of its runs, plus one pass over the rows per run for its metrics, on the registered data's
    documented shape (nothing is loaded; ``dataset``: a user's own, whose shape is known), or
    ``None`` when the shape or a setting is unknown.  What a grid's time left weighs its finished
    configurations by (:class:`~dpcore.experiments.progress.TimeLeft`): a tuned DP-GD at T = 800
    against an output perturbation; it never changes a number."""
    try:
        if dataset is not None:
            n, d = dataset.n, dataset.d
        else:
            spec = _datasets.get_spec(config.dataset)
            if spec.synthetic:  # the generator's defaults, and its bias column
                defaults = _datasets.load.__kwdefaults__
                n, d = config.n or defaults["n"], (config.d or defaults["d"]) + 1
            else:
                n, d = config.n or spec.n_train, spec.d
        if not n or not d:
            return None
        mechanism = get_mechanism(config.mechanism)
        model = make_model(config.model, lam=config.lam, radius=config.radius)
        runs = work_estimate(config, SimpleNamespace(n=int(n), d=int(d)), model, mechanism)
        steps = max(1.0, float(mechanism.work_steps(config, int(n))))
        cost = runs * (steps + 1) / steps  # the metrics: one more pass per run
    except (DPCoreError, ArithmeticError, AttributeError, LookupError, TypeError, ValueError):
        return None  # the grid's bar then counts configurations; the grid itself is not concerned
    return cost if math.isfinite(cost) and cost > 0 else None


def _for_workers(tasks: Sequence[Task], workers: int, limit: int = DEFAULT_STACK_RUNS) -> list[list[Task]]:
    """:func:`bundles`, with every bundle larger than an even share of the work halved (by its
    configurations) until none is, where that changes no number: a bundle that would keep one
    worker busy long after the others finished (Compare at the tuned settings on Adult: DP-GD's
    30 runs × 800 steps, a third of the whole) is shared instead.  Only the stacks whose runs are
    computed apart from each other are split (:func:`_split_exact`); the others stay whole."""
    groups = bundles(tasks, limit)
    share = sum(_steps(g) for g in groups) / (workers + 1)  # the workers and this process

    def halve(group: list[Task]) -> list[list[Task]]:
        if len(group) < 2 or _steps(group) <= share or not _split_exact(group[0].config):
            return [group]
        half, cut = _steps(group) / 2, 1
        while cut < len(group) - 1 and _steps(group[:cut]) < half:
            cut += 1
        return halve(group[:cut]) + halve(group[cut:])

    return [part for g in groups for part in halve(g)]


def _split_exact(config: RunSpec) -> bool:
    """Whether a stack of this configuration's kind gives every run the bits it has alone: a
    gradient mechanism (each run's noise from its own generator) on a model whose runs are
    computed apart (:attr:`~dpcore.models.Model.runs_independent`) and data with a sparse twin
    (each run's products are its own column of the block products).  Dense data's batched
    BLAS products differ with the batch's size (about 1e-12), so their stacks stay whole."""
    try:
        mechanism, model = REGISTRY.get(config.mechanism), make_model(config.model)
        return (mechanism is not None and mechanism.family == "gradient" and model.runs_independent
                and linalg.is_sparse(load_dataset(config).X_train))
    except DPCoreError:
        return False


def _schedule(groups: list[list[Task]]) -> list[list[Task]]:
    """The cheapest bundle first (the first curve appears soon), then the longest first (so
    the last one to finish is a short one, and two workers finish together)."""
    if len(groups) <= 2:
        return groups
    cheapest = min(range(len(groups)), key=lambda i: _steps(groups[i]))
    rest = sorted((g for i, g in enumerate(groups) if i != cheapest), key=_steps, reverse=True)
    return [groups[cheapest], *rest]


def _warm(config_record: dict[str, Any], erm_dir: str | None = None) -> str:
    config = _config_from_record(config_record)
    ctx = Context(erm_dir=erm_dir)
    with threadpool_limits(limits=1):
        try:
            if slow_reference(config, ctx) is not None:
                load_dataset(config)  # a minutes-long reference is left to the run that needs it
                return "data loaded"
            load_problem(config, ctx=ctx)
        except DPCoreError as exc:  # the real run will report it where the user sees it
            return f"not warmed: {exc}"
    return "warm"


_warming = threading.Lock()


def warm_workers(config: RunSpec, ctx: Context) -> threading.Thread | None:
    """Start :func:`dispatch`'s worker processes in the background and have each load
    ``config``'s data and exact solution (from ``ctx.erm_dir`` when it is there).

    Returns at once (with the background thread, or ``None`` when there is
    nothing to do or a warm-up is already under way).  A comparison started
    afterwards finds its workers running with the imports, the dataset and the
    ERM solution in memory: about 3 s of start-up on Adult that the user would
    otherwise wait for.  Loky keeps idle workers for 5 minutes.
    """
    workers = ctx.n_workers
    if workers <= 1 or not _warming.acquire(blocking=False):
        return None
    record = _config_record(config)
    folder = _folder(ctx.erm_dir)

    def go():
        try:
            Parallel(n_jobs=workers, backend="loky")(delayed(_warm)(record, folder) for _ in range(workers))
        except Exception as exc:  # noqa: BLE001 - a failed warm-up only loses the time it saves
            logging.getLogger(__name__).info("worker warm-up failed: %s", exc)
        finally:
            _warming.release()

    thread = threading.Thread(target=go, name="dpcore-warm-workers", daemon=True)
    thread.start()
    return thread


def _dispatch_dask(pending: list[Task], scheduler: Any, threads: int | None, erm_dir: str | None,
                   trace_points: int, policy: dict[str, Any] | None = None):
    try:  # optional: only a grid sent to a Dask cluster needs it
        from distributed import Client, as_completed
    except ImportError:  # pragma: no cover - dask is a listed dependency
        raise ParameterError("--scheduler needs dask.distributed: pip install 'dask[distributed]'")
    client = scheduler if isinstance(scheduler, Client) else None
    own = client is None
    if own:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            raise ParameterError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    try:
        futures = [
            client.submit(_execute_keyed, [t.key for t in group], [_config_record(t.config) for t in group],
                          threads, erm_dir, None, trace_points, None, policy,
                          key=f"dpcore-task-{group[0].key}", pure=False)
            for group in bundles(pending, (policy or {}).get("stack_runs", DEFAULT_STACK_RUNS))
        ]
        for fut in as_completed(futures):
            yield from fut.result()
    finally:
        if own:
            client.close()


def _compute(pending: list[Task], ctx: Context, dataset=None):
    """``(key, record)`` of each task, in the order they finish, as ``ctx`` says to run them."""
    if not pending:
        return
    parallel = ctx.scheduler is not None or (ctx.n_workers > 1 and dataset is None
                                             and len(_for_workers(pending, ctx.n_workers, ctx.stack_runs)) > 1)
    threads = ctx.threads if ctx.threads is not None else (1 if parallel else None)
    points = 0 if ctx.trace_points is None else int(ctx.trace_points)
    with contextlib.ExitStack() as stack:
        run_ctx = ctx
        if parallel and ctx.erm_dir is None:
            run_ctx = ctx.with_(erm_dir=Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="dpcore-erm-"))))
        yield from (_dispatch_dask(pending, ctx.scheduler, threads, _folder(run_ctx.erm_dir), points, policy_of(ctx))
                    if ctx.scheduler is not None
                    else dispatch(pending, run_ctx, threads, points, dataset))


def run_tasks(tasks: Sequence[Task], ctx: Context, *, dataset=None,
              on_result: Callable[[Task, dict], None] | None = None) -> SweepResult:
    """Run every task not already in ``ctx.results_dir``; return all results.

    ``on_result(task, record)`` hears of each task as its record exists (cached ones first,
    then in the order they finish), so a view can draw what is done while the rest computes.

    Local processes or Dask as ``ctx`` says; ``ctx.progress(done, total, label)``
    is called once per task, cached ones included (with ``work=(done, total)``, the tasks'
    :func:`task_cost` computed so far and in all, when the callback takes it:
    :meth:`Context.tell`).  Exact solutions are shared
    through ``ctx.erm_dir``; a grid spread over several processes without one
    gets a temporary folder for its duration (for a Dask cluster, a folder its
    workers cannot see only means each worker solves, as it would anyway).  Single flight:
    a task that another thread of this process (another session of the app) is computing
    into the same results folder is waited for and read, not computed twice.
    """
    tasks = list(tasks)
    keys = [t.key for t in tasks]
    if len(set(keys)) != len(keys):
        raise ParameterError("the sweep lists the same configuration twice")
    # a user's own data is not in the key: its results are never stored
    cache = None if ctx.results_dir is None or dataset is not None else ctx.results
    t0 = time.perf_counter()
    results: dict[str, dict] = {}
    pending: list[Task] = []
    hits: list[tuple[Task, dict]] = []
    for t in tasks:
        hit = None if cache is None else cache.read(t.key, check_record(t.key, t.config, ctx))
        if hit is not None:
            hits.append((t, hit["result"]))
        else:
            pending.append(t)
    # single flight: a task another session of this process is computing is waited for, not computed;
    # every task claimed here is landed on every path (a budget's refusal, a callback that raises)
    with (cache.sharing([t.key for t in pending]) if cache is not None
          else contextlib.nullcontext(([t.key for t in pending], {}, lambda key, value: None))) as (mine, theirs, land):
        by_key = {t.key: t for t in pending}
        # the work left in the work budget's units, when every task's cost is known (else counts)
        costs = {t.key: task_cost(t.config, dataset) for t in pending}
        work_total = sum(costs.values()) if None not in costs.values() else None
        work_done = 0.0
        done = 0

        def arrived(task: Task, rec: dict, label: str) -> None:
            nonlocal done, work_done
            key = task.key
            results[key] = rec
            done += 1
            if work_total is not None and key in costs:
                work_done += costs[key]
            ctx.tell(done, len(tasks), label, work=None if work_total is None else (work_done, work_total))
            if on_result is not None:
                on_result(task, rec)

        for t, result in hits:
            arrived(t, result, f"{t.label()} (cached)")
        for key, rec in _compute([by_key[k] for k in mine], ctx, dataset):
            if cache is not None and not rec.get("budget"):  # a budget's refusal is this machine's: not kept
                cache.write(key, {"key": key, "config": _config_record(by_key[key].config), "result": rec})
            land(key, None if rec.get("budget") else rec)  # a waiter meets the budget itself
            status = "error: " + rec["error"] if "error" in rec else f"{rec['wall_seconds']:.2f}s"
            arrived(by_key[key], rec, f"{by_key[key].label()} ({status})")
    orphans = []
    for key, flight in theirs.items():
        rec = flight.wait()
        if rec is None:
            orphans.append(by_key[key])
        else:
            arrived(by_key[key], rec, f"{by_key[key].label()} (computed by another session)")
    for key, rec in _compute(orphans, ctx, dataset):
        arrived(by_key[key], rec, by_key[key].label())
    return SweepResult(tasks=tasks, results=results, computed=len(pending),
                       cached=len(tasks) - len(pending), wall_seconds=time.perf_counter() - t0)


# --------------------------------------------------------------------------
# tidy table

_CONFIG_COLUMNS = [f.name for f in fields(RunSpec) if f.name != "options"]
#: a task's results in each of its rows (``d``, the data's dimension, replaces the setting of that name)
_RESULT_COLUMNS = ("mechanism_name", "n_train", "d", "sigma", "epsilon_target", "epsilon_certified",
                   "epsilon_local", "accuracy_nonprivate", "rmse_nonprivate", "accuracy_guess", "rmse_guess",
                   "loss_star")


def tidy_rows(tasks: Sequence[Task], results: dict[str, dict],
              extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per run: every setting, the task's tags and every metric.

    A task that the core refused gives one row with ``error`` set.
    """
    rows: list[dict[str, Any]] = []
    for t in tasks:
        rec = results[t.key]
        base: dict[str, Any] = dict(extra or {})
        base["task"] = t.key
        base.update(dict(t.tags))
        for name in _CONFIG_COLUMNS:
            base[name] = getattr(t.config, name)
        for k, v in t.config.options:
            base[f"option_{k}"] = v
        if "error" in rec:
            rows.append({**base, "run": None, "error": rec["error"]})
            continue
        for k in _RESULT_COLUMNS:
            v = rec.get(k)
            base[k] = math.inf if v is None and k.startswith("epsilon") else v
        base["task_seconds"] = rec.get("seconds")
        if rec.get("client_sizes"):
            base["client_sizes"] = " ".join(str(s) for s in rec["client_sizes"])
        for r, run_rec in enumerate(rec["runs"]):
            row = dict(base)
            row["run"] = r
            row["run_seed"] = run_rec["seed"]
            for metric in ("accuracy", "rmse", "gap"):
                if metric in run_rec:
                    row[metric] = run_rec[metric]
            row["diverged"] = bool(run_rec.get("diverged", False))
            row["error"] = None
            rows.append(row)
    return rows


def environment() -> dict[str, Any]:
    """Versions of everything that can change a number."""
    pkgs = {}
    for name in ("numpy", "scipy", "scikit-learn", "pandas", "dp-accounting", "plotly", "joblib",
                 "dask", "distributed", "threadpoolctl"):
        try:
            pkgs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pkgs[name] = None
    return {"dpcore": __version__, "git_commit": _git_commit(), "python": sys.version.split()[0],
            "platform": platform.platform(), "packages": pkgs, **_kernels()}


#: prefixes of the environment variables that choose a numerical kernel, its blocking or a thread count
#: (and so the last bits of a number): OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, NPY_DISABLE_CPU_FEATURES, …
KERNEL_VARIABLES = ("OPENBLAS_", "GOTO", "OMP_", "MKL_", "BLIS_", "NPY_")


def _kernels() -> dict[str, Any]:
    """What picks the kernels a number was computed by (SPEC §9, the reproducibility contract): the CPU,
    every BLAS/OpenMP library loaded (threadpoolctl's ``threadpool_info``) with its version, the core type
    it dispatched to (OpenBLAS's ``architecture``: a Haswell kernel sums a product in another order than a
    SkylakeX one) and its default threads (a preset's run sets one per task itself), numpy's SIMD dispatch
    targets enabled at run time, and the variables that override them."""
    out: dict[str, Any] = {"cpu": _cpu_model()}
    try:
        keys = ("internal_api", "version", "architecture", "threading_layer", "num_threads", "prefix")
        out["threadpools"] = [{k: lib.get(k) for k in keys} for lib in threadpool_info()]
    except Exception:  # provenance is best effort: never the reason a run fails
        out["threadpools"] = None
    try:
        umath = sys.modules["numpy"]._core._multiarray_umath  # loaded with the package (no import here)
        out["numpy_simd"] = [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]
    except Exception:
        out["numpy_simd"] = None
    out["kernel_variables"] = {k: v for k, v in sorted(os.environ.items()) if k.startswith(KERNEL_VARIABLES)}
    return out


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _git_commit() -> str | None:
    """The commit of the checkout this package runs from (``-dirty`` when the package's own
    source, ``dpcore/``, has local changes), or ``None`` outside a git checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "dpcore"],
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None
