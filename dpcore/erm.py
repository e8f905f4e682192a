"""Exact non-private ERM: the reference minimiser θ* and ``L* = L(θ*)`` (SPEC §1).

* ``logreg``: damped Newton in float64 until ‖∇L‖ ≤ 1e-12 (checked ≤ 1e-10).
* ``linreg``: the ball-constrained least-squares problem solved in the
  eigenbasis of the Hessian (a trust-region subproblem), optimal to rounding;
  its optimality measure is the projected-gradient norm ‖θ − Π(θ − ∇L)‖.
* ``mlp``: best of a few seeded L-BFGS restarts — a **local** optimum, so
  the "gap" of an MLP is measured against the best point found, not a
  certified minimum.

:class:`ReferenceStore` solves each (dataset, model) once, in memory and optionally on disk.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
from scipy.optimize import brentq, minimize

from ._version import __version__
from . import models as _models
from .privacy.accounting import CalibrationTable
from . import shipped
from .datasets import data_folder
from .exceptions import ModelError, moved_attributes
from .cache import DiskCache, Memo
from .models import LinReg, LogReg, MLP, Model
from .optim import step_reporter

_LOG = logging.getLogger(__name__)

__all__ = ["ErmSolution", "solve_erm", "LazySolution", "known_start", "ReferenceStore", "GRAD_TOL"]

GRAD_TOL = 1e-10
#: ``SHIPPED_REFERENCES`` was a module attribute in 0.1.0 (now each store's data folder)
__getattr__ = moved_attributes(__name__, {"SHIPPED_REFERENCES": (
    "dpcore.shipped.folder_of('references') or ReferenceStore(...).shipped_path(...)",
    lambda: shipped.folder_of("references"))})
#: a stored solution's gradient norm, recomputed on the data, may differ from the solver's by
#: rounding; above this it is not an optimum (the gap it would cause: ‖∇‖²/2λ ≤ 5e-10 at λ = 1e-3)
STORED_GRAD_TOL = 1e-6
#: the same for a non-convex model, whose solve (multi-start L-BFGS, 300 iterations a start) ends at
#: a local optimum with a gradient norm of 1e-8 to 2.5e-4 on the bundled data (Adult 2.0e-4,
#: Bank 2.5e-5): a stored point is a local optimum if its recomputed gradient is this small
LOCAL_GRAD_TOL = 1e-3


def stored_grad_tol(model: Model) -> float:
    """How small a stored solution's gradient norm, recomputed on the data, must be for it to be
    read back: an optimum's (convex models) or a local optimum's (the MLP)."""
    return STORED_GRAD_TOL if model.convex else LOCAL_GRAD_TOL


@dataclass(frozen=True)
class ErmSolution:
    theta: np.ndarray  # (p,)
    loss: float  # L* on the training data
    grad_norm: float  # ‖∇L(θ*)‖ (projected gradient for constrained problems)
    iterations: int
    method: str
    certified_optimum: bool  # False for the MLP's local optimum


def _newton_logreg(model: LogReg, X: np.ndarray, y: np.ndarray, max_iter: int = 100) -> ErmSolution:
    if model.lam <= 0:
        raise ModelError(
            "exact logistic ERM needs λ > 0 (without it the minimiser may not exist on "
            "separable data): set lam to a positive value."
        )
    theta = np.zeros((1, X.shape[1]))
    f = model.loss(theta, X, y)[0]
    gnorm = np.inf
    for it in range(1, max_iter + 1):
        g = model.grad(theta, X, y)[0]
        gnorm = float(np.linalg.norm(g))
        if gnorm <= 1e-12:
            break
        H = model.hessian(theta, X, y)[0]
        step = np.linalg.solve(H, g)
        t = 1.0
        while True:  # Armijo backtracking; Newton's full step is taken near θ*
            cand = theta - t * step[None]
            fc = model.loss(cand, X, y)[0]
            if fc <= f - 1e-4 * t * g @ step or t < 1e-10:
                break
            # Near θ* the loss changes below rounding: accept a full step that shrinks ‖∇L‖.
            if t == 1.0 and np.linalg.norm(model.grad(cand, X, y)[0]) < 0.5 * gnorm:
                fc = min(fc, f)
                break
            t *= 0.5
        if fc > f and t < 1e-10:
            break  # rounding floor reached
        theta, f = cand, fc
    g = model.grad(theta, X, y)[0]
    return ErmSolution(theta[0], float(model.loss(theta, X, y)[0]),
                       float(np.linalg.norm(g)), it, "newton", True)


def quadratic_ball(A: np.ndarray, b: np.ndarray, eta: float) -> tuple[np.ndarray, str]:
    """argmin ½θᵀAθ − bᵀθ over ‖θ‖ ≤ η for a symmetric PSD A (trust-region subproblem)."""
    evals, Q = np.linalg.eigh(A)
    evals = np.maximum(evals, 0.0)
    c = Q.T @ b

    def norm_at(mu: float) -> float:
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            v = c / (evals + mu)
            top = float(np.max(np.abs(v))) if v.size else 0.0
            if not np.isfinite(top):
                return math.inf
            return 0.0 if top == 0.0 else top * float(np.linalg.norm(v / top))  # no overflow

    if evals.min() > 1e-14 * max(evals.max(), 1.0) and norm_at(0.0) <= eta:
        theta = Q @ (c / evals)
        method = "normal equations (interior)"
    else:
        # Boundary solution: find μ > 0 with ‖(A + μI)⁻¹b‖ = η (‖·‖ decreases in μ).
        lo = max(0.0, -evals.min()) + 1e-300
        if norm_at(lo) <= eta:
            # A singular (a constant or repeated feature) with b in its range: (A + μI)θ = b has a
            # solution inside the ball as μ → 0, an interior minimiser; the secular equation has no
            # root (brentq saw no sign change: issue 55, a regression CSV with a constant column)
            mu = lo
            method = "normal equations (interior, singular)"
        else:
            hi = max(np.linalg.norm(c) / eta, 1e-12)
            while norm_at(hi) > eta:
                hi *= 2.0
            # 1/‖x(μ)‖ − 1/η: finite where ‖x‖ overflows, and nearly linear in μ
            mu = brentq(lambda m: 1.0 / norm_at(m) - 1.0 / eta, lo, hi, xtol=1e-300,
                        rtol=4 * np.finfo(float).eps, maxiter=500)
            method = "trust-region secular equation (boundary)"
        theta = Q @ (c / (evals + mu))
        size = float(np.linalg.norm(theta))
        if size > eta:
            theta *= eta / size
    return theta, method


def _ball_least_squares(model: LinReg, X: np.ndarray, y: np.ndarray) -> ErmSolution:
    """min ½θᵀAθ − bᵀθ over ‖θ‖ ≤ η, A = XᵀX/n + λI, b = Xᵀy/n."""
    n = X.shape[0]
    A = X.T @ X / n + model.lam * np.eye(X.shape[1])
    theta, method = quadratic_ball(A, X.T @ y / n, float(model.radius))
    th = theta[None]
    g = model.grad(th, X, y)
    pg = float(np.linalg.norm(th - model.project(th - g)))
    return ErmSolution(theta, float(model.loss(th, X, y)[0]), pg, 0, method, True)


#: L-BFGS's objective-and-gradient evaluations per iteration, an upper estimate (its line search
#: takes 1.0–1.2 on the bundled data; ``tests/test_erm.py`` counts them)
LBFGS_EVALS_PER_ITERATION = 1.25


def reference_passes(model: Model) -> float:
    """Passes over the training data the exact reference may take, each priced like one step of
    training (:func:`dpcore.experiments.run.work_estimate`): the MLP's restarts × iterations ×
    evaluations; 0 for the linear models, whose solve is a few dense Newton or eigen products
    (seconds on the largest bundled data) and is not counted."""
    return MLP_RESTARTS * MLP_MAX_ITER * LBFGS_EVALS_PER_ITERATION if isinstance(model, MLP) else 0.0


def _lbfgs_mlp(model: MLP, X: np.ndarray, y: np.ndarray, restarts: int = 3,
               max_iter: int = 300, seed: int = 0, progress=None) -> ErmSolution:
    best = None
    d = X.shape[1]
    tell = step_reporter(progress, restarts * max_iter, "exact reference (L-BFGS)")
    for k in range(restarts):
        done = [k * max_iter]

        def iterated(_, done=done):
            done[0] += 1
            tell(done[0])

        theta0 = model.init(1, d, [np.random.default_rng([seed, k])])[0]

        def fg(t):
            value, grad = model.loss_and_grad(t[None], X, y)
            return float(value[0]), grad[0]

        res = minimize(fg, theta0, jac=True, method="L-BFGS-B", callback=iterated,
                       options={"maxiter": max_iter, "gtol": 1e-10, "ftol": 1e-15})
        if best is None or res.fun < best.fun:
            best = res
    g = model.grad(best.x[None], X, y)[0]
    return ErmSolution(best.x, float(best.fun), float(np.linalg.norm(g)), int(best.nit),
                       f"L-BFGS, best of {restarts} seeded restarts (local optimum)", False)


#: the MLP's exact reference: the best of this many seeded L-BFGS runs of at most this many
#: iterations (read from the solver's defaults, whose source is in the stored solutions' key)
MLP_RESTARTS = inspect.signature(_lbfgs_mlp).parameters["restarts"].default
MLP_MAX_ITER = inspect.signature(_lbfgs_mlp).parameters["max_iter"].default


#: a perturbed solve's run keeps its Hessian for the next Newton step after a step that shrank its
#: gradient at least this many times (:func:`solve_perturbed`)
REUSE_HESSIAN = 8.0


def solve_perturbed(model: Model, X: np.ndarray, y: np.ndarray, linear: np.ndarray,
                    extra_l2: float = 0.0, start: np.ndarray | None = None) -> np.ndarray:
    """Exact minimisers of ``L(θ) + linearᵣᵀθ + (extra_l2/2)‖θ‖²`` for R runs, (R, p).

    The objective-perturbation mechanisms need the exact argmin of a randomly
    tilted objective; ``linear`` is that tilt per run, (R, p).  logreg: batched
    damped Newton to ‖∇‖ ≤ 1e-10; linreg: the ball-constrained quadratic.
    """
    R, p = linear.shape
    if isinstance(model, LinReg):
        n = X.shape[0]
        A = X.T @ X / n + (model.lam + extra_l2) * np.eye(p)
        base = X.T @ y / n
        return np.stack([quadratic_ball(A, base - linear[r], float(model.radius))[0] for r in range(R)])
    if not isinstance(model, LogReg):
        raise ModelError(f"no exact perturbed solver for model {model.id!r}")
    lam = model.lam + extra_l2
    if lam <= 0:
        raise ModelError("objective perturbation needs a strongly convex objective: set λ > 0")
    m = LogReg(lam=lam)
    theta = np.zeros((R, p)) if start is None else np.array(np.broadcast_to(start, (R, p)))

    def f_and_g(th):  # the objective and its gradient in one pass over X
        loss, grad = m.loss_and_grad(th, X, y)
        return loss + np.sum(linear * th, axis=1), grad + linear

    def f(th):
        return m.loss(th, X, y) + np.sum(linear * th, axis=1)

    fval, g = f_and_g(theta)
    # Hessians are 85 % of a solve (Xᵀ diag(w) X: n·p² against n·p for a gradient), so a run whose
    # last step shrank its gradient at least REUSE_HESSIAN-fold keeps its Hessian for the next
    # step (the chord method: near θ* the old Hessian's step is as good as Newton's to first
    # order); any other run computes a fresh one.  The stopping rule is unchanged: ‖∇‖ ≤ 1e-12.
    H = np.zeros((R, p, p))
    fresh = np.ones(R, dtype=bool)
    for _ in range(200):
        gn = np.linalg.norm(g, axis=1)
        active = gn > 1e-12
        if not active.any():
            break
        need = active & fresh
        if need.any():
            H[need] = m.hessian(theta[need], X, y)
        step = np.zeros_like(theta)
        step[active] = np.linalg.solve(H[active], g[active][:, :, None])[:, :, 0]
        # Full Newton steps that halve the gradient are taken outright (near the optimum the
        # objective changes below rounding, so Armijo cannot judge them); the rest backtrack.
        # The full step's objective and gradient come from one pass: they are the first
        # backtracking candidate's and, once taken, the next iteration's.
        full = theta - step
        f_full, g_full = f_and_g(full)
        full_ok = np.linalg.norm(g_full, axis=1) < 0.5 * gn
        t = np.ones(R)
        cand, fc = full, f_full
        for _ in range(60):  # per-run Armijo backtracking
            ok = (fc <= fval - 1e-4 * t * np.sum(g * step, axis=1)) | ~active | full_ok | (t < 1e-12)
            if ok.all():
                break
            t = np.where(ok, t, t * 0.5)
            cand = theta - t[:, None] * step
            fc = f(cand)
        taken_full = bool(np.all(t == 1.0))  # every run's candidate is the full step
        improved = full_ok | (fc <= fval)
        theta = np.where(improved[:, None], cand, theta)
        fval = np.where(improved, fc, fval)
        g = np.where(improved[:, None], g_full, g) if taken_full else m.grad(theta, X, y) + linear
        # a run whose Hessian was reused and did not shrink its gradient REUSE_HESSIAN-fold takes a
        # fresh one (and only then may it stop for want of progress)
        shrunk = np.linalg.norm(g, axis=1) * REUSE_HESSIAN <= gn
        retry = active & ~need & ~shrunk
        if not improved[active].any() and not retry.any():
            break
        fresh = ~shrunk | ~improved
    # Float64 cannot resolve the gradient below rounding of its largest terms; a large
    # random tilt (tiny ε) moves that floor, so the tolerance is relative to it.
    scale = max(1.0, float(np.max(np.linalg.norm(linear, axis=1) + lam * np.linalg.norm(theta, axis=1))))
    worst = float(np.linalg.norm(g, axis=1).max())
    if worst > GRAD_TOL * scale:
        raise ModelError(
            f"the perturbed objective was minimised only to gradient norm {worst:.2e}; "
            "increase λ (the privacy proof needs the exact minimiser)."
        )
    return theta


def solve_erm(model: Model, X: np.ndarray, y: np.ndarray, progress=None) -> ErmSolution:
    """Minimise the model's regularised objective on (X, y) in float64.  ``progress`` hears
    of the MLP's L-BFGS iterations (the only solve long enough to need it)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if isinstance(model, LogReg):
        sol = _newton_logreg(model, X, y)
    elif isinstance(model, LinReg):
        sol = _ball_least_squares(model, X, y)
    elif isinstance(model, MLP):
        return _lbfgs_mlp(model, X, y, progress=progress)
    else:  # pragma: no cover - registry guards this
        raise ModelError(f"no exact solver for model {model.id!r}")
    if not sol.grad_norm <= GRAD_TOL:
        raise ModelError(
            f"exact ERM for {model.id} stopped at gradient norm {sol.grad_norm:.2e} > {GRAD_TOL:g}; "
            "increase λ or check the data."
        )
    return sol


