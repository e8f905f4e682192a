"""Privacy audit (SPEC §5): the statistics, the neighbours, and the three must-haves."""

import doctest
import json
import math
import re

import numpy as np
import pytest
from scipy import stats

from dpcore import datasets as D
from dpcore.privacy import core as privacy
from dpcore.privacy.accounting import gdp_delta
from dpcore.audit import (
    ALPHA_SHARES,
    CANARIES,
    THREATS,
    VERDICTS,
    WHITE_BOX_UNAVAILABLE,
    canaries,
    choose_threshold,
    clopper_pearson_upper,
    core,
    epsilon_lower_bound,
    make_canary,
    measured,
    membership,
    membership_test,
    one_run,
    one_run_audit,
    privacy_region,
    replace_record,
    resolve_canary,
    roc_points,
    run_audit,
    size_ceiling,
    summary,
    threats,
    tradeoff_curve,
    verdict,
    whitebox,
)
from dpcore.audit.bounds import one_run_epsilon, planned_guesses
from dpcore.exceptions import DPCoreError, ParameterError
from dpcore.experiments.run import RunSpec
from dpcore.jsonutil import dumps
from dpcore.mechanisms import REGISTRY

ALPHA = 0.05


def _cfg(mechanism, **kw):
    base = dict(dataset="breast-cancer", model="logreg", mechanism=mechanism, epsilon=1.0, delta=1e-5)
    base.update(kw)
    return RunSpec(**base)


# -- pure statistics ---------------------------------------------------------------------------


@pytest.mark.parametrize("module", [membership, canaries, threats, core, whitebox, one_run, measured],
                         ids=lambda m: m.__name__)
def test_docstring_examples(module):
    """Every module's examples run and hold; a module with none fails (a doctest run of no
    examples passes without checking anything)."""
    result = doctest.testmod(module)  # dpcore.audit.bounds: tests/test_audit_bounds.py
    assert result.attempted > 0, f"{module.__name__} has no docstring examples to run"
    assert result.failed == 0, result


@pytest.mark.parametrize("n", [1, 7, 250, 1000])
@pytest.mark.parametrize("conf", [0.9, 0.975, 0.999])
def test_clopper_pearson_matches_beta_quantiles(n, conf):
    ks = np.unique(np.linspace(0, n, 12).round().astype(int))
    got = np.array([clopper_pearson_upper(int(k), n, conf) for k in ks])
    for k, u in zip(ks, got):
        if k == n:
            assert u == 1.0
            continue
        # Independent formulas: the beta quantile, and the defining binomial tail P(Bin(n, u) ≤ k) = 1 − conf.
        assert u == pytest.approx(stats.beta.ppf(conf, k + 1, n - k), rel=1e-12, abs=1e-15)
        assert stats.binom.cdf(k, n, u) == pytest.approx(1 - conf, rel=1e-6)
        if k == 0:
            assert u == pytest.approx(1 - (1 - conf) ** (1 / n), rel=1e-10)
    # vectorised call gives the same numbers
    np.testing.assert_allclose(clopper_pearson_upper(ks, n, conf), got, rtol=1e-14)


def test_epsilon_lower_bound_formula_and_monotone_in_counts():
    n0, n1, delta = 60, 80, 1e-5
    fp, fn = np.meshgrid(np.arange(n0 + 1), np.arange(n1 + 1), indexing="ij")
    eps = epsilon_lower_bound(fp, n0, fn, n1, delta, ALPHA)
    assert eps.shape == (n0 + 1, n1 + 1) and np.all(eps >= 0)
    # Fewer errors never give a smaller bound.
    assert np.all(np.diff(eps, axis=0) <= 1e-12) and np.all(np.diff(eps, axis=1) <= 1e-12)
    # The formula, written out with scipy's beta quantiles (α split in two by the union bound).
    for a, b in [(0, 0), (3, 40), (30, 2), (59, 79)]:
        fpr_u = stats.beta.ppf(1 - ALPHA / 2, a + 1, n0 - a)
        fnr_u = stats.beta.ppf(1 - ALPHA / 2, b + 1, n1 - b)
        want = max(0.0, *(math.log(num / den) for num, den in
                          [(1 - delta - fnr_u, fpr_u), (1 - delta - fpr_u, fnr_u)] if num > 0))
        assert epsilon_lower_bound(a, n0, b, n1, delta, ALPHA) == pytest.approx(want, rel=1e-12)
    # Symmetric in the two error types; more confidence (smaller α) or a larger δ lowers it.
    assert epsilon_lower_bound(3, 50, 9, 70, delta, ALPHA) == pytest.approx(
        epsilon_lower_bound(9, 70, 3, 50, delta, ALPHA))
    assert epsilon_lower_bound(0, 500, 40, 500, delta, 0.01) < epsilon_lower_bound(0, 500, 40, 500, delta, 0.05)
    assert epsilon_lower_bound(0, 500, 40, 500, 0.1, ALPHA) < epsilon_lower_bound(0, 500, 40, 500, 0.0, ALPHA)
    # Chance-level counts give nothing.
    assert epsilon_lower_bound(250, 500, 250, 500, delta, ALPHA) == 0.0


