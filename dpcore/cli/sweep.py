"""The command line's commands that compute many tasks and write files (:mod:`dpcore.cli.commands`):
``sweep`` (a paper's preset), ``tune`` (a private hyperparameter search) and ``prepare`` (the
app's cache folder, and with ``--ship`` the repository's shipped files)."""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from .. import shipped
from .common import (all_refused, check_output, eps_text, mechanism_list, print_progress, user_data,
                         write_plans, writing)
from ..exceptions import DPCoreError
from ..experiments.context import cache_dir, shared_context
from ..experiments.presets import PRESETS, get_preset, run_preset, with_overrides
from ..experiments.studies import (classroom_file, prepare_for_class, ship_calibrations, ship_classroom_compare,
                                  ship_references)
from ..experiments.sweep import environment
from ..experiments.tune import DEFAULT_MECHANISMS, tune
from ..jsonutil import dumps
from ..lesson import prepare_lesson
from ..mechanisms import REGISTRY
from ..params import parse_grid

__all__ = ["cmd_sweep", "sweep_outputs", "cmd_tune", "cmd_prepare"]


def cmd_sweep(args) -> Any:
    if args.list:
        rows = [{"id": p.id, "paper": p.paper, "figures": p.figures, "title": p.title,
                 "tasks": len(p.tasks())} for p in PRESETS.values()]
        if args.json:
            return rows
        return "\n".join(f"{r['id']:12} {r['tasks']:5d} tasks  {r['paper']}, {r['figures']}: {r['title']}"
                         for r in rows)
    if not args.preset or not args.out:
        raise DPCoreError("sweep needs --preset ID and --out DIR (or --list to see the presets)")
    if args.scheduler is not None and not re.fullmatch(r"(tcp|tls|ws|wss|ucx)://[^\s/:]+:\d{1,5}", args.scheduler):
        raise DPCoreError(f"--scheduler needs a Dask scheduler address like tcp://10.0.0.5:8786, "
                          f"got {args.scheduler!r}")
    preset = with_overrides(get_preset(args.preset), args.set)
    for path, folder in sweep_outputs(preset, args):
        check_output(path, "--out", folder=folder)
    with writing("--out", args.out):
        rec = run_preset(preset, args.out, quick=args.quick, repeats=args.repeats, max_n=args.max_n,
                         calibration=args.calibration, workers=args.workers, scheduler=args.scheduler,
                         progress=print_progress, command=_command(args.argv))
    failed = len(rec.get("failed_tasks", []))
    if rec["tasks"] and failed == rec["tasks"]:
        raise all_refused(rec["tasks"], "setting", rec["errors"])
    if args.json:
        return rec
    lines = [f"{preset.id}: {rec['tasks']} tasks ({rec['computed']} computed, {rec['cached']} from the "
             f"cache) in {rec['wall_seconds']:.1f} s"]
    if failed:
        reasons = len(rec["errors"])
        lines.append(f"{failed} of {rec['tasks']} settings refused by the core ({reasons} reason"
                     f"{'s' if reasons != 1 else ''}); see the CSV's error column")
    lines += [f"  {k}: {v}" for k, v in rec["outputs"].items()]
    return "\n".join(lines)


def sweep_outputs(preset, args) -> list[tuple[str, bool]]:
    """What a sweep writes in ``--out`` (:func:`~dpcore.experiments.presets.run_preset`'s names:
    the folder, its result cache, ``<id>[-quick][-<calibration>].csv/.html/.json``), as (path,
    is a folder); tests/test_cli_outputs.py checks these against the record's ``outputs``."""
    root = Path(args.out) if args.out.strip() and "\x00" not in args.out else None
    if root is None:
        return [(args.out, True)]
    stem = preset.id + ("-quick" if args.quick else "") + (f"-{args.calibration}" if args.calibration else "")
    return [(args.out, True), (str(root / "cache"), True),
            *((str(root / f"{stem}{ext}"), False) for ext in (".csv", ".html", ".json", "-plans.json"))]


