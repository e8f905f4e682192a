"""One non-private reference, and no private point above it beyond the point's own band.

The reference (:func:`dpcore.experiments.baselines.baseline`) is the best exact non-private
model over the tuning's λ grid and the λ's the runs use.  Checked here over every shipped row
a view draws beside it (Compare's first preset, the shipped tuning, its free-tuned releases)
and the views' default runs (Explore, the lesson's noise sweep), with a check of the check.
"""

from __future__ import annotations

import json
import math

import pytest

from dpcore import datasets
from dpcore.experiments.baselines import LAMBDA_GRID, Baseline, baseline, lambdas_searched, row_lambdas
from dpcore.experiments.run import RunSpec, run
from dpcore.experiments.studies import CLASSROOM_COMPARE, compare_base, epsilon_sweep, shipped_classroom_compare
from dpcore.shipped import folder_of


def above(ref: Baseline, rows, mean: str, band: str) -> list[str]:
    """The rows whose private result beats the reference by more than their own band (± 1 sd)."""
    return [f"{r['mechanism']} at ε = {r['epsilon']:g}: {r[mean]:.4f} ± {r.get(band) or 0:.4f} > {ref.value:.4f}"
            for r in rows if r.get(mean) is not None and not math.isnan(r[mean])
            and ref.is_above(r[mean], r.get(band) or 0.0)]


def test_the_reference_is_the_best_exact_model_over_the_grid_and_the_lambdas_in_use():
    ref = baseline(RunSpec(dataset="breast-cancer"), lams=(0.02,))
    assert ref.searched == tuple(sorted({*LAMBDA_GRID, 0.02, 1e-3}))
    exact = {lam: run(RunSpec(dataset="breast-cancer", mechanism="non-private", lam=lam, repeats=1))
             for lam in ref.searched}
    assert ref.value == max(r.accuracy_nonprivate for r in exact.values())
    assert exact[ref.lam].accuracy_nonprivate == ref.value
    ds = datasets.load("breast-cancer")
    assert ref.guess == ds.guessing and ref.metric == "accuracy"
    assert f"{ref.value:.4f} at λ = {ref.lam:g}" in ref.definition()
    # a regression's reference is the lowest RMSE
    reg = baseline(RunSpec(dataset="synthetic-regression", model="linreg"))
    assert reg.metric == "rmse" and reg.is_above(reg.value - 0.01) and not reg.is_above(reg.value + 0.01)


def test_the_mlp_searches_only_the_lambdas_in_use():
    assert lambdas_searched("mlp", (1e-3,)) == (1e-3,)
    assert lambdas_searched("logreg", ()) == LAMBDA_GRID


def test_row_lambdas_reads_a_rows_own_lambda_else_the_forms():
    rows = [{"overrides": "T=800, lam=0.0001"}, {"overrides": ""}, {"lam": 0.03}]
    assert row_lambdas(rows, 1e-3) == (1e-4, 1e-3, 0.03)


def test_no_shipped_compare_row_sits_above_the_reference():
    rows, _ = shipped_classroom_compare()
    c = CLASSROOM_COMPARE
    base = compare_base(c["dataset"], c["model"], delta=c["delta"], iterations=c["iterations"],
                        repeats=c["repeats"], calibration=c["calibration"], lam=c["lam"])
    ok = [r for r in rows if "error" not in r]
    ref = baseline(base, lams=row_lambdas(ok, c["lam"]))
    assert len(ok) >= 70
    assert not above(ref, ok, "accuracy_mean", "accuracy_std")
    # every row's own non-private model is at or below the one drawn
    assert all(r["accuracy_nonprivate"] <= ref.value for r in ok)


@pytest.mark.parametrize("path", sorted(folder_of("tuned").glob("*.json")), ids=lambda p: p.stem)
def test_no_shipped_tuned_row_sits_above_the_reference(path):
    record = json.loads(path.read_text())
    rows = [r for r in record["rows"] if "error" not in r]
    released = [r for r in record.get("released_rows", []) if "error" not in r]
    ref = baseline(RunSpec(dataset=record["dataset"], model=record["model"]),
                   lams=[r["setting"].get("lam") for r in rows])
    metric = "accuracy" if ref.metric == "accuracy" else "rmse"
    assert not above(ref, rows, f"test_{metric}", f"test_{metric}_std")
    assert not above(ref, released, f"test_{metric}", f"test_{metric}_std")
    assert not above(ref, released, f"untuned_test_{metric}", f"untuned_test_{metric}_std")


