"""A campaign of generated hostile inputs across the four doors (issue 67: "Nothing handed to it makes it
lie, crash or hang").  Not a test module (pytest collects ``test_*.py`` only): run it as a script::

    PYTHONPATH=. python tests/campaign.py [--seed S] [--door library|cli|data|app ...] [--limit N] [-v]

Every input is generated from a declaration below (a fixed seed picks among the declared values where
a declaration offers more than are tried) and run in a worker process under a time limit
(:data:`SECONDS`, per door); a worker that does not answer in time is killed and a new one started.
Each input is judged against the contract:

* **clean**: a correct answer, or a refusal in one line (library: a :class:`~dpcore.exceptions.DPCoreError`
  with a one-line message; command line: exit 2 and one line on standard error; app: an ``st.error`` or
  a note, never an exception);
* **exit 1**: an internal error (a traceback, an exception that is not a ``DPCoreError``, exit 1);
* **hang**: no answer within the door's time limit;
* **silently wrong**: an answer that is false: a finite certified ε for data outside the bounds the
  certificate assumes, a NaN or negative ε printed as a figure, a number that contradicts an
  independent computation (the μ-GDP closed form of a Gaussian composition, the same data in another
  representation, the certificate of the noise the inverse question printed).

The four doors:

1. **library** (:func:`library_cases`): ``dpcore.run``/``tune``/``run_audit``/``epsilon_sweep``/
   ``run_grid``/``RunSpec.dp_event``/the estimators, with the same data in other representations
   (float16, int8, bool, Fortran order, strided and read-only views, ``np.matrix``, masked arrays,
   memory maps, pandas), odd data (subnormal rows, one row, one class, test rows of 1e300 …), odd
   ``RunSpec`` values (numpy scalars, ``Fraction``, ``Decimal``, 0-d arrays, huge ints, text, ``None``)
   and odd arguments of the other doors;
2. **cli** (:func:`cli_cases`): ``python -m dpcore certify`` in each mode (DP-SGD by rate or batch, by steps
   or epochs, Poisson or shuffled; Gaussian and Laplace compositions; the inverse question) and each
   output form (text, ``--json`` with its ε(δ) curve) at the ends of the declared ranges;
3. **data** (:func:`data_cases`): a copy of the data folder (``DPCORE_DATA_DIR``) with a shipped file or the
   manifest forged, a dataset file replaced, each read through the library's readers;
4. **app** (:func:`app_cases`): each view's link keys (``URL_KEYS``) with values no earlier campaign
   sent (other scripts' digits, 400-digit integers, hexadecimal floats …), and links that bring a
   result shown (``*_shown=true``) with extreme but valid settings, opened with ``AppTest``.

The table printed at the end is door × outcome, with the first example of each failure.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import multiprocessing
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
if __name__ != "__main__":  # imported by a test for its declarations only: never run by pytest
    __test__ = False

#: the per-input time limit of each door (seconds): over it, a hang.  The app's include a fresh
#: worker's first import of Streamlit and the views (about 10 s on a loaded 2-core machine)
SECONDS = {"library": 60.0, "cli": 60.0, "data": 60.0, "app": 120.0}
#: the budgets the fuzzers run under (tests/test_fuzz_files.py): a setting beyond them is refused
WORK_BUDGET, MEMORY_BUDGET = 3e9, 1024 * 2**20
OUTCOMES = ("clean", "exit 1", "hang", "silently wrong")


@dataclass
class Case:
    door: str
    id: str
    call: Callable[[], tuple[str, str]]  # run in the worker: (outcome, detail)


class Wrong(Exception):
    """Raised by a judge: the answer is false."""


# ------------------------------------------------------------------------------------------ judging


def one_line_refusal(exc: BaseException) -> tuple[str, str]:
    """A library refusal judged: a DPCoreError in one line is clean, anything else exit 1."""
    from dpcore.exceptions import DPCoreError
    text = str(exc)
    if not isinstance(exc, DPCoreError):
        return "exit 1", f"{type(exc).__name__}: {text[:300]}"
    if "\n" in text or len(text) > 600 or not text.strip():
        return "exit 1", f"{type(exc).__name__} not one line ({len(text)} chars): {text[:200]!r}"
    return "clean", f"refused: {text[:160]}"


def library_call(fn: Callable[[], Any], judge: Callable[[Any], None] | None = None) -> tuple[str, str]:
    """``fn()`` judged: a refusal by :func:`one_line_refusal`, an answer by ``judge`` (raises Wrong)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = fn()
    except Wrong as exc:
        return "silently wrong", str(exc)
    except Exception as exc:  # noqa: BLE001 - the contract is what is judged
        outcome, detail = one_line_refusal(exc)
        if outcome == "exit 1":
            detail += " | " + _where(exc)
        return outcome, detail
    try:
        if judge is not None:
            judge(got)
    except Wrong as exc:
        return "silently wrong", str(exc)
    return "clean", "answered"


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if "/dpcore/" in f.filename or "/pages/" in f.filename] or frames
    f = own[-1] if own else None
    return "" if f is None else f"{Path(f.filename).name}:{f.lineno} ({f.name})"


# ------------------------------------------------------------------------------------------ door 1: library

SMALL = dict(epsilon=1.0, iterations=20, repeats=2, seed=3)
#: mechanisms whose certificate assumes every bound of the data contract (none clips by default)
BOUNDED = ("output-gaussian", "gradient-dpgd", "objective-gaussian")
#: the representations' mechanisms: the three above and one that clips (DP-SGD)
REPR_MECHANISMS = BOUNDED + ("gradient-dpsgd",)


