"""Each view's declaration for its export (:mod:`dpcore.figures_export`): its link keys with their defaults (the
page's ``URL_KEYS``: the tests check them equal), the variable each becomes in the code, and its
steps, each a sentence for the reader and valid Python calling the same dpcore function as the page.

A step's code reads the settings' variables (the cell of settings defines them) and ``show(fig,
name)`` (the export's own: a chart drawn in the notebook, written to an HTML file by the script).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping
from urllib.parse import urlencode

from .exceptions import DPCoreError, unknown_choice
from .experiments.tune import DEFAULT_MECHANISMS, setting_text, tuned_setting
from .params import parse_grid
from .experiments.presets_views import (audit_spec, compare_setting, distributed_spec,
                                       explore_options, explore_spec, option_default_of, tradeoff_mechanisms)
from .experiments.presets import PRESETS, shipped_ids
from .partition import client_sizes
from .theory.catalog import bounds_report
from .datasets import DATASETS
from . import lesson
from .experiments.run import RunSpec
from .mechanisms import REGISTRY
from .params import PARAMS

__all__ = ["Prepared", "VIEWS", "ViewExport", "certify_arguments", "url_text", "url_value"]


def url_value(raw: str, default: Any) -> Any:
    """A link's text as a value of ``default``'s type (a list: comma-separated items); raises
    ValueError when it does not parse."""
    if isinstance(default, bool):
        low = raw.strip().lower()
        if low not in ("1", "true", "yes", "0", "false", "no"):
            raise ValueError(raw)
        return low in ("1", "true", "yes")
    if isinstance(default, int):
        value = float(raw)
        if not math.isfinite(value) or value != int(value):
            raise ValueError(raw)
        return int(value)
    if isinstance(default, float):
        value = float(raw)
        if math.isnan(value):
            raise ValueError(raw)
        return value
    if isinstance(default, (list, tuple)):
        return [item.strip() for item in raw.split(",") if item.strip()]
    return raw


def url_text(value: Any) -> str:
    """A widget's value as a link writes it (the inverse of :func:`url_value`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class Prepared:
    """A view's settings as the code sets them: by link key, with a note for some (where a value came
    from), and extra lines of the settings cell."""

    values: dict[str, Any]
    notes: dict[str, str] = field(default_factory=dict)
    extra: tuple[str, ...] = ()


def _as_is(values: Mapping[str, Any], given=frozenset()) -> Prepared:
    return Prepared(dict(values))


@dataclass(frozen=True)
class ViewExport:
    """One view's export: ``name`` (its link's path), ``title`` (as the navigation says it), its link
    keys' ``defaults``, the families of keys made on the fly (``prefixes``: prefix → a key's default or
    ``None``), ``names`` (link key → the variable it sets in the code, in the order shown), the
    ``imports``, the ``steps`` ((words, code) each), what the reader may ``change``, and two functions
    of the settings: ``prepare`` (what the code sets, e.g. a shipped tuning; given the keys the link itself set) and ``check`` (the
    library call's own refusals, before any code is written)."""

    name: str
    title: str
    defaults: dict[str, Any]
    names: dict[str, str]
    imports: str
    steps: tuple[tuple[str, str], ...]
    change: str
    prefixes: dict[str, Callable[[str], Any]] = field(default_factory=dict)
    prepare: Callable[..., Prepared] = _as_is
    check: Callable[[Mapping[str, Any]], Any] = lambda values: None

    def default_of(self, key: str) -> Any:
        """The default (hence the type) the view declares for ``key``, ``None`` for a key it does not."""
        if key in self.defaults:
            return self.defaults[key]
        return next((default_of(key) for prefix, default_of in self.prefixes.items() if key.startswith(prefix)),
                    None)

    def link(self, values: Mapping[str, Any]) -> str:
        """The link of these settings (the view's path and the keys the code reads)."""
        return f"{self.name}?" + urlencode({k: url_text(v) for k, v in values.items() if k in self.names
                                            or any(k.startswith(p) for p in self.prefixes)})


def _keyed(values: Mapping[str, Any], prefix: str, **suffixes: str) -> dict[str, Any]:
    """A library call's keyword arguments from a view's settings: each argument's link key is ``prefix``
    and its suffix."""
    return {arg: values[prefix + suffix] for arg, suffix in suffixes.items()}


# -- Explore -----------------------------------------------------------------------------------------

def _option_default(key: str) -> Any:
    """An ``ex_opt_<mechanism>_<option>`` box's declared default, ``None`` for a key no mechanism declares."""
    return option_default_of(key[len("ex_opt_"):])


#: a tuned setting's fields → Explore's link keys
_TUNED_KEYS = {"iterations": "ex_T", "learning_rate": "ex_lr", "lam": "ex_lam", "sample_rate": "ex_q",
               "clip_norm": "ex_clip", "batch_size": "ex_batch"}


