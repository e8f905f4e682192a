from pages.boot import load_core

load_core()  # before the core: a new server can run a view before app.py (pages/boot.py)

import streamlit as st

from dpcore import datasets
from dpcore.exceptions import DPCoreError
from dpcore.experiments.run import RunSpec
from dpcore.experiments.studies import skew_curve
from dpcore.partition import SPLIT_CERTIFIES, SPLITS, client_sizes
from dpcore.mechanisms import REGISTRY
from dpcore.experiments.baselines import row_lambdas
from dpcore.experiments.views import distributed_spec, skew_grid
from dpcore.figures.views import skew_figures
from dpcore.figures.result import r_squared_words, realised_skew_rows, skew_words
from pages.common import (
    choice, delta_guard, download_code, enter_view, guessing_box, show_chart, param_help, client_bars, with_progress, dataset_picker, download_figure, download_table, fmt_eps, missed_target_note, model_picker, param_widget, reference_for, run_or_error, skew_refusal, user_dataset,
)
from pages.links import linked_result, publish_settings, restore_from_url, shared_settings, write_to_url

#: the certified ε's name: the worst client where clients compose in parallel, else all of them
EPS_LABEL = {"random": "max client ε (certified)", "stratified": "ε certified (all clients composed)"}

enter_view("distributed")
st.title("Distributed learning with uneven clients")
URL_KEYS = {'dist_dataset': 'breast-cancer', 'dist_model': 'logreg', 'dist_m': 4, 'dist_u': 1.0, 'dist_epsilon': 1.0, 'dist_delta': 1e-05, 'dist_cal': 'certified', 'dist_T': 100, 'dist_R': 3, 'dist_split': 'random',
            'dist_shown': False}  # dist_shown: the link brings the skew sweep shown (pages.links.linked_result)
restore_from_url(URL_KEYS)
SHARED = {'dataset': 'dist_dataset', 'epsilon': 'dist_epsilon', 'delta': 'dist_delta', 'iterations': 'dist_T'}
shared_settings(SHARED)
st.markdown(
    "m parties train locally with noisy gradient descent and the server aggregates once. **WD-DP** "
    "weights each party by its share of the data n_j/n; plain **averaging** (Jayaraman et al.) gives "
    "each 1/m. Move the skew u = n_max/n_min to see when the weighting matters."
)
c1, c0, c2, c3, c4 = st.columns(5)
dataset = dataset_picker("dist_dataset", container=c1)
model = model_picker(dataset, "dist_model", container=c0)
m = param_widget("clients", "dist_m", label="clients m", container=c2)
u = param_widget("skew", "dist_u", label="skew u", container=c3, refuse=skew_refusal(dataset, m))
epsilon = param_widget("epsilon", "dist_epsilon", label="ε", container=c4)
c5, c8, c6, c7 = st.columns(4)
calibration = choice("radio", "Calibration", ["certified", "published"], key="dist_cal", horizontal=True, container=c5,
                       help=param_help("calibration"))
delta = param_widget("delta", "dist_delta", label="δ", container=c8)
T = param_widget("iterations", "dist_T", label="local iterations T", container=c6)
repeats = param_widget("repeats", "dist_R", label="repeats", value=3, container=c7)
split = choice("radio", "Which records each client holds", list(SPLITS), key="dist_split", horizontal=True,
                 format_func={"random": "a random split (the papers')", "stratified": "stratified by label"}.get,
                 help=REGISTRY["distributed-wddp"].options["split"].help)
st.caption(f"Certified with this split: {SPLIT_CERTIFIES[split]}.")

write_to_url(list(URL_KEYS))
publish_settings(SHARED)
delta_guard(RunSpec(dataset=dataset, model=model, delta=delta))  # δ ≥ 1/n: said as Explore says it
own_data = user_dataset(dataset)
n = own_data.n if own_data is not None else datasets.DATASETS[dataset].n_train
try:
    sizes = client_sizes(n, m, u) if n else None
except DPCoreError as exc:
    st.error(f"{exc}")
    st.stop()
if sizes:
    client_bars(sizes)
    if said := skew_words(u, sizes):
        st.warning(said + ": the results below are for the clients' sizes.")

