"""The verification suite: every registered mechanism's certified ε, checked independently.

It enumerates the registry (never a hard-coded list of mechanisms), so a mechanism is covered
the day it is registered; the per-mechanism tables below must name it, or a test fails.

For every mechanism × model × calibration:

* the certified ε equals a second route (``tests/independent.py``: Gaussian DP in closed form,
  Gaussian ∘ randomized response in closed form, a privacy-loss distribution built here for
  sampled Gaussians, pure sums for pure releases) to a stated tolerance, and never lies below it;
* the noise plan declares what ran, by a derivation written here (sensitivity, noise, count);
* halving the noise raises the certified ε (the certification reads the noise that ran);
* the declared sensitivity holds on worst-case neighbours found by a search of replaced records.

Property tests (Hypothesis) check that calibrate → certify meets the target from below within
the stated numerical slack.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

from dpcore.privacy import core as privacy
from dpcore.audit import replace_record
from dpcore.erm import LazySolution
from dpcore.exceptions import ParameterError, PrivacyWarning
from dpcore.experiments.run import RunSpec, load_problem, problem_data
from dpcore.mechanisms import REGISTRY, Problem, get_mechanism
from dpcore.optim import BatchRNG

import independent  # tests/independent.py

EPS, DELTA, T = 1.0, 1e-5, 20
DATA = {"logreg": dict(dataset="breast-cancer"), "mlp": dict(dataset="breast-cancer"),
        "linreg": dict(dataset="synthetic-regression", n=600, d=5, lam=1e-3)}
CASES = [(m, model, cal) for m, cls in REGISTRY.items() for model in cls.models for cal in cls.calibrations]


def _config(mech, model, cal, **kw) -> RunSpec:
    base = dict(mechanism=mech, model=model, calibration=cal, epsilon=EPS, delta=DELTA, iterations=T,
                repeats=1, seed=0, **DATA[model])
    base.update(kw)
    return RunSpec(**base)


@functools.lru_cache(maxsize=None)
def _release(config: RunSpec):
    problem = load_problem(config)
    mechanism = get_mechanism(config.mechanism)
    mechanism.check(problem, config)
    return problem, mechanism.run(problem, config, BatchRNG([config.seed]))


# ---------------------------------------------------------------------------
# the second route, from the plan's declared releases


def independent_epsilon(plan: privacy.NoisePlan, delta: float) -> tuple[float, float]:
    """(lower, upper) bounds on the ε of ``plan`` from tests/independent.py (equal where exact)."""
    if plan.void is not None:
        return math.inf, math.inf
    parts = [independent_epsilon(p, delta) for p in plan.parts]
    worst = (max((p[0] for p in parts), default=0.0), max((p[1] for p in parts), default=0.0))
    if not plan.releases:
        return worst
    kinds = {}
    for r in plan.releases:
        kinds.setdefault(r.kind, []).append(r)
    pure = sum(r.count * r.sensitivity / r.noise for r in kinds.get("gamma-norm", []))
    pure += sum(r.count * r.epsilon for r in kinds.get("theorem", []))
    rest = delta - sum(r.count * r.delta for r in kinds.get("theorem", []))
    rr = kinds.get("randomized-response", [])
    gauss, sampled = kinds.get("gaussian", []), kinds.get("sampled-gaussian", [])
    mu = math.sqrt(sum(r.count * (r.sensitivity / r.noise) ** 2 for r in gauss))
    if sampled:
        assert len(sampled) == 1 and not gauss and not rr, "no second route for this composition"
        r = sampled[0]
        lo, hi = independent.sampled_gaussian_epsilon_bracket(2 * r.noise / r.sensitivity, r.sample_rate,
                                                              r.count, rest)
    elif gauss and rr:
        assert len(rr) == 1
        lo = hi = independent.gaussian_rr_epsilon(mu, rr[0].epsilon, rest)
    elif gauss:
        lo = hi = independent.gdp_epsilon(mu, rest)
    else:
        lo = hi = sum(r.count * r.epsilon for r in rr)
    return max(worst[0], pure + lo), max(worst[1], pure + hi)


# The PLD accountant (dp-accounting) and the grid built in tests/independent.py are both
# pessimistic discretisations; they agree to this relative tolerance.
PLD_RTOL = 0.02


@pytest.mark.parametrize("mech, model, cal", CASES)
def test_certified_epsilon_equals_a_second_route(mech, model, cal):
    _, out = _release(_config(mech, model, cal))
    certified, local = out.certified(DELTA)
    lo, hi = independent_epsilon(out.plan, DELTA)
    if math.isinf(lo):
        assert math.isinf(certified)
        return
    assert certified >= lo * (1 - 1e-9) - 1e-12, "the certified ε lies below the truth"
    sampled = any(r.kind == "sampled-gaussian" for r in out.plan.releases)
    assert certified <= hi * (1 + (PLD_RTOL if sampled else 2e-3)) + 1e-9
    if out.local_plan is not None:
        assert local >= independent_epsilon(out.local_plan, DELTA)[0] * (1 - 1e-9) - 1e-12
    else:
        assert math.isinf(local)


@pytest.mark.parametrize("mech, model", [(m, model) for m, model, cal in CASES if cal == "certified"
                                          and REGISTRY[m].private])
def test_certified_calibration_meets_its_target(mech, model):
    """'Certified' means: the noise is chosen so that the certified ε is at most the target
    (and, calibrated tightly, not far below it)."""
    res = _release(_config(mech, model, "certified"))[1]
    certified = res.certified(DELTA)[0]
    if mech == "local-duchi":
        assert certified == EPS
        return
    assert EPS * (1 - 5e-3) <= certified <= EPS
    assert independent_epsilon(res.plan, DELTA)[0] <= EPS * (1 + 1e-9)


# ---------------------------------------------------------------------------
# the plans declare what ran: derivations written here


def _G(problem, config):
    G = problem.model.lipschitz
    return (config.clip_norm or 1.0) if not math.isfinite(G) else G


def _one(plan, kind):
    assert len(plan.releases) == 1 and plan.releases[0].kind == kind, plan.describe()
    return plan.releases[0]


def _void(problem, config, out):
    assert out.plan.void and math.isinf(out.certified(DELTA)[0])


def _output_laplace(problem, config, out):
    r = _one(out.plan, "gamma-norm")
    G = 1.0 if problem.model.id == "logreg" else problem.model.radius + 1.0  # |ℓ'| ≤ 1; |θᵀx − y| ≤ η + 1
    assert r.sensitivity == pytest.approx(2 * G / (problem.n * problem.model.lam), rel=1e-12)
    assert r.noise == out.sigma


def _output_gaussian(problem, config, out):
    r = _one(out.plan, "gaussian")
    model = problem.model
    eta = min(config.learning_rate, 1 / (model.smoothness + model.lam))
    lip = model.lipschitz
    assert r.sensitivity == pytest.approx(2 * lip / (problem.n * model.lam) * (1 - (1 - eta * model.lam) ** T),
                                          rel=1e-12)
    assert (r.noise, r.count) == (out.sigma, 1)


def _bolt_on(problem, config, out):
    r = _one(out.plan, "gaussian")
    n = problem.n
    k = -(-n // 50)  # batches of 50 per pass; array_split makes the smallest ⌊n/k⌋
    assert r.sensitivity == pytest.approx(2 * problem.model.lipschitz / (problem.model.lam * k * (n // k)),
                                          rel=1e-12)
    assert r.noise == out.sigma


def _chaudhuri(problem, config, out):
    r = _one(out.plan, "theorem")
    n, lam, c = problem.n, problem.model.lam, 0.25
    extra = out.extras["extra_l2"]
    # CMS Alg. 2's Δ in both calibrations: 0 unless ε − 2 log(1 + c/(nλ)) ≤ 0
    assert extra == (0.0 if config.epsilon > 2 * math.log1p(c / (n * lam))
                     else pytest.approx(c / (n * math.expm1(config.epsilon / 4)) - lam, rel=1e-12))
    k = n * (lam + extra)
    want = independent.logistic_objective_epsilon(out.sigma, k)
    assert want <= r.epsilon <= want * (1 + 1e-9)  # never below the brute-force supremum
    assert r.epsilon <= 2 / out.sigma + 2 * math.log1p(c / k)  # never above CMS Thm 9
    assert (r.delta, r.sensitivity) == (0.0, 2.0)


def _kifer_epsilon(sigma, delta, zeta):
    # σ = ζ√(8 log(2/δ) + 4ε)/ε solved for ε: σ²ε² − 4ζ²ε − 8ζ² log(2/δ) = 0
    a, b, c = sigma**2, -4 * zeta**2, -8 * zeta**2 * math.log(2 / delta)
    return (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)


def _kifer(problem, config, out):
    r = _one(out.plan, "theorem")
    zeta = problem.model.lipschitz
    big_delta = max(problem.n * problem.model.lam, 2 * problem.model.smoothness / EPS)
    want = max(_kifer_epsilon(out.sigma, DELTA, 2 * zeta), 2 * problem.model.smoothness / big_delta)
    if config.model == "logreg":  # the GLM's privacy profile, when tighter (it is, here)
        profile = independent.glm_objective_epsilon(out.sigma, DELTA, zeta, problem.model.smoothness, big_delta)
        assert profile < want
        want = profile
    assert want * (1 - 1e-9) <= r.epsilon <= want * (1 + 2e-6) and r.delta == DELTA  # never below
    assert r.sensitivity == 2 * zeta  # replace-one: the gradient of one record's loss moves by 2ζ
    if config.calibration == "published":  # the paper's add/remove constant
        assert out.sigma == pytest.approx(zeta * math.sqrt(8 * math.log(2 / DELTA) + 4 * EPS) / EPS, rel=1e-12)


def _dpgd(problem, config, out):
    r = _one(out.plan, "gaussian")
    assert r.sensitivity == pytest.approx(2 * _G(problem, config) / problem.n, rel=1e-12)
    assert (r.noise, r.count) == (out.sigma, T)


def _sampled(q_of, clip_of):
    def check(problem, config, out):
        r = _one(out.plan, "sampled-gaussian")
        C = clip_of(problem, config)
        assert r.sample_rate == pytest.approx(q_of(problem), rel=1e-12) and r.count == T
        assert r.sensitivity == 2 * C and r.noise == pytest.approx(out.extras["noise_multiplier"] * C)
    return check


def _record(problem, config, out):
    if config.calibration == "published":  # labels raw
        assert out.plan.void and "label" in out.plan.void
        return
    features, label = out.plan.releases
    assert (features.kind, features.sensitivity, features.noise) == ("gaussian", 2.0, out.sigma)
    if problem.dataset.task == "classification":
        assert label.kind == "randomized-response" and label.epsilon == EPS / 2
    else:
        assert label.kind == "gaussian" and label.sensitivity == 2.0
        assert independent.gdp_epsilon(2 / label.noise, DELTA) == pytest.approx(EPS / 2, abs=1e-6)
    assert out.local_plan == out.plan


def _fukuchi(problem, config, out):
    q, p = out.plan.releases
    bound = 1.0 if problem.model.id == "linreg" else 0.5
    assert (q.kind, p.kind) == ("gaussian", "gaussian")
    assert q.sensitivity == p.sensitivity == 2 * bound
    assert (q.noise, p.noise) == (out.extras["contributor_sigma_q"], out.extras["contributor_sigma_p"])
    if config.calibration == "published":
        assert q.noise == pytest.approx(out.extras["sigma_u"] / math.sqrt(problem.n), rel=1e-12)


def _duchi(problem, config, out):
    r = _one(out.plan, "theorem")
    assert (r.epsilon, r.delta) == (EPS, 0.0) and out.local_plan == out.plan


def _distributed(problem, config, out):
    sizes = out.client_sizes
    assert len(out.plan.parts) == len(sizes) and not out.plan.releases
    for part, n_j, sigma in zip(out.plan.parts, sizes, out.extras["client_sigmas"]):
        r = _one(part, "gaussian")
        assert r.sensitivity == pytest.approx(2 * _G(problem, config) / n_j, rel=1e-12)
        assert (r.noise, r.count) == (sigma, T)


PLAN_CHECKS = {
    "non-private": _void, "input-dbdp-if": _void,
    "output-laplace": _output_laplace, "output-gaussian": _output_gaussian, "output-bolt-on": _bolt_on,
    "objective-chaudhuri": _chaudhuri, "objective-gaussian": _kifer,
    "gradient-dpgd": _dpgd,
    # Bassily's step is on n∇ℓ of one record: bounded by G (clipped only without a Lipschitz
    # bound); DP-SGD always clips to C (default 1)
    "gradient-bassily": _sampled(lambda p: 1 / p.n, _G),
    "gradient-dpsgd": _sampled(lambda p: 256 / p.n, lambda p, c: c.clip_norm or 1.0),
    "gradient-lssgd": _sampled(lambda p: 256 / p.n, lambda p, c: c.clip_norm or 1.0),
    "input-kang": _record, "input-dbdp": _record, "input-fukuchi": _fukuchi,
    "local-gaussian": _record, "local-duchi": _duchi,
    "distributed-wddp": _distributed, "distributed-avg": _distributed,
}


def test_every_registered_mechanism_has_a_derivation_here():
    assert set(REGISTRY) == set(PLAN_CHECKS), "add the new mechanism's derivation to PLAN_CHECKS"


@pytest.mark.parametrize("mech, model, cal", CASES)
def test_the_plan_declares_what_ran(mech, model, cal):
    config = _config(mech, model, cal)
    problem, out = _release(config)
    PLAN_CHECKS[mech](problem, config, out)


# ---------------------------------------------------------------------------
# mutation: halving the noise must show


NO_NOISE_SCALE = {
    "non-private": "releases the exact minimiser: there is no noise to scale",
    "input-dbdp-if": "no guarantee at any noise level (the selection reads the raw data)",
    "local-duchi": "the ℓ2-ball mechanism's output is a point on a sphere: no continuous noise scale",
}


@pytest.mark.parametrize("mech", list(REGISTRY))
def test_halving_the_noise_raises_the_certified_epsilon(mech):
    cls = REGISTRY[mech]
    model = cls.models[0]
    cal = "certified" if "certified" in cls.calibrations else cls.calibrations[0]
    full = _release(_config(mech, model, cal))[1].certified(DELTA)[0]
    if mech in NO_NOISE_SCALE:
        if mech == "local-duchi":
            with pytest.raises(ParameterError, match="noise scale"):
                _release(_config(mech, model, cal, noise_scale=0.5))
        else:
            assert math.isinf(full)
        return
    half = _release(_config(mech, model, cal, noise_scale=0.5))[1]
    assert half.certified(DELTA)[0] > full * 1.05, "the certification did not read the noise that ran"
    assert half.sigma == pytest.approx(0.5 * _release(_config(mech, model, cal))[1].sigma, rel=1e-12)


# ---------------------------------------------------------------------------
# the declared sensitivity, on worst-case neighbours


def _neighbours(dataset, rows=(0, 1, 2), seed=0):
    """Replace-one neighbours: a few rows replaced by extreme records (unit vectors along the
    data's highest and lowest variance directions, the row's own reverse, random unit
    vectors) with either label."""
    X = np.asarray(dataset.X_train)
    _, vecs = np.linalg.eigh(X.T @ X)
    rng = np.random.default_rng(seed)
    rand = rng.standard_normal((2, X.shape[1]))
    for k in rows:
        own = -X[k] / max(np.linalg.norm(X[k]), 1e-12)
        for x in (vecs[:, 0], vecs[:, -1], -vecs[:, -1], own, *(r / np.linalg.norm(r) for r in rand)):
            for y in (-1.0, 1.0):
                yield k, replace_record(dataset, k, x, y)


def _twin_runs(config, dataset, neighbour):
    """The mechanism on D and on D' with the same seed and (almost) no noise.  Each exact minimiser
    is solved only where the mechanism reads it (output perturbation): an MLP's takes seconds."""
    mechanism = get_mechanism(config.mechanism)
    model = problem_data(config)[1]
    out = []
    for ds in (dataset, neighbour):
        problem = Problem(dataset=ds, model=model, erm=LazySolution(model, ds.X_train, ds.y_train))
        out.append(mechanism.run(problem, config, BatchRNG([0])))
    return out


