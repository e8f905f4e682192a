"""The declarations of the export of Certify a run, Theory, Paper figures, Tune, Audit and the Lesson
(:class:`~dpcore.export.declare.ViewExport`, as :mod:`dpcore.export.declare` declares Explore,
Compare, Local vs central and Distributed), and :data:`VIEWS`, every view that computes."""

from __future__ import annotations

from typing import Any, Mapping

from .. import lesson
from ..exceptions import DPCoreError, unknown_choice
from ..experiments.presets import PRESETS, shipped_ids
from ..experiments.views import audit_spec
from ..experiments.tune import DEFAULT_MECHANISMS
from .declare import (COMPARE, DISTRIBUTED, EXPLORE, LOCAL_CENTRAL, Prepared, ViewExport, keyed_arguments)
from ..datasets import DATASETS
from ..mechanisms import REGISTRY
from ..params import PARAMS, parse_grid
from ..theory.catalog import bounds_report

__all__ = ["VIEWS", "certify_arguments"]


# -- Certify a run ------------------------------------------------------------------------------------

def certify_arguments(*, mechanism: str, delta: float, accountant: str, z: float, sampling: str, rate: str,
                      q: float, batch: int, n: int, length: str, steps: int, epochs: float, sigma: float,
                      sens: float, k: int, ask: bool, target: float) -> dict[str, Any]:
    """The Certify view's call of :func:`dpcore.certify.core.certify_noise` (its keyword arguments) from its
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
             "from dpcore.export.views import certify_arguments"),
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
             "from dpcore.figures.views import measured_figure, scaling_figure\n"
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
             "from dpcore.experiments.views import tuning_here, tuning_lambdas\n"
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
    return keyed_arguments(values, "au_", dataset="dataset", model="model", mechanism="mechanism", epsilon="epsilon",
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
             "from dpcore.experiments.views import audit_spec\n"
             "from dpcore.figures import privacy_region_figure\n"
             "from dpcore.figures.views import audit_scores_figure\n"
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
             "from dpcore.figures.views import lesson_noise_figure, lesson_places_figure, lesson_skew_figure, odds_figure"),
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
