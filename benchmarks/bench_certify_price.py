"""``python benchmarks/bench_certify_price.py [COUNT] [SEED]``: what ``certify --plan`` prices before it runs
(:func:`dpcore.certify.core.plan_work`, :func:`dpcore.certify.core.dp_accounting_work`) beside what it then takes
(issue 67: a pricer within 2× of the cost it prices, for mixed sampled releases and the ε(δ) curve).

For COUNT generated plans (default 24; kinds drawn in turn: one Poisson-sampled Gaussian, two or three
sampled Gaussians of different z, q and T composed, Gaussian sums with randomized response, a choice
among sampled runs), each row: the plan, our accountant's price and its measured CPU seconds for the
certificate at every δ of the text curve (:data:`dpcore.certify.plans.CURVE_DELTAS` and 1e-5, as the
command computes them), then the same for dp-accounting's second figure at δ = 1e-5.  A ratio
ran ÷ priced above 1 is work the budget did not see; below 1, work refused that would have fit.  Every
sample is printed; a sample that raised is a failure, reported and counted, never dropped.  The
machine's load is printed before and after (CPU seconds are steadier than wall seconds under load, and
are what the price is in: the budget's unit is a CPU-second on the reference machine).
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a clone

from dpcore.privacy import core as P  # noqa: E402
from dpcore.certify.plans import (CURVE_DELTAS, _dp_accounting_epsilon, _Pricer, dp_accounting_work,  # noqa: E402
                                  plan_work)

KINDS = ("sampled", "mixed", "gaussian+rr", "any-of")


def _sampled(rng: random.Random, label: str) -> P.NoisePlan:
    return P.sampled_gaussian(label, 1.0, rng.uniform(0.5, 3.0), rng.choice([1e-3, 0.01, 0.05, 0.2, 0.7]),
                              rng.choice([10, 100, 1000, 10_000]))


def plan_of(kind: str, rng: random.Random) -> P.NoisePlan:
    if kind == "sampled":
        return _sampled(rng, "steps")
    if kind == "mixed":
        return P.NoisePlan(tuple(_sampled(rng, f"phase {i}").releases[0] for i in range(rng.choice([2, 3]))))
    if kind == "gaussian+rr":
        return P.NoisePlan((P.Release("gaussian", "the features", 1.0, rng.uniform(1, 8), count=rng.choice([1, 10, 100])),
                            P.randomized_response("the labels", rng.uniform(0.1, 2.0))))
    return P.any_of("the final run", [_sampled(rng, "steps"), _sampled(rng, "steps")])


def main(count: int = 24, seed: int = 1) -> int:
    rng = random.Random(seed)
    pricer = _Pricer()
    deltas = sorted(set(CURVE_DELTAS) | {1e-5})
    print(f"load before: {'/'.join(f'{v:.2f}' for v in os.getloadavg())}; {count} plans, seed {seed}")
    print(f"{'#':>3} {'kind':<12} {'ours priced':>11} {'ran':>8} {'ran/priced':>10}   {'d-a priced':>10} {'ran':>8} "
          f"{'ran/priced':>10}  plan")
    ratios, failures = [], 0
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        plan = plan_of(kind, rng)
        try:
            ours = plan_work(plan, deltas, pricer).seconds
            t = time.process_time()
            for d in deltas:
                P.certify(plan, d)
            ours_ran = time.process_time() - t
            theirs = dp_accounting_work(plan, pricer).seconds
            t = time.process_time()
            _dp_accounting_epsilon(plan, 1e-5)
            theirs_ran = time.process_time() - t
        except Exception as exc:  # noqa: BLE001 - a failed sample is reported and counted
            failures += 1
            print(f"{i:>3} {kind:<12} FAILED {type(exc).__name__}: {exc}  {plan.describe()[:80]}")
            continue
        r1, r2 = ours_ran / ours, theirs_ran / theirs if theirs else float("nan")
        ratios += [r1] + ([r2] if theirs else [])
        print(f"{i:>3} {kind:<12} {ours:>11.3f} {ours_ran:>8.3f} {r1:>10.2f}   {theirs:>10.3f} {theirs_ran:>8.3f} "
              f"{r2:>10.2f}  {plan.describe()[:90]}", flush=True)
    within = sum(0.5 <= r <= 2 for r in ratios)
    print(f"ran/priced: {within} of {len(ratios)} within [0.5, 2]; min {min(ratios):.2f}, max {max(ratios):.2f}; "
          f"{failures} failed; load after: {'/'.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:3])))
