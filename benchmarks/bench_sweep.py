"""Sweep benchmarks (issue #9): batching, cost scaling, and the diffprivlib anchor.

    python benchmarks/bench_sweep.py [--part a,b,c] [--quick]

Part (c) needs diffprivlib (``benchmarks/requirements.txt``), never a runtime
dependency; ``benchmarks/peers.py`` runs it in a virtualenv of its own.

(a) One configuration's R repeats as one batched computation against the same
    R runs one at a time (same seeds, so the same numbers): the speed-up.
(b) How the cost of a run grows with n (2^10 … 2^21), d, T and the number of
    repeats R, with the exponent of a least-squares fit in log-log.
(c) ``objective-chaudhuri`` against diffprivlib's ``LogisticRegression`` (the
    same objective perturbation of Chaudhuri et al. 2011) on Adult at the same ε
    and regularisation: fit time and test accuracy over seeds.

Timings are the median of a few repeats, one BLAS thread (as sweep tasks
run), measured with ``time.perf_counter``.  Run on a quiet machine: on 2 cores
a second busy process can slow small matrix products 5–20×.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpcore.experiments.run import RunSpec, load_problem, run  # noqa: E402
from dpcore.experiments.context import Context  # noqa: E402
from peers import run_peer  # noqa: E402

#: sweeps record no loss curves; the exact solutions stay in memory between timings
CTX = Context(trace_points=0)


def median_time(fn, reps: int = 3) -> float:
    """Median wall time of ``reps`` calls of ``fn`` (bench_live.py uses it too)."""
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _table(headers, rows) -> str:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(str(h).ljust(w) for h, w in zip(headers, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    return "\n".join([line, sep, *body])


# --------------------------------------------------------------------------- (a)


def part_a(quick: bool) -> None:
    R = 8 if quick else 20
    cases = [
        RunSpec(dataset="adult", mechanism="gradient-dpgd", iterations=100, repeats=R),
        RunSpec(dataset="adult", mechanism="gradient-dpsgd", iterations=200, repeats=R),
        RunSpec(dataset="adult", mechanism="input-kang", iterations=100, repeats=R),
        RunSpec(dataset="adult", mechanism="objective-gaussian", repeats=R),
        RunSpec(dataset="adult", mechanism="output-bolt-on", iterations=100, repeats=R),
        RunSpec(dataset="bank", mechanism="distributed-wddp", iterations=200, repeats=R, clients=8,
                skew=4.0),
    ]
    rows = []
    for cfg in cases:
        load_problem(cfg, ctx=CTX)  # data and exact ERM cached before timing
        batched = run(cfg, ctx=CTX)
        t_b = median_time(lambda: run(cfg, ctx=CTX), reps=2)
        singles = []

        def one_at_a_time():
            singles.clear()
            for r in range(R):
                singles.append(run(replace(cfg, repeats=1, seed=cfg.seed + r), ctx=CTX))

        t_s = median_time(one_at_a_time, reps=2)
        metric = batched.accuracy
        diff = max(abs(float(s.accuracy[0]) - float(metric[r])) for r, s in enumerate(singles))
        rows.append([cfg.mechanism, cfg.dataset, R, f"{t_b:.2f}", f"{t_s:.2f}", f"{t_s / t_b:.1f}×",
                     f"{diff:.1e}"])
    print(f"\n(a) R = {R} repeats: one batched run against R runs one at a time (same seeds)\n")
    print(_table(["mechanism", "dataset", "R", "batched s", "one at a time s", "speed-up",
                  "max |Δ accuracy|"], rows))


# --------------------------------------------------------------------------- (b)


def _fit(xs, ts) -> float:
    return float(np.polyfit(np.log(xs), np.log(ts), 1)[0])


def part_b(quick: bool) -> None:
    base = RunSpec(dataset="synthetic-classification", mechanism="gradient-dpgd", iterations=100,
                   repeats=5, n=2**14, d=14)

    def seconds(cfg) -> float:
        load_problem(cfg, ctx=CTX)
        return statistics.median(run(cfg, ctx=CTX).seconds for _ in range(3))

    sweeps = {
        "n": ("n", [2**k for k in range(10, 22 if not quick else 17, 1 if not quick else 2)]),
        "d": ("d", [8, 16, 32, 64, 128, 256] if not quick else [8, 32, 128]),
        "T": ("iterations", [25, 50, 100, 200, 400] if not quick else [25, 100, 400]),
        "R": ("repeats", [1, 2, 4, 8, 16, 32, 64] if not quick else [1, 4, 16]),
    }
    summary = []
    for label, (field, values) in sweeps.items():
        ts = []
        for v in values:
            cfg = replace(base, **{field: v})
            ts.append(seconds(cfg))
        # fit where the cost is not dominated by fixed overhead (the upper half of the range)
        half = max(2, len(values) // 2)
        k_all, k_top = _fit(values, ts), _fit(values[-half:], ts[-half:])
        print(f"\n(b) gradient-dpgd, synthetic logreg, cost against {label} "
              f"(others: n = 2^14, d = 14, T = 100, R = 5)\n")
        print(_table([label, "seconds", "µs per run-step"],
                     [[v, f"{t:.4f}", f"{1e6 * t / (replace(base, **{field: v}).iterations * replace(base, **{field: v}).repeats):.1f}"]
                      for v, t in zip(values, ts)]))
        summary.append([label, f"{values[0]}…{values[-1]}", f"{k_all:.2f}", f"{k_top:.2f}"])
    print("\n(b) fitted exponents: seconds ∝ x^k\n")
    print(_table(["x", "range", "k (all points)", "k (upper half)"], summary))


# --------------------------------------------------------------------------- (c)


_RUNNER = r"""
import json, sys, time, warnings
import numpy as np
import diffprivlib, sklearn
from diffprivlib.models import LogisticRegression
d = np.load(sys.argv[1])
X, y, Xt, yt = d["X"], d["y"], d["Xt"], d["yt"]
cfg = json.loads(sys.argv[2])
out = {"diffprivlib": diffprivlib.__version__, "sklearn": sklearn.__version__, "rows": []}
for eps in cfg["epsilons"]:
    accs, secs = [], []
    for s in range(cfg["seeds"]):
        clf = LogisticRegression(epsilon=eps, data_norm=1.0, C=cfg["C"], fit_intercept=False,
                                 random_state=s, max_iter=1000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter(); clf.fit(X, y); secs.append(time.perf_counter() - t0)
        accs.append(float(clf.score(Xt, yt)))
    out["rows"].append({"epsilon": eps, "accuracy": accs, "seconds": secs})
print(json.dumps(out))
"""


def part_c(quick: bool) -> None:
    import json
    import tempfile

    seeds = 5 if quick else 20
    lam = 1e-3
    epsilons = [0.1, 0.5, 1.0, 5.0]
    cfg0 = RunSpec(dataset="adult", mechanism="objective-chaudhuri", lam=lam, repeats=seeds)
    ds = load_problem(cfg0, ctx=CTX).dataset
    n = ds.n
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "adult.npz"
        np.savez(path, X=ds.X_train, y=ds.y_train, Xt=ds.X_test, yt=ds.y_test)
        theirs = run_peer(_RUNNER, str(path),
                          json.dumps({"epsilons": epsilons, "seeds": seeds, "C": 1.0 / (lam * n)}))
    if isinstance(theirs, str):
        print(f"\n(c) skipped: diffprivlib failed: {theirs}")
        return
    rows = []
    for eps, th in zip(epsilons, theirs["rows"]):
        cfg = replace(cfg0, epsilon=eps)
        ours = run(cfg, ctx=CTX)
        t_batch = median_time(lambda: run(cfg, ctx=CTX), reps=2)
        one = replace(cfg, repeats=1)
        t_one = median_time(lambda: run(one, ctx=CTX), reps=3)
        t_dpl = statistics.median(th["seconds"])
        acc = np.array(th["accuracy"])
        rows.append([f"{eps:g}", f"{ours.accuracy.mean():.4f} ± {ours.accuracy.std(ddof=1):.4f}",
                     f"{acc.mean():.4f} ± {acc.std(ddof=1):.4f}",
                     f"{t_one:.3f}", f"{t_batch / seeds:.3f}", f"{t_dpl:.3f}",
                     f"{t_dpl / t_one:.1f}×", f"{t_dpl * seeds / t_batch:.1f}×"])
    nonpriv = run(replace(cfg0, mechanism="non-private", repeats=1), ctx=CTX).accuracy[0]
    print(f"\n(c) Adult (n = {n}), logistic regression, λ = {lam:g} (diffprivlib C = 1/(λn) = "
          f"{1 / (lam * n):.4g}), data_norm = 1, no intercept (our bias column), {seeds} seeds; "
          f"diffprivlib {theirs['diffprivlib']} on scikit-learn {theirs['sklearn']}; "
          f"non-private accuracy {nonpriv:.4f}. Time ratio = diffprivlib fit time / dpcore time.\n")
    print(_table(["ε", "dpcore accuracy", "diffprivlib accuracy", "dpcore s (R=1)",
                  f"dpcore s/run (R={seeds})", "diffprivlib s", "ratio (R=1)",
                  f"ratio (R={seeds})"], rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="a,b,c")
    ap.add_argument("--quick", action="store_true", help="fewer points (a smoke run)")
    args = ap.parse_args()
    with threadpool_limits(limits=1):
        for part in args.part.split(","):
            {"a": part_a, "b": part_b, "c": part_c}[part.strip()](args.quick)


if __name__ == "__main__":
    main()
