"""Batched optimisers: R batched runs equal R separate runs; hooks behave."""

import numpy as np
import pytest

from dpcore import datasets as D
from dpcore.erm import solve_erm
from dpcore.models import LinReg, LogReg, MLP
from dpcore.optim import BatchRNG, gradient_descent, run_seeds, sgd

SEEDS = run_seeds(7, 4)


def _batched_vs_separate(fn, rtol=1e-10, atol=1e-13):
    batched = fn(SEEDS)
    for r, s in enumerate(SEEDS):
        single = fn([s])
        np.testing.assert_allclose(batched.theta[r], single.theta[0], rtol=rtol, atol=atol)
        np.testing.assert_allclose(batched.loss_trace[:, r], single.loss_trace[:, 0], rtol=rtol)


def test_run_seeds():
    assert run_seeds(7, 3) == [7, 8, 9]


def test_noisy_gd_batched_equals_separate():
    ds = D.load("breast-cancer")
    m = LogReg()
    _batched_vs_separate(lambda seeds: gradient_descent(
        m, ds.X_train, ds.y_train, m.init(len(seeds), ds.d), iterations=30, learning_rate=1.0,
        rngs=BatchRNG(seeds), noise_std=0.05))


@pytest.mark.parametrize("mode", ["batch", "poisson"])
def test_clipped_sgd_batched_equals_separate(mode):
    ds = D.load("credit-card")
    m = LogReg()
    kw = {"batch_size": 32} if mode == "batch" else {"sample_rate": 0.05}
    _batched_vs_separate(lambda seeds: sgd(
        m, ds.X_train, ds.y_train, m.init(len(seeds), ds.d), iterations=25, learning_rate=0.5,
        rngs=BatchRNG(seeds), clip_norm=0.5, noise_std=0.1, **kw))


@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-10), ("float32", 1e-5)])
def test_mlp_sgd_batched_equals_separate(monkeypatch, dtype, rtol):
    """Exact in float64; the default float32 training path to single-precision rounding."""
    monkeypatch.setattr(MLP, "compute_dtype", dtype)
    ds = D.load("iris")
    m = MLP()
    _batched_vs_separate(lambda seeds: sgd(
        m, ds.X_train, ds.y_train, m.init(len(seeds), ds.d, BatchRNG(seeds, stream=1)),
        iterations=20, learning_rate=0.5, rngs=BatchRNG(seeds), sample_rate=0.2, clip_norm=1.0,
        noise_std=0.01), rtol=rtol, atol=rtol * 1e-3)


def test_noiseless_gd_converges_to_exact_minimiser():
    ds = D.load("breast-cancer")
    m = LogReg(lam=1e-2)
    star = solve_erm(m, ds.X_train, ds.y_train)
    out = gradient_descent(m, ds.X_train, ds.y_train, m.init(2, ds.d), iterations=3000,
                           learning_rate=1.0 / (m.smoothness + m.lam), rngs=BatchRNG([0, 1]))
    gap = m.loss(out.theta, ds.X_train, ds.y_train) - star.loss
    assert np.all(gap >= -1e-12) and np.all(gap < 1e-8)
    assert np.all(np.diff(out.loss_trace[:, 0]) <= 1e-15)  # GD with step 1/β is monotone


def test_projected_gd_stays_in_ball():
    ds = D.load("synthetic-regression", n=500, d=5)
    m = LinReg(radius=0.2)
    out = gradient_descent(m, ds.X_train, ds.y_train, m.init(3, ds.d), iterations=50,
                           learning_rate=1.0, rngs=BatchRNG([0, 1, 2]), noise_std=1.0)
    assert np.linalg.norm(out.theta, axis=1).max() <= 0.2 + 1e-12


def test_noise_std_has_the_stated_scale():
    # With a zero-gradient model step (lr on noise only) the update is −lr·noise exactly.
    ds = D.load("iris")
    m = LogReg(lam=0.0)
    rngs = BatchRNG(list(range(200)))
    hook_seen = []

    def hook(t, g, r):
        hook_seen.append(t)
        return g - m.grad(np.zeros_like(g), ds.X_train, ds.y_train)  # remove the data gradient

    out = gradient_descent(m, ds.X_train, ds.y_train, m.init(200, ds.d), iterations=1,
                           learning_rate=1.0, rngs=rngs, noise_std=0.3, grad_hook=hook)
    z = -out.theta.ravel() / 0.3
    # the sample std of 1000 N(0,1) draws lies within ±10% with overwhelming probability
    assert abs(z.std() - 1) < 0.1 and abs(z.mean()) < 0.15
    assert hook_seen == [0]


def test_poisson_batch_sizes_are_binomial():
    rngs = BatchRNG(list(range(400)))
    idx, mask = rngs.poisson_batch(1000, 0.05)
    sizes = mask.sum(axis=1)
    # mean of 400 Binomial(1000, .05) sizes: sd of the mean = sqrt(47.5/400) ≈ 0.34; 5 sd bound
    assert abs(sizes.mean() - 50) < 5 * np.sqrt(1000 * 0.05 * 0.95 / 400)
    for r in range(5):
        k = int(sizes[r])
        assert len(set(idx[r, :k].tolist())) == k


