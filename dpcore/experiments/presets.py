"""The seed papers' figures as named sweeps: run them, and read the results shipped with the repository.

The public face of the presets (``from dpcore.experiments.presets import …`` keeps every name):

* :mod:`~dpcore.experiments.presets_spec`: :class:`Preset`, a figure's declaration, and the tasks it
  expands into (``tasks()``);
* :mod:`~dpcore.experiments.presets_papers`: :data:`PRESETS`, every experimental figure of the four
  seed papers;
* :mod:`~dpcore.experiments.presets_figures`: the figure in the paper's panel layout;
* here: :func:`with_overrides` (``--set``), :func:`run_preset` (``dpcore sweep --preset``) and the
  full-size results shipped in ``data/results`` (:func:`shipped_results`, :func:`rerun`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from .. import shipped
from ..datasets import get_spec
from ..exceptions import DPCoreError, ParameterError, moved_attributes
from ..jsonutil import dumps
from ..mechanisms import REGISTRY, get_mechanism
from ..params import check, validate
from ..privacy.core import dp_events_list
from .context import DEFAULT_MEMORY_BUDGET, DEFAULT_WORK_BUDGET, Context
from .grid import run_grid
from .run import noise_plan
from .presets_figures import wrap_note
from .presets_papers import (
    EPS_001,
    EPS_002,
    EPS_004,
    LR_004,
    N_003,
    PRESETS,
    get_preset,
)
from .presets_spec import QUICK_ROWS, QUICK_ROWS_DISTRIBUTED, Preset, auto_delta
from ..privacy.core import CLOSED_FORM_TOL
from .sweep import check_table, environment, results_fingerprint

__all__ = ["EPS_001", "EPS_002", "EPS_004", "LR_004", "N_003", "PRESETS", "QUICK_ROWS", "QUICK_ROWS_DISTRIBUTED",
           "Preset", "ShippedResults", "auto_delta", "get_preset", "rerun", "run_preset",
           "shipped_ids", "shipped_results", "with_overrides", "wrap_note"]


#: preset fields ``--set KEY=VALUE`` may change, with how to read the value
_SETTABLE: dict[str, Any] = {
    "datasets": str, "models": str, "mechanisms": str, "epsilons": float, "learning_rates": float,
    "ns": int, "delta": float, "iterations": int, "repeats": int, "clients": int, "partition": str,
}


def with_overrides(preset: Preset, items: Sequence[str]) -> Preset:
    """A copy with fields changed by ``KEY=VALUE`` strings (lists comma-separated), checked.

    E.g. ``epsilons=0.1,1`` or ``datasets=adult`` or ``iterations=500``: a paper's
    figure with one change.  The copy's id gets a suffix naming the change.
    """
    changes: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in _SETTABLE:
            raise ParameterError(f"--set needs KEY=VALUE with KEY one of {', '.join(_SETTABLE)}; "
                                 f"got {item!r}")
        kind = _SETTABLE[key]
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if not parts:
            raise ParameterError(f"--set {key}= needs a value")
        try:
            values = [kind(float(p)) if kind is int else kind(p) for p in parts]
        except ValueError:
            raise ParameterError(f"--set {key}: {text!r} is not a list of {kind.__name__} values") from None
        if key == "datasets":
            values = [get_spec(v).id for v in values]
        elif key == "mechanisms":
            values = [get_mechanism(v).id for v in values]
        elif key == "models":
            for v in values:
                if v not in ("logreg", "linreg", "mlp"):
                    raise ParameterError(f"unknown model {v!r}; choose logreg, linreg or mlp")
        elif key in ("epsilons", "delta", "iterations", "repeats", "clients"):
            if key == "clients" and not any(REGISTRY[m].family == "distributed" for m in preset.mechanisms):
                raise ParameterError(f"--set clients applies to presets with a distributed mechanism; {preset.id} "
                                     "has none: clients would change nothing")
            name = {"epsilons": "epsilon"}.get(key, key)
            values = [validate(name, v, "sweep") for v in values]
        elif key == "learning_rates":
            values = [validate("learning_rate", v, "sweep") for v in values]
        elif key == "ns":
            if preset.x != "n":
                raise ParameterError(f"--set ns applies to the presets that plot against n "
                                     f"({', '.join(p.id for p in PRESETS.values() if p.x == 'n')}); "
                                     f"{preset.id} plots against {preset.x}: ns would change nothing")
            values = [validate("n", v, "sweep") for v in values]
        elif key == "partition":
            if not preset.clients:
                raise ParameterError(f"--set partition applies to the distributed presets (004); "
                                     f"{preset.id} has no clients")
            values = [check(REGISTRY["distributed-wddp"].options["partition"], v, "sweep") for v in values]
        single = key in ("delta", "iterations", "repeats", "clients", "partition")
        if single and len(values) != 1:
            raise ParameterError(f"--set {key} takes one value, got {len(values)}")
        changes[key] = values[0] if single else tuple(values)
    if not changes:
        return preset
    tag = hashlib.sha256(json.dumps(sorted(changes.items()), default=str).encode()).hexdigest()[:6]
    return replace(preset, id=f"{preset.id}-set{tag}", choices=preset.choices + tuple(
        f"changed from the paper's setting: {k} = {v}" for k, v in changes.items()), **changes)


def run_preset(preset: Preset, out, *, quick: bool = False, repeats: int | None = None,
               max_n: int | None = None, calibration: str | None = None,
               workers: int | None = None, scheduler=None, progress=None,
               command: str | None = None) -> dict[str, Any]:
    """Run (or resume) a preset into ``out``: ``<id>.csv``, ``<id>.html``, ``<id>.json`` and every
    task's noise plan, ``<id>-plans.json`` (:func:`task_plans`).

    Returns the JSON record (also written to disk), with the output paths, the code
    version (``environment``) and ``command``, the command line that asked for it.
    """
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    tasks = preset.tasks(quick=quick, repeats=repeats, max_n=max_n, calibration=calibration)
    root = Path(out)
    # one BLAS thread per task whatever the workers: a preset's numbers never depend on the machine
    ctx = Context(workers=workers, scheduler=scheduler, threads=1, results_dir=root / "cache",
                  erm_dir=root / "cache" / "erm", trace_points=0, progress=progress)
    df = run_grid([t.config for t in tasks], ctx, tags=[dict(t.tags) for t in tasks]).drop(columns="spec")
    stem = preset.id + ("-quick" if quick else "") + (f"-{calibration}" if calibration else "")
    paths = {"csv": str(root / f"{stem}.csv"), "html": str(root / f"{stem}.html"),
             "json": str(root / f"{stem}.json"), "plans": str(root / f"{stem}-plans.json")}
    df.to_csv(paths["csv"], index=False)
    Path(paths["plans"]).write_text(dumps(task_plans(tasks, ctx), indent=1))
    fig = preset.figure(df, calibration=calibration)
    fig.write_html(paths["html"], include_plotlyjs=True, full_html=True)
    errors = sorted({e for e in df.get("error", pd.Series(dtype=object)).dropna()})
    failed = sorted(set(df.loc[df["error"].notna(), "task"])) if "error" in df else []
    record = {
        "preset": preset.describe(),
        "command": command,
        # which settings a run refuses up front (DPCORE_MEMORY_BUDGET / DPCORE_WORK_BUDGET)
        "budgets": {"memory_bytes": ctx.budget.memory, "work": ctx.budget.work},
        "quick": quick,
        "repeats_override": repeats,
        "calibration_override": calibration,
        "max_n": max_n,
        "started": started,
        "wall_seconds": time.perf_counter() - t0,
        "tasks": len(tasks),
        "computed": df.attrs["computed"],
        "cached": df.attrs["cached"],
        "compute_seconds": df.attrs["compute_seconds"],
        "workers": None if scheduler is not None else (workers or os.cpu_count()),
        "scheduler": None if scheduler is None else str(getattr(scheduler, "scheduler", scheduler)),
        "errors": errors,
        "failed_tasks": failed,
        "environment": environment(),
        "configs": [{"key": t.key, **json.loads(dumps(t.config.to_dict()))} for t in tasks],
        "outputs": paths,
    }
    Path(paths["json"]).write_text(dumps(record, indent=2))
    shipped.record([paths["csv"], paths["json"]])  # into the data folder: listed in the manifest (else nothing)
    return record


def task_plans(tasks, ctx: Context | None = None) -> dict[str, Any]:
    """Every task's noise plan as dp-accounting events (:func:`~dpcore.privacy.core.dp_events_list`, what
    ``certify --plan`` reads), labelled by task key; a refused task, or one whose plan only
    running knows (the clients' split, a heuristic's choice), is named under ``omitted`` with the reason."""
    items, omitted = [], []
    for t in tasks:
        label = f"{t.key}: {t.config.label()}"
        try:
            items.append((label, noise_plan(t.config, ctx), t.config.delta))
        except DPCoreError as exc:
            omitted.append((label, f"refused: {exc}"))
        except NotImplementedError:
            omitted.append((label, "it adds no noise: nothing to certify" if not REGISTRY[t.config.mechanism].private
                            else "its plan is known only by running it (the clients' split, a choice read off "
                                 "the data): `run --plan-out` writes it"))
    return dp_events_list(items, omitted)


#: Full-size results shipped with the repository, one ``<id>.csv`` (tidy, every repeat) and
#: ``<id>.json`` (the command, the code version, timings) per preset; made by
#: ``python -m dpcore sweep --preset ID --out data/results`` (see data/results/README.md).
#: In the data folder (``data/results`` in a checkout, ``dpcore/_data/results`` in an installed package),
#: read only through :mod:`dpcore.shipped`'s rule (:func:`dpcore.shipped.folder_of` ``("results")``;
#: ``RESULTS_DIR``, a module attribute in 0.1.0, still reads for one release, with a warning).
__getattr__ = moved_attributes(__name__, {"RESULTS_DIR": ("dpcore.shipped.folder_of('results')",
                                                          lambda: shipped.folder_of("results"))})


@dataclass(frozen=True)
class ShippedResults:
    """A preset's shipped full-size results: the tidy table and the sweep's record."""

    preset: Preset
    table: pd.DataFrame
    record: dict[str, Any]
    #: the same preset with the papers' published calibrations (``<id>-published.*``), if shipped
    published: pd.DataFrame | None = None
    published_record: dict[str, Any] | None = None

    def figure(self) -> go.Figure:
        return self.figure_and_points()[0]

    def figure_and_points(self) -> tuple[go.Figure, dict]:
        """The figure and what its note is made of (:meth:`Preset.figure_and_points`)."""
        return self.preset.figure_and_points(self.table, published=self.published,
                                             calibration=self.record.get("calibration_override"))

    def provenance(self, published: bool = False) -> str:
        """One sentence: when, by which code, with which command, how long it took (of the
        published-calibration run with ``published``)."""
        rec = self.published_record if published else self.record
        if rec is None:
            return ""
        env = rec.get("environment", {})
        commit = env.get("git_commit") or "an unrecorded commit"
        took = rec.get("wall_seconds")
        took = ("an unrecorded time" if took is None else f"{took:.0f} s" if took < 120
                else f"{took / 60:.0f} min")
        budgets = rec.get("budgets", {})
        memory, work = budgets.get("memory_bytes"), budgets.get("work")
        notes = []
        if memory and memory > DEFAULT_MEMORY_BUDGET:
            notes.append(f"memory budget raised to {memory / 2**30:.0f} GiB")
        if work and work > DEFAULT_WORK_BUDGET:
            notes.append(f"work budget raised to {work:.0e} operations")
        if rec.get("cached"):
            notes.append(f"{rec['computed']} tasks computed, {rec['cached']} from the result cache of earlier runs")
        for amended in rec.get("amended", []):  # a column recomputed later without training again
            notes.append(f"amended {amended.get('date', '?')}: {', '.join(amended.get('columns', []))}, "
                         f"{amended.get('why', '')}")
        notes = f" ({'; '.join(notes)})" if notes else ""
        repeats = max((c.get("repeats", 0) for c in rec.get("configs", [])), default=0) or self.preset.repeats
        size = " (a quick rehearsal: ≤ 10 iterations, a few hundred rows)" if rec.get("quick") else ""
        workers = rec.get("workers")
        return (f"{rec.get('tasks', len(self.table))} configurations × {repeats} repeats{size}, "
                f"computed {rec.get('started', '?')[:10]} by dpcore {env.get('dpcore', '?')} at "
                f"{commit[:12]} in {took} on {workers} worker{'' if workers == 1 else 's'}{notes}: "
                f"`{rec.get('command') or f'python -m dpcore sweep --preset {self.preset.id} --out data/results'}`")


def _shipped_files(preset_id: str, folder: Path | None) -> tuple[Path, Path] | None:
    """A preset's shipped table and record, when both are there."""
    folder = shipped.folder_of("results") if folder is None else Path(folder)
    csv, rec = folder / f"{preset_id}.csv", folder / f"{preset_id}.json"
    return (csv, rec) if os.path.lexists(csv) and os.path.lexists(rec) else None


