"""Noise plans written by the command line and read back (issue 46): ``run --plan-out``, ``tune
--plan-out`` and a sweep's ``<id>-plans.json`` hold dp-accounting events; ``certify --plan``
certifies the plan a file holds afresh (by this package's accountant and by dp-accounting's
``PLDAccountant`` under ``REPLACE_ONE``), never trusting the figure the file states."""

from __future__ import annotations

import math
import json
from pathlib import Path

import dp_accounting as dpa
import pytest

from dpcore.privacy import core as P
from clirun import run_cli  # tests/clirun.py

ROOT = Path(__file__).resolve().parent.parent


_cli = run_cli  # tests/clirun.py


@pytest.fixture(scope="module")
def dpsgd_run(tmp_path_factory):
    """A DP-SGD run on Breast Cancer, its JSON record and its exported plan."""
    path = tmp_path_factory.mktemp("plans") / "run.json"
    code, out, err = _cli("run", "--dataset", "breast-cancer", "--mechanism", "gradient-dpsgd", "--epsilon", "1",
                          "--delta", "1e-6", "-T", "200", "-R", "1", "--json", "--plan-out", str(path))
    assert code == 0, err
    return json.loads(out), path


def test_a_run_plan_reads_back_to_the_run_s_certificate_and_dp_accounting_agrees(dpsgd_run):
    rec, path = dpsgd_run
    doc = json.loads(path.read_text())
    assert doc["format"] == P.DP_EVENTS_LIST_FORMAT and len(doc["documents"]) == 1
    assert doc["documents"][0]["label"].startswith("gradient-dpsgd on breast-cancer (logreg), ε = 1, δ = 1e-06")
    code, out, err = _cli("certify", "--plan", str(path), "--json")
    assert code == 0, err
    cert = json.loads(out)
    assert cert["epsilon"] == rec["epsilon_certified"] and cert["delta"] == 1e-6
    assert cert["notes"] == [] and cert["neighbouring"] == "replace-one"
    # the second route: dp-accounting's own PLD accountant on the event the file holds
    accountant = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-4)
    accountant.compose(P.event_from_json(doc["documents"][0]["event"]))
    assert accountant.get_epsilon(1e-6) == pytest.approx(rec["epsilon_certified"], rel=1e-3)
    assert cert["dp_accounting"] == pytest.approx(rec["epsilon_certified"], rel=1e-3)
    # at another δ: the plan's ε there, and the curve holds the run's δ
    code, out, _ = _cli("certify", "--plan", str(path), "--delta", "1e-3", "--json")
    assert code == 0 and json.loads(out)["epsilon"] < rec["epsilon_certified"]


def test_a_forged_plan_file_is_certified_from_its_plan_never_its_stated_figure(dpsgd_run, tmp_path):
    _, path = dpsgd_run
    doc = json.loads(path.read_text())
    one = doc["documents"][0]
    one["plan"]["releases"][0]["noise"] /= 2  # half the noise the run drew, the stated ε kept
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(one))
    code, out, err = _cli("certify", "--plan", str(forged), "--json")
    assert code == 0, err
    cert = json.loads(out)
    assert cert["epsilon"] > 2 * one["certified"]["epsilon"]  # half the noise: far more than stated
    assert any("states ε" in n for n in cert["notes"]) and any("event is not its plan" in n for n in cert["notes"])
    # dp-accounting composes the plan's event, not the (unchanged) one the file states
    assert cert["dp_accounting"] == pytest.approx(cert["epsilon"], rel=1e-3)


def test_a_tuning_exports_its_whole_search(tmp_path):
    path = tmp_path / "tune.json"
    code, out, err = _cli("tune", "--dataset", "breast-cancer", "--mechanisms", "output-gaussian", "--epsilons", "1",
                          "--final-repeats", "1", "--json", "--plan-out", str(path))
    assert code == 0, err
    row = json.loads(out)["rows"][0]
    code, out, err = _cli("certify", "--plan", str(path), "--json")
    assert code == 0, err
    cert = json.loads(out)
    assert cert["delta"] == row["delta_spent"] and cert["epsilon"] == pytest.approx(row["epsilon_spent"], rel=1e-12)
    assert cert["epsilon"] > 1.0  # the search costs more than the released run's target
    # the private choice is a published theorem and the final run any one of the candidates: said, not composed
    assert cert["dp_accounting"] is None and "EpsilonDeltaDpEvent" in cert["unsupported"]


