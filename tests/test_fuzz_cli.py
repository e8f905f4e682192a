"""A generated fuzz suite for the command line (Hypothesis).

Strategies are built from the declarations: the flags come from the parser (every typed
setting of ``run``, ``audit`` and ``bounds``, whose types come from :data:`dpcore.params.PARAMS`, and every
choice-valued flag with its declared choices), the values are hostile of every kind (``inf``,
``nan``, 1e400, huge integers, unicode digits, very long strings, any text) or a declared value.
The only outcomes allowed: a run that finishes (exit 0 and strict JSON), or exit 2 with one line
of at most 300 characters.  Never exit 1 (an internal error), a traceback or a hang.

Examples come from a fixed seed (the same on every machine and in every run), so a failure
reproduces.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

from hostile import time_limit  # tests/hostile.py
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import dpcore.experiments.run as run_mod
from dpcore.cli import MAX_LINE_CHARS, build_parser, main
from dpcore.params import PARAMS, Interval

#: budgets while fuzzing: an accepted run is one the estimates price at a few seconds
WORK, MEMORY = 3e9, 256 * 2**20
BASES = {
    "run": ["run", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd", "-R", "1", "-T", "3"],
    "audit": ["audit", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd", "-T", "3", "--trials", "20"],
    "bounds": ["bounds", "--dataset", "breast-cancer"],
}

HOSTILE = ["inf", "-inf", "nan", "NaN", "1e400", "-1e400", "1e-400", "1e-300", "5e-324", "0", "-0", "-1", "1e308", "2e308",
           str(2**64), str(-(2**64)), "9" * 400, "１２", "٣", "0x10", "1_000", "", " ", "1,5", "½", "∞",
           "None", "true", "1e", ".", "-", "--", "\x00", "a" * 5000, "1" * 5000]


def _flags():
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    out = []
    for command in BASES:
        for action in sub.choices[command]._actions:
            if not action.option_strings or action.nargs == 0:
                continue
            param = getattr(action.type, "__name__", None)
            values = list(action.choices) if action.choices else []
            if param in PARAMS and isinstance(PARAMS[param].constraint, Interval):
                c = PARAMS[param].constraint
                values += [repr(v) for v in (c.low, c.high, PARAMS[param].default) if v is not None]
            out.append((command, action.option_strings[0], tuple(str(v) for v in values)))
    return out


FLAGS = _flags()


@st.composite
def _argv(draw):
    """A base command and one to three of its flags, each with a hostile or a declared value."""
    command = draw(st.sampled_from(sorted(BASES)))
    mine = [f for f in FLAGS if f[0] == command]
    argv = list(BASES[command])
    for _ in range(draw(st.integers(1, 3))):
        _, flag, declared = draw(st.sampled_from(mine))
        known = st.sampled_from(declared) if declared else st.sampled_from(HOSTILE)
        value = draw(st.one_of(
            st.sampled_from(HOSTILE),
            known, known, known,  # declared values (ends, defaults, choices) as often as the rest
            st.floats(allow_nan=True, allow_infinity=True).map(repr),
            st.integers(-(2**80), 2**80).map(str),
            st.text(max_size=40),
        ))
        argv += [f"{flag}={value}" if value.startswith("-") else flag, *([] if value.startswith("-") else [value])]
    return argv + ["--json"]


def test_the_fuzzer_sees_every_typed_and_choice_flag():
    names = {f[1] for f in FLAGS}
    assert {"--epsilon", "--delta", "--iterations", "--repeats", "--lam", "--lr", "--clip", "--trials", "--alpha",
            "--mechanism", "--dataset", "--model", "--calibration", "--threat", "--canary"} <= names


@seed(20261125)  # the same examples on every machine (derandomize's seed depends on the checkout's path)
@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(argv=_argv())
def test_any_command_line_runs_or_exits_2_with_one_short_line(argv):
    saved = run_mod.WORK_BUDGET, run_mod.MEMORY_BUDGET
    run_mod.WORK_BUDGET, run_mod.MEMORY_BUDGET = WORK, MEMORY
    out, err = io.StringIO(), io.StringIO()
    try:
        with time_limit(60), redirect_stdout(out), redirect_stderr(err):
            code = main(argv)
    finally:
        run_mod.WORK_BUDGET, run_mod.MEMORY_BUDGET = saved
    lines = [ln for ln in err.getvalue().splitlines() if ln and not ln.startswith("[")]  # progress lines
    assert code in (0, 2), (argv, code, err.getvalue()[-400:])
    assert "Traceback" not in err.getvalue()
    if code == 2:
        assert len(lines) == 1 and len(lines[0]) <= 300 and MAX_LINE_CHARS <= 300, (argv, lines)
        assert out.getvalue() == ""
    else:
        json.loads(out.getvalue(), parse_constant=lambda t: (_ for _ in ()).throw(ValueError(t)))


def test_an_unknown_choice_is_one_short_line_that_suggests_and_lists():
    import doctest

    import dpcore.exceptions as exc
    from dpcore.datasets import DATASETS
    from dpcore.mechanisms import REGISTRY

    assert doctest.testmod(exc).failed == 0
    for what, choices in (("mechanism", REGISTRY), ("dataset", DATASETS)):
        for value in ("x" * 5000, "nothing-like-it", "gradient-dpdg", "adlt"):
            text = "dpcore: error: " + exc.unknown_choice(what, value, choices)
            assert len(text) <= 300 and "\n" not in text, text
        listed = exc.unknown_choice(what, "zzz", choices)
        for name in choices:  # every choice can be read off the list, grouped or not
            head, _, tail = name.partition("-")
            assert name in listed or (head in listed and tail in listed), (name, listed)
    assert "did you mean gradient-dpgd" in exc.unknown_choice("mechanism", "gradient-dpdg", REGISTRY)