def _grid_data(n=60, n_test=20, d=3, seed=67, task="classification"):
    """Rows with entries in {−½, −¼, 0, ¼, ½} (exact in float16; norms ≤ √3/2), labels ±1 from a
    linear rule, both classes in both splits (regression: targets in [−1, 1] on a grid of ¼)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    X = rng.choice([-0.5, -0.25, 0.0, 0.25, 0.5], size=(n + n_test, d))
    score = X @ np.linspace(1.0, -0.5, d) + 0.01
    if task == "classification":
        y = np.where(score > 0, 1.0, -1.0)
        y[:2], y[n:n + 2] = (1.0, -1.0), (1.0, -1.0)
    else:
        y = np.clip(np.round(score * 4) / 4, -1, 1)
    return X[:n], y[:n], X[n:], y[n:]


def _onehot_data(n=60, n_test=20, d=3, seed=68, signed=True):
    """One-hot rows (±1, or 1 with ``signed=False``) in a random column: norm 1, integral."""
    import numpy as np
    rng = np.random.default_rng(seed)
    X = np.zeros((n + n_test, d))
    cols = rng.integers(0, d, n + n_test)
    X[np.arange(n + n_test), cols] = rng.choice([-1.0, 1.0], n + n_test) if signed else 1.0
    y = np.where((cols == 0) ^ (X.sum(axis=1) < 0), 1.0, -1.0)
    y[:2], y[n:n + 2] = (1.0, -1.0), (1.0, -1.0)
    return X[:n], y[:n], X[n:], y[n:]


def _ds(X, y, Xt, yt, task="classification", names=None):
    from dpcore.datasets import Dataset
    shape = getattr(X, "shape", None) or (len(X), len(X[0]) if len(X) else 0)
    d = shape[-1] if len(shape) >= 2 else 1
    return Dataset("mine", "mine", task, X, y, Xt, yt, names if names is not None else tuple(f"f{j}" for j in range(d)))


def _same_result(a, b, what: str) -> None:
    """Two runs on the same data in two representations must agree (ε and every metric)."""
    import numpy as np
    for name in ("epsilon_certified", "epsilon_local"):
        x, y = getattr(a, name), getattr(b, name)
        if not (x == y or (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9)):
            raise Wrong(f"{what}: {name} {x!r} but {y!r} on the float64 copy of the same data")
    for name in ("accuracy", "rmse", "gap"):
        x, y = getattr(a, name), getattr(b, name)
        if x is None and y is None:
            continue
        if x is None or y is None or not np.allclose(np.asarray(x, float), np.asarray(y, float), rtol=1e-7,
                                                     atol=1e-9, equal_nan=True):
            raise Wrong(f"{what}: {name} {np.round(np.asarray(x, float), 6).tolist() if x is not None else None} but "
                        f"{np.round(np.asarray(y, float), 6).tolist() if y is not None else None} on the float64 copy")


def _sound(result, what: str, bounds_hold: bool = True) -> None:
    """A result's own consistency: ε certified ≥ 0 (or ∞), at most the target when the bounds hold,
    ∞ or a refusal when they do not (the caller raises); metrics finite where they are numbers."""
    import numpy as np
    eps = result.epsilon_certified
    if not isinstance(eps, float) or math.isnan(eps) or eps < 0:
        raise Wrong(f"{what}: ε certified {eps!r}")
    if not bounds_hold and math.isfinite(eps) and result.spec.mechanism != "non-private":
        raise Wrong(f"{what}: finite ε certified {eps:.4g} on data outside the bounds its certificate assumes")
    for name in ("accuracy", "rmse"):
        v = getattr(result, name)
        if v is None:
            continue
        v = np.asarray(v, dtype=float)
        kept = v if result.diverged is None else v[~np.asarray(result.diverged, bool)]
        if np.isnan(kept).any():
            raise Wrong(f"{what}: {name} {v.tolist()} holds NaN for a run not marked diverged")
        if name == "accuracy" and ((kept < 0) | (kept > 1)).any():
            raise Wrong(f"{what}: accuracy {v.tolist()} outside [0, 1]")


def _run_on(ds, mech, **kw):
    from dpcore import RunSpec, run
    return run(RunSpec("mine", mechanism=mech, **{**SMALL, **kw}), dataset=ds)


def _repr_case(name: str, make: Callable, base: Callable, mech: str) -> Callable[[], tuple[str, str]]:
    """The same data as float64 and in representation ``make``: refused in one line, or the same
    answer."""
    def call():
        X, y, Xt, yt = base()
        try:
            reference = _run_on(_ds(X, y, Xt, yt), mech)
        except Exception as exc:  # noqa: BLE001
            return "exit 1", f"the float64 reference failed: {type(exc).__name__}: {exc}"

        def fn():
            Xr, yr, Xtr, ytr = make(X.copy(), y.copy(), Xt.copy(), yt.copy())
            return _run_on(_ds(Xr, yr, Xtr, ytr), mech)
        return library_call(fn, lambda got: (_sound(got, name), _same_result(got, reference, name)))
    return call


def _representations() -> dict[str, Callable]:
    """The same numbers in another container: (X, y, X_test, y_test) → the same, represented otherwise."""
    import numpy as np
    import pandas as pd

    def strided(a):
        wide = np.repeat(a, 2, axis=1)
        wide[:, 1::2] = 7.0  # the columns between are not the data's
        return wide[:, ::2]

    def reversed_view(a):
        return a[::-1].copy()[::-1]

    def readonly(a):
        a = a.copy()
        a.flags.writeable = False
        return a

    def memmap(a):
        path = Path(tempfile.mkdtemp(prefix="campaign-mm-")) / "x.dat"
        m = np.memmap(path, dtype=np.float64, mode="w+", shape=a.shape)
        m[:] = a
        m.flush()
        return np.memmap(path, dtype=np.float64, mode="r", shape=a.shape)

    return {
        "X float16": lambda X, y, Xt, yt: (X.astype(np.float16), y, Xt.astype(np.float16), yt),
        "X float32, y float32": lambda X, y, Xt, yt: (X.astype(np.float32), y.astype(np.float32),
                                                      Xt.astype(np.float32), yt.astype(np.float32)),
        "X Fortran order": lambda X, y, Xt, yt: (np.asfortranarray(X), y, np.asfortranarray(Xt), yt),
        "X a strided view (every other column)": lambda X, y, Xt, yt: (strided(X), y, strided(Xt), yt),
        "X a negative-stride view": lambda X, y, Xt, yt: (reversed_view(X), reversed_view(y), Xt, yt),
        "X and y read-only": lambda X, y, Xt, yt: (readonly(X), readonly(y), readonly(Xt), readonly(yt)),
        "X a read-only memory map": lambda X, y, Xt, yt: (memmap(X), y, memmap(Xt), yt),
        "X a DataFrame, y a Series": lambda X, y, Xt, yt: (pd.DataFrame(X), pd.Series(y), pd.DataFrame(Xt),
                                                           pd.Series(yt)),
        "y int8": lambda X, y, Xt, yt: (X, y.astype(np.int8), Xt, yt.astype(np.int8)),
        "y float16": lambda X, y, Xt, yt: (X, y.astype(np.float16), Xt, yt.astype(np.float16)),
        "X np.matrix": lambda X, y, Xt, yt: (np.asmatrix(X), y, np.asmatrix(Xt), yt),
        "X a masked array (nothing masked)": lambda X, y, Xt, yt: (np.ma.masked_array(X), y, np.ma.masked_array(Xt), yt),
        "X tuples of tuples": lambda X, y, Xt, yt: (tuple(map(tuple, X.tolist())), tuple(y.tolist()),
                                                    tuple(map(tuple, Xt.tolist())), tuple(yt.tolist())),
    }


def _int_representations() -> dict[str, Callable]:
    import numpy as np
    return {
        "X int8 (one-hot ±1)": lambda X, y, Xt, yt: (X.astype(np.int8), y, Xt.astype(np.int8), yt),
        "X int64 (one-hot ±1), y int64": lambda X, y, Xt, yt: (X.astype(np.int64), y.astype(np.int64),
                                                               Xt.astype(np.int64), yt.astype(np.int64)),
        "X uint8 (one-hot 1)": lambda X, y, Xt, yt: (X.astype(np.uint8), y, Xt.astype(np.uint8), yt),
        "X bool (one-hot 1)": lambda X, y, Xt, yt: (X.astype(bool), y, Xt.astype(bool), yt),
    }


def _hostile_data() -> dict[str, tuple[Callable, str]]:
    """Odd data no earlier test sent: (make → Dataset, what is due: "bounds" (they hold: an answer or a
    refusal), "broken" (they do not: a refusal, or ε = ∞))."""
    import numpy as np

    def base(**kw):
        return _grid_data(**kw)

    def with_(fn, task="classification", **kw):
        def make():
            X, y, Xt, yt = base(task=task, **kw)
            out = fn(X, y, Xt, yt)
            return _ds(*out[:4], task=task, names=out[4] if len(out) > 4 else None)
        return make

    def masked_hiding(X, y, Xt, yt):
        X = X.copy()
        X[5] = [3e5, -2e5, 1e5]  # far outside the ball, hidden under the mask
        mask = np.zeros_like(X, dtype=bool)
        mask[5] = True
        return np.ma.masked_array(X, mask=mask), y, Xt, yt

    def masked_nan(X, y, Xt, yt):
        X = X.copy()
        X[7, 1] = np.nan
        mask = np.zeros_like(X, dtype=bool)
        mask[7, 1] = True
        return np.ma.masked_array(X, mask=mask), y, Xt, yt

    def masked_label(X, y, Xt, yt):
        y = y.copy()
        y[4] = 5.0
        return X, np.ma.masked_array(y, mask=np.arange(len(y)) == 4), Xt, yt

    def float16_overflow(X, y, Xt, yt):  # 300 in float16 is fine; its square is inf in float16
        X16 = X.astype(np.float16)
        X16[9] = np.float16(300.0)
        return X16, y, Xt.astype(np.float16), yt

    def float32_tolerance(X, y, Xt, yt):  # a float32 row at 1 + 1e-7: outside the 1e-9 tolerance
        X32 = X.astype(np.float32)
        X32[11] = np.array([1.0000001, 0.0, 0.0], dtype=np.float32)
        return X32, y, Xt.astype(np.float32), yt

    def at_tolerance(X, y, Xt, yt):
        X = X.copy()
        X[3] = [1.0 + 0.9e-9, 0.0, 0.0]
        return X, y, Xt, yt

    def beyond_tolerance(X, y, Xt, yt):
        X = X.copy()
        X[3] = [0.0, 0.0, 1.0 + 3e-9]
        return X, y, Xt, yt

    def huge_entries_tiny_rows(X, y, Xt, yt):  # 1e200 squared overflows: the norm must not read as NaN or ≤ 1
        X = X.copy()
        X[8] = [1e200, 1e200, 0.0]
        return X, y, Xt, yt

    def one_row(X, y, Xt, yt):
        return X[:1], y[:1], Xt, yt

    def two_rows(X, y, Xt, yt):
        return X[:2], y[:2], Xt[:1], yt[:1]

    def one_class(X, y, Xt, yt):
        return X, np.ones_like(y), Xt, yt

    return {
        "rows of subnormal entries (5e-324)": (with_(lambda X, y, Xt, yt: (np.full_like(X, 5e-324), y, Xt, yt)), "bounds"),
        "every row zero": (with_(lambda X, y, Xt, yt: (np.zeros_like(X), y, Xt, yt)), "bounds"),
        "test rows of 1e300 (test rows are not bounded)": (with_(lambda X, y, Xt, yt: (X, y, Xt * 4e300, yt)), "bounds"),
        "test rows of 1e308 (regression)": (with_(lambda X, y, Xt, yt: (X, y, Xt * 1.6e308, yt), task="regression"), "bounds"),
        "test targets of 1e300 (regression)": (with_(lambda X, y, Xt, yt: (X, y, Xt, yt * 0 + 1e300), task="regression"), "bounds"),
        "one training row (one class)": (with_(one_row), "bounds"),
        "two training rows, one test row": (with_(two_rows), "bounds"),
        "one class in training": (with_(one_class), "bounds"),
        "a masked array hiding rows of norm 3.7e5": (with_(masked_hiding), "norms"),
        "a masked array hiding a NaN": (with_(masked_nan), "broken"),
        "a masked label 5": (with_(masked_label), "broken"),
        "float16 X with a row of 300": (with_(float16_overflow), "norms"),
        "float32 row at 1 + 1e-7": (with_(float32_tolerance), "norms"),
        "a row at 1 + 0.9e-9 (inside the tolerance)": (with_(at_tolerance), "bounds"),
        "a row at 1 + 3e-9 (beyond the tolerance)": (with_(beyond_tolerance), "norms"),
        "a row of 1e200 entries (its square overflows)": (with_(huge_entries_tiny_rows), "norms"),
        "regression targets exactly ±1": (with_(lambda X, y, Xt, yt: (X, np.sign(y + 0.01), Xt, yt), task="regression"), "bounds"),
        "feature names a string of d letters": (with_(lambda X, y, Xt, yt: (X, y, Xt, yt, "abc")), "bounds"),
        "feature names a numpy array": (with_(lambda X, y, Xt, yt: (X, y, Xt, yt, np.array(["a", "b", "c"]))), "bounds"),
        "X datetime64": (with_(lambda X, y, Xt, yt: (X.astype("datetime64[s]"), y, Xt.astype("datetime64[s]"), yt)), "broken"),
        "X complex with zero imaginary part": (with_(lambda X, y, Xt, yt: (X + 0j, y, Xt + 0j, yt)), "broken"),
        "y strings '1' and '-1'": (with_(lambda X, y, Xt, yt: (X, y.astype(int).astype(str), Xt, yt)), "broken"),
        "y bool": (with_(lambda X, y, Xt, yt: (X, y > 0, Xt, yt > 0)), "broken"),
        "X (n, 1, d)": (with_(lambda X, y, Xt, yt: (X[:, None, :], y, Xt[:, None, :], yt)), "broken"),
        "X (0, 0) and X_test (0, 0)": (with_(lambda X, y, Xt, yt: (X[:0, :0], y[:0], Xt[:0, :0], yt[:0])), "broken"),
        "y_test 2-D (n, 1)": (with_(lambda X, y, Xt, yt: (X, y, Xt, yt[:, None])), "broken"),
    }


#: hostile data whose type or shape is the hazard (the door refuses them before a mechanism reads them)
STRUCTURAL = ("X datetime64", "X complex with zero imaginary part", "y strings '1' and '-1'", "y bool", "X (n, 1, d)",
              "X (0, 0) and X_test (0, 0)", "y_test 2-D (n, 1)", "feature names a string of d letters",
              "feature names a numpy array")
#: the mechanisms each hostile dataset meets (the last two clip, or perturb the input)
HOSTILE_MECHANISMS = ("output-gaussian", "gradient-dpgd", "gradient-dpsgd", "objective-gaussian", "local-duchi",
                      "input-kang", "distributed-wddp", "output-laplace")


#: the mechanisms that clip every record's gradient (their declaration waives the row-norm bound)
CLIPPING = ("gradient-dpsgd",)


def _hostile_data_case(name: str, make: Callable, due: str, mech: str):
    def call():
        def fn():
            ds = make()
            model = "linreg" if ds.task == "regression" else "logreg"
            return _run_on(ds, mech, model=model)
        holds = due == "bounds" or (due == "norms" and mech in CLIPPING)
        return library_call(fn, lambda got: _sound(got, f"{name} ({mech})", bounds_hold=holds))
    return call


# -- RunSpec values -------------------------------------------------------------------------------

def _odd_values() -> list[tuple[str, Any]]:
    import numpy as np
    return [("True", True), ("np.True_", np.True_), ("'1.0' (text)", "1.0"), ("np.float32(0.5)", np.float32(0.5)),
            ("np.int64(3)", np.int64(3)), ("Fraction(1, 3)", Fraction(1, 3)), ("Decimal('0.5')", Decimal("0.5")),
            ("complex(1, 0)", complex(1, 0)), ("np.array(2.0) (0-d)", np.array(2.0)),
            ("np.array([2.0])", np.array([2.0])), ("-0.0", -0.0), ("2**1000", 2**1000),
            ("np.float64('nan')", np.float64("nan")), ("-inf", float("-inf")), ("None", None),
            ("np.float16(65504)", np.float16(65504)), ("np.uint64(2**64 - 1)", np.uint64(2**64 - 1)),
            ("np.longdouble(1e-4000) (subnormal to float)", np.longdouble("1e-4000")),
            ("1e-320", 1e-320), ("np.int8(-1)", np.int8(-1))]


NUMERIC_FIELDS = ("epsilon", "delta", "iterations", "repeats", "seed", "c", "noise_scale", "lam", "learning_rate",
                  "batch_size", "sample_rate", "clip_norm", "clients", "skew", "radius", "n", "d", "noise")
#: the mechanism (and data) a field is read by, so an accepted value is run where it matters
READER = {"batch_size": ("output-bolt-on", "breast-cancer"), "sample_rate": ("gradient-dpsgd", "breast-cancer"),
          "clip_norm": ("gradient-dpgd", "breast-cancer"), "clients": ("distributed-wddp", "breast-cancer"),
          "skew": ("distributed-wddp", "breast-cancer"), "radius": ("output-gaussian", "synthetic-regression"),
          "n": ("output-gaussian", "synthetic-regression"), "d": ("output-gaussian", "synthetic-regression"),
          "noise": ("output-gaussian", "synthetic-regression"), "c": ("gradient-dpgd", "breast-cancer"),
          "lam": ("output-gaussian", "breast-cancer")}


def _spec_value_case(field_name: str, label: str, value: Any):
    def call():
        from dpcore import RunSpec, run
        from dpcore.params import PARAMS
        mech, data = READER.get(field_name, ("gradient-dpgd", "breast-cancer"))
        extra = {"calibration": "published"} if field_name == "c" else {}
        if data == "synthetic-regression":
            extra["model"] = "linreg"
        kw = {"mechanism": mech, "iterations": 10, "repeats": 1, **extra, field_name: value}
        try:
            spec = RunSpec(data, **kw)
        except Exception as exc:  # noqa: BLE001
            outcome, detail = one_line_refusal(exc)
            return outcome, detail + ("" if outcome == "clean" else " | " + _where(exc))
        stored = getattr(spec, field_name)
        if value is None:
            pass
        elif isinstance(value, bool) or type(value).__name__ == "bool_":
            return "silently wrong", f"{field_name}={label} accepted as {stored!r}"
        elif not isinstance(stored, (int, float)) or isinstance(stored, bool):
            return "silently wrong", f"{field_name}={label} kept as {type(stored).__name__} {stored!r}"
        else:
            try:
                same = float(stored) == float(value)
            except (TypeError, ValueError, OverflowError):
                same = False
            if not same:
                return "silently wrong", f"{field_name}={label} stored as {stored!r}"
            if not PARAMS[field_name].constraint.contains(stored):
                return "silently wrong", f"{field_name}={label} stored {stored!r}, outside its declared range"
        try:
            json.dumps(spec.to_dict(), allow_nan=False)
            hash(spec)
        except Exception as exc:  # noqa: BLE001
            return "exit 1", f"{field_name}={label}: the accepted spec is not a record: {type(exc).__name__}: {exc}"
        return library_call(lambda: run(spec), lambda got: _sound(got, f"{field_name}={label}"))
    return call


def _spec_text_cases() -> list[tuple[str, dict]]:
    """The settings that are not numbers, given what they are not."""
    import numpy as np
    return [("dataset=5", {"dataset": 5}), ("dataset=['iris']", {"dataset": ["iris"]}),
            ("dataset=None", {"dataset": None}), ("dataset=' iris'", {"dataset": " iris"}),
            ("dataset='IRIS'", {"dataset": "IRIS"}), ("model=None", {"model": None}),
            ("model=['logreg']", {"model": ["logreg"]}), ("model='LogReg'", {"model": "LogReg"}),
            ("mechanism=5", {"mechanism": 5}), ("mechanism=('gradient-dpgd',)", {"mechanism": ("gradient-dpgd",)}),
            ("mechanism=np.str_('gradient-dpgd')", {"mechanism": np.str_("gradient-dpgd")}),
            ("calibration=True", {"calibration": True}), ("calibration=b'certified'", {"calibration": b"certified"}),
            ("options={'clip_norm': 1}", {"mechanism": "gradient-dpgd", "options": {"clip_norm": 1}}),
            ("options=((1, 2),)", {"mechanism": "gradient-dpgd", "options": ((1, 2),)}),
            ("options=(('smoothing', nan),)", {"mechanism": "gradient-lssgd", "options": (("smoothing", float("nan")),)}),
            ("options=(('smoothing', '1'),)", {"mechanism": "gradient-lssgd", "options": (("smoothing", "1"),)}),
            ("options=(('smoothing', 1.0), ('smoothing', 2.0))",
             {"mechanism": "gradient-lssgd", "options": (("smoothing", 1.0), ("smoothing", 2.0))}),
            ("options='smoothing=1'", {"mechanism": "gradient-lssgd", "options": "smoothing=1"}),
            ("stream=(np.uint32(5),)", {"stream": (np.uint32(5),)}), ("stream=(2**32,)", {"stream": (2**32,)}),
            ("stream=[1, 2]", {"stream": [1, 2]}), ("stream=range(3)", {"stream": range(3)}),
            ("stream=np.array([1, 2])", {"stream": np.array([1, 2])})]


def _spec_text_case(label: str, kw: dict):
    def call():
        from dpcore import RunSpec, run
        args = {"mechanism": "gradient-dpgd", "iterations": 10, "repeats": 1, **kw}
        dataset = args.pop("dataset", "breast-cancer")

        def fn():
            spec = RunSpec(dataset, **args)
            json.dumps(spec.to_dict(), allow_nan=False)
            hash(spec)
            return run(spec)
        return library_call(fn, lambda got: _sound(got, label))
    return call


# -- the other doors' arguments ---------------------------------------------------------------------

def _door_argument_cases() -> list[tuple[str, Callable]]:
    """tune, run_audit, epsilon_sweep, run_grid and the estimators given arguments of the wrong kind."""
    import numpy as np

    from dpcore import RunSpec

    spec = RunSpec("breast-cancer", mechanism="output-gaussian", epsilon=1.0, iterations=10, repeats=1)
    small = lambda: _ds(*_grid_data())  # noqa: E731

    def tune_(**kw):
        from dpcore import tune
        args = {"mechanisms": ["output-gaussian"], "epsilons": [1.0], "final_repeats": 1, **kw}
        return lambda: tune(small(), **args)

    def audit_(**kw):
        from dpcore import run_audit
        return lambda: run_audit(kw.pop("spec", spec), **{"trials": 10, **kw})

    def sweep_(mechs, eps, **kw):
        from dpcore.experiments.studies import epsilon_sweep
        return lambda: epsilon_sweep(RunSpec("breast-cancer", iterations=10, repeats=1), mechs, eps, **kw)

    def grid_(specs, **kw):
        from dpcore.experiments.context import Context
        from dpcore.experiments.grid import run_grid
        return lambda: run_grid(specs, Context(workers=1), **kw)

    def est_(which, X, y, **params):
        import dpcore

        def fn():
            est = getattr(dpcore, which)(**{"epsilon": 1.0, "random_state": 0, **params})
            est.fit(X, y)
            return est.predict(X)
        return fn

    X, y, _, _ = _grid_data()
    yr = np.clip(X @ [0.5, -0.25, 0.25], -1, 1)
    return [
        ("tune: epsilons=[]", tune_(epsilons=[])),
        ("tune: epsilons=[nan]", tune_(epsilons=[float("nan")])),
        ("tune: epsilons='1'", tune_(epsilons="1")),
        ("tune: epsilons=1.0 (not a list)", tune_(epsilons=1.0)),
        ("tune: mechanisms='output-gaussian' (a string)", tune_(mechanisms="output-gaussian")),
        ("tune: mechanisms=[]", tune_(mechanisms=[])),
        ("tune: validation_fraction=0", tune_(validation_fraction=0.0)),
        ("tune: validation_fraction=1", tune_(validation_fraction=1.0)),
        ("tune: validation_fraction=nan", tune_(validation_fraction=float("nan"))),
        ("tune: final_repeats=0", tune_(final_repeats=0)),
        ("tune: selection_epsilon=-1", tune_(selection_epsilon=-1.0)),
        ("tune: grids with an empty grid", tune_(grids={"output-gaussian": {"lam": ()}})),
        ("tune: grids naming an unknown setting", tune_(grids={"output-gaussian": {"no_such": (1.0,)}})),
        ("tune: grids a list", tune_(grids=[("output-gaussian", {"lam": (0.1,)})])),
        ("tune: seed=-1", tune_(seed=-1)),
        ("tune: delta=1e-300", tune_(delta=1e-300)),
        ("run_audit: trials=True", audit_(trials=True)),
        ("run_audit: alpha=nan", audit_(alpha=float("nan"))),
        ("run_audit: canary_label=0", audit_(canary_label=0.0)),
        ("run_audit: canary_label=nan", audit_(canary_label=float("nan"))),
        ("run_audit: chunk_size=0", audit_(chunk_size=0)),
        ("run_audit: max_rows=1", audit_(max_rows=1)),
        ("run_audit: score='auc'", audit_(score="auc")),
        ("run_audit: threat=None", audit_(threat=None)),
        ("run_audit: a spec that is a dict", audit_(spec={"dataset": "breast-cancer"})),
        ("epsilon_sweep: epsilons=[]", sweep_(["output-gaussian"], [])),
        ("epsilon_sweep: mechanisms a string", sweep_("output-gaussian", [1.0])),
        ("epsilon_sweep: epsilons=[1, 1] (repeated)", sweep_(["output-gaussian"], [1.0, 1.0])),
        ("epsilon_sweep: epsilons=[0]", sweep_(["output-gaussian"], [0.0])),
        ("epsilon_sweep: per_mechanism naming an unknown setting",
         sweep_(["output-gaussian"], [1.0], per_mechanism={"output-gaussian": {"no_such": 1}})),
        ("run_grid: 2 specs, 1 tag", grid_([spec, RunSpec("breast-cancer", mechanism="gradient-dpgd", iterations=10,
                                                          repeats=1)], tags=[{}])),
        ("run_grid: tags not mappings", grid_([spec], tags=["a"])),
        ("run_grid: []", grid_([])),
        ("DPLogisticRegression: three classes", est_("DPLogisticRegression", X, np.arange(len(X)) % 3)),
        ("DPLogisticRegression: labels 'yes'/'no'", est_("DPLogisticRegression", X, np.where(y > 0, "yes", "no"))),
        ("DPLogisticRegression: one class", est_("DPLogisticRegression", X, np.ones(len(X)))),
        ("DPLogisticRegression: X of 1e200", est_("DPLogisticRegression", X * 1e200, y)),
        ("DPLogisticRegression: X float16", est_("DPLogisticRegression", X.astype(np.float16), y)),
        ("DPLogisticRegression: one row", est_("DPLogisticRegression", X[:1], y[:1])),
        ("DPLogisticRegression: iterations=np.int64(5)", est_("DPLogisticRegression", X, y, iterations=np.int64(5))),
        ("DPLogisticRegression: epsilon=np.float32(0.5)", est_("DPLogisticRegression", X, y, epsilon=np.float32(0.5))),
        ("DPLinearRegression: y of 1e300", est_("DPLinearRegression", X, yr * 1e300)),
        ("DPLinearRegression: y with NaN", est_("DPLinearRegression", X, np.where(np.arange(len(X)) == 3, np.nan, yr))),
        ("DPLinearRegression: 0 columns", est_("DPLinearRegression", X[:, :0], yr)),
    ]


def _estimator_repr_cases() -> list[tuple[str, Callable]]:
    """The estimators on the same data in other representations: the same coefficients."""
    import numpy as np

    import dpcore

    X, y, _, _ = _grid_data()
    reps = {"float16": X.astype(np.float16), "Fortran": np.asfortranarray(X), "np.matrix": np.asmatrix(X),
            "masked array": np.ma.masked_array(X), "strided": np.repeat(X, 2, axis=1)[:, ::2], "int rows": None}
    out = []
    for which in ("DPLogisticRegression", "DPLinearRegression"):
        target = y if which == "DPLogisticRegression" else np.clip(X @ [0.5, -0.25, 0.25], -1, 1)
        for name, Xr in reps.items():
            if Xr is None:
                Xo, yo, _, _ = _onehot_data()
                Xr, Xref = Xo.astype(np.int8), Xo
                t = yo if which == "DPLogisticRegression" else np.clip(Xo @ [0.5, -0.25, 0.25], -1, 1)
            else:
                Xref, t = X, target

            def fn(which=which, Xr=Xr, Xref=Xref, t=t, name=name):
                a = getattr(dpcore, which)(epsilon=1.0, random_state=4, iterations=20).fit(Xref, t)
                b = getattr(dpcore, which)(epsilon=1.0, random_state=4, iterations=20).fit(Xr, t)
                if not (np.allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-10) and a.epsilon_certified_ == b.epsilon_certified_):
                    raise Wrong(f"{which} on X as {name}: coef {np.ravel(b.coef_)[:3]} but {np.ravel(a.coef_)[:3]} "
                                "on the float64 copy")
                pa, pb = a.predict(Xref), b.predict(Xr)
                if not np.allclose(np.asarray(pa, float), np.asarray(pb, float)):
                    raise Wrong(f"{which} on X as {name}: predictions differ from the float64 copy's")
                return b
            out.append((f"{which}: X as {name}", fn))
    return out


def library_cases(rng: random.Random) -> list[Case]:
    cases = []
    for name, make in _representations().items():
        for mech in REPR_MECHANISMS:
            cases.append(Case("library", f"run, {mech}: {name}", _repr_case(name, make, _grid_data, mech)))
    for name, make in _int_representations().items():
        signed = "±1" in name
        for mech in REPR_MECHANISMS:
            cases.append(Case("library", f"run, {mech}: {name}",
                              _repr_case(name, make, lambda s=signed: _onehot_data(signed=s), mech)))
    for name, (make, due) in _hostile_data().items():
        if name in STRUCTURAL:  # refused before any mechanism reads the data: two of them suffice
            mechs = rng.sample(HOSTILE_MECHANISMS, 2)
        elif due != "bounds" or "row" in name:
            mechs = HOSTILE_MECHANISMS
        else:
            mechs = rng.sample(HOSTILE_MECHANISMS, 3)
        for mech in mechs:
            cases.append(Case("library", f"run, {mech}: {name}", _hostile_data_case(name, make, due, mech)))
    values = _odd_values()
    for i, field_name in enumerate(NUMERIC_FIELDS):
        for label, value in rng.sample(values, 4):
            cases.append(Case("library", f"RunSpec({field_name}={label})", _spec_value_case(field_name, label, value)))
    for label, kw in _spec_text_cases():
        cases.append(Case("library", f"RunSpec({label})", _spec_text_case(label, kw)))
    for label, fn in _door_argument_cases() + _estimator_repr_cases():
        cases.append(Case("library", label, lambda fn=fn: library_call(fn)))
    return cases


# ------------------------------------------------------------------------------------------ door 2: certify

def gdp_epsilon_exact(mu: float, delta: float) -> float:
    """The exact ε(δ) of μ-GDP (Dong, Roth & Su: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)) in 60-digit
    arithmetic (mpmath), by bisection: independent of dpcore's and dp-accounting's code."""
    import mpmath as mp
    mp.mp.dps = 60
    mu, delta = mp.mpf(mu), mp.mpf(delta)
    if mu <= 0:
        return 0.0

    def d(e):
        return mp.ncdf(-e / mu + mu / 2) - mp.exp(e) * mp.ncdf(-e / mu - mu / 2)
    if d(0) <= delta:
        return 0.0
    lo, hi = mp.mpf(0), max(mp.mpf(1), mu * mu)
    while d(hi) > delta:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if d(mid) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= hi * mp.mpf(10) ** -15:
            break
    return float(hi)


def laplace_epsilon_exact(pure: float, delta: float) -> float:
    """One Laplace release of pure ε₀ = Δ/b: δ(ε) = 1 − e^{(ε − ε₀)/2} on [0, ε₀], so ε(δ) = max(0, ε₀ + 2 ln(1 − δ))."""
    return max(0.0, pure + 2.0 * math.log1p(-delta))


@dataclass(frozen=True)
class Described:
    """A certify command line and what an independent computation knows of its answer."""

    mode: str  # dp-sgd, dp-sgd-shuffled, gaussian, laplace
    flags: dict  # flag → text
    json: bool


def _cli(argv: list[str]) -> tuple[int, str, str]:
    from dpcore.cli.commands import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = main(argv)
        except SystemExit as exc:  # main turns every exit into a code: this one escaped it
            code = exc.code if isinstance(exc.code, int) else 1
            err.write(f"\n(SystemExit escaped main: {exc.code!r})")
    return code, out.getvalue(), err.getvalue()


_CHATTER = re.compile(r"^(note: |warning: |\[|tuned at )")


def _cli_outcome(argv: list[str], judge: Callable[[str, str], None] | None) -> tuple[str, str]:
    code, out, err = _cli(argv)
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("[")]
    if code == 2:
        if len(lines) != 1 or out:
            return "exit 1", f"exit 2 with {len(lines)} lines on stderr and {len(out)} characters out: {err[-300:]!r}"
        return "clean", f"refused: {lines[0][:160]}"
    if code != 0 or "Traceback" in err:
        return "exit 1", f"exit {code}: {err.strip()[-300:]}"
    stray = [ln for ln in lines if not _CHATTER.match(ln)]
    if stray:
        return "exit 1", f"exit 0 with stray lines on stderr: {stray[:2]}"
    try:
        if judge is not None:
            judge(out, err)
    except Wrong as exc:
        return "silently wrong", str(exc)
    except Exception as exc:  # noqa: BLE001 - the judge could not read the answer: said, never hidden
        return "exit 1", f"the campaign's judge could not read the answer ({type(exc).__name__}: {exc}): {out[:200]!r}"
    return "clean", "answered"


def _strict_json(text: str):
    def refuse(token):
        raise Wrong(f"non-strict JSON token {token} in the output")
    try:
        return json.loads(text, parse_constant=refuse)
    except json.JSONDecodeError as exc:
        raise Wrong(f"not one JSON document: {exc}: {text[:200]!r}") from None


def _figure_ok(value, what: str) -> float:
    """A stated ε: a number ≥ 0 or null (∞ / no figure); never NaN, never negative."""
    if value is None:
        return math.inf
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value) or value < 0:
        raise Wrong(f"{what} stated as {value!r}")
    return float(value)


def _exact_bounds(d: Described) -> dict[str, tuple[float, float]]:
    """relation → (a lower bound, an upper bound) on the true ε at the description's δ, from closed forms."""
    f = d.flags
    delta = float(f.get("--delta", "1e-5"))
    if d.mode == "gaussian":
        mu = math.sqrt(float(f.get("--compositions", "1"))) * float(f.get("--sensitivity", "1")) / float(f["--sigma"])
        return {r: ((e := gdp_epsilon_exact(mu * m, delta)), e) for r, m in (("add-remove", 1), ("replace-one", 2))}
    if d.mode == "laplace":
        k = float(f.get("--compositions", "1"))
        out = {}
        for r, m in (("add-remove", 1), ("replace-one", 2)):
            pure = m * float(f.get("--sensitivity", "1")) / float(f["--sigma"])
            one = laplace_epsilon_exact(pure, delta)
            out[r] = (one, one) if k == 1 else (one, k * pure)
        return out
    z = float(f["--noise-multiplier"])
    q = float(f["--sample-rate"]) if "--sample-rate" in f else int(float(f["--batch-size"])) / int(float(f["--dataset-size"]))
    steps = int(float(f["--steps"])) if "--steps" in f else math.ceil(float(f["--epochs"]) / q - 1e-9)
    if d.mode == "dp-sgd-shuffled":
        rounds = math.ceil(steps * q - 1e-9)
        return {r: ((e := gdp_epsilon_exact(math.sqrt(rounds) * m / z, delta)), e) for r, m in
                (("add-remove", 1), ("replace-one", 2))}
    full = {r: gdp_epsilon_exact(math.sqrt(steps) * m / z, delta) for r, m in (("add-remove", 1), ("replace-one", 2))}
    if q >= 1:
        return {r: (e, e) for r, e in full.items()}
    return {r: (0.0, e) for r, e in full.items()}  # sampling only helps: at most the unsampled figure


