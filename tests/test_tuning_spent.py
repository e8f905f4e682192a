"""A tuning's ε spent is recomputed on reading, from its search (issue 67).

A maintainer's edit set every row's ``epsilon_spent`` of ``data/tuned/adult-logreg.json`` to its
``epsilon_certified`` × 1.000123 and listed the file's new hash in the manifest: the Tune view showed the
whole search 16× cheaper than it was.  ε spent and δ spent are a function of the search's plan (each
candidate's setting run ``repeats`` times on the validation split's training part, the private choice,
the final run of any candidate's setting), so :func:`~dpcore.experiments.tune.check_tuning` recomputes
them with :func:`~dpcore.experiments.tune.search_spent`, the function :func:`~dpcore.experiments.tune.tune`
computes them with, and refuses a figure that differs beyond the accountant's error.

Every forgery below is listed in the manifest of its data folder, as the maintainer's edit was: what
refuses it is the recomputation, never the hash.  Check of the check: with the recomputation halved
(``_searched`` returning half of ε spent), the test of the untouched file and the test of the ×1.000123
forgery both fail (the refusal no longer names the figure the search certifies).
"""

from __future__ import annotations

import copy
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from dpcore import shipped
from dpcore.datasets import data_folder
from dpcore.experiments.search import PLAN_FREE, SEARCH_SPACES, SearchPlans, one_read, plan_of, search_plan
from dpcore.experiments.run import RunSpec, noise_plan
from dpcore.privacy.core import certify
from dpcore.experiments.tune import (candidates, check_tuning, search_space, search_spent, shipped_tuning, tune,
                                     validation_split)
from dpcore import datasets as _datasets
from dpcore.experiments import search as certify_tuning
from dpcore.experiments import tune as tune_mod
from dpcore.experiments.tune import SPENT_FIELDS
from tiers import WHOLE

SOURCE = data_folder()
REL = "tuned/adult-logreg.json"


@pytest.fixture(scope="module")
def record() -> dict:
    return json.loads((SOURCE / REL).read_text())


def _row(doc: dict, mechanism: str, epsilon: float) -> dict:
    return next(r for r in doc["rows"] if r["mechanism"] == mechanism and r["epsilon"] == epsilon)


def _shipped_as(doc: dict, tmp_path: Path) -> Path:
    """A data folder holding ``doc`` as its Adult tuning, listed in its own manifest (as the commands that
    ship files list them: the forger's hash is the manifest's)."""
    data = tmp_path / "data"
    (data / "tuned").mkdir(parents=True)
    path = data / REL
    path.write_text(json.dumps(doc, indent=1) + "\n")
    assert shipped.record([path], data) == [REL]
    return data


def _refusal(doc: dict, tmp_path: Path) -> str:
    with pytest.raises(shipped.ShippedFileError) as caught:
        shipped_tuning("adult", "logreg", data_dir=_shipped_as(doc, tmp_path), spent=True)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"the shipped {REL} is refused: "), message
    return message


#: the twin's rows: one search of each kind of plan (pure, Gaussian, composed DP-GD, sampled DP-SGD), each
#: among its mechanism's cheapest to recompute (0.1–2 s on this machine; the whole file: about a minute)
TWIN_ROWS = (("output-laplace", 0.05), ("output-gaussian", 0.5), ("gradient-dpgd", 1.0), ("gradient-dpsgd", 0.2))


@WHOLE
def test_the_shipped_tuning_is_recomputed_and_passes(record, tmp_path, whole):
    # check_tuning itself, not a verification mark a former read left in the cache folder
    only = None if whole else set(TWIN_ROWS)
    assert check_tuning(copy.deepcopy(record), "adult", "logreg", spent=False) == record
    assert certify_tuning.check_tuning_spent(copy.deepcopy(record), "adult", "logreg", only=only) == record
    assert record["search"] == {"repeats": 3, "final_repeats": 20, "validation_fraction": 0.2, "seed": 0,
                                "selection_epsilon": None}
    got = shipped_tuning("adult", "logreg", data_dir=_shipped_as(record, tmp_path), spent=TWIN_ROWS)
    assert _row(got, "output-laplace", 0.05)["epsilon_spent"] == pytest.approx(0.8, abs=1e-6)
    # a row not asked for holds no spent figure: nothing unchecked is handed out
    assert not any(f in _row(got, "objective-gaussian", 1.0) for f in SPENT_FIELDS)


