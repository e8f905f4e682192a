"""Every shipped result is this code's numbers, within the reproducibility contract (SPEC §9; issues 42, 54).

``data/results`` ships each paper-figure preset's full-size table (``<id>.csv``, and ``<id>-published.csv``
with the papers' own calibrations) with its sweep's record (``<id>.json``), and the rows of Compare's
classroom preset (``compare-classroom.json``); ``data/tuned`` ships the tunings (``<dataset>-<model>.json``).
The views draw them as they are, without computing: a change to a mechanism, the data, a calibration or
the tuning that moves a number leaves them showing another code's numbers.  So, for every file, one row,
the cheapest by the work budget's estimate (:func:`~dpcore.experiments.sweep.task_cost`; ties: the first
listed), is computed again with the code as it is, and must agree with the stored numbers as
``docs/spec.md`` §9 (Reproducibility contract) says, quantity by quantity:

* **certificates** (certified, local and spent ε, σ) are functions of the configuration
  alone: equal up to the accountant's own error (:data:`CLOSED_FORM_TOL`; one step of the PLD's grid,
  read from the accountant as it certifies; :data:`SIGMA_RTOL`), and on the safe side (a calibrated
  run never certifies above its target, a search never spends less than its final run);
* **results** (gap, L*, accuracy, RMSE, …) to a tolerance derived per quantity (:data:`RESULT_RTOL`,
  :data:`ACCURACY_FLIPS`), with the means, spreads and intervals of R runs to what R runs within it
  allow (:func:`_aggregate_factor`);
* runs whose last bits are chaotic (:func:`_chaotic`: the float32 MLP, gradient steps on released
  records, diverged runs) by their repeats, through an equivalence test with a margin per quantity (below);
* everything else (the configuration, training rows, seeds, choices, refusals) exactly.

**Chaotic runs: an equivalence test** (:func:`_runs_equivalent`, :func:`_tost`).  A chaotic quantity's
stored and computed means must be *shown* to differ by less than its margin (:func:`_margin`): 1 point for
an accuracy (:data:`ACCURACY_MARGIN` = 0.01), 0.01 loss units for the gap, L* and an RMSE
(:data:`LOSS_MARGIN`; 1 % of the stored mean above a loss of 1, where the noise overwhelms a run), never
below the quantity's own per-run tolerance (ACCURACY_FLIPS test points, FLOAT32_RTOL).  Two one-sided tests
at 95 % (:data:`EQUIVALENCE_LEVEL`): the 90 % confidence interval of the mean difference lies inside
± the margin.  A preset table records each run's seed (``run_seed``), so each computed run is compared with
the stored run of its seed, and the interval is that of the paired differences (their mean ± t₀.₉₅,R−1·s/√R):
0 wide when the runs are bit-identical, the test then exact.  Runs whose seeds do not match are compared as
fresh draws (Welch's interval: 5 runs spread like input-Kang's, s ≈ 0.17, could then never pass: a file must
record its seeds).  A summary of R runs (a tuning's or Compare's row: no runs stored) agrees when each number
is within its per-run tolerance, or else by the test with the worst spread two summaries allow (s₁ + s₂).
Its two error rates, for normally distributed paired differences of spread σ (5 runs; by simulation in
:func:`test_the_equivalence_rules_error_rates`):

* **it passes a shift it should not**: a mean moved by the margin passes at most 5 % of the time (the level,
  by construction); moved by 2 margins (2 points of accuracy) at most 0.2 % (≤ 1 % with 2 runs) whatever σ,
  and never when σ = 0 (the runs moved together, as a change of the code or the file moves them);
* **it fails a true reproduction** (true difference 0): never at σ = 0 (runs bit-identical, or every run
  moved by the same amount within the margin), at most 5 % while σ ≤ margin/2 (≈ 0 at σ = margin/4), 71 %
  at σ = margin: how often depends on σ, which is why runs are paired.  Observed on three kernels (native
  AVX-512, Prescott, Haswell) for the bundles recomputed here: accuracies identical or one test point
  apart (1e-4: 0.01 margins), gaps within 3e-6 relative.  Not so for input-DBDP at ε ≤ 1 on Bank, Adult and
  KDD Cup (002-fig1): its runs are redrawn by another kernel (a seed's accuracy up to 68 points apart), 5
  runs cannot show such a mean within a point, and the rule fails them on any kernel but the one that
  shipped them (:data:`CHAOTIC_BUNDLES`).

A preset file's cheapest bundle is never chaotic, so one bundle of each kind of chaos is computed too
(:data:`CHAOTIC_BUNDLES`: the MLP, input-Kang's and input-DBDP's released records; the MLP's training runs
in ``slow`` tests, with a default twin of 2 runs: :data:`MLP_TWIN`), and the checks of the check move a
chaotic accuracy by 2 points in a copy of the file and see the check fail.

One function, :func:`assert_reproduced`, applies it to every kind of shipped row (a preset table's,
Compare's classroom rows, a tuning's searched and released-record rows and candidates).

A row is computed the way its file was.  A sweep trains the configurations it can stack (a mechanism's
ε × learning-rate grid: :func:`~dpcore.experiments.sweep.bundles`) as one batch, and on dense data a
stacked run equals the same run alone only to the rounding of the batched products (within the
contract: :func:`test_a_stacked_run_equals_the_run_alone_within_the_contract`); the row's whole bundle
is computed again, through :func:`~dpcore.experiments.sweep.execute_many` (what the sweep's dispatch
calls) with one BLAS thread (what ``run_preset`` sets), and every row of the bundle is compared.  A
tuning row is computed again by :func:`~dpcore.experiments.tune.tune` (or ``tune_released``) with the
arguments its recorded command gave, over every ε the command stacked with it.

The cheapest row is not always cheap: the distributed mechanisms loop over their clients, which the work
estimate does not count (the ε grid of WD-DP on Breast Cancer: 1.4 s at m = 2, 13 s at m = 32 on 2 cores).
A bundle whose estimate times its clients exceeds :data:`LIMIT` is passed over for the cheapest one within
it (004-m8, 004-m16 and 004-fig1 check their DP-GD reference, the same runs in each).  A tuning file's
released-record rows (input perturbation choosing its settings on its own releases: about a minute a row
on Adult) are also checked by what their cheapest row certifies, from its noise plan, without training.
The module's recomputations take about a minute on 2 busy cores, and it passes on other BLAS
kernels (``OPENBLAS_CORETYPE=Prescott`` or ``Haswell``, ``NPY_DISABLE_CPU_FEATURES``: SPEC §9).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import json
import math
import shlex
import shutil
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from threadpoolctl import threadpool_limits

from dpcore.privacy import accounting
from dpcore.privacy import core as privacy
from dpcore.privacy import pld as privacy_pld
from dpcore.cli.commands import build_parser
from dpcore.datasets import load as load_dataset
from dpcore.experiments.context import Context
from dpcore.experiments.presets import PRESETS
from dpcore.shipped import folder_of
from dpcore.experiments.run import RunSpec, noise_plan, problem_data, stack_groups
from dpcore.experiments.studies import (
    CLASSROOM_COMPARE,
    classroom_file,
    classroom_compare,
    compare_base,
)
from dpcore.experiments.sweep import Task, bundles, execute_many, task_cost, tidy_rows
from dpcore.experiments.tune import (
    TuneResult,
    candidates,
    search_space,
    tune,
    tune_released,
    tuned_setting,
    with_setting,
)
from dpcore.jsonutil import dumps
from dpcore.mechanisms import REGISTRY
from dpcore.models import make_model
from dpcore.privacy.core import certify
from tiers import WHOLE

#: a bundle or row above this estimate (its clients counted) is too slow to compute in a test: a few
#: seconds on 2 cores (WD-DP's ε grid at m = 4: 5e9 in 3 s; at m = 8: 1e10 in 6 s)
LIMIT = 8e9

#: shipped files the code as it is no longer reproduces, and why: known, so the suite passes while
#: they wait to be computed again; strict, so a file computed again fails until its entry goes
STALE: dict[str, str] = {}
# (001-fig2, 001-fig3, 001-fig4, 002-appendix, 002-fig1 and 002-fig2 were computed again at 1c66553: their
# input-perturbation rows carried a calibration older than the code's, which one row per file did not show;
# tests/test_plan_files.py now reads one certificate per mechanism of every file.  001-fig2-published and
# 001-fig3-published, stale by one ulp of objective-gaussian's gap since ecb0a6f, were computed again too.
# adult-logreg's released-record rows, stale since 65afe31 certified record releases by their exact
# profile, were computed again with their recorded command: SPEC §9.)
STALE_RELEASED: dict[str, str] = {}

#: one store for the module, one BLAS thread as a preset's run has: references solved once (Bank, KDD Cup)
CTX = Context(threads=1, trace_points=0)
#: the bundled data folder's shipped files, which this file checks
RESULTS_DIR, TUNED_DIR, CLASSROOM_FILE = folder_of("results"), folder_of("tuned"), classroom_file()
#: the stored table's columns that are no result: the task's key (it hashes the source) and its timing
NOT_COMPARED = ("task", "task_seconds", "seconds")


# ============================================================== the contract (docs/spec.md §9)
#
# Each tolerance below is derived from what computes the quantity; docs/spec.md §9 states the same.

#: float64's unit roundoff: one correctly rounded operation errs by at most this, relative
U = 2.0**-53

#: Certificates by a closed form (the GDP profile, the analytic Gaussian, Gaussian features with
#: randomized-response labels through their exact profile, pure composition's sums): exact but for
#: float rounding and the root finders' stopping rules.  ``accounting.gdp_epsilon`` stops brentq at
#: xtol = 1e-14, rtol = 1e-13; ``privacy.gdp_rr_epsilon`` at xtol = rtol = 1e-13 and rounds up by
#: 2e-13·(1 + ε).  A root finder stops anywhere within its tolerance of the root, and a few ulps moved
#: in a function value (another libm's exp, another kernel's sum) can move where: two evaluations agree
#: to 2·(1e-13 + 1e-13·ε) + 2e-13·(1 + ε) ≤ 6e-13·(1 + ε).  Allowed: CLOSED_FORM_TOL·(1 + ε), absolute.
CLOSED_FORM_TOL = 1e-12

#: A calibrated σ (or scale) of a closed-form certificate: ``privacy.calibrate`` solves log σ by brentq at
#: xtol = 1e-14, rtol = CALIBRATION_RTOL = 1e-9, then raises σ by factors 1 + 1e-7 until ``certify``
#: confirms: two machines agree to 4·(1e-14 + 1e-9·|ln σ|) + 2·1e-7 ≤ 1e-6 for |ln σ| ≤ 200.  A σ
#: calibrated on the PLD accountant is good to the accountant's own statement of a calibration's
#: resolution instead, ``accounting.TABLE_SLACK`` (1 %: a stored calibration 1 % above the least noise
#: that certifies is discarded; ``calibrate_sampled_gaussian`` steps z by 0.1 % and 1e-4).
SIGMA_RTOL = 1e-6
assert privacy.CALIBRATION_RTOL == 1e-9, "SIGMA_RTOL's derivation assumes calibrate's rtol of 1e-9"

#: Certificates by dp-accounting's PLD accountant (Poisson-sampled Gaussians, choices among plans,
#: compositions it alone covers) are good to one step of the accountant's grid: it rounds every privacy
#: loss up onto a grid of step Δ (pessimistic), so its ε is an upper bound, and a loss on a grid
#: boundary may round to either neighbour on another machine; its FFT's sums in another order move ε
#: by far less (a DP-SGD row: 0.9999915219379503 on AVX-512, 0.9999916088859793 on AVX2, 8.7e-8 at
#: Δ = 1e-3).  Δ is read from the accountant as it certifies (:func:`_accountant_grids`):
#: ``accounting.pld_grid`` (≥ PLD_DISCRETIZATION = 1e-3) for sampled Gaussians, min(0.05,
#: 1e-4·max(1, ε)) for other compositions (``privacy_pld._pld_epsilon``).
PLD_GRID_STEPS = 1

#: Loss-based results of convex float64 runs (L*, the gap L(θ) − L*, RMSE, their means over runs),
#: relative to the losses they are made of (|x| + |L*| + LOSS_FLOOR).  Evaluating a mean loss over n
#: rows of d features errs by at most (n + d)·u in the worst case (2.3e-10 at the largest shipped
#: n + d = 2.1e6, a direct solve's statistics); a run of T steps is non-expansive on a convex
#: β-smooth loss at η ≤ 2/β, so its steps' roundings add up, like a random walk: √(T(n + d))·u
#: (Higham & Mary 2019; 5e-12 at T = 1000, n + d = 6e4).  L* is Newton's optimum to ‖∇L‖ ≤ 1e-10
#: (erm.GRAD_TOL), hence within ‖∇L‖²/2λ = 5e-18 of the minimum at λ = 1e-3: rounding dominates.
#: 1e-9 covers both bounds; observed on three kernels: ≤ 1.2e-14.
RESULT_RTOL = 1e-9
#: the largest n + d of a shipped table (003-fig1/fig2: n = 2²¹ synthetic rows, d = 15)
LARGEST_N_PLUS_D = 2**21 + 15
assert RESULT_RTOL >= LARGEST_N_PLUS_D * U, "RESULT_RTOL must cover the worst-case rounding of a mean loss"
#: the smallest loss scale: L* ≥ 0.0049 on the shipped data; only a gap of 0 (the non-private run,
#: 5.6e-17 on one kernel, 0.0 on another) is judged by it alone: 1e-12 absolute
LOSS_FLOOR = 1e-3

#: Accuracies: a test point's prediction flips only when its margin is within its rounding of 0,
#: |x·θ| ≲ (d + 1)·u·‖θ‖ ≈ 1e-14 (float32: ≈ 1e-5); with margins spread over O(‖θ‖) the expected number
#: of such points is ≲ n_test·1e-14 (float32: ≈ 0.1 on 10⁴ points).  At most this many flipped points
#: a run (accuracy ± k/n_test; validation accuracies ± k/n_validation); a third is a finding.
ACCURACY_FLIPS = 2

#: Runs whose last bits are chaotic (:func:`_chaotic`) are judged by their repeats, by an equivalence test
#: (two one-sided tests, TOST; Schuirmann 1987): the stored and the computed means must be shown to differ
#: by less than the quantity's margin (:func:`_margin`) at this level, i.e. the 90 % confidence interval
#: of the mean difference lies inside ± the margin (:func:`_tost`).  Where the stored and computed runs
#: used the same seeds (a table's ``run_seed``, matched run by run) the interval is the paired
#: differences' (:func:`_runs_equivalent`); otherwise Welch's, as if the runs were drawn afresh.
EQUIVALENCE_LEVEL = 0.95
#: the margin of an accuracy (the test split's, the validation split's): 1 point.  Never below the
#: quantity's own per-run tolerance (ACCURACY_FLIPS test points: 6.7 points on Iris's 30, 1 point at
#: n_test = 200, 0.02 points on Adult's 9045).
ACCURACY_MARGIN = 0.01
#: the margin of a loss-based result (the gap L(θ) − L*, L*, an RMSE), in loss units: 0.01 (1.4 % of
#: the trivial model's logistic loss log 2; an RMSE on labels scaled to [−1, 1]), and 1 % of the stored
#: mean above a loss of 1 (a run the noise overwhelms: gaps of 10³–10⁸ compared to 1 % of themselves)
LOSS_MARGIN = 0.01
#: a configuration's runs whose divergence differs (the flag, a value that is not finite): at most one
DIVERGED_FLIPS = 1
#: float32 runs (the MLP's forward pass in float32): the per-run floor under the statistical rule,
#: relative to the losses: ≈ 1700 float32 roundings (u₃₂ = 6e-8); observed: 4e-7 (an MLP's gaps on Bank,
#: SkylakeX against Prescott kernels)
FLOAT32_RTOL = 1e-4
#: a run this far above L* (in loss units; the trivial model θ = 0 loses log 2 (logistic) or ≤ ½
#: (squared loss, labels in [−1, 1])) has left the region where a step contracts: it diverged
DIVERGED_GAP = 1e3
#: mechanisms whose server trains by gradient steps on the released (noised) records: the noise
#: (σ ≈ 14–800 per coordinate on rows of norm ≤ 1) makes the loss's smoothness β ≫ 2/η, so a step is
#: expansive and the last bits of a run chaotic (input-DBDP at ε = 1 on Adult, δ = 1/n², 10 releases: mean
#: accuracy 0.515 on SkylakeX kernels, 0.565 on Haswell's, from the same seeds)
TRAINED_ON_RELEASES = frozenset({"input-kang", "input-dbdp", "input-dbdp-if"})
#: the other record-releasing mechanisms: their server solves exactly (input-fukuchi, local-gaussian) or
#: steps on privatised gradients, not records (local-duchi): float64 results, judged as such
SOLVED_ON_RELEASES = frozenset({"input-fukuchi", "local-gaussian", "local-duchi"})
#: a released-record tuning chooses each release's setting on float32 candidates: a near-tie of two
#: candidates' scores may choose the other on another machine (input-kang at ε = 32 on Adult: one release
#: of ten chose T = 100 on SkylakeX kernels, T = 400 on Haswell's).  At most this many choices differ a row.
CHOICE_FLIPS = 1

#: keys of certificates: ε's of the configuration's noise plan (closed form or PLD); the target
#: (``epsilon_target``: the configuration's ε, ∞ for the non-private run) is configuration, exact
CERTIFICATES = frozenset({"epsilon_certified", "epsilon_local", "epsilon_spent", "tuned_search_epsilon"})
#: loss-based results and the accuracies (on the test split; on the validation split)
LOSSES = frozenset({"gap", "loss_star", "rmse", "rmse_nonprivate", "rmse_guess", "test_rmse", "untuned_test_rmse"})
ACCURACIES = frozenset({"accuracy", "accuracy_nonprivate", "accuracy_guess", "test_accuracy", "untuned_test_accuracy"})
VALIDATION_ACCURACIES = frozenset({"validation_accuracy", "best_validation_accuracy"})
#: a run's own results (one value per repeat in a preset's table)
PER_RUN = ("gap", "accuracy", "rmse", "diverged")
#: a summary of R runs: (its mean's key, its standard deviation's, its 95 % interval's)
SUMMARIES = (("gap_mean", "gap_std", "gap_ci95"), ("accuracy_mean", "accuracy_std", "accuracy_ci95"),
             ("test_accuracy", "test_accuracy_std", None), ("untuned_test_accuracy", "untuned_test_accuracy_std", None),
             ("test_rmse", "test_rmse_std", None), ("untuned_test_rmse", "untuned_test_rmse_std", None))


@dataclasses.dataclass(frozen=True)
class Scope:
    """What the tolerances of a set of computed rows depend on (SPEC §9)."""

    #: test and validation points an accuracy counts (a flipped point moves it by 1/n)
    n_test: int | None = None
    n_validation: int | None = None
    #: runs behind a row's means, spreads and intervals
    repeats: int = 1
    #: every PLD grid step the accountant certified with while the rows were computed; () = closed forms only
    grids: tuple[float, ...] = ()
    #: the compute dtype of the rows' model
    float32: bool = False


def _base(key: str) -> tuple[str, str]:
    """A key's quantity and how it aggregates runs: ``("gap", "std")`` for ``gap_std``; ``("test_accuracy",
    "mean")`` for a tuning's mean test accuracy; ``("gap", "run")`` for one run's."""
    for suffix, kind in (("_mean", "mean"), ("_std", "std"), ("_ci95", "ci")):
        if key.endswith(suffix):
            return key[: -len(suffix)], kind
    return key, ("mean" if key.startswith(("test_", "untuned_test_")) else "run")


def _aggregate_factor(kind: str, repeats: int) -> float:
    """How far a summary of R runs may move when each run moves by at most τ: the mean by τ, the sample
    standard deviation by τ·√(R/(R − 1)) (the triangle inequality on the deviations' norm), an end of the
    95 % interval mean ± t·s/√R by τ·(1 + t/√(R − 1))."""
    if kind in ("run", "mean") or repeats < 2:
        return 1.0
    if kind == "std":
        return math.sqrt(repeats / (repeats - 1))
    return 1.0 + float(stats.t.ppf(0.975, repeats - 1)) / math.sqrt(repeats - 1)


def certificate_tolerance(value: float, scope: Scope) -> float:
    """How far a certified ε may move (absolute): one step of the coarsest PLD grid the accountant used,
    else the closed forms' CLOSED_FORM_TOL·(1 + ε)."""
    closed = CLOSED_FORM_TOL * (1.0 + abs(value))
    return max(closed, PLD_GRID_STEPS * max(scope.grids)) if scope.grids else closed


def tolerance(key: str, stored, fresh, row: dict, scope: Scope) -> float:
    """The absolute amount by which a stored number may differ from the one computed now (0: exactly)."""
    big = max(abs(stored), abs(fresh))
    if key in CERTIFICATES:
        return certificate_tolerance(big, scope)
    if key == "delta_spent":  # δ and the theorems' fixed δ's, added: rounding only
        return CLOSED_FORM_TOL * big
    if key == "sigma":
        return (accounting.TABLE_SLACK if scope.grids else SIGMA_RTOL) * big
    quantity, kind = _base(key)
    if quantity in LOSSES:
        scale = big
        if kind in ("std", "ci"):  # a spread or an interval is as precise as the losses it spreads over
            mean = row.get(f"{quantity}_mean", row.get(quantity))
            scale += abs(mean) if isinstance(mean, float) and math.isfinite(mean) else 0.0
        if quantity == "gap" and isinstance(row.get("loss_star"), float):
            scale += abs(row["loss_star"])
        per_run = (FLOAT32_RTOL if scope.float32 else RESULT_RTOL) * (scale + LOSS_FLOOR)
    elif quantity in ACCURACIES and scope.n_test:
        per_run = ACCURACY_FLIPS / scope.n_test
    elif quantity in VALIDATION_ACCURACIES and scope.n_validation:
        per_run = ACCURACY_FLIPS / scope.n_validation
    else:
        return 0.0
    return per_run * _aggregate_factor(kind, scope.repeats)


def _same_value(stored, fresh, tol: float) -> bool:
    """Two values agree within ``tol``: numbers by their difference (infinities and NaNs only with
    themselves), anything else (text, flags, missing) exactly."""
    numbers = (int, float, np.integer, np.floating)
    if (isinstance(stored, bool) or isinstance(fresh, bool) or not isinstance(stored, numbers)
            or not isinstance(fresh, numbers)):
        return stored == fresh
    s, f = float(stored), float(fresh)
    if math.isnan(s) or math.isnan(f):
        return math.isnan(s) and math.isnan(f)
    if math.isinf(s) or math.isinf(f):
        return s == f
    return abs(s - f) <= tol


def _chaotic(rows: list[dict], scope: Scope) -> bool:
    """Whether a configuration's runs are judged by their repeats (SPEC §9): the float32 MLP, a mechanism
    trained on its released records, or a run that diverged (the flag, a number that is not finite, a
    gap above DIVERGED_GAP), in the stored rows or the computed ones."""
    if scope.float32 or any(r.get("mechanism") in TRAINED_ON_RELEASES for r in rows):
        return True
    for r in rows:
        if r.get("diverged") is True:
            return True
        for key in ("gap", "gap_mean", "accuracy", "accuracy_mean", "rmse"):
            v = r.get(key)
            if isinstance(v, float) and (not math.isfinite(v) or (key.startswith("gap") and v > DIVERGED_GAP)):
                return True
    return False


def _margin(key: str, stored_mean: float, per_run: float) -> float:
    """The equivalence margin of a chaotic quantity: ACCURACY_MARGIN for an accuracy, LOSS_MARGIN (relative
    above a loss of 1) for a loss-based result; never below ``per_run``, what rounding alone may move one
    run by (§9.2: ACCURACY_FLIPS test points, FLOAT32_RTOL of the losses)."""
    quantity, _ = _base(key)
    if quantity in ACCURACIES or quantity in VALIDATION_ACCURACIES:
        margin = ACCURACY_MARGIN
    elif quantity in LOSSES:
        margin = LOSS_MARGIN * max(1.0, abs(stored_mean)) if math.isfinite(stored_mean) else LOSS_MARGIN
    else:
        raise KeyError(f"{key}: a chaotic quantity without an equivalence margin (add one: SPEC §9.3)")
    return max(margin, per_run)


def _tost(diff: float, se: float, df: float, margin: float) -> tuple[bool, float, float]:
    """Two one-sided tests at EQUIVALENCE_LEVEL: whether the mean difference ``diff`` (standard error ``se``
    on ``df`` degrees of freedom) is shown to lie within ± ``margin``, i.e. its (2·level − 1) confidence
    interval [lo, hi] (90 % at 95 %) lies inside; with a standard error of 0 (runs differing by the same
    amount, bit-identical runs, a single pair) the interval is the difference itself.  Returns the verdict
    and the interval."""
    half = float(stats.t.ppf(EQUIVALENCE_LEVEL, df)) * se if se > 0 and df > 0 else 0.0
    lo, hi = diff - half, diff + half
    return bool(-margin <= lo and hi <= margin), lo, hi


def _paired(seeds_s: list, seeds_f: list) -> list[int] | None:
    """For each stored run, the index of the computed run of the same seed; ``None`` when the two sides do
    not name the same seeds, each once (the runs are then not pairs: they are compared as fresh draws)."""
    if (not seeds_s or any(not isinstance(x, (int, float)) or isinstance(x, bool) for x in seeds_s + seeds_f)
            or len(set(seeds_s)) != len(seeds_s) or sorted(seeds_s) != sorted(seeds_f)):
        return None
    where = {seed: i for i, seed in enumerate(seeds_f)}
    return [where[seed] for seed in seeds_s]


def _runs_equivalent(stored: list[float], fresh: list[float], seeds_s: list, seeds_f: list,
                     margin: float) -> tuple[bool, str]:
    """One chaotic quantity's R runs, stored and computed, by :func:`_tost` (SPEC §9.3).  Paired when both
    sides name the same seeds (:func:`_paired`): the mean and spread of the differences run by run (0 where
    the runs are bit-identical, and then the test is exact); else unpaired (Welch: the two means' standard
    errors and the Welch–Satterthwaite degrees of freedom).  Runs that are not finite (diverged) are left
    out, and may differ from the other side on DIVERGED_FLIPS runs.  Returns the verdict and what it saw."""
    s, f = np.asarray(stored, dtype=float), np.asarray(fresh, dtype=float)
    pairs = _paired(seeds_s, seeds_f)
    if pairs is not None:
        f = f[pairs]
        both = np.isfinite(s) & np.isfinite(f)
        lost = int(np.sum(np.isfinite(s) != np.isfinite(f)))
        d = f[both] - s[both]
        n = int(d.size)
        diff = float(d.mean()) if n else 0.0
        se = float(d.std(ddof=1)) / math.sqrt(n) if n > 1 else 0.0
        df = float(n - 1)
        how = f"paired by seed, {n} runs"
        s_mean, f_mean = (float(s[both].mean()), float(f[both].mean())) if n else (math.nan, math.nan)
    else:
        s, f = s[np.isfinite(s)], f[np.isfinite(f)]
        lost = abs(int(s.size) - int(f.size))
        n = min(int(s.size), int(f.size))
        s_mean, f_mean = (float(s.mean()), float(f.mean())) if n else (math.nan, math.nan)
        diff = f_mean - s_mean if n else 0.0
        a = float(s.var(ddof=1)) / s.size if s.size > 1 else 0.0
        b = float(f.var(ddof=1)) / f.size if f.size > 1 else 0.0
        se = math.sqrt(a + b)
        df = ((a + b) ** 2 / ((a * a / (s.size - 1) if a else 0.0) + (b * b / (f.size - 1) if b else 0.0))
              if a + b > 0 else 0.0)
        how = f"unpaired (seeds not matched), {int(s.size)} and {int(f.size)} runs"
    if lost > DIVERGED_FLIPS:
        return False, f"{how}: {lost} runs finite on one side only (at most {DIVERGED_FLIPS})"
    if n == 0:
        return True, f"{how}: no run finite on both sides"
    ok, lo, hi = _tost(diff, se, df, margin)
    return ok, (f"{how}: stored mean {s_mean!r}, computed {f_mean!r}; the {2 * EQUIVALENCE_LEVEL - 1:.0%} interval "
                f"of the difference [{lo:.3g}, {hi:.3g}] is {'inside' if ok else 'not inside'} the margin ± {margin:.3g}")


def _summaries_equivalent(old: dict, new: dict, keys: tuple[str, str, str | None], repeats: int,
                          scope: Scope) -> tuple[bool, str]:
    """A chaotic configuration's summary of R runs (a tuning's or Compare's row: mean, standard deviation,
    interval; its runs are not stored).  The runs used the same seeds (the command's), but two summaries do
    not tell the spread of the runs' differences: only that it is at most s₁ + s₂ (the triangle
    inequality).  So the summary agrees (1) when each of its numbers is within its per-run tolerance (§9.2:
    the runs reproduced to their last bits, as on the three kernels tried), or else (2) when :func:`_tost`
    shows the means equivalent with that worst-case spread, and the spread and the interval are within
    what runs each moved by the margin allow (:func:`_aggregate_factor`)."""
    mean_key, std_key, ci_key = keys
    mine = [k for k in keys if k and k in old]

    def within_rounding(key: str) -> bool:
        a, b = old[key], new.get(key, _ABSENT)
        pairs = list(zip(a, b)) if isinstance(a, list) and isinstance(b, list) and len(a) == len(b) else [(a, b)]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for pair in pairs for v in pair)
        return all(_same_value(x, y, tolerance(key, x, y, old, scope) if numeric else 0.0) for x, y in pairs)

    if all(within_rounding(k) for k in mine):
        return True, "reproduced within its per-run tolerance"
    mean_s, mean_f = old[mean_key], new.get(mean_key)
    std_s, std_f = old.get(std_key) or 0.0, new.get(std_key) or 0.0
    if not (isinstance(mean_s, float) and isinstance(mean_f, float) and math.isfinite(mean_s) and math.isfinite(mean_f)):
        return False, f"stored {mean_s!r}, computed {mean_f!r}"
    margin = _margin(mean_key, mean_s, tolerance(mean_key, mean_s, mean_f, old, scope))
    se = (std_s + std_f) / math.sqrt(repeats) if repeats > 1 else 0.0
    ok, lo, hi = _tost(mean_f - mean_s, se, repeats - 1, margin)
    ok = ok and abs(std_s - std_f) <= margin * _aggregate_factor("std", repeats)
    if ci_key and isinstance(old.get(ci_key), list) and isinstance(new.get(ci_key), list):
        ok = ok and all(abs(a - b) <= margin * _aggregate_factor("ci", repeats)
                        for a, b in zip(old[ci_key], new[ci_key]))
    return ok, (f"stored {mean_s!r} ± {std_s!r}, computed {mean_f!r} ± {std_f!r}, not within the per-run "
                f"tolerance; with the worst-case spread of paired differences (s₁ + s₂) the "
                f"{2 * EQUIVALENCE_LEVEL - 1:.0%} interval of the difference is [{lo:.3g}, {hi:.3g}], margin "
                f"± {margin:.3g}")