def test_the_views_default_runs_sit_at_or_below_the_reference():
    explore = RunSpec(dataset="breast-cancer", mechanism="gradient-dpgd", lam=1e-3, repeats=5)  # Explore's default
    rec = run(explore).to_dict()
    ref = baseline(explore)
    assert not above(ref, [{**rec, "epsilon": 1.0}], "accuracy_mean", "accuracy_std")
    lesson = RunSpec(dataset="breast-cancer", iterations=100, repeats=5)  # the lesson's noise sweep
    rows = [r for r in epsilon_sweep(lesson, ["gradient-dpgd"], [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0])
            if "error" not in r]
    assert not above(baseline(lesson, lams=row_lambdas(rows, lesson.lam)), rows, "accuracy_mean", "accuracy_std")


def test_check_of_the_check_a_moved_reference_is_caught():
    """Move the reference to the rows' own non-private model at the form's λ (what Compare drew
    before) and to 0.01 below: the check finds private points above it."""
    rows, _ = shipped_classroom_compare()
    ok = [r for r in rows if "error" not in r]
    c = CLASSROOM_COMPARE
    at_form = baseline(RunSpec(dataset=c["dataset"], model=c["model"], lam=c["lam"]))
    old = Baseline("accuracy", min(r["accuracy_nonprivate"] for r in ok), c["lam"], (c["lam"],),
                   at_form.guess, at_form.guess_class, c["model"])
    assert above(old, ok, "accuracy_mean", "accuracy_std")
    lowered = Baseline("accuracy", at_form.value - 0.01, at_form.lam, at_form.searched, at_form.guess,
                       at_form.guess_class, c["model"])
    assert above(lowered, ok, "accuracy_mean", "accuracy_std")


def test_local_vs_central_draws_the_reference_and_explains_a_model_below_guessing():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "pages" / "local_central.py"),
                           default_timeout=240).run()
    at.button(key="lc_run").click().run()
    assert not at.exception
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    ref = baseline(RunSpec(dataset="breast-cancer"))
    assert ref.value in [s["y0"] for s in spec["layout"]["shapes"]]
    assert any(ref.definition() == c.value for c in at.caption)
    rows = at.session_state["lc_result"]["rows"]
    assert not above(ref, [{**r, "epsilon": 1.0} for r in rows if "error" not in r], "accuracy_mean", "accuracy_std")
    below = [r["mechanism"] for r in rows if (r.get("accuracy_mean") or 1) < ref.guess]
    assert "input-fukuchi" in below  # at the defaults (issue 41, item 4): said, not left unexplained
    # the one box every view shows (pages.charts.guessing_box), naming the result
    assert any("No better than guessing" in w.value and "input-fukuchi" in w.value for w in at.warning)


def _preset_tables():
    from dpcore.shipped import folder_of

    shipped_results_dir = folder_of("results")

    return sorted(shipped_results_dir.glob("0*.csv"))


