"""A GLM's gradient in one read of X for all R runs (issue 69): ``kernels.glm_grad``, and the models'
passes that take it from ``kernels.GLM_GRAD_RUNS`` runs on a matrix with a sparse twin.

Checked against the textbook written here (dense numpy products, the derivative and the clip one
element at a time with math's functions), not against the code's own output: dense and sparse X,
the clip active and not, rows of zero norm, rows of huge norm, a block of no rows; each clipped
per-example gradient's norm; the same bits on the pool and on one thread."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from dpcore.numerics import kernels, linalg
from dpcore.experiments.context import Context
from dpcore.models import make_model

#: float64's unit roundoff
U = 2.0**-53
KINDS = {"logreg": kernels.GLM_LOGISTIC, "linreg": kernels.GLM_SQUARED}


def _data(seed: int, n: int, d: int, kind: int):
    """A sparse matrix (about 1 in 6 entries, a few rows empty, a few of norm ~1e100 and ~1e-100)
    and its labels: ±1 for the logistic loss, in [−1, 1] for the squared one."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < 1 / 6)
    X[[0, 7, n - 1]] = 0.0  # rows of zero norm
    X[3] *= 1e100  # a huge row (its unclipped gradient ~1e200, still finite)
    X[11] *= 1e-100
    X[[5, 9]] = 0.0
    X[5, 2], X[9, d - 1] = 1e100, -3e99  # single huge non-zeros
    y = rng.choice([-1.0, 1.0], n) if kind == kernels.GLM_LOGISTIC else rng.uniform(-1, 1, n)
    return X, y


def _textbook(X, y, theta, kind, clip):
    """Σ_i coef_{r,i} x_i per run, (R, d), and |coef| (R, n): the margins by a dense product, each
    coefficient (−y/(1 + e^{yz}) or z − y) and its clip (× min(1, C/(|coef|·‖x_i‖))) element by element."""
    Z = theta @ X.T  # (R, n)
    norms = np.sqrt((X * X).sum(axis=1))
    coef = np.empty_like(Z)
    for r in range(Z.shape[0]):
        for i in range(Z.shape[1]):
            if kind == kernels.GLM_LOGISTIC:
                t = y[i] * Z[r, i]
                c = 0.0 if t > 709 else -y[i] / (1.0 + math.exp(t))
            else:
                c = Z[r, i] - y[i]
            if math.isfinite(clip):
                size = abs(c) * norms[i]
                c = c * (clip / size if size > clip else 1.0)
            coef[r, i] = c
    return coef @ X, np.abs(coef)


def _close(got, want, bound):
    """|got − want| within a sum's rounding: a few ulp of Σ |coef|·|x| per component (the margins' own
    rounding moves each coefficient by a few ulp of its |z|-scale too, hence the margin of 64)."""
    assert got.shape == want.shape
    assert (np.abs(got - want) <= 64 * U * bound + 1e-300).all(), np.max(np.abs(got - want) / (bound + 1e-300))


@pytest.mark.parametrize("kind", [kernels.GLM_LOGISTIC, kernels.GLM_SQUARED], ids=["logistic", "squared"])
@pytest.mark.parametrize("clip", [math.inf, 0.5, 1e-3], ids=["no clip", "clip 0.5", "clip 1e-3"])
@pytest.mark.parametrize("runs", [1, 8, 21])
def test_one_read_gradient_is_the_textbook_gradient(kind, clip, runs):
    n, d = 3 * kernels.GLM_ROWS + 17, 30  # blocks of rows and a ragged last one
    X, y = _data(runs, n, d, kind)
    theta = np.random.default_rng(100 + runs).standard_normal((runs, d)) * 0.7
    csr = sp.csr_array(X)
    csr.sort_indices()
    blocks = [(0, 5), (5, 5), (5, 200), (200, n)]  # uneven, one empty
    norms = np.linalg.norm(X, axis=1) if math.isfinite(clip) else None
    got, zs = kernels.glm_grad(csr, blocks, theta, y, kind, clip, norms)
    want, size = _textbook(X, y, theta, kind, clip)
    _close(got, want, size @ np.abs(X))
    assert zs == [None] * len(blocks)
    _, zs = kernels.glm_grad(csr, blocks, theta, y, kind, clip, norms, margins=True)  # the margins asked for
    Z = (theta @ X.T).T
    for (lo, hi), z in zip(blocks, zs):
        assert z.shape == (hi - lo, runs)
        _close(z, Z[lo:hi], np.abs(X[lo:hi]) @ np.abs(theta.T))


@pytest.mark.parametrize("kind", [kernels.GLM_LOGISTIC, kernels.GLM_SQUARED], ids=["logistic", "squared"])
@pytest.mark.parametrize("clip", [0.5, 1e-3])
def test_each_clipped_per_example_gradient_has_norm_at_most_C(kind, clip):
    """Each row alone (a block of one row): its clipped gradient, per run, has norm ≤ C (up to the
    last rounding of the product coef·x, as the accountant's bound on the GLM route always was), and
    equal to C where the clip binds; zero rows give zero."""
    n, d, R = 40, 12, 9
    X, y = _data(3, n, d, kind)
    theta = np.random.default_rng(4).standard_normal((R, d)) * 30
    csr = sp.csr_array(X)
    csr.sort_indices()
    norms = np.linalg.norm(X, axis=1)
    for i in range(n):
        g, _ = kernels.glm_grad(csr, [(i, i + 1)], theta, y, kind, clip, norms)
        size = np.linalg.norm(g, axis=1)
        assert (size <= clip * (1 + 4 * U)).all(), (i, size.max() / clip - 1)
        if norms[i] == 0:
            assert (g == 0).all()
        _, coef = _textbook(X[i:i + 1], y[i:i + 1], theta, kind, math.inf)
        binding = coef[:, 0] * norms[i] > clip  # the unclipped gradient's norm |coef|·‖x_i‖
        np.testing.assert_allclose(size[binding], clip, rtol=1e-12)


