import streamlit as st

from dpcore.exceptions import DPCoreError
from dpcore.experiment import RunConfig, epsilon_sweep
from dpcore.mechanisms import REGISTRY
from pages.common import (
    band_figure,
    dataset_picker,
    download_figure,
    download_table,
    mechanisms_for,
    model_picker,
    param_widget,
    publish_settings,
    restore_from_url,
    shared_settings,
    write_to_url,
)

st.title("Compare mechanisms over ε")
URL_KEYS = {'cmp_dataset': 'breast-cancer', 'cmp_model': 'logreg', 'cmp_eps': '0.1, 0.3, 1, 3', 'cmp_delta': 1e-05, 'cmp_T': 100, 'cmp_R': 3, 'cmp_cal': 'certified'}
restore_from_url(URL_KEYS)
SHARED = {'dataset': 'cmp_dataset', 'delta': 'cmp_delta', 'iterations': 'cmp_T'}
shared_settings(SHARED)

PRESETS = {
    "Seed 001, Fig. 2 (Adult, LR, ε ≤ 0.25)": dict(
        cmp_dataset="adult", cmp_model="logreg", cmp_eps="0.01, 0.05, 0.1, 0.15, 0.2, 0.25",
        cmp_mechs=["input-kang", "output-gaussian", "gradient-dpgd", "objective-gaussian"], cmp_T=100),
    "Seed 002, Fig. 1 (Adult, ε from 0.01 to 7)": dict(
        cmp_dataset="adult", cmp_model="logreg", cmp_eps="0.01, 0.1, 0.5, 1, 3, 7",
        cmp_mechs=["input-dbdp", "input-dbdp-if", "gradient-dpsgd", "output-bolt-on"], cmp_T=100),
    "Seed 003, Fig. 1 (synthetic regression, d = 14)": dict(
        cmp_dataset="synthetic-regression", cmp_model="linreg", cmp_eps="0.1, 0.3, 1, 3",
        cmp_mechs=["input-fukuchi", "objective-gaussian", "output-laplace"], cmp_T=100),
    "Seed 004, Fig. 1 (Adult, 4 clients, skew 4)": dict(
        cmp_dataset="adult", cmp_model="logreg", cmp_eps="0.1, 0.3, 1, 3",
        cmp_mechs=["distributed-wddp", "distributed-avg", "gradient-dpgd"], cmp_T=100),
}

st.caption("One click loads a seed paper's setting; then press **Run comparison**.")
cols = st.columns(len(PRESETS))
for col, (name, values) in zip(cols, PRESETS.items()):
    if col.button(name, key=f"preset_{name}"):
        for k, v in values.items():
            st.session_state[k] = v
        st.rerun()

c1, c2 = st.columns(2)
dataset = dataset_picker("cmp_dataset", container=c1)
model = model_picker(dataset, "cmp_model", container=c2)
available = mechanisms_for(model)
default = [m for m in ("gradient-dpgd", "output-gaussian", "objective-gaussian") if m in available]
if "cmp_mechs" in st.session_state:
    st.session_state["cmp_mechs"] = [m for m in st.session_state["cmp_mechs"] if m in available]
mechs = st.multiselect("Mechanisms", available, default=default, key="cmp_mechs",
                       format_func=lambda m: f"{m} — {REGISTRY[m].name}")
st.session_state.setdefault("cmp_eps", "0.1, 0.3, 1, 3")
eps_text = st.text_input("ε grid (comma-separated)", key="cmp_eps")
c3, c4, c5, c6 = st.columns(4)
delta = param_widget("delta", "cmp_delta", label="δ", container=c3)
T = param_widget("iterations", "cmp_T", label="iterations T", container=c4)
repeats = param_widget("repeats", "cmp_R", label="repeats", value=3, container=c5)
calibration = c6.radio("Calibration", ["certified", "published"], key="cmp_cal", horizontal=True)

try:
    epsilons = sorted({float(v) for v in eps_text.replace(";", ",").split(",") if v.strip()})
    base = RunConfig(dataset=dataset, model=model, delta=delta, iterations=T, repeats=repeats,
                     calibration=calibration, clients=4, skew=4.0)
    if not epsilons or any(e <= 0 for e in epsilons):
        raise DPCoreError("the ε grid needs at least one value > 0, e.g. 0.1, 1, 10")
    if not mechs:
        raise DPCoreError("choose at least one mechanism")
except ValueError as exc:
    st.error(f"Check the settings: {exc}")
    st.stop()

write_to_url(list(URL_KEYS))
publish_settings(SHARED)
if st.button("Run comparison", type="primary", key="cmp_run"):
    bar = st.progress(0.0, text="starting…")
    rows = epsilon_sweep(base, mechs, epsilons,
                         progress=lambda k, n, label: bar.progress(k / n, text=f"{k}/{n}: {label}"))
    bar.empty()
    st.session_state["cmp_rows"] = rows

rows = st.session_state.get("cmp_rows")
if rows:
    for r in rows:
        if "error" in r:
            st.error(f"{r['mechanism']} at ε = {r['epsilon']:g}: {r['error']}")
    ok = [r for r in rows if "error" not in r]
    metric = "accuracy_mean" if any("accuracy_mean" in r for r in ok) else "rmse_mean"
    baseline = next((r.get(metric.replace("_mean", "_nonprivate")) for r in ok), None)
    fig1 = band_figure(ok, "epsilon", metric, title=metric.split("_")[0] + " against ε",
                       baseline=baseline, x_title="ε", y_title=metric.split("_")[0])
    fig2 = band_figure(ok, "epsilon", "gap_mean", log_y=True, title="optimality gap against ε",
                       x_title="ε", y_title="L(θ) − L*")
    st.plotly_chart(fig1, width="stretch")
    download_figure(fig1, "compare_metric", "cmp_dl_fig1")
    st.plotly_chart(fig2, width="stretch")
    download_figure(fig2, "compare_gap", "cmp_dl_fig2")
    st.dataframe(ok, width="stretch")
    download_table(ok, "compare", "cmp_dl_table")
