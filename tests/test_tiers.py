"""The default run's size (tests/tiers.py): every contract keeps a default test, and what is measured too
long for the default run is left to ``-m slow`` by the declared rules only."""
import ast
from pathlib import Path

import pytest

import tiers

ROOT = Path(__file__).resolve().parent.parent


def _functions(path: str) -> dict[str, ast.FunctionDef]:
    tree = ast.parse((ROOT / path).read_text())
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def _exists(nodeid: str) -> bool:
    path, _, name = tiers.function_of(nodeid).partition("::")
    return (ROOT / path).exists() and name in _functions(path)


def _whole(nodeid: str) -> bool:
    """The test is now a family of two sizes (its ``whole`` parameter, :data:`tiers.WHOLE`)."""
    path, _, name = tiers.function_of(nodeid).partition("::")
    fn = _functions(path).get(name)
    return fn is not None and any(isinstance(d, ast.Name) and d.id == "WHOLE" for d in fn.decorator_list)


def test_every_single_test_measured_too_long_has_a_twin_or_a_reason():
    seconds = tiers.measured()["seconds"]
    singles = {n: s for n, s in seconds.items() if "[" not in n and s > tiers.SINGLE_SECONDS and _exists(n)}
    assert singles, "the record names the single tests above the bound (a check that can fail)"
    unhandled = [n for n in singles if n not in tiers.FULL_ONLY and n not in tiers.FIXTURE_BOUND and not _whole(n)]
    assert not unhandled, unhandled


def test_every_twin_exists_and_runs_by_default():
    slow = tiers.slowed(tiers.measured()["seconds"])
    for test, (twin, what) in tiers.FULL_ONLY.items():
        assert _exists(test), f"{test}: no such test (a stale entry)"
        assert _exists(twin), f"{test}'s twin {twin}: no such test"
        assert twin not in slow and tiers.function_of(twin) not in slow, f"{twin} is itself left to -m slow"
        assert what
    for test in tiers.FIXTURE_BOUND:
        assert _exists(test), test


def test_every_family_keeps_its_cheapest_member_of_each_contract():
    seconds = tiers.measured()["seconds"]
    slow = tiers.slowed(seconds)
    kept = {}
    for nodeid in seconds:
        if "[" in nodeid and nodeid not in slow:
            kept.setdefault(tiers.function_of(nodeid), []).append(nodeid)
    families = {tiers.function_of(n) for n in seconds if "[" in n}
    assert families <= set(kept), sorted(families - set(kept))
    views = {n.split("[")[1].rsplit("-", 1)[0] for n in kept["tests/test_browser.py::test_view_renders_readably_without_errors"]}
    assert len(views) >= 14  # each view in one mode at least


@pytest.mark.parametrize("planted", ["family", "single"])
def test_check_of_the_check_the_rules_leave_out_only_what_they_say(planted):
    """A made-up record: a family's costly members go and its cheapest stays; a costly single stays in
    the default run unless declared (then the check above names it)."""
    seconds = {"tests/t.py::test_f[a]": 1.0, "tests/t.py::test_f[b]": 50.0, "tests/t.py::test_f[c]": 3.0,
               "tests/t.py::test_g": 500.0}
    slow = tiers.slowed(seconds)
    if planted == "family":
        assert set(slow) == {"tests/t.py::test_f[b]"} and "tests/t.py::test_f[a]" in slow["tests/t.py::test_f[b]"]
    else:
        assert "tests/t.py::test_g" not in slow  # an undeclared single: the first test above fails it
        assert tiers.from_log("12.50s call     tests/t.py::test_g\n0.50s setup    tests/t.py::test_g\n") == \
            {"tests/t.py::test_g": 13.0}
