"""Batched optimisers with the hooks that mechanisms use.

One call trains R independent runs at once; run r draws all of its
randomness (batches, noise) from its own generator in the same order whatever
R is, so R batched runs equal R separate runs with the same seeds.

Hooks, in the order they act on one step:

* ``X``/``y`` — the data the optimiser sees (input perturbation passes
  perturbed data here);
* ``clip_norm`` — per-example clipping (SGD);
* ``noise_std`` — Gaussian noise added to the averaged gradient, per
  coordinate (a float, or an array of shape (R,) for a per-run σ);
* ``grad_hook(t, grad, rngs)`` — any other transformation of the noisy
  gradient (smoothing, for instance), returning the new gradient;
* projection onto the model's domain after the step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .numerics import linalg, streams
from .models import Model

__all__ = ["BatchRNG", "OptResult", "gradient_descent", "sgd", "run_seeds", "trace_marks",
           "DEFAULT_TRACE_POINTS", "Progress", "TraceListener", "step_reporter"]


def run_seeds(seed: int, repeats: int) -> list[int]:
    """Repeat r of a batch with base seed S uses seed S + r."""
    return [int(seed) + r for r in range(int(repeats))]


class BatchRNG:
    """One ``numpy.random.Generator`` per run; draws are stacked along axis 0."""

    #: Called with the noise each noisy gradient step released (the released gradient minus the
    #: clean one), when set: how a white-box audit (dpcore.audit.whitebox) observes an optimiser.
    observer = None
    #: Called with each noisy release itself (the clean gradient plus its noise), when set: how the
    #: end-to-end white-box check measures what a replaced record really moves.
    release_observer = None

    def __init__(self, seeds: Sequence[int], stream: int = streams.RUN, key: Sequence[int] = ()):
        self.seeds = [int(s) for s in seeds]
        # ``stream`` separates independent uses of one seed (data split vs noise ...); ``key``
        # (a run's ``RunSpec.stream``) separates runs that share a seed but must not share draws.
        self.keys = [tuple(int(k) for k in key)] * len(self.seeds)
        self.gens = [np.random.default_rng([s, stream, *k]) for s, k in zip(self.seeds, self.keys)]

    def spawn_stream(self, stream: int) -> "BatchRNG":
        """Independent generators for the same seeds and keys (e.g. initialisation vs noise)."""
        out = BatchRNG.__new__(BatchRNG)
        out.seeds, out.keys = list(self.seeds), list(self.keys)
        out.gens = [np.random.default_rng([s, stream, *k]) for s, k in zip(out.seeds, out.keys)]
        return out

    def subset(self, runs) -> "BatchRNG":
        """The generators of some runs (shared, so their streams continue)."""
        out = BatchRNG.__new__(BatchRNG)
        out.seeds = [self.seeds[r] for r in runs]
        out.keys = [self.keys[r] for r in runs]
        out.gens = [self.gens[r] for r in runs]
        return out

    @classmethod
    def concat(cls, parts: Sequence["BatchRNG"]) -> "BatchRNG":
        """The runs of several batches, in order (their generators shared, not copied)."""
        out = cls.__new__(cls)
        out.seeds = [s for b in parts for s in b.seeds]
        out.keys = [k for b in parts for k in b.keys]
        out.gens = [g for b in parts for g in b.gens]
        return out

    def __len__(self) -> int:
        return len(self.gens)

    def __getitem__(self, r: int) -> np.random.Generator:
        return self.gens[r]

    def normal(self, shape: tuple[int, ...] | int, scale=1.0) -> np.ndarray:
        out = np.stack([g.standard_normal(shape) for g in self.gens])
        scale = np.asarray(scale, dtype=float)
        if scale.ndim == 1:
            scale = scale.reshape((-1,) + (1,) * (out.ndim - 1))
        return out * scale

    def normal_around(self, center: np.ndarray, scale: float) -> np.ndarray:
        """``center + N(0, scale²)`` per run, (R, *center.shape): the bits of
        ``center[None] + normal(center.shape, scale)``, drawn in place, each run's generator on
        one thread of the context's pool (numpy's generators release the GIL), with no
        temporary copies (input perturbation's release: 3× faster on Adult, R = 5)."""
        out = np.empty((len(self.gens),) + center.shape)

        def some(runs: range) -> None:
            for r in runs:
                self.gens[r].standard_normal(out=out[r])
                out[r] *= scale
                out[r] += center

        linalg.map_chunks(some, linalg.run_groups(len(self.gens)))
        return out

    def sample_batch(self, n: int, batch_size: int) -> np.ndarray:
        """Uniform mini-batch without replacement per run, (R, B) indices, each run's in increasing
        order (a batch is a set; read in row order, its rows stream through the cache)."""
        return np.stack([np.sort(g.choice(n, size=batch_size, replace=False)) for g in self.gens])

    def poisson_batch(self, n: int, rate: float) -> tuple[np.ndarray, np.ndarray]:
        """Poisson sampling (each row independently with probability ``rate``).

        Drawn as a Binomial(n, rate) size then a uniform subset of that size,
        which has the same distribution.  Returns padded indices (R, B_max), each
        run's in increasing order, and a 0/1 weight mask of the same shape.
        """
        sizes = [int(g.binomial(n, rate)) for g in self.gens]
        bmax = max(1, max(sizes))
        idx = np.zeros((len(self.gens), bmax), dtype=np.int64)
        mask = np.zeros((len(self.gens), bmax))
        for r, (g, k) in enumerate(zip(self.gens, sizes)):
            if k:
                idx[r, :k] = np.sort(g.choice(n, size=k, replace=False))
                mask[r, :k] = 1.0
        return idx, mask


@dataclass(frozen=True)
class OptResult:
    theta: np.ndarray  # (R, p) final iterate
    loss_trace: np.ndarray  # (K, R) training objective on the data the optimiser saw
    trace_steps: np.ndarray  # (K,) step index of each trace row
    average: np.ndarray | None = None  # (R, p) iterate average, when asked for


#: loss-curve points the optimisers record when a caller does not say
DEFAULT_TRACE_POINTS = 26


def trace_marks(iterations: int, points: int | None) -> set[int]:
    if points is None:
        points = DEFAULT_TRACE_POINTS
    if points <= 0:
        return set()
    return set(np.unique(np.linspace(0, iterations, min(points, iterations + 1)).round().astype(int)))


def _noisy_step(model, theta, grad, t, lr, noise_std, grad_hook, rngs):
    if noise_std is not None and np.any(np.asarray(noise_std) > 0):
        noisy = grad + rngs.normal(theta.shape[1], noise_std)
        if rngs.observer is not None:  # a white-box audit sees the release, knows the clean part
            rngs.observer(noisy - grad)
        if rngs.release_observer is not None:
            rngs.release_observer(noisy)
        grad = noisy
    if grad_hook is not None:
        grad = grad_hook(t, grad, rngs)
    step = lr(t) if callable(lr) else lr
    if isinstance(step, np.ndarray):  # one rate per run (a stack of configurations)
        step = step[:, None]
    return model.project(theta - step * grad)


#: ``progress(done, total, label)``: how long work tells its caller how far it is
Progress = Callable[[int, int, str], None]
#: ``on_trace(steps, trace)``: the loss curve recorded so far, (K,) steps and (K, R) values, each time
#: it gains a point (a view draws it while the run trains; never changes a number)
TraceListener = Callable[[np.ndarray, np.ndarray], None]


def _record(trace: list, steps: list, value, t: int, on_trace: TraceListener | None) -> None:
    trace.append(value)
    steps.append(t)
    if on_trace is not None:
        on_trace(np.array(steps), np.array(trace).reshape(len(steps), -1))
#: at most this many progress reports per loop (each is a Python call, never a number's input)
PROGRESS_REPORTS = 100


def step_reporter(progress: Progress | None, total: int, label: str = "training") -> Callable[[int], None]:
    """``tell(done)`` for a loop of ``total`` steps: calls ``progress(done, total, label)``
    about :data:`PROGRESS_REPORTS` times (and at the last step); does nothing without one."""
    if progress is None or total <= 0:
        return lambda done: None
    every = max(1, total // PROGRESS_REPORTS)

    def tell(done: int) -> None:
        if done % every == 0 or done == total:
            progress(done, total, label)

    return tell


def gradient_descent(
    model: Model,
    X: np.ndarray,
    y: np.ndarray,
    theta0: np.ndarray,
    *,
    iterations: int,
    learning_rate: float | Callable[[int], float],
    rngs: BatchRNG,
    noise_std: float | np.ndarray | None = None,
    grad_hook: Callable | None = None,
    clip_norm: float | None = None,
    trace_points: int | None = None,
    progress: Progress | None = None,
    on_trace: TraceListener | None = None,
) -> OptResult:
    """Full-batch (noisy) gradient descent, T steps, for R runs at once.

    With ``clip_norm`` the data part of the gradient is the mean of per-example
    gradients clipped to that norm (for models without a Lipschitz bound).
    ``progress(done, T, "training")`` hears of the steps (see :func:`step_reporter`),
    ``on_trace`` of the loss curve as it grows (see :data:`TraceListener`).
    """
    theta = np.array(theta0, dtype=float, copy=True)
    marks = trace_marks(iterations, trace_points)
    trace, steps = [], []
    n = X.shape[-2]
    tell = step_reporter(progress, iterations)
    for t in range(iterations):
        if clip_norm is None and t in marks:
            value, grad = model.loss_and_grad(theta, X, y)  # the trace point shares the pass
            _record(trace, steps, value, t, on_trace)
        elif clip_norm is None:
            grad = model.grad(theta, X, y)
        else:
            if t in marks:  # the trace point from the step's own pass where the model has one
                g_sum, value = model.clipped_grad_sum_and_loss(theta, X, y, clip_norm)
                _record(trace, steps, value, t, on_trace)
            else:
                g_sum = model.clipped_grad_sum(theta, X, y, clip_norm)
            grad = g_sum / n + model.lam * theta
        theta = _noisy_step(model, theta, grad, t, learning_rate, noise_std, grad_hook, rngs)
        tell(t + 1)
    if iterations in marks:
        _record(trace, steps, model.trace_loss(theta, X, y), iterations, on_trace)
    return OptResult(theta, np.array(trace).reshape(len(steps), theta.shape[0]), np.array(steps))


#: the mini-batches' bytes a step gathers from which :func:`sgd` splits the runs across the
#: pool (below it, thread hand-offs cost more than they save: an audit's 1,000 runs of a
#: 10-feature dataset stay one batched call)
SPLIT_GATHER_BYTES = 2**22


def _clipped_sums(model: Model, theta, X, y, idx, weights, clip: float, norms, runs: range) -> np.ndarray:
    """The clipped sums of the mini-batches (rows ``idx``, (R, B)) of ``runs``: their rows
    gathered (per-run data: each run's own), then the model's clipped sum of them (``norms``:
    a shared X's row norms, or ``None``)."""
    sl, rows = slice(runs.start, runs.stop), idx[runs.start:runs.stop]
    own = np.arange(runs.start, runs.stop)[:, None]  # per-run data: run r's rows of X[r]
    Xg = X[rows] if X.ndim == 2 else X[own, rows]
    yg = y[rows] if y.ndim == 1 else y[own, rows]
    return model.clipped_grad_sum(theta[sl], Xg, yg, clip, None if weights is None else weights[sl],
                                  row_norms=None if norms is None else norms[rows])


def _split_clipped_sums(model: Model, theta, X, y, idx, weights, clip: float, norms) -> np.ndarray:
    """:func:`_clipped_sums` of every run, the runs in one contiguous group per pool thread,
    each group's gathers and products there.  For a model whose runs are computed apart from
    each other (:attr:`~dpcore.models.Model.runs_independent`) these are the bits of one batched
    call (the stacked products are one product per run), with the gathers (on Adult, R = 20,
    q = 0.05: 30 MB a step) and the products on both cores."""
    return np.concatenate(linalg.map_chunks(
        lambda runs: _clipped_sums(model, theta, X, y, idx, weights, clip, norms, runs), linalg.run_groups(len(idx))))


def sgd(
    model: Model,
    X: np.ndarray,
    y: np.ndarray,
    theta0: np.ndarray,
    *,
    iterations: int,
    learning_rate: float | Callable[[int], float],
    rngs: BatchRNG,
    batch_size: int | None = None,
    sample_rate: float | None = None,
    clip_norm: float | None = None,
    noise_std: float | np.ndarray | None = None,
    grad_hook: Callable | None = None,
    trace_points: int | None = None,
    average: bool = False,
    progress: Progress | None = None,
    on_trace: TraceListener | None = None,
) -> OptResult:
    """Mini-batch or Poisson-sampled SGD with optional per-example clipping.

    Exactly one of ``batch_size`` (uniform batches without replacement) and
    ``sample_rate`` (Poisson sampling) is given.  The step direction is
    ``(Σ_{i∈B} clip(g_i)) / B̄ + λθ + noise``, where ``B̄`` is the batch size,
    or its expectation ``q·n`` under Poisson sampling (so the sum's
    sensitivity is what the accountant sees).  ``progress`` as in :func:`gradient_descent`.
    """
    if (batch_size is None) == (sample_rate is None):
        raise ValueError("give exactly one of batch_size and sample_rate")
    n = X.shape[-2]
    theta = np.array(theta0, dtype=float, copy=True)
    marks = trace_marks(iterations, trace_points)
    trace, steps = [], []
    avg = np.zeros_like(theta) if average else None
    denom = float(batch_size) if batch_size is not None else float(sample_rate) * n
    tell = step_reporter(progress, iterations)
    for t in range(iterations):
        if t in marks:
            _record(trace, steps, model.trace_loss(theta, X, y), t, on_trace)
        if batch_size is not None:
            idx = rngs.sample_batch(n, batch_size)
            weights = None
        else:
            idx, weights = rngs.poisson_batch(n, sample_rate)
        clip = np.inf if clip_norm is None else clip_norm
        norms = linalg.row_norms(X) if X.ndim == 2 and np.isfinite(clip) else None  # held per shared X
        # a shared X's sparse twin: the batches read in place by the compiled kernels; else gathered
        g_sum = model.sampled_clipped_sum(theta, X, y, idx, weights, clip, norms, linalg.run_groups(len(idx))) \
            if X.ndim == 2 else None
        if g_sum is None:
            split = model.runs_independent and len(idx) > 1 and idx.size * X.shape[-1] * 8 >= SPLIT_GATHER_BYTES
            g_sum = _split_clipped_sums(model, theta, X, y, idx, weights, clip, norms) if split else \
                _clipped_sums(model, theta, X, y, idx, weights, clip, norms, range(len(idx)))
        grad = g_sum / denom + model.lam * theta
        theta = _noisy_step(model, theta, grad, t, learning_rate, noise_std, grad_hook, rngs)
        if average:
            avg += (theta - avg) / (t + 1)
        tell(t + 1)
    if iterations in marks:
        _record(trace, steps, model.trace_loss(theta, X, y), iterations, on_trace)
    return OptResult(theta, np.array(trace).reshape(len(steps), theta.shape[0]), np.array(steps), avg)
