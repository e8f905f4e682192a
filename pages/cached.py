"""Calls into dpcore, kept: a dataset's details, a run, its non-private reference, the shipped
results and an audit, each computed once for every session (an upload's: for its own session
only); an error is shown on the page instead of a traceback."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import numpy as np
import streamlit as st

from dpcore import datasets
from dpcore.exceptions import DPCoreError
from dpcore.experiments.baselines import Baseline, baseline, lambdas_for
from dpcore.experiments import presets as _presets
from dpcore.experiments.run import RunSpec, delta_warning, problem_data, slow_reference
from dpcore.experiments.views import run_record
from pages.appstate import app_context, run_records, user_dataset
from pages.charts import drawn
from pages.progress import live_curve, run_progress


@st.cache_data(show_spinner="Loading and preprocessing the dataset…")
def dataset_details(dataset_id: str) -> dict:
    """Summary, preprocessing notes and a row-norm histogram of a registered dataset (cached)."""
    ds = datasets.load(dataset_id)
    out = ds.summary()
    out["notes"] = list(ds.notes)
    out["feature_names"] = list(ds.feature_names)
    norms = np.linalg.norm(ds.X_train, axis=1)
    counts, edges = np.histogram(np.minimum(norms, 1.0), bins=20, range=(0.0, 1.0))
    out["norm_histogram"] = {f"≤ {e:.2f}": int(c) for e, c in zip(edges[1:], counts)}
    out["max_row_norm"] = float(norms.max())
    return out


def _record(config: RunSpec, dataset=None, progress=None, on_trace=None) -> dict:
    """``dpcore.experiments.views.run_record``: the run as a record with the loss trace (as its export runs it)."""
    return run_record(config, ctx=app_context().with_(progress=progress, on_trace=on_trace), dataset=dataset)


def run_or_error(config: RunSpec) -> dict | None:
    """Run (kept for every session; uploads never) and show a clear ``st.error`` instead of a
    traceback; a long run shows its progress and the time it still needs."""
    try:
        ds = user_dataset(config.dataset)
        with reference_notice(config), run_progress() as progress, live_curve(config.iterations) as on_trace:
            if ds is None:
                return copy.deepcopy(run_records().get(
                    config, lambda: _record(config, progress=progress, on_trace=on_trace)))
            return _record(config, dataset=ds, progress=progress, on_trace=on_trace)  # never shared
    except DPCoreError as exc:
        st.error(f"{exc}")
        return None


def delta_guard(config: RunSpec) -> None:
    """The one warning on a δ ≥ 1/n (:func:`dpcore.experiments.run.delta_warning`, Explore's through its run's
    warnings) for a view that shows runs of ``config``'s data at its δ without a run's record (Compare,
    Local vs central, Distributed): a lecturer's walk found them silent at a δ Explore calls worthless."""
    try:
        ds = user_dataset(config.dataset)
        n = (ds if ds is not None else problem_data(config)[0]).n
    except DPCoreError:
        return  # the view's own run says what is wrong with the data
    if (message := delta_warning(config.delta, n)) is not None:
        st.warning(message)


def reference_for(config: RunSpec, lams=()) -> Baseline | None:
    """The one non-private reference of ``config``'s data and model
    (:func:`dpcore.experiments.baselines.baseline`: the best exact model over the tuning's λ
    grid and the λ's in ``lams`` and ``config.lam``), kept for every session (uploads: for
    this run only); ``None`` with an ``st.error`` when it cannot be computed."""
    lams = tuple(sorted({float(v) for v in lams if v is not None}))
    # a new dataset's first reference solves it exactly at every λ of the grid (KDD Cup's 395k
    # rows: 17 s after a 5 s training): the page says so rather than sit under a finished bar
    # (the spinner shows only when it lasts)
    wait = ("Computing the non-private reference: the exact model at each λ of the grid "
            f"({', '.join(f'{v:g}' for v in lambdas_for(config, lams))}), "
            "once per dataset on this server…")
    try:
        ds = user_dataset(config.dataset)
        with st.spinner(wait):
            if ds is not None:
                return baseline(config, lams=lams, ctx=app_context(), dataset=ds)
            key = ("baseline", config.dataset, config.model, config.n, config.d, config.noise, config.lam, lams)
            return run_records().get(key, lambda: baseline(config, lams=lams, ctx=app_context()))
    except DPCoreError as exc:
        st.error(f"The non-private reference could not be computed: {exc}")
        return None


@contextlib.contextmanager
def reference_notice(config: RunSpec):
    """A spinner while the run trains; it says why the wait is long when the run first needs
    the MLP's slow reference solve."""
    note = slow_reference(config, app_context()) if user_dataset(config.dataset) is None else None
    with st.spinner(note or "Training…"):
        yield


@st.cache_resource(show_spinner="Reading the shipped results…")
def load_shipped(preset_id: str):
    """``shipped_results`` and :func:`drawn` of it, made once per server (the files change
    only with the app; pages only read the figures: show_chart draws a copy).  Paper figures
    reads it; the Start view's "Prepare for class" draws the first figure ahead (a few seconds
    the first time in a server process, which 30 students opening it at once would all wait)."""
    # by the module: a test may replace it; every number verified (dpcore.shipped's rule), the
    # certificates recomputed on the app's calibration table (kept on disk: seconds once, then at once);
    # a refused file raises ShippedFileError, which is not cached: the page shows its one line
    shipped = _presets.shipped_results(preset_id, ctx=app_context())
    return (shipped, None, None, None, None) if shipped is None else (shipped, *drawn(shipped))


def audit_view_state(spec: RunSpec, trials: int, threat: str) -> dict[str, Any]:
    """The Audit view's widgets (its declared link keys) at ``spec``: what its "Load a leaking
    setup" button sets and what the lesson's "Try it yourself" opens."""
    return {"au_dataset": spec.dataset, "au_model": spec.model, "au_mechanism": spec.mechanism,
            "au_epsilon": spec.epsilon, "au_delta": spec.delta, "au_cal": spec.calibration, "au_c": spec.c,
            "au_T": spec.iterations, "au_trials": trials, "au_threat": threat, "au_canary": "auto",
            "au_noise": spec.noise_scale, "au_seed": spec.seed}


def shared_audit(config: RunSpec, trials: int, bar, *, dataset=None, **options) -> dict:
    """:func:`dpcore.run_audit`'s record of ``config`` (``bar``: its progress), kept for every
    session of this server when it audits a bundled dataset (an audit is seeded: the same settings
    give the same record; in the app context's memo, as :func:`run_records`): a lecturer's audit,
    opened by a student's link (pages.links.linked_result),
    is read at once instead of run again (the leaking setup's confirmed audit: 27 s).  An upload's
    audit runs in its own session and is never kept."""
    from dpcore.audit import run_audit  # the audit sits above the runs this module draws

    def run_it() -> dict:
        return run_audit(config, trials=trials, dataset=dataset, ctx=app_context(), **options,
                         progress=lambda done, total: bar.progress(done / total, text=f"audit: {done}/{total} runs")
                         ).to_dict()

    if dataset is not None:
        return run_it()
    return run_records().get(("audit", config, trials, tuple(sorted(options.items()))), run_it)