#: the code whose answers a stored solution holds: a change to any of it makes the stored keys
#: unfindable (so a changed solver never reads old answers); the store's own code (caching,
#: single flight) is not in it, so mending the store does not throw the shipped solutions away
_SOLVER = ("solve_erm", "_newton_logreg", "quadratic_ball", "_ball_least_squares", "_lbfgs_mlp")


# pure: a digest of the solver's and the models' source
@functools.cache
def _code_fingerprint() -> bytes:
    """The solver's and the models' source (and the tolerances a solve must meet)."""
    here = sys.modules[__name__]
    solver = "".join(inspect.getsource(getattr(here, name)) for name in _SOLVER)
    return (solver + repr((GRAD_TOL, STORED_GRAD_TOL, LOCAL_GRAD_TOL))).encode() + Path(_models.__file__).read_bytes()


_code_fingerprint()  # now, at import: a solver patched later (a test's counter) must not change the keys


def _disk_key(dataset, model: Model) -> str:
    h = hashlib.sha256()
    for a in (dataset.X_train, dataset.y_train):
        h.update(np.ascontiguousarray(a).tobytes())
        h.update(str(a.shape).encode())
    h.update(repr(model).encode())
    h.update(__version__.encode())
    h.update(_code_fingerprint())
    return h.hexdigest()[:24]


