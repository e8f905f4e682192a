from pages.boot import load_core

load_core()  # before the core: a new server can run a view before app.py (pages/boot.py)

import math

import streamlit as st

from dpcore.experiments.baselines import row_lambdas
from dpcore.experiments.run import RunSpec
from dpcore.figures.charts import misses_target, tradeoff_figure
from dpcore.figures.result import best_central_words, curve_note, curve_point_name, sampling_note, sampling_words
from dpcore.experiments.studies import tradeoff
from dpcore.experiments.views import tradeoff_mechanisms
from dpcore.params import PARAMS
from pages.common import (
    bounded_slider, delta_guard, download_code, enter_view, guessing_box, show_chart, with_progress, dataset_picker, download_figure, download_table, fmt_eps, missed_target_note, param_widget, reference_for, user_dataset,
)
from pages.links import linked_result, publish_settings, restore_from_url, shared_settings, write_to_url

enter_view("local_central")
st.title("Local vs central privacy")
URL_KEYS = {'lc_dataset': 'breast-cancer', 'lc_epsilon': 1.0, 'lc_delta': 1e-05, 'lc_R': 2, 'lc_T': 100,
            'lc_shown': False}  # lc_shown: the link brings the trade-off shown (pages.links.linked_result)
restore_from_url(URL_KEYS)
SHARED = {'dataset': 'lc_dataset', 'epsilon': 'lc_epsilon', 'delta': 'lc_delta'}
shared_settings(SHARED)
st.markdown(
    "A **central** guarantee protects a record from whoever sees the *model*; a **local** one protects "
    "it from the *server* that collects the data. Central mechanisms give no local protection (local "
    "ε = ∞); input perturbation and local DP give both, and so does distributed learning, where each party "
    "noises its own updates and the server sees only those (worth the worst party's ε, the parties being a "
    "random split of the records). Here every mechanism runs at one central target ε; the distributed rows "
    f"are one federation of **m = {PARAMS['clients'].default} equal clients** (skew u = "
    f"{PARAMS['skew'].default:g}, the records split at random): the Distributed view varies both."
)

c1, c2, c3, c4 = st.columns(4)
# Read in accuracy, with labels through randomized response: classification data only.
dataset = dataset_picker("lc_dataset", container=c1, task="classification")
epsilon = param_widget("epsilon", "lc_epsilon", label="central target ε", container=c2)
delta = param_widget("delta", "lc_delta", label="δ", container=c3)
repeats = param_widget("repeats", "lc_R", label="repeats", value=2, container=c4)
T = bounded_slider("iterations T", 10, 500, "lc_T", URL_KEYS["lc_T"])
mechs = tradeoff_mechanisms()  # as its export runs them (dpcore.experiments.views)

write_to_url(list(URL_KEYS))
publish_settings(SHARED)
delta_guard(RunSpec(dataset=dataset, delta=delta))  # δ ≥ 1/n: no real guarantee, said as Explore says it
pressed = st.button("Run the trade-off", type="primary", key="lc_run")
out, _ = linked_result(
    "lc_result", "lc_shown", (dataset, epsilon, delta, T, repeats, tuple(mechs)), pressed,
    lambda bar: tradeoff(dataset, epsilon, delta, iterations=T, repeats=repeats, mechanisms=mechs,
                         data=user_dataset(dataset), ctx=with_progress(bar)),
    what="trade-off", button="Run the trade-off")
if out:
    rows = out["rows"]
    # every mechanism in view at once: as tall as its rows (a header and 35 px a row), no scroll box
    st.dataframe([{"mechanism": r["mechanism"], "family": r["family"],
                   "ε local": fmt_eps(r.get("epsilon_local")), "ε certified": fmt_eps(r.get("epsilon_certified")),
                   "accuracy": r.get("accuracy_mean"), f"± sd ({out.get('repeats', repeats)} runs)": r.get("accuracy_std"),
                   "gap": r.get("gap_mean"),
                   "sampling": sampling_words(r),  # the rate each ran with (DP-SGD, DP-LSSGD)
                   "error": r.get("error", "")} for r in rows], width="stretch", hide_index=True,
                 height=38 + 35 * len(rows))
    ok = [r for r in rows if "error" not in r]
    ref = reference_for(RunSpec(dataset=dataset, model="logreg"), row_lambdas(ok, None))  # no λ: the model's own
    fig = tradeoff_figure(out, baseline=None if ref is None else ref.value,
                          baseline_label="non-private" if ref is None else ref.label)
    fig.update_layout(title=f"Test accuracy against local ε, at central ε = {fmt_eps(out['epsilon'])}")
    show_chart(fig)
    st.caption(best_central_words(out, None if ref is None else ref.value))  # the dotted line: a best of N means
    st.caption(curve_note(out, None if ref is None else ref.guess))  # what the grey curve holds fixed, and does
    if note := sampling_note(ok):
        st.caption(note)
    if ref is not None:
        st.caption(ref.definition())
        curve = [r for r in out["curve"] if "error" not in r]  # the curve's points too: every shown series
        guessing_box(ok + curve, lambda r: curve_point_name(out, r) if "input_sigma" in r else r["mechanism"],
                     guess=ref.guess,
                     advice="At this ε the noise outweighs each record, and the mean over a few runs can even "
                            "land below guessing (input (Fukuchi)'s runs are sign-flipped models there: turned "
                            "around, they score well). Explore's note on each says why; a larger ε lets the "
                            "data win.")
    in_chart = [r for r in ok if r.get("epsilon_local") is not None and math.isfinite(r["epsilon_local"])]
    missed_target_note(in_chart, target="epsilon_target")  # the points drawn above
    table_only = [f"{r['mechanism']} (certified ε = {fmt_eps(r.get('epsilon_certified'))} for a target of "
                  f"{fmt_eps(r.get('epsilon_target'))})" for r in ok if r not in in_chart
                  and misses_target(r.get("epsilon_target"), r.get("epsilon_certified"))]
    if table_only:  # central mechanisms and heuristics: in the table, not in the chart
        st.warning("In the table only (no local guarantee, so not drawn), missing its target: "
                   + "; ".join(table_only) + ".")
    download_figure(fig, "local_vs_central", "lc_dl_fig")
    download_table(rows + out["curve"], "local_vs_central", "lc_dl_table")
    download_code("local_central", URL_KEYS, "lc_dl_code")  # this trade-off as a notebook and a script
    st.caption(out["note"])
