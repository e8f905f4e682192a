"""Tuning: the validation split, the private choice, and what the search costs.

The costs are checked against closed forms derived here (Gaussian DP composition, basic
composition of pure releases, parallel composition over disjoint record sets), never
against the code's own certification of the same plan.
"""

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from dpcore import datasets
from dpcore.exceptions import ParameterError
from dpcore.experiments.tune import (
    YU_2020_ADULT,
    candidates,
    choose,
    epsilon_for_accuracy,
    search_cost,
    search_space,
    tune,
    validation_split,
)
from dpcore.experiments.run import RunSpec
from dpcore.privacy.core import gamma_norm, gaussian, theorem


def gdp_eps(mu, delta):
    """ε of μ-GDP at δ (Dong, Roth & Su 2022, Cor. 2.13), solved here."""
    def d(e):
        return norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2)
    return brentq(lambda e: d(e) - delta, 0.0, 100.0, xtol=1e-13)


def test_gaussian_search_composes_as_one_gdp_mechanism():
    # candidate k: T_k releases of sensitivity Δ with noise σ_k, each run twice (repeats);
    # μ-GDP composes as sqrt(Σ μ_i²) with μ = Δ/σ per release.
    delta, eps_sel = 1e-6, 0.3
    cands = [(50, 2.0, 30.0), (200, 2.0, 70.0), (800, 2.0, 150.0)]
    plans = [gaussian("gradient", d, s, count=T) for T, d, s in cands]
    final = gaussian("gradient", 2.0, 70.0, count=200)
    spent, delta_spent = search_cost(plans, [2, 2, 2], final, eps_sel, delta)
    mu_train = math.sqrt(sum(2 * T * (d / s) ** 2 for T, d, s in cands) + 200 * (2.0 / 70.0) ** 2)
    mu_final = math.sqrt(200) * 2.0 / 70.0
    expected = max(gdp_eps(mu_train, delta), eps_sel + gdp_eps(mu_final, delta))
    assert delta_spent == delta
    assert spent == pytest.approx(expected, rel=1e-6)
    assert spent >= expected * (1 - 1e-12)  # never below the closed form


def test_pure_search_is_basic_composition_and_the_worse_part_counts():
    # K pure ε releases: the training part pays K·ε + ε (final); the validation part ε_sel + ε.
    eps = 0.25
    plans = [gamma_norm("output", 1.0, 1.0 / eps)] * 5
    spent, _ = search_cost(plans, [1] * 5, gamma_norm("output", 1.0, 1.0 / eps), 0.1, 1e-6)
    assert spent == pytest.approx(6 * eps, rel=1e-9)
    # a large selection ε makes the validation part the worse one
    spent, _ = search_cost(plans[:1], [1], gamma_norm("output", 1.0, 1.0 / eps), 3.0, 1e-6)
    assert spent == pytest.approx(3.0 + eps, rel=1e-9)


def test_theorem_deltas_add_to_the_spent_delta():
    plans = [theorem("objective", 0.5, 1e-7)] * 4
    spent, delta_spent = search_cost(plans, [1] * 4, theorem("objective", 0.5, 1e-7), 0.5, 1e-6)
    assert delta_spent == pytest.approx(1e-6 + 5e-7)
    assert spent == pytest.approx(2.5)


def test_choose_is_the_exponential_mechanism():
    # two candidates whose scores differ by 2 at ε = 1: P(better) = e/(1 + e) = 0.7311
    rng = np.random.default_rng(7)
    picks = np.array([choose([0.0, 2.0], 1.0, rng) for _ in range(20000)])
    p = math.e / (1 + math.e)
    sd = math.sqrt(p * (1 - p) / picks.size)
    assert abs(picks.mean() - p) < 5 * sd  # without the factor 1/2 it would be 0.881
    # and a huge ε picks the best, a tiny one is nearly uniform
    assert choose([3.0, 9.0, 1.0], 1e6, rng) == 1
    picks = np.array([choose([0.0, 1.0, 2.0], 1e-9, rng) for _ in range(6000)])
    assert np.all(np.abs(np.bincount(picks, minlength=3) / 6000 - 1 / 3) < 5 * math.sqrt(2 / 9 / 6000))