@pytest.mark.parametrize("content, said", [
    (None, "cannot be read"),
    ("not json", "is not JSON"),
    ("[1, 2]", "holds no JSON object"),
    ('{"format": "something else"}', "not a dpcore.dp-events document"),
    ('{"format": "dpcore.dp-events", "version": 99}', "version 99"),
    ('{"format": "dpcore.dp-events-list", "version": 1, "documents": []}', "holds no documents"),
    ('{"format": "dpcore.dp-events", "version": 1, "plan": {"releases": [{"kind": 3}]}}', "not a valid"),
], ids=["missing", "text", "list", "other-format", "newer", "empty-list", "malformed"])
def test_a_file_that_is_not_a_plan_is_one_line(tmp_path, content, said):
    path = tmp_path / "plan.json"
    if content is not None:
        path.write_text(content)
    code, out, err = _cli("certify", "--plan", str(path))
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and "Traceback" not in err, err
    assert said in lines[0], lines[0]


def test_plan_and_a_description_together_are_refused(dpsgd_run):
    _, path = dpsgd_run
    code, _, err = _cli("certify", "--plan", str(path), "--noise-multiplier", "1")
    assert code == 2 and "drop --noise-multiplier" in err
    code, _, err = _cli("certify", "--plan", str(path), "--accountant", "opacus-prv")
    assert code == 2 and "drop --accountant" in err


@pytest.mark.parametrize("mechanism", ["distributed-avg", "distributed-wddp"])
def test_a_distributed_run_s_plan_is_its_clients_in_parallel_never_their_composition(mechanism, tmp_path):
    """The clients hold disjoint records: the worst client counts.  dp-accounting has no parallel
    composition, so the event names the parts (DisjointPartsDpEvent) and certify composes each
    part there and takes the worst; composing all of them would overstate ε (2.16 here, not 1)."""
    path = tmp_path / "plan.json"
    code, out, err = _cli("run", "--dataset", "breast-cancer", "--mechanism", mechanism, "--clients", "4",
                          "--epsilon", "1", "-R", "1", "--json", "--plan-out", str(path))
    assert code == 0, err
    rec = json.loads(out)
    doc = json.loads(path.read_text())["documents"][0]
    assert doc["event"]["type"] == "DisjointPartsDpEvent" and len(doc["event"]["events"]) == 4
    assert doc["dp_accounting_supported"] is False
    plan = P.NoisePlan.from_dp_events(doc)
    assert P.event_from_json(doc["event"]) == plan.event() and len(plan.parts) == 4
    code, out, err = _cli("certify", "--plan", str(path), "--json")
    cert = json.loads(out)
    assert cert["epsilon"] == rec["epsilon_certified"] <= 1.0
    worst = 0.0
    for part in doc["event"]["events"]:  # the second route, written here: each client in dp-accounting
        accountant = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-4)
        accountant.compose(P.event_from_json(part))
        worst = max(worst, accountant.get_epsilon(1e-5))
    assert cert["dp_accounting"] == pytest.approx(worst, rel=1e-9)
    assert worst == pytest.approx(rec["epsilon_certified"], rel=1e-3)
    everything = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-4)
    everything.compose(dpa.ComposedDpEvent([P.event_from_json(e) for e in doc["event"]["events"]]))
    assert everything.get_epsilon(1e-5) > 1.5 * worst  # what the old export let dp-accounting compute


def _every_mechanism():
    from dpcore.mechanisms import REGISTRY

    return sorted(REGISTRY)


