"""The accountant's part of a request: a DP-SGD calibration at every corner of the declared ranges.

    python benchmarks/bench_accountant.py [--max-steps 1000000]

The work budget counts training steps and the MLP's reference solve; the accountant is bounded by
construction instead (issue 43): a calibration never asks for more noise than the unsampled
Gaussian composition's closed form 2√T·σ_AG(ε, δ), and the Rényi route runs no integral that
cannot beat it.  This walks ε ∈ {1e-4, 0.01, 1, 1000} × δ ∈ {1e-100, 1e-13, 1e-12, 1e-5, 0.5} ×
q ∈ {1e-300, 1e-7, 1e-4, 0.01, 0.5, 1} × T ∈ {1, 100, 10⁶} (the declared ends of ε, δ, q and T,
with the points where the routes switch), each from cold caches, and prints every sample: its
seconds, the multiplier, the certified ε and its ratio to the closed form (the limit: ≤ 1).  A
crashed corner is a failure of the benchmark, never dropped; the machine's load is printed before
and after.  The summary gives the worst seconds at T ≤ 100 and at T = 10⁶ beside the figures
docs/architecture.md states.  Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpcore.privacy import accounting as acc  # noqa: E402

EPSILONS = (1e-4, 0.01, 1.0, 1000.0)
DELTAS = (1e-100, 1e-13, acc.PLD_MIN_DELTA, 1e-5, 0.5)
RATES = (1e-300, 1e-7, 1e-4, 0.01, 0.5, 1.0)
STEPS = (1, 100, 1_000_000)


def _cold() -> None:
    for f in (acc.calibrate_sampled_gaussian, acc._sampled_gaussian_pld_epsilon, acc._rdp_step,
              acc.rdp_conversion_floor, acc.never_sampled):
        f.cache_clear()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-steps", type=int, default=STEPS[-1], help="leave out the corners with more steps")
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print(f"{'ε':>7s} {'δ':>7s} {'q':>7s} {'T':>8s} {'seconds':>8s} {'z':>11s} {'certified ε':>12s} "
          f"{'z / closed form':>15s}")
    worst = {"T ≤ 100": 0.0, "T = 10⁶": 0.0}
    failures = 0
    for eps, delta, q, T in itertools.product(EPSILONS, DELTAS, RATES, STEPS):
        if T > args.max_steps:
            continue
        _cold()
        t0 = time.perf_counter()
        try:
            z = acc.calibrate_sampled_gaussian(eps, delta, q, T)
            certified = acc.sampled_gaussian_epsilon(z, q, T, delta)
        except Exception as exc:  # a crash is a failure of the benchmark, printed, not dropped
            failures += 1
            print(f"{eps:7.0e} {delta:7.0e} {q:7.0e} {T:8d}  FAILED {type(exc).__name__}: {exc}")
            continue
        took = time.perf_counter() - t0
        closed = 2.0 * math.sqrt(T) * acc.sigma_ag(eps, delta)
        key = "T ≤ 100" if T <= 100 else "T = 10⁶"
        worst[key] = max(worst[key], took)
        print(f"{eps:7.0e} {delta:7.0e} {q:7.0e} {T:8d} {took:8.2f} {z:11.4g} {certified:12.4g} {z / closed:15.4f}",
              flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"worst calibration at T ≤ 100: {worst['T ≤ 100']:.2f} s (docs/architecture.md: 13 s, at ε = 1000); "
          f"at T = 10⁶: {worst['T = 10⁶']:.2f} s (docs/architecture.md: 66 s); failures: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
