"""The sparse twin of one-hot data: same products as dense BLAS, never stale."""

import gc

import numpy as np
import pytest
from scipy.special import expit

from dpcore import datasets
from dpcore.numerics import linalg
from dpcore.models import LogReg
from pools import CountingPool  # tests/pools.py


def _onehot(seed=0, n=4000, d=60, density=0.1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < density)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    return rng, X


def test_sparse_products_equal_dense_ones():
    rng, X = _onehot()
    dense = X.copy()
    linalg.share(X)
    assert linalg.is_sparse(X) and not linalg.is_sparse(dense)
    theta = rng.standard_normal((5, X.shape[1]))
    coef = rng.standard_normal((5, X.shape[0]))
    w = rng.random(X.shape[0])
    np.testing.assert_allclose(linalg.margins(theta, X), theta @ dense.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(linalg.weighted_rows(coef, X), coef @ dense, rtol=1e-12, atol=1e-12)
    W = np.stack([w, 1 - w, np.zeros_like(w)])
    np.testing.assert_allclose(linalg.weighted_grams(W, X),
                               np.stack([(dense * v[:, None]).T @ dense for v in W]),
                               rtol=1e-12, atol=1e-12)
    # the model's gradient and Hessian are the same whichever path ran
    m = LogReg(lam=1e-3)
    y = np.where(rng.random(X.shape[0]) < 0.5, -1.0, 1.0)
    np.testing.assert_allclose(m.grad(theta, X, y), m.grad(theta, dense, y), rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(m.hessian(theta[:2], X, y), m.hessian(theta[:2], dense, y),
                               rtol=1e-11, atol=1e-14)


def test_fused_glm_pass_equals_dense_and_is_thread_independent():
    rng, X = _onehot(6)
    dense = X.copy()
    linalg.share(X)
    y = np.where(rng.random(X.shape[0]) < 0.5, -1.0, 1.0)
    theta = rng.standard_normal((5, X.shape[1]))
    m = LogReg(lam=1e-3)
    pool = CountingPool()
    with linalg.using_pool(pool):
        value, grad = m.loss_and_grad(theta, X, y)
        # the fused pass is what loss() and grad() compute, to the bit
        np.testing.assert_array_equal(value, m.loss(theta, X, y))
        np.testing.assert_array_equal(grad, m.grad(theta, X, y))
        z, h = linalg.margins(theta, X), m.hessian(theta[:3], X, y)
    assert pool.calls >= 5 or linalg.THREADS == 1  # the threaded branch ran on the pool
    np.testing.assert_allclose(value, m.loss(theta, dense, y), rtol=1e-13)
    np.testing.assert_allclose(grad, m.grad(theta, dense, y), rtol=1e-11, atol=1e-15)
    # a fixed block split: one thread or several give the same bits (no pool: this thread)
    for serial in (linalg.limit_threads(1), linalg.using_pool(None)):
        with serial:
            v1, g1 = m.loss_and_grad(theta, X, y)
            z1 = linalg.margins(theta, X)
            h1 = m.hessian(theta[:3], X, y)
        np.testing.assert_array_equal(v1, value)
        np.testing.assert_array_equal(g1, grad)
        np.testing.assert_array_equal(z1, z)
        np.testing.assert_array_equal(h1, h)


def test_large_dense_matrices_take_the_blocked_pass(monkeypatch):
    """A dense X above DENSE_BLOCK_BYTES: loss and gradient in one blocked pass, equal to the
    two-pass products to rounding, the same bits on one thread or two; below it, nothing changes."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((20_000, 15)) / 4
    y = np.where(rng.random(X.shape[0]) < 0.5, -1.0, 1.0)
    theta = rng.standard_normal((5, X.shape[1]))
    m = LogReg(lam=1e-3)
    plain = m.loss_and_grad(theta, X, y)  # 2.4 MB: below the threshold, two BLAS passes
    assert linalg.map_rows(theta, X, lambda z, rows: (z, None)) is None
    monkeypatch.setattr(linalg, "DENSE_BLOCK_BYTES", X.nbytes)
    assert linalg.map_rows(theta, X, lambda z, rows: (None, rows))[1][1] == slice(4369, 8738)  # ~0.5 MB blocks
    value, grad = m.loss_and_grad(theta, X, y)
    np.testing.assert_allclose(value, plain[0], rtol=1e-13)
    np.testing.assert_allclose(grad, plain[1], rtol=1e-11, atol=1e-15)
    np.testing.assert_array_equal(grad, m.grad(theta, X, y))
    np.testing.assert_array_equal(value, m.loss(theta, X, y))
    with linalg.limit_threads(1):
        v1, g1 = m.loss_and_grad(theta, X, y)
    np.testing.assert_array_equal(v1, value)
    np.testing.assert_array_equal(g1, grad)


def test_large_dense_matrices_build_hessians_block_by_block(monkeypatch):
    """Above DENSE_BLOCK_BYTES a dense X's weighted Grams Xᵀ diag(w_r) X are symmetric rank-k updates
    summed over row blocks (no weighted copy of all of X per run): equal to the plain product to
    rounding, exactly symmetric, and really blocked (a block smaller than X); below the threshold, and
    for weights of either sign, the plain product's bits."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((9_000, 12)) / 4
    W = rng.random((3, X.shape[0]))
    plain = np.stack([(X * w[:, None]).T @ X for w in W])
    np.testing.assert_array_equal(linalg.weighted_grams(W, X), plain)  # 0.9 MB: below it
    monkeypatch.setattr(linalg, "DENSE_BLOCK_BYTES", X.nbytes)
    monkeypatch.setattr(linalg, "GRAM_BLOCK_TARGET", X.nbytes // 4)
    blocked = linalg.weighted_grams(W, X)
    np.testing.assert_allclose(blocked, plain, rtol=1e-12, atol=1e-12)
    assert not np.array_equal(blocked, plain)  # summed in four blocks, not in one product
    np.testing.assert_array_equal(blocked, blocked.transpose(0, 2, 1))
    signed = W - 0.5
    np.testing.assert_array_equal(linalg.weighted_grams(signed, X), np.stack([(X * w[:, None]).T @ X for w in signed]))


def test_dense_and_small_matrices_get_no_twin():
    rng = np.random.default_rng(1)
    full = rng.standard_normal((4000, 60))
    small = _onehot(n=100)[1]
    for X in (full, small):
        linalg.share(X)
        assert not linalg.is_sparse(X)
        assert not X.flags.writeable  # shared matrices are read-only either way


def test_a_shared_matrix_cannot_be_changed_under_its_twin():
    _, X = _onehot(2)
    linalg.share(X)
    with pytest.raises(ValueError, match="read-only"):
        X[0, 0] = 1.0


def test_a_freed_matrix_takes_its_twin_with_it():
    _, X = _onehot(3)
    linalg.share(X)
    key = id(X)
    assert key in linalg._TWINS
    del X
    gc.collect()
    assert key not in linalg._TWINS
    # a new array that happens to get the same id is never mistaken for the old one
    _, Y = _onehot(4)
    assert not linalg.is_sparse(Y)


def test_bundled_one_hot_data_use_the_twin():
    adult = datasets.load("adult")
    assert linalg.is_sparse(adult.X_train) and linalg.is_sparse(adult.X_test)
    assert not linalg.is_sparse(datasets.load("breast-cancer").X_train)  # dense and small
    assert not datasets.load("bank").X_train.flags.writeable


def test_logistic_derivative_equals_expit_form():
    rng = np.random.default_rng(5)
    z = rng.standard_normal((3, 2000)) * 8
    z[0, :7] = [-800.0, -40.0, -1e-300, 0.0, 40.0, 709.9, 800.0]
    y = np.where(rng.random(2000) < 0.5, -1.0, 1.0)
    got = LogReg().dphi(z, y)
    ref = -y * expit(-y * z)
    np.testing.assert_allclose(got, ref, rtol=1e-15, atol=0)
    assert np.all(np.isfinite(got))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_projections_through_the_twin_equal_dense_ones(dtype):
    """The MLP's products with a shared one-hot X (forward W x_i, backward Σ c_i x_iᵀ), whole
    or by row chunk, through the sparse twin in the weights' dtype."""
    rng, X = _onehot(7)
    dense = X.copy()
    linalg.share(X)
    assert linalg.is_sparse(X)
    W = rng.standard_normal((3, 6, X.shape[1])).astype(dtype)
    rows = slice(100, 1700)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    got = linalg.project_rows(X, W, rows)
    assert got.dtype == dtype and got.shape == (3, 1600, 6)
    np.testing.assert_allclose(got, np.einsum("nd,rhd->rnh", dense[rows], W), **tol)
    C = rng.standard_normal((3, 1600, 6)).astype(dtype)
    back = linalg.project_rows_t(C, X, rows)
    assert back.dtype == dtype and back.shape == (3, 6, X.shape[1])
    np.testing.assert_allclose(back, np.einsum("rnh,nd->rhd", C, dense[rows]), **tol)
    np.testing.assert_allclose(linalg.project_rows(X, W), np.einsum("nd,rhd->rnh", dense, W), **tol)


def test_row_norms_are_held_per_shared_matrix_and_equal_fresh_ones():
    rng = np.random.default_rng(3)
    X = linalg.share(rng.standard_normal((500, 7)))
    held = linalg.row_norms(X)
    assert linalg.row_norms(X) is held  # once per shared matrix
    np.testing.assert_array_equal(held, np.sqrt(np.sum(X * X, axis=1)))  # a second route, to rounding
    np.testing.assert_array_equal(held, np.linalg.norm(np.array(X), axis=-1))  # bit for bit a fresh one
    Y = np.array(X)  # writeable: never held, so an edit shows
    Y[0] *= 2
    assert linalg.row_norms(Y)[0] == pytest.approx(2 * held[0])
    idx = rng.integers(0, 500, size=(3, 40))  # a gathered mini-batch: the held norms, indexed
    np.testing.assert_array_equal(held[idx], np.linalg.norm(X[idx], axis=-1))


@pytest.mark.parametrize("weights", [None, "mask"])
def test_clipped_sum_with_clipping_off_and_with_given_norms_equals_the_plain_route(weights):
    rng = np.random.default_rng(4)
    X, y = rng.standard_normal((300, 6)) / 3, np.sign(rng.standard_normal(300))
    theta = rng.standard_normal((4, 6))
    w = None if weights is None else (rng.random((4, 300)) < 0.5).astype(float)
    m = LogReg()
    coef = m.dphi(theta @ X.T, y)  # a second route: Σ_i w_i ℓ'(z_i) x_i, no clipping
    expected = (coef if w is None else coef * w) @ X
    np.testing.assert_allclose(m.clipped_grad_sum(theta, X, y, np.inf, w), expected, rtol=1e-12, atol=1e-14)
    norms = np.linalg.norm(X, axis=1)
    for C in (0.05, 1.0):
        np.testing.assert_array_equal(m.clipped_grad_sum(theta, X, y, C, w, row_norms=norms),
                                      m.clipped_grad_sum(theta, X, y, C, w))


def test_mlp_chunks_on_threads_give_the_bits_of_one_thread(monkeypatch):
    from dpcore.models import MLP
    from dpcore.optim import BatchRNG
    monkeypatch.setattr(MLP, "_CHUNK_FLOATS", 4_000)  # many chunks, so the pool has work to share
    rng = np.random.default_rng(5)
    X = linalg.share((rng.random((3000, 40)) < 0.1) * rng.standard_normal((3000, 40)))
    y = np.sign(rng.standard_normal(3000))
    m = MLP()
    theta = m.init(3, 40, BatchRNG([0, 1, 2]))
    pool = CountingPool()
    with linalg.using_pool(pool):
        threaded = (m.clipped_grad_sum(theta, X, y, 0.5), *m.loss_and_grad(theta, X, y), m.data_loss(theta, X, y))
    assert pool.calls >= 3 or linalg.THREADS == 1
    with linalg.limit_threads(1):
        serial = (m.clipped_grad_sum(theta, X, y, 0.5), *m.loss_and_grad(theta, X, y), m.data_loss(theta, X, y))
    for a, b in zip(threaded, serial):
        np.testing.assert_array_equal(a, b)
    whole = MLP.loss_and_grad(m, theta, X, y)[1]  # a second route: one chunk, float64
    monkeypatch.setattr(MLP, "_CHUNK_FLOATS", 10**9)
    np.testing.assert_allclose(MLP.loss_and_grad(m, theta, X, y)[1], whole, rtol=1e-10, atol=1e-13)



def test_a_context_lends_its_own_pool_and_every_context_shares_one_by_default():
    from dpcore.experiments.context import Context, default_context
    from dpcore.experiments.run import RunSpec, run
    assert Context().pool is default_context().pool is Context(workers=2).pool  # one per process
    ctx = Context(pool=CountingPool())
    assert ctx.with_(trace_points=0).pool is ctx.pool  # a copy keeps it
    spec = RunSpec(dataset="adult", mechanism="gradient-dpgd", epsilon=1.0, repeats=2, iterations=5, n=4000)
    mine = run(spec, ctx=ctx)
    assert ctx.pool.calls > 0 or linalg.THREADS == 1  # the run's sparse products ran on its context's pool
    other = run(spec, ctx=Context())
    np.testing.assert_array_equal(mine.accuracy, other.accuracy)  # pools change where, never what
    np.testing.assert_array_equal(mine.gap, other.gap)


@pytest.mark.parametrize("labels_per_run", [True, False])
def test_per_run_data_take_the_fused_pass_equal_to_two_plain_passes(monkeypatch, labels_per_run):
    """Input perturbation's released records (R, n, p), one matrix per run: above
    DENSE_BLOCK_BYTES, loss and gradient in one blocked pass per run, equal to the two batched
    products written out here to rounding, the same bits on the pool or in this thread, and each
    run's loss its own (the blocks' values side by side); below it, the plain passes."""
    rng = np.random.default_rng(8)
    R, n, p = 3, 3000, 20
    X = rng.standard_normal((R, n, p)) / 4
    y = np.where(rng.random((R, n) if labels_per_run else n) < 0.5, -1.0, 1.0)
    theta = rng.standard_normal((R, p))
    m = LogReg(lam=1e-3)
    assert linalg.map_rows(theta, X, lambda z, rows: (z, None)) is None  # 1.4 MB: below the threshold
    z = np.einsum("rnp,rp->rn", X, theta)  # the definition, by another route
    value_by_hand = np.mean(np.logaddexp(0.0, -y * z), axis=-1) + 0.5e-3 * np.sum(theta ** 2, axis=-1)
    grad_by_hand = np.einsum("rn,rnp->rp", -y * expit(-y * z), X) / n + 1e-3 * theta
    monkeypatch.setattr(linalg, "DENSE_BLOCK_BYTES", X.nbytes)
    monkeypatch.setattr(linalg, "RUN_BLOCK_TARGET", 800 * p * 8)  # 4 blocks a run, the last short
    pieces = linalg.map_rows(theta, X, lambda z, rows: (None, np.array([10_000 * rows[0] + rows[1].start
                                                                         + 1e-4 * z.shape[1]])))[1]
    assert len(pieces) == 4 and list(pieces[3]) == [10_000 * r + 2400 + 0.06 for r in range(R)]
    pool = CountingPool()
    with linalg.using_pool(pool):
        value, grad = m.loss_and_grad(theta, X, y)
        np.testing.assert_array_equal(grad, m.grad(theta, X, y))
        np.testing.assert_array_equal(value, m.loss(theta, X, y))
    assert pool.calls >= 3 or linalg.THREADS == 1
    assert value.shape == (R,) and grad.shape == (R, p)
    np.testing.assert_allclose(value, value_by_hand, rtol=1e-12)
    np.testing.assert_allclose(grad, grad_by_hand, rtol=1e-11, atol=1e-15)
    for serial in (linalg.limit_threads(1), linalg.using_pool(None)):
        with serial:
            v1, g1 = m.loss_and_grad(theta, X, y)
        np.testing.assert_array_equal(v1, value)
        np.testing.assert_array_equal(g1, grad)


def test_a_release_drawn_in_place_has_the_bits_of_the_plain_formula():
    """BatchRNG.normal_around (input perturbation's release, drawn in place on the pool) gives
    exactly ``X + σ·N(0, 1)`` from each run's own generator, written out here with numpy."""
    from dpcore.numerics import streams
    from dpcore.optim import BatchRNG

    X = np.random.default_rng(4).standard_normal((500, 7))
    with linalg.using_pool(CountingPool()):
        got = BatchRNG([11, 12, 13]).normal_around(X, 2.5)
    by_hand = np.stack([X + np.random.default_rng([s, streams.RUN]).standard_normal(X.shape) * 2.5
                        for s in (11, 12, 13)])
    np.testing.assert_array_equal(got, by_hand)