def _check_figure(stated: float, bounds: tuple[float, float], what: str) -> None:
    lo, hi = bounds
    if stated < lo * (1 - 1e-6) - 1e-9:
        raise Wrong(f"{what} = {stated!r} below the exact ε {lo!r} (a guarantee it does not have)")
    if math.isfinite(hi) and stated > hi * 1.02 + 1e-3 and not (lo == hi == 0):
        raise Wrong(f"{what} = {stated!r} far above the exact ε {hi!r}")


def _judge_certify(d: Described):
    def judge(out: str, err: str) -> None:
        noise_given = "--noise-multiplier" in d.flags or "--sigma" in d.flags
        bounds = _exact_bounds(d) if noise_given else {r: (0.0, math.inf) for r in ("add-remove", "replace-one")}
        if not d.json:
            if re.search(r"\bnan\b|\binf\b", out, re.I):
                raise Wrong(f"the text states nan/inf: {out[:300]!r}")
            m = re.search(r"ε certified \(PLD, tight\)\s+(\S+)\s+(\S+)", out)
            if m:
                for text, rel in zip(m.groups(), ("add-remove", "replace-one")):
                    value = math.inf if text == "∞" else float(text)
                    if value < 0:
                        raise Wrong(f"a negative ε printed: {m.group(0)}")
                    # 4 significant digits printed: compare with a rounding allowance
                    _check_figure(value * (1 + 5e-4) + 5e-4 * (value == 0) if math.isfinite(value) else value,
                                  (bounds[rel][0], math.inf), f"the printed {rel} ε")
            return
        doc = _strict_json(out)
        stated = {r: _figure_ok(doc[k], f"{r} ε") for r, k in (("add-remove", "add_remove"), ("replace-one", "replace_one"))}
        if noise_given:
            for r, v in stated.items():
                _check_figure(v, bounds[r], f"the {r} ε")
            rdp = _figure_ok(doc.get("rdp"), "the Rényi-DP ε")
            if d.mode != "dp-sgd-shuffled" and rdp < bounds["add-remove"][0] * (1 - 1e-6) - 1e-9:
                raise Wrong(f"the Rényi-DP ε {rdp!r} is below the exact add/remove ε {bounds['add-remove'][0]!r}")
            curve = doc.get("curve") or []
            last = -1.0
            for point in sorted(curve, key=lambda p: -p["delta"]):
                for r in ("add-remove", "replace-one"):
                    _figure_ok(point[r], f"the curve's {r} ε at δ = {point['delta']:g}")
                if point["add-remove"] < last - 1e-12:
                    raise Wrong(f"the ε(δ) curve turns back at δ = {point['delta']:g}")
                last = point["add-remove"]
            here = [p for p in curve if p["delta"] == doc["delta"]]
            if here and _figure_ok(here[0]["add-remove"], "the curve's ε") > stated["add-remove"] * (1 + 1e-12):
                raise Wrong(f"the curve at the asked δ says {here[0]['add-remove']!r}, the headline {stated['add-remove']!r}")
        inverse = doc.get("inverse")
        if "--target-epsilon" in d.flags:
            if not inverse:
                raise Wrong("a target ε was asked and no inverse answered")
            _judge_inverse(d, inverse, float(d.flags["--target-epsilon"]))
    return judge