#: a results table's columns of whole numbers (a run's counts and seeds), written as such by every sweep
WHOLE_COLUMNS = ("iterations", "repeats", "seed", "d", "n_train", "run", "run_seed")


def _read_verified(preset: Preset, stem: str, folder: Path | None,
                   ctx: Context | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A shipped table and its record, read by :mod:`dpcore.shipped`'s rule (a regular file under the
    cap, listed in the manifest with this content) and checked as the results cache checks an entry
    (:func:`~dpcore.experiments.sweep.check_table`: types, ranges, each task's settings, and its
    certificate recomputed); :class:`~dpcore.shipped.ShippedFileError` (one line) otherwise."""
    data = None if folder is None else Path(folder).parent
    rel = f"results/{stem}"
    record = shipped.read_json(f"{rel}.json", data)
    table = shipped.read_csv(f"{rel}.csv", data, low_memory=False)
    if record is None or table is None:
        raise shipped.ShippedFileError(f"the shipped {rel}.csv or {rel}.json is gone: restore both, or compute "
                                       f"them with `{shipped.KINDS['results'].made_by}`")
    # what was verified, by content and code: a table this code verified once is not verified again
    # (its certificates are a function of the files and the code; the app keeps the mark on disk)
    mark = "verified-" + hashlib.sha256("\0".join(
        [shipped.digest(f"{rel}.csv", data), shipped.digest(f"{rel}.json", data), results_fingerprint(),
         repr(CLOSED_FORM_TOL)]).encode()).hexdigest()[:24]
    store = None if ctx is None or ctx.results_dir is None else ctx.results
    if store is not None and store.read(mark, _same_mark(mark)) is not None:
        return table, record
    try:
        if not isinstance(record, dict) or not isinstance(record.get("preset"), dict) \
                or record["preset"].get("id") != preset.id:
            raise ValueError(f"its record is not {preset.id}'s")
        _check_provenance(record)
        for column in WHOLE_COLUMNS:  # "0.0" for a seed reads as the same run, but is not what was written
            if column in table.columns and not pd.api.types.is_integer_dtype(table[column]):
                raise ValueError(f"its {column} column is not written in whole numbers")
        check_table(table, record.get("configs"), ctx)
    except ValueError as exc:
        raise shipped.ShippedFileError(f"the shipped {rel}.csv is refused: {exc}; compute it again with "
                                       f"`python -m dpcore sweep --preset {preset.id} --out data/results`") from None
    if store is not None:
        store.write(mark, {"verified": mark})
    return table, record


def _same_mark(mark: str):
    """A verification mark's check: the mark of these files and this code, nothing else."""
    def check(doc: Any) -> dict:
        if doc != {"verified": mark}:
            raise ValueError("not this verification's mark")
        return doc
    return check


