"""Hyperparameter tuning, with its privacy cost shown rather than hidden.

A mechanism's accuracy depends on knobs the privacy proof does not fix: the steps T, the
step size, the regularisation λ, the clipping norm, the sampling rate.  Papers tune them on
the data and report the best (Yu et al. 2020 choose T and η from small grids); a student
comparing mechanisms at one untuned default can reach the opposite of the paper's finding.

:func:`tune` searches each mechanism's grid (:func:`search_space`) on a validation split
carved from the training rows, per ε, with the candidates that differ only in ε or the step
size trained as one batch.  Choosing among candidates by their accuracy on private data is
itself a release, so the choice is made privately and accounted:

* the split is a seeded permutation of positions (data-independent), so under replace-one
  a record is either a training record or a validation record;
* every candidate is a run on the training part: for a training record the search composes
  all of them (and the final run), exactly, with the mechanisms' own privacy events;
* the choice is the exponential mechanism on each candidate's count of correct validation
  predictions (sensitivity 1), sampled by the Gumbel-max trick at ``selection_epsilon``
  (default: the target ε): for a validation record it costs that, plus the final run;
* the chosen setting is then trained once on the whole training split (the released model).
  Which setting that is depends on the data, so the final run is certified as *any* of the
  settings the choice could pick (:func:`~dpcore.privacy.core.any_of`), not as the one it picked;
* every candidate and the final run draw their noise from their own random stream
  (``RunSpec.stream``): the composition above treats them as independent releases, which
  runs sharing one seed's stream would not be.

``epsilon_spent`` is the worse of the two, certified at ``delta_spent`` (the target δ plus
whatever δ the published theorems of the composed runs spend), by :func:`search_spent` from the
settings alone: a reader of a shipped record recomputes both from its candidates and its ``search``
(:func:`check_tuning`).  ``epsilon_certified`` is the
final run's alone: what a paper reports when the search is treated as free (for instance
because the grid was chosen on public data).  Both are in every row.

Input and local perturbation are different: they release the records once, and anything the
server computes from the released records is post-processing.  :func:`tune_released` runs them
with the option ``tune_on_release`` (:mod:`dpcore.mechanisms.released`: every release chooses
its own T, η, λ on a validation part of its released records, the guess competing), beside the
untuned run on the very same releases: ε spent is the certified ε, and nothing is paid.

What ε spent covers is the chosen setting and the model trained with it.  The validation
accuracies the result also reports (every candidate's, the chosen one's, the best) are
computed from the private validation records without noise, for teaching: a release that
includes them is not covered by ε spent.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from .. import datasets as _datasets
from ..datasets import Dataset
from ..numerics import streams
from ..exceptions import DPCoreError, ParameterError, moved_attributes
from ..mechanisms import REGISTRY
from ..metrics import summarize
from ..params import validate
from .. import shipped
# what a search runs and what it costs: shared with the reader of a record (check_tuning), so kept below both
from .. import verified
from . import search as searches
from .search import (RELEASE_FAMILIES, SEARCH_SPACES, TUNABLE_FAMILIES, candidates, released_tunable,
                              check_tune_arguments, search_cost, search_plan, search_space, search_spent, validation_positions,
                              validation_split)
from ..privacy.core import CLOSED_FORM_TOL, NoisePlan, certificate_error, certify, same_certificate
from .context import Context, default_context
from .run import RunResult, RunSpec, check_data_many, noise_plan, run_outcomes
from .sweep import results_fingerprint

__all__ = ["RELEASE_FAMILIES", "tune_released", "released_tunable", "with_setting", "setting_text", "TUNABLE_FAMILIES", "DEFAULT_MECHANISMS", "shipped_tuning", "check_tuning", "SPENT_FIELDS", "tuned_spec", "tuned_setting", "search_space", "candidates", "validation_split", "validation_positions", "tune", "TuneResult",
           "epsilon_for_accuracy", "choose", "search_spent", "search_cost", "search_plan", "YU_2020_ADULT"]

#: What ``dpcore tune`` tunes unless told otherwise: the central mechanisms of the comparison.
DEFAULT_MECHANISMS = ("output-laplace", "output-gaussian", "output-bolt-on", "objective-chaudhuri",
                      "objective-gaussian", "gradient-dpgd", "gradient-dpsgd")

#: The shipped tuning records (``dpcore tune --out``), one JSON per dataset and model, live in the data
#: folder's ``tuned/`` (:func:`dpcore.shipped.folder_of`); ``TUNED_DIR``, a module attribute in 0.1.0,
#: still reads for one release, with a warning.
__getattr__ = moved_attributes(__name__, {"TUNED_DIR": ("dpcore.shipped.folder_of('tuned')",
                                                        lambda: shipped.folder_of("tuned"))})


#: Yu, Zhang, Chen, Yin & Liu 2020, "Gradient perturbation is underrated for differentially
#: private convex optimization", Table 2: validation accuracy (%) on Adult, ε = 0.1,
#: δ = 1/n², logistic regression, averaged over 20 runs.  Our closest mechanism for each
#: of their columns (AMP is Iyengar et al.'s objective perturbation; Out-SGD is Wu et
#: al.'s bolt-on output perturbation of permutation SGD).
YU_2020_ADULT = {
    "non-private": ("Non private", 84.8),
    "objective-chaudhuri": ("AMP (objective perturbation)", 79.3),
    "output-bolt-on": ("Out-SGD (bolt-on output perturbation)", 77.4),
    "gradient-dpsgd": ("DP-SGD", 80.4),
    "gradient-dpgd": ("DP-GD", 80.9),
}


@dataclass
class TuneResult:
    """Per (mechanism, ε): the chosen setting and what it costs (:func:`tune`; :meth:`to_dict` is the
    shipped record's form)."""

    dataset: str
    model: str
    delta: float
    n_train: int
    n_validation: int
    rows: list[dict[str, Any]]
    candidates: list[dict[str, Any]]  # every candidate's validation accuracy
    errors: list[dict[str, Any]] = field(default_factory=list)
    released_rows: list[dict[str, Any]] = field(default_factory=list)  # tune_released's
    #: how the searches ran (:func:`tune`'s arguments ``repeats``, ``final_repeats``, ``validation_fraction``,
    #: ``seed``, ``selection_epsilon``): with the candidates' settings, what ε spent is a function of
    #: (:func:`search_spent`), so a reader recomputes it (:func:`check_tuning`)
    search: dict[str, Any] = field(default_factory=dict)
    #: per (mechanism, ε) searched: the whole search's noise plan and the δ it is certified at
    #: (:func:`search_plan`; not in :meth:`to_dict`: ``NoisePlan.to_dp_events`` exports it)
    plans: dict[tuple[str, float], tuple[NoisePlan, float]] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        def clean(v):
            if isinstance(v, float) and math.isinf(v):
                return None
            return v
        return {"dataset": self.dataset, "model": self.model, "delta": self.delta, "n_train": self.n_train,
                "n_validation": self.n_validation, **({"search": dict(self.search)} if self.search else {}),
                "rows": [{k: clean(v) for k, v in r.items()} for r in self.rows],
                "candidates": [{k: clean(v) for k, v in c.items()} for c in self.candidates],
                "errors": self.errors,
                "released_rows": [{k: clean(v) for k, v in r.items()} for r in self.released_rows]}


def _setting(spec: RunSpec, space: dict[str, tuple]) -> dict[str, Any]:
    return {k: getattr(spec, k) for k in sorted(space)}


def tune(dataset: str | Dataset, *, mechanisms: Sequence[str], epsilons: Sequence[float], delta: float | None = None,
         model: str = "logreg", repeats: int = 1, final_repeats: int = 10, seed: int = 0,
         validation_fraction: float = 0.2, selection_epsilon: float | None = None,
         grids: dict[str, dict[str, tuple]] | None = None, ctx: Context | None = None) -> TuneResult:
    """Tune each mechanism at each ε on a validation split and train the choice on the whole
    training split (module docstring: how the choice is made and what it costs).

    Parameters
    ----------
    dataset : str or Dataset
        A registered id, or a user's own :class:`~dpcore.datasets.Dataset` (solved afresh, never
        cached).  Classification only: the choice scores correct validation predictions.
    mechanisms : sequence of str
        Mechanism ids to tune (:data:`DEFAULT_MECHANISMS` is the comparison's).
    epsilons : sequence of float
        The target ε's; each (mechanism, ε) gets its own search.
    delta : float, optional
        Default 1/n² (Yu et al.'s choice).
    model : str
        ``"logreg"`` (the default) or another classification model.
    repeats : int
        Runs per candidate on the validation split (each is a release the search pays for).
    final_repeats : int
        Runs of the chosen setting on the test split, for its accuracy (one of them is the
        released model; the others only measure the spread).
    seed : int
        Seeds the validation split, the candidates' runs and the final runs.
    validation_fraction : float
        The share of the training split held out to score the candidates.
    selection_epsilon : float, optional
        The ε of the private choice among the candidates (the exponential mechanism on their
        correct validation predictions); ``None``: the target ε.
    grids : dict, optional
        Replaces a mechanism's :func:`search_space` (its values are checked when the candidates
        are built).
    ctx : Context, optional
        How to execute (default: :func:`~dpcore.experiments.context.default_context`).

    Returns
    -------
    TuneResult
        Per (mechanism, ε): the chosen setting, its test accuracy, and the certified ε of the whole
        search (``epsilon_spent``) beside the ε of the final run alone.

    Raises
    ------
    ParameterError
        A regression dataset, no ε, or a setting out of its range.

    Examples
    --------
    >>> from dpcore import tune
    >>> result = tune("iris", mechanisms=["output-gaussian"], epsilons=[1.0], final_repeats=3)
    >>> row = result.rows[0]
    >>> row["mechanism"], row["epsilon"], sorted(row["setting"])
    ('output-gaussian', 1.0, ['lam'])
    >>> row["epsilon_spent"] > row["epsilon"]        # the search released every candidate
    True
    """
    check_tune_arguments(mechanisms, epsilons, grids, seed)
    ctx = default_context() if ctx is None else ctx
    own = dataset if isinstance(dataset, Dataset) else None  # a user's: solved afresh, never kept
    full = own if own is not None else _datasets.load(dataset)
    dataset = full.id
    check_data_many([s for m in (mechanisms if own else ()) for s in candidates(RunSpec(dataset, model=model, mechanism=m), (grids or {}).get(m) or SEARCH_SPACES.get(m, {}))], own)  # the door
    free = [m for m in mechanisms if released_tunable(m)]
    mechanisms = [m for m in mechanisms if m not in free]
    released_rows = (tune_released(full if own is not None else dataset, free, epsilons, delta, model=model, repeats=final_repeats,
                                   seed=seed, ctx=ctx) if free else [])
    if free and not mechanisms:
        delta = 1.0 / full.n ** 2 if delta is None else delta
        return TuneResult(dataset=dataset, model=model, delta=delta, n_train=full.n, n_validation=0,
                          rows=[], candidates=[], released_rows=released_rows)
    if full.task != "classification":
        raise ParameterError(f"tuning scores correct validation predictions: {dataset} is a {full.task} "
                             "task; pick a classification dataset")
    epsilons = sorted({validate("epsilon", float(e), "tune") for e in epsilons})
    if not epsilons:
        raise ParameterError("tune needs at least one ε")
    delta = 1.0 / full.n ** 2 if delta is None else validate("delta", delta, "tune")
    repeats = validate("repeats", repeats, "tune")
    final_repeats = validate("repeats", final_repeats, "tune")
    if selection_epsilon is not None:
        selection_epsilon = validate("epsilon", selection_epsilon, "tune")
    split = validation_split(full, validation_fraction, seed)
    spaces = {m: search_space(m, model) for m in mechanisms}
    for m, grid in (grids or {}).items():
        if m in spaces:
            spaces[m] = {k: tuple(v) for k, v in grid.items()}
    if not spaces:
        raise ParameterError("tune needs at least one mechanism")

    specs: list[RunSpec] = []
    owner: list[tuple[str, float]] = []
    for mech, space in spaces.items():
        for eps in epsilons:
            base = RunSpec(dataset=dataset, model=model, mechanism=mech, epsilon=eps, delta=delta,
                           repeats=repeats, seed=seed)
            for k, spec in enumerate(candidates(base, space)):
                specs.append(replace(spec, stream=_stream(streams.TUNE_CANDIDATE, mech, eps, k)))
                owner.append((mech, eps))
    total = len(specs) + len(spaces) * len(epsilons)
    inner = ctx.with_(progress=None, trace_points=0)  # progress counts candidates, not steps
    done = 0
    outcomes: list = []
    for mech in spaces:  # one mechanism at a time, so progress moves
        mine = [s for s, (m, _) in zip(specs, owner) if m == mech]
        outcomes += run_outcomes(mine, inner, dataset=split, keep_reference=own is None)
        done += len(mine)
        ctx.tell(done, total, f"searched {mech}")

    rows: list[dict[str, Any]] = []
    table: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    finals: list[RunSpec] = []
    chosen: list[tuple[str, float, list[RunResult], int, int]] = []
    plans: dict[tuple[str, float], tuple[NoisePlan, float]] = {}
    for mech, space in spaces.items():
        for eps in epsilons:
            runs = [(s, o) for s, o, w in zip(specs, outcomes, owner) if w == (mech, eps)]
            ok = [(s, o) for s, o in runs if isinstance(o, RunResult)]
            for s, o in runs:
                if not isinstance(o, RunResult):
                    errors.append({"mechanism": mech, "epsilon": eps, **_setting(s, space), "error": str(o)})
            if not ok:
                continue
            counts = np.array([float(np.mean(o.accuracy)) * split.n_test for _, o in ok])
            eps_sel = eps if selection_epsilon is None else selection_epsilon
            pick = choose(counts, eps_sel, _choice_rng(seed, mech, eps))
            best = int(np.argmax(counts))
            for k, (s, o) in enumerate(ok):
                table.append({"mechanism": mech, "epsilon": eps, **_setting(s, space),
                              "validation_accuracy": float(np.mean(o.accuracy)),
                              "epsilon_certified": o.epsilon_certified, "chosen": k == pick})
            # every setting the choice could pick, trained as the final run would be: their plans
            # bound the final run's cost whichever is picked (the choice reads the data)
            possible = [replace(s, repeats=final_repeats, stream=_stream(streams.TUNE_FINAL, mech, eps))
                        for s, _ in ok]
            finals.append(possible[pick])
            chosen.append((mech, eps, [o for _, o in ok], pick, best, [s for s, _ in ok]))

    final_outcomes = run_outcomes(finals, inner, dataset=own)
    ctx.tell(total, total, "trained the chosen settings")
    for spec, (mech, eps, cands, pick, best, searched), out in zip(finals, chosen, final_outcomes):
        space = spaces[mech]
        row: dict[str, Any] = {"mechanism": mech, "epsilon": eps, "setting": _setting(spec, space),
                               "candidates": len(cands),
                               "validation_accuracy": float(np.mean(cands[pick].accuracy)),
                               "best_validation_accuracy": float(np.mean(cands[best].accuracy))}
        if not isinstance(out, RunResult):
            row["error"] = str(out)
            rows.append(row)
            continue
        eps_sel = eps if selection_epsilon is None else selection_epsilon
        # the one computation of ε spent, the reader's too (check_tuning): from the plans the settings declare
        spent, delta_spent, whole, _ = search_spent(searched, final_repeats=final_repeats, split=split,
                                                    selection_epsilon=eps_sel, ctx=inner, dataset=own)
        plans[(mech, eps)] = (whole, delta_spent)
        s = summarize(out.accuracy, metric="accuracy")
        row.update({"test_accuracy": s["mean"], "test_accuracy_std": s["std"],
                    "accuracy_nonprivate": out.accuracy_nonprivate,
                    "epsilon_certified": out.epsilon_certified, "selection_epsilon": eps_sel,
                    "epsilon_spent": spent, "delta_spent": delta_spent})
        rows.append(row)
    search = {"repeats": repeats, "final_repeats": final_repeats, "validation_fraction": float(validation_fraction),
              "seed": seed, "selection_epsilon": selection_epsilon}
    return TuneResult(dataset=dataset, model=model, delta=delta, n_train=full.n, n_validation=split.n_test,
                      rows=rows, candidates=table, errors=errors, released_rows=released_rows, search=search,
                      plans=plans)


def tune_released(dataset: str | Dataset, mechanisms: Sequence[str], epsilons: Sequence[float], delta: float | None = None,
                  *, model: str | None = None, repeats: int = 10, seed: int = 0,
                  ctx: Context | None = None) -> list[dict[str, Any]]:
    """Input and local perturbation tuned for free: per (mechanism, ε), ``repeats`` releases,
    each trained twice: at the mechanism's defaults (before) and with its settings chosen on
    its own released records (after, option ``tune_on_release``; the module docstring of
    :mod:`dpcore.mechanisms.released`).  The two runs share their releases (the same seeds and
    stream), so the difference is the choice alone; ε spent is the certified ε.  ``dataset``: as
    for :func:`tune`."""
    ctx = default_context() if ctx is None else ctx
    own = dataset if isinstance(dataset, Dataset) else None
    full = own if own is not None else _datasets.load(dataset)
    dataset = full.id
    model = model or ("logreg" if full.task == "classification" else "linreg")
    for m in mechanisms:
        if not released_tunable(m):
            raise ParameterError(f"{m} does not release its records for the server to train on, so it cannot "
                                 "be tuned on them for free; released-record tuning covers "
                                 + ", ".join(k for k in REGISTRY if released_tunable(k)))
    epsilons = sorted({validate("epsilon", float(e), "tune") for e in epsilons})
    delta = 1.0 / full.n ** 2 if delta is None else validate("delta", delta, "tune")
    repeats = validate("repeats", repeats, "tune")
    metric = "accuracy" if full.task == "classification" else "rmse"
    rows: list[dict[str, Any]] = []
    inner = ctx.with_(progress=None, trace_points=0)
    total, done = 2 * len(mechanisms) * len(epsilons), 0
    for mech in mechanisms:
        for eps in epsilons:
            base = RunSpec(dataset=dataset, model=model, mechanism=mech, epsilon=eps, delta=delta, repeats=repeats,
                           seed=seed, stream=_stream(streams.TUNE_FINAL, mech, eps))
            before, after = run_outcomes([base, with_setting(base, {"tune_on_release": True})], inner, dataset=own)
            done += 2
            ctx.tell(done, total, f"tuned {mech} on its released records")
            row: dict[str, Any] = {"mechanism": mech, "epsilon": eps, "setting": {"tune_on_release": True},
                                   "selection": "released records (post-processing: free)"}
            bad = next((o for o in (before, after) if not isinstance(o, RunResult)), None)
            if bad is not None:
                rows.append({**row, "error": str(bad)})
                continue
            chosen = after.extras.get("tuned_on_release", [])
            values = getattr(after, metric)
            s, s0 = summarize(values, metric=metric), summarize(getattr(before, metric), metric=metric)
            row.update({f"test_{metric}": s["mean"], f"test_{metric}_std": s["std"],
                        f"untuned_test_{metric}": s0["mean"], f"untuned_test_{metric}_std": s0["std"],
                        f"{metric}_nonprivate": getattr(after, f"{metric}_nonprivate"),
                        f"{metric}_guess": full.guessing,
                        "epsilon_certified": after.epsilon_certified, "epsilon_spent": after.epsilon_certified,
                        "delta_spent": delta, "repeats": repeats,
                        "guess_chosen": int(after.extras.get("guess_chosen", 0)),
                        "chosen": [setting_text(c) if isinstance(c, dict) else c for c in chosen]})
            rows.append(row)
    return rows


def with_setting(spec: RunSpec, setting: dict[str, Any]) -> RunSpec:
    """``spec`` with a tuned setting applied: RunSpec fields replaced, mechanism options (such as
    ``tune_on_release``) added to the options given (an option given explicitly wins)."""
    names = {f.name for f in fields(RunSpec)}
    opts = {k: v for k, v in setting.items() if k not in names}
    spec = replace(spec, **{k: v for k, v in setting.items() if k in names})
    return replace(spec, options=tuple(sorted({**opts, **dict(spec.options)}.items()))) if opts else spec


def setting_text(setting: dict[str, Any]) -> str:
    """A tuned setting in words: ``T = 200, η = 1`` or "chosen on the released records"."""
    names = {"iterations": "T", "learning_rate": "η", "lam": "λ", "clip_norm": "C", "sample_rate": "q"}
    parts = []
    for k, v in setting.items():
        if k == "tune_on_release":
            parts.append("training settings chosen on each release's own records (free)" if v else "untuned")
        elif isinstance(v, bool):
            parts.append(f"{k} = {v}")
        else:
            parts.append(f"{names.get(k, k)} = {v:g}")
    return ", ".join(parts)


def _choice_rng(seed: int, mechanism: str, epsilon: float) -> np.random.Generator:
    """The private choice's generator for one (mechanism, ε): keyed by their values, not their
    places in the lists, so adding a mechanism or an ε never changes another's choice."""
    return np.random.default_rng([seed, streams.TUNE_SELECT, *_search_key(mechanism, epsilon)])


def _search_key(mechanism: str, epsilon: float) -> tuple[int, int]:
    return zlib.crc32(mechanism.encode()), int(round(epsilon * 1e9)) % 2**32


def _stream(kind: int, mechanism: str, epsilon: float, *more: int) -> tuple[int, ...]:
    """A release's own random stream within a tuning (``RunSpec.stream``): candidate k's, or the
    final run's, of the search for (mechanism, ε).  The candidates and the final run compose
    as independent releases only if their noise is independent."""
    return (kind, *_search_key(mechanism, epsilon), *more)


def choose(scores, epsilon: float, rng: np.random.Generator) -> int:
    """The exponential mechanism over candidates whose ``scores`` change by at most 1 when one
    record is replaced: index k with probability ∝ exp(ε·score_k / 2), which is ε-DP
    (McSherry & Talwar 2007; Dwork & Roth 2014, Thm 3.10).  Sampled by the Gumbel-max trick:
    the argmax of ε·score/2 plus independent standard Gumbel noise has exactly that law."""
    scores = np.asarray(scores, dtype=float)
    return int(np.argmax(epsilon * scores / 2.0 + rng.gumbel(size=scores.shape)))


def epsilon_for_accuracy(rows: Sequence[dict[str, Any]], target: float) -> list[dict[str, Any]]:
    """Per mechanism, the smallest tuned ε whose test accuracy (mean of the final runs)
    reaches ``target``; ``None`` when no ε of the grid does.  ``rows``: a
    :class:`TuneResult`'s (or its record's)."""
    out = []
    for mech in dict.fromkeys(r["mechanism"] for r in rows):
        mine = sorted((r for r in rows if r["mechanism"] == mech and "test_accuracy" in r),
                      key=lambda r: r["epsilon"])
        hit = next((r for r in mine if r["test_accuracy"] >= target), None)
        out.append({"mechanism": mech, "target_accuracy": target,
                    "epsilon": None if hit is None else hit["epsilon"],
                    "epsilon_spent": None if hit is None else hit["epsilon_spent"],
                    "test_accuracy": None if hit is None else hit["test_accuracy"],
                    "best_accuracy": max((r["test_accuracy"] for r in mine), default=None)})
    return out


def _tuned_path(dataset: str, model: str, data_dir=None) -> Path:
    return shipped.folder_of("tuned", data_dir) / f"{dataset}-{model}.json"


#: a tuning row's numbers: (low, high); ``None`` stands for an infinite ε
_ROW_RANGES = {"validation_accuracy": (0.0, 1.0), "best_validation_accuracy": (0.0, 1.0),
               "test_accuracy": (0.0, 1.0), "test_accuracy_std": (0.0, 1.0), "untuned_test_accuracy": (0.0, 1.0),
               "untuned_test_accuracy_std": (0.0, 1.0), "accuracy_nonprivate": (0.0, 1.0),
               "accuracy_guess": (0.0, 1.0), "epsilon": (0.0, math.inf), "epsilon_certified": (0.0, math.inf),
               "epsilon_spent": (0.0, math.inf), "selection_epsilon": (0.0, math.inf), "delta_spent": (0.0, 1.0),
               "candidates": (1, math.inf), "repeats": (1, math.inf), "guess_chosen": (0, math.inf)}


def _check_numbers(row: dict, where: str) -> None:
    for name, (low, high) in _ROW_RANGES.items():
        v = row.get(name)
        if v is None and name.startswith("epsilon_"):
            continue  # no guarantee (∞)
        if name not in row and name not in ("epsilon", "epsilon_certified", "epsilon_spent"):
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not low <= v <= high or math.isnan(v):
            raise ValueError(f"{where}: {name} = {v!r} is not a number in [{low:g}, {high:g}]")


def check_tuning(doc: Any, dataset: str, model: str, *, spent: bool = True) -> dict[str, Any]:
    """``doc`` if it is a tuning record of ``dataset`` and ``model`` as :func:`tune` writes it: each
    row's setting holds exactly the fields its mechanism's search declares (:func:`search_space`), at
    values of its grid (a released row: ``tune_on_release`` only), every number of its type and range
    (accuracies in [0, 1], ε ≥ 0, the search's ε at least the final run's), and every certified ε the
    one this code certifies for the row's setting (:func:`~dpcore.privacy.core.same_certificate`).

    ε spent and δ spent are recomputed too (issue 67: a record whose ε spent was edited to its certified
    ε × 1.000123 was shown 16× cheaper than its search): a searched row's candidates must be its
    mechanism's whole grid, each once, the chosen one its setting, each certified as this code certifies
    it on the validation split; its ε spent is then what :func:`search_spent` certifies for them, run
    as the record's ``search`` says (``repeats``, ``final_repeats``, ``validation_fraction``, ``seed``,
    ``selection_epsilon``), within the accountant's error, and its δ spent within 1e-12; a released
    row spends exactly its certified ε at the target δ.  What is not recomputed (it takes training):
    the accuracies, which only the manifest's hash protects.
    ``spent=False``: all but that recomputation (:func:`~dpcore.experiments.search.check_tuning_spent`), what a reader of the settings
    needs (:func:`shipped_tuning`; the recomputation takes about 45 s of CPU, the rest about 2).
    Raises ``ValueError`` saying what is wrong, in one line."""
    if not isinstance(doc, dict):
        raise ValueError("not a tuning record")
    if doc.get("dataset") != dataset or doc.get("model") != model:
        raise ValueError(f"a tuning of {doc.get('dataset')!r} ({doc.get('model')!r}), not of {dataset} ({model})")
    delta = doc.get("delta")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise ValueError(f"δ = {delta!r} is not in (0, 1)")
    for part in ("rows", "released_rows", "candidates", "errors"):
        if not isinstance(doc.get(part, []), list) or not all(isinstance(r, dict) for r in doc.get(part, [])):
            raise ValueError(f"{part} is not a list of rows")
    for kind in ("rows", "released_rows"):
        for row in doc.get(kind, []):
            if "error" in row:
                if not isinstance(row["error"], str):
                    raise ValueError("an error that is not text")
                continue
            mech = row.get("mechanism")
            where = f"{mech} at ε = {row.get('epsilon')!r}"
            if mech not in REGISTRY:
                raise ValueError(f"unknown mechanism {mech!r}")
            _check_numbers(row, where)
            setting = row.get("setting")
            if not isinstance(setting, dict):
                raise ValueError(f"{where}: no setting")
            if kind == "released_rows":
                if setting != {"tune_on_release": True} or not released_tunable(mech):
                    raise ValueError(f"{where}: a released row's setting is tune_on_release only")
            else:
                space = search_space(mech, model)
                if set(setting) != set(space):
                    raise ValueError(f"{where}: its setting sets {sorted(setting)}, the search declares {sorted(space)}")
                for k, v in setting.items():
                    if isinstance(v, bool) or v not in space[k]:
                        raise ValueError(f"{where}: {k} = {v!r} is not among the values searched")
            certified, paid = row.get("epsilon_certified"), row.get("epsilon_spent")
            if (math.inf if paid is None else paid) < (math.inf if certified is None else certified) \
                    - CLOSED_FORM_TOL * (1 + (certified or 0.0)):
                raise ValueError(f"{where}: the search spent less than its final run certifies")
    for c in doc.get("candidates", []):
        _check_numbers({k: c[k] for k in ("validation_accuracy", "epsilon_certified") if k in c}
                       | {"epsilon": c.get("epsilon"), "epsilon_certified": c.get("epsilon_certified"),
                          "epsilon_spent": None}, f"a candidate of {c.get('mechanism')}")
    # one read: a plan its rows' certificates and its searches both need is computed once (the final run
    # of a row's setting is one its search composes)
    with searches.one_read():
        for row in doc.get("rows", []) + doc.get("released_rows", []):
            if "error" not in row:
                _check_row_certificate(doc, row)
        if spent:
            searches.check_tuning_spent(doc, dataset, model)
    return doc


def tuned_spec(doc: dict[str, Any], row: dict[str, Any]) -> RunSpec:
    """The final run a tuning row describes, whose certificate :func:`check_tuning` recomputes."""
    return with_setting(RunSpec(dataset=doc["dataset"], model=doc["model"], mechanism=row["mechanism"],
                                epsilon=float(row["epsilon"]), delta=float(doc["delta"])), row["setting"])


# pure: a setting's certified ε, from the specification alone
@functools.lru_cache(maxsize=4096)
def _certified_for(spec: RunSpec) -> tuple[float, float]:
    """The certified ε of a tuned setting's final run and the accountant's error on it."""
    plan = searches.plan_of(spec)  # the read's, when one is under way (check_tuning)
    return certify(plan, spec.delta), certificate_error(plan, spec.delta)


def _check_row_certificate(doc: dict[str, Any], row: dict[str, Any]) -> None:
    try:
        spec = tuned_spec(doc, row)
        certified, error = _certified_for(spec)
    except (DPCoreError, TypeError, NotImplementedError) as exc:
        raise ValueError(f"{row['mechanism']} at ε = {row['epsilon']!r}: its setting is not one this code runs "
                         f"({exc})") from None
    if not same_certificate(row.get("epsilon_certified"), certified, error):
        raise ValueError(f"{row['mechanism']} at ε = {row['epsilon']!r}: certified ε {row.get('epsilon_certified')!r}, "
                         f"but its setting's noise certifies {certified!r}")


#: a row's figures only :func:`check_tuning_spent` vouches for: left out of a read of the settings
SPENT_FIELDS = ("epsilon_spent", "delta_spent")


def _verified(rel: str, data: Path, what: str, check) -> None:
    """``check()`` once per content and code (:func:`~dpcore.verified.verified`: a mark of the file's
    content, of this code and of ``what`` is checked, ``"read"``: the settings and certificates, ``"spent:
    …"``: what a search spent); a refusal is :class:`~dpcore.shipped.ShippedFileError`, one line."""
    mark = "\0".join([what, shipped.digest(rel, data), results_fingerprint(), _this_code(), repr(CLOSED_FORM_TOL)])
    verified.verified(mark, check, lambda why: shipped.ShippedFileError(
        f"the shipped {rel} is refused: {why}; compute it again with `{shipped.KINDS['tuned'].made_by}`"))


# pure: a digest of this code's source
@functools.cache
def _this_code() -> str:
    """The source of what checks a tuning (this module, :mod:`dpcore.experiments.search` and
    :mod:`dpcore.verified`), which :func:`~dpcore.experiments.sweep.results_fingerprint` leaves out."""
    return hashlib.sha256(b"".join(Path(m.__file__).read_bytes() for m in (searches, verified))
                          + Path(__file__).read_bytes()).hexdigest()


# pure: a shipped file's reading, keyed by its folder and its stamp (size, time, digest)
@functools.lru_cache(maxsize=16)
def _read_tuned(dataset: str, model: str, folder: str, stamp: str
                ) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(the whole record, the record without its spent figures), its settings and certificates checked
    (``check_tuning(..., spent=False)``), or ``None`` when none is shipped.  Its ε spent and δ spent are
    not recomputed here (about 45 s of CPU on Adult: 587 distinct calibrations, the PLD of every DP-SGD
    search): :func:`_read_spent` does, for the readers who show them."""
    rel = f"tuned/{dataset}-{model}.json"
    data = Path(folder).parent
    doc = shipped.read_json(rel, data)
    if doc is None:
        return None
    _verified(rel, data, "read", lambda: check_tuning(doc, dataset, model, spent=False))
    settings = {k: ([{f: v for f, v in r.items() if f not in SPENT_FIELDS} if isinstance(r, dict) else r
                     for r in doc[k]] if k in ("rows", "released_rows") and isinstance(doc[k], list) else doc[k])
                for k in doc}
    return doc, settings


# pure: a shipped file's reading, keyed by its folder and its stamp (size, time, digest)
@functools.lru_cache(maxsize=64)
def _read_spent(dataset: str, model: str, folder: str, stamp: str, keys: frozenset | None
                ) -> dict[str, Any] | None:
    """The whole record, the ε spent and δ spent of its rows ``keys`` ((mechanism, ε) pairs; ``None``:
    every row) recomputed from their searches and found as written
    (:func:`~dpcore.experiments.search.check_tuning_spent`; each row once per content and code: its mark in the
    cache folder, so a second process does not pay again), the other rows without spent figures; or
    ``None`` when none is shipped."""
    read = _read_tuned(dataset, model, folder, stamp)
    if read is None:
        return None
    doc, settings = read
    searched = [(r.get("mechanism"), r.get("epsilon")) for r in doc.get("rows", []) if isinstance(r, dict)]
    wanted = searched if keys is None else [k for k in searched if k in keys]
    rel, data = f"tuned/{dataset}-{model}.json", Path(folder).parent
    with searches.one_read():  # the rows' searches share their plans
        _verified(rel, data, "spent: the released rows",
                  lambda: searches.check_tuning_spent({**doc, "rows": [], "candidates": []}, dataset, model))
        for key in wanted:
            _verified(rel, data, f"spent: {key[0]} at {key[1]!r}",
                      lambda key=key: searches.check_tuning_spent(doc, dataset, model, only={key}))
    chosen = set(wanted)
    return {**doc, "rows": [r if (r.get("mechanism"), r.get("epsilon")) in chosen else s
                            for r, s in zip(doc.get("rows", []), settings.get("rows", []))]}


def shipped_tuning(dataset: str, model: str = "logreg", *, data_dir=None, spent=False,
                   progress: Callable[[int, int], None] | None = None) -> dict[str, Any] | None:
    """The shipped tuning record of a dataset and model (:meth:`TuneResult.to_dict` plus its
    provenance), or ``None`` when none is shipped; read by :mod:`dpcore.shipped`'s rule and
    :func:`check_tuning`, :class:`~dpcore.shipped.ShippedFileError` (one line) when it is not what
    was shipped or its certificates are not this code's.  ``data_dir``: the data folder (a context's
    :attr:`~dpcore.experiments.context.Context.data_dir`; default :func:`dpcore.datasets.data_folder`).

    ``spent``: what each search spent (its rows' ``epsilon_spent`` and ``delta_spent``, :data:`SPENT_FIELDS`),
    recomputed from the searches and refused when the file says otherwise (:func:`~dpcore.experiments.search.check_tuning_spent`; about
    45 s the first time this machine reads the whole file, then marked in the cache folder row by row); a
    collection of (mechanism, ε) pairs: those rows' only (0.1–8 s each), the others without spent figures;
    ``progress(done, total)`` hears each searched row as it is recomputed.  Without it the rows
    hold no spent figures and nothing of the searches' cost is computed: the settings, accuracies and
    certificates only (Explore, ``run --tuned``).  Every reader of a spent figure asks for it here."""
    path = _tuned_path(dataset, model, data_dir)
    try:
        st = path.stat()
        stamp = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
    except OSError:
        if not os.path.lexists(path):
            return None
        stamp = "unreadable"
    if spent is not False:
        keys = None if spent is True else frozenset((str(m), float(e)) for m, e in spent)
        if progress is not None:  # row by row, each said as it is done (each marked as it is checked)
            read = _read_tuned(dataset, model, str(path.parent), stamp)
            rows = [] if read is None else [(r.get("mechanism"), r.get("epsilon")) for r in read[0].get("rows", [])
                                            if isinstance(r, dict)]
            rows = [k for k in rows if keys is None or k in keys]
            for done, key in enumerate(rows):
                progress(done, len(rows))
                _read_spent(dataset, model, str(path.parent), stamp, frozenset([key]))
            progress(len(rows), len(rows))
        return _read_spent(dataset, model, str(path.parent), stamp, keys)
    read = _read_tuned(dataset, model, str(path.parent), stamp)
    return None if read is None else read[1]


def tuned_row(dataset: str, model: str, mechanism: str, epsilon: float, *, data_dir=None,
              spent: bool = False) -> dict[str, Any] | None:
    """The shipped tuning's row of ``mechanism`` at the tuned ε closest to ``epsilon`` (on a
    log scale): its setting, its ε and, with ``spent`` (:func:`shipped_tuning`), what its search spent;
    ``None`` when nothing was tuned."""
    record = shipped_tuning(dataset, model, data_dir=data_dir)
    if record is None:
        return None
    rows = [r for r in record.get("rows", []) + record.get("released_rows", [])
            if r.get("mechanism") == mechanism and "setting" in r and "error" not in r]
    if not rows:
        return None
    found = min(rows, key=lambda r: abs(math.log(r["epsilon"]) - math.log(epsilon)))
    if not spent:
        return found
    record = shipped_tuning(dataset, model, data_dir=data_dir, spent=[(mechanism, found["epsilon"])])
    return next(r for r in record.get("rows", []) + record.get("released_rows", [])
                if r.get("mechanism") == mechanism and r.get("epsilon") == found["epsilon"] and "error" not in r)


def tuned_setting(dataset: str, model: str, mechanism: str, epsilon: float, *,
                  data_dir=None) -> tuple[dict[str, Any], float] | None:
    """The shipped tuned setting of ``mechanism`` at the tuned ε closest to ``epsilon`` (on a
    log scale), with that ε; ``None`` when nothing was tuned for it.

    >>> setting, tuned_at = tuned_setting("adult", "logreg", "gradient-dpgd", 1.0)
    >>> setting["iterations"], setting["clip_norm"], tuned_at
    (800, 0.5, 1.0)
    """
    row = tuned_row(dataset, model, mechanism, epsilon, data_dir=data_dir)
    return None if row is None else (dict(row["setting"]), float(row["epsilon"]))
