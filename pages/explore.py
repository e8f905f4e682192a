from pages.boot import load_core

load_core()  # before the core: a new server can run a view before app.py (pages/boot.py)

import math

import streamlit as st

from dpcore.audit import basis_words
from dpcore.exceptions import DPCoreError
from dpcore.experiments.run import RunSpec
from dpcore.experiments.tune import setting_text, tuned_setting
from dpcore.experiments.views import explore_spec, tuned_search_spent
from dpcore.figures.result import (clip_words, noise_name, noise_words, r_squared_words, reference_terms, runs_no_better,
                                   search_spent_words, skew_words, versus_guessing)
from dpcore.shipped import ShippedFileError
from dpcore.mechanisms import REGISTRY
from dpcore.models import make_model
from dpcore.params import PARAMS
from pages.common import (
    app_context, choice, download_code, enter_view, show_chart, glossary_link, shared_audit, apply_setting, setting_in_use, TUNED_WIDGETS, user_dataset, client_bars, dataset_picker, download_figure, download_plan, fmt_eps, fmt_num, loss_figure, mechanisms_for, model_picker, option_default, reset_tuned_widgets, option_widgets, param_widget, reference_for, run_or_error, skew_refusal,
)
from pages.links import linked_result, publish_settings, restore_from_url, shared_settings, write_to_url

enter_view("explore")
st.title("Explore one configuration")
#: every control this view reads, declared once: the link writes and reads exactly these (and the
#: mechanism's option boxes, ``ex_opt_<mechanism>_<option>``, declared by the mechanism itself)
URL_KEYS = {"ex_dataset": "breast-cancer", "ex_model": "logreg", "ex_mechanism": "gradient-dpgd",
            "ex_epsilon": 1.0, "ex_delta": 1e-5, "ex_T": 100, "ex_lam": 1e-3, "ex_lr": 1.0,
            "ex_calibration": "certified", "ex_c": 1.0, "ex_R": 5, "ex_seed": 0,
            "ex_q": PARAMS["sample_rate"].default, "ex_batch": PARAMS["batch_size"].default,
            "ex_clip": 0.0, "ex_m": PARAMS["clients"].default, "ex_u": PARAMS["skew"].default,
            "ex_auto_tuned": True,
            "ex_audited": False}  # ex_audited: the link brings the audit shown (pages.links.linked_result)
URL_PREFIXES = {"ex_opt_": option_default("ex_opt")}
restore_from_url(URL_KEYS, URL_PREFIXES)
SHARED = {'dataset': 'ex_dataset', 'epsilon': 'ex_epsilon', 'delta': 'ex_delta', 'iterations': 'ex_T', 'seed': 'ex_seed'}
shared_settings(SHARED)

