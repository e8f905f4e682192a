"""Bad input of every kind: a clear one-line error, never a traceback, a hang or a silent wrong
answer — on the command line, in the loaders, in the ERM cache and in the app's links.

Every command-line case runs in-process under a time limit; a case that needs longer fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hostile import time_limit  # tests/hostile.py
import streamlit as st
from streamlit.testing.v1 import AppTest

from dpcore import datasets, erm
from dpcore.cli.commands import main
from dpcore.exceptions import DatasetError
from dpcore.models import make_model
from pages.common import CACHE_DIR

ROOT = Path(__file__).resolve().parent.parent
BC = ["--dataset", "breast-cancer"]


# (arguments, a fragment of the one-line message)
BAD_CLI = [
    # exit 1 ("internal error") before
    (["run", *BC, "--mechanism", "gradient-dpgd", "--epsilon", "1e308"], "'epsilon' parameter"),
    (["run", *BC, "--mechanism", "gradient-lssgd", "--option", "smoothing=abc"], "'smoothing' parameter"),
    (["run", *BC, "--mechanism", "input-kang", "--option", "sigma=NaN"], "'sigma' parameter"),
    (["run", *BC, "--mechanism", "input-kang", "--option", "sigma=x"], "'sigma' parameter"),
    (["run", *BC, "--mechanism", "input-kang", "--option", "sigma=1e-9"], "'sigma' parameter"),
    (["run", *BC, "--mechanism", "input-dbdp-if", "--calibration", "published", "--option", "label_epsilon=-1"],
     "'label_epsilon' parameter"),
    (["run", *BC, "--mechanism", "input-dbdp-if", "--calibration", "published", "--option", "t_local=0"],
     "'t_local' parameter"),
    (["run", *BC, "--mechanism", "input-kang", "--option", 'sigma={"a": 1}'], "'sigma' parameter"),
    (["run", *BC, "--mechanism", "gradient-dpsgd", "--calibration", "published", "--c", "1e300"], "'c' parameter"),
    (["run", "--dataset", "adult", "-R", "100000"], "GiB of memory"),
    (["sweep", "--preset", "003-fig2", "--out", "{tmp}", "--scheduler", "not-a-url"], "--scheduler needs"),
    # a hang before
    (["run", *BC, "--mechanism", "input-fukuchi", "--option", "radius=-5"], "'radius' parameter"),
    (["run", "--dataset", "adult", "--mechanism", "gradient-dpgd", "-T", "1000000"], "operations"),
    # exit 0 on nonsense before
    (["run", *BC, "--mechanism", "gradient-dpgd", "--d", "5"], "--d applies to the synthetic"),
    (["run", *BC, "--mechanism", "gradient-dpgd", "--noise", "0.1"], "--noise applies to the synthetic"),
    (["run", *BC, "--mechanism", "gradient-dpgd", "--clients", "3"], "--clients does not apply"),
    (["run", *BC, "--mechanism", "gradient-dpgd", "--skew", "2"], "--skew does not apply"),
    (["run", *BC, "--mechanism", "gradient-dpgd", "--batch", "5"], "--batch does not apply"),
    (["run", *BC, "--mechanism", "gradient-dpgd", "--label-epsilon", "0.5"], "unknown option 'label_epsilon'"),
    (["run", *BC, "--mechanism", "gradient-dpgd", "--c", "2"], "--calibration published"),
    (["run", *BC, "--mechanism", "gradient-dpgd", "--option", "foo=1"], "unknown option 'foo'"),
    (["run", *BC, "--mechanism", "gradient-lssgd", "--option", "smoothing=-0.25"], "'smoothing' parameter"),
    (["run", *BC, "--mechanism", "input-kang", "--option", "sigma=-1"], "'sigma' parameter"),
    (["run", *BC, "--mechanism", "input-dbdp-if", "--calibration", "published", "--option", "w_min=-1"],
     "'w_min' parameter"),
    (["tradeoff", *BC, "--model", "linreg"], "classification"),
    (["sweep", "--preset", "003-fig2", "--out", "{tmp}", "--quick", "--set", "partition=bogus"],
     "partition applies to the distributed presets"),
    (["sweep", "--preset", "004-fig1", "--out", "{tmp}", "--quick", "--set", "partition=bogus"],
     "'partition' parameter"),
    # a setting the preset does not read is refused, never ignored
    (["sweep", "--preset", "002-appendix", "--out", "{tmp}", "--quick", "--set", "ns=1000"],
     "--set ns applies to the presets that plot against n"),
    (["sweep", "--preset", "002-appendix", "--out", "{tmp}", "--quick", "--set", "clients=4"],
     "--set clients applies to presets with a distributed mechanism"),
    # and the classics
    (["run", "--dataset", "nope"], "unknown dataset"),
    (["run", *BC, "--mechanism", "nope"], "unknown mechanism"),
    (["run", *BC, "--epsilon", "0"], "'epsilon' parameter"),
    (["run", *BC, "--delta", "1"], "'delta' parameter"),
    (["run", *BC, "-T", "0"], "'iterations' parameter"),
    # argparse turned a lone "--" value into an empty list (exit 1, found by the fuzz suite in CI)
    (["audit", *BC, "--mechanism", "gradient-dpgd", "--dataset=--"], "--dataset: expected one value"),
    (["run", *BC, "--epsilon=--"], "--epsilon: expected one value"),
    (["audit", *BC, "--mechanism", "input-fukuchi", "--threat", "white-box", "--trials", "10"],
     "no white-box audit"),
]


@pytest.mark.parametrize("argv, message", BAD_CLI, ids=[" ".join(a)[:60] for a, _ in BAD_CLI])
def test_bad_command_line_input_gets_exit_2_and_one_line(argv, message, capsys, tmp_path):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    with time_limit(60):
        code = main(argv)
    out = capsys.readouterr()
    lines = [ln for ln in out.err.strip().splitlines() if not ln.startswith("[")]  # progress lines
    assert code == 2, (code, out.err)
    assert out.out == "" and len(lines) == 1 and message in lines[0], lines
    assert "Traceback" not in out.err and len(lines[0]) < 400


GOOD_JSON = [
    ["run", *BC, "--mechanism", "input-dbdp-if", "--calibration", "published", "-T", "20", "--json"],
    ["run", *BC, "--mechanism", "local-duchi", "--epsilon", "1000", "--json"],
    ["run", *BC, "--mechanism", "gradient-dpsgd", "--epsilon", "1e-4", "-T", "10", "--json"],
    ["run", *BC, "--mechanism", "distributed-wddp", "--clients", "3", "--skew", "2", "--option", "split=stratified",
     "--json"],
    ["audit", *BC, "--mechanism", "non-private", "--trials", "20", "--json"],
]


def _strict(text: str):
    def refuse(token):
        raise ValueError(f"non-strict JSON token {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("argv", GOOD_JSON, ids=[" ".join(a)[:60] for a in GOOD_JSON])
def test_extreme_but_valid_input_runs_and_prints_strict_json(argv, capsys):
    with time_limit(120):
        assert main(argv) == 0
    rec = _strict(capsys.readouterr().out)
    assert isinstance(rec, dict)


# -- loaders ------------------------------------------------------------------------------------

BAD_CSV = [
    ("a,b,label\n1,2,yes\ninf,3,no\n4,5,yes\n6,7,no\n", "classification", "column 'a', row 2: inf"),
    ("a,label\n" + "1" * 400 + ",yes\n2,no\n3,yes\n4,no\n", "classification", "400 characters"),
    ("a,y\n1,1e308\n2,3\n3,4\n4,5\n", "regression", "row 1: '1e308'"),  # the label as written
    ("a,y\n1,inf\n2,3\n3,4\n4,5\n", "regression", "row 1: 'inf'"),
    ("a,y\n1,-inf\n2,3\n3,4\n4,5\n", "regression", "row 1: '-inf'"),
    ("a,label\n" + "x" * 2_000_000 + ",yes\nb,no\nc,yes\nd,no\n", "classification", "2,000,000 characters"),
    ("a,label\n1,yes\n2,yes\n", "classification", "only one class"),
    ("", "classification", "empty"),
]


@pytest.mark.parametrize("text, task, message", BAD_CSV, ids=[m for *_, m in BAD_CSV])
def test_bad_uploads_are_refused_with_the_row_and_column(text, task, message):
    label = "y" if task == "regression" else "label"
    with pytest.raises(DatasetError) as info:
        datasets.from_csv(text.encode(), label, None if task == "regression" else "yes", task=task)
    assert message in str(info.value) and len(str(info.value)) < 300


def test_an_upload_too_wide_to_encode_is_refused_before_it_is_built():
    """20,000 rows × 40 text columns of 999 values each (every column under the 1,000-category
    limit) would be a 6 GB one-hot matrix; it is refused from the column counts alone."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"c{j}": np.char.add("v", rng.integers(0, 999, 20000).astype(str)) for j in range(40)})
    df["label"] = rng.integers(0, 2, 20000)
    with time_limit(20), pytest.raises(DatasetError, match="one-hot encoding would give 39,961 columns"):
        datasets.from_dataframe(df, "label", 1)


