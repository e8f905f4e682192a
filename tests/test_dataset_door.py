"""The library's door checks what the certificate assumes (issue 67).

A :class:`~dpcore.datasets.Dataset` handed to the library (``dataset=``) is checked against one
declaration, :data:`dpcore.datasets.contract.CONTRACT`, before any noise is calibrated: each bound
broken in turn, at each door (``run``, ``tune``, ``run_audit``, ``one_run_audit``, ``run_grid``,
``epsilon_sweep``, ``RunSpec.dp_event``), is refused with a one-line ``DatasetError`` naming the
bound, never a finite certificate; rows at norm 1 and within the rounding tolerance pass; a
mechanism that declares it clips every record's contribution runs beyond the row-norm bound and
says so; data that get past a disabled door run with ε = ∞ and the reason; and the check of the
check shows that without the door and that last guard the run would certify the finite target.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dpcore import RunSpec, run, run_audit, tune
from dpcore.audit.one_run import one_run_audit
from dpcore.datasets import Dataset, contract
from dpcore.exceptions import DatasetError, ModelError, ParameterError
from dpcore.experiments import run as run_module
from dpcore.experiments.grid import run_grid
from dpcore.experiments.studies import epsilon_sweep
from dpcore.mechanisms import REGISTRY
from dpcore.models import make_model

from clirun import run_cli  # tests/clirun.py

ROOT = Path(__file__).resolve().parent.parent
TOL = contract.ROW_NORM_TOLERANCE
SMALL = dict(epsilon=0.1, iterations=20, repeats=1, seed=1)


def _data(X=None, y=None, X_test=None, y_test=None, task="classification", names=("a", "b", "c")) -> Dataset:
    """50 rows, 3 features, every row norm ≤ 1 (a quarter exactly 1), labels ±1."""
    rng = np.random.default_rng(67)
    X0 = rng.normal(size=(50, 3))
    X0 /= np.maximum(np.linalg.norm(X0, axis=1, keepdims=True), 1.0)
    X0[::4] /= np.linalg.norm(X0[::4], axis=1, keepdims=True)  # on the sphere
    y0 = np.where(X0 @ [1.0, -0.5, 0.2] > 0, 1.0, -1.0)
    X = X0 if X is None else X
    y = y0 if y is None else y
    return Dataset("raw", "raw", task, X, y, X0.copy() if X_test is None else X_test,
                   y0.copy() if y_test is None else y_test, tuple(names))


def _edit(name: str, index, value):
    def make() -> Dataset:
        ds = _data()
        arrays = {k: np.array(getattr(ds, k), dtype=float) for k in ("X_train", "y_train", "X_test", "y_test")}
        arrays[name][index] = value
        return _data(arrays["X_train"], arrays["y_train"], arrays["X_test"], arrays["y_test"])
    return make


def _row_norm(factor: float):
    def make() -> Dataset:
        X = np.array(_data().X_train)
        X[17] = X[17] / np.linalg.norm(X[17]) * factor
        return _data(X)
    return make


def _reshaped(**kw):
    def make() -> Dataset:
        ds = _data()
        parts = dict(X=ds.X_train, y=ds.y_train, X_test=ds.X_test, y_test=ds.y_test)
        parts.update({k: v(parts[k]) if callable(v) else v for k, v in kw.items()})
        return _data(**parts)
    return make


#: every bound of the declaration broken in turn (a bound without a case fails the first test)
BROKEN = {
    contract.ROW_NORMS: {
        "norm just above 1 + tolerance": _row_norm(1.0 + 10 * TOL),
        "norm 6.58e4 (the issue's)": _row_norm(6.58e4),
    },
    contract.FINITE: {
        "NaN in X_train": _edit("X_train", (5, 1), np.nan),
        "inf in X_train": _edit("X_train", (9, 0), np.inf),
        "-inf in X_test": _edit("X_test", (2, 2), -np.inf),
        "NaN label": _edit("y_train", 4, np.nan),
    },
    contract.LABELS: {
        "label 2": _edit("y_train", 3, 2.0),
        "label 0 (0/1 labels)": _edit("y_train", 0, 0.0),
        "test label 0.5": _edit("y_test", 1, 0.5),
    },
    contract.SHAPES: {
        "one label short": _reshaped(y=lambda y: y[:-1]),
        "test split with 4 columns": _reshaped(X_test=lambda X: np.hstack([X, X[:, :1]])),
        "X_train one-dimensional": _reshaped(X=lambda X: X[:, 0]),
        "feature names for 2 columns": _reshaped(names=("a", "b")),
        "empty test split": _reshaped(X_test=lambda X: X[:0], y_test=lambda y: y[:0]),
    },
}
CASES = [pytest.param(bound, make, id=f"{bound}: {case}") for bound, cases in BROKEN.items()
         for case, make in cases.items()]


def _run(ds, mech="output-gaussian", **kw):
    return run(RunSpec("raw", mechanism=mech, **{**SMALL, **kw}), dataset=ds)


#: each door, called as a user would, with a mechanism whose certificate assumes every bound
DOORS = {
    "run": _run,
    "RunSpec.dp_event": lambda ds: RunSpec("raw", mechanism="output-gaussian", **SMALL).dp_event(dataset=ds),
    "tune": lambda ds: tune(ds, mechanisms=["output-gaussian"], epsilons=[1.0], final_repeats=1),
    "run_audit": lambda ds: run_audit(RunSpec("raw", mechanism="output-gaussian", **SMALL), trials=10, dataset=ds),
    "run_grid": lambda ds: run_grid([RunSpec("raw", mechanism="output-gaussian", **SMALL)], dataset=ds),
    "epsilon_sweep": lambda ds: epsilon_sweep(RunSpec("raw", **SMALL), ["output-gaussian"], [0.1, 1.0], dataset=ds),
}
#: the one-run audit always clips (its default C), so the row-norm bound is waived there
ONE_RUN = {"one_run_audit": lambda ds: one_run_audit(RunSpec("raw", mechanism="gradient-dpgd", **SMALL),
                                                     canaries=10, dataset=ds)}


def test_every_bound_of_the_declaration_has_breaking_cases():
    assert set(BROKEN) == {b.name for b in contract.CONTRACT}
    assert [b.name for b in contract.CONTRACT if b.waivable] == [contract.ROW_NORMS]


@pytest.mark.parametrize("door", list(DOORS) + list(ONE_RUN))
@pytest.mark.parametrize("bound, make", CASES)
def test_each_broken_bound_is_refused_at_each_door(door, bound, make):
    if door in ONE_RUN and bound == contract.ROW_NORMS:
        pytest.skip("the one-run audit clips: the row-norm bound is waived (test_clipping_..._waives)")
    with pytest.raises(DatasetError) as info:
        {**DOORS, **ONE_RUN}[door](make())
    message = str(info.value)
    assert "\n" not in message and len(message) < 400
    assert f"(the dataset bound on {bound})" in message
    assert message.split("): ", 1)[1] == next(b.fix for b in contract.CONTRACT if b.name == bound)


@pytest.mark.parametrize("door", list(DOORS) + list(ONE_RUN))
def test_rows_at_norm_one_and_within_the_tolerance_pass(door):
    X = np.array(_data().X_train)
    X[3] = X[3] / np.linalg.norm(X[3]) * (1.0 + 0.5 * TOL)  # rounding: inside the tolerance
    ds = _data(X)
    assert np.isclose(np.linalg.norm(ds.X_train, axis=1).max(), 1.0, rtol=0, atol=TOL)
    assert contract.violations(ds) == []
    {**DOORS, **ONE_RUN}[door](ds)  # runs: no refusal


def test_the_issue_call_is_refused_for_each_mechanism_whose_certificate_assumes_the_bound():
    """The issue's run (row norms up to 6.7e5): output-gaussian, gradient-dpgd and objective-gaussian
    used to certify the target 0.1 with a warning; now refused in one line naming the row."""
    X = np.array(_data().X_train)
    X[17] *= 6.7e5
    for mech in ("output-gaussian", "gradient-dpgd", "objective-gaussian"):
        with pytest.raises(DatasetError, match=r"^row 17 of X_train has norm 6\.\d+e\+05 > 1 \(the dataset bound on "
                                               r"row norms\): scale the rows into the unit ball"):
            run(RunSpec("raw", mechanism=mech, epsilon=0.1, iterations=20, repeats=2, seed=1), dataset=_data(X))


@pytest.mark.parametrize("mech, kw", [("gradient-dpsgd", {}), ("gradient-dpgd", {"clip_norm": 1.0})])
def test_clipping_mechanisms_waive_only_the_row_norm_bound_and_say_so(mech, kw):
    big = _row_norm(6.58e4)()
    result = _run(big, mech, **kw)
    assert math.isfinite(result.epsilon_certified) and result.epsilon_certified <= 0.1 * (1 + 1e-6)
    said = [w for w in result.warnings if "row 17 of X_train" in w]
    assert len(said) == 1 and "clips every per-record gradient to C = 1" in said[0]
    assert "does not depend on that bound" in said[0]
    for bound in (contract.FINITE, contract.LABELS, contract.SHAPES):  # never waived
        for make in BROKEN[bound].values():
            with pytest.raises(DatasetError, match=f"the dataset bound on {bound}"):
                _run(make(), mech, **kw)


@pytest.mark.parametrize("mech", sorted(REGISTRY))
def test_each_mechanism_is_refused_or_runs_as_its_declaration_says(mech):
    """Rows of norm 6.58e4: refused unless the mechanism declares it clips (then a finite certificate
    at most the target, and the warning); never a finite certificate under a bound that does not hold."""
    spec = RunSpec("raw", mechanism=mech, **{**SMALL, "epsilon": 1.0})
    why = REGISTRY[mech]().clips_records(make_model("logreg"), spec)
    if why is None:
        with pytest.raises(DatasetError, match="the dataset bound on row norms"):
            run(spec, dataset=_row_norm(6.58e4)())
        return
    try:
        result = run(spec, dataset=_row_norm(6.58e4)())
    except (ModelError, ParameterError) as exc:  # a setting this small data cannot run (not the data's bound)
        pytest.skip(str(exc))
    if REGISTRY[mech].private:
        assert result.epsilon_certified <= 1.0 * (1 + 1e-6)
        assert any(why in w and "does not depend on that bound" in w for w in result.warnings)
    else:
        assert result.epsilon_certified == math.inf


def test_the_one_run_audit_clips_and_says_so():
    result = ONE_RUN["one_run_audit"](_row_norm(6.58e4)())
    assert math.isfinite(result.epsilon_certified)
    assert any("clips every per-record gradient" in n for n in result.notes)


def test_a_clipping_audit_says_the_waived_bound():
    result = run_audit(RunSpec("raw", mechanism="gradient-dpsgd", **SMALL), trials=10, dataset=_row_norm(6.58e4)())
    assert any("does not depend on that bound" in w for w in result.warnings)


def test_data_past_a_disabled_door_certify_infinity_with_the_reason(monkeypatch):
    """The last guard: data that reach a run without the door's check (here: the check disabled)
    get ε = ∞ through the void plan, with the reason in the warnings and the privacy event."""
    monkeypatch.setattr(contract, "check_dataset", lambda *a, **k: [])
    for bound, make in [(contract.ROW_NORMS, BROKEN[contract.ROW_NORMS]["norm 6.58e4 (the issue's)"]),
                        (contract.LABELS, BROKEN[contract.LABELS]["label 2"])]:
        result = _run(make())
        assert result.epsilon_certified == math.inf
        assert any("the stated guarantee does not hold" in w and bound in w for w in result.warnings)
        assert result.extras["privacy_event"].startswith("no guarantee: the data break the bound")


def test_the_check_of_the_check(monkeypatch):
    """Without the door and its last guard the same call certifies the finite target on rows of norm
    6.58e4: the check is what stops it (and it does, while in place: test_each_broken_bound_...)."""
    bad = BROKEN[contract.ROW_NORMS]["norm 6.58e4 (the issue's)"]
    with pytest.raises(DatasetError):
        _run(bad())
    monkeypatch.setattr(contract, "check_dataset", lambda *a, **k: [])
    monkeypatch.setattr(run_module, "_outside_bounds", lambda *a, **k: ([], None))
    unchecked = _run(bad())
    assert math.isfinite(unchecked.epsilon_certified) and unchecked.epsilon_certified == pytest.approx(0.1, rel=1e-6)


def test_the_command_line_turns_the_refusal_into_one_line(tmp_path, monkeypatch):
    """A CSV goes through from_csv, which scales rows onto the ball; data that still break a bound
    (here: from_csv replaced by one that returns the issue's rows) are one line and exit 2."""
    from dpcore.cli import common as cli_common

    bad = _row_norm(6.58e4)()
    monkeypatch.setattr(cli_common, "from_csv", lambda *a, **k: bad)
    path = tmp_path / "mine.csv"
    path.write_text("a,b,y\n1,2,yes\n3,4,no\n")
    code, out, err = run_cli("run", "--csv", str(path), "--label", "y", "--mechanism", "output-gaussian",
                             "--epsilon", "0.1", "--iterations", "20", "--repeats", "1", "--json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("dpcore: error: row 17 of X_train has norm")
    assert "(the dataset bound on row norms)" in err


def test_the_spec_states_the_door():
    spec = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    assert "dpcore.datasets.contract" in spec
    for bound in contract.CONTRACT:
        assert bound.name in spec, bound.name


def test_a_read_only_view_of_data_changed_through_its_base_is_checked_again():
    """Found by this stop's campaign: a read-only view's row norms were kept by the array's identity
    (linalg._derived), so rows scaled 50× through the writeable array beneath it passed the door on the
    second run with ε certified 1.  A value made from memory that can still change is never kept."""
    rng = np.random.default_rng(0)
    X0 = rng.normal(size=(200, 3))
    X0 /= 1.2 * np.linalg.norm(X0, axis=1, keepdims=True)
    y = np.where(X0[:, 0] > 0, 1.0, -1.0)
    X = X0.view()
    X.flags.writeable = False
    ds = _data(X, y, X[:50], y[:50])
    spec = RunSpec(mechanism="gradient-dpgd", iterations=5, repeats=1)
    assert math.isfinite(run(spec, dataset=ds).epsilon_certified)
    X0 *= 50  # through the base: the view's rows now have norms up to about 42
    with pytest.raises(DatasetError, match="norm"):
        run(spec, dataset=ds)
