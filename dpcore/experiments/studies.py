"""Studies: small functions that generate a grid of specs, run it, and shape the table.

Each study builds :class:`~dpcore.experiments.run.RunSpec` objects, hands
them to :func:`~dpcore.experiments.grid.run_grid` in one call, and turns the
tidy table into the rows its view shows:

* :func:`epsilon_sweep`: mechanisms × ε (the Compare view);
* :func:`tradeoff`: every mechanism at one central ε, with its local ε, and input perturbation's accuracy against the local ε it buys (Local vs central);
* :func:`skew_curve`: WD-DP, averaging and central DP-GD against the
  client-size skew u (the Distributed view; seed 004's Figs 1–2);
* :func:`compare_measured`: measured optimality gaps beside the bounds catalog's predictions, over n or ε (the Theory view; it only reads the catalog).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .. import erm, shipped
from ..exceptions import DPCoreError, ParameterError, moved_attributes
from ..metrics import within
from ..jsonutil import write_atomic
from ..privacy.core import certificate_error, certify, same_certificate
from ..mechanisms import REGISTRY, get_mechanism
from ..params import validate
from ..figures.result import sampling_of
from ..theory.catalog import CATALOG, BoundRow, loglog_slope, predictions, scaling_plan
from .baselines import LAMBDA_GRID, baseline
from .context import Context
from .grid import run_grid, summaries
from .ahead import SpentAhead, kernels_ahead
from .tune import shipped_tuning, tuned_row, tuned_spec, with_setting
from .presets import PRESETS, shipped_results
from .search import plan_searches
from .run import RunSpec, load_problem, noise_plan, problem_data
from .sweep import environment, task_key

_LOG = logging.getLogger(__name__)

__all__ = ["epsilon_sweep", "tradeoff", "skew_curve", "compare_measured", "DEFAULT_NOISE_GRID",
           "CHEAP_MECHANISMS", "CENTRAL_MECHANISMS", "CLASSROOM_COMPARE", "compare_base", "classroom_compare",
           "classroom_file", "classroom_keys", "with_search_spent", "ship_classroom_compare", "shipped_classroom_compare", "check_classroom_rows", "PREPARE_REFERENCES",
           "SHIPPED_REFERENCE_PAIRS", "SHIPPED_REFERENCE_GRIDS", "shipped_reference_specs", "ship_references", "ship_calibrations",
           "prepare_for_class", "class_parts"]

DEFAULT_NOISE_GRID = tuple(float(s) for s in np.geomspace(0.05, 20.0, 9))
#: the central mechanisms (output, objective and gradient perturbation), in registry order
CENTRAL_MECHANISMS = tuple(m for m, c in REGISTRY.items() if c.family in ("output", "objective", "gradient"))
#: the Compare view's first preset ("All central mechanisms, Adult"), which ``dpcore prepare``
#: computes ahead into the app's result cache (the same specs, so the same keys)
CLASSROOM_COMPARE = dict(dataset="adult", model="logreg", mechanisms=CENTRAL_MECHANISMS,
                         epsilons=(0.01, 0.03, 0.1, 0.25, 0.5, 1.0, 3.0, 10.0), iterations=100, delta=1e-5,
                         repeats=5, lam=1e-3, calibration="certified", tuned=True)


def compare_base(dataset: str, model: str, *, delta: float, iterations: int, repeats: int, calibration: str,
                 lam: float, clients: int = 4, skew: float = 4.0, **data_options) -> RunSpec:
    """The Compare view's base specification (every row is it with a mechanism, an ε and, where
    tuned, its tuned fields): one function for the view and ``dpcore prepare``."""
    return RunSpec(dataset=dataset, model=model, delta=delta, iterations=iterations, repeats=repeats,
                   calibration=calibration, clients=clients, skew=skew, lam=lam, **data_options)


def _classroom_base() -> RunSpec:
    """:data:`CLASSROOM_COMPARE`'s base specification (:func:`compare_base`)."""
    c = CLASSROOM_COMPARE
    return compare_base(c["dataset"], c["model"], delta=c["delta"], iterations=c["iterations"],
                        repeats=c["repeats"], calibration=c["calibration"], lam=c["lam"])


def classroom_compare(ctx: Context | None = None, mechanisms: Sequence[str] | None = None,
                      epsilons: Sequence[float] | None = None) -> list[dict]:
    """:data:`CLASSROOM_COMPARE` through :func:`epsilon_sweep`, as the Compare view runs it
    (``mechanisms``, ``epsilons``: a part of it, row for row the whole's), without what the tuned
    settings' searches spent (the view asks :func:`with_search_spent` after drawing)."""
    c = CLASSROOM_COMPARE
    return epsilon_sweep(_classroom_base(), list(mechanisms or c["mechanisms"]), list(epsilons or c["epsilons"]), ctx,
                         tuned=c["tuned"], spent=False)


#: what :func:`prepare_for_class` solves ahead: (dataset, model) of the views' defaults and the lesson
PREPARE_REFERENCES = (("breast-cancer", "logreg"), ("adult", "logreg"), ("iris", "logreg"), ("adult", "mlp"))
#: the shipped tunings whose searches' cost :func:`prepare_for_class` recomputes ahead (Compare's first preset's)
PREPARE_TUNINGS = (("adult", "logreg"),)