def test_validation_split_is_data_independent_and_partitions_the_training_rows():
    full = datasets.load("breast-cancer")
    split = validation_split(full, 0.25, seed=3)
    assert split is validation_split(full, 0.25, seed=3)
    assert split.n + split.n_test == full.n
    assert split.n_test == round(0.25 * full.n)
    both = np.vstack([split.X_train, split.X_test])
    rows = {r.tobytes() for r in full.X_train}
    assert {r.tobytes() for r in both} == rows  # a partition (breast-cancer rows may repeat)
    assert len(both) == full.n
    # positions depend on the seed only: relabelled data split at the same positions
    flipped = datasets.Dataset(**{**full.__dict__, "y_train": -full.y_train})
    other = validation_split(flipped, 0.25, seed=3)
    assert np.array_equal(other.X_test, split.X_test) and np.array_equal(other.y_test, -split.y_test)
    assert np.array_equal(split.X_test, validation_split(full, 0.25, seed=3).X_test)
    assert not np.array_equal(split.X_test, validation_split(full, 0.25, seed=4).X_test)


def test_search_space_refuses_what_it_cannot_tune():
    with pytest.raises(ParameterError, match="central mechanisms"):
        search_space("local-duchi")
    with pytest.raises(ParameterError, match="not private"):
        search_space("non-private")
    with pytest.raises(ParameterError, match="MLP"):
        search_space("gradient-dpgd", "mlp")
    with pytest.raises(ParameterError, match="regression"):
        tune("synthetic-regression", mechanisms=["gradient-dpgd"], epsilons=[1.0], model="linreg")
    space = search_space("gradient-dpgd")
    assert len(candidates(RunSpec(dataset="adult", mechanism="gradient-dpgd"), space)) == \
        math.prod(len(v) for v in space.values())


def test_tune_end_to_end_on_small_data():
    grids = {"gradient-dpgd": {"iterations": (20, 100), "learning_rate": (0.5, 2.0)},
             "objective-chaudhuri": {"lam": (1e-3, 1e-2)}}
    res = tune("breast-cancer", mechanisms=list(grids), epsilons=[0.5, 4.0], delta=1e-6, repeats=2, final_repeats=4, grids=grids)
    assert len(res.rows) == 4 and not res.errors
    for row in res.rows:
        cands = [c for c in res.candidates if c["mechanism"] == row["mechanism"] and c["epsilon"] == row["epsilon"]]
        assert len(cands) == row["candidates"] == (4 if row["mechanism"] == "gradient-dpgd" else 2)
        chosen = [c for c in cands if c["chosen"]]
        assert len(chosen) == 1 and row["setting"] == {k: chosen[0][k] for k in row["setting"]}
        assert row["validation_accuracy"] <= row["best_validation_accuracy"]
        assert row["epsilon_certified"] <= row["epsilon"] * (1 + 1e-6)
        # the search costs more than the released run; pure objective runs: basic composition
        assert row["epsilon_spent"] > row["epsilon_certified"]
        if row["mechanism"] == "objective-chaudhuri":
            # 2 candidates × 2 repeats + the final run, against ε_sel + the final run
            assert row["epsilon_spent"] == pytest.approx(5 * row["epsilon"], rel=1e-6)
    at4 = [r for r in res.rows if r["epsilon"] == 4.0]
    assert all(r["test_accuracy"] > 0.9 for r in at4)
    json.dumps(res.to_dict())
    need = epsilon_for_accuracy(res.rows, 0.9)
    assert all(e["epsilon"] in (0.5, 4.0) for e in need)
    assert all(e["epsilon"] is None for e in epsilon_for_accuracy(res.rows, 1.01))


def test_yu_table_is_the_published_adult_row():
    # Yu et al. 2020, Table 2, Adult column (ε = 0.1, δ = 1/n²)
    assert {k: v[1] for k, v in YU_2020_ADULT.items()} == {
        "non-private": 84.8, "objective-chaudhuri": 79.3, "output-bolt-on": 77.4,
        "gradient-dpsgd": 80.4, "gradient-dpgd": 80.9}


