"""Audit benchmark: how tight the audits are, how long they take, and every mechanism at ε = 1.

Run: ``python benchmarks/bench_audit.py [--trials N] [--dataset ID] [--all]``.  Prints
figures; asserts nothing.  Goals (the audit issue), Breast Cancer logistic regression:

* white-box, ≤ 1,000 runs a side, certified ε = 2, δ = 1e-5: audited ≥ 0.5 × certified
  (aim 0.8) for gradient-dpgd, gradient-dpsgd, output-gaussian, objective-gaussian;
* black-box, ≤ 1,000 runs a side: gradient-dpgd published with c = 0.05 (certified ≈ 14)
  audits ≥ 2 and the verdict says the target was not met;
* a 1,000-a-side white-box audit of DP-GD under 30 s on 2 cores.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpcore.experiments.audit import audit  # noqa: E402
from dpcore.exceptions import DPCoreError  # noqa: E402
from dpcore.experiments.run import RunSpec  # noqa: E402
from dpcore.mechanisms import REGISTRY  # noqa: E402

TIMED = ("non-private", "output-gaussian", "gradient-dpgd", "gradient-dpsgd")


def fmt(v: float) -> str:
    return "∞" if v is None or math.isinf(v) else f"{v:.3g}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000, help="runs per side (default 1000)")
    ap.add_argument("--dataset", default="breast-cancer")
    ap.add_argument("--model", default="logreg")
    ap.add_argument("--all", action="store_true", help="also time and audit every registered mechanism")
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores; dataset {args.dataset}, model {args.model}, "
          f"N = {args.trials} runs per side, δ = 1e-5, T = 100, α = 0.05")

    print("\n== white-box, certified ε = 2, δ = 1e-5 (goal: audited ≥ 0.5 × certified, aim 0.8) ==")
    print(f"{'mechanism':22s} {'certified':>9s} {'direct':>7s} {'GDP fit':>8s} {'audited':>8s} {'ratio':>6s} "
          f"{'seconds':>8s}  verdict")
    for mid in ("gradient-dpgd", "gradient-dpsgd", "output-gaussian", "objective-gaussian"):
        cfg = RunSpec(dataset=args.dataset, model=args.model, mechanism=mid, epsilon=2.0, delta=1e-5)
        t = time.perf_counter()
        r = audit(cfg, trials=args.trials, threat="white-box")
        sec = time.perf_counter() - t
        print(f"{mid:22s} {fmt(r.epsilon_certified):>9s} {r.epsilon_lower_bound_direct:7.3f} "
              f"{fmt(r.epsilon_lower_bound_gdp) if r.epsilon_lower_bound_gdp is not None else '—':>8s} "
              f"{r.epsilon_lower_bound:8.3f} {r.epsilon_lower_bound / r.epsilon_certified:6.2f} {sec:8.2f}  "
              f"{r.verdict}")

    print("\n== black-box, gradient-dpgd published c = 0.05 (goal: audited ≥ 2, target not met) ==")
    for canary in ("opposite-pair", "mislabeled", "lowest-variance"):
        cfg = RunSpec(dataset=args.dataset, model=args.model, mechanism="gradient-dpgd",
                      calibration="published", c=0.05)
        t = time.perf_counter()
        r = audit(cfg, trials=args.trials, canary=canary)
        print(f"canary {canary:16s} certified {fmt(r.epsilon_certified)}  audited {r.epsilon_lower_bound:.3f}  "
              f"verdict {r.verdict} (refuted: {', '.join(r.refuted) or '—'})  {time.perf_counter() - t:.1f} s")
    if not args.all:
        return

    print("\n== time of one audit (certified calibration) ==")
    for mid in TIMED:
        cfg = RunSpec(dataset=args.dataset, model=args.model, mechanism=mid)
        t = time.perf_counter()
        r = audit(cfg, trials=args.trials)
        sec = time.perf_counter() - t
        print(f"{mid:22s} {sec:7.2f} s   ({2 * args.trials / sec:8.0f} runs/s)   ε_LB = {r.epsilon_lower_bound:.3f}")

    print("\n== audit of every registered mechanism ==")
    head = (f"{'mechanism':22s} {'calibration':11s} {'target':>7s} {'certified':>9s} {'audited':>8s} "
            f"{'FP':>4s} {'FN':>4s}  {'verdict':24s} {'seconds':>7s}")
    print(head)
    print("-" * len(head))
    for mid in REGISTRY:
        for calibration in ("published", "certified"):
            cfg = RunSpec(dataset=args.dataset, model=args.model, mechanism=mid,
                          calibration=calibration, c=1.0)
            try:
                r = audit(cfg, trials=args.trials)
            except DPCoreError as exc:
                print(f"{mid:22s} {calibration:11s} skipped: {exc}")
                continue
            print(f"{mid:22s} {calibration:11s} {fmt(r.epsilon_target):>7s} {fmt(r.epsilon_certified):>9s} "
                  f"{r.epsilon_lower_bound:8.3f} {r.false_positives:4d} {r.false_negatives:4d}  "
                  f"{r.verdict:24s} {r.seconds:7.2f}")
            for w in r.warnings:
                print(f"{'':35s}warning: {w}")


if __name__ == "__main__":
    main()
