from pages.boot import load_core

load_core()  # before the core: a new server can run a view before app.py (pages/boot.py)

import streamlit as st

from dpcore import datasets
from dpcore.exceptions import DPCoreError
from dpcore.experiments.baselines import row_lambdas
from dpcore.experiments.studies import (
    CENTRAL_MECHANISMS,
    CLASSROOM_COMPARE,
    epsilon_sweep,
    shipped_classroom_compare,
    with_search_spent,
)
from dpcore.mechanisms import REGISTRY
from dpcore.experiments.views import compare_setting
from dpcore.experiments.presets import PRESETS as PAPER_PRESETS
from dpcore.experiments.sweep import warm_workers
from dpcore.figures.result import gap_objectives_note, sampling_note, split_skew_words, tuning_cost_note
from dpcore.figures.views import compare_figures
from pages.common import (
    choice, delta_guard, download_code, enter_view, guessing_box, keep_choice, show_chart, param_help, readable, app_context, with_progress, dataset_picker, download_figure, download_table, live_drawer, mechanisms_for, missed_target_note, model_picker, param_widget, reference_for, reference_notice, skew_refusal, user_dataset,
)
from pages.links import linked_result, publish_settings, restore_from_url, shared_settings, write_to_url

enter_view("compare")
st.title("Compare mechanisms over ε")
URL_KEYS = {'cmp_dataset': 'breast-cancer', 'cmp_model': 'logreg', 'cmp_eps': '0.1, 0.3, 1, 3', 'cmp_delta': 1e-05, 'cmp_T': 100, 'cmp_R': 3, 'cmp_cal': 'certified', 'cmp_clients': 4, 'cmp_skew': 4.0, 'cmp_lam': 1e-3, 'cmp_paper': '', 'cmp_tuned': True,
            'cmp_mechs': ["gradient-dpgd", "output-gaussian", "objective-gaussian"],
            'cmp_shown': False}  # cmp_shown: the link brings the comparison shown (pages.links.linked_result)
restore_from_url(URL_KEYS)
SHARED = {'dataset': 'cmp_dataset', 'delta': 'cmp_delta', 'iterations': 'cmp_T'}
shared_settings(SHARED)

CENTRAL = list(CENTRAL_MECHANISMS)
_C = CLASSROOM_COMPARE  # the first preset: `python -m dpcore prepare` computes it ahead


#: a preset's comparison setting, field by field, into this view's widgets
_WIDGETS = {"dataset": "cmp_dataset", "model": "cmp_model", "mechanisms": "cmp_mechs", "iterations": "cmp_T",
            "delta": "cmp_delta", "lam": "cmp_lam", "clients": "cmp_clients", "skew": "cmp_skew"}


def _from_paper(preset_id: str, dataset: str, **overrides) -> dict:
    """A seed figure's comparison setting (dpcore.experiments.presets) as widget values; through
    ``cmp_paper`` the preset's per-mechanism settings and data options hold too."""
    setting = PAPER_PRESETS[preset_id].comparison(dataset)
    out = {_WIDGETS[k]: v for k, v in setting.items() if k in _WIDGETS}
    out.update(cmp_eps=", ".join(f"{e:g}" for e in setting["epsilons"]), cmp_R=5, cmp_paper=preset_id,
               cmp_tuned=False)  # the paper's own settings
    out.update(overrides)
    return out


PRESETS = {
    "All central mechanisms, Adult (8 ε × 5 repeats)": dict(
        cmp_dataset=_C["dataset"], cmp_model=_C["model"], cmp_eps=", ".join(f"{e:g}" for e in _C["epsilons"]),
        cmp_mechs=list(_C["mechanisms"]), cmp_T=_C["iterations"], cmp_delta=_C["delta"], cmp_R=_C["repeats"],
        cmp_lam=_C["lam"], cmp_cal=_C["calibration"], cmp_paper="", cmp_tuned=_C["tuned"]),
    "Seed 001, Fig. 2 (Adult, LR, ε ≤ 0.25)": _from_paper("001-fig2", "adult"),
    "Seed 002, Fig. 1 (Adult, ε from 0.01 to 7)": _from_paper("002-fig1", "adult"),
    "Seed 003 setting against ε (synthetic regression, d = 14)": _from_paper("003-fig1", "synthetic-regression"),
    "Seed 004, Fig. 1 (Adult, 32 equal clients, T = 100 not 1000)": _from_paper("004-fig1", "adult",
                                                                                  cmp_T=100),
}

st.caption("One click loads a setting (the seed papers' come from `python -m dpcore sweep --list`); then "
           "press **Run comparison**. These are single panels against ε on this view's axes; the papers' "
           "whole figures, on their own axes (ε, n, skew u) and at full size, open instantly in "
           "**Paper figures**.")