# -- the ERM cache ------------------------------------------------------------------------------


def test_a_damaged_erm_cache_is_discarded_and_solved_again(tmp_path, caplog):
    erm_cache = tmp_path / "erm"
    store = erm.ReferenceStore(erm_cache)
    ds, model = datasets.load("breast-cancer"), make_model("logreg")
    good = store.exact(ds, model)
    path = next(erm_cache.glob("erm-*.json"))
    rec = json.loads(path.read_text())
    damaged = [[], None, "x", {**rec, "theta": rec["theta"][:-1]}, {**rec, "loss": "x"}, {**rec, "loss": -5},
               {**rec, "loss": float("nan")}, {**rec, "theta": [0.0] * len(rec["theta"])},
               {**rec, "method": 3}, {k: v for k, v in rec.items() if k != "grad_norm"}]
    for bad in damaged:
        path.write_text(json.dumps(bad))
        store.clear()
        sol = store.exact(ds, model)
        assert np.array_equal(sol.theta, good.theta) and sol.loss == good.loss, bad
    assert sum("discarding the cached ERM solution" in r.message for r in caplog.records) == len(damaged)
    path.write_text("{not json")
    store.clear()
    assert store.exact(ds, model).loss == good.loss


# -- the app's links ----------------------------------------------------------------------------