def test_choose_threshold_separates_and_finds_direction():
    s0, s1 = np.zeros(50), np.ones(50)
    t, direction = choose_threshold(s0, s1, 1e-5, ALPHA)
    assert direction == "above" and 0 <= t < 1
    t, direction = choose_threshold(s1, s0, 1e-5, ALPHA)
    assert direction == "below" and 0 < t <= 1


def _allowed_failures(audits: int, alpha: float, test_error: float = 1e-3) -> int:
    """Each audit of an (ε, δ)-DP mechanism overshoots ε with probability ≤ α, independently
    (disjoint seeds), so the number of overshoots F is stochastically below Binomial(audits, α):
    P(F > k) ≤ P(Bin(audits, α) > k) = binom.sf(k, audits, α).  Allow the smallest k for which
    this is ≤ test_error; for 20 audits at α = 0.05: P(F ≥ 5) = 2.6e-3, P(F ≥ 6) = 3.3e-4, so k = 5.
    """
    k = 0
    while stats.binom.sf(k, audits, alpha) > test_error:
        k += 1
    return k


@pytest.mark.parametrize("name", ["randomized-response", "gaussian"])
def test_membership_test_is_valid_on_known_tight_pairs(name):
    # Score pairs whose exact privacy curve is known and tight, so the bound can come close:
    # randomized response with log-odds ε is exactly (ε, 0)-DP; N(0, 1) vs N(μ, 1) is μ-GDP,
    # which is (1, δ)-DP for δ = gdp_delta(μ, 1).  P(ε_LB > ε) ≤ α per repetition.
    rng = np.random.default_rng(12345)
    reps, n = (200, 1000) if name == "randomized-response" else (100, 1000)
    if name == "randomized-response":
        eps, delta = 2.0, 0.0
        p1 = math.exp(eps) / (1 + math.exp(eps))
        draw = lambda: ((rng.random(n) < 1 - p1) * 1.0, (rng.random(n) < p1) * 1.0)  # noqa: E731
    else:
        eps, mu = 1.0, 1.0
        delta = gdp_delta(mu, eps)
        draw = lambda: (rng.standard_normal(n), mu + rng.standard_normal(n))  # noqa: E731
    bounds = np.array([membership_test(*draw(), delta, ALPHA).epsilon_lower_bound for _ in range(reps)])
    assert np.sum(bounds > eps) <= _allowed_failures(reps, ALPHA)
    assert np.mean(bounds) > 0.3 * eps  # and it has power


@pytest.mark.parametrize("lb, target, certified, private, want, refuted", [
    (4.0, math.inf, math.inf, False, "no guarantee claimed", ()),
    (1.2, 1.0, 2.4, True, "claim not met", ("target",)),  # published formula under-calibrated
    (0.7, 1.0, 0.5, True, "claim not met", ("certified",)),
    (0.6, 1.0, 1.0, True, "not refuted", ()),
    (0.2, 1.0, 1.0, True, "not refuted", ()),
    (0.0, 1.0, math.inf, True, "not refuted", ()),
    (1.5, 1.0, math.inf, True, "claim not met", ("target",)),
])
def test_verdict(lb, target, certified, private, want, refuted):
    assert verdict(lb, target, certified, private) == (want, refuted)
    assert want in VERDICTS