cols = st.columns(len(PRESETS))
CLASSROOM = next(iter(PRESETS))  # its results are shipped: it opens at once, before anything is computed
for col, (name, values) in zip(cols, PRESETS.items()):
    if col.button(name, key=f"preset_{name}"):
        for k, v in values.items():
            st.session_state[k] = v
        for key in ("cmp_rows", "cmp_shipped"):  # a chart drawn for other settings goes (the first
            st.session_state.pop(key, None)      # preset's shipped rows come back below)
        st.rerun()

c1, c2 = st.columns(2)
dataset = dataset_picker("cmp_dataset", container=c1)
model = model_picker(dataset, "cmp_model", container=c2)
available = mechanisms_for(model)
st.session_state.setdefault("cmp_mechs", [m for m in URL_KEYS["cmp_mechs"] if m in available])
mechs = choice("multiselect", "Mechanisms", available, key="cmp_mechs",
               format_func=lambda m: f"{m} — {REGISTRY[m].name}")
st.session_state.setdefault("cmp_eps", "0.1, 0.3, 1, 3")
eps_text = st.text_input("ε grid (comma-separated)", key="cmp_eps")
c3, c4, c9, c5, c6 = st.columns(5)  # δ, T, λ, repeats, calibration
delta = param_widget("delta", "cmp_delta", label="δ", container=c3)
T = param_widget("iterations", "cmp_T", label="iterations T", container=c4)
lam = param_widget("lam", "cmp_lam", label="λ (L2 regularisation)", container=c9, zero=True)
repeats = param_widget("repeats", "cmp_R", label="repeats", value=3, container=c5)
calibration = choice("radio", "Calibration", ["certified", "published"], key="cmp_cal", horizontal=True, container=c6,
                       help=param_help("calibration"))
st.session_state.setdefault("cmp_tuned", True)
tuned = st.toggle("Each mechanism at its tuned settings, where a tuning is shipped", key="cmp_tuned",
                  help="T, η, λ, C or q as chosen in the Tune view for this dataset (the tuned ε closest to each "
                       "ε); off: every mechanism at the settings above. Tuned gradient mechanisms run up to "
                       "T = 800, so a run takes longer (the progress bar estimates the rest; the first preset opens at once from shipped rows). "
                       "Choosing settings on private data costs privacy: the Tune view shows how much.")
clients, skew = 4, 4.0
if any(REGISTRY[m].family == "distributed" for m in mechs):
    c7, c8 = st.columns(2)
    clients = param_widget("clients", "cmp_clients", label="clients m (distributed mechanisms)",
                           value=4, container=c7)
    skew = param_widget("skew", "cmp_skew", label="client-size skew u = n_max/n_min", value=4.0,
                        container=c8, refuse=skew_refusal(dataset, clients))
    own_rows = user_dataset(dataset)
    skew_note = split_skew_words(own_rows.n if own_rows is not None else datasets.DATASETS[dataset].n_train,
                                 clients, skew)
    if skew_note:
        st.warning(skew_note + ": the distributed mechanisms' results are for the clients' sizes.")

# A seed preset's settings for single mechanisms (e.g. output-laplace's λ in seed 003) and its
# data options (d = 14 for 003's synthetic data) hold while its dataset is selected.
keep_choice("cmp_paper", ["", *PAPER_PRESETS], "cmp_paper", "")  # no widget: a link's unknown preset is said
paper = PAPER_PRESETS.get(st.session_state.get("cmp_paper", ""))
per_mechanism, data_options = paper.overrides(dataset, mechs) if paper is not None else ({}, {})
if per_mechanism or data_options:
    notes = [f"{k} = {v:g}" for k, v in data_options.items()] + [
        f"{m} with " + ", ".join(f"{k} = {v}" for k, v in kv.items()) for m, kv in per_mechanism.items()]
    if notes:
        st.caption(f"From the preset {paper.id}: " + "; ".join(notes) + ".")

try:  # the comparison's setting, as its export builds it (dpcore.experiments.views)
    setting = compare_setting(dataset, model, mechs, eps_text, delta=delta, iterations=T, repeats=repeats,
                              calibration=calibration, lam=lam, clients=clients, skew=skew,
                              paper=st.session_state.get("cmp_paper", ""))
    epsilons, base = setting["epsilons"], setting["base"]
except DPCoreError as exc:
    st.error(f"Check the settings: {exc}")
    st.stop()

write_to_url(list(URL_KEYS))
publish_settings(SHARED)
delta_guard(base)  # δ ≥ 1/n: no real guarantee, said here as Explore says it
#: what the comparison depends on: rows drawn for other values are marked as stale
compared_for = (dataset, model, tuple(mechs), tuple(epsilons), delta, T, lam, repeats, calibration, tuned, clients,
                skew, st.session_state.get("cmp_paper", ""))