def _no_recomputation(monkeypatch) -> None:
    """Any recomputation of a search's cost fails the test (what a read of the settings must not do)."""
    def computed(*a, **k):
        raise AssertionError("a read of the settings recomputed a search's cost")
    for name in ("check_tuning_spent", "check_search_costs", "check_released_costs", "_searched"):
        monkeypatch.setattr(certify_tuning, name, computed)
    monkeypatch.setattr(certify_tuning, "search_spent", computed)


def test_reading_the_settings_does_not_compute_the_search_cost(record, tmp_path, monkeypatch):
    # Explore and `run --tuned` read T, η, λ, C, q: the searches' cost (about 45 s of CPU) is not theirs to pay;
    # a folder of its own and a cache folder of its own, so no former read's mark stands in for the check
    monkeypatch.setenv("DPCORE_CACHE_DIR", str(tmp_path / "cache"))
    _no_recomputation(monkeypatch)
    data = _shipped_as(record, tmp_path)
    got = shipped_tuning("adult", "logreg", data_dir=data)
    row = _row(got, "gradient-dpgd", 1.0)
    assert row["setting"] == _row(record, "gradient-dpgd", 1.0)["setting"]
    assert row["epsilon_certified"] == _row(record, "gradient-dpgd", 1.0)["epsilon_certified"]
    # what it did not check it does not hand out: no spent figure in a read of the settings
    assert not any(f in r for r in got["rows"] + got["released_rows"] for f in SPENT_FIELDS)
    assert tune_mod.tuned_setting("adult", "logreg", "gradient-dpgd", 1.0, data_dir=data) == (row["setting"], 1.0)
    # the read's certificates are still checked: a forged certified ε is refused without the search's cost
    forged = copy.deepcopy(record)
    _row(forged, "gradient-dpgd", 1.0)["epsilon_certified"] *= 0.5
    with pytest.raises(shipped.ShippedFileError, match="certified ε"):
        shipped_tuning("adult", "logreg", data_dir=_shipped_as(forged, tmp_path / "forged"))


def with_rows(doc: dict, keep) -> dict:
    """``doc`` with only the searches ``keep`` ((mechanism, ε) pairs) and their candidates: a smaller
    tuning of the same kind, each of its searches as shipped."""
    keep = set(keep)
    out = copy.deepcopy(doc)
    out["rows"] = [r for r in out["rows"] if (r["mechanism"], r["epsilon"]) in keep]
    out["candidates"] = [c for c in out["candidates"] if (c["mechanism"], c["epsilon"]) in keep]
    return out


def test_asking_for_the_spent_figures_of_a_forged_file_still_refuses_it(record, tmp_path):
    # the file cut to the twin's searches (one of each kind of plan), the sampled one's spent forged
    doc = with_rows(record, TWIN_ROWS)
    forged = _row(doc, "gradient-dpsgd", 0.2)
    forged["epsilon_spent"] = forged["epsilon_certified"] * 1.000123
    data = _shipped_as(doc, tmp_path)
    # its settings read (the spent figure is not among them) ...
    assert _row(shipped_tuning("adult", "logreg", data_dir=data), "gradient-dpsgd", 0.2)["setting"]
    # ... its spent figures refused, each time they are asked for (no mark is left for a refusal)
    for _ in range(2):
        with pytest.raises(shipped.ShippedFileError) as caught:
            shipped_tuning("adult", "logreg", data_dir=data, spent=True)
        assert "gradient-dpsgd at ε = 0.2: ε spent" in str(caught.value)
        assert "but its search certifies" in str(caught.value)
    # and through the reader of Compare's hover (the tuned row with what its search spent)
    with pytest.raises(shipped.ShippedFileError, match="but its search certifies"):
        tune_mod.tuned_row("adult", "logreg", "gradient-dpsgd", 0.2, data_dir=data, spent=True)