# -- neighbouring datasets ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", CANARIES)
def test_canaries_are_replace_one_neighbours(kind):
    ds = D.load("breast-cancer")
    can = make_canary(ds, kind, seed=3)
    again = make_canary(ds, kind, seed=3)
    assert np.array_equal(can.x, again.x) and (can.y, can.index) == (again.y, again.index)
    assert np.linalg.norm(can.x) <= 1 + 1e-12 and can.y in (-1.0, 1.0)
    prime = replace_record(ds, can.index, can.x, can.y)
    assert prime.n == ds.n and ds.X_train.flags.writeable is False
    changed = np.flatnonzero(np.any(prime.X_train != ds.X_train, axis=1) | (prime.y_train != ds.y_train))
    assert changed.tolist() == [can.index]
    if kind == "mislabeled":
        assert np.array_equal(can.x, ds.X_train[can.index]) and can.y == -ds.y_train[can.index]
    else:
        assert np.linalg.norm(can.x) == pytest.approx(1.0)
        assert ds.y_train[can.index] == can.y == 1.0  # the replaced record carries the canary's label
    if kind == "lowest-variance":
        # No other unit direction has a smaller mean squared projection of the training rows.
        msq = lambda v: np.mean((ds.X_train @ v) ** 2)  # noqa: E731
        rng = np.random.default_rng(0)
        others = rng.standard_normal((2000, ds.d))
        others /= np.linalg.norm(others, axis=1, keepdims=True)
        assert msq(can.x) <= min(msq(v) for v in others) + 1e-15


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, message", [
    (dict(trials=1), "'trials' parameter of audit"),
    (dict(trials=10.5), "'trials' parameter of audit"),
    (dict(trials=10, alpha=0.0), "'alpha' parameter of audit"),
    (dict(trials=10, alpha=1.0), "'alpha' parameter of audit"),
    (dict(trials=10, alpha=-0.1), "'alpha' parameter of audit"),
    (dict(trials=10, canary="golden"), "'canary' parameter of audit must be one of"),
    (dict(trials=10, score="accuracy"), "'score' parameter of audit"),
    (dict(trials=10, max_rows=1), "'max_rows' parameter of audit"),
    (dict(trials=10, canary_label=0.5), r"canary label must be -1 or \+1"),
])
def test_bad_input_raises_dpcore_error(kwargs, message):
    with pytest.raises(DPCoreError, match=message):
        run_audit(_cfg("non-private"), **kwargs)


def test_bad_input_unknown_mechanism_and_statistics():
    with pytest.raises(DPCoreError, match="unknown mechanism"):
        run_audit(_cfg("magic"), trials=10)
    with pytest.raises(ParameterError):
        clopper_pearson_upper(5, 4, 0.95)
    with pytest.raises(ParameterError):
        epsilon_lower_bound(0, 10, 0, 10, 1e-5, 1.5)


# -- the must-haves ----------------------------------------------------------------------------


@pytest.mark.parametrize("score", ["margin", "loss"])
def test_non_private_baseline_gets_a_large_lower_bound(score):
    r = run_audit(_cfg("non-private"), trials=500, score=score)
    assert r.epsilon_lower_bound >= 2.0
    assert r.verdict == "no guarantee claimed" and math.isinf(r.epsilon_certified)
    assert r.scores_without.shape == r.scores_with.shape == (500,)
    rec = json.loads(dumps(r.to_dict()))
    assert rec["epsilon_target"] is None and rec["epsilon_certified"] is None
    assert rec["epsilon_lower_bound"] >= 2 and rec["verdict"] == "no guarantee claimed"
    assert len(rec["scores"]["with_canary"]) == 500


@pytest.mark.parametrize("mechanism", ["output-gaussian", "gradient-dpgd"])
def test_calibrated_mechanism_is_not_flagged_beyond_alpha(mechanism):
    audits = 20
    allowed = _allowed_failures(audits, ALPHA)
    assert allowed == 5
    over, flagged = 0, 0
    for seed in range(audits):
        canary = CANARIES[seed % len(CANARIES)]
        r = run_audit(_cfg(mechanism, iterations=10, seed=seed), trials=200, alpha=ALPHA, canary=canary)
        assert r.epsilon_certified == pytest.approx(1.0, rel=1e-6)
        over += r.epsilon_lower_bound > r.epsilon_certified
        flagged += r.verdict == "claim not met"
    assert over <= allowed and flagged <= allowed


def test_under_calibrated_published_run_is_flagged():
    r = run_audit(_cfg("gradient-dpgd", calibration="published", c=1e-4, iterations=20), trials=200)
    assert r.verdict == "claim not met"
    assert r.epsilon_lower_bound > r.epsilon_target == 1.0
    # The published formula's claim fails; the proof on the σ that ran still holds.
    assert r.refuted == ("target",) and r.epsilon_certified > r.epsilon_lower_bound


# -- mechanics ---------------------------------------------------------------------------------


def test_chunking_and_progress_do_not_change_the_result():
    calls = []
    cfg = _cfg("gradient-dpgd", iterations=5, seed=7)
    a = run_audit(cfg, trials=30, chunk_size=7, progress=lambda done, total: calls.append((done, total)))
    b = run_audit(cfg, trials=30)
    np.testing.assert_allclose(a.scores_without, b.scores_without, rtol=1e-10)
    np.testing.assert_allclose(a.scores_with, b.scores_with, rtol=1e-10)
    assert calls[0] == (0, 60) and calls[-1] == (60, 60)
    assert all(d1 <= d2 for (d1, _), (d2, _) in zip(calls, calls[1:])) and len(calls) == 1 + 2 * 5
    # The two sides ran on different noise.
    assert not np.allclose(a.scores_without, a.scores_with)