def _released_moves(mech, model="logreg", **kw):
    config = _config(mech, model, "certified", noise_scale=1e-12, **kw)
    dataset = problem_data(config)[0]
    ratios = []
    for k, nb in _neighbours(dataset):
        a, b = _twin_runs(config, dataset, nb)
        declared = a.plan.releases[0].sensitivity
        ratios.append(np.linalg.norm(a.theta - b.theta) / declared)
    return max(ratios)


@pytest.mark.parametrize("mech, model", [("output-laplace", "logreg"), ("output-gaussian", "logreg"),
                                          ("output-bolt-on", "logreg"), ("output-laplace", "linreg"),
                                          ("output-gaussian", "linreg")])
def test_output_perturbation_moves_no_more_than_its_declared_sensitivity(mech, model):
    kw = {"lam": 0.05} if model == "logreg" else {}
    assert _released_moves(mech, model, **kw) <= 1.0 + 1e-9


def test_one_gradient_step_moves_no_more_than_declared():
    """DP-GD (T = 1, η = 1, from θ = 0): θ₁ − θ₁' is the difference of the mean gradients, ≤ 2G/n."""
    config = _config("gradient-dpgd", "logreg", "certified", noise_scale=1e-12, iterations=1)
    dataset = problem_data(config)[0]
    worst = max(np.linalg.norm(a.theta - b.theta) / a.plan.releases[0].sensitivity
                for a, b in (_twin_runs(config, dataset, nb) for _, nb in _neighbours(dataset)))
    assert 0.25 < worst <= 1.0 + 1e-9  # at θ = 0, |ℓ'| = 1/2: the search reaches half the bound


