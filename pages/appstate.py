"""What the app keeps: its one execution context (shared by sessions, with the exact solutions and
finished grids it keeps on disk under :data:`CACHE_DIR`), the records of runs it keeps for every
session, and a session's own uploaded datasets (never shared)."""

from __future__ import annotations

import os

import streamlit as st

from dpcore.experiments.context import Context, cache_dir


#: Exact reference solutions (L*) of registered data outlive the server (the MLP's takes
#: minutes); keyed by data, model, version and solver source, so never stale.  Uploads
#: are never written there.  ``DPCORE_CACHE_DIR`` moves it.
CACHE_DIR = cache_dir()


#: grids run their configurations in this many worker processes
WORKERS = min(2, os.cpu_count() or 1)


@st.cache_resource
def app_context() -> Context:
    """The app's one execution context (shared by sessions): grids on :data:`WORKERS`
    processes, exact solutions kept in ``CACHE_DIR/erm`` and in memory, and every grid's
    finished configurations in ``CACHE_DIR/results`` (keyed by the configuration and the
    code's source), so a comparison any session has run opens at once for every other."""
    return Context(workers=WORKERS, erm_dir=CACHE_DIR / "erm", results_dir=CACHE_DIR / "results")


def run_records():
    """Records of runs on registered data, shared by sessions (runs are pure and seed-keyed): the
    app context's memo (:class:`dpcore.cache.Memo`, single flight across sessions) rather than
    ``st.cache_data``, so that a run being computed can report its progress on the page that asked."""
    return app_context().memo


UPLOAD_PREFIX = "upload:"


def user_datasets() -> dict:
    """This session's uploaded datasets (never shared between users)."""
    return st.session_state.setdefault("user_datasets", {})


def user_dataset(dataset_id: str):
    """The session's Dataset for an ``upload:`` id, else None (a registered dataset)."""
    if dataset_id.startswith(UPLOAD_PREFIX):
        return user_datasets().get(dataset_id[len(UPLOAD_PREFIX):])
    return None