def _page(name: str) -> AppTest:
    return AppTest.from_file(str(ROOT / "pages" / name), default_timeout=120)


@pytest.mark.parametrize("key, value, said, used", [
    ("ex_epsilon", "-1", "ε (privacy budget) = -1", "0.01"),
    ("ex_epsilon", "inf", "= inf", "10"),
    ("ex_epsilon", "nan", "= nan", "1"),
    ("ex_T", "10000000", "iterations T = 10000000", None),
    ("ex_epsilon", "abc", "is not a number", None),
    ("ex_dataset", "upload:mine", "uploaded in another session", None),
    ("ex_dataset", "no-such-data", "dataset = no-such-data", None),
])
def test_a_tampered_link_says_what_it_changed(key, value, said, used):
    at = _page("explore.py")
    at.query_params[key] = value
    at.run()
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert said in warnings, warnings
    if used is not None:
        assert f"using {used}" in warnings


def test_a_huge_epsilon_grid_value_in_compare_is_an_error_not_a_traceback():
    at = _page("compare.py")
    at.query_params["cmp_eps"] = "1e308"
    at.run()
    assert not at.exception and any("'epsilon' parameter" in e.value for e in at.error)
    at.text_input(key="cmp_eps").set_value(", ".join(str(0.01 * k) for k in range(1, 80))).run()
    assert not at.exception and any("at most 50" in e.value for e in at.error)


@pytest.mark.parametrize("content", ["[]", "null", '{"theta": "x"}', "{broken"])
def test_explore_survives_a_damaged_erm_cache(content):
    """Valid JSON of the wrong structure used to crash Explore's default view on every load."""
    at = _page("explore.py").run()
    assert not at.exception
    folder = CACHE_DIR / "erm"
    files = list(folder.glob("erm-*.json"))
    assert files, "Explore keeps its exact solutions on disk"
    for f in files:
        f.write_text(content)
    st.cache_resource.clear()  # a new app context: nothing held in memory
    st.cache_data.clear()
    at = _page("explore.py").run()
    assert not at.exception and not at.error
    assert any(m.label == "ε certified" for m in at.metric)


def _wide_csv() -> bytes:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"c{j}": np.char.add("v", rng.integers(0, 999, 20000).astype(str)) for j in range(40)})
    df["label"] = np.where(rng.integers(0, 2, 20000) == 1, "yes", "no")
    return df.to_csv(index=False).encode()


