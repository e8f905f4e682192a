"""Audit benchmark: the measured white-box audit of output and objective perturbation
(``dpcore/audit/measured_release.py``); ``bench_audit.py`` prints it in its one run (``--only release``).

Run: ``python benchmarks/bench_audit_release.py [--trials N] [--seeds K] [--first-seed S] [--only tight|bugs]
[--plain]``.  Prints figures; asserts nothing.  Goals, Breast Cancer logistic regression, δ = 1e-5, certified
ε = 2, 1,000 runs a side:

* output-gaussian and objective-gaussian: the audited ε over the truth (the measured pair's exact ε under the
  noise that ran: a Gaussian shift of the measured shift over σ) ≥ 0.95× mean over 10 unseen seeds
  (181–190), every sample printed with its ratio to the certified ε (the pair may be below the worst case
  the certificate pays for: output 0.71 of the declared Δ_T, objective half the declared 2ζ);
* planted bugs, hidden from the plan (the mechanism modules' calibration patched): half the noise drawn,
  output's sensitivity for 2n and for 2λ (at λ = 0.03, where λ matters), objective's linear term scaled
  by 2n — each refuted, with the words saying what is wrong.

``--plain`` also runs the plain white-box audit (``measure=False``) on the same seeds, for comparison.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpcore.privacy.accounting import gdp_epsilon  # noqa: E402
from dpcore.audit import run_audit  # noqa: E402
from dpcore.experiments.run import RunSpec  # noqa: E402

MECHANISMS = ("output-gaussian", "objective-gaussian")
#: (bug, mechanism, spec overrides): what the measured release audit must refute
RELEASE_BUGS = (("half-sigma", "output-gaussian", {}), ("sensitivity-2n", "output-gaussian", {}),
                ("sensitivity-2lambda", "output-gaussian", {"lam": 0.03}),
                ("half-sigma", "objective-gaussian", {}), ("linear-term-2n", "objective-gaussian", {}))


def _load() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


class _HalfNoise:
    """The runs' generators with every Gaussian draw halved (the plan still declares all of it)."""

    def __init__(self, rngs):
        self._rngs = rngs

    def __len__(self):
        return len(self._rngs)

    def __getattr__(self, name):
        return getattr(self._rngs, name)

    def normal(self, shape, scale=1.0):
        return self._rngs.normal(shape, 0.5 * np.asarray(scale, dtype=float))


@contextlib.contextmanager
def planted_release(bug: str | None, mechanism: str = "output-gaussian"):
    """A planted bug in output or objective perturbation, hidden from the plan: ``"half-sigma"`` (half the
    noise drawn), ``"sensitivity-2n"`` / ``"sensitivity-2lambda"`` (output's Δ_T computed for 2n / 2λ: the
    noise calibrated, and declared, for that sensitivity), ``"linear-term-2n"`` (objective's solve divides b
    by 2n); None: none."""
    if bug is None:
        yield
        return
    import dpcore.mechanisms.objective as objective
    import dpcore.mechanisms.output as output

    cls = output.OutputGaussian if mechanism == "output-gaussian" else objective.ObjectiveGaussian
    if bug == "half-sigma":
        owner, name, real = cls, "run", cls.run
        patched = lambda self, problem, config, rngs: real(self, problem, config, _HalfNoise(rngs))  # noqa: E731
    elif bug == "sensitivity-2n":
        owner, name, real = output.OutputGaussian, "sensitivity", output.OutputGaussian.sensitivity
        patched = staticmethod(lambda problem, config: real(problem, config) / 2)  # Δ_T ∝ 1/n
    elif bug == "sensitivity-2lambda":
        owner, name, real = output.OutputGaussian, "sensitivity", output.OutputGaussian.sensitivity

        def for_twice_lambda(problem, config):
            wrong = dataclasses.replace(problem.model, lam=2 * problem.model.lam)
            return real(dataclasses.replace(problem, model=wrong), config)

        patched = staticmethod(for_twice_lambda)
    elif bug == "linear-term-2n":
        owner, name, real = objective, "solve_perturbed", objective.solve_perturbed

        def patched(model, X, y, linear, extra_l2=0.0, start=None):
            return real(model, X, y, linear / 2, extra_l2, start)
    else:
        raise ValueError(f"unknown bug {bug!r}")
    saved = owner.__dict__[name]
    setattr(owner, name, patched)
    try:
        yield
    finally:
        setattr(owner, name, saved)


def _spec(args, mechanism, seed, **kw) -> RunSpec:
    return RunSpec(dataset=args.dataset, model=args.model, mechanism=mechanism, epsilon=2.0, delta=1e-5, seed=seed,
                   **kw)


def _truth(r) -> float:
    """The measured pair's exact ε under the noise that ran (a correct mechanism: the declared σ): a Gaussian
    shift of the measured shift (the same in every run) over σ."""
    return gdp_epsilon(r.shift_check["measured"] / r.sigma, r.delta)


