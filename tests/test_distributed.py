"""Distributed DP-ERM with client-size skew (seed 004)."""


import numpy as np
import pytest

from dpcore.privacy import accounting as acc
from dpcore.exceptions import ParameterError
from dpcore.experiments.run import RunSpec, load_problem, run
from dpcore.mechanisms import get_mechanism
from dpcore.experiments.studies import skew_curve
from dpcore.partition import client_sizes, partition
from dpcore.optim import BatchRNG


@pytest.mark.parametrize("n, m, u", [(546, 4, 1.0), (546, 4, 3.0), (36177, 8, 8.0), (1000, 5, 2.5), (100, 2, 1.0)])
def test_sizes_sum_and_skew(n, m, u):
    sizes = client_sizes(n, m, u)
    assert sum(sizes) == n and len(sizes) == m
    small = min(sizes)
    # integer rounding: the realised skew is within one row of the request on either side
    assert (max(sizes) - 1) / (small + 1) <= u <= (max(sizes) + 1) / max(small - 1, 1) + 1e-12


def test_random_sizes_above_minimum():
    sizes = client_sizes(1000, 7, mode="random", min_size=50, seed=3)
    assert sum(sizes) == 1000 and min(sizes) >= 50
    assert sizes == client_sizes(1000, 7, mode="random", min_size=50, seed=3)


def test_partition_is_stratified_and_complete():
    y = np.where(np.arange(1000) % 4 == 0, 1.0, -1.0)
    sizes = client_sizes(1000, 6, 4.0)
    parts = partition(y, sizes, seed=0, need_both_classes=True, split="stratified")
    allidx = np.concatenate(parts)
    assert sorted(allidx.tolist()) == list(range(1000))
    for p, s in zip(parts, sizes):
        assert len(p) == s
        assert abs(np.mean(y[p] > 0) * s - 0.25 * s) <= 1.0 + 1e-9  # class share within one row


@pytest.mark.parametrize("kwargs, message", [
    (dict(n=10, clients=11), "at most 10 clients"),
    (dict(n=100, clients=4, skew=0.5), "must be ≥ 1"),
    (dict(n=10, clients=4, skew=100.0), "small clients empty"),
])
def test_impossible_requests(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        client_sizes(**kwargs)


def test_client_without_both_classes_is_refused():
    y = np.array([1.0] * 3 + [-1.0] * 97)
    with pytest.raises(ParameterError, match="only one class"):
        partition(y, client_sizes(100, 10, 1.0), seed=0, need_both_classes=True)


@pytest.mark.parametrize("calibration", ["certified", "published"])
def test_equal_sizes_wddp_equals_avg(calibration):
    kw = dict(dataset="breast-cancer", epsilon=1.0, iterations=30, repeats=3, clients=6, skew=1.0,
              calibration=calibration)  # n = 546 = 6 × 91
    a = run(RunSpec(mechanism="distributed-wddp", **kw))
    b = run(RunSpec(mechanism="distributed-avg", **kw))
    np.testing.assert_array_equal(a.gap, b.gap)
    assert a.client_sizes == b.client_sizes == [91] * 6


@pytest.mark.parametrize("mech", ["distributed-wddp", "distributed-avg"])
def test_aggregate_noise_variance_matches_weights(mech):
    # With a zero learning signal (lr only on noise), θ = −η Σ_j w_j Σ_t z_jt, so
    # Var(θ_k) = η² T Σ_j w_j² σ_j².  Check with a chi-square confidence interval.
    cfg = RunSpec(dataset="breast-cancer", mechanism=mech, epsilon=1.0, iterations=4, repeats=400,
                  clients=4, skew=3.0, learning_rate=1e-6, seed=5)
    pr = load_problem(cfg)
    out = get_mechanism(mech).run(pr, cfg, BatchRNG(list(range(400))))
    w = np.asarray(out.extras["weights"])
    sig = np.asarray(out.extras["client_sigmas"])
    noise = out.theta - out.theta.mean(axis=0)  # the data part is identical across runs
    expected = (1e-6) ** 2 * 4 * np.sum(w**2 * sig**2)
    dof = noise.size - pr.p
    sample = np.sum(noise**2) / dof
    from scipy import stats
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], dof) / dof
    assert lo <= sample / expected <= hi