def test_compare_can_run_each_mechanism_at_its_shipped_tuning():
    from dpcore.experiments.studies import epsilon_sweep
    from dpcore.experiments.tune import tuned_setting

    base = RunSpec(dataset="adult", delta=1 / 36177 ** 2, repeats=2, iterations=100)
    setting, at = tuned_setting("adult", "logreg", "gradient-dpgd", 0.12)
    assert at == 0.1  # the closest tuned ε on a log scale
    (tuned,) = epsilon_sweep(base, ["gradient-dpgd"], [0.12], tuned=True)
    (plain,) = epsilon_sweep(base, ["gradient-dpgd"], [0.12])
    assert tuned["tuned_at"] == 0.1 and "overrides" not in plain
    assert all(f"{k}={v}" in tuned["overrides"] for k, v in setting.items())
    assert tuned["accuracy_mean"] > plain["accuracy_mean"] + 0.005  # T = 100, η = 1 does not converge
    assert tuned["epsilon_certified"] <= 0.12 * (1 + 1e-6)
    # nothing shipped for this dataset: the toggle changes nothing
    small = replace(base, dataset="breast-cancer", delta=1e-6)
    assert "tuned_at" not in epsilon_sweep(small, ["gradient-dpgd"], [1.0], tuned=True)[0]


def test_a_longer_grid_keeps_every_other_choice():
    grids = {"objective-chaudhuri": {"lam": (1e-3, 1e-2, 3e-2)}, "output-gaussian": {"lam": (1e-4, 1e-2)}}
    short = tune("breast-cancer", mechanisms=["objective-chaudhuri"], epsilons=[1.0], delta=1e-6, final_repeats=2, grids=grids)
    long = tune("breast-cancer", mechanisms=["output-gaussian", "objective-chaudhuri"], epsilons=[0.3, 1.0, 3.0], delta=1e-6,
                final_repeats=2, grids=grids)
    pick = [r for r in long.rows if r["mechanism"] == "objective-chaudhuri" and r["epsilon"] == 1.0]
    assert pick[0]["setting"] == short.rows[0]["setting"]
    assert pick[0]["test_accuracy"] == short.rows[0]["test_accuracy"]


# -- the final run is certified as any setting the choice could pick (issue: the choice reads the data)

def test_the_final_run_costs_the_worst_setting_the_choice_could_pick():
    # DP-GD-like finals: the chosen one has the smaller μ, the worst the larger; Gaussian DP is
    # monotone in μ and composes adaptively, so the closed form takes the largest μ.
    delta, eps_sel = 1e-6, 0.3
    cands = [gaussian("gradient", 2.0, 60.0, count=50), gaussian("gradient", 2.0, 90.0, count=200)]
    chosen, worst = gaussian("gradient", 2.0, 150.0, count=200), gaussian("gradient", 2.0, 40.0, count=50)
    spent_chosen, _ = search_cost(cands, [1, 1], [chosen], eps_sel, delta)
    spent, _ = search_cost(cands, [1, 1], [chosen, worst], eps_sel, delta)
    mu_c = math.sqrt(50 * (2 / 60) ** 2 + 200 * (2 / 90) ** 2)
    mu_worst = math.sqrt(50) * 2 / 40
    expected = max(gdp_eps(math.hypot(mu_c, mu_worst), delta), eps_sel + gdp_eps(mu_worst, delta))
    assert spent == pytest.approx(expected, rel=1e-6) and spent >= expected * (1 - 1e-12)
    assert spent > spent_chosen * 1.05  # the two differ, and the worst counts


def test_pure_and_theorem_finals_take_the_largest_epsilon_and_delta():
    finals = [theorem("objective", 0.5, 1e-7), theorem("objective", 0.7, 0.0), gamma_norm("output", 1.0, 1 / 0.6)]
    spent, delta_spent = search_cost([theorem("objective", 0.5, 1e-7)] * 2, [1, 1], finals, 0.2, 1e-6)
    assert delta_spent == pytest.approx(1e-6 + 2e-7 + 1e-7)  # two candidates' δ and the largest final δ
    assert spent == pytest.approx(2 * 0.5 + 0.7)


