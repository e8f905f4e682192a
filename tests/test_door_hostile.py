"""A hostile-input campaign against the library's public door (issue 67's door, second pass).

Each finding ends as one line (a :class:`~dpcore.exceptions.DPCoreError`) or an honest warning,
never a traceback of another library and never a silently wrong number: plain Python lists as a
dataset's arrays, a grid of names instead of specs, an empty test split, a float32 row just outside
the unit ball, a dimension whose d × d arrays the memory budget must price, and a 1-D X at the
estimators' door.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpcore import RunSpec, run
from dpcore.datasets import Dataset, contract
from dpcore.exceptions import BudgetError, DatasetError, DPCoreError, ParameterError
from dpcore.experiments.context import Budget, Context
from dpcore.experiments.grid import run_grid

SMALL = dict(epsilon=1.0, iterations=20, repeats=1, seed=1)


def _arrays(n=50, d=3, seed=67):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    return X, y


def _one_line(exc: BaseException) -> str:
    message = str(exc)
    assert isinstance(exc, DPCoreError), f"{type(exc).__name__}: {message}"
    assert "\n" not in message and len(message) < 400, message
    return message


# 1 ------------------------------------------------------------------------------------------------
def test_a_dataset_of_plain_lists_is_converted_at_the_door():
    X, y = _arrays()
    ds = Dataset("raw", "raw", "classification", X.tolist(), y.tolist(), X.tolist(), y.tolist(), ("a", "b", "c"))
    result = run(RunSpec("raw", mechanism="output-gaussian", **SMALL), dataset=ds)
    same = run(RunSpec("raw", mechanism="output-gaussian", **SMALL),
               dataset=Dataset("raw", "raw", "classification", X, y, X.copy(), y.copy(), ("a", "b", "c")))
    assert result.accuracy == same.accuracy and result.epsilon_certified == same.epsilon_certified
    assert isinstance(ds.X_train, np.ndarray) and ds.X_train.dtype == np.float64 and ds.n == 50 and ds.d == 3


def test_a_dataset_of_ragged_or_text_lists_is_refused_in_one_line():
    X, y = _arrays()
    ragged = X.tolist()
    ragged[3] = ragged[3][:2]
    for bad in (ragged, [["a", "b", "c"]] * 50):
        with pytest.raises(DatasetError) as info:
            run(RunSpec("raw", mechanism="output-gaussian", **SMALL),
                dataset=Dataset("raw", "raw", "classification", bad, y.tolist(), X, y, ("a", "b", "c")))
        assert "(the dataset bound on shapes)" in _one_line(info.value)


# 2 ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("specs", [["breast-cancer"], "breast-cancer", [RunSpec("iris", **SMALL), {"x": 1}],
                                   RunSpec("iris", **SMALL)])
def test_a_grid_of_anything_but_specs_is_refused_in_one_line(specs):
    with pytest.raises(ParameterError) as info:
        run_grid(specs)
    assert "RunSpec" in _one_line(info.value)


# 3 ------------------------------------------------------------------------------------------------
def test_an_empty_test_split_is_refused_at_the_door():
    X, y = _arrays()
    ds = Dataset("raw", "raw", "classification", X, y, X[:0], y[:0], ("a", "b", "c"))
    with pytest.raises(DatasetError) as info:
        run(RunSpec("raw", mechanism="output-gaussian", **SMALL), dataset=ds)
    message = _one_line(info.value)
    assert message.startswith("X_test has no rows") and "(the dataset bound on shapes)" in message


# 4 ------------------------------------------------------------------------------------------------
def _float32_row_just_outside():
    """A float32 row whose norm is 1 + ~3.4e-8 in float64, but reads exactly 1 in float32."""
    rng = np.random.default_rng(4)
    for _ in range(100_000):
        x = rng.normal(size=3).astype(np.float32)
        x /= np.float32(np.linalg.norm(x.astype(np.float64)))
        x = (x * np.float32(1 + 2**-24)).astype(np.float32)
        exact = float(np.linalg.norm(x.astype(np.float64)))
        if 1 + 2e-8 < exact < 1 + 6e-8 and float(np.linalg.norm(x)) <= 1.0:
            return x, exact
    raise AssertionError("no such row found")


def test_row_norms_of_float32_data_are_computed_in_float64():
    row, exact = _float32_row_just_outside()
    assert exact - 1 > 10 * contract.ROW_NORM_TOLERANCE
    X, y = _arrays()
    X = (X * 0.999).astype(np.float32)  # every other row inside the ball in float32 too
    X[17] = row
    ds = Dataset("raw", "raw", "classification", X, y, X.copy(), y.copy(), ("a", "b", "c"))
    with pytest.raises(DatasetError) as info:
        run(RunSpec("raw", mechanism="output-gaussian", **SMALL), dataset=ds)
    assert _one_line(info.value).startswith(f"row 17 of X_train has norm {exact:.10g} > 1 (the dataset bound on row norms)")
    assert [v.bound for v in contract.violations(ds)] == [contract.ROW_NORMS]


# 5 ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mech", ["output-gaussian", "gradient-dpgd", "objective-gaussian"])
def test_a_dimension_whose_square_arrays_do_not_fit_is_refused_before_allocation(mech):
    d = 300_000
    X, y = _arrays(n=50, d=d)
    ds = Dataset("raw", "raw", "classification", X, y, X[:5], y[:5], tuple(f"f{j}" for j in range(d)))
    with pytest.raises(BudgetError) as info:
        run(RunSpec("raw", mechanism=mech, **SMALL), dataset=ds)
    message = _one_line(info.value)
    assert "300,000 features" in message and "DPCORE_MEMORY_BUDGET" in message


def test_the_square_arrays_are_priced_against_the_budget():
    """d = 2,000 (a 32 MB Hessian) runs under the default budget and is refused under 64 MB."""
    d = 2_000
    X, y = _arrays(n=50, d=d)
    ds = Dataset("raw", "raw", "classification", X, y, X[:5], y[:5], tuple(f"f{j}" for j in range(d)))
    spec = RunSpec("raw", mechanism="output-gaussian", **SMALL)
    with pytest.raises(BudgetError, match=r"2,001 × 2,001|2,000 features"):
        run(spec, dataset=ds, ctx=Context(budget=Budget(memory=64 * 2**20)))


def test_a_memory_error_at_the_door_is_one_line(monkeypatch):
    from dpcore.experiments import run as run_module
    X, y = _arrays()

    def exhausted(*a, **k):
        raise MemoryError("Unable to allocate 671. GiB for an array with shape (1, 300000, 300000)")
    monkeypatch.setattr(run_module, "solve_erm", exhausted)
    with pytest.raises(BudgetError) as info:
        run(RunSpec("raw", mechanism="output-gaussian", **SMALL),
            dataset=Dataset("raw", "raw", "classification", X, y, X.copy(), y.copy(), ("a", "b", "c")))
    message = _one_line(info.value)
    assert "3 features" in message and "ran out of memory" in message


# 6 ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["fit", "predict", "score"])
@pytest.mark.parametrize("which", ["DPLogisticRegression", "DPLinearRegression"])
def test_the_estimators_refuse_a_one_dimensional_X_in_one_line(which, where):
    import dpcore
    X, y = _arrays()
    if which == "DPLinearRegression":
        y = X @ [0.5, -0.2, 0.1]
    est = getattr(dpcore, which)(epsilon=1.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if where != "fit":
            est.fit(X, y)
        with pytest.raises(DatasetError) as info:
            {"fit": lambda: est.fit(X[:, 0], y), "predict": lambda: est.predict(X[:, 0]),
             "score": lambda: est.score(X[:, 0], y)}[where]()
    message = _one_line(info.value)
    assert "1-D" in message and "Reshape your data" in message  # scikit-learn's common checks look for it
