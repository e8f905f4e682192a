"""A view's grid is one wait: its runs still to compute must fit the work budget together (issue 67:
Compare's link at R = 1,000 on Adult computed past 100 s, each run under the budget alone), and an
exact perturbed solve is priced as the passes it makes, not one."""

import pytest

from dpcore.exceptions import BudgetError
from dpcore.experiments.context import Budget, Context
from dpcore.experiments.grid import run_grid
from dpcore.experiments.run import RunSpec
from dpcore.experiments.studies import epsilon_sweep
from dpcore.experiments.sweep import GRID_WORK_BUDGETS, task_cost
from dpcore.mechanisms import get_mechanism
from dpcore.mechanisms.objective import solve_passes

BASE = RunSpec(dataset="breast-cancer", mechanism="gradient-dpgd", epsilon=1.0, delta=1e-5, iterations=20, repeats=3,
               seed=5)
EPSILONS = (0.5, 1.0, 2.0, 4.0)


def _each_cost() -> float:
    costs = {task_cost(RunSpec(**{**BASE.__dict__, "epsilon": e})) for e in EPSILONS}
    assert len(costs) == 1  # ε changes the noise, not the work
    return costs.pop()


def _ctx(tmp_path, work: float) -> Context:
    return Context(erm_dir=tmp_path / "erm", results_dir=None, budget=Budget(work=work), trace_points=0)


def test_a_views_grid_past_the_budget_together_is_refused_before_anything_runs(tmp_path):
    each = _each_cost()
    ctx = _ctx(tmp_path, 1.05 * each)  # each run fits alone; three runs' budgets hold 3 runs, not 4
    assert GRID_WORK_BUDGETS == 3
    with pytest.raises(BudgetError, match="4 configurations still to compute are about .* in all"):
        epsilon_sweep(BASE, ["gradient-dpgd"], list(EPSILONS), ctx)
    # the truth passed: the same grid within the budget runs, every row a result
    rows = epsilon_sweep(BASE, ["gradient-dpgd"], list(EPSILONS[:3]), ctx)
    assert len(rows) == 3 and not any("error" in r for r in rows)


def test_a_grid_outside_the_views_keeps_the_per_run_budget(tmp_path):
    each = _each_cost()
    specs = [RunSpec(**{**BASE.__dict__, "epsilon": e}) for e in EPSILONS]
    df = run_grid(specs, _ctx(tmp_path, 1.05 * each))  # each fits alone: a sweep's runs are its own waits
    assert "error" not in df or df["error"].isna().all()


def test_a_run_past_the_budget_alone_is_refused_on_its_row_and_not_counted(tmp_path):
    each = _each_cost()
    big = RunSpec(**{**BASE.__dict__, "repeats": 40})
    ctx = _ctx(tmp_path, 1.05 * each)
    assert task_cost(big) > ctx.budget.work
    rows = epsilon_sweep(big, ["gradient-dpgd"], [1.0, 2.0], ctx)  # over alone: each its own row's refusal
    assert len(rows) == 2 and all("operations" in r["error"] for r in rows)


def test_an_exact_perturbed_solve_is_priced_as_the_passes_it_makes():
    # measured (benchmarks: the marginal cost of 20 more runs): Adult 13 passes a run, d = 401 45;
    # the price must not fall below either, and stays within 2× above
    for d, measured in ((103, 13.0), (401, 45.0)):
        assert measured <= solve_passes(d) <= 2 * measured
    for mech in ("objective-gaussian", "objective-chaudhuri"):
        spec = RunSpec(dataset="adult", mechanism=mech, epsilon=1.0, repeats=1)
        assert get_mechanism(mech).work_steps(spec, 36177, 103) == solve_passes(103)


CODE = """
import time
from dpcore import RunSpec, run
from dpcore.exceptions import BudgetError
from dpcore.experiments.run import work_estimate, problem_data
from dpcore.mechanisms import get_mechanism
spec = RunSpec(dataset="adult", model="mlp", mechanism="gradient-dpsgd", epsilon=1.0, iterations=100, repeats=3)
data, model = problem_data(spec)
print(work_estimate(spec, data, model, get_mechanism(spec.mechanism)))
t = time.perf_counter()
import os
try:
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        run(spec)
except BudgetError as exc:
    print("refused", round(time.perf_counter() - t, 1), exc)
"""


def _priced(env: dict) -> list[str]:
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    full = {**os.environ, "PYTHONPATH": str(root), **env}
    done = subprocess.run([sys.executable, "-c", CODE], env=full, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")


def test_the_kernels_run_in_the_interpreter_are_priced_so():
    """``NUMBA_DISABLE_JIT=1``: the MLP's kernel runs ~1,000× slower (measured), so the same run's
    estimate is 1,000× the compiled one's and a run the budget takes compiled is refused at once,
    not run for minutes (it ran past 95 s unpriced).  A check of the check: without the slowdown
    the interpreted run starts and the test waits (then fails on the seconds)."""
    from dpcore.experiments.run import UNCOMPILED_SLOWDOWN

    off = _priced({"NUMBA_DISABLE_JIT": "1", "DPCORE_WORK_BUDGET": "2e11"})
    on = _priced({"NUMBA_DISABLE_JIT": "0", "DPCORE_WORK_BUDGET": "2e11"})
    assert float(off[0]) == pytest.approx(float(on[0]) * UNCOMPILED_SLOWDOWN["mlp"], rel=1e-9)
    assert float(on[0]) < 2e11  # the truth passed: compiled, the same run fits the budget
    assert off[1].startswith("refused") and float(off[1].split()[1]) < 30, off