def test_clipped_sum_moves_no_more_than_twice_the_clip():
    """DP-SGD with q = 1, T = 1: the step is η·(clipped sum)/(qn), so qn‖θ₁ − θ₁'‖/η ≤ 2C."""
    config = _config("gradient-dpsgd", "mlp", "certified", noise_scale=1e-12, iterations=1,
                     sample_rate=1.0, clip_norm=0.05)
    dataset = problem_data(config)[0]
    worst = 0.0
    for _, nb in _neighbours(dataset, rows=(0,)):
        a, b = _twin_runs(config, dataset, nb)
        worst = max(worst, dataset.n * np.linalg.norm(a.theta - b.theta) / a.plan.releases[0].sensitivity)
    assert 0.5 < worst <= 1.0 + 1e-9  # a tight clip: replaced records reach the bound


@pytest.mark.parametrize("mech", ["objective-chaudhuri", "objective-gaussian"])
def test_objective_perturbation_gradient_moves_no_more_than_declared(mech):
    """The proofs need ‖∇ℓ(θ; z) − ∇ℓ(θ; z')‖ ≤ Δ at every θ; checked at random θ."""
    config = _config(mech, "logreg", "certified")
    problem, out = _release(config)
    declared = out.plan.releases[0].sensitivity
    thetas = np.random.default_rng(1).standard_normal((50, problem.p)) * 3
    worst = 0.0
    for k, nb in _neighbours(problem.dataset):
        g = problem.model.per_example_grads(thetas, np.stack([problem.X[k]] * 50)[:, None, :],
                                            np.full((50, 1), problem.y[k]))[:, 0]
        g2 = problem.model.per_example_grads(thetas, np.stack([nb.X_train[k]] * 50)[:, None, :],
                                             np.full((50, 1), nb.y_train[k]))[:, 0]
        worst = max(worst, float(np.max(np.linalg.norm(g - g2, axis=1))) / declared)
    assert 0.5 < worst <= 1.0 + 1e-9


