"""Command line (SPEC §7): ``python -m dpcore <command> … [--json]``.

With ``--json`` one strict JSON document goes to stdout (an infinite ε is
``null``).  Bad input exits with code 2 and one line on stderr: a value outside its declared
range (:mod:`dpcore.params`), two flags that set one thing two ways, an output that cannot be
written (checked before any work), every setting refused.  An error while writing, to a file or
to stdout, is one line too (exit 2); a reader that went away (``| head``) the quiet exit 141.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shlex
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from .certify import CERTIFY_PARAMS, prepare_plans
from .certify import certify as certify_run
from .datasets import from_csv, get_spec, list_datasets
from .datasets.preprocess import pipeline_note
from .datasets.upload import MAX_UPLOAD_BYTES
from . import shipped
from .exceptions import DPCoreError
from .audit import audit
from .experiments.baselines import baseline
from .audit import summary as audit_summary
from .audit import one_run_audit
from .experiments.context import cache_dir, shared_context
from .experiments.presets import PRESETS, get_preset, run_preset, with_overrides
from .experiments.progress import TimeLeft, duration
from .experiments.run import RunSpec, run
from .erm import SHIPPED_REFERENCES
from .experiments.studies import (CLASSROOM_FILE, prepare_for_class, ship_classroom_compare, ship_references,
                                  tradeoff)
from .experiments.sweep import environment
from .experiments.tune import DEFAULT_MECHANISMS, setting_text, tune, tuned_setting, with_setting
from .jsonutil import TooLarge, dumps, read_regular
from .lesson import prepare_lesson
from .mechanisms import REGISTRY
from .params import CONFLICTS, PARAMS, check_conflicts, parse_grid
from .theory.catalog import bounds_report
from .cli_parser import CSV_FLAGS, ParserExit, build_parser
from .privacy import dp_events_list

__all__ = ["main", "build_parser"]


def _parse_options(items) -> tuple:
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise DPCoreError(f"--option needs KEY=VALUE, got {item!r}")
        if key in out:
            raise DPCoreError(f"--option {key} is given twice: keep one")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return tuple(sorted(out.items()))


def _cmd_datasets(args) -> Any:
    rows = [s.summary() for s in list_datasets()]
    if args.json:
        return rows
    lines = [f"{'id':26} {'n_train':>8} {'d':>5}  name"]
    for r in rows:
        n = "any" if r["synthetic"] else r["n_train"]
        d = "any" if r["synthetic"] else r["d"]
        lines.append(f"{r['id']:26} {n!s:>8} {d!s:>5}  {r['name']}")
    return "\n".join(lines)


def _cmd_mechanisms(args) -> Any:
    rows = [cls.metadata() for cls in REGISTRY.values()]
    if args.json:
        return rows
    lines = [f"{'id':24} {'family':12} {'notion':8} models"]
    for r in rows:
        lines.append(f"{r['id']:24} {r['family']:12} {r['privacy_notion']:8} {', '.join(r['models'])}")
    return "\n".join(lines)


_RUN_FLAGS = (("clients", "clients"), ("skew", "skew"), ("batch", "batch_size"),
              ("sample_rate", "sample_rate"), ("clip", "clip_norm"))


def _read_input(flag: str, path: str, limit: int, why: str) -> bytes:
    """The bytes of the file ``flag`` names, at most ``limit`` of them read, the one way every file
    argument is read (:func:`~dpcore.jsonutil.read_regular`: a regular file only, opened without
    blocking and checked on its descriptor, so a FIFO, a device such as ``/dev/zero`` or a folder
    is refused at once, never waited on or read forever): a path that is no path, a file that
    cannot be read, or one larger than ``limit`` (``why`` says what that means) is one line
    (exit 2), before anything is parsed."""
    if not path.strip() or "\x00" in path:
        raise DPCoreError(f"{flag} needs a file path, got {path!r}")
    try:
        raw = read_regular(path, limit)
    except TooLarge:
        raise DPCoreError(f"{flag} {path!r} is larger than {limit / 2**20:.3g} MB: {why}") from None
    except ValueError as exc:  # a folder, a FIFO, a device
        raise DPCoreError(f"{flag} {path!r} cannot be read: {exc}") from None
    except OSError as exc:
        raise DPCoreError(f"{flag} {path!r} cannot be read: {exc.strerror or exc}") from None
    if raw is None:
        raise DPCoreError(f"{flag} {path!r} cannot be read: no such file")
    return raw


def _user_data(args):
    """The CSV ``--csv`` names, read as the app's upload reads it (:func:`~dpcore.datasets.from_csv`:
    the same validation and limits, never cached), with ``args.dataset`` set to its id; ``None``
    for a registered ``--dataset`` (where a CSV's flags are refused, never dropped)."""
    path = getattr(args, "csv", None)
    if path is None:
        for flag in CSV_FLAGS:
            if _given(args, flag):
                raise DPCoreError(f"{flag} describes a CSV file: add --csv PATH, or drop {flag}")
        return None
    if args.label is None:
        raise DPCoreError("--csv needs --label COLUMN: the column to predict")
    raw = _read_input("--csv", path, MAX_UPLOAD_BYTES, "the limit the app's upload has too: take a sample of its rows")
    name = args.name if args.name is not None else Path(path).stem
    if not name.strip():
        raise DPCoreError("--name needs some text")
    ds = from_csv(raw, args.label, args.positive_class, task=args.task or "classification",
                  name=name, id="csv:" + name)
    args.dataset = ds.id
    # what the upload noticed (rows dropped, the encoding it fell back to, Excel's separator line):
    # said on standard error once the command succeeds (`note: …`), as the Datasets view shows it
    args.notes = [n for n in ds.notes if n not in (pipeline_note(True), pipeline_note(False))]
    return ds


def _refuse_inapplicable(args, own=None) -> None:
    """A flag that does not apply to the chosen mechanism or dataset is refused, never dropped."""
    if own is not None:
        for flag in ("n", "d", "noise"):
            if getattr(args, flag) is not None:
                raise DPCoreError(f"--{flag} applies to the registered datasets only, not to a --csv file")
    elif not get_spec(args.dataset).synthetic:
        for flag in ("d", "noise"):
            if getattr(args, flag) is not None:
                raise DPCoreError(f"--{flag} applies to the synthetic datasets only; {args.dataset} is "
                                  "bundled data (--n takes a seeded subsample of it)")
    cls = REGISTRY.get(args.mechanism)
    if cls is not None:
        for flag, field in _RUN_FLAGS:
            if getattr(args, flag, None) is not None and field not in cls.settings:
                reads = ", ".join("--" + f.replace("_", "-") for f, fld in _RUN_FLAGS if fld in cls.settings)
                raise DPCoreError(f"--{flag.replace('_', '-')} does not apply to {cls.id} "
                                  f"(it reads {reads or 'none of --clients, --skew, --batch, --sample-rate, --clip'})")
    if args.c is not None and args.calibration != "published":
        raise DPCoreError("--c is the constant of a paper's published formula: add --calibration published")
    if cls is not None and not cls.private:
        for flag in ("--c", "--noise-scale", "--label-epsilon"):
            if _given(args, flag):
                raise DPCoreError(f"{flag} does not apply to {cls.id}: it adds no noise")
    if cls is not None and not cls.iterative:
        for flags in (("--iterations", "-T"), ("--lr",)):
            if _given(args, *flags):
                raise DPCoreError(f"{flags[0]} does not apply to {cls.id}: it does not iterate")
    if args.skew is not None and args.clients == 1:
        raise DPCoreError("--skew needs at least 2 clients: with --clients 1 there is nothing to skew")


def _given(args, *flags: str) -> bool:
    """Whether the command line named one of ``flags`` (not merely left its default)."""
    return any(tok == f or tok.startswith(f + "=") for tok in getattr(args, "argv", []) for f in flags)


def _refuse_conflicts(parser: argparse.ArgumentParser, args) -> None:
    """Two flags that set one thing two ways (:data:`~dpcore.params.CONFLICTS`, by setting name:
    a typed flag's declared parameter, else its destination) are refused together, never one of
    them dropped.  Every subcommand, from the one declaration."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[args.command]
    given: dict[str, str] = {}
    for action in sub._actions:
        if not action.option_strings or action.dest == "help":
            continue
        name = getattr(action.type, "__name__", None)
        value = getattr(args, action.dest, None)
        if _given(args, *action.option_strings) or (value is not None and value != action.default):
            given[name if name in PARAMS else action.dest] = action.option_strings[0]
    check_conflicts(given, "", names=given.get)


#: RunSpec fields a tuning sets, and the flags that name them on the command line
_TUNED_FLAGS = {"iterations": ("--iterations", "-T"), "learning_rate": ("--lr",), "lam": ("--lam",),
                "clip_norm": ("--clip",), "sample_rate": ("--sample-rate",)}


def _cmd_run(args) -> Any:
    own = _user_data(args)
    _refuse_inapplicable(args, own)
    plan_out = None if args.plan_out is None else _check_output(args.plan_out, "--plan-out")
    tuned: dict[str, Any] = {}
    if args.tuned and own is not None:
        raise DPCoreError("--tuned reads a tuning shipped for a registered dataset: none exists for a --csv file "
                          "(tune it with `python -m dpcore tune --csv …`)")
    if args.tuned:
        found = tuned_setting(args.dataset, args.model, args.mechanism, args.epsilon)
        if found is None:
            raise DPCoreError(f"no tuning is shipped for {args.mechanism} on {args.dataset} ({args.model}): "
                              "drop --tuned, or make one with `python -m dpcore tune`")
        explicit = {field for flag, field in _RUN_FLAGS if getattr(args, flag, None) is not None}
        clash = {b for a, b, _ in CONFLICTS if a in explicit} | {a for a, b, _ in CONFLICTS if b in explicit}
        tuned = {k: v for k, v in found[0].items()  # a flag given explicitly wins, with what it conflicts with
                 if not _given(args, *_TUNED_FLAGS.get(k, ())) and k not in clash}
        print(f"tuned at ε = {found[1]:g}: " + setting_text(dict(sorted(tuned.items()))), file=sys.stderr)
    config = RunSpec(
        dataset=args.dataset, model=args.model, mechanism=args.mechanism,
        epsilon=args.epsilon, delta=args.delta, iterations=args.iterations,
        repeats=args.repeats, seed=args.seed, calibration=args.calibration,
        c=1.0 if args.c is None else args.c, noise_scale=args.noise_scale, lam=args.lam, learning_rate=args.lr, batch_size=args.batch,
        sample_rate=args.sample_rate, clip_norm=args.clip, clients=args.clients,
        skew=args.skew, radius=args.radius, n=args.n, d=args.d, noise=args.noise,
        options=_parse_options(args.option + ([f"label_epsilon={args.label_epsilon}"]
                                              if args.label_epsilon is not None else [])),
    )
    if tuned:
        config = with_setting(config, tuned)
    progress = SlowProgress()
    with progress.heartbeat("calibrating the noise and solving the exact reference, then training"):
        result = run(config, shared_context(progress=progress), dataset=own)
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if plan_out is not None:
        _write_plans(plan_out, [(config.label(), result.plan, config.delta)])
    record = result.to_dict()
    if args.json:
        return record

    def eps(v):
        return "∞ (none)" if v is None or v == float("inf") else f"{v:.4g}"

    lines = [
        f"{record['mechanism_name']} on {record['dataset_name']} ({record['model']}), "
        f"n = {record['n_train']}, d = {record['d']}, {record['repeats']} runs",
        f"  ε target {eps(record['epsilon_target'])}   ε certified {eps(record['epsilon_certified'])}"
        f"   ε local {eps(record['epsilon_local'])}   σ = {record['sigma']}",
    ]
    if record.get("diverged_runs") == record["repeats"]:
        lines.append("  every run diverged: no accuracy or gap to report (see the warning above)")
        return "\n".join(lines)
    # the one non-private reference the app draws (the best over the λ grid and this run's λ)
    ref = baseline(config, (), shared_context(progress=SlowProgress()), dataset=own)
    if "accuracy_mean" in record:
        lines.append(f"  accuracy {record['accuracy_mean']:.4f} ± {record['accuracy_std']:.4f}"
                     f"   ({ref.label} {ref.value:.4f}, guessing the majority class"
                     + (f" “{record['guess_class']}”" if record.get("guess_class") else "")
                     + f" {record['accuracy_guess']:.4f})")
    if "rmse_mean" in record:
        lines.append(f"  RMSE {record['rmse_mean']:.4f} ± {record['rmse_std']:.4f}"
                     f"   ({ref.label} {ref.value:.4f}, guessing the mean {record['rmse_guess']:.4f})")
    if ("accuracy_mean" in record and record["accuracy_mean"] <= record["accuracy_guess"]) or \
            ("rmse_mean" in record and record["rmse_mean"] >= record["rmse_guess"]):
        what = (f"always answering “{record['guess_class']}”" if record.get("guess_class")
                else "always answering the majority class" if "accuracy_mean" in record else "always the mean")
        lines.append(f"  no better than guessing ({what}): the noise has drowned what the data says at this ε")
    if record.get("tuned_on_release"):  # what each release chose on its own records
        chosen = record["tuned_on_release"]
        kinds = sorted({c if isinstance(c, str) else setting_text(c) for c in chosen})
        lines.append(f"  settings chosen on each release's own records (free): the guess kept by "
                     f"{record.get('guess_chosen', 0)} of {len(chosen)}; chosen: " + "; ".join(kinds))
    lines.append(f"  gap L(θ) − L* {record['gap_mean']:.3e} ± {record['gap_std']:.3e}"
                 f"   ({record['seconds']:.3f} s)")
    return "\n".join(lines)


def _progress(done: int, total: int, label: str) -> None:
    print(f"[{done}/{total}] {label}", file=sys.stderr, flush=True)


#: a single run reports its progress on standard error once it has lasted this long
QUIET_SECONDS = 2.0


class SlowProgress:
    """A single run's ``progress(done, total, label)`` on standard error, as the app's bar shows it:
    silent for the first :data:`QUIET_SECONDS` (a quick run prints nothing), then at most one line
    a second with the step it is at and the time left (:class:`~dpcore.experiments.progress.TimeLeft`),
    so a minutes-long reference solve or calibration is never a silent wait."""

    def __init__(self, clock=time.perf_counter, stream=None, quiet: float = QUIET_SECONDS):
        self.clock, self.stream, self.quiet = clock, stream, float(quiet)
        self.started, self.last, self.told = clock(), -math.inf, -math.inf
        self.left = TimeLeft(clock)

    def __call__(self, done: int, total: int, label: str) -> None:
        left = self.left.update(done, total)
        now = self.clock()
        self.told = now
        if now - self.started < self.quiet or (now - self.last < 1.0 and done < total):
            return
        self.last = now
        eta = ("done" if done >= total else "estimating the time left" if left is None
               else f"about {duration(left)} left")
        print(f"[{done}/{total}] {label} ({duration(now - self.started)} so far, {eta})",
              file=self.stream or sys.stderr, flush=True)

    @contextlib.contextmanager
    def heartbeat(self, what: str, every: float = 5.0):
        """While the block runs, a line every ``every`` seconds (after :data:`QUIET_SECONDS`) when no
        step has been told for that long: the work before a run's first step (the noise's
        calibration by the accountant, the exact reference's solve) has no step count, but it is
        never a silent wait (issue 43)."""
        stop = threading.Event()

        def beat():
            while not stop.wait(min(every, 1.0)):
                now = self.clock()
                if now - self.started >= self.quiet and now - max(self.told, self.last) >= every:
                    self.last = now
                    print(f"[working] {what} ({duration(now - self.started)} so far)", file=self.stream or sys.stderr,
                          flush=True)

        thread = threading.Thread(target=beat, name="dpcore-heartbeat", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()


def _mechanism_list(text: str | None) -> list[str] | None:
    """``--mechanisms``: comma-separated ids; ``None`` (the flag left out) for the default.  A list
    that names none (``''``, ``',,'``) is refused, never read as "the default"."""
    if text is None:
        return None
    mechs = [m.strip() for m in text.split(",") if m.strip()]
    if not mechs:
        raise DPCoreError(f"--mechanisms names no mechanism (got {text!r}): give comma-separated ids "
                          "(see `dpcore mechanisms`), or leave the flag out for the default ones")
    return mechs


def _all_refused(count: int, noun: str, reasons: Sequence[str]) -> DPCoreError:
    """The one line when every one of ``count`` settings (``noun``: setting, candidate, mechanism)
    was refused: how many, and why (the commonest reason, and how many others there were)."""
    ranked = Counter(reasons).most_common()
    if not ranked:
        return DPCoreError(f"no {noun} to run")
    why = ranked[0][0]
    others = f" (and {len(ranked) - 1} other reason{'s' if len(ranked) > 2 else ''})" if len(ranked) > 1 else ""
    if count == 1:
        return DPCoreError(f"the one {noun} was refused: {why}")
    return DPCoreError(f"all {count} {noun}s were refused{others}: {why}")


def _cmd_tradeoff(args) -> Any:
    mechs = _mechanism_list(args.mechanisms)
    out = tradeoff(args.dataset, args.epsilon, args.delta, model=args.model,
                   iterations=args.iterations, repeats=args.repeats, seed=args.seed,
                   learning_rate=args.lr, mechanisms=mechs, ctx=shared_context(progress=_progress))
    if all("error" in r for r in out["rows"]):
        raise _all_refused(len(out["rows"]), "mechanism", [r["error"] for r in out["rows"]])
    if args.json:
        return out

    e = _eps

    lines = [f"{'mechanism':22} {'ε local':>10} {'ε certified':>12} {'accuracy':>9} {'gap':>10}"]
    for r in out["rows"]:
        if "error" in r:
            lines.append(f"{r['mechanism']:22} error: {r['error']}")
            continue
        acc_v = r.get("accuracy_mean")
        lines.append(f"{r['mechanism']:22} {e(r['epsilon_local']):>10} {e(r['epsilon_certified']):>12} "
                     f"{(acc_v if acc_v is not None else float('nan')):9.4f} {r['gap_mean']:10.3e}")
    return "\n".join(lines)


def _cmd_bounds(args) -> Any:
    out = bounds_report(args.dataset, args.model, args.epsilon, args.delta, args.iterations,
                        args.clients, args.skew, args.lam, learning_rate=args.lr)
    if args.json:
        return out

    def g(v):
        return "—" if v is None else f"{v:.3g}"

    lines = [f"{'row':28} {'noise':>10} {'risk':>10}  exactness"]
    for r in out["rows"]:
        lines.append(f"{r['id']:28} {g(r.get('noise')):>10} {g(r.get('risk')):>10}  {r['exactness']}")
    return "\n".join(lines)


def _write_plans(path: Path, items) -> None:
    """Write (label, plan, δ) items as dp-accounting events (:func:`~dpcore.privacy.dp_events_list`);
    a plan the run has not (``None``) is refused in one line, never written empty."""
    missing = [label for label, plan, _ in items if plan is None]
    if missing:
        raise DPCoreError(f"--plan-out: no noise plan to export for {missing[0]} (its mechanism declares none)")
    doc = dp_events_list(items)
    with _writing("--plan-out", path):
        path.write_text(dumps(doc, indent=1) + "\n")


def _eps(v) -> str:
    """An ε for a text line: ∞ for none (``None`` in JSON), else 3 significant digits."""
    return "∞" if v is None or v == float("inf") else f"{v:.3g}"


def _audit_config(args) -> RunSpec:
    """The run an audit (many runs or one) makes of the command line's settings."""
    return RunSpec(dataset=args.dataset, model=args.model, mechanism=args.mechanism, epsilon=args.epsilon,
                   delta=args.delta, iterations=args.iterations, calibration=args.calibration, c=args.c,
                   lam=args.lam, learning_rate=args.lr, seed=args.seed, repeats=1,
                   noise_scale=args.noise_scale, clip_norm=args.clip)


def _cmd_audit(args) -> Any:
    own = _user_data(args)
    cls = REGISTRY.get(args.mechanism)
    if cls is not None and args.clip is not None and "clip_norm" not in cls.settings:
        raise DPCoreError(f"--clip does not apply to {cls.id}: it clips nothing")
    if args.one_run:
        return _one_run(args, own)
    if args.canaries is not None:
        raise DPCoreError("--canaries counts the canaries of a one-run audit: add --one-run")
    res = audit(_audit_config(args), args.trials, alpha=args.alpha, canary=args.canary, threat=args.threat,
                end_to_end=args.end_to_end, dataset=own,
                progress=lambda done, total: print(f"[{done}/{total}] runs", file=sys.stderr, flush=True))
    rec = res.to_dict(scores=False)
    if args.json:
        return rec

    e = _eps

    lines = [f"ε target {e(rec['epsilon_target'])}   ε certified {e(rec['epsilon_certified'])}   "
             f"ε audited (lower bound, {rec['threat']}, confidence {rec['confidence']:g}) "
             f"{e(rec['epsilon_lower_bound'])}   verdict: {rec['verdict']}",
             audit_summary(rec)]
    if rec["epsilon_attack_ceiling"] is not None and rec["epsilon_certified"] is not None and (
            rec["epsilon_attack_ceiling"] < 0.99 * rec["epsilon_certified"]):
        lines.append(f"the attack's own ceiling: ε {e(rec['epsilon_attack_ceiling'])} (what the releases it "
                     "sees can show; the rest of the certified ε is the proof's slack)")
    sc = rec.get("shift_check")
    if sc is not None:
        lines.append(f"end-to-end: the real record moved {sc['what']} by {sc['measured']:.6g} (declared "
                     f"{sc['declared']:.6g}{', reached' if sc['reached'] else ''})"
                     + (f"; sampled in {sc['included']} of {sc['runs']} first steps (declared q = "
                        f"{sc['sample_rate']:.4g})" if sc["included"] is not None else "")
                     + "".join(f"; FOUND: {f}" for f in sc["findings"]))
    for est in rec["estimates"]:
        use = "" if est["headline"] else "  [labelled only: not part of the audited ε]"
        lines.append(f"  {est['name']:17} ε ≥ {e(est['epsilon'])} at α = {est['alpha']:.3g}: {est['detail']}{use}")
        lines.append(f"  {'':17} assumes {est['assumption']}")
    return "\n".join(lines)


def _one_run(args, own=None) -> Any:
    for flags in (("--trials",), ("--threat",), ("--canary",), ("--end-to-end",)):
        if _given(args, *flags):
            raise DPCoreError(f"{flags[0]} does not apply to --one-run (one training run carries every canary)")
    res = one_run_audit(_audit_config(args), 1000 if args.canaries is None else args.canaries, alpha=args.alpha,
                        dataset=own)
    rec = res.to_dict()
    if args.json:
        return rec

    e = _eps

    lines = [f"one run, {rec['canaries']} canaries ({rec['included']} in): ε target {e(rec['epsilon_target'])}   "
             f"ε certified {e(rec['epsilon_certified'])}   ε audited (lower bound, confidence "
             f"{rec['confidence']:g}) {e(rec['epsilon_lower_bound'])}   from {rec['correct']} of "
             f"{rec['guesses']} guesses right"]
    lines += [f"note: {n}" for n in rec["notes"]]
    return "\n".join(lines)


def _cmd_sweep(args) -> Any:
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
    for path, folder in _sweep_outputs(preset, args):
        _check_output(path, "--out", folder=folder)
    with _writing("--out", args.out):
        rec = run_preset(preset, args.out, quick=args.quick, repeats=args.repeats, max_n=args.max_n,
                         calibration=args.calibration, workers=args.workers, scheduler=args.scheduler,
                         progress=_progress, command=_command(args.argv))
    failed = len(rec.get("failed_tasks", []))
    if rec["tasks"] and failed == rec["tasks"]:
        raise _all_refused(rec["tasks"], "setting", rec["errors"])
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


def _sweep_outputs(preset, args) -> list[tuple[str, bool]]:
    """What a sweep writes in ``--out`` (:func:`~dpcore.experiments.presets.run_preset`'s names:
    the folder, its result cache, ``<id>[-quick][-<calibration>].csv/.html/.json``), as (path,
    is a folder); tests/test_cli_outputs.py checks these against the record's ``outputs``."""
    root = Path(args.out) if args.out.strip() and "\x00" not in args.out else None
    if root is None:
        return [(args.out, True)]
    stem = preset.id + ("-quick" if args.quick else "") + (f"-{args.calibration}" if args.calibration else "")
    return [(args.out, True), (str(root / "cache"), True),
            *((str(root / f"{stem}{ext}"), False) for ext in (".csv", ".html", ".json", "-plans.json"))]


def _check_output(path: str, what: str, *, folder: bool = False) -> Path:
    """Before any work: that ``path`` can take the output ``what`` names, a file or (``folder``) a
    folder.  A missing folder is made with its parents, as the write would; a file must not be a
    folder, must not lie under a file, and is opened for appending (and removed again if this
    made it); a folder must take a file.  Refused in one line (exit 2), not after the work."""
    kind = "folder" if folder else "file"
    if not path.strip() or "\x00" in path:
        raise DPCoreError(f"{what} needs a {kind} path, got {path!r}")
    target = Path(path)
    try:
        if folder and target.exists() and not target.is_dir():
            raise DPCoreError(f"{what} {path!r} is a file, not a folder")
        if not folder and target.is_dir():
            raise DPCoreError(f"{what} {path!r} is a folder: name a file to write")
        home = target if folder else target.parent
        above = next((q for q in (home, *home.parents) if q.exists()), None)
        if above is not None and not above.is_dir():
            raise DPCoreError(f"{what} {path!r} lies under {str(above)!r}, a file, not a folder")
        home.mkdir(parents=True, exist_ok=True)
        if folder:
            with tempfile.NamedTemporaryFile(dir=target, prefix=".dpcore-check-"):
                pass
        else:
            existed = target.exists()
            with open(target, "a"):
                pass
            if not existed:
                target.unlink()
    except OSError as exc:
        raise DPCoreError(f"{what} {path!r} cannot be written: {exc.strerror or exc}") from None
    return target


class _writing:
    """Turns an I/O error while writing ``what`` (``path``) into one line (exit 2): a full disk, a
    device that takes nothing (``/dev/full``), a folder that went away."""

    def __init__(self, what: str, path: Any):
        self.what, self.path = what, path

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is not None and isinstance(exc, OSError) and not isinstance(exc, (BrokenPipeError, TimeoutError)):
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            raise DPCoreError(f"could not write {self.what} {str(self.path)!r}: {exc.strerror or exc}{where}") from None
        return False


def _command(argv: Sequence[str]) -> str:
    """The command line that made a record, with the budget variables it ran under (a
    larger ``DPCORE_WORK_BUDGET`` lets a sweep compute what the default refuses)."""
    env = [f"{k}={os.environ[k]}" for k in ("DPCORE_MEMORY_BUDGET", "DPCORE_WORK_BUDGET") if k in os.environ]
    return shlex.join(env + ["python", "-m", "dpcore", *argv])


def _cmd_tune(args) -> Any:
    own = _user_data(args)
    mechs = _mechanism_list(args.mechanisms)
    if mechs is None:
        mechs = [m for m in DEFAULT_MECHANISMS if args.model in REGISTRY[m].models]
    epsilons = parse_grid("epsilon", args.epsilons, "--epsilons", 12)
    out = None if args.out is None else _check_output(args.out, "--out")
    plan_out = None if args.plan_out is None else _check_output(args.plan_out, "--plan-out")
    started = time.time()
    result = tune(args.dataset if own is None else own, mechs, epsilons, args.delta, model=args.model, repeats=args.repeats,
                  final_repeats=args.final_repeats, seed=args.seed, validation_fraction=args.validation_fraction,
                  selection_epsilon=args.selection_epsilon, ctx=shared_context(progress=_progress))
    record = {**result.to_dict(), "command": _command(args.argv),
              "seconds": round(time.time() - started, 1), "date": time.strftime("%Y-%m-%d"),
              "environment": environment()}
    refused = [e["error"] for e in result.errors] + [r["error"] for r in result.rows + result.released_rows
                                                      if "error" in r]
    if not any("error" not in r for r in result.rows + result.released_rows):
        raise _all_refused(len(refused), "candidate", refused)
    if out is not None:
        with _writing("--out", out):
            out.write_text(dumps(record, indent=1) + "\n")
            shipped.record([out])  # a tuning shipped into the data folder: listed in the manifest
    if plan_out is not None and not result.plans:
        raise DPCoreError("--plan-out: no search ran (input and local perturbation choose on their own releases, "
                          "for free: their plan is the run's, `run --plan-out` writes it)")
    if plan_out is not None:
        _write_plans(plan_out, [(f"tuning {mech} on {result.dataset} ({result.model}) at ε = {eps:g}: the whole "
                                 "search", plan, delta) for (mech, eps), (plan, delta) in result.plans.items()])
    if args.json:
        return record

    e = _eps
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
            lines.append(f"{r['mechanism']:16} {_eps(r['epsilon']):>6} error: {r['error']}")
            continue
        lines.append(f"{r['mechanism']:16} {_eps(r['epsilon']):>6} {r[f'untuned_test_{metric}']:8.4f} "
                     f"{r[f'test_{metric}']:8.4f} {r[f'{metric}_guess']:7.4f} {r[f'{metric}_nonprivate']:8.4f} "
                     f"{_eps(r['epsilon_spent']):>8}  {r['guess_chosen']} of {r['repeats']}")
    lines.append(f"{metric}: mean of the releases on the test split; guess: always the majority class"
                 if metric == "accuracy" else f"{metric}: mean of the releases on the test split; guess: always the mean")
    return lines


def _cmd_prepare(args) -> Any:
    """Fill the app's cache folder (``DPCORE_CACHE_DIR``) with what a class will open first
    (:func:`~dpcore.experiments.studies.prepare_for_class`, then every step of the lesson:
    :func:`~dpcore.lesson.prepare_lesson`); a second call finds everything and
    returns at once.  ``--ship`` also recomputes Compare's shipped classroom rows and (unless
    ``--no-mlp``) the shipped exact references (:func:`~dpcore.experiments.studies.ship_references`)."""
    what = "the cache folder" + (" (DPCORE_CACHE_DIR)" if os.environ.get("DPCORE_CACHE_DIR") else "")
    for sub in ("", "erm", "results"):
        _check_output(str(cache_dir() / sub), what, folder=True)
    if args.ship:  # the shipped files of the repository
        _check_output(str(CLASSROOM_FILE), "--ship")
        if not args.no_mlp:
            _check_output(str(SHIPPED_REFERENCES), "--ship", folder=True)
    started = time.time()
    ctx = shared_context(progress=_progress, workers=None, results_dir=cache_dir() / "results")

    def tell(what: str, seconds: float) -> None:
        print(f"  {what}: {seconds} s", file=sys.stderr, flush=True)

    # the shipped references first, so that the app's cache below reads them instead of solving again
    done = ship_references(progress=_progress) if args.ship and not args.no_mlp else []
    for part in done:
        tell(part["what"], part["seconds"])
    done += prepare_for_class(ctx, mlp=not args.no_mlp, tell=tell)
    done += prepare_lesson(ctx, tell=tell)  # every step of the lesson, so each opens at once
    if args.ship:  # computed afresh (no result cache), so the record's time is the computation's
        shipped = ship_classroom_compare(shared_context(progress=_progress, workers=None))
        done.append({"what": f"Compare's first preset, computed afresh into {CLASSROOM_FILE}",
                     "seconds": shipped["wall_seconds"]})
    record = {"cache": str(cache_dir()), "prepared": done, "seconds": round(time.time() - started, 1)}
    if args.json:
        return record
    return "\n".join([f"prepared in {record['seconds']} s, in {record['cache']}:"]
                     + [f"  {d['what']}: {d['seconds']} s" for d in done])


def _cmd_certify(args) -> Any:
    """``certify``: :func:`dpcore.certify.certify` on the flags given (unset ones at its defaults), or
    with ``--plan`` :func:`dpcore.certify.certify_plans` on an exported noise plan."""
    given = {k: getattr(args, k) for k in ("noise_multiplier", "sample_rate", "batch_size", "dataset_size", "steps",
                                          "epochs", "sigma", "sensitivity", "compositions", "target_epsilon")
             if getattr(args, k) is not None}
    own = _user_data(args)
    if args.dataset is not None and own is None:
        get_spec(args.dataset)  # an unknown id is refused before the certificate is computed
    if args.plan is not None:
        if args.dataset is not None:
            raise DPCoreError("--dataset and --csv train the mechanisms at a described run's ε: drop them with --plan")
        return _certify_plan_file(args, given)
    delta = CERTIFY_PARAMS["delta"].default if args.delta is None else args.delta
    cert = certify_run(mechanism=args.mechanism, accountant=args.accountant, sampling=args.sampling,
                       delta=delta, full_curve=args.json, **given)
    reach = None if args.dataset is None else _reached(cert.replace_one, delta, args.dataset, own)
    if args.json:
        return {**cert.to_dict(), **({} if reach is None else {"mechanisms_at_this_epsilon": reach})}
    return str(cert) + ("" if reach is None else "\n" + _reached_lines(reach))


def _reached(epsilon: float, delta: float, dataset: str, own) -> dict:
    """This app's central mechanisms (:data:`~dpcore.experiments.tune.DEFAULT_MECHANISMS`) trained on
    ``dataset`` at the certificate's replace-one ε (the relation they certify): the tradeoff rows."""
    if not (math.isfinite(epsilon) and PARAMS["epsilon"].constraint.contains(epsilon)):
        raise DPCoreError(f"the certified replace-one ε is {_eps(epsilon)}: outside the ε a mechanism here can be "
                          f"asked for ({PARAMS['epsilon'].constraint.describe()}); drop --dataset/--csv")
    task = own.task if own is not None else get_spec(dataset).task
    model = "logreg" if task == "classification" else "linreg"
    mechs = [m for m in DEFAULT_MECHANISMS if model in REGISTRY[m].models]
    out = tradeoff(dataset, float(epsilon), delta, model=model, mechanisms=mechs, curve_mechanism=None,
                   data=own, ctx=shared_context(progress=SlowProgress()))
    if all("error" in r for r in out["rows"]):
        raise _all_refused(len(out["rows"]), "mechanism", [r["error"] for r in out["rows"]])
    return out


def _reached_lines(out: dict) -> str:
    metric = "accuracy" if any(r.get("accuracy_mean") is not None for r in out["rows"]) else "rmse"
    lines = [f"at this guarantee (replace-one ε = {out['epsilon']:.4g}, δ = {out['delta']:g}) on {out['dataset']} "
             f"({out['model']}, T = {out['iterations']}, {out['repeats']} runs each):",
             f"  {'mechanism':22} {'ε certified':>12} {metric:>9}"]
    for r in out["rows"]:
        if "error" in r:
            lines.append(f"  {r['mechanism']:22} refused: {r['error']}")
            continue
        value = r.get(f"{metric}_mean")
        lines.append(f"  {r['mechanism']:22} {_eps(r['epsilon_certified']):>12} "
                     f"{(value if value is not None else float('nan')):9.4f}")
    return "\n".join(lines)


#: the largest plan file ``certify --plan`` reads (a sweep of thousands of rows is a few MB)
MAX_PLAN_BYTES = 64 * 2**20


def _certify_plan_file(args, given: dict) -> Any:
    described = sorted(given) + [k for k in ("mechanism", "accountant", "sampling") if _given(args, "--" + k)]
    if described:
        raise DPCoreError(f"--plan certifies the plan the file holds: drop --{described[0].replace('_', '-')}")
    raw = _read_input("--plan", args.plan, MAX_PLAN_BYTES, "not a plan file")
    try:
        document = json.loads(raw.decode("utf-8-sig"), parse_constant=_not_json)  # a BOM an editor added: read
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DPCoreError(f"--plan {args.plan!r} is not JSON: {str(exc).splitlines()[0] if str(exc) else exc}") from None
    prepared = prepare_plans(document, args.delta, full_curve=args.json)  # refuses here, or not at all
    progress = SlowProgress()
    with progress.heartbeat("certifying the plans"):
        certs = prepared.certify(progress)
    if args.json:
        return [c.to_dict() for c in certs] if len(certs) > 1 else certs[0].to_dict()
    return "\n".join(str(c) for c in certs)


def _not_json(token: str):
    """Strict JSON: ``NaN``, ``Infinity`` and ``-Infinity`` are Python's, not JSON's (this package writes
    ``null`` for an ε with no guarantee)."""
    raise ValueError(f"it holds {token}, which strict JSON has not (a number, or null)")


COMMANDS = {"prepare": _cmd_prepare, "tune": _cmd_tune, "sweep": _cmd_sweep, "datasets": _cmd_datasets, "mechanisms": _cmd_mechanisms, "run": _cmd_run,
            "tradeoff": _cmd_tradeoff, "bounds": _cmd_bounds, "audit": _cmd_audit, "certify": _cmd_certify}


#: an error line longer than this has its long echoed values (over 40 characters) cut to their ends
MAX_ERROR_CHARS = 300
#: and is never longer than this (lists of choices are grouped to fit: exceptions.unknown_choice)
MAX_LINE_CHARS = 300


def _one_line(message: str) -> str:
    """One line: a long echoed value (a 400-digit number) keeps only its ends, so what the user
    typed never drowns what to change."""
    text = " ".join(message.split())
    if len(text) > MAX_ERROR_CHARS:
        text = re.sub(r"\S{41,}", lambda m: f"{m.group(0)[:16]}…{m.group(0)[-8:]} ({len(m.group(0))} characters)",
                      text)
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS - 1] + "…"


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stdout is None:  # started with stdout closed (`>&-`): every answer would be lost
        print("dpcore: error: standard output is closed: nothing could be printed", file=sys.stderr)
        return 2
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        args.argv = list(sys.argv[1:] if argv is None else argv)  # the command, for provenance
        _refuse_conflicts(parser, args)
        out = COMMANDS[args.command](args)
        for note in getattr(args, "notes", ()):  # not errors: the command succeeded (exit 0)
            print(_one_line(f"note: {note}"), file=sys.stderr)
    except ParserExit as exc:
        print(_one_line(str(exc)), file=sys.stderr)
        return exc.code
    except DPCoreError as exc:
        print(_one_line(f"dpcore: error: {exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dpcore: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except Exception as exc:  # a bug, not bad input: still one line unless debugging
        if os.environ.get("DPCORE_DEBUG"):
            raise
        print(_one_line(f"dpcore: internal error ({type(exc).__name__}): {exc}; "
                        "set DPCORE_DEBUG=1 for the traceback"), file=sys.stderr)
        return 1
    try:
        print(out if isinstance(out, str) else dumps(out, indent=None))
        sys.stdout.flush()  # a full disk shows here, not at exit after the code is returned
    except BrokenPipeError:  # e.g. piped into `head`, which has what it wanted: quiet
        _drop_stdout()
        return BROKEN_PIPE
    except OSError as exc:  # /dev/full, a full disk
        _drop_stdout()
        print(_one_line(f"dpcore: error: could not write to standard output: {exc.strerror or exc}"),
              file=sys.stderr)
        return 2
    return 0


#: exit code after a broken pipe: what a shell reports for a program killed by SIGPIPE (128 + 13)
BROKEN_PIPE = 141


def _drop_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's flush at exit does not meet
    the same error again (and print it) after the one line was said."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's StringIO)
        pass