def test_large_dataset_is_subsampled_and_says_so():
    cfg = RunSpec(dataset="synthetic-classification", model="logreg", mechanism="output-laplace",
                  n=3000, d=5, seed=1)
    r = run_audit(cfg, trials=20, max_rows=400)
    assert r.n_train == 400 and r.note and "subsample of 400 of the 3000" in r.note
    assert r.delta == 0.0  # an (ε, 0) mechanism is audited against δ = 0
    assert run_audit(cfg, trials=4, max_rows=None).n_train == 3000


def test_audit_has_power_yet_stays_below_a_large_certified_epsilon():
    # At ε = 16 the pure-DP output perturbation is weak enough for 1000 runs a side to see the
    # canary (ε_LB > 0), and the bound still respects the certified ε.
    r = run_audit(_cfg("output-laplace", epsilon=16.0), trials=1000)
    assert 0 < r.epsilon_lower_bound <= r.epsilon_certified == pytest.approx(16.0)
    assert r.verdict == "not refuted" and r.share_of_claim == pytest.approx(r.epsilon_lower_bound / 16.0)


#: every (mechanism, threat) an audit refuses, with a fragment of the reason it gives; every other
#: registered mechanism is audited under both threat models
REFUSED = {
    ("input-dbdp-if", "white-box"): "no white-box audit for input-dbdp-if: it has no guarantee to test",
    ("input-fukuchi", "white-box"): "no white-box audit for input-fukuchi: it simulates the database's",
}


def test_the_refusals_are_the_white_box_unavailable_ones():
    assert {m for m, _ in REFUSED} <= set(REGISTRY) and {t for _, t in REFUSED} <= set(THREATS)
    assert {m for m, t in REFUSED if t == "white-box"} == set(WHITE_BOX_UNAVAILABLE)


@pytest.mark.parametrize("threat", THREATS)
@pytest.mark.parametrize("mechanism", sorted(REGISTRY))
def test_every_registered_mechanism_can_be_audited(mechanism, threat):
    cfg = _cfg(mechanism, iterations=5, calibration=REGISTRY[mechanism].calibrations[0])
    if (mechanism, threat) in REFUSED:  # refused, with its reason
        with pytest.raises(DPCoreError, match=re.escape(REFUSED[mechanism, threat])):
            run_audit(cfg, trials=6, threat=threat)
        return
    r = run_audit(cfg, trials=6, threat=threat)  # anything else runs: a refusal fails here
    assert r.verdict in VERDICTS and r.epsilon_lower_bound >= 0 and r.threat == threat
    assert np.all(np.isfinite(r.scores_without) | np.isneginf(r.scores_without))
    json.loads(dumps(r.to_dict()))


@pytest.mark.parametrize("dataset, model, mechanism, score", [
    ("synthetic-regression", "linreg", "output-gaussian", "loss"),
    ("synthetic-regression", "linreg", "non-private", "margin"),
    ("synthetic-classification", "mlp", "gradient-dpgd", "margin"),
])
def test_other_models(dataset, model, mechanism, score):
    cfg = RunSpec(dataset=dataset, model=model, mechanism=mechanism, iterations=5, n=120, d=3,
                  lam=1e-3)
    r = run_audit(cfg, trials=10, score=score, canary_label=1.0)
    assert r.verdict in VERDICTS and r.scores_with.shape == (10,)


# -- white-box audits, the Gaussian-DP fit and the privacy region ------------------------------



def test_tradeoff_curve_of_a_gaussian_profile_is_the_gaussian_curve():
    """The privacy profile of μ-GDP, read at many δ, bounds the trade-off from below by the
    closed form Φ(Φ⁻¹(1 − α) − μ) and gets close to it."""
    from scipy.stats import norm

    mu = 1.0
    plan = privacy.gaussian("g", 1.0, 1.0 / mu)
    profile = [(privacy.certify(plan, d), d) for d in np.geomspace(1e-12, 0.6, 400)]
    fpr = np.linspace(0.001, 0.999, 200)
    exact = norm.cdf(norm.isf(fpr) - mu)
    ours = tradeoff_curve(profile, fpr)
    assert np.all(ours <= exact + 1e-9)  # never excludes what a real test achieves
    assert np.max(exact - ours) < 0.02
    fp, tp = roc_points([0.0, 1.0], [0.5, 2.0])
    assert fp[0] == tp[0] == 1.0 and fp[-1] == tp[-1] == 0.0


