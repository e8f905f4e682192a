"""Entry point: ``streamlit run app.py``.

Each view is one thin script under ``pages/``: widgets in, one dpcore call,
render.  All computation lives in :mod:`dpcore`.
"""

import streamlit as st

st.set_page_config(page_title="DP-ERM explorer", page_icon="🔒", layout="wide")

PAGES = [
    st.Page("pages/start.py", title="Start here", icon="🏁", default=True),
    st.Page("pages/explore.py", title="Explore", icon="🔎"),
    st.Page("pages/compare.py", title="Compare", icon="📈"),
    st.Page("pages/local_central.py", title="Local vs central", icon="🏠"),
    st.Page("pages/distributed.py", title="Distributed", icon="🌐"),
    st.Page("pages/theory.py", title="Theory", icon="📐"),
    st.Page("pages/audit.py", title="Audit", icon="🕵️"),
    st.Page("pages/datasets.py", title="Datasets", icon="🗂️"),
]

st.navigation(PAGES).run()