@pytest.mark.parametrize("content, message", [
    (b"a,b,label\n1,2,yes\ninf,3,no\n4,5,yes\n6,7,no\n", "column 'a', row 2: inf"),
    (b"a,label\n" + b"x" * 100_000 + b",yes\nb,no\nc,yes\nd,no\n", "100,000 characters"),
    (_wide_csv(), "one-hot encoding would give"),
    (b"\x00\x01\x02 not a csv", "CSV"),
])
def test_bad_uploads_in_the_app_show_an_error_and_nothing_breaks(content, message):
    at = _page("datasets.py").run()
    at.file_uploader(key="upload_file").set_value(("mine.csv", content, "text/csv")).run()
    assert not at.exception
    if any(message in e.value for e in at.error):
        return  # refused while reading the header
    at.button(key="upload_add").click().run()
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert "mine" not in at.session_state["user_datasets"] if "user_datasets" in at.session_state else True


def test_a_second_upload_with_the_same_name_does_not_replace_the_first():
    rows = "".join(f"{i},{i % 3},{'p' if i % 2 else 'q'}\n" for i in range(60))
    at = _page("datasets.py").run()
    at.file_uploader(key="upload_file").set_value(("mine.csv", ("a,b,y\n" + rows).encode(), "text/csv")).run()
    at.button(key="upload_add").click().run()
    assert not at.exception and at.session_state["user_datasets"]["mine"].n > 0
    first = at.session_state["user_datasets"]["mine"]
    at.button(key="upload_add").click().run()
    assert any("already has a dataset named 'mine'" in e.value for e in at.error)
    assert at.session_state["user_datasets"]["mine"] is first


def _choice_links():
    """(page, key) for every choice widget (pages.common.choice and the model picker) whose key a
    link can set: read from the pages themselves, so a new choice widget is tested too."""
    import re
    out = []
    for path in sorted((ROOT / "pages").glob("*.py")):
        text = path.read_text()
        m = re.search(r"URL_KEYS = (\{.*?\})\n", text, re.S)
        if not m:
            continue
        keys = set(re.findall(r"['\"](\w+)['\"]\s*:", m.group(1)))
        chosen = set(re.findall(r"choice\(\s*\"\w+\".*?key=\"(\w+)\"", text, re.S))
        chosen |= set(re.findall(r"model_picker\([^)]*?\"(\w+)\"", text))
        out += [(path.name, k) for k in sorted(keys & chosen)]
    return out


CHOICE_LINKS = _choice_links()


def test_the_choice_links_are_found():
    assert len(CHOICE_LINKS) >= 10 and ("explore.py", "ex_mechanism") in CHOICE_LINKS


@pytest.mark.parametrize("page, key", CHOICE_LINKS)
def test_an_unknown_choice_in_a_link_is_replaced_and_said(page, key):
    at = _page(page)
    at.query_params[key] = "no-such-choice"
    at.run()
    assert not at.exception
    said = [w.value for w in at.warning if "no-such-choice" in w.value and "using" in w.value]
    assert said, f"{page}: the link's {key} was replaced without a word"


def test_the_core_refuses_two_settings_that_set_one_thing_two_ways():
    """Issue 43: DP-SGD given a batch size and a sampling rate ran on the rate and recorded the
    batch; the command line refused the pair, the core took it.  Now the core refuses every pair
    of dpcore.params.CONFLICTS that a RunSpec holds, and the estimators with it."""
    import numpy as np

    from dpcore import RunSpec
    from dpcore.estimators import DPLogisticRegression
    from dpcore.exceptions import ParameterError

    with pytest.raises(ParameterError, match="'batch_size' and 'sample_rate' cannot be given together"):
        RunSpec(dataset="iris", mechanism="gradient-dpsgd", batch_size=10, sample_rate=0.5)
    RunSpec(dataset="iris", mechanism="gradient-dpsgd", batch_size=10)  # one of them is fine
    with pytest.raises(ParameterError, match="cannot be given together"):
        DPLogisticRegression(mechanism="gradient-dpsgd", batch_size=10, sample_rate=0.1).fit(
            np.random.default_rng(0).random((40, 3)), np.arange(40) % 2)