def _safe_side(row: dict, where: str) -> list[str]:
    """What a row may never claim (SPEC §9): a calibrated run certifying above its target, a search
    spending less than its final run certifies."""
    bad = []
    eps = row.get("epsilon_certified")
    if isinstance(eps, float) and math.isfinite(eps) and row.get("calibration", "certified") == "certified":
        target = row.get("epsilon_target", row.get("epsilon"))
        if isinstance(target, float) and eps > target:  # the calibration confirmed it on its machine: exactly
            bad.append(f"{where}: certifies ε = {eps!r}, above its target {target!r}")
    if isinstance(eps, float) and "epsilon_spent" in row:
        spent = math.inf if row["epsilon_spent"] is None else row["epsilon_spent"]
        if spent < eps:
            bad.append(f"{where}: spends ε = {spent!r}, less than its final run certifies ({eps!r})")
    return bad


_ABSENT = "<absent>"


def assert_reproduced(stored: list[dict], fresh: list[dict], where: str, scope: Scope) -> None:
    """The reproducibility contract (SPEC §9), for every kind of shipped row: the ``stored`` rows (a
    file's) agree with the ``fresh`` ones (this code's, computed now), in order.  Rows sharing a ``task``
    (a preset's table) are one configuration's runs; any other row is one configuration, its runs
    summarised (means, spreads, intervals)."""
    assert len(stored) == len(fresh) > 0, f"{where}: {len(stored)} stored rows, {len(fresh)} computed"
    diffs: list[tuple] = []
    problems: list[str] = []
    groups: dict[object, list[int]] = {}
    for i, row in enumerate(stored):
        groups.setdefault(row.get("task", ("row", i)), []).append(i)
    for members in groups.values():
        olds, news = [stored[i] for i in members], [fresh[i] for i in members]
        if [r.get("task") for r in olds] != [r.get("task") for r in news]:
            problems.append(f"{where}: rows {members[0]}–{members[-1]} are of other tasks")
            continue
        judged = _judge_by_repeats(olds, news, members, scope, where, problems)
        for i, old, new in zip(members, olds, news):
            problems += _safe_side(old, f"{where}, stored row {i}") + _safe_side(new, f"{where}, computed row {i}")
            if set(old) - set(NOT_COMPARED) != set(new) - set(NOT_COMPARED):
                problems.append(f"{where}, row {i}: stored fields {sorted(set(old) - set(new))}, computed fields "
                                f"{sorted(set(new) - set(old))} (the rows are of another code's form)")
            for key, a in old.items():
                if key in NOT_COMPARED or key in judged:
                    continue
                b = new.get(key, _ABSENT)
                same_length = isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                pairs = list(zip(a, b)) if same_length else [(a, b)]
                for x, y in pairs:
                    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y))
                    tol = tolerance(key, x, y, old, scope) if numeric else 0.0
                    if not _same_value(x, y, tol):
                        diffs.append((key, i, x, y, tol))
                        break
    assert not diffs and not problems, (
        f"{where}: {len(diffs)} stored numbers are not this code's within the contract of SPEC §9 "
        f"(column, row, stored, computed, tolerance): {diffs[:6]}" + "".join(f"; {p}" for p in problems[:6]))