def test_every_spent_forged_to_its_certified_times_1_000123_is_refused(record, tmp_path):
    doc = copy.deepcopy(record)
    for row in doc["rows"]:
        row["epsilon_spent"] = row["epsilon_certified"] * 1.000123
    message = _refusal(doc, tmp_path)
    # the refusal names what the search certifies: 5 candidates of 3 runs each at ε = 0.05, 16× the forgery
    assert "output-laplace at ε = 0.05: ε spent 0.0500061" in message
    assert "but its search certifies 0.79999998" in message


def test_a_null_spent_where_the_search_certifies_a_finite_one_is_refused(record, tmp_path):
    doc = copy.deepcopy(record)
    _row(doc, "output-laplace", 0.1)["epsilon_spent"] = None  # ∞: the old check let it through (∞ ≥ certified)
    message = _refusal(doc, tmp_path)
    assert "output-laplace at ε = 0.1: ε spent None, but its search certifies 1.6" in message


def test_a_delta_spent_of_zero_is_refused(record, tmp_path):
    doc = copy.deepcopy(record)
    _row(doc, "output-laplace", 0.05)["delta_spent"] = 0
    assert "output-laplace at ε = 0.05: δ spent 0, but its search spends 7.64" in _refusal(doc, tmp_path)


def test_a_spent_forged_below_the_accountants_grid_is_refused(record, tmp_path):
    # DP-SGD's searches are certified on the PLD's grid (0.05): a forgery of more than one step is seen
    doc = copy.deepcopy(record)
    row = _row(doc, "gradient-dpsgd", 0.05)
    row["epsilon_spent"] -= 0.06
    assert "gradient-dpsgd at ε = 0.05: ε spent" in _refusal(doc, tmp_path)


def test_a_candidate_table_forged_with_a_consistent_spent_is_refused(record, tmp_path):
    # the forger drops a candidate and states what the four left would cost: the spent agrees with the
    # table, but the table is not the grid the search declares
    doc = copy.deepcopy(record)
    row = _row(doc, "output-laplace", 0.05)
    doc["candidates"] = [c for c in doc["candidates"]
                         if not (c["mechanism"] == "output-laplace" and c["epsilon"] == 0.05 and c["lam"] == 1e-4)]
    row["candidates"] = 4
    full = _datasets.load("adult")
    base = RunSpec(dataset="adult", model="logreg", mechanism="output-laplace", epsilon=0.05, delta=doc["delta"],
                   repeats=3)
    kept = [s for s in candidates(base, search_space("output-laplace")) if s.lam != 1e-4]
    spent, _, _, _ = search_spent(kept, final_repeats=20, split=validation_split(full), selection_epsilon=0.05)
    assert spent < row["epsilon_spent"]
    row["epsilon_spent"] = spent
    message = _refusal(doc, tmp_path)
    assert "output-laplace at ε = 0.05: its candidates are not the grid its search declares (1 missing" in message


def test_a_candidate_chosen_that_is_not_the_rows_setting_is_refused(record, tmp_path):
    doc = copy.deepcopy(record)
    assert _row(doc, "output-laplace", 0.05)["setting"] == {"lam": 0.03}
    for c in doc["candidates"]:
        if c["mechanism"] == "output-laplace" and c["epsilon"] == 0.05:
            c["chosen"] = c["lam"] == 1e-4
    assert "its chosen candidate is not its setting" in _refusal(doc, tmp_path)


def test_a_search_said_to_run_fewer_times_than_its_spent_is_refused(record, tmp_path):
    doc = copy.deepcopy(record)
    doc["search"]["repeats"] = 1
    assert "output-laplace at ε = 0.05: ε spent 0.79999" in _refusal(doc, tmp_path)


@pytest.mark.parametrize("edit, said", [
    (lambda d: d.pop("search"), "it does not say how its searches ran"),
    (lambda d: d["search"].update(validation_fraction=0.3), "its searches ran on 36177 training rows, 7235"),
    (lambda d: d["search"].update(seed=True), "its search:"),
])
def test_a_search_not_described_as_it_ran_is_refused(record, tmp_path, edit, said):
    doc = copy.deepcopy(record)
    edit(doc)
    assert said in _refusal(doc, tmp_path)


