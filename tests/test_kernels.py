"""The compiled kernels (dpcore/numerics/kernels.py) against a second route written here: the MLP's step,
DP-SGD's in-place mini-batch sums, Newton's sparse Grams, and the GLMs' coefficients with their
exponential.

For the MLP the second route is the textbook one: every per-example gradient of the network
built explicitly in float64 from its definition (θ = W1, b1, w2, b2; score = w2·tanh(W1x + b1) + b2;
loss −log σ(y·score)), each clipped to C on its own, weighted, summed.  The kernel never builds a
per-example gradient (it clips by a norm identity) and runs in float32 with a rational tanh, so the
two agree to float32 rounding, and the clipping bound holds for the vector actually summed.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from dpcore.numerics import kernels
from dpcore.numerics import linalg
from dpcore.models import CLIP_MARGIN_FLOAT32, MLP, make_model

#: float32 arithmetic over d + h ≈ 30 terms per entry, and the tanh's 5e-7: a generous 2e-5 relative
RTOL = 2e-5


def test_the_kernels_tanh_is_within_its_stated_error_everywhere():
    x = np.concatenate([np.linspace(-12, 12, 4_000_001), [-np.inf, np.inf, 0.0, 1e-30, -1e-30, 8.99, 9.01]])
    got = kernels.tanh32(x.astype(np.float32)).astype(np.float64)
    exact = np.tanh(x.astype(np.float32).astype(np.float64))
    assert np.abs(got - exact).max() <= kernels.TANH_ABS_ERROR
    assert np.abs(got).max() <= 1.0  # never outside tanh's range
    np.testing.assert_array_equal(kernels.tanh32(-x.astype(np.float32)), -kernels.tanh32(x.astype(np.float32)))


def _per_example_float64(theta, X, y, h):
    """(R, n, p) gradients from the definition, in float64; X (n, d) shared or (R, n, d)."""
    R, d = theta.shape[0], X.shape[-1]
    Xr = np.broadcast_to(X, (R, *X.shape[-2:])) if X.ndim == 2 else X
    yr = np.broadcast_to(y, (R, y.shape[-1])) if y.ndim == 1 else y
    W1 = theta[:, : h * d].reshape(R, h, d)
    b1 = theta[:, h * d : h * d + h]
    w2 = theta[:, h * d + h : h * d + 2 * h]
    b2 = theta[:, -1]
    out = []
    for r in range(R):
        rows = []
        for i in range(Xr.shape[1]):
            x, yi = Xr[r, i], yr[r, i]
            hid = np.tanh(W1[r] @ x + b1[r])
            score = w2[r] @ hid + b2[r]
            g = -yi / (1.0 + np.exp(yi * score))  # d(−log σ(y s))/ds
            dhid = g * w2[r] * (1.0 - hid**2)
            rows.append(np.concatenate([np.outer(dhid, x).ravel(), dhid, g * hid, [g]]))
        out.append(rows)
    return np.array(out)


def _clipped_sum_float64(theta, X, y, h, clip, weights=None):
    G = _per_example_float64(theta, X, y, h)
    norms = np.linalg.norm(G, axis=2)
    scale = np.minimum(1.0, clip / norms)
    if weights is not None:
        scale = scale * (weights if weights.ndim == 2 else weights[None, :])
    return np.einsum("rn,rnp->rp", scale, G)


def _problem(seed: int, n=40, d=7, R=3, one_hot=True, per_run=False):
    rng = np.random.default_rng(seed)
    if one_hot:  # a one-hot block and two numeric columns: the kernels skip the zeros
        X = np.zeros((R, n, d) if per_run else (n, d))
        cats = rng.integers(0, d - 2, size=X.shape[:-1])
        np.put_along_axis(X, cats[..., None], 1.0, axis=-1)
        X[..., -2:] = rng.uniform(-1, 1, size=(*X.shape[:-1], 2))
    else:
        X = rng.standard_normal((R, n, d) if per_run else (n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=-1, keepdims=True))
    y = np.where(rng.random((R, n) if per_run else n) < 0.5, -1.0, 1.0)
    model = MLP()
    theta = model.init(R, d, rngs=[np.random.default_rng(seed + r) for r in range(R)]) * 3.0
    return model, theta, X, y


@pytest.mark.parametrize("per_run", [False, True], ids=["shared-X", "per-run-X"])
@pytest.mark.parametrize("one_hot", [True, False], ids=["one-hot", "dense"])
@pytest.mark.parametrize("clip", [0.05, 1.0, np.inf])
def test_the_fused_clipped_sum_is_the_sum_of_clipped_per_example_gradients(per_run, one_hot, clip):
    model, theta, X, y = _problem(3, one_hot=one_hot, per_run=per_run)
    h = model.width(X.shape[-1])
    got = model.clipped_grad_sum(theta, X, y, clip)
    want = _clipped_sum_float64(theta, X, y, h, clip * (1 - CLIP_MARGIN_FLOAT32) if np.isfinite(clip) else np.inf)
    assert got.dtype == np.float64 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=RTOL * np.abs(want).max())


@pytest.mark.parametrize("shape", ["shared", "per-run"])
def test_weights_scale_each_row_and_a_zero_weight_row_adds_nothing(shape):
    model, theta, X, y = _problem(5)
    rng = np.random.default_rng(0)
    weights = rng.integers(0, 2, size=(theta.shape[0], X.shape[0]) if shape == "per-run" else X.shape[0]) * 1.0
    h = model.width(X.shape[-1])
    got = model.clipped_grad_sum(theta, X, y, 0.3, weights=weights)
    want = _clipped_sum_float64(theta, X, y, h, 0.3 * (1 - CLIP_MARGIN_FLOAT32), weights)
    np.testing.assert_allclose(got, want, rtol=0, atol=RTOL * np.abs(want).max())


def test_a_clipped_gradient_never_exceeds_the_clip_norm_the_accountant_uses():
    """One row at a time, so the sum is that row's clipped gradient: its float64 norm ≤ C, for
    rows whose gradients are 10³–10⁴ times C (the norm identity's rounding is what the margin covers)."""
    model, theta, X, y = _problem(7, n=60, R=4)
    theta *= 30.0
    C = 0.01
    worst = 0.0
    for i in range(X.shape[0]):
        g = model.clipped_grad_sum(theta, X[i:i + 1], y[i:i + 1], C)
        worst = max(worst, float(np.linalg.norm(g, axis=1).max()))
    assert worst <= C
    assert worst >= C * (1 - 1e-4)  # and the rows are clipped, not vanishing: the check can fail


def test_the_loss_from_the_fused_pass_is_the_float64_loss():
    model, theta, X, y = _problem(11, n=200)
    _, value = model.clipped_grad_sum_and_loss(theta, X, y, 1.0)
    np.testing.assert_allclose(value, model.loss(theta, X, y), rtol=1e-6)
    np.testing.assert_allclose(model.trace_loss(theta, X, y), model.loss(theta, X, y), rtol=1e-6)


def test_the_kernel_agrees_with_the_numpy_route_on_adult():
    """The bundled one-hot data, at the app's Explore setting (R = 5): the kernel and the
    numpy passes in float64 agree to float32 rounding."""
    from dpcore import datasets

    ds = datasets.load("adult")
    model = MLP()
    theta = model.init(5, ds.d, rngs=[np.random.default_rng(r) for r in range(5)])
    got = model.clipped_grad_sum(theta, ds.X_train, ds.y_train, 1.0)
    want = model._clipped_numpy(theta, ds.X_train, ds.y_train, 1.0, None, np.float64, False)[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=RTOL * np.abs(want).max())


def test_the_kernel_runs_a_row_block_at_a_time_and_any_chunking_sums_the_same():
    model, theta, X, y = _problem(13, n=300)
    h = model.width(X.shape[-1])
    W1, b1, w2, b2 = (np.ascontiguousarray(a, dtype=np.float32) for a in model.unpack(theta, X.shape[-1]))
    W1t = np.ascontiguousarray(W1.transpose(0, 2, 1))
    rows = linalg.nonzero_rows(X)
    Y = y.astype(np.float32)[None]
    whole = kernels.mlp_clipped_block(rows, 0, Y, W1t, b1, w2, b2, 0.5, np.zeros((1, 0)), 0, 300)
    parts = [kernels.mlp_clipped_block(rows, 0, Y, W1t, b1, w2, b2, 0.5, np.zeros((1, 0)), a, b)
             for a, b in ((0, 7), (7, 150), (150, 300))]
    for k in range(4):
        np.testing.assert_allclose(sum(p[k].astype(np.float64) for p in parts), whole[k], rtol=0,
                                   atol=1e-5 * np.abs(whole[k]).max())
    assert whole[0].shape == (3, X.shape[1], h)


# ---------------------------------------------------------------------------------------------
# a GLM's mini-batches read in place (DP-SGD on a shared one-hot matrix)


def _sparse_shared(n=4000, d=40, seed=0):
    """A shared matrix with a sparse twin: a few dense columns and one-hot blocks, rows in the ball."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n, d))
    X[:, :4] = rng.normal(size=(n, 4))
    for lo in range(4, d, 9):
        X[np.arange(n), rng.integers(lo, min(lo + 9, d), size=n)] = 1.0
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    linalg.share(X)
    assert linalg.is_sparse(X), "the test matrix must take the sparse route"
    return X, np.where(rng.random(n) < 0.4, 1.0, -1.0), rng


def _textbook_glm(model, theta, X, y, idx, clip, weights):
    """Σ_b w_rb · clip_C(∇ℓ(θ_r; x_i, y_i)), i = idx[r, b], built per example from the loss's
    derivative written here: logistic ℓ = log(1 + e^{−y z}), ℓ' = −y/(1 + e^{y z}); squared
    ℓ = (z − y)²/2, ℓ' = z − y."""
    out = np.zeros_like(theta)
    for r in range(theta.shape[0]):
        for b, i in enumerate(idx[r]):
            z = theta[r] @ X[i]
            d = -y[i] / (1.0 + np.exp(y[i] * z)) if model.id == "logreg" else z - y[i]
            g = d * X[i]
            g = g * min(1.0, clip / np.linalg.norm(g)) if np.isfinite(clip) else g
            out[r] += (1.0 if weights is None else weights[r, b]) * g
    return out


@pytest.mark.parametrize("model_id", ["logreg", "linreg"])
@pytest.mark.parametrize("clip", [0.05, 1.0, np.inf])
@pytest.mark.parametrize("poisson", [False, True])
def test_the_sampled_clipped_sum_is_the_textbook_sum_of_each_runs_batch(model_id, clip, poisson):
    from dpcore.models import make_model
    from dpcore.optim import BatchRNG
    from dpcore.numerics.linalg import run_groups as _run_groups

    model = make_model(model_id, lam=1e-3)
    X, y, rng = _sparse_shared()
    R = 5
    theta = rng.normal(size=(R, X.shape[1])) * 3
    rngs = BatchRNG(list(range(R)))
    idx, weights = rngs.poisson_batch(X.shape[0], 0.02) if poisson else (rngs.sample_batch(X.shape[0], 64), None)
    got = model.sampled_clipped_sum(theta, X, y, idx, weights, clip, None, _run_groups(R))
    want = _textbook_glm(model, theta, X, y, idx, clip, weights)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    # the gathered route the kernels replace, on the same batches
    gathered = np.stack([model.clipped_grad_sum(theta[r:r + 1], X[idx[r]], y[idx[r]], clip,
                                                None if weights is None else weights[r:r + 1])[0]
                         for r in range(R)])
    np.testing.assert_allclose(got, gathered, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_a_sampled_sum_is_none_without_a_sparse_twin_and_padding_adds_nothing():
    from dpcore.models import LogReg
    from dpcore.numerics.linalg import run_groups as _run_groups

    X, y, rng = _sparse_shared()
    theta = rng.normal(size=(2, X.shape[1]))
    dense = np.array(X)  # a writable copy: no twin
    assert LogReg().sampled_clipped_sum(theta, dense, y, np.zeros((2, 3), int), None, 1.0, None, _run_groups(2)) is None
    idx = np.array([[5, 9, 0, 0], [7, 0, 0, 0]])
    mask = np.array([[1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    got = LogReg().sampled_clipped_sum(theta, X, y, idx, mask, 1.0, None, _run_groups(2))
    want = LogReg().sampled_clipped_sum(theta, X, y, idx[:, :2], mask[:, :2], 1.0, None, _run_groups(2))
    np.testing.assert_array_equal(got, want)


def test_dpsgd_on_a_shared_sparse_matrix_takes_the_in_place_route_and_trains_as_the_gathered_one(monkeypatch):
    """The optimiser itself: the same run with the kernels and with the route they replace (the
    model's sampled sum switched off) ends at the same parameters to rounding."""
    from dpcore import optim
    from dpcore.models import LogReg

    X, y, _ = _sparse_shared()
    model = LogReg(lam=1e-3)

    def train():
        return optim.sgd(model, X, y, np.zeros((3, X.shape[1])), iterations=60, learning_rate=1.0,
                         rngs=optim.BatchRNG([0, 1, 2]), sample_rate=0.02, clip_norm=0.5, noise_std=0.01).theta

    calls = []
    real = LogReg.sampled_clipped_sum
    monkeypatch.setattr(LogReg, "sampled_clipped_sum", lambda self, *a: calls.append(1) or real(self, *a))
    fast = train()
    assert len(calls) == 60
    monkeypatch.setattr(LogReg, "sampled_clipped_sum", lambda self, *a: None)
    np.testing.assert_allclose(fast, train(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("signed", [False, True])
def test_the_grams_from_a_rows_pairs_of_non_zeros_are_the_dense_products(signed):
    """``Xᵀ diag(w_r) X`` built pair by pair from the CSR rows (Newton's Hessians on one-hot data)
    against the dense product written here, for several runs, zero and negative weights, and rows
    with one non-zero or none."""
    from dpcore.numerics.linalg import run_groups

    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 30)) * (rng.random((3000, 30)) < 0.15)
    X[:7] = 0.0  # empty rows
    X[7:20, 1:] = 0.0  # one non-zero
    csr = __import__("scipy.sparse", fromlist=["csr_array"]).csr_array(X)
    W = rng.random((3, X.shape[0]))
    W[:, ::5] = 0.0
    if signed:
        W -= 0.5
    got = kernels.csr_grams(csr, W, run_groups(3))
    want = np.stack([(X * w[:, None]).T @ X for w in W])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13 * np.abs(want).max())
    np.testing.assert_array_equal(got, got.transpose(0, 2, 1))  # exactly symmetric


def test_newtons_hessian_on_a_sparse_matrix_takes_the_compiled_grams():
    from dpcore.models import LogReg

    X, y, rng = _sparse_shared()
    theta = rng.normal(size=(2, X.shape[1]))
    model = LogReg(lam=1e-3)
    dense = np.array(X)  # no twin: the dense products
    np.testing.assert_allclose(model.hessian(theta, X, y), model.hessian(theta, dense, y), rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------------
# a GLM's compiled coefficients (kernels.glm_coef) and their exponential (kernels.exp)

#: float64's unit roundoff
U = 2.0**-53


def test_the_kernels_exp_is_within_two_ulp_of_the_exact_exponential_and_clamps_where_stated():
    x = np.concatenate([np.linspace(-708.0, 709.0, 2_000_001), np.random.default_rng(7).standard_normal(10**6) * 30,
                        [0.0, -0.0, 1e-300, -1e-300, 0.5 * np.log(2), -0.5 * np.log(2)]])
    exact = np.array([math.exp(v) for v in x])  # glibc's exp: correctly rounded in practice (< 1 ulp)
    rel = np.abs(kernels.exp(x) - exact) / exact
    assert rel.max() <= 3 * U  # measured 2.0 u: the reduction's and Horner's roundings
    # outside [−708, 709] the argument is clamped (e^x stays a normal number): what glm_coef relies on
    np.testing.assert_array_equal(kernels.exp(np.array([-1000.0, -708.0, 709.0, 1000.0, np.inf])),
                                  kernels.exp(np.array([-708.0, -708.0, 709.0, 709.0, 709.0])))
    assert kernels.exp(np.array([0.0]))[0] == 1.0


def _coef_textbook(z, y, kind, clip, norms):
    """φ'(z, y) of the logistic loss log(1 + e^{−yz}) (−y·σ(−yz)) or the squared loss ½(y − z)²
    (z − y), each clipped on its own to ‖coef·x‖ ≤ C: one element at a time, with math's functions."""
    out = np.empty_like(z)
    for i in range(z.shape[0]):
        for r in range(z.shape[1]):
            if kind == kernels.GLM_LOGISTIC:
                t = y[i] * z[i, r]
                c = 0.0 * y[i] if t > 709 else -y[i] / (1.0 + math.exp(t))
            else:
                c = z[i, r] - y[i]
            if math.isfinite(clip):
                size = abs(c) * norms[i]
                c = c * (clip / size if size > clip else 1.0)
            out[i, r] = c
    return out


@pytest.mark.parametrize("kind", [kernels.GLM_LOGISTIC, kernels.GLM_SQUARED])
@pytest.mark.parametrize("clip", [math.inf, 0.5, 1e-3])
@pytest.mark.parametrize("runs", [1, 7, 25])
def test_glm_coefficients_are_the_textbook_derivative_clipped_one_example_at_a_time(kind, clip, runs):
    rng = np.random.default_rng(runs)
    n = 3 * kernels.GLM_ROWS + 5  # several blocks of rows and a ragged last one
    z = rng.standard_normal((n, runs)) * 4
    z[:3] = [[800.0], [-800.0], [0.0]]  # e^{yz} overflowing and underflowing, and a tie
    y = rng.choice([-1.0, 1.0], n) if kind == kernels.GLM_LOGISTIC else rng.uniform(-1, 1, n)
    norms = rng.uniform(0, 1, n)
    norms[5] = 0.0  # a zero row: never clipped
    want = _coef_textbook(z, y, kind, clip, norms)
    got = kernels.glm_coef(z.copy(), y, kind, clip, norms)
    np.testing.assert_allclose(got, want, rtol=4 * U, atol=1e-300)
    if math.isfinite(clip):
        assert (np.abs(got) * norms[:, None] <= clip * (1 + 4 * U)).all()  # the bound the accountant uses


def test_glm_coefficients_work_in_place_and_copy_what_is_not_c_order():
    z = np.arange(12.0).reshape(3, 4)
    assert kernels.glm_coef(z, np.ones(3), kernels.GLM_SQUARED) is z
    np.testing.assert_array_equal(z, np.arange(12.0).reshape(3, 4) - 1.0)
    zf = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    got = kernels.glm_coef(zf, np.ones(3), kernels.GLM_SQUARED)
    assert got is not zf and got.flags.c_contiguous
    np.testing.assert_array_equal(zf, np.arange(12.0).reshape(3, 4))  # the input left alone
    np.testing.assert_array_equal(got, np.arange(12.0).reshape(3, 4) - 1.0)


@pytest.mark.parametrize("model_id", ["logreg", "linreg"])
def test_the_sparse_glm_pass_is_the_numpy_two_pass_route_within_rounding_on_any_threads(model_id):
    """On Adult (a sparse twin) the GLM's gradient, loss and clipped sum take the products' layout and
    the compiled coefficients (:meth:`_GLM._sparse_pass`); a model without the kernel takes the numpy
    passes of ``linalg.map_rows``.  They agree to rounding (the sums' order and e^x's last bits), and
    the compiled route gives the same bits on the pool and on one thread."""
    from dpcore import datasets
    from dpcore.experiments.context import Context

    ds = datasets.load("adult")
    X, y = ds.X_train, ds.y_train
    model = make_model(model_id, lam=1e-4)
    numpy_route = dataclasses.replace(model)
    object.__setattr__(numpy_route, "kernel", None)  # this instance only: the numpy passes
    theta = np.random.default_rng(3).standard_normal((6, X.shape[1])) * 0.3
    calls = []
    real = kernels.glm_coef
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernels, "glm_coef", lambda *a: calls.append(1) or real(*a))
        with Context().active():
            pooled = (model.grad(theta, X, y), *model.loss_and_grad(theta, X, y), model.data_loss(theta, X, y),
                      model.clipped_grad_sum(theta, X, y, 0.5), *model.clipped_grad_sum_and_loss(theta, X, y, 0.5))
    assert len(calls) == 4 * linalg.BLOCKS  # four passes with coefficients, each block through the kernel
    with linalg.limit_threads(1):
        alone = (model.grad(theta, X, y), *model.loss_and_grad(theta, X, y), model.data_loss(theta, X, y),
                 model.clipped_grad_sum(theta, X, y, 0.5), *model.clipped_grad_sum_and_loss(theta, X, y, 0.5))
    two_pass = (numpy_route.grad(theta, X, y), *numpy_route.loss_and_grad(theta, X, y),
                numpy_route.data_loss(theta, X, y), numpy_route.clipped_grad_sum(theta, X, y, 0.5),
                *numpy_route.clipped_grad_sum_and_loss(theta, X, y, 0.5))
    for a, b, c in zip(pooled, alone, two_pass):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, rtol=1e-13, atol=1e-15)


def _one_row_gradients(model, theta, X, y, clip):
    """The bare kernel (no model margin) on each row alone: that row's clipped gradient, float64 norms (R, n)."""
    W1, b1, w2, b2 = (np.ascontiguousarray(a, dtype=np.float32) for a in model.unpack(theta, X.shape[-1]))
    W1t = np.ascontiguousarray(W1.transpose(0, 2, 1))
    rows = linalg.nonzero_rows(X.astype(np.float32))
    Y = y.astype(np.float32)[None]
    norms = np.empty((theta.shape[0], X.shape[0]))
    for i in range(X.shape[0]):
        gW1t, gb1, gw2, gb2, _ = kernels.mlp_clipped_block(rows, 0, Y, W1t, b1, w2, b2, clip, np.zeros((1, 0)), i, i + 1)
        parts = [p.astype(np.float64).reshape(theta.shape[0], -1) for p in (gW1t, gb1, gw2, gb2[:, None])]
        norms[:, i] = np.sqrt(sum((p * p).sum(axis=1) for p in parts))
    return norms


@pytest.mark.parametrize("scale", [1.0, 1e3, 1e10, 1.9e19], ids=["unit", "1e3", "1e10", "1.9e19"])
def test_the_bare_kernels_clip_is_exact_on_extreme_rows(scale):
    """Issue 67: the bare kernel (what a caller without the model's margin gets) returned norms up to
    1.00000015·C, and a feature near 1.9e19 overflowed the float32 squared norm and left its gradient
    unclipped.  Each clipped per-example gradient, as summed in float32, has norm ≤ C exactly (no
    tolerance), and within 1e-4 of C where the clip binds (the check can fail)."""
    model, theta, X, y = _problem(11, n=40, R=3, one_hot=False)
    theta = theta * 30.0
    X = X * scale
    for C in (0.01, 0.5):
        norms = _one_row_gradients(model, theta, X, y, C)
        assert norms.max() <= C, (norms.max() / C - 1)
        assert norms.max() >= C * (1 - 1e-4)


def test_a_row_whose_norm_is_not_finite_is_dropped_where_the_clip_is_finite():
    model, theta, X, y = _problem(12, n=6, R=2, one_hot=False)
    X = X.copy()
    X[2, 0], X[4, 1] = np.nan, np.inf
    norms = _one_row_gradients(model, theta, X, y, 0.5)
    assert (norms[:, [2, 4]] == 0).all() and (norms[:, [0, 1, 3, 5]] > 0).all() and (norms <= 0.5).all()


_FEATURES = os.environ.get("NUMBA_CPU_FEATURES", "")


@pytest.mark.skipif(not _FEATURES or "+avx512f" in _FEATURES,
                    reason="the kernels are compiled with this host's features (NUMBA_CPU_FEATURES turns no AVX-512 off)")
def test_the_kernels_compile_for_the_core_numba_cpu_features_names():
    """Under benchmarks/machine.py's AVX2 environment (CI's last step) a kernel compiled afresh uses
    no 512-bit register: what ran is the laptop's code, not this host's.  A check of the check:
    ``NUMBA_CPU_NAME=haswell`` alone (the host's features) gives 280 ``zmm`` operands on an AVX-512 host."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import machine

    assert machine.numba_wide_registers() == 0