def _judge_inverse(d: Described, inverse: dict, target: float) -> None:
    """The noise the inverse question printed, certified again (a closed form where there is one):
    it must meet the target; ∞ only where no noise does."""
    delta = float(d.flags.get("--delta", "1e-5"))
    for rel, factor in (("add-remove", 1.0), ("replace-one", 2.0)):
        s = inverse[rel]
        s = math.inf if s is None else float(s)
        if math.isnan(s) or s < 0:
            raise Wrong(f"the inverse's {rel} noise is {s!r}")
        if d.mode in ("gaussian", "laplace"):
            k, sens = float(d.flags.get("--compositions", "1")), float(d.flags.get("--sensitivity", "1"))
            if not math.isfinite(s):
                raise Wrong(f"the inverse says no {rel} noise meets ε = {target:g}, but σ (b) = "
                            f"{(k * factor * sens / target) * (1 if d.mode == 'laplace' else 30):.3g} does")
            if d.mode == "gaussian":
                got = gdp_epsilon_exact(math.sqrt(k) * factor * sens / s, delta) if s > 0 else math.inf
            else:
                got = k * factor * sens / s if s > 0 else math.inf  # the pure ε: an upper bound
                if k == 1:
                    got = laplace_epsilon_exact(factor * sens / s, delta)
                elif got > target * (1 + 1e-6):  # the PLD may need less than the pure bound's b
                    got = target
            if got > target * (1 + 1e-6):
                raise Wrong(f"the inverse's {rel} noise {s!r} certifies ε = {got!r} > the target {target:g}")
        elif d.mode == "dp-sgd-shuffled" or float(d.flags.get("--sample-rate", "0.5")) >= 1:
            if not math.isfinite(s):
                raise Wrong(f"the inverse says no {rel} noise multiplier meets ε = {target:g} (there is one: "
                            "an unsampled Gaussian composition)")
            f = d.flags
            q = (float(f["--sample-rate"]) if "--sample-rate" in f else  # or the batch's share of the data
                 min(1.0, float(f["--batch-size"]) / float(f["--dataset-size"])) if "--batch-size" in f else 1.0)
            steps = int(float(f["--steps"])) if "--steps" in f else math.ceil(float(f["--epochs"]) / q - 1e-9)
            rounds = math.ceil(steps * q - 1e-9) if d.mode == "dp-sgd-shuffled" else steps
            got = gdp_epsilon_exact(math.sqrt(rounds) * factor / s, delta) if s > 0 else math.inf
            if got > target * (1 + 1e-6):
                raise Wrong(f"the inverse's {rel} noise multiplier {s!r} certifies ε = {got!r} > the target {target:g}")


