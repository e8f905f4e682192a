"""Issue 68: no result below guessing without its box, in any view (one rule, dpcore.figures.result),
a chart whose points fall to guessing drawn from zero, regressions in their own words (R²), the noise
named as what it is (σ = z·C), and a lesson link that does not hand presenter mode on."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

from dpcore.figures.charts import GUESS_LABEL, band_figure
from dpcore.figures.result import (DIGITS, Guessing, from_zero, noise_words, no_better_groups, no_better_rows, r_squared,
                                   versus_guessing)

ROOT = Path(__file__).resolve().parent.parent

#: views that show a model's accuracy or RMSE yet apply the rule another way, and why
ANOTHER_WAY = {
    "lesson.py": "its six fixed steps draw the guessing line on every accuracy chart (a chart whose points "
                 "fall to it is drawn from zero, band_figure) and the local step's words say where results "
                 "land below guessing; a box would push the projector's chart off its one screen",
}


def test_the_rule_reads_as_the_digits_shown_both_ways():
    """Equal at four digits is no better (the box is due); one unit of the fourth digit above is
    better: a truth passed and a planted collapse caught, for an accuracy and an RMSE."""
    assert DIGITS == 4
    level = versus_guessing({"accuracy_mean": 0.88741, "accuracy_guess": 0.88739})
    assert level.no_better and not level.worse  # 0.8874 beside 0.8874
    above = versus_guessing({"accuracy_mean": 0.8875, "accuracy_guess": 0.8874})
    assert not above.no_better
    collapse = versus_guessing({"accuracy_mean": 0.4501, "accuracy_guess": 0.8874})
    assert collapse.no_better and collapse.worse and "0.8874" in collapse.sentence()
    # an RMSE is no better when it is at least guessing's
    assert versus_guessing({"rmse_mean": 0.2289, "rmse_guess": 0.2288}).worse
    assert not versus_guessing({"rmse_mean": 0.1, "rmse_guess": 0.2288}).no_better
    # a row without a guess of its own takes the one given; without either, no verdict
    assert versus_guessing({"accuracy_mean": 0.5}, guess=0.6).no_better
    assert versus_guessing({"accuracy_mean": 0.5}) is None
    assert versus_guessing({"accuracy_mean": float("nan"), "accuracy_guess": 0.6}) is None
    rows = [{"m": "a", "accuracy_mean": 0.9}, {"m": "b", "accuracy_mean": 0.3}]
    assert [r["m"] for r, _ in no_better_rows(rows, guess=0.6)] == ["b"]


def test_a_regressions_r2_is_against_predicting_the_training_mean():
    """R² from the two RMSEs equals 1 − Σ(y − ŷ)² / Σ(y − ȳ_train)², computed from the arrays."""
    from dpcore.metrics import guessing_rmse

    rng = np.random.default_rng(3)
    y_train, y_test = rng.normal(0.2, 1.0, 200), rng.normal(0.0, 1.0, 80)
    pred = y_test + rng.normal(0.0, 0.5, 80)
    rmse = float(np.sqrt(np.mean((pred - y_test) ** 2)))
    direct = 1.0 - np.sum((y_test - pred) ** 2) / np.sum((y_test - y_train.mean()) ** 2)
    assert r_squared(rmse, guessing_rmse(y_train, y_test)) == pytest.approx(direct, rel=1e-12)
    assert r_squared(0.3, 0.3) == 0.0 and r_squared(0.6, 0.3) < 0


def test_a_chart_whose_points_fall_to_guessing_is_drawn_from_zero():
    """Bank at 64 clients and skew 1000 (issue 68): averaging at 0.45 beside guessing's 0.887 is drawn
    on an axis from 0; a sweep above guessing keeps its fitted axis (a truth passed)."""
    collapsed = [{"mechanism": "distributed-avg", "skew": u, "accuracy_mean": a, "accuracy_std": 0.01}
                 for u, a in ((1, 0.894), (16, 0.890), (1000, 0.4501))]
    fig = band_figure(collapsed, "skew", "accuracy_mean", bounds=(0.0, 1.0), guess=0.8874)
    assert fig.layout.yaxis.range is not None and fig.layout.yaxis.range[0] == 0.0
    assert fig.layout.yaxis.range[1] <= 1.02
    fine = [dict(r, accuracy_mean=a) for r, a in zip(collapsed, (0.95, 0.94, 0.93))]
    assert band_figure(fine, "skew", "accuracy_mean", bounds=(0.0, 1.0), guess=0.8874).layout.yaxis.range is None
    assert from_zero([0.9, 0.5], 0.8874) and not from_zero([0.9, 0.95], 0.8874)
    assert from_zero([0.3], 0.2288, "rmse") and not from_zero([0.1], 0.2288, "rmse")


def _shows_a_result(tree: ast.AST) -> bool:
    """Names a result's field, or draws a shipped figure of results (Paper figures: its fields are
    the figure's, never named by the page)."""
    keys = {"accuracy_mean", "rmse_mean", "test_accuracy", "test_rmse"}
    return any(isinstance(n, ast.Constant) and n.value in keys
               or isinstance(n, ast.Name) and n.id == "show_panels" for n in ast.walk(tree))