def _explore_prepare(values: Mapping[str, Any], given=frozenset()) -> Prepared:
    """Explore's settings: the chosen mechanism's option boxes as ``options``, and, where the link asks
    for the tuned settings (``ex_auto_tuned``) and sets none of T, η, λ, C, q itself, the shipped tuning
    for the nearest ε, as the view opens."""
    out, notes = dict(values), {}
    mech = out["ex_mechanism"]
    linked = set(given)  # the keys the link itself sets
    given = {k[len(f"ex_opt_{mech}_"):]: v for k, v in values.items() if k.startswith(f"ex_opt_{mech}_")}
    tuned = None
    if out["ex_auto_tuned"] and not linked & set(_TUNED_KEYS.values()) and not out["ex_dataset"].startswith("upload:"):
        tuned = tuned_setting(out["ex_dataset"], out["ex_model"], mech, out["ex_epsilon"])
    if tuned is not None:
        setting, at = tuned
        for name, key in _TUNED_KEYS.items():
            if name in setting:
                out[key] = setting[name]
                notes[key] = f"tuned at ε = {at:g} ({setting_text(setting)})"
        given.update({k: v for k, v in setting.items() if k not in _TUNED_KEYS and k in REGISTRY[mech].options})
    options = dict(explore_options(mech, given))
    return Prepared(out, notes, (f"options = {options!r}  # the mechanism's own options (ex_opt_{mech}_…)",))


_EXPLORE_CALL = dict(dataset="dataset", model="model", mechanism="mechanism", epsilon="epsilon", delta="delta",
                     iterations="T", repeats="R", seed="seed", calibration="calibration", c="c", lam="lam",
                     learning_rate="lr", sample_rate="q", batch_size="batch", clip_norm="clip", clients="m",
                     skew="u")


def _explore_check(values: Mapping[str, Any]) -> None:
    if values["ex_mechanism"] not in REGISTRY:
        raise DPCoreError(unknown_choice("mechanism", values["ex_mechanism"], list(REGISTRY)))
    prepared = _explore_prepare(values, frozenset(values))  # the settings as they are
    v = {arg: prepared.values["ex_" + name] for arg, name in _EXPLORE_CALL.items()}
    explore_spec(**v, options=explore_options(values["ex_mechanism"], {}))


EXPLORE = ViewExport(
    name="explore", title="Explore",
    defaults={"ex_dataset": "breast-cancer", "ex_model": "logreg", "ex_mechanism": "gradient-dpgd",
              "ex_epsilon": 1.0, "ex_delta": 1e-5, "ex_T": 100, "ex_lam": 1e-3, "ex_lr": 1.0,
              "ex_calibration": "certified", "ex_c": 1.0, "ex_R": 5, "ex_seed": 0,
              "ex_q": PARAMS["sample_rate"].default, "ex_batch": PARAMS["batch_size"].default,
              "ex_clip": 0.0, "ex_m": PARAMS["clients"].default, "ex_u": PARAMS["skew"].default,
              "ex_auto_tuned": True, "ex_audited": False},
    prefixes={"ex_opt_": _option_default},
    names={f"ex_{name}": name for name in _EXPLORE_CALL.values()},
    imports=("from dpcore.experiments.baselines import baseline\n"
             "from dpcore.experiments.presets_views import explore_options, explore_spec, run_record\n"
             "from dpcore.figures_views import loss_figure"),
    change="The mechanism reads only the common settings it declares (q or the batch, C, m and u where it "
           "samples, clips or is distributed); the seed sets the noise: runs use seed, seed + 1, … seed + R − 1.",
    prepare=_explore_prepare, check=_explore_check,
    steps=(
        ("## The run\n\n`explore_spec` makes the run's specification (a `RunSpec`) from the settings, as the "
         "view does; `run_record` trains R times, once a seed, and keeps every number the view shows with "
         "the loss curve; `baseline` is the non-private reference the view compares with.",
         "spec = explore_spec(dataset=dataset, model=model, mechanism=mechanism, epsilon=epsilon, delta=delta,\n"
         "                    iterations=T, repeats=R, seed=seed, calibration=calibration, c=c, lam=lam,\n"
         "                    learning_rate=lr, options=explore_options(mechanism, options), sample_rate=q,\n"
         "                    batch_size=batch, clip_norm=clip, clients=m, skew=u)\n"
         "print(spec)\n"
         "record = run_record(spec)\n"
         "reference = baseline(spec)"),
        ("## The headline numbers\n\nWhat the view's boxes show: the test score (mean over the R runs), the "
         "optimality gap L(θ) − L*, the noise, the target ε and the ε the noise that ran certifies.",
         "metric = \"accuracy\" if \"accuracy_mean\" in record else \"rmse\"\n"
         "print(f\"test {metric} = {record[metric + '_mean']!r}\")\n"
         "print(f\"optimality gap = {record['gap_mean']!r}\")\n"
         "print(f\"noise sigma = {record['sigma']!r}\")\n"
         "print(f\"epsilon target = {record['epsilon_target']!r}\")\n"
         "print(f\"epsilon certified = {record['epsilon_certified']!r}\")\n"
         "print(f\"{reference.label}: {metric} = {reference.value!r}\")"),
        ("## The chart\n\nEvery run's training objective against the step, with L* and the released model.",
         "fig = loss_figure(record)\n"
         "if fig is not None:\n"
         "    show(fig, \"explore_loss\")"),
    ))


# -- Compare -----------------------------------------------------------------------------------------

def _compare_args(values: Mapping[str, Any]) -> dict[str, Any]:
    return _keyed(values, "cmp_", delta="delta", iterations="T", repeats="R", calibration="cal", lam="lam",
                  clients="clients", skew="skew", paper="paper")


