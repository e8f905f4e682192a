import math

import plotly.graph_objects as go
import streamlit as st

from dpcore.exceptions import DPCoreError
from dpcore.figures import hover_texts, mark_missed
from dpcore.experiments.studies import tradeoff
from pages.common import (
    with_progress,
    dataset_picker,
    download_figure,
    download_table,
    fmt_eps,
    mechanisms_for,
    missed_target_note,
    param_widget,
    publish_settings,
    restore_from_url,
    shared_settings,
    user_dataset,
    write_to_url,
)

st.title("Local vs central privacy")
URL_KEYS = {'lc_dataset': 'breast-cancer', 'lc_epsilon': 1.0, 'lc_delta': 1e-05, 'lc_R': 2, 'lc_T': 100}
restore_from_url(URL_KEYS)
SHARED = {'dataset': 'lc_dataset', 'epsilon': 'lc_epsilon', 'delta': 'lc_delta'}
shared_settings(SHARED)
st.markdown(
    "A **central** guarantee protects a record from whoever sees the *model*; a **local** one protects "
    "it from the *server* that collects the data. Central mechanisms give no local protection (local "
    "ε = ∞); input perturbation and local DP give both. Here every mechanism runs at one central target ε."
)

c1, c2, c3, c4 = st.columns(4)
# Read in accuracy, with labels through randomized response: classification data only.
dataset = dataset_picker("lc_dataset", container=c1, task="classification")
epsilon = param_widget("epsilon", "lc_epsilon", label="central target ε", container=c2)
delta = param_widget("delta", "lc_delta", label="δ", container=c3)
repeats = param_widget("repeats", "lc_R", label="repeats", value=2, container=c4)
st.session_state.setdefault("lc_T", 100)
T = st.slider("iterations T", 10, 500, key="lc_T")
mechs = [m for m in mechanisms_for("logreg", ("output", "objective", "gradient", "input", "local"))]

write_to_url(list(URL_KEYS))
publish_settings(SHARED)
if st.button("Run the trade-off", type="primary", key="lc_run"):
    bar = st.progress(0.0, text="starting…")
    try:
        st.session_state["lc_result"] = tradeoff(
            dataset, epsilon, delta, iterations=T, repeats=repeats, mechanisms=mechs,
            data=user_dataset(dataset), ctx=with_progress(bar))
    except DPCoreError as exc:
        st.error(f"{exc}")
    bar.empty()

out = st.session_state.get("lc_result")
if out:
    rows = out["rows"]
    st.dataframe([{"mechanism": r["mechanism"], "family": r["family"],
                   "ε local": fmt_eps(r.get("epsilon_local")), "ε certified": fmt_eps(r.get("epsilon_certified")),
                   "accuracy": r.get("accuracy_mean"), "gap": r.get("gap_mean"),
                   "error": r.get("error", "")} for r in rows], width="stretch", hide_index=True)
    finite = [r for r in rows if "error" not in r and r.get("epsilon_local") is not None
              and math.isfinite(r["epsilon_local"])]
    fig = go.Figure()
    xs, ys = [r["epsilon_local"] for r in finite], [r["accuracy_mean"] for r in finite]
    targets, certs = [r.get("epsilon_target") for r in finite], [r.get("epsilon_certified") for r in finite]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers+text", text=[r["mechanism"] for r in finite],
                             textposition="top center", name="at the target ε",
                             hovertext=[f"{r['mechanism']}<br>local ε {r['epsilon_local']:.4g}<br>{h}"
                                        for r, h in zip(finite, hover_texts(targets, certs))],
                             hoverinfo="text"))
    mark_missed(fig, xs, ys, targets, certs)
    curve = [r for r in out["curve"] if "error" not in r and r.get("epsilon_local") is not None
             and math.isfinite(r["epsilon_local"])]
    fig.add_trace(go.Scatter(x=[r["epsilon_local"] for r in curve], y=[r["accuracy_mean"] for r in curve],
                             mode="lines+markers", name=f"{out['curve_mechanism']}, input noise varied"))
    central = [r for r in rows if "error" not in r and r.get("epsilon_local") is not None
               and math.isinf(r["epsilon_local"])]
    if central:
        best = max(r["accuracy_mean"] for r in central)
        fig.add_hline(y=best, line_dash="dot", annotation_text="best central mechanism (local ε = ∞)")
    fig.update_xaxes(type="log", title="local ε (protection against the server; smaller is stronger)")
    fig.update_yaxes(title="test accuracy")
    fig.update_layout(margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h"))
    st.plotly_chart(fig, width="stretch")
    missed_target_note([r for r in rows if "error" not in r], target="epsilon_target")
    download_figure(fig, "local_vs_central", "lc_dl_fig")
    download_table(rows + out["curve"], "local_vs_central", "lc_dl_table")
    st.caption(out["note"])
