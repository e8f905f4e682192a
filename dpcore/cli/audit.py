"""The command line's ``audit`` (:mod:`dpcore.cli.commands`): many training runs, or with ``--one-run``
one run carrying every canary."""

from __future__ import annotations

import sys
from typing import Any

from ..audit import one_run_audit, run_audit
from ..audit import basis_words
from ..audit import summary as audit_summary
from .common import eps_text, flag_given, user_data
from ..exceptions import DPCoreError
from ..experiments.run import RunSpec
from ..mechanisms import REGISTRY

__all__ = ["cmd_audit"]


def _audit_config(args) -> RunSpec:
    """The run an audit (many runs or one) makes of the command line's settings."""
    return RunSpec(dataset=args.dataset, model=args.model, mechanism=args.mechanism, epsilon=args.epsilon,
                   delta=args.delta, iterations=args.iterations, calibration=args.calibration, c=args.c,
                   lam=args.lam, learning_rate=args.lr, seed=args.seed, repeats=1,
                   noise_scale=args.noise_scale, clip_norm=args.clip)


def cmd_audit(args) -> Any:
    own = user_data(args)
    cls = REGISTRY.get(args.mechanism)
    if cls is not None and args.clip is not None and "clip_norm" not in cls.settings:
        raise DPCoreError(f"--clip does not apply to {cls.id}: it clips nothing")
    if args.one_run:
        return _one_run(args, own)
    if args.canaries is not None:
        raise DPCoreError("--canaries counts the canaries of a one-run audit: add --one-run")
    res = run_audit(_audit_config(args), trials=args.trials, alpha=args.alpha, canary=args.canary,
                    threat=args.threat, end_to_end=args.end_to_end, dataset=own, confirm=args.confirm,
                    progress=lambda done, total: print(f"[{done}/{total}] runs", file=sys.stderr, flush=True))
    rec = res.to_dict(scores=False)
    if args.json:
        return rec

    e = eps_text

    lines = [f"ε target {e(rec['epsilon_target'])}   ε certified {e(rec['epsilon_certified'])}   "
             f"ε audited (lower bound, {rec['threat']}, confidence {rec['confidence']:g}) "
             f"{e(rec['epsilon_lower_bound'])}   verdict: {rec['verdict']}",
             audit_summary(rec), f"what the audited ε rests on: {basis_words(rec)}"]
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
    for flags in (("--trials",), ("--threat",), ("--canary",), ("--end-to-end",), ("--no-confirm",)):
        if flag_given(args, *flags):
            raise DPCoreError(f"{flags[0]} does not apply to --one-run (one training run carries every canary)")
    res = one_run_audit(_audit_config(args), 1000 if args.canaries is None else args.canaries, alpha=args.alpha,
                        dataset=own)
    rec = res.to_dict()
    if args.json:
        return rec

    e = eps_text

    lines = [f"one run, {rec['canaries']} canaries ({rec['included']} in): ε target {e(rec['epsilon_target'])}   "
             f"ε certified {e(rec['epsilon_certified'])}   ε audited (lower bound, confidence "
             f"{rec['confidence']:g}) {e(rec['epsilon_lower_bound'])}   from {rec['correct']} of "
             f"{rec['guesses']} guesses right"]
    lines += [f"note: {n}" for n in rec["notes"]]
    return "\n".join(lines)