def _compare_check(values: Mapping[str, Any]) -> None:
    unknown = [m for m in values["cmp_mechs"] if m not in REGISTRY]
    if unknown:
        raise DPCoreError(unknown_choice("mechanism", unknown[0], list(REGISTRY)))
    compare_setting(values["cmp_dataset"], values["cmp_model"], values["cmp_mechs"], values["cmp_eps"],
                    **_compare_args(values))


COMPARE = ViewExport(
    name="compare", title="Compare",
    defaults={"cmp_dataset": "breast-cancer", "cmp_model": "logreg", "cmp_eps": "0.1, 0.3, 1, 3",
              "cmp_delta": 1e-05, "cmp_T": 100, "cmp_R": 3, "cmp_cal": "certified", "cmp_clients": 4,
              "cmp_skew": 4.0, "cmp_lam": 1e-3, "cmp_paper": "", "cmp_tuned": True,
              "cmp_mechs": ["gradient-dpgd", "output-gaussian", "objective-gaussian"], "cmp_shown": False},
    names={f"cmp_{k}": k for k in ("dataset", "model", "mechs", "eps", "delta", "T", "lam", "R", "cal", "tuned",
                                   "clients", "skew", "paper")},
    imports=("from dpcore.experiments.baselines import baseline, row_lambdas\n"
             "from dpcore.experiments.studies import epsilon_sweep\n"
             "from dpcore.experiments.presets_views import compare_setting\n"
             "from dpcore.figures_views import compare_figures"),
    change="`mechs` lists the mechanisms compared, `eps` the ε grid (comma-separated); `tuned` runs each "
           "mechanism at its shipped tuned settings where there is one; `paper` names a seed paper's preset "
           "(its settings for single mechanisms hold); clients and skew matter for distributed mechanisms only.",
    check=_compare_check,
    steps=(
        ("## The comparison\n\n`compare_setting` makes the comparison's base specification and ε grid from the "
         "settings, as the view does; `epsilon_sweep` runs every mechanism at every ε (R runs each, seeds 0 … "
         "R − 1), each at its tuned settings where `tuned` is on.",
         "setting = compare_setting(dataset, model, mechs, eps, delta=delta, iterations=T, repeats=R,\n"
         "                          calibration=cal, lam=lam, clients=clients, skew=skew, paper=paper)\n"
         "rows = epsilon_sweep(setting[\"base\"], mechs, setting[\"epsilons\"],\n"
         "                     per_mechanism=setting[\"per_mechanism\"], tuned=tuned, spent=False)\n"
         "ok = [r for r in rows if \"error\" not in r]\n"
         "for r in rows:\n"
         "    if \"error\" in r:\n"
         "        print(f\"{r['mechanism']} at ε = {r['epsilon']:g} did not run: {r['error']}\")"),
        ("## The headline numbers\n\nEach mechanism at each ε: its test score (mean over the runs), its "
         "optimality gap and the ε its noise certifies; the view's chart draws these points.",
         "metric = \"accuracy\" if any(\"accuracy_mean\" in r for r in ok) else \"rmse\"\n"
         "for r in ok:\n"
         "    at = f\"{r['mechanism']} at epsilon {r['epsilon']:g}\"\n"
         "    print(f\"{at}: {metric} = {r[metric + '_mean']!r}\")\n"
         "    print(f\"{at}: gap = {r['gap_mean']!r}\")\n"
         "    print(f\"{at}: epsilon certified = {r['epsilon_certified']!r}\")"),
        ("## The charts\n\nThe score against ε beside the non-private reference (the best exact model over the "
         "tuning's λ grid and every λ a row ran at) and what guessing scores, then the gap against ε.",
         "reference = baseline(setting[\"base\"], lams=row_lambdas(ok, lam)) if ok else None\n"
         "score, gap = compare_figures(ok, reference)\n"
         "show(score, \"compare_metric\")\n"
         "show(gap, \"compare_gap\")"),
    ))


# -- Local vs central -------------------------------------------------------------------------------

def _local_central_check(values: Mapping[str, Any]) -> None:
    RunSpec(dataset=values["lc_dataset"], model="logreg", epsilon=values["lc_epsilon"], delta=values["lc_delta"],
            iterations=values["lc_T"], repeats=values["lc_R"])


