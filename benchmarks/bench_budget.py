"""What the work budget's unit costs here: seconds per 10⁹ estimated operations, per mechanism.

``check_budget`` refuses a run whose :func:`~dpcore.experiments.run.work_estimate` exceeds
``DPCORE_WORK_BUDGET``, and its message tells the user how long that is.  This measures
each mechanism's seconds per estimated operation (the exact reference solved beforehand,
as the app keeps it), on Adult (LR and the MLP) and KDD Cup (the MLP), one BLAS thread,
and prints what the default budget means in time for the slowest iterative one (the others'
estimate counts one step: their runs are short and bounded by the memory budget).
Run: ``python benchmarks/bench_budget.py``.  Prints figures; asserts nothing.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from threadpoolctl import threadpool_limits  # noqa: E402

from dpcore.exceptions import DPCoreError  # noqa: E402
from dpcore.experiments.context import Budget  # noqa: E402
from dpcore.experiments.run import RunSpec, problem_data, run, work_estimate  # noqa: E402
from dpcore.mechanisms import REGISTRY, get_mechanism  # noqa: E402


def main() -> None:
    cases = [(m, "logreg", "adult", 50) for m in REGISTRY if "logreg" in REGISTRY[m].models]
    cases += [(m, "mlp", d, 10) for d in ("adult", "kddcup99") for m in REGISTRY if "mlp" in REGISTRY[m].models]
    worst = (0.0, "")
    print(f"{'mechanism':22s} {'model':7s} {'data':9s} {'ops':>9s} {'seconds':>8s} {'s per 1e9 ops':>14s}")
    with threadpool_limits(limits=1):
        for mech, model, data, T in cases:
            spec = RunSpec(dataset=data, model=model, mechanism=mech, iterations=T, repeats=5, epsilon=1.0)
            try:
                run(spec)  # the exact reference, and warm caches
                again = dataclasses.replace(spec, epsilon=0.5)  # not the cached result of the first
                t = time.perf_counter()
                run(again)
                took = time.perf_counter() - t
            except DPCoreError as exc:
                print(f"{mech:22s} {model:7s} {data:9s} refused: {str(exc)[:60]}")
                continue
            ds, mdl = problem_data(spec)
            ops = work_estimate(spec, ds, mdl, get_mechanism(mech))
            rate = took / ops * 1e9
            if REGISTRY[mech].iterative:
                worst = max(worst, (rate, f"{mech} ({model}, {data})"))
            print(f"{mech:22s} {model:7s} {data:9s} {ops:9.2e} {took:8.2f} {rate:14.3f}")
    budget = Budget.from_environment().work
    print(f"slowest iterative mechanism per estimated operation: {worst[1]}, {worst[0]:.3f} s per 1e9 on one "
          f"thread; the budget {budget:.0e} is then about {worst[0] * budget / 1e9 / 60:.1f} min")


if __name__ == "__main__":
    main()
