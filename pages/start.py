from pages.boot import load_core

load_core()  # before the core: a new server can run a view before app.py (pages/boot.py)

import time

import streamlit as st

from dpcore.experiments.presets import shipped_ids
from dpcore.shipped import ShippedFileError, folder_of
from dpcore.experiments.ahead import ResultsAhead
from dpcore.experiments.progress import duration
from dpcore.lesson import part_estimates, prepare_parts, record_part_seconds
from pages.charts import say_to_screen_readers
from pages.common import app_context, enter_view, load_shipped, progress_reporter
from pages.progress import PartsBar

enter_view("start")
st.title("Differentially private ERM, explained by running it")
st.markdown(
    """
Empirical risk minimisation (ERM) fits a model by minimising its average loss on the
training data. **Differential privacy** (DP) limits how much the released model can
reveal about any one training record: replacing one record changes the probability of
any output by at most a factor $e^\\varepsilon$, up to a small slack $\\delta$.

**Four places to add the noise** that buys this guarantee:

| where | what happens | example |
|---|---|---|
| output | train exactly, then perturb the model | Chaudhuri et al. 2011 |
| objective | add a random linear term to the loss, then minimise | Kifer et al. 2012 |
| gradient | add noise to every gradient step | DP-GD, DP-SGD |
| input | perturb the data themselves, then train normally | Kang et al.; Fukuchi et al. |

**Local vs central.** A central guarantee protects a record from whoever sees the *model*.
A local guarantee protects it from the *server* that collects the data. Only input
perturbation and local DP give the second one.

**Three ε's on every result.**
* **ε target**: what you asked for.
* **ε certified**: what the noise that actually ran provably gives, whatever formula chose
  the noise. Every mechanism declares what it released and with which noise; one function
  turns that into ε the same way for all of them: exact Gaussian composition, Google's
  `dp-accounting` (privacy-loss distributions) for sampled Gaussians and randomized response,
  and the published theorem where a proof is all there is (objective perturbation). It is ∞
  when no valid proof applies, and the reason is shown.
* **ε audited**: an empirical lower bound from attacking the model (the Audit view). It can
  show that privacy is *worse* than claimed; it can never prove a claim. Where an estimator that
  assumes Gaussian noise gives more than the attack's own error rates, the audit says so beside
  the number, with what the attack alone shows.

They differ for instructive reasons. A paper's formula "with some constant c" can
under-deliver when c = 1. A proof can rest on an assumption the data break. An attack can
only show that privacy is *at least this bad*.
"""
)
st.subheader("Where the noise enters training")
# Light fills with dark text and grey lines: readable on the light and the dark theme alike.
st.graphviz_chart("""
digraph {
  rankdir=LR; bgcolor="transparent"; nodesep=0.3;
  node [shape=box, style="rounded,filled", fillcolor="#e8eef7", color="#5b7db1", fontname="sans-serif",
        fontsize=11, fontcolor="#1a1a1a"];
  edge [color="#888888", fontcolor="#888888", fontname="sans-serif", fontsize=10];
  subgraph cluster_people { label="each person"; fontcolor="#888888"; color="#888888"; style=dashed;
    record [label="their record (x, y)"]; }
  subgraph cluster_server { label="the server that trains"; fontcolor="#888888"; color="#888888"; style=dashed;
    loss [label="the loss on all records"]; step [label="gradient steps, T of them"]; model [label="the model θ"]; }
  released [label="the released model", fillcolor="#e6f4e6", color="#2ca02c"];
  node [fillcolor="#fde8e8", color="#d62728", shape=box, style="rounded,filled"];
  input [label="input: noise on the record\\n(also protects it from the server)"];
  objective [label="objective: a random\\nlinear term in the loss"];
  gradient [label="gradient: Gaussian noise\\non every step"];
  output [label="output: noise on θ\\nbefore release"];
  record -> loss -> step -> model -> released;
  step -> step [label=" repeat"];
  input -> record [style=dashed, color="#d62728"];
  objective -> loss [style=dashed, color="#d62728"];
  gradient -> step [style=dashed, color="#d62728"];
  output -> released [style=dashed, color="#d62728"];
}
""")
say_to_screen_readers("Diagram: each person's record goes to the server that trains, into the loss on all records, "
                      "then T gradient steps, then the model θ, then the released model. Noise can enter at four "
                      "places: input (noise on the record, which also protects it from the server), objective (a "
                      "random linear term in the loss), gradient (Gaussian noise on every step) and output (noise "
                      "on θ before release).")
st.caption("Red: the four places a mechanism adds noise. Only noise on the record itself (input, or local DP) "
           "protects it from the server; the others protect it from whoever sees the released model.")