LOCAL_CENTRAL = ViewExport(
    name="local_central", title="Local vs central",
    defaults={"lc_dataset": "breast-cancer", "lc_epsilon": 1.0, "lc_delta": 1e-05, "lc_R": 2, "lc_T": 100,
              "lc_shown": False},
    names={"lc_dataset": "dataset", "lc_epsilon": "epsilon", "lc_delta": "delta", "lc_T": "T", "lc_R": "R"},
    imports=("from dpcore import RunSpec\n"
             "from dpcore.experiments.baselines import baseline, row_lambdas\n"
             "from dpcore.experiments.presets_views import tradeoff_mechanisms\n"
             "from dpcore.experiments.studies import tradeoff\n"
             "from dpcore.figures import tradeoff_figure"),
    change="Every mechanism runs at the one central target ε (logistic regression, classification data); the "
           "curve varies the input noise of input perturbation.",
    check=_local_central_check,
    steps=(
        ("## The trade-off\n\n`tradeoff` runs every mechanism of `tradeoff_mechanisms()` at the central ε (R runs "
         "each, seeds 0 … R − 1) and reads each one's local ε: ∞ for a central mechanism, which protects no record "
         "from the server that collects the data.",
         "out = tradeoff(dataset, epsilon, delta, iterations=T, repeats=R, mechanisms=tradeoff_mechanisms())\n"
         "ok = [r for r in out[\"rows\"] if \"error\" not in r]\n"
         "for r in out[\"rows\"]:\n"
         "    if \"error\" in r:\n"
         "        print(f\"{r['mechanism']} did not run: {r['error']}\")"),
        ("## The headline numbers\n\nEach mechanism's accuracy (mean over the runs), its certified ε and its "
         "local ε: the view's table.",
         "for r in ok:\n"
         "    print(f\"{r['mechanism']}: accuracy = {r['accuracy_mean']!r}\")\n"
         "    print(f\"{r['mechanism']}: epsilon certified = {r['epsilon_certified']!r}\")\n"
         "    print(f\"{r['mechanism']}: epsilon local = {r['epsilon_local']!r}\")"),
        ("## The chart\n\nAccuracy against local ε, with the non-private reference (the best exact model over "
         "the tuning's λ grid).",
         "reference = baseline(RunSpec(dataset=dataset, model=\"logreg\"), lams=row_lambdas(ok, None))\n"
         "fig = tradeoff_figure(out, baseline=reference.value, baseline_label=reference.label)\n"
         "fig.update_layout(title=f\"Test accuracy against local ε, at central ε = {out['epsilon']:g}\")\n"
         "show(fig, \"local_vs_central\")"),
    ))


# -- Distributed -------------------------------------------------------------------------------------

def _distributed_args(values: Mapping[str, Any]) -> dict[str, Any]:
    return _keyed(values, "dist_", dataset="dataset", model="model", epsilon="epsilon", delta="delta", iterations="T",
                  repeats="R", clients="m", skew="u", calibration="cal", split="split")


def _distributed_check(values: Mapping[str, Any]) -> None:
    if values["dist_dataset"] in DATASETS:
        client_sizes(DATASETS[values["dist_dataset"]].n_train, values["dist_m"], values["dist_u"])
    distributed_spec("distributed-wddp", **_distributed_args(values))


DISTRIBUTED = ViewExport(
    name="distributed", title="Distributed",
    defaults={"dist_dataset": "breast-cancer", "dist_model": "logreg", "dist_m": 4, "dist_u": 1.0,
              "dist_epsilon": 1.0, "dist_delta": 1e-05, "dist_cal": "certified", "dist_T": 100, "dist_R": 3,
              "dist_split": "random", "dist_shown": False},
    names={f"dist_{k}": k for k in ("dataset", "model", "m", "u", "epsilon", "delta", "cal", "T", "R", "split")},
    imports=("from dpcore import RunSpec\n"
             "from dpcore.experiments.baselines import baseline, row_lambdas\n"
             "from dpcore.experiments.presets_views import distributed_spec, run_record, skew_grid\n"
             "from dpcore.experiments.studies import skew_curve\n"
             "from dpcore.figures_views import skew_figures"),
    change="m is the number of clients, u = n_max / n_min how uneven their sizes are; `split` says which "
           "records each client holds (random or stratified by label).",
    check=_distributed_check,
    steps=(
        ("## The two federations\n\nWD-DP weights each client by its share of the data, plain averaging "
         "gives each 1/m: `run_record` trains each R times at these m and u, as the view's two columns do.",
         "for mechanism in (\"distributed-wddp\", \"distributed-avg\"):\n"
         "    spec = distributed_spec(mechanism, dataset=dataset, model=model, epsilon=epsilon, delta=delta,\n"
         "                            iterations=T, repeats=R, clients=m, skew=u, calibration=cal, split=split)\n"
         "    record = run_record(spec)\n"
         "    metric = \"accuracy\" if record.get(\"accuracy_mean\") is not None else \"rmse\"\n"
         "    print(f\"{mechanism}: {metric} = {record[metric + '_mean']!r}\")\n"
         "    print(f\"{mechanism}: epsilon certified = {record['epsilon_certified']!r}\")"),
        ("## The sweep over the skew\n\n`skew_curve` runs both and the centralised DP-GD at every skew of "
         "`skew_grid(u)` (the chosen u among them).",
         "curve = skew_curve(dataset, epsilon, delta, model=model, clients=m, skews=skew_grid(u), iterations=T,\n"
         "                   repeats=R, calibration=cal, split=split)\n"
         "rows = [r for r in curve[\"rows\"] if \"error\" not in r]\n"
         "for r in rows:\n"
         "    metric = \"accuracy\" if r.get(\"accuracy_mean\") is not None else \"rmse\"\n"
         "    print(f\"{r['mechanism']} at u {r['skew']:g}: {metric} = {r[metric + '_mean']!r}\")"),
        ("## The charts\n\nThe score and the gap against u, with the non-private reference.",
         "reference = baseline(RunSpec(dataset=dataset, model=model), lams=row_lambdas(rows, None))\n"
         "score, gap = skew_figures(rows, reference)\n"
         "show(score, \"accuracy_vs_skew\")\n"
         "show(gap, \"gap_vs_skew\")"),
    ))


# -- Certify a run ------------------------------------------------------------------------------------

