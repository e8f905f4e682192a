"""Errors and warnings raised by dpcore.

Every error a user can cause derives from :class:`DPCoreError` (a ``ValueError``),
so the command line and the app can turn it into one clear line without a
traceback.
"""

from __future__ import annotations

import difflib
import warnings
from typing import Callable


class DPCoreError(ValueError):
    """Bad input that the user can fix; the message says what to change.

    Examples
    --------
    Every error a user can cause is one of these, so one ``except`` turns it into one line:

    >>> from dpcore import DPCoreError, RunSpec, run
    >>> try:
    ...     run(RunSpec("iris", mechanism="gradient-dpgd", iterations=0))
    ... except DPCoreError as exc:
    ...     print(type(exc).__name__, "-", str(exc).split(".")[0])
    ParameterError - The 'iterations' parameter of run must be an int in [1, 1000000]
    """


class ParameterError(DPCoreError):
    """A parameter outside its declared constraint (see :mod:`dpcore.params`).

    Examples
    --------
    >>> from dpcore import Context, ParameterError
    >>> try:
    ...     Context(workers=0)
    ... except ParameterError as exc:
    ...     print(exc)
    --workers must be at least 1, got 0
    """


class BudgetError(ParameterError):
    """A run refused up front because its memory or work estimate exceeds this machine's
    budget (``DPCORE_MEMORY_BUDGET`` / ``DPCORE_WORK_BUDGET``): a fact about the machine,
    not the setting, so a sweep never caches it as the setting's result.

    Examples
    --------
    >>> from dpcore import BudgetError, Context, RunSpec, run
    >>> from dpcore.experiments.context import Budget
    >>> small = Context(budget=Budget(work=1e6))           # a millionth of the default
    >>> try:
    ...     run(RunSpec("iris", mechanism="gradient-dpgd", iterations=10_000), ctx=small)
    ... except BudgetError as exc:
    ...     print(str(exc).split(" (")[0])
    5 runs × 10,000 steps on 120 rows are about 1.8e+08 operations
    """


class DatasetError(DPCoreError):
    """A bundled data file missing or altered, or a user CSV that cannot be used.

    Examples
    --------
    >>> from dpcore import DatasetError
    >>> from dpcore.datasets import from_csv
    >>> try:
    ...     from_csv(b"a,b" + bytes([10]) + b"1,2", "label")
    ... except DatasetError as exc:
    ...     print(exc)
    label column 'label' is not in the data (columns: a, b).
    """


class ModelError(DPCoreError):
    """A model / mechanism / data combination that cannot work.

    Examples
    --------
    >>> from dpcore import ModelError, RunSpec, run
    >>> try:
    ...     run(RunSpec("iris", mechanism="output-gaussian", lam=0.0))
    ... except ModelError as exc:
    ...     print(exc)
    exact logistic ERM needs λ > 0 (without it the minimiser may not exist on separable data): set lam to a positive value.
    """


class PrivacyWarning(UserWarning):
    """A setting that weakens or voids the stated privacy guarantee.

    Raised, for example, when ``delta >= 1/n`` (a mechanism may then release a
    whole record and still satisfy the definition) or when the data break an
    assumption of the proof (a row norm above 1).

    Examples
    --------
    Rows outside the unit ball are scaled onto it (spending no privacy), with a warning:

    >>> import warnings
    >>> import numpy as np
    >>> from dpcore import DPLogisticRegression, PrivacyWarning
    >>> X, y = np.array([[3.0, 0.0], [0.0, 3.0]] * 50), np.array([0, 1] * 50)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     clf = DPLogisticRegression(epsilon=1.0, random_state=0).fit(X, y)
    >>> [str(w.message).split(" (")[0] for w in caught if issubclass(w.category, PrivacyWarning)]
    ['100 of 100 rows had ‖x‖ > 1']
    """


def unknown_choice(what: str, value, choices) -> str:
    """The message for a value not among ``choices``, short enough for one error line (≤ 300
    characters with its prefix): the close matches first, then every choice — grouped by the
    part before the first hyphen (``gradient-{dpgd, dpsgd}``) when the plain list is long.

    >>> unknown_choice("model", "logrek", ["logreg", "linreg", "mlp"])
    "unknown model 'logrek'; did you mean logreg? (choose one of: logreg, linreg, mlp)"
    """
    names = [str(c) for c in choices]
    shown = str(value) if len(str(value)) <= 40 else f"{str(value)[:16]}… ({len(str(value))} characters)"
    text = f"unknown {what} {shown!r}"
    close = difflib.get_close_matches(str(value), names, n=3, cutoff=0.6)
    listed = ", ".join(names)
    if len(listed) > 150:
        groups: dict[str, list[str]] = {}
        for name in names:
            head, _, tail = name.partition("-")
            groups.setdefault(head if tail else name, []).append(tail)
        listed = ", ".join(h if tails == [""] else f"{h}-{tails[0]}" if len(tails) == 1
                           else f"{h}-{{{', '.join(tails)}}}" for h, tails in groups.items())
    if close:
        guess = f"{text}; did you mean {' or '.join(close)}?"
        whole = f"{guess} (choose one of: {listed})"
        return whole if len(whole) <= 240 else guess
    return f"{text}; choose one of: {listed}"


def names_of(package: str, *modules):
    """A package ``__getattr__`` for the path a module had before the package grew folders: any name of
    ``modules`` (the first that has it) reads as before, through the package; any other name is an
    ``AttributeError`` naming the package."""
    def __getattr__(name: str):
        for m in modules:
            if hasattr(m, name):
                return getattr(m, name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


def moved_attributes(module: str, moved: dict[str, tuple[str, Callable[[], object]]]):
    """A module ``__getattr__`` for names that became calls: reading ``module.NAME`` still works for
    one release, returns what ``moved[NAME][1]()`` gives now and warns (``DeprecationWarning``) with the
    new spelling ``moved[NAME][0]``; any other name is an ``AttributeError`` as usual."""
    def __getattr__(name: str):
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        spelling, value = moved[name]
        warnings.warn(f"{module}.{name} is deprecated and will be removed in the next release: "
                      f"use {spelling}", DeprecationWarning, stacklevel=2)
        return value()

    return __getattr__