def _judge_by_repeats(olds: list[dict], news: list[dict], members: list[int], scope: Scope, where: str,
                      problems: list[str]) -> set[str]:
    """The equivalence rule (SPEC §9.3) for one configuration's chaotic quantities (none: the configuration
    is not chaotic); returns the keys it judged, which the exact and tolerance checks then leave alone."""
    judged: set[str] = set()
    chaotic = _chaotic(olds + news, scope)
    if "run" in olds[0]:  # a table's runs, one row each
        if not chaotic:
            return judged
        seeds_s, seeds_f = [r.get("run_seed") for r in olds], [r.get("run_seed") for r in news]
        for key in PER_RUN:
            if key not in olds[0]:
                continue
            judged.add(key)
            if key == "diverged":  # a flag: one run may diverge on one machine and not on another
                s, f = [r.get(key) is True for r in olds], [r.get(key) is True for r in news]
                pairs = _paired(seeds_s, seeds_f)
                flips = (sum(a != f[j] for a, j in zip(s, pairs)) if pairs is not None else abs(sum(s) - sum(f)))
                if flips > DIVERGED_FLIPS:
                    problems.append(f"{where}: diverged of rows {members[0]}–{members[-1]} (a chaotic configuration): "
                                    f"{flips} runs diverged on one side only (at most {DIVERGED_FLIPS})")
                continue
            s = [r[key] if isinstance(r.get(key), float) else math.nan for r in olds]
            f = [r.get(key) if isinstance(r.get(key), float) else math.nan for r in news]
            if all(math.isnan(v) for v in s + f):
                continue
            per_run = max((tolerance(key, a, b, r, scope) for a, b, r in zip(s, f, olds)
                           if math.isfinite(a) and math.isfinite(b)), default=0.0)
            finite = [v for v in s if math.isfinite(v)]
            margin = _margin(key, float(np.mean(finite)) if finite else 0.0, per_run)
            ok, detail = _runs_equivalent(s, f, seeds_s, seeds_f, margin)
            if not ok:
                problems.append(f"{where}: {key} of rows {members[0]}–{members[-1]} (a chaotic configuration, "
                                f"judged by its {len(s)} runs' equivalence) {detail}")
        return judged
    old, new = olds[0], news[0]
    repeats = int(old.get("repeats") or scope.repeats)
    chosen_on_release = old.get("setting") == {"tune_on_release": True}
    for keys in SUMMARIES:
        mean_key, std_key, ci_key = keys
        if mean_key not in old:
            continue
        # the runs of a chaotic configuration; a released-record tuning's runs after its float32 choices
        if not (chaotic or (chosen_on_release and not mean_key.startswith("untuned_"))):
            continue
        judged |= {mean_key, std_key} | ({ci_key} if ci_key else set())
        ok, detail = _summaries_equivalent(old, new, keys, repeats, scope)
        if not ok:
            problems.append(f"{where}: {mean_key} (a chaotic configuration's summary of {repeats} runs): {detail}")
    if chosen_on_release:
        judged |= {"chosen", "guess_chosen"}
        flips = sum(a != b for a, b in zip(old.get("chosen", []), new.get("chosen", [])))
        if (len(old.get("chosen", [])) != len(new.get("chosen", [])) or flips > CHOICE_FLIPS
                or abs(old.get("guess_chosen", 0) - new.get("guess_chosen", 0)) > CHOICE_FLIPS):
            problems.append(f"{where}: {flips} of its releases chose another setting (at most {CHOICE_FLIPS})")
    return judged


