"""What every view imports: :func:`enter_view` (each view's first call) and, re-exported from the
modules that hold them, the views' shared helpers.  No numerical work happens in ``pages/`` beyond
arranging results for display.

- :mod:`pages.appstate`: the app's one execution context, the runs it keeps, a session's uploads;
- :mod:`pages.terms`: the glossary and the parameters' tooltips;
- :mod:`pages.formatting`: numbers for display;
- :mod:`pages.widgets`: widgets built from dpcore's parameter declarations, and the pickers;
- :mod:`pages.progress`: progress bars, the time left, drawings redrawn while work runs;
- :mod:`pages.cached`: calls into dpcore, kept for every session;
- :mod:`pages.charts`: Plotly figures, tables and downloads;
- :mod:`pages.links`: a view's link and the settings views share (imported from there).
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from dpcore.lesson import LEAKING_AUDIT, LEAKING_THREAT, LEAKING_TRIALS  # the views' leaking setup
from pages.appstate import (app_context, CACHE_DIR, run_records, UPLOAD_PREFIX, user_dataset, user_datasets,
                            WORKERS)
from pages.cached import (audit_view_state, dataset_details, delta_guard, load_shipped, reference_for, reference_notice,
                          run_or_error, shared_audit)
from pages.charts import (client_bars, guessing_box, download_code, download_figure, download_plan, download_table, drawn, loss_figure,
                          MAX_PANELS_A_ROW, missed_target_note, plain_markdown, ROW_LAMBDA_COLUMNS,
                          show_chart, show_panels, table_csv)
from pages.formatting import fmt_eps, fmt_num, readable
from pages.progress import (CURVE_AFTER_SECONDS, CURVE_REDRAW_SECONDS, live_curve, live_drawer,
                            PROGRESS_AFTER_SECONDS, progress_reporter, run_progress, time_left, with_progress)
from pages.terms import GLOSSARY, glossary_link, param_help, PARAM_TERMS
from pages.widgets import (apply_setting, bounded_slider, choice, dataset_label, dataset_picker, dataset_task,
                           declared_number, held_within, HIDDEN_OPTIONS, keep_choice, mechanisms_for,
                           model_picker, option_default, OPTION_LABELS, option_widgets, param_widget,
                           reset_tuned_widgets, setting_in_use, skew_refusal, TUNED_WIDGETS)

__all__ = [
    "LEAKING_AUDIT", "LEAKING_THREAT", "LEAKING_TRIALS", "enter_view",
    "CACHE_DIR", "WORKERS", "app_context", "run_records", "UPLOAD_PREFIX", "user_datasets", "user_dataset",
    "GLOSSARY", "PARAM_TERMS", "glossary_link", "param_help",
    "fmt_eps", "readable", "fmt_num",
    "keep_choice", "choice", "held_within", "bounded_slider", "declared_number", "param_widget",
    "TUNED_WIDGETS", "apply_setting", "reset_tuned_widgets", "setting_in_use", "OPTION_LABELS",
    "HIDDEN_OPTIONS", "option_widgets", "option_default", "dataset_picker", "dataset_label", "dataset_task",
    "model_picker", "skew_refusal", "mechanisms_for",
    "missed_target_note", "guessing_box", "loss_figure", "drawn", "MAX_PANELS_A_ROW", "show_panels", "ROW_LAMBDA_COLUMNS",
    "table_csv", "download_table", "download_plan", "client_bars", "show_chart", "plain_markdown",
    "download_figure", "download_code",
    "progress_reporter", "time_left", "live_drawer", "with_progress", "PROGRESS_AFTER_SECONDS",
    "run_progress", "CURVE_AFTER_SECONDS", "CURVE_REDRAW_SECONDS", "live_curve",
    "dataset_details", "run_or_error", "reference_for", "reference_notice", "load_shipped", "delta_guard",
    "audit_view_state", "shared_audit",
]


# -- how a view is entered ---------------------------------------------------------------

def enter_view(name: str) -> None:
    """Every view's first call.  Until app.py has called ``st.navigation`` once in this server
    process, Streamlit serves a link straight to a view with its older page mechanism (the
    ``pages/`` folder): the view runs without app.py (no navigation, no layout, no presenter
    mode, helper modules listed as pages).  Then send it through app.py, to the same view
    with the same link parameters, once per session.  ``PagesManager.uses_pages_directory`` is
    Streamlit's own record of which mechanism is in charge (if it ever disappears, nothing is
    redirected); AppTest resets it before every run, so a session that has been through
    app.py is not sent again."""
    old_mechanism = getattr(PagesManager, "uses_pages_directory", False)
    if not old_mechanism or st.session_state.get("_entered_via_app"):
        st.session_state["_entered_via_app"] = True
        return
    st.session_state["_entered_via_app"] = True
    st.switch_page("app.py", query_params={**st.query_params.to_dict(), "view": name})
