from pages.boot import load_core

load_core()  # before the core: a new server can run a view before app.py (pages/boot.py)

import plotly.graph_objects as go
import streamlit as st

from dpcore.audit import WHITE_BOX_UNAVAILABLE, basis_words, one_run_audit
from dpcore.exceptions import DPCoreError
from dpcore.experiments.views import audit_spec
from dpcore.figures.charts import privacy_region_figure
from dpcore.figures.views import audit_scores_figure
from dpcore.mechanisms import REGISTRY
from dpcore.params import PARAMS
from pages.common import (
    LEAKING_AUDIT,
    LEAKING_THREAT,
    LEAKING_TRIALS,
    audit_view_state,
    choice, download_code, enter_view, keep_choice, show_chart, param_help, shared_audit, dataset_picker, download_figure, fmt_eps, mechanisms_for, model_picker, param_widget, user_dataset,
)
from pages.auditview import show_verdict
from pages.links import linked_result, publish_settings, restore_from_url, shared_settings, write_to_url

enter_view("audit")
st.title("Audit: catch a mechanism leaking")
URL_KEYS = {'au_dataset': 'breast-cancer', 'au_model': 'logreg', 'au_mechanism': 'gradient-dpgd', 'au_epsilon': 1.0,
            'au_delta': 1e-05, 'au_cal': 'certified', 'au_c': 1.0, 'au_T': 50, 'au_trials': 500,
            'au_canary': 'auto', 'au_threat': 'white-box', 'au_noise': 1.0, 'au_seed': 0,
            'au_shown': False, 'au_onerun_shown': False}  # *_shown: the link brings the audit shown (linked_result)
# the view opens on the white-box audit that measures the mechanism (the one that catches bugs); a link
# that names au_threat=black-box still opens black-box.  T = 50 and 500 runs a side: about 2 s (4 s
# when a refutation is checked by a second audit) on two cores, ε ≥ 0.92 of a correct ε = 1
DEFAULT_THREAT = "white-box"
restore_from_url(URL_KEYS)
SHARED = {'dataset': 'au_dataset', 'epsilon': 'au_epsilon', 'delta': 'au_delta', 'iterations': 'au_T'}
shared_settings(SHARED)
st.markdown(
    "A **certified** ε is a proof; an **audited** ε is evidence. Two neighbouring datasets differ in one "
    "record; the mechanism trains many times on each, and the audit tries to tell the two apart. How well it "
    "can is limited by ε, so what it manages gives a **lower bound** on the ε actually spent: it can show that "
    "a claim is false, never that it is true. The view opens on the audit that watches every training step "
    "(white-box): it measures what the record moves each step against the noise that really ran, so it "
    "catches a mechanism that adds too little noise. About one audit in twenty refutes even a correct "
    "claim, by a hair, so a refutation turns red only when a second, independent audit confirms it."
)
# white-box: the threat under which this leak shows (declared once, with the lesson's last step)
LEAKING = audit_view_state(LEAKING_AUDIT, LEAKING_TRIALS, LEAKING_THREAT)
if st.button("Load a leaking setup (DP-GD with the published formula at c = 0.1, white-box)", key="au_leak"):
    st.session_state.update(LEAKING)
    st.rerun()
with st.sidebar:
    dataset = dataset_picker("au_dataset")
    model = model_picker(dataset, "au_model")
    mechs = mechanisms_for(model, ("baseline", "output", "objective", "gradient", "input", "local"))
    mechanism = choice("selectbox", "Mechanism", mechs, index=mechs.index("gradient-dpgd"), key="au_mechanism",
                       fallback="gradient-dpgd",
                             format_func=lambda m: f"{m} — {REGISTRY[m].name}")
    epsilon = param_widget("epsilon", "au_epsilon", label="ε target")
    delta = param_widget("delta", "au_delta", label="δ")
    cals = list(REGISTRY[mechanism].calibrations)
    calibration = choice("radio", "Calibration", cals, horizontal=True, key="au_cal", help=param_help("calibration"))
    c = param_widget("c", "au_c", label="constant c") if calibration == "published" else 1.0
    T = param_widget("iterations", "au_T", label="iterations T", value=50)
    noise_scale = param_widget("noise_scale", "au_noise", label="noise scale (1 = as calibrated)")
    seed = param_widget("seed", "au_seed", label="seed",
                        help="draws the runs (and a random canary): another seed is another audit of the same "
                             "setting")
    st.session_state.setdefault("au_trials", 500)
    trials = choice("select_slider", "runs per side (6000: the tight mode)", [100, 200, 500, 1000, 2000, 6000],
                    key="au_trials", fallback=500)
    threats = list(PARAMS["threat"].constraint.values)
    threat = choice("radio", "Threat model", threats, key="au_threat", horizontal=True, fallback=DEFAULT_THREAT,
                    index=threats.index(DEFAULT_THREAT), help=PARAMS["threat"].help)
    # the canary box shows under black-box only; a link's canary is checked (and a bad one said) either way
    keep_choice("au_canary", PARAMS["canary"].constraint.values, "canary pair")
    canary = (choice("selectbox", "canary pair", PARAMS["canary"].constraint.values, key="au_canary")
              if threat == "black-box" else PARAMS["canary"].default)
    end_to_end = (threat == "white-box" and REGISTRY[mechanism].family == "gradient"
                  and st.toggle("end-to-end check", key="au_e2e",
                                help="the white-box audit of a noisy-gradient mechanism measures it end to end "
                                     "already: a pair of real records trains through the mechanism's own code, and "
                                     "what the record moves every step (and how often it is sampled) is measured "
                                     "on both neighbours with the same noise; a bug in clipping, the sensitivity or "
                                     "the sampler then shows"))