def certify_arguments(*, mechanism: str, delta: float, accountant: str, z: float, sampling: str, rate: str,
                      q: float, batch: int, n: int, length: str, steps: int, epochs: float, sigma: float,
                      sens: float, k: int, ask: bool, target: float) -> dict[str, Any]:
    """The Certify view's call of :func:`dpcore.certify.certify_noise` (its keyword arguments) from its
    controls, as the view and its export make it: DP-SGD's noise multiplier, batches, rate (a sample
    rate, or a batch and a dataset size) and length (epochs or steps), or the Gaussian / Laplace
    releases' scale, sensitivity and count; a target ε where it is asked for."""
    if mechanism == "dp-sgd":
        rate_args = {"sample_rate": q} if rate == "sample rate" else {"batch_size": batch, "dataset_size": n}
        length_args = {"steps": steps} if length == "steps" else {"epochs": epochs}
        args = {"noise_multiplier": z, "sampling": sampling, "accountant": accountant, **rate_args, **length_args}
    else:
        args = {"sigma": sigma, "sensitivity": sens, "compositions": k}
    return {"mechanism": mechanism, "delta": delta, "target_epsilon": target if ask else None, **args}


CERTIFY = ViewExport(
    name="certify", title="Certify a run",
    defaults={"cert_mechanism": "dp-sgd", "cert_accountant": "opacus-rdp", "cert_sampling": "poisson",
              "cert_z": 1.1, "cert_rate": "sample rate", "cert_q": 0.004, "cert_batch": 256, "cert_n": 60_000,
              "cert_length": "epochs", "cert_steps": 1000, "cert_epochs": 60.0, "cert_sigma": 2.0,
              "cert_sens": 1.0, "cert_k": 10, "cert_delta": 1e-5, "cert_ask": False, "cert_target": 1.0},
    names={f"cert_{k}": k for k in ("mechanism", "accountant", "sampling", "z", "rate", "q", "batch", "n", "length",
                                    "steps", "epochs", "sigma", "sens", "k", "delta", "ask", "target")},
    imports=("from dpcore import certify_noise\n"
             "from dpcore.figures import privacy_profile_figure\n"
             "from dpcore.figures_export_views import certify_arguments"),
    change="For DP-SGD: z, the batches (poisson or shuffle), the rate as q (`rate = 'sample rate'`) or as batch "
           "and n, the length in epochs or steps; for the Gaussian or Laplace mechanism: sigma, sens and k. "
           "`ask = True` also finds the noise that meets `target`.",
    check=lambda values: certify_arguments(**{k[len("cert_"):]: v for k, v in values.items()}),
    steps=(
        ("## The certificate\n\n`certify_noise` certifies the run under add/remove one record (the other "
         "libraries' relation) and under replace-one (this app's), from the tight privacy-loss distribution.",
         "arguments = certify_arguments(mechanism=mechanism, delta=delta, accountant=accountant, z=z,\n"
         "                              sampling=sampling, rate=rate, q=q, batch=batch, n=n, length=length,\n"
         "                              steps=steps, epochs=epochs, sigma=sigma, sens=sens, k=k, ask=ask,\n"
         "                              target=target)\n"
         "print(arguments)\n"
         "cert = certify_noise(**arguments, full_curve=True)"),
        ("## The headline numbers\n\nThe ε under each relation, the Rényi-DP figure and the originating "
         "library's own, and (when asked) the noise for the target ε.",
         "print(f\"epsilon add/remove = {cert.add_remove!r}\")\n"
         "print(f\"epsilon replace-one = {cert.replace_one!r}\")\n"
         "if cert.rdp is not None:\n"
         "    print(f\"epsilon by Renyi DP = {cert.rdp!r}\")\n"
         "if cert.library_epsilon is not None:\n"
         "    print(f\"epsilon as {cert.accountant} reports = {cert.library_epsilon!r}\")\n"
         "for note in cert.notes:\n"
         "    print(note)\n"
         "if cert.inverse:\n"
         "    print(cert.inverse)"),
        ("## The chart\n\nThe privacy profile: ε against δ under both relations.",
         "show(privacy_profile_figure(cert.curve, delta), \"privacy_profile\")"),
    ))


# -- Theory -------------------------------------------------------------------------------------------

