"""Entry point: ``streamlit run app.py``.

Each view is one thin script under ``pages/``: widgets in, one dpcore call,
render.  All computation lives in :mod:`dpcore`.
"""

from pathlib import Path

import streamlit as st

from pages.boot import load_core

load_core()  # before any view: two sessions importing the core at once can break it (pages/boot.py)

#: Presenter mode (``?present=1``, kept in the URL): large type and the sidebar folded, for a projector.
PRESENTER_CSS = """<style>
html, body, [data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li { font-size: 22px; }
h1 { font-size: 3rem !important; } h2 { font-size: 2.3rem !important; }
[data-testid="stMetricValue"] { font-size: 2.6rem; }
[data-testid="stMainBlockContainer"] { padding-top: 4rem; }  /* just under the 3.75rem header */
</style>"""

#: Always: a wide Markdown table, or a formula (KaTeX display) wider than a phone, scrolls inside
#: itself instead of being cut off or widening the page (a table's words wrap first, even inside a
#: word: a box that scrolls must take the keyboard's focus, and a Markdown table's cannot); on a narrow
#: screen a formula is set a little smaller, so most fit whole, and a chart has no Plotly toolbar (it
#: lies over the legend and the highest points on a phone; every chart has its download button below
#: it).  And these style blocks themselves take no room: each is an
#: (empty) element of the page, and Streamlit puts a 1rem gap after every element (44 px at the
#: top of every view in presenter mode, where a lesson step must fit one screen).  Words for a screen
#: reader alone (class ``sr-only``: a chart's summary, pages/charts.py) are out of sight and, like the
#: style blocks, take no room: their element is taken out of the page's flow (no gap after it either).
#: A caption is the text's colour at 72 % (Streamlit's 60 % opacity gave grey on white at 3.9:1, under
#: WCAG AA's 4.5:1; now 5.5:1 on white, 5.2:1 on the sidebar, 8:1 on the dark theme), mixed into the
#: colour rather than made transparent, so that a link in a caption keeps its own colour whole.  A
#: slider's value is written in the text's colour (the dark theme's red on black was 3.9:1).
BASE_CSS = """<style>
[data-testid="stMarkdownContainer"] table { display: block; max-width: 100%; overflow-x: auto; }
[data-testid="stMarkdownContainer"] :is(td, th) { overflow-wrap: anywhere; }
.katex-display { overflow-x: auto; overflow-y: hidden; max-width: 100%; padding-bottom: 2px; }
@media (max-width: 640px) { .katex-display > .katex { font-size: 1.05em; } }
@media (max-width: 640px) { .js-plotly-plot .modebar-container { display: none; } }
[data-testid="stElementContainer"]:has(> [data-testid="stMarkdown"] [data-testid="stMarkdownContainer"] > style:only-child)
  { display: none; }
[data-testid="stCaptionContainer"] { opacity: 1; color: color-mix(in srgb, currentColor 72%, transparent); }
[data-testid="stSliderThumbValue"] { color: inherit; }
.sr-only, [data-testid="stElementContainer"]:has(> [data-testid="stHtml"] > .sr-only)
  { position: absolute !important; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden;
    clip-path: inset(50%); white-space: nowrap; border: 0; }
.chart-data summary { cursor: pointer; font-size: 0.9rem; }
.chart-data-box { max-height: 22rem; max-width: 100%; overflow: auto; margin-top: 0.3rem; }
.chart-data table { border-collapse: collapse; font-size: 0.85rem; }
.chart-data th, .chart-data td { border: 1px solid rgba(128, 128, 128, 0.45); padding: 0.1rem 0.5rem; text-align: left; }
</style>"""

#: The tab icon, a file of the repository (Streamlit inlines an SVG as a data: URL).  Not
#: ":material/lock:": the browser fetches that favicon from fonts.gstatic.com, and the app makes no
#: request outside the machine (tests/test_browser.py, test_no_view_requests_anything_outside_the_machine).
ICON = Path(__file__).resolve().parent / "assets" / "lock.svg"

present = st.query_params.get("present") == "1"
st.set_page_config(page_title="DP-ERM explorer", page_icon=str(ICON), layout="wide",
                   initial_sidebar_state="collapsed" if present else "auto")
present = st.sidebar.toggle("Presenter mode", value=present, key="present",
                            help="Large type and the sidebar folded, for a projector; the Lesson view walks "
                                 "through the ideas one chart at a time. Kept in the link (?present=1).")
st.markdown(BASE_CSS, unsafe_allow_html=True)
if present:
    st.query_params["present"] = "1"
    st.markdown(PRESENTER_CSS, unsafe_allow_html=True)
else:
    st.query_params.pop("present", None)

PAGES = [
    st.Page("pages/start.py", title="Start here", icon=":material/flag:", default=True),
    st.Page("pages/lesson.py", title="Lesson", icon=":material/school:"),
    st.Page("pages/explore.py", title="Explore", icon=":material/search:"),
    st.Page("pages/compare.py", title="Compare", icon=":material/show_chart:"),
    st.Page("pages/figures.py", title="Paper figures", icon=":material/insert_chart:"),
    st.Page("pages/tune.py", title="Tune", icon=":material/tune:"),
    st.Page("pages/local_central.py", title="Local vs central", icon=":material/home:"),
    st.Page("pages/distributed.py", title="Distributed", icon=":material/hub:"),
    st.Page("pages/theory.py", title="Theory", icon=":material/functions:"),
    st.Page("pages/audit.py", title="Audit", icon=":material/policy:"),
    st.Page("pages/certify.py", title="Certify a run", icon=":material/verified:"),
    st.Page("pages/datasets.py", title="Datasets", icon=":material/table:"),
    st.Page("pages/glossary.py", title="Glossary", icon=":material/menu_book:"),
]

nav = st.navigation(PAGES)
# A view's link that reached the server before app.py ever ran comes back here (enter_view):
# on to that view, with the link's own parameters.
target = st.query_params.get("view")
if target is not None:
    rest = {k: v for k, v in st.query_params.to_dict().items() if k != "view"}
    page = next((p for p in PAGES if p.url_path == target), None)
    if page is not None:
        st.switch_page(page, query_params=rest)
    st.query_params.pop("view", None)
nav.run()
