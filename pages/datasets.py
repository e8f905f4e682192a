from pages.boot import load_core

load_core()  # before the core: a new server can run a view before app.py (pages/boot.py)

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpcore import datasets
from pages.charts import describe_chart
from pages.common import choice, dataset_details, enter_view, user_datasets
from pages.links import restore_from_url, write_to_url

enter_view("datasets")
st.title("Datasets")
URL_KEYS = {"dataset": "adult"}  # the dataset looked at (the link reopens it)
restore_from_url(URL_KEYS)
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
            "n (train)": "any" if s.synthetic else f"{s.n_train:,}",
            "n (test)": "any" if s.synthetic else f"{s.n_test:,}",
            "d": "any" if s.synthetic else str(s.d),
            "licence": s.license,
        }
        for s in specs
    ]
)
st.dataframe(table, hide_index=True, width="stretch")

st.session_state.setdefault("dataset", URL_KEYS["dataset"])
chosen = choice("selectbox", "Look at one dataset", [s.id for s in specs], key="dataset", fallback="adult",
                format_func=lambda i: datasets.DATASETS[i].name)
write_to_url(list(URL_KEYS))
try:
    info = dataset_details(chosen)
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
describe_chart(go.Figure(go.Bar(x=list(info["norm_histogram"]), y=list(info["norm_histogram"].values()), name="rows"),
                         layout=dict(xaxis_title="row norm ‖x‖", yaxis_title="rows")))
with st.expander(f"The {info['d']} features"):
    st.write(", ".join(info["feature_names"]))

st.divider()
st.subheader("Use your own data")
st.caption("Upload a CSV with a header row. It stays in this browser session only and becomes selectable "
           "in every view that trains (Explore, Compare, Local vs central, Distributed, Audit); the Theory "
           "view needs a registered dataset's documented shape. It is preprocessed like the bundled data "
           "(one-hot, standardise, ‖x‖ ≤ 1) and runs in your session's process, never in shared workers "
           "or caches.")
upload = st.file_uploader("CSV file", type=["csv"], key="upload_file")
if upload is not None:
    raw = upload.getvalue()
    header = None
    try:
        header = datasets.csv_preview(raw)  # the loader's own reading rules
    except datasets.DatasetError as exc:  # the encoding, the header, too many columns: said in the file's terms
        st.error(f"{exc}")
    except Exception as exc:  # pandas' many parse errors: report, don't crash
        st.error(f"This file cannot be read as CSV ({type(exc).__name__}): check the separator and header row.")
    if header is not None and header.shape[1] >= 2:
        encoding = datasets.decode_csv(raw)[1]
        if encoding:
            st.caption(f"Note: {encoding}.")
        label = st.selectbox("Label column", list(header.columns), index=header.shape[1] - 1, key="upload_label")
        task = st.radio("Task", ["classification", "regression"], horizontal=True, key="upload_task")
        positive = None
        if task == "classification":
            try:
                classes = datasets.csv_classes(raw, label)  # the whole column, not the preview's rows
            except (datasets.DatasetError, pd.errors.ParserError, ValueError):  # Add reports the file's error
                classes = []
            if len(classes) <= datasets.MAX_CATEGORIES:
                positive = st.selectbox("Positive class (+1)", classes, key="upload_positive")
            else:  # too many to list: any of them can be typed
                positive = st.text_input(f"Positive class (+1): the label column has {len(classes):,} classes, "
                                         "too many to list; type one", key="upload_positive_typed") or None
        name = st.text_input("Name", upload.name.rsplit(".", 1)[0], key="upload_name")
        if st.button("Add dataset", key="upload_add"):
            try:
                if name in user_datasets():
                    raise datasets.DatasetError(f"this session already has a dataset named {name!r}: "
                                                "give the new one another name")
                ds = datasets.from_csv(raw, label, positive, task=task, name=name)
            except datasets.DatasetError as exc:
                st.error(f"{exc}")
            except Exception as exc:  # a loader failure we did not foresee: say so, keep the app up
                st.error(f"This file could not be loaded ({type(exc).__name__}); check its values.")
            else:
                user_datasets()[name] = ds
                st.success(f"Added '{name}': n = {ds.n}, d = {ds.d}. Pick it in Explore.")
                for note in ds.notes:
                    st.caption(note)
    elif header is not None:
        st.error("The CSV needs at least two columns: features and a label.")
