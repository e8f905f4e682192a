"""Layout defects seen in a real browser (issue 41, "smaller, all seen"), checked on the figures
themselves; what only a browser can measure is in tests/test_browser.py (the lesson in presenter
mode, the offline lesson file, Compare and Explore on a phone).

* Compare's tuned curves drawn at the ε their search spent (``band_figure(paid=…)``): a dash of
  their own (not the red dashed guessing line's), thinner and faded, along the ε spent (no
  zig-zag, no vertical stroke where two target ε's share one search), on an x axis that reaches
  every ε spent.
* A chart on screen (``on_screen``) is tall enough for its legend: on a phone each entry takes
  a line, and ten of them left 150 px of plot.
* The offline lesson's charts: the title is page text (it wraps), the axes make room for their
  tick labels.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

from dpcore.figures.charts import (
    AXES_ROOM,
    GUESS_LINE,
    LEGEND_LINE,
    PLOT_ROOM,
    band_figure,
    legend_entries,
    on_screen,
)
from dpcore.report import LessonStep, lesson_html

#: three mechanisms tuned as Compare's first preset is: the two smallest targets share the search
#: tuned at 0.05 (one ε spent, two accuracies), and the last search spent more than every target
EPSILONS = (0.01, 0.03, 0.1, 1.0, 10.0)
SPENT = {0.01: 0.8, 0.03: 0.8, 0.1: 1.6, 1.0: 16.0, 10.0: 160.0}


def _rows() -> list[dict]:
    rows = []
    for k, mech in enumerate(("output-gaussian", "objective-gaussian", "gradient-dpgd")):
        for j, eps in enumerate(EPSILONS):
            rows.append({"mechanism": mech, "epsilon": eps, "epsilon_certified": eps,
                         "accuracy_mean": 0.70 + 0.03 * j + 0.01 * k, "accuracy_std": 0.01,
                         "tuned_at": max(eps, 0.05), "tuned_search_epsilon": SPENT[eps] * (1 + 0.1 * k)})
    return rows


def _figure() -> go.Figure:
    return band_figure(_rows(), "epsilon", "accuracy_mean", title="accuracy against ε", x_title="ε",
                       y_title="accuracy", baseline=0.85, guess=0.75, bounds=(0.0, 1.0),
                       paid="tuned_search_epsilon")


def _paid(fig: go.Figure) -> list:
    return [t for t in fig.data if (t.name or "").endswith("search paid")]


def test_the_curves_at_the_epsilon_spent_do_not_look_like_the_guessing_line():
    fig = _figure()
    guess = [s for s in fig.layout.shapes if s.line.color == GUESS_LINE["line_color"]]
    assert len(guess) == 1 and guess[0].line.dash == "dash"
    paid = _paid(fig)
    assert len(paid) == 3
    for t in paid:
        assert t.line.dash not in (None, "solid", guess[0].line.dash), t.line.dash
        assert (t.line.width or 2) <= guess[0].line.width and (t.opacity or 1) < 1  # thinner, faded
    key = [t for t in fig.data if "the ε its search spent" in (t.name or "")]
    assert len(key) == 1 and key[0].line.dash == paid[0].line.dash  # the legend says what the dash means


def test_the_x_axis_reaches_every_epsilon_a_search_spent():
    fig = _figure()
    spent = [x for t in _paid(fig) for x in t.x if x is not None]
    assert max(spent) > max(EPSILONS)  # the case the issue saw: searches beyond every target
    axis = fig.layout.xaxis
    assert axis.type == "log" and axis.range is not None
    lo, hi = axis.range
    for x in [*spent, *EPSILONS]:
        assert lo < math.log10(x) < hi, (x, axis.range)
    assert 100 in axis.tickvals  # the part beyond the targets is labelled too
    assert all(e in axis.tickvals for e in EPSILONS)  # and every target still is


def test_a_curve_at_the_epsilon_spent_runs_along_it_without_a_vertical_stroke():
    for t in _paid(_figure()):
        xs, ys = list(t.x), list(t.y)
        points = [(x, y) for x, y in zip(xs, ys) if x is not None]
        assert len(points) == len(EPSILONS) and len(t.hovertext) == len(xs)
        assert [x for x, _ in points] == sorted(x for x, _ in points)  # along the ε spent: no zig-zag
        for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
            assert x0 is None or x1 is None or x0 != x1, (x0, x1)  # two points at one ε are not joined
        shared = [y for x, y in points if x == points[0][0]]
        assert len(shared) == 2  # the targets 0.01 and 0.03: both drawn, as two markers


def test_points_spent_out_of_order_are_drawn_in_order():
    rows = _rows()
    for r in rows:  # a search for a larger target that spent less (tuned elsewhere)
        if r["epsilon"] == 1.0:
            r["tuned_search_epsilon"] = 1.2
    for t in _paid(band_figure(rows, "epsilon", "accuracy_mean", paid="tuned_search_epsilon")):
        xs = [x for x in t.x if x is not None]
        assert xs == sorted(xs)
        assert all(str(x) in h or f"{x:.3g}" in h for x, h in zip(t.x, t.hovertext) if x is not None)


def test_a_chart_on_screen_is_tall_enough_for_its_legend():
    fig = _figure()
    entries = legend_entries(fig)
    assert entries == 4  # three mechanisms and the key to the dash-dotted curves
    many = go.Figure([go.Scatter(x=[1, 2], y=[1, 2], name=f"series {k}") for k in range(10)])
    many.update_layout(legend=dict(orientation="h"))
    _, shown, _ = on_screen(many)
    assert legend_entries(many) == 10
    assert shown.layout.height >= PLOT_ROOM + AXES_ROOM + 10 * LEGEND_LINE  # a line per entry on a phone
    assert many.layout.height is None  # the figure itself (downloads) is as it was
    _, few, _ = on_screen(go.Figure(go.Scatter(x=[1, 2], y=[1, 2])).update_layout(legend=dict(orientation="h")))
    assert few.layout.height == 450  # Plotly's own height, as before
    fixed = go.Figure([go.Scatter(x=[1], y=[1], name=str(k)) for k in range(10)])
    fixed.update_layout(height=340, legend=dict(orientation="h"))
    assert on_screen(fixed)[1].layout.height == 340  # a height of its own (presenter mode) is kept


def test_the_offline_lessons_chart_titles_are_page_text_and_its_axes_make_room():
    """The browser's side of this (nothing cut, in Chromium): tests/test_browser.py,
    test_the_offline_lesson_file_cuts_no_title_and_no_tick_label."""
    import plotly_html

    long = ("above the certified curve no attack can go (with the certified guarantee); above the target "
            "curve, none if the target were met")
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[0.80, 0.87, 0.95], name="a"))
    fig.update_layout(title=long, margin=dict(l=10, r=10, t=90, b=10), legend=dict(orientation="h"))
    page = lesson_html("A lesson", [LessonStep("One", "words", fig, "settings", "http://x/lesson")])
    (drawn,) = plotly_html.figures(page)
    assert not plotly_html.title(drawn)  # not in the chart, where Plotly cannot wrap it
    assert f'<p class="chart-title">{long}</p>' in page
    assert drawn["layout"]["yaxis"]["automargin"] is True and drawn["layout"]["xaxis"]["automargin"] is True
    assert fig.layout.title.text == long  # the step's own figure is left as it was