with st.sidebar:
    st.header("Settings")
    dataset = dataset_picker("ex_dataset")
    model = model_picker(dataset, "ex_model")
    mechs = mechanisms_for(model)
    mechanism = choice("selectbox", "Mechanism", mechs, fallback="gradient-dpgd",
                       index=mechs.index("gradient-dpgd") if "gradient-dpgd" in mechs else 0,
                             key="ex_mechanism", format_func=lambda m: f"{m} — {REGISTRY[m].name}")
    cls = REGISTRY[mechanism]
    epsilon = param_widget("epsilon", "ex_epsilon", label="ε (privacy budget)")
    try:
        tuned = None if user_dataset(dataset) is not None else tuned_setting(dataset, model, mechanism, epsilon,
                                                                                 data_dir=app_context().data_dir)
    except ShippedFileError as exc:  # the shipped tuning is refused: the untuned settings, and why
        tuned = None
        st.warning(f"No tuned settings are offered: {exc}")
    tuned_in_use = False
    applied = st.session_state.get("_ex_tuned_for")
    if tuned is None and applied is not None and applied[:2] != (dataset, model):
        # settings tuned for another dataset or model (the MLP keeps none of logistic regression's):
        # back to the defaults, said once
        reset_tuned_widgets()
        st.session_state.pop("_ex_tuned_for")
        st.info(f"No tuning is shipped for {model} on {dataset}: T, η, λ, C and q are back at their defaults "
                f"(they had been tuned for {applied[1]} on {applied[0]}).")
    if tuned is not None:
        # fair by default: where a tuning is shipped, a new dataset, mechanism or tuned ε opens at its
        # tuned settings (once: a value changed by hand afterwards stays); a link's own T, η … win
        linked = st.session_state.get("_from_url", {})  # what the opening link itself set
        st.session_state.setdefault("ex_auto_tuned", not any(k in linked for k in TUNED_WIDGETS.values()))
        auto = st.toggle("Open at the tuned settings", key="ex_auto_tuned",
                         help="Where a tuning is shipped for this dataset, each mechanism opens at the T, η, λ, C "
                              "or q tuned for the nearest ε (the untuned defaults are not a fair comparison). "
                              "Choosing them cost privacy: the Tune view shows how much.")
        chosen_for = (dataset, model, mechanism, tuned[1])
        if auto and st.session_state.get("_ex_tuned_for") != chosen_for:
            # a link's own T, η, λ, C, q hold on its first opening: it reproduces what its sender saw
            opened_by_link = ("_ex_tuned_for" not in st.session_state
                              and any(k in linked for k in TUNED_WIDGETS.values()))
            if not opened_by_link:
                apply_setting(tuned[0], mechanism)
            st.session_state["_ex_tuned_for"] = chosen_for
        tuned_in_use = setting_in_use(tuned[0], mechanism)
        if auto:
            st.caption(f"Tuned at ε = {tuned[1]:g}"
                       + ("" if tuned_in_use else " (not in use: a value was changed by hand)")
                       + ": " + setting_text(tuned[0]))
        if not tuned_in_use:  # in use (the toggle's default), the button would do nothing: not shown
            st.button("Use the tuned settings", key="ex_tuned", on_click=apply_setting, args=(tuned[0], mechanism),
                      help=f"T, η, λ (and C or q) as tuned on {dataset} at ε = {tuned[1]:g}: "
                           + setting_text(tuned[0])
                           + ". The Tune view shows how they were chosen and what the search costs.")
    delta = param_widget("delta", "ex_delta", label="δ")
    iterations = param_widget("iterations", "ex_T", label="iterations T")
    lam = param_widget("lam", "ex_lam", label="λ (L2 regularisation)")
    lr = param_widget("learning_rate", "ex_lr", label="learning rate η")
    calibration = choice("radio", "Calibration", list(cls.calibrations), horizontal=True, key="ex_calibration",
                           help="certified: the noise is chosen so that its certified ε meets the target; "
                                "published: the paper's formula (with its constant c), whatever it certifies — "
                                + glossary_link("calibration"))
    c = param_widget("c", "ex_c", label="constant c") if calibration == "published" else 1.0
    extra = {}  # the common settings this mechanism declares it reads (cls.settings)
    if "sample_rate" in cls.settings:
        extra["sample_rate"] = param_widget("sample_rate", "ex_q", label="sampling rate q")
    elif "batch_size" in cls.settings:
        extra["batch_size"] = param_widget("batch_size", "ex_batch", label="batch size")
    if "clip_norm" in cls.settings:
        clip = param_widget("clip_norm", "ex_clip", label="clipping norm C (0: the mechanism's own, below)",
                            zero=True, value=0.0)
        if clip:
            extra["clip_norm"] = clip
        own = make_model(model)  # what C means for the noise, in the certificate's words (0: the mechanism's own clip)
        words = clip_words(clip, own.lipschitz, None if clip else
                           cls().clips_records(own, RunSpec(dataset=dataset, model=model, mechanism=mechanism)))
        if words:
            st.caption(words)
    if "clients" in cls.settings:
        extra["clients"] = param_widget("clients", "ex_m", label="clients m")
        extra["skew"] = param_widget("skew", "ex_u", label="skew u = n_max/n_min",
                                     refuse=skew_refusal(dataset, extra["clients"]))
    options = option_widgets(cls, "ex_opt")  # and its own declared options
    if dict(options).get("tune_on_release"):
        st.caption("tune_on_release: each release chooses its own training settings on its records, so the "
                   "T, η and λ above are not used.")
    repeats = param_widget("repeats", "ex_R", label="repeats R")
    seed = param_widget("seed", "ex_seed", label="seed")

try:
    config = explore_spec(dataset=dataset, model=model, mechanism=mechanism, epsilon=epsilon, delta=delta,
                          iterations=iterations, repeats=repeats, seed=seed, calibration=calibration, c=c,
                          lam=lam, learning_rate=lr, options=options, **extra)  # as its export does
except DPCoreError as exc:  # a ParameterError from the declared constraints
    st.error(f"{exc}")
    st.stop()

write_to_url(list(URL_KEYS), URL_PREFIXES)
publish_settings(SHARED)
st.caption(f"**{cls.name}** — {cls.paper}. {cls.description}")
if cls.heuristic:
    st.warning("This mechanism is a heuristic: its choices read the raw data, so it has no privacy guarantee.")