if st.session_state.get("_cmp_rows_for") != compared_for and all(
        st.session_state.get(k) == v for k, v in PRESETS[CLASSROOM].items()):
    # the first preset's settings (its button, or a link to them): its shipped rows at once
    shipped = shipped_classroom_compare(ctx=app_context())
    if shipped is not None:
        st.session_state["cmp_rows"], st.session_state["cmp_shipped"] = shipped
        st.session_state["_cmp_rows_for"] = compared_for
own_data = user_dataset(dataset)  # an upload runs in this session's process, not in shared workers
if own_data is None:
    warm_workers(base, app_context())  # in the background: the workers load the data while the user decides


def metric_figure(ok):
    """Accuracy (RMSE) against ε, with the one non-private reference (the best exact model over
    the tuning's λ grid and every λ a row runs at) and what guessing scores (as its export draws it)."""
    return compare_figures(ok, reference_for(base, row_lambdas(ok, lam)) if ok else None)[0]


def run_comparison(bar):
    """The comparison, its curves drawn as they finish (``bar``: its progress)."""
    total = len(mechs) * len(epsilons)

    def draw_so_far(done, k):  # the curves finished so far, while the rest computes
        ok = [r for r in done if "error" not in r]
        if ok:
            show_chart(metric_figure(ok), key=f"cmp_live_{k}")
            st.caption(f"{len(done)} of {total} configurations done; the rest join the chart as they finish.")

    live = live_drawer(draw_so_far, every=1.5)  # the first at once; then a redraw the browser can afford
    try:
        with reference_notice(base):
            rows = epsilon_sweep(base, mechs, epsilons, with_progress(bar), per_mechanism=setting["per_mechanism"],
                                 dataset=own_data, tuned=tuned, spent=False, partial=live)
    except DPCoreError as exc:  # e.g. a shipped tuning refused (not the file shipped): said, nothing kept
        raise DPCoreError(f"The comparison did not run: {exc}" + (". Turn off the tuned settings to compare at "
                                                                  "the settings above." if tuned else ".")) from None
    finally:
        live.clear()
    st.session_state.pop("cmp_shipped", None)
    return rows


RUN = "Run comparison"
rows, current = linked_result("cmp_rows", "cmp_shown", compared_for, st.button(RUN, type="primary", key="cmp_run"),
                              run_comparison, what="comparison", button=RUN)
if rows and current and st.session_state.get("cmp_shipped"):
    st.info(f"Shown at once: {st.session_state['cmp_shipped']}. **Run comparison** computes it again on this "
            "machine (the same seeds: the same numbers).")
if rows:
    for r in rows:
        if "error" in r:
            st.error(f"{r['mechanism']} at ε = {r['epsilon']:g}: {r['error']}")
    ok = [r for r in rows if "error" not in r]
    fig1 = metric_figure(ok)
    fig2 = compare_figures(ok, lam=lam)[1]
    show_chart(fig1)
    ref = reference_for(base, row_lambdas(ok, lam)) if ok else None
    if ref is not None:
        st.caption(ref.definition())
        guessing_box(ok, lambda r: f"{r['mechanism']} at ε = {r['epsilon']:g}", guess=ref.guess)
    missed_target_note(ok)
    if note := sampling_note(ok):  # the rate each DP-SGD point ran with (its hover and the CSV give each point's)
        st.caption(note)
    if note := tuning_cost_note(ok):  # the cost against the ε each point is drawn at, as Explore gives it
        st.caption(note + " The chart shows each run's own ε; the Tune view shows what each search cost, and "
                   "the toggle above runs every mechanism untuned.")
    download_figure(fig1, "compare_metric", "cmp_dl_fig1")
    show_chart(fig2)
    if note := gap_objectives_note(ok, lam):  # which λ (which L*) each point's gap is measured against
        st.caption(note)
    download_figure(fig2, "compare_gap", "cmp_dl_fig2")
    st.dataframe(readable(ok), width="stretch")
    download_table(ok, "compare", "cmp_dl_table")
    download_code("compare", URL_KEYS, "cmp_dl_code")  # this comparison as a notebook and a script
    # what each tuned setting's search spent: recomputed from the shipped tuning (never read from it),
    # most of a minute the first time a machine reads the file, so asked for after the page is drawn
    if current and own_data is None and any("tuned_at" in r and "tuned_search_epsilon" not in r for r in ok):
        try:
            with st.spinner("Recomputing what each search behind the tuned settings spent (the first time this "
                            "machine reads the tuning: most of a minute; then the page is drawn again with it)…"):
                paid = with_search_spent(rows, dataset, model, app_context().data_dir)
        except DPCoreError as exc:
            st.error(f"What the tuned settings' searches spent is not shown: {exc}")
        else:  # the page again, every part of it (chart, table, downloads) with what each search spent
            st.session_state["cmp_rows"] = paid
            st.rerun()
