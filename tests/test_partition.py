"""Every split of training rows the package makes, against what its proofs assume.

Parallel composition over clients (and a validation part composed in parallel with the
training part) holds only if which part holds a record never depends on the records: then
replacing one record moves no *other* record between parts.  Each split in
``RECORD_SPLITS`` declares whether it is such a split; this suite replaces records one at a
time and checks every declaration, so a new split is covered the day it is registered.
"""

import math

import numpy as np
import pytest

import dpcore.experiments.tune  # noqa: F401  (registers the tuning's validation split)
from dpcore import datasets
from dpcore.audit import make_canary
from dpcore.experiments.run import RunSpec, run
from dpcore.mechanisms import REGISTRY
from dpcore.partition import RECORD_SPLITS, SPLITS, RecordSplit, client_sizes, moved_records, partition

from independent import gdp_epsilon


def _data(n=240, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(rng.random(n) < 0.3, 1.0, -1.0)
    return X, y


def _replacements(X, y, count=24, seed=1):
    """(index, new x, new y): label flips, new features, and both, at seeded positions."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        i = int(rng.integers(len(y)))
        x_new = rng.standard_normal(X.shape[1])
        x_new /= max(1.0, np.linalg.norm(x_new))
        kind = k % 3
        out.append((i, X[i] if kind == 0 else x_new, -y[i] if kind != 1 else y[i]))
    return out


def _most_moved(split, X, y, seed=0):
    return max(moved_records(split, X, y, seed, i, xn, yn) for i, xn, yn in _replacements(X, y))


def test_every_split_is_declared_with_what_it_certifies():
    names = set(RECORD_SPLITS)
    assert {f"clients ({s})" for s in SPLITS} <= names
    assert {"tuning (validation part)", "subsample (RunSpec.n)", "train/test split"} <= names
    for split in RECORD_SPLITS.values():
        assert split.certifies and len(split.certifies) > 30


@pytest.mark.parametrize("name", sorted(RECORD_SPLITS))
def test_a_replaced_record_moves_no_other_record_unless_the_split_says_it_may(name):
    split = RECORD_SPLITS[name]
    X, y = _data()
    moved = _most_moved(split, X, y)
    if split.record_independent:
        assert moved == 0, f"{name} moved {moved} other records: it reads the data"
    else:  # a split declared data-dependent really is (the declaration is not a shrug)
        assert moved > 0


def test_the_check_catches_a_planted_data_dependent_split():
    # parts by rank in label order, declared record-independent: one flipped label shifts the
    # boundary, so records move, and the check above would fail on it
    def by_label(X, y, seed):
        order = np.argsort(y, kind="stable")
        return [np.sort(order[: len(y) // 2]), np.sort(order[len(y) // 2:])]

    planted = RecordSplit("planted", by_label, True, "a planted split that reads the labels")
    X, y = _data()
    assert _most_moved(planted, X, y) > 0


def test_the_audit_canary_that_flips_a_label_moves_the_stratified_clients():
    # The measurement: on Breast Cancer, 4 clients with skew 8, one flipped label moved
    # hundreds of other records with split=stratified; none with the random split.
    ds = datasets.load("breast-cancer")
    can = make_canary(ds, "mislabeled", seed=0)
    sizes = client_sizes(ds.n, 4, 8.0)
    moved = {}
    for split in SPLITS:
        rule = RecordSplit(split, lambda X, y, s, split=split: partition(y, sizes, s, need_both_classes=False,
                                                                         split=split), True, "-")
        moved[split] = moved_records(rule, ds.X_train, ds.y_train, 0, can.index, can.x, can.y)
    assert moved["random"] == 0
    assert moved["stratified"] > 50


@pytest.mark.parametrize("mechanism", ["distributed-wddp", "distributed-avg"])
def test_each_split_certifies_what_it_proves(mechanism):
    # Second route: closed-form Gaussian DP.  Random split: the worst client, μ_j = √T·(2G/n_j)/σ_j.
    # Stratified: every client composes with a whole client's sensitivity 2G, μ² = Σ_j T(2G/σ_j)².
    T, delta, G = 30, 1e-5, 1.0
    for calibration in ("certified", "published"):
        for split in SPLITS:
            spec = RunSpec(dataset="breast-cancer", mechanism=mechanism, clients=4, skew=8.0, iterations=T,
                           repeats=1, delta=delta, calibration=calibration, options=(("split", split),))
            res = run(spec)
            sizes, sigmas = res.client_sizes, res.extras["client_sigmas"]
            if split == "random":
                assert res.plan.parts, "a record-independent split composes clients in parallel"
                mu = max(math.sqrt(T) * 2 * G / nj / s for nj, s in zip(sizes, sigmas))
            else:
                assert not res.plan.parts, "a split that reads the labels must not claim parallel composition"
                mu = math.sqrt(sum(T * (2 * G / s) ** 2 for s in sigmas))
            expected = gdp_epsilon(mu, delta)
            assert res.epsilon_certified == pytest.approx(expected, rel=1e-6)
            assert res.epsilon_certified >= expected * (1 - 1e-9)
            if calibration == "certified":
                assert res.epsilon_certified <= 1.0 * (1 + 1e-6)


def test_mechanisms_say_what_each_split_certifies():
    for mech in ("distributed-wddp", "distributed-avg"):
        meta = REGISTRY[mech].metadata()
        assert set(meta["certified_by_split"]) == set(SPLITS)
        assert "worst client" in meta["certified_by_split"]["random"]
        assert "all clients composed" in meta["certified_by_split"]["stratified"]
