"""Central mechanisms: registry, noise scales against their formulas, samplers, guarantees."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from dpcore.erm import solve_erm
from dpcore.exceptions import ModelError, ParameterError, PrivacyWarning
from dpcore.experiments.run import RunSpec, run
from dpcore.mechanisms import REGISTRY, Mechanism, register
from dpcore.models import LogReg
from dpcore.numerics.noise import gamma_norm
from dpcore.optim import BatchRNG


import independent  # tests/independent.py

CENTRAL = ["output-laplace", "output-gaussian", "output-bolt-on", "objective-chaudhuri",
           "objective-gaussian", "gradient-dpgd", "gradient-bassily", "gradient-dpsgd", "gradient-lssgd"]


def test_registry_has_every_central_mechanism_with_metadata():
    assert set(CENTRAL) <= set(REGISTRY)
    for mid, cls in REGISTRY.items():
        meta = cls.metadata()
        assert meta["id"] == mid and meta["family"] and meta["paper"] and meta["models"]
        assert meta["privacy_notion"] in ("(ε, 0)", "(ε, δ)", "none")
        assert meta["neighbouring"] == "replace-one"


def test_every_mechanism_has_a_short_legend_name_of_its_own():
    """Legends and notes name mechanisms by a few words, not by the raw id (#18 §3)."""
    from dpcore.mechanisms import short_name

    shorts = [cls.short for cls in REGISTRY.values()]
    assert all(0 < len(s) <= 24 for s in shorts), shorts
    assert len(set(shorts)) == len(shorts)  # two lines never share a legend entry
    assert not set(shorts) & (set(REGISTRY) - {"non-private"})  # none is its id
    assert short_name("gradient-dpgd") == "DP-GD" and short_name("distributed-wddp") == "WD-DP"
    assert short_name("skew 2") == "skew 2"  # other groupings pass through


def test_registry_refuses_duplicates():
    class Dup(Mechanism):
        id = "gradient-dpgd"
        family = "gradient"

    with pytest.raises(ValueError, match="already registered"):
        register(Dup)


def _cfg(mech, **kw):
    base = dict(dataset="breast-cancer", mechanism=mech, epsilon=1.0, delta=1e-5, iterations=50, repeats=2)
    base.update(kw)
    return RunSpec(**base)


# -- noise scales equal their formulas (hand-written here, independently of the code) -------

N_BC, LAM = 546, 1e-3
SAG = 3.730631634  # σ_AG(1, 1e-5), Balle & Wang


@pytest.mark.parametrize("mech, calibration, expected", [
    ("output-laplace", "certified", 2 * 1 / (N_BC * LAM * 1.0)),
    ("output-gaussian", "certified", 2 / (N_BC * LAM) * (1 - (1 - 1.0 * LAM) ** 50) * SAG),
    # batches of 50 over 546 records: k = 11 per pass, the smallest holds ⌊546/11⌋ = 49
    ("output-bolt-on", "certified", 2 / (LAM * 11 * 49) * SAG),
    ("output-gaussian", "published", 2 / (N_BC * LAM) * (1 - (1 - 1.0 * LAM) ** 50)
     * math.sqrt(2 * math.log(1.25 / 1e-5))),
    ("output-bolt-on", "published", 2 / (LAM * 11 * 49) * math.sqrt(2 * math.log(1.25 / 1e-5))),
    # certified: log(1 + 1/(4nλ)) ≤ ε/2, so Δ = 0 and the scale solves the logistic certificate,
    # maximised by brute force in tests/independent.py
    ("objective-chaudhuri", "certified", lambda: independent.logistic_objective_scale(1.0, N_BC * LAM)),
    ("objective-chaudhuri", "published", 2 / (1.0 - 2 * math.log(1 + 0.25 / (N_BC * LAM)))),
    # Kifer et al.'s σ with ζ = 1 (add/remove); certified: the logistic GLM's privacy profile (ζ = 1,
    # λ_H = 1/4, Δ = max(nλ, 2λ_H/ε)), solved by tests/independent.py's own quadrature
    ("objective-gaussian", "published", math.sqrt(8 * math.log(2 / 1e-5) + 4)),
    ("objective-gaussian", "certified",
     lambda: independent.glm_objective_sigma(1.0, 1e-5, 1.0, 0.25, max(N_BC * LAM, 2 * 0.25 / 1.0))),
    ("gradient-dpgd", "certified", 2 / N_BC * math.sqrt(50) * SAG),
    ("gradient-dpgd", "published", math.sqrt(50 * math.log(1e5)) / N_BC),
    ("gradient-bassily", "published", math.sqrt(32 * 50 * math.log(N_BC / 1e-5) * math.log(1e5)) / N_BC),
    ("gradient-dpsgd", "published", (256 / N_BC) * math.sqrt(50 * math.log(1e5))),
])
def test_noise_scale_equals_formula(mech, calibration, expected):
    # a solved expectation is computed here, not at collection (10 s in every process that collects)
    expected = expected() if callable(expected) else expected
    res = run(_cfg(mech, calibration=calibration))
    assert res.sigma == pytest.approx(expected, rel=1e-6)


def test_certified_sampled_mechanisms_meet_target():
    for mech in ("gradient-dpsgd", "gradient-lssgd", "gradient-bassily"):
        res = run(_cfg(mech, iterations=30))
        assert 0.97 <= res.epsilon_certified <= 1.0


def test_dpgd_published_under_calibrates_and_certified_meets_target():
    pub = run(_cfg("gradient-dpgd", calibration="published", c=1.0))
    cert = run(_cfg("gradient-dpgd"))
    assert pub.epsilon_certified > pub.epsilon_target == 1.0
    assert cert.epsilon_certified <= 1.0 and cert.epsilon_certified == pytest.approx(1.0, rel=1e-6)
    assert pub.sigma < cert.sigma


# -- the Gamma-norm sampler ----------------------------------------------------------------

@pytest.mark.parametrize("dim, scale", [(1, 0.5), (3, 2.0), (10, 0.1)])
def test_gamma_norm_sampler_goodness_of_fit(dim, scale):
    b = gamma_norm(BatchRNG(list(range(4000))), dim, scale)
    norms = np.linalg.norm(b, axis=1)
    assert stats.kstest(norms, stats.gamma(a=dim, scale=scale).cdf).pvalue > 1e-3
    if dim >= 2:
        u = b[:, 0] / norms  # first coordinate of a uniform direction: (u+1)/2 ~ Beta((d−1)/2, (d−1)/2)
        a = (dim - 1) / 2
        assert stats.kstest((u + 1) / 2, stats.beta(a, a).cdf).pvalue > 1e-3
    else:
        signs = np.sign(b[:, 0])
        assert abs(signs.mean()) < 4 / math.sqrt(len(signs))  # fair ±1 within 4 sd


# -- sensitivity is real ------------------------------------------------------------------

def test_output_laplace_sensitivity_on_random_neighbours():
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(40):
        n, d = int(rng.integers(10, 60)), int(rng.integers(1, 6))
        X = rng.standard_normal((n, d))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
        X2, y2 = X.copy(), y.copy()
        i = int(rng.integers(n))
        v = rng.standard_normal(d)
        X2[i] = v / np.linalg.norm(v)
        y2[i] = -y[i]
        lam = float(10 ** rng.uniform(-2, 0))
        m = LogReg(lam=lam)
        diff = np.linalg.norm(solve_erm(m, X, y).theta - solve_erm(m, X2, y2).theta)
        bound = 2 * m.lipschitz / (n * lam)
        assert diff <= bound * (1 + 1e-9)
        worst = max(worst, diff / bound)
    assert worst > 0.2  # the bound is not vacuous on these draws


# -- as ε grows, every mechanism approaches the non-private model --------------------------

@pytest.mark.parametrize("mech", CENTRAL)
def test_huge_epsilon_approaches_non_private(mech):
    kw = dict(iterations=400, repeats=2, epsilon=1000.0, delta=1e-5)  # the largest ε accepted
    if mech == "gradient-bassily":
        kw.update(iterations=3000, calibration="published", learning_rate=2.0)
    res = run(_cfg(mech, **kw))
    assert abs(res.accuracy.mean() - res.accuracy_nonprivate) <= 0.03


# -- refusals and warnings -------------------------------------------------------------------

@pytest.mark.parametrize("mech", ["output-laplace", "output-gaussian", "objective-chaudhuri"])
def test_strong_convexity_required(mech):
    with pytest.raises(ModelError, match="does not support model 'mlp'"):
        run(_cfg(mech, model="mlp"))
    with pytest.raises(ModelError, match="λ > 0|strongly convex"):
        run(_cfg(mech, lam=0.0))


STRONGLY_CONVEX = sorted(m for m, cls in REGISTRY.items() if cls.strongly_convex)


def test_the_mechanisms_whose_proof_needs_strong_convexity_declare_it():
    """Output and objective perturbation's sensitivities are 2G/(nλ)-type: each declares it."""
    assert STRONGLY_CONVEX == ["objective-chaudhuri", "output-bolt-on", "output-gaussian", "output-laplace"]


@pytest.mark.parametrize("mech", STRONGLY_CONVEX)
def test_a_declared_need_for_strong_convexity_refuses_lambda_zero_by_the_mechanism(mech):
    """λ = 0 on least squares (whose exact minimiser exists, so the refusal is the mechanism's own, not
    the solver's); a model a mechanism supports is the one it is asked about."""
    model = "linreg" if "linreg" in REGISTRY[mech].models else "logreg"
    dataset = "synthetic-regression" if model == "linreg" else "breast-cancer"
    with pytest.raises(ModelError, match=f"{mech} needs a λ-strongly convex objective"
                       if model == "linreg" else "λ > 0|strongly convex"):
        run(RunSpec(dataset=dataset, model=model, mechanism=mech, lam=0.0, n=500 if model == "linreg" else None,
                    d=5 if model == "linreg" else None, repeats=1))


def test_privacy_warning_when_delta_is_large():
    res = run(_cfg("gradient-dpgd", delta=0.01))
    assert any("≥ 1/n" in w for w in res.warnings)


def test_privacy_warning_class_is_raised_from_core_checks():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        run(_cfg("gradient-dpgd", delta=0.01))
    # warnings are captured into the result, not leaked to the caller
    assert not [x for x in w if issubclass(x.category, PrivacyWarning)]


def test_mlp_dpgd_and_dpsgd_run_with_clipping():
    for mech in ("gradient-dpgd", "gradient-dpsgd"):
        res = run(_cfg(mech, dataset="iris", model="mlp", iterations=30, clip_norm=1.0))
        assert res.accuracy.shape == (2,) and res.epsilon_certified <= 1.0


@pytest.mark.parametrize("mech", ["output-laplace", "objective-gaussian", "gradient-dpgd", "gradient-dpsgd"])
def test_batched_equals_separate_through_run(mech):
    batched = run(_cfg(mech, repeats=3, seed=11, iterations=20))
    for r in range(3):
        single = run(_cfg(mech, repeats=1, seed=11 + r, iterations=20))
        np.testing.assert_allclose(batched.gap[r], single.gap[0], rtol=1e-9, atol=1e-14)


def test_the_registry_lists_mechanisms_in_teaching_order():
    """Users see the mechanisms in this order everywhere (the registration order): the
    baseline, then where the noise enters, from the output back to the data and the clients."""
    from dpcore.mechanisms.base import FAMILIES

    ranks = [FAMILIES.index(cls.family) for cls in REGISTRY.values()]
    assert ranks == sorted(ranks), [cls.id for cls in REGISTRY.values()]
    assert next(iter(REGISTRY)) == "non-private"


# -- stacked configurations (run_many) ---------------------------------------------------

_STACKABLE = ["gradient-dpgd", "gradient-dpsgd", "gradient-bassily", "gradient-lssgd",
              "distributed-wddp", "distributed-avg"]


@pytest.mark.parametrize("mechanism", _STACKABLE)
def test_a_stack_of_configurations_gives_each_ones_own_result(mechanism):
    """An ε × learning-rate grid trained as one batch: every spec's sigma, certified ε and
    seeds are its single run's, its gaps and accuracies equal to the rounding of the
    batched products (dense data)."""
    from dataclasses import replace

    from dpcore.experiments.run import RunSpec, run, run_many, stack_groups

    base = RunSpec(dataset="breast-cancer", mechanism=mechanism, iterations=30, repeats=3,
                   clients=4 if mechanism.startswith("distributed") else None)
    specs = [replace(base, epsilon=e, learning_rate=lr) for e in (0.3, 1.0, 4.0) for lr in (0.5, 1.0)]
    assert stack_groups(specs) == [list(range(6))]
    stacked = run_many(specs)
    for spec, got in zip(specs, stacked):
        alone = run(spec)
        assert got.spec == spec and got.seeds == alone.seeds
        assert got.sigma == alone.sigma and got.epsilon_certified == alone.epsilon_certified
        np.testing.assert_allclose(got.gap, alone.gap, rtol=1e-9, atol=1e-13)
        np.testing.assert_allclose(got.accuracy, alone.accuracy, atol=1.5 / got.n_train)
        assert got.extras.keys() == alone.extras.keys()
    # the noise differs by ε: the stack did not give every configuration the same runs
    assert len({float(r.gap.mean()) for r in stacked}) == len(specs)


def test_a_stack_on_sparse_data_is_bit_for_bit_its_single_runs():
    from dataclasses import replace

    from dpcore.experiments.run import RunSpec, run, run_many

    base = RunSpec(dataset="adult", mechanism="gradient-dpgd", iterations=15, repeats=2)
    specs = [replace(base, epsilon=e, learning_rate=lr) for e in (0.1, 2.0) for lr in (0.5, 2.0)]
    for got, spec in zip(run_many(specs), specs):
        alone = run(spec)
        np.testing.assert_array_equal(got.gap, alone.gap)
        np.testing.assert_array_equal(got.accuracy, alone.accuracy)
        np.testing.assert_array_equal(got.loss_trace, alone.loss_trace)


def test_stack_groups_keep_other_settings_apart_and_refusals_to_their_spec(monkeypatch):
    from dataclasses import replace

    from dpcore.experiments.run import RunSpec, run_outcomes, stack_groups
    from dpcore.mechanisms.gradient import GradientDPGD

    base = RunSpec(dataset="iris", mechanism="gradient-dpgd", iterations=10, repeats=2)
    specs = [base, replace(base, epsilon=2.0), replace(base, iterations=20),
             replace(base, mechanism="output-gaussian"), replace(base, mechanism="output-gaussian", epsilon=2.0),
             replace(base, epsilon=3.0)]
    assert stack_groups(specs) == [[0, 1, 5], [2], [3], [4]]  # T differs; output perturbation never stacks
    assert stack_groups(specs, 4) == [[0, 1], [5], [2], [3], [4]]  # a context's stack_runs of 4

    real = GradientDPGD.noise

    def refuse_eps_2(self, problem, config):
        if config.epsilon == 2.0:
            raise ParameterError("refused for the test")
        return real(self, problem, config)

    monkeypatch.setattr(GradientDPGD, "noise", refuse_eps_2)
    out = run_outcomes(specs)
    assert isinstance(out[1], ParameterError)
    assert all(not isinstance(o, Exception) for i, o in enumerate(out) if i != 1)
    assert [o.spec for i, o in enumerate(out) if i != 1] == [s for i, s in enumerate(specs) if i != 1]


@pytest.mark.parametrize("mechanism", ["gradient-dpgd", "gradient-dpsgd"])
def test_mlp_float32_training_leaves_the_guarantee_and_the_accuracy(monkeypatch, mechanism):
    """The MLP trains in float32 (its heavy loops); against the float64 path: the same noise and
    certified ε (computed in float64), accuracies and gaps within single-precision drift."""
    from dpcore.experiments.context import Context
    from dpcore.experiments.run import RunSpec, run
    from dpcore.models import MLP

    spec = RunSpec(dataset="breast-cancer", model="mlp", mechanism=mechanism, epsilon=2.0,
                   iterations=40, repeats=4, lam=2e-3)
    single = run(spec, ctx=Context())
    monkeypatch.setattr(MLP, "compute_dtype", "float64")
    double = run(spec, ctx=Context())
    assert single.sigma == double.sigma and single.epsilon_certified == double.epsilon_certified
    assert abs(single.accuracy.mean() - double.accuracy.mean()) <= 0.01
    np.testing.assert_allclose(single.gap, double.gap, rtol=1e-3, atol=1e-5)