@pytest.mark.parametrize("mech, model", [("input-kang", "logreg"), ("input-dbdp", "linreg"),
                                          ("local-gaussian", "logreg")])
def test_released_records_move_no_more_than_declared(mech, model):
    """The released D_priv of neighbours differs in one row, by at most the declared 2 (features)
    and, for regression, 2 (the clipped label)."""
    config = _config(mech, model, "certified", noise_scale=1e-12, options=(("keep_data", True),))
    dataset = problem_data(config)[0]
    if mech == "local-gaussian":  # it keeps no data: its release is the record itself
        assert np.max(np.linalg.norm(dataset.X_train, axis=1)) <= 1 + 1e-12
        return
    for _, nb in _neighbours(dataset, rows=(0,)):
        a, b = _twin_runs(config, dataset, nb)
        (Xa, ya), (Xb, yb) = a.released_data, b.released_data
        features, label = a.plan.releases
        assert np.max(np.linalg.norm(Xa - Xb, axis=-1)) <= features.sensitivity + 1e-9
        if label.kind == "gaussian":
            assert np.max(np.abs(ya - yb)) <= label.sensitivity + 1e-9


def test_fukuchi_statistics_move_no_more_than_declared():
    for model in ("linreg", "logreg"):
        config = _config("input-fukuchi", model, "certified")
        problem, out = _release(config)
        q, p = out.plan.releases
        scale = 1.0 if model == "linreg" else 0.5
        for k, nb in _neighbours(problem.dataset):
            dq = scale * np.linalg.norm(problem.X[k] - nb.X_train[k])
            dp = scale * np.linalg.norm(problem.y[k] * problem.X[k] - nb.y_train[k] * nb.X_train[k])
            assert dq <= q.sensitivity + 1e-12 and dp <= p.sensitivity + 1e-12


def test_a_client_moves_no_more_than_its_declared_sensitivity():
    """WD-DP (T = 1, η = 1): replacing a record of client j moves the aggregate by w_j·‖Δθ_j‖ ≤ w_j·2G/n_j."""
    config = _config("distributed-wddp", "logreg", "certified", noise_scale=1e-12, iterations=1,
                     clients=4, skew=4.0)
    dataset = problem_data(config)[0]
    mechanism = get_mechanism("distributed-wddp")
    problem = load_problem(config)
    sizes, parts = mechanism.split(problem, config)
    for _, nb in _neighbours(dataset, rows=(0, 300)):
        a, b = _twin_runs(config, dataset, nb)
        k = next(int(i) for i in (0, 300) if not np.array_equal(nb.X_train[i], dataset.X_train[i])
                 or nb.y_train[i] != dataset.y_train[i])
        j = next(j for j, part in enumerate(parts) if k in part)
        w_j = sizes[j] / sum(sizes)
        assert np.linalg.norm(a.theta - b.theta) <= w_j * a.plan.parts[j].releases[0].sensitivity + 1e-9


