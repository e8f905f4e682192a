"""Models: gradients, per-example gradients, clipping and Hessian against finite differences."""

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from dpcore.exceptions import ModelError
from dpcore.models import LinReg, LogReg, MLP, make_model


def _data(seed=0, n=40, d=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return rng, X, np.where(rng.standard_normal(n) > 0, 1.0, -1.0), rng.uniform(-1, 1, n)


CASES = [(LogReg(lam=0.05), "cls"), (LinReg(lam=0.05, radius=2.0), "reg"), (MLP(lam=0.05), "cls")]


@pytest.mark.parametrize("model, kind", CASES, ids=lambda c: getattr(c, "id", ""))
def test_gradient_matches_finite_differences(model, kind):
    rng, X, yc, yr = _data()
    y = yc if kind == "cls" else yr
    theta = 0.5 * rng.standard_normal((3, model.n_params(X.shape[1])))
    G = model.grad(theta, X, y)
    for r in range(3):
        num = approx_fprime(theta[r], lambda t: model.loss(t[None], X, y)[0], 1e-7)
        np.testing.assert_allclose(G[r], num, atol=5e-7)


@pytest.mark.parametrize("model, kind", CASES, ids=lambda c: getattr(c, "id", ""))
def test_per_example_grads_and_clipping(model, kind):
    rng, X, yc, yr = _data(1)
    y = yc if kind == "cls" else yr
    theta = 0.5 * rng.standard_normal((2, model.n_params(X.shape[1])))
    pe = model.per_example_grads(theta, X, y)
    assert pe.shape == (2, X.shape[0], theta.shape[1])
    np.testing.assert_allclose(pe.mean(axis=1) + model.lam * theta, model.grad(theta, X, y), atol=1e-14)
    C = 0.2
    norms = np.linalg.norm(pe, axis=-1)
    ref = np.einsum("rn,rnp->rp", np.minimum(1, C / norms), pe)
    kw = {"dtype": "float64"} if model.id == "mlp" else {}  # the MLP trains in float32 by default
    np.testing.assert_allclose(model.clipped_grad_sum(theta, X, y, C, **kw), ref, atol=1e-13)
    # per-run mini-batches, with a padding mask
    idx = rng.integers(0, X.shape[0], size=(2, 6))
    w = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1.0]])
    got = model.clipped_grad_sum(theta, X[idx], y[idx], C, w, **kw)
    for r in range(2):
        keep = idx[r][w[r] > 0]
        g = model.per_example_grads(theta[r : r + 1], X[keep], y[keep])[0]
        exp = (g * np.minimum(1, C / np.linalg.norm(g, axis=1))[:, None]).sum(0)
        np.testing.assert_allclose(got[r], exp, atol=1e-13)
    # clipped norms never exceed C
    assert np.all(np.linalg.norm(pe * np.minimum(1, C / norms)[..., None], axis=-1) <= C + 1e-12)


@pytest.mark.parametrize("model", [LogReg(lam=0.05), LinReg(lam=0.05, radius=2.0)], ids=["logreg", "linreg"])
def test_hessian_matches_finite_differences(model):
    rng, X, yc, yr = _data(2)
    y = yc if model.id == "logreg" else yr
    theta = 0.5 * rng.standard_normal((2, X.shape[1]))
    H = model.hessian(theta, X, y)
    for r in range(2):
        num = np.array([approx_fprime(theta[r], lambda t, i=i: model.grad(t[None], X, y)[0, i], 1e-7)
                        for i in range(X.shape[1])])
        np.testing.assert_allclose(H[r], num, atol=1e-6)


def test_logistic_constants_hold_on_unit_ball():
    rng, X, y, _ = _data(3, n=500)
    m = LogReg(lam=0.0)
    theta = 3 * rng.standard_normal((4, X.shape[1]))
    assert np.linalg.norm(m.per_example_grads(theta, X, y), axis=-1).max() <= m.lipschitz
    assert m.d2phi(np.linspace(-5, 5, 101), 1.0).max() <= m.smoothness


def test_linreg_projection_and_constants():
    m = LinReg(radius=0.5)
    th = np.array([[3.0, 4.0], [0.1, 0.1]])
    out = m.project(th)
    np.testing.assert_allclose(np.linalg.norm(out[0]), 0.5)
    np.testing.assert_array_equal(out[1], th[1])
    assert m.lipschitz == 1.5


def test_mlp_shapes_and_seeded_init():
    m = MLP()
    assert m.n_params(4) == 4 * 4 + 2 * 4 + 1
    a = m.init(2, 4, [np.random.default_rng(1), np.random.default_rng(2)])
    b = m.init(1, 4, [np.random.default_rng(2)])
    np.testing.assert_array_equal(a[1], b[0])