#: the values each certify flag is given: the ends of its declared range and a few inside
CLI_VALUES = {
    "--noise-multiplier": ("0.001", "0.05", "0.7", "30", "10000"),
    "--sample-rate": ("1e-6", "0.0001", "0.01", "0.5", "1"),
    "--steps": ("1", "7", "1000", "100000", "1e5"),
    "--epochs": ("1e-6", "0.5", "3", "100000"),
    "--batch-size/--dataset-size": (("1", "10000000000"), ("1000000000", "10000000000"), ("1", "1"), ("255", "256"),
                                    ("60000", "60000")),
    "--sigma": ("1e-6", "0.01", "1", "250", "1000000"),
    "--sensitivity": ("1e-6", "1", "3.5", "1000000"),
    "--compositions": ("1", "3", "1000", "100000"),
    "--delta": ("1e-100", "1e-12", "1e-5", "0.5", "0.9999999999"),
    "--target-epsilon": ("0.0001", "0.5", "8", "100"),
    "--accountant": ("opacus-rdp", "opacus-prv", "opacus-gdp", "tf-privacy-rdp", "jax-privacy", "dp-accounting-pld"),
}


def _describe(rng: random.Random, mode: str) -> Described:
    pick = lambda flag: rng.choice(CLI_VALUES[flag])  # noqa: E731
    flags: dict = {}
    if mode.startswith("dp-sgd"):
        if mode == "dp-sgd-q1":
            flags["--sample-rate"] = "1"
        elif rng.random() < 0.6:
            flags["--sample-rate"] = pick("--sample-rate")
        else:
            flags["--batch-size"], flags["--dataset-size"] = pick("--batch-size/--dataset-size")
        if rng.random() < 0.6:
            flags["--steps"] = pick("--steps")
        else:
            flags["--epochs"] = pick("--epochs")
        if mode == "dp-sgd-shuffled":
            flags["--sampling"] = "shuffled"
        flags["--accountant"] = pick("--accountant")
        if rng.random() < 0.85:
            flags["--noise-multiplier"] = pick("--noise-multiplier")
    else:
        flags["--mechanism"] = mode
        flags["--sensitivity"] = pick("--sensitivity")
        flags["--compositions"] = pick("--compositions")
        if rng.random() < 0.85:
            flags["--sigma"] = pick("--sigma")
    if rng.random() < 0.7:
        flags["--delta"] = pick("--delta")
    if rng.random() < 0.35 or not ({"--noise-multiplier", "--sigma"} & set(flags)):
        flags["--target-epsilon"] = pick("--target-epsilon")
    kind = {"dp-sgd-q1": "dp-sgd", "dp-sgd-poisson": "dp-sgd"}.get(mode, mode)
    return Described(kind, flags, json=rng.random() < 0.6)