# ---------------------------------------------------------------------------
# calibrate → certify, as properties (Hypothesis)

def _props(examples: int):
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


#: the Gaussian composition's inputs: 100 examples in the default run, the 1,000 with -m slow (below)
_COMPOSITION = dict(eps=st.floats(0.01, 20), log_delta=st.floats(-12, -2), n=st.integers(10, 10**7),
                    steps=st.integers(1, 10_000), clip=st.floats(0.01, 10))


@_props(100)
@given(**_COMPOSITION)
def test_calibrated_gaussian_composition_meets_its_target(eps, log_delta, n, steps, clip):
    _calibrated_gaussian_composition_meets_its_target(eps, log_delta, n, steps, clip)


@pytest.mark.slow
@_props(1000)
@given(**_COMPOSITION)
def test_calibrated_gaussian_composition_meets_its_target_at_1000_examples(eps, log_delta, n, steps, clip):
    _calibrated_gaussian_composition_meets_its_target(eps, log_delta, n, steps, clip)


def _calibrated_gaussian_composition_meets_its_target(eps, log_delta, n, steps, clip):
    delta = 10.0**log_delta
    family = lambda s: privacy.gaussian("g", 2 * clip / n, s, steps)  # noqa: E731
    s = privacy.calibrate(family, eps, delta)
    got = privacy.certify(family(s), delta)
    assert eps * (1 - 1e-6) <= got <= eps
    assert independent.gdp_epsilon(math.sqrt(steps) * 2 * clip / n / s, delta) <= eps * (1 + 1e-9)


@_props(1000)
@given(eps=st.floats(0.05, 10), log_delta=st.floats(-12, -2), zeta=st.floats(0.1, 10))
def test_calibrated_theorem_release_meets_its_target(eps, log_delta, zeta):
    """Kifer-type releases: ε(σ) from a closed form, inverted by calibrate."""
    delta = 10.0**log_delta
    family = lambda s: privacy.theorem("t", _kifer_epsilon(s, delta, zeta), delta)  # noqa: E731
    s = privacy.calibrate(family, eps, delta)
    got = privacy.certify(family(s), delta)
    assert eps * (1 - 1e-6) <= got <= eps
    assert s == pytest.approx(zeta * math.sqrt(8 * math.log(2 / delta) + 4 * eps) / eps, rel=1e-6)


@_props(40)
@given(eps=st.floats(0.2, 8), log_delta=st.floats(-10, -3), q=st.floats(1e-3, 1.0), steps=st.integers(1, 300),
       clip=st.floats(0.1, 10))
def test_calibrated_sampled_gaussian_meets_its_target(eps, log_delta, q, steps, clip):
    delta = 10.0**log_delta
    family = lambda z: privacy.sampled_gaussian("s", clip, z, q, steps)  # noqa: E731
    z = privacy.calibrate(family, eps, delta)
    got = privacy.certify(family(z), delta)
    assert eps * (1 - 0.02) <= got <= eps


@_props(40)
@given(eps=st.floats(0.2, 8), share=st.floats(0.1, 0.9), log_delta=st.floats(-10, -3))
def test_calibrated_record_release_meets_its_target(eps, share, log_delta):
    delta = 10.0**log_delta
    label = privacy.randomized_response("label", share * eps)
    family = lambda s: privacy.NoisePlan((privacy.Release("gaussian", "x", 2.0, s), label))  # noqa: E731
    s = privacy.calibrate(family, eps, delta, start=5.0)
    got = privacy.certify(family(s), delta)
    assert eps * (1 - 2e-3) <= got <= eps
    assert independent.gaussian_rr_epsilon(2 / s, share * eps, delta) <= eps * (1 + 2e-3)


# ---------------------------------------------------------------------------
# the defects found by the cross-check, each pinned


def test_real_valued_labels_get_gaussian_noise_not_a_sign_flip():
    """Defect 1: randomized response on a real y kept |y|, released exactly up to sign, and
    certified ε = 1.  The target is now clipped to [−1, 1] and gets Gaussian noise σ_y whose
    release alone is (ε/2, δ); features and label compose to the target."""
    from dpcore.estimators import DPLinearRegression
    from dpcore.experiments.studies import tradeoff

    for mech in ("input-kang", "input-dbdp"):
        config = _config(mech, "linreg", "certified", repeats=2, options=(("keep_data", True),))
        problem, out = _release(config)
        y_released = out.released_data[1]
        assert not np.allclose(np.abs(y_released), np.abs(problem.y)), "labels leak their magnitude"
        sigma_y = out.extras["label_sigma"]
        assert independent.gdp_epsilon(2 / sigma_y, DELTA) == pytest.approx(EPS / 2, abs=1e-6)
        mu = math.hypot(2 / out.sigma, 2 / sigma_y)
        assert independent.gdp_epsilon(mu, DELTA) == pytest.approx(out.certified(DELTA)[0], rel=3e-9)
        assert out.certified(DELTA)[0] <= EPS
        resid = y_released - np.clip(problem.y, -1, 1)
        assert abs(resid.std() / sigma_y - 1) < 4 / math.sqrt(2 * resid.size)  # the noise that ran
    published = _release(_config("input-kang", "linreg", "published"))[1]
    assert math.isinf(published.certified(DELTA)[0])  # labels raw
    rows = {r["mechanism"]: r for r in tradeoff("synthetic-regression", 1.0, 1e-5, model="linreg", n=600, d=5,
                                                 iterations=10, repeats=1, mechanisms=["input-kang"],
                                                 noise_grid=())["rows"]}
    assert rows["input-kang"]["epsilon_certified"] <= 1.0
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3))
    with pytest.warns(PrivacyWarning):  # rows scaled onto the ball, a few targets clipped
        est = DPLinearRegression(mechanism="input-kang", epsilon=1.0, random_state=0).fit(X, X[:, 0] / 3)
    assert est.epsilon_certified_ <= 1.0 and est.epsilon_local_ <= 1.0


