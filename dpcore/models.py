"""Models, batched over R independent runs (SPEC §2).

Parameters are shaped ``(R, p)``.  Data are either shared by all runs,
``X`` of shape ``(n, d)`` with ``y`` of shape ``(n,)``, or drawn per run (a
mini-batch per run), ``X`` of shape ``(R, B, d)`` with ``y`` of shape ``(R, B)``.
Losses and gradients are means over the rows plus ``(lam/2)‖θ‖²``;
per-example gradients carry no regularisation (it is data-independent).

``logreg`` and ``linreg`` are generalised linear models: the loss depends on the
margin ``z = θᵀx`` only, so per-example gradients are ``φ'(z_i, y_i)·x_i`` and
clipping needs only the norms ``|φ'_i|·‖x_i‖`` — nothing of shape ``(R, B, p)``
is formed.  ``mlp`` forms per-example quantities in chunks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.special import expit, log_expit

from .numerics import kernels, linalg
from .exceptions import ModelError, unknown_choice
from .params import validate

__all__ = ["Model", "LogReg", "LinReg", "MLP", "MODELS", "make_model"]


def _margins(theta: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``θᵀx`` for every run and row: (R, n) from (R, p) and (n, p) or (R, B, p)."""
    return linalg.margins(theta, X)


def _weighted_rows(coef: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``Σ_i coef_{r,i} x_i`` for every run: (R, p)."""
    return linalg.weighted_rows(coef, X)


def _clipped(coef: np.ndarray, norms, clip_norm: float, weights) -> np.ndarray:
    """``coef · min(1, C/max(|coef|·‖x‖, 1e-300)) · weights`` in place of ``coef`` (``norms()``: each
    coefficient's row norm ‖x‖, asked only when C is finite; ``weights``: a 0/1 padding mask or ``None``).
    The clip factor is one array computed in place: the expression's operations in its order, so its
    bits, without its four temporaries."""
    if np.isfinite(clip_norm):
        scale = np.abs(coef)
        scale *= norms()
        np.maximum(scale, 1e-300, out=scale)
        np.divide(clip_norm, scale, out=scale)
        np.minimum(scale, 1.0, out=scale)
        if weights is not None:
            scale *= weights
        coef *= scale
    elif weights is not None:
        coef *= weights
    return coef


def _row_norms(X: np.ndarray) -> np.ndarray:
    return linalg.row_norms(X)


@dataclass(frozen=True)
class Model:
    """Base class; subclasses define the loss.  Instances are immutable and hashable."""

    lam: float = 1e-3
    radius: float | None = None  # parameter domain ‖θ‖ ≤ radius (None: unconstrained)

    id: ClassVar[str] = ""
    name: ClassVar[str] = ""
    convex: ClassVar[bool] = True
    task: ClassVar[str] = "classification"
    #: the work budget's weight of one (row × parameter) of this model, relative to the linear
    #: models' dense products (see :func:`dpcore.experiments.run.work_estimate`)
    work_weight: ClassVar[float] = 1.0
    memory_overhead: ClassVar[int] = 0
    #: whether a run's numbers are computed apart from the other runs of its batch (one product
    #: per run, elementwise work), so that runs may be split across threads without changing a
    #: bit; the MLP's row chunks depend on the batch's size, so it is not
    runs_independent: ClassVar[bool] = False

    def __post_init__(self) -> None:
        validate("lam", self.lam, self.id)
        if self.radius is not None:
            validate("radius", self.radius, self.id)

    # -- shape ---------------------------------------------------------------
    def n_params(self, d: int) -> int:
        return d

    def init(self, runs: int, d: int, rngs=None) -> np.ndarray:
        """Starting point of iterative training (zeros for convex models)."""
        return np.zeros((runs, self.n_params(d)))

    # -- constants of the per-record loss on ‖x‖ ≤ 1 -------------------------
    @property
    def lipschitz(self) -> float:
        """G: bound on ‖∇ℓ(θ; x, y)‖ for ‖x‖ ≤ 1 (and θ in the domain)."""
        raise NotImplementedError

    @property
    def smoothness(self) -> float:
        """β: bound on ‖∇²ℓ(θ; x, y)‖ for ‖x‖ ≤ 1."""
        raise NotImplementedError

    @property
    def strong_convexity(self) -> float:
        """λ of the objective (0 for a non-convex model)."""
        return self.lam if self.convex else 0.0

    # -- interface -----------------------------------------------------------
    def scores(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        return _margins(theta, X)

    def data_loss(self, theta, X, y) -> np.ndarray:
        raise NotImplementedError

    def penalty(self, theta: np.ndarray) -> np.ndarray:
        """The regulariser (λ/2)‖θ‖² per run, (R,)."""
        return 0.5 * self.lam * np.sum(theta**2, axis=1)

    def loss(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Objective per run, (R,): mean loss + (lam/2)‖θ‖²."""
        return self.data_loss(theta, X, y) + self.penalty(theta)

    def grad(self, theta, X, y) -> np.ndarray:
        """Gradient of :meth:`loss`, (R, p)."""
        raise NotImplementedError

    def loss_and_grad(self, theta, X, y) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`loss` and :meth:`grad` together (GLMs share one pass over X)."""
        return self.loss(theta, X, y), self.grad(theta, X, y)

    def per_example_grads(self, theta, X, y) -> np.ndarray:
        """Per-example gradients of the unregularised loss, (R, n, p)."""
        raise NotImplementedError

    def clipped_grad_sum(self, theta, X, y, clip_norm: float, weights=None, row_norms=None) -> np.ndarray:
        """``Σ_i w_i · g_i · min(1, C/‖g_i‖)`` per run, (R, p); ``weights`` mask padding;
        ``row_norms``: ‖x_i‖ of X's rows when the caller holds them (a GLM's gradient norms)."""
        g = self.per_example_grads(theta, X, y)
        norms = np.linalg.norm(g, axis=-1)
        scale = np.minimum(1.0, clip_norm / np.maximum(norms, 1e-300))
        if weights is not None:
            scale = scale * weights
        return np.einsum("rb,rbp->rp", scale, g)

    def trace_loss(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """:meth:`loss` for a point of the loss curve, in the precision the training steps run
        in (float64 here; the MLP's float32)."""
        return self.loss(theta, X, y)

    def sampled_clipped_sum(self, theta, X, y, idx, weights, clip_norm, row_norms, groups):
        """The clipped sums of the rows ``idx`` (R, B) of a shared X read in place, or ``None``
        when the model has no such route (the caller gathers the batches)."""
        return None

    def clipped_grad_sum_and_loss(self, theta, X, y, clip_norm: float) -> tuple[np.ndarray, np.ndarray]:
        """(:meth:`clipped_grad_sum`, :meth:`loss`) at one θ: a training step that also records a
        point of the loss curve.  A model whose step already computes every row's loss (the MLP's
        forward pass) gives it from that pass instead of a second one."""
        return self.clipped_grad_sum(theta, X, y, clip_norm), self.loss(theta, X, y)

    def project(self, theta: np.ndarray) -> np.ndarray:
        """Euclidean projection onto the parameter domain."""
        if self.radius is None:
            return theta
        norms = np.linalg.norm(theta, axis=1, keepdims=True)
        return theta * np.minimum(1.0, self.radius / np.maximum(norms, 1e-300))

    def predict(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Labels in {−1, +1} (classification) or real predictions, (R, n)."""
        s = self.scores(theta, X)
        return np.where(s >= 0, 1.0, -1.0) if self.task == "classification" else s


class _GLM(Model):
    """Loss ``φ(z, y)`` of the margin; subclasses give φ, φ' and φ''."""

    runs_independent: ClassVar[bool] = True

    def phi(self, z, y):
        raise NotImplementedError

    def dphi(self, z, y):
        raise NotImplementedError

    def d2phi(self, z, y):
        raise NotImplementedError

    #: the compiled coefficients' loss (:func:`dpcore.numerics.kernels.glm_coef`), or ``None`` for none
    kernel: ClassVar[int | None] = None

    def _sparse_pass(self, theta, X, y, clip: float, with_grad: bool, with_loss: bool):
        """One pass over a shared X's sparse twin: each block's summed losses (``with_loss``) and the sum of
        its coefficients (:func:`~dpcore.numerics.kernels.glm_coef`, clipped to ``clip`` when finite) times its rows, in one
        read of X from :data:`~dpcore.numerics.kernels.GLM_GRAD_RUNS` runs (:func:`~dpcore.numerics.kernels.glm_grad`), else by scipy's
        products (:func:`~dpcore.numerics.linalg.map_sparse_rows`); ``None`` for other data or a model without the kernel."""
        if self.kernel is None or y.ndim != 1 or not linalg.is_sparse(X):
            return None
        norms = _row_norms(X) if np.isfinite(clip) else None
        if with_grad and theta.shape[0] >= kernels.GLM_GRAD_RUNS:  # X read once for all runs, the same bits
            total, zs = kernels.glm_grad(linalg.csr_of(X), (b := linalg.sparse_blocks(X)), theta, y, self.kernel, clip,
                                         norms, with_loss)
            return total, [None if z is None else np.sum(self.phi(z, y[lo:hi, None]), axis=0) for z, (lo, hi) in zip(zs, b)]

        def block(z, rows):
            yr = y[rows]
            aux = np.sum(self.phi(z, yr[:, None]), axis=0) if with_loss else None
            coef = kernels.glm_coef(z, yr, self.kernel, clip, None if norms is None else norms[rows]) \
                if with_grad else None
            return coef, aux

        return linalg.map_sparse_rows(theta, X, block)

    def data_loss(self, theta, X, y):
        fused = self._sparse_pass(theta, X, y, np.inf, False, True)
        if fused is None:
            fused = linalg.map_rows(theta, X, lambda z, rows: (
                None, np.sum(self.phi(z, linalg.rows_of(y, rows)), axis=-1)))
        if fused is not None:
            return sum(fused[1]) / X.shape[-2]
        return np.mean(self.phi(_margins(theta, X), y), axis=-1)

    def grad(self, theta, X, y):
        fused = self._sparse_pass(theta, X, y, np.inf, True, False)
        if fused is None:
            fused = linalg.map_rows(theta, X, lambda z, rows: (self.dphi(z, linalg.rows_of(y, rows)), None))
        if fused is not None:
            return fused[0] / X.shape[-2] + self.lam * theta
        z = _margins(theta, X)
        coef = self.dphi(z, y) / z.shape[-1]
        return _weighted_rows(coef, X) + self.lam * theta

    def loss_and_grad(self, theta, X, y):
        reg = self.penalty(theta)
        fused = self._sparse_pass(theta, X, y, np.inf, True, True)
        if fused is None:
            fused = linalg.map_rows(theta, X, lambda z, rows: (
                self.dphi(z, linalg.rows_of(y, rows)), np.sum(self.phi(z, linalg.rows_of(y, rows)), axis=-1)))
        if fused is not None:
            return sum(fused[1]) / X.shape[-2] + reg, fused[0] / X.shape[-2] + self.lam * theta
        z = _margins(theta, X)
        loss = np.mean(self.phi(z, y), axis=-1) + reg
        coef = self.dphi(z, y) / z.shape[-1]
        return loss, _weighted_rows(coef, X) + self.lam * theta

    def per_example_grads(self, theta, X, y):
        coef = self.dphi(_margins(theta, X), y)
        if X.ndim == 2:
            return coef[:, :, None] * X[None, :, :]
        return coef[:, :, None] * X

    def clipped_grad_sum(self, theta, X, y, clip_norm, weights=None, row_norms=None):
        fused = None if row_norms is not None else self._clipped_fused(theta, X, y, clip_norm, weights, False)
        if fused is not None:
            return fused[0]
        coef = self.dphi(_margins(theta, X), y)  # C = ∞: nothing clipped, min(1, ∞/‖g‖) = 1 for every row
        norms = lambda: _row_norms(X) if row_norms is None else row_norms  # noqa: E731
        return _weighted_rows(_clipped(coef, norms, clip_norm, weights), X)

    def sampled_clipped_sum(self, theta, X, y, idx, weights, clip_norm, row_norms, groups):
        """:meth:`clipped_grad_sum` of the rows ``idx`` (R, B) of a shared X with a sparse twin,
        each run its own batch (``weights``: a Poisson batch's 0/1 padding mask, or ``None``),
        read where they are by the compiled kernels (no (R, B, p) gathered copy: on Adult at
        q = 0.05 that copy was 18 MB a step for R = 15, most of a DP-SGD step); ``None`` for other
        data.  The same elementwise formulas as :meth:`clipped_grad_sum`; the sums in each run's
        batch order (within rounding of the gathered route, not its bits)."""
        csr = linalg.csr_of(X)
        if csr is None:
            return None
        coef = self.dphi(kernels.sampled_margins(csr, idx, theta, groups), y[idx])
        norms = lambda: (_row_norms(X) if row_norms is None else row_norms)[idx]  # noqa: E731
        return kernels.sampled_sums(csr, idx, _clipped(coef, norms, clip_norm, weights), groups)

    def clipped_grad_sum_and_loss(self, theta, X, y, clip_norm):
        fused = self._clipped_fused(theta, X, y, clip_norm, None, True)
        if fused is None:
            return super().clipped_grad_sum_and_loss(theta, X, y, clip_norm)
        return fused[0], sum(fused[1]) / X.shape[-2] + self.penalty(theta)

    def _clipped_fused(self, theta, X, y, clip_norm, weights, with_loss: bool):
        """The clipped sum (and the rows' summed losses per block) in one pass over a shared X's
        sparse twin, block by block on the pool (:meth:`_sparse_pass`), ``None`` for other data:
        no (R, n) array between the two products, and the elementwise work compiled, on the
        pool's threads (DP-GD with clipping, Adult, R = 30: in numpy it was a third of a step)."""
        if weights is not None or not np.isfinite(clip_norm):
            return None
        return self._sparse_pass(theta, X, y, clip_norm, True, with_loss)

    def hessian(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Hessian of :meth:`loss` per run, (R, p, p); ``X`` shared, (n, p)."""
        if X.ndim != 2:
            raise ValueError("hessian needs shared data X of shape (n, p)")
        w = self.d2phi(_margins(theta, X), y) / X.shape[0]
        csr = linalg.csr_of(X)  # a sparse X: each row's pairs of non-zeros, compiled (no pair matrix)
        H = linalg.weighted_grams(w, X) if csr is None else kernels.csr_grams(csr, w, linalg.run_groups(w.shape[0]))
        H += self.lam * np.eye(X.shape[1])[None]
        return H


@dataclass(frozen=True)
class LogReg(_GLM):
    """Logistic regression, ``ℓ = log(1 + e^{−y θᵀx})``; G = 1, β = 1/4 on ‖x‖ ≤ 1."""

    id: ClassVar[str] = "logreg"
    name: ClassVar[str] = "Logistic regression"
    kernel: ClassVar[int | None] = kernels.GLM_LOGISTIC

    @property
    def lipschitz(self) -> float:
        return 1.0

    @property
    def smoothness(self) -> float:
        return 0.25

    def phi(self, z, y):
        # log(1 + e^{−yz}) = log1p(e^{−|yz|}) + max(−yz, 0): stable, and faster than log_expit
        m = np.multiply(y, z)
        out = np.abs(m)
        np.negative(out, out=out)
        np.exp(out, out=out)
        np.log1p(out, out=out)
        np.negative(m, out=m)
        np.maximum(m, 0.0, out=m)
        out += m
        return out

    def dphi(self, z, y):
        # −y·σ(−yz) = −y / (1 + e^{yz}), in place: the hot path of batched GD.  Equal to
        # scipy's expit to 4e-16 relative and 3× faster; e^{yz} = inf gives exactly 0.
        t = np.multiply(z, y)
        with np.errstate(over="ignore"):
            np.exp(t, out=t)
        t += 1.0
        np.reciprocal(t, out=t)
        t *= -y
        return t

    def d2phi(self, z, y):
        s = expit(z)
        return s * (1.0 - s)


@dataclass(frozen=True)
class LinReg(_GLM):
    """Least squares ``ℓ = ½(y − θᵀx)²`` on the ball ``‖θ‖ ≤ radius``.

    With ‖x‖ ≤ 1, |y| ≤ 1: G = radius + 1, β = 1.
    """

    lam: float = 0.0
    radius: float | None = 1.0

    id: ClassVar[str] = "linreg"
    name: ClassVar[str] = "Linear regression"
    kernel: ClassVar[int | None] = kernels.GLM_SQUARED
    task: ClassVar[str] = "regression"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.radius is None:
            raise ModelError("linreg needs a bounded parameter domain: give a radius > 0")

    @property
    def lipschitz(self) -> float:
        return float(self.radius) + 1.0

    @property
    def smoothness(self) -> float:
        return 1.0

    def phi(self, z, y):
        return 0.5 * (y - z) ** 2

    def dphi(self, z, y):
        return z - y

    def d2phi(self, z, y):
        return np.ones_like(z)


#: float32 paths clip this much below the clipping norm (float32 norms are good to ~1e-7)
CLIP_MARGIN_FLOAT32 = 1e-5


@dataclass(frozen=True)
class MLP(Model):
    """One hidden layer of width ``hidden`` (default d, as in the papers), tanh, logistic output.

    θ packs ``W1 (h×d), b1 (h), w2 (h), b2`` in that order.  Non-convex: only
    mechanisms whose proofs need no convexity apply.
    """

    hidden: int | None = None

    id: ClassVar[str] = "mlp"
    name: ClassVar[str] = "One-hidden-layer network"
    convex: ClassVar[bool] = False
    # float32 and the data's sparse twin: per estimated (row × parameter) a step costs about an
    # eighth of the linear models' slowest (benchmarks/bench_budget.py: input-kang 0.24 s per 10⁹
    # on the MLP against 1.8 s on LR); 0.15 keeps a margin
    work_weight: ClassVar[float] = 0.15

    # rows per chunk × runs × hidden kept below this many floats: a chunk's dozen elementwise
    # passes then mostly stay in cache (Adult, R = 5, one step: 4 M → 1 M floats, 80 → 72 ms on
    # 2 threads, 135 → 125 ms on one; 0.5 M no faster, 0.1 M slower)
    _CHUNK_FLOATS: ClassVar[int] = 1_000_000
    #: bytes a training step holds besides the (runs × rows) arrays: a few chunk-sized arrays on
    #: each of the pool's threads (the run's memory budget)
    memory_overhead: ClassVar[int] = 3 * _CHUNK_FLOATS * 8 * 2
    #: the training loops' precision (see :meth:`clipped_grad_sum`)
    compute_dtype: ClassVar[str] = "float32"

    def width(self, d: int) -> int:
        return int(self.hidden or d)

    def n_params(self, d: int) -> int:
        h = self.width(d)
        return h * d + 2 * h + 1

    def _d_from_p(self, p: int) -> int:
        if self.hidden:
            d = (p - 2 * self.hidden - 1) // self.hidden
        else:  # p = d² + 2d + 1 = (d + 1)²
            d = int(round(np.sqrt(p))) - 1
        if self.n_params(d) != p:
            raise ValueError(f"parameter vector of length {p} does not fit an MLP")
        return d

    def init(self, runs: int, d: int, rngs=None) -> np.ndarray:
        """Glorot-style seeded start, one generator per run."""
        if rngs is None:
            raise ValueError("MLP.init needs one random generator per run")
        h = self.width(d)
        out = np.zeros((runs, self.n_params(d)))
        for r in range(runs):
            g = rngs[r]
            out[r, : h * d] = g.normal(0.0, 1.0 / np.sqrt(d), size=h * d)
            out[r, h * d + h : h * d + 2 * h] = g.normal(0.0, 1.0 / np.sqrt(h), size=h)
        return out

    def unpack(self, theta: np.ndarray, d: int):
        h = self.width(d)
        R = theta.shape[0]
        W1 = theta[:, : h * d].reshape(R, h, d)
        b1 = theta[:, h * d : h * d + h]
        w2 = theta[:, h * d + h : h * d + 2 * h]
        b2 = theta[:, -1]
        return W1, b1, w2, b2

    @property
    def lipschitz(self) -> float:
        return float("inf")  # unbounded weights: per-example clipping supplies the bound

    @property
    def smoothness(self) -> float:
        return float("inf")

    def _forward(self, theta, X, rows=None):
        """Hidden activations (R, n, h) and output scores (R, n) of the rows ``rows`` of a
        shared X (2-D; its sparse twin serves it), or of a per-run chunk X (3-D)."""
        W1, b1, w2, b2 = self.unpack(theta, X.shape[-1])
        if X.ndim == 2:
            A = linalg.project_rows(X, W1, rows)
        else:
            A = np.einsum("rnd,rhd->rnh", X, W1, optimize=True)
        A += b1[:, None, :]  # A is this call's own array: in place, no (R, n, h) temporaries
        H = np.tanh(A, out=A)
        out = np.einsum("rnh,rh->rn", H, w2) + b2[:, None]
        return H, out

    def _chunks(self, theta, X, h=None):
        R = theta.shape[0]
        h = self.width(X.shape[-1]) if h is None else h
        n = X.shape[-2]
        step = max(1, self._CHUNK_FLOATS // max(1, R * h))
        for s in range(0, n, step):
            yield s, min(n, s + step)

    @staticmethod
    def _part(X, y, s, e):
        """Chunk ``s:e``: (the X to pass on, the row slice for a shared X, y's rows, X's rows)."""
        if X.ndim == 2:
            return X, slice(s, e), y[s:e], X[s:e]
        return X[:, s:e], None, y[:, s:e], X[:, s:e]

    def scores(self, theta, X):
        parts = []
        for s, e in self._chunks(theta, X):
            Xa, rows, _, _ = self._part(X, X[..., 0], s, e)
            parts.append(self._forward(theta, Xa, rows)[1])
        return np.concatenate(parts, axis=-1)

    def data_loss(self, theta, X, y, dtype=None):
        """Mean loss per run, in float64, or with the forward pass in ``dtype`` (the loss curve's)."""
        n = X.shape[-2]
        if dtype is not None and np.dtype(dtype) == np.float32:  # the fused kernel's forward pass
            return self._fused(theta, X, y, np.inf, None, False, True)[1] / n

        def chunk(bounds):
            Xa, rows, yc, _ = self._part(X, y, *bounds)
            _, out = self._forward(theta, Xa, rows)
            return np.sum(-log_expit(yc * out.astype(np.float64)), axis=-1)

        total = np.zeros(theta.shape[0])
        for part in linalg.map_chunks(chunk, self._chunks(theta, X)):  # summed in chunk order
            total += part
        return total / n

    def _terms(self, theta, X, y, rows=None):
        """The output scores and the per-example pieces: out, g = dℓ/dout (R,n),
        δ1 = g·w2·(1−H²) (R,n,h), H.  ``y``: the labels of these rows."""
        H, out = self._forward(theta, X, rows)
        g = -y * expit(-y * out)
        _, _, w2, _ = self.unpack(theta, X.shape[-1])
        delta1 = np.square(H)  # δ1 = (1 − H²)·w2·g, built in one (R, n, h) array
        np.subtract(1.0, delta1, out=delta1)
        delta1 *= w2[:, None, :]
        delta1 *= g[:, :, None]
        return out, g, delta1, H

    def _backward_terms(self, theta, X, y, rows=None):
        """Per-example pieces: g = dℓ/dout (R,n), δ1 = g·w2·(1−H²) (R,n,h), H."""
        return self._terms(theta, X, y, rows)[1:]

    def _assemble(self, coef, g, delta1, H, X, rows=None):
        """``Σ_i coef_i ∇ℓ_i`` from the per-example pieces, (R, p)."""
        cd = coef[:, :, None] * delta1
        if X.ndim == 2:
            dW1 = linalg.project_rows_t(cd, X, rows)
        else:
            dW1 = np.einsum("rnh,rnd->rhd", cd, X, optimize=True)
        db1 = cd.sum(axis=1)
        dw2 = np.einsum("rn,rnh->rh", coef * g, H)
        db2 = (coef * g).sum(axis=1)
        R = coef.shape[0]
        return np.concatenate([dW1.reshape(R, -1), db1, dw2, db2[:, None]], axis=1)

    def grad(self, theta, X, y):
        return self.loss_and_grad(theta, X, y)[1]

    def loss_and_grad(self, theta, X, y):
        """One forward pass per chunk serves both (the L-BFGS reference solve calls this)."""
        n = X.shape[-2]

        def chunk(bounds):
            Xa, rows, yc, _ = self._part(X, y, *bounds)
            out, g, delta1, H = self._terms(theta, Xa, yc, rows)
            return np.sum(-log_expit(yc * out), axis=-1), self._assemble(np.ones_like(g), g, delta1, H, Xa, rows)

        total = np.zeros_like(theta)
        value = np.zeros(theta.shape[0])
        for part_value, part_grad in linalg.map_chunks(chunk, self._chunks(theta, X)):  # in chunk order
            value += part_value
            total += part_grad
        loss = value / n + self.penalty(theta)
        return loss, total / n + self.lam * theta

    def per_example_grads(self, theta, X, y):
        g, delta1, H = self._backward_terms(theta, X, y)
        R, n = g.shape
        if X.ndim == 2:
            dW1 = delta1[:, :, :, None] * X[None, :, None, :]
        else:
            dW1 = delta1[:, :, :, None] * X[:, :, None, :]
        return np.concatenate(
            [dW1.reshape(R, n, -1), delta1, g[:, :, None] * H, g[:, :, None]], axis=2
        )

    def clipped_grad_sum(self, theta, X, y, clip_norm, weights=None, row_norms=None, dtype=None):
        """Σ_i of the per-example gradients clipped to ``clip_norm``, (R, p) in float64."""
        return self._clipped(theta, X, y, clip_norm, weights, dtype, with_loss=False)[0]

    def trace_loss(self, theta, X, y):
        """The objective with the forward pass in :attr:`compute_dtype`, as the training steps
        compute it (a loss-curve point, 1e-6 relative of :meth:`loss`, at 2-3× less cost: a
        DP-SGD run's curve on full data costs more than its sampled steps)."""
        value = self.data_loss(theta, X, y, dtype=self.compute_dtype)
        return value + self.penalty(theta)

    def clipped_grad_sum_and_loss(self, theta, X, y, clip_norm):
        """The clipped sum and the objective at θ from one forward pass (in :attr:`compute_dtype`:
        the loss curve's points are then exact to about 1e-7 relative, and cost nothing)."""
        total, value = self._clipped(theta, X, y, clip_norm, None, None, with_loss=True)
        return total, value / X.shape[-2] + self.penalty(theta)

    def _clipped(self, theta, X, y, clip_norm, weights, dtype, with_loss):
        """(Σ_i clipped ∇ℓ_i, Σ_i ℓ_i or None) per run.

        The training loops' heaviest work, so it runs in ``dtype`` (default
        :attr:`compute_dtype`, float32): in float32 through the fused kernel of
        :mod:`dpcore.numerics.kernels` (every row's forward, tanh, norm, clip and backward while it is
        in cache), in float64 through the numpy passes of :meth:`_clipped_numpy`; their sums are
        returned in float64 either way.  In float32 it clips at ``clip_norm·(1 − 1e-5)``, so the
        rounding of the norms (about 1e-7 relative) never lets a clipped gradient exceed
        ``clip_norm``, the sensitivity the accountant uses.  The exact reference (L-BFGS), the
        final loss and the gap stay float64.
        """
        dtype = np.dtype(self.compute_dtype if dtype is None else dtype)
        if dtype != np.float32:
            return self._clipped_numpy(theta, X, y, clip_norm, weights, dtype, with_loss)
        return self._fused(theta, X, y, clip_norm * (1.0 - CLIP_MARGIN_FLOAT32), weights, True, with_loss)

    #: the fused kernel's hidden width is padded to a multiple of this (whole SIMD vectors of
    #: float32 on AVX-512; the padded units have zero weights and add exactly zero)
    _PAD: ClassVar[int] = 16

    def _fused(self, theta, X, y, clip, weights, with_grad: bool, with_loss: bool):
        """The float32 kernel's (Σ clipped ∇ℓ_i (R, p) float64 or None, Σ ℓ_i (R,) or None),
        its row chunks on the shared pool's threads, summed in their order."""
        R, d = theta.shape[0], X.shape[-1]
        h = self.width(d)
        hp = -(-h // self._PAD) * self._PAD
        W1, b1, w2, b2 = self.unpack(theta.astype(np.float32), d)
        W1t = np.zeros((R, d, hp), np.float32)
        W1t[:, :, :h] = W1.transpose(0, 2, 1)
        B1, W2 = np.zeros((R, hp), np.float32), np.zeros((R, hp), np.float32)
        B1[:, :h], W2[:, :h] = b1, w2
        rows = linalg.nonzero_rows(X)
        n = X.shape[-2]
        Y = np.ascontiguousarray(np.asarray(y, dtype=np.float32).reshape(-1, n))
        Wt = np.zeros((1, 0)) if weights is None else np.ascontiguousarray(
            np.asarray(weights, dtype=np.float64).reshape(-1, n))
        run_rows = n if X.ndim == 3 else 0
        clip = float(clip)

        def chunk(bounds):
            return kernels.mlp_clipped_block(rows, run_rows, Y, W1t, B1, W2, np.ascontiguousarray(b2), clip,
                                             Wt, *bounds, with_grad=with_grad, with_loss=with_loss)

        total = np.zeros((R, d, hp)) if with_grad else None
        gb1, gw2, gb2 = np.zeros((R, hp)), np.zeros((R, hp)), np.zeros(R)
        value = np.zeros(R)
        for cW1t, cb1, cw2, cb2, closs in linalg.map_chunks(chunk, self._chunks(theta, X, hp)):
            if with_grad:
                total += cW1t
                gb1 += cb1
                gw2 += cw2
                gb2 += cb2
            value += closs
        grad = None
        if with_grad:
            grad = np.concatenate([total[:, :, :h].transpose(0, 2, 1).reshape(R, -1), gb1[:, :h], gw2[:, :h],
                                   gb2[:, None]], axis=1)
        return grad, (value if with_loss else None)

    def _clipped_numpy(self, theta, X, y, clip_norm, weights, dtype, with_loss):
        """:meth:`_clipped` as numpy array passes over row chunks (the float64 route, and the
        tests' second route for the fused kernel)."""
        # ‖∇ℓ_i‖² = ‖δ1‖²(‖x‖² + 1) + g²(‖H‖² + 1), so no (R, n, p) array is needed.
        dtype = np.dtype(dtype)
        if dtype == np.float32:
            if not linalg.is_sparse(X):  # a sparse X's twin makes its own float32 copy
                X = linalg.single(X)
            y, theta = np.asarray(y, dtype=np.float32), theta.astype(np.float32)
            clip_norm = clip_norm * (1.0 - CLIP_MARGIN_FLOAT32)

        def chunk(bounds):  # the chunks run on the shared pool's threads, summed in their order
            s, e = bounds
            Xa, rows, yc, Xc = self._part(X, y, s, e)
            out, g, delta1, H = self._terms(theta, Xa, yc, rows)
            value = np.sum(-log_expit(yc * out.astype(np.float64)), axis=-1) if with_loss else None
            xx = np.einsum("...nd,...nd->...n", Xc, Xc)
            sq = (np.einsum("rnh,rnh->rn", delta1, delta1) * (xx + 1.0)
                  + g**2 * (np.einsum("rnh,rnh->rn", H, H) + 1.0))
            scale = np.minimum(1.0, clip_norm / np.maximum(np.sqrt(sq.astype(np.float64)), 1e-300))
            if weights is not None:
                scale = scale * (weights[:, s:e] if weights.ndim == 2 else weights[s:e])
            return self._assemble(scale.astype(dtype), g, delta1, H, Xa, rows), value

        total = np.zeros(theta.shape, dtype=np.float64)
        value = np.zeros(theta.shape[0]) if with_loss else None
        for part, part_value in linalg.map_chunks(chunk, self._chunks(theta, X)):  # in chunk order
            total += part
            if with_loss:
                value += part_value
        return total, value

    def predict(self, theta, X):
        return np.where(self.scores(theta, X) >= 0, 1.0, -1.0)


MODELS: dict[str, type[Model]] = {m.id: m for m in (LogReg, LinReg, MLP)}


def make_model(model_id: str, *, lam: float | None = None, radius: float | None = None) -> Model:
    """Build a model by id with its defaults, overriding λ and the radius if given."""
    try:
        cls = MODELS[model_id]
    except KeyError:
        raise ModelError(unknown_choice("model", model_id, MODELS)) from None
    kw = {}
    if lam is not None:
        kw["lam"] = lam
    if radius is not None:
        kw["radius"] = radius
    return cls(**kw)
