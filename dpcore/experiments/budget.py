"""The run's price, checked before any work: its work (multiply-adds) and its memory (bytes at its
peak), against the context's :class:`~dpcore.experiments.context.Budget` (``DPCORE_WORK_BUDGET``,
``DPCORE_MEMORY_BUDGET``).  :func:`check_budget` refuses, in one line saying what to lower, a run that
does not fit; :mod:`dpcore.experiments.run` calls it before the exact reference's solve."""

from __future__ import annotations

import math
from dataclasses import replace

from ..numerics import kernels
from ..erm import MLP_MAX_ITER, MLP_RESTARTS, reference_passes
from ..exceptions import BudgetError, ParameterError
from .context import DEFAULT_WORK_BUDGET, Budget

__all__ = ["SECONDS_PER_OPERATION", "BUDGET_SCALE", "UNCOMPILED_SLOWDOWN", "GLM_UNCOMPILED_SLOWDOWN",
           "work_estimate", "reference_estimate", "memory_estimate", "square_counts", "check_budget"]

#: what the work budget's unit costs at most on 2 cores (``benchmarks/bench_budget.py``): the
#: default budget in about 6 minutes
SECONDS_PER_OPERATION = 6 * 60 / DEFAULT_WORK_BUDGET
#: the budget's refusals say what a budget means in time, from the same figure
BUDGET_SCALE = (f"DPCORE_WORK_BUDGET; {DEFAULT_WORK_BUDGET:.0e} takes up to about "
                 f"{DEFAULT_WORK_BUDGET * SECONDS_PER_OPERATION / 60:.0f} minutes on 2 cores")

def work_estimate(config, dataset, model, mechanism) -> float:
    """The work budget's measure of a run: runs × steps × (rows × parameters × the model's
    :attr:`~dpcore.models.Model.work_weight` + 3000).  ``benchmarks/bench_budget.py``
    measures what a unit costs per mechanism."""
    return float(config.repeats * mechanism.work_steps(config, dataset.n, dataset.d) * _pass_cost(dataset, model))


#: how many times slower a step is when numba's compiler is switched off (``NUMBA_DISABLE_JIT=1``:
#: the compiled kernels run in the interpreter), per model (default: the GLMs): DP-GD on Adult
#: measured 24× (0.26 s → 6.4 s); the MLP's fused clipped-gradient kernel on 400 Adult rows × 2
#: runs 5.1 ms → 5.2 s.  (Not a model attribute: dpcore/models.py is part of the stored exact
#: solutions' key, and a price is not a solution.)
UNCOMPILED_SLOWDOWN = {"mlp": 1000.0}
GLM_UNCOMPILED_SLOWDOWN = 30.0


def _pass_cost(dataset, model) -> float:
    """One step of one run (a pass over the rows): rows × parameters × the model's weight + 3000,
    times :data:`UNCOMPILED_SLOWDOWN` when numba's compiler is off (``NUMBA_DISABLE_JIT``)."""
    slow = 1.0 if kernels.compiled() else UNCOMPILED_SLOWDOWN.get(model.id, GLM_UNCOMPILED_SLOWDOWN)
    return (dataset.n * max(model.n_params(dataset.d), dataset.d) * model.work_weight + 3000) * slow


def reference_estimate(dataset, model) -> float:
    """The work budget's measure of the exact reference's solve (:func:`~dpcore.erm.reference_passes`
    passes, each priced as one step of :func:`work_estimate`); counted only when it must be solved."""
    passes = reference_passes(model)
    if not passes:
        return 0.0
    return float(passes * _pass_cost(dataset, model))


#: (p × p) float64 matrices the exact reference of a linear model holds at once: Newton's Hessian and
#: its factorisation (logreg), XᵀX + λI, its eigenvectors and LAPACK's workspace (linreg)
REFERENCE_SQUARES = 3
#: (p × p) matrices per run of a mechanism that solves a perturbed objective exactly (the batched
#: Newton's Hessians and their factorisations)
OBJECTIVE_SQUARES = 2


def square_counts(config, model, mechanism) -> tuple[int, int]:
    """(fixed, per run): how many (p × p) float64 matrices a run holds, for the reference's exact
    solve (linear models; the MLP's L-BFGS holds none) and the objective family's per-run solves."""
    fixed = 0 if reference_passes(model) else REFERENCE_SQUARES
    return fixed, OBJECTIVE_SQUARES if getattr(mechanism, "family", "") == "objective" else 0


