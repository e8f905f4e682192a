"""Core benchmark: data loading, batched GD throughput and its share of matmul peak.

Run: ``python benchmarks/bench_core.py``.  Prints figures; asserts nothing.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from dpcore import datasets  # noqa: E402
from dpcore.models import LogReg  # noqa: E402
from dpcore.optim import BatchRNG, gradient_descent  # noqa: E402


def best_of(fn, repeats=3):
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def matmul_gflops(dtype, n=2048):
    a = np.random.default_rng(0).standard_normal((n, n)).astype(dtype)
    b = a.copy()
    a @ b  # warm up
    t = best_of(lambda: a @ b, 5)
    return 2 * n**3 / t / 1e9


def main() -> None:
    print(f"machine: {os.cpu_count()} cores, numpy {np.__version__}")
    print("\n== load + preprocess (first load in this process; then cached) ==")
    for spec in datasets.list_datasets():
        t = time.perf_counter()
        ds = datasets.load(spec.id)
        first = time.perf_counter() - t
        t = time.perf_counter()
        datasets.load(spec.id)
        cached = time.perf_counter() - t
        print(f"{spec.id:26s} n={ds.n:>7d} d={ds.d:>4d}  first {first:7.3f} s   cached {cached * 1e6:7.1f} µs")

    print("\n== matrix multiply peak (2048×2048) ==")
    peak = {np.float32: matmul_gflops(np.float32), np.float64: matmul_gflops(np.float64)}
    print(f"float32 {peak[np.float32]:7.1f} GFLOP/s   float64 {peak[np.float64]:7.1f} GFLOP/s")

    print("\n== batched full-batch GD, logreg on Adult (float64) ==")
    ds = datasets.load("adult")
    m = LogReg()
    n, d = ds.X_train.shape
    T = 20
    for R in (1, 10, 100):
        rngs = BatchRNG(list(range(R)))
        theta0 = m.init(R, d)
        sec = best_of(lambda: gradient_descent(m, ds.X_train, ds.y_train, theta0, iterations=T,
                                               learning_rate=1.0, rngs=rngs, noise_std=0.01,
                                               trace_points=0), 3)
        per_step = sec / T
        flops = 4.0 * R * n * d  # forward θXᵀ and backward coef·X per step
        achieved = flops / per_step / 1e9
        print(f"R={R:>4d}: {per_step * 1e3:8.3f} ms/step   {per_step / R * 1e6:9.2f} µs per run-iteration   "
              f"{achieved:6.1f} GFLOP/s = {achieved / peak[np.float64]:5.1%} of float64 peak")


if __name__ == "__main__":
    main()