def test_bolt_on_long_runs_meet_their_target_with_unequal_batches():
    """Defect 4: batches of 49 and 50 (546 records) made long runs certify 1.014–1.022."""
    for T in (11, 110, 550):
        res = _release(_config("output-bolt-on", "logreg", "certified", iterations=T))[1]
        assert res.extras["smallest_batch"] == 49
        assert res.certified(DELTA)[0] <= EPS


def test_objective_gaussian_paper_constant_certifies_about_twice_the_target():
    """Defect 2: the paper's σ is proved for add/remove; under replace-one (ζ → 2ζ) Kifer et al.'s
    bound certifies ≈ 2 with it at target 1 on Breast Cancer (δ = 1e-5), so certified mode doubled σ
    (20.16).  Linear regression still does; logistic regression is now certified by its GLM privacy
    profile (issue 45), which certifies the paper's σ at 1.13 here (n = 546: the Jacobian term
    log(1 + λ_H/Δ) = 0.38 weighs) and calibrates σ = 12.0 for ε = 1."""
    pub = _release(_config("objective-gaussian", "logreg", "published"))[1]
    cert = _release(_config("objective-gaussian", "logreg", "certified"))[1]
    assert pub.sigma == pytest.approx(10.082, abs=1e-3)
    assert 1.9 < _kifer_epsilon(10.082092, DELTA, 2.0) < 2.1  # what Kifer's bound says of it
    assert 1.1 < pub.certified(DELTA)[0] < 1.2
    assert cert.sigma == pytest.approx(12.002, abs=1e-3) and cert.certified(DELTA)[0] <= EPS
    lin_pub = _release(_config("objective-gaussian", "linreg", "published"))[1]
    assert 1.9 < lin_pub.certified(DELTA)[0] < 2.1


def test_the_glm_profile_is_tighter_than_kifer_and_never_below_what_its_gaussian_part_leaks():
    """Issue 45, before/after at the noise Kifer et al.'s bound calibrates for ε = 2 (δ = 1e-5, ζ = 1,
    λ_H = 1/4, Adult's Δ = nλ = 36.2): that bound says 2; the GLM profile says 0.744 (2.7× tighter).
    It can never go below the Gaussian part an attacker sees, a Gaussian release of sensitivity 2ζ
    (μ = 2ζ/σ: 0.70 here, the audit's ceiling), nor below what the package's own integrator and the
    test's adaptive quadrature (at 21 correlations) both say."""
    from dpcore.mechanisms.objective import glm_objective_epsilon
    from dpcore.theory.formulas import kifer_sigma

    sigma = 2 * kifer_sigma(2.0, 1e-5, 1.0)
    big_delta = 36177 * 1e-3
    ours = glm_objective_epsilon(sigma, 1e-5, 1.0, 0.25, big_delta)
    second = independent.glm_objective_epsilon(sigma, 1e-5, 1.0, 0.25, big_delta)
    assert second * (1 - 1e-9) <= ours <= second * (1 + 2e-6)
    ceiling = independent.gdp_epsilon(2.0 / sigma, 1e-5)
    assert ceiling < ours < 0.75 and ceiling == pytest.approx(0.70, abs=0.01)
    assert 2.6 < 2.0 / ours < 2.8


def test_the_folded_tail_is_the_supremum_over_every_correlation():
    """glm_objective_delta reads sup_ρ P(|U| + |V| > w) as the larger of its ρ = 1 and ρ = 0 values.
    On 2,001 correlations × 4,001 points (stable tails, no 1 − F cancellation) no ρ exceeds it."""
    from scipy.stats import norm

    from dpcore.mechanisms.objective import folded_tail

    w = np.linspace(0.0, 20.0, 4001)[:, None]
    rho = np.linspace(0.0, 1.0, 2001)[None, :]
    ps = 2 * norm.sf(w / np.sqrt(2 + 2 * rho))
    d = np.sqrt(np.maximum(2 - 2 * rho, 0.0))
    pd = np.where(d > 0, 2 * norm.sf(w / np.where(d > 0, d, 1.0)), 0.0)
    every = ps + pd - ps * pd
    assert np.all(every <= folded_tail(w[:, 0])[:, None] * (1 + 1e-12) + 1e-300)


def test_the_glm_profile_holds_against_the_exact_privacy_loss_of_a_small_logistic_regression():
    """The derivation's second route: a 2-feature logistic regression on 6 records, one of them
    replaced by the same features with the other label (its gradient then moves by exactly ζ‖x‖), the
    perturbed objective solved by Newton's method for 200,000 draws of b, and the exact privacy loss
    at each output, log ν(b) − log ν(b') + log det H/det H' (b' the noise D' needs for the same θ).
    Its δ(ε) never exceeds the profile's (3 standard errors).  Check of the check: the profile
    computed with a quarter of ζ (a record's move counted as ζ/2, half what this replacement makes)
    is exceeded at some ε."""
    from scipy.special import expit

    from dpcore.mechanisms.objective import glm_objective_delta

    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, 2))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    X[0] = (1.0, 0.0)
    y = np.array([1.0, -1, 1, 1, -1, 1])
    yp = y.copy()
    yp[0] = -1.0
    big_delta, sigma, draws = 1.0, 0.8, 200_000

    def grad_hess(theta, y):  # of Σ log(1 + e^(−y θᵀx)) + (Δ/2)‖θ‖²
        m = (theta @ X.T) * y
        g = (-expit(-m) * y) @ X + big_delta * theta
        w = expit(m) * expit(-m)
        return g, np.einsum("kn,ni,nj->kij", w, X, X) + big_delta * np.eye(2)

    b = rng.normal(scale=sigma, size=(draws, 2))
    theta = np.zeros_like(b)
    for _ in range(60):
        g, H = grad_hess(theta, y)
        theta -= np.linalg.solve(H, (g + b)[..., None])[..., 0]
    g, H = grad_hess(theta, y)
    assert np.abs(g + b).max() < 1e-10
    gp, Hp = grad_hess(theta, yp)  # under D', b' = −(its gradient without noise) gives the same θ
    loss = (np.sum(gp**2, 1) - np.sum(b**2, 1)) / (2 * sigma**2) + np.log(np.linalg.det(H) / np.linalg.det(Hp))

    def profile(eps, zeta):
        mu = zeta / sigma
        return glm_objective_delta(eps, mu, math.log1p(0.25 / big_delta) + 2 * mu * mu)

    broken_exceeded = False
    for eps in (0.5, 1.0, 2.0, 3.0, 4.0):
        h = np.maximum(0.0, 1 - np.exp(eps - loss))
        emp, se = float(h.mean()), float(h.std() / math.sqrt(draws))
        assert emp <= profile(eps, 1.0) + 3 * se, eps
        broken_exceeded |= emp > profile(eps, 0.25) + 3 * se
    assert broken_exceeded