def test_sgd_requires_one_sampling_mode():
    ds = D.load("iris")
    m = LogReg()
    with pytest.raises(ValueError, match="exactly one"):
        sgd(m, ds.X_train, ds.y_train, m.init(1, ds.d), iterations=1, learning_rate=1.0,
            rngs=BatchRNG([0]))


def test_a_diverged_run_is_said_out_loud_and_left_out_of_the_means():
    """An absurd learning rate (the declared maximum, 1e6, over 200 steps) makes the runs non-finite:
    the result says how many diverged, marks them, and averages the finite runs only (not the
    majority-class accuracy a NaN θ predicts)."""
    import warnings as _w
    from dpcore.experiments.run import RunSpec, run
    spec = RunSpec(dataset="breast-cancer", mechanism="gradient-dpgd", learning_rate=1e6, iterations=200, repeats=3)
    with _w.catch_warnings():
        _w.simplefilter("error", RuntimeWarning)  # overflow on the way is not printed as noise
        rec = run(spec).to_dict()
    assert rec["diverged_runs"] == 3 and all(r["diverged"] for r in rec["runs"])
    assert any("3 of 3 runs diverged" in w for w in rec["warnings"])
    assert rec["accuracy_mean"] is None or rec["accuracy_mean"] != rec["accuracy_mean"]  # no mean of nothing
    fine = run(RunSpec(dataset="breast-cancer", mechanism="gradient-dpgd", iterations=50, repeats=3)).to_dict()
    assert fine["diverged_runs"] == 0 and not any("diverged" in r for r in fine["runs"])
    from dpcore.metrics import summarize  # a mix: the finite values only, n counting them
    s = summarize([0.5, float("nan"), 0.7])
    assert s["n"] == 2 and abs(s["mean"] - 0.6) < 1e-15


@pytest.mark.parametrize("mechanism, model", [("gradient-dpgd", "logreg"), ("gradient-dpgd", "mlp"),
                                              ("gradient-dpsgd", "logreg"), ("input-kang", "logreg"),
                                              ("input-dbdp", "logreg")])
def test_a_run_tells_its_loss_curve_as_it_grows_without_changing_a_number(mechanism, model):
    """Context.on_trace hears the curve after each of its points (what Explore draws while a
    long run trains): every call extends the last, and the last is the run's whole curve;
    the run's numbers are those of a run nobody listened to."""
    from dpcore.experiments.context import Context
    from dpcore.experiments.run import RunSpec, run

    heard = []
    spec = RunSpec(dataset="iris", model=model, mechanism=mechanism, iterations=12, repeats=2, lam=2e-3)
    got = run(spec, ctx=Context(trace_points=5).with_(on_trace=lambda s, t: heard.append((s.copy(), t.copy()))))
    quiet = run(spec, ctx=Context(trace_points=5))
    assert np.array_equal(got.gap, quiet.gap) and np.array_equal(got.loss_trace, quiet.loss_trace)
    assert len(heard) == len(got.trace_steps) == 5
    for k, (steps, trace) in enumerate(heard):
        assert trace.shape == (k + 1, 2)
        np.testing.assert_array_equal(steps, got.trace_steps[:k + 1])
        np.testing.assert_array_equal(trace, got.loss_trace[:k + 1])


@pytest.mark.parametrize("mechanism, clip", [("gradient-dpsgd", None), ("input-dbdp", None), ("gradient-dpgd", 0.3)])
def test_runs_split_across_threads_give_the_bits_of_the_batch(monkeypatch, mechanism, clip):
    """The GLMs' mini-batch sums run the runs in groups on the pool's threads: on a shared sparse X
    (DP-SGD on Adult) read in place by the compiled kernels, on per-run data (input perturbation's
    releases) gathered there; DP-GD's clipped sum goes block by block through the sparse twin.  Each
    must be the bits of the same computation on one thread: the batched path where a model does
    not declare its runs independent, DP-GD's fixed blocks in turn."""
    from dpcore import models, optim
    from dpcore.numerics import linalg
    from dpcore.experiments.context import Context
    from dpcore.experiments.run import RunSpec, run
    from pools import CountingPool  # tests/pools.py

    spec = RunSpec(dataset="adult", mechanism=mechanism, epsilon=2.0, repeats=3, iterations=25, clip_norm=clip)
    monkeypatch.setattr(optim, "SPLIT_GATHER_BYTES", 0)  # the split even for these small batches
    split_calls, in_place = [], []
    real = optim._split_clipped_sums
    monkeypatch.setattr(optim, "_split_clipped_sums", lambda *a: split_calls.append(1) or real(*a))
    sampled = models._GLM.sampled_clipped_sum
    monkeypatch.setattr(models._GLM, "sampled_clipped_sum",
                        lambda self, *a: (lambda got: in_place.append(got is not None) or got)(sampled(self, *a)))
    pool = CountingPool()
    split = run(spec, ctx=Context(pool=pool))
    assert pool.calls > 0  # the threaded branches ran: the kernels on the shared matrix, the split elsewhere
    assert any(in_place) == (mechanism == "gradient-dpsgd") and bool(split_calls) == (mechanism == "input-dbdp")
    monkeypatch.setattr(models.LogReg, "runs_independent", False)
    with linalg.limit_threads(1):
        batched = run(spec, ctx=Context())
    for a, b in ((split.gap, batched.gap), (split.accuracy, batched.accuracy), (split.loss_trace, batched.loss_trace)):
        np.testing.assert_array_equal(a, b)