def class_parts(ctx: Context, *, mlp: bool = True, then=()) -> list[tuple[str, Callable[[], str]]]:
    """:func:`prepare_for_class`'s parts, in order and named before any runs: ``(what, compute)``,
    ``compute()`` saying what it did (a part that found its work shipped says so); ``then``: more parts,
    run before the tunings' spent figures are read (their second process meanwhile)."""
    def reference(dataset: str, model: str) -> str:
        load_problem(RunSpec(dataset=dataset, model=model), ctx=ctx)
        if model != "mlp":  # and the λ grid every view's non-private line searches (its references stored)
            baseline(RunSpec(dataset=dataset, model=model), lams=(), ctx=ctx)
        return f"exact reference{'' if model == 'mlp' else 's over the λ grid'}, {dataset} ({model})"

    def classroom() -> str:
        shipped_rows = shipped_classroom_compare(ctx=ctx)
        if shipped_rows is not None:  # verified, not recomputed: its task keys are this code's (the cache's rule)
            return (f"Compare's first preset ({len(shipped_rows[0])} configurations): shipped with the app for "
                    "this code, its rows and their certificates checked")
        return f"Compare's first preset ({len(classroom_compare(ctx))} configurations), computed"

    # the compiled kernels, and what each shipped search spent (which Compare and Tune show: read last), started first
    ahead = SpentAhead(ctx.data_dir, PREPARE_TUNINGS)
    parts = [("the compiled kernels: compiled in a second process", kernels_ahead().start)] + (
        [("what the shipped tuning's searches spent: started in a second process", ahead.start)] if PREPARE_TUNINGS else [])
    parts += [(f"exact reference{'' if m == 'mlp' else 's over the λ grid'}, {d} ({m})", functools.partial(reference, d, m))
              for d, m in PREPARE_REFERENCES if mlp or m != "mlp"] + [("Compare's first preset", classroom), *then]
    parts += [(f"what the shipped tuning's searches spent, {d} ({m})", functools.partial(ahead.read, d, m))
              for d, m in PREPARE_TUNINGS]
    return parts


def prepare_for_class(ctx: Context, *, mlp: bool = True,
                      tell: Callable[[str, float], None] | None = None) -> list[dict[str, Any]]:
    """Compute ahead, into ``ctx``'s stores, what a class opens first (:func:`class_parts`): the exact
    references of the views' defaults (the MLP's on Adult, a minute or more on a fresh machine unless
    shipped, or skipped when ``mlp`` is False), Compare's first preset (unless its shipped rows are this
    code's, which the view shows at once) and what the shipped tuning's searches spent (:data:`PREPARE_TUNINGS`),
    so the first clicks answer at once.  ``tell(what, seconds)`` hears each part as it is done; returns the
    same as a list of {what, seconds}.  (The command line's ``prepare``; the Start view runs the parts
    with the lesson's, :func:`dpcore.lesson.prepare_parts`.)"""
    done: list[dict[str, Any]] = []
    for _, compute in class_parts(ctx, mlp=mlp):
        t0 = time.time()
        what = compute()
        done.append({"what": what, "seconds": round(time.time() - t0, 1)})
        if tell is not None:
            tell(what, done[-1]["seconds"])
    return done


def classroom_file(data_dir=None) -> Path:
    """Where the data folder ``data_dir`` (default :func:`dpcore.datasets.data_folder`) holds the Compare
    view's first preset, computed ahead and shipped (``python -m dpcore prepare --ship``): the preset
    opens at once on a new machine, before anything is computed or cached there.

    >>> classroom_file("/srv/class/data").as_posix()
    '/srv/class/data/results/compare-classroom.json'
    """
    return shipped.folder_of("results", data_dir) / "compare-classroom.json"


#: ``CLASSROOM_FILE``, a module attribute in 0.1.0, still reads for one release, with a warning
__getattr__ = moved_attributes(__name__, {"CLASSROOM_FILE": ("dpcore.experiments.studies.classroom_file()",
                                                             classroom_file)})


def classroom_keys(data_dir=None) -> list[str]:
    """The task keys of :data:`CLASSROOM_COMPARE`'s runs (:func:`~dpcore.experiments.sweep.task_key`:
    each spec and the code that computes it), which the shipped file must carry to be shown: the
    one rule by which the results cache reads its entries, so a changed mechanism, accountant or
    tuned setting never shows old shipped rows.  ``data_dir``: the data folder whose tunings set the
    runs (default :func:`dpcore.datasets.data_folder`)."""
    c = CLASSROOM_COMPARE
    base = compare_base(c["dataset"], c["model"], delta=c["delta"], iterations=c["iterations"],
                        repeats=c["repeats"], calibration=c["calibration"], lam=c["lam"])
    _, specs, _ = _sweep_plan(base, list(c["mechanisms"]), list(c["epsilons"]), None, None, c["tuned"],
                              data_dir)
    return [task_key(spec) for spec in specs]


def _setting_record() -> dict[str, Any]:
    return json.loads(json.dumps(CLASSROOM_COMPARE))  # tuples as lists, as the file holds them