def _command(argv: Sequence[str]) -> str:
    """The command line that made a record, with the budget variables it ran under (a
    larger ``DPCORE_WORK_BUDGET`` lets a sweep compute what the default refuses)."""
    env = [f"{k}={os.environ[k]}" for k in ("DPCORE_MEMORY_BUDGET", "DPCORE_WORK_BUDGET") if k in os.environ]
    return shlex.join(env + ["python", "-m", "dpcore", *argv])


def cmd_tune(args) -> Any:
    own = user_data(args)
    mechs = mechanism_list(args.mechanisms)
    if mechs is None:
        mechs = [m for m in DEFAULT_MECHANISMS if args.model in REGISTRY[m].models]
    epsilons = parse_grid("epsilon", args.epsilons, "--epsilons", 12)
    out = None if args.out is None else check_output(args.out, "--out")
    plan_out = None if args.plan_out is None else check_output(args.plan_out, "--plan-out")
    started = time.time()
    result = tune(args.dataset if own is None else own, mechanisms=mechs, epsilons=epsilons, delta=args.delta, model=args.model, repeats=args.repeats,
                  final_repeats=args.final_repeats, seed=args.seed, validation_fraction=args.validation_fraction,
                  selection_epsilon=args.selection_epsilon, ctx=shared_context(progress=print_progress))
    record = {**result.to_dict(), "command": _command(args.argv),
              "seconds": round(time.time() - started, 1), "date": time.strftime("%Y-%m-%d"),
              "environment": environment()}
    refused = [e["error"] for e in result.errors] + [r["error"] for r in result.rows + result.released_rows
                                                      if "error" in r]
    if not any("error" not in r for r in result.rows + result.released_rows):
        raise all_refused(len(refused), "candidate", refused)
    if out is not None:
        with writing("--out", out):
            out.write_text(dumps(record, indent=1) + "\n")
            shipped.record([out])  # a tuning shipped into the data folder: listed in the manifest
    if plan_out is not None and not result.plans:
        raise DPCoreError("--plan-out: no search ran (input and local perturbation choose on their own releases, "
                          "for free: their plan is the run's, `run --plan-out` writes it)")
    if plan_out is not None:
        write_plans(plan_out, [(f"tuning {mech} on {result.dataset} ({result.model}) at ε = {eps:g}: the whole "
                                 "search", plan, delta) for (mech, eps), (plan, delta) in result.plans.items()])
    if args.json:
        return record

    e = eps_text
    lines = []
    if result.released_rows:
        lines += _released_lines(result)
    if not result.rows and not result.errors:
        return "\n".join(lines)
    lines += [f"{result.dataset} ({result.model}), δ = {result.delta:.3g}: candidates scored on "
             f"{result.n_validation} validation rows, the choice trained on all {result.n_train}",
             f"{'mechanism':20} {'ε':>6} {'test acc':>9} {'val acc':>8} {'ε spent':>8}  setting"]
    for r in result.rows:
        if "error" in r:
            lines.append(f"{r['mechanism']:20} {e(r['epsilon']):>6} error: {r['error']}")
            continue
        setting = ", ".join(f"{k}={v:g}" for k, v in r["setting"].items())
        lines.append(f"{r['mechanism']:20} {e(r['epsilon']):>6} {r['test_accuracy']:9.4f} "
                     f"{r['validation_accuracy']:8.4f} {e(r['epsilon_spent']):>8}  {setting}")
    lines.append("ε spent: the whole search (every candidate run, the private choice, the final run) at "
                 f"δ = {max((r.get('delta_spent', 0) for r in result.rows), default=0):.3g}; the released "
                 "run alone certifies the target ε.")
    for err in result.errors:
        lines.append(f"refused: {err['mechanism']} at ε = {e(err['epsilon'])}: {err['error']}")
    return "\n".join(lines)