def test_mlp_chunking_does_not_change_results(monkeypatch):
    rng, X, y, _ = _data(4, n=97)
    m = MLP(lam=0.01)
    theta = m.init(3, X.shape[1], [np.random.default_rng(i) for i in range(3)])
    def all_of():
        return (m.grad(theta, X, y), m.loss(theta, X, y), m.clipped_grad_sum(theta, X, y, 0.1, dtype="float64"),
                m.clipped_grad_sum(theta, X, y, 0.1))

    full = all_of()
    monkeypatch.setattr(MLP, "_CHUNK_FLOATS", 50)
    chunked = all_of()
    for a, b, tol in zip(full, chunked, (1e-13, 1e-13, 1e-13, 1e-6)):  # the last in float32
        np.testing.assert_allclose(a, b, atol=tol)


def test_make_model_errors():
    with pytest.raises(ModelError, match="unknown model 'svm'"):
        make_model("svm")
    with pytest.raises(Exception, match="'lam' parameter"):
        make_model("logreg", lam=-1.0)


@pytest.mark.parametrize("model, kind", CASES, ids=lambda c: getattr(c, "id", ""))
def test_loss_and_grad_is_exactly_loss_and_grad(model, kind):
    rng, X, yc, yr = _data(seed=3)
    y = yc if kind == "cls" else yr
    theta = 0.5 * rng.standard_normal((4, model.n_params(X.shape[1])))
    value, grad = model.loss_and_grad(theta, X, y)
    np.testing.assert_array_equal(value, model.loss(theta, X, y))
    np.testing.assert_array_equal(grad, model.grad(theta, X, y))


def test_mlp_float32_training_path_stays_within_the_clipping_norm():
    """The MLP's training sum runs in float32: it equals the float64 sum to about 1e-5
    (its clip margin and single-precision rounding), and every example's clipped
    gradient, measured in float64, stays within C: the sensitivity the accountant uses."""
    model = MLP(hidden=7)
    rng, X, y, _ = _data(2)
    theta = rng.standard_normal((3, model.n_params(X.shape[1])))
    C = 0.2
    g64 = model.clipped_grad_sum(theta, X, y, C, dtype="float64")
    g32 = model.clipped_grad_sum(theta, X, y, C)
    assert g32.dtype == np.float64
    np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-5 * C)
    assert not np.array_equal(g32, g64)  # the default really is the float32 path
    for i in range(X.shape[0]):
        one = model.clipped_grad_sum(theta, X[i:i + 1], y[i:i + 1], C)
        assert np.all(np.linalg.norm(one, axis=1) <= C)


@pytest.mark.parametrize("model, kind", CASES, ids=lambda c: getattr(c, "id", ""))
def test_a_step_with_a_trace_point_gives_the_clipped_sum_and_the_objective(model, kind):
    """clipped_grad_sum_and_loss: the step's sum bit for bit, and the objective (mean loss +
    λ/2‖θ‖²) against the float64 loss, to the float32 pass's 1e-6 relative for the MLP (its
    curve comes from the step's own forward pass), exactly for the linear models."""
    rng, X, yc, yr = _data(seed=5, n=61)
    y = yc if kind == "cls" else yr
    theta = 0.5 * rng.standard_normal((3, model.n_params(X.shape[1])))
    total, value = model.clipped_grad_sum_and_loss(theta, X, y, 0.3)
    np.testing.assert_array_equal(total, model.clipped_grad_sum(theta, X, y, 0.3))
    np.testing.assert_allclose(value, model.loss(theta, X, y), rtol=1e-6 if isinstance(model, MLP) else 1e-15)
    # a curve point without a step (SGD's, on the full data; the last one): the same precision
    point = model.trace_loss(theta, X, y)
    np.testing.assert_allclose(point, model.loss(theta, X, y), rtol=1e-6 if isinstance(model, MLP) else 0)
    np.testing.assert_allclose(point, value, rtol=1e-12 if isinstance(model, MLP) else 1e-15)


def test_the_mlp_loss_curve_costs_no_pass_of_its_own(monkeypatch):
    """Full-batch clipped training of the MLP records its curve from the step's forward pass: the
    only separate loss evaluation is the last point's (after the last step); the points equal
    the float64 losses to float32 rounding."""
    from dpcore.optim import BatchRNG, gradient_descent

    rng, X, y, _ = _data(seed=6, n=80)
    model = MLP(lam=0.01, hidden=6)
    rngs = BatchRNG([0, 1])
    theta0 = model.init(2, X.shape[1], rngs)
    calls = []
    real = MLP.data_loss
    monkeypatch.setattr(MLP, "data_loss", lambda self, *a, **kw: calls.append(1) or real(self, *a, **kw))
    out = gradient_descent(model, X, y, theta0, iterations=20, learning_rate=0.5, rngs=BatchRNG([0, 1]),
                           noise_std=0.01, clip_norm=1.0, trace_points=5)
    assert len(calls) == 1 and list(out.trace_steps) == [0, 5, 10, 15, 20]
    # the first point is at θ₀: the float64 loss there, to float32 rounding
    np.testing.assert_allclose(out.loss_trace[0], real(model, theta0, X, y) + 0.5 * model.lam * np.sum(theta0**2, 1),
                               rtol=1e-6)
