"""Products with a shared design matrix X, done sparse when X is mostly zeros.

One-hot encoded data (Adult is 86 % zeros) spend most of a gradient step
multiplying zeros: ``θXᵀ`` and ``cX`` for R runs stream the whole dense X
twice.  :func:`share` gives a bundled dataset's matrix a CSR twin, and the
model code asks :func:`margins`, :func:`weighted_rows`, :func:`map_rows` (a
GLM's fused loss-and-gradient pass) and :func:`weighted_grams` (Newton's
Hessians) for its products, which use the twin when there is one and plain
BLAS otherwise.  The twin is built once per matrix and process.

A twin must never go stale, so :func:`share` makes X read-only; the loaders
that call it return cached, shared objects that no caller may change anyway.
Sparse and dense products agree to rounding (≈1e-16 relative), not bit for
bit; every run of a configuration takes the same path, so runs stay
reproducible.  ``benchmarks/bench_app.py`` prints the effect.

The sparse products split their rows into a fixed :data:`BLOCKS` blocks, so the
numbers are bit-identical whatever the number of threads, and run the blocks on
the thread pool the execution ``Context`` lends them (:func:`using_pool`; scipy
releases the GIL): pools belong to the context, like the reference store, never
to this module.  Outside any pool the blocks run in the calling thread.  Sweep
workers call :func:`limit_threads` (1) next to ``threadpool_limits``.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import dsyrk as _syrk

__all__ = ["share", "run_groups", "single", "row_norms", "nonzero_rows", "is_sparse", "project_rows", "project_rows_t", "margins", "weighted_rows", "map_rows", "map_sparse_rows", "sparse_blocks", "rows_of", "weighted_grams",
           "limit_threads", "using_pool", "thread_pool", "map_chunks", "MAX_DENSITY", "THREADS", "BLOCKS", "DENSE_BLOCK_BYTES"]

#: Above this share of non-zeros, BLAS on the dense matrix is as fast or faster
#: (measured: Adult, 0.136, 2.5× faster sparse; Bank, 0.317, no gain).
MAX_DENSITY = 0.2
#: Small matrices are not worth a twin.
MIN_ENTRIES = 100_000

#: Row blocks of a twin (fixed, so results never depend on the thread count).
BLOCKS = 4
#: A dense X this large (bytes) takes the blocked fused pass of :func:`map_rows`: below it
#: X stays in the caches between two plain passes (and every small dataset keeps its bits).
#: Measured on synthetic data, d = 15, R = 5: 1.8× per gradient from n = 2¹⁶ (8 MB) up.
DENSE_BLOCK_BYTES = 8 * 2**20
#: bytes of X per dense block (about 4,000 rows at d = 15)
DENSE_BLOCK_TARGET = 2**19
#: bytes of X per block of a dense :func:`weighted_grams` (about 5,000 rows at d = 103)
GRAM_BLOCK_TARGET = 2**22
#: bytes of one run's rows per block of per-run data (R, n, p), e.g. input perturbation's
#: released records: a block is read twice (margins, then the gradient) while it sits in a
#: core's cache.  Measured on Adult's shape, R = 5 (n = 36,177, p = 103, 150 MB): a gradient
#: takes 32 ms as two batched BLAS passes, 27 ms fused in one thread, 18 ms fused on two.
RUN_BLOCK_TARGET = 2**21
#: Threads for sparse products, at most one per CPU.
THREADS = max(1, min(BLOCKS, os.cpu_count() or 1))

# pure: the sparse twins of large shared matrices, keyed by the array itself (tested bit-equal)
_TWINS: dict[int, "_Twin"] = {}
_limit: contextvars.ContextVar[int] = contextvars.ContextVar("dpcore_linalg_threads", default=THREADS)
_pool_var: contextvars.ContextVar[ThreadPoolExecutor | None] = contextvars.ContextVar("dpcore_linalg_pool",
                                                                                      default=None)
_POOL_NAME = "dpcore-linalg"
_pairs_lock = threading.Lock()


@contextlib.contextmanager
def limit_threads(n: int):
    """Within the block (this thread/context), sparse products use at most ``n`` threads."""
    token = _limit.set(max(1, min(int(n), THREADS)))
    try:
        yield
    finally:
        _limit.reset(token)


def thread_pool() -> ThreadPoolExecutor:
    """A pool of :data:`THREADS` threads for the sparse products, for an execution context to
    own and lend (:func:`using_pool`); its threads start on first use."""
    return ThreadPoolExecutor(THREADS, thread_name_prefix=_POOL_NAME)


@contextlib.contextmanager
def using_pool(pool: ThreadPoolExecutor | None):
    """Within the block (this thread/context), sparse products run their row blocks on ``pool``
    (``None``: in the calling thread)."""
    token = _pool_var.set(pool)
    try:
        yield
    finally:
        _pool_var.reset(token)


def _map(fn, items):
    items = list(items)
    pool = _pool_var.get()
    nested = threading.current_thread().name.startswith(_POOL_NAME)  # never wait on our own pool
    if pool is None or _limit.get() <= 1 or len(items) <= 1 or nested:
        return [fn(i) for i in items]
    return list(pool.map(fn, items))


def _row_blocks(M: sp.csr_array) -> list[tuple[int, int, sp.csr_array]]:
    edges = np.linspace(0, M.shape[0], BLOCKS + 1).round().astype(int)
    return [(int(a), int(b), M[a:b]) for a, b in zip(edges[:-1], edges[1:])]


class _Twin:
    """The CSR copy of one matrix X: row blocks (with their transposes, views) for the GLM
    pass; the CSR itself for the compiled kernels (:func:`csr_of`)."""

    def __init__(self, X: np.ndarray):
        self.ref = weakref.ref(X)
        csr = sp.csr_array(X)
        csr.sort_indices()  # the compiled kernels read each row's indices in increasing order
        self.shape = X.shape
        # each block's transpose as a CSC view of the same arrays, not a CSR copy: scipy's
        # CSC product is faster for the gradient's Σ coef·x (Adult, R = 5: 1.0 against 1.7 ms;
        # R = 40: 4.1 against 9.5 ms) and sums each output in the same order (the same bits)
        self.blocks = [(a, b, A, A.T) for a, b, A in _row_blocks(csr)]
        self.csr = csr
        self._rows: dict = {}  # row slices in a dtype (the MLP's chunks, float32)

    def rows(self, rows: slice | None, dtype) -> sp.csr_array:
        """The CSR rows ``rows`` (all when ``None``) in ``dtype``, made once and kept."""
        key = (None if rows is None else (rows.start, rows.stop), np.dtype(dtype).str)
        with _pairs_lock:
            got = self._rows.get(key)
            if got is None:
                got = self.csr if rows is None else self.csr[rows.start:rows.stop]
                got = got.astype(dtype)
                self._rows[key] = got
            return got


def share(X: np.ndarray) -> np.ndarray:
    """Make ``X`` read-only and, if it is large and sparse enough, give it a CSR twin."""
    X.flags.writeable = False
    if X.ndim != 2 or X.size < MIN_ENTRIES or id(X) in _TWINS:
        return X
    if np.count_nonzero(X) > MAX_DENSITY * X.size:
        return X
    key = id(X)
    _TWINS[key] = _Twin(X)
    weakref.finalize(X, _TWINS.pop, key, None)
    return X


def _twin(X: np.ndarray) -> _Twin | None:
    twin = _TWINS.get(id(X)) if X.ndim == 2 else None
    if twin is None or twin.ref() is not X:
        return None
    return twin


# pure: what is derived from a shared matrix (its row norms, …), keyed by the array itself
_DERIVED: dict[tuple[int, str], tuple[weakref.ref, np.ndarray]] = {}
_derived_lock = threading.Lock()


def _writable_anywhere(X: np.ndarray) -> bool:
    """Whether ``X``'s memory can change under it: ``X`` writeable, or a read-only view of an array
    that is (the caller's ``X0 *= 50`` would move every row a held value was made from)."""
    a = X
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return True
        a = a.base
    return False


def _derived(X: np.ndarray, what: str, make) -> np.ndarray:
    """``make(X)``, made once per read-only (shared) 2-D matrix and kept while ``X`` lives;
    for other arrays (mini-batches, perturbed copies) made each time.  The same function
    computes it either way, so a held value has the bits a fresh one would."""
    if X.ndim != 2 or _writable_anywhere(X):
        return make(X)
    key = (id(X), what)
    with _derived_lock:
        held = _DERIVED.get(key)
        if held is not None and held[0]() is X:
            return held[1]
    out = make(X)
    for part in out if isinstance(out, tuple) else (out,):
        part.flags.writeable = False
    with _derived_lock:
        _DERIVED[key] = (weakref.ref(X), out)
    weakref.finalize(X, _DERIVED.pop, key, None)
    return out


def single(X: np.ndarray) -> np.ndarray:
    """``X`` in float32 for the float32 compute paths: made once per read-only (shared)
    matrix and kept while ``X`` lives; other arrays (mini-batches) are converted each time."""
    if X.dtype == np.float32:
        return X
    return _derived(X, "float32", lambda A: A.astype(np.float32))


def _csr_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The non-zeros of X's rows (2-D, or (R, n, d) taken as R·n rows)."""
    A = np.asarray(X).reshape(-1, X.shape[-1])
    nz = A != 0
    indptr = np.zeros(A.shape[0] + 1, np.int64)
    np.cumsum(nz.sum(axis=1), out=indptr[1:])
    rows, cols = np.nonzero(nz)
    return indptr, cols.astype(np.int32), A[rows, cols].astype(np.float32)


def nonzero_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The non-zeros of every row (2-D X, or (R, n, d) taken as R·n rows), as the compiled kernels
    of :mod:`dpcore.numerics.kernels` read them: ``indptr`` (int64), ``indices`` (int32), float32 ``values``,
    in row order; once per shared matrix, made afresh for other arrays (per-run data, mini-batches)."""
    return _derived(X, "nonzero_rows", _csr_rows)


def row_norms(X: np.ndarray) -> np.ndarray:
    """``‖x_i‖`` for every row (the last axis); once per shared matrix (per-example clipping
    needs them every step, and they cost as much as the step's own products)."""
    return _derived(X, "row_norms", lambda A: np.linalg.norm(A, axis=-1))


def csr_of(X: np.ndarray):
    """The CSR rows (float64, sorted indices) of a shared X with a sparse twin, else ``None``: what
    the compiled mini-batch kernels read in place (:func:`dpcore.numerics.kernels.sampled_margins`)."""
    twin = _twin(X)
    return None if twin is None else twin.csr


def sparse_blocks(X: np.ndarray) -> list[tuple[int, int]] | None:
    """The fixed row blocks ``(lo, hi)`` of a shared X's sparse twin (:data:`BLOCKS`, by the matrix's
    shape alone: those :func:`map_sparse_rows` sums in order), else ``None``."""
    twin = _twin(X)
    return None if twin is None else [(lo, hi) for lo, hi, _, _ in twin.blocks]


def is_sparse(X: np.ndarray) -> bool:
    """Whether products with ``X`` go through its sparse twin."""
    return _twin(X) is not None


def margins(theta: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``θᵀx`` for every run and row: (R, n) from (R, p) and (n, p) or (R, B, p)."""
    if X.ndim != 2:  # one matrix per run (perturbed data, mini-batches): R BLAS products
        return np.matmul(X, theta[:, :, None])[..., 0]
    twin = _twin(X)
    if twin is None:
        return theta @ X.T
    T = np.ascontiguousarray(theta.T)
    out = np.empty((X.shape[0], theta.shape[0]))

    def block(b):
        lo, hi, A, _ = b
        out[lo:hi] = A @ T

    _map(block, twin.blocks)
    return np.ascontiguousarray(out.T)


def run_groups(runs: int) -> list[range]:
    """The runs ``0 … runs − 1`` in :data:`THREADS` contiguous groups, one per pool thread.

    >>> [len(g) for g in run_groups(1)], sum(len(g) for g in run_groups(7)), len(run_groups(7)) == min(7, THREADS)
    ([1], 7, True)
    """
    cut = np.linspace(0, runs, min(runs, THREADS) + 1).round().astype(int)
    return [range(a, b) for a, b in zip(cut[:-1], cut[1:])]


def map_chunks(fn, items) -> list:
    """``[fn(item) for item in items]``, on the threads of the pool lent by :func:`using_pool`
    (in this thread outside one, when limited to one thread, or when called from the pool itself).
    The results come back in the items' order, so a caller summing them in that order gets
    the same bits on any number of threads."""
    return _map(fn, items)


def _sum_in_order(parts):
    total = None
    for part in parts:  # a fixed order: the same bits on any number of threads
        if part is not None:
            total = part if total is None else total + part
    return total


def weighted_rows(coef: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``Σ_i coef_{r,i} x_i`` for every run: (R, p)."""
    if X.ndim != 2:
        return np.matmul(coef[:, None, :], X)[:, 0, :]
    twin = _twin(X)
    if twin is None:
        return coef @ X
    C = np.ascontiguousarray(coef.T)
    return np.ascontiguousarray(_sum_in_order(_map(lambda b: b[3] @ C[b[0]:b[1]], twin.blocks)).T)


def project_rows(X: np.ndarray, W: np.ndarray, rows: slice | None = None) -> np.ndarray:
    """``W_r x_i`` for the rows ``rows`` of a shared X (all when ``None``) and every run r:
    (R, n_rows, h) from W (R, h, d), in W's dtype; through the sparse twin when X has one."""
    twin = _twin(X)
    if twin is None:
        return np.einsum("nd,rhd->rnh", X if rows is None else X[rows], W, optimize=True)
    R, h, d = W.shape
    out = twin.rows(rows, W.dtype) @ np.ascontiguousarray(W.reshape(R * h, d).T)  # (n_rows, R·h)
    return out.reshape(-1, R, h).transpose(1, 0, 2)


def project_rows_t(C: np.ndarray, X: np.ndarray, rows: slice | None = None) -> np.ndarray:
    """``Σ_i C_{r,i} x_iᵀ`` over the rows ``rows`` of a shared X: (R, h, d) from C (R, n_rows, h),
    in C's dtype; through the sparse twin when X has one."""
    twin = _twin(X)
    if twin is None:
        return np.einsum("rnh,nd->rhd", C, X if rows is None else X[rows], optimize=True)
    R, n, h = C.shape
    A = twin.rows(rows, C.dtype)
    out = A.T @ np.ascontiguousarray(C.transpose(1, 0, 2).reshape(n, R * h))  # (d, R·h)
    return np.ascontiguousarray(out.reshape(-1, R, h).transpose(1, 2, 0))


def rows_of(y: np.ndarray, rows) -> np.ndarray:
    """The labels of the rows a :func:`map_rows` block names: ``rows`` is a slice of a shared
    X's rows, or ``(r, slice)`` for run r of per-run data, whose labels may be per run (R, n)."""
    if isinstance(rows, tuple):
        r, sl = rows
        return y[r:r + 1, sl] if y.ndim == 2 else y[sl]
    return y[rows]


def map_rows(theta: np.ndarray, X: np.ndarray, fn):
    """One fused pass over X, block by block (on threads): for a sparse X with a twin, a
    dense one of at least :data:`DENSE_BLOCK_BYTES`, or per-run data (R, n, p) that large;
    ``None`` for other matrices (the caller does two plain BLAS passes, bit for bit what it
    always did).

    Each block of rows computes its margins ``z`` (R, n_b), then
    ``coef, aux = fn(z, rows)`` (``rows`` names the block's rows; :func:`rows_of` takes
    their labels); the result is ``(Σ_i coef_{r,i} x_i or None, [aux per block])``.
    A GLM's loss and gradient thus read each block of X once, while it is in cache,
    instead of streaming a large X twice and the (R, n) margins through memory.  The
    blocks are fixed by the matrix's shape and summed in order, so the result never
    depends on the threads.  Per-run data whose runs each hold at least
    :data:`RUN_BLOCK_TARGET` bytes go block by block within each run (``z`` is (1, n_b),
    ``rows`` is ``(r, slice)``), and each block's aux is the runs' values side by side.
    """
    if X.ndim == 3:  # per run: worth it when each run's rows fill a block (small data stay batched)
        large = X.nbytes >= DENSE_BLOCK_BYTES and X[0].nbytes >= RUN_BLOCK_TARGET
        return _map_run_rows(theta, X, fn) if large else None
    if _twin(X) is None:
        if X.ndim != 2 or X.nbytes < DENSE_BLOCK_BYTES:
            return None
        return _map_dense_rows(theta, X, fn)

    def transposed(z, rows):  # fn sees (R, n_b), as on the other paths
        coef, aux = fn(np.ascontiguousarray(z.T), rows)
        return (None if coef is None else np.ascontiguousarray(coef.T)), aux

    return map_sparse_rows(theta, X, transposed)


def map_sparse_rows(theta: np.ndarray, X: np.ndarray, fn):
    """:func:`map_rows` for a matrix with a sparse twin, in the products' own layout; ``None``
    for any other matrix.  ``fn(z, rows)`` gets each block's margins as (n_b, R), what the CSR
    product gives, and returns ``coef`` the same way, what the transposed product takes: none of
    the four transposed copies a step of :func:`map_rows` makes (a third of a batched DP-GD step
    on Adult at R = 25).  The blocks and their sums are :func:`map_rows`'s."""
    twin = _twin(X)
    if twin is None:
        return None
    T = np.ascontiguousarray(theta.T)

    def block(b):
        lo, hi, A, AT = b
        coef, aux = fn(A @ T, slice(lo, hi))
        return (None if coef is None else AT @ coef), aux

    parts = _map(block, twin.blocks)
    total = _sum_in_order([g for g, _ in parts])
    return (None if total is None else np.ascontiguousarray(total.T)), [aux for _, aux in parts]


def _map_dense_rows(theta: np.ndarray, X: np.ndarray, fn):
    """The blocks in turn, in this thread, each product on BLAS's own threads: on our pool, BLAS's
    threads inside ours fight for the cores (2 cores, n = 2¹⁸, d = 15, R = 20: 46 ms a step on the
    pool, 28 ms in turn; d = 60: 32 against 13 ms; one run: 3.9 against 2.7 ms; only n = 2²⁰,
    R = 5 loses, 37 against 42 ms).  BLAS's thread count cannot be lowered for our pool's
    threads alone: OpenBLAS's is one process-wide setting that every session shares."""
    rows = max(256, DENSE_BLOCK_TARGET // max(1, X.shape[1] * X.itemsize))
    edges = list(range(0, X.shape[0], rows)) + [X.shape[0]]

    def block(lo_hi):
        lo, hi = lo_hi
        A = X[lo:hi]
        coef, aux = fn(theta @ A.T, slice(lo, hi))
        return (None if coef is None else coef @ A), aux

    parts = [block(b) for b in zip(edges[:-1], edges[1:])]
    total = _sum_in_order([g for g, _ in parts])
    return total, [aux for _, aux in parts]


def _map_run_rows(theta: np.ndarray, X: np.ndarray, fn):
    """:func:`map_rows` for per-run data (R, n, p): each (run, block) piece is two
    matrix-vector products over rows that stay in cache; the pieces run on the context's
    pool (numpy's products release the GIL) in a few contiguous groups, each run's
    blocks summed in order afterwards, so the bits never depend on the threads."""
    R, n, p = X.shape
    size = max(256, RUN_BLOCK_TARGET // max(1, p * X.itemsize))
    edges = list(range(0, n, size)) + [n]
    pieces = [(r, lo, hi) for r in range(R) for lo, hi in zip(edges[:-1], edges[1:])]

    def piece(rlh):
        r, lo, hi = rlh
        A = X[r, lo:hi]
        coef, aux = fn((A @ theta[r])[None], (r, slice(lo, hi)))
        return (None if coef is None else coef[0] @ A), aux

    groups = max(1, min(len(pieces), 4 * THREADS))
    cut = np.linspace(0, len(pieces), groups + 1).round().astype(int)
    done = [out for part in _map(lambda ab: [piece(t) for t in pieces[ab[0]:ab[1]]], zip(cut[:-1], cut[1:]))
            for out in part]
    k = len(edges) - 1  # blocks per run
    grads = [_sum_in_order([g for g, _ in done[r * k:(r + 1) * k]]) for r in range(R)]
    total = None if grads[0] is None else np.stack(grads)
    auxes = []
    for b in range(k):
        parts = [done[r * k + b][1] for r in range(R)]
        auxes.append(None if parts[0] is None else np.concatenate([np.atleast_1d(a) for a in parts]))
    return total, auxes


def weighted_grams(W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``Xᵀ diag(w_r) X`` for every row w_r of W, (R, p, p), by dense products (a matrix with a
    sparse twin has its Grams from its rows' pairs of non-zeros: :func:`dpcore.numerics.kernels.csr_grams`)."""
    if X.nbytes < DENSE_BLOCK_BYTES or (W < 0).any():
        # small (it stays in the caches: the plain product), or weights of either sign
        return np.stack([(X * w[:, None]).T @ X for w in W])
    # (√w·X)ᵀ(√w·X) by BLAS's symmetric rank-k update: half the multiply-adds of the general
    # product; block by block, so each block's weighted copy stays in cache instead of a copy
    # of all of X per run (Adult's dense shape, one thread: 30 → 22 ms a Hessian by blocking,
    # → 15 ms by the symmetric update)
    rows = max(256, GRAM_BLOCK_TARGET // max(1, X.shape[1] * X.itemsize))
    out = np.empty((W.shape[0], X.shape[1], X.shape[1]))
    for r, w in enumerate(W):
        root = np.sqrt(w)
        U = np.zeros((X.shape[1], X.shape[1]), order="F")
        for lo in range(0, X.shape[0], rows):
            block = X[lo:lo + rows] * root[lo:lo + rows, None]  # C order: its transpose is BLAS's layout
            U = _syrk(1.0, block.T, beta=1.0, c=U, trans=0, lower=0, overwrite_c=1)
        upper = np.triu(U)
        out[r] = upper + np.triu(upper, 1).T
    return out
