"""A chart's text alternative (dpcore.figures.text): its one-line summary and its data as a table,
read from hand-built Plotly figures whose answer is known."""

from __future__ import annotations

import plotly.graph_objects as go

from dpcore.figures.charts import band_figure
from dpcore.figures.text import MAX_NAMED, chart_rows, chart_summary, chart_text, panels_text, table_html


def _lines() -> go.Figure:
    """Two curves of accuracy against ε on a log x axis, a band (decoration) and a reference line."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0.1, 1, 10, 0.1], y=[0.6, 0.9, 0.95, 0.5], fill="toself", showlegend=False,
                             hoverinfo="skip"))  # a band's outline: not data
    fig.add_trace(go.Scatter(x=[0.1, 1, 10], y=[0.51, 0.8, 0.97], mode="lines+markers", name="DP-GD"))
    fig.add_trace(go.Scatter(x=[0.1, 1, None, 10], y=[0.55, 0.7, None, 0.9], mode="lines", name="<b>output</b>"))
    fig.add_trace(go.Scatter(x=[None], y=[None], name="a legend entry alone"))  # no point: not data
    fig.add_hline(y=0.9737, annotation_text="non-private")
    fig.update_layout(xaxis_title="ε", yaxis_title="accuracy", xaxis_type="log", title="not in the summary")
    return fig


def test_the_summary_says_kind_axes_series_ranges_and_reference_lines():
    assert chart_summary(_lines()) == (
        "Line chart: accuracy against ε, 2 series (DP-GD, output), x from 0.1 to 10 (log scale), "
        "y from 0.51 to 0.97; reference line: non-private at y = 0.9737.")


def test_the_table_has_a_row_a_drawn_point_and_one_a_reference_line():
    text = chart_text(_lines())
    assert text.columns == ("series", "ε", "accuracy")
    assert text.rows == [
        {"series": "DP-GD", "ε": 0.1, "accuracy": 0.51}, {"series": "DP-GD", "ε": 1, "accuracy": 0.8},
        {"series": "DP-GD", "ε": 10, "accuracy": 0.97},
        {"series": "output", "ε": 0.1, "accuracy": 0.55}, {"series": "output", "ε": 1, "accuracy": 0.7},
        {"series": "output", "ε": 10, "accuracy": 0.9},  # the gap (None) is no point
        {"series": "non-private (reference line)", "accuracy": 0.9737},
    ]
    assert chart_rows(_lines()) == text.rows


def test_a_bar_chart_of_categories_a_histogram_and_a_vertical_line():
    bars = go.Figure(go.Bar(x=["ε = 0.1", "ε = 1"], y=[1.105, 2.718], name="odds"))
    bars.update_layout(yaxis_title="largest odds factor", yaxis_type="log")
    assert chart_summary(bars) == ("Bar chart of largest odds factor, 1 series (odds), x: ε = 0.1, ε = 1, "
                                   "y from 1.105 to 2.718 (log scale).")
    hist = go.Figure([go.Histogram(x=[0.0, 0.1, 0.2, 0.9, 1.0], name="out"),
                      go.Histogram(x=[0.5, 0.6, 1.0, 1.0, 1.0], name="in")])
    hist.add_vline(x=0.7, annotation_text="threshold")
    hist.update_layout(xaxis_title="score", yaxis_title="runs")
    text = chart_text(hist)
    assert text.summary == ("Histogram of score, 2 series (out, in), 5 values each, x from 0 to 1; "
                            "reference line: threshold at x = 0.7.")
    assert text.columns == ("series", "score from", "score to", "count", "score")
    counted = {s: sum(r["count"] for r in text.rows if r["series"] == s) for s in ("out", "in")}
    assert counted == {"out": 5, "in": 5}
    assert text.rows[-1] == {"series": "threshold (reference line)", "score": 0.7}


def test_many_series_are_named_up_to_a_few_and_an_empty_figure_says_so():
    fig = go.Figure([go.Scatter(x=[1, 2], y=[k, k + 1], name=f"run {k}") for k in range(1, 10)])
    summary = chart_summary(fig)
    assert summary.startswith(f"Line chart, 9 series ({', '.join(f'run {k}' for k in range(1, MAX_NAMED + 1))}, "
                              f"and {9 - MAX_NAMED} more), x from 1 to 2, y from 1 to 10"), summary
    assert len(chart_rows(fig)) == 18
    assert chart_summary(go.Figure()) == "Chart with no data."


def test_a_figure_of_the_app_and_a_figure_of_panels():
    """band_figure (what the lesson and Compare draw): its bands and rings are not series; panels
    (Paper figures) are one table with a panel column."""
    rows = [{"mechanism": "gradient-dpgd", "epsilon": e, "accuracy_mean": a, "accuracy_std": 0.01,
             "epsilon_certified": e} for e, a in ((0.5, 0.8), (2.0, 0.9))]
    fig = band_figure(rows, "epsilon", "accuracy_mean", x_title="ε", y_title="accuracy", baseline=0.95,
                      baseline_label="non-private")
    text = chart_text(fig)
    assert text.summary.startswith("Line chart: accuracy against ε, 1 series (") and "non-private at y = 0.95" \
        in text.summary, text.summary
    assert [r["accuracy"] for r in text.rows] == [0.8, 0.9, 0.95]
    panels = panels_text([("Adult", fig), ("", _lines())])
    assert panels.summary.startswith("Figure of 2 panels (Adult, panel 2)")
    assert panels.columns == ("panel", "series", "x", "y")
    assert {r["panel"] for r in panels.rows} == {"Adult", "panel 2"} and len(panels.rows) == 3 + 7


def test_the_table_as_html_folds_under_its_label_with_column_headers():
    page = table_html(chart_text(_lines()))
    assert page.startswith('<details class="chart-data"><summary>Data of this chart</summary>')
    assert '<th scope="col">series</th><th scope="col">ε</th><th scope="col">accuracy</th>' in page
    assert "<tr><td>DP-GD</td><td>0.1</td><td>0.51</td></tr>" in page
    assert "<tr><td>non-private (reference line)</td><td></td><td>0.9737</td></tr>" in page
    assert page.count("<tr>") == 1 + 7 and 'tabindex="0"' in page
    odd = chart_text(go.Figure(go.Scatter(x=[1], y=[2], name="x < y & z")))
    assert "<td>x &lt; y &amp; z</td>" in table_html(odd)


# -- every chart the app draws has its text alternative -------------------------------------------

#: Streamlit's calls that draw a chart
CHART_CALLS = {"plotly_chart", "bar_chart", "line_chart", "area_chart", "scatter_chart", "altair_chart",
               "vega_lite_chart", "graphviz_chart", "pyplot", "map", "pydeck_chart", "bokeh_chart"}
#: what gives a chart drawn in the same function (or view) its text alternative (pages/charts.py)
DESCRIBING = {"chart_text", "describe_chart", "say_to_screen_readers"}
#: charts drawn without one, and why
UNDESCRIBED = {("pages/progress.py", "draw"): "the loss curve drawn while a run trains, replaced by the finished "
                                               "one (show_chart) when it ends"}


def undescribed_charts(source: str, name: str) -> list[str]:
    """The chart calls of a file (its text ``source``, named ``name``) whose function (or the module,
    outside any function) calls nothing of :data:`DESCRIBING`."""
    import ast

    tree = ast.parse(source)
    scopes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]
    found = []
    for scope in scopes:
        inner = {id(n) for f in ast.walk(scope) if f is not scope and isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for n in ast.walk(f)}
        calls = [n for n in ast.walk(scope) if isinstance(n, ast.Call) and id(n) not in inner]
        called = {c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "") for c in calls}
        where = getattr(scope, "name", "<module>")
        for c in calls:
            if isinstance(c.func, ast.Attribute) and c.func.attr in CHART_CALLS and not called & DESCRIBING \
                    and (name, where) not in UNDESCRIBED:
                found.append(f"{name}:{c.lineno} ({where}) draws {c.func.attr} without a text alternative")
    return found


def test_every_chart_the_app_draws_has_its_text_alternative():
    """Every chart call in the views and app.py sits beside the summary and table of its data (or is
    listed in :data:`UNDESCRIBED`, with why); the browser test (tests/test_accessibility.py) checks
    the page."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    files = [root / "app.py", *sorted((root / "pages").glob("*.py"))]
    found = [f for path in files for f in undescribed_charts(path.read_text(), path.relative_to(root).as_posix())]
    assert not found, "\n".join(found)
    # the check of the check: a chart alone is caught, one beside its description is not
    planted = "import streamlit as st\ndef a(s):\n    st.bar_chart(s)\ndef b(fig):\n    st.plotly_chart(fig)\n" \
              "    describe_chart(fig)\n"
    assert undescribed_charts(planted, "planted.py") == ["planted.py:3 (a) draws bar_chart without a text alternative"]
