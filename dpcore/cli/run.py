"""The command line's single-run commands (:mod:`dpcore.cli.commands`): ``datasets``, ``mechanisms``,
``run``, ``tradeoff`` and ``bounds``."""

from __future__ import annotations

import json
import sys
from typing import Any

from .common import (SlowProgress, all_refused, check_output, eps_text, flag_given, mechanism_list,
                         print_progress, user_data, write_plans)
from ..datasets import get_spec, list_datasets
from ..exceptions import DPCoreError
from ..experiments.baselines import baseline
from ..experiments.context import shared_context
from ..experiments.run import RunSpec, run
from ..experiments.studies import tradeoff
from ..experiments.tune import setting_text, tuned_setting, with_setting
from ..figures.result import noise_words, r_squared_words, reference_terms, versus_guessing
from ..mechanisms import REGISTRY
from ..params import CONFLICTS
from ..theory.catalog import bounds_report

__all__ = ["cmd_datasets", "cmd_mechanisms", "cmd_run", "cmd_tradeoff", "cmd_bounds"]


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


def cmd_datasets(args) -> Any:
    rows = [s.summary() for s in list_datasets()]
    if args.json:
        return rows
    lines = [f"{'id':26} {'n_train':>8} {'d':>5}  name"]
    for r in rows:
        n = "any" if r["synthetic"] else r["n_train"]
        d = "any" if r["synthetic"] else r["d"]
        lines.append(f"{r['id']:26} {n!s:>8} {d!s:>5}  {r['name']}")
    return "\n".join(lines)


def cmd_mechanisms(args) -> Any:
    rows = [cls.metadata() for cls in REGISTRY.values()]
    if args.json:
        return rows
    lines = [f"{'id':24} {'family':12} {'notion':8} models"]
    for r in rows:
        lines.append(f"{r['id']:24} {r['family']:12} {r['privacy_notion']:8} {', '.join(r['models'])}")
    return "\n".join(lines)


_RUN_FLAGS = (("clients", "clients"), ("skew", "skew"), ("batch", "batch_size"),
              ("sample_rate", "sample_rate"), ("clip", "clip_norm"))


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
            if flag_given(args, flag):
                raise DPCoreError(f"{flag} does not apply to {cls.id}: it adds no noise")
    if cls is not None and not cls.iterative:
        for flags in (("--iterations", "-T"), ("--lr",)):
            if flag_given(args, *flags):
                raise DPCoreError(f"{flags[0]} does not apply to {cls.id}: it does not iterate")
    if args.skew is not None and args.clients == 1:
        raise DPCoreError("--skew needs at least 2 clients: with --clients 1 there is nothing to skew")


#: RunSpec fields a tuning sets, and the flags that name them on the command line
_TUNED_FLAGS = {"iterations": ("--iterations", "-T"), "learning_rate": ("--lr",), "lam": ("--lam",),
                "clip_norm": ("--clip",), "sample_rate": ("--sample-rate",)}