THEORY = ViewExport(
    name="theory", title="Theory",
    defaults={"th_dataset": "adult", "th_model": "logreg", "th_epsilon": 0.1, "th_delta": 1e-05, "th_T": 1000,
              "th_m": 4, "th_u": 1.0, "th_seed": "001", "th_over": "n",
              "th_rows": ["001-wang2017-gd", "001-kang-input", "002-dbdp-sgd", "003-input"], "th_shown": False},
    names={"th_dataset": "dataset", "th_model": "model", "th_epsilon": "epsilon", "th_delta": "delta", "th_T": "T",
           "th_m": "m", "th_u": "u", "th_over": "over", "th_rows": "rows", "th_shown": "measure"},
    imports=("from dpcore.experiments.studies import compare_measured\n"
             "from dpcore.figures_views import measured_figure, scaling_figure\n"
             "from dpcore.theory.catalog import bounds_report, scaling_report"),
    change="`over` is the axis of the scaling chart (\"n\" or \"epsilon\"), `rows` the bounds drawn on it; "
           "`measure = True` also runs the implementing mechanisms and draws their measured gap (slower).",
    check=lambda v: bounds_report(v["th_dataset"], v["th_model"], v["th_epsilon"], v["th_delta"], v["th_T"],
                                  v["th_m"], v["th_u"]),
    steps=(
        ("## The bounds\n\n`bounds_report` evaluates every published noise and excess-risk bound at the "
         "dataset's n, d and your ε, δ, T (big-O constants set to 1: compare slopes for those rows).",
         "report = bounds_report(dataset, model, epsilon, delta, T, m, u)\n"
         "for r in report[\"rows\"]:\n"
         "    print(f\"{r['id']}: noise = {r.get('noise')!r}\")\n"
         "    print(f\"{r['id']}: excess risk = {r.get('risk')!r}\")"),
        ("## How each bound scales\n\n`scaling_report` evaluates them along n (or ε); the chart draws the "
         "chosen rows on log axes, as the view does.",
         "sc = scaling_report(dataset, model, epsilon, delta, T, m, u, over=over)\n"
         "show(scaling_figure(sc, rows), \"bounds_scaling\")"),
        ("## The measured gap beside the prediction\n\nWith `measure` on, `compare_measured` runs the "
         "mechanisms that implement the rows (T at most 200, 2 runs each) and fits their slopes.",
         "if measure:\n"
         "    meas = compare_measured(dataset, model, epsilon, delta, min(T, 200), over=over, repeats=2)\n"
         "    for mrec in meas[\"mechanisms\"]:\n"
         "        if mrec.get(\"gap_mean\"):\n"
         "            print(f\"{mrec['mechanism']}: measured slope = {mrec['measured_slope']!r}\")\n"
         "    show(measured_figure(meas), \"measured_vs_predicted\")"),
    ))


# -- Paper figures ------------------------------------------------------------------------------------

def _figures_check(values: Mapping[str, Any]) -> None:
    if values["fig_preset"] not in PRESETS:
        raise DPCoreError(unknown_choice("preset", values["fig_preset"], list(PRESETS)))
    for key, options in (("fig_rerun_size", ("quick", "full")), ("fig_rerun_cal", ("certified", "published"))):
        if values[key] not in options:
            raise DPCoreError(unknown_choice(key, values[key], options))


_SHIPPED = shipped_ids()

FIGURES = ViewExport(
    name="figures", title="Paper figures",
    defaults={"fig_preset": _SHIPPED[0] if _SHIPPED else list(PRESETS)[0], "fig_rerun_size": "quick",
              "fig_rerun_cal": "certified"},
    names={"fig_preset": "preset", "fig_rerun_size": "size", "fig_rerun_cal": "calibration"},
    imports="from dpcore.experiments.presets import rerun, shipped_results",
    change="`preset` is the seed paper's figure (`python -m dpcore sweep --list` lists them); `rerun_here = True` "
           "computes it again on this machine, a quick rehearsal or at full size (`size`), with the certified "
           "or the papers' published calibration, never over the shipped files.",
    prepare=lambda values, given=frozenset(): Prepared(dict(values), extra=(
        "rerun_here = False  # True: compute the figure again here, as the view's \"Re-run here\" does",)),
    check=_figures_check,
    steps=(
        ("## The shipped results\n\n`shipped_results` reads the figure's full-size results shipped in "
         "`data/results/`, every number checked against this code (nothing trains).",
         "shipped = shipped_results(preset)\n"
         "if shipped is None:\n"
         "    raise SystemExit(f\"{preset} is not shipped: python -m dpcore sweep --preset {preset} computes it\")\n"
         "print(shipped.provenance())"),
        ("## The figure's numbers\n\nEvery point of every trace the view draws (the mean over the repeats): "
         "`figure_and_points` is the function the view draws with.",
         "fig, points = shipped.figure_and_points()\n"
         "for panel, trace in enumerate(fig.data):\n"
         "    if trace.x is None or trace.y is None:\n"
         "        continue\n"
         "    for x, y in zip(trace.x, trace.y):\n"
         "        if y is not None:\n"
         "            print(f\"{trace.name} [{trace.xaxis}] at x {x}: y = {float(y)!r}\")"),
        ("## The chart", "show(fig, preset)"),
        ("## Re-run here\n\nWith `rerun_here` on, `rerun` computes the figure again into `reruns/` "
         "(resumable) and draws it.",
         "if rerun_here:\n"
         "    result = rerun(preset, \"reruns\", quick=size == \"quick\", calibration=calibration)\n"
         "    print(result.provenance())\n"
         "    show(result.figure_and_points()[0], f\"{preset}-rerun\")"),
    ))


# -- Tune ---------------------------------------------------------------------------------------------

def _tune_check(values: Mapping[str, Any]) -> None:
    unknown = [m for m in values["tu_mechs"] if m not in REGISTRY]
    if unknown:
        raise DPCoreError(unknown_choice("mechanism", unknown[0], list(REGISTRY)))
    if values["tu_dataset"] not in DATASETS:
        raise DPCoreError(unknown_choice("dataset", values["tu_dataset"], list(DATASETS)))
    parse_grid("epsilon", values["tu_eps"], "the ε grid", 12)