def memory_estimate(config, dataset, model, mechanism) -> float:
    """Bytes a run holds at its peak: a few (runs × rows) float64 arrays (margins, their
    derivatives, the metrics), the mechanism's per-repeat copies of the records
    (:attr:`~dpcore.mechanisms.base.Mechanism.data_copies`), the model's working set
    (:attr:`~dpcore.models.Model.memory_overhead`) and the (p × p) matrices of the exact solves
    (:func:`square_counts`: what refuses a d = 300,000 run before it asks for 671 GiB).
    ``tests/test_budget.py`` measures every mechanism × model's real peak against it."""
    rows = max(dataset.n, dataset.X_test.shape[0])
    R = config.repeats
    fixed, per_run = square_counts(config, model, mechanism)
    square = float(model.n_params(dataset.d)) ** 2 * 8
    return float(R * rows * 8 * 4 + mechanism.data_copies * R * dataset.n * dataset.d * 8
                 + model.memory_overhead + (fixed + per_run * R) * square)


def check_budget(config, dataset, model, mechanism, runs: int | None = None,
                 what: str = "the iterations or the repeats", budget: Budget | None = None,
                 reference: bool = False) -> None:
    """Refuse a run whose memory or work estimate exceeds the budget, saying how to lower it.

    Memory: :func:`memory_estimate` of ``config.repeats`` runs held at once.  Work:
    :func:`work_estimate` of ``runs`` runs in all (default ``config.repeats``; an audit holds
    one chunk at a time but trains every run), plus :func:`reference_estimate` when ``reference``
    (the exact reference is not yet solved).  ``what``: the settings the message asks to lower.
    ``budget``: the context's (by default the environment's, read now: :meth:`Budget.from_environment`).
    """
    budget = Budget.from_environment() if budget is None else budget
    if budget.error:
        raise ParameterError(budget.error)
    n = dataset.n
    R = config.repeats
    memory = memory_estimate(config, dataset, model, mechanism)
    fixed, per_run = square_counts(config, model, mechanism)
    p = model.n_params(dataset.d)
    one = memory_estimate(replace(config, repeats=1), dataset, model, mechanism)
    if (fixed or per_run) and one > budget.memory:  # no number of repeats fits: the dimension does not
        squares = fixed + per_run
        most = int(math.sqrt(max(0.0, budget.memory - (one - squares * p * p * 8)) / (8 * squares)))
        raise BudgetError(
            f"{dataset.d:,} features need {squares} matrices of {p:,} × {p:,} for the exact solve (about "
            f"{one / 2**30:,.1f} GiB, budget {budget.memory / 2**30:.1f} GiB, DPCORE_MEMORY_BUDGET): "
            f"use at most about {most:,} features (select or hash them), or raise the budget")
    if memory > budget.memory:
        per_run = max(1.0, (memory - model.memory_overhead) / R)
        fit = max(1, int((budget.memory - model.memory_overhead) // per_run))
        raise BudgetError(
            f"{R:,} runs on {n:,} rows need about {memory / 2**30:.1f} GiB of memory (budget "
            f"{budget.memory / 2**30:.1f} GiB, DPCORE_MEMORY_BUDGET): use at most {fit:,} repeats")
    total = config if runs is None else replace(config, repeats=int(runs))
    solve = reference_estimate(dataset, model) if reference else 0.0
    if solve > budget.work:
        raise BudgetError(
            f"the exact reference L* behind the gap ({model.id} on {n:,} rows: the best of "
            f"{MLP_RESTARTS} L-BFGS runs of up to {MLP_MAX_ITER} iterations) is about {solve:.1e} operations alone (budget "
            f"{budget.work:.0e}, {BUDGET_SCALE}): "
            "raise the budget, or use a smaller dataset or a linear model")
    work = work_estimate(total, dataset, model, mechanism) + solve
    if work > budget.work:
        steps = mechanism.work_steps(config, n, dataset.d)
        also = f", with {solve:.1e} for the exact reference L*" if solve else ""
        raise BudgetError(
            f"{total.repeats:,} runs × {steps:,.0f} steps on {n:,} rows are about {work:.1e} operations{also} (budget "
            f"{budget.work:.0e}, {BUDGET_SCALE}): lower "
            f"{what}")