def _argv(d: Described) -> list[str]:
    argv = ["certify"]
    for flag, value in d.flags.items():
        argv += [flag, value]
    return argv + (["--json"] if d.json else [])


#: forms of a number a shell hands over (each certify flag's type reads it, or refuses it in one line)
ODD_TEXT = ("1e5", "100000.0", "+7", " 7", "7 ", "0x10", "1_000", "١٢", "１２", "7e0", "1e-400", "1e400", "٠.٥",
            "9" * 400, "-0", "0.0", "NaN", "-inf", "", "1,5")


def cli_cases(rng: random.Random) -> list[Case]:
    cases, seen = [], set()
    modes = ("dp-sgd-poisson",) * 5 + ("dp-sgd-q1", "dp-sgd-shuffled", "dp-sgd-shuffled", "gaussian", "gaussian",
                                       "laplace", "laplace")
    while len(cases) < 110:
        d = _describe(rng, rng.choice(modes))
        argv = _argv(d)
        if tuple(argv) in seen:
            continue
        seen.add(tuple(argv))
        cases.append(Case("cli", " ".join(argv[1:]), lambda argv=argv, d=d: _cli_outcome(argv, _judge_certify(d))))
    flags = ("--noise-multiplier", "--sample-rate", "--steps", "--epochs", "--sigma", "--compositions", "--delta",
             "--target-epsilon", "--batch-size")
    for i, text in enumerate(ODD_TEXT):
        flag = flags[i % len(flags)]
        base = {"--noise-multiplier": "1", "--sample-rate": "0.01", "--steps": "100"}
        if flag == "--epochs":
            base.pop("--steps")
        if flag == "--batch-size":
            base.pop("--sample-rate")
            base["--dataset-size"] = "1000"
        if flag in ("--sigma", "--compositions"):
            base = {"--mechanism": "gaussian", "--sigma": "2"}
        base[flag] = text
        d = Described("gaussian" if "--mechanism" in base else "dp-sgd", base, json=i % 2 == 0)
        argv = _argv(d)
        cases.append(Case("cli", " ".join(argv[1:]) + f"  [{flag} {text!r}]",
                          lambda argv=argv, d=d: _cli_outcome(argv, _judge_certify(d))))
    return cases


# ------------------------------------------------------------------------------------------ door 3: data files

#: the shipped files a case copies into its data folder (relative to data/), and the event of the calibration
TUNED, RESULTS_CSV, RESULTS_JSON = "tuned/adult-logreg.json", "results/001-fig4.csv", "results/001-fig4.json"
DATASET_FILE = "breast-cancer-wisconsin-original.csv.gz"


def _source() -> Path:
    from dpcore.datasets import data_folder
    return Path(data_folder())


def _calibration_file() -> str:
    """The first shipped calibration whose event reads back (a 4-list event)."""
    for p in sorted((_source() / "calibrations").glob("calibration-*.json")):
        return f"calibrations/{p.name}"
    raise RuntimeError("no shipped calibration")


def _folder(rels: tuple[str, ...]) -> Path:
    """A new data folder: the datasets linked, ``rels`` copied and listed in its own manifest."""
    from dpcore import shipped
    source = _source()
    data = Path(tempfile.mkdtemp(prefix="campaign-data-")) / "data"
    data.mkdir()
    for p in source.iterdir():
        if p.name.endswith((".csv.gz", ".csv.xz")):
            (data / p.name).symlink_to(p)
    for rel in rels:
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, data / rel)
    shipped.record([data / rel for rel in rels], data)
    return data


def _read_tuned(folder: Path):
    from dpcore.experiments import tune
    return tune.tuned_setting("adult", "logreg", "gradient-dpsgd", 1.0, data_dir=folder)


def _read_results(folder: Path):
    from dpcore.experiments import presets
    got = presets.shipped_results("001-fig4", folder=folder / "results")
    return None if got is None else got.table


def _read_dataset(folder: Path):
    from dpcore import datasets
    return datasets.load("breast-cancer", data_dir=folder).X_train


def _calibration_event(rel: str) -> tuple:
    doc = json.loads((_source() / rel).read_text())
    return doc["epsilon"], doc["delta"], doc["sample_rate"], doc["steps"]


def _read_calibration(folder: Path, rel: str):
    from dpcore.erm import ReferenceStore
    store = ReferenceStore(None, data_dir=folder)
    return store.calibrations.sampled_gaussian(*_calibration_event(rel))