def tight_section(args) -> list[tuple]:
    """Audited ÷ truth and ÷ certified at a correct certificate, every seed, mean and worst."""
    first = getattr(args, "first_seed", 181)
    seeds = list(range(first, first + max(args.seeds, 10)))
    print(f"\n== the measured release audit at a correct certificate, certified ε = 2, {args.trials} runs a side, "
          f"seeds {seeds[0]}–{seeds[-1]} ==")
    table = []
    for mid in MECHANISMS:
        to_truth, to_cert, plain = [], [], []
        for seed in seeds:
            r = run_audit(_spec(args, mid, seed), trials=args.trials, threat="white-box")
            truth = _truth(r)
            m = {e["name"]: e for e in r.estimates}["measured"]
            to_truth.append(r.epsilon_lower_bound / truth)
            to_cert.append(r.epsilon_lower_bound / r.epsilon_certified)
            reach = r.shift_check["measured"] / r.shift_check["declared"]
            line = (f"  {mid:19s} seed {seed}  {r.canary:13s} shift {reach:.4f} of the declared  certified "
                    f"{r.epsilon_certified:.4f}  truth {truth:.4f}  audited {r.epsilon_lower_bound:.4f} (μ {m['mu']:.4f})  ÷ truth {to_truth[-1]:.4f}  ÷ certified "
                    f"{to_cert[-1]:.4f}  {r.verdict}  {r.seconds:.1f} s")
            if getattr(args, "plain", False):
                p = run_audit(_spec(args, mid, seed), trials=args.trials, threat="white-box", measure=False)
                plain.append(p.epsilon_lower_bound / p.epsilon_certified)
                line += f"  plain {p.epsilon_lower_bound:.4f} (÷ certified {plain[-1]:.4f})"
            print(line + f"  load {_load()}")
        table.append((mid, to_truth, to_cert, plain))
    print(f"\n{'mechanism':20s} {'÷ truth mean':>12s} {'worst':>7s} {'÷ certified mean':>16s} {'worst':>7s}"
          f"{'  plain ÷ certified mean' if getattr(args, 'plain', False) else ''}  goal")
    for mid, tt, tc, pl in table:
        mean = sum(tt) / len(tt)
        extra = f"  {sum(pl) / len(pl):22.4f}" if pl else ""
        print(f"{mid:20s} {mean:12.4f} {min(tt):7.4f} {sum(tc) / len(tc):16.4f} {min(tc):7.4f}{extra}  ≥ 0.95× of the "
              f"truth, mean: {'met' if mean >= 0.95 else 'NOT met'}  load {_load()}")
    return table


def bugs_section(args) -> None:
    """Each planted bug at ``args.trials`` runs a side (seeds 181–183): the verdict and what was found."""
    print(f"\n== planted bugs, hidden from the plan, certified ε = 2, {args.trials} runs a side ==")
    for bug, mid, kw in RELEASE_BUGS:
        first = getattr(args, "first_seed", 181)
        for seed in range(first, first + getattr(args, "bug_seeds", 3)):
            with planted_release(bug, mid):
                r = run_audit(_spec(args, mid, seed, **kw), trials=args.trials, threat="white-box")
            ref = r.refutation or {}
            print(f"  {bug:19s} {mid:19s} {str(kw or ''):13s} seed {seed}  {r.verdict:27s} refuted "
                  f"{','.join(r.refuted) or '—':9s} once {','.join(r.refuted_once) or '—':9s} certified "
                  f"{r.epsilon_certified:.4g}  audited {r.epsilon_lower_bound:.4g}  noise check "
                  f"{r.noise_check['epsilon']:.4g}  shift {r.shift_check['measured'] / r.shift_check['declared']:.3f}× "
                  f"declared  chance {ref.get('chance', 1.0):.2g}  findings {len(r.findings)}  {r.seconds:.1f} s  "
                  f"load {_load()}")
            for finding in r.findings:
                print(f"      finding: {finding}")


def release_section(args, part: str | None = None) -> None:
    """Both parts, or one (``part``: "tight" or "bugs"): what ``bench_audit.py --only release`` is to print.
    ``args``: ``trials``, ``seeds`` (at least 10 are run), ``dataset``, ``model``; optional ``first_seed``
    (181), ``bug_seeds`` (3), ``plain`` (False)."""
    if part in (None, "tight"):
        tight_section(args)
    if part in (None, "bugs"):
        bugs_section(args)
    print(f"load at the end: {_load()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000, help="runs per side (default 1000)")
    ap.add_argument("--seeds", type=int, default=10, help="seeds of the tightness rows (at least 10)")
    ap.add_argument("--bug-seeds", type=int, default=3, help="seeds of each planted bug (default 3)")
    ap.add_argument("--first-seed", type=int, default=181, help="the first seed (default 181: unseen)")
    ap.add_argument("--dataset", default="breast-cancer")
    ap.add_argument("--model", default="logreg")
    ap.add_argument("--only", choices=("tight", "bugs"), help="run one part only")
    ap.add_argument("--plain", action="store_true", help="also run the plain white-box audit (measure=False)")
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores, load {_load()}; dataset {args.dataset}, model {args.model}, δ = 1e-5, "
          f"T = 100, α = 0.05")
    t = time.perf_counter()
    release_section(args, args.only)
    print(f"{time.perf_counter() - t:.0f} s")


if __name__ == "__main__":
    main()
