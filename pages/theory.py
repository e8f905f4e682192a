from pages.boot import load_core

load_core()  # before the core: a new server can run a view before app.py (pages/boot.py)

import streamlit as st

from dpcore.exceptions import DPCoreError
from dpcore.experiments.studies import compare_measured
from dpcore.figures.result import measured_note
from dpcore.figures.views import measured_figure, scaling_figure
from dpcore.theory.catalog import bounds_report, scaling_report
from pages.common import (
    choice, download_code, enter_view, show_chart, readable, with_progress, dataset_picker, download_figure, download_table, model_picker, param_widget, skew_refusal, user_datasets,
)
from pages.links import linked_result, publish_settings, restore_from_url, shared_settings, write_to_url

enter_view("theory")
st.title("Theory: the published bounds, evaluated")
URL_KEYS = {'th_dataset': 'adult', 'th_model': 'logreg', 'th_epsilon': 0.1, 'th_delta': 1e-05, 'th_T': 1000, 'th_m': 4, 'th_u': 1.0,
            'th_seed': '001', 'th_over': 'n', 'th_rows': ['001-wang2017-gd', '001-kang-input', '002-dbdp-sgd', '003-input'],
            'th_shown': False}  # th_shown: the link brings the measured gap shown (pages.links.linked_result)
restore_from_url(URL_KEYS)
SHARED = {'dataset': 'th_dataset', 'epsilon': 'th_epsilon', 'delta': 'th_delta', 'iterations': 'th_T'}
shared_settings(SHARED)
st.markdown(
    "Every noise bound and excess-risk bound the seed papers tabulate, **as published** (LaTeX), and "
    "evaluated at your dataset's n, d, p and your ε, δ, T. Big-O constants are set to 1 and marked "
    "*order only*: compare **slopes**, not absolute values, for those rows."
)
c1, c2, c3, c4 = st.columns(4)
# The catalog is evaluated at a registered dataset's documented n and d; uploads are for the
# views that train (Explore, Compare, Local vs central, Distributed, Audit).
dataset = dataset_picker("th_dataset", container=c1, default="adult", uploads=False)
if user_datasets():
    c1.caption("Uploaded data are not listed: the bounds use a registered dataset's documented n and d.")
model = model_picker(dataset, "th_model", container=c2)
epsilon = param_widget("epsilon", "th_epsilon", label="ε", container=c3, value=0.1)
delta = param_widget("delta", "th_delta", label="δ", container=c4)
c5, c6, c7 = st.columns(3)
T = param_widget("iterations", "th_T", label="iterations T", container=c5, value=1000)
m = param_widget("clients", "th_m", label="clients m (seed 004 rows)", container=c6)
u = param_widget("skew", "th_u", label="skew u", container=c7, refuse=skew_refusal(dataset, m))

write_to_url(list(URL_KEYS))
publish_settings(SHARED)
try:
    report = bounds_report(dataset, model, epsilon, delta, T, m, u)
except DPCoreError as exc:
    st.error(f"{exc}")
    st.stop()

with st.expander("Parameters and where they came from"):
    params_table = [{"name": k, "value": v["value"], "source": v["source"], "meaning": v["description"]}
                    for k, v in report["parameters"].items()]
    st.dataframe(params_table, hide_index=True, width="stretch")
    download_table(params_table, "bounds_parameters", "th_dl_params")

table = [{"row": r["id"], "method": r["method"], "reference": r["reference"], "perturbation": r["perturbation"],
          "δ = 0": r["pure"], "noise": r.get("noise"), "noise is": r.get("noise_quantity"),
          "excess risk": r.get("risk"), "slope in n": r["slopes"]["n"]["risk"],
          "slope in ε": r["slopes"]["epsilon"]["risk"], "exactness": r["exactness"]}
         for r in report["rows"]]
st.dataframe(readable(table), hide_index=True, width="stretch")
download_table(table, "bounds", "th_dl_table")

seed = choice("selectbox", "Show the rows of", ["001", "002", "003", "004"], key="th_seed",
                    format_func=lambda s: f"seed {s}")
for r in report["rows"]:
    if r["seed"] != seed:
        continue
    with st.expander(f"{r['id']}: {r['method']} ({r['reference']})"):
        st.caption(r["citation"])
        if r["noise_latex"] != "—":
            st.latex(r["noise_latex"])
        if r["risk_latex"] != "—":
            st.latex(r["risk_latex"])
        if r.get("note"):
            st.info(r["note"])

st.subheader("How each bound scales")
over = choice("radio", "Vary", ["n", "epsilon"], horizontal=True, key="th_over")
sc = scaling_report(dataset, model, epsilon, delta, T, m, u, over=over)
st.session_state.setdefault("th_rows", list(URL_KEYS["th_rows"]))
chosen = choice("multiselect", "Rows", [r["id"] for r in sc["rows"]], key="th_rows")
fig = scaling_figure(sc, chosen)  # as its export draws it
show_chart(fig)
download_figure(fig, "bounds_scaling", "th_dl_fig")

st.subheader("Measured gap beside the prediction")
MEASURE = "Measure (runs the implementing mechanisms)"
pressed = st.button(MEASURE, key="th_measure")
meas, _ = linked_result(
    "th_measured", "th_shown", (dataset, model, epsilon, delta, min(T, 200), over), pressed,
    lambda bar: compare_measured(dataset, model, epsilon, delta, min(T, 200), over=over, repeats=2,
                                 ctx=with_progress(bar)),
    what="measured gap", button=MEASURE)
if meas:
    st.caption(meas.get("dataset_note", ""))
    fig2 = measured_figure(meas)  # as its export draws it
    show_chart(fig2)
    st.caption(measured_note(meas))  # what the dotted lines' heights are not, and slopes that part
    for mrec in meas["mechanisms"]:
        if mrec.get("note"):
            st.info(mrec["note"])
    download_figure(fig2, "measured_vs_predicted", "th_dl_fig2")
download_code("theory", URL_KEYS, "th_dl_code")  # this view as a notebook and a script