def test_chaudhuri_certificate_holds_against_the_exact_privacy_loss_and_is_nearly_reached():
    """The logistic certificate of objective-chaudhuri, by a second route: the exact privacy loss
    of small logistic regressions (3 features, 4 records, the last replaced; sum scaling with
    regularisation k), (‖b_D'(θ)‖ − ‖b_D(θ)‖)/s + log det H_D(θ) − log det H_D'(θ), at θ and
    records drawn at random (20,000 draws) and at the maxima a simplex search finds from 6 starts.
    It never exceeds the certificate, and the search reaches 0.9× of it.  Check of the check: the
    noise's part alone, 2/s (a certificate that forgot the Jacobian), is exceeded by the search."""
    from scipy.optimize import minimize
    from scipy.special import expit

    from dpcore.mechanisms.objective import logistic_objective_epsilon

    k, s, p, rows = 1.0, 20.0, 3, 5  # rows: 4 records of D and the replacement
    cert = logistic_objective_epsilon(s, k)

    def loss(theta, R):  # theta (..., p), R (..., rows, p): records scaled into the unit ball
        R = R / np.maximum(1.0, np.linalg.norm(R, axis=-1))[..., None]
        out = []
        for X in (R[..., :-1, :], np.concatenate([R[..., :-2, :], R[..., -1:, :]], axis=-2)):
            m = np.einsum("...np,...p->...n", X, theta)  # labels +1: a record's sign is its direction
            b = np.einsum("...np,...n->...p", X, expit(-m)) - k * theta
            H = np.einsum("...n,...np,...nq->...pq", expit(m) * expit(-m), X, X) + k * np.eye(p)
            out.append((np.linalg.norm(b, axis=-1), np.linalg.slogdet(H)[1]))
        (bD, lD), (bE, lE) = out
        return (bE - bD) / s + lD - lE

    rng = np.random.default_rng(3)
    scale = rng.choice([0.3, 1.0, 5.0, 30.0], size=(20_000, 1))
    drawn = loss(rng.standard_normal((20_000, p)) * scale, rng.standard_normal((20_000, rows, p)) * 2)
    assert drawn.max() <= cert
    best = -np.inf
    for _ in range(6):
        z0 = rng.standard_normal(p * (rows + 1)) * rng.choice([1.0, 5.0, 30.0])
        r = minimize(lambda z: -loss(z[:p], z[p:].reshape(rows, p)), z0, method="Nelder-Mead",
                     options={"maxiter": 20_000, "maxfev": 20_000, "xatol": 1e-10, "fatol": 1e-12})
        best = max(best, -r.fun)
    assert best <= cert
    assert best >= 0.9 * cert and best > 2 / s


def test_published_is_what_the_paper_printed_and_the_notes_say_so():
    """Defect 5: output-gaussian / bolt-on published the analytic σ; now the classical
    Δ√(2 ln(1.25/δ))/ε, and every mechanism explains its two calibrations."""
    for mech in ("output-gaussian", "output-bolt-on"):
        pub = _release(_config(mech, "logreg", "published"))[1]
        cert = _release(_config(mech, "logreg", "certified"))[1]
        sens = pub.plan.releases[0].sensitivity
        assert pub.sigma == pytest.approx(sens * math.sqrt(2 * math.log(1.25 / DELTA)) / EPS, rel=1e-12)
        assert pub.sigma > cert.sigma and pub.certified(DELTA)[0] < EPS  # conservative at ε = 1
    assert (_release(_config("output-laplace", "logreg", "published"))[1].sigma
            == pytest.approx(_release(_config("output-laplace", "logreg", "certified"))[1].sigma, rel=1e-9))
    assert "same" in REGISTRY["output-laplace"].calibration_note
    # Chaudhuri's: the paper's noise and Δ (two Jacobian logs) certify below ε by the logistic
    # certificate; certified runs less noise with the same regularisation
    pub = _release(_config("objective-chaudhuri", "logreg", "published"))[1]
    cert = _release(_config("objective-chaudhuri", "logreg", "certified"))[1]
    assert pub.sigma > cert.sigma and pub.certified(DELTA)[0] < EPS
    assert cert.certified(DELTA)[0] == pytest.approx(EPS, rel=1e-6)
    assert cert.extras["extra_l2"] == pub.extras["extra_l2"]
    for mech, cls in REGISTRY.items():
        assert cls.calibration_note and cls.privacy_event, mech


# -- next to no noise: certificates that stay finite upper bounds (the declared-ranges test found
#    an overflow, a 1.6 TiB PLD grid and a refused randomized response at the ends of ranges) ----