def _check_solution(rec: Any, dataset, model: Model) -> ErmSolution:
    """A stored solution, only if it still is one: the right schema and shape, finite, and
    re-checked in one pass over the data (its loss recomputed; its gradient norm within
    :func:`stored_grad_tol` of zero).  Raises ``ValueError`` (or ``KeyError``/``TypeError``)
    otherwise, and the cache layer solves again."""
    if not isinstance(rec, dict):
        raise ValueError("not a JSON object")
    theta = np.asarray(rec["theta"], dtype=np.float64)
    p = model.n_params(dataset.d)
    if theta.shape != (p,) or not np.all(np.isfinite(theta)):
        raise ValueError(f"θ of shape {theta.shape}, expected ({p},) and finite")
    if not isinstance(rec["method"], str) or not isinstance(rec["certified_optimum"], bool):
        raise ValueError("method / certified_optimum of the wrong type")
    loss, grad_norm, iterations = rec["loss"], rec["grad_norm"], rec["iterations"]
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in (loss, grad_norm)) \
            or isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 0:
        raise ValueError("loss / grad_norm / iterations of the wrong type")
    loss, grad_norm = float(loss), float(grad_norm)
    if rec["certified_optimum"] and not model.convex:
        raise ValueError("a non-convex model's local optimum stated certified")
    X, y = dataset.X_train, dataset.y_train
    value, grad = model.loss_and_grad(theta[None], X, y)
    value = float(np.asarray(value).ravel()[0])
    if model.radius is not None:  # constrained: the projected gradient
        grad = theta[None] - model.project(theta[None] - grad)
    actual = float(np.linalg.norm(grad))
    if not (math.isfinite(loss) and abs(value - loss) <= 1e-9 * max(1.0, abs(value))):
        raise ValueError(f"stored loss {loss!r}, but θ gives {value!r}")
    # absolute: a convex model's solution is solved to GRAD_TOL, and its gradient, recomputed
    # here on the data, must be that of an optimum whatever the file says of itself; a
    # non-convex model's must be a local optimum's, and the one the file states
    tol = stored_grad_tol(model)
    stated = grad_norm <= GRAD_TOL if model.convex else abs(grad_norm - actual) <= 1e-6 * actual + 1e-12
    if not (stated and actual <= tol):
        raise ValueError(f"gradient norm {actual:.3g} at the stored θ (stored {grad_norm:.3g}): not an optimum")
    return ErmSolution(theta=theta, loss=value, grad_norm=grad_norm, iterations=iterations,
                       method=rec["method"], certified_optimum=rec["certified_optimum"])


