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
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from joblib import Parallel, delayed
from threadpoolctl import threadpool_info, threadpool_limits

from ..numerics import linalg
from .._version import __version__
from .. import datasets as _datasets
from ..exceptions import BudgetError, DPCoreError, ParameterError
from ..cache import code_fingerprint
from ..mechanisms import REGISTRY, get_mechanism
from ..models import make_model
from .context import DEFAULT_STACK_RUNS, Context
from .records import (CONFIG_COLUMNS, RESULT_COLUMNS, RESULT_FIELDS, RUN_FIELDS, check_record,  # the reads
                      check_table, config_from_record, config_record)
from .run import (BUDGET_SCALE, RunSpec, load_dataset, load_problem, run_outcomes, slow_reference, stack_groups,
                  work_estimate)

__all__ = ["results_fingerprint", "Task", "SweepResult", "task_key", "task_cost", "execute", "dispatch", "warm_workers", "run_tasks",
           "tidy_rows", "check_table", "check_record", "RESULT_FIELDS", "RUN_FIELDS", "environment", "CACHE_SCHEMA"]

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


def task_key(config: RunSpec) -> str:
    """Content hash of a configuration and of the code that computes it (the package's
    version and every source file of it: a changed mechanism never reads an old result)."""
    payload = json.dumps(
        {"config": config_record(config), "dpcore": __version__, "schema": CACHE_SCHEMA,
         "source": results_fingerprint()},
        sort_keys=True, allow_nan=True, default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


#: the modules that cannot change a task's record (presentation, studies that only arrange runs,
#: the audit): a change to one of them keeps the stored results; a change anywhere else
#: (a mechanism, the accountant, a solver, a new module) computes them again
NOT_IN_RESULTS = ("cli/*", "__main__.py", "__init__.py", "figures/*", "export/*", "report.py",
                  "estimators.py", "certify/*",
                  "shipped.py", "verified.py",  # read and check shipped files, compute no result
                  "lesson.py",  # arranges the lesson's runs
                  "theory/catalog.py", "theory/rows.py", "audit/*", "experiments/studies.py", "experiments/presets*.py",
                  "experiments/views.py", "experiments/tune.py", "experiments/search.py", "experiments/baselines.py",
                  "experiments/progress.py", "experiments/ahead.py")


# pure: a digest of this code's source
@functools.cache
def results_fingerprint() -> str:
    """The code a stored task result belongs to (:func:`dpcore.cache.code_fingerprint` of the
    package but :data:`NOT_IN_RESULTS`): one rule for the results cache's keys and the shipped
    result files."""
    return code_fingerprint(Path(__file__).resolve().parent.parent, NOT_IN_RESULTS)




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
    specs = [config_from_record(r) for r in config_records]
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
        return [t.key for t in group], [config_record(t.config) for t in group]

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
        steps = max(1.0, float(mechanism.work_steps(config, int(n), int(d))))
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
    config = config_from_record(config_record)
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
    record = config_record(config)
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
            client.submit(_execute_keyed, [t.key for t in group], [config_record(t.config) for t in group],
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


#: how many runs' work budgets a view's grid may take together.  The budget's time scale is the
#: slowest mechanism's (about 6 minutes for 2e11); a grid of several runs 3–6× faster than it is
#: priced: Compare's classroom preset, 72 configurations priced 2.4e11, computes in 75 s of CPU
GRID_WORK_BUDGETS = 3


def _check_whole_budget(pending: Sequence[Task], ctx: Context, dataset) -> None:
    """Refuse a grid whose tasks still to compute exceed the work budget together
    (:func:`run_tasks`' ``whole_budget``)."""

    each = ctx.budget.work
    if ctx.budget.error or not math.isfinite(each):
        return  # a broken budget is each run's refusal to say; an infinite one refuses nothing
    costs = [task_cost(t.config, dataset) for t in pending]
    total = sum(c for c in costs if c is not None and c <= each)
    if total > GRID_WORK_BUDGETS * each:
        raise BudgetError(f"the {len(pending):,} configurations still to compute are about {total:.1e} operations "
                          f"in all (a view's grid may take {GRID_WORK_BUDGETS} runs' budgets, "
                          f"{GRID_WORK_BUDGETS * each:.0e}; {BUDGET_SCALE}): lower the repeats or T, or compare "
                          "fewer ε or mechanisms")


def run_tasks(tasks: Sequence[Task], ctx: Context, *, dataset=None,
              on_result: Callable[[Task, dict], None] | None = None, whole_budget: bool = False) -> SweepResult:
    """Run every task not already in ``ctx.results_dir``; return all results.

    ``whole_budget``: the tasks still to compute are one wait for the user (a view's grid), so
    their work in all, not only each task's, must fit :data:`GRID_WORK_BUDGETS` of the context's
    work budget; past it the whole grid is refused before anything runs
    (:class:`~dpcore.exceptions.BudgetError`).  A task past the budget alone is not counted: it is
    refused on its own row, at no cost.

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
    if whole_budget:
        _check_whole_budget(pending, ctx, dataset)
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
                cache.write(key, {"key": key, "config": config_record(by_key[key].config), "result": rec})
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
        for name in CONFIG_COLUMNS:
            base[name] = getattr(t.config, name)
        for k, v in t.config.options:
            base[f"option_{k}"] = v
        if "error" in rec:
            rows.append({**base, "run": None, "error": rec["error"]})
            continue
        for k in RESULT_COLUMNS:
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
