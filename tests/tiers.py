"""Which tests the default run leaves to ``-m slow``: one declaration, applied in ``conftest.py`` and
checked in ``test_tiers.py``.

The README's test command is a contributor's and CI's: it must fit a 2-core machine (issue 67: no
default test above 30 s, a cheap twin by default and the full case under ``slow``, no contract dropped).
Two rules, from what each test was measured to take (:data:`DURATIONS_FILE`, written by
``python tests/tiers.py LOG`` from a ``--durations=0`` run's output):

* **a family** (one test function over several parameters): every member above
  :data:`FAMILY_SECONDS` runs under ``slow`` except the family's cheapest, which stays in the default
  run as the family's twin: the same contract on the cheapest case measured;
* **a single test** above :data:`SINGLE_SECONDS` either becomes a family of its own, a cheap twin by
  default and the whole case under ``slow`` (:data:`WHOLE`), or is listed in :data:`FULL_ONLY` with
  the default test that keeps its contract at a smaller size (or in :data:`FIXTURE_BOUND`, why not).

The figures were measured on a loaded machine (about 1.7× the idle ones): 55 s there is about 30 s idle.

A test not in the file (a new one) runs by default until the file is measured again.
"""
from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS_FILE = Path(__file__).with_name("durations.json")
#: a family member measured above this many seconds runs under ``slow`` (its family's cheapest stays)
FAMILY_SECONDS = 5.0
#: a single test measured above this is a family with a cheap twin (:data:`WHOLE`) or in :data:`FULL_ONLY`
SINGLE_SECONDS = 55.0

#: a test's two sizes: ``whole=False`` the cheap twin in the default run, ``whole=True`` under ``slow``
WHOLE = pytest.mark.parametrize("whole", [pytest.param(False, id="twin"),
                                          pytest.param(True, id="whole", marks=pytest.mark.slow)])

#: single tests that run under ``slow`` only → (the default test that keeps the contract, what it keeps)
FULL_ONLY: dict[str, tuple[str, str]] = {
    "tests/test_app.py::test_prepare_for_class_computes_every_lesson_step_so_each_then_opens_from_the_stores": (
        "tests/test_app.py::test_prepare_computes_exactly_what_comparess_first_preset_runs",
        "prepare, in another process, fills the stores a view then reads without training (Compare's first "
        "preset; the whole case: every lesson step)"),
    "tests/test_links.py::test_explores_link_reopens_the_same_state_and_numbers": (
        "tests/test_links.py::test_explores_tuned_link_keeps_its_tuning_caption_and_sampling_rate",
        "Explore's link reopens the same state and numbers (one reported state; the whole case: four "
        "generated ones)"),
    "tests/test_browser.py::test_a_phone_shows_compares_plot_under_its_legend_and_explores_formula": (
        "tests/test_browser.py::test_view_renders_readably_without_errors[compare-phone]",
        "Compare on a phone renders readably, nothing overlapping (the layout check); the whole case also "
        "measures the legend against the plot and Explore's formula"),
    "tests/test_certification.py::test_chaudhuri_certificate_holds_against_the_exact_privacy_loss_and_is_nearly_reached": (
        "tests/test_certification.py::test_the_glm_profile_holds_against_the_exact_privacy_loss_of_a_small_logistic_regression",
        "an objective-perturbation certificate held against the exact privacy loss of a small logistic "
        "regression (the GLM profile's; the whole case: Chaudhuri's, with a 6-start search for its maximum)"),
    "tests/test_app.py::test_explore_opens_input_perturbation_tuned_on_its_released_records": (
        "tests/test_cli.py::test_tuned_input_perturbation_chooses_on_its_released_records_and_says_what_it_chose",
        "input perturbation tuned on its released records chooses there and says what it chose (the command "
        "line's; the whole case: Explore's view of it on Adult)"),
}

#: single tests above :data:`SINGLE_SECONDS` left in the default run: what their figure measured
FIXTURE_BOUND: dict[str, str] = {
    "tests/test_install.py::test_the_installed_app_draws_a_paper_figure_from_the_shipped_results":
        "the module's fixtures (a wheel built and installed into a fresh virtual environment, the installed "
        "app started) are charged to the first test; the install is the contract, with no smaller twin",
}

#: a family whose parameters hold several contracts → the part of a member's id that names its contract
#: (each contract keeps its cheapest member by default); other families are one contract
CONTRACT_OF = {
    # each view renders readably in one mode at least (the view, not the light/dark/phone mode)
    "tests/test_browser.py::test_view_renders_readably_without_errors": lambda ident: ident.rsplit("-", 1)[0],
    # each view at each screen of the default run passes axe-core's rules: each its own contract
    # (test_accessibility.DEFAULT_SIZES; the dark theme is marked slow there)
    "tests/test_accessibility.py::test_no_serious_accessibility_violation_and_every_chart_described":
        lambda ident: ident,
    # the guard (boot), its check (plain: the hazard planted) and the package as it is (lazy): three contracts
    "tests/test_concurrency.py::test_sessions_importing_the_core_at_once_never_get_a_half_made_module":
        lambda ident: ident,
}


def function_of(nodeid: str) -> str:
    """A test's function: its node id without the parameters."""
    return nodeid.split("[", 1)[0]


def measured() -> dict:
    """The measured record: ``{"measured": how, "seconds": {node id: setup + call + teardown}}``."""
    return json.loads(DURATIONS_FILE.read_text())


def slowed(seconds: dict[str, float]) -> dict[str, str]:
    """Node id → why the default run leaves it out, by the two rules, from the measured seconds."""
    families = defaultdict(list)
    for nodeid, s in seconds.items():
        function = function_of(nodeid)
        contract = CONTRACT_OF.get(function, lambda ident: "")(nodeid[len(function) + 1:-1])
        families[function, contract].append((s, nodeid))
    out = {}
    for (function, _), members in families.items():
        if any("[" in n for _, n in members):
            members.sort()
            for s, nodeid in members[1:]:
                if s > FAMILY_SECONDS:
                    out[nodeid] = f"{s:.0f} s measured; its family's twin: {members[0][1]}"
        elif function in FULL_ONLY:
            out[function] = f"{members[0][0]:.0f} s measured; its twin: {FULL_ONLY[function][0]}"
    return out


def from_log(text: str) -> dict[str, float]:
    """A ``--durations=0`` report's seconds per node id (setup, call and teardown added; an id runs to
    the end of its line: parameters may hold spaces)."""
    seconds: dict[str, float] = defaultdict(float)
    for m in re.finditer(r"^([0-9.]+)s (?:call|setup|teardown)\s+(tests/\S.*?)\s*$", text, re.M):
        seconds[m.group(2)] += float(m.group(1))
    return {k: round(v, 2) for k, v in sorted(seconds.items())}


def merged(old: dict[str, float], new: dict[str, float]) -> dict[str, float]:
    """The record after a new run: its figures, and the old ones of tests it did not run (those the
    default run leaves to ``slow`` are measured by a full run only; dropping them would bring them back)."""
    return dict(sorted({**old, **new}.items()))


if __name__ == "__main__":  # python tests/tiers.py LOG "how it was measured" [--replace]
    log, how = sys.argv[1], sys.argv[2]
    fresh = from_log(Path(log).read_text())
    if "--replace" not in sys.argv and DURATIONS_FILE.exists():
        before = measured()
        fresh, how = merged(before["seconds"], fresh), f"{how}; before it: {before['measured']}"
    DURATIONS_FILE.write_text(json.dumps({"measured": how, "seconds": fresh}, indent=0, ensure_ascii=False) + "\n")