def _applies_the_rule(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id in {"guessing_box", "versus_guessing"} for n in ast.walk(tree))


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "pages").glob("*.py")))
def test_every_view_that_shows_a_result_applies_the_one_rule(page):
    """A view that shows a model's accuracy or RMSE calls the one rule (or is listed in
    ANOTHER_WAY with why); a helper that shows none is not asked to."""
    tree = ast.parse((ROOT / "pages" / page).read_text())
    if not _shows_a_result(tree) or page in ("charts.py", "common.py"):
        return
    assert _applies_the_rule(tree) or page in ANOTHER_WAY, \
        f"pages/{page} shows results but never calls guessing_box or versus_guessing"


@pytest.mark.parametrize("page", ["distributed.py", "figures.py"])
def test_check_of_the_check_a_view_without_the_rule_is_found(page):
    """The same reading of a view whose box was removed (planted) fails it: Distributed's, and
    Paper figures', whose results are a shipped figure's (no field named on the page)."""
    source = (ROOT / "pages" / page).read_text()
    planted = re.sub(r"guessing_box\(", "print(", source).replace("guessing_box,", "")
    tree = ast.parse(planted)
    assert _shows_a_result(tree) and not _applies_the_rule(tree)
    assert _applies_the_rule(ast.parse(source))


def test_a_figures_findings_are_told_a_line_per_series_and_panel():
    """Worked by hand: two series, one of them in two panels; the lowest accuracy and the guess
    of each line; the places past ``limit`` counted, not listed."""
    rows = [{"s": "DP-GD", "p": "Adult", "x": x} for x in (0.01, 0.05, 0.1)] + \
           [{"s": "DP-GD", "p": "Bank", "x": 0.01}, {"s": "input", "p": "Adult", "x": None}]
    values = [(0.70, 0.7521), (0.74, 0.7521), (0.75, 0.7521), (0.88, 0.8874), (0.43, 0.7521)]
    found = [(r, Guessing("accuracy", v, g, "")) for r, (v, g) in zip(rows, values)]
    lines = no_better_groups(found, lambda r: f"{r['s']} in {r['p']}",
                             lambda r: "" if r["x"] is None else f"{r['x']:g}", axis="ε", limit=2)
    assert lines == ["DP-GD in Adult at ε = 0.01, 0.05 and 1 more (accuracy down to 0.7000; guessing 0.7521)",
                     "DP-GD in Bank at ε = 0.01 (accuracy 0.8800; guessing 0.8874)",
                     "input in Adult (accuracy 0.4300; guessing 0.7521)"]
    rmse = [({"s": "out", "p": "ε = 1", "x": n}, Guessing("rmse", v, g, "")) for n, v, g in
            ((128, 0.33, 0.2304), (512, 0.31, 0.2254))]
    assert no_better_groups(rmse, lambda r: r["p"], lambda r: f"{r['x']}", axis="n") == \
        ["ε = 1 at n = 128, 512 (RMSE up to 0.3300; guessing 0.2254–0.2304)"]


def _under_the_dashed_line(fig) -> int:
    """A second route to a figure's findings: the points of its drawn lines that sit on or under
    the red dashed guessing line of their own panel, read from the figure's traces (at the digits
    shown), not from the points the page is given."""
    guesses: dict[tuple, dict[float, float]] = {}
    for tr in fig.data:
        if tr.name in GUESS_LABEL.values():
            guesses[(tr.xaxis, tr.yaxis)] = dict(zip(tr.x, tr.y))
    count = 0
    for tr in fig.data:
        line = guesses.get((tr.xaxis, tr.yaxis))
        if tr.name in GUESS_LABEL.values() or line is None or tr.mode != "lines+markers":
            continue
        rmse = "rmse" in (tr.hovertext[0] if tr.hovertext else "")
        for x, y in zip(tr.x, tr.y):
            g = line.get(x, sum(line.values()) / len(line))
            count += (round(y, DIGITS) >= round(g, DIGITS)) if rmse else (round(y, DIGITS) <= round(g, DIGITS))
    return count


@pytest.mark.parametrize("preset, at_least", [("004-fig1", 1), ("003-fig1", 1), ("001-fig3", 0)])
def test_paper_figures_box_finds_every_point_under_its_guessing_line(preset, at_least):
    """The paper figure's points that the box reads (figure_and_points) and the points drawn
    under their panel's dashed line (the traces) are as many: 13 in 004-fig1, 33 in 003-fig1 (an
    RMSE figure), none in 001-fig3 (a gap figure: no box, the truth passed)."""
    from dpcore.experiments.presets import shipped_results

    fig, points = shipped_results(preset).figure_and_points()
    found = no_better_rows(points["rows"])
    assert len(found) == _under_the_dashed_line(fig)
    assert len(found) >= at_least


