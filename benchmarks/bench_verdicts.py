"""The verdict rule's two error rates, measured (issue 66): how often a correct claim is shown refuted.

Run: ``python benchmarks/bench_verdicts.py [--seeds 400] [--first 1000] [--only view|leaking|cli]``.

A claim is shown refuted ("claim not met") only when two independent audits refute it
(:func:`dpcore.run_audit`'s ``confirm``): the first at α, the second at α₂ = 10⁻³/α, so a correct claim
is shown refuted in at most α·α₂ = 10⁻³ of audits.  This runs the rule on ``--seeds`` unseen seeds of
three settings whose certificate is correct, and prints every sample (seed, certified ε, audited ε,
verdict, what the first audit refuted, what is shown refuted, seconds, load):

* ``view``: the Audit view's default (Breast Cancer, DP-GD at ε = 1, T = 50, 500 runs a side, the measured
  white-box audit);
* ``leaking``: the lesson's leaking setup (published c = 0.1, certified ε ≈ 9.17, T = 100, 1,000 runs a
  side, white-box): the target is refuted (it is wrong), the certificate must not be;
* ``cli``: ``python -m dpcore audit --dataset breast-cancer --mechanism gradient-dpgd --epsilon 2
  --delta 1e-5 --trials 1000 --threat white-box --seed S`` (the command line's own parser and spec).

The first audit runs with ``confirm=False``; only where it refutes the certificate (or, at a calibrated
setting, the target) is the audit run again with ``confirm=True`` — the same two audits the rule runs,
since the second audit's seed is fixed by the first's.  The rate of a correct claim shown refuted is
printed with its Clopper–Pearson 95 % upper bound; the first audit's own refutation rate beside it.
The other error rate (a false claim passed) is measured by ``bench_audit.py --only default`` (the planted
bugs).  Asserts nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpcore.audit import run_audit  # noqa: E402
from dpcore.audit.bounds import clopper_pearson_upper  # noqa: E402
from dpcore.audit.core import CONFIRMED_FALSE_RATE, confirmation_alpha  # noqa: E402
from dpcore.cli.audit import _audit_config  # noqa: E402
from dpcore.cli.parser import build_parser  # noqa: E402
from dpcore.experiments.run import RunSpec  # noqa: E402
from dpcore.lesson import LEAKING_AUDIT, LEAKING_THREAT, LEAKING_TRIALS  # noqa: E402


def _load() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def _cli_spec(seed: int) -> tuple[RunSpec, int, str]:
    args = build_parser().parse_args(["audit", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd",
                                      "--epsilon", "2", "--delta", "1e-5", "--trials", "1000", "--threat",
                                      "white-box", "--seed", str(seed)])
    return _audit_config(args), args.trials, args.threat


SETTINGS = {
    "view": (lambda s: (RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", epsilon=1.0,
                                delta=1e-5, iterations=50, seed=s), 500, "white-box"), ("target", "certified")),
    "leaking": (lambda s: (dataclasses.replace(LEAKING_AUDIT, seed=s), LEAKING_TRIALS, LEAKING_THREAT),
                ("certified",)),
    "cli": (_cli_spec, ("target", "certified")),
}


def run_setting(name: str, seeds: range) -> dict:
    make, correct = SETTINGS[name]
    print(f"\n== {name}: claims that are correct here: {', '.join(correct)}; seeds {seeds.start}–{seeds.stop - 1} ==",
          flush=True)
    first_refuted, shown_refuted, failed, t0 = 0, 0, 0, time.perf_counter()
    for seed in seeds:
        spec, trials, threat = make(seed)
        t = time.perf_counter()
        try:
            r = run_audit(spec, trials=trials, threat=threat, confirm=False)
            once = [c for c in r.refuted_once if c in correct]
            shown: list[str] = []
            if once:
                full = run_audit(spec, trials=trials, threat=threat, confirm=True)
                shown = [c for c in full.refuted if c in correct]
        except Exception as exc:  # a crashed sample is a failure, never dropped
            failed += 1
            print(f"  seed {seed}: FAILED {type(exc).__name__}: {exc}  load {_load()}", flush=True)
            continue
        first_refuted += bool(once)
        shown_refuted += bool(shown)
        print(f"  seed {seed}  certified {r.epsilon_certified:.4f}  audited {r.epsilon_lower_bound:.4f}  first: "
              f"{r.verdict} ({','.join(r.refuted_once) or '—'})  correct claims refuted once {','.join(once) or '—'}"
              f"  shown refuted {','.join(shown) or '—'}  {time.perf_counter() - t:.1f} s  load {_load()}",
              flush=True)
    n = len(seeds) - failed
    upper = clopper_pearson_upper(shown_refuted, n, 0.95) if n else math.nan
    out = {"setting": name, "audits": n, "failed": failed, "first_refuted": first_refuted,
           "shown_refuted": shown_refuted, "upper95": upper, "seconds": time.perf_counter() - t0}
    print(f"  {name}: a correct claim refuted by the first audit in {first_refuted} of {n} "
          f"({first_refuted / max(n, 1):.2%}); shown refuted (both audits) in {shown_refuted} of {n} "
          f"(95 % upper bound {upper:.2g}; the rule's bound α·α₂ = {0.05 * confirmation_alpha(0.05):.2g} ≤ "
          f"{CONFIRMED_FALSE_RATE:g}); {failed} failed; {out['seconds']:.0f} s; load {_load()}", flush=True)
    return out


def verdicts_section(seeds: int = 400, first: int = 1000, only=None) -> list[dict]:
    """Every setting (or those in ``only``) on ``seeds`` seeds from ``first``, every sample and the table
    printed (also what ``bench_audit.py`` prints in its one run)."""
    rows = [run_setting(name, range(first, first + seeds)) for name in (only or SETTINGS)]
    print(f"\n{'setting':10s} {'audits':>6s} {'first refuted':>14s} {'shown refuted':>14s} {'95% upper':>10s}  goal")
    for r in rows:
        print(f"{r['setting']:10s} {r['audits']:6d} {r['first_refuted']:14d} {r['shown_refuted']:14d} "
              f"{r['upper95']:10.2g}  ≤ 1e-3 stated; {'met' if r['shown_refuted'] == 0 and not r['failed'] else 'see rows'}")
    print(f"load at the end: {_load()}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=400)
    ap.add_argument("--first", type=int, default=1000, help="the first seed (unseen by the tests: 1000)")
    ap.add_argument("--only", choices=tuple(SETTINGS), action="append")
    args = ap.parse_args()
    print(f"load at the start: {_load()}; {os.cpu_count()} CPUs")
    verdicts_section(args.seeds, args.first, args.only)


if __name__ == "__main__":
    main()