st.caption(
    "**Black-box**: the attacker sees only the released model and scores a planted record (the canary) "
    "on it; this is what an outsider can do. **White-box**: the attacker sees every release along the way "
    "(each noisy gradient, the perturbed records) and knows every other record. For noisy-gradient "
    "mechanisms a pair of real records trains through the mechanism's own clipping and sampling, and what "
    "it moves each step is measured; the other mechanisms take the two records at the worst case the proof "
    "declares. Beside it, the *noise check* says what the noise that really ran certifies.")
if threat == "white-box" and mechanism in WHITE_BOX_UNAVAILABLE:
    st.info(f"No white-box audit for {mechanism}: {WHITE_BOX_UNAVAILABLE[mechanism]}. Pick **black-box** under "
            "Threat model to audit it from the outside.")
write_to_url(list(URL_KEYS))
publish_settings(SHARED)
try:
    config = audit_spec(dataset=dataset, model=model, mechanism=mechanism, epsilon=epsilon, delta=delta,
                        iterations=T, calibration=calibration, c=c, noise_scale=noise_scale, seed=seed)  # as exported
except DPCoreError as exc:
    st.error(f"Check the settings: {exc}")
    st.stop()


def run_audit(bar) -> dict:
    """The audit of ``config`` as the controls set it, confirmed by a second one where it refutes."""
    return shared_audit(config, trials, bar, dataset=user_dataset(dataset), canary=canary, threat=threat,
                        end_to_end=bool(end_to_end), confirm=True)


res, _ = linked_result("au_result", "au_shown", (config, trials, canary, threat, bool(end_to_end)),
                       st.button("Run the audit", type="primary", key="au_run"), run_audit, what="audit",
                       button="Run the audit")


def three_epsilons() -> None:
    c1, c2, c3 = st.columns(3)
    c1.metric("ε target", fmt_eps(res["epsilon_target"]))
    c2.metric("ε certified", fmt_eps(res["epsilon_certified"]))
    c3.metric(f"ε audited ({res['threat']}, lower bound)", fmt_eps(res["epsilon_lower_bound"]),
              help=f"holds with confidence {res['confidence']:g}: {basis_words(res)}")


if res:
    # the verdict in plain words first, the three ε's under it, the details folded (pages/auditview.py)
    show_verdict(res, three_epsilons)
    log_axes = st.toggle("log axes (the small error rates that matter for small δ)", key="au_log")
    fig = privacy_region_figure(res, log_axes=log_axes)
    show_chart(fig)
    st.caption("The shaded area is what the certified guarantee forbids: no attack's ROC can enter it. "
               "The dashed curve is what the target ε would forbid. The closer the blue ROC comes to "
               "the red curve, the tighter the audit.")
    download_figure(fig, "audit_privacy_region", "au_dl_region")
    hist = audit_scores_figure(res)  # as its export draws it
    show_chart(hist)
    download_figure(hist, "audit_scores", "au_dl_fig")
    download_code("audit", URL_KEYS, "au_dl_code")  # this audit as a notebook and a script

st.divider()
st.subheader("One training run, a thousand canaries")
st.markdown(
    "Many runs are what a tight audit needs; one run can still refute a claim. Here the training data get "
    "1,000 extra records, each a canary on its own feature, each left in or swapped for its opposite by a coin "
    "flip; the mechanism trains **once**, and the attacker guesses which canaries were in from the weights the "
    "model gives them. Too many right guesses refute ε (Steinke, Nasr & Jagielski 2023).")
one = None
if REGISTRY[mechanism].family != "gradient" or model != "logreg":
    st.info("The one-run audit trains logistic regression with a noisy-gradient mechanism "
            "(DP-GD, DP-SGD …): pick one of those to try it.")
else:
    ONE_RUN = "Run one training run with 1,000 canaries"
    one, _ = linked_result("au_onerun_result", "au_onerun_shown", config, st.button(ONE_RUN, key="au_onerun"),
                           lambda bar: one_run_audit(config, 1000, dataset=user_dataset(dataset)).to_dict(scores=True),
                           what="one-run audit", button=ONE_RUN)
if one:
    c1, c2, c3 = st.columns(3)
    c1.metric("ε certified (this run)", fmt_eps(one["epsilon_certified"]))
    c2.metric("right guesses", f"{one['correct']} of {one['guesses']}")
    c3.metric("ε audited from one run (lower bound)", fmt_eps(one["epsilon_lower_bound"]),
              help=f"holds with confidence {one['confidence']:g}: the guess count was fixed from the claim "
                   "before the run")
    hist = go.Figure()
    hist.add_trace(go.Histogram(x=one["scores"]["out"], name="canary out (its opposite trained)", opacity=0.6))
    hist.add_trace(go.Histogram(x=one["scores"]["in"], name="canary in", opacity=0.6))
    hist.update_layout(barmode="overlay", xaxis_title="the model's weight on the canary's feature",
                       yaxis_title="canaries", margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h"))
    show_chart(hist)
    st.caption(" ".join(one["notes"]) + " The further apart the two histograms, the more one run reveals.")
