"""Small views, small defects (issue 41, "smaller, all seen"): Theory's sample-size axis and its
coinciding bound lines, the Lesson's words, Local vs central's chart title and table — each
exercised with AppTest on the page itself (as tests/test_app.py does)."""

from __future__ import annotations

import ast
import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def _page(name: str) -> AppTest:
    return AppTest.from_file(str(ROOT / "pages" / name), default_timeout=300)


def _spec(at, k: int = 0) -> dict:
    return json.loads(at.get("plotly_chart")[k].proto.spec)


def _array(v) -> list:
    """A plotly array as a list (plotly may ship it as a base64 typed array)."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).astype(float).tolist()
    return list(v)


def _texts(at) -> list[str]:
    """Every piece of text the page wrote."""
    return [e.value for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning")
            for e in getattr(at, kind)]


# -- Theory ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dataset", ["adult", "iris"])
def test_theory_labels_the_sample_size_axis_with_whole_numbers(dataset):
    """The scaling grid's n are the dataset's n times 1/8 … 8 (adult: 4522.125, 9044.25, …); the
    ticks are round integers (1–2–5 steps) and their labels say exactly those integers."""
    at = _page("theory.py")
    at.query_params["th_dataset"] = dataset
    at.run()
    assert not at.exception and not at.error
    assert at.radio(key="th_over").value == "n"
    xaxis = _spec(at)["layout"]["xaxis"]
    ticks = _array(xaxis["tickvals"])
    assert len(ticks) >= 3, ticks
    assert all(float(t) == int(t) >= 1 for t in ticks), ticks
    assert [int(s.replace(",", "")) for s in xaxis["ticktext"]] == [int(t) for t in ticks]
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", s) for s in xaxis["ticktext"]), xaxis["ticktext"]
    # ε is no sample size: its axis keeps the plotted values
    at.radio(key="th_over").set_value("epsilon").run()
    assert not at.exception
    assert any(float(t) != int(t) for t in _array(_spec(at)["layout"]["xaxis"]["tickvals"]))


def _style(trace: dict) -> tuple:
    return (trace.get("mode"), (trace.get("line") or {}).get("dash", "solid"),
            (trace.get("marker") or {}).get("symbol", "circle"))


def _coinciding(data: list[dict]) -> list[tuple[int, int]]:
    ys = [np.array(_array(t["y"]), float) for t in data]
    return [(i, j) for i in range(len(data)) for j in range(i + 1, len(data))
            if ys[i].shape == ys[j].shape and np.allclose(ys[i], ys[j], rtol=1e-3, atol=0)]


def test_theory_draws_coinciding_bounds_so_that_each_is_seen():
    """Several rows share one bound (001-wang2017-gd and 002-dbdp-sgd, in the default choice, give
    the same curve): no two traces with the same values are drawn in the same style, and the later
    one's legend entry says which curve it lies on — in the default choice and with every row."""
    at = _page("theory.py").run()
    assert not at.exception
    for label in ("default rows", "every row"):
        data = _spec(at)["data"]
        pairs = _coinciding(data)
        assert pairs, f"{label}: no coinciding curves, the test sees nothing"  # the case the issue is about
        for i, j in pairs:
            assert _style(data[i]) != _style(data[j]), (label, data[i]["name"], data[j]["name"])
            assert "same as" in data[j]["name"], (label, data[j]["name"])
        names = [t["name"] for t in data]
        assert len(set(names)) == len(names), names
        if label == "default rows":
            ids = at.multiselect(key="th_rows").options
            at.multiselect(key="th_rows").set_value(ids).run()
            assert not at.exception and len(_spec(at)["data"]) == len(ids)


# -- Lesson ------------------------------------------------------------------------------------

def _navigation_titles() -> dict[str, str]:
    """url path → the title app.py's navigation gives the view."""
    tree = ast.parse((ROOT / "app.py").read_text())
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Page":
            path = Path(node.args[0].value).stem
            out[path] = next(k.value.value for k in node.keywords if k.arg == "title")
    return out


def test_the_lesson_names_each_view_as_the_navigation_does():
    tree = ast.parse((ROOT / "pages" / "lesson.py").read_text())
    assigned = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    names = ast.literal_eval(assigned["VIEW_NAMES"])
    steps_views = [step.elts[2].value for step in assigned["STEPS"].elts]
    nav = _navigation_titles()
    assert nav["local_central"] == "Local vs central"
    for view in steps_views:
        assert names[view] == nav[view], (view, names[view], nav[view])


def test_lesson_step_one_writes_no_caret_and_step_four_names_local_vs_central():
    at = _page("lesson.py").run()
    assert not at.exception and at.header[0].value == "1. What ε means"
    written = _texts(at) + [json.dumps(_spec(at)["layout"].get("title", ""), ensure_ascii=False)]
    assert not [t for t in written if "^" in t], [t for t in written if "^" in t]
    assert any("e to the power ε" in t for t in written)
    at = _page("lesson.py")
    at.query_params["lesson_step"] = "4"
    at.run()
    assert not at.exception and at.header[0].value == "4. Local vs central"
    links = [t for t in _texts(at) if "Try it yourself" in t]
    assert len(links) == 1 and links[0].startswith("[Try it yourself in the Local vs central view →](/local_central?")
    assert not any("Local Central" in t for t in _texts(at))


# -- Local vs central --------------------------------------------------------------------------

def test_local_vs_central_titles_its_chart_and_shows_every_row(monkeypatch):
    """The chart says what it plots (test accuracy against local ε, at the central target) and
    the table is as tall as its rows: a header and 35 px a row, no scroll box hiding mechanisms."""
    heights = []
    dataframe = st.dataframe

    def spy(data=None, *args, **kwargs):  # the height the page asks for, then the real table
        heights.append((len(data), kwargs.get("height")))
        return dataframe(data, *args, **kwargs)

    monkeypatch.setattr(st, "dataframe", spy)
    at = _page("local_central.py")
    at.query_params["lc_T"] = "10"
    at.query_params["lc_R"] = "1"
    at.run()
    at.button(key="lc_run").click().run()
    assert not at.exception and not at.error
    ((rows, height),) = heights[-1:]
    assert rows == len(at.dataframe[0].value) >= 10
    assert isinstance(height, int) and height >= 38 + 35 * rows, (rows, height)
    shown = [t for t in _texts(at) if "Test accuracy against local ε, at central ε = 1" in t]
    title = _spec(at)["layout"].get("title", {}).get("text", "")
    assert shown or "Test accuracy against local ε" in title, (shown, title)