def _same(a, b) -> bool:
    import numpy as np
    import pandas as pd
    if a is None or b is None:
        return a is b
    if isinstance(a, pd.DataFrame):  # the same runs, in any order, with any extra column: the same numbers
        if not isinstance(b, pd.DataFrame) or len(a) != len(b) or not set(b.columns) <= set(a.columns):
            return False
        cols = list(b.columns)
        key = lambda df: df[cols].astype(str).sort_values(cols).reset_index(drop=True)  # noqa: E731
        return key(a).equals(key(b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=2e-3)
    return a == b


def _data_case(reader: str, rels: tuple[str, ...], forge: Callable[[Path], None], relist: tuple[str, ...] = ()):
    """Forge a copy of the data folder and read it: a one-line refusal, ``None`` (computed afresh), or
    the genuine file's answer (:func:`_same`) are clean; anything else handed on is silently wrong."""
    def call():
        from dpcore import shipped
        cal = _calibration_file()
        read = {"tuned": _read_tuned, "results": _read_results, "dataset": _read_dataset,
                "calibration": lambda f: _read_calibration(f, cal)}[reader]
        genuine = read(_folder(rels))
        folder = _folder(rels)
        forge(folder)
        if relist:
            shipped.record([folder / r for r in relist], folder)

        def judge(got):
            if got is None or _same(got, genuine):
                return
            if reader == "calibration":
                from dpcore.privacy.accounting import sampled_gaussian_epsilon
                eps, delta, q, steps = _calibration_event(cal)
                if sampled_gaussian_epsilon(float(got), q, steps, delta) > eps:
                    raise Wrong(f"the calibration read back, z = {got!r}, does not certify ε = {eps}")
            raise Wrong(f"the forged file's content was handed on: {str(got)[:200]} (the genuine: {str(genuine)[:120]})")
        return library_call(lambda: read(folder), judge)
    return call


def _edit_json(rel: str, change: Callable[[Any], Any], raw: bool = False):
    """Forge ``rel``: ``change(doc)`` edits the document (or returns a new one); ``raw``: ``change(text)`` gives the text."""
    def forge(folder: Path):
        path = folder / rel
        if raw:
            path.write_text(change(path.read_text()))
            return
        doc = json.loads(path.read_text())
        new = change(doc)
        path.write_text(json.dumps(doc if new is None else new, indent=1))
    return forge


def _manifest_text(change: Callable[[str], str]):
    from dpcore.shipped import MANIFEST

    def forge(folder: Path):
        path = folder / MANIFEST
        path.write_text(change(path.read_text()))
    return forge


def _entry_of(rel: str):
    """(the manifest's text, the entry's JSON text) of ``rel`` in a folder's manifest."""
    def get(text: str) -> tuple[dict, str]:
        doc = json.loads(text)
        return doc, json.dumps(rel) + ": " + json.dumps(doc["files"][rel])
    return get


def _dup_entry(rel: str, forged_first: bool):
    def change(text: str) -> str:
        doc, entry = _entry_of(rel)(text)
        bad = json.dumps(rel) + ": " + json.dumps({"sha256": "0" * 64, "bytes": 1})
        pair = f"{bad}, {entry}" if forged_first else f"{entry}, {bad}"
        return _rewrite_with(doc, rel, pair)
    return change


def _rewrite_with(doc: dict, rel: str, pair: str) -> str:
    files = dict(doc["files"])
    files.pop(rel)
    body = ", ".join(json.dumps(k) + ": " + json.dumps(v) for k, v in files.items())
    return '{"about": "x", "files": {' + pair + (", " + body if body else "") + "}}"


def _manifest_edit(rel: str, change: Callable[[dict], None]):
    def edit(text: str) -> str:
        doc = json.loads(text)
        change(doc["files"][rel]) if rel else change(doc)
        return json.dumps(doc, indent=1)
    return edit


def _tuned_rows(change: Callable[[list], None]):
    def edit(doc):
        change(doc["rows"])
    return edit


def _find_row(rows: list, mech="gradient-dpsgd", eps=1.0) -> int:
    return next(i for i, r in enumerate(rows) if r.get("mechanism") == mech and r.get("epsilon") == eps)


def _csv_lines(change: Callable[[list[str]], list[str]]):
    def edit(text: str) -> str:
        lines = text.split("\n")
        return "\n".join(change(lines))
    return edit


def _place(rel: str, what: str):
    def forge(folder: Path):
        path = folder / rel
        if path.is_symlink() or path.exists():
            path.unlink()
        if what == "fifo":
            os.mkfifo(path)
        elif what == "folder":
            path.mkdir()
        elif what == "empty":
            path.write_bytes(b"")
        elif what == "sparse 3 GiB":
            with open(path, "wb") as fh:
                fh.truncate(3 * 2**30)
        elif what == "/dev/zero":
            path.symlink_to("/dev/zero")
        elif what == "link loop":
            path.symlink_to(path.name)
        elif what == "truncated":
            path.write_bytes((_source() / rel).read_bytes()[:5000])
        elif what == "recompressed":
            import gzip
            path.write_bytes(gzip.compress(gzip.decompress((_source() / rel).read_bytes()), mtime=1))
        elif what == "another dataset":
            path.symlink_to(_source() / "creditcard_balanced984_seed0.csv.gz")
    return forge


def data_cases(rng: random.Random) -> list[Case]:
    from dpcore.shipped import MANIFEST
    cal = _calibration_file()
    both = (TUNED, RESULTS_CSV, RESULTS_JSON)
    out: list[tuple[str, str, tuple, Callable, tuple]] = []

    def add(label, reader, forge, relist=(), rels=both):
        out.append((label, reader, rels, forge, relist))

    # the manifest, read through the tuning's and the results' readers
    for reader, rel in (("tuned", TUNED), ("results", RESULTS_CSV)):
        add(f"manifest: {rel} listed twice, a forged entry first", reader, _manifest_text(_dup_entry(rel, True)))
        add(f"manifest: {rel} listed twice, the genuine entry first", reader, _manifest_text(_dup_entry(rel, False)))
        add(f"manifest: {rel}'s bytes a float", reader, _manifest_text(_manifest_edit(rel, lambda e: e.update(bytes=float(e["bytes"])))))
        add(f"manifest: {rel}'s bytes true", reader, _manifest_text(_manifest_edit(rel, lambda e: e.update(bytes=True))))
        add(f"manifest: {rel}'s sha256 in capitals", reader, _manifest_text(_manifest_edit(rel, lambda e: e.update(sha256=e["sha256"].upper()))))
        add(f"manifest: {rel} listed as ./{rel}", reader,
            _manifest_text(lambda t, rel=rel: t.replace(json.dumps(rel), json.dumps("./" + rel))))
    add("manifest: a byte-order mark", "tuned", _manifest_text(lambda t: "\ufeff" + t))
    add("manifest: nested 100,000 deep", "tuned", _manifest_text(lambda t: "[" * 100_000 + "]" * 100_000))
    add("manifest: files a list", "results", _manifest_text(_manifest_edit("", lambda d: d.update(files=list(d["files"])))))
    add("manifest: 'about' NaN", "tuned", _manifest_text(_manifest_edit("", lambda d: d.update(about=float("nan")))))
    add("manifest: 1.1 MiB of padding", "results", _manifest_text(_manifest_edit("", lambda d: d.update(about="x" * (1100 * 1024)))))
    add("manifest: a FIFO", "tuned", _place(MANIFEST, "fifo"))
    add("manifest: a link to /dev/zero", "results", _place(MANIFEST, "/dev/zero"))
    add("manifest: missing", "tuned", lambda f: (f / MANIFEST).unlink())
    add("manifest: empty", "results", _place(MANIFEST, "empty"))
    # the tuning, forged and listed again (the manifest vouches for it)
    t = dict(reader="tuned", relist=(TUNED,))
    add("tuning: the dpsgd row at ε = 1 twice, a forged setting first", forge=_edit_json(TUNED, _tuned_rows(
        lambda rows: rows.insert(_find_row(rows), {**rows[_find_row(rows)], "setting": {**rows[_find_row(rows)]["setting"],
                                                                                        "clip_norm": 123.0}}))), **t)
    add("tuning: the dpsgd row at ε = 1 twice, a forged setting after", forge=_edit_json(TUNED, _tuned_rows(
        lambda rows: rows.append({**rows[_find_row(rows)], "setting": {**rows[_find_row(rows)]["setting"], "clip_norm": 123.0}}))), **t)
    add("tuning: the mechanism spelt with a Unicode hyphen", forge=_edit_json(TUNED, _tuned_rows(
        lambda rows: rows[_find_row(rows)].update(mechanism="gradient\u2010dpsgd"))), **t)
    add("tuning: the row's ε as text '1.0'", forge=_edit_json(TUNED, _tuned_rows(
        lambda rows: rows[_find_row(rows)].update(epsilon="1.0"))), **t)
    add("tuning: the row's ε 1e-300", forge=_edit_json(TUNED, _tuned_rows(
        lambda rows: rows[_find_row(rows)].update(epsilon=1e-300))), **t)
    add("tuning: a setting value true", forge=_edit_json(TUNED, _tuned_rows(
        lambda rows: rows[_find_row(rows)]["setting"].update(clip_norm=True))), **t)
    add("tuning: a setting 'options' added", forge=_edit_json(TUNED, _tuned_rows(
        lambda rows: rows[_find_row(rows)]["setting"].update(options={"x": 1}))), **t)
    add("tuning: a setting 'stream' added", forge=_edit_json(TUNED, _tuned_rows(
        lambda rows: rows[_find_row(rows)]["setting"].update(stream=[7]))), **t)
    add("tuning: rows empty", forge=_edit_json(TUNED, _tuned_rows(lambda rows: rows.clear())), **t)
    add("tuning: 'rows' twice, forged first", forge=_edit_json(TUNED, lambda text: text.replace(
        '"rows":', '"rows": [{"mechanism": "gradient-dpsgd", "epsilon": 1.0, "setting": {"clip_norm": 9}}], "rows":', 1),
        raw=True), **t)
    add("tuning: the dataset 'ADULT'", forge=_edit_json(TUNED, lambda d: d.update(dataset="ADULT")), **t)
    add("tuning: δ 1e-5 (not the one certified)", forge=_edit_json(TUNED, lambda d: d.update(delta=1e-5)), **t)
    add("tuning: n_train 10", forge=_edit_json(TUNED, lambda d: d.update(n_train=10)), **t)
    add("tuning: a row's epsilon_certified -0.0", forge=_edit_json(TUNED, _tuned_rows(
        lambda rows: rows[_find_row(rows)].update(epsilon_certified=-0.0))), **t)
    # the results table, forged and listed again
    r = dict(reader="results", relist=(RESULTS_CSV,))
    add("results: a byte-order mark", forge=_edit_json(RESULTS_CSV, lambda s: "\ufeff" + s, raw=True), **r)
    add("results: CRLF line ends", forge=_edit_json(RESULTS_CSV, lambda s: s.replace("\n", "\r\n"), raw=True), **r)
    add("results: a run's row twice", forge=_edit_json(RESULTS_CSV, _csv_lines(lambda ls: ls[:2] + ls[1:]), raw=True), **r)
    add("results: a run's row dropped", forge=_edit_json(RESULTS_CSV, _csv_lines(lambda ls: ls[:1] + ls[2:]), raw=True), **r)
    add("results: the rows reversed", forge=_edit_json(RESULTS_CSV, _csv_lines(
        lambda ls: ls[:1] + [x for x in ls[1:] if x][::-1] + [""]), raw=True), **r)
    add("results: an extra column", forge=_edit_json(RESULTS_CSV, _csv_lines(
        lambda ls: [x + (",extra" if i == 0 else ",1") if x else x for i, x in enumerate(ls)]), raw=True), **r)
    add("results: the header's first column twice", forge=_edit_json(RESULTS_CSV, _csv_lines(
        lambda ls: [ls[0].replace("preset", "task", 1)] + ls[1:]), raw=True), **r)
    add("results: a run's ε certified 1e-320", forge=_edit_json(RESULTS_CSV, _csv_lines(
        lambda ls: ls[:1] + [_set_field(ls[0], ls[1], "epsilon_certified", "1e-320")] + ls[2:]), raw=True), **r)
    add("results: a seed written 0.0", forge=_edit_json(RESULTS_CSV, _csv_lines(
        lambda ls: ls[:1] + [_set_field(ls[0], ls[1], "seed", "0.0")] + ls[2:]), raw=True), **r)
    # a dataset file replaced
    for what in ("fifo", "folder", "empty", "sparse 3 GiB", "/dev/zero", "link loop", "truncated", "recompressed",
                 "another dataset"):
        add(f"dataset: breast cancer's file {what}", "dataset", _place(DATASET_FILE, what), rels=())
    # a shipped calibration, forged and listed again
    c = dict(reader="calibration", relist=(cal,), rels=(cal,))
    add("calibration: z 5 % lower", forge=_edit_json(cal, lambda d: d.update(noise_multiplier=d["noise_multiplier"] * 0.95)), **c)
    add("calibration: z 5 % higher", forge=_edit_json(cal, lambda d: d.update(noise_multiplier=d["noise_multiplier"] * 1.05)), **c)
    add("calibration: z as text", forge=_edit_json(cal, lambda d: d.update(noise_multiplier=repr(d["noise_multiplier"]))), **c)
    add("calibration: z true", forge=_edit_json(cal, lambda d: d.update(noise_multiplier=True)), **c)
    add("calibration: z 1e-300", forge=_edit_json(cal, lambda d: d.update(noise_multiplier=1e-300)), **c)
    add("calibration: z a list", forge=_edit_json(cal, lambda d: d.update(noise_multiplier=[d["noise_multiplier"]])), **c)
    add("calibration: the event's steps as a float", forge=_edit_json(cal, lambda d: d["event"].__setitem__(3, float(d["event"][3]))), **c)
    add("calibration: a 60 kB note", forge=_edit_json(cal, lambda d: d.update(note="x" * 60_000)), **c)
    add("calibration: a JSON list", forge=_edit_json(cal, lambda d: [d]), **c)
    return [Case("data", label, _data_case(reader, rels, forge, relist)) for label, reader, rels, forge, relist in out]


def _set_field(header: str, line: str, column: str, value: str) -> str:
    import csv
    cols = next(csv.reader([header]))
    cells = next(csv.reader([line]))
    cells[cols.index(column)] = value
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    return buf.getvalue()


# ------------------------------------------------------------------------------------------ door 4: app links

#: link texts no earlier campaign sent (tests/test_fuzz_links.py's WORDS and value classes): numbers in
#: other scripts, sizes no float holds, spellings float() reads that a person would not write
NEW_WORDS = ("١٢", "１２", "٠.٥", "9" * 400, "-" + "9" * 400, "1e400", "-1e400", "1e-400", "4.9e-324",
             "0x1p-3", "+inf", "\u22121", "∞", "½", "1/2", "\t1", "1\u00a0", "1e5 ", "True", "[1]", ",,,",
             "0.1,0.1,0.1", "1" + "0" * 30, "nan,1", "1e-4,1000", "-0.0", "00000000000000000000001",
             "2147483648", "4294967296", "18446744073709551617", "\u200b1", "1.", ".5", "1e+3")
NUMBER_WORDS = NEW_WORDS[:20] + NEW_WORDS[26:]
LIST_WORDS = (",,,", "0.1,0.1,0.1", "nan,1", "1e-4,1000", "9" * 400, "١٢", "\u200bgradient-dpgd")


def _links():
    sys.path.insert(0, str(ROOT / "tests"))
    # AppTest runs a page file with its folder (pages/) first on sys.path: a later ``from distributed import``
    # (dask, in a worker that ran the library door's dask cases) would find pages/distributed.py and run
    # the page again inside it (a duplicate widget key).  Streamlit runs the app from app.py's folder, so
    # this is the harness's own: the real package imported first, before any page runs.
    with contextlib.suppress(ImportError):
        import distributed  # noqa: F401
    import test_fuzz_links as fl  # noqa: E402 - its declarations: the views, their keys, ranges and verdict
    return fl


def _app_single(page: str, key: str, raw: str):
    def call():
        fl = _links()
        v = fl.view(page)
        link = {**fl.reveal(page, key), key: raw}
        try:
            at = fl.open_link(page, link)
        except Exception as exc:  # noqa: BLE001 - AppTest's own failure to run the page
            return "exit 1", f"AppTest: {type(exc).__name__}: {str(exc)[:300]}"
        bad = fl.verdict(at, page, key, raw, v.keys[key])
        if bad is None:
            return _app_sound(at)
        return ("exit 1" if bad.startswith("exception") else "silently wrong"), bad
    return call


def _app_sound(at) -> tuple[str, str]:
    """No exception; no NaN, negative or missing figure shown as a number (metrics and tables)."""
    if at.exception:
        return "exit 1", f"exception: {at.exception[0].value[:300]}"
    shown = [m.value for m in at.metric] + [str(m.label) + " " + str(m.value) for m in at.metric]
    for text in shown:
        if re.search(r"(^|\s)(nan|NaN|-inf|−∞)(\s|$)", str(text)):
            return "silently wrong", f"a figure shown as {text!r}"
    errors = [e.value for e in at.error]
    return "clean", f"errors: {errors[:1]}" if errors else "answered"


def _app_combo(page: str, link: dict):
    def call():
        fl = _links()
        try:
            at = fl.open_link(page, link)
        except Exception as exc:  # noqa: BLE001
            return "exit 1", f"AppTest: {type(exc).__name__}: {str(exc)[:300]}"
        return _app_sound(at)
    return call


#: links that bring a result shown (its flag true), with extreme but valid settings: (page, the flag, the
#: keys drawn from)
SHOWN = {"certify.py": (None, ("cert_z", "cert_q", "cert_steps", "cert_epochs", "cert_sigma", "cert_sens", "cert_k",
                               "cert_delta", "cert_target", "cert_batch", "cert_n")),
         "compare.py": ("cmp_shown", ("cmp_eps", "cmp_delta", "cmp_T", "cmp_R", "cmp_lam", "cmp_clients", "cmp_skew")),
         "distributed.py": ("dist_shown", ("dist_m", "dist_u", "dist_epsilon", "dist_delta", "dist_T", "dist_R")),
         "local_central.py": ("lc_shown", ("lc_epsilon", "lc_delta", "lc_R", "lc_T")),
         "explore.py": ("ex_audited", ("ex_epsilon", "ex_delta", "ex_T", "ex_lam", "ex_lr", "ex_R", "ex_q", "ex_clip",
                                       "ex_batch", "ex_m", "ex_u")),
         "audit.py": ("au_shown", ("au_epsilon", "au_delta", "au_T", "au_trials", "au_noise")),
         "theory.py": ("th_shown", ("th_epsilon", "th_delta", "th_T", "th_m", "th_u"))}
#: choices that make a combination reach further (a mechanism that reads the keys above)
SHOWN_CHOICES = {"certify.py": {"cert_mechanism": ("dp-sgd", "gaussian", "laplace"), "cert_ask": ("true", "false"),
                                "cert_length": ("steps", "epochs"), "cert_rate": ("sample rate", "batch and dataset size"),
                                "cert_sampling": ("poisson", "shuffled"),
                                "cert_accountant": ("opacus-rdp", "opacus-gdp", "dp-accounting-pld")},
                 "compare.py": {"cmp_mechs": ("distributed-wddp,gradient-dpsgd", "output-laplace,input-kang",
                                              "local-duchi,objective-chaudhuri")},
                 "explore.py": {"ex_mechanism": ("gradient-dpsgd", "distributed-wddp", "output-bolt-on", "local-duchi")},
                 "audit.py": {"au_threat": ("black-box", "white-box"), "au_mechanism": ("gradient-dpsgd", "output-laplace")}}


def _extreme(fl, v, key: str, rng: random.Random) -> str:
    default = v.keys[key]
    rng_ = v.ranges.get(key)
    if key == "cmp_eps":
        return rng.choice(("0.0001", "1000", "0.0001,1000", ",".join(str(10 ** (k / 4)) for k in range(-16, 12))))
    if rng_ is None or None in rng_:
        return fl.url_text(default)
    lo, hi = rng_
    value = rng.choice((lo, hi, lo, hi, (lo * hi) ** 0.5 if lo > 0 else (lo + hi) / 2))
    return str(int(value)) if isinstance(default, int) and not isinstance(default, bool) else repr(float(value))


def app_cases(rng: random.Random) -> list[Case]:
    fl = _links()
    cases = []
    views = [v for v in fl.views() if v.keys]
    for v in views:
        keys = [k for k in v.keys if not k.startswith("ex_opt_")]
        for key in rng.sample(keys, min(len(keys), 4)):
            words = {"number": NUMBER_WORDS, "list": LIST_WORDS}.get(fl.kind(v.keys[key]), NEW_WORDS)
            raw = rng.choice(words)
            cases.append(Case("app", f"{v.page}?{key}={raw[:30]!r}", _app_single(v.page, key, raw)))
    for page, (flag, keys) in SHOWN.items():
        v = fl.view(page)
        for _ in range(5):
            link = {} if flag is None else {flag: "true"}
            for key, options in SHOWN_CHOICES.get(page, {}).items():
                link[key] = rng.choice(options)
            for key in rng.sample(keys, min(len(keys), rng.randint(2, 4))):
                link[key] = _extreme(fl, v, key, rng)
            cases.append(Case("app", f"{page}?" + "&".join(f"{k}={x}" for k, x in link.items()), _app_combo(page, link)))
    return cases


# ------------------------------------------------------------------------------------------ running


_CASES: list[Case] = []


def _serve(conn) -> None:
    """The worker: run the case whose index arrives, send back (outcome, detail)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            i = conn.recv()
        except EOFError:
            return
        case = _CASES[i]
        try:
            outcome = case.call()
        except Wrong as exc:
            outcome = ("silently wrong", str(exc))
        except BaseException as exc:  # noqa: BLE001 - an escaped exception is the finding
            outcome = ("exit 1", f"escaped the judge: {type(exc).__name__}: {str(exc)[:300]} | {_where(exc)}")
        conn.send(outcome)


class Worker:
    """One process that runs cases until one does not answer in time (then it is killed and replaced)."""

    def __init__(self):
        self.proc = None
        self.start()

    def start(self):
        ctx = multiprocessing.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self.proc.start()

    def kill(self):
        if self.proc is not None and self.proc.is_alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.join(5)

    def run(self, i: int, seconds: float) -> tuple[str, str, float]:
        started = time.perf_counter()
        self.conn.send(i)
        if self.conn.poll(seconds):
            try:
                outcome, detail = self.conn.recv()
                return outcome, detail, time.perf_counter() - started
            except EOFError:
                pass
        else:
            self.kill()
            self.start()
            return "hang", f"no answer within {seconds:g} s", time.perf_counter() - started
        code = self.proc.exitcode
        self.kill()
        self.start()
        return "exit 1", f"the worker died (exit code {code})", time.perf_counter() - started


GENERATORS = {"library": library_cases, "cli": cli_cases, "data": data_cases, "app": app_cases}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=67)
    parser.add_argument("--door", action="append", choices=list(GENERATORS))
    parser.add_argument("--limit", type=int, default=None, help="at most this many inputs per door")
    parser.add_argument("--match", default=None, help="only inputs whose id holds this text")
    parser.add_argument("--skip", type=int, default=0, help="leave out each door's first SKIP inputs (resume a run)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every input's outcome")
    args = parser.parse_args(argv)
    os.environ.setdefault("DPCORE_CACHE_DIR", tempfile.mkdtemp(prefix="dpcore-campaign-"))
    os.environ.setdefault("DPCORE_WORK_BUDGET", repr(WORK_BUDGET))
    os.environ.setdefault("DPCORE_MEMORY_BUDGET", repr(MEMORY_BUDGET))
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    sys.path.insert(0, str(ROOT))
    doors = args.door or list(GENERATORS)
    table: dict[str, dict[str, int]] = {}
    first: dict[tuple[str, str], tuple[str, str]] = {}
    failures: list[tuple[str, str, str, str]] = []
    started = time.perf_counter()
    for door in doors:
        rng = random.Random(f"{args.seed}:{door}")
        cases = GENERATORS[door](rng)
        if args.match:
            cases = [c for c in cases if args.match in c.id]
        cases = cases[args.skip:]
        if args.limit is not None:
            cases = cases[: args.limit]
        _CASES[:] = cases
        worker = Worker()
        counts = table.setdefault(door, {o: 0 for o in OUTCOMES})
        for i, case in enumerate(cases):
            outcome, detail, seconds = worker.run(i, SECONDS[door])
            counts[outcome] += 1
            if outcome != "clean":
                first.setdefault((door, outcome), (case.id, detail))
                failures.append((door, outcome, case.id, detail))
            if args.verbose or outcome != "clean":
                print(f"[{door} {i + 1}/{len(cases)} {seconds:5.1f} s] {outcome:14} {case.id[:110]} :: {detail[:260]}",
                      flush=True)
        worker.kill()
    print()
    print(f"campaign, seed {args.seed}: {sum(sum(c.values()) for c in table.values())} inputs in "
          f"{time.perf_counter() - started:.0f} s (time limits: " + ", ".join(f"{d} {SECONDS[d]:g} s" for d in doors) + ")")
    width = max(len(d) for d in table) + 2
    print(f"{'door':{width}}" + "".join(f"{o:>16}" for o in ("inputs",) + OUTCOMES))
    for door, counts in table.items():
        print(f"{door:{width}}" + f"{sum(counts.values()):>16}" + "".join(f"{counts[o]:>16}" for o in OUTCOMES))
    totals = {o: sum(c[o] for c in table.values()) for o in OUTCOMES}
    print(f"{'all':{width}}" + f"{sum(totals.values()):>16}" + "".join(f"{totals[o]:>16}" for o in OUTCOMES))
    if first:
        print("\nthe first example of each failure:")
        for (door, outcome), (case_id, detail) in first.items():
            print(f"  {door} / {outcome}: {case_id}\n      → {detail[:400]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
