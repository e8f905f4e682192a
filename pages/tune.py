from pages.boot import load_core

load_core()  # before the core: a new server can run a view before app.py (pages/boot.py)

import time

import streamlit as st

from dpcore.exceptions import DPCoreError
from dpcore.shipped import ShippedFileError
from dpcore.experiments.run import RunSpec
from dpcore.experiments.tune import (
    DEFAULT_MECHANISMS,
    YU_2020_ADULT,
    epsilon_for_accuracy,
    shipped_tuning,
)
from dpcore.experiments.views import tuning_here, tuning_lambdas
from dpcore.figures.charts import released_tuning_figure, tuning_figure
from dpcore.mechanisms import REGISTRY, short_name
from pages.common import (
    app_context, bounded_slider, choice, download_code, enter_view, guessing_box, show_chart, apply_setting, dataset_picker, dataset_task, download_figure, download_table, fmt_eps, glossary_link, mechanisms_for, readable, reference_for, with_progress,
)
from pages.links import linked_result, restore_from_url, write_to_url

enter_view("tune")
st.title("Tune each mechanism, and pay for it")
st.caption("A mechanism's accuracy depends on settings its proof leaves open: the steps T, the step size η, "
           "the regularisation λ, the clipping norm, the sampling rate. Papers tune them on the data and report "
           "the best. Choosing by accuracy on private data is itself a release: here every candidate is a run "
           "on 80 % of the training rows, the choice among them is made privately (the exponential mechanism on "
           "the other 20 %), and **ε spent** is what the whole search provably costs, next to the ε the "
           f"released run alone certifies — {glossary_link('certified')}.")
URL_KEYS = {"tu_dataset": "adult", "tu_eps": "0.1, 1, 10", "tu_acc": 0.82, "tu_mechs": list(DEFAULT_MECHANISMS),
            "tu_pick": 0, "tu_shown": False}  # tu_shown: the link brings the tuning run here (pages.links.linked_result)
restore_from_url(URL_KEYS)

c1, c2 = st.columns(2)
dataset = dataset_picker("tu_dataset", container=c1, default="adult")
if dataset_task(dataset) != "classification":
    st.error("Tuning scores correct validation predictions: pick a classification dataset.")
    st.stop()
available = [m for m in mechanisms_for("logreg", ("output", "objective", "gradient"))]
st.session_state.setdefault("tu_mechs", [m for m in DEFAULT_MECHANISMS if m in available])
mechs = choice("multiselect", "Mechanisms", available, key="tu_mechs", container=c2,
               format_func=lambda m: f"{m} — {REGISTRY[m].name}")
st.session_state.setdefault("tu_eps", URL_KEYS["tu_eps"])
eps_text = st.text_input("ε grid (comma-separated)", key="tu_eps",
                         help="each ε is tuned separately; δ = 1/n² (Yu et al. 2020)")
write_to_url(list(URL_KEYS))


def tune_here(bar) -> dict:
    """Every candidate of every mechanism at every ε of the grid (``bar``: its progress)."""
    try:  # as its export runs it
        return tuning_here(dataset, mechs, eps_text, ctx=with_progress(bar))
    except DPCoreError as exc:
        raise DPCoreError(f"Check the settings: {exc}") from None


try:
    # what each search spent, recomputed (the first time this machine reads the file: about a minute)
    checking, started = st.empty(), time.monotonic()

    def checked(done, total):  # said once it takes time (a machine that read it before answers at once)
        if done < total and time.monotonic() - started > 0.3:
            checking.progress(done / total, text=f"Recomputing what each search of the shipped tuning spent (the "
                                                 f"first time this machine reads it): {done} of {total} searches…")
    try:
        shipped = shipped_tuning(dataset, "logreg", data_dir=app_context().data_dir, spent=True, progress=checked)
    finally:
        checking.empty()
    refused = None
except ShippedFileError as exc:  # not the file shipped, or not this code's certificates: never drawn
    shipped, refused = None, exc
