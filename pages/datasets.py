import pandas as pd
import streamlit as st

from dpcore import datasets
from pages.common import dataset_details

st.title("Datasets")
st.caption(
    "Every dataset is one-hot encoded, standardised and row-normalised so that ‖x‖ ≤ 1 "
    "(with a bias feature); labels are ±1. n and d below are after preprocessing."
)

specs = datasets.list_datasets()
table = pd.DataFrame(
    [
        {
            "id": s.id,
            "name": s.name,
            "task": s.task,
            "n (train)": "any" if s.synthetic else s.n_train,
            "n (test)": "any" if s.synthetic else s.n_test,
            "d": "any" if s.synthetic else s.d,
            "licence": s.license,
        }
        for s in specs
    ]
)
st.dataframe(table, hide_index=True, width="stretch")

choice = st.selectbox(
    "Look at one dataset", [s.id for s in specs], index=[s.id for s in specs].index("adult"),
    format_func=lambda i: datasets.DATASETS[i].name, key="dataset",
)
try:
    info = dataset_details(choice)
except datasets.DatasetError as exc:
    st.error(f"{exc}")
    st.stop()

c1, c2, c3, c4 = st.columns(4)
c1.metric("training rows n", f"{info['n_train']:,}")
c2.metric("test rows", f"{info['n_test']:,}")
c3.metric("features d", info["d"])
if info["positive_share"] is not None:
    c4.metric(f"positive class ({info['positive_class']})", f"{info['positive_share']:.1%}")
st.markdown(info["description"])
if info["citation"]:
    st.markdown(f"**Cite:** {info['citation']}  \n**Licence:** {info['license']}")
for note in info["notes"]:
    st.caption(note)
st.markdown(f"**Row norms ‖x‖ after preprocessing** (largest {info['max_row_norm']:.6f}; all must be ≤ 1)")
st.bar_chart(pd.Series(info["norm_histogram"], name="rows"))
with st.expander(f"The {info['d']} features"):
    st.write(", ".join(info["feature_names"]))