def test_dpsgd_names_its_noise_as_z_times_c_in_the_record_and_the_command_line(tmp_path):
    """DP-SGD's record carries σ = z·C (two routes: the record's own σ and z × C) and the command
    line's text says it in the same words as Explore (noise_words); its JSON names all three."""
    from clirun import run_cli

    from dpcore.experiments.run import RunSpec, run

    rec = run(RunSpec(dataset="breast-cancer", mechanism="gradient-dpsgd", iterations=5, repeats=1,
                      clip_norm=2.0, sample_rate=0.1)).to_dict()
    assert rec["sigma"] == pytest.approx(rec["noise_multiplier"] * 2.0, rel=1e-12) and rec["clip_norm"] == 2.0
    assert noise_words(rec).startswith(f"σ = z·C = {rec['noise_multiplier']:.4g} × 2 = ")
    code, out, err = run_cli(*["run", "--dataset", "breast-cancer", "--mechanism", "gradient-dpsgd",
                              "--iterations", "5", "--repeats", "1", "--clip", "2", "--sample-rate", "0.1"])
    assert code == 0, err
    assert noise_words(rec) in out
    code, out, err = run_cli(*["run", "--dataset", "breast-cancer", "--mechanism", "gradient-dpsgd",
                              "--iterations", "5", "--repeats", "1", "--clip", "2", "--sample-rate", "0.1",
                              "--json"])
    got = json.loads(out)
    assert code == 0 and {"sigma", "noise_multiplier", "clip_norm"} <= set(got)


def test_a_regression_run_on_the_command_line_says_r2_and_the_mean():
    from clirun import run_cli

    code, out, err = run_cli(*["run", "--dataset", "synthetic-regression", "--model", "linreg", "--mechanism", "gradient-dpgd",
                               "--iterations", "20",
                              "--repeats", "2"])
    assert code == 0, err
    line = next(l for l in out.splitlines() if l.strip().startswith("RMSE"))
    rmse, r2 = float(line.split()[1]), float(line.split("R² of the private model")[1].split()[0])
    nonprivate = float(line.split("R² of the non-private model")[1].split(";")[0])  # beside its own RMSE
    assert nonprivate > r2
    guess = float(line.split("predicting the training mean")[1].strip(" )"))
    assert r2 == pytest.approx(1 - (rmse / guess) ** 2, abs=2e-3)
    assert "majority class" not in out


def test_distributed_at_its_extremes_shows_the_collapse_in_the_box_and_sweeps_the_chosen_skew():
    """Bank, 64 clients, skew 1000, ε = 1 (the lecturer's walk): plain averaging falls below guessing and
    the view says so in the one box; the sweep's button offers the chosen skew beside 1–16."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "distributed.py"), default_timeout=300)
    at.query_params.update({"dist_dataset": "bank", "dist_m": "64", "dist_u": "1000", "dist_epsilon": "1.0",
                            "dist_R": "2"})
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    boxes = [w.value for w in at.warning if "No better than guessing" in w.value]
    assert any("plain averaging with 64 clients at skew u = 1000" in b for b in boxes), boxes
    assert "1000" in at.button(key="dist_run").label
    # the link's out-of-range skew is said once, not twice
    said = [w.value for w in [*at.warning, *at.info, *at.error] if "1000" in w.value and "skew" in w.value.lower()
            and "No better" not in w.value]
    assert len(said) <= 1, said


def test_a_lesson_link_opens_in_the_readers_mode():
    """The lecturer's address keeps presenter mode (?present=1); the link handed to students leaves
    it out (a phone would get projector type), and keeps the step.  Check of the check: the query
    the page itself holds still has it, so the link is what drops it."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "lesson.py"), default_timeout=180)
    at.query_params.update({"present": "1", "lesson_step": "1"})
    at.run()
    assert not at.exception
    [link] = [c.value for c in at.code if "lesson_step" in c.value]
    assert "lesson_step=1" in link and "present" not in link
    assert at.query_params.get("present") in ("1", ["1"])


@pytest.mark.parametrize("preset, box", [
    ("004-fig1", "plain averaging in the Breast Cancer Wisconsin panel at ε = 0.01, 0.05, 0.1, 0.15 and 2 more"),
    ("001-fig3", None)])
def test_paper_figures_shows_the_box_under_a_figure_with_points_below_guessing(preset, box):
    """The view: 004-fig1's collapsed averaging on Breast Cancer in one line of the box; 001-fig3,
    a figure of gaps, no box (the truth passed)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "figures.py"), default_timeout=300)
    at.query_params["fig_preset"] = preset
    at.run()
    assert not at.exception and not at.error
    boxes = [w.value for w in at.warning if "No better than guessing" in w.value]
    if box is None:
        assert boxes == []
    else:
        assert len(boxes) == 1 and box in boxes[0], boxes
