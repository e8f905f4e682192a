"""Input and local perturbation tuned for free, on their released records only
(dpcore.mechanisms.released; issue 32, item 3)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy.stats import norm

from dpcore import datasets
from dpcore.exceptions import ParameterError
from dpcore.experiments.run import RunSpec, load_problem, run
from dpcore.experiments.tune import tune, tune_released, tuned_setting, with_setting
from dpcore.mechanisms import get_mechanism
from dpcore.mechanisms import released as rel
from dpcore.mechanisms.input import choose_per_release
from dpcore.optim import BatchRNG

DELTA = 1e-6


def _release(mechanism="input-kang", epsilon=8.0, dataset="breast-cancer", model="logreg", repeats=2, **opts):
    """A mechanism run with its released records kept: (problem, spec, output)."""
    spec = RunSpec(dataset=dataset, model=model, mechanism=mechanism, epsilon=epsilon, delta=DELTA,
                   repeats=repeats, seed=3, options=tuple(sorted({"keep_data": True, **opts}.items())))
    problem = load_problem(spec)
    out = get_mechanism(mechanism).run(problem, spec, BatchRNG(range(3, 3 + repeats)))
    return problem, spec, out


def _poisoned(problem):
    """The problem with every raw record replaced by NaN: a choice that reads one is changed."""
    ds = problem.dataset
    nan = {k: np.full_like(getattr(ds, k), np.nan, dtype=float) for k in ("X_train", "y_train", "X_test", "y_test")}
    return dataclasses.replace(problem, dataset=dataclasses.replace(ds, **nan), erm=None)


def _reads_only_released(choose, monkeypatch, trainer="gd"):
    """Asserts that ``choose`` (choose_per_release's signature) gives the mechanism's own choice
    when every raw record is poisoned and loading a dataset is refused."""
    problem, spec, out = _release(tune_on_release=True)
    Xp, yp = out.released_data
    label = get_mechanism("input-kang").label(problem, spec)
    rngs = BatchRNG(range(3, 5))
    monkeypatch.setattr(datasets, "load", lambda *a, **k: pytest.fail("the choice loaded a dataset"))
    with np.errstate(invalid="ignore"):
        theta, infos = choose(_poisoned(problem), Xp, yp, out.sigma, label, rngs, trainer)
    assert np.array_equal(theta, out.theta), "the choice depends on something besides the released records"
    assert [i["setting"] for i in infos] == out.extras["tuned_on_release"]


def test_the_choice_never_reads_a_raw_record(monkeypatch):
    _reads_only_released(choose_per_release, monkeypatch)


def test_check_of_the_check_a_choice_that_reads_a_raw_record_fails_it(monkeypatch):
    def leaky(problem, Xp, yp, sigma, label, rngs, trainer, **kw):
        # the same choice, which also reads the raw records once (without even using what it read)
        theta, infos = choose_per_release(problem, Xp, yp, sigma, label, rngs, trainer, **kw)
        return theta + 0.0 * float(np.mean(problem.X)), infos

    with pytest.raises(AssertionError, match="besides the released records"):
        _reads_only_released(leaky, monkeypatch)


def test_tuning_on_the_release_is_post_processing_same_release_same_epsilon():
    p0, spec0, plain = _release(tune_on_release=False)
    p1, spec1, tuned = _release(tune_on_release=True)
    assert np.array_equal(plain.released_data[0], tuned.released_data[0])  # the very same records
    assert np.array_equal(plain.released_data[1], tuned.released_data[1])
    assert tuned.plan == plain.plan and tuned.sigma == plain.sigma
    assert tuned.certified(DELTA) == plain.certified(DELTA)
    assert not np.array_equal(plain.theta, tuned.theta)  # the choice did change the model
    assert len(tuned.extras["tuned_on_release"]) == 2 and "post-processing" in tuned.extras["tuning_note"]


def test_the_choice_tells_its_progress_release_by_release_without_changing_a_number():
    """Explore's progress bar hears each release's choice (the tuned input perturbation's wait on
    Adult is seconds with no curve to draw); listening changes no number."""
    from dpcore.experiments.context import Context

    heard = []
    spec = RunSpec(dataset="breast-cancer", mechanism="input-kang", epsilon=4.0, repeats=3,
                   options=(("tune_on_release", True),))
    told = run(spec, ctx=Context(progress=lambda done, total, label: heard.append((done, total, label))))
    quiet = run(spec, ctx=Context())
    mine = [(d, t) for d, t, label in heard if "choosing each release" in label]
    assert mine == [(1, 3), (2, 3), (3, 3)]
    assert np.array_equal(told.gap, quiet.gap) and np.array_equal(told.accuracy, quiet.accuracy)
    assert told.extras["tuned_on_release"] == quiet.extras["tuned_on_release"]


def test_with_hardly_any_noise_a_model_is_chosen_and_beats_guessing():
    spec = RunSpec(dataset="breast-cancer", mechanism="input-kang", epsilon=50.0, delta=DELTA, repeats=2, seed=0,
                   options=(("label_epsilon", 40.0), ("sigma", 1e-3), ("tune_on_release", True)))
    res = run(spec)
    assert res.extras["guess_chosen"] == 0
    assert np.all(res.accuracy > res.accuracy_guess + 0.2)  # breast cancer: 0.63 guessing, ≥ 0.9 learned


def test_where_the_released_records_cannot_tell_the_guess_is_kept():
    spec = RunSpec(dataset="breast-cancer", mechanism="input-kang", epsilon=1.0, delta=DELTA, repeats=3, seed=0,
                   options=(("sigma", 1e3), ("tune_on_release", True)))
    res = run(spec)
    assert res.extras["guess_chosen"] == 3
    assert np.allclose(res.accuracy, res.accuracy_guess)
    plain = run(dataclasses.replace(spec, options=(("sigma", 1e3),)))
    assert res.epsilon_certified == plain.epsilon_certified  # the fixed σ's ε, unchanged by the choice


def test_class_moments_invert_randomized_response():
    # labels y (+1 w.p. 0.3), f = y + N(0, 1); released labels flipped w.p. ρ = 0.2
    rng = np.random.default_rng(0)
    m, rho = 200_000, 0.2
    y = np.where(rng.random(m) < 0.3, 1.0, -1.0)
    f = (2.0 * y + rng.standard_normal(m))[:, None]
    yr = np.where(rng.random(m) < rho, -y, y)
    p, plus, minus = rel.class_moments(np.concatenate([f, f**2], axis=1), yr, rho)
    # standard errors of the inverted moments grow by about 1/(1 − 2ρ) ≈ 1.7: 6 sd of the raw ones
    assert p == pytest.approx(0.3, abs=6 * math.sqrt(0.21 / m) / (1 - 2 * rho))
    assert plus[0] == pytest.approx(2.0, abs=6 * 1.7 * math.sqrt(1 / (0.3 * m)) * 2)
    assert minus[0] == pytest.approx(-2.0, abs=6 * 1.7 * math.sqrt(1 / (0.7 * m)) * 2)
    assert plus[1] == pytest.approx(5.0, abs=0.1) and minus[1] == pytest.approx(5.0, abs=0.1)  # 4 + 1


def test_the_accuracy_estimate_sees_through_the_feature_noise():
    # clean margins per class N(±1, 1): accuracy Φ(1) whatever the prior; features x = (margin, 0),
    # released with N(0, σ²) on both coordinates; θ = (1, 0), so τ = σ.  Flipped labels, ρ = 0.1.
    rng = np.random.default_rng(1)
    m, sigma, rho = 400_000, 2.0, 0.1
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    X = np.stack([y + rng.standard_normal(m), np.zeros(m)], axis=1) + sigma * rng.standard_normal((m, 2))
    yr = np.where(rng.random(m) < rho, -y, y)
    est = rel.score("classification", np.array([[1.0, 0.0]]), X, yr,
                    sigma, rho)[0]
    released_accuracy = np.mean(np.sign(X[:, 0]) == y)  # what the noisy records themselves show
    assert released_accuracy < norm.cdf(1.0) - 0.1
    # the estimate takes the variance two standard errors high: slightly below Φ(1), far above the noisy one
    assert norm.cdf(1.0) - 0.03 < est <= norm.cdf(1.0) + 0.005


def test_the_regression_score_removes_the_feature_noise_exactly_in_expectation():
    rng = np.random.default_rng(2)
    m, d, sigma = 50_000, 3, 0.7
    X = rng.standard_normal((m, d)) * 0.3
    y = X @ np.array([0.5, -0.2, 0.1]) + 0.05 * rng.standard_normal(m)
    thetas = np.array([[0.5, -0.2, 0.1], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    clean = np.mean((y[:, None] - X @ thetas.T) ** 2, axis=0)
    noisy = [X + sigma * rng.standard_normal((m, d)) for _ in range(20)]
    draws = np.stack([rel.debiased_errors(thetas, Xn, y, sigma).mean(axis=0) for Xn in noisy])
    se = draws.std(axis=0, ddof=1) / math.sqrt(20)
    assert np.all(np.abs(draws.mean(axis=0) - clean) < 5 * se + 1e-12)
    # check of the check: without the σ²‖θ‖² correction the mean is off by far more
    assert np.abs(draws.mean(axis=0)[2] + sigma**2 * 3 - clean[2]) > 50 * se[2]
    # the score is its cautious end: one-sided 95 %, Bonferroni over the three settings
    errors = rel.debiased_errors(thetas, noisy[0], y, sigma)
    expect = -(errors.mean(axis=0) + norm.ppf(1 - 0.05 / 3) * errors.std(axis=0, ddof=1) / math.sqrt(m))
    assert np.allclose(rel.score("regression", thetas, noisy[0], y, sigma), expect, rtol=1e-12)


def test_fit_grid_follows_plain_gradient_descent():
    from dpcore.models import make_model
    ds = datasets.load("breast-cancer")
    model = make_model("logreg", lam=1e-2)
    out = rel.fit_grid(model, ds.X_train, ds.y_train, [0.5, 2.0], [1e-2, 1e-2], [5])[5]
    theta = np.zeros(ds.d)
    for _ in range(5):  # written out: θ ← θ − η(mean −y x σ(−y θᵀx) + λθ)
        z = ds.X_train @ theta
        theta = theta - 2.0 * ((-ds.y_train / (1 + np.exp(ds.y_train * z))) @ ds.X_train / ds.n + 1e-2 * theta)
    assert np.allclose(out[1], theta, rtol=1e-12, atol=1e-14)
    # the float32 arithmetic the choice uses: the same trajectory to float32's rounding
    single = rel.fit_grid(model, ds.X_train, ds.y_train, [0.5, 2.0], [1e-2, 1e-2], [5], dtype=np.float32)[5]
    assert single.dtype == np.float64 and np.allclose(single[1], theta, rtol=1e-5, atol=1e-6)


def test_tune_released_rows_spend_the_certified_epsilon_and_compare_the_same_releases():
    rows = tune_released("breast-cancer", ["input-kang", "local-gaussian"], [4.0], DELTA, repeats=2)
    assert len(rows) == 2
    for r in rows:
        assert r["epsilon_spent"] == r["epsilon_certified"] <= 4.0 * (1 + 1e-6)
        assert r["accuracy_guess"] == pytest.approx(datasets.load("breast-cancer").guessing)
        assert {"test_accuracy", "untuned_test_accuracy", "accuracy_nonprivate", "guess_chosen"} <= set(r)
    reg = tune_released("synthetic-regression", ["input-kang"], [8.0], DELTA, repeats=2)
    assert reg[0]["test_rmse"] > 0 and "rmse_guess" in reg[0]
    with pytest.raises(ParameterError, match="cannot be tuned on them"):
        tune_released("breast-cancer", ["local-duchi"], [1.0])
    both = tune("breast-cancer", mechanisms=["input-kang", "objective-chaudhuri"], epsilons=[4.0], delta=DELTA, final_repeats=2,
                grids={"objective-chaudhuri": {"lam": (1e-3, 1e-2)}})
    assert [r["mechanism"] for r in both.released_rows] == ["input-kang"]
    assert [r["mechanism"] for r in both.rows] == ["objective-chaudhuri"]


def test_a_shipped_released_tuning_turns_the_option_on_and_keeps_the_other_options():
    found = tuned_setting("adult", "logreg", "input-kang", 1.0)
    assert found is not None and found[0] == {"tune_on_release": True}
    spec = RunSpec(dataset="adult", mechanism="input-kang", options=(("label_epsilon", 0.3),))
    tuned = with_setting(spec, found[0])
    assert dict(tuned.options) == {"label_epsilon": 0.3, "tune_on_release": True}
    assert with_setting(spec, {"iterations": 7}).iterations == 7
    given = RunSpec(dataset="adult", mechanism="input-kang", options=(("tune_on_release", False),))
    assert dict(with_setting(given, found[0]).options) == {"tune_on_release": False}  # what was given wins


def test_the_mlp_is_refused_in_words():
    with pytest.raises(ParameterError, match="linear models"):
        rel.choose_on_release(rel.ReleasedRecords(np.zeros((10, 2)), np.ones(10), 1.0, None),
                              type("M", (), {"convex": False})(), "classification", "gd", np.random.default_rng(0))


def test_the_work_budget_counts_the_choice_on_the_release(monkeypatch):
    from dpcore.exceptions import BudgetError
    from dpcore.experiments.context import Budget
    from dpcore.experiments.run import check_budget, problem_data, work_estimate

    for mech, factor in (("input-kang", 400 * (2 * 2 + 1) / 100),  # 4 (η, λ) trajectories to T = 400, then one
                         ("local-gaussian", 2 * 5 / 1)):  # 5 λ, each solved on the fitting part and on all
        spec = RunSpec(dataset="adult", mechanism=mech, epsilon=1.0, repeats=5)
        tuned = with_setting(spec, {"tune_on_release": True})
        data, model = problem_data(spec)
        m = get_mechanism(mech)
        assert work_estimate(tuned, data, model, m) == pytest.approx(factor * work_estimate(spec, data, model, m))
    dbdp = RunSpec(dataset="adult", mechanism="input-dbdp", epsilon=1.0, repeats=5, options=(("tune_on_release", True),))
    data, model = problem_data(dbdp)
    per_pass = work_estimate(replace_iterations(dbdp), data, model, get_mechanism("input-dbdp"))
    assert work_estimate(dbdp, data, model, get_mechanism("input-dbdp")) == pytest.approx(
        per_pass * 1600 * (2 * 2 + 1) * 256 / data.n)
    # a run count the untuned run may use is refused once the choice multiplies its work
    kang = RunSpec(dataset="adult", mechanism="input-kang", epsilon=1.0)
    untuned_cost = work_estimate(dataclasses.replace(kang, repeats=1), data, model, get_mechanism("input-kang"))
    R = 20
    budget = Budget(work=R * untuned_cost)  # the most the untuned run may use
    check_budget(dataclasses.replace(kang, repeats=R), data, model, get_mechanism("input-kang"), budget=budget)
    with pytest.raises(BudgetError, match="steps"):
        check_budget(with_setting(dataclasses.replace(kang, repeats=R), {"tune_on_release": True}), data, model,
                     get_mechanism("input-kang"), budget=budget)


def replace_iterations(spec):
    """The same spec, untuned, with one step: one pass over the rows."""
    return dataclasses.replace(spec, iterations=1, options=())