@contextlib.contextmanager
def _accountant_grids():
    """Every PLD grid step the accountant certifies with inside the block (a PLD certificate is good to
    one step: PLD_GRID_STEPS); empty when every certificate came from a closed form.  The certificates
    ``certify`` remembers are forgotten first: a remembered one would hide the accountant it came from."""
    grids: list[float] = []
    sampled, composed, run = accounting._sampled_gaussian_pld_epsilon, privacy_pld._pld_epsilon, privacy_pld._pld_run

    def sampled_spy(noise_multiplier, sample_rate, steps, delta, grid):
        grids.append(grid)
        return sampled(noise_multiplier, sample_rate, steps, delta, grid)

    def composed_spy(events, delta):
        runs: list[tuple[float, float]] = []

        def run_spy(evs, d, grid):
            value = run(evs, d, grid)
            runs.append((value, grid))
            return value

        with mock.patch.object(privacy_pld, "_pld_run", run_spy):
            eps = composed(events, delta)
        grids.append(max(g for v, g in runs if v == eps))  # the grid of the value returned (the smaller)
        return eps

    privacy.certify.cache_clear()
    with mock.patch.object(accounting, "_sampled_gaussian_pld_epsilon", sampled_spy), \
            mock.patch.object(privacy_pld, "_pld_epsilon", composed_spy):
        yield grids