@pytest.mark.parametrize("field, times, said", [
    ("epsilon_spent", 2.0, "is not its certified ε 0.49999997400097623 (a choice on released records is free)"),
    ("epsilon_spent", None, "ε spent None is not its certified ε"),
    ("delta_spent", 0.0, "δ spent 0.0 is not the target δ"),
])
def test_a_released_row_spends_its_certified_epsilon_at_the_target_delta(record, tmp_path, field, times, said):
    # choosing on released records is free: nothing but the certified ε at the target δ
    doc = copy.deepcopy(record)
    row = next(r for r in doc["released_rows"] if r["mechanism"] == "input-kang" and r["epsilon"] == 0.5)
    row[field] = None if times is None else row[field] * times
    assert said in _refusal(doc, tmp_path)


def test_the_untouched_released_only_tuning_passes():
    doc = json.loads((SOURCE / "tuned" / "synthetic-regression-linreg.json").read_text())
    assert not doc["rows"] and check_tuning(doc, "synthetic-regression", "linreg") is doc


def test_what_tune_writes_is_what_the_reader_recomputes():
    # tune() and check_tuning() compute ε spent by one function: a fresh record passes, its forgery does not
    result = tune("breast-cancer", mechanisms=["output-laplace", "output-gaussian"], epsilons=[0.5, 2.0],
                  repeats=2, final_repeats=2, seed=3, validation_fraction=0.25)
    doc = json.loads(json.dumps(result.to_dict()))
    assert doc["search"] == {"repeats": 2, "final_repeats": 2, "validation_fraction": 0.25, "seed": 3,
                             "selection_epsilon": None}
    assert check_tuning(copy.deepcopy(doc), "breast-cancer", "logreg")
    for row in doc["rows"]:  # what the search plan (TuneResult.plans, --plan-out) certifies, too
        assert row["epsilon_spent"] > row["epsilon_certified"]
    forged = copy.deepcopy(doc)
    forged["rows"][-1]["epsilon_spent"] *= 0.5
    with pytest.raises(ValueError, match=r"ε spent .*, but its search certifies"):
        check_tuning(forged, "breast-cancer", "logreg")


def _search_specs(mechanism: str, epsilon: float, dataset: str = "breast-cancer", repeats: int = 3) -> list[RunSpec]:
    base = RunSpec(dataset=dataset, model="logreg", mechanism=mechanism, epsilon=epsilon, delta=1e-6, repeats=repeats)
    return candidates(base, search_space(mechanism))


@pytest.mark.parametrize("mechanism", ["gradient-dpgd", "gradient-dpsgd"])
def test_the_shared_plans_give_the_figure_of_every_plan_computed_on_its_own(mechanism):
    # the reader computes each distinct plan once (SearchPlans); the route that computes every candidate's
    # and every final run's plan afresh (noise_plan each) gives the same plans, so the same ε and δ to the bit
    specs = _search_specs(mechanism, 0.5)
    split = validation_split(_datasets.load("breast-cancer"))
    plans = SearchPlans()
    spent, delta_spent, whole, each = search_spent(specs, final_repeats=2, split=split, selection_epsilon=0.5,
                                                   plans=plans)
    assert plans.asked == 2 * len(specs) and len(plans) < plans.asked  # η shares a plan: some were not recomputed
    alone = [noise_plan(s, dataset=split) for s in specs]
    finals = [noise_plan(replace(s, repeats=2)) for s in specs]
    whole_alone, delta_alone = search_plan(alone, [s.repeats for s in specs], finals, 0.5, specs[0].delta)
    assert each == alone and whole == whole_alone
    assert (spent, delta_spent) == (certify(whole_alone, delta_alone), delta_alone)
    # one read shares its plans with every search in it, and computes them as a search alone does
    with one_read() as read:
        assert search_spent(specs, final_repeats=2, split=split, selection_epsilon=0.5)[:2] == (spent, delta_spent)
        assert plan_of(replace(specs[0], repeats=2)) == finals[0] and len(read) == len(plans)


