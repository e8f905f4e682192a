"""A lecturer's walk (issue 68), M5: where a skew u is shown, the skew the clients' whole-record sizes
really have (n_max / n_min) is shown beside the asked one when they differ (:func:`dpcore.figures.result.skew_words`),
and Distributed's sweep draws each point at the realised u, the asked one in its hover and CSV."""

import json
from pathlib import Path
from urllib.parse import parse_qsl

from streamlit.testing.v1 import AppTest

from dpcore.figures.result import realised_skew_rows, skew_words, split_skew_words
from dpcore.partition import client_sizes

ROOT = Path(__file__).resolve().parent.parent
WORDS_32 = "u = 32 asked; the clients' whole-record sizes give u = 54 (n_max 54 / n_min 1)"


def _page(name: str, link: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / name), default_timeout=600)
    at.query_params.update(dict(parse_qsl(link)))
    return at.run()


def test_the_words_name_the_realised_skew_only_where_it_differs():
    assert skew_words(32, client_sizes(546, 20, 32)) == WORDS_32
    assert skew_words(16, client_sizes(546, 20, 16)).startswith("u = 16 asked; the clients' whole-record sizes "
                                                                 "give u = 17.3 (n_max 52 / n_min 3)")
    assert skew_words(4, client_sizes(546, 4, 4)) is None  # 219 / 54 = 4.06: rounding, not another skew
    assert split_skew_words(546, 20, 32) == WORDS_32
    assert split_skew_words(120, 20, 32) is None  # refused: the widget says why


def test_distributed_shows_the_realised_skew_in_its_warning_chart_and_csv():
    at = _page("distributed.py", "dist_dataset=breast-cancer&dist_m=20&dist_u=32&dist_epsilon=0.1&dist_T=10"
                                 "&dist_R=1&dist_shown=true")
    assert not at.exception
    assert any(w.value.startswith(WORDS_32) for w in at.warning), [w.value for w in at.warning]
    rows = [r for r in at.session_state["dist_curve"]["rows"] if "error" not in r]
    table = realised_skew_rows(rows)  # the CSV's rows
    at32 = [r for r in table if r["skew_asked"] == 32 and r["mechanism"] == "distributed-wddp"]
    assert at32 and at32[0]["skew"] == 54 and at32[0]["skew_note"] == WORDS_32
    central = [r for r in table if r["skew_asked"] == 32 and r["mechanism"] == "gradient-dpgd"]
    assert central and central[0]["skew"] == 54  # drawn with its federation's points
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert chart["layout"]["xaxis"]["title"]["text"].startswith("u = n_max / n_min of the clients' sizes")
    points = [(x, h) for t in chart["data"] if t.get("name") == "WD-DP" for x, h in zip(t["x"], t["hovertext"])]
    assert any(x == 54 and WORDS_32 in h for x, h in points), points
    assert not any(x == 32 for x, _ in points)


def test_explore_and_compare_name_the_realised_skew():
    at = _page("explore.py", "ex_dataset=breast-cancer&ex_model=logreg&ex_mechanism=distributed-wddp&ex_m=20"
                             "&ex_u=32&ex_epsilon=0.1&ex_T=10&ex_R=1")
    assert not at.exception
    assert any(w.value.startswith(WORDS_32) for w in at.warning), [w.value for w in at.warning]
    at = _page("compare.py", "cmp_dataset=breast-cancer&cmp_model=logreg&cmp_mechs=distributed-wddp&cmp_clients=20"
                             "&cmp_skew=32&cmp_eps=0.1&cmp_T=10&cmp_R=1&cmp_tuned=false")
    assert not at.exception
    assert any(w.value.startswith(WORDS_32) for w in at.warning), [w.value for w in at.warning]