@pytest.mark.parametrize("path", _preset_tables(), ids=lambda p: p.stem)
def test_no_shipped_paper_figure_point_sits_above_its_panels_reference(path):
    """Paper figures: a linear model's panel draws the one reference (best over the λ grid and the
    panel's λ's); an MLP's draws its own exact run at the panel's λ. No private point (mean of its
    runs) is above its panel's line by more than its own sd."""
    import pandas as pd

    from dpcore.models import make_model

    df = pd.read_csv(path)
    metric = "accuracy" if "accuracy" in df and df["accuracy"].notna().any() else "rmse"
    if metric not in df or df[metric].isna().all():
        pytest.skip("a gap-only figure: no non-private level is drawn")
    df = df[df["error"].isna()] if "error" in df else df
    from dpcore.experiments.presets import PRESETS

    preset = PRESETS[df["preset"].iloc[0]]
    base = preset.base  # its data options (a table's d is the data's width)
    d, noise = base.get("d"), base.get("noise")
    keys = ["dataset", "model", "n"]
    bad = []
    for key, panel in df.groupby([df[k].fillna(-1) for k in keys]):
        dataset, model, n = key
        own = make_model(model).lam  # a run with no λ ran at its model's own
        lams = {float(v) for v in panel["lam"].dropna()} | ({own} if panel["lam"].isna().any() else set())
        own = panel[panel["mechanism"] == "non-private"][metric]
        if preset.x == "n":
            continue  # its own line at λ = 1e-3: the next test, and the figure's note
        if model in ("logreg", "linreg"):
            ref = baseline(RunSpec(dataset=dataset, model=model, n=None if n == -1 else int(n), d=d, noise=noise),
                           lams=lams)
        elif len(own):
            best = own.max() if metric == "accuracy" else own.min()
            ref = Baseline(metric, float(best), min(lams), tuple(sorted(lams)), 0.0, None, model)
        else:
            continue
        private = panel[panel["mechanism"] != "non-private"].groupby("task")[metric].agg(["mean", "std", "first"])
        tasks = panel.drop_duplicates("task").set_index("task")
        rows = [{"mechanism": tasks.loc[t, "mechanism"], "epsilon": tasks.loc[t, "epsilon"], "m": r["mean"],
                 "s": 0.0 if pd.isna(r["std"]) else r["std"]} for t, r in private.iterrows()]
        bad += above(ref, rows, "m", "s")
    assert not bad, bad[:5]


@pytest.mark.parametrize("path", [p for p in _preset_tables() if p.stem.startswith("003-fig")], ids=lambda p: p.stem)
def test_a_sweep_over_n_is_within_what_its_note_says_of_its_own_line(path):
    """The one stated exception: a sweep over n draws each n's exact run at λ = 1e-3 (its note says
    so), and no private point is above it by more than its band + 0.0003 (as the note says)."""
    import pandas as pd

    df = pd.read_csv(path)
    df = df[df["error"].isna()] if "error" in df else df
    metric = "accuracy" if "accuracy" in df and df["accuracy"].notna().any() else "rmse"
    worst = 0.0
    for _, panel in df.groupby("n"):
        own = float(panel[panel["mechanism"] == "non-private"][metric].iloc[0])
        runs = panel[panel["mechanism"] != "non-private"].groupby("task")[metric].agg(["mean", "std"])
        sign = 1 if metric == "accuracy" else -1
        worst = max(worst, float((sign * (runs["mean"] - own) - runs["std"].fillna(0)).max()))
    assert worst <= 0.0003


def test_a_paper_figures_linear_panel_draws_the_one_reference():
    """001-fig2's Adult (LR) panel: its non-private line is the reference every view draws."""
    from dpcore.experiments.presets import shipped_results

    fig, _ = shipped_results("001-fig2").figure_and_points()
    lines = [t for t in fig.data if (t.name or "").startswith("non-private (best λ = ")]
    ref = baseline(RunSpec(dataset="adult", model="logreg"), lams=(1e-3,))
    assert lines and any(set(t.y) == {ref.value} for t in lines), [(t.name, set(t.y)) for t in lines]


def test_the_distributed_skew_sweep_draws_the_reference_and_no_point_above_it():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "pages" / "distributed.py"),
                           default_timeout=240)
    at.query_params.update(dist_T="30", dist_R="2")
    at.run()
    at.button(key="dist_run").click().run()
    assert not at.exception
    spec = json.loads(at.get("plotly_chart")[-2].proto.spec)  # accuracy, then gap
    ref = baseline(RunSpec(dataset="breast-cancer"))
    assert ref.value in [s["y0"] for s in spec["layout"]["shapes"]]
    rows = [r for r in at.session_state["dist_curve"]["rows"] if "error" not in r]
    assert rows and not above(ref, [{**r, "epsilon": r["skew"]} for r in rows], "accuracy_mean", "accuracy_std")