def test_certified_meets_target_and_published_small_clients_are_weak():
    kw = dict(dataset="breast-cancer", epsilon=1.0, iterations=30, repeats=2, clients=4, skew=4.0)
    cert = run(RunSpec(mechanism="distributed-wddp", **kw))
    assert all(e <= 1.0 for e in cert.extras["client_epsilons"])
    pub = run(RunSpec(mechanism="distributed-wddp", calibration="published", **kw))
    eps = pub.extras["client_epsilons"]
    sizes = pub.client_sizes
    assert pub.epsilon_certified == max(eps) > 1.0
    assert eps[int(np.argmin(sizes))] == max(eps)  # the smallest party is the weakest
    n1 = min(sizes)
    assert max(eps) == pytest.approx(acc.gaussian_epsilon(2 / n1, pub.sigma, 30, 1e-5))


def test_skew_curve_rows():
    out = skew_curve("breast-cancer", 1.0, 1e-5, clients=4, skews=(1, 4), iterations=20, repeats=1)
    assert len(out["rows"]) == 6
    assert {r["mechanism"] for r in out["rows"]} == {"distributed-wddp", "distributed-avg", "gradient-dpgd"}
    assert all("error" not in r for r in out["rows"])


def test_cli_client_sizes_in_json(capsys):
    import json
    from dpcore.cli.commands import main

    assert main(["run", "--dataset", "breast-cancer", "--mechanism", "distributed-wddp", "--clients", "3",
                 "--skew", "2", "--repeats", "1", "--iterations", "10", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert sum(rec["client_sizes"]) == rec["n_train"] and len(rec["client_sizes"]) == 3


def test_partition_is_random_by_default_as_in_the_papers():
    """The default split ignores the labels: the client's positive shares vary like a
    hypergeometric draw (a stratified split would pin every share to 1/4 within a row)."""
    y = np.where(np.arange(4000) % 4 == 0, 1.0, -1.0)
    sizes = [250] * 16
    parts = partition(y, sizes, seed=3, need_both_classes=True)
    assert sorted(np.concatenate(parts).tolist()) == list(range(4000))
    counts = np.array([np.sum(y[p] > 0) for p in parts])
    # hypergeometric sd ≈ √(250·¼·¾·(3750/3999)) ≈ 6.6 rows; 16 clients all within one row of
    # 62.5 would happen with probability < 1e-15
    assert np.ptp(counts) > 2
    assert parts[0].tolist() != partition(y, sizes, seed=4, need_both_classes=True)[0].tolist()
    assert partition(np.sort(y), sizes, seed=3, need_both_classes=False)[0].tolist() == parts[0].tolist()


@pytest.mark.parametrize("calibration", ["certified", "published"])
def test_the_server_sees_the_worst_clients_epsilon_under_a_record_independent_split(calibration):
    """Issue 45: the distributed mechanisms reported ε_local = ∞ although, with the random
    (record-independent) split, the server only sees each client's T noisy mean gradients, worth that
    client's ε_j.  ε_local is the worst client's, recomputed here by a second route (the closed form
    μ_j = √T·(2G/n_j)/σ_j for T Gaussian releases of a client's mean gradient, and ε(δ) of μ-GDP
    from the normal CDF, solved here); with the label-stratified split, which reads every label,
    it stays ∞."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    T, delta = 20, 1e-5
    kw = dict(dataset="breast-cancer", epsilon=1.0, delta=delta, iterations=T, repeats=1, clients=4, skew=4.0,
              calibration=calibration)
    res = run(RunSpec(mechanism="distributed-wddp", **kw))

    def gdp_eps(mu):  # δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), decreasing in ε
        return brentq(lambda e: norm.cdf(-e / mu + mu / 2) - np.exp(e) * norm.cdf(-e / mu - mu / 2) - delta, 0, 200)

    mus = [np.sqrt(T) * 2.0 / nj / s for nj, s in zip(res.client_sizes, res.extras["client_sigmas"])]
    worst = max(gdp_eps(mu) for mu in mus)
    assert res.epsilon_local == pytest.approx(worst, rel=1e-6)
    assert res.epsilon_local == res.epsilon_certified
    stratified = run(RunSpec(mechanism="distributed-wddp", options=(("split", "stratified"),), **kw))
    assert stratified.epsilon_local == np.inf and np.isfinite(stratified.epsilon_certified)
