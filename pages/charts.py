"""Figures and tables on the page: Plotly charts readable at any width (their title and notes as
page text), a paper figure's panels in rows, the loss curve of a run, and the downloads of a
view's table, figure and noise plan."""

from __future__ import annotations

import html
import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpcore.exceptions import DPCoreError
from dpcore.figures.charts import (figure_note, legend_html, on_screen, panel_columns, panels, target_note,
                            without_notes)
from dpcore.experiments.run import RunSpec, noise_plan
from dpcore.export.writer import VIEWS as EXPORTED, export_view, settings_of
from dpcore.figures.result import no_better_groups, no_better_rows
from dpcore.figures.views import loss_figure  # noqa: F401 - the views draw it from here
from dpcore.figures.text import ChartText, chart_text, panels_text, table_html
from dpcore.jsonutil import dumps
from dpcore.privacy.core import dp_events_list
from pages.appstate import UPLOAD_PREFIX, app_context, user_dataset


def missed_target_note(rows, target: str = "epsilon", x: str | None = None) -> None:
    """Under a plot: which mechanisms miss their target, and by how much (``x``: the swept
    coordinate when it is not ε, e.g. ``"skew"``), written by the one note formatter."""
    note = target_note(rows, target=target, x=x)
    if note:
        st.warning(note)


#: the most lines a figure's guessing box lists (then how many more)
GUESSING_LINES = 6


def guessing_box(rows, name, guess: float | None = None, advice: str = "", group=None, axis: str = "") -> bool:
    """The one box every view shows when a result it shows is no better than guessing
    (:func:`dpcore.figures.result.versus_guessing`, at the digits shown): ``name(row)`` says which
    result it is; ``guess`` stands in for rows that carry no guess of their own; ``advice``: what
    to try; ``group(row)``: a figure of many panels, whose findings are told a line per group
    (:func:`dpcore.figures.result.no_better_groups`, ``name`` giving a point's value on the x
    ``axis``).  Whether the box was shown."""
    found = no_better_rows(rows, guess)
    if not found:
        return False
    head = found[0][1]
    end = " The noise has drowned what the data says there. " + (advice or "Try a larger ε or more data.")
    if group is not None:
        lines = no_better_groups(found, group, name, axis)
        more = (f"\n- and {len(lines) - GUESSING_LINES} more series or panels: every point on or under its "
                "panel's red dashed line") if len(lines) > GUESSING_LINES else ""
        st.warning(f"**No better than guessing** — these points score no better than {head.words} (the red "
                   "dashed line in their panel):\n" + "".join(f"\n- {line}" for line in lines[:GUESSING_LINES])
                   + more + "\n\n" + end.strip())
        return True
    what = "; ".join(f"{name(r)}: {v.value:.4f}" for r, v in found)
    st.warning(f"**No better than guessing** — {head.words} scores {head.guess:.4f} "
               f"({head.label}); "
               f"{'this result' if len(found) == 1 else 'these results'} score{'s' if len(found) == 1 else ''} "
               f"no better: {what}.{end}")
    return True


def drawn(results):
    """(figure, the figure as the page shows it (``on_screen``'s title, copy and notes, with its
    panels one chart each: for :func:`show_panels`), its note, its points): the note under the figure
    is written by :func:`figure_note` from the points drawn (the figure keeps it, wrapped, for the
    download; on screen it is page text, which wraps by itself); the points (``figure_and_points``'
    second part) are what the page's guessing box reads."""
    fig, points = results.figure_and_points()
    title, shown, notes = on_screen(without_notes(fig))
    return (fig, (title, shown, notes, legend_html(shown), panel_columns(shown), panels(shown)),
            figure_note(**points), points)


#: the most panels side by side (:func:`show_panels`)
MAX_PANELS_A_ROW = 3