def test_gdp_epsilon_with_next_to_no_noise_is_the_gaussian_tail_bound_and_holds():
    """μ > 10⁴: ε = μ²/2 + μ√(2 ln 1/δ), from the loss N(μ²/2, μ²) and the Gaussian tail bound;
    the closed-form δ(ε) of μ-GDP must be ≤ δ there (it is an upper bound), and not by much."""
    from dpcore.privacy.accounting import gdp_delta, gdp_epsilon

    for mu, delta in ((2e4, 1e-5), (1e6, 1e-10), (3e10, 1e-5)):
        eps = gdp_epsilon(mu, delta)
        assert eps == pytest.approx(mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta)), rel=1e-12)
        assert gdp_delta(mu, eps) <= delta
        assert gdp_delta(mu, eps * (1 - 1e-3)) > 0 or mu > 1e6  # close to tight where δ(ε) resolves
    assert gdp_epsilon(1e300, 1e-5) == math.inf


def test_gaussian_and_randomized_response_with_next_to_no_noise_certify_by_basic_composition():
    """μ = 400 (beyond the PLD's grid).  Plain Gaussian features with a label response take the
    exact profile (gdp_rr_epsilon, checked against 60 digits in test_accounting) at every δ: never
    above basic composition ε_μ(δ) + Σ ε_rr, never below the Gaussian's own ε.  A Poisson-sampled
    Gaussian with a response has no exact route: there the certificate is basic composition,
    written out here."""
    from dpcore.privacy.accounting import gdp_epsilon

    plan = privacy.compose([privacy.gaussian("features", 2.0, 2.0 / 400.0),
                            privacy.NoisePlan((privacy.randomized_response("label", 0.5),))])
    eps = privacy.certify(plan, 1e-5)
    assert eps == privacy.gdp_rr_epsilon(400.0, (0.5,), 1e-5)
    assert gdp_epsilon(400.0, 1e-5) <= eps <= gdp_epsilon(400.0, 1e-5) + 0.5
    sampled = privacy.compose([privacy.sampled_gaussian("grad", 1.0, 2.0 / 400.0, 0.5, 1),
                               privacy.NoisePlan((privacy.randomized_response("label", 0.5),))])
    assert privacy.certify(sampled, 1e-5) == pytest.approx(gdp_epsilon(400.0, 1e-5) + 0.5, rel=1e-9)
    # noise that underflows the ratio: no finite certificate, and no OverflowError
    tiny = privacy.gaussian("θ", 1.0, 1e-300, count=5)
    assert privacy.certify(tiny, 1e-5) == math.inf


def test_a_randomized_response_with_next_to_no_epsilon_adds_its_epsilon():
    """ε_rr = 1e-12: the flip probability rounds to ½, which dp-accounting refuses; the response
    then composes by adding its ε (an upper bound), so the plan certifies the Gaussian's ε + 1e-12."""
    g = privacy.gaussian("features", 1.0, 2.0)
    plan = privacy.compose([g, privacy.NoisePlan((privacy.randomized_response("label", 1e-12),))])
    assert privacy.certify(plan, 1e-5) == pytest.approx(privacy.certify(g, 1e-5) + 1e-12, rel=1e-9)
    assert privacy.certify(plan, 1e-5) >= privacy.certify(g, 1e-5)


def test_a_choice_and_a_sampled_gaussian_with_responses_certify_soundly_below_the_pld_resolution():
    """δ = 1e-20, below where the PLD's FFT composition stays monotone: a choice between two DP-SGD
    plans composed with a label response certifies by routes exact at any δ — the larger
    alternative's certificate plus the response's ε (basic composition; a response spends no δ),
    written out here — and never below the (valid) PLD value at the PLD's smallest δ, nor below the plan it dominates."""
    from dpcore.privacy.accounting import PLD_MIN_DELTA

    loud = privacy.sampled_gaussian("grad", 1.0, 1.0, 0.01, 1000)
    quiet = privacy.sampled_gaussian("grad", 1.0, 1.2, 0.01, 1000)
    label = privacy.NoisePlan((privacy.randomized_response("label", 1.0),))
    plan = privacy.compose([privacy.any_of("tuning", [loud, quiet]), label])
    eps = privacy.certify(plan, 1e-20)
    by_hand = max(privacy.certify(loud, 1e-20), privacy.certify(quiet, 1e-20)) + 1.0
    assert eps == pytest.approx(by_hand, rel=1e-12)
    assert eps >= privacy.certify(plan, PLD_MIN_DELTA) and eps >= privacy.certify(privacy.compose([loud, label]), 1e-20)
    # a sampled Gaussian and responses without a choice: the smaller of the sampled Gaussian's own
    # certificate plus the response's ε, and the unsampled μ = 2√T/z through the exact profile
    plan2 = privacy.compose([loud, label])
    mu = 2.0 / 1.0 * math.sqrt(1000)
    unsampled = privacy.gdp_rr_epsilon(mu, (1.0,), 1e-20)
    assert unsampled > 1000 and privacy.certify(plan2, 1e-20) == pytest.approx(
        min(unsampled, privacy.certify(loud, 1e-20) + 1.0), rel=1e-12)
    assert privacy.certify(plan2, 1e-20) >= privacy.certify(plan2, PLD_MIN_DELTA)
    # unsampled Gaussians with many responses (beyond the exact route): μ-GDP plus each response
    many = privacy.compose([privacy.gaussian("x", 1.0, 1.0), privacy.NoisePlan(
        (privacy.Release("randomized-response", "labels", epsilon=0.01, count=100),))])
    assert privacy.certify(many, 1e-20) <= privacy.certify(privacy.gaussian("x", 1.0, 1.0), 1e-20) + 1.0 + 1e-9