def known_start(erm) -> np.ndarray | None:
    """The exact solution's θ when it is already at hand, else ``None``: a warm start
    worth taking only if it costs no solve of its own (a :class:`LazySolution` not yet read)."""
    if isinstance(erm, LazySolution) and erm._solution is None:
        return None
    return erm.theta


class LazySolution:
    """:func:`solve_erm` of ``(model, X, y)``, solved only when an attribute is first read.

    Only some mechanisms read ``problem.erm`` (the baseline, output, objective and
    input perturbation); gradient mechanisms should neither pay for a Newton (or an
    MLP's multi-start L-BFGS) solve they never use nor fail on it.  Used where the data
    are fresh for each call (an estimator's ``fit``, an audit's neighbours), so nothing
    is kept beyond the object.
    """

    def __init__(self, model: Model, X: np.ndarray, y: np.ndarray):
        self._args = (model, X, y)
        self._solution: ErmSolution | None = None

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._solution is None:
            self._solution = solve_erm(*self._args)
        return getattr(self._solution, name)


#: exact solutions kept on disk: at most this many bytes of ``erm-*.json`` in a folder (an MLP
#: solution on Adult is about 0.3 MB, a linear one a few kB), checked every few solves
ERM_FOLDER_BYTES = 256 * 2**20