def show_panels(prepared) -> None:
    """A figure of many panels as :func:`drawn` prepared it: its title, its one legend (wrapping at
    the page's width), then its panels in rows of columns as the paper lays them out; on a phone
    (Streamlit stacks columns below 640 px) one panel a row, each as wide as the screen."""
    title, shown, notes, legend, columns, charts = prepared
    if len(charts) <= 1:
        show_chart(prepared=(title, shown, notes))
        return
    if title:
        st.markdown(f"**{_escape(title)}**")
    st.html(legend)
    # a row of the paper in rows of at most MAX_PANELS_A_ROW (5 → 3 + 2), so that a panel keeps
    # ~250 px of plot in the wide layout beside the sidebar
    per = math.ceil(columns / math.ceil(columns / MAX_PANELS_A_ROW))
    for row in range(0, len(charts), columns):
        paper_row = charts[row:row + columns]
        for start in range(0, len(paper_row), per):
            for col, (name, chart) in zip(st.columns(per), paper_row[start:start + per]):
                with col:
                    if name:
                        st.caption(f"**{_escape(name)}**")
                    st.plotly_chart(chart, width="stretch")
                    say_to_screen_readers(chart_text(chart).summary)
    for note in notes:
        st.markdown(f":red[{_escape(note)}]")
    data_of_chart(panels_text(charts))


#: a record's non-private model is the exact one at that row's own λ; the line the views draw is
#: the best over a λ grid (pages.cached.reference_for): a downloaded table names its column so
#: that the two are not read as one number (a new user found 0.8423 in the file, 0.8467 drawn)
ROW_LAMBDA_COLUMNS = {"accuracy_nonprivate": "accuracy_nonprivate_at_this_rows_lambda",
                      "rmse_nonprivate": "rmse_nonprivate_at_this_rows_lambda"}


def table_csv(rows) -> bytes:
    """A view's table as the CSV file it downloads (:data:`ROW_LAMBDA_COLUMNS` renamed)."""
    return pd.DataFrame(rows).rename(columns=ROW_LAMBDA_COLUMNS).to_csv(index=False).encode()


def download_table(rows, name: str, key: str, label: str = "Download table (CSV)") -> None:
    """The table as CSV (:func:`table_csv`), written when the button is clicked (not on every run
    of the page: a paper figure's table took half of the view's time, for every student who opened it)."""
    st.download_button(label, lambda: table_csv(rows), file_name=f"{name}.csv", mime="text/csv", key=key)


def download_plan(config: RunSpec, key: str) -> None:
    """The run's noise plan as dp-accounting events (the file ``run --plan-out`` writes and
    ``certify --plan`` reads), written when the button is clicked; nothing where the mechanism
    declares no plan before training (non-private, the distributed mechanisms)."""
    try:
        plan = noise_plan(config, app_context(), dataset=user_dataset(config.dataset))
    except (DPCoreError, NotImplementedError):
        return
    st.download_button("Download noise plan (dp-accounting events, JSON)",
                       lambda: dumps(dp_events_list([(config.label(), plan, config.delta)]), indent=1).encode(),
                       file_name=f"noise-plan-{config.mechanism}.json", mime="application/json", key=key,
                       help="`python -m dpcore certify --plan FILE` certifies it again; dp-accounting composes its "
                            "events (docs/certify.md)")


def client_bars(sizes) -> None:
    """Records per client as bars, clients numbered from 1 as in the tables."""
    st.bar_chart({"client": list(range(1, len(sizes) + 1)), "records": list(sizes)}, x="client", y="records",
                 x_label="client", y_label="records")
    describe_chart(go.Figure(go.Bar(x=list(range(1, len(sizes) + 1)), y=list(sizes), name="records"),
                             layout=dict(xaxis_title="client", yaxis_title="records")))


def show_chart(fig=None, width: str = "stretch", key: str | None = None, *, prepared=None) -> None:
    """A chart, readable at any width (:func:`dpcore.figures.charts.on_screen`): its title as text above
    it, its notes (red) below it, a horizontal legend above the plot.  ``prepared``: what
    ``on_screen`` made of a figure every session shows alike (:func:`drawn`), made once: the
    copy it makes checks every property of every trace, most of a session's work on a shipped
    figure (30 sessions opening Paper figures at once: 63 % of the server's time)."""
    title, shown, notes = prepared if prepared is not None else on_screen(fig)
    if title:
        st.markdown(f"**{_escape(title)}**")
    st.plotly_chart(shown, width=width, key=key)
    text = chart_text(shown)
    say_to_screen_readers(text.summary)
    for note in notes:
        st.markdown(f":red[{_escape(note)}]")
    data_of_chart(text)