def test_white_box_audit_of_dp_gd_measures_the_mechanism_and_names_the_noise_check():
    """Certified ε = 2: the default white-box audit of DP-GD trains a wide pair of real records through
    the mechanism, measures its shift at every state, and lands within 0.93× of the certificate (1,000
    runs a side: the noise along the shift is bounded by χ² over the 2,000 runs, which costs about 5 % of
    ε and keeps the bound sound for noise stronger along the shift or correlated across steps); the
    declared-shift figure beside it is the noise check, labelled and never the audited ε,
    each estimator at its declared share of α so that the verdict holds at 1 − α.

    Seed 1: an exact bound at a mechanism exactly at its claim exceeds the claim with probability α by
    design (seed 0's noise is 2.4 standard deviations low in its sum of squares)."""
    r = run_audit(_cfg("gradient-dpgd", epsilon=2.0, seed=1), trials=1000, threat="white-box")
    assert r.threat == "white-box" and r.epsilon_certified == pytest.approx(2.0, rel=1e-6)
    assert r.canary == "wide-pair" and "the mechanism's own code" in r.canary_description
    assert 1.86 <= r.epsilon_lower_bound <= 2.0 and r.verdict == "not refuted" and r.refuted == ()
    names = [(e["name"], e["headline"]) for e in r.estimates]
    assert names == [("direct", True), ("measured", True), ("noise-check", False)]
    assert [e["alpha"] for e in r.estimates] == pytest.approx([0.1 * ALPHA, 0.6 * ALPHA, 0.3 * ALPHA])
    assert all(sum(split.values()) == pytest.approx(1.0) and "direct" in split
               for split in ALPHA_SHARES.values())
    assert r.epsilon_lower_bound == max(e["epsilon"] for e in r.estimates if e["headline"])
    assert r.noise_check["line"].startswith("noise check: the noise that ran certifies at least")
    assert 1.96 <= r.noise_check["epsilon"] <= 2.0 and not r.noise_check["exceeds"]
    assert r.noise["gaussian"] and r.noise["independent"] and r.findings == ()
    assert not r.at_size_ceiling and "Not refuted (" in summary(r.to_dict(scores=False))
    rec = json.loads(dumps(r.to_dict(scores=False)))
    region = rec["region"]
    assert len(region["fpr"]) == len(region["tpr_max_certified"]) == len(region["tpr_max_target"])
    assert all(a <= b + 1e-12 for a, b in zip(region["fpr"], region["tpr_max_certified"]))
    assert rec["roc"]["fpr"][0] == 1.0 and rec["confidence"] == 0.95


def test_the_plain_white_box_audit_reports_its_declared_shift_figure_as_a_noise_check():
    """measure=False: the attack adds the declared sensitivity to the noise it read; the χ² bound on the
    noise scale is the noise check (labelled, at 0.3α), the audited ε the direct bound, the pooled error
    and the effect size at their shares."""
    r = run_audit(_cfg("gradient-dpgd", epsilon=2.0, seed=1), trials=300, threat="white-box", measure=False)
    names = [(e["name"], e["headline"]) for e in r.estimates]
    assert names == [("direct", True), ("pooled-error", True), ("effect-size", True), ("gaussian-scale", False)]
    assert [e["alpha"] for e in r.estimates] == pytest.approx([0.1 * ALPHA, 0.1 * ALPHA, 0.5 * ALPHA, 0.3 * ALPHA])
    assert r.noise_check["name"] == "gaussian-scale" and "noise check" in r.estimates[-1]["assumption"]
    assert r.epsilon_lower_bound == max(e["epsilon"] for e in r.estimates[:3]) <= 2.0
    assert r.epsilon_attack_ceiling == pytest.approx(2.0, rel=1e-6)  # the attack sees every release


def test_white_box_never_exceeds_the_certified_epsilon():
    for mech in ("output-gaussian", "output-bolt-on", "gradient-dpgd", "input-kang", "local-gaussian",
                 "distributed-wddp", "objective-gaussian", "output-laplace", "local-duchi"):
        r = run_audit(_cfg(mech, epsilon=1.0, iterations=10, seed=1), trials=400, threat="white-box")
        assert r.epsilon_lower_bound <= r.epsilon_certified, mech
        assert "certified" not in r.refuted


# Mechanisms whose noise, scaled by 0.25 under the original claim, a 1,000-run white-box audit
# cannot catch, and why (the closing note lists them too).
NOT_CAUGHT = {
    "objective-chaudhuri": "ℓ2-Laplace noise in d dimensions reaches its pure ε 2/s only along the shift: "
                           "at a quarter of the noise on Breast Cancer (2/s = 3.16), the bound is 0.92",
    "local-duchi": "the ℓ2-ball mechanism has no continuous noise scale",
}


#: caught by the first audit only: the second (at α₂ = 0.02) does not confirm it, so the view says "refuted
#: once, not confirmed" — the noise check, which reads 4× the target here, is a labelled figure and drives no verdict
ONCE_ONLY = {
    "gradient-lssgd": "the plain white-box attack on smoothed releases (its step is not θ − η·release, so it is "
                      "not measured) shows ε ≥ 1.24 at a quarter of the noise, T = 100, 1,000 runs a side",
}


