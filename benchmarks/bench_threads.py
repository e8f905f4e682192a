"""BLAS threads against the context's own parallelism (issue 44's "no thread fights" row).

    python benchmarks/bench_threads.py [--samples 5]

A single DP-GD run (R = 20 repeats, T = 20 steps) on two dense matrices (KDD Cup 99, 56,000 ×
112, 50 MB; a synthetic 40,000 × 96, 31 MB), timed with the context's default BLAS threads
(``Context().threads`` is ``None``: one BLAS thread, the context's pool doing the parallel work)
and with the library's own choice (a thread per core: ``Context(threads=os.cpu_count())``).
Every sample is printed, with the machine's load average before it; a crashed sample is a
failure of the benchmark, never dropped.  The peer is one thread: the default must never be
slower than it, at any load (on a quiet machine the library's choice can win a little; on a
loaded one its threads spin against the pool's and lose many times over).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpcore.experiments.context import Context  # noqa: E402
from dpcore.experiments.run import RunSpec, run  # noqa: E402

CASES = {
    "kddcup99 (dense, 50 MB)": RunSpec(dataset="kddcup99", mechanism="gradient-dpgd", iterations=20, repeats=20),
    "synthetic 40k × 96 (dense, 31 MB)": RunSpec(dataset="synthetic-classification", n=40_000, d=95,
                                                  mechanism="gradient-dpgd", iterations=20, repeats=20),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=5)
    args = ap.parse_args()
    settings = {"default (threads=None: one BLAS thread)": Context(),
                f"library's choice (threads={os.cpu_count()})": Context(threads=os.cpu_count())}
    print(f"{os.cpu_count()} CPUs; every sample in seconds, with the 1-minute load average before it")
    failed = False
    for name, spec in CASES.items():
        run(spec, ctx=Context())  # the exact reference and the data, once
        for label, ctx in settings.items():
            times = []
            for _ in range(args.samples):
                load = os.getloadavg()[0]
                t0 = time.perf_counter()
                try:
                    run(spec, ctx=ctx)
                except Exception as exc:  # noqa: BLE001 - reported, and the benchmark fails
                    print(f"  {name} | {label}: CRASHED ({exc})")
                    failed = True
                    continue
                times.append(time.perf_counter() - t0)
                print(f"  {name} | {label}: {times[-1]:.2f} s (load {load:.1f})", flush=True)
            if times:
                print(f"{name} | {label}: median {statistics.median(times):.2f} s, worst {max(times):.2f} s")
    Context().active()  # leave the process at the default
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