st.latex(cls.formula)
st.caption(f"Calibrations: {cls.calibration_note}")

rec = run_or_error(config)
if rec is None:
    st.stop()
for w in rec["warnings"]:
    st.warning(w)
# whether the run's noise certifies a finite ε (a heuristic's, input-dbdp-if's, does not)
certifies = rec.get("epsilon_certified") is not None and math.isfinite(rec["epsilon_certified"])

ref = reference_for(config)  # the one non-private reference every view draws (the best over the λ grid)
if ref is None:
    st.stop()
c1, c2, c3, c4 = st.columns(4)
# privacy's own cost: against the exact model at this run's λ (the same objective without noise); the
# best λ of the grid, chosen on the test split, is a ceiling beside it, not what the noise cost
metric = "accuracy" if "accuracy_mean" in rec else "rmse"
own = rec.get(f"{metric}_nonprivate")
at_own = own is not None and math.isfinite(own)
same = own if at_own else ref.value
vs = "vs non-private at this λ" if at_own else f"vs {ref.label}"
cost = round(rec[f"{metric}_mean"] - same, 4) + 0.0  # never "-0.0000"
spread = f"± {rec[f'{metric}_std']:.4f} over {len(rec['runs'])} runs"
cost_help = (f"The change from the same model without noise ({reference_terms(model).reference}, at this run's "
             f"λ): what privacy cost here. {ref.definition()}")
if "accuracy_mean" in rec:
    c1.metric("test accuracy", f"{rec['accuracy_mean']:.4f}", delta=f"{cost:+.4f} {vs}",
              help=cost_help)
    c1.caption(f"{spread} · non-private at this λ {same:.4f} · {ref.label} {ref.value:.4f} · guessing "
               f"{ref.guess:.4f} (always the majority class)")
else:
    c1.metric("test RMSE", f"{rec['rmse_mean']:.4f}",
              delta=f"{cost:+.4f} {vs}", delta_color="inverse",
              help=cost_help)
    # each R² beside its own model's RMSE, named (dpcore.figures.result.r_squared_words)
    c1.caption(f"{spread} · {r_squared_words(rec['rmse_mean'], rec['rmse_guess'])} · non-private at this λ "
               f"{same:.4f} · {ref.label} {ref.value:.4f}, "
               f"{r_squared_words(ref.value, rec['rmse_guess'], 'non-private model')} · "
               f"predicting the mean {ref.guess:.4f}",
               help="R² = 1 − (RMSE / RMSE of always predicting the training split's mean label)²: "
                    "1 is a perfect fit, 0 no better than predicting the mean, below 0 worse.")
versus = versus_guessing(rec)  # the one rule every view applies (dpcore.figures.result)
if versus is not None and versus.no_better:
    st.warning(versus.sentence()
               + (" At this ε the noise has drowned what the data " if certifies else
                  f" The noise it adds (set by its paper for ε = {fmt_eps(rec['epsilon_target'])}, which no proof "
                  "certifies here) has drowned what the data ")
               + ("says: its own released records could not show anything better; try a larger ε or more data."
                  if rec.get("guess_chosen") else "says; try a larger ε, more data, or the tuned settings."
                  if tuned is not None and not tuned_in_use else "says; try a larger ε or more data."))
elif (hidden := runs_no_better(rec)) is not None:  # a run under guessing behind a mean above it
    st.warning(hidden)
if rec.get("tuned_on_release"):  # input and local perturbation, tuned on their own released records
    kept = rec.get("guess_chosen", 0)
    chosen = sorted({c if isinstance(c, str) else setting_text(c) for c in rec["tuned_on_release"]})
    st.info("Settings chosen on each release's own records (free: post-processing, ε spent = ε certified). "
            + (f"The guess was kept by {kept} of {len(rec['tuned_on_release'])} releases: their released records "
               "could not show a model that beats guessing. " if kept else "")
            + "Chosen: " + "; ".join(chosen) + ".")
terms = reference_terms(model)  # L* of the exact minimiser, or a non-convex model's L_ref
c2.metric(terms.gap_label, f"{rec['gap_mean']:.3e}",
          help=f"± {rec['gap_std']:.2e} over runs; the reference is {terms.minimiser}")
if rec.get("noise_multiplier") is not None:  # a sampled mechanism's noise: the multiplier z times the clip C
    c3.metric("noise σ = z·C", fmt_num(rec["sigma"], ".4g"), help=rec.get("noise", ""))
    c3.caption(noise_words(rec) + " (noise multiplier z, clip C)")