pressed = st.button("Tune here", type="primary", key="tu_run",
                    help="every candidate of every mechanism at every ε: the progress bar says how far it is and "
                         "estimates the rest")
own = st.session_state.get("tu_result")
record, _ = linked_result("tu_result", "tu_shown", (dataset, tuple(mechs), eps_text), pressed, tune_here,
                          what="tuning", button="Tune here",
                          stale=own is not None and own.get("dataset") == dataset)  # else the shipped one shows
if record is None or record.get("dataset") != dataset:
    record = shipped
    if record is None:
        if refused is not None:
            st.error(f"The shipped tuning is not shown: {refused}. Press **Tune here** for your own.")
        else:
            st.info(f"No shipped tuning for {dataset}: press **Tune here**.")
        st.stop()
    st.caption(f"Shipped tuning (press **Tune here** for your own): `{record.get('command', '')}`, "
               f"{record.get('date', '')}, {record.get('seconds', 0):.0f} s on 2 cores. Every certified ε and "
               "every ε spent below was recomputed by this code from the settings and the search (the first time "
               "this machine read the file). The accuracies (test, validation, non-private) cannot be checked "
               "without training again: only the manifest's hash (data/MANIFEST.json) protects them; the command "
               "above computes them again.")
released_source = record if record.get("released_rows") else (shipped or {})
released_rows = [r for r in released_source.get("released_rows", []) if "error" not in r]
rows = [r for r in record["rows"] if "error" not in r]
for r in record["rows"]:
    if "error" in r:
        st.error(f"{r['mechanism']} at ε = {fmt_eps(r['epsilon'])}: {r['error']}")
for e in record.get("errors", []):
    st.warning(f"refused candidate: {e['mechanism']} at ε = {fmt_eps(e['epsilon'])}: {e['error']}")

paper = dataset == "adult"
# the one non-private reference, over the λ grid and every λ a tuned row (or a release) chose
ref = reference_for(RunSpec(dataset=dataset, model="logreg"), tuning_lambdas(rows, released_rows))
if ref is None:
    st.stop()
fig = tuning_figure(rows, YU_2020_ADULT if paper else None, 0.1 if paper else None, guess=ref.guess,
                    baseline=ref.value, baseline_label=ref.label)
show_chart(fig)
st.caption(ref.definition())
guessing_box([{**r, f"{k}_mean": r[f"test_{k}"]} for r in rows for k in ("accuracy", "rmse") if f"test_{k}" in r],
             lambda r: f"{r['mechanism']} tuned for ε = {fmt_eps(r['epsilon'])}", guess=ref.guess)
download_figure(fig, "tuning", "tu_dl_fig")
if paper:
    st.caption("Open diamonds: Yu et al. 2020 (IJCAI), Table 2, Adult at ε = 0.1, δ = 1/n² (their AMP and "
               "Out-SGD drawn with our objective-chaudhuri and output-bolt-on). Dashed lines: the same accuracy "
               "at the ε the search spent; papers report the solid one.")
table = [{"mechanism": r["mechanism"], "ε target": r["epsilon"],
          "setting": ", ".join(f"{k} = {v:g}" for k, v in r["setting"].items()),
          "test accuracy": r["test_accuracy"], "± sd": r["test_accuracy_std"],
          "validation accuracy": r["validation_accuracy"], "best validation": r["best_validation_accuracy"],
          "ε certified (released run)": r["epsilon_certified"], "ε spent (search paid)": r["epsilon_spent"],
          "δ spent": r["delta_spent"]} for r in rows]
st.dataframe(readable(table), width="stretch", hide_index=True)
st.caption("ε spent covers the chosen setting and the model trained with it. The validation accuracies "
           "(the chosen candidate's and the best) are shown to teach how the search went: they are computed "
           "from private records without noise, and publishing them is not covered by ε spent.")
download_table(rows, "tuning", "tu_dl_table")
download_code("tune", URL_KEYS, "tu_dl_code")  # this tuning as a notebook and a script