def test_finals_whose_profiles_cross_compose_through_a_pair_that_dominates_both():
    # A Gaussian (μ = 1) and randomized response (ε = 1.2): neither profile dominates the other
    # (RR's δ is larger at ε = 0, the Gaussian's beyond 1.2).  Second route: the composition of
    # the candidates' μ_A-GDP with the pair whose profile is their pointwise maximum, integrated
    # in tests/independent.py.
    from dpcore.privacy.core import NoisePlan, any_of, certify, compose, randomized_response
    from independent import gdp_delta, gdp_then_worst_of_epsilon, rr_delta

    delta = 1e-6
    A = gaussian("candidates", 1.0, 3.0, count=10)  # μ_A = √10/3
    g, rr = gaussian("final", 1.0, 1.0), NoisePlan((randomized_response("final", 1.2),))
    assert gdp_delta(1.0, 0.0) < rr_delta(1.2, 0.0) and gdp_delta(1.0, 1.5) > rr_delta(1.2, 1.5)
    ours = certify(compose([A, any_of("final", [g, rr])]), delta)
    truth = gdp_then_worst_of_epsilon(math.sqrt(10) / 3, [lambda e: gdp_delta(1.0, e), lambda e: rr_delta(1.2, e)],
                                      delta)
    assert truth * (1 - 1e-9) <= ours <= truth * 1.02
    each = [certify(compose([A, f]), delta) for f in (g, rr)]
    assert ours >= max(each) * (1 - 1e-9)


def test_sampled_gaussian_finals_certify_at_least_the_worst_of_them():
    # the DP-SGD case: finals with different (q, T) at one target ε; the choice's cost is at
    # least what the worst of them would cost alone, and more than the chosen one's
    from dpcore.privacy.core import sampled_gaussian

    delta = 1e-8
    cands = [sampled_gaussian("sum", 1.0, 4.0, 0.05, 200), sampled_gaussian("sum", 1.0, 2.5, 0.01, 800)]
    finals = [sampled_gaussian("sum", 1.0, 6.0, 0.05, 800), sampled_gaussian("sum", 1.0, 1.2, 0.01, 200)]
    alone = [search_cost(cands, [1, 1], [f], 0.1, delta)[0] for f in finals]
    spent, _ = search_cost(cands, [1, 1], finals, 0.1, delta)
    assert alone[0] != pytest.approx(alone[1], rel=1e-3)
    assert spent >= max(alone) * (1 - 1e-9)
    assert spent <= max(alone) * 1.02


def test_no_two_releases_of_a_search_share_a_random_stream(monkeypatch):
    # Every candidate run and the final run must draw its own noise: the search's cost composes
    # them as independent releases.  Record every generator the runs are given.
    import dpcore.experiments.run as run_mod

    seen = []

    class Recording(run_mod.BatchRNG):
        def __init__(self, seeds, stream=0, key=()):
            super().__init__(seeds, stream, key)
            seen.append([(s, k) for s, k in zip(self.seeds, self.keys)])

    monkeypatch.setattr(run_mod, "BatchRNG", Recording)
    import dpcore.experiments.search as tune_mod  # where search_spent, which tune() calls, finds search_plan

    finals_seen = []
    real_plan = tune_mod.search_plan

    def plan(plans, times, final_plans, eps_sel, delta):
        finals_seen.append(len(final_plans))
        return real_plan(plans, times, final_plans, eps_sel, delta)

    monkeypatch.setattr(tune_mod, "search_plan", plan)
    grids = {"output-laplace": {"lam": (1e-3, 1e-2, 3e-2)},
             "gradient-dpgd": {"iterations": (20,), "learning_rate": (0.5, 2.0)}}
    res = tune("breast-cancer", mechanisms=list(grids), epsilons=[1.0], delta=1e-6, repeats=2, final_repeats=3, grids=grids)
    assert not res.errors and len(res.rows) == 2
    # the final run is certified as any setting the choice could pick, not the one it picked
    assert sorted(finals_seen) == [2, 3]
    runs = [r for batch in seen for r in batch]
    assert len(runs) == 2 * (3 + 2) + 3 * 2  # every candidate's repeats and both final runs
    assert len(set(runs)) == len(runs), "two releases drew from the same generator"
    # and the generators really differ: the first standard normals of every run are distinct
    firsts = {float(np.random.default_rng([s, 0, *k]).standard_normal()) for s, k in runs}
    assert len(firsts) == len(runs)


