"""Declared ranges that really run.

Every numeric setting the command line's ``run`` and ``audit`` declare (read from the parser,
whose types come from :data:`dpcore.params.PARAMS`) and every numeric option a mechanism declares
(``Mechanism.options``) is tried at each end of its declared range and just outside it:

* just outside: exit 2 and one line that names the parameter;
* at the end: a run that finishes, or a refusal up front (exit 2, one line: a budget, or a
  setting that cannot run here, said in words) — never a traceback, and never a run that goes
  on past the time limit.

The cases are generated from the declarations; only *where* a setting applies (which mechanism,
model or dataset reads it) is chosen per kind of setting, from the mechanisms' own declarations.
The work budget is lowered for this test (:data:`WORK`), so an accepted run is one the estimate
prices at a few seconds: one that runs past :data:`LIMIT` means the estimate missed work.
"""

from __future__ import annotations


import pytest
from hostile import time_limit  # tests/hostile.py

from dpcore.cli.commands import build_parser, main
from dpcore.mechanisms import REGISTRY
from dpcore.params import PARAMS, Interval

#: work budget during this test (weighted multiply-adds; 2e11 is about 6 minutes on 2 cores)
WORK = 3e9
#: seconds an accepted run may take
LIMIT = 40.0
#: a quick base: one repeat, few steps (a case's own flag comes later and wins)
QUICK = ["-R", "1", "-T", "5"]
BC = ["--dataset", "breast-cancer"]


def _mechanism_reading(field: str) -> str:
    """The first registered private mechanism whose declared settings include ``field``."""
    return next(m for m, c in REGISTRY.items() if c.private and field in c.settings)


def _iterative() -> str:
    return next(m for m, c in REGISTRY.items() if c.private and c.iterative and c.family == "gradient")


def _run_base(param: str) -> list[str]:
    """Where a ``run`` setting applies, from the declarations (flags named in the mechanisms'
    ``settings``, iteration flags on an iterative mechanism, ...)."""
    fields = {"batch_size", "sample_rate", "clip_norm", "clients", "skew"}
    if param in fields:
        mech = _mechanism_reading(param)
        extra = ["--clients", "4"] if param == "skew" else []
        return ["run", *BC, "--mechanism", mech, *QUICK, *extra]
    if param in ("n", "d", "noise"):
        return ["run", "--dataset", "synthetic-classification", "--mechanism", _iterative(), *QUICK]
    if param == "radius":
        return ["run", "--dataset", "synthetic-regression", "--model", "linreg", "--mechanism", _iterative(), *QUICK]
    if param == "c":
        return ["run", *BC, "--mechanism", _iterative(), "--calibration", "published", *QUICK]
    if param == "epsilon":  # also --label-epsilon: read by the input mechanisms
        return ["run", *BC, "--mechanism", "input-kang", *QUICK]
    return ["run", *BC, "--mechanism", _iterative(), *QUICK]


def _audit_base(param: str) -> list[str]:
    one_run = ["--one-run"] if param == "canaries" else ["--trials", "20"]
    return ["audit", *BC, "--mechanism", _iterative(), "-T", "5", *one_run]


def _ends(constraint: Interval) -> list[tuple[str, object, bool]]:
    """(label, value, inside) at each end of a declared interval and just beyond it."""
    out = []
    big = 2**62 if constraint.kind is int else 1e300
    for side, end in (("low", constraint.low), ("high", constraint.high)):
        closed = constraint.closed in (("both", "left") if side == "low" else ("both", "right"))
        if end is None:
            if side == "high":
                out.append(("huge", big, True))
            continue
        if constraint.kind is int:
            inside = int(end) if closed else int(end) + (1 if side == "low" else -1)
            outside = inside - 1 if side == "low" else inside + 1
        else:
            step = (1 if side == "high" else -1) * max(abs(end) * 1e-9, 1e-300)
            inside = float(end) if closed else float(end) - step
            outside = float(end) + step if closed else float(end)
        out.append((side, inside, True))
        out.append((f"beyond {side}", outside, False))
    return out


def _cases():
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    cases = []
    for command, base in (("run", _run_base), ("audit", _audit_base)):
        for action in sub.choices[command]._actions:
            param = getattr(action.type, "__name__", None)
            if param not in PARAMS or not isinstance(PARAMS[param].constraint, Interval):
                continue
            flag = action.option_strings[0]
            for label, value, inside in _ends(PARAMS[param].constraint):
                cases.append(pytest.param(base(param) + [flag, repr(value)], param, inside,
                                          id=f"{command} {flag} {label}"))
    for mid, cls in REGISTRY.items():
        model = ["--model", "linreg", "--dataset", "synthetic-regression"] if "logreg" not in cls.models else BC
        for key, decl in cls.options.items():
            if not isinstance(decl.constraint, Interval):
                continue
            calib = ["--calibration", "published"] if cls.id == "input-dbdp-if" else []
            for label, value, inside in _ends(decl.constraint):
                argv = ["run", *model, "--mechanism", mid, "-R", "1", *calib, "--option", f"{key}={value!r}"]
                if cls.iterative:
                    argv += ["-T", "5"]
                cases.append(pytest.param(argv, key, inside, id=f"{mid} {key} {label}"))
    return cases


CASES = _cases()


def test_the_cases_cover_every_declared_numeric_setting():
    names = {c.values[1] for c in CASES}
    declared = {p for p in ("epsilon", "delta", "iterations", "repeats", "seed", "c", "noise_scale", "lam",
                            "learning_rate", "batch_size", "sample_rate", "clip_norm", "clients", "skew",
                            "radius", "n", "d", "noise", "trials", "alpha", "canaries")}
    options = {k for c in REGISTRY.values() for k, d in c.options.items() if isinstance(d.constraint, Interval)}
    assert declared | options <= names, (declared | options) - names
    assert len(CASES) > 80


@pytest.mark.parametrize("argv, param, inside", CASES)
def test_a_declared_end_runs_or_is_refused_up_front_and_beyond_it_is_refused(argv, param, inside, capsys,
                                                                            monkeypatch):
    monkeypatch.setenv("DPCORE_WORK_BUDGET", repr(WORK))
    with time_limit(LIMIT, "the budget accepted the run, but it gave no answer"):
        code = main(argv + ["--json"])
    out = capsys.readouterr()
    lines = [ln for ln in out.err.strip().splitlines() if ln and not ln.startswith("[")]
    assert "Traceback" not in out.err
    if not inside:
        assert code == 2 and len(lines) == 1 and f"'{param}'" in lines[0], (code, lines)
        return
    assert code in (0, 2), (code, out.err[-500:])
    if code == 2:
        assert len(lines) == 1 and len(lines[0]) <= 300, lines
        assert f"The '{param}' parameter" not in lines[0], lines  # two declarations disagree
    else:
        assert out.out.strip().startswith(("{", "["))