def cmd_run(args) -> Any:
    own = user_data(args)
    _refuse_inapplicable(args, own)
    plan_out = None if args.plan_out is None else check_output(args.plan_out, "--plan-out")
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
                 if not flag_given(args, *_TUNED_FLAGS.get(k, ())) and k not in clash}
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
    with progress.heartbeat("calibrating the noise and solving the non-private reference, then training"):
        result = run(config, ctx=shared_context(progress=progress), dataset=own)
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if plan_out is not None:
        write_plans(plan_out, [(config.label(), result.plan, config.delta)])
    record = result.to_dict()
    if args.json:
        return record

    def eps(v):
        return "∞ (none)" if v is None or v == float("inf") else f"{v:.4g}"

    lines = [
        f"{record['mechanism_name']} on {record['dataset_name']} ({record['model']}), "
        f"n = {record['n_train']}, d = {record['d']}, {record['repeats']} runs",
        f"  ε target {eps(record['epsilon_target'])}   ε certified {eps(record['epsilon_certified'])}"
        f"   ε local {eps(record['epsilon_local'])}   " + noise_words(record),
    ]
    if record.get("diverged_runs") == record["repeats"]:
        lines.append("  every run diverged: no accuracy or gap to report (see the warning above)")
        return "\n".join(lines)
    # the one non-private reference the app draws (the best over the λ grid and this run's λ)
    ref = baseline(config, lams=(), ctx=shared_context(progress=SlowProgress()), dataset=own)
    if "accuracy_mean" in record:
        lines.append(f"  accuracy {record['accuracy_mean']:.4f} ± {record['accuracy_std']:.4f}"
                     f"   ({ref.label} {ref.value:.4f}, guessing the majority class"
                     + (f" “{record['guess_class']}”" if record.get("guess_class") else "")
                     + f" {record['accuracy_guess']:.4f})")
    if "rmse_mean" in record:
        lines.append(f"  RMSE {record['rmse_mean']:.4f} ± {record['rmse_std']:.4f}"
                     f"   {r_squared_words(record['rmse_mean'], record['rmse_guess'])}"
                     f"   ({ref.label} {ref.value:.4f}, "
                     f"{r_squared_words(ref.value, record['rmse_guess'], 'non-private model')}; "
                     f"predicting the training mean {record['rmse_guess']:.4f})")
    versus = versus_guessing(record)  # the rule every view applies (dpcore.figures.result)
    if versus is not None and versus.no_better:
        lines.append(f"  {versus.sentence()} The noise has drowned what the data says at this ε.")
    if record.get("tuned_on_release"):  # what each release chose on its own records
        chosen = record["tuned_on_release"]
        kinds = sorted({c if isinstance(c, str) else setting_text(c) for c in chosen})
        lines.append(f"  settings chosen on each release's own records (free): the guess kept by "
                     f"{record.get('guess_chosen', 0)} of {len(chosen)}; chosen: " + "; ".join(kinds))
    lines.append(f"  {reference_terms(record.get('model')).gap_label} {record['gap_mean']:.3e} ± {record['gap_std']:.3e}"
                 f"   ({record['seconds']:.3f} s)")
    return "\n".join(lines)


def cmd_tradeoff(args) -> Any:
    mechs = mechanism_list(args.mechanisms)
    out = tradeoff(args.dataset, args.epsilon, args.delta, model=args.model,
                   iterations=args.iterations, repeats=args.repeats, seed=args.seed,
                   learning_rate=args.lr, mechanisms=mechs, ctx=shared_context(progress=print_progress))
    if all("error" in r for r in out["rows"]):
        raise all_refused(len(out["rows"]), "mechanism", [r["error"] for r in out["rows"]])
    if args.json:
        return out

    e = eps_text

    lines = [f"{'mechanism':22} {'ε local':>10} {'ε certified':>12} {'accuracy':>9} {'gap':>10}"]
    for r in out["rows"]:
        if "error" in r:
            lines.append(f"{r['mechanism']:22} error: {r['error']}")
            continue
        acc_v = r.get("accuracy_mean")
        lines.append(f"{r['mechanism']:22} {e(r['epsilon_local']):>10} {e(r['epsilon_certified']):>12} "
                     f"{(acc_v if acc_v is not None else float('nan')):9.4f} {r['gap_mean']:10.3e}")
    return "\n".join(lines)


def cmd_bounds(args) -> Any:
    out = bounds_report(args.dataset, args.model, args.epsilon, args.delta, args.iterations,
                        args.clients, args.skew, args.lam, learning_rate=args.lr, registered=REGISTRY)
    if args.json:
        return out

    def g(v):
        return "—" if v is None else f"{v:.3g}"

    lines = [f"{'row':28} {'noise':>10} {'risk':>10}  exactness"]
    for r in out["rows"]:
        lines.append(f"{r['id']:28} {g(r.get('noise')):>10} {g(r.get('risk')):>10}  {r['exactness']}")
    return "\n".join(lines)
