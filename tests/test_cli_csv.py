"""A user's own CSV on the command line (issue 46): ``run``, ``tune`` and ``audit`` take ``--csv PATH
--label COLUMN`` (and the upload's other choices: ``--positive-class``, ``--task``, ``--name``)
through the app's reader, :func:`dpcore.datasets.from_csv`, with its validation and its limits;
the data never reach a cache; a CSV flag without ``--csv`` (or ``--csv`` without its label, or a
flag that only a registered dataset has) is one line, exit 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.cli import common as cli_common  # where --csv is read (dpcore.cli.common.user_data)
from clirun import run_cli  # tests/clirun.py
from dpcore.datasets import from_csv
from dpcore.datasets.upload import MAX_UPLOAD_BYTES
from dpcore.experiments.run import RunSpec, run

ROOT = Path(__file__).resolve().parent.parent


_cli = run_cli  # tests/clirun.py


@pytest.fixture(scope="module")
def own_csv(tmp_path_factory) -> Path:
    """400 rows: three numbers, a colour and a yes/no label a linear rule mostly decides."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 3))
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["colour"] = rng.choice(["red", "blue"], 400)
    df["y"] = np.where(X @ [1.0, -1.0, 0.5] + 0.3 * rng.normal(size=400) > 0, "yes", "no")
    path = tmp_path_factory.mktemp("csv") / "clinic.csv"
    df.to_csv(path, index=False)
    return path


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_run_on_a_csv_is_the_library_run_on_the_upload_reader(own_csv, tmp_path, monkeypatch):
    monkeypatch.setenv("DPCORE_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = _cli("run", "--csv", str(own_csv), "--label", "y", "--positive-class", "yes",
                          "--mechanism", "gradient-dpgd", "--epsilon", "1", "-R", "3", "--json")
    assert code == 0, err
    rec = json.loads(out)
    ds = from_csv(own_csv.read_bytes(), "y", "yes", name="clinic", id="csv:clinic")
    want = run(RunSpec(dataset=ds.id, mechanism="gradient-dpgd", epsilon=1.0, repeats=3), dataset=ds).to_dict()
    assert rec["dataset_name"] == "clinic" and rec["n_train"] == ds.n == 320
    assert rec["runs"] == json.loads(json.dumps(want["runs"]))
    assert rec["epsilon_certified"] == want["epsilon_certified"] <= 1.0
    assert _files(tmp_path) == []  # nothing of the user's data (nor its exact solution) was kept


def test_tune_and_audit_on_a_csv(own_csv, tmp_path, monkeypatch):
    monkeypatch.setenv("DPCORE_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = _cli("tune", "--csv", str(own_csv), "--label", "y", "--name", "my clinic", "--mechanisms",
                          "output-gaussian", "--epsilons", "1", "--final-repeats", "2", "--json")
    assert code == 0, err
    rec = json.loads(out)
    assert rec["dataset"] == "csv:my clinic" and rec["n_train"] == 320 and rec["rows"][0]["test_accuracy"] > 0.6
    code, out, err = _cli("audit", "--csv", str(own_csv), "--label", "y", "--mechanism", "gradient-dpgd",
                          "--trials", "20", "--threat", "white-box", "--json")
    assert code == 0, err
    assert json.loads(out)["epsilon_certified"] <= 1.0
    assert _files(tmp_path) == []


@pytest.mark.parametrize("argv, said", [
    (["--csv", "{csv}"], "--csv needs --label COLUMN"),
    (["--dataset", "breast-cancer", "--label", "y"], "--label describes a CSV file: add --csv PATH"),
    (["--dataset", "breast-cancer", "--task", "regression"], "--task describes a CSV file"),
    (["--csv", "/nonexistent/x.csv", "--label", "y"], "cannot be read"),
    (["--csv", "{dir}", "--label", "y"], "cannot be read"),
    (["--csv", "{csv}", "--label", "nope"], "nope"),
    (["--csv", "{csv}", "--label", "y", "--positive-class", "maybe"], "positive class 'maybe' does not occur"),
    (["--csv", "{csv}", "--label", "y", "--d", "3"], "--d applies to the registered datasets only"),
    (["--csv", "{csv}", "--label", "y", "--tuned"], "--tuned reads a tuning shipped for a registered dataset"),
    (["--csv", "{csv}", "--label", "y", "--dataset", "iris"], "not allowed with argument"),
], ids=["no-label", "label-alone", "task-alone", "missing", "folder", "unknown-label", "unknown-class",
        "synthetic-flag", "tuned", "both"])
def test_a_csv_misuse_is_one_line(own_csv, argv, said, capsys):
    argv = [a.format(csv=own_csv, dir=own_csv.parent) for a in argv]
    code, out, err = _cli("run", *argv, "--mechanism", "gradient-dpgd")
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and "Traceback" not in err, err
    assert said in lines[0], lines[0]


def test_a_csv_over_the_upload_limit_is_refused_before_it_is_parsed(own_csv, monkeypatch):
    monkeypatch.setattr(cli_common, "MAX_UPLOAD_BYTES", own_csv.stat().st_size - 1)
    monkeypatch.setattr(cli_common, "from_csv", lambda *a, **k: pytest.fail("parsed a file over the limit"))
    code, _, err = _cli("run", "--csv", str(own_csv), "--label", "y")
    assert code == 2 and "larger than" in err


def test_the_command_line_and_the_app_upload_share_one_size_limit():
    config = (ROOT / ".streamlit" / "config.toml").read_text()
    megabytes = int(re.search(r"^maxUploadSize\s*=\s*(\d+)", config, re.M).group(1))
    assert MAX_UPLOAD_BYTES == megabytes * 2**20


def test_certify_on_a_csv_trains_the_central_mechanisms_at_the_certified_epsilon(own_csv, tmp_path, monkeypatch):
    """"What would the other mechanisms reach at this guarantee": each central mechanism trained on
    the user's data at the run's replace-one ε (the relation they certify), never above it."""
    monkeypatch.setenv("DPCORE_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = _cli("certify", "--noise-multiplier", "1.1", "--sample-rate", "0.004", "--epochs", "60",
                          "--csv", str(own_csv), "--label", "y", "--json")
    assert code == 0, err
    rec = json.loads(out)
    reach = rec["mechanisms_at_this_epsilon"]
    assert reach["epsilon"] == rec["replace_one"] and reach["dataset"] == "csv:clinic"
    assert {r["mechanism"] for r in reach["rows"]} >= {"gradient-dpgd", "output-gaussian", "objective-gaussian"}
    for r in reach["rows"]:
        assert r["epsilon_certified"] <= rec["replace_one"] * (1 + 1e-9) and r["accuracy_mean"] > 0.6, r
    assert _files(tmp_path) == []
    code, _, err = _cli("certify", "--noise-multiplier", "0.001", "--sample-rate", "1", "--steps", "100000",
                        "--dataset", "iris")
    assert code == 2 and "outside the ε a mechanism here can be asked for" in err