def ship_classroom_compare(ctx: Context | None = None, path: Path | None = None) -> dict[str, Any]:
    """Compute :data:`CLASSROOM_COMPARE` and write its rows with their provenance to ``path`` (default:
    :func:`classroom_file` of the context's data folder)."""
    data_dir = None if ctx is None else ctx.data_dir
    path = classroom_file(data_dir) if path is None else Path(path)
    started = time.time()
    rows = classroom_compare(ctx)
    record = {"setting": _setting_record(), "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(started)),
              "wall_seconds": round(time.time() - started, 1), "workers": 1 if ctx is None else ctx.n_workers,
              "environment": environment(), "command": "python -m dpcore prepare --ship",
              "keys": classroom_keys(data_dir)}
    write_atomic(Path(path), {"record": record, "rows": rows})
    shipped.record([path], data_dir)  # the manifest lists it (when it is the data folder's)
    return record


#: the exact references shipped in the data folder's ``references/`` (``prepare --ship``): the
#: slow ones of :data:`PREPARE_REFERENCES`, whose solve takes minutes on a new machine
SHIPPED_REFERENCE_PAIRS = tuple(pair for pair in PREPARE_REFERENCES if pair[1] == "mlp")
#: (dataset, model) pairs whose exact references ship at every λ of
#: :data:`~dpcore.experiments.baselines.LAMBDA_GRID`: the λ's Compare's tuned settings use (Adult's
#: five references, half a second of Newton each, were a new machine's first Compare's first wait)
SHIPPED_REFERENCE_GRIDS = (("adult", "logreg"),)


def shipped_reference_specs() -> list[RunSpec]:
    """The configurations whose exact references ship (:func:`ship_references`): each pair of
    :data:`SHIPPED_REFERENCE_PAIRS` at its model's default λ, each of :data:`SHIPPED_REFERENCE_GRIDS`
    at every λ of the grid."""
    return [RunSpec(dataset=d, model=m) for d, m in SHIPPED_REFERENCE_PAIRS] + [
        RunSpec(dataset=d, model=m, lam=lam) for d, m in SHIPPED_REFERENCE_GRIDS for lam in LAMBDA_GRID]


def ship_references(progress=None, folder: Path | None = None, *, mlp: bool = True) -> list[dict[str, Any]]:
    """Solve (or find, when current) the exact references of :func:`shipped_reference_specs` into
    ``folder`` (default: the data folder's ``references/``, :func:`dpcore.shipped.folder_of`), and remove
    the files of earlier code there (their keys include the solver's and the models' source).  ``mlp=False``
    (``prepare --ship --no-mlp``) leaves the MLP's references unsolved: a current file is kept, a stale one removed."""
    folder = shipped.folder_of("references") if folder is None else Path(folder)
    store, keep, done = erm.ReferenceStore(folder), set(), []
    for spec in shipped_reference_specs():
        started = time.time()
        data, m = problem_data(spec)
        if m.id == "mlp" and not mlp:
            keep.add(store.path(data, m).name)  # its key, computed without a solve
            continue
        sol = store.exact(data, m, progress=progress)
        path = store.path(data, m)
        if not path.exists():
            raise ParameterError(f"the {m.id} reference on {spec.dataset} (λ = {m.lam:g}) ended with a gradient "
                                 f"norm of {sol.grad_norm:.3g}, too large to ship: it would not be read back")
        keep.add(path.name)
        done.append({"what": f"exact reference, {spec.dataset} ({m.id}, λ = {m.lam:g}), shipped in {folder}",
                     "seconds": round(time.time() - started, 1)})
    _ship_only(folder, "erm-", keep)
    return done


def _ship_only(folder: Path, prefix: str, names: set[str]) -> set[str]:
    """List in the manifest the files ``names`` of ``folder`` that exist; remove its other ``prefix*.json``
    files (an earlier code's) from it and the manifest, and its lock files; returns the names listed."""
    with contextlib.suppress(OSError):
        shutil.rmtree(folder / ".locks")  # the store that wrote the files locked them: nothing ships those
    keep = {name for name in names if (folder / name).exists()}
    gone = []
    for old in folder.glob(f"{prefix}*.json"):
        if old.name not in keep:
            old.unlink()
            gone.append(f"{folder.name}/{old.name}")
    shipped.record([folder / name for name in sorted(keep)], folder.parent, remove=gone)
    return keep