@pytest.mark.parametrize("mechanism", _every_mechanism())
def test_every_registered_mechanism_s_run_exports_its_plan_and_reads_back_to_its_certificate(mechanism):
    """The plan a run carries (known before training or, for the clients' split, by training),
    through the file format and back: the same plan, the same certified ε as the run's (∞ for a
    plan with no guarantee: non-private, the heuristics)."""
    from dpcore.experiments.run import RunSpec, run
    from dpcore.mechanisms import REGISTRY

    cls = REGISTRY[mechanism]
    model = "logreg" if "logreg" in cls.models else cls.models[0]
    data = {"dataset": "breast-cancer"} if model != "linreg" else {"dataset": "synthetic-regression", "n": 400, "d": 4}
    calibration = "certified" if "certified" in cls.calibrations else cls.calibrations[0]
    spec = RunSpec(mechanism=mechanism, model=model, calibration=calibration, epsilon=1.0, delta=1e-6,
                   iterations=5, repeats=1, **data)
    result = run(spec)
    doc = json.loads(json.dumps(P.dp_events_list([(spec.label(), result.plan, spec.delta)])))["documents"][0]
    back = P.NoisePlan.from_dp_events(doc)
    assert back == result.plan
    certified = math.inf if result.epsilon_certified is None else result.epsilon_certified
    assert P.certify(back, spec.delta) == certified
    assert (doc["certified"]["epsilon"] is None) == (not math.isfinite(certified))


def _shipped_row(table, config):
    """The shipped table's row of a configuration (task keys also hash the code: match by settings;
    d and noise are also result columns, the data's width and the noise drawn)."""
    rows = table
    for name, value in config.to_dict().items():
        if name in rows.columns and not isinstance(value, (dict, list, tuple)) and name not in ("d", "noise"):
            rows = rows[rows[name].isna()] if value is None else rows[rows[name] == value]
    assert len(rows) == 1, config
    return rows.iloc[0]


def _shipped_tables():
    from dpcore.experiments.presets import PRESETS
    from dpcore.shipped import folder_of

    shipped_results_dir = folder_of("results")

    return [p.stem for p in sorted(shipped_results_dir.glob("*.csv")) if p.stem.removesuffix("-published") in PRESETS]


@pytest.mark.parametrize("stem", _shipped_tables())
def test_a_shipped_table_s_certificates_are_its_tasks_plans(stem):
    """For each mechanism of each shipped table, the task at its smallest ε (where a calibration is
    most sensitive): the plan a sweep exports for it today certifies exactly the ε the table records
    (∞ as no figure).  tests/test_shipped.py recomputes one whole row per file; this reads one
    certificate per mechanism, so a changed calibration cannot hide in a row it does not pick."""
    import pandas as pd

    from dpcore.experiments.presets import get_preset, task_plans
    from dpcore.shipped import folder_of

    shipped_results_dir = folder_of("results")

    calibration = "published" if stem.endswith("-published") else None
    tasks = get_preset(stem.removesuffix("-published")).tasks(calibration=calibration)
    table = pd.read_csv(shipped_results_dir / f"{stem}.csv").drop_duplicates("task")
    first = {}
    for t in sorted(tasks, key=lambda t: t.config.epsilon):
        first.setdefault((t.config.mechanism, t.config.dataset, t.config.model), t)
    picked = list(first.values())
    by_key = {t.key: t.config for t in picked}
    doc = json.loads(json.dumps(task_plans(picked)))
    assert len(doc["documents"]) + len(doc["omitted"]) == len(picked)
    for entry in doc["documents"]:
        config = by_key[entry["label"].split(":")[0]]
        shipped = _shipped_row(table, config)["epsilon_certified"]
        mine = entry["certified"]["epsilon"]
        assert (math.isinf(shipped) or pd.isna(shipped)) if mine is None else shipped == mine, entry["label"]
    for entry in doc["omitted"]:  # named, with the reason (a run of it writes its plan)
        config = by_key[entry["label"].split(":")[0]]
        assert ("adds no noise" in entry["reason"]) == (config.mechanism == "non-private"), entry
        assert "adds no noise" in entry["reason"] or "`run --plan-out` writes it" in entry["reason"]