class ReferenceStore:
    """The exact solutions a context has computed, and other noise-free results of a
    (dataset, model) pair (a mechanism's noise-free trajectory, for instance).

    It holds the last ``size`` results in memory (a :class:`~dpcore.cache.Memo`) and, given
    ``folder``, keeps exact solutions on disk as well (a :class:`~dpcore.cache.DiskCache`),
    shared by processes (the app's cache folder, a sweep's ``cache/erm``): worth it for the MLP,
    whose multi-start L-BFGS on a large dataset takes minutes.  Both have single flight: threads
    and processes asking for one new solution solve it once.  Floats round-trip exactly through
    JSON.  An instance belongs to an execution context
    (:class:`dpcore.experiments.context.Context`); a pickled copy (sent to a worker process)
    keeps the folder and starts with an empty memory.
    """

    def __init__(self, folder=None, size: int = 32, data_dir=None):
        self.folder = None if folder is None else Path(folder)
        self.size = int(size)
        #: the data folder whose ``references/`` holds the exact references shipped with the project
        #: (``python -m dpcore prepare --ship``): the slow ones a class opens first (the MLP's on
        #: Adult, minutes of multi-start L-BFGS).  When this store's own folder has no answer it reads
        #: one there, checked like any stored solution (its loss recomputed, its gradient that of an
        #: optimum), so a new machine's first MLP run does not solve for minutes.  Default:
        #: :func:`dpcore.datasets.data_folder` when the store is made.
        self.data_dir = data_folder(data_dir)
        self._memo = Memo(self.size)  # the app's sessions share one store, each on its own thread
        self.disk = DiskCache(self.folder, prefix="erm-", folder_bytes=ERM_FOLDER_BYTES, prune_every=20,
                              what="cached ERM solution", log=__name__)
        #: sampled-Gaussian noise calibrations, kept in the same folder (``calibration-*.json``), and
        #: read from the data folder's ``calibrations/`` when shipped there (re-certified on reading)
        self.calibrations = CalibrationTable(self.folder, shipped=functools.partial(shipped_calibration, self.data_dir))

    def __reduce__(self):
        return (ReferenceStore, (self.folder, self.size, self.data_dir))

    def __repr__(self) -> str:
        return f"ReferenceStore(folder={self.folder!r}, held={len(self._memo)})"

    def memo(self, key, compute: Callable[[], Any]) -> Any:
        """``compute()``, or its result for the same ``key`` when still held (single flight
        across threads: :meth:`dpcore.cache.Memo.get`)."""
        return self._memo.get(key, compute)

    def clear(self) -> None:
        """Forget what is held in memory (the disk copies stay)."""
        self._memo.clear()

    def path(self, dataset, model: Model) -> Path | None:
        """The file that keeps this pair's exact solution (``None`` without a folder)."""
        return self.disk.path(_disk_key(dataset, model))

    def shipped_path(self, dataset, model: Model) -> Path:
        """Where the data folder (:attr:`data_dir`) holds this pair's exact solution, if it ships one."""
        return shipped.folder_of("references", self.data_dir) / f"erm-{_disk_key(dataset, model)}.json"

    def holds(self, dataset, model: Model) -> bool:
        """Whether :meth:`exact` would answer at once (from memory, from disk, or shipped)."""
        if ("erm", dataset, model) in self._memo:
            return True
        path = self.path(dataset, model)
        try:
            return (path is not None and path.exists()) or self.shipped_path(dataset, model).exists()
        except OSError:  # a folder the system cannot name (too long, no access): nothing held there
            return False

    def exact(self, dataset, model: Model, progress=None) -> ErmSolution:
        """:func:`solve_erm` on the dataset's training split, solved once (``progress`` hears
        of the solve when there is one)."""
        return self.memo(("erm", dataset, model), lambda: self._load_or_solve(dataset, model, progress))

    def _load_or_solve(self, dataset, model: Model, progress=None) -> ErmSolution:
        return self.disk.get_or_make(
            _disk_key(dataset, model),
            lambda: solve_erm(model, dataset.X_train, dataset.y_train, progress=progress),
            check=lambda rec: _check_solution(rec, dataset, model),
            encode=_solution_record,
            keep=lambda sol: sol.grad_norm <= stored_grad_tol(model),  # what a reader accepts
            shipped=_listed(self.shipped_path(dataset, model)))


def shipped_calibration(data_dir, key: str) -> Path | None:
    """The calibration ``key`` shipped in ``data_dir``'s ``calibrations/`` (``prepare --ship``: those of
    Compare's classroom preset), if the manifest lists it; the table re-certifies it when it reads it."""
    return _listed(shipped.folder_of("calibrations", data_dir) / f"calibration-{key}.json")


def _listed(path: Path) -> Path | None:
    """``path`` if it holds the shipped file the manifest lists (:mod:`dpcore.shipped`'s rule; the
    cache layer then checks its content itself), else ``None`` (logged: it is computed here)."""
    try:
        return path if shipped.read_bytes(f"{path.parent.name}/{path.name}", path.parent.parent) else None
    except shipped.ShippedFileError as exc:
        logging.getLogger(__name__).warning("%s; computing it here instead", exc)
        return None


def _solution_record(sol: ErmSolution) -> dict[str, Any]:
    return {"theta": sol.theta.tolist(), "loss": float(sol.loss), "grad_norm": float(sol.grad_norm),
            "iterations": int(sol.iterations), "method": sol.method, "certified_optimum": bool(sol.certified_optimum)}
