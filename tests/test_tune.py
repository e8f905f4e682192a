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
from dpcore.privacy import gamma_norm, gaussian, theorem


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
        tune("synthetic-regression", ["gradient-dpgd"], [1.0], model="linreg")
    space = search_space("gradient-dpgd")
    assert len(candidates(RunSpec(dataset="adult", mechanism="gradient-dpgd"), space)) == \
        math.prod(len(v) for v in space.values())


def test_tune_end_to_end_on_small_data():
    grids = {"gradient-dpgd": {"iterations": (20, 100), "learning_rate": (0.5, 2.0)},
             "objective-chaudhuri": {"lam": (1e-3, 1e-2)}}
    res = tune("breast-cancer", list(grids), [0.5, 4.0], delta=1e-6, repeats=2, final_repeats=4, grids=grids)
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
    short = tune("breast-cancer", ["objective-chaudhuri"], [1.0], delta=1e-6, final_repeats=2, grids=grids)
    long = tune("breast-cancer", ["output-gaussian", "objective-chaudhuri"], [0.3, 1.0, 3.0], delta=1e-6,
                final_repeats=2, grids=grids)
    pick = [r for r in long.rows if r["mechanism"] == "objective-chaudhuri" and r["epsilon"] == 1.0]
    assert pick[0]["setting"] == short.rows[0]["setting"]
    assert pick[0]["test_accuracy"] == short.rows[0]["test_accuracy"]
