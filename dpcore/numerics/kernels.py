"""Compiled kernels: the one-hidden-layer network's training step, fused per row block.

A step of the MLP (:class:`dpcore.models.MLP`) on R runs computes, for every row, a hidden
layer of width h, its tanh, the output score, the per-example gradient's norm and the clipped
sum.  Written as numpy array passes it streams an (R, n, h) array through memory a dozen times
and spends a third of the step in scipy's sparse products; here every row is done while it sits
in cache: forward, tanh, output, norm, clip and the backward sums, one run at a time over a block
of rows (the block's rows stay in L1/L2 across the runs).  Rows' zero features are skipped, so a
one-hot matrix (Adult: 14 non-zeros of 103) costs what its non-zeros cost; no sparse twin needed.

``tanh`` is the one function a compiled loop cannot vectorise through the C library (scalar
``tanhf`` costs 14 ns an element; numpy's own is fast only with AVX-512).  :func:`tanh32` is
a rational approximation ``x·P(x²)/Q(x²)`` on ``|x| ≤ 9``, ±1 beyond, whose coefficients were
fitted by weighted least squares (Loeb's iteration) on Chebyshev nodes of [0, 9]: in float32 it
is within :data:`TANH_ABS_ERROR` of the true tanh everywhere (``tests/test_kernels.py`` checks
it on 4 million points against float64 ``np.tanh``).  The per-example norm uses the same H the
gradient is assembled from, bounded from above for its float32 sums' rounding, and the clip leaves
room for the float32 roundings of the vector summed (:data:`_CLIP_ROUNDING`), so each clipped gradient
as summed has a norm ≤ C by construction; a row whose norm is not finite (NaN or ∞ among its values) is dropped where the
clip is finite.  (:data:`dpcore.models.CLIP_MARGIN_FLOAT32` is the model's own margin on top.)

The kernels are compiled by numba on first call (FIRST_USE_SECONDS; once per machine and CPU) and
kept in the user's cache folder (``<cache_dir>/numba``: ``DPCORE_CACHE_DIR`` or ``~/.cache/dpcore``;
``NUMBA_CACHE_DIR`` where the user set it), never in the package.  A cache folder that cannot be
written, or fills up while a kernel is kept, costs only the compile in the next process (the log
says so, at INFO); an odd ``NUMBA_NUM_THREADS`` (not a positive whole number, which numba refuses at import)
is ignored with a warning.
Results agree with the numpy route (:meth:`dpcore.models.MLP._clipped_numpy`) to float32
rounding, not bit for bit (docs/spec.md §9.3: the MLP's runs are judged by their repeats).
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np

from . import linalg
from ..cache import cache_dir


def _odd_numba_threads() -> None:
    """numba refuses to import under a ``NUMBA_NUM_THREADS`` that is not a positive whole number: that
    variable is dropped, with one warning, so the package imports (numba then uses every core)."""
    value = os.environ.get("NUMBA_NUM_THREADS")
    if value is None:
        return
    try:
        good = int(value) > 0
    except ValueError:
        good = False
    if not good:
        warnings.warn(f"NUMBA_NUM_THREADS={value!r} is not a positive whole number: ignored", stacklevel=2)
        del os.environ["NUMBA_NUM_THREADS"]


_odd_numba_threads()
import numba  # noqa: E402  (after its environment is checked)
from numba.core import config as _numba_config  # noqa: E402

#: the first use's compile of every kernel
#: (measured on the 2-core development machine, a fresh cache folder: the MLP's kernel 3.0 s of CPU, 0.9 s
#: loaded from the cache; the GLM's coefficient 2.2 s, 0.3 s loaded; numba's own import 2–4 s)
FIRST_USE_SECONDS = "about 5 s of CPU, about 1 s from the cache"


def compiled() -> bool:
    """Whether the kernels are compiled (``False`` under ``NUMBA_DISABLE_JIT=1``: they then run in
    the interpreter, and the work budget prices each model's ``uncompiled_slowdown``)."""
    return not _numba_config.DISABLE_JIT


def kernel_cache_folder() -> Path | None:
    """The folder numba keeps the compiled kernels in: ``NUMBA_CACHE_DIR`` if the user set one, else
    ``<cache_dir>/numba``; ``None`` (compiled in every process) when it cannot be made or written."""
    folder = Path(_numba_config.CACHE_DIR or cache_dir() / "numba")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:  # a fallback, said in the log: the command line's stderr stays its one line
        logging.getLogger(__name__).info("the compiled kernels cannot be kept in %s (%s): they are compiled in "
                                         "every process (set DPCORE_CACHE_DIR to a writable folder)", folder, exc)
        return None
    return folder


class _KeptOrNot:
    """A numba dispatcher's cache whose saving may fail (a full or read-only disk): the kernel is
    compiled and runs; only its copy on disk is lost, with one warning.  Everything else is numba's."""

    def __init__(self, inner, folder: Path):
        self._inner, self._folder = inner, folder

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def save_overload(self, sig, data):
        try:
            self._inner.save_overload(sig, data)
        except OSError as exc:
            logging.getLogger(__name__).info("could not keep a compiled kernel in %s (%s): it is compiled again "
                                             "in the next process", self._folder, exc)


_KERNEL_CACHE = kernel_cache_folder()


def _compiled(**options):
    """``numba.njit(**options)`` kept in :data:`_KERNEL_CACHE` (:func:`kernel_cache_folder`), or not kept
    at all where there is none: never in the package's own folder."""
    def decorate(func):
        if _KERNEL_CACHE is None:
            return numba.njit(cache=False, **options)(func)
        saved = _numba_config.CACHE_DIR
        _numba_config.CACHE_DIR = str(_KERNEL_CACHE)  # read when the dispatcher finds its cache (now)
        try:
            dispatcher = numba.njit(cache=True, **options)(func)
        finally:
            _numba_config.CACHE_DIR = saved
        if getattr(dispatcher, "_cache", None) is not None:
            dispatcher._cache = _KeptOrNot(dispatcher._cache, _KERNEL_CACHE)
        return dispatcher
    return decorate

__all__ = ["csr_grams", "exp", "glm_coef", "glm_grad", "GLM_GRAD_RUNS", "GLM_LOGISTIC", "GLM_SQUARED", "GLM_ROWS", "mlp_clipped_block", "sampled_margins", "sampled_sums", "tanh32", "TANH_ABS_ERROR", "ROW_BLOCK"]

#: rows a kernel call's inner loop takes at a time, all R runs over them before the next block:
#: 64 rows × 103 float32 features = 26 KB of X, read again from L1/L2 by every run
ROW_BLOCK = 64

#: the approximation's largest error against the exact tanh, in float32 on |x| ≤ 12 (measured 3.0e-7;
#: numpy's own float32 tanh errs by 6e-8)
TANH_ABS_ERROR = 5e-7

# tanh(x) ≈ x·P(x²)/Q(x²) on |x| ≤ 9 (tanh(9) = 1 − 3e-8 rounds to 1 in float32)
_P = (0.999999692510532, 0.13340629945254667, 0.0034488010942180384, 1.988528442827919e-05,
      1.2437259250264177e-08)
_Q = (1.0, 0.4667387139054229, 0.02569594232797632, 0.0003211121328756559, 7.383033549853563e-07)
_CLAMP = 9.0

_FASTMATH = {"reassoc", "contract", "nsz", "arcp"}  # sums reordered into SIMD lanes; no nnan/ninf assumed
#: compiled on first call for this CPU (numba's cache on disk keeps one entry per CPU name: a new
#: process loads it in ~0.2 s); ``error_model="numpy"``: a division is a vector division, never a
#: branch that raises (with the default model no loop with a division is vectorised)
def _jit(func=None, **options):
    """The kernels' compile (:func:`_compiled`) with their options: ``@_jit`` or ``@_jit(inline="always")``."""
    decorate = _compiled(nogil=True, fastmath=_FASTMATH, error_model="numpy", **options)
    return decorate if func is None else decorate(func)


@_jit(inline="always")
def _tanh(x):
    """The approximation of tanh(x) for one float32 (compiled inline into the kernels)."""
    c = np.float32(_CLAMP)
    x = min(max(x, -c), c)
    s = x * x
    p = np.float32(_P[4])
    p = p * s + np.float32(_P[3])
    p = p * s + np.float32(_P[2])
    p = p * s + np.float32(_P[1])
    p = p * s + np.float32(_P[0])
    q = np.float32(_Q[4])
    q = q * s + np.float32(_Q[3])
    q = q * s + np.float32(_Q[2])
    q = q * s + np.float32(_Q[1])
    q = q * s + np.float32(_Q[0])
    t = x * p / q
    return min(max(t, np.float32(-1.0)), np.float32(1.0))


def tanh32(x: np.ndarray) -> np.ndarray:
    """The kernels' tanh of a float32 array (for tests and the numpy route's comparisons)."""
    return _tanh_array(np.ascontiguousarray(x, dtype=np.float32).ravel()).reshape(np.shape(x))


@_jit
def _tanh_array(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = _tanh(x[i])
    return out


#: the clip's share left for the float32 roundings of the summed vector (c = float32(scale·w)·float32(g),
#: then c·x_j, then ·D_k: at most 4 roundings of 2⁻²⁴ each on any component), so that each clipped
#: per-example gradient, as summed, has a norm ≤ C by construction, not only up to rounding
_CLIP_ROUNDING = 1.0 - 8.0 * 2.0**-24


@_jit
def _clipped_block(indptr, indices, values, run_rows, y, W1t, b1, w2, b2, clip, weights, lo, hi,
                  with_grad, with_loss, gW1t, gb1, gw2, gb2, loss):
    R, d, h = W1t.shape
    shared_y = y.shape[0] == 1
    shared_w = weights.shape[0] == 1
    no_w = weights.shape[1] == 0
    a = np.empty(h, np.float32)
    D = np.empty(h, np.float32)
    grow = 1.0 + (h + 1.0) * 2.0**-24
    for i0 in range(lo, hi, ROW_BLOCK):
        i1 = min(hi, i0 + ROW_BLOCK)
        for r in range(R):
            base = r * run_rows  # run r's rows of per-run data (0: one shared matrix)
            yr = 0 if shared_y else r
            wr = 0 if shared_w else r
            for i in range(i0, i1):
                w = 1.0 if no_w else weights[wr, i]
                if w == 0.0 and not with_loss:
                    continue  # a row the sampler left out adds exactly nothing
                e0 = indptr[base + i]
                e1 = indptr[base + i + 1]
                for k in range(h):
                    a[k] = b1[r, k]
                xx = 0.0  # float64: a feature's square overflows float32 above 1.8e19
                for e in range(e0, e1):
                    v = values[e]
                    j = indices[e]
                    xx += float(v) * float(v)
                    for k in range(h):
                        a[k] += v * W1t[r, j, k]
                out = np.float32(0.0)
                hh = np.float32(0.0)  # float32 sums in SIMD lanes: their rounding is bounded below (grow)
                dd = np.float32(0.0)
                for k in range(h):
                    t = _tanh(a[k])
                    a[k] = t
                    out += t * w2[r, k]
                    hh += t * t
                    dk = w2[r, k] * (np.float32(1.0) - t * t)
                    D[k] = dk
                    dd += dk * dk
                yi = float(y[yr, i])
                z = yi * (float(out) + float(b2[r]))
                if with_loss:  # −log σ(z), stably
                    loss[r] += math.log1p(math.exp(-abs(z))) + max(-z, 0.0)
                if not with_grad or w == 0.0:
                    continue
                g = -yi / (1.0 + math.exp(z)) if z < 700.0 else 0.0
                # an upper bound on the norm of the vector summed: float32 sums of h non-negative
                # products (any order) are within (h + 1)·2⁻²⁴ of their value, relatively
                norm = abs(g) * math.sqrt(float(dd) * (xx + 1.0) + float(hh) + 1.0) * grow
                scale = 1.0
                if clip < math.inf:
                    if not norm <= 1e300:
                        continue  # a norm that is not finite (NaN or ∞ in the row): no clip bounds it, dropped
                    if norm > clip * _CLIP_ROUNDING:
                        scale = clip * _CLIP_ROUNDING / norm
                c = np.float32(scale * w) * np.float32(g)
                gb2[r] += c
                for k in range(h):
                    gb1[r, k] += c * D[k]
                    gw2[r, k] += c * a[k]
                for e in range(e0, e1):
                    cv = c * values[e]
                    j = indices[e]
                    for k in range(h):
                        gW1t[r, j, k] += cv * D[k]


def mlp_clipped_block(rows, run_rows: int, y, W1t, b1, w2, b2, clip: float, weights, lo: int, hi: int, *,
                      with_grad: bool = True, with_loss: bool = False):
    """Rows ``lo:hi`` of one MLP step for every run: ``(gW1t, gb1, gw2, gb2, loss)``.

    ``rows``: :func:`dpcore.numerics.linalg.nonzero_rows` of a shared X (``run_rows`` 0) or of per-run data (R, n, d)
    (``run_rows`` n); ``y``: (1, n) or (R, n); ``W1t`` (R, d, h) the first layer transposed,
    ``b1``, ``w2`` (R, h), ``b2`` (R,), all float32, C order; ``weights``: (1, n), (R, n), or
    (1, 0) for none, float64.  Returns the float32 sums over the rows of the ``clip``-clipped
    per-example gradients times their weights (``gW1t`` transposed like ``W1t``), and the float64
    ``Σ −log σ(y·score)`` per run when ``with_loss`` (zeros otherwise).
    """
    R, d, h = W1t.shape
    gW1t = np.zeros((R, d, h), np.float32)
    gb1 = np.zeros((R, h), np.float32)
    gw2 = np.zeros((R, h), np.float32)
    gb2 = np.zeros(R, np.float32)
    loss = np.zeros(R, np.float64)
    indptr, indices, values = rows
    _clipped_block(indptr, indices, values, int(run_rows), y, W1t, b1, w2, b2, float(clip), weights, int(lo),
                   int(hi), bool(with_grad), bool(with_loss), gW1t, gb1, gw2, gb2, loss)
    return gW1t, gb1, gw2, gb2, loss


# ---------------------------------------------------------------------------
# a GLM's sampled mini-batches, read in place from a shared matrix's CSR rows


@_jit
def _sampled_margins(indptr, indices, data, idx, theta, lo, hi, out):
    """``out[r, b] = θ_r · x_{idx[r, b]}`` for the runs ``lo:hi``, reading each sampled row's
    non-zeros where they are (no gathered copy of the batch)."""
    for r in range(lo, hi):
        for b in range(idx.shape[1]):
            i = idx[r, b]
            s = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                s += data[k] * theta[r, indices[k]]
            out[r, b] = s


@_jit
def _sampled_sums(indptr, indices, data, idx, coef, lo, hi, out):
    """``out[r] = Σ_b coef[r, b] · x_{idx[r, b]}`` for the runs ``lo:hi`` (rows whose coefficient
    is 0, a Poisson batch's padding, add nothing and are skipped)."""
    for r in range(lo, hi):
        for b in range(idx.shape[1]):
            c = coef[r, b]
            if c == 0.0:
                continue
            i = idx[r, b]
            for k in range(indptr[i], indptr[i + 1]):
                out[r, indices[k]] += c * data[k]


@_jit
def _csr_grams(indptr, indices, data, w, lo, hi, out):
    """``out[r] += Σ_i w[r, i] x_i x_iᵀ`` on the upper triangle (a row's indices increase), for
    the runs ``lo:hi``: every pair of a row's non-zeros once, nothing for its zeros."""
    for r in range(lo, hi):
        for i in range(indptr.size - 1):
            wi = w[r, i]
            if wi == 0.0:
                continue
            for a in range(indptr[i], indptr[i + 1]):
                va = wi * data[a]
                ja = indices[a]
                for b in range(a, indptr[i + 1]):
                    out[r, ja, indices[b]] += va * data[b]


def csr_grams(csr, W: np.ndarray, groups) -> np.ndarray:
    """``Xᵀ diag(w_r) X`` for every row w_r of W, (R, p, p), from X's CSR rows (sorted indices):
    Adult's one-hot rows have 14 non-zeros of 104, so a row adds 105 products instead of 5,460
    (one thread: 3.5 ms a Hessian against 13.5 ms for the dense symmetric update).  Runs in groups
    on the pool's threads; each run's sum in row order, so the bits do not depend on the threads."""
    W = np.ascontiguousarray(W, dtype=np.float64)
    p = csr.shape[1]
    out = np.zeros((W.shape[0], p, p))
    linalg.map_chunks(lambda g: _csr_grams(csr.indptr, csr.indices, csr.data, W, g.start, g.stop, out), groups)
    upper = np.triu(out)
    return upper + np.transpose(np.triu(out, 1), (0, 2, 1))


def sampled_margins(csr, idx: np.ndarray, theta: np.ndarray, groups) -> np.ndarray:
    """``θ_r · x_i`` for the rows ``idx`` (R, B) of a CSR matrix (float64), run groups on the
    pool's threads (``groups``: one ``range`` of runs each; :func:`dpcore.numerics.linalg.map_chunks`)."""
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    out = np.empty(idx.shape)
    linalg.map_chunks(lambda g: _sampled_margins(csr.indptr, csr.indices, csr.data, idx, theta,
                                                 g.start, g.stop, out), groups)
    return out


def sampled_sums(csr, idx: np.ndarray, coef: np.ndarray, groups) -> np.ndarray:
    """``Σ_b coef[r, b] · x_{idx[r, b]}`` for every run: (R, d), run groups on the pool's threads
    (each run's sum in its batch's order, so the bits do not depend on the threads)."""
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    out = np.zeros((idx.shape[0], csr.shape[1]))
    linalg.map_chunks(lambda g: _sampled_sums(csr.indptr, csr.indices, csr.data, idx, coef,
                                              g.start, g.stop, out), groups)
    return out



# ---------------------------------------------------------------------------
# a GLM's per-example coefficients, every run side by side
#
# A step of batched DP-GD on R runs computes the margins z = Xθ_r (scipy's sparse product), the
# coefficients φ'(z, y), clipped when asked, and Σ_i coef_{r,i} x_i (scipy again).  In numpy the
# middle part is ten passes over an (n, R) array and its float64 ``exp`` is a SIMD loop only with
# AVX-512 (3 ns an element otherwise); here it is one compiled pass, a block of rows at a time,
# with the vectorisable :func:`_exp_into`.

#: rows :func:`glm_coef` takes at a time: their scratch (rows × R float64) stays in L1/L2
GLM_ROWS = 128
#: the GLM kernels' losses: :class:`dpcore.models.LogReg`'s and :class:`dpcore.models.LinReg`'s
GLM_LOGISTIC, GLM_SQUARED = 0, 1

_LOG2E = 1.4426950408889634
_LN2_HI = 0.693147180369123816490  # ln 2 split so that k·_LN2_HI is exact for |k| < 2¹¹ (Cody–Waite)
_LN2_LO = 1.90821492927058770002e-10
_SHIFTER = 6755399441055744.0  # 1.5·2⁵²: an integer k added to it is held in its low mantissa bits
_SHIFTER_BITS = 0x4338000000000000  # its bits as an int64
# e^r on |r| ≤ ln2/2 by its Taylor series to r¹³ (the remainder r¹⁴/14! < 2e-18 there)
_E0, _E1, _E2, _E3, _E4, _E5, _E6, _E7, _E8, _E9, _E10, _E11, _E12, _E13 = (
    1.0 / math.factorial(k) for k in range(14))


@_compiled(nogil=True, error_model="numpy")  # no fastmath: the reduction's order is its accuracy
def _exp_into(x, out, kf):
    """``out = e^x`` elementwise for float64 ``x`` clamped to [−708, 709] (where e^x is a normal
    number): x = k·ln2 + r by Cody and Waite's reduction, e^r by its Taylor polynomial, 2^k made
    in the exponent's bits (``kf``: float64 scratch of x's size).  No call and no branch, so the
    loops are SIMD loops on any CPU (AVX2 as well as AVX-512), where numpy's own float64 ``exp``
    is one only with AVX-512.  Within 2 ulp of the exact exponential (``tests/test_kernels.py``)."""
    for i in range(x.size):
        t = min(max(x[i], -708.0), 709.0)
        k = np.floor(t * _LOG2E + 0.5)  # the nearest integer to t/ln 2 (a rounding instruction, no call)
        s = k + _SHIFTER  # k in the low mantissa bits (exact: |k| < 2¹¹; no reassociation can move it)
        r = (t - k * _LN2_HI) - k * _LN2_LO
        p = ((((((((((((_E13 * r + _E12) * r + _E11) * r + _E10) * r + _E9) * r + _E8) * r + _E7) * r + _E6)
                  * r + _E5) * r + _E4) * r + _E3) * r + _E2) * r + _E1) * r + _E0
        out[i] = p
        kf[i] = s
    kb = kf.view(np.int64)
    for i in range(x.size):
        kb[i] = (kb[i] - _SHIFTER_BITS + 1023) << 52  # 2^k's bits
    for i in range(x.size):
        out[i] *= kf[i]


def exp(x: np.ndarray) -> np.ndarray:
    """The kernels' ``e^x`` of a float64 array (for tests and comparisons), x clamped to [−708, 709]."""
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    out = np.empty_like(x)
    _exp_into(x, out, np.empty_like(x))
    return out



@_compiled(nogil=True, error_model="numpy")  # no fastmath: each element as its formula says
def _glm_coef(z, y, kind, clip, norms, e, kf):
    """:func:`glm_coef` on rows of at most ``e.size // R`` at a time (``e``, ``kf``: scratch)."""
    n, R = z.shape
    rows = max(1, e.size // R)
    for i0 in range(0, n, rows):
        i1 = min(n, i0 + rows)
        m = (i1 - i0) * R
        zb = z[i0:i1].reshape(m)
        if kind == GLM_LOGISTIC:  # φ' = −y / (1 + e^{yz})
            for i in range(i0, i1):
                for r in range(R):
                    z[i, r] *= y[i]
            _exp_into(zb, e[:m], kf[:m])
            for i in range(i0, i1):
                o = (i - i0) * R
                for r in range(R):
                    z[i, r] = -y[i] / (1.0 + e[o + r])
        else:  # φ' = z − y
            for i in range(i0, i1):
                for r in range(R):
                    z[i, r] -= y[i]
        if clip < np.inf:  # × min(1, C / max(|φ'|·‖x‖, 1e-300))
            for i in range(i0, i1):
                for r in range(R):
                    c = z[i, r]
                    z[i, r] = c * min(1.0, clip / max(abs(c) * norms[i], 1e-300))


def glm_coef(z: np.ndarray, y: np.ndarray, kind: int, clip: float = math.inf,
             norms: np.ndarray | None = None) -> np.ndarray:
    """A GLM's per-example gradient coefficients in place of the margins ``z`` (n, R), C order, of
    the rows whose labels are ``y`` (n,): φ'(z, y) for the loss ``kind`` (:data:`GLM_LOGISTIC`,
    :data:`GLM_SQUARED`), times min(1, C/max(|φ'|·‖x_i‖, 1e-300)) when ``clip`` is finite
    (``norms``: the rows' ‖x_i‖), so each clipped per-example gradient coef·x_i has norm ≤ C.

    One pass over z, a few rows at a time in cache, with the vectorisable :func:`exp`: the same
    formulas as :class:`dpcore.models.LogReg`'s numpy passes (within 2 ulp of them: only e^x
    differs), without their ten passes through memory or numpy's scalar ``exp`` on a CPU without
    AVX-512.  Returns ``z`` (a C-order float64 copy when it was not one)."""
    z = np.ascontiguousarray(z, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    norms = np.empty(0) if norms is None else np.ascontiguousarray(norms, dtype=np.float64)
    scratch = GLM_ROWS * max(1, z.shape[1])
    _glm_coef(z, y, int(kind), float(clip), norms, np.empty(scratch), np.empty(scratch))
    return z


# ---------------------------------------------------------------------------
# a GLM's whole gradient pass over a shared matrix's CSR rows: X read once for all R runs
#
# Batched DP-GD on R runs made a step of two scipy products, the margins Xθ and then Xᵀcoef, each
# reading every non-zero of X (values and column indices) again from memory.  Here each block of
# :data:`GLM_ROWS` rows is read from memory once: its margins for every run, their coefficients
# (:func:`_glm_coef`, clipped when asked), then the rows' scatter into the gradient, the rows still in
# L1/L2.  Both products add in scipy's order (a row's non-zeros in turn, then row after row), without
# fastmath, so their bits are the scipy products' bits.


#: the runs from which the models take :func:`glm_grad` instead of scipy's two products (the same
#: bits either way): measured on Adult, one thread, load 4 on 2 cores, a pass 2.3 against 2.5 ms at R = 8,
#: 4.0 against 5.5 ms at R = 20; at R = 1 scipy's 0.6 ms against 1.3 ms (its one-vector products have no
#: loop over runs, and numba's loop over a few runs is not a SIMD loop)
GLM_GRAD_RUNS = 8


@_compiled(nogil=True, error_model="numpy")  # no fastmath: each sum in the products' own order
def _glm_grad_rows(indptr, indices, data, W, y, kind, clip, norms, lo, hi, zout, z, e, kf, G):
    """``G += Σ_i coef_i x_iᵀ`` over the CSR rows ``lo:hi`` (``G``, ``W``: (d, R)), the rows' margins
    copied into ``zout`` (hi − lo, R) when it has rows; ``z`` (rows, R), ``e``, ``kf``: scratch.

    A block's margins take the rows' p-th non-zeros in turn (p = 0, 1, …): each row's sum still adds
    its non-zeros in order, but the rows' sums through memory interleave instead of waiting on each
    other (the margins alone, R = 20: 1.5 against 1.9 ms on Adult, one thread, load 4).  Flat arrays
    indexed by unsigned integers: no test for Python's negative indices in the inner loops."""
    uR = np.uint64(W.shape[1])
    Wf, Gf, zf = W.ravel(), G.ravel(), z.ravel()
    keep = zout.shape[0] > 0
    clipped = clip < np.inf
    for i0 in range(lo, hi, z.shape[0]):
        i1 = min(hi, i0 + z.shape[0])
        a, b = np.uint64(i0), np.uint64(i1)
        most = 0
        for i in range(a, b):
            most = max(most, indptr[i + np.uint64(1)] - indptr[i])
        for q in range((b - a) * uR):
            zf[q] = 0.0
        for p in range(np.uint64(most)):
            for i in range(a, b):
                k = np.uint64(indptr[i]) + p
                if k < np.uint64(indptr[i + np.uint64(1)]):
                    v = data[k]
                    o, c = (i - a) * uR, np.uint64(indices[k]) * uR
                    for r in range(uR):
                        zf[o + r] += v * Wf[c + r]
        zb = z[:i1 - i0]
        if keep:
            zout[i0 - lo:i1 - lo] = zb
        _glm_coef(zb, y[i0:i1], kind, clip, norms[i0:i1] if clipped else norms, e, kf)
        for i in range(a, b):
            o = (i - a) * uR
            for k in range(np.uint64(indptr[i]), np.uint64(indptr[i + np.uint64(1)])):
                v = data[k]
                c = np.uint64(indices[k]) * uR
                for r in range(uR):
                    Gf[c + r] += v * zf[o + r]


def glm_grad(csr, blocks, theta: np.ndarray, y: np.ndarray, kind: int, clip: float = math.inf,
             norms: np.ndarray | None = None, margins: bool = False):
    """``Σ_i coef_{r,i} x_i`` for every run r, (R, d), with :func:`glm_coef`'s coefficients of the margins
    ``θ_r·x_i`` (clipped to ``clip`` with ``norms`` the rows' ‖x_i‖ when it is finite), in one read of the
    CSR matrix ``csr`` (float64, sorted indices) for all R runs.  ``blocks``: the fixed row blocks
    ``(lo, hi)``, each its own sum on the pool's threads (:func:`dpcore.numerics.linalg.map_chunks`), the blocks'
    sums added in order: the bits never depend on the thread count.  Returns the sum and, per block,
    its margins (hi − lo, R) when ``margins`` (for the rows' losses), else ``None``."""
    W = np.ascontiguousarray(np.asarray(theta, dtype=np.float64).T)
    y = np.ascontiguousarray(y, dtype=np.float64)
    norms = np.empty(0) if norms is None else np.ascontiguousarray(norms, dtype=np.float64)
    R = W.shape[1]

    def block(lo_hi):
        lo, hi = lo_hi
        G = np.zeros(W.shape)
        zout = np.empty((hi - lo, R) if margins else (0, R))
        scratch = GLM_ROWS * max(1, R)
        _glm_grad_rows(csr.indptr, csr.indices, csr.data, W, y, int(kind), float(clip), norms, int(lo), int(hi),
                       zout, np.empty((GLM_ROWS, R)), np.empty(scratch), np.empty(scratch), G)
        return G, (zout if margins else None)

    parts = linalg.map_chunks(block, blocks)
    total = parts[0][0]
    for G, _ in parts[1:]:  # in the blocks' order: the same bits on any number of threads
        total = total + G
    return np.ascontiguousarray(total.T), [z for _, z in parts]