def _float32(model_id: str) -> bool:
    """Whether a model's runs are float32 or non-convex (the MLP): judged by their repeats."""
    model = make_model(model_id)
    return not model.convex or getattr(model, "compute_dtype", "float64") != "float64"


@functools.cache
def _n_test(dataset: str) -> int:
    return load_dataset(dataset).n_test


# ------------------------------------------------------------------------------ preset tables


def _preset_stems() -> list[str]:
    return sorted(p.stem for p in RESULTS_DIR.glob("*.json") if p.with_suffix(".csv").exists())


def _marked(stems, stale):
    return [pytest.param(s, marks=pytest.mark.xfail(reason=stale[s], strict=True, raises=AssertionError))
            if s in stale else s for s in stems]


def _spec(config: dict) -> RunSpec:
    """A record's configuration (``RunSpec.to_dict``) as the RunSpec it was."""
    names = {f.name for f in dataclasses.fields(RunSpec)}
    rec = {k: v for k, v in config.items() if k in names}
    rec["options"] = tuple(sorted(rec.get("options", {}).items()))
    rec["stream"] = tuple(rec.get("stream", ()))
    return RunSpec(**rec)


@functools.cache
def _record(stem: str, folder: Path = RESULTS_DIR) -> dict:
    return json.loads((folder / f"{stem}.json").read_text())


def _tasks(record: dict) -> tuple[list[Task], dict[str, str]]:
    """The sweep's tasks, as ``run_preset`` built them, and each one's key in the stored table (a key
    hashes the package's source: the stored keys are an older code's)."""
    tags = (("preset", record["preset"]["id"]),)
    tasks = [Task(_spec(c), tags=tags) for c in record["configs"]]
    return tasks, {t.key: c["key"] for t, c in zip(tasks, record["configs"])}


def _weight(group: list[Task]) -> float:
    """A bundle's estimate with the clients counted (the distributed mechanisms loop over them)."""
    cost = sum(task_cost(t.config) or math.inf for t in group)
    c = group[0].config
    clients = c.clients if REGISTRY[c.mechanism].family == "distributed" and c.clients else 1
    return cost * clients


def _chosen(tasks: list[Task]) -> list[Task]:
    """The bundle of the cheapest row by ``task_cost`` (ties: the first listed), among those within LIMIT,
    a private one where the file has one: a non-private bundle certifies nothing, so a stale certificate
    or noise scale would pass unseen (and its ε = ∞ has no tolerance to move a number by); not a chaotic
    one (:data:`CHAOTIC_BUNDLES` computes those)."""
    groups = bundles(tasks)
    within = [g for g in groups if _weight(g) <= LIMIT] or groups
    private = ([g for g in within if g[0].config.mechanism not in ("non-private", *TRAINED_ON_RELEASES)
                and g[0].config.model != "mlp"] or within)
    return min(private, key=lambda g: sum(task_cost(t.config) or math.inf for t in g))


@functools.cache
def _computed(configs: tuple[RunSpec, ...]) -> tuple[tuple[dict, ...], tuple[float, ...]]:
    """A bundle's task records, computed as the sweep's dispatch computes a bundle (in order, one
    BLAS thread), and the PLD grids their certificates used; cached, since several presets ship the
    same runs (001-fig2 and 001-fig3)."""
    with _accountant_grids() as grids:
        records = execute_many([c.to_dict() for c in configs], threads=1, ctx=CTX)
    return tuple(records), tuple(grids)


def _cell(text: str):
    """A CSV cell as the value it holds: a number, a flag, text, or ``None`` (empty)."""
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return float(text)
    except ValueError:
        return text


def _typed(table: pd.DataFrame) -> list[dict]:
    """A table read as text (``dtype=str``), as rows of values."""
    return [{k: _cell(v) for k, v in row.items()} for row in table.to_dict("records")]


def _fresh_table(group: list[Task], stored_keys: dict[str, str], records=None) -> pd.DataFrame:
    """The bundle's rows as ``run_preset`` writes them (the CSV text), read back as text."""
    records = records if records is not None else _computed(tuple(t.config for t in group))[0]
    df = pd.DataFrame(tidy_rows(group, {t.key: r for t, r in zip(group, records)}))
    df["task"] = df["task"].map(stored_keys)
    return pd.read_csv(io.StringIO(df.to_csv(index=False)), dtype=str, keep_default_na=False)


def _bundle_scope(group: list[Task], grids: tuple[float, ...]) -> Scope:
    c = group[0].config
    return Scope(n_test=problem_data(c)[0].n_test, repeats=c.repeats, grids=grids, float32=_float32(c.model))


def _stored_rows(stem: str, folder: Path, fresh: pd.DataFrame) -> pd.DataFrame:
    table = pd.read_csv(folder / f"{stem}.csv", dtype=str, keep_default_na=False)
    stored = table[table["task"].isin(set(fresh["task"]))].reset_index(drop=True)
    assert list(stored["task"]) == list(fresh["task"]), f"{stem}: the stored rows are of other tasks"
    return stored


def _check_rows(stored: pd.DataFrame, fresh: pd.DataFrame, where: str, scope: Scope) -> None:
    # a column only other tasks fill (the clients of a distributed run) is not in a bundle's own rows
    fresh = fresh.reindex(columns=stored.columns, fill_value="")
    assert_reproduced(_typed(stored), _typed(fresh), where, scope)


def _check_preset_file(stem: str, folder: Path = RESULTS_DIR, pick=_chosen) -> None:
    """``stem``'s bundle chosen by ``pick(tasks)`` (the cheapest: :func:`_chosen`) computed again and held
    to the contract."""
    record = _record(stem, folder)
    tasks, stored_keys = _tasks(record)
    group = pick(tasks)
    _, grids = _computed(tuple(t.config for t in group))
    fresh = _fresh_table(group, stored_keys)
    c = group[0].config
    _check_rows(_stored_rows(stem, folder, fresh), fresh,
                f"{stem}, {c.mechanism} on {c.dataset} ({c.model}, {len(group)} configurations)",
                _bundle_scope(group, grids))


@pytest.mark.parametrize("stem", _preset_stems())
def test_a_preset_still_declares_the_runs_it_shipped(stem):
    """The figure reads its table as the preset's: the preset's tasks are still the ones computed."""
    record = _record(stem)
    preset = PRESETS[record["preset"]["id"]]
    tasks = preset.tasks(quick=record["quick"], repeats=record["repeats_override"], max_n=record["max_n"],
                         calibration=record["calibration_override"])
    assert [t.config for t in tasks] == [_spec(c) for c in record["configs"]]


@pytest.mark.parametrize("stem", _marked(_preset_stems(), STALE))
def test_a_shipped_preset_row_is_this_codes(stem):
    _check_preset_file(stem)


def _copy_with(tmp_path: Path, stem: str, change, pick=_chosen) -> Path:
    """``stem``'s files copied into ``tmp_path``, its table changed by ``change(table, rows of the bundle
    ``pick`` chooses (its first configuration's), the bundle's scope)``."""
    for ext in ("csv", "json"):
        shutil.copy(RESULTS_DIR / f"{stem}.{ext}", tmp_path / f"{stem}.{ext}")
    tasks, stored_keys = _tasks(_record(stem))
    group = pick(tasks)
    _, grids = _computed(tuple(t.config for t in group))
    table = pd.read_csv(tmp_path / f"{stem}.csv", dtype=str, keep_default_na=False)
    mine = table.index[table["task"] == stored_keys[group[0].key]]
    change(table, mine, _bundle_scope(group, grids))
    table.to_csv(tmp_path / f"{stem}.csv", index=False)
    return tmp_path


def _moved(table, row, column, by) -> None:
    table.loc[row, column] = repr(float(table.loc[row, column]) + by)


def _tol(table, row, column, scope) -> float:
    typed = {k: _cell(v) for k, v in table.loc[row].items()}
    return tolerance(column, typed[column], typed[column], typed, scope)


