"""The command line's ``certify`` (:mod:`dpcore.cli.commands`): the certificate of a noise setting, or
with ``--plan`` of an exported noise plan, and with ``--dataset``/``--csv`` what the central
mechanisms reach at its ε."""

from __future__ import annotations

import json
import math
from typing import Any

from ..certify.core import CERTIFY_PARAMS, certify_noise
from ..certify.plans import prepare_plans
from .common import SlowProgress, all_refused, eps_text, flag_given, read_input, user_data
from ..datasets import get_spec
from ..exceptions import DPCoreError
from ..experiments.context import shared_context
from ..experiments.studies import tradeoff
from ..experiments.tune import DEFAULT_MECHANISMS
from ..mechanisms import REGISTRY
from ..params import PARAMS

__all__ = ["cmd_certify", "MAX_PLAN_BYTES"]


def cmd_certify(args) -> Any:
    """``certify``: :func:`dpcore.certify.core.certify_noise` on the flags given (unset ones at its defaults), or
    with ``--plan`` :func:`dpcore.certify.core.certify_plans` on an exported noise plan."""
    given = {k: getattr(args, k) for k in ("noise_multiplier", "sample_rate", "batch_size", "dataset_size", "steps",
                                          "epochs", "sigma", "sensitivity", "compositions", "target_epsilon")
             if getattr(args, k) is not None}
    own = user_data(args)
    if args.dataset is not None and own is None:
        get_spec(args.dataset)  # an unknown id is refused before the certificate is computed
    if args.plan is not None:
        if args.dataset is not None:
            raise DPCoreError("--dataset and --csv train the mechanisms at a described run's ε: drop them with --plan")
        return _certify_plan_file(args, given)
    delta = CERTIFY_PARAMS["delta"].default if args.delta is None else args.delta
    cert = certify_noise(mechanism=args.mechanism, accountant=args.accountant, sampling=args.sampling,
                        delta=delta, full_curve=args.json, **given)
    reach = None if args.dataset is None else _reached(cert.replace_one, delta, args.dataset, own)
    if args.json:
        return {**cert.to_dict(), **({} if reach is None else {"mechanisms_at_this_epsilon": reach})}
    return str(cert) + ("" if reach is None else "\n" + _reached_lines(reach))


def _reached(epsilon: float, delta: float, dataset: str, own) -> dict:
    """This app's central mechanisms (:data:`~dpcore.experiments.tune.DEFAULT_MECHANISMS`) trained on
    ``dataset`` at the certificate's replace-one ε (the relation they certify): the tradeoff rows."""
    if not (math.isfinite(epsilon) and PARAMS["epsilon"].constraint.contains(epsilon)):
        raise DPCoreError(f"the certified replace-one ε is {eps_text(epsilon)}: outside the ε a mechanism here can be "
                          f"asked for ({PARAMS['epsilon'].constraint.describe()}); drop --dataset/--csv")
    task = own.task if own is not None else get_spec(dataset).task
    model = "logreg" if task == "classification" else "linreg"
    mechs = [m for m in DEFAULT_MECHANISMS if model in REGISTRY[m].models]
    out = tradeoff(dataset, float(epsilon), delta, model=model, mechanisms=mechs, curve_mechanism=None,
                   data=own, ctx=shared_context(progress=SlowProgress()))
    if all("error" in r for r in out["rows"]):
        raise all_refused(len(out["rows"]), "mechanism", [r["error"] for r in out["rows"]])
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
        lines.append(f"  {r['mechanism']:22} {eps_text(r['epsilon_certified']):>12} "
                     f"{(value if value is not None else float('nan')):9.4f}")
    return "\n".join(lines)


#: the largest plan file ``certify --plan`` reads (a sweep of thousands of rows is a few MB)
MAX_PLAN_BYTES = 64 * 2**20


def _certify_plan_file(args, given: dict) -> Any:
    described = sorted(given) + [k for k in ("mechanism", "accountant", "sampling") if flag_given(args, "--" + k)]
    if described:
        raise DPCoreError(f"--plan certifies the plan the file holds: drop --{described[0].replace('_', '-')}")
    raw = read_input("--plan", args.plan, MAX_PLAN_BYTES, "not a plan file")
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
