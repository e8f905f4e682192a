"""Paper figures: each seed figure, whole, from the full-size results shipped with the app."""

from pages.boot import load_core

load_core()  # before the core: a new server can run a view before app.py (pages/boot.py)

import streamlit as st

from dpcore.exceptions import DPCoreError
from dpcore.shipped import ShippedFileError
from dpcore.experiments.presets import PRESETS, rerun, shipped_ids
from dpcore.shipped import folder_of
from pages.common import (
    app_context, choice, CACHE_DIR, WORKERS, download_code, download_figure, download_table, drawn, enter_view,
    guessing_box, load_shipped, progress_reporter, show_panels,
)
from pages.links import restore_from_url, write_to_url

enter_view("figures")

#: a point's place on the figure's x axis, in the axis' own letter
X_WORDS = {"epsilon": "ε", "n": "n", "skew": "u"}


def show_figure(screen, note, points) -> None:
    """The figure, a chart a panel laid out as the paper's (one a row on a phone), its note under
    it, in red, and the guessing box every view shows for its points that do no better than
    guessing, a line per series and panel."""
    show_panels(screen)
    if note:  # Markdown-safe: the note is text, not markup
        st.markdown(":red[" + "".join("\\" + c if c in "\\`*_{}[]$#<>|~^" else c for c in note) + "]")
    x = points["x"]
    guessing_box(points["rows"], lambda r: "" if r.get(x) is None else f"{r[x]:g}", axis=X_WORDS[x],
                 group=lambda r: f"{r['series']} in the {r['panel']} panel",
                 advice="Read these points as a private model that failed, not as a weak one.")


st.title("Paper figures")
st.caption("Every panel of a seed paper's figure, on the paper's axes (ε, n, skew u), from full-size "
           "results computed once and shipped with the app: nothing is trained here. Each point is the "
           "mean ± sd over the repeats; hover for the target and the **certified** ε. A ringed point "
           "missed its target.")

ids = list(PRESETS)
RESULTS = folder_of("results", app_context().data_dir)  # where this server reads the shipped results
OUT = f"{RESULTS.parent.name}/{RESULTS.name}"
SHIPPED = shipped_ids(RESULTS)
URL_KEYS = {"fig_preset": SHIPPED[0] if SHIPPED else ids[0], "fig_rerun_size": "quick", "fig_rerun_cal": "certified"}
restore_from_url(URL_KEYS)
st.session_state.setdefault("fig_preset", URL_KEYS["fig_preset"])  # a shipped figure first
preset_id = choice("selectbox", "Figure", ids, key="fig_preset",
                         format_func=lambda p: f"{p} — {PRESETS[p].paper}, {PRESETS[p].figures}: {PRESETS[p].title}")
write_to_url(list(URL_KEYS))

try:
    shipped, fig, screen, note, points = load_shipped(preset_id)
except ShippedFileError as exc:  # not what was shipped, or not this code's numbers: never drawn
    st.error(f"Nothing of this figure is shown: {exc}.")
    st.stop()
preset = PRESETS[preset_id]
if shipped is None:
    st.info(f"The full-size results of **{preset_id}** are not shipped yet ({len(preset.tasks())} "
            f"configurations × {preset.repeats} repeats). Compute them with\n\n"
            f"`python -m dpcore sweep --preset {preset_id} --out {OUT}`\n\n"
            "(resumable; add `--quick` for a rehearsal in seconds) and reload this page.")
    st.stop()

st.markdown(shipped.provenance())
if shipped.published is not None:
    st.markdown("**Dotted lines with diamonds**: the same figure with each paper's *published* calibration "
                "(its own noise formula, c = 1), hover for what that noise certifies; rings where it misses the "
                "target. " + shipped.provenance(published=True))
else:
    st.caption("The papers' published calibrations are not shipped for this figure; "
               f"`python -m dpcore sweep --preset {preset_id} --out {OUT} "
               "--calibration published` adds them (dotted lines).")
if "error" in shipped.table:
    for message in sorted(set(shipped.table["error"].dropna())):
        st.warning(f"Not in the figure, refused by the core: {message}")
show_figure(screen, note, points)
if preset.note:
    st.info(preset.note)
c1, c2 = st.columns(2)
with c1:
    download_figure(fig, preset_id, key="fig_download_plot")
with c2:
    download_table(shipped.table, preset_id, key="fig_download_table")
    if shipped.published is not None:  # the dotted lines' rows, a file of their own
        download_table(shipped.published, f"{preset_id}-published", key="fig_download_published",
                       label="Download table, published calibration (CSV)")
download_code("figures", URL_KEYS, "fig_dl_code")  # this figure as a notebook and a script

with st.expander("Re-run here"):
    work = shipped.record.get("compute_seconds")  # every configuration's recorded time, cached ones included
    st.caption("Compute this figure again on this machine, to check it or to see the run: the shipped "
               "results are never overwritten. A *quick rehearsal* (2 repeats, ≤ 10 iterations, a few hundred "
               "rows) takes seconds; the *full size* needs "
               + (f"about {max(1, round(work / WORKERS / 60))} min on this server's {WORKERS} worker process{'' if WORKERS == 1 else 'es'}"
                  if work else "an unrecorded time")
               + " (from the shipped record's timings). Finished configurations are kept, so an interrupted "
               "re-run resumes.")
    size = choice("radio", "Size", ["quick", "full"], horizontal=True, key="fig_rerun_size",
                    format_func={"quick": "quick rehearsal", "full": "full size"}.get)
    calibration = choice("radio", "Calibration", ["certified", "published"], horizontal=True, key="fig_rerun_cal",
                           help="certified: the noise that meets each target ε; published: the papers' own "
                                "formulas (c = 1), whose certified ε may miss the target")
    if st.button("Re-run this figure", key="fig_rerun"):
        bar = st.progress(0.0, text="starting…")
        try:
            result = rerun(preset_id, CACHE_DIR / "reruns", quick=size == "quick", calibration=calibration,
                           workers=WORKERS, progress=progress_reporter(bar))
        except DPCoreError as exc:
            st.error(f"The re-run stopped: {exc}")
        except OSError as exc:
            st.error(f"The re-run could not write its results ({exc}): set DPCORE_CACHE_DIR to a folder "
                     "this server can write to.")
        else:
            st.session_state["fig_rerun_result"] = (preset_id, result)
        bar.empty()
    done = st.session_state.get("fig_rerun_result")
    if done is not None and done[0] == preset_id:
        st.markdown("**Re-run:** " + done[1].provenance())
        show_figure(*drawn(done[1])[1:])
        download_table(done[1].table, f"{preset_id}-rerun", key="fig_download_rerun")