def test_check_of_the_check_a_stored_number_moved_beyond_its_tolerance_fails(tmp_path):
    stem = "001-fig4"
    _check_preset_file(stem, _copy_with(tmp_path, stem, lambda *a: None))  # the copy passes as the original does

    def gap(table, mine, scope):  # a result: 10 tolerances (10 × 1e-9 of the losses it is made of)
        _moved(table, mine[2], "gap", 10 * _tol(table, mine[2], "gap", scope))

    with pytest.raises(AssertionError, match=r"1 stored numbers are not this code's .*'gap', 2"):
        _check_preset_file(stem, _copy_with(tmp_path, stem, gap))

    def certificate(table, mine, scope):  # a certificate: 10 tolerances (the closed form's: 1e-11·(1 + ε))
        for row in mine:
            _moved(table, row, "epsilon_certified", -10 * _tol(table, row, "epsilon_certified", scope))

    with pytest.raises(AssertionError, match=r"5 stored numbers are not this code's .*'epsilon_certified', 0"):
        _check_preset_file(stem, _copy_with(tmp_path, stem, certificate))

    def accuracy(table, mine, scope):  # one run's accuracy: three test points more than it has
        table.loc[mine[1], "accuracy"] = repr(float(table.loc[mine[1], "accuracy"]) + 3 / scope.n_test)

    with pytest.raises(AssertionError, match=r"1 stored numbers are not this code's .*'accuracy', 1"):
        _check_preset_file(stem, _copy_with(tmp_path, stem, accuracy))

    def above_target(table, mine, scope):  # within the certificate's tolerance, but above the target:
        for row in mine:                     # a calibrated run claiming less noise than its target needs
            target = float(table.loc[row, "epsilon_target"])
            table.loc[row, "epsilon_certified"] = repr(float(np.nextafter(target, math.inf)))

    with pytest.raises(AssertionError, match=r"0 stored numbers .*row 0: certifies ε = .*, above its target"):
        _check_preset_file(stem, _copy_with(tmp_path, stem, above_target))


def test_check_of_the_check_a_stored_number_moved_within_its_tolerance_passes(tmp_path):
    """The tolerances are what pass: each stored number moved by 0.4 of its tolerance (a certified ε down:
    up, it would claim more than its calibration's target, the safe side), an accuracy by one test point,
    still agrees (another machine's numbers differ by less than that: SPEC §9)."""
    stem = "001-fig4"

    def within(table, mine, scope):
        for row in mine:
            for column in ("gap", "loss_star", "sigma"):
                _moved(table, row, column, 0.4 * _tol(table, row, column, scope))
            _moved(table, row, "epsilon_certified", -0.4 * _tol(table, row, "epsilon_certified", scope))
        _moved(table, mine[0], "accuracy", 1 / scope.n_test)

    _check_preset_file(stem, _copy_with(tmp_path, stem, within))


# --------------------------------------------------------------------- chaotic bundles (SPEC §9.3)
#
# Each file's cheapest bundle (above) is never a chaotic one: the MLP and the mechanisms trained on their
# released records cost more than the file's convex float64 runs.  So one bundle of each kind of chaos is
# computed again here, chosen among the shipped files as the cheapest one measured (not estimated: the MLP's
# exact reference, minutes of multi-start L-BFGS, is shipped for Adult only, so Bank's MLP bundles, the
# cheapest by the work estimate, take 1–2.5 minutes) and, among equally cheap ones, on the data with the
# most test points (Bank's 8238: an accuracy's margin is then its 1 point, not ACCURACY_FLIPS test points:
# Iris's 30 would allow 6.7 points).  Seconds on 2 busy cores, native / Prescott / Haswell kernels.

#: kind → (file, dataset, model, mechanism, ε of one configuration of the bundle)
CHAOTIC_BUNDLES = {
    # the MLP's non-private runs: its exact reference (shipped), evaluated in float32 (1.5 / 1.9 / 2.3 s)
    "mlp": ("001-fig2", "adult", "mlp", "non-private", 1.0),
    # gradient steps on released records (5–9 / 5.1 / 4.6 s); ε = 0.25, the least noise of the equally
    # cheap ε's: losses of 0.18–0.63, not the 10⁸ of a run the noise overwhelms (ε = 0.01)
    "input-kang": ("001-fig2", "bank", "logreg", "input-kang", 0.25),
    # the same on input-DBDP's releases, at ε = 7 (3.0 s).  Not at ε ≤ 1: there input-DBDP's runs do not
    # reproduce seed by seed on another kernel (Bank at ε = 1, the seeds' accuracies: 0.869, 0.806, 0.725,
    # 0.857, 0.771 shipped; 0.784, 0.742, 0.743, 0.876, 0.742 with SkylakeX kernels; 0.776, 0.737, 0.588,
    # 0.865, 0.469 with Prescott's), and 5 runs cannot show such a mean within 1 point: the rule fails them
    # (002-fig1 at ε = 0.5 and 1 on Bank, Adult and KDD Cup; SPEC §9.3)
    "input-dbdp": ("002-fig1", "bank", "logreg", "input-dbdp", 7.0),
}
#: the MLP's training runs, whole bundles (``slow``): DP-GD's ε grid on Adult (6 configurations × 5 runs,
#: 107 s), input-Kang's MLP on Adult (55 / 214 s); MLP_TWIN keeps the first in the default run
SLOW_CHAOTIC_BUNDLES = {
    "mlp-gradient-dpgd": ("001-fig2", "adult", "mlp", "gradient-dpgd", 0.25),
    "mlp-input-kang": ("001-fig2", "adult", "mlp", "input-kang", 0.25),
}
#: the default run's twin of the MLP's training bundle: the first MLP_TWIN_RUNS runs (seeds) of one of its
#: configurations, computed alone (17 s), against those runs of the stored table
MLP_TWIN, MLP_TWIN_RUNS = SLOW_CHAOTIC_BUNDLES["mlp-gradient-dpgd"], 2


def _bundle_of(dataset: str, model: str, mechanism: str, epsilon: float):
    """A ``pick`` for :func:`_check_preset_file`: the bundle holding that configuration."""
    def pick(tasks: list[Task]) -> list[Task]:
        for group in bundles(tasks):
            if any((t.config.dataset, t.config.model, t.config.mechanism, t.config.epsilon)
                   == (dataset, model, mechanism, epsilon) for t in group):
                return group
        raise LookupError(f"no bundle of {mechanism} on {dataset} ({model}) at ε = {epsilon}: choose another")
    return pick


def _chaotic_bundle(stem: str, *which) -> list[Task]:
    group = _bundle_of(*which)(_tasks(_record(stem))[0])
    c = group[0].config
    assert _float32(c.model) or c.mechanism in TRAINED_ON_RELEASES, f"{stem}: {c.label()} is not chaotic"
    return group


@pytest.mark.parametrize("kind", sorted(CHAOTIC_BUNDLES))
def test_a_shipped_chaotic_bundle_is_this_codes(kind):
    """A chaotic bundle of each kind, computed again, agrees with its file by the equivalence rule (each run
    against the stored run of its seed) and everything else by the contract."""
    stem, *which = CHAOTIC_BUNDLES[kind]
    _chaotic_bundle(stem, *which)
    _check_preset_file(stem, pick=_bundle_of(*which))


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(SLOW_CHAOTIC_BUNDLES))
def test_a_shipped_mlp_training_bundle_is_this_codes(kind):
    stem, *which = SLOW_CHAOTIC_BUNDLES[kind]
    _chaotic_bundle(stem, *which)
    _check_preset_file(stem, pick=_bundle_of(*which))


def test_the_first_runs_of_a_shipped_mlp_training_row_are_this_codes():
    """The default run's twin of :func:`test_a_shipped_mlp_training_bundle_is_this_codes`: the first
    MLP_TWIN_RUNS runs of one of the MLP's DP-GD configurations, computed alone (a run's seed, not its
    batch, makes its draws; a stacked run equals the run alone within the contract), against the stored runs
    of the same seeds; the configuration differs only in its number of repeats."""
    stem, *which = MLP_TWIN
    tasks, stored_keys = _tasks(_record(stem))
    task = next(t for t in _chaotic_bundle(stem, *which) if t.config.epsilon == which[-1])
    twin = Task(dataclasses.replace(task.config, repeats=MLP_TWIN_RUNS), tags=task.tags)
    records, grids = _computed((twin.config,))
    fresh = _fresh_table([twin], {twin.key: stored_keys[task.key]}, records)
    fresh["repeats"] = str(task.config.repeats)  # the stored configuration's: R runs, of which these
    table = pd.read_csv(RESULTS_DIR / f"{stem}.csv", dtype=str, keep_default_na=False)
    stored = table[(table["task"] == stored_keys[task.key]) & table["run_seed"].isin(set(fresh["run_seed"]))]
    assert list(stored["run_seed"]) == list(fresh["run_seed"]) and len(fresh) == MLP_TWIN_RUNS
    _check_rows(stored.reset_index(drop=True), fresh,
                f"{stem}, {task.config.label()}, its first {MLP_TWIN_RUNS} runs", _bundle_scope([twin], grids))


@pytest.mark.parametrize("kind", sorted(CHAOTIC_BUNDLES))
def test_check_of_the_check_a_chaotic_accuracy_moved_by_two_points_fails(tmp_path, kind):
    """The equivalence rule's power, in a copy of the file: a copy passes as the original does; one run's
    accuracy moved by 2 points fails (5 paired runs: any single run moved by more than 1.6 points moves the
    interval of the mean difference beyond the 1-point margin), and so does every run's."""
    stem, *which = CHAOTIC_BUNDLES[kind]
    pick = _bundle_of(*which)
    _check_preset_file(stem, _copy_with(tmp_path, stem, lambda *a: None, pick), pick)

    def one(table, mine, scope):
        _moved(table, mine[1], "accuracy", 2 * ACCURACY_MARGIN)

    def every(table, mine, scope):
        for row in mine:
            _moved(table, row, "accuracy", -2 * ACCURACY_MARGIN)

    for change in (one, every):
        with pytest.raises(AssertionError, match=r"accuracy of rows 0–4 \(a chaotic configuration, judged by "
                                                 r"its 5 runs' equivalence\) paired by seed"):
            _check_preset_file(stem, _copy_with(tmp_path, stem, change, pick), pick)