def ship_calibrations(folder: Path | None = None) -> dict[str, Any]:
    """Calibrate every sampled Gaussian a reader of the shipped files would search for (0.2–0.8 s of PLD
    search each): Compare's classroom preset (tuned, as the view opens, and untuned), the shipped
    tunings' rows and their searches' candidates (whose certificates and ε spent a reader recomputes:
    :func:`~dpcore.experiments.search.plan_searches`) and the paper figures' shipped results; into ``folder``
    (default: the data folder's ``calibrations/``), listed in the manifest, the files of earlier code
    there removed (their keys hash the accountant's source).  A reader re-certifies each file it reads
    (two PLD evaluations), so a new machine checks these multipliers instead of searching for them."""
    folder = shipped.folder_of("calibrations") if folder is None else Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    started = time.time()
    ctx = Context(erm_dir=folder, workers=1, data_dir=folder.parent)  # its table writes into ``folder``
    c = CLASSROOM_COMPARE
    specs = [spec for tuned in (True, False) for spec in
             _sweep_plan(_classroom_base(), c["mechanisms"], c["epsilons"], None, None, tuned, folder.parent)[1]]
    for path in sorted(shipped.folder_of("tuned", folder.parent).glob("*.json")):  # what reading a tuning re-certifies
        doc = shipped.read_json(f"tuned/{path.name}", folder.parent)
        with contextlib.suppress(DPCoreError, TypeError, KeyError, ValueError):  # the check refuses those
            plan_searches(doc, doc["dataset"], path.stem.rsplit("-", 1)[1], ctx)
            specs += [tuned_spec(doc, row) for row in doc.get("rows", []) + doc.get("released_rows", [])
                      if "error" not in row]
    for spec in specs:
        with contextlib.suppress(DPCoreError):  # a refused configuration calibrates nothing (its row says why)
            noise_plan(spec, ctx)
    for preset in PRESETS:  # a file refused (ShippedFileError) is the view's to explain
        with contextlib.suppress(DPCoreError, ValueError):
            shipped_results(preset, ctx=ctx)
    keep = _ship_only(folder, "calibration-", {f"calibration-{key}.json" for key in ctx.store.calibrations.asked})
    return {"what": f"{len(keep)} noise calibrations of the shipped files' readers, shipped in {folder}",
            "seconds": round(time.time() - started, 1)}


def shipped_classroom_compare(path: Path | None = None, *, ctx: Context | None = None
                              ) -> tuple[list[dict], str] | None:
    """The shipped rows of :data:`CLASSROOM_COMPARE` and one sentence of provenance, or ``None`` (the
    view then computes them, with progress) when the file is missing, is not the one shipped
    (:mod:`dpcore.shipped`'s rule: logged), was computed for another definition of the preset or by
    other code (its task keys are not :func:`classroom_keys`), or holds a number out of its range or a
    certificate this code does not recompute (:func:`check_classroom_rows`).  ``path``: default
    :func:`classroom_file` of ``ctx``'s data folder."""
    data_dir = None if ctx is None else ctx.data_dir
    path = classroom_file(data_dir) if path is None else Path(path)
    try:
        doc = shipped.read_json(f"{path.parent.name}/{path.name}", path.parent.parent)
        if doc is None:
            return None
        record, rows = doc["record"], doc["rows"]
        if record["setting"] != _setting_record() or not isinstance(rows, list) or not rows:
            return None
        if record.get("keys") != classroom_keys(data_dir):  # computed by other code, or for other runs
            _LOG.info("the shipped %s is for other code (run `python -m dpcore prepare --ship`)", path.name)
            return None
        check_classroom_rows(rows, data_dir)
        env = record.get("environment", {})
        note = (f"computed ahead and shipped with the app ({len(rows)} configurations, "
                f"{record.get('started', '?')[:10]}, dpcore {env.get('dpcore', '?')} at "
                f"{(env.get('git_commit') or 'an unrecorded commit')[:12]}: `{record.get('command')}`)")
        return rows, note
    except shipped.ShippedFileError as exc:
        _LOG.warning("%s; computing Compare's first preset instead", exc)
        return None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        _LOG.warning("the shipped %s is refused (%s); computing Compare's first preset instead", path.name, exc)
        return None


#: a classroom row's numbers and their ranges (``None``: absent, or an infinite ε)
_CLASSROOM_RANGES = {"epsilon": (0.0, math.inf), "tuned_at": (0.0, math.inf), "epsilon_certified": (0.0, math.inf),
                     "epsilon_local": (0.0, math.inf), "sigma": (0.0, math.inf), "seconds": (0.0, math.inf),
                     "accuracy_nonprivate": (0.0, 1.0), "accuracy_guess": (0.0, 1.0), "accuracy_mean": (0.0, 1.0),
                     "accuracy_std": (0.0, 1.0), "rmse_nonprivate": (0.0, math.inf), "rmse_guess": (0.0, math.inf),
                     "gap_mean": (-math.inf, math.inf), "gap_std": (0.0, math.inf)}