def _released_lines(result) -> list[str]:
    """The free tunings of input and local perturbation: before and after, beside guessing."""
    metric = "accuracy" if any("test_accuracy" in r for r in result.released_rows) else "rmse"
    lines = [f"{result.dataset} ({result.model}), δ = {result.delta:.3g}: input and local perturbation, settings "
             "chosen on each release's own records (post-processing: ε spent = ε certified)",
             f"{'mechanism':16} {'ε':>6} {'untuned':>8} {'tuned':>8} {'guess':>7} {'non-priv':>8} {'ε spent':>8}  "
             "guess chosen"]
    for r in result.released_rows:
        if "error" in r:
            lines.append(f"{r['mechanism']:16} {eps_text(r['epsilon']):>6} error: {r['error']}")
            continue
        lines.append(f"{r['mechanism']:16} {eps_text(r['epsilon']):>6} {r[f'untuned_test_{metric}']:8.4f} "
                     f"{r[f'test_{metric}']:8.4f} {r[f'{metric}_guess']:7.4f} {r[f'{metric}_nonprivate']:8.4f} "
                     f"{eps_text(r['epsilon_spent']):>8}  {r['guess_chosen']} of {r['repeats']}")
    lines.append(f"{metric}: mean of the releases on the test split; guess: always the majority class"
                 if metric == "accuracy" else f"{metric}: mean of the releases on the test split; guess: always the mean")
    return lines


def cmd_prepare(args) -> Any:
    """Fill the app's cache folder (``DPCORE_CACHE_DIR``) with what a class will open first
    (:func:`~dpcore.experiments.studies.prepare_for_class`, then every step of the lesson:
    :func:`~dpcore.lesson.prepare_lesson`); a second call finds everything and
    returns at once.  ``--ship`` also recomputes Compare's shipped classroom rows and the shipped
    exact references (:func:`~dpcore.experiments.studies.ship_references`; the MLP's unless
    ``--no-mlp``)."""
    missing = shipped.missing_manifest()
    if missing:  # before any work: each shipped file would be refused in turn, after minutes of computing
        raise shipped.ShippedFileError(missing)
    what = "the cache folder" + (" (DPCORE_CACHE_DIR)" if os.environ.get("DPCORE_CACHE_DIR") else "")
    for sub in ("", "erm", "results"):
        check_output(str(cache_dir() / sub), what, folder=True)
    if args.ship:  # the shipped files of the repository
        check_output(str(classroom_file()), "--ship")
        check_output(str(shipped.folder_of("references")), "--ship", folder=True)
        check_output(str(shipped.folder_of("calibrations")), "--ship", folder=True)
    started = time.time()
    ctx = shared_context(progress=print_progress, workers=None, results_dir=cache_dir() / "results")

    def tell(what: str, seconds: float) -> None:
        print(f"  {what}: {seconds} s", file=sys.stderr, flush=True)

    # the shipped references first, so that the app's cache below reads them instead of solving again
    done = ship_references(progress=print_progress, mlp=not args.no_mlp) if args.ship else []
    if args.ship:  # the classroom preset's noise calibrations, which a new machine then only re-certifies
        done.append(ship_calibrations())
    for part in done:
        tell(part["what"], part["seconds"])
    done += prepare_for_class(ctx, mlp=not args.no_mlp, tell=tell)
    done += prepare_lesson(ctx, tell=tell)  # every step of the lesson, so each opens at once
    if args.ship:  # computed afresh (no result cache), so the record's time is the computation's
        made = ship_classroom_compare(shared_context(progress=print_progress, workers=None))
        done.append({"what": f"Compare's first preset, computed afresh into {classroom_file()}",
                     "seconds": made["wall_seconds"]})
    record = {"cache": str(cache_dir()), "prepared": done, "seconds": round(time.time() - started, 1)}
    if args.json:
        return record
    return "\n".join([f"prepared in {record['seconds']} s, in {record['cache']}:"]
                     + [f"  {d['what']}: {d['seconds']} s" for d in done])
