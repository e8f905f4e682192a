import plotly.graph_objects as go
import streamlit as st

from dpcore.audit import audit
from dpcore.exceptions import DPCoreError
from dpcore.experiment import RunConfig
from dpcore.mechanisms import REGISTRY
from pages.common import (
    dataset_picker,
    download_figure,
    fmt_eps,
    mechanisms_for,
    model_picker,
    param_widget,
    publish_settings,
    restore_from_url,
    shared_settings,
    user_dataset,
    write_to_url,
)

st.title("Audit: catch a mechanism leaking")
URL_KEYS = {'au_dataset': 'breast-cancer', 'au_model': 'logreg', 'au_mechanism': 'gradient-dpgd', 'au_epsilon': 1.0, 'au_delta': 1e-05, 'au_cal': 'certified', 'au_c': 1.0, 'au_T': 50, 'au_trials': 500, 'au_canary': 'lowest-variance'}
restore_from_url(URL_KEYS)
SHARED = {'dataset': 'au_dataset', 'epsilon': 'au_epsilon', 'delta': 'au_delta', 'iterations': 'au_T'}
shared_settings(SHARED)
st.markdown(
    "A **certified** ε is a proof; an **audited** ε is evidence. Two neighbouring datasets differ in one "
    "record, replaced by a *canary*. The mechanism runs many times on each, and a threshold on the "
    "canary's score tries to tell the two apart. Clopper–Pearson bounds on its error rates give a lower "
    "bound on the ε actually spent. A correct mechanism is never caught above its certified ε "
    "(beyond the confidence level α)."
)
with st.sidebar:
    dataset = dataset_picker("au_dataset")
    model = model_picker(dataset, "au_model")
    mechs = mechanisms_for(model, ("baseline", "output", "objective", "gradient", "input", "local"))
    mechanism = st.selectbox("Mechanism", mechs, index=mechs.index("gradient-dpgd"), key="au_mechanism",
                             format_func=lambda m: f"{m} — {REGISTRY[m].name}")
    epsilon = param_widget("epsilon", "au_epsilon", label="ε target")
    delta = param_widget("delta", "au_delta", label="δ")
    cals = list(REGISTRY[mechanism].calibrations)
    calibration = st.radio("Calibration", cals, horizontal=True, key="au_cal")
    c = param_widget("c", "au_c", label="constant c") if calibration == "published" else 1.0
    T = param_widget("iterations", "au_T", label="iterations T", value=50)
    st.session_state.setdefault("au_trials", 500)
    trials = st.select_slider("runs per side", [100, 200, 500, 1000, 2000], key="au_trials")
    canary = st.selectbox("canary", ["lowest-variance", "random-unit", "mislabeled"], key="au_canary")

write_to_url(list(URL_KEYS))
publish_settings(SHARED)
if st.button("Run the audit", type="primary", key="au_run"):
    bar = st.progress(0.0, text="starting…")
    try:
        config = RunConfig(dataset=dataset, model=model, mechanism=mechanism, epsilon=epsilon, delta=delta,
                           iterations=T, calibration=calibration, c=c, repeats=1)
        st.session_state["au_result"] = audit(
            config, trials, canary=canary, dataset=user_dataset(dataset),
            progress=lambda done, total: bar.progress(done / total, text=f"{done}/{total} runs")).to_dict()
    except DPCoreError as exc:
        st.error(f"{exc}")
    bar.empty()

res = st.session_state.get("au_result")
if res:
    c1, c2, c3 = st.columns(3)
    c1.metric("ε target", fmt_eps(res["epsilon_target"]))
    c2.metric("ε certified", fmt_eps(res["epsilon_certified"]))
    c3.metric("ε audited (lower bound)", fmt_eps(res["epsilon_lower_bound"]))
    verdict = res["verdict"]
    (st.error if verdict == "claim not met" else st.success if verdict == "consistent" else st.info)(
        f"Verdict: **{verdict}**")
    st.caption(f"{res['canary_description']}. {res.get('note') or ''}")
    fig = go.Figure()
    fig.add_trace(go.Histogram(x=res["scores"]["without_canary"], name="D (canary absent)", opacity=0.6))
    fig.add_trace(go.Histogram(x=res["scores"]["with_canary"], name="D' (canary present)", opacity=0.6))
    if res.get("threshold") is not None:
        fig.add_vline(x=res["threshold"], line_dash="dot", annotation_text="threshold")
    fig.update_layout(barmode="overlay", xaxis_title=f"canary score ({res['score']})", yaxis_title="runs",
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h"))
    st.plotly_chart(fig, width="stretch")
    download_figure(fig, "audit_scores", "au_dl_fig")