def _mutation_cases():
    for mech, cls in REGISTRY.items():
        if not cls.private or mech in WHITE_BOX_UNAVAILABLE or mech in NOT_CAUGHT:
            continue
        yield mech


@pytest.mark.parametrize("mechanism", list(_mutation_cases()))
def test_white_box_audit_catches_a_quarter_of_the_noise(mechanism):
    cls = REGISTRY[mechanism]
    cal = "certified" if "certified" in cls.calibrations else cls.calibrations[0]
    trials = 2000 if cls.family in ("input", "local") else 1000
    # seed 1: seed 0's noise (1,000 runs a side, T = 100 on Breast Cancer) is an α-tail event of
    # the exact χ² scale bound, which then exceeds the certificate by design (see the DP-GD test)
    cfg = _cfg(mechanism, epsilon=1.0, calibration=cal, noise_scale=0.25, seed=1,
               iterations=5 if cls.family in ("input", "local") else 100)
    r = run_audit(cfg, trials=trials, threat="white-box")
    if mechanism in ONCE_ONLY:  # the plain attack's power: refuted by the first audit, not by the second
        assert "target" in r.refuted + r.refuted_once, (r.epsilon_lower_bound, ONCE_ONLY[mechanism])
        return
    assert r.verdict == "claim not met" and "target" in r.refuted, (r.epsilon_lower_bound_direct,
                                                                     r.epsilon_lower_bound_gdp)
    assert r.epsilon_lower_bound <= r.epsilon_certified  # the certification read the noise that ran


def test_white_box_refuses_what_it_cannot_audit_and_an_infinite_region_is_empty():
    with pytest.raises(ParameterError, match="no white-box audit for input-fukuchi"):
        run_audit(_cfg("input-fukuchi"), trials=10, threat="white-box")
    with pytest.raises(DPCoreError, match="'threat' parameter of audit"):
        run_audit(_cfg("gradient-dpgd"), trials=10, threat="grey-box")
    region = privacy_region(privacy.void("raw"), 1.0, 1e-5)
    assert "empty" in region["note"] and set(region["tpr_max_certified"]) == {1.0}


def test_run_seeds_of_audits_never_overlap_whatever_their_sizes():
    seen = {}
    for seed, trials in ((0, 1000), (1, 500), (2, 6000), (3, 2)):
        for side in (0, 1):
            for s in core._run_seeds(seed, side, trials).tolist():
                assert seen.setdefault(s, (seed, side)) == (seed, side)
    # a larger audit with the same seed extends the smaller one
    assert core._run_seeds(4, 1, 500).tolist() == core._run_seeds(4, 1, 1000).tolist()[:500]


def test_the_size_ceiling_is_a_perfect_tests_direct_bound_and_is_reported():
    assert size_ceiling(1000, 1e-5, ALPHA) == epsilon_lower_bound(0, 500, 0, 500, 1e-5, ALPHA)
    r = run_audit(_cfg("non-private"), trials=100)
    assert r.at_size_ceiling and r.epsilon_lower_bound == pytest.approx(r.size_ceiling)
    rec = r.to_dict(scores=False)
    assert "ceiling of an audit of 100 runs a side" in summary(rec)
    # a refuted certificate is named, and called what it is
    rec.update(verdict="claim not met", refuted=["target", "certified"], epsilon_target=1.0,
               epsilon_certified=2.0, at_size_ceiling=False, epsilon_lower_bound=3.0)
    line = summary(rec)
    assert line.startswith("Refuted: the target ε = 1 and the certified ε = 2, by two independent audits.")
    rec.update(verdict="refuted once, not confirmed", refuted=[], refuted_once=["certified"])
    assert summary(rec).startswith("Refuted once, not confirmed: the audit shows ε ≥ 3, above the certified ε = 2.")


def test_the_orthogonal_pair_starts_gradient_training_where_both_canaries_are_misclassified():
    ds = D.load("breast-cancer")
    can = make_canary(ds, "orthogonal-pair", seed=3)
    u, v = can.anti_x, can.x  # D holds u, D' holds v
    assert abs(u @ v) < 1e-12 and np.linalg.norm(u) == pytest.approx(1) == np.linalg.norm(v)
    lowest = make_canary(ds, "lowest-variance", seed=3).x
    assert np.allclose(u, lowest)  # u is the lowest-variance direction, v the next one
    msq = lambda w: np.mean((ds.X_train @ w) ** 2)  # noqa: E731
    assert msq(lowest) <= msq(v) <= msq(ds.X_train[0] / np.linalg.norm(ds.X_train[0]))
    # "auto" picks it for noisy-gradient mechanisms only
    assert resolve_canary("auto", REGISTRY["gradient-dpgd"]) == "orthogonal-pair"
    assert resolve_canary("auto", REGISTRY["output-gaussian"]) == "opposite-pair"
    with pytest.raises(ParameterError, match="concrete canary"):
        make_canary(ds, "auto")
    # the start is used by the run: with no noise at all the released θ keeps u and v misclassified
    r = run_audit(_cfg("gradient-dpgd", epsilon=1.0, iterations=20, noise_scale=1e-9), trials=4)
    assert r.canary == "orthogonal-pair" and "starts at θ₀ = −10·y(u + v)" in r.canary_description
    assert np.all(r.scores_with > r.scores_without)  # D' pushed θ towards v, D towards u


