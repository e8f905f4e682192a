"""Named experiments (presets) run as cached, parallel sweeps.

A sweep is a list of :class:`Task` objects, each one :class:`RunConfig` (a
batch of R repeats of one configuration: the coarse unit of work).  Every task
is keyed by a content hash of its configuration and the package version; its
result is written to ``DIR/cache/<hash>.json`` the moment it arrives, so an
interrupted sweep resumes where it stopped and a repeated one does no
training.  Tasks run in local worker processes (joblib, ``loky``) or, given a
scheduler address, on a Dask distributed cluster.  Each task runs with one
BLAS thread, so the numbers do not depend on how many workers ran it.

Exact ERM solutions are kept in ``DIR/cache/erm/`` so that workers share them.
The tidy table comes from :func:`tidy_rows`; :func:`dpcore.presets.run_preset`
writes it with the figure and the JSON record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import platform
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from . import __version__
from .exceptions import DPCoreError, ParameterError
from .experiment import RunConfig, run
from .jsonutil import write_atomic

__all__ = ["Task", "SweepResult", "task_key", "execute", "dispatch", "warm_workers", "run_sweep",
           "tidy_rows", "CACHE_SCHEMA"]

#: bump when the meaning of a cached result changes (the package version is hashed too)
CACHE_SCHEMA = 1
#: how long to wait for a Dask scheduler before giving up with a clear message
CONNECT_TIMEOUT = "10s"

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Task:
    """One configuration (R batched repeats) plus the labels a plot groups by."""

    config: RunConfig
    tags: tuple[tuple[str, Any], ...] = ()

    @property
    def key(self) -> str:
        return task_key(self.config)

    def label(self) -> str:
        c = self.config
        bits = [c.mechanism, c.dataset, c.model, f"ε={c.epsilon:g}"]
        if c.n is not None:
            bits.append(f"n={c.n}")
        if c.clients is not None:
            bits.append(f"m={c.clients} u={c.skew:g}")
        bits.append(f"lr={c.learning_rate:g}")
        return " ".join(bits)


def _config_record(config: RunConfig) -> dict[str, Any]:
    rec = config.to_dict()
    rec["options"] = {k: rec["options"][k] for k in sorted(rec["options"])}
    return rec


def task_key(config: RunConfig) -> str:
    """Content hash of a configuration (and the code version that computes it)."""
    payload = json.dumps(
        {"config": _config_record(config), "dpcore": __version__, "schema": CACHE_SCHEMA},
        sort_keys=True, allow_nan=True, default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def _config_from_record(rec: dict[str, Any]) -> RunConfig:
    rec = dict(rec)
    rec["options"] = tuple(sorted(rec.get("options", {}).items()))
    names = {f.name for f in fields(RunConfig)}
    return RunConfig(**{k: v for k, v in rec.items() if k in names})


# Keys of RunResult.to_dict() kept per task (the per-run metrics are under "runs").
_SUMMARY_KEYS = (
    "dataset_name", "mechanism_name", "task", "n_train", "d", "p", "sigma", "epsilon_target",
    "epsilon_certified", "epsilon_local", "loss_star", "accuracy_nonprivate", "rmse_nonprivate",
    "seconds", "warnings", "client_sizes",
)


def execute(config_record: dict[str, Any], threads: int | None = 1,
            erm_cache: str | None = None, dataset=None) -> dict[str, Any]:
    """Run one task (in whatever process this is) and return its JSON-able record.

    A setting the core refuses (a :class:`DPCoreError`) is a result too: the
    record carries ``error`` and is cached like any other, so the same sweep
    does not try it again.  ``dataset``: a user's own data (see :func:`run`).
    """
    from threadpoolctl import threadpool_limits

    from . import linalg
    from .erm import set_disk_cache
    from .optim import loss_traces

    t0 = time.perf_counter()
    previous = set_disk_cache(erm_cache) if erm_cache is not None else None
    try:
        sparse_threads = linalg.limit_threads(threads) if threads else contextlib.nullcontext()
        with threadpool_limits(limits=threads), sparse_threads, loss_traces(0):
            result = run(_config_from_record(config_record), dataset).to_dict()
    except DPCoreError as exc:
        return {"error": str(exc), "wall_seconds": time.perf_counter() - t0}
    finally:
        if erm_cache is not None:
            set_disk_cache(previous)  # exact solutions are shared only within the sweep
    out = {k: result.get(k) for k in _SUMMARY_KEYS}
    out["runs"] = result["runs"]
    out["wall_seconds"] = time.perf_counter() - t0
    out["host"] = platform.node()
    return out


def _execute_keyed(key: str, config_record: dict[str, Any], threads: int | None,
                   erm_cache: str | None = None, dataset=None) -> tuple[str, dict]:
    return key, execute(config_record, threads, erm_cache, dataset)


# --------------------------------------------------------------------------
# cache


class _Cache:
    def __init__(self, root: Path):
        self.dir = root / "cache"
        self.dir.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def get(self, key: str) -> dict | None:
        p = self.path(key)
        if not p.exists():
            return None
        try:
            return json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            return None  # a torn or foreign file: compute again

    def put(self, key: str, config: RunConfig, result: dict) -> None:
        # atomic: a killed sweep never leaves half a result
        write_atomic(self.path(key), {"key": key, "config": _config_record(config), "result": result})


# --------------------------------------------------------------------------
# running


@dataclass
class SweepResult:
    tasks: list[Task]
    results: dict[str, dict]  # key -> task record
    computed: int
    cached: int
    wall_seconds: float
    paths: dict[str, str] = field(default_factory=dict)

    def rows(self, extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        return tidy_rows(self.tasks, self.results, extra)


def dispatch(tasks: Sequence[Task], workers: int = 1, threads: int | None = 1,
             erm_cache: str | None = None, dataset=None):
    """Run tasks (no cache) and yield ``(key, record)`` as each finishes.

    ``workers == 1`` runs them here, in order; more use loky worker processes
    (``joblib``), which stay alive between calls and keep their data caches warm.
    ``threads``: BLAS threads per task (``None`` leaves the library's choice).
    ``dataset``: a user's own data; such tasks run here, never in shared workers.
    """
    if workers == 1 or len(tasks) <= 1 or dataset is not None:
        for t in tasks:
            yield _execute_keyed(t.key, _config_record(t.config), threads, erm_cache, dataset)
        return
    from joblib import Parallel, delayed

    par = Parallel(n_jobs=min(workers, len(tasks)), backend="loky", return_as="generator_unordered")
    yield from par(delayed(_execute_keyed)(t.key, _config_record(t.config), threads, erm_cache)
                   for t in tasks)


def _warm(config_record: dict[str, Any], erm_cache: str | None = None) -> str:
    from threadpoolctl import threadpool_limits

    from .erm import set_disk_cache
    from .experiment import _load_dataset, load_problem, slow_reference

    config = _config_from_record(config_record)
    previous = set_disk_cache(erm_cache) if erm_cache is not None else None
    with threadpool_limits(limits=1):
        try:
            if slow_reference(config) is not None:
                _load_dataset(config)  # a minutes-long reference is left to the run that needs it
                return "data loaded"
            load_problem(config)
        except DPCoreError as exc:  # the real run will report it where the user sees it
            return f"not warmed: {exc}"
        finally:
            if erm_cache is not None:
                set_disk_cache(previous)
    return "warm"


_warming = threading.Lock()


def warm_workers(config: RunConfig, workers: int) -> threading.Thread | None:
    """Start :func:`dispatch`'s worker processes in the background and have each load
    ``config``'s data and exact solution.

    Returns at once (with the background thread, or ``None`` when there is
    nothing to do or a warm-up is already under way).  A comparison started
    afterwards finds its workers running with the imports, the dataset and the
    ERM solution in memory: about 3 s of start-up on Adult that the user would
    otherwise wait for.  Loky keeps idle workers for 5 minutes.
    """
    if workers <= 1 or not _warming.acquire(blocking=False):
        return None
    from .erm import disk_cache

    record = _config_record(config)
    folder = None if disk_cache() is None else str(disk_cache())

    def go():
        try:
            from joblib import Parallel, delayed

            Parallel(n_jobs=workers, backend="loky")(delayed(_warm)(record, folder) for _ in range(workers))
        except Exception as exc:  # noqa: BLE001 - a failed warm-up only loses the time it saves
            logging.getLogger(__name__).info("worker warm-up failed: %s", exc)
        finally:
            _warming.release()

    thread = threading.Thread(target=go, name="dpcore-warm-workers", daemon=True)
    thread.start()
    return thread


def _dispatch_dask(pending: list[Task], scheduler: Any, threads: int, erm_cache: str | None):
    try:
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
            client.submit(_execute_keyed, t.key, _config_record(t.config), threads, erm_cache,
                          key=f"dpcore-task-{t.key}", pure=False)
            for t in pending
        ]
        for fut in as_completed(futures):
            yield fut.result()
    finally:
        if own:
            client.close()


def run_sweep(
    tasks: Sequence[Task],
    out: str | os.PathLike,
    *,
    workers: int | None = None,
    scheduler: Any = None,
    threads: int = 1,
    progress: Progress | None = None,
) -> SweepResult:
    """Run every task not already in ``out``'s cache; return all results.

    ``workers``: local processes (default: the number of CPUs; 1 runs in this
    process).  ``scheduler``: a Dask scheduler address (or ``Client``), which
    takes the place of local workers.  ``progress(done, total, label)`` is
    called once per task, cached ones included.
    """
    tasks = list(tasks)
    keys = [t.key for t in tasks]
    if len(set(keys)) != len(keys):
        raise ParameterError("the sweep lists the same configuration twice")
    root = Path(out)
    cache = _Cache(root)
    workers = (os.cpu_count() or 1) if workers is None else int(workers)
    if workers < 1:
        raise ParameterError(f"--workers must be at least 1, got {workers}")
    t0 = time.perf_counter()
    results: dict[str, dict] = {}
    pending: list[Task] = []
    done = 0
    for t in tasks:
        hit = cache.get(t.key)
        if hit is not None:
            results[t.key] = hit["result"]
            done += 1
            if progress:
                progress(done, len(tasks), f"{t.label()} (cached)")
        else:
            pending.append(t)
    by_key = {t.key: t for t in pending}
    if pending:
        # exact ERM solutions go to the cache folder too (for a Dask cluster, only when its
        # workers can see this path; otherwise each worker solves, as it would anyway)
        erm_cache = str((cache.dir / "erm").resolve())
        stream = (_dispatch_dask(pending, scheduler, threads, erm_cache) if scheduler is not None
                  else dispatch(pending, workers, threads, erm_cache))
        for key, rec in stream:
            cache.put(key, by_key[key].config, rec)
            results[key] = rec
            done += 1
            if progress:
                status = "error: " + rec["error"] if "error" in rec else f"{rec['wall_seconds']:.2f}s"
                progress(done, len(tasks), f"{by_key[key].label()} ({status})")
    return SweepResult(tasks=tasks, results=results, computed=len(pending),
                       cached=len(tasks) - len(pending), wall_seconds=time.perf_counter() - t0)


# --------------------------------------------------------------------------
# tidy table

_CONFIG_COLUMNS = [f.name for f in fields(RunConfig) if f.name != "options"]


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
        for k in ("mechanism_name", "n_train", "d", "sigma", "epsilon_target", "epsilon_certified",
                  "epsilon_local", "accuracy_nonprivate", "rmse_nonprivate", "loss_star"):
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
            row["error"] = None
            rows.append(row)
    return rows


def environment() -> dict[str, Any]:
    """Versions of everything that can change a number."""
    from importlib import metadata

    pkgs = {}
    for name in ("numpy", "scipy", "scikit-learn", "pandas", "dp-accounting", "plotly", "joblib",
                 "dask", "distributed", "threadpoolctl"):
        try:
            pkgs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pkgs[name] = None
    return {"dpcore": __version__, "python": sys.version.split()[0],
            "platform": platform.platform(), "packages": pkgs}
