"""Entry point: ``streamlit run app.py``.

Each view is one thin script under ``pages/``: widgets in, one dpcore call,
render.  All computation lives in :mod:`dpcore`.
"""

import streamlit as st

st.set_page_config(page_title="DP-ERM explorer", page_icon=":material/lock:", layout="wide")

PAGES = [
    st.Page("pages/start.py", title="Start here", icon=":material/flag:", default=True),
    st.Page("pages/explore.py", title="Explore", icon=":material/search:"),
    st.Page("pages/compare.py", title="Compare", icon=":material/show_chart:"),
    st.Page("pages/local_central.py", title="Local vs central", icon=":material/home:"),
    st.Page("pages/distributed.py", title="Distributed", icon=":material/hub:"),
    st.Page("pages/theory.py", title="Theory", icon=":material/functions:"),
    st.Page("pages/audit.py", title="Audit", icon=":material/policy:"),
    st.Page("pages/datasets.py", title="Datasets", icon=":material/table:"),
    st.Page("pages/glossary.py", title="Glossary", icon=":material/menu_book:"),
]

st.navigation(PAGES).run()