cols = st.columns(2)
for col, mech in zip(cols, ("distributed-wddp", "distributed-avg")):
    with col:
        st.subheader(REGISTRY[mech].name)
        rec = run_or_error(distributed_spec(mech, dataset=dataset, model=model, epsilon=epsilon, delta=delta,
                                            iterations=T, repeats=repeats, clients=m, skew=u,
                                            calibration=calibration, split=split))  # as its export runs it
        if rec:
            if rec.get("accuracy_mean") is not None:
                st.metric("test accuracy", f"{rec['accuracy_mean']:.4f}")
            else:
                st.metric("test RMSE", f"{rec['rmse_mean']:.4f}")
            st.metric(EPS_LABEL[split], fmt_eps(rec["epsilon_certified"]))
            if rec.get("accuracy_guess") is not None:
                st.caption(f"guessing (always the majority class): {rec['accuracy_guess']:.4f}")
            elif rec.get("rmse_guess") is not None:
                st.caption(f"predicting the training mean: {rec['rmse_guess']:.4f} · "
                           f"{r_squared_words(rec['rmse_mean'], rec['rmse_guess'])}")
            guessing_box([rec], lambda r: f"{REGISTRY[mech].short} with {m} clients at skew u = {u:g}",
                         advice="Try a larger ε, fewer clients or a smaller skew: the smallest client's noise "
                                "grows as its share of the records shrinks.")
            cert = rec["epsilon_certified"]
            if cert is None or cert > rec["epsilon_target"] * (1 + 1e-6):
                st.error(f"The noise that ran certifies ε = {fmt_eps(cert)}, above the target "
                         f"{fmt_eps(rec['epsilon_target'])}: this calibration under-delivers.")
            clients = [{"client": j + 1, "records": size, "weight": w, "σ": sig, "ε certified": fmt_eps(e)}
                       for j, (size, w, sig, e) in enumerate(zip(rec["client_sizes"], rec["weights"],
                                                                 rec["client_sigmas"], rec["client_epsilons"]))]
            st.dataframe(clients, hide_index=True, width="stretch")
            download_table(clients, f"clients_{mech}", f"dist_dl_{mech}")

#: what the skew sweep depends on: a chart drawn for other values is marked as stale
swept_for = (dataset, model, m, u, epsilon, delta, calibration, T, repeats, split)
SKEWS = skew_grid(u)  # the chosen skew is always on the chart
SWEEP = "Sweep the skew u ∈ {" + ", ".join(f"{v:g}" for v in SKEWS) + "}"
pressed = st.button(SWEEP, type="primary", key="dist_run")
curve, _ = linked_result(
    "dist_curve", "dist_shown", swept_for, pressed,
    lambda bar: skew_curve(dataset, epsilon, delta, model=model, clients=m, skews=SKEWS, iterations=T, repeats=repeats,
                           calibration=calibration, split=split, data=own_data, ctx=with_progress(bar)),
    what="skew sweep", button=SWEEP)
if curve:
    rows = [r for r in curve["rows"] if "error" not in r]
    for r in curve["rows"]:
        if "error" in r:
            st.error(f"{r['mechanism']} at u = {r['skew']:g}: {r['error']}")
    ref = reference_for(RunSpec(dataset=dataset, model=model), row_lambdas(rows, None))  # no λ: the model's own
    fig, fig_gap = skew_figures(rows, ref)  # as its export draws them
    show_chart(fig)
    if ref is not None:
        st.caption(ref.definition())
    guessing_box(rows, lambda r: f"{REGISTRY[r['mechanism']].short} at u = {r['skew']:g}",
                 guess=None if ref is None else ref.guess)
    missed_target_note(rows, x="skew")
    download_figure(fig, "accuracy_vs_skew", "dist_dl_fig")
    show_chart(fig_gap)
    download_figure(fig_gap, "gap_vs_skew", "dist_dl_fig_gap")
    download_table(realised_skew_rows(rows), "skew_curve", "dist_dl_curve")  # the u asked and the clients
    download_code("distributed", URL_KEYS, "dist_dl_code")  # this view as a notebook and a script