else:
    c3.metric(f"noise: {noise_name(rec)}", fmt_num(rec["sigma"], ".4g"), help=rec.get("noise", ""))
c4.metric("seconds", f"{rec['seconds']:.2f}")

e1, e2, e3, e4 = st.columns(4)
e1.metric("ε target", fmt_eps(rec["epsilon_target"]))
e2.metric("ε certified", fmt_eps(rec["epsilon_certified"]),
          help="what the noise that actually ran provably gives (∞: no valid proof)")
e3.metric("ε local", fmt_eps(rec["epsilon_local"]),
          help="protection of each record against the server (∞ for central mechanisms)")
def audit_here(bar) -> tuple:
    """A black-box audit of this setting (``bar``: its progress): its lower bound and verdict."""
    found = shared_audit(config, PARAMS["trials"].default, bar, dataset=user_dataset(dataset))
    return found["epsilon_lower_bound"], found["verdict"], basis_words(found)


if cls.private:
    pressed = e4.button("Audit this setting", key="ex_audit_run",
                        help=f"{PARAMS['trials'].default} runs on each of two neighbouring datasets "
                             "(black-box canary attack, as in the Audit view)")
    audited, current = linked_result("ex_audit", "ex_audited", config, pressed, audit_here, what="audit",
                                     button="Audit this setting", stale=False)  # another setting: none shown
    if current:
        e4.metric("ε audited (black-box lower bound)", fmt_eps(audited[0]),
                  help=f"verdict: {audited[1]}. A black-box attack (it sees only the final model) can show privacy "
                       "is at least this bad; it never proves a claim. The Audit view opens on the white-box "
                       "attack (it sees every step), whose bound is usually higher.")
        if len(audited) > 2:  # what the number rests on: the estimator and its assumption (dpcore.audit)
            e4.caption(audited[2])
if tuned is not None and tuned_in_use:  # what choosing these settings cost, beside the ε's above (M2)
    try:
        with st.spinner("Recomputing what the search that chose these settings spent…"):
            paid = tuned_search_spent(dataset, model, mechanism, epsilon, data_dir=app_context().data_dir)
    except DPCoreError as exc:
        st.error(f"What the search behind the tuned settings spent is not shown: {exc}")
    else:
        if paid is not None:
            st.info(search_spent_words(epsilon, *paid))
target, cert = rec["epsilon_target"], rec["epsilon_certified"]
if target is not None and (cert is None or cert > target * (1 + 1e-6)):
    st.error(f"The noise that ran certifies ε = {fmt_eps(cert)}, above the target {fmt_eps(target)}: "
             "this calibration under-delivers.")
st.caption(f"What was certified ({rec['neighbouring']} neighbours): {rec['privacy_event']}")
if rec.get("note"):
    st.info(rec["note"])
from_tune = st.session_state.get("_ex_from_tune")
if from_tune and (from_tune["dataset"], from_tune["mechanism"], from_tune["epsilon"], from_tune["delta"]) \
        == (dataset, mechanism, epsilon, delta) and tuned_in_use:
    st.caption(f"Opened from Tune: the same setting, ε and δ (ε certified there: "
               f"{fmt_eps(from_tune['epsilon_certified'])}; here: {fmt_eps(rec['epsilon_certified'])}). Tune's row "
               f"reports test accuracy {from_tune['test_accuracy']:.4f} ± {from_tune['test_accuracy_std']:.4f}: "
               "its own final release, trained on other noise draws than this view's seeds "
               f"{config.seed}–{config.seed + config.repeats - 1}, so the two differ by noise alone.")
if rec.get("client_sizes"):
    client_bars(rec["client_sizes"])
    if said := skew_words(extra.get("skew", 1.0), rec["client_sizes"]):
        st.warning(said + ": the result above is for the clients' sizes.")

fig = loss_figure(rec)
if fig is not None:
    show_chart(fig)
    download_figure(fig, "loss_curve", "ex_dl_fig")
download_plan(config, "ex_dl_plan")
download_code("explore", URL_KEYS, "ex_dl_code", URL_PREFIXES)  # this view as a notebook and a script
with st.expander("All numbers (JSON)"):
    # the run's record (its accuracy_nonprivate is the exact model at this run's own λ), and the one
    # reference the metric above is compared with
    st.json({**{k: v for k, v in rec.items() if k not in ("loss_trace", "trace_steps")},
             "nonprivate_reference": ref.to_dict()})