def check_classroom_rows(rows: list[dict], data_dir=None) -> None:
    """Raise ``ValueError`` unless ``rows`` are :data:`CLASSROOM_COMPARE`'s, row for row (mechanism, ε and calibration of
    its specs), every number of its type and range (accuracies in [0, 1], an interval around its mean), and every certified
    ε the one this code certifies for its spec; each DP-SGD row gets the sampling its spec runs with (shown)."""
    c = CLASSROOM_COMPARE
    base = compare_base(c["dataset"], c["model"], delta=c["delta"], iterations=c["iterations"],
                        repeats=c["repeats"], calibration=c["calibration"], lam=c["lam"])
    planned, specs, where = _sweep_plan(base, list(c["mechanisms"]), list(c["epsilons"]), None, None, c["tuned"],
                                        data_dir)
    if len(rows) != len(planned):
        raise ValueError(f"{len(rows)} rows for the preset's {len(planned)}")
    spec_of = {id(w): s for w, s in zip(where, specs)}
    fields = {"mechanism", "epsilon", "tuned_at", "overrides", "calibration", "error", "sample_rate", "expected_batch", "n_train",
              *_SWEEP_KEYS, *(f"{m}_{s}" for m in ("accuracy", "rmse", "gap") for s in ("mean", "std", "ci95"))}
    for row, plan_row in zip(rows, planned):
        if not isinstance(row, dict) or row.get("mechanism") != plan_row["mechanism"] \
                or row.get("epsilon") != plan_row["epsilon"]:
            raise ValueError("its rows are not the preset's, in its order")
        unknown = sorted(set(row) - fields)
        if unknown:
            raise ValueError(f"{row['mechanism']} at ε = {row['epsilon']:g}: fields {unknown} no comparison writes")
        for name in ("tuned_at", "overrides"):  # the setting it ran at: the tuning's
            if row.get(name) != plan_row.get(name):
                raise ValueError(f"{row['mechanism']} at ε = {row['epsilon']:g}: {name} = {row.get(name)!r}, "
                                 f"but the shipped tuning gives {plan_row.get(name)!r}")
        if "error" in row:
            if not isinstance(row["error"], str):
                raise ValueError("an error that is not text")
            continue
        for name, (low, high) in _CLASSROOM_RANGES.items():
            v = row.get(name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not low <= v <= high):
                raise ValueError(f"{row['mechanism']} at ε = {row['epsilon']:g}: {name} = {v!r} is outside "
                                 f"[{low:g}, {high:g}]")
        for name in ("accuracy_ci95", "gap_ci95"):
            ci, mean = row.get(name), row.get(name.replace("_ci95", "_mean"))
            if ci is not None and not (isinstance(ci, list) and len(ci) == 2
                                       and all(isinstance(x, (int, float)) for x in ci)
                                       and mean is not None and ci[0] <= mean <= ci[1] and within(name[:-5], ci)):
                raise ValueError(f"{row['mechanism']} at ε = {row['epsilon']:g}: {name} is no interval around its mean "
                                 "within the metric's range")
        spec = spec_of.get(id(plan_row))
        if spec is None or row.get("calibration") != spec.calibration:
            raise ValueError(f"{row['mechanism']} at ε = {row['epsilon']:g}: not the preset's calibration")
        if "sample_rate" in REGISTRY[spec.mechanism].settings:  # the rate it ran at (shown), by the mechanism's rule
            row.update(sampling_of(spec, problem_data(spec)[0].n))
        try:
            plan = noise_plan(spec)
        except NotImplementedError:
            continue  # a plan the data decide: none in this preset's mechanisms
        certified = certify(plan, spec.delta)
        if not same_certificate(row.get("epsilon_certified"), certified, certificate_error(plan, spec.delta)):
            raise ValueError(f"{row['mechanism']} at ε = {row['epsilon']:g}: certified ε "
                             f"{row.get('epsilon_certified')!r}, but its noise certifies {certified!r}")


_SKIP_FAMILIES = ("baseline", "distributed")
#: the central mechanisms a measured-vs-predicted check runs by default
CHEAP_MECHANISMS = ("gradient-dpgd", "output-gaussian", "objective-gaussian")


def _run(specs: Sequence[RunSpec], ctx: Context | None, dataset=None,
         partial: Callable[[list[dict[str, Any] | None]], None] | None = None) -> list[dict[str, Any]]:
    """The grid's per-spec summaries, in spec order; a spec listed twice (the central
    reference at every skew, say) runs once.  ``partial(summaries)``: the summaries so far, in
    spec order (``None`` for those not done), each time one is done.  A study is one wait for its
    user: its runs still to compute must fit the work budget together, not only each alone."""
    unique = list(dict.fromkeys(specs))
    if not unique:
        return []
    on_partial = None
    if partial is not None:
        position = {s: i for i, s in enumerate(unique)}

        def on_partial(so_far):
            partial([so_far[position[s]] for s in specs])

    done = dict(zip(unique, summaries(run_grid(unique, ctx, dataset=dataset, partial=on_partial, whole_budget=True), len(unique))))
    return [done[s] for s in specs]