TUNE = ViewExport(
    name="tune", title="Tune",
    defaults={"tu_dataset": "adult", "tu_eps": "0.1, 1, 10", "tu_acc": 0.82, "tu_mechs": list(DEFAULT_MECHANISMS),
              "tu_pick": 0, "tu_shown": False},
    names={"tu_dataset": "dataset", "tu_mechs": "mechs", "tu_eps": "eps", "tu_shown": "tune_here", "tu_acc": "need"},
    imports=("from dpcore import RunSpec\n"
             "from dpcore.experiments.baselines import baseline\n"
             "from dpcore.experiments.presets_views import tuning_here, tuning_lambdas\n"
             "from dpcore.experiments.tune import YU_2020_ADULT, epsilon_for_accuracy, shipped_tuning\n"
             "from dpcore.figures import tuning_figure"),
    change="With `tune_here = False` the shipped tuning of the dataset is read (its every ε spent recomputed: "
           "about a minute the first time); `True` tunes `mechs` at every ε of `eps` here, paying for every "
           "candidate. `need` is the test accuracy the question \"ε for this accuracy\" asks for.",
    check=_tune_check,
    steps=(
        ("## The tuning\n\nEvery candidate setting runs on 80 % of the training rows; the choice among them is "
         "private (the exponential mechanism on the other 20 %); ε spent is what the whole search costs.",
         "if tune_here:\n"
         "    record = tuning_here(dataset, mechs, eps)\n"
         "else:\n"
         "    record = shipped_tuning(dataset, \"logreg\", spent=True)\n"
         "rows = [r for r in record[\"rows\"] if \"error\" not in r]\n"
         "released_rows = [r for r in record.get(\"released_rows\", []) if \"error\" not in r]"),
        ("## The headline numbers\n\nEach mechanism tuned for each ε: its setting, its test accuracy, the ε its "
         "released run certifies and the ε the search spent; then the smallest tuned ε that reaches `need`.",
         "for r in rows:\n"
         "    at = f\"{r['mechanism']} at epsilon {r['epsilon']:g}\"\n"
         "    print(f\"{at}: setting {r['setting']}\")\n"
         "    print(f\"{at}: test accuracy = {r['test_accuracy']!r}\")\n"
         "    print(f\"{at}: epsilon certified = {r['epsilon_certified']!r}\")\n"
         "    print(f\"{at}: epsilon spent = {r['epsilon_spent']!r}\")\n"
         "for a in epsilon_for_accuracy(rows, need):\n"
         "    print(f\"{a['mechanism']} reaches {need:g}: smallest tuned epsilon {a['epsilon']}\")"),
        ("## The chart\n\nTest accuracy against ε, at the target and at what the search spent, beside the "
         "non-private reference (and, on Adult, Yu et al. 2020's Table 2).",
         "reference = baseline(RunSpec(dataset=dataset, model=\"logreg\"), lams=tuning_lambdas(rows, released_rows))\n"
         "paper = dataset == \"adult\"\n"
         "fig = tuning_figure(rows, YU_2020_ADULT if paper else None, 0.1 if paper else None, guess=reference.guess,\n"
         "                    baseline=reference.value, baseline_label=reference.label)\n"
         "show(fig, \"tuning\")"),
    ))


# -- Audit --------------------------------------------------------------------------------------------

def _audit_args(values: Mapping[str, Any]) -> dict[str, Any]:
    return _keyed(values, "au_", dataset="dataset", model="model", mechanism="mechanism", epsilon="epsilon",
                  delta="delta", iterations="T", calibration="cal", c="c", noise_scale="noise", seed="seed")


def _audit_check(values: Mapping[str, Any]) -> None:
    if values["au_mechanism"] not in REGISTRY:
        raise DPCoreError(unknown_choice("mechanism", values["au_mechanism"], list(REGISTRY)))
    for key, name in (("au_threat", "threat"), ("au_canary", "canary")):
        if values[key] not in PARAMS[name].constraint.values:
            raise DPCoreError(unknown_choice(name, values[key], list(PARAMS[name].constraint.values)))
    audit_spec(**_audit_args(values))