#: the class of words only a screen reader reads: out of sight, and (app.py's BASE_CSS) taking no room
SCREEN_READER_ONLY = "sr-only"


def say_to_screen_readers(text: str) -> None:
    """``text`` in the page for a screen reader alone (a chart's summary): unseen, and it takes no
    room (a lesson step must still fit a projector's screen)."""
    st.html(f'<p class="{SCREEN_READER_ONLY}">{html.escape(text)}</p>')


def data_of_chart(text: ChartText) -> None:
    """A chart's data as a table (:func:`dpcore.figures.text.table_html`: an HTML table a screen
    reader walks), folded under it; none in presenter mode, where a lesson step must fit the
    projector's screen (the summary is still read)."""
    if st.session_state.get("present") or not text.rows:
        return
    st.html(table_html(text))


def describe_chart(fig: go.Figure) -> None:
    """The text alternative of a chart drawn otherwise (Streamlit's own charts), from a figure of
    the same data: its summary for a screen reader and its data as a table."""
    text = chart_text(fig)
    say_to_screen_readers(text.summary)
    data_of_chart(text)


def plain_markdown(text: str) -> str:
    """Markdown-safe: text from the core (a figure's title, an estimator's detail) written as a page's,
    its ``*``, ``_``, ``$`` and brackets shown as themselves."""
    return _escape(text)


def _escape(text: str) -> str:
    """Markdown-safe: a figure's text written as a page's."""
    return "".join("\\" + c if c in "\\`*_{}[]$#<>|" else c for c in text)


def download_figure(fig, name: str, key: str) -> None:
    """The figure as a self-contained HTML file: plotly.js is embedded, so it opens offline.
    It is written when the button is clicked (a callable, which Streamlit runs then), not at
    every rerun: the file embeds plotly.js (4.8 MB, 55 ms to write)."""
    st.download_button("Download plot (HTML)", lambda: fig.to_html(include_plotlyjs=True).encode(),
                       file_name=f"{name}.html", mime="text/html", key=key)


def download_code(view: str, keys, key: str, prefixes=()) -> None:
    """"Download as notebook" and "Download as script": the view with its settings on screen (its
    declared link ``keys`` and the keys of its ``prefixes`` families, as the link writes them) as code
    that computes it again (:func:`dpcore.export.writer.export_view`); where the settings cannot be
    exported (an uploaded dataset stays in this session), a caption says why instead."""
    if view not in EXPORTED:
        return
    given = {k: st.session_state[k] for k in keys if k in st.session_state}
    given.update({k: v for k, v in st.session_state.items()
                  if isinstance(k, str) and k not in given and any(k.startswith(p) for p in prefixes)})
    if any(isinstance(v, str) and v.startswith(UPLOAD_PREFIX) for v in given.values()):
        st.caption("An uploaded dataset stays in this session: its view is not offered as a notebook or a script.")
        return
    try:  # refused settings are said here
        EXPORTED[view].check(settings_of(EXPORTED[view], given))
    except DPCoreError as exc:
        st.caption(f"This view is not offered as code for these settings: {exc}")
        return
    help_ = ("computes this view again with the same dpcore calls, settings and seeds, prints its numbers and "
             "draws its charts; run it from the repository's folder after python -m pip install -r requirements.txt")
    # the files written now (a millisecond each), not when clicked: a deferred file is forgotten when the view
    # reruns while its results fill in, and the click then downloads nothing (the second lecturer walk)
    c1, c2 = st.columns(2)
    c1.download_button("Download as notebook", export_view(view, fmt="ipynb", given=given).encode(),
                       file_name=f"{view}.ipynb", mime="application/x-ipynb+json", key=f"{key}_nb",
                       help="A Jupyter notebook that " + help_)
    c2.download_button("Download as script", export_view(view, fmt="py", given=given).encode(),
                       file_name=f"{view}.py", mime="text/x-python", key=f"{key}_py",
                       help="A Python script that " + help_)