def _fill(row: dict[str, Any], summary: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    if "error" in summary:
        row["error"] = summary["error"]
    else:
        row.update({k: summary.get(k) for k in keys})
    return row


def _sweep_plan(base: RunSpec, mechanisms: Sequence[str], epsilons: Sequence[float],
                per_mechanism: Mapping[str, Mapping] | None, dataset, tuned: bool, data_dir=None
                ) -> tuple[list[dict], list[RunSpec], list[dict]]:
    """:func:`epsilon_sweep`'s rows (refusals filled in), the specs it runs and the row of each."""
    rows: list[dict] = []
    specs: list[RunSpec] = []
    where: list[dict] = []
    for mech in mechanisms:
        for eps in epsilons:
            row: dict[str, Any] = {"mechanism": mech, "epsilon": float(eps)}
            rows.append(row)
            found = tuned_row(base.dataset, base.model, mech, float(eps), data_dir=data_dir) \
                if tuned and dataset is None else None
            extra = {**(found["setting"] if found else {}), **dict((per_mechanism or {}).get(mech, {}))}
            if found:
                row["tuned_at"] = float(found["epsilon"])
            if extra:
                row["overrides"] = ", ".join(f"{k}={v}" for k, v in sorted(extra.items()))
            try:
                cals = get_mechanism(mech).calibrations
                cal = extra.pop("calibration", base.calibration)
                cal = cal if cal in cals else cals[0]
                row["calibration"] = cal
                specs.append(with_setting(replace(base, mechanism=mech, epsilon=float(eps), calibration=cal), extra))
                where.append(row)
            except DPCoreError as exc:
                row["error"] = str(exc)
    return rows, specs, where


def epsilon_sweep(base: RunSpec, mechanisms: Sequence[str], epsilons: Sequence[float],
                  ctx: Context | None = None, *, per_mechanism: Mapping[str, Mapping] | None = None,
                  dataset=None, tuned: bool = False, spent: bool = True,
                  partial: Callable[[list[dict]], None] | None = None) -> list[dict]:
    """Rows (one per mechanism × ε) of accuracy/RMSE, gap and the three ε's.

    A mechanism that cannot run a setting contributes a row with ``error``.
    ``per_mechanism`` maps a mechanism to RunSpec fields that differ for it (a
    seed preset's, e.g. λ for output-laplace); each row lists them under
    ``overrides``.  ``dataset`` is a user's own data (as for :func:`run`).  ``tuned``: each
    mechanism at its shipped tuned setting for the bundled dataset and model
    (:func:`dpcore.experiments.tune.tuned_setting`, the tuned ε closest to each ε), where
    there is one; ``per_mechanism`` still has the last word.  ``spent`` (with ``tuned``): each tuned
    row also says what the search that chose its setting spent, recomputed (:func:`with_search_spent`;
    a view that draws first passes ``False`` and asks afterwards).  ``partial(rows)``: the rows
    finished so far (refusals included), each time one more is, while the rest computes.
    """
    rows, specs, where = _sweep_plan(base, mechanisms, epsilons, per_mechanism, dataset, tuned,
                                     None if ctx is None else ctx.data_dir)

    def filled(row, summary, spec):  # with the sampling a DP-SGD point ran with (its hover and CSV say it)
        _fill(row, summary, _SWEEP_KEYS).update(sampling_of(spec, summary.get("n_train")))
        for metric in ("accuracy", "rmse", "gap"):
            if f"{metric}_mean" in summary:
                for k in ("mean", "std", "ci95"):
                    row[f"{metric}_{k}"] = summary[f"{metric}_{k}"]
        return row

    on_partial = None
    if partial is not None:
        refused = [r for r in rows if "error" in r]

        def on_partial(so_far):
            partial(refused + [filled(dict(row), s, p) for row, s, p in zip(where, so_far, specs) if s is not None])

    for row, summary, spec in zip(where, _run(specs, ctx, dataset, partial=on_partial), specs):
        filled(row, summary, spec)
    if tuned and spent and dataset is None:
        return with_search_spent(rows, base.dataset, base.model, None if ctx is None else ctx.data_dir)
    return rows


def with_search_spent(rows: Sequence[Mapping[str, Any]], dataset: str, model: str, data_dir=None) -> list[dict]:
    """``rows`` of a tuned :func:`epsilon_sweep` (copies), each tuned one (``tuned_at``) with what the
    whole search that chose its setting spent (``tuned_search_epsilon``: every candidate run, the
    private choice and the final run), recomputed from the shipped tuning's searches, never read from
    the file (:func:`~dpcore.experiments.tune.shipped_tuning` with ``spent``: those rows' searches only,
    0.1–8 s each the first time a machine reads them, then marked in its cache folder); a file whose figures are not the
    recomputed ones raises :class:`~dpcore.shipped.ShippedFileError`."""
    out = [dict(r) for r in rows]
    if not any("tuned_at" in r for r in out):
        return out
    keys = {(r["mechanism"], r["tuned_at"]) for r in out if "tuned_at" in r}
    record = shipped_tuning(dataset, model, data_dir=data_dir, spent=keys) or {}
    paid = {(r["mechanism"], r["epsilon"]): r.get("epsilon_spent")
            for r in record.get("rows", []) + record.get("released_rows", []) if "error" not in r}
    for r in out:
        if "tuned_at" in r:  # None: a tuned row whose search spent nothing the file states (never guessed)
            value = paid.get((r["mechanism"], r["tuned_at"]))
            r["tuned_search_epsilon"] = None if value is None else float(value)
    return out


_SWEEP_KEYS = ("mechanism_name", "epsilon_certified", "epsilon_local", "sigma", "seconds",
               "accuracy_nonprivate", "rmse_nonprivate", "accuracy_guess", "rmse_guess")
_TRADEOFF_KEYS = ("calibration", "epsilon_target", "epsilon_certified", "epsilon_local", "accuracy_mean",
                  "accuracy_std", "rmse_mean", "gap_mean", "gap_std", "sigma", "seconds",
                  "accuracy_nonprivate", "accuracy_guess", "rmse_guess")


def tradeoff(dataset: str, epsilon: float, delta: float, *, model: str = "logreg", iterations: int = 100,
             repeats: int = 3, seed: int = 0, mechanisms: Sequence[str] | None = None,
             noise_grid: Sequence[float] = DEFAULT_NOISE_GRID, curve_mechanism: str = "input-kang",
             ctx: Context | None = None, data=None, **config_kw) -> dict:
    """Rows (one per mechanism) at a fixed central ε and the accuracy-vs-local-ε curve.

    ``epsilon_local`` is ``inf`` for central mechanisms (no protection against the
    server).  The curve runs ``curve_mechanism`` with fixed input noise σ (and
    labels through randomized response at ε/2, as in certified mode).  ``data``:
    a user's own :class:`~dpcore.datasets.Dataset` in place of ``dataset``.
    """
    base = RunSpec(dataset=dataset, model=model, epsilon=epsilon, delta=delta,
                   iterations=iterations, repeats=repeats, seed=seed, **config_kw)
    if mechanisms is None:
        mechanisms = [m for m, cls in REGISTRY.items()
                      if cls.family not in _SKIP_FAMILIES and model in cls.models]
    unknown = [m for m in mechanisms if m not in REGISTRY]
    if unknown:
        raise DPCoreError(f"unknown mechanism(s): {', '.join(unknown)}")
    specs, labels = [], []
    for m in mechanisms:
        cal = "certified" if "certified" in REGISTRY[m].calibrations else "published"
        specs.append(replace(base, mechanism=m, calibration=cal))
        labels.append((m, None))
    for s in (noise_grid if curve_mechanism else ()):
        specs.append(replace(base, mechanism=curve_mechanism, calibration="certified",
                             options=tuple(sorted({**dict(base.options), "sigma": float(s)}.items()))))
        labels.append((curve_mechanism, float(s)))
    rows, curve = [], []
    for (m, s), summary, spec in zip(labels, _run(specs, ctx, data), specs):
        cls = REGISTRY[m]
        row = _fill({"mechanism": m, "name": cls.name, "family": cls.family, "heuristic": cls.heuristic},
                    summary, _TRADEOFF_KEYS)
        row.update(sampling_of(spec, summary.get("n_train")))  # DP-SGD's rate, shown in its table
        if s is None:
            rows.append(row)
        else:
            row["input_sigma"] = s
            curve.append(row)
    return {
        "dataset": dataset, "model": model, "epsilon": epsilon, "delta": delta,
        "iterations": iterations, "repeats": repeats, "rows": rows,
        "curve_mechanism": curve_mechanism, "curve": curve,
        "note": ("epsilon_local = ∞ (null in JSON) means no protection against the server; the curve's "
                 "labels go through randomized response at ε/2, so its local ε includes them."),
    }


def skew_curve(dataset: str, epsilon: float, delta: float, *, model: str = "logreg", clients: int = 4,
               skews=(1, 2, 4, 8, 16), epsilons=None, iterations: int = 100, repeats: int = 3,
               seed: int = 0, calibration: str = "certified", learning_rate: float = 1.0,
               split: str = "random", ctx: Context | None = None, data=None, **config_kw) -> dict:
    """Accuracy and gap against skew u (and ε) for WD-DP, averaging and the centralised DP-GD.

    The data behind the distributed view and seed 004's Figs 1–2: one row per
    (ε, u, method); ``epsilons`` defaults to ``[epsilon]``.  ``data``: a user's
    own :class:`~dpcore.datasets.Dataset` in place of the registered ``dataset``;
    ``split``: which records each client holds (the distributed mechanisms' option).
    """
    eps_grid = list(epsilons) if epsilons else [epsilon]
    methods = ("distributed-wddp", "distributed-avg", "gradient-dpgd")
    rows, specs, where = [], [], []
    for eps, u, mech in ((e, u, m) for e in eps_grid for u in skews for m in methods):
        central = mech == "gradient-dpgd"
        row = {"skew": float(u), "epsilon": eps, "mechanism": mech}
        rows.append(row)
        try:
            specs.append(RunSpec(dataset=dataset, model=model, mechanism=mech, epsilon=eps, delta=delta,
                                 iterations=iterations, repeats=repeats, seed=seed, calibration=calibration,
                                 learning_rate=learning_rate, clients=None if central else clients,
                                 skew=None if central else float(u),
                                 options=() if central else (("split", split),), **config_kw))
            where.append(row)
        except DPCoreError as exc:
            row["error"] = str(exc)
    keys = ("accuracy_mean", "accuracy_std", "rmse_mean", "gap_mean", "gap_std", "epsilon_certified",
            "client_sizes", "sigma", "seconds", "accuracy_nonprivate", "accuracy_guess", "rmse_guess")
    for row, summary in zip(where, _run(specs, ctx, data)):
        _fill(row, summary, keys)
    return {"dataset": dataset, "model": model, "epsilons": eps_grid, "delta": delta, "clients": clients,
            "iterations": iterations, "repeats": repeats, "calibration": calibration, "split": split,
            "rows": rows}


def compare_measured(dataset_id: str, model_id: str, epsilon: float, delta: float, iterations: int,
                     mechanisms: Sequence[str] | str | None = None, *, over: str = "n",
                     grid: Sequence[float] | None = None, repeats: int = 3, seed: int = 0,
                     calibration: str = "published", lam: float | None = None,
                     learning_rate: float | None = None, clients: int | None = None,
                     skew: float | None = None, rows: Sequence[BoundRow] = CATALOG,
                     ctx: Context | None = None) -> dict[str, Any]:
    """Measured optimality gaps beside each implementing row's predicted excess risk.

    For every mechanism that is registered and supports the model, runs the
    grid points of :func:`dpcore.theory.catalog.scaling_plan` and fits the
    log-log slope of the mean gap.  ``calibration`` defaults to
    ``"published"`` so the noise that runs follows the same formulas as the
    rows (falling back to ``"certified"`` where a mechanism has no published
    calibration).  Default mechanisms: :data:`CHEAP_MECHANISMS`.  The gap
    includes the optimiser's own error after T steps, which flattens the
    measured slope when T is small or λ tiny.

    References: SPEC §4 (measured gap beside predicted excess risk); §1 (gap).
    """
    owner = "bounds"
    repeats = validate("repeats", repeats, owner)
    calibration = validate("calibration", calibration, owner)
    if over not in ("n", "epsilon"):
        raise ParameterError(f"compare_measured scales over 'n' or 'epsilon', got {over!r}")
    plan = scaling_plan(dataset_id, model_id, epsilon, delta, iterations, over=over, grid=grid, lam=lam,
                        learning_rate=learning_rate, clients=clients, skew=skew)
    epsilon, delta = validate("epsilon", epsilon, owner), validate("delta", delta, owner)
    iterations = validate("iterations", iterations, owner)
    grid = plan["grid"]
    if mechanisms is None:
        mechanisms = list(CHEAP_MECHANISMS)
    elif isinstance(mechanisms, str):
        mechanisms = [mechanisms]
    rows = list(rows)
    results, specs, owners = [], [], []
    for mech in mechanisms:
        entry: dict[str, Any] = {"mechanism": mech, "registered": mech in REGISTRY,
                                 "rows": predictions(plan, mech, rows)}
        results.append(entry)
        if mech not in REGISTRY:
            entry["skipped"] = f"mechanism {mech!r} is not registered"
            continue
        cls = REGISTRY[mech]
        if model_id not in cls.models:
            entry["skipped"] = f"{mech} does not support model {model_id!r}"
            continue
        calib = calibration if calibration in cls.calibrations else cls.calibrations[0]
        entry["calibration"] = calib
        try:
            mine = [RunSpec(**_measured_spec(plan, x, model_id, mech, epsilon, delta, iterations, repeats, seed,
                                             calib, lam, learning_rate, clients, skew)) for x in grid]
        except DPCoreError as exc:  # a mechanism refusing a setting: report it, keep the others
            entry["skipped"] = str(exc)
            continue
        specs += mine
        owners += [entry] * len(mine)
    measured: dict[int, list[dict]] = {}
    for entry, summary in zip(owners, _run(specs, ctx)):
        measured.setdefault(id(entry), []).append(summary)
    for entry in results:
        points = measured.get(id(entry))
        if points is None:
            continue
        refused = next((p["error"] for p in points if "error" in p), None)
        if refused is not None:
            entry["skipped"] = refused
            continue
        gaps = [p["gap_runs"] for p in points]
        entry["gap_mean"] = [float(np.mean(g)) for g in gaps]
        entry["gap_std"] = [float(np.std(g, ddof=1)) if len(g) > 1 else 0.0 for g in gaps]
        entry["measured_slope"] = loglog_slope(grid, entry["gap_mean"])
        above = [(x, g) for x, g in zip(grid, entry["gap_mean"]) if g > math.log(2)] if model_id == "logreg" else []
        if above:  # L(0) − L* ≤ ln 2 − L* ≤ ln 2 for the logistic loss: a model above it is worse than 0
            where = ("every " + ("n" if over == "n" else "ε") + " measured" if len(above) == len(grid)
                     else ("n" if over == "n" else "ε") + " = " + ", ".join(f"{x:g}" for x, _ in above))
            entry["note"] = (
                f"{entry['mechanism']}: its gap ({min(g for _, g in above):.3g}–{max(g for _, g in above):.3g}) is "
                f"above ln 2 at {where}, so each model there is worse than θ = 0: its noise outweighs "
                f"the data there, where the predicted rates (upper bounds, for large n) need not show yet"
                + (f"; try a larger ε than {epsilon:g}." if over == "n" else "."))
    return {
        "over": over, "grid": grid, "dataset": dataset_id, "run_dataset": plan["run_dataset"],
        "dataset_note": plan["dataset_note"], "model": model_id, "epsilon": epsilon, "delta": delta,
        "iterations": iterations, "repeats": repeats, "seed": seed, "lam": plan["params"]["lam"].value,
        "mechanisms": results,
    }


def _measured_spec(plan, x, model_id, mech, epsilon, delta, iterations, repeats, seed, calibration, lam,
                   learning_rate, clients, skew) -> dict[str, Any]:
    """The RunSpec fields of one grid point of :func:`compare_measured`."""
    cfg = dict(dataset=plan["run_dataset"], model=model_id, mechanism=mech, epsilon=epsilon, delta=delta,
               iterations=iterations, repeats=repeats, seed=seed, calibration=calibration, lam=lam,
               clients=clients, skew=skew)
    if learning_rate is not None:
        cfg["learning_rate"] = learning_rate
    if plan["over"] == "n":
        cfg.update(n=int(x), d=plan["d_raw"])
    else:
        cfg["epsilon"] = float(x)
    return cfg