AUDIT = ViewExport(
    name="audit", title="Audit",
    defaults={"au_dataset": "breast-cancer", "au_model": "logreg", "au_mechanism": "gradient-dpgd",
              "au_epsilon": 1.0, "au_delta": 1e-05, "au_cal": "certified", "au_c": 1.0, "au_T": 50, "au_trials": 500,
              "au_canary": "auto", "au_threat": "white-box", "au_noise": 1.0, "au_seed": 0, "au_shown": False,
              "au_onerun_shown": False},
    names={f"au_{k}": k for k in ("dataset", "model", "mechanism", "epsilon", "delta", "cal", "c", "T", "noise",
                                  "seed", "trials", "threat", "canary")},
    imports=("from dpcore import run_audit\n"
             "from dpcore.experiments.presets_views import audit_spec\n"
             "from dpcore.figures import privacy_region_figure\n"
             "from dpcore.figures_views import audit_scores_figure\n"
             "from dpcore.params import PARAMS"),
    change="`threat` is \"white-box\" (every step watched) or \"black-box\" (the released model only, with the "
           "`canary` pair); `noise` below 1 runs less noise than calibrated (a leak the audit should catch); "
           "another `seed` is another audit. The view's end-to-end toggle is not in its link: off here.",
    check=_audit_check,
    steps=(
        ("## The audit\n\nThe mechanism trains `trials` times on each of two neighbouring datasets; the attack's "
         "success gives a lower bound on the ε actually spent. A refutation is confirmed by a second, independent "
         "audit, as in the view.",
         "spec = audit_spec(dataset=dataset, model=model, mechanism=mechanism, epsilon=epsilon, delta=delta,\n"
         "                  iterations=T, calibration=cal, c=c, noise_scale=noise, seed=seed)\n"
         "result = run_audit(spec, trials=trials, threat=threat,\n"
         "                   canary=canary if threat == \"black-box\" else PARAMS[\"canary\"].default,\n"
         "                   end_to_end=False, confirm=True).to_dict()"),
        ("## The headline numbers\n\nThe target, the certified and the audited ε (a lower bound, never a proof), "
         "and the verdict.",
         "print(f\"epsilon target = {result['epsilon_target']!r}\")\n"
         "print(f\"epsilon certified = {result['epsilon_certified']!r}\")\n"
         "print(f\"epsilon audited = {result['epsilon_lower_bound']!r}\")\n"
         "print(f\"verdict: {result['verdict']}\")"),
        ("## The charts\n\nThe privacy region (no attack's ROC can enter what the certified ε forbids) and the "
         "attack's scores on both datasets.",
         "show(privacy_region_figure(result, log_axes=False), \"audit_privacy_region\")\n"
         "show(audit_scores_figure(result), \"audit_scores\")"),
    ))


# -- Lesson -------------------------------------------------------------------------------------------

def _lesson_check(values: Mapping[str, Any]) -> None:
    if not 1 <= values["lesson_step"] <= len(lesson.STEPS) + 1:
        raise DPCoreError(f"the lesson has steps 1 to {len(lesson.STEPS) + 1}, not {values['lesson_step']}")


LESSON = ViewExport(
    name="lesson", title="Lesson",
    defaults={"lesson_step": 1}, names={"lesson_step": "step"},
    imports=("from dpcore import lesson\n"
             "from dpcore.experiments.baselines import baseline, row_lambdas\n"
             "from dpcore.figures import privacy_region_figure, tradeoff_figure\n"
             "from dpcore.figures_views import lesson_noise_figure, lesson_places_figure, lesson_skew_figure, odds_figure"),
    change="`step` is the lesson's step, 1 to 6: what ε means, noise costs accuracy, four places to add noise, "
           "local vs central, skewed clients, what an audit shows; each step's settings are the lesson's own "
           "(`dpcore.lesson`: breast cancer, T = 100).",
    check=_lesson_check,
    steps=(
        ("## The step\n\nEach step is one computation of `dpcore.lesson` (the app's \"Prepare for class\" "
         "computes them ahead) and its chart, with the numbers the chart draws.",
         "if step == 1:\n"
         "    fig = odds_figure()\n"
         "    for x, y in zip(fig.data[0].x, fig.data[0].y):\n"
         "        print(f\"odds factor at {x} = {y!r}\")\n"
         "elif step == 2:\n"
         "    rows = lesson.noise_rows()\n"
         "    for r in rows:\n"
         "        print(f\"DP-GD at epsilon {r['epsilon']:g}: accuracy = {r['accuracy_mean']!r}\")\n"
         "    fig = lesson_noise_figure(rows, baseline(lesson.BASE, lams=row_lambdas(rows, lesson.BASE.lam)))\n"
         "elif step == 3:\n"
         "    rows = lesson.places_rows()\n"
         "    for r in rows:\n"
         "        print(f\"{r['mechanism']} at epsilon {r['epsilon']:g}: gap = {r['gap_mean']!r}\")\n"
         "    fig = lesson_places_figure(rows)\n"
         "elif step == 4:\n"
         "    out = lesson.tradeoff_result()\n"
         "    for r in out[\"rows\"]:\n"
         "        if \"error\" not in r:\n"
         "            print(f\"{r['mechanism']}: accuracy = {r['accuracy_mean']!r}\")\n"
         "            print(f\"{r['mechanism']}: epsilon local = {r['epsilon_local']!r}\")\n"
         "    reference = baseline(lesson.BASE)\n"
         "    fig = tradeoff_figure(out, reference.value, reference.label)\n"
         "elif step == 5:\n"
         "    rows = lesson.skew_rows()\n"
         "    for r in rows:\n"
         "        print(f\"{r['mechanism']} at u {r['skew']:g}: accuracy = {r['accuracy_mean']!r}\")\n"
         "    fig = lesson_skew_figure(rows)\n"
         "else:\n"
         "    record = lesson.audit_record()\n"
         "    print(f\"epsilon certified = {record['epsilon_certified']!r}\")\n"
         "    print(f\"epsilon audited = {record['epsilon_lower_bound']!r}\")\n"
         "    print(f\"verdict: {record['verdict']}\")\n"
         "    fig = privacy_region_figure(record)\n"
         "show(fig, f\"lesson_step_{step}\")"),
    ))


#: every view that computes, by its link's path (the navigation's url_path)
VIEWS: dict[str, ViewExport] = {v.name: v for v in (LESSON, EXPLORE, COMPARE, FIGURES, TUNE, LOCAL_CENTRAL,
                                                    DISTRIBUTED, THEORY, AUDIT, CERTIFY)}
