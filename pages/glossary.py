from pages.boot import load_core

load_core()  # before the core: a new server can run a view before app.py (pages/boot.py)

import streamlit as st

from pages.common import GLOSSARY, enter_view

enter_view("glossary")
st.title("Glossary")
st.caption("The words every view uses, in the order a lesson meets them. Each setting's tooltip (the ? beside it) "
           "links to its entry here.")
for anchor, (term, text) in GLOSSARY.items():
    st.subheader(term, anchor=anchor)
    st.markdown(text)