st.subheader("ε for this accuracy")
need = bounded_slider("The test accuracy I need", 0.5, 1.0, "tu_acc", URL_KEYS["tu_acc"], step=0.005, format="%.3f")
answer = epsilon_for_accuracy(rows, need)
st.dataframe(readable([{"mechanism": a["mechanism"], "smallest tuned ε": a["epsilon"],
                        "ε spent with the search": a["epsilon_spent"], "its test accuracy": a["test_accuracy"],
                        "best on this grid": a["best_accuracy"]} for a in answer]), width="stretch", hide_index=True)
st.caption("On this ε grid: add ε's above and press **Tune here** for a finer answer. — means no tuned ε reaches "
           "it.")

st.subheader("Try a tuned setting")
pick = choice("selectbox", "Tuned setting", range(len(rows)), key="tu_pick",
                    format_func=lambda i: f"{rows[i]['mechanism']} at ε = {fmt_eps(rows[i]['epsilon'])}")
if st.button("Open in Explore", key="tu_open"):
    row = rows[pick]
    # Explore at the tuned run's own ε and δ (δ exact: its slider keeps a value it is given)
    st.session_state.update(ex_dataset=dataset, ex_model="logreg", ex_mechanism=row["mechanism"],
                            ex_epsilon=row["epsilon"], ex_delta=float(record["delta"]),
                            _ex_from_tune={"dataset": dataset, "mechanism": row["mechanism"],
                                           "epsilon": row["epsilon"], "delta": float(record["delta"]),
                                           "test_accuracy": row["test_accuracy"],
                                           "test_accuracy_std": row["test_accuracy_std"],
                                           "epsilon_certified": row["epsilon_certified"]})
    apply_setting(row["setting"], row["mechanism"])
    st.switch_page("pages/explore.py")

if released_rows:
    st.subheader("Input and local perturbation, tuned for free")
    st.caption("These mechanisms release every record once; the server trains on what was released. Choosing "
               "T, η and λ on a validation part of the released records alone is post-processing: ε spent is the "
               "certified ε. Where the released records cannot show that a model beats always answering the "
               "majority class, the guess is kept.")
    if released_source.get("released_command"):
        st.caption(f"Shipped: `{released_source['released_command']}`, {released_source.get('released_date', '')}, "
                   f"{released_source.get('released_seconds', 0):.0f} s on 2 cores; each row is the mean of "
                   f"{released_rows[0]['repeats']} releases, trained twice on the same records. Its ε's were "
                   "recomputed on reading; its accuracies, protected only by the manifest's hash, are what that "
                   "command computes again.")
    metric = "accuracy" if "test_accuracy" in released_rows[0] else "rmse"
    fig2 = released_tuning_figure(released_rows, guess=ref.guess, baseline=ref.value, baseline_label=ref.label)
    show_chart(fig2)
    better = 1 if metric == "accuracy" else -1  # higher accuracy, lower RMSE
    below = [f"{short_name(r['mechanism'])} at ε = {fmt_eps(r['epsilon'])}" for r in released_rows
             if better * (r[f"test_{metric}"] - r[f"untuned_test_{metric}"]) < -1e-9]
    st.caption(ref.definition() + " "
               + (f"Worse tuned than at the defaults: {', '.join(below)}. There the defaults beat guessing by less "
                  "than a fifth of the released records can show, so the choice keeps the guess (or a setting that "
                  "looked as good) and gives that margin up." if below else "Tuned is never worse than the defaults."))
    st.dataframe(readable([{"mechanism": r["mechanism"], "ε (certified = spent)": r["epsilon"],
                            f"defaults: test {metric}": r[f"untuned_test_{metric}"],
                            f"tuned: test {metric}": r[f"test_{metric}"], "guessing": r[f"{metric}_guess"],
                            ref.label: ref.value,
                            "releases that kept the guess": f"{r['guess_chosen']} of {r['repeats']}"}
                           for r in released_rows]), width="stretch", hide_index=True,
                 height=38 + 35 * len(released_rows))
