"""Paper figures: each seed figure, whole, from the full-size results shipped with the app."""

import streamlit as st

from dpcore.experiments.presets import PRESETS, RESULTS_DIR, shipped_ids, shipped_results
from pages.common import download_figure, download_table, restore_from_url, write_to_url, show_chart, enter_view

enter_view("figures")


@st.cache_resource(show_spinner="Reading the shipped results…")
def load_shipped(preset_id: str):
    """:func:`shipped_results` and its figure, made once per server (the files change only with
    the app; pages only read the figure: show_chart draws a copy)."""
    shipped = shipped_results(preset_id)
    return shipped, None if shipped is None else shipped.figure()


st.title("Paper figures")
st.caption("Every panel of a seed paper's figure, on the paper's axes (ε, n, skew u), from full-size "
           "results computed once and shipped with the app: nothing is trained here. Each point is the "
           "mean ± sd over the repeats; hover for the target and the **certified** ε. A ringed point "
           "missed its target.")

ids = list(PRESETS)
SHIPPED = shipped_ids()
URL_KEYS = {"fig_preset": SHIPPED[0] if SHIPPED else ids[0]}
restore_from_url(URL_KEYS)
st.session_state.setdefault("fig_preset", URL_KEYS["fig_preset"])  # a shipped figure first
preset_id = st.selectbox("Figure", ids, key="fig_preset",
                         format_func=lambda p: f"{p} — {PRESETS[p].paper}, {PRESETS[p].figures}: {PRESETS[p].title}")
write_to_url(list(URL_KEYS))

shipped, fig = load_shipped(preset_id)
preset = PRESETS[preset_id]
if shipped is None:
    st.info(f"The full-size results of **{preset_id}** are not shipped yet ({len(preset.tasks())} "
            f"configurations × {preset.repeats} repeats). Compute them with\n\n"
            f"`python -m dpcore sweep --preset {preset_id} --out {RESULTS_DIR.parent.name}/{RESULTS_DIR.name}`\n\n"
            "(resumable; add `--quick` for a rehearsal in seconds) and reload this page.")
    st.stop()

st.markdown(shipped.provenance())
if shipped.published is not None:
    st.markdown("**Dotted lines with diamonds**: the same figure with each paper's *published* calibration "
                "(its own noise formula, c = 1), hover for what that noise certifies; rings where it misses the "
                "target. " + shipped.provenance(published=True))
else:
    st.caption("The papers' published calibrations are not shipped for this figure; "
               f"`python -m dpcore sweep --preset {preset_id} --out {RESULTS_DIR.parent.name}/{RESULTS_DIR.name} "
               "--calibration published` adds them (dotted lines).")
if "error" in shipped.table:
    for message in sorted(set(shipped.table["error"].dropna())):
        st.warning(f"Not in the figure, refused by the core: {message}")
show_chart(fig, width="content")  # the paper's panel layout at its own width
c1, c2 = st.columns(2)
with c1:
    download_figure(fig, preset_id, key="fig_download_plot")
with c2:
    download_table(shipped.table, preset_id, key="fig_download_table")
if shipped.published is not None:
    download_table(shipped.published, f"{preset_id}-published", key="fig_download_published")
