"""Small helpers shared by the pages (formatting and cached dpcore calls only)."""

from __future__ import annotations

import math

import streamlit as st

from dpcore import datasets


@st.cache_data(show_spinner="Loading and preprocessing the dataset…")
def dataset_details(dataset_id: str) -> dict:
    """Summary, preprocessing notes and row norms of a registered dataset (cached)."""
    import numpy as np

    ds = datasets.load(dataset_id)
    out = ds.summary()
    out["notes"] = list(ds.notes)
    out["feature_names"] = list(ds.feature_names)
    norms = np.linalg.norm(ds.X_train, axis=1)
    counts, edges = np.histogram(np.minimum(norms, 1.0), bins=20, range=(0.0, 1.0))
    out["norm_histogram"] = {f"≤ {e:.2f}": int(c) for e, c in zip(edges[1:], counts)}
    out["max_row_norm"] = float(norms.max())
    return out


def fmt_eps(value) -> str:
    """ε for display: ∞ when there is no guarantee."""
    if value is None or (isinstance(value, float) and math.isinf(value)):
        return "∞"
    return f"{value:.3g}"
