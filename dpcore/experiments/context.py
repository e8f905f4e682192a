"""The execution context: *how* runs execute, never *what* they compute.

A :class:`~dpcore.experiments.run.RunSpec` says what to compute; a
:class:`Context` says where and how: worker processes or a Dask scheduler, BLAS
threads per task, where exact solutions and grid results are kept, how many
loss-curve points to record, whom to tell about progress.  Every function that
runs mechanisms takes one explicitly; nothing in the package keeps such
settings in module-level variables.  No field of a context changes a number
(the equality tests check this for workers, threads and caches).

A call that passes no context gets :func:`default_context`, one per process
(so that a script's loop over ``run`` solves each reference once).  What else
stays at module level are memos of pure functions of immutable inputs (each says so
in its line above, ``# pure:``, or ``# process:`` for a resource of the process), which
cannot change a number either: loaded datasets
(:func:`dpcore.datasets.load`), certified ε's of noise plans
(:func:`dpcore.privacy.core.certify`) and accountant results, and the sparse twins of
large one-hot matrices (:mod:`dpcore.numerics.linalg`, tested bit-equal to the dense
products).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from threadpoolctl import ThreadpoolController

from ..numerics import linalg
from ..cache import DiskCache, Memo, cache_dir
from ..datasets import data_folder
from ..erm import ReferenceStore
from ..exceptions import ParameterError
from ..optim import DEFAULT_TRACE_POINTS, Progress, TraceListener

#: a stored grid result larger than this is not one of ours (a task's record is a few kB)
MAX_RESULT_BYTES = 4 * 2**20
#: a results folder is kept under this size (the oldest results go first) …
MAX_RESULTS_BYTES = 256 * 2**20
#: … checked once every this many results written by this process
PRUNE_EVERY = 200

#: A run is refused up front when its estimate exceeds its context's budget (:class:`Budget`).
DEFAULT_MEMORY_BUDGET = 4 * 2**30  # bytes
DEFAULT_WORK_BUDGET = 2e11  # weighted multiply-adds: up to about 6 minutes on 2 cores (bench_budget.py)
#: at most this many runs (all configurations' repeats) train as one stacked batch
DEFAULT_STACK_RUNS = 200
#: stored records whose certificates a context remembers having verified
VERIFIED_RECORDS = 8192


@dataclass(frozen=True)
class Budget:
    """What one run may use on this machine: ``memory`` bytes held at once and ``work`` weighted
    multiply-adds (:func:`~dpcore.experiments.run.check_budget` refuses a run whose estimate
    exceeds either, saying what to lower).  ``error``: why the environment's budget is not one (a
    word, NaN, a negative number): every run is then refused with that line, so a typo never
    switches the budget off."""

    memory: float = DEFAULT_MEMORY_BUDGET
    work: float = DEFAULT_WORK_BUDGET
    error: str | None = None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> "Budget":
        """``DPCORE_MEMORY_BUDGET`` and ``DPCORE_WORK_BUDGET`` when set (read when a context is
        made, never at import), else the defaults."""
        environ = os.environ if environ is None else environ
        values, errors = {}, []
        for name, attr, default, unit in (("DPCORE_MEMORY_BUDGET", "memory", DEFAULT_MEMORY_BUDGET, "bytes"),
                                          ("DPCORE_WORK_BUDGET", "work", DEFAULT_WORK_BUDGET, "operations")):
            text = environ.get(name)
            if text is None:
                continue
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if math.isfinite(value) and value > 0:
                values[attr] = value
            else:
                errors.append(f"{name} must be a positive number of {unit} (default {default:.3g}), "
                              f"got {text[:40]!r}: unset it or give a number")
        return cls(**values, error=errors[0] if errors else None)


__all__ = ["Budget", "Context", "Progress", "DEFAULT_TRACE_POINTS", "default_context", "cache_dir", "shared_context"]


@dataclass(frozen=True, kw_only=True)
class Context:
    """Execution settings of a run or a grid of runs: how, never what.

    No field changes a number (the equality tests check this for workers, threads and caches).
    These are the package's whole execution policy and its folders: no module keeps a switch or a
    path.

    Parameters
    ----------
    workers : int or None
        Local worker processes for a grid (1 runs in this process; ``None``: one per CPU).
    scheduler : str or dask.distributed.Client, optional
        A Dask scheduler address or client, in place of local workers.
    threads : int or None
        BLAS threads per task (``None``: one).  Parallel work goes through the context's own
        pool and worker processes; a library's own thread per core spins against them and the
        other sessions (on a loaded 2-core machine a DP-GD step on a dense 30–50 MB matrix ran
        4–50× slower than with one thread).
    erm_dir : path-like, optional
        Where exact solutions are kept on disk, shared by processes (``None``: memory only).
    results_dir : path-like, optional
        Where a grid keeps each finished spec's result (content-keyed JSON: an interrupted grid
        resumes, a repeated one trains nothing).
    trace_points : int or None
        Loss-curve points each run records (``None``: the optimisers' default for one run, none
        in a grid, where nothing plots a curve).
    progress : callable, optional
        ``progress(done, total, label)`` hears how far work is: a grid's finished configurations,
        a run's optimisation steps and its exact reference's solver iterations (a hundred reports
        at most per loop).  A callback whose attribute ``takes_work`` is true also hears
        ``work=(done, total)`` in the work budget's units (:meth:`tell`).
    on_trace : callable, optional
        ``on_trace(steps, trace)``: a single run's loss curve so far, each time it gains a point.
    store : ReferenceStore, optional
        The exact solutions and other noise-free results this context has computed (made from
        ``erm_dir`` and ``data_dir`` when not given).
    pool : concurrent.futures.ThreadPoolExecutor, optional
        The threads its sparse products share (:func:`dpcore.numerics.linalg.using_pool`, entered by
        :meth:`active`); by default the one pool every context of the process shares.
    results, memo : DiskCache, Memo, optional
        The grid results' disk cache (over ``results_dir``) and a memory memo of whatever a
        caller keys (the app's run records).
    verified : Memo, optional
        The stored records (results, shipped tables) whose certificates this context has
        recomputed, by task key and what they claim: a record read again (a second click, another
        session) is the same function of the same code, so its accounting is not run again.  A
        copy made by :meth:`with_` shares it.
    budget : Budget
        What one run may use (by default the environment's ``DPCORE_MEMORY_BUDGET`` and
        ``DPCORE_WORK_BUDGET``, read when the context is made).
    stack_runs : int
        At most this many runs train as one stacked batch.
    data_dir : path-like
        The data folder its readers take shipped files from (``results/``, ``tuned/``,
        ``references/``, each checked against its ``MANIFEST.json``); by default
        :func:`dpcore.datasets.data_folder` when the context is made (``DPCORE_DATA_DIR`` when set).

    Raises
    ------
    ParameterError
        ``workers`` or ``stack_runs`` below 1, ``trace_points`` below 0.

    Examples
    --------
    >>> from dpcore import Context, RunSpec, run
    >>> ctx = Context(threads=1, trace_points=5)
    >>> result = run(RunSpec("iris", mechanism="gradient-dpgd", iterations=40, repeats=2), ctx=ctx)
    >>> result.loss_trace.shape                      # (trace points, repeats)
    (5, 2)
    >>> ctx.with_(workers=2).store is ctx.store      # a copy shares the stores of its folders
    True
    """

    workers: int | None = 1
    scheduler: Any = None
    threads: int | None = None
    erm_dir: Path | None = None
    results_dir: Path | None = None
    trace_points: int | None = None
    progress: Progress | None = field(default=None, compare=False)
    on_trace: TraceListener | None = field(default=None, compare=False)
    store: ReferenceStore = field(default=None, compare=False)  # type: ignore[assignment]
    pool: Any = field(default=None, compare=False, repr=False)
    results: DiskCache = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    memo: Memo = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    verified: Memo = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    budget: Budget = field(default_factory=Budget.from_environment)
    stack_runs: int = DEFAULT_STACK_RUNS
    data_dir: Path = field(default_factory=data_folder)

    def __post_init__(self) -> None:
        for name in ("erm_dir", "results_dir", "data_dir"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))
        if self.workers is not None and int(self.workers) < 1:
            raise ParameterError(f"--workers must be at least 1, got {self.workers}")
        if self.trace_points is not None and int(self.trace_points) < 0:
            raise ParameterError(f"trace_points must be ≥ 0, got {self.trace_points}")
        if int(self.stack_runs) < 1:
            raise ParameterError(f"stack_runs must be at least 1, got {self.stack_runs}")
        if self.store is None or (self.erm_dir is not None and self.store.folder != self.erm_dir) \
                or self.store.data_dir != self.data_dir:
            object.__setattr__(self, "store", ReferenceStore(self.erm_dir, data_dir=self.data_dir))
        if self.pool is None:
            object.__setattr__(self, "pool", shared_pool())
        if self.results is None or self.results.folder != self.results_dir:
            object.__setattr__(self, "results", DiskCache(
                self.results_dir, max_file_bytes=MAX_RESULT_BYTES, folder_bytes=MAX_RESULTS_BYTES,
                prune_every=PRUNE_EVERY, what="stored result", log="dpcore.experiments.sweep"))
        if self.memo is None:
            object.__setattr__(self, "memo", Memo(size=256))
        if self.verified is None:
            object.__setattr__(self, "verified", Memo(size=VERIFIED_RECORDS))

    @contextlib.contextmanager
    def active(self):
        """A ``with`` block in which this context's computations use its thread pool, with the
        process's BLAS at :attr:`threads` threads (one by default).  The BLAS limit is the
        process's: it is set when the first block of any thread opens and the process's own
        limits come back when the last one closes (:func:`blas_limited`), so a notebook's numpy
        is not left at one thread by a ``dpcore.run``."""
        with blas_limited(1 if self.threads is None else int(self.threads)), linalg.using_pool(self.pool):
            yield

    @property
    def n_workers(self) -> int:
        return (os.cpu_count() or 1) if self.workers is None else int(self.workers)

    def with_(self, **changes: Any) -> "Context":
        """A copy with some settings changed; it shares this context's stores unless the
        folder of one changes."""
        if "erm_dir" in changes and changes["erm_dir"] != self.erm_dir:
            changes.setdefault("store", None)
        if "results_dir" in changes and changes["results_dir"] != self.results_dir:
            changes.setdefault("results", None)
        if "data_dir" in changes and Path(changes["data_dir"]) != self.data_dir:
            changes.setdefault("store", None)
        return replace(self, **changes)

    def tell(self, done: int, total: int, label: str, work: tuple[float, float] | None = None) -> None:
        """Tell :attr:`progress` how far the work is.  ``work``: the same as ``(done, total)``
        in units of cost, when the caller knows what each part costs (a grid); only a callback
        that says it takes them (its attribute ``takes_work`` is true) hears them, as the
        keyword ``work``, so every ``progress(done, total, label)`` keeps working."""
        if self.progress is None:
            return
        if work is not None and getattr(self.progress, "takes_work", False):
            self.progress(done, total, label, work=work)
        else:
            self.progress(done, total, label)


def in_context_pool(fn):
    """Run ``fn`` (whose context, if any, is its keyword argument ``ctx``) with its context's
    thread pool lent to the products (:meth:`Context.active`; by default the process's
    :func:`default_context`)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        ctx = kwargs.get("ctx") or default_context()
        with ctx.active():
            return fn(*args, **kwargs)
    return wrapper


# process: the BLAS and OpenMP libraries this process loaded (no number depends on it)
@functools.cache
def blas_controller() -> ThreadpoolController:
    """The process's BLAS and OpenMP libraries (found once, after numpy and scipy are loaded)."""
    return ThreadpoolController()


_ACTIVE_LOCK = threading.Lock()
_ACTIVE: dict[str, Any] = {"open": 0, "limiter": None}


def _take_blas_control() -> None:
    """Let the calling thread set OpenBLAS's limit (under ``_ACTIVE_LOCK``).  threadpoolctl lets only one thread set
    OpenBLAS's process-wide limit, the first to do it while it lives: after a block in the main thread (alive for good)
    every block in another thread (a session's script thread) was ignored, and BLAS ran at the process's own thread
    count beside the pool's threads (Explore's tuned input perturbation: 4.8–5.7 s instead of 2.6–2.7 s)."""
    for lib in blas_controller().lib_controllers:
        if hasattr(lib, "clear_controlling_thread"):
            lib.clear_controlling_thread(force=True)


@contextlib.contextmanager
def blas_limited(threads: int):
    """The process's BLAS and OpenMP at ``threads`` threads within the block; their limits before the
    first open block are restored when the last open block (of any thread) closes."""
    with _ACTIVE_LOCK:
        _take_blas_control()
        limiter = blas_controller().limit(limits=threads)
        if _ACTIVE["open"] == 0:
            _ACTIVE["limiter"] = limiter  # it remembers the limits the process had
        _ACTIVE["open"] += 1
    try:
        yield
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE["open"] -= 1
            if _ACTIVE["open"] == 0 and _ACTIVE["limiter"] is not None:
                _take_blas_control()
                _ACTIVE["limiter"].restore_original_limits()
                _ACTIVE["limiter"] = None


# process: the threads contexts share unless given their own (no number depends on it)
@functools.cache
def shared_pool():
    """The thread pool contexts share unless given their own (:attr:`Context.pool`)."""
    return linalg.thread_pool()


# process: the context of a call that passes none, one a process (see its docstring)
@functools.cache
def default_context() -> Context:
    """The context of a call that passes none (a script, the Python API): one per process,
    in this process, nothing on disk.  Its store keeps exact solutions between calls, so a
    loop over ``run(spec)`` solves each dataset's reference once, as the app's context does."""
    return Context()


def shared_context(**settings: Any) -> Context:
    """A context whose exact solutions (and calibration table) live in :func:`cache_dir` ``/erm``,
    the store the app uses; ``settings`` are any other :class:`Context` fields."""
    return Context(erm_dir=cache_dir() / "erm", **settings)
