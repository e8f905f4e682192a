"""Streamlit pages, exercised with AppTest."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def _page(name: str) -> AppTest:
    return AppTest.from_file(str(ROOT / "pages" / name), default_timeout=60)


def test_app_entry_point_runs():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value.startswith("Differentially private ERM")


def test_datasets_page_lists_every_dataset_and_details():
    at = _page("datasets.py").run()
    assert not at.exception
    ids = list(at.dataframe[0].value["id"])
    from dpcore.datasets import DATASETS

    assert ids == list(DATASETS)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["training rows n"] == "36,177"
    at.selectbox(key="dataset").set_value("breast-cancer").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["training rows n"] == "546"
    assert metrics["features d"] == "10"
    assert not at.error