st.subheader("A one-minute tour")
for page, text in [
    ("pages/lesson.py", "**Lesson**: the ideas in six steps, one chart each (turn on presenter mode for a class)."),
    ("pages/explore.py", "**Explore**: one mechanism, one setting; see accuracy, gap and the three ε's."),
    ("pages/compare.py", "**Compare**: several mechanisms over a grid of ε, with the seed papers' presets."),
    ("pages/figures.py", "**Paper figures**: each seed paper's whole figure, at full size, from shipped results."),
    ("pages/tune.py", "**Tune**: each mechanism at its best settings, and what choosing them costs in ε."),
    ("pages/local_central.py", "**Local vs central**: what each mechanism gives the record's owner."),
    ("pages/distributed.py", "**Distributed**: uneven clients, WD-DP against plain averaging."),
    ("pages/theory.py", "**Theory**: every published bound, evaluated for your settings, beside the measured gap."),
    ("pages/audit.py", "**Audit**: attack a mechanism and compare the audited ε with the certified one."),
    ("pages/certify.py", "**Certify a run**: a DP-SGD run from a paper or a training log (Opacus, TF Privacy "
                         "terms), its ε under both neighbouring relations."),
    ("pages/datasets.py", "**Datasets**: the bundled data and how they were prepared."),
    ("pages/glossary.py", "**Glossary**: ε, δ, sensitivity, certified, audited, local, replace-one, …"),
]:
    st.page_link(page, label=text)

st.subheader("Before a class")
st.caption("Compute ahead what a lecture opens first, so every first click answers at once: the exact "
           "references of the views' defaults, Compare's first preset (its shipped rows checked when they are "
           "this code's), what the shipped tuning's searches spent, every step of the lesson and Paper figures' "
           "first figure. Kept in the app's cache folder for every session and for `python -m dpcore run`; "
           "`python -m dpcore prepare` does the same but the figure, which it cannot draw in this server.")
with_mlp = st.checkbox("Include the network's (MLP) reference on Adult", value=True, key="start_prep_mlp")
FIRST_FIGURE = "Paper figures' first figure"


def first_figure(first: list[str], ahead: ResultsAhead) -> str:
    """This server's first paper figure, verified (in a second process from the start) and drawn once
    for every session."""
    if not first:
        return "Paper figures: no figure is shipped"
    ahead.wait()
    load_shipped(first[0])
    return f"{FIRST_FIGURE} ({first[0]}), verified and drawn for this server"


def parts_of(ctx) -> list:
    first = shipped_ids(folder_of("results", ctx.data_dir))[:1]
    ahead = ResultsAhead(ctx, first)  # its certificates recomputed beside the other parts (dpcore.experiments.ahead)
    return ([(f"{FIRST_FIGURE}: verified in a second process", ahead.start)] if first else []) \
        + prepare_parts(ctx, mlp=with_mlp) + [(FIRST_FIGURE, lambda: first_figure(first, ahead))]


names = [what for what, _ in parts_of(app_context())]
estimates = part_estimates(app_context(), names)
with st.expander(f"What it computes: {len(names)} parts, about {duration(sum(e for e, _ in estimates))} "
                 "in all the first time"):
    st.dataframe([{"part": n, "about": duration(e), "figure": ("what it took on this machine the last time"
                                                                if src == "measured here" else
                                                                "a first time on a busy 2-core machine")}
                  for n, (e, src) in zip(names, estimates)], hide_index=True, width="stretch")
if st.button("Prepare for class", key="start_prepare"):
    with st.status("Preparing…", expanded=True) as status:
        overall = PartsBar(st.progress(0.0), names, [e for e, _ in estimates]).start()
        inner = st.progress(0.0)  # within a part: its own count, reset as each part starts, cleared at the end
        ctx = app_context().with_(progress=progress_reporter(inner))
        measured, started = {}, time.time()
        try:
            for k, (what, compute) in enumerate(parts_of(ctx)):
                overall.part(k)
                inner.progress(0.0, text=f"{what}: running…")  # never the last part's finished count
                t0 = time.time()
                try:
                    said = compute()
                except ShippedFileError as exc:  # refused: the view that reads the file says so too
                    st.warning(f"{what}: not prepared: {exc}")
                    continue
                measured[what] = time.time() - t0
                st.write(f"{k + 1}/{len(names)} · {said}: {measured[what]:.1f} s")
        finally:
            overall.stop()
            inner.empty()
        record_part_seconds(ctx, measured)
        status.update(label=f"Ready: {len(measured)} of {len(names)} parts in {duration(time.time() - started)}.",
                      state="complete", expanded=False)