def test_the_orthogonal_pair_is_the_stronger_black_box_canary_for_dp_gd():
    """Published DP-GD at c = 0.05 (certified ≈ 14): the orthogonal pair with its start sees the
    record where the opposite pair, capped by σ(a) + σ(−a) = 1, sees about half as much."""
    cfg = _cfg("gradient-dpgd", calibration="published", c=0.05, iterations=100)
    ortho = run_audit(cfg, trials=500, canary="orthogonal-pair")
    opposite = run_audit(cfg, trials=500, canary="opposite-pair")
    assert ortho.epsilon_lower_bound > opposite.epsilon_lower_bound
    assert ortho.epsilon_gaussian_assumption > 1.3 * opposite.epsilon_gaussian_assumption
    assert ortho.epsilon_lower_bound <= ortho.epsilon_certified


# -- the end-to-end white-box check and its mutations ------------------------------------------


def _e2e(mechanism, trials=300, **kw):
    cfg = _cfg(mechanism, epsilon=2.0, clip_norm=0.2, iterations=20, **kw)  # 0.2 < ½: the pair is clipped
    return run_audit(cfg, trials=trials, threat="white-box", end_to_end=True)


def _only_the_measured_audit_catches(mechanism="gradient-dpgd"):
    """The plain white-box audit (measure=False) reads the noise against the *declared* sensitivity, so
    it misses the mutation in place; the measured audit refutes the certificate."""
    plain = run_audit(_cfg(mechanism, epsilon=2.0, clip_norm=0.2, iterations=20), trials=300, threat="white-box",
                  measure=False)
    assert "certified" not in plain.refuted
    r = _e2e(mechanism)
    assert r.verdict == "claim not met" and "certified" in r.refuted
    return r


@pytest.mark.parametrize("mechanism", ["gradient-dpgd", "gradient-dpsgd"])
def test_the_measured_audit_measures_exactly_the_declared_worst_case(mechanism):
    """The real mechanism on the real opposite pair (clip 0.2: both gradients clipped) at every state,
    common random numbers: the releases differ by the clipped contributions, 2C (DP-SGD's sum) or 2C/n
    (DP-GD's mean), which the plan declares; nothing is found and nothing exceeds the certified ε.
    ``end_to_end=True`` is the same audit (the white-box default)."""
    r = _e2e(mechanism)
    sc = r.shift_check
    assert sc["findings"] == [] and sc["runs"] == 2 * 300 * 20 and r.findings == () and sc["reached"]
    n = r.n_train
    assert sc["measured"] == pytest.approx(0.4 / (n if mechanism == "gradient-dpgd" else 1), rel=1e-9)
    assert r.verdict == "not refuted" and r.epsilon_lower_bound <= r.epsilon_certified
    assert r.epsilon_lower_bound >= 0.9 * r.epsilon_certified
    if mechanism == "gradient-dpsgd":  # the record is sampled at the declared rate
        assert sc["rate_lower"] <= sc["sample_rate"] <= sc["rate_upper"]
    with pytest.raises(ParameterError, match="white-box"):
        run_audit(_cfg(mechanism), trials=10, end_to_end=True)
    with pytest.raises(ParameterError, match="noisy-gradient"):
        run_audit(_cfg("output-gaussian"), trials=10, threat="white-box", end_to_end=True)


def test_the_measured_audit_catches_clipping_at_twice_the_declared_norm(monkeypatch):
    import dpcore.mechanisms.gradient as gradient

    real = gradient.gradient_descent

    def clips_at_2c(*args, clip_norm=None, **kw):
        return real(*args, clip_norm=None if clip_norm is None else 2 * clip_norm, **kw)

    monkeypatch.setattr(gradient, "gradient_descent", clips_at_2c)
    r = _only_the_measured_audit_catches()
    assert r.shift_check["measured"] == pytest.approx(2 * r.shift_check["declared"], rel=1e-9)
    assert any("more than the declared sensitivity" in w for w in r.warnings)
    assert "The certificate does not apply to the noise that ran" in summary(r.to_dict(scores=False))
    assert r.refutation["claims"]["certified"]["bug"]  # a measured fact, not bad luck