def test_check_of_the_check_chaotic_runs_are_paired_by_their_seeds(tmp_path):
    """What the Welch rule passed and the equivalence rule does not: input-Kang's runs on Bank (accuracies
    0.44–0.85 over their 5 seeds) with their values exchanged between seeds (the same mean and spread), or
    their noise removed; what it still passes: every run within the margin (moved by half a point, its gap
    by half its margin)."""
    stem, *which = CHAOTIC_BUNDLES["input-kang"]
    pick = _bundle_of(*which)

    def rotated(table, mine, scope):
        for column in ("accuracy", "gap"):
            values = list(table.loc[mine, column])
            table.loc[mine, column] = values[1:] + values[:1]

    def flattened(table, mine, scope):
        table.loc[mine, "accuracy"] = repr(float(np.mean([float(v) for v in table.loc[mine, "accuracy"]])))

    for change in (rotated, flattened):
        with pytest.raises(AssertionError, match=r"accuracy of rows 0–4 \(a chaotic configuration"):
            _check_preset_file(stem, _copy_with(tmp_path, stem, change, pick), pick)

    def within(table, mine, scope):
        for row in mine:
            _moved(table, row, "accuracy", ACCURACY_MARGIN / 2)
            _moved(table, row, "gap", LOSS_MARGIN / 2)

    _check_preset_file(stem, _copy_with(tmp_path, stem, within, pick), pick)


def test_check_of_the_check_the_equivalence_rule_without_seeds():
    """Without seeds to pair them (``run_seed`` not recorded) a chaotic configuration's runs are compared
    as fresh draws (Welch's interval), and 5 runs spread like input-Kang's on Bank (accuracy's standard
    deviation 0.17) cannot be shown within 1 point of themselves: the rule fails what it cannot show (a file
    without seeds would need its runs' spread below about a point to pass).  With seeds the same runs pass,
    and the rule is exact: moved by 1.01 margins they fail, by 0.99 they pass."""
    stem, *which = CHAOTIC_BUNDLES["input-kang"]
    tasks, stored_keys = _tasks(_record(stem))
    group = _chaotic_bundle(stem, *which)
    records, grids = _computed(tuple(t.config for t in group))
    rows, scope = _typed(_fresh_table(group, stored_keys, records)), _bundle_scope(group, grids)
    assert len(rows) == 5 and np.std([r["accuracy"] for r in rows], ddof=1) > 0.1
    assert_reproduced(rows, rows, "itself", scope)
    unseeded = [{**r, "run_seed": None} for r in rows]
    with pytest.raises(AssertionError, match=r"accuracy of rows 0–4 .* unpaired \(seeds not matched\)"):
        assert_reproduced(unseeded, unseeded, "itself, unseeded", scope)
    for by, passes in ((0.99, True), (1.01, False)):
        moved = [{**r, "accuracy": r["accuracy"] + by * ACCURACY_MARGIN} for r in rows]
        if passes:
            assert_reproduced(rows, moved, f"moved by {by} margins", scope)
        else:
            with pytest.raises(AssertionError, match=r"accuracy of rows 0–4"):
                assert_reproduced(rows, moved, f"moved by {by} margins", scope)
    with pytest.raises(AssertionError, match="the contract"):  # not chaotic: judged run by run
        shifted = [{**r, "gap": g} for r, g in zip(rows, [r["gap"] for r in rows][1:] + [rows[0]["gap"]])]
        assert_reproduced([{**r, "mechanism": "objective-gaussian"} for r in rows],
                          [{**r, "mechanism": "objective-gaussian"} for r in shifted], "shuffled, not chaotic", scope)


def test_the_equivalence_rules_error_rates():
    """The two error rates the module's docstring states, by simulation of :func:`_tost` on normally
    distributed paired differences (5 runs): a mean shifted by the margin passes at most 5 % of the time
    (the level: Schuirmann's two one-sided tests), a shift of 2 margins (2 points of accuracy) at most
    0.3 % whatever the spread; a true reproduction (shift 0) fails at most 5 % of the time while the
    paired spread is at most half the margin, never when it is 0."""
    rng = np.random.default_rng(0)
    runs = 5
    t = float(stats.t.ppf(EQUIVALENCE_LEVEL, runs - 1))

    def passed(shift: float, sd: float, trials: int = 50000) -> float:
        d = rng.normal(shift, sd, size=(trials, runs))
        mean, se = d.mean(axis=1), d.std(axis=1, ddof=1) / math.sqrt(runs)
        ok = (np.abs(mean) + t * se <= 1.0)  # _tost's interval inside ± 1 margin, for every trial at once
        assert all(_tost(float(m), float(e), runs - 1, 1.0)[0] == o for m, e, o in zip(mean[:50], se[:50], ok[:50]))
        return float(ok.mean())

    assert max(passed(1.0, sd) for sd in (0.1, 0.2, 0.3, 0.5, 1.0)) <= 0.06
    assert max(passed(2.0, sd) for sd in (0.25, 0.5, 1.0, 1.5, 2.0, 3.0)) <= 0.003
    assert passed(0.0, 0.5) >= 0.93 and passed(0.0, 0.25) >= 0.9999 and passed(0.0, 0.0, trials=10) == 1.0


def test_every_record_releasing_mechanism_is_judged_as_its_server_trains():
    """TRAINED_ON_RELEASES (chaotic: gradient steps on noised records) and SOLVED_ON_RELEASES (float64)
    name every input and local perturbation mechanism: a new one is placed in one of them."""
    releasing = {k for k, m in REGISTRY.items() if m.family in ("input", "local")}
    assert releasing == TRAINED_ON_RELEASES | SOLVED_ON_RELEASES
    assert not TRAINED_ON_RELEASES & SOLVED_ON_RELEASES


def test_a_stacked_run_equals_the_run_alone_within_the_contract():
    """A stacked run is the same run: 004-m2's WD-DP runs at ε = 0.25, each computed alone, may differ from
    the stored (stacked) gaps in their last bits (dense batched products round with the batch: an ulp on
    the machine that shipped them), and agree with them, and with the bundle computed now, within the
    contract (SPEC §9), as a run computed on another machine does."""
    tasks, stored_keys = _tasks(_record("004-m2"))
    group = _chosen(tasks)
    assert group[0].config.mechanism == "distributed-wddp" and len(group) == 30
    mine = [t for t in group if t.config.epsilon == 0.25]
    with _accountant_grids() as grids:
        alone = [execute_many([t.config.to_dict()], threads=1, ctx=CTX)[0] for t in mine]
    fresh = _fresh_table(mine, stored_keys, alone)
    scope = _bundle_scope(mine, tuple(grids))
    _check_rows(_stored_rows("004-m2", RESULTS_DIR, fresh), fresh, "004-m2 at ε = 0.25, alone against stored", scope)
    stacked = _fresh_table(group, stored_keys)
    stacked = stacked[stacked["task"].isin(set(fresh["task"]))].reset_index(drop=True)
    _check_rows(stacked, fresh, "004-m2 at ε = 0.25, alone against stacked now", scope)


# ---------------------------------------------------------------------- Compare's classroom rows


def test_a_shipped_classroom_row_is_this_codes():
    """Compare's classroom rows (read here whatever the code: the view reads them only while their task
    keys are this code's, so a stale file would quietly never be drawn)."""
    doc = json.loads(CLASSROOM_FILE.read_text())
    c = CLASSROOM_COMPARE
    assert doc["record"]["setting"] == json.loads(json.dumps(c)), "the file is for another definition of the preset"
    rows = [r for r in doc["rows"] if "error" not in r]
    base = compare_base(c["dataset"], c["model"], delta=c["delta"], iterations=c["iterations"],
                        repeats=c["repeats"], calibration=c["calibration"], lam=c["lam"])

    def spec(row):  # as epsilon_sweep builds it: the mechanism at its shipped tuned setting
        found = tuned_setting(c["dataset"], c["model"], row["mechanism"], row["epsilon"]) if c["tuned"] else None
        plain = dataclasses.replace(base, mechanism=row["mechanism"], epsilon=row["epsilon"],
                                    calibration=row["calibration"])
        return with_setting(plain, found[0]) if found else plain

    specs = [spec(r) for r in rows]
    cheapest = min(range(len(rows)), key=lambda i: task_cost(specs[i]) or math.inf)
    group = next(g for g in stack_groups(specs) if cheapest in g)  # what trained with it
    # one BLAS thread per task, as the shipping run's two workers had
    with _accountant_grids() as grids:
        fresh = classroom_compare(CTX, mechanisms=[rows[cheapest]["mechanism"]],
                                  epsilons=[rows[i]["epsilon"] for i in group])
    fresh = json.loads(dumps(fresh))  # as the file holds them (an infinite ε as null)
    scope = Scope(n_test=_n_test(c["dataset"]), repeats=c["repeats"], grids=tuple(grids),
                  float32=_float32(c["model"]))
    assert_reproduced([rows[i] for i in group], fresh, f"{CLASSROOM_FILE.name}, {rows[cheapest]['mechanism']}", scope)


# ------------------------------------------------------------------------------------ tunings


def _tuning_paths() -> list[Path]:
    return sorted(TUNED_DIR.glob("*.json"))


