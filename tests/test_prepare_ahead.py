"""Prepare for class checks what the shipped tunings' searches spent in a second process while it runs the
rest (:class:`dpcore.experiments.ahead.SpentAhead`): the second process leaves only signed verification marks,
so the reader here then recomputes nothing; a file the second process refused is refused here too, with
the same one-line reason (nothing it says is trusted but a mark signed with this user's key)."""

from __future__ import annotations

import json

import pytest

from dpcore import shipped
from dpcore.experiments import search as certify_tuning
from dpcore.datasets import data_folder
from dpcore.experiments.ahead import SpentAhead
from dpcore.experiments.tune import shipped_tuning
from test_tuning_spent import REL, TWIN_ROWS, _row, _shipped_as, with_rows

CHEAP = TWIN_ROWS[:2]  # a pure and a Gaussian search: a fraction of a second each


@pytest.fixture(scope="module")
def record() -> dict:
    return json.loads((data_folder() / REL).read_text())


@pytest.mark.parametrize("forged", [False, True], ids=["as shipped", "spent forged"])
def test_the_second_process_leaves_marks_the_reader_trusts_and_nothing_else(record, tmp_path, monkeypatch, forged):
    monkeypatch.setenv("DPCORE_CACHE_DIR", str(tmp_path / "cache"))  # the second process's and this one's marks
    doc = with_rows(record, CHEAP)
    if forged:
        _row(doc, *CHEAP[1])["epsilon_spent"] = _row(doc, *CHEAP[1])["epsilon_certified"] * 1.000123
    data = _shipped_as(doc, tmp_path)
    ahead = SpentAhead(data, [("adult", "logreg")])
    assert "started in a second process" in ahead.start()
    assert ahead.wait() is (not forged)
    checked = []
    real = certify_tuning.check_tuning_spent
    monkeypatch.setattr(certify_tuning, "check_tuning_spent", lambda *a, **k: checked.append(a) or real(*a, **k))
    if forged:  # the second process marked nothing it refused: checked here again, refused with its reason
        with pytest.raises(shipped.ShippedFileError, match="but its search certifies"):
            ahead.read("adult", "logreg")
        assert checked
    else:  # every row marked there: read here without a recomputation, the figures as shipped
        said = ahead.read("adult", "logreg")
        assert said == f"what the shipped tuning's {len(CHEAP)} searches spent, adult (logreg): recomputed"
        assert checked == []
        got = shipped_tuning("adult", "logreg", data_dir=data, spent=True)
        assert [r["epsilon_spent"] for r in got["rows"]] == [r["epsilon_spent"] for r in doc["rows"]]


def test_check_of_the_check_without_the_second_process_the_reader_recomputes(record, tmp_path, monkeypatch):
    """No second process (it could not start): nothing is marked, so the reader computes every row itself."""
    monkeypatch.setenv("DPCORE_CACHE_DIR", str(tmp_path / "cache"))
    data = _shipped_as(with_rows(record, CHEAP), tmp_path)
    ahead = SpentAhead(data, [])  # no tuning to check ahead: nothing started
    ahead.start()
    assert ahead.wait() is False
    checked = []
    real = certify_tuning.check_tuning_spent
    monkeypatch.setattr(certify_tuning, "check_tuning_spent", lambda *a, **k: checked.append(a) or real(*a, **k))
    ahead.read("adult", "logreg")
    assert len(checked) == 1 + len(CHEAP)  # the released rows, then each search


@pytest.mark.parametrize("killed", [False, True], ids=["ended", "killed at once"])
def test_a_presets_results_verified_there_are_read_here_without_a_check(tmp_path, monkeypatch, killed):
    """Paper figures' first figure is verified in a second process into the app's results cache: the reader
    here then finds its mark and checks nothing (the smallest shipped preset, 002-appendix); a second
    process killed before it marked anything leaves every check to the reader."""
    from dpcore.experiments import presets
    from dpcore.experiments.ahead import ResultsAhead
    from dpcore.experiments.context import Context

    monkeypatch.setenv("DPCORE_CACHE_DIR", str(tmp_path / "cache"))
    ctx = Context(workers=1, results_dir=tmp_path / "cache" / "results", erm_dir=tmp_path / "cache" / "erm")
    ahead = ResultsAhead(ctx, ["002-appendix"])
    assert ahead.start() == "the shipped results of 002-appendix verified: started in a second process"
    if killed:
        ahead._proc.kill()
    assert ahead.wait() is (not killed)
    checked = []
    real = presets.check_table
    monkeypatch.setattr(presets, "check_table", lambda *a, **k: checked.append(1) or real(*a, **k))
    got = presets.shipped_results("002-appendix", ctx=ctx)
    assert got is not None and len(got.table)
    assert (len(checked) >= 1) is killed  # the table and its published twin, each checked here only if unmarked
