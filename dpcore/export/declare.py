"""Each view's declaration for its export (:mod:`dpcore.export.writer`): its link keys with their defaults (the
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

from ..exceptions import DPCoreError, unknown_choice
from ..experiments.tune import setting_text, tuned_setting
from ..experiments.views import (compare_setting, distributed_spec,
                                       explore_options, explore_spec, option_default_of)
from ..partition import client_sizes
from ..datasets import DATASETS
from ..experiments.run import RunSpec
from ..mechanisms import REGISTRY
from ..params import PARAMS

__all__ = ["COMPARE", "DISTRIBUTED", "EXPLORE", "LOCAL_CENTRAL", "Prepared", "ViewExport", "keyed_arguments", "url_text",
           "url_value"]


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


def keyed_arguments(values: Mapping[str, Any], prefix: str, **suffixes: str) -> dict[str, Any]:
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
             "from dpcore.experiments.views import explore_options, explore_spec, run_record\n"
             "from dpcore.figures.views import loss_figure"),
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
    return keyed_arguments(values, "cmp_", delta="delta", iterations="T", repeats="R", calibration="cal", lam="lam",
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
             "from dpcore.experiments.views import compare_setting\n"
             "from dpcore.figures.views import compare_figures"),
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
         "score, gap = compare_figures(ok, reference, lam)\n"
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
             "from dpcore.experiments.views import tradeoff_mechanisms\n"
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
    return keyed_arguments(values, "dist_", dataset="dataset", model="model", epsilon="epsilon", delta="delta", iterations="T",
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
             "from dpcore.experiments.views import distributed_spec, run_record, skew_grid\n"
             "from dpcore.experiments.studies import skew_curve\n"
             "from dpcore.figures.views import skew_figures"),
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