def _arguments(command: str):
    """The arguments the recorded ``python -m dpcore tune …`` command gave (the CLI's own parser)."""
    words = shlex.split(command)
    return build_parser().parse_args(words[words.index("dpcore") + 1:])


def _paid_cost(row: dict, args) -> float:
    """A searched row's estimate: every candidate on the training rows and the final runs."""
    base = RunSpec(dataset=args.dataset, model=args.model, mechanism=row["mechanism"], epsilon=row["epsilon"],
                   repeats=args.repeats, seed=args.seed)
    final = with_setting(dataclasses.replace(base, repeats=args.final_repeats), row["setting"])
    return sum(task_cost(s) or math.inf for s in candidates(base, search_space(row["mechanism"], args.model))
               + [final])


def _released_spec(row: dict, args, delta: float) -> RunSpec:
    return with_setting(RunSpec(dataset=args.dataset, model=args.model, mechanism=row["mechanism"],
                                epsilon=row["epsilon"], delta=delta, repeats=args.final_repeats, seed=args.seed),
                        {"tune_on_release": True})


def _released_cost(row: dict, args, delta: float) -> float:
    """A released-record row's estimate: the untuned run and the one choosing on its releases."""
    tuned = _released_spec(row, args, delta)
    return (task_cost(tuned) or math.inf) + (task_cost(dataclasses.replace(tuned, options=())) or math.inf)


def _rows(path: Path) -> list[tuple[float, str, dict, object]]:
    """Every row of a tuning record with its estimate, its kind and the arguments that made it."""
    record = json.loads(path.read_text())
    out = []
    if record["rows"]:
        args = _arguments(record["command"])
        out += [(_paid_cost(r, args), "paid", r, args) for r in record["rows"] if "error" not in r]
    if record["released_rows"]:
        args = _arguments(record.get("released_command") or record["command"])
        out += [(_released_cost(r, args, record["delta"]), "released", r, args)
                for r in record["released_rows"] if "error" not in r]
    return out


@pytest.mark.parametrize("path", _tuning_paths(), ids=lambda p: p.stem)
def test_a_shipped_tuning_row_is_this_codes(path):
    record = json.loads(path.read_text())
    cost, kind, row, args = min(_rows(path), key=lambda r: r[0])  # ties: the first listed, searched rows first
    assert cost <= LIMIT, f"{path.name}: its cheapest row ({row['mechanism']}) is no longer cheap"
    mech, eps = row["mechanism"], row["epsilon"]
    where = f"{path.name}, {kind} row of {mech} at ε = {eps:g}"
    if kind == "paid":
        # the command searched each mechanism's ε's in one batch: a stacking mechanism's, all of them
        mine = [r["epsilon"] for r in record["rows"] if r["mechanism"] == mech]
        epsilons = mine if REGISTRY[mech].stack_fields else [eps]
        with threadpool_limits(limits=1), _accountant_grids() as grids:  # no oversubscribed cores
            result = tune(args.dataset, mechanisms=[mech], epsilons=epsilons, delta=args.delta, model=args.model, repeats=args.repeats,
                          final_repeats=args.final_repeats, seed=args.seed,
                          validation_fraction=args.validation_fraction, selection_epsilon=args.selection_epsilon)
        fresh = json.loads(json.dumps(result.to_dict()))
        scope = Scope(n_test=_n_test(args.dataset), n_validation=record["n_validation"], repeats=args.final_repeats,
                      grids=tuple(grids), float32=_float32(args.model))
        assert_reproduced([row], [r for r in fresh["rows"] if r["epsilon"] == eps], where, scope)
        assert_reproduced([c for c in record["candidates"] if c["mechanism"] == mech and c["epsilon"] == eps],
                          [c for c in fresh["candidates"] if c["epsilon"] == eps], f"{where}: its candidates",
                          dataclasses.replace(scope, repeats=args.repeats))
    else:
        with threadpool_limits(limits=1), _accountant_grids() as grids:
            rows = tune_released(args.dataset, [mech], [eps], args.delta, model=args.model,
                                 repeats=args.final_repeats, seed=args.seed)
        cleaned = TuneResult(dataset=args.dataset, model=args.model, delta=0.0, n_train=0, n_validation=0,
                             rows=[], candidates=[], released_rows=rows).to_dict()["released_rows"]
        scope = Scope(n_test=_n_test(args.dataset), repeats=args.final_repeats, grids=tuple(grids),
                      float32=_float32(args.model))
        assert_reproduced([row], json.loads(json.dumps(cleaned)), where, scope)


@pytest.mark.parametrize("stem", _marked([p.stem for p in _tuning_paths()
                                          if json.loads(p.read_text())["released_rows"]], STALE_RELEASED))
def test_a_shipped_released_rows_certificate_is_this_codes(stem):
    """Every released-record row of a file certifies what the code certifies now, from the noise plan
    (no training), within the contract: the cheapest reasonable check where the row itself takes a minute
    (Adult)."""
    record = json.loads((TUNED_DIR / f"{stem}.json").read_text())
    args = _arguments(record.get("released_command") or record["command"])
    row = min((r for r in record["released_rows"] if "error" not in r),
              key=lambda r: _released_cost(r, args, record["delta"]))
    plan = noise_plan(_released_spec(row, args, record["delta"]), CTX)
    with _accountant_grids() as grids:
        eps = certify(plan, record["delta"])
    keys = ("epsilon", "epsilon_certified", "epsilon_spent", "delta_spent")
    assert_reproduced([{k: row[k] for k in keys}],
                      [{"epsilon": row["epsilon"], "epsilon_certified": eps, "epsilon_spent": eps,
                        "delta_spent": record["delta"]}],
                      f"{stem}, released row of {row['mechanism']} at ε = {row['epsilon']:g}",
                      Scope(grids=tuple(grids)))


# ---------------------------------------------------------------------------------- coverage


def test_every_shipped_result_file_is_checked_here():
    """A result file shipped without a check here fails: add its check (or its kind's) above."""
    known = {f"{s}.{ext}" for s in _preset_stems() for ext in ("csv", "json")} | {CLASSROOM_FILE.name}
    assert {p.name for p in RESULTS_DIR.iterdir() if p.suffix in (".csv", ".json")} == known
    assert {p.name for p in TUNED_DIR.iterdir() if p.suffix in (".csv", ".json")} == \
        {p.name for p in _tuning_paths()}
    assert len(_preset_stems()) == 2 * len(PRESETS)  # every preset, certified and published


@WHOLE
def test_every_shipped_distributed_row_reports_the_local_epsilon_the_code_certifies(whole):
    """Issue 45: a distributed row's local ε is what the server sees: under a record-independent split
    the worst client's ε, which is the row's certified ε (``test_distributed.py`` checks that by a
    closed form); the shipped 004 tables were amended column-wise (their record says so, and the
    Paper figures view's provenance shows it).  Every row of every shipped table, not one per file
    (the twin: every row of the smallest table with distributed rows; reading a table verifies it)."""
    import pandas as pd

    from dpcore.experiments.presets import shipped_results
    from dpcore.partition import RECORD_SPLITS

    seen = 0
    paths = sorted(RESULTS_DIR.glob("*.csv"))
    if not whole:
        paths = sorted((p for p in paths if p.name.startswith("004-")), key=lambda p: p.stat().st_size)[:1]
    for path in paths:
        table = pd.read_csv(path, low_memory=False)
        if "mechanism" not in table:
            continue
        rows = table[table.mechanism.astype(str).str.startswith("distributed-") & table.error.isna()]
        if rows.empty:
            continue
        split = rows["option_split"].fillna("random") if "option_split" in rows else pd.Series("random", rows.index)
        independent = split.map(lambda s: RECORD_SPLITS[f"clients ({s})"].record_independent)
        ok = rows[independent]
        assert (ok.epsilon_local == ok.epsilon_certified).all(), path.name
        assert (rows[~independent].epsilon_local == float("inf")).all(), path.name
        seen += len(ok)
        stem = path.stem.removesuffix("-published")
        shipped = shipped_results(stem)
        assert "amended 2026-11-26: epsilon_local" in shipped.provenance(published=path.stem.endswith("-published"))
    assert seen > (10_000 if whole else 100)


# ------------------------------------------------------------------ the readers' tolerance


def test_the_readers_certificate_error_is_the_grid_the_accountant_certifies_with():
    """What a user's machine allows when it reads a shipped certificate (``privacy.certificate_error``,
    which follows ``certify``'s routes) is what this test reads from the accountant as it certifies
    (``_accountant_grids``): one grid step where a PLD ran, a closed form's tolerance elsewhere.  One
    configuration per mechanism and calibration of every shipped preset table."""
    seen = {}
    for stem in _preset_stems():
        for c in _record(stem)["configs"]:
            seen.setdefault((c["mechanism"], c.get("calibration"), c.get("model")), c)
    checked = 0
    for config in seen.values():
        spec = _spec(config)
        try:
            plan = noise_plan(spec, CTX)
        except (NotImplementedError, ValueError):
            continue  # a plan only training knows (a split of the clients), or a refused setting
        with _accountant_grids() as grids:
            eps = certify(plan, spec.delta)
        expected = max([CLOSED_FORM_TOL * (1 + eps)] + [PLD_GRID_STEPS * g for g in grids]) \
            if math.isfinite(eps) else 0.0
        got = privacy.certificate_error(plan, spec.delta)
        assert got == pytest.approx(expected, rel=1e-12) or (grids and got >= expected), \
            (spec.label(), got, expected, grids)
        checked += 1
    assert checked >= 10
