"""Every allocation in a budget: each mechanism × model's real peak memory against the estimate
the budget checks (``run.memory_estimate``), generated from the registry, so a new mechanism
that builds large arrays without declaring them (``Mechanism.data_copies``,
``Model.memory_overhead``) fails here."""

import tracemalloc

import pytest

from dpcore import datasets
from dpcore.experiments.context import Context
from dpcore.experiments.run import RunSpec, load_problem, memory_estimate, run
from dpcore.mechanisms import REGISTRY
from dpcore.models import make_model

#: the real peak may exceed the estimate by this factor, plus a fixed allowance for small arrays
FACTOR, SLACK = 2.0, 16 * 2**20
#: large enough that one (runs × rows × features) array (38 MB) dominates everything else (X is 1.6 MB)
#: and exceeds SLACK, so that a single undeclared copy fails
SIZE = dict(dataset="synthetic-classification", n=5_000, d=40, iterations=3, repeats=24)
#: one store for the module: each exact reference (the MLP's is the slow part) is solved once
CTX = Context(trace_points=0)

CASES = [(m, model) for m, cls in REGISTRY.items() for model in ("logreg", "mlp") if model in cls.models]


@pytest.mark.parametrize("mechanism, model", CASES)
def test_a_runs_real_peak_memory_is_within_its_estimate(mechanism, model):
    cls = REGISTRY[mechanism]
    kw = dict(clients=4, skew=2.0) if cls.family == "distributed" else {}
    spec = RunSpec(mechanism=mechanism, model=model, calibration=cls.calibrations[0], **SIZE, **kw)
    ctx = CTX
    problem = load_problem(spec, ctx=ctx)  # data and exact reference: not the run's own arrays
    estimate = memory_estimate(spec, problem.dataset, make_model(model), cls)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        run(spec, ctx)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= FACTOR * estimate + SLACK, (
        f"{mechanism} ({model}) peaked at {peak / 2**20:.0f} MB against an estimate of {estimate / 2**20:.0f} MB: "
        "declare its large arrays (Mechanism.data_copies, Model.memory_overhead)")


def test_the_check_catches_an_undeclared_copy(monkeypatch):
    """A check of the check: input perturbation without its declared copy is caught (one copy, the
    release drawn in place, is 24 runs of 5,000 × 40 floats: 38 MB, above the fixed allowance)."""
    monkeypatch.setattr(REGISTRY["input-kang"], "data_copies", 0)
    with pytest.raises(AssertionError, match="declare its large arrays"):
        test_a_runs_real_peak_memory_is_within_its_estimate("input-kang", "logreg")


def test_a_huge_input_perturbation_run_is_refused_before_it_builds_anything():
    """The issue's case: R = 3,000 input-perturbation runs on Adult would ask for about 90 GB."""
    from dpcore.exceptions import BudgetError
    with pytest.raises(BudgetError, match="GiB of memory"):
        run(RunSpec(dataset="adult", mechanism="input-dbdp-if", calibration="published", repeats=3000))
    assert datasets.load("adult").n * 103 * 8 * 3000 > 80e9  # what one copy per repeat would take


def test_synthetic_data_are_checked_before_they_are_built(monkeypatch):
    """2 training rows with 10,000 features still draw a 10,000-row test set: 2.2 GiB that the
    run's own estimate (which needs the data) never saw.  The check comes first, allocates
    nothing, and the estimate bounds what building really takes."""
    from dpcore.exceptions import BudgetError
    from dpcore.experiments import run as run_mod

    monkeypatch.setattr(run_mod, "MEMORY_BUDGET", 2e8)
    tracemalloc.start()
    with pytest.raises(BudgetError, match="the synthetic data alone .* lower d or n"):
        run_mod.run(run_mod.RunSpec(dataset="synthetic-classification", n=2, d=10_000,
                                    mechanism="non-private"))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 20e6
    assert run_mod.SYNTHETIC_TEST_ROWS == datasets.load.__kwdefaults__["n_test"]
    for n, d in ((300, 1500), (20_000, 40)):  # d-heavy and n-heavy
        tracemalloc.start()
        datasets.load("synthetic-classification", n=n, d=d, seed=11)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert 0.5 * run_mod.synthetic_bytes(n, d) <= peak <= run_mod.synthetic_bytes(n, d)