def _check_provenance(record: dict[str, Any]) -> None:
    """Raise ``ValueError`` unless the record's fields the views show (:meth:`ShippedResults.provenance`,
    Paper figures' re-run estimate) are of their types and ranges: a count an integer ≥ 0, a time or a
    budget a finite number ≥ 0, a text a text (``None``: not recorded)."""
    def count(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    def amount(v):
        return shipped.is_finite_number(v) and v >= 0

    def text(v):
        return isinstance(v, str)

    env, budgets, amended = record.get("environment", {}), record.get("budgets", {}), record.get("amended", [])
    if not isinstance(env, dict) or not isinstance(budgets, dict) or not isinstance(amended, list) \
            or not all(isinstance(a, dict) for a in amended):
        raise ValueError("its record's environment, budgets or amendments are not of their kind")
    fields = [(record, ("tasks", "computed", "cached", "workers"), count),
              (record, ("wall_seconds", "compute_seconds"), amount), (budgets, ("memory_bytes", "work"), amount),
              (record, ("started", "command"), text), (env, ("dpcore", "git_commit"), text),
              (record, ("quick",), lambda v: isinstance(v, bool))]
    fields += [(a, ("date", "why"), text) for a in amended]
    fields += [(a, ("columns",), lambda v: isinstance(v, list) and all(map(text, v))) for a in amended]
    for where, names, ok in fields:
        for name in names:
            if where.get(name) is not None and not ok(where[name]):
                raise ValueError(f"its record's {name} = {where[name]!r} is not of its type and range")


def shipped_ids(folder: Path | None = None) -> list[str]:
    """The presets whose full-size results are shipped (both files present), in preset order."""
    return [p for p in PRESETS if _shipped_files(p, folder) is not None]


def rerun(preset_id: str, folder, *, quick: bool = True, calibration: str = "certified",
          workers: int | None = None, progress=None) -> ShippedResults:
    """Run a preset again into ``folder``, never into data/results/ (the shipped results stay
    what they are): the Paper figures view's "Re-run here".  ``quick``: the 2-repeat,
    few-hundred-row rehearsal (seconds); otherwise the full size (as long as the shipped
    record says it took).  Resumable: the folder's result cache keeps finished configurations.
    Returns the run as :class:`ShippedResults`, its record's command the equivalent command line."""
    preset = get_preset(preset_id)
    folder = Path(folder)
    if folder.resolve() == shipped.folder_of("results").resolve():
        raise ParameterError("a re-run never writes into data/results/: choose another folder")
    override = None if calibration == "certified" else calibration
    command = shlex.join(["python", "-m", "dpcore", "sweep", "--preset", preset.id, "--out", str(folder)]
                         + (["--quick"] if quick else []) + (["--calibration", override] if override else []))
    record = run_preset(preset, folder, quick=quick, calibration=override, workers=workers, progress=progress,
                        command=command)
    return ShippedResults(preset=preset, table=pd.read_csv(record["outputs"]["csv"]), record=record)


def shipped_results(preset_id: str, folder: Path | None = None, ctx: Context | None = None) -> ShippedResults | None:
    """The shipped full-size results of a preset (``None`` when there are none), every number
    verified (:func:`_read_verified`); :class:`~dpcore.shipped.ShippedFileError` when a file is
    not what was shipped or its numbers are not this code's.  ``ctx``: whose calibration table the
    recomputed certificates use (the app's keeps them on disk), and whose data folder
    (:attr:`~dpcore.experiments.context.Context.data_dir`) holds the results when ``folder`` is not given."""
    preset = get_preset(preset_id)
    if folder is None:
        folder = shipped.folder_of("results", None if ctx is None else ctx.data_dir)
    files = _shipped_files(preset.id, folder)
    if files is None:
        return None
    pub = _shipped_files(f"{preset.id}-published", folder)
    table, record = _read_verified(preset, preset.id, folder, ctx)
    published, published_record = (None, None) if pub is None else \
        _read_verified(preset, f"{preset.id}-published", folder, ctx)
    return ShippedResults(preset=preset, table=table, record=record,
                          published=published, published_record=published_record)