def test_the_measured_audit_catches_a_sampler_at_twice_the_declared_rate(monkeypatch):
    import dpcore.mechanisms.gradient as gradient

    real = gradient.sgd

    def samples_at_2q(*args, sample_rate=None, **kw):
        return real(*args, sample_rate=None if sample_rate is None else min(1.0, 2 * sample_rate), **kw)

    monkeypatch.setattr(gradient, "sgd", samples_at_2q)
    r = _e2e("gradient-dpsgd")
    sc = r.shift_check
    assert sc["rate_lower"] > sc["sample_rate"] and r.verdict == "claim not met" and "certified" in r.refuted
    assert any("more often than the declared rate" in w for w in r.warnings)


def test_the_measured_audit_catches_a_plan_that_declares_half_the_sensitivity(monkeypatch):
    from dpcore.privacy import core as privacy
    from dpcore.mechanisms.gradient import GradientDPGD

    real = GradientDPGD.plan

    def halved(self, problem, config, sigma):
        r = real(self, problem, config, sigma).releases[0]
        return privacy.gaussian(r.what, r.sensitivity / 2, r.noise, r.count)

    monkeypatch.setattr(GradientDPGD, "plan", halved)  # certified calibration: half the noise
    r = _only_the_measured_audit_catches()
    assert r.shift_check["measured"] == pytest.approx(2 * r.shift_check["declared"], rel=1e-9)
    assert r.epsilon_lower_bound > 1.9 * r.epsilon_certified  # the records' ε itself: about twice the claim


# -- one training run, many canaries ------------------------------------------------------------


def test_one_run_audit_is_below_the_certificate_and_catches_an_under_noised_run():
    ok = one_run_audit(_cfg("gradient-dpgd", epsilon=2.0, iterations=50), canaries=400)
    assert 0 <= ok.epsilon_lower_bound <= ok.epsilon_certified == pytest.approx(2.0, rel=1e-6)
    assert ok.n_train == D.load("breast-cancer").n + 400 and 150 < ok.included < 250
    assert ok.spec.clip_norm == 0.1 and any("clipped at C = 0.1" in n for n in ok.notes)
    # one guess count, planned from the claim alone (the same for any run of it), at the full α
    assert ok.guesses == planned_guesses(400, ok.epsilon_certified, 1e-5, ALPHA) and ok.alpha == ALPHA
    assert ok.epsilon_lower_bound == one_run_epsilon(400, ok.guesses, ok.correct, 1e-5, ALPHA)
    assert any(f"{ok.guesses} guesses" in n and "fixed before the run" in n for n in ok.notes)
    # the published formula at c = 1e-4 adds almost no noise: one run refutes the target
    bad = one_run_audit(_cfg("gradient-dpgd", calibration="published", c=1e-4, iterations=50), canaries=400)
    assert bad.epsilon_lower_bound > bad.epsilon_target == 1.0
    assert bad.epsilon_lower_bound <= bad.epsilon_certified
    with pytest.raises(ParameterError, match="noisy-gradient"):
        one_run_audit(_cfg("output-gaussian"), canaries=100)
    with pytest.raises(ParameterError, match="canaries"):
        one_run_audit(_cfg("gradient-dpgd"), canaries=5)


def test_the_lessons_words_on_its_audit_hold():
    """Lesson step 6 says: the leaking setup's audit (seed 1) measures an ε of records far above the target
    and close to what the noise that ran certifies, without passing it; a refutation that far is a bug, not
    bad luck, and a second, independent audit confirms it.  If the numbers change, the words must."""
    from dataclasses import replace

    from dpcore.audit import run_audit, summary
    from pages.common import LEAKING_AUDIT, LEAKING_THREAT, LEAKING_TRIALS

    shown = run_audit(replace(LEAKING_AUDIT), trials=LEAKING_TRIALS, threat=LEAKING_THREAT, confirm=True).to_dict(scores=False)
    assert shown["refuted"] == ["target"] and shown["canary"] == "wide-pair"
    assert 0.9 * shown["epsilon_certified"] <= shown["epsilon_lower_bound"] <= shown["epsilon_certified"]
    assert shown["epsilon_lower_bound"] > 5 * shown["epsilon_target"] and shown["refuted_once"] == []
    assert 0.99 * shown["epsilon_certified"] <= shown["noise_check"]["epsilon"] <= shown["epsilon_certified"]
    assert shown["confirmation"]["confirmed"] == ["target"] and shown["refutation"]["bug"]
    assert "a bug, not bad luck" in summary(shown) and "Confirmed by a second, independent audit" in summary(shown)