def test_the_bits_do_not_depend_on_the_thread_count():
    n, d, R = 5000, 40, 12
    X, y = _data(5, n, d, kernels.GLM_LOGISTIC)
    theta = np.random.default_rng(6).standard_normal((R, d))
    csr = sp.csr_array(X)
    csr.sort_indices()
    blocks = [(0, 1250), (1250, 2500), (2500, 3750), (3750, n)]
    norms = np.linalg.norm(X, axis=1)
    with Context().active():
        pooled = kernels.glm_grad(csr, blocks, theta, y, kernels.GLM_LOGISTIC, 0.5, norms, True)
    with linalg.limit_threads(1):
        alone = kernels.glm_grad(csr, blocks, theta, y, kernels.GLM_LOGISTIC, 0.5, norms, True)
    np.testing.assert_array_equal(pooled[0], alone[0])
    for a, b in zip(pooled[1], alone[1]):
        np.testing.assert_array_equal(a, b)


def _shared_sparse(X: np.ndarray) -> np.ndarray:
    A = X.copy()
    linalg.share(A)
    assert linalg.is_sparse(A)
    return A


@pytest.mark.parametrize("model_id", ["logreg", "linreg"])
@pytest.mark.parametrize("runs", [kernels.GLM_GRAD_RUNS, 20])
def test_the_models_passes_on_sparse_and_dense_x_are_the_textbook(model_id, runs):
    """From ``GLM_GRAD_RUNS`` runs a shared sparse X's gradient, loss and clipped sums take the one
    read (counted); a dense X takes the dense products.  Both are the textbook's gradient and loss."""
    kind = KINDS[model_id]
    n, d = 2 * linalg.MIN_ENTRIES // 40, 40  # large enough for a twin, sparse enough (1 in 6)
    X, y = _data(runs + 7, n, d, kind)
    X[3] /= 1e100  # the models' losses at a huge row overflow to ∞ in both routes: kept for the kernel's tests
    X[[5, 9]] /= 1e100
    model = make_model(model_id, lam=1e-3)
    theta = np.random.default_rng(runs).standard_normal((runs, d)) * 0.3
    sparse, dense = _shared_sparse(X), np.array(X)  # the dense copy is writable: no twin
    assert not linalg.is_sparse(dense)
    calls = []
    real = kernels.glm_grad
    with pytest.MonkeyPatch.context() as mp, Context().active():
        mp.setattr(kernels, "glm_grad", lambda *a, **k: calls.append(1) or real(*a, **k))
        for A in (sparse, dense):
            for clip in (math.inf, 0.5):
                want, size = _textbook(X, y, theta, kind, clip)
                bound = size @ np.abs(X)
                if math.isinf(clip):
                    grad = model.grad(theta, A, y)
                    _close(grad - model.lam * theta, want / n, bound / n + np.abs(model.lam * theta))
                    loss, grad2 = model.loss_and_grad(theta, A, y)
                    np.testing.assert_array_equal(grad, grad2)
                else:
                    g = model.clipped_grad_sum(theta, A, y, clip)
                    _close(g, want, bound)
                    g2, loss = model.clipped_grad_sum_and_loss(theta, A, y, clip)
                    np.testing.assert_array_equal(g, g2)
                Z = theta @ X.T
                textbook_loss = np.mean(model.phi(Z, y), axis=1) + model.penalty(theta)
                np.testing.assert_allclose(loss, textbook_loss, rtol=1e-12)
    assert len(calls) == 4  # the sparse X's four passes with a gradient, each one read; none for dense X


def test_below_the_runs_of_one_read_and_above_it_the_passes_agree():
    """The route is picked by the runs only for speed: scipy's two products below ``GLM_GRAD_RUNS``
    runs and the one read from it give the gradient of the same runs within rounding (on this
    machine bit for bit: both add in the same order, neither contracts a product and a sum)."""
    n, d, R = 2 * linalg.MIN_ENTRIES // 40, 40, kernels.GLM_GRAD_RUNS
    X, y = _data(21, n, d, kernels.GLM_LOGISTIC)
    X[[3, 5, 9]] = 0.0
    A = _shared_sparse(X)
    model = make_model("logreg", lam=1e-3)
    theta = np.random.default_rng(22).standard_normal((R, d))
    one_read = model.clipped_grad_sum(theta, A, y, 0.5)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernels, "GLM_GRAD_RUNS", R + 1)
        two_products = model.clipped_grad_sum(theta, A, y, 0.5)
    np.testing.assert_allclose(one_read, two_products, rtol=1e-13, atol=1e-300)