def test_a_run_declares_before_it_trains_the_plan_it_runs():
    # noise_plan is what a search composes for the settings it did not pick: it must be the plan
    # the run then declares, for every mechanism the search tunes
    from dpcore.experiments.run import noise_plan, run
    from dpcore.experiments.tune import DEFAULT_MECHANISMS

    for mech in sorted(set(DEFAULT_MECHANISMS) | {"gradient-bassily", "gradient-lssgd"}):
        for calibration in ("certified", "published"):
            spec = RunSpec(dataset="breast-cancer", mechanism=mech, epsilon=0.7, delta=1e-6, iterations=30,
                           repeats=1, lam=3e-3, calibration=calibration)
            try:
                res = run(spec)
            except Exception as exc:  # a calibration the mechanism does not have
                assert "calibration" in str(exc)
                continue
            assert noise_plan(spec) == res.plan, (mech, calibration)


def test_compare_says_what_the_search_behind_a_tuned_setting_spent():
    import json as _json
    from dpcore.experiments.run import RunSpec
    from dpcore.experiments.studies import epsilon_sweep
    from dpcore.figures.charts import band_figure
    from dpcore.datasets import data_folder
    # the file itself (a read of the settings holds no spent figure: shipped_tuning(..., spent=True) does)
    shipped = {(r["mechanism"], r["epsilon"]): r
               for r in _json.loads((data_folder() / "tuned" / "adult-logreg.json").read_text())["rows"]}
    rows = epsilon_sweep(RunSpec(dataset="adult", repeats=2), ["output-gaussian"], [0.1, 1.0], tuned=True)
    for r in rows:  # read from the shipped record itself, not through the code under test
        assert r["tuned_search_epsilon"] == shipped[("output-gaussian", r["tuned_at"])]["epsilon_spent"]
        assert r["tuned_search_epsilon"] > r["epsilon"]  # a search costs more than the run it chose
    fig = _json.loads(band_figure(rows, "epsilon", "accuracy_mean", paid="tuned_search_epsilon").to_json())
    hover = " ".join(t for tr in fig["data"] for t in (tr.get("hovertext") or []))
    assert hover.count("by a search that spent ε") == 2
    dashed = [tr for tr in fig["data"] if tr.get("name", "").endswith("search paid")]
    assert len(dashed) == 1 and sorted(dashed[0]["x"]) == sorted(r["tuned_search_epsilon"] for r in rows)


def test_the_shipped_classroom_comparison_is_what_the_code_computes_now():
    """Compare's classroom preset opens from shipped rows; they must be this code's numbers.
    Every output and objective mechanism at two ε, and DP-GD at its tuned ε = 0.1 (T = 200),
    computed afresh, equal their shipped rows (same seeds; a change to a mechanism, the data or
    the tuning fails this: run `python -m dpcore prepare --ship`)."""
    import json
    import math

    from dpcore.experiments.studies import classroom_compare, classroom_file, shipped_classroom_compare
    from dpcore.jsonutil import to_jsonable

    shipped = shipped_classroom_compare()
    assert shipped is not None, "data/results/compare-classroom.json is missing or for another preset"
    by_key = {(r["mechanism"], r["epsilon"]): r for r in shipped[0]}
    cheap = ["output-laplace", "output-gaussian", "output-bolt-on", "objective-chaudhuri", "objective-gaussian"]
    # the machine's default budget, whatever another test of this process left in the environment
    from dpcore.experiments.context import Budget, Context
    ctx = Context(budget=Budget.from_environment({}))
    fresh = classroom_compare(mechanisms=cheap, epsilons=[0.1, 1.0], ctx=ctx) + \
        classroom_compare(mechanisms=["gradient-dpgd"], epsilons=[0.1], ctx=ctx)
    fresh = to_jsonable(fresh)  # as the file holds them (an infinite ε as null)
    for row in fresh:
        old = by_key[(row["mechanism"], row["epsilon"])]
        for k in ("accuracy_mean", "gap_mean", "sigma", "epsilon_certified", "accuracy_nonprivate"):
            a, b = row.get(k), old.get(k)
            assert (a is None and b is None) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15), (row["mechanism"], k)
    assert json.loads(classroom_file().read_text())["record"]["command"] == "python -m dpcore prepare --ship"