@pytest.mark.parametrize("mechanism", sorted(SEARCH_SPACES))
def test_what_a_plan_is_said_not_to_read_it_does_not_read(mechanism):
    # PLAN_FREE (and repeats, for every mechanism): over the whole grid, changing what a plan is said not to
    # read leaves every plan as it was; a declaration a mechanism's plan contradicts fails here
    split = validation_split(_datasets.load("breast-cancer"))
    for spec in _search_specs(mechanism, 1.0):
        plan = noise_plan(spec, dataset=split)
        assert noise_plan(replace(spec, repeats=spec.repeats + 4), dataset=split) == plan
        for name in PLAN_FREE.get(mechanism, ()):
            values = {v for v in SEARCH_SPACES[mechanism][name]} | {getattr(RunSpec, name)}
            for value in values - {getattr(spec, name)}:
                assert noise_plan(replace(spec, **{name: value}), dataset=split) == plan, (spec, name, value)


def _plant_marks(monkeypatch, value_of) -> list[str]:
    """Before each verification, the mark's entry in the cache folder is written as another user of a
    shared cache folder could write it (``value_of(mark)``): the campaign's planted "verified" mark."""
    from dpcore import verified as certify_marks
    from dpcore.cache import DiskCache
    real, planted = certify_marks.verified, []

    def planting(mark, check, refused):
        cache = DiskCache(certify_marks.marks_folder(), prefix="tuned-")
        path = cache.path(__import__("hashlib").sha256(mark.encode()).hexdigest()[:24])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"verified": value_of(mark)}))
        planted.append(mark)
        return real(mark, check, refused)

    monkeypatch.setattr(certify_marks, "verified", planting)
    return planted


def test_a_planted_verification_mark_does_not_let_a_forged_spent_through(record, tmp_path, monkeypatch):
    # a cache folder shared by a class server's users: anyone there can write a mark; a mark computed from
    # public inputs (the file's digest, the code's, what was checked: the old scheme) is planted for every check
    import hashlib
    monkeypatch.setenv("DPCORE_CACHE_DIR", str(tmp_path / "shared-cache"))
    planted = _plant_marks(monkeypatch, lambda mark: hashlib.sha256(mark.encode()).hexdigest())
    doc = copy.deepcopy(record)
    _row(doc, "output-laplace", 0.05)["epsilon_spent"] = 0.0500061
    message = _refusal(doc, tmp_path)
    assert planted and "but its search certifies 0.79999998" in message


def test_check_of_the_check_an_unsigned_mark_lets_the_planted_one_through(record, tmp_path, monkeypatch):
    # the same planting against marks that are not signed (a mark's value a function of public inputs): the
    # forged file is read as verified, which is what the signature prevents
    import hashlib
    from dpcore import verified as certify_marks
    monkeypatch.setenv("DPCORE_CACHE_DIR", str(tmp_path / "shared-cache"))
    monkeypatch.setattr(certify_marks, "signed", lambda mark, folder=None: hashlib.sha256(mark.encode()).hexdigest())
    _plant_marks(monkeypatch, lambda mark: hashlib.sha256(mark.encode()).hexdigest())
    doc = copy.deepcopy(record)
    _row(doc, "output-laplace", 0.05)["epsilon_spent"] = 0.0500061
    got = shipped_tuning("adult", "logreg", data_dir=_shipped_as(doc, tmp_path), spent=[("output-laplace", 0.05)])
    assert _row(got, "output-laplace", 0.05)["epsilon_spent"] == 0.0500061


@pytest.mark.skipif(not hasattr(__import__("os"), "getuid"), reason="file ownership is POSIX's")
def test_a_key_file_others_can_read_or_write_is_never_used(tmp_path, monkeypatch, caplog):
    import os
    from dpcore import verified as certify_marks
    monkeypatch.setenv("DPCORE_CACHE_DIR", str(tmp_path / "cache"))
    folder = certify_marks.marks_folder()
    first = certify_marks.signed("a mark")
    assert (folder / "key").stat().st_mode & 0o777 == 0o600  # made this user's alone
    assert certify_marks.signed("a mark") == first  # the next process's: the same key, the same signature
    os.chmod(folder / "key", 0o666)  # a key others could have written: a process key instead, said in the log
    with caplog.at_level("WARNING", logger="dpcore.verified"):
        assert certify_marks.signed("a mark") != first
    assert "not this user's alone" in caplog.text
